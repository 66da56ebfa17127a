/*
 * state.c - the state file (state.h): which vCPUs vnumad re-pinned and where they were allowed
 * to run before, so that they can be put back.  The in-memory set, saving and the lock;
 * reading, of every version, is state_read.c.
 *
 *   {"version": 1,
 *    "vcpus": [{"vm": "db1", "vm_id": 4242, "vcpu": 0, "tid": 4250, "orig_nodes": "0-3"}, ...]}
 *
 * and, while the admin's scan tunables are saved, version 2: the same with
 *    "scan": {"delay_ms": 1000, "period_min_ms": 1000, "period_max_ms": 60000, "size_mb": 256}
 *
 * Saving writes PATH.tmp in the same directory, fsyncs it, renames it over PATH and fsyncs the
 * directory, so a crash leaves either the old or the new file.
 *
 * VM names are kept whole, up to STATE_VM_NAME_MAX (255) bytes, and compared whole.  A longer
 * name is never cut: state_record() refuses it with -ENAMETOOLONG and a file holding one does not
 * load ("vcpus[2].vm: must be 1 to 255 bytes").
 */
#include "agent/state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "policy/util.h"

/* Layout of the saved file: indented, one field per line, "key": value. */
#define STATE_JSON_FLAGS                                                                           \
	(JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Mode of the state and lock files: root writes them; they hold nothing secret. */
#define STATE_FILE_MODE 0644
/* Mode of the state directory when state_save or state_lock has to create it. */
#define STATE_DIR_MODE 0755

/* ---- the in-memory set ----------------------------------------------------------------------- */

/*
 * The (vm, vcpu) index: open addressing with linear probing over a power-of-two number of
 * slots, each 0 (empty) or an entry's position + 1.  Kept at most half full, so that a lookup
 * probes a few slots whatever the number of entries; rebuilt whole after entries are removed
 * (removal is a pass over all entries anyway).  Loading n entries is O(n), not O(n^2).
 */
#define STATE_INDEX_MIN_SLOTS 64

struct state *
state_new(void)
{
	return xcalloc(1, sizeof(struct state));
}

void
state_free(struct state *st)
{
	if (st == NULL)
		return;
	free(st->entries);
	free(st->slots);
	free(st);
}

/* FNV-1a over the name, then the vCPU number. */
static uint64_t
state_key_hash(const char *vm, int vcpu)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *)vm; *p != '\0'; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	for (int i = 0; i < 4; i++)
		h = (h ^ (((unsigned)vcpu >> (8 * i)) & 0xffu)) * 0x100000001b3ULL;
	return h;
}

/* Does the recorded name rec match vm?  Whole names: a longer vm never matches. */
static bool
state_name_eq(const char *rec, const char *vm)
{
	return strcmp(rec, vm) == 0;
}

/* The slot holding (vm, vcpu), or the empty slot where it would go.  Needs nr_slots > 0. */
static size_t
state_slot_of(const struct state *st, const char *vm, int vcpu)
{
	size_t mask = st->nr_slots - 1, i = (size_t)state_key_hash(vm, vcpu) & mask;

	for (;; i = (i + 1) & mask) {
		const struct state_entry *e;

		if (st->slots[i] == 0)
			return i;
		e = &st->entries[st->slots[i] - 1];
		if (e->vcpu == vcpu && state_name_eq(e->vm, vm))
			return i;
	}
}

/* Index every entry anew, in at least the slots that nr entries need. */
static void
state_index_rebuild(struct state *st)
{
	size_t slots = STATE_INDEX_MIN_SLOTS;

	while (slots < 2 * st->nr + 2)
		slots *= 2;
	if (slots != st->nr_slots) {
		free(st->slots);
		st->slots = xcalloc(slots, sizeof(*st->slots));
		st->nr_slots = slots;
	} else {
		memset(st->slots, 0, slots * sizeof(*st->slots));
	}
	for (size_t i = 0; i < st->nr; i++)
		st->slots[state_slot_of(st, st->entries[i].vm, st->entries[i].vcpu)] = i + 1;
}

const struct state_entry *
state_find(const struct state *st, const char *vm, int vcpu)
{
	size_t slot;

	if (st->nr == 0 || st->nr_slots == 0)
		return NULL;
	slot = state_slot_of(st, vm, vcpu);
	return st->slots[slot] ? &st->entries[st->slots[slot] - 1] : NULL;
}

/* Add an entry; the caller made sure there is none for (vm, vcpu). */
static void
state_append(struct state *st, const char *vm, int vm_id, int vcpu, int tid, uint64_t orig_nodes)
{
	struct state_entry *e;

	util_array_reserve((void **)&st->entries, &st->cap, st->nr + 1, sizeof(*st->entries));
	e = &st->entries[st->nr++];
	memset(e, 0, sizeof(*e));
	snprintf(e->vm, sizeof(e->vm), "%s", vm);
	e->vm_id = vm_id;
	e->vcpu = vcpu;
	e->tid = tid;
	e->orig_nodes = orig_nodes;
	if (2 * st->nr + 2 > st->nr_slots)
		state_index_rebuild(st); /* doubles the slots: amortised O(1) per entry */
	else
		st->slots[state_slot_of(st, vm, vcpu)] = st->nr;
}

/* An empty orig_nodes is not recorded: there would be nothing to restore to. */
int
state_record(struct state *st, const char *vm, int vm_id, int vcpu, int tid, uint64_t orig_nodes)
{
	if (strnlen(vm, STATE_VM_NAME_MAX + 1) > STATE_VM_NAME_MAX)
		return -ENAMETOOLONG; /* cut, it could match another VM's entries */
	if (orig_nodes == 0 || vm[0] == '\0' || state_find(st, vm, vcpu) != NULL)
		return 0;
	state_append(st, vm, vm_id, vcpu, tid, orig_nodes);
	st->dirty = true;
	return 0;
}

void
state_forget(struct state *st, const char *vm, int vcpu)
{
	size_t kept = 0;

	for (size_t i = 0; i < st->nr; i++) {
		const struct state_entry *e = &st->entries[i];

		if (state_name_eq(e->vm, vm) && (vcpu < 0 || e->vcpu == vcpu))
			continue;
		st->entries[kept++] = *e;
	}
	if (kept == st->nr)
		return;
	st->dirty = true;
	st->nr = kept;
	state_index_rebuild(st);
}

void
state_retain(struct state *st, const bool *keep)
{
	size_t kept = 0;

	for (size_t i = 0; i < st->nr; i++)
		if (keep[i])
			st->entries[kept++] = st->entries[i];
	if (kept == st->nr)
		return;
	st->dirty = true;
	st->nr = kept;
	state_index_rebuild(st);
}

struct state_mark
state_mark(const struct state *st)
{
	return (struct state_mark){.nr = st->nr, .dirty = st->dirty};
}

/* Entries are kept in the order recorded: those recorded since m are the last ones. */
void
state_rollback(struct state *st, struct state_mark m)
{
	if (m.nr >= st->nr)
		return;
	st->nr = m.nr;
	st->dirty = m.dirty;
	state_index_rebuild(st);
}

/* ---- saving ---------------------------------------------------------------------------------- */

/* The directory part of path ("." when there is none) into buf. */
static void
state_dir_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(buf, len, ".");
	else if (slash == path)
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/* Create path's directory if it is missing (one level, STATE_DIR_MODE). */
static int
state_dir_make(const char *path)
{
	char dir[PATH_MAX];

	state_dir_of(path, dir, sizeof(dir));
	if (mkdir(dir, STATE_DIR_MODE) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

void
state_scan_set(struct state *st, const struct scan_tunables *t)
{
	bool same =
	    t != NULL ? st->scan_saved && memcmp(&st->scan, t, sizeof(*t)) == 0 : !st->scan_saved;

	if (same)
		return;
	st->scan_saved = t != NULL;
	memset(&st->scan, 0, sizeof(st->scan));
	if (t != NULL)
		st->scan = *t;
	st->dirty = true;
}

json_object *
state_scan_json(const struct scan_tunables *t)
{
	json_object *jo = json_object_new_object();

	json_object_object_add(jo, "delay_ms", json_object_new_int(t->delay_ms));
	json_object_object_add(jo, "period_min_ms", json_object_new_int(t->period_min_ms));
	json_object_object_add(jo, "period_max_ms", json_object_new_int(t->period_max_ms));
	json_object_object_add(jo, "size_mb", json_object_new_int(t->size_mb));
	return jo;
}

static char *
state_to_json(const struct state *st)
{
	json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char nodes[NODEMASK_STR_MAX], *text;

	/* Version 1 while it says all: an older vnumad still reads the file after a downgrade. */
	json_object_object_add(root, "version",
	                       json_object_new_int(st->scan_saved ? STATE_FILE_VERSION : 1));
	for (size_t i = 0; i < st->nr; i++) {
		const struct state_entry *e = &st->entries[i];
		json_object *jo = json_object_new_object();

		json_object_object_add(jo, "vm", json_object_new_string(e->vm));
		json_object_object_add(jo, "vm_id", json_object_new_int(e->vm_id));
		json_object_object_add(jo, "vcpu", json_object_new_int(e->vcpu));
		json_object_object_add(jo, "tid", json_object_new_int(e->tid));
		nodemask_format(e->orig_nodes, nodes, sizeof(nodes));
		json_object_object_add(jo, "orig_nodes", json_object_new_string(nodes));
		json_object_array_add(arr, jo);
	}
	json_object_object_add(root, "vcpus", arr);
	if (st->scan_saved)
		json_object_object_add(root, "scan", state_scan_json(&st->scan));
	text = xstrdup(json_object_to_json_string_ext(root, STATE_JSON_FLAGS));
	json_object_put(root);
	return text;
}

static int
state_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write text and a newline to tmp, fsync and close it; *what names the failing step. */
static int
state_tmp_write(const char *tmp, const char *text, const char **what)
{
	int fd, rc;

	*what = "cannot create";
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, STATE_FILE_MODE);
	if (fd < 0)
		return -errno;
	*what = "cannot write";
	rc = state_write_all(fd, text, strlen(text));
	if (rc == 0)
		rc = state_write_all(fd, "\n", 1);
	if (rc == 0 && fsync(fd) < 0) {
		*what = "cannot fsync";
		rc = -errno;
	}
	if (close(fd) < 0 && rc == 0) {
		*what = "cannot close";
		rc = -errno;
	}
	return rc;
}

/* fsync the directory holding path, so that the rename itself is on disk. */
static int
state_dir_sync(const char *path)
{
	char dir[PATH_MAX];
	int fd, rc = 0;

	state_dir_of(path, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int
state_save(struct state *st, const char *path, char *err, size_t errlen)
{
	char tmp[PATH_MAX], *text = NULL;
	const char *what = "cannot create the directory of", *where = path;
	bool tmp_left = false;
	int rc;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		util_errf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	if (st->keep_file) {
		util_errf(err, errlen,
		          "%s: not replaced: it holds a state vnumad could not read nor set aside "
		          "(move it away, then restart vnumad)",
		          path);
		return -EEXIST;
	}
	rc = state_dir_make(path);
	if (rc < 0)
		goto out;
	text = state_to_json(st);
	if (strlen(text) + 1 > STATE_FILE_MAX_BYTES) {
		/* Never record what the next start could not read back. */
		util_errf(err, errlen,
		          "%s: not saved: %zu entries make %zu bytes, more than the %d read", path,
		          st->nr, strlen(text) + 1, STATE_FILE_MAX_BYTES);
		free(text);
		return -EFBIG;
	}
	tmp_left = true;
	where = tmp;
	rc = state_tmp_write(tmp, text, &what);
	if (rc < 0)
		goto out;
	where = path;
	what = "cannot rename the new file to";
	if (rename(tmp, path) < 0) {
		rc = -errno;
		goto out;
	}
	tmp_left = false;
	what = "cannot fsync the directory of";
	rc = state_dir_sync(path);
out:
	free(text);
	if (tmp_left)
		unlink(tmp);
	if (rc < 0) {
		util_errf(err, errlen, "%s %s: %s", what, where, strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < st->nr; i++)
		st->entries[i].saved = true;
	st->dirty = false;
	return 0;
}

/* ---- the lock -------------------------------------------------------------------------------- */

/* The pid written into the lock file by its holder, or 0. */
static long
state_lock_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%ld", &pid) != 1 || pid <= 0)
		return 0;
	return pid;
}

/* Write our pid into the held lock file, for people and for state_lock_holder(); best effort. */
static void
state_lock_note_pid(int fd)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0)
		return;
	if (pwrite(fd, pid, strlen(pid), 0) < 0)
		return;
}

int
state_lock(const char *path, int *fd_out, char *err, size_t errlen)
{
	char lock[PATH_MAX];
	long holder;
	int fd, rc;

	*fd_out = -1;
	if (snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock)) {
		util_errf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	rc = state_dir_make(lock);
	fd = rc < 0 ? rc : open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, STATE_FILE_MODE);
	if (fd < 0) {
		rc = rc < 0 ? rc : -errno;
		util_errf(err, errlen, "cannot open %s: %s", lock, strerror(-rc));
		return rc;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		holder = rc == -EBUSY ? state_lock_holder(fd) : 0;
		if (rc == -EBUSY && holder > 0)
			util_errf(err, errlen, "another vnumad holds %s (pid %ld)", lock, holder);
		else if (rc == -EBUSY)
			util_errf(err, errlen, "another vnumad holds %s", lock);
		else
			util_errf(err, errlen, "cannot lock %s: %s", lock, strerror(-rc));
		close(fd);
		return rc;
	}
	state_lock_note_pid(fd);
	*fd_out = fd;
	return 0;
}

/*
 * state.c - the state file (state.h): which vCPUs vnumad re-pinned and where they were allowed
 * to run before, so that they can be put back.
 *
 *   {"version": 1,
 *    "vcpus": [{"vm": "db1", "vm_id": 4242, "vcpu": 0, "tid": 4250, "orig_nodes": "0-3"}, ...]}
 *
 * Loading distrusts the file: every field is checked for type and range, unknown fields and
 * duplicate vCPUs are errors, and any error gives -EINVAL with a message naming the field
 * ("vcpus[2].tid: ...").  Saving writes PATH.tmp in the same directory, fsyncs it, renames it
 * over PATH and fsyncs the directory, so a crash leaves either the old or the new file.
 *
 * VM names are kept whole, up to STATE_VM_NAME_MAX (255) bytes, and compared whole.  A longer
 * name is never cut: state_record() refuses it with -ENAMETOOLONG and a file holding one does not
 * load ("vcpus[2].vm: must be 1 to 255 bytes").
 */
#include "host/fileio.h"
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

/* Version written into, and required in, the file.  Bump when the format changes. */
#define STATE_VERSION 1

/* Largest state file read, in bytes: an entry is about 100 bytes, so this is ~160k vCPUs. */
#define STATE_FILE_MAX_BYTES (16 * 1024 * 1024)

/* Deepest JSON nesting accepted: the format needs 3 (object, array, object). */
#define STATE_JSON_DEPTH 8

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

/* ---- loading --------------------------------------------------------------------------------- */

/* Read path whole into a NUL-terminated malloc'd buffer. */
static int
state_file_read(const char *path, char **data_out, size_t *len_out)
{
	return fileio_read(path, STATE_FILE_MAX_BYTES, data_out, len_out);
}

/* An integer field of obj in [min, max]; -EINVAL with the reason in why. */
static int
state_json_int(json_object *obj, const char *key, int min, int max, int *out, const char **why)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(obj, key, &v)) {
		*why = "is missing";
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_int)) {
		*why = "is not an integer";
		return -EINVAL;
	}
	n = json_object_get_int64(v);
	if (n < min || n > max) {
		*why = "is out of range";
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

static int
state_json_string(json_object *obj, const char *key, const char **out, const char **why)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v)) {
		*why = "is missing";
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_string)) {
		*why = "is not a string";
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	if (strlen(*out) != (size_t)json_object_get_string_len(v)) {
		*why = "contains a NUL character";
		return -EINVAL;
	}
	return 0;
}

/* The first member of obj whose name is not in names (NULL-terminated), or NULL. */
static const char *
state_json_unknown_key(json_object *obj, const char *const *names)
{
	json_object_object_foreach(obj, key, val)
	{
		size_t i;

		(void)val;
		for (i = 0; names[i] != NULL && strcmp(names[i], key) != 0; i++)
			;
		if (names[i] == NULL)
			return key;
	}
	return NULL;
}

/* Check one vcpus[] element and add it to st; -EINVAL with "field: reason" in why. */
static int
state_entry_load(struct state *st, json_object *jo, char *why, size_t whylen)
{
	static const char *const fields[] = {"vm", "vm_id", "vcpu", "tid", "orig_nodes", NULL};
	const char *vm = NULL, *nodes = NULL, *reason = NULL, *field, *extra;
	int vm_id = 0, vcpu = 0, tid = 0;
	uint64_t mask = 0;

	if (!json_object_is_type(jo, json_type_object)) {
		snprintf(why, whylen, ": is not an object");
		return -EINVAL;
	}
	extra = state_json_unknown_key(jo, fields);
	if (extra != NULL) {
		snprintf(why, whylen, ": unknown field \"%.64s\"", extra);
		return -EINVAL;
	}
	if ((field = "vm", state_json_string(jo, field, &vm, &reason)) < 0 ||
	    (field = "vm_id", state_json_int(jo, field, 1, INT_MAX, &vm_id, &reason)) < 0 ||
	    (field = "vcpu", state_json_int(jo, field, 0, INT_MAX, &vcpu, &reason)) < 0 ||
	    (field = "tid", state_json_int(jo, field, 1, INT_MAX, &tid, &reason)) < 0 ||
	    (field = "orig_nodes", state_json_string(jo, field, &nodes, &reason)) < 0) {
		snprintf(why, whylen, ".%s: %s", field, reason);
		return -EINVAL;
	}
	if (vm[0] == '\0' || strlen(vm) >= sizeof(st->entries[0].vm)) {
		snprintf(why, whylen, ".vm: must be 1 to %zu bytes", sizeof(st->entries[0].vm) - 1);
		return -EINVAL;
	}
	if (nodemask_parse(nodes, UTIL_MAX_NODES, &mask) < 0 || mask == 0) {
		snprintf(why, whylen, ".orig_nodes: is not a node list (e.g. \"0-3\")");
		return -EINVAL;
	}
	if (state_find(st, vm, vcpu) != NULL) {
		snprintf(why, whylen, ": vm \"%s\" vcpu %d is listed twice", vm, vcpu);
		return -EINVAL;
	}
	state_append(st, vm, vm_id, vcpu, tid, mask);
	return 0;
}

/* Check the top-level object and load its vcpus into st; -EINVAL with a message in why. */
static int
state_root_load(struct state *st, json_object *root, char *why, size_t whylen)
{
	static const char *const fields[] = {"version", "vcpus", NULL};
	json_object *vcpus;
	const char *reason, *extra;
	char sub[STATE_VM_NAME_MAX + 64]; /* ": vm \"NAME\" vcpu N is listed twice" and shorter */
	int version = 0;

	if (!json_object_is_type(root, json_type_object)) {
		snprintf(why, whylen, "not a JSON object");
		return -EINVAL;
	}
	extra = state_json_unknown_key(root, fields);
	if (extra != NULL) {
		snprintf(why, whylen, "unknown field \"%.64s\"", extra);
		return -EINVAL;
	}
	if (state_json_int(root, "version", 0, INT_MAX, &version, &reason) < 0) {
		snprintf(why, whylen, "version: %s", reason);
		return -EINVAL;
	}
	if (version != STATE_VERSION) {
		snprintf(why, whylen, "version: %d is not supported (this vnumad reads %d)",
		         version, STATE_VERSION);
		return -EINVAL;
	}
	if (!json_object_object_get_ex(root, "vcpus", &vcpus) ||
	    !json_object_is_type(vcpus, json_type_array)) {
		snprintf(why, whylen, "vcpus: is missing or not an array");
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(vcpus); i++) {
		if (state_entry_load(st, json_object_array_get_idx(vcpus, i), sub, sizeof(sub)) <
		    0) {
			snprintf(why, whylen, "vcpus[%zu]%s", i, sub);
			return -EINVAL;
		}
	}
	return 0;
}

/* Parse data (len bytes, NUL-terminated) as one JSON value with only whitespace after it. */
static json_object *
state_json_parse(const char *data, size_t len, char *why, size_t whylen)
{
	json_tokener *tok;
	json_object *root;
	enum json_tokener_error jerr;
	size_t end;

	if (strspn(data, " \t\r\n") == len) {
		snprintf(why, whylen, "empty file");
		return NULL;
	}
	tok = json_tokener_new_ex(STATE_JSON_DEPTH);
	if (tok == NULL)
		abort(); /* json-c allocation failure: out of memory, like xmalloc */
	/* No trailing commas or text, no other leniencies; strings must be valid UTF-8. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, data, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (root != NULL && jerr == json_tokener_success &&
	    strspn(data + end, " \t\r\n") == len - end)
		return root;
	snprintf(why, whylen, "not valid JSON: %s",
	         jerr == json_tokener_continue  ? "truncated"
	         : jerr != json_tokener_success ? json_tokener_error_desc(jerr)
	                                        : "text after the end");
	json_object_put(root);
	return NULL;
}

int
state_load(const char *path, struct state **out, char *err, size_t errlen)
{
	struct state *st = state_new();
	json_object *root = NULL;
	char *data = NULL, why[STATE_VM_NAME_MAX + 128]; /* "vcpus[N]" and state_root_load's sub */
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = state_file_read(path, &data, &len);
	if (rc == -ENOENT) {
		rc = 0; /* never saved: nothing to restore */
		goto out;
	}
	if (rc < 0) {
		if (rc == -EFBIG)
			rc = -EINVAL;
		util_errf(err, errlen, "%s: cannot read: %s", path,
		          rc == -EINVAL ? "file too large" : strerror(-rc));
		goto out;
	}
	if (memchr(data, '\0', len) != NULL) {
		snprintf(why, sizeof(why), "contains a NUL byte");
		rc = -EINVAL;
	} else {
		root = state_json_parse(data, len, why, sizeof(why));
		rc = root ? state_root_load(st, root, why, sizeof(why)) : -EINVAL;
	}
	if (rc < 0)
		util_errf(err, errlen, "%s: %s", path, why);
out:
	json_object_put(root);
	free(data);
	if (rc < 0) {
		state_free(st);
		return rc;
	}
	st->dirty = false;
	*out = st;
	return 0;
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

static char *
state_to_json(const struct state *st)
{
	json_object *root = json_object_new_object(), *arr = json_object_new_array();
	char nodes[256], *text;

	json_object_object_add(root, "version", json_object_new_int(STATE_VERSION));
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
	rc = state_dir_make(path);
	if (rc < 0)
		goto out;
	text = state_to_json(st);
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

/*
 * test_state.c - the state file: record/find/forget, a save-load round trip (also of the longest
 * VM names), over-long names refused whole, atomic replacement, a failed save leaving the old
 * file, every kind of malformed file rejected with a message naming the field, a missing file
 * read as empty, 50,000 entries, one too many to save, and the lock held only once.  Versions and
 * files set aside: test_state_read.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/state.h"
#include "policy/util.h"

static char tmpdir[64];
static char sub_dir[128];    /* created by state_save */
static char state_path[160]; /* sub_dir/state.json */
static char flat_path[160];  /* tmpdir/flat.json, for hand-written files */

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/vnumad-state-XXXXXX", base && *base ? base : "/tmp");
	umask(022); /* so that the directory state_save creates gets exactly 0755 */
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	snprintf(sub_dir, sizeof(sub_dir), "%s/lib", tmpdir);
	snprintf(state_path, sizeof(state_path), "%s/state.json", sub_dir);
	snprintf(flat_path, sizeof(flat_path), "%s/flat.json", tmpdir);
	return 0;
}

static void
remove_suffixed(const char *path, const char *suffix)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	unlink(p);
}

static int
group_teardown(void **state)
{
	remove_suffixed(state_path, "");
	remove_suffixed(state_path, ".tmp");
	remove_suffixed(state_path, ".lock");
	remove_suffixed(flat_path, "");
	rmdir(sub_dir);
	return rmdir(tmpdir);
}

static void
write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void
test_record_find_forget(void **state)
{
	struct state *st = state_new();
	const struct state_entry *e;
	char long_name[100];

	assert_false(st->dirty);
	state_record(st, "db1", 100, 0, 101, 0xf);
	assert_true(st->dirty);
	st->dirty = false;
	state_record(st, "db1", 100, 0, 999, 0x1); /* already recorded: the first mask stays */
	assert_false(st->dirty);
	e = state_find(st, "db1", 0);
	assert_non_null(e);
	assert_int_equal(e->tid, 101);
	assert_true(e->orig_nodes == 0xf);
	state_record(st, "db1", 100, 1, 102, 0xf);
	state_record(st, "web", 200, 0, 201, 0x3);
	state_record(st, "web", 200, 1, 202, 0); /* nothing to restore to: not recorded */
	assert_int_equal(st->nr, 3);
	assert_null(state_find(st, "web", 1));
	assert_null(state_find(st, "db", 0));

	/* Names past 63 bytes are kept whole; one differing only after byte 63 is another VM. */
	memset(long_name, 'v', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(state_record(st, long_name, 300, 0, 301, 0x1), 0);
	assert_non_null(state_find(st, long_name, 0));
	assert_string_equal(state_find(st, long_name, 0)->vm, long_name);
	long_name[80] = 'w';
	assert_null(state_find(st, long_name, 0));
	long_name[80] = 'v';

	st->dirty = false;
	state_forget(st, "db1", 1);
	assert_true(st->dirty);
	assert_null(state_find(st, "db1", 1));
	assert_non_null(state_find(st, "db1", 0));
	st->dirty = false;
	state_forget(st, "nosuch", -1);
	assert_false(st->dirty);
	state_forget(st, "db1", -1);
	assert_null(state_find(st, "db1", 0));
	assert_non_null(state_find(st, "web", 0));
	assert_int_equal(st->nr, 2);
	state_free(st);
}

static void
test_round_trip(void **state)
{
	struct state *st = state_new(), *back = NULL;
	const struct state_entry *e;
	char err[512];
	struct stat sb;

	state_record(st, "db1", 4242, 0, 4250, 0xf);
	state_record(st, "db1", 4242, 7, 4257, 0x5);
	state_record(st, "hpc \"x\"/1", 77, 3, 78, (uint64_t)1 << 63 | 1);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), 0);
	assert_false(st->dirty);
	/* The missing parent directory was created. */
	assert_int_equal(stat(sub_dir, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0755);

	assert_int_equal(state_load(state_path, &back, err, sizeof(err)), 0);
	assert_non_null(back);
	assert_false(back->dirty);
	assert_int_equal(back->nr, 3);
	for (size_t i = 0; i < st->nr; i++) {
		e = state_find(back, st->entries[i].vm, st->entries[i].vcpu);
		assert_non_null(e);
		assert_string_equal(e->vm, st->entries[i].vm);
		assert_int_equal(e->vm_id, st->entries[i].vm_id);
		assert_int_equal(e->tid, st->entries[i].tid);
		assert_true(e->orig_nodes == st->entries[i].orig_nodes);
	}
	state_free(back);
	state_free(st);
}

/* The file is what the format says: node lists as strings, a version. */
static void
test_file_format(void **state)
{
	struct state *st = state_new();
	char err[512], buf[1024];
	FILE *f;
	size_t n;

	state_record(st, "db1", 4242, 0, 4250, 0xf);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), 0);
	f = fopen(state_path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\"version\": 1"));
	assert_non_null(strstr(buf, "\"vm\": \"db1\""));
	assert_non_null(strstr(buf, "\"vm_id\": 4242"));
	assert_non_null(strstr(buf, "\"vcpu\": 0"));
	assert_non_null(strstr(buf, "\"tid\": 4250"));
	assert_non_null(strstr(buf, "\"orig_nodes\": \"0-3\""));
	assert_int_equal(buf[n - 1], '\n');
	state_free(st);
}

/* A save replaces the file by rename (a new inode) and leaves no PATH.tmp behind. */
static void
test_atomic_replace(void **state)
{
	struct state *st = state_new(), *back = NULL;
	char err[512], tmp[256];
	struct stat before, after;

	snprintf(tmp, sizeof(tmp), "%s.tmp", state_path);
	state_record(st, "a", 1, 0, 2, 0x1);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), 0);
	assert_int_equal(stat(state_path, &before), 0);
	write_file(tmp, "stale leftover of a crash", 25);
	state_record(st, "b", 3, 0, 4, 0x2);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), 0);
	assert_int_equal(stat(state_path, &after), 0);
	assert_true(before.st_ino != after.st_ino);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(state_load(state_path, &back, err, sizeof(err)), 0);
	assert_int_equal(back->nr, 2);
	state_free(back);
	state_free(st);
}

/* When the new file cannot be written, the old one is left as it was. */
static void
test_failed_save_keeps_old(void **state)
{
	struct state *st = state_new(), *back = NULL;
	char err[512], tmp[256];

	snprintf(tmp, sizeof(tmp), "%s.tmp", state_path);
	state_record(st, "old", 1, 0, 2, 0x1);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), 0);
	assert_int_equal(mkdir(tmp, 0700), 0); /* PATH.tmp cannot be opened as a file */
	state_record(st, "new", 3, 0, 4, 0x2);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, tmp));
	assert_true(st->dirty);
	assert_int_equal(rmdir(tmp), 0);
	assert_int_equal(state_load(state_path, &back, err, sizeof(err)), 0);
	assert_int_equal(back->nr, 1);
	assert_non_null(state_find(back, "old", 0));
	state_free(back);
	state_free(st);
}

static void
expect_malformed(const char *text, size_t len, const char *want)
{
	struct state *st = (struct state *)&st; /* anything but NULL */
	char err[512], prefix[200];
	int rc;

	write_file(flat_path, text, len);
	memset(err, 'x', sizeof(err));
	rc = state_load(flat_path, &st, err, sizeof(err));
	if (rc != -EINVAL)
		fail_msg("rc %d for: %.*s", rc, (int)len, text);
	assert_null(st);
	snprintf(prefix, sizeof(prefix), "%s: ", flat_path);
	assert_memory_equal(err, prefix, strlen(prefix));
	if (strstr(err, want) == NULL)
		fail_msg("error \"%s\" does not contain \"%s\"", err, want);
}

#define ENTRY(fields) "{\"version\":1,\"vcpus\":[{" fields "}]}"
#define GOOD          "\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0-3\""
#define GOOD_REST     "\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0-3\""

static void
test_malformed(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
	    {"", "empty file"},
	    {" \n", "empty file"},
	    {"{\"version\":1,\"vcpus\":[", "not valid JSON: truncated"},
	    {"{\"version\":1,\"vcpus\":[]} x", "not valid JSON"},
	    {"{\"version\":1,\"vcpus\":[],}", "not valid JSON"},
	    {"{\"version\":1,\"vcpus\":[]}\n\n{}", "not valid JSON"},
	    {ENTRY("\"vm\":\"\xff\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\""),
	     "not valid JSON"},
	    {ENTRY("\"vm\":\"a\\u0000b\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vm: contains a NUL character"},
	    {"{version:1}", "not valid JSON"},
	    {"[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]", "not valid JSON"},
	    {"[]", "not a JSON object"},
	    {"{\"vcpus\":[]}", "version: is missing"},
	    {"{\"version\":\"1\",\"vcpus\":[]}", "version: is not an integer"},
	    {"{\"version\":0,\"vcpus\":[]}", "version: is out of range"},
	    {"{\"version\":1}", "vcpus: is missing or not an array"},
	    {"{\"version\":1,\"vcpus\":{}}", "vcpus: is missing or not an array"},
	    {"{\"version\":1,\"vcpus\":[],\"extra\":0}", "unknown field \"extra\""},
	    {"{\"version\":1,\"vcpus\":[1]}", "vcpus[0]: is not an object"},
	    {ENTRY(GOOD ",\"x\":1"), "vcpus[0]: unknown field \"x\""},
	    {ENTRY("\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vm: is missing"},
	    {ENTRY("\"vm\":7,\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vm: is not a string"},
	    {ENTRY("\"vm\":\"\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vm: must be 1 to 255 bytes"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":0,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vm_id: is out of range"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":-1,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vcpu: is out of range"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":1.5,\"tid\":2,\"orig_nodes\":\"0\""),
	     "vcpus[0].vcpu: is not an integer"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":\"2\",\"orig_nodes\":\"0\""),
	     "vcpus[0].tid: is not an integer"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":99999999999,\"orig_nodes\":\"0\""),
	     "vcpus[0].tid: is out of range"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":2"),
	     "vcpus[0].orig_nodes: is missing"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":15"),
	     "vcpus[0].orig_nodes: is not a string"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"\""),
	     "vcpus[0].orig_nodes: is not a node list"},
	    {ENTRY("\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0-64\""),
	     "vcpus[0].orig_nodes: is not a node list"},
	    {"{\"version\":1,\"vcpus\":[{" GOOD "},{" GOOD "}]}",
	     "vcpus[1]: vm \"a\" vcpu 0 is listed twice"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_malformed(cases[i].text, strlen(cases[i].text), cases[i].want);
	expect_malformed("{\"version\":1,\0\"vcpus\":[]}", 25, "contains a NUL byte");
}

/*
 * name: len bytes of valid UTF-8, tag first, then a pattern with a 2-byte character ("é"); a
 * character the end would cut is replaced by '-'.
 */
static void
long_name_fill(char *name, size_t len, char tag)
{
	static const char pat[] = "vm-\xc3\xa9-";

	for (size_t i = 0; i < len; i++)
		name[i] = pat[i % (sizeof(pat) - 1)];
	name[0] = tag;
	if ((unsigned char)name[len - 1] == 0xc3)
		name[len - 1] = '-';
	name[len] = '\0';
}

/* The longest names a state file may hold survive a save and a load whole. */
static void
test_long_name_round_trip(void **state)
{
	struct state *st = state_new(), *back = NULL;
	char a[STATE_VM_NAME_MAX + 1], b[STATE_VM_NAME_MAX + 1], err[512];
	const struct state_entry *e;

	/* libvirt names may be as long as a file name (255 bytes); all of it is kept. */
	assert_true(STATE_VM_NAME_MAX >= 255);
	assert_true(sizeof(((struct state_entry *)0)->vm) >= 256);
	long_name_fill(a, STATE_VM_NAME_MAX, 'a');
	long_name_fill(b, STATE_VM_NAME_MAX, 'b'); /* equal to a but for its first byte */
	assert_int_equal(state_record(st, a, 10, 0, 11, 0x3), 0);
	assert_int_equal(state_record(st, a, 10, 1, 12, 0x3), 0);
	assert_int_equal(state_record(st, b, 20, 0, 21, 0xc), 0);
	assert_int_equal(st->nr, 3);
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), 0);

	assert_int_equal(state_load(state_path, &back, err, sizeof(err)), 0);
	assert_int_equal(back->nr, 3);
	e = state_find(back, a, 1);
	assert_non_null(e);
	assert_int_equal(strlen(e->vm), STATE_VM_NAME_MAX);
	assert_string_equal(e->vm, a);
	assert_int_equal(e->tid, 12);
	e = state_find(back, b, 0);
	assert_non_null(e);
	assert_string_equal(e->vm, b);
	assert_true(e->orig_nodes == 0xc);
	/* Forgetting one long-named VM leaves the other, whatever they share. */
	state_forget(back, a, -1);
	assert_int_equal(back->nr, 1);
	assert_non_null(state_find(back, b, 0));
	state_free(back);
	state_free(st);
}

/*
 * A name one byte over the limit is refused whole: not recorded, not found, not cut to match
 * another VM; in a file it is an error naming the field, however long it is.
 */
static void
test_name_too_long(void **state)
{
	struct state *st = state_new();
	char name[STATE_VM_NAME_MAX + 2], dup[2 * STATE_VM_NAME_MAX + 256];
	size_t huge_len = 100000, n;
	char *huge = malloc(huge_len + 256);

	assert_non_null(huge);
	long_name_fill(name, STATE_VM_NAME_MAX + 1, 'x');
	assert_int_equal(state_record(st, name, 1, 0, 2, 0x1), -ENAMETOOLONG);
	assert_int_equal(st->nr, 0);
	assert_false(st->dirty);
	assert_null(state_find(st, name, 0));
	/* The name cut to the limit is another VM: it does not answer for the long one. */
	name[STATE_VM_NAME_MAX] = '\0';
	assert_int_equal(state_record(st, name, 1, 0, 2, 0x1), 0);
	assert_int_equal(st->nr, 1);
	name[STATE_VM_NAME_MAX] = 'x';
	assert_null(state_find(st, name, 0));
	state_forget(st, name, -1);
	assert_int_equal(st->nr, 1);
	state_free(st);

	snprintf(huge, huge_len + 256, "{\"version\":1,\"vcpus\":[{\"vm\":\"%s\",%s", name,
	         "\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0\"}]}");
	expect_malformed(huge, strlen(huge), "vcpus[0].vm: must be 1 to 255 bytes");
	strcpy(huge, "{\"version\":1,\"vcpus\":[{\"vm\":\"");
	n = strlen(huge);
	memset(huge + n, 'y', huge_len);
	huge[n + huge_len] = '\0';
	strcat(huge, "\"," GOOD_REST "}]}");
	expect_malformed(huge, strlen(huge), "vcpus[0].vm: must be 1 to 255 bytes");
	/* A message that quotes a name of the longest kind quotes all of it. */
	name[STATE_VM_NAME_MAX] = '\0';
	snprintf(dup, sizeof(dup), "vcpus[1]: vm \"%s\" vcpu 0 is listed twice", name);
	snprintf(huge, huge_len + 256,
	         "{\"version\":1,\"vcpus\":[{\"vm\":\"%s\"," GOOD_REST "},{\"vm\":\"%s\"," GOOD_REST
	         "}]}",
	         name, name);
	expect_malformed(huge, strlen(huge), dup);
	free(huge);
}

static void
test_missing_and_unreadable(void **state)
{
	struct state *st = NULL;
	char path[256], err[512];

	snprintf(path, sizeof(path), "%s/none.json", tmpdir);
	assert_int_equal(state_load(path, &st, err, sizeof(err)), 0);
	assert_non_null(st);
	assert_int_equal(st->nr, 0);
	assert_false(st->dirty);
	state_free(st);
	st = NULL;
	assert_int_equal(state_load(tmpdir, &st, err, sizeof(err)), -EISDIR);
	assert_null(st);
	assert_non_null(strstr(err, "cannot read"));
}

/* Entries of the many-entries test: MANY_VMS VMs of MANY_VCPUS vCPUs each. */
#define MANY_VMS   200
#define MANY_VCPUS 250

/*
 * A state file of MANY_VMS x MANY_VCPUS entries, compact, with a repeat of the entry of VM
 * dup_vm vCPU 0 at its end when dup_vm >= 0; malloc'd.
 */
static char *
many_text(int dup_vm)
{
	size_t cap = (size_t)(MANY_VMS * MANY_VCPUS + 1) * 96 + 64, len = 0;
	char *text = malloc(cap);

	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len, "{\"version\":1,\"vcpus\":[");
	for (int i = 0; i <= MANY_VMS * MANY_VCPUS; i++) {
		int vm = i < MANY_VMS * MANY_VCPUS ? i / MANY_VCPUS : dup_vm;
		int vcpu = i < MANY_VMS * MANY_VCPUS ? i % MANY_VCPUS : 0;

		if (vm < 0)
			break;
		len += (size_t)snprintf(text + len, cap - len,
		                        "%s{\"vm\":\"vm-%03d\",\"vm_id\":%d,\"vcpu\":%d,\"tid\":%d,"
		                        "\"orig_nodes\":\"%d\"}",
		                        i ? "," : "", vm, 1000 + vm, vcpu, 100000 + i, vcpu % 4);
		assert_true(len < cap);
	}
	len += (size_t)snprintf(text + len, cap - len, "]}\n");
	assert_true(len < cap);
	return text;
}

/*
 * 50,000 entries load whole: each is found with its own fields, a repeat at the very end is
 * still caught, and recording, forgetting and finding go on working on the loaded set.
 * (Loading was quadratic: every entry searched all those before it for a repeat.)
 */
static void
test_many_entries(void **state)
{
	struct state *st = NULL;
	const struct state_entry *e;
	char err[512], want[128];
	char *text = many_text(-1);

	write_file(flat_path, text, strlen(text));
	free(text);
	assert_int_equal(state_load(flat_path, &st, err, sizeof(err)), 0);
	assert_int_equal(st->nr, MANY_VMS * MANY_VCPUS);
	for (int vm = 0; vm < MANY_VMS; vm++) {
		char name[16];

		snprintf(name, sizeof(name), "vm-%03d", vm);
		for (int c = 0; c < MANY_VCPUS; c++) {
			e = state_find(st, name, c);
			if (e == NULL)
				fail_msg("%s vCPU %d not found", name, c);
			assert_int_equal(e->vm_id, 1000 + vm);
			assert_int_equal(e->tid, 100000 + vm * MANY_VCPUS + c);
			assert_true(e->orig_nodes == nodemask_of(c % 4));
		}
		assert_null(state_find(st, name, MANY_VCPUS));
	}
	state_forget(st, "vm-007", -1);
	state_forget(st, "vm-100", 3);
	assert_int_equal(st->nr, MANY_VMS * MANY_VCPUS - MANY_VCPUS - 1);
	assert_null(state_find(st, "vm-007", 0));
	assert_null(state_find(st, "vm-100", 3));
	assert_non_null(state_find(st, "vm-100", 4));
	assert_non_null(state_find(st, "vm-199", MANY_VCPUS - 1));
	assert_int_equal(state_record(st, "vm-007", 7, 1, 8, 0x3), 0);
	assert_int_equal(state_find(st, "vm-007", 1)->tid, 8);
	state_free(st);

	text = many_text(123);
	snprintf(want, sizeof(want), "vcpus[%d]: vm \"vm-123\" vcpu 0 is listed twice",
	         MANY_VMS * MANY_VCPUS);
	expect_malformed(text, strlen(text), want);
	free(text);
}

/*
 * A state that would make a file larger than state_load reads back is not saved: the pins it
 * holds could not be put back after a restart.  (About 140,000 entries; 150,000 here.)
 */
static void
test_save_too_large(void **state)
{
	struct state *st = state_new();
	char err[512], name[32];

	for (int i = 0; i < 150000; i++) {
		snprintf(name, sizeof(name), "vm-%04d", i / 100);
		assert_int_equal(state_record(st, name, 1 + i / 100, i % 100, 1 + i, 0xf), 0);
	}
	remove_suffixed(state_path, "");
	assert_int_equal(state_save(st, state_path, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "not saved"));
	assert_true(st->dirty);
	assert_false(st->entries[0].saved);
	assert_int_equal(access(state_path, F_OK), -1);
	state_free(st);
}

/* Try the lock from a child process: its exit status is 0 on success, 1 on -EBUSY. */
static int
lock_in_child(void)
{
	int status, fd;
	char err[512];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = state_lock(state_path, &fd, err, sizeof(err));

		_exit(rc == 0 ? 0 : rc == -EBUSY ? 1 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/*
 * flock() locks belong to an open file description: a second open() of the lock file, even in
 * the same process, conflicts with the first; so does another process.
 */
static void
test_lock(void **state)
{
	char err[512], want[512];
	int fd1 = -1, fd2 = 123;

	assert_int_equal(state_lock(state_path, &fd1, err, sizeof(err)), 0);
	assert_true(fd1 >= 0);
	assert_int_equal(state_lock(state_path, &fd2, err, sizeof(err)), -EBUSY);
	assert_int_equal(fd2, -1);
	snprintf(want, sizeof(want), "another vnumad holds %s.lock (pid %ld)", state_path,
	         (long)getpid());
	assert_string_equal(err, want);
	assert_int_equal(lock_in_child(), 1);
	close(fd1);
	assert_int_equal(lock_in_child(), 0);
	assert_int_equal(state_lock(state_path, &fd2, err, sizeof(err)), 0);
	assert_true(fd2 >= 0);
	close(fd2);
}

int
main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_find_forget),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_long_name_round_trip),
		cmocka_unit_test(test_name_too_long),
		cmocka_unit_test(test_file_format),
		cmocka_unit_test(test_atomic_replace),
		cmocka_unit_test(test_failed_save_keeps_old),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_missing_and_unreadable),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_save_too_large),
		cmocka_unit_test(test_lock),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/*
 * test_state_read.c - reading state files of every version (agent/state_read.c): each version
 * ever written read from its fixture (tests/fixtures/state, found through VNUMAD_SRCDIR, which
 * ctest sets); a file of a newer version, malformed ones and an unreadable one set aside under
 * names of their own, unchanged, with the entries of version 1's shape kept from them; a file
 * that cannot be set aside never replaced.  Files go to a mkdtemp directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/state.h"

/* One entry of version 1 with every field right, as the fields of a JSON object. */
#define GOOD "\"vm\":\"a\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,\"orig_nodes\":\"0-3\""

static char tmpdir[64];

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/vnumad-stread-XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
group_teardown(void **state)
{
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

/* path of a fixture in tests/fixtures/state into buf; false (the test skips) without ctest. */
static bool
fixture_path(const char *name, char *buf, size_t len)
{
	const char *src = getenv("VNUMAD_SRCDIR");

	if (src == NULL || *src == '\0')
		return false;
	snprintf(buf, len, "%s/tests/fixtures/state/%s", src, name);
	return true;
}

/* The whole of path, malloc'd and NUL-terminated; its length in *len. */
static char *
read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void
copy_file(const char *from, const char *to)
{
	size_t len;
	char *data = read_all(from, &len);

	write_file(to, data, len);
	free(data);
}

/* Remove dir and everything in it. */
static void
dir_empty_remove(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	char p[512];

	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (unlink(p) < 0)
			dir_empty_remove(p);
	}
	closedir(dp);
	rmdir(dir);
}

/* A fresh empty directory under tmpdir for one test's files. */
static void
aside_dir_make(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "%s/%s", tmpdir, name);
	dir_empty_remove(dir);
	assert_int_equal(mkdir(dir, 0755), 0);
}

/*
 * The names in dir that start with prefix and end in ".bad", joined by '|' into out (in
 * directory order); how many there are.
 */
static int
aside_files(const char *dir, const char *prefix, char *out, size_t len)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(dp);
	out[0] = '\0';
	while ((de = readdir(dp)) != NULL) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 || l < 4 ||
		    strcmp(de->d_name + l - 4, ".bad") != 0)
			continue;
		snprintf(out + strlen(out), len - strlen(out), "%s%s", n ? "|" : "", de->d_name);
		n++;
	}
	closedir(dp);
	return n;
}

/* name is PREFIX + YYYYMMDDTHHMMSSZ + suffix: a UTC time stamp in the middle. */
static void
assert_stamped(const char *name, const char *prefix, const char *suffix)
{
	const char *t = name + strlen(prefix);

	assert_memory_equal(name, prefix, strlen(prefix));
	assert_true(strlen(t) == 16 + strlen(suffix));
	for (int i = 0; i < 16; i++)
		if (i == 8)
			assert_int_equal(t[i], 'T');
		else if (i == 15)
			assert_int_equal(t[i], 'Z');
		else if (t[i] < '0' || t[i] > '9')
			fail_msg("%s: no time stamp after %s", name, prefix);
	assert_string_equal(t + 16, suffix);
}

/* Version 1 as its writer left it reads whole, field by field. */
static void
test_fixture_v1(void **state)
{
	struct state *st = NULL;
	const struct state_entry *e;
	char path[512], err[512];

	if (!fixture_path("v1.json", path, sizeof(path)))
		skip(); /* VNUMAD_SRCDIR is set by ctest */
	if (state_load(path, &st, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_int_equal(st->nr, 4);
	assert_false(st->dirty);
	assert_non_null(e = state_find(st, "db-orders", 0));
	assert_int_equal(e->vm_id, 4242);
	assert_int_equal(e->tid, 4250);
	assert_true(e->orig_nodes == 0xf);
	assert_non_null(e = state_find(st, "db-orders", 7));
	assert_true(e->orig_nodes == 0x5);
	assert_non_null(e = state_find(st, "web/\"1\" caf\xc3\xa9", 3));
	assert_int_equal(e->vm_id, 77);
	assert_int_equal(e->tid, 78);
	assert_true(e->orig_nodes == ((uint64_t)1 << 63 | 1));
	assert_non_null(e = state_find(st, "hpc-wide", 12));
	assert_true(e->orig_nodes == 0x2);
	state_free(st);
}

/* Version 2 as its writer left it: version 1's entries and the admin's scan tunables. */
static void
test_fixture_v2(void **state)
{
	struct state *st = NULL;
	char path[512], err[512];

	if (!fixture_path("v2.json", path, sizeof(path)))
		skip();
	if (state_load(path, &st, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_int_equal(st->nr, 2);
	assert_false(st->dirty);
	assert_true(state_find(st, "db-orders", 0)->orig_nodes == 0xf);
	assert_true(state_find(st, "web1", 1)->orig_nodes == 0x2);
	assert_true(st->scan_saved);
	assert_int_equal(st->scan.delay_ms, 1000);
	assert_int_equal(st->scan.period_min_ms, 1000);
	assert_int_equal(st->scan.period_max_ms, 60000);
	assert_int_equal(st->scan.size_mb, 256);
	state_free(st);
}

/*
 * The writer: version 1 while no scan tunables are saved (an older vnumad reads it), version 2
 * with them, read back equal; forgetting them writes version 1 again.
 */
static void
test_scan_saved_version(void **state)
{
	struct scan_tunables t = {
	    .delay_ms = 7, .period_min_ms = 10, .period_max_ms = 90, .size_mb = 32};
	struct state *st = state_new(), *back = NULL;
	char path[300], err[512], *text;
	size_t len;

	snprintf(path, sizeof(path), "%s/scan.json", tmpdir);
	state_record(st, "a", 1, 0, 2, 0x3);
	assert_int_equal(state_save(st, path, err, sizeof(err)), 0);
	assert_non_null(strstr(text = read_all(path, &len), "\"version\": 1"));
	free(text);
	state_scan_set(st, &t);
	assert_true(st->dirty);
	assert_int_equal(state_save(st, path, err, sizeof(err)), 0);
	assert_non_null(strstr(text = read_all(path, &len), "\"version\": 2"));
	free(text);
	assert_int_equal(state_load(path, &back, err, sizeof(err)), 0);
	assert_true(back->scan_saved);
	assert_memory_equal(&back->scan, &t, sizeof(t));
	assert_int_equal(back->nr, 1);
	state_free(back);
	state_scan_set(st, NULL);
	assert_true(st->dirty);
	assert_int_equal(state_save(st, path, err, sizeof(err)), 0);
	assert_non_null(strstr(text = read_all(path, &len), "\"version\": 1"));
	free(text);
	assert_int_equal(state_load(path, &back, err, sizeof(err)), 0);
	assert_false(back->scan_saved);
	state_free(back);
	state_free(st);
	unlink(path);
}

/* Version 2's scan object is checked as strictly as the rest; version 1 has none. */
static void
test_scan_malformed(void **state)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
	    {"{\"version\":2,\"vcpus\":[],\"scan\":1}", "scan: is not an object"},
	    {"{\"version\":2,\"vcpus\":[],\"scan\":{\"delay_ms\":1}}",
	     "scan.period_min_ms: is missing"},
	    {"{\"version\":2,\"vcpus\":[],\"scan\":{\"delay_ms\":-1,\"period_min_ms\":1,"
	     "\"period_max_ms\":1,\"size_mb\":1}}",
	     "scan.delay_ms: is out of range"},
	    {"{\"version\":2,\"vcpus\":[],\"scan\":{\"delay_ms\":1,\"period_min_ms\":1,"
	     "\"period_max_ms\":1,\"size_mb\":1,\"x\":0}}",
	     "scan: unknown field \"x\""},
	    {"{\"version\":1,\"vcpus\":[],\"scan\":{}}", "unknown field \"scan\""},
	};
	char path[300], err[512];

	snprintf(path, sizeof(path), "%s/scan-bad.json", tmpdir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct state *st = NULL;

		write_file(path, cases[i].text, strlen(cases[i].text));
		assert_int_equal(state_load(path, &st, err, sizeof(err)), -EINVAL);
		if (strstr(err, cases[i].why) == NULL)
			fail_msg("case %zu: %s", i, err);
	}
	unlink(path);
}

/*
 * A file of a version this vnumad has no reader for: state_load refuses it, saying so;
 * state_load_or_set_aside renames it to PATH.v3.TIME.bad, unchanged, and takes the entries of
 * version 1's shape (extra fields ignored; incomplete or other-typed ones and a repeat left);
 * they are saved as version 1.
 */
static void
test_newer_version_set_aside(void **state)
{
	struct state *st = NULL, *back = NULL;
	char fix[512], dir[256], path[300], names[1024], aside[1400], note[2048], err[512];
	char *orig, *kept;
	size_t orig_len, kept_len;

	if (!fixture_path("future-v3.json", fix, sizeof(fix)))
		skip();
	aside_dir_make(dir, sizeof(dir), "newer");
	snprintf(path, sizeof(path), "%s/state.json", dir);
	copy_file(fix, path);
	assert_int_equal(state_load(path, &st, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_null(st);
	assert_non_null(strstr(err, "version: 3: written by a newer vnumad (this one reads 1, 2)"));

	orig = read_all(path, &orig_len);
	assert_int_equal(state_load_or_set_aside(path, &st, note, sizeof(note)), 0);
	assert_non_null(st);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(aside_files(dir, "state.json.", names, sizeof(names)), 1);
	assert_stamped(names, "state.json.v3.", ".bad");
	snprintf(aside, sizeof(aside), "%s/%s", dir, names);
	kept = read_all(aside, &kept_len);
	assert_int_equal(kept_len, orig_len);
	assert_memory_equal(kept, orig, orig_len);
	if (strstr(note, aside) == NULL || strstr(note, "written by a newer vnumad") == NULL ||
	    strstr(note, "2 of its 5 vCPU entries kept") == NULL)
		fail_msg("note: %s", note);

	assert_int_equal(st->nr, 2);
	assert_true(st->dirty);
	assert_true(state_find(st, "db-orders", 0)->orig_nodes == 0xf);
	assert_int_equal(state_find(st, "db-orders", 1)->tid, 4251);
	assert_true(state_find(st, "db-orders", 1)->orig_nodes == 0xa);
	assert_null(state_find(st, "web1", 0));
	assert_null(state_find(st, "web1", 1));
	assert_int_equal(state_save(st, path, err, sizeof(err)), 0);
	assert_int_equal(state_load(path, &back, err, sizeof(err)), 0);
	assert_int_equal(back->nr, 2);
	assert_non_null(state_find(back, "db-orders", 1));
	state_free(back);
	state_free(st);
	free(orig);
	free(kept);
	dir_empty_remove(dir);
}

/* text into dir/state.json, then state_load_or_set_aside on it; the state taken. */
static struct state *
set_aside_text(const char *dir, const char *text, char *note, size_t notelen)
{
	char path[300];
	struct state *st = NULL;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	write_file(path, text, strlen(text));
	assert_int_equal(state_load_or_set_aside(path, &st, note, notelen), 0);
	assert_non_null(st);
	assert_int_equal(access(path, F_OK), -1);
	return st;
}

/*
 * Malformed files are set aside too, never over one another: PATH.vN.TIME.bad when they have a
 * version, PATH.TIME.bad when not, each kept whole; what has version 1's shape is taken, from
 * a version-1 file with one bad entry as well.  A state file that is a directory is moved
 * aside whole.  A missing file is no news: an empty state, no note.
 */
static void
test_malformed_set_aside(void **state)
{
	static const char truncated[] = "{\"version\":1,\"vcpus\":[{\"vm\":\"a\",";
	static const char one_bad[] =
	    "{\"version\":1,\"vcpus\":[{" GOOD "},{\"vm\":\"b\",\"vm_id\":1,\"vcpu\":0,\"tid\":2,"
	    "\"orig_nodes\":\"\"}]}";
	char dir[256], path[300], sub[320], names[2048], note[2048];
	struct state *st;
	int n;

	aside_dir_make(dir, sizeof(dir), "malformed");
	snprintf(path, sizeof(path), "%s/state.json", dir);
	assert_int_equal(state_load_or_set_aside(path, &st, note, sizeof(note)), 0);
	assert_int_equal(st->nr, 0);
	assert_string_equal(note, "");
	state_free(st);

	st = set_aside_text(dir, truncated, note, sizeof(note));
	assert_int_equal(st->nr, 0);
	assert_false(st->dirty);
	assert_non_null(strstr(note, "not valid JSON: truncated"));
	state_free(st);
	assert_int_equal(aside_files(dir, "state.json.", names, sizeof(names)), 1);
	assert_stamped(names, "state.json.", ".bad");

	st = set_aside_text(dir, "{\"version\":1,\"vcpus\":[]} x", note, sizeof(note));
	state_free(st);
	/* Two files without a version, likely within one second: two names. */
	n = aside_files(dir, "state.json.", names, sizeof(names));
	assert_int_equal(n, 2);
	if (strstr(names, ".2.bad") == NULL)
		fprintf(stderr, "(the two files were set aside in different seconds: %s)\n", names);

	st = set_aside_text(dir, one_bad, note, sizeof(note));
	assert_int_equal(st->nr, 1);
	assert_true(st->dirty);
	assert_non_null(state_find(st, "a", 0));
	assert_non_null(strstr(note, "vcpus[1].orig_nodes: is not a node list"));
	assert_non_null(strstr(note, "1 of its 2 vCPU entries kept"));
	state_free(st);
	assert_int_equal(aside_files(dir, "state.json.v1.", names, sizeof(names)), 1);

	/* Unreadable: a directory where the file should be. */
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/inside", path);
	write_file(sub, "x", 1);
	assert_int_equal(state_load_or_set_aside(path, &st, note, sizeof(note)), 0);
	assert_int_equal(st->nr, 0);
	assert_non_null(strstr(note, "cannot read"));
	assert_int_equal(access(path, F_OK), -1);
	state_free(st);
	assert_int_equal(aside_files(dir, "state.json.", names, sizeof(names)), 4);
	dir_empty_remove(dir);
}

/*
 * A file that cannot be renamed (here: the name with the suffix would be longer than a file
 * name may be) stays where it is, and no save replaces it, whatever the state holds.
 */
static void
test_set_aside_fails_keeps_file(void **state)
{
	char dir[256], path[600], name[256], note[2048], err[1024];
	const char *text = "{\"version\":9,\"vcpus\":[{" GOOD "}]}";
	struct state *st = NULL;
	size_t len;
	char *data;

	aside_dir_make(dir, sizeof(dir), "keep");
	memset(name, 'n', 240); /* + ".v9.YYYYMMDDTHHMMSSZ.bad" > NAME_MAX (255) */
	name[240] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, text, strlen(text));
	assert_int_equal(state_load_or_set_aside(path, &st, note, sizeof(note)), 0);
	assert_true(st->keep_file);
	assert_int_equal(st->nr, 1);
	assert_non_null(strstr(note, "cannot set it aside"));
	assert_int_equal(state_save(st, path, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "not replaced"));
	state_record(st, "b", 3, 0, 4, 0x1);
	assert_int_equal(state_save(st, path, err, sizeof(err)), -EEXIST);
	data = read_all(path, &len);
	assert_int_equal(len, strlen(text));
	assert_memory_equal(data, text, len);
	free(data);
	state_free(st);
	dir_empty_remove(dir);
}

/*
 * A version-2 file set aside (one bad entry): its whole "scan" object is kept with the good
 * entries, so that the admin's scan tunables a crash left still go back; a scan object that
 * is not whole is not.
 */
static void
test_scan_salvaged(void **state)
{
	static const char bad_entry[] =
	    "{\"version\":2,\"vcpus\":[{" GOOD "},{\"vm\":\"b\"}],\"scan\":{\"delay_ms\":7,"
	    "\"period_min_ms\":10,\"period_max_ms\":90,\"size_mb\":32}}";
	static const char bad_scan[] =
	    "{\"version\":2,\"vcpus\":[{" GOOD "}],\"scan\":{\"delay_ms\":7}}";
	char dir[256], note[2048];
	struct state *st;

	aside_dir_make(dir, sizeof(dir), "scan-salvage");
	st = set_aside_text(dir, bad_entry, note, sizeof(note));
	assert_int_equal(st->nr, 1);
	assert_true(st->dirty);
	assert_true(st->scan_saved);
	assert_int_equal(st->scan.delay_ms, 7);
	assert_int_equal(st->scan.period_max_ms, 90);
	assert_non_null(strstr(note, "1 of its 2 vCPU entries kept, and its saved scan tunables"));
	state_free(st);
	st = set_aside_text(dir, bad_scan, note, sizeof(note));
	assert_int_equal(st->nr, 1);
	assert_false(st->scan_saved);
	assert_non_null(strstr(note, "scan.period_min_ms: is missing"));
	assert_null(strstr(note, "scan tunables"));
	state_free(st);
	dir_empty_remove(dir);
}

int
main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_v1),
		cmocka_unit_test(test_fixture_v2),
		cmocka_unit_test(test_scan_saved_version),
		cmocka_unit_test(test_scan_malformed),
		cmocka_unit_test(test_scan_salvaged),
		cmocka_unit_test(test_newer_version_set_aside),
		cmocka_unit_test(test_malformed_set_aside),
		cmocka_unit_test(test_set_aside_fails_keeps_file),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

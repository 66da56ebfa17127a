/*
 * test_fuzz_replay_proto.c - runs every file of tests/fuzz/corpus/proto/ through the libFuzzer
 * target (compiled in here, so gcc builds exercise it too) and checks the named seeds: a file
 * called "ok-*" must decode, "NNN-*" must be refused with status NNN.  Other files (found by
 * the fuzzer) need only be survived.  Needs VNUMAD_SRCDIR (ctest sets it).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/proto.h"
#include "policy/util.h"

#include "tests/fuzz/fuzz_proto.c"

#define REPLAY_MIN_FILES 10 /* the seed corpus has at least this many; fewer means it is lost */
#define REPLAY_MAX_BYTES (4 * PROTO_MAX_LINE) /* bigger corpus files are a mistake */

static char *
replay_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = xmalloc(REPLAY_MAX_BYTES);

	if (f == NULL)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	*len = fread(data, 1, REPLAY_MAX_BYTES, f);
	assert_true(*len < REPLAY_MAX_BYTES);
	fclose(f);
	return data;
}

/* The status a seed's name promises: 0 for "ok-", NNN for "NNN-", -1 for no promise. */
static int
replay_expected(const char *name)
{
	char *end;
	long st;

	if (strncmp(name, "ok-", 3) == 0)
		return PROTO_OK;
	st = strtol(name, &end, 10);
	if (end != name && *end == '-')
		return (int)st;
	return -1;
}

static void
replay_one(const char *dir, const char *name)
{
	struct util_buf path = {0};
	char err[256] = "";
	struct proto_request req;
	enum proto_status st;
	size_t len;
	char *data;
	int want = replay_expected(name);

	util_buf_printf(&path, "%s/%s", dir, name);
	data = replay_read(path.data, &len);
	free(path.data);
	LLVMFuzzerTestOneInput((const uint8_t *)data, len);
	st = proto_request_decode(data, len, &req, err, sizeof(err));
	print_message("%-28s %3d %s\n", name, (int)st, err);
	assert_true(err[0] != '\0');
	if (want >= 0)
		assert_int_equal(st, want);
	if (st == PROTO_OK)
		proto_request_free(&req);
	free(data);
}

static void
test_replay_corpus(void **state)
{
	const char *src = getenv("VNUMAD_SRCDIR");
	struct dirent **names;
	char dir[4096];
	int n, files = 0;

	if (src == NULL) {
		print_message("VNUMAD_SRCDIR not set (run through ctest): skipping\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/proto", src);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		fail_msg("cannot read %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			replay_one(dir, names[i]->d_name);
			files++;
		}
		free(names[i]);
	}
	free(names);
	assert_true(files >= REPLAY_MIN_FILES);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_corpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

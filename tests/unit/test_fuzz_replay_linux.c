/*
 * test_fuzz_replay_linux.c - runs every file of tests/fuzz/corpus/{numa_maps,sched,meminfo}/
 * through all three libFuzzer targets of the host/linux parsers (compiled in here, so gcc
 * builds exercise them too) and checks the named seeds against their own parser: "ok-*" must
 * parse, "einval-*" must give -EINVAL, "efbig-*" -EFBIG.  Other files (found by the fuzzer)
 * need only be survived.  Needs VNUMAD_SRCDIR (ctest sets it).
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

#include "host/fileio.h"
#include "host/linux/procfs.h"
#include "host/linux/sysfs.h"
#include "policy/util.h"

/* The three targets each define LLVMFuzzerTestOneInput: give each its own name here. */
#define LLVMFuzzerTestOneInput fuzz_numa_maps_one
#include "tests/fuzz/fuzz_numa_maps.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_sched_one
#include "tests/fuzz/fuzz_sched.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_meminfo_one
#include "tests/fuzz/fuzz_meminfo.c"
#undef LLVMFuzzerTestOneInput

#define REPLAY_MIN_FILES 10                /* each seed corpus has at least this many */
#define REPLAY_MAX_BYTES (4 * 1024 * 1024) /* bigger corpus files are a mistake */

/* The result a seed's name promises (1 = no promise). */
static int
replay_expected(const char *name)
{
	if (strncmp(name, "ok-", 3) == 0)
		return 0;
	if (strncmp(name, "einval-", 7) == 0)
		return -EINVAL;
	if (strncmp(name, "efbig-", 6) == 0)
		return -EFBIG;
	return 1;
}

static int
replay_numa_maps(const char *b, size_t n)
{
	struct linux_numa_maps m;
	int ret = linux_numa_maps_parse(b, n, &m);

	linux_numa_maps_free(&m);
	return ret;
}

static int
replay_sched(const char *b, size_t n)
{
	struct linux_sched s;
	int ret = linux_sched_parse(b, n, &s);

	linux_sched_free(&s);
	return ret;
}

static int
replay_meminfo(const char *b, size_t n)
{
	struct linux_meminfo m;

	return linux_meminfo_parse(b, n, 0, &m);
}

static void
replay_one(const char *dir, const char *name, int (*parse)(const char *, size_t))
{
	struct util_buf path = {0};
	size_t len;
	char *data, *exact;
	int want = replay_expected(name), ret;

	util_buf_printf(&path, "%s/%s", dir, name);
	if ((ret = fileio_read(path.data, REPLAY_MAX_BYTES, &data, &len)) < 0)
		fail_msg("cannot read %s: %s", path.data, strerror(-ret));
	free(path.data);
	exact = xmalloc(len); /* exactly len bytes: ASan catches any over-read */
	memcpy(exact, data, len);
	free(data);
	fuzz_numa_maps_one((const uint8_t *)exact, len);
	fuzz_sched_one((const uint8_t *)exact, len);
	fuzz_meminfo_one((const uint8_t *)exact, len);
	ret = parse(exact, len);
	print_message("%-28s %4d\n", name, ret);
	if (want <= 0)
		assert_int_equal(ret, want);
	free(exact);
}

static void
replay_dir(const char *corpus, int (*parse)(const char *, size_t))
{
	const char *src = getenv("VNUMAD_SRCDIR");
	struct dirent **names;
	char dir[4096];
	int n, files = 0;

	if (src == NULL) {
		print_message("VNUMAD_SRCDIR not set (run through ctest): skipping\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src, corpus);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		fail_msg("cannot read %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			replay_one(dir, names[i]->d_name, parse);
			files++;
		}
		free(names[i]);
	}
	free(names);
	assert_true(files >= REPLAY_MIN_FILES);
}

static void
test_replay_numa_maps(void **state)
{
	replay_dir("numa_maps", replay_numa_maps);
}

static void
test_replay_sched(void **state)
{
	replay_dir("sched", replay_sched);
}

static void
test_replay_meminfo(void **state)
{
	replay_dir("meminfo", replay_meminfo);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_numa_maps),
	    cmocka_unit_test(test_replay_sched),
	    cmocka_unit_test(test_replay_meminfo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_fuzz_replay_linux.c - runs every file of tests/fuzz/corpus/{numa_maps,sched,meminfo}/
 * through all three libFuzzer targets of the host/linux parsers (compiled in here, so gcc
 * builds exercise them too) and checks the named seeds against their own parser, by the
 * naming rule of tests/fuzz/fuzz_replay.h.  Needs VNUMAD_SRCDIR (ctest sets it).
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

#include "tests/fuzz/fuzz_replay.h"

/* Every file through all three targets, then its own parser, whose result the replay checks. */
static void
replay_targets(const uint8_t *data, size_t len)
{
	fuzz_numa_maps_one(data, len);
	fuzz_sched_one(data, len);
	fuzz_meminfo_one(data, len);
}

static int
replay_numa_maps(const uint8_t *data, size_t len)
{
	struct linux_numa_maps m;
	int ret;

	replay_targets(data, len);
	ret = linux_numa_maps_parse((const char *)data, len, &m);
	linux_numa_maps_free(&m);
	return ret;
}

static int
replay_sched(const uint8_t *data, size_t len)
{
	struct linux_sched s;
	int ret;

	replay_targets(data, len);
	ret = linux_sched_parse((const char *)data, len, &s);
	linux_sched_free(&s);
	return ret;
}

static int
replay_meminfo(const uint8_t *data, size_t len)
{
	struct linux_meminfo m;

	replay_targets(data, len);
	return linux_meminfo_parse((const char *)data, len, 0, &m);
}

static void
test_replay_numa_maps(void **state)
{
	fuzz_replay_corpus("numa_maps", replay_numa_maps);
}

static void
test_replay_sched(void **state)
{
	fuzz_replay_corpus("sched", replay_sched);
}

static void
test_replay_meminfo(void **state)
{
	fuzz_replay_corpus("meminfo", replay_meminfo);
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

/*
 * test_fuzz_replay_host.c - replays the seed corpora of the fuzz targets of QEMU command lines
 * and RAM layouts (host/linux/qemu_numa.c, discover.c, maps.c, ram_layout.c), discovery on a
 * /proc tree, the /proc and /sys readers (host/linux/procfs.c, sysfs.c) and the hwloc XML
 * loader (host/topology.c): every file of
 * tests/fuzz/corpus/{qemu_cmdline,discover,procfs,sysfs,topology}/ through its target,
 * compiled in here so that gcc builds run it too, checking what each seed's name promises
 * (tests/fuzz/fuzz_replay.h).  Needs VNUMAD_SRCDIR (ctest sets it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#define FUZZ_NO_ENTRY /* each target's LLVMFuzzerTestOneInput is left out */
#include "tests/fuzz/fuzz_qemu_cmdline.c"
#include "tests/fuzz/fuzz_discover.c"
#include "tests/fuzz/fuzz_procfs.c"
#include "tests/fuzz/fuzz_sysfs.c"
#include "tests/fuzz/fuzz_topology.c"
#include "tests/fuzz/fuzz_replay.h"

static void
test_replay_qemu_cmdline(void **state)
{
	fuzz_replay_corpus("qemu_cmdline", fuzz_qemu_cmdline_run);
}

static void
test_replay_discover(void **state)
{
	fuzz_replay_corpus("discover", fuzz_discover_run);
}

static void
test_replay_procfs(void **state)
{
	fuzz_replay_corpus("procfs", fuzz_procfs_run);
}

static void
test_replay_sysfs(void **state)
{
	fuzz_replay_corpus("sysfs", fuzz_sysfs_run);
}

static void
test_replay_topology(void **state)
{
	fuzz_replay_corpus("topology", fuzz_topology_run);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_qemu_cmdline), cmocka_unit_test(test_replay_discover),
	    cmocka_unit_test(test_replay_procfs),       cmocka_unit_test(test_replay_sysfs),
	    cmocka_unit_test(test_replay_topology),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_fuzz_replay_policy.c - replays the seed corpora of the fuzz targets of the policy XML
 * and node list parsers (policy/vm_policy.c, util.c), the per-VM policy files
 * (agent/policy_files.c) and the simulator's scenarios (host/sim/scenario.c): every file of
 * tests/fuzz/corpus/{vm_policy,policy_files,scenario}/ through its target, compiled in here
 * so that gcc builds run it too, checking what each seed's name promises
 * (tests/fuzz/fuzz_replay.h).  Needs VNUMAD_SRCDIR (ctest sets it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#define FUZZ_NO_ENTRY /* each target's LLVMFuzzerTestOneInput is left out */
#include "tests/fuzz/fuzz_vm_policy.c"
#include "tests/fuzz/fuzz_policy_files.c"
#include "tests/fuzz/fuzz_scenario.c"
#include "tests/fuzz/fuzz_replay.h"

static void
test_replay_vm_policy(void **state)
{
	fuzz_replay_corpus("vm_policy", fuzz_vm_policy_run);
}

static void
test_replay_policy_files(void **state)
{
	fuzz_replay_corpus("policy_files", fuzz_policy_files_run);
}

static void
test_replay_scenario(void **state)
{
	fuzz_replay_corpus("scenario", fuzz_scenario_run);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_vm_policy),
	    cmocka_unit_test(test_replay_policy_files),
	    cmocka_unit_test(test_replay_scenario),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

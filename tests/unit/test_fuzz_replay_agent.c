/*
 * test_fuzz_replay_agent.c - replays the seed corpora of the fuzz targets of vnumad.conf
 * (agent/config.c), the state file (agent/state.c), vnumactl's arguments and shell
 * (agent/cli.c, shell.c) and its control socket reader (agent/client.c): every file of
 * tests/fuzz/corpus/{config,state,cli,shell,client}/ through its target, compiled in here so
 * that gcc builds run it too, checking what each seed's name promises
 * (tests/fuzz/fuzz_replay.h).  Needs VNUMAD_SRCDIR (ctest sets it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#define FUZZ_NO_ENTRY /* each target's LLVMFuzzerTestOneInput is left out */
#include "tests/fuzz/fuzz_config.c"
#include "tests/fuzz/fuzz_state.c"
#include "tests/fuzz/fuzz_cli.c"
#include "tests/fuzz/fuzz_shell.c"
#include "tests/fuzz/fuzz_client.c"
#include "tests/fuzz/fuzz_replay.h"

static void
test_replay_config(void **state)
{
	fuzz_replay_corpus("config", fuzz_config_run);
}

static void
test_replay_state(void **state)
{
	fuzz_replay_corpus("state", fuzz_state_run);
}

static void
test_replay_cli(void **state)
{
	fuzz_replay_corpus("cli", fuzz_cli_run);
}

static void
test_replay_shell(void **state)
{
	fuzz_replay_corpus("shell", fuzz_shell_run);
}

static void
test_replay_client(void **state)
{
	fuzz_replay_corpus("client", fuzz_client_run);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_config), cmocka_unit_test(test_replay_state),
	    cmocka_unit_test(test_replay_cli),    cmocka_unit_test(test_replay_shell),
	    cmocka_unit_test(test_replay_client),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * fuzz_cli.c - libFuzzer target for vnumactl's argument parser (agent/cli.c): global options,
 * the command name and its arguments against every command's spec, and help.
 *
 * Input: the arguments after "vnumactl", one per line.  They run through cli_run() on
 * vnumactl's table with handlers that only check what was parsed (fuzz_cli_table.h), and
 * through cli_args_parse() against every command of the real table.  Built by `make fuzz`
 * (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/cli/
 * (tests/unit/test_fuzz_replay_agent.c).  Returns 0 when cli_run() succeeded, -EINVAL when it
 * gave exit status 1.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli.h"
#include "tests/fuzz/fuzz_cli_table.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_CLI_ARGS_MAX 256

int fuzz_cli_run(const uint8_t *data, size_t size);

/* The words after the command name, against each command's spec. */
static void
fuzz_cli_specs(int argc, char **argv)
{
	for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
		struct cli_args args;
		bool json = false;
		char err[256];
		int ret;

		memset(err, 'x', sizeof(err));
		ret = cli_args_parse(c, argc, argv, &args, &json, err, sizeof(err));
		if (ret == 0)
			fuzz_cli_handler(&(struct cli_ctx){.out = fuzz_cli_null()}, &args);
		else if (ret != -EINVAL || !fuzz_msg_ok(err, sizeof(err)) || err[0] == '\0')
			abort(); /* a refusal says why */
	}
}

/* A command found by a word is named so, or has it as an alias. */
static void
fuzz_cli_find(const char *word)
{
	const struct cli_command *c = cli_command_find(cli_commands, word);
	bool named;

	if (c == NULL)
		return;
	named = strcmp(c->name, word) == 0;
	for (int i = 0; i < CLI_MAX_ALIASES && c->aliases[i] != NULL; i++)
		named |= strcmp(c->aliases[i], word) == 0;
	if (!named)
		abort();
}

int
fuzz_cli_run(const uint8_t *data, size_t size)
{
	const struct cli_command *table = fuzz_cli_table(false);
	FILE *null = fuzz_cli_null();
	struct fuzz_argv a;
	int status;

	fuzz_argv_split(data, size, '\n', "vnumactl", FUZZ_CLI_ARGS_MAX, &a);
	status = cli_run(table, a.argc, a.argv, null, null);
	if (status != 0 && status != 1)
		abort();
	if (a.argc > 1)
		fuzz_cli_specs(a.argc - 2, a.argv + 2);
	if (a.argc > 1)
		fuzz_cli_find(a.argv[1]);
	fuzz_argv_free(&a);
	return status == 0 ? 0 : -EINVAL;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_cli_run(data, size);
	return 0;
}
#endif

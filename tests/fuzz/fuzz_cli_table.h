/*
 * fuzz_cli_table.h - vnumactl's command table (agent/cli.c) for the cli and shell targets:
 * every command's name, aliases and argument spec, but a handler that only looks at the
 * parsed arguments, so that no input reaches a daemon, runs a simulation or reads standard
 * input.  "help" keeps its real handler (it only prints); "quit" is kept only on request,
 * since cli_run() with no command and a quit command starts a shell on standard input.
 */
#ifndef VNUMAD_TESTS_FUZZ_CLI_TABLE_H
#define VNUMAD_TESTS_FUZZ_CLI_TABLE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_CLI_COMMANDS_MAX 64

/* Whether v is one of the '|'-separated words of choice. */
static FUZZ_UNUSED bool
fuzz_cli_choice(const char *choice, const char *v)
{
	size_t n = strlen(v);

	for (const char *w = choice; *w != '\0'; w += strcspn(w, "|"), w += *w == '|')
		if (strcspn(w, "|") == n && strncmp(w, v, n) == 0)
			return true;
	return false;
}

/* Every value given is one the spec allows: an option's choice, N a number. */
static FUZZ_UNUSED int
fuzz_cli_handler(struct cli_ctx *ctx, const struct cli_args *args)
{
	for (int i = 0; i < args->nr_params; i++) {
		const struct cli_param *p = &args->params[i];
		const char *v = args->values[i];

		if (v == NULL) {
			if (!p->optional)
				abort(); /* a required argument the parser let through */
			continue;
		}
		if (p->type[0] == '\0' && v[0] != '\0')
			abort(); /* a flag with a value */
		if (strcmp(p->type, "N") == 0 &&
		    (v[0] == '\0' || strspn(v, "0123456789") != strlen(v)))
			abort();
		if (strchr(p->type, '|') != NULL && !fuzz_cli_choice(p->type, v))
			abort();
		if (cli_args_get(args, p->name) != v)
			abort();
	}
	fprintf(ctx->out, "%d\n", args->nr_params);
	return 0;
}

/* The table, made on the first call; with_quit keeps the quit command. */
static FUZZ_UNUSED const struct cli_command *
fuzz_cli_table(bool with_quit)
{
	static struct cli_command tables[2][FUZZ_CLI_COMMANDS_MAX + 1];
	static bool made;

	if (!made) {
		for (int t = 0; t < 2; t++) {
			int n = 0;

			for (const struct cli_command *c = cli_commands;
			     c->name != NULL && n < FUZZ_CLI_COMMANDS_MAX; c++) {
				if (c->handler == cli_quit_cmd && t == 0)
					continue;
				tables[t][n] = *c;
				if (c->handler != cli_help_cmd && c->handler != cli_quit_cmd)
					tables[t][n].handler = fuzz_cli_handler;
				n++;
			}
		}
		made = true;
	}
	return tables[with_quit];
}

/* Where the commands print: /dev/null, opened once. */
static FUZZ_UNUSED FILE *
fuzz_cli_null(void)
{
	static FILE *null;

	if (null == NULL && (null = fopen("/dev/null", "w")) == NULL)
		abort();
	return null;
}

#endif

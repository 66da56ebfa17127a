/*
 * fuzz_shell.c - libFuzzer target for vnumactl's interactive shell (agent/shell.c): its
 * word splitter (quotes, backslashes, comments) and its read-and-dispatch loop.
 *
 * Every line of the input is split; the words, each quoted again in single quotes, must split
 * back to themselves.  The whole input (up to a NUL) is split as one line too, and then read
 * by shell_run() as its standard input, each line dispatched on vnumactl's table with
 * handlers that only check what was parsed (fuzz_cli_table.h).  Built by `make fuzz`
 * (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/shell/
 * (tests/unit/test_fuzz_replay_agent.c).  Returns what shell_split() returned on the whole.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/shell.h"
#include "tests/fuzz/fuzz_cli_table.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_SHELL_LINES_MAX 256

int fuzz_shell_run(const uint8_t *data, size_t size);

/* words quoted so that the splitter gives them back: 'a'\''b' for a'b. */
static char *
fuzz_shell_quote(char **words)
{
	struct util_buf out = {0};

	util_buf_printf(&out, "%s", "");
	for (char **w = words; *w != NULL; w++) {
		util_buf_printf(&out, "%s'", w == words ? "" : " ");
		for (const char *c = *w; *c != '\0'; c++) {
			if (*c == '\'')
				util_buf_printf(&out, "'\\''");
			else
				util_buf_printf(&out, "%c", *c);
		}
		util_buf_printf(&out, "'");
	}
	return out.data;
}

/* Split line; words that split must survive quoting.  Returns what shell_split() did. */
static int
fuzz_shell_split(const char *line)
{
	char **words, **again, err[256], *quoted;
	int nr, nr_again, ret;

	memset(err, 'x', sizeof(err));
	ret = shell_split(line, &words, &nr, err, sizeof(err));
	if (ret < 0) {
		if (ret != -EINVAL || words != NULL || nr != 0 || !fuzz_msg_ok(err, sizeof(err)))
			abort();
		return ret;
	}
	if (words == NULL || nr < 0 || words[nr] != NULL)
		abort();
	quoted = fuzz_shell_quote(words);
	if (shell_split(quoted, &again, &nr_again, err, sizeof(err)) != 0 || nr_again != nr)
		abort();
	for (int i = 0; i < nr; i++)
		if (strcmp(words[i], again[i]) != 0)
			abort();
	shell_words_free(again);
	shell_words_free(words);
	free(quoted);
	return 0;
}

/* The loop of `vnumactl` with no command, reading the input as its standard input. */
static void
fuzz_shell_loop(const uint8_t *data, size_t size)
{
	struct cli_ctx ctx = {.out = fuzz_cli_null(),
	                      .err = fuzz_cli_null(),
	                      .table = fuzz_cli_table(true),
	                      .prog = "vnumactl"};
	char *copy;
	FILE *in;

	if (size == 0)
		return; /* fmemopen refuses an empty buffer */
	copy = fuzz_strndup(data, size);
	if ((in = fmemopen(copy, size, "r")) == NULL)
		abort();
	if (shell_run(&ctx, in) != 0)
		abort();
	fclose(in);
	free(copy);
}

int
fuzz_shell_run(const uint8_t *data, size_t size)
{
	struct fuzz_argv lines;
	char *whole = fuzz_strndup(data, size);
	int ret;

	fuzz_argv_split(data, size, '\n', NULL, FUZZ_SHELL_LINES_MAX, &lines);
	for (int i = 0; i < lines.argc; i++)
		fuzz_shell_split(lines.argv[i]);
	fuzz_argv_free(&lines);
	ret = fuzz_shell_split(whole);
	free(whole);
	fuzz_shell_loop(data, size);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_shell_run(data, size);
	return 0;
}
#endif

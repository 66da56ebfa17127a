/*
 * shell.h - vnumactl's interactive shell (BRIEF 4.5): with no command, read lines (with a
 * "vnumactl # " prompt when the input is a terminal), split each into words like a POSIX
 * shell does, and run them through the same dispatcher as the command line.  The global
 * options (-c, --json) apply to every line; a failing command prints its error and the shell
 * goes on; "quit", "exit" or end of input end it with status 0.
 */
#ifndef VNUMAD_AGENT_SHELL_H
#define VNUMAD_AGENT_SHELL_H

#include <stddef.h>
#include <stdio.h>

#include "agent/cli.h"

#define SHELL_PROMPT "vnumactl # "

/*
 * Split line into words.  Blanks separate words; '...' keeps everything inside as it is;
 * "..." keeps everything but \" and \\, which stand for " and \; outside quotes a backslash
 * takes the next character as it is; quotes may join parts of one word (a"b"'c' is abc) and
 * "" is an empty word; '#' at the start of a word begins a comment.  Returns 0 with a
 * NULL-terminated array in *words (free with shell_words_free) and the count in *nr_words,
 * or -EINVAL with a message (unterminated quote, backslash at the end).
 */
int shell_split(const char *line, char ***words, int *nr_words, char *err, size_t errlen);
void shell_words_free(char **words);

/* Run one line in the shell (a copy of ctx per line); sets ctx->quit on quit/exit.  The
 * command's exit status, 0 for an empty line, 1 for a line that does not split. */
int shell_line_run(struct cli_ctx *ctx, const char *line);

/*
 * A line editor for a terminal.  vnumactl registers the libedit one (shell_edit.h) before it
 * runs; it lives outside the vnagent library so that only vnumactl links libedit.  Without
 * one (the unit tests) or when it cannot start, a terminal gets plain lines as from a pipe.
 */
struct shell_editor {
	/* Start editing lines read from in for ctx; NULL when it cannot (then plain lines). */
	void *(*open)(struct cli_ctx *ctx, FILE *in);
	/*
	 * Prompt and read one line: 1 with it in *line (malloc'd, no newline), 0 at end of
	 * input (Ctrl-D on an empty line), -EINTR when Ctrl-C dropped the line.
	 */
	int (*read)(void *editor, char **line);
	void (*close)(void *editor);
};

/* The editor shell_run uses when its input is a terminal (NULL: none). */
void shell_editor_set(const struct shell_editor *editor);

/*
 * Read and run lines from in until quit or end of input.  Returns 0.  When in is a terminal,
 * lines come through the registered editor, and SIGINT is caught for the whole session:
 * Ctrl-C at the prompt drops the line and prompts again, and the commands that wait (migrate,
 * events --follow, top) and simulate (between balancers) stop on it and return to the
 * prompt; others run to their end.
 */
int shell_run(struct cli_ctx *ctx, FILE *in);

#endif

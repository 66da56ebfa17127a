/*
 * shell.c - the interactive shell: a prompt, word splitting, and the shared dispatcher.
 */
#include "agent/shell.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cmd_common.h"
#include "agent/version.h"
#include "policy/util.h"

#define SHELL_ERR_MAX 256

/* The editor vnumactl registered (shell_editor_set), or NULL. */
static const struct shell_editor *shell_editor;

/* The words found so far. */
struct shell_words {
	char **v;
	size_t cap;
	int nr;
};

static void
shell_words_push(struct shell_words *w, struct util_buf *word)
{
	util_array_reserve((void **)&w->v, &w->cap, (size_t)w->nr + 2, sizeof(*w->v));
	w->v[w->nr++] = word->data != NULL ? word->data : xstrdup("");
	w->v[w->nr] = NULL;
	memset(word, 0, sizeof(*word));
}

/* Inside quote q at *p: append what the character means; false when it closes the quote. */
static bool
shell_quoted_char(char q, const char **p, struct util_buf *word)
{
	const char *c = *p;

	if (*c == q)
		return false;
	if (q == '"' && c[0] == '\\' && (c[1] == '"' || c[1] == '\\'))
		c++;
	util_buf_printf(word, "%c", *c);
	*p = c;
	return true;
}

static int
shell_split_words(const char *line, struct shell_words *w, char *err, size_t errlen)
{
	struct util_buf word = {0};
	bool in_word = false;
	char quote = 0;
	const char *p;

	for (p = line; *p != '\0'; p++) {
		if (quote != 0) {
			if (!shell_quoted_char(quote, &p, &word))
				quote = 0;
		} else if (strchr(" \t\r\n", *p) != NULL) {
			if (in_word)
				shell_words_push(w, &word);
			in_word = false;
		} else if (*p == '#' && !in_word) {
			break;
		} else if (*p == '\'' || *p == '"') {
			quote = *p;
			in_word = true;
		} else if (*p == '\\' && p[1] == '\0') {
			break;
		} else {
			p += *p == '\\';
			util_buf_printf(&word, "%c", *p);
			in_word = true;
		}
	}
	if (quote != 0 || (*p == '\\' && quote == 0)) {
		snprintf(err, errlen, quote != 0 ? "unterminated %c quote" : "backslash at the end",
		         quote);
		free(word.data);
		return -EINVAL;
	}
	if (in_word)
		shell_words_push(w, &word);
	return 0;
}

int
shell_split(const char *line, char ***words, int *nr_words, char *err, size_t errlen)
{
	struct shell_words w = {0};

	util_array_reserve((void **)&w.v, &w.cap, 1, sizeof(*w.v));
	w.v[0] = NULL;
	if (shell_split_words(line, &w, err, errlen) < 0) {
		shell_words_free(w.v);
		*words = NULL;
		*nr_words = 0;
		return -EINVAL;
	}
	*words = w.v;
	*nr_words = w.nr;
	return 0;
}

void
shell_words_free(char **words)
{
	for (char **w = words; w != NULL && *w != NULL; w++)
		free(*w);
	free(words);
}

int
shell_line_run(struct cli_ctx *ctx, const char *line)
{
	struct cli_ctx line_ctx = *ctx; /* --json on this line must not stick */
	char err[SHELL_ERR_MAX], **words, *text = xstrdup(line);
	size_t len = strlen(text);
	int nr, r, status = 0;

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0'; /* so a backslash before the newline is at the end */
	r = shell_split(text, &words, &nr, err, sizeof(err));
	free(text);
	if (r < 0) {
		fprintf(ctx->err, "error: %s\n", err);
		return 1;
	}
	if (nr > 0) {
		status = cli_dispatch(&line_ctx, nr, words);
		ctx->quit = line_ctx.quit;
	}
	shell_words_free(words);
	fflush(ctx->out);
	fflush(ctx->err);
	return status;
}

void
shell_editor_set(const struct shell_editor *editor)
{
	shell_editor = editor;
}

/*
 * One plain line from in: 1 with it in *line, 0 at end of input, -EINTR when a caught SIGINT
 * interrupted the wait (a terminal without an editor: the line typed so far is the
 * terminal's, which drops it).
 */
static int
shell_line_read_plain(struct cli_ctx *ctx, FILE *in, bool tty, char **line, size_t *cap)
{
	if (tty) {
		fputs(SHELL_PROMPT, ctx->out);
		fflush(ctx->out);
	}
	cmd_signal_caught(true);
	if (getline(line, cap, in) >= 0)
		return 1;
	if (tty && ferror(in) && cmd_signal_caught(true) == SIGINT) {
		clearerr(in);
		fputc('\n', ctx->out);
		return -EINTR;
	}
	if (tty)
		fputc('\n', ctx->out); /* after the ^D */
	return 0;
}

int
shell_run(struct cli_ctx *ctx, FILE *in)
{
	static const int signals[] = {SIGINT, 0};
	bool tty = isatty(fileno(in));
	struct cmd_signals sigs = {0};
	void *editor = NULL;
	size_t cap = 0;
	char *line = NULL;
	int r;

	if (tty) {
		fprintf(ctx->out, "%s %s: 'help' lists the commands, 'quit' leaves.\n\n", ctx->prog,
		        vnumad_version());
		if (shell_editor != NULL)
			editor = shell_editor->open(ctx, in);
		cmd_signals_catch(&sigs, signals);
	}
	while (!ctx->quit) {
		if (editor != NULL)
			r = shell_editor->read(editor, &line);
		else
			r = shell_line_read_plain(ctx, in, tty, &line, &cap);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		shell_line_run(ctx, line);
		if (tty && cmd_signal_caught(true) == SIGINT)
			fputc('\n', ctx->out); /* the prompt on a line of its own, after the ^C */
		if (editor != NULL) {
			free(line);
			line = NULL;
		}
	}
	cmd_signals_restore(&sigs);
	if (editor != NULL)
		shell_editor->close(editor);
	free(line);
	return 0;
}

/*
 * shell_edit.c - libedit for the interactive shell (shell_edit.h).
 *
 * Why libedit's native histedit API and not its readline emulation: the native API keeps all
 * state in one EditLine and one History object that this module owns (opened and closed with
 * the shell, no library globals), it lets us supply the function that reads each character
 * (EL_GETCFN), which is how Ctrl-C is told apart from end of input, and it saves history to a
 * FILE we opened ourselves, which is how the file gets mode 0600.  The readline emulation
 * would need its globals, its own signal handling and a second pass to fix the file's mode.
 */
#include "agent/shell_edit.h"

#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "agent/client.h"
#include "agent/cmd_common.h"
#include "agent/shell_complete.h"
#include "policy/util.h"

#define SHELL_EDIT_COMPLETE_FN  "vnumactl-complete" /* the name Tab is bound to */
#define SHELL_EDIT_COMPLETE_WFN L"vnumactl-complete"
#define SHELL_EDIT_COLS         80 /* candidate list width off a terminal */

struct shell_edit {
	struct cli_ctx *ctx;
	EditLine *el;
	History *hist;
	int in_fd;
	mbstate_t mb;    /* a multibyte character read so far */
	char *hist_path; /* NULL: no history file */
	bool hist_warned;
	char **vms; /* names from the last list, for completion */
	int nr_vms;
	double vms_at_s; /* when they were asked for; < 0: never */
};

static double
shell_edit_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the history file ------------------------------------------------------------------ */

/* $VNUMACTL_HISTFILE, else under $XDG_STATE_HOME or ~/.local/state; NULL for none. */
static char *
shell_edit_hist_path(void)
{
	const char *env = getenv("VNUMACTL_HISTFILE"), *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	struct util_buf path = {0};

	if (env != NULL)
		return env[0] != '\0' ? xstrdup(env) : NULL;
	if (state != NULL && state[0] == '/')
		util_buf_printf(&path, "%s/vnumactl/history", state);
	else if (home != NULL && home[0] == '/')
		util_buf_printf(&path, "%s/.local/state/vnumactl/history", home);
	return path.data;
}

__attribute__((format(printf, 3, 4))) static void
shell_edit_hist_warn(struct shell_edit *e, int r, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (e->hist_warned)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(e->ctx->err, "%s: warning: %s %s: %s (history not saved)\n", e->ctx->prog, what,
	        e->hist_path, strerror(-r));
	e->hist_warned = true;
}

/* Make the directories above path (mode 0700 for the ones made).  0 or -errno. */
static int
shell_edit_hist_mkdirs(const char *path)
{
	char *dir = xstrdup(path);
	int r = 0;

	for (char *s = strchr(dir + 1, '/'); s != NULL; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*s = '/';
	}
	free(dir);
	return r;
}

static void
shell_edit_hist_load(struct shell_edit *e)
{
	HistEvent ev;
	int fd;

	if (e->hist_path == NULL)
		return;
	fd = open(e->hist_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			shell_edit_hist_warn(e, -errno, "cannot read");
		return;
	}
	close(fd);
	if (history(e->hist, &ev, H_LOAD, e->hist_path) < 0)
		shell_edit_hist_warn(e, -EINVAL, "cannot load");
}

/* Write the whole history over the file, mode 0600 whatever the umask or an older mode. */
static void
shell_edit_hist_save(struct shell_edit *e)
{
	HistEvent ev;
	FILE *f = NULL;
	int fd, r;

	if (e->hist_path == NULL || e->hist_warned)
		return;
	r = shell_edit_hist_mkdirs(e->hist_path);
	if (r < 0)
		goto out;
	fd = open(e->hist_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fchmod(fd, 0600) < 0 || (f = fdopen(fd, "w")) == NULL) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if (history(e->hist, &ev, H_SAVE_FP, f) < 0)
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
out:
	if (r < 0)
		shell_edit_hist_warn(e, r, "cannot write");
}

/* ---- VM names for completion ----------------------------------------------------------- */

static void
shell_edit_vms_clear(struct shell_edit *e)
{
	for (int i = 0; i < e->nr_vms; i++)
		free(e->vms[i]);
	free(e->vms);
	e->vms = NULL;
	e->nr_vms = 0;
}

/* Ask the daemon for its VMs, quietly: any failure leaves no names. */
static void
shell_edit_vms_fetch(struct shell_edit *e)
{
	struct proto_reply rep = {0};
	struct json_object *vms;
	struct client *c = NULL;
	char err[256];
	size_t cap = 0;

	shell_edit_vms_clear(e);
	if (client_open(e->ctx->socket_path, &c, err, sizeof(err)) < 0)
		return;
	if (client_call_timeout(c, "list", NULL, SHELL_EDIT_VMS_TIMEOUT_MS, &rep, err,
	                        sizeof(err)) == 0 &&
	    rep.status == PROTO_OK && (vms = cmd_json_array(rep.data, "vms")) != NULL) {
		for (size_t i = 0; i < json_object_array_length(vms); i++) {
			const char *name =
			    cmd_json_string(json_object_array_get_idx(vms, i), "name", NULL);

			if (name == NULL)
				continue;
			util_array_reserve((void **)&e->vms, &cap, (size_t)e->nr_vms + 1,
			                   sizeof(*e->vms));
			e->vms[e->nr_vms++] = xstrdup(name);
		}
	}
	proto_reply_free(&rep);
	client_close(c);
}

/* shell_vms_fn: the cached names, fetched again when older than SHELL_EDIT_VMS_CACHE_S. */
static int
shell_edit_vms(void *arg, const char *const **names)
{
	struct shell_edit *e = arg;
	double now_s = shell_edit_now_s();

	if (e->vms_at_s < 0.0 || now_s - e->vms_at_s >= SHELL_EDIT_VMS_CACHE_S) {
		shell_edit_vms_fetch(e);
		e->vms_at_s = shell_edit_now_s(); /* a failure, too: Tab again does not wait */
	}
	*names = (const char *const *)e->vms;
	return e->nr_vms;
}

/* ---- Tab ------------------------------------------------------------------------------- */

/* The candidates in columns under the line, as a shell lists them. */
static void
shell_edit_matches_print(struct shell_edit *e, const struct shell_matches *m)
{
	struct winsize ws;
	int width = 0, cols = SHELL_EDIT_COLS, per_line;

	if (ioctl(fileno(e->ctx->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		cols = ws.ws_col;
	for (int i = 0; i < m->nr; i++)
		if ((int)strlen(m->v[i]) > width)
			width = (int)strlen(m->v[i]);
	width += 2;
	per_line = cols / width > 0 ? cols / width : 1;
	fputc('\n', e->ctx->out);
	for (int i = 0; i < m->nr; i++) {
		bool last = (i + 1) % per_line == 0 || i + 1 == m->nr;

		if (last)
			fprintf(e->ctx->out, "%s\n", m->v[i]);
		else
			fprintf(e->ctx->out, "%-*s", width, m->v[i]);
	}
	fflush(e->ctx->out);
}

/*
 * Bound to Tab: one candidate is put in whole with a blank after it; several put in what
 * they share, and when that adds nothing they are listed and the line is drawn again.
 */
static unsigned char
shell_edit_complete(EditLine *el, int ch)
{
	struct shell_edit *e = NULL;
	const LineInfo *li = el_line(el);
	size_t point = (size_t)(li->cursor - li->buffer), typed, common;
	struct shell_matches m;
	unsigned char cc = CC_REFRESH;
	char *text = xmalloc(point + 1);

	(void)ch;
	el_get(el, EL_CLIENTDATA, &e);
	memcpy(text, li->buffer, point);
	text[point] = '\0';
	if (shell_complete(e->ctx->table, text, point, shell_edit_vms, e, &m) == 0) {
		cc = CC_REFRESH_BEEP;
		goto out;
	}
	typed = point - m.start;
	common = shell_matches_common_len(&m);
	if (m.nr == 1) {
		el_insertstr(el, m.v[0] + typed);
		el_insertstr(el, " ");
	} else if (common > typed) {
		char cut = m.v[0][common];

		m.v[0][common] = '\0';
		el_insertstr(el, m.v[0] + typed);
		m.v[0][common] = cut;
	} else {
		shell_edit_matches_print(e, &m);
		cc = CC_REDISPLAY;
	}
out:
	shell_matches_free(&m);
	free(text);
	return cc;
}

/* ---- reading --------------------------------------------------------------------------- */

static char *
shell_edit_prompt(EditLine *el)
{
	(void)el;
	return SHELL_PROMPT;
}

/*
 * EL_GETCFN: one character from the terminal.  1 with it, 0 at end of input, -1 on an error
 * or when a caught SIGINT interrupted the read (Ctrl-C: el_gets then gives up the line).
 * Other signals that interrupt are waited through.
 */
static int
shell_edit_getc(EditLine *el, wchar_t *wc)
{
	struct shell_edit *e = NULL;
	char byte;

	el_get(el, EL_CLIENTDATA, &e);
	for (;;) {
		ssize_t n;
		size_t got;

		if (cmd_signal_caught(false) == SIGINT)
			return -1; /* came while Tab waited for the daemon: not at a read */
		n = read(e->in_fd, &byte, 1);
		if (n == 0)
			return 0;
		if (n < 0 && errno == EINTR && cmd_signal_caught(false) != SIGINT)
			continue;
		if (n < 0)
			return -1;
		got = mbrtowc(wc, &byte, 1, &e->mb);
		if (got == (size_t)-2)
			continue; /* more bytes of this character to come */
		if (got == (size_t)-1) {
			memset(&e->mb, 0, sizeof(e->mb));
			*wc = (wchar_t)(unsigned char)byte; /* not in the locale: as it is */
		}
		return 1;
	}
}

static int
shell_edit_read(void *editor, char **line)
{
	struct shell_edit *e = editor;
	const char *text;
	HistEvent ev;
	size_t len;
	int count = 0;

	*line = NULL;
	cmd_signal_caught(true);
	memset(&e->mb, 0, sizeof(e->mb));
	text = el_gets(e->el, &count);
	if (cmd_signal_caught(true) == SIGINT) {
		fputs("^C\n", e->ctx->out); /* what was typed stays on screen, dropped */
		fflush(e->ctx->out);
		return -EINTR;
	}
	if (text == NULL || count <= 0) {
		fputc('\n', e->ctx->out); /* after the ^D */
		return 0;
	}
	len = strcspn(text, "\r\n");
	*line = strndup(text, len);
	if (*line == NULL)
		abort();
	while (len > 0 && ((*line)[len - 1] == ' ' || (*line)[len - 1] == '\t'))
		len--; /* the blank Tab put after a word: not worth keeping */
	if (len > 0) {
		char cut = (*line)[len];

		(*line)[len] = '\0';
		history(e->hist, &ev, H_ENTER, *line);
		(*line)[len] = cut;
		shell_edit_hist_save(e);
	}
	return 1;
}

/* ---- open and close -------------------------------------------------------------------- */

static void
shell_edit_close(void *editor)
{
	struct shell_edit *e = editor;

	if (e == NULL)
		return;
	el_end(e->el);
	history_end(e->hist);
	shell_edit_vms_clear(e);
	free(e->hist_path);
	free(e);
}

static void *
shell_edit_open(struct cli_ctx *ctx, FILE *in)
{
	struct shell_edit *e = xcalloc(1, sizeof(*e));
	HistEvent ev;

	e->ctx = ctx;
	e->in_fd = fileno(in);
	e->vms_at_s = -1.0;
	e->el = el_init(ctx->prog, in, ctx->out, ctx->err);
	e->hist = history_init();
	if (e->el == NULL || e->hist == NULL) {
		if (e->el != NULL)
			el_end(e->el);
		if (e->hist != NULL)
			history_end(e->hist);
		free(e);
		return NULL;
	}
	history(e->hist, &ev, H_SETSIZE, SHELL_EDIT_HISTORY_MAX);
	history(e->hist, &ev, H_SETUNIQUE, 1);
	el_set(e->el, EL_CLIENTDATA, e);
	el_set(e->el, EL_EDITOR, "emacs");
	el_set(e->el, EL_PROMPT, shell_edit_prompt);
	el_set(e->el, EL_HIST, history, e->hist);
	el_set(e->el, EL_GETCFN, shell_edit_getc);
	/*
	 * The wide call: the narrow el_set(EL_ADDFN) copies the name and help with wcsdup and
	 * libedit never frees the copies (LeakSanitizer: 204 bytes); these stay static.
	 */
	el_wset(e->el, EL_ADDFN, SHELL_EDIT_COMPLETE_WFN, L"complete a command, option or VM",
	        shell_edit_complete);
	el_set(e->el, EL_BIND, "^I", SHELL_EDIT_COMPLETE_FN, NULL);
	el_set(e->el, EL_BIND, "^R", "em-inc-search-prev", NULL); /* as in bash */
	el_source(e->el, NULL); /* the user's ~/.editrc, if any, may rebind keys */
	e->hist_path = shell_edit_hist_path();
	shell_edit_hist_load(e);
	return e;
}

const struct shell_editor shell_edit_libedit = {
    .open = shell_edit_open,
    .read = shell_edit_read,
    .close = shell_edit_close,
};

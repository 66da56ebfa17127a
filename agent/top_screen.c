/*
 * top_screen.c - `vnumactl top` on a terminal, with ncurses: fetch a frame every interval, lay
 * it out for the window's current size (top_layout.c), draw it, and take keys in between.
 *
 * Built into vnumactl only (not into the vnagent library), so that neither the daemon nor the
 * unit tests link ncurses; main_vnumactl.c hands top_screen_run to cmd_top_screen_set.
 *
 * The terminal is restored (endwin) on every way out: 'q', Ctrl-C, Ctrl-D, SIGINT, SIGTERM and
 * SIGHUP (caught before ncurses starts, so that a blocked getch returns), the terminal gone
 * (getch failing at once), the daemon going away and a failed fetch.  A resized window (SIGWINCH,
 * which ncurses turns into KEY_RESIZE) is drawn again at its new size at once, from the frame
 * already fetched.
 */
#include "agent/top_screen.h"

#include <curses.h>
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client.h"
#include "agent/cmd_common.h"
#include "agent/cmd_top.h"
#include "agent/top_layout.h"

#define TOP_SCREEN_ERR_MAX 1024
#define TOP_SCREEN_CTRL_C  3 /* the byte, should the terminal pass it rather than signal */
#define TOP_SCREEN_CTRL_D  4
#define TOP_SCREEN_CTRL_L  12 /* repaint the whole screen */
/* Narrower windows stay blank: drawing in one column, ncurses 6.4 read outside its line
 * buffers (valgrind, tmux resize-window -x 1). */
#define TOP_SCREEN_MIN_COLS 2
/* A getch timeout that returns this much earlier than asked is no timeout (see below). */
#define TOP_SCREEN_SLACK_MS 20

struct top_screen {
	SCREEN *scr;
	struct top_view view;
	struct top_layout lay;
	struct json_object *frame;
	int64_t next_fetch_ms; /* monotonic time of the next fetch */
};

/* A curses key as the view knows it. */
static int
top_screen_key(int key)
{
	switch (key) {
	case KEY_UP:
		return TOP_KEY_UP;
	case KEY_DOWN:
		return TOP_KEY_DOWN;
	case KEY_PPAGE:
		return TOP_KEY_PGUP;
	case KEY_NPAGE:
		return TOP_KEY_PGDN;
	case KEY_HOME:
		return TOP_KEY_HOME;
	case KEY_END:
		return TOP_KEY_END;
	case TOP_SCREEN_CTRL_C:
	case TOP_SCREEN_CTRL_D:
		return 'q';
	default:
		return key;
	}
}

/* The current frame laid out for the window as it is now, and drawn. */
static void
top_screen_draw(struct top_screen *s)
{
	const char *line;
	int rows, cols;

	getmaxyx(stdscr, rows, cols);
	top_layout_render(&s->view, s->frame, rows, cols, &s->lay);
	erase();
	if (cols < TOP_SCREEN_MIN_COLS) { /* nothing to read there, and ncurses misreads it */
		refresh();
		return;
	}
	line = s->lay.text.data != NULL ? s->lay.text.data : "";
	for (int row = 0; row < s->lay.nr_lines && *line != '\0'; row++) {
		size_t len = strcspn(line, "\n");
		int attr = row == 0 ? A_REVERSE : row == s->lay.table_line ? A_BOLD : A_NORMAL;

		attron(attr);
		mvaddnstr(row, 0, line, (int)len);
		attroff(attr);
		line += len + (line[len] == '\n');
	}
	refresh();
}

/* Fetch a new frame when one is due (never while paused).  0 or -errno with err. */
static int
top_screen_refresh(struct top_screen *s, struct client *c, int interval_ms, char *err,
                   size_t errlen)
{
	struct json_object *frame = NULL;
	int r;

	if (s->frame != NULL && (s->view.paused || client_now_ms() < s->next_fetch_ms))
		return 0;
	r = cmd_top_fetch(c, &frame, err, errlen);
	if (r < 0)
		return r;
	json_object_put(s->frame);
	s->frame = frame;
	s->next_fetch_ms = client_now_ms() + interval_ms;
	return 0;
}

/*
 * Whether getch's ERR, after a wait of wait_ms (-1: forever) asked at asked_ms, means that the
 * terminal is gone (end of file, EIO) rather than that the time is up: it came too early.
 */
static bool
top_screen_input_gone(int64_t wait_ms, int64_t asked_ms)
{
	if (wait_ms < 0)
		return true;
	return client_now_ms() - asked_ms + TOP_SCREEN_SLACK_MS < wait_ms;
}

/* Until the user quits (0) or a fetch fails (-errno with err). */
static int
top_screen_loop(struct top_screen *s, struct client *c, int interval_ms, char *err, size_t errlen)
{
	for (;;) {
		int64_t wait_ms, asked_ms;
		int r = top_screen_refresh(s, c, interval_ms, err, errlen), key;

		if (r < 0)
			return r;
		if (cmd_signal_caught(true) != 0)
			return 0;
		top_screen_draw(s);
		wait_ms = s->view.paused ? -1 : s->next_fetch_ms - client_now_ms();
		wait_ms = wait_ms < -1 ? 0 : wait_ms;
		asked_ms = client_now_ms();
		timeout((int)wait_ms);
		key = getch();
		if (cmd_signal_caught(true) != 0)
			return 0;
		if (key == ERR && top_screen_input_gone(wait_ms, asked_ms))
			return 0;
		if (key == ERR || key == KEY_RESIZE)
			continue; /* time for a frame, or a new size to draw at */
		if (key == TOP_SCREEN_CTRL_L)
			clearok(curscr, TRUE);
		if (top_view_key(&s->view, top_screen_key(key), &s->lay) == TOP_ACTION_QUIT)
			return 0;
	}
}

int
top_screen_run(struct cli_ctx *ctx, struct client *c, double interval_s)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP, 0};
	struct top_screen s;
	struct cmd_signals sigs;
	char err[TOP_SCREEN_ERR_MAX] = "";
	const char *term = getenv("TERM");
	int r;

	memset(&s, 0, sizeof(s));
	top_view_init(&s.view);
	cmd_signals_catch(&sigs, signals);
	s.scr = newterm(NULL, ctx->out, stdin);
	if (s.scr == NULL) {
		r = cmd_fail(ctx, -ENOTTY, "cannot drive this terminal (TERM=%s); try --once",
		             term != NULL ? term : "");
		goto out;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	curs_set(0);
	r = top_screen_loop(&s, c, (int)(interval_s * 1000.0), err, sizeof(err));
	endwin();
	delscreen(s.scr);
out:
	cmd_signals_restore(&sigs);
	json_object_put(s.frame);
	top_layout_free(&s.lay);
	if (r < 0 && s.scr != NULL)
		return cmd_fail(ctx, r, "lost vnumad: %s", err);
	return r;
}

/*
 * cmd_top.c - the live view: fetch a frame (status, nodeinfo, list, then vminfo per VM over
 * one connection), render it, draw it over the last one, wait for a key or the interval.
 */
#include "agent/cmd_top.h"
#include "agent/cmd_vm.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "agent/client.h"
#include "agent/cmd_common.h"
#include "agent/proto.h"

#define CMD_ERR_MAX       1024
#define CMD_TOP_ROWS      24 /* terminal size when the terminal will not say */
#define CMD_TOP_COLS      80
#define CMD_TOP_LABEL_MAX 16 /* bytes of a per-node column header ("gib63") */

/* Escapes: alternate screen on + cursor hidden; and back. */
#define CMD_TOP_SCREEN_ENTER "\033[?1049h\033[?25l"
#define CMD_TOP_SCREEN_LEAVE "\033[?25h\033[?1049l"

/* ---- rendering -------------------------------------------------------------------------- */

static const struct cmd_column cmd_top_vm_columns[] = {
    {"id", "id", CMD_CELL_TEXT, 0, true},
    {"name", "name", CMD_CELL_TEXT, 0, false},
    {"state", "state", CMD_CELL_TEXT, 0, false},
    {"memory_locality", "mem_local", CMD_CELL_FIXED, 2, true},
    {"strength", "strength", CMD_CELL_TEXT, 0, true},
};
#define CMD_TOP_NR_VM_COLUMNS CMD_NR(cmd_top_vm_columns)

static void
cmd_top_header_render(struct util_buf *buf, struct json_object *status, bool live)
{
	struct json_object *paused = cmd_json_get(status, "paused");

	util_buf_printf(buf, "vnumad %s  backend %s  host time %.1f s  rounds %lld  %s%s\n\n",
	                cmd_json_string(status, "version", "?"),
	                cmd_json_string(status, "backend", "?"),
	                cmd_json_double(status, "host_time_s", 0.0),
	                (long long)cmd_json_int(status, "rounds", 0),
	                paused != NULL && json_object_get_boolean(paused) ? "PAUSED" : "running",
	                live ? "  ('q' quits)" : "");
}

/* The VM row of one vminfo reply: its fixed columns, then gibN and vcpuN per node. */
static struct json_object *
cmd_top_vm_record(struct json_object *vminfo, int nr_nodes)
{
	struct json_object *rec = cmd_args_new(),
	                   *resident = cmd_json_array(vminfo, "resident_mib");
	struct json_object *vcpus = cmd_json_array(vminfo, "vcpu");
	size_t nr_vcpus = vcpus != NULL ? json_object_array_length(vcpus) : 0;
	char key[CMD_TOP_LABEL_MAX];

	for (int c = 0; c < CMD_TOP_NR_VM_COLUMNS; c++) {
		struct json_object *v = cmd_json_get(vminfo, cmd_top_vm_columns[c].key);

		json_object_object_add(rec, cmd_top_vm_columns[c].key, json_object_get(v));
	}
	for (int n = 0; n < nr_nodes; n++) {
		struct json_object *mib =
		    resident != NULL ? json_object_array_get_idx(resident, (size_t)n) : NULL;
		int64_t count = 0;

		for (size_t i = 0; i < nr_vcpus; i++)
			count += cmd_json_int(json_object_array_get_idx(vcpus, i), "node", -1) == n;
		snprintf(key, sizeof(key), "gib%d", n);
		json_object_object_add(rec, key, json_object_get(mib));
		snprintf(key, sizeof(key), "vcpu%d", n);
		cmd_args_int(rec, key, count);
	}
	return rec;
}

/* The VM table: fixed columns, then memory (GiB) and vCPUs on each node. */
static void
cmd_top_vms_render(struct util_buf *buf, struct json_object *vms, int nr_nodes)
{
	int nr_cols = CMD_TOP_NR_VM_COLUMNS + 2 * nr_nodes;
	struct cmd_column *cols = xcalloc((size_t)nr_cols, sizeof(*cols));
	char(*labels)[CMD_TOP_LABEL_MAX] = xcalloc((size_t)nr_cols, sizeof(*labels));
	struct json_object *rows = json_object_new_array();
	size_t nr_vms = vms != NULL ? json_object_array_length(vms) : 0;

	memcpy(cols, cmd_top_vm_columns, sizeof(cmd_top_vm_columns));
	for (int n = 0; n < 2 * nr_nodes; n++) {
		struct cmd_column *col = &cols[CMD_TOP_NR_VM_COLUMNS + n];

		snprintf(labels[n], sizeof(labels[n]), "%s%d", n < nr_nodes ? "gib" : "vcpu",
		         n % nr_nodes);
		col->key = col->header = labels[n];
		col->cell = n < nr_nodes ? CMD_CELL_GIB : CMD_CELL_TEXT;
		col->decimals = 1;
		col->numeric = true;
	}
	for (size_t i = 0; i < nr_vms; i++)
		json_object_array_add(
		    rows, cmd_top_vm_record(json_object_array_get_idx(vms, i), nr_nodes));
	cmd_table_render(buf, cols, nr_cols, rows);
	json_object_put(rows);
	free(labels);
	free(cols);
}

void
cmd_top_render(struct util_buf *buf, struct json_object *frame, bool live)
{
	struct json_object *nodes = cmd_json_array(frame, "nodes");
	int nr_nodes = nodes != NULL ? (int)json_object_array_length(nodes) : 0;

	if (nr_nodes > UTIL_MAX_NODES)
		nr_nodes = UTIL_MAX_NODES;
	cmd_top_header_render(buf, cmd_json_get(frame, "status"), live);
	cmd_table_render(buf, cmd_node_columns, CMD_NODE_COLUMNS - 1, nodes);
	util_buf_printf(buf, "\n");
	cmd_top_vms_render(buf, cmd_json_array(frame, "vms"), nr_nodes);
}

void
cmd_top_fit(struct util_buf *buf, const char *text, int rows, int cols)
{
	const char *line = text;

	util_buf_printf(buf, "\033[H");
	for (int row = 0; row < rows && *line != '\0'; row++) {
		size_t len = strcspn(line, "\n");
		int shown = len > (size_t)cols ? cols : (int)len;

		util_buf_printf(buf, "%.*s\033[K%s", shown, line, row + 1 < rows ? "\n" : "");
		line += len;
		if (*line == '\n')
			line++;
	}
	util_buf_printf(buf, "\033[J");
}

/* ---- fetching --------------------------------------------------------------------------- */

/* One call whose failure (of any kind) is a message in err.  0 or -errno. */
static int
cmd_top_call(struct client *c, const char *cmd, struct json_object *args, struct json_object **data,
             char *err, size_t errlen)
{
	int status = PROTO_OK;
	int r = cmd_call_status(c, cmd, args, data, &status, err, errlen);

	if (r == 0 && status != PROTO_OK) {
		json_object_put(*data);
		*data = NULL;
		r = cmd_status_errno(status);
	}
	return r;
}

/* vminfo of every listed VM into vms; a VM gone since the list is left out. */
static int
cmd_top_fetch_vms(struct client *c, struct json_object *list, struct json_object *vms, char *err,
                  size_t errlen)
{
	struct json_object *rows = cmd_json_array(list, "vms");
	size_t nr = rows != NULL ? json_object_array_length(rows) : 0;

	for (size_t i = 0; i < nr; i++) {
		const char *name = cmd_json_string(json_object_array_get_idx(rows, i), "name", "");
		struct json_object *args = cmd_args_vm(name), *info = NULL;
		int r = cmd_top_call(c, "vminfo", args, &info, err, errlen);

		json_object_put(args);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		json_object_array_add(vms, info);
	}
	return 0;
}

/* A frame's data {"status", "nodes", "vms"}; 0 or -errno with a message in err. */
static int
cmd_top_fetch(struct client *c, struct json_object **frame, char *err, size_t errlen)
{
	struct json_object *status = NULL, *nodeinfo = NULL, *list = NULL;
	struct json_object *vms = json_object_new_array();
	int r;

	*frame = NULL;
	r = cmd_top_call(c, "status", NULL, &status, err, errlen);
	if (r == 0)
		r = cmd_top_call(c, "nodeinfo", NULL, &nodeinfo, err, errlen);
	if (r == 0)
		r = cmd_top_call(c, "list", NULL, &list, err, errlen);
	if (r == 0)
		r = cmd_top_fetch_vms(c, list, vms, err, errlen);
	if (r == 0) {
		*frame = cmd_args_new();
		json_object_object_add(*frame, "status", json_object_get(status));
		json_object_object_add(*frame, "nodes",
		                       json_object_get(cmd_json_array(nodeinfo, "nodes")));
		json_object_object_add(*frame, "vms", json_object_get(vms));
	}
	json_object_put(status);
	json_object_put(nodeinfo);
	json_object_put(list);
	json_object_put(vms);
	return r;
}

/* ---- the terminal ----------------------------------------------------------------------- */

struct cmd_top_term {
	int in_fd;
	bool raw; /* saved holds the mode to restore */
	struct termios saved;
};

/* Raw keyboard (no line buffering, no echo; signals stay) and the alternate screen. */
static void
cmd_top_term_enter(struct cli_ctx *ctx, struct cmd_top_term *t)
{
	struct termios raw;

	t->in_fd = STDIN_FILENO;
	t->raw = false;
	if (isatty(t->in_fd) && tcgetattr(t->in_fd, &t->saved) == 0) {
		raw = t->saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		t->raw = tcsetattr(t->in_fd, TCSANOW, &raw) == 0;
	}
	fputs(CMD_TOP_SCREEN_ENTER, ctx->out);
	fflush(ctx->out);
}

static void
cmd_top_term_leave(struct cli_ctx *ctx, struct cmd_top_term *t)
{
	fputs(CMD_TOP_SCREEN_LEAVE, ctx->out);
	fflush(ctx->out);
	if (t->raw)
		tcsetattr(t->in_fd, TCSANOW, &t->saved);
	t->raw = false;
}

static void
cmd_top_term_size(struct cli_ctx *ctx, int *rows, int *cols)
{
	struct winsize ws;

	*rows = CMD_TOP_ROWS;
	*cols = CMD_TOP_COLS;
	if (ioctl(fileno(ctx->out), TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/*
 * Wait up to timeout_ms for a key.  Returns 1 to quit ('q', EOF, a terminal error, a quitting
 * signal), 0 to draw the next frame (time is up, another key, a resized window).
 */
static int
cmd_top_wait(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char keys[64];
	ssize_t n;

	if (poll(&p, 1, timeout_ms) < 0) {
		bool eintr = errno == EINTR;
		int signo = cmd_signal_caught(true);

		return eintr && (signo == 0 || signo == SIGWINCH) ? 0 : 1;
	}
	if (p.revents == 0)
		return 0;
	n = read(fd, keys, sizeof(keys));
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : 1; /* EIO: the terminal is gone */
	if (n == 0)
		return 1; /* EOF */
	return memchr(keys, 'q', (size_t)n) != NULL || memchr(keys, 'Q', (size_t)n) != NULL ||
	       memchr(keys, 4, (size_t)n) != NULL; /* Ctrl-D, which raw mode passes as a byte */
}

/* Draw one frame over the last.  0, or -EIO when the terminal is gone. */
static int
cmd_top_draw(struct cli_ctx *ctx, struct json_object *frame)
{
	struct util_buf text = {0}, screen = {0};
	int rows, cols;

	cmd_top_render(&text, frame, true);
	cmd_top_term_size(ctx, &rows, &cols);
	cmd_top_fit(&screen, text.data, rows, cols);
	free(text.data);
	if (cmd_output(ctx, &screen) < 0 || fflush(ctx->out) != 0)
		return -EIO;
	return 0;
}

/* The live loop; returns 0 when the user quit, -errno (with err) when the daemon went away. */
static int
cmd_top_loop(struct cli_ctx *ctx, struct client *c, double interval_s, char *err, size_t errlen)
{
	for (;;) {
		struct json_object *frame = NULL;
		int r = cmd_top_fetch(c, &frame, err, errlen), signo;

		if (r < 0)
			return r;
		r = cmd_top_draw(ctx, frame);
		json_object_put(frame);
		if (r < 0)
			return 0;                /* nobody is watching any more */
		signo = cmd_signal_caught(true); /* one that came while fetching or drawing */
		if (signo == SIGWINCH)
			continue;
		if (signo != 0 || cmd_top_wait(STDIN_FILENO, (int)(interval_s * 1000.0)) != 0)
			return 0;
	}
}

static int
cmd_top_live(struct cli_ctx *ctx, struct client *c, double interval_s)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH, 0};
	struct cmd_top_term term;
	struct cmd_signals sigs;
	char err[CMD_ERR_MAX] = "";
	int r;

	cmd_signals_catch(&sigs, signals);
	cmd_top_term_enter(ctx, &term);
	r = cmd_top_loop(ctx, c, interval_s, err, sizeof(err));
	cmd_top_term_leave(ctx, &term);
	cmd_signals_restore(&sigs);
	if (r < 0)
		return cmd_fail(ctx, r, "lost vnumad: %s", err);
	return 0;
}

/* One frame, no escapes: --once, --json, or stdout not a terminal. */
static int
cmd_top_once(struct cli_ctx *ctx, struct client *c)
{
	struct json_object *frame = NULL;
	struct util_buf buf = {0};
	char err[CMD_ERR_MAX] = "";
	int r = cmd_top_fetch(c, &frame, err, sizeof(err));

	if (r < 0)
		return cmd_fail(ctx, r, "%s", err);
	if (ctx->json)
		cmd_json_render(&buf, frame);
	else
		cmd_top_render(&buf, frame, false);
	json_object_put(frame);
	return cmd_output(ctx, &buf);
}

int
cmd_top(struct cli_ctx *ctx, const struct cli_args *args)
{
	const char *interval = cli_args_get(args, "interval");
	double interval_s = CMD_TOP_INTERVAL_S;
	struct client *c = NULL;
	char err[CMD_ERR_MAX];
	int r;

	if (interval != NULL &&
	    cmd_seconds_parse(interval, "--interval", CMD_TOP_MIN_INTERVAL_S,
	                      CMD_TOP_MAX_INTERVAL_S, &interval_s, err, sizeof(err)) < 0)
		return cmd_fail(ctx, -EINVAL, "%s", err);
	r = cmd_connect(ctx, &c);
	if (r < 0)
		return r;
	if (cli_args_has(args, "once") || ctx->json || !isatty(fileno(ctx->out)))
		r = cmd_top_once(ctx, c);
	else
		r = cmd_top_live(ctx, c, interval_s);
	client_close(c);
	return r;
}

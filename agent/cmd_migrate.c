/*
 * cmd_migrate.c - migrate a whole VM to one node and wait for its memory to arrive.
 *
 * vnumad moves the memory at the VM's own rate in the background; this command only asks and
 * then watches vminfo's resident_mib.  Interrupting it (Ctrl-C) or a timeout stops the
 * waiting, not the migration.
 */
#include "agent/cmd_migrate.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/client.h"
#include "agent/cmd_common.h"
#include "agent/proto.h"

#define CMD_ERR_MAX         1024
#define CMD_MIGRATE_MAX_S   86400.0 /* longest --timeout accepted: a day */
#define CMD_MIGRATE_MAX_BAR 128     /* bytes of one progress line */

int
cmd_migrate_progress(struct json_object *vminfo, int node, double *on_node_mib, double *total_mib)
{
	struct json_object *resident = cmd_json_array(vminfo, "resident_mib");
	size_t nr = resident != NULL ? json_object_array_length(resident) : 0;

	if (node < 0 || (size_t)node >= nr)
		return -EINVAL;
	*total_mib = 0.0;
	for (size_t n = 0; n < nr; n++)
		*total_mib += json_object_get_double(json_object_array_get_idx(resident, n));
	*on_node_mib = json_object_get_double(json_object_array_get_idx(resident, (size_t)node));
	return 0;
}

bool
cmd_migrate_done(double on_node_mib, double total_mib)
{
	return total_mib <= 0.0 || on_node_mib >= CMD_MIGRATE_DONE_SHARE * total_mib;
}

void
cmd_migrate_bar_render(struct util_buf *buf, double on_node_mib, double total_mib, int node)
{
	double share = total_mib > 0.0 ? on_node_mib / total_mib : 1.0;
	long fill;

	share = share < 0.0 ? 0.0 : share > 1.0 ? 1.0 : share;
	fill = lround(share * CMD_MIGRATE_BAR_WIDTH);
	util_buf_printf(buf, "[");
	for (long i = 0; i < CMD_MIGRATE_BAR_WIDTH; i++)
		util_buf_printf(buf, "%c", i < fill ? '#' : '-');
	/* Floor, so the bar never claims 100 % before every page is there. */
	util_buf_printf(buf, "] %3d%%  %.1f/%.1f GiB on node %d", (int)floor(share * 100.0),
	                on_node_mib / 1024.0, total_mib / 1024.0, node);
}

static double
cmd_monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What the waiting loop is following. */
struct cmd_migrate_wait {
	const char *vm;
	int node;
	double timeout_s; /* 0: no limit */
	bool bar;         /* a progress bar on a terminal */
	bool lines;       /* else progress lines (not with --json) */
	double on_node_mib, total_mib;
	double line_s, line_share; /* the last progress line: when (< 0: none yet), how far */
};

bool
cmd_migrate_line_due(double last_s, double last_share, double now_s, double share)
{
	if (last_s < 0)
		return true;
	return floor(share * 10.0) > floor(last_share * 10.0) ||
	       now_s - last_s >= CMD_MIGRATE_LINE_S;
}

/* A progress line off a terminal, when one is due. */
static void
cmd_migrate_line_print(struct cli_ctx *ctx, struct cmd_migrate_wait *w)
{
	double now_s = cmd_monotonic_s();
	double share = w->total_mib > 0 ? w->on_node_mib / w->total_mib : 1.0;
	struct util_buf buf = {0};

	if (!cmd_migrate_line_due(w->line_s, w->line_share, now_s, share))
		return;
	util_buf_printf(&buf, "%s: %.1f/%.1f GiB on node %d (%d%%)\n", w->vm,
	                w->on_node_mib / 1024.0, w->total_mib / 1024.0, w->node,
	                (int)floor(share * 100.0));
	cmd_output(ctx, &buf);
	fflush(ctx->out);
	w->line_s = now_s;
	w->line_share = share;
}

/* One poll: refresh the progress.  0, or -errno after printing why. */
static int
cmd_migrate_poll(struct cli_ctx *ctx, struct client *c, struct cmd_migrate_wait *w)
{
	struct json_object *args = cmd_args_vm(w->vm), *data = NULL;
	char err[CMD_ERR_MAX];
	int status = PROTO_OK;
	int r = cmd_call_status(c, "vminfo", args, &data, &status, err, sizeof(err));

	json_object_put(args);
	if (r < 0)
		r = cmd_fail(ctx, r, "%s", err);
	else if (status == PROTO_NOT_FOUND)
		r = cmd_fail(ctx, -ENOENT, "%s went away during the migration", w->vm);
	else if (status != PROTO_OK)
		r = cmd_fail(ctx, cmd_status_errno(status), "%s", err);
	else if (cmd_migrate_progress(data, w->node, &w->on_node_mib, &w->total_mib) < 0)
		r = cmd_fail(ctx, -EPROTO, "vminfo of %s does not show node %d", w->vm, w->node);
	json_object_put(data);
	return r;
}

/* Redraw the bar in place. */
static void
cmd_migrate_bar_print(struct cli_ctx *ctx, const struct cmd_migrate_wait *w)
{
	struct util_buf buf = {0};

	util_buf_printf(&buf, "\r");
	cmd_migrate_bar_render(&buf, w->on_node_mib, w->total_mib, w->node);
	util_buf_printf(&buf, "\033[K"); /* erase what a longer line left */
	cmd_output(ctx, &buf);
	fflush(ctx->out);
}

/* Sleep one poll interval; -EINTR when a caught signal ends the wait. */
static int
cmd_migrate_sleep(void)
{
	struct timespec ts = {
	    .tv_sec = CMD_MIGRATE_POLL_MS / 1000,
	    .tv_nsec = (long)(CMD_MIGRATE_POLL_MS % 1000) * 1000000L,
	};

	if (nanosleep(&ts, NULL) < 0 && cmd_signal_caught(false) != 0)
		return -EINTR;
	return 0;
}

static int
cmd_migrate_wait_loop(struct cli_ctx *ctx, struct client *c, struct cmd_migrate_wait *w)
{
	double start_s = cmd_monotonic_s();
	int r;

	for (;;) {
		r = cmd_migrate_poll(ctx, c, w);
		if (r < 0)
			return r;
		if (w->bar)
			cmd_migrate_bar_print(ctx, w);
		if (cmd_migrate_done(w->on_node_mib, w->total_mib))
			return 0;
		if (w->lines)
			cmd_migrate_line_print(ctx, w);
		if (w->timeout_s > 0.0 && cmd_monotonic_s() - start_s >= w->timeout_s)
			return -ETIMEDOUT;
		if (cmd_migrate_sleep() < 0)
			return -EINTR;
	}
}

/* Wait for the memory, ending a bar line first whatever happens. */
static int
cmd_migrate_wait(struct cli_ctx *ctx, struct client *c, struct cmd_migrate_wait *w)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP, 0};
	struct cmd_signals sigs;
	int r;

	cmd_signals_catch(&sigs, signals);
	r = cmd_migrate_wait_loop(ctx, c, w);
	cmd_signals_restore(&sigs);
	if (w->bar)
		fputc('\n', ctx->out);
	if (r == -ETIMEDOUT)
		cmd_fail(ctx, r,
		         "%s: not on node %d after %g s (%.1f/%.1f GiB); vnumad goes on moving it",
		         w->vm, w->node, w->timeout_s, w->on_node_mib / 1024.0,
		         w->total_mib / 1024.0);
	else if (r == -EINTR)
		cmd_fail(ctx, r, "stopped waiting; vnumad goes on moving %s", w->vm);
	return r;
}

/* The migrate request and the waiting parameters from the command line. */
static int
cmd_migrate_args(struct cli_ctx *ctx, const struct cli_args *args, struct json_object **req,
                 struct cmd_migrate_wait *w)
{
	const char *timeout = cli_args_get(args, "timeout");
	char err[CMD_ERR_MAX];
	int64_t node;

	memset(w, 0, sizeof(*w));
	w->vm = cli_args_get(args, "vm");
	w->timeout_s = CMD_MIGRATE_TIMEOUT_S;
	w->bar = !ctx->json && isatty(fileno(ctx->out));
	w->lines = !ctx->json && !w->bar;
	w->line_s = -1;
	if (cmd_uint_parse(cli_args_get(args, "node"), "--node", UTIL_MAX_NODES - 1, &node, err,
	                   sizeof(err)) < 0 ||
	    (timeout != NULL && cmd_seconds_parse(timeout, "--timeout", 0.0, CMD_MIGRATE_MAX_S,
	                                          &w->timeout_s, err, sizeof(err)) < 0))
		return cmd_fail(ctx, -EINVAL, "%s", err);
	w->node = (int)node;
	*req = cmd_args_vm(w->vm);
	cmd_args_int(*req, "node", node);
	if (cli_args_has(args, "force"))
		cmd_args_bool(*req, "force", true);
	return 0;
}

/* What the migration leaves behind, and the way back (a daemon that says it). */
static void
cmd_migrate_policy_note(struct util_buf *buf, const char *vm, struct json_object *data)
{
	if (cmd_json_get(data, "policy_nodes") == NULL)
		return;
	util_buf_printf(buf,
	                "policy left: %s keeps nodes=\"%s\" (live) until changed; "
	                "`vnumactl policy %s --nodes all` gives it back to vnumad's choice\n",
	                vm, cmd_json_string(data, "policy_nodes", "?"), vm);
}

int
cmd_migrate(struct cli_ctx *ctx, const struct cli_args *args)
{
	struct json_object *req = NULL, *data = NULL;
	struct cmd_migrate_wait w;
	struct client *c = NULL;
	struct util_buf buf = {0};
	int r = cmd_migrate_args(ctx, args, &req, &w);

	if (r == 0)
		r = cmd_connect(ctx, &c);
	if (r == 0)
		r = cmd_call(ctx, c, "migrate", req, &data);
	if (r == 0 && !cli_args_has(args, "no-wait"))
		r = cmd_migrate_wait(ctx, c, &w);
	if (r == 0 && ctx->json)
		cmd_json_render(&buf, data);
	else if (r == 0 && cli_args_has(args, "no-wait"))
		util_buf_printf(&buf, "%s: moving to node %d\n", w.vm, w.node);
	else if (r == 0)
		util_buf_printf(&buf, "%s: %.1f/%.1f GiB on node %d\n", w.vm,
		                w.on_node_mib / 1024.0, w.total_mib / 1024.0, w.node);
	if (r == 0 && !ctx->json)
		cmd_migrate_policy_note(&buf, w.vm, data);
	if (r == 0)
		r = cmd_output(ctx, &buf);
	json_object_put(data);
	json_object_put(req);
	if (c != NULL)
		client_close(c);
	return r;
}

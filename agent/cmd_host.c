/*
 * cmd_host.c - status, stats, events (with --follow), pause, resume and reload.
 */
#include "agent/cmd_host.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent/client.h"
#include "agent/cmd_common.h"
#include "agent/proto.h"

#define CMD_ERR_MAX          1024
#define CMD_EVENTS_LIMIT_MAX 1000000 /* more than any daemon keeps; beyond is a typo */
/*
 * How long events --follow waits for one event before checking for a signal again (ms).
 * Short enough that Ctrl-C feels immediate even if the client restarts interrupted waits.
 */
#define CMD_FOLLOW_POLL_MS 250

/* ---- status and stats ------------------------------------------------------------------- */

static const struct cmd_column cmd_status_fields[] = {
    {"version", "version", CMD_CELL_TEXT, 0, false},
    {"backend", "backend", CMD_CELL_TEXT, 0, false},
    {"host", "host", CMD_CELL_TEXT, 0, false},
    {"uptime_s", "uptime (s)", CMD_CELL_FIXED, 0, false},
    {"host_time_s", "host time (s)", CMD_CELL_FIXED, 1, false},
    {"rounds", "rounds", CMD_CELL_TEXT, 0, false},
    {"paused", "paused", CMD_CELL_TEXT, 0, false},
    {"sample_period_s", "sample period (s)", CMD_CELL_TEXT, 0, false},
    {"rebalance_period_s", "rebalance period (s)", CMD_CELL_TEXT, 0, false},
    {"nr_nodes", "nodes", CMD_CELL_TEXT, 0, false},
    {"nr_vms", "vms", CMD_CELL_TEXT, 0, false},
    {"sampling.fault-stats", "vms on fault stats", CMD_CELL_TEXT, 0, false},
    {"sampling.placement-only", "vms on placement only", CMD_CELL_TEXT, 0, false},
    {"config", "config", CMD_CELL_TEXT, 0, false},
    {"socket", "socket", CMD_CELL_TEXT, 0, false},
    {"clients", "clients", CMD_CELL_TEXT, 0, false},
};

/* What the last snapshot cost to observe, by hosts that count it (host_ops.observe_cost). */
static const struct cmd_column cmd_observe_fields[] = {
    {"observe_opens_per_round", "observe opens/round", CMD_CELL_TEXT, 0, false},
    {"observe_reads_per_round", "observe reads/round", CMD_CELL_TEXT, 0, false},
    {"observe_ms_per_round", "observe ms/round", CMD_CELL_FIXED, 1, false},
    {"observe_kept_fds", "observe kept fds", CMD_CELL_TEXT, 0, false},
};

/* One set of scan tunables of the status reply (scan_tunables.admin or .current), if there. */
static void
cmd_status_scan_values(struct util_buf *buf, struct json_object *data, const char *what)
{
	struct json_object *t = cmd_json_get(data, what);

	if (t == NULL)
		return;
	util_buf_printf(buf, "  %-8s delay %lld ms, period %lld-%lld ms, size %lld MiB\n",
	                strrchr(what, '.') + 1, (long long)cmd_json_int(t, "delay_ms", -1),
	                (long long)cmd_json_int(t, "period_min_ms", -1),
	                (long long)cmd_json_int(t, "period_max_ms", -1),
	                (long long)cmd_json_int(t, "size_mb", -1));
}

/* The kernel's scan tunables (lever 3): present/absent/refused, why, the values. */
static void
cmd_status_scan_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *control = cmd_json_get(data, "scan_tunables.control");
	struct json_object *slowed = cmd_json_get(data, "scan_tunables.slowed");

	if (cmd_json_get(data, "scan_tunables") == NULL)
		return;
	util_buf_printf(buf, "scan tunables: %s%s%s (scan_control %s%s)\n",
	                cmd_json_string(data, "scan_tunables.lever", "?"),
	                cmd_json_get(data, "scan_tunables.reason") != NULL ? ": " : "",
	                cmd_json_string(data, "scan_tunables.reason", ""),
	                control != NULL && json_object_get_boolean(control) ? "yes" : "no",
	                slowed != NULL && json_object_get_boolean(slowed) ? ", slowed" : "");
	cmd_status_scan_values(buf, data, "scan_tunables.admin");
	cmd_status_scan_values(buf, data, "scan_tunables.current");
}

/* One line per lever of the capability probe: name, state, reason (a daemon without: none). */
static void
cmd_status_levers_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *levers = cmd_json_array(data, "levers");
	size_t nr = levers != NULL ? json_object_array_length(levers) : 0;

	if (nr == 0)
		return;
	util_buf_printf(buf, "levers:\n");
	for (size_t i = 0; i < nr; i++) {
		struct json_object *l = json_object_array_get_idx(levers, i);

		util_buf_printf(buf, "  %-14s %-8s %s\n", cmd_json_string(l, "name", "?"),
		                cmd_json_string(l, "state", "?"), cmd_json_string(l, "reason", ""));
	}
}

void
cmd_status_render(struct util_buf *buf, struct json_object *data)
{
	cmd_fields_render(buf, cmd_status_fields, CMD_NR(cmd_status_fields), data, 0);
	if (cmd_json_get(data, "observe_opens_per_round") != NULL)
		cmd_fields_render(buf, cmd_observe_fields, CMD_NR(cmd_observe_fields), data, 0);
	cmd_status_scan_render(buf, data);
	cmd_status_levers_render(buf, data);
}

int
cmd_status(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	return cmd_read(ctx, "status", NULL, cmd_status_render);
}

void
cmd_stats_render(struct util_buf *buf, struct json_object *data)
{
	const char *vm = cmd_json_string(data, "vm", NULL);

	if (vm != NULL)
		util_buf_printf(buf, "vm %s\n", vm);
	cmd_counters_render(buf, cmd_json_get(data, "counters"), "");
}

int
cmd_stats(struct cli_ctx *ctx, const struct cli_args *args)
{
	const char *vm = cli_args_get(args, "vm");

	return cmd_read(ctx, "stats", vm != NULL ? cmd_args_vm(vm) : NULL, cmd_stats_render);
}

/* ---- events ----------------------------------------------------------------------------- */

static const struct cmd_column cmd_event_columns[] = {
    {"seq", "seq", CMD_CELL_TEXT, 0, true},    {"wall_s", "time", CMD_CELL_WALL, 0, false},
    {"vm", "vm", CMD_CELL_TEXT, 0, false},     {"kind", "kind", CMD_CELL_TEXT, 0, false},
    {"rule", "rule", CMD_CELL_TEXT, 0, false}, {"gain", "gain", CMD_CELL_FIXED, 2, true},
    {"text", "text", CMD_CELL_TEXT, 0, false},
};

/* Column widths of the one-line form (the last column is not padded). */
static const int cmd_event_widths[] = {7, 16, 12, 8, 10, 6, 0};

void
cmd_events_table_render(struct util_buf *buf, struct json_object *events)
{
	cmd_table_render(buf, cmd_event_columns, CMD_NR(cmd_event_columns), events);
}

/* "note: ..." when the daemon's ring no longer held some of the events asked for. */
static void
cmd_events_dropped_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *dropped = cmd_json_get(data, "dropped");
	struct json_object *oldest = cmd_json_get(data, "oldest");
	struct json_object *kept = cmd_json_get(data, "kept");

	if (dropped != NULL && json_object_get_int64(dropped) > 0)
		util_buf_printf(buf,
		                "note: %lld events asked for are no longer kept (vnumad keeps the "
		                "last %lld); the oldest kept is seq %lld\n",
		                (long long)json_object_get_int64(dropped),
		                (long long)(kept != NULL ? json_object_get_int64(kept) : 0),
		                (long long)(oldest != NULL ? json_object_get_int64(oldest) : 0));
}

void
cmd_events_render(struct util_buf *buf, struct json_object *data)
{
	cmd_events_dropped_render(buf, data);
	cmd_events_table_render(buf, cmd_json_array(data, "events"));
}

/* One line of texts[] (header or cells) in the fixed widths. */
static void
cmd_event_line_print(struct util_buf *buf, const char *const *texts)
{
	for (int c = 0; c < CMD_NR(cmd_event_columns); c++) {
		int w = cmd_event_widths[c];

		if (c > 0)
			util_buf_printf(buf, "  ");
		if (w == 0)
			util_buf_printf(buf, "%s", texts[c]);
		else if (cmd_event_columns[c].numeric)
			util_buf_printf(buf, "%*s", w, texts[c]);
		else
			util_buf_printf(buf, "%-*s", w, texts[c]);
	}
	util_buf_printf(buf, "\n");
}

void
cmd_event_header_render(struct util_buf *buf)
{
	const char *texts[CMD_NR(cmd_event_columns)];

	for (int c = 0; c < CMD_NR(cmd_event_columns); c++)
		texts[c] = cmd_event_columns[c].header;
	cmd_event_line_print(buf, texts);
}

void
cmd_event_line_render(struct util_buf *buf, struct json_object *event, bool json)
{
	char cells[CMD_NR(cmd_event_columns)][CMD_TEXT_MAX];
	const char *texts[CMD_NR(cmd_event_columns)];

	if (json) {
		util_buf_printf(
		    buf, "%s\n",
		    json_object_to_json_string_ext(event, JSON_C_TO_STRING_PLAIN |
		                                              JSON_C_TO_STRING_NOSLASHESCAPE));
		return;
	}
	for (int c = 0; c < CMD_NR(cmd_event_columns); c++) {
		cmd_cell_format(&cmd_event_columns[c],
		                cmd_json_get(event, cmd_event_columns[c].key), cells[c],
		                sizeof(cells[c]));
		texts[c] = cells[c];
	}
	cmd_event_line_print(buf, texts);
}

int
cmd_events_args(const struct cli_args *args, struct json_object **req, bool *follow, char *err,
                size_t errlen)
{
	const char *since = cli_args_get(args, "since"), *limit = cli_args_get(args, "limit");
	const char *vm = cli_args_get(args, "vm");
	int64_t n;

	*req = cmd_args_new();
	*follow = cli_args_has(args, "follow");
	if (since != NULL) {
		if (cmd_uint_parse(since, "--since", INT64_MAX, &n, err, errlen) < 0)
			goto fail;
		cmd_args_int(*req, "since", n);
	}
	if (limit != NULL) {
		if (cmd_uint_parse(limit, "--limit", CMD_EVENTS_LIMIT_MAX, &n, err, errlen) < 0)
			goto fail;
		cmd_args_int(*req, "limit", n);
	}
	if (vm != NULL)
		cmd_args_string(*req, "vm", vm);
	cmd_args_bool(*req, "follow", *follow);
	return 0;
fail:
	json_object_put(*req);
	*req = NULL;
	return -EINVAL;
}

/* Print buf now (a followed stream must not sit in stdio's buffer).  0 or -EIO. */
static int
cmd_events_flush(struct cli_ctx *ctx, struct util_buf *buf)
{
	int r = cmd_output(ctx, buf);

	if (r == 0 && fflush(ctx->out) != 0)
		r = -EIO;
	return r;
}

/* The first batch of a followed stream, one line per event. */
static int
cmd_events_first_print(struct cli_ctx *ctx, struct json_object *data)
{
	struct json_object *events = cmd_json_array(data, "events");
	size_t nr = events != NULL ? json_object_array_length(events) : 0;
	struct util_buf buf = {0};

	if (!ctx->json) {
		cmd_events_dropped_render(&buf, data);
		cmd_event_header_render(&buf);
	}
	for (size_t i = 0; i < nr; i++)
		cmd_event_line_render(&buf, json_object_array_get_idx(events, i), ctx->json);
	return cmd_events_flush(ctx, &buf);
}

/* Print events as they come until a signal or the daemon closes the stream. */
static int
cmd_events_follow(struct cli_ctx *ctx, struct client *c)
{
	static const int signals[] = {SIGINT, SIGTERM, SIGHUP, 0};
	struct cmd_signals sigs;
	char err[CMD_ERR_MAX];
	int r = 0;

	cmd_signals_catch(&sigs, signals);
	while (r == 0 && cmd_signal_caught(false) == 0) {
		struct proto_reply rep;
		struct util_buf buf = {0};

		memset(&rep, 0, sizeof(rep));
		err[0] = '\0';
		r = client_next_event(c, CMD_FOLLOW_POLL_MS, &rep, err, sizeof(err));
		if (r < 0 && cmd_signal_caught(false) != 0) {
			r = 0; /* interrupted: the user asked to stop */
		} else if (r == -EPIPE) {
			r = cmd_fail(ctx, r, "vnumad closed the event stream");
		} else if (r < 0) {
			r = cmd_fail(ctx, r, "%s", err[0] != '\0' ? err : strerror(-r));
		} else if (r == 1 && rep.event != NULL) {
			cmd_event_line_render(&buf, rep.event, ctx->json);
			r = cmd_events_flush(ctx, &buf);
		} else {
			r = 0;
		}
		proto_reply_free(&rep);
	}
	cmd_signals_restore(&sigs);
	return r;
}

int
cmd_events(struct cli_ctx *ctx, const struct cli_args *args)
{
	struct json_object *req, *data = NULL;
	struct client *c = NULL;
	char err[CMD_ERR_MAX];
	bool follow;
	int r;

	if (cmd_events_args(args, &req, &follow, err, sizeof(err)) < 0)
		return cmd_fail(ctx, -EINVAL, "%s", err);
	if (!follow)
		return cmd_read(ctx, "events", req, cmd_events_render);
	r = cmd_connect(ctx, &c);
	if (r == 0)
		r = cmd_call(ctx, c, "events", req, &data);
	if (r == 0)
		r = cmd_events_first_print(ctx, data);
	if (r == 0)
		r = cmd_events_follow(ctx, c);
	json_object_put(data);
	json_object_put(req);
	if (c != NULL)
		client_close(c);
	return r;
}

/* ---- pause, resume, reload -------------------------------------------------------------- */

int
cmd_pause(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	return cmd_change(ctx, "pause", NULL,
	                  "vnumad paused: it goes on deciding and counting, but does not act");
}

int
cmd_resume(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	return cmd_change(ctx, "resume", NULL, "vnumad resumed");
}

int
cmd_reload(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	return cmd_change(ctx, "reload", NULL, "configuration reloaded");
}

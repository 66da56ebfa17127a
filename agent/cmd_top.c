/*
 * cmd_top.c - the data of top's frames (status, nodeinfo, list, then vminfo per VM over one
 * connection) and the plain one-frame rendering; the interactive screen is top_screen.c.
 */
#include "agent/cmd_top.h"
#include "agent/cmd_vm.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/client.h"
#include "agent/cmd_common.h"
#include "agent/proto.h"

#define CMD_ERR_MAX       1024
#define CMD_TOP_LABEL_MAX 16 /* bytes of a per-node column header ("gib63") */

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

int
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

/* ---- the screen ------------------------------------------------------------------------ */

static cmd_top_screen_fn cmd_top_screen; /* NULL: no interactive screen in this program */

void
cmd_top_screen_set(cmd_top_screen_fn fn)
{
	cmd_top_screen = fn;
}

/* One frame, no escapes: --once, --json, stdin or stdout not a terminal, or no screen. */
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
	if (cli_args_has(args, "once") || ctx->json || !isatty(fileno(ctx->out)) ||
	    !isatty(STDIN_FILENO) || cmd_top_screen == NULL)
		r = cmd_top_once(ctx, c);
	else
		r = cmd_top_screen(ctx, c, interval_s);
	client_close(c);
	return r;
}

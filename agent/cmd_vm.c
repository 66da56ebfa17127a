/*
 * cmd_vm.c - list, vminfo (dominfo), nodeinfo, policy, pin, unpin, explain and place.
 */
#include "agent/cmd_vm.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "agent/cmd_common.h"
#include "agent/cmd_host.h"
#include "policy/idlist.h"

#define CMD_ERR_MAX   512
#define CMD_MAX_VCPUS 4096 /* KVM's own limit per VM (KVM_MAX_VCPUS on x86-64) */
#define CMD_MAX_CELLS 64   /* guest vNUMA cells: no more than host nodes we support */

/* ---- list ------------------------------------------------------------------------------- */

static const struct cmd_column cmd_list_columns[] = {
    {"id", "id", CMD_CELL_TEXT, 0, true},
    {"name", "name", CMD_CELL_TEXT, 0, false},
    {"state", "state", CMD_CELL_TEXT, 0, false},
    {"mode", "mode", CMD_CELL_TEXT, 0, false},
    {"vcpus", "vcpus", CMD_CELL_TEXT, 0, true},
    {"memory_mib", "mem_gib", CMD_CELL_GIB, 1, true},
    {"home", "home", CMD_CELL_TEXT, 0, false},
    {"vcpu_nodes", "vcpu_nodes", CMD_CELL_TEXT, 0, false},
    {"memory_locality", "mem_local", CMD_CELL_FIXED, 2, true},
    {"fault_locality", "fault_local", CMD_CELL_FIXED, 2, true},
    {"strength", "strength", CMD_CELL_TEXT, 0, true},
};

/* Lines naming each VM whose policy XML is bad (it runs under the default policy). */
static void
cmd_policy_errors_render(struct util_buf *buf, struct json_object *vms)
{
	size_t nr = vms != NULL ? json_object_array_length(vms) : 0;
	bool first = true;

	for (size_t i = 0; i < nr; i++) {
		struct json_object *vm = json_object_array_get_idx(vms, i);
		struct json_object *ok = cmd_json_get(vm, "policy_ok");

		if (ok == NULL || json_object_get_boolean(ok))
			continue;
		util_buf_printf(buf, "%s%s: bad policy, the default is used: %s\n",
		                first ? "\n" : "", cmd_json_string(vm, "name", "?"),
		                cmd_json_string(vm, "policy_error", "(no message)"));
		first = false;
	}
}

void
cmd_list_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *vms = cmd_json_array(data, "vms");

	cmd_table_render(buf, cmd_list_columns, CMD_NR(cmd_list_columns), vms);
	cmd_policy_errors_render(buf, vms);
}

int
cmd_list(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	return cmd_read(ctx, "list", NULL, cmd_list_render);
}

/* ---- vminfo ----------------------------------------------------------------------------- */

static const struct cmd_column cmd_vminfo_fields[] = {
    {"id", "id", CMD_CELL_TEXT, 0, false},
    {"name", "name", CMD_CELL_TEXT, 0, false},
    {"state", "state", CMD_CELL_TEXT, 0, false},
    {"vcpus", "vcpus", CMD_CELL_TEXT, 0, false},
    {"memory_mib", "memory (GiB)", CMD_CELL_GIB, 1, false},
    {"home", "home nodes", CMD_CELL_TEXT, 0, false},
    {"vcpu_nodes", "vcpu nodes", CMD_CELL_TEXT, 0, false},
    {"conv_node", "converging to", CMD_CELL_NODE, 0, false},
    {"memory_locality", "memory locality", CMD_CELL_FIXED, 2, false},
    {"fault_locality", "fault locality", CMD_CELL_FIXED, 2, false},
    {"fault_age_s", "fault age (s)", CMD_CELL_FIXED, 0, false},
    {"strength", "strength", CMD_CELL_TEXT, 0, false},
    {"pending_mib", "to move (GiB)", CMD_CELL_GIB, 1, false},
    {"memory_moves", "memory moves", CMD_CELL_TEXT, 0, false},
    {"pinned_mib", "pinned (GiB)", CMD_CELL_GIB, 1, false},
    {"sampling_source", "sampling", CMD_CELL_TEXT, 0, false},
    {"sampling_reason", "sampling reason", CMD_CELL_TEXT, 0, false},
    {"sampling_mib_s", "sampling (MiB/s)", CMD_CELL_FIXED, 1, false},
    {"host_note", "host note", CMD_CELL_TEXT, 0, false},
};

static const struct cmd_column cmd_policy_fields[] = {
    {"policy.mode", "mode", CMD_CELL_TEXT, 0, false},
    {"policy.nodes", "nodes", CMD_CELL_TEXT, 0, false},
    {"policy.placement", "placement", CMD_CELL_TEXT, 0, false},
    {"policy.migrate", "migrate", CMD_CELL_TEXT, 0, false},
    {"policy.rate_kib_s", "rate (KiB/s)", CMD_CELL_CAP, 0, false},
    {"policy.priority", "priority", CMD_CELL_TEXT, 0, false},
    {"policy.group", "group", CMD_CELL_TEXT, 0, false},
    {"policy_xml", "xml", CMD_CELL_TEXT, 0, false},
};

static const struct cmd_column cmd_resident_columns[] = {
    {"node", "node", CMD_CELL_TEXT, 0, true},
    {"resident_mib", "resident_gib", CMD_CELL_GIB, 1, true},
    {"share", "share", CMD_CELL_FIXED, 2, true},
};

static const struct cmd_column cmd_vcpu_columns[] = {
    {"vcpu", "vcpu", CMD_CELL_TEXT, 0, true},        {"tid", "tid", CMD_CELL_TEXT, 0, true},
    {"cpu", "cpu", CMD_CELL_TEXT, 0, true},          {"node", "node", CMD_CELL_TEXT, 0, true},
    {"allowed", "allowed", CMD_CELL_TEXT, 0, false}, {"pinned", "pinned", CMD_CELL_TEXT, 0, false},
};

static const struct cmd_column cmd_cell_columns[] = {
    {"cell", "cell", CMD_CELL_TEXT, 0, true},
    {"vcpus", "vcpus", CMD_CELL_TEXT, 0, false},
    {"mem_start_mib", "start_mib", CMD_CELL_TEXT, 0, true},
    {"memory_mib", "memory_mib", CMD_CELL_TEXT, 0, true},
    {"home", "home", CMD_CELL_TEXT, 0, false},
    {"resident", "resident MiB per node", CMD_CELL_TEXT, 0, false},
};

/* "error: ... (the default policy is used)" when the VM's policy XML was refused. */
static void
cmd_policy_error_render(struct util_buf *buf, struct json_object *data, int indent)
{
	struct json_object *ok = cmd_json_get(data, "policy_ok");

	if (ok == NULL || json_object_get_boolean(ok))
		return;
	util_buf_printf(buf, "%*s%s: %s (the default policy is used)\n", indent, "", "error",
	                cmd_json_string(data, "policy_error", "(no message)"));
}

/* "note: ..." when the policy in force differs from the VM's own (placement cells, no cells). */
static void
cmd_policy_note_render(struct util_buf *buf, struct json_object *data, int indent)
{
	const char *note = cmd_json_string(data, "policy_note", "");

	if (note[0] != '\0')
		util_buf_printf(buf, "%*snote: %s\n", indent, "", note);
}

/* "chasing: not ..." when vnumad leaves an adverse guest alone (none from older daemons). */
static void
cmd_chase_note_render(struct util_buf *buf, struct json_object *data)
{
	const char *note = cmd_json_string(data, "chase_note", "");

	if (note[0] != '\0')
		util_buf_printf(buf, "chasing: %s\n", note);
}

/* resident_mib (an array indexed by node) as records {node, resident_mib, share}. */
static struct json_object *
cmd_resident_records(struct json_object *resident)
{
	struct json_object *rows = json_object_new_array();
	size_t nr = resident != NULL ? json_object_array_length(resident) : 0;
	double total = 0.0;

	for (size_t n = 0; n < nr; n++)
		total += json_object_get_double(json_object_array_get_idx(resident, n));
	for (size_t n = 0; n < nr; n++) {
		double mib = json_object_get_double(json_object_array_get_idx(resident, n));
		struct json_object *row = cmd_args_new();

		cmd_args_int(row, "node", (int64_t)n);
		json_object_object_add(row, "resident_mib", json_object_new_double(mib));
		json_object_object_add(row, "share",
		                       json_object_new_double(total > 0.0 ? mib / total : 0.0));
		json_object_array_add(rows, row);
	}
	return rows;
}

/*
 * "residency: sampled, 0.0 s old, +/- 37 MiB per node" when the host says where the figure
 * came from (none from the simulator, whose figures are exact, nor from older daemons).
 */
static void
cmd_residency_render(struct util_buf *buf, struct json_object *data)
{
	const char *source = cmd_json_string(data, "resident_source", "");
	struct json_object *age = cmd_json_get(data, "resident_age_s");
	struct json_object *err = cmd_json_get(data, "resident_err_mib");

	if (source[0] == '\0')
		return;
	util_buf_printf(buf, "  residency: %s, %.1f s old, +/- %lld MiB per node\n", source,
	                age != NULL ? json_object_get_double(age) : 0.0,
	                err != NULL ? (long long)json_object_get_int64(err) : 0LL);
}

/* "  read 4.0 s ago (settled: read less often)" when the host carried the VM's last reading. */
static void
cmd_observed_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *age = cmd_json_get(data, "observed_age_s");

	if (age != NULL && json_object_get_double(age) > 0)
		util_buf_printf(buf, "  read %.1f s ago (settled: read less often)\n",
		                json_object_get_double(age));
}

void
cmd_vminfo_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *resident = cmd_resident_records(cmd_json_array(data, "resident_mib"));
	struct json_object *cells = cmd_json_array(data, "cells"); /* none from older daemons */

	cmd_fields_render(buf, cmd_vminfo_fields, CMD_NR(cmd_vminfo_fields), data, 0);
	cmd_chase_note_render(buf, data);
	util_buf_printf(buf, "\npolicy:\n");
	cmd_fields_render(buf, cmd_policy_fields, CMD_NR(cmd_policy_fields), data, 2);
	cmd_policy_error_render(buf, data, 2);
	cmd_policy_note_render(buf, data, 2);
	util_buf_printf(buf, "\nmemory per node:\n");
	cmd_residency_render(buf, data);
	cmd_table_render(buf, cmd_resident_columns, CMD_NR(cmd_resident_columns), resident);
	util_buf_printf(buf, "\nvcpus:\n");
	cmd_observed_render(buf, data);
	cmd_table_render(buf, cmd_vcpu_columns, CMD_NR(cmd_vcpu_columns),
	                 cmd_json_array(data, "vcpu"));
	if (cells != NULL && json_object_array_length(cells) > 0) {
		util_buf_printf(buf, "\nguest cells:\n");
		cmd_table_render(buf, cmd_cell_columns, CMD_NR(cmd_cell_columns), cells);
	}
	util_buf_printf(buf, "\ncounters:\n");
	cmd_counters_render(buf, cmd_json_get(data, "counters"), "  ");
	json_object_put(resident);
}

int
cmd_vminfo(struct cli_ctx *ctx, const struct cli_args *args)
{
	return cmd_read(ctx, "vminfo", cmd_args_vm(cli_args_get(args, "vm")), cmd_vminfo_render);
}

/* ---- nodeinfo --------------------------------------------------------------------------- */

/* Shared with top, which shows all but the last (distance) column. */
const struct cmd_column cmd_node_columns[CMD_NODE_COLUMNS] = {
    {"node", "node", CMD_CELL_TEXT, 0, true},
    {"cpus", "cpus", CMD_CELL_TEXT, 0, true},
    {"cpu_load", "load", CMD_CELL_FIXED, 2, true},
    {"vcpus", "vcpus", CMD_CELL_TEXT, 0, true},
    {"mem_total_mib", "mem_gib", CMD_CELL_GIB, 1, true},
    {"mem_free_mib", "free_gib", CMD_CELL_GIB, 1, true},
    {"distance", "distance", CMD_CELL_TEXT, 0, false},
};

void
cmd_nodeinfo_render(struct util_buf *buf, struct json_object *data)
{
	cmd_table_render(buf, cmd_node_columns, CMD_NR(cmd_node_columns),
	                 cmd_json_array(data, "nodes"));
}

int
cmd_nodeinfo(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	return cmd_read(ctx, "nodeinfo", NULL, cmd_nodeinfo_render);
}

/* ---- policy ----------------------------------------------------------------------------- */

/* The policy settings: option name = request key, sent as the XML attribute's text. */
static const char *const cmd_policy_settings[] = {
    "mode", "nodes", "placement", "migrate", "rate", "priority", "group",
};

/* The request's scope for --live --config: the running VM and its persistent definition. */
#define CMD_POLICY_SCOPE_BOTH "live+config"

void
cmd_policy_render(struct util_buf *buf, struct json_object *data)
{
	static const struct cmd_column head[] = {
	    {"vm", "vm", CMD_CELL_TEXT, 0, false},
	    {"source", "source", CMD_CELL_TEXT, 0, false},
	};
	struct cmd_column cols[CMD_NR(head) + CMD_NR(cmd_policy_fields)];

	memcpy(cols, head, sizeof(head));
	memcpy(cols + CMD_NR(head), cmd_policy_fields, sizeof(cmd_policy_fields));
	cmd_fields_render(buf, cols, CMD_NR(cols), data, 0);
	cmd_policy_error_render(buf, data, 0);
	cmd_policy_note_render(buf, data, 0);
}

int
cmd_policy_args(const struct cli_args *args, struct json_object **req, bool *change, char *err,
                size_t errlen)
{
	bool live = cli_args_has(args, "live"), config = cli_args_has(args, "config");
	const char *scope = NULL;

	*change = false;
	/* As virsh: --live and --config together change both; --current goes with neither. */
	if (cli_args_has(args, "current") && (live || config)) {
		snprintf(err, errlen, "--%s and --current cannot be used together",
		         live ? "live" : "config");
		return -EINVAL;
	}
	if (live && config)
		scope = CMD_POLICY_SCOPE_BOTH;
	else if (live || config)
		scope = live ? "live" : "config";
	else if (cli_args_has(args, "current"))
		scope = "current";
	*req = cmd_args_vm(cli_args_get(args, "vm"));
	for (int i = 0; i < CMD_NR(cmd_policy_settings); i++) {
		const char *v = cli_args_get(args, cmd_policy_settings[i]);

		if (v != NULL)
			cmd_args_string(*req, cmd_policy_settings[i], v);
		*change |= v != NULL;
	}
	if (cli_args_has(args, "reset")) {
		if (*change) {
			json_object_put(*req);
			snprintf(err, errlen, "--reset takes no settings: it drops them all");
			return -EINVAL;
		}
		cmd_args_bool(*req, "reset", true);
		*change = true;
	}
	if (scope != NULL && !*change) {
		json_object_put(*req);
		snprintf(err, errlen, "--%s applies to a change: give a setting such as --mode",
		         live && config ? "live --config" : scope);
		return -EINVAL;
	}
	if (scope != NULL)
		cmd_args_string(*req, "scope", scope);
	return 0;
}

int
cmd_policy(struct cli_ctx *ctx, const struct cli_args *args)
{
	struct json_object *req = NULL, *data = NULL, *req_scope;
	struct util_buf buf = {0};
	char err[CMD_ERR_MAX];
	bool change;
	int r;

	if (cmd_policy_args(args, &req, &change, err, sizeof(err)) < 0)
		return cmd_fail(ctx, -EINVAL, "%s", err);
	if (!change)
		return cmd_read(ctx, "policy", req, cmd_policy_render);
	req_scope = json_object_get(req); /* cmd_fetch consumes req */
	r = cmd_fetch(ctx, "policy", req, &data);
	if (r < 0) {
		json_object_put(req_scope);
		return r;
	}
	if (ctx->json) {
		cmd_json_render(&buf, data);
	} else {
		util_buf_printf(&buf, "policy of %s %s (%s)\n", cli_args_get(args, "vm"),
		                cli_args_has(args, "reset") ? "reset" : "changed",
		                cmd_json_string(req_scope, "scope", "live"));
		if (cmd_json_get(data, "policy") != NULL)
			cmd_policy_render(&buf, data);
	}
	json_object_put(data);
	json_object_put(req_scope);
	return cmd_output(ctx, &buf);
}

/* ---- pin / unpin ------------------------------------------------------------------------ */

static int
cmd_vcpu_arg(const struct cli_args *args, struct json_object *req, char *err, size_t errlen)
{
	const char *vcpu = cli_args_get(args, "vcpu");
	int64_t n;

	if (vcpu == NULL)
		return 0;
	if (cmd_uint_parse(vcpu, "vCPU", CMD_MAX_VCPUS - 1, &n, err, errlen) < 0)
		return -EINVAL;
	cmd_args_int(req, "vcpu", n);
	return 0;
}

int
cmd_pin_args(const struct cli_args *args, struct json_object **req, char *err, size_t errlen)
{
	const char *node = cli_args_get(args, "node");
	char why[IDLIST_ERR_MAX];
	uint64_t mask;

	*req = cmd_args_vm(cli_args_get(args, "vm"));
	if (cmd_vcpu_arg(args, *req, err, errlen) < 0)
		goto fail;
	if (nodemask_parse(node, 0, &mask, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "bad node list '%s': %s; want node ids such as 1 or 0-1,3",
		         node, why);
		goto fail;
	}
	cmd_args_string(*req, "node", node);
	return 0;
fail:
	json_object_put(*req);
	*req = NULL;
	return -EINVAL;
}

int
cmd_unpin_args(const struct cli_args *args, struct json_object **req, char *err, size_t errlen)
{
	*req = cmd_args_vm(cli_args_get(args, "vm"));
	if (cmd_vcpu_arg(args, *req, err, errlen) < 0) {
		json_object_put(*req);
		*req = NULL;
		return -EINVAL;
	}
	return 0;
}

int
cmd_pin(struct cli_ctx *ctx, const struct cli_args *args)
{
	struct json_object *req;
	char err[CMD_ERR_MAX], done[CMD_ERR_MAX];

	if (cmd_pin_args(args, &req, err, sizeof(err)) < 0)
		return cmd_fail(ctx, -EINVAL, "%s", err);
	snprintf(done, sizeof(done), "vCPU %s of %s pinned to node %s (mode manual)",
	         cli_args_get(args, "vcpu"), cli_args_get(args, "vm"), cli_args_get(args, "node"));
	return cmd_change(ctx, "pin", req, done);
}

int
cmd_unpin(struct cli_ctx *ctx, const struct cli_args *args)
{
	const char *vcpu = cli_args_get(args, "vcpu");
	struct json_object *req;
	char err[CMD_ERR_MAX], done[CMD_ERR_MAX];

	if (cmd_unpin_args(args, &req, err, sizeof(err)) < 0)
		return cmd_fail(ctx, -EINVAL, "%s", err);
	if (vcpu != NULL)
		snprintf(done, sizeof(done), "vCPU %s of %s unpinned", vcpu,
		         cli_args_get(args, "vm"));
	else
		snprintf(done, sizeof(done), "all vCPUs of %s unpinned", cli_args_get(args, "vm"));
	return cmd_change(ctx, "unpin", req, done);
}

/* ---- explain ---------------------------------------------------------------------------- */

void
cmd_explain_render(struct util_buf *buf, struct json_object *data)
{
	static const struct cmd_column head[] = {
	    {"vm", "vm", CMD_CELL_TEXT, 0, false},
	    {"home", "home", CMD_CELL_TEXT, 0, false},
	    {"summary", "why", CMD_CELL_TEXT, 0, false},
	};
	struct json_object *reasons = cmd_json_array(data, "reasons");

	cmd_fields_render(buf, head, CMD_NR(head), data, 0);
	if (reasons == NULL || json_object_array_length(reasons) == 0) {
		util_buf_printf(buf, "\nno events about this VM are kept\n");
		return;
	}
	util_buf_printf(buf, "\nevents that put it there:\n");
	cmd_events_table_render(buf, reasons);
}

int
cmd_explain(struct cli_ctx *ctx, const struct cli_args *args)
{
	return cmd_read(ctx, "explain", cmd_args_vm(cli_args_get(args, "vm")), cmd_explain_render);
}

/* ---- place ------------------------------------------------------------------------------ */

void
cmd_place_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *cells = cmd_json_array(data, "per_cell");
	size_t nr = cells != NULL ? json_object_array_length(cells) : 0;
	char label[32];
	int width;

	snprintf(label, sizeof(label), "cell %zu:", nr > 0 ? nr - 1 : 0);
	width = nr > 0 ? (int)strlen(label) : (int)strlen("nodes:");
	util_buf_printf(buf, "%-*s %s\n", width, "nodes:", cmd_json_string(data, "nodes", "-"));
	for (size_t i = 0; i < nr; i++) {
		struct json_object *cell = json_object_array_get_idx(cells, i);

		snprintf(label, sizeof(label), "cell %zu:", i);
		util_buf_printf(buf, "%-*s %s\n", width, label,
		                cell != NULL ? json_object_get_string(cell) : "-");
	}
	util_buf_printf(buf, "%-*s %s\n", width, "why:", cmd_json_string(data, "reason", "-"));
	if (cmd_json_get(data, "reserved_s") != NULL)
		util_buf_printf(buf, "%-*s %.0f s, until a VM of this shape appears\n", width,
		                "held:", cmd_json_double(data, "reserved_s", 0));
}

int
cmd_place_args(const struct cli_args *args, struct json_object **req, char *err, size_t errlen)
{
	const char *cells = cli_args_get(args, "cells");
	int64_t vcpus, nr_cells = 0;
	uint64_t mib;

	*req = NULL;
	if (cmd_uint_parse(cli_args_get(args, "vcpus"), "--vcpus", CMD_MAX_VCPUS, &vcpus, err,
	                   errlen) < 0 ||
	    cmd_size_parse_mib(cli_args_get(args, "memory"), &mib, err, errlen) < 0 ||
	    (cells != NULL &&
	     cmd_uint_parse(cells, "--cells", CMD_MAX_CELLS, &nr_cells, err, errlen) < 0))
		return -EINVAL;
	if (vcpus == 0 || (cells != NULL && (nr_cells == 0 || nr_cells > vcpus))) {
		snprintf(err, errlen, "%s",
		         vcpus == 0 ? "--vcpus must be at least 1"
		                    : "--cells must be from 1 to the vCPU count");
		return -EINVAL;
	}
	*req = cmd_args_new();
	cmd_args_int(*req, "vcpus", vcpus);
	cmd_args_int(*req, "memory_mib", (int64_t)mib);
	if (cells != NULL)
		cmd_args_int(*req, "cells", nr_cells);
	if (cli_args_has(args, "reserve"))
		cmd_args_bool(*req, "reserve", true);
	return 0;
}

int
cmd_place(struct cli_ctx *ctx, const struct cli_args *args)
{
	struct json_object *req;
	char err[CMD_ERR_MAX];

	if (cmd_place_args(args, &req, err, sizeof(err)) < 0)
		return cmd_fail(ctx, -EINVAL, "%s", err);
	return cmd_read(ctx, "place", req, cmd_place_render);
}

/*
 * handlers.c - vnumad's control commands (docs/protocol.md): read commands build their
 * answer from the last round's snapshot, the engine's report and the daemon's counters;
 * mutating commands go through the same checks as the engine's plans.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/control.h"
#include "agent/daemon.h"
#include "agent/handlers.h"
#include "agent/metrics_export.h"
#include "agent/state.h"
#include "agent/version.h"
#include "policy/engine.h"

static struct json_object *
hj_nodes(uint64_t mask)
{
	char buf[NODEMASK_STR_MAX];

	return json_object_new_string(mask ? nodemask_format(mask, buf, sizeof(buf)) : "");
}

double
handlers_memory_locality(const struct snapshot *snap, const struct snap_vm *vm, uint64_t where)
{
	uint64_t on = 0, all = 0;

	for (int n = 0; n < snap->nr_nodes; n++) {
		all += vm->resident_mib[n];
		on += nodemask_test(where, n) ? vm->resident_mib[n] : 0;
	}
	return all ? (double)on / (double)all : 1.0;
}

void
handlers_chase_note(const struct engine_vm_report *r, char *buf, size_t len)
{
	if (r->adverse_left_s <= 0) {
		snprintf(buf, len, "%s", "");
		return;
	}
	snprintf(buf, len,
	         "not chasing it: its working set moved away after %u of %u fault-following vCPU "
	         "moves (an adverse guest); vCPUs stay where they are and its memory is not moved "
	         "for %.0f s more, then re-tested (found adverse %u time%s; each time again "
	         "doubles the wait)",
	         r->chase_wasted, r->chase_judged, r->adverse_left_s, r->adverse_times,
	         r->adverse_times == 1 ? "" : "s");
}

const char *
handlers_vm_state(const struct daemon *d, const struct snap_vm *vm,
                  const struct engine_vm_report *r)
{
	uint64_t away = 0;

	if (vm->policy.mode == VM_POLICY_MODE_OFF)
		return "off";
	if (vm->policy.mode == VM_POLICY_MODE_MANUAL)
		return "manual";
	if (d->paused)
		return "paused";
	if (vm->policy.mode == VM_POLICY_MODE_ADVISORY)
		return "advisory";
	if (!r->placed)
		return "placing";
	for (int v = 0; v < vm->nr_vcpus; v++)
		if (!nodemask_test(r->home, vm->vcpus[v].node))
			return "placing";
	for (int n = 0; n < d->snap->nr_nodes; n++)
		away += nodemask_test(r->home, n) ? 0 : vm->resident_mib[n];
	/* pinned memory stays where it is: "moving" would never end (engine_vm_mem_pinned) */
	if (engine_vm_mem_pinned(vm))
		away = 0;
	return (away > 0 || vm->mig_pending_mib > 0) ? "moving" : "settled";
}

struct json_object *
handlers_vm_row(struct daemon *d, const struct snap_vm *vm)
{
	struct json_object *o = json_object_new_object();
	const struct dvm *dv = daemon_vm(d, vm->id);
	struct engine_vm_report r;
	uint64_t where = 0;
	double fault_loc, fault_age_s;

	engine_report_vm(d->eng, vm->id, &r);
	fault_loc = daemon_fault_locality(dv, d->snap->now_s, r.scan_pass_s, &fault_age_s);
	for (int v = 0; v < vm->nr_vcpus; v++)
		where |= nodemask_of(vm->vcpus[v].node);
	json_object_object_add(o, "id", json_object_new_int(vm->id));
	json_object_object_add(o, "name", json_object_new_string(vm->name));
	json_object_object_add(o, "vcpus", json_object_new_int(vm->nr_vcpus));
	json_object_object_add(o, "memory_mib", json_object_new_int64((int64_t)vm->mem_mib));
	json_object_object_add(o, "mode",
	                       json_object_new_string(vm_policy_mode_name(vm->policy.mode)));
	json_object_object_add(o, "policy_ok", json_object_new_boolean(vm->policy_ok));
	json_object_object_add(o, "policy_error",
	                       vm->policy_ok ? NULL : json_object_new_string(vm->policy_error));
	json_object_object_add(o, "home", hj_nodes(r.home));
	json_object_object_add(o, "vcpu_nodes", hj_nodes(where));
	/* Two measures, named apart; a fault figure nobody measures now is null, not frozen. */
	json_object_object_add(
	    o, "memory_locality",
	    json_object_new_double(handlers_memory_locality(d->snap, vm, where)));
	json_object_object_add(o, "fault_locality",
	                       fault_loc >= 0 ? json_object_new_double(fault_loc) : NULL);
	json_object_object_add(o, "fault_age_s",
	                       fault_age_s >= 0 ? json_object_new_double(fault_age_s) : NULL);
	json_object_object_add(o, "strength", json_object_new_int(r.strength));
	json_object_object_add(o, "state", json_object_new_string(handlers_vm_state(d, vm, &r)));
	return o;
}

/* The adaptive-observation part of observe_cost (host.h), when the host has it. */
static void
handlers_observe_budget(struct json_object *o, const struct host_observe_cost *oc)
{
	if (oc->cpu_cap_percent <= 0 && oc->cpu_ms_total <= 0)
		return; /* a host without adaptive observation */
	json_object_object_add(o, "observe_vms_read", json_object_new_int64((int64_t)oc->vms_read));
	json_object_object_add(o, "observe_vms_carried",
	                       json_object_new_int64((int64_t)oc->vms_carried));
	json_object_object_add(o, "observe_cpu_cap_percent",
	                       json_object_new_double(oc->cpu_cap_percent));
	if (oc->cpu_percent >= 0)
		json_object_object_add(o, "observe_cpu_percent",
		                       json_object_new_double(oc->cpu_percent));
	json_object_object_add(o, "observe_cpu_ms_total", json_object_new_double(oc->cpu_ms_total));
	json_object_object_add(o, "observe_vm_reads_total",
	                       json_object_new_int64((int64_t)oc->reads_total));
	json_object_object_add(o, "observe_vms_carried_total",
	                       json_object_new_int64((int64_t)oc->carried_total));
	json_object_object_add(o, "observe_deferred_total",
	                       json_object_new_int64((int64_t)oc->deferred_total));
	json_object_object_add(o, "observe_over_cap_total",
	                       json_object_new_int64((int64_t)oc->over_cap_total));
	json_object_object_add(o, "observe_walks_total",
	                       json_object_new_int64((int64_t)oc->walks_total));
	json_object_object_add(o, "observe_walk_max_ms", json_object_new_double(oc->walk_max_ms));
	json_object_object_add(o, "observe_walks_over_5ms_total",
	                       json_object_new_int64((int64_t)oc->walks_over_hold_total));
	json_object_object_add(o, "observe_walks_skipped_total",
	                       json_object_new_int64((int64_t)oc->walks_skipped_total));
}

/*
 * Each lever as the host's capability probe found it (docs/protocol.md "levers"): after the
 * scan tunables line, whose read probed them afresh, so the two agree.
 */
static json_object *
handlers_levers(struct daemon *d)
{
	struct host_lever levers[HOST_LEVER_NR];
	json_object *arr = json_object_new_array();

	host_levers_get(d->host, d->snap != NULL ? d->snap->caps : 0, levers);
	for (int i = 0; i < HOST_LEVER_NR; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(host_cap_name(i)));
		json_object_object_add(
		    o, "state", json_object_new_string(host_lever_state_name(levers[i].state)));
		json_object_object_add(o, "reason", json_object_new_string(levers[i].reason));
		json_object_array_add(arr, o);
	}
	return arr;
}

static enum proto_status
h_status(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	struct json_object *o = json_object_new_object(), *smp = json_object_new_object();
	struct control_stats cs;
	struct host_observe_cost oc;
	int fault = 0, place = 0;

	control_get_stats(d->ctl, &cs);
	for (int i = 0; d->snap && i < d->snap->nr_vms; i++) {
		const char *why;
		const char *src = d->host->ops->sampling_source(d->host, d->snap->vms[i].id, &why);

		if (strcmp(src, "fault-stats") == 0)
			fault++;
		else
			place++;
	}
	json_object_object_add(smp, "fault-stats", json_object_new_int(fault));
	json_object_object_add(smp, "placement-only", json_object_new_int(place));
	json_object_object_add(o, "version", json_object_new_string(vnumad_version()));
	json_object_object_add(o, "backend", json_object_new_string(d->backend));
	if (d->host->ops->describe != NULL)
		json_object_object_add(o, "host",
		                       json_object_new_string(d->host->ops->describe(d->host)));
	if (d->host->ops->observe_cost != NULL && d->host->ops->observe_cost(d->host, &oc) == 0) {
		json_object_object_add(o, "observe_opens_per_round",
		                       json_object_new_int64((int64_t)oc.opens));
		json_object_object_add(o, "observe_reads_per_round",
		                       json_object_new_int64((int64_t)oc.reads));
		json_object_object_add(o, "observe_ms_per_round", json_object_new_double(oc.ms));
		json_object_object_add(o, "observe_kept_fds", json_object_new_int(oc.kept_fds));
		handlers_observe_budget(o, &oc);
	}
	json_object_object_add(o, "uptime_s",
	                       json_object_new_double(daemon_wall_s() - d->started_wall));
	json_object_object_add(o, "host_time_s",
	                       json_object_new_double(d->host->ops->now(d->host)));
	json_object_object_add(o, "rounds", json_object_new_int64((int64_t)d->rounds));
	json_object_object_add(o, "paused", json_object_new_boolean(d->paused));
	json_object_object_add(o, "sample_period_s",
	                       json_object_new_double(d->cfg.sample_period_s));
	json_object_object_add(o, "rebalance_period_s",
	                       json_object_new_double(d->cfg.rebalance_period_s));
	json_object_object_add(o, "nr_vms", json_object_new_int(d->snap ? d->snap->nr_vms : 0));
	json_object_object_add(o, "nr_nodes", json_object_new_int(d->snap ? d->snap->nr_nodes : 0));
	json_object_object_add(o, "config", json_object_new_string(d->config_path));
	json_object_object_add(o, "socket", json_object_new_string(d->cfg.socket_path));
	json_object_object_add(o, "sampling", smp);
	json_object_object_add(o, "clients", json_object_new_int(cs.clients));
	json_object_object_add(o, "scan_tunables", scan_lever_status(d));
	json_object_object_add(o, "levers", handlers_levers(d));
	/* where the metrics go (the port the system chose for port 0); "" = off */
	json_object_object_add(o, "metrics_listen",
	                       json_object_new_string(metrics_export_address(d)));
	json_object_object_add(o, "metrics_textfile",
	                       json_object_new_string(d->cfg.metrics_textfile));
	*data = o;
	return PROTO_OK;
}

static enum proto_status
h_list(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	struct json_object *arr = json_object_new_array();

	for (int i = 0; d->snap && i < d->snap->nr_vms; i++)
		json_object_array_add(arr, handlers_vm_row(d, &d->snap->vms[i]));
	*data = json_object_new_object();
	json_object_object_add(*data, "vms", arr);
	return PROTO_OK;
}

static enum proto_status
h_nodeinfo(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	struct json_object *arr = json_object_new_array();

	for (int n = 0; d->snap && n < d->snap->nr_nodes; n++) {
		struct json_object *o = json_object_new_object(), *dist = json_object_new_array();
		int vcpus = 0;
		double load = 0;

		for (int i = 0; i < d->snap->nr_vms; i++)
			for (int v = 0; v < d->snap->vms[i].nr_vcpus; v++)
				if (d->snap->vms[i].vcpus[v].node == n) {
					vcpus++;
					load += d->snap->vms[i].vcpus[v].cpu_use;
				}
		for (int m = 0; m < d->snap->nr_nodes; m++)
			json_object_array_add(
			    dist, json_object_new_int(snapshot_distance(d->snap, n, m)));
		json_object_object_add(o, "node", json_object_new_int(d->snap->nodes[n].id));
		json_object_object_add(o, "cpus", json_object_new_int(d->snap->nodes[n].nr_cpus));
		json_object_object_add(
		    o, "mem_total_mib",
		    json_object_new_int64((int64_t)d->snap->nodes[n].mem_total_mib));
		json_object_object_add(
		    o, "mem_free_mib",
		    json_object_new_int64((int64_t)d->snap->nodes[n].mem_free_mib));
		json_object_object_add(o, "vcpus", json_object_new_int(vcpus));
		json_object_object_add(o, "cpu_load", json_object_new_double(load));
		json_object_object_add(o, "distance", dist);
		json_object_array_add(arr, o);
	}
	*data = json_object_new_object();
	json_object_object_add(*data, "nodes", arr);
	return PROTO_OK;
}

const struct snap_vm *
handlers_arg_vm(struct daemon *d, struct json_object *args, char *err, size_t errlen,
                enum proto_status *st)
{
	const char *name = NULL;
	const struct snap_vm *vm;

	if (proto_arg_string(args, "vm", &name) < 0) {
		snprintf(err, errlen, "vm: missing (a VM name or id)");
		*st = PROTO_BAD_REQUEST;
		return NULL;
	}
	vm = daemon_snap_vm(d, name);
	if (vm == NULL) {
		snprintf(err, errlen, "no VM '%s'", name);
		*st = PROTO_NOT_FOUND;
	}
	return vm;
}

static enum proto_status
h_stats(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	struct json_object *o, *skip;
	struct engine_counters ec;
	enum proto_status st;

	if (json_object_object_get_ex(args, "vm", NULL)) {
		const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
		struct dvm *v;

		if (vm == NULL)
			return st;
		if ((v = daemon_vm(d, vm->id)) == NULL) {
			snprintf(err, errlen, "%s has no counters yet", vm->name);
			return PROTO_CONFLICT;
		}
		*data = json_object_new_object();
		json_object_object_add(*data, "vm", json_object_new_string(vm->name));
		json_object_object_add(*data, "counters", handlers_counters(&v->c));
		return PROTO_OK;
	}
	o = handlers_counters(&d->total);
	skip = json_object_new_object();
	for (int i = 0; i < DSKIP_MAX; i++)
		json_object_object_add(skip, daemon_skip_names[i],
		                       json_object_new_int64((int64_t)d->skipped[i]));
	json_object_object_add(o, "rounds", json_object_new_int64((int64_t)d->rounds));
	json_object_object_add(
	    o, "round_ms_avg",
	    json_object_new_double(d->rounds ? d->round_ms_sum / (double)d->rounds : 0));
	json_object_object_add(o, "round_ms_max", json_object_new_double(d->round_ms_max));
	json_object_object_add(o, "vms_skipped", skip);
	json_object_object_add(o, "actions_refused",
	                       json_object_new_int64((int64_t)d->actions_refused));
	engine_report_counters(d->eng, &ec);
	json_object_object_add(o, "vms_rejected", json_object_new_int64((int64_t)ec.vms_rejected));
	json_object_object_add(o, "pins_unrecorded",
	                       json_object_new_int64((int64_t)d->pins_unrecorded));
	*data = json_object_new_object();
	json_object_object_add(*data, "counters", o);
	return PROTO_OK;
}

static enum proto_status
h_events(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	int64_t since = 0, limit = 100;
	bool follow = false, from = false;
	int vm_id = -1;
	uint64_t next, oldest = events_oldest(&d->events);
	enum proto_status st;
	struct json_object *events;

	from = json_object_object_get_ex(args, "since", NULL);
	if (proto_arg_int(args, "since", &since) == -EINVAL || since < 0 ||
	    proto_arg_int(args, "limit", &limit) == -EINVAL || limit < 0 ||
	    proto_arg_bool(args, "follow", &follow) == -EINVAL) {
		snprintf(err, errlen, "since and limit: non-negative integers; follow: a boolean");
		return PROTO_BAD_REQUEST;
	}
	if (json_object_object_get_ex(args, "vm", NULL)) {
		const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);

		if (vm == NULL)
			return st;
		vm_id = vm->id;
	}
	/*
	 * From `since` on (oldest first, at most limit; a followed stream: every one, so the
	 * live lines that follow leave no gap), or else the newest `limit`, as journalctl -n.
	 */
	if (from)
		events = events_query(&d->events, (uint64_t)since, vm_id, follow ? 0 : (int)limit,
		                      &next);
	else
		events = events_query_newest(&d->events, vm_id, (int)limit, &next);
	*data = json_object_new_object();
	json_object_object_add(*data, "events", events);
	json_object_object_add(*data, "next", json_object_new_int64((int64_t)next));
	/* asked for events the ring no longer holds: how many, and from which seq on it has */
	json_object_object_add(*data, "dropped",
	                       json_object_new_int64(from && since > 0 && (uint64_t)since < oldest
	                                                 ? (int64_t)(oldest - (uint64_t)since)
	                                                 : 0));
	json_object_object_add(*data, "oldest", json_object_new_int64((int64_t)oldest));
	json_object_object_add(*data, "kept", json_object_new_int64(EVENTS_RING));
	if (follow)
		control_client_follow(cl, vm_id);
	return PROTO_OK;
}

static enum proto_status
h_pause(HANDLER_ARGS)
{
	struct daemon *d = ctx;

	if (!d->paused)
		daemon_event(d, -1, NULL, "pause", "admin", 0, "paused: deciding, not acting");
	d->paused = true;
	*data = json_object_new_object();
	json_object_object_add(*data, "paused", json_object_new_boolean(true));
	return PROTO_OK;
}

static enum proto_status
h_resume(HANDLER_ARGS)
{
	struct daemon *d = ctx;

	if (d->paused)
		daemon_event(d, -1, NULL, "resume", "admin", 0, "resumed");
	d->paused = false;
	*data = json_object_new_object();
	json_object_object_add(*data, "paused", json_object_new_boolean(false));
	return PROTO_OK;
}

static enum proto_status
h_reload(HANDLER_ARGS)
{
	struct daemon *d = ctx;

	if (daemon_reload(d, err, errlen) < 0)
		return PROTO_BAD_REQUEST;
	*data = json_object_new_object();
	json_object_object_add(*data, "config", json_object_new_string(d->config_path));
	return PROTO_OK;
}

/*
 * `policy` is listed as read-only: showing is for everyone, and the handler itself refuses a
 * change from a read-only peer (403).
 */
#define H_POLICY_ARGS                                                                              \
	"vm:s scope:s mode:si nodes:si placement:si migrate:si rate:si priority:si group:si "      \
	"reset:b"

const struct control_command daemon_commands[] = {
    {"status", false, h_status, ""},
    {"list", false, h_list, ""},
    {"vminfo", false, h_vminfo, "vm:s"},
    {"nodeinfo", false, h_nodeinfo, ""},
    {"policy", false, h_policy, H_POLICY_ARGS},
    {"stats", false, h_stats, "vm:s"},
    {"events", false, h_events, "since:i limit:i follow:b vm:s"},
    {"explain", false, h_explain, "vm:s"},
    {"place", false, h_place, "vcpus:i memory_mib:i cells:i reserve:b"},
    {"pin", true, h_pin, "vm:s vcpu:i node:si"},
    {"unpin", true, h_unpin, "vm:s vcpu:i"},
    {"migrate", true, h_migrate, "vm:s node:si force:b"},
    {"pause", true, h_pause, ""},
    {"resume", true, h_resume, ""},
    {"reload", true, h_reload, ""},
    {NULL, false, NULL, NULL},
};

/*
 * metrics_collect.c - a struct metrics_view from the daemon's last round (metrics.h): the same
 * figures `status`, `list`, `vminfo` and `stats` give, read on the main thread.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/handlers.h"
#include "agent/metrics.h"
#include "agent/version.h"
#include "policy/engine.h"

#define METRICS_BYTES_PER_MIB (1024ull * 1024ull)

static void
metrics_collect_nodes(const struct snapshot *snap, struct metrics_view *mv)
{
	int64_t room;

	mv->nr_nodes = snap->nr_nodes;
	mv->nodes = xcalloc((size_t)snap->nr_nodes + 1, sizeof(*mv->nodes));
	for (int n = 0; n < snap->nr_nodes; n++) {
		struct metrics_node *nd = &mv->nodes[n];

		nd->id = snap->nodes[n].id;
		nd->nr_cpus = snap->nodes[n].nr_cpus;
		nd->mem_total_bytes = snap->nodes[n].mem_total_mib * METRICS_BYTES_PER_MIB;
		nd->mem_free_bytes = snap->nodes[n].mem_free_mib * METRICS_BYTES_PER_MIB;
		room = (int64_t)snap->nodes[n].mem_free_mib - engine_headroom_mib(&snap->nodes[n]);
		nd->place_free_bytes = room > 0 ? (uint64_t)room * METRICS_BYTES_PER_MIB : 0;
	}
	for (int i = 0; i < snap->nr_vms; i++)
		for (int v = 0; v < snap->vms[i].nr_vcpus; v++) {
			int n = snap->vms[i].vcpus[v].node;

			if (n < 0 || n >= snap->nr_nodes)
				continue;
			mv->nodes[n].vcpus++;
			mv->nodes[n].cpu_load += snap->vms[i].vcpus[v].cpu_use;
		}
	for (int n = 0; n < snap->nr_nodes; n++)
		mv->nodes[n].place_free_vcpus = mv->nodes[n].nr_cpus > mv->nodes[n].vcpus
		                                    ? mv->nodes[n].nr_cpus - mv->nodes[n].vcpus
		                                    : 0;
}

/* One VM's row. */
static void
metrics_collect_vm(struct daemon *d, const struct snap_vm *vm, struct metrics_vm *mvm)
{
	const struct snapshot *snap = d->snap;
	const struct dvm *dv = daemon_vm(d, vm->id);
	struct engine_vm_report r;
	uint64_t where = 0;
	double age_s;

	engine_report_vm(d->eng, vm->id, &r);
	mvm->id = vm->id;
	mvm->name = xstrdup(vm->name);
	mvm->uuid = xstrdup(vm->uuid);
	mvm->mode = vm_policy_mode_name(vm->policy.mode);
	mvm->placement = vm_policy_placement_name(vm->policy.placement);
	mvm->source = dv != NULL && dv->policy_source != NULL ? dv->policy_source : "default";
	mvm->state = handlers_vm_state(d, vm, &r);
	mvm->mem_size_bytes = vm->mem_mib * METRICS_BYTES_PER_MIB;
	mvm->node_bytes = xcalloc((size_t)snap->nr_nodes + 1, sizeof(*mvm->node_bytes));
	mvm->node_vcpus = xcalloc((size_t)snap->nr_nodes + 1, sizeof(*mvm->node_vcpus));
	for (int v = 0; v < vm->nr_vcpus; v++) {
		int n = vm->vcpus[v].node;

		where |= nodemask_of(n);
		if (n >= 0 && n < snap->nr_nodes)
			mvm->node_vcpus[n]++;
	}
	for (int n = 0; n < snap->nr_nodes; n++)
		mvm->node_bytes[n] = vm->resident_mib[n] * METRICS_BYTES_PER_MIB;
	mvm->memory_locality = handlers_memory_locality(snap, vm, where);
	mvm->fault_locality = daemon_fault_locality(dv, snap->now_s, r.scan_pass_s, &age_s);
	mvm->strength = r.strength;
	mvm->pending_bytes = vm->mig_pending_mib * METRICS_BYTES_PER_MIB;
	mvm->kernel_known = vm->kernel_moved_known;
	if (dv != NULL)
		mvm->c = dv->c;
}

void
metrics_view_collect(struct daemon *d, struct metrics_view *mv)
{
	struct engine_counters ec;
	double size = 0, local = 0, faults_all = 0, faults_local = 0;

	memset(mv, 0, sizeof(*mv));
	mv->version = vnumad_version();
	mv->backend = d->backend != NULL ? d->backend : "";
	mv->default_mode = vm_policy_mode_name(d->cfg.default_mode);
	mv->paused = d->paused;
	mv->rounds = d->rounds;
	mv->round_seconds_total = d->round_ms_sum / 1000.0;
	mv->decision = d->decide_hist;
	mv->total = d->total;
	memcpy(mv->skipped, d->skipped, sizeof(mv->skipped));
	mv->actions_refused = d->actions_refused;
	mv->migrate_rate_bytes_s = d->cfg.migrate_rate_mib_s * (double)METRICS_BYTES_PER_MIB;
	engine_report_counters(d->eng, &ec);
	mv->rate_limited_rounds = ec.rate_limited_rounds;
	mv->rate_deferred_vms = ec.rate_deferred_vms;
	mv->render_s = -1;
	mv->fault_locality = -1;
	mv->memory_locality = 1;
	if (d->snap == NULL)
		return;
	mv->caps = d->snap->caps;
	metrics_collect_nodes(d->snap, mv);
	mv->nr_vms = d->snap->nr_vms;
	mv->vms = xcalloc((size_t)mv->nr_vms + 1, sizeof(*mv->vms));
	for (int i = 0; i < mv->nr_vms; i++) {
		const struct dvm *dv = daemon_vm(d, d->snap->vms[i].id);

		metrics_collect_vm(d, &d->snap->vms[i], &mv->vms[i]);
		/* weighted by each VM's size, as top's header */
		size += (double)d->snap->vms[i].mem_mib;
		local += mv->vms[i].memory_locality * (double)d->snap->vms[i].mem_mib;
		if (mv->vms[i].fault_locality < 0 || dv == NULL)
			continue;
		/* weighted by each VM's recent faults, as if all were one VM */
		faults_all += dv->recent_all;
		faults_local += dv->recent_local;
	}
	mv->memory_locality = size > 0 ? local / size : 1;
	mv->fault_locality = faults_all > 0 ? faults_local / faults_all : -1;
}

void
metrics_view_free(struct metrics_view *mv)
{
	for (int i = 0; i < mv->nr_vms; i++) {
		free(mv->vms[i].name);
		free(mv->vms[i].uuid);
		free(mv->vms[i].node_bytes);
		free(mv->vms[i].node_vcpus);
	}
	free(mv->vms);
	free(mv->nodes);
	memset(mv, 0, sizeof(*mv));
}

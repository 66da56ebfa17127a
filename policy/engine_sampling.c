/*
 * engine_sampling.c - per-VM sampling intensity.
 *
 * The intensity is set through the time one scan pass over the VM's RAM should take: it
 * halves each round (faster sampling) while the VM is not converged or its CPU load changed
 * (a new phase may have moved its working set), down to ENGINE_SCAN_PASS_MIN_S, and doubles
 * while it is converged, up to ENGINE_SCAN_PASS_MAX_S; the resulting MiB/s is clamped to
 * [ENGINE_SCAN_FLOOR_MIB_S, ENGINE_SCAN_CEIL_MIB_S].  A failed migration doubles the pass
 * time (numa/core: slow down scanning when migrations fail).
 *
 * A VM whose groups are all compact, with every vCPU and all memory on its home nodes, has
 * nothing left to learn from faults (every access is local whatever its pattern): it is parked
 * at intensity 0 (on a real host: its cpuset.mems confined to its home, which stops the kernel
 * scanning it, BRIEF 1.5) until its placement changes.
 *
 * Sampling is observation, not action: advisory VMs are sampled like auto ones; manual VMs at
 * the floor; VMs with mode off not at all.
 */
#include <math.h>

#include "policy/engine_internal.h"

/* Memory outside the home nodes at or below which a compact VM counts as settled, MiB. */
#define ENGINE_SETTLED_AWAY_MIB 64

static bool
engine_vm_parked(const struct eng_vm *ev, const struct snap_vm *vm, int nr_nodes)
{
	uint64_t home = 0, away = 0;

	if (!engine_vm_acts(vm) || vm->mig_pending_mib > 0)
		return false;
	for (int i = 0; i < ev->nr_groups; i++) {
		const struct eng_group *g = &ev->groups[i];

		if (g->spanning || g->home == 0)
			return false;
		for (int k = 0; k < g->nr_vcpus; k++)
			if (!nodemask_test(g->home, ev->vcpu_node[g->vcpus[k]]))
				return false;
		home |= g->home;
	}
	for (int n = 0; n < nr_nodes; n++)
		if (!nodemask_test(home, n))
			away += vm->resident_mib[n];
	return away <= ENGINE_SETTLED_AWAY_MIB;
}

static bool
engine_vm_spanning(const struct eng_vm *ev)
{
	for (int i = 0; i < ev->nr_groups; i++)
		if (ev->groups[i].spanning)
			return true;
	return false;
}

/*
 * Converged: most faults local and, for a compact VM, concentrated on one node (a spanning
 * VM is spread by design: locality alone says it is where it should be).
 */
static bool
engine_vm_converged(const struct eng_vm *ev)
{
	return (engine_vm_spanning(ev) || ev->strength >= ENGINE_STRONG) &&
	       ev->local_permille >= ENGINE_CONVERGED_LOCAL_PERMILLE;
}

static double
engine_scan_want(struct eng_vm *ev, const struct snap_vm *vm, int nr_nodes)
{
	double sum = 0, mib_s;
	bool load_changed;

	for (int v = 0; v < ev->nr_vcpus; v++)
		sum += ev->util_avg[v];
	/* A change of a CPU and a fifth counts as a load change. */
	load_changed = ev->sampling_set && fabs(sum - ev->util_prev) >= 1.0 + 0.2 * ev->util_prev;
	ev->util_prev = (load_changed || !ev->sampling_set) ? sum : ev->util_prev;
	if (vm->policy.mode == VM_POLICY_MODE_OFF)
		return 0;
	if (ev->scan_pass_s <= 0)
		ev->scan_pass_s = ENGINE_SCAN_PASS_MIN_S;
	if (vm->mig_failed_mib > 0 || engine_vm_converged(ev))
		ev->scan_pass_s *= 2;
	else
		ev->scan_pass_s /= 2;
	if (load_changed)
		ev->scan_pass_s = ENGINE_SCAN_PASS_MIN_S;
	if (ev->scan_pass_s < ENGINE_SCAN_PASS_MIN_S)
		ev->scan_pass_s = ENGINE_SCAN_PASS_MIN_S;
	if (ev->scan_pass_s > ENGINE_SCAN_PASS_MAX_S)
		ev->scan_pass_s = ENGINE_SCAN_PASS_MAX_S;
	/* A spanning VM keeps watching: its vCPUs follow its memory, which may move (phases). */
	if (engine_vm_spanning(ev) && ev->scan_pass_s > ENGINE_SCAN_PASS_SPAN_MAX_S)
		ev->scan_pass_s = ENGINE_SCAN_PASS_SPAN_MAX_S;
	if (vm->policy.mode == VM_POLICY_MODE_MANUAL)
		return ENGINE_SCAN_FLOOR_MIB_S;
	if (engine_vm_parked(ev, vm, nr_nodes))
		return 0;
	mib_s = (double)vm->mem_mib / ev->scan_pass_s;
	if (mib_s < ENGINE_SCAN_FLOOR_MIB_S)
		mib_s = ENGINE_SCAN_FLOOR_MIB_S;
	if (mib_s > ENGINE_SCAN_CEIL_MIB_S)
		mib_s = ENGINE_SCAN_CEIL_MIB_S;
	return floor(mib_s);
}

void
engine_sampling(struct engine *e, const struct snapshot *snap, struct plan *plan)
{
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct eng_vm *ev = engine_vm_lookup(e, vm->id);
		struct plan_sampling *s;
		double want;

		if (ev == NULL)
			continue;
		want = engine_scan_want(ev, vm, snap->nr_nodes);
		if (want == ev->scan_mib_s && ev->sampling_set)
			continue;
		if (!(snap->caps & HOST_CAP_VM_SAMPLING)) {
			/* The kernel's adaptive scan period decides: only say what it wanted. */
			ev->levers_wanted |= HOST_CAP_VM_SAMPLING;
			ev->scan_mib_s = want;
			ev->sampling_set = true;
			continue;
		}
		s = plan_add_sampling(plan, vm->id, want);
		plan_reason_set(&s->why, "sampling", want - ev->scan_mib_s,
		                "%s: strength %d, %d%% of faults local, pass %.0f s", vm->name,
		                ev->strength, ev->local_permille / 10, ev->scan_pass_s);
		ev->scan_mib_s = want;
		ev->sampling_set = true;
	}
}

/*
 * engine.c - vnumad's balancer, first version: a home node (or node set) per VM chosen by fit
 * and by where its memory and faults are, vCPUs pinned there, guest memory moved home under a
 * host-wide rate limit and a node-fullness guard, sampling reduced once a VM is settled.
 *
 * The full engine (buddy groups, directed convergence, convergence-strength pacing) replaces
 * the decision stages here; the snapshot/plan contract stays as it is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model.h"

/* Seconds between decisions (the daemon's default rebalance period). */
#define ENGINE_PERIOD_S 1.0
/* Host-wide migration budget, MiB/s: a quarter of one node's copy bandwidth on a typical
 * 2-socket server, so migration never starves the guests of memory bandwidth. */
#define ENGINE_RATE_MIB_S 512.0
/* Keep this share of a node's memory free when moving memory into it (headroom). */
#define ENGINE_HEADROOM_PCT 5
/* Sampling intensity, MiB/s of guest RAM scanned: while placing, and once settled. */
#define ENGINE_SCAN_ACTIVE_MIB_S  128.0
#define ENGINE_SCAN_SETTLED_MIB_S 16.0

struct engine_vm {
	int id;
	uint64_t home; /* node mask; 0 = not placed yet */
	int nr_cells;  /* cells placed one per node (0 = compact) */
	int cell_node[UTIL_MAX_NODES];
	bool seen;
	double scan_mib_s;
};

struct engine {
	struct engine_vm *vms;
	size_t nr_vms, cap_vms;
	int *vcpus_homed;  /* per node: vCPUs whose home is the node (this round) */
	int64_t *mem_free; /* per node: free MiB after reservations (this round) */
};

static void *
engine_create(const struct balancer_args *args)
{
	return xcalloc(1, sizeof(struct engine));
}

static void
engine_destroy(void *state)
{
	struct engine *e = state;

	if (e == NULL)
		return;
	free(e->vms);
	free(e->vcpus_homed);
	free(e->mem_free);
	free(e);
}

static struct engine_vm *
engine_vm_get(struct engine *e, int id)
{
	struct engine_vm *ev;

	for (size_t i = 0; i < e->nr_vms; i++)
		if (e->vms[i].id == id)
			return &e->vms[i];
	util_array_reserve((void **)&e->vms, &e->cap_vms, e->nr_vms + 1, sizeof(*ev));
	ev = &e->vms[e->nr_vms++];
	memset(ev, 0, sizeof(*ev));
	ev->id = id;
	return ev;
}

/* Forget VMs that left; mark all unseen for the next round. */
static void
engine_vms_prune(struct engine *e)
{
	size_t keep = 0;

	for (size_t i = 0; i < e->nr_vms; i++)
		if (e->vms[i].seen) {
			e->vms[keep] = e->vms[i];
			e->vms[keep++].seen = false;
		}
	e->nr_vms = keep;
}

static uint64_t
engine_vm_faults(const struct snap_vm *vm, int node)
{
	uint64_t f = 0;

	for (int v = 0; v < vm->nr_vcpus; v++)
		f += vm->vcpus[v].faults_private[node] + vm->vcpus[v].faults_shared[node];
	return f;
}

/* Capacity view for this round: vCPUs already homed and memory free per node. */
static void
engine_capacity_init(struct engine *e, const struct snapshot *snap)
{
	e->vcpus_homed = xreallocarray(e->vcpus_homed, (size_t)snap->nr_nodes, sizeof(int));
	e->mem_free = xreallocarray(e->mem_free, (size_t)snap->nr_nodes, sizeof(int64_t));
	for (int n = 0; n < snap->nr_nodes; n++) {
		e->vcpus_homed[n] = 0;
		e->mem_free[n] =
		    (int64_t)snap->nodes[n].mem_free_mib -
		    (int64_t)(snap->nodes[n].mem_total_mib * ENGINE_HEADROOM_PCT / 100);
	}
	for (int i = 0; i < snap->nr_vms; i++) {
		struct engine_vm *ev = engine_vm_get(e, snap->vms[i].id);

		for (int n = 0; ev->home && n < snap->nr_nodes; n++)
			if (nodemask_test(ev->home, n))
				e->vcpus_homed[n] +=
				    snap->vms[i].nr_vcpus / nodemask_weight(ev->home);
	}
}

/* Memory the VM still needs on node n if homed there. */
static int64_t
engine_mem_need(const struct snap_vm *vm, int n)
{
	return (int64_t)vm->mem_mib - (int64_t)vm->resident_mib[n];
}

/* Best single node for the VM, or -1 when none fits. */
static int
engine_pick_node(struct engine *e, const struct snapshot *snap, const struct snap_vm *vm)
{
	int best = -1;
	double best_score = 0;

	for (int n = 0; n < snap->nr_nodes; n++) {
		double score;

		if (!nodemask_test(vm->policy.nodes, n))
			continue;
		if (e->vcpus_homed[n] + vm->nr_vcpus > snap->nodes[n].nr_cpus ||
		    engine_mem_need(vm, n) > e->mem_free[n])
			continue;
		/* Prefer where memory and faults already are, then the emptiest node. */
		score = (double)vm->resident_mib[n] + (double)engine_vm_faults(vm, n) / 512.0 * 2 +
		        (double)(snap->nodes[n].nr_cpus - e->vcpus_homed[n]) * 1e-3;
		if (best < 0 || score > best_score) {
			best = n;
			best_score = score;
		}
	}
	return best;
}

/* Spread a VM that fits no single node over the nearest nodes around the emptiest one. */
static uint64_t
engine_pick_span(struct engine *e, const struct snapshot *snap, const struct snap_vm *vm, int parts)
{
	int start = -1;
	uint64_t mask = 0;

	for (int n = 0; n < snap->nr_nodes; n++)
		if (nodemask_test(vm->policy.nodes, n) &&
		    (start < 0 || e->mem_free[n] > e->mem_free[start]))
			start = n;
	if (start < 0)
		return 0;
	mask = nodemask_of(start);
	while (nodemask_weight(mask) < parts) {
		int next = -1;

		for (int n = 0; n < snap->nr_nodes; n++) {
			if (nodemask_test(mask, n) || !nodemask_test(vm->policy.nodes, n))
				continue;
			if (next < 0 || snapshot_distance(snap, start, n) <
			                    snapshot_distance(snap, start, next))
				next = n;
		}
		if (next < 0)
			break;
		mask |= nodemask_of(next);
	}
	return mask;
}

static void
engine_place_vm(struct engine *e, const struct snapshot *snap, const struct snap_vm *vm,
                struct engine_vm *ev, struct plan *plan)
{
	int node = engine_pick_node(e, snap, vm);
	int parts = vm->nr_cells > 1 ? vm->nr_cells : 2;
	int k = 0;

	if (node >= 0 && vm->policy.placement == VM_POLICY_PLACEMENT_COMPACT) {
		ev->home = nodemask_of(node);
		ev->nr_cells = 0;
	} else {
		ev->home = engine_pick_span(e, snap, vm, parts);
		ev->nr_cells = nodemask_weight(ev->home) == vm->nr_cells ? vm->nr_cells : 0;
	}
	if (ev->home == 0)
		return;
	for (int n = 0; n < snap->nr_nodes; n++)
		if (nodemask_test(ev->home, n)) {
			if (k < UTIL_MAX_NODES)
				ev->cell_node[k++] = n;
			e->vcpus_homed[n] += vm->nr_vcpus / nodemask_weight(ev->home);
			e->mem_free[n] -= (int64_t)vm->mem_mib / nodemask_weight(ev->home);
		}
	if (vm->policy.mode != VM_POLICY_MODE_AUTO)
		return;
	for (int v = 0; v < vm->nr_vcpus; v++) {
		uint64_t mask =
		    ev->nr_cells ? nodemask_of(ev->cell_node[vm->vcpu_cell[v]]) : ev->home;
		struct plan_pin *pin;

		if (vm->vcpus[v].allowed_nodes == mask)
			continue;
		pin = plan_add_pin(plan, vm->id, v, mask);
		plan_reason_set(&pin->why, "home", 0, "home nodes of %s chosen by fit", vm->name);
	}
}

/* Move memory resident outside the VM's home (per cell when placed by cells). */
static double
engine_move_memory(const struct snapshot *snap, const struct snap_vm *vm,
                   const struct engine_vm *ev, double budget_mib, struct plan *plan)
{
	int dst = nodemask_first(ev->home);

	if (vm->policy.mode != VM_POLICY_MODE_AUTO || !vm->policy.migrate || ev->home == 0 ||
	    ev->nr_cells || nodemask_weight(ev->home) != 1 || vm->mig_pending_mib > 0)
		return budget_mib;
	if (vm->policy.rate_kib_s && budget_mib > vm->policy.rate_kib_s / 1024.0 * ENGINE_PERIOD_S)
		budget_mib = vm->policy.rate_kib_s / 1024.0 * ENGINE_PERIOD_S;
	for (int n = 0; n < snap->nr_nodes && budget_mib >= 2; n++) {
		uint64_t amount = vm->resident_mib[n];
		struct plan_mem_move *mv;

		if (n == dst || amount == 0)
			continue;
		if (amount > budget_mib)
			amount = (uint64_t)budget_mib;
		mv = plan_add_move(plan, vm->id, n, dst, amount);
		plan_reason_set(&mv->why, "home-memory", (double)amount, "%llu MiB on node %d",
		                (unsigned long long)vm->resident_mib[n], n);
		budget_mib -= (double)amount;
	}
	return budget_mib;
}

/* Scan hard while a VM is being placed; barely once it is home with its memory. */
static void
engine_sampling(const struct snapshot *snap, const struct snap_vm *vm, struct engine_vm *ev,
                struct plan *plan)
{
	uint64_t away = 0;
	double want;

	for (int n = 0; n < snap->nr_nodes; n++)
		if (!nodemask_test(ev->home, n))
			away += vm->resident_mib[n];
	want = (ev->home && away == 0) ? ENGINE_SCAN_SETTLED_MIB_S : ENGINE_SCAN_ACTIVE_MIB_S;
	if (want != ev->scan_mib_s) {
		struct plan_sampling *s = plan_add_sampling(plan, vm->id, want);

		plan_reason_set(&s->why, "sampling", 0, "%llu MiB away from home",
		                (unsigned long long)away);
		ev->scan_mib_s = want;
	}
}

static int
engine_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct engine *e = state;
	double budget = ENGINE_RATE_MIB_S * ENGINE_PERIOD_S;

	if (e == NULL)
		return -EINVAL;
	engine_capacity_init(e, snap);
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct engine_vm *ev = engine_vm_get(e, vm->id);

		ev->seen = true;
		if (vm->policy.mode == VM_POLICY_MODE_OFF ||
		    vm->policy.mode == VM_POLICY_MODE_MANUAL)
			continue;
		if (ev->home == 0)
			engine_place_vm(e, snap, vm, ev, plan);
		budget = engine_move_memory(snap, vm, ev, budget, plan);
		engine_sampling(snap, vm, ev, plan);
	}
	engine_vms_prune(e);
	plan->next_call_s = ENGINE_PERIOD_S;
	return 0;
}

const struct balancer_ops vnumad_balancer_ops = {
    .name = "vnumad",
    .description = "vnumad: home nodes by fit, paced memory moves, adaptive sampling",
    .host_flags = 0,
    .default_scan_mib_s = ENGINE_SCAN_ACTIVE_MIB_S,
    .create = engine_create,
    .decide = engine_decide,
    .destroy = engine_destroy,
};

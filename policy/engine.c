/*
 * engine.c - vnumad's balancer: the round that runs the stages of engine_internal.h over a
 * snapshot, and the engine's per-VM state (a hash by VM id, pruned when VMs leave).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"

/* A node counts as CPU-saturated when its vCPUs use this share of its CPUs. */
#define ENGINE_SATURATED 0.97
/* vCPUs using less than this share of a CPU do not count as runnable for saturation. */
#define ENGINE_RUNNABLE_USE 0.05

static size_t
engine_hash(int id, size_t cap)
{
	return ((uint32_t)id * 2654435761u) & (cap - 1);
}

struct eng_vm *
engine_vm_lookup(struct engine *e, int id)
{
	if (e->cap == 0)
		return NULL;
	for (size_t i = engine_hash(id, e->cap);; i = (i + 1) & (e->cap - 1)) {
		if (e->vms[i] == NULL)
			return NULL;
		if (e->vms[i]->id == id)
			return e->vms[i];
	}
}

static void
engine_table_insert(struct eng_vm **tab, size_t cap, struct eng_vm *ev)
{
	size_t i = engine_hash(ev->id, cap);

	while (tab[i] != NULL)
		i = (i + 1) & (cap - 1);
	tab[i] = ev;
}

/* Rebuild the table with the VMs still seen (and room for at least `want` entries). */
static void
engine_table_rebuild(struct engine *e, size_t want)
{
	size_t cap = 16;
	struct eng_vm **tab;

	while (cap < want * 2)
		cap *= 2;
	tab = xcalloc(cap, sizeof(*tab));
	e->nr = 0;
	for (size_t i = 0; i < e->cap; i++) {
		struct eng_vm *ev = e->vms[i];

		if (ev == NULL)
			continue;
		if (!ev->seen) {
			engine_vm_free(ev);
			continue;
		}
		engine_table_insert(tab, cap, ev);
		e->nr++;
	}
	free(e->vms);
	e->vms = tab;
	e->cap = cap;
}

static struct eng_vm *
engine_vm_add(struct engine *e, const struct snapshot *snap, const struct snap_vm *vm)
{
	struct eng_vm *ev = xcalloc(1, sizeof(*ev));

	if ((e->nr + 1) * 2 > e->cap)
		engine_table_rebuild(e, e->nr + 1);
	ev->id = vm->id;
	ev->seen = true;
	engine_vm_alloc(ev, vm, snap->nr_nodes);
	engine_groups_build(ev, vm, snap_vm_by_cells(snap, vm));
	engine_reserve_claim(e, vm);
	engine_table_insert(e->vms, e->cap, ev);
	e->nr++;
	return ev;
}

static void *
engine_create(const struct balancer_args *args)
{
	struct engine *e = xcalloc(1, sizeof(*e));

	e->last_rebalance_s = -1e9;
	e->last_now_s = -1;
	e->rate_mib_s = args && args->rate_mib_s > 0 ? args->rate_mib_s : ENGINE_RATE_MIB_S;
	e->rebalance_period_s = args && args->rebalance_period_s > 0 ? args->rebalance_period_s
	                                                             : ENGINE_REBALANCE_PERIOD_S;
	return e;
}

static void
engine_destroy(void *state)
{
	struct engine *e = state;

	if (e == NULL)
		return;
	for (size_t i = 0; i < e->cap; i++)
		engine_vm_free(e->vms[i]);
	free(e->vms);
	free(e->node_load);
	free(e->node_slots);
	free(e->node_mem_free);
	free(e->node_mem_proj);
	free(e->gm);
	engine_validate_free(e);
	free(e);
}

/*
 * On a saturated node a vCPU's CPU use understates what it wants; scale it by runnable
 * vCPUs per CPU to estimate demand.
 */
static void
engine_node_scale(const struct snapshot *snap, double *scale)
{
	double use[UTIL_MAX_NODES] = {0};
	int busy[UTIL_MAX_NODES] = {0};

	for (int i = 0; i < snap->nr_vms; i++)
		for (int v = 0; v < snap->vms[i].nr_vcpus; v++) {
			const struct snap_vcpu *sv = &snap->vms[i].vcpus[v];

			use[sv->node] += sv->cpu_use;
			busy[sv->node] += sv->cpu_use >= ENGINE_RUNNABLE_USE;
		}
	for (int n = 0; n < snap->nr_nodes; n++) {
		int cpus = snap->nodes[n].nr_cpus;

		scale[n] = 1.0;
		if (cpus > 0 && use[n] >= ENGINE_SATURATED * cpus && busy[n] > cpus)
			scale[n] = (double)busy[n] / cpus;
	}
}

/* Observe: statistics for every VM, new state for new VMs, groups rebuilt on policy change. */
static void
engine_observe(struct engine *e, const struct snapshot *snap)
{
	double scale[UTIL_MAX_NODES];

	engine_node_scale(snap, scale);
	for (size_t i = 0; i < e->cap; i++)
		if (e->vms[i])
			e->vms[i]->seen = false;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct eng_vm *ev = engine_vm_lookup(e, vm->id);
		bool first = ev == NULL || ev->nr_vcpus != vm->nr_vcpus;
		bool by_cells = snap_vm_by_cells(snap, vm);

		if (ev != NULL && first) { /* same id, different VM: start over */
			ev->seen = false;
			engine_table_rebuild(e, e->nr + 1);
			ev = NULL;
		}
		if (ev == NULL)
			ev = engine_vm_add(e, snap, vm);
		ev->seen = true;
		ev->snap_idx = i;
		if ((ev->groups[0].cell >= 0) != by_cells)
			engine_groups_build(ev, vm, by_cells);
		engine_stats_update(ev, vm, snap, scale, first);
		engine_chase_update(ev, snap->now_s);
		for (int k = 0; k < ev->nr_groups; k++) {
			engine_group_strength(ev, &ev->groups[k], vm);
			if (ev->groups[k].home & ~vm->policy.nodes)
				ev->placed = false; /* its policy no longer allows its home */
		}
		/*
		 * Handed to vnumad (advisory or paused until now): homes afresh, from where its
		 * vCPUs and memory are now and together with every other VM handed over in the
		 * same round, not the home chosen when it was only watched.
		 */
		if (engine_vm_acts(vm) && !ev->acted)
			ev->placed = false;
		ev->acted = engine_vm_acts(vm);
	}
	engine_table_rebuild(e, e->nr);
}

struct engine_arrival {
	struct eng_vm *ev;
	const struct snap_vm *vm;
};

/* Higher priority first, then bigger VMs (harder to fit), then lower id. */
static int
engine_arrival_cmp(const void *a, const void *b)
{
	const struct snap_vm *x = ((const struct engine_arrival *)a)->vm;
	const struct snap_vm *y = ((const struct engine_arrival *)b)->vm;

	if (x->policy.priority != y->policy.priority)
		return y->policy.priority - x->policy.priority;
	if (x->nr_vcpus != y->nr_vcpus)
		return y->nr_vcpus - x->nr_vcpus;
	if (x->mem_mib != y->mem_mib)
		return x->mem_mib < y->mem_mib ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Homes for VMs that have none (new, or their policy changed); returns how many. */
static int
engine_place_homeless(struct engine *e, const struct snapshot *snap, struct plan *plan)
{
	struct engine_arrival *a = xcalloc((size_t)snap->nr_vms + 1, sizeof(*a));
	int nr = 0;

	for (int i = 0; i < snap->nr_vms; i++) {
		struct eng_vm *ev = engine_vm_lookup(e, snap->vms[i].id);
		enum vm_policy_mode m = snap->vms[i].policy.mode;

		if (ev && !ev->placed &&
		    (m == VM_POLICY_MODE_AUTO || m == VM_POLICY_MODE_ADVISORY)) {
			a[nr].ev = ev;
			a[nr++].vm = &snap->vms[i];
		}
	}
	qsort(a, (size_t)nr, sizeof(*a), engine_arrival_cmp);
	for (int i = 0; i < nr; i++)
		engine_home_place(e, snap, a[i].ev, a[i].vm, plan);
	free(a);
	return nr;
}

static int
engine_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct engine *e = state;
	bool placed;

	if (e == NULL || snap->nr_nodes > UTIL_MAX_NODES)
		return -EINVAL;
	e->caps = snap->caps;            /* what the host can do: the engine plans only that */
	snap = engine_validate(e, snap); /* from here on, no VM names a node the host lacks */
	engine_observe(e, snap);
	engine_nodes_init(e, snap);
	placed = engine_place_homeless(e, snap, plan) > 0;
	/* Budgets follow the time that really passed (the daemon's period is configurable). */
	e->round_s = e->last_now_s < 0 ? ENGINE_SAMPLE_PERIOD_S : snap->now_s - e->last_now_s;
	if (e->round_s < ENGINE_ROUND_MIN_S)
		e->round_s = ENGINE_ROUND_MIN_S;
	if (e->round_s > ENGINE_ROUND_MAX_S)
		e->round_s = ENGINE_ROUND_MAX_S;
	e->last_now_s = snap->now_s;
	e->round_budget_mib = e->rate_mib_s * e->round_s;
	/* A VM given a home this round is held or moved there at once, not a period later. */
	if (placed || snap->now_s - e->last_rebalance_s >= e->rebalance_period_s - 1e-9) {
		engine_spread(e, snap, plan);
		engine_compress(e, snap, plan);
		e->last_rebalance_s = snap->now_s;
	}
	engine_memory_plan(e, snap, plan);
	engine_sampling(e, snap, plan);
	plan->next_call_s = ENGINE_SAMPLE_PERIOD_S;
	return 0;
}

const struct balancer_ops vnumad_balancer_ops = {
    .name = "vnumad",
    .description = "vnumad: buddy groups, directed convergence, strength-paced memory moves",
    .host_flags = BALANCER_HOST_RESIDENCY,
    .default_scan_mib_s = 128.0,
    .create = engine_create,
    .decide = engine_decide,
    .destroy = engine_destroy,
};

/* ---- for the daemon: tunables, reports, advice (policy/engine.h) ---------------------- */

void
engine_configure(void *state, double rate_mib_s, double rebalance_period_s)
{
	struct engine *e = state;

	if (rate_mib_s > 0)
		e->rate_mib_s = rate_mib_s;
	if (rebalance_period_s > 0)
		e->rebalance_period_s = rebalance_period_s;
}

uint64_t
engine_report_cell_home(void *state, int vm_id, int cell)
{
	struct eng_vm *ev = engine_vm_lookup(state, vm_id);

	if (ev == NULL || !ev->placed || ev->nr_groups == 0)
		return 0;
	for (int i = 0; i < ev->nr_groups; i++)
		if (ev->groups[i].cell == cell)
			return ev->groups[i].home;
	return ev->nr_groups == 1 ? ev->groups[0].home : 0;
}

/* Seconds an adverse guest is left alone for after the latest round (0: it is chased). */
static double
engine_adverse_left(const struct engine *e, const struct eng_vm *ev)
{
	double left = ev->adverse_until_s - e->last_now_s;

	return e->last_now_s >= 0 && left > 0 ? left : 0;
}

int
engine_report_vm(void *state, int vm_id, struct engine_vm_report *r)
{
	struct eng_vm *ev = engine_vm_lookup(state, vm_id);

	memset(r, 0, sizeof(*r));
	r->conv_node = ENGINE_NO_NODE;
	if (ev == NULL)
		return -ENOENT;
	r->placed = ev->placed;
	for (int i = 0; i < ev->nr_groups; i++) {
		r->home |= ev->groups[i].home;
		r->spanning |= ev->groups[i].spanning;
	}
	r->nr_groups = ev->nr_groups;
	r->strength = ev->strength;
	r->conv_node = ev->conv_node;
	r->local_permille = ev->local_permille;
	r->scan_mib_s = ev->scan_mib_s;
	r->levers_wanted = ev->levers_wanted;
	r->scan_pass_s = ev->scan_pass_s;
	r->fault_pages = ev->fault_pages;
	r->adverse_left_s = engine_adverse_left(state, ev);
	r->chase_wasted = ev->chase_last_wasted;
	r->chase_judged = ev->chase_last_judged;
	r->adverse_times = ev->adverse_times;
	return 0;
}

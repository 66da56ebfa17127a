/*
 * engine_memory.c - the memory planner.
 *
 * Per VM, memory is misplaced when it sits on a node that none of its groups call home (or on
 * a home node beyond what the groups homed there hold).  Each round moves some of it, paced:
 *   - by convergence: a compact group whose vCPUs all sit on its home (placement strength
 *     1024) moves at full pace and only toward that home; while its vCPUs are still moving the
 *     pace falls with the square of its placement strength above one half, to nothing;
 *     spanning groups pull memory from outside their node set into it, and from a set node
 *     none of their vCPUs runs on, at full pace, and never between set nodes their vCPUs use;
 *   - by the host-wide rate limit (ENGINE_RATE_MIB_S unless configured) times the time since
 *     the previous round, and the VM's policy rate;
 *   - by node fullness: never past a destination's headroom (try the next-nearest node of a
 *     spanning set, or wait);
 *   - not by the residency figure's error bound (resident_err_mib): a move asks for what the
 *     figure says, and the migrator moves only pages it finds on the source node.  Moving
 *     only the sure part (figure less bound) stopped every move on the emulated 2-node host,
 *     where the kernel's NUMA scanner keeps much of a VM's RAM unreadable to move_pages and so
 *     the sampled bound wide;
 *   - per guest cell, when the host measures each cell's residency (struct snap_cell): each
 *     cell's RAM off its home moves home, so two cells that hold each other's share of a node
 *     (right per VM, wrong per cell) are seen; then by the sure part of each cell's figure;
 *   - by back-off: a VM whose migration failed waits ENGINE_BACKOFF_BASE_S, doubled per failure;
 *   - not for an adverse guest (engine_chase.c) but what sits off its policy's nodes.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy/engine_internal.h"

static double
engine_group_pace(const struct eng_group *g)
{
	double x;

	if (g->spanning)
		return 1.0; /* only memory remote to all its vCPUs moves (engine_plan_span) */
	x = (g->place_strength - 512.0) / 512.0;
	return x > 0 ? x * x : 0;
}

/* Does some of the VM's memory sit outside its policy's nodes (an adverse VM's moves too)? */
static bool
engine_mem_off_policy(const struct snapshot *snap, const struct snap_vm *vm)
{
	for (int n = 0; n < snap->nr_nodes; n++)
		if (vm->resident_mib[n] > 0 && !nodemask_test(vm->policy.nodes, n))
			return true;
	return false;
}

static void
engine_backoff_update(struct eng_vm *ev, const struct snap_vm *vm, double now_s)
{
	double wait = ENGINE_BACKOFF_BASE_S;

	if (vm->mig_failed_mib > 0) {
		for (int i = 0; i < ev->fail_streak && wait < ENGINE_BACKOFF_MAX_S; i++)
			wait *= 2;
		ev->fail_streak++;
		ev->backoff_until_s =
		    now_s + (wait < ENGINE_BACKOFF_MAX_S ? wait : ENGINE_BACKOFF_MAX_S);
	} else if (vm->mig_done_mib > 0) {
		ev->fail_streak = 0;
	}
}

/* MiB this VM may still move this round. */
static double
engine_vm_allowance(const struct engine *e, const struct snap_vm *vm, double pace)
{
	double a = e->budget_mib;

	if (pace * e->round_budget_mib < a)
		a = pace * e->round_budget_mib;
	if (e->vm_left_mib < a) /* the VM's policy rate, shared by all its groups */
		a = e->vm_left_mib;
	return a;
}

static uint64_t
engine_emit_move(struct engine *e, const struct snap_vm *vm, const struct eng_group *g, int from,
                 int to, double want, struct plan *plan)
{
	const char *rule = !g->spanning                   ? "memory-home"
	                   : nodemask_test(g->home, from) ? "memory-to-vcpus"
	                                                  : "memory-into-set";
	uint64_t mib;
	struct plan_mem_move *mv;

	if (want > (double)e->node_mem_free[to])
		want = (double)e->node_mem_free[to];
	mib = (uint64_t)(want > 0 ? want : 0) & ~(uint64_t)1;
	if (mib < 2)
		return 0;
	mv = plan_add_move(plan, vm->id, from, to, mib);
	mv->start_mib = g->mem_start_mib;
	mv->len_mib = g->cell >= 0 ? g->mem_mib : 0;
	if (g->cell >= 0) /* a guest cell's own range: name the cell */
		plan_reason_set(&mv->why, rule, (double)mib,
		                "%s cell %d: %llu MiB of the VM's %llu MiB on node %d to node %d "
		                "(strength %d)",
		                vm->name, g->cell, (unsigned long long)mib,
		                (unsigned long long)vm->resident_mib[from], from, to,
		                g->place_strength);
	else
		plan_reason_set(&mv->why, rule, (double)mib,
		                "%s: %llu MiB of node %d's %llu MiB to node %d (strength %d)",
		                vm->name, (unsigned long long)mib, from,
		                (unsigned long long)vm->resident_mib[from], to, g->place_strength);
	e->budget_mib -= (double)mib;
	e->vm_left_mib -= (double)mib;
	e->node_mem_free[to] -= (int64_t)mib;
	return mib;
}

/*
 * Whether every compact group of the VM is a guest cell whose own residency the host measures
 * (struct snap_cell.resident_mib): then each cell's memory is planned by itself.
 */
static bool
engine_cells_measured(const struct eng_vm *ev, const struct snap_vm *vm)
{
	int compact = 0;

	for (int i = 0; i < ev->nr_groups; i++) {
		const struct eng_group *g = &ev->groups[i];

		if (g->spanning)
			continue;
		if (g->cell < 0 || g->cell >= vm->nr_cells ||
		    vm->cells[g->cell].resident_mib == NULL)
			return false;
		compact++;
	}
	return compact > 0;
}

/*
 * Compact cell groups with measured cells: what surely sits of a cell's own RAM off its home
 * (the low end of the figure's interval) goes home.  A VM-wide figure cannot see two cells that
 * each hold the other's share of a node (the VM's total per node is then right); this can.  The
 * sure part, not the figure: a cell's figure comes from a fraction of the VM's sample, and a page
 * or two of sampling noise on a node that holds none of the cell would be a move of nothing.
 */
static void
engine_plan_cells(struct engine *e, const struct snapshot *snap, const struct eng_vm *ev,
                  const struct snap_vm *vm, struct plan *plan)
{
	for (int i = 0; i < ev->nr_groups; i++) {
		const struct eng_group *g = &ev->groups[i];
		const struct snap_cell *cell;
		double allow;
		int h;

		if (g->spanning)
			continue;
		cell = &vm->cells[g->cell];
		h = nodemask_first(g->home);
		allow = engine_vm_allowance(e, vm, engine_group_pace(g));
		for (int n = 0; n < snap->nr_nodes && allow >= 2; n++) {
			double want = (double)cell->resident_sure_mib[n];

			if (n == h || want < 2)
				continue;
			allow -= (double)engine_emit_move(e, vm, g, n, h,
			                                  want < allow ? want : allow, plan);
		}
	}
}

/* Compact groups: surplus on non-home nodes goes to the homes short of memory. */
static void
engine_plan_compact(struct engine *e, const struct snapshot *snap, const struct eng_vm *ev,
                    const struct snap_vm *vm, struct plan *plan)
{
	int64_t surplus[UTIL_MAX_NODES], expect[UTIL_MAX_NODES] = {0};
	int nn = snap->nr_nodes;

	if (engine_cells_measured(ev, vm)) {
		engine_plan_cells(e, snap, ev, vm, plan);
		return;
	}

	for (int i = 0; i < ev->nr_groups; i++)
		if (!ev->groups[i].spanning)
			expect[nodemask_first(ev->groups[i].home)] +=
			    (int64_t)ev->groups[i].mem_mib;
	for (int n = 0; n < nn; n++)
		surplus[n] = (int64_t)vm->resident_mib[n] - expect[n];
	for (int i = 0; i < ev->nr_groups; i++) {
		const struct eng_group *g = &ev->groups[i];
		int h = nodemask_first(g->home);
		double allow = engine_vm_allowance(e, vm, engine_group_pace(g));

		if (g->spanning || surplus[h] >= 0)
			continue;
		for (int n = 0; n < nn && allow >= 2; n++) {
			double want = (double)surplus[n];
			uint64_t moved;

			if (n == h || surplus[n] <= 0)
				continue;
			if (want > -(double)surplus[h])
				want = -(double)surplus[h];
			moved = engine_emit_move(e, vm, g, n, h, want < allow ? want : allow, plan);
			allow -= (double)moved;
			surplus[n] -= (int64_t)moved;
			surplus[h] += (int64_t)moved;
		}
	}
}

/* Spanning groups: memory outside the set moves into the set node with most room. */
/*
 * Where a spanning group's memory goes: the node of its set running most of its vCPUs that
 * can take want MiB (then the one with the most free memory), else the set's node with the
 * most free memory.
 */
static int
engine_span_dest(const struct engine *e, const struct snapshot *snap, const struct eng_group *g,
                 const int *cnt, double want)
{
	int to = ENGINE_NO_NODE, roomy = ENGINE_NO_NODE;

	for (int d = 0; d < snap->nr_nodes; d++) {
		if (!nodemask_test(g->home, d))
			continue;
		if (roomy < 0 || e->node_mem_free[d] > e->node_mem_free[roomy])
			roomy = d;
		if ((double)e->node_mem_free[d] >= want && cnt[d] > 0 &&
		    (to < 0 || cnt[d] > cnt[to] ||
		     (cnt[d] == cnt[to] && e->node_mem_free[d] > e->node_mem_free[to])))
			to = d;
	}
	return to >= 0 ? to : roomy;
}

/*
 * A spanning group (of a VM of one group) pulls its memory from outside its set into it, to
 * the set's node that runs most of its vCPUs; and, once its vCPUs have all stayed off a node
 * of its set for ENGINE_VCPU_DWELL_S, the memory there too (no vCPU of it is local to it: on a
 * host short of CPUs everywhere a wide VM's vCPUs end up on one node of its set, and what it
 * first touched on the other stayed remote for good).  Never between two nodes of the set that
 * both run its vCPUs: that is where its vCPUs follow their faults.
 */
static void
engine_plan_span(struct engine *e, const struct snapshot *snap, const struct eng_vm *ev,
                 const struct snap_vm *vm, struct plan *plan)
{
	for (int i = 0; i < ev->nr_groups; i++) {
		const struct eng_group *g = &ev->groups[i];
		double allow = engine_vm_allowance(e, vm, engine_group_pace(g)), moved_s = -1e9;
		int cnt[UTIL_MAX_NODES] = {0};

		if (!g->spanning || ev->nr_groups > 1)
			continue;
		for (int k = 0; k < g->nr_vcpus; k++) {
			cnt[ev->vcpu_node[g->vcpus[k]]]++;
			if (ev->vcpu_moved_s[g->vcpus[k]] > moved_s)
				moved_s = ev->vcpu_moved_s[g->vcpus[k]];
		}
		for (int n = 0; n < snap->nr_nodes && allow >= 2; n++) {
			double want = (double)vm->resident_mib[n] < allow
			                  ? (double)vm->resident_mib[n]
			                  : allow;
			int to;

			if (vm->resident_mib[n] == 0 ||
			    (nodemask_test(g->home, n) &&
			     (cnt[n] > 0 || snap->now_s - moved_s < ENGINE_VCPU_DWELL_S)))
				continue;
			to = engine_span_dest(e, snap, g, cnt, want);
			if (to >= 0 && to != n && (!nodemask_test(g->home, n) || cnt[to] > 0))
				allow -= (double)engine_emit_move(e, vm, g, n, to, want, plan);
		}
	}
}

bool
engine_vm_mem_pinned(const struct snap_vm *vm)
{
	return vm->pinned_mib > 0 && vm->pinned_mib * 1000 >= vm->mem_mib * ENGINE_PINNED_PERMILLE;
}

/* MiB of the VM on nodes none of its groups call home. */
static uint64_t
engine_vm_off_home_mib(const struct eng_vm *ev, const struct snapshot *snap,
                       const struct snap_vm *vm)
{
	uint64_t home = 0, off = 0;

	for (int i = 0; i < ev->nr_groups; i++)
		home |= ev->groups[i].home;
	for (int n = 0; n < snap->nr_nodes; n++)
		off += nodemask_test(home, n) ? 0 : vm->resident_mib[n];
	return off;
}

void
engine_memory_plan(struct engine *e, const struct snapshot *snap, struct plan *plan)
{
	bool planned = false;

	e->budget_mib = e->round_budget_mib;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct eng_vm *ev = engine_vm_lookup(e, vm->id);

		if (ev == NULL || !ev->placed || !engine_vm_acts(vm) || !vm->policy.migrate ||
		    engine_vm_mem_pinned(vm))
			continue;
		engine_backoff_update(ev, vm, snap->now_s);
		if (snap->now_s < ev->backoff_until_s || vm->mig_pending_mib > 0 ||
		    (ev->adverse && !engine_mem_off_policy(snap, vm)))
			continue;
		if (e->budget_mib < 2) {
			/* the host-wide limit: counted when there was something to move */
			e->rate_deferred_vms += engine_vm_off_home_mib(ev, snap, vm) >= 2;
			continue;
		}
		planned = true;
		e->vm_left_mib = vm->policy.rate_kib_s ? vm->policy.rate_kib_s / 1024.0 * e->round_s
		                                       : e->budget_mib;
		engine_plan_compact(e, snap, ev, vm, plan);
		engine_plan_span(e, snap, ev, vm, plan);
	}
	e->rate_limited_rounds += planned && e->budget_mib < 2;
}

/*
 * engine_home.c - the round's view of the nodes, and home nodes for groups.
 *
 * Home choice: memory is a hard limit (a node's free memory above its headroom, less what is
 * already reserved for moves into it); CPUs are soft (a node may be oversubscribed when every
 * node is).  Among nodes that fit, the least loaded after placement wins, with bonuses for
 * a node that already holds the group's vCPUs and memory and for a node where a VM of the same
 * cross-VM group lives; ties go to the lower node.  A group that fits no single node spans the
 * fewest, closest nodes that hold it.  Every choice is reserved at once, so two arrivals in one
 * round cannot both claim a node's last free memory or CPUs.
 */
#include <stdio.h>
#include <string.h>

#include "policy/engine_internal.h"

/* Score bonuses (in units of "node load after placement", lower score wins). */
#define ENGINE_HOME_OVERLOAD_PENALTY 10.0 /* placing beyond a node's CPUs */
#define ENGINE_HOME_MATE_BONUS       0.5  /* a VM of the same cross-VM group lives there */
#define ENGINE_HOME_STAY_BONUS       0.5  /* x share of the group's vCPUs/memory already there */

static int64_t
engine_headroom_mib(const struct snap_node *sn)
{
	return (int64_t)(sn->mem_total_mib * ENGINE_HEADROOM_PERMILLE / 1000);
}

static void
engine_nodes_account_vm(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                        const struct snap_vm *vm)
{
	int64_t expect[UTIL_MAX_NODES] = {0};
	bool acts = engine_vm_acts(vm);

	for (int v = 0; v < vm->nr_vcpus; v++) {
		int t = (acts && ev->vcpu_target[v] >= 0) ? ev->vcpu_target[v] : vm->vcpus[v].node;

		if (acts && !ev->placed)
			continue; /* counted when it gets a home this round */
		e->node_load[t] += ev->util_avg[v];
		e->node_slots[t]++;
	}
	if (!acts || !ev->placed)
		return;
	for (int i = 0; i < ev->nr_groups; i++) {
		const struct eng_group *g = &ev->groups[i];

		if (!g->spanning && g->home)
			expect[nodemask_first(g->home)] += (int64_t)g->mem_mib;
	}
	for (int n = 0; n < snap->nr_nodes; n++)
		if (expect[n] > (int64_t)vm->resident_mib[n])
			e->node_mem_free[n] -= expect[n] - (int64_t)vm->resident_mib[n];
}

void
engine_nodes_init(struct engine *e, const struct snapshot *snap)
{
	int nn = snap->nr_nodes;

	if (e->nr_nodes != nn) {
		e->node_load = xreallocarray(e->node_load, (size_t)nn, sizeof(double));
		e->node_slots = xreallocarray(e->node_slots, (size_t)nn, sizeof(int));
		e->node_mem_free = xreallocarray(e->node_mem_free, (size_t)nn, sizeof(int64_t));
		e->nr_nodes = nn;
	}
	for (int n = 0; n < nn; n++) {
		e->node_load[n] = 0;
		e->node_slots[n] = 0;
		e->node_mem_free[n] =
		    (int64_t)snap->nodes[n].mem_free_mib - engine_headroom_mib(&snap->nodes[n]);
	}
	for (int i = 0; i < snap->nr_vms; i++) {
		struct eng_vm *ev = engine_vm_lookup(e, snap->vms[i].id);

		if (ev != NULL)
			engine_nodes_account_vm(e, snap, ev, &snap->vms[i]);
	}
}

/* Memory a group still needs on node n if homed there. */
static int64_t
engine_group_mem_need(const struct eng_vm *ev, const struct eng_group *g, const struct snap_vm *vm,
                      int n)
{
	int64_t have = ev->nr_groups == 1 ? (int64_t)vm->resident_mib[n] : 0;

	return (int64_t)g->mem_mib > have ? (int64_t)g->mem_mib - have : 0;
}

static double
engine_group_util(const struct eng_vm *ev, const struct eng_group *g)
{
	double u = 0;

	for (int i = 0; i < g->nr_vcpus; i++)
		u += ev->util_avg[g->vcpus[i]];
	return u;
}

/* Does a VM of the same cross-VM group have its home on node n? */
static bool
engine_mate_on(struct engine *e, const struct snapshot *snap, const struct snap_vm *vm, int n)
{
	if (vm->policy.group[0] == '\0')
		return false;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *o = &snap->vms[i];
		struct eng_vm *oe;

		if (o->id == vm->id || strcmp(o->policy.group, vm->policy.group) != 0)
			continue;
		oe = engine_vm_lookup(e, o->id);
		if (oe && oe->placed && oe->nr_groups > 0 && nodemask_test(oe->groups[0].home, n))
			return true;
	}
	return false;
}

/* Best single node for group g, or ENGINE_NO_NODE when no node holds its memory. */
static int
engine_pick_node(struct engine *e, const struct snapshot *snap, const struct eng_vm *ev,
                 const struct eng_group *g, const struct snap_vm *vm, uint64_t exclude)
{
	double util = engine_group_util(ev, g), best_score = 0;
	int best = ENGINE_NO_NODE;

	for (int n = 0; n < snap->nr_nodes; n++) {
		double after, score, stay = 0;

		if (!nodemask_test(vm->policy.nodes, n) || nodemask_test(exclude, n) ||
		    snap->nodes[n].nr_cpus < g->nr_vcpus ||
		    engine_group_mem_need(ev, g, vm, n) > e->node_mem_free[n])
			continue;
		after = (e->node_load[n] + util) / snap->nodes[n].nr_cpus;
		score = after + (after > 1.0 ? ENGINE_HOME_OVERLOAD_PENALTY : 0);
		if (engine_mate_on(e, snap, vm, n))
			score -= ENGINE_HOME_MATE_BONUS;
		for (int i = 0; i < g->nr_vcpus; i++)
			stay += vm->vcpus[g->vcpus[i]].node == n;
		if (vm->mem_mib > 0)
			stay = stay / g->nr_vcpus / 2 +
			       (double)vm->resident_mib[n] / (double)vm->mem_mib / 2;
		score -= ENGINE_HOME_STAY_BONUS * stay;
		if (best == ENGINE_NO_NODE || score < best_score - 1e-12) {
			best = n;
			best_score = score;
		}
	}
	return best;
}

/* The fewest closest allowed nodes around the best start that hold the group. */
static uint64_t
engine_pick_span(struct engine *e, const struct snapshot *snap, const struct eng_group *g,
                 const struct snap_vm *vm)
{
	uint64_t best = 0;
	double best_score = 0;

	for (int k = 2; k <= snap->nr_nodes && best == 0; k++) {
		for (int s = 0; s < snap->nr_nodes; s++) {
			uint64_t set = 0;
			int64_t mem = 0;
			int cpus = 0;
			double load = 0, score;

			if (!nodemask_test(vm->policy.nodes, s))
				continue;
			for (int j = 0; j < k; j++) {
				int next = ENGINE_NO_NODE;

				for (int n = 0; n < snap->nr_nodes; n++)
					if (!nodemask_test(set, n) &&
					    nodemask_test(vm->policy.nodes, n) &&
					    (next < 0 || snapshot_distance(snap, s, n) <
					                     snapshot_distance(snap, s, next)))
						next = n;
				if (next < 0)
					break;
				set |= nodemask_of(next);
				mem += e->node_mem_free[next];
				cpus += snap->nodes[next].nr_cpus;
				load += e->node_load[next];
			}
			if (nodemask_weight(set) < k || mem < (int64_t)g->mem_mib ||
			    cpus < g->nr_vcpus)
				continue;
			score = (load + g->nr_vcpus) / cpus;
			if (best == 0 || score < best_score - 1e-12) {
				best = set;
				best_score = score;
			}
		}
	}
	return best ? best : (vm->policy.nodes & (nodemask_of(snap->nr_nodes) - 1));
}

void
engine_load_move(struct engine *e, const struct eng_vm *ev, int v, int from, int to)
{
	if (from >= 0) {
		e->node_load[from] -= ev->util_avg[v];
		e->node_slots[from]--;
	}
	if (to >= 0) {
		e->node_load[to] += ev->util_avg[v];
		e->node_slots[to]++;
	}
}

void
engine_target_commit(struct engine *e, struct eng_vm *ev, int v, int node)
{
	engine_load_move(e, ev, v, ev->vcpu_target[v], node);
	ev->vcpu_target[v] = node;
}

void
engine_emit_pin(struct eng_vm *ev, const struct snap_vm *vm, int v, uint64_t nodes, double now_s,
                struct plan *plan, const char *rule, double gain, const char *text)
{
	struct plan_pin *pin;

	if (!engine_vm_acts(vm) || vm->vcpus[v].allowed_nodes == nodes)
		return;
	pin = plan_add_pin(plan, vm->id, v, nodes);
	plan_reason_set(&pin->why, rule, gain, "%s", text);
	if (!nodemask_test(nodes, vm->vcpus[v].node)) {
		ev->vcpu_moved_s[v] = now_s;
		ev->vcpu_moves[v]++;
	}
}

/*
 * Node for vCPU i of a spanning group: where it runs if that is in the set (a VM already
 * running), else the set's nodes in turn.  Faults move it later (engine_converge.c).
 */
static int
engine_span_node(const struct eng_group *g, const struct snap_vm *vm, int i)
{
	int v = g->vcpus[i], k = i % nodemask_weight(g->home), n;

	if (vm->uptime_s > 0 && nodemask_test(g->home, vm->vcpus[v].node))
		return vm->vcpus[v].node;
	for (n = nodemask_first(g->home); k > 0; k--)
		for (n++; !nodemask_test(g->home, n); n++)
			;
	return n;
}

/* Reserve the group's home: CPU load on its nodes and the memory still to come. */
static void
engine_group_commit(struct engine *e, struct eng_vm *ev, struct eng_group *g,
                    const struct snap_vm *vm)
{
	int w = nodemask_weight(g->home);

	for (int i = 0; i < g->nr_vcpus; i++) {
		int v = g->vcpus[i];

		if (g->spanning) {
			int n = engine_span_node(g, vm, i);

			engine_target_commit(e, ev, v, ENGINE_NO_NODE);
			engine_load_move(e, ev, v, ENGINE_NO_NODE, n);
			ev->vcpu_node[v] = n;
		} else {
			engine_target_commit(e, ev, v, nodemask_first(g->home));
		}
	}
	for (int n = 0; n < e->nr_nodes; n++)
		if (nodemask_test(g->home, n))
			e->node_mem_free[n] -= engine_group_mem_need(ev, g, vm, n) / w;
}

static void
engine_group_emit(struct eng_vm *ev, const struct eng_group *g, const struct snap_vm *vm,
                  double now_s, struct plan *plan)
{
	char text[256], nodes[32];
	struct plan_mem_bind *b;

	nodemask_format(g->home, nodes, sizeof(nodes));
	snprintf(text, sizeof(text), "%s%s%.0d: home node%s %s chosen by fit", vm->name,
	         g->cell >= 0 ? " cell " : "", g->cell >= 0 ? g->cell : 0, g->spanning ? "s" : "",
	         nodes);
	for (int i = 0; i < g->nr_vcpus; i++) {
		int v = g->vcpus[i];
		uint64_t mask = g->spanning ? nodemask_of(ev->vcpu_node[v]) : g->home;

		engine_emit_pin(ev, vm, v, mask, now_s, plan, "home", 0, text);
	}
	/* A VM just arriving has touched nothing yet: bind its RAM so it lands at home. */
	if (engine_vm_acts(vm) && vm->uptime_s == 0) {
		b = plan_add_bind(plan, vm->id, g->home);
		b->start_mib = g->mem_start_mib;
		b->len_mib = g->cell >= 0 ? g->mem_mib : 0;
		plan_reason_set(&b->why, "home", 0, "%s", text);
	}
}

static void
engine_group_place(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                   struct eng_group *g, const struct snap_vm *vm, uint64_t used)
{
	int n = engine_pick_node(e, snap, ev, g, vm, used);

	if (n == ENGINE_NO_NODE && used)
		n = engine_pick_node(e, snap, ev, g, vm, 0);
	g->spanning = n == ENGINE_NO_NODE;
	g->home = g->spanning ? engine_pick_span(e, snap, g, vm) : nodemask_of(n);
	if (engine_vm_acts(vm))
		engine_group_commit(e, ev, g, vm);
}

/* Give every group of the VM a home; pin an arriving VM at once. */
void
engine_home_place(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                  const struct snap_vm *vm, struct plan *plan)
{
	uint64_t used = 0;

	for (int i = 0; i < ev->nr_groups; i++) {
		struct eng_group *g = &ev->groups[i];

		engine_group_place(e, snap, ev, g, vm, ev->nr_groups > 1 ? used : 0);
		used |= g->home;
		if (vm->uptime_s == 0 || g->spanning)
			engine_group_emit(ev, g, vm, snap->now_s, plan);
	}
	ev->placed = true;
	ev->rehomed_s = snap->now_s;
}

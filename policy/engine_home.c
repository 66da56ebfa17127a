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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"

/* Score bonuses (in units of "node load after placement", lower score wins). */
#define ENGINE_HOME_OVERLOAD_PENALTY 10.0 /* placing beyond a node's CPUs */
#define ENGINE_HOME_MATE_BONUS       2.0  /* a VM of the same cross-VM group lives there: join it */
/* x share of the group's memory / vCPUs already on the node: moving memory costs more. */
#define ENGINE_HOME_STAY_MEM_BONUS  1.0
#define ENGINE_HOME_STAY_VCPU_BONUS 0.25

static void engine_groupmask_init(struct engine *e, const struct snapshot *snap);
static void engine_groupmask_add(struct engine *e, const char *name, uint64_t nodes);

int64_t
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

	if (acts && !ev->placed) /* its memory floats until it has a home */
		for (int n = 0; n < snap->nr_nodes; n++)
			e->node_mem_proj[n] += (int64_t)vm->resident_mib[n];
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
	for (int n = 0; n < snap->nr_nodes; n++) {
		/*
		 * Memory still to come, or leaving (< 0), from the figure less its error: the
		 * room of every node is checked against this projection, and a node counts as
		 * fuller by each of its VMs' bounds (0 on exact figures).
		 */
		int64_t d = expect[n] - (int64_t)snap_vm_resident_sure_mib(vm, n);

		if (ev->nr_groups == 1 && ev->groups[0].spanning)
			continue; /* a spanning VM's memory stays where it is inside its set */
		/* Only the projection books what is still to come: the migration guard works on
		 * real free memory, and the moves it plans are booked as they are planned. */
		e->node_mem_proj[n] -= d; /* memory leaving a node frees it for planning */
	}
}

void
engine_nodes_init(struct engine *e, const struct snapshot *snap)
{
	int nn = snap->nr_nodes;

	if (e->nr_nodes != nn) {
		e->node_load = xreallocarray(e->node_load, (size_t)nn, sizeof(double));
		e->node_slots = xreallocarray(e->node_slots, (size_t)nn, sizeof(int));
		e->node_mem_free = xreallocarray(e->node_mem_free, (size_t)nn, sizeof(int64_t));
		e->node_mem_proj = xreallocarray(e->node_mem_proj, (size_t)nn, sizeof(int64_t));
		e->nr_nodes = nn;
	}
	for (int n = 0; n < nn; n++) {
		e->node_load[n] = 0;
		e->node_slots[n] = 0;
		e->node_mem_free[n] =
		    (int64_t)snap->nodes[n].mem_free_mib - engine_headroom_mib(&snap->nodes[n]);
		e->node_mem_proj[n] =
		    (int64_t)snap->nodes[n].mem_free_mib -
		    (int64_t)(snap->nodes[n].mem_total_mib * ENGINE_PLACE_RESERVE_PERMILLE / 1000);
	}
	engine_groupmask_init(e, snap);
	e->host_spare_cpus = 0;
	for (int n = 0; n < nn; n++)
		e->host_spare_cpus += snap->nodes[n].nr_cpus;
	for (int i = 0; i < snap->nr_vms; i++) {
		struct eng_vm *ev = engine_vm_lookup(e, snap->vms[i].id);

		if (ev == NULL)
			continue;
		engine_nodes_account_vm(e, snap, ev, &snap->vms[i]);
		if (ev->placed && ev->nr_groups > 0)
			engine_groupmask_add(e, snap->vms[i].policy.group, ev->groups[0].home);
		for (int v = 0; v < ev->nr_vcpus; v++)
			e->host_spare_cpus -= ev->util_avg[v];
	}
	engine_reserve_account(e, snap);
}

int64_t
engine_room_mib(const struct engine *e, const struct snapshot *snap, int n, bool arriving)
{
	int64_t extra =
	    (int64_t)(snap->nodes[n].mem_total_mib *
	              (ENGINE_HEADROOM_PERMILLE - ENGINE_PLACE_RESERVE_PERMILLE) / 1000);

	return e->node_mem_proj[n] - (arriving ? 0 : extra);
}

int64_t
engine_group_resident_mib(const struct eng_vm *ev, const struct eng_group *g,
                          const struct snap_vm *vm, int n)
{
	if (ev->nr_groups == 1)
		return (int64_t)vm->resident_mib[n];
	if (g->cell >= 0 && g->cell < vm->nr_cells && vm->cells[g->cell].resident_mib != NULL)
		return (int64_t)vm->cells[g->cell].resident_mib[n];
	return 0;
}

/* Memory a group still needs on node n if homed there. */
static int64_t
engine_group_mem_need(const struct eng_vm *ev, const struct eng_group *g, const struct snap_vm *vm,
                      int n)
{
	int64_t have = engine_group_resident_mib(ev, g, vm, n);

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

/*
 * Cross-VM groups: per round, a small hash from group name to the nodes its placed VMs call
 * home (names point into the snapshot, valid for the round).  Keeps home choice linear in
 * VMs however many share groups.
 */
static size_t
engine_name_hash(const char *s, size_t cap)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h & (cap - 1);
}

static struct eng_groupmask *
engine_groupmask_slot(struct engine *e, const char *name)
{
	size_t i = engine_name_hash(name, e->gm_cap);

	while (e->gm[i].name != NULL && strcmp(e->gm[i].name, name) != 0)
		i = (i + 1) & (e->gm_cap - 1);
	return &e->gm[i];
}

static void
engine_groupmask_add(struct engine *e, const char *name, uint64_t nodes)
{
	struct eng_groupmask *m;

	if (name[0] == '\0' || e->gm_cap == 0)
		return;
	m = engine_groupmask_slot(e, name);
	m->name = name;
	m->nodes |= nodes;
}

static void
engine_groupmask_init(struct engine *e, const struct snapshot *snap)
{
	size_t cap = 16;

	while (cap < (size_t)snap->nr_vms * 2 + 2)
		cap *= 2;
	if (cap != e->gm_cap) {
		free(e->gm);
		e->gm = xcalloc(cap, sizeof(*e->gm));
		e->gm_cap = cap;
	} else {
		memset(e->gm, 0, cap * sizeof(*e->gm));
	}
}

/* Does a VM of the same cross-VM group have its home on node n? */
static bool
engine_mate_on(struct engine *e, const struct snapshot *snap, const struct snap_vm *vm, int n)
{
	if (vm->policy.group[0] == '\0' || e->gm_cap == 0)
		return false;
	return nodemask_test(engine_groupmask_slot(e, vm->policy.group)->nodes, n);
}

/*
 * The node a pinned VM's group must call home: where most of its memory is (ties: the lower
 * node), since none of it will move; -1 when the VM's memory may move, none is resident, or
 * the policy does not allow that node (its vCPUs then go where the policy says, remote).
 */
static int
engine_pinned_home(const struct snapshot *snap, const struct eng_vm *ev, const struct eng_group *g,
                   const struct snap_vm *vm)
{
	int64_t most = 0;
	int best = -1;

	if (!engine_vm_mem_pinned(vm))
		return -1;
	for (int n = 0; n < snap->nr_nodes; n++) {
		int64_t have = engine_group_resident_mib(ev, g, vm, n);

		if (have > most) {
			most = have;
			best = n;
		}
	}
	return best >= 0 && nodemask_test(vm->policy.nodes, best) ? best : -1;
}

/* Best single node for group g, or ENGINE_NO_NODE when no node holds its memory. */
static int
engine_pick_node(struct engine *e, const struct snapshot *snap, const struct eng_vm *ev,
                 const struct eng_group *g, const struct snap_vm *vm, uint64_t exclude)
{
	double util = engine_group_util(ev, g), best_score = 0;
	int best = ENGINE_NO_NODE, pinned = engine_pinned_home(snap, ev, g, vm);

	for (int n = 0; n < snap->nr_nodes; n++) {
		double after, score, stay = 0;

		if ((pinned >= 0 && n != pinned) || !nodemask_test(vm->policy.nodes, n) ||
		    nodemask_test(exclude, n) || snap->nodes[n].nr_cpus < g->nr_vcpus ||
		    (int64_t)g->mem_mib -
		            (ev->placed ? engine_group_resident_mib(ev, g, vm, n) : 0) >
		        engine_room_mib(e, snap, n, vm->uptime_s == 0))
			continue;
		after = (e->node_load[n] + util) / snap->nodes[n].nr_cpus;
		score = after + (after > 1.0 ? ENGINE_HOME_OVERLOAD_PENALTY : 0);
		if (engine_mate_on(e, snap, vm, n))
			score -= ENGINE_HOME_MATE_BONUS;
		for (int i = 0; i < g->nr_vcpus; i++)
			stay += vm->vcpus[g->vcpus[i]].node == n;
		score -= ENGINE_HOME_STAY_VCPU_BONUS * stay / g->nr_vcpus;
		if (g->mem_mib > 0)
			score -= ENGINE_HOME_STAY_MEM_BONUS *
			         (double)engine_group_resident_mib(ev, g, vm, n) /
			         (double)g->mem_mib;
		if (best == ENGINE_NO_NODE || score < best_score - 1e-12) {
			best = n;
			best_score = score;
		}
	}
	return best;
}

/* The k allowed nodes closest to s (ties: lower node); fills their memory, CPUs and load. */
static uint64_t
engine_span_set(const struct engine *e, const struct snapshot *snap, const struct snap_vm *vm,
                int s, int k, int64_t *mem, int *cpus, double *load)
{
	uint64_t set = 0;

	*mem = 0;
	*cpus = 0;
	*load = 0;
	for (int j = 0; j < k; j++) {
		int next = ENGINE_NO_NODE;

		for (int n = 0; n < snap->nr_nodes; n++)
			if (!nodemask_test(set, n) && nodemask_test(vm->policy.nodes, n) &&
			    (next < 0 ||
			     snapshot_distance(snap, s, n) < snapshot_distance(snap, s, next)))
				next = n;
		if (next < 0)
			return 0;
		set |= nodemask_of(next);
		*mem += engine_room_mib(e, snap, next, vm->uptime_s == 0);
		*cpus += snap->nodes[next].nr_cpus;
		*load += e->node_load[next];
	}
	return set;
}

/*
 * The fewest closest allowed nodes that hold the group's memory and vCPUs (and, with
 * cpu_fit, its CPU demand without overload), least loaded first; 0 if none.
 */
static uint64_t
engine_pick_span(struct engine *e, const struct snapshot *snap, const struct eng_group *g,
                 const struct snap_vm *vm, double util, bool cpu_fit)
{
	uint64_t best = 0;
	double best_score = 0;

	for (int k = 2; k <= snap->nr_nodes && best == 0; k++) {
		for (int s = 0; s < snap->nr_nodes; s++) {
			int64_t mem;
			int cpus;
			double load, score;
			uint64_t set = nodemask_test(vm->policy.nodes, s)
			                   ? engine_span_set(e, snap, vm, s, k, &mem, &cpus, &load)
			                   : 0;

			if (set == 0 || mem < (int64_t)g->mem_mib || cpus < g->nr_vcpus ||
			    (cpu_fit && load + util > cpus))
				continue;
			score = (load + util) / cpus;
			if (best == 0 || score < best_score - 1e-12) {
				best = set;
				best_score = score;
			}
		}
	}
	return best;
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
	ev->vcpu_pinned_s[v] = now_s;
	if (!nodemask_test(nodes, ev->vcpu_node[v])) {
		ev->vcpu_moved_s[v] = now_s;
		ev->vcpu_moves[v]++;
		/* The host puts it on the least loaded node of the mask; one node is exact. */
		ev->vcpu_node[v] = nodemask_first(nodes);
	}
}

/*
 * Node for vCPU i of a spanning group: where it runs if that is in the set (a VM already
 * running), else the set's nodes in turn.  Faults move it later (engine_converge.c).
 */
static int
engine_span_node(const struct eng_group *g, const struct snap_vm *vm, int i)
{
	int v = g->vcpus[i], n;
	uint64_t rest = g->home;
	int k;

	if (vm->uptime_s > 0 && nodemask_test(g->home, vm->vcpus[v].node))
		return vm->vcpus[v].node;
	if (g->primary >= 0) { /* overflow span: fill the primary, the rest elsewhere */
		if (i < g->primary_slots)
			return g->primary;
		rest &= ~nodemask_of(g->primary);
		i -= g->primary_slots;
	}
	k = i % nodemask_weight(rest);
	for (n = nodemask_first(rest); k > 0; k--)
		for (n++; !nodemask_test(rest, n); n++)
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
	for (int n = 0; n < e->nr_nodes; n++) {
		int64_t need = engine_group_mem_need(ev, g, vm, n) / w;

		if (g->primary >= 0) /* an overflow span keeps its memory on its primary */
			need = n == g->primary ? engine_group_mem_need(ev, g, vm, n) : 0;

		if (nodemask_test(g->home, n)) {
			e->node_mem_free[n] -= need;
			/* the VM's own memory was credited back while it had no home */
			e->node_mem_proj[n] -= g->primary >= 0
			                           ? (n == g->primary ? (int64_t)g->mem_mib : 0)
			                           : (int64_t)g->mem_mib / w;
		}
	}
}

/*
 * A group too big for one node: its RAM is cut into consecutive ranges, one per node of the
 * set, in proportion to the memory each node had free for it, so no node is filled to its
 * watermark.  Which vCPU uses which range is not known; faults will say (engine_converge.c).
 */
static void
engine_span_bind(const struct engine *e, const struct eng_group *g, const struct snap_vm *vm,
                 struct plan *plan, const char *text)
{
	int w = nodemask_weight(g->home);
	double room[UTIL_MAX_NODES], total = 0;
	uint64_t start = g->mem_start_mib, end = g->mem_start_mib + g->mem_mib;

	for (int n = 0; n < e->nr_nodes; n++) {
		room[n] = 0;
		if (nodemask_test(g->home, n)) {
			/* undo this group's own reservation to see what the node had */
			room[n] = (double)e->node_mem_proj[n] + (double)g->mem_mib / w;
			room[n] = room[n] > 0 ? room[n] : 0;
			total += room[n];
		}
	}
	for (int n = 0; n < e->nr_nodes && start < end; n++) {
		struct plan_mem_bind *b;
		uint64_t len;

		if (!nodemask_test(g->home, n))
			continue;
		len = total > 0 ? (uint64_t)((double)g->mem_mib * room[n] / total) : g->mem_mib / w;
		len &= ~(uint64_t)1;
		if (n == nodemask_last(g->home) || start + len > end)
			len = end - start;
		b = plan_add_bind(plan, vm->id, nodemask_of(n));
		b->start_mib = start;
		b->len_mib = len;
		plan_reason_set(&b->why, "home", 0, "%s", text);
		start += len;
	}
}

static void
engine_group_emit(const struct engine *e, struct eng_vm *ev, const struct eng_group *g,
                  const struct snap_vm *vm, double now_s, struct plan *plan)
{
	char text[ENGINE_TEXT_LEN], nodes[NODEMASK_STR_MAX];
	struct plan_mem_bind *b;

	nodemask_format(g->home, nodes, sizeof(nodes));
	if (g->cell >= 0) /* not "%.0d", which prints cell 0 as nothing */
		snprintf(text, sizeof(text), "%s cell %d: home node%s %s chosen by fit", vm->name,
		         g->cell, g->spanning ? "s" : "", nodes);
	else
		snprintf(text, sizeof(text), "%s: home node%s %s chosen by fit", vm->name,
		         g->spanning ? "s" : "", nodes);
	for (int i = 0; i < g->nr_vcpus; i++) {
		int v = g->vcpus[i];
		uint64_t mask = g->spanning ? nodemask_of(ev->vcpu_node[v]) : g->home;

		engine_emit_pin(ev, vm, v, mask, now_s, plan, "home", 0, text);
	}
	/* A VM just arriving has touched nothing yet: bind its RAM so it lands at home (an
	 * overflow span: on its primary node, where most of its vCPUs are) - on a host that
	 * can bind before the first touch.  Elsewhere its RAM is where the guest put it, and
	 * the memory planner moves it home. */
	if (!engine_vm_acts(vm) || vm->uptime_s != 0)
		return;
	if (!(e->caps & HOST_CAP_BIND_AT_START)) {
		ev->levers_wanted |= HOST_CAP_BIND_AT_START;
		return;
	}
	if (g->spanning && g->primary < 0) {
		engine_span_bind(e, g, vm, plan, text);
		return;
	}
	b = plan_add_bind(plan, vm->id, g->primary >= 0 ? nodemask_of(g->primary) : g->home);
	b->start_mib = g->mem_start_mib;
	b->len_mib = g->cell >= 0 ? g->mem_mib : 0;
	plan_reason_set(&b->why, "home", 0, "%s", text);
}

/*
 * An overflow span for a group that fits node n's memory but would overload its CPUs: as many
 * vCPUs as n has free CPUs stay on n (with all the memory), the rest go to the nearest nodes
 * with CPUs to spare.  Overloading n costs the CPUs beyond its capacity; the span costs remote
 * accesses for the overflow vCPUs, each worth about ENGINE_REMOTE_VCPU_COST of a CPU.  Returns
 * the set when the span is cheaper by ENGINE_SPAN_MARGIN, else 0; sets g->primary_slots.
 */
static uint64_t
engine_pick_overflow(struct engine *e, const struct snapshot *snap, struct eng_group *g,
                     const struct snap_vm *vm, int n, double util)
{
	double cpus = snap->nodes[n].nr_cpus, load = e->node_load[n], per = util / g->nr_vcpus;
	double over =
	    (load + util > cpus ? load + util - cpus : 0) - (load > cpus ? load - cpus : 0);
	int stay = per > 0 ? (int)((cpus - load) / per) : g->nr_vcpus, left;
	uint64_t set = nodemask_of(n);

	if (stay < 1 || stay >= g->nr_vcpus)
		return 0;
	left = g->nr_vcpus - stay;
	if (over <= ENGINE_SPAN_MARGIN * ENGINE_REMOTE_VCPU_COST * left)
		return 0;
	for (double need = left * per; need > 1e-9;) {
		int best = ENGINE_NO_NODE;

		for (int d = 0; d < snap->nr_nodes; d++)
			if (!nodemask_test(set, d) && nodemask_test(vm->policy.nodes, d) &&
			    e->node_load[d] + 1 <= snap->nodes[d].nr_cpus &&
			    (best < 0 ||
			     snapshot_distance(snap, n, d) < snapshot_distance(snap, n, best)))
				best = d;
		if (best < 0)
			return 0;
		set |= nodemask_of(best);
		need -= snap->nodes[best].nr_cpus - e->node_load[best];
	}
	g->primary_slots = stay;
	return set;
}

static void
engine_group_place(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                   struct eng_group *g, const struct snap_vm *vm, uint64_t used)
{
	int n = engine_pick_node(e, snap, ev, g, vm, used);
	double util = engine_group_util(ev, g);
	uint64_t set = 0;

	if (n == ENGINE_NO_NODE && used)
		n = engine_pick_node(e, snap, ev, g, vm, 0);
	if (n == ENGINE_NO_NODE) {
		set = engine_pick_span(e, snap, g, vm, util, false);
		if (set == 0) /* nothing holds it: all allowed nodes */
			set = vm->policy.nodes & nodemask_all_of(snap->nr_nodes);
	} else if (g->nr_vcpus > 1 && e->host_spare_cpus >= 0 &&
	           e->node_load[n] + util > snap->nodes[n].nr_cpus) {
		set = engine_pick_overflow(e, snap, g, vm, n, util);
	}
	g->primary = (set != 0 && n != ENGINE_NO_NODE) ? n : ENGINE_NO_NODE;
	g->spanning = set != 0;
	g->home = g->spanning ? set : nodemask_of(n);
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
			engine_group_emit(e, ev, g, vm, snap->now_s, plan);
	}
	ev->placed = true;
	ev->rehomed_s = snap->now_s;
	if (ev->nr_groups > 0)
		engine_groupmask_add(e, vm->policy.group, ev->groups[0].home);
}

/*
 * A spanning group that now fits one node without overloading it (VMs left, loads changed)
 * becomes compact there; compression then gathers its vCPUs and memory follows.  Returns true
 * if it did.
 */
bool
engine_try_compact(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                   struct eng_group *g, const struct snap_vm *vm)
{
	double util = engine_group_util(ev, g);
	int n;

	for (int i = 0; i < g->nr_vcpus; i++)
		engine_load_move(e, ev, g->vcpus[i], ev->vcpu_node[g->vcpus[i]], ENGINE_NO_NODE);
	n = engine_pick_node(e, snap, ev, g, vm, 0);
	if (n == ENGINE_NO_NODE || e->node_load[n] + util > snap->nodes[n].nr_cpus) {
		for (int i = 0; i < g->nr_vcpus; i++)
			engine_load_move(e, ev, g->vcpus[i], ENGINE_NO_NODE,
			                 ev->vcpu_node[g->vcpus[i]]);
		return false;
	}
	g->spanning = false;
	g->primary = ENGINE_NO_NODE;
	g->home = nodemask_of(n);
	for (int i = 0; i < g->nr_vcpus; i++)
		engine_target_commit(e, ev, g->vcpus[i], n);
	e->node_mem_proj[n] -= engine_group_mem_need(ev, g, vm, n);
	ev->rehomed_s = snap->now_s;
	return true;
}

/* A stand-in for a VM that does not exist yet, for engine_advise(). */
static struct snapshot *
engine_advise_vm(const struct snapshot *snap, int vcpus, uint64_t mem_mib, int nr_cells)
{
	struct snapshot *one = snapshot_new(snap->nr_nodes, 1, 1, &vcpus);
	struct snap_vm *vm = &one->vms[0];

	vm->id = -1;
	snprintf(vm->name, sizeof(vm->name), "(new VM)");
	vm->mem_mib = mem_mib;
	if (nr_cells > 1) {
		vm->policy.placement = VM_POLICY_PLACEMENT_CELLS;
		snapshot_vm_set_cells(vm, nr_cells);
		for (int c = 0; c < nr_cells; c++) {
			vm->cells[c].mem_start_mib = mem_mib / (uint64_t)nr_cells * (uint64_t)c;
			vm->cells[c].mem_mib = mem_mib / (uint64_t)nr_cells;
		}
		for (int v = 0; v < vcpus; v++)
			vm->vcpu_cell[v] = v * nr_cells / vcpus;
	}
	return one;
}

/* Why no set of nodes takes group g: its vCPUs outnumber the host's CPUs, or its memory. */
static void
engine_advise_short(const struct snapshot *snap, const struct eng_group *g, char *text, size_t len)
{
	uint64_t free_mib = 0;
	int cpus = 0;

	for (int n = 0; n < snap->nr_nodes; n++) {
		cpus += snap->nodes[n].nr_cpus;
		free_mib += snap->nodes[n].mem_free_mib;
	}
	if (g->nr_vcpus > cpus)
		snprintf(text, len, "CPUs short: %d vCPUs, the host has %d CPUs", g->nr_vcpus,
		         cpus);
	else
		snprintf(text, len,
		         "memory short: no set of nodes has %llu MiB free for it (%llu MiB free on "
		         "all nodes, less each node's headroom)",
		         (unsigned long long)g->mem_mib, (unsigned long long)free_mib);
}

int
engine_advise(void *state, const struct snapshot *snap, int vcpus, uint64_t mem_mib, int nr_cells,
              uint64_t *nodes, uint64_t *cell_nodes, char *text, size_t len)
{
	struct engine *e = state;
	struct snapshot *one;
	struct eng_vm *ev;
	uint64_t used = 0;
	char buf[NODEMASK_STR_MAX];
	int rc = 0;

	if (vcpus < 1 || mem_mib == 0 || nr_cells < 0 || nr_cells > vcpus || nr_cells > 64)
		return -EINVAL;
	one = engine_advise_vm(snap, vcpus, mem_mib, nr_cells);
	ev = xcalloc(1, sizeof(*ev));
	engine_vm_alloc(ev, &one->vms[0], snap->nr_nodes);
	engine_groups_build(ev, &one->vms[0], nr_cells > 1);
	for (int v = 0; v < vcpus; v++)
		ev->util_avg[v] = 1.0; /* a new VM: assume busy vCPUs */
	engine_nodes_init(e, snap);
	*nodes = 0;
	for (int i = 0; i < ev->nr_groups; i++) {
		struct eng_group *g = &ev->groups[i];
		int n =
		    engine_pick_node(e, snap, ev, g, &one->vms[0], ev->nr_groups > 1 ? used : 0);
		uint64_t set = n >= 0
		                   ? nodemask_of(n)
		                   : engine_pick_span(e, snap, g, &one->vms[0], g->nr_vcpus, false);

		if (set == 0) {
			rc = -ENOSPC;
			engine_advise_short(snap, g, text, len);
			break;
		}
		used |= set;
		if (cell_nodes != NULL && ev->nr_groups > 1)
			cell_nodes[i] = set;
	}
	if (rc == 0) {
		*nodes = used;
		snprintf(text, len, "least loaded node%s with room: %s",
		         nodemask_weight(used) > 1 ? "s" : "",
		         nodemask_format(used, buf, sizeof(buf)));
	}
	engine_vm_free(ev);
	snapshot_free(one);
	return rc;
}

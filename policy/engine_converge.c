/*
 * engine_converge.c - directed convergence: spreading first, then compression with flips.
 *
 * Spread: while a node's expected CPU demand exceeds ENGINE_SPREAD_OVERLOAD times its CPUs,
 * move the smallest movable group homed there to the node where it fits with the most CPU to
 * spare (numa/core: spreading moves the smallest group; ESXi: 10 % imbalance threshold).
 *
 * Compress: larger groups first (then priority, then lower VM id), each vCPU that is not
 * where it should be moves there if the node has a free CPU; on a full node it flips with a
 * vCPU of a strictly smaller group (preferring one that itself wants to go the other way), so
 * node load is unchanged.  A compact group's vCPUs belong on its home node; a spanning group's
 * vCPU belongs on the node of the set that holds most of its faults (its memory), when that
 * node holds ENGINE_VCPU_GAIN_MARGIN times more of them than where it runs (before its faults
 * can be judged: more of the VM's memory).  Dwell times per VM and per vCPU, and per-round
 * caps, damp it all.  Two passes: moves onto free CPUs and flips both sides gain from first,
 * displacing flips second.  A flip with a spanning vCPU never carries CPU demand onto a node
 * past its CPUs; span relief takes a spanning group's busy vCPUs off a node of its set crowded
 * beyond its CPUs while another has idle CPU.
 *
 * A VM's policy nodes come first: a vCPU outside them goes home at once, whatever the load,
 * dwell times or flip partners say.  A vCPU of a compact group that sits at home is held there
 * by a pin to its home node (engine_hold_vcpu), so the host's scheduler cannot carry it off.
 */
#include <stdio.h>
#include <stdlib.h>

#include "policy/engine_internal.h"

/* Flip partner ranking: any partner that gains ranks before any that is merely smaller. */
#define ENGINE_FLIP_GAIN_FIRST (1 << 20)

struct eng_slot {
	struct eng_vm *ev;
	const struct snap_vm *vm;
	int v;
};

/* Per-round index of which vCPU runs on which node. */
struct eng_where {
	struct eng_slot *slots; /* all vCPUs, grouped by node */
	int *first;             /* per node: first slot; first[nr_nodes] = total */
	int *count;             /* per node: vCPUs running there now (updated by moves) */
	double *demand; /* per node: their expected CPU demand (util_avg; updated by moves) */
	int nr_nodes;
};

/*
 * Where vCPU v runs for this round's placement: where this round's pins (homes of arrivals)
 * put it, else where the snapshot saw it.
 */
static int
engine_where_node(const struct eng_vm *ev, const struct snap_vm *vm, int v)
{
	return ev != NULL ? ev->vcpu_node[v] : vm->vcpus[v].node;
}

static void
engine_where_build(struct engine *e, const struct snapshot *snap, struct eng_where *w)
{
	int nn = snap->nr_nodes, total = 0, *fill = xcalloc((size_t)nn + 1, sizeof(int));

	w->nr_nodes = nn;
	w->first = xcalloc((size_t)nn + 1, sizeof(int));
	w->count = xcalloc((size_t)nn, sizeof(int));
	w->demand = xcalloc((size_t)nn, sizeof(double));
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct eng_vm *ev = engine_vm_lookup(e, snap->vms[i].id);

		for (int v = 0; v < snap->vms[i].nr_vcpus; v++) {
			w->count[engine_where_node(ev, &snap->vms[i], v)]++;
			total++;
		}
	}
	for (int n = 0; n < nn; n++)
		w->first[n + 1] = w->first[n] + w->count[n];
	w->slots = xcalloc((size_t)total + 1, sizeof(*w->slots));
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct eng_vm *ev = engine_vm_lookup(e, vm->id);

		for (int v = 0; v < vm->nr_vcpus; v++) {
			int n = engine_where_node(ev, vm, v);
			struct eng_slot *s = &w->slots[w->first[n] + fill[n]++];

			s->ev = ev;
			s->vm = vm;
			s->v = v;
			w->demand[n] += ev ? ev->util_avg[v] : 1.0;
		}
	}
	free(fill);
}

static void
engine_where_free(struct eng_where *w)
{
	free(w->slots);
	free(w->first);
	free(w->count);
	free(w->demand);
}

static int
engine_group_size(const struct eng_vm *ev, int v)
{
	return ev->groups[ev->vcpu_group[v]].nr_vcpus;
}

/*
 * Memory prior of a spanning VM's vCPU that has too few faults to judge: with nothing known of
 * which part of the VM's RAM it touches, its expected locality on a node is the share of the
 * VM's memory there (exact for a VM whose vCPUs share all of it).  Fills prior[] with the VM's
 * resident memory per node and returns its node of most memory inside the group's set and the
 * policy's nodes (ties: lower node), or ENGINE_NO_NODE when there is no prior: a VM of several
 * groups (memory per group is not measured), an overflow span (its memory stays on its
 * primary), or a guest that has touched less than ENGINE_SPAN_PRIOR_MIN_PERMILLE of its RAM
 * (where the rest lands is not decided yet).
 */
static int
engine_span_prior(const struct eng_vm *ev, const struct eng_group *g, const struct snap_vm *vm,
                  double *prior)
{
	uint64_t total = 0;
	int best = ENGINE_NO_NODE;

	if (ev->nr_groups != 1 || g->primary >= 0)
		return ENGINE_NO_NODE;
	for (int n = 0; n < ev->nr_nodes; n++) {
		prior[n] = (double)vm->resident_mib[n];
		total += vm->resident_mib[n];
		if (nodemask_test(g->home & vm->policy.nodes, n) &&
		    (best < 0 || prior[n] > prior[best]))
			best = n;
	}
	if (total * 1000 < vm->mem_mib * ENGINE_SPAN_PRIOR_MIN_PERMILLE)
		return ENGINE_NO_NODE;
	return best;
}

/* Where vCPU v of ev should run, or ENGINE_NO_NODE when it may stay. */
static int
engine_vcpu_want(const struct eng_vm *ev, const struct snap_vm *vm, int v)
{
	const struct eng_group *g = &ev->groups[ev->vcpu_group[v]];
	int cur = ev->vcpu_node[v], c = ev->vcpu_conv[v];
	const double *f = &ev->fault_avg[(size_t)v * (size_t)ev->nr_nodes];
	double prior[UTIL_MAX_NODES];

	if (!g->spanning)
		return nodemask_first(g->home);
	if (ev->vcpu_strength[v] == 0) { /* too few faults: where the VM's memory is */
		c = engine_span_prior(ev, g, vm, prior);
		f = prior;
	} else if (ev->vcpu_strength[v] < ENGINE_STRONG / 2 || ev->adverse) {
		/* weak, or an adverse guest's (engine_chase.c): its faults are not followed */
		return ENGINE_NO_NODE;
	}
	if (c < 0 || c == cur || !nodemask_test(g->home, c) || !nodemask_test(vm->policy.nodes, c))
		return ENGINE_NO_NODE;
	return f[c] >= ENGINE_VCPU_GAIN_MARGIN * f[cur] ? c : ENGINE_NO_NODE;
}

/* May vnumad place vCPU v on node `to` at all (dwell times aside)? */
static bool
engine_vcpu_may_go(const struct eng_vm *ev, const struct snap_vm *vm, int to)
{
	return ev != NULL && ev->placed && engine_vm_acts(vm) &&
	       nodemask_test(vm->policy.nodes, to);
}

static bool
engine_vcpu_may_move(const struct eng_vm *ev, const struct snap_vm *vm, int v, int to, double now_s)
{
	return engine_vcpu_may_go(ev, vm, to) && now_s - ev->vcpu_moved_s[v] >= ENGINE_VCPU_DWELL_S;
}

/* Does at least half of the VM's resident memory sit on node n? */
static bool
engine_mem_mostly_on(const struct snap_vm *vm, int n, int nr_nodes)
{
	uint64_t total = 0;

	for (int m = 0; m < nr_nodes; m++)
		total += vm->resident_mib[m];
	return total > 0 && vm->resident_mib[n] * 2 >= total;
}

/*
 * Whether a flip that carries `delta` CPUs of demand from `from` to `to` (negative: the other
 * way) leaves the node that gains demand within its CPUs, or no more crowded than the other.
 */
static bool
engine_flip_fits(const struct eng_where *w, const struct snapshot *snap, int to, int from,
                 double delta)
{
	int up = delta >= 0 ? to : from, down = delta >= 0 ? from : to;
	double d = delta >= 0 ? delta : -delta;
	double up_after = w->demand[up] + d, down_after = w->demand[down] - d;

	return up_after <= snap->nodes[up].nr_cpus ||
	       up_after / snap->nodes[up].nr_cpus <= down_after / snap->nodes[down].nr_cpus;
}

/*
 * A partner on node `to` for vCPU v (group size gsize) to flip with: first a vCPU that wants
 * to go where v is, then one of the smallest strictly smaller group.  A weak spanning vCPU
 * (strength below ENGINE_STRONG, or judged by its VM's memory alone: a VM whose vCPUs share
 * its memory) gains only the difference of two nodes' shares of its accesses by the move,
 * while a displaced vCPU of a compact group loses nearly all of its own; so it displaces
 * (self_weak) only a partner whose VM has at least half of its memory on v's node already.
 * A flip in which a spanning group's vCPU takes part (self_span, or the partner's) never leaves
 * the node that gains CPU demand (the two vCPUs' demands differ: self_util against the
 * partner's) over its CPUs and more crowded than the other: it would trade idle CPU on one
 * node of the span for a queue on another.  Without `displace`, only partners that gain.
 * NULL if none.
 */
static struct eng_slot *
engine_flip_partner(struct eng_where *w, const struct snapshot *snap, int to, int from, int gsize,
                    const struct eng_vm *self, bool self_overflow, bool self_weak, bool self_span,
                    double self_util, bool displace, double now_s)
{
	struct eng_slot *best = NULL;
	int best_key = 0;

	for (int i = w->first[to]; i < w->first[to + 1]; i++) {
		struct eng_slot *s = &w->slots[i];
		int size, key;

		if (s->ev == NULL || s->ev->vcpu_node[s->v] != to ||
		    ((self_span || s->ev->groups[s->ev->vcpu_group[s->v]].spanning) &&
		     !engine_flip_fits(w, snap, to, from, self_util - s->ev->util_avg[s->v])) ||
		    !engine_vcpu_may_move(s->ev, s->vm, s->v, from, now_s))
			continue;
		size = engine_group_size(s->ev, s->v);
		if (engine_vcpu_want(s->ev, s->vm, s->v) == from)
			key = size; /* both gain: always preferred, smallest group first */
		else if (!displace || s->ev == self || size >= gsize || self_overflow ||
		         now_s - s->ev->vcpu_moved_s[s->v] < ENGINE_VM_DWELL_S ||
		         (self_weak && !engine_mem_mostly_on(s->vm, from, w->nr_nodes)))
			continue; /* overflow spans never displace; a displaced vCPU rests */
		else
			key = size + ENGINE_FLIP_GAIN_FIRST;
		if (best == NULL || key < best_key) {
			best = s;
			best_key = key;
		}
	}
	return best;
}

/*
 * A move of a spanning group's vCPU to `to` that follows its judged faults (not the memory
 * prior, not load) is judged later (engine_chase.c).
 */
static void
engine_chase_noted(struct eng_vm *ev, int v, int to, double now_s)
{
	const int *c = ev->vcpu_conv;

	if (ev->groups[ev->vcpu_group[v]].spanning && ev->vcpu_strength[v] >= ENGINE_STRONG / 2 &&
	    c[v] == to)
		engine_chase_note(ev, v, to, now_s);
}

/* Bookkeeping for a vCPU vnumad moves from `from` to `to` this round. */
static void
engine_note_move(struct engine *e, struct eng_vm *ev, int v, int from, int to, double now_s)
{
	if (ev->groups[ev->vcpu_group[v]].spanning)
		engine_load_move(e, ev, v, from, to);
	ev->vcpu_node[v] = to;
	ev->vcpu_moved_s[v] = now_s;
	ev->vcpu_pinned_s[v] = now_s;
	ev->vcpu_moves[v]++;
}

static void
engine_move_vcpu(struct engine *e, struct eng_vm *ev, const struct snap_vm *vm, int v, int to,
                 double now_s, struct plan *plan, const char *text)
{
	struct plan_pin *pin = plan_add_pin(plan, vm->id, v, nodemask_of(to));

	plan_reason_set(&pin->why, "compress", 1.0, "%s", text);
	engine_note_move(e, ev, v, ev->vcpu_node[v], to, now_s);
}

/* Whether no node of `nodes` has a whole CPU to spare for the demand running there. */
static bool
engine_no_free_cpu(const struct eng_where *w, const struct snapshot *snap, uint64_t nodes)
{
	for (int n = 0; n < snap->nr_nodes; n++)
		if (nodemask_test(nodes, n) && w->demand[n] + 1.0 <= snap->nodes[n].nr_cpus)
			return false;
	return true;
}

static void
engine_where_move(struct eng_where *w, const struct eng_vm *ev, int v, int from, int to)
{
	w->count[to]++;
	w->count[from]--;
	w->demand[to] += ev->util_avg[v];
	w->demand[from] -= ev->util_avg[v];
}

/*
 * Move or flip one vCPU toward `to`; returns 1 if an action was planned.  Without `displace`
 * only onto a free CPU or by a flip both vCPUs gain from.
 */
static int
engine_compress_vcpu(struct engine *e, struct eng_where *w, struct eng_vm *ev,
                     const struct snap_vm *vm, int v, int to, const struct snapshot *snap,
                     bool displace, struct plan *plan)
{
	int from = ev->vcpu_node[v];
	const struct eng_group *g;
	struct plan_pin *pin;
	struct eng_slot *p;
	char text[ENGINE_TEXT_LEN];

	if (!nodemask_test(vm->policy.nodes, from)) {
		/* Outside its policy's nodes: the policy wins over load, dwell and flips. */
		if (!engine_vcpu_may_go(ev, vm, to))
			return 0;
		snprintf(text, sizeof(text), "%s vCPU %d to node %d (its policy's nodes)", vm->name,
		         v, to);
		engine_move_vcpu(e, ev, vm, v, to, snap->now_s, plan, text);
		engine_where_move(w, ev, v, from, to);
		return 1;
	}
	if (!engine_vcpu_may_move(ev, vm, v, to, snap->now_s))
		return 0;
	/*
	 * Home has a free CPU; or no node the VM may use has one, and home, with this vCPU, is
	 * no more crowded than where it runs now (left where the scheduler put it, a group split
	 * over two overloaded nodes has the kernel pull its memory both ways).
	 */
	if (w->count[to] < snap->nodes[to].nr_cpus ||
	    (engine_no_free_cpu(w, snap, vm->policy.nodes) &&
	     (w->demand[to] + ev->util_avg[v]) / snap->nodes[to].nr_cpus <=
	         w->demand[from] / snap->nodes[from].nr_cpus)) {
		snprintf(text, sizeof(text), "%s vCPU %d to node %d (%s)", vm->name, v, to,
		         w->count[to] < snap->nodes[to].nr_cpus ? "free CPU" : "no more crowded");
		engine_move_vcpu(e, ev, vm, v, to, snap->now_s, plan, text);
		engine_where_move(w, ev, v, from, to);
		engine_chase_noted(ev, v, to, snap->now_s);
		return 1;
	}
	g = &ev->groups[ev->vcpu_group[v]];
	p = engine_flip_partner(w, snap, to, from, engine_group_size(ev, v), ev, g->primary >= 0,
	                        g->spanning && ev->vcpu_strength[v] < ENGINE_STRONG, g->spanning,
	                        ev->util_avg[v], displace, snap->now_s);
	if (p == NULL)
		return 0;
	snprintf(text, sizeof(text), "%s vCPU %d <-> %s vCPU %d (node %d full)", vm->name, v,
	         p->vm->name, p->v, to);
	pin = plan_add_flip(plan, vm->id, v, to, p->vm->id, p->v, from);
	plan_reason_set(&pin[0].why, "flip", 1.0, "%s", text);
	plan_reason_set(&pin[1].why, "flip", 1.0, "%s", text);
	engine_chase_noted(p->ev, p->v, from, snap->now_s); /* before: it wants `from` now */
	engine_note_move(e, ev, v, from, to, snap->now_s);
	engine_note_move(e, p->ev, p->v, to, from, snap->now_s);
	engine_chase_noted(ev, v, to, snap->now_s);
	w->demand[to] += ev->util_avg[v] - p->ev->util_avg[p->v];
	w->demand[from] += p->ev->util_avg[p->v] - ev->util_avg[v];
	return 1;
}

/*
 * Home-node hold (ESXi's home node, numad's cpuset): a vCPU of a compact group that sits on
 * its home node `to` while its affinity still reaches other nodes (never pinned, or pinned
 * before its group was re-homed or its policy changed) is pinned there.  Left floating, the
 * host's scheduler would carry it off now and then (a wake-up on an idle CPU elsewhere, a
 * load-balancing pull); each such visit costs remote accesses, shows as a locality dip, and
 * with the kernel's NUMA balancing on lets the kernel pull the VM's memory toward the visit.
 * The hold never changes where a vCPU runs, so node loads stay as they are; only compression
 * (moves and flips) and spreading move vCPUs.  Returns 1 if a pin was planned.
 */
static int
engine_hold_vcpu(struct eng_vm *ev, const struct snap_vm *vm, int v, int to,
                 const struct snapshot *snap, struct plan *plan)
{
	char text[ENGINE_TEXT_LEN];

	if (ev->vcpu_pinned_s[v] == snap->now_s || !engine_vcpu_may_go(ev, vm, to) ||
	    (vm->vcpus[v].allowed_nodes & nodemask_all_of(snap->nr_nodes) & ~nodemask_of(to)) == 0)
		return 0;
	snprintf(text, sizeof(text), "%s vCPU %d held on its home node %d", vm->name, v, to);
	engine_emit_pin(ev, vm, v, nodemask_of(to), snap->now_s, plan, "hold", 0, text);
	return 1;
}

struct eng_order {
	struct eng_vm *ev;
	const struct snap_vm *vm;
	int size;
};

/* Larger groups first, then higher priority, then lower VM id. */
static int
engine_order_cmp(const void *a, const void *b)
{
	const struct eng_order *x = a, *y = b;

	if (x->size != y->size)
		return y->size - x->size;
	if (x->vm->policy.priority != y->vm->policy.priority)
		return y->vm->policy.priority - x->vm->policy.priority;
	return (x->vm->id > y->vm->id) - (x->vm->id < y->vm->id);
}

static struct eng_order *
engine_order_build(struct engine *e, const struct snapshot *snap, int *nr)
{
	struct eng_order *o = xcalloc((size_t)snap->nr_vms + 1, sizeof(*o));
	int k = 0;

	for (int i = 0; i < snap->nr_vms; i++) {
		struct eng_vm *ev = engine_vm_lookup(e, snap->vms[i].id);

		if (ev == NULL || !ev->placed || !engine_vm_acts(&snap->vms[i]))
			continue;
		o[k].ev = ev;
		o[k].vm = &snap->vms[i];
		o[k].size = snap->vms[i].nr_vcpus;
		k++;
	}
	qsort(o, (size_t)k, sizeof(*o), engine_order_cmp);
	*nr = k;
	return o;
}

/* The node holding a strict majority of the group's vCPUs now (this round's moves included). */
static int
engine_group_majority(const struct eng_vm *ev, const struct eng_group *g)
{
	int count[UTIL_MAX_NODES] = {0};

	for (int i = 0; i < g->nr_vcpus; i++)
		if (++count[ev->vcpu_node[g->vcpus[i]]] * 2 > g->nr_vcpus)
			return ev->vcpu_node[g->vcpus[i]];
	return ENGINE_NO_NODE;
}

/*
 * A compact group whose vCPUs mostly sit on another node than its home (flips displaced
 * them there) takes that node as its new home, so it is not pulled back; memory follows.
 */
static void
engine_rehome_majority(struct engine *e, const struct snapshot *snap)
{
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct eng_vm *ev = engine_vm_lookup(e, vm->id);

		if (ev == NULL || !ev->placed || !engine_vm_acts(vm))
			continue;
		if (ev->rehomed_s == snap->now_s)
			continue; /* homed this round (arrival, spread): its pins are on the way */
		for (int k = 0; k < ev->nr_groups; k++) {
			struct eng_group *g = &ev->groups[k];
			int p = engine_group_majority(ev, g);

			if (g->spanning && ev->nr_groups == 1 &&
			    snap->now_s - ev->rehomed_s >= ENGINE_VM_DWELL_S &&
			    engine_try_compact(e, snap, ev, g, vm))
				continue;
			if (g->spanning || p < 0 || nodemask_test(g->home, p) ||
			    !nodemask_test(vm->policy.nodes, p))
				continue;
			for (int j = 0; j < g->nr_vcpus; j++)
				engine_target_commit(e, ev, g->vcpus[j], p);
			e->node_mem_proj[p] -= (int64_t)g->mem_mib;
			g->home = nodemask_of(p);
			ev->rehomed_s = snap->now_s;
		}
	}
}

/*
 * The node of spanning group g's set (and its policy) other than n where vCPU v's demand fits
 * in idle CPU, with the most of v's faults (then the most idle CPU, then the lower node),
 * or ENGINE_NO_NODE.
 */
static int
engine_relief_dest(const struct eng_where *w, const struct snapshot *snap, const struct eng_vm *ev,
                   const struct eng_group *g, const struct snap_vm *vm, int v, int n)
{
	const double *f = &ev->fault_avg[(size_t)v * (size_t)ev->nr_nodes];
	int best = ENGINE_NO_NODE;

	for (int d = 0; d < snap->nr_nodes; d++) {
		if (d == n || !nodemask_test(g->home & vm->policy.nodes, d) ||
		    w->demand[d] + ev->util_avg[v] > snap->nodes[d].nr_cpus)
			continue;
		if (best < 0 || f[d] > f[best] ||
		    (f[d] == f[best] && snap->nodes[d].nr_cpus - w->demand[d] >
		                            snap->nodes[best].nr_cpus - w->demand[best]))
			best = d;
	}
	return best;
}

/*
 * Span relief: a node of a spanning group's set whose runnable demand is ENGINE_RELIEF_EXCESS
 * or more above its CPUs, while another node of the set has idle CPU for a vCPU's demand,
 * sends the group's busy vCPUs there (those with the least of their faults on the crowded
 * node first) until it is less over than that.  Each such move leaves at most that much CPU
 * idle where it leaves and does a vCPU's work where it lands, remote or not.  Compression follows
 * faults only onto a free CPU and flips only when that leaves no CPU idle, so it never carries them
 * back while the crowding lasts; this undoes what arrival guesses (every vCPU assumed busy) and the
 * host's scheduler piled up. Returns the vCPUs moved.
 */
static int
engine_span_relieve(struct engine *e, struct eng_where *w, const struct snapshot *snap,
                    const struct eng_order *o, int nr, int budget, struct plan *plan)
{
	char text[ENGINE_TEXT_LEN];
	int done = 0;

	for (int i = 0; i < nr && done < budget; i++) {
		struct eng_vm *ev = o[i].ev;
		const struct snap_vm *vm = o[i].vm;

		for (int k = 0; k < ev->nr_groups && done < budget; k++) {
			const struct eng_group *g = &ev->groups[k];

			for (int n = 0; g->spanning && n < snap->nr_nodes && done < budget; n++) {
				while (done < budget && w->demand[n] >= snap->nodes[n].nr_cpus +
				                                            ENGINE_RELIEF_EXCESS) {
					int best = -1, best_d = ENGINE_NO_NODE;
					double best_key = 0;

					for (int j = 0; j < g->nr_vcpus; j++) {
						int v = g->vcpus[j], d;
						const double *f =
						    &ev->fault_avg[(size_t)v *
						                   (size_t)ev->nr_nodes];
						double key;

						if (ev->vcpu_node[v] != n ||
						    ev->util_avg[v] < ENGINE_RELIEF_BUSY ||
						    snap->now_s - ev->vcpu_moved_s[v] <
						        ENGINE_VCPU_DWELL_S)
							continue;
						d = engine_relief_dest(w, snap, ev, g, vm, v, n);
						if (d < 0 || !engine_vcpu_may_go(ev, vm, d))
							continue;
						key = f[n] - f[d];
						if (best < 0 || key < best_key) {
							best = v;
							best_d = d;
							best_key = key;
						}
					}
					if (best < 0)
						break;
					snprintf(text, sizeof(text),
					         "%s vCPU %d to node %d (node %d: %.1f CPUs wanted "
					         "of %d)",
					         vm->name, best, best_d, n, w->demand[n],
					         snap->nodes[n].nr_cpus);
					engine_move_vcpu(e, ev, vm, best, best_d, snap->now_s, plan,
					                 text);
					engine_where_move(w, ev, best, n, best_d);
					done++;
				}
			}
		}
	}
	return done;
}

void
engine_compress(struct engine *e, const struct snapshot *snap, struct plan *plan)
{
	struct eng_where w;
	int nr, done = 0, held = 0;
	struct eng_order *o;

	engine_rehome_majority(e, snap);
	o = engine_order_build(e, snap, &nr);
	engine_where_build(e, snap, &w);
	/*
	 * Moves and flips up to their cap; holds (which move nothing) up to theirs.  Two
	 * passes: the first moves only onto free CPUs and flips only where both vCPUs gain, so
	 * a larger group displaces a smaller one (second pass) only from what the round's other
	 * moves left full, never a vCPU that a later VM's move would have let stay.
	 */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < nr; i++)
			for (int v = 0; v < o[i].vm->nr_vcpus; v++) {
				int to = engine_vcpu_want(o[i].ev, o[i].vm, v);

				if (to >= 0 && to != o[i].ev->vcpu_node[v] &&
				    done < ENGINE_COMPRESS_PER_ROUND)
					done += engine_compress_vcpu(e, &w, o[i].ev, o[i].vm, v, to,
					                             snap, pass == 1, plan);
				else if (pass == 1 && to >= 0 && to == o[i].ev->vcpu_node[v] &&
				         held < ENGINE_HOLDS_PER_ROUND)
					held +=
					    engine_hold_vcpu(o[i].ev, o[i].vm, v, to, snap, plan);
			}
	engine_span_relieve(e, &w, snap, o, nr, ENGINE_COMPRESS_PER_ROUND - done, plan);
	engine_where_free(&w);
	free(o);
}

/* ---- spread ------------------------------------------------------------------------ */

static double
engine_group_util_sum(const struct eng_vm *ev, const struct eng_group *g)
{
	double u = 0;

	for (int i = 0; i < g->nr_vcpus; i++)
		u += ev->util_avg[g->vcpus[i]];
	return u;
}

/* Where group g (homed on n) could go without overloading the destination; -1 if nowhere. */
static int
engine_spread_dest(struct engine *e, const struct snapshot *snap, const struct eng_vm *ev,
                   const struct eng_group *g, const struct snap_vm *vm, int n)
{
	double u = engine_group_util_sum(ev, g), best_after = 0;
	double now = e->node_load[n] / snap->nodes[n].nr_cpus;
	double left = (e->node_load[n] - u) / snap->nodes[n].nr_cpus;
	int best = ENGINE_NO_NODE;

	for (int d = 0; d < snap->nr_nodes; d++) {
		double after = (e->node_load[d] + u) / snap->nodes[d].nr_cpus;
		int64_t need = (int64_t)g->mem_mib - engine_group_resident_mib(ev, g, vm, d);

		/* Onto a node it would overload only if that evens the two out: the worse of
		 * their ratios falls by ENGINE_SPREAD_EVEN_GAIN at least, and the group is no
		 * bigger than n's demand beyond its CPUs (a bigger one only carries the overload
		 * elsewhere, and its memory with it).  A node with room still wins: the least
		 * loaded destination is taken. */
		if (d == n || !nodemask_test(vm->policy.nodes, d) ||
		    (after > 1.0 &&
		     (now - (after > left ? after : left) < ENGINE_SPREAD_EVEN_GAIN ||
		      u > e->node_load[n] - snap->nodes[n].nr_cpus ||
		      nodemask_test(e->span_nodes, n) || nodemask_test(e->span_nodes, d))) ||
		    g->nr_vcpus > snap->nodes[d].nr_cpus ||
		    need > engine_room_mib(e, snap, d, false))
			continue;
		if (best < 0 || after < best_after - 1e-12 ||
		    (after < best_after + 1e-12 &&
		     snapshot_distance(snap, n, d) < snapshot_distance(snap, n, best))) {
			best = d;
			best_after = after;
		}
	}
	return best;
}

static void
engine_rehome(struct engine *e, struct eng_vm *ev, struct eng_group *g, const struct snap_vm *vm,
              int d, const struct snapshot *snap, struct plan *plan)
{
	int n = nodemask_first(g->home);
	char text[ENGINE_TEXT_LEN];

	snprintf(text, sizeof(text), "node %d overloaded (%.1f CPUs wanted of %d): %s to node %d",
	         n, e->node_load[n], snap->nodes[n].nr_cpus, vm->name, d);
	for (int i = 0; i < g->nr_vcpus; i++) {
		engine_target_commit(e, ev, g->vcpus[i], d);
		engine_emit_pin(ev, vm, g->vcpus[i], nodemask_of(d), snap->now_s, plan, "spread",
		                1.0, text);
	}
	e->node_mem_proj[d] -= (int64_t)g->mem_mib;
	g->home = nodemask_of(d);
	ev->rehomed_s = snap->now_s;
}

/* The smallest movable group on node n that has somewhere to go; returns 1 if moved. */
static int
engine_spread_node(struct engine *e, const struct snapshot *snap, int n, struct plan *plan)
{
	struct eng_vm *best_ev = NULL;
	struct eng_group *best_g = NULL;
	const struct snap_vm *best_vm = NULL;
	int best_d = ENGINE_NO_NODE;

	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct eng_vm *ev = engine_vm_lookup(e, vm->id);

		if (ev == NULL || !ev->placed || !engine_vm_acts(vm) ||
		    snap->now_s - ev->rehomed_s < ENGINE_VM_DWELL_S)
			continue;
		for (int k = 0; k < ev->nr_groups; k++) {
			struct eng_group *g = &ev->groups[k];
			int d;

			if (g->spanning || g->home != nodemask_of(n) ||
			    (best_g && g->nr_vcpus >= best_g->nr_vcpus))
				continue;
			d = engine_spread_dest(e, snap, ev, g, vm, n);
			if (d >= 0) {
				best_ev = ev;
				best_g = g;
				best_vm = vm;
				best_d = d;
			}
		}
	}
	if (best_g == NULL)
		return 0;
	engine_rehome(e, best_ev, best_g, best_vm, best_d, snap, plan);
	return 1;
}

void
engine_spread(struct engine *e, const struct snapshot *snap, struct plan *plan)
{
	e->span_nodes = 0;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct eng_vm *ev = engine_vm_lookup(e, snap->vms[i].id);

		for (int k = 0; ev != NULL && ev->placed && k < ev->nr_groups; k++)
			if (ev->groups[k].spanning)
				e->span_nodes |= ev->groups[k].home;
	}
	for (int k = 0; k < ENGINE_SPREAD_PER_ROUND; k++) {
		int worst = ENGINE_NO_NODE;
		double worst_ratio = ENGINE_SPREAD_OVERLOAD;

		for (int n = 0; n < snap->nr_nodes; n++) {
			double r =
			    e->node_load[n] / (snap->nodes[n].nr_cpus ? snap->nodes[n].nr_cpus : 1);

			if (r > worst_ratio) {
				worst = n;
				worst_ratio = r;
			}
		}
		if (worst < 0 || !engine_spread_node(e, snap, worst, plan))
			return;
	}
}

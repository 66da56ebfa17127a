/*
 * peer_numad_pick.c - numad's node choice (numad 20150602, pick_numa_nodes()): the numad
 * peer's daemon loop (peer_numad.c) calls it for the process it evaluates, the static peer for
 * `numad -w` advice (peer_numad.h).
 *
 * Everything here follows numad's own arithmetic (integer MB and hundredths of a CPU); where
 * the model departs from numad it says so, and docs/peers/numad.md lists every departure.
 */
#include "host/sim/peer_numad.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "host/sim/peer_numad_internal.h"

/* ---- model constants (not numad's) -------------------------------------------------- */

/* Guard against float error when turning a CPU fraction into numad's integer hundredths. */
#define NUMAD_CPU_EPS 1e-9

/* ---- node choice -------------------------------------------------------------------- */

uint64_t
numad_all_nodes(int nr_nodes)
{
	return nr_nodes >= 64 ? NODEMASK_ALL : ((uint64_t)1 << nr_nodes) - 1;
}

static int64_t
numad_cpus_to_c(double cpus)
{
	return (int64_t)floor(cpus * NUMAD_ONE_HUNDRED + NUMAD_CPU_EPS);
}

/* A VM's RSS (MB) and CPU use (centi-CPUs), as numad reads them for its QEMU process. */
int64_t
numad_vm_rss(const struct snapshot *snap, const struct snap_vm *vm)
{
	int64_t rss = 0;

	for (int n = 0; n < snap->nr_nodes; n++)
		rss += (int64_t)vm->resident_mib[n];
	return rss;
}

int64_t
numad_vm_cpus_c(const struct snap_vm *vm)
{
	double cpus = 0;

	for (int v = 0; v < vm->nr_vcpus; v++)
		cpus += vm->vcpus[v].cpu_use;
	return numad_cpus_to_c(cpus);
}

uint64_t
numad_node_magnitude(int64_t req_mbs, int64_t req_cpus_c, int64_t free_mbs, int64_t free_cpus_c)
{
	/*
	 * numad never lets excess go negative: when free <= request, needed = free and
	 * excess = 0.  A negative free (numad's unsigned wrap, impossible here) counts as 0.
	 */
	int64_t need_m = free_mbs > req_mbs ? req_mbs : free_mbs;
	int64_t extra_m = free_mbs > req_mbs ? free_mbs - req_mbs : 0;
	int64_t need_c = free_cpus_c > req_cpus_c ? req_cpus_c : free_cpus_c;
	int64_t extra_c = free_cpus_c > req_cpus_c ? free_cpus_c - req_cpus_c : 0;
	int64_t mem_factor = need_m * NUMAD_W_NEED_MEM + extra_m * NUMAD_W_EXCESS_MEM;
	int64_t cpu_factor = need_c * NUMAD_W_NEED_CPU + extra_c * NUMAD_W_EXCESS_CPU;

	if (mem_factor < 0 || cpu_factor < 0)
		return 0;
	return (uint64_t)mem_factor * (uint64_t)cpu_factor;
}

void
numad_nodes_measure(const struct snapshot *snap, struct numad_node *nodes)
{
	double busy[UTIL_MAX_NODES] = {0};

	for (int i = 0; i < snap->nr_vms; i++)
		for (int v = 0; v < snap->vms[i].nr_vcpus; v++)
			if (snap->vms[i].vcpus[v].node >= 0 &&
			    snap->vms[i].vcpus[v].node < snap->nr_nodes)
				busy[snap->vms[i].vcpus[v].node] += snap->vms[i].vcpus[v].cpu_use;
	for (int n = 0; n < snap->nr_nodes; n++) {
		nodes[n].mbs_total = (int64_t)snap->nodes[n].mem_total_mib;
		nodes[n].mbs_free = (int64_t)snap->nodes[n].mem_free_mib;
		nodes[n].cpus_total_c = (int64_t)snap->nodes[n].nr_cpus * NUMAD_ONE_HUNDRED;
		nodes[n].cpus_free_c = numad_cpus_to_c(snap->nodes[n].nr_cpus - busy[n]);
		if (nodes[n].cpus_free_c < 0)
			nodes[n].cpus_free_c = 0;
		if (nodes[n].cpus_free_c > nodes[n].cpus_total_c)
			nodes[n].cpus_free_c = nodes[n].cpus_total_c;
	}
}

/*
 * Copy the node data and add the process's own usage back (numad's tmp_node[]).  Unbound:
 * its memory there x 17/16 and its CPU in proportion to that memory.  Bound to a subset:
 * its memory x 5/4 everywhere, and on its nodes the free CPU becomes the average free CPU of
 * its nodes plus its own use.  Returns numad's sum_of_node_CPUs_free (before clamping).
 */
static int64_t
numad_nodes_add_back(int nr, const struct numad_node *nodes, const struct numad_proc_usage *proc,
                     struct numad_node *tmp)
{
	int64_t sum_free_c = 0, avg_c = 0;
	bool unbound = true;

	memcpy(tmp, nodes, (size_t)nr * sizeof(*tmp));
	if (proc != NULL) {
		uint64_t list = proc->node_list & numad_all_nodes(nr);

		unbound = nodemask_weight(list) >= nr;
		avg_c = proc->cpus_used_c;
		for (int n = 0; n < nr; n++)
			if (nodemask_test(list, n))
				avg_c += nodes[n].cpus_free_c;
		if (!unbound && list != 0)
			avg_c /= nodemask_weight(list);
	}
	for (int n = 0; n < nr && proc != NULL; n++) {
		int64_t mbs = (int64_t)proc->node_mbs[n];

		if (unbound) {
			tmp[n].mbs_free += mbs * 17 / 16;
			if (proc->mbs_used > 0)
				tmp[n].cpus_free_c += proc->cpus_used_c * mbs / proc->mbs_used;
		} else {
			tmp[n].mbs_free += mbs * 5 / 4;
			if (nodemask_test(proc->node_list, n))
				tmp[n].cpus_free_c = avg_c;
		}
		sum_free_c += tmp[n].cpus_free_c;
		if (tmp[n].cpus_free_c > tmp[n].cpus_total_c)
			tmp[n].cpus_free_c = tmp[n].cpus_total_c;
		if (tmp[n].mbs_free > tmp[n].mbs_total)
			tmp[n].mbs_free = tmp[n].mbs_total;
	}
	for (int n = 0; n < nr; n++)
		if (tmp[n].cpus_free_c < 1) /* numad: "1/100th CPU minimum" */
			tmp[n].cpus_free_c = 1;
	return sum_free_c;
}

/*
 * Order all nodes by distance from start, ties by larger magnitude: numad's selection sort,
 * swaps included, so full ties end in the same order numad would produce.
 */
static void
numad_order_from(const struct snapshot *snap, const uint64_t *mag, int start, int *order)
{
	int nr = snap->nr_nodes;

	for (int n = 0; n < nr; n++)
		order[n] = n;
	for (int i = 0; i < nr; i++) {
		int best = i, tmp;

		for (int k = i + 1; k < nr; k++) {
			int dk = snapshot_distance(snap, order[k], start);
			int db = snapshot_distance(snap, order[best], start);

			if (db > dk || (db == dk && mag[order[best]] < mag[order[k]]))
				best = k;
		}
		tmp = order[i];
		order[i] = order[best];
		order[best] = tmp;
	}
}

/* Minimum node count, every node assumed the size of node 0; at most all nodes. */
static int
numad_min_nodes(const struct numad_node *nodes, int nr, int64_t req_mbs, int64_t cpus_c)
{
	int mem_nodes = nr, cpu_nodes = nr, k;

	if (nodes[0].mbs_total > 0)
		mem_nodes = (int)ceil((double)req_mbs / (double)nodes[0].mbs_total);
	if (nodes[0].cpus_total_c > 0)
		cpu_nodes = (int)ceil((double)cpus_c / (double)nodes[0].cpus_total_c);
	k = mem_nodes > cpu_nodes ? mem_nodes : cpu_nodes;
	return k > nr ? nr : k;
}

/* The start node whose nearest k nodes have the largest sum of magnitude / distance^2. */
static int
numad_best_start(const struct snapshot *snap, const uint64_t *mag, int k, uint64_t *totmag_out)
{
	int order[UTIL_MAX_NODES], best = 0;
	uint64_t best_tot = 0;

	for (int s = 0; s < snap->nr_nodes; s++) {
		uint64_t tot = 0;

		numad_order_from(snap, mag, s, order);
		for (int j = 0; j < k; j++) {
			uint64_t d = (uint64_t)snapshot_distance(snap, order[j], s);

			tot += d > 0 ? mag[order[j]] / (d * d) : mag[order[j]];
		}
		if (s == 0 || best_tot < tot) { /* strict: ties keep the lower index */
			best = s;
			best_tot = tot;
		}
	}
	*totmag_out = best_tot;
	return best;
}

/*
 * Walk out from the start by distance, adding nodes until the minimum count is reached and
 * memory (keeping NUMAD_MBS_MARGIN MB per node) and CPU beyond the flex are covered, or all
 * nodes are taken.  Like numad, a node with less than the margin free makes mbs grow.
 */
static void
numad_walk(int nr, struct numad_node *tmp, const int *order, int64_t mbs, int64_t cpus_c,
           int64_t flex_c, bool assume_enough_cpus, struct numad_choice *out)
{
	int left = out->min_nodes;
	uint64_t all = numad_all_nodes(nr);

	for (int i = 0; i < nr && (left > 0 || mbs > 0 || (cpus_c > flex_c && !assume_enough_cpus));
	     i++) {
		struct numad_node *nd = &tmp[order[i]];
		int64_t take_m, take_c;

		out->nodes |= nodemask_of(order[i]);
		left--;
		if (out->nodes == all)
			break;
		take_m =
		    nd->mbs_free >= mbs + NUMAD_MBS_MARGIN ? mbs : nd->mbs_free - NUMAD_MBS_MARGIN;
		take_c = nd->cpus_free_c >= cpus_c + NUMAD_CPUS_MARGIN_C
		             ? cpus_c
		             : nd->cpus_free_c - NUMAD_CPUS_MARGIN_C;
		nd->mbs_free -= take_m;
		nd->cpus_free_c -= take_c;
		mbs -= take_m;
		cpus_c -= take_c;
		out->take_mbs[order[i]] = take_m;
		out->take_cpus_c[order[i]] = take_c;
	}
}

int
numad_pick_nodes(const struct snapshot *snap, const struct numad_node *nodes,
                 const struct numad_proc_usage *proc, int64_t req_mbs, int64_t req_cpus_c,
                 bool assume_enough_cpus, struct numad_choice *out)
{
	struct numad_node tmp[UTIL_MAX_NODES];
	uint64_t mag[UTIL_MAX_NODES];
	int order[UTIL_MAX_NODES], nr = snap->nr_nodes;
	int64_t sum_free_c, flex_c = 0;

	if (nr < 1 || nr > UTIL_MAX_NODES)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	sum_free_c = numad_nodes_add_back(nr, nodes, proc, tmp);
	for (int n = 0; n < nr; n++)
		mag[n] =
		    numad_node_magnitude(req_mbs, req_cpus_c, tmp[n].mbs_free, tmp[n].cpus_free_c);
	if (proc != NULL) {
		/* CPUs oversubscribed: place by memory.  Flex: half the utilisation margin. */
		if (req_cpus_c > sum_free_c)
			assume_enough_cpus = true;
		flex_c = (100 - NUMAD_TARGET_UTIL_PCT) * nodes[0].cpus_total_c / 200;
	} else {
		assume_enough_cpus = false; /* advice errs on the side of too many resources */
	}
	out->min_nodes = numad_min_nodes(nodes, nr, req_mbs, req_cpus_c - flex_c);
	out->start_node = numad_best_start(snap, mag, out->min_nodes, &out->totmag);
	numad_order_from(snap, mag, out->start_node, order);
	numad_walk(nr, tmp, order, req_mbs, req_cpus_c, flex_c, assume_enough_cpus, out);
	if (proc == NULL && out->nodes == 0) /* advice always names at least one node */
		out->nodes = nodemask_of(0);
	return 0;
}

int
numad_choose_nodes(const struct snapshot *snap, int vm_idx, double req_mem_mib, double req_cpus,
                   uint64_t *nodes_out)
{
	struct numad_node nodes[UTIL_MAX_NODES];
	struct numad_proc_usage usage, *proc = NULL;
	struct numad_choice choice;
	int rc;

	if (snap->nr_nodes < 1 || snap->nr_nodes > UTIL_MAX_NODES || vm_idx >= snap->nr_vms)
		return -EINVAL;
	numad_nodes_measure(snap, nodes);
	if (vm_idx >= 0) {
		const struct snap_vm *vm = &snap->vms[vm_idx];

		usage.node_mbs = vm->resident_mib;
		usage.mbs_used = numad_vm_rss(snap, vm);
		usage.cpus_used_c = numad_vm_cpus_c(vm);
		usage.node_list = 0;
		for (int v = 0; v < vm->nr_vcpus; v++)
			usage.node_list |= vm->vcpus[v].allowed_nodes;
		proc = &usage;
	}
	rc = numad_pick_nodes(snap, nodes, proc, (int64_t)req_mem_mib, numad_cpus_to_c(req_cpus),
	                      true, &choice);
	if (rc == 0)
		*nodes_out = choice.nodes;
	return rc;
}

/*
 * oracle_shape.c - stage 1 of the oracle's search: a shape per VM (one node, or a set of nodes
 * with the VM split across them), chosen exhaustively over all VMs' combinations when they are
 * few, else greedily, largest VM first.  See docs/peers/oracle.md.
 */
#include "host/sim/peer_oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/sim.h"
#include "policy/util.h"

/* Exhaustive stage-1 search when the product of per-VM shape counts is at most this (brief). */
#define ORACLE_EXHAUSTIVE_MAX 200000
/*
 * Node sets tried for a VM spanning k nodes: all k-subsets while there are at most this many
 * (70 = C(8,4): every split on an 8-node host), else one set per start node (the start and its
 * nearest nodes, as numad builds them).
 */
#define ORACLE_MAX_SPAN_SETS 70

/* ---- stage 1: shapes ---------------------------------------------------------------- */

/* The nodes of sh's mask: first, then the others nearest to it (ties: lower index). */
static int
shape_order(const struct oracle_srch *sr, const struct oracle_shape *sh, int *ord)
{
	const int *d = &sr->om->dist[sh->first * sr->nn];
	int k = 0;

	ord[k++] = sh->first;
	for (int n = 0; n < sr->nn; n++) {
		int j = k;

		if (n == sh->first || !nodemask_test(sh->mask, n))
			continue;
		while (j > 1 && d[ord[j - 1]] > d[n]) {
			ord[j] = ord[j - 1];
			j--;
		}
		ord[j] = n;
		k++;
	}
	return k;
}

/*
 * The rank (in ord[0..k)) of the node that takes a unit of len_mib spilled from node home:
 * the nearest to home with room for it (ties: lower rank); the last when none has room.  With
 * cut_mib, a node nearer than that with room for part of it is returned as -1 - rank, and
 * *cut_mib the whole regions that fit there.
 */
static int
shape_spill_to(const struct oracle_srch *sr, const int *ord, int k, const uint64_t *left, int home,
               uint64_t len_mib, uint64_t *cut_mib)
{
	const int *d = &sr->om->dist[home * sr->nn];
	int best = -1, part = -1;

	for (int i = 0; i < k; i++) {
		if (left[i] >= len_mib && (best < 0 || d[ord[i]] < d[ord[best]]))
			best = i;
		if (left[i] >= SIM_REGION_MIB && left[i] < len_mib &&
		    (part < 0 || d[ord[i]] < d[ord[part]]))
			part = i;
	}
	if (cut_mib != NULL && part >= 0 && (best < 0 || d[ord[part]] < d[ord[best]])) {
		*cut_mib = left[part] / SIM_REGION_MIB * SIM_REGION_MIB;
		return -1 - part;
	}
	return best >= 0 ? best : k - 1;
}

/*
 * Fill and spill: in shape_order, each node takes as many vCPUs as it has CPUs (by index; the
 * last the rest).  Memory: shared RAM fills the nodes in that order.  Other workloads' units
 * go onto their vCPU's node as far as it has room; the rest, once that is done, onto the
 * nearest node with room.  A node's room is its capacity.  With cut_mib, stop at the first
 * unit that would fit only in part where it goes and return it, *cut_mib the whole regions
 * that fit; else return -1.
 */
static int
shape_spill(struct oracle_srch *sr, int vm, const struct oracle_shape *sh, int *tv, int *tu,
            uint64_t *cut_mib)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	const struct oracle_srch_vm *s = &sr->vms[vm];
	int ord[SCN_MAX_NODES], rank[SCN_MAX_NODES], k = shape_order(sr, sh, ord), per;
	bool shared = vmm->access == ORACLE_ACCESS_SHARED;
	uint64_t left[SCN_MAX_NODES];

	per = vmm->util > 0 ? (int)(sr->om->cpus_per_node / vmm->util + 1e-9) : vmm->nr_vcpus;
	per = per < 1 ? 1 : per;
	for (int i = 0; i < k; i++) {
		rank[ord[i]] = i;
		left[i] = sr->om->cap_mib;
	}
	for (int i = 0; i < vmm->nr_vcpus; i++)
		tv[s->vcpu_order[i]] = ord[i / per < k ? i / per : k - 1];
	for (int u = 0; u < s->nr_units; u++) {
		int i = shared ? 0 : rank[tv[s->unit_group[u]]];
		uint64_t len = s->unit_len[u];

		tu[u] = -1;
		while (shared && i < k - 1 && left[i] < len) {
			if (cut_mib != NULL && left[i] >= SIM_REGION_MIB)
				break;
			i++;
		}
		if (left[i] >= len || (shared && i == k - 1)) {
			tu[u] = ord[i];
			left[i] = left[i] > len ? left[i] - len : 0;
		} else if (cut_mib != NULL && left[i] >= SIM_REGION_MIB) {
			*cut_mib = left[i] / SIM_REGION_MIB * SIM_REGION_MIB;
			return u;
		}
	}
	for (int u = 0; u < s->nr_units; u++) {
		int i;

		if (tu[u] >= 0)
			continue;
		i = shape_spill_to(sr, ord, k, left, tv[s->unit_group[u]], s->unit_len[u], cut_mib);
		if (i < 0)
			return u; /* *cut_mib set by shape_spill_to */
		tu[u] = ord[i];
		left[i] = left[i] > s->unit_len[u] ? left[i] - s->unit_len[u] : 0;
	}
	return -1;
}

/* Cut vm's units where fill-and-spill shape sh fills a node, so that it fills it exactly. */
static void
shape_cut(struct oracle_srch *sr, int vm, const struct oracle_shape *sh)
{
	uint64_t cut;
	int u;

	for (int i = 0; i < SCN_MAX_NODES; i++) {
		u = shape_spill(sr, vm, sh, sr->tv, sr->tu, &cut);
		if (u < 0)
			return;
		oracle_srch_unit_split(sr, vm, u, cut);
		sr->vms[vm].unit_base[u + 1] = true; /* a cut of stage 1, kept */
	}
}

/* Fill tv/tu with VM vm over the nodes of shape sh (see docs/peers/oracle.md). */
void
oracle_shape_fill(struct oracle_srch *sr, int vm, const struct oracle_shape *sh, int *tv, int *tu)
{
	const struct scn_vm *sv = &sr->om->scn->vms[vm];
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	const struct oracle_srch_vm *s = &sr->vms[vm];
	int nodes[SCN_MAX_NODES], k = 0, nv = vmm->nr_vcpus;
	bool by_cell;

	if (sh->first >= 0) {
		shape_spill(sr, vm, sh, tv, tu, NULL);
		return;
	}
	for (int n = 0; n < sr->nn; n++)
		if (nodemask_test(sh->mask, n))
			nodes[k++] = n;
	by_cell = sv->workload == SCN_WORKLOAD_CELLS && sv->nr_cells >= k;
	for (int i = 0; i < nv; i++) {
		int v = s->vcpu_order[i], cell = vmm->vcpu_slice[v];

		tv[v] = by_cell && cell >= 0 ? nodes[cell * k / sv->nr_cells] : nodes[i * k / nv];
	}
	for (int u = 0; u < s->nr_units; u++) {
		if (by_cell)
			tu[u] = nodes[s->unit_slice[u] * k / sv->nr_cells];
		else if (k <= nv)
			tu[u] = tv[s->unit_group[u]];
		else
			tu[u] = nodes[(s->unit_start[u] + s->unit_len[u] / 2) * (uint64_t)k /
			              vmm->mem_mib];
	}
}

/* Add shape (mask, first) unless the VM has it; a fill-and-spill shape cuts its units. */
static void
cands_add(struct oracle_srch *sr, int vm, size_t *cap, uint64_t mask, int first)
{
	struct oracle_srch_vm *sv = &sr->vms[vm];

	for (int i = 0; i < sv->nr_cands; i++)
		if (sv->cands[i].mask == mask && sv->cands[i].first == first)
			return;
	util_array_reserve((void **)&sv->cands, cap, (size_t)sv->nr_cands + 1, sizeof(*sv->cands));
	sv->cands[sv->nr_cands].mask = mask;
	sv->cands[sv->nr_cands].first = first;
	sv->nr_cands++;
	if (first >= 0)
		shape_cut(sr, vm, &sv->cands[sv->nr_cands - 1]);
}

/* A span over mask: the even split and, when the VM fits no node (fill), one per first node. */
static void
cands_add_span(struct oracle_srch *sr, int vm, size_t *cap, uint64_t mask, bool fill)
{
	cands_add(sr, vm, cap, mask, -1);
	for (int n = 0; fill && n < sr->nn; n++)
		if (nodemask_test(mask, n))
			cands_add(sr, vm, cap, mask, n);
}

static uint64_t
binom_capped(int n, int k)
{
	uint64_t r = 1;

	for (int i = 1; i <= k && r <= ORACLE_MAX_SPAN_SETS; i++)
		r = r * (uint64_t)(n - k + i) / (uint64_t)i;
	return r;
}

/* Every k-subset of the nodes in allowed, in lexicographic order. */
static void
cands_all_subsets(struct oracle_srch *sr, int vm, size_t *cap, const int *nodes, int na, int k,
                  bool fill)
{
	int idx[SCN_MAX_NODES];

	for (int i = 0; i < k; i++)
		idx[i] = i;
	for (;;) {
		uint64_t mask = 0;
		int i = k - 1;

		for (int t = 0; t < k; t++)
			mask |= nodemask_of(nodes[idx[t]]);
		cands_add_span(sr, vm, cap, mask, fill);
		while (i >= 0 && idx[i] == na - k + i)
			i--;
		if (i < 0)
			return;
		idx[i]++;
		for (int t = i + 1; t < k; t++)
			idx[t] = idx[t - 1] + 1;
	}
}

/* From each allowed start node, the start and its k-1 nearest allowed nodes (fill from it). */
static void
cands_nearest(struct oracle_srch *sr, int vm, size_t *cap, const int *nodes, int na, int k,
              bool fill)
{
	for (int a = 0; a < na; a++) {
		uint64_t mask = nodemask_of(nodes[a]);

		for (int t = 1; t < k; t++) {
			int best = -1;

			for (int b = 0; b < na; b++) {
				int d = sr->om->dist[nodes[a] * sr->nn + nodes[b]];

				if (nodemask_test(mask, nodes[b]))
					continue;
				if (best < 0 || d < sr->om->dist[nodes[a] * sr->nn + nodes[best]])
					best = b;
			}
			mask |= nodemask_of(nodes[best]);
		}
		cands_add(sr, vm, cap, mask, -1);
		if (fill)
			cands_add(sr, vm, cap, mask, nodes[a]);
	}
}

/* Nodes a VM needs at least: for its CPU demand and for its memory. */
static int
cands_min_nodes(const struct oracle_srch *sr, int vm, int *k_mem)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	double k_cpu = ceil(vmm->util * vmm->nr_vcpus / sr->om->cpus_per_node - 1e-9);

	if (sr->om->cap_mib == 0)
		*k_mem = sr->nn;
	else
		*k_mem = (int)((vmm->mem_mib + sr->om->cap_mib - 1) / sr->om->cap_mib);
	return k_cpu > *k_mem ? (int)k_cpu : *k_mem;
}

/*
 * Stage-1 shapes of a VM: each allowed node if its memory fits one; spans over the fewest
 * nodes it needs and over one more (so exhaustive search also weighs splitting a VM that fits
 * against sharing CPUs); for cells, one node per cell.
 */
void
oracle_shape_build(struct oracle_srch *sr, int vm)
{
	const struct scn_vm *scv = &sr->om->scn->vms[vm];
	int nodes[SCN_MAX_NODES], na = 0, k_mem, k_min = cands_min_nodes(sr, vm, &k_mem);
	int ks[3];
	size_t cap = 0;
	bool fill;

	for (int n = 0; n < sr->nn; n++)
		if (nodemask_test(sr->om->vms[vm].allowed, n))
			nodes[na++] = n;
	k_min = k_min < 1 ? 1 : k_min > na ? na : k_min;
	fill = sr->fill_shapes && k_min >= 2; /* a VM that fits one node fills it whole */
	if (k_mem <= 1 || na == 1)
		for (int a = 0; a < na; a++)
			cands_add(sr, vm, &cap, nodemask_of(nodes[a]), -1);
	ks[0] = k_min;
	ks[1] = k_min + 1 <= sr->om->vms[vm].nr_vcpus ? k_min + 1 : 0;
	ks[2] = scv->workload == SCN_WORKLOAD_CELLS ? scv->nr_cells : 0;
	for (int i = 0; i < 3; i++) {
		if (ks[i] <= 1 || ks[i] > na || (i == 2 && ks[2] <= k_min))
			continue;
		if (binom_capped(na, ks[i]) <= ORACLE_MAX_SPAN_SETS)
			cands_all_subsets(sr, vm, &cap, nodes, na, ks[i], fill && i < 2);
		else
			cands_nearest(sr, vm, &cap, nodes, na, ks[i], fill && i < 2);
	}
}

/* Mean time-weighted load (CPU and memory fraction) of the nodes of mask over vm's life. */
static double
greedy_load(const struct oracle_srch *sr, int vm, uint64_t mask)
{
	const struct oracle_model *om = sr->om;
	double load = 0;

	for (int j = om->vms[vm].first; j <= om->vms[vm].last; j++)
		for (int n = 0; n < sr->nn; n++) {
			size_t k = (size_t)j * sr->nn + n;

			if (!nodemask_test(mask, n))
				continue;
			load += om->seg_len_s[j] *
			        (sr->seg_u[k] / om->cpus_per_node +
			         (om->cap_mib ? (double)sr->seg_m[k] / (double)om->cap_mib : 1.0));
		}
	return load / nodemask_weight(mask);
}

/* Is shape (d, load) better than the best so far?  Fits first, then gain, then low load. */
static bool
greedy_better(const struct oracle_srch *sr, const struct oracle_srch_result *d, double load,
              bool have, const struct oracle_srch_result *best, double best_load)
{
	if (!have)
		return true;
	if (d->feasible != best->feasible)
		return d->feasible;
	if (!d->feasible && d->over_mib != best->over_mib)
		return d->over_mib < best->over_mib;
	if (d->gain > best->gain + sr->eps)
		return true;
	return d->gain >= best->gain - sr->eps && load < best_load - 1e-12;
}

/* MiB node n can still take over all of vm's lifetime (0 when it is full). */
static uint64_t
greedy_room(const struct oracle_srch *sr, int vm, int n)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	uint64_t room = sr->om->cap_mib;

	for (int j = vmm->first; j <= vmm->last; j++) {
		uint64_t used = sr->seg_m[(size_t)j * sr->nn + n];

		room = used >= sr->om->cap_mib         ? 0
		       : sr->om->cap_mib - used < room ? sr->om->cap_mib - used
		                                       : room;
	}
	return room;
}

/*
 * No shape fits: keep the vCPUs of the best shape (in sr->tv) and re-place memory units that
 * do not fit where they are on the nearest allowed node with room (ties: lower index).  What
 * fits nowhere stays put: the scenario overcommits memory.
 */
static void
greedy_refit(struct oracle_srch *sr, int vm)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	uint64_t room[SCN_MAX_NODES];

	for (int n = 0; n < sr->nn; n++)
		room[n] = greedy_room(sr, vm, n);
	for (int u = 0; u < sv->nr_units; u++) {
		int home = sr->tv[sv->unit_group[u]], best = -1;

		for (int n = 0; n < sr->nn; n++) {
			if (!nodemask_test(sr->om->vms[vm].allowed, n) || room[n] < sv->unit_len[u])
				continue;
			if (best < 0 || n == home ||
			    (best != home &&
			     sr->om->dist[home * sr->nn + n] < sr->om->dist[home * sr->nn + best]))
				best = n;
		}
		if (best < 0)
			best = sr->tu[u];
		sr->tu[u] = best;
		room[best] = room[best] >= sv->unit_len[u] ? room[best] - sv->unit_len[u] : 0;
	}
}

/* Place vm on its best shape given the VMs placed so far.  Returns false if nothing fits. */
static bool
greedy_place(struct oracle_srch *sr, int vm)
{
	struct oracle_srch_vm *sv = &sr->vms[vm];
	struct oracle_srch_result d, best = {false, 0, 0};
	struct oracle_srch_change ch = {vm, &sr->tc};
	double best_load = 0;
	int best_c = -1;

	for (int c = 0; c < sv->nr_cands; c++) {
		double load;

		oracle_shape_fill(sr, vm, &sv->cands[c], sr->tv, sr->tu);
		oracle_srch_eval(sr, vm, sr->tv, sr->tu, NULL, &sr->tc);
		oracle_srch_delta(sr, &ch, 1, &d);
		load = greedy_load(sr, vm, sv->cands[c].mask);
		if (greedy_better(sr, &d, load, best_c >= 0, &best, best_load)) {
			best = d;
			best_load = load;
			best_c = c;
		}
	}
	oracle_shape_fill(sr, vm, &sv->cands[best_c], sr->tv, sr->tu);
	if (!best.feasible)
		greedy_refit(sr, vm);
	oracle_srch_eval(sr, vm, sr->tv, sr->tu, NULL, &sr->tc);
	oracle_srch_apply(sr, vm, sr->tv, sr->tu, &sr->tc);
	return best.feasible;
}

/* Size of a VM for the greedy order: the larger of its CPU and memory share of a node. */
static double
greedy_size(const struct oracle_srch *sr, int vm)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	double cpu = vmm->util * vmm->nr_vcpus / sr->om->cpus_per_node;
	double mem = sr->om->cap_mib ? (double)vmm->mem_mib / (double)sr->om->cap_mib : 1.0;

	return cpu > mem ? cpu : mem;
}

/* Sort key of a VM: descending key, then ascending index. */
struct srch_key {
	double key;
	int vm;
};

static int
srch_key_cmp(const void *a, const void *b)
{
	const struct srch_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return (x->vm > y->vm) - (x->vm < y->vm);
}

/* The live VMs into order[], by descending key(vm). */
static void
srch_sort(const struct oracle_srch *sr, int *order, double (*key)(const struct oracle_srch *, int))
{
	struct srch_key *k = xcalloc((size_t)sr->nr_live + 1, sizeof(*k));

	for (int i = 0; i < sr->nr_live; i++) {
		k[i].vm = sr->live[i];
		k[i].key = key(sr, sr->live[i]);
	}
	qsort(k, (size_t)sr->nr_live, sizeof(*k), srch_key_cmp);
	for (int i = 0; i < sr->nr_live; i++)
		order[i] = k[i].vm;
	free(k);
}

/* Largest VM first, each onto its best shape.  Returns false if some VM overcommits. */
bool
oracle_greedy_run(struct oracle_srch *sr)
{
	int *order = xcalloc((size_t)(sr->nr_live > 0 ? sr->nr_live : 1), sizeof(int));
	bool fits = true;

	srch_sort(sr, order, greedy_size);
	for (int i = 0; i < sr->nr_live; i++)
		if (!greedy_place(sr, order[i]))
			fits = false;
	free(order);
	return fits;
}

/* ---- stage 1, exhaustive ------------------------------------------------------------ */

struct exh {
	struct oracle_srch *sr;
	int *order;                   /* live VMs, fewest shapes first */
	struct oracle_contrib **cont; /* per VM, per shape */
	int *choice, *best_choice;
	double *rest; /* rest[d]: the most the VMs of order[d..] can gain, each alone */
	double best;
	bool found;
	bool aborted;
};

/* Depth-first over every combination of shapes, pruning those that overfill a node. */
static void
exh_dfs(struct exh *ex, int depth, double total)
{
	struct oracle_srch *sr = ex->sr;
	int vm;

	if (sr->work > ORACLE_WORK_MAX) {
		ex->aborted = true;
		return;
	}
	/* A VM gains at most what it gains alone; a branch that cannot beat the best (only tie
	 * it) is cut, which changes nothing: ties keep the first found. */
	if (ex->found && total + ex->rest[depth] <= ex->best + sr->eps)
		return;
	if (depth == sr->nr_live) {
		if (!ex->found || total > ex->best + sr->eps) {
			ex->found = true;
			ex->best = total;
			memcpy(ex->best_choice, ex->choice, sizeof(int) * (size_t)sr->nr_live);
		}
		return;
	}
	vm = ex->order[depth];
	for (int c = 0; c < sr->vms[vm].nr_cands && !ex->aborted; c++) {
		struct oracle_srch_change ch = {vm, &ex->cont[vm][c]};
		struct oracle_srch_result d;

		oracle_srch_delta(sr, &ch, 1, &d);
		if (!d.feasible)
			continue;
		ex->choice[depth] = c;
		oracle_srch_account(sr, vm, ch.to, 1);
		sr->vms[vm].placed = true;
		oracle_srch_contrib_copy(&sr->vms[vm].cur, ch.to, sr->nn);
		exh_dfs(ex, depth + 1, total + d.gain);
		oracle_srch_unplace(sr, vm);
	}
}

/* Exhaustive order key: fewest shapes first (single-shape VMs sit at the top of the tree). */
static double
exh_key(const struct oracle_srch *sr, int vm)
{
	return -(double)sr->vms[vm].nr_cands;
}

static void
exh_setup(struct exh *ex, struct oracle_srch *sr)
{
	memset(ex, 0, sizeof(*ex));
	ex->sr = sr;
	ex->order = xcalloc((size_t)sr->nr_live + 1, sizeof(int));
	ex->choice = xcalloc((size_t)sr->nr_live + 1, sizeof(int));
	ex->best_choice = xcalloc((size_t)sr->nr_live + 1, sizeof(int));
	ex->cont = xcalloc((size_t)sr->om->nr_vms + 1, sizeof(*ex->cont));
	srch_sort(sr, ex->order, exh_key);
	for (int i = 0; i < sr->nr_live; i++) {
		int vm = sr->live[i];

		ex->cont[vm] = xcalloc((size_t)sr->vms[vm].nr_cands, sizeof(**ex->cont));
		for (int c = 0; c < sr->vms[vm].nr_cands; c++) {
			oracle_contrib_init(&ex->cont[vm][c], sr->nn);
			oracle_shape_fill(sr, vm, &sr->vms[vm].cands[c], sr->tv, sr->tu);
			oracle_srch_eval(sr, vm, sr->tv, sr->tu, NULL, &ex->cont[vm][c]);
		}
	}
	/* Nothing is placed yet: a shape's delta now is what it gains alone. */
	ex->rest = xcalloc((size_t)sr->nr_live + 1, sizeof(double));
	for (int d = sr->nr_live - 1; d >= 0; d--) {
		int vm = ex->order[d];
		double most = 0;

		for (int c = 0; c < sr->vms[vm].nr_cands; c++) {
			struct oracle_srch_change ch = {vm, &ex->cont[vm][c]};
			struct oracle_srch_result r;

			oracle_srch_delta(sr, &ch, 1, &r);
			most = c == 0 || r.gain > most ? r.gain : most;
		}
		ex->rest[d] = ex->rest[d + 1] + most;
	}
}

static void
exh_teardown(struct exh *ex)
{
	for (int i = 0; i < ex->sr->nr_live; i++) {
		int vm = ex->sr->live[i];

		for (int c = 0; c < ex->sr->vms[vm].nr_cands; c++)
			oracle_contrib_fini(&ex->cont[vm][c]);
		free(ex->cont[vm]);
	}
	free(ex->cont);
	free(ex->order);
	free(ex->choice);
	free(ex->best_choice);
	free(ex->rest);
}

/*
 * The best combination of stage-1 shapes that fits in memory, if the combinations are few.
 * Returns false (nothing placed) when they are too many, none fits, or the budget ran out.
 */
bool
oracle_exhaustive_run(struct oracle_srch *sr)
{
	struct exh ex;
	double combos = 1;

	for (int i = 0; i < sr->nr_live; i++)
		combos *= sr->vms[sr->live[i]].nr_cands;
	if (combos > ORACLE_EXHAUSTIVE_MAX)
		return false;
	exh_setup(&ex, sr);
	exh_dfs(&ex, 0, 0);
	if (ex.found && !ex.aborted)
		for (int i = 0; i < sr->nr_live; i++) {
			int vm = ex.order[i];

			oracle_shape_fill(sr, vm, &sr->vms[vm].cands[ex.best_choice[i]], sr->tv,
			                  sr->tu);
			oracle_srch_eval(sr, vm, sr->tv, sr->tu, NULL, &sr->tc);
			oracle_srch_apply(sr, vm, sr->tv, sr->tu, &sr->tc);
		}
	exh_teardown(&ex);
	return ex.found && !ex.aborted;
}

/*
 * oracle_local.c - stage 2 of the oracle's search: local search from the stage-1 binding.
 * Each pass takes, for every VM in turn, its best move (onto one node, a block of its vCPUs
 * with their memory to another node, memory alone to another node); when a pass finds none,
 * a sweep swaps pairs of single-node VMs.  It ends when neither gains.  See
 * docs/peers/oracle.md.
 */
#include "host/sim/peer_oracle.h"

#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Local search: at most this many passes (default 50; real scenarios converge in < 20). */
#define ORACLE_LS_MAX_PASSES 50

/* ---- stage 2: local search ---------------------------------------------------------- */

/* Count, per node, the segments where its CPUs are oversubscribed (prefix sums). */
static void
ls_hot_build(struct oracle_srch *sr)
{
	int ns = sr->om->nr_segs;

	for (int n = 0; n < sr->nn; n++) {
		int *h = &sr->hot[(size_t)n * (ns + 1)];

		h[0] = 0;
		for (int j = 0; j < ns; j++)
			h[j + 1] =
			    h[j] + (sr->seg_u[(size_t)j * sr->nn + n] > sr->om->cpus_per_node);
	}
}

/*
 * Is node n oversubscribed in any segment of [lo, hi]?  A VM wholly on a node that never is
 * runs at full speed already: no move of it and no swap with it can gain (every node's own
 * distance is the same), so the search skips those.
 */
static bool
ls_hot(const struct oracle_srch *sr, int n, int lo, int hi)
{
	const int *h = &sr->hot[(size_t)n * (sr->om->nr_segs + 1)];

	return lo >= 0 && hi >= lo && h[hi + 1] - h[lo] > 0;
}

/* Evaluate tv/tu for vm; keep it in bv/bu/bc if it is the best move so far. */
static void
ls_try(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	struct oracle_srch_change ch = {vm, &sr->tc};
	struct oracle_srch_result d;
	int nv = sr->om->vms[vm].nr_vcpus, nu = sr->vms[vm].nr_units;

	oracle_srch_eval(sr, vm, sr->tv, sr->tu, &sr->tc);
	oracle_srch_delta(sr, &ch, 1, &d);
	if (!d.feasible || d.gain <= *best_gain)
		return;
	*best_gain = d.gain;
	*found = true;
	memcpy(sr->bv, sr->tv, sizeof(int) * (size_t)nv);
	memcpy(sr->bu, sr->tu, sizeof(int) * (size_t)nu);
	oracle_srch_contrib_copy(&sr->bc, &sr->tc, sr->nn);
}

static void
ls_reset(struct oracle_srch *sr, int vm)
{
	memcpy(sr->tv, sr->vms[vm].vcpu_node, sizeof(int) * (size_t)sr->om->vms[vm].nr_vcpus);
	memcpy(sr->tu, sr->vms[vm].unit_node, sizeof(int) * (size_t)sr->vms[vm].nr_units);
}

/* Move the vCPUs flagged in sr->flag, with their memory units, to node b. */
static void
ls_move_flagged(struct oracle_srch *sr, int vm, int b)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];

	ls_reset(sr, vm);
	for (int v = 0; v < sr->om->vms[vm].nr_vcpus; v++)
		if (sr->flag[v])
			sr->tv[v] = b;
	for (int u = 0; u < sv->nr_units; u++)
		if (sr->flag[sv->unit_group[u]])
			sr->tu[u] = b;
}

/* Whole VM onto one node. */
static void
ls_relocations(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];

	for (int b = 0; b < sr->nn; b++) {
		if (!nodemask_test(sr->om->vms[vm].allowed, b))
			continue;
		for (int v = 0; v < sr->om->vms[vm].nr_vcpus; v++)
			sr->tv[v] = b;
		for (int u = 0; u < sv->nr_units; u++)
			sr->tu[u] = b;
		ls_try(sr, vm, best_gain, found);
	}
}

/* Flag the last t vCPUs (highest index) on node a; returns how many sit there. */
static int
ls_flag_last(struct oracle_srch *sr, int vm, int a, int t)
{
	int nv = sr->om->vms[vm].nr_vcpus, cnt = 0;

	for (int v = nv - 1; v >= 0; v--) {
		sr->flag[v] = 0;
		if (sr->vms[vm].vcpu_node[v] == a && cnt < t) {
			sr->flag[v] = 1;
			cnt++;
		}
	}
	return cnt;
}

/* Blocks of vCPU groups (1, and half of those there) from node a to node b; cells whole. */
static void
ls_group_moves(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct scn_vm *scv = &sr->om->scn->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus;

	for (int a = 0; a < sr->nn; a++) {
		int cnt = ls_flag_last(sr, vm, a, nv), sizes[2] = {1, (cnt + 1) / 2};

		for (int b = 0; cnt > 0 && b < sr->nn; b++) {
			if (b == a || !nodemask_test(sr->om->vms[vm].allowed, b))
				continue;
			for (int i = 0; i < 2; i++) {
				if (i == 1 && sizes[1] <= 1)
					continue;
				ls_flag_last(sr, vm, a, sizes[i]);
				ls_move_flagged(sr, vm, b);
				ls_try(sr, vm, best_gain, found);
			}
		}
	}
	for (int c = 0; scv->workload == SCN_WORKLOAD_CELLS && c < scv->nr_cells; c++)
		for (int b = 0; b < sr->nn; b++) {
			if (!nodemask_test(sr->om->vms[vm].allowed, b))
				continue;
			for (int v = 0; v < nv; v++)
				sr->flag[v] = sr->om->vms[vm].vcpu_slice[v] == c;
			ls_move_flagged(sr, vm, b);
			ls_try(sr, vm, best_gain, found);
		}
}

/*
 * Move memory units of vm alone from node a to node b, highest index first: want of them, or
 * (homing) all of those whose vCPU sits on b.
 */
static void
ls_unit_move(struct oracle_srch *sr, int vm, int a, int b, int want, bool homing, double *best_gain,
             bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int moved = 0;

	ls_reset(sr, vm);
	for (int u = sv->nr_units - 1; u >= 0 && moved < want; u--) {
		if (sv->unit_node[u] != a || (homing && sv->vcpu_node[sv->unit_group[u]] != b))
			continue;
		sr->tu[u] = b;
		moved++;
	}
	if (moved > 0)
		ls_try(sr, vm, best_gain, found);
}

/* Memory alone from node a to b: the last unit, the last half, and units whose vCPU is on b. */
static void
ls_unit_moves(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];

	for (int a = 0; a < sr->nn; a++) {
		int cnt = 0;

		for (int u = 0; u < sv->nr_units; u++)
			cnt += sv->unit_node[u] == a;
		for (int b = 0; cnt > 0 && b < sr->nn; b++) {
			if (b == a || !nodemask_test(sr->om->vms[vm].allowed, b))
				continue;
			ls_unit_move(sr, vm, a, b, 1, false, best_gain, found);
			if (cnt > 2)
				ls_unit_move(sr, vm, a, b, (cnt + 1) / 2, false, best_gain, found);
			ls_unit_move(sr, vm, a, b, cnt, true, best_gain, found);
		}
	}
}

/* Node holding all of vm (vCPUs and memory), or -1 when it is split. */
static int
ls_single_node(const struct oracle_srch *sr, int vm)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int n = sv->vcpu_node[0];

	for (int v = 1; v < sr->om->vms[vm].nr_vcpus; v++)
		if (sv->vcpu_node[v] != n)
			return -1;
	for (int u = 0; u < sv->nr_units; u++)
		if (sv->unit_node[u] != n)
			return -1;
	return n;
}

/* Apply the best single-VM move of vm, if it gains.  Returns whether one was applied. */
static bool
ls_vm(struct oracle_srch *sr, int vm)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	double best_gain = sr->eps;
	bool found = false;
	int n = ls_single_node(sr, vm);

	if (n >= 0 && sr->uniform_local && !ls_hot(sr, n, vmm->first, vmm->last))
		return false;
	ls_relocations(sr, vm, &best_gain, &found);
	ls_group_moves(sr, vm, &best_gain, &found);
	/* Memory alone never gains by leaving a VM whose vCPUs and memory share a node. */
	if (n < 0 || !sr->uniform_local)
		ls_unit_moves(sr, vm, &best_gain, &found);
	if (found) {
		oracle_srch_apply(sr, vm, sr->bv, sr->bu, &sr->bc);
		ls_hot_build(sr);
	}
	return found;
}

/* Exchange the nodes of two single-node VMs x (on nx) and y (on ny) if that gains. */
static bool
ls_swap(struct oracle_srch *sr, int x, int nx, int y, int ny)
{
	const struct oracle_vm_model *mx = &sr->om->vms[x], *my = &sr->om->vms[y];
	struct oracle_srch_change ch[2] = {{x, &sr->tc}, {y, &sr->tc2}};
	struct oracle_srch_result d;
	int lo = mx->first < my->first ? mx->first : my->first;
	int hi = mx->last > my->last ? mx->last : my->last;

	if (!nodemask_test(mx->allowed, ny) || !nodemask_test(my->allowed, nx) ||
	    mx->first > my->last || my->first > mx->last)
		return false;
	if (sr->uniform_local && !ls_hot(sr, nx, lo, hi) && !ls_hot(sr, ny, lo, hi))
		return false;
	oracle_shape_fill(sr, x, nodemask_of(ny), sr->tv, sr->tu);
	oracle_srch_eval(sr, x, sr->tv, sr->tu, &sr->tc);
	oracle_shape_fill(sr, y, nodemask_of(nx), sr->bv, sr->bu);
	oracle_srch_eval(sr, y, sr->bv, sr->bu, &sr->tc2);
	oracle_srch_delta(sr, ch, 2, &d);
	if (!d.feasible || d.gain <= sr->eps)
		return false;
	oracle_srch_apply(sr, x, sr->tv, sr->tu, &sr->tc);
	oracle_srch_apply(sr, y, sr->bv, sr->bu, &sr->tc2);
	ls_hot_build(sr);
	return true;
}

static bool
ls_swaps(struct oracle_srch *sr)
{
	int *node = xcalloc((size_t)sr->nr_live + 1, sizeof(int));
	bool improved = false;

	for (int i = 0; i < sr->nr_live; i++)
		node[i] = ls_single_node(sr, sr->live[i]);
	for (int i = 0; i < sr->nr_live && sr->work <= ORACLE_WORK_MAX; i++)
		for (int k = i + 1; node[i] >= 0 && k < sr->nr_live; k++) {
			if (node[k] < 0 || node[k] == node[i])
				continue;
			if (ls_swap(sr, sr->live[i], node[i], sr->live[k], node[k])) {
				int t = node[i];

				node[i] = node[k];
				node[k] = t;
				improved = true;
			}
		}
	free(node);
	return improved;
}

/*
 * Passes of best-move-per-VM until none gains, then a swap sweep; again until neither gains.
 * Returns the passes run.
 */
int
oracle_local_run(struct oracle_srch *sr)
{
	int pass = 0;

	while (pass < ORACLE_LS_MAX_PASSES && sr->work <= ORACLE_WORK_MAX) {
		bool improved = false;

		ls_hot_build(sr);
		for (int i = 0; i < sr->nr_live && sr->work <= ORACLE_WORK_MAX; i++)
			if (ls_vm(sr, sr->live[i]))
				improved = true;
		/* Swaps only once single moves are stuck: a sweep costs more than a pass. */
		if (!improved && ls_swaps(sr))
			improved = true;
		oracle_srch_rebuild(sr);
		pass++;
		if (!improved)
			break;
	}
	return pass;
}

/*
 * oracle_local.c - stage 2 of the oracle's search: local search from the stage-1 binding.
 * Each pass takes, for every VM in turn, its best move (onto one node, a block of its vCPUs
 * with their memory to another node, memory alone to another node); when a pass finds none,
 * a sweep swaps pairs of single-node VMs.  It ends when neither gains.  See
 * docs/peers/oracle.md.
 */
#include "host/sim/peer_oracle.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/sim.h"
#include "policy/util.h"

/* Local search: at most this many passes (default 50; real scenarios converge in < 20). */
#define ORACLE_LS_MAX_PASSES 50

/* ---- stage 2: local search ---------------------------------------------------------- */

/* Count, per node, the segments where its CPUs are oversubscribed (prefix sums). */
void
oracle_ls_hot_build(struct oracle_srch *sr)
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

/* Evaluate tv/tu/tpart for vm; keep it in bv/bu/bpart/bc if it is the best move so far. */
static void
ls_try(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	struct oracle_srch_change ch = {vm, &sr->tc};
	struct oracle_srch_result d;
	int nv = sr->om->vms[vm].nr_vcpus, nu = sr->vms[vm].nr_units;

	oracle_srch_eval(sr, vm, sr->tv, sr->tu, &sr->tpart, &sr->tc);
	oracle_srch_delta(sr, &ch, 1, &d);
	if (!d.feasible || d.gain <= *best_gain)
		return;
	*best_gain = d.gain;
	*found = true;
	memcpy(sr->bv, sr->tv, sizeof(int) * (size_t)nv);
	memcpy(sr->bu, sr->tu, sizeof(int) * (size_t)nu);
	sr->bpart = sr->tpart;
	oracle_srch_contrib_copy(&sr->bc, &sr->tc, sr->nn);
}

void
oracle_ls_reset(struct oracle_srch *sr, int vm)
{
	memcpy(sr->tv, sr->vms[vm].vcpu_node, sizeof(int) * (size_t)sr->om->vms[vm].nr_vcpus);
	memcpy(sr->tu, sr->vms[vm].unit_node, sizeof(int) * (size_t)sr->vms[vm].nr_units);
	sr->tpart.unit = -1;
}

/*
 * Move the units list[0..nr) of vm, in that order, to node b while b can hold them (room:
 * MiB of vm that b can hold); with part, the first that fits only in part moves the whole
 * regions that fit (tpart).  So a move fills b to its watermark and leaves the rest where it
 * was.
 */
static void
ls_units_fill(struct oracle_srch *sr, int vm, const int *list, int nr, int b, uint64_t room,
              bool part)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	uint64_t have = 0;

	for (int u = 0; u < sv->nr_units; u++)
		have += sr->tu[u] == b ? sv->unit_len[u] : 0;
	for (int i = 0; i < nr; i++) {
		int u = list[i];

		if (sr->tu[u] == b)
			continue;
		if (have + sv->unit_len[u] <= room) {
			sr->tu[u] = b;
			have += sv->unit_len[u];
			continue;
		}
		if (part && room >= have + SIM_REGION_MIB) {
			sr->tpart.unit = u;
			sr->tpart.mib = (room - have) / SIM_REGION_MIB * SIM_REGION_MIB;
			sr->tpart.node = b;
		}
		return;
	}
}

/* Move the vCPUs flagged in sr->flag to node b, with as much of their memory as b can hold. */
void
oracle_ls_move_flagged(struct oracle_srch *sr, int vm, int b, uint64_t room)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int nr = 0;

	oracle_ls_reset(sr, vm);
	for (int v = 0; v < sr->om->vms[vm].nr_vcpus; v++)
		if (sr->flag[v])
			sr->tv[v] = b;
	for (int u = 0; u < sv->nr_units; u++)
		if (sr->flag[sv->unit_group[u]])
			sr->ulist[nr++] = u;
	ls_units_fill(sr, vm, sr->ulist, nr, b, room, true);
}

/* Whole VM onto one node, its memory as far as the node can hold it. */
static void
ls_relocations(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	for (int b = 0; b < sr->nn; b++) {
		if (!nodemask_test(sr->om->vms[vm].allowed, b))
			continue;
		for (int v = 0; v < sr->om->vms[vm].nr_vcpus; v++)
			sr->flag[v] = 1;
		oracle_ls_move_flagged(sr, vm, b, oracle_srch_room_mib(sr, vm, b));
		ls_try(sr, vm, best_gain, found);
	}
}

/*
 * Flag the last t vCPUs (in vcpu_order) on node a, of cell `cell` only when it is >= 0;
 * returns how many of those sit there.
 */
int
oracle_ls_flag_last(struct oracle_srch *sr, int vm, int a, int t, int cell)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus, cnt = 0;

	for (int i = nv - 1; i >= 0; i--) {
		int v = sv->vcpu_order[i];

		sr->flag[v] = 0;
		if (sv->vcpu_node[v] == a && cnt < t &&
		    (cell < 0 || sr->om->vms[vm].vcpu_slice[v] == cell)) {
			sr->flag[v] = 1;
			cnt++;
		}
	}
	return cnt;
}

/*
 * Flag up to t vCPUs on node a whose own memory units are mostly on node b (the last in
 * vcpu_order first); returns how many are flagged.
 */
static int
ls_flag_homing(struct oracle_srch *sr, int vm, int a, int b, int t)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus, cnt = 0;

	memset(sr->flag, 0, sizeof(int) * (size_t)nv);
	for (int u = 0; u < sv->nr_units; u++) /* flag: MiB on b minus MiB elsewhere, in regions */
		if (sv->vcpu_node[sv->unit_group[u]] == a)
			sr->flag[sv->unit_group[u]] += (sv->unit_node[u] == b ? 1 : -1) *
			                               (int)(sv->unit_len[u] / SIM_REGION_MIB);
	for (int i = nv - 1; i >= 0; i--) {
		int v = sv->vcpu_order[i];
		bool take = sv->vcpu_node[v] == a && sr->flag[v] > 0 && cnt < t;

		sr->flag[v] = take;
		cnt += take;
	}
	return cnt;
}

/*
 * Block sizes for moving vCPUs from a (cnt of them there) to b: 1, half, all, and as many as
 * fill b's free CPUs; duplicates and sizes out of [1, cnt] are dropped.  Returns how many.
 */
static int
ls_block_sizes(struct oracle_srch *sr, int vm, int cnt, int b, int *sizes)
{
	int cand[4] = {1, (cnt + 1) / 2, cnt, 0}, nr = 0, on_b = 0;

	for (int v = 0; v < sr->om->vms[vm].nr_vcpus; v++)
		on_b += sr->vms[vm].vcpu_node[v] == b;
	cand[3] = oracle_srch_cpu_room(sr, vm, b);
	cand[3] = cand[3] == INT_MAX ? cnt : cand[3] - on_b;
	for (int i = 0; i < 4; i++) {
		bool dup = cand[i] < 1 || cand[i] > cnt;

		for (int k = 0; k < nr && !dup; k++)
			dup = sizes[k] == cand[i];
		if (!dup)
			sizes[nr++] = cand[i];
	}
	return nr;
}

/*
 * A vCPU whose own memory lies on several nodes (a slice cut where a node filled up), with
 * that memory as far as it fits, to each other node holding some of it.
 */
static void
ls_split_moves(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus;

	for (int u = 0; u < sv->nr_units; u++) {
		int v = sv->unit_group[u], b = sv->unit_node[u];
		bool first = true;

		/* once per vCPU and node: the first unit of v on b that is away from v */
		for (int k = 0; k < u && first; k++)
			first = sv->unit_group[k] != v || sv->unit_node[k] != b;
		if (b == sv->vcpu_node[v] || !first || !nodemask_test(sr->om->vms[vm].allowed, b))
			continue;
		memset(sr->flag, 0, sizeof(int) * (size_t)nv);
		sr->flag[v] = 1;
		oracle_ls_move_flagged(sr, vm, b, oracle_srch_room_mib(sr, vm, b));
		ls_try(sr, vm, best_gain, found);
	}
}

/*
 * Blocks of vCPUs from node a to node b (sizes above, of one cell only when cell >= 0), with
 * as much of their memory as b holds, and where the memory is not the vCPUs' own
 * (shared, cells, rotating workloads) without it.
 */
static void
ls_block_moves(struct oracle_srch *sr, int vm, int cell, double *best_gain, bool *found)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	int nv = vmm->nr_vcpus, sizes[4];
	bool alone = vmm->access != ORACLE_ACCESS_LOCAL || vmm->nr_slices != nv;

	for (int a = 0; a < sr->nn; a++) {
		int cnt = oracle_ls_flag_last(sr, vm, a, nv, cell);

		for (int b = 0; cnt > 0 && b < sr->nn; b++) {
			uint64_t room;
			int nr;

			if (b == a || !nodemask_test(vmm->allowed, b))
				continue;
			room = oracle_srch_room_mib(sr, vm, b);
			nr = ls_block_sizes(sr, vm, cnt, b, sizes);
			for (int i = 0; i < nr; i++) {
				oracle_ls_flag_last(sr, vm, a, sizes[i], cell);
				oracle_ls_move_flagged(sr, vm, b, room);
				ls_try(sr, vm, best_gain, found);
				if (!alone)
					continue;
				oracle_ls_move_flagged(sr, vm, b, 0);
				ls_try(sr, vm, best_gain, found);
			}
		}
	}
}

/* vCPUs on a whose memory is mostly on b, to b: one, and all of them. */
static void
ls_homing_moves(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	int nv = sr->om->vms[vm].nr_vcpus;

	for (int a = 0; a < sr->nn; a++)
		for (int b = 0; b < sr->nn; b++) {
			int cnt;

			if (a == b || !nodemask_test(sr->om->vms[vm].allowed, b))
				continue;
			cnt = ls_flag_homing(sr, vm, a, b, nv);
			for (int t = 1; t <= cnt; t = t < cnt ? cnt : cnt + 1) {
				ls_flag_homing(sr, vm, a, b, t);
				oracle_ls_move_flagged(sr, vm, b, oracle_srch_room_mib(sr, vm, b));
				ls_try(sr, vm, best_gain, found);
			}
		}
}

/*
 * Moves of vCPUs, each with as much of its memory as the destination holds: blocks (for
 * cells workloads also blocks of one cell's vCPUs), vCPUs to their memory, vCPUs whose own
 * memory is split, whole cells.
 */
static void
ls_group_moves(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct scn_vm *scv = &sr->om->scn->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus;
	int cells = scv->workload == SCN_WORKLOAD_CELLS ? scv->nr_cells : 0;

	for (int cell = -1; cell < cells; cell++)
		ls_block_moves(sr, vm, cell, best_gain, found);
	ls_homing_moves(sr, vm, best_gain, found);
	ls_split_moves(sr, vm, best_gain, found);
	for (int c = 0; c < cells; c++)
		for (int b = 0; b < sr->nn; b++) {
			if (!nodemask_test(sr->om->vms[vm].allowed, b))
				continue;
			for (int v = 0; v < nv; v++)
				sr->flag[v] = sr->om->vms[vm].vcpu_slice[v] == c;
			oracle_ls_move_flagged(sr, vm, b, oracle_srch_room_mib(sr, vm, b));
			ls_try(sr, vm, best_gain, found);
		}
}

/* How memory-alone moves pick the units on a, highest index first. */
enum ls_pick {
	LS_PICK_LAST,   /* want of them */
	LS_PICK_HOMING, /* those whose vCPU sits on b */
	LS_PICK_FILL,   /* those whose vCPU sits on b, then the others: fill b exactly */
	LS_PICK_WHOLE,  /* the same, whole units only: fill b without splitting a slice */
	LS_PICK_SLICE,  /* those of slice `slice` (a cell; the last slice on a when < 0) */
};

/* Move memory units of vm alone from node a to node b, as much as b can hold. */
static void
ls_unit_move(struct oracle_srch *sr, int vm, int a, int b, int want, enum ls_pick pick, int slice,
             uint64_t room, double *best_gain, bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	bool two = pick == LS_PICK_FILL || pick == LS_PICK_WHOLE;
	int nr = 0;

	oracle_ls_reset(sr, vm);
	for (int u = sv->nr_units - 1; pick == LS_PICK_SLICE && slice < 0 && u >= 0; u--)
		if (sv->unit_node[u] == a) {
			slice = sv->unit_slice[u];
			break;
		}
	for (int pass = 0; pass < (two ? 2 : 1); pass++)
		for (int u = sv->nr_units - 1; u >= 0 && nr < want; u--) {
			bool home = sv->vcpu_node[sv->unit_group[u]] == b;

			if (sv->unit_node[u] != a ||
			    ((two || pick == LS_PICK_HOMING) && home != (pass == 0)) ||
			    (pick == LS_PICK_SLICE && sv->unit_slice[u] != slice))
				continue;
			sr->ulist[nr++] = u;
		}
	if (nr == 0)
		return;
	ls_units_fill(sr, vm, sr->ulist, nr, b, room, pick != LS_PICK_WHOLE);
	ls_try(sr, vm, best_gain, found);
}

/*
 * Slices moved one by one: a cells workload's cells (slices shared by some vCPUs) and a
 * phased VM's slices (each is home to several vCPUs in turn); else 0.
 */
static int
ls_nr_cells(const struct oracle_srch *sr, int vm)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];

	return sr->om->scn->vms[vm].workload == SCN_WORKLOAD_CELLS || vmm->phase_w != NULL
	           ? vmm->nr_slices
	           : 0;
}

/*
 * Memory alone from node a to b: the last unit, the last half, the units whose vCPU is on b,
 * all of them (those first) as far as b holds them (exactly, or in whole units), the last
 * slice, and each cell or phased slice by itself.
 */
static void
ls_unit_moves(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int cells = ls_nr_cells(sr, vm);

	for (int a = 0; a < sr->nn; a++) {
		int cnt = 0;

		for (int u = 0; u < sv->nr_units; u++)
			cnt += sv->unit_node[u] == a;
		for (int b = 0; cnt > 0 && b < sr->nn; b++) {
			uint64_t room;

			if (b == a || !nodemask_test(sr->om->vms[vm].allowed, b))
				continue;
			room = oracle_srch_room_mib(sr, vm, b);
			ls_unit_move(sr, vm, a, b, 1, LS_PICK_LAST, -1, room, best_gain, found);
			if (cnt > 2)
				ls_unit_move(sr, vm, a, b, (cnt + 1) / 2, LS_PICK_LAST, -1, room,
				             best_gain, found);
			ls_unit_move(sr, vm, a, b, cnt, LS_PICK_HOMING, -1, room, best_gain, found);
			ls_unit_move(sr, vm, a, b, cnt, LS_PICK_FILL, -1, room, best_gain, found);
			ls_unit_move(sr, vm, a, b, cnt, LS_PICK_WHOLE, -1, room, best_gain, found);
			ls_unit_move(sr, vm, a, b, cnt, LS_PICK_SLICE, -1, room, best_gain, found);
			for (int c = 0; c < cells; c++)
				ls_unit_move(sr, vm, a, b, cnt, LS_PICK_SLICE, c, room, best_gain,
				             found);
		}
	}
}

/*
 * Cells workloads: t vCPUs of cell c1 from a to b for t of cell c2 from b to a, vCPUs alone
 * (t = 1 and as many as can be), so that each cell gathers where its memory is without
 * either node taking more vCPUs.
 */
static void
ls_cell_exchanges(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct scn_vm *scv = &sr->om->scn->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus;
	int cells = scv->workload == SCN_WORKLOAD_CELLS ? sr->om->vms[vm].nr_slices : 0;

	for (int a = 0; a < sr->nn; a++)
		for (int b = 0; b < sr->nn; b++)
			for (int c1 = 0; a != b && c1 < cells; c1++)
				for (int c2 = 0; c2 < cells; c2++) {
					int n1 = oracle_ls_flag_last(sr, vm, a, nv, c1);
					int n2 = oracle_ls_flag_last(sr, vm, b, nv, c2);
					int ts[2] = {1, n1 < n2 ? n1 : n2};

					for (int i = 0; c1 != c2 && i < 2 && ts[1] > 0; i++) {
						if (i == 1 && ts[1] == 1)
							break;
						oracle_ls_reset(sr, vm);
						oracle_ls_flag_last(sr, vm, a, ts[i], c1);
						for (int v = 0; v < nv; v++)
							sr->tv[v] = sr->flag[v] ? b : sr->tv[v];
						oracle_ls_flag_last(sr, vm, b, ts[i], c2);
						for (int v = 0; v < nv; v++)
							sr->tv[v] = sr->flag[v] ? a : sr->tv[v];
						ls_try(sr, vm, best_gain, found);
					}
				}
}

/*
 * Phased VMs: two of its vCPUs on different nodes trade places, alone.  Which vCPUs sit
 * with which slices matters: vCPU v's home slices over the run are v, v + 1, ...
 */
static void
ls_phased_swaps(struct oracle_srch *sr, int vm, double *best_gain, bool *found)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	int nv = sr->om->vms[vm].nr_vcpus;

	if (sr->om->vms[vm].phase_w == NULL)
		return;
	for (int v = 0; v < nv; v++)
		for (int w = v + 1; w < nv; w++) {
			if (sv->vcpu_node[v] == sv->vcpu_node[w])
				continue;
			oracle_ls_reset(sr, vm);
			sr->tv[v] = sv->vcpu_node[w];
			sr->tv[w] = sv->vcpu_node[v];
			ls_try(sr, vm, best_gain, found);
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
	if (n < 0) {
		ls_cell_exchanges(sr, vm, &best_gain, &found);
		ls_phased_swaps(sr, vm, &best_gain, &found);
	}
	if (found) {
		oracle_srch_apply_best(sr, vm);
		oracle_ls_hot_build(sr);
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
	struct oracle_shape sx = {nodemask_of(ny), -1}, sy = {nodemask_of(nx), -1};
	int lo = mx->first < my->first ? mx->first : my->first;
	int hi = mx->last > my->last ? mx->last : my->last;

	if (!nodemask_test(mx->allowed, ny) || !nodemask_test(my->allowed, nx) ||
	    mx->first > my->last || my->first > mx->last)
		return false;
	if (sr->uniform_local && !ls_hot(sr, nx, lo, hi) && !ls_hot(sr, ny, lo, hi))
		return false;
	oracle_shape_fill(sr, x, &sx, sr->tv, sr->tu);
	oracle_srch_eval(sr, x, sr->tv, sr->tu, NULL, &sr->tc);
	oracle_shape_fill(sr, y, &sy, sr->bv, sr->bu);
	oracle_srch_eval(sr, y, sr->bv, sr->bu, NULL, &sr->tc2);
	oracle_srch_delta(sr, ch, 2, &d);
	if (!d.feasible || d.gain <= sr->eps)
		return false;
	oracle_srch_apply(sr, x, sr->tv, sr->tu, &sr->tc);
	oracle_srch_apply(sr, y, sr->bv, sr->bu, &sr->tc2);
	oracle_ls_hot_build(sr);
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

		oracle_ls_hot_build(sr);
		for (int i = 0; i < sr->nr_live && sr->work <= ORACLE_WORK_MAX; i++)
			if (ls_vm(sr, sr->live[i]))
				improved = true;
		/* Swaps only once single moves are stuck: a sweep costs more than a pass; re-packs
		 * of node pairs cost more again. */
		if (!improved && ls_swaps(sr))
			improved = true;
		if (!improved && oracle_chain_run(sr))
			improved = true;
		if (!improved && oracle_repack_run(sr))
			improved = true;
		oracle_srch_rebuild(sr);
		pass++;
		if (!improved)
			break;
	}
	return pass;
}

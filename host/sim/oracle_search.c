/*
 * oracle_search.c - the search for the best static binding (docs/peers/oracle.md): its state,
 * the incremental evaluation every stage uses, and oracle_plan() driving the stages.
 *
 * Each VM's binding is held as vCPU -> node and memory unit -> node.  A memory unit is a
 * contiguous piece of one slice, owned by one vCPU (its "group"): the vCPU's own slice for
 * private-like workloads, an equal share of its cell (cells) or of all RAM (shared).  Moving a
 * group moves the vCPU with its memory, so a split VM keeps each vCPU's memory local.
 *
 * Stage 1 (oracle_shape.c) picks a shape per VM: exhaustively when the combinations are few,
 * else greedily.  Stage 2 (oracle_local.c) is a local search until no move gains.  A change
 * is evaluated incrementally: only the nodes it touches, over the segments the VM lives in.
 */
#include "host/sim/peer_oracle.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/sim.h"
#include "policy/util.h"

/*
 * Memory units per VM, at least: the granularity (1/32 of the VM) at which memory can be
 * split between nodes independently of vCPUs.  Fine enough to fill a node's last gigabytes,
 * coarse enough to keep one evaluation cheap.  VMs with more vCPUs get one unit per vCPU.
 */
#define ORACLE_MIN_UNITS 32
/*
 * A move must gain more than this fraction of the run's total vCPU-seconds (default 1e-10), so
 * that rounding noise never makes the local search cycle.
 */
#define ORACLE_EPS_REL 1e-10
/* Starts of the whole search (stage 1 without and with fill-and-spill shapes), default 2. */
#define ORACLE_STARTS 2

/* ---- memory units ------------------------------------------------------------------- */

/* Split [start, start+len) into parts of whole regions; part p belongs to groups[p / per]. */
static void
units_split(struct oracle_srch_vm *sv, uint64_t start_mib, uint64_t len_mib, int parts, int per,
            int slice, const int *groups)
{
	uint64_t regions = len_mib / SIM_REGION_MIB;

	for (int p = 0; p < parts; p++) {
		uint64_t a = ((uint64_t)p * regions + (uint64_t)parts - 1) / (uint64_t)parts;
		uint64_t b = ((uint64_t)(p + 1) * regions + (uint64_t)parts - 1) / (uint64_t)parts;
		int u = sv->nr_units;

		if (b == a)
			continue;
		sv->unit_start[u] = start_mib + a * SIM_REGION_MIB;
		sv->unit_len[u] = (b - a) * SIM_REGION_MIB;
		sv->unit_slice[u] = slice;
		sv->unit_group[u] = groups[p / per];
		sv->unit_base[u] = true;
		sv->nr_units++;
	}
}

/*
 * How many parts slice s is cut into, and whose they are (part p belongs to groups[p / per]):
 * shared RAM is shared out among all vCPUs, a cell among its vCPUs, a private slice is its
 * vCPU's.  A cell without vCPUs goes to vCPU 0.
 */
static int
units_parts(const struct scn_vm *vm, const struct oracle_vm_model *vmm, int s, int per,
            const int *ident, const int **groups)
{
	if (vmm->access == ORACLE_ACCESS_SHARED) {
		*groups = ident;
		return vmm->nr_vcpus * per;
	}
	if (vm->workload == SCN_WORKLOAD_CELLS && vm->nr_cells > 0) {
		*groups = vm->cells[s].nr_vcpus > 0 ? vm->cells[s].vcpus : ident;
		return (vm->cells[s].nr_vcpus > 0 ? vm->cells[s].nr_vcpus : 1) * per;
	}
	*groups = &ident[s]; /* the owner of slice s: ident is shifted for phased VMs */
	return per;
}

/*
 * A phased VM's vCPU v has its home slice at v + d for the share phase_w[d] of its run: the
 * vCPU that uses slice s most is s - d at the centre of the weights.  Private-like VMs: 0.
 */
static int
units_phase_shift(const struct oracle_vm_model *vmm)
{
	double centre = 0;

	for (int d = 0; vmm->phase_w != NULL && d < vmm->nr_slices; d++)
		centre += d * vmm->phase_w[d];
	return (int)(centre + 0.5);
}

static void
units_build(const struct scn_vm *vm, const struct oracle_vm_model *vmm, struct oracle_srch_vm *sv)
{
	int per = (ORACLE_MIN_UNITS + vmm->nr_vcpus - 1) / vmm->nr_vcpus, total = 0;
	int *ident = xcalloc((size_t)vmm->nr_vcpus, sizeof(int)), shift = units_phase_shift(vmm);
	const int *groups;

	for (int v = 0; v < vmm->nr_vcpus; v++)
		ident[v] = (v - shift % vmm->nr_vcpus + vmm->nr_vcpus) % vmm->nr_vcpus;
	for (int s = 0; s < vmm->nr_slices; s++)
		total += units_parts(vm, vmm, s, per, ident, &groups);
	sv->cap_units = total + 1;
	sv->unit_start = xcalloc((size_t)sv->cap_units, sizeof(uint64_t));
	sv->unit_len = xcalloc((size_t)sv->cap_units, sizeof(uint64_t));
	sv->unit_slice = xcalloc((size_t)sv->cap_units, sizeof(int));
	sv->unit_group = xcalloc((size_t)sv->cap_units, sizeof(int));
	sv->unit_base = xcalloc((size_t)sv->cap_units, sizeof(bool));
	sv->unit_node = xcalloc((size_t)sv->cap_units, sizeof(int));
	for (int s = 0; s < vmm->nr_slices; s++) {
		int parts = units_parts(vm, vmm, s, per, ident, &groups);

		units_split(sv, vmm->slice_start_mib[s], vmm->slice_len_mib[s], parts, per, s,
		            groups);
	}
	free(ident);
}

/* ---- evaluation --------------------------------------------------------------------- */

/* Contributions of VM vm if bound as vcpu_node/unit_node, with part (NULL: none) moved. */
void
oracle_srch_eval(struct oracle_srch *sr, int vm, const int *vcpu_node, const int *unit_node,
                 const struct oracle_srch_part *part, struct oracle_contrib *out)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	size_t nr = (size_t)sr->om->vms[vm].nr_slices * (size_t)sr->nn;

	memset(sr->slice_mib, 0, nr * sizeof(uint64_t));
	for (int u = 0; u < sv->nr_units; u++)
		sr->slice_mib[(size_t)sv->unit_slice[u] * sr->nn + unit_node[u]] += sv->unit_len[u];
	if (part != NULL && part->unit >= 0) {
		size_t row = (size_t)sv->unit_slice[part->unit] * sr->nn;

		sr->slice_mib[row + unit_node[part->unit]] -= part->mib;
		sr->slice_mib[row + part->node] += part->mib;
	}
	oracle_vm_contrib(sr->om, vm, vcpu_node, sr->slice_mib, out);
	sr->work += (uint64_t)sr->om->vms[vm].nr_vcpus + nr;
}

/* Changes evaluated together: one VM's move, or two VMs' swap. */
#define SRCH_MAX_CHANGES 2

/* Per change and node: how util, util x eff and MiB there would change. */
struct srch_diff {
	double du[SRCH_MAX_CHANGES][SCN_MAX_NODES];
	double ds[SRCH_MAX_CHANGES][SCN_MAX_NODES];
	int64_t dm[SRCH_MAX_CHANGES][SCN_MAX_NODES];
	int nodes[SCN_MAX_NODES]; /* the nodes any change touches */
	int nr_nodes;
};

static void
srch_diff_build(const struct oracle_srch *sr, const struct oracle_srch_change *ch, int nr,
                struct srch_diff *df)
{
	df->nr_nodes = 0;
	for (int n = 0; n < sr->nn; n++) {
		bool touched = false;

		for (int c = 0; c < nr; c++) {
			const struct oracle_srch_vm *sv = &sr->vms[ch[c].vm];

			df->du[c][n] = ch[c].to->u[n] - (sv->placed ? sv->cur.u[n] : 0);
			df->ds[c][n] = ch[c].to->s[n] - (sv->placed ? sv->cur.s[n] : 0);
			df->dm[c][n] =
			    (int64_t)ch[c].to->m[n] - (int64_t)(sv->placed ? sv->cur.m[n] : 0);
			touched |= df->du[c][n] != 0 || df->ds[c][n] != 0 || df->dm[c][n] != 0;
		}
		if (touched)
			df->nodes[df->nr_nodes++] = n;
	}
}

/*
 * Gain and overfill over segments [j0, j1), in which the changes present add du/ds/dm (per
 * touched node, indexed like df->nodes).
 */
static void
srch_delta_piece(const struct oracle_srch *sr, const struct srch_diff *df, int j0, int j1,
                 const double *du, const double *ds, const int64_t *dm,
                 struct oracle_srch_result *d)
{
	const struct oracle_model *om = sr->om;

	for (int a = 0; a < df->nr_nodes; a++) {
		bool cpu = du[a] != 0 || ds[a] != 0;

		for (int j = j0; j < j1 && (cpu || dm[a] > 0); j++) {
			size_t k = (size_t)j * sr->nn + df->nodes[a];
			double u = sr->seg_u[k], s = sr->seg_s[k];

			if (dm[a] > 0 && sr->seg_m[k] + (uint64_t)dm[a] > om->cap_mib) {
				uint64_t over = sr->seg_m[k] + (uint64_t)dm[a] - om->cap_mib;

				d->feasible = false;
				d->over_mib = over > d->over_mib ? over : d->over_mib;
			}
			if (cpu)
				d->gain +=
				    om->seg_len_s[j] *
				    (oracle_node_work(om->cpus_per_node, u + du[a], s + ds[a]) -
				     oracle_node_work(om->cpus_per_node, u, s));
		}
	}
}

/* Sort and deduplicate a few segment boundaries; returns how many remain. */
static int
srch_bounds_sort(int *b, int nr)
{
	int uniq = 0;

	for (int i = 1; i < nr; i++)
		for (int k = i; k > 0 && b[k - 1] > b[k]; k--) {
			int t = b[k];

			b[k] = b[k - 1];
			b[k - 1] = t;
		}
	for (int i = 0; i < nr; i++)
		if (uniq == 0 || b[i] != b[uniq - 1])
			b[uniq++] = b[i];
	return uniq;
}

/*
 * Throughput gain and memory feasibility of applying the changes (at most 2) together, over
 * the pieces of time in which the same changes are present.
 */
void
oracle_srch_delta(struct oracle_srch *sr, const struct oracle_srch_change *ch, int nr,
                  struct oracle_srch_result *d)
{
	struct srch_diff df;
	int b[2 * SRCH_MAX_CHANGES], nb = 0;

	srch_diff_build(sr, ch, nr, &df);
	for (int c = 0; c < nr; c++) {
		b[nb++] = sr->om->vms[ch[c].vm].first;
		b[nb++] = sr->om->vms[ch[c].vm].last + 1;
	}
	nb = srch_bounds_sort(b, nb);
	d->feasible = true;
	d->gain = 0;
	d->over_mib = 0;
	for (int i = 0; i + 1 < nb; i++) {
		double du[SCN_MAX_NODES] = {0}, ds[SCN_MAX_NODES] = {0};
		int64_t dm[SCN_MAX_NODES] = {0};

		for (int c = 0; c < nr; c++) {
			const struct oracle_vm_model *vmm = &sr->om->vms[ch[c].vm];

			if (b[i] < vmm->first || b[i] > vmm->last)
				continue;
			for (int a = 0; a < df.nr_nodes; a++) {
				du[a] += df.du[c][df.nodes[a]];
				ds[a] += df.ds[c][df.nodes[a]];
				dm[a] += df.dm[c][df.nodes[a]];
			}
		}
		srch_delta_piece(sr, &df, b[i], b[i + 1], du, ds, dm, d);
	}
	sr->work += (uint64_t)(b[nb - 1] - b[0]) * (uint64_t)df.nr_nodes + (uint64_t)sr->nn;
}

/* Add (sign 1) or remove (sign -1) contribution c of VM vm to/from the segment totals. */
void
oracle_srch_account(struct oracle_srch *sr, int vm, const struct oracle_contrib *c, int sign)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];

	for (int n = 0; n < sr->nn; n++) {
		if (c->u[n] == 0 && c->s[n] == 0 && c->m[n] == 0)
			continue;
		for (int j = vmm->first; j <= vmm->last; j++) {
			size_t k = (size_t)j * sr->nn + n;

			sr->seg_m[k] = sign > 0 ? sr->seg_m[k] + c->m[n] : sr->seg_m[k] - c->m[n];
			sr->seg_u[k] += sign * c->u[n];
			sr->seg_s[k] += sign * c->s[n];
		}
	}
}

void
oracle_srch_contrib_copy(struct oracle_contrib *dst, const struct oracle_contrib *src, int nn)
{
	memcpy(dst->u, src->u, sizeof(double) * (size_t)nn);
	memcpy(dst->s, src->s, sizeof(double) * (size_t)nn);
	memcpy(dst->m, src->m, sizeof(uint64_t) * (size_t)nn);
}

/* Make vcpu_node/unit_node with contribution c VM vm's binding. */
void
oracle_srch_apply(struct oracle_srch *sr, int vm, const int *vcpu_node, const int *unit_node,
                  const struct oracle_contrib *c)
{
	struct oracle_srch_vm *sv = &sr->vms[vm];

	for (int n = 0; n < sr->nn; n++)
		if (!sv->placed || sv->cur.u[n] != c->u[n] || sv->cur.s[n] != c->s[n] ||
		    sv->cur.m[n] != c->m[n])
			sr->node_version[n]++;
	if (sv->placed)
		oracle_srch_account(sr, vm, &sv->cur, -1);
	oracle_srch_account(sr, vm, c, 1);
	oracle_srch_contrib_copy(&sv->cur, c, sr->nn);
	memcpy(sv->vcpu_node, vcpu_node, sizeof(int) * (size_t)sr->om->vms[vm].nr_vcpus);
	memcpy(sv->unit_node, unit_node, sizeof(int) * (size_t)sv->nr_units);
	sv->placed = true;
}

void
oracle_srch_unplace(struct oracle_srch *sr, int vm)
{
	if (sr->vms[vm].placed)
		oracle_srch_account(sr, vm, &sr->vms[vm].cur, -1);
	sr->vms[vm].placed = false;
}

/* Recompute the segment totals from scratch (drops rounding drift); returns the total work. */
double
oracle_srch_rebuild(struct oracle_srch *sr)
{
	size_t cells = (size_t)(sr->om->nr_segs > 0 ? sr->om->nr_segs : 1) * (size_t)sr->nn;
	double total = 0;

	memset(sr->seg_u, 0, cells * sizeof(double));
	memset(sr->seg_s, 0, cells * sizeof(double));
	memset(sr->seg_m, 0, cells * sizeof(uint64_t));
	for (int i = 0; i < sr->nr_live; i++)
		if (sr->vms[sr->live[i]].placed)
			oracle_srch_account(sr, sr->live[i], &sr->vms[sr->live[i]].cur, 1);
	for (int j = 0; j < sr->om->nr_segs; j++)
		for (int n = 0; n < sr->nn; n++)
			total += sr->om->seg_len_s[j] *
			         oracle_node_work(sr->om->cpus_per_node,
			                          sr->seg_u[(size_t)j * sr->nn + n],
			                          sr->seg_s[(size_t)j * sr->nn + n]);
	return total;
}

/* ---- uneven splits: parts of units, room ---------------------------------------------- */

/* Room for one more unit in vm's arrays and in the scratch arrays. */
static void
srch_units_grow(struct oracle_srch *sr, int vm)
{
	struct oracle_srch_vm *sv = &sr->vms[vm];

	if (sv->nr_units + 1 > sv->cap_units) {
		size_t cap = (size_t)sv->cap_units * 2;

		sv->unit_start = xreallocarray(sv->unit_start, cap, sizeof(uint64_t));
		sv->unit_len = xreallocarray(sv->unit_len, cap, sizeof(uint64_t));
		sv->unit_slice = xreallocarray(sv->unit_slice, cap, sizeof(int));
		sv->unit_group = xreallocarray(sv->unit_group, cap, sizeof(int));
		sv->unit_base = xreallocarray(sv->unit_base, cap, sizeof(bool));
		sv->unit_node = xreallocarray(sv->unit_node, cap, sizeof(int));
		sv->cap_units = (int)cap;
	}
	if (sv->nr_units + 1 > sr->max_units) {
		size_t cap = (size_t)sr->max_units * 2;

		sr->tu = xreallocarray(sr->tu, cap, sizeof(int));
		sr->bu = xreallocarray(sr->bu, cap, sizeof(int));
		sr->ulist = xreallocarray(sr->ulist, cap, sizeof(int));
		sr->max_units = (int)cap;
	}
}

/* Open a gap at index at of a per-unit int array of nr entries. */
static void
srch_ints_insert(int *a, int nr, int at, int value)
{
	memmove(&a[at + 1], &a[at], sizeof(int) * (size_t)(nr - at));
	a[at] = value;
}

void
oracle_srch_unit_split(struct oracle_srch *sr, int vm, int u, uint64_t first_mib)
{
	struct oracle_srch_vm *sv;
	int nr;

	srch_units_grow(sr, vm);
	sv = &sr->vms[vm];
	nr = sv->nr_units;
	memmove(&sv->unit_start[u + 1], &sv->unit_start[u], sizeof(uint64_t) * (size_t)(nr - u));
	memmove(&sv->unit_len[u + 1], &sv->unit_len[u], sizeof(uint64_t) * (size_t)(nr - u));
	memmove(&sv->unit_base[u + 1], &sv->unit_base[u], sizeof(bool) * (size_t)(nr - u));
	srch_ints_insert(sv->unit_slice, nr, u, sv->unit_slice[u]);
	srch_ints_insert(sv->unit_group, nr, u, sv->unit_group[u]);
	srch_ints_insert(sv->unit_node, nr, u, sv->unit_node[u]);
	sv->unit_len[u] = first_mib;
	sv->unit_start[u + 1] += first_mib;
	sv->unit_len[u + 1] -= first_mib;
	sv->unit_base[u + 1] = false;
	sv->nr_units++;
}

/* Merge split-off parts back into the unit before them when they sit on the same node. */
static void
srch_units_merge(struct oracle_srch_vm *sv)
{
	int k = 0;

	for (int u = 0; u < sv->nr_units; u++) {
		if (k > 0 && !sv->unit_base[u] && sv->unit_node[u] == sv->unit_node[k - 1]) {
			sv->unit_len[k - 1] += sv->unit_len[u];
			continue;
		}
		sv->unit_start[k] = sv->unit_start[u];
		sv->unit_len[k] = sv->unit_len[u];
		sv->unit_slice[k] = sv->unit_slice[u];
		sv->unit_group[k] = sv->unit_group[u];
		sv->unit_base[k] = sv->unit_base[u];
		sv->unit_node[k++] = sv->unit_node[u];
	}
	sv->nr_units = k;
}

void
oracle_srch_apply_best(struct oracle_srch *sr, int vm)
{
	struct oracle_srch_part *p = &sr->bpart;

	if (p->unit >= 0) {
		int u = p->unit, nr = sr->vms[vm].nr_units;

		oracle_srch_unit_split(sr, vm, u, sr->vms[vm].unit_len[u] - p->mib);
		srch_ints_insert(sr->bu, nr, u, sr->bu[u]);
		sr->bu[u + 1] = p->node;
		p->unit = -1;
	}
	oracle_srch_apply(sr, vm, sr->bv, sr->bu, &sr->bc);
	srch_units_merge(&sr->vms[vm]);
}

uint64_t
oracle_srch_room_mib(struct oracle_srch *sr, int vm, int n)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	uint64_t own = sv->placed ? sv->cur.m[n] : 0, room = sr->om->cap_mib;

	for (int j = vmm->first; j <= vmm->last; j++) {
		uint64_t others = sr->seg_m[(size_t)j * sr->nn + n] - own;

		room = others >= sr->om->cap_mib         ? 0
		       : sr->om->cap_mib - others < room ? sr->om->cap_mib - others
		                                         : room;
	}
	sr->work += (uint64_t)(vmm->last - vmm->first + 1);
	return room;
}

int
oracle_srch_cpu_room(struct oracle_srch *sr, int vm, int n)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[vm];
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	double own = sv->placed ? sv->cur.u[n] : 0, busiest = 0, room;

	if (vmm->util <= 0)
		return INT_MAX;
	for (int j = vmm->first; j <= vmm->last; j++) {
		double others = sr->seg_u[(size_t)j * sr->nn + n] - own;

		busiest = others > busiest ? others : busiest;
	}
	sr->work += (uint64_t)(vmm->last - vmm->first + 1);
	room = (sr->om->cpus_per_node - busiest) / vmm->util + 1e-9;
	return room <= 0 ? 0 : room >= INT_MAX ? INT_MAX : (int)room;
}

/* ---- setup and result ---------------------------------------------------------------- */

/* Segment totals and scratch buffers sized for the largest VM. */
static void
srch_alloc(struct oracle_srch *sr, int max_v, int max_u, int max_s)
{
	const struct oracle_model *om = sr->om;
	size_t cells = (size_t)(om->nr_segs > 0 ? om->nr_segs : 1) * (size_t)om->nr_nodes;

	sr->seg_u = xcalloc(cells, sizeof(double));
	sr->seg_s = xcalloc(cells, sizeof(double));
	sr->seg_m = xcalloc(cells, sizeof(uint64_t));
	sr->tv = xcalloc((size_t)max_v, sizeof(int));
	sr->bv = xcalloc((size_t)max_v, sizeof(int));
	sr->flag = xcalloc((size_t)max_v, sizeof(int));
	sr->max_units = max_u;
	sr->tu = xcalloc((size_t)max_u, sizeof(int));
	sr->bu = xcalloc((size_t)max_u, sizeof(int));
	sr->ulist = xcalloc((size_t)max_u, sizeof(int));
	sr->slice_mib = xcalloc((size_t)max_s * (size_t)sr->nn, sizeof(uint64_t));
	sr->hot = xcalloc((size_t)(om->nr_segs + 1) * (size_t)sr->nn, sizeof(int));
	sr->node_version = xcalloc((size_t)sr->nn, sizeof(uint64_t));
	sr->pair_seen = xcalloc((size_t)sr->nn * (size_t)sr->nn, sizeof(uint64_t));
	for (int i = 0; i < sr->nn * sr->nn; i++)
		sr->pair_seen[i] = UINT64_MAX;
	oracle_contrib_init(&sr->tc, sr->nn);
	oracle_contrib_init(&sr->bc, sr->nn);
	oracle_contrib_init(&sr->tc2, sr->nn);
}

/* Most work per CPU-second any vCPU can do: 1 when no distance is below 10 (local). */
static double
srch_eff_max(const struct oracle_model *om)
{
	int dmin = om->dist[0];
	double best = 1.0;

	for (int i = 1; i < om->nr_nodes * om->nr_nodes; i++)
		dmin = om->dist[i] < dmin ? om->dist[i] : dmin;
	for (int i = 0; i < om->nr_vms && dmin < 10; i++) {
		double m = om->vms[i].mem_intensity, e = 1.0 / ((1.0 - m) + m * dmin / 10.0);

		best = e > best ? e : best;
	}
	return best;
}

/* vCPUs by cell (cells workloads), then by index: a block of them is one cell's or few. */
static int *
srch_vcpu_order(const struct oracle_vm_model *vmm)
{
	int *order = xcalloc((size_t)vmm->nr_vcpus + 1, sizeof(int)), nr = 0, max_cell = -1;

	for (int v = 0; v < vmm->nr_vcpus; v++)
		max_cell = vmm->vcpu_slice[v] > max_cell ? vmm->vcpu_slice[v] : max_cell;
	if (vmm->access != ORACLE_ACCESS_LOCAL || vmm->nr_slices == vmm->nr_vcpus)
		max_cell = -1; /* one slice per vCPU (or none): index order */
	for (int c = -1; c <= max_cell; c++)
		for (int v = 0; v < vmm->nr_vcpus; v++)
			if (max_cell < 0 || vmm->vcpu_slice[v] == c)
				order[nr++] = v;
	return order;
}

static void
srch_init(struct oracle_srch *sr, const struct oracle_model *om)
{
	int max_v = 1, max_u = 1, max_s = 1;
	double scale = 0;

	memset(sr, 0, sizeof(*sr));
	sr->om = om;
	sr->nn = om->nr_nodes;
	sr->vms = xcalloc((size_t)om->nr_vms + 1, sizeof(*sr->vms));
	sr->live = xcalloc((size_t)om->nr_vms + 1, sizeof(int));
	for (int i = 0; i < om->nr_vms; i++) {
		const struct oracle_vm_model *vmm = &om->vms[i];
		struct oracle_srch_vm *sv = &sr->vms[i];

		units_build(&om->scn->vms[i], vmm, sv);
		sv->vcpu_node = xcalloc((size_t)vmm->nr_vcpus + 1, sizeof(int));
		sv->vcpu_order = srch_vcpu_order(vmm);
		oracle_contrib_init(&sv->cur, sr->nn);
		max_v = vmm->nr_vcpus > max_v ? vmm->nr_vcpus : max_v;
		max_u = sv->nr_units > max_u ? sv->nr_units : max_u;
		max_s = vmm->nr_slices > max_s ? vmm->nr_slices : max_s;
		if (vmm->first < 0)
			continue;
		sr->live[sr->nr_live++] = i;
		for (int j = vmm->first; j <= vmm->last; j++)
			scale += om->seg_len_s[j] * vmm->util * vmm->nr_vcpus;
	}
	sr->eps = ORACLE_EPS_REL * (scale > 1 ? scale : 1);
	sr->eff_max = srch_eff_max(om);
	sr->uniform_local = true;
	for (int n = 1; n < sr->nn; n++)
		if (om->dist[n * sr->nn + n] != om->dist[0])
			sr->uniform_local = false;
	srch_alloc(sr, max_v, max_u, max_s);
	sr->tpart.unit = sr->bpart.unit = -1;
}

static void
srch_fini(struct oracle_srch *sr)
{
	for (int i = 0; i < sr->om->nr_vms; i++) {
		struct oracle_srch_vm *sv = &sr->vms[i];

		free(sv->unit_start);
		free(sv->unit_len);
		free(sv->unit_slice);
		free(sv->unit_group);
		free(sv->unit_base);
		free(sv->vcpu_order);
		free(sv->vcpu_node);
		free(sv->unit_node);
		free(sv->cands);
		oracle_contrib_fini(&sv->cur);
	}
	free(sr->vms);
	free(sr->live);
	free(sr->seg_u);
	free(sr->seg_s);
	free(sr->seg_m);
	free(sr->tv);
	free(sr->bv);
	free(sr->flag);
	free(sr->tu);
	free(sr->bu);
	free(sr->ulist);
	free(sr->slice_mib);
	free(sr->hot);
	free(sr->node_version);
	free(sr->pair_seen);
	oracle_contrib_fini(&sr->tc);
	oracle_contrib_fini(&sr->bc);
	oracle_contrib_fini(&sr->tc2);
}

/* The search's binding of one VM as vCPU nodes and merged guest ranges. */
static void
srch_export_vm(const struct oracle_srch *sr, int vm, struct oracle_vm_binding *vb)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];
	struct oracle_range *r = xcalloc((size_t)sv->nr_units + 1, sizeof(*r));
	int nr = 0, fallback = nodemask_first(sr->om->vms[vm].allowed);

	for (int v = 0; v < vb->nr_vcpus; v++)
		vb->vcpu_node[v] = sv->placed ? sv->vcpu_node[v] : fallback;
	for (int u = 0; u < sv->nr_units; u++) {
		int node = sv->placed ? sv->unit_node[u] : fallback;

		if (nr > 0 && r[nr - 1].node == node) {
			r[nr - 1].len_mib += sv->unit_len[u];
			continue;
		}
		r[nr].start_mib = sv->unit_start[u];
		r[nr].len_mib = sv->unit_len[u];
		r[nr++].node = node;
	}
	oracle_vm_binding_set_ranges(vb, r, nr);
	free(r);
}

/*
 * One start of the search: stage 1 (with fill-and-spill shapes or without), then stage 2.
 * NULL when fill is asked for but no VM has such a shape (the start would be the same).
 */
static struct oracle_binding *
srch_run(const struct scenario *scn, const struct oracle_model *om, bool fill)
{
	struct oracle_binding *b = oracle_binding_new(scn);
	struct oracle_srch sr;
	bool any_fill = false;

	srch_init(&sr, om);
	sr.fill_shapes = fill;
	for (int i = 0; i < sr.nr_live; i++) {
		oracle_shape_build(&sr, sr.live[i]);
		for (int c = 0; c < sr.vms[sr.live[i]].nr_cands; c++)
			any_fill |= sr.vms[sr.live[i]].cands[c].first >= 0;
	}
	if (fill && !any_fill) { /* every VM fits a node: the same start as without */
		srch_fini(&sr);
		oracle_binding_free(b);
		return NULL;
	}
	b->exhaustive = oracle_exhaustive_run(&sr);
	if (!b->exhaustive) {
		for (int i = 0; i < sr.nr_live; i++)
			oracle_srch_unplace(&sr, sr.live[i]);
		oracle_greedy_run(&sr);
	}
	b->ls_passes = oracle_local_run(&sr);
	for (int i = 0; i < scn->nr_vms; i++)
		srch_export_vm(&sr, i, &b->vms[i]);
	srch_fini(&sr);
	b->throughput = oracle_binding_throughput(scn, b);
	b->overcommit = oracle_binding_overfill_mib(scn, b) > 0;
	return b;
}

int
oracle_plan(const struct scenario *scn, struct oracle_binding **out)
{
	struct oracle_binding *best = NULL;
	struct oracle_model om;
	int ret;

	*out = NULL;
	if ((ret = oracle_model_init(&om, scn)) != 0)
		return ret;
	/*
	 * Two starts (docs/peers/oracle.md): stage 1 over even splits only, and over fill-and-
	 * spill shapes too.  Each leads stage 2 to a different local optimum; the better is
	 * kept (one that fits memory first; ties: the first).
	 */
	for (int start = 0; start < ORACLE_STARTS; start++) {
		struct oracle_binding *b = srch_run(scn, &om, start == 1);

		if (b == NULL)
			continue;
		if (best == NULL || (best->overcommit && !b->overcommit) ||
		    (best->overcommit == b->overcommit && b->throughput > best->throughput)) {
			oracle_binding_free(best);
			best = b;
		} else {
			oracle_binding_free(b);
		}
	}
	oracle_model_fini(&om);
	*out = best;
	return best->throughput < 0 ? (int)best->throughput : 0;
}

/*
 * oracle_model.c - the oracle's evaluator: the simulator's ground-truth throughput model
 * (docs/simulator.md) applied to a static binding, segment by segment between arrival and
 * departure events.  No sampling and no migration: a static binding has neither.
 */
#include "host/sim/peer_oracle.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/sim.h"
#include "policy/util.h"

/* ---- ground-truth layout ------------------------------------------------------------ */

uint64_t
oracle_vm_mem_mib(const struct scn_vm *vm)
{
	uint64_t mib = vm->memory_gib > 0 ? (uint64_t)(vm->memory_gib * 1024.0) : 0;

	return mib / SIM_REGION_MIB * SIM_REGION_MIB;
}

int
oracle_vm_nr_slices(const struct scn_vm *vm)
{
	if (vm->workload == SCN_WORKLOAD_SHARED)
		return 1;
	if (vm->workload == SCN_WORKLOAD_CELLS && vm->nr_cells > 0)
		return vm->nr_cells;
	return vm->vcpus > 0 ? vm->vcpus : 1;
}

/* Start of cell i in MiB: the cumulative size of the cells before it, in whole regions. */
static uint64_t
layout_cell_start_mib(const struct scn_vm *vm, int cell)
{
	uint64_t mem = oracle_vm_mem_mib(vm), start;
	double gib = 0;

	if (cell >= vm->nr_cells)
		return mem;
	for (int i = 0; i < cell; i++)
		gib += vm->cells[i].memory_gib;
	start = (uint64_t)(gib * 1024.0) / SIM_REGION_MIB * SIM_REGION_MIB;
	return start < mem ? start : mem;
}

void
oracle_vm_slice_range(const struct scn_vm *vm, int slice, uint64_t *start_mib, uint64_t *len_mib)
{
	uint64_t regions = oracle_vm_mem_mib(vm) / SIM_REGION_MIB;
	uint64_t n = (uint64_t)oracle_vm_nr_slices(vm), a, b;

	if (vm->workload == SCN_WORKLOAD_CELLS && vm->nr_cells > 0) {
		a = layout_cell_start_mib(vm, slice);
		b = layout_cell_start_mib(vm, slice + 1);
		*start_mib = a;
		*len_mib = b > a ? b - a : 0;
		return;
	}
	/* Region r belongs to slice r * n / R: slice s is [ceil(s R / n), ceil((s + 1) R / n)). */
	a = ((uint64_t)slice * regions + n - 1) / n;
	b = ((uint64_t)(slice + 1) * regions + n - 1) / n;
	*start_mib = a * SIM_REGION_MIB;
	*len_mib = (b - a) * SIM_REGION_MIB;
}

uint64_t
oracle_node_cap_mib(const struct scenario *scn)
{
	uint64_t total = (uint64_t)(scn->host.memory_per_node_gib * 1024.0);

	return total > SIM_MIN_FREE_MIB ? total - SIM_MIN_FREE_MIB : 0;
}

/* ---- the model ---------------------------------------------------------------------- */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The simulator's tick for time t: the first tick k with k * SIM_TICK_S >= t - 1e-9 (it starts
 * and stops VMs on whole ticks, departures before arrivals), clipped to [0, ticks].
 */
static int64_t
model_tick(double t, int64_t ticks)
{
	int64_t k = (int64_t)ceil((t - 1e-9) / SIM_TICK_S);

	while (k > 0 && (double)(k - 1) * SIM_TICK_S >= t - 1e-9)
		k--;
	while ((double)k * SIM_TICK_S < t - 1e-9)
		k++;
	return k < 0 ? 0 : k > ticks ? ticks : k;
}

/* A VM's ticks: it runs over [*a, *b); *a == *b when it never runs. */
static void
model_vm_ticks(const struct scenario *scn, const struct scn_vm *vm, int64_t ticks, int64_t *a,
               int64_t *b)
{
	*a = model_tick(vm->start_s, ticks);
	*b = vm->stop_s < 0 ? ticks : model_tick(vm->stop_s, ticks);
	if (*b < *a)
		*b = *a;
}

/* Index of tick k in the sorted event ticks (k is always one of them). */
static int
model_tick_index(const int64_t *t, int nr, int64_t k)
{
	int lo = 0, hi = nr - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (t[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Event ticks: 0, the end, and every arrival and departure; segments lie between them. */
static int
model_build_timeline(struct oracle_model *om, int64_t ticks, int64_t *t)
{
	const struct scenario *scn = om->scn;
	int nr = 0, uniq = 0;

	t[nr++] = 0;
	t[nr++] = ticks;
	for (int i = 0; i < scn->nr_vms; i++, nr += 2)
		model_vm_ticks(scn, &scn->vms[i], ticks, &t[nr], &t[nr + 1]);
	qsort(t, (size_t)nr, sizeof(int64_t), cmp_i64);
	for (int i = 0; i < nr; i++)
		if (uniq == 0 || t[i] != t[uniq - 1])
			t[uniq++] = t[i];
	om->nr_segs = uniq - 1;
	om->seg_len_s = xcalloc((size_t)(uniq > 1 ? uniq - 1 : 1), sizeof(double));
	for (int j = 0; j + 1 < uniq; j++)
		om->seg_len_s[j] = (double)(t[j + 1] - t[j]) * SIM_TICK_S;
	return uniq;
}

/*
 * A phased VM's phase weights over its ticks [a, b): phase k runs while the simulator's
 * floor((now - start) / phase_s) is k (sim.c, sim_phases), and in it vCPU v's home slice is
 * (v + k) mod n.
 */
static void
model_vm_phases(struct oracle_vm_model *m, const struct scn_vm *sv, int64_t a, int64_t b)
{
	int n = m->nr_slices;

	m->phase_w = xcalloc((size_t)n, sizeof(double));
	for (int64_t t = a; t < b; t++) {
		double since = (double)t * SIM_TICK_S - (double)a * SIM_TICK_S;
		int64_t k = (int64_t)floor(since / sv->phase_s + 1e-9);

		m->phase_w[k % n] += 1.0 / (double)(b - a);
	}
}

static void
model_vm_time(struct oracle_model *om, int vm, int64_t ticks, const int64_t *t, int nr)
{
	struct oracle_vm_model *m = &om->vms[vm];
	int64_t a, b;

	m->first = m->last = -1;
	model_vm_ticks(om->scn, &om->scn->vms[vm], ticks, &a, &b);
	if (a >= b)
		return;
	m->first = model_tick_index(t, nr, a);
	m->last = model_tick_index(t, nr, b) - 1;
	if (om->scn->vms[vm].workload == SCN_WORKLOAD_PHASED && m->nr_slices == m->nr_vcpus)
		model_vm_phases(m, &om->scn->vms[vm], a, b);
}

static void
model_vm_layout(struct oracle_model *om, int vm)
{
	const struct scn_vm *sv = &om->scn->vms[vm];
	struct oracle_vm_model *m = &om->vms[vm];
	uint64_t all = om->nr_nodes >= 64 ? NODEMASK_ALL : nodemask_of(om->nr_nodes) - 1;

	m->access = ORACLE_ACCESS_LOCAL;
	if (sv->workload == SCN_WORKLOAD_SHARED)
		m->access = ORACLE_ACCESS_SHARED;
	else if (sv->workload == SCN_WORKLOAD_PHASED || sv->workload == SCN_WORKLOAD_ADVERSE)
		m->access = ORACLE_ACCESS_ROTATING;
	m->util = sv->workload == SCN_WORKLOAD_IDLE ? SIM_IDLE_UTIL : sv->util;
	m->mem_intensity = sv->mem_intensity;
	m->nr_vcpus = sv->vcpus;
	m->mem_mib = oracle_vm_mem_mib(sv);
	m->allowed = sv->policy.nodes & all;
	if (m->allowed == 0)
		m->allowed = all; /* an unsatisfiable mask: the oracle places it anywhere */
	m->nr_slices = oracle_vm_nr_slices(sv);
	m->slice_start_mib = xcalloc((size_t)m->nr_slices, sizeof(uint64_t));
	m->slice_len_mib = xcalloc((size_t)m->nr_slices, sizeof(uint64_t));
	for (int s = 0; s < m->nr_slices; s++)
		oracle_vm_slice_range(sv, s, &m->slice_start_mib[s], &m->slice_len_mib[s]);
	m->vcpu_slice = xcalloc((size_t)(sv->vcpus > 0 ? sv->vcpus : 1), sizeof(int));
	for (int v = 0; v < sv->vcpus; v++)
		m->vcpu_slice[v] = m->access == ORACLE_ACCESS_LOCAL && m->nr_slices == sv->vcpus &&
		                           sv->workload != SCN_WORKLOAD_CELLS
		                       ? v
		                       : -1;
	if (sv->workload == SCN_WORKLOAD_CELLS)
		for (int c = 0; c < sv->nr_cells; c++)
			for (int k = 0; k < sv->cells[c].nr_vcpus; k++)
				if (sv->cells[c].vcpus[k] >= 0 && sv->cells[c].vcpus[k] < sv->vcpus)
					m->vcpu_slice[sv->cells[c].vcpus[k]] = c;
}

int
oracle_model_init(struct oracle_model *om, const struct scenario *scn)
{
	int n = scn->host.nodes, nr_times;
	int64_t ticks = scn->duration_s > 0 ? llround(scn->duration_s / SIM_TICK_S) : 0, *times;

	memset(om, 0, sizeof(*om));
	if (n <= 0 || n > SCN_MAX_NODES || scn->nr_vms < 0 || scn->host.cpus_per_node < 1)
		return -EINVAL;
	for (int i = 0; i < scn->nr_vms; i++)
		if (scn->vms[i].vcpus < 1 || scn->vms[i].vcpus > SCN_MAX_VCPUS)
			return -EINVAL;
	om->scn = scn;
	om->nr_nodes = n;
	om->cpus_per_node = scn->host.cpus_per_node;
	om->cap_mib = oracle_node_cap_mib(scn);
	om->dist = xcalloc((size_t)n * (size_t)n, sizeof(int));
	for (int i = 0; i < n * n; i++)
		om->dist[i] =
		    scn->host.distances ? scn->host.distances[i] : (i / n == i % n ? 10 : 21);
	times = xcalloc((size_t)scn->nr_vms * 2 + 2, sizeof(int64_t));
	nr_times = model_build_timeline(om, ticks, times);
	om->nr_vms = scn->nr_vms;
	om->vms = xcalloc((size_t)(scn->nr_vms > 0 ? scn->nr_vms : 1), sizeof(*om->vms));
	for (int i = 0; i < scn->nr_vms; i++) {
		model_vm_layout(om, i);
		model_vm_time(om, i, ticks, times, nr_times);
	}
	free(times);
	return 0;
}

void
oracle_model_fini(struct oracle_model *om)
{
	for (int i = 0; i < om->nr_vms; i++) {
		free(om->vms[i].slice_start_mib);
		free(om->vms[i].slice_len_mib);
		free(om->vms[i].vcpu_slice);
		free(om->vms[i].phase_w);
	}
	free(om->vms);
	free(om->dist);
	free(om->seg_len_s);
	memset(om, 0, sizeof(*om));
}

void
oracle_contrib_init(struct oracle_contrib *c, int nr_nodes)
{
	c->u = xcalloc((size_t)nr_nodes, sizeof(double));
	c->s = xcalloc((size_t)nr_nodes, sizeof(double));
	c->m = xcalloc((size_t)nr_nodes, sizeof(uint64_t));
}

void
oracle_contrib_fini(struct oracle_contrib *c)
{
	free(c->u);
	free(c->s);
	free(c->m);
	memset(c, 0, sizeof(*c));
}

double
oracle_node_work(double cpus, double u, double s)
{
	return u > cpus ? s * cpus / u : s;
}

/* ---- one VM's contribution ---------------------------------------------------------- */

/* Mean access cost from node c to memory spread as row[] (MiB per node); -1 when empty. */
static double
contrib_cost(const struct oracle_model *om, int c, const uint64_t *row)
{
	double sum = 0, total = 0;

	for (int n = 0; n < om->nr_nodes; n++) {
		if (row[n] == 0)
			continue;
		sum += (double)row[n] * om->dist[c * om->nr_nodes + n];
		total += (double)row[n];
	}
	return total > 0 ? sum / (10.0 * total) : -1.0;
}

static double
contrib_eff(double m, double cost)
{
	return 1.0 / ((1.0 - m) + m * cost);
}

/* Efficiency of a vCPU on c whose home slice is row (NULL or empty: uniform accesses only). */
static double
contrib_local_eff(const struct oracle_model *om, const struct oracle_vm_model *vmm, int c,
                  const uint64_t *row, double whole_cost)
{
	double slice_cost = row ? contrib_cost(om, c, row) : -1.0;

	if (slice_cost < 0)
		return contrib_eff(vmm->mem_intensity, whole_cost);
	return contrib_eff(vmm->mem_intensity,
	                   SIM_LOCAL_SHARE * slice_cost + (1.0 - SIM_LOCAL_SHARE) * whole_cost);
}

/* Rotating home slice: the mean efficiency over every slice being the home one. */
static double
contrib_rotating_eff(const struct oracle_model *om, const struct oracle_vm_model *vmm, int c,
                     const uint64_t *slice_mib, double whole_cost)
{
	double sum = 0;

	for (int s = 0; s < vmm->nr_slices; s++)
		sum +=
		    contrib_local_eff(om, vmm, c, &slice_mib[(size_t)s * om->nr_nodes], whole_cost);
	return vmm->nr_slices > 0 ? sum / vmm->nr_slices : 1.0;
}

/*
 * Phased: the efficiency of each vCPU on node c, its home slices weighted by phase_w.  The
 * efficiency of every slice from c is computed once (eff_s, nr_slices entries).
 */
static void
contrib_phased(const struct oracle_model *om, const struct oracle_vm_model *vmm, int c,
               const int *vcpu_node, const uint64_t *slice_mib, double whole_cost, double *eff_s,
               double *eff_v)
{
	int n = vmm->nr_slices;

	for (int s = 0; s < n; s++)
		eff_s[s] =
		    contrib_local_eff(om, vmm, c, &slice_mib[(size_t)s * om->nr_nodes], whole_cost);
	for (int v = 0; v < vmm->nr_vcpus; v++) {
		double sum = 0;

		if (vcpu_node[v] != c)
			continue;
		for (int d = 0; d < n; d++)
			sum += vmm->phase_w[d] * eff_s[(v + d) % n];
		eff_v[v] = sum;
	}
}

void
oracle_vm_contrib(const struct oracle_model *om, int vm, const int *vcpu_node,
                  const uint64_t *slice_mib, struct oracle_contrib *out)
{
	const struct oracle_vm_model *vmm = &om->vms[vm];
	int nn = om->nr_nodes;
	double whole_cost[SCN_MAX_NODES], rot_eff[SCN_MAX_NODES], *eff_s = NULL, *eff_v = NULL;
	bool known[SCN_MAX_NODES] = {false};

	memset(out->u, 0, sizeof(double) * (size_t)nn);
	memset(out->s, 0, sizeof(double) * (size_t)nn);
	memset(out->m, 0, sizeof(uint64_t) * (size_t)nn);
	for (int s = 0; s < vmm->nr_slices; s++)
		for (int n = 0; n < nn; n++)
			out->m[n] += slice_mib[(size_t)s * nn + n];
	if (vmm->phase_w != NULL) {
		eff_s = xcalloc((size_t)vmm->nr_slices, sizeof(double));
		eff_v = xcalloc((size_t)vmm->nr_vcpus, sizeof(double));
	}
	for (int v = 0; v < vmm->nr_vcpus; v++) {
		int c = vcpu_node[v], hs = vmm->vcpu_slice[v];
		double eff;

		if (!known[c]) {
			whole_cost[c] = contrib_cost(om, c, out->m);
			if (whole_cost[c] < 0)
				whole_cost[c] = 1.0; /* a VM without RAM: nothing to wait on */
			if (vmm->phase_w != NULL)
				contrib_phased(om, vmm, c, vcpu_node, slice_mib, whole_cost[c],
				               eff_s, eff_v);
			else if (vmm->access == ORACLE_ACCESS_ROTATING)
				rot_eff[c] =
				    contrib_rotating_eff(om, vmm, c, slice_mib, whole_cost[c]);
			known[c] = true;
		}
		if (vmm->phase_w != NULL)
			eff = eff_v[v];
		else if (vmm->access == ORACLE_ACCESS_ROTATING)
			eff = rot_eff[c];
		else if (vmm->access == ORACLE_ACCESS_SHARED || hs < 0)
			eff = contrib_eff(vmm->mem_intensity, whole_cost[c]);
		else
			eff = contrib_local_eff(om, vmm, c, &slice_mib[(size_t)hs * nn],
			                        whole_cost[c]);
		out->u[c] += vmm->util;
		out->s[c] += vmm->util * eff;
	}
	free(eff_s);
	free(eff_v);
}

/* ---- the public evaluator ------------------------------------------------------------ */

/* MiB of each slice on each node under vb's ranges; -EINVAL if they do not tile the RAM. */
static int
eval_slice_mib(const struct oracle_model *om, const struct oracle_vm_model *vmm,
               const struct oracle_vm_binding *vb, uint64_t *slice_mib)
{
	uint64_t pos = 0;
	int s = 0;

	memset(slice_mib, 0, sizeof(uint64_t) * (size_t)vmm->nr_slices * (size_t)om->nr_nodes);
	for (int r = 0; r < vb->nr_ranges; r++) {
		const struct oracle_range *rg = &vb->ranges[r];
		uint64_t end = rg->start_mib + rg->len_mib;

		if (rg->start_mib != pos || rg->node < 0 || rg->node >= om->nr_nodes)
			return -EINVAL;
		while (s < vmm->nr_slices && vmm->slice_start_mib[s] + vmm->slice_len_mib[s] <= pos)
			s++;
		for (int k = s; k < vmm->nr_slices && vmm->slice_start_mib[k] < end; k++) {
			uint64_t a = vmm->slice_start_mib[k], e = a + vmm->slice_len_mib[k];

			a = a > pos ? a : pos;
			e = e < end ? e : end;
			if (e > a)
				slice_mib[(size_t)k * om->nr_nodes + rg->node] += e - a;
		}
		pos = end;
	}
	return pos == vmm->mem_mib ? 0 : -EINVAL;
}

/* Add every VM of b into per-segment node totals (nr_segs x nr_nodes each). */
static int
eval_accumulate(const struct oracle_model *om, const struct oracle_binding *b, double *seg_u,
                double *seg_s, uint64_t *seg_m)
{
	struct oracle_contrib c;
	int nn = om->nr_nodes, ret = 0;
	uint64_t *slice_mib = NULL;

	if (b == NULL || b->nr_vms != om->nr_vms)
		return -EINVAL;
	oracle_contrib_init(&c, nn);
	for (int i = 0; i < om->nr_vms && ret == 0; i++) {
		const struct oracle_vm_model *vmm = &om->vms[i];
		const struct oracle_vm_binding *vb = &b->vms[i];

		if (vmm->first < 0)
			continue;
		if (vb->nr_vcpus != vmm->nr_vcpus) {
			ret = -EINVAL;
			break;
		}
		for (int v = 0; v < vb->nr_vcpus; v++)
			if (vb->vcpu_node[v] < 0 || vb->vcpu_node[v] >= nn)
				ret = -EINVAL;
		free(slice_mib);
		slice_mib = xcalloc((size_t)vmm->nr_slices * (size_t)nn, sizeof(uint64_t));
		if (ret != 0 || (ret = eval_slice_mib(om, vmm, vb, slice_mib)) != 0)
			break;
		oracle_vm_contrib(om, i, vb->vcpu_node, slice_mib, &c);
		for (int j = vmm->first; j <= vmm->last; j++)
			for (int n = 0; n < nn; n++) {
				seg_m[(size_t)j * nn + n] += c.m[n];
				seg_u[(size_t)j * nn + n] += c.u[n];
				seg_s[(size_t)j * nn + n] += c.s[n];
			}
	}
	free(slice_mib);
	oracle_contrib_fini(&c);
	return ret;
}

/* Work over the run and peak overfill of b; -EINVAL when b is malformed. */
static int
eval_with_totals(const struct scenario *scn, const struct oracle_binding *b, double *work,
                 uint64_t *overfill)
{
	struct oracle_model om;
	double *seg_u, *seg_s;
	uint64_t *seg_m;
	size_t cells;
	int ret = oracle_model_init(&om, scn);

	if (ret != 0)
		return ret;
	cells = (size_t)(om.nr_segs > 0 ? om.nr_segs : 1) * (size_t)om.nr_nodes;
	seg_u = xcalloc(cells, sizeof(double));
	seg_s = xcalloc(cells, sizeof(double));
	seg_m = xcalloc(cells, sizeof(uint64_t));
	ret = eval_accumulate(&om, b, seg_u, seg_s, seg_m);
	*work = 0;
	*overfill = 0;
	for (int j = 0; ret == 0 && j < om.nr_segs; j++)
		for (int n = 0; n < om.nr_nodes; n++) {
			size_t k = (size_t)j * om.nr_nodes + n;

			*work += om.seg_len_s[j] *
			         oracle_node_work(om.cpus_per_node, seg_u[k], seg_s[k]);
			if (seg_m[k] > om.cap_mib && seg_m[k] - om.cap_mib > *overfill)
				*overfill = seg_m[k] - om.cap_mib;
		}
	free(seg_u);
	free(seg_s);
	free(seg_m);
	oracle_model_fini(&om);
	return ret;
}

double
oracle_binding_throughput(const struct scenario *scn, const struct oracle_binding *b)
{
	double work;
	uint64_t overfill;
	int ret = eval_with_totals(scn, b, &work, &overfill);

	return ret != 0 ? (double)ret : work;
}

uint64_t
oracle_binding_overfill_mib(const struct scenario *scn, const struct oracle_binding *b)
{
	double work;
	uint64_t overfill;

	return eval_with_totals(scn, b, &work, &overfill) != 0 ? UINT64_MAX : overfill;
}

/* ---- bindings ------------------------------------------------------------------------ */

struct oracle_binding *
oracle_binding_new(const struct scenario *scn)
{
	struct oracle_binding *b = xcalloc(1, sizeof(*b));

	b->nr_vms = scn->nr_vms;
	b->vms = xcalloc((size_t)(scn->nr_vms > 0 ? scn->nr_vms : 1), sizeof(*b->vms));
	for (int i = 0; i < scn->nr_vms; i++) {
		struct oracle_vm_binding *vb = &b->vms[i];
		struct oracle_range all = {0, oracle_vm_mem_mib(&scn->vms[i]), 0};

		vb->nr_vcpus = scn->vms[i].vcpus;
		vb->vcpu_node = xcalloc((size_t)(vb->nr_vcpus > 0 ? vb->nr_vcpus : 1), sizeof(int));
		oracle_vm_binding_set_ranges(vb, &all, all.len_mib > 0 ? 1 : 0);
	}
	return b;
}

void
oracle_vm_binding_set_ranges(struct oracle_vm_binding *vb, const struct oracle_range *ranges,
                             int nr)
{
	free(vb->ranges);
	vb->nr_ranges = nr;
	vb->ranges = xcalloc((size_t)(nr > 0 ? nr : 1), sizeof(*vb->ranges));
	if (nr > 0)
		memcpy(vb->ranges, ranges, sizeof(*ranges) * (size_t)nr);
}

void
oracle_binding_free(struct oracle_binding *b)
{
	if (b == NULL)
		return;
	for (int i = 0; i < b->nr_vms; i++) {
		free(b->vms[i].vcpu_node);
		free(b->vms[i].ranges);
	}
	free(b->vms);
	free(b);
}

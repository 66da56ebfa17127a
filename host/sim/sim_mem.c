/*
 * sim_mem.c - guest memory of the simulated host: 2-MiB regions, first-touch allocation with
 * fallback, the migration engine, and the hinting-fault sampler (with the kernel's
 * migrate-on-fault for the autonuma model).
 */
#include <stdlib.h>
#include <string.h>

#include "host/sim/sim_internal.h"

static uint64_t
sim_mem_mib(const struct scn_vm *svm)
{
	uint64_t mib = (uint64_t)(svm->memory_gib * 1024.0);

	return mib & ~(uint64_t)(SIM_REGION_MIB - 1);
}

static bool
sim_workload_sliced(const struct scn_vm *svm)
{
	return svm->workload != SCN_WORKLOAD_SHARED;
}

/* Lay out the slices: one per cell (cells workload), one per vCPU, or one for shared. */
static void
sim_vm_slices_init(struct sim_vm *vm)
{
	const struct scn_vm *svm = vm->scn;
	uint32_t r = 0;

	if (svm->workload == SCN_WORKLOAD_SHARED) {
		vm->nr_slices = 1;
	} else if (svm->workload == SCN_WORKLOAD_CELLS) {
		vm->nr_slices = svm->nr_cells;
	} else {
		vm->nr_slices = vm->nr_vcpus;
	}
	vm->slice_regions = xcalloc((size_t)vm->nr_slices, sizeof(uint32_t));
	if (svm->workload == SCN_WORKLOAD_CELLS) {
		double acc_gib = 0;

		for (int c = 0; c < svm->nr_cells; c++) {
			uint32_t end;

			acc_gib += svm->cells[c].memory_gib;
			end = (uint32_t)(acc_gib * 1024.0 / SIM_REGION_MIB);
			if (c == svm->nr_cells - 1 || end > vm->nr_regions)
				end = vm->nr_regions;
			for (; r < end; r++)
				vm->region_slice[r] = (uint16_t)c;
		}
	} else {
		for (r = 0; r < vm->nr_regions; r++)
			vm->region_slice[r] =
			    (uint16_t)((uint64_t)r * (uint64_t)vm->nr_slices / vm->nr_regions);
	}
	for (r = 0; r < vm->nr_regions; r++)
		vm->slice_regions[vm->region_slice[r]]++;
}

int
sim_vm_memory_init(struct sim *sim, struct sim_vm *vm)
{
	const struct scn_vm *svm = vm->scn;

	vm->nr_regions = (uint32_t)(sim_mem_mib(svm) / SIM_REGION_MIB);
	vm->region_node = xmalloc(vm->nr_regions);
	memset(vm->region_node, SIM_NO_NODE, vm->nr_regions);
	vm->region_last_node = xmalloc(vm->nr_regions);
	memset(vm->region_last_node, SIM_NO_NODE, vm->nr_regions);
	vm->region_last_vcpu = xcalloc(vm->nr_regions, sizeof(uint16_t));
	vm->region_slice = xcalloc(vm->nr_regions, sizeof(uint16_t));
	sim_vm_slices_init(vm);
	vm->slice_cnt = xcalloc((size_t)vm->nr_slices * (size_t)sim->nr_nodes, sizeof(uint32_t));
	vm->node_cnt = xcalloc((size_t)sim->nr_nodes, sizeof(uint32_t));
	vm->slice_owner = xcalloc((size_t)vm->nr_slices, sizeof(int));
	if (svm->workload == SCN_WORKLOAD_CELLS) {
		vm->cell_of_vcpu = xcalloc((size_t)vm->nr_vcpus, sizeof(int));
		for (int c = 0; c < svm->nr_cells; c++)
			for (int i = 0; i < svm->cells[c].nr_vcpus; i++)
				vm->cell_of_vcpu[svm->cells[c].vcpus[i]] = c;
	}
	sim_vm_update_slices(sim, vm);
	return 0;
}

void
sim_vm_memory_free(struct sim *sim, struct sim_vm *vm)
{
	free(vm->region_node);
	free(vm->region_last_node);
	free(vm->region_last_vcpu);
	free(vm->region_slice);
	free(vm->slice_regions);
	free(vm->slice_cnt);
	free(vm->node_cnt);
	free(vm->slice_owner);
	free(vm->cell_of_vcpu);
	free(vm->binds);
	vm->region_node = NULL;
}

/* Which slice each vCPU touches now: fixed, rotating (phased) or reshuffled (adverse). */
void
sim_vm_update_slices(struct sim *sim, struct sim_vm *vm)
{
	const struct scn_vm *svm = vm->scn;
	int n = vm->nr_vcpus;

	if (svm->workload == SCN_WORKLOAD_SHARED) {
		for (int v = 0; v < n; v++)
			vm->vcpus[v].slice = 0;
		return;
	}
	if (svm->workload == SCN_WORKLOAD_CELLS) {
		for (int v = 0; v < n; v++)
			vm->vcpus[v].slice = vm->cell_of_vcpu[v];
		return;
	}
	for (int v = 0; v < n; v++)
		vm->vcpus[v].slice = v;
	if (svm->workload == SCN_WORKLOAD_PHASED) {
		for (int v = 0; v < n; v++)
			vm->vcpus[v].slice = (v + vm->phase) % n;
	} else if (svm->workload == SCN_WORKLOAD_ADVERSE && vm->phase > 0) {
		/* Fisher-Yates from the simulator's own stream: ground truth, never exposed. */
		for (int v = n - 1; v > 0; v--) {
			int j = (int)util_rng_below(&sim->rng, (uint32_t)v + 1);
			int t = vm->vcpus[v].slice;

			vm->vcpus[v].slice = vm->vcpus[j].slice;
			vm->vcpus[j].slice = t;
		}
	}
	for (int v = 0; v < n; v++)
		vm->slice_owner[vm->vcpus[v].slice] = v;
}

static void
sim_region_set_node(struct sim *sim, struct sim_vm *vm, uint32_t r, int node)
{
	int old = vm->region_node[r];
	size_t s = (size_t)vm->region_slice[r] * (size_t)sim->nr_nodes;

	if (old != SIM_NO_NODE) {
		vm->slice_cnt[s + (size_t)old]--;
		vm->node_cnt[old]--;
		sim->node_used_mib[old] -= SIM_REGION_MIB;
		vm->allocated--;
	}
	if (node != SIM_NO_NODE) {
		vm->slice_cnt[s + (size_t)node]++;
		vm->node_cnt[node]++;
		sim->node_used_mib[node] += SIM_REGION_MIB;
		vm->allocated++;
		if (sim->node_used_mib[node] > sim->topo->nodes[node].mem_mib)
			sim->node_overfill++;
	}
	vm->region_node[r] = (uint8_t)node;
}

static bool
sim_node_has_room(const struct sim *sim, int node, uint64_t keep_free_mib)
{
	uint64_t total = sim->topo->nodes[node].mem_mib;

	return sim->node_used_mib[node] + SIM_REGION_MIB + keep_free_mib <= total;
}

/* Fill order: nodes in mask nearest to pref first, then the others nearest first. */
static int
sim_alloc_order(const struct sim *sim, int pref, uint64_t mask, int *order)
{
	int n = 0;

	for (int pass = 0; pass < 2; pass++) {
		int start = n;

		for (int i = 0; i < sim->nr_nodes; i++)
			if (nodemask_test(mask, i) == (pass == 0))
				order[n++] = i;
		/* Insertion sort by distance from pref, stable so ties keep the lower index. */
		for (int i = start + 1; i < n; i++) {
			int x = order[i], j = i;
			int dx = topology_distance(sim->topo, pref, x);

			while (j > start && topology_distance(sim->topo, pref, order[j - 1]) > dx) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = x;
		}
	}
	return n;
}

static uint64_t
sim_region_bind(const struct sim_vm *vm, uint32_t r)
{
	/* Later binds override earlier ones for the same range, as repeated mbind() does. */
	for (int i = vm->nr_binds - 1; i >= 0; i--)
		if (r >= vm->binds[i].first_region && r < vm->binds[i].end_region)
			return vm->binds[i].nodes;
	return NODEMASK_ALL;
}

/* The guest zeroes all its RAM at boot: allocate every region now. */
void
sim_vm_first_touch(struct sim *sim, struct sim_vm *vm)
{
	int order[UTIL_MAX_NODES], n = 0;
	uint64_t cur_mask = 0;
	int cur_pref = -1;

	for (uint32_t r = 0; r < vm->nr_regions; r++) {
		uint64_t mask = sim_region_bind(vm, r);
		int pref = vm->scn->first_touch_node;
		int placed = -1;

		if (pref < 0 || !nodemask_test(mask, pref))
			pref = vm->vcpus[0].node;
		if (mask != cur_mask || pref != cur_pref) {
			n = sim_alloc_order(sim, pref, mask, order);
			cur_mask = mask;
			cur_pref = pref;
		}
		for (int i = 0; i < n && placed < 0; i++)
			if (sim_node_has_room(sim, order[i], SIM_MIN_FREE_MIB))
				placed = order[i];
		if (placed < 0) {
			sim->oom++;
			continue;
		}
		sim_region_set_node(sim, vm, r, placed);
	}
}

void
sim_vm_release(struct sim *sim, struct sim_vm *vm)
{
	for (uint32_t r = 0; r < vm->nr_regions; r++)
		if (vm->region_node[r] != SIM_NO_NODE)
			sim_region_set_node(sim, vm, r, SIM_NO_NODE);
}

void
sim_move_enqueue(struct sim *sim, int vm_idx, const struct plan_mem_move *mv)
{
	struct sim_vm *vm = &sim->vms[vm_idx];
	struct sim_move *m;
	uint64_t first = mv->start_mib / SIM_REGION_MIB;
	uint64_t end =
	    mv->len_mib ? (mv->start_mib + mv->len_mib) / SIM_REGION_MIB : vm->nr_regions;

	if (mv->from_node < 0 || mv->from_node >= sim->nr_nodes || mv->to_node < 0 ||
	    mv->to_node >= sim->nr_nodes || mv->from_node == mv->to_node || mv->mib == 0)
		return;
	if (end > vm->nr_regions)
		end = vm->nr_regions;
	if (first >= end)
		return;
	util_array_reserve((void **)&sim->moves, &sim->cap_moves, sim->nr_moves + 1, sizeof(*m));
	m = &sim->moves[sim->nr_moves++];
	m->vm = vm_idx;
	m->first_region = m->cursor = (uint32_t)first;
	m->end_region = (uint32_t)end;
	m->from = mv->from_node;
	m->to = mv->to_node;
	m->left_mib = mv->mib;
}

/*
 * Move region r to node to.  The kernel's own migrate-on-fault beside a balancer is counted
 * apart: the balancer's rate limit does not pace it (sec_migrated_mib is the balancer's).
 */
static void
sim_region_migrate(struct sim *sim, struct sim_vm *vm, uint32_t r, int to, bool kernel_beside)
{
	int from = vm->region_node[r];

	sim_region_set_node(sim, vm, r, to);
	sim->node_traffic_mib[from] += SIM_REGION_MIB;
	sim->node_traffic_mib[to] += SIM_REGION_MIB;
	sim->migrated_mib += SIM_REGION_MIB;
	if (kernel_beside) {
		sim->kernel_migrated_mib += SIM_REGION_MIB;
		vm->audit_kernel_migrated_mib += SIM_REGION_MIB;
	} else {
		sim->sec_migrated_mib += SIM_REGION_MIB;
		vm->audit_migrated_mib += SIM_REGION_MIB;
		/* for max_dest_fill, taken at the tick's end */
		sim->dest_nodes_tick |= (uint64_t)1 << to;
	}
}

/* Work on one queued move; returns the budget left. */
static double
sim_move_work(struct sim *sim, struct sim_move *m, double budget_mib)
{
	struct sim_vm *vm = &sim->vms[m->vm];

	while (m->left_mib > 0 && budget_mib >= SIM_REGION_MIB) {
		while (m->cursor < m->end_region && vm->region_node[m->cursor] != m->from)
			m->cursor++;
		if (m->cursor >= m->end_region) {
			m->left_mib = 0; /* nothing more on from_node: drop the rest */
			break;
		}
		if (!sim_node_has_room(sim, m->to, SIM_MIN_FREE_MIB)) {
			/* move_pages() answers ENOMEM for the rest of the batch. */
			vm->mig_failed_mib += m->left_mib;
			sim->failed_mib += (double)m->left_mib;
			m->left_mib = 0;
			break;
		}
		sim_region_migrate(sim, vm, m->cursor, m->to, false);
		vm->mig_done_mib += SIM_REGION_MIB;
		/* the Linux host's residency figure learns of its own moves so (residency.h) */
		linux_resid_moved(&vm->resid,
		                  sim_resid_move_cell(vm, m->first_region, m->end_region), m->from,
		                  m->to, (uint64_t)SIM_REGION_MIB << 20);
		m->left_mib = m->left_mib > SIM_REGION_MIB ? m->left_mib - SIM_REGION_MIB : 0;
		budget_mib -= SIM_REGION_MIB;
	}
	return budget_mib;
}

void
sim_migrate_tick(struct sim *sim)
{
	double budget = SIM_MIGRATE_MIB_S * SIM_TICK_S;
	size_t i = 0, keep = 0;

	for (i = 0; i < sim->nr_moves && budget >= SIM_REGION_MIB; i++) {
		struct sim_move *m = &sim->moves[i];

		if (sim->vms[m->vm].running)
			budget = sim_move_work(sim, m, budget);
	}
	for (i = 0; i < sim->nr_moves; i++)
		if (sim->moves[i].left_mib > 0 && sim->vms[sim->moves[i].vm].running)
			sim->moves[keep++] = sim->moves[i];
	sim->nr_moves = keep;
}

/*
 * Access distribution of one vCPU over nodes (ground truth): SIM_LOCAL_SHARE within its
 * slice, the rest over all the VM's memory; shared workloads: all uniform.  p has nr_nodes
 * entries summing to 1 (all 0 while nothing is allocated).
 */
void
sim_vm_access_dist(const struct sim *sim, const struct sim_vm *vm, int vcpu, double *p)
{
	int nn = sim->nr_nodes;
	int s = vm->vcpus[vcpu].slice;
	const uint32_t *sc = &vm->slice_cnt[(size_t)s * (size_t)nn];
	uint32_t slice_alloc = 0;
	double own = sim_workload_sliced(vm->scn) ? SIM_LOCAL_SHARE : 0.0;

	for (int n = 0; n < nn; n++)
		slice_alloc += sc[n];
	if (slice_alloc == 0)
		own = 0.0;
	for (int n = 0; n < nn; n++) {
		double all = vm->allocated ? (double)vm->node_cnt[n] / vm->allocated : 0.0;
		double mine = slice_alloc ? (double)sc[n] / slice_alloc : 0.0;

		p[n] = own * mine + (1.0 - own) * all;
	}
}

/* Who touches region r first after it was unmapped: drawn by access rate (ground truth). */
static int
sim_pick_toucher(struct sim *sim, struct sim_vm *vm, uint32_t r)
{
	int s = vm->region_slice[r];
	double w_all = 0, w_own = 0, x;

	for (int v = 0; v < vm->nr_vcpus; v++) {
		w_all += vm->vcpus[v].rate;
		if (vm->vcpus[v].slice == s)
			w_own += vm->vcpus[v].rate;
	}
	if (w_all <= 0)
		return -1;
	if (sim_workload_sliced(vm->scn) && vm->slice_regions[s] > 0) {
		double a = w_own * SIM_LOCAL_SHARE / vm->slice_regions[s];
		double b = w_all * (1.0 - SIM_LOCAL_SHARE) / vm->nr_regions;

		if (util_rng_double(&sim->rng) * (a + b) < a) {
			x = util_rng_double(&sim->rng) * w_own;
			for (int v = 0; v < vm->nr_vcpus; v++) {
				if (vm->vcpus[v].slice != s)
					continue;
				x -= vm->vcpus[v].rate;
				if (x < 0)
					return v;
			}
		}
	}
	x = util_rng_double(&sim->rng) * w_all;
	for (int v = 0; v < vm->nr_vcpus; v++) {
		x -= vm->vcpus[v].rate;
		if (x < 0)
			return v;
	}
	return vm->nr_vcpus - 1;
}

/*
 * End of a scan pass.  Live counters (ideal profile) are halved.  Counters folded per pass
 * (HOST_CAP_FAULTS_PER_PASS) do what task_numa_placement() does when the mm's scan sequence
 * moved on: the shown count becomes half the old one plus the faults taken since, and only
 * then do readers of /proc/PID/task/TID/sched see the new faults.
 */
static void
sim_vm_decay_faults(struct sim *sim, struct sim_vm *vm)
{
	bool fold = (sim->caps & HOST_CAP_FAULTS_PER_PASS) != 0;

	for (int v = 0; v < vm->nr_vcpus; v++) {
		struct sim_vcpu *vc = &vm->vcpus[v];

		for (int i = 0; i < 2 * sim->nr_nodes; i++) {
			if (!fold) {
				vc->faults[i] /= 2;
				continue;
			}
			vc->faults[i] = vc->faults[i] - vc->faults[i] / 2 + vc->faults_buf[i];
			vc->faults_buf[i] = 0;
		}
	}
}

/*
 * The kernel's migrate-on-fault with its two-fault filter: the autonuma model's, or the
 * kernel's balancing beside another balancer (its feedback then goes to the kernel only).
 */
static void
sim_kernel_numa_fault(struct sim *sim, struct sim_vm *vm, uint32_t r, int vnode)
{
	bool beside = sim->kernel != NULL;

	if (vm->region_node[r] == vnode || vm->region_last_node[r] != vnode)
		return;
	/*
	 * Memory bound to a node set (libvirt's numatune: the cgroup's cpuset.mems) can only be
	 * migrated within it: the kernel allocates the new page under the same constraint.
	 */
	if (!nodemask_test(sim_region_bind(vm, r), vnode))
		return;
	if (!sim_node_has_room(sim, vnode, SIM_KERNEL_WMARK_HIGH_MIB)) {
		/* The kernel counts a failed NUMA migration and scans that task slower. */
		if (beside) {
			vm->kmig_failed_mib += SIM_REGION_MIB;
		} else {
			vm->mig_failed_mib += SIM_REGION_MIB;
			sim->failed_mib += SIM_REGION_MIB;
		}
		return;
	}
	sim_region_migrate(sim, vm, r, vnode, beside);
	if (beside)
		vm->kmig_done_mib += SIM_REGION_MIB;
	else
		vm->mig_done_mib += SIM_REGION_MIB;
}

/* One fault on region r: count it, charge its cost, maybe migrate (kernel model). */
static void
sim_fault_one(struct sim *sim, struct sim_vm *vm, uint32_t r, bool kernel_numa)
{
	int v = sim_pick_toucher(sim, vm, r);
	struct sim_vcpu *vc;
	int node = vm->region_node[r];
	bool priv;

	if (v < 0)
		return;
	vc = &vm->vcpus[v];
	priv = vm->region_last_vcpu[r] == (uint16_t)(v + 1);
	if (sim->caps & HOST_CAP_FAULTS_PER_PASS)
		vc->faults_buf[(priv ? 0 : sim->nr_nodes) + node] += 512;
	else
		vc->faults[(priv ? 0 : sim->nr_nodes) + node] += 512;
	vc->cost_acc_s += SIM_FAULT_COST_US * 1e-6;
	sim->sampling_cpu_s += SIM_FAULT_COST_US * 1e-6;
	if (kernel_numa)
		sim_kernel_numa_fault(sim, vm, r, vc->node);
	vm->region_last_vcpu[r] = (uint16_t)(v + 1);
	vm->region_last_node[r] = (uint8_t)vc->node;
}

/*
 * The NUMA scanner: unmap scan_mib_s of the VM's memory per second, walking it linearly; each
 * unmapped region faults on its next touch.  A completed pass halves the counters.
 */
void
sim_sample_tick(struct sim *sim, struct sim_vm *vm)
{
	bool kernel_numa = sim->kernel_numa;
	double scan_mib = vm->scan_mib_s * SIM_TICK_S;
	double cost_s = scan_mib * SIM_SCAN_COST_US_PER_MIB * 1e-6;
	uint32_t nr;

	if (scan_mib <= 0 || vm->nr_regions == 0)
		return;
	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpus[v].cost_acc_s += cost_s / vm->nr_vcpus;
	sim->sampling_cpu_s += cost_s;
	vm->scan_carry += scan_mib / SIM_REGION_MIB;
	nr = (uint32_t)vm->scan_carry;
	vm->scan_carry -= nr;
	while (nr-- > 0) {
		uint32_t r = vm->scan_cursor;

		if (vm->region_node[r] != SIM_NO_NODE)
			sim_fault_one(sim, vm, r, kernel_numa);
		if (++vm->scan_cursor >= vm->nr_regions) {
			vm->scan_cursor = 0;
			sim_vm_decay_faults(sim, vm);
		}
	}
}

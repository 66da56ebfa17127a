/*
 * sim_resid.c - where a VM's RAM sits, as a balancer with BALANCER_HOST_RESIDENCY (vnumad)
 * sees it: what the profile's real host would measure, through the Linux host's own source
 * choice and estimator (linux_resid_update, host/linux/residency.h), fed from the model
 * (docs/simulator.md "Host profiles"):
 *
 *   ideal    exact and fresh every round, as the model knows it;
 *   libvirt  a numa_maps walk (exact) when the Linux host would walk one (a VM seen for the
 *            first time; every LINUX_RESIDENCY_WALK_S; every LINUX_RESIDENCY_WALK_MOVING_S
 *            while the balancer's moves are queued or done since; within the host-wide walk
 *            budget), else the domain's cgroup, which holds its QEMU alone: guest RAM plus
 *            SIM_QEMU_OTHER_MIB of QEMU's own memory on one node, calibrated at the walk;
 *   linux    the walks likewise, else (QEMU processes taken as sharing a cgroup, the
 *            conservative case) a sample of LINUX_RESIDENCY_SAMPLE_PAGES pages every
 *            LINUX_RESIDENCY_SAMPLE_S with its Wilson bound, else the last figure moved by the
 *            balancer's own completed moves (sim_mem.c calls linux_resid_moved), with its age.
 *
 * The sample is K of the VM's 2-MiB regions drawn uniformly with replacement, a multinomial
 * over its per-node region counts (an unallocated region reads absent); a VM of at most K
 * regions is looked at whole, as the Linux sampler does.  The real sampler's stratified draw
 * has at most this variance, so the simulated figure is never better than a real one.  Draws
 * come from the VM's own PRNG, seeded by the scenario's seed and the VM's index: a run replays
 * exactly, and the model's own stream (sim->rng) is never touched.
 *
 * Not modelled: pages the kernel's NUMA scanner left protected (the model's scanner faults a
 * region at once), which a real sample reads as of unknown node and refuses when over
 * LINUX_RESIDENCY_SAMPLE_UNKNOWN_PERMILLE; guest RAM on hugetlbfs.  The model's node ids are
 * its node indexes.
 */
#include <string.h>

#include "host/sim/sim_internal.h"

/*
 * QEMU's own memory beside guest RAM in a libvirt domain's cgroup, MiB: its heap, the guest's
 * video RAM and ROMs, vhost rings.  Default 128, an assumed figure for a KVM guest (not
 * measured here).  It stays where it is in the model, so the cgroup figure is exact, and its
 * bound is this (the non-guest part at the walk, residency.h): what a real host states.
 */
#define SIM_QEMU_OTHER_MIB 128
/*
 * Cost of one numa_maps walk, ms per GiB of guest RAM: 0.08, as measured with transparent huge
 * pages (docs/linux-host.md), the model's 2-MiB regions.  It is charged to the walk budget.
 */
#define SIM_RESID_WALK_MS_PER_GIB 0.08
/* PCG stream of VM i's sample draws: this plus i ("resid"). */
#define SIM_RESID_STREAM 0x7265736964ULL

#define SIM_REGION_BYTES ((uint64_t)SIM_REGION_MIB << 20)

struct sim_resid_ctx {
	const struct sim *sim;
	struct sim_vm *vm;
};

void
sim_resid_vm_init(struct sim *sim, int idx)
{
	struct sim_vm *vm = &sim->vms[idx];

	memset(&vm->resid, 0, sizeof(vm->resid));
	util_rng_seed(&vm->resid_rng, sim->scn->seed, SIM_RESID_STREAM + (uint64_t)idx);
	vm->qemu_node = -1;
}

void
sim_resid_round(struct sim *sim)
{
	linux_resid_budget_refill(&sim->resid_budget, sim->now_s);
}

/* A region's status as the sampler reads it: its node, or absent. */
static int
sim_resid_region_status(const struct sim_vm *vm, uint32_t r)
{
	return vm->region_node[r] == SIM_NO_NODE ? LINUX_RESID_PAGE_ABSENT : vm->region_node[r];
}

/*
 * linux_resid_draw_fn: k regions with replacement, or each region once when k covers them;
 * region r's address is its guest RAM offset (the RAM is one range from 0).
 */
static int
sim_resid_draw(void *ctx, int pid, int k, int *status, uint64_t *addrs)
{
	struct sim_resid_ctx *c = ctx;
	struct sim_vm *vm = c->vm;

	(void)pid;
	if ((uint32_t)k >= vm->nr_regions) {
		for (uint32_t r = 0; r < vm->nr_regions && r < (uint32_t)k; r++) {
			status[r] = sim_resid_region_status(vm, r);
			addrs[r] = (uint64_t)r * SIM_REGION_BYTES;
		}
		return 0;
	}
	for (int i = 0; i < k; i++) {
		uint32_t r = (uint32_t)util_rng_below(&vm->resid_rng, vm->nr_regions);

		status[i] = sim_resid_region_status(vm, r);
		addrs[i] = (uint64_t)r * SIM_REGION_BYTES;
	}
	return 0;
}

/* Whether the balancer has moves of VM idx queued (the Linux host's jobs). */
static bool
sim_resid_moving(const struct sim *sim, int idx)
{
	for (size_t i = 0; i < sim->nr_moves; i++)
		if (sim->moves[i].vm == idx && sim->moves[i].left_mib > 0)
			return true;
	return false;
}

/* The node holding most of the VM's RAM (ties: lower): where QEMU's own memory went. */
static int
sim_resid_main_node(const struct sim *sim, const struct sim_vm *vm)
{
	int best = 0;

	for (int n = 1; n < sim->nr_nodes; n++)
		if (vm->node_cnt[n] > vm->node_cnt[best])
			best = n;
	return best;
}

/*
 * What the Linux host expects the first walk of vm to cost, ms (linux_host.c): in its own
 * cgroup (libvirt) the cgroup tells THP from 4 KiB pages, and the model's RAM is THP; without
 * one every located page counts as 4 KiB.
 */
static double
sim_resid_first_walk_ms(const struct sim *sim, const struct sim_vm *vm)
{
	uint64_t kib = (uint64_t)vm->nr_regions * SIM_REGION_MIB * 1024;

	return sim->profile == SIM_PROFILE_LIBVIRT ? linux_resid_walk_predict_ms(0, kib)
	                                           : linux_resid_walk_predict_ms(kib, 0);
}

/* The VM's guest cells as ranges of guest RAM offsets (as sim.c gives them), into cells. */
static int
sim_resid_cells(const struct sim_vm *vm, struct linux_ram_range *cells)
{
	const struct scn_vm *scv = vm->scn;
	double acc_gib = 0;

	if (scv->nr_cells < 2 || scv->nr_cells > LINUX_RESID_MAX_CELLS)
		return 0;
	for (int c = 0; c < scv->nr_cells; c++) {
		uint64_t start = (uint64_t)(acc_gib * 1024.0) << 20;

		acc_gib += scv->cells[c].memory_gib;
		cells[c] =
		    (struct linux_ram_range){start, ((uint64_t)(acc_gib * 1024.0) << 20) - start};
	}
	return scv->nr_cells;
}

int
sim_resid_move_cell(const struct sim_vm *vm, uint32_t first, uint32_t end)
{
	struct linux_ram_range cells[LINUX_RESID_MAX_CELLS];
	int nr = sim_resid_cells(vm, cells);

	for (int c = 0; c < nr; c++)
		if (cells[c].start / SIM_REGION_BYTES == first &&
		    (cells[c].start + cells[c].len) / SIM_REGION_BYTES == end)
			return c;
	return -1;
}

/* This round's figure of VM idx from the Linux host's estimator, into svm. */
static void
sim_resid_sense(struct sim *sim, int idx, struct snap_vm *svm)
{
	struct sim_vm *vm = &sim->vms[idx];
	uint64_t walk_kib[LINUX_RESID_MAX_NODES] = {0}, cg_kib[LINUX_RESID_MAX_NODES] = {0};
	struct linux_ram_range ram = {.start = 0,
	                              .len = (uint64_t)vm->nr_regions * SIM_REGION_BYTES};
	struct sim_resid_ctx ctx = {.sim = sim, .vm = vm};
	int nr = sim->nr_nodes < LINUX_RESID_MAX_NODES ? sim->nr_nodes : LINUX_RESID_MAX_NODES;
	struct linux_resid_input in = {
	    .pid = vm->id,
	    .now_s = sim->now_s,
	    .budget = &sim->resid_budget,
	    .walk_kib = walk_kib,
	    .walk_nr_nodes = nr,
	    .walk_ms = (double)ram.len / (double)(1ull << 30) * SIM_RESID_WALK_MS_PER_GIB,
	    .ram = &ram,
	    .nr_ram = 1,
	    .page_bytes = SIM_REGION_BYTES,
	    .sample_pages = LINUX_RESIDENCY_SAMPLE_PAGES,
	    .query_ctx = &ctx,
	    .draw = sim_resid_draw,
	    .cgroup_given = true,
	    .cgroup_kib = sim->profile == SIM_PROFILE_LIBVIRT ? cg_kib : NULL,
	    .cgroup_nr_nodes = nr,
	    /* the real host reads this from its vCPU threads' sched files (numa_pages_migrated) */
	    .kernel_moved_kib = vm->audit_kernel_migrated_mib * 1024,
	};
	const struct linux_resid *r = &vm->resid;
	struct linux_ram_range cells[LINUX_RESID_MAX_CELLS];

	in.nr_cells = sim_resid_cells(vm, cells);
	in.cells = cells;
	for (int n = 0; n < nr; n++)
		walk_kib[n] = cg_kib[n] = (uint64_t)vm->node_cnt[n] * SIM_REGION_MIB * 1024;
	if (vm->qemu_node < 0)
		vm->qemu_node = sim_resid_main_node(sim, vm);
	if (vm->qemu_node < nr)
		cg_kib[vm->qemu_node] += (uint64_t)SIM_QEMU_OTHER_MIB * 1024;
	if (!vm->resid.walked)
		(void)linux_resid_first_walk_skip(&vm->resid, sim->now_s,
		                                  sim_resid_first_walk_ms(sim, vm), true);
	in.walked = linux_resid_walk_due(&vm->resid, &sim->resid_budget, sim->now_s,
	                                 sim_resid_moving(sim, idx));
	linux_resid_update(&vm->resid, &in);
	for (int n = 0; n < sim->nr_nodes; n++)
		svm->resident_mib[n] = n < r->fig.nr_nodes ? r->fig.kib[n] / 1024 : 0;
	svm->resident_err_mib = (r->fig.err_kib + 1023) / 1024;
	svm->resident_age_s = sim->now_s > r->measured_s ? sim->now_s - r->measured_s : 0;
	svm->resident_source = linux_resid_source_name(r->source);
}

void
sim_resid_cells_fill(struct sim *sim, int idx, struct snap_vm *svm, bool sensed)
{
	const struct linux_resid_cells *rc = &sim->vms[idx].resid.cells;

	if (!sensed || !sim->sense_resid || rc->nr == 0 || rc->nr != svm->nr_cells)
		return;
	for (int c = 0; c < svm->nr_cells; c++) {
		snapshot_cell_resident_alloc(&svm->cells[c], sim->nr_nodes);
		for (int n = 0; n < sim->nr_nodes && n < LINUX_RESID_MAX_NODES; n++) {
			svm->cells[c].resident_mib[n] = rc->kib[c][n] / 1024;
			svm->cells[c].resident_sure_mib[n] = rc->sure_kib[c][n] / 1024;
		}
	}
}

void
sim_resid_fill(struct sim *sim, int idx, struct snap_vm *svm, bool sensed)
{
	const struct sim_vm *vm = &sim->vms[idx];

	if (sensed && sim->sense_resid) {
		sim_resid_sense(sim, idx, svm);
		return;
	}
	for (int n = 0; n < sim->nr_nodes; n++)
		svm->resident_mib[n] = (uint64_t)vm->node_cnt[n] * SIM_REGION_MIB;
	svm->resident_age_s = 0;
	svm->resident_err_mib = 0;
	svm->resident_source = NULL;
}

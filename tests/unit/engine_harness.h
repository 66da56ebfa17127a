/*
 * engine_harness.h - a tiny host for driving vnumad's policy engine in unit tests.
 *
 * A "world" holds nodes and VMs as a host would see them; every round it builds a fresh
 * snapshot from the world, calls the engine through vnumad_balancer_ops, and then applies the
 * plan the way a host does:
 *   pins     a one-node mask puts the vCPU on that node; a wider mask keeps it where it runs
 *            if that is inside the mask, else puts it on the mask's first node; allowed = mask
 *   moves    shift resident memory (at most what sits on the source node); the next snapshot
 *            reports it as mig_done_mib (or as mig_failed_mib when the test says moves fail)
 *   binds    an arriving VM first-touches each bound range of its RAM on the range's nodes
 *            (evenly over several); what no bind covers, on the node of its vCPU 0
 *   clock    now_s advances by plan.next_call_s; a VM present this round gets uptime > 0
 * CPU use is each vCPU's demand (want) scaled down on a node with more demand than CPUs.
 * Faults are either set by the test (hw_vcpu.faults, a private level per node) or follow the
 * VM's memory: each vCPU's level is HW_FAULT_LEVEL pages split like the VM's resident memory.
 *
 * It also makes seeded random worlds (nodes, VMs of every mode and policy, arrivals and
 * departures, load changes, refused migrations, policy edits) and checks one round's plan
 * against the snapshot it was made from (hw_check_*: NULL when the plan keeps the rule, else
 * what is wrong).
 *
 * Included by test_engine.c and test_engine_wide.c: everything here is static.
 */
#ifndef VNUMAD_TESTS_ENGINE_HARNESS_H
#define VNUMAD_TESTS_ENGINE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"
#include "policy/model.h"

#define HW_GIB       1024ull
#define HW_MAX_NODES 8
#define HW_MAX_VMS   16
#define HW_MAX_VCPUS 16
/* Fault level of one vCPU when faults follow memory (pages): well above the engine's minimum. */
#define HW_FAULT_LEVEL 32768

enum hw_faults {
	HW_FAULTS_SET = 0, /* the test sets hw_vcpu.faults */
	HW_FAULTS_MEMORY,  /* each vCPU faults where the VM's memory is */
};

struct hw_vcpu {
	int node;
	uint64_t allowed;
	double want;                   /* CPU demand, 0..1 */
	uint64_t faults[HW_MAX_NODES]; /* private fault level per node (HW_FAULTS_SET) */
};

struct hw_vm {
	int id;
	char name[64];
	double start_s;  /* present from this time on */
	double stop_s;   /* gone from this time on; 0 = never */
	double uptime_s; /* 0 until its first round, then grows with the clock */
	int nr_vcpus;
	uint64_t mem_mib;
	uint64_t resident[HW_MAX_NODES];
	uint64_t resident_err_mib; /* the snapshot's bound on each node's error (0: exact) */
	int nr_cells;
	struct snap_cell cells[HW_MAX_NODES]; /* ranges only: residency is cell_resident */
	int vcpu_cell[HW_MAX_VCPUS];
	/*
	 * The host measures each cell's residency (struct snap_cell.resident_mib), exact: MiB
	 * per cell and node, kept by hw_apply_move for moves of a cell's range.
	 */
	bool cells_measured;
	uint64_t cell_resident[HW_MAX_NODES][HW_MAX_NODES];
	struct vm_policy policy;
	enum hw_faults faults;
	struct hw_vcpu vcpus[HW_MAX_VCPUS];
	bool moves_fail;     /* the host refuses this VM's moves */
	uint64_t pinned_mib; /* the snapshot's snap_vm.pinned_mib (VmPin) */
	uint64_t done_mib;   /* reported in the next snapshot */
	uint64_t failed_mib; /* reported in the next snapshot */
};

struct hw {
	int nr_nodes, cpus_per_node;
	uint64_t node_mib;
	uint64_t other_mib[HW_MAX_NODES]; /* memory used by others than the VMs */
	int distance[HW_MAX_NODES * HW_MAX_NODES];
	double now_s;
	int nr_vms;
	struct hw_vm vms[HW_MAX_VMS];
	int snap_vm[HW_MAX_VMS]; /* this round: world index of snapshot VM i */
	void *engine;
	struct snapshot *snap; /* this round's snapshot (valid until the next hw_decide) */
	struct plan plan;      /* this round's plan */
	/*
	 * The host's HOST_CAP_* in every snapshot: every lever (HOST_CAPS_LEVERS) unless a test
	 * sets what a real host has (HW_CAPS_LINUX).
	 */
	unsigned caps;
};

/* What `vnumad --host linux` has (host/linux/linux_host.c lh_caps, balancing on). */
#define HW_CAPS_LINUX                                                                              \
	(HOST_CAP_PIN | HOST_CAP_MOVE_PAGES | HOST_CAP_KERNEL_BALANCING | HOST_CAP_FAULTS_PER_PASS)

/* A host of nr_nodes nodes of cpus CPUs and node_mib MiB, distances 10/21, no VMs. */
static struct hw *
hw_new(int nr_nodes, int cpus, uint64_t node_mib)
{
	struct hw *hw = xcalloc(1, sizeof(*hw));

	hw->nr_nodes = nr_nodes;
	hw->caps = HOST_CAPS_LEVERS;
	hw->cpus_per_node = cpus;
	hw->node_mib = node_mib;
	for (int n = 0; n < nr_nodes; n++)
		for (int m = 0; m < nr_nodes; m++)
			hw->distance[n * nr_nodes + m] = n == m ? 10 : 21;
	hw->now_s = 100;
	hw->engine = vnumad_balancer_ops.create(&(struct balancer_args){.seed = 1});
	plan_init(&hw->plan);
	return hw;
}

static void
hw_free(struct hw *hw)
{
	if (hw == NULL)
		return;
	vnumad_balancer_ops.destroy(hw->engine);
	snapshot_free(hw->snap);
	plan_free(&hw->plan);
	free(hw);
}

/*
 * Add a VM (id 100 + its index) with all vCPUs on `node`, busy, unpinned.  A running VM
 * (uptime_s > 0) has all its memory on `node`; an arriving one (uptime_s == 0) has none yet.
 */
static struct hw_vm *
hw_vm_add(struct hw *hw, int nr_vcpus, uint64_t mem_mib, int node, double uptime_s)
{
	struct hw_vm *vm = &hw->vms[hw->nr_vms];

	memset(vm, 0, sizeof(*vm));
	vm->id = 100 + hw->nr_vms;
	snprintf(vm->name, sizeof(vm->name), "vm%d", vm->id);
	vm->start_s = hw->now_s;
	vm->uptime_s = uptime_s;
	vm->nr_vcpus = nr_vcpus;
	vm->mem_mib = mem_mib;
	if (uptime_s > 0)
		vm->resident[node] = mem_mib;
	vm_policy_init_default(&vm->policy);
	for (int v = 0; v < nr_vcpus; v++) {
		vm->vcpus[v].node = node;
		vm->vcpus[v].allowed = NODEMASK_ALL;
		vm->vcpus[v].want = 1.0;
	}
	hw->nr_vms++;
	return vm;
}

/* Give a VM nr_cells cells of equal size; vCPU v belongs to cell v * nr_cells / nr_vcpus. */
static void
hw_vm_cells(struct hw_vm *vm, int nr_cells)
{
	uint64_t per = vm->mem_mib / (uint64_t)nr_cells;

	vm->nr_cells = nr_cells;
	for (int c = 0; c < nr_cells; c++) {
		vm->cells[c].mem_start_mib = per * (uint64_t)c;
		vm->cells[c].mem_mib = per;
	}
	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpu_cell[v] = v * nr_cells / vm->nr_vcpus;
}

/* A VM (as hw_vm_add) with nr_cells equal guest cells, placed by them (placement='cells'). */
static struct hw_vm *
hw_vm_add_cells(struct hw *hw, int nr_vcpus, uint64_t mem_mib, int node, double uptime_s,
                int nr_cells)
{
	struct hw_vm *vm = hw_vm_add(hw, nr_vcpus, mem_mib, node, uptime_s);

	hw_vm_cells(vm, nr_cells);
	vm->policy.placement = VM_POLICY_PLACEMENT_CELLS;
	return vm;
}

static struct hw_vm *
hw_vm_by_id(struct hw *hw, int id)
{
	for (int i = 0; i < hw->nr_vms; i++)
		if (hw->vms[i].id == id)
			return &hw->vms[i];
	return NULL;
}

static bool
hw_vm_present(const struct hw *hw, const struct hw_vm *vm)
{
	return vm->start_s <= hw->now_s + 1e-9 && (vm->stop_s == 0 || hw->now_s < vm->stop_s);
}

static uint64_t
hw_node_used(const struct hw *hw, int n)
{
	uint64_t used = hw->other_mib[n];

	for (int i = 0; i < hw->nr_vms; i++)
		if (hw_vm_present(hw, &hw->vms[i]))
			used += hw->vms[i].resident[n];
	return used;
}

static uint64_t
hw_node_free(const struct hw *hw, int n)
{
	uint64_t used = hw_node_used(hw, n);

	return used < hw->node_mib ? hw->node_mib - used : 0;
}

/* Node demand: the sum of the wants of the present vCPUs running there. */
static void
hw_node_demand(const struct hw *hw, double *demand)
{
	for (int n = 0; n < hw->nr_nodes; n++)
		demand[n] = 0;
	for (int i = 0; i < hw->nr_vms; i++)
		if (hw_vm_present(hw, &hw->vms[i]))
			for (int v = 0; v < hw->vms[i].nr_vcpus; v++)
				demand[hw->vms[i].vcpus[v].node] += hw->vms[i].vcpus[v].want;
}

static void
hw_fill_vcpu(const struct hw *hw, const struct hw_vm *w, struct snap_vcpu *sv, int v,
             const double *demand, uint64_t *faults)
{
	const struct hw_vcpu *hv = &w->vcpus[v];
	uint64_t res = 0;
	double share =
	    demand[hv->node] > hw->cpus_per_node ? hw->cpus_per_node / demand[hv->node] : 1.0;

	sv->tid = w->id * 100 + v;
	sv->node = hv->node;
	sv->cpu = hv->node * hw->cpus_per_node + v % hw->cpus_per_node;
	sv->allowed_nodes = hv->allowed;
	sv->cpu_use = hv->want * share;
	for (int n = 0; n < hw->nr_nodes; n++)
		res += w->resident[n];
	for (int n = 0; n < hw->nr_nodes; n++) {
		if (w->faults == HW_FAULTS_SET)
			faults[n] = hv->faults[n];
		else
			faults[n] = res ? HW_FAULT_LEVEL * w->resident[n] / res : 0;
	}
}

static void
hw_fill_vm(struct hw *hw, struct hw_vm *w, struct snap_vm *vm, const double *demand)
{
	vm->id = w->id;
	memcpy(vm->name, w->name, sizeof(vm->name));
	vm->uptime_s = w->uptime_s;
	vm->mem_mib = w->mem_mib;
	for (int n = 0; n < hw->nr_nodes; n++)
		vm->resident_mib[n] = w->resident[n];
	vm->resident_err_mib = w->resident_err_mib;
	vm->pinned_mib = w->pinned_mib;
	vm->policy = w->policy;
	vm->mig_done_mib = w->done_mib;
	vm->mig_failed_mib = w->failed_mib;
	w->done_mib = w->failed_mib = 0;
	/* faults_private points into the snapshot's own (writable) fault_store */
	for (int v = 0; v < w->nr_vcpus; v++)
		hw_fill_vcpu(hw, w, &vm->vcpus[v], v, demand,
		             (uint64_t *)vm->vcpus[v].faults_private);
	if (w->nr_cells > 0) {
		snapshot_vm_set_cells(vm, w->nr_cells);
		memcpy(vm->cells, w->cells, sizeof(*vm->cells) * (size_t)w->nr_cells);
		memcpy(vm->vcpu_cell, w->vcpu_cell, sizeof(int) * (size_t)w->nr_vcpus);
		for (int c = 0; c < w->nr_cells; c++) {
			vm->cells[c].resident_mib = vm->cells[c].resident_sure_mib = NULL;
			if (!w->cells_measured)
				continue;
			snapshot_cell_resident_alloc(&vm->cells[c], hw->nr_nodes);
			for (int n = 0; n < hw->nr_nodes; n++)
				vm->cells[c].resident_mib[n] = vm->cells[c].resident_sure_mib[n] =
				    w->cell_resident[c][n];
		}
	}
}

/* Build this round's snapshot from the world. */
static void
hw_build(struct hw *hw)
{
	int vcpus[HW_MAX_VMS], nr = 0;
	double demand[HW_MAX_NODES];
	struct snapshot *snap;

	for (int i = 0; i < hw->nr_vms; i++)
		if (hw_vm_present(hw, &hw->vms[i])) {
			hw->snap_vm[nr] = i;
			vcpus[nr++] = hw->vms[i].nr_vcpus;
		}
	snapshot_free(hw->snap);
	snap = hw->snap = snapshot_new(hw->nr_nodes, hw->nr_nodes * hw->cpus_per_node, nr, vcpus);
	snap->now_s = hw->now_s;
	snap->caps = hw->caps;
	memcpy(snap->distance, hw->distance, sizeof(int) * (size_t)(hw->nr_nodes * hw->nr_nodes));
	for (int n = 0; n < hw->nr_nodes; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = hw->cpus_per_node;
		snap->nodes[n].mem_total_mib = hw->node_mib;
		snap->nodes[n].mem_free_mib = hw_node_free(hw, n);
	}
	for (int c = 0; c < snap->nr_cpus; c++)
		snap->cpu_node[c] = c / hw->cpus_per_node;
	hw_node_demand(hw, demand);
	for (int i = 0; i < nr; i++)
		hw_fill_vm(hw, &hw->vms[hw->snap_vm[i]], &snap->vms[i], demand);
}

/* Build the snapshot and run the engine on it; returns the plan. */
static const struct plan *
hw_decide(struct hw *hw)
{
	int rc;

	hw_build(hw);
	plan_reset(&hw->plan);
	rc = vnumad_balancer_ops.decide(hw->engine, hw->snap, &hw->plan);
	if (rc != 0) {
		fprintf(stderr, "decide failed at t=%.1f: %d\n", hw->now_s, rc);
		abort();
	}
	return &hw->plan;
}

static void
hw_apply_pin(struct hw *hw, const struct plan_pin *pin)
{
	struct hw_vm *vm = hw_vm_by_id(hw, pin->vm_id);
	struct hw_vcpu *hv;

	if (vm == NULL || pin->vcpu < 0 || pin->vcpu >= vm->nr_vcpus ||
	    pin->kind == PLAN_PIN_KERNEL_MOVE)
		return;
	hv = &vm->vcpus[pin->vcpu];
	hv->allowed = pin->nodes;
	if (!nodemask_test(pin->nodes, hv->node))
		hv->node = nodemask_first(pin->nodes);
}

static void
hw_apply_move(struct hw *hw, const struct plan_mem_move *mv)
{
	struct hw_vm *vm = hw_vm_by_id(hw, mv->vm_id);
	uint64_t mib;

	if (vm == NULL)
		return;
	mib = mv->mib < vm->resident[mv->from_node] ? mv->mib : vm->resident[mv->from_node];
	if (vm->moves_fail) {
		vm->failed_mib += mv->mib;
		return;
	}
	for (int c = 0; c < vm->nr_cells && vm->cells_measured; c++) {
		uint64_t *cr = vm->cell_resident[c];

		if (vm->cells[c].mem_start_mib != mv->start_mib ||
		    (mv->len_mib != 0 && vm->cells[c].mem_mib != mv->len_mib))
			continue;
		/* only the cell's own pages on the source node move (as the migrator does) */
		if (mib > cr[mv->from_node])
			mib = cr[mv->from_node];
		cr[mv->from_node] -= mib;
		cr[mv->to_node] += mib;
		break;
	}
	vm->resident[mv->from_node] -= mib;
	vm->resident[mv->to_node] += mib;
	vm->done_mib += mib;
}

/* Spread mib evenly over the nodes of mask (the remainder on the first). */
static void
hw_touch(struct hw_vm *vm, uint64_t mask, uint64_t mib)
{
	int w = nodemask_weight(mask);

	for (int n = 0; n < HW_MAX_NODES && w > 0; n++)
		if (nodemask_test(mask, n))
			vm->resident[n] += mib / (uint64_t)w;
	if (w > 0)
		vm->resident[nodemask_first(mask)] += mib % (uint64_t)w;
}

/* An arriving VM's first touch of its RAM, under this round's binds. */
static void
hw_first_touch(struct hw *hw, struct hw_vm *vm)
{
	uint64_t left = vm->mem_mib;

	if (vm->uptime_s > 0)
		return;
	for (int n = 0; n < hw->nr_nodes; n++)
		if (vm->resident[n] != 0)
			return;
	for (size_t i = 0; i < hw->plan.nr_binds; i++) {
		const struct plan_mem_bind *b = &hw->plan.binds[i];
		uint64_t len = b->len_mib ? b->len_mib : vm->mem_mib;

		if (b->vm_id != vm->id || b->nodes == 0)
			continue;
		len = len < left ? len : left;
		hw_touch(vm, b->nodes & (nodemask_of(hw->nr_nodes) - 1), len);
		left -= len;
	}
	if (left > 0)
		vm->resident[vm->vcpus[0].node] += left;
}

/* Apply this round's plan to the world and advance the clock. */
static void
hw_apply(struct hw *hw)
{
	double dt = hw->plan.next_call_s > 0 ? hw->plan.next_call_s : 1.0;

	for (size_t i = 0; i < hw->plan.nr_pins; i++)
		hw_apply_pin(hw, &hw->plan.pins[i]);
	for (size_t i = 0; i < hw->plan.nr_moves; i++)
		hw_apply_move(hw, &hw->plan.moves[i]);
	for (int i = 0; i < hw->snap->nr_vms; i++) {
		struct hw_vm *vm = &hw->vms[hw->snap_vm[i]];

		hw_first_touch(hw, vm);
		vm->uptime_s += dt;
	}
	hw->now_s += dt;
}

static const struct plan *
hw_step(struct hw *hw)
{
	hw_decide(hw);
	hw_apply(hw);
	return &hw->plan;
}

/* ---- looking at a plan -------------------------------------------------------------- */

static int
plan_count_pins(const struct plan *plan, int vm_id)
{
	int nr = 0;

	for (size_t i = 0; i < plan->nr_pins; i++)
		nr += plan->pins[i].vm_id == vm_id;
	return nr;
}

static const struct plan_pin *
plan_find_pin(const struct plan *plan, int vm_id, int vcpu)
{
	for (size_t i = 0; i < plan->nr_pins; i++)
		if (plan->pins[i].vm_id == vm_id && plan->pins[i].vcpu == vcpu)
			return &plan->pins[i];
	return NULL;
}

static int
plan_count_rule(const struct plan *plan, const char *rule)
{
	int nr = 0;

	for (size_t i = 0; i < plan->nr_pins; i++)
		nr += strcmp(plan->pins[i].why.rule, rule) == 0;
	for (size_t i = 0; i < plan->nr_moves; i++)
		nr += strcmp(plan->moves[i].why.rule, rule) == 0;
	return nr;
}

/* A home-node hold: a pin that keeps a vCPU where it runs (policy/engine_converge.c). */
static inline bool
plan_pin_is_hold(const struct plan_pin *p)
{
	return strcmp(p->why.rule, "hold") == 0;
}

/* Pins of the plan that may move a vCPU: all but the holds. */
static int
plan_count_moving_pins(const struct plan *plan)
{
	int nr = 0;

	for (size_t i = 0; i < plan->nr_pins; i++)
		nr += !plan_pin_is_hold(&plan->pins[i]);
	return nr;
}

static uint64_t
plan_moved_mib(const struct plan *plan, int vm_id)
{
	uint64_t mib = 0;

	for (size_t i = 0; i < plan->nr_moves; i++)
		if (vm_id < 0 || plan->moves[i].vm_id == vm_id)
			mib += plan->moves[i].mib;
	return mib;
}

static int
plan_count_binds(const struct plan *plan, int vm_id)
{
	int nr = 0;

	for (size_t i = 0; i < plan->nr_binds; i++)
		nr += plan->binds[i].vm_id == vm_id;
	return nr;
}

/* The sampling intensity asked for vm_id this round; false when none was. */
static bool
plan_find_sampling(const struct plan *plan, int vm_id, double *mib_s)
{
	for (size_t i = 0; i < plan->nr_samplings; i++)
		if (plan->samplings[i].vm_id == vm_id) {
			*mib_s = plan->samplings[i].scan_mib_s;
			return true;
		}
	return false;
}

/* Nodes where the VM's vCPUs run, as a mask. */
static uint64_t
hw_vm_vcpu_nodes(const struct hw_vm *vm)
{
	uint64_t mask = 0;

	for (int v = 0; v < vm->nr_vcpus; v++)
		mask |= nodemask_of(vm->vcpus[v].node);
	return mask;
}

/* ---- helpers ------------------------------------------------------------------------ */

/* Headroom the engine keeps free on a node, MiB (as engine_home.c computes it). */
static int64_t
hw_headroom_mib(const struct hw *hw)
{
	return (int64_t)(hw->node_mib * ENGINE_HEADROOM_PERMILLE / 1000);
}

static void
hw_vm_set_want(struct hw_vm *vm, double want)
{
	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpus[v].want = want;
}

/* Moves into node n this round, MiB. */
static uint64_t
plan_moved_into(const struct plan *plan, int n)
{
	uint64_t mib = 0;

	for (size_t i = 0; i < plan->nr_moves; i++)
		if (plan->moves[i].to_node == n)
			mib += plan->moves[i].mib;
	return mib;
}

/* ---- random worlds ------------------------------------------------------------------ */

static uint32_t
hw_rng_upto(struct util_rng *rng, uint64_t n)
{
	return util_rng_below(rng, (uint32_t)(n > 0 ? n : 1));
}

static void
hw_random_vm_memory(struct hw *hw, struct hw_vm *vm, struct util_rng *rng)
{
	memset(vm->resident, 0, sizeof(vm->resident));
	for (int q = 0; q < 4; q++)
		vm->resident[hw_rng_upto(rng, (uint64_t)hw->nr_nodes)] += vm->mem_mib / 4;
	vm->resident[0] += vm->mem_mib % 4;
}

static void
hw_random_vm_policy(struct hw *hw, struct hw_vm *vm, struct util_rng *rng)
{
	double r = util_rng_double(rng);

	vm->policy.mode = r < 0.6    ? VM_POLICY_MODE_AUTO
	                  : r < 0.75 ? VM_POLICY_MODE_ADVISORY
	                  : r < 0.9  ? VM_POLICY_MODE_MANUAL
	                             : VM_POLICY_MODE_OFF;
	if (hw_rng_upto(rng, 2))
		vm->policy.nodes = 1 + hw_rng_upto(rng, nodemask_of(hw->nr_nodes) - 1);
	vm->policy.migrate = hw_rng_upto(rng, 8) != 0;
	vm->policy.rate_kib_s = hw_rng_upto(rng, 4) ? 0 : (64 + hw_rng_upto(rng, 448)) * 1024;
	vm->policy.priority = (int)hw_rng_upto(rng, 101);
	if (vm->nr_vcpus >= 2 && hw_rng_upto(rng, 3) == 0) {
		hw_vm_cells(vm, 2);
		vm->policy.placement =
		    hw_rng_upto(rng, 3) ? VM_POLICY_PLACEMENT_CELLS : VM_POLICY_PLACEMENT_COMPACT;
	}
}

static void
hw_random_vm(struct hw *hw, struct util_rng *rng, uint64_t *budget)
{
	int nr_vcpus = 1 + (int)hw_rng_upto(rng, (uint64_t)hw->cpus_per_node + 2);
	uint64_t mem = 512 * (1 + hw_rng_upto(rng, hw->node_mib * 6 / 5 / 512));
	bool arriving = hw_rng_upto(rng, 2);
	struct hw_vm *vm;

	if (mem > *budget)
		mem = 512;
	*budget -= mem < *budget ? mem : *budget;
	vm = hw_vm_add(hw, nr_vcpus, mem, (int)hw_rng_upto(rng, (uint64_t)hw->nr_nodes),
	               arriving ? 0 : 100);
	if (arriving)
		vm->start_s = hw->now_s + hw_rng_upto(rng, 20);
	else
		hw_random_vm_memory(hw, vm, rng);
	if (hw_rng_upto(rng, 8) == 0)
		vm->stop_s = vm->start_s + 20 + hw_rng_upto(rng, 40);
	for (int v = 0; v < nr_vcpus; v++) {
		vm->vcpus[v].node = (int)hw_rng_upto(rng, (uint64_t)hw->nr_nodes);
		vm->vcpus[v].want = 0.05 + 0.95 * util_rng_double(rng);
		for (int n = 0; n < hw->nr_nodes; n++)
			vm->vcpus[v].faults[n] = hw_rng_upto(rng, 20000);
	}
	vm->faults = hw_rng_upto(rng, 2) ? HW_FAULTS_MEMORY : HW_FAULTS_SET;
	hw_random_vm_policy(hw, vm, rng);
}

static struct hw *
hw_random_world(struct util_rng *rng)
{
	int nn = 2 + (int)hw_rng_upto(rng, 3), cpus = 4 + (int)hw_rng_upto(rng, 5);
	struct hw *hw = hw_new(nn, cpus, (16 + 16 * hw_rng_upto(rng, 3)) * HW_GIB);
	uint64_t budget = hw->node_mib * (uint64_t)nn * 6 / 10;
	int nr = 2 + (int)hw_rng_upto(rng, 7);

	for (int n = 0; n < nn; n++) {
		hw->other_mib[n] = hw_rng_upto(rng, hw->node_mib / 10);
		for (int m = n + 1; m < nn; m++)
			hw->distance[n * nn + m] = hw->distance[m * nn + n] =
			    hw_rng_upto(rng, 2) ? 21 : 31;
	}
	for (int i = 0; i < nr; i++)
		hw_random_vm(hw, rng, &budget);
	return hw;
}

/* Things that happen to a host: load changes, refused migrations, policy edits. */
static void
hw_random_events(struct hw *hw, struct util_rng *rng)
{
	struct hw_vm *vm = &hw->vms[hw_rng_upto(rng, (uint64_t)hw->nr_vms)];

	switch (hw_rng_upto(rng, 40)) {
	case 0:
		hw_vm_set_want(vm, 0.05 + 0.95 * util_rng_double(rng));
		break;
	case 1:
		vm->moves_fail = !vm->moves_fail;
		break;
	case 2:
		vm->policy.nodes = 1 + hw_rng_upto(rng, nodemask_of(hw->nr_nodes) - 1);
		break;
	case 3:
		vm->policy.mode = (enum vm_policy_mode)hw_rng_upto(rng, 4);
		break;
	default:
		break;
	}
}

/* ---- checks of a round's plan against its snapshot: NULL, or what is wrong ----------- */

typedef const char *(*hw_check_fn)(const struct hw *hw, char *msg, size_t len);

static const struct snap_vm *
hw_snap_vm(const struct snapshot *snap, int id)
{
	for (int i = 0; i < snap->nr_vms; i++)
		if (snap->vms[i].id == id)
			return &snap->vms[i];
	return NULL;
}

static const char *
hw_check_pins_policy(const struct hw *hw, char *msg, size_t len)
{
	const struct snapshot *snap = hw->snap;
	uint64_t valid = nodemask_of(snap->nr_nodes) - 1;

	for (size_t i = 0; i < hw->plan.nr_pins; i++) {
		const struct plan_pin *p = &hw->plan.pins[i];
		const struct snap_vm *vm = hw_snap_vm(snap, p->vm_id);

		if (vm == NULL || vm->policy.mode != VM_POLICY_MODE_AUTO)
			snprintf(msg, len, "pin for VM %d, not present or mode not auto", p->vm_id);
		else if (p->nodes == 0 ||
		         (p->nodes != NODEMASK_ALL && (p->nodes & ~(vm->policy.nodes & valid))))
			snprintf(msg, len, "VM %d vCPU %d pinned to %#llx, policy nodes %#llx",
			         p->vm_id, p->vcpu, (unsigned long long)p->nodes,
			         (unsigned long long)vm->policy.nodes);
		else
			continue;
		return msg;
	}
	return NULL;
}

static const char *
hw_check_mem_policy(const struct hw *hw, char *msg, size_t len)
{
	const struct snapshot *snap = hw->snap;
	uint64_t valid = nodemask_of(snap->nr_nodes) - 1;

	for (size_t i = 0; i < hw->plan.nr_moves; i++) {
		const struct plan_mem_move *m = &hw->plan.moves[i];
		const struct snap_vm *vm = hw_snap_vm(snap, m->vm_id);

		if (vm == NULL || vm->policy.mode != VM_POLICY_MODE_AUTO || !vm->policy.migrate)
			snprintf(msg, len, "move for VM %d: absent, not auto, or migrate=no",
			         m->vm_id);
		else if (m->from_node == m->to_node || !nodemask_test(valid, m->from_node) ||
		         !nodemask_test(vm->policy.nodes & valid, m->to_node))
			snprintf(msg, len, "VM %d: move %d -> %d, policy nodes %#llx", m->vm_id,
			         m->from_node, m->to_node, (unsigned long long)vm->policy.nodes);
		else
			continue;
		return msg;
	}
	for (size_t i = 0; i < hw->plan.nr_binds; i++) {
		const struct plan_mem_bind *b = &hw->plan.binds[i];
		const struct snap_vm *vm = hw_snap_vm(snap, b->vm_id);

		if (vm == NULL || vm->policy.mode != VM_POLICY_MODE_AUTO || b->nodes == 0 ||
		    (b->nodes & ~(vm->policy.nodes & valid))) {
			snprintf(msg, len, "VM %d: bind to %#llx, mode %d, policy nodes %#llx",
			         b->vm_id, (unsigned long long)b->nodes,
			         vm ? (int)vm->policy.mode : -1,
			         vm ? (unsigned long long)vm->policy.nodes : 0ull);
			return msg;
		}
	}
	return NULL;
}

/* Rule: modes and policy nodes hold in random worlds, round after round. */
static const char *
hw_check_policy(const struct hw *hw, char *msg, size_t len)
{
	const char *bad = hw_check_pins_policy(hw, msg, len);

	return bad ? bad : hw_check_mem_policy(hw, msg, len);
}

/* Per-node room above the headroom and the per-round budgets. */
static const char *
hw_check_rates(const struct hw *hw, char *msg, size_t len)
{
	const struct snapshot *snap = hw->snap;
	double total = 0;

	for (size_t i = 0; i < hw->plan.nr_moves; i++) {
		const struct plan_mem_move *m = &hw->plan.moves[i];
		const struct snap_vm *vm = hw_snap_vm(snap, m->vm_id);
		uint64_t own = plan_moved_mib(&hw->plan, m->vm_id);

		total += (double)m->mib;
		if (m->mib == 0 || m->mib > vm->resident_mib[m->from_node])
			snprintf(msg, len, "VM %d: %llu MiB from node %d holding %llu", m->vm_id,
			         (unsigned long long)m->mib, m->from_node,
			         (unsigned long long)vm->resident_mib[m->from_node]);
		else if (vm->policy.rate_kib_s &&
		         (double)own > vm->policy.rate_kib_s / 1024.0 * ENGINE_SAMPLE_PERIOD_S)
			snprintf(msg, len, "VM %d moves %llu MiB, its rate is %llu KiB/s", m->vm_id,
			         (unsigned long long)own,
			         (unsigned long long)vm->policy.rate_kib_s);
		else
			continue;
		return msg;
	}
	if (total > ENGINE_RATE_MIB_S * ENGINE_SAMPLE_PERIOD_S) {
		snprintf(msg, len, "%.0f MiB moved in one round", total);
		return msg;
	}
	return NULL;
}

/* Rule: guards (headroom, host rate, VM rate) hold in random worlds. */
static const char *
hw_check_guards(const struct hw *hw, char *msg, size_t len)
{
	const struct snapshot *snap = hw->snap;

	for (int n = 0; n < snap->nr_nodes; n++) {
		int64_t room = (int64_t)snap->nodes[n].mem_free_mib - hw_headroom_mib(hw);
		uint64_t in = plan_moved_into(&hw->plan, n);

		if ((int64_t)in > (room > 0 ? room : 0)) {
			snprintf(msg, len, "%llu MiB into node %d with %lld MiB above headroom",
			         (unsigned long long)in, n, (long long)room);
			return msg;
		}
	}
	return hw_check_rates(hw, msg, len);
}

/* Rule: samplings stay in range, and flips come in linked pairs. */
static const char *
hw_check_sampling_flips(const struct hw *hw, char *msg, size_t len)
{
	const struct plan *plan = &hw->plan;

	for (size_t i = 0; i < plan->nr_samplings; i++) {
		const struct plan_sampling *s = &plan->samplings[i];
		const struct snap_vm *vm = hw_snap_vm(hw->snap, s->vm_id);
		enum vm_policy_mode m = vm->policy.mode;
		double v = s->scan_mib_s;

		if ((m == VM_POLICY_MODE_OFF && v != 0) ||
		    (m == VM_POLICY_MODE_MANUAL && v != ENGINE_SCAN_FLOOR_MIB_S) ||
		    (v != 0 && (v < ENGINE_SCAN_FLOOR_MIB_S || v > ENGINE_SCAN_CEIL_MIB_S))) {
			snprintf(msg, len, "VM %d (mode %d) sampled at %.1f MiB/s", s->vm_id,
			         (int)m, v);
			return msg;
		}
	}
	for (size_t i = 0; i < plan->nr_pins; i++) {
		const struct plan_pin *p = &plan->pins[i];

		if (p->kind == PLAN_PIN_FLIP &&
		    (p->flip_with < 0 || (size_t)p->flip_with >= plan->nr_pins ||
		     plan->pins[p->flip_with].kind != PLAN_PIN_FLIP ||
		     plan->pins[p->flip_with].flip_with != (int)i)) {
			snprintf(msg, len, "pin %zu: a flip without its other half", i);
			return msg;
		}
	}
	return NULL;
}

static bool
hw_reason_ok(const struct plan_reason *why)
{
	return why->rule[0] != '\0' && why->text[0] != '\0';
}

/* Rule: every pin, move and bind carries a non-empty rule and text. */
static const char *
hw_check_reasons(const struct hw *hw, char *msg, size_t len)
{
	const struct plan *plan = &hw->plan;

	for (size_t i = 0; i < plan->nr_pins; i++)
		if (!hw_reason_ok(&plan->pins[i].why)) {
			snprintf(msg, len, "pin %zu without a reason", i);
			return msg;
		}
	for (size_t i = 0; i < plan->nr_moves; i++)
		if (!hw_reason_ok(&plan->moves[i].why)) {
			snprintf(msg, len, "move %zu without a reason", i);
			return msg;
		}
	for (size_t i = 0; i < plan->nr_binds; i++)
		if (!hw_reason_ok(&plan->binds[i].why)) {
			snprintf(msg, len, "bind %zu without a reason", i);
			return msg;
		}
	return NULL;
}

#endif

/*
 * test_engine_wide.c - VMs wider than a node (policy/engine_converge.c): a memory-spanning VM's
 * vCPUs follow its memory before their faults can be judged, fill the free CPUs of the node
 * holding most of it without ever overfilling a node, and a weak spanning vCPU never displaces
 * a small VM whose memory stays behind; one with guest cells whose memory fits no node is
 * placed by its cells; span relief takes busy vCPUs off a node of the set crowded beyond its
 * CPUs, flips never carry CPU demand onto a node past its CPUs, and free CPUs are counted
 * after the round's own arrival pins; an adverse guest is left alone, with back-off, and a
 * steady one is not.
 *
 * Worlds from tests/unit/engine_harness.h: 2 nodes of 8 CPUs and 32 GiB; a 10-vCPU, 40-GiB VM
 * (more than a node in CPUs and memory) met running with its memory 70/30 on nodes 0/1.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"
/* The harness is a set of static helpers; this file uses only some of them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/unit/engine_harness.h"
#pragma GCC diagnostic pop

#define GIB  1024ull
#define CPUS 8

static int
world_teardown(void **state)
{
	hw_free(*state);
	return 0;
}

/* vCPUs of all present VMs running on node n. */
static int
node_vcpus(const struct hw *hw, int n)
{
	int nr = 0;

	for (int i = 0; i < hw->nr_vms; i++)
		if (hw_vm_present(hw, &hw->vms[i]))
			for (int v = 0; v < hw->vms[i].nr_vcpus; v++)
				nr += hw->vms[i].vcpus[v].node == n;
	return nr;
}

static int
vm_vcpus_on(const struct hw_vm *vm, int n)
{
	int nr = 0;

	for (int v = 0; v < vm->nr_vcpus; v++)
		nr += vm->vcpus[v].node == n;
	return nr;
}

/*
 * The wide VM: 10 busy vCPUs, `on0` of them on node 0 and the rest on node 1, `res0`/`res1`
 * MiB resident on nodes 0/1, faults as given (HW_FAULTS_SET with no faults: too few to judge,
 * as on a host whose kernel has not finished a scan pass over the VM's RAM yet).
 */
static struct hw_vm *
wide_vm(struct hw *hw, int on0, uint64_t res0, uint64_t res1, enum hw_faults faults)
{
	struct hw_vm *vm = hw_vm_add(hw, 10, 40 * GIB, 0, 100);

	vm->resident[0] = res0;
	vm->resident[1] = res1;
	vm->faults = faults;
	for (int v = on0; v < vm->nr_vcpus; v++)
		vm->vcpus[v].node = 1;
	return vm;
}

/* Run rounds until t_end; no node ever holds more vCPUs than CPUs (10 vCPUs on 16 CPUs). */
static void
run_no_overfill(struct hw *hw, double t_end)
{
	while (hw->now_s < t_end) {
		hw_step(hw);
		for (int n = 0; n < hw->nr_nodes; n++)
			assert_true(node_vcpus(hw, n) <= CPUS);
	}
}

/*
 * Rule: a spanning VM's vCPUs with too few faults to judge follow its memory.  Met running
 * with its vCPUs 5/5 and its memory 70/30, within a few rebalances its vCPUs fill node 0's
 * free CPUs (8 there, 2 on node 1), and no round puts more vCPUs on a node than its CPUs.
 */
static void
test_wide_fills_memory_node(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 5, 28 * GIB, 12 * GIB, HW_FAULTS_SET);

	run_no_overfill(hw, hw->now_s + 20);
	assert_int_equal(vm_vcpus_on(vm, 0), CPUS);
	assert_int_equal(vm_vcpus_on(vm, 1), 2);
	/* and it stays so */
	run_no_overfill(hw, hw->now_s + 60);
	assert_int_equal(vm_vcpus_on(vm, 0), CPUS);
}

/*
 * Rule: the memory prior waits until the guest has touched ENGINE_SPAN_PRIOR_MIN_PERMILLE of
 * its RAM (here 18 of 40 GiB): until then nothing moves.
 */
static void
test_wide_prior_waits_for_touch(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 5, 12 * GIB, 6 * GIB, HW_FAULTS_SET);

	run_no_overfill(hw, hw->now_s + 30);
	assert_int_equal(vm_vcpus_on(vm, 0), 5);
}

/*
 * Rule: a weak spanning vCPU (its faults split like the VM's memory: strength below
 * ENGINE_STRONG) moves into a full node only by displacing a vCPU whose VM has at least half
 * of its memory on the node it leaves.  Node 0 is full (4 wide vCPUs, a 4-vCPU VM with all
 * its memory there): the wide VM's vCPUs on node 1 want node 0 (70 % of their faults) but
 * must not push the small VM off its memory.
 */
static void
test_wide_weak_never_displaces_home(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 4, 28 * GIB, 12 * GIB, HW_FAULTS_MEMORY);
	struct hw_vm *small = hw_vm_add(hw, 4, 2 * GIB, 0, 100);

	run_no_overfill(hw, hw->now_s + 60);
	assert_int_equal(vm_vcpus_on(small, 0), 4);
	assert_int_equal(vm_vcpus_on(vm, 0), 4);
}

/*
 * Rule (snap_vm_by_cells): a VM whose memory fits no node is placed by its guest cells even
 * with the default policy.  An 8-vCPU, 40-GiB VM with two guest cells (vCPUs 0-3 and 4-7, 20
 * GiB each) met running with every vCPU on node 0 and its memory 28/12 over nodes 0/1, each
 * cell split over both nodes.  Placed as one spanning group, its vCPUs stay on node 0, where
 * most of its memory is, and nothing sorts either cell's memory out (the planner sees one
 * figure for the VM); placed by cells, each cell ends on a node of its own with its RAM there.
 */
static void
test_wide_cells_by_default(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = hw_vm_add(hw, 8, 40 * GIB, 0, 100);
	int cell_node[2];

	hw_vm_cells(vm, 2);
	assert_int_equal(vm->policy.placement, VM_POLICY_PLACEMENT_COMPACT);
	vm->faults = HW_FAULTS_MEMORY;
	vm->cells_measured = true;
	vm->cell_resident[0][0] = 16 * GIB;
	vm->cell_resident[0][1] = 4 * GIB;
	vm->cell_resident[1][0] = 12 * GIB;
	vm->cell_resident[1][1] = 8 * GIB;
	vm->resident[0] = 28 * GIB;
	vm->resident[1] = 12 * GIB;
	run_no_overfill(hw, hw->now_s + 300);
	for (int c = 0; c < 2; c++) {
		cell_node[c] = vm->vcpus[c * 4].node;
		for (int v = c * 4; v < c * 4 + 4; v++)
			assert_int_equal(vm->vcpus[v].node, cell_node[c]);
		/* all of the cell's RAM is on its vCPUs' node */
		assert_int_equal(vm->cell_resident[c][cell_node[c]], 20 * GIB);
	}
	assert_int_not_equal(cell_node[0], cell_node[1]);
}

/* Demand (sum of want) of the present VMs' vCPUs on node n. */
static double
node_demand(const struct hw *hw, int n)
{
	double demand[HW_MAX_NODES];

	hw_node_demand(hw, demand);
	return demand[n];
}

/*
 * Rule (span relief): a node of a spanning VM's set with its demand ENGINE_RELIEF_EXCESS or
 * more above its CPUs sends the VM's busy vCPUs to a node of the set with idle CPU, though
 * their faults (its memory, 70 % on node 0) want them where they are, and compression does
 * not carry them back.  Met running with all 10 busy vCPUs on node 0 (8 CPUs).
 */
static void
test_wide_relief_piled(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 10, 28 * GIB, 12 * GIB, HW_FAULTS_MEMORY);
	bool relief = false;

	while (hw->now_s < 160) {
		const struct plan *plan = hw_step(hw);

		for (size_t i = 0; i < plan->nr_pins; i++)
			relief |= plan->pins[i].vm_id == vm->id && plan->pins[i].nodes == 2 &&
			          strstr(plan->pins[i].why.text, "CPUs wanted") != NULL;
	}
	assert_true(relief);
	assert_int_equal(vm_vcpus_on(vm, 0), CPUS);
	assert_int_equal(vm_vcpus_on(vm, 1), 2);
	run_no_overfill(hw, hw->now_s + 120);
	assert_int_equal(vm_vcpus_on(vm, 0), CPUS);
}

/*
 * Rule: a flip with a spanning VM's vCPU never leaves the node that gains CPU demand over its
 * CPUs and more crowded than the other.  Node 0 (8 CPUs) runs 6 of the wide VM's busy vCPUs
 * and the 6 idle vCPUs of a small VM whose memory is on node 1; node 1 runs the wide VM's
 * other 4.  Each flip of a wide vCPU (to its memory on node 0) with an idle one (to its memory
 * on node 1) gains both, but only two fit node 0's CPUs: the wide VM's vCPUs move twice in
 * all, never more than node 0's CPUs are busy (four flips would need span relief to move two
 * back at once: six moves).
 */
static void
test_wide_flip_keeps_cpu(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 6, 28 * GIB, 12 * GIB, HW_FAULTS_MEMORY);
	struct hw_vm *idle = hw_vm_add(hw, 6, 2 * GIB, 1, 100);
	int flips = 0, moves = 0;

	hw_vm_set_want(idle, 0.02);
	for (int v = 0; v < idle->nr_vcpus; v++)
		idle->vcpus[v].node = 0;
	while (hw->now_s < 200) {
		int before[HW_MAX_VCPUS];

		for (int v = 0; v < vm->nr_vcpus; v++)
			before[v] = vm->vcpus[v].node;
		flips += plan_count_rule(hw_step(hw), "flip");
		for (int v = 0; v < vm->nr_vcpus; v++)
			moves += vm->vcpus[v].node != before[v];
		assert_true(node_demand(hw, 0) < CPUS + 1.0);
	}
	assert_true(flips > 0);
	assert_int_equal(moves, 2);
	assert_int_equal(vm_vcpus_on(vm, 0), CPUS);
	assert_int_equal(vm_vcpus_on(idle, 1), idle->nr_vcpus);
}

/*
 * Rule: compression counts the vCPUs of a node after the round's own arrival pins.  A 3-node
 * host; the wide VM met running with its memory 28/12 GiB on nodes 0/1 and its vCPUs on node
 * 1 (4) and node 2 (6, outside the home its memory gives it).  Its home pins carry the six
 * into nodes 0-1; the four on node 1 follow the memory to node 0 only onto CPUs those pins
 * left free: no round ever has more vCPUs on a node than CPUs.
 */
static void
test_wide_counts_after_pins(void **state)
{
	struct hw *hw = *state = hw_new(3, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 0, 28 * GIB, 12 * GIB, HW_FAULTS_MEMORY);

	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpus[v].node = v < 4 ? 1 : 2;
	run_no_overfill(hw, hw->now_s + 60);
	assert_int_equal(vm_vcpus_on(vm, 2), 0);
	assert_int_equal(vm_vcpus_on(vm, 0), CPUS);
}

/* Each vCPU of vm faults on node (v + shift) % 2, with a little on the other. */
static void
faults_rotate(struct hw_vm *vm, int shift)
{
	for (int v = 0; v < vm->nr_vcpus; v++) {
		vm->vcpus[v].faults[(v + shift) % 2] = HW_FAULT_LEVEL;
		vm->vcpus[v].faults[(v + shift + 1) % 2] = HW_FAULT_LEVEL / 32;
	}
}

/*
 * Run to t_end, the guest reshuffling its vCPUs' data every 10 s if `adverse`; returns how
 * many node changes of vm's vCPUs vnumad's pins made.
 */
static int
run_shuffled(struct hw *hw, struct hw_vm *vm, double t_end, bool adverse)
{
	int moves = 0;

	while (hw->now_s < t_end) {
		int before[HW_MAX_VCPUS];

		if (adverse)
			faults_rotate(vm, (int)(hw->now_s / 10));
		for (int v = 0; v < vm->nr_vcpus; v++)
			before[v] = vm->vcpus[v].node;
		hw_step(hw);
		for (int v = 0; v < vm->nr_vcpus; v++)
			moves += vm->vcpus[v].node != before[v];
	}
	return moves;
}

/*
 * Rule (engine_chase.c): a spanning VM whose vCPUs' faults move to the other node every 10 s
 * (a guest scheduler bouncing threads between its data) is chased until
 * ENGINE_ADVERSE_MIN_MOVES of its fault-following moves are judged, found adverse (each
 * wasted: the faults left before ENGINE_CHASE_WINDOW_S), then left alone for
 * ENGINE_ADVERSE_BACKOFF_BASE_S: not one vCPU move in that time, no memory moved; re-tested
 * after it, found adverse again, left alone twice as long.  The report says so.
 */
static void
test_wide_adverse_left_alone(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 5, 20 * GIB, 20 * GIB, HW_FAULTS_SET);
	struct engine_vm_report r;
	double first_until, second_until;
	int chased;

	faults_rotate(vm, 0);
	chased = run_shuffled(hw, vm, hw->now_s + 120, true);
	assert_int_equal(engine_report_vm(hw->engine, vm->id, &r), 0);
	assert_true(chased >= ENGINE_ADVERSE_MIN_MOVES);
	assert_int_equal(r.adverse_times, 1);
	assert_true(r.chase_judged >= ENGINE_ADVERSE_MIN_MOVES);
	assert_true(r.chase_wasted * 1000 >= ENGINE_ADVERSE_WASTED_PERMILLE * r.chase_judged);
	assert_true(r.adverse_left_s > 0 && r.adverse_left_s <= ENGINE_ADVERSE_BACKOFF_BASE_S);
	first_until = hw->now_s + r.adverse_left_s;
	/* left alone until the back-off ends */
	assert_int_equal(run_shuffled(hw, vm, first_until - 1, true), 0);
	assert_int_equal(vm->done_mib, 0);
	/* re-tested: chased again, found adverse again (within a minute), for twice as long */
	chased = 0;
	do {
		chased += run_shuffled(hw, vm, hw->now_s + 1, true);
		assert_int_equal(engine_report_vm(hw->engine, vm->id, &r), 0);
	} while (r.adverse_times < 2 && hw->now_s < first_until + 60);
	assert_true(chased > 0);
	assert_int_equal(r.adverse_times, 2);
	assert_true(r.adverse_left_s > ENGINE_ADVERSE_BACKOFF_BASE_S);
	second_until = hw->now_s + r.adverse_left_s;
	assert_true(second_until - first_until >= 2 * ENGINE_ADVERSE_BACKOFF_BASE_S);
	assert_int_equal(run_shuffled(hw, vm, second_until - 1, true), 0);
}

/*
 * The control: the same VM whose vCPUs' faults stay put (half of them on each node, every
 * vCPU starting on the wrong one) is followed, its moves pay, and it is never found adverse.
 */
static void
test_wide_steady_followed(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 5, 20 * GIB, 20 * GIB, HW_FAULTS_SET);
	struct engine_vm_report r;

	faults_rotate(vm, 1); /* vCPUs 0-4 (on node 0) fault on node 1 and the other way */
	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpus[v].node = v % 2;
	assert_true(run_shuffled(hw, vm, hw->now_s + 300, false) >= ENGINE_ADVERSE_MIN_MOVES);
	assert_int_equal(engine_report_vm(hw->engine, vm->id, &r), 0);
	assert_int_equal(r.adverse_times, 0);
	assert_true(r.adverse_left_s == 0);
	for (int v = 0; v < vm->nr_vcpus; v++)
		assert_int_equal(vm->vcpus[v].node, (v + 1) % 2);
}

/*
 * Rule (engine_plan_span): a spanning VM's memory on a node of its set that none of its vCPUs
 * has run on for ENGINE_VCPU_DWELL_S goes to the set's node running them.  10 busy vCPUs, 24
 * GiB (16 on node 0, 8 on node 1), all vCPUs on node 0; node 1 is full with a busy 8-vCPU VM
 * homed there, so no vCPU of the wide one gets a CPU on node 1 and its 8 GiB there are remote
 * to every vCPU of it.  They move to node 0 (rule memory-to-vcpus); the small VM's stay.
 */
static void
test_wide_memory_follows_vcpus(void **state)
{
	struct hw *hw = *state = hw_new(2, CPUS, 32 * GIB);
	struct hw_vm *vm = wide_vm(hw, 10, 16 * GIB, 8 * GIB, HW_FAULTS_MEMORY);
	struct hw_vm *small = hw_vm_add(hw, CPUS, 4 * GIB, 1, 100);
	int to_vcpus = 0;

	vm->mem_mib = 24 * GIB;
	while (hw->now_s < 200)
		to_vcpus += plan_count_rule(hw_step(hw), "memory-to-vcpus");
	assert_true(to_vcpus > 0);
	assert_int_equal(vm_vcpus_on(vm, 0), 10);
	assert_int_equal(vm->resident[0], 24 * GIB);
	assert_int_equal(small->resident[1], 4 * GIB);
	assert_int_equal(vm_vcpus_on(small, 1), CPUS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_wide_fills_memory_node, world_teardown),
	    cmocka_unit_test_teardown(test_wide_prior_waits_for_touch, world_teardown),
	    cmocka_unit_test_teardown(test_wide_weak_never_displaces_home, world_teardown),
	    cmocka_unit_test_teardown(test_wide_cells_by_default, world_teardown),
	    cmocka_unit_test_teardown(test_wide_relief_piled, world_teardown),
	    cmocka_unit_test_teardown(test_wide_flip_keeps_cpu, world_teardown),
	    cmocka_unit_test_teardown(test_wide_counts_after_pins, world_teardown),
	    cmocka_unit_test_teardown(test_wide_adverse_left_alone, world_teardown),
	    cmocka_unit_test_teardown(test_wide_steady_followed, world_teardown),
	    cmocka_unit_test_teardown(test_wide_memory_follows_vcpus, world_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

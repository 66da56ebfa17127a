/*
 * test_engine.c - unit tests of the rules of vnumad's policy engine (policy/engine*.c).
 *
 * Each test builds a small world (tests/unit/engine_harness.h), drives the engine through
 * vnumad_balancer_ops for one or more rounds, applying each plan like a host would, and checks
 * one rule on the plans.  The randomized tests print their seed on failure; set
 * VNUMAD_TEST_SEED to replay one seed.
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
#include "tests/unit/engine_harness.h"

#define GIB 1024ull

/*
 * Run rounds until (but not including) time t_end; returns the number of pins emitted that
 * move a vCPU, each printed with its reason (the callers expect none).  Home-node holds
 * (engine_hold_vcpu) move nothing and are not counted, but each must keep its vCPU where it
 * runs and narrow an affinity that was wider, so a hold can never repeat.
 */
static int
run_until(struct hw *hw, double t_end)
{
	int pins = 0;

	while (hw->now_s < t_end - 1e-9) {
		const struct plan *plan = hw_decide(hw);

		for (size_t i = 0; i < plan->nr_pins; i++) {
			const struct plan_pin *p = &plan->pins[i];

			if (plan_pin_is_hold(p)) {
				const struct hw_vcpu *hv =
				    &hw_vm_by_id(hw, p->vm_id)->vcpus[p->vcpu];

				assert_true(nodemask_test(p->nodes, hv->node));
				assert_true(hv->allowed != p->nodes);
				continue;
			}
			print_message("t=%.0f: pin VM %d vCPU %d to %#llx [%s] %s\n", hw->now_s,
			              p->vm_id, p->vcpu, (unsigned long long)p->nodes, p->why.rule,
			              p->why.text);
			pins++;
		}
		hw_apply(hw);
	}
	return pins;
}

/* Free the world a test left in *state, also when a failed assertion ended the test early. */
static int
world_teardown(void **state)
{
	hw_free(*state);
	*state = NULL;
	return 0;
}

#define ENGINE_TEST(f) cmocka_unit_test_teardown(f, world_teardown)

/* ---- 1. strength ------------------------------------------------------------------- */

/* Rule: strength = 1024 x busiest/total, ties to the lower node, too few faults: 0 / no node. */
static void
test_strength(void **state)
{
	int node;

	assert_int_equal(engine_strength((const double[]){3000, 9000}, 2, &node), 768);
	assert_int_equal(node, 1);
	assert_int_equal(engine_strength((const double[]){10000, 20000}, 2, &node), 683);
	assert_int_equal(node, 1);
	assert_int_equal(engine_strength((const double[]){0, 0, 10000, 0}, 4, &node), 1024);
	assert_int_equal(node, 2);
	/* Spread evenly: 1024 / nr_nodes; a tie goes to the lower node. */
	assert_int_equal(engine_strength((const double[]){3000, 3000, 3000, 3000}, 4, &node), 256);
	assert_int_equal(node, 0);
	assert_int_equal(engine_strength((const double[]){1000, 6000, 6000}, 3, &node), 473);
	assert_int_equal(node, 1);
	/* Exactly the minimum is judged; one page less is not. */
	assert_int_equal(engine_strength((const double[]){ENGINE_MIN_FAULT_PAGES, 0}, 2, &node),
	                 1024);
	assert_int_equal(node, 0);
	node = 5;
	assert_int_equal(engine_strength((const double[]){ENGINE_MIN_FAULT_PAGES / 2,
	                                                  ENGINE_MIN_FAULT_PAGES / 2 - 1},
	                                 2, &node),
	                 0);
	assert_int_equal(node, ENGINE_NO_NODE);
	node = 5;
	assert_int_equal(engine_strength((const double[]){0, 0}, 2, &node), 0);
	assert_int_equal(node, ENGINE_NO_NODE);
}

/* ---- 2. groups --------------------------------------------------------------------- */

/* All pins of vm_id for vCPUs first..last have one and the same one-node mask; returns it. */
static uint64_t
same_node_pins(const struct plan *plan, int vm_id, int first, int last)
{
	const struct plan_pin *p0 = plan_find_pin(plan, vm_id, first);

	assert_non_null(p0);
	assert_int_equal(nodemask_weight(p0->nodes), 1);
	for (int v = first; v <= last; v++) {
		const struct plan_pin *p = plan_find_pin(plan, vm_id, v);

		assert_non_null(p);
		assert_int_equal(p->nodes, p0->nodes);
		assert_string_equal(p->why.rule, "home");
	}
	return p0->nodes;
}

static const struct plan_mem_bind *
find_bind(const struct plan *plan, int vm_id, uint64_t start_mib)
{
	for (size_t i = 0; i < plan->nr_binds; i++)
		if (plan->binds[i].vm_id == vm_id && plan->binds[i].start_mib == start_mib)
			return &plan->binds[i];
	return NULL;
}

/* Whether a pin of VM vm_id has a reason text holding part. */
static bool
pin_text_has(const struct plan *plan, int vm_id, const char *part)
{
	for (size_t i = 0; i < plan->nr_pins; i++)
		if (plan->pins[i].vm_id == vm_id && strstr(plan->pins[i].why.text, part) != NULL)
			return true;
	return false;
}

/* Rule: placement='cells' gives one group (and home node) per guest cell, at arrival. */
static void
test_groups_per_cell(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 16 * GIB);
	struct hw_vm *vm = hw_vm_add(hw, 4, 4 * GIB, 0, 0);
	const struct plan *plan;
	const struct plan_mem_bind *b0, *b1;
	uint64_t home0, home1;

	hw_vm_cells(vm, 2);
	vm->policy.placement = VM_POLICY_PLACEMENT_CELLS;
	plan = hw_decide(hw);
	assert_int_equal(plan_count_pins(plan, vm->id), 4);
	home0 = same_node_pins(plan, vm->id, 0, 1);
	home1 = same_node_pins(plan, vm->id, 2, 3);
	assert_true(home0 != home1);
	/* One bind per cell, over the cell's RAM range, to the cell's node. */
	assert_int_equal(plan_count_binds(plan, vm->id), 2);
	b0 = find_bind(plan, vm->id, 0);
	b1 = find_bind(plan, vm->id, 2 * GIB);
	assert_non_null(b0);
	assert_non_null(b1);
	assert_int_equal(b0->len_mib, 2 * GIB);
	assert_int_equal(b1->len_mib, 2 * GIB);
	assert_int_equal(b0->nodes, home0);
	assert_int_equal(b1->nodes, home1);
	/* Each cell named in the reason, cell 0 too (not "cell :"). */
	assert_true(pin_text_has(plan, vm->id, " cell 0: home node"));
	assert_true(pin_text_has(plan, vm->id, " cell 1: home node"));
	assert_false(pin_text_has(plan, vm->id, "cell :"));
}

/* Rule: without placement='cells' the VM is one group even if its guest has cells. */
static void
test_groups_compact_one_group(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 16 * GIB);
	struct hw_vm *vm = hw_vm_add(hw, 4, 4 * GIB, 0, 0);
	const struct plan *plan;
	uint64_t home;

	hw_vm_cells(vm, 2);
	plan = hw_decide(hw);
	assert_int_equal(plan_count_pins(plan, vm->id), 4);
	home = same_node_pins(plan, vm->id, 0, 3);
	assert_int_equal(plan_count_binds(plan, vm->id), 1);
	assert_int_equal(plan->binds[0].nodes, home);
	assert_int_equal(plan->binds[0].len_mib, 0); /* all of its RAM */
}

/* ---- 3. home choice ---------------------------------------------------------------- */

/* The one node all of a VM's pins (and its bind) go to this round. */
static int
vm_home(const struct plan *plan, const struct hw_vm *vm)
{
	uint64_t home = same_node_pins(plan, vm->id, 0, vm->nr_vcpus - 1);

	assert_int_equal(plan_count_binds(plan, vm->id), 1);
	assert_int_equal(find_bind(plan, vm->id, 0)->nodes, home);
	return nodemask_first(home);
}

/*
 * Rule: home choices are reserved at once.  Two VMs arrive together, each needing more than
 * half of a node's free memory; both run on node 0 now and CPU load alone would keep both
 * there, but the first one's reservation sends the second to node 1.
 */
static void
test_home_reservation(void **state)
{
	struct hw *hw = *state = hw_new(2, 16, 16 * GIB);
	struct hw_vm *a = hw_vm_add(hw, 2, 10 * GIB, 0, 0);
	struct hw_vm *b = hw_vm_add(hw, 2, 10 * GIB, 0, 0);
	const struct plan *plan = hw_decide(hw);

	assert_int_equal(vm_home(plan, a), 0);
	assert_int_equal(vm_home(plan, b), 1);
}

/*
 * Rule: VMs handed to vnumad (advisory, or vnumad paused, until now) get homes afresh, all
 * together.  On 2 nodes x 2 CPUs, B (1 vCPU, 320 MiB on node 0) runs while watched only; A
 * (2 vCPUs, 384 MiB) starts next to it, its vCPUs one on each node: seen before it touched its
 * RAM, it is homed on node 1, where the CPUs are free.  Then A touches all its RAM on node 0.
 * Handed over in one round, the bigger A is placed first, where its RAM now is, and only B's
 * smaller RAM moves; their vCPUs are pinned in the round they are placed, not a rebalance
 * period later.
 */
static void
test_home_afresh_when_handed_over(void **state)
{
	struct hw *hw = *state = hw_new(2, 2, 4 * GIB);
	struct hw_vm *b = hw_vm_add(hw, 1, 320, 0, 100);
	struct hw_vm *a;

	b->policy.mode = VM_POLICY_MODE_ADVISORY;
	run_until(hw, hw->now_s + 4);
	a = hw_vm_add(hw, 2, 384, 0, 1);
	a->resident[0] = 0;
	a->vcpus[1].node = 1;
	a->policy.mode = VM_POLICY_MODE_ADVISORY;
	run_until(hw, hw->now_s + 4);
	assert_int_equal(engine_vm_lookup(hw->engine, a->id)->groups[0].home, nodemask_of(1));
	a->resident[0] = 384;
	run_until(hw, hw->now_s + 4);
	/* Handed over one round after a rebalance: placed and pinned in that same round. */
	while (((struct engine *)hw->engine)->last_rebalance_s != hw->now_s - 1)
		hw_step(hw);
	a->policy.mode = b->policy.mode = VM_POLICY_MODE_AUTO;
	hw_decide(hw);
	assert_non_null(plan_find_pin(&hw->plan, a->id, 1)); /* its vCPU on node 1 goes home */
	assert_non_null(plan_find_pin(&hw->plan, b->id, 0));
	hw_apply(hw);
	run_until(hw, hw->now_s + 120);
	assert_int_equal(hw_vm_vcpu_nodes(a), nodemask_of(0));
	assert_int_equal(hw_vm_vcpu_nodes(b), nodemask_of(1));
	assert_int_equal(a->resident[0], 384);
	assert_int_equal(b->resident[1], 320);
}

/*
 * Rule: memory is a hard limit, CPUs are soft.  Node 0's CPUs are busy (a manual VM), node 1
 * is idle but has 2 GiB free: a VM of 8 GiB, now running on node 1, still goes to node 0.
 */
static void
test_home_memory_hard_cpu_soft(void **state)
{
	struct hw *hw = *state = hw_new(2, 4, 16 * GIB);
	struct hw_vm *busy = hw_vm_add(hw, 4, 2 * GIB, 0, 100);
	struct hw_vm *vm;

	busy->policy.mode = VM_POLICY_MODE_MANUAL;
	hw->other_mib[1] = 14 * GIB;
	vm = hw_vm_add(hw, 4, 8 * GIB, 1, 0);
	assert_int_equal(vm_home(hw_decide(hw), vm), 0);
}

/* A 4-node host where node 0 is close to node 2 and node 1 to node 3 (21); the rest 31. */
static struct hw *
host_4node_pairs(void)
{
	struct hw *hw = hw_new(4, 8, 16 * GIB);

	for (int n = 0; n < 4; n++)
		for (int m = 0; m < 4; m++)
			hw->distance[n * 4 + m] = n == m ? 10 : (n % 2 == m % 2 ? 21 : 31);
	return hw;
}

/* vCPUs pinned per node, as a count per node; every pin is to one node inside `set`. */
static void
span_pins(const struct plan *plan, const struct hw_vm *vm, uint64_t set, int *per_node)
{
	for (int v = 0; v < vm->nr_vcpus; v++) {
		const struct plan_pin *p = plan_find_pin(plan, vm->id, v);

		assert_non_null(p);
		assert_int_equal(nodemask_weight(p->nodes), 1);
		assert_true((p->nodes & ~set) == 0);
		per_node[nodemask_first(p->nodes)]++;
	}
}

/*
 * The binds of a spanning VM: consecutive ranges covering all its RAM, each bound to one node
 * of the set; returns the union of their nodes.
 */
static uint64_t
span_binds(const struct plan *plan, const struct hw_vm *vm)
{
	uint64_t nodes = 0, next = 0;

	for (size_t i = 0; i < plan->nr_binds; i++) {
		const struct plan_mem_bind *b = &plan->binds[i];

		if (b->vm_id != vm->id)
			continue;
		assert_int_equal(b->start_mib, next);
		assert_true(b->len_mib > 0);
		assert_int_equal(nodemask_weight(b->nodes), 1);
		nodes |= b->nodes;
		next += b->len_mib;
	}
	assert_int_equal(next, vm->mem_mib);
	return nodes;
}

/* Rule: a VM too big for any node spans the fewest, closest nodes (by distance, not index). */
static void
test_home_span_closest(void **state)
{
	struct hw *hw = *state = host_4node_pairs();
	struct hw_vm *vm = hw_vm_add(hw, 8, 24 * GIB, 0, 0);
	const struct plan *plan = hw_decide(hw);
	int per_node[4] = {0};
	uint64_t set = nodemask_of(0) | nodemask_of(2);

	assert_int_equal(span_binds(plan, vm), set);
	span_pins(plan, vm, set, per_node);
	assert_int_equal(per_node[0], 4);
	assert_int_equal(per_node[2], 4);
}

/* Rule: homes (single or spanning) stay inside the VM's policy nodes. */
static void
test_home_policy_nodes(void **state)
{
	struct hw *hw = *state = host_4node_pairs();
	struct hw_vm *big = hw_vm_add(hw, 8, 24 * GIB, 0, 0);
	struct hw_vm *small = hw_vm_add(hw, 2, 2 * GIB, 0, 0);
	const struct plan *plan;
	int per_node[4] = {0};
	int home;

	big->policy.nodes = nodemask_of(1) | nodemask_of(2) | nodemask_of(3);
	small->policy.nodes = nodemask_of(2) | nodemask_of(3);
	plan = hw_decide(hw);
	/* The closest pair inside {1,2,3} is {1,3}. */
	assert_int_equal(span_binds(plan, big), nodemask_of(1) | nodemask_of(3));
	span_pins(plan, big, nodemask_of(1) | nodemask_of(3), per_node);
	home = vm_home(plan, small);
	assert_true(home == 2 || home == 3);
}

/* ---- 4. spread --------------------------------------------------------------------- */

/*
 * Node 0 (4 CPUs) holds A (2 vCPUs), B (2) and C (1), idle when first seen, so all are homed
 * there; then they get busy: 5 CPUs of demand on 4.
 */
static struct hw *
scene_spread_vms(bool node1_busy, const int *vcpus, int nr)
{
	struct hw *hw = hw_new(2, 4, 16 * GIB);
	int first = node1_busy;

	if (node1_busy)
		hw_vm_add(hw, 4, 4 * GIB, 1, 100);
	for (int i = 0; i < nr; i++) /* a GiB per vCPU */
		hw_vm_set_want(hw_vm_add(hw, vcpus[i], (uint64_t)vcpus[i] * GIB, 0, 100), 0.01);
	hw_step(hw);
	for (int i = first; i < first + nr; i++)
		hw_vm_set_want(&hw->vms[i], 1.0);
	return hw;
}

static struct hw *
scene_spread(void)
{
	static const int vcpus[] = {2, 2, 1};

	return scene_spread_vms(false, vcpus, 3);
}

/*
 * Rule: spread.  An overloaded node (demand > ENGINE_SPREAD_OVERLOAD x CPUs) has its smallest
 * movable group moved to a node where it fits, once the VM dwell time has passed, and one
 * group is enough here (then 4 CPUs of demand on 4).
 *
 * Written against a bug, since fixed: in the round where spread re-homes C
 * to node 1 (and pins it there), engine_compress() -> engine_rehome_majority() sees C's
 * place_node, computed from the snapshot before this round's pins, still on node 0, and
 * re-homes C back to node 0 (its load counted there again; rehomed_s reset).  At the next
 * rebalance node 0 looks overloaded again and spread moves A as well: two groups off a node
 * that needed one.  The same re-home undoes fresh home choices for running VMs seen for the
 * first time (their vCPUs' current node wins over the node chosen by fit).
 */
static void
test_spread_smallest_after_dwell(void **state)
{
	struct hw *hw = *state = scene_spread();
	const double t0 = hw->now_s - 1, t_dwell = t0 + ENGINE_VM_DWELL_S;
	const struct plan_pin *p;
	int spread = 0;

	/* Before the dwell time: nothing moves however overloaded node 0 is. */
	assert_int_equal(run_until(hw, t_dwell), 0);
	while (hw->now_s < t_dwell + 2 * ENGINE_REBALANCE_PERIOD_S && spread == 0) {
		const struct plan *plan = hw_decide(hw);

		spread = plan_count_rule(plan, "spread");
		if (spread) {
			assert_int_equal(plan_count_moving_pins(plan), 1);
			p = plan_find_pin(plan, hw->vms[2].id, 0);
			assert_non_null(p);
			assert_int_equal(p->nodes, nodemask_of(1));
		}
		hw_apply(hw);
	}
	assert_int_equal(spread, 1);
	/* One group off was enough (4 CPUs of demand on 4): A and B stay, for good. */
	assert_int_equal(run_until(hw, hw->now_s + 60), 0);
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[0]), nodemask_of(0));
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[1]), nodemask_of(0));
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[2]), nodemask_of(1));
}

/* Rule: spread moves nothing when no node can take the group without overloading. */
static void
test_spread_nowhere_to_go(void **state)
{
	static const int vcpus[] = {2, 2, 1};
	struct hw *hw = *state = scene_spread_vms(true, vcpus, 3); /* node 1 busy */

	assert_int_equal(run_until(hw, hw->now_s + 3 * ENGINE_VM_DWELL_S), 0);
}

/*
 * Rule: spread evens out a host short of CPUs everywhere.  Node 1 (4 CPUs) runs X (4 busy
 * vCPUs); node 0 holds A (2), B (2), C (1) and D (1), idle when first seen and then busy: 6
 * CPUs of demand on 4 beside 4 on 4.  No node has room, but moving a 1-vCPU group leaves both
 * at 5 on 4 (the worse ratio 1.5 -> 1.25, by ENGINE_SPREAD_EVEN_GAIN or more), so one moves,
 * with its memory; a second would only make node 1 the worse (6 on 4), so none does.
 * Written against 20-wide-adverse-oversub, where two small VMs stayed on the fuller node
 * (nowhere "fits") and the scheduler split them over both nodes.
 */
static void
test_spread_evens_oversubscribed(void **state)
{
	static const int vcpus[] = {2, 2, 1, 1};
	struct hw *hw = *state = scene_spread_vms(true, vcpus, 4);
	int moved = -1;

	assert_true(run_until(hw, hw->now_s + 4 * ENGINE_VM_DWELL_S) > 0);
	for (int i = 1; i < 5; i++)
		if (hw_vm_vcpu_nodes(&hw->vms[i]) != nodemask_of(0)) {
			assert_int_equal(moved, -1); /* one group only */
			moved = i;
		}
	assert_true(moved == 3 || moved == 4); /* the smallest */
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[moved]), nodemask_of(1));
	assert_int_equal(hw->vms[moved].resident[1], 1 * GIB);
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[0]), nodemask_of(1));
	/* and it stays even: nothing moves in the next minutes */
	assert_int_equal(run_until(hw, hw->now_s + 3 * ENGINE_VM_DWELL_S), 0);
}

/* ---- 5. compress ------------------------------------------------------------------- */

/* Rule: compress moves a compact group's stray vCPU home when home has a free CPU. */
static void
test_compress_free_cpu(void **state)
{
	struct hw *hw = *state = hw_new(2, 4, 16 * GIB);
	struct hw_vm *a = hw_vm_add(hw, 3, 3 * GIB, 0, 100);
	const struct plan *plan;
	const struct plan_pin *p;

	a->vcpus[2].node = 1;
	plan = hw_decide(hw);
	assert_int_equal(plan_count_moving_pins(plan), 1);
	p = plan_find_pin(plan, a->id, 2);
	assert_non_null(p);
	assert_int_equal(p->kind, PLAN_PIN_MOVE);
	assert_int_equal(p->flip_with, -1);
	assert_int_equal(p->nodes, nodemask_of(0));
	assert_string_equal(p->why.rule, "compress");
	hw_apply(hw);
	assert_int_equal(run_until(hw, hw->now_s + 30), 0);
	assert_int_equal(hw_vm_vcpu_nodes(a), nodemask_of(0));
}

/*
 * Rule: compress moves a stray vCPU home without a free CPU there when no node has one and
 * home, with it, is no more crowded than where it runs.  Node 0 (4 CPUs) runs X (3 vCPUs) and
 * G's vCPU 0, node 1 runs Y (4) and G's vCPU 1: 4 and 5 CPUs of demand on 4.  G is homed on
 * node 0 (its memory is there); home with vCPU 1 is 5 on 4, no worse than node 1 now, so it
 * moves (node 1 is left at 4 on 4).  Before, G stayed split (no free CPU, no smaller group to
 * flip with), and on a real host the kernel pulled its memory toward both halves.
 */
static void
test_compress_no_more_crowded(void **state)
{
	struct hw *hw = *state = hw_new(2, 4, 16 * GIB);
	struct hw_vm *g;
	const struct plan_pin *p = NULL;

	hw_vm_add(hw, 4, 4 * GIB, 1, 100); /* Y */
	hw_vm_add(hw, 3, 3 * GIB, 0, 100); /* X */
	g = hw_vm_add(hw, 2, 2 * GIB, 0, 100);
	g->vcpus[1].node = 1;
	for (const double t_end = hw->now_s + 30; hw->now_s < t_end && p == NULL;) {
		const struct plan *plan = hw_decide(hw);

		p = plan_find_pin(plan, g->id, 1);
		if (p != NULL && p->nodes == nodemask_of(0)) {
			assert_int_equal(p->kind, PLAN_PIN_MOVE);
			assert_string_equal(p->why.rule, "compress");
			assert_non_null(strstr(p->why.text, "no more crowded"));
		} else {
			p = NULL;
		}
		hw_apply(hw);
	}
	assert_non_null(p);
	assert_int_equal(run_until(hw, hw->now_s + 60), 0);
	assert_int_equal(hw_vm_vcpu_nodes(g), nodemask_of(0));
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[0]), nodemask_of(1));
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[1]), nodemask_of(0));
}

/* The two halves of a flip: linked both ways, each a one-node mask. */
static const struct plan_pin *
flip_other(const struct plan *plan, const struct plan_pin *p)
{
	const struct plan_pin *q;

	assert_int_equal(p->kind, PLAN_PIN_FLIP);
	assert_true(p->flip_with >= 0 && (size_t)p->flip_with < plan->nr_pins);
	q = &plan->pins[p->flip_with];
	assert_int_equal(q->kind, PLAN_PIN_FLIP);
	assert_int_equal(&plan->pins[q->flip_with], p);
	assert_string_equal(p->why.rule, "flip");
	assert_string_equal(q->why.rule, "flip");
	return q;
}

/*
 * Rule: on a full home node, compress flips with a vCPU of a strictly smaller group.  Node 0
 * (4 CPUs) holds A0-A2 and B (a 1-vCPU VM homed there); A3 runs on node 1.  CPU use is low so
 * every VM's home is where it runs; the node counts as full by its vCPUs.
 */
static void
test_compress_flip_smaller(void **state)
{
	struct hw *hw = *state = hw_new(2, 4, 16 * GIB);
	struct hw_vm *a = hw_vm_add(hw, 4, 4 * GIB, 0, 100);
	struct hw_vm *b = hw_vm_add(hw, 1, 1 * GIB, 0, 100);
	const struct plan *plan;
	const struct plan_pin *p, *q;

	hw_vm_set_want(a, 0.1);
	hw_vm_set_want(b, 0.1);
	a->vcpus[3].node = 1;
	plan = hw_decide(hw);
	assert_int_equal(plan_count_moving_pins(plan), 2);
	p = plan_find_pin(plan, a->id, 3);
	assert_non_null(p);
	assert_int_equal(p->nodes, nodemask_of(0));
	q = flip_other(plan, p);
	assert_int_equal(q->vm_id, b->id);
	assert_int_equal(q->vcpu, 0);
	assert_int_equal(q->nodes, nodemask_of(1));
	hw_apply(hw);
	/* Settled: B is whole on node 1 and stays; A is whole on node 0. */
	assert_int_equal(run_until(hw, hw->now_s + 30), 0);
	assert_int_equal(hw_vm_vcpu_nodes(a), nodemask_of(0));
	assert_int_equal(hw_vm_vcpu_nodes(b), nodemask_of(1));
}

/*
 * Rule: compress never flips with a vCPU of a larger (or equal) group.  Both nodes are full:
 * node 0 holds L (3 vCPUs) and S0, node 1 holds M (3) and S1.  S is homed on node 0, but only
 * larger groups could make room there, so S1 stays where it is.
 */
static void
test_compress_never_larger(void **state)
{
	struct hw *hw = *state = hw_new(2, 4, 16 * GIB);
	struct hw_vm *l = hw_vm_add(hw, 3, 3 * GIB, 0, 100);
	struct hw_vm *m = hw_vm_add(hw, 3, 3 * GIB, 1, 100);
	struct hw_vm *s = hw_vm_add(hw, 2, 2 * GIB, 0, 100);

	for (int i = 0; i < 3; i++)
		hw_vm_set_want(&hw->vms[i], 0.1);
	s->vcpus[1].node = 1;
	assert_int_equal(run_until(hw, hw->now_s + 60), 0);
	assert_int_equal(hw_vm_vcpu_nodes(l), nodemask_of(0));
	assert_int_equal(hw_vm_vcpu_nodes(m), nodemask_of(1));
}

/* ---- 6. the numa/core worked example ----------------------------------------------- */

/*
 * BRIEF section 2: two full nodes of 6 CPUs; node 0 holds G1(T1,T2,T3), G2(T4,T5), G4(T11);
 * node 1 holds G1(T6,T7,T8), G3(T9,T10), G5(T12).  Each group is a VM (vms[0..4] = G1..G5),
 * running, busy, with its memory where its vCPUs are.  G1's vCPUs 0-2 are T1-T3, 3-5 T6-T8.
 */
static struct hw *
scene_numacore(void)
{
	struct hw *hw = hw_new(2, 6, 64 * GIB);
	struct hw_vm *g1 = hw_vm_add(hw, 6, 6 * GIB, 0, 100);

	for (int v = 3; v < 6; v++)
		g1->vcpus[v].node = 1;
	g1->resident[0] = g1->resident[1] = 3 * GIB;
	hw_vm_add(hw, 2, 2 * GIB, 0, 100); /* G2 */
	hw_vm_add(hw, 2, 2 * GIB, 1, 100); /* G3 */
	hw_vm_add(hw, 1, 1 * GIB, 0, 100); /* G4 */
	hw_vm_add(hw, 1, 1 * GIB, 1, 100); /* G5 */
	for (int i = 0; i < 5; i++)
		hw->vms[i].faults = HW_FAULTS_MEMORY;
	return hw;
}

/* Thread name of vCPU v of world VM i in the worked example (T1..T12). */
static int
numacore_thread(int i, int v)
{
	static const int first[5] = {1, 4, 9, 11, 12};

	return i == 0 && v >= 3 ? 6 + v - 3 : first[i] + v;
}

/*
 * Rule: directed convergence takes the worked example's steps: T6 flips with T11 (the
 * smallest group), then T7 and T8 move over displacing G2 (T7<->T4, T8<->T5).
 *
 * FRAGILE: this passes today only through the re-home described at
 * test_spread_smallest_after_dwell: round one homes G2 and G4 on node 1 by fit, then
 * engine_rehome_majority() puts them back on node 0, so T11 is picked as the smallest group's
 * vCPU.  With that fixed, G2 and G4 "want" node 1, and engine_flip_partner() takes the first
 * partner that wants to go the other way in slot order (key 0 for all of them), giving
 * T6<->T4, T7<->T5, T8<->T11: the same end state, not the brief's steps.  Ranking such
 * partners by group size too (smallest first) keeps the brief's steps.
 */
static void
test_numacore_example(void **state)
{
	struct hw *hw = *state = scene_numacore();
	static const int want[3][2] = {{6, 11}, {7, 4}, {8, 5}};
	int got[3][2], nr = 0;

	while (hw->now_s < 200 && nr < 3) {
		const struct plan *plan = hw_decide(hw);

		for (size_t i = 0; i < plan->nr_pins; i++) {
			const struct plan_pin *p = &plan->pins[i], *q;
			struct hw_vm *pv;

			if (p->vm_id != hw->vms[0].id || plan_pin_is_hold(p))
				continue; /* holds keep vCPUs where they are: not steps */
			q = flip_other(plan, p);
			pv = hw_vm_by_id(hw, q->vm_id);
			assert_true(nr < 3);
			got[nr][0] = numacore_thread(0, p->vcpu);
			got[nr][1] = numacore_thread((int)(pv - hw->vms), q->vcpu);
			nr++;
		}
		hw_apply(hw);
	}
	assert_int_equal(nr, 3);
	for (int i = 0; i < 3; i++) {
		if (got[i][0] != want[i][0] || got[i][1] != want[i][1])
			print_error("step %d: T%d<->T%d, the brief says T%d<->T%d\n", i + 1,
			            got[i][0], got[i][1], want[i][0], want[i][1]);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(got[i][0], want[i][0]);
		assert_int_equal(got[i][1], want[i][1]);
	}
}

/*
 * Rule: the worked example ends with all of G1 on node 0 and G2..G5 on node 1, loads equal
 * (6 and 6), every pin that moves a vCPU a flip (loads never change), and no moves at all
 * afterwards.  The other pins are home-node holds: each keeps its vCPU on the node it runs on.
 */
static void
test_numacore_end_state(void **state)
{
	struct hw *hw = *state = scene_numacore();
	int per_node[2] = {0};

	while (hw->now_s < 160) {
		const struct plan *plan = hw_decide(hw);

		for (size_t i = 0; i < plan->nr_pins; i++) {
			const struct plan_pin *p = &plan->pins[i];

			if (plan_pin_is_hold(p))
				assert_true(nodemask_test(
				    p->nodes, hw_vm_by_id(hw, p->vm_id)->vcpus[p->vcpu].node));
			else
				assert_int_equal(p->kind, PLAN_PIN_FLIP);
		}
		hw_apply(hw);
	}
	assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[0]), nodemask_of(0));
	for (int i = 1; i < 5; i++)
		assert_int_equal(hw_vm_vcpu_nodes(&hw->vms[i]), nodemask_of(1));
	for (int i = 0; i < 5; i++)
		for (int v = 0; v < hw->vms[i].nr_vcpus; v++)
			per_node[hw->vms[i].vcpus[v].node]++;
	assert_int_equal(per_node[0], 6);
	assert_int_equal(per_node[1], 6);
	/* Memory followed: each group's memory is on its node. */
	assert_int_equal(hw->vms[0].resident[1], 0);
	assert_int_equal(hw->vms[1].resident[0], 0);
	assert_int_equal(hw->vms[3].resident[0], 0);
	/* No ping-pong. */
	assert_int_equal(run_until(hw, hw->now_s + 120), 0);
}

/* ---- 7. guards --------------------------------------------------------------------- */

/*
 * Rule: memory is never planned into a node beyond its headroom.  A VM spans nodes 0-1 (its
 * policy) with 4 GiB outside them on node 2; nodes 0 and 1 have 300 and 200 MiB above their
 * headroom.  It gets exactly that room, round by round, and nothing more.
 */
static void
test_guard_headroom(void **state)
{
	struct hw *hw = *state = hw_new(3, 4, 16 * GIB);
	struct hw_vm *vm = hw_vm_add(hw, 8, 24 * GIB, 0, 100);
	int64_t head = hw_headroom_mib(hw);
	uint64_t total = 0;

	vm->policy.nodes = nodemask_of(0) | nodemask_of(1);
	for (int v = 4; v < 8; v++)
		vm->vcpus[v].node = 1;
	vm->resident[0] = vm->resident[1] = 10 * GIB;
	vm->resident[2] = 4 * GIB;
	hw->other_mib[0] = 16 * GIB - 10 * GIB - (uint64_t)head - 300;
	hw->other_mib[1] = 16 * GIB - 10 * GIB - (uint64_t)head - 200;
	for (int r = 0; r < 20; r++) {
		const struct plan *plan = hw_decide(hw);

		for (int n = 0; n < 3; n++) {
			int64_t room = (int64_t)hw->snap->nodes[n].mem_free_mib - head;

			assert_true((int64_t)plan_moved_into(plan, n) <= (room > 0 ? room : 0));
		}
		total += plan_moved_mib(plan, -1);
		hw_apply(hw);
	}
	assert_true(total >= 500 - 4 && total <= 500); /* moves are in even MiB */
	assert_true((int64_t)hw_node_free(hw, 0) >= head);
	assert_true((int64_t)hw_node_free(hw, 1) >= head);
}

/*
 * nr_vms VMs of 2 vCPUs on node 0, confined there by policy, with all their memory on node 1:
 * each wants to move far more than one round's budget.
 */
static struct hw *
scene_memory_home(int nr_vms, uint64_t mem_mib)
{
	struct hw *hw = hw_new(2, 8, 64 * GIB);

	for (int i = 0; i < nr_vms; i++) {
		struct hw_vm *vm = hw_vm_add(hw, 2, mem_mib, 0, 100);

		vm->resident[0] = 0;
		vm->resident[1] = mem_mib;
		vm->policy.nodes = nodemask_of(0);
	}
	return hw;
}

/* Rule: the moves of one round never total more than ENGINE_RATE_MIB_S x the sample period. */
static void
test_guard_host_rate(void **state)
{
	struct hw *hw = *state = scene_memory_home(3, 8 * GIB);
	const double cap = ENGINE_RATE_MIB_S * ENGINE_SAMPLE_PERIOD_S;

	for (int r = 0; r < 10; r++) {
		uint64_t mib = plan_moved_mib(hw_step(hw), -1);

		assert_true((double)mib <= cap);
		assert_true((double)mib >= cap - 2); /* and the budget is used */
	}
}

/*
 * Rule: a residency figure's error bound does not stop moves (the migrator moves only what it
 * finds).  A VM homed on node
 * 0 has 300 MiB left on node 1: all of it moves whatever the bound.
 */
static void
test_guard_resident_err(void **state)
{
	static const uint64_t err_mib[] = {0, 100, 400};

	(void)state;
	for (size_t i = 0; i < sizeof(err_mib) / sizeof(err_mib[0]); i++) {
		struct hw *hw = scene_memory_home(1, 8 * GIB);
		uint64_t total = 0;

		hw->vms[0].resident[0] = 8 * GIB - 300;
		hw->vms[0].resident[1] = 300;
		hw->vms[0].resident_err_mib = err_mib[i];
		for (int r = 0; r < 6; r++)
			total += plan_moved_mib(hw_step(hw), -1);
		assert_true(total >= 300 - 4 && total <= 300); /* moves are in even MiB */
		hw_free(hw);
	}
}

/*
 * Rule: a node's projected room counts each VM's residency as its figure less the error
 * bound: with a bound of 100 MiB both the VM's home (memory still to come) and the node it
 * leaves (memory freed) have 100 MiB less room.
 */
static void
test_room_resident_err(void **state)
{
	struct hw *hw = *state = scene_memory_home(1, 8 * GIB);
	int64_t room[2][2];

	hw->vms[0].resident[0] = 8 * GIB - 300;
	hw->vms[0].resident[1] = 300;
	hw_step(hw); /* places the VM */
	for (int i = 0; i < 2; i++) {
		hw->snap->vms[0].resident_err_mib = i == 0 ? 0 : 100;
		engine_nodes_init(hw->engine, hw->snap);
		for (int n = 0; n < 2; n++)
			room[i][n] = engine_room_mib(hw->engine, hw->snap, n, false);
	}
	assert_true(room[0][0] - room[1][0] == 100);
	assert_true(room[0][1] - room[1][1] == 100);
}

/* What surely sits on a node: the figure less its bound, never below 0. */
static void
test_resident_sure(void **state)
{
	uint64_t res[2] = {300, 50};
	struct snap_vm vm = {.resident_mib = res, .resident_err_mib = 100};

	(void)state;
	assert_int_equal(snap_vm_resident_sure_mib(&vm, 0), 200);
	assert_int_equal(snap_vm_resident_sure_mib(&vm, 1), 0);
	vm.resident_err_mib = 0;
	assert_int_equal(snap_vm_resident_sure_mib(&vm, 1), 50);
}

/* Rule: a VM's policy rate caps its own moves; others use the rest of the budget. */
static void
test_guard_vm_rate(void **state)
{
	struct hw *hw = *state = scene_memory_home(2, 8 * GIB);

	hw->vms[0].policy.rate_kib_s = 100 * 1024; /* 100 MiB/s */
	for (int r = 0; r < 8; r++) {              /* the other VM's 8 GiB take 9 rounds */
		const struct plan *plan = hw_step(hw);

		assert_true(plan_moved_mib(plan, hw->vms[0].id) <= 100);
		assert_true(plan_moved_mib(plan, hw->vms[0].id) >= 98);
		assert_true(plan_moved_mib(plan, hw->vms[1].id) >= 900);
	}
}

/*
 * Rule: a VM's policy rate caps all of its moves in a round, however many groups it has.  A
 * VM with two cells homed on nodes 0 and 1 (its policy) has all its memory on node 2.
 *
 * Written against a bug, since fixed: engine_plan_compact() computes the
 * allowance (engine_vm_allowance) afresh for each group, so a VM with N cells moves up to N
 * times its policy rate per round (here 200 MiB at rate 100 MiB/s).
 */
static void
test_guard_vm_rate_cells(void **state)
{
	struct hw *hw = *state = hw_new(3, 8, 64 * GIB);
	struct hw_vm *vm = hw_vm_add_cells(hw, 4, 8 * GIB, 0, 100, 2);
	uint64_t total = 0;

	vm->policy.nodes = nodemask_of(0) | nodemask_of(1);
	vm->policy.rate_kib_s = 100 * 1024;
	vm->vcpus[2].node = vm->vcpus[3].node = 1;
	vm->resident[0] = 0;
	vm->resident[2] = 8 * GIB;
	for (int r = 0; r < 8; r++) {
		const struct plan *plan = hw_step(hw);
		uint64_t mib = plan_moved_mib(plan, vm->id);

		/* each move names the cell whose range it takes */
		for (size_t i = 0; i < plan->nr_moves; i++) {
			const struct plan_mem_move *mv = &plan->moves[i];
			char want[32];

			snprintf(want, sizeof(want), " cell %d: ", mv->start_mib == 0 ? 0 : 1);
			if (strstr(mv->why.text, want) == NULL)
				fail_msg("move of [%llu, +%llu) MiB: \"%s\"",
				         (unsigned long long)mv->start_mib,
				         (unsigned long long)mv->len_mib, mv->why.text);
		}
		if (mib > 100)
			print_error("round %d: %llu MiB moved at a rate of 100 MiB/s\n", r,
			            (unsigned long long)mib);
		assert_true(mib <= 100);
		total += mib;
	}
	assert_true(total > 0);
}

/*
 * Rule: with each cell's residency measured, memory is planned per cell.  A VM with two cells
 * homed on nodes 0 and 1 has 160 + 160 MiB per node, right for the VM, but cell 0 holds
 * 16 MiB on node 1 and cell 1 holds 16 MiB on node 0 (the 4-node system test's end state).
 * A VM-wide figure shows nothing to move; the per-cell one moves each cell's share home, and
 * only its own range.
 */
static void
test_memory_cells_crossed(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 16 * GIB);
	struct hw_vm *vm = hw_vm_add_cells(hw, 4, 320, 0, 100, 2);
	uint64_t moved = 0;

	vm->vcpus[2].node = vm->vcpus[3].node = 1;
	vm->resident[0] = vm->resident[1] = 160;
	vm->cell_resident[0][0] = 144;
	vm->cell_resident[0][1] = 16;
	vm->cell_resident[1][0] = 16;
	vm->cell_resident[1][1] = 144;
	/* the VM-wide figure alone: settled, nothing moves */
	for (int r = 0; r < 10; r++)
		moved += plan_moved_mib(hw_step(hw), vm->id);
	assert_int_equal(moved, 0);
	assert_int_equal(vm->vcpus[0].node, 0); /* each cell's vCPUs stay where its RAM is */
	assert_int_equal(vm->vcpus[1].node, 0);
	assert_int_equal(vm->vcpus[2].node, 1);
	assert_int_equal(vm->vcpus[3].node, 1);
	/* measured per cell: each cell's share goes home, in the cell's own range */
	vm->cells_measured = true;
	for (int r = 0; r < 20; r++) {
		const struct plan *plan = hw_step(hw);

		for (size_t i = 0; i < plan->nr_moves; i++) {
			const struct plan_mem_move *mv = &plan->moves[i];
			int c = mv->start_mib == 0 ? 0 : 1;

			assert_int_equal(mv->start_mib, vm->cells[c].mem_start_mib);
			assert_int_equal(mv->len_mib, vm->cells[c].mem_mib);
			assert_int_equal(mv->to_node, c);
		}
		moved += plan_moved_mib(plan, vm->id);
	}
	assert_int_equal(vm->cell_resident[0][1], 0);
	assert_int_equal(vm->cell_resident[1][0], 0);
	assert_int_equal(vm->resident[0], 160);
	assert_int_equal(moved, 32);
}

/*
 * Rule: a measured cell's own memory counts where it is when its home is chosen.  Two 16-GiB
 * nodes, each with 3 GiB free besides one cell of 6 GiB of a two-cell VM (cell 0 on node 0,
 * cell 1 on node 1, vCPUs floating the other way): each cell's home is where its memory is (no
 * node has 6 GiB free for a cell that brought none), and nothing moves.  Without the per-cell
 * figure neither cell fits a node.
 */
static void
test_home_cells_where_memory_is(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 16 * GIB);
	struct hw_vm *vm = hw_vm_add_cells(hw, 4, 12 * GIB, 0, 100, 2);
	uint64_t moved = 0;

	vm->resident[0] = vm->resident[1] = 6 * GIB;
	vm->cells_measured = true;
	vm->cell_resident[0][0] = 6 * GIB;
	vm->cell_resident[1][1] = 6 * GIB;
	for (int v = 0; v < 4; v++)
		vm->vcpus[v].node = v < 2 ? 1 : 0; /* each cell's vCPUs on the other cell's node */
	hw->other_mib[0] = hw->other_mib[1] = 7 * GIB;
	for (int r = 0; r < 20; r++)
		moved += plan_moved_mib(hw_step(hw), vm->id);
	assert_int_equal(moved, 0);
	assert_int_equal(vm->vcpus[0].node, 0);
	assert_int_equal(vm->vcpus[1].node, 0);
	assert_int_equal(vm->vcpus[2].node, 1);
	assert_int_equal(vm->vcpus[3].node, 1);
}

/* Rule: migrate='no' means the VM's memory is never moved. */
static void
test_guard_migrate_no(void **state)
{
	struct hw *hw = *state = scene_memory_home(2, 8 * GIB);
	uint64_t other = 0;

	hw->vms[0].policy.migrate = false;
	for (int r = 0; r < 20; r++) {
		const struct plan *plan = hw_step(hw);

		assert_int_equal(plan_moved_mib(plan, hw->vms[0].id), 0);
		other += plan_moved_mib(plan, hw->vms[1].id);
	}
	assert_int_equal(hw->vms[0].resident[1], 8 * GIB);
	assert_true(other > 0);
}

/*
 * Rule: a VM whose memory is pinned (VmPin: an assigned device) gets no memory moves, and its
 * vCPUs go where the memory is; a little pinned memory (registered buffers) changes nothing.
 */
static void
test_guard_pinned_memory(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 64 * GIB);
	struct hw_vm *pinned = hw_vm_add(hw, 2, 8 * GIB, 0, 100);
	struct hw_vm *some = hw_vm_add(hw, 2, 8 * GIB, 0, 100);
	struct hw_vm *busy = hw_vm_add(hw, 6, 4 * GIB, 1, 100);
	uint64_t moved_some = 0;

	/*
	 * Both VMs run on node 0 with their memory on node 1, where a busy VM leaves two CPUs:
	 * the engine would home both on node 0 and move their memory there.
	 */
	for (int i = 0; i < 2; i++) {
		hw->vms[i].resident[0] = 0;
		hw->vms[i].resident[1] = 8 * GIB;
	}
	busy->policy.nodes = nodemask_of(1);
	pinned->pinned_mib = 8 * GIB;
	some->pinned_mib = 64; /* under ENGINE_PINNED_PERMILLE of 8 GiB */
	for (int r = 0; r < 30; r++) {
		const struct plan *plan = hw_step(hw);

		assert_int_equal(plan_moved_mib(plan, pinned->id), 0);
		moved_some += plan_moved_mib(plan, some->id);
	}
	assert_int_equal(pinned->resident[1], 8 * GIB);
	assert_int_equal(pinned->vcpus[0].node, 1);
	assert_int_equal(pinned->vcpus[1].node, 1);
	assert_true(moved_some > 0);
	assert_true(engine_vm_mem_pinned(&(struct snap_vm){.mem_mib = 1000, .pinned_mib = 500}));
	assert_false(engine_vm_mem_pinned(&(struct snap_vm){.mem_mib = 1000, .pinned_mib = 499}));
	assert_false(engine_vm_mem_pinned(&(struct snap_vm){.mem_mib = 1000}));
}

/*
 * Rule: memory is a hard limit for home choice, so a VM homed on a node where its memory just
 * fits (above the headroom) still gets that memory moved home.
 *
 * Written against a bug, since fixed: engine_nodes_account_vm() subtracts
 * every placed VM's outstanding need (home share - resident there) from the node's free
 * memory, including the moving VM's own, and engine_emit_move() then caps the VM's moves into
 * its home by that leftover; the VM's own reservation blocks its own moves, forever when the
 * leftover is under 2 MiB.
 */
static void
test_memory_exact_fit(void **state)
{
	struct hw *hw = *state = scene_memory_home(1, 8 * GIB);
	struct hw_vm *vm = &hw->vms[0];

	/* Node 0 has exactly the VM's 8 GiB free above its headroom. */
	hw->other_mib[0] = 64 * GIB - 8 * GIB - (uint64_t)hw_headroom_mib(hw);
	run_until(hw, hw->now_s + 60);
	if (vm->resident[0] != 8 * GIB)
		print_error("after 60 s: %llu of 8192 MiB home\n",
		            (unsigned long long)vm->resident[0]);
	assert_int_equal(vm->resident[0], 8 * GIB);
}

/* ---- 8. back-off ------------------------------------------------------------------- */

/* Rounds from now on in which the VM gets moves, as a bitmask of the next nr rounds. */
static uint64_t
move_rounds(struct hw *hw, int vm_id, int nr)
{
	uint64_t bits = 0;

	for (int r = 0; r < nr; r++)
		if (plan_moved_mib(hw_step(hw), vm_id) > 0)
			bits |= (uint64_t)1 << r;
	return bits;
}

/*
 * Rule: after a round whose snapshot reports mig_failed_mib > 0, no moves for the VM for
 * ENGINE_BACKOFF_BASE_S, doubled on the next failure; a success resets it.
 */
static void
test_backoff(void **state)
{
	struct hw *hw = *state = scene_memory_home(1, 32 * GIB);
	struct hw_vm *vm = &hw->vms[0];
	const int base = (int)ENGINE_BACKOFF_BASE_S;

	/* Round 0 plans moves; the host refuses them; round 1 reports the failure. */
	vm->moves_fail = true;
	assert_int_equal(move_rounds(hw, vm->id, 1), 1);
	/* Rounds 1..base: nothing; then moves again (refused again). */
	assert_int_equal(move_rounds(hw, vm->id, base + 1), (uint64_t)1 << base);
	/* Second failure in a row: twice as long. */
	assert_int_equal(move_rounds(hw, vm->id, 2 * base + 1), (uint64_t)1 << (2 * base));
	/* The host accepts the retry after a third failure in a row (four times as long)... */
	vm->moves_fail = false;
	assert_int_equal(move_rounds(hw, vm->id, 4 * base + 1), (uint64_t)1 << (4 * base));
	/* ... and a success resets the back-off: moves every round, */
	assert_int_equal(move_rounds(hw, vm->id, 5), 0x1f);
	/* and a new failure waits the base time again. */
	vm->moves_fail = true;
	assert_int_equal(move_rounds(hw, vm->id, base + 2), 1 | ((uint64_t)1 << (base + 1)));
}

/* ---- 9. sampling ------------------------------------------------------------------- */

/* Track a VM's intensity over rounds: the last value the engine asked for. */
static double
sampling_now(const struct plan *plan, int vm_id, double prev)
{
	double v;

	return plan_find_sampling(plan, vm_id, &v) ? v : prev;
}

/*
 * Rule: a settled compact VM (vCPUs and memory all home) is parked at intensity 0 and stays
 * there; one whose memory cannot come home (migrate='no') is not.
 */
static void
test_sampling_parked(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 16 * GIB);
	struct hw_vm *home = hw_vm_add(hw, 2, 4 * GIB, 0, 100);
	struct hw_vm *away = hw_vm_add(hw, 2, 4 * GIB, 1, 100);
	double v;

	away->policy.nodes = nodemask_of(1);
	away->policy.migrate = false;
	away->resident[1] = 0;
	away->resident[0] = 4 * GIB;
	for (int r = 0; r < 20; r++) {
		const struct plan *plan = hw_step(hw);

		if (r == 0) {
			assert_true(plan_find_sampling(plan, home->id, &v));
			assert_true(v == 0);
			assert_true(plan_find_sampling(plan, away->id, &v));
			assert_true(v >= ENGINE_SCAN_FLOOR_MIB_S);
		} else if (plan_find_sampling(plan, home->id, &v)) {
			fail_msg("parked VM unparked at round %d (%.0f MiB/s)", r, v);
		} else if (plan_find_sampling(plan, away->id, &v)) {
			assert_true(v >= ENGINE_SCAN_FLOOR_MIB_S);
		}
	}
}

/*
 * Rule: an unconverged VM's intensity rises round by round up to ENGINE_SCAN_CEIL_MIB_S; a
 * converged one's falls, never below ENGINE_SCAN_FLOOR_MIB_S unless parked.  Big: 64 GiB, 90 %
 * of it (95 % of its faults) on its home node, migrate='no' so it never settles; small: 1 GiB,
 * the same.  First both are converged (intensity falls), then big's faults move away.
 */
static void
test_sampling_rise_and_floor(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 128 * GIB);
	struct hw_vm *big = hw_vm_add(hw, 4, 64 * GIB, 0, 100);
	struct hw_vm *small = hw_vm_add(hw, 2, 1 * GIB, 0, 100);
	double sb = -1, ss = -1, prev;
	int rises = 0;

	for (int i = 0; i < 2; i++) {
		struct hw_vm *vm = &hw->vms[i];

		vm->policy.migrate = false;
		vm->resident[1] = vm->mem_mib / 10;
		vm->resident[0] = vm->mem_mib - vm->resident[1];
		for (int v = 0; v < vm->nr_vcpus; v++) {
			vm->vcpus[v].faults[0] = 19000;
			vm->vcpus[v].faults[1] = 1000;
		}
	}
	for (int r = 0; r < 12; r++) {
		const struct plan *plan = hw_step(hw);

		prev = sb;
		sb = sampling_now(plan, big->id, sb);
		ss = sampling_now(plan, small->id, ss);
		assert_true(ss >= ENGINE_SCAN_FLOOR_MIB_S && sb >= ENGINE_SCAN_FLOOR_MIB_S);
		assert_true(r == 0 || sb <= prev);
	}
	assert_true(ss == ENGINE_SCAN_FLOOR_MIB_S);
	assert_true(sb <= 64 * GIB / ENGINE_SCAN_PASS_MAX_S);
	for (int v = 0; v < big->nr_vcpus; v++) {
		big->vcpus[v].faults[0] = 1000;
		big->vcpus[v].faults[1] = 19000;
	}
	for (int r = 0; r < 12; r++) {
		prev = sb;
		sb = sampling_now(hw_step(hw), big->id, sb);
		assert_true(sb >= prev && sb <= ENGINE_SCAN_CEIL_MIB_S);
		rises += sb > prev;
		if (sb < ENGINE_SCAN_CEIL_MIB_S)
			assert_true(sb == 2 * prev); /* the pass time halves each round */
	}
	assert_true(sb == ENGINE_SCAN_CEIL_MIB_S);
	assert_true(rises >= 4);
}

/* Rule: a failed migration lowers the intensity (doubles the pass time) for that round. */
static void
test_sampling_failure_lowers(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 64 * GIB);
	struct hw_vm *vm = hw_vm_add(hw, 4, 8 * GIB, 0, 100);
	double s = -1, before;

	vm->faults = HW_FAULTS_SET; /* faults spread evenly: unconverged */
	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpus[v].faults[0] = vm->vcpus[v].faults[1] = 10000;
	vm->resident[0] = vm->resident[1] = 4 * GIB;
	vm->policy.migrate = false;
	for (int r = 0; r < 5; r++)
		s = sampling_now(hw_step(hw), vm->id, s);
	before = s;
	assert_true(before > ENGINE_SCAN_FLOOR_MIB_S);
	vm->failed_mib = 256;
	s = sampling_now(hw_step(hw), vm->id, s);
	assert_true(s < before);
	assert_true(s >= ENGINE_SCAN_FLOOR_MIB_S);
}

/* Rule: manual VMs are sampled at the floor, VMs with mode off not at all. */
static void
test_sampling_manual_off(void **state)
{
	struct hw *hw = *state = hw_new(2, 8, 64 * GIB);
	struct hw_vm *manual = hw_vm_add(hw, 4, 8 * GIB, 0, 100);
	struct hw_vm *off = hw_vm_add(hw, 4, 8 * GIB, 1, 100);
	double sm = -1, so = -1;

	manual->policy.mode = VM_POLICY_MODE_MANUAL;
	off->policy.mode = VM_POLICY_MODE_OFF;
	manual->vcpus[0].node = 1; /* neither settled nor converged: no reason for 0 */
	off->vcpus[0].node = 0;
	for (int r = 0; r < 10; r++) {
		const struct plan *plan = hw_step(hw);

		sm = sampling_now(plan, manual->id, sm);
		so = sampling_now(plan, off->id, so);
		assert_true(sm == ENGINE_SCAN_FLOOR_MIB_S);
		assert_true(so == 0);
	}
}

/* ---- 10. modes and policy nodes ---------------------------------------------------- */

/*
 * vms[0]: arriving, vms[1]: running with one stray vCPU and half its memory on node 1, both of
 * the given mode; vms[2] and vms[3] the same in mode auto, to show the scene calls for action.
 */
static struct hw *
scene_modes(enum vm_policy_mode mode)
{
	struct hw *hw = hw_new(2, 8, 32 * GIB);

	for (int i = 0; i < 4; i++) {
		struct hw_vm *vm = hw_vm_add(hw, 4, 4 * GIB, 0, i % 2 ? 100 : 0);

		vm->policy.mode = i < 2 ? mode : VM_POLICY_MODE_AUTO;
		if (i % 2) {
			vm->vcpus[3].node = 1;
			vm->resident[0] = vm->resident[1] = 2 * GIB;
		}
	}
	return hw;
}

/*
 * Over 40 rounds the mode's VMs get no pin, move or bind (but are sampled, at want_scan if
 * >= 0); the auto ones in the same situations do get them.
 */
static void
check_hands_off(void **state, enum vm_policy_mode mode, double want_scan)
{
	struct hw *hw = *state = scene_modes(mode);
	int acts[4] = {0};
	bool sampled[2] = {false, false};

	for (int r = 0; r < 40; r++) {
		const struct plan *plan = hw_step(hw);

		for (int i = 0; i < 4; i++) {
			int id = hw->vms[i].id;
			double s;

			acts[i] += plan_count_pins(plan, id) + plan_count_binds(plan, id) +
			           (plan_moved_mib(plan, id) > 0);
			if (i < 2 && plan_find_sampling(plan, id, &s)) {
				sampled[i] = true;
				if (want_scan >= 0)
					assert_true(s == want_scan);
			}
		}
	}
	assert_int_equal(acts[0], 0);
	assert_int_equal(acts[1], 0);
	assert_true(acts[2] >= 5 && acts[3] >= 2); /* 4 pins + a bind; a pin + moves */
	assert_true(sampled[0] && sampled[1]);
	/* Its vCPUs were left where they were, with the affinity they had. */
	assert_int_equal(hw->vms[1].vcpus[3].node, 1);
	assert_int_equal(hw->vms[1].vcpus[3].allowed, NODEMASK_ALL);
	assert_int_equal(hw->vms[1].resident[1], 2 * GIB);
}

/* Rule: advisory computes (and samples) but emits no pins, moves or binds. */
static void
test_mode_advisory(void **state)
{
	check_hands_off(state, VM_POLICY_MODE_ADVISORY, -1);
}

/* Rule: manual VMs are never touched (the admin's pins stand). */
static void
test_mode_manual(void **state)
{
	check_hands_off(state, VM_POLICY_MODE_MANUAL, ENGINE_SCAN_FLOOR_MIB_S);
}

/* Rule: VMs with mode off are ignored. */
static void
test_mode_off(void **state)
{
	check_hands_off(state, VM_POLICY_MODE_OFF, 0);
}

/* Is every action of the plan for vm inside its policy nodes? */
static void
assert_within_policy(const struct plan *plan, const struct hw_vm *vm)
{
	uint64_t allowed = vm->policy.nodes;

	for (size_t i = 0; i < plan->nr_pins; i++)
		if (plan->pins[i].vm_id == vm->id)
			assert_true((plan->pins[i].nodes & ~allowed) == 0);
	for (size_t i = 0; i < plan->nr_moves; i++)
		if (plan->moves[i].vm_id == vm->id)
			assert_true(nodemask_test(allowed, plan->moves[i].to_node));
	for (size_t i = 0; i < plan->nr_binds; i++)
		if (plan->binds[i].vm_id == vm->id)
			assert_true((plan->binds[i].nodes & ~allowed) == 0);
}

/*
 * Rule: a policy node list is never left, and a VM outside it is brought in.  P (nodes 1-2)
 * runs on node 0 with memory on nodes 0 and 3; Q (node 3) arrives running on node 0.
 */
static void
test_mode_policy_nodes(void **state)
{
	struct hw *hw = *state = host_4node_pairs();
	struct hw_vm *p = hw_vm_add(hw, 4, 4 * GIB, 0, 100);
	struct hw_vm *q = hw_vm_add(hw, 2, 2 * GIB, 0, 0);

	p->policy.nodes = nodemask_of(1) | nodemask_of(2);
	p->resident[0] = p->resident[3] = 2 * GIB;
	q->policy.nodes = nodemask_of(3);
	for (int r = 0; r < 40; r++) {
		const struct plan *plan = hw_decide(hw);

		assert_within_policy(plan, p);
		assert_within_policy(plan, q);
		hw_apply(hw);
	}
	assert_true((hw_vm_vcpu_nodes(p) & ~p->policy.nodes) == 0);
	assert_int_equal(p->resident[0] + p->resident[3], 0);
	assert_int_equal(hw_vm_vcpu_nodes(q), nodemask_of(3));
	assert_int_equal(q->resident[3], 2 * GIB);
}

/* ---- randomized worlds (10, 7, 11, 12) --------------------------------------------- */

#define RANDOM_SEEDS  30
#define RANDOM_ROUNDS 90

static uint64_t
seed_from_env(void)
{
	const char *s = getenv("VNUMAD_TEST_SEED");

	return s ? strtoull(s, NULL, 0) : 0;
}

/* Run random worlds and check every round's plan; print the seed of a failing one. */
static void
run_random(void **state, hw_check_fn check)
{
	uint64_t one = seed_from_env();
	char msg[256];

	for (uint64_t seed = one ? one : 1; seed <= (one ? one : RANDOM_SEEDS); seed++) {
		struct util_rng rng;
		struct hw *hw;

		util_rng_seed(&rng, seed, 11);
		hw = *state = hw_random_world(&rng);
		for (int r = 0; r < RANDOM_ROUNDS; r++) {
			const char *bad;

			hw_decide(hw);
			bad = check(hw, msg, sizeof(msg));
			if (bad != NULL)
				fail_msg("seed %llu (VNUMAD_TEST_SEED=%llu), round %d, t=%.0f: %s",
				         (unsigned long long)seed, (unsigned long long)seed, r,
				         hw->now_s, bad);
			hw_apply(hw);
			hw_random_events(hw, &rng);
		}
		hw_free(hw);
		*state = NULL;
	}
}

/*
 * Rule: in random worlds, round after round, only auto VMs get pins, moves or binds, moves only
 * for VMs with migrate='yes', and nothing goes to a node outside the VM's policy nodes (which
 * the worlds edit now and then).
 */
static void
test_random_policy(void **state)
{
	run_random(state, hw_check_policy);
}

/*
 * Rule: in random worlds, no round plans memory into a node beyond its headroom, more than the
 * host-wide rate, more than a VM's policy rate, or more than a node holds of the VM.
 */
static void
test_random_guards(void **state)
{
	run_random(state, hw_check_guards);
}

/*
 * Rule: in random worlds, intensities are 0 or within [floor, ceiling] (manual: the floor, off:
 * 0), and every flip is a linked pair of PLAN_PIN_FLIP entries.
 */
static void
test_random_sampling_flips(void **state)
{
	run_random(state, hw_check_sampling_flips);
}

/* ---- 11. explanations -------------------------------------------------------------- */

/*
 * Rule: every pin, move and bind carries a non-empty rule and text: in the worked example with
 * an arrival (flips, moves, binds all occur) and in random worlds.
 */
static void
test_reasons(void **state)
{
	struct hw *hw = *state = scene_numacore();
	struct hw_vm *arriving = hw_vm_add(hw, 2, 2 * GIB, 0, 0);
	char msg[128];
	size_t pins = 0, moves = 0, binds = 0;

	arriving->start_s = hw->now_s + 3;
	for (int r = 0; r < 20; r++) {
		const struct plan *plan = hw_decide(hw);

		assert_null(hw_check_reasons(hw, msg, sizeof(msg)));
		pins += plan->nr_pins;
		moves += plan->nr_moves;
		binds += plan->nr_binds;
		hw_apply(hw);
	}
	assert_true(pins > 0 && moves > 0 && binds > 0);
	hw_free(hw);
	*state = NULL;
	run_random(state, hw_check_reasons);
}

/* ---- 12. determinism --------------------------------------------------------------- */

struct bytes {
	unsigned char *p;
	size_t len, cap;
};

static void
bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	util_array_reserve((void **)&b->p, &b->cap, b->len + n, 1);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void
plan_serialize(struct bytes *b, const struct plan *plan)
{
	bytes_add(b, &plan->nr_pins, sizeof(plan->nr_pins));
	bytes_add(b, plan->pins, plan->nr_pins * sizeof(*plan->pins));
	bytes_add(b, &plan->nr_moves, sizeof(plan->nr_moves));
	bytes_add(b, plan->moves, plan->nr_moves * sizeof(*plan->moves));
	bytes_add(b, &plan->nr_binds, sizeof(plan->nr_binds));
	bytes_add(b, plan->binds, plan->nr_binds * sizeof(*plan->binds));
	bytes_add(b, &plan->nr_samplings, sizeof(plan->nr_samplings));
	bytes_add(b, plan->samplings, plan->nr_samplings * sizeof(*plan->samplings));
	bytes_add(b, &plan->next_call_s, sizeof(plan->next_call_s));
}

/* Every plan of a random world's run, serialized. */
static void
record_run(uint64_t seed, struct bytes *b)
{
	struct util_rng rng;
	struct hw *hw;

	util_rng_seed(&rng, seed, 11);
	hw = hw_random_world(&rng);
	for (int r = 0; r < RANDOM_ROUNDS; r++) {
		plan_serialize(b, hw_step(hw));
		hw_random_events(hw, &rng);
	}
	hw_free(hw);
}

/* Rule: the same snapshot sequence gives byte-identical plans. */
static void
test_determinism(void **state)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct bytes a = {0}, b = {0};

		record_run(seed, &a);
		record_run(seed, &b);
		bool same = a.len == b.len && memcmp(a.p, b.p, a.len) == 0;
		size_t len = a.len;

		free(a.p);
		free(b.p);
		if (!same)
			fail_msg("seed %llu: plans differ between two identical runs",
			         (unsigned long long)seed);
		assert_true(len > 1000); /* the runs did something */
	}
}

/* ---- the engine plans only what the host can do (lever parity) ------------------------- */

/* A VM arriving on a 2-node host (uptime 0, as on a host that tells of it before it boots). */
static void
tp_engine_arrival(unsigned caps, size_t *binds, size_t *samplings, unsigned *wanted)
{
	struct hw *hw = hw_new(2, 8, 16384);
	struct engine_vm_report r;
	struct hw_vm *vm = hw_vm_add(hw, 4, 4096, 1, 0);

	hw->caps = caps;
	*binds = 0;
	*samplings = 0;
	for (int i = 0; i < 5; i++) {
		hw_step(hw);
		*binds += hw->plan.nr_binds;
		*samplings += hw->plan.nr_samplings;
	}
	assert_int_equal(engine_report_vm(hw->engine, vm->id, &r), 0);
	*wanted = r.levers_wanted;
	hw_free(hw);
}

/*
 * With every lever the engine binds an arriving VM's RAM and sets its scan rate; on a host
 * without them (HW_CAPS_LINUX) it plans neither and reports what it wanted, for explain.
 */
static void
test_engine_plans_only_host_levers(void **state)
{
	size_t binds, samplings;
	unsigned wanted;

	(void)state;
	tp_engine_arrival(HOST_CAPS_LEVERS, &binds, &samplings, &wanted);
	assert_true(binds > 0);
	assert_true(samplings > 0);
	assert_int_equal(wanted, 0);
	tp_engine_arrival(HW_CAPS_LINUX, &binds, &samplings, &wanted);
	assert_int_equal(binds, 0);
	assert_int_equal(samplings, 0);
	assert_true(wanted & HOST_CAP_BIND_AT_START);
	assert_true(wanted & HOST_CAP_VM_SAMPLING);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    ENGINE_TEST(test_strength),
	    cmocka_unit_test(test_engine_plans_only_host_levers),
	    ENGINE_TEST(test_groups_per_cell),
	    ENGINE_TEST(test_groups_compact_one_group),
	    ENGINE_TEST(test_home_reservation),
	    ENGINE_TEST(test_home_afresh_when_handed_over),
	    ENGINE_TEST(test_home_memory_hard_cpu_soft),
	    ENGINE_TEST(test_home_span_closest),
	    ENGINE_TEST(test_home_policy_nodes),
	    ENGINE_TEST(test_spread_smallest_after_dwell),
	    ENGINE_TEST(test_spread_nowhere_to_go),
	    ENGINE_TEST(test_spread_evens_oversubscribed),
	    ENGINE_TEST(test_compress_free_cpu),
	    ENGINE_TEST(test_compress_no_more_crowded),
	    ENGINE_TEST(test_compress_flip_smaller),
	    ENGINE_TEST(test_compress_never_larger),
	    ENGINE_TEST(test_numacore_example),
	    ENGINE_TEST(test_numacore_end_state),
	    ENGINE_TEST(test_guard_headroom),
	    ENGINE_TEST(test_guard_host_rate),
	    ENGINE_TEST(test_guard_resident_err),
	    cmocka_unit_test(test_resident_sure),
	    ENGINE_TEST(test_room_resident_err),
	    ENGINE_TEST(test_guard_vm_rate),
	    ENGINE_TEST(test_guard_vm_rate_cells),
	    ENGINE_TEST(test_memory_cells_crossed),
	    ENGINE_TEST(test_home_cells_where_memory_is),
	    ENGINE_TEST(test_guard_migrate_no),
	    ENGINE_TEST(test_guard_pinned_memory),
	    ENGINE_TEST(test_memory_exact_fit),
	    ENGINE_TEST(test_backoff),
	    ENGINE_TEST(test_sampling_parked),
	    ENGINE_TEST(test_sampling_rise_and_floor),
	    ENGINE_TEST(test_sampling_failure_lowers),
	    ENGINE_TEST(test_sampling_manual_off),
	    ENGINE_TEST(test_mode_advisory),
	    ENGINE_TEST(test_mode_manual),
	    ENGINE_TEST(test_mode_off),
	    ENGINE_TEST(test_mode_policy_nodes),
	    ENGINE_TEST(test_random_policy),
	    ENGINE_TEST(test_random_guards),
	    ENGINE_TEST(test_random_sampling_flips),
	    ENGINE_TEST(test_reasons),
	    ENGINE_TEST(test_determinism),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

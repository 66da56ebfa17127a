/*
 * test_engine_reserve.c - advice held for VMs about to start (policy/engine_reserve.c,
 * `vnumactl place --reserve`, the numad shim): domains started at once each get room of their
 * own instead of all the same node; a VM of the held shape claims its hold when it appears
 * (counted once, not twice); a hold that no VM claims lapses after ENGINE_RESERVE_HOLD_S; a
 * VM of another shape claims nothing.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"
/* The harness is shared by several test files; this one uses only its world and rounds. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/unit/engine_harness.h"
#pragma GCC diagnostic pop

/* The engine's advice for a VM of vcpus and mem_mib on hw now, reserved when reserve. */
static uint64_t
advise(struct hw *hw, int vcpus, uint64_t mem_mib, bool reserve)
{
	uint64_t nodes = 0;
	char text[256];

	hw_build(hw);
	assert_int_equal(engine_advise(hw->engine, hw->snap, vcpus, mem_mib, 0, &nodes, NULL, text,
	                               sizeof(text)),
	                 0);
	if (reserve)
		assert_int_equal(engine_reserve(hw->engine, hw->now_s, nodes, vcpus, mem_mib), 0);
	return nodes;
}

/* Four 4-vCPU domains started at once on 4 nodes of 4 CPUs: one node each, not one for all. */
static void
test_burst_spreads(void **state)
{
	struct hw *hw = hw_new(4, 4, 64 * HW_GIB);
	uint64_t seen = 0;

	(void)state;
	hw_step(hw); /* a first round: the engine knows the host */
	/* without holds every answer is the same */
	assert_true(advise(hw, 4, 8 * HW_GIB, false) == advise(hw, 4, 8 * HW_GIB, false));
	for (int i = 0; i < 4; i++) {
		uint64_t n = advise(hw, 4, 8 * HW_GIB, true);

		assert_int_equal(nodemask_weight(n), 1);
		assert_false(seen & n);
		seen |= n;
	}
	assert_int_equal(engine_reserve_count(hw->engine), 4);
	hw_free(hw);
}

/* Memory too: a node that holds one such VM but not two sends the second elsewhere. */
static void
test_memory_held(void **state)
{
	struct hw *hw = hw_new(2, 16, 64 * HW_GIB);
	uint64_t a, b;

	(void)state;
	hw_step(hw);
	a = advise(hw, 1, 40 * HW_GIB, true);
	b = advise(hw, 1, 40 * HW_GIB, true);
	assert_int_equal(nodemask_weight(a), 1);
	assert_int_equal(nodemask_weight(b), 1);
	assert_true(a != b);
	hw_free(hw);
}

/* The VM arrives: its hold is claimed, and its node counts it once (the next advice agrees). */
static void
test_claim_on_arrival(void **state)
{
	struct hw *hw = hw_new(2, 4, 64 * HW_GIB);
	uint64_t first, other;
	struct hw_vm *vm;

	(void)state;
	hw_step(hw);
	first = advise(hw, 4, 8 * HW_GIB, true);
	/* a VM of another shape claims nothing */
	hw_vm_add(hw, 2, 4 * HW_GIB, 1, 0);
	hw_step(hw);
	assert_int_equal(engine_reserve_count(hw->engine), 1);
	/* the one it was for, with its RAM where libvirt bound it */
	vm = hw_vm_add(hw, 4, 8 * HW_GIB, nodemask_first(first), 0);
	(void)vm;
	hw_step(hw);
	assert_int_equal(engine_reserve_count(hw->engine), 0);
	/* the VM now stands for itself: a third 4-vCPU VM goes where neither is */
	other = advise(hw, 4, 8 * HW_GIB, false);
	assert_true(other != first);
	hw_free(hw);
}

/* A hold nobody claims lapses: after ENGINE_RESERVE_HOLD_S the node is free again. */
static void
test_hold_lapses(void **state)
{
	struct hw *hw = hw_new(2, 4, 64 * HW_GIB);
	uint64_t first;

	(void)state;
	hw_step(hw);
	first = advise(hw, 4, 8 * HW_GIB, true);
	assert_true(advise(hw, 4, 8 * HW_GIB, false) != first);
	hw->now_s += ENGINE_RESERVE_HOLD_S + 1;
	assert_true(advise(hw, 4, 8 * HW_GIB, false) == first);
	assert_int_equal(engine_reserve_count(hw->engine), 0);
	hw_free(hw);
}

/* Bad holds are refused; a full table drops its oldest. */
static void
test_bad_and_full(void **state)
{
	struct hw *hw = hw_new(2, 4, 64 * HW_GIB);

	(void)state;
	assert_int_equal(engine_reserve(hw->engine, 0, 0, 1, 1024), -EINVAL);
	assert_int_equal(engine_reserve(hw->engine, 0, 1, 0, 1024), -EINVAL);
	assert_int_equal(engine_reserve(hw->engine, 0, 1, 1, 0), -EINVAL);
	for (int i = 0; i < ENGINE_RESERVE_MAX + 5; i++)
		assert_int_equal(engine_reserve(hw->engine, hw->now_s, 1, 1, 2), 0);
	assert_int_equal(engine_reserve_count(hw->engine), ENGINE_RESERVE_MAX);
	hw_free(hw);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_burst_spreads),    cmocka_unit_test(test_memory_held),
	    cmocka_unit_test(test_claim_on_arrival), cmocka_unit_test(test_hold_lapses),
	    cmocka_unit_test(test_bad_and_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

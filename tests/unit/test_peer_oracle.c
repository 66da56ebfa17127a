/* test_peer_oracle.c - the oracle: its evaluator, its search and the plan it hands the sim. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/peer_oracle.h"
#include "host/sim/peers.h"
#include "host/sim/sim.h"
#include "tests/unit/oracle_test_util.h"
#include "policy/model.h"

/* Node holding guest MiB mib of a VM. */
static int
t_node_of_mib(const struct oracle_vm_binding *vb, uint64_t mib)
{
	for (int r = 0; r < vb->nr_ranges; r++)
		if (mib >= vb->ranges[r].start_mib &&
		    mib < vb->ranges[r].start_mib + vb->ranges[r].len_mib)
			return vb->ranges[r].node;
	return -1;
}

/* Every MiB of [start, start+len) lies on node. */
static void
t_assert_range_on(const struct oracle_vm_binding *vb, uint64_t start, uint64_t len, int node)
{
	for (int r = 0; r < vb->nr_ranges; r++) {
		const struct oracle_range *rg = &vb->ranges[r];

		if (rg->start_mib < start + len && rg->start_mib + rg->len_mib > start)
			assert_int_equal(rg->node, node);
	}
	assert_int_equal(t_node_of_mib(vb, start), node);
}

/* Two VMs that each fit a node but together oversubscribe one land on different nodes. */
static void
test_two_vms_split_across_nodes(void **state)
{
	struct scenario *s = t_scn(2, 8, 64, 600, NULL);
	struct oracle_binding *b;
	int a, c;

	t_vm(s, "a", 6, 8, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "b", 6, 8, SCN_WORKLOAD_SHARED);
	b = t_plan(s);
	a = t_single_node(&b->vms[0]);
	c = t_single_node(&b->vms[1]);
	assert_true(a >= 0 && c >= 0);
	assert_int_not_equal(a, c);
	assert_true(b->exhaustive);
	/* All local, nothing shared: 12 vCPU-seconds per second. */
	assert_true(fabs(b->throughput - 12.0 * 600) < 1e-6);
	oracle_binding_free(b);
	t_free(s);
}

/* A VM too big for one node spans the two closest nodes of a 10/21/31 host. */
static void
test_big_vm_spans_closest_nodes(void **state)
{
	static const int dist[16] = {10, 31, 31, 31, 31, 10, 21, 31,
	                             31, 21, 10, 31, 31, 31, 31, 10};
	struct scenario *s = t_scn(4, 8, 64, 600, dist);
	struct oracle_binding *b;
	uint64_t used = 0;

	t_vm(s, "big", 12, 24, SCN_WORKLOAD_PRIVATE);
	b = t_plan(s);
	for (int v = 0; v < 12; v++)
		used |= nodemask_of(b->vms[0].vcpu_node[v]);
	for (int r = 0; r < b->vms[0].nr_ranges; r++)
		used |= nodemask_of(b->vms[0].ranges[r].node);
	assert_int_equal(used, nodemask_of(1) | nodemask_of(2));
	oracle_binding_free(b);
	t_free(s);
}

/* A cells VM that fits no node gets one node per cell, its memory with it. */
static void
test_cells_vm_one_node_per_cell(void **state)
{
	struct scenario *s = t_scn(4, 8, 64, 600, NULL);
	static const double gib[4] = {4, 4, 4, 4};
	int cell_of[24], node_of_cell[4] = {-1, -1, -1, -1};
	uint64_t seen = 0;
	struct oracle_binding *b;
	struct scn_vm *vm;

	for (int v = 0; v < 24; v++)
		cell_of[v] = v % 4; /* interleaved, so cells are not vCPU blocks */
	vm = t_vm(s, "hpc", 24, 16, SCN_WORKLOAD_CELLS);
	t_cells(vm, 4, cell_of, gib);
	b = t_plan(s);
	for (int v = 0; v < 24; v++) {
		int c = cell_of[v];

		if (node_of_cell[c] < 0)
			node_of_cell[c] = b->vms[0].vcpu_node[v];
		assert_int_equal(b->vms[0].vcpu_node[v], node_of_cell[c]);
	}
	for (int c = 0; c < 4; c++) {
		uint64_t start, len;

		assert_false(seen & nodemask_of(node_of_cell[c]));
		seen |= nodemask_of(node_of_cell[c]);
		oracle_vm_slice_range(&s->vms[0], c, &start, &len);
		assert_int_equal(len, 4096);
		t_assert_range_on(&b->vms[0], start, len, node_of_cell[c]);
	}
	oracle_binding_free(b);
	t_free(s);
}

/* A private VM spanning two nodes keeps each vCPU's slice on that vCPU's node. */
static void
test_private_span_keeps_slices_local(void **state)
{
	struct scenario *s = t_scn(2, 4, 64, 600, NULL);
	struct oracle_binding *b;
	uint64_t used = 0;

	t_vm(s, "p", 8, 16, SCN_WORKLOAD_PRIVATE);
	b = t_plan(s);
	for (int v = 0; v < 8; v++) {
		uint64_t start, len;

		oracle_vm_slice_range(&s->vms[0], v, &start, &len);
		assert_int_equal(len, 2048);
		t_assert_range_on(&b->vms[0], start, len, b->vms[0].vcpu_node[v]);
		used |= nodemask_of(b->vms[0].vcpu_node[v]);
	}
	assert_int_equal(used, 3);
	oracle_binding_free(b);
	t_free(s);
}

/* MiB of the scenario's VMs present at t on node, under b (independent of the evaluator). */
static uint64_t
t_node_mib_at(const struct scenario *s, const struct oracle_binding *b, int node, double t)
{
	uint64_t sum = 0;

	for (int i = 0; i < s->nr_vms; i++) {
		double stop = s->vms[i].stop_s < 0 ? s->duration_s : s->vms[i].stop_s;

		if (t < s->vms[i].start_s || t > stop)
			continue;
		for (int r = 0; r < b->vms[i].nr_ranges; r++)
			if (b->vms[i].ranges[r].node == node)
				sum += b->vms[i].ranges[r].len_mib;
	}
	return sum;
}

/* Memory never exceeds a node, even when the last VM only fits split across two. */
static void
test_memory_never_exceeds_a_node(void **state)
{
	struct scenario *s = t_scn(2, 16, 17, 600, NULL);
	uint64_t cap = 17 * 1024 - SIM_MIN_FREE_MIB, total = 0;
	struct oracle_binding *b;

	t_vm(s, "a", 2, 10, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "b", 2, 10, SCN_WORKLOAD_SHARED);
	t_vm(s, "c", 2, 10, SCN_WORKLOAD_PRIVATE)->start_s = 100;
	t_vm(s, "d", 1, 3, SCN_WORKLOAD_IDLE)->start_s = 200;
	b = t_plan(s);
	assert_false(b->overcommit);
	assert_int_equal(oracle_binding_overfill_mib(s, b), 0);
	for (double t = 0; t <= 600; t += 50)
		for (int n = 0; n < 2; n++)
			assert_true(t_node_mib_at(s, b, n, t) <= cap);
	for (int n = 0; n < 2; n++)
		total += t_node_mib_at(s, b, n, 300);
	assert_int_equal(total, 33 * 1024); /* everything placed */
	oracle_binding_free(b);
	t_free(s);
}

/* On a tiny case the search equals a brute force over every vCPU and slice placement. */
static void
test_search_equals_brute_force(void **state)
{
	struct scenario *s = t_scn(2, 3, 8, 600, NULL);
	struct oracle_binding *b, *x;
	double best = -1;

	t_vm(s, "a", 2, 1, SCN_WORKLOAD_PRIVATE)->mem_intensity = 0.3;
	t_vm(s, "b", 2, 1, SCN_WORKLOAD_PRIVATE)->mem_intensity = 0.6;
	t_vm(s, "c", 2, 1, SCN_WORKLOAD_PRIVATE)->mem_intensity = 0.9;
	s->vms[2].start_s = 100;
	s->vms[2].stop_s = 450;
	b = t_plan(s);
	x = oracle_binding_new(s);
	for (unsigned code = 0; code < 4096; code++) {
		double w;

		for (int i = 0; i < 3; i++)
			t_bind_bits(s, x, i, (code >> (4 * i)) & 3, (code >> (4 * i + 2)) & 3);
		w = oracle_binding_throughput(s, x);
		assert_true(w > 0);
		best = w > best ? w : best;
	}
	assert_true(b->exhaustive);
	assert_true(fabs(b->throughput - best) <= 1e-9 * best);
	/* The best is not trivial: it splits the least memory-bound VM. */
	assert_int_equal(t_single_node(&b->vms[0]), -1);
	oracle_binding_free(x);
	oracle_binding_free(b);
	t_free(s);
}

/* The evaluator against closed forms: CPU sharing over time, and the 90/10 access split. */
static void
test_evaluator_closed_form(void **state)
{
	struct scenario *s = t_scn(2, 4, 64, 600, NULL);
	struct oracle_binding *b;
	double eff, cost;

	t_vm(s, "a", 6, 4, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "b", 2, 4, SCN_WORKLOAD_SHARED)->util = 0.5;
	s->vms[1].start_s = 100;
	s->vms[1].stop_s = 300;
	b = oracle_binding_new(s);
	for (int v = 0; v < 2; v++)
		b->vms[1].vcpu_node[v] = 1;
	b->vms[1].ranges[0].node = 1;
	/* a: 6 vCPUs on 4 CPUs, all local, 600 s; b: 2 x 0.5 util for 200 s. */
	assert_true(fabs(oracle_binding_throughput(s, b) - (4.0 * 600 + 1.0 * 200)) < 1e-9);
	oracle_binding_free(b);
	t_free(s);

	s = t_scn(2, 4, 64, 100, NULL);
	t_vm(s, "p", 2, 4, SCN_WORKLOAD_PRIVATE);
	b = oracle_binding_new(s);
	t_bind_bits(s, b, 0, 2, 2); /* vCPU 1 and its slice on node 1 */
	cost = SIM_LOCAL_SHARE * 1.0 + (1 - SIM_LOCAL_SHARE) * (0.5 * 1.0 + 0.5 * 2.1);
	eff = 1.0 / (0.5 + 0.5 * cost);
	assert_true(fabs(oracle_binding_throughput(s, b) - 2 * eff * 100) < 1e-9);
	t_bind_bits(s, b, 0, 2, 1); /* both slices remote to their vCPU */
	cost = SIM_LOCAL_SHARE * 2.1 + (1 - SIM_LOCAL_SHARE) * (0.5 * 1.0 + 0.5 * 2.1);
	eff = 1.0 / (0.5 + 0.5 * cost);
	assert_true(fabs(oracle_binding_throughput(s, b) - 2 * eff * 100) < 1e-9);
	b->vms[0].vcpu_node[0] = 7;
	assert_true(oracle_binding_throughput(s, b) < 0); /* malformed */
	oracle_binding_free(b);
	t_free(s);
}

/* A VM restricted by its policy to one node stays there, even when that node is busy. */
static void
test_policy_nodes_respected(void **state)
{
	struct scenario *s = t_scn(4, 8, 64, 600, NULL);
	struct oracle_binding *b;

	t_vm(s, "busy", 8, 8, SCN_WORKLOAD_PRIVATE)->policy.nodes = nodemask_of(2);
	t_vm(s, "pinned", 4, 8, SCN_WORKLOAD_PRIVATE)->policy.nodes = nodemask_of(2);
	b = t_plan(s);
	assert_int_equal(t_single_node(&b->vms[0]), 2);
	assert_int_equal(t_single_node(&b->vms[1]), 2);
	oracle_binding_free(b);
	t_free(s);
}

/* A mixed host: 8 nodes, 256 VMs coming and going. */
static struct scenario *
t_big_scenario(void)
{
	struct scenario *s = t_scn(8, 16, 64, 900, NULL);
	static const enum scn_workload w[5] = {SCN_WORKLOAD_PRIVATE, SCN_WORKLOAD_SHARED,
	                                       SCN_WORKLOAD_PHASED, SCN_WORKLOAD_IDLE,
	                                       SCN_WORKLOAD_ADVERSE};

	for (int i = 0; i < 256; i++) {
		char name[16];
		struct scn_vm *vm;

		snprintf(name, sizeof(name), "vm%d", i);
		vm = t_vm(s, name, 1 + (i * 7) % 4, 0.5 + 0.5 * ((i * 5) % 4), w[i % 5]);
		vm->util = 0.15 + 0.05 * (i % 4);
		vm->mem_intensity = 0.2 + 0.1 * (i % 7);
		vm->start_s = (i % 3) * 60.0 * (i % 5);
		vm->stop_s = i % 4 == 0 ? 300 + 2.0 * i : -1;
	}
	t_vm(s, "huge", 24, 96, SCN_WORKLOAD_SHARED);
	return s;
}

/* A scenario that overcommits memory: what fits is placed, the rest overfills one node. */
static void
test_overcommit_places_what_fits(void **state)
{
	struct scenario *s = t_scn(2, 8, 8, 600, NULL);
	uint64_t excess = 3 * 6 * 1024 - 2 * (8 * 1024 - SIM_MIN_FREE_MIB), over;
	struct oracle_binding *b;

	t_vm(s, "a", 2, 6, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "b", 2, 6, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "c", 2, 6, SCN_WORKLOAD_SHARED);
	b = t_plan(s);
	over = oracle_binding_overfill_mib(s, b);
	assert_true(b->overcommit);
	assert_true(over >= excess && over < excess + 6 * 1024 / 32);
	oracle_binding_free(b);
	t_free(s);
}

/* Same scenario, same binding, bit for bit; and the big case is solved and fits. */
static void
test_deterministic_and_big(void **state)
{
	struct scenario *s = t_big_scenario();
	struct oracle_binding *a = t_plan(s), *b = t_plan(s);

	assert_false(a->exhaustive);
	assert_false(a->overcommit);
	assert_true(a->throughput == b->throughput);
	for (int i = 0; i < s->nr_vms; i++) {
		assert_int_equal(a->vms[i].nr_ranges, b->vms[i].nr_ranges);
		assert_memory_equal(a->vms[i].vcpu_node, b->vms[i].vcpu_node,
		                    sizeof(int) * (size_t)a->vms[i].nr_vcpus);
		assert_memory_equal(a->vms[i].ranges, b->vms[i].ranges,
		                    sizeof(struct oracle_range) * (size_t)a->vms[i].nr_ranges);
	}
	assert_true(t_single_node(&a->vms[256]) < 0); /* 96 GiB needs two 64-GiB nodes */
	oracle_binding_free(a);
	oracle_binding_free(b);
	t_free(s);
}

/* decide(): pins and binds for arriving VMs only, matched by name; then it leaves them be. */
static void
test_decide_pins_and_binds_on_arrival(void **state)
{
	struct scenario *s = t_scn(2, 8, 64, 600, NULL);
	struct balancer_args args = {.seed = 1, .knowledge = NULL};
	const int vcpus[2] = {6, 6};
	struct snapshot *snap = snapshot_new(2, 16, 2, vcpus);
	struct oracle_binding *b;
	struct plan plan;
	uint64_t covered = 0;
	void *st;

	t_vm(s, "a", 6, 8, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "b", 6, 8, SCN_WORKLOAD_PRIVATE);
	b = t_plan(s);
	args.knowledge = s;
	st = peer_oracle_ops.create(&args);
	assert_string_equal(peer_oracle_ops.name, "oracle");
	assert_true(peer_oracle_ops.default_scan_mib_s == 0);
	snprintf(snap->vms[0].name, sizeof(snap->vms[0].name), "b"); /* order differs */
	snprintf(snap->vms[1].name, sizeof(snap->vms[1].name), "a");
	snap->vms[0].id = 100;
	snap->vms[1].id = 101;
	for (int i = 0; i < 2; i++)
		snap->vms[i].mem_mib = 8192;
	plan_init(&plan);
	assert_int_equal(peer_oracle_ops.decide(st, snap, &plan), 0);
	assert_true(plan.next_call_s == 3600);
	assert_int_equal(plan.nr_pins, 12);
	for (size_t p = 0; p < plan.nr_pins; p++) {
		const struct plan_pin *pin = &plan.pins[p];
		int idx = pin->vm_id == 100 ? 1 : 0;

		assert_int_equal(pin->kind, PLAN_PIN_MOVE);
		assert_int_equal(pin->nodes, nodemask_of(b->vms[idx].vcpu_node[pin->vcpu]));
		assert_string_equal(pin->why.rule, "oracle");
	}
	for (size_t k = 0; k < plan.nr_binds; k++) {
		const struct plan_mem_bind *bd = &plan.binds[k];
		int idx = bd->vm_id == 100 ? 1 : 0;

		assert_true(bd->len_mib > 0);
		assert_int_equal(bd->nodes,
		                 nodemask_of(t_node_of_mib(&b->vms[idx], bd->start_mib)));
		covered += bd->len_mib;
	}
	assert_int_equal(covered, 2 * 8192);
	snap->vms[0].uptime_s = snap->vms[1].uptime_s = 5;
	snap->now_s = 5;
	plan_reset(&plan);
	assert_int_equal(peer_oracle_ops.decide(st, snap, &plan), 0);
	assert_int_equal(plan.nr_pins + plan.nr_binds, 0);
	plan_free(&plan);
	peer_oracle_ops.destroy(st);
	snapshot_free(snap);
	oracle_binding_free(b);
	t_free(s);
}

/*
 * The simulator, running the oracle, measures exactly the throughput the evaluator predicted,
 * and never runs out of memory.
 */
static void
test_sim_agrees_with_evaluator(void **state)
{
	struct scenario *s = t_scn(4, 8, 16, 500, NULL);
	static const int cell_of[12] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
	static const double gib[2] = {6, 6};
	struct oracle_binding *b;
	struct sim_result res;
	char err[256] = "";

	t_vm(s, "db", 10, 20, SCN_WORKLOAD_SHARED)->mem_intensity = 0.7;
	t_vm(s, "web", 6, 8, SCN_WORKLOAD_PRIVATE);
	t_cells(t_vm(s, "hpc", 12, 12, SCN_WORKLOAD_CELLS), 2, cell_of, gib);
	t_vm(s, "idle", 2, 2, SCN_WORKLOAD_IDLE);
	t_vm(s, "batch", 4, 9, SCN_WORKLOAD_PRIVATE)->start_s = 100.05;
	s->vms[4].stop_s = 350;
	t_vm(s, "late", 3, 9, SCN_WORKLOAD_SHARED)->start_s = 350;
	s->vms[5].util = 0.7;
	b = t_plan(s);
	assert_int_equal(sim_run(s, &peer_oracle_ops, &res, err, sizeof(err)), 0);
	assert_int_equal(res.oom, 0);
	assert_int_equal(res.node_overfill, 0);
	assert_true(res.migrated_gib == 0 && res.sampling_cpu_s == 0);
	assert_true(fabs(res.throughput - b->throughput) <= 1e-6 * b->throughput);
	sim_result_free(&res);
	oracle_binding_free(b);
	t_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_vms_split_across_nodes),
	    cmocka_unit_test(test_big_vm_spans_closest_nodes),
	    cmocka_unit_test(test_cells_vm_one_node_per_cell),
	    cmocka_unit_test(test_private_span_keeps_slices_local),
	    cmocka_unit_test(test_memory_never_exceeds_a_node),
	    cmocka_unit_test(test_overcommit_places_what_fits),
	    cmocka_unit_test(test_search_equals_brute_force),
	    cmocka_unit_test(test_evaluator_closed_form),
	    cmocka_unit_test(test_policy_nodes_respected),
	    cmocka_unit_test(test_deterministic_and_big),
	    cmocka_unit_test(test_decide_pins_and_binds_on_arrival),
	    cmocka_unit_test(test_sim_agrees_with_evaluator),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_sim.c - the simulated host's models: first-touch allocation and fallback, oom, gradual
 * and failing migration, the hinting-fault sampler, CPU time-sharing, determinism.
 *
 * Scenarios are built by hand and driven by small scripted balancers, so each test isolates
 * one model.
 */
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

#include "host/sim/peers.h"
#include "host/sim/sim.h"
#include "tests/unit/scn_build.h"

/* A scenario of nr_vms identical private VMs; the caller adjusts fields. */
static struct scenario *
test_scn_new(int nodes, int cpus, double mem_gib, int nr_vms, int vcpus, double vm_gib)
{
	struct scenario *scn = xcalloc(1, sizeof(*scn));

	snprintf(scn->name, sizeof(scn->name), "test");
	/* The model's mechanics with every lever and live counters; profiles: test_profile_*. */
	scn->host_profile = SIM_PROFILE_IDEAL;
	scn->seed = 42;
	scn->duration_s = 30;
	scn->host.nodes = nodes;
	scn->host.cpus_per_node = cpus;
	scn->host.memory_per_node_gib = mem_gib;
	scn->nr_vms = nr_vms;
	scn->vms = xcalloc((size_t)nr_vms, sizeof(*scn->vms));
	for (int i = 0; i < nr_vms; i++) {
		char name[16];

		snprintf(name, sizeof(name), "vm%d", i);
		scn_build_vm(&scn->vms[i], name, vcpus, vm_gib, SCN_WORKLOAD_PRIVATE);
	}
	return scn;
}

static void
test_scn_free(struct scenario *scn)
{
	free(scn->vms);
	free(scn);
}

/* Scripted balancers: the test sets what they do through these statics. */
static int script_pin_node = -1; /* pin every vCPU of every VM to this node at arrival */
static int script_move_from = -1, script_move_to = -1;
static uint64_t script_move_mib;
static double script_scan_mib_s = 0;
static uint64_t script_seen_done, script_seen_failed;

static int
script_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];

		script_seen_done += vm->mig_done_mib;
		script_seen_failed += vm->mig_failed_mib;
		if (vm->uptime_s == 0 && script_pin_node >= 0)
			for (int v = 0; v < vm->nr_vcpus; v++)
				plan_add_pin(plan, vm->id, v, nodemask_of(script_pin_node));
		if (vm->uptime_s == 0)
			plan_add_sampling(plan, vm->id, script_scan_mib_s);
		if (snap->now_s >= 1.0 && snap->now_s < 1.05 && script_move_from >= 0)
			plan_add_move(plan, vm->id, script_move_from, script_move_to,
			              script_move_mib);
	}
	plan->next_call_s = 0.1;
	return 0;
}

static const struct balancer_ops script_ops = {
    .name = "script",
    .decide = script_decide,
};

static int
test_setup(void **state)
{
	script_pin_node = script_move_from = script_move_to = -1;
	script_move_mib = 0;
	script_scan_mib_s = 0;
	script_seen_done = script_seen_failed = 0;
	return 0;
}

static void
run_ticks(struct sim *sim, int ticks)
{
	for (int i = 0; i < ticks; i++)
		assert_int_equal(sim_step(sim), 0);
}

static void
test_first_touch_on_given_node(void **state)
{
	struct scenario *scn = test_scn_new(2, 4, 8, 1, 2, 4);
	char err[256];
	struct sim *sim;

	scn->vms[0].first_touch_node = 1;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	assert_non_null(sim);
	run_ticks(sim, 1);
	assert_int_equal(sim_vm_node_mib(sim, 0, 1), 4096);
	assert_int_equal(sim_vm_node_mib(sim, 0, 0), 0);
	sim_free(sim);
	test_scn_free(scn);
}

static void
test_first_touch_follows_vcpu0_and_falls_back(void **state)
{
	/* 6 GiB guest on 4-GiB nodes: fills vCPU 0's node to its min watermark, spills over. */
	struct scenario *scn = test_scn_new(2, 4, 4, 1, 2, 6);
	char err[256];
	struct sim *sim;

	script_pin_node = 1;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 1);
	assert_int_equal(sim_vcpu_node(sim, 0, 0), 1);
	assert_int_equal(sim_vm_node_mib(sim, 0, 1), 4096 - SIM_MIN_FREE_MIB);
	assert_int_equal(sim_vm_node_mib(sim, 0, 0), 2048 + SIM_MIN_FREE_MIB);
	assert_int_equal(sim_vm_node_mib(sim, 0, -1), 0);
	sim_free(sim);
	test_scn_free(scn);
}

static void
test_oom_counted_when_host_full(void **state)
{
	struct scenario *scn = test_scn_new(2, 4, 1, 1, 2, 3);
	struct sim_result res;
	char err[256];

	scn->duration_s = 2;
	assert_int_equal(sim_run(scn, &script_ops, &res, err, sizeof(err)), 0);
	/* 3 GiB asked, 2 x (1 GiB - min watermark) available. */
	assert_int_equal(res.oom, (3072 - 2 * (1024 - SIM_MIN_FREE_MIB)) / SIM_REGION_MIB);
	assert_int_equal(res.node_overfill, 0);
	assert_true(res.max_node_fill <= 1.0);
	sim_result_free(&res);
	test_scn_free(scn);
}

static void
test_migration_is_gradual(void **state)
{
	struct scenario *scn = test_scn_new(2, 4, 16, 1, 2, 8);
	char err[256];
	struct sim *sim;
	uint64_t prev = 0;

	scn->vms[0].first_touch_node = 0;
	script_move_from = 0;
	script_move_to = 1;
	script_move_mib = 8192;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 11); /* the move is issued at t = 1.0 */
	prev = sim_vm_node_mib(sim, 0, 1);
	assert_true(prev > 0 && prev < 8192);
	for (int t = 0; t < 60; t++) {
		uint64_t now;

		run_ticks(sim, 1);
		now = sim_vm_node_mib(sim, 0, 1);
		/* Never faster than the engine's ceiling per tick. */
		assert_true(now - prev <= (uint64_t)(SIM_MIGRATE_MIB_S * SIM_TICK_S));
		prev = now;
	}
	assert_int_equal(sim_vm_node_mib(sim, 0, 1), 8192);
	assert_int_equal(script_seen_done, 8192);
	assert_int_equal(script_seen_failed, 0);
	sim_free(sim);
	test_scn_free(scn);
}

static void
test_migration_fails_into_full_node(void **state)
{
	/* Two 3-GiB VMs on 4-GiB nodes, both first-touched on their own node; moving vm0 onto
	 * node 1 must stop at node 1's watermark and report the rest as failed. */
	struct scenario *scn = test_scn_new(2, 4, 4, 2, 1, 3);
	char err[256];
	struct sim *sim;

	scn->vms[0].first_touch_node = 0;
	scn->vms[1].first_touch_node = 1;
	script_move_from = 0;
	script_move_to = 1;
	script_move_mib = 3072;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 40);
	assert_true(sim_node_used_mib(sim, 1) <= 4096 - SIM_MIN_FREE_MIB);
	assert_true(script_seen_failed > 0);
	assert_int_equal(sim_vm_node_mib(sim, 0, 1) + sim_vm_node_mib(sim, 0, 0), 3072);
	sim_free(sim);
	test_scn_free(scn);
}

static uint64_t
snap_faults(const struct snapshot *snap, int vm, int node)
{
	uint64_t f = 0;

	for (int v = 0; v < snap->vms[vm].nr_vcpus; v++)
		f += snap->vms[vm].vcpus[v].faults_private[node] +
		     snap->vms[vm].vcpus[v].faults_shared[node];
	return f;
}

static void
test_faults_follow_memory_and_intensity(void **state)
{
	struct scenario *scn = test_scn_new(2, 4, 16, 1, 2, 4);
	char err[256];
	struct sim *sim;
	struct snapshot *snap;

	scn->vms[0].first_touch_node = 1;
	script_scan_mib_s = 0;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 50);
	snap = sim_snapshot(sim);
	assert_int_equal(snap_faults(snap, 0, 0) + snap_faults(snap, 0, 1), 0);
	snapshot_free(snap);
	sim_free(sim);

	script_scan_mib_s = 64;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 50);
	snap = sim_snapshot(sim);
	/* All memory is on node 1: every fault is counted there, none on node 0. */
	assert_int_equal(snap_faults(snap, 0, 0), 0);
	/* 5 s at 64 MiB/s = 160 regions faulted, 512 pages each; no pass completed yet. */
	assert_int_equal(snap_faults(snap, 0, 1), 160 * 512);
	snapshot_free(snap);
	sim_free(sim);
	test_scn_free(scn);
}

static void
test_faults_decay_after_full_pass(void **state)
{
	struct scenario *scn = test_scn_new(1, 4, 16, 1, 1, 1);
	char err[256];
	struct sim *sim;
	struct snapshot *snap;

	script_scan_mib_s = 512; /* 1 GiB VM: one full pass every 2 s */
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 100);
	snap = sim_snapshot(sim);
	/* Geometric decay keeps the counter bounded by two passes' worth. */
	assert_true(snap_faults(snap, 0, 0) < 2 * 512 * 512);
	assert_true(snap_faults(snap, 0, 0) > 0);
	snapshot_free(snap);
	sim_free(sim);
	test_scn_free(scn);
}

static void
test_faults_attribute_private_slices(void **state)
{
	/* Two vCPUs on different nodes, memory split in place: each vCPU's faults land mostly
	 * on its own node, as its accesses do. */
	struct scenario *scn = test_scn_new(2, 4, 16, 1, 2, 4);
	char err[256];
	struct sim *sim;
	struct snapshot *snap;
	const struct snap_vcpu *v0, *v1;

	script_scan_mib_s = 256;
	sim = sim_new(scn, &script_ops, err, sizeof(err));
	run_ticks(sim, 1);
	if (sim_vcpu_node(sim, 0, 0) == sim_vcpu_node(sim, 0, 1)) {
		sim_free(sim);
		test_scn_free(scn);
		fail_msg("NUMA-blind placement should spread a new VM's vCPUs over idle nodes");
	}
	run_ticks(sim, 100);
	snap = sim_snapshot(sim);
	v0 = &snap->vms[0].vcpus[0];
	v1 = &snap->vms[0].vcpus[1];
	/* All memory sits on vCPU 0's node (first touch); still each vCPU faults about half the
	 * regions of its own slice: counts must be within a factor 2 of each other. */
	assert_true(v0->faults_private[v0->node] + v0->faults_shared[v0->node] > 0);
	assert_true(v1->faults_private[v0->node] + v1->faults_shared[v0->node] > 0);
	snapshot_free(snap);
	sim_free(sim);
	test_scn_free(scn);
}

static void
test_cpu_time_sharing(void **state)
{
	/* One node of 4 CPUs: 4 vCPUs run at full speed, 8 vCPUs each get half. */
	struct scenario *a = test_scn_new(1, 4, 64, 1, 4, 4);
	struct scenario *b = test_scn_new(1, 4, 64, 1, 8, 4);
	struct sim_result ra, rb;
	char err[256];

	assert_int_equal(sim_run(a, &peer_none_ops, &ra, err, sizeof(err)), 0);
	assert_int_equal(sim_run(b, &peer_none_ops, &rb, err, sizeof(err)), 0);
	assert_true(fabs(ra.throughput - rb.throughput) < 1e-6 * ra.throughput);
	assert_true(fabs(ra.throughput - 4 * 30.0) < 1e-6 * ra.throughput);
	assert_true(fabs(ra.locality - 1.0) < 1e-9);
	sim_result_free(&ra);
	sim_result_free(&rb);
	test_scn_free(a);
	test_scn_free(b);
}

static void
test_remote_memory_costs_work(void **state)
{
	/* vCPU pinned to node 0, memory forced onto node 1 at distance 21: work per CPU-second
	 * is 1 / (0.5 + 0.5 * 2.1). */
	struct scenario *scn = test_scn_new(2, 4, 16, 1, 1, 2);
	struct sim_result res;
	char err[256];

	scn->vms[0].first_touch_node = 1;
	script_pin_node = 0;
	assert_int_equal(sim_run(scn, &script_ops, &res, err, sizeof(err)), 0);
	assert_true(fabs(res.throughput - 30.0 / (0.5 + 0.5 * 2.1)) < 1e-6);
	assert_true(res.locality < 1e-9);
	sim_result_free(&res);
	test_scn_free(scn);
}

static void
test_same_seed_same_result(void **state)
{
	struct scenario *scn = test_scn_new(4, 4, 16, 6, 4, 6);
	struct sim_result r1, r2;
	char err[256];

	scn->duration_s = 120;
	scn->vms[2].start_s = 20;
	scn->vms[3].stop_s = 60;
	scn->vms[4].workload = SCN_WORKLOAD_ADVERSE;
	scn->vms[4].phase_s = 10;
	for (int i = 0; sim_balancers[i] != NULL; i++) {
		assert_int_equal(sim_run(scn, sim_balancers[i], &r1, err, sizeof(err)), 0);
		assert_int_equal(sim_run(scn, sim_balancers[i], &r2, err, sizeof(err)), 0);
		assert_true(r1.throughput == r2.throughput);
		assert_true(r1.locality == r2.locality);
		assert_int_equal(r1.vcpu_moves, r2.vcpu_moves);
		assert_true(r1.migrated_gib == r2.migrated_gib);
		assert_int_equal(r1.node_overfill, 0);
		sim_result_free(&r1);
		sim_result_free(&r2);
	}
	test_scn_free(scn);
}

/* A scripted "kernel": moves vCPU 0 of every VM to node 1 once, as autonuma's task moves do. */
static int
kmove_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	for (int i = 0; i < snap->nr_vms && snap->now_s >= 1.0 && snap->now_s < 1.05; i++) {
		struct plan_pin *pin = plan_add_pin(plan, snap->vms[i].id, 0, NODEMASK_ALL);

		pin->kind = PLAN_PIN_KERNEL_MOVE;
		pin->to_node = snap->vms[i].vcpus[0].node == 0 ? 1 : 0;
	}
	plan->next_call_s = 0.1;
	return 0;
}

static void
test_kernel_moves_counted(void **state)
{
	static const struct balancer_ops kmove_ops = {.name = "kmove", .decide = kmove_decide};
	struct scenario *scn = test_scn_new(2, 4, 16, 2, 2, 2);
	struct sim_result res;
	char err[256];

	scn->duration_s = 5;
	assert_int_equal(sim_run(scn, &kmove_ops, &res, err, sizeof(err)), 0);
	assert_int_equal(res.vcpu_moves, 2); /* one task move per VM, across nodes */
	assert_int_equal(res.max_vcpu_node_changes, 1);
	sim_result_free(&res);
	test_scn_free(scn);
}

static void
test_converge_time(void **state)
{
	double s[200];

	for (int i = 0; i < 200; i++)
		s[i] = i < 50 ? 0.3 : 0.9;
	/* The 10-s moving window is within 5 % of 0.9 from second 59 on. */
	assert_true(fabs(sim_converge_time(s, 200, 1.0) - 59.0) < 1e-9);
	for (int i = 0; i < 200; i++)
		s[i] = 0.8;
	assert_true(sim_converge_time(s, 200, 1.0) == 0.0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_first_touch_on_given_node, test_setup),
	    cmocka_unit_test_setup(test_first_touch_follows_vcpu0_and_falls_back, test_setup),
	    cmocka_unit_test_setup(test_oom_counted_when_host_full, test_setup),
	    cmocka_unit_test_setup(test_migration_is_gradual, test_setup),
	    cmocka_unit_test_setup(test_migration_fails_into_full_node, test_setup),
	    cmocka_unit_test_setup(test_faults_follow_memory_and_intensity, test_setup),
	    cmocka_unit_test_setup(test_faults_decay_after_full_pass, test_setup),
	    cmocka_unit_test_setup(test_faults_attribute_private_slices, test_setup),
	    cmocka_unit_test_setup(test_cpu_time_sharing, test_setup),
	    cmocka_unit_test_setup(test_remote_memory_costs_work, test_setup),
	    cmocka_unit_test_setup(test_same_seed_same_result, test_setup),
	    cmocka_unit_test(test_converge_time),
	    cmocka_unit_test_setup(test_kernel_moves_counted, test_setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

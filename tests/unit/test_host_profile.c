/*
 * test_host_profile.c - lever parity (BRIEF section 3): the simulated host's profiles give a
 * balancer exactly the levers and sensing of the real backend they stand for.
 *
 *  - the names parse, an unknown one is an error;
 *  - under linux the simulated daemon host refuses a memory bind and a per-VM scan rate with
 *    the error `--host linux` gives (-EOPNOTSUPP), and its snapshot's capabilities are the
 *    Linux host's (read off a captured tree with kernel.numa_balancing=1);
 *  - in a run, such plan entries are refused and counted, and change nothing;
 *  - (test_engine.c: the engine does not plan them without the lever, and says what it wanted;)
 *  - fault counters fold in once per pass; the kernel's balancing runs beside a balancer and
 *    its migrate-on-fault is not reported as the balancer's own moves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/sim/peers.h"
#include "host/sim/scenario.h"
#include "host/sim/sim.h"
#include "tests/unit/linux_test_util.h"

static void
test_profile_names(void **state)
{
	enum sim_profile p = SIM_PROFILE_NR;
	char err[128] = "";

	(void)state;
	assert_int_equal(sim_profile_parse("linux", &p, err, sizeof(err)), 0);
	assert_int_equal(p, SIM_PROFILE_LINUX);
	assert_int_equal(sim_profile_parse("libvirt", &p, err, sizeof(err)), 0);
	assert_int_equal(p, SIM_PROFILE_LIBVIRT);
	assert_int_equal(sim_profile_parse("ideal", &p, err, sizeof(err)), 0);
	assert_int_equal(p, SIM_PROFILE_IDEAL);
	assert_int_equal(sim_profile_parse("Linux", &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown host profile 'Linux'"));
	assert_int_equal(sim_profile_parse("", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(sim_profile_name(SIM_PROFILE_LINUX), "linux");
	/* A scenario loaded from a file runs under linux unless told otherwise. */
	{
		struct scenario *scn = NULL;

		assert_int_equal(
		    scenario_load_string(scenario_default_json, &scn, err, sizeof(err)), 0);
		assert_int_equal(scn->host_profile, SIM_PROFILE_LINUX);
		scenario_free(scn);
	}
}

/* The simulated daemon host under a profile, run until its VMs arrived; its snapshot. */
static struct host *
tp_sim_host(enum sim_profile profile, struct snapshot **snap)
{
	struct host *h = NULL;
	char err[256];

	assert_int_equal(host_sim_open(NULL, profile, &h, err, sizeof(err)), 0);
	assert_true(h->ops->advance(h, 5.0) >= 0);
	h->ops->commit(h);
	assert_int_equal(h->ops->advance(h, 5.0), 0);
	assert_int_equal(h->ops->snapshot(h, snap), 0);
	assert_true((*snap)->nr_vms > 0);
	return h;
}

static void
test_linux_profile_refuses_as_linux_does(void **state)
{
	struct host *sim, *lin;
	struct snapshot *ss, *ls;
	const struct snap_vm *vm;
	char err[256];

	(void)state;
	/* The Linux host on a captured tree (kernel.numa_balancing=1). */
	assert_int_equal(
	    host_linux_open(ltu_fixture_root("qemu-2node"), 100, &lin, err, sizeof(err)), 0);
	assert_int_equal(lin->ops->snapshot(lin, &ls), 0);
	assert_true(ls->nr_vms > 0);
	assert_int_equal(lin->ops->bind_memory(lin, ls->vms[0].id, 0, 0, 1), -EOPNOTSUPP);
	assert_int_equal(lin->ops->set_sampling(lin, ls->vms[0].id, 256), -EOPNOTSUPP);

	sim = tp_sim_host(SIM_PROFILE_LINUX, &ss);
	vm = &ss->vms[0];
	/* The same capabilities, levers and sensing alike. */
	assert_int_equal(ss->caps, ls->caps);
	assert_int_equal(ss->caps, sim_profile_caps(SIM_PROFILE_LINUX));
	assert_false(ss->caps &
	             (HOST_CAP_BIND_AT_START | HOST_CAP_BIND_LIVE | HOST_CAP_VM_SAMPLING));
	assert_true(ss->caps & HOST_CAP_KERNEL_BALANCING);
	assert_true(ss->caps & HOST_CAP_FAULTS_PER_PASS);
	/* The same answers. */
	assert_int_equal(sim->ops->bind_memory(sim, vm->id, 0, 0, 1), -EOPNOTSUPP);
	assert_int_equal(sim->ops->set_sampling(sim, vm->id, 256), -EOPNOTSUPP);
	assert_int_equal(sim->ops->pin_vcpu(sim, vm->id, 0, 1), 0);
	/* A booted guest: the balancer never sees it before its first touch. */
	assert_true(vm->uptime_s > 0);
	snapshot_free(ss);
	sim->ops->close(sim);

	/* libvirt: the same today. */
	sim = tp_sim_host(SIM_PROFILE_LIBVIRT, &ss);
	assert_int_equal(ss->caps, ls->caps);
	assert_int_equal(sim->ops->bind_memory(sim, ss->vms[0].id, 0, 0, 1), -EOPNOTSUPP);
	snapshot_free(ss);
	sim->ops->close(sim);

	/* ideal: every lever. */
	sim = tp_sim_host(SIM_PROFILE_IDEAL, &ss);
	assert_int_equal(ss->caps & HOST_CAPS_LEVERS, HOST_CAPS_LEVERS);
	assert_false(ss->caps & HOST_CAP_KERNEL_BALANCING);
	assert_int_equal(sim->ops->set_sampling(sim, ss->vms[0].id, 256), 0);
	snapshot_free(ss);
	sim->ops->close(sim);

	snapshot_free(ls);
	lin->ops->close(lin);
}

/* ---- in a run: refused, counted, without effect ------------------------------------------ */

static int tp_bind_node = 1;
static uint64_t tp_seen_done;
static bool tp_saw_arrival;

/* Pins every vCPU to node 0 and binds all RAM to tp_bind_node when a VM arrives. */
static int
tp_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	(void)state;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];

		tp_seen_done += vm->mig_done_mib;
		if (vm->uptime_s > 1.0)
			continue;
		tp_saw_arrival = true;
		for (int v = 0; v < vm->nr_vcpus; v++)
			plan_add_pin(plan, vm->id, v, nodemask_of(0));
		if (vm->uptime_s == 0 || !vm->resident_mib[tp_bind_node])
			plan_add_bind(plan, vm->id, nodemask_of(tp_bind_node));
		plan_add_sampling(plan, vm->id, 512);
	}
	plan->next_call_s = 1.0;
	return 0;
}

static const struct balancer_ops tp_ops = {
    .name = "binder",
    .decide = tp_decide,
};

static struct scenario *
tp_scenario(enum sim_profile profile)
{
	static const char json[] =
	    "{\"name\": \"tp\", \"duration_s\": 30, \"seed\": 3, \"host\": {\"nodes\": 2, "
	    "\"cpus_per_node\": 4, \"memory_per_node_gib\": 8}, \"vms\": [{\"name\": \"a\", "
	    "\"vcpus\": 2, \"memory_gib\": 2, \"first_touch_node\": 0}]}";
	struct scenario *scn = NULL;
	char err[256];

	assert_int_equal(scenario_load_string(json, &scn, err, sizeof(err)), 0);
	scn->host_profile = profile;
	return scn;
}

static void
test_run_refuses_missing_levers(void **state)
{
	struct scenario *scn = tp_scenario(SIM_PROFILE_LINUX);
	struct sim_result res;
	struct sim *sim;
	char err[256];

	(void)state;
	tp_seen_done = 0;
	sim = sim_new(scn, &tp_ops, err, sizeof(err));
	assert_non_null(sim);
	for (int i = 0; i < 20; i++)
		assert_int_equal(sim_step(sim), 0);
	/* The bind was refused: the guest's first touch put its RAM on node 0. */
	assert_int_equal(sim_vm_node_mib(sim, 0, 1), 0);
	assert_int_equal(sim_vm_node_mib(sim, 0, 0), 2048);
	sim_result_fill(sim, &res);
	assert_true(res.binds_refused >= 1);
	assert_true(res.samplings_refused >= 1);
	assert_int_equal(res.profile, SIM_PROFILE_LINUX);
	assert_int_equal(res.caps & HOST_CAP_BIND_AT_START, 0);
	sim_result_free(&res);
	sim_free(sim);
	scenario_free(scn);

	/* ideal: the same plan binds before the first touch, nothing is refused. */
	scn = tp_scenario(SIM_PROFILE_IDEAL);
	sim = sim_new(scn, &tp_ops, err, sizeof(err));
	for (int i = 0; i < 20; i++)
		assert_int_equal(sim_step(sim), 0);
	assert_int_equal(sim_vm_node_mib(sim, 0, 1), 2048);
	sim_result_fill(sim, &res);
	assert_int_equal(res.binds_refused, 0);
	assert_int_equal(res.samplings_refused, 0);
	sim_result_free(&res);
	sim_free(sim);
	scenario_free(scn);
}

/*
 * The kernel beside the balancer: vCPUs pinned to node 0, RAM first-touched on node 1; the
 * kernel's migrate-on-fault pulls it over, counted as the kernel's, and the balancer's
 * snapshots never report it as its own moves (it made none).
 */
static void
test_kernel_beside_pulls_pages(void **state)
{
	struct scenario *scn = tp_scenario(SIM_PROFILE_LINUX);
	struct sim_result res;
	char err[256];

	(void)state;
	scn->vms[0].first_touch_node = 1;
	scn->duration_s = 120;
	tp_bind_node = 1; /* refused: nothing binds */
	tp_seen_done = 0;
	assert_int_equal(sim_run(scn, &tp_ops, &res, err, sizeof(err)), 0);
	assert_true(res.kernel_migrated_gib > 0.5);
	assert_true(res.migrated_gib >= res.kernel_migrated_gib);
	assert_true(res.max_migrate_mib_s == 0); /* none of it the balancer's own */
	assert_int_equal(tp_seen_done, 0);
	sim_result_free(&res);

	/* none is NUMA-blind: the kernel's balancing is off beside it. */
	assert_int_equal(sim_run(scn, &peer_none_ops, &res, err, sizeof(err)), 0);
	assert_true(res.kernel_migrated_gib == 0);
	assert_true(res.migrated_gib == 0);
	sim_result_free(&res);
	/* ideal: no kernel beside. */
	scn->host_profile = SIM_PROFILE_IDEAL;
	assert_int_equal(sim_run(scn, &tp_ops, &res, err, sizeof(err)), 0);
	assert_true(res.kernel_migrated_gib == 0);
	sim_result_free(&res);
	scenario_free(scn);
}

/* Folded counters: nothing shows until a scan pass completes; live ones grow at once. */
static void
test_faults_fold_per_pass(void **state)
{
	struct scenario *scn = tp_scenario(SIM_PROFILE_LINUX);
	struct snapshot *snap;
	struct sim *sim;
	uint64_t sum;
	char err[256];
	int steps = 0;

	(void)state;
	sim = sim_new(scn, &peer_none_ops, err, sizeof(err));
	sim_free(sim);
	/* numad-like: no faults wanted, but the kernel beside scans at its own rate. */
	sim = sim_new(scn, &peer_numad_ops, err, sizeof(err));
	assert_non_null(sim);
	for (;;) {
		assert_int_equal(sim_step(sim), 0);
		steps++;
		snap = sim_snapshot(sim);
		sum = 0;
		for (int i = 0; i < snap->nr_vms; i++)
			for (int v = 0; v < snap->vms[i].nr_vcpus; v++)
				for (int n = 0; n < snap->nr_nodes; n++)
					sum += snap->vms[i].vcpus[v].faults_private[n] +
					       snap->vms[i].vcpus[v].faults_shared[n];
		snapshot_free(snap);
		if (sum > 0 || steps > 600)
			break;
	}
	/* The first pass over 2 GiB at the kernel's first rate (256 MiB/s) takes about 8 s. */
	assert_true(steps > 20);
	assert_true(steps <= 600);
	sim_free(sim);
	scenario_free(scn);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_profile_names),
	    cmocka_unit_test(test_linux_profile_refuses_as_linux_does),
	    cmocka_unit_test(test_run_refuses_missing_levers),
	    cmocka_unit_test(test_kernel_beside_pulls_pages),
	    cmocka_unit_test(test_faults_fold_per_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_suite.c - the public scenario suite (tests/sim/NN-*.json) under every balancer.
 *
 * Properties, per scenario:
 *  - every policy runs to the end and reports sane metrics;
 *  - no policy ever holds more memory on a node than it has (node_overfill == 0, fill <= 1);
 *  - the oracle's throughput is at least every other policy's, unless the scenario's
 *    oracle_note documents why a moving policy can beat the best static binding;
 *  - where memory starts on the wrong node (VMs with first_touch_node), `none` is clearly
 *    below the oracle (vs_oracle <= SUITE_NONE_MAX_VS_ORACLE).
 * Run under the linux host profile (the headline) and under ideal (every lever).
 * And for vnumad's engine (suite_check_vnumad):
 *  - it converges: within SUITE_CONVERGE_S of its start (or of the last arrival, on a host
 *    that cannot bind before the first touch), plus the time its rate limit needs for the
 *    memory it moved, where every VM fits one node and no workload moves its working set
 *    (phased, adverse);
 *  - no ping-pong: on such static workloads no vCPU changes node more than
 *    SUITE_MAX_VCPU_CHANGES times;
 *  - guards hold: max_node_fill <= SUITE_MAX_FILL wherever the oracle's is <= SUITE_ORACLE_FILL
 *    (when the balancer runs from t=0; on a host without binding before the first touch, only
 *    beyond what first touch alone did: none's peak); its own migration never exceeds the
 *    rate limit (the kernel's migrate-on-fault beside it is not vnumad's to pace);
 *  - policies hold: no action on advisory/manual/off VMs, never outside a VM's allowed nodes;
 *  - it never does worse than no balancing at all (`none`), adverse workloads included;
 *  - issue 15's properties (tests/unit/prop_check.h, watched through the whole run): no
 *    lasting overcommit beside idle CPUs, and per VM its vCPU moves and migrated GiB bounded
 *    by what its final layout needed.  A failure known and reported to the engine's owners is
 *    listed in suite_known_failures, with its numbers; only that property is excused there.
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

#include "host/sim/peers.h"
#include "host/sim/scenario.h"
#include "host/sim/sim.h"
#include "policy/engine_internal.h"
#include "tests/unit/prop_check.h"
#include "tests/unit/suite_files.h"

/* "Clearly below": at least 5 % less work than the best static placement. */
#define SUITE_NONE_MAX_VS_ORACLE 0.95
/* Engine properties (issue targets: converge in 60 s; fill <= 0.95 where the oracle's <= 0.90). */
#define SUITE_CONVERGE_S       60.0
#define SUITE_MAX_VCPU_CHANGES 3
#define SUITE_MAX_FILL         0.95
#define SUITE_ORACLE_FILL      0.90

/*
 * Public scenarios on which vnumad's engine breaks one of issue 15's properties (prop_check.h),
 * reported with the numbers; the listed properties only, on that scenario and profile.
 */
static const struct prop_known suite_known_failures[] = {
    {"13-4node-32vms", SIM_PROFILE_IDEAL, PROP_FAIL_OVERCOMMIT,
     "issue 15: node 2 at 33.40 runnable vCPUs on 32 CPUs for 290 s (bound 40 s) while VM vm06 "
     "may use a node with a whole idle CPU (ideal profile only; linux holds)"},
    {"21-full-8node-wide", SIM_PROFILE_IDEAL, PROP_FAIL_VCPU_MOVES,
     "issue 15: w8: 32 vCPU moves, bound 30 (14 of 16 needed); n04 and n10: 8 each, bound 6 (2 of "
     "2 needed): small VMs displaced by flips of wide ones on a host short of CPUs everywhere "
     "(ideal profile only; linux holds)"},
    {NULL, SIM_PROFILE_NR, 0, NULL},
};

/*
 * Issue 15's properties on vnumad's watched run (never below none is checked above).  Returns
 * whether one broke unexcused; the profile's test fails after all scenarios ran, so one run
 * lists every failure.
 */
static bool
suite_check_props(const struct scenario *scn, const struct prop_run *pr,
                  const struct sim_result *vn, const struct sim_result *none)
{
	char what[96];
	bool stale = false;
	unsigned failed, known;

	snprintf(what, sizeof(what), "%s %s", scn->name, sim_profile_name(scn->host_profile));
	failed = prop_check(pr, vn, none, what) & ~PROP_FAIL_NONE;
	known = prop_known_apply(suite_known_failures, scn->name, scn->host_profile, failed, what,
	                         &stale);
	if (failed & ~known)
		print_message("FAILED %s: vnumad broke issue 15's properties 0x%x (above)\n", what,
		              failed & ~known);
	fflush(stdout);
	return (failed & ~known) != 0 || stale;
}

static bool
suite_memory_starts_wrong(const struct scenario *scn)
{
	for (int i = 0; i < scn->nr_vms; i++)
		if (scn->vms[i].first_touch_node >= 0)
			return true;
	return false;
}

/* Every VM fits one node and keeps its working set where it is. */
static bool
suite_static_and_fitting(const struct scenario *scn)
{
	for (int i = 0; i < scn->nr_vms; i++) {
		const struct scn_vm *vm = &scn->vms[i];

		if (vm->workload == SCN_WORKLOAD_PHASED || vm->workload == SCN_WORKLOAD_ADVERSE ||
		    vm->vcpus > scn->host.cpus_per_node ||
		    vm->memory_gib > scn->host.memory_per_node_gib * 0.9)
			return false;
	}
	return true;
}

static bool
suite_has_adverse(const struct scenario *scn)
{
	for (int i = 0; i < scn->nr_vms; i++)
		if (scn->vms[i].workload == SCN_WORKLOAD_ADVERSE)
			return true;
	return false;
}

/*
 * From when convergence is counted: the balancer's start or, on a host that cannot bind
 * before the first touch, the last arrival (a new VM's RAM lands where its guest put it,
 * and locality dips until vnumad moved it home: a change of the host, not ping-pong).
 */
static double
suite_settle_from_s(const struct scenario *scn, const struct sim_result *vn)
{
	double t = scn->balancer_start_s;

	for (int i = 0; i < scn->nr_vms && !(vn->caps & HOST_CAP_BIND_AT_START); i++)
		if (scn->vms[i].start_s > t && scn->vms[i].start_s < scn->duration_s)
			t = scn->vms[i].start_s;
	return t;
}

static void
suite_check_vnumad(const struct scenario *scn, const struct sim_result *vn,
                   const struct sim_result *none, const struct sim_result *oracle)
{
	if (suite_static_and_fitting(scn)) {
		/* No faster than its own rate limit lets it move what it moved. */
		double paced_s =
		    (vn->migrated_gib - vn->kernel_migrated_gib) * 1024.0 / ENGINE_RATE_MIB_S;

		if (vn->converge_s > suite_settle_from_s(scn, vn) + SUITE_CONVERGE_S + paced_s)
			fail_msg("%s: vnumad converged only at %.0f s (%.0f s of paced moves)",
			         scn->name, vn->converge_s, paced_s);
		if (vn->max_vcpu_node_changes > SUITE_MAX_VCPU_CHANGES)
			fail_msg("%s: a vCPU changed node %llu times (ping-pong)", scn->name,
			         (unsigned long long)vn->max_vcpu_node_changes);
	}
	/*
	 * Where the host binds before the first touch, vnumad's arrival binds are a guard too;
	 * elsewhere the guests' first touch may fill a node before vnumad hears of them, so its
	 * own moves must only never fill one beyond that (none's peak).
	 */
	if (scn->balancer_start_s == 0 && oracle->max_node_fill <= SUITE_ORACLE_FILL &&
	    vn->max_node_fill > SUITE_MAX_FILL &&
	    ((vn->caps & HOST_CAP_BIND_AT_START) || vn->max_node_fill > none->max_node_fill + 1e-9))
		fail_msg("%s: vnumad filled a node to %.3f (none: %.3f)", scn->name,
		         vn->max_node_fill, none->max_node_fill);
	if (vn->max_migrate_mib_s > ENGINE_RATE_MIB_S + SIM_REGION_MIB)
		fail_msg("%s: vnumad migrated %.0f MiB/s, above its rate limit", scn->name,
		         vn->max_migrate_mib_s);
	assert_int_equal(vn->policy_mode_actions, 0);
	assert_int_equal(vn->policy_node_violations, 0);
	if (vn->throughput < none->throughput && scn->known_loss != NULL)
		print_message("KNOWN LOSS %s: vnumad %.1f below none %.1f: %s\n", scn->name,
		              vn->throughput, none->throughput, scn->known_loss);
	else if (vn->throughput < none->throughput)
		fail_msg("%s: vnumad (%.1f) below no balancing (%.1f)%s", scn->name, vn->throughput,
		         none->throughput, suite_has_adverse(scn) ? " on an adverse workload" : "");
}

/* Returns whether issue 15's properties failed (every other check fails the test at once). */
static bool
suite_check_scenario(const char *path, enum sim_profile profile)
{
	struct sim_result res[8];
	struct scenario *scn = NULL;
	struct prop_run pr;
	bool props_failed;
	char err[512];
	int nr = 0, oracle = -1, none = -1, vn = -1;

	if (scenario_load_file(path, &scn, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	scn->host_profile = profile;
	prop_init(&pr, scn);
	for (int i = 0; sim_balancers[i] != NULL; i++, nr++) {
		bool watched = strcmp(sim_balancers[i]->name, "vnumad") == 0;

		if ((watched ? prop_run(scn, sim_balancers[i], &res[i], &pr, err, sizeof(err))
		             : sim_run(scn, sim_balancers[i], &res[i], err, sizeof(err))) < 0)
			fail_msg("%s: %s", path, err);
		if (strcmp(sim_balancers[i]->name, "oracle") == 0)
			oracle = i;
		if (strcmp(sim_balancers[i]->name, "none") == 0)
			none = i;
		if (strcmp(sim_balancers[i]->name, "vnumad") == 0)
			vn = i;
		print_message(
		    "%-7s %-28s %-9s locality %.3f throughput %12.1f moves %6llu mig %7.1f "
		    "GiB fill %.2f oom %llu\n",
		    sim_profile_name(profile), scn->name, res[i].policy, res[i].locality,
		    res[i].throughput, (unsigned long long)res[i].vcpu_moves, res[i].migrated_gib,
		    res[i].max_node_fill, (unsigned long long)res[i].oom);
		assert_true(res[i].locality >= 0 && res[i].locality <= 1.0 + 1e-9);
		assert_true(res[i].throughput > 0);
		assert_int_equal(res[i].node_overfill, 0);
		assert_true(res[i].max_node_fill <= 1.0);
		/* A node a move lands on is one of the nodes max_node_fill watches; none moves
		 * nothing; converging is never timed from before the balancer started. */
		assert_true(res[i].max_dest_fill <= res[i].max_node_fill + 1e-9);
		if (i == none)
			assert_true(res[i].max_dest_fill == 0);
		assert_true(res[i].converge_after_start_s <= res[i].converge_s + 1e-9);
		assert_true(res[i].converge_after_start_s >=
		            res[i].converge_s - scn->balancer_start_s - 1e-9);
	}
	assert_true(oracle >= 0 && none >= 0 && vn >= 0);
	suite_check_vnumad(scn, &res[vn], &res[none], &res[oracle]);
	props_failed = suite_check_props(scn, &pr, &res[vn], &res[none]);
	for (int i = 0; i < nr && scn->oracle_note == NULL; i++)
		if (res[i].throughput > res[oracle].throughput)
			fail_msg("%s: %s throughput %.1f beats the oracle's %.1f", scn->name,
			         res[i].policy, res[i].throughput, res[oracle].throughput);
	if (suite_memory_starts_wrong(scn) &&
	    res[none].throughput > SUITE_NONE_MAX_VS_ORACLE * res[oracle].throughput)
		fail_msg("%s: none reaches %.3f of the oracle although memory starts misplaced",
		         scn->name, res[none].throughput / res[oracle].throughput);
	for (int i = 0; i < nr; i++)
		sim_result_free(&res[i]);
	prop_free(&pr);
	scenario_free(scn);
	return props_failed;
}

static void
suite_run_profile(enum sim_profile profile)
{
	const char *only = getenv("VNUMAD_SUITE_ONLY");
	static struct suite_files sf;
	int props_failed = 0;

	suite_files_list(&sf);
	assert_true(sf.nr >= 10);
	for (int i = 0; i < sf.nr; i++)
		if (only == NULL || strstr(sf.path[i], only) != NULL)
			props_failed += suite_check_scenario(sf.path[i], profile);
	if (props_failed > 0)
		fail_msg("%d scenarios broke issue 15's properties (listed above)", props_failed);
}

/* The headline: what `vnumad --host linux` can do and sense. */
static void
test_suite_scenarios_linux(void **state)
{
	suite_run_profile(SIM_PROFILE_LINUX);
}

/* Every lever the model has: the same properties must hold with them. */
static void
test_suite_scenarios_ideal(void **state)
{
	suite_run_profile(SIM_PROFILE_IDEAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_suite_scenarios_linux),
	    cmocka_unit_test(test_suite_scenarios_ideal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

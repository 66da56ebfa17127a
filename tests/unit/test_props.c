/*
 * test_props.c - issue 15's properties (tests/unit/prop_check.h: never below `none`, no
 * lasting overcommit beside idle CPUs, moves bounded by what the final layout needed) on
 * seeded random scenarios (host/sim/scenario_random.h), under the linux and ideal profiles.
 * The public suite gets the same checks in test_suite.c.
 *
 * Every scenario checked prints its seed and its figures; a failing one also prints its JSON,
 * which `vnumactl simulate FILE --host-profile PROFILE` replays.  All failures of a run are
 * listed before the test fails.  Environment (for longer runs by hand or in a nightly job):
 *  - VNUMAD_PROP_SEEDS: how many scenarios (default PROPS_SEEDS_DEFAULT);
 *  - VNUMAD_PROP_SEED: the first of them (default PROPS_SEED_BASE); scenario k has seed
 *    props_seed(first + k), so one failing seed replays with VNUMAD_PROP_SEED=first+k and
 *    VNUMAD_PROP_SEEDS=1 ... or by its JSON;
 *  - VNUMAD_PROP_DURATION_S: simulated seconds per scenario (default PROPS_DURATION_S).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/fileio.h"
#include "host/sim/peers.h"
#include "host/sim/scenario.h"
#include "host/sim/scenario_random.h"
#include "host/sim/sim.h"
#include "tests/unit/prop_check.h"

/*
 * Defaults sized for ctest on a 2-core machine, ASan build included (see the commit that
 * set them for the measured times); the properties do not depend on them.  240 s is four
 * times PROP_OVERCOMMIT_S and long enough for a dwell, a spread and the memory that follows.
 */
#define PROPS_SEEDS_DEFAULT 32
#define PROPS_SEED_BASE     0x15
#define PROPS_DURATION_S    240.0
#define PROPS_SEED_STREAM   15 /* the PCG32 stream the seeds are drawn from (issue 15) */
/* Largest file of tests/fixtures/props/ read. */
#define PROPS_FILE_MAX_BYTES (1 << 20)
/* Seeds drawn (and loaded) by the generator test. */
#define PROPS_GEN_SEEDS 500

/*
 * Known failures: random and found scenarios on which the engine (policy/) breaks a property,
 * reported to the engine's owners (issue 15) with the numbers measured when listed, so CI
 * stays green meanwhile.  Only the listed properties are excused, and only on that scenario
 * and profile; every other property is still checked there.  The random ones are the failures
 * among the PROPS_SEEDS_DEFAULT seeds from PROPS_SEED_BASE; a longer run finds more.
 */
static const struct prop_known props_known_failures[] = {
    {"found-c80de0f9d4d60e0a", SIM_PROFILE_LINUX, PROP_FAIL_NONE,
     "issue 15: vnumad at 0.9898 of none (4140.8 vs 4183.3)"},
    {"found-c80de0f9d4d60e0a", SIM_PROFILE_IDEAL, PROP_FAIL_NONE,
     "issue 15: vnumad at 0.9912 of none (4146.3 vs 4183.3)"},
    {"found-8cd19bf1290410b3", SIM_PROFILE_LINUX, PROP_FAIL_VCPU_MOVES,
     "issue 15: vm1: 5 vCPU moves, bound 4 (1 of 7 needed)"},
    {"found-8cd19bf1290410b3", SIM_PROFILE_IDEAL, PROP_FAIL_VCPU_MOVES,
     "issue 15: vm1: 11 vCPU moves, bound 8 (3 of 7 needed); vm2 (adverse, left alone after "
     "35 s and again after 183 s): 50 vCPU moves, bound 22 (10 of 23 needed)"},
    {"random-52d28d74af5662ea", SIM_PROFILE_IDEAL, PROP_FAIL_VCPU_MOVES,
     "issue 15: vm3 (adverse, 23 vCPUs): 66 vCPU moves, bound 55 (15 of 23 needed); 101 before "
     "adverse guests were left alone"},
    {"random-0416b524c3800eb2", SIM_PROFILE_IDEAL, PROP_FAIL_MEM_MOVES | PROP_FAIL_VCPU_MOVES,
     "issue 15: vm0: 19 vCPU moves, bound 12 (5 of 12 needed); vm1: 8.00 GiB migrated, bound 6.00 "
     "(0.00 needed); vm2: 19.59 GiB migrated, bound 13.00 (0.00 needed)"},
    {NULL, SIM_PROFILE_NR, 0, NULL},
};

/* Scenario k's seed: 64 bits drawn from a PCG32 stream seeded with first + k. */
static uint64_t
props_seed(uint64_t first_plus_k)
{
	struct util_rng rng;
	uint64_t hi;

	util_rng_seed(&rng, first_plus_k, PROPS_SEED_STREAM);
	hi = util_rng_u32(&rng);
	return hi << 32 | util_rng_u32(&rng);
}

static double
props_env(const char *name, double dflt)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return dflt;
	v = strtod(s, &end);
	if (*end != '\0' || !(v >= 0))
		fail_msg("%s: not a number: %s", name, s);
	return v;
}

/* One scenario under one profile; returns the number of unexcused failed properties. */
static int
props_check_one(const char *json, struct scenario *scn, enum sim_profile profile)
{
	struct sim_result none, vn;
	struct prop_run pr;
	char what[96], err[512];
	bool stale = false;
	unsigned failed, known;

	scn->host_profile = profile;
	snprintf(what, sizeof(what), "%s %s", scn->name, sim_profile_name(profile));
	if (sim_run(scn, sim_balancer_find("none"), &none, err, sizeof(err)) < 0)
		fail_msg("%s: %s", what, err);
	prop_init(&pr, scn);
	if (prop_run(scn, sim_balancer_find("vnumad"), &vn, &pr, err, sizeof(err)) < 0)
		fail_msg("%s: %s", what, err);
	printf("%s: %d nodes x %d CPUs, %d VMs: vnumad/none %.4f, moves %llu, mig %.1f GiB, "
	       "overcommit %.1f s\n",
	       what, scn->host.nodes, scn->host.cpus_per_node, scn->nr_vms,
	       vn.throughput / none.throughput, (unsigned long long)vn.vcpu_moves,
	       vn.migrated_gib - vn.kernel_migrated_gib, pr.worst_s);
	assert_int_equal(vn.node_overfill, 0);
	assert_int_equal(vn.policy_node_violations, 0);
	failed = prop_check(&pr, &vn, &none, what);
	known = prop_known_apply(props_known_failures, scn->name, profile, failed, what, &stale);
	if (failed & ~known)
		printf(
		    "FAILED %s; replay with `vnumactl simulate FILE --host-profile %s`, FILE:\n%s",
		    what, sim_profile_name(profile), json);
	prop_free(&pr);
	sim_result_free(&none);
	sim_result_free(&vn);
	return (failed & ~known) || stale ? 1 : 0;
}

/* The properties on VNUMAD_PROP_SEEDS random scenarios, linux and ideal. */
static void
test_props_random(void **state)
{
	uint64_t first = (uint64_t)props_env("VNUMAD_PROP_SEED", PROPS_SEED_BASE);
	int nr = (int)props_env("VNUMAD_PROP_SEEDS", PROPS_SEEDS_DEFAULT), bad = 0;
	double duration_s = props_env("VNUMAD_PROP_DURATION_S", PROPS_DURATION_S);

	printf("random scenarios: %d from VNUMAD_PROP_SEED=%" PRIu64 ", %.0f s each\n", nr, first,
	       duration_s);
	for (int k = 0; k < nr; k++) {
		uint64_t seed = props_seed(first + (uint64_t)k);
		char *json = scenario_random_json(seed, duration_s), err[512];
		struct scenario *scn = NULL;

		if (scenario_load_string(json, &scn, err, sizeof(err)) < 0)
			fail_msg("seed 0x%016" PRIx64 ": invalid scenario: %s\n%s", seed, err,
			         json);
		printf("scenario %d: VNUMAD_PROP_SEED=%" PRIu64 " VNUMAD_PROP_SEEDS=1\n", k,
		       first + (uint64_t)k);
		bad += props_check_one(json, scn, SIM_PROFILE_LINUX);
		bad += props_check_one(json, scn, SIM_PROFILE_IDEAL);
		scenario_free(scn);
		free(json);
	}
	fflush(stdout);
	if (bad > 0)
		fail_msg("%d scenario runs broke a property (listed above)", bad);
}

/*
 * The scenarios random runs found breaking a property, kept in tests/fixtures/props/ (by an
 * earlier generator, so their seeds alone no longer make them): the same checks, both profiles.
 */
static void
test_props_found(void **state)
{
	const char *src = getenv("VNUMAD_SRCDIR");
	char dir[512], path[1024], err[512];
	struct dirent *de;
	int bad = 0, nr = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/props", src ? src : ".");
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		struct scenario *scn = NULL;
		size_t size;
		char *json;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (fileio_read(path, PROPS_FILE_MAX_BYTES, &json, &size) < 0)
			fail_msg("%s: cannot read it", path);
		if (scenario_load_string(json, &scn, err, sizeof(err)) < 0)
			fail_msg("%s: %s", path, err);
		bad += props_check_one(json, scn, SIM_PROFILE_LINUX);
		bad += props_check_one(json, scn, SIM_PROFILE_IDEAL);
		scenario_free(scn);
		free(json);
		nr++;
	}
	closedir(d);
	assert_true(nr > 0);
	fflush(stdout);
	if (bad > 0)
		fail_msg("%d found-scenario runs broke a property (listed above)", bad);
}

/* The generator: the same text for the same seed, always a valid scenario, varied. */
static void
test_props_generator(void **state)
{
	int nodes_seen = 0, wide = 0, late = 0, met = 0, workloads = 0;

	for (uint64_t k = 0; k < PROPS_GEN_SEEDS; k++) {
		uint64_t seed = props_seed(k);
		char *a = scenario_random_json(seed, PROPS_DURATION_S), err[512];
		char *b = scenario_random_json(seed, PROPS_DURATION_S);
		struct scenario *scn = NULL;

		assert_string_equal(a, b);
		if (scenario_load_string(a, &scn, err, sizeof(err)) < 0)
			fail_msg("seed 0x%016" PRIx64 ": %s\n%s", seed, err, a);
		nodes_seen |= scn->host.nodes;
		met += scn->balancer_start_s > 0;
		for (int i = 0; i < scn->nr_vms; i++) {
			const struct scn_vm *vm = &scn->vms[i];

			wide += vm->vcpus > scn->host.cpus_per_node ||
			        vm->memory_gib > scn->host.memory_per_node_gib;
			late += vm->start_s > 0;
			workloads |= 1 << vm->workload;
		}
		scenario_free(scn);
		free(a);
		free(b);
	}
	assert_int_equal(nodes_seen, 2 | 4 | 8);
	assert_int_equal(workloads, (1 << (SCN_WORKLOAD_IDLE + 1)) - 1);
	assert_true(wide > 0 && late > 0 && met > 0);
	/* Another seed, another scenario. */
	{
		char *a = scenario_random_json(1, PROPS_DURATION_S);
		char *b = scenario_random_json(2, PROPS_DURATION_S);

		assert_true(strcmp(a, b) != 0);
		free(a);
		free(b);
	}
}

/* ---- controls: balancers that break the properties on purpose ------------------------- */

/* Every vCPU pinned to node 0, whatever the load: the overcommit property must see it. */
static int
props_pile_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	for (int i = 0; i < snap->nr_vms; i++)
		for (int v = 0; v < snap->vms[i].nr_vcpus; v++)
			plan_add_pin(plan, snap->vms[i].id, v, nodemask_of(0));
	plan->next_call_s = 1;
	return 0;
}

/* Every 5 s all vCPUs and all memory to the next node: the move bounds must see it. */
static int
props_bounce_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	int to = (int)(snap->now_s / 5) % snap->nr_nodes;

	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];

		for (int v = 0; v < vm->nr_vcpus; v++)
			plan_add_pin(plan, vm->id, v, nodemask_of(to));
		for (int n = 0; n < snap->nr_nodes; n++)
			if (n != to && vm->resident_mib[n] > 0)
				plan_add_move(plan, vm->id, n, to, vm->resident_mib[n]);
	}
	plan->next_call_s = 5;
	return 0;
}

static const struct balancer_ops props_pile_ops = {
    .name = "pile", .description = "test: all vCPUs on node 0", .decide = props_pile_decide};
static const struct balancer_ops props_bounce_ops = {
    .name = "bounce",
    .description = "test: everything to the next node every 5 s",
    .decide = props_bounce_decide};

/* 12 busy vCPUs on a host of two 8-CPU nodes: one node cannot hold them. */
static const char props_control_json[] =
    "{\"name\": \"props-control\", \"duration_s\": 120, \"host\": {\"nodes\": 2, "
    "\"cpus_per_node\": 8, \"memory_per_node_gib\": 32}, \"vms\": [{\"name\": \"wide\", "
    "\"vcpus\": 12, \"memory_gib\": 8, \"first_touch_node\": 1}]}";

static unsigned
props_control_run(const struct balancer_ops *bal, enum sim_profile profile)
{
	struct sim_result none, res;
	struct scenario *scn = NULL;
	struct prop_run pr;
	char err[512];
	unsigned failed;

	assert_int_equal(scenario_load_string(props_control_json, &scn, err, sizeof(err)), 0);
	scn->host_profile = profile;
	assert_int_equal(sim_run(scn, sim_balancer_find("none"), &none, err, sizeof(err)), 0);
	prop_init(&pr, scn);
	assert_int_equal(prop_run(scn, bal, &res, &pr, err, sizeof(err)), 0);
	failed = prop_check(&pr, &res, &none, bal->name);
	prop_free(&pr);
	sim_result_free(&none);
	sim_result_free(&res);
	scenario_free(scn);
	return failed;
}

/* The checks catch what they are for, and vnumad passes them where it can. */
static void
test_props_controls(void **state)
{
	for (int p = 0; p < 2; p++) {
		enum sim_profile profile = p ? SIM_PROFILE_IDEAL : SIM_PROFILE_LINUX;

		assert_true(props_control_run(&props_pile_ops, profile) & PROP_FAIL_OVERCOMMIT);
		assert_int_equal(props_control_run(&props_bounce_ops, profile) &
		                     (PROP_FAIL_VCPU_MOVES | PROP_FAIL_MEM_MOVES),
		                 PROP_FAIL_VCPU_MOVES | PROP_FAIL_MEM_MOVES);
		assert_int_equal(props_control_run(&vnumad_balancer_ops, profile), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_props_generator),
	    cmocka_unit_test(test_props_controls),
	    cmocka_unit_test(test_props_found),
	    cmocka_unit_test(test_props_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

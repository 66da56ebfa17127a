/*
 * test_oracle_replay.c - the oracle is the best static binding, checked against the layouts
 * the other balancers reach: for every public scenario (tests/sim/NN-*.json) and every
 * balancer but the oracle, the balancer's final layout, replayed as a static binding from
 * t = 0, must not beat the oracle by more than REPLAY_MARGIN.
 *
 * The layout of a run (replay_capture_run): per VM, the node of each vCPU and of each 2-MiB
 * region of its RAM (ground truth: sim_vcpu_node, sim_vm_region_node), taken on the last tick
 * the VM runs.  That is the end of the run for a VM still running then; a VM that leaves
 * (stop_s) keeps the layout it had on its last tick before leaving, so every VM replays the
 * layout it had when last seen.  A VM that never runs (start_s at or after the end) has no
 * layout and nothing to replay; the oracle does not place it either.
 *
 * The replay (replay_ops): a test-only balancer with BALANCER_FULL_KNOWLEDGE, like the oracle
 * (in place from t = 0 whatever the scenario's balancer_start_s; no sampling).  When a VM
 * arrives it pins each vCPU to its captured node and binds each run of regions captured on
 * one node to that node, so memory is first-touched there; it never acts again.  Regions that
 * had no memory when captured (oom) get no bind.  Layouts of VMs captured at different moments
 * may not fit together at some moment; the simulator's allocator then spills to the nearest
 * node with room, as for any binding, and the replay is measured as it runs.
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
#include <time.h>

#include "host/sim/peer_oracle.h"
#include "host/sim/peers.h"
#include "host/sim/scenario.h"
#include "host/sim/sim.h"
#include "policy/util.h"
#include "tests/unit/suite_files.h"

/*
 * How far a replay may beat the oracle's measured throughput, relative (default 0.2 %).  Not
 * 0 because the oracle values adverse VMs at the expectation over the simulator's random
 * permutations (docs/peers/oracle.md) while a run sees one draw: on 09-adverse, autonuma's
 * final layout (an adverse VM split over both nodes) measures between -0.10 % and +0.12 % of
 * the oracle's throughput away from its expected value over 40 seeds.  Everything else,
 * phased VMs included, is valued as the simulator measures it (to 1e-9) as long as no node
 * a phased VM runs on changes how oversubscribed it is during that VM's life.
 */
#define REPLAY_MARGIN 0.002

struct replay_vm {
	bool seen;
	int nr_vcpus;
	int *vcpu_node;
	uint32_t nr_regions;
	int *region_node; /* -1: not allocated */
};

struct replay_layout {
	int nr_vms;
	struct replay_vm *vms;
};

/* ---- capture ------------------------------------------------------------------------ */

static struct replay_layout *
replay_layout_new(const struct scenario *scn)
{
	struct replay_layout *l = xcalloc(1, sizeof(*l));

	l->nr_vms = scn->nr_vms;
	l->vms = xcalloc((size_t)scn->nr_vms + 1, sizeof(*l->vms));
	return l;
}

static void
replay_layout_free(struct replay_layout *l)
{
	for (int i = 0; l != NULL && i < l->nr_vms; i++) {
		free(l->vms[i].vcpu_node);
		free(l->vms[i].region_node);
	}
	if (l != NULL)
		free(l->vms);
	free(l);
}

static void
replay_capture_vm(const struct sim *sim, const struct scn_vm *sv, int idx, struct replay_vm *rv)
{
	uint32_t nr = sim_vm_nr_regions(sim, idx);

	if (rv->vcpu_node == NULL) {
		rv->nr_vcpus = sv->vcpus;
		rv->vcpu_node = xcalloc((size_t)sv->vcpus, sizeof(int));
		rv->nr_regions = nr;
		rv->region_node = xcalloc((size_t)nr + 1, sizeof(int));
	}
	assert_int_equal(rv->nr_regions, nr);
	for (int v = 0; v < sv->vcpus; v++)
		rv->vcpu_node[v] = sim_vcpu_node(sim, idx, v);
	for (uint32_t r = 0; r < nr; r++)
		rv->region_node[r] = sim_vm_region_node(sim, idx, r);
	rv->seen = true;
}

/* Run bal over scn step by step; the layouts as the header says, the result in res. */
static struct replay_layout *
replay_capture_run(const struct scenario *scn, const struct balancer_ops *bal,
                   struct sim_result *res)
{
	struct replay_layout *l = replay_layout_new(scn);
	int64_t ticks = llround(scn->duration_s / SIM_TICK_S);
	char err[256] = "";
	struct sim *sim = sim_new(scn, bal, err, sizeof(err));

	if (sim == NULL)
		fail_msg("%s: %s", scn->name, err);
	for (int64_t t = 0; t < ticks; t++) {
		if (sim_step(sim) < 0)
			fail_msg("%s: %s failed at %.1f s", scn->name, bal->name, sim_now(sim));
		for (int i = 0; i < scn->nr_vms; i++) {
			const struct scn_vm *sv = &scn->vms[i];
			/* It leaves at the start of the next tick (sim.c: departures), or the run
			 * ends. */
			bool last = t + 1 == ticks ||
			            (sv->stop_s >= 0 && sim_now(sim) >= sv->stop_s - 1e-9);

			if (last && sim_vcpu_node(sim, i, 0) >= 0)
				replay_capture_vm(sim, sv, i, &l->vms[i]);
		}
	}
	sim_result_fill(sim, res);
	sim_free(sim);
	return l;
}

/* ---- the replay balancer ------------------------------------------------------------- */

/*
 * The layout replay_create() replays: balancer_ops has no user argument (args->knowledge is
 * the scenario), so the test hands it over here before each sim_run.
 */
static const struct replay_layout *replay_current;

struct replay_state {
	const struct scenario *scn;
	const struct replay_layout *layout;
	bool *placed; /* per scenario VM */
};

static void *
replay_create(const struct balancer_args *args)
{
	struct replay_state *st = xcalloc(1, sizeof(*st));

	st->scn = args->knowledge;
	st->layout = replay_current;
	st->placed = xcalloc((size_t)st->scn->nr_vms + 1, sizeof(bool));
	return st;
}

static void
replay_destroy(void *state)
{
	struct replay_state *st = state;

	free(st->placed);
	free(st);
}

/* The scenario VM an arriving snapshot VM stands for, as the oracle matches it. */
static int
replay_match(const struct replay_state *st, const struct snap_vm *vm, double now_s)
{
	for (int i = 0; i < st->scn->nr_vms; i++)
		if (!st->placed[i] && strcmp(st->scn->vms[i].name, vm->name) == 0 &&
		    st->scn->vms[i].start_s <= now_s + SIM_TICK_S)
			return i;
	return -1;
}

static void
replay_place(const struct replay_vm *rv, const struct snap_vm *vm, struct plan *plan)
{
	uint32_t r = 0;

	for (int v = 0; v < rv->nr_vcpus && v < vm->nr_vcpus; v++)
		if (rv->vcpu_node[v] >= 0)
			plan_add_pin(plan, vm->id, v, nodemask_of(rv->vcpu_node[v]));
	while (r < rv->nr_regions) {
		uint32_t end = r + 1;
		struct plan_mem_bind *b;

		while (end < rv->nr_regions && rv->region_node[end] == rv->region_node[r])
			end++;
		if (rv->region_node[r] >= 0) {
			b = plan_add_bind(plan, vm->id, nodemask_of(rv->region_node[r]));
			b->start_mib = (uint64_t)r * SIM_REGION_MIB;
			b->len_mib = (uint64_t)(end - r) * SIM_REGION_MIB;
		}
		r = end;
	}
}

static int
replay_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct replay_state *st = state;

	plan->next_call_s = 3600;
	for (int i = 0; i < snap->nr_vms; i++) {
		int idx = replay_match(st, &snap->vms[i], snap->now_s);

		if (idx < 0)
			continue;
		st->placed[idx] = true;
		if (st->layout->vms[idx].seen)
			replay_place(&st->layout->vms[idx], &snap->vms[i], plan);
	}
	return 0;
}

static const struct balancer_ops replay_ops = {
    .name = "replay",
    .description = "a captured final layout as a static binding from t=0 (test only)",
    .host_flags = BALANCER_FULL_KNOWLEDGE,
    .default_scan_mib_s = 0,
    .create = replay_create,
    .decide = replay_decide,
    .destroy = replay_destroy,
};

/* ---- the check ----------------------------------------------------------------------- */

static double
replay_run(const struct scenario *scn, const struct replay_layout *l)
{
	struct sim_result res;
	char err[256] = "";
	double w;

	replay_current = l;
	if (sim_run(scn, &replay_ops, &res, err, sizeof(err)) < 0)
		fail_msg("%s: replay: %s", scn->name, err);
	replay_current = NULL;
	assert_int_equal(res.node_overfill, 0);
	w = res.throughput;
	sim_result_free(&res);
	return w;
}

/* Returns false (after saying why) when a replay beats the oracle by more than the margin. */
static bool
replay_check_scenario(const char *path)
{
	struct scenario *scn = NULL;
	struct sim_result res;
	char err[512] = "", line[512];
	double oracle, best = 0;
	const char *best_name = "-";
	bool ok;
	int len;

	if (scenario_load_file(path, &scn, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	if (sim_run(scn, &peer_oracle_ops, &res, err, sizeof(err)) < 0)
		fail_msg("%s: oracle: %s", path, err);
	oracle = res.throughput;
	sim_result_free(&res);
	len = snprintf(line, sizeof(line), "%-22s oracle %10.1f", scn->name, oracle);
	for (int i = 0; sim_balancers[i] != NULL; i++) {
		const struct balancer_ops *bal = sim_balancers[i];
		struct replay_layout *l;
		double w;

		if (bal == &peer_oracle_ops)
			continue;
		l = replay_capture_run(scn, bal, &res);
		sim_result_free(&res);
		w = replay_run(scn, l);
		replay_layout_free(l);
		len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %.4f", bal->name,
		                w / oracle);
		if (w > best) {
			best = w;
			best_name = bal->name;
		}
	}
	print_message("%s | best %s %+.3f %%\n", line, best_name, 100.0 * (best / oracle - 1));
	ok = best <= oracle * (1 + REPLAY_MARGIN);
	if (!ok)
		print_error("%s: the %s layout replayed from t=0 reaches %.1f, %.3f %% above the "
		            "oracle's %.1f (margin %.2f %%)\n",
		            scn->name, best_name, best, 100.0 * (best / oracle - 1), oracle,
		            100.0 * REPLAY_MARGIN);
	scenario_free(scn);
	return ok;
}

static void
test_replays_never_beat_the_oracle(void **state)
{
	const char *only = getenv("VNUMAD_SUITE_ONLY");
	static struct suite_files sf;
	int failed = 0;

	suite_files_list(&sf);
	assert_true(sf.nr >= 10);
	for (int i = 0; i < sf.nr; i++)
		if (only == NULL || strstr(sf.path[i], only) != NULL)
			failed += !replay_check_scenario(sf.path[i]);
	if (failed > 0)
		fail_msg("%d scenario(s) where a replayed layout beats the oracle", failed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replays_never_beat_the_oracle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * sim_host.c - the simulated host behind struct host_ops, for `vnumad --simulate`.
 *
 * The simulation runs in external mode: no balancer inside it; vnumad takes snapshots and
 * acts through the primitives below, each applied as a one-action plan.  advance() steps the
 * model tick by tick up to the requested host time and stops early when VMs arrive, so the
 * daemon can place them before their guests touch memory, and when it has stepped for
 * SIM_HOST_ADVANCE_BUDGET_MS of wall-clock time, so that a model too big for the daemon's
 * --speed (10,000 VMs at 10x) only makes the simulated clock lag, never the daemon deaf to its
 * socket and signals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/host.h"
#include "host/sim/scenario.h"
#include "host/sim/sim.h"

/*
 * Wall-clock time one advance() may step the model for, milliseconds: 100.  The daemon serves
 * its socket and checks for signals between calls, so this bounds how long a request or a
 * SIGTERM waits on the model (a round comes on top).  A tick is never cut: one takes longer
 * when a single tick does.
 */
#define SIM_HOST_ADVANCE_BUDGET_MS 100.0

struct sim_host {
	struct host base; /* first: the agent sees a struct host */
	struct scenario *scn;
	struct sim *sim;
	struct plan one;  /* scratch plan for one action */
	double budget_ms; /* SIM_HOST_ADVANCE_BUDGET_MS, or a test's (host_sim_set_budget) */
	char describe[320];
};

static double
sim_host_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct sim_host *
sim_host_of(struct host *h)
{
	return (struct sim_host *)h;
}

static void
sim_host_close(struct host *h)
{
	struct sim_host *sh = sim_host_of(h);

	if (sh == NULL)
		return;
	sim_free(sh->sim);
	scenario_free(sh->scn);
	plan_free(&sh->one);
	free(sh);
}

static double
sim_host_now(struct host *h)
{
	return sim_now(sim_host_of(h)->sim);
}

/*
 * Step up to until_s: 1 when VMs arrived (at once), else 0, also when the wall-clock budget
 * ran out first (the clock then lags until_s; the caller sees it in now()).  At least one tick
 * per call, so the model always moves on.
 */
static int
sim_host_advance(struct host *h, double until_s)
{
	struct sim_host *sh = sim_host_of(h);
	double start_ms = sim_host_wall_ms();

	/* The scenario's duration does not stop a daemon's host: it runs on. */
	while (sim_now(sh->sim) + SIM_TICK_S / 2 < until_s) {
		int rc = sim_step(sh->sim);

		if (rc < 0)
			return rc;
		if (sim_take_arrivals(sh->sim))
			return 1;
		if (sim_host_wall_ms() - start_ms >= sh->budget_ms)
			return 0;
	}
	return 0;
}

void
host_sim_set_budget(struct host *h, double budget_ms)
{
	sim_host_of(h)->budget_ms = budget_ms;
}

static int
sim_host_snapshot(struct host *h, struct snapshot **out)
{
	*out = sim_snapshot(sim_host_of(h)->sim);
	return 0;
}

/* Apply the scratch plan; the simulator ignores actions on VMs that are gone. */
static void
sim_host_apply(struct sim_host *sh)
{
	sim_apply_external(sh->sim, &sh->one);
	plan_reset(&sh->one);
}

static int
sim_host_pin(struct host *h, int vm_id, int vcpu, uint64_t nodes)
{
	struct sim_host *sh = sim_host_of(h);

	plan_add_pin(&sh->one, vm_id, vcpu, nodes);
	sim_host_apply(sh);
	return 0;
}

static int
sim_host_bind(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, uint64_t nodes)
{
	struct sim_host *sh = sim_host_of(h);
	struct plan_mem_bind *b;
	int rc = sim_lever_check(sh->sim, HOST_CAP_BIND_LIVE, vm_id);

	if (rc < 0)
		return rc; /* as --host linux answers: the profile has no such lever */
	b = plan_add_bind(&sh->one, vm_id, nodes);
	b->start_mib = start_mib;
	b->len_mib = len_mib;
	sim_host_apply(sh);
	return 0;
}

static int
sim_host_move(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, int from_node,
              int to_node, uint64_t mib)
{
	struct sim_host *sh = sim_host_of(h);
	struct plan_mem_move *mv = plan_add_move(&sh->one, vm_id, from_node, to_node, mib);

	mv->start_mib = start_mib;
	mv->len_mib = len_mib;
	sim_host_apply(sh);
	return 0;
}

static int
sim_host_sampling(struct host *h, int vm_id, double scan_mib_s)
{
	struct sim_host *sh = sim_host_of(h);
	int rc = sim_lever_check(sh->sim, HOST_CAP_VM_SAMPLING, vm_id);

	if (rc < 0)
		return rc; /* as --host linux answers: the kernel sets its own scan rate */
	plan_add_sampling(&sh->one, vm_id, scan_mib_s);
	sim_host_apply(sh);
	return 0;
}

static void
sim_host_commit(struct host *h)
{
	sim_commit_external(sim_host_of(h)->sim);
}

static const char *
sim_host_sampling_source(struct host *h, int vm_id, const char **reason)
{
	*reason = "simulated hinting faults";
	return "fault-stats";
}

static const char *
sim_host_describe(struct host *h)
{
	return sim_host_of(h)->describe;
}

/* Why no profile has the scan tunables, for scan_tunables_get and the levers. */
#define SIM_HOST_NO_SCAN_WHY "the simulated host does not model the kernel's scan period"

/*
 * No profile has the host-wide scan tunables: the simulator does not model the kernel's scan
 * period, so a lever it offered would change nothing in it (BRIEF section 3, lever parity).
 */
static int
sim_host_scan_get(struct host *h, struct scan_tunables *out, const char **why)
{
	(void)h;
	(void)out;
	*why = SIM_HOST_NO_SCAN_WHY;
	return -EOPNOTSUPP;
}

static int
sim_host_scan_set(struct host *h, const struct scan_tunables *t)
{
	(void)h;
	(void)t;
	return -EOPNOTSUPP;
}

/*
 * Exactly the run's caps (lever parity): a lever is present when the profile has it, else
 * absent, as the simulator answers it with -EOPNOTSUPP; the scan tunables with the reason
 * sim_host_scan_get gives.
 */
static void
sim_host_levers(struct host *h, struct host_lever *out)
{
	struct sim_host *sh = sim_host_of(h);
	const char *profile = sim_profile_name(sh->scn->host_profile);
	unsigned caps = sim_caps(sh->sim);

	for (int i = 0; i < HOST_LEVER_NR; i++) {
		bool has = (caps & (1u << i)) != 0;

		out[i].state = has ? HOST_LEVER_PRESENT : HOST_LEVER_ABSENT;
		if (has)
			snprintf(out[i].reason, sizeof(out[i].reason),
			         "simulated: the %s profile has it", profile);
		else if (1u << i == HOST_CAP_SCAN_TUNABLES)
			snprintf(out[i].reason, sizeof(out[i].reason), "%s", SIM_HOST_NO_SCAN_WHY);
		else
			snprintf(out[i].reason, sizeof(out[i].reason),
			         "the %s profile stands for a host without it", profile);
	}
}

static const struct host_ops sim_host_ops = {
    .name = "sim",
    .close = sim_host_close,
    .now = sim_host_now,
    .advance = sim_host_advance,
    .snapshot = sim_host_snapshot,
    .pin_vcpu = sim_host_pin,
    .bind_memory = sim_host_bind,
    .move_memory = sim_host_move,
    .set_sampling = sim_host_sampling,
    .commit = sim_host_commit,
    .sampling_source = sim_host_sampling_source,
    .policy_persist = NULL,
    .describe = sim_host_describe,
    .wake_s = NULL,
    .scan_tunables_get = sim_host_scan_get,
    .scan_tunables_set = sim_host_scan_set,
    .levers = sim_host_levers,
};

struct sim *
host_sim_model(struct host *h)
{
	return h != NULL && h->ops == &sim_host_ops ? sim_host_of(h)->sim : NULL;
}

int
host_sim_open(const char *scenario, enum sim_profile profile, struct host **out, char *err,
              size_t errlen)
{
	char caps[160];

	struct sim_host *sh = xcalloc(1, sizeof(*sh));
	int rc;

	if (scenario == NULL || strcmp(scenario, "default") == 0)
		rc = scenario_load_string(scenario_default_json, &sh->scn, err, errlen);
	else
		rc = scenario_load_file(scenario, &sh->scn, err, errlen);
	if (rc < 0)
		goto fail;
	sh->scn->host_profile = profile;
	sh->sim = sim_new_external(sh->scn, err, errlen);
	if (sh->sim == NULL) {
		rc = -EINVAL;
		goto fail;
	}
	plan_init(&sh->one);
	sh->budget_ms = SIM_HOST_ADVANCE_BUDGET_MS;
	snprintf(sh->describe, sizeof(sh->describe), "simulated, scenario %s, host profile %s (%s)",
	         sh->scn->name, sim_profile_name(profile),
	         host_caps_format(sim_profile_caps(profile), caps, sizeof(caps)));
	sh->base.ops = &sim_host_ops;
	*out = &sh->base;
	return 0;
fail:
	scenario_free(sh->scn);
	free(sh);
	return rc;
}

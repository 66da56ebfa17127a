/*
 * test_sim_host.c - the simulated host behind struct host_ops (host/sim/sim_host.c): one
 * advance() steps the model for a bounded wall-clock time and returns short of what was asked,
 * so that a model too big for the daemon's --speed never keeps it from its socket and signals.
 *
 * No assertion depends on how fast anything runs: the budget is set through the test hook
 * host_sim_set_budget(), to none (one tick per call) or to more than any run takes, and what is
 * checked is how many ticks a call made.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/host.h"
#include "host/sim/sim.h"
#include "policy/util.h"

/* VMs of the "big" scenario: enough that a tick is real work, few enough for a unit test. */
#define BIG_VMS 400
/* A budget no run of these tests comes near, milliseconds (an hour). */
#define BUDGET_UNBOUNDED_MS 3.6e6

/* Ticks between host times a and b. */
static long
ticks(double a, double b)
{
	return lround((b - a) / SIM_TICK_S);
}

/* A scenario of BIG_VMS VMs, all there from the start, in a file (path filled in). */
static void
write_big_scenario(char *path, size_t len)
{
	struct util_buf b = {0};
	FILE *f;

	snprintf(path, len, "/tmp/vnumad-simhost-%d.json", (int)getpid());
	util_buf_printf(&b, "{\"name\":\"big\",\"host\":{\"nodes\":8,\"cpus_per_node\":32,"
	                    "\"memory_per_node_gib\":1024},\"vms\":[");
	for (int i = 0; i < BIG_VMS; i++)
		util_buf_printf(&b, "%s{\"name\":\"vm%d\",\"vcpus\":2,\"memory_gib\":4}",
		                i ? "," : "", i);
	util_buf_printf(&b, "]}\n");
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
	assert_int_equal(fclose(f), 0);
	free(b.data);
}

static struct host *
open_big(char *path, size_t len)
{
	struct host *h = NULL;
	char err[512];

	write_big_scenario(path, len);
	if (host_sim_open(path, SIM_PROFILE_LINUX, &h, err, sizeof(err)) < 0)
		fail_msg("host_sim_open: %s", err);
	/* the VMs arrive on the first tick: advance() stops there for the daemon to place them */
	host_sim_set_budget(h, BUDGET_UNBOUNDED_MS);
	assert_int_equal(h->ops->advance(h, h->ops->now(h) + 10.0), 1);
	assert_int_equal(ticks(0, h->ops->now(h)), 1);
	h->ops->commit(h);
	return h;
}

/* With no budget left after a tick, each call makes exactly one tick, short of the target. */
static void
test_advance_bounded(void **state)
{
	char path[128];
	struct host *h = open_big(path, sizeof(path));
	double t0 = h->ops->now(h);

	(void)state;
	host_sim_set_budget(h, 0);
	for (int i = 1; i <= 5; i++) {
		double asked = h->ops->now(h) + 600.0;

		assert_int_equal(h->ops->advance(h, asked), 0);
		assert_true(h->ops->now(h) < asked);
		assert_int_equal(ticks(t0, h->ops->now(h)), i);
	}
	h->ops->close(h);
	unlink(path);
}

/* With room in the budget, advance() goes all the way (and no further). */
static void
test_advance_reaches_target(void **state)
{
	char path[128];
	struct host *h = open_big(path, sizeof(path));
	double t0 = h->ops->now(h);

	(void)state;
	assert_int_equal(h->ops->advance(h, t0 + 3.0), 0);
	assert_int_equal(ticks(t0, h->ops->now(h)), 30);
	/* the target already reached: nothing to do */
	assert_int_equal(h->ops->advance(h, t0 + 3.0), 0);
	assert_int_equal(ticks(t0, h->ops->now(h)), 30);
	h->ops->close(h);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_advance_bounded),
	    cmocka_unit_test(test_advance_reaches_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

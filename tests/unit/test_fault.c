/*
 * test_fault.c - the daemon under injected host faults (host/fault.h), in-process on the
 * simulated host, so the model's ground truth can be checked:
 *  - the fault spec parses, bad ones are refused;
 *  - a snapshot that misses a VM for a round does not make the daemon forget the VM's
 *    original affinities (it used to, and then recorded its own pins as the original);
 *  - on every public scenario (tests/sim/NN-*.json), with 10 % of the host's operations
 *    failing: no round crashes the daemon, the failures are counted, and the restore at the
 *    end puts every vCPU's original affinity back (checked in the model itself).
 * ASan and LeakSanitizer (make check-asan) check that nothing leaks meanwhile.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/config.h"
#include "agent/daemon.h"
#include "agent/log.h"
#include "agent/state.h"
#include "host/fault.h"
#include "host/sim/sim.h"

/* Simulated seconds each public scenario runs under faults: every VM placed, many pins. */
#define TF_ROUNDS     40
#define TF_FAULT_RATE "0.1"

struct tf_daemon {
	char dir[64];
	struct daemon d;
};

static void
tf_start(struct tf_daemon *t, const char *scenario, const char *fault_spec)
{
	struct daemon *d = &t->d;
	char err[1024] = "";

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/vnumad-tf-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	config_defaults(&d->cfg);
	snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path), "%s/sock", t->dir);
	snprintf(d->cfg.state_file, sizeof(d->cfg.state_file), "%s/state.json", t->dir);
	snprintf(d->cfg.policy_dir, sizeof(d->cfg.policy_dir), "%s/none", t->dir);
	d->lock_fd = -1;
	d->simulate = true;
	snprintf(d->scenario, sizeof(d->scenario), "%s", scenario);
	snprintf(d->fault_spec, sizeof(d->fault_spec), "%s", fault_spec ? fault_spec : "");
	d->speed = 1.0;
	if (daemon_init(d, err, sizeof(err)) < 0)
		fail_msg("daemon_init(%s): %s", scenario, err);
}

static void
tf_stop(struct tf_daemon *t)
{
	char cmd[128];

	daemon_fini(&t->d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
}

/* n rounds as daemon_run() makes them; returns how many failed (a host read failing). */
static int
tf_rounds(struct tf_daemon *t, int n)
{
	struct host *h = t->d.host;
	int failed = 0;

	for (int i = 0; i < n; i++) {
		assert_true(h->ops->advance(h, h->ops->now(h) + 1.0) >= 0);
		failed += daemon_round(&t->d) < 0;
	}
	return failed;
}

static struct sim *
tf_model(struct tf_daemon *t)
{
	struct host *inner = host_fault_inner(t->d.host);
	struct sim *sim = host_sim_model(inner != NULL ? inner : t->d.host);

	assert_non_null(sim);
	return sim;
}

static void
test_fault_spec(void **state)
{
	double rate;
	uint64_t seed;
	char err[256];

	(void)state;
	assert_int_equal(host_fault_spec_parse("rate=0.25", &rate, &seed, err, sizeof(err)), 0);
	assert_true(rate == 0.25 && seed == 1);
	assert_int_equal(host_fault_spec_parse("rate=1,seed=42", &rate, &seed, err, sizeof(err)),
	                 0);
	assert_true(rate == 1 && seed == 42);
	static const char *const bad[] = {"",          "rate=",           "rate=1.5",
	                                  "rate=-0.1", "seed=3",          "rate=0.1,seed=x",
	                                  "rate=0.1,", "rate=0.1,bogus=1"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(host_fault_spec_parse(bad[i], &rate, &seed, err, sizeof(err)),
		                 -EINVAL);
		assert_non_null(strstr(err, "rate=R"));
	}
}

/* ---- a VM missing from one snapshot ------------------------------------------------------ */

static void
test_missing_vm_keeps_original(void **state)
{
	struct tf_daemon t;
	const struct state_entry *e;
	uint64_t all;

	(void)state;
	tf_start(&t, "default", "rate=0"); /* faults only where the test says */
	tf_rounds(&t, 5);
	e = state_find(t.d.state, "db-orders", 0);
	assert_non_null(e); /* vnumad pinned it: its original affinity is recorded */
	all = e->orig_nodes;
	/* One snapshot misses it: it is still there, and so is its record. */
	assert_int_equal(host_fault_drop_vm(t.d.host, "db-orders"), 0);
	tf_rounds(&t, 1);
	host_fault_drop_vm(t.d.host, NULL);
	assert_non_null(e = state_find(t.d.state, "db-orders", 0));
	assert_int_equal(e->orig_nodes, all);
	tf_rounds(&t, 3);
	assert_non_null(e = state_find(t.d.state, "db-orders", 0));
	assert_int_equal(e->orig_nodes, all); /* not the pin vnumad made */
	/* Gone for DAEMON_VM_GONE_ROUNDS snapshots: gone, and forgotten. */
	host_fault_drop_vm(t.d.host, "db-orders");
	tf_rounds(&t, DAEMON_VM_GONE_ROUNDS);
	assert_null(state_find(t.d.state, "db-orders", 0));
	tf_stop(&t);
}

/* ---- every public scenario under faults --------------------------------------------------- */

static void
tf_check_restored(struct tf_daemon *t, const char *path)
{
	struct sim *sim = tf_model(t);
	uint64_t all = nodemask_all_of(t->d.snap != NULL ? t->d.snap->nr_nodes : 64);

	for (int i = 0; i < sim_nr_vms(sim); i++) {
		if (sim_vcpu_node(sim, i, 0) < 0)
			continue; /* not running */
		for (int v = 0; v < sim_vm_nr_vcpus(sim, i); v++)
			if (sim_vcpu_allowed(sim, i, v) != all)
				fail_msg("%s: VM %d vCPU %d left on nodes %#llx after the restore",
				         path, i, v,
				         (unsigned long long)sim_vcpu_allowed(sim, i, v));
	}
}

static void
tf_scenario(const char *path, uint64_t seed)
{
	struct tf_daemon t;
	struct host_fault_stats fs;
	char spec[64];
	uint64_t counted;
	int failed;

	snprintf(spec, sizeof(spec), "rate=%s,seed=%llu", TF_FAULT_RATE, (unsigned long long)seed);
	tf_start(&t, path, spec);
	failed = tf_rounds(&t, TF_ROUNDS);
	assert_int_equal(host_fault_stats_get(t.d.host, &fs), 0);
	assert_true(fs.injected > 0);
	/* Every injected failure is seen: a failed round, or a VM skipped for it. */
	counted = (uint64_t)failed + t.d.skipped[DSKIP_ERROR] + t.d.skipped[DSKIP_GONE];
	if (counted == 0)
		fail_msg("%s: %llu faults injected, none counted", path,
		         (unsigned long long)fs.injected);
	/*
	 * The restore at the end, the host still failing now and then: what could not be put
	 * back stays in the state file for the next restore (vnumad --restore), which finishes.
	 */
	for (int i = 0; i < 3 && t.d.state->nr > 0; i++)
		daemon_restore(&t.d);
	assert_int_equal(t.d.state->nr, 0);
	tf_check_restored(&t, path);
	print_message("%-40s rounds failed %2d, faults %4llu of %5llu, skipped %llu error / %llu "
	              "gone\n",
	              strrchr(path, '/') + 1, failed, (unsigned long long)fs.injected,
	              (unsigned long long)fs.calls, (unsigned long long)t.d.skipped[DSKIP_ERROR],
	              (unsigned long long)t.d.skipped[DSKIP_GONE]);
	tf_stop(&t);
}

static void
test_public_scenarios_under_faults(void **state)
{
	const char *src = getenv("VNUMAD_SRCDIR");
	char dir[PATH_MAX], path[PATH_MAX + 256];
	struct dirent **names;
	int nr, done = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/tests/sim", src ? src : ".");
	nr = scandir(dir, &names, NULL, alphasort);
	assert_true(nr > 0);
	for (int i = 0; i < nr; i++) {
		const char *n = names[i]->d_name;
		size_t len = strlen(n);

		if (len > 5 && strcmp(n + len - 5, ".json") == 0 && n[0] >= '0' && n[0] <= '9') {
			snprintf(path, sizeof(path), "%s/%s", dir, n);
			tf_scenario(path, (uint64_t)i + 1);
			done++;
		}
		free(names[i]);
	}
	free(names);
	assert_true(done >= 10);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fault_spec),
	    cmocka_unit_test(test_missing_vm_keeps_original),
	    cmocka_unit_test(test_public_scenarios_under_faults),
	};

	log_init("test_fault", LOG_LEVEL_ERR, LOG_TARGET_STDERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

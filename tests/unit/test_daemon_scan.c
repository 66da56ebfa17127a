/*
 * test_daemon_scan.c - the daemon's scan lever (agent/scan_lever.c) end to end on a daemon of
 * its own: the simulated host has no scan tunables (lever parity), so the test gives it the
 * Linux host's, on a fixture tree of the debugfs files in the daemon's temporary directory
 * (host/linux/scan_tunables.c, as --host linux calls it).  With scan_control = yes: slowed
 * once every VM has been settled for SCAN_CONTROL_SETTLED_S, the admin's values on disk in
 * the state file before the kernel's files change, back when a VM is not settled, at a stop,
 * and after a crash; recorded as "scan" events; shown by status.  With no: never touched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/daemon.h"
#include "daemon_harness.h"

#include "agent/cmd_host.h"
#include "agent/state.h"
#include "host/linux/scan_tunables.h"
#include "policy/util.h"

#define DEBUGFS_REL "sys/kernel/debug/sched/numa_balancing"
/* Rounds (host seconds) the one small VM is given to settle: far more than it takes. */
#define SETTLE_ROUNDS_MAX 300

/* One VM of 2 vCPUs and 1 GiB on a 2-node host: it settles within a few rounds. */
static const char scenario[] =
    "{\"name\":\"scan\",\"seed\":1,\"duration_s\":86400,"
    "\"host\":{\"nodes\":2,\"cpus_per_node\":4,\"memory_per_node_gib\":8},"
    "\"vms\":[{\"name\":\"vm1\",\"vcpus\":2,\"memory_gib\":1,\"workload\":\"private\"}]}";

static const struct scan_tunables admin = {
    .delay_ms = 1000, .period_min_ms = 1000, .period_max_ms = 60000, .size_mb = 256};

/* The fixture tree of the test's wrapped host, and what it saw at each write. */
static char scan_root[PATH_MAX];
static const char *scan_state_file;
static int scan_writes, scan_writes_unsaved;
static struct host_ops wrapped_ops;
static const struct host_ops *sim_ops; /* the simulated host's own */

static bool
state_scan_on_disk(const char *path)
{
	struct state *st = NULL;
	char err[1024];
	bool saved;

	if (state_load(path, &st, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	saved = st->scan_saved;
	state_free(st);
	return saved;
}

static int
wrap_scan_get(struct host *h, struct scan_tunables *out, const char **why)
{
	static struct linux_scan_probe p;

	(void)h;
	linux_scan_tunables_probe(scan_root, &p);
	*why = p.reason;
	return p.lever == LINUX_SCAN_WRITABLE ? linux_scan_tunables_read(scan_root, true, out)
	                                      : -EACCES;
}

/* A write of the slowed values must find the admin's already in the state file. */
static int
wrap_scan_set(struct host *h, const struct scan_tunables *t)
{
	(void)h;
	scan_writes++;
	if (t->period_min_ms != admin.period_min_ms && !state_scan_on_disk(scan_state_file))
		scan_writes_unsaved++;
	return linux_scan_tunables_write(scan_root, true, t);
}

static void
put_value(const char *name, int v)
{
	char path[PATH_MAX + 64], text[32];

	snprintf(path, sizeof(path), "%s/" DEBUGFS_REL "/%s", scan_root, name);
	snprintf(text, sizeof(text), "%d\n", v);
	put_file(path, text);
}

static int
period_min_now(void)
{
	struct scan_tunables t;

	assert_int_equal(linux_scan_tunables_read(scan_root, true, &t), 0);
	return t.period_min_ms;
}

/* A daemon on the small scenario, scan_control as given, its host given the tunables. */
static void
start(struct tdaemon *t, bool control)
{
	char cmd[PATH_MAX + 64];

	tdaemon_start_text(t, scenario, SIM_PROFILE_LINUX);
	t->d.cfg.scan_control = control;
	snprintf(scan_root, sizeof(scan_root), "%s/root", t->dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/" DEBUGFS_REL "'", scan_root);
	assert_int_equal(system(cmd), 0);
	put_value("scan_delay_ms", admin.delay_ms);
	put_value("scan_period_min_ms", admin.period_min_ms);
	put_value("scan_period_max_ms", admin.period_max_ms);
	put_value("scan_size_mb", admin.size_mb);
	scan_state_file = t->d.cfg.state_file;
	scan_writes = scan_writes_unsaved = 0;
	sim_ops = t->d.host->ops;
	wrapped_ops = *sim_ops;
	wrapped_ops.scan_tunables_get = wrap_scan_get;
	wrapped_ops.scan_tunables_set = wrap_scan_set;
	t->d.host->ops = &wrapped_ops;
}

static int
settled_vms(struct tdaemon *t)
{
	struct json_object *data, *vms;
	char err[256];
	int n = 0;

	assert_int_equal(tdaemon_call(t, tdaemon_handler("list"), NULL, &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_true(json_object_object_get_ex(data, "vms", &vms));
	for (size_t i = 0; i < json_object_array_length(vms); i++)
		n += strcmp(json_str(json_object_array_get_idx(vms, i), "state"), "settled") == 0;
	json_object_put(data);
	return n;
}

/* Rounds until the one VM is settled; how many it took. */
static int
rounds_to_settle(struct tdaemon *t)
{
	for (int r = 1; r <= SETTLE_ROUNDS_MAX; r++) {
		tdaemon_rounds(t, 1);
		if (settled_vms(t) == 1)
			return r;
	}
	fail_msg("the VM did not settle in %d rounds", SETTLE_ROUNDS_MAX);
	return -1;
}

/* Rounds of host time until SCAN_CONTROL_SETTLED_S after settling (the VM stays settled). */
static void
rounds_settled_wait(struct tdaemon *t)
{
	tdaemon_rounds(t, (int)SCAN_CONTROL_SETTLED_S - 1);
	assert_int_equal(settled_vms(t), 1);
	assert_int_equal(period_min_now(), admin.period_min_ms); /* not yet */
	tdaemon_rounds(t, 2);
}

static int
scan_events(struct tdaemon *t, const char *rule)
{
	uint64_t next;
	struct json_object *arr = events_query_newest(&t->d.events, -1, 0, &next);
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		n += strcmp(json_str(e, "kind"), "scan") == 0 &&
		     strcmp(json_str(e, "rule"), rule) == 0;
	}
	json_object_put(arr);
	return n;
}

static struct json_object *
status_scan(struct tdaemon *t, struct json_object **data)
{
	struct json_object *o;
	char err[256];

	assert_int_equal(tdaemon_call(t, tdaemon_handler("status"), NULL, data, err, sizeof(err)),
	                 PROTO_OK);
	assert_true(json_object_object_get_ex(*data, "scan_tunables", &o));
	return o;
}

/* Slowed after the wait, the admin's values saved first; back on pause; back at stop. */
static void
test_slow_restore(void **state)
{
	struct json_object *data, *o, *j;
	struct util_buf text = {0};
	struct tdaemon t;
	char err[256];

	(void)state;
	start(&t, true);
	rounds_to_settle(&t);
	rounds_settled_wait(&t);
	assert_int_equal(period_min_now(), admin.period_max_ms);
	assert_int_equal(scan_writes, 1);
	assert_int_equal(scan_writes_unsaved, 0);
	assert_true(state_scan_on_disk(t.d.cfg.state_file));
	assert_int_equal(scan_events(&t, "slow"), 1);
	/* Settled on: nothing written again. */
	tdaemon_rounds(&t, 5);
	assert_int_equal(scan_writes, 1);

	o = status_scan(&t, &data);
	assert_string_equal(json_str(o, "lever"), "present");
	assert_true(json_object_object_get_ex(o, "slowed", &j) && json_object_get_boolean(j));
	assert_true(json_object_object_get_ex(o, "admin", &j));
	assert_int_equal(json_object_get_int(json_object_object_get(j, "period_min_ms")), 1000);
	assert_true(json_object_object_get_ex(o, "current", &j));
	assert_int_equal(json_object_get_int(json_object_object_get(j, "period_min_ms")), 60000);
	/* As `vnumactl status` shows it. */
	cmd_status_render(&text, data);
	if (strstr(text.data,
	           "scan tunables: present (scan_control yes, slowed)\n"
	           "  admin    delay 1000 ms, period 1000-60000 ms, size 256 MiB\n"
	           "  current  delay 1000 ms, period 60000-60000 ms, size 256 MiB\n") == NULL)
		fail_msg("status:\n%s", text.data);
	free(text.data);
	json_object_put(data);

	/* Paused: the VM is no longer under vnumad's control, so not settled: back at once. */
	assert_int_equal(tdaemon_call(&t, tdaemon_handler("pause"), NULL, &data, err, sizeof(err)),
	                 PROTO_OK);
	json_object_put(data);
	tdaemon_rounds(&t, 1);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	assert_false(state_scan_on_disk(t.d.cfg.state_file));
	assert_int_equal(scan_events(&t, "restore"), 1);
	assert_int_equal(tdaemon_call(&t, tdaemon_handler("resume"), NULL, &data, err, sizeof(err)),
	                 PROTO_OK);
	json_object_put(data);

	/* Slowed again, then an orderly stop puts the admin's values back. */
	rounds_to_settle(&t);
	rounds_settled_wait(&t);
	assert_int_equal(period_min_now(), admin.period_max_ms);
	daemon_fini(&t.d);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	assert_false(state_scan_on_disk(t.d.cfg.state_file));
	memset(&t.d, 0, sizeof(t.d));
	t.d.lock_fd = -1;
	tdaemon_stop(&t);
}

/* The admin's values left in the state file by a crash: put back at the next round. */
static void
test_crash_left_slowed(void **state)
{
	struct tdaemon t;
	char err[1024];

	(void)state;
	start(&t, true);
	put_value("scan_period_min_ms", admin.period_max_ms); /* as the crashed one left it */
	state_scan_set(t.d.state, &admin);
	assert_int_equal(state_save(t.d.state, t.d.cfg.state_file, err, sizeof(err)), 0);
	scan_lever_start(&t.d);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	assert_false(state_scan_on_disk(t.d.cfg.state_file));
	assert_false(t.d.state->scan_saved);
	tdaemon_stop(&t);
}

/* A start on the simulated host (no lever) keeps the saved values for a later try. */
static void
test_crash_restore_refused_kept(void **state)
{
	struct tdaemon t;
	char err[1024];

	(void)state;
	start(&t, true);
	t.d.host->ops = sim_ops;
	state_scan_set(t.d.state, &admin);
	assert_int_equal(state_save(t.d.state, t.d.cfg.state_file, err, sizeof(err)), 0);
	put_value("scan_period_min_ms", admin.period_max_ms);
	scan_lever_start(&t.d);
	assert_true(state_scan_on_disk(t.d.cfg.state_file));
	/* The lever is back (debugfs mounted again, say): the next round puts them back. */
	t.d.host->ops = &wrapped_ops;
	tdaemon_rounds(&t, 1);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	assert_false(state_scan_on_disk(t.d.cfg.state_file));
	tdaemon_stop(&t);
}

/* A state file that cannot be written: the kernel's scan is left as the admin set it. */
static void
test_state_unwritable_no_write(void **state)
{
	struct tdaemon t;
	char path[PATH_MAX + 64];

	(void)state;
	start(&t, true);
	snprintf(path, sizeof(path), "%s/plain", t.dir);
	put_file(path, "a file, not a directory\n");
	rounds_to_settle(&t); /* its pins recorded in the state file as usual */
	snprintf(t.d.cfg.state_file, sizeof(t.d.cfg.state_file), "%s/plain/state.json", t.dir);
	tdaemon_rounds(&t, (int)SCAN_CONTROL_SETTLED_S + 5);
	assert_int_equal(scan_writes, 0);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	tdaemon_stop(&t);
}

/* scan_control turned off by a reload while slowed: the admin's values back at the next round. */
static void
test_control_turned_off(void **state)
{
	struct tdaemon t;

	(void)state;
	start(&t, true);
	rounds_to_settle(&t);
	rounds_settled_wait(&t);
	assert_int_equal(period_min_now(), admin.period_max_ms);
	t.d.cfg.scan_control = false;
	tdaemon_rounds(&t, 1);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	assert_false(state_scan_on_disk(t.d.cfg.state_file));
	tdaemon_rounds(&t, (int)SCAN_CONTROL_SETTLED_S + 5);
	assert_int_equal(period_min_now(), admin.period_min_ms);
	tdaemon_stop(&t);
}

/* scan_control = no (the default): never written, status says so. */
static void
test_control_off(void **state)
{
	struct json_object *data, *o, *j;
	struct tdaemon t;

	(void)state;
	start(&t, false);
	rounds_to_settle(&t);
	tdaemon_rounds(&t, (int)SCAN_CONTROL_SETTLED_S + 5);
	assert_int_equal(scan_writes, 0);
	o = status_scan(&t, &data);
	assert_string_equal(json_str(o, "lever"), "present");
	assert_true(json_object_object_get_ex(o, "control", &j) && !json_object_get_boolean(j));
	assert_true(json_object_object_get_ex(o, "slowed", &j) && !json_object_get_boolean(j));
	json_object_put(data);
	tdaemon_stop(&t);
}

/* On the simulated host as it is: absent, with the reason. */
static void
test_sim_status_absent(void **state)
{
	struct json_object *data, *o;
	struct tdaemon t;

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	t.d.cfg.scan_control = true;
	tdaemon_rounds(&t, 2);
	o = status_scan(&t, &data);
	assert_string_equal(json_str(o, "lever"), "absent");
	assert_non_null(strstr(json_str(o, "reason"), "does not model"));
	json_object_put(data);
	/* scan_control = yes on a host without the lever: said (once), not silently ignored. */
	assert_non_null(strstr(t.d.scan.refusal_said, "does not model"));
	tdaemon_stop(&t);
}

/* Refused (a read-only file): said with the reason, nothing written; writable again: used. */
static void
test_refused_said(void **state)
{
	char path[PATH_MAX + 64];
	struct tdaemon t;

	(void)state;
	start(&t, true);
	snprintf(path, sizeof(path), "%s/" DEBUGFS_REL "/scan_size_mb", scan_root);
	assert_int_equal(chmod(path, 0444), 0);
	rounds_to_settle(&t);
	tdaemon_rounds(&t, (int)SCAN_CONTROL_SETTLED_S + 5);
	assert_string_equal(t.d.scan.refusal_said, "scan_size_mb: read-only (mode 0444)");
	assert_int_equal(scan_writes, 0);
	assert_int_equal(chmod(path, 0644), 0);
	tdaemon_rounds(&t, 1);
	assert_string_equal(t.d.scan.refusal_said, "");
	rounds_settled_wait(&t);
	assert_int_equal(period_min_now(), admin.period_max_ms);
	tdaemon_stop(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slow_restore),
	    cmocka_unit_test(test_crash_left_slowed),
	    cmocka_unit_test(test_crash_restore_refused_kept),
	    cmocka_unit_test(test_state_unwritable_no_write),
	    cmocka_unit_test(test_control_turned_off),
	    cmocka_unit_test(test_control_off),
	    cmocka_unit_test(test_sim_status_absent),
	    cmocka_unit_test(test_refused_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_linux_scan_tunables.c - the kernel's NUMA scan tunables under a fixture root
 * (host/linux/scan_tunables.c, linux_host_scan.c): the debugfs set (kernels >= 5.13) and the
 * procfs one (older kernels) read, written and written back; files that cannot be used
 * refused with the reason; HOST_CAP_SCAN_TUNABLES and the host description only when
 * writable.  Every tree is built in a mkdtemp directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lever_check.h"
#include "linux_test_util.h"

#include "host/host.h"
#include "host/linux/scan_tunables.h"
#include "policy/model.h"

#define DEBUGFS_REL "sys/kernel/debug/sched/numa_balancing/"
#define PROCFS_REL  "proc/sys/kernel/numa_balancing_"

static const struct scan_tunables kernel_defaults = {
    .delay_ms = 1000, .period_min_ms = 1000, .period_max_ms = 60000, .size_mb = 256};

static const char *const names[] = {"scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms",
                                    "scan_size_mb"};

/* A fresh temporary root in dir; with the plain 2-node tree copied in when tree is set. */
static void
root_make(char *dir, size_t len, const char *tree)
{
	char cmd[4400];

	snprintf(dir, len, "/tmp/vnumad-scan-XXXXXX");
	assert_non_null(mkdtemp(dir));
	if (tree != NULL) {
		snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'", ltu_fixture_root(tree), dir);
		assert_int_equal(system(cmd), 0);
	}
}

static void
mkdirs(const char *dir, const char *rel)
{
	char cmd[4400];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", dir, rel);
	assert_int_equal(system(cmd), 0);
}

/* The set (debugfs or procfs) with the kernel's defaults. */
static void
set_make(const char *dir, bool debugfs)
{
	const char *vals[] = {"1000\n", "1000\n", "60000\n", "256\n"};
	char rel[256];

	mkdirs(dir, debugfs ? DEBUGFS_REL : "proc/sys/kernel");
	for (int i = 0; i < 4; i++) {
		snprintf(rel, sizeof(rel), "%s%s", debugfs ? DEBUGFS_REL : PROCFS_REL, names[i]);
		ltu_file_write(dir, rel, vals[i]);
	}
}

static void
assert_values(const struct scan_tunables *t, int delay, int min, int max, int size)
{
	assert_int_equal(t->delay_ms, delay);
	assert_int_equal(t->period_min_ms, min);
	assert_int_equal(t->period_max_ms, max);
	assert_int_equal(t->size_mb, size);
}

/* What a file holds, as an int. */
static int
file_int(const char *dir, const char *rel)
{
	char path[4400];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(fscanf(f, "%d", &v), 1);
	fclose(f);
	return v;
}

/* The debugfs set: writable; read, written (each file a decimal line), written back. */
static void
test_debugfs_write_read_restore(void **state)
{
	struct linux_scan_probe p;
	struct scan_tunables t, slow = kernel_defaults;
	char dir[64];

	(void)state;
	root_make(dir, sizeof(dir), NULL);
	set_make(dir, true);
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_WRITABLE);
	assert_true(p.debugfs);
	assert_string_equal(p.reason, "");
	assert_int_equal(linux_scan_tunables_read(dir, true, &t), 0);
	assert_values(&t, 1000, 1000, 60000, 256);
	slow.period_min_ms = 60000;
	assert_int_equal(linux_scan_tunables_write(dir, true, &slow), 0);
	assert_int_equal(file_int(dir, DEBUGFS_REL "scan_period_min_ms"), 60000);
	assert_int_equal(linux_scan_tunables_read(dir, true, &t), 0);
	assert_values(&t, 1000, 60000, 60000, 256);
	assert_int_equal(linux_scan_tunables_write(dir, true, &kernel_defaults), 0);
	assert_int_equal(linux_scan_tunables_read(dir, true, &t), 0);
	assert_values(&t, 1000, 1000, 60000, 256);
	/* A negative value is refused before anything is written. */
	slow.size_mb = -1;
	assert_int_equal(linux_scan_tunables_write(dir, true, &slow), -EINVAL);
	assert_int_equal(file_int(dir, DEBUGFS_REL "scan_period_min_ms"), 1000);
	ltu_dir_remove(dir);
}

/* A kernel before 5.13: the /proc/sys/kernel set, used the same way. */
static void
test_procfs_set(void **state)
{
	struct linux_scan_probe p;
	struct scan_tunables t = {5, 6, 7, 8};
	char dir[64];

	(void)state;
	root_make(dir, sizeof(dir), NULL);
	set_make(dir, false);
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_WRITABLE);
	assert_false(p.debugfs);
	assert_int_equal(linux_scan_tunables_write(dir, false, &t), 0);
	assert_int_equal(file_int(dir, PROCFS_REL "scan_size_mb"), 8);
	assert_int_equal(file_int(dir, PROCFS_REL "scan_delay_ms"), 5);
	assert_int_equal(linux_scan_tunables_read(dir, false, &t), 0);
	assert_values(&t, 5, 6, 7, 8);
	ltu_dir_remove(dir);
}

/* What keeps vnumad from using them, each said. */
static void
test_refused_and_absent(void **state)
{
	struct linux_scan_probe p;
	char dir[64], path[4400];

	(void)state;
	/* A read-only file (the kernel makes the ones not to be written 0444). */
	root_make(dir, sizeof(dir), NULL);
	set_make(dir, true);
	snprintf(path, sizeof(path), "%s/" DEBUGFS_REL "scan_size_mb", dir);
	assert_int_equal(chmod(path, 0444), 0);
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_REFUSED);
	assert_string_equal(p.reason, "scan_size_mb: read-only (mode 0444)");
	assert_string_equal(linux_scan_lever_name(p.lever), "refused");
	/* Not a number. */
	assert_int_equal(chmod(path, 0644), 0);
	ltu_file_write(dir, DEBUGFS_REL "scan_size_mb", "lots\n");
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_REFUSED);
	assert_string_equal(p.reason, "scan_size_mb: unreadable: not a non-negative integer");
	/* Not a file at all. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_REFUSED);
	assert_string_equal(p.reason, "scan_size_mb: unreadable: not a regular file (a directory)");
	ltu_dir_remove(dir);

	/* An empty /sys/kernel/debug: debugfs is not mounted. */
	root_make(dir, sizeof(dir), NULL);
	mkdirs(dir, "sys/kernel/debug");
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_REFUSED);
	assert_string_equal(p.reason, "debugfs is not mounted on /sys/kernel/debug");
	/* debugfs mounted without the sched files, no procfs set: a kernel without them. */
	mkdirs(dir, "sys/kernel/debug/tracing");
	linux_scan_tunables_probe(dir, &p);
	assert_int_equal(p.lever, LINUX_SCAN_ABSENT);
	assert_string_equal(linux_scan_lever_name(p.lever), "absent");
	assert_non_null(strstr(p.reason, "no scan tunables"));
	ltu_dir_remove(dir);
}

/* The Linux host on a tree: the cap, the description and the ops follow the probe. */
static void
test_linux_host_lever(void **state)
{
	struct scan_tunables t, slow = kernel_defaults;
	struct snapshot *snap = NULL;
	struct host *h = NULL;
	const char *why = NULL;
	char dir[64], err[512], path[4400];

	(void)state;
	root_make(dir, sizeof(dir), "2node");
	/* No tunables in the tree: absent, no cap. */
	assert_int_equal(host_linux_open(dir, 100, &h, err, sizeof(err)), 0);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_false(snap->caps & HOST_CAP_SCAN_TUNABLES);
	snapshot_free(snap);
	assert_non_null(strstr(h->ops->describe(h), "scan tunables: absent - "));
	assert_int_equal(h->ops->scan_tunables_get(h, &t, &why), -ENOENT);
	assert_non_null(strstr(why, "no scan tunables"));
	assert_int_equal(h->ops->scan_tunables_set(h, &slow), -ENOENT);
	h->ops->close(h);

	set_make(dir, true);
	assert_int_equal(host_linux_open(dir, 100, &h, err, sizeof(err)), 0);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_true(snap->caps & HOST_CAP_SCAN_TUNABLES);
	snapshot_free(snap);
	assert_non_null(strstr(h->ops->describe(h), "scan tunables: present (debugfs)"));
	assert_int_equal(h->ops->scan_tunables_get(h, &t, &why), 0);
	assert_string_equal(why, "");
	assert_values(&t, 1000, 1000, 60000, 256);
	slow.period_min_ms = 60000;
	assert_int_equal(h->ops->scan_tunables_set(h, &slow), 0);
	assert_int_equal(file_int(dir, DEBUGFS_REL "scan_period_min_ms"), 60000);
	/* Made read-only since: refused at the next call, and the cap goes. */
	snprintf(path, sizeof(path), "%s/" DEBUGFS_REL "scan_period_min_ms", dir);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(h->ops->scan_tunables_get(h, &t, &why), -EACCES);
	assert_string_equal(why, "scan_period_min_ms: read-only (mode 0444)");
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_false(snap->caps & HOST_CAP_SCAN_TUNABLES);
	snapshot_free(snap);
	assert_non_null(strstr(h->ops->describe(h), "scan tunables: refused - scan_period_min_ms"));
	h->ops->close(h);
	ltu_dir_remove(dir);
}

/*
 * The Linux host's capability probe on a tree follows what its probes found: pins and
 * move_pages present (with the tree's refusal said), binds and per-VM sampling absent, the
 * scan tunables absent, present, then refused with the reason; in parity with the caps at
 * each step.
 */
static void
test_linux_host_levers(void **state)
{
	struct host_lever l[HOST_LEVER_NR];
	struct scan_tunables t;
	struct host *h = NULL;
	const char *why = NULL;
	char dir[64], err[512], path[4400];
	const int scan = host_cap_index(HOST_CAP_SCAN_TUNABLES);

	(void)state;
	root_make(dir, sizeof(dir), "2node");
	assert_int_equal(host_linux_open(dir, 100, &h, err, sizeof(err)), 0);
	lever_parity_check(h, l);
	for (int i = 0; i < HOST_LEVER_NR; i++) {
		bool acts = 1u << i == HOST_CAP_PIN || 1u << i == HOST_CAP_MOVE_PAGES;

		assert_int_equal(l[i].state, acts ? HOST_LEVER_PRESENT : HOST_LEVER_ABSENT);
		if (acts)
			assert_non_null(strstr(l[i].reason, "not acted on (EROFS)"));
	}
	assert_non_null(strstr(l[host_cap_index(HOST_CAP_PIN)].reason, "sched_setaffinity"));
	assert_non_null(
	    strstr(l[host_cap_index(HOST_CAP_BIND_AT_START)].reason, "placement='auto'"));
	assert_non_null(strstr(l[scan].reason, "no scan tunables"));
	h->ops->close(h);

	set_make(dir, true);
	assert_int_equal(host_linux_open(dir, 100, &h, err, sizeof(err)), 0);
	lever_parity_check(h, l);
	assert_int_equal(l[scan].state, HOST_LEVER_PRESENT);
	assert_non_null(strstr(l[scan].reason, "/sys/kernel/debug/sched/numa_balancing"));
	/* Made read-only: refused once probed again (as status probes before the report). */
	snprintf(path, sizeof(path), "%s/" DEBUGFS_REL "scan_size_mb", dir);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(h->ops->scan_tunables_get(h, &t, &why), -EACCES);
	lever_parity_check(h, l);
	assert_int_equal(l[scan].state, HOST_LEVER_REFUSED);
	assert_string_equal(l[scan].reason, "scan_size_mb: read-only (mode 0444)");
	h->ops->close(h);
	ltu_dir_remove(dir);
}

/* The simulated host has no such lever, whatever its profile. */
static void
test_sim_has_none(void **state)
{
	const enum sim_profile profiles[] = {SIM_PROFILE_LINUX, SIM_PROFILE_LIBVIRT,
	                                     SIM_PROFILE_IDEAL};
	struct scan_tunables t = kernel_defaults;
	struct snapshot *snap = NULL;
	const char *why = NULL;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		struct host *h = NULL;

		assert_int_equal(host_sim_open(NULL, profiles[i], &h, err, sizeof(err)), 0);
		assert_int_equal(h->ops->scan_tunables_get(h, &t, &why), -EOPNOTSUPP);
		assert_non_null(strstr(why, "does not model"));
		assert_int_equal(h->ops->scan_tunables_set(h, &t), -EOPNOTSUPP);
		assert_true(h->ops->advance(h, 1.0) >= 0);
		assert_int_equal(h->ops->snapshot(h, &snap), 0);
		assert_false(snap->caps & HOST_CAP_SCAN_TUNABLES);
		snapshot_free(snap);
		h->ops->close(h);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_debugfs_write_read_restore),
	    cmocka_unit_test(test_procfs_set),
	    cmocka_unit_test(test_refused_and_absent),
	    cmocka_unit_test(test_linux_host_lever),
	    cmocka_unit_test(test_linux_host_levers),
	    cmocka_unit_test(test_sim_has_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

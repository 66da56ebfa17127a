/*
 * test_linux_discover_cache.c - QEMU discovery kept across rounds (host/linux/discover_cache.c)
 * and the /proc files kept open between rounds (host/linux/pfile.c), on trees written by the
 * test into a mkdtemp directory and changed between two scans:
 * - a second scan of an unchanged tree reads no process's comm or cmdline again (counted
 *   through fileio's open counter), and a changed command line is not seen until the pid's
 *   start time changes or LINUX_DISCOVER_RESCAN_S has passed;
 * - a new pid is picked up, a vanished one forgotten, a reused one (new start time, other
 *   command line) read afresh, and a process that exec()ed into QEMU is found at once while
 *   young, else by the rescan;
 * - with process events (procconn.h) in place of the listing: a process is seen when its
 *   fork is reported, judged again on an exec() or a reused pid, forgotten on its exit, and
 *   the listing read only at the first scan, after lost events and at the rescan;
 * - a replaced vCPU thread, an unnamed thread that names itself, and the kept fds closed with
 *   their thread;
 * - through the Linux host: a second snapshot opens fewer files, and says how many; a settled
 *   VM is carried (its last reading, nothing of it opened but its stat) until it is due or
 *   watched, and then read afresh;
 * - a kept fd of a process that died reads as gone (-ENOENT) and is closed (this machine).
 * The scans are given their time, so nothing here depends on the clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/fileio.h"
#include "host/host.h"
#include "host/linux/discover_cache.h"
#include "host/linux/linux_host.h"
#include "host/linux/pfile.h"
#include "host/linux/snapshot.h"
#include "linux_test_util.h"

#define QEMU_PID   5100
#define QEMU_START 123456 /* its start time, clock ticks */

struct tree {
	char root[64];
};

/* Write len bytes to <root>/<rel>, making its directories. */
static void
tree_put(const struct tree *t, const char *rel, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", t->root, rel);
	for (char *p = path + strlen(t->root) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void
tree_putf(const struct tree *t, const char *rel, const char *text)
{
	tree_put(t, rel, text, strlen(text));
}

static void
tree_rm(const struct tree *t, const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", t->root, rel);
	assert_int_equal(system(cmd), 0);
}

/* A stat line of 52 fields: tid, comm, state, then zeros but the start time (field 22). */
static void
tree_stat(const struct tree *t, const char *rel, int tid, const char *comm, uint64_t start)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%d (%s) S", tid, comm);

	for (int field = 4; field <= 52; field++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %llu",
		              field == 22 ? (unsigned long long)start : 0ull);
	snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	tree_putf(t, rel, line);
}

/* A thread of pid named comm, with the files a vCPU's snapshot reads. */
static void
tree_thread(const struct tree *t, int pid, int tid, const char *comm)
{
	char rel[128], text[512];

	snprintf(rel, sizeof(rel), "proc/%d/task/%d/comm", pid, tid);
	snprintf(text, sizeof(text), "%s\n", comm);
	tree_putf(t, rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", pid, tid);
	tree_stat(t, rel, tid, comm, QEMU_START + 10);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/status", pid, tid);
	snprintf(text, sizeof(text), "Name:\t%s\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t0-1\n",
	         comm, pid, tid);
	tree_putf(t, rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/sched", pid, tid);
	snprintf(text, sizeof(text),
	         "%s (%d, #threads: 3)\n"
	         "-------------------------------------------------------------------\n"
	         "se.sum_exec_runtime                          :            1.000000\n",
	         comm, tid);
	tree_putf(t, rel, text);
}

/* A process: comm, cmdline (NUL-separated args, argv ends with an empty one), stat. */
static void
tree_proc(const struct tree *t, int pid, const char *comm, const char *args, size_t args_len,
          uint64_t start)
{
	char rel[64], text[128];

	snprintf(rel, sizeof(rel), "proc/%d/comm", pid);
	snprintf(text, sizeof(text), "%s\n", comm);
	tree_putf(t, rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/cmdline", pid);
	tree_put(t, rel, args, args_len);
	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	tree_stat(t, rel, pid, comm, start);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/comm", pid, pid);
	snprintf(text, sizeof(text), "%s\n", comm);
	tree_putf(t, rel, text);
}

#define ARGS(s) s, sizeof(s) /* a string literal with its NULs, the last one included */

/* QEMU process pid called name (-m 64, no -numa) with vCPUs 0 and 1 (tids pid+1, pid+2). */
static void
tree_qemu(const struct tree *t, int pid, const char *name, uint64_t start)
{
	char args[256], rel[64];
	int n = snprintf(args, sizeof(args), "qemu-system-x86_64%c-name%cguest=%s%c-m%c64", 0, 0,
	                 name, 0, 0);

	tree_proc(t, pid, "qemu-system-x86", args, (size_t)n + 1, start);
	tree_thread(t, pid, pid + 1, "CPU 0/KVM");
	tree_thread(t, pid, pid + 2, "CPU 1/KVM");
	snprintf(rel, sizeof(rel), "proc/%d/numa_maps", pid);
	tree_putf(t, rel,
	          "7f0000000000 default anon=16384 dirty=16384 N0=16384 kernelpagesize_kB=4\n");
}

static int
tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	snprintf(t->root, sizeof(t->root), "/tmp/vnumad-dcache-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	tree_proc(t, 1, "init", ARGS("/sbin/init"), 1);
	tree_proc(t, 4000, "sshd", ARGS("sshd: root"), 50);
	tree_proc(t, 4001, "bash", ARGS("-bash"), 60);
	tree_qemu(t, QEMU_PID, "web", QEMU_START);
	tree_putf(t, "proc/uptime", "2000.00 1000.00\n");
	tree_putf(t, "proc/sys/kernel/numa_balancing", "1\n");
	tree_putf(t, "sys/devices/system/node/online", "0\n");
	tree_putf(t, "sys/devices/system/node/node0/cpulist", "0-1\n");
	tree_putf(t, "sys/devices/system/node/node0/distance", "10\n");
	tree_putf(t, "sys/devices/system/node/node0/meminfo",
	          "Node 0 MemTotal:       8388608 kB\nNode 0 MemFree:        4194304 kB\n");
	ltu_tree_cpus_write(t->root);
	*state = t;
	return 0;
}

static int
tree_teardown(void **state)
{
	struct tree *t = *state;

	ltu_dir_remove(t->root);
	free(t);
	return 0;
}

/* One scan at now_s from delta (NULL: a listing); the number of VMs, *opens the files it
 * opened. */
static size_t
scan_delta(struct linux_discover_cache *c, const struct tree *t, double now_s,
           const struct linux_proc_delta *delta, struct linux_vm **vms, uint64_t *opens)
{
	uint64_t before = ltu_opens_now();
	size_t nr = 0;

	assert_int_equal(linux_discover_cache_scan_delta(c, t->root, now_s, delta, vms, &nr, NULL),
	                 0);
	if (opens != NULL)
		*opens = ltu_opens_now() - before;
	return nr;
}

/* One scan at now_s, listing <root>/proc (as scan_delta without events). */
static size_t
scan(struct linux_discover_cache *c, const struct tree *t, double now_s, struct linux_vm **vms,
     uint64_t *opens)
{
	return scan_delta(c, t, now_s, NULL, vms, opens);
}

static const struct linux_vm *
vm_of(const struct linux_vm *vms, size_t nr, int pid)
{
	for (size_t i = 0; i < nr; i++)
		if (vms[i].pid == pid)
			return &vms[i];
	return NULL;
}

/* The QEMU pid's command line, rewritten to call it name (its start time unchanged). */
static void
tree_rename(const struct tree *t, int pid, const char *name)
{
	char args[256], rel[64];
	int n = snprintf(args, sizeof(args), "qemu-system-x86_64%c-name%cguest=%s%c-m%c64", 0, 0,
	                 name, 0, 0);

	snprintf(rel, sizeof(rel), "proc/%d/cmdline", pid);
	tree_put(t, rel, args, (size_t)n + 1);
}

/*
 * The second scan of an unchanged tree opens only /proc, the task directory and numa_maps:
 * no comm or cmdline of any process, no vCPU thread's comm, no stat (kept open).  A rewritten
 * command line is not read again.
 */
static void
test_second_scan_reads_no_comm(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_vm *vms;
	uint64_t first, second;
	size_t nr;

	assert_int_equal(nr = scan(c, t, 0, &vms, &first), 1);
	assert_string_equal(vms[0].name, "web");
	assert_int_equal(vms[0].nr_vcpus, 2);
	linux_vms_free(vms, nr);
	/* /proc, 4 x (comm, cmdline), QEMU's stat, task dir, 2 vCPU comms, numa_maps */
	assert_int_equal(first, 1 + 4 * 2 + 1 + 1 + 2 + 1);
	tree_rename(t, QEMU_PID, "renamed");
	tree_proc(t, 4001, "qemu-system-x86", ARGS("qemu-system-x86_64"), 60); /* not re-read */
	assert_int_equal(nr = scan(c, t, LINUX_DISCOVER_YOUNG_S, &vms, &second), 1);
	assert_string_equal(vms[0].name, "web");
	linux_vms_free(vms, nr);
	assert_int_equal(second, 3); /* /proc, the task directory, numa_maps */
	linux_discover_cache_free(c);
}

/*
 * A process that exec()s into QEMU while young (libvirt's child) is found at the next scan:
 * a young process's comm is read every scan (one open each), then no more.
 */
static void
test_young_exec(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_vm *vms;
	uint64_t opens;
	size_t nr;

	assert_int_equal(nr = scan(c, t, 0, &vms, NULL), 1);
	linux_vms_free(vms, nr);
	assert_int_equal(nr = scan(c, t, 1, &vms, &opens), 1);
	linux_vms_free(vms, nr);
	assert_int_equal(opens, 3 + 3); /* and the comms of init, sshd and bash */
	tree_qemu(t, 4001, "execd", 60);
	assert_int_equal(nr = scan(c, t, 2, &vms, NULL), 2);
	assert_string_equal(vm_of(vms, nr, 4001)->name, "execd");
	linux_vms_free(vms, nr);
	assert_int_equal(nr = scan(c, t, LINUX_DISCOVER_YOUNG_S, &vms, &opens), 2);
	linux_vms_free(vms, nr);
	assert_int_equal(opens, 1 + 2 * 2); /* /proc; per VM its task directory and numa_maps */
	linux_discover_cache_free(c);
}

/* A rewritten command line is seen once the rescan period has passed; so is an exec(). */
static void
test_rescan_period(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_vm *vms;
	size_t nr;

	assert_int_equal(nr = scan(c, t, 100, &vms, NULL), 1);
	linux_vms_free(vms, nr);
	tree_rename(t, QEMU_PID, "renamed");
	tree_qemu(t, 4001, "execd", 60); /* bash exec()ed into QEMU: same pid, same start */
	assert_int_equal(nr = scan(c, t, 100 + LINUX_DISCOVER_RESCAN_S - 1, &vms, NULL), 1);
	assert_string_equal(vms[0].name, "web");
	linux_vms_free(vms, nr);
	assert_int_equal(nr = scan(c, t, 100 + LINUX_DISCOVER_RESCAN_S, &vms, NULL), 2);
	assert_string_equal(vm_of(vms, nr, 4001)->name, "execd");
	assert_string_equal(vm_of(vms, nr, QEMU_PID)->name, "renamed");
	linux_vms_free(vms, nr);
	linux_discover_cache_free(c);
}

/* A new pid is picked up; a vanished one is forgotten (a later one of that pid is new). */
static void
test_new_and_vanished(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_vm *vms;
	size_t nr;

	assert_int_equal(nr = scan(c, t, 0, &vms, NULL), 1);
	linux_vms_free(vms, nr);
	tree_qemu(t, 6000, "db", 7000);
	assert_int_equal(nr = scan(c, t, 1, &vms, NULL), 2);
	assert_int_equal(vms[0].pid, QEMU_PID); /* ascending pid */
	assert_int_equal(vms[1].pid, 6000);
	assert_string_equal(vms[1].name, "db");
	linux_vms_free(vms, nr);
	tree_rm(t, "proc/6000");
	assert_int_equal(nr = scan(c, t, 2, &vms, NULL), 1);
	assert_int_equal(vms[0].pid, QEMU_PID);
	linux_vms_free(vms, nr);
	tree_qemu(t, 6000, "db2", 7000); /* even with the same start time: it was forgotten */
	assert_int_equal(nr = scan(c, t, 3, &vms, NULL), 2);
	assert_string_equal(vms[1].name, "db2");
	linux_vms_free(vms, nr);
	linux_discover_cache_free(c);
}

/*
 * With process events the listing of /proc is read only at the first scan, when events were
 * lost and at the rescan: a process that appears without an event is not seen, one whose
 * fork is reported is; an exec() is judged at once even when the process is not young; an
 * exit is trusted; a pid's last event says whether it is there; young processes are not
 * re-read.
 */
static void
test_scan_from_events(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_proc_delta d = {0};
	struct linux_vm *vms;
	uint64_t opens;
	size_t nr;

	assert_int_equal(nr = scan_delta(c, t, 0, &d, &vms, NULL), 1); /* lists: the first scan */
	linux_vms_free(vms, nr);
	assert_int_equal(linux_discover_cache_listings(c), 1);
	tree_qemu(t, 6000, "db", 7000);
	assert_int_equal(nr = scan_delta(c, t, 1, &d, &vms, &opens), 1); /* no event: unseen */
	linux_vms_free(vms, nr);
	assert_int_equal(opens, 2); /* the task directory and numa_maps: no listing, no comms */
	linux_proc_delta_add(&d, 6000, LINUX_PROC_EVENT_NEW);
	assert_int_equal(nr = scan_delta(c, t, 2, &d, &vms, NULL), 2);
	assert_string_equal(vm_of(vms, nr, 6000)->name, "db");
	linux_vms_free(vms, nr);
	linux_proc_delta_clear(&d);

	tree_qemu(t, 4001, "execd", 60); /* bash, listed 100 s ago, exec()s into QEMU */
	linux_proc_delta_add(&d, 4001, LINUX_PROC_EVENT_CHANGED);
	assert_int_equal(nr = scan_delta(c, t, 100, &d, &vms, NULL), 3);
	assert_string_equal(vm_of(vms, nr, 4001)->name, "execd");
	linux_vms_free(vms, nr);
	linux_proc_delta_clear(&d);

	/* 6000 ends and its pid is reused by another QEMU, in one round: there, judged again */
	tree_qemu(t, 6000, "db2", 7000);
	linux_proc_delta_add(&d, 6000, LINUX_PROC_EVENT_EXIT);
	linux_proc_delta_add(&d, 6000, LINUX_PROC_EVENT_NEW);
	linux_proc_delta_add(&d, 4001, LINUX_PROC_EVENT_EXIT); /* and 4001 ends */
	assert_int_equal(nr = scan_delta(c, t, 101, &d, &vms, NULL), 2);
	assert_string_equal(vm_of(vms, nr, 6000)->name, "db2");
	assert_null(vm_of(vms, nr, 4001));
	linux_vms_free(vms, nr);
	linux_proc_delta_clear(&d);
	assert_int_equal(linux_discover_cache_listings(c), 1);

	/* lost events: the listing is read once, and finds 4001 still there */
	d.full = true;
	assert_int_equal(nr = scan_delta(c, t, 102, &d, &vms, NULL), 3);
	linux_vms_free(vms, nr);
	linux_proc_delta_clear(&d);
	assert_int_equal(linux_discover_cache_listings(c), 2);
	/* and at the rescan period, events or not */
	assert_int_equal(nr = scan_delta(c, t, LINUX_DISCOVER_RESCAN_S + 1, &d, &vms, NULL), 3);
	linux_vms_free(vms, nr);
	assert_int_equal(linux_discover_cache_listings(c), 3);
	linux_proc_delta_free(&d);
	linux_discover_cache_free(c);
}

/* Beyond LINUX_PROC_DELTA_MAX_EVENTS a delta is full: the next scan lists. */
static void
test_delta_bounded(void **state)
{
	struct linux_proc_delta d = {0};

	(void)state;
	for (int i = 0; i < LINUX_PROC_DELTA_MAX_EVENTS; i++)
		linux_proc_delta_add(&d, 100 + i, LINUX_PROC_EVENT_NEW);
	assert_false(d.full);
	linux_proc_delta_add(&d, 7, LINUX_PROC_EVENT_EXIT);
	assert_true(d.full);
	assert_int_equal(d.nr, LINUX_PROC_DELTA_MAX_EVENTS);
	linux_proc_delta_clear(&d);
	assert_false(d.full);
	assert_int_equal(d.nr, 0);
	linux_proc_delta_free(&d);
}

/* The same pid with a new start time and another command line is read afresh. */
static void
test_pid_reuse(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_vm *vms;
	size_t nr;

	assert_int_equal(nr = scan(c, t, 0, &vms, NULL), 1);
	linux_vms_free(vms, nr);
	tree_rename(t, QEMU_PID, "other");
	assert_int_equal(nr = scan(c, t, 1, &vms, NULL), 1);
	assert_string_equal(vms[0].name, "web"); /* same start time: the same process */
	linux_vms_free(vms, nr);
	tree_stat(t, "proc/5100/stat", QEMU_PID, "qemu-system-x86", QEMU_START + 500);
	assert_int_equal(nr = scan(c, t, 2, &vms, NULL), 1);
	assert_string_equal(vms[0].name, "other");
	linux_vms_free(vms, nr);
	/* reused by a process that is not QEMU: no VM any more */
	tree_proc(t, QEMU_PID, "sleep", ARGS("sleep"), QEMU_START + 900);
	assert_int_equal(scan(c, t, 3, &vms, NULL), 0);
	assert_null(vms);
	linux_discover_cache_free(c);
}

static void
assert_tids(const struct linux_vm *vm, int tid0, int tid1)
{
	assert_int_equal(vm->nr_vcpus, 2);
	assert_int_equal(vm->vcpus[0].index, 0);
	assert_int_equal(vm->vcpus[0].tid, tid0);
	assert_int_equal(vm->vcpus[1].index, 1);
	assert_int_equal(vm->vcpus[1].tid, tid1);
}

/*
 * A vCPU thread that goes and one that comes in its place; the kept fds (the process's stat,
 * and each vCPU's stat, status and sched once a snapshot read them) go with their thread.
 */
static void
test_thread_replaced(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_nodes nodes = {0};
	struct snapshot *snap;
	struct linux_vm *vms;
	uint64_t opens;
	size_t nr;

	assert_int_equal(linux_nodes_read(t->root, &nodes), 0);
	assert_int_equal(nr = scan(c, t, 0, &vms, NULL), 1);
	assert_tids(&vms[0], 5101, 5102);
	assert_int_equal(linux_discover_cache_fds(c), 1);
	linux_snapshot_assemble(t->root, &nodes, vms, nr, &snap, NULL);
	assert_int_equal(snap->vms[0].nr_vcpus, 2);
	snapshot_free(snap);
	assert_int_equal(linux_discover_cache_fds(c), 1 + 2 * 3);
	linux_vms_free(vms, nr);

	tree_rm(t, "proc/5100/task/5102");
	tree_thread(t, QEMU_PID, 5104, "CPU 1/KVM");
	assert_int_equal(nr = scan(c, t, LINUX_DISCOVER_YOUNG_S, &vms, &opens), 1);
	assert_tids(&vms[0], 5101, 5104);
	assert_int_equal(opens, 3 + 1);                       /* and the new thread's comm */
	assert_int_equal(linux_discover_cache_fds(c), 1 + 3); /* 5102's closed */
	opens = ltu_opens_now();
	linux_snapshot_assemble(t->root, &nodes, vms, nr, &snap, NULL);
	assert_int_equal(ltu_opens_now() - opens, 3); /* 5104's files; 5101's are kept */
	assert_int_equal(snap->vms[0].vcpus[1].tid, 5104);
	snapshot_free(snap);
	linux_vms_free(vms, nr);
	linux_nodes_free(&nodes);
	linux_discover_cache_free(c);
}

/* A thread caught before it named itself is looked at again, up to NAME_WAIT_S. */
static void
test_thread_named_late(void **state)
{
	struct tree *t = *state;
	struct linux_discover_cache *c = linux_discover_cache_new(-1);
	struct linux_vm *vms;
	const double t0 = LINUX_DISCOVER_YOUNG_S; /* every process is old by then */
	uint64_t opens;
	size_t nr;

	assert_int_equal(nr = scan(c, t, 0, &vms, NULL), 1);
	linux_vms_free(vms, nr);
	tree_thread(t, QEMU_PID, 5105, "qemu-system-x86");
	tree_thread(t, QEMU_PID, 5106, "qemu-system-x86");
	assert_int_equal(nr = scan(c, t, t0, &vms, &opens), 1);
	assert_int_equal(vms[0].nr_vcpus, 2);
	assert_int_equal(opens, 3 + 2); /* the new threads' comms */
	linux_vms_free(vms, nr);
	tree_thread(t, QEMU_PID, 5105, "CPU 2/KVM");
	assert_int_equal(nr = scan(c, t, t0 + 1, &vms, &opens), 1);
	assert_int_equal(vms[0].nr_vcpus, 3);
	assert_int_equal(vms[0].vcpus[2].tid, 5105);
	assert_int_equal(opens, 3 + 2); /* both unnamed threads' comms again */
	linux_vms_free(vms, nr);
	assert_int_equal(nr = scan(c, t, t0 + LINUX_DISCOVER_NAME_WAIT_S, &vms, &opens), 1);
	linux_vms_free(vms, nr);
	assert_int_equal(opens, 3 + 1); /* 5106 judged now: not a vCPU */
	assert_int_equal(nr = scan(c, t, t0 + LINUX_DISCOVER_NAME_WAIT_S + 1, &vms, &opens), 1);
	linux_vms_free(vms, nr);
	assert_int_equal(opens, 3);
	linux_discover_cache_free(c);
}

/* The uncached entry point reads everything each time and keeps nothing open. */
static void
test_uncached_discover(void **state)
{
	struct tree *t = *state;
	struct linux_vm *vms;
	size_t nr;

	assert_int_equal(linux_vms_discover(t->root, &vms, &nr), 0);
	assert_int_equal(nr, 1);
	assert_null(vms[0].vcpus[0].files);
	linux_vms_free(vms, nr);
	tree_rename(t, QEMU_PID, "renamed");
	assert_int_equal(linux_vms_discover(t->root, &vms, &nr), 0);
	assert_string_equal(vms[0].name, "renamed");
	linux_vms_free(vms, nr);
}

/* Through the Linux host: the second snapshot opens fewer files and says how many. */
static void
test_host_observe_cost(void **state)
{
	struct tree *t = *state;
	struct host_observe_cost first, second;
	struct snapshot *snap;
	struct host *h;
	char err[256];

	assert_int_equal(host_linux_open(t->root, 100, &h, err, sizeof(err)), 0);
	assert_non_null(h->ops->observe_cost);
	assert_int_equal(h->ops->observe_cost(h, &first), -ENODATA);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_int_equal(snap->nr_vms, 1);
	snapshot_free(snap);
	assert_int_equal(h->ops->observe_cost(h, &first), 0);
	tree_rename(t, QEMU_PID, "renamed");
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_string_equal(snap->vms[0].name, "web");
	snapshot_free(snap);
	assert_int_equal(h->ops->observe_cost(h, &second), 0);
	print_message("opens: %llu, then %llu\n", (unsigned long long)first.opens,
	              (unsigned long long)second.opens);
	assert_true(second.opens < first.opens);
	/*
	 * node0's meminfo, opened to be kept (the first snapshot read the nodes whole; online and
	 * numa_balancing stay open from it: nodes_reader.h), /proc, the task directory (numa_maps
	 * was walked by the first snapshot and is due again only LINUX_RESIDENCY_WALK_S later,
	 * residency.h); and, if the snapshots were less than LINUX_DISCOVER_YOUNG_S apart, the
	 * comms of the 3 others
	 */
	assert_true(second.opens == 1 + 2 || second.opens == 1 + 2 + 3);
	/* QEMU's stat, vCPUs', uptime; online, numa_balancing and node0's meminfo */
	assert_int_equal(second.kept_fds, 1 + 2 * 3 + 1 + 3);
	snprintf(err, sizeof(err), "observing, last round: %llu opens",
	         (unsigned long long)second.opens);
	assert_non_null(strstr(h->ops->describe(h), err));
	h->ops->close(h);
}

/* vCPU 0 of the QEMU process with hinting faults: private on node 0. */
static void
tree_faults(const struct tree *t, unsigned long private0)
{
	char rel[128], text[512];

	snprintf(rel, sizeof(rel), "proc/%d/task/%d/sched", QEMU_PID, QEMU_PID + 1);
	snprintf(text, sizeof(text),
	         "CPU 0/KVM (%d, #threads: 3)\n"
	         "-------------------------------------------------------------------\n"
	         "se.sum_exec_runtime                          :            1.000000\n"
	         "numa_faults node=0 task_private=%lu task_shared=0 group_private=0 "
	         "group_shared=0\n",
	         QEMU_PID + 1, private0);
	tree_putf(t, rel, text);
}

/*
 * Through the Linux host: a VM the plan finds settled and not due is carried - the snapshot
 * shows its last reading, says how old it is, and opens nothing of it (its stat is kept open) -
 * and a watch (vnumad acted on it) has it read afresh at the next snapshot.
 */
static void
test_host_carries_settled_vm(void **state)
{
	struct tree *t = *state;
	struct host_observe_cost cost;
	struct linux_host *lh;
	struct snapshot *snap;
	struct host *h;
	char err[256];

	tree_faults(t, 0);
	assert_int_equal(host_linux_open(t->root, 100, &h, err, sizeof(err)), 0);
	lh = (struct linux_host *)h;
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_int_equal(snap->nr_vms, 1);
	assert_true(snap->vms[0].observed_age_s == 0);
	snapshot_free(snap);
	/* settled since long, read 5 s ago, next due in 8 */
	assert_int_equal(lh->nr_vms, 1);
	lh->vms[0].obs = (struct linux_obs_vm){
	    .read_s = linux_host_clock_s() - 5, .period_s = 8, .active_until_s = 0};
	tree_faults(t, 4000); /* a change the carried snapshot must not show */
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_int_equal(snap->nr_vms, 1);
	assert_string_equal(snap->vms[0].name, "web");
	assert_int_equal(snap->vms[0].nr_vcpus, 2);
	assert_true(snap->vms[0].observed_age_s >= 5);
	assert_int_equal(snap->vms[0].vcpus[0].faults_private[0], 0);
	snapshot_free(snap);
	assert_int_equal(h->ops->observe_cost(h, &cost), 0);
	assert_int_equal(cost.vms_read, 0);
	assert_int_equal(cost.vms_carried, 1);
	/* node0's meminfo (opened to be kept, as in test_host_observe_cost), /proc; and maybe
	 * the comms of 3 young others */
	assert_true(cost.opens == 1 + 1 || cost.opens == 1 + 1 + 3);
	assert_true(cost.cpu_cap_percent == LINUX_OBSERVE_CPU_CAP_PERCENT);
	/* vnumad pins one of its vCPUs: read at the next snapshot, the new faults seen */
	h->ops->watch_vm(h, QEMU_PID);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_true(snap->vms[0].observed_age_s == 0);
	assert_int_equal(snap->vms[0].vcpus[0].faults_private[0], 4000);
	snapshot_free(snap);
	assert_int_equal(h->ops->observe_cost(h, &cost), 0);
	assert_int_equal(cost.vms_read, 1);
	assert_int_equal(cost.reads_total, 2);
	assert_int_equal(cost.carried_total, 1);
	/* and without a cap nothing changes in that: the plan still carries a settled VM */
	host_linux_set_observe_cap(h, 0);
	lh->vms[0].obs = (struct linux_obs_vm){
	    .read_s = linux_host_clock_s() - 1, .period_s = 8, .active_until_s = 0};
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_true(snap->vms[0].observed_age_s >= 1);
	snapshot_free(snap);
	h->ops->close(h);
}

/* A kept fd of a process that died reads as gone and is closed (this machine's /proc). */
static void
test_pfile_dead_task(void **state)
{
	struct linux_pfile_pool pool;
	struct linux_pfile f;
	char *data;
	size_t len;
	pid_t child;

	(void)state;
	linux_pfile_pool_init(&pool, 4);
	linux_pfile_init(&f);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(
	    linux_pfile_read(&f, &pool, NULL, 4096, &data, &len, "/proc/%d/stat", (int)child), 0);
	free(data);
	assert_true(f.fd >= 0);
	assert_int_equal(pool.nr_open, 1);
	assert_int_equal(
	    linux_pfile_read(&f, &pool, NULL, 4096, &data, &len, "/proc/%d/stat", (int)child),
	    0); /* pread on the kept fd */
	free(data);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(
	    linux_pfile_read(&f, &pool, NULL, 4096, &data, &len, "/proc/%d/stat", (int)child),
	    -ENOENT);
	assert_null(data);
	assert_int_equal(f.fd, -1);
	assert_int_equal(pool.nr_open, 0);
}

/* A full pool keeps no more fds: files are then opened, read and closed each time. */
static void
test_pfile_pool_bound(void **state)
{
	struct tree *t = *state;
	struct linux_pfile_pool pool;
	struct linux_pfile a, b;
	char *data;
	size_t len;

	linux_pfile_pool_init(&pool, 1);
	linux_pfile_init(&a);
	linux_pfile_init(&b);
	assert_int_equal(linux_pfile_read(&a, &pool, t->root, 4096, &data, &len, "/proc/uptime"),
	                 0);
	free(data);
	assert_int_equal(linux_pfile_read(&b, &pool, t->root, 4096, &data, &len, "/proc/1/stat"),
	                 0);
	free(data);
	assert_true(a.fd >= 0);
	assert_int_equal(b.fd, -1);
	assert_int_equal(pool.nr_open, 1);
	tree_putf(t, "proc/uptime", "3000.00 1000.00\n"); /* rewritten in place: seen */
	assert_int_equal(linux_pfile_read(&a, &pool, t->root, 4096, &data, &len, "/proc/uptime"),
	                 0);
	assert_string_equal(data, "3000.00 1000.00\n");
	free(data);
	linux_pfile_close(&a, &pool);
	assert_int_equal(pool.nr_open, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_second_scan_reads_no_comm, tree_setup,
	                                    tree_teardown),
	    cmocka_unit_test_setup_teardown(test_young_exec, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_rescan_period, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_new_and_vanished, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_scan_from_events, tree_setup, tree_teardown),
	    cmocka_unit_test(test_delta_bounded),
	    cmocka_unit_test_setup_teardown(test_pid_reuse, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_thread_replaced, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_thread_named_late, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_uncached_discover, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_host_observe_cost, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_host_carries_settled_vm, tree_setup,
	                                    tree_teardown),
	    cmocka_unit_test(test_pfile_dead_task),
	    cmocka_unit_test_setup_teardown(test_pfile_pool_bound, tree_setup, tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

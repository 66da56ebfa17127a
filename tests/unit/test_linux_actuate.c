/*
 * test_linux_actuate.c - host/linux/actuate.c: affinity round trips on this very thread,
 * the cpuset reader on hand-made cgroup trees, page locations of our own memory, the
 * migrator against the real kernel (our own pages, a node that does not exist, a process
 * that exited) and against a fake two-node kernel (pacing with a fake clock, EBUSY retries,
 * ENOMEM node-full, ESRCH, max_bytes, huge pages whose tails say EBUSY).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/linux/actuate.h"

#define MIB        (1024ull * 1024)
#define PAGE       4096ull
#define FAKE_BASE  0x100000000ull /* fake kernel's address space starts here */
#define FAKE_PAGES (64 * 256)     /* 64 MiB of 4 KiB pages */
#define FAKE_PID   4242
#define FAKE_NEVER 1000 /* busy_left value: busy forever */

/* ---- helpers ---------------------------------------------------------------------------- */

static pid_t
dead_pid(void)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return pid;
}

static void
write_file(const char *dir, const char *rel, const char *text)
{
	char path[4096], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
rm_tree(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* ---- affinity --------------------------------------------------------------------------- */

static void
test_affinity_round_trip(void **state)
{
	pid_t tid = gettid();
	int *orig, nr_orig, *now, nr_now, one[1];
	char err[256] = "";

	(void)state;
	assert_int_equal(linux_affinity_get(tid, &orig, &nr_orig), 0);
	assert_true(nr_orig >= 1);
	one[0] = orig[nr_orig - 1];
	assert_int_equal(linux_affinity_set(tid, one, 1, err, sizeof(err)), 0);
	assert_int_equal(linux_affinity_get(tid, &now, &nr_now), 0);
	assert_int_equal(nr_now, 1);
	assert_int_equal(now[0], one[0]);
	free(now);
	/* restore; the list need not be sorted and may carry CPUs outside the cpuset */
	int *back = malloc(sizeof(int) * (size_t)(nr_orig + 1));
	for (int i = 0; i < nr_orig; i++)
		back[i] = orig[nr_orig - 1 - i];
	back[nr_orig] = 65000;
	assert_int_equal(linux_affinity_set(tid, back, nr_orig + 1, err, sizeof(err)), 0);
	assert_int_equal(linux_affinity_get(tid, &now, &nr_now), 0);
	assert_int_equal(nr_now, nr_orig);
	assert_memory_equal(now, orig, sizeof(int) * (size_t)nr_orig);
	free(back);
	free(now);
	free(orig);
}

static void
test_affinity_empty_intersection(void **state)
{
	int outside[] = {65000, 65535}, bad[] = {70000};
	char err[256] = "";
	int *cpus, nr;

	(void)state;
	assert_int_equal(linux_affinity_get(0, &cpus, &nr), 0);
	assert_int_equal(linux_affinity_set(gettid(), outside, 2, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cpuset"));
	err[0] = '\0';
	assert_int_equal(linux_affinity_set(gettid(), bad, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(linux_affinity_set(gettid(), NULL, 0, err, sizeof(err)), -EINVAL);
	free(cpus);
	/* nothing changed */
	int *after, nr_after;
	assert_int_equal(linux_affinity_get(0, &after, &nr_after), 0);
	assert_int_equal(nr_after, nr);
	free(after);
}

static void
test_affinity_dead_tid(void **state)
{
	pid_t pid = dead_pid();
	int cpu0 = 0, *cpus, nr;
	char err[256];

	(void)state;
	assert_int_equal(linux_affinity_set(pid, &cpu0, 1, err, sizeof(err)), -ESRCH);
	assert_int_equal(linux_affinity_get(pid, &cpus, &nr), -ESRCH);
	assert_null(cpus);
}

static void
test_cpuset_trees(void **state)
{
	char dir[] = "/tmp/vnumad-act-XXXXXX";
	int *cpus, nr;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* v2: the leaf has no cpuset controller, its parent does */
	write_file(dir, "proc/100/cgroup", "0::/machine.slice/vm1/vcpu0\n");
	write_file(dir, "sys/fs/cgroup/machine.slice/cpuset.cpus.effective", "2-3,6\n");
	write_file(dir, "sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
	write_file(dir, "sys/devices/system/cpu/online", "0-15\n");
	assert_int_equal(linux_cpuset_cpus_read(dir, 100, &cpus, &nr), 0);
	assert_int_equal(nr, 3);
	assert_int_equal(cpus[0], 2);
	assert_int_equal(cpus[2], 6);
	free(cpus);
	/* v1 (hybrid): the cpuset line wins over the unified one; empty effective -> cpus */
	write_file(dir, "proc/101/cgroup", "3:cpuset:/a\n0::/machine.slice\n");
	write_file(dir, "sys/fs/cgroup/cpuset/a/cpuset.effective_cpus", "\n");
	write_file(dir, "sys/fs/cgroup/cpuset/a/cpuset.cpus", "1\n");
	assert_int_equal(linux_cpuset_cpus_read(dir, 101, &cpus, &nr), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(cpus[0], 1);
	free(cpus);
	/* no cpuset file at all: the online CPUs */
	write_file(dir, "proc/102/cgroup", "1:name=systemd:/\n");
	assert_int_equal(linux_cpuset_cpus_read(dir, 102, &cpus, &nr), 0);
	assert_int_equal(nr, 16);
	free(cpus);
	/* a path escaping the hierarchy is ignored */
	write_file(dir, "proc/103/cgroup", "0::/../../etc\n");
	assert_int_equal(linux_cpuset_cpus_read(dir, 103, &cpus, &nr), 0);
	assert_int_equal(nr, 16);
	free(cpus);
	/* gone */
	assert_int_equal(linux_cpuset_cpus_read(dir, 104, &cpus, &nr), -ESRCH);
	rm_tree(dir);
}

/* ---- page locations and the real kernel -------------------------------------------------- */

static void
test_pages_where(void **state)
{
	size_t n = 256, i;
	char *buf =
	    mmap(NULL, n * PAGE * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void **addrs = calloc(n * 2, sizeof(*addrs));
	int *nodes = calloc(n * 2, sizeof(*nodes));

	(void)state;
	assert_true(buf != MAP_FAILED);
	memset(buf, 1, n * PAGE); /* the second half stays untouched */
	for (i = 0; i < n * 2; i++)
		addrs[i] = buf + i * PAGE;
	assert_int_equal(linux_pages_where(getpid(), addrs, n * 2, nodes), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(nodes[i], 0);
	for (i = n; i < n * 2; i++)
		assert_true(nodes[i] < 0); /* not present: -ENOENT (or -EFAULT) */
	assert_int_equal(linux_pages_where(0, addrs, n, nodes), 0);
	assert_int_equal(linux_pages_where(dead_pid(), addrs, n, nodes), -ESRCH);
	munmap(buf, n * PAGE * 2);
	free(addrs);
	free(nodes);
}

/*
 * The unprotect step on our own memory: only present pages are read, so untouched ones stay
 * unallocated (mincore), and a process that is gone is -ESRCH.
 */
static void
test_pages_unprotect_own(void **state)
{
	size_t n = 64, i;
	char *buf =
	    mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void **addrs = calloc(n, sizeof(*addrs));
	unsigned char in_core[64];

	(void)state;
	assert_true(buf != MAP_FAILED);
	madvise(buf, n * PAGE, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++) {
		addrs[i] = buf + i * PAGE;
		if (i % 2 == 0)
			buf[i * PAGE] = 1; /* even pages present, odd never touched */
	}
	assert_int_equal(linux_pages_unprotect(getpid(), addrs, n, PAGE), (int)n / 2);
	assert_int_equal(mincore(buf, n * PAGE, in_core), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(in_core[i] & 1, i % 2 == 0);
	/* a non-contiguous list (every third page) and the empty list */
	for (i = 0; i < n / 3; i++)
		addrs[i] = buf + i * 3 * PAGE;
	assert_int_equal(linux_pages_unprotect(getpid(), addrs, n / 3, PAGE), (int)(n / 3 + 1) / 2);
	assert_int_equal(linux_pages_unprotect(getpid(), addrs, 0, PAGE), 0);
	assert_int_equal(linux_pages_unprotect(dead_pid(), addrs, n / 3, PAGE), -ESRCH);
	munmap(buf, n * PAGE);
	free(addrs);
}

/* The calling thread's memory policy mode (get_mempolicy(2)), or -1. */
static int
policy_mode(void)
{
	int mode = -1;

	if (syscall(SYS_get_mempolicy, &mode, NULL, 0UL, NULL, 0UL) != 0)
		return -1;
	return mode;
}

static void *
unprotect_thread(void *arg)
{
	int *modes = arg;
	char *page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *addr = page;

	page[0] = 1;
	/* a thread inherits its creator's policy: start this one from the default */
	if (syscall(SYS_set_mempolicy, 0, NULL, 0UL) == 0)
		modes[0] = policy_mode();
	modes[2] = linux_pages_unprotect(getpid(), &addr, 1, PAGE);
	modes[1] = policy_mode();
	munmap(page, PAGE);
	return NULL;
}

/*
 * The thread that unprotects takes an explicit MPOL_LOCAL policy first (unprotect.c): with the
 * default one the kernel would migrate a cold page to the daemon's own node on that fault.
 */
static void
test_pages_unprotect_policy(void **state)
{
	int modes[3] = {-2, -2, -2};
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, unprotect_thread, modes), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(modes[2], 1);
	assert_int_equal(modes[0], 0); /* MPOL_DEFAULT before */
	assert_int_equal(modes[1], 4); /* MPOL_LOCAL after */
}

static char *
touched(size_t bytes)
{
	char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(buf != MAP_FAILED);
	madvise(buf, bytes, MADV_NOHUGEPAGE);
	memset(buf, 7, bytes);
	return buf;
}

static void
test_migrator_own_64mib_already_there(void **state)
{
	size_t bytes = 64 * MIB;
	char *buf = touched(bytes);
	struct linux_migrator *m = linux_migrator_new(256, 0);
	struct linux_migrate_req req = {getpid(), (uintptr_t)buf, bytes, 0, 0, 0, 0};
	struct linux_migrate_status st;
	struct linux_migrator_stats stats;
	int id = linux_migrator_add(m, &req);

	(void)state;
	assert_true(id >= 0);
	linux_migrator_set_tick_wall(m, 0); /* one tick walks it all, however slow this machine */
	assert_int_equal(linux_migrator_tick(m, 100.0), 0); /* already there: nothing charged */
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.pages_already, bytes / PAGE);
	assert_int_equal(st.counts.pages_moved, 0);
	assert_false(linux_migrator_busy(m));
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.requests_done, 1);
	assert_int_equal(stats.counts.pages_already, bytes / PAGE);
	assert_int_equal(stats.syscalls, bytes / PAGE / LINUX_MIGRATE_BATCH_PAGES);
	assert_int_equal(linux_migrator_release(m, id), 0);
	assert_int_equal(linux_migrator_status(m, id, &st), -ENOENT);
	linux_migrator_free(m);
	munmap(buf, bytes);
}

static void
test_migrator_absent_node(void **state)
{
	size_t bytes = 1 * MIB;
	char *buf = touched(bytes);
	struct linux_migrator *m = linux_migrator_new(64, 0);
	struct linux_migrate_req req = {getpid(), (uintptr_t)buf, bytes, 5, 0, 0, 0};
	struct linux_migrate_status st;
	struct linux_migrator_stats stats;
	int id = linux_migrator_add(m, &req), *where = calloc(bytes / PAGE, sizeof(int));
	void **addrs = calloc(bytes / PAGE, sizeof(void *));

	(void)state;
	linux_migrator_tick(m, 0.0);
	linux_migrator_tick(m, 1.0);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	/* move_pages refuses the whole call: node 5 has no memory (ENODEV) */
	assert_int_equal(st.state, LINUX_MIGRATE_FAILED);
	assert_int_equal(st.error, -ENODEV);
	assert_true(st.counts.pages_failed[LINUX_MIGRATE_ERR_NODEV] > 0);
	assert_int_equal(st.counts.pages_moved, 0);
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.requests_failed, 1);
	assert_false(linux_migrator_busy(m));
	/* and our memory stayed on node 0 */
	for (size_t i = 0; i < bytes / PAGE; i++)
		addrs[i] = buf + i * PAGE;
	assert_int_equal(linux_pages_where(0, addrs, bytes / PAGE, where), 0);
	for (size_t i = 0; i < bytes / PAGE; i++)
		assert_int_equal(where[i], 0);
	/* out-of-range nodes and misaligned ranges are refused up front */
	req.to_node = -1;
	assert_int_equal(linux_migrator_add(m, &req), -EINVAL);
	req.to_node = 0;
	req.start += 1;
	assert_int_equal(linux_migrator_add(m, &req), -EINVAL);
	linux_migrator_free(m);
	munmap(buf, bytes);
	free(where);
	free(addrs);
}

static void
test_migrator_pid_exited(void **state)
{
	struct linux_migrator *m = linux_migrator_new(64, 0);
	struct linux_migrate_req req = {dead_pid(), 0x10000000, 4 * MIB, 0, 0, 0, 0};
	struct linux_migrate_status st;
	struct linux_migrator_stats stats;
	int id = linux_migrator_add(m, &req);

	(void)state;
	linux_migrator_tick(m, 0.0);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_GONE);
	assert_int_equal(st.error, -ESRCH);
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.requests_gone, 1);
	assert_int_equal(stats.requests_failed, 0);
	for (int e = 0; e < LINUX_MIGRATE_NR_ERRS; e++)
		assert_int_equal(stats.counts.pages_failed[e], 0); /* quietly */
	assert_false(linux_migrator_busy(m));
	linux_migrator_free(m);
}

/* ---- a fake two-node kernel -------------------------------------------------------------- */

struct fake_kernel {
	int node[FAKE_PAGES];      /* where each page is; -ENOENT = not present */
	bool prot[FAKE_PAGES];     /* made PROT_NONE by the NUMA scanner: reads as absent */
	long touches;              /* pages the fake unprotect step was asked to read */
	int busy_left[FAKE_PAGES]; /* EBUSY this many more times */
	int node1_free;            /* pages node 1 can still take */
	bool gone;                 /* FAKE_PID exited */
	bool thp;                  /* 2 MiB huge pages: the first page of one moves all 512 */
	double wall_s;             /* a fake wall clock: each moved page costs page_cost_s */
	double page_cost_s;
	unsigned long max_move_call, first_move_call; /* pages per moving call */
	long calls;
};

static long
fake_move_pages(void *ctx, pid_t pid, unsigned long count, void **pages, const int *nodes,
                int *status, int flags)
{
	struct fake_kernel *k = ctx;

	int64_t moved_hp = -1; /* the huge page isolated last in this call */

	(void)flags;
	k->calls++;
	if (nodes != NULL) {
		k->wall_s += k->page_cost_s * (double)count;
		if (k->first_move_call == 0)
			k->first_move_call = count;
		else if (count > k->max_move_call)
			k->max_move_call = count;
	}
	if (pid != FAKE_PID || k->gone) {
		errno = ESRCH;
		return -1;
	}
	for (unsigned long i = 0; i < count; i++) {
		uint64_t a = (uint64_t)(uintptr_t)pages[i];
		uint64_t p = (a - FAKE_BASE) / PAGE;

		if (a < FAKE_BASE || p >= FAKE_PAGES) {
			status[i] = -EFAULT;
		} else if (k->prot[p]) {
			status[i] = k->thp ? -EFAULT : -ENOENT; /* as 6.1 says */
		} else if (nodes != NULL && k->thp && (int64_t)(p / 512) == moved_hp) {
			/* a tail of a huge page already isolated in this call: EBUSY, as 6.1 says
			 */
			status[i] = -EBUSY;
		} else if (nodes == NULL || k->node[p] == nodes[i] || k->node[p] < 0) {
			status[i] = k->node[p];
		} else if (k->busy_left[p] > 0) {
			k->busy_left[p]--;
			status[i] = -EBUSY;
		} else if (nodes[i] == 1 && k->node1_free == 0) {
			status[i] = -ENOMEM;
		} else if (k->thp) {
			for (uint64_t q = p / 512 * 512; q < p / 512 * 512 + 512; q++)
				k->node[q] = nodes[i];
			status[i] = nodes[i];
			moved_hp = (int64_t)(p / 512);
		} else {
			k->node1_free -= nodes[i] == 1;
			k->node[p] = nodes[i];
			status[i] = nodes[i];
		}
	}
	return 0;
}

/* The unprotect step on the fake: a present page read becomes accessible (its huge page too). */
static int
fake_unprotect(void *ctx, pid_t pid, void *const *pages, size_t n, uint64_t page_bytes)
{
	struct fake_kernel *k = ctx;
	int touched = 0;

	assert_int_equal(page_bytes, PAGE);
	if (pid != FAKE_PID || k->gone)
		return -ESRCH;
	for (size_t i = 0; i < n; i++) {
		uint64_t p = ((uint64_t)(uintptr_t)pages[i] - FAKE_BASE) / PAGE;

		if (p >= FAKE_PAGES || k->node[p] < 0)
			continue; /* not present: never read */
		k->touches++;
		touched++;
		for (uint64_t q = k->thp ? p / 512 * 512 : p; q <= (k->thp ? p | 511 : p); q++)
			k->prot[q] = false;
	}
	return touched;
}

static struct fake_kernel *
fake_new(void)
{
	struct fake_kernel *k = calloc(1, sizeof(*k));

	k->node1_free = FAKE_PAGES;
	return k;
}

static struct linux_migrator *
fake_migrator(struct fake_kernel *k, double rate_mib_s)
{
	struct linux_migrator *m = linux_migrator_new(rate_mib_s, 0);

	linux_migrator_set_syscall(m, fake_move_pages, k);
	linux_migrator_set_tick_wall(m, 0); /* the fake clock alone decides */
	return m;
}

static int
fake_add(struct linux_migrator *m, uint64_t first_page, uint64_t nr_pages, int to_node,
         uint64_t max_bytes)
{
	struct linux_migrate_req req = {
	    FAKE_PID, FAKE_BASE + first_page * PAGE, nr_pages * PAGE, to_node, max_bytes, 0, 0};
	int id = linux_migrator_add(m, &req);

	assert_true(id >= 0);
	return id;
}

static void
test_fake_rate_limit(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 8); /* 8 MiB/s */
	struct linux_migrator_stats stats;
	struct linux_migrate_status st;
	int id = fake_add(m, 0, FAKE_PAGES, 1, 0);
	uint64_t total = 0;

	(void)state;
	assert_int_equal(linux_migrator_tick(m, 10.0), 0); /* the first tick starts the clock */
	assert_int_equal(linux_migrator_tick(m, 10.5), 4 * MIB);
	assert_int_equal(linux_migrator_tick(m, 10.75), 2 * MIB);
	assert_int_equal(linux_migrator_tick(m, 10.75), 0);      /* no time passed */
	assert_int_equal(linux_migrator_tick(m, 9.0), 0);        /* the clock went back: nothing */
	assert_int_equal(linux_migrator_tick(m, 20.0), 8 * MIB); /* a pause: one second's worth */
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.counts.bytes_moved, 14 * MIB);
	assert_int_equal(stats.counts.pages_moved, 14 * MIB / PAGE);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.next, FAKE_BASE + 14 * MIB);
	assert_int_equal(st.state, LINUX_MIGRATE_ACTIVE);
	assert_true(stats.bytes_s > 1.39 * MIB && stats.bytes_s < 1.41 * MIB); /* 14 MiB / 10 s */
	/* ticks of 0.1 s: never more than rate x elapsed, until all 64 MiB are on node 1 */
	for (double t = 20.1; linux_migrator_busy(m); t += 0.1) {
		uint64_t b = linux_migrator_tick(m, t);

		assert_true(b <= (uint64_t)(0.8 * MIB) + PAGE);
		total += b;
	}
	assert_int_equal(total, 50 * MIB);
	for (int p = 0; p < FAKE_PAGES; p++)
		assert_int_equal(k->node[p], 1);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	linux_migrator_free(m);
	free(k);
}

/* from_nodes: only pages on the named nodes move; the rest stay and are counted. */
static void
test_fake_from_nodes(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 1024);
	struct linux_migrate_req req = {FAKE_PID, FAKE_BASE, 1024 * PAGE, 1, 0, 0, 1u << 2};
	struct linux_migrate_status st;
	int id;

	(void)state;
	for (int p = 0; p < 1024; p++)
		k->node[p] = p % 4 == 0 ? 2 : 0; /* a quarter on node 2, the rest on node 0 */
	id = linux_migrator_add(m, &req);
	assert_true(id >= 0);
	linux_migrator_tick(m, 0.0);
	linux_migrator_tick(m, 1.0);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.pages_moved, 256);
	assert_int_equal(st.counts.pages_other, 768);
	for (int p = 0; p < 1024; p++)
		assert_int_equal(k->node[p], p % 4 == 0 ? 1 : 0);
	linux_migrator_free(m);
	free(k);
}

static void
test_fake_already_and_absent(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 1);
	struct linux_migrate_status st;
	int id;

	(void)state;
	for (int p = 0; p < 1024; p++)
		k->node[p] = p % 2 ? 1 : -ENOENT; /* odd pages there, even never touched */
	id = fake_add(m, 0, 1024, 1, 0);
	assert_int_equal(linux_migrator_tick(m, 0.0), 0);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.pages_already, 512);
	assert_int_equal(st.counts.pages_failed[LINUX_MIGRATE_ERR_NOENT], 512);
	assert_int_equal(st.counts.pages_moved, 0);
	linux_migrator_free(m);
	free(k);
}

/*
 * Pages the NUMA scanner protected read as absent; with the unprotect step they are made
 * accessible, seen on their node and moved (base and huge pages); without it they are only
 * counted.  Never-touched pages are not read.
 */
static void
test_fake_protected_pages(void **state)
{
	struct linux_migrate_status st;

	(void)state;
	for (int thp = 0; thp < 2; thp++)
		for (int with = 0; with < 2; with++) {
			struct fake_kernel *k = fake_new();
			struct linux_migrator *m = fake_migrator(k, 1024);
			struct linux_migrate_req req = {FAKE_PID, FAKE_BASE, 2048 * PAGE, 1,
			                                0,        0,         1u};
			int id;

			k->thp = thp;
			for (int p = 0; p < 2048; p++) {
				k->node[p] =
				    p < 1536 ? 0 : -ENOENT; /* the last 512 never touched */
				k->prot[p] = p < 1536;
			}
			if (with)
				linux_migrator_set_unprotect(m, fake_unprotect, k);
			id = linux_migrator_add(m, &req);
			linux_migrator_tick(m, 0.0);
			linux_migrator_tick(m, 1.0);
			assert_int_equal(linux_migrator_status(m, id, &st), 0);
			assert_int_equal(st.state, LINUX_MIGRATE_DONE);
			assert_int_equal(st.counts.bytes_moved, with ? 1536 * PAGE : 0);
			assert_int_equal(st.counts.pages_unprotected, with ? 1536 : 0);
			assert_int_equal(k->touches, with ? 1536 : 0);
			for (int p = 0; p < 1536; p++)
				assert_int_equal(k->node[p], with ? 1 : 0);
			assert_int_equal(st.counts.pages_failed[LINUX_MIGRATE_ERR_NOENT] +
			                     st.counts.pages_failed[LINUX_MIGRATE_ERR_FAULT],
			                 with ? 512 : 2048);
			linux_migrator_free(m);
			free(k);
		}
}

static double
fake_wall(void *ctx)
{
	return ((struct fake_kernel *)ctx)->wall_s;
}

/*
 * Moving calls are sized to the tick's wall-clock limit at the measured cost per page: with
 * pages costing 2 ms and a 50 ms limit, the first call carries 512 pages and later ones about
 * 25 (never under 16), and every page still moves.
 */
static void
test_fake_slow_pages_small_calls(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 1024);
	int id, ticks = 0;
	struct linux_migrate_status st;

	(void)state;
	k->page_cost_s = 0.002;
	linux_migrator_set_tick_wall(m, 0.05);
	linux_migrator_set_wall_clock(m, fake_wall, k);
	id = fake_add(m, 0, 2048, 1, 0);
	for (double t = 0; linux_migrator_busy(m) && ticks < 1000; t += 0.05, ticks++)
		linux_migrator_tick(m, t);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.pages_moved, 2048);
	assert_int_equal(k->first_move_call, 512);
	assert_true(k->max_move_call >= 16 && k->max_move_call <= 32);
	assert_true(ticks > 1 + 1536 / 32); /* the first call, then one short call per tick */
	linux_migrator_free(m);
	free(k);
}

/*
 * Slow huge pages: once a huge page is seen moving whole, calls end only on huge-page
 * boundaries, so every huge page is charged and counted moved in full (never "already there").
 */
static void
test_fake_slow_huge_pages_whole(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 1024);
	struct linux_migrate_status st;
	int id, ticks = 0;

	(void)state;
	k->thp = true;
	k->page_cost_s = 0.002;
	linux_migrator_set_tick_wall(m, 0.05);
	linux_migrator_set_wall_clock(m, fake_wall, k);
	id = fake_add(m, 0, 8 * 512, 1, 0);
	for (double t = 0; linux_migrator_busy(m) && ticks < 1000; t += 0.05, ticks++)
		linux_migrator_tick(m, t);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.pages_moved, 8 * 512);
	assert_int_equal(st.counts.bytes_moved, 8 * 512 * PAGE);
	assert_int_equal(st.counts.pages_already, 0);
	assert_int_equal(k->max_move_call, 512);
	linux_migrator_free(m);
	free(k);
}

/* Ticks cut short by the wall-clock limit take requests in turn: none starves. */
static void
test_fake_slow_pages_round_robin(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 1024);
	struct linux_migrate_status a, b;
	int ida, idb;

	(void)state;
	k->page_cost_s = 0.002;
	linux_migrator_set_tick_wall(m, 0.05);
	linux_migrator_set_wall_clock(m, fake_wall, k);
	ida = fake_add(m, 0, 4096, 1, 0);
	idb = fake_add(m, 8192, 4096, 1, 0);
	for (int i = 0; i < 20; i++)
		linux_migrator_tick(m, 0.05 * i);
	assert_int_equal(linux_migrator_status(m, ida, &a), 0);
	assert_int_equal(linux_migrator_status(m, idb, &b), 0);
	assert_true(a.counts.pages_moved > 0 && b.counts.pages_moved > 0);
	assert_true(a.counts.pages_moved < 4096 && b.counts.pages_moved < 4096);
	linux_migrator_free(m);
	free(k);
}

static void
test_fake_ebusy_retry(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 64);
	struct linux_migrator_stats stats;
	struct linux_migrate_status st;
	int id, t;

	(void)state;
	k->busy_left[3] = 1;
	k->busy_left[7] = 2;
	k->busy_left[9] = FAKE_NEVER;
	id = fake_add(m, 0, 256, 1, 0);
	linux_migrator_tick(m, 0.0);
	linux_migrator_tick(m, 1.0);
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.counts.pages_moved, 253);
	assert_int_equal(stats.retries_pending, 3);
	assert_true(linux_migrator_busy(m));
	assert_int_equal(linux_migrator_release(m, id), -EBUSY);
	for (t = 2; t < 10 && linux_migrator_busy(m); t++)
		linux_migrator_tick(m, t);
	assert_false(linux_migrator_busy(m));
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.pages_moved, 255);
	assert_int_equal(st.counts.pages_failed[LINUX_MIGRATE_ERR_BUSY], 1);
	assert_int_equal(k->node[3], 1);
	assert_int_equal(k->node[7], 1);
	assert_int_equal(k->node[9], 0);
	assert_int_equal(linux_migrator_release(m, id), 0);
	linux_migrator_free(m);
	free(k);
}

static void
test_fake_enomem_node_full(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 64);
	struct linux_migrator_stats stats;
	struct linux_migrate_status st;
	int id, other;

	(void)state;
	k->node1_free = 100;
	id = fake_add(m, 0, 2048, 1, 0);
	other = fake_add(m, 4096, 16, 0, 0); /* already on node 0 */
	linux_migrator_tick(m, 0.0);
	linux_migrator_tick(m, 1.0);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_NODE_FULL);
	assert_int_equal(st.error, -ENOMEM);
	assert_int_equal(st.counts.pages_moved, 100);
	assert_int_equal(st.counts.pages_failed[LINUX_MIGRATE_ERR_NOMEM], 1);
	assert_int_equal(linux_migrator_status(m, other, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE); /* one full node stops only its request */
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.requests_node_full, 1);
	assert_int_equal(stats.requests_done, 1);
	assert_false(linux_migrator_busy(m));
	linux_migrator_free(m);
	free(k);
}

static void
test_fake_esrch_and_max_bytes(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 4);
	struct linux_migrator_stats stats;
	struct linux_migrate_status st;
	int a, b, c;

	(void)state;
	a = fake_add(m, 0, 4096, 1, 0);
	b = fake_add(m, 8192, 4096, 1, 0);
	k->busy_left[5] = FAKE_NEVER;
	linux_migrator_tick(m, 0.0);
	linux_migrator_tick(m, 1.0);
	k->gone = true; /* the VM exits */
	linux_migrator_tick(m, 2.0);
	assert_int_equal(linux_migrator_status(m, a, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_GONE);
	assert_int_equal(linux_migrator_status(m, b, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_GONE);
	linux_migrator_stats_get(m, &stats);
	assert_int_equal(stats.requests_gone, 2);
	assert_int_equal(stats.retries_pending, 0);
	assert_false(linux_migrator_busy(m));
	assert_int_equal(linux_migrator_release(m, a), 0);
	assert_int_equal(linux_migrator_release(m, b), 0);
	/* max_bytes: stop after 1 MiB even with budget to spare */
	k->gone = false;
	c = fake_add(m, 12288, 2048, 1, 1 * MIB);
	linux_migrator_tick(m, 3.0);
	assert_int_equal(linux_migrator_status(m, c, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	assert_int_equal(st.counts.bytes_moved, 1 * MIB);
	linux_migrator_free(m);
	free(k);
}

static void
test_fake_thp_batches(void **state)
{
	struct fake_kernel *k = fake_new();
	struct linux_migrator *m = fake_migrator(k, 64);
	struct linux_migrate_status st;
	int id;

	(void)state;
	k->thp = true;
	id = fake_add(m, 79, 4 * 512, 1, 0); /* starts inside a huge page, spans five */
	linux_migrator_tick(m, 0.0);
	linux_migrator_tick(m, 1.0);
	assert_int_equal(linux_migrator_status(m, id, &st), 0);
	assert_int_equal(st.state, LINUX_MIGRATE_DONE);
	/* batches end on huge-page boundaries: every tail is seen to move with its head */
	assert_int_equal(st.counts.pages_moved, 4 * 512);
	assert_int_equal(st.counts.pages_already, 0);
	for (int e = 0; e < LINUX_MIGRATE_NR_ERRS; e++)
		assert_int_equal(st.counts.pages_failed[e], 0);
	assert_false(linux_migrator_busy(m));
	assert_int_equal(k->node[79 + 4 * 512 - 1], 1);
	linux_migrator_free(m);
	free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_affinity_round_trip),
	    cmocka_unit_test(test_affinity_empty_intersection),
	    cmocka_unit_test(test_affinity_dead_tid),
	    cmocka_unit_test(test_cpuset_trees),
	    cmocka_unit_test(test_pages_where),
	    cmocka_unit_test(test_pages_unprotect_own),
	    cmocka_unit_test(test_pages_unprotect_policy),
	    cmocka_unit_test(test_migrator_own_64mib_already_there),
	    cmocka_unit_test(test_migrator_absent_node),
	    cmocka_unit_test(test_migrator_pid_exited),
	    cmocka_unit_test(test_fake_rate_limit),
	    cmocka_unit_test(test_fake_already_and_absent),
	    cmocka_unit_test(test_fake_from_nodes),
	    cmocka_unit_test(test_fake_protected_pages),
	    cmocka_unit_test(test_fake_slow_pages_small_calls),
	    cmocka_unit_test(test_fake_slow_pages_round_robin),
	    cmocka_unit_test(test_fake_slow_huge_pages_whole),
	    cmocka_unit_test(test_fake_ebusy_retry),
	    cmocka_unit_test(test_fake_enomem_node_full),
	    cmocka_unit_test(test_fake_esrch_and_max_bytes),
	    cmocka_unit_test(test_fake_thp_batches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * bench_migrate.c - how fast the paced migrator (host/linux/actuate.c) moves memory between
 * two nodes, next to numactl's `migratepages` on the same amount.
 *
 * Allocates N MiB of its own memory, makes sure it sits on the first node (with the migrator,
 * untimed), then times the migrator moving it to the second node with a rate limit far above
 * any memory bus (so only the engine's own cost shows), ticking on the monotonic clock.  Then
 * it times `migratepages <self> <second> <first>` moving the same memory back and prints both
 * rates and their ratio.  On a host with fewer than two nodes it prints "needs 2 NUMA nodes"
 * and exits 0.  It runs twice: on 4 KiB pages (MADV_NOHUGEPAGE) and on transparent huge
 * pages (MADV_HUGEPAGE).  The migrator line also gives pages moved, already in place and
 * failed by errno.  A benchmark reports numbers and never fails on time; it exits 1 only when
 * memory could not be placed or the migrator reports an error.
 *
 * Usage: bench_migrate [MIB]   (default 256)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "host/linux/actuate.h"
#include "host/linux/scan.h"
#include "host/linux/sysfs.h"

/* Memory moved by default, MiB: large enough that per-call overheads average out. */
#define BENCH_MIB_DEF 256
/* Rate limit for the timed run, MiB/s: far above any memory bus, i.e. unpaced. */
#define BENCH_RATE_UNLIMITED_MIB_S 1e6

static double
bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Two online node ids into nodes[]; -ENODEV when there are fewer. */
static int
bench_two_nodes(int nodes[2])
{
	char *data;
	size_t len;
	int *ids, nr, ret;

	if ((ret = linux_file_read(NULL, 4096, &data, &len, "/sys/devices/system/node/online")) < 0)
		return ret;
	ret = linux_idlist_parse(data, len, LINUX_MAX_NODES, &ids, &nr);
	free(data);
	if (ret < 0)
		return ret;
	if (nr < 2) {
		free(ids);
		return -ENODEV;
	}
	nodes[0] = ids[0];
	nodes[1] = ids[1];
	free(ids);
	return 0;
}

/* Move buf to node with the migrator; seconds taken, or a negative value on failure. */
static double
bench_migrator_run(char *buf, size_t bytes, int node, struct linux_migrator_stats *stats)
{
	struct linux_migrator *m = linux_migrator_new(BENCH_RATE_UNLIMITED_MIB_S, 0);
	struct linux_migrate_req req = {getpid(), (uintptr_t)buf, bytes, node, 0, 0, 0};
	struct linux_migrate_status st;
	double t0, t1;
	int id = linux_migrator_add(m, &req);

	if (id < 0) {
		linux_migrator_free(m);
		return -1;
	}
	t0 = bench_now_s();
	linux_migrator_tick(m, t0);
	while (linux_migrator_busy(m))
		linux_migrator_tick(m, bench_now_s());
	t1 = bench_now_s();
	linux_migrator_status(m, id, &st);
	linux_migrator_stats_get(m, stats);
	linux_migrator_free(m);
	return st.state == LINUX_MIGRATE_DONE ? t1 - t0 : -1;
}

static void
bench_print_stats(const char *what, const struct linux_migrator_stats *s, double secs, size_t mib)
{
	static const char *const names[LINUX_MIGRATE_NR_ERRS] = {
	    "EBUSY", "ENOMEM", "EACCES", "EFAULT", "ENOENT", "ENODEV", "EINVAL", "other"};

	printf("%-12s %6zu MiB in %8.3f s = %9.1f MiB/s  (moved %llu pages, already %llu, "
	       "%llu syscalls",
	       what, mib, secs, secs > 0 ? (double)mib / secs : 0.0,
	       (unsigned long long)s->counts.pages_moved,
	       (unsigned long long)s->counts.pages_already, (unsigned long long)s->syscalls);
	for (int e = 0; e < LINUX_MIGRATE_NR_ERRS; e++)
		if (s->counts.pages_failed[e] > 0)
			printf(", %s %llu", names[e],
			       (unsigned long long)s->counts.pages_failed[e]);
	printf(")\n");
}

/* One round trip of mib MiB: the migrator there, migratepages back.  0, or 1 on failure. */
static int
bench_round(size_t mib, const int nodes[2], bool thp)
{
	size_t bytes = mib << 20;
	struct linux_migrator_stats stats;
	double ours, theirs, t0;
	char cmd[128], *buf;

	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(buf, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(buf, 1, bytes);
	printf("-- %s pages\n", thp ? "transparent huge" : "4 KiB");
	if (bench_migrator_run(buf, bytes, nodes[0], &stats) < 0) {
		fprintf(stderr, "bench_migrate: could not place the buffer on node %d\n", nodes[0]);
		return 1;
	}
	bench_print_stats("placing", &stats, 0, mib);
	ours = bench_migrator_run(buf, bytes, nodes[1], &stats);
	if (ours < 0) {
		fprintf(stderr, "bench_migrate: the migrator failed\n");
		return 1;
	}
	bench_print_stats("migrator", &stats, ours, mib);
	snprintf(cmd, sizeof(cmd), "migratepages %d %d %d", (int)getpid(), nodes[1], nodes[0]);
	t0 = bench_now_s();
	if (system(cmd) != 0) {
		printf("migratepages not available (numactl): no comparison\n");
		munmap(buf, bytes);
		return 0;
	}
	theirs = bench_now_s() - t0;
	printf("%-12s %6zu MiB in %8.3f s = %9.1f MiB/s  (whole process, includes exec)\n",
	       "migratepages", mib, theirs, theirs > 0 ? (double)mib / theirs : 0.0);
	printf("ratio migrator/migratepages throughput: %.2f\n", ours > 0 ? theirs / ours : 0.0);
	munmap(buf, bytes);
	return 0;
}

int
main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : BENCH_MIB_DEF;
	int nodes[2];

	if (bench_two_nodes(nodes) < 0) {
		printf("needs 2 NUMA nodes\n");
		return 0;
	}
	if (mib == 0)
		mib = BENCH_MIB_DEF;
	if (bench_round(mib, nodes, false) != 0 || bench_round(mib, nodes, true) != 0)
		return 1;
	return 0;
}

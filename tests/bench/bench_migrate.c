/*
 * bench_migrate.c - how fast the paced migrator (host/linux/actuate.c) moves memory between
 * two nodes, next to numactl's `migratepages` and the kernel's migrate_pages(2) on the same
 * amount.
 *
 * Each round allocates N MiB of its own memory and puts it on the first node (untimed: with
 * migrate_pages(2), a round trip to warm up, then the migrator for anything left).  Then
 * three methods take turns moving it to the other node, timed on the monotonic clock:
 *   migrator       the migrator, with a rate limit far above any memory bus (so only the
 *                  engine's own cost shows), ticked until it is idle;
 *   migratepages   `migratepages <self> <from> <to>` (fork, exec and a walk of the whole
 *                  process, as an administrator would run it; once untimed first, so that its
 *                  binary and libraries are cached);
 *   migrate_pages  the migrate_pages(2) call migratepages makes, from this process (no fork
 *                  or exec): the kernel's own whole-process migration.
 * With -l LEGS each method moves it LEGS times per round (the order rotating by leg and by
 * round, so each goes both ways and none always comes first), and the round keeps each
 * method's best leg: on a shared machine other work only ever slows a leg down.  After each
 * leg the buffer's pages on the target node are counted (move_pages with no node list) and a
 * rate is the MiB found there over the time, so a method that left pages behind is not
 * credited with them.  Modes: 4k (MADV_NOHUGEPAGE), thp (MADV_HUGEPAGE, the migrator stepping
 * by 4 KiB as a caller that does not know the backing would) and thp2m (THP, 2 MiB steps: a
 * caller that read AnonHugePages).  Every round ends with a line
 *   RESULT mode=4k round=1 mib=256 legs=3 migrator=MIB/S migratepages=MIB/S
 *          migrate_pages=MIB/S ratio=MIGRATOR/MIGRATEPAGES ratio_syscall=MIGRATOR/MIGRATE_PAGES
 * that tests/bench/bench_migrate_numa.sh summarizes.
 *
 * On a host with fewer than two nodes it prints "needs 2 NUMA nodes" and exits 0.  With
 * kernel.numa_balancing on, pages the kernel is sampling read as absent to move_pages (see
 * actuate.h) and the migrator skips them: it warns, and the counts show it.  A benchmark
 * reports numbers and never fails on time; it exits 1 only when memory could not be placed or
 * the migrator reports an error.
 *
 * Usage: bench_migrate [-r ROUNDS] [-l LEGS] [-m MODES] [MIB]   (defaults: 1 round, 1 leg,
 *        all modes, 256 MiB; MODES a comma list of 4k, thp, thp2m)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host/linux/actuate.h"
#include "host/linux/scan.h"
#include "host/linux/sysfs.h"
#include "policy/util.h"

/* Memory moved by default, MiB: large enough that per-call overheads average out. */
#define BENCH_MIB_DEF 256
/* Rate limit for the timed run, MiB/s: far above any memory bus, i.e. unpaced. */
#define BENCH_RATE_UNLIMITED_MIB_S 1e6
/* Huge page size the thp2m mode steps by, bytes (x86-64 and arm64 with 4 KiB base pages). */
#define BENCH_HUGE_BYTES ((uint64_t)2 * 1024 * 1024)
/* Base page size assumed when counting where the buffer is, bytes. */
#define BENCH_PAGE_BYTES 4096
/*
 * Pages looked up per move_pages call when counting: small arrays, so that little of this
 * process besides the buffer is there for migratepages and migrate_pages(2) to move too.
 */
#define BENCH_COUNT_PAGES 1024

extern char **environ;

enum bench_method { BENCH_MIGRATOR, BENCH_MIGRATEPAGES, BENCH_SYSCALL, BENCH_NR_METHODS };

static const char *const bench_method_names[BENCH_NR_METHODS] = {"migrator", "migratepages",
                                                                 "migrate_pages"};

struct bench_mode {
	const char *name;
	const char *title;
	bool thp;
	uint64_t step_bytes; /* the migrator's address step: 0 = base pages */
};

static const struct bench_mode bench_modes[] = {
    {"4k", "4 KiB pages", false, 0},
    {"thp", "transparent huge pages, 4 KiB steps", true, 0},
    {"thp2m", "transparent huge pages, 2 MiB steps", true, BENCH_HUGE_BYTES},
};
#define BENCH_NR_MODES ((int)(sizeof(bench_modes) / sizeof(bench_modes[0])))

/* One round's buffer. */
struct bench_buf {
	char *map; /* the mapping, BENCH_HUGE_BYTES longer than the buffer */
	char *mem; /* the buffer: map rounded up to a huge-page boundary */
	size_t bytes;
	size_t nr_pages; /* of BENCH_PAGE_BYTES */
};

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

/* The number after key (e.g. "VmRSS:") at the start of a line of a small file; -1 if none. */
static long
bench_proc_value(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0) {
			v = strtol(line + strlen(key), NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Bytes of the buffer now on node (by base page). */
static uint64_t
bench_bytes_on(struct bench_buf *b, int node)
{
	void *addrs[BENCH_COUNT_PAGES];
	int where[BENCH_COUNT_PAGES];
	uint64_t n = 0;

	for (size_t i = 0; i < b->nr_pages; i += BENCH_COUNT_PAGES) {
		size_t k =
		    b->nr_pages - i < BENCH_COUNT_PAGES ? b->nr_pages - i : BENCH_COUNT_PAGES;

		for (size_t j = 0; j < k; j++)
			addrs[j] = b->mem + (i + j) * BENCH_PAGE_BYTES;
		if (linux_pages_where(0, addrs, k, where) < 0)
			return 0;
		for (size_t j = 0; j < k; j++)
			n += where[j] == node;
	}
	return n * BENCH_PAGE_BYTES;
}

/* Move the buffer to node with the migrator; seconds taken, or a negative value on failure. */
static double
bench_migrator_run(struct bench_buf *b, int node, uint64_t step_bytes,
                   struct linux_migrator_stats *stats)
{
	struct linux_migrator *m = linux_migrator_new(BENCH_RATE_UNLIMITED_MIB_S, 0);
	struct linux_migrate_req req = {getpid(), (uintptr_t)b->mem, b->bytes, node,
	                                0,        step_bytes,        0};
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

/* `migratepages <self> from to`, without a shell; seconds taken, or -1 when it failed. */
static double
bench_migratepages_run(int from, int to)
{
	char pid_s[16], from_s[16], to_s[16];
	char *argv[] = {"migratepages", pid_s, from_s, to_s, NULL};
	double t0 = bench_now_s();
	pid_t child;
	int st;

	snprintf(pid_s, sizeof(pid_s), "%d", (int)getpid());
	snprintf(from_s, sizeof(from_s), "%d", from);
	snprintf(to_s, sizeof(to_s), "%d", to);
	if (posix_spawnp(&child, "migratepages", NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return bench_now_s() - t0;
}

/* migrate_pages(2) on this process from one node to another; seconds taken, or -1. */
static double
bench_syscall_run(int from, int to)
{
	unsigned long old_mask, new_mask;
	int bits = (int)(8 * sizeof(old_mask)); /* one word of mask: node ids below 64 */
	double t0 = bench_now_s();

	if (from < 0 || from >= bits || to < 0 || to >= bits)
		return -1;
	old_mask = 1ul << from;
	new_mask = 1ul << to;
	/* maxnode counts one more than the bits the kernel reads */
	if (syscall(SYS_migrate_pages, 0L, (unsigned long)bits + 1, &old_mask, &new_mask) < 0)
		return -1;
	return bench_now_s() - t0;
}

static void
bench_print_leg(const char *what, uint64_t bytes_there, double secs, const struct bench_buf *b)
{
	double mib = (double)bytes_there / (1 << 20);

	printf("%-14s %7.1f of %zu MiB in %7.3f s = %8.1f MiB/s  (THP now %ld MiB)\n", what, mib,
	       b->bytes >> 20, secs, secs > 0 ? mib / secs : 0.0,
	       bench_proc_value("/proc/self/smaps_rollup", "AnonHugePages:") / 1024);
}

static void
bench_print_stats(const struct linux_migrator_stats *s)
{
	static const char *const names[LINUX_MIGRATE_NR_ERRS] = {
	    "EBUSY", "ENOMEM", "EACCES", "EFAULT", "ENOENT", "ENODEV", "EINVAL", "other"};

	printf("%14s moved %llu steps, already %llu, %llu syscalls", "",
	       (unsigned long long)s->counts.pages_moved,
	       (unsigned long long)s->counts.pages_already, (unsigned long long)s->syscalls);
	for (int e = 0; e < LINUX_MIGRATE_NR_ERRS; e++)
		if (s->counts.pages_failed[e] > 0)
			printf(", %s %llu", names[e],
			       (unsigned long long)s->counts.pages_failed[e]);
	printf("\n");
}

static int
bench_buf_init(struct bench_buf *b, size_t mib, bool thp)
{
	b->bytes = mib << 20;
	b->map = mmap(NULL, b->bytes + BENCH_HUGE_BYTES, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->map == MAP_FAILED) {
		perror("mmap");
		return -ENOMEM;
	}
	/* aligned, so that with THP every 2 MiB of the buffer can be one huge page */
	b->mem =
	    b->map + (BENCH_HUGE_BYTES - (uintptr_t)b->map % BENCH_HUGE_BYTES) % BENCH_HUGE_BYTES;
	madvise(b->mem, b->bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(b->mem, 1, b->bytes);
	b->nr_pages = b->bytes / BENCH_PAGE_BYTES;
	return 0;
}

static void
bench_buf_fini(struct bench_buf *b)
{
	munmap(b->map, b->bytes + BENCH_HUGE_BYTES);
}

/*
 * One leg: move b from node `from` to node `to` with method; the MiB/s that arrived, 0 when
 * the method could not run, or -1 when the migrator failed.
 */
static double
bench_leg(struct bench_buf *b, enum bench_method method, int from, int to,
          const struct bench_mode *mode)
{
	struct linux_migrator_stats stats;
	double secs;
	uint64_t there;

	if (method == BENCH_MIGRATOR)
		secs = bench_migrator_run(b, to, mode->step_bytes, &stats);
	else if (method == BENCH_MIGRATEPAGES)
		secs = bench_migratepages_run(from, to);
	else
		secs = bench_syscall_run(from, to);
	if (secs < 0 && method == BENCH_MIGRATOR) {
		fprintf(stderr, "bench_migrate: the migrator failed\n");
		return -1;
	}
	if (secs < 0) {
		printf("%-14s did not run (%s): no comparison\n", bench_method_names[method],
		       method == BENCH_MIGRATEPAGES ? "numactl missing?" : strerror(errno));
		return 0;
	}
	there = bench_bytes_on(b, to);
	bench_print_leg(bench_method_names[method], there, secs, b);
	if (method == BENCH_MIGRATOR)
		bench_print_stats(&stats);
	return secs > 0 ? (double)there / (1 << 20) / secs : 0;
}

/*
 * The legs of round r on b, which sits on nodes[0]: each method in turn moves b to the other
 * node, legs times over, the order rotating from leg to leg and from round to round (so each
 * method goes both ways when legs >= 2, and none always runs first or after the same one).
 * best[] gets each method's fastest leg in MiB/s.  0, or 1 when the migrator failed.
 */
static int
bench_legs(struct bench_buf *b, const int nodes[2], const struct bench_mode *mode, int r, int legs,
           double best[BENCH_NR_METHODS])
{
	int at = 0; /* index in nodes[] of where b is */

	for (int l = 0; l < legs; l++)
		for (int i = 0; i < BENCH_NR_METHODS; i++) {
			enum bench_method method =
			    (enum bench_method)((i + l + r - 1) % BENCH_NR_METHODS);
			double rate = bench_leg(b, method, nodes[at], nodes[1 - at], mode);

			if (rate < 0)
				return 1;
			if (rate > best[method])
				best[method] = rate;
			if (rate > 0)
				at = 1 - at;
		}
	return 0;
}

/* One round of mode on mib MiB.  0, or 1 on failure. */
static int
bench_round(size_t mib, const int nodes[2], const struct bench_mode *mode, int round, int legs)
{
	struct linux_migrator_stats stats;
	double best[BENCH_NR_METHODS] = {0};
	struct bench_buf b;
	int ret;

	if (bench_buf_init(&b, mib, mode->thp) < 0)
		return 1;
	printf("-- %s, round %d\n", mode->title, round);
	/*
	 * Untimed: migrate_pages(2) to node 0 (it also takes pages NUMA balancing is sampling,
	 * see main), a round trip to warm up (without it the first timed leg, after placing with
	 * the migrator alone, averaged a fifth slower on 4 KiB pages), then the migrator for
	 * anything left.
	 */
	bench_syscall_run(nodes[1], nodes[0]);
	bench_syscall_run(nodes[0], nodes[1]);
	bench_syscall_run(nodes[1], nodes[0]);
	if (bench_migrator_run(&b, nodes[0], mode->step_bytes, &stats) < 0 ||
	    bench_bytes_on(&b, nodes[0]) != b.bytes) {
		fprintf(stderr, "bench_migrate: could not place the buffer on node %d\n", nodes[0]);
		bench_buf_fini(&b);
		return 1;
	}
	printf("rest of this process: %.1f MiB resident (migratepages and migrate_pages(2) move "
	       "it too)\n",
	       (double)bench_proc_value("/proc/self/status", "VmRSS:") / 1024 - (double)mib);
	ret = bench_legs(&b, nodes, mode, round, legs, best);
	if (ret == 0)
		printf("RESULT mode=%s round=%d mib=%zu legs=%d migrator=%.1f migratepages=%.1f "
		       "migrate_pages=%.1f ratio=%.3f ratio_syscall=%.3f\n",
		       mode->name, round, mib, legs, best[BENCH_MIGRATOR], best[BENCH_MIGRATEPAGES],
		       best[BENCH_SYSCALL],
		       best[BENCH_MIGRATEPAGES] > 0
		           ? best[BENCH_MIGRATOR] / best[BENCH_MIGRATEPAGES]
		           : 0.0,
		       best[BENCH_SYSCALL] > 0 ? best[BENCH_MIGRATOR] / best[BENCH_SYSCALL] : 0.0);
	bench_buf_fini(&b);
	return ret;
}

/* Parse a comma list of mode names into want[]; -EINVAL on an unknown one. */
static int
bench_modes_parse(const char *list, bool want[BENCH_NR_MODES])
{
	char *copy = xstrdup(list), *save = NULL, *tok;
	int ret = 0;

	memset(want, 0, sizeof(bool) * BENCH_NR_MODES);
	for (tok = strtok_r(copy, ",", &save); tok && ret == 0; tok = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < BENCH_NR_MODES && strcmp(tok, bench_modes[i].name) != 0; i++)
			;
		if (i == BENCH_NR_MODES)
			ret = -EINVAL;
		else
			want[i] = true;
	}
	free(copy);
	return ret;
}

static void
bench_usage(void)
{
	fprintf(stderr, "usage: bench_migrate [-r ROUNDS] [-l LEGS] [-m 4k,thp,thp2m] [MIB]\n");
}

int
main(int argc, char **argv)
{
	bool want[BENCH_NR_MODES] = {true, true, true};
	size_t mib = BENCH_MIB_DEF;
	int nodes[2], rounds = 1, legs = 1, opt;

	setvbuf(stdout, NULL, _IOLBF, 0); /* keep it in order with stderr in a log */
	while ((opt = getopt(argc, argv, "r:l:m:")) != -1) {
		if (opt == 'r' && (rounds = atoi(optarg)) > 0)
			continue;
		if (opt == 'l' && (legs = atoi(optarg)) > 0)
			continue;
		if (opt == 'm' && bench_modes_parse(optarg, want) == 0)
			continue;
		bench_usage();
		return 2;
	}
	if (optind < argc && (mib = strtoul(argv[optind], NULL, 10)) == 0) {
		bench_usage();
		return 2;
	}
	if (bench_two_nodes(nodes) < 0) {
		printf("needs 2 NUMA nodes\n");
		return 0;
	}
	if (bench_proc_value("/proc/sys/kernel/numa_balancing", "") > 0)
		printf("warning: kernel.numa_balancing is on: move_pages skips the pages it is "
		       "sampling, so the migrator may leave some behind\n");
	/* migratepages once with nothing to move: its binary and libraries are then cached */
	printf("migratepages with nothing to move (exec and page walk): %.3f s\n",
	       bench_migratepages_run(nodes[0], nodes[0]));
	for (int r = 1; r <= rounds; r++)
		for (int i = 0; i < BENCH_NR_MODES; i++)
			if (want[i] && bench_round(mib, nodes, &bench_modes[i], r, legs) != 0)
				return 1;
	return 0;
}

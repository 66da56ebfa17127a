/*
 * vnuma-load - a workload generator that looks like a QEMU guest to vnumad: one anonymous
 * "guest RAM" mapping (one per cell for --workload cells, as QEMU maps one memory backend per
 * vNUMA cell) first-touched from one node, and one "CPU n/KVM" thread per vCPU making random
 * 64-byte reads and writes in one of the simulator's access patterns.  Inside a real guest it
 * is a memory benchmark with the same patterns.
 *
 * Start-up re-executes /proc/self/exe as "qemu-system-x86_64 -name guest=NAME,... <options>"
 * (with -m giving the size of the RAM mapped, and the -object/-numa options that describe the
 * cells for --workload cells) and
 * renames the main thread, so a process scan finds it as QEMU would be found.  The main
 * thread then only reports and waits for SIGTERM/SIGINT (blocked in every thread and taken
 * with sigtimedwait, so there is no signal handler).  Options: docs/vnuma-load.1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "guest-tools/load_opts.h"
#include "guest-tools/load_pattern.h"
#include "guest-tools/load_sys.h"

#ifndef VNUMA_LOAD_VERSION
#define VNUMA_LOAD_VERSION "unknown"
#endif

/* Accesses between two looks at the clock, the stop flag and the CPU: well under 1 ms. */
#define LOAD_BATCH 4096
/* idle: busy LOAD_IDLE_BUSY_MS of every LOAD_IDLE_PERIOD_MS, the scenario format's util 0.05. */
#define LOAD_IDLE_PERIOD_MS 100
#define LOAD_IDLE_BUSY_MS   5
/* First touch in chunks of this many bytes, checking for SIGTERM between two. */
#define LOAD_TOUCH_CHUNK ((size_t)64 << 20)
/*
 * Each RAM mapping is aligned to this (bytes), a huge page on x86-64, as QEMU aligns its RAM
 * (QEMU_VMALLOC_ALIGN), and followed by one inaccessible guard page, as QEMU leaves after each
 * RAM block, so the kernel never merges a cell with its neighbour or another mapping.
 */
#define LOAD_RAM_ALIGN ((size_t)2 << 20)
/* The main thread wakes at least this often (seconds) when it has nothing scheduled. */
#define LOAD_IDLE_WAIT_S 1.0
/* Nodes the summary counts pages on (every id --node accepts). */
#define LOAD_SUMMARY_NODES (LOAD_NODE_MAX + 1)

#define LOAD_EXIT_OK    0
#define LOAD_EXIT_FAIL  1
#define LOAD_EXIT_USAGE 2

struct load_run;

/* One RAM mapping: lines [first_line, first_line + nr_lines) of guest RAM, at base. */
struct load_ram_part {
	char *base;
	size_t map_len; /* mapped at base: the part and its guard page (0: not mapped) */
	uint64_t first_line;
	uint64_t nr_lines;
};

/* One vCPU thread, on its own cache lines so two vCPUs' counters never share one. */
struct load_vcpu {
	struct load_run *run;
	int idx;
	int pin_cpu; /* -1: floating */
	pthread_t thread;
	bool created;
	int *scratch;              /* adverse permutations: vcpus ints */
	_Atomic uint64_t accesses; /* published after every batch */
	_Atomic int cpu, node;     /* where it last ran, -1 before its first batch */
	uint64_t reported;         /* accesses at the last report (main thread only) */
} __attribute__((aligned(LOAD_LINE_BYTES)));

struct load_run {
	struct load_opts opts;
	struct load_pattern pattern;
	int nr_parts;                /* RAM mappings: 1, or one per cell, in guest-physical order */
	struct load_ram_part *parts; /* each where the kernel put it (see load_ram_map) */
	struct load_vcpu *vcpus;
	sigset_t sigs; /* SIGTERM and SIGINT: blocked everywhere, taken by the main thread */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cond;
	bool gate_open;        /* under gate_lock: vCPUs may start (start_s is set) */
	_Atomic bool stop;     /* vCPUs leave at their next batch */
	double start_s;        /* monotonic time the vCPUs started */
	double touch_s;        /* how long the first touch took */
	char touch_nodes[512]; /* where the RAM was right after it: "node:percent,..." */
	bool stopped_early;    /* a signal came during the first touch */
};

static void load_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
load_warnx(const char *fmt, ...)
{
	va_list ap;

	fputs("vnuma-load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double
load_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct timespec
load_timespec(double s)
{
	struct timespec ts;

	if (s < 0)
		s = 0;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	return ts;
}

/* Wait up to wait_s for SIGTERM or SIGINT; true if one came. */
static bool
load_signal_wait(const sigset_t *sigs, double wait_s)
{
	struct timespec ts = load_timespec(wait_s);

	return sigtimedwait(sigs, NULL, &ts) > 0;
}

static void
load_usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: vnuma-load --name NAME [--vcpus N] [--memory SIZE] [--node N [--mbind]]\n"
	    "                  [--workload private|shared|cells|phased|adverse|idle]\n"
	    "                  [--cells K] [--phase S] [--cold PCT] [--pin] [--duration S]\n"
	    "                  [--report S] [--seed N] [--hugepages|--no-hugepages] [-h] [-V]\n"
	    "options:\n"
	    "  --name NAME       the VM name (-name guest=NAME on the QEMU-like command line)\n"
	    "  --vcpus N         vCPU threads, named \"CPU n/KVM\" (default 1)\n"
	    "  --memory SIZE     guest RAM, e.g. 512M, 1.5G (no unit: MiB; default 1G)\n"
	    "  --node N          first-touch the RAM on node N (pinned to its CPUs)\n"
	    "  --mbind           with --node: place with set_mempolicy instead of CPU affinity\n"
	    "  --workload W      the access pattern (default private)\n"
	    "  --cells K         with --workload cells: K cells (required)\n"
	    "  --phase S         phased/adverse: seconds per phase (default 60 / 10)\n"
	    "  --cold PCT        the last PCT %% of RAM is touched once, never again (default 0)\n"
	    "  --pin             pin vCPU v to allowed CPU v mod count (default floating)\n"
	    "  --duration S      stop after S seconds (default: at SIGTERM or SIGINT)\n"
	    "  --report S        a progress line per vCPU and a total every S seconds\n"
	    "  --seed N          seed of the access streams (default 1)\n"
	    "  --hugepages       madvise(MADV_HUGEPAGE) on the RAM (default)\n"
	    "  --no-hugepages    leave the RAM to the system's THP setting\n"
	    "  -h, --help        this text\n"
	    "  -V, --version     the version\n");
}

/* ---- start-up: options, checks, re-executing as QEMU ---------------------------------------- */

/* --node must name a node; one without CPUs can only be reached with --mbind. */
static int
load_check_node(const struct load_opts *o)
{
	cpu_set_t set;
	int ret;

	if (o->node < 0)
		return 0;
	if ((ret = load_node_cpus("/", o->node, &set)) != 0) {
		load_warnx("--node %d: no such node (/sys/devices/system/node/node%d/cpulist: %s)",
		           o->node, o->node, strerror(-ret));
		return ret;
	}
	if (CPU_COUNT(&set) == 0 && !o->mbind) {
		load_warnx("--node %d has no CPUs (a memory-only node): add --mbind", o->node);
		return -EINVAL;
	}
	return 0;
}

/* exec ourselves as LOAD_QEMU_ARGV0; returns only if that failed. */
static void
load_reexec(const struct load_opts *o, int argc, char **argv)
{
	char name_arg[sizeof("guest=") + LOAD_NAME_MAX + sizeof(LOAD_QEMU_NAME_SUFFIX)];
	struct load_qemu_args qa;
	char **nargv = NULL;

	if (load_qemu_args_build(o, &qa) != 0 ||
	    (nargv = calloc((size_t)argc + 3 + (size_t)qa.argc, sizeof(*nargv))) == NULL ||
	    load_reexec_argv_with(argc, argv, o->name, name_arg, sizeof(name_arg), qa.argv, qa.argc,
	                          nargv) != 0) {
		load_warnx("cannot build the %s command line", LOAD_QEMU_ARGV0);
		goto out;
	}
	fflush(stdout);
	fflush(stderr);
	execv("/proc/self/exe", nargv);
	load_warnx("cannot re-execute as %s (/proc/self/exe: %s); vnumad will not see a VM",
	           LOAD_QEMU_ARGV0, strerror(errno));
out:
	load_qemu_args_free(&qa);
	free(nargv);
}

/* Parse and check; re-exec when needed.  An exit status, or -1 to go on. */
static int
load_start(struct load_opts *o, int argc, char **argv)
{
	char err[256];

	if (load_opts_parse(o, argc, argv, err, sizeof(err)) != 0) {
		load_warnx("%s", err);
		fprintf(stderr, "Try 'vnuma-load --help'.\n");
		return LOAD_EXIT_USAGE;
	}
	if (o->help) {
		load_usage(stdout);
		return LOAD_EXIT_OK;
	}
	if (o->version) {
		printf("vnuma-load %s\n", VNUMA_LOAD_VERSION);
		return LOAD_EXIT_OK;
	}
	if ((uint64_t)(size_t)o->memory_bytes != o->memory_bytes) {
		load_warnx("--memory: too large for this machine's address space");
		return LOAD_EXIT_USAGE;
	}
	if (load_check_node(o) != 0)
		return LOAD_EXIT_USAGE;
	if (!load_is_qemu_argv0(argv[0]))
		load_reexec(o, argc, argv);
	return -1;
}

/* ---- the guest RAM ------------------------------------------------------------------------------
 */

/* The parts' line ranges: all of RAM, or one per cell. */
static void
load_ram_layout(struct load_run *run)
{
	const struct load_pattern *p = &run->pattern;

	for (int i = 0; i < run->nr_parts; i++) {
		struct load_region r = {0, p->nr_lines};

		if (p->workload == LOAD_WL_CELLS)
			load_pattern_cell_range(p, i, &r);
		run->parts[i].first_line = r.first_line;
		run->parts[i].nr_lines = r.nr_lines;
	}
}

/*
 * Map part i as QEMU maps a RAM block (qemu_ram_mmap): reserve its size and LOAD_RAM_ALIGN
 * more, inaccessible, wherever the kernel puts it; map the part read-write at the first
 * aligned address inside; give back the rest but one guard page after the part.  0 or -ENOMEM.
 */
static int
load_ram_part_map(struct load_run *run, int i)
{
	struct load_ram_part *part = &run->parts[i];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = ((size_t)part->nr_lines * LOAD_LINE_BYTES + page - 1) / page * page;
	size_t total = len + LOAD_RAM_ALIGN, off;
	char *p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		load_warnx("mmap of %zu bytes of guest RAM (cell %d): %s", total, i,
		           strerror(errno));
		return -ENOMEM;
	}
	off = (LOAD_RAM_ALIGN - (uintptr_t)p % LOAD_RAM_ALIGN) % LOAD_RAM_ALIGN;
	if (mmap(p + off, len, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED) {
		load_warnx("mmap of %zu bytes of guest RAM (cell %d): %s", len, i, strerror(errno));
		munmap(p, total);
		return -ENOMEM;
	}
	if (off > 0)
		munmap(p, off);
	if (total - off > len + page)
		munmap(p + off + len + page, total - off - len - page);
	part->base = p + off;
	part->map_len = len + page;
	if (run->opts.hugepages && madvise(part->base, len, MADV_HUGEPAGE) != 0 && i == 0)
		load_warnx("madvise(MADV_HUGEPAGE): %s; going on with the system's default",
		           strerror(errno));
	return 0;
}

/*
 * The guest RAM: one anonymous, unreserved mapping per part (per cell for --workload cells),
 * mapped one after the other in guest-physical order, as QEMU creates one memory backend per
 * cell in command-line order: the kernel hands them out top-down, so a later part lies below
 * the earlier ones, as in QEMU, and vnumad finds them as it finds QEMU's (ram_layout.h).
 */
static int
load_ram_map(struct load_run *run)
{
	run->nr_parts = run->pattern.workload == LOAD_WL_CELLS ? run->pattern.cells : 1;
	if ((run->parts = calloc((size_t)run->nr_parts, sizeof(*run->parts))) == NULL)
		return -ENOMEM;
	load_ram_layout(run);
	for (int i = 0; i < run->nr_parts; i++)
		if (load_ram_part_map(run, i) != 0)
			return -ENOMEM;
	return 0;
}

/* The address of guest RAM line `line`: in the last part starting at or before it. */
static inline char *
load_line_addr(const struct load_run *run, uint64_t line)
{
	int lo = 0, hi = run->nr_parts - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (run->parts[mid].first_line <= line)
			lo = mid;
		else
			hi = mid - 1;
	}
	return run->parts[lo].base + (line - run->parts[lo].first_line) * LOAD_LINE_BYTES;
}

/* Make the main thread allocate on --node: CPU affinity (default) or memory policy. */
static int
load_touch_place(const struct load_opts *o, cpu_set_t *saved)
{
	cpu_set_t node_cpus;
	int ret;

	if (o->mbind) {
		if ((ret = load_mempolicy_prefer(o->node)) != 0)
			load_warnx("set_mempolicy(MPOL_PREFERRED, %d): %s", o->node,
			           strerror(-ret));
		return ret;
	}
	if (sched_getaffinity(0, sizeof(*saved), saved) != 0 ||
	    (ret = load_node_cpus("/", o->node, &node_cpus)) != 0 ||
	    sched_setaffinity(0, sizeof(node_cpus), &node_cpus) != 0) {
		load_warnx("cannot run on the CPUs of node %d (outside this process's cpuset?)",
		           o->node);
		return -EINVAL;
	}
	return 0;
}

/* Zero the RAM from one thread, as a guest kernel does at boot. */
static int
load_ram_touch(struct load_run *run)
{
	const struct load_opts *o = &run->opts;
	cpu_set_t saved;
	double t0_s = load_now_s();
	int ret;

	if (o->node >= 0 && (ret = load_touch_place(o, &saved)) != 0)
		return ret;
	for (int i = 0; i < run->nr_parts && !run->stopped_early; i++) {
		size_t len = (size_t)run->parts[i].nr_lines * LOAD_LINE_BYTES;

		for (size_t off = 0; off < len; off += LOAD_TOUCH_CHUNK) {
			memset(run->parts[i].base + off, 0,
			       len - off < LOAD_TOUCH_CHUNK ? len - off : LOAD_TOUCH_CHUNK);
			if (load_signal_wait(&run->sigs, 0)) {
				run->stopped_early = true;
				break;
			}
		}
	}
	run->touch_s = load_now_s() - t0_s;
	if (o->node >= 0 && o->mbind)
		load_mempolicy_default();
	else if (o->node >= 0)
		sched_setaffinity(0, sizeof(saved), &saved);
	return 0;
}

/* ---- the vCPUs ----------------------------------------------------------------------------------
 */

static void
load_vcpu_setup(struct load_vcpu *vc)
{
	char name[16];
	cpu_set_t set;

	snprintf(name, sizeof(name), "CPU %d/KVM", vc->idx);
	pthread_setname_np(pthread_self(), name);
	if (vc->pin_cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(vc->pin_cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		load_warnx("vCPU %d: cannot pin to CPU %d: %s", vc->idx, vc->pin_cpu,
		           strerror(errno));
}

/* Wait until the main thread opens the gate; false if the run was called off. */
static bool
load_vcpu_wait_gate(struct load_run *run)
{
	pthread_mutex_lock(&run->gate_lock);
	while (!run->gate_open)
		pthread_cond_wait(&run->gate_cond, &run->gate_lock);
	pthread_mutex_unlock(&run->gate_lock);
	return !atomic_load(&run->stop);
}

/* LOAD_BATCH accesses: read a line's first word and write it back incremented. */
static uint64_t
load_vcpu_batch(const struct load_run *run, const struct load_region *home, struct load_rng *rng)
{
	uint64_t hot_lines = run->pattern.hot_lines;

	for (int i = 0; i < LOAD_BATCH; i++) {
		uint64_t line = load_pattern_pick(home, hot_lines, rng);
		uint64_t *word = (uint64_t *)(void *)load_line_addr(run, line);

		/* Relaxed atomics: plain loads and stores, but no data race between vCPUs. */
		__atomic_store_n(word, __atomic_load_n(word, __ATOMIC_RELAXED) + 1,
		                 __ATOMIC_RELAXED);
	}
	return LOAD_BATCH;
}

/* idle: after LOAD_IDLE_BUSY_MS of work, sleep out the rest of the period; true if it slept. */
static bool
load_vcpu_rest(double *busy_from_s, double now_s)
{
	double wake_s = *busy_from_s + LOAD_IDLE_PERIOD_MS / 1000.0;
	struct timespec until;

	if (now_s - *busy_from_s < LOAD_IDLE_BUSY_MS / 1000.0)
		return false;
	if (wake_s > now_s) {
		until = load_timespec(wake_s);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	*busy_from_s = wake_s > now_s ? wake_s : now_s;
	return true;
}

static void
load_vcpu_where(struct load_vcpu *vc)
{
	unsigned int cpu, node;

	if (getcpu(&cpu, &node) != 0)
		return;
	atomic_store_explicit(&vc->cpu, (int)cpu, memory_order_relaxed);
	atomic_store_explicit(&vc->node, (int)node, memory_order_relaxed);
}

static void *
load_vcpu_main(void *arg)
{
	struct load_vcpu *vc = arg;
	struct load_run *run = vc->run;
	const struct load_pattern *p = &run->pattern;
	struct load_region home = {0, p->hot_lines};
	uint64_t phase = UINT64_MAX, done = 0;
	struct load_rng rng;
	double busy_from_s;

	load_vcpu_setup(vc);
	load_rng_seed(&rng, p->seed, (uint64_t)vc->idx);
	if (!load_vcpu_wait_gate(run))
		return NULL;
	busy_from_s = run->start_s;
	while (!atomic_load_explicit(&run->stop, memory_order_relaxed)) {
		double now_s = load_now_s();
		uint64_t ph = load_pattern_phase(p, now_s - run->start_s);

		if (ph != phase) {
			phase = ph;
			load_pattern_slice_range(
			    p, load_pattern_home(p, vc->idx, phase, vc->scratch), &home);
		}
		if (p->workload == LOAD_WL_IDLE && load_vcpu_rest(&busy_from_s, now_s))
			continue;
		done += load_vcpu_batch(run, &home, &rng);
		atomic_store_explicit(&vc->accesses, done, memory_order_relaxed);
		load_vcpu_where(vc);
	}
	return NULL;
}

static void
load_gate_open(struct load_run *run)
{
	pthread_mutex_lock(&run->gate_lock);
	run->gate_open = true;
	pthread_cond_broadcast(&run->gate_cond);
	pthread_mutex_unlock(&run->gate_lock);
}

/* Fill in the vCPUs (pinned round-robin over the allowed CPUs with --pin). */
static int
load_vcpus_alloc(struct load_run *run)
{
	int n = run->opts.vcpus, nr_cpus = 0, cpus[CPU_SETSIZE];
	size_t size = (size_t)n * sizeof(*run->vcpus);

	if (run->opts.pin && (nr_cpus = load_allowed_cpus(cpus, CPU_SETSIZE)) <= 0) {
		load_warnx("--pin: cannot read the allowed CPUs");
		return -EINVAL;
	}
	if ((run->vcpus = aligned_alloc(LOAD_LINE_BYTES, size)) == NULL)
		return -ENOMEM;
	memset(run->vcpus, 0, size);
	for (int v = 0; v < n; v++) {
		struct load_vcpu *vc = &run->vcpus[v];

		vc->run = run;
		vc->idx = v;
		vc->pin_cpu = nr_cpus > 0 ? cpus[v % nr_cpus] : -1;
		atomic_init(&vc->cpu, -1);
		atomic_init(&vc->node, -1);
		if ((vc->scratch = calloc((size_t)n, sizeof(int))) == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* Create every vCPU thread, then start them together. */
static int
load_vcpus_start(struct load_run *run)
{
	int ret = load_vcpus_alloc(run);

	for (int v = 0; ret == 0 && v < run->opts.vcpus; v++) {
		struct load_vcpu *vc = &run->vcpus[v];

		if ((ret = -pthread_create(&vc->thread, NULL, load_vcpu_main, vc)) != 0)
			load_warnx("cannot start vCPU %d: %s", v, strerror(-ret));
		vc->created = ret == 0;
	}
	if (ret != 0)
		atomic_store(&run->stop, true);
	run->start_s = load_now_s();
	load_gate_open(run);
	return ret;
}

static void
load_vcpus_stop(struct load_run *run)
{
	atomic_store(&run->stop, true);
	load_gate_open(run);
	for (int v = 0; run->vcpus != NULL && v < run->opts.vcpus; v++)
		if (run->vcpus[v].created)
			pthread_join(run->vcpus[v].thread, NULL);
}

/* ---- output
 * --------------------------------------------------------------------------------------- */

static void
load_print_header(const struct load_run *run)
{
	const struct load_opts *o = &run->opts;

	printf("# vnuma-load %s name=%s pid=%ld vcpus=%d memory_mib=%.*f workload=%s",
	       VNUMA_LOAD_VERSION, o->name, (long)getpid(), o->vcpus,
	       o->memory_bytes % (1 << 20) == 0 ? 0 : 3, (double)o->memory_bytes / (1 << 20),
	       load_workload_name(o->workload));
	if (o->workload == LOAD_WL_CELLS)
		printf(" cells=%d", o->cells);
	if (run->pattern.phase_s > 0)
		printf(" phase_s=%g", run->pattern.phase_s);
	if (o->node >= 0)
		printf(" node=%d placement=%s", o->node, o->mbind ? "mempolicy" : "affinity");
	printf(" pin=%s hugepages=%s seed=%" PRIu64 "\n", o->pin ? "yes" : "no",
	       o->hugepages ? "yes" : "no", o->seed);
}

/* One line per vCPU and a total: accesses per second since the last report. */
static void
load_report(struct load_run *run, double now_s, double *last_s)
{
	double dt_s = now_s - *last_s, t_s = now_s - run->start_s;
	uint64_t total = 0;

	if (dt_s <= 0)
		return;
	for (int v = 0; v < run->opts.vcpus; v++) {
		struct load_vcpu *vc = &run->vcpus[v];
		uint64_t acc = atomic_load_explicit(&vc->accesses, memory_order_relaxed);

		total += acc - vc->reported;
		printf("t=%.1f vcpu=%d acc_s=%.0f cpu=%d node=%d\n", t_s, v,
		       (double)(acc - vc->reported) / dt_s, atomic_load(&vc->cpu),
		       atomic_load(&vc->node));
		vc->reported = acc;
	}
	printf("t=%.1f vcpu=total acc_s=%.0f\n", t_s, (double)total / dt_s);
	*last_s = now_s;
}

/*
 * Where RAM parts [first, first + nr) lie, as "node:percent,...", or "-" when the kernel
 * cannot tell (LOAD_MEM_SAMPLES pages sampled in each part).
 */
static void
load_format_mem_nodes(const struct load_run *run, int first, int nr, char *buf, size_t len)
{
	uint64_t count[LOAD_SUMMARY_NODES];
	int sampled = 0, used = 0;

	memset(count, 0, sizeof(count));
	for (int i = first; i < first + nr; i++) {
		int got = load_mem_where(run->parts[i].base,
		                         (size_t)run->parts[i].nr_lines * LOAD_LINE_BYTES, count,
		                         LOAD_SUMMARY_NODES);

		sampled += got > 0 ? got : 0;
	}
	snprintf(buf, len, "-");
	for (int n = 0; sampled > 0 && n < LOAD_SUMMARY_NODES; n++) {
		if (count[n] == 0 || (size_t)used >= len)
			continue;
		used += snprintf(buf + used, len - (size_t)used, "%s%d:%.1f", used > 0 ? "," : "",
		                 n, 100.0 * (double)count[n] / sampled);
	}
}

/* --workload cells: one line per cell, with its vCPUs, its size and where its RAM lies. */
static void
load_print_cells(const struct load_run *run)
{
	char nodes[512];

	for (int c = 0; run->pattern.workload == LOAD_WL_CELLS && c < run->nr_parts; c++) {
		int first, nr;

		load_pattern_cell_vcpus(&run->pattern, c, &first, &nr);
		load_format_mem_nodes(run, c, 1, nodes, sizeof(nodes));
		printf("summary cell=%d vcpus=%d-%d memory_mib=%.*f mem_nodes=%s\n", c, first,
		       first + nr - 1, run->parts[c].nr_lines % LOAD_MIB_LINES == 0 ? 0 : 3,
		       (double)run->parts[c].nr_lines / LOAD_MIB_LINES, nodes);
	}
}

static void
load_print_summary(struct load_run *run, double end_s)
{
	double el_s = run->vcpus != NULL ? end_s - run->start_s : 0;
	uint64_t total = 0;
	char nodes[512];

	for (int v = 0; run->vcpus != NULL && v < run->opts.vcpus; v++) {
		struct load_vcpu *vc = &run->vcpus[v];
		uint64_t acc = atomic_load(&vc->accesses);

		total += acc;
		printf("summary vcpu=%d accesses=%" PRIu64 " acc_s=%.0f cpu=%d node=%d\n", v, acc,
		       el_s > 0 ? (double)acc / el_s : 0.0, atomic_load(&vc->cpu),
		       atomic_load(&vc->node));
	}
	load_print_cells(run);
	load_format_mem_nodes(run, 0, run->nr_parts, nodes, sizeof(nodes));
	printf("summary vcpu=total accesses=%" PRIu64 " acc_s=%.0f elapsed_s=%.1f touch_s=%.2f "
	       "touch_nodes=%s mem_nodes=%s\n",
	       total, el_s > 0 ? (double)total / el_s : 0.0, el_s, run->touch_s, run->touch_nodes,
	       nodes);
}

/* ---- the main thread ----------------------------------------------------------------------------
 */

/* Report every --report seconds until --duration or a signal; returns the end time. */
static double
load_loop(struct load_run *run)
{
	const struct load_opts *o = &run->opts;
	double last_s = run->start_s, next_s = run->start_s + o->report_s;
	double end_s = run->start_s + o->duration_s;

	for (;;) {
		double now_s = load_now_s(), wake_s = now_s + LOAD_IDLE_WAIT_S;

		if (o->report_s > 0 && now_s >= next_s) {
			load_report(run, now_s, &last_s);
			next_s += o->report_s;
			if (next_s <= now_s) /* we were stopped for a while: no burst of lines */
				next_s = now_s + o->report_s;
		}
		if (o->duration_s > 0 && now_s >= end_s)
			return now_s;
		if (o->report_s > 0 && next_s < wake_s)
			wake_s = next_s;
		if (o->duration_s > 0 && end_s < wake_s)
			wake_s = end_s;
		if (load_signal_wait(&run->sigs, wake_s - now_s))
			return load_now_s();
	}
}

static void
load_run_free(struct load_run *run)
{
	for (int v = 0; run->vcpus != NULL && v < run->opts.vcpus; v++)
		free(run->vcpus[v].scratch);
	free(run->vcpus);
	for (int i = 0; run->parts != NULL && i < run->nr_parts; i++)
		if (run->parts[i].map_len > 0)
			munmap(run->parts[i].base, run->parts[i].map_len);
	free(run->parts);
	pthread_cond_destroy(&run->gate_cond);
	pthread_mutex_destroy(&run->gate_lock);
}

int
main(int argc, char **argv)
{
	struct load_run run;
	int rc = LOAD_EXIT_OK;
	double end_s;

	memset(&run, 0, sizeof(run));
	sigemptyset(&run.sigs);
	sigaddset(&run.sigs, SIGTERM);
	sigaddset(&run.sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &run.sigs, NULL);
	if ((rc = load_start(&run.opts, argc, argv)) >= 0)
		return rc;
	rc = LOAD_EXIT_OK;
	prctl(PR_SET_NAME, LOAD_QEMU_COMM, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	load_pattern_init(&run.pattern, &run.opts);
	pthread_mutex_init(&run.gate_lock, NULL);
	pthread_cond_init(&run.gate_cond, NULL);
	if (load_ram_map(&run) != 0) {
		rc = LOAD_EXIT_FAIL;
		goto out;
	}
	load_print_header(&run);
	if (load_ram_touch(&run) != 0) {
		rc = LOAD_EXIT_FAIL;
		goto out;
	}
	load_format_mem_nodes(&run, 0, run.nr_parts, run.touch_nodes, sizeof(run.touch_nodes));
	if (!run.stopped_early && load_vcpus_start(&run) != 0)
		rc = LOAD_EXIT_FAIL;
	end_s = rc == LOAD_EXIT_OK && !run.stopped_early ? load_loop(&run) : load_now_s();
	load_vcpus_stop(&run);
	load_print_summary(&run, end_s);
out:
	load_run_free(&run);
	return rc;
}

/*
 * bench_engine.c - how long vnumad's decision step takes, and how much memory its state needs.
 *
 * Builds a synthetic but plausible host snapshot (nodes with CPUs and memory, VMs of mixed
 * sizes already running: vCPUs spread over nodes, per-node resident memory and hinting-fault
 * levels, a few advisory/manual VMs, some with guest cells, cross-VM groups or node limits),
 * then drives vnumad_balancer_ops as a host would: the first decide() (which places every VM)
 * is reported on its own, a few warm-up rounds follow, then the steady-state rounds are timed.
 * Between rounds the plan is applied to the snapshot (pins, memory moves), the clock advances
 * by one second and the fault levels drift a little toward where the memory now is.
 *
 * Only decide() is timed.  Heap growth around create + the first decide (glibc mallinfo2),
 * less the plan's own storage, is reported as the engine's memory per VM and per vCPU.
 * A benchmark reports numbers and never fails on time; it exits 1 only when decide() returns
 * an error or a plan names a VM, vCPU or node that does not exist.
 *
 * Usage: bench_engine [--vms N --vcpus-per-vm K --nodes M] [--rounds R] [--seed S] [--json]
 * Without a size it runs the two target sizes of the issue (64/512/4 and 2048/16384/16).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "policy/model.h"

/* Steady-state rounds timed per size unless --rounds says otherwise. */
#define BENCH_ROUNDS_DEF 200
/* Untimed rounds between the first decide and the timed ones. */
#define BENCH_WARMUP_ROUNDS 3
/* Default PRNG seed: runs are reproducible; --seed changes it. */
#define BENCH_SEED_DEF 1
/* VM ids look like QEMU pids: BENCH_VM_ID_BASE + i * BENCH_VM_ID_STRIDE. */
#define BENCH_VM_ID_BASE   4000
#define BENCH_VM_ID_STRIDE 7
/* Host memory kept out of the VMs' reach per node (kernel, QEMU overhead), MiB. */
#define BENCH_HOST_RESERVED_MIB 4096
/* Memory per node for a custom size, MiB per CPU (the 4-node target: 512 GiB / 128 CPUs). */
#define BENCH_CUSTOM_MIB_PER_CPU 4096
/* Share of VMs whose vCPUs and memory are spread over all nodes, per cent. */
#define BENCH_SPREAD_PCT 15
/* Share of the other VMs' vCPUs that run away from their home node, per cent. */
#define BENCH_AWAY_PCT 15
/* Per-vCPU hinting-fault level at full CPU use, pages: thousands to tens of thousands. */
#define BENCH_FAULT_MIN_PAGES 2000.0
#define BENCH_FAULT_MAX_PAGES 40000.0
/* Each round a fault level keeps this share and takes the rest from where memory now is. */
#define BENCH_FAULT_KEEP 0.9
/* Each round a vCPU's total fault level changes by up to this factor, either way. */
#define BENCH_FAULT_JITTER 0.03

struct bench_size {
	int nr_vms;
	int vcpus_per_vm; /* mean; VMs come in mixed sizes around it */
	int nr_nodes;
	int cpus_per_node;
	uint64_t node_mem_mib;
	double target_ms; /* the target for one decide, for display; 0 = none */
};

/* Plan entries by kind: pins, moves, binds, samplings. */
#define BENCH_PLAN_KINDS 4
static const char *const bench_plan_kind[BENCH_PLAN_KINDS] = {"pins", "moves", "binds",
                                                              "samplings"};

struct bench_result {
	struct bench_size size;
	int nr_vcpus;
	int rounds;
	double first_wall_ms, first_cpu_ms;
	size_t first_plan[BENCH_PLAN_KINDS];
	double mean_ms, median_ms, p99_ms, max_ms, cpu_mean_ms, cpu_p99_ms;
	double plan_mean[BENCH_PLAN_KINDS]; /* per steady round */
	size_t plan_max[BENCH_PLAN_KINDS];
	long long engine_first_bytes; /* after create + first decide */
	long long engine_last_bytes;  /* after the last round */
	long long snapshot_bytes;
};

/* ---- clocks and heap ------------------------------------------------------------------ */

static double
bench_clock_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sanitizers replace malloc, and then mallinfo2 says nothing about the heap. */
#if defined(__SANITIZE_ADDRESS__)
#define BENCH_HEAP_KNOWN 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BENCH_HEAP_KNOWN 0
#endif
#endif
#if !defined(BENCH_HEAP_KNOWN) && defined(__GLIBC__) &&                                            \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#define BENCH_HEAP_KNOWN 1
#endif
#if !defined(BENCH_HEAP_KNOWN)
#define BENCH_HEAP_KNOWN 0
#endif

/* Bytes currently allocated from the heap (arena and mmap'd chunks); 0 where unknown. */
static long long
bench_heap_bytes(void)
{
#if BENCH_HEAP_KNOWN
	struct mallinfo2 mi = mallinfo2();

	return (long long)(mi.uordblks + mi.hblkhd);
#else
	return 0;
#endif
}

static long long
bench_plan_bytes(const struct plan *plan)
{
	return (long long)(plan->cap_pins * sizeof(*plan->pins) +
	                   plan->cap_moves * sizeof(*plan->moves) +
	                   plan->cap_binds * sizeof(*plan->binds) +
	                   plan->cap_samplings * sizeof(*plan->samplings));
}

/* ---- building the host ------------------------------------------------------------ */

static uint64_t
bench_all_nodes(int nr_nodes)
{
	return nr_nodes >= 64 ? NODEMASK_ALL : nodemask_of(nr_nodes) - 1;
}

/* Mixed VM sizes in pairs whose sum is 2k, so the total is exactly nr_vms * k. */
static int *
bench_vm_sizes(struct util_rng *rng, int nr_vms, int k)
{
	int *sz = xcalloc((size_t)nr_vms + 1, sizeof(int));

	for (int i = 0; i < nr_vms; i++)
		sz[i] = k;
	for (int i = 0; i + 1 < nr_vms; i += 2) {
		uint32_t r = util_rng_below(rng, 10);
		int small = k;

		if (r >= 8 && k >= 4)
			small = k / 4; /* 20 %: a small VM next to a big one */
		else if (r >= 5 && k >= 2)
			small = k / 2; /* 30 % */
		sz[i] = small;
		sz[i + 1] = 2 * k - small;
	}
	return sz;
}

static void
bench_nodes_fill(struct snapshot *snap, const struct bench_size *bs)
{
	int nn = bs->nr_nodes;
	bool sockets = nn > 4 && nn % 4 == 0; /* four nodes per socket, as on NPS4 hosts */

	for (int n = 0; n < nn; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = bs->cpus_per_node;
		snap->nodes[n].mem_total_mib = bs->node_mem_mib;
		snap->nodes[n].mem_free_mib = bs->node_mem_mib - BENCH_HOST_RESERVED_MIB;
		for (int m = 0; m < nn; m++) {
			int d = sockets ? (n / 4 == m / 4 ? 12 : 32) : 21;

			snap->distance[n * nn + m] = n == m ? 10 : d;
		}
	}
	for (int c = 0; c < snap->nr_cpus; c++)
		snap->cpu_node[c] = c / bs->cpus_per_node;
}

/* Put up to mib of vm's memory on node n; what does not fit goes to the node with most free. */
static void
bench_mem_put(struct snapshot *snap, struct snap_vm *vm, int n, uint64_t mib)
{
	while (mib > 0) {
		uint64_t take =
		    mib < snap->nodes[n].mem_free_mib ? mib : snap->nodes[n].mem_free_mib;
		int best = 0;

		vm->resident_mib[n] += take;
		snap->nodes[n].mem_free_mib -= take;
		mib -= take;
		for (int m = 1; m < snap->nr_nodes; m++)
			if (snap->nodes[m].mem_free_mib > snap->nodes[best].mem_free_mib)
				best = m;
		if (mib > 0 && snap->nodes[best].mem_free_mib == 0)
			return; /* host full: the rest is not resident */
		n = best;
	}
}

static int
bench_random_allowed(struct util_rng *rng, const struct snapshot *snap, uint64_t allowed)
{
	int n;

	do
		n = (int)util_rng_below(rng, (uint32_t)snap->nr_nodes);
	while (!nodemask_test(allowed, n));
	return n;
}

/* Of two random allowed nodes, the one with more free memory (keeps nodes balanced). */
static int
bench_home_pick(struct util_rng *rng, const struct snapshot *snap, uint64_t allowed)
{
	int a = bench_random_allowed(rng, snap, allowed);
	int b = bench_random_allowed(rng, snap, allowed);

	return snap->nodes[b].mem_free_mib > snap->nodes[a].mem_free_mib ? b : a;
}

/* Mode, node limits, priority, rate and cross-VM group: mostly defaults, a few not. */
static void
bench_vm_policy(struct util_rng *rng, struct snap_vm *vm, int nr_vms, int nr_nodes)
{
	uint32_t r = util_rng_below(rng, 100);
	uint64_t all = bench_all_nodes(nr_nodes), low = bench_all_nodes(nr_nodes / 2);

	vm_policy_init_default(&vm->policy);
	if (r < 5)
		vm->policy.mode = VM_POLICY_MODE_ADVISORY;
	else if (r < 8)
		vm->policy.mode = VM_POLICY_MODE_MANUAL;
	r = util_rng_below(rng, 100);
	if (r < 3 && nr_nodes >= 2) /* confined to one half of the host */
		vm->policy.nodes = util_rng_below(rng, 2) ? low : all & ~low;
	else if (r < 5)
		vm->policy.rate_kib_s = 64 * 1024;
	else if (r < 7)
		vm->policy.migrate = false;
	r = util_rng_below(rng, 100);
	if (r < 10)
		vm->policy.priority = 80;
	else if (r < 20)
		vm->policy.priority = 20;
	if (util_rng_below(rng, 100) < 5) /* small tenants of a few VMs each */
		snprintf(vm->policy.group, sizeof(vm->policy.group), "tenant%u",
		         util_rng_below(rng, (uint32_t)(nr_vms / 40 + 1)));
}

/* One VM in ten (of 4+ vCPUs) has two guest cells; half of those are placed by cells. */
static void
bench_vm_cells(struct util_rng *rng, struct snap_vm *vm)
{
	if (vm->nr_vcpus < 4 || util_rng_below(rng, 10) != 0)
		return;
	snapshot_vm_set_cells(vm, 2);
	vm->cells[0].mem_start_mib = 0;
	vm->cells[0].mem_mib = vm->mem_mib / 2;
	vm->cells[1].mem_start_mib = vm->mem_mib / 2;
	vm->cells[1].mem_mib = vm->mem_mib - vm->mem_mib / 2;
	for (int v = 0; v < vm->nr_vcpus; v++)
		vm->vcpu_cell[v] = v < vm->nr_vcpus / 2 ? 0 : 1;
	if (util_rng_below(rng, 2))
		vm->policy.placement = VM_POLICY_PLACEMENT_CELLS;
}

/* Guest RAM of 1/4, 1/2 or 1 times the host's memory per CPU, per vCPU, whole GiB. */
static uint64_t
bench_vm_mem_mib(struct util_rng *rng, const struct bench_size *bs, int nr_vcpus)
{
	double per_cpu = (double)bs->node_mem_mib / bs->cpus_per_node;
	uint32_t r = util_rng_below(rng, 10);
	double f = r < 3 ? 0.25 : r < 7 ? 0.5 : 1.0;
	uint64_t mib = (uint64_t)(per_cpu * f * nr_vcpus) / 1024 * 1024;

	return mib < 1024 ? 1024 : mib;
}

/* A CPU of node n for the next vCPU placed there (round robin over its CPUs). */
static int
bench_cpu_on(const struct snapshot *snap, int *next_cpu, int n)
{
	int cpus = snap->nodes[n].nr_cpus;

	return n * cpus + next_cpu[n]++ % cpus;
}

/*
 * Where the VM runs and what it has touched: most VMs mostly on one home node (most vCPUs,
 * 85-98 % of their memory), some spread evenly; manual VMs pinned to their home.
 */
static void
bench_vm_place(struct util_rng *rng, struct snapshot *snap, struct snap_vm *vm, int *next_cpu)
{
	uint64_t allowed = vm->policy.nodes & bench_all_nodes(snap->nr_nodes);
	int home = bench_home_pick(rng, snap, allowed);
	bool spread = util_rng_below(rng, 100) < BENCH_SPREAD_PCT;
	bool manual = vm->policy.mode == VM_POLICY_MODE_MANUAL;
	uint64_t touched = (uint64_t)(vm->mem_mib * (0.6 + 0.4 * util_rng_double(rng)));
	uint64_t at_home = (uint64_t)(touched * (0.85 + 0.13 * util_rng_double(rng)));

	if (spread && !manual) {
		int w = nodemask_weight(allowed);

		for (int n = 0; n < snap->nr_nodes; n++)
			if (nodemask_test(allowed, n))
				bench_mem_put(snap, vm, n, touched / (uint64_t)w);
	} else {
		bench_mem_put(snap, vm, home, at_home);
		bench_mem_put(snap, vm, bench_random_allowed(rng, snap, allowed),
		              touched - at_home);
	}
	for (int v = 0; v < vm->nr_vcpus; v++) {
		struct snap_vcpu *sv = &vm->vcpus[v];
		bool away = spread || util_rng_below(rng, 100) < BENCH_AWAY_PCT;

		sv->node = away && !manual ? bench_random_allowed(rng, snap, allowed) : home;
		sv->cpu = bench_cpu_on(snap, next_cpu, sv->node);
		sv->allowed_nodes = manual ? nodemask_of(home) : NODEMASK_ALL;
		sv->cpu_use = 0.3 + 0.7 * util_rng_double(rng);
	}
}

static uint64_t *
bench_vcpu_faults(struct snapshot *snap, const struct snap_vm *vm, int v)
{
	size_t g = (size_t)(&vm->vcpus[v] - snap->vcpu_store);

	return &snap->fault_store[g * 2 * (size_t)snap->nr_nodes];
}

/* Share of the VM's resident memory on each node (even when nothing is resident). */
static void
bench_mem_share(const struct snapshot *snap, const struct snap_vm *vm, double *share)
{
	uint64_t sum = 0;

	for (int n = 0; n < snap->nr_nodes; n++)
		sum += vm->resident_mib[n];
	for (int n = 0; n < snap->nr_nodes; n++)
		share[n] = sum ? (double)vm->resident_mib[n] / (double)sum : 1.0 / snap->nr_nodes;
}

/* Fault levels follow the memory, with per-node noise; 10-40 % of them shared. */
static void
bench_vm_faults(struct util_rng *rng, struct snapshot *snap, const struct snap_vm *vm)
{
	double share[UTIL_MAX_NODES];
	int nn = snap->nr_nodes;

	bench_mem_share(snap, vm, share);
	for (int v = 0; v < vm->nr_vcpus; v++) {
		uint64_t *f = bench_vcpu_faults(snap, vm, v);
		double total =
		    vm->vcpus[v].cpu_use *
		    (BENCH_FAULT_MIN_PAGES +
		     (BENCH_FAULT_MAX_PAGES - BENCH_FAULT_MIN_PAGES) * util_rng_double(rng));
		double shared = 0.1 + 0.3 * util_rng_double(rng);

		for (int n = 0; n < nn; n++) {
			double pages = total * share[n] * (0.8 + 0.4 * util_rng_double(rng));

			f[n] = (uint64_t)(pages * (1 - shared));
			f[nn + n] = (uint64_t)(pages * shared);
		}
	}
}

static void
bench_size_fill(struct util_rng *rng, struct snapshot *snap, const struct bench_size *bs)
{
	int *next_cpu = xcalloc((size_t)bs->nr_nodes, sizeof(int));

	bench_nodes_fill(snap, bs);
	for (int i = 0; i < snap->nr_vms; i++) {
		struct snap_vm *vm = &snap->vms[i];

		vm->id = BENCH_VM_ID_BASE + i * BENCH_VM_ID_STRIDE;
		snprintf(vm->name, sizeof(vm->name), "vm%05d", i);
		vm->uptime_s = 60 + 7 * 86400 * util_rng_double(rng);
		vm->mem_mib = bench_vm_mem_mib(rng, bs, vm->nr_vcpus);
		vm->policy_ok = true;
		bench_vm_policy(rng, vm, snap->nr_vms, snap->nr_nodes);
		bench_vm_cells(rng, vm);
		bench_vm_place(rng, snap, vm, next_cpu);
		for (int v = 0; v < vm->nr_vcpus; v++)
			vm->vcpus[v].tid = 100000 + (int)(&vm->vcpus[v] - snap->vcpu_store);
		bench_vm_faults(rng, snap, vm);
	}
	free(next_cpu);
}

static struct snapshot *
bench_snapshot_build(const struct bench_size *bs, uint64_t seed)
{
	struct util_rng rng;
	struct snapshot *snap;
	int *sizes;

	util_rng_seed(&rng, seed, 1);
	sizes = bench_vm_sizes(&rng, bs->nr_vms, bs->vcpus_per_vm);
	snap = snapshot_new(bs->nr_nodes, bs->nr_nodes * bs->cpus_per_node, bs->nr_vms, sizes);
	free(sizes);
	snap->now_s = 1000.0;
	/* What `vnumad --host linux` has (host/linux/linux_host.c), as a real host's rounds. */
	snap->caps = HOST_CAP_PIN | HOST_CAP_MOVE_PAGES | HOST_CAP_KERNEL_BALANCING |
	             HOST_CAP_FAULTS_PER_PASS;
	bench_size_fill(&rng, snap, bs);
	return snap;
}

/* ---- checking and applying a plan -------------------------------------------------- */

/* Index of the VM with this id (ids ascend with the index), or -1. */
static int
bench_vm_index(const struct snapshot *snap, int id)
{
	int lo = 0, hi = snap->nr_vms - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (snap->vms[mid].id == id)
			return mid;
		if (snap->vms[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static bool
bench_node_ok(const struct snapshot *snap, int n)
{
	return n >= 0 && n < snap->nr_nodes;
}

static int
bench_check_pins(const struct snapshot *snap, const struct plan *plan)
{
	uint64_t valid = bench_all_nodes(snap->nr_nodes);

	for (size_t i = 0; i < plan->nr_pins; i++) {
		const struct plan_pin *p = &plan->pins[i];
		int idx = bench_vm_index(snap, p->vm_id);

		if (idx < 0 || p->vcpu < 0 || p->vcpu >= snap->vms[idx].nr_vcpus) {
			fprintf(stderr, "plan pin %zu: no VM %d vCPU %d\n", i, p->vm_id, p->vcpu);
			return -EINVAL;
		}
		if ((p->kind == PLAN_PIN_KERNEL_MOVE && !bench_node_ok(snap, p->to_node)) ||
		    (p->kind != PLAN_PIN_KERNEL_MOVE && (p->nodes & valid) == 0) ||
		    (p->kind == PLAN_PIN_FLIP &&
		     (p->flip_with < 0 || (size_t)p->flip_with >= plan->nr_pins))) {
			fprintf(stderr, "plan pin %zu: bad nodes or flip partner\n", i);
			return -EINVAL;
		}
	}
	return 0;
}

/* The sanity check: everything the plan names exists.  0 or -EINVAL (with a message). */
static int
bench_plan_check(const struct snapshot *snap, const struct plan *plan)
{
	for (size_t i = 0; i < plan->nr_moves; i++) {
		const struct plan_mem_move *m = &plan->moves[i];

		if (bench_vm_index(snap, m->vm_id) < 0 || !bench_node_ok(snap, m->from_node) ||
		    !bench_node_ok(snap, m->to_node) || m->from_node == m->to_node) {
			fprintf(stderr, "plan move %zu: VM %d, node %d -> %d\n", i, m->vm_id,
			        m->from_node, m->to_node);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < plan->nr_binds; i++)
		if (bench_vm_index(snap, plan->binds[i].vm_id) < 0) {
			fprintf(stderr, "plan bind %zu: no VM %d\n", i, plan->binds[i].vm_id);
			return -EINVAL;
		}
	for (size_t i = 0; i < plan->nr_samplings; i++)
		if (bench_vm_index(snap, plan->samplings[i].vm_id) < 0 ||
		    !(plan->samplings[i].scan_mib_s >= 0)) {
			fprintf(stderr, "plan sampling %zu: VM %d\n", i, plan->samplings[i].vm_id);
			return -EINVAL;
		}
	return bench_check_pins(snap, plan);
}

static void
bench_apply_pins(struct snapshot *snap, const struct plan *plan, int *next_cpu)
{
	uint64_t valid = bench_all_nodes(snap->nr_nodes);

	for (size_t i = 0; i < plan->nr_pins; i++) {
		const struct plan_pin *p = &plan->pins[i];
		struct snap_vcpu *sv = &snap->vms[bench_vm_index(snap, p->vm_id)].vcpus[p->vcpu];

		if (p->kind == PLAN_PIN_KERNEL_MOVE) {
			sv->node = p->to_node;
		} else {
			sv->allowed_nodes = p->nodes;
			if (!nodemask_test(p->nodes, sv->node))
				sv->node = nodemask_first(p->nodes & valid);
		}
		sv->cpu = bench_cpu_on(snap, next_cpu, sv->node);
	}
}

/* Memory moves complete at once, within what is resident and what the target has free. */
static void
bench_apply_moves(struct snapshot *snap, const struct plan *plan)
{
	for (int i = 0; i < snap->nr_vms; i++)
		snap->vms[i].mig_done_mib = 0;
	for (size_t i = 0; i < plan->nr_moves; i++) {
		const struct plan_mem_move *m = &plan->moves[i];
		struct snap_vm *vm = &snap->vms[bench_vm_index(snap, m->vm_id)];
		uint64_t mib = m->mib;

		if (mib > vm->resident_mib[m->from_node])
			mib = vm->resident_mib[m->from_node];
		if (mib > snap->nodes[m->to_node].mem_free_mib)
			mib = snap->nodes[m->to_node].mem_free_mib;
		vm->resident_mib[m->from_node] -= mib;
		vm->resident_mib[m->to_node] += mib;
		snap->nodes[m->from_node].mem_free_mib += mib;
		snap->nodes[m->to_node].mem_free_mib -= mib;
		vm->mig_done_mib += mib;
	}
}

/* Fault levels drift toward where the VM's memory now is, with a little jitter. */
static void
bench_faults_drift(struct util_rng *rng, struct snapshot *snap)
{
	int nn = snap->nr_nodes;

	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		double share[UTIL_MAX_NODES];

		bench_mem_share(snap, vm, share);
		for (int v = 0; v < vm->nr_vcpus; v++) {
			uint64_t *f = bench_vcpu_faults(snap, vm, v);

			for (int k = 0; k < 2; k++, f += nn) {
				double total = 0;
				double j = 1 + BENCH_FAULT_JITTER * (2 * util_rng_double(rng) - 1);

				for (int n = 0; n < nn; n++)
					total += (double)f[n];
				for (int n = 0; n < nn; n++)
					f[n] = (uint64_t)(j * (BENCH_FAULT_KEEP * (double)f[n] +
					                       (1 - BENCH_FAULT_KEEP) * total *
					                           share[n]));
			}
		}
	}
}

/* What a host does between two calls: act on the plan, let a second pass, sample again. */
static void
bench_host_advance(struct util_rng *rng, struct snapshot *snap, const struct plan *plan,
                   int *next_cpu)
{
	bench_apply_pins(snap, plan, next_cpu);
	bench_apply_moves(snap, plan);
	bench_faults_drift(rng, snap);
	snap->now_s += 1.0;
	for (int i = 0; i < snap->nr_vms; i++)
		snap->vms[i].uptime_s += 1.0;
}

/* ---- running one size -------------------------------------------------------------- */

static int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
bench_plan_count(const struct plan *plan, size_t *count)
{
	count[0] = plan->nr_pins;
	count[1] = plan->nr_moves;
	count[2] = plan->nr_binds;
	count[3] = plan->nr_samplings;
}

/* One decide(), timed; 0 or the error (decide's, or -EINVAL from the sanity check). */
static int
bench_decide(void *state, const struct snapshot *snap, struct plan *plan, double *wall_ms,
             double *cpu_ms)
{
	double w0, c0;
	int rc;

	plan_reset(plan);
	w0 = bench_clock_ms(CLOCK_MONOTONIC);
	c0 = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
	rc = vnumad_balancer_ops.decide(state, snap, plan);
	*cpu_ms = bench_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
	*wall_ms = bench_clock_ms(CLOCK_MONOTONIC) - w0;
	if (rc < 0) {
		fprintf(stderr, "decide: %s\n", strerror(-rc));
		return rc;
	}
	return bench_plan_check(snap, plan);
}

/* Mean, median, p99 (nearest rank) and max of the steady rounds; sorts wall and cpu. */
static void
bench_steady_stats(struct bench_result *res, double *wall, double *cpu)
{
	int r = res->rounds, p99 = (int)ceil(0.99 * r) - 1;

	for (int i = 0; i < r; i++) {
		res->mean_ms += wall[i] / r;
		res->cpu_mean_ms += cpu[i] / r;
	}
	qsort(wall, (size_t)r, sizeof(*wall), bench_cmp_double);
	qsort(cpu, (size_t)r, sizeof(*cpu), bench_cmp_double);
	res->median_ms = r % 2 ? wall[r / 2] : (wall[r / 2 - 1] + wall[r / 2]) / 2;
	res->p99_ms = wall[p99];
	res->cpu_p99_ms = cpu[p99];
	res->max_ms = wall[r - 1];
}

/* The untimed and timed rounds after the first decide. */
static int
bench_rounds(void *state, struct snapshot *snap, struct plan *plan, struct bench_result *res,
             uint64_t seed)
{
	double *wall = xcalloc((size_t)res->rounds, sizeof(double));
	double *cpu = xcalloc((size_t)res->rounds, sizeof(double));
	int *next_cpu = xcalloc((size_t)snap->nr_nodes, sizeof(int));
	struct util_rng rng;
	int rc = 0;

	util_rng_seed(&rng, seed, 2);
	for (int i = -BENCH_WARMUP_ROUNDS; i < res->rounds && rc == 0; i++) {
		size_t count[BENCH_PLAN_KINDS];
		double w, c;

		bench_host_advance(&rng, snap, plan, next_cpu);
		rc = bench_decide(state, snap, plan, &w, &c);
		if (i < 0)
			continue;
		wall[i] = w;
		cpu[i] = c;
		bench_plan_count(plan, count);
		for (int k = 0; k < BENCH_PLAN_KINDS; k++) {
			res->plan_mean[k] += (double)count[k] / res->rounds;
			if (count[k] > res->plan_max[k])
				res->plan_max[k] = count[k];
		}
	}
	if (rc == 0)
		bench_steady_stats(res, wall, cpu);
	free(wall);
	free(cpu);
	free(next_cpu);
	return rc;
}

static int
bench_run(const struct bench_size *bs, int rounds, uint64_t seed, struct bench_result *res)
{
	struct balancer_args args = {.seed = seed, .knowledge = NULL};
	long long heap0 = bench_heap_bytes(), heap1;
	struct snapshot *snap = bench_snapshot_build(bs, seed);
	const struct snap_vm *last = &snap->vms[snap->nr_vms - 1];
	struct plan plan;
	void *state;
	int rc;

	memset(res, 0, sizeof(*res));
	res->size = *bs;
	res->rounds = rounds;
	res->nr_vcpus = (int)(last->vcpus - snap->vcpu_store) + last->nr_vcpus;
	plan_init(&plan);
	heap1 = bench_heap_bytes();
	res->snapshot_bytes = heap1 - heap0;
	state = vnumad_balancer_ops.create(&args);
	rc = bench_decide(state, snap, &plan, &res->first_wall_ms, &res->first_cpu_ms);
	res->engine_first_bytes = bench_heap_bytes() - heap1 - bench_plan_bytes(&plan);
	bench_plan_count(&plan, res->first_plan);
	if (rc == 0)
		rc = bench_rounds(state, snap, &plan, res, seed);
	res->engine_last_bytes = bench_heap_bytes() - heap1 - bench_plan_bytes(&plan);
	vnumad_balancer_ops.destroy(state);
	plan_free(&plan);
	snapshot_free(snap);
	return rc;
}

/* ---- output ------------------------------------------------------------------------ */

static void
bench_print_one(const struct bench_result *r)
{
	const struct bench_size *s = &r->size;

	printf("%d VMs / %d vCPUs / %d nodes (%d CPUs, %" PRIu64 " GiB per node), "
	       "%d steady rounds after %d warm-up\n",
	       s->nr_vms, r->nr_vcpus, s->nr_nodes, s->cpus_per_node, s->node_mem_mib / 1024,
	       r->rounds, BENCH_WARMUP_ROUNDS);
	printf("  first decide   %.3f ms wall, %.3f ms CPU; plan:", r->first_wall_ms,
	       r->first_cpu_ms);
	for (int k = 0; k < BENCH_PLAN_KINDS; k++)
		printf(" %zu %s", r->first_plan[k], bench_plan_kind[k]);
	printf("\n  steady decide  mean %.3f  median %.3f  p99 %.3f  max %.3f ms wall; "
	       "CPU mean %.3f  p99 %.3f ms\n  steady plans   per round, mean (max):",
	       r->mean_ms, r->median_ms, r->p99_ms, r->max_ms, r->cpu_mean_ms, r->cpu_p99_ms);
	for (int k = 0; k < BENCH_PLAN_KINDS; k++)
		printf(" %s %.1f (%zu)", bench_plan_kind[k], r->plan_mean[k], r->plan_max[k]);
	if (!BENCH_HEAP_KNOWN) {
		printf("\n  engine memory  unknown (needs glibc's mallinfo2, no sanitizer)\n");
		return;
	}
	printf("\n  engine memory  after first decide %lld B (%lld B/VM, %lld B/vCPU); "
	       "after last round %lld B (%lld B/VM)\n",
	       r->engine_first_bytes, r->engine_first_bytes / s->nr_vms,
	       r->engine_first_bytes / r->nr_vcpus, r->engine_last_bytes,
	       r->engine_last_bytes / s->nr_vms);
	printf("  snapshot       %lld B (%lld B/VM), host side, for comparison\n",
	       r->snapshot_bytes, r->snapshot_bytes / s->nr_vms);
}

static void
bench_print_table(const struct bench_result *res, int nr)
{
	printf("\n%-18s %9s %9s %9s %9s %9s %8s %8s %9s\n", "size (VMs/vCPUs/N)", "first_ms",
	       "mean_ms", "median_ms", "p99_ms", "max_ms", "B/VM", "B/vCPU", "target_ms");
	for (int i = 0; i < nr; i++) {
		const struct bench_result *r = &res[i];
		char size[48], target[16] = "-", per_vm[24] = "-", per_vcpu[24] = "-";

		snprintf(size, sizeof(size), "%d/%d/%d", r->size.nr_vms, r->nr_vcpus,
		         r->size.nr_nodes);
		if (r->size.target_ms > 0)
			snprintf(target, sizeof(target), "%g", r->size.target_ms);
		if (BENCH_HEAP_KNOWN) {
			snprintf(per_vm, sizeof(per_vm), "%lld",
			         r->engine_first_bytes / r->size.nr_vms);
			snprintf(per_vcpu, sizeof(per_vcpu), "%lld",
			         r->engine_first_bytes / r->nr_vcpus);
		}
		printf("%-18s %9.3f %9.3f %9.3f %9.3f %9.3f %8s %8s %9s\n", size, r->first_wall_ms,
		       r->mean_ms, r->median_ms, r->p99_ms, r->max_ms, per_vm, per_vcpu, target);
	}
	printf("(wall-clock ms per decide on one core; targets are for reference, not checked)\n");
}

static void
bench_json_one(const struct bench_result *r)
{
	const struct bench_size *s = &r->size;

	printf("{\"vms\":%d,\"vcpus\":%d,\"nodes\":%d,\"cpus_per_node\":%d,"
	       "\"node_mem_mib\":%" PRIu64 ",\"rounds\":%d,\"warmup_rounds\":%d,"
	       "\"target_ms\":%g,\"first\":{\"wall_ms\":%.4f,\"cpu_ms\":%.4f",
	       s->nr_vms, r->nr_vcpus, s->nr_nodes, s->cpus_per_node, s->node_mem_mib, r->rounds,
	       BENCH_WARMUP_ROUNDS, s->target_ms, r->first_wall_ms, r->first_cpu_ms);
	for (int k = 0; k < BENCH_PLAN_KINDS; k++)
		printf(",\"%s\":%zu", bench_plan_kind[k], r->first_plan[k]);
	printf("},\"steady\":{\"mean_ms\":%.4f,\"median_ms\":%.4f,\"p99_ms\":%.4f,"
	       "\"max_ms\":%.4f,\"cpu_mean_ms\":%.4f,\"cpu_p99_ms\":%.4f",
	       r->mean_ms, r->median_ms, r->p99_ms, r->max_ms, r->cpu_mean_ms, r->cpu_p99_ms);
	for (int k = 0; k < BENCH_PLAN_KINDS; k++)
		printf(",\"%s_mean\":%.2f,\"%s_max\":%zu", bench_plan_kind[k], r->plan_mean[k],
		       bench_plan_kind[k], r->plan_max[k]);
	if (!BENCH_HEAP_KNOWN) {
		printf("},\"memory\":null}");
		return;
	}
	printf("},\"memory\":{\"engine_first_bytes\":%lld,\"engine_last_bytes\":%lld,"
	       "\"bytes_per_vm\":%lld,\"bytes_per_vcpu\":%lld,\"snapshot_bytes\":%lld}}",
	       r->engine_first_bytes, r->engine_last_bytes, r->engine_first_bytes / s->nr_vms,
	       r->engine_first_bytes / r->nr_vcpus, r->snapshot_bytes);
}

static void
bench_print_json(const struct bench_result *res, int nr, uint64_t seed)
{
	printf("{\"benchmark\":\"engine_decide\",\"balancer\":\"%s\",\"seed\":%" PRIu64
	       ",\"sizes\":[",
	       vnumad_balancer_ops.name, seed);
	for (int i = 0; i < nr; i++) {
		printf("%s", i > 0 ? "," : "");
		bench_json_one(&res[i]);
	}
	printf("]}\n");
}

/* ---- command line ------------------------------------------------------------------ */

struct bench_opts {
	long vms, vcpus_per_vm, nodes, rounds, seed;
	bool custom, json;
};

/* An option that takes a number: where it goes, its bounds, whether it sets a size. */
struct bench_opt_def {
	const char *name;
	long *value;
	long min, max;
	bool size;
};

static void
bench_usage(FILE *f)
{
	fprintf(f, "usage: bench_engine [--vms N --vcpus-per-vm K --nodes M] [--rounds R] "
	           "[--seed S] [--json]\n"
	           "  without a size: the two target sizes, 64/512/4 and 2048/16384/16\n");
}

/* One numeric option, its value in value (NULL if missing); 0, or -EINVAL with a message. */
static int
bench_parse_opt(struct bench_opts *o, const char *name, const char *value)
{
	const struct bench_opt_def defs[] = {
	    {"--vms", &o->vms, 1, 1 << 20, true},
	    {"--vcpus-per-vm", &o->vcpus_per_vm, 1, 512, true},
	    {"--nodes", &o->nodes, 1, UTIL_MAX_NODES, true},
	    {"--rounds", &o->rounds, 1, 1000000, false},
	    {"--seed", &o->seed, 0, LONG_MAX, false},
	};

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		char *end;
		long v;

		if (strcmp(name, defs[i].name) != 0)
			continue;
		errno = 0;
		v = value ? strtol(value, &end, 10) : 0;
		if (value == NULL || errno != 0 || end == value || *end != '\0' ||
		    v < defs[i].min || v > defs[i].max)
			break;
		*defs[i].value = v;
		o->custom |= defs[i].size;
		return 0;
	}
	fprintf(stderr, "bench_engine: bad option or value: %s %s\n", name, value ? value : "");
	return -EINVAL;
}

static int
bench_parse_args(struct bench_opts *o, int argc, char **argv)
{
	*o = (struct bench_opts){.vms = 64,
	                         .vcpus_per_vm = 8,
	                         .nodes = 4,
	                         .rounds = BENCH_ROUNDS_DEF,
	                         .seed = BENCH_SEED_DEF};
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			o->json = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			bench_usage(stdout);
			exit(0);
		} else if (bench_parse_opt(o, argv[i], i + 1 < argc ? argv[i + 1] : NULL) == 0) {
			i++;
		} else {
			bench_usage(stderr);
			return -EINVAL;
		}
	}
	return 0;
}

/* A custom size: enough CPUs per node for every vCPU and the biggest VM, 4 GiB per CPU. */
static struct bench_size
bench_custom_size(const struct bench_opts *o)
{
	long cpus = (o->vms * o->vcpus_per_vm + o->nodes - 1) / o->nodes;

	if (cpus < 2 * o->vcpus_per_vm)
		cpus = 2 * o->vcpus_per_vm;
	cpus = (cpus + 3) / 4 * 4;
	return (struct bench_size){
	    .nr_vms = (int)o->vms,
	    .vcpus_per_vm = (int)o->vcpus_per_vm,
	    .nr_nodes = (int)o->nodes,
	    .cpus_per_node = (int)cpus,
	    .node_mem_mib = (uint64_t)cpus * BENCH_CUSTOM_MIB_PER_CPU + BENCH_HOST_RESERVED_MIB,
	    .target_ms = 0,
	};
}

int
main(int argc, char **argv)
{
	static const struct bench_size targets[] = {
	    {64, 8, 4, 128, 512 * 1024, 2.0},
	    {2048, 8, 16, 1024, 2048 * 1024, 50.0},
	};
	struct bench_size sizes[2];
	struct bench_result res[2];
	struct bench_opts o;
	int nr;

	if (bench_parse_args(&o, argc, argv) < 0)
		return 2;
	nr = o.custom ? 1 : 2;
	if (o.custom)
		sizes[0] = bench_custom_size(&o);
	else
		memcpy(sizes, targets, sizeof(sizes));
	for (int i = 0; i < nr; i++) {
		if (bench_run(&sizes[i], (int)o.rounds, (uint64_t)o.seed, &res[i]) < 0) {
			fprintf(stderr,
			        "bench_engine: decide failed or made a bad plan at %d VMs "
			        "(seed %ld)\n",
			        sizes[i].nr_vms, o.seed);
			return 1;
		}
		if (!o.json)
			bench_print_one(&res[i]);
	}
	if (o.json)
		bench_print_json(res, nr, (uint64_t)o.seed);
	else
		bench_print_table(res, nr);
	return 0;
}

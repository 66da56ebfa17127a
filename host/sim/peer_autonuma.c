/*
 * peer_autonuma.c - the `autonuma` peer: a model of Linux's automatic NUMA balancing (mainline
 * kernel/sched/fair.c, 4.19 and later) acting on the vCPU threads of VMs.
 *
 * The kernel's work splits in two, and so does the model (docs/peers/autonuma.md):
 *
 *  - Per page, in the host (host/sim/sim.c, enabled by BALANCER_HOST_KERNEL_NUMA): the scanner
 *    unmaps guest memory at the VM's scan rate; each hinting fault is counted against the vCPU
 *    that takes it; a region migrates to the faulting vCPU's node when its previous fault came
 *    from that node too (the two-stage filter) and the destination stays above its watermark.
 *
 *  - Per task, here, every second: what task_numa_placement(), numa_migrate_preferred() /
 *    task_numa_migrate() and update_task_scan_period() do for each vCPU thread, computed from
 *    the snapshot's decayed per-node fault counters only.  All vCPUs of a VM form one
 *    numa_group.  Actions are PLAN_PIN_KERNEL_MOVE pins (task moves and swaps, affinity
 *    untouched) and per-VM scan rates.  No memory moves: the host migrates on fault.  The kernel
 *    knows nothing of vnumad's per-VM policies, so neither does this model.
 *
 * This file follows the scanner, the faults, the preferred nodes and the scan period; the task
 * moves and swaps are in peer_autonuma_migrate.c, the types both use in peer_autonuma_internal.h.
 */
#include "host/sim/peer_autonuma_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/peers.h"

/* ---- constants (kernel names in brackets; see docs/peers/autonuma.md) --------------------- */

/* [sysctl_numa_balancing_scan_size] MiB of address space unmapped per scan window; 256. */
#define AUTONUMA_SCAN_SIZE_MIB 256u
/* [sysctl_numa_balancing_scan_period_min] ms to scan the whole address space, at least; 1000. */
#define AUTONUMA_SCAN_PERIOD_MIN_MS 1000u
/* [sysctl_numa_balancing_scan_period_max] ms to scan the whole address space, at most; 60000. */
#define AUTONUMA_SCAN_PERIOD_MAX_MS 60000u
/* [sysctl_numa_balancing_scan_delay] a new task's first numa_scan_period, ms; 1000. */
#define AUTONUMA_SCAN_DELAY_MS 1000u
/* [MAX_SCAN_WINDOW] never scan more than this many MiB/s per task; 2560. */
#define AUTONUMA_MAX_SCAN_WINDOW_MIB_S 2560u
/* [NUMA_PERIOD_SLOTS] the scan period moves in tenths of itself; 10. */
#define AUTONUMA_PERIOD_SLOTS 10
/* [NUMA_PERIOD_THRESHOLD] aim for 7 of 10 slots (70 %) local/private; 7. */
#define AUTONUMA_PERIOD_THRESHOLD 7
/* [ACTIVE_NODE_FRACTION] a node is active with more than 1/3 of the busiest node's faults. */
#define AUTONUMA_ACTIVE_NODE_FRACTION 3
/* [task_weight/group_weight] weights are per mille of the faults; 1000. */
#define AUTONUMA_WEIGHT_SCALE 1000
/*
 * [numa_migrate_retry] each task retries its move at most every min(1 s, scan period / 16); the
 * model runs every second, so every vCPU gets at most one attempt per call.  Seconds; 1.0.
 */
#define AUTONUMA_CALL_PERIOD_S 1.0
/* Shifts of a uint64_t counter beyond 63 are undefined; 63 halvings empty any counter. */
#define AUTONUMA_MAX_HALVINGS 63

/* ---- state management --------------------------------------------------------------------- */

static void
autonuma_vm_free(struct autonuma_vm *av)
{
	if (av == NULL)
		return;
	free(av->faults_cpu);
	free(av->vcpus);
	free(av->prev_store);
	free(av);
}

static struct autonuma_vm *
autonuma_vm_new(const struct snap_vm *vm, int nr_nodes, double now_s)
{
	struct autonuma_vm *av = xcalloc(1, sizeof(*av));
	size_t per = 2 * (size_t)nr_nodes;

	av->id = vm->id;
	av->nr_vcpus = vm->nr_vcpus;
	av->nr_nodes = nr_nodes;
	av->last_s = now_s;
	av->rate_mib_s = peer_autonuma_ops.default_scan_mib_s;
	av->period_ms = AUTONUMA_SCAN_DELAY_MS;
	av->faults_cpu = xcalloc((size_t)nr_nodes, sizeof(double));
	av->vcpus = xcalloc((size_t)vm->nr_vcpus, sizeof(*av->vcpus));
	av->prev_store = xcalloc((size_t)vm->nr_vcpus * per, sizeof(uint64_t));
	for (int c = 0; c < vm->nr_vcpus; c++) {
		av->vcpus[c].prev = &av->prev_store[(size_t)c * per];
		av->vcpus[c].preferred = -1;
	}
	return av;
}

static struct autonuma_vm *
autonuma_state_find(const struct autonuma_state *st, int id)
{
	for (size_t i = 0; i < st->nr_vms; i++)
		if (st->vms[i]->id == id)
			return st->vms[i];
	return NULL;
}

/*
 * Match the snapshot's VMs to our state: new VMs (or a VM whose shape changed, or one that
 * arrived again under the same id) get fresh state; VMs that went away are forgotten.
 * Fills vmst[i] for snapshot VM i.
 */
static void
autonuma_state_sync(struct autonuma_state *st, const struct snapshot *snap,
                    struct autonuma_vm **vmst)
{
	size_t keep = 0;

	for (size_t i = 0; i < st->nr_vms; i++)
		st->vms[i]->seen = false;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct autonuma_vm *av = autonuma_state_find(st, vm->id);
		bool stale =
		    av != NULL && (av->nr_vcpus != vm->nr_vcpus || av->nr_nodes != snap->nr_nodes ||
		                   (vm->uptime_s == 0 && av->last_s < snap->now_s));

		if (stale) {
			av->id = -1; /* replaced below; dropped with the unseen */
			av = NULL;
		}
		if (av == NULL) {
			util_array_reserve((void **)&st->vms, &st->cap_vms, st->nr_vms + 1,
			                   sizeof(*st->vms));
			av = autonuma_vm_new(vm, snap->nr_nodes, snap->now_s);
			st->vms[st->nr_vms++] = av;
		}
		av->seen = true;
		vmst[i] = av;
	}
	for (size_t i = 0; i < st->nr_vms; i++) {
		if (st->vms[i]->seen)
			st->vms[keep++] = st->vms[i];
		else
			autonuma_vm_free(st->vms[i]);
	}
	st->nr_vms = keep;
}

/* ---- weights (task_weight, group_weight), per mille --------------------------------------- */

static const struct snap_vcpu *
autonuma_task_vcpu(const struct autonuma_round *rd, int t)
{
	return &rd->snap->vms[rd->tasks[t].vm].vcpus[rd->tasks[t].vcpu];
}

struct autonuma_vcpu *
autonuma_task_state(const struct autonuma_round *rd, int t)
{
	return &rd->vmst[rd->tasks[t].vm]->vcpus[rd->tasks[t].vcpu];
}

long
autonuma_task_weight(const struct autonuma_round *rd, int t, int nid)
{
	const struct snap_vcpu *v = autonuma_task_vcpu(rd, t);
	uint64_t total = 0;

	for (int n = 0; n < rd->snap->nr_nodes; n++)
		total += v->faults_private[n] + v->faults_shared[n];
	if (total == 0)
		return 0;
	return (long)(AUTONUMA_WEIGHT_SCALE * (v->faults_private[nid] + v->faults_shared[nid]) /
	              total);
}

long
autonuma_group_weight(const struct autonuma_round *rd, int vm, int nid)
{
	uint64_t total = rd->groups[vm].total;

	if (total == 0)
		return 0;
	return (long)(AUTONUMA_WEIGHT_SCALE * rd->groups[vm].faults[nid] / total);
}

/* ---- fault accounting --------------------------------------------------------------------- */

/*
 * How many scan passes the VM's scanner completed since the previous call.  We set the scan rate,
 * so we can follow the scanner: a pass is the VM's whole memory, as the host scans it.
 */
static int
autonuma_vm_passes(struct autonuma_vm *av, const struct snap_vm *vm, double now_s)
{
	double pass_mib = vm->mem_mib > 0 ? (double)vm->mem_mib : 1.0;
	double dt = now_s > av->last_s ? now_s - av->last_s : 0.0;
	double passes;

	av->last_s = now_s;
	av->scanned_mib += av->rate_mib_s * dt;
	passes = floor((av->scanned_mib + 1e-6) / pass_mib);
	if (passes <= 0)
		return 0;
	av->scanned_mib = fmax(0.0, av->scanned_mib - passes * pass_mib);
	return passes > AUTONUMA_MAX_HALVINGS ? AUTONUMA_MAX_HALVINGS : (int)passes;
}

static bool
autonuma_vm_consistent(const struct autonuma_vm *av, const struct snap_vm *vm, int h)
{
	for (int c = 0; c < vm->nr_vcpus; c++) {
		const struct snap_vcpu *v = &vm->vcpus[c];
		const uint64_t *prev = av->vcpus[c].prev;

		for (int n = 0; n < av->nr_nodes; n++)
			if (v->faults_private[n] < prev[n] >> h ||
			    v->faults_shared[n] < prev[av->nr_nodes + n] >> h)
				return false;
	}
	return true;
}

/*
 * Halvings of the counters since the previous call: the passes we counted, raised to the least
 * number the data allow when a counter fell below prev >> h (our count lagged the host's scanner).
 * Counters only grow between halvings, so cur >= prev >> h holds for the true h.
 */
static int
autonuma_vm_halvings(const struct autonuma_vm *av, const struct snap_vm *vm, int passes)
{
	int h = passes;

	while (h < AUTONUMA_MAX_HALVINGS && !autonuma_vm_consistent(av, vm, h))
		h++;
	return h;
}

/* Faults on node n of vCPU on cpu_node count as local (task_numa_fault()'s TNF_FAULT_LOCAL). */
static bool
autonuma_fault_local(const struct autonuma_vm *av, int cpu_node, int n, bool shared)
{
	if (n == cpu_node)
		return true;
	/* A shared fault wholly within an interleaved group's active nodes counts as local. */
	return shared && av->nr_active > 1 && nodemask_test(av->active_mask, cpu_node) &&
	       nodemask_test(av->active_mask, n);
}

/* Add the new faults of one vCPU (cur - (prev >> h)) to this period's statistics. */
static void
autonuma_vcpu_account(struct autonuma_vm *av, const struct snap_vcpu *v, struct autonuma_vcpu *avc,
                      int h)
{
	uint64_t total = 0;

	for (int k = 0; k < 2 * av->nr_nodes; k++) {
		bool shared = k >= av->nr_nodes;
		int n = shared ? k - av->nr_nodes : k;
		uint64_t cur = shared ? v->faults_shared[n] : v->faults_private[n];
		uint64_t old = avc->prev[k] >> h;
		uint64_t inc = cur > old ? cur - old : 0;

		avc->prev[k] = cur;
		total += inc;
		if (shared)
			av->shared += inc;
		else
			av->priv += inc;
		if (autonuma_fault_local(av, v->node, n, shared))
			av->local += inc;
		else
			av->remote += inc;
	}
	avc->faulted = total > 0;
	avc->pass_faults += total;
}

/* ---- placement (task_numa_placement) ------------------------------------------------------ */

/*
 * The preferred node of a task in a group: the node with most group faults (the kernel's
 * max_nid over group_faults on a directly connected topology), ties broken by the task's own
 * faults, then by the lower node index.
 */
static int
autonuma_task_preferred(const struct autonuma_round *rd, int t)
{
	int vm = rd->tasks[t].vm, best = -1;
	long best_score = -1;

	if (rd->groups[vm].total == 0)
		return -1;
	for (int n = 0; n < rd->snap->nr_nodes; n++) {
		long score = autonuma_group_weight(rd, vm, n) * AUTONUMA_WEIGHT_SCALE +
		             autonuma_task_weight(rd, t, n);

		if (score > best_score) {
			best_score = score;
			best = n;
		}
	}
	return best;
}

/* numa_group_count_active_nodes() on faults_cpu decayed once per placement. */
static void
autonuma_vm_active_nodes(struct autonuma_vm *av, const struct snap_vm *vm)
{
	double max = 0;

	for (int n = 0; n < av->nr_nodes; n++)
		av->faults_cpu[n] /= 2;
	for (int c = 0; c < vm->nr_vcpus; c++) {
		if (av->vcpus[c].pass_faults > 0)
			av->faults_cpu[vm->vcpus[c].node] += vm->vcpus[c].cpu_use;
		av->vcpus[c].pass_faults = 0;
	}
	for (int n = 0; n < av->nr_nodes; n++)
		max = fmax(max, av->faults_cpu[n]);
	av->active_mask = 0;
	av->nr_active = 0;
	for (int n = 0; n < av->nr_nodes; n++) {
		if (av->faults_cpu[n] * AUTONUMA_ACTIVE_NODE_FRACTION > max) {
			av->active_mask |= nodemask_of(n);
			av->nr_active++;
		}
	}
}

/* ---- scan period (task_scan_min, task_scan_max, update_task_scan_period) ----------------- */

/* task_nr_scan_windows(): the resident memory in scan windows, at least one. */
static unsigned
autonuma_scan_windows(const struct snap_vm *vm, int nr_nodes)
{
	uint64_t rss = 0;

	for (int n = 0; n < nr_nodes; n++)
		rss += vm->resident_mib[n];
	if (rss == 0)
		rss = AUTONUMA_SCAN_SIZE_MIB;
	return (unsigned)((rss + AUTONUMA_SCAN_SIZE_MIB - 1) / AUTONUMA_SCAN_SIZE_MIB);
}

static unsigned
autonuma_scan_min_ms(unsigned windows)
{
	unsigned floor_ms = 1000u / (AUTONUMA_MAX_SCAN_WINDOW_MIB_S / AUTONUMA_SCAN_SIZE_MIB);
	unsigned scan_ms = AUTONUMA_SCAN_PERIOD_MIN_MS / windows;

	return scan_ms > floor_ms ? scan_ms : floor_ms;
}

/* The maximum grows with the group's size and its share of shared faults. */
static unsigned
autonuma_scan_max_ms(const struct autonuma_round *rd, int vm, unsigned windows)
{
	unsigned smin = autonuma_scan_min_ms(windows);
	double smax = AUTONUMA_SCAN_PERIOD_MAX_MS / windows;
	double shared = (double)rd->groups[vm].shared, priv = (double)rd->groups[vm].priv;
	double period = smax * rd->snap->vms[vm].nr_vcpus * (shared + 1) / (priv + shared + 1);

	smax = fmax(smax, floor(period));
	return smax > smin ? (unsigned)smax : smin;
}

/* The per-window period after one period's statistics, as update_task_scan_period() does. */
static unsigned
autonuma_period_next(const struct autonuma_vm *av, unsigned smin, unsigned smax)
{
	long period = av->period_ms, slot_ms, diff, lr_ratio, ps_ratio;

	if (av->local + av->shared == 0 || av->failed_mib > 0)
		return 2 * av->period_ms < smax ? 2 * av->period_ms : smax;
	slot_ms = (period + AUTONUMA_PERIOD_SLOTS - 1) / AUTONUMA_PERIOD_SLOTS;
	lr_ratio = (long)(av->local * AUTONUMA_PERIOD_SLOTS / (av->local + av->remote));
	ps_ratio = (long)(av->priv * AUTONUMA_PERIOD_SLOTS / (av->priv + av->shared));
	if (ps_ratio >= AUTONUMA_PERIOD_THRESHOLD) {
		/* fair.c tests the private share first (see docs/peers/autonuma.md). */
		long slot = ps_ratio - AUTONUMA_PERIOD_THRESHOLD;

		diff = (slot ? slot : 1) * slot_ms;
	} else if (lr_ratio >= AUTONUMA_PERIOD_THRESHOLD) {
		long slot = lr_ratio - AUTONUMA_PERIOD_THRESHOLD;

		diff = (slot ? slot : 1) * slot_ms;
	} else {
		long ratio = lr_ratio > ps_ratio ? lr_ratio : ps_ratio;

		diff = -(AUTONUMA_PERIOD_THRESHOLD - ratio) * slot_ms;
	}
	period += diff;
	if (period < (long)smin)
		period = smin;
	if (period > (long)smax)
		period = smax;
	return (unsigned)period;
}

/* MiB scanned per window: scan_size, or the whole VM when it is smaller than one window. */
static uint64_t
autonuma_scan_window_mib(const struct snap_vm *vm)
{
	return vm->mem_mib < AUTONUMA_SCAN_SIZE_MIB ? vm->mem_mib : AUTONUMA_SCAN_SIZE_MIB;
}

/* The scan rate (MiB/s): one window per period. */
static double
autonuma_scan_rate(const struct snap_vm *vm, unsigned period_ms)
{
	return (double)autonuma_scan_window_mib(vm) * 1000.0 / period_ms;
}

static void
autonuma_vm_scan_update(struct autonuma_round *rd, int vm)
{
	struct autonuma_vm *av = rd->vmst[vm];
	unsigned windows = autonuma_scan_windows(&rd->snap->vms[vm], rd->snap->nr_nodes);
	unsigned smax = autonuma_scan_max_ms(rd, vm, windows);

	av->period_ms = autonuma_period_next(av, autonuma_scan_min_ms(windows), smax);
	av->local = av->remote = av->priv = av->shared = av->failed_mib = 0;
}

/* Ask for the VM's scan rate when it differs from the one in effect. */
static void
autonuma_vm_scan_emit(struct autonuma_round *rd, int vm)
{
	struct autonuma_vm *av = rd->vmst[vm];
	const struct snap_vm *svm = &rd->snap->vms[vm];
	double rate = autonuma_scan_rate(svm, av->period_ms);
	struct plan_sampling *s;

	if (rate == av->rate_mib_s)
		return;
	s = plan_add_sampling(rd->plan, svm->id, rate);
	plan_reason_set(&s->why, "autonuma-scan", rate - av->rate_mib_s,
	                "scan period %u ms per %llu MiB window: %.1f s per pass of %llu MiB",
	                av->period_ms, (unsigned long long)autonuma_scan_window_mib(svm),
	                (double)svm->mem_mib / rate, (unsigned long long)svm->mem_mib);
	av->rate_mib_s = rate;
}

/*
 * One VM's bookkeeping for this call: follow its scanner, take the new faults, and at the end of
 * a scan pass re-evaluate every vCPU's preferred node and the VM's scan period.
 */
static void
autonuma_vm_update(struct autonuma_round *rd, int vm, int first_task)
{
	const struct snap_vm *svm = &rd->snap->vms[vm];
	struct autonuma_vm *av = rd->vmst[vm];
	int passes = autonuma_vm_passes(av, svm, rd->snap->now_s);
	int h = autonuma_vm_halvings(av, svm, passes);

	for (int c = 0; c < svm->nr_vcpus; c++)
		autonuma_vcpu_account(av, &svm->vcpus[c], &av->vcpus[c], h);
	av->failed_mib += svm->mig_failed_mib;
	if (passes > 0) {
		for (int c = 0; c < svm->nr_vcpus; c++) {
			int pref = autonuma_task_preferred(rd, first_task + c);
			const struct snap_vcpu *v = &svm->vcpus[c];
			uint64_t mine = 0;

			for (int n = 0; n < rd->snap->nr_nodes; n++)
				mine += v->faults_private[n] + v->faults_shared[n];
			if (pref >= 0 && mine > 0)
				av->vcpus[c].preferred = pref;
		}
		autonuma_vm_active_nodes(av, svm);
		autonuma_vm_scan_update(rd, vm);
	}
	autonuma_vm_scan_emit(rd, vm);
}

/* ---- the round ---------------------------------------------------------------------------- */

static void
autonuma_round_group_faults(struct autonuma_round *rd, int vm)
{
	const struct snap_vm *svm = &rd->snap->vms[vm];
	struct autonuma_group *g = &rd->groups[vm];

	g->faults = &rd->group_store[(size_t)vm * rd->snap->nr_nodes];
	for (int c = 0; c < svm->nr_vcpus; c++) {
		for (int n = 0; n < rd->snap->nr_nodes; n++) {
			uint64_t p = svm->vcpus[c].faults_private[n];
			uint64_t s = svm->vcpus[c].faults_shared[n];

			g->faults[n] += p + s;
			g->total += p + s;
			g->priv += p;
			g->shared += s;
		}
	}
}

static void
autonuma_round_init(struct autonuma_round *rd, struct autonuma_state *st,
                    const struct snapshot *snap, struct plan *plan)
{
	size_t nr_vms = snap->nr_vms > 0 ? (size_t)snap->nr_vms : 1;
	int t = 0;

	memset(rd, 0, sizeof(*rd));
	rd->snap = snap;
	rd->plan = plan;
	rd->vmst = xcalloc(nr_vms, sizeof(*rd->vmst));
	rd->groups = xcalloc(nr_vms, sizeof(*rd->groups));
	rd->group_store = xcalloc(nr_vms * (size_t)snap->nr_nodes, sizeof(uint64_t));
	rd->node_load = xcalloc((size_t)snap->nr_nodes, sizeof(double));
	for (int i = 0; i < snap->nr_vms; i++)
		rd->nr_tasks += snap->vms[i].nr_vcpus;
	rd->tasks = xcalloc(rd->nr_tasks > 0 ? (size_t)rd->nr_tasks : 1, sizeof(*rd->tasks));
	autonuma_state_sync(st, snap, rd->vmst);
	for (int i = 0; i < snap->nr_vms; i++) {
		autonuma_round_group_faults(rd, i);
		for (int c = 0; c < snap->vms[i].nr_vcpus; c++, t++) {
			const struct snap_vcpu *v = &snap->vms[i].vcpus[c];

			rd->tasks[t] = (struct autonuma_task){.vm = i,
			                                      .vcpu = c,
			                                      .node = v->node,
			                                      .allowed = v->allowed_nodes,
			                                      .load = v->cpu_use};
			rd->node_load[v->node] += v->cpu_use;
		}
	}
}

static void
autonuma_round_fini(struct autonuma_round *rd)
{
	free(rd->vmst);
	free(rd->groups);
	free(rd->group_store);
	free(rd->node_load);
	free(rd->tasks);
}

/* ---- balancer_ops ------------------------------------------------------------------------- */

static void *
autonuma_create(const struct balancer_args *args)
{
	(void)args; /* deterministic without randomness; the kernel ignores the scenario too */
	return xcalloc(1, sizeof(struct autonuma_state));
}

static int
autonuma_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct autonuma_state *st = state;
	struct autonuma_round rd;
	int first = 0;

	autonuma_round_init(&rd, st, snap, plan);
	for (int i = 0; i < snap->nr_vms; i++) {
		autonuma_vm_update(&rd, i, first);
		first += snap->vms[i].nr_vcpus;
	}
	for (int t = 0; t < rd.nr_tasks; t++)
		autonuma_task_consider(&rd, t);
	autonuma_round_fini(&rd);
	plan->next_call_s = AUTONUMA_CALL_PERIOD_S;
	return 0;
}

static void
autonuma_destroy(void *state)
{
	struct autonuma_state *st = state;

	if (st == NULL)
		return;
	for (size_t i = 0; i < st->nr_vms; i++)
		autonuma_vm_free(st->vms[i]);
	free(st->vms);
	free(st);
}

const struct balancer_ops peer_autonuma_ops = {
    .name = "autonuma",
    .description = "Linux automatic NUMA balancing: migrate-on-fault in the host, task "
                   "placement and adaptive scanning per vCPU thread",
    .host_flags = BALANCER_HOST_KERNEL_NUMA,
    .default_scan_mib_s = (double)AUTONUMA_SCAN_SIZE_MIB * 1000.0 / AUTONUMA_SCAN_DELAY_MS,
    .create = autonuma_create,
    .decide = autonuma_decide,
    .destroy = autonuma_destroy,
};

/*
 * peer_numad.c - a model of numad (Red Hat's user-space NUMA daemon, version 20150602) as a
 * balancer.  Its node choice, which the `static` peer reuses for `numad -w` advice, is in
 * peer_numad_pick.c; numad's constants are in peer_numad_internal.h.
 *
 * numad measures no access data.  Every loop it reads each node's free memory and idle CPU,
 * and each big process's RSS, CPU use (max of its last 8 samples), size and per-node memory;
 * it then evaluates candidates (RSS > 300 MB, CPU > 0.5) one by one and rebinds at most one:
 * all its threads pinned to the chosen nodes' CPUs, then its memory pulled over node by node
 * with migrate_pages(2), synchronously.  Loop: 5 s after a rebind, 15 s otherwise.
 *
 * Everything here follows numad's own arithmetic (integer MB and hundredths of a CPU); where
 * the model departs from numad it says so, and docs/peers/numad.md lists every departure.
 */
#include "host/sim/peer_numad.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/peer_numad_internal.h"
#include "host/sim/peers.h"
#include "host/sim/sim.h"

/* ---- model constants (not numad's) -------------------------------------------------- */

/* Tolerance when comparing the sim clock with numad's own schedule (s): half a sim tick. */
#define NUMAD_CLOCK_SLACK_S (SIM_TICK_S / 2)

/* ---- the daemon --------------------------------------------------------------------- */

/* One entry of numad's process hash table: a VM's QEMU process. */
struct numad_proc {
	int vm_id;
	int vm_idx;    /* index in the current snapshot (valid when updated this loop) */
	bool updated;  /* read this loop */
	bool has_data; /* numad's data_time_stamp != 0: read on the previous loop too */
	int64_t ring_c[NUMAD_RING_SAMPLES];
	int ring_ix;
	int64_t cpus_used_c; /* CPUs_used: max of ring_c */
	int64_t mbs_used;    /* RSS */
	int64_t mbs_size;    /* virtual size; the guest RAM size stands in for it */
	int nr_threads;      /* thread limit for the CPU request: the -smp vCPU count */
	bool node_list_set;
	uint64_t node_list; /* nodes numad believes it is bound to */
	bool bound;         /* numad's bind_time_stamp != 0 */
	double bind_s;
};

struct numad_stats {
	int min_cpu_ix, min_mb_ix;
	int64_t min_cpu_c, max_cpu_c, avg_cpu_c;
	int64_t min_mb, max_mb, avg_mb;
	int64_t sum_cpus_total_c;
};

struct numad_state {
	struct numad_proc *procs;
	size_t nr_procs, cap_procs;
	int table_size;  /* numad's hash table size: caps new entries per loop at size/3 */
	int pindex_size; /* manage_loads()'s index size; resizing costs a quick 2-s loop */
	double next_due_s;
	bool busy; /* inside a synchronous migrate_pages() run */
	int busy_vm_id;
	struct numad_node nodes[UTIL_MAX_NODES];
	struct numad_stats stats;
	struct numad_proc **cand; /* scratch */
	size_t cap_cand;
};

static void *
numad_create(const struct balancer_args *args)
{
	struct numad_state *st = xcalloc(1, sizeof(*st));

	st->table_size = NUMAD_HASH_MIN_SIZE;
	return st;
}

static void
numad_destroy(void *state)
{
	struct numad_state *st = state;

	if (st == NULL)
		return;
	free(st->procs);
	free(st->cand);
	free(st);
}

static struct numad_proc *
numad_proc_find(struct numad_state *st, int vm_id, size_t hint)
{
	if (hint < st->nr_procs && st->procs[hint].vm_id == vm_id)
		return &st->procs[hint];
	for (size_t i = 0; i < st->nr_procs; i++)
		if (st->procs[i].vm_id == vm_id)
			return &st->procs[i];
	return NULL;
}

static struct numad_proc *
numad_proc_add(struct numad_state *st, int vm_id)
{
	struct numad_proc *p;

	util_array_reserve((void **)&st->procs, &st->cap_procs, st->nr_procs + 1, sizeof(*p));
	p = &st->procs[st->nr_procs++];
	memset(p, 0, sizeof(*p));
	p->vm_id = vm_id;
	return p;
}

/* process_hash_update(): a CPU sample needs a previous reading, as utime+stime are deltas. */
static void
numad_proc_read(struct numad_proc *p, const struct snap_vm *vm, int vm_idx, int64_t rss)
{
	if (p->has_data) {
		p->ring_ix = (p->ring_ix + 1) % NUMAD_RING_SAMPLES;
		p->ring_c[p->ring_ix] = numad_vm_cpus_c(vm);
		p->cpus_used_c = 0;
		for (int i = 0; i < NUMAD_RING_SAMPLES; i++)
			if (p->cpus_used_c < p->ring_c[i])
				p->cpus_used_c = p->ring_c[i];
	}
	p->mbs_used = rss;
	p->mbs_size = (int64_t)vm->mem_mib;
	p->nr_threads = vm->nr_vcpus;
	p->vm_idx = vm_idx;
	p->updated = true;
	p->has_data = true;
}

/*
 * update_processes(): read every process with RSS > 300 MB, admitting at most table_size/3
 * new (or stale) entries per loop; then process_hash_table_cleanup(): entries not read lose
 * their CPU figure, gone VMs are forgotten, and the table doubles when over 4/7 full.
 */
static void
numad_procs_update(struct numad_state *st, const struct snapshot *snap)
{
	int new_entries = 0;
	size_t keep = 0;

	for (size_t i = 0; i < st->nr_procs; i++)
		st->procs[i].updated = false;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		struct numad_proc *p;
		int64_t rss = numad_vm_rss(snap, vm);

		if (rss <= NUMAD_MEM_THRESHOLD_MB || new_entries >= st->table_size / 3)
			continue;
		p = numad_proc_find(st, vm->id, (size_t)i);
		if (p == NULL)
			p = numad_proc_add(st, vm->id);
		new_entries += !p->has_data;
		numad_proc_read(p, vm, i, rss);
	}
	for (size_t i = 0; i < st->nr_procs; i++) {
		struct numad_proc *p = &st->procs[i];
		bool alive = p->updated;

		for (int v = 0; !alive && v < snap->nr_vms; v++)
			alive = snap->vms[v].id == p->vm_id;
		if (!alive)
			continue;
		if (!p->updated) {
			p->has_data = false;
			p->cpus_used_c = 0;
		}
		st->procs[keep++] = *p;
	}
	st->nr_procs = keep;
	if ((int)st->nr_procs * 7 / 4 > st->table_size)
		st->table_size *= 2;
}

/* update_nodes(): free memory and CPU per node, and their min / max / average. */
static void
numad_stats_update(struct numad_state *st, const struct snapshot *snap)
{
	struct numad_stats *s = &st->stats;
	int64_t sum_mb = 0, sum_c = 0;

	numad_nodes_measure(snap, st->nodes);
	memset(s, 0, sizeof(*s));
	s->min_cpu_c = s->min_mb = INT64_MAX;
	for (int n = 0; n < snap->nr_nodes; n++) {
		const struct numad_node *nd = &st->nodes[n];

		if (s->min_mb > nd->mbs_free) {
			s->min_mb = nd->mbs_free;
			s->min_mb_ix = n;
		}
		if (s->min_cpu_c > nd->cpus_free_c) {
			s->min_cpu_c = nd->cpus_free_c;
			s->min_cpu_ix = n;
		}
		if (s->max_mb < nd->mbs_free)
			s->max_mb = nd->mbs_free;
		if (s->max_cpu_c < nd->cpus_free_c)
			s->max_cpu_c = nd->cpus_free_c;
		sum_mb += nd->mbs_free;
		sum_c += nd->cpus_free_c;
		s->sum_cpus_total_c += nd->cpus_total_c;
	}
	s->avg_mb = sum_mb / snap->nr_nodes;
	s->avg_cpu_c = sum_c / snap->nr_nodes;
}

static uint64_t
numad_proc_magnitude(const struct numad_proc *p)
{
	return (uint64_t)p->cpus_used_c * (uint64_t)p->mbs_used;
}

static void
numad_cand_swap(struct numad_proc **c, int a, int b)
{
	struct numad_proc *tmp = c[a];

	c[a] = c[b];
	c[b] = tmp;
}

/*
 * numad's comparison for previously bound candidates: k goes before best when it is
 * clearly bigger; when best is bigger by more than ~20 % (min / diff < 5), best stays;
 * within that band (or equal) the older bind goes first.  It is asymmetric, as numad's is
 * (unsigned wrap-around makes every "k bigger" case a magnitude comparison).
 */
static bool
numad_bound_before(const struct numad_proc *k, const struct numad_proc *best)
{
	uint64_t mk = numad_proc_magnitude(k), mb = numad_proc_magnitude(best);

	if (mb < mk)
		return true;
	if (mb > mk && mk / (mb - mk) < 5)
		return false;
	return !(k->bind_s > best->bind_s);
}

/* manage_loads()'s ordering: never bound first, biggest CPU x MB first; then the bound. */
static void
numad_cand_sort(struct numad_proc **c, int nr)
{
	int nu = 0;

	for (int i = 0; i < nr; i++)
		if (!c[i]->bound)
			numad_cand_swap(c, nu++, i);
	for (int i = 0; i < nu; i++) {
		int best = i;

		for (int k = i + 1; k < nu; k++)
			if (numad_proc_magnitude(c[k]) > numad_proc_magnitude(c[best]))
				best = k;
		numad_cand_swap(c, i, best);
	}
	for (int i = nu; i < nr; i++) {
		int best = i;

		for (int k = i + 1; k < nr; k++)
			if (numad_bound_before(c[k], c[best]))
				best = k;
		numad_cand_swap(c, i, best);
	}
}

/*
 * initialize_mem_node_list(): numad reads Mems_allowed_list; the sim has no cpuset, so the
 * union of the vCPUs' allowed nodes stands in.  Already bound when first seen: numad dates
 * the bind 30 minutes back.
 */
static void
numad_proc_init_nodes(struct numad_proc *p, const struct snapshot *snap, double now_s)
{
	const struct snap_vm *vm = &snap->vms[p->vm_idx];
	uint64_t all = numad_all_nodes(snap->nr_nodes), list = 0;

	for (int v = 0; v < vm->nr_vcpus; v++)
		list |= vm->vcpus[v].allowed_nodes;
	list &= all;
	p->node_list = list != 0 ? list : all;
	p->node_list_set = true;
	if (p->node_list != all) {
		p->bound = true;
		p->bind_s = now_s - NUMAD_PREBOUND_AGE_S;
	}
}

/* Candidates (CPU > 0.5, RSS > 300 MB), sorted; returns their count and their CPU sum. */
static int
numad_candidates(struct numad_state *st, const struct snapshot *snap, int64_t *sum_cpus_c)
{
	int nr = 0;

	util_array_reserve((void **)&st->cand, &st->cap_cand, st->nr_procs + 1, sizeof(*st->cand));
	*sum_cpus_c = 0;
	for (size_t i = 0; i < st->nr_procs; i++) {
		struct numad_proc *p = &st->procs[i];

		if (!p->updated || p->cpus_used_c <= NUMAD_CPU_THRESHOLD_C ||
		    p->mbs_used <= NUMAD_MEM_THRESHOLD_MB)
			continue;
		st->cand[nr++] = p;
		*sum_cpus_c += p->cpus_used_c;
		if (!p->node_list_set)
			numad_proc_init_nodes(p, snap, snap->now_s);
	}
	numad_cand_sort(st->cand, nr);
	return nr;
}

/*
 * The cool-down exception: re-evaluate a recently bound process anyway when it sits on the
 * node with the least free CPU or memory, fits one node, and taking its load off that node
 * and onto the freest one would bring both closer to the average, for CPU (by more than
 * CPU_THRESHOLD) and for memory.
 */
static bool
numad_cooldown_bypass(const struct numad_state *st, const struct numad_proc *p, int64_t cpu_req_c,
                      int64_t mb_req)
{
	const struct numad_stats *s = &st->stats;
	int64_t used_c = p->cpus_used_c, used_mb = p->mbs_used;
	int64_t cpu_gap, mb_gap;

	if (!nodemask_test(p->node_list, s->min_cpu_ix) &&
	    !nodemask_test(p->node_list, s->min_mb_ix))
		return false;
	if (cpu_req_c >= st->nodes[0].cpus_total_c || mb_req >= st->nodes[0].mbs_total)
		return false;
	cpu_gap = llabs(s->min_cpu_c + used_c - s->avg_cpu_c) +
	          llabs(s->max_cpu_c - used_c - s->avg_cpu_c);
	mb_gap = llabs(s->min_mb + used_mb - s->avg_mb) + llabs(s->max_mb - used_mb - s->avg_mb);
	return cpu_gap < (s->max_cpu_c - s->min_cpu_c) - NUMAD_CPU_THRESHOLD_C &&
	       mb_gap < (s->max_mb - s->min_mb);
}

/* Request sizing: RSS (or the virtual size, for a process bigger than a node) and CPU / 85 %. */
static void
numad_proc_request(const struct numad_state *st, const struct numad_proc *p, int64_t *mb_req,
                   int64_t *cpu_req_c)
{
	int64_t node0_mbs = st->nodes[0].mbs_total;
	int64_t limit_c = (int64_t)p->nr_threads * NUMAD_ONE_HUNDRED;

	if (p->mbs_size > node0_mbs && p->mbs_used * 5 / 4 > node0_mbs)
		*mb_req = p->mbs_size * 100 / NUMAD_TARGET_UTIL_PCT;
	else
		*mb_req = p->mbs_used * 100 / NUMAD_TARGET_UTIL_PCT;
	*cpu_req_c = p->cpus_used_c * 100 / NUMAD_TARGET_UTIL_PCT;
	if (*cpu_req_c > limit_c)
		*cpu_req_c = limit_c;
}

/*
 * bind_process_and_migrate_memory(): every thread to the chosen nodes' CPUs, then, until no
 * memory is left outside the set, all of it on the source holding the most goes to the
 * destination holding the least of it (ties: the higher node, numad's ">=").  Returns the
 * MiB queued.
 */
static uint64_t
numad_bind(const struct snapshot *snap, const struct snap_vm *vm, const struct numad_choice *ch,
           struct plan *plan)
{
	uint64_t mbs[UTIL_MAX_NODES], moved = 0;
	int nr = snap->nr_nodes, prev_from = -1;
	char set[NODEMASK_STR_MAX];

	nodemask_format(ch->nodes, set, sizeof(set));
	memcpy(mbs, vm->resident_mib, (size_t)nr * sizeof(*mbs));
	for (int n = 0; n < nr; n++)
		if (!nodemask_test(ch->nodes, n))
			moved += mbs[n];
	for (int v = 0; v < vm->nr_vcpus; v++) {
		struct plan_pin *pin = plan_add_pin(plan, vm->id, v, ch->nodes);

		plan_reason_set(&pin->why, "numad-bind", (double)moved,
		                "nodes %s, start %d, magnitude %llu, %llu MiB to pull in", set,
		                ch->start_node, (unsigned long long)ch->totmag,
		                (unsigned long long)moved);
	}
	for (;;) {
		int to = -1, from = -1;
		struct plan_mem_move *mv;

		for (int n = 0; n < nr; n++) {
			if (nodemask_test(ch->nodes, n)) {
				if (to < 0 || mbs[to] >= mbs[n])
					to = n;
			} else if (from < 0 || mbs[from] < mbs[n]) {
				from = n;
			}
		}
		if (from < 0 || to < 0 || mbs[from] == 0 || from == prev_from)
			break;
		mv = plan_add_move(plan, vm->id, from, to, mbs[from]);
		plan_reason_set(&mv->why, "numad-bind", (double)mbs[from],
		                "migrate_pages node %d -> %d for nodes %s, magnitude %llu", from,
		                to, set, (unsigned long long)ch->totmag);
		mbs[to] += mbs[from];
		mbs[from] = 0;
		prev_from = from;
	}
	return moved;
}

/* After a bind: busy while the synchronous migrate_pages() runs, else the bind is done. */
static void
numad_after_bind(struct numad_state *st, struct numad_proc *p, uint64_t moved, double now_s)
{
	if (moved > 0) {
		st->busy = true;
		st->busy_vm_id = p->vm_id;
	} else {
		p->bound = true;
		p->bind_s = now_s;
	}
}

/* Evaluate one candidate; returns true when it was rebound. */
static bool
numad_evaluate(struct numad_state *st, const struct snapshot *snap, struct numad_proc *p,
               bool assume_enough_cpus, struct plan *plan, uint64_t *moved)
{
	const struct snap_vm *vm = &snap->vms[p->vm_idx];
	struct numad_proc_usage usage = {
	    .node_mbs = vm->resident_mib,
	    .mbs_used = p->mbs_used,
	    .cpus_used_c = p->cpus_used_c,
	    .node_list = p->node_list,
	};
	struct numad_choice ch;
	int64_t mb_req, cpu_req_c, nonlocal = 0;

	numad_proc_request(st, p, &mb_req, &cpu_req_c);
	if (p->bound && p->bind_s + NUMAD_REEVAL_DELAY_S > snap->now_s &&
	    !numad_cooldown_bypass(st, p, cpu_req_c, mb_req))
		return false;
	if (numad_pick_nodes(snap, st->nodes, &usage, mb_req, cpu_req_c, assume_enough_cpus, &ch) !=
	        0 ||
	    ch.nodes == 0)
		return false;
	for (int n = 0; n < snap->nr_nodes; n++)
		if (!nodemask_test(ch.nodes, n))
			nonlocal += (int64_t)vm->resident_mib[n];
	if (100 * nonlocal / p->mbs_used <= 100 - NUMAD_TARGET_LOCAL_PCT && p->bound &&
	    ch.nodes == p->node_list) {
		p->bind_s = snap->now_s; /* numad refreshes the stamp of a process in place */
		return false;
	}
	p->node_list = ch.nodes;
	*moved = numad_bind(snap, vm, &ch, plan);
	numad_after_bind(st, p, *moved, snap->now_s);
	return true;
}

/* One numad loop; returns the interval until the next one, or 0 while busy migrating. */
static int
numad_loop(struct numad_state *st, const struct snapshot *snap, struct plan *plan, uint64_t *moved)
{
	int64_t sum_cpus_c;
	int nr;

	numad_stats_update(st, snap);
	if (snap->nr_nodes < 2)
		return NUMAD_MAX_INTERVAL_S;
	numad_procs_update(st, snap);
	if (st->pindex_size < st->table_size) {
		st->pindex_size = st->table_size;
		return NUMAD_RESIZE_INTERVAL_S;
	}
	nr = numad_candidates(st, snap, &sum_cpus_c);
	for (int i = 0; i < nr; i++) {
		bool enough = sum_cpus_c <= st->stats.sum_cpus_total_c;

		if (numad_evaluate(st, snap, st->cand[i], enough, plan, moved))
			return st->busy ? 0 : NUMAD_MIN_INTERVAL_S;
	}
	return NUMAD_MAX_INTERVAL_S;
}

/* Seconds the migration engine needs for pending MiB, at least one tick. */
static double
numad_migrate_wait_s(uint64_t pending_mib)
{
	double t = (double)pending_mib / SIM_MIGRATE_MIB_S;

	return t > SIM_TICK_S ? t : SIM_TICK_S;
}

/*
 * numad is inside migrate_pages() until the VM's queued memory has moved: it does nothing
 * else meanwhile.  When the last page has moved, the bind completes (its time stamp is
 * taken then) and numad sleeps min_interval.
 */
static void
numad_busy_check(struct numad_state *st, const struct snapshot *snap, struct plan *plan)
{
	const struct snap_vm *vm = NULL;
	struct numad_proc *p;

	for (int i = 0; i < snap->nr_vms && vm == NULL; i++)
		if (snap->vms[i].id == st->busy_vm_id)
			vm = &snap->vms[i];
	if (vm != NULL && vm->mig_pending_mib > 0) {
		plan->next_call_s = numad_migrate_wait_s(vm->mig_pending_mib);
		return;
	}
	st->busy = false;
	p = numad_proc_find(st, st->busy_vm_id, 0);
	if (p != NULL) {
		p->bound = true;
		p->bind_s = snap->now_s;
	}
	st->next_due_s = snap->now_s + NUMAD_MIN_INTERVAL_S;
	plan->next_call_s = NUMAD_MIN_INTERVAL_S;
}

static int
numad_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct numad_state *st = state;
	uint64_t moved = 0;
	int interval;

	if (snap->nr_nodes < 1 || snap->nr_nodes > UTIL_MAX_NODES)
		return -EINVAL;
	if (st->busy) {
		numad_busy_check(st, snap, plan);
		return 0;
	}
	if (snap->now_s + NUMAD_CLOCK_SLACK_S < st->next_due_s) {
		/* Called early (a VM arrived): numad keeps its own schedule. */
		plan->next_call_s = st->next_due_s - snap->now_s;
		return 0;
	}
	interval = numad_loop(st, snap, plan, &moved);
	if (st->busy) {
		plan->next_call_s = numad_migrate_wait_s(moved);
		return 0;
	}
	st->next_due_s = snap->now_s + interval;
	plan->next_call_s = interval;
	return 0;
}

const struct balancer_ops peer_numad_ops = {
    .name = "numad",
    .description = "numad 20150602: every 5-15 s rebinds one busy process to the nodes that fit "
                   "it and pulls its memory over",
    .host_flags = 0,
    .default_scan_mib_s = 0,
    .create = numad_create,
    .decide = numad_decide,
    .destroy = numad_destroy,
};

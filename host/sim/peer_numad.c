/*
 * peer_numad.c - a model of numad (Red Hat's user-space NUMA daemon, version 20150602) as a
 * balancer, and its node choice, which the `static` peer reuses for `numad -w` advice.
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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/peers.h"
#include "host/sim/sim.h"

/* ---- numad's constants (numad.c 20150602, defaults of its command-line options) ------- */

#define NUMAD_MIN_INTERVAL_S 5  /* -i MIN: loop interval after a rebind */
#define NUMAD_MAX_INTERVAL_S 15 /* -i MAX: loop interval when nothing moved */
/* manage_loads() returns min_interval / 2 (integer: 2 s) whenever its index was resized. */
#define NUMAD_RESIZE_INTERVAL_S (NUMAD_MIN_INTERVAL_S / 2)
#define NUMAD_CPU_THRESHOLD_C   50   /* CPU_THRESHOLD: candidates use > 0.50 CPU */
#define NUMAD_MEM_THRESHOLD_MB  300  /* MEMORY_THRESHOLD: candidates have RSS > 300 MB */
#define NUMAD_TARGET_UTIL_PCT   85   /* -u: size requests for 85 % utilisation */
#define NUMAD_TARGET_LOCAL_PCT  90   /* -m: memory locality that counts as "in place" */
#define NUMAD_RING_SAMPLES      8    /* RING_BUF_SIZE: CPU use = max of the last 8 samples */
#define NUMAD_REEVAL_DELAY_S    300  /* MIN_DELAY_FOR_REEVALUATION: cool-down after a bind */
#define NUMAD_PREBOUND_AGE_S    1800 /* bound before numad saw it: "bound 30 minutes ago" */
#define NUMAD_MBS_MARGIN        100  /* MBS_MARGIN: MB left free on each node of the walk */
#define NUMAD_CPUS_MARGIN_C     0    /* CPUS_MARGIN */
#define NUMAD_HASH_MIN_SIZE     16   /* MIN_PROCESS_HASH_TABLE_SIZE: admission cap is size/3 */
#define NUMAD_ONE_HUNDRED       100  /* ONE_HUNDRED: CPU unit scaling */
/* combined_value_of_weighted_resources(): weights of needed and excess memory and CPU. */
#define NUMAD_W_NEED_MEM   10
#define NUMAD_W_EXCESS_MEM 4
#define NUMAD_W_NEED_CPU   6
#define NUMAD_W_EXCESS_CPU 1

/* ---- model constants (not numad's) -------------------------------------------------- */

/* Tolerance when comparing the sim clock with numad's own schedule (s): half a sim tick. */
#define NUMAD_CLOCK_SLACK_S (SIM_TICK_S / 2)
/* Guard against float error when turning a CPU fraction into numad's integer hundredths. */
#define NUMAD_CPU_EPS 1e-9

/* ---- node choice -------------------------------------------------------------------- */

static uint64_t
numad_all_nodes(int nr_nodes)
{
	return nr_nodes >= 64 ? NODEMASK_ALL : ((uint64_t)1 << nr_nodes) - 1;
}

static int64_t
numad_cpus_to_c(double cpus)
{
	return (int64_t)floor(cpus * NUMAD_ONE_HUNDRED + NUMAD_CPU_EPS);
}

/* A VM's RSS (MB) and CPU use (centi-CPUs), as numad reads them for its QEMU process. */
static int64_t
numad_vm_rss(const struct snapshot *snap, const struct snap_vm *vm)
{
	int64_t rss = 0;

	for (int n = 0; n < snap->nr_nodes; n++)
		rss += (int64_t)vm->resident_mib[n];
	return rss;
}

static int64_t
numad_vm_cpus_c(const struct snap_vm *vm)
{
	double cpus = 0;

	for (int v = 0; v < vm->nr_vcpus; v++)
		cpus += vm->vcpus[v].cpu_use;
	return numad_cpus_to_c(cpus);
}

uint64_t
numad_node_magnitude(int64_t req_mbs, int64_t req_cpus_c, int64_t free_mbs, int64_t free_cpus_c)
{
	/*
	 * numad never lets excess go negative: when free <= request, needed = free and
	 * excess = 0.  A negative free (numad's unsigned wrap, impossible here) counts as 0.
	 */
	int64_t need_m = free_mbs > req_mbs ? req_mbs : free_mbs;
	int64_t extra_m = free_mbs > req_mbs ? free_mbs - req_mbs : 0;
	int64_t need_c = free_cpus_c > req_cpus_c ? req_cpus_c : free_cpus_c;
	int64_t extra_c = free_cpus_c > req_cpus_c ? free_cpus_c - req_cpus_c : 0;
	int64_t mem_factor = need_m * NUMAD_W_NEED_MEM + extra_m * NUMAD_W_EXCESS_MEM;
	int64_t cpu_factor = need_c * NUMAD_W_NEED_CPU + extra_c * NUMAD_W_EXCESS_CPU;

	if (mem_factor < 0 || cpu_factor < 0)
		return 0;
	return (uint64_t)mem_factor * (uint64_t)cpu_factor;
}

void
numad_nodes_measure(const struct snapshot *snap, struct numad_node *nodes)
{
	double busy[UTIL_MAX_NODES] = {0};

	for (int i = 0; i < snap->nr_vms; i++)
		for (int v = 0; v < snap->vms[i].nr_vcpus; v++)
			if (snap->vms[i].vcpus[v].node >= 0 &&
			    snap->vms[i].vcpus[v].node < snap->nr_nodes)
				busy[snap->vms[i].vcpus[v].node] += snap->vms[i].vcpus[v].cpu_use;
	for (int n = 0; n < snap->nr_nodes; n++) {
		nodes[n].mbs_total = (int64_t)snap->nodes[n].mem_total_mib;
		nodes[n].mbs_free = (int64_t)snap->nodes[n].mem_free_mib;
		nodes[n].cpus_total_c = (int64_t)snap->nodes[n].nr_cpus * NUMAD_ONE_HUNDRED;
		nodes[n].cpus_free_c = numad_cpus_to_c(snap->nodes[n].nr_cpus - busy[n]);
		if (nodes[n].cpus_free_c < 0)
			nodes[n].cpus_free_c = 0;
		if (nodes[n].cpus_free_c > nodes[n].cpus_total_c)
			nodes[n].cpus_free_c = nodes[n].cpus_total_c;
	}
}

/*
 * Copy the node data and add the process's own usage back (numad's tmp_node[]).  Unbound:
 * its memory there x 17/16 and its CPU in proportion to that memory.  Bound to a subset:
 * its memory x 5/4 everywhere, and on its nodes the free CPU becomes the average free CPU of
 * its nodes plus its own use.  Returns numad's sum_of_node_CPUs_free (before clamping).
 */
static int64_t
numad_nodes_add_back(int nr, const struct numad_node *nodes, const struct numad_proc_usage *proc,
                     struct numad_node *tmp)
{
	int64_t sum_free_c = 0, avg_c = 0;
	bool unbound = true;

	memcpy(tmp, nodes, (size_t)nr * sizeof(*tmp));
	if (proc != NULL) {
		uint64_t list = proc->node_list & numad_all_nodes(nr);

		unbound = nodemask_weight(list) >= nr;
		avg_c = proc->cpus_used_c;
		for (int n = 0; n < nr; n++)
			if (nodemask_test(list, n))
				avg_c += nodes[n].cpus_free_c;
		if (!unbound && list != 0)
			avg_c /= nodemask_weight(list);
	}
	for (int n = 0; n < nr && proc != NULL; n++) {
		int64_t mbs = (int64_t)proc->node_mbs[n];

		if (unbound) {
			tmp[n].mbs_free += mbs * 17 / 16;
			if (proc->mbs_used > 0)
				tmp[n].cpus_free_c += proc->cpus_used_c * mbs / proc->mbs_used;
		} else {
			tmp[n].mbs_free += mbs * 5 / 4;
			if (nodemask_test(proc->node_list, n))
				tmp[n].cpus_free_c = avg_c;
		}
		sum_free_c += tmp[n].cpus_free_c;
		if (tmp[n].cpus_free_c > tmp[n].cpus_total_c)
			tmp[n].cpus_free_c = tmp[n].cpus_total_c;
		if (tmp[n].mbs_free > tmp[n].mbs_total)
			tmp[n].mbs_free = tmp[n].mbs_total;
	}
	for (int n = 0; n < nr; n++)
		if (tmp[n].cpus_free_c < 1) /* numad: "1/100th CPU minimum" */
			tmp[n].cpus_free_c = 1;
	return sum_free_c;
}

/*
 * Order all nodes by distance from start, ties by larger magnitude: numad's selection sort,
 * swaps included, so full ties end in the same order numad would produce.
 */
static void
numad_order_from(const struct snapshot *snap, const uint64_t *mag, int start, int *order)
{
	int nr = snap->nr_nodes;

	for (int n = 0; n < nr; n++)
		order[n] = n;
	for (int i = 0; i < nr; i++) {
		int best = i, tmp;

		for (int k = i + 1; k < nr; k++) {
			int dk = snapshot_distance(snap, order[k], start);
			int db = snapshot_distance(snap, order[best], start);

			if (db > dk || (db == dk && mag[order[best]] < mag[order[k]]))
				best = k;
		}
		tmp = order[i];
		order[i] = order[best];
		order[best] = tmp;
	}
}

/* Minimum node count, every node assumed the size of node 0; at most all nodes. */
static int
numad_min_nodes(const struct numad_node *nodes, int nr, int64_t req_mbs, int64_t cpus_c)
{
	int mem_nodes = nr, cpu_nodes = nr, k;

	if (nodes[0].mbs_total > 0)
		mem_nodes = (int)ceil((double)req_mbs / (double)nodes[0].mbs_total);
	if (nodes[0].cpus_total_c > 0)
		cpu_nodes = (int)ceil((double)cpus_c / (double)nodes[0].cpus_total_c);
	k = mem_nodes > cpu_nodes ? mem_nodes : cpu_nodes;
	return k > nr ? nr : k;
}

/* The start node whose nearest k nodes have the largest sum of magnitude / distance^2. */
static int
numad_best_start(const struct snapshot *snap, const uint64_t *mag, int k, uint64_t *totmag_out)
{
	int order[UTIL_MAX_NODES], best = 0;
	uint64_t best_tot = 0;

	for (int s = 0; s < snap->nr_nodes; s++) {
		uint64_t tot = 0;

		numad_order_from(snap, mag, s, order);
		for (int j = 0; j < k; j++) {
			uint64_t d = (uint64_t)snapshot_distance(snap, order[j], s);

			tot += d > 0 ? mag[order[j]] / (d * d) : mag[order[j]];
		}
		if (s == 0 || best_tot < tot) { /* strict: ties keep the lower index */
			best = s;
			best_tot = tot;
		}
	}
	*totmag_out = best_tot;
	return best;
}

/*
 * Walk out from the start by distance, adding nodes until the minimum count is reached and
 * memory (keeping NUMAD_MBS_MARGIN MB per node) and CPU beyond the flex are covered, or all
 * nodes are taken.  Like numad, a node with less than the margin free makes mbs grow.
 */
static void
numad_walk(int nr, struct numad_node *tmp, const int *order, int64_t mbs, int64_t cpus_c,
           int64_t flex_c, bool assume_enough_cpus, struct numad_choice *out)
{
	int left = out->min_nodes;
	uint64_t all = numad_all_nodes(nr);

	for (int i = 0; i < nr && (left > 0 || mbs > 0 || (cpus_c > flex_c && !assume_enough_cpus));
	     i++) {
		struct numad_node *nd = &tmp[order[i]];
		int64_t take_m, take_c;

		out->nodes |= nodemask_of(order[i]);
		left--;
		if (out->nodes == all)
			break;
		take_m =
		    nd->mbs_free >= mbs + NUMAD_MBS_MARGIN ? mbs : nd->mbs_free - NUMAD_MBS_MARGIN;
		take_c = nd->cpus_free_c >= cpus_c + NUMAD_CPUS_MARGIN_C
		             ? cpus_c
		             : nd->cpus_free_c - NUMAD_CPUS_MARGIN_C;
		nd->mbs_free -= take_m;
		nd->cpus_free_c -= take_c;
		mbs -= take_m;
		cpus_c -= take_c;
		out->take_mbs[order[i]] = take_m;
		out->take_cpus_c[order[i]] = take_c;
	}
}

int
numad_pick_nodes(const struct snapshot *snap, const struct numad_node *nodes,
                 const struct numad_proc_usage *proc, int64_t req_mbs, int64_t req_cpus_c,
                 bool assume_enough_cpus, struct numad_choice *out)
{
	struct numad_node tmp[UTIL_MAX_NODES];
	uint64_t mag[UTIL_MAX_NODES];
	int order[UTIL_MAX_NODES], nr = snap->nr_nodes;
	int64_t sum_free_c, flex_c = 0;

	if (nr < 1 || nr > UTIL_MAX_NODES)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	sum_free_c = numad_nodes_add_back(nr, nodes, proc, tmp);
	for (int n = 0; n < nr; n++)
		mag[n] =
		    numad_node_magnitude(req_mbs, req_cpus_c, tmp[n].mbs_free, tmp[n].cpus_free_c);
	if (proc != NULL) {
		/* CPUs oversubscribed: place by memory.  Flex: half the utilisation margin. */
		if (req_cpus_c > sum_free_c)
			assume_enough_cpus = true;
		flex_c = (100 - NUMAD_TARGET_UTIL_PCT) * nodes[0].cpus_total_c / 200;
	} else {
		assume_enough_cpus = false; /* advice errs on the side of too many resources */
	}
	out->min_nodes = numad_min_nodes(nodes, nr, req_mbs, req_cpus_c - flex_c);
	out->start_node = numad_best_start(snap, mag, out->min_nodes, &out->totmag);
	numad_order_from(snap, mag, out->start_node, order);
	numad_walk(nr, tmp, order, req_mbs, req_cpus_c, flex_c, assume_enough_cpus, out);
	if (proc == NULL && out->nodes == 0) /* advice always names at least one node */
		out->nodes = nodemask_of(0);
	return 0;
}

int
numad_choose_nodes(const struct snapshot *snap, int vm_idx, double req_mem_mib, double req_cpus,
                   uint64_t *nodes_out)
{
	struct numad_node nodes[UTIL_MAX_NODES];
	struct numad_proc_usage usage, *proc = NULL;
	struct numad_choice choice;
	int rc;

	if (snap->nr_nodes < 1 || snap->nr_nodes > UTIL_MAX_NODES || vm_idx >= snap->nr_vms)
		return -EINVAL;
	numad_nodes_measure(snap, nodes);
	if (vm_idx >= 0) {
		const struct snap_vm *vm = &snap->vms[vm_idx];

		usage.node_mbs = vm->resident_mib;
		usage.mbs_used = numad_vm_rss(snap, vm);
		usage.cpus_used_c = numad_vm_cpus_c(vm);
		usage.node_list = 0;
		for (int v = 0; v < vm->nr_vcpus; v++)
			usage.node_list |= vm->vcpus[v].allowed_nodes;
		proc = &usage;
	}
	rc = numad_pick_nodes(snap, nodes, proc, (int64_t)req_mem_mib, numad_cpus_to_c(req_cpus),
	                      true, &choice);
	if (rc == 0)
		*nodes_out = choice.nodes;
	return rc;
}

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
	char set[64];

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

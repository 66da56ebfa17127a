/*
 * residency.h - where a VM's guest RAM sits, per node, without walking its page tables every
 * round (issue 14).  Per VM and round the cheapest source that answers gives the figure, with
 * its precision (struct snap_vm's resident_age_s and resident_err_mib):
 *
 *   numa_maps  the full walk of /proc/PID/numa_maps (discover.c): exact, but it costs 4-7 ms
 *              per GiB of 4 KiB pages (0.07 ms with THP) and holds the guest's mmap lock for
 *              all of it.  Only when due (linux_resid_walk_due): a VM seen for the first time
 *              (discovery needs the mappings; not one whose RAM is located without them and
 *              whose walk would hold the lock over LINUX_RESIDENCY_WALK_HOLD_MS, while the
 *              sampler answers), one with vnumad's own moves running or just done (at most
 *              every LINUX_RESIDENCY_WALK_MOVING_S), else every LINUX_RESIDENCY_WALK_S, and
 *              host-wide within LINUX_RESIDENCY_WALK_BUDGET_MS_S.
 *   cgroup     the VM's cgroup v2 memory.numa_stat (cgroup.h), anon + shmem per node, when
 *              the cgroup holds this QEMU process alone and a walk has calibrated it: the
 *              cgroup also counts QEMU's own heap, TCG buffers and the like, so the
 *              estimate is numa_stat[n] less that non-guest part per node as of the last
 *              walk, and the bound is the larger of the non-guest total then and the
 *              cgroup's total now less guest RAM then (it holds while guest RAM does not
 *              shrink between walks).  Only while the cgroup's total stays within
 *              LINUX_RESIDENCY_CGROUP_DRIFT_PERMILLE of the walk's, and while that bound is
 *              at most LINUX_RESIDENCY_CGROUP_ERR_PERMILLE of guest RAM.  Not for hugetlbfs
 *              guest RAM (in neither line).
 *   sampled    move_pages(2) without nodes (query mode) on LINUX_RESIDENCY_SAMPLE_PAGES
 *              pages of the located guest RAM, stratified (one page at random in each of K
 *              equal strata, seeded by pid and round).  A page's status is its node; -ENOENT
 *              and -EFAULT are "not resident" unless /proc/PID/pagemap says the page is
 *              present (a page the kernel's NUMA scanner made PROT_NONE reads so, actuate.h):
 *              then its node is unknown.  Estimate: node n holds c_n/K of the RAM's bytes;
 *              the bound is, per node, the farther end of the Wilson score interval at
 *              z = LINUX_RESIDENCY_SAMPLE_Z around c_n/K (stratified sampling has at most
 *              the binomial variance), plus the unknown pages' share, times the RAM's size.
 *   adjusted   none of those this round (or a sample refused for holding over
 *              LINUX_RESIDENCY_SAMPLE_UNKNOWN_PERMILLE pages of unknown node): the last figure,
 *              moved by vnumad's own completed
 *              moves since (bytes per source and target node, as the migrator counted them);
 *              its age grows, its bound is that of the figure it started from plus what the
 *              kernel's own balancing migrated of the VM since (numa_pages_migrated of its
 *              vCPU threads: from where to where is not known).
 *
 * Everything here but linux_resid_query_live is pure or reads under a root directory, so it
 * runs on fixture trees.  The simulator runs linux_resid_update too (host/sim/sim_resid.c),
 * with a sampler of its own (linux_resid_input.draw) and the cgroup figure given, so that
 * vnumad senses there what it would sense here.
 */
#ifndef VNUMAD_HOST_LINUX_RESIDENCY_H
#define VNUMAD_HOST_LINUX_RESIDENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/linux/cgroup.h"
#include "host/linux/ram_layout.h"

/* Node ids a residency figure covers (as the migrator's 64-bit node masks). */
#define LINUX_RESID_MAX_NODES LINUX_CGROUP_MAX_NODES

/*
 * Seconds between two full walks of one VM when nothing else calls for one.  Default 60: the
 * walk refreshes what only numa_maps shows (an mbind policy, hugetlbfs backing, guest RAM
 * found by size) and recalibrates the cgroup source, at 1/60 of the former cost; the host-wide
 * budget below may stretch it.
 */
#define LINUX_RESIDENCY_WALK_S 60.0
/*
 * Seconds between two walks of a VM while vnumad moves its memory or has just done so (the
 * moves' own counts adjust the figure in between), within the budget below.  Default 2, the
 * rebalance period: the moves skip pages they cannot see (absent, or protected and then
 * unprotected too late), so the adjusted figure can show a node emptied that is not, and at
 * 10 s the 4-node system test's VMs converged too late (24 MiB of 320 left after 150 s).
 */
#define LINUX_RESIDENCY_WALK_MOVING_S 2.0
/*
 * A walk that takes longer than this holds the guest's mmap lock longer than this, ms: 5
 * (issue 14's "no VM's mmap lock held by vnumad for more than 5 ms in any second").  Such a
 * VM (more than ~1 GiB of 4 KiB pages) is not walked again while the cgroup or the sampler
 * answers for it, for moves or on the minute; only when neither does (a sample refused for
 * unknown pages, no RAM located), within the budget below.
 */
#define LINUX_RESIDENCY_WALK_HOLD_MS 5.0
/*
 * What a walk is expected to cost, ms per GiB of resident guest RAM, before one was timed: 16
 * in 4 KiB pages and 0.08 in transparent huge pages.  Measured here: 5-7 and 0.07-0.08 ms of
 * CPU on an idle machine once, then 14.0-14.6 ms per GiB of 4 KiB pages on another idle day
 * (bench_observe: 7.3 ms for 512 MiB, 43 for 3 GiB, 169 for 12 GiB), when the 7 it was then
 * let 512-MiB VMs be walked for 9 ms at first sight; 16 is above every figure seen, so a
 * VM is skipped rather than walked when in doubt (docs/linux-host.md).  A VM seen for the first
 * time whose walk is expected to hold the lock over LINUX_RESIDENCY_WALK_HOLD_MS is not walked when
 * its guest RAM is located without it and the sampler can answer (linux_resid_first_walk_skip).
 */
#define LINUX_RESIDENCY_WALK_MS_PER_GIB_4K  16.0
#define LINUX_RESIDENCY_WALK_MS_PER_GIB_THP 0.08
/*
 * Host-wide walk time per second of wall clock, ms (a token bucket; a due walk waits for the
 * bucket to hold its cost).  Default 2 ms/s, 0.2 % of a CPU: 64 VMs of 16 GiB with THP (~1.2
 * ms each, every LINUX_RESIDENCY_WALK_S) take 1.3 ms/s; with 4 KiB pages (~100 ms each) not
 * walked while the sampler answers.  A VM seen for the first time is walked whatever the
 * bucket holds (and the bucket goes into debt), unless its walk is skipped.
 */
#define LINUX_RESIDENCY_WALK_BUDGET_MS_S 2.0
/*
 * Most the bucket holds, ms.  Default 250: a walk costlier than that (a VM of over ~40 GiB
 * with 4 KiB pages) runs when the bucket is full and leaves it in debt.
 */
#define LINUX_RESIDENCY_WALK_BURST_MS 250.0
/*
 * Guest pages one sample looks up per VM (K).  Default 512: one query of 512 pages spread
 * over the guest took 25-80 us with THP and 130-420 us with 4 KiB pages (each page then in
 * a page-table page of its own, not in cache) on a loaded 2-CPU test machine, so 64 VMs
 * sampled every LINUX_RESIDENCY_SAMPLE_S cost 0.1 % (THP) to 0.9 % (4 KiB) of a CPU; the
 * kernel takes the mmap lock per 16 pages (DO_PAGES_STAT_CHUNK_NR), never for the whole
 * query.  Error per node at most ~6.6 % of guest RAM (p = 1/2), ~1.7 % on
 * a node that holds none of it.
 */
#define LINUX_RESIDENCY_SAMPLE_PAGES 512
/*
 * Seconds between two samples of one VM: 2, the engine's rebalance period (a round in between
 * keeps the last figure, one second older).  Sampling every round would double the cost
 * above; the slack, half a round, keeps a sample due on a round that came a little early.
 */
#define LINUX_RESIDENCY_SAMPLE_S       2.0
#define LINUX_RESIDENCY_SAMPLE_SLACK_S 0.5
/*
 * Most pages of a sample whose node is unknown (present, but unreadable to move_pages: made
 * PROT_NONE by the kernel's NUMA scanner), permille: 50.  Above it the sample is not used and
 * the VM's figure is the adjusted last one (its walks then come every LINUX_RESIDENCY_WALK_S).
 * Such pages are not spread over the nodes like the others: the ones that stay protected are
 * the ones the guest does not touch, and so not migrated on fault; on the emulated 2-node host
 * the memory left on the wrong node was exactly those, and a sample that shared them out like
 * the rest showed nothing to move.
 */
#define LINUX_RESIDENCY_SAMPLE_UNKNOWN_PERMILLE 50
/* Normal quantile of the sampled bound: 3, about 99.7 % two-sided per node and round. */
#define LINUX_RESIDENCY_SAMPLE_Z 3.0
/*
 * How far the cgroup's total may drift from what the last walk calibrated (guest RAM plus the
 * non-guest part then) before the cgroup is no longer used until the next walk, permille of
 * that total: 16, and at least LINUX_RESIDENCY_CGROUP_DRIFT_MIN_KIB (2 MiB, the engine's
 * smallest move).  Which node took a grown or shrunk non-guest part is not known, and the
 * figure of guest RAM would carry it: on the emulated 2-node host, a 64 MiB TCG guest's QEMU
 * grew by 15 MiB after the walk, the figure showed 64 MiB on the home node and 15 MiB beside
 * it when 8 MiB of guest RAM was left there, and the engine, its home full, moved nothing
 * more.  A drifted cgroup also brings the next walk forward (as vnumad's own moves do).
 */
#define LINUX_RESIDENCY_CGROUP_DRIFT_PERMILLE 16
#define LINUX_RESIDENCY_CGROUP_DRIFT_MIN_KIB  2048
/*
 * Widest bound a cgroup figure may carry and still be used, permille of guest RAM: 20.  The
 * bound is QEMU's own memory in the cgroup (heap, TCG buffers), and where that part sits can
 * change without the total changing (the kernel's balancing moves it too); a figure whose
 * bound dwarfs the engine's smallest move hides what is left to move.  On the emulated 2-node
 * libvirt host a 64 MiB TCG guest's QEMU held 36 MiB of its own: the figure showed 1 MiB on
 * the node the guest was leaving when 8 MiB of guest RAM was still there, and nothing more
 * moved.  A real guest of 16 GiB beside ~200 MiB of QEMU is at 12.  A VM whose cgroup figure
 * is too wide is sampled instead (or keeps its adjusted figure and is walked on schedule).
 */
#define LINUX_RESIDENCY_CGROUP_ERR_PERMILLE 20
/* Seconds between two looks at a VM's cgroup (is it there, alone?).  Default 30. */
#define LINUX_RESIDENCY_CGROUP_RECHECK_S 30.0

/* A page's status in a sample: its node id (>= 0), or one of these. */
#define LINUX_RESID_PAGE_ABSENT  (-1) /* not resident (never touched, swapped out) */
#define LINUX_RESID_PAGE_UNKNOWN (-2) /* resident, node not known (made PROT_NONE) */

enum linux_resid_source {
	LINUX_RESID_NONE = 0, /* nothing measured yet */
	LINUX_RESID_NUMA_MAPS,
	LINUX_RESID_CGROUP,
	LINUX_RESID_SAMPLED,
	LINUX_RESID_ADJUSTED,
};

/* "numa_maps", "cgroup", "sampled", "adjusted", or NULL for LINUX_RESID_NONE. */
const char *linux_resid_source_name(enum linux_resid_source source);

/*
 * Guest vNUMA cells a per-cell figure covers at most: 8.  A VM with more has a per-VM figure
 * only (the engine then plans its memory per VM).
 */
#define LINUX_RESID_MAX_CELLS 8

/* A residency figure: KiB per OS node id, and the bound on each node's error. */
struct linux_resid_figure {
	int nr_nodes; /* entries used: highest node id + 1 */
	uint64_t kib[LINUX_RESID_MAX_NODES];
	uint64_t err_kib;
};

/*
 * Per guest cell: KiB of the cell's own RAM per OS node id, and what surely sits there (the low
 * end of its interval; nr 0: none).
 * Only the sampler measures it (each sampled page lies in one cell); vnumad's own moves of a
 * cell's range adjust it until the next sample.  A VM-wide figure cannot tell two whole cells
 * from two cells that each hold the other's share of a node: on the emulated 4-node host a
 * two-cell VM ended with 10 % of cell 0 on cell 1's node and 12.5 % of cell 1 on cell 0's,
 * the VM's total per node right, and nothing moved.
 */
struct linux_resid_cells {
	int nr;
	int nr_nodes;     /* entries used per cell: highest node id + 1 */
	double sampled_s; /* when the sample it comes from was taken */
	uint64_t kib[LINUX_RESID_MAX_CELLS][LINUX_RESID_MAX_NODES];
	uint64_t sure_kib[LINUX_RESID_MAX_CELLS][LINUX_RESID_MAX_NODES];
};

/* ---- sampling (pure) ----------------------------------------------------------------------- */

/*
 * The K page addresses of a stratified sample of ram[0..nr) (page_bytes pages, each range's
 * start rounded down to a page): the ranges' P pages end to end cut into k strata
 * [floor(i P / k), floor((i + 1) P / k)), one page drawn uniformly in each from a PRNG seeded
 * with seed.  When P <= k every page is taken once.  Returns how many addresses were written
 * (at most k).
 */
int linux_resid_sample_plan(const struct linux_ram_range *ram, int nr, uint64_t page_bytes, int k,
                            uint64_t seed, uint64_t *addrs);

/*
 * The estimate from status[0..k) (LINUX_RESID_PAGE_* or node ids < LINUX_RESID_MAX_NODES) of a
 * sample of ram_bytes of guest RAM, over nr_nodes nodes at least: see the file comment.  exact
 * (every page was looked at) drops the sampling part of the bound.
 */
void linux_resid_sample_estimate(const int *status, int k, bool exact, uint64_t ram_bytes,
                                 int nr_nodes, double z, struct linux_resid_figure *out);
/*
 * The per-cell figure from the sample addrs[0..k) of the guest RAM ranges ram[0..nr_ram) (end
 * to end: guest RAM offsets) with status[0..k): cells[0..nr_cells) are the cells' ranges of
 * guest RAM offsets (start, len in bytes), at most LINUX_RESID_MAX_CELLS.  Per cell c with k_c
 * of the pages and n_c of them on node n: n_c / k_c of the cell's bytes, and surely the low end
 * of the Wilson interval at z around n_c / k_c of them (n_c / k_c itself when exact: the sample
 * took every page of guest RAM once; a page of unknown node may be on n or not, so it adds to
 * neither).  A page
 * in no cell is not counted; a cell no page fell in has 0, surely 0, everywhere.
 */
void linux_resid_cells_estimate(const int *status, const uint64_t *addrs, int k, bool exact,
                                const struct linux_ram_range *ram, int nr_ram, uint64_t page_bytes,
                                const struct linux_ram_range *cells, int nr_cells, double z,
                                struct linux_resid_cells *out);
/* How many of status[0..k) are LINUX_RESID_PAGE_UNKNOWN (or not a node we keep). */
int linux_resid_sample_unknown(const int *status, int k);

/* The low end, as a share, of the Wilson score interval at z around c/k (0 when c is 0). */
double linux_resid_wilson_low(uint64_t c, uint64_t k, double z);
/* The largest distance, as a share, between p_hat = c/k and its Wilson interval's ends at z. */
double linux_resid_wilson_dev(uint64_t c, uint64_t k, double z);

/*
 * Look up where pid's pages at addrs[0..n) are, into status[] (LINUX_RESID_PAGE_* or node id).
 * 0 or -errno.  linux_resid_query_live does it with move_pages(2) and /proc/PID/pagemap.
 */
typedef int (*linux_resid_query_fn)(void *ctx, int pid, const uint64_t *addrs, size_t n,
                                    int *status);
int linux_resid_query_live(void *ctx, int pid, const uint64_t *addrs, size_t n, int *status);

/*
 * Draw a sample of k pages of pid's guest RAM and write each one's status (as a query) into
 * status[0..k) and its address (in linux_resid_input.ram) into addrs[0..k): a sampler that
 * picks its own pages (the simulator's, host/sim/sim_resid.c), in place of a plan queried at
 * addresses.  When k is all of the RAM's pages, each page once.  0 or -errno.
 */
typedef int (*linux_resid_draw_fn)(void *ctx, int pid, int k, int *status, uint64_t *addrs);

/* ---- per VM state and the choice of source -------------------------------------------------- */

/* The host-wide walk budget (a token bucket of ms). */
struct linux_resid_budget {
	double tokens_ms;
	double at_s; /* last refill; 0: never */
};

/* Add the time since the last refill at LINUX_RESIDENCY_WALK_BUDGET_MS_S, up to the burst. */
void linux_resid_budget_refill(struct linux_resid_budget *b, double now_s);

struct linux_resid {
	enum linux_resid_source source;
	struct linux_resid_figure fig; /* the figure as of now */
	double measured_s;             /* when fig's base was measured */
	bool walked;                   /* a walk was seen */
	bool walk_skipped;             /* not walked at first sight (linux_resid_first_walk_skip) */
	double walked_s;               /* the last walk (or the skip) */
	double walk_ms;                /* its cost, ms, or the skipped one's expected cost */
	double walk_charged_ms;        /* what linux_resid_walk_due took for the coming walk */
	bool adjusted;                 /* own moves changed fig since it was measured */
	bool moved_since_walk;         /* moved since the last walk: own moves, the kernel's, or a
	                                  drifted cgroup (LINUX_RESIDENCY_CGROUP_DRIFT_PERMILLE) */
	uint64_t walk_total_kib;       /* guest RAM resident at the last walk */
	struct linux_resid_cells cells; /* per guest cell, when sampled */
	uint64_t rounds;                /* sample rounds, for the seed */
	double sampled_s;               /* the last sample taken (used or not); 0: none */
	/* The cgroup source. */
	char cg_dir[LINUX_CGROUP_PATH_MAX]; /* "" when none usable */
	double cg_checked_s;                /* 0: never looked */
	bool cg_calibrated;                 /* cg_other_kib is from a walk of this cgroup */
	uint64_t cg_other_kib[LINUX_RESID_MAX_NODES]; /* numa_stat less guest RAM at the walk */
	uint64_t cg_other_total_kib;
	/* The kernel's moves of the VM's pages (input kernel_moved_kib) at the figure's measure. */
	uint64_t kernel_base_kib;
	uint64_t kernel_added_kib; /* what of them since was added to fig.err_kib */
};

/*
 * Whether to walk r's VM this round (see the file comment); r NULL is a VM not seen yet
 * (always).  moving: vnumad has moves queued for it.  A yes takes the walk's cost from b.
 */
bool linux_resid_walk_due(struct linux_resid *r, struct linux_resid_budget *b, double now_s,
                          bool moving);

/* A walk's expected cost, ms, of this much resident guest RAM in 4 KiB pages and in THP. */
double linux_resid_walk_predict_ms(uint64_t small_kib, uint64_t huge_kib);

/*
 * At a VM's first sight (r as calloc'd): whether to skip its walk, the one whose expected cost
 * is predicted_ms, because it would hold the VM's mmap lock over LINUX_RESIDENCY_WALK_HOLD_MS
 * and another source can answer (can_sample: its guest RAM is located without numa_maps and
 * the sampler runs).  A yes marks r so that linux_resid_walk_due walks it only when nothing
 * else answers.
 */
bool linux_resid_first_walk_skip(struct linux_resid *r, double now_s, double predicted_ms,
                                 bool can_sample);

/* What one round knows about a VM, for linux_resid_update. */
struct linux_resid_input {
	const char *root; /* NULL or "/": this machine */
	int pid;
	double now_s;
	struct linux_resid_budget *budget; /* a walk's cost is settled here */
	/* This round's walk, when there was one: KiB per OS node id of guest RAM, its cost. */
	bool walked;
	const uint64_t *walk_kib;
	int walk_nr_nodes;
	double walk_ms;
	bool ram_huge; /* guest RAM on hugetlbfs: the cgroup source does not count it */
	/* Located guest RAM, for sampling; query NULL: no sampling (a fixture tree). */
	const struct linux_ram_range *ram;
	int nr_ram;
	uint64_t page_bytes;
	int sample_pages; /* K; 0: no sampling */
	linux_resid_query_fn query;
	void *query_ctx; /* for query and draw */
	/*
	 * The guest's vNUMA cells as ranges of guest RAM offsets (bytes), for the per-cell
	 * figure: sampled every LINUX_RESIDENCY_SAMPLE_S whatever gives the VM's figure, when
	 * there are 2 to LINUX_RESID_MAX_CELLS of them and query or draw samples.
	 */
	const struct linux_ram_range *cells;
	int nr_cells;
	/*
	 * A host that reads these itself (the simulator); unset on a real one.  draw, when set,
	 * takes the sample in place of a plan over ram and query (ram still gives its size).
	 * cgroup_given: the VM's cgroup figure is cgroup_kib (anon + shmem KiB per OS node id,
	 * cgroup_nr_nodes entries; NULL: the VM shares its cgroup), not read under root.
	 */
	linux_resid_draw_fn draw;
	bool cgroup_given;
	const uint64_t *cgroup_kib;
	int cgroup_nr_nodes;
	/*
	 * KiB the kernel's NUMA balancing has migrated for the VM's vCPU threads so far (the sum
	 * of numa_pages_migrated in their sched files; 0 when not known).  A figure not measured
	 * again widens its bound by what grew since it was, and the walk comes as after vnumad's
	 * own moves: the kernel moves pages beside vnumad, and nothing else here sees them.
	 */
	uint64_t kernel_moved_kib;
};

/* This round's figure for the VM into r (its source, fig, measured_s). */
void linux_resid_update(struct linux_resid *r, const struct linux_resid_input *in);

/*
 * vnumad's own completed move of bytes from OS node from (-1: not known) to node to, of guest
 * cell cell's range (-1: not one cell's): adjusts the figures until the next measurement.  A
 * move not of one cell's range drops the per-cell figure until the next sample.
 */
void linux_resid_moved(struct linux_resid *r, int cell, int from, int to, uint64_t bytes);

#endif

/*
 * actuate.c - page-location sampling and paced page migration on move_pages(2).  See
 * actuate.h; affinity.c has the thread affinity and unprotect.c the unprotect step.
 */
#define _GNU_SOURCE
#include "host/linux/actuate.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host/linux/scan.h"
#include "host/linux/sysfs.h"
#include "policy/util.h"

/* MPOL_MF_MOVE from <linux/mempolicy.h>: move pages mapped only by this process. */
#define ACT_MPOL_MF_MOVE (1 << 1)
/*
 * Transparent huge page size on x86-64 and arm64 (4 KiB base pages), bytes.  Batches of base
 * pages end on its boundaries so that a huge page is never split over two move_pages calls:
 * its head moves the whole folio, the tails report EBUSY and a second look counts them moved.
 */
#define ACT_HUGE_BYTES ((uint64_t)2 * 1024 * 1024)
/* Floor of the budget cap in bytes: one 2 MiB huge page must always fit in a tick. */
#define ACT_BUDGET_FLOOR_BYTES ((double)ACT_HUGE_BYTES)
/*
 * Most pages one moving move_pages call carries (or the batch size if larger): 8192, 32 MiB of
 * 4 KiB pages.  Batches are sampled one by one, but the pages to move are queued over several:
 * a moving call costs more than a sampling one whatever its size (6.1 runs lru_cache_disable(),
 * an expedited RCU grace period and an LRU drain on every CPU; on the emulated 2-node host
 * ~40 us median against ~7 us, with a tail into milliseconds when other CPUs are busy, and
 * more CPUs cost more).  32 MiB is a few ms of copying, so a paced tick still ends promptly.
 */
#define ACT_MOVE_MAX_PAGES 8192
/*
 * Pages of the first moving call, before the engine knows what a page costs here: 512.  Later
 * calls carry what the tick's wall-clock limit pays for at the measured cost per page, never
 * fewer than ACT_MOVE_MIN_PAGES.  A page's cost varies by orders of magnitude: on the emulated
 * host each 4 KiB page of a process with running threads took ~12 ms (6.1 flushes the TLBs of
 * the process's other CPUs once per page, and an emulated CPU answers slowly), against ~10 us
 * with no other thread running, so a fixed 8192-page call could block the daemon for minutes.
 */
#define ACT_MOVE_START_PAGES 512
#define ACT_MOVE_MIN_PAGES   16
/* Weight of the newest call in the running cost per page (exponential average). */
#define ACT_COST_WEIGHT 0.5

/* ---- page locations --------------------------------------------------------------------- */

static long
act_move_pages_sys(void *ctx, pid_t pid, unsigned long count, void **pages, const int *nodes,
                   int *status, int flags)
{
	(void)ctx;
	return syscall(SYS_move_pages, (long)pid, count, pages, nodes, status, (long)flags);
}

static int
act_unprotect_sys(void *ctx, pid_t pid, void *const *pages, size_t n, uint64_t page_bytes)
{
	(void)ctx;
	return linux_pages_unprotect(pid, pages, n, page_bytes);
}

int
linux_pages_where(pid_t pid, void *const *addrs, size_t n, int *nodes_out)
{
	if (n == 0)
		return 0;
	if (act_move_pages_sys(NULL, pid, n, (void **)addrs, NULL, nodes_out, 0) < 0)
		return -errno;
	return 0;
}

/* ---- the migrator ----------------------------------------------------------------------- */

struct act_slot {
	bool used;
	/*
	 * A huge page was seen moving whole (a tail said EBUSY and then sat on the target): the
	 * range is THP-backed, and calls are cut only on huge-page boundaries, so that a huge
	 * page is moved, charged and counted in one call.
	 */
	bool huge_seen;
	struct linux_migrate_req req;
	struct linux_migrate_status st;
};

struct act_retry {
	int id;
	uint64_t addr;
	int tries;
};

struct linux_migrator {
	double rate_bytes_s;
	int batch_pages;
	uint64_t page_bytes;
	linux_move_pages_fn fn;
	void *ctx;
	linux_unprotect_fn unprotect;
	void *uctx;
	struct act_slot *slots;
	int nr_slots;
	struct act_retry *retry;
	int nr_retry;
	bool started;
	double first_s, last_s, budget_bytes;
	uint64_t scanned;                    /* pages looked at in this tick */
	int rr_next;                         /* the request the next tick starts with */
	double tick_wall_s, tick_deadline_s; /* the limit, and this tick's end (monotonic) */
	double (*wall)(void *ctx);           /* the clock they are measured on */
	void *wctx;
	struct linux_migrator_stats stats;
	/* the sampled batch: batch_pages entries */
	void **pages;
	/* the move queue of move_cap entries (status also takes samples; rpages/ridx rechecks) */
	int move_cap;
	int move_limit;         /* pages the next moving call may carry (<= move_cap) */
	double move_s_per_page; /* running average; 0 until measured */
	void **mpages, **rpages;
	int *status, *mnodes, *mstatus, *ridx;
};

/* Whether a call or a batch of slot s may end before the page at addr. */
static bool
act_cut_ok(const struct linux_migrator *m, const struct act_slot *s, const void *addr)
{
	if ((uintptr_t)addr % ACT_HUGE_BYTES == 0)
		return true;
	return !s->huge_seen && (uint64_t)m->move_limit * m->page_bytes < ACT_HUGE_BYTES;
}

static double
act_mono_sys(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct linux_migrator *
linux_migrator_new(double rate_mib_s, int batch_pages)
{
	struct linux_migrator *m = xcalloc(1, sizeof(*m));
	long psz = sysconf(_SC_PAGESIZE);
	size_t n;

	m->rate_bytes_s = (rate_mib_s > 0 ? rate_mib_s : 1.0) * 1024 * 1024;
	m->batch_pages = batch_pages > 0 ? batch_pages : LINUX_MIGRATE_BATCH_PAGES;
	m->page_bytes = psz > 0 ? (uint64_t)psz : 4096;
	m->fn = act_move_pages_sys;
	m->unprotect = act_unprotect_sys;
	m->tick_wall_s = LINUX_MIGRATE_TICK_WALL_S;
	m->wall = act_mono_sys;
	m->slots = xcalloc(LINUX_MIGRATE_MAX_REQS, sizeof(*m->slots));
	m->retry = xcalloc(LINUX_MIGRATE_RETRY_MAX, sizeof(*m->retry));
	m->move_cap = m->batch_pages > ACT_MOVE_MAX_PAGES ? m->batch_pages : ACT_MOVE_MAX_PAGES;
	m->pages = xcalloc((size_t)m->batch_pages, sizeof(*m->pages));
	m->move_limit = m->move_cap < ACT_MOVE_START_PAGES ? m->move_cap : ACT_MOVE_START_PAGES;
	n = (size_t)m->move_cap;
	m->mpages = xcalloc(n, sizeof(*m->mpages));
	m->status = xcalloc(n, sizeof(*m->status));
	m->mnodes = xcalloc(n, sizeof(*m->mnodes));
	m->mstatus = xcalloc(n, sizeof(*m->mstatus));
	m->rpages = xcalloc(n, sizeof(*m->rpages));
	m->ridx = xcalloc(n, sizeof(*m->ridx));
	return m;
}

void
linux_migrator_free(struct linux_migrator *m)
{
	if (m == NULL)
		return;
	free(m->slots);
	free(m->retry);
	free(m->pages);
	free(m->mpages);
	free(m->status);
	free(m->mnodes);
	free(m->mstatus);
	free(m->rpages);
	free(m->ridx);
	free(m);
}

void
linux_migrator_set_syscall(struct linux_migrator *m, linux_move_pages_fn fn, void *ctx)
{
	m->fn = fn != NULL ? fn : act_move_pages_sys;
	m->ctx = fn != NULL ? ctx : NULL;
	m->unprotect = fn != NULL ? NULL : act_unprotect_sys;
	m->uctx = NULL;
}

void
linux_migrator_set_tick_wall(struct linux_migrator *m, double wall_s)
{
	m->tick_wall_s = wall_s > 0 ? wall_s : 0;
}

void
linux_migrator_set_wall_clock(struct linux_migrator *m, double (*fn)(void *ctx), void *ctx)
{
	m->wall = fn != NULL ? fn : act_mono_sys;
	m->wctx = fn != NULL ? ctx : NULL;
}

static double
act_mono_s(const struct linux_migrator *m)
{
	return m->wall(m->wctx);
}

/* Whether this tick has done its share: the scan limit or the wall-clock limit reached. */
static bool
act_tick_over(const struct linux_migrator *m)
{
	return m->scanned >= LINUX_MIGRATE_SCAN_MAX_PAGES ||
	       (m->tick_wall_s > 0 && act_mono_s(m) >= m->tick_deadline_s);
}

void
linux_migrator_set_unprotect(struct linux_migrator *m, linux_unprotect_fn fn, void *ctx)
{
	m->unprotect = fn;
	m->uctx = ctx;
}

int
linux_migrator_add(struct linux_migrator *m, const struct linux_migrate_req *req)
{
	uint64_t step = req->step_bytes ? req->step_bytes : m->page_bytes;
	int id;

	if (req->len == 0 || req->to_node < 0 || req->to_node >= LINUX_MAX_NODES ||
	    req->start % m->page_bytes != 0 || step % m->page_bytes != 0 ||
	    req->start + req->len < req->start)
		return -EINVAL;
	for (id = 0; id < LINUX_MIGRATE_MAX_REQS && m->slots[id].used; id++)
		;
	if (id == LINUX_MIGRATE_MAX_REQS)
		return -ENOSPC;
	memset(&m->slots[id], 0, sizeof(m->slots[id]));
	m->slots[id].used = true;
	m->slots[id].req = *req;
	m->slots[id].req.step_bytes = step;
	m->slots[id].st.state = LINUX_MIGRATE_ACTIVE;
	m->slots[id].st.next = req->start;
	if (id >= m->nr_slots)
		m->nr_slots = id + 1;
	return id;
}

int
linux_migrator_status(const struct linux_migrator *m, int id, struct linux_migrate_status *out)
{
	if (id < 0 || id >= m->nr_slots || !m->slots[id].used)
		return -ENOENT;
	*out = m->slots[id].st;
	return 0;
}

static bool
act_has_retry(const struct linux_migrator *m, int id)
{
	for (int i = 0; i < m->nr_retry; i++)
		if (m->retry[i].id == id)
			return true;
	return false;
}

int
linux_migrator_release(struct linux_migrator *m, int id)
{
	if (id < 0 || id >= m->nr_slots || !m->slots[id].used)
		return -ENOENT;
	if (m->slots[id].st.state == LINUX_MIGRATE_ACTIVE || act_has_retry(m, id))
		return -EBUSY;
	m->slots[id].used = false;
	return 0;
}

bool
linux_migrator_busy(const struct linux_migrator *m)
{
	if (m->nr_retry > 0)
		return true;
	for (int id = 0; id < m->nr_slots; id++)
		if (m->slots[id].used && m->slots[id].st.state == LINUX_MIGRATE_ACTIVE)
			return true;
	return false;
}

static enum linux_migrate_err
act_err_index(int err)
{
	switch (err) {
	case EBUSY:
		return LINUX_MIGRATE_ERR_BUSY;
	case ENOMEM:
		return LINUX_MIGRATE_ERR_NOMEM;
	case EACCES:
		return LINUX_MIGRATE_ERR_ACCES;
	case EFAULT:
		return LINUX_MIGRATE_ERR_FAULT;
	case ENOENT:
		return LINUX_MIGRATE_ERR_NOENT;
	case ENODEV:
		return LINUX_MIGRATE_ERR_NODEV;
	case EINVAL:
		return LINUX_MIGRATE_ERR_INVAL;
	default:
		return LINUX_MIGRATE_ERR_OTHER;
	}
}

/* Count n pages of slot id failed with errno err (positive), per request and host-wide. */
static void
act_count_failed(struct linux_migrator *m, int id, int err, uint64_t n)
{
	enum linux_migrate_err e = act_err_index(err);

	m->slots[id].st.counts.pages_failed[e] += n;
	m->stats.counts.pages_failed[e] += n;
}

static void
act_count_moved(struct linux_migrator *m, int id, uint64_t bytes)
{
	m->slots[id].st.counts.pages_moved++;
	m->slots[id].st.counts.bytes_moved += bytes;
	m->stats.counts.pages_moved++;
	m->stats.counts.bytes_moved += bytes;
}

static void
act_finish(struct linux_migrator *m, int id, enum linux_migrate_state state, int error)
{
	struct linux_migrate_status *st = &m->slots[id].st;

	if (st->state != LINUX_MIGRATE_ACTIVE && state == LINUX_MIGRATE_DONE)
		return;
	if (st->state == state)
		return;
	st->state = state;
	st->error = error;
	if (state == LINUX_MIGRATE_DONE)
		m->stats.requests_done++;
	else if (state == LINUX_MIGRATE_NODE_FULL)
		m->stats.requests_node_full++;
	else if (state == LINUX_MIGRATE_GONE)
		m->stats.requests_gone++;
	else if (state == LINUX_MIGRATE_FAILED)
		m->stats.requests_failed++;
}

/* Drop the retries of every request that is no longer worth retrying for. */
static void
act_retry_prune(struct linux_migrator *m)
{
	int i, j = 0;

	for (i = 0; i < m->nr_retry; i++) {
		enum linux_migrate_state s = m->slots[m->retry[i].id].st.state;

		if (s == LINUX_MIGRATE_ACTIVE || s == LINUX_MIGRATE_DONE)
			m->retry[j++] = m->retry[i];
	}
	m->nr_retry = j;
}

/*
 * The process behind a whole call went away: its active requests end quietly (finished ones
 * keep their state) and its pending retries are dropped.
 */
static void
act_pid_gone(struct linux_migrator *m, pid_t pid)
{
	int i, j = 0;

	for (int id = 0; id < m->nr_slots; id++)
		if (m->slots[id].used && m->slots[id].req.pid == pid &&
		    m->slots[id].st.state == LINUX_MIGRATE_ACTIVE)
			act_finish(m, id, LINUX_MIGRATE_GONE, -ESRCH);
	for (i = 0; i < m->nr_retry; i++)
		if (m->slots[m->retry[i].id].req.pid != pid)
			m->retry[j++] = m->retry[i];
	m->nr_retry = j;
	act_retry_prune(m);
}

/* A whole move_pages call failed with errno err for n pages of request id. */
static void
act_call_failed(struct linux_migrator *m, int id, int err, uint64_t n)
{
	if (err == ESRCH) {
		act_pid_gone(m, m->slots[id].req.pid);
		return;
	}
	act_count_failed(m, id, err, n);
	act_finish(m, id, err == ENOMEM ? LINUX_MIGRATE_NODE_FULL : LINUX_MIGRATE_FAILED, -err);
	act_retry_prune(m);
}

static void
act_retry_push(struct linux_migrator *m, int id, uint64_t addr, int tries)
{
	if (tries >= LINUX_MIGRATE_RETRY_TRIES || m->nr_retry >= LINUX_MIGRATE_RETRY_MAX) {
		act_count_failed(m, id, EBUSY, 1);
		return;
	}
	m->retry[m->nr_retry].id = id;
	m->retry[m->nr_retry].addr = addr;
	m->retry[m->nr_retry].tries = tries;
	m->nr_retry++;
}

/*
 * One page's status after a move: moved, retried (EBUSY), node full (ENOMEM) or skipped.
 * Returns false when the request stopped.
 */
static bool
act_page_result(struct linux_migrator *m, int id, uint64_t addr, int status, int tries)
{
	const struct linux_migrate_req *req = &m->slots[id].req;

	if (status == req->to_node) {
		act_count_moved(m, id, req->step_bytes);
		return true;
	}
	if (status == -EBUSY) {
		act_retry_push(m, id, addr, tries + 1);
		return true;
	}
	act_count_failed(m, id, status < 0 ? -status : EBUSY, 1);
	if (status == -ENOMEM) {
		act_finish(m, id, LINUX_MIGRATE_NODE_FULL, -ENOMEM);
		act_retry_prune(m);
		return false;
	}
	return true;
}

/* Whether the budget holds one more step of bytes; charge it if so. */
static bool
act_charge(struct linux_migrator *m, uint64_t bytes)
{
	if (m->budget_bytes < (double)bytes)
		return false;
	m->budget_bytes -= (double)bytes;
	m->stats.last_tick_bytes += bytes;
	return true;
}

/* Retry the pending EBUSY pages, one call each (they are few), oldest first. */
static void
act_retry_run(struct linux_migrator *m)
{
	int n = m->nr_retry, i, j = 0;
	pid_t gone = -1; /* a process found gone in this run: skip the rest of its retries */
	struct act_retry *old = xmalloc(sizeof(*old) * (size_t)(n > 0 ? n : 1));

	memcpy(old, m->retry, sizeof(*old) * (size_t)n);
	m->nr_retry = 0;
	for (i = 0; i < n; i++) {
		struct act_slot *s = &m->slots[old[i].id];
		void *page = (void *)(uintptr_t)old[i].addr;
		int node = s->req.to_node, status = 0;

		if ((s->st.state != LINUX_MIGRATE_ACTIVE && s->st.state != LINUX_MIGRATE_DONE) ||
		    s->req.pid == gone)
			continue;
		if (!act_charge(m, s->req.step_bytes)) {
			old[j++] = old[i]; /* out of budget: keep for the next tick */
			continue;
		}
		m->stats.syscalls++;
		if (m->fn(m->ctx, s->req.pid, 1, &page, &node, &status, ACT_MPOL_MF_MOVE) < 0) {
			gone = errno == ESRCH ? s->req.pid : gone;
			act_call_failed(m, old[i].id, errno, 1);
		} else {
			act_page_result(m, old[i].id, old[i].addr, status, old[i].tries);
		}
	}
	for (i = 0; i < j && m->nr_retry < LINUX_MIGRATE_RETRY_MAX; i++)
		if ((m->slots[old[i].id].st.state == LINUX_MIGRATE_ACTIVE ||
		     m->slots[old[i].id].st.state == LINUX_MIGRATE_DONE) &&
		    m->slots[old[i].id].req.pid != gone)
			m->retry[m->nr_retry++] = old[i];
	free(old);
}

/* Bytes request id may still move before max_bytes; UINT64_MAX without a cap. */
static uint64_t
act_room(const struct act_slot *s)
{
	if (s->req.max_bytes == 0)
		return UINT64_MAX;
	if (s->st.counts.bytes_moved >= s->req.max_bytes)
		return 0;
	return s->req.max_bytes - s->st.counts.bytes_moved;
}

/*
 * Sort the sampled batch of n pages: those on the target are done, those with an error are
 * skipped, the rest join the move queue (queued pages already there) while budget,
 * max_bytes and the queue's limit allow.  Returns the queue's new length; *cut is the index
 * of the first page left for later (n when none); *full says the queue's limit cut it.
 */
static int
act_batch_select(struct linux_migrator *m, int id, int n, int queued, int *cut, bool *full)
{
	struct act_slot *s = &m->slots[id];
	uint64_t room = act_room(s), planned = (uint64_t)queued * s->req.step_bytes;
	int i, k = queued;

	for (i = 0; i < n; i++) {
		if (m->status[i] == s->req.to_node) {
			s->st.counts.pages_already++;
			m->stats.counts.pages_already++;
		} else if (m->status[i] < 0) {
			act_count_failed(m, id, -m->status[i], 1);
		} else if (s->req.from_nodes != 0 &&
		           (m->status[i] >= 64 || !(s->req.from_nodes & (1ull << m->status[i])))) {
			s->st.counts.pages_other++;
			m->stats.counts.pages_other++;
		} else {
			/*
			 * The limit cuts on huge-page boundaries, so a huge page moves in one
			 * call, unless it is under one huge page's worth (pages are slow here)
			 * and no huge page was seen in this range.
			 */
			if (k >= m->move_limit && act_cut_ok(m, s, m->pages[i])) {
				*full = true;
				break;
			}
			if (planned + s->req.step_bytes > room && planned > 0)
				break;
			if (planned >= room || !act_charge(m, s->req.step_bytes))
				break;
			planned += s->req.step_bytes;
			m->mpages[k] = m->pages[i];
			m->mnodes[k] = s->req.to_node;
			k++;
		}
	}
	*cut = i;
	return k;
}

/*
 * After a move that left pages behind (rc > 0: every page of the call, whose statuses are then
 * not all reliable) or said EBUSY (only those pages), look where they now are.  The tail
 * pages of a transparent huge page whose head moved earlier in the same call report EBUSY
 * (the folio was already isolated) though they moved with it; a page the kernel could not
 * migrate may still report the target.  Trust the second look for both.
 */
static int
act_batch_recheck(struct linux_migrator *m, int id, int k, bool all)
{
	struct act_slot *s = &m->slots[id];
	void **addrs = all ? m->mpages : m->rpages;
	int i, j, n = k;

	if (!all)
		for (i = 0, n = 0; i < k; i++)
			if (m->mstatus[i] == -EBUSY) {
				m->rpages[n] = m->mpages[i];
				m->ridx[n++] = i;
			}
	m->stats.syscalls++;
	if (m->fn(m->ctx, s->req.pid, (unsigned long)n, addrs, NULL, m->status, 0) < 0) {
		act_call_failed(m, id, errno, (uint64_t)k);
		return -1;
	}
	for (j = 0; j < n; j++) {
		i = all ? j : m->ridx[j];
		if (m->mstatus[i] != -EBUSY && m->mstatus[i] < 0)
			continue; /* a definite per-page error stands */
		if (m->status[j] == s->req.to_node) {
			s->huge_seen |= m->mstatus[i] == -EBUSY;
			m->mstatus[i] = s->req.to_node;
		} else
			m->mstatus[i] = -EBUSY;
	}
	return 0;
}

/* A moving call of k pages took took_s: the running cost, and the next call's size. */
static void
act_move_cost_note(struct linux_migrator *m, int k, double took_s)
{
	double per_page = took_s / (k > 0 ? k : 1), fit;

	m->move_s_per_page = m->move_s_per_page > 0 ? ACT_COST_WEIGHT * per_page +
	                                                  (1 - ACT_COST_WEIGHT) * m->move_s_per_page
	                                            : per_page;
	fit = m->move_s_per_page > 0 ? m->tick_wall_s / m->move_s_per_page : m->move_cap;
	m->move_limit = fit >= m->move_cap          ? m->move_cap
	                : fit <= ACT_MOVE_MIN_PAGES ? ACT_MOVE_MIN_PAGES
	                                            : (int)fit;
}

/* Move the k queued pages and sort out each page's status. */
static void
act_batch_move(struct linux_migrator *m, int id, int k)
{
	struct act_slot *s = &m->slots[id];
	bool busy = false;
	long rc;
	int i;

	double t0_s = m->tick_wall_s > 0 ? act_mono_s(m) : 0;

	m->stats.syscalls++;
	rc = m->fn(m->ctx, s->req.pid, (unsigned long)k, m->mpages, m->mnodes, m->mstatus,
	           ACT_MPOL_MF_MOVE);
	if (m->tick_wall_s > 0)
		act_move_cost_note(m, k, act_mono_s(m) - t0_s);
	if (rc < 0) {
		act_call_failed(m, id, errno, (uint64_t)k);
		return;
	}
	for (i = 0; i < k && !busy; i++)
		busy = m->mstatus[i] == -EBUSY;
	if ((rc > 0 || busy) && act_batch_recheck(m, id, k, rc > 0) < 0)
		return;
	for (i = 0; i < k; i++)
		if (!act_page_result(m, id, (uint64_t)(uintptr_t)m->mpages[i], m->mstatus[i], 0))
			return;
}

/*
 * Pages of the sampled batch of n that read as absent may only be protected by the kernel's
 * NUMA scanner: unprotect them and look again (m->rpages/ridx/mstatus as scratch; the move
 * queue only uses mstatus while moving).  Touching a page costs a hinting fault, and the kernel
 * may migrate the page right there, so at most move_limit pages are touched: the batch ends
 * before the next one, and the returned length is the batch's new n.  A failed second look
 * leaves the first one's statuses.
 */
static int
act_batch_unprotect(struct linux_migrator *m, int id, int n)
{
	struct act_slot *s = &m->slots[id];
	int i, k = 0, touched;
	double t0_s;

	if (m->unprotect == NULL)
		return n;
	for (i = 0; i < n; i++)
		if (m->status[i] == -ENOENT || m->status[i] == -EFAULT) {
			if (k >= m->move_limit && k > 0 && act_cut_ok(m, s, m->pages[i])) {
				n = i; /* the rest of the batch waits for the next one */
				break;
			}
			m->rpages[k] = m->pages[i];
			m->ridx[k++] = i;
		}
	if (k == 0)
		return n;
	t0_s = m->tick_wall_s > 0 ? act_mono_s(m) : 0;
	touched = m->unprotect(m->uctx, s->req.pid, m->rpages, (size_t)k, m->page_bytes);
	if (touched <= 0)
		return n;
	if (m->tick_wall_s > 0)
		act_move_cost_note(m, touched, act_mono_s(m) - t0_s);
	s->st.counts.pages_unprotected += (uint64_t)touched;
	m->stats.counts.pages_unprotected += (uint64_t)touched;
	m->stats.syscalls++;
	if (m->fn(m->ctx, s->req.pid, (unsigned long)k, m->rpages, NULL, m->mstatus, 0) < 0)
		return n;
	for (i = 0; i < k; i++)
		m->status[m->ridx[i]] = m->mstatus[i];
	return n;
}

/*
 * Sample the next batch of request id and queue what is to move behind the *queued pages
 * already in m->mpages.  Returns false when this request is done for the tick: the range is
 * walked, the budget or max_bytes ran out, or the call failed.
 */
static bool
act_batch_sample(struct linux_migrator *m, int id, int *queued)
{
	struct act_slot *s = &m->slots[id];
	uint64_t end = s->req.start + s->req.len, addr = s->st.next;
	int n = 0, cut;
	bool full = false;

	while (n < m->batch_pages && addr < end) {
		/* end a batch on a huge-page boundary when the next huge page would not fit */
		if (n > 0 && addr % ACT_HUGE_BYTES == 0 &&
		    (uint64_t)(m->batch_pages - n) * s->req.step_bytes < ACT_HUGE_BYTES)
			break;
		m->pages[n++] = (void *)(uintptr_t)addr;
		addr += s->req.step_bytes;
	}
	m->scanned += (uint64_t)n;
	m->stats.syscalls++;
	if (m->fn(m->ctx, s->req.pid, (unsigned long)n, m->pages, NULL, m->status, 0) < 0) {
		/* the queued pages will not move now: give their budget back */
		m->budget_bytes += (double)((uint64_t)*queued * s->req.step_bytes);
		m->stats.last_tick_bytes -= (uint64_t)*queued * s->req.step_bytes;
		*queued = 0;
		act_call_failed(m, id, errno, (uint64_t)n);
		return false;
	}
	if ((n = act_batch_unprotect(m, id, n)) < m->batch_pages && n > 0)
		addr = (uint64_t)(uintptr_t)m->pages[n - 1] + s->req.step_bytes;
	*queued = act_batch_select(m, id, n, *queued, &cut, &full);
	s->st.next = cut < n ? (uint64_t)(uintptr_t)m->pages[cut] : addr;
	if (full)
		return true;                 /* moved next, then the walk goes on */
	return cut == n && s->st.next < end; /* a cut batch: the budget or max_bytes ran out */
}

/*
 * Request id's share of the tick: sample batch after batch, moving the queued pages whenever
 * the queue could not take another batch (so a huge page's entries, which a batch never
 * splits, always go in one call) and once at the end.
 */
static void
act_request_run(struct linux_migrator *m, int id)
{
	struct act_slot *s = &m->slots[id];
	bool more = true;
	int queued = 0;

	while (more && s->st.state == LINUX_MIGRATE_ACTIVE && !act_tick_over(m)) {
		if (queued >= m->move_limit || queued + m->batch_pages > m->move_cap) {
			act_batch_move(m, id, queued);
			queued = 0;
			continue;
		}
		more = act_batch_sample(m, id, &queued);
	}
	if (queued > 0 && s->st.state == LINUX_MIGRATE_ACTIVE)
		act_batch_move(m, id, queued);
	if (s->st.state == LINUX_MIGRATE_ACTIVE &&
	    (s->st.next >= s->req.start + s->req.len || act_room(s) == 0))
		act_finish(m, id, LINUX_MIGRATE_DONE, 0);
}

uint64_t
linux_migrator_tick(struct linux_migrator *m, double now_s)
{
	double cap = m->rate_bytes_s * LINUX_MIGRATE_BURST_S, elapsed;

	m->stats.last_tick_bytes = 0;
	m->scanned = 0;
	m->tick_deadline_s = m->tick_wall_s > 0 ? act_mono_s(m) + m->tick_wall_s : 0;
	if (!m->started) {
		m->started = true;
		m->first_s = m->last_s = now_s;
	}
	elapsed = now_s > m->last_s ? now_s - m->last_s : 0;
	m->last_s = now_s > m->last_s ? now_s : m->last_s;
	m->budget_bytes += m->rate_bytes_s * elapsed;
	if (cap < ACT_BUDGET_FLOOR_BYTES)
		cap = ACT_BUDGET_FLOOR_BYTES;
	if (m->budget_bytes > cap)
		m->budget_bytes = cap;
	act_retry_run(m);
	/* round robin: a tick cut short by its limits resumes with the next request */
	for (int j = 0, first = m->rr_next, id; j < m->nr_slots && !act_tick_over(m); j++) {
		id = (first + j) % m->nr_slots;
		if (!m->slots[id].used)
			continue;
		act_request_run(m, id);
		m->rr_next = id + 1;
	}
	m->stats.retries_pending = (uint64_t)m->nr_retry;
	if (m->last_s > m->first_s)
		m->stats.bytes_s = (double)m->stats.counts.bytes_moved / (m->last_s - m->first_s);
	return m->stats.last_tick_bytes;
}

void
linux_migrator_stats_get(const struct linux_migrator *m, struct linux_migrator_stats *out)
{
	*out = m->stats;
}

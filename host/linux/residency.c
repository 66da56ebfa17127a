/*
 * residency.c - per-node residency of guest RAM from the cheapest source that answers
 * (residency.h).
 */
#define _GNU_SOURCE
#include "host/linux/residency.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/linux/actuate.h"
#include "policy/util.h"

/* pagemap entry bit 63: page present (Documentation/admin-guide/mm/pagemap.rst). */
#define RESID_PM_PRESENT (1ull << 63)
/* cg_dir of a cgroup figure the caller gives (linux_resid_input.cgroup_given). */
#define RESID_CGROUP_GIVEN "(given)"

const char *
linux_resid_source_name(enum linux_resid_source source)
{
	switch (source) {
	case LINUX_RESID_NUMA_MAPS:
		return "numa_maps";
	case LINUX_RESID_CGROUP:
		return "cgroup";
	case LINUX_RESID_SAMPLED:
		return "sampled";
	case LINUX_RESID_ADJUSTED:
		return "adjusted";
	case LINUX_RESID_NONE:
		break;
	}
	return NULL;
}

/* ---- sampling ------------------------------------------------------------------------------ */

/* splitmix64: a small, well-mixed PRNG; the sample is reproducible from its seed. */
static uint64_t
resid_rand_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Pages of range r, from its start rounded down to a page. */
static uint64_t
resid_range_pages(const struct linux_ram_range *r, uint64_t page_bytes)
{
	uint64_t start = r->start & ~(page_bytes - 1);

	return (r->start + r->len - start + page_bytes - 1) / page_bytes;
}

int
linux_resid_sample_plan(const struct linux_ram_range *ram, int nr, uint64_t page_bytes, int k,
                        uint64_t seed, uint64_t *addrs)
{
	uint64_t total = 0, state = seed, base = 0;
	int r = 0, out = 0;

	for (int i = 0; i < nr; i++)
		total += resid_range_pages(&ram[i], page_bytes);
	if (k <= 0 || total == 0 || page_bytes == 0)
		return 0;
	if (total < (uint64_t)k)
		k = (int)total;
	for (int i = 0; i < k; i++) {
		/* stratum i: [i P / k, (i + 1) P / k); 128-bit products, P may be 2^40 pages */
		uint64_t lo = (uint64_t)((unsigned __int128)total * (unsigned)i / (unsigned)k);
		uint64_t hi =
		    (uint64_t)((unsigned __int128)total * (unsigned)(i + 1) / (unsigned)k);
		uint64_t page = lo + (hi > lo ? resid_rand_next(&state) % (hi - lo) : 0);

		while (r < nr && page >= base + resid_range_pages(&ram[r], page_bytes))
			base += resid_range_pages(&ram[r++], page_bytes);
		if (r >= nr)
			break;
		addrs[out++] = (ram[r].start & ~(page_bytes - 1)) + (page - base) * page_bytes;
	}
	return out;
}

double
linux_resid_wilson_low(uint64_t c, uint64_t k, double z)
{
	double n = (double)k, p, z2 = z * z, denom, center, half;

	if (k == 0 || c == 0)
		return 0;
	p = (double)c / n;
	denom = 1.0 + z2 / n;
	center = (p + z2 / (2.0 * n)) / denom;
	half = z * sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom;
	return center - half > 0 ? center - half : 0;
}

double
linux_resid_wilson_dev(uint64_t c, uint64_t k, double z)
{
	double n = (double)k, p, z2 = z * z, denom, center, half, lo, hi;

	if (k == 0)
		return 1.0;
	p = (double)c / n;
	denom = 1.0 + z2 / n;
	center = (p + z2 / (2.0 * n)) / denom;
	half = z * sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom;
	lo = center - half;
	hi = center + half;
	return p - lo > hi - p ? p - lo : hi - p;
}

void
linux_resid_sample_estimate(const int *status, int k, bool exact, uint64_t ram_bytes, int nr_nodes,
                            double z, struct linux_resid_figure *out)
{
	uint64_t count[LINUX_RESID_MAX_NODES] = {0}, known = 0, unknown = 0;
	double ram_kib = (double)(ram_bytes / 1024), dev = 0, kib;

	memset(out, 0, sizeof(*out));
	out->nr_nodes = nr_nodes < LINUX_RESID_MAX_NODES ? nr_nodes : LINUX_RESID_MAX_NODES;
	if (k <= 0) {
		out->err_kib = ram_bytes / 1024;
		return;
	}
	for (int i = 0; i < k; i++) {
		if (status[i] >= 0 && status[i] < LINUX_RESID_MAX_NODES) {
			count[status[i]]++;
			known++;
			if (status[i] + 1 > out->nr_nodes)
				out->nr_nodes = status[i] + 1;
		} else if (status[i] != LINUX_RESID_PAGE_ABSENT) {
			unknown++;
		}
	}
	for (int n = 0; n < out->nr_nodes; n++) {
		double d = exact ? 0 : linux_resid_wilson_dev(count[n], (uint64_t)k, z);

		/* a page of unknown node goes to the known nodes by their shares */
		kib = (double)count[n] +
		      (known > 0 ? (double)unknown * (double)count[n] / (double)known : 0);
		out->kib[n] = (uint64_t)(kib / k * ram_kib + 0.5);
		dev = d > dev ? d : dev;
	}
	out->err_kib = (uint64_t)ceil((dev + (double)unknown / k) * ram_kib);
}

int
linux_resid_sample_unknown(const int *status, int k)
{
	int n = 0;

	for (int i = 0; i < k; i++)
		n += (status[i] < 0 || status[i] >= LINUX_RESID_MAX_NODES) &&
		     status[i] != LINUX_RESID_PAGE_ABSENT;
	return n;
}

/* The guest RAM offset of addr in ram[0..nr) end to end; false when it lies in none. */
static bool
resid_addr_offset(const struct linux_ram_range *ram, int nr, uint64_t page_bytes, uint64_t addr,
                  uint64_t *off)
{
	uint64_t base = 0;

	for (int i = 0; i < nr; i++) {
		uint64_t start = ram[i].start & ~(page_bytes - 1);

		if (addr >= start && addr < ram[i].start + ram[i].len) {
			*off = base + (addr > ram[i].start ? addr - ram[i].start : 0);
			return true;
		}
		base += ram[i].len;
	}
	return false;
}

void
linux_resid_cells_estimate(const int *status, const uint64_t *addrs, int k, bool exact,
                           const struct linux_ram_range *ram, int nr_ram, uint64_t page_bytes,
                           const struct linux_ram_range *cells, int nr_cells, double z,
                           struct linux_resid_cells *out)
{
	uint64_t count[LINUX_RESID_MAX_CELLS][LINUX_RESID_MAX_NODES]; /* 4 KiB */
	uint64_t taken[LINUX_RESID_MAX_CELLS] = {0};
	int nr = nr_cells < LINUX_RESID_MAX_CELLS ? nr_cells : LINUX_RESID_MAX_CELLS;

	memset(count, 0, sizeof(count));
	memset(out, 0, sizeof(*out));
	out->nr = nr > 0 ? nr : 0;
	for (int i = 0; i < k && page_bytes > 0; i++) {
		uint64_t off;
		int c = 0;

		if (!resid_addr_offset(ram, nr_ram, page_bytes, addrs[i], &off))
			continue;
		while (c < nr && !(off >= cells[c].start && off - cells[c].start < cells[c].len))
			c++;
		if (c >= nr)
			continue;
		taken[c]++;
		if (status[i] >= 0 && status[i] < LINUX_RESID_MAX_NODES) {
			count[c][status[i]]++;
			if (status[i] + 1 > out->nr_nodes)
				out->nr_nodes = status[i] + 1;
		}
	}
	for (int c = 0; c < out->nr; c++) {
		double cell_kib = (double)(cells[c].len / 1024);

		for (int n = 0; n < LINUX_RESID_MAX_NODES && taken[c] > 0; n++) {
			double share = (double)count[c][n] / (double)taken[c];
			double low =
			    exact ? share : linux_resid_wilson_low(count[c][n], taken[c], z);

			out->kib[c][n] = (uint64_t)(share * cell_kib + 0.5);
			out->sure_kib[c][n] = low > 0 ? (uint64_t)(low * cell_kib) : 0;
			if (out->sure_kib[c][n] > out->kib[c][n])
				out->sure_kib[c][n] = out->kib[c][n];
		}
	}
}

/* Whether pagemap says the page at addr is present; false when it cannot be read. */
static bool
resid_page_present(int fd, uint64_t addr, uint64_t page_bytes)
{
	uint64_t entry;

	if (fd < 0 || pread(fd, &entry, sizeof(entry),
	                    (off_t)(addr / page_bytes * sizeof(entry))) != (ssize_t)sizeof(entry))
		return false;
	return (entry & RESID_PM_PRESENT) != 0;
}

int
linux_resid_query_live(void *ctx, int pid, const uint64_t *addrs, size_t n, int *status)
{
	uint64_t page_bytes = (uint64_t)sysconf(_SC_PAGESIZE);
	void **pages = xcalloc(n + 1, sizeof(*pages));
	int fd = -1, ret;
	char path[64];

	(void)ctx;
	for (size_t i = 0; i < n; i++)
		pages[i] = (void *)(uintptr_t)addrs[i];
	if ((ret = linux_pages_where(pid, pages, n, status)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (status[i] >= 0 && status[i] < LINUX_RESID_MAX_NODES)
			continue;
		if (status[i] != -ENOENT && status[i] != -EFAULT) {
			status[i] = LINUX_RESID_PAGE_UNKNOWN;
			continue;
		}
		if (fd < 0) {
			if (pid == 0)
				snprintf(path, sizeof(path), "/proc/self/pagemap");
			else
				snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
			fd = open(path, O_RDONLY | O_CLOEXEC);
		}
		status[i] = resid_page_present(fd, addrs[i], page_bytes) ? LINUX_RESID_PAGE_UNKNOWN
		                                                         : LINUX_RESID_PAGE_ABSENT;
	}
out:
	if (fd >= 0)
		close(fd);
	free(pages);
	return ret;
}

/* ---- the walk's budget and schedule -------------------------------------------------------- */

void
linux_resid_budget_refill(struct linux_resid_budget *b, double now_s)
{
	if (b->at_s > 0 && now_s > b->at_s)
		b->tokens_ms += (now_s - b->at_s) * LINUX_RESIDENCY_WALK_BUDGET_MS_S;
	if (b->at_s == 0)
		b->tokens_ms = LINUX_RESIDENCY_WALK_BURST_MS;
	if (b->tokens_ms > LINUX_RESIDENCY_WALK_BURST_MS)
		b->tokens_ms = LINUX_RESIDENCY_WALK_BURST_MS;
	b->at_s = now_s;
}

double
linux_resid_walk_predict_ms(uint64_t small_kib, uint64_t huge_kib)
{
	const double kib_per_gib = 1024.0 * 1024.0;

	return (double)small_kib / kib_per_gib * LINUX_RESIDENCY_WALK_MS_PER_GIB_4K +
	       (double)huge_kib / kib_per_gib * LINUX_RESIDENCY_WALK_MS_PER_GIB_THP;
}

bool
linux_resid_first_walk_skip(struct linux_resid *r, double now_s, double predicted_ms,
                            bool can_sample)
{
	if (r->walked || r->walk_skipped || !can_sample ||
	    predicted_ms <= LINUX_RESIDENCY_WALK_HOLD_MS)
		return false;
	r->walk_skipped = true;
	r->walk_ms = predicted_ms;
	r->walked_s = now_s;
	return true;
}

bool
linux_resid_walk_due(struct linux_resid *r, struct linux_resid_budget *b, double now_s, bool moving)
{
	double since_s, every_s;

	if (r == NULL || (!r->walked && !r->walk_skipped))
		return true; /* a VM seen for the first time: its mappings must be found */
	if (r->walk_ms > LINUX_RESIDENCY_WALK_HOLD_MS &&
	    (r->source == LINUX_RESID_CGROUP || r->source == LINUX_RESID_SAMPLED))
		return false; /* a long lock hold, and others answer */
	since_s = now_s - r->walked_s;
	every_s =
	    moving || r->moved_since_walk ? LINUX_RESIDENCY_WALK_MOVING_S : LINUX_RESIDENCY_WALK_S;
	if (!r->walked && r->source == LINUX_RESID_NONE)
		every_s = 0; /* skipped, and nothing answered since: walk after all */
	if (since_s < every_s)
		return false;
	if (b->tokens_ms < r->walk_ms && b->tokens_ms < LINUX_RESIDENCY_WALK_BURST_MS)
		return false; /* wait for the bucket (a walk dearer than the burst: a full one) */
	b->tokens_ms -= r->walk_ms;
	r->walk_charged_ms = r->walk_ms;
	return true;
}

/* ---- the round's figure -------------------------------------------------------------------- */

static uint64_t
resid_sum_kib(const uint64_t *kib, int nr)
{
	uint64_t sum = 0;

	for (int n = 0; n < nr; n++)
		sum += kib[n];
	return sum;
}

/* Find the VM's cgroup and whether it holds this process alone, every RECHECK_S. */
static void
resid_cgroup_check(struct linux_resid *r, const struct linux_resid_input *in)
{
	char dir[LINUX_CGROUP_PATH_MAX];

	if (in->cgroup_given) { /* the caller read it: alone in a cgroup of its own, or not */
		if (in->cgroup_kib == NULL) {
			r->cg_dir[0] = '\0';
			r->cg_calibrated = false;
		} else if (r->cg_dir[0] == '\0') {
			snprintf(r->cg_dir, sizeof(r->cg_dir), "%s", RESID_CGROUP_GIVEN);
		}
		return;
	}
	if (r->cg_checked_s > 0 && in->now_s - r->cg_checked_s < LINUX_RESIDENCY_CGROUP_RECHECK_S)
		return;
	r->cg_checked_s = in->now_s > 0 ? in->now_s : 1e-9;
	if (in->ram_huge || linux_cgroup_memory_dir(in->root, in->pid, dir, sizeof(dir)) < 0 ||
	    linux_cgroup_alone(in->root, dir, in->pid) != 1) {
		r->cg_dir[0] = '\0';
		r->cg_calibrated = false;
		return;
	}
	if (strcmp(dir, r->cg_dir) != 0)
		r->cg_calibrated = false; /* moved to another cgroup: calibrate again */
	snprintf(r->cg_dir, sizeof(r->cg_dir), "%s", dir);
}

/* anon + shmem per node of the VM's cgroup, KiB; -errno when it cannot be read. */
static int
resid_cgroup_read(const struct linux_resid *r, const struct linux_resid_input *in, uint64_t *kib,
                  int *nr_nodes)
{
	struct linux_cgroup_numa cg;
	int ret;

	if (r->cg_dir[0] == '\0')
		return -ENOENT;
	if (in->cgroup_given) {
		if (in->cgroup_kib == NULL)
			return -ENOENT;
		*nr_nodes = in->cgroup_nr_nodes < LINUX_RESID_MAX_NODES ? in->cgroup_nr_nodes
		                                                        : LINUX_RESID_MAX_NODES;
		memcpy(kib, in->cgroup_kib, (size_t)*nr_nodes * sizeof(*kib));
		return 0;
	}
	if ((ret = linux_cgroup_numa_stat_read(in->root, r->cg_dir, &cg)) < 0)
		return ret;
	for (int n = 0; n < cg.nr_nodes; n++)
		kib[n] = (cg.anon_bytes[n] + cg.shmem_bytes[n]) / 1024;
	*nr_nodes = cg.nr_nodes;
	return 0;
}

/* This round's walk: the exact figure, and the cgroup's non-guest part per node. */
static void
resid_take_walk(struct linux_resid *r, const struct linux_resid_input *in)
{
	uint64_t cg_kib[LINUX_RESID_MAX_NODES] = {0};
	int nr = in->walk_nr_nodes < LINUX_RESID_MAX_NODES ? in->walk_nr_nodes
	                                                   : LINUX_RESID_MAX_NODES,
	    cg_nr = 0;

	if (in->budget != NULL)
		in->budget->tokens_ms -= in->walk_ms - r->walk_charged_ms;
	memset(&r->fig, 0, sizeof(r->fig));
	r->fig.nr_nodes = nr;
	for (int n = 0; n < nr; n++)
		r->fig.kib[n] = in->walk_kib[n];
	r->source = LINUX_RESID_NUMA_MAPS;
	r->adjusted = false;
	r->measured_s = r->walked_s = in->now_s;
	r->walked = true;
	r->walk_ms = in->walk_ms;
	r->walk_charged_ms = 0;
	r->moved_since_walk = false;
	r->walk_total_kib = resid_sum_kib(r->fig.kib, nr);
	resid_cgroup_check(r, in);
	r->cg_calibrated = false;
	if (resid_cgroup_read(r, in, cg_kib, &cg_nr) < 0)
		return;
	r->cg_other_total_kib = 0;
	for (int n = 0; n < LINUX_RESID_MAX_NODES; n++) {
		r->cg_other_kib[n] = cg_kib[n] > r->fig.kib[n] ? cg_kib[n] - r->fig.kib[n] : 0;
		r->cg_other_total_kib += r->cg_other_kib[n];
	}
	r->cg_calibrated = true;
}

/*
 * Whether the cgroup's total now is off what the last walk calibrated (guest RAM then plus the
 * non-guest part then) by more than LINUX_RESIDENCY_CGROUP_DRIFT_PERMILLE of it.
 */
static bool
resid_cgroup_drifted(const struct linux_resid *r, uint64_t total_kib)
{
	uint64_t then = r->walk_total_kib + r->cg_other_total_kib;
	uint64_t off = total_kib > then ? total_kib - then : then - total_kib;
	uint64_t limit = then / 1000 * LINUX_RESIDENCY_CGROUP_DRIFT_PERMILLE;

	if (limit < LINUX_RESIDENCY_CGROUP_DRIFT_MIN_KIB)
		limit = LINUX_RESIDENCY_CGROUP_DRIFT_MIN_KIB;
	return off > limit;
}

static int
resid_from_cgroup(struct linux_resid *r, const struct linux_resid_input *in)
{
	uint64_t cg_kib[LINUX_RESID_MAX_NODES] = {0}, total;
	struct linux_resid_figure fig_before = r->fig;
	int nr = 0, ret;

	resid_cgroup_check(r, in);
	if (!r->cg_calibrated)
		return -ENOENT;
	if ((ret = resid_cgroup_read(r, in, cg_kib, &nr)) < 0) {
		r->cg_dir[0] = '\0';
		r->cg_calibrated = false;
		return ret;
	}
	total = resid_sum_kib(cg_kib, nr);
	if (resid_cgroup_drifted(r, total)) {
		/* QEMU's own memory grew or shrank (TCG's code cache, say) or guest RAM did:
		 * which node took the difference is not known; another source, and a walk */
		r->cg_calibrated = false;
		r->moved_since_walk = true;
		return -ESTALE;
	}
	memset(&r->fig, 0, sizeof(r->fig));
	r->fig.nr_nodes = nr;
	for (int n = 0; n < nr; n++)
		r->fig.kib[n] = cg_kib[n] > r->cg_other_kib[n] ? cg_kib[n] - r->cg_other_kib[n] : 0;
	/* the non-guest part then, or now if guest RAM has not shrunk since the walk */
	r->fig.err_kib = r->cg_other_total_kib;
	if (total > r->walk_total_kib && total - r->walk_total_kib > r->fig.err_kib)
		r->fig.err_kib = total - r->walk_total_kib;
	if (r->fig.err_kib > r->walk_total_kib / 1000 * LINUX_RESIDENCY_CGROUP_ERR_PERMILLE) {
		/* QEMU's own part dwarfs what is left to move: not this figure (residency.h) */
		r->fig = fig_before;
		return -ERANGE;
	}
	r->source = LINUX_RESID_CGROUP;
	return 0;
}

/* One round's sample: drawn at most once, for the VM's figure and the per-cell one. */
struct resid_draw {
	bool tried;      /* resid_draw_take ran this round */
	int ret;         /* its result: 0 drawn, -EAGAIN not due, -errno none */
	int k;           /* pages drawn */
	uint64_t *addrs; /* k addresses (not with a draw function) */
	int *status;
	bool exact; /* every page of guest RAM was looked at */
	uint64_t ram_bytes;
};

/* Draw this round's sample when one is due (every LINUX_RESIDENCY_SAMPLE_S). */
static int
resid_draw_take(struct linux_resid *r, const struct linux_resid_input *in, struct resid_draw *d)
{
	uint64_t pages = 0;

	if (d->tried)
		return d->ret;
	d->tried = true;
	d->ret = -ENOENT;
	if ((in->query == NULL && in->draw == NULL) || in->sample_pages <= 0 || in->nr_ram <= 0 ||
	    in->page_bytes == 0)
		return d->ret;
	d->ret = -EAGAIN;
	if (r->sampled_s > 0 &&
	    in->now_s - r->sampled_s < LINUX_RESIDENCY_SAMPLE_S - LINUX_RESIDENCY_SAMPLE_SLACK_S)
		return d->ret; /* sampled a round ago */
	for (int i = 0; i < in->nr_ram; i++) {
		d->ram_bytes += in->ram[i].len;
		pages += resid_range_pages(&in->ram[i], in->page_bytes);
	}
	d->addrs = xcalloc((size_t)in->sample_pages + 1, sizeof(*d->addrs));
	d->status = xcalloc((size_t)in->sample_pages + 1, sizeof(*d->status));
	d->ret = -ENOENT;
	if (in->draw != NULL) {
		d->k = pages < (uint64_t)in->sample_pages ? (int)pages : in->sample_pages;
		if (d->k <= 0 ||
		    (d->ret = in->draw(in->query_ctx, in->pid, d->k, d->status, d->addrs)) < 0)
			return d->ret;
	} else {
		d->k = linux_resid_sample_plan(
		    in->ram, in->nr_ram, in->page_bytes, in->sample_pages,
		    ((uint64_t)(unsigned)in->pid << 32) ^ r->rounds++, d->addrs);
		if (d->k <= 0 || (d->ret = in->query(in->query_ctx, in->pid, d->addrs, (size_t)d->k,
		                                     d->status)) < 0)
			return d->ret;
	}
	d->exact = (uint64_t)d->k >= pages;
	r->sampled_s = in->now_s > 0 ? in->now_s : 1e-9;
	return d->ret = 0;
}

static void
resid_draw_free(struct resid_draw *d)
{
	free(d->addrs);
	free(d->status);
}

/* Whether a drawn sample holds too many pages of unknown node to be used (residency.h). */
static bool
resid_draw_unknown(const struct resid_draw *d)
{
	return (int64_t)linux_resid_sample_unknown(d->status, d->k) * 1000 >
	       (int64_t)d->k * LINUX_RESIDENCY_SAMPLE_UNKNOWN_PERMILLE;
}

/* The per-cell figure from this round's sample, when the VM has cells to measure. */
static void
resid_cells_update(struct linux_resid *r, const struct linux_resid_input *in, struct resid_draw *d)
{
	if (in->nr_cells < 2 || in->nr_cells > LINUX_RESID_MAX_CELLS || in->cells == NULL ||
	    (in->query == NULL && in->draw == NULL)) {
		r->cells.nr = 0;
		return;
	}
	if (r->cells.nr != 0 && r->cells.nr != in->nr_cells)
		r->cells.nr = 0; /* the cells changed: not this figure any more */
	if (resid_draw_take(r, in, d) < 0 || resid_draw_unknown(d))
		return; /* the last one stands (adjusted by vnumad's moves) */
	linux_resid_cells_estimate(d->status, d->addrs, d->k, d->exact, in->ram, in->nr_ram,
	                           in->page_bytes, in->cells, in->nr_cells,
	                           LINUX_RESIDENCY_SAMPLE_Z, &r->cells);
	r->cells.sampled_s = r->sampled_s;
}

/* 0: sampled now; 1: the figure sampled a round ago stands; -errno: no sample. */
static int
resid_from_sample(struct linux_resid *r, const struct linux_resid_input *in, struct resid_draw *d)
{
	int ret = resid_draw_take(r, in, d);

	if (ret == -EAGAIN && d->k == 0)
		return r->source == LINUX_RESID_SAMPLED ? 1 : -EAGAIN; /* sampled a round ago */
	if (ret < 0)
		return ret;
	if (resid_draw_unknown(d)) { /* too many pages of unknown node: not used */
		if (r->source == LINUX_RESID_SAMPLED || r->source == LINUX_RESID_CGROUP)
			r->source = LINUX_RESID_ADJUSTED; /* the last figure, not answered now */
		return -EAGAIN;
	}
	linux_resid_sample_estimate(d->status, d->k, d->exact, d->ram_bytes, r->fig.nr_nodes,
	                            LINUX_RESIDENCY_SAMPLE_Z, &r->fig);
	r->source = LINUX_RESID_SAMPLED;
	return 0;
}

/* A new figure was measured: the kernel's moves count from here. */
static void
resid_kernel_reset(struct linux_resid *r, const struct linux_resid_input *in)
{
	r->kernel_base_kib = in->kernel_moved_kib;
	r->kernel_added_kib = 0;
}

/*
 * A figure that stands unmeasured this round: what the kernel's balancing moved of the VM since
 * it was measured widens its bound (where from and to is not known), and has the walk come as
 * after vnumad's own moves.
 */
static void
resid_kernel_widen(struct linux_resid *r, const struct linux_resid_input *in)
{
	uint64_t extra;

	if (in->kernel_moved_kib < r->kernel_base_kib) { /* a thread went: a new base */
		resid_kernel_reset(r, in);
		return;
	}
	extra = in->kernel_moved_kib - r->kernel_base_kib;
	if (extra <= r->kernel_added_kib)
		return;
	r->fig.err_kib += extra - r->kernel_added_kib;
	r->kernel_added_kib = extra;
	r->moved_since_walk = true;
}

static void
resid_update_vm(struct linux_resid *r, const struct linux_resid_input *in, struct resid_draw *d)
{
	if (in->walked) {
		resid_take_walk(r, in);
		resid_kernel_reset(r, in);
		return;
	}
	if (resid_from_cgroup(r, in) == 0) {
		r->measured_s = in->now_s;
		r->adjusted = false;
		resid_kernel_reset(r, in);
		return;
	}
	switch (resid_from_sample(r, in, d)) {
	case 0:
		r->measured_s = in->now_s;
		r->adjusted = false;
		resid_kernel_reset(r, in);
		return;
	case 1: /* sampled a round ago: that figure, a round older */
		resid_kernel_widen(r, in);
		return;
	default:
		break;
	}
	/* nothing answered: the last figure, as linux_resid_moved adjusted it */
	resid_kernel_widen(r, in);
	if (r->source != LINUX_RESID_NONE && (r->adjusted || r->kernel_added_kib > 0))
		r->source = LINUX_RESID_ADJUSTED;
}

void
linux_resid_update(struct linux_resid *r, const struct linux_resid_input *in)
{
	struct resid_draw d = {0};

	resid_cells_update(r, in, &d);
	resid_update_vm(r, in, &d);
	resid_draw_free(&d);
}

/* A move of one cell's range, kib from node from (-1: not known) to node to. */
static void
resid_cell_moved(struct linux_resid_cells *cells, int cell, int from, int to, uint64_t kib)
{
	uint64_t *fig;

	if (cell < 0 || cell >= cells->nr || from < 0 || from >= LINUX_RESID_MAX_NODES) {
		cells->nr = 0; /* which cell, or which node it left, is not known */
		return;
	}
	fig = cells->kib[cell];
	fig[to] += kib;
	fig[from] -= fig[from] > kib ? kib : fig[from];
	fig = cells->sure_kib[cell]; /* what moved is surely there now, and surely gone */
	fig[to] += kib;
	fig[from] -= fig[from] > kib ? kib : fig[from];
	if (to + 1 > cells->nr_nodes)
		cells->nr_nodes = to + 1;
}

void
linux_resid_moved(struct linux_resid *r, int cell, int from, int to, uint64_t bytes)
{
	uint64_t kib = bytes / 1024;

	if (bytes == 0 || to < 0 || to >= LINUX_RESID_MAX_NODES)
		return;
	if (r->cells.nr > 0)
		resid_cell_moved(&r->cells, cell, from, to, kib);
	r->moved_since_walk = true;
	r->adjusted = true;
	r->fig.kib[to] += kib;
	if (to + 1 > r->fig.nr_nodes)
		r->fig.nr_nodes = to + 1;
	if (from >= 0 && from < LINUX_RESID_MAX_NODES)
		r->fig.kib[from] -= r->fig.kib[from] > kib ? kib : r->fig.kib[from];
	else
		r->fig.err_kib += kib; /* which node it left is not known */
}

/*
 * load_pattern.c - vnuma-load's access patterns (see load_pattern.h).
 */
#include "guest-tools/load_pattern.h"

/* Added to the seed for the adverse shuffles, so they do not replay a vCPU's access stream. */
#define LOAD_ADVERSE_SEED_SALT 0x6164766572736521ULL

static uint64_t
load_splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void
load_rng_seed(struct load_rng *rng, uint64_t seed, uint64_t stream)
{
	rng->state = load_splitmix64(load_splitmix64(seed) ^ stream);
	if (rng->state == 0)
		rng->state = 0x9e3779b97f4a7c15ULL; /* xorshift never leaves 0 */
}

void
load_pattern_init(struct load_pattern *p, const struct load_opts *o)
{
	p->workload = o->workload;
	p->vcpus = o->vcpus;
	p->cells = o->workload == LOAD_WL_CELLS ? o->cells : 0;
	p->nr_lines = o->memory_bytes / LOAD_LINE_BYTES;
	p->hot_lines = p->nr_lines - p->nr_lines * (uint64_t)o->cold_pct / 100;
	p->phase_s = load_opts_phase_s(o);
	p->seed = o->seed;
}

int
load_pattern_nr_slices(const struct load_pattern *p)
{
	if (p->workload == LOAD_WL_SHARED)
		return 1;
	if (p->workload == LOAD_WL_CELLS)
		return p->cells;
	return p->vcpus;
}

void
load_pattern_slice_range(const struct load_pattern *p, int slice, struct load_region *r)
{
	uint64_t n = (uint64_t)load_pattern_nr_slices(p), s = (uint64_t)slice;

	if (p->workload == LOAD_WL_CELLS) {
		load_pattern_cell_range(p, slice, r);
		return;
	}
	r->first_line = s * p->hot_lines / n;
	r->nr_lines = (s + 1) * p->hot_lines / n - r->first_line;
}

/* The unit cells are cut in, in lines: a MiB, a page or a line (see load_pattern.h). */
static uint64_t
load_cell_unit_lines(uint64_t nr_lines, int cells)
{
	static const uint64_t units[] = {LOAD_MIB_LINES, LOAD_PAGE_LINES};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (nr_lines % units[i] == 0 && nr_lines / units[i] >= (uint64_t)cells)
			return units[i];
	return 1;
}

void
load_pattern_cell_range(const struct load_pattern *p, int cell, struct load_region *r)
{
	uint64_t k = p->cells > 0 ? (uint64_t)p->cells : 1, c = (uint64_t)cell;
	uint64_t unit = load_cell_unit_lines(p->nr_lines, (int)k), n = p->nr_lines / unit;

	r->first_line = c * n / k * unit;
	r->nr_lines = (c + 1) * n / k * unit - r->first_line;
}

void
load_pattern_cell_vcpus(const struct load_pattern *p, int cell, int *first, int *nr)
{
	*first = -1;
	*nr = 0;
	for (int v = 0; v < p->vcpus; v++) {
		if (load_pattern_cell_of(p, v) != cell)
			continue;
		if (*first < 0)
			*first = v;
		(*nr)++;
	}
}

int
load_pattern_cell_of(const struct load_pattern *p, int vcpu)
{
	if (p->cells <= 0 || p->vcpus <= 0)
		return 0;
	return (int)((int64_t)vcpu * p->cells / p->vcpus);
}

uint64_t
load_pattern_phase(const struct load_pattern *p, double elapsed_s)
{
	if (p->phase_s <= 0 || !(elapsed_s > 0))
		return 0;
	return (uint64_t)(elapsed_s / p->phase_s); /* positive: truncation is floor */
}

void
load_pattern_adverse_perm(uint64_t seed, uint64_t phase, int n, int *perm)
{
	struct load_rng rng;

	for (int i = 0; i < n; i++)
		perm[i] = i;
	if (phase == 0)
		return;
	load_rng_seed(&rng, seed + LOAD_ADVERSE_SEED_SALT, phase);
	for (int i = n - 1; i > 0; i--) {
		int j = (int)load_rng_below(&rng, (uint64_t)i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

int
load_pattern_home(const struct load_pattern *p, int vcpu, uint64_t phase, int *scratch)
{
	switch (p->workload) {
	case LOAD_WL_SHARED:
		return 0;
	case LOAD_WL_CELLS:
		return load_pattern_cell_of(p, vcpu);
	case LOAD_WL_PHASED:
		return (int)(((uint64_t)vcpu + phase % (uint64_t)p->vcpus) % (uint64_t)p->vcpus);
	case LOAD_WL_ADVERSE:
		load_pattern_adverse_perm(p->seed, phase, p->vcpus, scratch);
		return scratch[vcpu];
	case LOAD_WL_PRIVATE:
	case LOAD_WL_IDLE:
		break;
	}
	return vcpu;
}

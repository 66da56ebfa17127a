/*
 * load_pattern.h - where vnuma-load's vCPUs read and write: the workloads of the simulator's
 * scenario format (BRIEF 4.2) over one RAM mapping cut into 64-byte lines.
 *
 * A workload gives each vCPU a home region: its own 1/n slice (private, idle; phased rotates
 * the slices, adverse reshuffles them), its cell's memory (cells) or all of RAM (shared).  A
 * vCPU makes LOAD_LOCAL_SHARE of its accesses in its home region and the rest anywhere in RAM,
 * as the simulator does.  Pure code: no I/O, no clock (the caller passes elapsed time), no
 * globals; all randomness from a struct load_rng seeded with --seed.
 */
#ifndef VNUMAD_GUEST_TOOLS_LOAD_PATTERN_H
#define VNUMAD_GUEST_TOOLS_LOAD_PATTERN_H

#include <stdint.h>

#include "guest-tools/load_opts.h"

/* Bytes per access: one cache line on every host vnumad runs on. */
#define LOAD_LINE_BYTES 64
/* Lines in a MiB and in a page: the units cells are cut in. */
#define LOAD_MIB_LINES  (((uint64_t)1 << 20) / LOAD_LINE_BYTES)
#define LOAD_PAGE_LINES ((uint64_t)LOAD_PAGE_BYTES / LOAD_LINE_BYTES)
/* Share of a vCPU's accesses in its home region: 0.9, the simulator's SIM_LOCAL_SHARE. */
#define LOAD_LOCAL_SHARE 0.9
/* LOAD_LOCAL_SHARE on the 32-bit scale the access loop compares against. */
#define LOAD_LOCAL_THRESHOLD ((uint32_t)(LOAD_LOCAL_SHARE * 4294967296.0))

/* xorshift64* (Vigna): one word of state, fast enough for the access loop. */
struct load_rng {
	uint64_t state;
};

/* Seed stream `stream` of `seed` (each vCPU its own stream); never leaves the state 0. */
void load_rng_seed(struct load_rng *rng, uint64_t seed, uint64_t stream);

static inline uint64_t
load_rng_next(struct load_rng *rng)
{
	uint64_t x = rng->state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng->state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n) for n > 0 (multiply-shift; plain modulo where there is no 128-bit type). */
static inline uint64_t
load_rng_below(struct load_rng *rng, uint64_t n)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t)(((unsigned __int128)load_rng_next(rng) * n) >> 64);
#else
	return load_rng_next(rng) % n;
#endif
}

/* The shape of one run's accesses. */
struct load_pattern {
	enum load_workload workload;
	int vcpus;
	int cells;         /* cells workload only */
	uint64_t nr_lines; /* RAM size in LOAD_LINE_BYTES lines */
	/* The lines accessed after the first touch: [0, hot_lines); the rest is cold (--cold). */
	uint64_t hot_lines;
	double phase_s; /* phased/adverse: seconds per phase; else 0 */
	uint64_t seed;
};

/* A run of lines [first_line, first_line + nr_lines). */
struct load_region {
	uint64_t first_line;
	uint64_t nr_lines;
};

void load_pattern_init(struct load_pattern *p, const struct load_opts *o);
/* How many home regions RAM is cut into: 1 (shared), the cells, or one per vCPU. */
int load_pattern_nr_slices(const struct load_pattern *p);
/*
 * Slice s of n: lines [s L / n, (s + 1) L / n) with L the hot lines, so slices tile the hot
 * RAM in order; for the cells workload, slice s is cell s (load_pattern_cell_range).
 */
void load_pattern_slice_range(const struct load_pattern *p, int slice, struct load_region *r);
/*
 * Cell c of the cells workload: RAM split in order into K cells of whole MiB when it is a
 * whole number of at least K MiB (as one would size QEMU memory backends), else of whole pages,
 * else of lines; cell sizes differ by at most one such unit.  Each cell is one RAM mapping and
 * one QEMU memory backend (load_qemu_args_build).
 */
void load_pattern_cell_range(const struct load_pattern *p, int cell, struct load_region *r);
/* The vCPUs of cell c: [*first, *first + *nr), contiguous since cells split vCPUs in order. */
void load_pattern_cell_vcpus(const struct load_pattern *p, int cell, int *first, int *nr);
/* The cell of vCPU v: vCPUs split evenly in order, v K / n. */
int load_pattern_cell_of(const struct load_pattern *p, int vcpu);
/* The phase at elapsed_s seconds into the run (0 for workloads without phases). */
uint64_t load_pattern_phase(const struct load_pattern *p, double elapsed_s);
/*
 * The home slice of vCPU v in phase `phase`: v (private, idle), (v + phase) mod n (phased),
 * perm[v] with perm a shuffle drawn from (seed, phase) and the identity in phase 0 (adverse),
 * the cell of v (cells), 0 (shared).  scratch holds p->vcpus ints (used by adverse only).
 */
int load_pattern_home(const struct load_pattern *p, int vcpu, uint64_t phase, int *scratch);
/* The adverse workload's slice-to-vCPU permutation for `phase`, into perm[0..n-1]. */
void load_pattern_adverse_perm(uint64_t seed, uint64_t phase, int n, int *perm);

/* The next line to touch: in `home` with LOAD_LOCAL_SHARE, else anywhere in nr_lines. */
static inline uint64_t
load_pattern_pick(const struct load_region *home, uint64_t nr_lines, struct load_rng *rng)
{
	if ((uint32_t)(load_rng_next(rng) >> 32) < LOAD_LOCAL_THRESHOLD)
		return home->first_line + load_rng_below(rng, home->nr_lines);
	return load_rng_below(rng, nr_lines);
}

#endif

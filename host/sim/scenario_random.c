/*
 * scenario_random.c - seeded random scenarios as JSON text (scenario_random.h).
 *
 * Every draw comes from one PCG32 stream seeded with the seed, in a fixed order, so the text
 * is a function of the seed alone.  Sizes are drawn in whole GiB and vCPUs, so the text
 * carries them exactly and the cells' memory adds up to the VM's without rounding.
 */
#include <stdbool.h>
#include <stdio.h>

#include "host/sim/scenario_random.h"
#include "policy/util.h"

/* Distinguishes this generator's stream from the simulator's (same seed, other numbers). */
#define SCN_RANDOM_STREAM 0x5ce7a410
/* Share of scenarios met running, and when the balancer then starts (share of the run). */
#define SCN_RANDOM_MET_RUNNING 0.25
#define SCN_RANDOM_MET_START   0.20
/* Per VM: chances of a late arrival, an early departure, a first-touch node, a node policy. */
#define SCN_RANDOM_LATE        0.25
#define SCN_RANDOM_LEAVE       0.20
#define SCN_RANDOM_FIRST_TOUCH 0.35
/* Share of scenarios with node policies at all, and then the chance per VM. */
#define SCN_RANDOM_POLICIES     0.30
#define SCN_RANDOM_NODES_POLICY 0.25
#define SCN_RANDOM_MAX_VMS      48

struct scn_random {
	struct util_rng rng;
	struct util_buf out;
	int nodes, cpus, mem_gib;
	double duration_s;
	bool policies; /* this scenario confines some VMs to half of the nodes */
};

static int
scn_random_pick(struct scn_random *r, const int *choices, int nr)
{
	return choices[util_rng_below(&r->rng, (uint32_t)nr)];
}

/* Uniform integer in [lo, hi]. */
static int
scn_random_int(struct scn_random *r, int lo, int hi)
{
	return lo + (int)util_rng_below(&r->rng, (uint32_t)(hi - lo + 1));
}

/* Uniform in [lo, hi], on a grid of step (so that the text shows it exactly). */
static double
scn_random_grid(struct scn_random *r, double lo, double hi, double step)
{
	return lo + step * scn_random_int(r, 0, (int)((hi - lo) / step + 0.5));
}

static bool
scn_random_chance(struct scn_random *r, double p)
{
	return util_rng_double(&r->rng) < p;
}

/* Flat (10/21), or on 4 and 8 nodes sometimes pairs of close nodes (12) and far ones (21/31). */
static void
scn_random_host(struct scn_random *r)
{
	static const int nodes[] = {2, 4, 8}, cpus[] = {8, 12, 16, 24, 32},
	                 mem[] = {32, 48, 64, 96, 128};
	bool two_level;

	r->nodes = scn_random_pick(r, nodes, 3);
	r->cpus = scn_random_pick(r, cpus, 5);
	r->mem_gib = scn_random_pick(r, mem, 5);
	two_level = r->nodes > 2 && scn_random_chance(r, 0.5);
	util_buf_printf(&r->out, "  \"host\": {\"nodes\": %d, \"cpus_per_node\": %d, ", r->nodes,
	                r->cpus);
	util_buf_printf(&r->out, "\"memory_per_node_gib\": %d", r->mem_gib);
	if (two_level) {
		util_buf_printf(&r->out, ",\n    \"distances\": [");
		for (int i = 0; i < r->nodes; i++) {
			util_buf_printf(&r->out, "%s[", i ? ", " : "");
			for (int j = 0; j < r->nodes; j++) {
				int d = i == j           ? 10
				        : i / 2 == j / 2 ? 12
				        : i / 4 == j / 4 ? 21
				                         : 31;

				util_buf_printf(&r->out, "%s%d", j ? "," : "", d);
			}
			util_buf_printf(&r->out, "]");
		}
		util_buf_printf(&r->out, "]");
	}
	util_buf_printf(&r->out, "},\n");
}

/* A VM's size: small, medium, node-sized, or wider than a node in vCPUs, memory or both. */
static void
scn_random_size(struct scn_random *r, int *vcpus, int *gib)
{
	int kind = scn_random_int(r, 0, 9);

	if (kind < 4) { /* small */
		*vcpus = scn_random_int(r, 1, 4);
		*gib = scn_random_int(r, 1, 8);
	} else if (kind < 7) { /* up to half a node */
		*vcpus = scn_random_int(r, 2, r->cpus / 2);
		*gib = scn_random_int(r, 2, r->mem_gib / 2);
	} else if (kind < 9) { /* about a node */
		*vcpus = scn_random_int(r, r->cpus / 2, r->cpus);
		*gib = scn_random_int(r, r->mem_gib / 3, r->mem_gib * 3 / 4);
	} else { /* wider than a node: vCPUs, memory or both */
		int wide = scn_random_int(r, 1, 3);

		*vcpus = wide & 1 ? scn_random_int(r, r->cpus + 1, r->cpus * 3 / 2)
		                  : scn_random_int(r, r->cpus / 2, r->cpus);
		*gib = wide & 2 ? scn_random_int(r, r->mem_gib + 1, r->mem_gib * 3 / 2)
		                : scn_random_int(r, r->mem_gib / 3, r->mem_gib * 3 / 4);
	}
}

/* cells: 2..4 cells (no more than vCPUs, nodes or GiB), contiguous vCPUs, GiB split evenly. */
static void
scn_random_cells(struct scn_random *r, int vcpus, int gib)
{
	int nr = scn_random_int(r, 2, 4);

	if (nr > vcpus)
		nr = vcpus;
	if (nr > r->nodes)
		nr = r->nodes;
	if (nr > gib)
		nr = gib;
	util_buf_printf(&r->out, ", \"cells\": [");
	for (int c = 0, v = 0, g = 0; c < nr; c++) {
		int vend = vcpus * (c + 1) / nr, gend = gib * (c + 1) / nr;

		util_buf_printf(&r->out, "%s{\"vcpus\": [", c ? ", " : "");
		for (int first = v; v < vend; v++)
			util_buf_printf(&r->out, "%s%d", v > first ? "," : "", v);
		util_buf_printf(&r->out, "], \"memory_gib\": %d}", gend - g);
		g = gend;
	}
	util_buf_printf(&r->out, "]");
}

static void
scn_random_times(struct scn_random *r, double balancer_start_s)
{
	double start = 0;

	if (scn_random_chance(r, SCN_RANDOM_LATE)) {
		start = scn_random_grid(r, 1, r->duration_s / 2, 1);
		util_buf_printf(&r->out, ", \"start_s\": %g", start);
	}
	if (scn_random_chance(r, SCN_RANDOM_LEAVE)) {
		double from =
		    (start > balancer_start_s ? start : balancer_start_s) + r->duration_s * 0.3;

		if (from < r->duration_s - 1)
			util_buf_printf(&r->out, ", \"stop_s\": %g",
			                scn_random_grid(r, from, r->duration_s - 1, 1));
	}
	if (scn_random_chance(r, SCN_RANDOM_FIRST_TOUCH))
		util_buf_printf(&r->out, ", \"first_touch_node\": %d",
		                scn_random_int(r, 0, r->nodes - 1));
}

/* One VM, sized by the caller; the workload and the rest drawn here. */
static void
scn_random_vm(struct scn_random *r, int idx, int vcpus, int gib, double balancer_start_s)
{
	static const char *const workload[] = {"private", "private", "private", "shared", "shared",
	                                       "cells",   "phased",  "adverse", "idle",   "idle"};
	const char *w = workload[util_rng_below(&r->rng, 10)];

	if (w[0] == 'c' && vcpus < 2)
		w = "private";
	util_buf_printf(&r->out, "%s    {\"name\": \"vm%d\", \"vcpus\": %d, \"memory_gib\": %d",
	                idx ? ",\n" : "", idx, vcpus, gib);
	util_buf_printf(&r->out, ", \"workload\": \"%s\", \"mem_intensity\": %g", w,
	                scn_random_grid(r, 0.2, 0.8, 0.05));
	if (w[0] != 'i')
		util_buf_printf(&r->out, ", \"util\": %g",
		                scn_random_chance(r, 0.5) ? 1.0 : scn_random_grid(r, 0.3, 1, 0.05));
	if (w[0] == 'c')
		scn_random_cells(r, vcpus, gib);
	scn_random_times(r, balancer_start_s);
	if (r->policies && scn_random_chance(r, SCN_RANDOM_NODES_POLICY)) {
		int half = r->nodes / 2, first = scn_random_chance(r, 0.5) ? 0 : half;

		util_buf_printf(
		    &r->out,
		    ", \"policy\": \"<vnuma:policy "
		    "xmlns:vnuma='http://vnumad.org/schemas/policy/1.0' nodes='%d-%d'/>\"",
		    first, first + half - 1);
	}
	util_buf_printf(&r->out, "}");
}

char *
scenario_random_json(uint64_t seed, double duration_s)
{
	struct scn_random r = {.duration_s = duration_s < 10 ? 10 : duration_s};
	double balancer_start_s = 0, vcpu_target;
	int vcpus_sum = 0, gib_sum = 0, mem_cap;

	util_rng_seed(&r.rng, seed, SCN_RANDOM_STREAM);
	util_buf_printf(&r.out, "{\n  \"name\": \"random-%016llx\",\n", (unsigned long long)seed);
	util_buf_printf(&r.out, "  \"description\": \"scenario_random_json(0x%016llx, %g)\",\n",
	                (unsigned long long)seed, r.duration_s);
	util_buf_printf(&r.out, "  \"seed\": %u,\n  \"duration_s\": %g,\n",
	                util_rng_u32(&r.rng) % 100000 + 1, r.duration_s);
	if (scn_random_chance(&r, SCN_RANDOM_MET_RUNNING)) {
		balancer_start_s = r.duration_s * SCN_RANDOM_MET_START;
		util_buf_printf(&r.out, "  \"balancer_start_s\": %g,\n", balancer_start_s);
	}
	scn_random_host(&r);
	r.policies = scn_random_chance(&r, SCN_RANDOM_POLICIES);
	vcpu_target = r.nodes * r.cpus * scn_random_grid(&r, 0.5, 1.3, 0.05);
	mem_cap = (int)(r.nodes * r.mem_gib * SCN_RANDOM_MEM_FILL);
	util_buf_printf(&r.out, "  \"vms\": [\n");
	for (int i = 0; i < SCN_RANDOM_MAX_VMS && vcpus_sum < vcpu_target; i++) {
		int vcpus, gib;

		scn_random_size(&r, &vcpus, &gib);
		if (gib_sum + gib > mem_cap)
			gib = mem_cap - gib_sum;
		if (gib < 1 && i > 0)
			break;
		if (gib < 1)
			gib = 1;
		scn_random_vm(&r, i, vcpus, gib, balancer_start_s);
		vcpus_sum += vcpus;
		gib_sum += gib;
	}
	util_buf_printf(&r.out, "\n  ]\n}\n");
	return r.out.data;
}

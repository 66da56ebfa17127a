/*
 * test_oracle_search.c - how good the oracle's search is: at least as good as brute force on
 * small cases under CPU and memory pressure and as every uneven split of a VM too big for a
 * node; cells VMs split by cell; exact packings found; phased VMs valued as the simulator runs
 * them.  See docs/peers/oracle.md, "How good it is".
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/peer_oracle.h"
#include "host/sim/peers.h"
#include "host/sim/sim.h"
#include "policy/model.h"
#include "tests/unit/oracle_test_util.h"

/* Small cases under CPU and memory pressure, each VM with at most 3 vCPUs and 3 slices. */
struct t_small_vm {
	int vcpus;
	double gib, mem_intensity, util, start_s, stop_s;
	enum scn_workload w;
};

struct t_small {
	int cpus;
	double mem_gib;
	struct t_small_vm vm[3];
};

/* The best of every placement of each VM's vCPUs and whole slices on two nodes. */
static double
t_brute_force(const struct scenario *s)
{
	struct oracle_binding *x = oracle_binding_new(s);
	int bits = 0, nv[3], ns[3];
	double best = -1;

	for (int i = 0; i < 3; i++) {
		nv[i] = s->vms[i].vcpus;
		ns[i] = oracle_vm_nr_slices(&s->vms[i]);
		bits += nv[i] + ns[i];
	}
	for (unsigned code = 0; code < (1u << bits); code++) {
		int shift = 0;
		double w;

		for (int i = 0; i < 3; i++) {
			unsigned vbits = (code >> shift) & ((1u << nv[i]) - 1);

			shift += nv[i];
			t_bind_bits(s, x, i, vbits, (code >> shift) & ((1u << ns[i]) - 1));
			shift += ns[i];
		}
		if (oracle_binding_overfill_mib(s, x) > 0)
			continue;
		w = oracle_binding_throughput(s, x);
		best = w > best ? w : best;
	}
	oracle_binding_free(x);
	return best;
}

/*
 * Under CPU and memory pressure (2-4 CPUs and 2-4 GiB a node, VMs coming and going) the
 * search is at least as good as every placement of vCPUs and whole slices; it may do
 * better, placing part of a slice where a node fills up.  The first two cases are ones
 * where moving one VM at a time, in even blocks, fell short: two VMs must trade places on a
 * full node.
 */
static void
test_search_beats_brute_force_under_pressure(void **state)
{
	static const struct t_small cases[] = {
	    {2,
	     2,
	     {{2, 0.5, 0.2, 0.5, 0, -1, SCN_WORKLOAD_PRIVATE},
	      {1, 1.5, 0.3, 1, 100, 400, SCN_WORKLOAD_PRIVATE},
	      {2, 0.5, 0.5, 1, 0, -1, SCN_WORKLOAD_PHASED}}},
	    {4,
	     3,
	     {{1, 2.5, 0.8, 1, 0, -1, SCN_WORKLOAD_PRIVATE},
	      {3, 1.5, 0.8, 1, 100, 400, SCN_WORKLOAD_PRIVATE},
	      {3, 0.5, 0.6, 0.5, 0, -1, SCN_WORKLOAD_SHARED}}},
	    {3,
	     4,
	     {{3, 2, 0.9, 1, 0, -1, SCN_WORKLOAD_PRIVATE},
	      {2, 2, 0.5, 1, 0, -1, SCN_WORKLOAD_SHARED},
	      {2, 3, 0.7, 1, 100, 450, SCN_WORKLOAD_PRIVATE}}},
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct scenario *s = t_scn(2, cases[k].cpus, cases[k].mem_gib, 600, NULL);
		struct oracle_binding *b;
		double best;

		for (int i = 0; i < 3; i++) {
			const struct t_small_vm *v = &cases[k].vm[i];
			char name[2] = {(char)('a' + i), 0};
			struct scn_vm *vm = t_vm(s, name, v->vcpus, v->gib, v->w);

			vm->mem_intensity = v->mem_intensity;
			vm->util = v->util;
			vm->start_s = v->start_s;
			vm->stop_s = v->stop_s;
		}
		b = t_plan(s);
		best = t_brute_force(s);
		assert_true(best > 0);
		assert_false(b->overcommit);
		if (b->throughput < best - 1e-9 * best)
			fail_msg("case %zu: the search reaches %.3f, a placement %.3f", k,
			         b->throughput, best);
		oracle_binding_free(b);
		t_free(s);
	}
}

/*
 * A VM too big for a node next to two small ones (02-vm-too-big): the search is at least as
 * good as every split in vCPU-index order, k vCPUs and the first M MiB on one node, the rest
 * and the small VMs anywhere; and it finds "fill one node, spill the rest": 16 vCPUs and the
 * node's whole capacity on one node.
 */
static void
test_fill_and_spill_beats_every_split(void **state)
{
	struct scenario *s = t_scn(2, 16, 64, 600, NULL);
	uint64_t cap = oracle_node_cap_mib(s), total = 80 * 1024;
	struct oracle_binding *b, *x;
	double best = -1;
	int on_full = -1;

	t_vm(s, "big", 20, 80, SCN_WORKLOAD_PRIVATE)->mem_intensity = 0.6;
	t_vm(s, "small1", 4, 8, SCN_WORKLOAD_PRIVATE);
	t_vm(s, "small2", 4, 8, SCN_WORKLOAD_SHARED);
	b = t_plan(s);
	x = oracle_binding_new(s);
	for (int k = 0; k <= 20; k++)
		for (uint64_t m = 0; m <= total + 3; m = m < total ? m + 1024 : m + 1) {
			/* every GiB, then the fills: the whole capacity, less one or two small VMs
			 */
			uint64_t first = m <= total ? m : cap - (m - total - 1) * 8192;
			struct oracle_range r[2] = {{0, first, 0}, {first, total - first, 1}};

			for (int v = 0; v < 20; v++)
				x->vms[0].vcpu_node[v] = v < k ? 0 : 1;
			oracle_vm_binding_set_ranges(&x->vms[0], first == 0 ? &r[1] : r,
			                             first == 0 || first == total ? 1 : 2);
			for (unsigned smalls = 0; smalls < 4; smalls++) {
				for (int i = 1; i <= 2; i++) {
					for (int v = 0; v < 4; v++)
						x->vms[i].vcpu_node[v] = (smalls >> (i - 1)) & 1;
					x->vms[i].ranges[0].node = (smalls >> (i - 1)) & 1;
				}
				if (oracle_binding_overfill_mib(s, x) == 0) {
					double w = oracle_binding_throughput(s, x);

					best = w > best ? w : best;
				}
			}
		}
	assert_true(b->throughput >= best - 1e-9 * best);
	for (int n = 0; n < 2; n++) {
		uint64_t mib = 0;
		int vcpus = 0;

		for (int r = 0; r < b->vms[0].nr_ranges; r++)
			mib += b->vms[0].ranges[r].node == n ? b->vms[0].ranges[r].len_mib : 0;
		for (int v = 0; v < 20; v++)
			vcpus += b->vms[0].vcpu_node[v] == n;
		if (mib == cap && vcpus == 16)
			on_full = n;
	}
	assert_true(on_full >= 0);
	oracle_binding_free(x);
	oracle_binding_free(b);
	t_free(s);
}

/*
 * A cells VM whose cells interleave vCPU indexes and which fits no node: each cell's memory
 * stays whole on a node with as many of its vCPUs as that node has CPUs; the others go where
 * there are CPUs.  The search does at least as well as that layout, made by hand.
 */
static void
test_interleaved_cells_split_by_cell(void **state)
{
	struct scenario *s = t_scn(4, 16, 64, 600, NULL);
	static const double gib[2] = {30, 30};
	struct oracle_range r[2] = {{0, 30 * 1024, 0}, {30 * 1024, 30 * 1024, 1}};
	int cell_of[40], seen[2] = {0, 0};
	struct oracle_binding *b, *x;

	for (int v = 0; v < 40; v++)
		cell_of[v] = v % 2;
	t_cells(t_vm(s, "hpc", 40, 60, SCN_WORKLOAD_CELLS), 2, cell_of, gib);
	s->vms[0].mem_intensity = 0.8;
	b = t_plan(s);
	x = oracle_binding_new(s);
	for (int v = 0; v < 40; v++) /* 16 of each cell with its memory, 4 + 4 on nodes 2, 3 */
		x->vms[0].vcpu_node[v] = seen[v % 2]++ < 16 ? v % 2 : 2 + v % 2;
	oracle_vm_binding_set_ranges(&x->vms[0], r, 2);
	assert_int_equal(oracle_binding_overfill_mib(s, x), 0);
	assert_true(b->throughput >= oracle_binding_throughput(s, x) - 1e-9);
	oracle_binding_free(x);
	oracle_binding_free(b);
	t_free(s);
}

/*
 * Ten VMs whose CPU demand fits the host's 64 CPUs only packed exactly (14-late-start): one
 * VM at a time cannot get there from the greedy start; packing a pair of nodes anew does.
 * Every VM then runs whole on one node without sharing CPUs: the bound.
 */
static void
test_exact_packing_found(void **state)
{
	struct scenario *s = t_scn(4, 16, 64, 600, NULL);
	static const struct {
		int vcpus;
		double gib, util;
		enum scn_workload w;
	} vm[10] = {{8, 24, 1, SCN_WORKLOAD_PRIVATE},    {8, 24, 1, SCN_WORKLOAD_PRIVATE},
	            {6, 12, 1, SCN_WORKLOAD_PRIVATE},    {6, 12, 1, SCN_WORKLOAD_SHARED},
	            {4, 8, 1, SCN_WORKLOAD_SHARED},      {4, 8, 1, SCN_WORKLOAD_SHARED},
	            {12, 32, 0.8, SCN_WORKLOAD_PRIVATE}, {8, 16, 1, SCN_WORKLOAD_SHARED},
	            {2, 4, 1, SCN_WORKLOAD_IDLE},        {6, 12, 1, SCN_WORKLOAD_PRIVATE}};
	struct oracle_binding *b;
	double bound = 0;

	for (int i = 0; i < 10; i++) {
		char name[16];
		struct scn_vm *v;

		snprintf(name, sizeof(name), "v%d", i);
		v = t_vm(s, name, vm[i].vcpus, vm[i].gib, vm[i].w);
		v->util = vm[i].util;
		v->mem_intensity = i < 2 ? 0.6 : 0.5;
		v->start_s = i == 9 ? 200 : 0;
		bound += (vm[i].w == SCN_WORKLOAD_IDLE ? SIM_IDLE_UTIL : vm[i].util) * vm[i].vcpus *
		         (600 - v->start_s);
	}
	b = t_plan(s);
	assert_false(b->exhaustive);
	assert_true(fabs(b->throughput - bound) <= 1e-9 * bound);
	for (int i = 0; i < 10; i++)
		assert_true(t_single_node(&b->vms[i]) >= 0);
	oracle_binding_free(b);
	t_free(s);
}

/*
 * A phased VM the oracle must split (6 vCPUs, 4 CPUs a node) whose run sees 6 phases and
 * part of a seventh, not a full rotation: the evaluator weighs each home slice by the phases
 * the simulator runs, so the simulator measures what it predicted.
 */
static void
test_sim_agrees_on_phased(void **state)
{
	struct scenario *s = t_scn(2, 4, 16, 500, NULL);
	struct oracle_binding *b;
	struct sim_result res;
	char err[256] = "";
	struct scn_vm *vm;

	vm = t_vm(s, "ph", 6, 12, SCN_WORKLOAD_PHASED);
	vm->mem_intensity = 0.8;
	vm->phase_s = 70;
	vm->start_s = 20;
	t_vm(s, "p", 2, 4, SCN_WORKLOAD_PRIVATE);
	b = t_plan(s);
	assert_true(t_single_node(&b->vms[0]) < 0);
	assert_int_equal(sim_run(s, &peer_oracle_ops, &res, err, sizeof(err)), 0);
	assert_true(fabs(res.throughput - b->throughput) <= 1e-9 * b->throughput);
	sim_result_free(&res);
	oracle_binding_free(b);
	t_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_search_beats_brute_force_under_pressure),
	    cmocka_unit_test(test_fill_and_spill_beats_every_split),
	    cmocka_unit_test(test_interleaved_cells_split_by_cell),
	    cmocka_unit_test(test_exact_packing_found),
	    cmocka_unit_test(test_sim_agrees_on_phased),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

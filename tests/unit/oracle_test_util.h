/*
 * oracle_test_util.h - the oracle's unit tests build scenarios by hand (they do not depend on
 * the JSON loader) and check bindings with these helpers.  Include after cmocka.h: t_plan()
 * asserts.  Ownership: t_scn() and t_vm() allocate with calloc/realloc, t_free() frees all.
 */
#ifndef VNUMAD_TESTS_ORACLE_TEST_UTIL_H
#define VNUMAD_TESTS_ORACLE_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "host/sim/peer_oracle.h"
#include "tests/unit/scn_build.h"

static inline struct scenario *
t_scn(int nodes, int cpus, double mem_gib, double duration_s, const int *dist)
{
	struct scenario *s = calloc(1, sizeof(*s));

	snprintf(s->name, sizeof(s->name), "oracle-test");
	s->seed = 1;
	s->duration_s = duration_s;
	s->host.nodes = nodes;
	s->host.cpus_per_node = cpus;
	s->host.memory_per_node_gib = mem_gib;
	s->host.distances = calloc((size_t)nodes * nodes, sizeof(int));
	for (int i = 0; i < nodes * nodes; i++)
		s->host.distances[i] = dist ? dist[i] : (i / nodes == i % nodes ? 10 : 21);
	return s;
}

/* Append a VM with the scenario defaults; the pointer is valid until the next t_vm(). */
static inline struct scn_vm *
t_vm(struct scenario *s, const char *name, int vcpus, double gib, enum scn_workload w)
{
	struct scn_vm *vm;

	s->vms = realloc(s->vms, sizeof(*s->vms) * (size_t)(s->nr_vms + 1));
	vm = &s->vms[s->nr_vms++];
	scn_build_vm(vm, name, vcpus, gib, w);
	return vm;
}

/* Cells: vCPU v goes to cell cell_of[v]; cell c has gib[c]. */
static inline void
t_cells(struct scn_vm *vm, int nr_cells, const int *cell_of, const double *gib)
{
	vm->nr_cells = nr_cells;
	vm->cells = calloc((size_t)nr_cells, sizeof(*vm->cells));
	for (int c = 0; c < nr_cells; c++) {
		vm->cells[c].memory_gib = gib[c];
		vm->cells[c].vcpus = calloc((size_t)vm->vcpus, sizeof(int));
		for (int v = 0; v < vm->vcpus; v++)
			if (cell_of[v] == c)
				vm->cells[c].vcpus[vm->cells[c].nr_vcpus++] = v;
	}
}

static inline void
t_free(struct scenario *s)
{
	for (int i = 0; i < s->nr_vms; i++) {
		for (int c = 0; c < s->vms[i].nr_cells; c++)
			free(s->vms[i].cells[c].vcpus);
		free(s->vms[i].cells);
	}
	free(s->vms);
	free(s->host.distances);
	free(s);
}

static inline struct oracle_binding *
t_plan(const struct scenario *s)
{
	struct oracle_binding *b = NULL;

	assert_int_equal(oracle_plan(s, &b), 0);
	assert_non_null(b);
	assert_int_equal(b->nr_vms, s->nr_vms);
	assert_true(b->throughput > 0);
	return b;
}

/* Node of all of a VM (vCPUs and memory), or -1 when it is split. */
static inline int
t_single_node(const struct oracle_vm_binding *vb)
{
	int n = vb->vcpu_node[0];

	for (int v = 0; v < vb->nr_vcpus; v++)
		if (vb->vcpu_node[v] != n)
			return -1;
	for (int r = 0; r < vb->nr_ranges; r++)
		if (vb->ranges[r].node != n)
			return -1;
	return n;
}

/* Set VM i of b: vCPU v on bit v of vbits, slice k on bit k of sbits (private layout). */
static inline void
t_bind_bits(const struct scenario *s, struct oracle_binding *b, int i, unsigned vbits,
            unsigned sbits)
{
	struct oracle_range r[8];
	int n = oracle_vm_nr_slices(&s->vms[i]);

	for (int v = 0; v < s->vms[i].vcpus; v++)
		b->vms[i].vcpu_node[v] = (vbits >> v) & 1;
	for (int k = 0; k < n; k++) {
		oracle_vm_slice_range(&s->vms[i], k, &r[k].start_mib, &r[k].len_mib);
		r[k].node = (sbits >> k) & 1;
	}
	oracle_vm_binding_set_ranges(&b->vms[i], r, n);
}

#endif

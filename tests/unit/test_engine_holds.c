/*
 * test_engine_holds.c - home-node holds (policy/engine_converge.c) on a host of many unpinned
 * vCPUs already at home: each is pinned to its home once, never more than
 * ENGINE_HOLDS_PER_ROUND in one round, the rest in the next rebalances, and nothing moves.
 * Hand-built snapshots: 2 nodes of 512 CPUs, 40 VMs of 16 busy vCPUs, each VM's vCPUs and
 * memory on one node (even VMs on node 0, odd on node 1); pins are applied the way a host does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy/engine.h"
#include "policy/engine_internal.h"
#include "policy/model.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

#define NODES     2
#define CPUS_NODE 512
#define VMS       40
#define VCPUS     16
#define VM_MIB    256

static uint64_t allowed[VMS][VCPUS];

static struct snapshot *
holds_snapshot(double now_s)
{
	int vcpus[VMS];
	struct snapshot *snap;

	for (int i = 0; i < VMS; i++)
		vcpus[i] = VCPUS;
	snap = snapshot_new(NODES, NODES * CPUS_NODE, VMS, vcpus);
	snap->now_s = now_s;
	for (int n = 0; n < NODES; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = CPUS_NODE;
		snap->nodes[n].mem_total_mib = 1 << 20;
		snap->nodes[n].mem_free_mib = (1 << 20) - VMS * VM_MIB;
		for (int m = 0; m < NODES; m++)
			snap->distance[n * NODES + m] = n == m ? 10 : 21;
	}
	for (int c = 0; c < NODES * CPUS_NODE; c++)
		snap->cpu_node[c] = c / CPUS_NODE;
	for (int i = 0; i < VMS; i++) {
		struct snap_vm *vm = &snap->vms[i];
		int node = i % NODES;

		vm->id = 100 + i;
		snprintf(vm->name, sizeof(vm->name), "vm%d", i);
		vm->uptime_s = 100;
		vm->mem_mib = VM_MIB;
		vm->resident_mib[node] = VM_MIB;
		vm_policy_init_default(&vm->policy);
		vm->policy_ok = true;
		vm->host_nodes = NODEMASK_ALL;
		for (int v = 0; v < VCPUS; v++) {
			vm->vcpus[v].tid = 10000 + VCPUS * i + v;
			vm->vcpus[v].cpu = node * CPUS_NODE + (i / NODES) * VCPUS + v;
			vm->vcpus[v].node = node;
			vm->vcpus[v].allowed_nodes = allowed[i][v];
			vm->vcpus[v].cpu_use = 1.0;
		}
	}
	return snap;
}

static void
test_holds_capped_per_round(void **state)
{
	void *eng = vnumad_balancer_ops.create(&(struct balancer_args){.seed = 1});
	struct plan plan;
	int total = 0, rounds_with_holds = 0;

	(void)state;
	plan_init(&plan);
	for (int i = 0; i < VMS; i++)
		for (int v = 0; v < VCPUS; v++)
			allowed[i][v] = NODEMASK_ALL;
	for (int r = 0; r < 12; r++) {
		struct snapshot *snap = holds_snapshot(1000 + r);
		int nr = 0;

		plan_reset(&plan);
		assert_int_equal(vnumad_balancer_ops.decide(eng, snap, &plan), 0);
		for (size_t k = 0; k < plan.nr_pins; k++) {
			const struct plan_pin *p = &plan.pins[k];
			int i = p->vm_id - 100;

			assert_string_equal(p->why.rule, "hold");
			assert_int_equal(p->nodes, nodemask_of(i % NODES)); /* where it runs */
			assert_true(allowed[i][p->vcpu] != p->nodes);       /* never twice */
			allowed[i][p->vcpu] = p->nodes;
			nr++;
		}
		assert_true(nr <= ENGINE_HOLDS_PER_ROUND);
		total += nr;
		rounds_with_holds += nr > 0;
		snapshot_free(snap);
	}
	assert_int_equal(total, VMS * VCPUS); /* every vCPU held, once */
	assert_int_equal(rounds_with_holds, 2);
	plan_free(&plan);
	vnumad_balancer_ops.destroy(eng);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_holds_capped_per_round),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

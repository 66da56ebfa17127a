/*
 * test_engine_policy_nodes.c - a VM's policy nodes bound where its vCPUs may run, as the
 * libvirt system test found (tests/system/test_libvirt_nested.sh, issue 6):
 * - a vCPU that sits on its home node but whose affinity reaches other nodes is pinned home,
 *   once (the next rounds see the pin and plan nothing), busy or idle, whatever its policy's
 *   nodes (the home-node hold);
 * - a vCPU outside its policy's nodes goes home even when home has no free CPU and no smaller
 *   group to flip with (two 2-vCPU VMs whose policies both name one node of 2 CPUs).
 * The engine is driven with hand-built snapshots of a host of 2 nodes x 2 CPUs, pins applied
 * the way a host does (the vCPU's affinity becomes the mask, it runs on the mask's first node).
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
#include "policy/model.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

#define NODES     2
#define CPUS_NODE 2
#define NODE_MIB  4096
#define VM_MIB    64
#define MAX_VMS   2
#define MAX_VCPUS 2

/* A VM as the test's host keeps it between rounds. */
struct tvm {
	int vcpus;
	int node[MAX_VCPUS];
	uint64_t allowed[MAX_VCPUS];
	double use[MAX_VCPUS];
	uint64_t policy_nodes;
	int mem_node;
};

struct world {
	int nr_vms;
	struct tvm vms[MAX_VMS];
	double now_s;
	void *eng;
	struct plan plan;
};

static struct snapshot *
world_snapshot(const struct world *w)
{
	int vcpus[MAX_VMS];
	struct snapshot *snap;

	for (int i = 0; i < w->nr_vms; i++)
		vcpus[i] = w->vms[i].vcpus;
	snap = snapshot_new(NODES, NODES * CPUS_NODE, w->nr_vms, vcpus);
	snap->now_s = w->now_s;
	for (int n = 0; n < NODES; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = CPUS_NODE;
		snap->nodes[n].mem_total_mib = NODE_MIB;
		snap->nodes[n].mem_free_mib = NODE_MIB - VM_MIB * MAX_VMS;
		for (int m = 0; m < NODES; m++)
			snap->distance[n * NODES + m] = n == m ? 10 : 21;
	}
	for (int c = 0; c < NODES * CPUS_NODE; c++)
		snap->cpu_node[c] = c / CPUS_NODE;
	for (int i = 0; i < w->nr_vms; i++) {
		const struct tvm *t = &w->vms[i];
		struct snap_vm *vm = &snap->vms[i];

		vm->id = 100 + i;
		snprintf(vm->name, sizeof(vm->name), "vm%d", i);
		vm->uptime_s = 100; /* running before vnumad started */
		vm->mem_mib = VM_MIB;
		vm->resident_mib[t->mem_node] = VM_MIB;
		vm_policy_init_default(&vm->policy);
		vm->policy.nodes = t->policy_nodes;
		vm->policy_ok = true;
		vm->host_nodes = NODEMASK_ALL;
		for (int v = 0; v < t->vcpus; v++) {
			vm->vcpus[v].tid = 1000 + 10 * i + v;
			vm->vcpus[v].cpu = t->node[v] * CPUS_NODE;
			vm->vcpus[v].node = t->node[v];
			vm->vcpus[v].allowed_nodes = t->allowed[v];
			vm->vcpus[v].cpu_use = t->use[v];
		}
	}
	return snap;
}

/* One round: the engine's plan, applied; returns the number of pins planned. */
static int
world_round(struct world *w)
{
	struct snapshot *snap = world_snapshot(w);
	int nr;

	plan_reset(&w->plan);
	assert_int_equal(vnumad_balancer_ops.decide(w->eng, snap, &w->plan), 0);
	for (size_t i = 0; i < w->plan.nr_pins; i++) {
		const struct plan_pin *p = &w->plan.pins[i];
		struct tvm *t = &w->vms[p->vm_id - 100];

		assert_true((p->nodes & ~t->policy_nodes) == 0); /* never outside the policy */
		t->allowed[p->vcpu] = p->nodes;
		if (!nodemask_test(p->nodes, t->node[p->vcpu]))
			t->node[p->vcpu] = nodemask_first(p->nodes);
	}
	nr = (int)w->plan.nr_pins;
	snapshot_free(snap);
	w->now_s += 1;
	return nr;
}

static void
world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->now_s = 1000;
	w->eng = vnumad_balancer_ops.create(&(struct balancer_args){.seed = 1});
	plan_init(&w->plan);
}

static void
world_fini(struct world *w)
{
	vnumad_balancer_ops.destroy(w->eng);
	plan_free(&w->plan);
}

static struct tvm *
world_vm(struct world *w, int vcpus, int node, uint64_t policy_nodes, double use)
{
	struct tvm *t = &w->vms[w->nr_vms++];

	t->vcpus = vcpus;
	t->policy_nodes = policy_nodes;
	t->mem_node = node;
	for (int v = 0; v < vcpus; v++) {
		t->node[v] = node;
		t->allowed[v] = NODEMASK_ALL;
		t->use[v] = use;
	}
	return t;
}

/* Pins planned over `rounds` rounds. */
static int
world_run(struct world *w, int rounds)
{
	int pins = 0;

	for (int i = 0; i < rounds; i++)
		pins += world_round(w);
	return pins;
}

/*
 * Unpinned vCPUs on their home node, busy or idle, with or without a nodes policy: each is
 * held home once (it stays where it runs), then left be.
 */
static void
test_vcpu_at_home_held_once(void **state)
{
	static const struct {
		uint64_t policy_nodes;
		double use;
	} cases[] = {{NODEMASK_ALL, 1.0}, {NODEMASK_ALL, 0.0}, {1u << 1, 1.0}, {1u << 1, 0.0}};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct world w;
		struct tvm *a;

		world_init(&w);
		a = world_vm(&w, 2, 1, cases[c].policy_nodes, cases[c].use);
		assert_int_equal(world_run(&w, 6), 2);
		for (int v = 0; v < 2; v++) {
			assert_int_equal(a->allowed[v], nodemask_of(1));
			assert_int_equal(a->node[v], 1);
		}
		assert_int_equal(world_run(&w, 20), 0); /* nothing re-issued */
		world_fini(&w);
	}
}

/*
 * B (2 vCPUs, nodes 0) fills node 0's 2 CPUs; A (2 vCPUs) runs pinned on node 1 when its
 * policy changes to nodes 0.  Its policy wins: both its vCPUs go to node 0 though the node is
 * full and B, as big as A, is no flip partner.
 */
static void
test_policy_nodes_win_over_full_node(void **state)
{
	struct world w;
	struct tvm *a, *b;

	(void)state;
	world_init(&w);
	b = world_vm(&w, 2, 0, nodemask_of(0), 0.0);
	a = world_vm(&w, 2, 1, nodemask_of(1), 0.0);
	world_run(&w, 6);
	assert_int_equal(a->allowed[0], nodemask_of(1));
	assert_int_equal(b->allowed[0], nodemask_of(0));
	a->policy_nodes = nodemask_of(0);
	world_run(&w, 6);
	for (int v = 0; v < 2; v++) {
		assert_int_equal(a->allowed[v], nodemask_of(0));
		assert_int_equal(a->node[v], 0);
		assert_int_equal(b->allowed[v], nodemask_of(0));
	}
	assert_int_equal(world_run(&w, 20), 0); /* and it stays so */
	world_fini(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vcpu_at_home_held_once),
	    cmocka_unit_test(test_policy_nodes_win_over_full_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

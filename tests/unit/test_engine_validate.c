/*
 * test_engine_validate.c - the engine's guard against snapshots that name nodes the host does
 * not have (policy/engine_validate.c).  A 4-node host with two good VMs and one bad VM for each
 * form: policy nodes 7, 63, 1+7 or none; a vCPU on node 9 or -2; a vCPU allowed only node 5;
 * host nodes 6 only; a vCPU in guest cell 3 of 2.  Every VM arrives in the first round (the
 * homeless path where `policy --nodes 7` wrote past the engine's node arrays) and runs on for
 * more rounds.  Checked: decide succeeds (an ASan build catches any stray write), the bad VMs
 * get nothing in any plan and are unknown to the engine, each counts once per round in
 * vms_rejected, the good VMs are placed on the host's nodes as usual, and a bad VM whose
 * snapshot is mended arrives then and is placed.
 */
#include <errno.h>
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

#define NODES     4
#define CPUS_NODE 4
#define NODE_MIB  16384
#define VM_MIB    1024
#define VCPUS     2
#define GOOD_VMS  2
#define ROUNDS    6
#define VM_ID(i)  (100 + (i))

/* One way a VM's snapshot can name a node the 4-node host does not have. */
struct spoil {
	const char *what;
	void (*apply)(struct snap_vm *vm);
};

static void
spoil_policy_7(struct snap_vm *vm)
{
	vm->policy.nodes = nodemask_of(7);
}

static void
spoil_policy_63(struct snap_vm *vm)
{
	vm->policy.nodes = nodemask_of(63);
}

static void
spoil_policy_1_and_7(struct snap_vm *vm)
{
	vm->policy.nodes = nodemask_of(1) | nodemask_of(7);
}

static void
spoil_policy_empty(struct snap_vm *vm)
{
	vm->policy.nodes = 0;
}

static void
spoil_vcpu_node_9(struct snap_vm *vm)
{
	vm->vcpus[1].node = 9;
}

static void
spoil_vcpu_node_minus_2(struct snap_vm *vm)
{
	vm->vcpus[0].node = -2;
}

static void
spoil_allowed_5(struct snap_vm *vm)
{
	vm->vcpus[0].allowed_nodes = nodemask_of(5);
}

static void
spoil_host_nodes_6(struct snap_vm *vm)
{
	vm->host_nodes = nodemask_of(6);
}

static void
spoil_cell_3(struct snap_vm *vm)
{
	snapshot_vm_set_cells(vm, 2);
	vm->cells[0].mem_mib = vm->cells[1].mem_mib = VM_MIB / 2;
	vm->cells[1].mem_start_mib = VM_MIB / 2;
	vm->vcpu_cell[0] = 0;
	vm->vcpu_cell[1] = 3;
	vm->policy.placement = VM_POLICY_PLACEMENT_CELLS;
}

static const struct spoil spoils[] = {
    {"policy nodes 7", spoil_policy_7},
    {"policy nodes 63", spoil_policy_63},
    {"policy nodes 1,7", spoil_policy_1_and_7},
    {"policy nodes none", spoil_policy_empty},
    {"vCPU on node 9", spoil_vcpu_node_9},
    {"vCPU on node -2", spoil_vcpu_node_minus_2},
    {"vCPU allowed node 5 only", spoil_allowed_5},
    {"host nodes 6 only", spoil_host_nodes_6},
    {"vCPU in cell 3 of 2", spoil_cell_3},
};

#define BAD_VMS ((int)(sizeof(spoils) / sizeof(spoils[0])))
#define ALL_VMS (GOOD_VMS + BAD_VMS)

/* The host's view between rounds: where each vCPU runs and may run (pins applied). */
struct world {
	double now_s;
	int rounds;
	int vcpu_node[ALL_VMS][VCPUS];
	uint64_t allowed[ALL_VMS][VCPUS];
	bool mended[ALL_VMS]; /* a bad VM's snapshot is good from now on */
	void *eng;
	struct plan plan;
};

static bool
vm_is_bad(const struct world *w, int i)
{
	return i >= GOOD_VMS && !w->mended[i];
}

/* VM i of a snapshot: all VMs arrive in round 0 (uptime 0), memory on node i % NODES after. */
static void
world_fill_vm(const struct world *w, struct snap_vm *vm, int i)
{
	int node = i % NODES;

	vm->id = VM_ID(i);
	snprintf(vm->name, sizeof(vm->name), "vm%d", i);
	vm->uptime_s = w->rounds == 0 ? 0 : w->rounds;
	vm->mem_mib = VM_MIB;
	vm->resident_mib[node] = w->rounds == 0 ? 0 : VM_MIB;
	for (int v = 0; v < VCPUS; v++) {
		vm->vcpus[v].tid = 1000 + 10 * i + v;
		vm->vcpus[v].node = w->vcpu_node[i][v];
		vm->vcpus[v].cpu = w->vcpu_node[i][v] * CPUS_NODE + v;
		vm->vcpus[v].allowed_nodes = w->allowed[i][v];
		vm->vcpus[v].cpu_use = 0.5;
	}
	if (vm_is_bad(w, i))
		spoils[i - GOOD_VMS].apply(vm);
}

static struct snapshot *
world_snapshot(const struct world *w)
{
	int vcpus[ALL_VMS];
	struct snapshot *snap;

	for (int i = 0; i < ALL_VMS; i++)
		vcpus[i] = VCPUS;
	snap = snapshot_new(NODES, NODES * CPUS_NODE, ALL_VMS, vcpus);
	snap->now_s = w->now_s;
	for (int n = 0; n < NODES; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = CPUS_NODE;
		snap->nodes[n].mem_total_mib = NODE_MIB;
		snap->nodes[n].mem_free_mib = NODE_MIB - 4 * VM_MIB;
		for (int m = 0; m < NODES; m++)
			snap->distance[n * NODES + m] = n == m ? 10 : 21;
	}
	for (int c = 0; c < NODES * CPUS_NODE; c++)
		snap->cpu_node[c] = c / CPUS_NODE;
	for (int i = 0; i < ALL_VMS; i++)
		world_fill_vm(w, &snap->vms[i], i);
	return snap;
}

static void
world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->now_s = 1000;
	for (int i = 0; i < ALL_VMS; i++)
		for (int v = 0; v < VCPUS; v++) {
			w->vcpu_node[i][v] = i % NODES;
			w->allowed[i][v] = NODEMASK_ALL;
		}
	w->eng = vnumad_balancer_ops.create(&(struct balancer_args){.seed = 1});
	plan_init(&w->plan);
}

static void
world_fini(struct world *w)
{
	vnumad_balancer_ops.destroy(w->eng);
	plan_free(&w->plan);
}

static uint64_t
rejected(const struct world *w)
{
	struct engine_counters c;

	engine_report_counters(w->eng, &c);
	return c.vms_rejected;
}

/* Nothing in the plan for a bad VM, and every node the plan names is one of the host's. */
static void
plan_check(const struct world *w)
{
	const struct plan *p = &w->plan;
	uint64_t host = nodemask_all_of(NODES);

	for (size_t k = 0; k < p->nr_pins; k++) {
		int i = p->pins[k].vm_id - 100;

		if (vm_is_bad(w, i))
			fail_msg("pin for %s", spoils[i - GOOD_VMS].what);
		assert_true(p->pins[k].nodes == NODEMASK_ALL ||
		            (p->pins[k].nodes != 0 && (p->pins[k].nodes & ~host) == 0));
	}
	for (size_t k = 0; k < p->nr_binds; k++) {
		int i = p->binds[k].vm_id - 100;

		if (vm_is_bad(w, i))
			fail_msg("bind for %s", spoils[i - GOOD_VMS].what);
		assert_true(p->binds[k].nodes != 0 && (p->binds[k].nodes & ~host) == 0);
	}
	for (size_t k = 0; k < p->nr_moves; k++) {
		int i = p->moves[k].vm_id - 100;

		if (vm_is_bad(w, i))
			fail_msg("memory move for %s", spoils[i - GOOD_VMS].what);
		assert_in_range(p->moves[k].from_node, 0, NODES - 1);
		assert_in_range(p->moves[k].to_node, 0, NODES - 1);
	}
	for (size_t k = 0; k < p->nr_samplings; k++)
		if (vm_is_bad(w, p->samplings[k].vm_id - 100))
			fail_msg("sampling for %s",
			         spoils[p->samplings[k].vm_id - 100 - GOOD_VMS].what);
}

/* One round: decide, check, apply the pins the way a host does; returns the pins planned. */
static int
world_round(struct world *w)
{
	struct snapshot *snap = world_snapshot(w);
	int nr;

	plan_reset(&w->plan);
	assert_int_equal(vnumad_balancer_ops.decide(w->eng, snap, &w->plan), 0);
	plan_check(w);
	for (size_t k = 0; k < w->plan.nr_pins; k++) {
		const struct plan_pin *p = &w->plan.pins[k];
		int i = p->vm_id - 100;

		w->allowed[i][p->vcpu] = p->nodes;
		if (!nodemask_test(p->nodes, w->vcpu_node[i][p->vcpu]))
			w->vcpu_node[i][p->vcpu] = nodemask_first(p->nodes);
	}
	nr = (int)w->plan.nr_pins;
	snapshot_free(snap);
	w->now_s += 1;
	w->rounds++;
	return nr;
}

/* A placed VM: a home on the host's nodes, and its vCPUs there. */
static void
assert_placed(const struct world *w, int i)
{
	struct engine_vm_report r;

	assert_int_equal(engine_report_vm(w->eng, VM_ID(i), &r), 0);
	assert_true(r.placed);
	assert_true(r.home != 0 && (r.home & ~nodemask_all_of(NODES)) == 0);
	for (int v = 0; v < VCPUS; v++)
		assert_true(nodemask_test(r.home, w->vcpu_node[i][v]));
}

static void
test_bad_vms_skipped_and_counted(void **state)
{
	struct engine_vm_report r;
	struct world w;

	(void)state;
	world_init(&w);
	for (int round = 1; round <= ROUNDS; round++) {
		int pins = world_round(&w);

		if (round == 1)
			assert_true(pins >= GOOD_VMS * VCPUS); /* the arrivals are pinned home */
		assert_int_equal(rejected(&w), (uint64_t)(BAD_VMS * round));
		for (int i = GOOD_VMS; i < ALL_VMS; i++)
			if (engine_report_vm(w.eng, VM_ID(i), &r) != -ENOENT)
				fail_msg("the engine keeps state for %s",
				         spoils[i - GOOD_VMS].what);
	}
	for (int i = 0; i < GOOD_VMS; i++)
		assert_placed(&w, i);
	world_fini(&w);
}

/* Skipped for the round only: mended, the VM arrives and is placed; the count stops growing. */
static void
test_mended_vm_placed(void **state)
{
	const int fixed = GOOD_VMS; /* the policy nodes 7 one */
	struct world w;

	(void)state;
	world_init(&w);
	world_round(&w);
	world_round(&w);
	assert_int_equal(rejected(&w), (uint64_t)(2 * BAD_VMS));
	w.mended[fixed] = true;
	for (int i = 0; i < ROUNDS; i++)
		world_round(&w);
	assert_int_equal(rejected(&w), (uint64_t)(2 * BAD_VMS + ROUNDS * (BAD_VMS - 1)));
	assert_placed(&w, fixed);
	world_fini(&w);
}

/* A snapshot with nothing wrong in it: nothing rejected. */
static void
test_good_snapshot_counts_nothing(void **state)
{
	struct world w;

	(void)state;
	world_init(&w);
	for (int i = GOOD_VMS; i < ALL_VMS; i++)
		w.mended[i] = true;
	for (int i = 0; i < ROUNDS; i++)
		world_round(&w);
	assert_int_equal(rejected(&w), 0);
	for (int i = 0; i < ALL_VMS; i++)
		assert_placed(&w, i);
	world_fini(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_vms_skipped_and_counted),
	    cmocka_unit_test(test_mended_vm_placed),
	    cmocka_unit_test(test_good_snapshot_counts_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

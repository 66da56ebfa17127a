/* test_peer_numad.c - the numad peer (daemon model), its node choice, and the static peer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "host/sim/peer_numad.h"
#include "host/sim/peers.h"

#define NODE_MIB 16384 /* every test node: 16 GiB */

/* A host of nr_nodes nodes of cpus CPUs and NODE_MIB each, distances 10/21, VMs idle. */
static struct snapshot *
host_new(int nr_nodes, int cpus, int nr_vms, const int *vcpus)
{
	struct snapshot *snap = snapshot_new(nr_nodes, nr_nodes * cpus, nr_vms, vcpus);

	for (int n = 0; n < nr_nodes; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = cpus;
		snap->nodes[n].mem_total_mib = NODE_MIB;
		snap->nodes[n].mem_free_mib = NODE_MIB;
		for (int m = 0; m < nr_nodes; m++)
			snap->distance[n * nr_nodes + m] = n == m ? 10 : 21;
	}
	for (int c = 0; c < nr_nodes * cpus; c++)
		snap->cpu_node[c] = c / cpus;
	for (int i = 0; i < nr_vms; i++) {
		struct snap_vm *vm = &snap->vms[i];

		vm->id = 100 + i;
		snprintf(vm->name, sizeof(vm->name), "vm%d", i);
		vm->uptime_s = 100;
		vm->mem_mib = 8192;
		for (int v = 0; v < vm->nr_vcpus; v++)
			vm->vcpus[v].tid = 1000 * (i + 1) + v;
	}
	return snap;
}

/*
 * VM i: resident memory per node (res, nr_nodes entries), each vCPU's node (vnode), every
 * vCPU's CPU use, and its allowed nodes.
 */
static void
vm_place(struct snapshot *snap, int i, const uint64_t *res, const int *vnode, double cpu_use,
         uint64_t allowed)
{
	struct snap_vm *vm = &snap->vms[i];
	int cpus = snap->nodes[0].nr_cpus;

	for (int n = 0; n < snap->nr_nodes; n++)
		vm->resident_mib[n] = res[n];
	for (int v = 0; v < vm->nr_vcpus; v++) {
		vm->vcpus[v].node = vnode[v];
		vm->vcpus[v].cpu = vnode[v] * cpus + v % cpus;
		vm->vcpus[v].cpu_use = cpu_use;
		vm->vcpus[v].allowed_nodes = allowed;
	}
}

/* Free memory = total - all VM memory on the node. */
static void
host_fill(struct snapshot *snap)
{
	for (int n = 0; n < snap->nr_nodes; n++) {
		uint64_t used = 0;

		for (int i = 0; i < snap->nr_vms; i++)
			used += snap->vms[i].resident_mib[n];
		snap->nodes[n].mem_free_mib = snap->nodes[n].mem_total_mib - used;
	}
}

static void
call(const struct balancer_ops *ops, void *st, struct snapshot *snap, double now_s,
     struct plan *plan)
{
	snap->now_s = now_s;
	plan_reset(plan);
	assert_int_equal(ops->decide(st, snap, plan), 0);
}

/* How many of the plan's pins are for vm_id with exactly mask. */
static int
pins_of(const struct plan *plan, int vm_id, uint64_t mask)
{
	int nr = 0;

	for (size_t i = 0; i < plan->nr_pins; i++)
		if (plan->pins[i].vm_id == vm_id && plan->pins[i].nodes == mask)
			nr++;
	return nr;
}

static void
assert_no_action(const struct plan *plan)
{
	assert_int_equal(plan->nr_pins, 0);
	assert_int_equal(plan->nr_moves, 0);
	assert_int_equal(plan->nr_binds, 0);
	assert_int_equal(plan->nr_samplings, 0);
}

/*
 * 2 nodes x 8 CPUs.  VM 100: 4 busy vCPUs split over both nodes, 2 GiB on node 0 and 4 GiB on
 * node 1; VM 101: idle, 10 GiB on node 1, leaving node 1 almost full.
 */
static struct snapshot *
scene_spread(void)
{
	static const int vcpus[] = {4, 1};
	struct snapshot *snap = host_new(2, 8, 2, vcpus);

	vm_place(snap, 0, (const uint64_t[]){2048, 4096}, (const int[]){0, 0, 1, 1}, 1.0,
	         NODEMASK_ALL);
	vm_place(snap, 1, (const uint64_t[]){0, 10240}, (const int[]){1}, 0.0, NODEMASK_ALL);
	host_fill(snap);
	return snap;
}

/* The migration engine finished (moved or not): nothing pending, vCPUs where pinned. */
static void
scene_spread_after(struct snapshot *snap, bool memory_moved)
{
	vm_place(snap, 0,
	         memory_moved ? (const uint64_t[]){6144, 0} : (const uint64_t[]){2048, 4096},
	         (const int[]){0, 0, 0, 0}, 1.0, nodemask_of(0));
	snap->vms[0].mig_pending_mib = 0;
	host_fill(snap);
}

static void
test_magnitude(void **state)
{
	/* free above the request: needed x 10/6, excess x 4/1 */
	assert_int_equal(numad_node_magnitude(1000, 100, 3000, 300),
	                 (1000 * 10 + 2000 * 4) * (600 + 200));
	/* free below the request: needed = free, no (negative) excess */
	assert_int_equal(numad_node_magnitude(1000, 100, 500, 50), (500 * 10) * (50 * 6));
}

static void
test_numad_binds_to_node_with_room(void **state)
{
	const struct balancer_ops *ops = &peer_numad_ops;
	struct snapshot *snap = scene_spread();
	void *st = ops->create(&(struct balancer_args){.seed = 1});
	struct plan plan;

	assert_string_equal(ops->name, "numad");
	assert_int_equal(ops->host_flags, 0);
	assert_true(ops->default_scan_mib_s == 0);
	snap->vms[0].policy.mode = VM_POLICY_MODE_OFF; /* numad knows nothing of our policies */
	plan_init(&plan);
	/* First loop: numad only reads (CPU use needs two readings) and comes back in 2 s. */
	call(ops, st, snap, 0, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 2);
	call(ops, st, snap, 2, &plan);
	assert_int_equal(plan.nr_pins, 4);
	assert_int_equal(pins_of(&plan, 100, nodemask_of(0)), 4);
	assert_string_equal(plan.pins[0].why.rule, "numad-bind");
	assert_non_null(strstr(plan.pins[0].why.text, "nodes 0"));
	assert_int_equal(plan.nr_moves, 1);
	assert_int_equal(plan.moves[0].vm_id, 100);
	assert_int_equal(plan.moves[0].from_node, 1);
	assert_int_equal(plan.moves[0].to_node, 0);
	assert_int_equal(plan.moves[0].mib, 4096);
	assert_int_equal(plan.nr_binds, 0);
	/* migrate_pages() is synchronous: numad waits for the 4 GiB before anything else. */
	assert_true(plan.next_call_s > 0 && plan.next_call_s <= 2.0 + 1e-9);
	snap->vms[0].mig_pending_mib = 2048;
	call(ops, st, snap, 3, &plan);
	assert_no_action(&plan);
	scene_spread_after(snap, true);
	call(ops, st, snap, 4, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 5); /* moved something: min interval */
	call(ops, st, snap, 9, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 15); /* nothing to do: max interval */
	/* A VM arriving at t=12 makes the sim call early: numad keeps its own schedule. */
	call(ops, st, snap, 12, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s > 11.99 && plan.next_call_s < 12.01);
	plan_free(&plan);
	ops->destroy(st);
	snapshot_free(snap);
}

static void
test_numad_cooldown(void **state)
{
	const struct balancer_ops *ops = &peer_numad_ops;
	struct snapshot *snap = scene_spread();
	void *st = ops->create(&(struct balancer_args){.seed = 1});
	struct plan plan;

	plan_init(&plan);
	call(ops, st, snap, 0, &plan);
	call(ops, st, snap, 2, &plan);
	assert_int_equal(plan.nr_moves, 1);
	/* The memory never arrived (moves failed): the bind completes at t=4 regardless. */
	scene_spread_after(snap, false);
	call(ops, st, snap, 4, &plan);
	assert_true(plan.next_call_s == 5);
	/* Within 300 s of the bind numad leaves it alone, although 2/3 of it is remote. */
	call(ops, st, snap, 9, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 15);
	call(ops, st, snap, 294, &plan);
	assert_no_action(&plan);
	/* Past the cool-down: rebinds to the same node and pulls the memory again. */
	call(ops, st, snap, 309, &plan);
	assert_int_equal(pins_of(&plan, 100, nodemask_of(0)), 4);
	assert_int_equal(plan.nr_moves, 1);
	assert_int_equal(plan.moves[0].from_node, 1);
	assert_int_equal(plan.moves[0].mib, 4096);
	plan_free(&plan);
	ops->destroy(st);
	snapshot_free(snap);
}

/*
 * 2 nodes x 16 CPUs.  VM 100 (2 busy vCPUs, 2 GiB) is bound to node 0 at t=2.  At t=7 a
 * memory hog (VM 102, idle, 6000 MiB) sits on node 0, and VM 101 (10 vCPUs, 250 MiB: too
 * small to be managed) loads node 0's CPUs when busy.
 */
static struct snapshot *
scene_hot_node(bool hot)
{
	static const int vcpus[] = {2, 10, 1};
	struct snapshot *snap = host_new(2, 16, 3, vcpus);
	int y_nodes[10] = {0};

	vm_place(snap, 0, (const uint64_t[]){2048, 0}, (const int[]){0, 0}, 1.0, nodemask_of(0));
	vm_place(snap, 1, (const uint64_t[]){0, 250}, y_nodes, hot ? 1.0 : 0.0, NODEMASK_ALL);
	vm_place(snap, 2, (const uint64_t[]){6000, 0}, (const int[]){0}, 0.0, NODEMASK_ALL);
	host_fill(snap);
	return snap;
}

static void
run_hot_node(bool hot, struct plan *plan)
{
	const struct balancer_ops *ops = &peer_numad_ops;
	static const int vcpus[] = {2, 1};
	struct snapshot *early = host_new(2, 16, 2, vcpus), *later = scene_hot_node(hot);
	void *st = ops->create(&(struct balancer_args){.seed = 1});

	vm_place(early, 0, (const uint64_t[]){2048, 0}, (const int[]){0, 0}, 1.0, NODEMASK_ALL);
	vm_place(early, 1, (const uint64_t[]){0, 250}, (const int[]){1}, 0.0, NODEMASK_ALL);
	host_fill(early);
	call(ops, st, early, 0, plan);
	call(ops, st, early, 2, plan);
	/* Already local: numad binds it in place, nothing to move, so 5 s. */
	assert_int_equal(pins_of(plan, 100, nodemask_of(0)), 2);
	assert_int_equal(plan->nr_moves, 0);
	assert_true(plan->next_call_s == 5);
	call(ops, st, later, 7, plan);
	ops->destroy(st);
	snapshot_free(early);
	snapshot_free(later);
}

static void
test_numad_cooldown_exception(void **state)
{
	struct plan plan;

	plan_init(&plan);
	/* Node 0 busiest in CPU and memory, VM fits a node, moving it evens both: re-evaluated. */
	run_hot_node(true, &plan);
	assert_int_equal(pins_of(&plan, 100, nodemask_of(1)), 2);
	assert_int_equal(plan.nr_moves, 1);
	assert_int_equal(plan.moves[0].from_node, 0);
	assert_int_equal(plan.moves[0].to_node, 1);
	assert_int_equal(plan.moves[0].mib, 2048);
	/* CPU balanced enough: the cool-down holds. */
	run_hot_node(false, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 15);
	plan_free(&plan);
}

static void
test_numad_thresholds(void **state)
{
	const struct balancer_ops *ops = &peer_numad_ops;
	static const int vcpus[] = {4, 4, 1};
	struct snapshot *snap = host_new(2, 8, 3, vcpus);
	void *st = ops->create(&(struct balancer_args){.seed = 1});
	struct plan plan;

	/* Busy but small (RSS 200 MiB), remote memory. */
	vm_place(snap, 0, (const uint64_t[]){0, 200}, (const int[]){0, 0, 0, 0}, 1.0, NODEMASK_ALL);
	/* Big but using exactly 0.5 CPU (numad wants more than 0.5), remote memory. */
	vm_place(snap, 1, (const uint64_t[]){0, 4096}, (const int[]){0, 0, 0, 0}, 0.125,
	         NODEMASK_ALL);
	vm_place(snap, 2, (const uint64_t[]){0, 4096}, (const int[]){1}, 0.0, NODEMASK_ALL);
	host_fill(snap);
	plan_init(&plan);
	call(ops, st, snap, 0, &plan);
	call(ops, st, snap, 2, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 15);
	/*
	 * Just above 0.5 CPU: now a candidate.  Node 0's CPUs are busy with VM 100, so numad binds
	 * it where its memory is: pins only, nothing to move.
	 */
	for (int v = 0; v < 4; v++)
		snap->vms[1].vcpus[v].cpu_use = 0.15;
	call(ops, st, snap, 17, &plan);
	assert_int_equal(plan.nr_pins, 4);
	assert_int_equal(pins_of(&plan, 101, nodemask_of(1)), 4);
	assert_int_equal(plan.nr_moves, 0);
	plan_free(&plan);
	ops->destroy(st);
	snapshot_free(snap);
}

static void
test_numad_one_per_loop_biggest_first(void **state)
{
	const struct balancer_ops *ops = &peer_numad_ops;
	static const int vcpus[] = {2, 4};
	struct snapshot *snap = host_new(2, 8, 2, vcpus);
	void *st = ops->create(&(struct balancer_args){.seed = 1});
	struct plan plan;

	vm_place(snap, 0, (const uint64_t[]){1024, 1024}, (const int[]){0, 1}, 1.0, NODEMASK_ALL);
	vm_place(snap, 1, (const uint64_t[]){2048, 2048}, (const int[]){0, 0, 1, 1}, 1.0,
	         NODEMASK_ALL);
	host_fill(snap);
	plan_init(&plan);
	call(ops, st, snap, 0, &plan);
	call(ops, st, snap, 2, &plan);
	/* Only VM 101 (4 CPUs x 4 GiB beats 2 x 2 GiB) is rebound this loop. */
	assert_int_equal(plan.nr_pins, 4);
	for (size_t i = 0; i < plan.nr_pins; i++)
		assert_int_equal(plan.pins[i].vm_id, 101);
	for (size_t i = 0; i < plan.nr_moves; i++)
		assert_int_equal(plan.moves[i].vm_id, 101);
	/* The VM vanishes mid-migration: numad is free again and forgets it. */
	snap->vms[1].id = 999;
	snap->vms[1].mig_pending_mib = 0;
	call(ops, st, snap, 3, &plan);
	assert_no_action(&plan);
	assert_true(plan.next_call_s == 5);
	plan_free(&plan);
	ops->destroy(st);
	snapshot_free(snap);
}

static void
test_numad_in_place_is_noop(void **state)
{
	const struct balancer_ops *ops = &peer_numad_ops;
	static const int vcpus[] = {4, 1};
	const uint64_t local95[] = {3800, 200}, local80[] = {3200, 800};
	const uint64_t *cases[] = {local95, local80};

	for (int c = 0; c < 2; c++) {
		struct snapshot *snap = host_new(2, 8, 2, vcpus);
		void *st = ops->create(&(struct balancer_args){.seed = 1});
		struct plan plan;

		/* Bound to node 0 before numad started; node 1 mostly taken by an idle VM. */
		vm_place(snap, 0, cases[c], (const int[]){0, 0, 0, 0}, 1.0, nodemask_of(0));
		vm_place(snap, 1, (const uint64_t[]){0, 12000}, (const int[]){1}, 0.0,
		         NODEMASK_ALL);
		host_fill(snap);
		plan_init(&plan);
		call(ops, st, snap, 0, &plan);
		call(ops, st, snap, 2, &plan);
		if (c == 0) {
			/* On the chosen node with 95 % local: numad leaves it. */
			assert_no_action(&plan);
			assert_true(plan.next_call_s == 15);
		} else {
			/* Only 80 % local: rebinds to the same node and pulls the rest. */
			assert_int_equal(pins_of(&plan, 100, nodemask_of(0)), 4);
			assert_int_equal(plan.nr_moves, 1);
			assert_int_equal(plan.moves[0].from_node, 1);
			assert_int_equal(plan.moves[0].mib, 800);
		}
		plan_free(&plan);
		ops->destroy(st);
		snapshot_free(snap);
	}
}

/*
 * 4 nodes x 8 CPUs, distances 10 local, 21 within the pairs {0,1} and {2,3}, 31 across.
 * Nodes 0 and 3 each hold 4 GiB of an idle VM, so the two freest nodes are 1 and 2, a far
 * pair; numad must take a near pair.
 */
static void
test_pick_two_nodes_by_distance(void **state)
{
	static const int vcpus[] = {1, 1};
	static const int dist[4][4] = {
	    {10, 21, 31, 31}, {21, 10, 31, 31}, {31, 31, 10, 21}, {31, 31, 21, 10}};
	struct snapshot *snap = host_new(4, 8, 2, vcpus);
	struct numad_node nodes[4];
	struct numad_choice ch;
	uint64_t mask = 0;

	memcpy(snap->distance, dist, sizeof(dist));
	vm_place(snap, 0, (const uint64_t[]){4096, 0, 0, 0}, (const int[]){0}, 0.0, NODEMASK_ALL);
	vm_place(snap, 1, (const uint64_t[]){0, 0, 0, 4096}, (const int[]){3}, 0.0, NODEMASK_ALL);
	host_fill(snap);
	assert_int_equal(numad_choose_nodes(snap, -1, 24000, 4, &mask), 0);
	assert_int_equal(mask, 0x3);
	numad_nodes_measure(snap, nodes);
	assert_int_equal(numad_pick_nodes(snap, nodes, NULL, 24000, 400, false, &ch), 0);
	assert_int_equal(ch.min_nodes, 2);
	assert_int_equal(ch.start_node, 1);
	assert_int_equal(ch.take_mbs[1], NODE_MIB - 100); /* all but the 100 MB margin */
	assert_int_equal(ch.take_mbs[0], 24000 - (NODE_MIB - 100));
	/* A small request fits one node: the freest, lowest index on ties. */
	assert_int_equal(numad_choose_nodes(snap, -1, 2048, 2, &mask), 0);
	assert_int_equal(mask, 0x2);
	/* Advice covers the CPUs too: 12 vCPUs need two 8-CPU nodes. */
	assert_int_equal(numad_choose_nodes(snap, -1, 2048, 12, &mask), 0);
	assert_int_equal(nodemask_weight(mask), 2);
	snapshot_free(snap);
}

static void
test_static_binds_once_at_arrival(void **state)
{
	const struct balancer_ops *ops = &peer_static_ops;
	static const int vcpus[] = {1, 4, 4};
	/* 32 CPUs per node, so that CPU alone would not keep the two VMs apart. */
	struct snapshot *snap = host_new(2, 32, 3, vcpus);
	void *st = ops->create(&(struct balancer_args){.seed = 1});
	struct plan plan;

	assert_string_equal(ops->name, "static");
	/* VM 100 runs on node 0 with 4 GiB; VMs 101 and 102 (10 GiB each) arrive together. */
	vm_place(snap, 0, (const uint64_t[]){4096, 0}, (const int[]){0}, 0.0, NODEMASK_ALL);
	vm_place(snap, 1, (const uint64_t[]){0, 0}, (const int[]){0, 0, 1, 1}, 0.0, NODEMASK_ALL);
	vm_place(snap, 2, (const uint64_t[]){0, 0}, (const int[]){0, 0, 1, 1}, 0.0, NODEMASK_ALL);
	snap->vms[1].uptime_s = snap->vms[2].uptime_s = 0;
	snap->vms[1].mem_mib = snap->vms[2].mem_mib = 10240;
	host_fill(snap);
	plan_init(&plan);
	call(ops, st, snap, 0, &plan);
	/* The first takes the freer node 1; the second sees that and takes node 0. */
	assert_int_equal(pins_of(&plan, 101, nodemask_of(1)), 4);
	assert_int_equal(pins_of(&plan, 102, nodemask_of(0)), 4);
	assert_int_equal(plan.nr_pins, 8);
	assert_int_equal(plan.nr_binds, 2);
	assert_int_equal(plan.binds[0].vm_id, 101);
	assert_int_equal(plan.binds[0].nodes, nodemask_of(1));
	assert_int_equal(plan.binds[0].len_mib, 0);
	assert_int_equal(plan.binds[1].nodes, nodemask_of(0));
	assert_int_equal(plan.nr_moves, 0);
	assert_true(plan.next_call_s >= 600);
	/* Later the placement looks bad (all of VM 101 remote, node 1 busy): never revisited. */
	vm_place(snap, 1, (const uint64_t[]){10240, 0}, (const int[]){1, 1, 1, 1}, 1.0,
	         nodemask_of(1));
	snap->vms[1].uptime_s = snap->vms[2].uptime_s = 60;
	host_fill(snap);
	call(ops, st, snap, 60, &plan);
	assert_no_action(&plan);
	/* A new VM arriving later is placed, and only it. */
	snap->vms[0].id = 200;
	snap->vms[0].uptime_s = 0;
	call(ops, st, snap, 90, &plan);
	assert_int_equal(plan.nr_pins, 1);
	assert_int_equal(plan.pins[0].vm_id, 200);
	assert_int_equal(plan.nr_binds, 1);
	plan_free(&plan);
	ops->destroy(st);
	snapshot_free(snap);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_magnitude),
	    cmocka_unit_test(test_numad_binds_to_node_with_room),
	    cmocka_unit_test(test_numad_cooldown),
	    cmocka_unit_test(test_numad_cooldown_exception),
	    cmocka_unit_test(test_numad_thresholds),
	    cmocka_unit_test(test_numad_one_per_loop_biggest_first),
	    cmocka_unit_test(test_numad_in_place_is_noop),
	    cmocka_unit_test(test_pick_two_nodes_by_distance),
	    cmocka_unit_test(test_static_binds_once_at_arrival),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

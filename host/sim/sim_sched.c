/*
 * sim_sched.c - CPU scheduling on the simulated host: where vCPU threads run, the NUMA-blind
 * load balancer that moves unpinned ones, and CPU time-sharing on oversubscribed nodes.
 *
 * The model of Linux's scheduler without NUMA awareness (docs/simulator.md):
 *  - a new thread starts on the least-loaded node it may use (fork/exec balancing);
 *  - the periodic load balancer moves one thread at a time from the busiest node to the
 *    idlest when the busiest carries more than SIM_LB_IMBALANCE times the idlest's load per
 *    CPU and the move reduces the imbalance (imbalance_pct of NUMA sched domains);
 *  - wake-ups: a floating thread now and then wakes on an idle CPU of another node
 *    (SIM_WANDER_PER_S), which is how threads drift away from their memory;
 *  - a kernel NUMA "preferred node" (autonuma model) stops both from taking a thread off it.
 */
#include <stdlib.h>

#include "host/sim/sim_internal.h"

/* Busiest/idlest load-per-CPU ratio above which the load balancer moves a thread (1.25 is the
 * NUMA sched domain's imbalance_pct of 125). */
#define SIM_LB_IMBALANCE 1.25
/* Most threads the load balancer moves per tick across the host. */
#define SIM_LB_MOVES_PER_TICK 4

static double
sim_vcpu_util(const struct sim_vm *vm)
{
	return vm->util;
}

static void
sim_node_loads(const struct sim *sim, double *load)
{
	for (int n = 0; n < sim->nr_nodes; n++)
		load[n] = 0;
	for (int i = 0; i < sim->nr_vms; i++) {
		const struct sim_vm *vm = &sim->vms[i];

		if (!vm->running)
			continue;
		for (int v = 0; v < vm->nr_vcpus; v++)
			load[vm->vcpus[v].node] += sim_vcpu_util(vm);
	}
}

static double
sim_node_cpus(const struct sim *sim, int n)
{
	int c = sim->topo->nodes[n].nr_cpus;

	return c > 0 ? c : 1e-9;
}

int
sim_sched_least_loaded(struct sim *sim, uint64_t mask)
{
	double load[UTIL_MAX_NODES];
	int best = -1;

	sim_node_loads(sim, load);
	for (int n = 0; n < sim->nr_nodes; n++) {
		if (!nodemask_test(mask, n) || sim->topo->nodes[n].nr_cpus == 0)
			continue;
		if (best < 0 ||
		    load[n] / sim_node_cpus(sim, n) < load[best] / sim_node_cpus(sim, best))
			best = n;
	}
	return best < 0 ? 0 : best;
}

int
sim_vcpu_cpu(const struct sim *sim, int node, int vm_idx, int vcpu)
{
	const struct topology_node *tn = &sim->topo->nodes[node];

	if (tn->nr_cpus == 0)
		return 0;
	return tn->cpus[(vm_idx * 7 + vcpu) % tn->nr_cpus];
}

void
sim_sched_place_new(struct sim *sim, struct sim_vm *vm)
{
	for (int v = 0; v < vm->nr_vcpus; v++) {
		/* Running threads of this VM count already: place one by one. */
		vm->vcpus[v].node = sim_sched_least_loaded(sim, vm->vcpus[v].allowed);
	}
}

static bool
sim_vcpu_floating(const struct sim *sim, const struct sim_vcpu *vc)
{
	return nodemask_weight(vc->allowed) > 1 && vc->preferred < 0;
}

/* Pick a uniformly random floating vCPU on node n; NULL if none. */
static struct sim_vcpu *
sim_pick_movable(struct sim *sim, int n, int dst, double *util_out)
{
	int count = 0, pick;

	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		for (int v = 0; vm->running && v < vm->nr_vcpus; v++)
			if (vm->vcpus[v].node == n && sim_vcpu_floating(sim, &vm->vcpus[v]) &&
			    nodemask_test(vm->vcpus[v].allowed, dst))
				count++;
	}
	if (count == 0)
		return NULL;
	pick = (int)util_rng_below(&sim->rng, (uint32_t)count);
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		for (int v = 0; vm->running && v < vm->nr_vcpus; v++)
			if (vm->vcpus[v].node == n && sim_vcpu_floating(sim, &vm->vcpus[v]) &&
			    nodemask_test(vm->vcpus[v].allowed, dst) && pick-- == 0) {
				*util_out = sim_vcpu_util(vm);
				return &vm->vcpus[v];
			}
	}
	return NULL;
}

static void
sim_sched_balance(struct sim *sim)
{
	double load[UTIL_MAX_NODES];

	sim_node_loads(sim, load);
	for (int k = 0; k < SIM_LB_MOVES_PER_TICK; k++) {
		int busy = -1, idle = -1;
		double u = 0;
		struct sim_vcpu *vc;

		for (int n = 0; n < sim->nr_nodes; n++) {
			double l = load[n] / sim_node_cpus(sim, n);

			if (sim->topo->nodes[n].nr_cpus == 0)
				continue;
			if (busy < 0 || l > load[busy] / sim_node_cpus(sim, busy))
				busy = n;
			if (idle < 0 || l < load[idle] / sim_node_cpus(sim, idle))
				idle = n;
		}
		if (busy < 0 || busy == idle)
			return;
		double lb = load[busy] / sim_node_cpus(sim, busy);
		double li = load[idle] / sim_node_cpus(sim, idle);

		if (lb <= SIM_LB_IMBALANCE * li || lb < 0.5)
			return;
		vc = sim_pick_movable(sim, busy, idle, &u);
		if (vc == NULL || (load[busy] - u) / sim_node_cpus(sim, busy) <
		                      (load[idle] + u) / sim_node_cpus(sim, idle))
			return;
		vc->node = idle;
		load[busy] -= u;
		load[idle] += u;
	}
}

/* Wake-up placement: a floating vCPU sometimes lands on an idle CPU of another node. */
static void
sim_sched_wander(struct sim *sim)
{
	double load[UTIL_MAX_NODES];
	double p = SIM_WANDER_PER_S * SIM_TICK_S;

	sim_node_loads(sim, load);
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		for (int v = 0; vm->running && v < vm->nr_vcpus; v++) {
			struct sim_vcpu *vc = &vm->vcpus[v];
			int dst;

			if (!sim_vcpu_floating(sim, vc) || util_rng_double(&sim->rng) >= p)
				continue;
			dst = (int)util_rng_below(&sim->rng, (uint32_t)sim->nr_nodes);
			if (dst == vc->node || !nodemask_test(vc->allowed, dst) ||
			    load[dst] + 1.0 > sim->topo->nodes[dst].nr_cpus)
				continue;
			load[vc->node] -= vm->util;
			load[dst] += vm->util;
			vc->node = dst;
		}
	}
}

void
sim_sched_tick(struct sim *sim)
{
	sim_sched_balance(sim);
	sim_sched_wander(sim);
}

/* CPU time-sharing: every vCPU on a node gets min(1, CPUs / runnable demand). */
void
sim_sched_shares(struct sim *sim)
{
	double load[UTIL_MAX_NODES];

	sim_node_loads(sim, load);
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		for (int v = 0; vm->running && v < vm->nr_vcpus; v++) {
			struct sim_vcpu *vc = &vm->vcpus[v];
			double cpus = sim->topo->nodes[vc->node].nr_cpus;

			vc->share = load[vc->node] > cpus ? cpus / load[vc->node] : 1.0;
		}
	}
}

/*
 * engine_stats.c - fault statistics and convergence strength.
 *
 * The kernel's per-thread counters are already an average: a level halved once per completed
 * scan pass, so it weighs the whole address space (the last pass at 1/2, the one before at 1/4
 * ...).  Deltas between two samples would not: a slow scanner spends many seconds in one part
 * of guest RAM, and the faults of those seconds describe only that part.  So the per-node
 * statistic is the level itself, smoothed over ENGINE_FAULT_AVG_PERIODS samples; strength is
 * then averaged again over ENGINE_STRENGTH_AVG_PERIODS (about 16, as numa/core did) for the
 * decisions that should move slowly (memory pace, sampling).
 *
 * Convergence strength = 1024 x faults on the busiest node / all faults (1..1024); a vCPU or
 * group with fewer than ENGINE_MIN_FAULT_PAGES pages is not judged (strength 0, no
 * convergence node).
 */
#include <string.h>

#include "policy/engine_internal.h"

/* Expected CPU demand of a vCPU enters its average with this weight per sample. */
#define ENGINE_UTIL_AVG_WEIGHT 0.25

int
engine_strength(const double *faults, int nr_nodes, int *node_out)
{
	double total = 0, best = -1;
	int node = ENGINE_NO_NODE;

	for (int n = 0; n < nr_nodes; n++) {
		total += faults[n];
		if (faults[n] > best) { /* strict: ties keep the lower node */
			best = faults[n];
			node = n;
		}
	}
	if (total < ENGINE_MIN_FAULT_PAGES) {
		*node_out = ENGINE_NO_NODE;
		return 0;
	}
	*node_out = node;
	int s = (int)(1024.0 * best / total + 0.5);

	return s < 1 ? 1 : s;
}

static void
engine_vcpu_faults(struct eng_vm *ev, const struct snap_vcpu *sv, int v, bool first)
{
	int nn = ev->nr_nodes;
	double *avg = &ev->fault_avg[(size_t)v * (size_t)nn];
	uint64_t *prev = &ev->fault_prev[(size_t)v * (size_t)nn];

	for (int n = 0; n < nn; n++) {
		uint64_t level = sv->faults_private[n] + sv->faults_shared[n];

		if (first)
			avg[n] = (double)level;
		else
			avg[n] += ((double)level - avg[n]) / ENGINE_FAULT_AVG_PERIODS;
		prev[n] = level;
	}
	ev->vcpu_strength[v] = engine_strength(avg, nn, &ev->vcpu_conv[v]);
}

static void
engine_vcpu_util(struct eng_vm *ev, const struct snap_vm *vm, int v, const double *node_scale,
                 bool first)
{
	const struct snap_vcpu *sv = &vm->vcpus[v];
	double demand = sv->cpu_use * node_scale[sv->node];

	if (demand > 1.0)
		demand = 1.0;
	if (vm->uptime_s < ENGINE_SAMPLE_PERIOD_S * 2) {
		ev->util_avg[v] = 1.0; /* nothing measured yet: assume a busy vCPU */
		return;
	}
	if (first)
		ev->util_avg[v] = demand;
	else
		ev->util_avg[v] += (demand - ev->util_avg[v]) * ENGINE_UTIL_AVG_WEIGHT;
}

void
engine_stats_update(struct eng_vm *ev, const struct snap_vm *vm, const struct snapshot *snap,
                    const double *node_scale, bool first)
{
	int nn = ev->nr_nodes;
	double sum[UTIL_MAX_NODES] = {0}, local = 0, all = 0;

	for (int v = 0; v < ev->nr_vcpus; v++) {
		const double *avg = &ev->fault_avg[(size_t)v * (size_t)nn];

		ev->vcpu_node[v] = vm->vcpus[v].node;
		engine_vcpu_faults(ev, &vm->vcpus[v], v, first);
		engine_vcpu_util(ev, vm, v, node_scale, first);
		for (int n = 0; n < nn; n++) {
			sum[n] += avg[n];
			all += avg[n];
		}
		local += avg[vm->vcpus[v].node];
	}
	ev->strength_now = engine_strength(sum, nn, &ev->conv_node);
	if (first || ev->strength == 0)
		ev->strength = ev->strength_now;
	else
		ev->strength += (ev->strength_now - ev->strength) / ENGINE_STRENGTH_AVG_PERIODS;
	ev->local_permille = all > 0 ? (int)(1000.0 * local / all) : 0;
	ev->fault_pages = all;
}

void
engine_group_strength(struct eng_vm *ev, struct eng_group *g, const struct snap_vm *vm)
{
	int nn = ev->nr_nodes, count[UTIL_MAX_NODES] = {0}, best = 0;
	double sum[UTIL_MAX_NODES] = {0};

	for (int i = 0; i < g->nr_vcpus; i++) {
		int v = g->vcpus[i];

		for (int n = 0; n < nn; n++)
			sum[n] += ev->fault_avg[(size_t)v * (size_t)nn + (size_t)n];
		count[vm->vcpus[v].node]++;
	}
	g->strength = engine_strength(sum, nn, &g->conv_node);
	g->place_node = 0;
	for (int n = 0; n < nn; n++)
		if (count[n] > best) {
			best = count[n];
			g->place_node = n;
		}
	g->place_strength = g->nr_vcpus ? 1024 * best / g->nr_vcpus : 0;
}

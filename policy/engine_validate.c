/*
 * engine_validate.c - the engine's guard at the top of every round: a VM whose snapshot names
 * a node the host does not have is left out of the round, so no stage ever indexes a per-node
 * array (node load, slots, free memory, fault and resident arrays) with it.
 *
 * The daemon already refuses or replaces such policies (agent/daemon.c, agent/handlers_vm.c);
 * this is the engine not trusting its caller.  Rejected, for a host of nr_nodes nodes:
 *   - policy nodes with a node >= nr_nodes (NODEMASK_ALL, "anywhere", is fine), or none below;
 *   - host_nodes (strict numatune) without any of the host's nodes;
 *   - a vCPU whose node is outside 0..nr_nodes-1, or whose allowed nodes hold none of them;
 *   - a vCPU whose guest cell is outside 0..nr_cells-1 (the groups are indexed by cell).
 * A rejected VM is not seen by the engine that round: its state is dropped, and it arrives
 * afresh once its snapshot is good again.  Each VM rejected in a round adds one to
 * vms_rejected (engine_report_counters()).
 */
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"

static bool
engine_validate_vcpus(const struct snap_vm *vm, int nr_nodes, uint64_t host)
{
	if (vm->nr_vcpus < 0 || (vm->nr_vcpus > 0 && vm->vcpus == NULL))
		return false;
	if (vm->nr_cells < 0 || (vm->nr_cells > 0 && vm->vcpu_cell == NULL))
		return false;
	for (int v = 0; v < vm->nr_vcpus; v++) {
		const struct snap_vcpu *sv = &vm->vcpus[v];

		if (sv->node < 0 || sv->node >= nr_nodes || (sv->allowed_nodes & host) == 0)
			return false;
		if (vm->nr_cells > 0 && (vm->vcpu_cell[v] < 0 || vm->vcpu_cell[v] >= vm->nr_cells))
			return false;
	}
	return true;
}

/* Whether the engine may work on vm in a snapshot of nr_nodes nodes. */
static bool
engine_validate_vm(const struct snap_vm *vm, int nr_nodes)
{
	uint64_t host = nr_nodes > 0 ? nodemask_all_of(nr_nodes) : 0;
	uint64_t nodes = vm->policy.nodes;

	if (nodes != NODEMASK_ALL && (nodes & ~host) != 0)
		return false;
	if ((nodes & host) == 0 || (vm->host_nodes & host) == 0)
		return false;
	return engine_validate_vcpus(vm, nr_nodes, host);
}

const struct snapshot *
engine_validate(struct engine *e, const struct snapshot *snap)
{
	int nr = 0, i;

	for (i = 0; i < snap->nr_vms && engine_validate_vm(&snap->vms[i], snap->nr_nodes); i++)
		;
	if (i == snap->nr_vms)
		return snap; /* the common case: nothing to leave out, nothing copied */
	util_array_reserve((void **)&e->valid_vms, &e->valid_cap, (size_t)snap->nr_vms,
	                   sizeof(*e->valid_vms));
	for (i = 0; i < snap->nr_vms; i++) {
		if (engine_validate_vm(&snap->vms[i], snap->nr_nodes))
			e->valid_vms[nr++] = snap->vms[i]; /* shallow: points into snap's storage */
		else
			e->vms_rejected++;
	}
	e->valid = *snap;
	e->valid.vms = e->valid_vms;
	e->valid.nr_vms = nr;
	return &e->valid;
}

void
engine_validate_free(struct engine *e)
{
	free(e->valid_vms);
	e->valid_vms = NULL;
	e->valid_cap = 0;
}

void
engine_report_counters(void *state, struct engine_counters *c)
{
	const struct engine *e = state;

	memset(c, 0, sizeof(*c));
	if (e == NULL)
		return;
	c->vms_rejected = e->vms_rejected;
	c->rate_limited_rounds = e->rate_limited_rounds;
	c->rate_deferred_vms = e->rate_deferred_vms;
}

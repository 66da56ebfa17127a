/*
 * peer_oracle.c - the oracle balancer: at create() it computes the best static binding of the
 * whole scenario (oracle_plan, with full knowledge); when a VM arrives it pins each vCPU to its
 * node and binds each guest range to its node, so memory is first-touched in place.  It never
 * samples, never migrates and never revisits a decision.  See docs/peers/oracle.md.
 */
#include "host/sim/peer_oracle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/peers.h"
#include "host/sim/sim.h"
#include "policy/model.h"
#include "policy/util.h"

/* Seconds between calls: it never re-acts; the simulator calls it again on every arrival. */
#define ORACLE_NEXT_CALL_S 3600.0

struct oracle_state {
	const struct scenario *scn; /* NULL: created without knowledge; decide() fails */
	struct oracle_binding *bind;
	bool *placed; /* per scenario VM: pins and binds already issued */
	int error;    /* oracle_plan's failure, reported by decide() */
};

static void *
oracle_create(const struct balancer_args *args)
{
	struct oracle_state *st = xcalloc(1, sizeof(*st));

	st->scn = args ? args->knowledge : NULL;
	if (st->scn == NULL) {
		st->error = -EINVAL;
		return st;
	}
	st->placed = xcalloc((size_t)st->scn->nr_vms + 1, sizeof(bool));
	st->error = oracle_plan(st->scn, &st->bind);
	return st;
}

static void
oracle_destroy(void *state)
{
	struct oracle_state *st = state;

	if (st == NULL)
		return;
	oracle_binding_free(st->bind);
	free(st->placed);
	free(st);
}

/*
 * The scenario VM a snapshot VM stands for: the first not yet placed with its name that has
 * started by now (names may repeat over time).  -1 if none.
 */
static int
oracle_match(const struct oracle_state *st, const struct snap_vm *vm, double now_s)
{
	for (int i = 0; i < st->scn->nr_vms; i++) {
		const struct scn_vm *sv = &st->scn->vms[i];

		if (st->placed[i] || strcmp(sv->name, vm->name) != 0)
			continue;
		if (sv->start_s <= now_s + SIM_TICK_S) /* the sim starts VMs on the next tick */
			return i;
	}
	return -1;
}

/* Pins and binds for one arriving VM. */
static void
oracle_place(const struct oracle_vm_binding *vb, const struct snap_vm *vm, int nr_nodes,
             struct plan *plan)
{
	int nv = vm->nr_vcpus < vb->nr_vcpus ? vm->nr_vcpus : vb->nr_vcpus;

	for (int v = 0; v < nv; v++) {
		int node = vb->vcpu_node[v];
		struct plan_pin *pin;

		if (node < 0 || node >= nr_nodes)
			continue;
		pin = plan_add_pin(plan, vm->id, v, nodemask_of(node));
		plan_reason_set(&pin->why, "oracle", 0, "best static binding: vCPU %d on node %d",
		                v, node);
	}
	for (int r = 0; r < vb->nr_ranges; r++) {
		const struct oracle_range *rg = &vb->ranges[r];
		struct plan_mem_bind *bind;

		if (rg->len_mib == 0 || rg->node < 0 || rg->node >= nr_nodes)
			continue;
		bind = plan_add_bind(plan, vm->id, nodemask_of(rg->node));
		bind->start_mib = rg->start_mib;
		bind->len_mib = rg->len_mib;
		plan_reason_set(&bind->why, "oracle", 0,
		                "best static binding: guest %" PRIu64 "+%" PRIu64 " MiB on node %d",
		                rg->start_mib, rg->len_mib, rg->node);
	}
}

static int
oracle_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct oracle_state *st = state;

	plan->next_call_s = ORACLE_NEXT_CALL_S;
	if (st == NULL)
		return -EINVAL;
	if (st->error != 0)
		return st->error;
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];
		int idx = oracle_match(st, vm, snap->now_s);

		if (idx < 0)
			continue;
		oracle_place(&st->bind->vms[idx], vm, snap->nr_nodes, plan);
		st->placed[idx] = true;
	}
	return 0;
}

const struct balancer_ops peer_oracle_ops = {
    .name = "oracle",
    .description = "hard binding: the best static placement, memory in place from t=0, "
                   "computed with full knowledge",
    .host_flags = BALANCER_FULL_KNOWLEDGE,
    .default_scan_mib_s = 0,
    .create = oracle_create,
    .decide = oracle_decide,
    .destroy = oracle_destroy,
};

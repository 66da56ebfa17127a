/*
 * engine_reserve.c - placements advised for VMs about to start, held until they appear.
 *
 * libvirt asks where a domain with placement='auto' should go just before it starts it (the
 * numad shim: `vnumactl place --reserve`), and binds the domain's memory there.  A host that
 * starts several domains at once asks once per domain before any of them runs: without a
 * hold, every answer would see the same free memory and CPUs and name the same node, and a
 * restrictive binding to a node that cannot hold them all ends in the guests' OOM.  So an
 * advice given with reserve is counted as the VM it stands for (its vCPUs busy, its memory
 * taken, over its nodes) in every view of the nodes (engine_nodes_init: home choice, place,
 * the memory guards) until a VM of that shape appears, which claims it, or
 * ENGINE_RESERVE_HOLD_S pass.
 */
#include <errno.h>
#include <string.h>

#include "policy/engine_internal.h"

/* Whether vm is the VM reservation r was made for: same vCPUs, memory within 2 % or 2 MiB. */
static bool
engine_reserve_matches(const struct eng_reserve *r, const struct snap_vm *vm)
{
	uint64_t slack = r->mem_mib / 50 > 2 ? r->mem_mib / 50 : 2;

	return vm->nr_vcpus == r->vcpus && vm->mem_mib + slack >= r->mem_mib &&
	       vm->mem_mib <= r->mem_mib + slack;
}

static void
engine_reserve_drop(struct engine *e, int i)
{
	memmove(&e->reserves[i], &e->reserves[i + 1],
	        (size_t)(e->nr_reserves - i - 1) * sizeof(e->reserves[0]));
	e->nr_reserves--;
}

int
engine_reserve(void *state, double now_s, uint64_t nodes, int vcpus, uint64_t mem_mib)
{
	struct engine *e = state;
	struct eng_reserve *r;

	if (nodes == 0 || vcpus < 1 || mem_mib == 0)
		return -EINVAL;
	if (e->nr_reserves == ENGINE_RESERVE_MAX)
		engine_reserve_drop(e, 0); /* the oldest goes first */
	r = &e->reserves[e->nr_reserves++];
	r->nodes = nodes;
	r->vcpus = vcpus;
	r->mem_mib = mem_mib;
	r->until_s = now_s + ENGINE_RESERVE_HOLD_S;
	return 0;
}

int
engine_reserve_count(void *state)
{
	return ((struct engine *)state)->nr_reserves;
}

void
engine_reserve_claim(struct engine *e, const struct snap_vm *vm)
{
	for (int i = 0; i < e->nr_reserves; i++) {
		if (engine_reserve_matches(&e->reserves[i], vm)) {
			engine_reserve_drop(e, i); /* the oldest of that shape */
			return;
		}
	}
}

void
engine_reserve_account(struct engine *e, const struct snapshot *snap)
{
	uint64_t all = nodemask_all_of(snap->nr_nodes);

	for (int i = e->nr_reserves - 1; i >= 0; i--)
		if (snap->now_s > e->reserves[i].until_s)
			engine_reserve_drop(e, i);
	for (int i = 0; i < e->nr_reserves; i++) {
		const struct eng_reserve *r = &e->reserves[i];
		uint64_t nodes = r->nodes & all;
		int w = nodemask_weight(nodes);

		for (int n = 0; n < snap->nr_nodes && w > 0; n++) {
			if (!nodemask_test(nodes, n))
				continue;
			/* a new VM's vCPUs count as busy (as in engine_advise) */
			e->node_load[n] += (double)r->vcpus / w;
			e->node_slots[n] += (r->vcpus + w - 1) / w;
			e->node_mem_proj[n] -= (int64_t)(r->mem_mib / (uint64_t)w);
		}
	}
}

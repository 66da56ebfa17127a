/*
 * peer_static.c - libvirt's <vcpu placement='auto'/> with <numatune><memory mode='strict'
 * placement='auto'/></numatune>: at domain start libvirt runs `numad -w NCPUS:MB` once, then
 * pins the vCPUs and the emulator to the advised nodes' CPUs and binds the guest's memory to
 * them.  Nothing is ever revisited while the domain runs.  See docs/peers/static.md.
 */
#include <errno.h>
#include <stdlib.h>

#include "host/sim/peer_numad.h"
#include "host/sim/peers.h"

/*
 * Seconds between calls when nothing arrives (s).  The peer only acts on arrivals, and the
 * simulator calls every balancer when a VM arrives, so this only bounds idle calls.
 */
#define STATIC_IDLE_CALL_S 3600.0

struct static_state {
	int *done_ids; /* VMs already placed (placement happens once per domain start) */
	size_t nr_done, cap_done;
};

static void *
static_create(const struct balancer_args *args)
{
	return xcalloc(1, sizeof(struct static_state));
}

static void
static_destroy(void *state)
{
	struct static_state *st = state;

	if (st == NULL)
		return;
	free(st->done_ids);
	free(st);
}

static bool
static_is_done(const struct static_state *st, int vm_id)
{
	for (size_t i = 0; i < st->nr_done; i++)
		if (st->done_ids[i] == vm_id)
			return true;
	return false;
}

/* Forget VMs that stopped, so the list stays as long as the VMs running. */
static void
static_forget_gone(struct static_state *st, const struct snapshot *snap)
{
	size_t keep = 0;

	for (size_t i = 0; i < st->nr_done; i++) {
		bool alive = false;

		for (int v = 0; v < snap->nr_vms && !alive; v++)
			alive = snap->vms[v].id == st->done_ids[i];
		if (alive)
			st->done_ids[keep++] = st->done_ids[i];
	}
	st->nr_done = keep;
}

/*
 * One `numad -w vcpus:mem_mib` call (libvirt passes the vCPU count and the memory in MiB,
 * rounded up; numad scales the CPU count by 100 and adds no 100/85 margin for advice).
 * Charge what the choice takes to the view, so VMs starting at the same instant see each
 * other's share.
 */
static void
static_place(struct numad_node *view, const struct snapshot *snap, const struct snap_vm *vm,
             struct plan *plan)
{
	struct numad_choice ch;
	struct plan_mem_bind *bind;
	char set[NODEMASK_STR_MAX];

	if (numad_pick_nodes(snap, view, NULL, (int64_t)vm->mem_mib, (int64_t)vm->nr_vcpus * 100,
	                     false, &ch) != 0)
		return;
	nodemask_format(ch.nodes, set, sizeof(set));
	for (int v = 0; v < vm->nr_vcpus; v++) {
		struct plan_pin *pin = plan_add_pin(plan, vm->id, v, ch.nodes);

		plan_reason_set(&pin->why, "numad-advice", (double)ch.totmag,
		                "numad -w %d:%llu advised nodes %s (start %d, magnitude %llu)",
		                vm->nr_vcpus, (unsigned long long)vm->mem_mib, set, ch.start_node,
		                (unsigned long long)ch.totmag);
	}
	bind = plan_add_bind(plan, vm->id, ch.nodes);
	plan_reason_set(&bind->why, "numad-advice", (double)ch.totmag,
	                "memory strict on nodes %s for %llu MiB", set,
	                (unsigned long long)vm->mem_mib);
	for (int n = 0; n < snap->nr_nodes; n++) {
		view[n].mbs_free -= ch.take_mbs[n];
		view[n].cpus_free_c -= ch.take_cpus_c[n];
		if (view[n].mbs_free < 0)
			view[n].mbs_free = 0;
		if (view[n].cpus_free_c < 0)
			view[n].cpus_free_c = 0;
	}
}

static int
static_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	struct static_state *st = state;
	struct numad_node view[UTIL_MAX_NODES];

	if (snap->nr_nodes < 1 || snap->nr_nodes > UTIL_MAX_NODES)
		return -EINVAL;
	static_forget_gone(st, snap);
	numad_nodes_measure(snap, view);
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct snap_vm *vm = &snap->vms[i];

		if (vm->uptime_s > 0 || static_is_done(st, vm->id))
			continue;
		static_place(view, snap, vm, plan);
		util_array_reserve((void **)&st->done_ids, &st->cap_done, st->nr_done + 1,
		                   sizeof(*st->done_ids));
		st->done_ids[st->nr_done++] = vm->id;
	}
	plan->next_call_s = STATIC_IDLE_CALL_S;
	return 0;
}

const struct balancer_ops peer_static_ops = {
    .name = "static",
    .description = "libvirt placement='auto': one numad -w choice at VM start, vCPUs and memory "
                   "bound there for good",
    .host_flags = BALANCER_LIBVIRT_PLACEMENT,
    .default_scan_mib_s = 0,
    .create = static_create,
    .decide = static_decide,
    .destroy = static_destroy,
};

/*
 * peer_none.c - the `none` peer: no balancer at all.  vCPUs float under the host's NUMA-blind
 * scheduler, memory stays where the guest first touched it, nothing is sampled or migrated.
 * This is a KVM host with kernel.numa_balancing=0 and no numad.
 */
#include "host/sim/peers.h"

/* Nothing to decide; ask to be called rarely (the simulator still calls on arrivals). */
#define PEER_NONE_PERIOD_S 3600.0

static int
peer_none_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	plan->next_call_s = PEER_NONE_PERIOD_S;
	return 0;
}

const struct balancer_ops peer_none_ops = {
    .name = "none",
    .description = "no balancing: NUMA-blind scheduler, first-touch memory",
    .host_flags = BALANCER_NUMA_BLIND,
    .default_scan_mib_s = 0,
    .create = NULL,
    .decide = peer_none_decide,
    .destroy = NULL,
};

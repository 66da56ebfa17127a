/*
 * peers.c - the registry of balancers the simulator runs, in report order.
 */
#include "host/sim/peers.h"

#include <string.h>

const struct balancer_ops *const sim_balancers[] = {
    &peer_none_ops,
    &peer_autonuma_ops,
    &peer_numad_ops,
    &peer_static_ops,
    &vnumad_balancer_ops,
    &peer_oracle_ops,
    NULL,
};

const struct balancer_ops *
sim_balancer_find(const char *name)
{
	for (int i = 0; sim_balancers[i] != NULL; i++)
		if (strcmp(sim_balancers[i]->name, name) == 0)
			return sim_balancers[i];
	return NULL;
}

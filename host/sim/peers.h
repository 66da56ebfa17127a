/*
 * peers.h - the balancers the simulator can run: the peers an admin would otherwise pick
 * (none, autonuma, numad, static), vnumad, and the oracle.  Each peer's model is described in
 * docs/peers/<name>.md with its constants and where they come from.
 */
#ifndef VNUMAD_HOST_SIM_PEERS_H
#define VNUMAD_HOST_SIM_PEERS_H

#include "policy/model.h"

extern const struct balancer_ops peer_none_ops;
extern const struct balancer_ops peer_autonuma_ops;
extern const struct balancer_ops peer_numad_ops;
extern const struct balancer_ops peer_static_ops;
extern const struct balancer_ops peer_oracle_ops;

/* All six, in report order: none, autonuma, numad, static, vnumad, oracle; NULL-terminated. */
extern const struct balancer_ops *const sim_balancers[];
const struct balancer_ops *sim_balancer_find(const char *name);

#endif

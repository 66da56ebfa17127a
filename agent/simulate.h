/*
 * simulate.h - `vnumactl simulate [SCENARIO] [--policy LIST] [--json] [--plot FILE]`
 * (BRIEF 4.3): run a scenario under each balancer and print the comparison.
 */
#ifndef VNUMAD_AGENT_SIMULATE_H
#define VNUMAD_AGENT_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/cli.h"

/* The command handler. */
int simulate_cmd(struct cli_ctx *ctx, const struct cli_args *args);

/*
 * Parse a comma-separated list of balancer names (NULL: all of them) into selected[], indexed
 * like sim_balancers[] (which has nr entries).  0, or -EINVAL with a message listing the
 * valid names.
 */
int simulate_policies_parse(const char *list, bool *selected, int nr, char *err, size_t errlen);

#endif

/*
 * scenario_random.h - seeded random scenarios, for property tests (tests/unit/test_props.c).
 *
 * A scenario is drawn from one 64-bit seed and nothing else (its own PCG32 stream), so the
 * same seed gives the same JSON text on every machine and every run.  The text is a normal
 * scenario file (BRIEF 4.2), valid by construction, so a failing case prints as a file that
 * `vnumactl simulate FILE` replays.  What is drawn:
 *  - the host: 2, 4 or 8 nodes, 8-32 CPUs and 32-128 GiB per node; on 4 and 8 nodes sometimes
 *    a two-level distance matrix (pairs of nodes close, others far);
 *  - VMs until their vCPUs reach 0.5-1.3 times the host's CPUs or their memory (over the whole
 *    run) reaches SCN_RANDOM_MEM_FILL of the host's: small, medium, node-sized and wider than
 *    a node (vCPUs, memory or both); every workload kind (cells split the VM in 2-4 cells);
 *    mem_intensity 0.2-0.8, util 0.3-1; some with first_touch_node, some arriving late or
 *    leaving early; in some scenarios some VMs confined to half of the nodes by policy;
 *  - a quarter of the scenarios are met running (balancer_start_s at a fifth of the run).
 */
#ifndef VNUMAD_HOST_SIM_SCENARIO_RANDOM_H
#define VNUMAD_HOST_SIM_SCENARIO_RANDOM_H

#include <stdint.h>

/*
 * Share of the host's memory all VMs of a scenario may take together (whether they run at
 * once or not): room for the engine's headroom (5 %) and the kernel's watermarks, so that a
 * random scenario tests placement, not out-of-memory handling.
 */
#define SCN_RANDOM_MEM_FILL 0.80

/* The scenario of seed, running duration_s (>= 10) simulated seconds, as JSON; free() it. */
char *scenario_random_json(uint64_t seed, double duration_s);

#endif

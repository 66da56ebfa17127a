/*
 * peer_numad.h - numad's node choice (numad 20150602, pick_numa_nodes()), shared by the
 * `numad` peer (the daemon) and the `static` peer (libvirt placement='auto', i.e. one
 * `numad -w NCPUS:MB` call per domain start).  See docs/peers/numad.md.
 *
 * Units are numad's own, so the arithmetic (integer divisions included) matches it: memory in
 * MB (MiB, as numad divides by 1024*1024), CPU in hundredths of a CPU ("centi-CPUs", numad's
 * ONE_HUNDRED scaling).  Node indexes are snapshot node indexes.
 */
#ifndef VNUMAD_HOST_SIM_PEER_NUMAD_H
#define VNUMAD_HOST_SIM_PEER_NUMAD_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/model.h"

/* numad's view of one node: its update_nodes() data. */
struct numad_node {
	int64_t mbs_total;
	int64_t mbs_free; /* MemFree (+ Inactive(file), none in the sim) */
	int64_t
	    cpus_total_c; /* online CPUs x 100 (no SMT in the sim, so no hyper-thread discount) */
	int64_t cpus_free_c; /* idle capacity x 100 */
};

/*
 * What numad knows of the process it places, for adding its own usage back to the nodes it
 * sits on.  Pass NULL for pre-placement advice (`numad -w`), which adds nothing back, uses no
 * CPU flex and always covers the whole CPU request.
 */
struct numad_proc_usage {
	const uint64_t *node_mbs; /* per node index: its memory there (numa_maps) */
	int64_t mbs_used;         /* RSS, > 0 */
	int64_t cpus_used_c;      /* numad's CPUs_used: max of the recent samples */
	uint64_t node_list;       /* nodes it is bound to; all nodes = not bound */
};

struct numad_choice {
	uint64_t nodes;  /* the chosen node set (never empty on success) */
	int start_node;  /* the best start node */
	uint64_t totmag; /* its distance-weighted magnitude (numad's totmag[]) */
	int min_nodes;   /* numad's min_req_nodes */
	/* What the walk consumed on each node (MB, centi-CPUs); 0 off the chosen set. */
	int64_t take_mbs[UTIL_MAX_NODES];
	int64_t take_cpus_c[UTIL_MAX_NODES];
};

/*
 * Fill nodes[0..snap->nr_nodes) from the snapshot: free memory is mem_free_mib, free CPU is
 * nr_cpus less the CPU use of every vCPU now on the node (what idle ticks measure), >= 0.
 */
void numad_nodes_measure(const struct snapshot *snap, struct numad_node *nodes);

/*
 * numad's magnitude of a node for a request: (needed_mem*10 + excess_mem*4) x
 * (needed_cpu*6 + excess_cpu*1), needed = min(free, request), excess = max(free - request, 0).
 */
uint64_t numad_node_magnitude(int64_t req_mbs, int64_t req_cpus_c, int64_t free_mbs,
                              int64_t free_cpus_c);

/*
 * pick_numa_nodes(): choose nodes for req_mbs MB and req_cpus_c centi-CPUs.  proc is the
 * process being evaluated (NULL: advice).  assume_enough_cpus: the host has CPU for everyone,
 * so stop the walk once memory and the minimum node count are covered (numad's flag; ignored
 * for advice, which never assumes).  Returns 0, or -EINVAL for a snapshot without nodes or
 * with more than UTIL_MAX_NODES.
 */
int numad_pick_nodes(const struct snapshot *snap, const struct numad_node *nodes,
                     const struct numad_proc_usage *proc, int64_t req_mbs, int64_t req_cpus_c,
                     bool assume_enough_cpus, struct numad_choice *out);

/*
 * Convenience: measure the snapshot and choose for a request in MiB and CPUs.  vm_idx < 0:
 * advice (`numad -w`).  vm_idx >= 0: that VM's current usage (resident memory, summed vCPU
 * cpu_use, allowed nodes) is added back as numad does for a managed process, assuming enough
 * CPUs host-wide.  Returns 0 or -EINVAL.
 */
int numad_choose_nodes(const struct snapshot *snap, int vm_idx, double req_mem_mib, double req_cpus,
                       uint64_t *nodes_out);

#endif

/*
 * topology.h - NUMA topology through hwloc: nodes, CPUs per node, memory per node, distances.
 *
 * Loaded from the running machine, from an hwloc synthetic description
 * ("pack:2 l3:1 core:4 pu:1" style, with memory given per NUMA node), or from an hwloc XML
 * export that may carry a distance matrix.  Without distance data every remote distance is
 * TOPOLOGY_REMOTE_DEFAULT and topology.has_distances is false.
 *
 * Node indexes are 0..nr_nodes-1 in increasing OS id order; nodes[i].id is the OS id.
 * Ownership: the caller frees with topology_free().
 */
#ifndef VNUMAD_HOST_TOPOLOGY_H
#define VNUMAD_HOST_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOPOLOGY_LOCAL          10 /* ACPI SLIT: distance of a node to itself */
#define TOPOLOGY_REMOTE_DEFAULT 21 /* what Linux assumes without a SLIT */

struct topology_node {
	int id; /* OS node id */
	int nr_cpus;
	int *cpus;        /* OS CPU ids, ascending */
	uint64_t mem_mib; /* total memory of the node */
};

struct topology {
	int nr_nodes;
	struct topology_node *nodes;
	int *distance;      /* nr_nodes x nr_nodes, row-major, by node index */
	bool has_distances; /* false: filled with the defaults above */
	int nr_cpus;        /* highest OS CPU id + 1 */
	int *cpu_node;      /* per OS CPU id: node index, or -1 if the CPU is not in any node */
};

/* Each returns 0 and sets *out, or -errno with a message in err (never crashes on bad input). */
int topology_load_machine(struct topology **out, char *err, size_t errlen);
int topology_load_synthetic(const char *desc, struct topology **out, char *err, size_t errlen);
int topology_load_xml(const char *path, struct topology **out, char *err, size_t errlen);
/*
 * What the Linux kernel says, through hwloc's Linux discovery alone: root NULL or "/" is this
 * machine, another directory a tree laid out like / (sys/devices/system/{cpu,node}), as the
 * fixtures under tests/fixtures/linux/.  -ENODEV if hwloc could not read a Linux topology
 * there (it would otherwise describe the running machine instead).
 */
int topology_load_linux(const char *root, struct topology **out, char *err, size_t errlen);
/*
 * A regular host built directly: nr_nodes nodes of cpus_per_node CPUs (numbered node by node)
 * and mem_mib_per_node each; distance may be NULL (defaults) or nr_nodes^2 entries.
 */
int topology_new_uniform(int nr_nodes, int cpus_per_node, uint64_t mem_mib_per_node,
                         const int *distance, struct topology **out, char *err, size_t errlen);
void topology_free(struct topology *topo);

static inline int
topology_distance(const struct topology *topo, int from, int to)
{
	return topo->distance[from * topo->nr_nodes + to];
}

#endif

/*
 * fuzz_sysfs.c - libFuzzer target for the NUMA node reader (host/linux/sysfs.c): node/online
 * and each node's meminfo, with hwloc's Linux discovery of the same tree for CPUs and
 * distances (cpu/cpuN/topology, node/nodeN/{cpumap,distance}), read as a whole tree.
 *
 * Input: files in the form of tests/fuzz/fuzz_util.h ("%% sys/devices/system/node/online",
 * "%% sys/devices/system/node/node0/meminfo", ...), written into an emptied private directory
 * that linux_nodes_read() takes as its root.  Nodes that read have ascending ids, ascending
 * CPUs, a full distance matrix of bounded values and no more free memory than memory.  Built
 * by `make fuzz` (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/sysfs/
 * (tests/unit/test_fuzz_replay_host.c).  Returns what linux_nodes_read() returned.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/sysfs.h"
#include "host/topology.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_sysfs_run(const uint8_t *data, size_t size);

static void
fuzz_sysfs_node_check(const struct linux_node *n)
{
	if (n->id < 0 || n->id >= LINUX_MAX_NODES || n->nr_cpus < 0 ||
	    (n->nr_cpus == 0) != (n->cpus == NULL) || n->nr_distances < 1 ||
	    n->nr_distances > LINUX_MAX_NODES || n->mem.mem_free_kib > n->mem.mem_total_kib)
		abort();
	for (int i = 0; i < n->nr_cpus; i++)
		if (n->cpus[i] < 0 || n->cpus[i] >= LINUX_MAX_CPUS ||
		    (i > 0 && n->cpus[i] <= n->cpus[i - 1]))
			abort();
	for (int i = 0; i < n->nr_distances; i++)
		if (n->distance[i] < TOPOLOGY_LOCAL || n->distance[i] > 255)
			abort();
}

static int
fuzz_sysfs_known(int ret)
{
	return ret == 0 || ret == -EINVAL || ret == -EFBIG || ret == -ENOENT || ret == -EISDIR ||
	       ret == -ENOTDIR || ret == -ENODEV;
}

int
fuzz_sysfs_run(const uint8_t *data, size_t size)
{
	const char *root = fuzz_tree_write(data, size);
	struct linux_nodes nodes;
	int ret = linux_nodes_read(root, &nodes);

	if (!fuzz_sysfs_known(ret) || (ret < 0 && (nodes.nr_nodes != 0 || nodes.nodes != NULL)))
		abort();
	for (int i = 0; i < nodes.nr_nodes; i++) {
		fuzz_sysfs_node_check(&nodes.nodes[i]);
		if (nodes.nodes[i].nr_distances != nodes.nr_nodes ||
		    (i > 0 && nodes.nodes[i].id <= nodes.nodes[i - 1].id))
			abort(); /* a full matrix, ascending ids */
	}
	linux_nodes_free(&nodes);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_sysfs_run(data, size);
	return 0;
}
#endif

/*
 * sysfs.h - NUMA nodes: which are online and each node's memory counters, from
 * /sys/devices/system/node; each node's CPUs and distance row, through hwloc.
 *
 * Each file has a pure parser on a (buffer, length) pair, safe on any bytes (see scan.h for
 * the error codes), and the readers take a root directory (NULL or "/" = this machine) so
 * tests run on captured trees under tests/fixtures/linux/.
 */
#ifndef VNUMAD_HOST_LINUX_SYSFS_H
#define VNUMAD_HOST_LINUX_SYSFS_H

#include <stddef.h>
#include <stdint.h>

#include "host/linux/scan.h"

/* Largest sysfs node file we read (a meminfo is about 1.5 KiB). */
#define LINUX_SYSFS_MAX_BYTES ((size_t)64 * 1024)

/* node<N>/meminfo keys we keep; bit (1u << key) in linux_meminfo.present. */
enum linux_meminfo_key {
	LINUX_MEMINFO_MEM_TOTAL,
	LINUX_MEMINFO_MEM_FREE,
	LINUX_MEMINFO_MEM_USED,
	LINUX_MEMINFO_ACTIVE_FILE,
	LINUX_MEMINFO_INACTIVE_FILE,
	LINUX_MEMINFO_FILE_PAGES,
	LINUX_MEMINFO_ANON_PAGES,
	LINUX_MEMINFO_SHMEM,
	LINUX_MEMINFO_ANON_HUGE_PAGES,
	LINUX_MEMINFO_HUGEPAGES_TOTAL,
	LINUX_MEMINFO_HUGEPAGES_FREE,
	LINUX_MEMINFO_NR_KEYS
};

/*
 * One node's memory, from lines "Node <N> <Key>: <value> kB".  MemTotal and MemFree are
 * required; the others are 0 when absent (see present).  HugePages_* are counts of default-size
 * huge pages, not KiB.
 */
struct linux_meminfo {
	uint64_t mem_total_kib;
	uint64_t mem_free_kib;
	uint64_t mem_used_kib;
	uint64_t active_file_kib;
	uint64_t inactive_file_kib;
	uint64_t file_pages_kib;
	uint64_t anon_pages_kib;
	uint64_t shmem_kib;
	uint64_t anon_huge_pages_kib;
	uint64_t hugepages_total;
	uint64_t hugepages_free;
	uint32_t present; /* bit (1u << enum linux_meminfo_key) per key found */
};

/* One online node.  Owns cpus and distance. */
struct linux_node {
	int id;           /* OS node id */
	int nr_cpus;      /* 0 for a memory-only node */
	int *cpus;        /* ascending OS CPU ids, NULL when nr_cpus == 0 */
	int nr_distances; /* entries in distance: one per online node */
	int *distance;    /* distance[i] to the i-th online node (ascending ids), 10 = local */
	struct linux_meminfo mem;
};

/* All online nodes, ascending by id.  Owns nodes. */
struct linux_nodes {
	int nr_nodes;
	struct linux_node *nodes;
};

/* "0-3,8-11": see linux_scan_idlist(); limit is LINUX_MAX_CPUS or LINUX_MAX_NODES. */
int linux_idlist_parse(const char *buf, size_t len, int limit, int **ids, int *nr);
/* node<N>/meminfo; every line must name node_id; a file not ending in a newline was cut. */
int linux_meminfo_parse(const char *buf, size_t len, int node_id, struct linux_meminfo *out);

void linux_node_free(struct linux_node *node);
/*
 * Read every online node: `online` and each node's meminfo here, its CPUs and distance row
 * from hwloc (topology_load_linux) on the same root.  -ENOENT if a node named online has no
 * directory; -EINVAL if none is online, a file is malformed, or hwloc's node set or distance
 * matrix does not match `online` (a node came or went while we read: retry later); -ENODEV
 * if hwloc's Linux discovery could not run there (no sys/devices/system/cpu).
 */
int linux_nodes_read(const char *root, struct linux_nodes *out);
void linux_nodes_free(struct linux_nodes *nodes);

#endif

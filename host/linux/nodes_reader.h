/*
 * nodes_reader.h - the nodes (sysfs.h) and kernel.numa_balancing read every round at the cost
 * of one pread(2) per file: online, each node's meminfo and numa_balancing are kept open
 * (pfile.h); each node's CPUs and distances (hwloc's Linux discovery, sysfs.h), which change
 * only when a CPU or a node comes or goes, are read afresh every LINUX_NODES_TOPOLOGY_RECHECK_S
 * and whenever the online set changed, and copied from the last reading in between.
 *
 * Owner: the caller of linux_nodes_reader_new (the Linux host keeps one).
 */
#ifndef VNUMAD_HOST_LINUX_NODES_READER_H
#define VNUMAD_HOST_LINUX_NODES_READER_H

#include "host/linux/sysfs.h"

/*
 * Seconds between two topology reads (hwloc: CPUs and distances).  Default 60: a CPU taken
 * offline (echo 0 > cpuN/online) is seen within a minute, and its vCPUs moved off it by the
 * kernel meanwhile; a node that comes or goes changes `online` and is seen at once.
 */
#define LINUX_NODES_TOPOLOGY_RECHECK_S 60.0

struct linux_nodes_reader;

struct linux_nodes_reader *linux_nodes_reader_new(void);
/* Closes every kept file; NULL-safe. */
void linux_nodes_reader_free(struct linux_nodes_reader *r);
/*
 * The nodes under root as linux_nodes_read, at now_s (a monotonic clock, seconds).  The same
 * errors; a failed read drops what is kept, so the next one reads every file afresh.
 */
int linux_nodes_reader_read(struct linux_nodes_reader *r, const char *root, double now_s,
                            struct linux_nodes *out);
/* kernel.numa_balancing as linux_numa_balancing_read, through a kept file. */
int linux_nodes_reader_balancing(struct linux_nodes_reader *r, const char *root, int *mode);
/* Files kept open now. */
int linux_nodes_reader_fds(const struct linux_nodes_reader *r);

#endif

/*
 * load_sys.h - the few Linux interfaces vnuma-load needs beyond libc: a node's CPUs from sysfs,
 * the calling thread's memory policy, and where pages of the RAM mapping lie.  Raw system
 * calls, so the tool needs no libnuma.
 */
#ifndef VNUMAD_GUEST_TOOLS_LOAD_SYS_H
#define VNUMAD_GUEST_TOOLS_LOAD_SYS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* cpu_set_t */
#endif
#include <sched.h>
#include <stddef.h>
#include <stdint.h>

/* Pages of the RAM mapping load_mem_where() asks the kernel about (spread evenly). */
#define LOAD_MEM_SAMPLES 4096

/*
 * Parse a kernel CPU list ("0-3,8,10-11", maybe with a newline; "" = none; the grammar of
 * policy/idlist.h) into *set: 0, or -EINVAL on bad syntax or a CPU >= CPU_SETSIZE.
 */
int load_cpulist_parse(const char *s, cpu_set_t *set);
/*
 * The CPUs of node `node` from ROOT/sys/devices/system/node/nodeN/cpulist (root "/" on a
 * real machine, a fixture tree in tests).  0, -ENOENT (no such node) or -EINVAL.
 */
int load_node_cpus(const char *root, int node, cpu_set_t *set);
/* The calling thread's CPUs, in order, into cpus[0..max-1]; the count or -errno. */
int load_allowed_cpus(int *cpus, int max);

/* set_mempolicy(MPOL_PREFERRED, node) / set_mempolicy(MPOL_DEFAULT) for the calling thread. */
int load_mempolicy_prefer(int node);
int load_mempolicy_default(void);

/*
 * Where the RAM at [addr, addr + len) lies: LOAD_MEM_SAMPLES pages spread over it are looked
 * up with move_pages(2) (moving nothing) and counted by node into count_by_node[0..max_nodes-1].
 * Returns how many pages were counted (absent pages and nodes >= max_nodes are not), or -errno.
 */
int load_mem_where(const char *addr, size_t len, uint64_t *count_by_node, int max_nodes);

#endif

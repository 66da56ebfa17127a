/*
 * load_sys.c - sysfs, memory policy and page lookups for vnuma-load (see load_sys.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/mempolicy.h>

#include "guest-tools/load_opts.h"
#include "guest-tools/load_sys.h"
#include "policy/idlist.h"

/* Largest cpulist file read (bytes): every CPU_SETSIZE CPU listed singly, with commas. */
#define LOAD_CPULIST_MAX 8192
/* Bits in the node mask handed to set_mempolicy: every node id --node accepts. */
#define LOAD_NODEMASK_BITS (LOAD_NODE_MAX + 1)
#define LOAD_ULONG_BITS    (sizeof(unsigned long) * CHAR_BIT)

int
load_cpulist_parse(const char *s, cpu_set_t *set)
{
	struct idlist ids;

	CPU_ZERO(set);
	if (idlist_parse(s, strlen(s), CPU_SETSIZE, IDLIST_EMPTY_OK | IDLIST_CPUS, &ids, NULL, 0) <
	    0)
		return -EINVAL;
	for (int c = idlist_next(&ids, 0); c >= 0; c = idlist_next(&ids, c + 1))
		CPU_SET(c, set);
	idlist_free(&ids);
	return 0;
}

int
load_node_cpus(const char *root, int node, cpu_set_t *set)
{
	char path[PATH_MAX], *buf = NULL;
	FILE *f = NULL;
	size_t n;
	int ret;

	if ((size_t)snprintf(path, sizeof(path), "%s/sys/devices/system/node/node%d/cpulist", root,
	                     node) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	if ((buf = malloc(LOAD_CPULIST_MAX + 1)) == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	n = fread(buf, 1, LOAD_CPULIST_MAX, f);
	if (ferror(f) || n == LOAD_CPULIST_MAX) {
		ret = -EINVAL;
		goto out;
	}
	buf[n] = '\0';
	ret = load_cpulist_parse(buf, set);
out:
	free(buf);
	fclose(f);
	return ret;
}

int
load_allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

int
load_mempolicy_prefer(int node)
{
	unsigned long mask[(LOAD_NODEMASK_BITS + LOAD_ULONG_BITS - 1) / LOAD_ULONG_BITS];

	if (node < 0 || node >= LOAD_NODEMASK_BITS)
		return -EINVAL;
	memset(mask, 0, sizeof(mask));
	mask[(size_t)node / LOAD_ULONG_BITS] = 1UL << ((size_t)node % LOAD_ULONG_BITS);
	/* maxnode counts one more than the bits the kernel reads (set_mempolicy(2), BUGS). */
	if (syscall(SYS_set_mempolicy, MPOL_PREFERRED, mask,
	            (unsigned long)LOAD_NODEMASK_BITS + 1) != 0)
		return -errno;
	return 0;
}

int
load_mempolicy_default(void)
{
	if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL) != 0)
		return -errno;
	return 0;
}

int
load_mem_where(const char *addr, size_t len, uint64_t *count_by_node, int max_nodes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = len / page, n;
	void **where = NULL;
	int *status = NULL, ret = 0;

	n = pages < LOAD_MEM_SAMPLES ? pages : LOAD_MEM_SAMPLES;
	where = calloc(n + 1, sizeof(*where));
	status = calloc(n + 1, sizeof(*status));
	if (where == NULL || status == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		where[i] = (void *)(addr + (i * pages / n) * page);
	if (syscall(SYS_move_pages, 0, (unsigned long)n, where, NULL, status, 0) != 0) {
		ret = -errno;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (status[i] >= 0 && status[i] < max_nodes) {
			count_by_node[status[i]]++;
			ret++;
		}
	}
out:
	free(where);
	free(status);
	return ret;
}

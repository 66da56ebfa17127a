/*
 * sysfs.c - the NUMA nodes: which are online and each node's memory counters from
 * /sys/devices/system/node (online, node<N>/meminfo; formats: drivers/base/node.c), each
 * node's CPUs and distances from hwloc's Linux discovery of the same tree (host/topology.h).
 */
#include "host/linux/sysfs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host/topology.h"
#include "policy/util.h"

#define SYSFS_NODE_DIR "/sys/devices/system/node"

int
linux_idlist_parse(const char *buf, size_t len, int limit, int **ids, int *nr)
{
	struct linux_scan s;

	linux_scan_init(&s, buf, len);
	return linux_scan_idlist(&s, limit, ids, nr);
}

/* Where each kept meminfo key goes. */
static const struct {
	const char *name;
	size_t offset;
	bool kib; /* value carries a " kB" suffix */
} meminfo_keys[LINUX_MEMINFO_NR_KEYS] = {
    [LINUX_MEMINFO_MEM_TOTAL] = {"MemTotal", offsetof(struct linux_meminfo, mem_total_kib), true},
    [LINUX_MEMINFO_MEM_FREE] = {"MemFree", offsetof(struct linux_meminfo, mem_free_kib), true},
    [LINUX_MEMINFO_MEM_USED] = {"MemUsed", offsetof(struct linux_meminfo, mem_used_kib), true},
    [LINUX_MEMINFO_ACTIVE_FILE] = {"Active(file)", offsetof(struct linux_meminfo, active_file_kib),
                                   true},
    [LINUX_MEMINFO_INACTIVE_FILE] = {"Inactive(file)",
                                     offsetof(struct linux_meminfo, inactive_file_kib), true},
    [LINUX_MEMINFO_FILE_PAGES] = {"FilePages", offsetof(struct linux_meminfo, file_pages_kib),
                                  true},
    [LINUX_MEMINFO_ANON_PAGES] = {"AnonPages", offsetof(struct linux_meminfo, anon_pages_kib),
                                  true},
    [LINUX_MEMINFO_SHMEM] = {"Shmem", offsetof(struct linux_meminfo, shmem_kib), true},
    [LINUX_MEMINFO_ANON_HUGE_PAGES] = {"AnonHugePages",
                                       offsetof(struct linux_meminfo, anon_huge_pages_kib), true},
    [LINUX_MEMINFO_HUGEPAGES_TOTAL] = {"HugePages_Total",
                                       offsetof(struct linux_meminfo, hugepages_total), false},
    [LINUX_MEMINFO_HUGEPAGES_FREE] = {"HugePages_Free",
                                      offsetof(struct linux_meminfo, hugepages_free), false},
};

static int
meminfo_key_find(const struct linux_scan *key)
{
	for (int k = 0; k < LINUX_MEMINFO_NR_KEYS; k++)
		if (linux_scan_equals(key, meminfo_keys[k].name))
			return k;
	return -1;
}

/*
 * One line "Node <N> <Key>: <value>[ kB]".  Every line must have that shape (so a cut or
 * garbled file is noticed), but only the keys in meminfo_keys are stored.
 */
static int
meminfo_line_parse(struct linux_scan *line, int node_id, struct linux_meminfo *out)
{
	struct linux_scan key;
	const char *colon;
	uint64_t value;
	int id, k;

	if (!linux_scan_literal(line, "Node "))
		return -EINVAL;
	if (linux_scan_id(line, LINUX_MAX_NODES, &id) < 0 || id != node_id ||
	    !linux_scan_char(line, ' '))
		return -EINVAL;
	colon = memchr(line->p, ':', linux_scan_len(line));
	if (colon == NULL || colon == line->p)
		return -EINVAL;
	key.p = line->p;
	key.end = colon;
	line->p = colon + 1;
	linux_scan_blanks(line);
	if (linux_scan_u64(line, &value) < 0)
		return -EINVAL;
	k = meminfo_key_find(&key);
	if (k >= 0 && meminfo_keys[k].kib && !linux_scan_literal(line, " kB"))
		return -EINVAL;
	linux_scan_blanks(line);
	if (!linux_scan_empty(line) && !(k < 0 && linux_scan_equals(line, "kB")))
		return -EINVAL;
	if (k >= 0) {
		*(uint64_t *)((char *)out + meminfo_keys[k].offset) = value;
		out->present |= 1u << k;
	}
	return 0;
}

int
linux_meminfo_parse(const char *buf, size_t len, int node_id, struct linux_meminfo *out)
{
	const uint32_t required = (1u << LINUX_MEMINFO_MEM_TOTAL) | (1u << LINUX_MEMINFO_MEM_FREE);
	struct linux_scan s, line;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (len == 0 || buf[len - 1] != '\n')
		return -EINVAL;
	linux_scan_init(&s, buf, len);
	while (linux_scan_line(&s, &line)) {
		if ((ret = meminfo_line_parse(&line, node_id, out)) < 0)
			goto out;
	}
	if ((out->present & required) != required || out->mem_free_kib > out->mem_total_kib)
		ret = -EINVAL;
out:
	if (ret < 0)
		memset(out, 0, sizeof(*out));
	return ret;
}

/* Read one file of node<id> and hand it to parse. */
static int
node_file_read(const char *root, int id, const char *name, char **data, size_t *len)
{
	return linux_file_read(root, LINUX_SYSFS_MAX_BYTES, data, len, SYSFS_NODE_DIR "/node%d/%s",
	                       id, name);
}

void
linux_node_free(struct linux_node *node)
{
	if (node == NULL)
		return;
	free(node->cpus);
	free(node->distance);
	memset(node, 0, sizeof(*node));
}

void
linux_nodes_free(struct linux_nodes *nodes)
{
	if (nodes == NULL)
		return;
	for (int i = 0; i < nodes->nr_nodes; i++)
		linux_node_free(&nodes->nodes[i]);
	free(nodes->nodes);
	memset(nodes, 0, sizeof(*nodes));
}

/* node->id's CPUs and distance row from topo, whose node ids equal those of nodes. */
static void
sysfs_node_topo_fill(struct linux_node *node, const struct topology *topo, int index)
{
	const struct topology_node *tn = &topo->nodes[index];

	node->nr_cpus = tn->nr_cpus;
	if (tn->nr_cpus > 0) {
		node->cpus = xcalloc((size_t)tn->nr_cpus, sizeof(*node->cpus));
		memcpy(node->cpus, tn->cpus, (size_t)tn->nr_cpus * sizeof(*node->cpus));
	}
	node->nr_distances = topo->nr_nodes;
	node->distance = xcalloc((size_t)topo->nr_nodes, sizeof(*node->distance));
	for (int j = 0; j < topo->nr_nodes; j++)
		node->distance[j] = topology_distance(topo, index, j);
}

int
linux_nodes_read(const char *root, struct linux_nodes *out)
{
	struct topology *topo = NULL;
	char *data = NULL, err[256];
	int *ids = NULL, nr = 0, ret;
	size_t len;

	memset(out, 0, sizeof(*out));
	ret = linux_file_read(root, LINUX_SYSFS_MAX_BYTES, &data, &len, SYSFS_NODE_DIR "/online");
	if (ret < 0)
		goto out;
	if ((ret = linux_idlist_parse(data, len, LINUX_MAX_NODES, &ids, &nr)) < 0)
		goto out;
	if (nr == 0) {
		ret = -EINVAL;
		goto out;
	}
	/* meminfo first: a node named online but gone is -ENOENT, as it is for hwloc below */
	out->nodes = xcalloc((size_t)nr, sizeof(*out->nodes));
	for (int i = 0; i < nr; i++) {
		out->nodes[i].id = ids[i];
		out->nr_nodes = i + 1;
		free(data);
		data = NULL;
		if ((ret = node_file_read(root, ids[i], "meminfo", &data, &len)) < 0 ||
		    (ret = linux_meminfo_parse(data, len, ids[i], &out->nodes[i].mem)) < 0)
			goto out;
	}
	if ((ret = topology_load_linux(root, &topo, err, sizeof(err))) < 0)
		goto out;
	/*
	 * hwloc read `online` again: another node set means one came or went in between, and
	 * so does a multi-node host without a distance matrix (the kernel gives every online
	 * node a distance row of one entry per online node; hwloc drops a row that does not).
	 */
	if (topo->nr_nodes != nr || (nr > 1 && !topo->has_distances)) {
		ret = -EINVAL;
		goto out;
	}
	for (int i = 0; i < nr; i++) {
		if (topo->nodes[i].id != ids[i]) {
			ret = -EINVAL;
			goto out;
		}
		sysfs_node_topo_fill(&out->nodes[i], topo, i);
	}
out:
	topology_free(topo);
	free(data);
	free(ids);
	if (ret < 0)
		linux_nodes_free(out);
	return ret;
}

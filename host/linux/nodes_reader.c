/*
 * nodes_reader.c - the nodes read with kept files (nodes_reader.h).
 */
#include "host/linux/nodes_reader.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/pfile.h"
#include "host/linux/procfs.h"
#include "policy/util.h"

struct linux_nodes_reader {
	struct linux_pfile_pool pool;
	struct linux_pfile online, balancing;
	struct linux_pfile *meminfo; /* one per node of topo */
	struct linux_nodes topo;     /* the last full reading (its meminfo unused) */
	bool have_topo;
	double topo_s; /* when topo was read */
};

struct linux_nodes_reader *
linux_nodes_reader_new(void)
{
	struct linux_nodes_reader *r = xcalloc(1, sizeof(*r));

	linux_pfile_pool_init(&r->pool, LINUX_MAX_NODES + 2);
	linux_pfile_init(&r->online);
	linux_pfile_init(&r->balancing);
	return r;
}

/* Forget the topology and close the meminfo files. */
static void
nr_topo_drop(struct linux_nodes_reader *r)
{
	for (int i = 0; r->meminfo != NULL && i < r->topo.nr_nodes; i++)
		linux_pfile_close(&r->meminfo[i], &r->pool);
	free(r->meminfo);
	r->meminfo = NULL;
	linux_nodes_free(&r->topo);
	r->have_topo = false;
}

void
linux_nodes_reader_free(struct linux_nodes_reader *r)
{
	if (r == NULL)
		return;
	nr_topo_drop(r);
	linux_pfile_close(&r->online, &r->pool);
	linux_pfile_close(&r->balancing, &r->pool);
	free(r);
}

int
linux_nodes_reader_fds(const struct linux_nodes_reader *r)
{
	return r->pool.nr_open;
}

int
linux_nodes_reader_balancing(struct linux_nodes_reader *r, const char *root, int *mode)
{
	char *data;
	size_t len;
	int ret;

	*mode = 0;
	ret = linux_pfile_read(&r->balancing, &r->pool, root, LINUX_PROCFS_MAX_BYTES, &data, &len,
	                       "/proc/sys/kernel/numa_balancing");
	if (ret < 0)
		return ret;
	ret = linux_numa_balancing_parse(data, len, mode);
	free(data);
	return ret;
}

/* Does the online list in data name exactly the nodes of topo? */
static bool
nr_online_same(const struct linux_nodes *topo, const char *data, size_t len)
{
	int *ids = NULL, nr = 0;
	bool same;

	if (linux_idlist_parse(data, len, LINUX_MAX_NODES, &ids, &nr) < 0)
		return false;
	same = nr == topo->nr_nodes;
	for (int i = 0; same && i < nr; i++)
		same = ids[i] == topo->nodes[i].id;
	free(ids);
	return same;
}

/* dst (zeroed): src's id, CPUs and distances, no meminfo. */
static void
nr_node_topo_copy(struct linux_node *dst, const struct linux_node *src)
{
	dst->id = src->id;
	dst->nr_cpus = src->nr_cpus;
	if (src->nr_cpus > 0) {
		dst->cpus = xcalloc((size_t)src->nr_cpus, sizeof(*dst->cpus));
		memcpy(dst->cpus, src->cpus, (size_t)src->nr_cpus * sizeof(*dst->cpus));
	}
	dst->nr_distances = src->nr_distances;
	dst->distance = xcalloc((size_t)src->nr_distances, sizeof(*dst->distance));
	memcpy(dst->distance, src->distance, (size_t)src->nr_distances * sizeof(*dst->distance));
}

/* out: a copy of topo's cpus and distances, each node's meminfo read through its kept file. */
static int
nr_nodes_from_topo(struct linux_nodes_reader *r, const char *root, struct linux_nodes *out)
{
	const struct linux_nodes *t = &r->topo;
	int ret = 0;

	out->nodes = xcalloc((size_t)t->nr_nodes, sizeof(*out->nodes));
	out->nr_nodes = t->nr_nodes;
	for (int i = 0; i < t->nr_nodes && ret == 0; i++) {
		const struct linux_node *src = &t->nodes[i];
		struct linux_node *dst = &out->nodes[i];
		char *data;
		size_t len;

		nr_node_topo_copy(dst, src);
		ret = linux_pfile_read(&r->meminfo[i], &r->pool, root, LINUX_SYSFS_MAX_BYTES, &data,
		                       &len, "/sys/devices/system/node/node%d/meminfo", src->id);
		if (ret < 0)
			break;
		ret = linux_meminfo_parse(data, len, src->id, &dst->mem);
		free(data);
	}
	if (ret < 0)
		linux_nodes_free(out);
	return ret;
}

/* Read everything afresh into out, and keep its topology. */
static int
nr_nodes_full(struct linux_nodes_reader *r, const char *root, double now_s, struct linux_nodes *out)
{
	int ret;

	nr_topo_drop(r);
	if ((ret = linux_nodes_read(root, out)) < 0)
		return ret;
	r->topo.nr_nodes = out->nr_nodes;
	r->topo.nodes = xcalloc((size_t)out->nr_nodes, sizeof(*r->topo.nodes));
	r->meminfo = xcalloc((size_t)out->nr_nodes, sizeof(*r->meminfo));
	for (int i = 0; i < out->nr_nodes; i++) {
		struct linux_node *dst = &r->topo.nodes[i];
		const struct linux_node *src = &out->nodes[i];

		nr_node_topo_copy(dst, src);
		linux_pfile_init(&r->meminfo[i]);
	}
	r->have_topo = true;
	r->topo_s = now_s;
	return 0;
}

int
linux_nodes_reader_read(struct linux_nodes_reader *r, const char *root, double now_s,
                        struct linux_nodes *out)
{
	char *data = NULL;
	size_t len;
	bool fresh;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = linux_pfile_read(&r->online, &r->pool, root, LINUX_SYSFS_MAX_BYTES, &data, &len,
	                       "/sys/devices/system/node/online");
	if (ret < 0)
		goto fail;
	fresh = !r->have_topo || now_s < r->topo_s ||
	        now_s - r->topo_s >= LINUX_NODES_TOPOLOGY_RECHECK_S ||
	        !nr_online_same(&r->topo, data, len);
	free(data);
	ret = fresh ? nr_nodes_full(r, root, now_s, out) : nr_nodes_from_topo(r, root, out);
	if (ret < 0)
		goto fail;
	return 0;
fail:
	nr_topo_drop(r);
	linux_pfile_close(&r->online, &r->pool);
	return ret;
}

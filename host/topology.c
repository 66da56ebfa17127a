/*
 * topology.c - NUMA topology: nodes, their CPUs and memory, and the node distance matrix.
 *
 * Four loaders go through hwloc (the running machine, the Linux kernel's view of it or of a
 * tree laid out like it, a synthetic description string, an XML export) and share one
 * conversion, topo_from_hwloc(), into the flat struct topology the rest of vnumad uses;
 * topology_new_uniform() builds a regular host without hwloc (the simulator and tests).  hwloc is
 * only used here: no hwloc type leaks out of this file.
 *
 * Conversion rules:
 * - Nodes are the hwloc NUMANode objects sorted by OS index; node index i is the i-th
 *   smallest OS id.  Zero nodes or more than UTIL_MAX_NODES are refused.
 * - A CPU (hwloc PU) belongs to at most one node, as in Linux's nodeN/cpulist.  hwloc gives a
 *   NUMA node the cpuset of the object it is attached to, so several nodes can share CPUs
 *   (KNL DDR + MCDRAM under one cluster; a CXL memory expander attached to a package or the
 *   whole machine).  The owner of a PU is the node with the smallest cpuset that contains it,
 *   ties going to the lowest OS id.  The other nodes end up with zero CPUs: memory-only nodes
 *   are legal and keep nr_cpus == 0 and cpus == NULL.  A PU in no node's cpuset maps to -1.
 * - mem_mib is hwloc's local_memory (bytes) rounded down to MiB.
 * - Distances: see topo_fill_distances() and topo_matrix_convert().
 *
 * All loaders set hwloc's INCLUDE_DISALLOWED flag: vnumad places VMs on the whole host, so
 * the CPUs and nodes its own cgroup may not use still belong in the topology.
 */
#include "host/topology.h"

#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/*
 * Largest distance we store: 255 is the biggest ACPI SLIT entry (and means "unreachable").
 * Scaled latencies above it are clamped.
 */
#define TOPO_DISTANCE_MAX 255
/*
 * Sanity bound on OS CPU ids (exclusive): cpu_node is indexed by CPU id, so a corrupt XML
 * naming PU 4000000000 must not make us allocate gigabytes.  Linux's largest NR_CPUS is 8192;
 * 65536 leaves room for the future.
 */
#define TOPO_MAX_CPUS 65536
/* How many NUMA-node latency matrices we look at; a real host has one ("NUMALatency"). */
#define TOPO_MAX_MATRICES 8

/* -errno after a failed hwloc call, -EINVAL if it left errno unset. */
static int
topo_errno(void)
{
	return errno > 0 ? -errno : -EINVAL;
}

void
topology_free(struct topology *topo)
{
	if (topo == NULL)
		return;
	if (topo->nodes != NULL) {
		for (int i = 0; i < topo->nr_nodes; i++)
			free(topo->nodes[i].cpus);
	}
	free(topo->nodes);
	free(topo->distance);
	free(topo->cpu_node);
	free(topo);
}

/* A topology of nr_nodes empty nodes with the default distance matrix. */
static struct topology *
topo_alloc(int nr_nodes)
{
	struct topology *topo = xcalloc(1, sizeof(*topo));

	topo->nr_nodes = nr_nodes;
	topo->nodes = xcalloc((size_t)nr_nodes, sizeof(*topo->nodes));
	topo->distance = xcalloc((size_t)nr_nodes * (size_t)nr_nodes, sizeof(*topo->distance));
	for (int i = 0; i < nr_nodes; i++) {
		for (int j = 0; j < nr_nodes; j++)
			topo->distance[i * nr_nodes + j] =
			    i == j ? TOPOLOGY_LOCAL : TOPOLOGY_REMOTE_DEFAULT;
	}
	topo->has_distances = false;
	return topo;
}

/* ---- hwloc topology -> struct topology ---------------------------------------------------- */

static int
topo_node_cmp(const void *a, const void *b)
{
	unsigned x = (*(const hwloc_obj_t *)a)->os_index;
	unsigned y = (*(const hwloc_obj_t *)b)->os_index;

	return (x > y) - (x < y);
}

/* Collect the NUMA nodes into objs[], sorted by OS index; returns their number or -errno. */
static int
topo_collect_nodes(hwloc_topology_t hw, hwloc_obj_t *objs, char *err, size_t errlen)
{
	int nr = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);

	if (nr <= 0) {
		util_errf(err, errlen, "topology has no NUMA node");
		return -EINVAL;
	}
	if (nr > UTIL_MAX_NODES) {
		util_errf(err, errlen, "topology has %d NUMA nodes, at most %d are supported", nr,
		          UTIL_MAX_NODES);
		return -EINVAL;
	}
	for (int i = 0; i < nr; i++) {
		objs[i] = hwloc_get_obj_by_type(hw, HWLOC_OBJ_NUMANODE, (unsigned)i);
		if (objs[i] == NULL || objs[i]->os_index == HWLOC_UNKNOWN_INDEX ||
		    objs[i]->cpuset == NULL) {
			util_errf(err, errlen, "NUMA node %d has no OS index or no cpuset", i);
			return -EINVAL;
		}
	}
	qsort(objs, (size_t)nr, sizeof(*objs), topo_node_cmp);
	for (int i = 1; i < nr; i++) {
		if (objs[i]->os_index == objs[i - 1]->os_index) {
			util_errf(err, errlen, "two NUMA nodes have OS index %u",
			          objs[i]->os_index);
			return -EINVAL;
		}
	}
	return nr;
}

/* Set topo->nr_cpus from the largest PU OS index; refuse unknown or absurd indexes. */
static int
topo_count_cpus(hwloc_topology_t hw, struct topology *topo, char *err, size_t errlen)
{
	hwloc_obj_t pu = NULL;
	unsigned max_id = 0;
	bool any = false;

	while ((pu = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PU, pu)) != NULL) {
		if (pu->os_index == HWLOC_UNKNOWN_INDEX || pu->os_index >= TOPO_MAX_CPUS) {
			util_errf(err, errlen, "CPU with OS index %u out of range (max %d)",
			          pu->os_index, TOPO_MAX_CPUS - 1);
			return -EINVAL;
		}
		if (!any || pu->os_index > max_id)
			max_id = pu->os_index;
		any = true;
	}
	if (!any) {
		util_errf(err, errlen, "topology has no CPU");
		return -EINVAL;
	}
	topo->nr_cpus = (int)max_id + 1;
	return 0;
}

/* The node index owning CPU cpu_id (smallest cpuset containing it, then lowest OS id), or -1. */
static int
topo_cpu_owner(hwloc_obj_t *objs, const int *weights, int nr_nodes, unsigned cpu_id)
{
	int best = -1;

	for (int i = 0; i < nr_nodes; i++) {
		if (!hwloc_bitmap_isset(objs[i]->cpuset, cpu_id))
			continue;
		if (best < 0 || (unsigned)weights[i] < (unsigned)weights[best])
			best = i; /* weight -1 (infinite set) compares as largest */
	}
	return best;
}

/* Fill topo->cpu_node from the PUs; a PU OS index seen twice is an error. */
static int
topo_map_cpus(hwloc_topology_t hw, hwloc_obj_t *objs, struct topology *topo, char *err,
              size_t errlen)
{
	int weights[UTIL_MAX_NODES];
	bool *seen = xcalloc((size_t)topo->nr_cpus, sizeof(*seen));
	hwloc_obj_t pu = NULL;
	int ret = 0;

	for (int i = 0; i < topo->nr_nodes; i++)
		weights[i] = hwloc_bitmap_weight(objs[i]->cpuset);
	topo->cpu_node = xmalloc((size_t)topo->nr_cpus * sizeof(*topo->cpu_node));
	for (int cpu = 0; cpu < topo->nr_cpus; cpu++)
		topo->cpu_node[cpu] = -1;
	while ((pu = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PU, pu)) != NULL) {
		if (seen[pu->os_index]) {
			util_errf(err, errlen, "two CPUs have OS index %u", pu->os_index);
			ret = -EINVAL;
			goto out;
		}
		seen[pu->os_index] = true;
		topo->cpu_node[pu->os_index] =
		    topo_cpu_owner(objs, weights, topo->nr_nodes, pu->os_index);
	}
out:
	free(seen);
	return ret;
}

/* Build each node's ascending CPU list from topo->cpu_node. */
static void
topo_fill_node_cpus(struct topology *topo)
{
	for (int cpu = 0; cpu < topo->nr_cpus; cpu++) {
		if (topo->cpu_node[cpu] >= 0)
			topo->nodes[topo->cpu_node[cpu]].nr_cpus++;
	}
	for (int i = 0; i < topo->nr_nodes; i++) {
		struct topology_node *node = &topo->nodes[i];

		if (node->nr_cpus > 0)
			node->cpus = xcalloc((size_t)node->nr_cpus, sizeof(*node->cpus));
		node->nr_cpus = 0; /* refilled below */
	}
	for (int cpu = 0; cpu < topo->nr_cpus; cpu++) {
		int n = topo->cpu_node[cpu];

		if (n >= 0)
			topo->nodes[n].cpus[topo->nodes[n].nr_cpus++] = cpu;
	}
}

/*
 * Convert one hwloc latency matrix into out[] (nr_nodes^2, by node index) in 10-based SLIT
 * form.  Returns false if the matrix does not cover every node or cannot be scaled; out[] is
 * then partly written and the caller must discard it.
 *
 * Mapping: d[i][j] = round(10 * raw[i][j] / raw[i][i]), clamped to [10, 255].  A real SLIT
 * (diagonal 10, as Linux reports and hwloc passes on) is left unchanged; a latency matrix in
 * other units (e.g. nanoseconds from a user or a benchmark, 80 local / 130 remote) becomes the
 * ratio remote/local in tenths, which is what the rest of vnumad assumes a distance means
 * ("a remote access costs distance/10 times a local one").  Each row is scaled by its own
 * diagonal, so a node with slower local memory is not made to look remote to itself.  A
 * matrix with a zero on the diagonal (hop counts) has no meaningful ratio and is rejected.
 */
static bool
topo_matrix_convert(struct hwloc_distances_s *dist, hwloc_obj_t *objs, int nr_nodes, int *out)
{
	int idx[UTIL_MAX_NODES];

	for (int i = 0; i < nr_nodes; i++) {
		idx[i] = hwloc_distances_obj_index(dist, objs[i]);
		if (idx[i] < 0)
			return false;
	}
	for (int i = 0; i < nr_nodes; i++) {
		const hwloc_uint64_t *row = &dist->values[(size_t)idx[i] * dist->nbobjs];
		double local = (double)row[idx[i]];

		if (local <= 0)
			return false;
		for (int j = 0; j < nr_nodes; j++) {
			double d = (double)TOPOLOGY_LOCAL * (double)row[idx[j]] / local + 0.5;

			if (d < TOPOLOGY_LOCAL)
				d = TOPOLOGY_LOCAL;
			if (d > TOPO_DISTANCE_MAX)
				d = TOPO_DISTANCE_MAX;
			out[i * nr_nodes + j] = i == j ? TOPOLOGY_LOCAL : (int)d;
		}
	}
	return true;
}

/*
 * Replace the default distances by hwloc's NUMA-node latency matrix if there is a usable one:
 * an OS-provided one (the ACPI SLIT on Linux, named "NUMALatency") first, else one a user put
 * in the XML, each in hwloc's order.  Bandwidth matrices are ignored.  A topology without a
 * usable matrix keeps the defaults and has_distances == false; that is not an error.
 */
static void
topo_fill_distances(hwloc_topology_t hw, hwloc_obj_t *objs, struct topology *topo)
{
	static const unsigned long from[] = {HWLOC_DISTANCES_KIND_FROM_OS,
	                                     HWLOC_DISTANCES_KIND_FROM_USER};
	struct hwloc_distances_s *dist[TOPO_MAX_MATRICES];
	int *tmp = xcalloc((size_t)topo->nr_nodes * (size_t)topo->nr_nodes, sizeof(*tmp));

	for (size_t f = 0; f < sizeof(from) / sizeof(from[0]) && !topo->has_distances; f++) {
		unsigned nr = TOPO_MAX_MATRICES;

		if (hwloc_distances_get_by_type(hw, HWLOC_OBJ_NUMANODE, &nr, dist,
		                                from[f] | HWLOC_DISTANCES_KIND_MEANS_LATENCY,
		                                0) < 0)
			continue;
		if (nr > TOPO_MAX_MATRICES)
			nr = TOPO_MAX_MATRICES; /* the rest were not stored */
		for (unsigned m = 0; m < nr; m++) {
			if (!topo->has_distances &&
			    topo_matrix_convert(dist[m], objs, topo->nr_nodes, tmp)) {
				memcpy(topo->distance, tmp,
				       (size_t)topo->nr_nodes * (size_t)topo->nr_nodes *
				           sizeof(*tmp));
				topo->has_distances = true;
			}
			hwloc_distances_release(hw, dist[m]);
		}
	}
	free(tmp);
}

/* The shared conversion: hw must be loaded.  On success *out owns a new topology. */
static int
topo_from_hwloc(hwloc_topology_t hw, struct topology **out, char *err, size_t errlen)
{
	hwloc_obj_t objs[UTIL_MAX_NODES];
	struct topology *topo = NULL;
	int nr, ret;

	nr = topo_collect_nodes(hw, objs, err, errlen);
	if (nr < 0)
		return nr;
	topo = topo_alloc(nr);
	ret = topo_count_cpus(hw, topo, err, errlen);
	if (ret < 0)
		goto out;
	ret = topo_map_cpus(hw, objs, topo, err, errlen);
	if (ret < 0)
		goto out;
	topo_fill_node_cpus(topo);
	for (int i = 0; i < nr; i++) {
		topo->nodes[i].id = (int)objs[i]->os_index;
		topo->nodes[i].mem_mib = objs[i]->attr->numanode.local_memory >> 20;
	}
	topo_fill_distances(hw, objs, topo);
	*out = topo;
	topo = NULL;
out:
	topology_free(topo);
	return ret;
}

/* ---- loaders -------------------------------------------------------------------------------- */

static int
topo_hwloc_init(hwloc_topology_t *hw, char *err, size_t errlen)
{
	errno = 0;
	if (hwloc_topology_init(hw) < 0) {
		int ret = topo_errno();

		util_errf(err, errlen, "hwloc_topology_init: %s", strerror(-ret));
		return ret;
	}
	errno = 0;
	if (hwloc_topology_set_flags(*hw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) < 0) {
		int ret = topo_errno();

		hwloc_topology_destroy(*hw);
		util_errf(err, errlen, "hwloc_topology_set_flags: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/* Load the configured hwloc topology hw and convert it; what names the source in errors. */
static int
topo_hwloc_finish(hwloc_topology_t hw, const char *what, struct topology **out, char *err,
                  size_t errlen)
{
	char why[256];
	int ret;

	errno = 0;
	if (hwloc_topology_load(hw) < 0) {
		ret = topo_errno();
		util_errf(err, errlen, "%s: cannot load: %s", what, strerror(-ret));
		return ret;
	}
	ret = topo_from_hwloc(hw, out, why, sizeof(why));
	if (ret < 0)
		util_errf(err, errlen, "%s: %s", what, why);
	return ret;
}

int
topology_load_machine(struct topology **out, char *err, size_t errlen)
{
	hwloc_topology_t hw;
	int ret;

	if (out == NULL) {
		util_errf(err, errlen, "topology_load_machine: no output pointer");
		return -EINVAL;
	}
	*out = NULL;
	ret = topo_hwloc_init(&hw, err, errlen);
	if (ret < 0)
		return ret;
	ret = topo_hwloc_finish(hw, "this machine", out, err, errlen);
	hwloc_topology_destroy(hw);
	return ret;
}

int
topology_load_synthetic(const char *desc, struct topology **out, char *err, size_t errlen)
{
	char what[128];
	hwloc_topology_t hw;
	int ret;

	if (desc == NULL || out == NULL) {
		util_errf(err, errlen, "topology_load_synthetic: missing description or output");
		return -EINVAL;
	}
	*out = NULL;
	ret = topo_hwloc_init(&hw, err, errlen);
	if (ret < 0)
		return ret;
	errno = 0;
	if (hwloc_topology_set_synthetic(hw, desc) < 0) {
		ret = topo_errno();
		util_errf(err, errlen, "bad synthetic topology \"%s\": %s", desc, strerror(-ret));
		goto out;
	}
	snprintf(what, sizeof(what), "synthetic topology \"%.80s\"", desc);
	ret = topo_hwloc_finish(hw, what, out, err, errlen);
out:
	hwloc_topology_destroy(hw);
	return ret;
}

int
topology_load_xml(const char *path, struct topology **out, char *err, size_t errlen)
{
	char what[PATH_MAX + 32];
	hwloc_topology_t hw;
	int ret;

	if (path == NULL || out == NULL) {
		util_errf(err, errlen, "topology_load_xml: missing path or output");
		return -EINVAL;
	}
	*out = NULL;
	ret = topo_hwloc_init(&hw, err, errlen);
	if (ret < 0)
		return ret;
	errno = 0;
	if (hwloc_topology_set_xml(hw, path) < 0) {
		ret = topo_errno();
		util_errf(err, errlen, "%s: cannot use as hwloc XML: %s", path, strerror(-ret));
		goto out;
	}
	snprintf(what, sizeof(what), "hwloc XML file %s", path);
	ret = topo_hwloc_finish(hw, what, out, err, errlen);
out:
	hwloc_topology_destroy(hw);
	return ret;
}

/*
 * hwloc's Linux view only: the "linux" component with the x86 CPUID one left out (it would
 * describe the CPU this process runs on, not the tree under a root), and no cache, I/O or
 * Misc object (vnumad uses none; leaving them out saves a few hundred sysfs reads a load).
 * Packages, cores and groups stay: a NUMA node's cpuset is that of the object it hangs from,
 * and without them every node would hang from the machine and hold every CPU.
 */
static int
topo_linux_configure(hwloc_topology_t hw, char *err, size_t errlen)
{
	errno = 0;
	if (hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86") <
	        0 ||
	    hwloc_topology_set_cache_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
	    hwloc_topology_set_icache_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
	    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_NONE) < 0 ||
	    hwloc_topology_set_type_filter(hw, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE) < 0) {
		int ret = topo_errno();

		util_errf(err, errlen, "cannot configure hwloc: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

/*
 * hwloc reads the tree under root through its HWLOC_FSROOT variable (there is no API for it
 * in hwloc 2), set only around the load and put back as it was.  Only tests give a root: a
 * daemon on a real host loads with root NULL and never touches its environment.
 */
static int
topo_linux_load_at(hwloc_topology_t hw, const char *root)
{
	const char *was = getenv("HWLOC_FSROOT");
	char *saved = was != NULL ? xstrdup(was) : NULL;
	int ret = 0;

	if (root != NULL)
		setenv("HWLOC_FSROOT", root, 1);
	errno = 0;
	if (hwloc_topology_load(hw) < 0)
		ret = topo_errno();
	if (root != NULL && saved != NULL)
		setenv("HWLOC_FSROOT", saved, 1);
	else if (root != NULL)
		unsetenv("HWLOC_FSROOT");
	free(saved);
	return ret;
}

int
topology_load_linux(const char *root, struct topology **out, char *err, size_t errlen)
{
	char what[PATH_MAX + 32], why[256];
	const char *backend;
	hwloc_topology_t hw;
	int ret;

	if (out == NULL) {
		util_errf(err, errlen, "topology_load_linux: no output pointer");
		return -EINVAL;
	}
	*out = NULL;
	if (root != NULL && (root[0] == '\0' || strcmp(root, "/") == 0))
		root = NULL;
	snprintf(what, sizeof(what), "%s%s", root != NULL ? "the tree under " : "this machine",
	         root != NULL ? root : "");
	ret = topo_hwloc_init(&hw, err, errlen);
	if (ret < 0)
		return ret;
	if ((ret = topo_linux_configure(hw, err, errlen)) < 0)
		goto out;
	if ((ret = topo_linux_load_at(hw, root)) < 0) {
		util_errf(err, errlen, "%s: hwloc cannot load it: %s", what, strerror(-ret));
		goto out;
	}
	/*
	 * Without sys/devices/system/cpu the linux component gives up and hwloc falls back to
	 * a component that knows nothing of the tree: refuse that rather than report it.
	 */
	backend = hwloc_obj_get_info_by_name(hwloc_get_root_obj(hw), "Backend");
	if (backend == NULL || strcmp(backend, "Linux") != 0) {
		util_errf(err, errlen,
		          "%s: hwloc's Linux discovery did not run (no sysfs CPU topology?)", what);
		ret = -ENODEV;
		goto out;
	}
	ret = topo_from_hwloc(hw, out, why, sizeof(why));
	if (ret < 0)
		util_errf(err, errlen, "%s: %s", what, why);
out:
	hwloc_topology_destroy(hw);
	return ret;
}

/* ---- a regular host without hwloc ----------------------------------------------------------- */

/* A given matrix must be SLIT-like: 10 on the diagonal, 10..255 elsewhere (may be asymmetric). */
static int
topo_check_distances(int nr_nodes, const int *distance, char *err, size_t errlen)
{
	for (int i = 0; i < nr_nodes; i++) {
		for (int j = 0; j < nr_nodes; j++) {
			int d = distance[i * nr_nodes + j];
			bool ok = i == j ? d == TOPOLOGY_LOCAL
			                 : d >= TOPOLOGY_LOCAL && d <= TOPO_DISTANCE_MAX;

			if (!ok) {
				util_errf(
				    err, errlen,
				    "distance %d -> %d is %d (want %d on the diagonal, %d..%d "
				    "elsewhere)",
				    i, j, d, TOPOLOGY_LOCAL, TOPOLOGY_LOCAL, TOPO_DISTANCE_MAX);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int
topo_check_uniform(int nr_nodes, int cpus_per_node, const int *distance, char *err, size_t errlen)
{
	if (nr_nodes < 1 || nr_nodes > UTIL_MAX_NODES) {
		util_errf(err, errlen, "%d nodes: want 1..%d", nr_nodes, UTIL_MAX_NODES);
		return -EINVAL;
	}
	if (cpus_per_node < 1 || cpus_per_node > TOPO_MAX_CPUS / nr_nodes) {
		util_errf(err, errlen, "%d CPUs per node: want 1..%d for %d nodes", cpus_per_node,
		          TOPO_MAX_CPUS / nr_nodes, nr_nodes);
		return -EINVAL;
	}
	if (distance != NULL)
		return topo_check_distances(nr_nodes, distance, err, errlen);
	return 0;
}

int
topology_new_uniform(int nr_nodes, int cpus_per_node, uint64_t mem_mib_per_node,
                     const int *distance, struct topology **out, char *err, size_t errlen)
{
	struct topology *topo;
	int ret;

	if (out == NULL) {
		util_errf(err, errlen, "topology_new_uniform: no output pointer");
		return -EINVAL;
	}
	*out = NULL;
	ret = topo_check_uniform(nr_nodes, cpus_per_node, distance, err, errlen);
	if (ret < 0)
		return ret;
	topo = topo_alloc(nr_nodes);
	topo->nr_cpus = nr_nodes * cpus_per_node;
	topo->cpu_node = xcalloc((size_t)topo->nr_cpus, sizeof(*topo->cpu_node));
	for (int cpu = 0; cpu < topo->nr_cpus; cpu++)
		topo->cpu_node[cpu] = cpu / cpus_per_node;
	for (int i = 0; i < nr_nodes; i++)
		topo->nodes[i].id = i;
	topo_fill_node_cpus(topo);
	for (int i = 0; i < nr_nodes; i++)
		topo->nodes[i].mem_mib = mem_mib_per_node;
	if (distance != NULL) {
		memcpy(topo->distance, distance,
		       (size_t)nr_nodes * (size_t)nr_nodes * sizeof(*distance));
		topo->has_distances = true;
	}
	*out = topo;
	return 0;
}

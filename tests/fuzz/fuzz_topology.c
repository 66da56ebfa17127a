/*
 * fuzz_topology.c - libFuzzer target for the topology loaders (host/topology.c): an hwloc
 * XML export, written to a file in a private directory.  hwloc parses; the target is vnumad's
 * conversion of whatever hwloc accepts into nodes, CPUs and distances.  (Synthetic
 * descriptions are left out: they come from tests and simulations, not from a machine, and
 * hwloc builds "pack:1000 pu:1000" whole.)
 *
 * A topology that loads has 1..64 nodes with disjoint, ascending CPUs, a cpu_node map that
 * agrees with them, and distances of 10 on the diagonal and 10..255 elsewhere.  Built by
 * `make fuzz` (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/topology/
 * (tests/unit/test_fuzz_replay_host.c).  Returns what topology_load_xml() returned.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/topology.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_topology_run(const uint8_t *data, size_t size);

static void
fuzz_topology_check(const struct topology *t)
{
	int cpus = 0;

	if (t->nr_nodes < 1 || t->nr_nodes > UTIL_MAX_NODES || t->nr_cpus < 0)
		abort();
	for (int i = 0; i < t->nr_nodes; i++) {
		const struct topology_node *n = &t->nodes[i];

		if ((i > 0 && n->id <= t->nodes[i - 1].id) || n->nr_cpus < 0 ||
		    (n->nr_cpus == 0) != (n->cpus == NULL))
			abort();
		for (int k = 0; k < n->nr_cpus; k++)
			if (n->cpus[k] < 0 || n->cpus[k] >= t->nr_cpus ||
			    (k > 0 && n->cpus[k] <= n->cpus[k - 1]) || t->cpu_node[n->cpus[k]] != i)
				abort(); /* ascending, and each CPU in the node cpu_node says */
		cpus += n->nr_cpus;
		for (int j = 0; j < t->nr_nodes; j++) {
			int d = topology_distance(t, i, j);

			if (i == j ? d != TOPOLOGY_LOCAL : d < TOPOLOGY_LOCAL || d > 255)
				abort();
		}
	}
	for (int c = 0; c < t->nr_cpus; c++)
		if (t->cpu_node[c] < -1 || t->cpu_node[c] >= t->nr_nodes)
			abort();
	if (cpus > t->nr_cpus)
		abort(); /* no CPU in two nodes */
}

static void
fuzz_topology_result(int ret, struct topology *t, const char *err, size_t errlen)
{
	if (ret > 0 || (ret == 0) != (t != NULL) ||
	    (ret < 0 && (!fuzz_msg_ok(err, errlen) || err[0] == '\0')))
		abort(); /* a refusal says why */
	if (t != NULL)
		fuzz_topology_check(t);
	topology_free(t);
}

int
fuzz_topology_run(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_dir_reset();
	char path[FUZZ_PATH_MAX + 16], err[512];
	struct topology *t = NULL;
	int ret;

	snprintf(path, sizeof(path), "%s/topology.xml", dir);
	if (fuzz_file_write(dir, "topology.xml", data, size, false) < 0)
		abort();
	memset(err, 'x', sizeof(err));
	ret = topology_load_xml(path, &t, err, sizeof(err));
	fuzz_topology_result(ret, t, err, sizeof(err));
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_topology_run(data, size);
	return 0;
}
#endif

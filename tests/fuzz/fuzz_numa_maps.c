/*
 * fuzz_numa_maps.c - libFuzzer target for the /proc/<pid>/numa_maps parser
 * (host/linux/numa_maps.c).
 *
 * Built and run by `make fuzz` (docs/fuzzing.md; `make fuzz FUZZ_TARGETS=numa_maps`).
 *
 * Add any crash or interesting input it finds to tests/fuzz/corpus/numa_maps/ (name it
 * "ok-*", "einval-*" or "efbig-*" to pin the result); the gcc build replays that directory in
 * every ctest run (tests/unit/test_fuzz_replay_linux.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "host/linux/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What every successful parse must satisfy; abort() so the fuzzer reports it. */
static void
fuzz_numa_maps_check(const struct linux_numa_maps *m)
{
	uint64_t sum = 0;
	size_t entries = 0;

	if (m->nr_node_bytes > LINUX_MAX_NODES || m->nr_maps > LINUX_NUMA_MAPS_MAX_MAPS)
		abort();
	for (int n = 0; n < m->nr_node_bytes; n++)
		sum += m->node_bytes[n];
	if (sum != m->total_bytes)
		abort();
	for (size_t i = 0; i < m->nr_maps; i++) {
		const struct linux_numa_map *map = &m->maps[i];

		if (map->node_first != entries ||
		    map->policy_first + (size_t)map->nr_policy_nodes > m->nr_policy_nodes)
			abort();
		for (int k = 0; k < map->nr_nodes; k++)
			if (m->node_pages[entries + (size_t)k].node >= m->nr_node_bytes)
				abort();
		entries += (size_t)map->nr_nodes;
	}
	if (entries != m->nr_node_pages)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct linux_numa_maps m;
	int ret = linux_numa_maps_parse((const char *)data, size, &m);

	if (ret != 0 && ret != -EINVAL && ret != -EFBIG)
		abort();
	if (ret == 0)
		fuzz_numa_maps_check(&m);
	else if (m.nr_maps != 0 || m.maps != NULL)
		abort(); /* a failed parse leaves nothing behind */
	linux_numa_maps_free(&m);
	return 0;
}

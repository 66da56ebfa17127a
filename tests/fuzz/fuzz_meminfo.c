/*
 * fuzz_meminfo.c - libFuzzer target for node<N>/meminfo (host/linux/sysfs.c, parsed as node
 * 0); the other sysfs and small /proc parsers (cpulist/online id lists,
 * /proc/vmstat, kernel.numa_balancing) and cgroup v2's memory.numa_stat (host/linux/cgroup.c)
 * ride along on the same input.
 *
 * Built and run by `make fuzz` (docs/fuzzing.md; `make fuzz FUZZ_TARGETS=meminfo`).
 *
 * Add any crash or interesting input it finds to tests/fuzz/corpus/meminfo/ (name it "ok-*",
 * "einval-*" or "efbig-*" to pin the meminfo parser's result); the gcc build replays that
 * directory in every ctest run (tests/unit/test_fuzz_replay_linux.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "host/linux/cgroup.h"
#include "host/linux/procfs.h"
#include "host/linux/sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_meminfo_known(int ret)
{
	return ret == 0 || ret == -EINVAL || ret == -EFBIG;
}

static void
fuzz_meminfo_lists(const char *text, size_t size)
{
	int *ids, nr, ret = linux_idlist_parse(text, size, LINUX_MAX_CPUS, &ids, &nr);

	if (!fuzz_meminfo_known(ret) || (ret < 0 && (ids != NULL || nr != 0)))
		abort();
	for (int i = 0; i < nr; i++)
		if (ids[i] < 0 || ids[i] >= LINUX_MAX_CPUS || (i > 0 && ids[i] <= ids[i - 1]))
			abort();
	free(ids);
}

/* memory.numa_stat: 0 or -EINVAL, and never a node past LINUX_CGROUP_MAX_NODES. */
static void
fuzz_meminfo_numa_stat(const char *text, size_t size)
{
	struct linux_cgroup_numa *cg = malloc(sizeof(*cg));
	int ret = linux_cgroup_numa_stat_parse(text, size, cg);

	if ((ret != 0 && ret != -EINVAL) || cg->nr_nodes < 0 ||
	    cg->nr_nodes > LINUX_CGROUP_MAX_NODES)
		abort();
	free(cg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct linux_meminfo mem;
	struct linux_vmstat vm;
	int ret = linux_meminfo_parse(text, size, 0, &mem), mode;

	if (!fuzz_meminfo_known(ret) || (ret == 0 && mem.mem_free_kib > mem.mem_total_kib))
		abort();
	fuzz_meminfo_lists(text, size);
	if (!fuzz_meminfo_known(linux_vmstat_parse(text, size, &vm)))
		abort();
	ret = linux_numa_balancing_parse(text, size, &mode);
	if (!fuzz_meminfo_known(ret) || mode < 0 || mode > 3)
		abort();
	fuzz_meminfo_numa_stat(text, size);
	return 0;
}

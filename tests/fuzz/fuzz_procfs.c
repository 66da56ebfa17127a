/*
 * fuzz_procfs.c - libFuzzer target for the /proc readers that take a root directory
 * (host/linux/procfs.c: vmstat, numa_balancing, a thread's stat, status and comm, a process's
 * cmdline; sched.c, numa_maps.c, maps.c, and ram_layout.c's mapping order).
 *
 * The input is written as every one of those files under an emptied private directory, and
 * each reader must return what its pure parser returns on the same bytes (fuzz_sched,
 * fuzz_numa_maps and fuzz_meminfo fuzz the parsers themselves).  Built by `make fuzz`
 * (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/procfs/
 * (tests/unit/test_fuzz_replay_host.c).  Returns what linux_task_stat_read() returned.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/procfs.h"
#include "host/linux/ram_layout.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_PROCFS_PID 100
#define FUZZ_PROCFS_TID 101

int fuzz_procfs_run(const uint8_t *data, size_t size);

static const char *const fuzz_procfs_files[] = {
    "proc/vmstat",
    "proc/sys/kernel/numa_balancing",
    "proc/sys/vm/legacy_va_layout",
    "proc/100/cmdline",
    "proc/100/numa_maps",
    "proc/100/maps",
    "proc/100/personality",
    "proc/100/task/101/stat",
    "proc/100/task/101/status",
    "proc/100/task/101/comm",
    "proc/100/task/101/sched",
};

static void
fuzz_procfs_task(const char *root, const char *text, size_t size)
{
	struct linux_task_status st_r = {0}, st_p = {0};
	struct linux_sched sc_r = {0}, sc_p = {0};
	char comm_r[LINUX_COMM_MAX], comm_p[LINUX_COMM_MAX];
	int r, p;

	r = linux_task_status_read(root, FUZZ_PROCFS_PID, FUZZ_PROCFS_TID, &st_r);
	p = linux_task_status_parse(text, size, &st_p);
	if (r != p || (r == 0 && (st_r.tgid != st_p.tgid || st_r.pid != st_p.pid ||
	                          st_r.nr_cpus_allowed != st_p.nr_cpus_allowed ||
	                          st_r.nr_mems_allowed != st_p.nr_mems_allowed)))
		abort();
	linux_task_status_free(&st_r);
	linux_task_status_free(&st_p);
	r = linux_comm_read(root, FUZZ_PROCFS_PID, FUZZ_PROCFS_TID, comm_r);
	p = linux_comm_parse(text, size, comm_p);
	if (r != p || strcmp(comm_r, comm_p) != 0)
		abort();
	r = linux_sched_read(root, FUZZ_PROCFS_PID, FUZZ_PROCFS_TID, &sc_r);
	p = linux_sched_parse(text, size, &sc_p);
	if (r != p || (r == 0 && (sc_r.sum_exec_runtime_ns != sc_p.sum_exec_runtime_ns ||
	                          sc_r.nr_faults != sc_p.nr_faults ||
	                          sc_r.numa_preferred_nid != sc_p.numa_preferred_nid)))
		abort();
	linux_sched_free(&sc_r);
	linux_sched_free(&sc_p);
}

static void
fuzz_procfs_process(const char *root, const char *text, size_t size)
{
	struct linux_cmdline cl_r = {0}, cl_p = {0};
	struct linux_numa_maps nm_r = {0}, nm_p = {0};
	struct linux_vmas vm_r = {0}, vm_p = {0};
	enum linux_mmap_order order;
	int r, p;

	r = linux_cmdline_read(root, FUZZ_PROCFS_PID, &cl_r);
	p = linux_cmdline_parse(text, size, &cl_p);
	if (r != p || cl_r.argc != cl_p.argc)
		abort();
	for (int i = 0; i < cl_r.argc; i++)
		if (strcmp(cl_r.argv[i], cl_p.argv[i]) != 0)
			abort();
	linux_cmdline_free(&cl_r);
	linux_cmdline_free(&cl_p);
	r = linux_numa_maps_read(root, FUZZ_PROCFS_PID, &nm_r);
	p = linux_numa_maps_parse(text, size, &nm_p);
	if (r != p ||
	    (r == 0 && (nm_r.nr_maps != nm_p.nr_maps || nm_r.total_bytes != nm_p.total_bytes)))
		abort();
	linux_numa_maps_free(&nm_r);
	linux_numa_maps_free(&nm_p);
	r = linux_vmas_read(root, FUZZ_PROCFS_PID, &vm_r);
	p = linux_vmas_parse(text, size, &vm_p);
	if (r != p || vm_r.nr != vm_p.nr)
		abort();
	linux_vmas_free(&vm_r);
	linux_vmas_free(&vm_p);
	order = linux_mmap_order_read(root, FUZZ_PROCFS_PID);
	if (order != LINUX_MMAP_TOP_DOWN && order != LINUX_MMAP_BOTTOM_UP &&
	    order != LINUX_MMAP_UNKNOWN)
		abort();
}

int
fuzz_procfs_run(const uint8_t *data, size_t size)
{
	const char *root = fuzz_dir_reset(), *text = (const char *)data;
	struct linux_task_stat ts_r = {0}, ts_p = {0};
	struct linux_vmstat vs_r = {0}, vs_p = {0};
	int mode_r, mode_p, r, p, ret;

	for (size_t i = 0; i < sizeof(fuzz_procfs_files) / sizeof(fuzz_procfs_files[0]); i++)
		if (fuzz_file_write(root, fuzz_procfs_files[i], data, size, false) < 0)
			abort();
	ret = linux_task_stat_read(root, FUZZ_PROCFS_PID, FUZZ_PROCFS_TID, &ts_r);
	p = linux_task_stat_parse(text, size, &ts_p);
	if (ret != p || (ret == 0 && (ts_r.tid != ts_p.tid || strcmp(ts_r.comm, ts_p.comm) != 0 ||
	                              ts_r.utime_ticks != ts_p.utime_ticks ||
	                              ts_r.processor != ts_p.processor)))
		abort();
	r = linux_vmstat_read(root, &vs_r);
	p = linux_vmstat_parse(text, size, &vs_p);
	if (r != p || vs_r.present != vs_p.present || vs_r.numa_hit != vs_p.numa_hit)
		abort();
	r = linux_numa_balancing_read(root, &mode_r);
	p = linux_numa_balancing_parse(text, size, &mode_p);
	if (r != p || mode_r != mode_p || mode_r < 0 || mode_r > 3)
		abort();
	fuzz_procfs_task(root, text, size);
	fuzz_procfs_process(root, text, size);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_procfs_run(data, size);
	return 0;
}
#endif

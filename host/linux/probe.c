/*
 * probe.c - host capabilities and per-VM sampling source (probe.h).
 */
#define _GNU_SOURCE
#include "host/linux/probe.h"

#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "host/fileio.h"
#include "host/linux/procfs.h"

#define DEBUGFS_SCAN_SIZE "/sys/kernel/debug/sched/numa_balancing/scan_size_mb"

/* 1: the thread's sched file has numa_faults lines, 0: it has none, -errno: unreadable. */
static int
sched_has_faults(const char *root, int pid, int tid)
{
	struct linux_sched sched = {0};
	int ret = linux_sched_read(root, pid, tid, &sched);

	if (ret == 0)
		ret = sched.nr_faults > 0;
	linux_sched_free(&sched);
	return ret;
}

static bool
path_exists(const char *root, const char *path)
{
	char full[PATH_MAX];
	bool real = root == NULL || strcmp(root, "/") == 0;

	if (snprintf(full, sizeof(full), "%s%s", real ? "" : root, path) >= (int)sizeof(full))
		return false;
	return access(full, F_OK) == 0;
}

/* Most bytes of /proc/self/status read: a few KiB on any kernel, so this is ample. */
#define PROBE_STATUS_MAX_BYTES (64 * 1024)

/* This process's effective capabilities (CapEff, bit n: capability n) into *eff; 0, -ENOENT when
 * the file says none. */
static int
self_caps_read(unsigned long long *eff)
{
	char *data = NULL;
	const char *line;
	size_t len;
	int ret = fileio_read("/proc/self/status", PROBE_STATUS_MAX_BYTES, &data, &len);

	if (ret < 0)
		return ret;
	line = strstr(data, "\nCapEff:");
	ret = line != NULL && sscanf(line, "\nCapEff: %llx", eff) == 1 ? 0 : -ENOENT;
	free(data);
	return ret;
}

int
linux_host_probe(const char *root, int pid, int tid, struct linux_host_caps *out)
{
	unsigned long long eff;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = linux_numa_balancing_read(root, &out->numa_balancing);
	if (ret == -ENOENT)
		out->numa_balancing = -1;
	else if (ret < 0)
		return ret;
	out->balancing_on =
	    out->numa_balancing > 0 && (out->numa_balancing & LINUX_NUMA_BALANCING_NORMAL);
	if (pid <= 0) {
		pid = (int)getpid();
		tid = (int)syscall(SYS_gettid);
	}
	out->sched_numa_faults = sched_has_faults(root, pid, tid) > 0;
	out->debugfs_scan = path_exists(root, DEBUGFS_SCAN_SIZE);
	out->sys_nice = out->sys_ptrace = -1;
	if ((root == NULL || strcmp(root, "/") == 0) && self_caps_read(&eff) == 0) {
		out->sys_nice = (eff >> CAP_SYS_NICE) & 1;
		out->sys_ptrace = (eff >> CAP_SYS_PTRACE) & 1;
	}
	return 0;
}

const char *
linux_sampling_source_name(enum linux_sampling_source source)
{
	return source == LINUX_SAMPLING_FAULT_STATS ? "fault-stats" : "placement-only";
}

/* True unless every vCPU thread that is still there lacks numa_faults lines. */
static bool
vm_has_fault_lines(const char *root, const struct linux_vm *vm)
{
	for (int i = 0; i < vm->nr_vcpus; i++)
		if (sched_has_faults(root, vm->pid, vm->vcpus[i].tid) > 0)
			return true;
	return false;
}

void
linux_vm_probe(const char *root, const struct linux_host_caps *caps, const struct linux_vm *vm,
               struct linux_vm_sampling *out)
{
	out->source = LINUX_SAMPLING_PLACEMENT_ONLY;
	out->reason[0] = '\0';
	if (!caps->balancing_on)
		snprintf(out->reason, sizeof(out->reason), "kernel.numa_balancing is %d",
		         caps->numa_balancing);
	else if (vm->ram_huge)
		snprintf(out->reason, sizeof(out->reason), "guest RAM is hugetlbfs-backed");
	else if (vm->ram_bound)
		snprintf(out->reason, sizeof(out->reason),
		         "guest RAM has mbind policy %s without the balancing flag",
		         vm->ram_policy);
	else if (vm->nr_vcpus == 0)
		snprintf(out->reason, sizeof(out->reason), "no vCPU threads found");
	else if (!vm_has_fault_lines(root, vm))
		snprintf(out->reason, sizeof(out->reason),
		         "no numa_faults lines in the vCPU threads' sched files");
	else
		out->source = LINUX_SAMPLING_FAULT_STATS;
}

/*
 * probe.h - what the kernel can tell vnumad about each VM's memory accesses.
 *
 * Host-wide: whether automatic NUMA balancing runs (kernel.numa_balancing bit 1), whether
 * sched files carry numa_faults lines (CONFIG_SCHED_DEBUG before 6.15) and whether the
 * debugfs scan tunables are there, and whether this process holds the capabilities its
 * levers need for other users' QEMUs (for `vnumactl status`, linux_host_levers.c).  Per VM:
 * "fault-stats" when the kernel samples its guest RAM with hinting faults, else "placement-only"
 * with the reason.  The kernel does not scan hugetlbfs mappings, nor mappings with an explicit
 * mbind policy lacking MPOL_F_NUMA_BALANCING (numa_maps shows any policy other than "default";
 * "=balancing" marks the flag).
 */
#ifndef VNUMAD_HOST_LINUX_PROBE_H
#define VNUMAD_HOST_LINUX_PROBE_H

#include <stdbool.h>

#include "host/linux/discover.h"

struct linux_host_caps {
	int numa_balancing;     /* sysctl value; -1 when the kernel has none */
	bool balancing_on;      /* bit LINUX_NUMA_BALANCING_NORMAL is set */
	bool sched_numa_faults; /* sched files print numa_faults lines */
	bool debugfs_scan;      /* /sys/kernel/debug/sched/numa_balancing/scan_size_mb exists */
	/*
	 * Whether this process has CAP_SYS_NICE (sched_setaffinity of other users' threads) and
	 * CAP_SYS_PTRACE (move_pages and the reads of other users' processes), from its CapEff:
	 * 1 or 0; -1 under a root other than "/" (a tree's processes are not acted on) or when
	 * /proc/self/status does not say.
	 */
	int sys_nice, sys_ptrace;
};

/*
 * Probe the host under root (NULL or "/" = this machine).  The sched check reads thread tid
 * of process pid (pid <= 0: the calling thread; the kernel prints numa_faults lines for every
 * task, so any thread will do).  Returns 0 or -errno when numa_balancing is unreadable for a
 * reason other than absence.
 */
int linux_host_probe(const char *root, int pid, int tid, struct linux_host_caps *out);

enum linux_sampling_source {
	LINUX_SAMPLING_FAULT_STATS,
	LINUX_SAMPLING_PLACEMENT_ONLY,
};

struct linux_vm_sampling {
	enum linux_sampling_source source;
	char reason[128]; /* empty for fault-stats */
};

/* "fault-stats" or "placement-only". */
const char *linux_sampling_source_name(enum linux_sampling_source source);

/*
 * Decide a VM's sampling source.  Reasons, in this order: balancing off, hugetlbfs RAM,
 * mbind-bound RAM, no numa_faults lines in its vCPU threads' sched files (read under root;
 * threads that vanished are ignored).
 */
void linux_vm_probe(const char *root, const struct linux_host_caps *caps, const struct linux_vm *vm,
                    struct linux_vm_sampling *out);

#endif

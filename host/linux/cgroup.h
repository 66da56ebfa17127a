/*
 * cgroup.h - a process's cgroup v2 memory counters per node (memory.numa_stat), for the
 * residency estimate (residency.h).
 *
 * Where: the "0::/path" line of <root>/proc/PID/cgroup names the process's cgroup in the
 * unified (v2) hierarchy, mounted at <root>/sys/fs/cgroup (cgroup2 only) or, on a hybrid
 * host, <root>/sys/fs/cgroup/unified (a mount that holds cgroup.controllers is the v2 one).
 * The path is used as the kernel prints it: systemd's unit escapes ("\x2d" for a '-' inside a
 * libvirt domain's name, machine.slice/machine-qemu\x2d1\x2dweb.scope) are literal characters
 * of the directory's name, not to be decoded.  libvirt may put QEMU's threads into threaded
 * children (.../libvirt/emulator, .../libvirt/vcpu0) that carry no memory files: the counters
 * are those of the nearest cgroup at or above the process's one that has memory.numa_stat.
 *
 * What: memory.numa_stat (Documentation/admin-guide/cgroup-v2.rst) prints one line per item,
 * "anon N0=<bytes> N1=<bytes> ...", in bytes, for the whole cgroup and its descendants.  We
 * keep "anon" (private anonymous memory, transparent huge pages included) and "shmem" (shared
 * anonymous memory: memfd and share=on backends).  hugetlbfs pages are in neither.
 *
 * Errors: 0 or -errno; -ENOENT when a file is not there (no cgroup v2, a process gone).
 */
#ifndef VNUMAD_HOST_LINUX_CGROUP_H
#define VNUMAD_HOST_LINUX_CGROUP_H

#include <stddef.h>
#include <stdint.h>

/* Node ids we keep counters for (the migrator's node masks have 64 bits too). */
#define LINUX_CGROUP_MAX_NODES 64
/* Room for a cgroup directory's path under root, with its NUL. */
#define LINUX_CGROUP_PATH_MAX 1024
/*
 * Levels of child cgroups searched for other processes by linux_cgroup_alone: 4 covers
 * libvirt's scope/libvirt/{emulator,vcpuN,iothreadN}; deeper ones count as "not alone".
 */
#define LINUX_CGROUP_DEPTH_MAX 4

/* memory.numa_stat's anon and shmem lines, bytes per OS node id. */
struct linux_cgroup_numa {
	int nr_nodes; /* highest node id seen + 1 */
	uint64_t anon_bytes[LINUX_CGROUP_MAX_NODES];
	uint64_t shmem_bytes[LINUX_CGROUP_MAX_NODES];
	uint64_t anon_thp_bytes[LINUX_CGROUP_MAX_NODES]; /* of anon, in transparent huge pages */
};

/*
 * The directory (under root, e.g. "/sys/fs/cgroup/machine.slice/machine-qemu\x2d1\x2dweb.scope")
 * whose memory.numa_stat counts pid's memory, into dir.  -ENOENT when pid has no v2 cgroup,
 * no v2 hierarchy is mounted, or no cgroup up to the hierarchy's root has memory.numa_stat
 * (the root cgroup has none).
 */
int linux_cgroup_memory_dir(const char *root, int pid, char *dir, size_t len);

/* Parse memory.numa_stat text; a node id >= LINUX_CGROUP_MAX_NODES or a bad number: -EINVAL. */
int linux_cgroup_numa_stat_parse(const char *text, size_t len, struct linux_cgroup_numa *out);
/* Read and parse <root><dir>/memory.numa_stat. */
int linux_cgroup_numa_stat_read(const char *root, const char *dir, struct linux_cgroup_numa *out);

/*
 * 1 when pid is the only process in <root><dir> and its children (cgroup.procs, down to
 * LINUX_CGROUP_DEPTH_MAX levels; a threaded child whose cgroup.procs cannot be read is
 * passed over), 0 when another process is there, -errno when dir's own list cannot be read.
 */
int linux_cgroup_alone(const char *root, const char *dir, int pid);

#endif

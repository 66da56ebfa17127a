/*
 * snapshot.h - a struct snapshot (policy/model.h) from a Linux host's /proc and /sys.
 *
 * What one call cannot know is left for the backend that calls it repeatedly (linux_host.c):
 * cpu_use (needs two samples of a thread's utime+stime: linux_cpu_use()), uptime_s, now_s
 * and the migration feedback are 0.
 */
#ifndef VNUMAD_HOST_LINUX_SNAPSHOT_H
#define VNUMAD_HOST_LINUX_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "host/linux/discover.h"
#include "host/linux/procfs.h"
#include "host/linux/sysfs.h"
#include "policy/model.h"

/*
 * Build a snapshot under root (NULL or "/" = this machine):
 * - nodes from sysfs (ids, online CPUs, MemTotal/MemFree, distances);
 * - one VM per QEMU process with at least one vCPU thread (discover.h), id = pid, default
 *   policy, mem_mib from -m or numa_maps, resident_mib per node from its guest RAM mappings;
 * - per vCPU: tid, cpu = stat's processor, node = that CPU's node (or, when the thread's
 *   affinity no longer allows that CPU, the first node it allows), faults_private/shared =
 *   sched's task_private/task_shared per node;
 * - cells: the guest's vNUMA cells from the QEMU command line (discover.h), as MiB ranges of
 *   guest RAM (start and end rounded down to whole MiB), and vcpu_cell by each vCPU's own index;
 * - allowed_nodes: the nodes that have CPUs, all of which are in the thread's
 *   Cpus_allowed_list.  If none qualifies (a mask cutting through every node), the nodes with
 *   at least one allowed CPU; if still none, NODEMASK_ALL.
 * Vanished processes and threads are dropped; a VM with a malformed file is skipped.
 * Returns 0 or -errno when the nodes cannot be read.
 */
int linux_snapshot_build(const char *root, struct snapshot **out);

/*
 * One vCPU thread as read, and one VM's vCPU threads: what a backend keeps to assemble a VM it
 * did not read this round (linux_vm.carried; linux_vm.kept points to it).
 */
struct linux_vcpu_obs {
	int tid;
	int index; /* n of "CPU n/KVM" */
	int cpu;
	bool cpu_allowed; /* cpu is in its affinity mask now */
	uint64_t allowed_nodes;
	uint64_t ticks, start_ticks;
	uint64_t vm_pin_kib; /* the process's pinned memory (VmPin), as this thread's status says */
	struct linux_sched sched;
};
struct linux_vm_obs {
	int nr_vcpus;
	struct linux_vcpu_obs *vcpus; /* owned */
};
void linux_vm_obs_free(struct linux_vm_obs *o);

/*
 * What a backend needs besides the snapshot, for the VMs it kept (those with vCPU threads):
 * which discovered VM each one is, which were left out and why, and per vCPU (in vcpu_store order)
 * its CPU time so far (utime + stime) and its start time, both in clock ticks.
 */
struct linux_snap_aux {
	size_t *vm_of;
	uint64_t *vcpu_ticks;
	uint64_t *vcpu_start_ticks;
	/* Per snapshot VM whose reading the owner keeps none of yet (kept NULL): it, to take. */
	struct linux_vm_obs *obs;
	int nr_obs;
	int skipped;           /* VMs left out because a thread's file was malformed */
	char skip_reason[160]; /* the last such, e.g. "pid 5: task 7 sched: Invalid argument" */
};

/*
 * The snapshot part of linux_snapshot_build for nodes and VMs the caller read already; aux
 * (may be NULL) is filled for the caller to free with linux_snap_aux_free.  A VM with kept
 * set has its new reading stored there (the old one freed), or, when carried, is assembled
 * from it without reading anything.  Always 0.
 */
int linux_snapshot_assemble(const char *root, const struct linux_nodes *nodes,
                            const struct linux_vm *vms, size_t nr_vms, struct snapshot **out,
                            struct linux_snap_aux *aux);
void linux_snap_aux_free(struct linux_snap_aux *aux);

/*
 * CPUs used between two samples of a thread's utime+stime (clock ticks at hz per second),
 * dt_s seconds apart, clamped to 0..1; 0 when dt_s <= 0, hz <= 0 or the counter went back.
 */
double linux_cpu_use(uint64_t prev_ticks, uint64_t now_ticks, double dt_s, long hz);

#endif

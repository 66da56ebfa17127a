/*
 * engine.h - what the daemon may ask vnumad's engine besides decide(): set its tunables,
 * report on a VM (for list, vminfo, explain), and advise where a new VM would go (place).
 * The state pointer is the one vnumad_balancer_ops.create() returned.
 */
#ifndef VNUMAD_POLICY_ENGINE_H
#define VNUMAD_POLICY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/model.h"

struct engine_vm_report {
	bool placed;   /* has a home */
	bool spanning; /* a group spans nodes */
	uint64_t home; /* union of its groups' home nodes */
	int nr_groups;
	int strength;       /* VM convergence strength 1..1024 (0: too few faults) */
	int conv_node;      /* -1 when not judged */
	int local_permille; /* faults on the faulting vCPU's node */
	double scan_mib_s;  /* sampling intensity asked for (or wanted, see levers_wanted) */
	/* HOST_CAP_* levers its plan wanted that the host lacks: binds, its own scan rate. */
	unsigned levers_wanted;
	double scan_pass_s;
	double fault_pages; /* smoothed fault level */
	/*
	 * Adverse guest (policy/engine_chase.c): not chased for adverse_left_s more seconds
	 * (0: chased as usual); the last verdict's wasted of judged fault-following vCPU moves;
	 * verdicts that found it adverse, in all.
	 */
	double adverse_left_s;
	unsigned chase_wasted, chase_judged;
	unsigned adverse_times;
};

/*
 * The home nodes of the group that holds guest cell `cell` of the VM: the cell's own group
 * (placement='cells'), else the VM's one group.  0 when the engine does not know it.
 */
uint64_t engine_report_cell_home(void *state, int vm_id, int cell);

/* The engine's own counters, since create(). */
struct engine_counters {
	/*
	 * VMs left out of a round because their snapshot named a node the host does not have
	 * (policy nodes, host nodes, a vCPU's node or allowed nodes; policy/engine_validate.c),
	 * one per VM and round.  The daemon replaces such policies first, so this stays 0 unless
	 * a host backend hands over something inconsistent.
	 */
	uint64_t vms_rejected;
	/*
	 * The host-wide migration rate limit at work: rounds whose budget (rate x time since the
	 * previous round) was used up, and VMs with memory off their home that a round left
	 * unplanned because it was (one per VM and round).
	 */
	uint64_t rate_limited_rounds;
	uint64_t rate_deferred_vms;
};

void engine_report_counters(void *state, struct engine_counters *c);

/*
 * The memory the engine keeps free on a node (ENGINE_HEADROOM_PERMILLE of it): no move and no
 * home choice fills a node past it.
 */
int64_t engine_headroom_mib(const struct snap_node *sn);
/*
 * Share of a VM's memory, per mille, that must be pinned (snap_vm.pinned_mib) for the engine to
 * move none of its memory.  Default 500: an assigned device (VFIO) pins all of guest RAM, and
 * moving the unpinned rest would split the VM across nodes while the bulk stays; a few
 * registered io_uring buffers pin a little, and the rest of such a VM moves as usual (the
 * pinned pages fail and count in pages_migrate_failed, with the engine's back-off).
 */
#define ENGINE_PINNED_PERMILLE 500
/* The VM's memory is pinned (ENGINE_PINNED_PERMILLE): vCPUs follow it, it never moves. */
bool engine_vm_mem_pinned(const struct snap_vm *vm);

/* New tunables (values <= 0 keep the current one). */
void engine_configure(void *state, double rate_mib_s, double rebalance_period_s);
/* 0, or -ENOENT when the engine does not know the VM. */
int engine_report_vm(void *state, int vm_id, struct engine_vm_report *r);
/*
 * Where a new VM of vcpus vCPUs and mem_mib MiB (nr_cells guest cells, 0 = none) would go now;
 * nothing is reserved.  *nodes gets the node set; cell_nodes[i] (when nr_cells > 1) each cell's
 * node.  0, or -ENOSPC when no node set holds it, with the reason in text.
 */
int engine_advise(void *state, const struct snapshot *snap, int vcpus, uint64_t mem_mib,
                  int nr_cells, uint64_t *nodes, uint64_t *cell_nodes, char *text, size_t len);
/*
 * Advice held for a VM about to start (engine_reserve.c): at most ENGINE_RESERVE_MAX at once
 * (the oldest makes room), each for ENGINE_RESERVE_HOLD_S seconds of host time unless a VM of
 * its shape appears first.  60 s: libvirt starts a domain within seconds of asking (about
 * 16 s under nested TCG), and a hold that outlives a domain that never started only makes the
 * node look fuller for that long.
 */
#define ENGINE_RESERVE_MAX    64
#define ENGINE_RESERVE_HOLD_S 60.0

/*
 * Hold an advice for a VM about to start (`vnumactl place --reserve`, libvirt's numad shim):
 * the VM counts on nodes from now_s (host time) until a VM of vcpus vCPUs and mem_mib MiB
 * appears or ENGINE_RESERVE_HOLD_S pass (policy/engine_reserve.c).  0 or -EINVAL.
 */
int engine_reserve(void *state, double now_s, uint64_t nodes, int vcpus, uint64_t mem_mib);
/* Reservations held now. */
int engine_reserve_count(void *state);

#endif

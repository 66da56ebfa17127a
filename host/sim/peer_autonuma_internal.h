/*
 * peer_autonuma_internal.h - what the two halves of the autonuma peer share: the state kept
 * between calls, one call's working data, and the weights.  peer_autonuma.c follows the scanner,
 * the faults, the preferred nodes and the scan period; peer_autonuma_migrate.c moves and swaps
 * tasks (task_numa_migrate).  Nothing here is for other modules.
 */
#ifndef VNUMAD_HOST_SIM_PEER_AUTONUMA_INTERNAL_H
#define VNUMAD_HOST_SIM_PEER_AUTONUMA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/sim/peers.h"

/* ---- state kept between calls ------------------------------------------------------------- */

struct autonuma_vcpu {
	uint64_t *prev;       /* counters at the previous call: private[nr_nodes], shared[...] */
	int preferred;        /* numa_preferred_nid; -1 = NUMA_NO_NODE */
	uint64_t pass_faults; /* new faults since the last placement */
	bool faulted;         /* new faults since the previous call */
};

/* One VM = one numa_group.  Scan state is kept per VM, not per task (documented). */
struct autonuma_vm {
	int id;
	int nr_vcpus;
	int nr_nodes;
	bool seen;
	double last_s;      /* snapshot time of the previous call */
	double scanned_mib; /* scanner progress into the current pass */
	double rate_mib_s;  /* scan rate in effect since last_s */
	unsigned period_ms; /* numa_scan_period: time per scan window */
	/* This period's numa_faults_locality[] and fault_types[], summed over the VM. */
	uint64_t local, remote, priv, shared;
	uint64_t failed_mib; /* numa_faults_locality[2]: migrations that failed */
	double *faults_cpu;  /* per node: decayed CPU use of the faulting vCPUs running there */
	uint64_t active_mask;
	int nr_active; /* numa_group->active_nodes */
	struct autonuma_vcpu *vcpus;
	uint64_t *prev_store;
};

struct autonuma_state {
	struct autonuma_vm **vms;
	size_t nr_vms, cap_vms;
};

/* ---- one call ----------------------------------------------------------------------------- */

struct autonuma_task {
	int vm;   /* snapshot VM index */
	int vcpu; /* vCPU index in that VM */
	int node; /* current node; updated as this call plans moves */
	uint64_t allowed;
	double load; /* cpu_use, standing for task_h_load() */
	bool busy;   /* moved or swapped this call (rq->numa_migrate_on) */
};

/* A VM's numa_group faults, from the snapshot's decayed counters. */
struct autonuma_group {
	uint64_t *faults; /* per node, private + shared */
	uint64_t total, priv, shared;
};

struct autonuma_round {
	const struct snapshot *snap;
	struct plan *plan;
	struct autonuma_vm **vmst; /* per snapshot VM: its state */
	struct autonuma_task *tasks;
	int nr_tasks;
	struct autonuma_group *groups; /* per snapshot VM */
	uint64_t *group_store;
	double *node_load; /* per node: sum of cpu_use */
};

/* ---- shared functions --------------------------------------------------------------------- */

/* peer_autonuma.c: task t's vCPU state, and task and group weights (per mille) of node nid. */
struct autonuma_vcpu *autonuma_task_state(const struct autonuma_round *rd, int t);
long autonuma_task_weight(const struct autonuma_round *rd, int t, int nid);
long autonuma_group_weight(const struct autonuma_round *rd, int vm, int nid);

/* peer_autonuma_migrate.c: numa_migrate_preferred() for task t. */
void autonuma_task_consider(struct autonuma_round *rd, int t);

#endif

/*
 * sim_internal.h - the simulator's private state, shared by sim.c (the loop and the snapshot),
 * sim_mem.c (guest memory, allocation, migration, sampling) and sim_sched.c (CPU scheduling).
 *
 * Ground truth lives here and never leaves through a snapshot.
 */
#ifndef VNUMAD_HOST_SIM_SIM_INTERNAL_H
#define VNUMAD_HOST_SIM_SIM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "host/linux/residency.h"
#include "host/sim/sim.h"
#include "host/topology.h"

#define SIM_NO_NODE 0xff /* region_node of an unallocated region */

/*
 * Kernel migrate-on-fault refuses a destination that would drop below its high watermark
 * (migrate_balanced_pgdat); the high watermark is a few times the min watermark.
 */
#define SIM_KERNEL_WMARK_HIGH_MIB (3 * SIM_MIN_FREE_MIB)

struct sim_vcpu {
	int node;          /* node index it runs on */
	uint64_t allowed;  /* affinity as a node mask */
	int preferred;     /* kernel NUMA preferred node (autonuma model), or -1 */
	int slice;         /* slice it mostly touches now */
	double share;      /* CPU share on the last tick */
	double rate;       /* work rate on the last tick (work units per second) */
	double cpu_acc_s;  /* CPU time used in the current sample second */
	double cpu_use;    /* CPU use over the last full second */
	double cost_acc_s; /* sampling CPU cost charged, to be taken from the next tick's work */
	uint64_t *faults;  /* 2 * nr_nodes: private then shared (kernel-style, decayed) */
	/* Faults taken since the last fold (profiles with HOST_CAP_FAULTS_PER_PASS). */
	uint64_t *faults_buf;
	uint32_t node_changes; /* node changes caused by balancer actions */
};

struct sim_bind {
	uint32_t first_region, end_region;
	uint64_t nodes;
};

struct sim_vm {
	const struct scn_vm *scn;
	int id; /* stable id shown in snapshots */
	int tid_base;
	bool running, finished;
	bool touched; /* its guest has first-touched its memory */
	double util;
	double start_s; /* actual arrival time */
	int nr_vcpus;
	struct sim_vcpu *vcpus;
	uint32_t nr_regions;
	uint8_t *region_node;       /* node index or SIM_NO_NODE */
	uint8_t *region_last_node;  /* node of the previous hinting fault, or SIM_NO_NODE */
	uint16_t *region_last_vcpu; /* vCPU of the previous hinting fault + 1, or 0 */
	uint16_t *region_slice;
	int nr_slices;
	uint32_t *slice_regions; /* per slice: its size in regions */
	uint32_t *slice_cnt;     /* nr_slices x nr_nodes: allocated regions */
	uint32_t *node_cnt;      /* nr_nodes: allocated regions */
	uint32_t allocated;
	int *slice_owner;  /* private-like: slice -> vCPU using it */
	int *cell_of_vcpu; /* cells workload: vCPU -> cell */
	int phase;         /* phased/adverse: current phase number */
	struct sim_bind *binds;
	int nr_binds;
	double scan_mib_s;
	double scan_carry; /* fractional regions left to scan */
	uint32_t scan_cursor;
	/* Feedback for the balancer since its last snapshot. */
	uint64_t mig_done_mib, mig_failed_mib;
	/* The kernel's own migrate-on-fault when it runs beside the balancer (its feedback). */
	uint64_t kmig_done_mib, kmig_failed_mib;
	/* Audits for the property tests: MiB of it moved by the balancer / the kernel beside. */
	uint64_t audit_migrated_mib, audit_kernel_migrated_mib;
	/*
	 * The residency a balancer with BALANCER_HOST_RESIDENCY sees (sim_resid.c): the Linux
	 * host's per-VM state, the VM's own PRNG for its samples (never the model's rng), and
	 * the node QEMU's own memory sits on (the libvirt profile's cgroup), -1 until first seen.
	 */
	struct linux_resid resid;
	struct util_rng resid_rng;
	int qemu_node;
};

struct sim_move {
	int vm; /* index into sim.vms */
	uint32_t first_region, end_region, cursor;
	int from, to;
	uint64_t left_mib;
};

struct sim {
	const struct scenario *scn;
	const struct balancer_ops *bal;
	void *bal_state;
	struct topology *topo;
	int nr_nodes;
	struct util_rng rng;
	uint64_t tick;
	double now_s;
	double next_call_s;
	bool started;  /* the balancer runs (scenario balancer_start_s reached) */
	bool external; /* driven by an outside agent (sim_new_external) */
	bool arrived;  /* external: VMs arrived since sim_take_arrivals() */
	int nr_vms;
	struct sim_vm *vms;
	uint64_t *node_used_mib;
	double *node_traffic_mib; /* migration traffic on the current tick */
	double *node_bw_factor;   /* access slowdown from the previous tick's traffic */
	/* Migration engine queue. */
	struct sim_move *moves;
	size_t nr_moves, cap_moves;
	struct plan plan;
	/*
	 * The host profile (sim.h): caps are the levers and sensing this run's balancer has.
	 * When the profile has the kernel's NUMA balancing beside the balancer, kernel is the
	 * autonuma model, run every kernel_next_s with its own plan (task moves of unpinned
	 * vCPUs, the scan rate); its migrate-on-fault is on whenever kernel_numa is.
	 */
	enum sim_profile profile;
	unsigned caps;
	bool kernel_numa; /* migrate-on-fault in the scanner (autonuma, or the kernel beside) */
	/* The balancer sees residency as the profile's real host senses it (sim_resid.c). */
	bool sense_resid;
	struct linux_resid_budget resid_budget; /* the host-wide walk budget */
	const struct balancer_ops *kernel;
	void *kernel_state;
	double kernel_next_s;
	struct plan kplan;
	/* Results. */
	uint64_t binds_refused, samplings_refused;
	double kernel_migrated_mib;
	uint64_t kernel_vcpu_moves;
	double work, acc_local, acc_total;
	double sec_local, sec_total, sec_migrated_mib;
	double migrated_mib, failed_mib, sampling_cpu_s, max_mig_mib_s, max_dest_fill;
	uint64_t dest_nodes_tick; /* nodes the balancer's moves landed on this tick */
	double max_fill;
	uint64_t vcpu_moves, oom, node_overfill, calls;
	uint64_t max_vcpu_node_changes, policy_mode_actions, policy_node_violations;
	double balancer_ns;
	/* Test-only observer (sim_set_observer), called before each balancer call. */
	sim_observer_fn *observer;
	void *observer_arg;
	int nr_samples, cap_samples;
	double *series, *mig_series;
};

/* sim_mem.c */
int sim_vm_memory_init(struct sim *sim, struct sim_vm *vm);
void sim_vm_memory_free(struct sim *sim, struct sim_vm *vm);
void sim_vm_first_touch(struct sim *sim, struct sim_vm *vm);
void sim_vm_release(struct sim *sim, struct sim_vm *vm);
void sim_vm_update_slices(struct sim *sim, struct sim_vm *vm);
void sim_move_enqueue(struct sim *sim, int vm_idx, const struct plan_mem_move *mv);
void sim_migrate_tick(struct sim *sim);
void sim_sample_tick(struct sim *sim, struct sim_vm *vm);
void sim_vm_access_dist(const struct sim *sim, const struct sim_vm *vm, int vcpu, double *p);

/* sim_resid.c */
void sim_resid_vm_init(struct sim *sim, int idx);
/* A balancer's round begins: refill the walk budget. */
void sim_resid_round(struct sim *sim);
/* VM idx's residency into svm: as the balancer's host senses it when sensed, else exact. */
void sim_resid_fill(struct sim *sim, int idx, struct snap_vm *svm, bool sensed);
/*
 * VM idx's per-cell residency into svm's cells (set already), when sensed and the Linux host's
 * estimator has a per-cell figure (residency.h); none otherwise (as the libvirt test driver).
 */
void sim_resid_cells_fill(struct sim *sim, int idx, struct snap_vm *svm, bool sensed);
/*
 * The guest cell whose whole range the regions [first, end) are (a move of that cell's range,
 * as the Linux host tells it), or -1.
 */
int sim_resid_move_cell(const struct sim_vm *vm, uint32_t first, uint32_t end);

/* sim_sched.c */
void sim_sched_place_new(struct sim *sim, struct sim_vm *vm);
void sim_sched_tick(struct sim *sim);
void sim_sched_shares(struct sim *sim);
int sim_sched_least_loaded(struct sim *sim, uint64_t mask);
int sim_vcpu_cpu(const struct sim *sim, int node, int vm_idx, int vcpu);

#endif

/*
 * sim.h - the simulated multi-socket host: a deterministic, time-stepped model of nodes, CPUs,
 * VMs and their memory, with one balancer driving it through snapshots and plans.
 *
 * See docs/simulator.md for the model and every constant.  The balancer only ever sees a
 * struct snapshot (BRIEF section 3); ground truth (which slice of memory a vCPU touches) stays
 * in here.  Same scenario + same balancer + same seed = the same result, bit for bit, except
 * balancer_ms, which is measured wall-clock time.
 */
#ifndef VNUMAD_HOST_SIM_SIM_H
#define VNUMAD_HOST_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/sim/scenario.h"
#include "policy/model.h"

/* Model constants (documented with their reasons in docs/simulator.md). */
#define SIM_TICK_S               0.1     /* time step */
#define SIM_REGION_MIB           2       /* memory granule: one transparent huge page */
#define SIM_LOCAL_SHARE          0.9     /* private/cells: share of accesses to the own slice */
#define SIM_IDLE_UTIL            0.05    /* util of the idle workload */
#define SIM_MIN_FREE_MIB         64      /* per node, kept free: the kernel's min watermark */
#define SIM_MIGRATE_MIB_S        2048.0  /* host-wide move_pages throughput ceiling */
#define SIM_NODE_BW_MIB_S        20480.0 /* memory bandwidth of one node */
#define SIM_FAULT_COST_US        5.0     /* CPU time of one hinting fault (EPT violation + fault) */
#define SIM_SCAN_COST_US_PER_MIB 1.0     /* CPU time to unmap 1 MiB (PTE walk, TLB shootdown) */
#define SIM_WANDER_PER_S                                                                           \
	0.02                    /* NUMA-blind scheduler: chance a floating vCPU wakes              \
	                           on another node with a free CPU, per second */
#define SIM_SAMPLE_PERIOD_S 1.0 /* locality/throughput series resolution */

/*
 * Host profiles: which levers and sensing the simulated host gives a balancer (BRIEF section 3,
 * lever parity; docs/simulator.md "Host profiles").
 *  - linux (the default): what `vnumad --host linux` has on a stock distro kernel: pins and
 *    move_pages; the kernel's NUMA balancing runs beside every balancer but `none` (its
 *    migrate-on-fault, its task placement of unpinned vCPUs, its own adaptive scan rate);
 *    fault counters fold in once per scan pass; no bind before first touch, no per-VM
 *    sampling, so the balancer first hears of a VM after its guest touched its RAM.
 *    vnumad's residency is what that host measures (sim_resid.c): numa_maps walks on its
 *    cadence, else a page sample with its error bound, else the last figure adjusted.
 *  - libvirt: what `vnumad --connect` has; the same levers as linux, residency from the
 *    domain's cgroup between walks.
 *  - ideal: every lever the model has, counters live, exact residency, no kernel beside:
 *    research only.
 * Whatever the profile, the oracle keeps its full power (it is the yardstick), `autonuma` is
 * the kernel itself, and `static` keeps libvirt's bind at domain start (numatune), a lever
 * libvirt has on any host.  The enum is in scenario.h: a scenario run carries its profile.
 */
/* The profile called name; 0, or -EINVAL with the valid names in err. */
int sim_profile_parse(const char *name, enum sim_profile *out, char *err, size_t errlen);
const char *sim_profile_name(enum sim_profile profile);
/* The HOST_CAP_* levers and sensing of a profile (before a balancer's own, sim.c). */
unsigned sim_profile_caps(enum sim_profile profile);

struct sim_result {
	char policy[32];
	enum sim_profile profile;
	unsigned caps; /* HOST_CAP_*: what this balancer had on the simulated host */
	double duration_s;
	double locality;   /* local accesses / all accesses */
	double throughput; /* work units: CPU-seconds at all-local speed */
	double vs_oracle;  /* filled by the caller once the oracle has run; else 0 */
	double converge_s;
	double converge_after_start_s; /* converge_s less the balancer's start (met running) */
	double migrated_gib;
	uint64_t vcpu_moves;  /* re-pinnings that changed a vCPU's node set */
	double max_node_fill; /* peak used/total over nodes and time */
	/* Peak used/total of a node at the end of a tick in which the balancer's moves landed on
	 * it (its moves only; max_node_fill includes where the guests put memory themselves). */
	double max_dest_fill;
	uint64_t oom;       /* 2-MiB allocations no node could satisfy */
	double balancer_ms; /* mean wall-clock ms per decide() call */
	uint64_t balancer_calls;
	double migrate_failed_gib;
	double sampling_cpu_s;    /* CPU time the VMs lost to hinting faults and scanning */
	double max_migrate_mib_s; /* peak migration rate over any 1-s sample */
	uint64_t node_overfill; /* ticks on which any node held more than its memory (must be 0) */
	/* Plan entries the host refused (-EOPNOTSUPP on a real host): levers the profile lacks. */
	uint64_t binds_refused;
	uint64_t samplings_refused;
	/* Of migrated_gib and vcpu_moves: what the kernel's balancing beside the balancer did. */
	double kernel_migrated_gib;
	uint64_t kernel_vcpu_moves;
	/* Audits for the property tests (ground truth, never shown to a balancer). */
	uint64_t max_vcpu_node_changes;  /* most node changes of one vCPU by balancer actions */
	uint64_t policy_mode_actions;    /* actions on VMs whose policy mode is not auto */
	uint64_t policy_node_violations; /* actions reaching outside a VM's allowed nodes */
	/* Per SIM_SAMPLE_PERIOD_S: locality of that second (-1 when nothing ran). */
	int nr_samples;
	double *locality_series;
	double *migrate_mib_series;
};

/* Run one balancer over the whole scenario.  Returns 0 or -errno with a message in err. */
int sim_run(const struct scenario *scn, const struct balancer_ops *bal, struct sim_result *res,
            char *err, size_t errlen);
void sim_result_free(struct sim_result *res);

/*
 * converge_s from a locality series: the first time t after which the 10-s moving locality
 * stays within 5 % (relative) of the mean of the last 60 s.  0 when it always held.
 */
double sim_converge_time(const double *series, int nr, double period_s);

/* ---- step-wise interface, for unit tests of the model ------------------------------- */

struct sim;

struct sim *sim_new(const struct scenario *scn, const struct balancer_ops *bal, char *err,
                    size_t errlen);
void sim_free(struct sim *sim);
/* Advance one tick (runs the balancer when due).  Returns 0 or -errno. */
int sim_step(struct sim *sim);
double sim_now(const struct sim *sim);
/* The HOST_CAP_* of this run, as every snapshot carries them (sim_balancer_caps, sim.c). */
unsigned sim_caps(const struct sim *sim);
/* Build the snapshot the balancer would see now; caller frees with snapshot_free(). */
struct snapshot *sim_snapshot(struct sim *sim);
/* Fill res from the run so far (res->policy etc.); caller frees with sim_result_free(). */
void sim_result_fill(struct sim *sim, struct sim_result *res);

/* Ground truth, for tests only: MiB of VM vm_idx resident on node (-1: unallocated). */
uint64_t sim_vm_node_mib(const struct sim *sim, int vm_idx, int node);
/* MiB of guest cell cell's own RAM (its range of regions) on node (for tests). */
uint64_t sim_vm_cell_node_mib(const struct sim *sim, int vm_idx, int cell, int node);
/* Ground truth: node index vCPU vcpu of VM vm_idx runs on, or -1 if the VM is not running. */
int sim_vcpu_node(const struct sim *sim, int vm_idx, int vcpu);
uint64_t sim_node_used_mib(const struct sim *sim, int node);
/* Ground truth: the node mask vCPU vcpu of VM vm_idx may run on (its affinity). */
uint64_t sim_vcpu_allowed(const struct sim *sim, int vm_idx, int vcpu);
/*
 * Audits, for tests only: node changes of vCPU vcpu of VM vm_idx caused by the balancer's
 * own actions (its pins and flips; not the host scheduler's nor the kernel's task moves),
 * and MiB of VM vm_idx's RAM migrated by the balancer (kernel = false) or by the kernel's
 * balancing beside it (kernel = true), since the start of the run.
 */
uint32_t sim_vcpu_node_changes(const struct sim *sim, int vm_idx, int vcpu);
uint64_t sim_vm_migrated_mib(const struct sim *sim, int vm_idx, bool kernel);
/* Ground truth: VMs of the scenario (running or not) and VM vm_idx's vCPU count. */
int sim_nr_vms(const struct sim *sim);
int sim_vm_nr_vcpus(const struct sim *sim, int vm_idx);

/*
 * A test's observer: called with the model right before every call of the balancer (after
 * that tick's departures, arrivals and first touches), so a test can read the ground truth
 * the balancer is about to act on, e.g. where a new VM's vCPUs and memory were before the
 * balancer first moved them.  It sees, and changes, nothing the balancer gets: a run with an
 * observer is the same run, bit for bit.  NULL removes it.
 */
typedef void sim_observer_fn(void *arg, const struct sim *sim);
void sim_set_observer(struct sim *sim, sim_observer_fn *fn, void *arg);

struct host;
/* The model behind a simulated host (host_sim_open), for tests; NULL for any other host. */
struct sim *host_sim_model(struct host *h);
/*
 * Ground truth: the 2-MiB regions of VM vm_idx's RAM (0 before it first arrived), and the node
 * index region r (guest MiB r * SIM_REGION_MIB) sits on, or -1 (unallocated, or the VM left).
 */
uint32_t sim_vm_nr_regions(const struct sim *sim, int vm_idx);
int sim_vm_region_node(const struct sim *sim, int vm_idx, uint32_t region);

/*
 * Driven from outside (vnumad --simulate): no balancer runs inside; the agent takes
 * snapshots (sim_snapshot), applies plans (sim_apply_external) and steps time (sim_step).
 * An arriving VM waits for the agent's next sim_commit_external() before its guest touches
 * memory (so binds can apply), but boots anyway after SIM_EXTERNAL_BOOT_S.
 */
#define SIM_EXTERNAL_BOOT_S 1.0
struct sim *sim_new_external(const struct scenario *scn, char *err, size_t errlen);
/* True once after VMs arrived (the agent should run a round now). */
bool sim_take_arrivals(struct sim *sim);
void sim_apply_external(struct sim *sim, const struct plan *plan);
/*
 * Whether the profile gives this run lever cap (HOST_CAP_*) for VM vm_id: 0 or -EOPNOTSUPP,
 * as the profile's real host answers.  HOST_CAP_BIND_LIVE asks for any memory bind: one
 * before the guest's first touch counts when the run has HOST_CAP_BIND_AT_START.
 */
int sim_lever_check(const struct sim *sim, unsigned cap, int vm_id);
void sim_commit_external(struct sim *sim);

#endif

/*
 * observe_plan.h - which VMs a snapshot of the Linux host reads, and how often, within a
 * host-wide CPU budget (issue 14, adaptive observation).
 *
 * Reading a VM (its task directory, /proc/PID/maps, its residency source, and each vCPU
 * thread's stat, status and sched) costs CPU per VM and per vCPU, every round.  A settled VM
 * gives nothing new most rounds: the kernel folds a thread's hinting faults into its sched
 * file once per scan pass, and the scan period of a task whose accesses are local grows
 * towards numa_balancing_scan_period_max_ms (60 s by default).  So:
 *
 * - A VM is *active* while vnumad acts on it (a pin, a memory move queued or done: the owner
 *   calls linux_obs_watch), for LINUX_OBSERVE_ACTIVE_S after it was first seen or last acted
 *   on, and while its last reading differed from the one before (linux_obs_read_done: a vCPU
 *   on another node or with another affinity, a vCPU more or fewer, or its fault shares moved
 *   by LINUX_OBSERVE_CHANGE_PERMILLE).  An active VM is read every snapshot.
 * - Otherwise its period doubles with every reading that shows no change, from one round up to
 *   LINUX_OBSERVE_SETTLED_MAX_S, and it is read when the period has passed.
 * - All of it within a budget: a token bucket filled at the CPU cap (percent of one CPU,
 *   `observe_cpu_cap` in vnumad.conf) and charged with the CPU time each snapshot really took,
 *   fixed costs included.  Active VMs are read whatever the bucket holds (the cap paces the
 *   settled ones: a VM vnumad is converging must be followed, or it acts on what it did
 *   before); settled due VMs are then read in order (the most overdue relative to their
 *   period, then ascending pid) while the bucket holds their estimated cost, and the rest wait
 *   for a later round, counted as deferred.  A VM not read for LINUX_OBSERVE_MAX_AGE_S is read
 *   whatever the bucket holds: a cap must not make a VM invisible.  A round that reads a VM
 *   the bucket had no room for is counted as over the cap.
 *
 * A VM not read is carried: the snapshot holds its last reading (snap_vm.observed_age_s says
 * how old), its residency figure ages, and nothing of it is opened but the pid check of
 * discovery (one pread), which still sees it exit.
 *
 * Pure: no I/O, no clock; times are the caller's monotonic seconds.
 */
#ifndef VNUMAD_HOST_LINUX_OBSERVE_PLAN_H
#define VNUMAD_HOST_LINUX_OBSERVE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Default CPU cap on observing, percent of one CPU (`observe_cpu_cap`).  0.5 %: 5 ms per
 * second, which reads about ten 8-vCPU VMs a second on the development machine, so 64 settled
 * VMs are each read every 8 s; numad costs about 0.02 % at its 15-s interval.
 */
#define LINUX_OBSERVE_CPU_CAP_PERCENT 0.5
/*
 * Longest period between two readings of a settled VM, seconds.  Default 8: a settled VM's
 * sched files change once per scan pass (up to 60 s apart), so 8 s loses little, and a
 * working set that moves is seen within 8 s plus one pass.
 */
#define LINUX_OBSERVE_SETTLED_MAX_S 8.0
/*
 * A VM not read for this long is read whatever the budget, seconds.  Default 30: twice the
 * settled period of a host of 64 8-vCPU VMs under the default cap, so the cap only binds on
 * hosts far beyond that, and then views are at most half a minute old.
 */
#define LINUX_OBSERVE_MAX_AGE_S 30.0
/*
 * How long a VM stays active after it was first seen or vnumad last acted on it, seconds.
 * Default 30: a pin or a move is followed at the full rate until its effect shows in the
 * faults of the next scan passes (1-10 s apart while the kernel scans a task whose accesses
 * are remote).
 */
#define LINUX_OBSERVE_ACTIVE_S 30.0
/*
 * A reading whose per-node fault shares moved by this much from the previous one (sum of the
 * absolute differences, per mille of the VM's faults) makes the VM active.  Default 100 (10
 * points): a decayed counter halves every pass, so a working set that stays where it is moves
 * the shares by a few points from pass to pass; one that moved, by tens.
 */
#define LINUX_OBSERVE_CHANGE_PERMILLE 100
/* The bucket holds at most this many seconds of the cap.  Default 10 s. */
#define LINUX_OBSERVE_BURST_S 10.0
/* The window over which the CPU rate is reported (vnumactl status), seconds. */
#define LINUX_OBSERVE_WINDOW_S 10.0
/* The weight of the newest snapshot in the cost estimates (exponential average). */
#define LINUX_OBSERVE_COST_ALPHA 0.2

/* What the planner keeps per VM. */
struct linux_obs_vm {
	double read_s;         /* last read; < 0: never */
	double period_s;       /* between readings while settled; 0: every round */
	double active_until_s; /* read every round until then */
	bool changed;          /* the last reading differed from the one before */
};

/* Host-wide: the bucket, the cost estimates, the counters. */
struct linux_obs_budget {
	double cap_ms_s; /* CPU ms per second; <= 0: no cap */
	double tokens_ms;
	double at_s; /* last refill; < 0: never */
	/* Estimated CPU ms of a snapshot that reads nothing, and per VM read per (1 + vCPUs). */
	double fixed_ms, unit_ms;
	/* Counters since the host opened. */
	uint64_t reads;       /* VMs read */
	uint64_t carried;     /* VMs carried (not read) in a snapshot */
	uint64_t deferred;    /* of those, due but over the budget */
	uint64_t over_cap;    /* snapshots that read a VM the budget had no room for */
	double cpu_ms;        /* CPU time of every snapshot */
	double window_cpu_ms; /* CPU time since window_s */
	double window_s;      /* start of the current window; < 0: none yet */
	double cpu_ms_s;      /* CPU ms per second over the last full window; < 0: none yet */
};

/* One VM in a round's plan: in pid, vcpus and st; out read. */
struct linux_obs_pick {
	int pid;
	int nr_vcpus;
	struct linux_obs_vm *st;
	bool read;
};

void linux_obs_budget_init(struct linux_obs_budget *b, double cap_percent);
void linux_obs_vm_init(struct linux_obs_vm *st, double now_s);
/* vnumad acts on the VM: read it every round for LINUX_OBSERVE_ACTIVE_S from now_s. */
void linux_obs_watch(struct linux_obs_vm *st, double now_s);
/*
 * Decide this round's readings at now_s: picks[i].read for each of the nr VMs (any order;
 * the decision does not depend on it).  Returns how many are read.
 */
size_t linux_obs_plan(struct linux_obs_budget *b, struct linux_obs_pick *picks, size_t nr,
                      double now_s);
/* After a VM was read at now_s: changed says whether the reading differed (see above). */
void linux_obs_read_done(struct linux_obs_vm *st, double now_s, bool changed);
/*
 * After the snapshot: its CPU time, how many VMs it read and their vCPUs, how many it
 * carried.  Charges the bucket and updates the estimates and counters.
 */
void linux_obs_charge(struct linux_obs_budget *b, double now_s, double cpu_ms, size_t nr_read,
                      int vcpus_read, size_t nr_carried);
/*
 * Whether a new reading differs from the last: vcpu_sig (a digest of each vCPU's index, node
 * and allowed nodes) and faults per node (nr entries, any scale).  prev_faults NULL: no last
 * reading (changed).
 */
bool linux_obs_differs(uint64_t prev_sig, const uint64_t *prev_faults, uint64_t sig,
                       const uint64_t *faults, int nr);

#endif

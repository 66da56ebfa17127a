/*
 * engine_internal.h - vnumad's policy engine, shared between its stages.
 *
 * The engine turns a snapshot into a plan in stages (docs/policy-engine.md):
 *   stats    decayed per-node fault averages, convergence strength per vCPU/group/VM
 *   groups   buddy groups: a VM, one per guest cell, joined across VMs by policy
 *   home     home nodes for arriving or homeless groups, with reservations
 *   spread   move the smallest group off a node whose runnable vCPUs exceed its CPUs
 *   compress move vCPUs to where their buddies (or their memory) are, flipping with
 *            strictly smaller groups on a full node
 *   chase    judge fault-following moves; leave an adverse guest alone, with back-off
 *   memory   move misplaced memory, paced by strength, under rate limit and fullness guards
 *   sampling per-VM sampling intensity between a floor and a ceiling
 * Pure: no I/O, no clock (time comes from snapshot->now_s), no globals.
 *
 * Ownership: struct engine owns every struct eng_vm; a VM's state is freed when it leaves.
 */
#ifndef VNUMAD_POLICY_ENGINE_INTERNAL_H
#define VNUMAD_POLICY_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/engine.h"
#include "policy/model.h"

/* ---- tunables (unit, default, why: docs/policy-engine.md) --------------------------- */

/* The engine is called every sample period; placement stages run every rebalance period. */
#define ENGINE_SAMPLE_PERIOD_S    1.0
#define ENGINE_REBALANCE_PERIOD_S 2.0
/* Fault levels are smoothed with weight 1/ENGINE_FAULT_AVG_PERIODS per sample; strength with
 * 1/ENGINE_STRENGTH_AVG_PERIODS (numa/core: about 16 periods). */
#define ENGINE_FAULT_AVG_PERIODS    4
#define ENGINE_STRENGTH_AVG_PERIODS 16
/* Too few faults to judge a vCPU or group: fewer pages than this (16 huge-page faults). */
#define ENGINE_MIN_FAULT_PAGES 8192.0
/* Strength (1..1024) at or above which a vCPU/group counts as strongly converged. */
#define ENGINE_STRONG 768
/* A vCPU follows its memory only if the target holds this factor more of its faults. */
#define ENGINE_VCPU_GAIN_MARGIN 1.5
/*
 * A spanning VM's vCPU with too few faults to judge follows the VM's memory instead (its
 * expected locality is the memory's share of a node) once the guest has touched this much of
 * its RAM, per mille: before that, where the rest of it lands is not decided yet.
 */
#define ENGINE_SPAN_PRIOR_MIN_PERMILLE 500
/* CPUs' worth of work a vCPU loses with its memory remote (distance 21, memory intensity
 * 0.5: 1 - 1/1.55), the price of spreading a group over nodes instead of overloading one. */
#define ENGINE_REMOTE_VCPU_COST 0.35
/* An overflow span must save this many times its estimated remote cost. */
#define ENGINE_SPAN_MARGIN 1.5
/* Spread: a node is overloaded above this share of its CPUs in runnable demand (ESXi: 10 %). */
#define ENGINE_SPREAD_OVERLOAD 1.10
/*
 * Spread onto a node the group would overload (every node short of CPUs): only when the worse
 * of the two nodes' demand/CPU ratios falls by this much (a tenth of a node's CPUs), the group
 * is no bigger than the source's demand beyond its CPUs, and neither node is in a spanning
 * group's home (its vCPUs follow faults between them, so their
 * load is not a standing imbalance; evening it out there churned small VMs).
 */
#define ENGINE_SPREAD_EVEN_GAIN 0.10
/*
 * Span relief (engine_converge.c): a spanning group's busy vCPU leaves a node of its set whose
 * demand is this many CPUs above its CPUs for one with idle CPU.  Moving it leaves at most
 * this much CPU idle behind and does up to (1 - ENGINE_REMOTE_VCPU_COST) of a CPU's work on
 * the other node even with all its memory remote: a gain from 0.35 up; 0.5 for margin.
 */
#define ENGINE_RELIEF_EXCESS 0.5
/* Span relief moves only vCPUs that use at least this share of a CPU (an idle one frees none). */
#define ENGINE_RELIEF_BUSY 0.5
/*
 * Adverse guests (engine_chase.c): a spanning vCPU's fault-following move pays when its faults
 * still favour the new node ENGINE_CHASE_WINDOW_S later (three vCPU dwell times); with
 * ENGINE_ADVERSE_MIN_MOVES judged, a VM whose moves were ENGINE_ADVERSE_WASTED_PERMILLE or
 * more wasted is left alone for the back-off (doubled per repeat, capped), then re-tested.
 */
#define ENGINE_CHASE_WINDOW_S          30.0
#define ENGINE_ADVERSE_MIN_MOVES       8
#define ENGINE_ADVERSE_WASTED_PERMILLE 750
#define ENGINE_ADVERSE_BACKOFF_BASE_S  120.0
#define ENGINE_ADVERSE_BACKOFF_MAX_S   960.0
/* Minimum seconds between two re-homings of one VM, and between two moves of one vCPU. */
#define ENGINE_VM_DWELL_S   30.0
#define ENGINE_VCPU_DWELL_S 10.0
/* Caps per rebalance: groups re-homed by spread, vCPU moves and flips by compress. */
#define ENGINE_SPREAD_PER_ROUND   2
#define ENGINE_COMPRESS_PER_ROUND 64
/*
 * Home-node holds per rebalance (engine_converge.c).  Default 512: a hold is one affinity
 * change, about a millisecond through libvirt, so a round stays under a second even when
 * vnumad starts on a host of thousands of unpinned vCPUs; the rest follow in later rounds.
 */
#define ENGINE_HOLDS_PER_ROUND 512
/* Room for a reason's text before plan_reason_set cuts it: two whole VM names and words. */
#define ENGINE_TEXT_LEN 1024
/* A round's budgets assume at least / at most this much time since the previous one. */
#define ENGINE_ROUND_MIN_S 0.1
#define ENGINE_ROUND_MAX_S 10.0
/* Host-wide migration rate limit (MiB/s), default for a 2-socket server. */
#define ENGINE_RATE_MIB_S 1024.0
/*
 * Keep this share of each node's memory free when moving memory into it (watermark guard,
 * per mille).  An arriving VM's memory is bound, not moved, and may fill a node closer, to
 * ENGINE_PLACE_RESERVE_PERMILLE.
 */
#define ENGINE_PLACE_RESERVE_PERMILLE 10
#define ENGINE_HEADROOM_PERMILLE      50
/* Back-off after a failed migration: base seconds, doubled per failure, capped. */
#define ENGINE_BACKOFF_BASE_S 4.0
#define ENGINE_BACKOFF_MAX_S  64.0
/*
 * Sampling intensity, MiB/s of guest RAM made inaccessible: the time one pass over the VM's
 * RAM takes goes from ENGINE_SCAN_PASS_MIN_S (unconverged) to ENGINE_SCAN_PASS_MAX_S
 * (converged), within a floor and a ceiling in MiB/s (numa/core scanned 32..512 MB per scan
 * step, a step every 100 ms at the fastest).
 */
#define ENGINE_SCAN_FLOOR_MIB_S 32.0
#define ENGINE_SCAN_CEIL_MIB_S  4096.0
#define ENGINE_SCAN_PASS_MIN_S  8.0
#define ENGINE_SCAN_PASS_MAX_S  512.0
/* A spanning VM's pass never slows beyond this: its vCPUs keep following its memory. */
#define ENGINE_SCAN_PASS_SPAN_MAX_S 32.0
/* A VM counts as converged for sampling at this fault locality, per mille. */
#define ENGINE_CONVERGED_LOCAL_PERMILLE 900

#define ENGINE_NO_NODE (-1)

struct eng_group {
	int cell; /* guest cell, or -1 for the whole VM */
	int nr_vcpus;
	int *vcpus; /* vCPU indexes of the group (owned) */
	uint64_t mem_start_mib, mem_mib;
	uint64_t home; /* node mask: one node (compact) or several (spanning); 0 = none */
	bool spanning;
	int primary;       /* overflow span: the node holding its memory and most vCPUs, or -1 */
	int primary_slots; /* overflow span: vCPUs placed on the primary */
	int strength;      /* 1..1024 by the memory node of the group's faults */
	int conv_node;
	int place_strength; /* 1..1024: share of the group's vCPUs on its most-used node */
	int place_node;
};

struct eng_groupmask {
	const char *name; /* cross-VM group name (points into the round's snapshot) */
	uint64_t nodes;   /* homes of its placed VMs */
};

struct eng_vm {
	int id;
	int snap_idx; /* index in the current snapshot */
	bool seen;
	int nr_vcpus, nr_nodes;
	char name[SNAP_VM_NAME_MAX];
	/* stats */
	uint64_t *fault_prev; /* nr_vcpus x nr_nodes: last counter levels seen */
	double *fault_avg;    /* nr_vcpus x nr_nodes: decayed average of new faults (pages) */
	int *vcpu_strength;   /* per vCPU, 1..1024, 0 = too few faults */
	int *vcpu_conv;       /* per vCPU convergence node, or ENGINE_NO_NODE */
	double *util_avg;     /* per vCPU expected CPU demand */
	int strength;         /* VM-wide, averaged over ENGINE_STRENGTH_AVG_PERIODS */
	int strength_now;     /* VM-wide, this sample */
	int conv_node;
	int local_permille; /* share of recent faults on the faulting vCPU's node */
	double fault_pages; /* smoothed fault level, VM-wide (pages) */
	/* groups */
	int nr_groups;
	struct eng_group *groups;
	int *vcpu_group;       /* per vCPU: its group */
	int *vcpu_target;      /* per vCPU: node it should run on, or ENGINE_NO_NODE */
	int *vcpu_node;        /* per vCPU: node it runs on, updated by this round's moves */
	double *vcpu_moved_s;  /* per vCPU: when vnumad last moved it */
	double *vcpu_pinned_s; /* per vCPU: when vnumad last planned a pin for it */
	uint32_t *vcpu_moves;  /* per vCPU: node changes vnumad caused */
	bool placed;
	bool acted; /* its mode was auto in the last round (engine_observe) */
	double rehomed_s;
	/* memory */
	double backoff_until_s;
	int fail_streak;
	double scan_mib_s; /* intensity last asked for (0: parked or never set) */
	/*
	 * Levers this VM's plan wanted that the host lacks (HOST_CAP_*), for explain: the
	 * engine plans only what snap->caps allows and notes here what it would have done.
	 */
	unsigned levers_wanted;
	double scan_pass_s; /* current target time for one pass over the VM's RAM */
	bool sampling_set;  /* an intensity has been asked for this VM */
	double util_prev;   /* CPU demand when last judged, to notice load changes */
	/* adverse guests (engine_chase.c) */
	int *chase_node; /* per vCPU: node a fault-following move took it to, or -1 */
	double *chase_s; /* per vCPU: when */
	uint32_t chase_wasted, chase_paid;             /* judged since the last verdict */
	uint32_t chase_last_wasted, chase_last_judged; /* the last verdict's figures */
	int adverse_level;                             /* verdicts in a row that found it adverse */
	uint32_t adverse_times;                        /* verdicts that found it adverse, in all */
	double adverse_until_s;                        /* not chased until then */
	bool adverse;                                  /* this round: not chased */
};

struct eng_reserve {
	uint64_t nodes;
	int vcpus;
	uint64_t mem_mib;
	double until_s; /* host time */
};

struct engine {
	struct eng_vm **vms; /* open-addressed hash by id */
	size_t cap;          /* power of two */
	size_t nr;
	double last_rebalance_s;
	bool rebalanced_once;
	/* Per-round node view (nr_nodes entries). */
	int nr_nodes;
	double *node_load;      /* expected CPU demand of vCPUs targeted at the node */
	int *node_slots;        /* vCPUs targeted at the node */
	int64_t *node_mem_free; /* MiB free now, above the headroom, less moves reserved into it */
	int64_t *node_mem_proj; /* MiB free once planned homes hold their VMs (for home choice) */
	double budget_mib;      /* migration budget left this round */
	double rate_mib_s;      /* host-wide migration rate limit (configurable) */
	double rebalance_period_s;
	unsigned caps;            /* the round's snapshot caps (HOST_CAP_*): what it may plan */
	double last_now_s;        /* snapshot time of the previous round, -1 before the first */
	double round_s;           /* time since the previous round (clamped) */
	double round_budget_mib;  /* rate x round_s */
	double vm_left_mib;       /* the current VM's own allowance left this round */
	double host_spare_cpus;   /* host CPUs minus the expected demand of every VM */
	uint64_t span_nodes;      /* this rebalance: nodes in the home of a spanning group */
	struct eng_groupmask *gm; /* per round: cross-VM group name -> home nodes (hash) */
	size_t gm_cap;
	/* engine_validate.c: the round's snapshot without its rejected VMs, when it had any */
	struct snapshot valid;     /* shares all storage with the caller's snapshot but vms */
	struct snap_vm *valid_vms; /* owned; shallow copies of the snapshot's good VMs */
	size_t valid_cap;
	uint64_t vms_rejected; /* VMs left out of a round, summed over rounds */
	/* engine_memory.c: the host-wide rate limit at work (struct engine_counters) */
	uint64_t rate_limited_rounds, rate_deferred_vms;
	/* engine_reserve.c: advice held for VMs about to start, oldest first */
	struct eng_reserve reserves[ENGINE_RESERVE_MAX];
	int nr_reserves;
};

/* engine_reserve.c */
/* A VM seen for the first time claims the oldest reservation of its shape. */
void engine_reserve_claim(struct engine *e, const struct snap_vm *vm);
/* Drop expired reservations, count the rest into the node view (end of engine_nodes_init). */
void engine_reserve_account(struct engine *e, const struct snapshot *snap);

/* engine.c */
struct eng_vm *engine_vm_lookup(struct engine *e, int id);

/* engine_validate.c */
/*
 * The snapshot the round may work on: snap itself when every VM in it is consistent with the
 * host's nodes, else e->valid, a copy without the VMs that are not (never snapshot_free() it;
 * valid until the next call).  engine_validate_free() releases the copy's storage.
 */
const struct snapshot *engine_validate(struct engine *e, const struct snapshot *snap);
void engine_validate_free(struct engine *e);

/* engine_stats.c */
void engine_stats_update(struct eng_vm *ev, const struct snap_vm *vm, const struct snapshot *snap,
                         const double *node_scale, bool first);
int engine_strength(const double *faults, int nr_nodes, int *node_out);
void engine_group_strength(struct eng_vm *ev, struct eng_group *g, const struct snap_vm *vm);

/* engine_groups.c */
void engine_groups_build(struct eng_vm *ev, const struct snap_vm *vm, bool by_cells);
void engine_vm_free(struct eng_vm *ev);
void engine_vm_alloc(struct eng_vm *ev, const struct snap_vm *vm, int nr_nodes);

/* engine_home.c */
void engine_nodes_init(struct engine *e, const struct snapshot *snap);
void engine_home_place(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                       const struct snap_vm *vm, struct plan *plan);
void engine_target_commit(struct engine *e, struct eng_vm *ev, int v, int node);
/* Memory a node can still take for a group's home (more for an arriving VM: no migration). */
int64_t engine_room_mib(const struct engine *e, const struct snapshot *snap, int n, bool arriving);
/*
 * MiB of group g's own memory on node n: the VM's figure for a VM of one group, a guest cell's
 * own figure when the host measures it (struct snap_cell), else 0 (not known per group).
 */
int64_t engine_group_resident_mib(const struct eng_vm *ev, const struct eng_group *g,
                                  const struct snap_vm *vm, int n);
void engine_load_move(struct engine *e, const struct eng_vm *ev, int v, int from, int to);
void engine_emit_pin(struct eng_vm *ev, const struct snap_vm *vm, int v, uint64_t nodes,
                     double now_s, struct plan *plan, const char *rule, double gain,
                     const char *text);

bool engine_try_compact(struct engine *e, const struct snapshot *snap, struct eng_vm *ev,
                        struct eng_group *g, const struct snap_vm *vm);

/* engine_converge.c */
void engine_spread(struct engine *e, const struct snapshot *snap, struct plan *plan);
void engine_compress(struct engine *e, const struct snapshot *snap, struct plan *plan);

/* engine_memory.c */
void engine_memory_plan(struct engine *e, const struct snapshot *snap, struct plan *plan);

/* engine_chase.c */
/* A spanning vCPU v moved to `to` to follow its faults: judge the move later. */
void engine_chase_note(struct eng_vm *ev, int v, int to, double now_s);
/* Judge the VM's pending moves by its latest statistics; a verdict once enough are judged. */
void engine_chase_update(struct eng_vm *ev, double now_s);
bool engine_vm_adverse(const struct eng_vm *ev, double now_s);

/* engine_sampling.c */
void engine_sampling(struct engine *e, const struct snapshot *snap, struct plan *plan);

static inline bool
engine_vm_acts(const struct snap_vm *vm)
{
	return vm->policy.mode == VM_POLICY_MODE_AUTO;
}

#endif

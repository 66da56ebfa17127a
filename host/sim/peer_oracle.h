/*
 * peer_oracle.h - the oracle: the best static binding of every VM, computed with full knowledge
 * of the scenario (arrivals, departures, workloads, the ground-truth memory layout), applied as
 * hard pins and memory binds so memory is first-touched in place.  It is the yardstick:
 * vs_oracle = throughput / the oracle's throughput.  See docs/peers/oracle.md.
 *
 * The evaluator (oracle_binding_throughput) predicts the simulator's throughput for any static
 * binding; oracle_plan searches for the best one.  Both are exported for tests and for the lead.
 *
 * Ownership: an oracle_binding comes from oracle_binding_new() or oracle_plan() and is freed as
 * a whole with oracle_binding_free().  A binding is indexed by scenario VM index.
 */
#ifndef VNUMAD_HOST_SIM_PEER_ORACLE_H
#define VNUMAD_HOST_SIM_PEER_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include "host/sim/scenario.h"

/* Guest RAM [start_mib, start_mib + len_mib) of one VM, placed on one node index. */
struct oracle_range {
	uint64_t start_mib;
	uint64_t len_mib;
	int node;
};

struct oracle_vm_binding {
	int nr_vcpus;
	int *vcpu_node; /* per vCPU: node index it is pinned to */
	int nr_ranges;
	/* Ascending, disjoint, together covering exactly [0, oracle_vm_mem_mib(vm)). */
	struct oracle_range *ranges;
};

struct oracle_binding {
	int nr_vms; /* == scn->nr_vms */
	struct oracle_vm_binding *vms;
	double throughput; /* oracle_binding_throughput() of this binding (oracle_plan only) */
	bool exhaustive;   /* oracle_plan: the shape search was exhaustive (else greedy) */
	int ls_passes;     /* oracle_plan: local-search passes run */
	bool overcommit;   /* oracle_plan: memory did not fit every node at every moment */
};

/* Every VM with all vCPUs and all memory on node 0 (tests overwrite what they need). */
struct oracle_binding *oracle_binding_new(const struct scenario *scn);
void oracle_binding_free(struct oracle_binding *b);
/* Replace a VM's ranges by a copy of ranges[0..nr). */
void oracle_vm_binding_set_ranges(struct oracle_vm_binding *vb, const struct oracle_range *ranges,
                                  int nr);

/* ---- the ground-truth layout (docs/simulator.md, "Ground truth") ---------------------- */

/* Guest RAM in MiB: memory_gib * 1024 rounded down to whole 2-MiB regions. */
uint64_t oracle_vm_mem_mib(const struct scn_vm *vm);
/* Slices: 1 (shared), nr_cells (cells), else one per vCPU. */
int oracle_vm_nr_slices(const struct scn_vm *vm);
/* Guest range of one slice (cells: the cell's RAM; private: regions r with r*n/R == slice). */
void oracle_vm_slice_range(const struct scn_vm *vm, int slice, uint64_t *start_mib,
                           uint64_t *len_mib);
/* Memory a node may hold: its total less SIM_MIN_FREE_MIB. */
uint64_t oracle_node_cap_mib(const struct scenario *scn);

/* ---- evaluator and search ----------------------------------------------------------- */

/*
 * Total work over the run (the simulator's throughput, in CPU-seconds at all-local speed) of
 * the static binding b, with no sampling and no migration.  Phased and adverse workloads are
 * valued at their average over slice rotations.  Returns -EINVAL (negative) when b is malformed
 * (node out of range, ranges not covering the VM's RAM, vCPU count mismatch).
 */
double oracle_binding_throughput(const struct scenario *scn, const struct oracle_binding *b);
/*
 * Peak MiB by which any node's memory exceeds oracle_node_cap_mib() at any moment under b
 * (0 = it always fits).  Times are the simulator's ticks; a VM leaving frees its memory
 * before one arriving on the same tick takes it, as in the simulator.
 */
uint64_t oracle_binding_overfill_mib(const struct scenario *scn, const struct oracle_binding *b);
/*
 * Search for the best static binding of scn (docs/peers/oracle.md): exhaustive over per-VM
 * shapes when they are few, else greedy by size; then local search.  Deterministic.
 * Returns 0 or -errno.
 */
int oracle_plan(const struct scenario *scn, struct oracle_binding **out);

/* ---- internal: the model, shared by the oracle_*.c files --------------------------- */

enum oracle_access {
	ORACLE_ACCESS_LOCAL = 0, /* private, idle, cells: SIM_LOCAL_SHARE to the home slice */
	ORACLE_ACCESS_SHARED,    /* uniform over all of the VM's RAM */
	ORACLE_ACCESS_ROTATING,  /* phased, adverse: the home slice changes (see phase_w) */
};

struct oracle_vm_model {
	enum oracle_access access;
	double util;
	double mem_intensity;
	int nr_vcpus;
	uint64_t mem_mib;
	uint64_t allowed; /* node mask from the VM's policy, never empty */
	int nr_slices;
	uint64_t *slice_start_mib;
	uint64_t *slice_len_mib;
	int *vcpu_slice; /* LOCAL: home slice of each vCPU (-1: none, uniform) */
	/*
	 * ROTATING, phased: phase_w[d], the share of the VM's run in which vCPU v's home slice
	 * is (v + d) mod nr_slices, from the phases the simulator will run.  NULL (adverse):
	 * every slice alike, the expectation over random permutations.
	 */
	double *phase_w;
	/* Time: the VM runs (and holds memory) over segments [first, last]; first < 0: never. */
	int first;
	int last;
};

/* Per node: util placed there, util x efficiency, and MiB resident. */
struct oracle_contrib {
	double *u;
	double *s;
	uint64_t *m;
};

struct oracle_model {
	const struct scenario *scn;
	int nr_nodes;
	double cpus_per_node;
	uint64_t cap_mib;
	int *dist; /* nr_nodes x nr_nodes, defaults filled in */
	int nr_segs;
	double *seg_len_s; /* segments between arrival/departure events */
	int nr_vms;
	struct oracle_vm_model *vms;
};

int oracle_model_init(struct oracle_model *om, const struct scenario *scn);
void oracle_model_fini(struct oracle_model *om);
void oracle_contrib_init(struct oracle_contrib *c, int nr_nodes);
void oracle_contrib_fini(struct oracle_contrib *c);
/*
 * Contributions of VM vm given its vCPUs' nodes and slice_mib (nr_slices x nr_nodes: MiB of
 * each slice on each node).
 */
void oracle_vm_contrib(const struct oracle_model *om, int vm, const int *vcpu_node,
                       const uint64_t *slice_mib, struct oracle_contrib *out);
/* Work per second of a node with cpus CPUs, util u and util x efficiency s placed on it. */
double oracle_node_work(double cpus, double u, double s);

/* ---- internal: the search, shared by oracle_{search,shape,local,chain,repack}.c --------- */

/*
 * Work budget of each start of the search, in cell updates (one segment x one node of a
 * candidate's evaluation); default 10^8, about a second of CPU.  A budget rather than a clock
 * keeps the result deterministic.  The suite's scenarios (up to 240 VMs) use under 10^6; when
 * it runs out the search keeps the best binding found so far.
 */
#define ORACLE_WORK_MAX 100000000ULL

/*
 * A stage-1 shape: the VM over the nodes of mask.  first < 0: split evenly, vCPUs in index
 * blocks, each memory unit with its vCPU.  first >= 0: fill and spill: node first takes as
 * many vCPUs as it has CPUs and memory up to its capacity, the rest spills to the other nodes
 * of mask, nearest to first first (see docs/peers/oracle.md).
 */
struct oracle_shape {
	uint64_t mask;
	int first;
};

/*
 * Part of a tentative move: the last mib MiB (whole regions) of unit `unit` go to node `node`,
 * the rest of it stays where the unit is.  unit < 0: none.  Committing it splits the unit.
 */
struct oracle_srch_part {
	int unit;
	uint64_t mib;
	int node;
};

struct oracle_srch_vm {
	int nr_units, cap_units;
	uint64_t *unit_start; /* MiB; units ascend in guest address */
	uint64_t *unit_len;
	int *unit_slice;
	int *unit_group; /* the vCPU that owns the unit */
	bool *unit_base; /* it starts where stage 1 cut the VM (else it is a split-off part) */
	int *vcpu_order; /* vCPUs in the order shapes and blocks take them: by cell, then index */
	int *vcpu_node;  /* current binding */
	int *unit_node;
	struct oracle_contrib cur;
	bool placed;
	int nr_cands;
	struct oracle_shape *cands; /* stage-1 shapes */
};

struct oracle_srch {
	const struct oracle_model *om;
	int nn;
	struct oracle_srch_vm *vms;
	int nr_live; /* VMs that run at all, and their indexes */
	int *live;
	double *seg_u; /* nr_segs x nr_nodes totals of the placed VMs */
	double *seg_s;
	uint64_t *seg_m;
	double eps;
	uint64_t work;
	bool fill_shapes;   /* stage 1 offers fill-and-spill shapes (one of the two starts) */
	bool uniform_local; /* every node's distance to itself is the same */
	int *hot;           /* per node, nr_segs + 1 prefix counts of CPU-oversubscribed segments */
	double eff_max;     /* most work a busy CPU can do per second (1 unless a distance < 10) */
	uint64_t *node_version; /* per node: bumped whenever a VM's share of it changes */
	uint64_t *pair_seen;    /* nn x nn: node versions a + b when the pair was last re-packed */
	/* scratch: a tentative binding (t*) and the best one found (b*), sized max_units */
	int max_units;
	int *tv, *tu, *bv, *bu, *flag, *ulist;
	struct oracle_srch_part tpart, bpart;
	uint64_t *slice_mib;
	struct oracle_contrib tc, bc, tc2;
};

struct oracle_srch_change {
	int vm;
	const struct oracle_contrib *to;
};

struct oracle_srch_result {
	bool feasible;
	double gain;
	uint64_t over_mib; /* worst overfill this change would create (infeasible only) */
};

/* oracle_search.c: incremental evaluation */
void oracle_srch_eval(struct oracle_srch *sr, int vm, const int *vcpu_node, const int *unit_node,
                      const struct oracle_srch_part *part, struct oracle_contrib *out);
void oracle_srch_delta(struct oracle_srch *sr, const struct oracle_srch_change *ch, int nr,
                       struct oracle_srch_result *d);
void oracle_srch_account(struct oracle_srch *sr, int vm, const struct oracle_contrib *c, int sign);
void oracle_srch_contrib_copy(struct oracle_contrib *dst, const struct oracle_contrib *src, int nn);
void oracle_srch_apply(struct oracle_srch *sr, int vm, const int *vcpu_node, const int *unit_node,
                       const struct oracle_contrib *c);
void oracle_srch_unplace(struct oracle_srch *sr, int vm);
double oracle_srch_rebuild(struct oracle_srch *sr);
/* Split unit u of vm after its first first_mib MiB; the rest becomes unit u + 1, same node. */
void oracle_srch_unit_split(struct oracle_srch *sr, int vm, int u, uint64_t first_mib);
/* Make bv/bu/bpart (contribution bc) vm's binding: split the part's unit, apply, merge. */
void oracle_srch_apply_best(struct oracle_srch *sr, int vm);
/* MiB of vm node n can hold over vm's whole life, the other VMs' memory as it stands. */
uint64_t oracle_srch_room_mib(struct oracle_srch *sr, int vm, int n);
/* vCPUs of vm node n can run over vm's whole life without sharing CPUs (INT_MAX: util 0). */
int oracle_srch_cpu_room(struct oracle_srch *sr, int vm, int n);
/* oracle_shape.c: stage 1 */
void oracle_shape_fill(struct oracle_srch *sr, int vm, const struct oracle_shape *sh, int *tv,
                       int *tu);
void oracle_shape_build(struct oracle_srch *sr, int vm);
bool oracle_greedy_run(struct oracle_srch *sr);
bool oracle_exhaustive_run(struct oracle_srch *sr);
/* oracle_local.c: stage 2, and the helpers its neighbourhoods share */
int oracle_local_run(struct oracle_srch *sr);
void oracle_ls_hot_build(struct oracle_srch *sr);
/* The current binding of vm into the tentative one (sr->tv, tu; no part). */
void oracle_ls_reset(struct oracle_srch *sr, int vm);
/* Flag (sr->flag) the last t vCPUs in vcpu_order on node a (of cell `cell` when >= 0). */
int oracle_ls_flag_last(struct oracle_srch *sr, int vm, int a, int t, int cell);
/* Tentatively move the flagged vCPUs to b with as much of their memory as room allows. */
void oracle_ls_move_flagged(struct oracle_srch *sr, int vm, int b, uint64_t room);
/* oracle_chain.c: one sweep of chains; returns whether one gained */
bool oracle_chain_run(struct oracle_srch *sr);
/* oracle_repack.c: stage 2's large neighbourhood, the VMs of a pair of nodes packed anew */
bool oracle_repack_run(struct oracle_srch *sr);

#endif

/*
 * model.h - what a balancer sees (the snapshot), what it returns (the plan), and the balancer
 * interface that vnumad's engine and every peer model implement.
 *
 * The snapshot holds exactly what a real KVM host can measure (BRIEF section 3) and nothing
 * more: topology and distances; per node its CPUs and total/free memory; per VM its vCPU
 * threads with their current CPU, allowed nodes, CPU use and per-node hinting-fault counts,
 * its per-node resident memory, and its policy.  It also carries the results of the
 * balancer's own earlier actions (pages moved or refused), which the agent learns from the
 * return values of its own system calls.
 *
 * Indexing: every per-node array is indexed by node *index* 0..nr_nodes-1; snap_node.id is the
 * OS node id, used only for display.  Ownership: a snapshot is built by a host backend and
 * freed as a whole with snapshot_free(); a plan is owned by whoever called plan_init().
 */
#ifndef VNUMAD_POLICY_MODEL_H
#define VNUMAD_POLICY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/util.h"
#include "policy/vm_policy.h"

/* ---- snapshot ----------------------------------------------------------------------- */

struct snap_node {
	int id;      /* OS node id (display only) */
	int nr_cpus; /* online CPUs on the node */
	uint64_t mem_total_mib;
	uint64_t mem_free_mib;
};

struct snap_vcpu {
	int tid;   /* host thread id of the vCPU */
	int index; /* the hypervisor's vCPU number (QEMU's "CPU n"); the position by default */
	int cpu;   /* CPU it last ran on */
	int node;  /* node index of that CPU; the first node of its affinity if that excludes it */
	uint64_t allowed_nodes; /* nodes whose CPUs are all in its affinity mask */
	double cpu_use;         /* CPUs used over the last sample period (0..1) */
	/*
	 * Hinting faults per node index, as the kernel counts them for the thread: decayed
	 * (halved once per completed scan pass), split private/shared by the page's previous
	 * accessor.  Point into the snapshot's fault arrays; nr_nodes entries each.
	 */
	const uint64_t *faults_private;
	const uint64_t *faults_shared;
};

struct snap_cell {
	uint64_t mem_start_mib; /* guest-physical range of the cell's RAM */
	uint64_t mem_mib;
	/*
	 * Where the cell's own RAM sits, MiB per node index, and what surely sits there (the
	 * low end of the figure's interval; equal to it when exact); both NULL when the host
	 * does not measure per cell (then only the VM's resident_mib is known, and two cells
	 * each holding the other's share of a node cannot be told from two whole cells).
	 * Allocated with snapshot_cell_resident_alloc, owned by the snapshot.
	 */
	uint64_t *resident_mib;
	uint64_t *resident_sure_mib;
};

/*
 * Room for a VM's name with its NUL: names of up to 255 bytes are kept whole, as in vnumad's
 * state file (agent/state.h).  A longer one is cut, and a VM that libvirt knows only by its
 * whole name cannot be pinned through libvirt.
 */
#define SNAP_VM_NAME_MAX 256
/* Room for a domain UUID in its text form (36 characters) with its NUL. */
#define SNAP_VM_UUID_MAX 37

struct snap_vm {
	int id; /* stable for the VM's lifetime (the QEMU pid on Linux) */
	char name[SNAP_VM_NAME_MAX];
	/* The libvirt domain's UUID, lowercase with hyphens; "" when the host knows none. */
	char uuid[SNAP_VM_UUID_MAX];
	double uptime_s; /* 0 on the call made when the VM arrives */
	int nr_vcpus;
	struct snap_vcpu *vcpus;
	uint64_t mem_mib;       /* guest RAM size */
	uint64_t *resident_mib; /* per node index */
	/*
	 * How good resident_mib is.  resident_age_s: seconds since it was measured (0: this
	 * round).  resident_err_mib: a bound on each node's error, either way (0: exact).  0/0
	 * is an exact, fresh figure (the simulator's `ideal` profile, and what every balancer
	 * but vnumad's sees: BALANCER_HOST_RESIDENCY).  resident_source names where it came
	 * from, for display only ("numa_maps", "cgroup", "sampled", "adjusted"; NULL: the
	 * host's own exact figure); it points to a static string.
	 */
	double resident_age_s;
	uint64_t resident_err_mib;
	const char *resident_source;
	/*
	 * Seconds since the host last read the VM's vCPU threads (their nodes, CPU use, faults):
	 * 0 when read for this snapshot; a host that reads a settled VM less often carries its
	 * last reading meanwhile (host/linux/observe_plan.h).
	 */
	double observed_age_s;
	int nr_cells; /* guest vNUMA cells; 0 when the guest has none */
	struct snap_cell *cells;
	int *vcpu_cell; /* per vCPU: its cell, or NULL when nr_cells == 0 */
	struct vm_policy policy;
	bool policy_set;        /* the host holds a policy for this VM (domain metadata) */
	uint64_t host_nodes;    /* nodes the host confines it to (strict numatune); or ALL */
	bool policy_ok;         /* false: the VM's policy failed to parse; defaults apply */
	char policy_error[256]; /* why, when !policy_ok */
	/* Feedback from the balancer's own memory moves since the previous snapshot. */
	uint64_t mig_done_mib;
	uint64_t mig_failed_mib;
	uint64_t mig_pending_mib; /* still queued in the migration engine */
	/*
	 * What the kernel's own NUMA balancing migrated of the VM's pages (migrate-on-fault toward
	 * its threads), KiB, cumulative over the VM's live vCPU threads (numa_pages_migrated in
	 * their sched files; it drops when a thread exits).  kernel_moved_known false: the host
	 * does not sense it (no CONFIG_SCHED_DEBUG NUMA lines, the libvirt test driver).
	 */
	uint64_t kernel_moved_kib;
	bool kernel_moved_known;
	/*
	 * Guest memory the kernel holds pinned for a device (VFIO: an assigned device pins all of
	 * guest RAM) or io_uring's registered buffers, MiB: VmPin of the QEMU process on Linux, 0
	 * elsewhere.  Pinned pages cannot be migrated; see engine_vm_mem_pinned().
	 */
	uint64_t pinned_mib;
};

/*
 * What the host can do and sense (BRIEF section 3, lever parity): one truth per backend, filled
 * by its capability probe (Linux, libvirt) or by the simulator's host profile.  The engine plans
 * only what the levers allow; the sensing flags say how to read the snapshot.
 */
#define HOST_CAP_PIN        (1u << 0) /* lever: set a vCPU thread's CPU affinity */
#define HOST_CAP_MOVE_PAGES (1u << 1) /* lever: move a running VM's resident RAM (move_pages) */
#define HOST_CAP_BIND_AT_START                                                                     \
	(1u << 2) /* lever: bind guest RAM before the guest first touches it */
#define HOST_CAP_BIND_LIVE     (1u << 3) /* lever: bind a running VM's future allocations */
#define HOST_CAP_VM_SAMPLING   (1u << 4) /* lever: set one VM's hinting-fault scan rate */
#define HOST_CAP_SCAN_TUNABLES (1u << 5) /* lever: the kernel's host-wide scan tunables */
/* Sensing and surroundings. */
#define HOST_CAP_KERNEL_BALANCING (1u << 6) /* the kernel's NUMA balancing runs beside us */
#define HOST_CAP_FAULTS_PER_PASS  (1u << 7) /* fault counters fold in once per scan pass */
#define HOST_CAP_RANGE_FAULTS     (1u << 8) /* faults known per guest-RAM range */
#define HOST_CAP_NR               9
/* Every lever the model has: the simulator's `ideal` profile, for research only. */
#define HOST_CAPS_LEVERS                                                                           \
	(HOST_CAP_PIN | HOST_CAP_MOVE_PAGES | HOST_CAP_BIND_AT_START | HOST_CAP_BIND_LIVE |        \
	 HOST_CAP_VM_SAMPLING)
#define HOST_CAPS_ALL_LEVERS (HOST_CAPS_LEVERS | HOST_CAP_SCAN_TUNABLES)

/* The name of capability bit i (0..HOST_CAP_NR-1), e.g. "bind-at-start". */
const char *host_cap_name(int i);
/* caps as a comma-separated list of names ("" when none) into buf; returns buf. */
char *host_caps_format(unsigned caps, char *buf, size_t len);

/*
 * The capability probe's word on each lever (issue 16: `vnumactl status`, host_ops.levers in
 * host/host.h): levers are the capability bits 0..HOST_LEVER_NR-1 (HOST_CAPS_ALL_LEVERS), and
 * an array of HOST_LEVER_NR of these is indexed by bit.  Here, beside the bits, so that every
 * backend - the libvirt module too, which links only the policy library - shares one
 * definition.  Lever parity: present exactly when the bit is in the snapshot's caps.
 */
#define HOST_LEVER_NR 6
enum host_lever_state {
	HOST_LEVER_PRESENT, /* the backend performs it */
	HOST_LEVER_ABSENT,  /* the host, its kernel or the backend has no such lever */
	HOST_LEVER_REFUSED, /* it is there, but this process may not use it */
};
/* Bytes of a lever's reason, one line in words. */
#define HOST_LEVER_REASON_MAX 256
struct host_lever {
	enum host_lever_state state;
	char reason[HOST_LEVER_REASON_MAX]; /* never empty */
};

/* The index of capability bit cap (one HOST_CAP_*): its place in an array of levers. */
static inline int
host_cap_index(unsigned cap)
{
	return __builtin_ctz(cap);
}
/* "present", "absent" or "refused". */
const char *host_lever_state_name(enum host_lever_state state);
/*
 * What caps alone say of each lever, into out[HOST_LEVER_NR], for a backend without a probe
 * of its own: present when the bit is set, else absent; the reason "not probed".
 */
void host_levers_from_caps(unsigned caps, struct host_lever *out);

struct snapshot {
	double now_s;  /* host clock at the time of the snapshot */
	unsigned caps; /* HOST_CAP_*: what the host can do and sense (0 from snapshot_new) */
	int nr_nodes;
	struct snap_node *nodes;
	int *distance; /* nr_nodes x nr_nodes, row-major, 10 = local */
	int nr_cpus;
	int *cpu_node; /* per CPU id: node index */
	int nr_vms;
	struct snap_vm *vms;
	/* Backing storage, owned by the snapshot. */
	uint64_t *fault_store;
	uint64_t *resident_store;
	struct snap_vcpu *vcpu_store;
};

/*
 * What surely sits on node index n of the VM's memory: resident_mib less its error bound, never
 * below 0.  The engine books memory leaving a node, and plans moves out of it, from this.
 */
static inline uint64_t
snap_vm_resident_sure_mib(const struct snap_vm *vm, int n)
{
	return vm->resident_mib[n] > vm->resident_err_mib
	           ? vm->resident_mib[n] - vm->resident_err_mib
	           : 0;
}

/*
 * Whether the engine places the VM by its guest vNUMA cells (one buddy group and home per
 * cell) rather than as one group: its policy says placement='cells', or it keeps the default
 * (compact) but its memory fits no node of the host, so that no placement can hold it on one
 * node and the guest's own cells are where it splits (docs/policy-engine.md, "Groups").  Never
 * for a VM with fewer than two cells.
 */
bool snap_vm_by_cells(const struct snapshot *snap, const struct snap_vm *vm);

static inline int
snapshot_distance(const struct snapshot *snap, int from, int to)
{
	return snap->distance[from * snap->nr_nodes + to];
}

/*
 * Allocate a snapshot for nr_nodes nodes, nr_cpus CPUs and nr_vms VMs with nr_vcpus vCPUs in
 * all; the caller fills it in.  vm_vcpus[i] gives VM i's vCPU count (vcpus, fault and resident
 * pointers are wired up here).  Cells are allocated by the caller with snapshot_vm_set_cells.
 */
struct snapshot *snapshot_new(int nr_nodes, int nr_cpus, int nr_vms, const int *vm_vcpus);
void snapshot_vm_set_cells(struct snap_vm *vm, int nr_cells);
/* Give a cell per-node residency arrays of nr_nodes entries, zeroed (the old ones freed). */
void snapshot_cell_resident_alloc(struct snap_cell *cell, int nr_nodes);
/* Remove VM i from the snapshot, freeing what it owns (its cells and their figures). */
void snapshot_vm_remove(struct snapshot *snap, int i);

void snapshot_free(struct snapshot *snap);

/* ---- plan --------------------------------------------------------------------------- */

/* Why an action was taken: the rule, its inputs in words, and the expected gain. */
struct plan_reason {
	char rule[24];  /* e.g. "spread", "compress", "flip", "numad-bind" */
	char text[104]; /* inputs, e.g. "node 1 holds 7/8 of the VM's faults" */
	double gain;    /* expected gain in the rule's own unit (documented per rule) */
};

enum plan_pin_kind {
	PLAN_PIN_MOVE = 0, /* re-pin one vCPU */
	PLAN_PIN_FLIP,     /* one half of a flip; the other half is flip_with */
	/*
	 * The kernel's own task migration (autonuma model only): run the vCPU on to_node and
	 * prefer that node from now on, without changing its affinity (nodes is ignored).
	 */
	PLAN_PIN_KERNEL_MOVE,
};

struct plan_pin {
	int vm_id;
	int vcpu;
	uint64_t nodes; /* new allowed nodes; NODEMASK_ALL = unpin */
	enum plan_pin_kind kind;
	int flip_with; /* index in plan.pins of the other half, or -1 */
	int to_node;   /* PLAN_PIN_KERNEL_MOVE: destination node index; else -1 */
	struct plan_reason why;
};

/*
 * Move up to mib of the VM's memory that sits on from_node to to_node.  The range limits which
 * guest RAM is considered (len_mib == 0: all of it).  The migration engine moves it gradually
 * and reports progress in the next snapshots (mig_done/failed/pending).
 */
struct plan_mem_move {
	int vm_id;
	uint64_t start_mib;
	uint64_t len_mib;
	int from_node;
	int to_node;
	uint64_t mib;
	struct plan_reason why;
};

/*
 * Bind a range of guest RAM (len_mib == 0: all of it) to a node set for future allocations,
 * as mbind(2)/numatune do.  Memory already resident is not moved.
 */
struct plan_mem_bind {
	int vm_id;
	uint64_t start_mib;
	uint64_t len_mib;
	uint64_t nodes;
	struct plan_reason why;
};

/* Ask for a per-VM sampling intensity: MiB of guest RAM made inaccessible per second. */
struct plan_sampling {
	int vm_id;
	double scan_mib_s;
	struct plan_reason why;
};

struct plan {
	struct plan_pin *pins;
	size_t nr_pins, cap_pins;
	struct plan_mem_move *moves;
	size_t nr_moves, cap_moves;
	struct plan_mem_bind *binds;
	size_t nr_binds, cap_binds;
	struct plan_sampling *samplings;
	size_t nr_samplings, cap_samplings;
	/* Seconds until the balancer wants to be called again (> 0). */
	double next_call_s;
};

void plan_init(struct plan *plan);
void plan_reset(struct plan *plan); /* empty it, keep the storage */
void plan_free(struct plan *plan);
void plan_reason_set(struct plan_reason *why, const char *rule, double gain, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
struct plan_pin *plan_add_pin(struct plan *plan, int vm_id, int vcpu, uint64_t nodes);
/* Two PLAN_PIN_FLIP entries, linked through flip_with; returns the first. */
struct plan_pin *plan_add_flip(struct plan *plan, int vm_a, int vcpu_a, int node_a, int vm_b,
                               int vcpu_b, int node_b);
struct plan_mem_move *plan_add_move(struct plan *plan, int vm_id, int from_node, int to_node,
                                    uint64_t mib);
struct plan_mem_bind *plan_add_bind(struct plan *plan, int vm_id, uint64_t nodes);
struct plan_sampling *plan_add_sampling(struct plan *plan, int vm_id, double scan_mib_s);

/* ---- balancers ---------------------------------------------------------------------- */

/* Host-side behaviour a balancer relies on, provided by the host (the kernel) not the plan. */
#define BALANCER_HOST_KERNEL_NUMA (1u << 0) /* kernel NUMA balancing: migrate-on-fault */
/* The oracle: a yardstick with full knowledge, in place from t=0 whatever the scenario says. */
#define BALANCER_FULL_KNOWLEDGE (1u << 1)
/* NUMA-blind (`none`): the simulator runs it with the kernel's NUMA balancing off. */
#define BALANCER_NUMA_BLIND (1u << 2)
/*
 * libvirt's placement='auto' (`static`): binds a domain's memory at its start through numatune,
 * a lever libvirt has on any host, so the simulator gives it HOST_CAP_BIND_AT_START.
 */
#define BALANCER_LIBVIRT_PLACEMENT (1u << 3)
/*
 * Takes each VM's per-node residency from the host backend's own sensing, with its age and
 * error (vnumad: host/linux/residency.c on a real host; on the simulated host what the profile's
 * real backend would measure).  A balancer without it reads exact residency at each call: numad
 * walks numa_maps itself, the kernel knows its own pages, the oracle knows everything.
 */
#define BALANCER_HOST_RESIDENCY (1u << 4)

struct balancer_args {
	uint64_t seed; /* for the balancer's own PRNG */
	               /*
	                * Full knowledge, for the oracle only: the scenario being simulated (a const struct
	                * scenario *).  Every real balancer ignores it.
	                */
	const void *knowledge;
	/* vnumad's engine: host-wide migration rate limit and rebalance period (0: defaults). */
	double rate_mib_s;
	double rebalance_period_s;
};

struct balancer_ops {
	const char *name;
	const char *description;
	unsigned host_flags; /* BALANCER_HOST_* */
	/* Default per-VM sampling intensity (MiB/s) before the balancer asks for another. */
	double default_scan_mib_s;
	void *(*create)(const struct balancer_args *args);
	/*
	 * Turn a snapshot into a plan (plan is empty on entry).  Called when plan->next_call_s
	 * of the previous call has passed, and additionally whenever a VM arrives (that VM has
	 * uptime_s == 0 and nothing resident yet).  Returns 0 or -errno.
	 */
	int (*decide)(void *state, const struct snapshot *snap, struct plan *plan);
	void (*destroy)(void *state);
};

/* vnumad's own balancer (policy/engine.c); the peers live in host/sim/peers.h. */
extern const struct balancer_ops vnumad_balancer_ops;

#endif

/*
 * linux_host.h - internals of the Linux backend of struct host_ops (`vnumad --host linux`),
 * shared by linux_host.c (observing, pinning, the ops table) and linux_host_mem.c (memory
 * moves).  Nothing outside those two files includes this; the agent sees host/host.h.
 *
 * Identity: a VM is its QEMU process; its id is the pid.  A pid reused by a new QEMU is told
 * apart by the start time of its first vCPU thread, so a new VM never inherits an old one's
 * migrations or CPU-time samples.  Node arguments from the agent are node *indexes* of the
 * last snapshot; they are turned into OS node ids here.
 */
#ifndef VNUMAD_HOST_LINUX_LINUX_HOST_H
#define VNUMAD_HOST_LINUX_LINUX_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/host.h"
#include "host/linux/actuate.h"
#include "host/linux/discover_cache.h"
#include "host/linux/nodes_reader.h"
#include "host/linux/observe_plan.h"
#include "host/linux/pfile.h"
#include "host/linux/probe.h"
#include "host/linux/procconn.h"
#include "host/linux/ram_layout.h"
#include "host/linux/residency.h"
#include "host/linux/scan_tunables.h"
#include "host/linux/snapshot.h"
#include "host/linux/sysfs.h"

/*
 * Seconds between two decisions of a VM's sampling source (probe.h).  Default 30: an admin
 * who binds a VM's RAM with numactl or switches its backing sees it within half a minute,
 * while a round does not re-read every sched file twice.  A change of kernel.numa_balancing
 * re-probes every VM at once.
 */
#define LINUX_HOST_REPROBE_S 30.0
/*
 * How often the daemon should call advance() while pages are being moved, seconds.
 * Default 0.05: each migrator tick then moves at most rate x 50 ms (51 MiB at 1 GiB/s), so
 * the daemon stays responsive and the rate stays smooth.
 */
#define LINUX_HOST_BUSY_WAKE_S 0.05
/*
 * Most time one migrator tick may charge, seconds.  The migrator lets up to a second's budget
 * carry over after a pause; the daemon's loop can sleep half a second between ticks, so a
 * new request could start with 500 MiB to move at once and stall the daemon for seconds on a
 * slow host.  Feeding the migrator a clock that advances at most this much per tick keeps
 * every tick short; the cost is that time lost to a stall is not caught up.  Default 0.1.
 */
#define LINUX_HOST_TICK_MAX_S 0.1
/* Uptime reported for a VM whose threads started in this very clock tick, seconds. */
#define LINUX_HOST_MIN_UPTIME_S 0.001

/* One memory move: its ranges, walked one migrator request at a time. */
struct lh_job {
	int req_id; /* the active request, -1 between requests */
	uint64_t from_nodes;
	int to_node;         /* OS node id */
	int cell;            /* the guest cell whose range it moves (lh_vm.cells), or -1 */
	uint64_t left_bytes; /* still to move under this job's cap */
	struct linux_ram_range *ranges;
	int nr_ranges, next_range;
	/* What the active request had moved and failed when last accounted. */
	uint64_t seen_moved, seen_failed;
};

struct lh_vcpu {
	int tid;
	uint64_t ticks; /* utime + stime at at_s */
	double at_s;
	double cpu_use; /* as last reported (carried while the VM is not read) */
};

struct lh_vm {
	int pid;
	uint64_t start_ticks; /* of its first vCPU thread: tells a reused pid apart */
	bool seen;
	int nr_vcpus;
	struct lh_vcpu *vcpus;
	int nr_ram;
	struct linux_ram_range *ram; /* guest RAM, in guest-physical order (linux_host.c) */
	/* Why its vNUMA cells' RAM was not located (ram_layout.h): none of it moves. */
	char ram_error[LINUX_QEMU_ERROR_MAX];
	/* Why its -numa options gave no cells (qemu_numa.h): vnumad places it as one cell. */
	char cells_error[LINUX_QEMU_ERROR_MAX];
	/* Why its guest RAM was found by size only (discover.h); "" when found for certain. */
	char ram_guess[LINUX_QEMU_ERROR_MAX];
	struct linux_vm_sampling sampling;
	double probed_s;
	struct lh_job *jobs;
	size_t nr_jobs, cap_jobs;
	/* Migration results not yet reported in a snapshot, bytes. */
	uint64_t done_bytes, failed_bytes;
	/* Where its guest RAM sits (residency.h), and what only its last walk showed. */
	struct linux_resid resid;
	/* Its guest cells as ranges of guest RAM offsets, for the per-cell figure (0: none). */
	int nr_cells;
	struct linux_ram_range cells[LINUX_RESID_MAX_CELLS];
	bool ram_huge, ram_bound;
	char ram_policy[32];
	uint64_t walk_mem_mib; /* guest RAM size from the walk, when the command line has none */
	/* Adaptive observation (observe_plan.h). */
	struct linux_obs_vm obs;
	bool obs_read_now;        /* this snapshot reads it */
	struct linux_vm_obs kept; /* its vCPU threads as last read (snapshot.h) */
	uint64_t obs_sig;         /* digest of its vCPUs' nodes and affinities at that reading */
	uint64_t *obs_faults;     /* its faults per node index then; NULL: none yet */
	int obs_nr_nodes;
};

struct linux_host {
	struct host base; /* first: the agent sees a struct host */
	char *root;       /* NULL: this machine */
	long hz;          /* clock ticks per second of /proc stat times */
	uint64_t page_bytes;
	struct linux_host_caps caps;
	/* The scan tunables as last probed (at open, and at every scan_tunables_get/set). */
	struct linux_scan_probe scan;
	char describe[768];
	char note[2 * LINUX_QEMU_ERROR_MAX + 128]; /* the last vm_note answer */
	/* Processes and VMs left out of a snapshot because a file was malformed. */
	uint64_t skipped;
	char skip_reason[160];                   /* the last one */
	struct linux_nodes nodes;                /* as of the last snapshot */
	struct linux_nodes_reader *nodes_reader; /* reads them, and numa_balancing, each round */
	struct linux_migrator *mig;
	double mig_clock_s, mig_real_s; /* the migrator's clock, and real time at its last tick */
	struct lh_vm *vms;
	size_t nr_vms, cap_vms;
	int *orphans; /* requests of VMs that left, released once finished */
	size_t nr_orphans, cap_orphans;
	/* Residency (residency.h): the host-wide walk budget, the sampler (NULL: none). */
	struct linux_resid_budget walk_budget;
	double round_s; /* the clock at the start of the snapshot being taken */
	int sample_pages;
	linux_resid_query_fn resid_query;
	void *resid_query_ctx;
	struct linux_discover_cache *discover; /* what is known of /proc between snapshots */
	/* The kernel's process events (procconn.h; NULL: none, /proc is listed every round). */
	struct linux_procconn *procconn;
	struct linux_proc_delta proc_delta; /* drained this round, applied by the scan */
	char procconn_note[96];             /* why there are none, for describe */
	struct linux_pfile uptime;          /* /proc/uptime, kept open */
	struct linux_pfile_pool uptime_pool;
	struct host_observe_cost observe;   /* of the last snapshot */
	struct linux_obs_budget obs_budget; /* adaptive observation (observe_plan.h) */
	bool observed;                      /* observe is set */
};

double linux_host_clock_s(void);
struct lh_vm *linux_host_vm(struct linux_host *lh, int pid);

/* linux_host_mem.c */
int linux_host_move(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, int from_node,
                    int to_node, uint64_t mib);
/* Tick the migrator and account its progress into each VM's jobs. */
void linux_host_mem_advance(struct linux_host *lh, double now_s);
/* Bytes still to move for vm. */
uint64_t linux_host_mem_pending(const struct lh_vm *vm);
/* Drop vm's jobs; requests still running become orphans. */
void linux_host_mem_drop(struct linux_host *lh, struct lh_vm *vm);

/*
 * linux_host_scan.c: the scan tunables ops (host.h).  Under a root they read and write that
 * tree's files (its kernel's tunables, not this machine's).
 */
int linux_host_scan_get(struct host *h, struct scan_tunables *out, const char **why);
int linux_host_scan_set(struct host *h, const struct scan_tunables *t);

/* linux_host_levers.c: the levers op (host.h), from the probes of linux_host_scan.c and open. */
void linux_host_levers(struct host *h, struct host_lever *out);

#endif

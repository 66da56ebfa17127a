/*
 * metrics.h - vnumad's figures in the Prometheus text exposition format (version 0.0.4).
 *
 * Two steps, both on the daemon's main thread once per round: metrics_view_collect() copies
 * what the daemon knows (the last round's snapshot, the engine's report, the counters) into a
 * plain struct metrics_view; metrics_render() turns a view into the text, with no other input,
 * so that it is unit-tested on views built by hand.  The text then goes to the HTTP server
 * (metrics_http.h) and to the textfile (metrics_export.h); neither reads daemon state.
 *
 * The metric names, units and labels are listed in docs/vnumad.8 (METRICS).  Families come in
 * a fixed order, VMs sorted by name (then id), nodes by index: the same view renders the same
 * text.
 *
 * Ownership: a view owns its arrays and the strings it copied; metrics_view_free() frees them.
 */
#ifndef VNUMAD_AGENT_METRICS_H
#define VNUMAD_AGENT_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/daemon.h"
#include "agent/hist.h"
#include "policy/util.h"

/* One VM, as the last round saw it.  node_* arrays have the view's nr_nodes entries. */
struct metrics_vm {
	int id;
	char *name;              /* the VM's name, any bytes but NUL (escaped when rendered) */
	char *uuid;              /* the libvirt domain's UUID; "" when the host knows none */
	const char *mode;        /* policy mode in force: auto, advisory, manual, off */
	const char *placement;   /* compact, cells */
	const char *source;      /* where the policy came from: live, host, file, default */
	const char *state;       /* handlers_vm_state(): settled, moving, placing, ... */
	uint64_t mem_size_bytes; /* guest RAM */
	uint64_t *node_bytes;    /* resident memory per node */
	int *node_vcpus;         /* vCPUs running on each node */
	double fault_locality;  /* recent hinting faults local (daemon_fault_locality); < 0: none */
	double memory_locality; /* memory on the nodes its vCPUs run on */
	int strength;           /* convergence strength 1..1024, 0: too few faults */
	uint64_t pending_bytes; /* memory moves still queued */
	bool kernel_known;      /* the host senses the kernel's own migrations of its pages */
	struct dvm_counters c;  /* since the daemon met it */
};

struct metrics_node {
	int id;
	int nr_cpus;
	uint64_t mem_total_bytes, mem_free_bytes;
	int vcpus;       /* vCPUs of all VMs running there */
	double cpu_load; /* their CPU use, in CPUs */
	/*
	 * What a new VM could take there and stay local (the capacity `vnumactl place` weighs):
	 * free memory above the engine's headroom, and CPUs no vCPU runs on (0 at the least).
	 */
	uint64_t place_free_bytes;
	int place_free_vcpus;
};

struct metrics_view {
	const char *version, *backend, *default_mode;
	bool paused;
	unsigned caps; /* HOST_CAP_* of the last snapshot */
	uint64_t rounds;
	double round_seconds_total;
	struct hist decision; /* the decision step's time */
	struct dvm_counters total;
	uint64_t skipped[DSKIP_MAX];
	uint64_t actions_refused;
	double migrate_rate_bytes_s; /* the host-wide limit configured */
	uint64_t rate_limited_rounds, rate_deferred_vms;
	double fault_locality;  /* host-wide, over the VMs that have a current figure; < 0: none */
	double memory_locality; /* host-wide: the VMs' memory_locality weighted by their size */
	double render_s;        /* how long the previous round's render took (< 0: none yet) */
	uint64_t scrapes;       /* /metrics requests answered, as of the collect */
	int nr_nodes;
	struct metrics_node *nodes;
	int nr_vms;
	struct metrics_vm *vms;
};

/* Fill mv from the daemon's last round (main thread). */
void metrics_view_collect(struct daemon *d, struct metrics_view *mv);
void metrics_view_free(struct metrics_view *mv);

/* Append the whole exposition text of mv to out. */
void metrics_render(const struct metrics_view *mv, struct util_buf *out);

/* Append s to out escaped as a label value (backslash, double quote, newline). */
void metrics_label_escape(struct util_buf *out, const char *s);

#endif

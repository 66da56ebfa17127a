/*
 * daemon.h - vnumad's state and main loop: observe (host snapshot) -> decide (the policy
 * engine) -> act (agent/actions.c) -> record (counters, events), every sample period; VM
 * arrivals trigger a round at once.  Control requests are served between rounds without
 * ever blocking them (agent/control.c).
 *
 * Ownership: struct daemon owns everything it points to; daemon_fini() frees it all.
 */
#ifndef VNUMAD_AGENT_DAEMON_H
#define VNUMAD_AGENT_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/config.h"
#include "agent/control.h"
#include "agent/events.h"
#include "agent/hist.h"
#include "agent/policy_files.h"
#include "agent/scan_lever.h"
#include "host/host.h"
#include "policy/model.h"

struct control;
struct metrics_export;
struct state;

/*
 * The log_vm_warnx slot of the state file's warnings (no VM has id 0), so that a state
 * directory that cannot be written is said once a minute, not every round.
 */
#define DAEMON_STATE_LOG_ID 0

/* Per-VM counters (vmstat style, since the daemon met the VM). */
struct dvm_counters {
	uint64_t hint_faults, hint_faults_local;
	uint64_t pages_migrated, pages_migrate_failed;
	/* Pages the kernel's own NUMA balancing migrated (migrate-on-fault), where the host senses
	 * it; vnumad's rate limit does not pace these. */
	uint64_t pages_migrated_kernel;
	uint64_t vcpu_moves, flips, binds;
	/* Actions the host answered -EOPNOTSUPP: levers it does not have (host.h). */
	uint64_t unsupported;
};

/* The daemon's record of one VM. */
struct dvm {
	int id;
	char name[SNAP_VM_NAME_MAX];
	bool seen;
	bool live_policy;        /* policy set with `vnumactl policy` / `migrate` */
	struct vm_policy policy; /* the live policy when live_policy */
	bool admin_pinned;       /* `vnumactl pin`: mode manual until `unpin` */
	/*
	 * The policy configured for the VM (live, the host's, a file's or the default, as the last
	 * round found it), before what is only for now: pausing, an admin pin, the nodes the host
	 * enforces, placement cells on a VM without cells.  What `vnumactl policy` and `migrate`
	 * change, so that a change made while paused or pinned does not keep advisory or manual.
	 */
	struct vm_policy configured;
	/* Why the policy in force differs from the configured one, for vminfo ("" = it does not).
	 */
	char policy_note[160];
	/* Where the policy in force came from: "live", "host", "file" or "default". */
	const char *policy_source;
	struct dvm_counters c;
	int nr_vcpus, nr_nodes;
	uint64_t *fault_prev;     /* per vCPU x node: last fault level seen */
	uint64_t *vcpu_node_prev; /* per vCPU: node + 1 at the last look (in fault_prev's block) */
	/*
	 * Recent hinting faults (daemon_faults_recent): new faults, all and on the node the
	 * faulting vCPU ran on, decayed with a DAEMON_FAULT_HALF_LIFE_S half-life; when they
	 * were last decayed; when the last new fault was seen (< 0: never).
	 */
	double recent_all, recent_local, recent_at_s, fault_last_s;
	uint64_t fault_last_batch; /* new faults in the last snapshot that had any */
	uint64_t kernel_prev_kib;  /* the kernel's moves of its pages as last seen (cumulative) */
	bool kernel_seen;          /* kernel_prev_kib holds a reading */
	double scan_mib_s;         /* sampling intensity last applied */
	unsigned unsupported_said; /* 1 << enum actions_lever: "not supported" logged once */
	int missing_rounds;        /* consecutive snapshots without it (DAEMON_VM_GONE_ROUNDS) */
};

/*
 * Snapshots in a row without a VM before the daemon takes it for gone and forgets its
 * original affinities.  One snapshot can miss a VM that is still there (a process whose
 * /proc files could not be read that time): forgetting it then would record vnumad's own
 * pins as the original affinity when it is seen again.  3 rounds.
 */
#define DAEMON_VM_GONE_ROUNDS 3

/* Host-wide reasons a VM was skipped in a round (counted per VM and round). */
enum dskip {
	DSKIP_ADVISORY,
	DSKIP_MANUAL,
	DSKIP_OFF,
	DSKIP_PAUSED,
	DSKIP_ERROR, /* an action on it failed */
	DSKIP_GONE,  /* it went away mid-round */
	DSKIP_MAX,
};

/* Their names, as `stats` and the metrics' reason label give them. */
extern const char *const daemon_skip_names[DSKIP_MAX];

struct daemon {
	struct config cfg;
	char config_path[4096];
	bool config_given; /* -f FILE: a missing file is an error */
	struct host *host;
	struct host *linux_host; /* the Linux host inside host (NULL: simulated) */
	const char *backend;     /* the open host's name: "sim", "linux" */
	bool simulate;           /* --simulate: the simulated host, else the real one (linux) */
	char connect_uri[1024];  /* --connect URI: libvirt over the Linux host; "" = Linux alone */
	char scenario[4096];     /* --simulate argument ("default" for the built-in) */
	enum sim_profile host_profile; /* --host-profile: the simulated host's levers */
	struct config cfg_file;        /* the configuration file as last read (before overrides) */
	char fault_spec[64];           /* --fault-inject (host/fault.h); "" when off */
	struct policy_files pfiles;    /* policy_dir's files */
	const struct balancer_ops *bal;
	void *eng;
	struct control *ctl;
	struct state *state;
	int lock_fd;
	bool started; /* daemon_init succeeded: daemon_fini may restore (restore_on_exit) */
	struct events events;
	struct dvm *vms;
	size_t nr_vms, cap_vms;
	struct snapshot *snap; /* the last round's snapshot, as the engine saw it */
	struct plan plan;
	bool paused;
	volatile sig_atomic_t stop, reload;
	double speed;  /* host seconds per wall second (sim) */
	bool lag_said; /* "the simulated host runs slower than --speed" logged */
	double wall_start, host_start, next_sample_s, started_wall;
	uint64_t rounds;
	double round_ms_sum, round_ms_max;
	struct hist decide_hist; /* the decision step's wall-clock time, per round */
	struct metrics_export
	    *metrics; /* /metrics and the textfile (metrics_export.h); NULL: off */
	char metrics_textfile_opt[PATH_MAX]; /* --metrics-textfile (wins over the key); "" = none */
	uint64_t skipped[DSKIP_MAX];
	uint64_t actions_refused;
	uint64_t pins_unrecorded; /* pins skipped: their original affinity could not be saved */
	struct dvm_counters total;
	struct scan_lever scan; /* the kernel's host-wide scan tunables (scan_lever.h) */
	uint64_t watchdog_usec;
	double last_watchdog_wall;
};

/*
 * The view's fault locality (vminfo, list, explain): the share of the VM's recent hinting
 * faults that hit the node the faulting vCPU ran on, counted from each snapshot's new faults
 * (half-life DAEMON_FAULT_HALF_LIFE_S, 10 s).  A vCPU that changed node empties the window:
 * faults taken before the move say nothing of the VM as it is now.  A kernel that publishes faults
 * once per scan pass (a 32 GiB VM: 128 s at the default 256 MiB a second) makes the last pass's
 * faults the window.  The figure is given only when at least DAEMON_FAULT_MIN_PAGES (64) new faults
 * came in the last batch and that batch is no older than DAEMON_FAULT_STALE_S (30 s) or twice the
 * scan pass (pass_s, the engine's estimate; 0 when it has none): a figure nobody measures now is
 * not shown as current.  *age_s gets the seconds since the last new fault (-1: none seen yet);
 * returns the share, or -1 when there is none to give.
 */
#define DAEMON_FAULT_HALF_LIFE_S 10.0
#define DAEMON_FAULT_MIN_PAGES   64.0
#define DAEMON_FAULT_STALE_S     30.0
double daemon_fault_locality(const struct dvm *v, double now_s, double pass_s, double *age_s);

/* Open the host backend d->simulate names (the simulator or this Linux machine). */
int daemon_host_open(struct daemon *d, char *err, size_t errlen);
/*
 * Read the state file into d->state (the lock held): a file vnumad cannot use is set aside
 * with a warning naming where it went (state_load_or_set_aside) and never stops a start.
 */
void daemon_state_load(struct daemon *d);
/*
 * What a configuration needs of this host that config_load cannot tell: control_group names
 * a group.  0, or -ENOENT with "FILE:LINE: message" in err.
 */
int daemon_config_check(const struct config *cfg, char *err, size_t errlen);
/*
 * Set up from an already parsed config: lock, host backend, engine, socket, then the state
 * file.  On failure the state file has not been read, nor changed.
 */
int daemon_init(struct daemon *d, char *err, size_t errlen);
/* Run until SIGTERM/SIGINT (d->stop). */
int daemon_run(struct daemon *d);
/*
 * Orderly stop: restore (the vCPUs with restore_on_exit, the kernel's scan tunables always;
 * only after a daemon_init that succeeded), close the socket, free everything.
 */
void daemon_fini(struct daemon *d);
/*
 * Put back every vCPU affinity recorded in the state file (actions_put_back) and save it.  An
 * entry is forgotten when its vCPU is back or gone (VM or vCPU no longer there, -ESRCH,
 * -ENOENT); one whose pin failed otherwise stays in d->state and the file, reported, for the
 * next restore.  Returns how many were put back, or -errno when the host cannot be observed.
 */
int daemon_restore(struct daemon *d);

/* One observe-decide-act-record round. */
int daemon_round(struct daemon *d);
double daemon_wall_s(void);
struct dvm *daemon_vm(struct daemon *d, int id);
const struct snap_vm *daemon_snap_vm(const struct daemon *d, const char *name_or_id);
/* Record an event and send it to `events --follow` clients. */
void daemon_event(struct daemon *d, int vm_id, const char *vm, const char *kind, const char *rule,
                  double gain, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* Re-read the config; 0, or -EINVAL with every error in err (the old config stays). */
int daemon_reload(struct daemon *d, char *err, size_t errlen);
const char *daemon_vm_mode_name(const struct daemon *d, const struct snap_vm *vm);

/* agent/actions.c: the privileged-actions module. */
void actions_apply(struct daemon *d, const struct plan *plan);
int actions_pin(struct daemon *d, const struct snap_vm *vm, int vcpu, uint64_t nodes,
                const char *rule, const char *why);
/*
 * Pin vm's vcpu back to orig_nodes, the affinity recorded before vnumad first pinned it
 * (NODEMASK_ALL: every node).  A mask with nodes this host does not have (recorded on another
 * topology) puts it on every node instead, with a warning (rate-limited per VM), and *widened.  0,
 * or the host's -errno (-ESRCH/-ENOENT: the VM or vCPU is gone).  The caller forgets or keeps the
 * entry.
 */
int actions_put_back(struct daemon *d, const struct snap_vm *vm, int vcpu, uint64_t orig_nodes,
                     bool *widened);

/* agent/handlers.c: the control commands. */
extern const struct control_command daemon_commands[];

#endif

/*
 * host.h - the seam between the agent and a machine (STYLE: chrony's driver table).
 *
 * Every backend - `sim` (the simulated host), `linux` (procfs, sysfs, syscalls) and later
 * `libvirt` - implements struct host_ops.  The agent observes through snapshot(), acts only
 * through the privileged-actions module (agent/actions.c), which calls the primitive actions
 * here after checking each request.  Backends embed struct host as their first member.
 *
 * Errors: 0 or -errno.  -ESRCH/-ENOENT mean the VM or thread just went away: routine.
 */
#ifndef VNUMAD_HOST_HOST_H
#define VNUMAD_HOST_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/sim/scenario.h"
#include "policy/model.h"
#include "policy/scan_control.h"

struct host;

/* What one snapshot cost the host to observe (host_ops.observe_cost). */
struct host_observe_cost {
	uint64_t opens; /* files and directories opened */
	uint64_t reads; /* read and pread calls */
	double ms;      /* wall-clock time of the snapshot */
	int kept_fds;   /* files kept open between snapshots */
	/*
	 * Adaptive observation (a host that reads a settled VM less often; 0 elsewhere): the VMs
	 * the snapshot read and carried, the CPU cap and the CPU used over the last window
	 * (percent of one CPU; cpu_percent < 0: no full window yet), and counters since the host
	 * opened: CPU ms observing, VMs read, carried, deferred (due but over the budget), and
	 * snapshots that read a VM over the cap (one not read for too long).
	 */
	size_t vms_read, vms_carried;
	double cpu_cap_percent, cpu_percent;
	double cpu_ms_total;
	uint64_t reads_total, carried_total, deferred_total, over_cap_total;
	/*
	 * numa_maps walks since the host opened (the only reads that hold a guest's mmap lock
	 * for long; docs/linux-host.md): how many, the longest one's wall-clock time, ms, how many
	 * took over LINUX_RESIDENCY_WALK_HOLD_MS, and first walks skipped for their cost.
	 */
	uint64_t walks_total, walks_over_hold_total, walks_skipped_total;
	double walk_max_ms;
};

struct host_ops {
	const char *name; /* "sim", "linux", "libvirt" */
	void (*close)(struct host *h);
	/* The host clock in seconds (the simulated clock for sim). */
	double (*now)(struct host *h);
	/*
	 * Let host time pass up to until_s.  Real hosts: nothing to do (time passes by itself).
	 * The simulator runs its model, stopping early when VMs arrive: returns 1 then (the
	 * agent should run a round at once), else 0.  It also stops after a bounded wall-clock
	 * time (host/sim/sim_host.c), returning 0 with now() short of until_s: a model slower
	 * than the agent's speed lags behind instead of keeping the agent from its socket.
	 */
	int (*advance)(struct host *h, double until_s);
	int (*snapshot)(struct host *h, struct snapshot **out);
	int (*pin_vcpu)(struct host *h, int vm_id, int vcpu, uint64_t nodes);
	int (*bind_memory)(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib,
	                   uint64_t nodes);
	int (*move_memory)(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib,
	                   int from_node, int to_node, uint64_t mib);
	int (*set_sampling)(struct host *h, int vm_id, double scan_mib_s);
	/* End of a round's actions (the simulator lets arrived guests boot now). */
	void (*commit)(struct host *h);
	/*
	 * The daemon puts back what it changed (an orderly stop with restore_on_exit, `vnumad
	 * --restore`): settings the host changed on its own to carry out the daemon's actions
	 * (libvirt: domains' live memory nodes, host/libvirt/lv_mems.h).  NULL op: none.
	 */
	void (*put_back)(struct host *h);
	/* Where a VM's access data comes from: "fault-stats" or "placement-only", and why. */
	const char *(*sampling_source)(struct host *h, int vm_id, const char **reason);
	/*
	 * Store a VM's policy with the VM (libvirt: the domain's metadata), in its live and/or
	 * persistent definition; NULL op: the host keeps no policies.
	 */
	int (*policy_persist)(struct host *h, int vm_id, const char *policy_xml, bool live,
	                      bool config);
	/*
	 * Read back the policy stored with a VM (libvirt: the element in the metadata of its live
	 * definition, or with config its persistent one): *xml malloc'd, NULL when none is stored.
	 * What `vnumactl policy --live/--config` merges its changes onto.  NULL op: none stored.
	 */
	int (*policy_fetch)(struct host *h, int vm_id, bool config, char **xml);
	/*
	 * What keeps the host from acting on a VM as it should, in one line for `vnumactl vminfo`
	 * ("" when nothing does), e.g. its guest cells' RAM not located, so none of it moves.
	 * NULL op: nothing ever does.
	 */
	const char *(*vm_note)(struct host *h, int vm_id);
	/* What the host can measure and do, in one line for `vnumactl status`; NULL: nothing. */
	const char *(*describe)(struct host *h);
	/*
	 * What observing cost in the last snapshot (files opened, read calls, wall-clock ms) for
	 * `vnumactl status`; -ENODATA before the first one.  NULL op: not measured.
	 */
	int (*observe_cost)(struct host *h, struct host_observe_cost *out);
	/*
	 * How soon advance() wants to be called again, seconds (a real host's migrator ticks
	 * there); <= 0 or a NULL op: no wish, the daemon wakes for its own rounds only.
	 */
	double (*wake_s)(struct host *h);
	/*
	 * The agent changed what a VM may do (pinned a vCPU elsewhere, queued a memory move):
	 * a host that reads settled VMs less often reads this one every snapshot again for a
	 * while (host/linux/observe_plan.h).  NULL op: every VM is read every snapshot anyway.
	 */
	void (*watch_vm)(struct host *h, int vm_id);
	/*
	 * The kernel's host-wide NUMA scan tunables (lever HOST_CAP_SCAN_TUNABLES, policy/
	 * scan_control.h), probed afresh: 0 with the current values in *out when vnumad may write
	 * them; else -EOPNOTSUPP (the backend has no such lever: the simulator, which does not
	 * model the kernel's scanner), -ENOENT (the kernel has none) or another -errno (they are
	 * there but refused), with *why saying so in words ("" on 0).
	 */
	int (*scan_tunables_get)(struct host *h, struct scan_tunables *out, const char **why);
	/* Write all four; 0 or -errno (-EOPNOTSUPP as above). */
	int (*scan_tunables_set)(struct host *h, const struct scan_tunables *t);
	/*
	 * The capability probe (policy/model.h struct host_lever): each lever present, absent or
	 * refused, with the reason, into out[HOST_LEVER_NR], as of the host's last probe, so that
	 * present agrees with the caps of a snapshot taken now.  NULL op: host_levers_get derives
	 * them from the snapshot's caps.
	 */
	void (*levers)(struct host *h, struct host_lever *out);
};

struct host {
	const struct host_ops *ops;
};

/* h's levers into out[HOST_LEVER_NR]: its levers op, or what caps (of its snapshot) say. */
static inline void
host_levers_get(struct host *h, unsigned caps, struct host_lever *out)
{
	if (h->ops->levers != NULL)
		h->ops->levers(h, out);
	else
		host_levers_from_caps(caps, out);
}

/*
 * The simulated host: scenario is a JSON file path, or NULL/"default" for the built-in one;
 * profile (host/sim/sim.h) says which levers and sensing it has, as the real host it stands
 * for: the others answer -EOPNOTSUPP as that host does.  0 or -errno with a message in err.
 */
int host_sim_open(const char *scenario, enum sim_profile profile, struct host **out, char *err,
                  size_t errlen);
/*
 * For tests: the wall-clock milliseconds one advance() of the simulated host h may step its
 * model for (default 100; 0: one tick per call).  h must come from host_sim_open().
 */
void host_sim_set_budget(struct host *h, double budget_ms);
/*
 * The Linux host (host/linux/linux_host.c): root NULL or "/" is this machine; another
 * directory is a captured tree, observed but never acted on (-EROFS).  rate_mib_s caps page
 * migration host-wide.  0 or -errno with a message in err.
 */
int host_linux_open(const char *root, double rate_mib_s, struct host **out, char *err,
                    size_t errlen);
/*
 * The CPU cap on observing of a Linux host h (host_linux_open), percent of one CPU; <= 0: no
 * cap (host/linux/observe_plan.h; default LINUX_OBSERVE_CPU_CAP_PERCENT).
 */
void host_linux_set_observe_cap(struct host *h, double percent);
/*
 * The libvirt host (host/libvirt/libvirt_host.c) over inner, a Linux host that it owns from
 * now on (closed with it): libvirt for the inventory, policies, guest cells and vCPU pins of
 * its domains, inner for the rest.  uri NULL = qemu:///system.  0 or -errno with err; inner
 * is closed on failure too.
 */
int host_libvirt_open(const char *uri, struct host *inner, struct host **out, char *err,
                      size_t errlen);
/*
 * host_libvirt_open, from the module vnumad-libvirt.so (host/module.h, module_load.c), so that
 * a daemon without --connect never loads libvirt.  The same contract; in addition -ENOENT
 * when the module is not installed, -ELIBACC when it cannot be loaded (libvirt's library
 * missing) and -ELIBBAD when it was built from other sources, each with a message in err.
 */
int host_libvirt_module_open(const char *uri, struct host *inner, struct host **out, char *err,
                             size_t errlen);

#endif

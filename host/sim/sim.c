/*
 * sim.c - the simulated host's main loop: VMs arrive and leave, the balancer is called with
 * snapshots and its plans are applied, vCPUs do work whose speed depends on where their
 * memory sits, and the metrics of BRIEF section 4.3 are gathered.
 */
#include "host/sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/sim/peers.h"
#include "host/sim/sim_internal.h"

#define SIM_VM_ID_BASE        1000   /* snapshot VM ids: SIM_VM_ID_BASE + scenario index */
#define SIM_TID_BASE          100000 /* synthetic thread ids of vCPUs */
#define SIM_CONVERGE_WINDOW_S 10.0
#define SIM_CONVERGE_TAIL_S   60.0
#define SIM_CONVERGE_TOL      0.05
/* A booted guest's least uptime in a snapshot, s: the Linux host's clamp (linux_host.c). */
#define SIM_MIN_UPTIME_S 0.001

static uint64_t
sim_all_nodes(const struct sim *sim)
{
	return nodemask_all_of(sim->nr_nodes);
}

/* ---- host profiles -------------------------------------------------------------------- */

static const char *const sim_profile_names[SIM_PROFILE_NR] = {"linux", "libvirt", "ideal"};

/*
 * linux: pins (sched_setaffinity) and move_pages are the levers `vnumad --host linux` has;
 * the kernel's NUMA balancing must run for hinting faults, and /proc/PID/task/TID/sched shows
 * numa_faults as task_numa_placement() folds them in, once per scan pass.  libvirt: the
 * same today (libvirt's vCPU pinning is a pin).  ideal: every lever, live counters.
 */
static const unsigned sim_profile_caps_table[SIM_PROFILE_NR] = {
    [SIM_PROFILE_LINUX] =
        HOST_CAP_PIN | HOST_CAP_MOVE_PAGES | HOST_CAP_KERNEL_BALANCING | HOST_CAP_FAULTS_PER_PASS,
    [SIM_PROFILE_LIBVIRT] =
        HOST_CAP_PIN | HOST_CAP_MOVE_PAGES | HOST_CAP_KERNEL_BALANCING | HOST_CAP_FAULTS_PER_PASS,
    [SIM_PROFILE_IDEAL] = HOST_CAPS_LEVERS,
};

int
sim_profile_parse(const char *name, enum sim_profile *out, char *err, size_t errlen)
{
	for (int i = 0; i < SIM_PROFILE_NR; i++) {
		if (name != NULL && strcmp(name, sim_profile_names[i]) == 0) {
			*out = (enum sim_profile)i;
			return 0;
		}
	}
	snprintf(err, errlen, "unknown host profile '%s' (valid: linux, libvirt, ideal)",
	         name != NULL ? name : "");
	return -EINVAL;
}

const char *
sim_profile_name(enum sim_profile profile)
{
	return profile >= 0 && profile < SIM_PROFILE_NR ? sim_profile_names[profile] : "?";
}

unsigned
sim_profile_caps(enum sim_profile profile)
{
	return profile >= 0 && profile < SIM_PROFILE_NR ? sim_profile_caps_table[profile] : 0;
}

/*
 * What this run's balancer has: the profile's levers and sensing, except that the oracle is
 * a hard binding with every lever (the yardstick), `none` is NUMA-blind (the kernel's
 * balancing off), and libvirt's placement='auto' binds at domain start through numatune, a
 * lever libvirt has on every host.  The kernel's model runs beside every other balancer
 * when the profile has it; `autonuma` is the kernel itself.
 */
static unsigned
sim_balancer_caps(const struct scenario *scn, const struct balancer_ops *bal)
{
	unsigned caps = sim_profile_caps(scn->host_profile);

	if (bal->host_flags & BALANCER_FULL_KNOWLEDGE)
		return HOST_CAPS_LEVERS;
	if (bal->host_flags & BALANCER_NUMA_BLIND)
		caps &= ~HOST_CAP_KERNEL_BALANCING;
	if (bal->host_flags & BALANCER_LIBVIRT_PLACEMENT)
		caps |= HOST_CAP_BIND_AT_START;
	return caps;
}

static void
sim_kernel_setup(struct sim *sim, const struct balancer_ops *bal)
{
	struct balancer_args args = {.seed = sim->scn->seed ^ 0x6b65726eULL};

	sim->kernel_numa = (bal->host_flags & BALANCER_HOST_KERNEL_NUMA) != 0;
	plan_init(&sim->kplan);
	if (!(sim->caps & HOST_CAP_KERNEL_BALANCING) || sim->kernel_numa)
		return;
	sim->kernel = &peer_autonuma_ops;
	sim->kernel_state = sim->kernel->create ? sim->kernel->create(&args) : NULL;
	sim->kernel_numa = true;
}

struct sim *
sim_new(const struct scenario *scn, const struct balancer_ops *bal, char *err, size_t errlen)
{
	struct sim *sim = xcalloc(1, sizeof(*sim));
	struct balancer_args args = {.seed = scn->seed, .knowledge = scn};
	uint64_t mem_mib = (uint64_t)(scn->host.memory_per_node_gib * 1024.0);
	int tid = SIM_TID_BASE;

	if (topology_new_uniform(scn->host.nodes, scn->host.cpus_per_node, mem_mib,
	                         scn->host.distances, &sim->topo, err, errlen) < 0) {
		free(sim);
		return NULL;
	}
	sim->scn = scn;
	sim->bal = bal;
	sim->nr_nodes = sim->topo->nr_nodes;
	util_rng_seed(&sim->rng, scn->seed, 0x5eed);
	sim->node_used_mib = xcalloc((size_t)sim->nr_nodes, sizeof(uint64_t));
	sim->node_traffic_mib = xcalloc((size_t)sim->nr_nodes, sizeof(double));
	sim->node_bw_factor = xcalloc((size_t)sim->nr_nodes, sizeof(double));
	for (int n = 0; n < sim->nr_nodes; n++)
		sim->node_bw_factor[n] = 1.0;
	sim->nr_vms = scn->nr_vms;
	sim->vms = xcalloc((size_t)scn->nr_vms, sizeof(*sim->vms));
	for (int i = 0; i < scn->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		vm->scn = &scn->vms[i];
		vm->id = SIM_VM_ID_BASE + i;
		vm->tid_base = tid;
		tid += vm->scn->vcpus + 16;
		vm->nr_vcpus = vm->scn->vcpus;
		vm->util = vm->scn->workload == SCN_WORKLOAD_IDLE ? SIM_IDLE_UTIL : vm->scn->util;
		vm->vcpus = xcalloc((size_t)vm->nr_vcpus, sizeof(*vm->vcpus));
		for (int v = 0; v < vm->nr_vcpus; v++) {
			vm->vcpus[v].faults = xcalloc(2 * (size_t)sim->nr_nodes, sizeof(uint64_t));
			vm->vcpus[v].faults_buf =
			    xcalloc(2 * (size_t)sim->nr_nodes, sizeof(uint64_t));
			vm->vcpus[v].allowed = sim_all_nodes(sim);
			vm->vcpus[v].preferred = -1;
		}
		sim_resid_vm_init(sim, i);
	}
	plan_init(&sim->plan);
	sim->profile = scn->host_profile;
	sim->caps = sim_balancer_caps(scn, bal);
	sim->sense_resid =
	    (bal->host_flags & BALANCER_HOST_RESIDENCY) != 0 && sim->profile != SIM_PROFILE_IDEAL;
	sim_kernel_setup(sim, bal);
	sim->started = scn->balancer_start_s <= 0 || (bal->host_flags & BALANCER_FULL_KNOWLEDGE);
	sim->bal_state = bal->create ? bal->create(&args) : NULL;
	return sim;
}

void
sim_free(struct sim *sim)
{
	if (sim == NULL)
		return;
	if (sim->bal->destroy)
		sim->bal->destroy(sim->bal_state);
	if (sim->kernel != NULL && sim->kernel->destroy)
		sim->kernel->destroy(sim->kernel_state);
	plan_free(&sim->kplan);
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		if (vm->region_node)
			sim_vm_memory_free(sim, vm);
		for (int v = 0; v < vm->nr_vcpus; v++) {
			free(vm->vcpus[v].faults);
			free(vm->vcpus[v].faults_buf);
		}
		free(vm->vcpus);
	}
	free(sim->vms);
	free(sim->node_used_mib);
	free(sim->node_traffic_mib);
	free(sim->node_bw_factor);
	free(sim->moves);
	free(sim->series);
	free(sim->mig_series);
	plan_free(&sim->plan);
	topology_free(sim->topo);
	free(sim);
}

double
sim_now(const struct sim *sim)
{
	return sim->now_s;
}

unsigned
sim_caps(const struct sim *sim)
{
	return sim->caps;
}

/*
 * VM idx as a balancer sees it.  kernel: the view of the kernel's balancing beside the
 * balancer, whose feedback is its own migrate-on-fault, not the balancer's moves.
 */
static void
sim_snapshot_vm(struct sim *sim, int idx, struct snap_vm *svm, bool kernel)
{
	struct sim_vm *vm = &sim->vms[idx];
	const struct scn_vm *scv = vm->scn;
	size_t fbytes = 2 * (size_t)sim->nr_nodes * sizeof(uint64_t);
	double acc_gib = 0;

	svm->id = vm->id;
	snprintf(svm->name, sizeof(svm->name), "%s", scv->name);
	/*
	 * A guest that has not booted yet has touched nothing: uptime 0.  One that has is at least
	 * SIM_MIN_UPTIME_S old, as the Linux host clamps it: a balancer learns of a booted VM.
	 */
	svm->uptime_s = vm->touched ? fmax(sim->now_s - vm->start_s, SIM_MIN_UPTIME_S) : 0;
	svm->mem_mib = (uint64_t)vm->nr_regions * SIM_REGION_MIB;
	sim_resid_fill(sim, idx, svm, !kernel);
	for (int v = 0; v < vm->nr_vcpus; v++) {
		struct snap_vcpu *sc = &svm->vcpus[v];
		struct sim_vcpu *vc = &vm->vcpus[v];

		sc->tid = vm->tid_base + v;
		sc->node = vc->node;
		sc->cpu = sim_vcpu_cpu(sim, vc->node, idx, v);
		sc->allowed_nodes = vc->allowed;
		sc->cpu_use = vc->cpu_use;
		memcpy((void *)sc->faults_private, vc->faults, fbytes);
	}
	snapshot_vm_set_cells(svm, scv->nr_cells);
	for (int c = 0; c < scv->nr_cells; c++) {
		svm->cells[c].mem_start_mib = (uint64_t)(acc_gib * 1024.0);
		svm->cells[c].mem_mib = (uint64_t)(scv->cells[c].memory_gib * 1024.0);
		acc_gib += scv->cells[c].memory_gib;
		for (int i = 0; i < scv->cells[c].nr_vcpus; i++)
			svm->vcpu_cell[scv->cells[c].vcpus[i]] = c;
	}
	sim_resid_cells_fill(sim, idx, svm, !kernel);
	svm->policy = scv->policy;
	svm->policy_set = scv->policy_xml != NULL;
	svm->policy_ok = true;
	if (kernel) {
		svm->mig_done_mib = vm->kmig_done_mib;
		svm->mig_failed_mib = vm->kmig_failed_mib;
		vm->kmig_done_mib = vm->kmig_failed_mib = 0;
		return;
	}
	svm->mig_done_mib = vm->mig_done_mib;
	svm->mig_failed_mib = vm->mig_failed_mib;
	vm->mig_done_mib = vm->mig_failed_mib = 0;
	/* The kernel's moves beside the balancer, as its threads' sched files count them. */
	svm->kernel_moved_known = (sim->caps & HOST_CAP_KERNEL_BALANCING) != 0;
	svm->kernel_moved_kib = svm->kernel_moved_known ? vm->audit_kernel_migrated_mib * 1024 : 0;
	svm->mig_pending_mib = 0;
	for (size_t i = 0; i < sim->nr_moves; i++)
		if (sim->moves[i].vm == idx)
			svm->mig_pending_mib += sim->moves[i].left_mib;
}

static struct snapshot *
sim_snapshot_view(struct sim *sim, bool kernel)
{
	int nr = 0, *vcpus = xcalloc((size_t)sim->nr_vms + 1, sizeof(int)), k = 0;
	struct snapshot *snap;

	for (int i = 0; i < sim->nr_vms; i++)
		if (sim->vms[i].running)
			vcpus[nr++] = sim->vms[i].nr_vcpus;
	snap = snapshot_new(sim->nr_nodes, sim->topo->nr_cpus, nr, vcpus);
	free(vcpus);
	snap->now_s = sim->now_s;
	snap->caps = kernel ? sim->caps | HOST_CAP_VM_SAMPLING : sim->caps;
	if (!kernel)
		sim_resid_round(sim);
	for (int n = 0; n < sim->nr_nodes; n++) {
		uint64_t total = sim->topo->nodes[n].mem_mib;

		snap->nodes[n].id = sim->topo->nodes[n].id;
		snap->nodes[n].nr_cpus = sim->topo->nodes[n].nr_cpus;
		snap->nodes[n].mem_total_mib = total;
		snap->nodes[n].mem_free_mib =
		    sim->node_used_mib[n] < total ? total - sim->node_used_mib[n] : 0;
		for (int m = 0; m < sim->nr_nodes; m++)
			snap->distance[n * sim->nr_nodes + m] = topology_distance(sim->topo, n, m);
	}
	for (int c = 0; c < sim->topo->nr_cpus; c++)
		snap->cpu_node[c] = sim->topo->cpu_node[c];
	for (int i = 0; i < sim->nr_vms; i++)
		if (sim->vms[i].running)
			sim_snapshot_vm(sim, i, &snap->vms[k++], kernel);
	return snap;
}

struct snapshot *
sim_snapshot(struct sim *sim)
{
	return sim_snapshot_view(sim, false);
}

static int
sim_vm_by_id(const struct sim *sim, int id)
{
	int idx = id - SIM_VM_ID_BASE;

	if (idx < 0 || idx >= sim->nr_vms || !sim->vms[idx].running)
		return -1;
	return idx;
}

/*
 * Ground-truth policy audit: an action on a VM whose policy mode is not auto, or one that
 * reaches outside the VM's allowed nodes (NODEMASK_ALL, an unpin, is not "outside").
 */
static void
sim_policy_check(struct sim *sim, int idx, uint64_t nodes)
{
	const struct vm_policy *pol = &sim->vms[idx].scn->policy;
	uint64_t allowed = pol->nodes & sim_all_nodes(sim);

	if (pol->mode != VM_POLICY_MODE_AUTO)
		sim->policy_mode_actions++;
	if (nodes != NODEMASK_ALL && (nodes & ~allowed & sim_all_nodes(sim)) != 0)
		sim->policy_node_violations++;
}

/* A balancer action moved a vCPU to another node (changed = it really changed node). */
static void
sim_vcpu_moved(struct sim *sim, struct sim_vcpu *vc, bool changed)
{
	if (!changed)
		return;
	vc->node_changes++;
	if (vc->node_changes > sim->max_vcpu_node_changes)
		sim->max_vcpu_node_changes = vc->node_changes;
}

/*
 * The kernel's task move (autonuma's plan, or the kernel beside a balancer, which the
 * audits of the balancer's own actions do not count): within the thread's affinity only.
 */
static void
sim_apply_kernel_move(struct sim *sim, int idx, struct sim_vcpu *vc, const struct plan_pin *pin,
                      bool beside)
{
	if (!beside)
		sim_policy_check(sim, idx, pin->to_node >= 0 ? nodemask_of(pin->to_node) : 0);
	if (pin->to_node < 0 || pin->to_node >= sim->nr_nodes ||
	    !nodemask_test(vc->allowed, pin->to_node))
		return;
	if (vc->node != pin->to_node) {
		sim->vcpu_moves++; /* the kernel moved a task across nodes */
		if (beside)
			sim->kernel_vcpu_moves++;
	}
	if (!beside)
		sim_vcpu_moved(sim, vc, vc->node != pin->to_node);
	vc->node = pin->to_node;
	vc->preferred = pin->to_node;
}

static void
sim_apply_pin(struct sim *sim, const struct plan_pin *pin, bool beside)
{
	int idx = sim_vm_by_id(sim, pin->vm_id);
	struct sim_vcpu *vc;
	uint64_t mask;

	if (idx < 0 || pin->vcpu < 0 || pin->vcpu >= sim->vms[idx].nr_vcpus)
		return;
	vc = &sim->vms[idx].vcpus[pin->vcpu];
	if (pin->kind == PLAN_PIN_KERNEL_MOVE) {
		sim_apply_kernel_move(sim, idx, vc, pin, beside);
		return;
	}
	if (beside)
		return; /* the kernel never changes a thread's affinity */
	sim_policy_check(sim, idx, pin->nodes);
	mask = pin->nodes & sim_all_nodes(sim);
	if (mask == 0)
		return;
	if (mask != vc->allowed)
		sim->vcpu_moves++;
	vc->allowed = mask;
	vc->preferred = -1;
	if (!nodemask_test(mask, vc->node)) {
		vc->node = sim_sched_least_loaded(sim, mask);
		sim_vcpu_moved(sim, vc, true);
	}
}

int
sim_lever_check(const struct sim *sim, unsigned cap, int vm_id)
{
	int idx = sim_vm_by_id(sim, vm_id);

	if (cap == HOST_CAP_BIND_LIVE)
		return (sim->caps & HOST_CAP_BIND_LIVE) || ((sim->caps & HOST_CAP_BIND_AT_START) &&
		                                            idx >= 0 && !sim->vms[idx].touched)
		           ? 0
		           : -EOPNOTSUPP;
	return (sim->caps & cap) == cap ? 0 : -EOPNOTSUPP;
}

static void
sim_apply_bind(struct sim *sim, const struct plan_mem_bind *b)
{
	int idx = sim_vm_by_id(sim, b->vm_id);
	struct sim_vm *vm;
	struct sim_bind *nb;
	uint64_t end;

	if (idx < 0 || (b->nodes & sim_all_nodes(sim)) == 0)
		return;
	if (sim_lever_check(sim, HOST_CAP_BIND_LIVE, b->vm_id) < 0) {
		sim->binds_refused++; /* -EOPNOTSUPP on the profile's real host */
		return;
	}
	sim_policy_check(sim, idx, b->nodes);
	vm = &sim->vms[idx];
	end = b->len_mib ? (b->start_mib + b->len_mib) / SIM_REGION_MIB : vm->nr_regions;
	vm->binds = xreallocarray(vm->binds, (size_t)vm->nr_binds + 1, sizeof(*vm->binds));
	nb = &vm->binds[vm->nr_binds++];
	nb->first_region = (uint32_t)(b->start_mib / SIM_REGION_MIB);
	nb->end_region = (uint32_t)(end > vm->nr_regions ? vm->nr_regions : end);
	nb->nodes = b->nodes & sim_all_nodes(sim);
}

/*
 * Apply a plan.  beside: the plan of the kernel's balancing beside the balancer (task moves
 * and its own scan rate only).  The balancer's binds and sampling changes that the profile
 * does not have are refused and counted, as a real host answers them with -EOPNOTSUPP.
 */
static void
sim_apply_plan(struct sim *sim, const struct plan *plan, bool beside)
{
	/* The kernel sets its own scan rate: beside a balancer, or as the autonuma model. */
	bool kernel_rate = beside || (sim->kernel_numa && sim->kernel == NULL);

	for (size_t i = 0; i < plan->nr_pins; i++)
		sim_apply_pin(sim, &plan->pins[i], beside);
	for (size_t i = 0; i < plan->nr_samplings; i++) {
		int idx = sim_vm_by_id(sim, plan->samplings[i].vm_id);
		double s = plan->samplings[i].scan_mib_s;

		if (idx < 0 || !(s >= 0) || !isfinite(s))
			continue;
		if (!kernel_rate && !(sim->caps & HOST_CAP_VM_SAMPLING)) {
			sim->samplings_refused++;
			continue;
		}
		sim->vms[idx].scan_mib_s = s;
	}
	if (beside)
		return;
	for (size_t i = 0; i < plan->nr_binds; i++)
		sim_apply_bind(sim, &plan->binds[i]);
	for (size_t i = 0; i < plan->nr_moves; i++) {
		int idx = sim_vm_by_id(sim, plan->moves[i].vm_id);

		if (idx < 0)
			continue;
		sim_policy_check(sim, idx,
		                 plan->moves[i].to_node >= 0 && plan->moves[i].to_node < 64
		                     ? nodemask_of(plan->moves[i].to_node)
		                     : 0);
		sim_move_enqueue(sim, idx, &plan->moves[i]);
	}
}

static double
sim_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
sim_call_balancer(struct sim *sim)
{
	struct snapshot *snap;
	double t0;
	int rc;

	if (sim->observer != NULL)
		sim->observer(sim->observer_arg, sim);
	snap = sim_snapshot(sim);
	plan_reset(&sim->plan);
	t0 = sim_wall_ns();
	rc = sim->bal->decide ? sim->bal->decide(sim->bal_state, snap, &sim->plan) : 0;
	sim->balancer_ns += sim_wall_ns() - t0;
	sim->calls++;
	snapshot_free(snap);
	if (rc < 0)
		return rc;
	sim_apply_plan(sim, &sim->plan, false);
	sim->next_call_s = sim->now_s + (sim->plan.next_call_s > 0 ? sim->plan.next_call_s : 1.0);
	return 0;
}

static void
sim_departures(struct sim *sim)
{
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		if (vm->running && vm->scn->stop_s >= 0 && sim->now_s >= vm->scn->stop_s - 1e-9) {
			sim_vm_release(sim, vm);
			/* A VM that left never comes back: its memory map goes (a day of churn kept
			 * every departed VM's, 20 KiB per 8 GiB VM). */
			sim_vm_memory_free(sim, vm);
			vm->running = false;
			vm->finished = true;
		}
	}
}

/* A new VM's scan rate: the kernel's beside the balancer, else the balancer's default. */
static double
sim_arrival_scan_mib_s(const struct sim *sim)
{
	if (sim->kernel != NULL)
		return sim->kernel->default_scan_mib_s;
	return sim->started ? sim->bal->default_scan_mib_s : 0;
}

/*
 * The kernel's balancing beside the balancer: the autonuma model with its own view (its
 * feedback is its migrate-on-fault) and its own plan, from t = 0: a distro kernel balances
 * before any balancer is installed.
 */
static int
sim_call_kernel(struct sim *sim)
{
	struct snapshot *snap = sim_snapshot_view(sim, true);
	int rc;

	plan_reset(&sim->kplan);
	rc = sim->kernel->decide ? sim->kernel->decide(sim->kernel_state, snap, &sim->kplan) : 0;
	snapshot_free(snap);
	if (rc < 0)
		return rc;
	sim_apply_plan(sim, &sim->kplan, true);
	sim->kernel_next_s =
	    sim->now_s + (sim->kplan.next_call_s > 0 ? sim->kplan.next_call_s : 1.0);
	return 0;
}

/* Start the VMs due now; returns how many started. */
static int
sim_arrivals_start(struct sim *sim)
{
	int started = 0;

	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		if (vm->running || vm->finished || vm->scn->start_s > sim->now_s + 1e-9)
			continue;
		sim_vm_memory_init(sim, vm);
		vm->running = true;
		vm->start_s = sim->now_s;
		vm->scan_mib_s = sim_arrival_scan_mib_s(sim);
		sim_sched_place_new(sim, vm);
		started++;
	}
	return started;
}

/* First touch of the VMs that arrived at least min_age_s ago and touched nothing yet. */
static void
sim_touch_pending(struct sim *sim, double min_age_s)
{
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		if (vm->running && !vm->touched && sim->now_s - vm->start_s >= min_age_s - 1e-9) {
			sim_vm_first_touch(sim, vm);
			vm->touched = true;
		}
	}
}

static int
sim_arrivals(struct sim *sim)
{
	int rc = 0;

	bool before_touch = (sim->caps & HOST_CAP_BIND_AT_START) != 0;

	if (sim_arrivals_start(sim) == 0)
		return 0;
	/*
	 * A host that can bind before the first touch lets the balancer hear of the new VMs
	 * before their guests touch memory; on any other (a real Linux host) the balancer first
	 * sees a VM that has booted, its RAM where the guest first touched it.
	 */
	if (!before_touch)
		sim_touch_pending(sim, 0);
	if (sim->external) {
		/* An outside agent drives: it gets a chance to act (before the guests boot). */
		sim->arrived = true;
		return 0;
	}
	if (sim->started)
		rc = sim_call_balancer(sim);
	sim_touch_pending(sim, 0);
	return rc;
}

static void
sim_phases(struct sim *sim)
{
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];
		enum scn_workload w = vm->scn->workload;
		int phase;

		if (!vm->running || (w != SCN_WORKLOAD_PHASED && w != SCN_WORKLOAD_ADVERSE))
			continue;
		phase = (int)floor((sim->now_s - vm->start_s) / vm->scn->phase_s + 1e-9);
		if (phase != vm->phase) {
			vm->phase = phase;
			sim_vm_update_slices(sim, vm);
		}
	}
}

/* One vCPU's work this tick; adds its accesses to the locality counters. */
static void
sim_vcpu_work(struct sim *sim, struct sim_vm *vm, int v, double *p)
{
	struct sim_vcpu *vc = &vm->vcpus[v];
	double m = vm->scn->mem_intensity, cost = 0, local, rate, cpu_s, work_s;

	sim_vm_access_dist(sim, vm, v, p);
	if (vm->allocated == 0) {
		cost = 1.0;
		local = 1.0;
	} else {
		for (int n = 0; n < sim->nr_nodes; n++)
			cost += p[n] * topology_distance(sim->topo, vc->node, n) / 10.0 *
			        sim->node_bw_factor[n];
		local = p[vc->node];
	}
	cpu_s = vc->share * vm->util * SIM_TICK_S;
	/* Sampling costs come out of the vCPU's CPU time before any guest work. */
	work_s = cpu_s - vc->cost_acc_s;
	if (work_s < 0) {
		vc->cost_acc_s = -work_s;
		work_s = 0;
	} else {
		vc->cost_acc_s = 0;
	}
	rate = 1.0 / ((1.0 - m) + m * cost);
	vc->rate = cpu_s / SIM_TICK_S * rate;
	vc->cpu_acc_s += cpu_s;
	sim->work += work_s * rate;
	sim->acc_local += work_s * rate * local;
	sim->acc_total += work_s * rate;
	sim->sec_local += work_s * rate * local;
	sim->sec_total += work_s * rate;
}

static void
sim_work_tick(struct sim *sim)
{
	double p[UTIL_MAX_NODES];

	sim_sched_shares(sim);
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		for (int v = 0; vm->running && v < vm->nr_vcpus; v++)
			sim_vcpu_work(sim, vm, v, p);
	}
}

static void sim_sample_reset(struct sim *sim);

static void
sim_sample_push(struct sim *sim)
{
	if (sim->external) { /* a daemon's host runs for ever: keep no series */
		sim_sample_reset(sim);
		return;
	}
	if (sim->nr_samples >= sim->cap_samples) {
		sim->cap_samples = sim->cap_samples ? sim->cap_samples * 2 : 1024;
		sim->series = xreallocarray(sim->series, (size_t)sim->cap_samples, sizeof(double));
		sim->mig_series =
		    xreallocarray(sim->mig_series, (size_t)sim->cap_samples, sizeof(double));
	}
	sim->series[sim->nr_samples] = sim->sec_total > 0 ? sim->sec_local / sim->sec_total : -1;
	sim->mig_series[sim->nr_samples] = sim->sec_migrated_mib / SIM_SAMPLE_PERIOD_S;
	if (sim->mig_series[sim->nr_samples] > sim->max_mig_mib_s)
		sim->max_mig_mib_s = sim->mig_series[sim->nr_samples];
	sim->nr_samples++;
	sim_sample_reset(sim);
}

/* Start a new sample second: CPU use of the one that ended, counters cleared. */
static void
sim_sample_reset(struct sim *sim)
{
	sim->sec_local = sim->sec_total = sim->sec_migrated_mib = 0;
	for (int i = 0; i < sim->nr_vms; i++) {
		struct sim_vm *vm = &sim->vms[i];

		for (int v = 0; v < vm->nr_vcpus; v++) {
			vm->vcpus[v].cpu_use = vm->vcpus[v].cpu_acc_s / SIM_SAMPLE_PERIOD_S;
			vm->vcpus[v].cpu_acc_s = 0;
		}
	}
}

static void
sim_account_tick(struct sim *sim)
{
	for (int n = 0; n < sim->nr_nodes; n++) {
		double fill = (double)sim->node_used_mib[n] / (double)sim->topo->nodes[n].mem_mib;

		if (fill > sim->max_fill)
			sim->max_fill = fill;
		if ((sim->dest_nodes_tick >> n & 1) && fill > sim->max_dest_fill)
			sim->max_dest_fill = fill;
		sim->node_bw_factor[n] =
		    1.0 + sim->node_traffic_mib[n] / SIM_TICK_S / SIM_NODE_BW_MIB_S;
		sim->node_traffic_mib[n] = 0;
	}
	sim->dest_nodes_tick = 0;
	sim->tick++;
	sim->now_s = (double)sim->tick * SIM_TICK_S;
	if (fmod(sim->now_s + 1e-9, SIM_SAMPLE_PERIOD_S) < 1e-6)
		sim_sample_push(sim);
}

/* The balancer starts now: the kernel side it relies on (sampling) starts with it. */
static void
sim_balancer_start(struct sim *sim)
{
	sim->started = true;
	sim->next_call_s = sim->now_s;
	if (sim->kernel != NULL)
		return; /* the kernel beside it has scanned since t = 0, at its own rate */
	for (int i = 0; i < sim->nr_vms; i++)
		if (sim->vms[i].running)
			sim->vms[i].scan_mib_s = sim->bal->default_scan_mib_s;
}

int
sim_step(struct sim *sim)
{
	int rc;

	sim_departures(sim);
	if (sim->external) /* a guest that was not acted on boots anyway */
		sim_touch_pending(sim, SIM_EXTERNAL_BOOT_S);
	if (!sim->started && sim->now_s >= sim->scn->balancer_start_s - 1e-9)
		sim_balancer_start(sim);
	rc = sim_arrivals(sim);
	if (rc == 0 && sim->kernel != NULL && sim->now_s >= sim->kernel_next_s - 1e-9)
		rc = sim_call_kernel(sim);
	if (rc == 0 && !sim->external && sim->started && sim->now_s >= sim->next_call_s - 1e-9)
		rc = sim_call_balancer(sim);
	if (rc < 0)
		return rc;
	sim_phases(sim);
	sim_sched_tick(sim);
	sim_work_tick(sim);
	for (int i = 0; i < sim->nr_vms; i++)
		if (sim->vms[i].running)
			sim_sample_tick(sim, &sim->vms[i]);
	sim_migrate_tick(sim);
	sim_account_tick(sim);
	return 0;
}

double
sim_converge_time(const double *series, int nr, double period_s)
{
	int win = (int)(SIM_CONVERGE_WINDOW_S / period_s),
	    tail = (int)(SIM_CONVERGE_TAIL_S / period_s);
	double sum = 0, target;
	int cnt = 0, last_bad = -1;

	if (win < 1)
		win = 1;
	for (int i = nr - tail < 0 ? 0 : nr - tail; i < nr; i++)
		if (series[i] >= 0) {
			sum += series[i];
			cnt++;
		}
	if (cnt == 0)
		return 0;
	target = sum / cnt;
	for (int i = 0; i < nr; i++) {
		double s = 0;
		int c = 0;

		for (int j = i - win + 1 < 0 ? 0 : i - win + 1; j <= i; j++)
			if (series[j] >= 0) {
				s += series[j];
				c++;
			}
		if (c > 0 && fabs(s / c - target) > SIM_CONVERGE_TOL * target)
			last_bad = i;
	}
	return (last_bad + 1) * period_s;
}

void
sim_result_fill(struct sim *sim, struct sim_result *res)
{
	memset(res, 0, sizeof(*res));
	snprintf(res->policy, sizeof(res->policy), "%s", sim->bal->name);
	res->duration_s = sim->now_s;
	res->locality = sim->acc_total > 0 ? sim->acc_local / sim->acc_total : 0;
	res->throughput = sim->work;
	res->converge_s = sim_converge_time(sim->series, sim->nr_samples, SIM_SAMPLE_PERIOD_S);
	res->converge_after_start_s = res->converge_s - sim->scn->balancer_start_s;
	if (res->converge_after_start_s < 0 || !sim->started)
		res->converge_after_start_s = 0;
	res->migrated_gib = sim->migrated_mib / 1024.0;
	res->vcpu_moves = sim->vcpu_moves;
	res->max_node_fill = sim->max_fill;
	res->max_dest_fill = sim->max_dest_fill;
	res->oom = sim->oom;
	res->balancer_calls = sim->calls;
	res->balancer_ms = sim->calls ? sim->balancer_ns / 1e6 / (double)sim->calls : 0;
	res->migrate_failed_gib = sim->failed_mib / 1024.0;
	res->sampling_cpu_s = sim->sampling_cpu_s;
	res->max_migrate_mib_s = sim->max_mig_mib_s;
	res->node_overfill = sim->node_overfill;
	res->profile = sim->profile;
	res->caps = sim->caps;
	res->binds_refused = sim->binds_refused;
	res->samplings_refused = sim->samplings_refused;
	res->kernel_migrated_gib = sim->kernel_migrated_mib / 1024.0;
	res->kernel_vcpu_moves = sim->kernel_vcpu_moves;
	res->max_vcpu_node_changes = sim->max_vcpu_node_changes;
	res->policy_mode_actions = sim->policy_mode_actions;
	res->policy_node_violations = sim->policy_node_violations;
	res->nr_samples = sim->nr_samples;
	res->locality_series = xcalloc((size_t)sim->nr_samples + 1, sizeof(double));
	res->migrate_mib_series = xcalloc((size_t)sim->nr_samples + 1, sizeof(double));
	if (sim->nr_samples) {
		memcpy(res->locality_series, sim->series, (size_t)sim->nr_samples * sizeof(double));
		memcpy(res->migrate_mib_series, sim->mig_series,
		       (size_t)sim->nr_samples * sizeof(double));
	}
}

void
sim_result_free(struct sim_result *res)
{
	free(res->locality_series);
	free(res->migrate_mib_series);
	res->locality_series = res->migrate_mib_series = NULL;
}

int
sim_run(const struct scenario *scn, const struct balancer_ops *bal, struct sim_result *res,
        char *err, size_t errlen)
{
	struct sim *sim = sim_new(scn, bal, err, errlen);
	uint64_t ticks;
	int rc = 0;

	if (sim == NULL)
		return -EINVAL;
	ticks = (uint64_t)llround(scn->duration_s / SIM_TICK_S);
	while (sim->tick < ticks) {
		rc = sim_step(sim);
		if (rc < 0) {
			snprintf(err, errlen, "balancer %s failed at t=%.1f s: %s", bal->name,
			         sim->now_s, strerror(-rc));
			goto out;
		}
	}
	sim_result_fill(sim, res);
out:
	sim_free(sim);
	return rc;
}

uint64_t
sim_vm_cell_node_mib(const struct sim *sim, int vm_idx, int cell, int node)
{
	const struct sim_vm *vm = &sim->vms[vm_idx];
	uint64_t cnt = 0, first = 0, end = 0;
	double acc_gib = 0;

	if (vm->region_node == NULL || cell < 0 || cell >= vm->scn->nr_cells)
		return 0;
	for (int c = 0; c <= cell; c++) {
		first = (uint64_t)(acc_gib * 1024.0) / SIM_REGION_MIB;
		acc_gib += vm->scn->cells[c].memory_gib;
		end = (uint64_t)(acc_gib * 1024.0) / SIM_REGION_MIB;
	}
	for (uint64_t r = first; r < end && r < vm->nr_regions; r++)
		cnt += vm->region_node[r] == node;
	return cnt * SIM_REGION_MIB;
}

uint64_t
sim_vm_node_mib(const struct sim *sim, int vm_idx, int node)
{
	const struct sim_vm *vm = &sim->vms[vm_idx];
	uint64_t cnt = 0;

	if (vm->region_node == NULL)
		return 0;
	if (node >= 0)
		return (uint64_t)vm->node_cnt[node] * SIM_REGION_MIB;
	for (uint32_t r = 0; r < vm->nr_regions; r++)
		cnt += vm->region_node[r] == SIM_NO_NODE;
	return cnt * SIM_REGION_MIB;
}

int
sim_vcpu_node(const struct sim *sim, int vm_idx, int vcpu)
{
	const struct sim_vm *vm = &sim->vms[vm_idx];

	return vm->running ? vm->vcpus[vcpu].node : -1;
}

uint64_t
sim_node_used_mib(const struct sim *sim, int node)
{
	return sim->node_used_mib[node];
}

uint64_t
sim_vcpu_allowed(const struct sim *sim, int vm_idx, int vcpu)
{
	return sim->vms[vm_idx].vcpus[vcpu].allowed;
}

void
sim_set_observer(struct sim *sim, sim_observer_fn *fn, void *arg)
{
	sim->observer = fn;
	sim->observer_arg = arg;
}

uint32_t
sim_vcpu_node_changes(const struct sim *sim, int vm_idx, int vcpu)
{
	return sim->vms[vm_idx].vcpus[vcpu].node_changes;
}

uint64_t
sim_vm_migrated_mib(const struct sim *sim, int vm_idx, bool kernel)
{
	const struct sim_vm *vm = &sim->vms[vm_idx];

	return kernel ? vm->audit_kernel_migrated_mib : vm->audit_migrated_mib;
}

int
sim_nr_vms(const struct sim *sim)
{
	return sim->nr_vms;
}

int
sim_vm_nr_vcpus(const struct sim *sim, int vm_idx)
{
	return sim->vms[vm_idx].nr_vcpus;
}

/* ---- driven from outside (vnumad --simulate) ----------------------------------------- */

static int
sim_external_decide(void *state, const struct snapshot *snap, struct plan *plan)
{
	plan->next_call_s = 3600;
	return 0;
}

/* The placeholder balancer of an externally driven simulation: it never acts. */
static const struct balancer_ops sim_external_ops = {
    .name = "external",
    .description = "driven by an outside agent through sim_apply_external()",
    .host_flags = BALANCER_HOST_RESIDENCY, /* the agent is vnumad */
    .default_scan_mib_s = 0,
    .decide = sim_external_decide,
};

struct sim *
sim_new_external(const struct scenario *scn, char *err, size_t errlen)
{
	struct sim *sim = sim_new(scn, &sim_external_ops, err, errlen);

	if (sim != NULL) {
		sim->external = true;
		sim->started = true;
	}
	return sim;
}

bool
sim_take_arrivals(struct sim *sim)
{
	bool a = sim->arrived;

	sim->arrived = false;
	return a;
}

void
sim_apply_external(struct sim *sim, const struct plan *plan)
{
	sim_apply_plan(sim, plan, false);
}

void
sim_commit_external(struct sim *sim)
{
	sim_touch_pending(sim, 0);
}

/* ---- ground truth for tests: where each region of a VM's RAM sits -------------------- */

uint32_t
sim_vm_nr_regions(const struct sim *sim, int vm_idx)
{
	const struct sim_vm *vm = &sim->vms[vm_idx];

	return vm->region_node != NULL ? vm->nr_regions : 0;
}

int
sim_vm_region_node(const struct sim *sim, int vm_idx, uint32_t region)
{
	const struct sim_vm *vm = &sim->vms[vm_idx];

	if (vm->region_node == NULL || region >= vm->nr_regions ||
	    vm->region_node[region] == SIM_NO_NODE)
		return -1;
	return vm->region_node[region];
}

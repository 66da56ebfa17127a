/*
 * linux_host.c - the real Linux host behind struct host_ops (`vnumad --host linux`).
 *
 * Observe: every snapshot re-reads the nodes (sysfs), finds the QEMU processes and their vCPU
 * threads through a discovery cache kept across snapshots (discover_cache.h: comm and cmdline
 * only of new pids, the vCPU threads' files kept open) and builds the snapshot (snapshot.h),
 * counting the files it opened, the read calls and the time (observe_cost, and the `host`
 * line of `vnumactl status`); this file adds what needs memory
 * between calls: CPU use from two samples of each vCPU thread's CPU time (the first sample of
 * a thread uses its lifetime average), each VM's uptime, its guest RAM address ranges, its
 * sampling source (probe.h, re-decided every LINUX_HOST_REPROBE_S), the results of its
 * memory moves, and where its RAM sits (residency.h: discovery walks numa_maps only when that
 * says so; the other rounds take the cgroup's counters, a page sample or the adjusted last
 * figure, with its age and error in the snapshot).  Act: vCPU affinity through linux_affinity_set
 * (within the thread's cpuset), memory through the paced migrator (linux_host_mem.c), ticked from
 * advance().
 *
 * Not available on Linux without libvirt, returned as -EOPNOTSUPP (the agent treats it as
 * routine): binding a VM's future allocations (mbind works only on the caller's own memory;
 * a VM whose vCPUs are pinned first-touches on their node anyway), and per-VM sampling rates
 * (the kernel's scan rate is per task and set by the kernel itself).
 *
 * A host opened on a directory tree (tests, fixtures) observes it but refuses every action
 * on a VM with -EROFS: its thread ids are not this machine's.  The scan tunables
 * (linux_host_scan.c) are that tree's own files and are written there.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/fileio.h"
#include "host/linux/discover.h"
#include "host/linux/linux_host.h"
#include "host/linux/procfs.h"
#include "host/linux/snapshot.h"
#include "policy/util.h"

#define LH_MIB ((uint64_t)1024 * 1024)

static struct linux_host *
lh_of(struct host *h)
{
	return (struct linux_host *)h;
}

double
linux_host_clock_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct lh_vm *
linux_host_vm(struct linux_host *lh, int pid)
{
	for (size_t i = 0; i < lh->nr_vms; i++)
		if (lh->vms[i].pid == pid)
			return &lh->vms[i];
	return NULL;
}

static void
lh_vm_clear(struct linux_host *lh, struct lh_vm *vm)
{
	linux_host_mem_drop(lh, vm);
	free(vm->vcpus);
	free(vm->ram);
	linux_vm_obs_free(&vm->kept);
	free(vm->obs_faults);
	memset(vm, 0, sizeof(*vm));
}

/* Seconds since boot from <root>/proc/uptime (kept open); 0 when unreadable. */
static double
lh_boot_uptime_s(struct linux_host *lh)
{
	char *data;
	size_t len;
	double up = 0;

	if (linux_pfile_read(&lh->uptime, &lh->uptime_pool, lh->root, 4096, &data, &len,
	                     "/proc/uptime") == 0) {
		up = strtod(data, NULL);
		free(data);
	}
	return up > 0 ? up : 0;
}

/*
 * Append "; WHAT: N (pid P: reason)" to the description when N VMs have the error string at
 * offset field of struct lh_vm set (P: the first of them); returns the new length.
 */
static int
lh_describe_vms(struct linux_host *lh, int n, size_t field, const char *what)
{
	const struct lh_vm *first = NULL;
	int nr = 0;

	for (size_t i = 0; i < lh->nr_vms; i++)
		if (((const char *)&lh->vms[i])[field] != '\0' && nr++ == 0)
			first = &lh->vms[i];
	if (first == NULL || n <= 0 || (size_t)n >= sizeof(lh->describe))
		return n;
	return n + snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
	                    "; %s: %d (pid %d: %s)", what, nr, first->pid,
	                    (const char *)first + field);
}

static void
lh_describe(struct linux_host *lh)
{
	const struct linux_host_caps *c = &lh->caps;
	int n = snprintf(lh->describe, sizeof(lh->describe),
	                 "kernel.numa_balancing=%d%s; numa_faults in sched files: %s; scan "
	                 "tunables: %s%s%s",
	                 c->numa_balancing, c->balancing_on ? "" : " (off: placement-only)",
	                 c->sched_numa_faults ? "yes" : "no", linux_scan_lever_name(lh->scan.lever),
	                 lh->scan.lever == LINUX_SCAN_WRITABLE
	                     ? (lh->scan.debugfs ? " (debugfs)" : " (/proc/sys/kernel)")
	                     : " - ",
	                 lh->scan.reason);

	struct linux_migrator_stats ms;

	if (lh->skipped > 0 && n > 0 && (size_t)n < sizeof(lh->describe))
		n += snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
		              "; unreadable QEMU processes skipped: %llu (last: %s)",
		              (unsigned long long)lh->skipped, lh->skip_reason);
	n = lh_describe_vms(lh, n, offsetof(struct lh_vm, cells_error),
	                    "VMs whose -numa options were not understood, placed as one cell");
	n = lh_describe_vms(lh, n, offsetof(struct lh_vm, ram_error),
	                    "VMs whose vNUMA cells' RAM was not located, so none moves");
	n = lh_describe_vms(lh, n, offsetof(struct lh_vm, ram_guess),
	                    "VMs whose guest RAM was found by size only");
	if (n > 0 && (size_t)n < sizeof(lh->describe))
		n += snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
		              "; process events: %s%s%s",
		              linux_procconn_live(lh->procconn) ? "yes" : "no",
		              lh->procconn_note[0] != '\0' ? " - " : "", lh->procconn_note);
	if (lh->observed && n > 0 && (size_t)n < sizeof(lh->describe))
		n += snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
		              "; observing, last round: %llu opens, %llu reads, %.1f ms, %d files "
		              "kept open",
		              (unsigned long long)lh->observe.opens,
		              (unsigned long long)lh->observe.reads, lh->observe.ms,
		              lh->observe.kept_fds);
	if (lh->mig == NULL || n <= 0 || (size_t)n >= sizeof(lh->describe))
		return;
	linux_migrator_stats_get(lh->mig, &ms);
	snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
	         "; pages moved: %llu, made accessible first: %llu",
	         (unsigned long long)ms.counts.pages_moved,
	         (unsigned long long)ms.counts.pages_unprotected);
}

/* ---- observing ------------------------------------------------------------------------- */

/* The record for a discovered VM, new when the pid is new or was reused. */
static struct lh_vm *
lh_vm_get(struct linux_host *lh, int pid, uint64_t start_ticks, bool *fresh)
{
	struct lh_vm *vm = linux_host_vm(lh, pid);

	*fresh = false;
	if (vm != NULL && vm->start_ticks == start_ticks)
		return vm;
	if (vm == NULL) {
		util_array_reserve((void **)&lh->vms, &lh->cap_vms, lh->nr_vms + 1,
		                   sizeof(*lh->vms));
		vm = &lh->vms[lh->nr_vms++];
		memset(vm, 0, sizeof(*vm));
	} else {
		lh_vm_clear(lh, vm); /* the pid was reused: a different VM */
	}
	vm->pid = pid;
	vm->start_ticks = start_ticks;
	*fresh = true;
	return vm;
}

/* CPU use of vCPU c from its previous sample, or its lifetime average on the first one. */
static double
lh_vcpu_use(const struct linux_host *lh, const struct lh_vm *vm, int tid, uint64_t ticks,
            uint64_t start_ticks, double now_s, double boot_s)
{
	double age_s;

	for (int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].tid == tid)
			return linux_cpu_use(vm->vcpus[i].ticks, ticks, now_s - vm->vcpus[i].at_s,
			                     lh->hz);
	age_s = boot_s - (double)start_ticks / (double)lh->hz;
	return age_s > 0 ? linux_cpu_use(0, ticks, age_s, lh->hz) : 0;
}

static void
lh_vm_vcpus(struct linux_host *lh, struct lh_vm *vm, struct snap_vm *sv,
            const struct snapshot *snap, const struct linux_snap_aux *aux, double boot_s)
{
	size_t first = (size_t)(sv->vcpus - snap->vcpu_store);
	struct lh_vcpu *now = xcalloc((size_t)sv->nr_vcpus + 1, sizeof(*now));

	for (int c = 0; c < sv->nr_vcpus; c++) {
		uint64_t ticks = aux->vcpu_ticks[first + (size_t)c];

		sv->vcpus[c].cpu_use =
		    lh_vcpu_use(lh, vm, sv->vcpus[c].tid, ticks,
		                aux->vcpu_start_ticks[first + (size_t)c], snap->now_s, boot_s);
		now[c] =
		    (struct lh_vcpu){sv->vcpus[c].tid, ticks, snap->now_s, sv->vcpus[c].cpu_use};
	}
	free(vm->vcpus);
	vm->vcpus = now;
	vm->nr_vcpus = sv->nr_vcpus;
}

/*
 * Guest RAM as host address ranges in guest-physical order: with vNUMA cells backed by memory
 * backends, each cell's backend where ram_layout.h located it (none when it could not, and
 * ram_error says why); otherwise QEMU's one RAM block (its -numa mem= cells are consecutive
 * ranges inside it) where ram_layout.h located it; and when it did not, the RAM mappings
 * discovery found by size (numa_maps starts, maps ends) in ascending address, and ram_guess
 * says why.
 */
static void
lh_vm_ram(struct linux_host *lh, struct lh_vm *vm, const struct linux_vm *lv)
{
	struct linux_ram_range *located;
	uint64_t *ends;
	int nr = linux_ram_layout_ranges(&lv->numa, &located);

	snprintf(vm->cells_error, sizeof(vm->cells_error), "%s", lv->numa.error);
	snprintf(vm->ram_error, sizeof(vm->ram_error), "%s", lv->numa.layout_error);
	if (nr == 0 && !lv->ram_walked)
		return; /* found by size, and numa_maps was not read: keep the last walk's */
	free(vm->ram);
	vm->ram = NULL;
	vm->nr_ram = 0;
	snprintf(vm->ram_guess, sizeof(vm->ram_guess), "%s", lv->ram_guess);
	if (nr != 0) {
		vm->ram = located;
		vm->nr_ram = nr > 0 ? nr : 0;
		return;
	}
	ends = xcalloc((size_t)lv->nr_ram_maps + 1, sizeof(uint64_t));
	vm->ram = xcalloc((size_t)lv->nr_ram_maps + 1, sizeof(*vm->ram));
	if (linux_maps_ends_read(lh->root, lv->pid, lv->ram_starts, lv->nr_ram_maps, ends) == 0)
		for (int i = 0; i < lv->nr_ram_maps; i++)
			if (ends[i] > lv->ram_starts[i])
				vm->ram[vm->nr_ram++] = (struct linux_ram_range){
				    lv->ram_starts[i], ends[i] - lv->ram_starts[i]};
	free(ends);
}

/*
 * What the kernel's balancing migrated for the VM's vCPU threads so far, KiB (sched files);
 * *known (may be NULL) says whether any of them prints the NUMA lines that count it.
 */
static uint64_t
lh_vm_kernel_moved_kib(const struct linux_host *lh, const struct lh_vm *vm, bool *known)
{
	uint64_t pages = 0;
	bool numa = false;

	for (int i = 0; i < vm->kept.nr_vcpus; i++) {
		pages += vm->kept.vcpus[i].sched.numa_pages_migrated;
		numa |= (vm->kept.vcpus[i].sched.present & LINUX_SCHED_HAS_NUMA) != 0;
	}
	if (known != NULL)
		*known = numa;
	return pages * (lh->page_bytes / 1024);
}

/* Hand over the migration results gathered since the last snapshot, in whole MiB, and the
 * kernel's own moves of the VM's pages. */
static void
lh_vm_feedback(const struct linux_host *lh, struct lh_vm *vm, struct snap_vm *sv)
{
	sv->kernel_moved_kib = lh_vm_kernel_moved_kib(lh, vm, &sv->kernel_moved_known);
	sv->mig_done_mib = vm->done_bytes / LH_MIB;
	vm->done_bytes %= LH_MIB;
	sv->mig_failed_mib = (vm->failed_bytes + LH_MIB - 1) / LH_MIB;
	vm->failed_bytes = 0;
	sv->mig_pending_mib = (linux_host_mem_pending(vm) + LH_MIB - 1) / LH_MIB;
}

/*
 * What only numa_maps shows (hugetlbfs backing, an mbind policy, the size of guest RAM found
 * by size), kept from the VM's last walk for the rounds without one (residency.h).
 */
static void
lh_vm_walk_facts(struct lh_vm *vm, const struct linux_vm *lv, struct snap_vm *sv)
{
	if (lv->ram_walked) {
		vm->ram_huge = lv->ram_huge;
		vm->ram_bound = lv->ram_bound;
		snprintf(vm->ram_policy, sizeof(vm->ram_policy), "%s", lv->ram_policy);
		vm->walk_mem_mib = lv->mem_mib;
	}
	if (!lv->mem_from_cmdline)
		sv->mem_mib = vm->walk_mem_mib;
}

static void lh_vm_resid_fill(const struct linux_host *lh, const struct lh_vm *vm,
                             struct snap_vm *sv, double now_s);

/* This round's residency figure (residency.h) into the snapshot, per node index. */
static void
lh_vm_resid(struct linux_host *lh, struct lh_vm *vm, const struct linux_vm *lv, struct snap_vm *sv,
            double now_s)
{
	struct linux_resid_input in = {
	    .root = lh->root,
	    .pid = lv->pid,
	    .now_s = now_s,
	    .budget = &lh->walk_budget,
	    .walked = lv->ram_walked,
	    .walk_kib = lv->resident_kib,
	    .walk_nr_nodes = lv->nr_resident,
	    .walk_ms = lv->walk_ms,
	    .ram_huge = vm->ram_huge,
	    .ram = vm->ram,
	    .nr_ram = vm->nr_ram,
	    .page_bytes = lh->page_bytes,
	    .sample_pages = lh->sample_pages,
	    .query = lh->resid_query,
	    .query_ctx = lh->resid_query_ctx,
	    .kernel_moved_kib = lh_vm_kernel_moved_kib(lh, vm, NULL),
	};

	vm->nr_cells = 0;
	if (lv->numa.nr_cells >= 2 && lv->numa.nr_cells <= LINUX_RESID_MAX_CELLS &&
	    vm->ram_error[0] == '\0') {
		for (int c = 0; c < lv->numa.nr_cells; c++)
			vm->cells[c] = (struct linux_ram_range){lv->numa.cells[c].start_bytes,
			                                        lv->numa.cells[c].size_bytes};
		vm->nr_cells = lv->numa.nr_cells;
	}
	in.cells = vm->cells;
	in.nr_cells = vm->nr_cells;
	linux_resid_update(&vm->resid, &in);
	lh_vm_resid_fill(lh, vm, sv, now_s);
}

/* The VM's residency figure as it stands into the snapshot, per node index. */
static void
lh_vm_resid_fill(const struct linux_host *lh, const struct lh_vm *vm, struct snap_vm *sv,
                 double now_s)
{
	const struct linux_resid *r = &vm->resid;

	for (int i = 0; i < lh->nodes.nr_nodes; i++) {
		int id = lh->nodes.nodes[i].id;

		sv->resident_mib[i] = id >= 0 && id < r->fig.nr_nodes ? r->fig.kib[id] / 1024 : 0;
	}
	sv->resident_err_mib = (r->fig.err_kib + 1023) / 1024;
	sv->resident_age_s = now_s > r->measured_s ? now_s - r->measured_s : 0;
	sv->resident_source = linux_resid_source_name(r->source);
	if (r->cells.nr == 0 || r->cells.nr != sv->nr_cells || r->cells.nr != vm->nr_cells)
		return;
	for (int c = 0; c < sv->nr_cells; c++) {
		struct snap_cell *cell = &sv->cells[c];

		snapshot_cell_resident_alloc(cell, lh->nodes.nr_nodes);
		for (int i = 0; i < lh->nodes.nr_nodes; i++) {
			int id = lh->nodes.nodes[i].id;

			if (id < 0 || id >= LINUX_RESID_MAX_NODES)
				continue;
			cell->resident_mib[i] = r->cells.kib[c][id] / 1024;
			cell->resident_sure_mib[i] = r->cells.sure_kib[c][id] / 1024;
		}
	}
}

/* A digest of each vCPU's index, node and allowed nodes (FNV-1a over the three). */
static uint64_t
lh_vcpu_sig(const struct snap_vm *sv)
{
	uint64_t h = 1469598103934665603ULL;

	for (int c = 0; c < sv->nr_vcpus; c++) {
		uint64_t words[3] = {(uint64_t)sv->vcpus[c].index, (uint64_t)sv->vcpus[c].node,
		                     sv->vcpus[c].allowed_nodes};

		for (int w = 0; w < 3; w++)
			for (int b = 0; b < 8; b++)
				h = (h ^ ((words[w] >> (8 * b)) & 0xff)) * 1099511628211ULL;
	}
	return h ^ (uint64_t)sv->nr_vcpus;
}

/* A VM read this round: was it different from its last reading (observe_plan.h)? */
static void
lh_vm_obs_done(struct lh_vm *vm, const struct snap_vm *sv, int nr_nodes, double now_s)
{
	uint64_t *faults = xcalloc((size_t)nr_nodes + 1, sizeof(*faults));
	uint64_t sig = lh_vcpu_sig(sv);
	bool changed;

	for (int c = 0; c < sv->nr_vcpus; c++)
		for (int n = 0; n < nr_nodes; n++)
			faults[n] += sv->vcpus[c].faults_private[n] + sv->vcpus[c].faults_shared[n];
	changed =
	    linux_obs_differs(vm->obs_sig, vm->obs_nr_nodes == nr_nodes ? vm->obs_faults : NULL,
	                      sig, faults, nr_nodes);
	free(vm->obs_faults);
	vm->obs_faults = faults;
	vm->obs_nr_nodes = nr_nodes;
	vm->obs_sig = sig;
	if (vm->nr_jobs > 0)
		linux_obs_watch(&vm->obs, now_s); /* memory moving: followed at the full rate */
	linux_obs_read_done(&vm->obs, now_s, changed);
}

/*
 * A VM not read this round (observe_plan.h): its vCPUs as last read (the snapshot assembled
 * them from vm->kept), with the CPU use then; its RAM ranges and residency figure as they
 * were, the figure older now; the results of its moves as always.
 */
static void
lh_vm_carry(struct linux_host *lh, struct lh_vm *vm, const struct linux_vm *lv, struct snap_vm *sv,
            double now_s)
{
	for (int c = 0; c < sv->nr_vcpus; c++)
		for (int i = 0; i < vm->nr_vcpus; i++)
			if (vm->vcpus[i].tid == sv->vcpus[c].tid)
				sv->vcpus[c].cpu_use = vm->vcpus[i].cpu_use;
	lh_vm_walk_facts(vm, lv, sv); /* the size of guest RAM found by size, as last walked */
	sv->observed_age_s = now_s > vm->obs.read_s ? now_s - vm->obs.read_s : 0;
	lh_vm_resid_fill(lh, vm, sv, now_s);
	lh_vm_feedback(lh, vm, sv);
	if (vm->nr_jobs > 0)
		linux_obs_watch(&vm->obs, now_s);
}

/*
 * The expected cost of walking lv, a VM seen for the first time, ms, when that walk should be
 * skipped (residency.h, linux_resid_first_walk_skip); 0 when it should not.  Guest RAM in 4 KiB
 * pages costs 90 times as much as in THP: the VM's cgroup, when it holds the VM alone, tells
 * them apart (anon_thp of memory.numa_stat); else all of the located RAM counts as 4 KiB.
 */
static double
lh_first_walk_skip_ms(const struct linux_host *lh, const struct linux_vm *lv)
{
	struct linux_ram_range *ram;
	struct linux_cgroup_numa cg;
	uint64_t small_kib = 0, huge_kib = 0;
	char dir[LINUX_CGROUP_PATH_MAX];
	int nr = linux_ram_layout_ranges(&lv->numa, &ram);
	double ms;

	if (nr <= 0 || lh->resid_query == NULL || lh->sample_pages <= 0) {
		free(ram);
		return 0; /* found by size only (the walk finds it), or no sampler to answer */
	}
	if (linux_cgroup_memory_dir(lh->root, lv->pid, dir, sizeof(dir)) == 0 &&
	    linux_cgroup_alone(lh->root, dir, lv->pid) == 1 &&
	    linux_cgroup_numa_stat_read(lh->root, dir, &cg) == 0) {
		for (int n = 0; n < cg.nr_nodes; n++) {
			uint64_t thp = cg.anon_thp_bytes[n] < cg.anon_bytes[n]
			                   ? cg.anon_thp_bytes[n]
			                   : cg.anon_bytes[n];

			huge_kib += thp / 1024;
			small_kib += (cg.anon_bytes[n] - thp + cg.shmem_bytes[n]) / 1024;
		}
	} else {
		for (int i = 0; i < nr; i++)
			small_kib += ram[i].len / 1024;
	}
	free(ram);
	ms = linux_resid_walk_predict_ms(small_kib, huge_kib);
	return ms > LINUX_RESIDENCY_WALK_HOLD_MS ? ms : 0; /* linux_resid_first_walk_skip's rule */
}

static void
lh_vm_observe(struct linux_host *lh, struct snap_vm *sv, struct linux_vm *lv,
              const struct snapshot *snap, struct linux_snap_aux *aux, bool reprobe, double boot_s)
{
	size_t first = (size_t)(sv->vcpus - snap->vcpu_store);
	uint64_t start = aux->vcpu_start_ticks[first];
	bool fresh;
	struct lh_vm *vm = lh_vm_get(lh, lv->pid, start, &fresh);

	vm->seen = true;
	if (fresh)
		linux_obs_vm_init(&vm->obs, snap->now_s);
	if (lv->kept == NULL) { /* first seen: its reading is kept from now on */
		linux_vm_obs_free(&vm->kept);
		vm->kept = aux->obs[sv - snap->vms];
		aux->obs[sv - snap->vms] = (struct linux_vm_obs){0};
	}
	if (fresh && !lv->ram_walked && lv->walk_skipped_ms == 0 &&
	    (lv->walk_skipped_ms = lh_first_walk_skip_ms(lh, lv)) == 0)
		linux_vm_ram_walk(lh->root, lv); /* a reused pid: a new VM, never walked */
	if (fresh && !lv->ram_walked && lv->walk_skipped_ms > 0 &&
	    linux_resid_first_walk_skip(&vm->resid, snap->now_s, lv->walk_skipped_ms, true))
		lh->observe.walks_skipped_total++;
	if (lv->ram_walked) {
		lh->observe.walks_total++;
		lh->observe.walks_over_hold_total += lv->walk_ms > LINUX_RESIDENCY_WALK_HOLD_MS;
		if (lv->walk_ms > lh->observe.walk_max_ms)
			lh->observe.walk_max_ms = lv->walk_ms;
	}
	sv->uptime_s = boot_s - (double)start / (double)lh->hz;
	if (sv->uptime_s < LINUX_HOST_MIN_UPTIME_S)
		sv->uptime_s = LINUX_HOST_MIN_UPTIME_S;
	if (lv->carried) {
		lh_vm_carry(lh, vm, lv, sv, snap->now_s);
		return;
	}
	lh_vm_vcpus(lh, vm, sv, snap, aux, boot_s);
	lh_vm_ram(lh, vm, lv);
	lh_vm_walk_facts(vm, lv, sv);
	if (fresh || reprobe || snap->now_s - vm->probed_s >= LINUX_HOST_REPROBE_S) {
		struct linux_vm facts = *lv; /* with the last walk's facts, read-only */

		facts.ram_huge = vm->ram_huge;
		facts.ram_bound = vm->ram_bound;
		memcpy(facts.ram_policy, vm->ram_policy, sizeof(facts.ram_policy));
		linux_vm_probe(lh->root, &lh->caps, &facts, &vm->sampling);
		vm->probed_s = snap->now_s;
	}
	lh_vm_resid(lh, vm, lv, sv, snap->now_s);
	lh_vm_feedback(lh, vm, sv);
	lh_vm_obs_done(vm, sv, snap->nr_nodes, snap->now_s);
}

/* Discovery's question: read this VM's numa_maps this round (residency.h)? */
static bool
lh_walk_want(void *ctx, struct linux_vm *lv)
{
	struct linux_host *lh = ctx;
	struct lh_vm *vm = linux_host_vm(lh, lv->pid);

	if (vm == NULL && (lv->walk_skipped_ms = lh_first_walk_skip_ms(lh, lv)) > 0)
		return false;
	return linux_resid_walk_due(vm != NULL ? &vm->resid : NULL, &lh->walk_budget, lh->round_s,
	                            vm != NULL && vm->nr_jobs > 0);
}

/* Forget VMs not seen in this snapshot. */
static void
lh_vms_prune(struct linux_host *lh)
{
	size_t keep = 0;

	for (size_t i = 0; i < lh->nr_vms; i++) {
		if (lh->vms[i].seen) {
			lh->vms[i].seen = false;
			lh->vms[keep++] = lh->vms[i];
		} else {
			lh_vm_clear(lh, &lh->vms[i]);
		}
	}
	lh->nr_vms = keep;
}

/* Count processes left out of this snapshot (a file read while it changed, say). */
static void
lh_skips_note(struct linux_host *lh, int skipped, const char *reason)
{
	if (skipped <= 0)
		return;
	lh->skipped += (uint64_t)skipped;
	snprintf(lh->skip_reason, sizeof(lh->skip_reason), "%s", reason);
	lh_describe(lh);
}

/* Re-read kernel.numa_balancing; true when it changed (every VM is re-probed then). */
static bool
lh_caps_refresh(struct linux_host *lh)
{
	int mode = -1, ret = linux_nodes_reader_balancing(lh->nodes_reader, lh->root, &mode);
	bool on;

	if (ret < 0 && ret != -ENOENT)
		return false;
	on = mode > 0 && (mode & LINUX_NUMA_BALANCING_NORMAL);
	if (mode == lh->caps.numa_balancing)
		return false;
	lh->caps.numa_balancing = mode;
	lh->caps.balancing_on = on;
	lh_describe(lh);
	return true;
}

/*
 * What this host can do and sense, for the engine (policy/model.h HOST_CAP_*): vCPU pins and
 * move_pages; no memory bind and no per-VM scan rate (lh_bind, lh_sampling); the sched files'
 * numa_faults are folded in by task_numa_placement() once per scan pass; the kernel's
 * balancing runs beside vnumad whenever it is on (it must, for hinting faults); the
 * host-wide scan tunables when they were writable at the last probe.
 */
static unsigned
lh_caps(const struct linux_host *lh)
{
	unsigned caps = HOST_CAP_PIN | HOST_CAP_MOVE_PAGES | HOST_CAP_FAULTS_PER_PASS;

	if (lh->caps.balancing_on)
		caps |= HOST_CAP_KERNEL_BALANCING;
	if (lh->scan.lever == LINUX_SCAN_WRITABLE)
		caps |= HOST_CAP_SCAN_TUNABLES;
	return caps;
}

/* What this snapshot cost to observe, from the counts and clock taken at its start. */
/* CPU time of the calling thread, ms. */
static double
lh_thread_cpu_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * This round's readings (observe_plan.h): every VM known from the last snapshot is a
 * candidate; a pid not known yet is read whatever the plan (lh_observe_want).
 */
static void
lh_obs_plan(struct linux_host *lh, double now_s)
{
	struct linux_obs_pick *picks = xcalloc(lh->nr_vms + 1, sizeof(*picks));

	for (size_t i = 0; i < lh->nr_vms; i++)
		picks[i] = (struct linux_obs_pick){lh->vms[i].pid, lh->vms[i].nr_vcpus,
		                                   &lh->vms[i].obs, false};
	linux_obs_plan(&lh->obs_budget, picks, lh->nr_vms, now_s);
	for (size_t i = 0; i < lh->nr_vms; i++)
		lh->vms[i].obs_read_now = picks[i].read;
	free(picks);
}

/* Discovery's question: read this VM this round, or carry its last reading? */
static bool
lh_observe_want(void *ctx, int pid)
{
	struct linux_host *lh = ctx;
	const struct lh_vm *vm = linux_host_vm(lh, pid);

	return vm == NULL || vm->kept.nr_vcpus == 0 || vm->obs_read_now;
}

static void
lh_observe_note(struct linux_host *lh, const struct fileio_counts *c0, double t0_s, double cpu0_ms,
                const struct linux_vm *vms, size_t nr_vms)
{
	const struct linux_obs_budget *b = &lh->obs_budget;
	struct fileio_counts c1;
	size_t nr_read = 0, nr_carried = 0;
	int vcpus_read = 0;
	double now_s = linux_host_clock_s();

	for (size_t i = 0; i < nr_vms; i++) {
		if (vms[i].carried) {
			nr_carried++;
		} else {
			nr_read++;
			vcpus_read += vms[i].nr_vcpus;
		}
	}
	linux_obs_charge(&lh->obs_budget, now_s, lh_thread_cpu_ms() - cpu0_ms, nr_read, vcpus_read,
	                 nr_carried);
	fileio_counts_get(&c1);
	lh->observe.opens = c1.opens - c0->opens;
	lh->observe.reads = c1.reads - c0->reads;
	lh->observe.ms = (now_s - t0_s) * 1000.0;
	lh->observe.kept_fds = linux_discover_cache_fds(lh->discover) + lh->uptime_pool.nr_open +
	                       linux_nodes_reader_fds(lh->nodes_reader);
	lh->observe.vms_read = nr_read;
	lh->observe.vms_carried = nr_carried;
	lh->observe.cpu_cap_percent = b->cap_ms_s / 10.0;
	lh->observe.cpu_percent = b->cpu_ms_s >= 0 ? b->cpu_ms_s / 10.0 : -1;
	lh->observe.cpu_ms_total = b->cpu_ms;
	lh->observe.reads_total = b->reads;
	lh->observe.carried_total = b->carried;
	lh->observe.deferred_total = b->deferred;
	lh->observe.over_cap_total = b->over_cap;
	lh->observed = true;
}

/*
 * Read the process events of the round into lh->proc_delta; on a refusal, no answer or a
 * broken socket, close it for good (the scans list /proc from then on) and say why.
 */
static void
lh_proc_events_drain(struct linux_host *lh)
{
	int ret;

	if (lh->procconn == NULL)
		return;
	if ((ret = linux_procconn_drain(lh->procconn, &lh->proc_delta)) == 0)
		return;
	snprintf(lh->procconn_note, sizeof(lh->procconn_note), "%s",
	         ret == -ETIMEDOUT ? "the kernel did not answer the subscription (vnumad is not "
	                             "in the initial PID namespace?)"
	         : ret == -EPERM   ? "the kernel refused the subscription (needs CAP_NET_ADMIN)"
	                           : strerror(-ret));
	linux_procconn_close(lh->procconn);
	lh->procconn = NULL;
	linux_proc_delta_free(&lh->proc_delta);
}

static int
lh_snapshot(struct host *h, struct snapshot **out)
{
	struct linux_host *lh = lh_of(h);
	struct linux_nodes nodes = {0};
	struct linux_snap_aux aux = {0};
	struct linux_vm *vms = NULL;
	struct linux_discover_skips skips;
	struct snapshot *snap = NULL;
	struct fileio_counts c0;
	size_t nr_vms = 0;
	double t0_s = linux_host_clock_s(), cpu0_ms = lh_thread_cpu_ms(), boot_s;
	bool reprobe;
	int ret;

	*out = NULL;
	fileio_counts_get(&c0);
	reprobe = lh_caps_refresh(lh);
	if ((ret = linux_nodes_reader_read(lh->nodes_reader, lh->root, t0_s, &nodes)) < 0)
		return ret;
	lh->round_s = t0_s;
	linux_resid_budget_refill(&lh->walk_budget, lh->round_s);
	lh_obs_plan(lh, t0_s);
	lh_proc_events_drain(lh);
	ret = linux_discover_cache_scan_delta(
	    lh->discover, lh->root, t0_s,
	    linux_procconn_live(lh->procconn) ? &lh->proc_delta : NULL, &vms, &nr_vms, &skips);
	linux_proc_delta_clear(&lh->proc_delta);
	if (ret < 0) {
		linux_nodes_free(&nodes);
		return ret;
	}
	for (size_t i = 0; i < nr_vms; i++) {
		struct lh_vm *vm = linux_host_vm(lh, vms[i].pid);

		vms[i].kept = vm != NULL ? &vm->kept : NULL;
	}
	linux_snapshot_assemble(lh->root, &nodes, vms, nr_vms, &snap, &aux);
	lh_skips_note(lh, skips.skipped, skips.reason);
	lh_skips_note(lh, aux.skipped, aux.skip_reason);
	snap->now_s = linux_host_clock_s();
	snap->caps = lh_caps(lh);
	linux_nodes_free(&lh->nodes);
	lh->nodes = nodes;
	boot_s = snap->nr_vms > 0 ? lh_boot_uptime_s(lh) : 0;
	for (int i = 0; i < snap->nr_vms; i++)
		lh_vm_observe(lh, &snap->vms[i], &vms[aux.vm_of[i]], snap, &aux, reprobe, boot_s);
	lh_vms_prune(lh);
	linux_snap_aux_free(&aux);
	lh_observe_note(lh, &c0, t0_s, cpu0_ms, vms, nr_vms);
	linux_vms_free(vms, nr_vms);
	*out = snap;
	return 0;
}

/* ---- acting ---------------------------------------------------------------------------- */

/* The OS CPU ids of the node indexes in nodes (NODEMASK_ALL: every node), malloc'd. */
static int *
lh_node_cpus(const struct linux_host *lh, uint64_t nodes, int *nr)
{
	int *cpus = NULL, n = 0;
	size_t cap = 0;

	for (int i = 0; i < lh->nodes.nr_nodes; i++) {
		const struct linux_node *node = &lh->nodes.nodes[i];

		if (nodes != NODEMASK_ALL && (i >= UTIL_MAX_NODES || !nodemask_test(nodes, i)))
			continue;
		util_array_reserve((void **)&cpus, &cap, (size_t)(n + node->nr_cpus) + 1,
		                   sizeof(int));
		memcpy(cpus + n, node->cpus, (size_t)node->nr_cpus * sizeof(int));
		n += node->nr_cpus;
	}
	*nr = n;
	return cpus;
}

static int
lh_pin(struct host *h, int vm_id, int vcpu, uint64_t nodes)
{
	struct linux_host *lh = lh_of(h);
	struct lh_vm *vm = linux_host_vm(lh, vm_id);
	char err[160];
	int *cpus, nr, ret;

	if (lh->root != NULL)
		return -EROFS;
	if (vm == NULL || vcpu < 0 || vcpu >= vm->nr_vcpus)
		return -ESRCH;
	cpus = lh_node_cpus(lh, nodes, &nr);
	ret =
	    nr > 0 ? linux_affinity_set(vm->vcpus[vcpu].tid, cpus, nr, err, sizeof(err)) : -EINVAL;
	free(cpus);
	return ret;
}

void
host_linux_set_observe_cap(struct host *h, double percent)
{
	struct linux_obs_budget *b = &lh_of(h)->obs_budget;

	b->cap_ms_s = percent > 0 ? percent * 10.0 : 0;
	if (b->tokens_ms > b->cap_ms_s * LINUX_OBSERVE_BURST_S)
		b->tokens_ms = b->cap_ms_s * LINUX_OBSERVE_BURST_S;
}

static void
lh_watch(struct host *h, int vm_id)
{
	struct lh_vm *vm = linux_host_vm(lh_of(h), vm_id);

	if (vm != NULL)
		linux_obs_watch(&vm->obs, linux_host_clock_s());
}

static int
lh_bind(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, uint64_t nodes)
{
	(void)h;
	(void)vm_id;
	(void)start_mib;
	(void)len_mib;
	(void)nodes;
	return -EOPNOTSUPP;
}

static int
lh_sampling(struct host *h, int vm_id, double scan_mib_s)
{
	(void)h;
	(void)vm_id;
	(void)scan_mib_s;
	return -EOPNOTSUPP;
}

/* ---- the rest of the table ------------------------------------------------------------- */

static double
lh_now(struct host *h)
{
	(void)h;
	return linux_host_clock_s();
}

static int
lh_advance(struct host *h, double until_s)
{
	struct linux_host *lh = lh_of(h);

	(void)until_s; /* real time passes by itself */
	if (lh->root == NULL)
		linux_host_mem_advance(lh, linux_host_clock_s());
	return 0;
}

static void
lh_commit(struct host *h)
{
	lh_advance(h, 0); /* start this round's moves at once */
}

static double
lh_wake(struct host *h)
{
	return linux_migrator_busy(lh_of(h)->mig) ? LINUX_HOST_BUSY_WAKE_S : 0;
}

static const char *
lh_sampling_source(struct host *h, int vm_id, const char **reason)
{
	struct lh_vm *vm = linux_host_vm(lh_of(h), vm_id);

	if (vm == NULL) {
		*reason = "not a VM on this host";
		return "placement-only";
	}
	*reason = vm->sampling.reason;
	return linux_sampling_source_name(vm->sampling.source);
}

/* What is uncertain about a VM's memory, each reason that applies, "; " between two. */
static const char *
lh_vm_note(struct host *h, int vm_id)
{
	struct linux_host *lh = lh_of(h);
	const struct lh_vm *vm = linux_host_vm(lh, vm_id);
	size_t n = 0;

	lh->note[0] = '\0';
	if (vm == NULL)
		return lh->note;
	if (vm->ram_error[0] != '\0')
		n += (size_t)snprintf(
		    lh->note, sizeof(lh->note),
		    "its guest cells' RAM was not located, so none of it moves: %s", vm->ram_error);
	else if (vm->cells_error[0] != '\0')
		n += (size_t)snprintf(
		    lh->note, sizeof(lh->note),
		    "its -numa options were not understood, so it is placed as one cell: %s",
		    vm->cells_error);
	if (vm->ram_guess[0] != '\0' && n < sizeof(lh->note))
		snprintf(lh->note + n, sizeof(lh->note) - n, "%sguest RAM found by size only (%s)",
		         n > 0 ? "; " : "", vm->ram_guess);
	return lh->note;
}

static const char *
lh_describe_get(struct host *h)
{
	lh_describe(lh_of(h)); /* the migrator's counts change every tick */
	return lh_of(h)->describe;
}

static int
lh_observe_cost(struct host *h, struct host_observe_cost *out)
{
	struct linux_host *lh = lh_of(h);

	if (!lh->observed)
		return -ENODATA;
	*out = lh->observe;
	return 0;
}

static void
lh_close(struct host *h)
{
	struct linux_host *lh = lh_of(h);

	if (lh == NULL)
		return;
	for (size_t i = 0; i < lh->nr_vms; i++)
		lh_vm_clear(lh, &lh->vms[i]);
	free(lh->vms);
	free(lh->orphans);
	linux_migrator_free(lh->mig);
	linux_nodes_free(&lh->nodes);
	linux_nodes_reader_free(lh->nodes_reader);
	linux_discover_cache_free(lh->discover);
	linux_procconn_close(lh->procconn);
	linux_proc_delta_free(&lh->proc_delta);
	linux_pfile_close(&lh->uptime, &lh->uptime_pool);
	free(lh->root);
	free(lh);
}

static const struct host_ops linux_host_ops = {
    .name = "linux",
    .close = lh_close,
    .now = lh_now,
    .advance = lh_advance,
    .snapshot = lh_snapshot,
    .pin_vcpu = lh_pin,
    .bind_memory = lh_bind,
    .move_memory = linux_host_move,
    .set_sampling = lh_sampling,
    .commit = lh_commit,
    .sampling_source = lh_sampling_source,
    .policy_persist = NULL,
    .vm_note = lh_vm_note,
    .describe = lh_describe_get,
    .observe_cost = lh_observe_cost,
    .wake_s = lh_wake,
    .watch_vm = lh_watch,
    .scan_tunables_get = linux_host_scan_get,
    .scan_tunables_set = linux_host_scan_set,
    .levers = linux_host_levers,
};

int
host_linux_open(const char *root, double rate_mib_s, struct host **out, char *err, size_t errlen)
{
	struct linux_host *lh = xcalloc(1, sizeof(*lh));
	int ret;

	*out = NULL;
	lh->base.ops = &linux_host_ops;
	lh->root = root != NULL && root[0] != '\0' && strcmp(root, "/") != 0 ? xstrdup(root) : NULL;
	lh->hz = sysconf(_SC_CLK_TCK);
	lh->page_bytes = (uint64_t)sysconf(_SC_PAGESIZE);
	lh->sample_pages = LINUX_RESIDENCY_SAMPLE_PAGES;
	/* a tree read from a directory has no pages to look up: its figures age instead */
	lh->resid_query = lh->root == NULL ? linux_resid_query_live : NULL;
	lh->discover = linux_discover_cache_new(-1);
	lh->nodes_reader = linux_nodes_reader_new();
	linux_discover_cache_opts_set(lh->discover, &(struct linux_discover_opts){
	                                                .walk_want = lh_walk_want,
	                                                .observe_want = lh_observe_want,
	                                                .ctx = lh,
	                                            });
	linux_obs_budget_init(&lh->obs_budget, LINUX_OBSERVE_CPU_CAP_PERCENT);
	linux_pfile_init(&lh->uptime);
	linux_pfile_pool_init(&lh->uptime_pool, 1);
	if ((ret = linux_nodes_read(lh->root, &lh->nodes)) < 0) {
		if (ret == -ENODEV)
			snprintf(
			    err, errlen,
			    "hwloc cannot read the CPU topology under %s/sys/devices/system/cpu",
			    lh->root ? lh->root : "");
		else
			snprintf(err, errlen,
			         "cannot read the NUMA nodes under %s/sys/devices/system/node: %s",
			         lh->root ? lh->root : "", strerror(-ret));
		goto fail;
	}
	if ((ret = linux_host_probe(lh->root, 0, 0, &lh->caps)) < 0) {
		snprintf(err, errlen, "cannot read kernel.numa_balancing: %s", strerror(-ret));
		goto fail;
	}
	linux_scan_tunables_probe(lh->root, &lh->scan);
	if (lh->root != NULL)
		snprintf(lh->procconn_note, sizeof(lh->procconn_note),
		         "a tree under a root is listed");
	else if ((ret = linux_procconn_open(&lh->procconn)) < 0)
		snprintf(lh->procconn_note, sizeof(lh->procconn_note), "cannot subscribe: %s",
		         strerror(-ret));
	lh_describe(lh);
	lh->mig = linux_migrator_new(rate_mib_s > 0 ? rate_mib_s : 1024, 0);
	*out = &lh->base;
	return 0;
fail:
	lh_close(&lh->base);
	return ret;
}

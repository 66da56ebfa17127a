/*
 * libvirt_host.c - the libvirt host behind struct host_ops (`vnumad --connect URI`).
 *
 * A layer over the Linux host (host/linux/linux_host.c), which still observes every QEMU
 * process, its vCPU threads, hinting faults and memory, and moves pages.  For the VMs that
 * are libvirt domains (matched by name: libvirt starts QEMU with -name guest=NAME) this layer
 * adds what libvirt knows and owns:
 * - the policy in the domain's metadata (a bad one: the default policy and its error);
 * - guest vNUMA cells, with each cell's RAM range, from the domain XML;
 * - a strict <numatune> nodeset (or a restrictive one the admin wrote), as nodes the VM may
 *   never leave (snap_vm.host_nodes); a strict placement='auto' one as libvirt chose it;
 * - a restrictive placement='auto' <numatune> in the persistent definition (the domain started
 *   where vnumad advised, docs/placement-advice.md): its live nodeset is widened before memory
 *   moves outside it and narrowed once the memory is there (lv_mems.h), and put back by
 *   put_back;
 * - the administrator's own <vcpupin>s in the persistent definition: the VM is hands-off
 *   (mode manual) unless its policy explicitly says auto;
 * - vCPU pins through libvirt (virDomainPinVcpuFlags), never sched_setaffinity behind
 *   libvirt's back (it rewrites its cgroups' cpusets), with the emulator threads pinned to
 *   the union of the vCPUs' nodes after each round that re-pinned any of its vCPUs;
 * - `vnumactl policy --live/--config` stored in the domain's metadata, and read back from
 *   the definition it changes (the live one, or the persistent one for --config).
 * QEMU processes that are not domains are handled as by the Linux host.
 *
 * The domain cache is refreshed from libvirt's events (started, stopped, metadata changed)
 * and re-listed in full after a reconnect, a lost event and every LVH_RELIST_S.  While the
 * connection is down, the last known domains are kept and pins fail with -ENOTCONN.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/libvirt/lv_conn.h"
#include "host/libvirt/lv_domain.h"
#include "host/libvirt/lv_mems.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

/*
 * Seconds between two full re-reads of every domain, events or not.  Default 30: events
 * cover changes as they happen; this only bounds how long a missed one can go unnoticed.
 */
#define LVH_RELIST_S 30.0

/*
 * Narrowing a domain's live memory nodes to its vCPUs' nodes makes the kernel migrate, at once
 * and unpaced, whatever is still outside them: vnumad narrows only when that is at most
 * LVH_NARROW_MIB or LVH_NARROW_PERMILLE of the domain's memory, whichever is larger (defaults
 * 16 MiB and 1 %: under a second of migration on any host), and leaves the set wide otherwise.
 */
#define LVH_NARROW_MIB      16
#define LVH_NARROW_PERMILLE 10

/* What vnumad keeps of one running domain. */
struct lvh_dom {
	struct lv_domain dom; /* live definition */
	bool admin_pins;      /* the persistent definition pins some vCPU */
	/* the persistent definition's <emulatorpin> (libvirt's CPU numbers); empty: none */
	struct lv_idset emulator_cfg;
	bool policy_set, policy_ok;
	struct vm_policy policy;
	char policy_error[256];
	/* the persistent definition's numatune is restrictive, placement='auto' (lv_mems.h) */
	bool mems_lever;
	/* a strict placement='auto' numatune: the node ids libvirt chose (0: unknown) */
	uint64_t auto_strict_ids;
};

/* A VM of the last snapshot that is a domain: its id and its vCPUs' nodes. */
struct lvh_vm {
	int id;
	char name[SNAP_VM_NAME_MAX];
	int nr_vcpus;
	uint64_t *vcpu_nodes; /* node indexes each vCPU may run on */
	int *vcpu_index;      /* per snapshot position: libvirt's vCPU number (QEMU's "CPU n") */
	bool repinned;        /* a vCPU was pinned this round: pin the emulator in commit */
	bool mems_lever;      /* lvh_dom.mems_lever */
	uint64_t mem_mib;
	uint64_t resident_mib[UTIL_MAX_NODES]; /* per node index, as the snapshot saw it */
};

struct libvirt_host {
	struct host base;
	struct host *inner;
	struct lv_conn *conn;
	struct lv_mems *mems;
	struct lvh_dom *doms;
	size_t nr_doms, cap_doms;
	double listed_s; /* when the cache was last re-listed; < 0: re-list now */
	char last_error[LV_ERR_LEN];
	char describe[768];
	/* From the last snapshot. */
	struct lvh_vm *vms;
	size_t nr_vms;
	int nr_nodes;
	int *node_ids; /* per node index: OS node id */
	int **cpus;    /* per node index: its CPUs */
	int *nr_cpus;  /* per node index */
	unsigned caps; /* of the inner host's last snapshot, for an inner without levers op */
};

static struct libvirt_host *
lvh_of(struct host *h)
{
	return (struct libvirt_host *)h;
}

/* ---- the domain cache ------------------------------------------------------------------ */

static void
lvh_dom_clear(struct lvh_dom *d)
{
	lv_domain_free(&d->dom);
	lv_idset_free(&d->emulator_cfg);
	memset(d, 0, sizeof(*d));
}

static struct lvh_dom *
lvh_dom_find(struct libvirt_host *lh, const char *name)
{
	for (size_t i = 0; i < lh->nr_doms; i++)
		if (lh->doms[i].dom.name != NULL && strcmp(lh->doms[i].dom.name, name) == 0)
			return &lh->doms[i];
	return NULL;
}

/* The policy from the live metadata, and whether the admin pinned vCPUs in the config. */
static void
lvh_dom_annotate(struct libvirt_host *lh, struct lvh_dom *d)
{
	struct lv_domain inactive;
	char err[LV_ERR_LEN];

	vm_policy_init_default(&d->policy);
	d->policy_set = d->dom.metadata_xml != NULL;
	d->policy_ok = true;
	d->policy_error[0] = '\0';
	if (d->policy_set && vm_policy_parse_xml(d->dom.metadata_xml, strlen(d->dom.metadata_xml),
	                                         &d->policy, err, sizeof(err)) < 0) {
		d->policy_ok = false;
		snprintf(d->policy_error, sizeof(d->policy_error), "domain metadata: %.200s", err);
	}
	d->admin_pins = false;
	lv_idset_free(&d->emulator_cfg);
	memset(&inactive, 0, sizeof(inactive));
	d->mems_lever = d->dom.numatune && d->dom.numatune_auto &&
	                d->dom.numatune_mode == LV_MEM_MODE_RESTRICTIVE;
	d->auto_strict_ids = 0;
	if (d->dom.numatune && d->dom.numatune_auto && d->dom.numatune_mode == LV_MEM_MODE_STRICT)
		lv_conn_mem_nodes_get(lh->conn, d->dom.name, &d->auto_strict_ids, err, sizeof(err));
	if (lv_conn_domain_get(lh->conn, d->dom.name, true, &inactive, err, sizeof(err)) == 0) {
		/* what the admin wrote decides: the live XML names a set once it changed live */
		d->mems_lever = inactive.numatune && inactive.numatune_auto &&
		                inactive.numatune_mode == LV_MEM_MODE_RESTRICTIVE;
		d->admin_pins = inactive.nr_vcpupins > 0;
		d->emulator_cfg = inactive.emulatorpin; /* taken over */
		memset(&inactive.emulatorpin, 0, sizeof(inactive.emulatorpin));
		lv_domain_free(&inactive);
	}
}

/* Re-read every running domain; on failure the old cache stays. */
static bool
lvh_dom_running(void *ctx, const char *name)
{
	return lvh_dom_find(ctx, name) != NULL;
}

static void
lvh_relist(struct libvirt_host *lh, double now_s)
{
	struct lv_domain_list list = {0};
	char err[LV_ERR_LEN];

	if (lv_conn_list(lh->conn, &list, err, sizeof(err)) < 0) {
		snprintf(lh->last_error, sizeof(lh->last_error), "%s", err);
		return;
	}
	for (size_t i = 0; i < lh->nr_doms; i++)
		lvh_dom_clear(&lh->doms[i]);
	free(lh->doms);
	lh->cap_doms = (size_t)list.nr + 1;
	lh->doms = xcalloc(lh->cap_doms, sizeof(*lh->doms));
	lh->nr_doms = 0;
	for (int i = 0; i < list.nr; i++) {
		struct lvh_dom *d = &lh->doms[lh->nr_doms++];

		d->dom = list.doms[i]; /* taken over */
		memset(&list.doms[i], 0, sizeof(list.doms[i]));
		lvh_dom_annotate(lh, d);
	}
	if (list.nr_skipped > 0)
		snprintf(lh->last_error, sizeof(lh->last_error), "%d domains unreadable: %.400s",
		         list.nr_skipped, list.skipped_err);
	lv_domain_list_free(&list);
	lh->listed_s = now_s;
	lv_mems_prune(lh->mems, lvh_dom_running, lh);
}

/* A domain started or changed its metadata: (re)read it. */
static void
lvh_dom_refresh(struct libvirt_host *lh, const char *name)
{
	struct lvh_dom *d = lvh_dom_find(lh, name), fresh;
	char err[LV_ERR_LEN];

	memset(&fresh, 0, sizeof(fresh));
	if (lv_conn_domain_get(lh->conn, name, false, &fresh.dom, err, sizeof(err)) < 0)
		return; /* gone again, or unreadable: the next re-list decides */
	lvh_dom_annotate(lh, &fresh);
	if (d == NULL) {
		util_array_reserve((void **)&lh->doms, &lh->cap_doms, lh->nr_doms + 1,
		                   sizeof(*lh->doms));
		d = &lh->doms[lh->nr_doms++];
	} else {
		lvh_dom_clear(d);
	}
	*d = fresh;
}

static void
lvh_dom_drop(struct libvirt_host *lh, const char *name)
{
	struct lvh_dom *d = lvh_dom_find(lh, name);

	lv_mems_forget(lh->mems, name);
	if (d == NULL)
		return;
	lvh_dom_clear(d);
	*d = lh->doms[--lh->nr_doms];
}

/* Follow the connection and its events; see the file comment. */
static void
lvh_sync(struct libvirt_host *lh, double now_s)
{
	struct lv_event *ev = NULL;
	int nr = 0, overflow;

	switch (lv_conn_poll(lh->conn, now_s)) {
	case LV_POLL_DOWN:
		return;
	case LV_POLL_LOST:
		snprintf(lh->last_error, sizeof(lh->last_error), "connection lost: %s",
		         lv_conn_last_error(lh->conn));
		return;
	case LV_POLL_RECONNECTED:
		lh->listed_s = -1;
		break;
	case LV_POLL_UP:
		break;
	}
	overflow = lv_conn_events_take(lh->conn, &ev, &nr);
	for (int i = 0; i < nr && overflow == 0; i++) {
		if (ev[i].kind == LV_EVENT_STOPPED)
			lvh_dom_drop(lh, ev[i].name);
		else if (ev[i].kind == LV_EVENT_STARTED || ev[i].kind == LV_EVENT_METADATA)
			lvh_dom_refresh(lh, ev[i].name);
	}
	lv_events_free(ev, nr);
	if (overflow != 0 || lh->listed_s < 0 || now_s - lh->listed_s >= LVH_RELIST_S)
		lvh_relist(lh, now_s);
}

/* ---- observing ------------------------------------------------------------------------- */

static void
lvh_vms_clear(struct libvirt_host *lh)
{
	for (size_t i = 0; i < lh->nr_vms; i++) {
		free(lh->vms[i].vcpu_nodes);
		free(lh->vms[i].vcpu_index);
	}
	free(lh->vms);
	lh->vms = NULL;
	lh->nr_vms = 0;
}

static void
lvh_nodes_clear(struct libvirt_host *lh)
{
	for (int n = 0; n < lh->nr_nodes; n++)
		free(lh->cpus[n]);
	free(lh->cpus);
	free(lh->nr_cpus);
	free(lh->node_ids);
	lh->cpus = NULL;
	lh->nr_cpus = lh->node_ids = NULL;
	lh->nr_nodes = 0;
}

/* Each node's CPUs and OS id, from the snapshot. */
static void
lvh_nodes_take(struct libvirt_host *lh, const struct snapshot *snap)
{
	lvh_nodes_clear(lh);
	lh->nr_nodes = snap->nr_nodes;
	lh->cpus = xcalloc((size_t)snap->nr_nodes + 1, sizeof(int *));
	lh->nr_cpus = xcalloc((size_t)snap->nr_nodes + 1, sizeof(int));
	lh->node_ids = xcalloc((size_t)snap->nr_nodes + 1, sizeof(int));
	for (int n = 0; n < snap->nr_nodes; n++) {
		lh->node_ids[n] = snap->nodes[n].id;
		lh->cpus[n] = xcalloc((size_t)snap->nodes[n].nr_cpus + 1, sizeof(int));
	}
	for (int c = 0; c < snap->nr_cpus; c++) {
		int n = snap->cpu_node[c];

		if (n >= 0 && n < snap->nr_nodes && lh->nr_cpus[n] < snap->nodes[n].nr_cpus)
			lh->cpus[n][lh->nr_cpus[n]++] = c;
	}
}

/* OS node ids of a numatune nodeset as the snapshot's node indexes. */
static uint64_t
lvh_nodeset_mask(const struct libvirt_host *lh, const struct lv_idset *set)
{
	uint64_t mask = 0;

	for (int n = 0; n < lh->nr_nodes && n < UTIL_MAX_NODES; n++)
		if (lv_idset_has(set, lh->node_ids[n]))
			mask |= nodemask_of(n);
	return mask ? mask : NODEMASK_ALL;
}

/* A mask of OS node ids as the snapshot's node indexes. */
static uint64_t
lvh_idmask_nodes(const struct libvirt_host *lh, uint64_t ids)
{
	uint64_t mask = 0;

	for (int n = 0; n < lh->nr_nodes && n < UTIL_MAX_NODES; n++)
		if (lh->node_ids[n] >= 0 && lh->node_ids[n] < UTIL_MAX_NODES &&
		    nodemask_test(ids, lh->node_ids[n]))
			mask |= nodemask_of(n);
	return mask;
}

/* Node indexes as a mask of OS node ids. */
static uint64_t
lvh_nodes_idmask(const struct libvirt_host *lh, uint64_t nodes)
{
	uint64_t ids = 0;

	for (int n = 0; n < lh->nr_nodes && n < UTIL_MAX_NODES; n++)
		if (nodemask_test(nodes, n) && lh->node_ids[n] >= 0 &&
		    lh->node_ids[n] < UTIL_MAX_NODES)
			ids |= nodemask_of(lh->node_ids[n]);
	return ids;
}

/* Cells whose per-cell residency a VM keeps when the domain XML names the same cells. */
#define LVH_CELLS_KEPT 16

/* Guest cells from the domain XML, when they cover the VM's vCPUs as observed. */
static void
lvh_vm_cells(struct snap_vm *vm, const struct lv_domain *dom)
{
	int nr = 0;

	for (int c = 0; c < dom->nr_cells; c++)
		nr += dom->cells[c].vcpus.nr;
	struct snap_cell kept[LVH_CELLS_KEPT] = {{0}};
	int nr_kept = 0;

	if (dom->nr_cells == 0 || nr != vm->nr_vcpus)
		return;
	/* the Linux side's per-cell residency of the same cells stays (struct snap_cell) */
	if (vm->nr_cells == dom->nr_cells && vm->nr_cells <= LVH_CELLS_KEPT) {
		for (int c = 0; c < vm->nr_cells; c++) {
			kept[c] = vm->cells[c];
			if (kept[c].mem_start_mib != dom->cells[c].start_mib ||
			    kept[c].mem_mib != dom->cells[c].memory_mib)
				nr_kept = -1;
		}
		if (nr_kept == 0) {
			nr_kept = vm->nr_cells;
			for (int c = 0; c < vm->nr_cells; c++)
				vm->cells[c].resident_mib = vm->cells[c].resident_sure_mib = NULL;
		}
	}
	snapshot_vm_set_cells(vm, dom->nr_cells);
	for (int c = 0; c < dom->nr_cells; c++) {
		vm->cells[c].mem_start_mib = dom->cells[c].start_mib;
		vm->cells[c].mem_mib = dom->cells[c].memory_mib;
		if (c < nr_kept) {
			vm->cells[c].resident_mib = kept[c].resident_mib;
			vm->cells[c].resident_sure_mib = kept[c].resident_sure_mib;
		}
		for (int i = 0; i < dom->cells[c].vcpus.nr; i++)
			for (int v = 0; v < vm->nr_vcpus; v++) /* cells name libvirt's numbers */
				if (vm->vcpus[v].index == dom->cells[c].vcpus.ids[i])
					vm->vcpu_cell[v] = c;
	}
}

/* Add what libvirt knows to a VM that is one of its domains. */
static void
lvh_vm_annotate(struct libvirt_host *lh, struct snap_vm *vm, const struct lvh_dom *d)
{
	struct lvh_vm *rec = &lh->vms[lh->nr_vms++];

	vm->policy_set = d->policy_set || d->admin_pins;
	snprintf(vm->uuid, sizeof(vm->uuid), "%s", d->dom.uuid);
	vm->policy_ok = d->policy_ok;
	vm->policy = d->policy;
	memcpy(vm->policy_error, d->policy_error, sizeof(vm->policy_error));
	/* The admin's own pins stand unless the policy explicitly says auto. */
	if (d->admin_pins &&
	    !(d->policy_set && d->policy_ok && d->policy.mode == VM_POLICY_MODE_AUTO))
		vm->policy.mode = VM_POLICY_MODE_MANUAL;
	if (d->dom.numatune && !d->dom.numatune_auto && !d->mems_lever &&
	    (d->dom.numatune_mode == LV_MEM_MODE_STRICT ||
	     d->dom.numatune_mode == LV_MEM_MODE_RESTRICTIVE))
		vm->host_nodes = lvh_nodeset_mask(lh, &d->dom.numatune_nodes);
	else if (d->auto_strict_ids != 0)
		vm->host_nodes = lvh_idmask_nodes(lh, d->auto_strict_ids);
	if (d->dom.memory_mib > 0)
		vm->mem_mib =
		    d->dom.current_memory_mib ? d->dom.current_memory_mib : d->dom.memory_mib;
	lvh_vm_cells(vm, &d->dom);
	rec->id = vm->id;
	rec->mems_lever = d->mems_lever;
	rec->mem_mib = vm->mem_mib;
	for (int n = 0; n < lh->nr_nodes && n < UTIL_MAX_NODES && vm->resident_mib != NULL; n++)
		rec->resident_mib[n] = vm->resident_mib[n];
	snprintf(rec->name, sizeof(rec->name), "%s", vm->name);
	rec->nr_vcpus = vm->nr_vcpus;
	rec->vcpu_nodes = xcalloc((size_t)vm->nr_vcpus + 1, sizeof(uint64_t));
	rec->vcpu_index = xcalloc((size_t)vm->nr_vcpus + 1, sizeof(int));
	for (int v = 0; v < vm->nr_vcpus; v++) {
		rec->vcpu_nodes[v] = vm->vcpus[v].allowed_nodes;
		rec->vcpu_index[v] = vm->vcpus[v].index;
	}
}

static int
lvh_snapshot(struct host *h, struct snapshot **out)
{
	struct libvirt_host *lh = lvh_of(h);
	struct snapshot *snap;
	int ret = lh->inner->ops->snapshot(lh->inner, &snap);

	*out = NULL;
	if (ret < 0)
		return ret;
	lh->caps = snap->caps;
	lvh_sync(lh, snap->now_s);
	lvh_nodes_take(lh, snap);
	lvh_vms_clear(lh);
	lh->vms = xcalloc((size_t)snap->nr_vms + 1, sizeof(*lh->vms));
	for (int i = 0; i < snap->nr_vms; i++) {
		const struct lvh_dom *d = lvh_dom_find(lh, snap->vms[i].name);

		if (d != NULL)
			lvh_vm_annotate(lh, &snap->vms[i], d);
	}
	*out = snap;
	return 0;
}

/* ---- acting ---------------------------------------------------------------------------- */

static struct lvh_vm *
lvh_vm_find(struct libvirt_host *lh, int id)
{
	for (size_t i = 0; i < lh->nr_vms; i++)
		if (lh->vms[i].id == id)
			return &lh->vms[i];
	return NULL;
}

/* The CPUs of the node indexes in nodes (NODEMASK_ALL: all), malloc'd; *nr may be 0. */
static int *
lvh_cpus_of(const struct libvirt_host *lh, uint64_t nodes, int *nr)
{
	int total = 0, *cpus;

	for (int n = 0; n < lh->nr_nodes; n++)
		total += lh->nr_cpus[n];
	cpus = xcalloc((size_t)total + 1, sizeof(int));
	*nr = 0;
	for (int n = 0; n < lh->nr_nodes; n++) {
		if (nodes != NODEMASK_ALL && (n >= UTIL_MAX_NODES || !nodemask_test(nodes, n)))
			continue;
		memcpy(cpus + *nr, lh->cpus[n], (size_t)lh->nr_cpus[n] * sizeof(int));
		*nr += lh->nr_cpus[n];
	}
	return cpus;
}

static int
lvh_pin(struct host *h, int vm_id, int vcpu, uint64_t nodes)
{
	struct libvirt_host *lh = lvh_of(h);
	struct lvh_vm *vm = lvh_vm_find(lh, vm_id);
	int nr, ret, *cpus;

	if (vm == NULL) /* not a domain: the Linux way */
		return lh->inner->ops->pin_vcpu(lh->inner, vm_id, vcpu, nodes);
	if (vcpu < 0 || vcpu >= vm->nr_vcpus)
		return -ESRCH;
	cpus = lvh_cpus_of(lh, nodes, &nr);
	/* position in the snapshot -> libvirt's vCPU number (they differ after a hot-unplug) */
	ret = nr > 0 ? lv_conn_pin_vcpu(lh->conn, vm->name, vm->vcpu_index[vcpu], cpus, nr,
	                                lh->last_error, sizeof(lh->last_error))
	             : -EINVAL;
	free(cpus);
	if (ret == -ENOENT)
		ret = -ESRCH; /* the domain went away: routine */
	if (ret == 0) {
		vm->vcpu_nodes[vcpu] = nodes;
		vm->repinned = true;
	}
	return ret;
}

/*
 * A domain whose live memory nodes vnumad widened: narrowed to its vCPUs' nodes once little
 * enough of its memory is left outside them (LVH_NARROW_MIB), so that what the guest
 * allocates later lands there.  Not while its vCPUs may run anywhere (vnumad confines it
 * nowhere, or has put its pins back).
 */
static void
lvh_mems_settle(struct libvirt_host *lh, const struct lvh_vm *vm)
{
	uint64_t all = nodemask_all_of(lh->nr_nodes), target = 0, off = 0, max;

	if (!vm->mems_lever || !lv_mems_changed(lh->mems, vm->name))
		return;
	for (int v = 0; v < vm->nr_vcpus; v++)
		target |= vm->vcpu_nodes[v];
	target &= all;
	if (target == 0 || target == all)
		return;
	for (int n = 0; n < lh->nr_nodes && n < UTIL_MAX_NODES; n++)
		off += nodemask_test(target, n) ? 0 : vm->resident_mib[n];
	max = vm->mem_mib * LVH_NARROW_PERMILLE / 1000;
	if (off > (max > LVH_NARROW_MIB ? max : LVH_NARROW_MIB))
		return;
	lv_mems_narrow(lh->mems, lh->conn, vm->name, lvh_nodes_idmask(lh, target), lh->last_error,
	               sizeof(lh->last_error));
}

/*
 * Emulator threads follow their vCPUs: the union of the nodes they may run on.  When that is
 * every node (vnumad confines the VM nowhere, or has put its vCPUs' affinity back on exit),
 * they go where the domain's own configuration puts them (<emulatorpin>), if it does.
 */
static void
lvh_commit(struct host *h)
{
	struct libvirt_host *lh = lvh_of(h);
	uint64_t all = nodemask_all_of(lh->nr_nodes);

	for (size_t i = 0; i < lh->nr_vms; i++) {
		struct lvh_vm *vm = &lh->vms[i];
		const struct lvh_dom *d = lvh_dom_find(lh, vm->name);
		uint64_t nodes = 0;
		int nr, *cpus;

		lvh_mems_settle(lh, vm);
		if (!vm->repinned)
			continue;
		vm->repinned = false;
		for (int v = 0; v < vm->nr_vcpus; v++)
			nodes |= vm->vcpu_nodes[v];
		if ((nodes & all) == all && d != NULL && d->emulator_cfg.nr > 0) {
			nr = d->emulator_cfg.nr;
			cpus = xcalloc((size_t)nr, sizeof(int));
			memcpy(cpus, d->emulator_cfg.ids, (size_t)nr * sizeof(int));
		} else {
			cpus = lvh_cpus_of(lh, nodes, &nr);
		}
		if (nr > 0)
			lv_conn_pin_emulator(lh->conn, vm->name, cpus, nr, lh->last_error,
			                     sizeof(lh->last_error));
		free(cpus);
	}
	lh->inner->ops->commit(lh->inner);
}

static int
lvh_persist(struct host *h, int vm_id, const char *xml, bool live, bool config)
{
	struct libvirt_host *lh = lvh_of(h);
	struct lvh_vm *vm = lvh_vm_find(lh, vm_id);
	int ret;

	if (vm == NULL)
		return -EOPNOTSUPP; /* a QEMU libvirt does not manage */
	ret = lv_conn_metadata_set(lh->conn, vm->name, xml, live, config, lh->last_error,
	                           sizeof(lh->last_error));
	if (ret == 0 && live)
		lvh_dom_refresh(lh, vm->name); /* the event follows; show it at once */
	return ret;
}

static int
lvh_fetch(struct host *h, int vm_id, bool config, char **xml)
{
	struct libvirt_host *lh = lvh_of(h);
	struct lvh_vm *vm = lvh_vm_find(lh, vm_id);

	*xml = NULL;
	if (vm == NULL)
		return -EOPNOTSUPP; /* a QEMU libvirt does not manage */
	return lv_conn_metadata_get(lh->conn, vm->name, config, xml, lh->last_error,
	                            sizeof(lh->last_error));
}

/* ---- passed through to the Linux host -------------------------------------------------- */

static const char *
lvh_vm_note(struct host *h, int vm_id)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->vm_note != NULL ? in->ops->vm_note(in, vm_id) : "";
}

static double
lvh_now(struct host *h)
{
	return lvh_of(h)->inner->ops->now(lvh_of(h)->inner);
}

static int
lvh_advance(struct host *h, double until_s)
{
	return lvh_of(h)->inner->ops->advance(lvh_of(h)->inner, until_s);
}

static int
lvh_bind(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, uint64_t nodes)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->bind_memory(in, vm_id, start_mib, len_mib, nodes);
}

static int
lvh_move(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, int from_node,
         int to_node, uint64_t mib)
{
	struct libvirt_host *lh = lvh_of(h);
	struct lvh_vm *vm = lvh_vm_find(lh, vm_id);
	int ret;

	/* a node outside the live set: move_pages(2) could not put a page there */
	if (vm != NULL && vm->mems_lever && to_node >= 0 && to_node < lh->nr_nodes) {
		ret = lv_mems_allow(lh->mems, lh->conn, vm->name, lh->node_ids[to_node],
		                    lh->last_error, sizeof(lh->last_error));
		if (ret < 0)
			return ret == -ENOENT ? -ESRCH : ret;
	}
	return lh->inner->ops->move_memory(lh->inner, vm_id, start_mib, len_mib, from_node, to_node,
	                                   mib);
}

static int
lvh_sampling(struct host *h, int vm_id, double scan_mib_s)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->set_sampling(in, vm_id, scan_mib_s);
}

static const char *
lvh_sampling_source(struct host *h, int vm_id, const char **reason)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->sampling_source(in, vm_id, reason);
}

static double
lvh_wake(struct host *h)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->wake_s ? in->ops->wake_s(in) : 0;
}

static const char *
lvh_describe(struct host *h)
{
	struct libvirt_host *lh = lvh_of(h);
	struct host *in = lh->inner;
	int n = snprintf(lh->describe, sizeof(lh->describe), "libvirt %s: %s, %zu domains",
	                 lv_conn_uri(lh->conn),
	                 lv_conn_is_up(lh->conn) ? "connected" : "reconnecting", lh->nr_doms);

	struct lv_mems_stats ms;

	lv_mems_stats_get(lh->mems, &ms);
	if (ms.widened + ms.refused > 0 && n > 0 && (size_t)n < sizeof(lh->describe))
		n += snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
		              "; live memory nodes: widened %llu, narrowed %llu, refused %llu, put "
		              "back %llu",
		              (unsigned long long)ms.widened, (unsigned long long)ms.narrowed,
		              (unsigned long long)ms.refused, (unsigned long long)ms.put_back);
	if (lh->last_error[0] != '\0' && n > 0 && (size_t)n < sizeof(lh->describe))
		n += snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n,
		              " (last error: %.200s)", lh->last_error);
	if (in->ops->describe != NULL && n > 0 && (size_t)n < sizeof(lh->describe))
		snprintf(lh->describe + n, sizeof(lh->describe) - (size_t)n, "; %s",
		         in->ops->describe(in));
	return lh->describe;
}

/* The daemon puts back what it changed: each domain's memory nodes as vnumad found them. */
static void
lvh_put_back(struct host *h)
{
	struct libvirt_host *lh = lvh_of(h);

	lv_mems_put_back(lh->mems, lh->conn, lh->last_error, sizeof(lh->last_error));
}

static void
lvh_close(struct host *h)
{
	struct libvirt_host *lh = lvh_of(h);

	if (lh == NULL)
		return;
	for (size_t i = 0; i < lh->nr_doms; i++)
		lvh_dom_clear(&lh->doms[i]);
	free(lh->doms);
	lvh_vms_clear(lh);
	lvh_nodes_clear(lh);
	lv_mems_free(lh->mems);
	if (lh->conn != NULL)
		lv_conn_close(lh->conn);
	if (lh->inner != NULL)
		lh->inner->ops->close(lh->inner);
	free(lh);
}

static int
lvh_observe_cost(struct host *h, struct host_observe_cost *out)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->observe_cost != NULL ? in->ops->observe_cost(in, out) : -ENODATA;
}

static void
lvh_watch(struct host *h, int vm_id)
{
	struct host *in = lvh_of(h)->inner;

	if (in->ops->watch_vm != NULL)
		in->ops->watch_vm(in, vm_id);
}

/*
 * The scan tunables are this machine's, as are the inner Linux host's: its lever (an inner
 * host without the ops, as in tests: none).
 */
static int
lvh_scan_get(struct host *h, struct scan_tunables *out, const char **why)
{
	struct host *in = lvh_of(h)->inner;

	*why = "the inner host has no scan tunables";
	return in->ops->scan_tunables_get != NULL ? in->ops->scan_tunables_get(in, out, why)
	                                          : -EOPNOTSUPP;
}

static int
lvh_scan_set(struct host *h, const struct scan_tunables *t)
{
	struct host *in = lvh_of(h)->inner;

	return in->ops->scan_tunables_set != NULL ? in->ops->scan_tunables_set(in, t) : -EOPNOTSUPP;
}

/*
 * The inner Linux host's levers (the same snapshot caps), with the pin said as it is done
 * here: a domain's vCPUs through libvirt, other QEMU processes the Linux way.
 */
static void
lvh_levers(struct host *h, struct host_lever *out)
{
	struct libvirt_host *lh = lvh_of(h);
	struct host_lever *pin = &out[host_cap_index(HOST_CAP_PIN)];
	char inner[HOST_LEVER_REASON_MAX];

	host_levers_get(lh->inner, lh->caps, out);
	/* Not bind requests: what libvirt does for a restrictive placement='auto' domain. */
	snprintf(out[host_cap_index(HOST_CAP_BIND_AT_START)].reason, HOST_LEVER_REASON_MAX, "%s",
	         "no bind request: a domain with <numatune><memory mode='restrictive' "
	         "placement='auto'/> starts bound to vnumactl place's advice, through the numad "
	         "shim (docs/placement-advice.md)");
	snprintf(out[host_cap_index(HOST_CAP_BIND_LIVE)].reason, HOST_LEVER_REASON_MAX, "%s",
	         "no bind request: such a domain's live nodeset is widened before vnumad moves its "
	         "memory and narrowed after (docs/linux-host.md, live memory binding)");
	if (pin->state != HOST_LEVER_PRESENT)
		return;
	snprintf(inner, sizeof(inner), "%s", pin->reason);
	snprintf(pin->reason, sizeof(pin->reason),
	         "domains' vCPUs through libvirt (virDomainPinVcpuFlags; %s); other QEMU "
	         "processes: %.160s",
	         lv_conn_is_up(lh->conn) ? "connected" : "reconnecting", inner);
}

static const struct host_ops libvirt_host_ops = {
    .name = "libvirt",
    .close = lvh_close,
    .now = lvh_now,
    .advance = lvh_advance,
    .snapshot = lvh_snapshot,
    .pin_vcpu = lvh_pin,
    .bind_memory = lvh_bind,
    .move_memory = lvh_move,
    .set_sampling = lvh_sampling,
    .commit = lvh_commit,
    .put_back = lvh_put_back,
    .sampling_source = lvh_sampling_source,
    .policy_persist = lvh_persist,
    .policy_fetch = lvh_fetch,
    .vm_note = lvh_vm_note,
    .describe = lvh_describe,
    .observe_cost = lvh_observe_cost,
    .wake_s = lvh_wake,
    .watch_vm = lvh_watch,
    .scan_tunables_get = lvh_scan_get,
    .scan_tunables_set = lvh_scan_set,
    .levers = lvh_levers,
};

int
host_libvirt_open(const char *uri, struct host *inner, struct host **out, char *err, size_t errlen)
{
	struct libvirt_host *lh = xcalloc(1, sizeof(*lh));
	int ret;

	*out = NULL;
	lh->base.ops = &libvirt_host_ops;
	lh->inner = inner;
	lh->mems = lv_mems_new();
	ret = lv_conn_open(uri, &lh->conn, err, errlen);
	if (ret < 0) {
		lvh_close(&lh->base);
		return ret;
	}
	lvh_relist(lh, lvh_now(&lh->base));
	*out = &lh->base;
	return 0;
}

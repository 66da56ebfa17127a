/*
 * snapshot.c - build a struct snapshot from /proc and /sys (snapshot.h).
 */
#include "host/linux/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/discover.h"
#include "host/linux/pfile.h"
#include "host/linux/procfs.h"
#include "host/linux/sysfs.h"
#include "policy/util.h"

/* One VM as read (or carried: o borrowed from the owner's kept reading, not freed here). */
struct vm_obs {
	const struct linux_vm *vm;
	struct linux_vm_obs o;
	bool borrowed;
};

static int
node_index(const struct linux_nodes *nodes, int id)
{
	for (int i = 0; i < nodes->nr_nodes; i++)
		if (nodes->nodes[i].id == id)
			return i;
	return -1;
}

static bool
cpu_in(const int *cpus, int nr, int cpu)
{
	for (int i = 0; i < nr; i++)
		if (cpus[i] == cpu)
			return true;
	return false;
}

/* The allowed-nodes rule of snapshot.h. */
static uint64_t
allowed_nodes(const struct linux_nodes *nodes, const struct linux_task_status *st)
{
	uint64_t all = 0, some = 0;

	for (int i = 0; i < nodes->nr_nodes && i < UTIL_MAX_NODES; i++) {
		const struct linux_node *n = &nodes->nodes[i];
		int in = 0;

		for (int c = 0; c < n->nr_cpus; c++)
			in += cpu_in(st->cpus_allowed, st->nr_cpus_allowed, n->cpus[c]);
		if (n->nr_cpus > 0 && in == n->nr_cpus)
			all |= nodemask_of(i);
		if (in > 0)
			some |= nodemask_of(i);
	}
	return all ? all : some ? some : NODEMASK_ALL;
}

/* Read one of a vCPU thread's files through its kept fds (pfile.h) and parse it. */
static int
vcpu_file_read(const char *root, int pid, const struct linux_vm_vcpu *vc,
               enum linux_task_file which, void *out)
{
	char *data;
	size_t len;
	int ret = linux_task_file_read(vc->files, root, pid, vc->tid, which, &data, &len);

	if (ret < 0)
		return ret;
	if (which == LINUX_TASK_FILE_STAT)
		ret = linux_task_stat_parse(data, len, out);
	else if (which == LINUX_TASK_FILE_STATUS)
		ret = linux_task_status_parse(data, len, out);
	else
		ret = linux_sched_parse(data, len, out);
	free(data);
	return ret;
}

/*
 * 0, -ENOENT (vanished: drop it) or another -errno (malformed: skip the VM); *what names the
 * file that failed.
 */
static int
vcpu_read(const char *root, const struct linux_nodes *nodes, int pid,
          const struct linux_vm_vcpu *vc, struct linux_vcpu_obs *obs, const char **what)
{
	struct linux_task_stat stat;
	struct linux_task_status status = {0};
	int ret;

	memset(obs, 0, sizeof(*obs));
	obs->tid = vc->tid;
	*what = "stat";
	if ((ret = vcpu_file_read(root, pid, vc, LINUX_TASK_FILE_STAT, &stat)) < 0)
		return ret;
	obs->cpu = stat.processor;
	obs->ticks = stat.utime_ticks + stat.stime_ticks;
	obs->start_ticks = stat.starttime_ticks;
	*what = "status";
	if ((ret = vcpu_file_read(root, pid, vc, LINUX_TASK_FILE_STATUS, &status)) < 0)
		return ret;
	obs->allowed_nodes = allowed_nodes(nodes, &status);
	obs->cpu_allowed = cpu_in(status.cpus_allowed, status.nr_cpus_allowed, obs->cpu);
	obs->vm_pin_kib = status.vm_pin_kib;
	linux_task_status_free(&status);
	*what = "sched";
	return vcpu_file_read(root, pid, vc, LINUX_TASK_FILE_SCHED, &obs->sched);
}

void
linux_vm_obs_free(struct linux_vm_obs *o)
{
	for (int i = 0; i < o->nr_vcpus; i++)
		linux_sched_free(&o->vcpus[i].sched);
	free(o->vcpus);
	o->vcpus = NULL;
	o->nr_vcpus = 0;
}

static void
vm_obs_free(struct vm_obs *o)
{
	if (!o->borrowed)
		linux_vm_obs_free(&o->o);
	o->borrowed = false;
	o->o = (struct linux_vm_obs){0};
}

/*
 * Read vm's vCPU threads into o, or, when vm is carried, borrow the owner's kept reading.
 */
static void
vm_obs_read(const char *root, const struct linux_nodes *nodes, const struct linux_vm *vm,
            struct vm_obs *obs, struct linux_snap_aux *aux)
{
	struct linux_vm_obs *o = &obs->o;
	const char *what = "";

	obs->vm = vm;
	if (vm->carried && vm->kept != NULL) {
		obs->o = *vm->kept;
		obs->borrowed = true;
		return;
	}
	o->nr_vcpus = 0;
	o->vcpus = xcalloc((size_t)vm->nr_vcpus + 1, sizeof(*o->vcpus));
	for (int i = 0; i < vm->nr_vcpus; i++) {
		struct linux_vcpu_obs *v = &o->vcpus[o->nr_vcpus];
		int ret = vcpu_read(root, nodes, vm->pid, &vm->vcpus[i], v, &what);

		v->index = vm->vcpus[i].index;
		if (ret == 0) {
			o->nr_vcpus++;
			continue;
		}
		linux_sched_free(&v->sched);
		if (ret != -ENOENT) {
			vm_obs_free(obs); /* malformed: skip the whole VM this round */
			if (aux != NULL) {
				aux->skipped++;
				snprintf(aux->skip_reason, sizeof(aux->skip_reason),
				         "pid %d: task %d %s: %s", vm->pid, vm->vcpus[i].tid, what,
				         strerror(-ret));
			}
			return;
		}
	}
}

/*
 * Done with obs: a fresh reading goes to the owner's keeping, or, for a VM it keeps none of
 * yet, to aux (may be NULL: freed).
 */
static void
vm_obs_release(struct vm_obs *obs, struct linux_vm_obs *to_aux)
{
	struct linux_vm_obs *kept = obs->vm->kept != NULL ? obs->vm->kept : to_aux;

	if (!obs->borrowed && kept != NULL) {
		linux_vm_obs_free(kept);
		*kept = obs->o;
		obs->o = (struct linux_vm_obs){0};
	}
	vm_obs_free(obs);
}

static void
snap_nodes_fill(struct snapshot *snap, const struct linux_nodes *nodes)
{
	for (int i = 0; i < nodes->nr_nodes; i++) {
		const struct linux_node *n = &nodes->nodes[i];

		snap->nodes[i].id = n->id;
		snap->nodes[i].nr_cpus = n->nr_cpus;
		snap->nodes[i].mem_total_mib = n->mem.mem_total_kib / 1024;
		snap->nodes[i].mem_free_mib = n->mem.mem_free_kib / 1024;
		for (int j = 0; j < nodes->nr_nodes; j++)
			snap->distance[i * nodes->nr_nodes + j] = n->distance[j];
		for (int c = 0; c < n->nr_cpus; c++)
			snap->cpu_node[n->cpus[c]] = i;
	}
}

/*
 * The node a vCPU counts as on: the node of the CPU it last ran on, unless its affinity no
 * longer allows that CPU; then the first node its affinity allows, where it runs next.  A
 * halted or idle vCPU pinned elsewhere does not run again for a while, and the CPU it last ran
 * on would keep showing the node it left (vnumad would judge it misplaced and pin it again).
 */
static int
vcpu_node(const struct linux_vcpu_obs *v, const struct snapshot *snap)
{
	uint64_t allowed = v->allowed_nodes & nodemask_all_of(snap->nr_nodes);
	int node = v->cpu >= 0 && v->cpu < snap->nr_cpus ? snap->cpu_node[v->cpu] : 0;

	if (v->cpu_allowed || allowed == 0 || nodemask_test(allowed, node))
		return node;
	return nodemask_first(allowed);
}

/*
 * The guest's vNUMA cells, as MiB ranges of guest RAM, and each vCPU's cell by its own index
 * (discovery checked that every vCPU lies in one).
 */
static void
snap_vm_cells_fill(struct snap_vm *sv, const struct linux_qemu_numa *numa)
{
	if (numa->nr_cells == 0)
		return;
	snapshot_vm_set_cells(sv, numa->nr_cells);
	for (int c = 0; c < numa->nr_cells; c++) {
		const struct linux_qemu_cell *cell = &numa->cells[c];

		sv->cells[c].mem_start_mib = cell->start_bytes >> 20;
		sv->cells[c].mem_mib =
		    ((cell->start_bytes + cell->size_bytes) >> 20) - sv->cells[c].mem_start_mib;
	}
	for (int v = 0; v < sv->nr_vcpus; v++) {
		int c = linux_qemu_numa_cell_of(numa, sv->vcpus[v].index);

		sv->vcpu_cell[v] = c >= 0 ? c : 0;
	}
}

static void
snap_vm_fill(struct snap_vm *sv, const struct vm_obs *obs, const struct snapshot *snap,
             const struct linux_nodes *nodes)
{
	const struct linux_vm *vm = obs->vm;
	const struct linux_vm_obs *o = &obs->o;

	sv->id = vm->pid;
	memcpy(sv->name, vm->name, sizeof(sv->name));
	sv->mem_mib = vm->mem_mib;
	for (int n = 0; n < vm->nr_resident; n++) {
		int idx = node_index(nodes, n);

		if (idx >= 0)
			sv->resident_mib[idx] = vm->resident_kib[n] / 1024;
	}
	for (int c = 0; c < o->nr_vcpus; c++) {
		const struct linux_vcpu_obs *v = &o->vcpus[c];
		struct snap_vcpu *sc = &sv->vcpus[c];
		uint64_t *priv = (uint64_t *)sc->faults_private;
		uint64_t *shared = (uint64_t *)sc->faults_shared;

		sc->tid = v->tid;
		sc->index = v->index;
		sc->cpu = v->cpu;
		sc->node = vcpu_node(v, snap);
		sc->allowed_nodes = v->allowed_nodes;
		if (v->vm_pin_kib / 1024 > sv->pinned_mib)
			sv->pinned_mib = v->vm_pin_kib / 1024;
		for (int f = 0; f < v->sched.nr_faults; f++) {
			int idx = node_index(nodes, v->sched.faults[f].node);

			if (idx < 0)
				continue;
			priv[idx] = v->sched.faults[f].task_private;
			shared[idx] = v->sched.faults[f].task_shared;
		}
	}
	snap_vm_cells_fill(sv, &vm->numa);
}

static int
max_cpu_id(const struct linux_nodes *nodes)
{
	int max = 0;

	for (int i = 0; i < nodes->nr_nodes; i++)
		for (int c = 0; c < nodes->nodes[i].nr_cpus; c++)
			if (nodes->nodes[i].cpus[c] > max)
				max = nodes->nodes[i].cpus[c];
	return max;
}

/* The per-vCPU extras of aux for snapshot VM i, read as o. */
static void
snap_aux_fill(struct linux_snap_aux *aux, const struct snapshot *snap, int i,
              const struct vm_obs *obs, size_t vm_index)
{
	const struct linux_vm_obs *o = &obs->o;
	size_t first = (size_t)(snap->vms[i].vcpus - snap->vcpu_store);

	aux->vm_of[i] = vm_index;
	for (int c = 0; c < o->nr_vcpus; c++) {
		aux->vcpu_ticks[first + (size_t)c] = o->vcpus[c].ticks;
		aux->vcpu_start_ticks[first + (size_t)c] = o->vcpus[c].start_ticks;
	}
}

int
linux_snapshot_assemble(const char *root, const struct linux_nodes *nodes,
                        const struct linux_vm *vms, size_t nr_vms, struct snapshot **out,
                        struct linux_snap_aux *aux)
{
	struct vm_obs *obs = xcalloc(nr_vms + 1, sizeof(*obs));
	size_t *from = xcalloc(nr_vms + 1, sizeof(size_t));
	int *nr_vcpus = xcalloc(nr_vms + 1, sizeof(int)), nr_kept = 0, total = 0;
	struct snapshot *snap;

	for (size_t i = 0; i < nr_vms; i++) {
		vm_obs_read(root, nodes, &vms[i], &obs[nr_kept], aux);
		if (obs[nr_kept].o.nr_vcpus > 0) {
			nr_vcpus[nr_kept] = obs[nr_kept].o.nr_vcpus;
			total += nr_vcpus[nr_kept];
			from[nr_kept++] = i;
		} else {
			vm_obs_free(&obs[nr_kept]); /* every thread vanished */
		}
	}
	snap = snapshot_new(nodes->nr_nodes, max_cpu_id(nodes) + 1, nr_kept, nr_vcpus);
	snap_nodes_fill(snap, nodes);
	if (aux != NULL) {
		aux->vm_of = xcalloc((size_t)nr_kept + 1, sizeof(size_t));
		aux->obs = xcalloc((size_t)nr_kept + 1, sizeof(*aux->obs));
		aux->nr_obs = nr_kept;
		aux->vcpu_ticks = xcalloc((size_t)total + 1, sizeof(uint64_t));
		aux->vcpu_start_ticks = xcalloc((size_t)total + 1, sizeof(uint64_t));
	}
	for (int i = 0; i < nr_kept; i++) {
		snap_vm_fill(&snap->vms[i], &obs[i], snap, nodes);
		if (aux != NULL)
			snap_aux_fill(aux, snap, i, &obs[i], from[i]);
		vm_obs_release(&obs[i], aux != NULL ? &aux->obs[i] : NULL);
	}
	free(obs);
	free(from);
	free(nr_vcpus);
	*out = snap;
	return 0;
}

void
linux_snap_aux_free(struct linux_snap_aux *aux)
{
	for (int i = 0; aux->obs != NULL && i < aux->nr_obs; i++)
		linux_vm_obs_free(&aux->obs[i]);
	free(aux->obs);
	aux->obs = NULL;
	aux->nr_obs = 0;
	free(aux->vm_of);
	free(aux->vcpu_ticks);
	free(aux->vcpu_start_ticks);
	aux->vm_of = NULL;
	aux->vcpu_ticks = aux->vcpu_start_ticks = NULL;
}

int
linux_snapshot_build(const char *root, struct snapshot **out)
{
	struct linux_nodes nodes = {0};
	struct linux_vm *vms = NULL;
	size_t nr_vms = 0;
	int ret;

	*out = NULL;
	if ((ret = linux_nodes_read(root, &nodes)) < 0)
		goto out;
	if ((ret = linux_vms_discover(root, &vms, &nr_vms)) < 0)
		goto out;
	ret = linux_snapshot_assemble(root, &nodes, vms, nr_vms, out, NULL);
out:
	linux_vms_free(vms, nr_vms);
	linux_nodes_free(&nodes);
	return ret;
}

double
linux_cpu_use(uint64_t prev_ticks, uint64_t now_ticks, double dt_s, long hz)
{
	double use;

	if (dt_s <= 0 || hz <= 0 || now_ticks < prev_ticks)
		return 0;
	use = (double)(now_ticks - prev_ticks) / (double)hz / dt_s;
	return use > 1 ? 1 : use;
}

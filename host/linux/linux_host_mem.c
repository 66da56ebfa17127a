/*
 * linux_host_mem.c - memory moves of the Linux backend (linux_host.h): a plan's "move up to
 * MiB of this VM's RAM from node A to node B" becomes a job over the VM's guest RAM mappings,
 * fed to the paced move_pages migrator (actuate.h) one mapping at a time, so the job's cap
 * holds across mappings.  Only pages now on A move (from_nodes), never shared ones (the
 * migrator uses MPOL_MF_MOVE only).
 *
 * Guest-physical offsets: the VM's guest RAM ranges (struct lh_vm.ram, linux_host.c) end to
 * end.  For a guest with vNUMA cells backed by memory backends, those are the cells' backends
 * in cell order, wherever QEMU mapped them (ram_layout.h: not in address order, since the
 * kernel hands out mappings top-down); when they could not be told apart, no range is known
 * and no move is made (-EOPNOTSUPP, the reason in `vnumactl status`) rather than move the
 * wrong cell's pages.  Such a refused move's MiB count as failed in the next snapshot, so the
 * engine backs off (up to a minute between asks) instead of asking again every round.
 * Otherwise QEMU has one RAM block, its mappings in ascending address.
 *
 * Accounting, reported in the next snapshot: moved bytes are "done"; pages refused for a
 * reason that will not pass by itself (ENOMEM: node full; EBUSY after the retries; ENODEV,
 * EINVAL, other) are "failed" and make the engine back off.  Pages skipped because they are
 * not there (ENOENT, EFAULT: never touched; pages the kernel's NUMA scanner made inaccessible
 * are unprotected by the migrator first, see unprotect.c) or shared (EACCES) are neither: the
 * next round sees them still on A and asks again.  Moved bytes also adjust the VM's residency
 * figure (residency.h) until it is measured again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/linux_host.h"
#include "policy/util.h"

#define LH_MIB ((uint64_t)1024 * 1024)

static uint64_t
lh_failed_pages(const struct linux_migrate_counts *c)
{
	return c->pages_failed[LINUX_MIGRATE_ERR_BUSY] + c->pages_failed[LINUX_MIGRATE_ERR_NOMEM] +
	       c->pages_failed[LINUX_MIGRATE_ERR_NODEV] + c->pages_failed[LINUX_MIGRATE_ERR_INVAL] +
	       c->pages_failed[LINUX_MIGRATE_ERR_OTHER];
}

/* The host ranges of guest RAM [off, off + len) (len 0: to the end) as job's ranges. */
static void
lh_job_ranges(const struct lh_vm *vm, uint64_t off, uint64_t len, struct lh_job *job)
{
	job->ranges = xcalloc((size_t)vm->nr_ram + 1, sizeof(*job->ranges));
	job->nr_ranges = linux_ram_ranges_cut(vm->ram, vm->nr_ram, off, len, job->ranges);
}

/* Queue the job's next range for pid; false when none is left or the kernel side refused. */
static bool
lh_job_start_next(struct linux_host *lh, int pid, struct lh_job *job)
{
	while (job->next_range < job->nr_ranges && job->left_bytes > 0) {
		const struct linux_ram_range *r = &job->ranges[job->next_range++];
		struct linux_migrate_req req = {
		    .pid = pid,
		    .start = r->start & ~(lh->page_bytes - 1),
		    .len = r->len + (r->start & (lh->page_bytes - 1)),
		    .to_node = job->to_node,
		    .max_bytes = job->left_bytes,
		    .from_nodes = job->from_nodes,
		};
		int id = linux_migrator_add(lh->mig, &req);

		if (id < 0)
			return false;
		job->req_id = id;
		job->seen_moved = job->seen_failed = 0;
		return true;
	}
	return false;
}

/* The guest cell whose whole range is [start_mib, +len_mib), or -1 (residency.h, per cell). */
static int
lh_move_cell(const struct lh_vm *vm, uint64_t start_mib, uint64_t len_mib)
{
	for (int c = 0; c < vm->nr_cells && len_mib > 0; c++)
		if (vm->cells[c].start >> 20 == start_mib &&
		    ((vm->cells[c].start + vm->cells[c].len) >> 20) - start_mib == len_mib)
			return c;
	return -1;
}

int
linux_host_move(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, int from_node,
                int to_node, uint64_t mib)
{
	struct linux_host *lh = (struct linux_host *)h;
	struct lh_vm *vm;
	struct lh_job job = {.req_id = -1};

	if ((vm = linux_host_vm(lh, vm_id)) == NULL)
		return -ESRCH;
	if (vm->ram_error[0] != '\0') {
		/* which cell is where is not known: move none, and count the MiB as failed */
		vm->failed_bytes += mib * LH_MIB;
		return -EOPNOTSUPP;
	}
	if (lh->root != NULL)
		return -EROFS; /* a tree read from a directory is never acted on */
	if (from_node < 0 || from_node >= lh->nodes.nr_nodes || to_node < 0 ||
	    to_node >= lh->nodes.nr_nodes || lh->nodes.nodes[from_node].id >= 64 || mib == 0)
		return -EINVAL;
	job.from_nodes = 1ull << lh->nodes.nodes[from_node].id;
	job.cell = lh_move_cell(vm, start_mib, len_mib);
	job.to_node = lh->nodes.nodes[to_node].id;
	job.left_bytes = mib * LH_MIB;
	lh_job_ranges(vm, start_mib * LH_MIB, len_mib * LH_MIB, &job);
	if (job.nr_ranges == 0) {
		free(job.ranges);
		return -ERANGE; /* no guest RAM there (or none found) */
	}
	if (!lh_job_start_next(lh, vm->pid, &job)) {
		free(job.ranges);
		return -EAGAIN; /* the migrator's queue is full: ask again next round */
	}
	util_array_reserve((void **)&vm->jobs, &vm->cap_jobs, vm->nr_jobs + 1, sizeof(*vm->jobs));
	vm->jobs[vm->nr_jobs++] = job;
	return 0;
}

/* The job's one source node id, or -1 (linux_host_move names one). */
static int
lh_job_from_id(const struct lh_job *job)
{
	return job->from_nodes != 0 && (job->from_nodes & (job->from_nodes - 1)) == 0
	           ? __builtin_ctzll(job->from_nodes)
	           : -1;
}

/* Account the active request's progress; true while the job has work left. */
static bool
lh_job_update(struct linux_host *lh, struct lh_vm *vm, struct lh_job *job)
{
	struct linux_migrate_status st;
	uint64_t failed;

	if (job->req_id < 0 || linux_migrator_status(lh->mig, job->req_id, &st) < 0)
		return false;
	failed = lh_failed_pages(&st.counts);
	vm->done_bytes += st.counts.bytes_moved - job->seen_moved;
	linux_resid_moved(&vm->resid, job->cell, lh_job_from_id(job), job->to_node,
	                  st.counts.bytes_moved - job->seen_moved);
	vm->failed_bytes += (failed - job->seen_failed) * lh->page_bytes;
	job->left_bytes -= st.counts.bytes_moved - job->seen_moved < job->left_bytes
	                       ? st.counts.bytes_moved - job->seen_moved
	                       : job->left_bytes;
	job->seen_moved = st.counts.bytes_moved;
	job->seen_failed = failed;
	if (st.state == LINUX_MIGRATE_ACTIVE || linux_migrator_release(lh->mig, job->req_id) < 0)
		return true;
	job->req_id = -1;
	if (st.state != LINUX_MIGRATE_DONE)
		return false; /* node full, VM gone, or refused: the job ends here */
	return lh_job_start_next(lh, vm->pid, job);
}

static void
lh_orphans_release(struct linux_host *lh)
{
	size_t keep = 0;

	for (size_t i = 0; i < lh->nr_orphans; i++)
		if (linux_migrator_release(lh->mig, lh->orphans[i]) == -EBUSY)
			lh->orphans[keep++] = lh->orphans[i];
	lh->nr_orphans = keep;
}

void
linux_host_mem_advance(struct linux_host *lh, double now_s)
{
	double dt_s = lh->mig_real_s > 0 ? now_s - lh->mig_real_s : 0;

	lh->mig_real_s = now_s;
	lh->mig_clock_s += dt_s < 0                       ? 0
	                   : dt_s > LINUX_HOST_TICK_MAX_S ? LINUX_HOST_TICK_MAX_S
	                                                  : dt_s;
	linux_migrator_tick(lh->mig, lh->mig_clock_s);
	for (size_t v = 0; v < lh->nr_vms; v++) {
		struct lh_vm *vm = &lh->vms[v];
		size_t keep = 0;

		for (size_t j = 0; j < vm->nr_jobs; j++) {
			if (lh_job_update(lh, vm, &vm->jobs[j]))
				vm->jobs[keep++] = vm->jobs[j];
			else
				free(vm->jobs[j].ranges);
		}
		vm->nr_jobs = keep;
	}
	lh_orphans_release(lh);
}

uint64_t
linux_host_mem_pending(const struct lh_vm *vm)
{
	uint64_t sum = 0;

	for (size_t j = 0; j < vm->nr_jobs; j++)
		sum += vm->jobs[j].left_bytes;
	return sum;
}

void
linux_host_mem_drop(struct linux_host *lh, struct lh_vm *vm)
{
	for (size_t j = 0; j < vm->nr_jobs; j++) {
		if (vm->jobs[j].req_id >= 0 &&
		    linux_migrator_release(lh->mig, vm->jobs[j].req_id) == -EBUSY) {
			util_array_reserve((void **)&lh->orphans, &lh->cap_orphans,
			                   lh->nr_orphans + 1, sizeof(*lh->orphans));
			lh->orphans[lh->nr_orphans++] = vm->jobs[j].req_id;
		}
		free(vm->jobs[j].ranges);
	}
	free(vm->jobs);
	vm->jobs = NULL;
	vm->nr_jobs = vm->cap_jobs = 0;
}

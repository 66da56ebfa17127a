/*
 * actuate.h - the Linux primitives behind pin_vcpu and move_memory (issue 5 item 4): thread
 * affinity that respects the thread's cpuset, page-location sampling, and a paced page
 * migration engine on move_pages(2).  Library code; the privileged-actions module checks
 * requests (node in range, thread still a vCPU of that VM) before calling anything here.
 *
 * Errors: 0 or -errno.  -ESRCH means the thread or process went away: routine, not an error.
 *
 * move_pages(2) is called as a raw syscall (no libnuma).  We pass MPOL_MF_MOVE and never
 * MPOL_MF_MOVE_ALL: with MOVE only pages mapped by this one process move, so pages shared with
 * other processes (shared file pages, copy-on-write pages after fork, KSM-merged pages) stay
 * where they are and report an error or their node - which is what a per-VM balancer wants.
 * MOVE_ALL would move them under every other process that maps them.
 */
#ifndef VNUMAD_HOST_LINUX_ACTUATE_H
#define VNUMAD_HOST_LINUX_ACTUATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- CPU affinity ----------------------------------------------------------------------- */

/*
 * The CPUs tid's cpuset allows, ascending, malloc'd into *cpus (owned by the caller): the
 * cgroup v1 cpuset.effective_cpus (or cpuset.cpus) of tid's cpuset cgroup, else the cgroup v2
 * cpuset.cpus.effective of its cgroup or of the nearest ancestor that has one, else
 * <root>/sys/devices/system/cpu/online.  root NULL or "/" is this machine.  -ESRCH when tid
 * is gone, -ENOENT when none of these files is readable.
 */
int linux_cpuset_cpus_read(const char *root, pid_t tid, int **cpus, int *nr);

/*
 * Set tid's affinity to cpus[0..nr) (any order, duplicates allowed, ids < LINUX_MAX_CPUS)
 * intersected with its cpuset (above; skipped when no cpuset file is readable).  An empty
 * intersection is -EINVAL with a message in err, before asking the kernel.  -ESRCH: tid gone.
 */
int linux_affinity_set(pid_t tid, const int *cpus, int nr, char *err, size_t errlen);
/* tid's current affinity, ascending, malloc'd into *cpus.  -ESRCH: tid gone. */
int linux_affinity_get(pid_t tid, int **cpus, int *nr);

/* ---- Page locations --------------------------------------------------------------------- */

/*
 * Where pid's pages at addrs[0..n) are, without moving them (move_pages with no node list):
 * nodes_out[i] is a node id, or a negative errno for that page (-ENOENT: not present, i.e.
 * never touched or swapped out; -EFAULT: not mapped or the zero page).  pid 0 is the caller.
 * On 6.1 (seen on Debian's kernel with 2 emulated nodes) a page that automatic NUMA balancing
 * has made PROT_NONE reads as -ENOENT, or -EFAULT when THP-mapped, to both this and the
 * move, until the task touches it again: the migrator unprotects such pages (below) and looks
 * again before it decides what to move.
 */
int linux_pages_where(pid_t pid, void *const *addrs, size_t n, int *nodes_out);

/*
 * Make pid's pages at addrs[0..n) (page aligned) that the kernel's NUMA scanner has made
 * inaccessible movable again: each one /proc/PID/pagemap says is present is read one byte
 * with process_vm_readv(2), which takes the hinting fault the way the process would; pages not
 * present are left alone (nothing is allocated or swapped in).  Returns how many pages were
 * read, or -errno (-ESRCH: pid gone).  See unprotect.c for why.
 */
int linux_pages_unprotect(pid_t pid, void *const *addrs, size_t n, uint64_t page_bytes);

/* ---- Paced page migration --------------------------------------------------------------- */

/* Default pages per move_pages call: 512 x 4 KiB = 2 MiB, one huge page's worth. */
#define LINUX_MIGRATE_BATCH_PAGES 512
/*
 * Most pages a tick looks at (sampled or moved): 32768 x 4 KiB = 128 MiB.  Bounds one tick's
 * time when whole ranges cost no budget: already in place, or (seen on 6.1 with automatic
 * NUMA balancing on) all absent or unmapped to move_pages because the kernel's scanner has
 * just protected them.  Such a range is only sampled, 1-20 ms per 512-page call on an
 * emulated host; 1 GiB per tick kept the daemon from its control socket for over 10 s.
 */
#define LINUX_MIGRATE_SCAN_MAX_PAGES (32 * 1024)
/*
 * Most wall-clock time one tick spends, seconds (checked between batches, so a tick may run
 * over by one batch): 0.05.  Unprotecting a page costs a hinting fault, and on an emulated
 * host a tick of 32768 such pages took seconds, which kept the daemon's loop (and its control
 * socket) waiting; at 0.05 s the daemon, which ticks every LINUX_HOST_BUSY_WAKE_S while pages
 * move, still gives the migrator about half its time.
 */
#define LINUX_MIGRATE_TICK_WALL_S 0.05
/*
 * Longest idle time whose budget carries over, in seconds: after a pause the engine may catch
 * up one second's worth, never more, so a stalled agent does not burst.
 */
#define LINUX_MIGRATE_BURST_S 1.0
/* EBUSY pages kept for retry (host-wide); more are counted failed.  Each is tried this often. */
#define LINUX_MIGRATE_RETRY_MAX   4096
#define LINUX_MIGRATE_RETRY_TRIES 3
/* Most requests queued at once (finished ones count until released). */
#define LINUX_MIGRATE_MAX_REQS 1024

/* One request: move [start, start + len) of pid to to_node. */
struct linux_migrate_req {
	pid_t pid;
	uint64_t start;     /* page aligned */
	uint64_t len;       /* bytes, > 0 */
	int to_node;        /* OS node id */
	uint64_t max_bytes; /* stop after moving this much; 0 = no cap */
	/*
	 * Address step: 0 = the base page size; 2 MiB when the caller knows the range is
	 * THP- or hugetlb-backed (smaps AnonHugePages, numa_maps "huge"): one entry per huge page.
	 * With base steps a huge page still moves whole on its first entry (the rest report it
	 * already on the target), so bytes are charged right either way, but a batch cut by the
	 * budget inside a huge page may overshoot the tick by up to one huge page.
	 */
	uint64_t step_bytes;
	/*
	 * Only pages now on one of these OS nodes (bit n = node n) move; others in the range are
	 * left alone and counted in pages_other.  0 = pages on any node but to_node.
	 */
	uint64_t from_nodes;
};

enum linux_migrate_state {
	LINUX_MIGRATE_ACTIVE,
	LINUX_MIGRATE_DONE,      /* range walked (or max_bytes moved) */
	LINUX_MIGRATE_NODE_FULL, /* a page failed with ENOMEM: the target node is full; stopped */
	LINUX_MIGRATE_GONE,      /* the process went away (ESRCH): ended quietly */
	LINUX_MIGRATE_FAILED,    /* the kernel refused the whole call (see error) */
};

/* Per-page failure counters, by errno. */
enum linux_migrate_err {
	LINUX_MIGRATE_ERR_BUSY,  /* EBUSY: retried, counted when retries run out */
	LINUX_MIGRATE_ERR_NOMEM, /* ENOMEM: node full */
	LINUX_MIGRATE_ERR_ACCES, /* EACCES: mapped by several processes: skipped */
	LINUX_MIGRATE_ERR_FAULT, /* EFAULT: not mapped, zero page: skipped */
	LINUX_MIGRATE_ERR_NOENT, /* ENOENT: not present (never touched, swapped): skipped */
	LINUX_MIGRATE_ERR_NODEV, /* ENODEV: target node offline or absent */
	LINUX_MIGRATE_ERR_INVAL, /* EINVAL */
	LINUX_MIGRATE_ERR_OTHER, /* anything else */
	LINUX_MIGRATE_NR_ERRS
};

struct linux_migrate_counts {
	uint64_t pages_moved;
	uint64_t pages_already;     /* already on the target node: done, no bytes charged */
	uint64_t pages_other;       /* on a node outside from_nodes: left alone */
	uint64_t pages_unprotected; /* made accessible again to be looked at (unprotect.c) */
	uint64_t pages_failed[LINUX_MIGRATE_NR_ERRS];
	uint64_t bytes_moved;
};

/* What became of one request. */
struct linux_migrate_status {
	enum linux_migrate_state state;
	int error;     /* -errno for NODE_FULL (-ENOMEM), GONE (-ESRCH), FAILED; else 0 */
	uint64_t next; /* next address to look at */
	struct linux_migrate_counts counts;
};

/* Host-wide counters. */
struct linux_migrator_stats {
	struct linux_migrate_counts counts;
	uint64_t syscalls;
	uint64_t requests_done, requests_node_full, requests_gone, requests_failed;
	uint64_t retries_pending;
	uint64_t last_tick_bytes; /* bytes charged in the last tick */
	double bytes_s;           /* achieved: bytes moved / time since the first tick */
};

/*
 * The move_pages(2) call, replaceable for tests (a fake kernel with two nodes): same
 * arguments and result as the syscall (-1 and errno on failure).
 */
typedef long (*linux_move_pages_fn)(void *ctx, pid_t pid, unsigned long count, void **pages,
                                    const int *nodes, int *status, int flags);

/*
 * The unprotect step, replaceable for tests: same arguments and result as
 * linux_pages_unprotect.  Called on the pages a sample found absent (-ENOENT, -EFAULT) before
 * they are sampled again.
 */
typedef int (*linux_unprotect_fn)(void *ctx, pid_t pid, void *const *pages, size_t n,
                                  uint64_t page_bytes);

struct linux_migrator;

/* rate_mib_s > 0 (host-wide cap), batch_pages 0 = LINUX_MIGRATE_BATCH_PAGES.  Owned by caller. */
struct linux_migrator *linux_migrator_new(double rate_mib_s, int batch_pages);
void linux_migrator_free(struct linux_migrator *m);
/*
 * Replace the syscall (NULL restores the real one).  A fake syscall turns the unprotect step
 * off (its addresses are not the process's); set a fake one after, if wanted.
 */
void linux_migrator_set_syscall(struct linux_migrator *m, linux_move_pages_fn fn, void *ctx);
/*
 * The wall-clock limit of one tick in seconds (LINUX_MIGRATE_TICK_WALL_S by default; 0: none,
 * for tests whose fake clock must decide alone).
 */
void linux_migrator_set_tick_wall(struct linux_migrator *m, double wall_s);
/* Replace the monotonic wall clock (seconds) the tick limit is measured on (NULL: the real). */
void linux_migrator_set_wall_clock(struct linux_migrator *m, double (*fn)(void *ctx), void *ctx);
/* Replace the unprotect step (NULL: none, absent pages are only counted). */
void linux_migrator_set_unprotect(struct linux_migrator *m, linux_unprotect_fn fn, void *ctx);

/* Queue a request: its id (>= 0) or -EINVAL (bad request) / -ENOSPC (queue full). */
int linux_migrator_add(struct linux_migrator *m, const struct linux_migrate_req *req);
/* 0 and *out, or -ENOENT for an unknown or released id. */
int linux_migrator_status(const struct linux_migrator *m, int id, struct linux_migrate_status *out);
/* Forget a finished request (its slot is reused); -EBUSY while it is active. */
int linux_migrator_release(struct linux_migrator *m, int id);
/* True while any request is active or any retry is pending. */
bool linux_migrator_busy(const struct linux_migrator *m);

/*
 * Do this tick's work at time now_s (seconds, any monotonic origin; the first tick only
 * starts the clock): retries first, then requests in turn (a tick cut short by
 * LINUX_MIGRATE_SCAN_MAX_PAGES or the wall-clock limit resumes with the next), moving at most
 * rate x elapsed bytes (plus what earlier ticks left unused, up to LINUX_MIGRATE_BURST_S).
 * Returns the bytes charged this tick.
 */
uint64_t linux_migrator_tick(struct linux_migrator *m, double now_s);
void linux_migrator_stats_get(const struct linux_migrator *m, struct linux_migrator_stats *out);

#endif

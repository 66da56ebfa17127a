/*
 * discover_cache.h - QEMU discovery (discover.h) kept across rounds, so that a round costs
 * what changed since the last one, not a read of every process on the host.
 *
 * Each scan reads the directory of <root>/proc (one open) - or, given the kernel's process
 * events since the last scan (struct linux_proc_delta, procconn.h), applies them instead and
 * reads no listing but at the first scan, after lost events and at the rescan - then:
 * - a pid seen before keeps its verdict: not QEMU, or QEMU with what its command line gave
 *   (name, -m, the vNUMA cells and memory backends, linux_qemu_numa); comm and cmdline are
 *   read only for pids new since the last scan; pids no longer there are forgotten;
 * - but a process judged not QEMU has its comm read again every scan while it is young (first
 *   listed less than LINUX_DISCOVER_YOUNG_S ago), and is judged again when it changed: it
 *   exec()ed, as the child libvirt forks does into QEMU;
 * - a QEMU pid's start time (field 22 of /proc/<pid>/stat, kept open, pfile.h) is read every
 *   scan that lists /proc; when it changed, the pid was reused and the process is read afresh
 *   (with events, its exit and the new fork say so);
 * - a QEMU process's task directory is read every scan; a thread's comm only when its tid is
 *   new (or while it still carries the process's own name: a thread names itself just after
 *   it starts, so that verdict waits LINUX_DISCOVER_NAME_WAIT_S); each vCPU thread's stat,
 *   status and sched stay open for snapshot.c (struct linux_vm_vcpu.files);
 * - the RAM mappings (/proc/<pid>/maps, ram_layout.h) are read every scan, numa_maps only
 *   for the VMs the owner's walk_want asks for (linux_discover_cache_opts_set; residency.h
 *   says when a walk is worth its cost);
 * - every LINUX_DISCOVER_RESCAN_S the cache is dropped and every process read again, which
 *   catches a process that exec()ed into QEMU under a pid already judged, and a pid reused
 *   between two scans by a process that is not QEMU.
 * A process whose comm or cmdline is malformed is skipped and counted as before, and not
 * remembered: it is read again next scan.
 *
 * Owner: the caller of linux_discover_cache_new (the Linux host keeps one per host).
 */
#ifndef VNUMAD_HOST_LINUX_DISCOVER_CACHE_H
#define VNUMAD_HOST_LINUX_DISCOVER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/linux/discover.h"

/*
 * Seconds between two full rescans of every process.  Default 300: a process that exec()s
 * into QEMU under its old pid (a wrapper script that ends in `exec qemu-system-...`, which
 * vnumad may catch before the exec) is found within five minutes, while a host with 30,000
 * processes pays the ~40 us per process of comm and cmdline once in 300 rounds instead of
 * every round.  A wrapper that forks QEMU gives it a new pid and is found at the next scan.
 */
#define LINUX_DISCOVER_RESCAN_S 300.0
/*
 * How long a process judged not QEMU is watched for an exec(), seconds from the scan that
 * first listed it: its comm is read every scan until then (one open), and a changed comm has
 * it judged again.  libvirt forks a child that sets up cgroups and namespaces before it
 * exec()s QEMU, and a scan can fall in between; so can a scan in the daemon's first seconds,
 * which lists every process for the first time.  Default 5 s: five rounds, ample for that
 * set-up even on a loaded host, while the processes a busy host starts and ends by the second
 * cost one open a round each, and only while young.  Later exec()s wait for the rescan.
 */
#define LINUX_DISCOVER_YOUNG_S 5.0
/*
 * How long a thread that still has its process's own name may be named yet, seconds: its
 * comm is read again every scan until then, after which it is judged not a vCPU.  QEMU and
 * vnuma-load name a vCPU thread first thing in it, so a scan can catch it unnamed only in
 * its first microseconds; 2 s is two rounds at the default sample period.
 */
#define LINUX_DISCOVER_NAME_WAIT_S 2.0

/*
 * What the kernel's process events (procconn.h) said since the last scan, in order: a scan
 * given one reads no listing of <root>/proc but applies these to the processes it knows.
 */
enum linux_proc_event_kind {
	LINUX_PROC_EVENT_NEW,     /* a process (not a thread) was forked */
	LINUX_PROC_EVENT_CHANGED, /* a process exec()ed or renamed its main thread: judge again */
	LINUX_PROC_EVENT_EXIT,    /* a process's main thread exited */
};

struct linux_proc_event {
	int pid;
	enum linux_proc_event_kind kind;
};

/*
 * Most events a delta keeps.  Beyond it the delta is marked full and the next scan lists
 * <root>/proc, as it would after events lost in the kernel: a host forking this many
 * processes between two rounds pays the listing it would have paid without events, and the
 * daemon's memory stays bounded.  Default 65536 (1 MiB of events).
 */
#define LINUX_PROC_DELTA_MAX_EVENTS 65536

struct linux_proc_delta {
	struct linux_proc_event *events; /* owned */
	size_t nr, cap;
	bool full; /* events were lost (or too many): the next scan lists <root>/proc */
};

/* Append one event (or mark d full beyond LINUX_PROC_DELTA_MAX_EVENTS). */
void linux_proc_delta_add(struct linux_proc_delta *d, int pid, enum linux_proc_event_kind kind);
/* Empty d for the next round (its array kept). */
void linux_proc_delta_clear(struct linux_proc_delta *d);
void linux_proc_delta_free(struct linux_proc_delta *d);

struct linux_discover_cache;

/* max_fds: fds kept open, as linux_pfile_pool_init (-1: the default, 0: none). */
struct linux_discover_cache *linux_discover_cache_new(int max_fds);
/* Closes every kept fd; NULL-safe. */
void linux_discover_cache_free(struct linux_discover_cache *cache);
/*
 * One scan of <root>/proc at now_s (a monotonic clock, seconds; the rescan period is counted
 * on it).  *out, *nr and *skips (may be NULL) as linux_vms_discover_skips; the VMs' vcpus[]
 * .files point into the cache and stay valid until its next scan or its free.  0, or -errno
 * when <root>/proc itself cannot be read.
 */
int linux_discover_cache_scan(struct linux_discover_cache *cache, const char *root, double now_s,
                              struct linux_vm **out, size_t *nr,
                              struct linux_discover_skips *skips);
/*
 * linux_discover_cache_scan, with the process set taken from delta instead of a listing of
 * <root>/proc: pids that exited are forgotten, new ones judged, changed ones judged again
 * (and young processes are not re-read for an exec: the events report it).  The listing is
 * read all the same when delta is NULL or full, at the first scan and at each rescan.
 */
int linux_discover_cache_scan_delta(struct linux_discover_cache *cache, const char *root,
                                    double now_s, const struct linux_proc_delta *delta,
                                    struct linux_vm **out, size_t *nr,
                                    struct linux_discover_skips *skips);
/* Scans so far that read the listing of <root>/proc (the others used events). */
uint64_t linux_discover_cache_listings(const struct linux_discover_cache *cache);
/* Which VMs' numa_maps later scans read (copied; NULL: every VM's). */
void linux_discover_cache_opts_set(struct linux_discover_cache *cache,
                                   const struct linux_discover_opts *opts);
/* The fds the cache keeps open now. */
int linux_discover_cache_fds(const struct linux_discover_cache *cache);

#endif

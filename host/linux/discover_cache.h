/*
 * discover_cache.h - QEMU discovery (discover.h) kept across rounds, so that a round costs
 * what changed since the last one, not a read of every process on the host.
 *
 * Each scan reads the directory of <root>/proc (one open), then:
 * - a pid seen before keeps its verdict: not QEMU, or QEMU with what its command line gave
 *   (name, -m, the vNUMA cells and memory backends, linux_qemu_numa); comm and cmdline are
 *   read only for pids new since the last scan; pids no longer there are forgotten;
 * - but a process judged not QEMU has its comm read again every scan while it is young (first
 *   listed less than LINUX_DISCOVER_YOUNG_S ago), and is judged again when it changed: it
 *   exec()ed, as the child libvirt forks does into QEMU;
 * - a QEMU pid's start time (field 22 of /proc/<pid>/stat, kept open, pfile.h) is read every
 *   scan; when it changed, the pid was reused and the process is read afresh;
 * - a QEMU process's task directory is read every scan; a thread's comm only when its tid is
 *   new (or while it still carries the process's own name: a thread names itself just after
 *   it starts, so that verdict waits LINUX_DISCOVER_NAME_WAIT_S); each vCPU thread's stat,
 *   status and sched stay open for snapshot.c (struct linux_vm_vcpu.files);
 * - numa_maps and the RAM mappings are read every scan (linux_vm_residency_read);
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

#include <stddef.h>

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
/* The fds the cache keeps open now. */
int linux_discover_cache_fds(const struct linux_discover_cache *cache);

#endif

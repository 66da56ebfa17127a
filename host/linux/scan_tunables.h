/*
 * scan_tunables.h - the kernel's host-wide NUMA-balancing scan tunables, read and written
 * under a root directory (NULL or "/": this machine; a fixture tree in the tests).
 *
 * Where they are (docs/linux-host.md "Scan tunables"):
 *   kernel >= 5.13  /sys/kernel/debug/sched/numa_balancing/{scan_delay_ms, scan_period_min_ms,
 *                   scan_period_max_ms, scan_size_mb}, when debugfs is mounted
 *   kernel <  5.13  /proc/sys/kernel/numa_balancing_scan_{delay_ms, period_min_ms,
 *                   period_max_ms, size_mb}
 * The debugfs set is looked for first.
 */
#ifndef VNUMAD_HOST_LINUX_SCAN_TUNABLES_H
#define VNUMAD_HOST_LINUX_SCAN_TUNABLES_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/scan_control.h"

enum linux_scan_lever {
	LINUX_SCAN_ABSENT,   /* the kernel offers no such files */
	LINUX_SCAN_REFUSED,  /* they are there (or would be) but cannot be written: reason says why
	                      */
	LINUX_SCAN_WRITABLE, /* read and writable */
};

/* Bytes of a probe's reason, e.g. "scan_size_mb: read-only (mode 0444)". */
#define LINUX_SCAN_REASON_MAX 160

struct linux_scan_probe {
	enum linux_scan_lever lever;
	bool debugfs; /* which set: debugfs (>= 5.13) or procfs (older kernels) */
	char reason[LINUX_SCAN_REASON_MAX]; /* "" when writable */
};

/* "present", "absent" or "refused" (writable is "present"). */
const char *linux_scan_lever_name(enum linux_scan_lever lever);

/*
 * Which set the kernel under root has and whether vnumad may write it: every file must be
 * readable as a non-negative integer, have its owner's write bit (the kernel makes the
 * read-only ones 0444) and open for writing (kernel lockdown refuses debugfs with EPERM, a
 * read-only mount with EROFS).  An empty /sys/kernel/debug with no procfs set: refused,
 * "debugfs is not mounted".
 */
void linux_scan_tunables_probe(const char *root, struct linux_scan_probe *out);
/* The current values of the set probe found; 0, or -errno (-EBADMSG: not a
 * non-negative integer). */
int linux_scan_tunables_read(const char *root, bool debugfs, struct scan_tunables *out);
/*
 * Write all four (each as a decimal line); 0, or the first -errno (-EINVAL for a negative
 * value, nothing written then).  Values already written stay: the caller writes the admin's
 * values again to undo.
 */
int linux_scan_tunables_write(const char *root, bool debugfs, const struct scan_tunables *t);

#endif

/*
 * scan_control.h - when vnumad slows the kernel's host-wide NUMA scanner (lever 3, "scan
 * control", host-wide part; docs/linux-host.md "Scan tunables").
 *
 * The kernel scans every task's address space for NUMA hinting faults once per scan period,
 * which adapts between scan_period_min_ms and scan_period_max_ms.  Once every VM has settled
 * (its home found, its vCPUs there, no memory left to move) vnumad needs no fresh faults in a
 * hurry: it raises scan_period_min_ms to the admin's scan_period_max_ms, so the scanner runs
 * at its slowest, and puts the admin's values back the moment any VM is placing or moving
 * again.  It never sets a value the admin did not set: the scanner never runs faster than
 * the admin's configuration, nor slower than the admin's slowest period.
 *
 * Pure: no I/O, no clock (the caller passes the time).
 */
#ifndef VNUMAD_POLICY_SCAN_CONTROL_H
#define VNUMAD_POLICY_SCAN_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

/* The kernel's four NUMA-balancing scan tunables (all unsigned ints in the kernel). */
struct scan_tunables {
	int delay_ms;      /* scan_delay_ms: a new task's first scan waits this long */
	int period_min_ms; /* scan_period_min_ms: the fastest full scan of a task */
	int period_max_ms; /* scan_period_max_ms: the slowest full scan of a task */
	int size_mb;       /* scan_size_mb: MiB of a task's address space scanned per step */
};

/*
 * How long every VM must have been settled before the scanner is slowed: 60 s.  Long enough
 * that a VM that settles between two moves of a neighbour (the engine's rebalance period is
 * 10-30 s) does not flip the host-wide setting back and forth; short against the hours a
 * settled host usually stays settled.
 */
#define SCAN_CONTROL_SETTLED_S 60.0

/* The rule's memory between rounds. */
struct scan_control {
	double settled_since_s; /* since when every VM has been settled; < 0: not all now */
	bool slow;              /* the values last asked for are the slowed ones */
};

void scan_control_init(struct scan_control *sc);

/*
 * One round: nr_vms VMs, nr_settled of them settled, at now_s.  Slowed when there is at least
 * one VM and every one has been settled for SCAN_CONTROL_SETTLED_S; else the admin's values
 * (no VM: vnumad has no reason to touch a host-wide setting; an admin's max period not above
 * the min: nothing to slow).  *out gets the values wanted: the admin's with period_min_ms
 * raised to the admin's period_max_ms when slowed, else the admin's exactly.  Returns true when
 * that differs from the last round (the caller writes and records it then, and only then).
 */
bool scan_control_decide(struct scan_control *sc, const struct scan_tunables *admin, int nr_vms,
                         int nr_settled, double now_s, struct scan_tunables *out);

/* "delay 1000 ms, period 1000-60000 ms, size 256 MiB" into buf; returns buf. */
char *scan_control_format(const struct scan_tunables *t, char *buf, size_t len);

#endif

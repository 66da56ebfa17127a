/*
 * scan_lever.h - the daemon's use of the kernel's host-wide NUMA scan tunables (lever
 * HOST_CAP_SCAN_TUNABLES; the rule is policy/scan_control.h, the files host/linux/
 * scan_tunables.h).  With scan_control = yes, once every VM has been settled for
 * SCAN_CONTROL_SETTLED_S the scanner is slowed to the admin's slowest period; the admin's
 * values come back as soon as a VM is not settled, at every stop, on `vnumad --restore` and
 * at the next start after a crash (they are in the state file, version 2, from before the
 * first write until they are back).
 *
 * Ownership: struct scan_lever lives in struct daemon and owns nothing.
 */
#ifndef VNUMAD_AGENT_SCAN_LEVER_H
#define VNUMAD_AGENT_SCAN_LEVER_H

#include <stdbool.h>

#include <json-c/json.h>

#include "policy/scan_control.h"

struct daemon;

/* Bytes of a reason kept for the log (host/linux/scan_tunables.h's are shorter). */
#define SCAN_LEVER_WHY_MAX 192

/* The rate-limited warning slot of the lever (log_vm_warnx; no VM has a negative id). */
#define SCAN_LEVER_LOG_ID (-1)

struct scan_lever {
	struct scan_control rule;
	bool have_admin;            /* admin holds the admin's values */
	struct scan_tunables admin; /* read while vnumad had not changed them */
	bool slowed;                /* vnumad's slowed values are what the kernel has */
	/* Why scan_control = yes cannot act, as last logged ("" when it can): said once. */
	char refusal_said[SCAN_LEVER_WHY_MAX];
};

/*
 * At start, after the state file is read: values a crashed vnumad left saved there are
 * written back first (and forgotten once back); the admin's values are read at the first
 * round.  Logs what it did; never fails a start.
 */
void scan_lever_start(struct daemon *d);
/* One round, after the engine decided (its reports say which VMs are settled). */
void scan_lever_round(struct daemon *d);
/*
 * Put the admin's values back when the state file holds them (every stop; `vnumad
 * --restore`), and forget them once written.  0 (also when there was nothing to put back),
 * or the host's -errno (they stay saved for the next try).
 */
int scan_lever_restore(struct daemon *d);
/* The lever for `vnumactl status` (docs/protocol.md "scan_tunables"). */
json_object *scan_lever_status(struct daemon *d);

#endif

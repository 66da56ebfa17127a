/*
 * linux_host_levers.c - the Linux host's capability probe (host.h levers): what the probe at
 * open (probe.h) and the last scan tunables probe (linux_host_scan.c) found, in the words of
 * docs/linux-host.md.  Present exactly for the bits lh_caps() puts in a snapshot: pins and
 * move_pages always, the scan tunables when they were writable at the last probe.
 */
#include <stdio.h>

#include "host/linux/linux_host.h"

/*
 * What a lever acting on other processes needs beyond the call itself: the capability (probe.h:
 * 1 held, 0 not, -1 unknown) for other users' QEMUs, and nothing at all under a tree, whose
 * VMs are observed but never acted on (-EROFS).
 */
static const char *
lh_lever_privilege(const struct linux_host *lh, int held, const char *cap, char *buf, size_t len)
{
	if (lh->root != NULL)
		snprintf(buf, len,
		         "; this host reads the tree %s, whose VMs are not acted on (EROFS)",
		         lh->root);
	else if (held == 0)
		snprintf(buf, len, "; without %s, only QEMU processes of vnumad's own user", cap);
	else
		buf[0] = '\0';
	return buf;
}

static void
lh_lever_set(struct host_lever *l, enum host_lever_state state, const char *reason,
             const char *more)
{
	l->state = state;
	snprintf(l->reason, sizeof(l->reason), "%s%s", reason, more);
}

/* The scan tunables as last probed: writable is present; else absent or refused, why. */
static void
lh_lever_scan(const struct linux_host *lh, struct host_lever *l)
{
	if (lh->scan.lever == LINUX_SCAN_WRITABLE)
		lh_lever_set(l, HOST_LEVER_PRESENT,
		             lh->scan.debugfs ? "/sys/kernel/debug/sched/numa_balancing/scan_*"
		                              : "/proc/sys/kernel/numa_balancing_scan_*",
		             " (host-wide; written only with scan_control = yes)");
	else
		lh_lever_set(
		    l, lh->scan.lever == LINUX_SCAN_ABSENT ? HOST_LEVER_ABSENT : HOST_LEVER_REFUSED,
		    lh->scan.reason, "");
}

void
linux_host_levers(struct host *h, struct host_lever *out)
{
	const struct linux_host *lh = (const struct linux_host *)h;
	char more[160];

	lh_lever_set(&out[host_cap_index(HOST_CAP_PIN)], HOST_LEVER_PRESENT,
	             "sched_setaffinity(2) on each vCPU thread, within its cpuset",
	             lh_lever_privilege(lh, lh->caps.sys_nice, "CAP_SYS_NICE", more, sizeof(more)));
	lh_lever_set(
	    &out[host_cap_index(HOST_CAP_MOVE_PAGES)], HOST_LEVER_PRESENT,
	    "move_pages(2) of guest RAM, paced at migrate_rate",
	    lh_lever_privilege(lh, lh->caps.sys_ptrace, "CAP_SYS_PTRACE", more, sizeof(more)));
	lh_lever_set(&out[host_cap_index(HOST_CAP_BIND_AT_START)], HOST_LEVER_ABSENT,
	             "vnumad meets QEMU processes already running; binding before first touch "
	             "needs libvirt placement='auto' (see docs/placement-advice.md)",
	             "");
	lh_lever_set(&out[host_cap_index(HOST_CAP_BIND_LIVE)], HOST_LEVER_ABSENT,
	             "mbind(2) acts on the caller's own memory only; a VM whose vCPUs are pinned "
	             "first-touches new memory on their node anyway",
	             "");
	lh_lever_set(
	    &out[host_cap_index(HOST_CAP_VM_SAMPLING)], HOST_LEVER_ABSENT,
	    "the kernel sets each task's NUMA scan rate itself; there is no per-VM control", "");
	lh_lever_scan(lh, &out[host_cap_index(HOST_CAP_SCAN_TUNABLES)]);
}

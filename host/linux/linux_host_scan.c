/*
 * linux_host_scan.c - the Linux host's scan tunables ops (host.h scan_tunables_get/set;
 * scan_tunables.h): every call probes afresh, so that debugfs mounted or unmounted since, or
 * a lockdown, shows in the next snapshot's HOST_CAP_SCAN_TUNABLES and in `vnumactl status`.
 */
#include <errno.h>

#include "host/linux/linux_host.h"

/* The -errno of a probe that did not find the files writable. */
static int
lh_scan_refusal(const struct linux_scan_probe *p)
{
	return p->lever == LINUX_SCAN_ABSENT ? -ENOENT : -EACCES;
}

int
linux_host_scan_get(struct host *h, struct scan_tunables *out, const char **why)
{
	struct linux_host *lh = (struct linux_host *)h;
	int ret;

	linux_scan_tunables_probe(lh->root, &lh->scan);
	*why = lh->scan.reason;
	if (lh->scan.lever != LINUX_SCAN_WRITABLE)
		return lh_scan_refusal(&lh->scan);
	ret = linux_scan_tunables_read(lh->root, lh->scan.debugfs, out);
	return ret;
}

int
linux_host_scan_set(struct host *h, const struct scan_tunables *t)
{
	struct linux_host *lh = (struct linux_host *)h;

	linux_scan_tunables_probe(lh->root, &lh->scan);
	if (lh->scan.lever != LINUX_SCAN_WRITABLE)
		return lh_scan_refusal(&lh->scan);
	return linux_scan_tunables_write(lh->root, lh->scan.debugfs, t);
}

/*
 * fault.h - fault injection: a host_ops wrapper that makes operations of another host fail at
 * a seeded rate, with the errors a real host gives, to prove that the daemon survives them
 * (issue "Reliability"; tests/sim/test_fault_inject.sh, tests/unit/test_fault.c).
 *
 * The wrapper owns the inner host.  Per operation call, with probability rate:
 *   snapshot      -EIO, -EAGAIN or -ENOMEM (a short or failed read of /proc or sysfs), or a
 *                 snapshot that lacks one VM that is still there, or one whose vCPU thread was
 *                 replaced (a new tid: the guest rebooted the vCPU's thread);
 *   pin_vcpu      -EPERM, -EBUSY, -EINVAL, -EAGAIN, -EIO (not -ESRCH/-ENOENT: a pin answered
 *                 so tells the daemon the thread is gone for good and its record can go; for
 *                 a thread that is still there no kernel says that.  Threads and VMs go away
 *                 here as they do on a real host: missing from a snapshot, or replaced);
 *   move_memory   -ENOMEM, -EBUSY, -EIO, -ESRCH;
 *   bind_memory, set_sampling, policy_persist, policy_fetch   -EIO, -EPERM, -ESRCH;
 * otherwise the call goes to the inner host.  Everything else passes through.  The same seed
 * gives the same failures for the same sequence of calls.
 */
#ifndef VNUMAD_HOST_FAULT_H
#define VNUMAD_HOST_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "host/host.h"

struct host_fault_stats {
	uint64_t calls;    /* operations that could fail */
	uint64_t injected; /* of those, failed or mangled here */
	uint64_t vms_dropped, tids_replaced;
};

/*
 * Parse "rate=R[,seed=S]" (R in [0, 1], S an unsigned integer; default seed 1).  0 or -EINVAL
 * with a message in err.
 */
int host_fault_spec_parse(const char *spec, double *rate, uint64_t *seed, char *err, size_t errlen);
/* Wrap inner (owned from now on, also on failure).  0 or -errno with a message in err. */
int host_fault_open(struct host *inner, const char *spec, struct host **out, char *err,
                    size_t errlen);
/* The wrapper's counts; -EINVAL when h is not a fault-injecting host. */
int host_fault_stats_get(struct host *h, struct host_fault_stats *out);
/*
 * Leave the VM called name out of every snapshot from now on (NULL: stop), whatever the rate:
 * a deterministic "VM missing from a snapshot" for tests.  -EINVAL when h is not a
 * fault-injecting host.
 */
int host_fault_drop_vm(struct host *h, const char *name);
/* The wrapped host, or NULL when h is not a fault-injecting host. */
struct host *host_fault_inner(struct host *h);

#endif

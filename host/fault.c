/*
 * fault.c - fault injection around another host (fault.h).
 */
#include "host/fault.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* A replaced vCPU thread gets its tid plus this: far above any real pid (pid_max <= 2^22). */
#define FAULT_TID_SHIFT 50000000

struct fault_host {
	struct host base; /* first: the agent sees a struct host */
	struct host *inner;
	double rate;
	struct util_rng rng;
	struct host_fault_stats st;
	char drop[SNAP_VM_NAME_MAX]; /* host_fault_drop_vm: "" when none */
	char describe[512];
	unsigned caps; /* of the inner host's last snapshot, for an inner without levers op */
};

static const struct host_ops fault_ops;

static struct fault_host *
fault_of(struct host *h)
{
	return (h != NULL && h->ops == &fault_ops) ? (struct fault_host *)h : NULL;
}

/* With probability rate: one of the nr errors, drawn; else 0. */
static int
fault_draw(struct fault_host *fh, const int *errs, int nr)
{
	fh->st.calls++;
	if (fh->rate <= 0 || util_rng_double(&fh->rng) >= fh->rate)
		return 0;
	fh->st.injected++;
	return -errs[util_rng_below(&fh->rng, (uint32_t)nr)];
}

static void
fault_close(struct host *h)
{
	struct fault_host *fh = fault_of(h);

	if (fh == NULL)
		return;
	fh->inner->ops->close(fh->inner);
	free(fh);
}

static double
fault_now(struct host *h)
{
	struct host *in = fault_of(h)->inner;

	return in->ops->now(in);
}

static int
fault_advance(struct host *h, double until_s)
{
	struct host *in = fault_of(h)->inner;

	return in->ops->advance(in, until_s);
}

/* Leave VM i out of the snapshot, as if its process had not been found this time. */
static void
fault_snapshot_drop(struct snapshot *snap, int i)
{
	snapshot_vm_remove(snap, i);
}

static int
fault_snapshot(struct host *h, struct snapshot **out)
{
	static const int errs[] = {EIO, EAGAIN, ENOMEM};
	struct fault_host *fh = fault_of(h);
	struct snapshot *snap;
	int rc = fault_draw(fh, errs, 3);

	*out = NULL;
	if (rc < 0)
		return rc;
	rc = fh->inner->ops->snapshot(fh->inner, &snap);
	if (rc < 0)
		return rc;
	fh->caps = snap->caps;
	for (int i = 0; fh->drop[0] != '\0' && i < snap->nr_vms; i++)
		if (strcmp(snap->vms[i].name, fh->drop) == 0)
			fault_snapshot_drop(snap, i--);
	if (snap->nr_vms > 0 && fh->rate > 0 && util_rng_double(&fh->rng) < fh->rate) {
		fault_snapshot_drop(snap, (int)util_rng_below(&fh->rng, (uint32_t)snap->nr_vms));
		fh->st.injected++;
		fh->st.vms_dropped++;
	}
	if (snap->nr_vms > 0 && fh->rate > 0 && util_rng_double(&fh->rng) < fh->rate) {
		struct snap_vm *vm = &snap->vms[util_rng_below(&fh->rng, (uint32_t)snap->nr_vms)];

		if (vm->nr_vcpus > 0) {
			vm->vcpus[util_rng_below(&fh->rng, (uint32_t)vm->nr_vcpus)].tid +=
			    FAULT_TID_SHIFT;
			fh->st.injected++;
			fh->st.tids_replaced++;
		}
	}
	*out = snap;
	return 0;
}

static int
fault_pin(struct host *h, int vm_id, int vcpu, uint64_t nodes)
{
	/* Not ESRCH/ENOENT: for a live thread no kernel says so (fault.h). */
	static const int errs[] = {EPERM, EBUSY, EINVAL, EAGAIN, EIO};
	struct fault_host *fh = fault_of(h);
	int rc = fault_draw(fh, errs, 5);

	return rc < 0 ? rc : fh->inner->ops->pin_vcpu(fh->inner, vm_id, vcpu, nodes);
}

static int
fault_bind(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, uint64_t nodes)
{
	static const int errs[] = {EIO, EPERM, ESRCH};
	struct fault_host *fh = fault_of(h);
	int rc = fault_draw(fh, errs, 3);

	return rc < 0 ? rc
	              : fh->inner->ops->bind_memory(fh->inner, vm_id, start_mib, len_mib, nodes);
}

static int
fault_move(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, int from_node,
           int to_node, uint64_t mib)
{
	static const int errs[] = {ENOMEM, EBUSY, EIO, ESRCH};
	struct fault_host *fh = fault_of(h);
	int rc = fault_draw(fh, errs, 4);

	return rc < 0 ? rc
	              : fh->inner->ops->move_memory(fh->inner, vm_id, start_mib, len_mib, from_node,
	                                            to_node, mib);
}

static int
fault_sampling(struct host *h, int vm_id, double scan_mib_s)
{
	static const int errs[] = {EIO, EPERM, ESRCH};
	struct fault_host *fh = fault_of(h);
	int rc = fault_draw(fh, errs, 3);

	return rc < 0 ? rc : fh->inner->ops->set_sampling(fh->inner, vm_id, scan_mib_s);
}

static void
fault_commit(struct host *h)
{
	struct host *in = fault_of(h)->inner;

	in->ops->commit(in);
}

static void
fault_put_back(struct host *h)
{
	struct host *in = fault_of(h)->inner;

	if (in->ops->put_back != NULL)
		in->ops->put_back(in);
}

static const char *
fault_sampling_source(struct host *h, int vm_id, const char **reason)
{
	struct host *in = fault_of(h)->inner;

	return in->ops->sampling_source(in, vm_id, reason);
}

static int
fault_policy_persist(struct host *h, int vm_id, const char *xml, bool live, bool config)
{
	static const int errs[] = {EIO, EPERM, ESRCH};
	struct fault_host *fh = fault_of(h);
	int rc;

	if (fh->inner->ops->policy_persist == NULL)
		return -EOPNOTSUPP;
	rc = fault_draw(fh, errs, 3);
	return rc < 0 ? rc : fh->inner->ops->policy_persist(fh->inner, vm_id, xml, live, config);
}

static int
fault_policy_fetch(struct host *h, int vm_id, bool config, char **xml)
{
	static const int errs[] = {EIO, EPERM, ESRCH};
	struct fault_host *fh = fault_of(h);
	int rc;

	*xml = NULL;
	if (fh->inner->ops->policy_fetch == NULL)
		return 0;
	rc = fault_draw(fh, errs, 3);
	return rc < 0 ? rc : fh->inner->ops->policy_fetch(fh->inner, vm_id, config, xml);
}

static const char *
fault_vm_note(struct host *h, int vm_id)
{
	struct host *in = fault_of(h)->inner;

	return in->ops->vm_note != NULL ? in->ops->vm_note(in, vm_id) : "";
}

static const char *
fault_describe(struct host *h)
{
	struct fault_host *fh = fault_of(h);
	const char *in = fh->inner->ops->describe ? fh->inner->ops->describe(fh->inner) : "";

	snprintf(fh->describe, sizeof(fh->describe),
	         "%s; fault injection at rate %g: %" PRIu64 " of %" PRIu64
	         " operations failed or mangled",
	         in, fh->rate, fh->st.injected, fh->st.calls);
	return fh->describe;
}

static double
fault_wake_s(struct host *h)
{
	struct host *in = fault_of(h)->inner;

	return in->ops->wake_s != NULL ? in->ops->wake_s(in) : 0;
}

static int
fault_observe_cost(struct host *h, struct host_observe_cost *out)
{
	struct host *in = fault_of(h)->inner;

	return in->ops->observe_cost != NULL ? in->ops->observe_cost(in, out) : -ENODATA;
}

static void
fault_watch_vm(struct host *h, int vm_id)
{
	struct host *in = fault_of(h)->inner;

	if (in->ops->watch_vm != NULL)
		in->ops->watch_vm(in, vm_id);
}

static int
fault_scan_get(struct host *h, struct scan_tunables *out, const char **why)
{
	struct host *in = fault_of(h)->inner;

	*why = "the inner host has no scan tunables";
	return in->ops->scan_tunables_get != NULL ? in->ops->scan_tunables_get(in, out, why)
	                                          : -EOPNOTSUPP;
}

static int
fault_scan_set(struct host *h, const struct scan_tunables *t)
{
	static const int errs[] = {EIO, EACCES};
	struct fault_host *fh = fault_of(h);
	int rc = fault_draw(fh, errs, 2);

	if (rc == 0 && fh->inner->ops->scan_tunables_set == NULL)
		rc = -EOPNOTSUPP;
	return rc < 0 ? rc : fh->inner->ops->scan_tunables_set(fh->inner, t);
}

/* The inner host's probe, never failed here: it reports, it does not act. */
static void
fault_levers(struct host *h, struct host_lever *out)
{
	struct fault_host *fh = fault_of(h);

	host_levers_get(fh->inner, fh->caps, out);
}

static const struct host_ops fault_ops = {
    .name = "fault",
    .close = fault_close,
    .now = fault_now,
    .advance = fault_advance,
    .snapshot = fault_snapshot,
    .pin_vcpu = fault_pin,
    .bind_memory = fault_bind,
    .move_memory = fault_move,
    .set_sampling = fault_sampling,
    .commit = fault_commit,
    .put_back = fault_put_back,
    .sampling_source = fault_sampling_source,
    .policy_persist = fault_policy_persist,
    .policy_fetch = fault_policy_fetch,
    .vm_note = fault_vm_note,
    .describe = fault_describe,
    .observe_cost = fault_observe_cost,
    .wake_s = fault_wake_s,
    .watch_vm = fault_watch_vm,
    .scan_tunables_get = fault_scan_get,
    .scan_tunables_set = fault_scan_set,
    .levers = fault_levers,
};

int
host_fault_spec_parse(const char *spec, double *rate, uint64_t *seed, char *err, size_t errlen)
{
	const char *p = spec;

	*rate = -1;
	*seed = 1;
	while (p != NULL && *p != '\0') {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char item[64], *end;

		if (len == 0 || len >= sizeof(item))
			goto bad;
		memcpy(item, p, len);
		item[len] = '\0';
		if (strncmp(item, "rate=", 5) == 0) {
			*rate = strtod(item + 5, &end);
			if (end == item + 5 || *end != '\0' || !(*rate >= 0 && *rate <= 1))
				goto bad;
		} else if (strncmp(item, "seed=", 5) == 0) {
			if (item[5] < '0' || item[5] > '9')
				goto bad;
			*seed = strtoull(item + 5, &end, 10);
			if (*end != '\0')
				goto bad;
		} else {
			goto bad;
		}
		p = comma ? comma + 1 : NULL;
		if (p != NULL && *p == '\0')
			goto bad; /* a trailing comma */
	}
	if (*rate < 0)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "fault injection '%s': expected rate=R[,seed=S], R in 0..1",
	         spec != NULL ? spec : "");
	return -EINVAL;
}

int
host_fault_open(struct host *inner, const char *spec, struct host **out, char *err, size_t errlen)
{
	struct fault_host *fh;
	double rate;
	uint64_t seed;
	int rc = host_fault_spec_parse(spec, &rate, &seed, err, errlen);

	if (rc < 0) {
		inner->ops->close(inner);
		return rc;
	}
	fh = xcalloc(1, sizeof(*fh));
	fh->base.ops = &fault_ops;
	fh->inner = inner;
	fh->rate = rate;
	util_rng_seed(&fh->rng, seed, 0xfa17);
	*out = &fh->base;
	return 0;
}

int
host_fault_stats_get(struct host *h, struct host_fault_stats *out)
{
	struct fault_host *fh = fault_of(h);

	if (fh == NULL)
		return -EINVAL;
	*out = fh->st;
	return 0;
}

int
host_fault_drop_vm(struct host *h, const char *name)
{
	struct fault_host *fh = fault_of(h);

	if (fh == NULL)
		return -EINVAL;
	snprintf(fh->drop, sizeof(fh->drop), "%s", name != NULL ? name : "");
	return 0;
}

struct host *
host_fault_inner(struct host *h)
{
	struct fault_host *fh = fault_of(h);

	return fh != NULL ? fh->inner : NULL;
}

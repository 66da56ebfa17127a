/*
 * actions.c - the privileged-actions module: the only place that changes the machine.
 *
 * Each request from the plan (or from an admin's command) is checked against the round's
 * snapshot before it goes to the host: the VM still exists, the vCPU is one of its vCPUs,
 * every node is one of the host's, the VM's effective mode allows acting, memory may move.
 * A refused request is counted and logged; a VM that just went away (-ESRCH/-ENOENT) is
 * routine.  Before vnumad first changes a vCPU's affinity its original affinity is recorded
 * in the state file and written to disk, so it can always be put back.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/daemon.h"
#include "agent/log.h"
#include "agent/state.h"

static const struct snap_vm *
actions_vm(const struct daemon *d, int vm_id)
{
	for (int i = 0; i < d->snap->nr_vms; i++)
		if (d->snap->vms[i].id == vm_id)
			return &d->snap->vms[i];
	return NULL;
}

static bool
actions_nodes_ok(const struct daemon *d, uint64_t nodes)
{
	return nodes == NODEMASK_ALL ||
	       (nodes != 0 && (nodes & ~nodemask_all_of(d->snap->nr_nodes)) == 0);
}

static void
actions_refuse(struct daemon *d, const struct snap_vm *vm, int vm_id, const char *what)
{
	d->actions_refused++;
	log_vm_warnx(vm_id, d->snap->now_s, "refused %s for %s", what, vm ? vm->name : "?");
}

/* The host's levers, for saying once per VM that one is missing. */
enum actions_lever {
	ACTIONS_PIN,
	ACTIONS_BIND,
	ACTIONS_MOVE,
	ACTIONS_SAMPLING,
};

static const char *const actions_lever_names[] = {"pin", "bind", "move", "sampling"};

/* An action's outcome: routine disappearance, or a real failure that skips the VM. */
static void
actions_result(struct daemon *d, const struct snap_vm *vm, int rc, enum actions_lever lever)
{
	const char *what = actions_lever_names[lever];

	if (rc == 0)
		return;
	if (rc == -ESRCH || rc == -ENOENT) {
		d->skipped[DSKIP_GONE]++;
		log_debug("%s: %s: gone", vm->name, what);
		return;
	}
	if (rc == -EOPNOTSUPP) {
		/* A lever this host does not have (host.h), or not for this VM: expected, not
		 * the VM's fault.  Said once per VM and lever: the plan may ask again and again. */
		struct dvm *v = daemon_vm(d, vm->id);

		d->total.unsupported++;
		if (v != NULL)
			v->c.unsupported++;
		if (v == NULL || !(v->unsupported_said & (1u << lever)))
			log_debug("%s: %s: not supported by the %s host (said once per VM)",
			          vm->name, what, d->backend);
		if (v != NULL)
			v->unsupported_said |= 1u << lever;
		return;
	}
	d->skipped[DSKIP_ERROR]++;
	log_vm_warnx(vm->id, d->snap->now_s, "%s: %s failed: %s", vm->name, what, strerror(-rc));
	daemon_event(d, vm->id, vm->name, "error", what, 0, "%s", strerror(-rc));
}

/*
 * Every original affinity stays restorable: a vCPU's affinity is changed only once the
 * affinity it had is in the state file on disk (its entry saved), not merely recorded in
 * memory for the end of the round to write: a SIGKILL in between, or a state directory that
 * cannot be written, lost it.  A vCPU whose affinity covers no node whole has nothing to
 * record (an empty mask) and is pinned as before.
 */

/* May vm's vcpu be pinned: is its original affinity on disk, or is there none to record? */
static bool
actions_recorded(const struct daemon *d, const struct snap_vm *vm, int vcpu)
{
	const struct state_entry *e = state_find(d->state, vm->name, vcpu);

	if (e != NULL)
		return e->saved;
	return vm->vcpus[vcpu].allowed_nodes == 0 && strlen(vm->name) <= STATE_VM_NAME_MAX;
}

/* A vCPU whose original affinity is to be recorded before it is pinned. */
struct actions_rec {
	const struct snap_vm *vm;
	int vcpu;
};

/*
 * Record the original affinities of the nr vCPUs in recs and, when any of them is not on disk
 * yet, save the state file, once for all.  When that fails the entries recorded here are
 * forgotten again (nothing stays recorded that was not pinned: it would be "put back" later
 * over whatever else changed it) and -errno is returned with the message in err.
 */
static int
actions_record(struct daemon *d, const struct actions_rec *recs, size_t nr, char *err,
               size_t errlen)
{
	struct state_mark mark = state_mark(d->state);
	bool unsaved = false;
	int rc;

	err[0] = '\0';
	for (size_t i = 0; i < nr; i++) {
		const struct snap_vm *vm = recs[i].vm;
		const struct snap_vcpu *sv = &vm->vcpus[recs[i].vcpu];
		const struct state_entry *e;

		rc = state_record(d->state, vm->name, vm->id, recs[i].vcpu, sv->tid,
		                  sv->allowed_nodes);
		if (rc < 0)
			log_vm_warnx(vm->id, d->snap->now_s, "%s: not pinned: cannot record it: %s",
			             vm->name, strerror(-rc));
		e = state_find(d->state, vm->name, recs[i].vcpu);
		unsaved = unsaved || (e != NULL && !e->saved);
	}
	if (!unsaved)
		return 0;
	rc = state_save(d->state, d->cfg.state_file, err, errlen);
	if (rc < 0)
		state_rollback(d->state, mark);
	return rc;
}

/* Count n pins skipped for want of their original affinity on disk; warn, rate-limited. */
static void
actions_unrecorded(struct daemon *d, size_t n, const char *err)
{
	if (n == 0)
		return;
	d->pins_unrecorded += n;
	log_vm_warnx(DAEMON_STATE_LOG_ID, d->snap->now_s,
	             "%zu vCPU pin%s skipped: their original affinity could not be recorded%s%s", n,
	             n == 1 ? "" : "s", err[0] ? ": " : "", err);
}

/* Pin, once the original affinity is recorded; the counters and the event. */
static int
actions_pin_apply(struct daemon *d, const struct snap_vm *vm, int vcpu, uint64_t nodes,
                  const char *rule, const char *why)
{
	const struct snap_vcpu *sv = &vm->vcpus[vcpu];
	struct dvm *v = daemon_vm(d, vm->id);
	char buf[NODEMASK_STR_MAX];
	int rc = d->host->ops->pin_vcpu(d->host, vm->id, vcpu, nodes);

	actions_result(d, vm, rc, ACTIONS_PIN);
	if (rc < 0)
		return rc;
	if (nodes != sv->allowed_nodes && d->host->ops->watch_vm != NULL)
		d->host->ops->watch_vm(d->host, vm->id);
	if (!nodemask_test(nodes, sv->node) && v != NULL) {
		v->c.vcpu_moves++;
		d->total.vcpu_moves++;
	}
	daemon_event(d, vm->id, vm->name, "pin", rule, 0, "vCPU %d -> node %s: %s", vcpu,
	             nodes == NODEMASK_ALL ? "any" : nodemask_format(nodes, buf, sizeof(buf)), why);
	return 0;
}

int
actions_pin(struct daemon *d, const struct snap_vm *vm, int vcpu, uint64_t nodes, const char *rule,
            const char *why)
{
	const struct actions_rec rec = {vm, vcpu};
	char err[PATH_MAX + 256];
	int rc;

	if (vcpu < 0 || vcpu >= vm->nr_vcpus || !actions_nodes_ok(d, nodes))
		return -EINVAL;
	rc = actions_record(d, &rec, 1, err, sizeof(err));
	if (!actions_recorded(d, vm, vcpu)) {
		actions_unrecorded(d, 1, err);
		return rc < 0 ? rc : -ENAMETOOLONG; /* else only a name too long is not recorded */
	}
	return actions_pin_apply(d, vm, vcpu, nodes, rule, why);
}

int
actions_put_back(struct daemon *d, const struct snap_vm *vm, int vcpu, uint64_t orig_nodes,
                 bool *widened)
{
	uint64_t nodes = orig_nodes;
	char buf[NODEMASK_STR_MAX];

	*widened = false;
	if (vcpu < 0 || vcpu >= vm->nr_vcpus)
		return -ENOENT; /* the VM has no such vCPU (any more) */
	if (nodes != NODEMASK_ALL && !actions_nodes_ok(d, nodes)) {
		/* Recorded on another topology (or machine): every node is the best guess. */
		*widened = true;
		log_vm_warnx(
		    vm->id, d->snap->now_s,
		    "%s vCPU %d: its recorded nodes %s are not all on this host (%d nodes): "
		    "put back on every node",
		    vm->name, vcpu, nodemask_format(orig_nodes, buf, sizeof(buf)),
		    d->snap->nr_nodes);
		nodes = NODEMASK_ALL;
	}
	return d->host->ops->pin_vcpu(d->host, vm->id, vcpu, nodes);
}

/* May the plan's pin p be carried out (the VM present, acting, the pin well-formed)? */
static const struct snap_vm *
actions_pin_allowed(const struct daemon *d, const struct plan_pin *p)
{
	const struct snap_vm *vm = actions_vm(d, p->vm_id);

	if (vm == NULL || vm->policy.mode != VM_POLICY_MODE_AUTO ||
	    p->kind == PLAN_PIN_KERNEL_MOVE || !actions_nodes_ok(d, p->nodes) || p->vcpu < 0 ||
	    p->vcpu >= vm->nr_vcpus)
		return NULL;
	return vm;
}

/* The plan's pins: every original affinity recorded and saved first, in one write. */
static void
actions_pins(struct daemon *d, const struct plan *plan)
{
	struct actions_rec *recs = xcalloc(plan->nr_pins + 1, sizeof(*recs));
	char err[PATH_MAX + 256];
	size_t nr = 0, unrecorded = 0;

	for (size_t i = 0; i < plan->nr_pins; i++) {
		const struct snap_vm *vm = actions_pin_allowed(d, &plan->pins[i]);

		if (vm != NULL)
			recs[nr++] = (struct actions_rec){vm, plan->pins[i].vcpu};
	}
	actions_record(d, recs, nr, err, sizeof(err));
	free(recs);
	for (size_t i = 0; i < plan->nr_pins; i++) {
		const struct plan_pin *p = &plan->pins[i];
		const struct snap_vm *vm = actions_pin_allowed(d, p);
		struct dvm *v;

		if (vm == NULL) {
			actions_refuse(d, actions_vm(d, p->vm_id), p->vm_id, "a vCPU pin");
			continue;
		}
		if (!actions_recorded(d, vm, p->vcpu)) {
			unrecorded++;
			continue;
		}
		if (actions_pin_apply(d, vm, p->vcpu, p->nodes, p->why.rule, p->why.text) < 0)
			continue;
		v = daemon_vm(d, vm->id);
		if (p->kind == PLAN_PIN_FLIP && p->flip_with > (int)i && v != NULL) {
			v->c.flips++;
			d->total.flips++;
		}
	}
	actions_unrecorded(d, unrecorded, err);
}

static bool
actions_memory_ok(const struct daemon *d, const struct snap_vm *vm)
{
	return vm != NULL && vm->policy.mode == VM_POLICY_MODE_AUTO && vm->policy.migrate;
}

static void
actions_memory(struct daemon *d, const struct plan *plan)
{
	char buf[NODEMASK_STR_MAX];

	for (size_t i = 0; i < plan->nr_binds; i++) {
		const struct plan_mem_bind *b = &plan->binds[i];
		const struct snap_vm *vm = actions_vm(d, b->vm_id);
		struct dvm *v;
		int rc;

		if (vm == NULL || vm->policy.mode != VM_POLICY_MODE_AUTO ||
		    !actions_nodes_ok(d, b->nodes) || b->nodes == NODEMASK_ALL) {
			actions_refuse(d, vm, b->vm_id, "a memory bind");
			continue;
		}
		rc = d->host->ops->bind_memory(d->host, vm->id, b->start_mib, b->len_mib, b->nodes);
		actions_result(d, vm, rc, ACTIONS_BIND);
		if (rc < 0)
			continue;
		if ((v = daemon_vm(d, vm->id)) != NULL)
			v->c.binds++;
		d->total.binds++;
		daemon_event(d, vm->id, vm->name, "bind", b->why.rule, 0, "RAM %llu+%llu MiB -> %s",
		             (unsigned long long)b->start_mib, (unsigned long long)b->len_mib,
		             nodemask_format(b->nodes, buf, sizeof(buf)));
	}
	for (size_t i = 0; i < plan->nr_moves; i++) {
		const struct plan_mem_move *m = &plan->moves[i];
		const struct snap_vm *vm = actions_vm(d, m->vm_id);
		int n = d->snap->nr_nodes, rc;

		if (!actions_memory_ok(d, vm) || m->from_node < 0 || m->from_node >= n ||
		    m->to_node < 0 || m->to_node >= n || m->from_node == m->to_node || !m->mib) {
			actions_refuse(d, vm, m->vm_id, "a memory move");
			continue;
		}
		rc = d->host->ops->move_memory(d->host, vm->id, m->start_mib, m->len_mib,
		                               m->from_node, m->to_node, m->mib);
		actions_result(d, vm, rc, ACTIONS_MOVE);
		if (rc == 0 && d->host->ops->watch_vm != NULL)
			d->host->ops->watch_vm(d->host, vm->id);
		if (rc == 0)
			daemon_event(d, vm->id, vm->name, "move", m->why.rule, m->why.gain, "%s",
			             m->why.text);
	}
}

static void
actions_sampling(struct daemon *d, const struct plan *plan)
{
	for (size_t i = 0; i < plan->nr_samplings; i++) {
		const struct plan_sampling *s = &plan->samplings[i];
		const struct snap_vm *vm = actions_vm(d, s->vm_id);
		struct dvm *v = vm ? daemon_vm(d, vm->id) : NULL;
		int rc;

		if (vm == NULL || v == NULL || s->scan_mib_s < 0) {
			actions_refuse(d, vm, s->vm_id, "a sampling change");
			continue;
		}
		rc = d->host->ops->set_sampling(d->host, vm->id, s->scan_mib_s);
		actions_result(d, vm, rc, ACTIONS_SAMPLING);
		if (rc < 0)
			continue;
		/* Only parking and waking make events; every step would flood the log. */
		if ((v->scan_mib_s == 0) != (s->scan_mib_s == 0) || v->scan_mib_s < 0)
			daemon_event(d, vm->id, vm->name, "sampling", s->why.rule, 0,
			             "%.0f MiB/s: %s", s->scan_mib_s, s->why.text);
		v->scan_mib_s = s->scan_mib_s;
	}
}

void
actions_apply(struct daemon *d, const struct plan *plan)
{
	actions_pins(d, plan);
	actions_memory(d, plan);
	actions_sampling(d, plan);
}

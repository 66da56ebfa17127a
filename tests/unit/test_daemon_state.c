/*
 * test_daemon_state.c - the daemon's use of the state file (agent/actions.c, agent/daemon.c)
 * against a stub host whose pin_vcpu records each call, fails as told per vCPU, and checks,
 * at the moment of each pin, that the vCPU's original affinity is already in the state file
 * on disk:
 * - a pin whose original affinity cannot be saved (PATH.tmp a directory: the state directory
 *   cannot be written) does not happen, for the plan's pins and an admin's alike; it is
 *   counted, and nothing stays recorded; once the file can be written the pins go ahead, each
 *   after its entry reached the disk, the plan's in one write;
 * - the restore at exit (daemon_restore) and `vnumactl unpin` (h_unpin) forget an entry only
 *   when its vCPU is back or gone (VM, vCPU or thread: -ESRCH/-ENOENT); one whose pin failed
 *   otherwise stays, in memory and on disk, reported, and is put back by the next try;
 * - a recorded mask with nodes the host does not have puts the vCPU on every node.
 * Files go to a mkdtemp directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "agent/daemon.h"
#include "agent/events.h"
#include "agent/handlers.h"
#include "agent/state.h"
#include "host/host.h"

#define STUB_VM_ID 100
#define STUB_VCPUS 4
#define STUB_NODES 2
#define STUB_PINS  64

struct stub_pin {
	int vm_id, vcpu;
	uint64_t nodes;
	bool on_disk; /* the vCPU's entry was in the state file when it was pinned */
};

struct stub {
	struct host base; /* first: the daemon sees a struct host */
	const char *state_file;
	bool vm_gone;                 /* the VM is not in the snapshots */
	int nr_vcpus;                 /* vm-a's vCPUs in the snapshots (0: STUB_VCPUS) */
	int pin_rc[STUB_VCPUS];       /* what pin_vcpu returns, per vCPU */
	uint64_t allowed[STUB_VCPUS]; /* each vCPU's allowed nodes in the snapshots */
	struct stub_pin pins[STUB_PINS];
	int nr_pins;
};

static struct stub *
stub_of(struct host *h)
{
	return (struct stub *)h;
}

static void
stub_close(struct host *h)
{
	(void)h; /* the test owns it */
}

static double
stub_now(struct host *h)
{
	return 1000.0;
}

static int
stub_advance(struct host *h, double until_s)
{
	return 0;
}

/* One VM "vm-a" of STUB_VCPUS vCPUs on STUB_NODES nodes of 2 CPUs, in mode auto. */
static int
stub_snapshot(struct host *h, struct snapshot **out)
{
	struct stub *s = stub_of(h);
	int vcpus = s->nr_vcpus > 0 ? s->nr_vcpus : STUB_VCPUS;
	struct snapshot *snap =
	    snapshot_new(STUB_NODES, 2 * STUB_NODES, s->vm_gone ? 0 : 1, &vcpus);

	snap->now_s = stub_now(h);
	for (int n = 0; n < STUB_NODES; n++) {
		snap->nodes[n].id = n;
		snap->nodes[n].nr_cpus = 2;
		snap->cpu_node[2 * n] = snap->cpu_node[2 * n + 1] = n;
	}
	for (int i = 0; i < snap->nr_vms; i++) {
		struct snap_vm *vm = &snap->vms[i];

		vm->id = STUB_VM_ID;
		snprintf(vm->name, sizeof(vm->name), "vm-a");
		vm->policy.mode = VM_POLICY_MODE_AUTO;
		for (int c = 0; c < vm->nr_vcpus; c++) {
			vm->vcpus[c].tid = STUB_VM_ID + 1 + c;
			vm->vcpus[c].allowed_nodes = s->allowed[c];
			vm->vcpus[c].node = 0;
		}
	}
	*out = snap;
	return 0;
}

/* Is vm-a's vcpu in the state file on disk? */
static bool
stub_on_disk(const char *path, int vcpu)
{
	struct state *st = NULL;
	char err[1024];
	bool found;

	if (state_load(path, &st, err, sizeof(err)) < 0)
		return false;
	found = state_find(st, "vm-a", vcpu) != NULL;
	state_free(st);
	return found;
}

static int
stub_pin_vcpu(struct host *h, int vm_id, int vcpu, uint64_t nodes)
{
	struct stub *s = stub_of(h);

	assert_true(s->nr_pins < STUB_PINS);
	assert_true(vcpu >= 0 && vcpu < STUB_VCPUS);
	s->pins[s->nr_pins++] =
	    (struct stub_pin){vm_id, vcpu, nodes, stub_on_disk(s->state_file, vcpu)};
	return s->pin_rc[vcpu];
}

static int
stub_bind(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, uint64_t nodes)
{
	return 0;
}

static int
stub_move(struct host *h, int vm_id, uint64_t start_mib, uint64_t len_mib, int from, int to,
          uint64_t mib)
{
	return 0;
}

static int
stub_sampling(struct host *h, int vm_id, double scan_mib_s)
{
	return 0;
}

static void
stub_commit(struct host *h)
{
}

static const char *
stub_sampling_source(struct host *h, int vm_id, const char **reason)
{
	*reason = "stub";
	return "fault-stats";
}

static const struct host_ops stub_ops = {
    .name = "stub",
    .close = stub_close,
    .now = stub_now,
    .advance = stub_advance,
    .snapshot = stub_snapshot,
    .pin_vcpu = stub_pin_vcpu,
    .bind_memory = stub_bind,
    .move_memory = stub_move,
    .set_sampling = stub_sampling,
    .commit = stub_commit,
    .sampling_source = stub_sampling_source,
};

/* A daemon over a stub host, its state file in a fresh temporary directory. */
struct fixture {
	char dir[64];
	char tmp[PATH_MAX + 8]; /* the state file's PATH.tmp */
	struct stub stub;
	struct daemon *d;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *base = getenv("TMPDIR");
	struct daemon *d;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/vnumad-dst-XXXXXX", base && *base ? base : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	f->stub.base.ops = &stub_ops;
	for (int c = 0; c < STUB_VCPUS; c++)
		f->stub.allowed[c] = 0x3; /* both nodes */
	f->d = d = calloc(1, sizeof(*d));
	assert_non_null(d);
	snprintf(d->cfg.state_file, sizeof(d->cfg.state_file), "%s/state.json", f->dir);
	snprintf(f->tmp, sizeof(f->tmp), "%s.tmp", d->cfg.state_file);
	f->stub.state_file = d->cfg.state_file;
	d->host = &f->stub.base;
	d->backend = "stub";
	d->cfg.restore_on_exit = true;
	d->lock_fd = -1;
	events_init(&d->events);
	plan_init(&d->plan);
	d->state = state_new();
	assert_int_equal(d->host->ops->snapshot(d->host, &d->snap), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char p[PATH_MAX];

	daemon_fini(f->d);
	free(f->d);
	rmdir(f->tmp);
	snprintf(p, sizeof(p), "%s/state.json", f->dir);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

static struct snap_vm *
vm_a(struct daemon *d)
{
	assert_int_equal(d->snap->nr_vms, 1);
	return &d->snap->vms[0];
}

/* The state file as it is on disk (an empty state when there is none). */
static struct state *
on_disk(struct daemon *d)
{
	struct state *st = NULL;
	char err[1024];

	if (state_load(d->cfg.state_file, &st, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	return st;
}

/* A plan pinning every vCPU of vm-a to node 1. */
static void
plan_all_to_node1(struct daemon *d)
{
	plan_reset(&d->plan);
	for (int c = 0; c < STUB_VCPUS; c++)
		plan_add_pin(&d->plan, STUB_VM_ID, c, nodemask_of(1));
}

/*
 * The state directory cannot be written (PATH.tmp is a directory, which open() refuses even
 * to root): no pin happens, the plan's nor an admin's; each is counted and nothing stays
 * recorded, in memory or on disk.  Once the file can be written the pins go ahead, each only
 * after its entry reached the disk.
 */
static void
test_pin_waits_for_the_disk(void **state)
{
	struct fixture *f = *state;
	struct daemon *d = f->d;
	struct state *st;

	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_true(actions_pin(d, vm_a(d), 0, nodemask_of(1), "admin", "test") < 0);
	assert_int_equal(f->stub.nr_pins, 0);
	assert_int_equal(d->pins_unrecorded, 1);
	assert_int_equal(d->state->nr, 0);
	plan_all_to_node1(d);
	actions_apply(d, &d->plan);
	assert_int_equal(f->stub.nr_pins, 0);
	assert_int_equal(d->pins_unrecorded, 1 + STUB_VCPUS);
	assert_int_equal(d->state->nr, 0);
	assert_int_equal(access(d->cfg.state_file, F_OK), -1);

	assert_int_equal(rmdir(f->tmp), 0);
	actions_apply(d, &d->plan);
	assert_int_equal(f->stub.nr_pins, STUB_VCPUS);
	for (int i = 0; i < f->stub.nr_pins; i++) {
		if (!f->stub.pins[i].on_disk)
			fail_msg("vCPU %d pinned before its original affinity was on disk",
			         f->stub.pins[i].vcpu);
		assert_true(f->stub.pins[i].nodes == nodemask_of(1));
	}
	assert_int_equal(d->pins_unrecorded, 1 + STUB_VCPUS);
	st = on_disk(d);
	assert_int_equal(st->nr, STUB_VCPUS);
	assert_true(state_find(st, "vm-a", 3)->orig_nodes == 0x3);
	state_free(st);

	/* Recorded and on disk: a later pin needs no write, and one fails no more. */
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_int_equal(actions_pin(d, vm_a(d), 2, nodemask_of(0), "admin", "test"), 0);
	assert_int_equal(f->stub.nr_pins, STUB_VCPUS + 1);
	assert_int_equal(d->pins_unrecorded, 1 + STUB_VCPUS);
}

/* An admin's pin is written before it happens too, and a failed write rolls back only it. */
static void
test_admin_pin_written_first(void **state)
{
	struct fixture *f = *state;
	struct daemon *d = f->d;
	struct state *st;

	assert_int_equal(actions_pin(d, vm_a(d), 1, nodemask_of(1), "admin", "test"), 0);
	assert_int_equal(f->stub.nr_pins, 1);
	assert_true(f->stub.pins[0].on_disk);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_true(actions_pin(d, vm_a(d), 2, nodemask_of(1), "admin", "test") < 0);
	assert_int_equal(f->stub.nr_pins, 1);
	assert_int_equal(d->state->nr, 1);
	assert_non_null(state_find(d->state, "vm-a", 1));
	assert_false(d->state->dirty);
	st = on_disk(d);
	assert_int_equal(st->nr, 1);
	state_free(st);
}

/* vm-a's vCPUs recorded as pinned from orig (per vCPU), saved, and known to the daemon. */
static void
record_all(struct daemon *d, const uint64_t *orig)
{
	char err[1024];

	for (int c = 0; c < STUB_VCPUS; c++)
		assert_int_equal(
		    state_record(d->state, "vm-a", STUB_VM_ID, c, STUB_VM_ID + 1 + c, orig[c]), 0);
	assert_int_equal(state_save(d->state, d->cfg.state_file, err, sizeof(err)), 0);
	d->vms = calloc(1, sizeof(*d->vms));
	assert_non_null(d->vms);
	d->nr_vms = d->cap_vms = 1;
	d->vms[0].id = STUB_VM_ID;
	snprintf(d->vms[0].name, sizeof(d->vms[0].name), "vm-a");
	d->vms[0].nr_vcpus = STUB_VCPUS;
	d->vms[0].admin_pinned = true;
}

/* The nodes of the last pin of vCPU vcpu, or 0 when there was none. */
static uint64_t
last_pin(const struct stub *s, int vcpu)
{
	for (int i = s->nr_pins - 1; i >= 0; i--)
		if (s->pins[i].vcpu == vcpu)
			return s->pins[i].nodes;
	return 0;
}

/*
 * vCPU 1's pin back fails (-EPERM): its entry stays, in memory and on disk.  vCPU 2's thread
 * is gone (-ESRCH), and so are a VM and a vCPU number the host no longer has: forgotten.
 * vCPU 3 was recorded with nodes 0-7 on this 2-node host: put back on every node.  A second
 * restore, when the pin works, puts vCPU 1 back and empties the file.
 */
static void
test_restore_keeps_what_failed(void **state)
{
	static const uint64_t orig[STUB_VCPUS] = {0x1, 0x2, 0x3, 0xff};
	struct fixture *f = *state;
	struct daemon *d = f->d;
	struct state *st;

	record_all(d, orig);
	state_record(d->state, "vm-gone", 7, 0, 8, 0x1);
	state_record(d->state, "vm-a", STUB_VM_ID, STUB_VCPUS + 3, 9, 0x1);
	f->stub.pin_rc[1] = -EPERM;
	f->stub.pin_rc[2] = -ESRCH;
	assert_int_equal(daemon_restore(d), 2);
	assert_true(last_pin(&f->stub, 0) == 0x1);
	assert_true(last_pin(&f->stub, 1) == 0x2);
	assert_true(last_pin(&f->stub, 3) == NODEMASK_ALL);
	assert_int_equal(d->state->nr, 1);
	assert_non_null(state_find(d->state, "vm-a", 1));
	st = on_disk(d);
	assert_int_equal(st->nr, 1);
	assert_true(state_find(st, "vm-a", 1)->orig_nodes == 0x2);
	state_free(st);

	f->stub.pin_rc[1] = 0;
	f->stub.nr_pins = 0;
	assert_int_equal(daemon_restore(d), 1);
	assert_int_equal(f->stub.nr_pins, 1);
	assert_true(last_pin(&f->stub, 1) == 0x2);
	assert_int_equal(d->state->nr, 0);
	st = on_disk(d);
	assert_int_equal(st->nr, 0);
	state_free(st);
}

/* `vnumactl unpin vm-a`, through the handler; the reply's status and err. */
static enum proto_status
unpin(struct daemon *d, char *err, size_t errlen)
{
	const struct control_peer peer = {.may_write = true};
	struct json_object *args = json_object_new_object(), *data = NULL;
	enum proto_status st;

	json_object_object_add(args, "vm", json_object_new_string("vm-a"));
	err[0] = '\0';
	st = h_unpin(d, NULL, &peer, args, &data, err, errlen);
	json_object_put(data);
	json_object_put(args);
	return st;
}

/*
 * An unpin whose pin back fails for vCPU 1 says so and keeps that vCPU's entry (and the VM
 * hands-off, as it is still pinned); the gone vCPU 2 and the others are forgotten; vCPU 3,
 * recorded with nodes this host lacks, goes to every node.  Unpinned again once the pin works.
 */
static void
test_unpin_keeps_what_failed(void **state)
{
	static const uint64_t orig[STUB_VCPUS] = {0x1, 0x2, 0x3, 0xff};
	struct fixture *f = *state;
	struct daemon *d = f->d;
	char err[512];

	record_all(d, orig);
	f->stub.pin_rc[1] = -EPERM;
	f->stub.pin_rc[2] = -ESRCH;
	assert_int_equal(unpin(d, err, sizeof(err)), PROTO_INTERNAL);
	if (strstr(err, "vCPU 1") == NULL || strstr(err, strerror(EPERM)) == NULL)
		fail_msg("err: %s", err);
	assert_int_equal(d->state->nr, 1);
	assert_true(state_find(d->state, "vm-a", 1)->orig_nodes == 0x2);
	assert_true(last_pin(&f->stub, 0) == 0x1);
	assert_true(last_pin(&f->stub, 3) == NODEMASK_ALL);
	assert_true(d->vms[0].admin_pinned);

	f->stub.pin_rc[1] = 0;
	assert_int_equal(unpin(d, err, sizeof(err)), PROTO_OK);
	assert_true(last_pin(&f->stub, 1) == 0x2);
	assert_int_equal(d->state->nr, 0);
	assert_false(d->vms[0].admin_pinned);
}

/* How many events of kind the daemon holds. */
static int
events_of(struct daemon *d, const char *kind)
{
	uint64_t next;
	struct json_object *all = events_query(&d->events, 0, -1, 0, &next);
	int nr = 0;

	for (size_t i = 0; i < json_object_array_length(all); i++) {
		struct json_object *k;

		if (json_object_object_get_ex(json_object_array_get_idx(all, i), "kind", &k) &&
		    strcmp(json_object_get_string(k), kind) == 0)
			nr++;
	}
	json_object_put(all);
	return nr;
}

/*
 * vm-a loses vCPU threads under the same pid: a QEMU exiting (virsh destroy) is left out of
 * rounds, not taken for another VM, and leaves once when it is gone; one that keeps its fewer
 * vCPUs (an unplug) leaves and arrives again with them once DAEMON_VM_GONE_ROUNDS passed.
 */
static void
test_vcpus_shrink(void **state)
{
	struct fixture *f = *state;
	struct daemon *d = f->d;

	d->bal = &vnumad_balancer_ops;
	d->eng = d->bal->create(NULL);
	assert_int_equal(daemon_round(d), 0);
	assert_int_equal(events_of(d, "arrive"), 1);
	f->stub.nr_vcpus = 1; /* exiting: threads end */
	assert_int_equal(daemon_round(d), 0);
	assert_int_equal(d->snap->nr_vms, 0); /* left out of the round */
	f->stub.vm_gone = true;
	for (int i = 0; i < DAEMON_VM_GONE_ROUNDS; i++)
		assert_int_equal(daemon_round(d), 0);
	assert_int_equal(events_of(d, "leave"), 1);
	assert_int_equal(events_of(d, "arrive"), 1);

	/* back with 4 vCPUs, then an unplug to 2 that stays */
	f->stub.vm_gone = false;
	f->stub.nr_vcpus = 0;
	assert_int_equal(daemon_round(d), 0);
	assert_int_equal(events_of(d, "arrive"), 2);
	f->stub.nr_vcpus = 2;
	for (int i = 0; i < DAEMON_VM_GONE_ROUNDS; i++)
		assert_int_equal(daemon_round(d), 0);
	assert_int_equal(events_of(d, "leave"), 2);
	assert_int_equal(events_of(d, "arrive"), 3);
	assert_int_equal(d->snap->nr_vms, 1);
	assert_int_equal(d->snap->vms[0].nr_vcpus, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_pin_waits_for_the_disk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_admin_pin_written_first, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restore_keeps_what_failed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unpin_keeps_what_failed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vcpus_shrink, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

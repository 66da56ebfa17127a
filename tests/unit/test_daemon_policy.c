/*
 * test_daemon_policy.c - `vnumactl policy` through the daemon itself (agent/daemon.c,
 * agent/handlers_vm.c) on the built-in simulated host, each test with a daemon of its own
 * (daemon_harness.h):
 * - a change made while paused, or while a vCPU is pinned, is merged onto the VM's configured
 *   policy: after resume / unpin the VM is auto again, not advisory or manual for good;
 * - --nodes all, --rate 0 and --group '' put those attributes back to their defaults;
 * - --placement cells on a VM without guest cells is refused; a policy file asking for it is
 *   applied as compact, with a note in vminfo and policy.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "agent/daemon.h"
#include "agent/handlers.h"
#include "agent/log.h"
#include "daemon_harness.h"
#include "policy/vm_policy.h"

#define POLICY(attrs) "<vnuma:policy xmlns:vnuma='" VM_POLICY_NS "' " attrs "/>\n"
/* Rounds run before looking: enough for every VM of the scenario to arrive and be placed. */
#define ROUNDS 5

/* A handler that must succeed, its reply dropped. */
static void
call_ok(struct tdaemon *t, control_handler_fn fn, struct json_object *args)
{
	struct json_object *data;
	char err[512];
	enum proto_status st = tdaemon_call(t, fn, args, &data, err, sizeof(err));

	if (st != PROTO_OK)
		fail_msg("handler: %d %s", st, err);
	json_object_put(data);
}

static void
policy_ok(struct tdaemon *t, const char *vm, const char *key, const char *value)
{
	struct json_object *data;
	char err[512];
	enum proto_status st = tdaemon_policy(t, vm, key, value, &data, err, sizeof(err));

	if (st != PROTO_OK)
		fail_msg("policy %s --%s '%s': %d %s", vm, key, value, st, err);
	json_object_put(data);
}

static struct json_object *
vm_args(const char *vm)
{
	struct json_object *args = json_object_new_object();

	json_object_object_add(args, "vm", json_object_new_string(vm));
	return args;
}

/* After a few rounds: vm's policy in force has mode and priority. */
static void
assert_mode(struct tdaemon *t, const char *vm, enum vm_policy_mode mode, int priority)
{
	const struct snap_vm *sv;

	tdaemon_rounds(t, 2);
	sv = tdaemon_vm(t, vm);
	assert_int_equal(sv->policy.mode, mode);
	assert_int_equal(sv->policy.priority, priority);
}

/* vm's live policy, the one a change is merged onto: auto with priority. */
static void
assert_live(struct tdaemon *t, const char *vm, int priority)
{
	const struct dvm *v = daemon_vm(&t->d, tdaemon_vm(t, vm)->id);

	assert_true(v->live_policy);
	assert_string_equal(v->policy_source, "live");
	assert_int_equal(v->policy.mode, VM_POLICY_MODE_AUTO);
	assert_int_equal(v->policy.priority, priority);
	assert_int_equal(v->configured.mode, VM_POLICY_MODE_AUTO);
	assert_int_equal(v->configured.priority, priority);
}

static void
test_change_while_paused(void **state)
{
	struct tdaemon t;

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, ROUNDS);
	call_ok(&t, tdaemon_handler("pause"), NULL);
	assert_mode(&t, "web1", VM_POLICY_MODE_ADVISORY, VM_POLICY_PRIORITY_DEF);
	policy_ok(&t, "web1", "priority", "60");
	assert_mode(&t, "web1", VM_POLICY_MODE_ADVISORY, 60);
	call_ok(&t, tdaemon_handler("resume"), NULL);
	/* the live policy is the configured one with priority 60: auto, not pause's advisory */
	assert_mode(&t, "web1", VM_POLICY_MODE_AUTO, 60);
	assert_live(&t, "web1", 60);
	tdaemon_stop(&t);
}

static void
test_change_while_pinned(void **state)
{
	struct json_object *args;
	struct tdaemon t;

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, ROUNDS);
	args = vm_args("web2");
	json_object_object_add(args, "vcpu", json_object_new_int(0));
	json_object_object_add(args, "node", json_object_new_string("1"));
	call_ok(&t, h_pin, args);
	assert_mode(&t, "web2", VM_POLICY_MODE_MANUAL, VM_POLICY_PRIORITY_DEF);
	policy_ok(&t, "web2", "priority", "70");
	assert_mode(&t, "web2", VM_POLICY_MODE_MANUAL, 70);
	call_ok(&t, h_unpin, vm_args("web2"));
	/* back to its own mode, auto: the pin's manual was never stored */
	assert_mode(&t, "web2", VM_POLICY_MODE_AUTO, 70);
	assert_live(&t, "web2", 70);
	tdaemon_stop(&t);
}

/* A migrate while paused keeps nothing of pause either (it sets mode auto and the node). */
static void
test_migrate_while_paused_then_policy(void **state)
{
	struct json_object *args;
	struct tdaemon t;

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, ROUNDS);
	call_ok(&t, tdaemon_handler("pause"), NULL);
	tdaemon_rounds(&t, 1);
	args = vm_args("web3");
	json_object_object_add(args, "node", json_object_new_string("2"));
	call_ok(&t, h_migrate, args);
	policy_ok(&t, "web3", "priority", "40");
	call_ok(&t, tdaemon_handler("resume"), NULL);
	assert_mode(&t, "web3", VM_POLICY_MODE_AUTO, 40);
	assert_live(&t, "web3", 40);
	assert_true(tdaemon_vm(&t, "web3")->policy.nodes == nodemask_of(2));
	tdaemon_stop(&t);
}

static void
test_reset_to_default(void **state)
{
	const struct dvm *v;
	struct tdaemon t;

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, ROUNDS);
	policy_ok(&t, "web1", "nodes", "1");
	policy_ok(&t, "web1", "rate", "256MiB/s");
	policy_ok(&t, "web1", "group", "shop");
	v = daemon_vm(&t.d, tdaemon_vm(&t, "web1")->id);
	assert_true(v->policy.nodes == nodemask_of(1));
	assert_int_equal(v->policy.rate_kib_s, 256 * 1024);
	assert_string_equal(v->policy.group, "shop");

	policy_ok(&t, "web1", "nodes", "all");
	policy_ok(&t, "web1", "rate", "0");
	policy_ok(&t, "web1", "group", "");
	assert_true(v->policy.nodes == NODEMASK_ALL);
	assert_int_equal(v->policy.rate_kib_s, 0);
	assert_string_equal(v->policy.group, "");
	/* "" resets any of them; the rest of the policy stays */
	policy_ok(&t, "web1", "priority", "80");
	policy_ok(&t, "web1", "rate", "1GiB/s");
	policy_ok(&t, "web1", "rate", "");
	assert_int_equal(v->policy.rate_kib_s, 0);
	assert_int_equal(v->policy.priority, 80);
	tdaemon_rounds(&t, 2);
	assert_true(tdaemon_vm(&t, "web1")->policy.nodes == NODEMASK_ALL);
	tdaemon_stop(&t);
}

static void
test_placement_cells_refused_without_cells(void **state)
{
	struct json_object *data;
	struct tdaemon t;
	char err[512];

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, ROUNDS);
	assert_int_equal(tdaemon_vm(&t, "web1")->nr_cells, 0);
	assert_int_equal(tdaemon_policy(&t, "web1", "placement", "cells", &data, err, sizeof(err)),
	                 PROTO_CONFLICT);
	assert_null(data);
	assert_string_equal(err, "placement=\"cells\": web1 has no guest vNUMA cells (placement "
	                         "cells gives each cell a host node; use compact)");
	assert_false(daemon_vm(&t.d, tdaemon_vm(&t, "web1")->id)->live_policy);
	/* compact is fine, and so is cells on the VM that has cells */
	policy_ok(&t, "web1", "placement", "compact");
	assert_true(tdaemon_vm(&t, "hpc-wide")->nr_cells > 0);
	policy_ok(&t, "hpc-wide", "placement", "cells");
	tdaemon_stop(&t);
}

static void
test_placement_cells_file_applied_as_compact(void **state)
{
	const char *note = "placement cells: the VM has no guest vNUMA cells, so it is placed as "
	                   "compact";
	struct json_object *data;
	const struct snap_vm *vm;
	struct tdaemon t;
	char err[512];

	(void)state;
	tdaemon_start(&t, "default", "web1", POLICY("placement='cells' priority='70'"));
	tdaemon_rounds(&t, ROUNDS);
	vm = tdaemon_vm(&t, "web1");
	assert_true(vm->policy_ok);
	assert_int_equal(vm->policy.placement, VM_POLICY_PLACEMENT_COMPACT);
	assert_int_equal(vm->policy.priority, 70);
	assert_int_equal(daemon_vm(&t.d, vm->id)->configured.placement, VM_POLICY_PLACEMENT_CELLS);
	assert_int_equal(tdaemon_call(&t, h_vminfo, vm_args("web1"), &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_string_equal(json_str(data, "policy_note"), note);
	json_object_put(data);
	assert_int_equal(tdaemon_call(&t, h_policy, vm_args("web1"), &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_string_equal(json_str(data, "policy_note"), note);
	json_object_put(data);
	/* a VM with cells has no note */
	assert_int_equal(tdaemon_call(&t, h_vminfo, vm_args("hpc-wide"), &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_string_equal(json_str(data, "policy_note"), "");
	json_object_put(data);
	tdaemon_stop(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_change_while_paused),
	    cmocka_unit_test(test_change_while_pinned),
	    cmocka_unit_test(test_migrate_while_paused_then_policy),
	    cmocka_unit_test(test_reset_to_default),
	    cmocka_unit_test(test_placement_cells_refused_without_cells),
	    cmocka_unit_test(test_placement_cells_file_applied_as_compact),
	};

	log_init("test_daemon_policy", LOG_LEVEL_WARN, LOG_TARGET_STDERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

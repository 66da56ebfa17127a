/*
 * test_daemon_nodes.c - policies that name nodes the host does not have, through the daemon
 * itself (agent/daemon.c, agent/handlers_vm.c) on the simulated host, each test with a daemon
 * of its own in a fresh temporary directory (socket, state file, policy directory):
 * - `vnumactl policy web1 --nodes 7` on the built-in 4-node host is refused with a message
 *   naming node 7 and the host's nodes, and nothing is stored; a good list is taken;
 * - a policy file web1.xml with nodes="7": the daemon runs on, web1 has the default policy
 *   and shows the error (source file), and is placed on the host's nodes;
 * - on a 64-node host, nodes 0,2,...,62 are shown whole and survive a second policy change
 *   (which rebuilds the policy from its text form).
 * The handlers are called as the control server calls them, with a peer that may write.
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

#include "agent/config.h"
#include "agent/daemon.h"
#include "agent/handlers.h"
#include "agent/log.h"
#include "daemon_harness.h"
#include "host/sim/sim.h"
#include "policy/engine.h"
#include "policy/vm_policy.h"

#define POLICY(attrs) "<vnuma:policy xmlns:vnuma='" VM_POLICY_NS "' " attrs "/>\n"
/* Rounds run before looking: enough for every VM of the scenario to arrive and be placed. */
#define ROUNDS 5

static uint64_t
engine_rejected(const struct tdaemon *t)
{
	struct engine_counters c;

	engine_report_counters(t->d.eng, &c);
	return c.vms_rejected;
}

/* Placed by the engine, on the host's nodes only. */
static void
assert_placed(const struct tdaemon *t, const struct snap_vm *vm)
{
	struct engine_vm_report r;

	assert_int_equal(engine_report_vm(t->d.eng, vm->id, &r), 0);
	assert_true(r.placed);
	assert_true(r.home != 0 && (r.home & ~nodemask_all_of(t->d.snap->nr_nodes)) == 0);
}

static void
assert_refused(struct tdaemon *t, const char *nodes, const char *want)
{
	struct json_object *data;
	char err[512];

	assert_int_equal(tdaemon_policy(t, "web1", "nodes", nodes, &data, err, sizeof(err)),
	                 PROTO_BAD_REQUEST);
	assert_null(data);
	assert_string_equal(err, want);
}

static void
test_request_refused(void **state)
{
	struct json_object *data;
	struct tdaemon t;
	char err[512];

	(void)state;
	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, ROUNDS);
	assert_int_equal(t.d.snap->nr_nodes, 4);
	assert_refused(&t, "7", "nodes=\"7\": node 7 is not one of this host's nodes (0-3)");
	assert_refused(&t, "2-5", "nodes=\"2-5\": nodes 4-5 are not among this host's nodes (0-3)");
	assert_refused(&t, "63", "nodes=\"63\": node 63 is not one of this host's nodes (0-3)");
	/* nothing stored: not as the daemon's live policy, not in the policy in force */
	assert_false(daemon_vm(&t.d, tdaemon_vm(&t, "web1")->id)->live_policy);
	assert_true(tdaemon_vm(&t, "web1")->policy.nodes == NODEMASK_ALL);
	tdaemon_rounds(&t, 2);
	assert_true(tdaemon_vm(&t, "web1")->policy.nodes == NODEMASK_ALL);
	assert_placed(&t, tdaemon_vm(&t, "web1"));

	/* a list of the host's own nodes is taken */
	assert_int_equal(tdaemon_policy(&t, "web1", "nodes", "3", &data, err, sizeof(err)),
	                 PROTO_OK);
	json_object_put(data);
	tdaemon_rounds(&t, ROUNDS);
	assert_true(tdaemon_vm(&t, "web1")->policy.nodes == nodemask_of(3));
	assert_placed(&t, tdaemon_vm(&t, "web1"));
	assert_int_equal(engine_rejected(&t), 0);
	tdaemon_stop(&t);
}

static void
test_policy_file_out_of_range(void **state)
{
	const char *want = "web1.xml: nodes=\"7\": node 7 is not one of this host's nodes (0-3)";
	struct json_object *row;
	const struct snap_vm *vm;
	struct tdaemon t;

	(void)state;
	tdaemon_start(&t, "default", "web1", POLICY("nodes='7' priority='70'"));
	tdaemon_rounds(&t, ROUNDS);
	vm = tdaemon_vm(&t, "web1");
	assert_false(vm->policy_ok);
	assert_string_equal(vm->policy_error, want);
	assert_string_equal(daemon_vm(&t.d, vm->id)->policy_source, "file");
	/* the default policy, all of it (not the file's priority either) */
	assert_int_equal(vm->policy.mode, VM_POLICY_MODE_AUTO);
	assert_true(vm->policy.nodes == NODEMASK_ALL);
	assert_int_equal(vm->policy.priority, VM_POLICY_PRIORITY_DEF);
	assert_placed(&t, vm);
	assert_int_equal(engine_rejected(&t), 0); /* the daemon caught it, not the engine */
	/* list and vminfo show it */
	row = handlers_vm_row(&t.d, vm);
	assert_false(json_object_get_boolean(json_object_object_get(row, "policy_ok")));
	assert_string_equal(json_str(row, "policy_error"), want);
	json_object_put(row);
	tdaemon_stop(&t);
}

/* A 64-node host of 1 CPU and 1 GiB per node with one 2-vCPU VM, v1. */
static void
write_64node_scenario(const char *path)
{
	put_file(path,
	         "{\"name\": \"64nodes\", \"duration_s\": 60,\n"
	         " \"host\": {\"nodes\": 64, \"cpus_per_node\": 1, \"memory_per_node_gib\": 1},\n"
	         " \"vms\": [{\"name\": \"v1\", \"vcpus\": 2, \"memory_gib\": 0.5,\n"
	         "           \"workload\": \"idle\"}]}\n");
}

static void
test_64_nodes_round_trip(void **state)
{
	char even[NODEMASK_STR_MAX] = "", path[256], err[512];
	uint64_t mask = 0;
	struct json_object *data;
	struct tdaemon t;
	struct dvm *v;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/vnumad-dn-64nodes-%d.json", (int)getpid());
	write_64node_scenario(path);
	tdaemon_start(&t, path, NULL, NULL);
	tdaemon_rounds(&t, 2);
	assert_int_equal(t.d.snap->nr_nodes, 64);
	for (int n = 0; n < 64; n += 2) {
		snprintf(even + strlen(even), sizeof(even) - strlen(even), "%s%d", n ? "," : "", n);
		mask |= nodemask_of(n);
	}
	assert_int_equal(tdaemon_policy(&t, "v1", "nodes", even, &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_string_equal(json_str(json_object_object_get(data, "policy"), "nodes"), even);
	assert_non_null(strstr(json_str(data, "policy_xml"), even));
	json_object_put(data);

	/* a second change starts from the first one's text: all 32 nodes stay */
	assert_int_equal(tdaemon_policy(&t, "v1", "priority", "20", &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_string_equal(json_str(json_object_object_get(data, "policy"), "nodes"), even);
	json_object_put(data);
	v = daemon_vm(&t.d, tdaemon_vm(&t, "v1")->id);
	assert_true(v->policy.nodes == mask);
	assert_int_equal(v->policy.priority, 20);
	tdaemon_rounds(&t, 2);
	assert_true(tdaemon_vm(&t, "v1")->policy.nodes == mask);
	assert_int_equal(engine_rejected(&t), 0);
	tdaemon_stop(&t);
	unlink(path);
}

/*
 * The kernel's own moves beside vnumad are counted apart (pages_migrated_kernel) and match
 * what the host moved.  b may not be migrated by vnumad (migrate='no') but is homed on node 1
 * (a holds node 0's CPUs) while its RAM is on node 0: the kernel's balancing pulls it after
 * the pinned vCPUs; a moves nothing.
 */
static void
test_kernel_moves_counted(void **state)
{
	char path[256];
	struct json_object *data, *c;
	struct tdaemon t;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/vnumad-dn-kernel-%d.json", (int)getpid());
	assert_non_null(f = fopen(path, "w"));
	fputs("{\"name\": \"kernel-beside\", \"duration_s\": 120,\n"
	      " \"host\": {\"nodes\": 2, \"cpus_per_node\": 8, \"memory_per_node_gib\": 32},\n"
	      " \"vms\": [{\"name\": \"a\", \"vcpus\": 6, \"memory_gib\": 12,\n"
	      "           \"workload\": \"private\", \"first_touch_node\": 0},\n"
	      "          {\"name\": \"b\", \"vcpus\": 6, \"memory_gib\": 12,\n"
	      "           \"workload\": \"private\", \"first_touch_node\": 0, \"policy\":\n"
	      "           \"<vnuma:policy xmlns:vnuma='http://vnumad.org/schemas/policy/1.0'"
	      " migrate='no'/>\"}]}\n",
	      f);
	assert_int_equal(fclose(f), 0);
	tdaemon_start(&t, path, NULL, NULL);
	tdaemon_rounds(&t, 100);
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "b" : "a";
		const uint64_t truth = sim_vm_migrated_mib(host_sim_model(t.d.host), i, true);

		struct json_object *args = json_object_new_object();
		char err[512];

		json_object_object_add(args, "vm", json_object_new_string(name));
		assert_int_equal(
		    tdaemon_call(&t, tdaemon_handler("stats"), args, &data, err, sizeof(err)),
		    PROTO_OK);
		c = json_object_object_get(data, "counters");
		assert_int_equal(
		    json_object_get_int64(json_object_object_get(c, "pages_migrated_kernel")),
		    truth * 256);
		if (i == 1) /* all of b's 12 GiB went after its vCPUs, by the kernel alone */
			assert_int_equal(truth, 12 * 1024);
		json_object_put(data);
	}
	tdaemon_stop(&t);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_refused),
	    cmocka_unit_test(test_policy_file_out_of_range),
	    cmocka_unit_test(test_64_nodes_round_trip),
	    cmocka_unit_test(test_kernel_moves_counted),
	};

	log_init("test_daemon_nodes", LOG_LEVEL_WARN, LOG_TARGET_STDERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

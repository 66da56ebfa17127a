/*
 * test_daemon_migrate.c - `vnumactl migrate` checks first: a VM that does not fit the node
 * (memory above the fullness guard, or more vCPUs than CPUs) is refused with the numbers and
 * nothing changes; --force asks anyway; the reply names the policy left behind.
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

#include "agent/cmd_migrate.h"
#include "agent/config.h"
#include "agent/daemon.h"
#include "agent/handlers.h"
#include "daemon_harness.h"

/*
 * 2 nodes of 8 CPUs and 16 GiB: big (12 GiB) and wide (10 vCPUs, 1 GiB) on node 0, fill
 * (10 GiB) on node 1, which then has about 5 GiB free above its 0.8 GiB guard.
 */
static const char migrate_scenario[] =
    "{\"name\": \"migrate-fit\", \"duration_s\": 900,\n"
    " \"host\": {\"nodes\": 2, \"cpus_per_node\": 8, \"memory_per_node_gib\": 16},\n"
    " \"vms\": [{\"name\": \"big\", \"vcpus\": 2, \"memory_gib\": 12, \"first_touch_node\": 0},\n"
    "          {\"name\": \"wide\", \"vcpus\": 10, \"memory_gib\": 1, \"util\": 0.2,\n"
    "           \"first_touch_node\": 0},\n"
    "          {\"name\": \"fill\", \"vcpus\": 2, \"memory_gib\": 10, \"first_touch_node\": 1}]}\n";

static void
mig_start(struct tdaemon *t)
{
	tdaemon_start_text(t, migrate_scenario, SIM_PROFILE_LINUX);
	tdaemon_rounds(t, 5);
}

static enum proto_status
mig_call(struct tdaemon *m, const char *vm, int node, bool force, struct json_object **data,
         char *err, size_t errlen)
{
	struct json_object *args = json_object_new_object();

	json_object_object_add(args, "vm", json_object_new_string(vm));
	json_object_object_add(args, "node", json_object_new_int(node));
	if (force)
		json_object_object_add(args, "force", json_object_new_boolean(true));
	return tdaemon_call(m, tdaemon_handler("migrate"), args, data, err, errlen);
}

/* The VM's policy source and nodes, as `vnumactl policy VM` shows them. */
static void
mig_policy_is(struct tdaemon *m, const char *vm, const char *source, const char *nodes)
{
	struct json_object *args = json_object_new_object(), *data;
	char err[256];

	json_object_object_add(args, "vm", json_object_new_string(vm));
	assert_int_equal(tdaemon_call(m, tdaemon_handler("policy"), args, &data, err, sizeof(err)),
	                 PROTO_OK);
	assert_string_equal(json_str(data, "source"), source);
	assert_string_equal(json_str(json_object_object_get(data, "policy"), "nodes"), nodes);
	json_object_put(data);
}

static void
test_migrate_memory_short(void **state)
{
	struct json_object *data;
	char err[512];
	struct tdaemon m;

	(void)state;
	mig_start(&m);
	assert_int_equal(mig_call(&m, "big", 1, false, &data, err, sizeof(err)), PROTO_CONFLICT);
	if (strstr(err, "big (12.0 GiB) does not fit node 1: ") == NULL ||
	    strstr(err, "GiB of it kept free by the node-fullness guard") == NULL ||
	    strstr(err, "nothing changed (--force asks anyway") == NULL)
		fail_msg("%s", err);
	mig_policy_is(&m, "big", "default", "all");
	/* the node it is on fits: what is there counts */
	assert_int_equal(mig_call(&m, "big", 0, false, &data, err, sizeof(err)), PROTO_OK);
	assert_string_equal(json_str(data, "policy_nodes"), "0");
	json_object_put(data);
	tdaemon_rounds(&m, 1);
	mig_policy_is(&m, "big", "live", "0");
	/* --force asks anyway */
	assert_int_equal(mig_call(&m, "big", 1, true, &data, err, sizeof(err)), PROTO_OK);
	json_object_put(data);
	tdaemon_rounds(&m, 1);
	mig_policy_is(&m, "big", "live", "1");
	tdaemon_stop(&m);
}

static void
test_migrate_cpus_short(void **state)
{
	struct json_object *data;
	char err[512];
	struct tdaemon m;

	(void)state;
	mig_start(&m);
	assert_int_equal(mig_call(&m, "wide", 1, false, &data, err, sizeof(err)), PROTO_CONFLICT);
	assert_string_equal(err, "wide (10 vCPUs) does not fit node 1: it has 8 CPUs; nothing "
	                         "changed (--force asks anyway: its vCPUs then share the node's "
	                         "CPUs)");
	mig_policy_is(&m, "wide", "default", "all");
	tdaemon_stop(&m);
}

/* Off a terminal: a line at once, then per tenth of the VM or every CMD_MIGRATE_LINE_S. */
static void
test_migrate_lines_due(void **state)
{
	(void)state;
	assert_true(cmd_migrate_line_due(-1, 0, 0, 0));
	assert_false(cmd_migrate_line_due(5, 0.0, 6, 0.05));
	assert_true(cmd_migrate_line_due(5, 0.05, 6, 0.10));
	assert_false(cmd_migrate_line_due(5, 0.31, 6, 0.39));
	assert_true(cmd_migrate_line_due(5, 0.31, 5 + CMD_MIGRATE_LINE_S, 0.31));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_migrate_memory_short),
	    cmocka_unit_test(test_migrate_cpus_short),
	    cmocka_unit_test(test_migrate_lines_due),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

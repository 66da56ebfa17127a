/*
 * test_daemon_views.c - what list and vminfo say a VM's locality is: memory locality and fault
 * locality named apart, the fault figure measured from the faults that came since the last
 * look (a vCPU moved keeps none of its old node's faults) and never shown once no fault has
 * come for a while (sampling parked), with its age; and what status says of the host's levers.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "agent/cmd_host.h"
#include "agent/config.h"
#include "agent/daemon.h"
#include "agent/handlers.h"
#include "daemon_harness.h"
#include "policy/engine.h"

/* One 4-vCPU private VM whose guest touched its 4 GiB on node 1, on a 2-node host. */
static const char views_scenario[] =
    "{\"name\": \"views\", \"duration_s\": 900,\n"
    " \"host\": {\"nodes\": 2, \"cpus_per_node\": 8, \"memory_per_node_gib\": 32},\n"
    " \"vms\": [{\"name\": \"a\", \"vcpus\": 4, \"memory_gib\": 4,\n"
    "           \"workload\": \"private\", \"first_touch_node\": 1}]}\n";

static void
views_start(struct tdaemon *t, enum sim_profile profile)
{
	tdaemon_start_text(t, views_scenario, profile);
}

/* VM a's vminfo reply (put by the caller). */
static struct json_object *
views_vminfo(struct tdaemon *v)
{
	struct json_object *args = json_object_new_object(), *data;
	char err[512];

	json_object_object_add(args, "vm", json_object_new_string("a"));
	assert_int_equal(tdaemon_call(v, tdaemon_handler("vminfo"), args, &data, err, sizeof(err)),
	                 PROTO_OK);
	return data;
}

/* A number field, or -1 when it is null. */
static double
views_num(struct json_object *o, const char *key)
{
	struct json_object *x;

	assert_true(json_object_object_get_ex(o, key, &x));
	return x != NULL ? json_object_get_double(x) : -1;
}

/* `vnumactl migrate a --node NODE`, as the control server calls it. */
static void
views_migrate(struct tdaemon *v, int node)
{
	struct json_object *args = json_object_new_object(), *r;
	char err[256];

	json_object_object_add(args, "vm", json_object_new_string("a"));
	json_object_object_add(args, "node", json_object_new_int(node));
	assert_int_equal(tdaemon_call(v, tdaemon_handler("migrate"), args, &r, err, sizeof(err)),
	                 PROTO_OK);
	json_object_put(r);
}

/* VM a's vCPUs all on node? */
static bool
views_vcpus_on(struct json_object *info, int node)
{
	struct json_object *vcpus = json_object_object_get(info, "vcpu");

	for (size_t i = 0; i < json_object_array_length(vcpus); i++)
		if (views_num(json_object_array_get_idx(vcpus, i), "node") != node)
			return false;
	return true;
}

/*
 * After `migrate`, the faults taken on the old node are not shown as the VM's locality: the
 * fault figure is none until faults come on the new node, then it is theirs; memory locality
 * follows the pages as they move.  (The old view kept the old faults, counted against the
 * new node: locality 0.00 for a VM moved whole.)
 */
static void
test_views_after_migrate(void **state)
{
	struct json_object *info;
	bool moved = false, partial = false, fresh = false;
	double age_prev = -1;
	struct tdaemon v;

	(void)state;
	views_start(&v, SIM_PROFILE_LINUX);
	tdaemon_rounds(&v, 60);
	info = views_vminfo(&v);
	assert_true(views_vcpus_on(info, 1));
	assert_true(views_num(info, "memory_locality") == 1.0);
	assert_true(views_num(info, "fault_locality") >= 0.9);
	json_object_put(info);

	views_migrate(&v, 0);
	for (int i = 0; i < 120 && !fresh; i++) {
		double loc, age;

		tdaemon_rounds(&v, 1);
		info = views_vminfo(&v);
		loc = views_num(info, "fault_locality");
		age = views_num(info, "fault_age_s");
		moved |= views_vcpus_on(info, 0);
		partial |= views_num(info, "memory_locality") < 1.0;
		fresh = moved && age_prev >= 0 && age < age_prev; /* a batch since the move */
		if (moved && !fresh)
			assert_true(loc == -1); /* only faults from before the move so far */
		if (fresh)
			assert_true(loc >= 0.9);
		age_prev = age;
		json_object_put(info);
	}
	assert_true(moved && partial && fresh);
	info = views_vminfo(&v);
	assert_true(views_num(info, "memory_locality") == 1.0);
	json_object_put(info);
	tdaemon_stop(&v);
}

/*
 * The fault figure's own rules, on a record: none when no fault was seen, when the last
 * batch is older than 30 s (or twice the scan pass, when that is longer), or too small.
 */
static void
test_views_stale(void **state)
{
	struct dvm v;
	double age;

	(void)state;
	memset(&v, 0, sizeof(v));
	v.fault_last_s = -1;
	assert_true(daemon_fault_locality(&v, 100, 0, &age) == -1 && age == -1);
	assert_true(daemon_fault_locality(NULL, 100, 0, &age) == -1 && age == -1);

	v.fault_last_s = 100;
	v.recent_at_s = 100;
	v.fault_last_batch = 1000;
	v.recent_all = 1000;
	v.recent_local = 750;
	assert_true(daemon_fault_locality(&v, 100 + DAEMON_FAULT_STALE_S, 0, &age) == 0.75);
	assert_true(age == DAEMON_FAULT_STALE_S);
	assert_true(daemon_fault_locality(&v, 101 + DAEMON_FAULT_STALE_S, 0, &age) == -1);
	assert_true(age == DAEMON_FAULT_STALE_S + 1);
	/* a 64 s scan pass: faults come every 64 s, and 100 s is not stale yet */
	assert_true(daemon_fault_locality(&v, 200, 64, &age) == 0.75);
	assert_true(daemon_fault_locality(&v, 229, 64, &age) == -1);
	v.fault_last_batch = (uint64_t)DAEMON_FAULT_MIN_PAGES - 1;
	assert_true(daemon_fault_locality(&v, 101, 0, &age) == -1);
}

/* explain says the same: no fresh faults, and since when, rather than an old share. */
static void
test_views_explain(void **state)
{
	struct json_object *args, *data;
	const char *summary;
	char err[256];
	struct tdaemon v;

	(void)state;
	views_start(&v, SIM_PROFILE_LINUX);
	tdaemon_rounds(&v, 60);
	views_migrate(&v, 0);
	tdaemon_rounds(&v, 3);
	args = json_object_new_object();
	json_object_object_add(args, "vm", json_object_new_string("a"));
	assert_int_equal(
	    tdaemon_call(&v, tdaemon_handler("explain"), args, &data, err, sizeof(err)), PROTO_OK);
	summary = json_object_get_string(json_object_object_get(data, "summary"));
	if (strstr(summary, "no fresh hinting faults (the last ") == NULL)
		fail_msg("explain: %s", summary);
	json_object_put(data);
	tdaemon_stop(&v);
}

/*
 * status: one entry per lever, named, with a state of the three and a reason, present exactly
 * for the caps of the daemon's snapshot (lever parity), and each lever a line of the human
 * rendering; under every profile.
 */
static void
test_views_status_levers(void **state)
{
	const enum sim_profile profiles[] = {SIM_PROFILE_LINUX, SIM_PROFILE_LIBVIRT,
	                                     SIM_PROFILE_IDEAL};
	struct util_buf text = {0};
	struct json_object *data, *levers;
	char err[256], line[512];

	(void)state;
	for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
		struct tdaemon v;
		unsigned caps;

		views_start(&v, profiles[p]);
		tdaemon_rounds(&v, 2);
		caps = v.d.snap->caps;
		assert_int_equal(
		    tdaemon_call(&v, tdaemon_handler("status"), NULL, &data, err, sizeof(err)),
		    PROTO_OK);
		assert_true(json_object_object_get_ex(data, "levers", &levers));
		assert_int_equal(json_object_array_length(levers), HOST_LEVER_NR);
		cmd_status_render(&text, data);
		for (int i = 0; i < HOST_LEVER_NR; i++) {
			struct json_object *l = json_object_array_get_idx(levers, (size_t)i);
			const char *st = json_str(l, "state");

			assert_string_equal(json_str(l, "name"), host_cap_name(i));
			assert_true(strcmp(st, "present") == 0 || strcmp(st, "absent") == 0 ||
			            strcmp(st, "refused") == 0);
			assert_int_equal(strcmp(st, "present") == 0, (caps & (1u << i)) != 0);
			assert_true(json_str(l, "reason")[0] != '\0');
			snprintf(line, sizeof(line), "\n  %-14s %-8s %s\n", host_cap_name(i), st,
			         json_str(l, "reason"));
			if (strstr(text.data, line) == NULL)
				fail_msg("no line '%s' in:\n%s", line + 1, text.data);
		}
		assert_non_null(strstr(text.data, "\nlevers:\n"));
		json_object_put(data);
		free(text.data);
		memset(&text, 0, sizeof(text));
		tdaemon_stop(&v);
	}
}

/* `vnumactl place ARGS`, for a peer that may write or not: status, reply in *data. */
static enum proto_status
views_place(struct tdaemon *v, bool may_write, bool reserve, struct json_object **data, char *err,
            size_t errlen)
{
	const struct control_peer peer = {.may_write = may_write};
	struct json_object *args = json_object_new_object();
	enum proto_status st;

	json_object_object_add(args, "vcpus", json_object_new_int(8));
	json_object_object_add(args, "memory_mib", json_object_new_int(16 * 1024));
	if (reserve)
		json_object_object_add(args, "reserve", json_object_new_boolean(true));
	*data = NULL;
	err[0] = '\0';
	st = tdaemon_handler("place")(&v->d, NULL, &peer, args, data, err, errlen);
	json_object_put(args);
	return st;
}

/*
 * place --reserve (the numad shim before libvirt starts a domain): the advice is held, so the
 * next one for the same shape goes elsewhere; the reply says for how long; a peer that may
 * not write gets 403 and holds nothing; without --reserve the answer stays the same.
 */
static void
test_views_place_reserve(void **state)
{
	struct tdaemon v;
	struct json_object *a, *b, *c;
	char err[256];

	(void)state;
	views_start(&v, SIM_PROFILE_LINUX);
	tdaemon_rounds(&v, 2);
	assert_int_equal(views_place(&v, false, true, &a, err, sizeof(err)), PROTO_FORBIDDEN);
	assert_non_null(strstr(err, "--reserve"));
	assert_int_equal(engine_reserve_count(v.d.eng), 0);
	assert_int_equal(views_place(&v, false, false, &a, err, sizeof(err)), PROTO_OK);
	assert_int_equal(views_place(&v, false, false, &b, err, sizeof(err)), PROTO_OK);
	assert_string_equal(json_str(a, "nodes"), json_str(b, "nodes"));
	assert_false(json_object_object_get_ex(a, "reserved_s", NULL));
	json_object_put(b);
	assert_int_equal(views_place(&v, true, true, &b, err, sizeof(err)), PROTO_OK);
	assert_true(json_object_object_get_ex(b, "reserved_s", NULL));
	assert_int_equal(views_place(&v, true, true, &c, err, sizeof(err)), PROTO_OK);
	assert_int_equal(engine_reserve_count(v.d.eng), 2);
	assert_string_equal(json_str(a, "nodes"), json_str(b, "nodes"));
	assert_string_not_equal(json_str(b, "nodes"), json_str(c, "nodes"));
	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
	tdaemon_stop(&v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_views_after_migrate), cmocka_unit_test(test_views_stale),
	    cmocka_unit_test(test_views_explain),       cmocka_unit_test(test_views_status_levers),
	    cmocka_unit_test(test_views_place_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

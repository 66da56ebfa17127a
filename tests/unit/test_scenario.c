/* test_scenario.c - scenario JSON: values, defaults, the built-in default and every error. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/sim/scenario.h"
#include "policy/util.h"

#define POLICY_NS "xmlns:vnuma='http://vnumad.org/schemas/policy/1.0'"

/* The example of BRIEF section 4.2, verbatim. */
static const char brief_example[] =
    "{\n"
    "  \"name\": \"4node-mixed\",\n"
    "  \"seed\": 7,\n"
    "  \"duration_s\": 600,\n"
    "  \"host\": {\n"
    "    \"nodes\": 4,\n"
    "    \"cpus_per_node\": 16,\n"
    "    \"memory_per_node_gib\": 64,\n"
    "    \"distances\": [[10,21,21,21],[21,10,21,21],[21,21,10,21],[21,21,21,10]]\n"
    "  },\n"
    "  \"vms\": [\n"
    "    { \"name\": \"db1\", \"vcpus\": 8, \"memory_gib\": 24, \"workload\": \"shared\",\n"
    "      \"mem_intensity\": 0.6, \"util\": 1.0, \"start_s\": 0, \"first_touch_node\": 0 },\n"
    "    { \"name\": \"hpc1\", \"vcpus\": 16, \"memory_gib\": 48, \"workload\": \"cells\",\n"
    "      \"cells\": [ {\"vcpus\": [0,1,2,3,4,5,6,7], \"memory_gib\": 24},\n"
    "                 {\"vcpus\": [8,9,10,11,12,13,14,15], \"memory_gib\": 24} ] },\n"
    "    { \"name\": \"web1\", \"vcpus\": 4, \"memory_gib\": 8, \"workload\": \"private\", "
    "\"start_s\": 120, \"stop_s\": 400,\n"
    "      \"policy\": \"<vnuma:policy "
    "xmlns:vnuma='http://vnumad.org/schemas/policy/1.0' mode='advisory'/>\" }\n"
    "  ]\n"
    "}\n";

static struct scenario *
load_ok(const char *json)
{
	struct scenario *scn = NULL;
	char err[512] = "";

	if (scenario_load_string(json, &scn, err, sizeof(err)) != 0)
		fail_msg("unexpected error: %s\nfor: %s", err, json);
	assert_non_null(scn);
	return scn;
}

static void
test_brief_example(void **state)
{
	struct scenario *scn = load_ok(brief_example);
	const struct scn_vm *db1 = &scn->vms[0], *hpc1 = &scn->vms[1], *web1 = &scn->vms[2];

	assert_string_equal(scn->name, "4node-mixed");
	assert_int_equal(scn->seed, 7);
	assert_true(scn->duration_s == 600);
	assert_null(scn->description);
	assert_null(scn->oracle_note);
	assert_int_equal(scn->host.nodes, 4);
	assert_int_equal(scn->host.cpus_per_node, 16);
	assert_true(scn->host.memory_per_node_gib == 64);
	assert_int_equal(scn->host.distances[0], 10);
	assert_int_equal(scn->host.distances[1 * 4 + 2], 21);
	assert_int_equal(scn->nr_vms, 3);

	assert_string_equal(db1->name, "db1");
	assert_int_equal(db1->vcpus, 8);
	assert_true(db1->memory_gib == 24);
	assert_int_equal(db1->workload, SCN_WORKLOAD_SHARED);
	assert_true(db1->mem_intensity == 0.6);
	assert_true(db1->util == 1.0);
	assert_true(db1->start_s == 0);
	assert_true(db1->stop_s < 0);
	assert_int_equal(db1->first_touch_node, 0);
	assert_int_equal(db1->nr_cells, 0);
	assert_null(db1->policy_xml);
	assert_int_equal(db1->policy.mode, VM_POLICY_MODE_AUTO);

	assert_int_equal(hpc1->workload, SCN_WORKLOAD_CELLS);
	assert_int_equal(hpc1->nr_cells, 2);
	assert_int_equal(hpc1->cells[1].nr_vcpus, 8);
	assert_int_equal(hpc1->cells[1].vcpus[0], 8);
	assert_int_equal(hpc1->cells[1].vcpus[7], 15);
	assert_true(hpc1->cells[0].memory_gib == 24);
	assert_true(hpc1->mem_intensity == 0.5); /* defaults */
	assert_true(hpc1->util == 1.0);
	assert_int_equal(hpc1->first_touch_node, -1);
	assert_true(hpc1->stop_s < 0);

	assert_int_equal(web1->workload, SCN_WORKLOAD_PRIVATE);
	assert_true(web1->start_s == 120);
	assert_true(web1->stop_s == 400);
	assert_non_null(web1->policy_xml);
	assert_non_null(strstr(web1->policy_xml, "advisory"));
	assert_int_equal(web1->policy.mode, VM_POLICY_MODE_ADVISORY);
	scenario_free(scn);
}

static void
test_defaults(void **state)
{
	struct scenario *scn =
	    load_ok("{\"name\":\"m\",\"host\":{\"nodes\":3},\"vms\":["
	            "{\"name\":\"a\",\"vcpus\":1,\"memory_gib\":0.5},"
	            "{\"name\":\"b\",\"vcpus\":2,\"memory_gib\":1,\"workload\":\"phased\"},"
	            "{\"name\":\"c\",\"vcpus\":2,\"memory_gib\":1,\"workload\":\"adverse\",\"phase_"
	            "s\":2.5},"
	            "{\"name\":\"d\",\"vcpus\":2,\"memory_gib\":1,\"workload\":\"adverse\"},"
	            "{\"name\":\"e.f_g-1\",\"vcpus\":1e3,\"memory_gib\":1,\"workload\":\"idle\","
	            "\"stop_s\":9000}]}");

	assert_int_equal(scn->seed, 1);
	assert_true(scn->duration_s == 600);
	assert_int_equal(scn->host.cpus_per_node, 16);
	assert_true(scn->host.memory_per_node_gib == 64);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			assert_int_equal(scn->host.distances[i * 3 + j], i == j ? 10 : 21);
	assert_int_equal(scn->vms[0].workload, SCN_WORKLOAD_PRIVATE);
	assert_true(scn->vms[0].memory_gib == 0.5);
	assert_true(scn->vms[0].phase_s == 60);
	assert_true(scn->vms[1].phase_s == 60);
	assert_true(scn->vms[2].phase_s == 2.5);
	assert_true(scn->vms[3].phase_s == 10);
	assert_int_equal(scn->vms[4].vcpus, 1000); /* an integral number with an exponent */
	assert_true(scn->vms[4].util == 1.0);      /* stored; the simulator applies idle's */
	assert_true(scn->vms[4].stop_s == 9000);   /* beyond duration_s is fine */
	assert_int_equal(scn->vms[4].policy.priority, VM_POLICY_PRIORITY_DEF);
	assert_true(scn->vms[4].policy.nodes == NODEMASK_ALL);
	assert_string_equal(scn_workload_name(scn->vms[4].workload), "idle");
	scenario_free(scn);
}

/* Overcommit and oversubscription are legal: the simulator counts their consequences. */
static void
test_overcommit_allowed(void **state)
{
	struct scenario *scn = load_ok(
	    "{\"name\":\"oc\",\"seed\":9007199254740991,\"host\":{\"nodes\":1,\"cpus_per_node\":2,"
	    "\"memory_per_node_gib\":4},\"vms\":[{\"name\":\"big\",\"vcpus\":64,\"memory_gib\":100,"
	    "\"policy\":\"<vnuma:policy " POLICY_NS " nodes='0'/>\"}]}");

	assert_int_equal(scn->seed, 9007199254740991ULL);
	assert_int_equal(scn->vms[0].vcpus, 64);
	assert_true(scn->vms[0].policy.nodes == 1);
	scenario_free(scn);
}

static void
test_default_scenario(void **state)
{
	struct scenario *scn = load_ok(scenario_default_json);
	int vcpus = 0, arriving = 0, leaving = 0, cells = 0;
	double mem = 0;

	assert_int_equal(scn->host.nodes, 4);
	assert_int_equal(scn->host.cpus_per_node, 16);
	assert_true(scn->duration_s == 600);
	assert_non_null(scn->description);
	assert_true(scn->nr_vms >= 8 && scn->nr_vms <= 12);
	for (int i = 0; i < scn->nr_vms; i++) {
		vcpus += scn->vms[i].vcpus;
		mem += scn->vms[i].memory_gib;
		arriving += scn->vms[i].start_s > 0;
		leaving += scn->vms[i].stop_s > 0;
		cells += scn->vms[i].policy.placement == VM_POLICY_PLACEMENT_CELLS;
	}
	assert_true(vcpus < 4 * 16);
	assert_true(mem >= 0.6 * 256 && mem <= 0.75 * 256);
	assert_int_equal(arriving, 2);
	assert_int_equal(leaving, 1);
	assert_int_equal(cells, 1);
	scenario_free(scn);
}

/* ---- errors, table-driven -------------------------------------------------------------- */

#define HOST4        "\"host\":{\"nodes\":4}"
#define VM(...)      "{\"name\":\"a\",\"vcpus\":4,\"memory_gib\":8" __VA_ARGS__ "}"
#define VMC(v)       "{\"name\":\"a\",\"memory_gib\":8,\"vcpus\":" v "}"
#define VMM(m)       "{\"name\":\"a\",\"vcpus\":4,\"memory_gib\":" m "}"
#define SCN(vms)     "{\"name\":\"t\"," HOST4 ",\"vms\":[" vms "]}"
#define WITH_HOST(h) "{\"name\":\"t\",\"host\":" h ",\"vms\":[" VM() "]}"
#define CELLS(c)     VM(",\"workload\":\"cells\",\"cells\":[" c "]")
#define C(v, m)      "{\"vcpus\":[" v "],\"memory_gib\":" #m "}"
#define POL(attrs)   VM(",\"policy\":\"<vnuma:policy " POLICY_NS " " attrs "/>\"")

struct bad_case {
	const char *json;
	const char *prefix;   /* the message starts with this (the field's path) */
	const char *fragment; /* and contains this */
};

static const struct bad_case bad_cases[] = {
    /* unknown fields, at every level */
    {"{\"name\":\"t\",\"nmae\":1," HOST4 ",\"vms\":[" VM() "]}", "nmae: ", "unknown field"},
    {WITH_HOST("{\"nodes\":4,\"numa\":true}"), "host.numa: ", "unknown field"},
    {SCN(VM() "," VM(",\"memroy_gib\":1")), "vms[1].memroy_gib: ", "unknown field"},
    {SCN(CELLS(C("0,1", 4) ",{\"vcpus\":[2,3],\"memory_gib\":4,\"mem\":1}")),
     "vms[0].cells[1].mem: ", "unknown field"},
    /* missing required fields */
    {"{" HOST4 ",\"vms\":[" VM() "]}", "name: ", "missing"},
    {"{\"name\":\"t\",\"vms\":[" VM() "]}", "host: ", "missing"},
    {WITH_HOST("{\"cpus_per_node\":4}"), "host.nodes: ", "missing"},
    {"{\"name\":\"t\"," HOST4 "}", "vms: ", "missing"},
    {SCN("{\"vcpus\":4,\"memory_gib\":8}"), "vms[0].name: ", "missing"},
    {SCN("{\"name\":\"a\",\"memory_gib\":8}"), "vms[0].vcpus: ", "missing"},
    {SCN("{\"name\":\"a\",\"vcpus\":4}"), "vms[0].memory_gib: ", "missing"},
    {SCN(CELLS(C("0,1", 4) ",{\"vcpus\":[2,3]}")), "vms[0].cells[1].memory_gib: ", "missing"},
    {SCN(CELLS(C("0,1", 4) ",{\"memory_gib\":4}")), "vms[0].cells[1].vcpus: ", "missing"},
    /* wrong types */
    {SCN(VM() "," VMC("\"4\"")), "vms[1].vcpus: ", "expected an integer, got string"},
    {SCN(VMC("4.5")), "vms[0].vcpus: ", "expected an integer, got 4.5"},
    {SCN(VMC("null")), "vms[0].vcpus: ", "got null"},
    {SCN(VMM("\"8G\"")), "vms[0].memory_gib: ", "expected a number, got string"},
    {SCN(VM(",\"workload\":3")), "vms[0].workload: ", "expected a string, got number"},
    {SCN(VM(",\"policy\":{}")), "vms[0].policy: ", "expected a string, got object"},
    {"{\"name\":5," HOST4 ",\"vms\":[" VM() "]}", "name: ", "expected a string"},
    {"{\"name\":\"t\",\"description\":[]," HOST4 ",\"vms\":[" VM() "]}",
     "description: ", "got array"},
    {"{\"name\":\"t\",\"host\":[4],\"vms\":[" VM() "]}", "host: ", "expected an object"},
    {"{\"name\":\"t\"," HOST4 ",\"vms\":{}}", "vms: ", "expected an array"},
    {SCN("[]"), "vms[0]: ", "expected an object, got array"},
    {SCN(VM(",\"cells\":{}")), "vms[0].cells: ", "expected an array"},
    {SCN(CELLS("5")), "vms[0].cells[0]: ", "expected an object"},
    {SCN(CELLS("{\"vcpus\":0,\"memory_gib\":8}")), "vms[0].cells[0].vcpus: ", "expected an array"},
    {SCN(CELLS(C("0,1,\"2\",3", 8))), "vms[0].cells[0].vcpus[2]: ", "expected an integer"},
    {"[1]", "(top level): ", "expected an object, got array"},
    {"7", "(top level): ", "expected an object, got number"},
    /* out-of-range values */
    {SCN(VMC("0")), "vms[0].vcpus: ", "must be in 1..1024, got 0"},
    {SCN(VMC("1025")), "vms[0].vcpus: ", "1025"},
    {WITH_HOST("{\"nodes\":65}"), "host.nodes: ", "1..64"},
    {WITH_HOST("{\"nodes\":0}"), "host.nodes: ", "1..64"},
    {WITH_HOST("{\"nodes\":4,\"cpus_per_node\":0}"), "host.cpus_per_node: ", "1..1024"},
    {WITH_HOST("{\"nodes\":4,\"memory_per_node_gib\":0}"),
     "host.memory_per_node_gib: ", "must be > 0"},
    {"{\"name\":\"t\",\"duration_s\":0," HOST4 ",\"vms\":[" VM() "]}",
     "duration_s: ", "must be > 0 and <= 86400, got 0"},
    {"{\"name\":\"t\",\"duration_s\":86401," HOST4 ",\"vms\":[" VM() "]}", "duration_s: ", "86401"},
    {"{\"name\":\"t\",\"seed\":-1," HOST4 ",\"vms\":[" VM() "]}", "seed: ", "got -1"},
    {"{\"name\":\"t\",\"seed\":9007199254740992," HOST4 ",\"vms\":[" VM() "]}",
     "seed: ", "9007199254740991"},
    {SCN(VMM("0")), "vms[0].memory_gib: ", "must be > 0"},
    {SCN(VMM("0.001")), "vms[0].memory_gib: ", "at least 2 MiB (0.001953125 GiB)"},
    {SCN(VMM("-8")), "vms[0].memory_gib: ", "got -8"},
    {SCN(VM(",\"mem_intensity\":1.5")), "vms[0].mem_intensity: ", "<= 1, got 1.5"},
    {SCN(VM(",\"util\":-0.1")), "vms[0].util: ", ">= 0"},
    {SCN(VM(",\"start_s\":600")), "vms[0].start_s: ", "< 600"},
    {SCN(VM(",\"start_s\":-1")), "vms[0].start_s: ", ">= 0"},
    {SCN(VM(",\"start_s\":100,\"stop_s\":100")), "vms[0].stop_s: ", "> 100"},
    {SCN(VM(",\"first_touch_node\":4")), "vms[0].first_touch_node: ", "0..3, got 4"},
    {SCN(VM(",\"first_touch_node\":-1")), "vms[0].first_touch_node: ", "0..3"},
    {SCN(VM(",\"workload\":\"batch\"")), "vms[0].workload: ", "unknown workload 'batch'"},
    {SCN(VM(",\"workload\":\"phased\",\"phase_s\":0")), "vms[0].phase_s: ", "got 0"},
    {"{\"name\":\"t\"," HOST4 ",\"vms\":[]}", "vms: ", "1..65536 VMs, got 0"},
    /* names */
    {"{\"name\":\"\"," HOST4 ",\"vms\":[" VM() "]}", "name: ", "empty"},
    {"{\"name\":\"a\\u0000b\"," HOST4 ",\"vms\":[" VM() "]}", "name: ", "NUL"},
    {"{\"name\":\"a\\nb\"," HOST4 ",\"vms\":[" VM() "]}", "name: ", "0x0a"},
    {SCN("{\"name\":\"web 1\",\"vcpus\":4,\"memory_gib\":8}"), "vms[0].name: ", "' '"},
    {SCN("{\"name\":\"web/1\",\"vcpus\":4,\"memory_gib\":8}"), "vms[0].name: ", "'/'"},
    {SCN("{\"name\":\"0123456789012345678901234567890123456789012345678901234567890123\","
         "\"vcpus\":4,\"memory_gib\":8}"),
     "vms[0].name: ", "longer than 63"},
    {SCN(VM() ",{\"name\":\"b\",\"vcpus\":1,\"memory_gib\":1}," VM()),
     "vms[2].name: ", "duplicate VM name 'a' (also vms[0])"},
    /* integers beyond the 64-bit range or int range: errors, never truncated */
    {SCN(VMC("99999999999999999999999")), "vms[0].vcpus: ", "got 9223372036854775807 or more"},
    {SCN(VMC("-99999999999999999999999")), "vms[0].vcpus: ", "or less"},
    {WITH_HOST("{\"nodes\":4294967297}"), "host.nodes: ", "4294967297"},
    {"{\"name\":\"t\",\"seed\":18446744073709551616," HOST4 ",\"vms\":[" VM() "]}",
     "seed: ", "must be in 0..9007199254740991"},
    {SCN(VMC("1e300")), "vms[0].vcpus: ", "must be in 1..1024"},
    {SCN(VMM("1e400")), "vms[0].memory_gib: ", "finite"},
    {SCN(VM(",\"util\":NaN")), "vms[0].util: ", "finite"},
    /* cells that do not fit the VM */
    {SCN(VM(",\"workload\":\"cells\"")), "vms[0].cells: ", "required by the cells workload"},
    {SCN(CELLS(C("0,1,1,3", 8))), "vms[0].cells[0].vcpus[2]: ", "vCPU 1 is already in cell 0"},
    {SCN(CELLS(C("0,1,2", 4) "," C("3,2", 4))),
     "vms[0].cells[1].vcpus[1]: ", "vCPU 2 is already in cell 0"},
    {SCN(CELLS(C("0,1", 4) "," C("3", 4))), "vms[0].cells: ", "vCPU 2 is in no cell"},
    {SCN(CELLS(C("0,1", 4) "," C("2,3,4", 4))),
     "vms[0].cells[1].vcpus[2]: ", "vCPU 4 does not exist"},
    {SCN(CELLS(C("0,1", 4) "," C("2,-3", 4))),
     "vms[0].cells[1].vcpus[1]: ", "vCPU -3 does not exist"},
    {SCN(CELLS(C("0,1", 4) "," C("2,3", 3))),
     "vms[0].cells: ", "the cells' memory (7 GiB) does not add up to memory_gib (8 GiB)"},
    {SCN(CELLS(C("0,1", 8) "," C("", 0.001))), "vms[0].cells[1].vcpus: ", "at least one vCPU"},
    {SCN(CELLS(C("0,1", 8) "," C("2,3", 0))), "vms[0].cells[1].memory_gib: ", "> 0"},
    {SCN(CELLS("")), "vms[0].cells: ", "got 0"},
    /* distances */
    {WITH_HOST("{\"nodes\":2,\"distances\":[[10,21]]}"), "host.distances: ", "expected 2 rows"},
    {WITH_HOST("{\"nodes\":2,\"distances\":[[10,21],[21,10,21]]}"),
     "host.distances[1]: ", "expected 2 entries"},
    {WITH_HOST("{\"nodes\":2,\"distances\":[[10,21],21]}"),
     "host.distances[1]: ", "expected an array"},
    {WITH_HOST("{\"nodes\":2,\"distances\":21}"), "host.distances: ", "expected an array"},
    {WITH_HOST("{\"nodes\":3,\"distances\":[[10,21,21],[21,10,21],[21,21,0]]}"),
     "host.distances[2][2]: ", "must be 10"},
    {WITH_HOST("{\"nodes\":3,\"distances\":[[10,21,21],[21,10,10],[21,21,10]]}"),
     "host.distances[1][2]: ", "11..255, got 10"},
    {WITH_HOST("{\"nodes\":2,\"distances\":[[10,256],[21,10]]}"),
     "host.distances[0][1]: ", "11..255, got 256"},
    {WITH_HOST("{\"nodes\":2,\"distances\":[[10,20.5],[21,10]]}"),
     "host.distances[0][1]: ", "expected an integer"},
    /* policies */
    {SCN(VM(",\"policy\":\"<policy/>\"")), "vms[0].policy: ", ""},
    {SCN(VM(",\"policy\":\"<vnuma:policy " POLICY_NS "\"")), "vms[0].policy: ", ""},
    {SCN(POL("mode='sometimes'")), "vms[0].policy: ", "mode"},
    {SCN(POL("nodes='0,5'")), "vms[0].policy: ", "nodes names node 5"},
    {SCN(POL("placement='cells'")), "vms[0].policy: ", "needs guest cells"},
    /* workload-specific fields */
    {SCN(VM(",\"phase_s\":30")), "vms[0].phase_s: ", "only for the phased and adverse"},
    {SCN(VM(",\"workload\":\"shared\",\"phase_s\":30")), "vms[0].phase_s: ", "not shared"},
    {SCN(VM(",\"workload\":\"idle\",\"util\":0.5")),
     "vms[0].util: ", "not settable for the idle workload"},
    /* keys given twice (json-c alone would keep the last silently) */
    {SCN(VM(",\"vcpus\":8")), "vms[0].vcpus: ", "given twice"},
    {"{\"name\":\"t\",\"host\":{\"nodes\":4,\"nodes\":2},\"vms\":[" VM() "]}",
     "host.nodes: ", "given twice"},
    {SCN(CELLS("{\"vcpus\":[0,1,2,3],\"memory_gib\":8,\"vcpus\":[0]}")),
     "vms[0].cells[0].vcpus: ", "given twice"},
    /* syntax */
    {"{\"name\":\"t\",}", "line 1, column 13 (byte 12): ", "JSON syntax error"},
    {"{\"name\":\"t\",\n  \"host\": {\"nodes\": 4}\n",
     "line 3, column 1 (byte 36): ", "JSON syntax error"},
    {"/* c */ {}", "line 1, column 1 (byte 0): ", "JSON syntax error"},
    {"", "line 1, column 1 (byte 0): ", "JSON syntax error"},
    {"{\"name\":'t'}", "line 1, column 9 (byte 8): ", "JSON syntax error"},
    {"{} {}", "line 1, column 4 (byte 3): ", "JSON syntax error"},
    {"{\"name\":\"\xff\"}", "line 1, column ", "utf-8"},
    {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
     "line 1, column ", "nesting too deep"},
};

static void
test_errors_table(void **state)
{
	char err[512];

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct scenario *scn = (struct scenario *)&err; /* must be reset to NULL */
		int rc;

		memset(err, 0, sizeof(err));
		rc = scenario_load_string(c->json, &scn, err, sizeof(err));
		if (rc != -EINVAL || scn != NULL ||
		    strncmp(err, c->prefix, strlen(c->prefix)) != 0 ||
		    strstr(err, c->fragment) == NULL)
			fail_msg("case %zu: rc %d, message \"%s\"\nwanted \"%s...%s\"\nfor: %s", i,
			         rc, err, c->prefix, c->fragment, c->json);
	}
}

/* The table's templates are themselves valid, so each case fails for its own reason only. */
static void
test_error_templates_valid(void **state)
{
	static const char *const ok[] = {
	    SCN(VM()),
	    WITH_HOST("{\"nodes\":2,\"distances\":[[10,21],[21,10]]}"),
	    SCN(CELLS(C("0,1", 4) "," C("3,2", 4))),
	    SCN(POL("nodes='0,3'")),
	    SCN(VMC("4.0,\"workload\":\"phased\",\"phase_s\":30")),
	    SCN(VM(",\"start_s\":599.9,\"stop_s\":600")),
	    SCN(VMM("0.001953125")),
	    SCN(CELLS(C("0,1", 4) "," C("3,2", 4.000001))),
	    "{\"name\":\"t\",\"description\":\"d\",\"oracle_note\":\"n\"," HOST4
	    ",\"vms\":[" VM() "]}",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		scenario_free(load_ok(ok[i]));
}

/* More cells than a host can have nodes. */
static void
test_too_many_cells(void **state)
{
	size_t cap = 16384, n = 0;
	char *json = xmalloc(cap), err[512];
	struct scenario *scn = NULL;

	n += (size_t)snprintf(json + n, cap - n,
	                      "{\"name\":\"t\"," HOST4 ",\"vms\":[{\"name\":"
	                      "\"a\",\"vcpus\":65,\"memory_gib\":65,\"cells\":[");
	for (int c = 0; c < 65; c++)
		n += (size_t)snprintf(json + n, cap - n, "%s{\"vcpus\":[%d],\"memory_gib\":1}",
		                      c ? "," : "", c);
	snprintf(json + n, cap - n, "]}]}");
	assert_int_equal(scenario_load_string(json, &scn, err, sizeof(err)), -EINVAL);
	assert_null(scn);
	assert_non_null(strstr(err, "vms[0].cells: must list 1..64 cells, got 65"));
	free(json);
}

/*
 * A scenario of n VMs named v0, v1, ... of vcpus vCPUs and mem_gib GiB each (malloc'd): each
 * within the per-VM bounds.
 */
static char *
many_vms(int n, int vcpus, double mem_gib)
{
	struct util_buf b = {0};

	util_buf_printf(&b, "{\"name\":\"t\"," HOST4 ",\"vms\":[");
	for (int i = 0; i < n; i++)
		util_buf_printf(&b, "%s{\"name\":\"v%d\",\"vcpus\":%d,\"memory_gib\":%.17g}",
		                i ? "," : "", i, vcpus, mem_gib);
	util_buf_printf(&b, "]}");
	return b.data;
}

/*
 * Bounds over the whole scenario: 40 VMs of 64 TiB (a 2 KB file that needed more than 4 GB of
 * model) are refused at the VM that goes over 128 TiB in all, and so are more than 131072
 * vCPUs in all; exactly at the bounds is fine.
 */
static void
test_totals_bounded(void **state)
{
	struct scenario *scn = NULL;
	char err[512], *json;

	json = many_vms(40, 1, 65536);
	assert_true(strlen(json) < 2048);
	assert_int_equal(scenario_load_string(json, &scn, err, sizeof(err)), -EINVAL);
	assert_null(scn);
	assert_string_equal(err, "vms[2].memory_gib: the VMs' memory adds up to 196608 GiB here, "
	                         "over the 131072 GiB (128 TiB) all the VMs of a scenario may "
	                         "have together");
	free(json);
	json = many_vms(2, 1, 65536);
	scenario_free(load_ok(json)); /* 128 TiB exactly */
	free(json);

	json = many_vms(129, 1024, 1);
	assert_int_equal(scenario_load_string(json, &scn, err, sizeof(err)), -EINVAL);
	assert_null(scn);
	assert_string_equal(err, "vms[128].vcpus: the VMs' vCPUs add up to 132096 here, over the "
	                         "131072 all the VMs of a scenario may have together");
	free(json);
	json = many_vms(128, 1024, 1);
	scenario_free(load_ok(json)); /* 131072 exactly */
	free(json);
}

/* A small errlen truncates the message but never overflows; NULL err is allowed. */
static void
test_error_buffer_small(void **state)
{
	struct scenario *scn = NULL;
	char err[8];

	memset(err, 'x', sizeof(err));
	assert_int_equal(scenario_load_string(SCN(VMC("0")), &scn, err, 6), -EINVAL);
	assert_string_equal(err, "vms[0");
	assert_int_equal(err[7], 'x');
	assert_int_equal(scenario_load_string("{", &scn, NULL, 0), -EINVAL);
	assert_null(scn);
	scenario_free(NULL);
}

/* ---- files ----------------------------------------------------------------------------- */

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

/* A fresh directory under $TMPDIR (default /tmp). */
static void
make_temp_dir(char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, len, "%s/test_scenario.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
}

static void
test_load_file(void **state)
{
	char dir[192], path[256], err[512], want[320];
	struct scenario *scn = NULL;

	make_temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/good.json", dir);
	write_file(path, brief_example);
	assert_int_equal(scenario_load_file(path, &scn, err, sizeof(err)), 0);
	assert_string_equal(scn->name, "4node-mixed");
	assert_int_equal(scn->nr_vms, 3);
	scenario_free(scn);
	unlink(path);

	snprintf(path, sizeof(path), "%s/bad.json", dir);
	write_file(path, SCN(VM(",\"memroy_gib\":1")));
	assert_int_equal(scenario_load_file(path, &scn, err, sizeof(err)), -EINVAL);
	assert_null(scn);
	snprintf(want, sizeof(want), "%s: vms[0].memroy_gib: unknown field", path);
	assert_string_equal(err, want);
	unlink(path);

	snprintf(path, sizeof(path), "%s/empty.json", dir);
	write_file(path, "");
	assert_int_equal(scenario_load_file(path, &scn, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: empty file", path);
	assert_string_equal(err, want);
	unlink(path);

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	assert_int_equal(scenario_load_file(path, &scn, err, sizeof(err)), -ENOENT);
	assert_null(scn);
	assert_int_equal(strncmp(err, path, strlen(path)), 0);

	assert_int_equal(scenario_load_file(dir, &scn, err, sizeof(err)), -EISDIR);
	assert_int_equal(strncmp(err, dir, strlen(dir)), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* A NUL byte inside a file is a syntax error at its offset, not an early end of the text. */
static void
test_load_file_nul(void **state)
{
	static const char text[] = "{\"name\":\"t\"}\0garbage";
	char dir[192], path[256], err[512];
	struct scenario *scn = NULL;
	FILE *f;

	make_temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/nul.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, sizeof(text) - 1, f), sizeof(text) - 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(scenario_load_file(path, &scn, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "(byte 12): JSON syntax error: NUL byte"));
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_brief_example),      cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_overcommit_allowed), cmocka_unit_test(test_default_scenario),
	    cmocka_unit_test(test_errors_table),       cmocka_unit_test(test_error_templates_valid),
	    cmocka_unit_test(test_too_many_cells),     cmocka_unit_test(test_error_buffer_small),
	    cmocka_unit_test(test_load_file),          cmocka_unit_test(test_load_file_nul),
	    cmocka_unit_test(test_totals_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

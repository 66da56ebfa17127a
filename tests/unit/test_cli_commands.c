/*
 * test_cli_commands.c - vnumactl's daemon commands without a daemon: the grammar of each
 * command (good and bad argument lists and the requests they make), SIZE parsing, the
 * shell's word splitting and loop, each command's human and JSON rendering from canned reply
 * data shaped like docs/protocol.md, and whole commands against a small fake daemon (a
 * forked child answering canned replies on a socket in a temporary directory).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/cli.h"
#include "agent/cmd_common.h"
#include "agent/cmd_host.h"
#include "agent/cmd_migrate.h"
#include "agent/cmd_top.h"
#include "agent/cmd_vm.h"
#include "agent/proto.h"
#include "agent/shell.h"

#define MAX_ARGV 24

/* ---- canned reply data (docs/protocol.md) ------------------------------------------------ */

#define VMROW_DB1                                                                                  \
	"\"id\":1,\"name\":\"db1\",\"vcpus\":8,\"memory_mib\":8192,\"mode\":\"auto\","             \
	"\"policy_ok\":true,\"policy_error\":null,\"home\":\"1\",\"vcpu_nodes\":\"0-1\","          \
	"\"memory_locality\":0.94,\"fault_locality\":0.875,\"fault_age_s\":1.5,"                   \
	"\"strength\":1024,\"state\":\"moving\""

static const char list_json[] =
    "{\"vms\":[{" VMROW_DB1 "},"
    "{\"id\":12,\"name\":\"web1\",\"vcpus\":4,\"memory_mib\":2048,\"mode\":\"advisory\","
    "\"policy_ok\":false,\"policy_error\":\"priority: 300 is not 0-100\",\"home\":\"0\","
    "\"vcpu_nodes\":\"0\",\"memory_locality\":0.5,\"fault_locality\":null,\"fault_age_s\":95.0,"
    "\"strength\":200,\"state\":\"advisory\"}]}";

static const char vminfo_json[] =
    "{" VMROW_DB1 ",\"policy\":{\"mode\":\"auto\",\"nodes\":\"0-1\",\"placement\":\"compact\","
    "\"migrate\":true,\"rate_kib_s\":262144,\"priority\":50,\"group\":\"\"},"
    "\"policy_xml\":\"<vnuma:policy nodes='0-1'/>\",\"conv_node\":1,\"sampling_mib_s\":12.5,"
    "\"sampling_source\":\"fault-stats\",\"sampling_reason\":\"active\","
    "\"host_note\":\"its -numa options were not understood, so it is placed as one cell\","
    "\"resident_mib\":[6144,2048],\"pending_mib\":6144,\"pinned_mib\":0,"
    "\"memory_moves\":\"yes\","
    "\"vcpu\":[{\"vcpu\":0,\"tid\":4100,\"cpu\":3,\"node\":0,\"allowed\":\"0-1\",\"pinned\":false},"
    "{\"vcpu\":1,\"tid\":4101,\"cpu\":17,\"node\":1,\"allowed\":\"1\",\"pinned\":true}],"
    "\"counters\":{\"hint_faults\":1000,\"hint_faults_local\":940,\"local_pct\":94.0,"
    "\"vcpu_moves\":3}}";

/* vminfo of db1 with all of its memory on node 1: a migration there is done. */
static const char vminfo_done_json[] = "{\"name\":\"db1\",\"resident_mib\":[0,8192]}";

static const char nodeinfo_json[] =
    "{\"nodes\":[{\"node\":0,\"cpus\":16,\"mem_total_mib\":65536,\"mem_free_mib\":30720,"
    "\"vcpus\":5,\"cpu_load\":4.5,\"distance\":[10,21]},"
    "{\"node\":1,\"cpus\":16,\"mem_total_mib\":65536,\"mem_free_mib\":512,"
    "\"vcpus\":7,\"cpu_load\":12.25,\"distance\":[21,10]}]}";

static const char status_json[] =
    "{\"version\":\"0.1.0\",\"backend\":\"sim\",\"host\":\"simulated, scenario t\","
    "\"uptime_s\":12.7,\"host_time_s\":250.0,"
    "\"rounds\":125,\"paused\":true,\"sample_period_s\":1.0,\"rebalance_period_s\":2.0,"
    "\"nr_vms\":2,\"nr_nodes\":2,\"config\":\"/etc/vnumad/vnumad.conf\","
    "\"socket\":\"/run/vnumad/vnumad.sock\",\"sampling\":{\"fault-stats\":1,"
    "\"placement-only\":1},\"clients\":1}";

static const char stats_json[] =
    "{\"counters\":{\"rounds\":125,\"round_ms_avg\":0.25,\"pages_migrated\":4096,"
    "\"vms_skipped\":{\"advisory\":1,\"gone\":0},\"actions_refused\":0}}";

static const char stats_vm_json[] =
    "{\"vm\":\"db1\",\"counters\":{\"hint_faults\":1000,\"sampling_source\":\"fault-stats\"}}";

#define EVENT_PIN                                                                                  \
	"{\"seq\":7,\"time_s\":12.5,\"wall_s\":1796300000.25,\"vm\":\"db1\",\"vm_id\":1,\"kind\":" \
	"\"pin\",\"rule\":"                                                                        \
	"\"spread\","                                                                              \
	"\"text\":\"vCPU 3 -> node 1\",\"gain\":0.125}"
#define EVENT_PAUSE                                                                                \
	"{\"seq\":8,\"time_s\":13.0,\"wall_s\":1796300001,\"vm\":null,\"vm_id\":-1,\"kind\":"      \
	"\"pause\",\"rule\":"                                                                      \
	"\"admin\","                                                                               \
	"\"text\":\"paused\",\"gain\":0}"

static const char events_json[] = "{\"events\":[" EVENT_PIN "," EVENT_PAUSE "],\"next\":9}";

static const char explain_json[] = "{\"vm\":\"db1\",\"home\":\"1\",\"summary\":\"db1 is moving "
                                   "to node 1\",\"reasons\":[" EVENT_PIN "]}";

static const char place_json[] =
    "{\"nodes\":\"0-1\",\"per_cell\":[\"0\",\"1\"],\"reason\":\"least loaded nodes: 0,1\"}";

static const char policy_json[] =
    "{\"vm\":\"web1\",\"policy\":{\"mode\":\"advisory\",\"nodes\":\"all\",\"placement\":"
    "\"compact\",\"migrate\":false,\"rate_kib_s\":0,\"priority\":50,\"group\":\"web\"},"
    "\"policy_xml\":\"<vnuma:policy mode='advisory'/>\",\"source\":\"host\","
    "\"policy_ok\":false,\"policy_error\":\"priority: 300 is not 0-100\"}";

static struct json_object *
parse(const char *text)
{
	struct json_object *obj = json_tokener_parse(text);

	assert_non_null(obj);
	return obj;
}

/*
 * Render canned data with render and compare with want: exactly, or (whole false) as a part
 * of the text, such as one line.
 */
static void
assert_rendered(cmd_render_fn render, const char *data_json, const char *want, bool whole)
{
	struct json_object *data = parse(data_json);
	struct util_buf buf = {0};
	bool ok;

	render(&buf, data);
	assert_non_null(buf.data);
	ok = whole ? strcmp(buf.data, want) == 0 : strstr(buf.data, want) != NULL;
	if (!ok)
		fprintf(stderr, "got:\n%s\nwant%s:\n%s\n", buf.data, whole ? "" : " a part", want);
	assert_true(ok);
	free(buf.data);
	json_object_put(data);
}

static void
assert_render(cmd_render_fn render, const char *data_json, const char *want)
{
	assert_rendered(render, data_json, want, true);
}

static void
assert_render_has(cmd_render_fn render, const char *data_json, const char *want)
{
	assert_rendered(render, data_json, want, false);
}

/* ---- running the CLI -------------------------------------------------------------------- */

struct run {
	int status;
	char *out;
	char *err;
};

static struct run
run_argv(int argc, char **argv)
{
	struct run r = {0};
	size_t out_len, err_len;
	FILE *out = open_memstream(&r.out, &out_len);
	FILE *err = open_memstream(&r.err, &err_len);

	assert_non_null(out);
	assert_non_null(err);
	r.status = cli_run(cli_commands, argc, argv, out, err);
	fclose(out);
	fclose(err);
	return r;
}

/* Run vnumactl with a NULL-terminated list of words (after the program name). */
static struct run
run_cli(const char *first, ...)
{
	char *argv[MAX_ARGV] = {"vnumactl"};
	int argc = 1;
	va_list ap;

	va_start(ap, first);
	for (const char *w = first; w != NULL && argc < MAX_ARGV; w = va_arg(ap, const char *))
		argv[argc++] = (char *)w;
	va_end(ap);
	return run_argv(argc, argv);
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Status 1, nothing on stdout, and stderr starting with want. */
static void
assert_error(struct run r, const char *want)
{
	if (strncmp(r.err, want, strlen(want)) != 0)
		fprintf(stderr, "stderr: %s", r.err);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_int_equal(strncmp(r.err, want, strlen(want)), 0);
	run_free(&r);
}

/* Parse words for command name; returns the cli_args_parse result. */
static int
parse_cmd(const char *name, struct cli_args *args, ...)
{
	const struct cli_command *cmd = cli_command_find(cli_commands, name);
	char *argv[MAX_ARGV], err[256];
	bool json = false;
	int argc = 0;
	va_list ap;

	assert_non_null(cmd);
	va_start(ap, args);
	for (char *w = va_arg(ap, char *); w != NULL && argc < MAX_ARGV; w = va_arg(ap, char *))
		argv[argc++] = w;
	va_end(ap);
	return cli_args_parse(cmd, argc, argv, args, &json, err, sizeof(err));
}

/* The JSON text of a request built by a *_args function, then put. */
static void
assert_request(struct json_object *req, const char *want)
{
	const char *got = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN |
	                                                          JSON_C_TO_STRING_NOSLASHESCAPE);

	assert_string_equal(got, want);
	json_object_put(req);
}

/* ---- grammar ---------------------------------------------------------------------------- */

static void
test_table_complete(void **state)
{
	static const char *const names[] = {
	    "list",    "vminfo", "dominfo", "nodeinfo", "policy", "pin",   "unpin",
	    "migrate", "stats",  "events",  "explain",  "top",    "place", "status",
	    "pause",   "resume", "reload",  "simulate", "help",   "quit",  "exit",
	};
	static const char *const writers[] = {"pin",   "unpin",  "migrate",
	                                      "pause", "resume", "reload"};
	struct cli_args args;
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_non_null(cli_command_find(cli_commands, names[i]));
	for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
		bool writer = false;

		assert_int_equal(cli_spec_parse(c->spec, &args, err, sizeof(err)), 0);
		for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
			writer |= strcmp(c->name, writers[i]) == 0;
		assert_int_equal(c->needs_write, writer);
	}
	assert_ptr_equal(cli_command_find(cli_commands, "dominfo"),
	                 cli_command_find(cli_commands, "vminfo"));
}

/* --help lists every command of the table with its help line and its usage. */
static void
test_help_lists_specs(void **state)
{
	struct run r = run_cli("--help", NULL);
	int width = 0;

	(void)state;
	assert_int_equal(r.status, 0);
	for (const struct cli_command *c = cli_commands; c->name != NULL; c++)
		if ((int)strlen(c->name) > width)
			width = (int)strlen(c->name);
	for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
		char line[256], usage[256];
		size_t first = strcspn(c->spec, " ");

		snprintf(line, sizeof(line), "\n  %-*s  %s\n", width, c->name, c->help);
		snprintf(usage, sizeof(usage), "\n%*s%s%s%.*s", width + 6, "", c->name,
		         first > 0 ? " " : "", (int)first, c->spec);
		if (strstr(r.out, line) == NULL || strstr(r.out, usage) == NULL)
			fail_msg("--help lacks '%s' or '%s'", line + 1, usage + 1);
	}
	assert_non_null(strstr(r.out, "vminfo VM (alias: dominfo)\n"));
	/* Where the socket comes from without -c, and what -c is not (virsh's URI). */
	assert_non_null(strstr(r.out, "(default $VNUMAD_SOCKET,\n"));
	assert_non_null(strstr(r.out, "else /run/vnumad/vnumad.sock; not a libvirt URI)\n"));
	assert_non_null(strstr(r.out, "place --vcpus N --memory SIZE [--cells K] [--reserve]\n"));
	run_free(&r);
}

static void
test_grammar_vm_commands(void **state)
{
	struct cli_args a;

	(void)state;
	assert_int_equal(parse_cmd("list", &a, NULL), 0);
	assert_int_equal(parse_cmd("list", &a, "db1", NULL), -EINVAL);
	assert_int_equal(parse_cmd("vminfo", &a, "db1", NULL), 0);
	assert_string_equal(cli_args_get(&a, "vm"), "db1");
	assert_int_equal(parse_cmd("dominfo", &a, "--domain", "7", NULL), 0);
	assert_string_equal(cli_args_get(&a, "vm"), "7");
	assert_int_equal(parse_cmd("vminfo", &a, "--domain=db2", NULL), 0);
	assert_string_equal(cli_args_get(&a, "vm"), "db2");
	assert_int_equal(parse_cmd("vminfo", &a, NULL), -EINVAL);
	assert_int_equal(parse_cmd("vminfo", &a, "a", "b", NULL), -EINVAL);
	assert_int_equal(parse_cmd("explain", &a, "db1", NULL), 0);
	assert_int_equal(parse_cmd("explain", &a, NULL), -EINVAL);
	assert_int_equal(parse_cmd("nodeinfo", &a, "--node", "1", NULL), -EINVAL);
	assert_int_equal(parse_cmd("stats", &a, NULL), 0);
	assert_int_equal(parse_cmd("stats", &a, "db1", NULL), 0);
	assert_int_equal(parse_cmd("stats", &a, "db1", "db2", NULL), -EINVAL);
	assert_int_equal(parse_cmd("unpin", &a, "db1", NULL), 0);
	assert_int_equal(parse_cmd("unpin", &a, "db1", "2", "3", NULL), -EINVAL);
	assert_int_equal(parse_cmd("pin", &a, "db1", "3", NULL), -EINVAL);
	assert_int_equal(parse_cmd("migrate", &a, "db1", NULL), -EINVAL);
	assert_int_equal(parse_cmd("migrate", &a, "db1", "--node", "one", NULL), -EINVAL);
	assert_int_equal(
	    parse_cmd("migrate", &a, "db1", "--node=1", "--no-wait", "--timeout", "30", NULL), 0);
	assert_true(cli_args_has(&a, "no-wait"));
	assert_string_equal(cli_args_get(&a, "timeout"), "30");
	assert_int_equal(parse_cmd("migrate", &a, "db1", "--node", "1", "--no-wait=yes", NULL),
	                 -EINVAL);
	assert_int_equal(parse_cmd("top", &a, "--once", "--interval", "0.5", NULL), 0);
	assert_int_equal(parse_cmd("top", &a, "now", NULL), -EINVAL);
	for (int i = 0; i < 4; i++) {
		static const char *const plain[] = {"status", "pause", "resume", "reload"};

		assert_int_equal(parse_cmd(plain[i], &a, NULL), 0);
		assert_int_equal(parse_cmd(plain[i], &a, "now", NULL), -EINVAL);
		assert_int_equal(parse_cmd(plain[i], &a, "--force", NULL), -EINVAL);
	}
}

static void
test_grammar_policy(void **state)
{
	struct json_object *req;
	struct cli_args a;
	char err[256];
	bool change;

	(void)state;
	assert_int_equal(parse_cmd("policy", &a, "web1", NULL), 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), 0);
	assert_false(change);
	assert_request(req, "{\"vm\":\"web1\"}");

	assert_int_equal(parse_cmd("policy", &a, "web1", "--mode", "advisory", "--nodes=0-1",
	                           "--placement", "cells", "--migrate", "no", "--rate", "256MiB/s",
	                           "--priority", "70", "--group", "web", "--config", NULL),
	                 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), 0);
	assert_true(change);
	assert_request(req, "{\"vm\":\"web1\",\"mode\":\"advisory\",\"nodes\":\"0-1\","
	                    "\"placement\":\"cells\",\"migrate\":\"no\",\"rate\":\"256MiB/s\","
	                    "\"priority\":\"70\",\"group\":\"web\",\"scope\":\"config\"}");

	/* Choices and numbers are checked by the grammar. */
	assert_int_equal(parse_cmd("policy", &a, "web1", "--mode", "fast", NULL), -EINVAL);
	assert_int_equal(parse_cmd("policy", &a, "web1", "--mode", "aut", NULL), -EINVAL);
	assert_int_equal(parse_cmd("policy", &a, "web1", "--placement", "compact|cells", NULL),
	                 -EINVAL);
	assert_int_equal(parse_cmd("policy", &a, "web1", "--migrate", "maybe", NULL), -EINVAL);
	assert_int_equal(parse_cmd("policy", &a, "web1", "--priority", "-1", NULL), -EINVAL);
	assert_int_equal(parse_cmd("policy", &a, "web1", "--live=1", NULL), -EINVAL);

	/* Scopes: one at most, and only with a change. */
	assert_int_equal(
	    parse_cmd("policy", &a, "web1", "--mode", "off", "--live", "--current", NULL), 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--live and --current cannot be used together"));
	assert_int_equal(
	    parse_cmd("policy", &a, "web1", "--config", "--current", "--mode", "off", NULL), 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--config and --current cannot be used together"));
	/* --live --config: both, as virsh */
	assert_int_equal(
	    parse_cmd("policy", &a, "web1", "--mode", "off", "--config", "--live", NULL), 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), 0);
	assert_request(req, "{\"vm\":\"web1\",\"mode\":\"off\",\"scope\":\"live+config\"}");
	assert_int_equal(parse_cmd("policy", &a, "web1", "--live", "--config", NULL), 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--live --config applies to a change"));
	assert_int_equal(parse_cmd("policy", &a, "web1", "--config", NULL), 0);
	assert_int_equal(cmd_policy_args(&a, &req, &change, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--config applies to a change"));
}

static void
test_grammar_pin_events_place(void **state)
{
	struct json_object *req;
	struct cli_args a;
	char err[256];
	bool follow;

	(void)state;
	assert_int_equal(parse_cmd("pin", &a, "db1", "3", "0-1,3", NULL), 0);
	assert_int_equal(cmd_pin_args(&a, &req, err, sizeof(err)), 0);
	assert_request(req, "{\"vm\":\"db1\",\"vcpu\":3,\"node\":\"0-1,3\"}");
	assert_int_equal(
	    parse_cmd("pin", &a, "--vcpu", "3", "--domain", "db1", "--node", "1", NULL), 0);
	assert_int_equal(cmd_pin_args(&a, &req, err, sizeof(err)), 0);
	assert_request(req, "{\"vm\":\"db1\",\"vcpu\":3,\"node\":\"1\"}");
	assert_int_equal(parse_cmd("pin", &a, "db1", "x", "1", NULL), 0);
	assert_int_equal(cmd_pin_args(&a, &req, err, sizeof(err)), -EINVAL);
	assert_null(req);
	assert_non_null(strstr(err, "bad vCPU 'x'"));
	assert_int_equal(parse_cmd("pin", &a, "db1", "1", "node1", NULL), 0);
	assert_int_equal(cmd_pin_args(&a, &req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad node list 'node1': 'node1' is not a number;"));
	assert_int_equal(parse_cmd("pin", &a, "db1", "1", "0-64", NULL), 0);
	assert_int_equal(cmd_pin_args(&a, &req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "node 64 is above the highest supported (63)"));

	assert_int_equal(parse_cmd("unpin", &a, "db1", NULL), 0);
	assert_int_equal(cmd_unpin_args(&a, &req, err, sizeof(err)), 0);
	assert_request(req, "{\"vm\":\"db1\"}");
	assert_int_equal(parse_cmd("unpin", &a, "db1", "2", NULL), 0);
	assert_int_equal(cmd_unpin_args(&a, &req, err, sizeof(err)), 0);
	assert_request(req, "{\"vm\":\"db1\",\"vcpu\":2}");

	assert_int_equal(parse_cmd("events", &a, NULL), 0);
	assert_int_equal(cmd_events_args(&a, &req, &follow, err, sizeof(err)), 0);
	assert_false(follow);
	assert_request(req, "{\"follow\":false}");
	assert_int_equal(
	    parse_cmd("events", &a, "--since", "5", "--limit=10", "--vm", "db1", "--follow", NULL),
	    0);
	assert_int_equal(cmd_events_args(&a, &req, &follow, err, sizeof(err)), 0);
	assert_true(follow);
	assert_request(req, "{\"since\":5,\"limit\":10,\"vm\":\"db1\",\"follow\":true}");
	assert_int_equal(parse_cmd("events", &a, "--limit", "ten", NULL), -EINVAL);
	assert_int_equal(parse_cmd("events", &a, "db1", NULL), -EINVAL);
	assert_int_equal(parse_cmd("events", &a, "--limit", "5000000", NULL), 0);
	assert_int_equal(cmd_events_args(&a, &req, &follow, err, sizeof(err)), -EINVAL);

	assert_int_equal(
	    parse_cmd("place", &a, "--vcpus", "8", "--memory", "1.5G", "--cells", "2", NULL), 0);
	assert_int_equal(cmd_place_args(&a, &req, err, sizeof(err)), 0);
	assert_request(req, "{\"vcpus\":8,\"memory_mib\":1536,\"cells\":2}");
	assert_int_equal(parse_cmd("place", &a, "--vcpus", "8", NULL), -EINVAL);
	assert_int_equal(parse_cmd("place", &a, "--memory", "8G", NULL), -EINVAL);
	assert_int_equal(parse_cmd("place", &a, "--vcpus", "0", "--memory", "8G", NULL), 0);
	assert_int_equal(cmd_place_args(&a, &req, err, sizeof(err)), -EINVAL);
	assert_int_equal(
	    parse_cmd("place", &a, "--vcpus", "2", "--memory", "8G", "--cells", "3", NULL), 0);
	assert_int_equal(cmd_place_args(&a, &req, err, sizeof(err)), -EINVAL);
	assert_int_equal(parse_cmd("place", &a, "--vcpus", "2", "--memory", "8GB", NULL), 0);
	assert_int_equal(cmd_place_args(&a, &req, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad size '8GB': '8GB': 'GB' is ambiguous (1000 or 1024?)"));
}

/* Bad values that only the handler can see fail before any connection is tried. */
/* CMD --help prints what `help CMD` does and succeeds, for every command (as virsh). */
static void
test_command_help(void **state)
{
	(void)state;
	for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
		struct run help = run_cli("help", c->name, NULL);
		struct run own = run_cli(c->name, "--help", NULL);
		struct run late = run_cli(c->name, "x", "--bogus", "--help", NULL);

		assert_int_equal(help.status, 0);
		assert_int_equal(own.status, 0);
		assert_int_equal(late.status, 0);
		assert_string_equal(own.out, help.out);
		assert_string_equal(late.out, help.out);
		assert_string_equal(own.err, "");
		assert_non_null(strstr(own.out, "usage: vnumactl "));
		run_free(&help);
		run_free(&own);
		run_free(&late);
	}
}

static void
test_errors_before_connecting(void **state)
{
	(void)state;
	assert_error(run_cli("-c", "/nonexistent/x.sock", "top", "--interval", "0.01", NULL),
	             "error: bad --interval '0.01': want seconds from 0.1 to 3600\n");
	assert_error(run_cli("-c", "/nonexistent/x.sock", "migrate", "db1", "--node", "1",
	                     "--timeout", "soon", NULL),
	             "error: bad --timeout 'soon'");
	assert_error(
	    run_cli("-c", "/nonexistent/x.sock", "place", "--vcpus", "2", "--memory", "junk", NULL),
	    "error: bad size 'junk'");
	/* A libvirt URI, as virsh -c takes: vnumactl names the daemon's socket instead. */
	assert_error(run_cli("-c", "qemu:///system", "list", NULL),
	             "error: -c qemu:///system: a URI, but vnumactl talks to the vnumad daemon's "
	             "control socket, not to libvirt (the daemon is the one connected to libvirt: "
	             "vnumad --connect qemu:///system); name the socket with -c/--socket PATH or "
	             "VNUMAD_SOCKET=PATH (default /run/vnumad/vnumad.sock)\n");
	assert_error(run_cli("--socket=qemu+ssh://h/system", "list", NULL),
	             "error: --socket qemu+ssh://h/system: a URI");
	setenv("VNUMAD_SOCKET", "qemu:///session", 1);
	assert_error(run_cli("list", NULL), "error: VNUMAD_SOCKET qemu:///session: a URI");
	unsetenv("VNUMAD_SOCKET");
	assert_error(run_cli("policy", "web1", "--current", "--config", "--mode", "off", NULL),
	             "error: --config and --current cannot be used together\n");
	assert_error(run_cli("policy", "web1", "--mode", "fast", NULL),
	             "error: option '--mode': 'fast' is not one of auto|advisory|manual|off\n");
	assert_error(run_cli("pin", "db1", "1", NULL), "error: missing argument NODE\n");
}

static void
test_connect_failure(void **state)
{
	char dir[] = "/tmp/vnumactl-test.XXXXXX", path[64], want[160];
	struct run r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/none.sock", dir);
	snprintf(want, sizeof(want),
	         "error: cannot connect to %s: No such file or directory (is vnumad running?)\n",
	         path);
	r = run_cli("-c", path, "list", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, want);
	assert_string_equal(r.out, "");
	run_free(&r);
	r = run_cli("--connect", path, "--json", "status", NULL);
	assert_string_equal(r.err, want);
	run_free(&r);
	rmdir(dir);
}

/* ---- values ----------------------------------------------------------------------------- */

static void
test_size_parse(void **state)
{
	static const struct {
		const char *text;
		uint64_t mib;
	} good[] = {
	    {"8G", 8192},      {"8GiB", 8192},    {"512M", 512},
	    {"8192MiB", 8192}, {"1.5T", 1572864}, {"64", 64},
	    {"0.5G", 512},     {"8g", 8192},      {"8gib", 8192},
	    {"2048KiB", 2},    {"1536k", 2},      {"1T", 1048576},
	    {"3.25m", 3},      {"0.0009T", 944},  {"1024TiB", (uint64_t)1 << 30},
	};
	static const char *const bad[] = {
	    "",      "G",
	    "8X",    "8GB",
	    "8 G",   " 8G",
	    "8G ",   "-1G",
	    "+1G",   "1e3",
	    "0x10",  "1.G",
	    ".5G",   "inf",
	    "nan",   "0",
	    "0M",    "1K",
	    "0.4M",  "8Gi",
	    "8GiBs", "8MB",
	    "1..5G", "1,5G",
	    "1025T", "99999999999999999999999999999999999G",
	};
	char err[256];
	uint64_t mib;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		mib = 0;
		if (cmd_size_parse_mib(good[i].text, &mib, err, sizeof(err)) != 0)
			fail_msg("'%s' refused: %s", good[i].text, err);
		if (mib != good[i].mib)
			fail_msg("'%s' gave %llu MiB, want %llu", good[i].text,
			         (unsigned long long)mib, (unsigned long long)good[i].mib);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (cmd_size_parse_mib(bad[i], &mib, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_non_null(strstr(err, "bad size"));
	}
}

static void
test_number_parse(void **state)
{
	char err[256];
	int64_t n;
	double s;

	(void)state;
	assert_int_equal(cmd_uint_parse("0", "x", 5, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cmd_uint_parse("5", "x", 5, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	assert_int_equal(cmd_uint_parse("6", "x", 5, &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(cmd_uint_parse("-1", "x", 5, &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(cmd_uint_parse("1a", "x", 5, &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(cmd_uint_parse("", "x", 5, &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(cmd_seconds_parse("0.5", "t", 0.1, 10, &s, err, sizeof(err)), 0);
	assert_true(s == 0.5);
	assert_int_equal(cmd_seconds_parse("10", "t", 0.1, 10, &s, err, sizeof(err)), 0);
	assert_int_equal(cmd_seconds_parse("0.05", "t", 0.1, 10, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(cmd_seconds_parse("1e1", "t", 0.1, 10, &s, err, sizeof(err)), -EINVAL);
	assert_int_equal(cmd_seconds_parse("1s", "t", 0.1, 10, &s, err, sizeof(err)), -EINVAL);
}

/* ---- the shell -------------------------------------------------------------------------- */

static void
assert_split(const char *line, int nr, ...)
{
	char **words, err[128];
	int got;
	va_list ap;

	assert_int_equal(shell_split(line, &words, &got, err, sizeof(err)), 0);
	if (got != nr)
		fail_msg("'%s': %d words, want %d", line, got, nr);
	va_start(ap, nr);
	for (int i = 0; i < nr; i++)
		assert_string_equal(words[i], va_arg(ap, const char *));
	va_end(ap);
	assert_null(words[nr]);
	shell_words_free(words);
}

static void
test_shell_split(void **state)
{
	static const char *const bad[] = {"\"abc", "'abc", "abc\\", "a \"b\\\"", "'it''s"};
	char **words = NULL, err[128];
	int nr;

	(void)state;
	assert_split("", 0);
	assert_split("   \t ", 0);
	assert_split("list", 1, "list");
	assert_split("  vminfo\tdb1  ", 2, "vminfo", "db1");
	assert_split("policy \"my vm\" --group 'a b'", 4, "policy", "my vm", "--group", "a b");
	assert_split("a\"b\"'c'd", 1, "abcd");
	assert_split("\"\" ''", 2, "", "");
	assert_split("a\\ b \\'x", 2, "a b", "'x");
	assert_split("\"a\\\"b\\\\c\"", 1, "a\"b\\c");
	assert_split("'a\\b' \"a\\nb\"", 2, "a\\b", "a\\nb");
	assert_split("# a comment", 0);
	assert_split("list # a comment", 1, "list");
	assert_split("a#b '#c'", 2, "a#b", "#c");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (shell_split(bad[i], &words, &nr, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' split", bad[i]);
		assert_null(words);
	}
}

static struct {
	int calls;
	bool json;
	char vm[32];
} probe_seen;

static int
probe_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	const char *vm = cli_args_get(args, "vm");

	probe_seen.calls++;
	probe_seen.json = ctx->json;
	snprintf(probe_seen.vm, sizeof(probe_seen.vm), "%s", vm != NULL ? vm : "");
	fprintf(ctx->out, "probe %s%s\n", probe_seen.vm, ctx->json ? " json" : "");
	return strcmp(probe_seen.vm, "bad") == 0 ? -EINVAL : 0;
}

static const struct cli_command shell_table[] = {
    {"probe", {NULL}, "[VM]", probe_cmd, false, "probe", false},
    {"help", {NULL}, "[COMMAND]", cli_help_cmd, false, "help", false},
    {"quit", {"exit", NULL}, "", cli_quit_cmd, false, "quit", false},
    {.name = NULL},
};

/* Run the shell on input; out and err get what it printed. */
static int
run_shell(const char *input, bool json, char **out, char **err)
{
	size_t out_len, err_len;
	FILE *in = fmemopen((void *)input, strlen(input), "r");
	struct cli_ctx ctx = {
	    .out = open_memstream(out, &out_len),
	    .err = open_memstream(err, &err_len),
	    .json = json,
	    .table = shell_table,
	    .prog = "vnumactl",
	};
	int status;

	assert_non_null(in);
	memset(&probe_seen, 0, sizeof(probe_seen));
	status = shell_run(&ctx, in);
	fclose(in);
	fclose(ctx.out);
	fclose(ctx.err);
	return status;
}

static void
test_shell_loop(void **state)
{
	char *out, *err;

	(void)state;
	/* No prompt off a terminal; errors go on; quit stops; --json per line does not stick. */
	assert_int_equal(run_shell("probe a\n\nprobe \"b c\" --json\nbogus\nprobe bad\n"
	                           "probe 'x\nprobe --domain d\nquit\nprobe never\n",
	                           false, &out, &err),
	                 0);
	assert_string_equal(out, "probe a\nprobe b c json\nprobe bad\nprobe d\n");
	assert_string_equal(err, "error: unknown command 'bogus'\nerror: unterminated ' quote\n");
	assert_int_equal(probe_seen.calls, 4);
	free(out);
	free(err);

	/* The global --json applies to every line; "exit" and end of input both end it. */
	assert_int_equal(run_shell("probe a\nexit\nprobe b\n", true, &out, &err), 0);
	assert_string_equal(out, "probe a json\n");
	free(out);
	free(err);
	assert_int_equal(run_shell("probe a", false, &out, &err), 0);
	assert_string_equal(out, "probe a\n");
	free(out);
	free(err);
	assert_int_equal(run_shell("help\n", false, &out, &err), 0);
	assert_non_null(strstr(out, "  probe  probe\n"));
	free(out);
	free(err);
}

/* ---- rendering ---------------------------------------------------------------------------- */

static void
test_render_list(void **state)
{
	(void)state;
	assert_render(cmd_list_render, list_json,
	              "id  name  state     mode      vcpus  mem_gib  home  vcpu_nodes  mem_local  "
	              "fault_local  strength\n"
	              " 1  db1   moving    auto          8      8.0  1     0-1              0.94  "
	              "       0.88      1024\n"
	              "12  web1  advisory  advisory      4      2.0  0     0                0.50  "
	              "          -       200\n"
	              "\nweb1: bad policy, the default is used: priority: 300 is not 0-100\n");
	assert_render(
	    cmd_list_render, "{\"vms\":[]}",
	    "id  name  state  mode  vcpus  mem_gib  home  vcpu_nodes  mem_local  fault_local  "
	    "strength\n");
}

/*
 * A VM with guest cells gets a "guest cells" table after its vCPUs (a cell's own residency when
 * measured, else "-"); one without, none.
 */
static void
test_render_vminfo_cells(void **state)
{
	struct json_object *data = parse(vminfo_json);
	struct util_buf buf = {0};
	static const char want[] =
	    "\nguest cells:\n"
	    "cell  vcpus  start_mib  memory_mib  home  resident MiB per node\n"
	    "   0  0              0        4096  0     0:4000 1:96 (at least 0:3990 1:80)\n"
	    "   1  1           4096        4096  1     -\n"
	    "\ncounters:\n";

	(void)state;
	cmd_vminfo_render(&buf, data);
	assert_null(strstr(buf.data, "guest cells"));
	free(buf.data);
	memset(&buf, 0, sizeof(buf));
	json_object_object_add(
	    data, "cells",
	    json_tokener_parse("[{\"cell\":0,\"vcpus\":\"0\",\"mem_start_mib\":0,"
	                       "\"memory_mib\":4096,\"home\":\"0\",\"resident\":\"0:4000 1:96 (at "
	                       "least 0:3990 1:80)\"},"
	                       "{\"cell\":1,\"vcpus\":\"1\","
	                       "\"mem_start_mib\":4096,\"memory_mib\":4096,\"home\":\"1\"}]"));
	cmd_vminfo_render(&buf, data);
	if (strstr(buf.data, want) == NULL)
		fprintf(stderr, "got:\n%s\n", buf.data);
	assert_non_null(strstr(buf.data, want));
	free(buf.data);
	json_object_put(data);
}

/* Where the residency figure came from, on a host that says so; nothing on an exact one. */
static void
test_render_vminfo_residency(void **state)
{
	struct json_object *data = parse(vminfo_json);
	struct util_buf buf = {0};
	static const char want[] = "\nmemory per node:\n"
	                           "  residency: sampled, 1.0 s old, +/- 37 MiB per node\n"
	                           "node  resident_gib  share\n";

	(void)state;
	cmd_vminfo_render(&buf, data);
	assert_null(strstr(buf.data, "residency:"));
	free(buf.data);
	memset(&buf, 0, sizeof(buf));
	json_object_object_add(data, "resident_source", json_object_new_string("sampled"));
	json_object_object_add(data, "resident_age_s", json_object_new_double(1.0));
	json_object_object_add(data, "resident_err_mib", json_object_new_int64(37));
	cmd_vminfo_render(&buf, data);
	if (strstr(buf.data, want) == NULL)
		fprintf(stderr, "got:\n%s\n", buf.data);
	assert_non_null(strstr(buf.data, want));
	free(buf.data);
	json_object_put(data);
}

/* Sentinels are never shown: no convergence node yet is "none", rate 0 is "no cap". */
static void
test_render_no_sentinels(void **state)
{
	(void)state;
	assert_render(cmd_policy_render,
	              "{\"vm\":\"db1\",\"source\":\"default\",\"policy\":{\"rate_kib_s\":0}}",
	              "vm:           db1\n"
	              "source:       default\n"
	              "mode:         -\n"
	              "nodes:        -\n"
	              "placement:    -\n"
	              "migrate:      -\n"
	              "rate (KiB/s): no cap\n"
	              "priority:     -\n"
	              "group:        -\n"
	              "xml:          -\n");
	assert_render_has(cmd_policy_render, "{\"vm\":\"db1\",\"policy\":{\"rate_kib_s\":2048}}",
	                  "rate (KiB/s): 2048\n");
	assert_render_has(cmd_vminfo_render, "{\"id\":1,\"name\":\"db1\",\"conv_node\":-1}",
	                  "converging to:    none\n");
	assert_render_has(cmd_vminfo_render, "{\"id\":1,\"name\":\"db1\",\"conv_node\":0}",
	                  "converging to:    0\n");
}

static void
test_render_vminfo(void **state)
{
	(void)state;
	assert_render(
	    cmd_vminfo_render, vminfo_json,
	    "id:               1\n"
	    "name:             db1\n"
	    "state:            moving\n"
	    "vcpus:            8\n"
	    "memory (GiB):     8.0\n"
	    "home nodes:       1\n"
	    "vcpu nodes:       0-1\n"
	    "converging to:    1\n"
	    "memory locality:  0.94\n"
	    "fault locality:   0.88\n"
	    "fault age (s):    2\n"
	    "strength:         1024\n"
	    "to move (GiB):    6.0\n"
	    "memory moves:     yes\n"
	    "pinned (GiB):     0.0\n"
	    "sampling:         fault-stats\n"
	    "sampling reason:  active\n"
	    "sampling (MiB/s): 12.5\n"
	    "host note:        its -numa options were not understood, so it is placed as one cell\n"
	    "\npolicy:\n"
	    "  mode:         auto\n"
	    "  nodes:        0-1\n"
	    "  placement:    compact\n"
	    "  migrate:      yes\n"
	    "  rate (KiB/s): 262144\n"
	    "  priority:     50\n"
	    "  group:        -\n"
	    "  xml:          <vnuma:policy nodes='0-1'/>\n"
	    "\nmemory per node:\n"
	    "node  resident_gib  share\n"
	    "   0           6.0   0.75\n"
	    "   1           2.0   0.25\n"
	    "\nvcpus:\n"
	    "vcpu   tid  cpu  node  allowed  pinned\n"
	    "   0  4100    3     0  0-1      no\n"
	    "   1  4101   17     1  1        yes\n"
	    "\ncounters:\n"
	    "  hint_faults 1000\n"
	    "  hint_faults_local 940\n"
	    "  local_pct 94\n"
	    "  vcpu_moves 3\n");
}

static void
test_render_host(void **state)
{
	(void)state;
	assert_render(cmd_nodeinfo_render, nodeinfo_json,
	              "node  cpus   load  vcpus  mem_gib  free_gib  distance\n"
	              "   0    16   4.50      5     64.0      30.0  10,21\n"
	              "   1    16  12.25      7     64.0       0.5  21,10\n");
	assert_render(cmd_status_render, status_json,
	              "version:               0.1.0\n"
	              "backend:               sim\n"
	              "host:                  simulated, scenario t\n"
	              "uptime (s):            13\n"
	              "host time (s):         250.0\n"
	              "rounds:                125\n"
	              "paused:                yes\n"
	              "sample period (s):     1\n"
	              "rebalance period (s):  2\n"
	              "nodes:                 2\n"
	              "vms:                   2\n"
	              "vms on fault stats:    1\n"
	              "vms on placement only: 1\n"
	              "config:                /etc/vnumad/vnumad.conf\n"
	              "socket:                /run/vnumad/vnumad.sock\n"
	              "clients:               1\n");
	assert_render(cmd_stats_render, stats_json,
	              "rounds 125\nround_ms_avg 0.25\npages_migrated 4096\n"
	              "vms_skipped.advisory 1\nvms_skipped.gone 0\nactions_refused 0\n");
	assert_render(cmd_stats_render, stats_vm_json,
	              "vm db1\nhint_faults 1000\nsampling_source fault-stats\n");
}

/* The levers block of status: one line per lever, after the scan tunables line. */
static void
test_render_status_levers(void **state)
{
	static const char levers_json[] =
	    "{\"scan_tunables\":{\"lever\":\"refused\",\"reason\":\"scan_size_mb: read-only "
	    "(mode 0444)\",\"control\":false,\"slowed\":false},\"levers\":["
	    "{\"name\":\"pin\",\"state\":\"present\",\"reason\":\"sched_setaffinity(2)\"},"
	    "{\"name\":\"bind-live\",\"state\":\"absent\",\"reason\":\"mbind(2) is not\"},"
	    "{\"name\":\"scan-tunables\",\"state\":\"refused\",\"reason\":\"scan_size_mb: "
	    "read-only (mode 0444)\"}]}";

	(void)state;
	assert_rendered(
	    cmd_status_render, levers_json,
	    "\nscan tunables: refused: scan_size_mb: read-only (mode 0444) (scan_control "
	    "no)\n"
	    "levers:\n"
	    "  pin            present  sched_setaffinity(2)\n"
	    "  bind-live      absent   mbind(2) is not\n"
	    "  scan-tunables  refused  scan_size_mb: read-only (mode 0444)\n",
	    false);
}

static void
test_render_events(void **state)
{
	struct json_object *ev = parse(EVENT_PIN);
	struct util_buf buf = {0};

	(void)state;
	assert_render(cmd_events_render, events_json,
	              "seq  time             vm   kind   rule    gain  text\n"
	              "  7  Dec 03 12:13:20  db1  pin    spread  0.12  vCPU 3 -> node 1\n"
	              "  8  Dec 03 12:13:21  -    pause  admin   0.00  paused\n");
	assert_render(cmd_explain_render, explain_json,
	              "vm:   db1\nhome: 1\nwhy:  db1 is moving to node 1\n"
	              "\nevents that put it there:\n"
	              "seq  time             vm   kind  rule    gain  text\n"
	              "  7  Dec 03 12:13:20  db1  pin   spread  0.12  vCPU 3 -> node 1\n");
	assert_render(cmd_explain_render, "{\"vm\":\"db1\",\"home\":\"1\",\"summary\":\"new\"}",
	              "vm:   db1\nhome: 1\nwhy:  new\n\nno events about this VM are kept\n");
	/* The one-line form of --follow, and its JSON lines. */
	cmd_event_header_render(&buf);
	cmd_event_line_render(&buf, ev, false);
	cmd_event_line_render(&buf, ev, true);
	assert_string_equal(
	    buf.data,
	    "    seq  time              vm            kind      rule          gain  text\n"
	    "      7  Dec 03 12:13:20   db1           pin       spread        0.12  vCPU 3 "
	    "-> node 1\n" EVENT_PIN "\n");
	free(buf.data);
	json_object_put(ev);
}

static void
test_render_policy_place(void **state)
{
	(void)state;
	assert_render(cmd_policy_render, policy_json,
	              "vm:           web1\n"
	              "source:       host\n"
	              "mode:         advisory\n"
	              "nodes:        all\n"
	              "placement:    compact\n"
	              "migrate:      no\n"
	              "rate (KiB/s): no cap\n"
	              "priority:     50\n"
	              "group:        web\n"
	              "xml:          <vnuma:policy mode='advisory'/>\n"
	              "error: priority: 300 is not 0-100 (the default policy is used)\n");
	assert_render(cmd_place_render, place_json,
	              "nodes:  0-1\ncell 0: 0\ncell 1: 1\nwhy:    least loaded nodes: 0,1\n");
	assert_render(cmd_place_render, "{\"nodes\":\"2\",\"per_cell\":[],\"reason\":\"fits\"}",
	              "nodes: 2\nwhy:   fits\n");
}

static void
test_render_top(void **state)
{
	char frame_json[4096];
	struct json_object *frame;
	struct util_buf buf = {0};
	struct json_object *nodes = parse(nodeinfo_json);

	(void)state;
	snprintf(frame_json, sizeof(frame_json), "{\"status\":%s,\"nodes\":%s,\"vms\":[%s]}",
	         status_json, json_object_to_json_string(json_object_object_get(nodes, "nodes")),
	         vminfo_json);
	json_object_put(nodes);
	frame = parse(frame_json);
	cmd_top_render(&buf, frame, true);
	assert_string_equal(
	    buf.data,
	    "vnumad 0.1.0  backend sim  host time 250.0 s  rounds 125  PAUSED  ('q' quits)\n\n"
	    "node  cpus   load  vcpus  mem_gib  free_gib\n"
	    "   0    16   4.50      5     64.0      30.0\n"
	    "   1    16  12.25      7     64.0       0.5\n\n"
	    "id  name  state   mem_local  strength  gib0  gib1  vcpu0  vcpu1\n"
	    " 1  db1   moving       0.94      1024   6.0   2.0      1      1\n");
	free(buf.data);
	memset(&buf, 0, sizeof(buf));
	cmd_top_render(&buf, frame, false);
	assert_null(strstr(buf.data, "quits"));
	assert_null(strchr(buf.data, '\033'));
	free(buf.data);
	json_object_put(frame);
}

static void
test_render_json(void **state)
{
	static const char *const canned[] = {list_json,    vminfo_json, nodeinfo_json,
	                                     status_json,  stats_json,  events_json,
	                                     explain_json, place_json,  policy_json};
	struct util_buf buf = {0};

	(void)state;
	/* --json is the data object itself, pretty and byte-for-byte repeatable. */
	for (size_t i = 0; i < sizeof(canned) / sizeof(canned[0]); i++) {
		struct json_object *data = parse(canned[i]), *back;
		char *first;

		cmd_json_render(&buf, data);
		first = xstrdup(buf.data);
		back = parse(buf.data);
		assert_true(json_object_equal(back, data));
		assert_non_null(strchr(buf.data, '\n'));
		assert_int_equal(buf.data[buf.len - 1], '\n');
		free(buf.data);
		memset(&buf, 0, sizeof(buf));
		cmd_json_render(&buf, data);
		assert_string_equal(buf.data, first);
		free(buf.data);
		memset(&buf, 0, sizeof(buf));
		free(first);
		json_object_put(back);
		json_object_put(data);
	}
	cmd_json_render(&buf, NULL);
	assert_string_equal(buf.data, "{\n}\n");
	free(buf.data);
}

static void
test_migrate_progress(void **state)
{
	struct json_object *info = parse(vminfo_json);
	struct util_buf buf = {0};
	double on, total;

	(void)state;
	assert_int_equal(cmd_migrate_progress(info, 1, &on, &total), 0);
	assert_true(on == 2048.0 && total == 8192.0);
	assert_false(cmd_migrate_done(on, total));
	assert_int_equal(cmd_migrate_progress(info, 2, &on, &total), -EINVAL);
	assert_int_equal(cmd_migrate_progress(info, -1, &on, &total), -EINVAL);
	json_object_put(info);
	assert_false(cmd_migrate_done(8110, 8192));
	assert_true(cmd_migrate_done(8111, 8192));
	assert_true(cmd_migrate_done(0, 0));

	cmd_migrate_bar_render(&buf, 2048, 8192, 1);
	assert_string_equal(buf.data, "[###-------]  25%  2.0/8.0 GiB on node 1");
	free(buf.data);
	memset(&buf, 0, sizeof(buf));
	cmd_migrate_bar_render(&buf, 8191, 8192, 0);
	assert_string_equal(buf.data, "[##########]  99%  8.0/8.0 GiB on node 0");
	free(buf.data);
	memset(&buf, 0, sizeof(buf));
	cmd_migrate_bar_render(&buf, 0, 0, 3);
	assert_string_equal(buf.data, "[##########] 100%  0.0/0.0 GiB on node 3");
	free(buf.data);
}

/* ---- whole commands against a fake daemon ------------------------------------------------- */

struct fake {
	pid_t pid;
	char dir[64];
	char path[96];
	char log[96]; /* every request line the fake received */
};

/* The canned reply to one request: status, message and data text (NULL: none). */
static const char *
fake_answer(const struct proto_request *req, int *status, const char **message)
{
	const char *vm = NULL, *scope = NULL;

	*status = PROTO_OK;
	*message = "ok";
	proto_arg_string(req->args, "vm", &vm);
	proto_arg_string(req->args, "scope", &scope);
	if (vm != NULL && strcmp(vm, "db9") == 0) {
		*status = PROTO_NOT_FOUND;
		*message = "no VM 'db9'";
		return NULL;
	}
	if (strcmp(req->cmd, "pause") == 0) {
		*status = PROTO_FORBIDDEN;
		*message =
		    "permission denied: pause changes state (root or the control group only)";
		return NULL;
	}
	if (scope != NULL && strcmp(scope, "config") == 0) {
		*status = PROTO_UNSUPPORTED;
		*message = "--config: the sim host keeps no persistent domain configuration";
		return NULL;
	}
	static const struct {
		const char *cmd, *data;
	} canned[] = {
	    {"list", list_json},
	    {"nodeinfo", nodeinfo_json},
	    {"status", status_json},
	    {"events", events_json},
	    {"explain", explain_json},
	    {"place", place_json},
	    {"policy", policy_json},
	    {"vminfo", vminfo_done_json},
	    {"stats", stats_json},
	    {"migrate", "{\"vm\":\"db1\",\"node\":1,\"policy_nodes\":\"1\"}"},
	};
	for (size_t i = 0; i < sizeof(canned) / sizeof(canned[0]); i++)
		if (strcmp(req->cmd, canned[i].cmd) == 0)
			return canned[i].data;
	*status = PROTO_NOT_FOUND;
	*message = "unknown command";
	return NULL;
}

static void
fake_write(int fd, const char *text)
{
	size_t len = strlen(text);

	while (len > 0) {
		ssize_t n = write(fd, text, len);

		if (n <= 0)
			_exit(0);
		text += n;
		len -= (size_t)n;
	}
}

/* Answer one request line; false when the connection should end (after a follow). */
static bool
fake_request(const struct fake *fk, int fd, const char *line, size_t len)
{
	struct proto_request req;
	struct json_object *data = NULL;
	const char *message, *text;
	char err[256], *reply;
	bool follow = false;
	int status;
	FILE *log = fopen(fk->log, "a");

	if (log != NULL) {
		fprintf(log, "%.*s\n", (int)len, line);
		fclose(log);
	}
	if (proto_request_decode(line, len, &req, err, sizeof(err)) != PROTO_OK)
		_exit(2);
	text = fake_answer(&req, &status, &message);
	data = text != NULL ? json_tokener_parse(text) : NULL;
	reply = proto_reply_encode(req.id, (enum proto_status)status, message, data);
	fake_write(fd, reply);
	free(reply);
	json_object_put(data);
	proto_arg_bool(req.args, "follow", &follow);
	if (follow) { /* two events, then the daemon "goes away" */
		struct json_object *ev = json_tokener_parse(EVENT_PAUSE);
		char *line1 = proto_event_encode(ev);

		fake_write(fd, line1);
		fake_write(fd, line1);
		free(line1);
		json_object_put(ev);
	}
	proto_request_free(&req);
	return !follow;
}

static void
fake_serve(const struct fake *fk, int lfd)
{
	static char buf[PROTO_MAX_LINE];

	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		size_t len = 0;
		bool open = fd >= 0;

		while (open) {
			ssize_t n = read(fd, buf + len, sizeof(buf) - len);
			char *nl;

			if (n <= 0)
				break;
			len += (size_t)n;
			while (open && (nl = memchr(buf, '\n', len)) != NULL) {
				open = fake_request(fk, fd, buf, (size_t)(nl - buf));
				len -= (size_t)(nl - buf) + 1;
				memmove(buf, nl + 1, len);
			}
		}
		if (fd >= 0)
			close(fd);
	}
}

static int
fake_setup(void **state)
{
	struct fake *fk = calloc(1, sizeof(*fk));
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int lfd;

	assert_non_null(fk);
	snprintf(fk->dir, sizeof(fk->dir), "/tmp/vnumactl-fake.XXXXXX");
	assert_non_null(mkdtemp(fk->dir));
	snprintf(fk->path, sizeof(fk->path), "%s/s.sock", fk->dir);
	snprintf(fk->log, sizeof(fk->log), "%s/requests", fk->dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", fk->path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	fflush(NULL);
	fk->pid = fork();
	assert_true(fk->pid >= 0);
	if (fk->pid == 0) {
		fake_serve(fk, lfd);
		_exit(0);
	}
	close(lfd);
	*state = fk;
	return 0;
}

static int
fake_teardown(void **state)
{
	struct fake *fk = *state;

	kill(fk->pid, SIGKILL);
	waitpid(fk->pid, NULL, 0);
	unlink(fk->path);
	unlink(fk->log);
	rmdir(fk->dir);
	free(fk);
	return 0;
}

/* The requests the fake received so far (caller frees). */
static char *
fake_requests(const struct fake *fk)
{
	FILE *f = fopen(fk->log, "r");
	char *text = calloc(1, 65536);

	assert_non_null(text);
	if (f != NULL) {
		size_t n = fread(text, 1, 65535, f);

		text[n] = '\0';
		fclose(f);
	}
	return text;
}

static void
test_fake_read_commands(void **state)
{
	struct fake *fk = *state;
	struct json_object *data = parse(list_json);
	char want[4096];
	struct run r;

	/* --json prints the reply's data object and nothing else. */
	snprintf(want, sizeof(want), "%s\n",
	         json_object_to_json_string_ext(data, JSON_C_TO_STRING_PRETTY |
	                                                  JSON_C_TO_STRING_NOSLASHESCAPE));
	r = run_cli("-c", fk->path, "list", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_string_equal(r.out, want);
	run_free(&r);
	json_object_put(data);

	r = run_cli("-c", fk->path, "list", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "id  name  state ", 16), 0);
	run_free(&r);
	r = run_cli("-c", fk->path, "events", "--vm", "db1", "--since", "3", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "vCPU 3 -> node 1"));
	run_free(&r);
	r = run_cli("-c", fk->path, "place", "--vcpus", "4", "--memory", "8GiB", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "nodes:  0-1\ncell 0: 0\ncell 1: 1\nwhy:    least loaded "
	                           "nodes: 0,1\n");
	run_free(&r);
	r = run_cli("-c", fk->path, "top", NULL); /* stdout is not a terminal: one frame */
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "vnumad 0.1.0  backend sim", 25), 0);
	assert_null(strchr(r.out, '\033'));
	run_free(&r);
	r = run_cli("-c", fk->path, "--json", "top", "--once", NULL);
	assert_int_equal(r.status, 0);
	data = parse(r.out);
	assert_non_null(cmd_json_get(data, "status.rounds"));
	assert_int_equal(json_object_array_length(cmd_json_array(data, "vms")), 2);
	json_object_put(data);
	run_free(&r);

	/* What went over the wire. */
	char *sent = fake_requests(fk);

	assert_non_null(strstr(sent, "\"cmd\":\"events\",\"args\":{\"since\":3,\"vm\":\"db1\","
	                             "\"follow\":false}"));
	assert_non_null(
	    strstr(sent, "\"cmd\":\"place\",\"args\":{\"vcpus\":4,\"memory_mib\":8192}"));
	free(sent);
}

static void
test_fake_errors_and_changes(void **state)
{
	struct fake *fk = *state;
	struct run r;
	char *sent;

	/* A reply with an error status: the daemon's message, status 1. */
	r = run_cli("-c", fk->path, "vminfo", "db9", NULL);
	assert_string_equal(r.err, "error: no VM 'db9'\n");
	assert_error(r, "error: no VM");
	assert_error(run_cli("-c", fk->path, "pause", NULL),
	             "error: permission denied: pause changes state (root or the control group "
	             "only)\n");
	assert_error(run_cli("-c", fk->path, "policy", "web1", "--mode", "off", "--config", NULL),
	             "error: --config: the sim host keeps no persistent domain configuration\n");

	r = run_cli("-c", fk->path, "policy", "web1", "--priority", "70", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "policy of web1 changed (live)\nvm:", 33), 0);
	run_free(&r);
	r = run_cli("-c", fk->path, "migrate", "db1", "--node", "1", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "db1: 8.0/8.0 GiB on node 1\n"
	                           "policy left: db1 keeps nodes=\"1\" (live) until changed; "
	                           "`vnumactl policy db1 --nodes all` gives it back to vnumad's "
	                           "choice\n");
	assert_string_equal(r.err, "");
	run_free(&r);
	r = run_cli("-c", fk->path, "--json", "migrate", "db1", "--node", "1", "--no-wait", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out,
	                    "{\n  \"vm\":\"db1\",\n  \"node\":1,\n  \"policy_nodes\":\"1\"\n}\n");
	run_free(&r);
	r = run_cli("-c", fk->path, "migrate", "db9", "--node", "1", NULL);
	assert_error(r, "error: no VM 'db9'\n");

	sent = fake_requests(fk);
	assert_non_null(strstr(sent, "\"args\":{\"vm\":\"web1\",\"priority\":\"70\"}"));
	assert_non_null(strstr(sent, "\"cmd\":\"migrate\",\"args\":{\"vm\":\"db1\",\"node\":1}"));
	free(sent);
}

static void
test_fake_follow(void **state)
{
	struct fake *fk = *state;
	struct run r;

	/* The first batch, then events as they come, until the daemon closes the stream. */
	r = run_cli("-c", fk->path, "events", "--follow", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "error: vnumad closed the event stream\n");
	assert_int_equal(strncmp(r.out, "    seq  time      ", 18), 0);
	assert_non_null(strstr(r.out, "vCPU 3 -> node 1\n"));
	assert_non_null(strstr(r.out, "paused\n      8"));
	run_free(&r);
	r = run_cli("-c", fk->path, "events", "--follow", "--json", NULL);
	assert_string_equal(r.out,
	                    EVENT_PIN "\n" EVENT_PAUSE "\n" EVENT_PAUSE "\n" EVENT_PAUSE "\n");
	run_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_complete),
	    cmocka_unit_test(test_help_lists_specs),
	    cmocka_unit_test(test_grammar_vm_commands),
	    cmocka_unit_test(test_grammar_policy),
	    cmocka_unit_test(test_grammar_pin_events_place),
	    cmocka_unit_test(test_errors_before_connecting),
	    cmocka_unit_test(test_connect_failure),
	    cmocka_unit_test(test_size_parse),
	    cmocka_unit_test(test_number_parse),
	    cmocka_unit_test(test_shell_split),
	    cmocka_unit_test(test_shell_loop),
	    cmocka_unit_test(test_render_list),
	    cmocka_unit_test(test_render_vminfo_cells),
	    cmocka_unit_test(test_render_vminfo_residency),
	    cmocka_unit_test(test_render_vminfo),
	    cmocka_unit_test(test_render_no_sentinels),
	    cmocka_unit_test(test_command_help),
	    cmocka_unit_test(test_render_host),
	    cmocka_unit_test(test_render_events),
	    cmocka_unit_test(test_render_status_levers),
	    cmocka_unit_test(test_render_policy_place),
	    cmocka_unit_test(test_render_top),
	    cmocka_unit_test(test_render_json),
	    cmocka_unit_test(test_migrate_progress),
	    cmocka_unit_test_setup_teardown(test_fake_read_commands, fake_setup, fake_teardown),
	    cmocka_unit_test_setup_teardown(test_fake_errors_and_changes, fake_setup,
	                                    fake_teardown),
	    cmocka_unit_test_setup_teardown(test_fake_follow, fake_setup, fake_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	/* event times are shown in local time: make it UTC for the expected texts */
	setenv("TZ", "UTC", 1);
	tzset();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

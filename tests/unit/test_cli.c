/*
 * test_cli.c - vnumactl's grammar: spec strings, option forms, global options, errors and
 * exit statuses, on a test table and on the real one.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli.h"
#include "agent/client.h"
#include "agent/simulate.h"
#include "agent/version.h"
#include "host/sim/peers.h"

#define MAX_ARGV 16

/* What the probe handler saw on its last call. */
static struct {
	int calls;
	const char *vm, *node, *policy, *plot, *socket;
	bool force, json;
} seen;

static int
probe_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	seen.calls++;
	seen.vm = cli_args_get(args, "vm");
	seen.node = cli_args_get(args, "node");
	seen.policy = cli_args_get(args, "policy");
	seen.plot = cli_args_get(args, "plot");
	seen.force = cli_args_has(args, "force");
	seen.json = ctx->json;
	seen.socket = ctx->socket_path;
	fprintf(ctx->out, "probed\n");
	return 0;
}

static int
fail_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	seen.calls++;
	fprintf(ctx->err, "error: failed on purpose\n");
	return -EIO;
}

static const struct cli_command test_table[] = {
    {"probe",
     {"pr", NULL},
     "VM [--node N] [--policy LIST] [--force] [--plot FILE]",
     probe_cmd,
     false,
     "look at things",
     false},
    {"need", {NULL}, "--node N [EXTRA]", probe_cmd, true, "needs a node", false},
    {"fail", {NULL}, "", fail_cmd, false, "always fails", false},
    {"help", {NULL}, "[COMMAND]", cli_help_cmd, false, "help", false},
    {.name = NULL},
};

struct run {
	int status;
	char *out;
	char *err;
};

/* Run the CLI on a NULL-terminated list of words (after the program name). */
static struct run
run_cli(const struct cli_command *table, ...)
{
	char *argv[MAX_ARGV] = {"vnumactl"};
	int argc = 1;
	size_t out_len, err_len;
	struct run r = {0};
	FILE *out = open_memstream(&r.out, &out_len);
	FILE *err = open_memstream(&r.err, &err_len);
	va_list ap;

	assert_non_null(out);
	assert_non_null(err);
	va_start(ap, table);
	for (char *w = va_arg(ap, char *); w != NULL && argc < MAX_ARGV; w = va_arg(ap, char *))
		argv[argc++] = w;
	va_end(ap);
	memset(&seen, 0, sizeof(seen));
	r.status = cli_run(table, argc, argv, out, err);
	fclose(out);
	fclose(err);
	return r;
}

static void
run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* The run failed with status 1, without calling the handler, and said `msg` first. */
static void
assert_failed(struct run *r, const char *msg)
{
	assert_int_equal(r->status, 1);
	assert_int_equal(seen.calls, 0);
	assert_int_equal(strncmp(r->err, msg, strlen(msg)), 0);
	assert_string_equal(r->out, "");
	run_free(r);
}

static void
test_option_forms(void **state)
{
	struct run r;

	r = run_cli(test_table, "probe", "vm1", "--node", "3", "--policy=a,b", "--force",
	            "--plot=x.svg", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(seen.calls, 1);
	assert_string_equal(r.out, "probed\n");
	assert_string_equal(r.err, "");
	assert_string_equal(seen.vm, "vm1");
	assert_string_equal(seen.node, "3");
	assert_string_equal(seen.policy, "a,b");
	assert_string_equal(seen.plot, "x.svg");
	assert_true(seen.force);
	assert_false(seen.json);
	run_free(&r);

	/* Options before the positional, "=" forms, and the positional by name. */
	r = run_cli(test_table, "probe", "--node=12", "--policy", "x", "--vm", "vm2", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(seen.vm, "vm2");
	assert_string_equal(seen.node, "12");
	assert_string_equal(seen.policy, "x");
	assert_null(seen.plot);
	assert_false(seen.force);
	run_free(&r);

	/* "--" ends the options; an alias finds the command. */
	r = run_cli(test_table, "pr", "--", "--odd-name", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(seen.vm, "--odd-name");
	run_free(&r);
}

static void
test_option_errors(void **state)
{
	struct run r;

	r = run_cli(test_table, "probe", "vm1", "--bogus", NULL);
	assert_failed(&r, "error: unknown option '--bogus'\n");
	r = run_cli(test_table, "probe", "vm1", "--bogus=1", NULL);
	assert_failed(&r, "error: unknown option '--bogus'\n");
	r = run_cli(test_table, "probe", "vm1", "-x", NULL);
	assert_failed(&r, "error: unknown option '-x'\n");
	r = run_cli(test_table, "probe", "vm1", "--node", NULL);
	assert_failed(&r, "error: option '--node' needs a value");
	r = run_cli(test_table, "probe", "vm1", "--policy", "--force", NULL);
	assert_failed(&r, "error: option '--policy' needs a value");
	r = run_cli(test_table, "probe", "vm1", "--policy=", NULL);
	assert_failed(&r, "error: option '--policy' needs a value");
	r = run_cli(test_table, "probe", "vm1", "--force=yes", NULL);
	assert_failed(&r, "error: option '--force' takes no value");
	r = run_cli(test_table, "probe", "vm1", "--node", "two", NULL);
	assert_failed(&r, "error: bad --node 'two': want a non-negative integer\n");
	r = run_cli(test_table, "probe", "vm1", "--node", "-1", NULL);
	assert_failed(&r, "error: bad --node '-1': want a non-negative integer\n");
	r = run_cli(test_table, "probe", "vm1", "--node", "1", "--node=2", NULL);
	assert_failed(&r, "error: option '--node' given twice");
	r = run_cli(test_table, "probe", NULL);
	assert_failed(&r, "error: missing argument VM\n");
	r = run_cli(test_table, "probe", "a", "b", NULL);
	assert_failed(&r, "error: unexpected argument 'b'\n");
	r = run_cli(test_table, "need", NULL);
	assert_failed(&r, "error: missing option '--node'\n");

	/* A usage line follows the error. */
	r = run_cli(test_table, "need", "--node", "x", NULL);
	assert_non_null(strstr(r.err, "\nusage: vnumactl need --node N [EXTRA]\n"));
	assert_failed(&r, "error:");
}

static void
test_unknown_command(void **state)
{
	struct run r = run_cli(test_table, "frob", "--node", "1", NULL);

	assert_string_equal(r.err, "error: unknown command 'frob'\n");
	assert_failed(&r, "error: unknown command 'frob'");
	r = run_cli(test_table, "help", "frob", NULL);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "error: unknown command 'frob'\n");
	run_free(&r);
}

static void
test_handler_failure(void **state)
{
	struct run r = run_cli(test_table, "fail", NULL);

	assert_int_equal(r.status, 1);
	assert_int_equal(seen.calls, 1);
	assert_string_equal(r.err, "error: failed on purpose\n");
	run_free(&r);
}

/*
 * A socket path that does not fit a sockaddr_un (107 bytes and its NUL) is refused by name,
 * never cut to fit; one of 107 bytes is taken.
 */
static void
test_socket_path_length(void)
{
	static const char *const opts[] = {"-c", "--connect", "--socket"};
	char path[CLIENT_SOCKET_PATH_MAX + 2], joined[sizeof(path) + 16];
	struct run r;

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0'; /* 108 bytes */
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		char want[160];

		snprintf(want, sizeof(want),
		         "error: option '%s': the socket path is 108 bytes, longer than the 107 a "
		         "Unix socket address holds\n",
		         opts[i]);
		r = run_cli(test_table, opts[i], path, "probe", "vm", NULL);
		assert_failed(&r, want);
		snprintf(joined, sizeof(joined), "%s%s%s", opts[i], opts[i][1] == '-' ? "=" : "",
		         path);
		r = run_cli(test_table, joined, "probe", "vm", NULL);
		assert_failed(&r, want);
	}
	path[CLIENT_SOCKET_PATH_MAX] = '\0'; /* 107 bytes */
	r = run_cli(test_table, "--socket", path, "probe", "vm", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(seen.socket, path);
	run_free(&r);
}

static void
test_global_options(void **state)
{
	struct run r;

	r = run_cli(test_table, "-c", "/x/a.sock", "probe", "vm", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(seen.socket, "/x/a.sock");
	assert_false(seen.json);
	run_free(&r);
	r = run_cli(test_table, "--connect=/x/b.sock", "--json", "probe", "vm", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(seen.socket, "/x/b.sock");
	assert_true(seen.json);
	run_free(&r);
	r = run_cli(test_table, "--connect", "/x/c.sock", "probe", "vm", "--json", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(seen.socket, "/x/c.sock");
	assert_true(seen.json); /* global --json after the command */
	run_free(&r);

	r = run_cli(test_table, "-c", NULL);
	assert_failed(&r, "error: option '-c' needs a value");
	test_socket_path_length();
	r = run_cli(test_table, "--frob", "probe", "vm", NULL);
	assert_failed(&r, "error: unknown option '--frob'\n");
	r = run_cli(test_table, NULL);
	assert_failed(&r, "error: no command given");
	r = run_cli(test_table, "probe", "vm", "--json=1", NULL);
	assert_failed(&r, "error: unknown option '--json'");
}

static void
test_version_and_help(void **state)
{
	char want[64];
	struct run r;

	snprintf(want, sizeof(want), "vnumactl %s\n", vnumad_version());
	r = run_cli(test_table, "-V", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, want);
	run_free(&r);
	r = run_cli(test_table, "--version", "probe", NULL); /* stops before the command */
	assert_int_equal(r.status, 0);
	assert_int_equal(seen.calls, 0);
	assert_string_equal(r.out, want);
	run_free(&r);

	r = run_cli(test_table, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "usage: vnumactl [-c SOCKET] [--json] COMMAND", 44), 0);
	assert_non_null(strstr(r.out, "  probe  look at things\n"));
	assert_non_null(strstr(r.out, "  need   needs a node\n"));
	run_free(&r);
	r = run_cli(test_table, "help", "pr", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(
	    r.out, "usage: vnumactl probe VM [--node N] [--policy LIST] [--force] [--plot FILE]"));
	assert_non_null(strstr(r.out, "aliases: pr"));
	run_free(&r);
	r = run_cli(test_table, "help", "need", NULL);
	assert_non_null(strstr(r.out, "needs root"));
	run_free(&r);
}

static void
test_spec_parse(void **state)
{
	struct cli_args args;
	char err[128];

	assert_int_equal(
	    cli_spec_parse("VM [COUNT] --node N [--rate SIZE] [--live]", &args, err, sizeof(err)),
	    0);
	assert_int_equal(args.nr_params, 5);
	assert_string_equal(args.params[0].name, "vm");
	assert_true(args.params[0].positional && !args.params[0].optional);
	assert_string_equal(args.params[1].name, "count");
	assert_true(args.params[1].positional && args.params[1].optional);
	assert_string_equal(args.params[2].name, "node");
	assert_string_equal(args.params[2].type, "N");
	assert_true(!args.params[2].positional && !args.params[2].optional);
	assert_string_equal(args.params[3].type, "SIZE");
	assert_true(args.params[3].optional);
	assert_string_equal(args.params[4].name, "live");
	assert_string_equal(args.params[4].type, "");
	assert_int_equal(cli_spec_parse("", &args, err, sizeof(err)), 0);
	assert_int_equal(args.nr_params, 0);

	assert_int_equal(cli_spec_parse("[VM", &args, err, sizeof(err)), -EINVAL);
	assert_int_equal(cli_spec_parse("[--rate SIZE", &args, err, sizeof(err)), -EINVAL);
	assert_int_equal(cli_spec_parse("vm", &args, err, sizeof(err)), -EINVAL);
	assert_int_equal(cli_spec_parse("[--Rate SIZE]", &args, err, sizeof(err)), -EINVAL);
	assert_int_equal(cli_spec_parse("[--rate size]", &args, err, sizeof(err)), -EINVAL);
	assert_int_equal(cli_spec_parse("[A] B", &args, err, sizeof(err)), -EINVAL);
	assert_int_equal(cli_spec_parse("VM [--vm X]", &args, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'vm' twice"));
}

static void
test_real_table(void **state)
{
	const struct cli_command *sim = cli_command_find(cli_commands, "simulate");
	struct cli_args args;
	char err[128];
	struct run r;

	for (const struct cli_command *c = cli_commands; c->name != NULL; c++) {
		assert_int_equal(cli_spec_parse(c->spec, &args, err, sizeof(err)), 0);
		assert_non_null(c->handler);
		assert_non_null(c->help);
	}
	assert_non_null(sim);
	assert_string_equal(
	    sim->spec, "[SCENARIO] [--policy LIST] [--host-profile NAME] [--json] [--plot FILE]");
	assert_false(sim->needs_write);
	assert_non_null(cli_command_find(cli_commands, "help"));

	r = run_cli(cli_commands, "simulate", "--policy", NULL);
	assert_failed(&r, "error: option '--policy' needs a value");
	r = run_cli(cli_commands, "simulate", "--policy=none,bogus", NULL);
	assert_failed(&r, "error: --policy: unknown policy 'bogus' (valid: none, autonuma, "
	                  "numad, static, vnumad, oracle)\n");
	r = run_cli(cli_commands, "nosuch", NULL);
	assert_failed(&r, "error: unknown command 'nosuch'\n");
	r = run_cli(cli_commands, "help", "simulate", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "usage: vnumactl simulate [SCENARIO] [--policy LIST]"));
	run_free(&r);
}

static void
test_policies_parse(void **state)
{
	bool sel[8];
	int nr = 0;
	char err[256];

	while (sim_balancers[nr] != NULL)
		nr++;
	assert_int_equal(nr, 6);
	assert_int_equal(simulate_policies_parse(NULL, sel, nr, err, sizeof(err)), 0);
	for (int i = 0; i < nr; i++)
		assert_true(sel[i]);
	assert_int_equal(simulate_policies_parse("oracle,none", sel, nr, err, sizeof(err)), 0);
	for (int i = 0; i < nr; i++)
		assert_int_equal(sel[i], strcmp(sim_balancers[i]->name, "none") == 0 ||
		                             strcmp(sim_balancers[i]->name, "oracle") == 0);
	assert_int_equal(simulate_policies_parse("vnumad", sel, nr, err, sizeof(err)), 0);
	assert_int_equal(sel[4] + sel[0] + sel[5], 1);
	assert_int_equal(simulate_policies_parse("none,,oracle", sel, nr, err, sizeof(err)),
	                 -EINVAL);
	assert_non_null(strstr(err, "empty policy name"));
	assert_int_equal(simulate_policies_parse("none,", sel, nr, err, sizeof(err)), -EINVAL);
	assert_int_equal(simulate_policies_parse("NONE", sel, nr, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'NONE'"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_option_forms),    cmocka_unit_test(test_option_errors),
	    cmocka_unit_test(test_unknown_command), cmocka_unit_test(test_handler_failure),
	    cmocka_unit_test(test_global_options),  cmocka_unit_test(test_version_and_help),
	    cmocka_unit_test(test_spec_parse),      cmocka_unit_test(test_real_table),
	    cmocka_unit_test(test_policies_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_shell_complete.c - what Tab offers in the interactive shell (agent/shell_complete.c):
 * command names from the table, each command's options, choice values, VM names only where a
 * VM goes (and asked for only then), command names after "help".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/shell_complete.h"
#include "policy/util.h"

static int
noop_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)ctx;
	(void)args;
	return 0;
}

static const struct cli_command complete_table[] = {
    {"list", {NULL}, "", noop_cmd, false, "list", false},
    {"vminfo", {"dominfo", NULL}, "VM", noop_cmd, false, "vminfo", false},
    {"migrate", {NULL}, "VM --node N [--no-wait] [--timeout S]", noop_cmd, true, "m", false},
    {"policy", {NULL}, "VM [--mode auto|advisory|off] [--live]", noop_cmd, false, "p", false},
    {"events", {NULL}, "[--vm VM] [--follow]", noop_cmd, false, "events", false},
    {"simulate", {NULL}, "[SCENARIO] [--json]", noop_cmd, false, "simulate", false},
    {"help", {NULL}, "[COMMAND]", noop_cmd, false, "help", false},
    {"quit", {"exit", NULL}, "", noop_cmd, false, "quit", false},
    {.name = NULL},
};

static const char *const vm_names[] = {"db-orders", "db-billing", "web-1", "dominfo"};
static int vms_calls;

static int
test_vms(void *arg, const char *const **names)
{
	(void)arg;
	vms_calls++;
	*names = vm_names;
	return (int)(sizeof(vm_names) / sizeof(vm_names[0]));
}

/* Complete line at its end; the candidates joined by ' ' must be want. */
static void
assert_complete(const char *line, const char *want)
{
	struct shell_matches m;
	struct util_buf got = {0};

	shell_complete(complete_table, line, strlen(line), test_vms, NULL, &m);
	util_buf_printf(&got, "%s", "");
	for (int i = 0; i < m.nr; i++)
		util_buf_printf(&got, "%s%s", i > 0 ? " " : "", m.v[i]);
	if (strcmp(got.data, want) != 0)
		fail_msg("'%s': got '%s', want '%s'", line, got.data, want);
	free(got.data);
	shell_matches_free(&m);
}

static void
test_complete_commands(void **state)
{
	(void)state;
	assert_complete("vmi", "vminfo");
	assert_complete("  vmi", "vminfo");
	assert_complete("d", "dominfo");
	assert_complete("e", "events exit");
	assert_complete("", "dominfo events exit help list migrate policy quit simulate vminfo");
	assert_complete("zz", "");
	assert_complete("help q", "quit");
	assert_complete("help quit ", ""); /* help takes one command */
}

static void
test_complete_vms(void **state)
{
	(void)state;
	vms_calls = 0;
	assert_complete("vminfo db-o", "db-orders");
	assert_complete("dominfo db", "db-billing db-orders");
	assert_complete("vminfo ", "db-billing db-orders dominfo web-1");
	assert_complete("migrate --node 1 w", "web-1"); /* the option's value is not the VM */
	assert_complete("events --vm d", "db-billing db-orders dominfo");
	assert_complete("vminfo --domain w", "web-1");
	assert_int_equal(vms_calls, 6);
	/* Where no VM goes, the names are not even asked for. */
	vms_calls = 0;
	assert_complete("vminfo db-orders ", "");
	assert_complete("migrate web-1 --node ", "");
	assert_complete("list ", "");
	assert_complete("bogus d", "");
	assert_complete("simulate s", "");
	assert_int_equal(vms_calls, 0);
}

static void
test_complete_options(void **state)
{
	(void)state;
	assert_complete("migrate web-1 --", "--json --no-wait --node --timeout");
	assert_complete("migrate web-1 --n", "--no-wait --node");
	assert_complete("migrate web-1 --no", "--no-wait --node");
	assert_complete("policy db -", "--json --live --mode");
	assert_complete("simulate --j", "--json"); /* the spec's own --json, once */
	assert_complete("policy db --mode a", "advisory auto");
	assert_complete("policy db --mode=a", ""); /* an '=' value is not completed */
	assert_complete("list --", "--json");
}

static void
test_complete_middle_and_common(void **state)
{
	struct shell_matches m;
	const char *line = "vminfo db-o --json";

	(void)state;
	/* The cursor after "db-o": the word from its start to the cursor is what counts. */
	assert_int_equal(shell_complete(complete_table, line, 11, test_vms, NULL, &m), 1);
	assert_int_equal(m.start, 7);
	assert_string_equal(m.v[0], "db-orders");
	shell_matches_free(&m);
	assert_int_equal(shell_complete(complete_table, "vminfo db", 9, test_vms, NULL, &m), 2);
	assert_int_equal(shell_matches_common_len(&m), strlen("db-"));
	shell_matches_free(&m);
	/* No VM source: nothing, and no crash. */
	assert_int_equal(shell_complete(complete_table, "vminfo d", 8, NULL, NULL, &m), 0);
	assert_int_equal(shell_matches_common_len(&m), 0);
	shell_matches_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_complete_commands),
	    cmocka_unit_test(test_complete_vms),
	    cmocka_unit_test(test_complete_options),
	    cmocka_unit_test(test_complete_middle_and_common),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

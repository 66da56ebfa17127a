/*
 * test_shell.c - the shell's editor seam (shell_editor_set): on a terminal the registered
 * editor gives the lines, a dropped line (-EINTR, Ctrl-C) prompts again, end of input ends
 * the shell and the editor is closed; SIGINT is caught for the session (raising it inside
 * does not end the test) and put back after; off a terminal the editor is not used.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/shell.h"

static int probe_calls;

static int
probe_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	probe_calls++;
	fprintf(ctx->out, "probe ran\n");
	return 0;
}

static const struct cli_command seam_table[] = {
    {"probe", {NULL}, "", probe_cmd, false, "probe", false},
    {"quit", {"exit", NULL}, "", cli_quit_cmd, false, "quit", false},
    {.name = NULL},
};

/* What the fake editor hands out, one step per read: a line, a dropped line, the end. */
static const struct {
	int r;
	const char *line;
	bool raise_sigint;
} fake_script[] = {
    {1, "probe", false},
    {-EINTR, NULL, true}, /* Ctrl-C at the prompt */
    {1, "probe", false},
    {0, NULL, false},
};

static struct {
	int opened, reads, closed;
} fake;

static void *
fake_open(struct cli_ctx *ctx, FILE *in)
{
	(void)ctx;
	(void)in;
	fake.opened++;
	return &fake;
}

static int
fake_read(void *editor, char **line)
{
	int step = fake.reads++;

	assert_ptr_equal(editor, &fake);
	assert_true(step < (int)(sizeof(fake_script) / sizeof(fake_script[0])));
	if (fake_script[step].raise_sigint)
		raise(SIGINT); /* caught by the shell: the test goes on */
	*line = fake_script[step].line != NULL ? strdup(fake_script[step].line) : NULL;
	return fake_script[step].r;
}

static void
fake_close(void *editor)
{
	assert_ptr_equal(editor, &fake);
	fake.closed++;
}

static const struct shell_editor fake_editor = {
    .open = fake_open,
    .read = fake_read,
    .close = fake_close,
};

static int
run_seam(FILE *in, char **out)
{
	size_t out_len;
	char *err = NULL;
	size_t err_len;
	struct cli_ctx ctx = {
	    .out = open_memstream(out, &out_len),
	    .err = open_memstream(&err, &err_len),
	    .table = seam_table,
	    .prog = "vnumactl",
	};
	int status;

	memset(&fake, 0, sizeof(fake));
	probe_calls = 0;
	shell_editor_set(&fake_editor);
	status = shell_run(&ctx, in);
	shell_editor_set(NULL);
	fclose(ctx.out);
	fclose(ctx.err);
	free(err);
	return status;
}

static void
test_shell_editor_on_a_terminal(void **state)
{
	struct sigaction after;
	int master, slave;
	char *out = NULL;
	FILE *in;

	(void)state;
	assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
	in = fdopen(slave, "r");
	assert_non_null(in);
	assert_int_equal(run_seam(in, &out), 0);
	assert_int_equal(fake.opened, 1);
	assert_int_equal(fake.reads, 4);
	assert_int_equal(fake.closed, 1);
	assert_int_equal(probe_calls, 2);
	assert_non_null(strstr(out, "'help' lists the commands"));
	assert_non_null(strstr(out, "probe ran\nprobe ran\n"));
	/* SIGINT is the default again once the shell is over. */
	assert_int_equal(sigaction(SIGINT, NULL, &after), 0);
	assert_true(after.sa_handler == SIG_DFL);
	free(out);
	fclose(in);
	close(master);
}

static void
test_shell_editor_not_off_a_terminal(void **state)
{
	static const char input[] = "probe\nprobe\n";
	FILE *in = fmemopen((void *)input, strlen(input), "r");
	char *out = NULL;

	(void)state;
	assert_non_null(in);
	assert_int_equal(run_seam(in, &out), 0);
	assert_int_equal(fake.opened, 0);
	assert_int_equal(probe_calls, 2);
	assert_string_equal(out, "probe ran\nprobe ran\n"); /* no banner, no prompt */
	free(out);
	fclose(in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_shell_editor_on_a_terminal),
	    cmocka_unit_test(test_shell_editor_not_off_a_terminal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

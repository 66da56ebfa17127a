/*
 * test_config.c - the configuration file: defaults, a full file, every kind of bad line with
 * its "PATH:LINE:" message, several errors at once, the caller's struct left alone on error,
 * and the installed example file and man page agreeing with the parser.
 */
#include <errno.h>
#include <stdbool.h>
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

#include "agent/config.h"
#include "agent/log.h"
#include "policy/vm_policy.h"

/* Every key of the file, as documented. */
static const char *const all_keys[] = {
    "sample_period", "rebalance_period", "socket",         "socket_mode",      "control_group",
    "state_file",    "restore_on_exit",  "log_level",      "log_target",       "migrate_rate",
    "default_mode",  "scan_control",     "metrics_listen", "metrics_textfile",
};
#define NR_KEYS (sizeof(all_keys) / sizeof(all_keys[0]))

/* Byte that fills the caller's struct before a failing load, to see that it stays untouched. */
#define SENTINEL 0x5a
/* Seconds after which a test that waits on a FIFO is killed: a hang, never a slow run. */
#define HANG_S 30

static char tmpdir[64];
static char cfg_path[128];

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/vnumad-cfg-XXXXXX", base && *base ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	snprintf(cfg_path, sizeof(cfg_path), "%s/vnumad.conf", tmpdir);
	return 0;
}

static int
group_teardown(void **state)
{
	unlink(cfg_path);
	return rmdir(tmpdir);
}

static void
write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Load text (len bytes) from cfg_path into *cfg, which starts out filled with SENTINEL. */
static int
load_text(const char *text, size_t len, struct config *cfg, char *err, size_t errlen)
{
	write_file(cfg_path, text, len);
	memset(cfg, SENTINEL, sizeof(*cfg));
	if (err != NULL)
		memset(err, 'x', errlen);
	return config_load(cfg_path, cfg, err, errlen);
}

static void
assert_untouched(const struct config *cfg)
{
	struct config sentinel;

	memset(&sentinel, SENTINEL, sizeof(sentinel));
	assert_memory_equal(cfg, &sentinel, sizeof(*cfg));
}

/* text must fail with exactly one error, "PATH:line: want\n", and leave the struct alone. */
static void
expect_one_error(const char *text, size_t len, int line, const char *want)
{
	struct config cfg;
	char err[1024], expected[1024];
	int rc = load_text(text, len, &cfg, err, sizeof(err));

	snprintf(expected, sizeof(expected), "%s:%d: %s\n", cfg_path, line, want);
	if (rc != -EINVAL)
		fail_msg("accepted (rc %d): %.*s", rc, (int)(len > 200 ? 200 : len), text);
	if (strcmp(err, expected) != 0)
		fail_msg("error\n  \"%s\"\nexpected\n  \"%s\"", err, expected);
	assert_untouched(&cfg);
}

static void
expect_error_str(const char *text, int line, const char *want)
{
	expect_one_error(text, strlen(text), line, want);
}

static void
expect_ok(const char *text, struct config *cfg)
{
	char err[1024];
	int rc = load_text(text, strlen(text), cfg, err, sizeof(err));

	if (rc != 0)
		fail_msg("rejected \"%s\": %s", text, err);
	assert_string_equal(cfg->path, cfg_path);
}

static void
assert_config_equal(const struct config *a, const struct config *b)
{
	assert_true(a->sample_period_s == b->sample_period_s);
	assert_true(a->rebalance_period_s == b->rebalance_period_s);
	assert_string_equal(a->socket_path, b->socket_path);
	assert_int_equal(a->socket_mode, b->socket_mode);
	assert_string_equal(a->control_group, b->control_group);
	assert_string_equal(a->state_file, b->state_file);
	assert_int_equal(a->restore_on_exit, b->restore_on_exit);
	assert_int_equal(a->log_level, b->log_level);
	assert_int_equal(a->log_target, b->log_target);
	assert_true(a->migrate_rate_mib_s == b->migrate_rate_mib_s);
	assert_int_equal(a->default_mode, b->default_mode);
	assert_int_equal(a->scan_control, b->scan_control);
	assert_string_equal(a->metrics_listen, b->metrics_listen);
	assert_string_equal(a->metrics_textfile, b->metrics_textfile);
}

static void
test_defaults(void **state)
{
	struct config cfg;

	memset(&cfg, SENTINEL, sizeof(cfg));
	config_defaults(&cfg);
	assert_string_equal(cfg.path, "");
	assert_true(cfg.sample_period_s == 1.0);
	assert_true(cfg.rebalance_period_s == 2.0);
	assert_string_equal(cfg.socket_path, "/run/vnumad/vnumad.sock");
	assert_int_equal(cfg.socket_mode, 0660);
	assert_string_equal(cfg.control_group, "");
	assert_int_equal(cfg.control_group_line, 0);
	assert_string_equal(cfg.state_file, "/var/lib/vnumad/state.json");
	assert_true(cfg.restore_on_exit);
	assert_int_equal(cfg.log_level, LOG_LEVEL_INFO);
	assert_int_equal(cfg.log_target, LOG_TARGET_AUTO);
	assert_true(cfg.migrate_rate_mib_s == 1024.0);
	assert_int_equal(cfg.default_mode, VM_POLICY_MODE_AUTO);
	assert_false(cfg.scan_control); /* a host-wide kernel setting: the admin opts in */
}

/* An empty file and a file of comments are the defaults. */
static void
test_empty_file(void **state)
{
	struct config cfg, def;

	config_defaults(&def);
	expect_ok("", &cfg);
	assert_config_equal(&cfg, &def);
	expect_ok("# nothing\n\n   \n\t# indented comment\n", &cfg);
	assert_config_equal(&cfg, &def);
}

static void
test_full_file(void **state)
{
	static const char text[] = "# vnumad.conf\n"
	                           "\n"
	                           "sample_period = 500ms\n"
	                           "  rebalance_period=2.5s   # trailing comment\n"
	                           "socket = \"/run/vn umad/ctl.sock\"\n"
	                           "socket_mode = 0600\r\n"
	                           "control_group = kvm-admins\n"
	                           "state_file = /srv/vnumad#1/state.json\n"
	                           "restore_on_exit = no\n"
	                           "log_level = debug\n"
	                           "log_target = journal\n"
	                           "migrate_rate = 1.5GiB/s\n"
	                           "default_mode = advisory";
	struct config cfg;

	expect_ok(text, &cfg);
	assert_true(cfg.sample_period_s == 0.5);
	assert_true(cfg.rebalance_period_s == 2.5);
	assert_string_equal(cfg.socket_path, "/run/vn umad/ctl.sock");
	assert_int_equal(cfg.socket_mode, 0600);
	assert_string_equal(cfg.control_group, "kvm-admins");
	assert_int_equal(cfg.control_group_line, 7); /* for "FILE:7: control_group: no group" */
	assert_string_equal(cfg.state_file, "/srv/vnumad#1/state.json");
	assert_false(cfg.restore_on_exit);
	assert_int_equal(cfg.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(cfg.log_target, LOG_TARGET_JOURNAL);
	assert_true(cfg.migrate_rate_mib_s == 1536.0);
	assert_int_equal(cfg.default_mode, VM_POLICY_MODE_ADVISORY);
}

static void
test_units_and_spellings(void **state)
{
	struct config cfg;

	expect_ok("rebalance_period = 1min\n", &cfg);
	assert_true(cfg.rebalance_period_s == 60.0);
	expect_ok("sample_period = 100ms\nrebalance_period = 100ms\n", &cfg);
	assert_true(cfg.sample_period_s == 0.1 && cfg.rebalance_period_s == 0.1);
	expect_ok("sample_period = 60s\nrebalance_period = 600s\n", &cfg);
	assert_true(cfg.sample_period_s == 60.0 && cfg.rebalance_period_s == 600.0);
	/* Bounds hold exactly whatever the unit: no rounding pushes a bound out of range. */
	expect_ok("sample_period = 60000ms\nrebalance_period = 10min\n", &cfg);
	assert_true(cfg.sample_period_s == 60.0 && cfg.rebalance_period_s == 600.0);
	expect_ok("sample_period = 0.1s\nrebalance_period = 600000ms\n", &cfg);
	assert_true(cfg.sample_period_s == 0.1 && cfg.rebalance_period_s == 600.0);
	expect_ok("migrate_rate = 1073741824KiB/s\n", &cfg);
	assert_true(cfg.migrate_rate_mib_s == 1024.0 * 1024.0);
	/* The least, 2 MiB/s, in every unit: the bound holds exactly. */
	expect_ok("migrate_rate = 2048KiB/s\n", &cfg);
	assert_true(cfg.migrate_rate_mib_s == 2.0);
	expect_ok("migrate_rate = 2MiB/s\n", &cfg);
	assert_true(cfg.migrate_rate_mib_s == 2.0);
	expect_ok("migrate_rate = 0.001953125GiB/s\n", &cfg);
	assert_true(cfg.migrate_rate_mib_s == 2.0);
	expect_ok("migrate_rate = 2g/s\n", &cfg); /* any case; G is GiB */
	assert_true(cfg.migrate_rate_mib_s == 2048.0);
	expect_ok("migrate_rate = 2.5MiB/s\n", &cfg);
	assert_true(cfg.migrate_rate_mib_s == 2.5);
	expect_ok("migrate_rate = 1024GiB/s\n", &cfg);
	assert_true(cfg.migrate_rate_mib_s == 1024.0 * 1024.0);
	expect_ok("socket_mode = 0777\n", &cfg);
	assert_int_equal(cfg.socket_mode, 0777);
	expect_ok("restore_on_exit = off\n", &cfg);
	assert_false(cfg.restore_on_exit);
	expect_ok("restore_on_exit = true\n", &cfg);
	assert_true(cfg.restore_on_exit);
	expect_ok("scan_control = yes\n", &cfg);
	assert_true(cfg.scan_control);
	expect_ok("control_group = \"\"\n", &cfg);
	assert_string_equal(cfg.control_group, "");
	expect_ok("control_group = _vn-umad9\n", &cfg);
	assert_string_equal(cfg.control_group, "_vn-umad9");
	expect_ok("\xef\xbb\xbfrebalance_period = 3s\n", &cfg); /* a byte order mark is skipped */
	assert_true(cfg.rebalance_period_s == 3.0);
	expect_ok("log_target = stderr\nlog_level = error\n", &cfg);
	assert_int_equal(cfg.log_target, LOG_TARGET_STDERR);
	assert_int_equal(cfg.log_level, LOG_LEVEL_ERR);
}

/* The socket path may be 107 bytes (sun_path holds 108 with the NUL), not 108. */
static void
test_socket_path_limit(void **state)
{
	char text[256], path[128];
	struct config cfg;

	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[107] = '\0';
	snprintf(text, sizeof(text), "socket = %s\n", path);
	expect_ok(text, &cfg);
	assert_int_equal(strlen(cfg.socket_path), 107);
	path[107] = 'a';
	path[108] = '\0';
	snprintf(text, sizeof(text), "\n\nsocket = %s\n", path);
	expect_error_str(text, 3,
	                 "socket: path is too long (108 bytes; at most 107 bytes, a Unix socket "
	                 "address limit)");
}

static void
test_bad_lines(void **state)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
	    {"colour = blue", "unknown key \"colour\""},
	    {"Sample_Period = 1s", "unknown key \"Sample_Period\""},
	    {"sample_period 1s", "\"sample_period 1s\": missing '=' (expected key = value)"},
	    {" = 1s", "missing key before '='"},
	    {"socket =", "socket: empty value"},
	    {"socket =    # none", "socket: empty value"},
	    {"socket = \"\"", "socket: empty value"},
	    {"sample_period = fast",
	     "sample_period: \"fast\" is not a duration (use e.g. 1s or 500ms)"},
	    {"sample_period = 5", "sample_period: \"5\" has no unit (use e.g. 1s or 500ms)"},
	    {"sample_period = 1 s",
	     "sample_period: \"1 s\" is not a duration (use e.g. 1s or 500ms)"},
	    {"sample_period = -1s",
	     "sample_period: \"-1s\" is not a duration (use e.g. 1s or 500ms)"},
	    {"sample_period = 1.s",
	     "sample_period: \"1.s\" is not a duration (use e.g. 1s or 500ms)"},
	    {"sample_period = 50ms", "sample_period: 50ms is out of range (100ms to 60s)"},
	    {"sample_period = 99999999999999999s",
	     "sample_period: 99999999999999999s is out of range (100ms to 60s)"},
	    {"sample_period = 0.0000000001s",
	     "sample_period: \"0.0000000001s\" is not a duration (use e.g. 1s or 500ms)"},
	    {"rebalance_period = 11min",
	     "rebalance_period: 11min is out of range (100ms to 600s, and at least sample_period)"},
	    {"socket_mode = 660", "socket_mode: \"660\" is not an octal mode (use e.g. 0660)"},
	    {"socket_mode = 0680", "socket_mode: \"0680\" is not an octal mode (use e.g. 0660)"},
	    {"socket_mode = 01777", "socket_mode: 01777 is out of range (0000 to 0777)"},
	    {"restore_on_exit = maybe",
	     "restore_on_exit: \"maybe\" is not a boolean (use yes or no)"},
	    {"restore_on_exit = YES", "restore_on_exit: \"YES\" is not a boolean (use yes or no)"},
	    {"log_level = loud", "log_level: \"loud\" is not one of: error, warning, info, debug"},
	    {"log_target = syslog", "log_target: \"syslog\" is not one of: auto, stderr, journal"},
	    {"default_mode = on",
	     "default_mode: \"on\" is not one of: auto, advisory, manual, off"},
	    {"socket = run/vnumad.sock", "socket: \"run/vnumad.sock\" is not an absolute path"},
	    {"state_file = state.json", "state_file: \"state.json\" is not an absolute path"},
	    {"state_file = /var/lib/vnumad/",
	     "state_file: \"/var/lib/vnumad/\" names a directory, not a file"},
	    {"state_file = \"/var/lib/\tx\"",
	     "state_file: \"/var/lib/\\x09x\" contains a control character"},
	    {"socket = \"/run/x", "socket: missing closing '\"'"},
	    {"socket = \"/run/x\" y", "socket: unexpected text after the closing '\"'"},
	    {"control_group = Wheel",
	     "control_group: \"Wheel\" is not a group name (use [a-z_][a-z0-9_-]*, at most 32 "
	     "characters)"},
	    {"control_group = 9lives",
	     "control_group: \"9lives\" is not a group name (use [a-z_][a-z0-9_-]*, at most 32 "
	     "characters)"},
	    {"migrate_rate = fast",
	     "migrate_rate: 'fast' is not a rate (a size per second, e.g. 256MiB/s)"},
	    {"migrate_rate = 100",
	     "migrate_rate: '100' has no unit (a rate is a size per second, e.g. 256MiB/s)"},
	    {"migrate_rate = 100MB/s", "migrate_rate: '100MB/s': 'MB' is ambiguous (1000 or "
	                               "1024?); say MiB or M, both binary"},
	    {"migrate_rate = 100/s",
	     "migrate_rate: '100/s' has no unit (use B, K, M, G or T, e.g. 512M)"},
	    {"migrate_rate = 0MiB/s", "migrate_rate: 0MiB/s is out of range (2MiB/s to 1024GiB/s)"},
	    {"migrate_rate = 0.000000001KiB/s",
	     "migrate_rate: 0.000000001KiB/s is out of range (2MiB/s to 1024GiB/s)"},
	    {"migrate_rate = 512KiB/s",
	     "migrate_rate: 512KiB/s is out of range (2MiB/s to 1024GiB/s)"},
	    {"migrate_rate = 2047KiB/s",
	     "migrate_rate: 2047KiB/s is out of range (2MiB/s to 1024GiB/s)"},
	    {"migrate_rate = 2097151B/s", /* a byte short */
	     "migrate_rate: 2097151B/s is out of range (2MiB/s to 1024GiB/s)"},
	    {"migrate_rate = 2048GiB/s",
	     "migrate_rate: 2048GiB/s is out of range (2MiB/s to 1024GiB/s)"},
	};
	char text[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* Put the bad line third, after a comment and a blank line. */
		snprintf(text, sizeof(text), "# comment\n\n%s\n# end\n", cases[i].text);
		expect_error_str(text, 3, cases[i].want);
	}
}

/* A long offending value is quoted cut short, and control bytes are escaped. */
static void
test_value_quoting(void **state)
{
	expect_error_str(
	    "log_level = aaaaaaaaaabbbbbbbbbbccccccccccddddddddddeeeeeeeeee\n", 1,
	    "log_level: \"aaaaaaaaaabbbbbbbbbbccccccccccdddddddddd...\" is not one of: "
	    "error, warning, info, debug");
	/* Cut between UTF-8 characters (2 bytes each here), not inside one. */
	expect_error_str(
	    "log_level = "
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\n",
	    1,
	    "log_level: \""
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "...\" is not one of: error, warning, info, debug");
	expect_error_str("log_level = \"a\\\"\n", 1,
	                 "log_level: \"a\\\\\" is not one of: error, warning, info, debug");
}

static void
test_duplicate_key(void **state)
{
	expect_error_str("socket = /run/a.sock\n# again:\nsocket = /run/b.sock\n", 3,
	                 "socket: set twice (first on line 1)");
	/* A duplicate is reported even when the first value was bad (that is reported too). */
	expect_error_str("\nlog_level = info\nlog_level = debug\n", 3,
	                 "log_level: set twice (first on line 2)");
}

static void
test_cross_key(void **state)
{
	struct config cfg;

	expect_error_str("rebalance_period = 500ms\n", 1,
	                 "rebalance_period: 500ms is shorter than sample_period (1s, the default)");
	expect_error_str("sample_period = 3s\n", 1,
	                 "sample_period: 3s is longer than rebalance_period (2s, the default)");
	expect_error_str("rebalance_period = 1s\n\nsample_period = 1.5s\n", 3,
	                 "sample_period: 1.5s is longer than rebalance_period (1s, line 1)");
	expect_error_str("sample_period = 5s\nrebalance_period = 4s\n", 2,
	                 "rebalance_period: 4s is shorter than sample_period (5s, line 1)");
	expect_ok("sample_period = 5s\nrebalance_period = 5s\n", &cfg);
	/* A bad period is reported once, not again by the cross-check. */
	expect_error_str("sample_period = 90s\n", 1,
	                 "sample_period: 90s is out of range (100ms to 60s)");
}

static void
test_overlong_line(void **state)
{
	size_t len = 5000, pre;
	char *text = malloc(len + 32);

	assert_non_null(text);
	snprintf(text, len + 32, "log_level = info\nsocket = /");
	pre = strlen(text);
	memset(text + pre, 'a', len);
	text[pre + len] = '\0';
	expect_one_error(text, strlen(text), 2, "line too long (more than 4096 bytes)");
	/* Exactly 4096 bytes is still read (and here reported for what it says). */
	snprintf(text, len + 32, "socket = /");
	memset(text + 10, 'a', 4096 - 10);
	text[4096] = '\0';
	expect_one_error(text, strlen(text), 1,
	                 "socket: path is too long (4087 bytes; at most 107 bytes, a Unix socket "
	                 "address limit)");
	free(text);
}

static void
test_nul_byte(void **state)
{
	static const char text[] =
	    "log_level = info\nsocket = /run/a\0b.sock\nsocket_mode = 0600\n";

	expect_one_error(text, sizeof(text) - 1, 2, "line contains a NUL byte");
}

/* Every error of the file is reported, in order, each with its own line. */
static void
test_many_errors(void **state)
{
	static const char text[] = "sample_period = 2s\n"
	                           "colour = blue\n"
	                           "socket_mode = 0600\n"
	                           "log_level = loud\n"
	                           "restore_on_exit\n"
	                           "\n"
	                           "sample_period = 3s\n"
	                           "migrate_rate = 5\n";
	struct config cfg;
	char err[2048], want[2048];

	assert_int_equal(load_text(text, strlen(text), &cfg, err, sizeof(err)), -EINVAL);
	snprintf(
	    want, sizeof(want),
	    "%1$s:2: unknown key \"colour\"\n"
	    "%1$s:4: log_level: \"loud\" is not one of: error, warning, info, debug\n"
	    "%1$s:5: \"restore_on_exit\": missing '=' (expected key = value)\n"
	    "%1$s:7: sample_period: set twice (first on line 1)\n"
	    "%1$s:8: migrate_rate: '5' has no unit (a rate is a size per second, e.g. 256MiB/s)\n",
	    cfg_path);
	assert_string_equal(err, want);
	assert_untouched(&cfg);
}

/* The cross-key check runs after the last line, yet its error is listed in line order. */
static void
test_errors_in_line_order(void **state)
{
	static const char text[] = "rebalance_period = 500ms\n"
	                           "colour = blue\n";
	struct config cfg;
	char err[1024], want[1024];

	assert_int_equal(load_text(text, strlen(text), &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want),
	         "%1$s:1: rebalance_period: 500ms is shorter than sample_period (1s, the default)\n"
	         "%1$s:2: unknown key \"colour\"\n",
	         cfg_path);
	assert_string_equal(err, want);
	assert_untouched(&cfg);
}

/* A small buffer gets whole lines and a count of what did not fit, never an overflow. */
static void
test_error_truncation(void **state)
{
	char text[4096], err[400], *p;
	size_t off = 0;
	int shown = 0, more = 0;
	struct config cfg;

	for (int i = 0; i < 50; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "key%d = 1\n", i);
	assert_int_equal(load_text(text, off, &cfg, err, sizeof(err)), -EINVAL);
	assert_true(strlen(err) < sizeof(err));
	for (p = err; (p = strstr(p, "unknown key")) != NULL; p++)
		shown++;
	p = strrchr(err, '(');
	assert_non_null(p);
	assert_int_equal(sscanf(p, "(%d more errors not shown)", &more), 1);
	assert_true(shown > 0);
	assert_int_equal(shown + more, 50);
	assert_int_equal(err[strlen(err) - 1], '\n');
	/* A tiny buffer holds the start of the first message, NUL-terminated. */
	assert_int_equal(load_text(text, off, &cfg, err, 8), -EINVAL);
	assert_int_equal(strlen(err), 7);
	assert_memory_equal(err, cfg_path, 7);
	assert_int_equal(load_text(text, off, &cfg, NULL, 0), -EINVAL);
}

static void
test_missing_file(void **state)
{
	struct config cfg;
	char path[256], err[512], want[512];

	snprintf(path, sizeof(path), "%s/nonexistent.conf", tmpdir);
	memset(&cfg, SENTINEL, sizeof(cfg));
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot read: %s\n", path, strerror(ENOENT));
	assert_string_equal(err, want);
	assert_untouched(&cfg);
	/* A directory cannot be read as a file either. */
	assert_int_equal(config_load(tmpdir, &cfg, err, sizeof(err)), -EISDIR);
	assert_untouched(&cfg);
}

/* The mode names follow enum vm_policy_mode, as vm_policy.c names them. */
static void
test_mode_names_match_policy(void **state)
{
	static const enum vm_policy_mode modes[] = {VM_POLICY_MODE_AUTO, VM_POLICY_MODE_ADVISORY,
	                                            VM_POLICY_MODE_MANUAL, VM_POLICY_MODE_OFF};
	struct config cfg;
	char text[64];

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(text, sizeof(text), "default_mode = %s\n", vm_policy_mode_name(modes[i]));
		expect_ok(text, &cfg);
		assert_int_equal(cfg.default_mode, modes[i]);
	}
}

static char *
read_source_file(const char *rel)
{
	const char *src = getenv("VNUMAD_SRCDIR");
	char path[1024];
	FILE *f;
	char *buf;
	long len;

	if (src == NULL)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	f = fopen(path, "r");
	if (f == NULL)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return buf;
}

/*
 * packaging/vnumad.conf lists every key commented out at its default ("#key = value"): with
 * those lines uncommented it must parse to exactly the defaults.  The man page has an entry
 * for every key.
 */
static void
test_shipped_files_agree(void **state)
{
	char *conf = read_source_file("packaging/vnumad.conf");
	char *man = read_source_file("docs/vnumad.conf.5");
	char *text, *out, entry[64];
	struct config cfg, def;

	if (conf == NULL || man == NULL)
		skip(); /* VNUMAD_SRCDIR is set by ctest */
	text = calloc(1, strlen(conf) + 2);
	assert_non_null(text);
	text[0] = '\n'; /* so that every line, the first too, follows a newline */
	out = text + 1;
	for (char *line = strtok(conf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' && strstr(line, " = "))
			out += sprintf(out, "%s\n", line + 1);
	}
	for (size_t i = 0; i < NR_KEYS; i++) {
		snprintf(entry, sizeof(entry), "\n%s = ", all_keys[i]);
		if (strstr(text, entry) == NULL)
			fail_msg("packaging/vnumad.conf has no \"#%s = ...\" line", all_keys[i]);
		snprintf(entry, sizeof(entry), "\n.B %s\n", all_keys[i]);
		if (strstr(man, entry) == NULL)
			fail_msg("docs/vnumad.conf.5 has no \".B %s\" entry", all_keys[i]);
	}
	expect_ok(text, &cfg);
	config_defaults(&def);
	assert_config_equal(&cfg, &def);
	free(text);
	free(conf);
	free(man);
}

/*
 * Only a regular file is a config (host/fileio.c): a FIFO is refused at once, not waited on
 * forever in open() (as vnumad -n and a reload did), and so is a device; a symbolic link to a
 * regular file is read.  The alarm only turns a hang into a failure.
 */
static void
test_not_a_regular_file(void **state)
{
	const char *good = "sample_period = 3s\nrebalance_period = 3s\n";
	char fifo[192], link[192], err[512], want[512];
	struct config cfg;

	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", tmpdir);
	snprintf(link, sizeof(link), "%s/link.conf", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(HANG_S);
	assert_int_equal(config_load(fifo, &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: cannot read: not a regular file\n", fifo);
	assert_string_equal(err, want);
	assert_int_equal(config_load("/dev/null", &cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/dev/null: cannot read: not a regular file\n");
	/* through a link: to the FIFO refused, to a regular file read */
	assert_int_equal(symlink(fifo, link), 0);
	assert_int_equal(config_load(link, &cfg, err, sizeof(err)), -EINVAL);
	assert_int_equal(unlink(link), 0);
	write_file(cfg_path, good, strlen(good));
	assert_int_equal(symlink(cfg_path, link), 0);
	if (config_load(link, &cfg, err, sizeof(err)) != 0)
		fail_msg("a link to a regular file: %s", err);
	assert_true(cfg.sample_period_s == 3.0);
	alarm(0);
	unlink(link);
	unlink(fifo);
}

int
main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_units_and_spellings),
		cmocka_unit_test(test_socket_path_limit),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_value_quoting),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_cross_key),
		cmocka_unit_test(test_overlong_line),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_many_errors),
		cmocka_unit_test(test_errors_in_line_order),
		cmocka_unit_test(test_error_truncation),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_not_a_regular_file),
		cmocka_unit_test(test_mode_names_match_policy),
		cmocka_unit_test(test_shipped_files_agree),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

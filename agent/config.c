/*
 * config.c - the daemon's configuration file (config.h).
 *
 * One table, config_keys[], has a row per key: its name, value type, bounds, default (written
 * as it would appear in the file), setter and a one-line description.  Defaults go through the
 * same parser as the file, so the table cannot disagree with itself; docs/vnumad.conf.5 and
 * packaging/vnumad.conf repeat the table for people (test_config.c checks that they agree).
 *
 * Syntax: one "key = value" per line; blank lines and lines starting with '#' are ignored, as
 * is a '#' that follows whitespace and everything after it.  Whitespace around keys and values
 * is ignored.  A value may be written in double quotes to keep '#' or surrounding spaces; there
 * are no escapes, so a quoted value cannot contain '"'.
 *
 * Every line of the file is checked, every error is reported ("PATH:LINE: message\n" each) and
 * nothing of a file with an error is used: the caller's struct is written only on success.
 *
 * The value parsers, one per type of row, are in config_value.c; config_internal.h holds the
 * row and value types both files use.
 */
#include "host/fileio.h"
#include "agent/config.h"
#include "agent/config_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/log.h"
#include "policy/util.h"

/* Longest line accepted, in bytes without the newline: far above any real line (a path is
 * the longest value), low enough that a corrupt or binary file is reported, not parsed. */
#define CONFIG_LINE_MAX 4096

/* Largest file read, in bytes.  The installed file with every comment is about 3 KiB. */
#define CONFIG_FILE_MAX_BYTES (1024 * 1024)

/* Errors kept for the report; a file with more is hopeless and the rest are only counted. */
#define CONFIG_ERRORS_KEPT 1000

/* Bytes kept free at the end of err for the "(N more errors not shown)" line. */
#define CONFIG_ERR_RESERVE 40

/* Longest group name, in bytes: the limit of Linux's groupadd. */
#define CONFIG_GROUP_NAME_MAX 32

/* Longest state_file path, in bytes: leaves room in a PATH_MAX buffer for the ".tmp" and
 * ".lock" siblings state.c derives from it; real paths are far shorter. */
#define CONFIG_STATE_PATH_MAX 1024

/* Longest socket path, in bytes: sun_path of a sockaddr_un holds 108 bytes with the NUL. */
#define CONFIG_SOCKET_PATH_MAX 107

#define STR_(x) #x
#define STR(x)  STR_(x)

enum config_key_id {
	KEY_SAMPLE_PERIOD = 0,
	KEY_REBALANCE_PERIOD,
	KEY_SOCKET,
	KEY_SOCKET_MODE,
	KEY_CONTROL_GROUP,
	KEY_STATE_FILE,
	KEY_RESTORE_ON_EXIT,
	KEY_LOG_LEVEL,
	KEY_LOG_TARGET,
	KEY_MIGRATE_RATE,
	KEY_DEFAULT_MODE,
	KEY_POLICY_DIR,
	KEY_OBSERVE_CPU_CAP,
	KEY_SCAN_CONTROL,
	KEY_METRICS_LISTEN,
	KEY_METRICS_TEXTFILE,
	CONFIG_NR_KEYS,
};

/* ---- setters: one per key, each stores one parsed value -------------------------------------- */

static const char *const log_level_names[] = {"error", "warning", "info", "debug", NULL};
static const char *const log_target_names[] = {"auto", "stderr", "journal", NULL};
/* In the order of enum vm_policy_mode (test_config.c checks against vm_policy_mode_name). */
static const char *const mode_names[] = {"auto", "advisory", "manual", "off", NULL};

/* Setters that copy one member of the parsed value into one field. */
#define CONFIG_SET_FIELD(fn, field, member)                                                        \
	static void fn(struct config *cfg, const union config_value *v)                            \
	{                                                                                          \
		cfg->field = v->member;                                                            \
	}
#define CONFIG_SET_STRING(fn, field)                                                               \
	static void fn(struct config *cfg, const union config_value *v)                            \
	{                                                                                          \
		snprintf(cfg->field, sizeof(cfg->field), "%s", v->str);                            \
	}

CONFIG_SET_FIELD(set_sample_period, sample_period_s, num)
CONFIG_SET_FIELD(set_rebalance_period, rebalance_period_s, num)
CONFIG_SET_STRING(set_socket, socket_path)
CONFIG_SET_FIELD(set_socket_mode, socket_mode, mode)
CONFIG_SET_STRING(set_control_group, control_group)
CONFIG_SET_STRING(set_state_file, state_file)
CONFIG_SET_STRING(set_policy_dir, policy_dir)
CONFIG_SET_FIELD(set_restore_on_exit, restore_on_exit, yes)
CONFIG_SET_FIELD(set_migrate_rate, migrate_rate_mib_s, num)
CONFIG_SET_FIELD(set_observe_cpu_cap, observe_cpu_cap_percent, num)
CONFIG_SET_FIELD(set_scan_control, scan_control, yes)
CONFIG_SET_STRING(set_metrics_listen, metrics_listen)
CONFIG_SET_STRING(set_metrics_textfile, metrics_textfile)

static void
set_log_level(struct config *cfg, const union config_value *v)
{
	cfg->log_level = log_level_parse(log_level_names[v->choice]);
}

static void
set_log_target(struct config *cfg, const union config_value *v)
{
	static const enum log_target targets[] = {LOG_TARGET_AUTO, LOG_TARGET_STDERR,
	                                          LOG_TARGET_JOURNAL};

	cfg->log_target = targets[v->choice];
}

static void
set_default_mode(struct config *cfg, const union config_value *v)
{
	cfg->default_mode = (enum vm_policy_mode)v->choice;
}

/* ---- the table ------------------------------------------------------------------------------- */

/* One row per key reads better than the formatter's one field per line. */
/* clang-format off */
static const struct config_key config_keys[CONFIG_NR_KEYS] = {
	[KEY_SAMPLE_PERIOD] = {
		.name = "sample_period", .type = CONFIG_DURATION, .min = 0.1, .max = 60,
		.range = "100ms to 60s", .def = "1s", .set = set_sample_period,
		.doc = "how often the host is observed (fault statistics, vCPU placement)"},
	[KEY_REBALANCE_PERIOD] = {
		.name = "rebalance_period", .type = CONFIG_DURATION, .min = 0.1, .max = 600,
		.range = "100ms to 600s, and at least sample_period", .def = "2s",
		.set = set_rebalance_period,
		.doc = "how often the policy engine decides (at least sample_period)"},
	[KEY_SOCKET] = {
		.name = "socket", .type = CONFIG_PATH, .max_len = CONFIG_SOCKET_PATH_MAX,
		.range = "at most " STR(CONFIG_SOCKET_PATH_MAX) " bytes, a Unix socket address limit",
		.def = "/run/vnumad/vnumad.sock", .set = set_socket,
		.doc = "the control socket vnumactl talks to"},
	[KEY_SOCKET_MODE] = {
		.name = "socket_mode", .type = CONFIG_MODE, .min = 0, .max = 0777,
		.range = "0000 to 0777", .def = "0660", .set = set_socket_mode,
		.doc = "permission bits of the control socket (octal)"},
	[KEY_CONTROL_GROUP] = {
		.name = "control_group", .type = CONFIG_GROUP, .max_len = CONFIG_GROUP_NAME_MAX,
		.empty_ok = true, .def = "", .set = set_control_group,
		.doc = "group of the socket, whose members may change things (empty: root only)"},
	[KEY_STATE_FILE] = {
		.name = "state_file", .type = CONFIG_PATH, .max_len = CONFIG_STATE_PATH_MAX,
		.range = "at most " STR(CONFIG_STATE_PATH_MAX) " bytes",
		.def = "/var/lib/vnumad/state.json", .set = set_state_file,
		.doc = "where the original affinity of every vCPU vnumad moved is kept"},
	[KEY_RESTORE_ON_EXIT] = {
		.name = "restore_on_exit", .type = CONFIG_BOOL, .def = "yes",
		.set = set_restore_on_exit,
		.doc = "put vCPUs back to their original affinity when vnumad stops"},
	[KEY_LOG_LEVEL] = {
		.name = "log_level", .type = CONFIG_ENUM, .choices = log_level_names,
		.def = "info", .set = set_log_level,
		.doc = "least important messages logged"},
	[KEY_LOG_TARGET] = {
		.name = "log_target", .type = CONFIG_ENUM, .choices = log_target_names,
		.def = "auto", .set = set_log_target,
		.doc = "journal (syslog-level prefixes), stderr, or auto-detect"},
	[KEY_MIGRATE_RATE] = {
		.name = "migrate_rate", .type = CONFIG_RATE, .min = VM_POLICY_RATE_MIN_KIB_S / 1024,
		.max = 1024 * 1024, .range = "2MiB/s to 1024GiB/s", .def = "1024MiB/s",
		.set = set_migrate_rate,
		.doc = "host-wide cap on guest memory moved between nodes"},
	[KEY_DEFAULT_MODE] = {
		.name = "default_mode", .type = CONFIG_ENUM, .choices = mode_names,
		.def = "auto", .set = set_default_mode,
		.doc = "mode of a VM without a per-VM policy"},
	[KEY_POLICY_DIR] = {
		.name = "policy_dir", .type = CONFIG_PATH, .max_len = CONFIG_STATE_PATH_MAX,
		.range = "at most " STR(CONFIG_STATE_PATH_MAX) " bytes",
		.def = "/etc/vnumad/policy.d", .set = set_policy_dir,
		.doc = "per-VM policy files NAME.xml, for VMs whose host holds no policy"},
	[KEY_OBSERVE_CPU_CAP] = {
		.name = "observe_cpu_cap", .type = CONFIG_PERCENT, .min = 0, .max = 100,
		.range = "0% (no cap) to 100%", .def = "0.5%", .set = set_observe_cpu_cap,
		.doc = "CPU observing VMs may use, percent of one CPU (--host linux); settled VMs "
		       "are read less often to stay under it"},
	/*
	 * Off by default: the tunables are host-wide and steer the scan of every process, not
	 * only of the VMs, through a debugging interface; an admin opts in.
	 */
	[KEY_SCAN_CONTROL] = {
		.name = "scan_control", .type = CONFIG_BOOL, .def = "no",
		.set = set_scan_control,
		.doc = "slow the kernel's host-wide NUMA scan while every VM is settled (the "
		       "admin's values back when one is not, and at exit)"},
	/*
	 * Off by default, and loopback when only a port is given: an address on every
	 * interface (0.0.0.0:PORT, [::]:PORT) exposes the VMs' names to the network.
	 */
	[KEY_METRICS_LISTEN] = {
		.name = "metrics_listen", .type = CONFIG_LISTEN, .empty_ok = true, .def = "",
		.set = set_metrics_listen,
		.doc = "serve Prometheus metrics at http://ADDRESS:PORT/metrics (PORT alone: "
		       "127.0.0.1; empty: off)"},
	[KEY_METRICS_TEXTFILE] = {
		.name = "metrics_textfile", .type = CONFIG_PATH, .max_len = CONFIG_STATE_PATH_MAX,
		.range = "at most " STR(CONFIG_STATE_PATH_MAX) " bytes", .empty_ok = true,
		.def = "", .set = set_metrics_textfile,
		.doc = "write the same metrics to this file every round, for node_exporter's "
		       "textfile collector (empty: off)"},
};
/* clang-format on */

/* ---- error collection ------------------------------------------------------------------------ */

/* One error, kept until the end so that all of them can be reported in line order. */
struct config_error {
	int line; /* 0: about the file as a whole */
	int seq;  /* order of discovery, for errors on one line */
	char *text;
};

struct config_parse {
	const char *path;
	struct config cfg;           /* the working copy, copied out only on success */
	int line_of[CONFIG_NR_KEYS]; /* line where each key was set; 0 = not set */
	bool valid[CONFIG_NR_KEYS];  /* that line's value was accepted */
	struct config_error *errors; /* the first CONFIG_ERRORS_KEPT errors found */
	size_t nr_kept, cap_kept;
	int nr_errors; /* errors found */
	char *err;     /* the caller's buffer (may be NULL) */
	size_t errlen, err_used;
	int nr_dropped; /* errors left out of err for lack of room */
};

/*
 * Append text to the caller's buffer if it fits whole (keeping CONFIG_ERR_RESERVE bytes for
 * the closing count); the very first message is cut to fit rather than dropped.
 */
static void
config_err_append(struct config_parse *cp, const char *text)
{
	size_t n = strlen(text), room, reserve;

	if (cp->err == NULL || cp->errlen == 0)
		return;
	room = cp->errlen - 1 - cp->err_used;
	reserve = cp->errlen > 4 * CONFIG_ERR_RESERVE ? CONFIG_ERR_RESERVE : 0;
	if (cp->err_used == 0 && cp->nr_dropped == 0) {
		n = n < room ? n : room;
		memcpy(cp->err, text, n);
		cp->err[n] = '\0';
		cp->err_used = n;
		if (n < strlen(text))
			cp->nr_dropped++; /* nothing else fits after a cut message */
		return;
	}
	if (cp->nr_dropped == 0 && n + reserve <= room) {
		memcpy(cp->err + cp->err_used, text, n + 1);
		cp->err_used += n;
		return;
	}
	cp->nr_dropped++;
}

static void config_err(struct config_parse *cp, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report one error: "PATH:LINE: message\n" (line 0: "PATH: message\n"). */
static void
config_err(struct config_parse *cp, int line, const char *fmt, ...)
{
	struct util_buf buf = {0};
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		util_buf_printf(&buf, "%s:%d: %s\n", cp->path, line, msg);
	else
		util_buf_printf(&buf, "%s: %s\n", cp->path, msg);
	if (cp->nr_kept == CONFIG_ERRORS_KEPT) {
		free(buf.data);
	} else {
		util_array_reserve((void **)&cp->errors, &cp->cap_kept, cp->nr_kept + 1,
		                   sizeof(*cp->errors));
		cp->errors[cp->nr_kept++] = (struct config_error){line, cp->nr_errors, buf.data};
	}
	cp->nr_errors++;
}

static int
config_error_cmp(const void *a, const void *b)
{
	const struct config_error *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Write the errors into the caller's buffer in line order, then the count of any left out. */
static void
config_err_finish(struct config_parse *cp)
{
	char tail[CONFIG_ERR_RESERVE];

	if (cp->nr_kept > 1)
		qsort(cp->errors, cp->nr_kept, sizeof(*cp->errors), config_error_cmp);
	for (size_t i = 0; i < cp->nr_kept; i++) {
		config_err_append(cp, cp->errors[i].text);
		free(cp->errors[i].text);
	}
	free(cp->errors);
	cp->errors = NULL;
	cp->nr_dropped += cp->nr_errors - (int)cp->nr_kept;
	if (cp->err == NULL || cp->errlen == 0 || cp->nr_dropped == 0)
		return;
	snprintf(tail, sizeof(tail), "(%d more errors not shown)\n", cp->nr_dropped);
	if (strlen(tail) < cp->errlen - cp->err_used)
		memcpy(cp->err + cp->err_used, tail, strlen(tail) + 1);
}

/* ---- applying values (the parsers are in config_value.c) ------------------------------------- */

/* Parse text as row's value and store it in cfg; -EINVAL with a message in msg. */
static int
config_key_apply(const struct config_key *row, const char *text, struct config *cfg, char *msg,
                 size_t msglen)
{
	union config_value v = {0};

	if (text[0] == '\0') {
		if (!row->empty_ok) {
			snprintf(msg, msglen, "empty value");
			return -EINVAL;
		}
		v.str = text;
	} else if (config_value_parse(row, text, &v, msg, msglen) < 0) {
		return -EINVAL;
	}
	row->set(cfg, &v);
	return 0;
}

void
config_defaults(struct config *cfg)
{
	char msg[256];

	memset(cfg, 0, sizeof(*cfg));
	for (int i = 0; i < CONFIG_NR_KEYS; i++) {
		/* A default that does not parse is a bug in the table: test_config.c catches it. */
		if (config_key_apply(&config_keys[i], config_keys[i].def, cfg, msg, sizeof(msg)) <
		    0)
			abort();
	}
}

/* ---- lines ----------------------------------------------------------------------------------- */

static int
config_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static char *
config_skip_space(char *s)
{
	while (config_is_space(*s))
		s++;
	return s;
}

static void
config_trim_right(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && config_is_space(s[n - 1]))
		s[--n] = '\0';
}

/*
 * Find the value in s (the text after '='): a double-quoted string, or the text up to a '#'
 * that starts the value or follows whitespace, trimmed.  Returns 0, or -EINVAL with *why.
 */
static int
config_value_split(char *s, char **value, const char **why)
{
	char *end, *p;

	s = config_skip_space(s);
	if (*s == '"') {
		end = strchr(s + 1, '"');
		if (end == NULL) {
			*why = "missing closing '\"'";
			return -EINVAL;
		}
		*end = '\0';
		p = config_skip_space(end + 1);
		if (*p != '\0' && *p != '#') {
			*why = "unexpected text after the closing '\"'";
			return -EINVAL;
		}
		*value = s + 1;
		return 0;
	}
	for (p = s; *p != '\0'; p++) {
		if (*p == '#' && (p == s || config_is_space(p[-1]))) {
			*p = '\0';
			break;
		}
	}
	config_trim_right(s);
	*value = s;
	return 0;
}

static const struct config_key *
config_key_find(const char *name)
{
	for (int i = 0; i < CONFIG_NR_KEYS; i++) {
		if (strcmp(config_keys[i].name, name) == 0)
			return &config_keys[i];
	}
	return NULL;
}

/* Parse one line (NUL-terminated, no newline, no NUL inside). */
static void
config_line_parse(struct config_parse *cp, char *line, int line_no)
{
	char q[QUOTE_BUF], msg[512], *key, *eq, *value;
	const struct config_key *row;
	const char *why;
	int id;

	key = config_skip_space(line);
	if (*key == '\0' || *key == '#')
		return;
	eq = strchr(key, '=');
	if (eq == NULL) {
		config_trim_right(key);
		config_err(cp, line_no, "\"%s\": missing '=' (expected key = value)",
		           config_quote(key, q, sizeof(q)));
		return;
	}
	*eq = '\0';
	config_trim_right(key);
	if (*key == '\0') {
		config_err(cp, line_no, "missing key before '='");
		return;
	}
	row = config_key_find(key);
	if (row == NULL) {
		config_err(cp, line_no, "unknown key \"%s\"", config_quote(key, q, sizeof(q)));
		return;
	}
	if (config_value_split(eq + 1, &value, &why) < 0) {
		config_err(cp, line_no, "%s: %s", row->name, why);
		return;
	}
	id = (int)(row - config_keys);
	if (cp->line_of[id] != 0) {
		config_err(cp, line_no, "%s: set twice (first on line %d)", row->name,
		           cp->line_of[id]);
		return;
	}
	cp->line_of[id] = line_no;
	if (config_key_apply(row, value, &cp->cfg, msg, sizeof(msg)) < 0) {
		config_err(cp, line_no, "%s: %s", row->name, msg);
		return;
	}
	cp->valid[id] = true;
}

/* "1s", "500ms": a duration in seconds as the file would say it, for messages. */
static const char *
config_duration_format(double s, char *buf, size_t len)
{
	if (s < 1)
		snprintf(buf, len, "%.6gms", s * 1000);
	else
		snprintf(buf, len, "%.6gs", s);
	return buf;
}

/*
 * rebalance_period must not be shorter than sample_period: the engine decides on samples.  The
 * error goes on the line of whichever of the two keys comes later in the file.
 */
static void
config_periods_check(struct config_parse *cp)
{
	int ls = cp->line_of[KEY_SAMPLE_PERIOD], lr = cp->line_of[KEY_REBALANCE_PERIOD];
	char sample[32], rebal[32], where[32];

	if ((ls && !cp->valid[KEY_SAMPLE_PERIOD]) || (lr && !cp->valid[KEY_REBALANCE_PERIOD]))
		return; /* already reported */
	if (cp->cfg.rebalance_period_s >= cp->cfg.sample_period_s)
		return;
	config_duration_format(cp->cfg.sample_period_s, sample, sizeof(sample));
	config_duration_format(cp->cfg.rebalance_period_s, rebal, sizeof(rebal));
	snprintf(where, sizeof(where), "line %d", lr > ls ? ls : lr);
	if (lr > ls)
		config_err(cp, lr, "rebalance_period: %s is shorter than sample_period (%s, %s)",
		           rebal, sample, ls ? where : "the default");
	else
		config_err(cp, ls, "sample_period: %s is longer than rebalance_period (%s, %s)",
		           sample, rebal, lr ? where : "the default");
}

/* Split data into lines and parse each; over-long lines and NUL bytes are errors. */
static void
config_text_parse(struct config_parse *cp, const char *data, size_t len)
{
	char *line = xmalloc(CONFIG_LINE_MAX + 1);
	size_t start = 0;
	int line_no = 0;

	if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
		start = 3; /* a UTF-8 byte order mark some editors write */

	while (start < len) {
		const char *nl = memchr(data + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - data) : len;

		line_no++;
		if (end - start > CONFIG_LINE_MAX) {
			config_err(cp, line_no, "line too long (more than %d bytes)",
			           CONFIG_LINE_MAX);
		} else if (memchr(data + start, '\0', end - start) != NULL) {
			config_err(cp, line_no, "line contains a NUL byte");
		} else {
			memcpy(line, data + start, end - start);
			line[end - start] = '\0';
			config_line_parse(cp, line, line_no);
		}
		start = end + 1;
	}
	free(line);
}

/* Read the whole file (at most CONFIG_FILE_MAX_BYTES) into a malloc'd buffer. */
static int
config_file_read(const char *path, char **data_out, size_t *len_out)
{
	return fileio_read(path, CONFIG_FILE_MAX_BYTES, data_out, len_out);
}

int
config_load(const char *path, struct config *cfg, char *err, size_t errlen)
{
	struct config_parse *cp = xcalloc(1, sizeof(*cp));
	char *data = NULL;
	size_t len = 0;
	int rc;

	if (path == NULL)
		path = CONFIG_DEFAULT_PATH;
	cp->path = path;
	cp->err = err;
	cp->errlen = errlen;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	config_defaults(&cp->cfg);
	if (strlen(path) >= sizeof(cp->cfg.path)) {
		rc = -ENAMETOOLONG;
		config_err(cp, 0, "path too long");
		goto out;
	}
	rc = config_file_read(path, &data, &len);
	if (rc < 0) {
		if (rc == -EFBIG)
			config_err(cp, 0, "file too large (more than %d bytes)",
			           CONFIG_FILE_MAX_BYTES);
		else
			config_err(cp, 0, "cannot read: %s", fileio_strerror(rc));
		goto out;
	}
	config_text_parse(cp, data, len);
	config_periods_check(cp);
	if (cp->nr_errors > 0) {
		rc = -EINVAL;
		goto out;
	}
	snprintf(cp->cfg.path, sizeof(cp->cfg.path), "%s", path);
	cp->cfg.control_group_line = cp->line_of[KEY_CONTROL_GROUP];
	*cfg = cp->cfg;
out:
	config_err_finish(cp);
	free(data);
	free(cp);
	return rc;
}

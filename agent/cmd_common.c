/*
 * cmd_common.c - calls to vnumad, error reporting, argument checks and column rendering
 * shared by vnumactl's daemon commands.
 */
#include "agent/cmd_common.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/client.h"
#include "agent/format.h"
#include "agent/proto.h"
#include "policy/units.h"

#define CMD_ERR_MAX  1024 /* bytes of an error message from the client or the daemon */
#define CMD_PATH_MAX 64   /* longest key path ("sampling.fault-stats") */

/* ---- reading reply data ----------------------------------------------------------------- */

struct json_object *
cmd_json_get(struct json_object *obj, const char *path)
{
	char key[CMD_PATH_MAX];
	const char *p = path;

	while (obj != NULL) {
		size_t len = strcspn(p, ".");
		struct json_object *v = NULL;

		if (!json_object_is_type(obj, json_type_object) || len >= sizeof(key))
			return NULL;
		memcpy(key, p, len);
		key[len] = '\0';
		if (!json_object_object_get_ex(obj, key, &v))
			return NULL;
		obj = v;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	return obj;
}

const char *
cmd_json_string(struct json_object *obj, const char *path, const char *fallback)
{
	struct json_object *v = cmd_json_get(obj, path);

	return v != NULL && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
	                                                             : fallback;
}

static bool
cmd_json_is_number(struct json_object *v)
{
	return v != NULL &&
	       (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

double
cmd_json_double(struct json_object *obj, const char *path, double fallback)
{
	struct json_object *v = cmd_json_get(obj, path);

	return cmd_json_is_number(v) ? json_object_get_double(v) : fallback;
}

int64_t
cmd_json_int(struct json_object *obj, const char *path, int64_t fallback)
{
	struct json_object *v = cmd_json_get(obj, path);

	return cmd_json_is_number(v) ? json_object_get_int64(v) : fallback;
}

struct json_object *
cmd_json_array(struct json_object *obj, const char *path)
{
	struct json_object *v = cmd_json_get(obj, path);

	return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

/* ---- rendering -------------------------------------------------------------------------- */

/* A fixed-point number without "-0.0". */
static void
cmd_fixed_print(char *text, size_t len, double d, int decimals)
{
	snprintf(text, len, "%.*f", decimals, d);
	if (strspn(text, "-0.") == strlen(text))
		snprintf(text, len, "%.*f", decimals, 0.0);
}

/* Any JSON value as short text: the rule of CMD_CELL_TEXT. */
static void
cmd_value_print(struct json_object *v, char *text, size_t len)
{
	size_t used = 0;

	text[0] = '\0';
	switch (json_object_get_type(v)) {
	case json_type_null:
		snprintf(text, len, "-");
		break;
	case json_type_boolean:
		snprintf(text, len, "%s", json_object_get_boolean(v) ? "yes" : "no");
		break;
	case json_type_int:
		snprintf(text, len, "%" PRId64, json_object_get_int64(v));
		break;
	case json_type_double:
		snprintf(text, len, "%.6g", json_object_get_double(v));
		break;
	case json_type_string:
		snprintf(text, len, "%s",
		         json_object_get_string(v)[0] != '\0' ? json_object_get_string(v) : "-");
		break;
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v) && used + 1 < len; i++) {
			char item[CMD_TEXT_MAX];

			cmd_value_print(json_object_array_get_idx(v, i), item, sizeof(item));
			used += (size_t)snprintf(text + used, len - used, "%s%s", i > 0 ? "," : "",
			                         item);
		}
		break;
	case json_type_object: { /* the macro declares: C11 allows no declaration after a label */
		json_object_object_foreach(v, key, val)
		{
			char item[CMD_TEXT_MAX];

			if (used + 1 >= len)
				break;
			cmd_value_print(val, item, sizeof(item));
			used += (size_t)snprintf(text + used, len - used, "%s%s=%s",
			                         used > 0 ? "," : "", key, item);
		}
		break;
	}
	}
}

/* Epoch seconds as local time in journalctl's short form; "-" for what is no time. */
static void
cmd_wall_print(char *text, size_t len, double wall_s)
{
	time_t t = (time_t)wall_s;
	struct tm tm;

	if (wall_s <= 0 || localtime_r(&t, &tm) == NULL ||
	    strftime(text, len, "%b %d %H:%M:%S", &tm) == 0)
		snprintf(text, len, "-");
}

void
cmd_cell_format(const struct cmd_column *col, struct json_object *value, char *text, size_t len)
{
	if (value == NULL) {
		snprintf(text, len, "-");
		return;
	}
	if (col->cell == CMD_CELL_NODE && cmd_json_is_number(value) &&
	    json_object_get_int64(value) < 0) {
		snprintf(text, len, "%s", CMD_NONE_NODE);
		return;
	}
	if (col->cell == CMD_CELL_CAP && cmd_json_is_number(value) &&
	    json_object_get_int64(value) == 0) {
		snprintf(text, len, "%s", CMD_NONE_CAP);
		return;
	}
	if (col->cell == CMD_CELL_TEXT || col->cell == CMD_CELL_NODE || col->cell == CMD_CELL_CAP ||
	    !cmd_json_is_number(value)) {
		cmd_value_print(value, text, len);
		return;
	}
	if (col->cell == CMD_CELL_WALL)
		cmd_wall_print(text, len, json_object_get_double(value));
	else if (col->cell == CMD_CELL_GIB)
		cmd_fixed_print(text, len, json_object_get_double(value) / 1024.0, col->decimals);
	else
		cmd_fixed_print(text, len, json_object_get_double(value), col->decimals);
}

/* One display row: header -> cell text, for format_table_render. */
static struct json_object *
cmd_row_display(const struct cmd_column *cols, int nr_cols, struct json_object *record)
{
	struct json_object *row = json_object_new_object();

	if (row == NULL)
		abort(); /* json-c fails only on out-of-memory */
	for (int c = 0; c < nr_cols; c++) {
		char text[CMD_TEXT_MAX];

		cmd_cell_format(&cols[c], cmd_json_get(record, cols[c].key), text, sizeof(text));
		json_object_object_add(row, cols[c].header, json_object_new_string(text));
	}
	return row;
}

/* Drop the blanks format_table_render pads the last column with, from buf[start..]. */
static void
cmd_buf_rstrip_lines(struct util_buf *buf, size_t start)
{
	size_t out = start;

	for (size_t i = start; i < buf->len; i++) {
		while (buf->data[i] == '\n' && out > start && buf->data[out - 1] == ' ')
			out--;
		buf->data[out++] = buf->data[i];
	}
	if (buf->data != NULL)
		buf->data[out] = '\0';
	buf->len = out;
}

void
cmd_table_render(struct util_buf *buf, const struct cmd_column *cols, int nr_cols,
                 struct json_object *records)
{
	size_t start = buf->len;
	struct format_column *fcols = xcalloc((size_t)nr_cols, sizeof(*fcols));
	struct json_object *rows = json_object_new_array();
	size_t nr = records != NULL ? json_object_array_length(records) : 0;

	if (rows == NULL)
		abort();
	for (int c = 0; c < nr_cols; c++) {
		fcols[c].key = cols[c].header;
		fcols[c].kind = cols[c].numeric ? FORMAT_DOUBLE : FORMAT_STRING;
		fcols[c].in_table = true;
	}
	for (size_t r = 0; r < nr; r++)
		json_object_array_add(
		    rows, cmd_row_display(cols, nr_cols, json_object_array_get_idx(records, r)));
	format_table_render(buf, fcols, nr_cols, rows);
	cmd_buf_rstrip_lines(buf, start);
	json_object_put(rows);
	free(fcols);
}

void
cmd_fields_render(struct util_buf *buf, const struct cmd_column *cols, int nr_cols,
                  struct json_object *obj, int indent)
{
	int width = 0;

	for (int c = 0; c < nr_cols; c++)
		if ((int)strlen(cols[c].header) > width)
			width = (int)strlen(cols[c].header);
	for (int c = 0; c < nr_cols; c++) {
		char text[CMD_TEXT_MAX];

		cmd_cell_format(&cols[c], cmd_json_get(obj, cols[c].key), text, sizeof(text));
		format_buf_pad(buf, ' ', indent);
		util_buf_printf(buf, "%s:", cols[c].header);
		format_buf_pad(buf, ' ', width - (int)strlen(cols[c].header) + 1);
		util_buf_printf(buf, "%s\n", text);
	}
}

void
cmd_counters_render(struct util_buf *buf, struct json_object *obj, const char *prefix)
{
	static const struct cmd_column col = {"", "", CMD_CELL_TEXT, 0, false};

	if (obj == NULL || !json_object_is_type(obj, json_type_object))
		return;
	json_object_object_foreach(obj, key, val)
	{
		char text[CMD_TEXT_MAX];

		if (val != NULL && json_object_is_type(val, json_type_object)) {
			char sub[CMD_TEXT_MAX];

			snprintf(sub, sizeof(sub), "%s%s.", prefix, key);
			cmd_counters_render(buf, val, sub);
			continue;
		}
		cmd_cell_format(&col, val, text, sizeof(text));
		util_buf_printf(buf, "%s%s %s\n", prefix, key, text);
	}
}

void
cmd_json_render(struct util_buf *buf, struct json_object *data)
{
	struct json_object *empty = NULL;

	if (data == NULL)
		data = empty = json_object_new_object();
	format_json_render(buf, data);
	json_object_put(empty);
}

/* ---- talking to vnumad ------------------------------------------------------------------ */

int
cmd_fail(struct cli_ctx *ctx, int r, const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", ctx->err);
	va_start(ap, fmt);
	vfprintf(ctx->err, fmt, ap);
	va_end(ap);
	fputc('\n', ctx->err);
	return r;
}

int
cmd_status_errno(int status)
{
	switch (status) {
	case PROTO_BAD_REQUEST:
		return -EINVAL;
	case PROTO_FORBIDDEN:
		return -EPERM;
	case PROTO_NOT_FOUND:
		return -ENOENT;
	case PROTO_CONFLICT:
		return -EBUSY;
	case PROTO_TOO_LARGE:
		return -E2BIG;
	case PROTO_UNSUPPORTED:
		return -EOPNOTSUPP;
	default:
		return -EPROTO;
	}
}

int
cmd_socket_uri_refuse(struct cli_ctx *ctx, const char *origin, const char *value)
{
	if (strstr(value, "://") == NULL)
		return 0;
	return cmd_fail(ctx, -EINVAL,
	                "%s %s: a URI, but vnumactl talks to the vnumad daemon's control socket, "
	                "not to libvirt (the daemon is the one connected to libvirt: vnumad "
	                "--connect %s); name the socket with -c/--socket PATH or %s=PATH "
	                "(default %s)",
	                origin, value, value, CLIENT_SOCKET_ENV, CLIENT_DEFAULT_SOCKET);
}

int
cmd_connect(struct cli_ctx *ctx, struct client **out)
{
	const char *env = getenv(CLIENT_SOCKET_ENV);
	const char *path = ctx->socket_path;
	char err[CMD_ERR_MAX] = "";
	bool absent;
	int r;

	if (path == NULL && env != NULL && env[0] != '\0') {
		path = env;
		if ((r = cmd_socket_uri_refuse(ctx, CLIENT_SOCKET_ENV, env)) < 0)
			return r;
	}
	if (path == NULL)
		path = CLIENT_DEFAULT_SOCKET;
	r = client_open(path, out, err, sizeof(err));
	absent = r == -ENOENT || r == -ECONNREFUSED;

	if (r == 0)
		return 0;
	if (err[0] != '\0')
		return cmd_fail(ctx, r, "%s%s", err, absent ? " (is vnumad running?)" : "");
	return cmd_fail(ctx, r, "cannot connect to %s: %s%s", path, strerror(-r),
	                absent ? " (is vnumad running?)" : "");
}

int
cmd_call_status(struct client *c, const char *cmd, struct json_object *args,
                struct json_object **data, int *status, char *err, size_t errlen)
{
	struct proto_reply rep;
	int r;

	memset(&rep, 0, sizeof(rep));
	err[0] = '\0';
	if (data != NULL)
		*data = NULL;
	r = client_call(c, cmd, args, &rep, err, errlen);
	if (r < 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s", strerror(-r));
		return r;
	}
	*status = rep.status;
	if (rep.status != PROTO_OK)
		snprintf(err, errlen, "%s",
		         rep.message[0] != '\0' ? rep.message : proto_status_name(rep.status));
	if (data != NULL && rep.data != NULL)
		*data = json_object_get(rep.data);
	proto_reply_free(&rep);
	return 0;
}

int
cmd_call(struct cli_ctx *ctx, struct client *c, const char *cmd, struct json_object *args,
         struct json_object **data)
{
	char err[CMD_ERR_MAX];
	int status = PROTO_OK;
	int r = cmd_call_status(c, cmd, args, data, &status, err, sizeof(err));

	if (r == 0 && status != PROTO_OK) {
		r = cmd_status_errno(status);
		if (data != NULL) {
			json_object_put(*data);
			*data = NULL;
		}
	}
	return r < 0 ? cmd_fail(ctx, r, "%s", err) : 0;
}

int
cmd_fetch(struct cli_ctx *ctx, const char *cmd, struct json_object *args, struct json_object **data)
{
	struct client *c = NULL;
	int r = cmd_connect(ctx, &c);

	if (r == 0) {
		r = cmd_call(ctx, c, cmd, args, data);
		client_close(c);
	}
	json_object_put(args);
	return r;
}

int
cmd_output(struct cli_ctx *ctx, struct util_buf *buf)
{
	int r = 0;

	if (buf->data != NULL && fputs(buf->data, ctx->out) == EOF)
		r = -EIO;
	free(buf->data);
	memset(buf, 0, sizeof(*buf));
	return r;
}

int
cmd_read(struct cli_ctx *ctx, const char *cmd, struct json_object *args, cmd_render_fn render)
{
	struct json_object *data = NULL;
	struct util_buf buf = {0};
	int r = cmd_fetch(ctx, cmd, args, &data);

	if (r < 0)
		return r;
	if (ctx->json)
		cmd_json_render(&buf, data);
	else
		render(&buf, data);
	json_object_put(data);
	return cmd_output(ctx, &buf);
}

int
cmd_change(struct cli_ctx *ctx, const char *cmd, struct json_object *args, const char *done)
{
	struct json_object *data = NULL;
	struct util_buf buf = {0};
	int r = cmd_fetch(ctx, cmd, args, &data);

	if (r < 0)
		return r;
	if (ctx->json)
		cmd_json_render(&buf, data);
	else
		util_buf_printf(&buf, "%s\n", done);
	json_object_put(data);
	return cmd_output(ctx, &buf);
}

/* ---- request arguments ------------------------------------------------------------------ */

static void
cmd_args_add(struct json_object *args, const char *key, struct json_object *value)
{
	if (value == NULL)
		abort(); /* json-c fails only on out-of-memory */
	json_object_object_add(args, key, value);
}

struct json_object *
cmd_args_new(void)
{
	struct json_object *args = json_object_new_object();

	if (args == NULL)
		abort();
	return args;
}

void
cmd_args_string(struct json_object *args, const char *key, const char *value)
{
	cmd_args_add(args, key, json_object_new_string(value));
}

void
cmd_args_int(struct json_object *args, const char *key, int64_t value)
{
	cmd_args_add(args, key, json_object_new_int64(value));
}

void
cmd_args_bool(struct json_object *args, const char *key, bool value)
{
	cmd_args_add(args, key, json_object_new_boolean(value));
}

struct json_object *
cmd_args_vm(const char *vm)
{
	struct json_object *args = cmd_args_new();

	cmd_args_string(args, "vm", vm);
	return args;
}

/* ---- command-line values ---------------------------------------------------------------- */

/* Length of a plain decimal "D+" or "D+.D+" at the start of s; 0 when there is none. */
static size_t
cmd_decimal_span(const char *s)
{
	size_t n = strspn(s, "0123456789"), frac;

	if (n == 0 || s[n] != '.')
		return n;
	frac = strspn(s + n + 1, "0123456789");
	return frac == 0 ? 0 : n + 1 + frac;
}

int
cmd_size_parse_mib(const char *s, uint64_t *mib, char *err, size_t errlen)
{
	char why[UNITS_ERR_MAX];
	uint64_t bytes, value;

	if (units_size_parse(s, UNITS_MIB, &bytes, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "bad size '%s': %s", s, why);
		return -EINVAL;
	}
	value = bytes / UNITS_MIB + (bytes % UNITS_MIB >= UNITS_MIB / 2);
	if (value < 1 || value > CMD_SIZE_MAX_MIB) {
		snprintf(err, errlen, "bad size '%s': must be between 1 MiB and %" PRIu64 " TiB", s,
		         CMD_SIZE_MAX_MIB >> 20);
		return -EINVAL;
	}
	*mib = value;
	return 0;
}

int
cmd_uint_parse(const char *s, const char *what, int64_t max, int64_t *out, char *err, size_t errlen)
{
	size_t n = strspn(s, "0123456789");

	if (n == 0 || s[n] != '\0' || n > 18 || strtoll(s, NULL, 10) > max) {
		char want[64];

		snprintf(want, sizeof(want), "an integer from 0 to %" PRId64, max);
		snprintf(err, errlen, CLI_ERR_BAD_VALUE, what, s, want);
		return -EINVAL;
	}
	*out = strtoll(s, NULL, 10);
	return 0;
}

int
cmd_seconds_parse(const char *s, const char *what, double min_s, double max_s, double *out,
                  char *err, size_t errlen)
{
	size_t n = cmd_decimal_span(s);
	double v = n > 0 && n < 32 ? strtod(s, NULL) : -1.0;

	if (n == 0 || s[n] != '\0' || v < min_s || v > max_s) {
		char want[64];

		snprintf(want, sizeof(want), "seconds from %g to %g", min_s, max_s);
		snprintf(err, errlen, CLI_ERR_BAD_VALUE, what, s, want);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* ---- signals ---------------------------------------------------------------------------- */

/* Written only by the handler; a signal handler can reach nothing else. */
static volatile sig_atomic_t cmd_last_signal;

static void
cmd_signal_handler(int signo)
{
	cmd_last_signal = signo;
}

void
cmd_signals_catch(struct cmd_signals *sigs, const int *signo)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cmd_signal_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: poll, read and nanosleep return EINTR */
	cmd_last_signal = 0;
	sigs->nr = 0;
	for (int i = 0; i < CMD_NR_SIGNALS && signo[i] != 0; i++) {
		if (sigaction(signo[i], &sa, &sigs->old[sigs->nr]) == 0)
			sigs->signo[sigs->nr++] = signo[i];
	}
}

void
cmd_signals_restore(struct cmd_signals *sigs)
{
	for (int i = sigs->nr - 1; i >= 0; i--)
		sigaction(sigs->signo[i], &sigs->old[i], NULL);
	sigs->nr = 0;
}

int
cmd_signal_caught(bool clear)
{
	int signo = cmd_last_signal;

	if (clear)
		cmd_last_signal = 0;
	return signo;
}

/*
 * cmd_common.h - what vnumactl's daemon commands share: talking to vnumad (connect, call, turn
 * a failure into "error: ..."), building request arguments, checking sizes and numbers given
 * on the command line, and rendering reply data from column descriptors.
 *
 * Every command is a fetch (client calls, in its handler) and a pure render (a reply's data
 * object in, text out), so rendering is unit-tested on canned replies.  With --json a read
 * command prints the data object itself; otherwise its render turns the same object into
 * tables (format_table_render, from the descriptors below) and "label: value" lines.
 *
 * Ownership: data objects returned by cmd_call/cmd_fetch belong to the caller (json_object_put).
 */
#ifndef VNUMAD_AGENT_CMD_COMMON_H
#define VNUMAD_AGENT_CMD_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/cli.h"
#include "policy/util.h"

struct client;
struct json_object;

#define CMD_TEXT_MAX 1024 /* bytes of one rendered cell (explain summaries run long) */

/* How a value is shown. */
enum cmd_cell {
	CMD_CELL_TEXT,  /* as sent: strings, integers, yes/no, arrays joined by ',' */
	CMD_CELL_FIXED, /* a number with `decimals` digits after the point */
	CMD_CELL_GIB,   /* a MiB count shown in GiB with `decimals` digits */
	CMD_CELL_WALL,  /* seconds since the epoch shown as local time, "Dec 03 12:30:05" */
	CMD_CELL_NODE,  /* a node; a negative one (no node yet) shows as CMD_NONE_NODE */
	CMD_CELL_CAP,   /* a cap; 0 (no cap) shows as CMD_NONE_CAP */
};

/* What a field shows for the "nothing" its value stands for, never the number itself. */
#define CMD_NONE_NODE "none"
#define CMD_NONE_CAP  "no cap"

/*
 * One column of a table or one line of a field list.  key may be a path into nested objects
 * ("policy.mode").  A missing or null value shows as "-".
 */
struct cmd_column {
	const char *key;
	const char *header; /* table header, or field label */
	enum cmd_cell cell;
	int decimals;
	bool numeric; /* right-aligned in tables */
};

#define CMD_NR(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* ---- reading reply data --------------------------------------------------------------- */

/* The value at a '.'-separated path in obj, or NULL (missing, null, or not an object). */
struct json_object *cmd_json_get(struct json_object *obj, const char *path);
const char *cmd_json_string(struct json_object *obj, const char *path, const char *fallback);
double cmd_json_double(struct json_object *obj, const char *path, double fallback);
int64_t cmd_json_int(struct json_object *obj, const char *path, int64_t fallback);
/* An array at path, or NULL. */
struct json_object *cmd_json_array(struct json_object *obj, const char *path);

/* ---- rendering ------------------------------------------------------------------------ */

/* The text of one value under col's rules into text (always NUL-terminated). */
void cmd_cell_format(const struct cmd_column *col, struct json_object *value, char *text,
                     size_t len);
/* Records (a JSON array of objects) as an aligned table with a header line. */
void cmd_table_render(struct util_buf *buf, const struct cmd_column *cols, int nr_cols,
                      struct json_object *records);
/* obj as "label: value" lines, values aligned, each line indented by indent spaces. */
void cmd_fields_render(struct util_buf *buf, const struct cmd_column *cols, int nr_cols,
                       struct json_object *obj, int indent);
/* Every member of obj as "key value" lines (vmstat style); nested objects as key.sub. */
void cmd_counters_render(struct util_buf *buf, struct json_object *obj, const char *prefix);
/* data as pretty JSON ("{}" for NULL), the --json output. */
void cmd_json_render(struct util_buf *buf, struct json_object *data);

/* A pure human renderer of one command's reply data. */
typedef void (*cmd_render_fn)(struct util_buf *buf, struct json_object *data);

/* ---- talking to vnumad ---------------------------------------------------------------- */

/* Print "error: <formatted>" to ctx->err; returns r. */
int cmd_fail(struct cli_ctx *ctx, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* -errno for a reply status (404 -> -ENOENT, 403 -> -EPERM, ...). */
int cmd_status_errno(int status);
/*
 * A socket named as a URI ("qemu:///system", what a virsh user gives -c): -EINVAL with an
 * error saying that vnumactl talks to the daemon's socket, and how to name it; else 0.
 * origin names where the value came from ("-c", "VNUMAD_SOCKET").
 */
int cmd_socket_uri_refuse(struct cli_ctx *ctx, const char *origin, const char *value);
/*
 * Connect to ctx->socket_path, else $VNUMAD_SOCKET, else CLIENT_DEFAULT_SOCKET; on failure
 * print why (with a hint) and return -errno.
 */
int cmd_connect(struct cli_ctx *ctx, struct client **out);
/*
 * Send cmd with args (not consumed) and wait for the reply, printing nothing.  0 with
 * *status set and *data (the reply's data object or NULL; data may be NULL) on a reply of any
 * status, whose message then goes to err; -errno with a message in err on I/O failure.
 */
int cmd_call_status(struct client *c, const char *cmd, struct json_object *args,
                    struct json_object **data, int *status, char *err, size_t errlen);
/*
 * Send cmd with args (not consumed) and wait for the reply.  0 with *data (the reply's data
 * object, or NULL) when the status is 0; otherwise the daemon's message or the I/O error is
 * printed and -errno returned (cmd_status_errno for a reply status).  data may be NULL.
 */
int cmd_call(struct cli_ctx *ctx, struct client *c, const char *cmd, struct json_object *args,
             struct json_object **data);
/* Connect, call once, close.  args (may be NULL) is consumed.  As cmd_call. */
int cmd_fetch(struct cli_ctx *ctx, const char *cmd, struct json_object *args,
              struct json_object **data);
/* A whole read command: fetch, then print JSON (ctx->json) or render's text. */
int cmd_read(struct cli_ctx *ctx, const char *cmd, struct json_object *args, cmd_render_fn render);
/*
 * A whole mutating command: send, then print the reply's data as JSON (ctx->json) or the
 * line done (a plain string) on success.
 */
int cmd_change(struct cli_ctx *ctx, const char *cmd, struct json_object *args, const char *done);
/* Write buf to ctx->out and free it.  0 or -EIO. */
int cmd_output(struct cli_ctx *ctx, struct util_buf *buf);

/* ---- request arguments ---------------------------------------------------------------- */

struct json_object *cmd_args_new(void);
void cmd_args_string(struct json_object *args, const char *key, const char *value);
void cmd_args_int(struct json_object *args, const char *key, int64_t value);
void cmd_args_bool(struct json_object *args, const char *key, bool value);
/* {"vm": vm}. */
struct json_object *cmd_args_vm(const char *vm);

/* ---- command-line values -------------------------------------------------------------- */

#define CMD_SIZE_MAX_MIB ((uint64_t)1 << 30) /* 1 PiB: larger than any host; beyond is junk */

/*
 * A memory size in the grammar of policy/units.h: a decimal number ("8", "1.5") with an
 * optional binary unit B, K, M, G or T, written alone or with "iB" ("8G", "8GiB", "512m",
 * "1.5T"), any case; no unit means MiB.
 * Rounded to the nearest MiB, at least 1 and at most CMD_SIZE_MAX_MIB.  0 or -EINVAL with a
 * message.
 */
int cmd_size_parse_mib(const char *s, uint64_t *mib, char *err, size_t errlen);
/* A non-negative integer <= max.  0 or -EINVAL with a message naming what. */
int cmd_uint_parse(const char *s, const char *what, int64_t max, int64_t *out, char *err,
                   size_t errlen);
/* Seconds, a decimal number in [min_s, max_s].  0 or -EINVAL with a message naming what. */
int cmd_seconds_parse(const char *s, const char *what, double min_s, double max_s, double *out,
                      char *err, size_t errlen);

/* ---- signals for the long-running commands (events --follow, top, migrate) ------------- */

#define CMD_NR_SIGNALS 8

/* The signals caught, and the actions they replaced. */
struct cmd_signals {
	int nr;
	int signo[CMD_NR_SIGNALS];
	struct sigaction old[CMD_NR_SIGNALS];
};

/*
 * Catch the given signals (up to CMD_NR_SIGNALS, 0-terminated) without SA_RESTART, so that
 * blocking calls return EINTR; cmd_signal_caught() then tells which came last.
 */
void cmd_signals_catch(struct cmd_signals *sigs, const int *signo);
void cmd_signals_restore(struct cmd_signals *sigs);
/* The last signal caught since cmd_signals_catch (0: none); clears it when clear. */
int cmd_signal_caught(bool clear);

#endif

/*
 * proto.c - encoding and decoding of control protocol lines (docs/protocol.md).
 *
 * Pure: no I/O, no clock, no globals.  The request decoder sees bytes straight off the socket,
 * so it checks everything in a fixed order (size, NUL, blank, JSON, object, version, cmd,
 * args, id) and answers every failure with a status and a message that names the field.
 * It is the fuzz target of tests/fuzz/fuzz_proto.c.
 */
#include "agent/proto.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/*
 * Deepest JSON nesting a request may have.  Requests are at most two levels deep (the line
 * and its args); 16 leaves room for structured args and bounds the parser's work on hostile
 * input.  json-c's own default is 32.
 */
#define PROTO_MAX_DEPTH 16

static bool
proto_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool
proto_is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!proto_is_space(s[i]))
			return false;
	return true;
}

/* json-c only fails on out-of-memory; like xmalloc, we abort then. */
static void
proto_json_oom(void)
{
	fputs("vnumad: out of memory in json-c\n", stderr);
	abort();
}

static struct json_object *
proto_json_check(struct json_object *obj)
{
	if (obj == NULL)
		proto_json_oom();
	return obj;
}

static void
proto_json_add(struct json_object *obj, const char *key, struct json_object *val)
{
	if (json_object_object_add(obj, key, val) != 0)
		proto_json_oom();
}

/*
 * Parse len bytes (no NUL inside) as exactly one JSON value followed only by whitespace.
 * Returns the value, or NULL with a message in err.  Trailing garbage after a good value is
 * an error too, but the value is still returned (so its id can be echoed) with *trailing set.
 */
static struct json_object *
proto_parse_value(const char *line, size_t len, bool *trailing, char *err, size_t errlen)
{
	struct json_tokener *tok = json_tokener_new_ex(PROTO_MAX_DEPTH);
	struct json_object *obj;
	enum json_tokener_error jerr;
	char *copy = NULL;
	size_t end;

	if (tok == NULL)
		proto_json_oom();
	if (len >= INT_MAX) {
		util_errf(err, errlen, "malformed JSON: longer than %d bytes", INT_MAX - 1);
		obj = NULL;
		goto out;
	}
	/* Copy so the tokener sees the final NUL: a top-level number is then complete. */
	copy = xmalloc(len + 1);
	memcpy(copy, line, len);
	copy[len] = '\0';
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
	                                JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, copy, (int)len + 1);
	jerr = json_tokener_get_error(tok);
	if (obj == NULL && jerr == json_tokener_success) {
		util_errf(err, errlen, "malformed JSON: null, not an object");
		goto out;
	}
	if (obj == NULL || jerr != json_tokener_success) {
		util_errf(err, errlen, "malformed JSON: %s at byte %zu",
		          json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
		json_object_put(obj);
		obj = NULL;
		goto out;
	}
	end = json_tokener_get_parse_end(tok);
	*trailing = end < len && !proto_is_blank(copy + end, len - end);
	if (*trailing)
		util_errf(err, errlen, "malformed JSON: trailing garbage at byte %zu", end);
out:
	json_tokener_free(tok);
	free(copy);
	return obj;
}

/* "version" must be present, an integer, and PROTO_VERSION. */
static enum proto_status
proto_check_version(struct json_object *root, int *version, char *err, size_t errlen)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(root, "version", &v) || v == NULL) {
		util_errf(err, errlen, "version: missing (this daemon speaks %d)", PROTO_VERSION);
		return PROTO_BAD_VERSION;
	}
	if (!json_object_is_type(v, json_type_int)) {
		util_errf(err, errlen, "version: not an integer (this daemon speaks %d)",
		          PROTO_VERSION);
		return PROTO_BAD_VERSION;
	}
	n = json_object_get_int64(v);
	if (n != PROTO_VERSION) {
		util_errf(err, errlen, "bad version %" PRId64 " (this daemon speaks %d)", n,
		          PROTO_VERSION);
		return PROTO_BAD_VERSION;
	}
	*version = (int)n;
	return PROTO_OK;
}

static enum proto_status
proto_check_cmd(struct json_object *root, char *cmd, char *err, size_t errlen)
{
	struct json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(root, "cmd", &v) || v == NULL) {
		util_errf(err, errlen, "cmd: missing");
		return PROTO_BAD_REQUEST;
	}
	if (!json_object_is_type(v, json_type_string)) {
		util_errf(err, errlen, "cmd: not a string");
		return PROTO_BAD_REQUEST;
	}
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n == 0) {
		util_errf(err, errlen, "cmd: empty");
		return PROTO_BAD_REQUEST;
	}
	if (memchr(s, '\0', n) != NULL) {
		util_errf(err, errlen, "cmd: contains a NUL byte");
		return PROTO_BAD_REQUEST;
	}
	if (n >= PROTO_CMD_MAX) {
		util_errf(err, errlen, "cmd: longer than %d bytes", PROTO_CMD_MAX - 1);
		return PROTO_BAD_REQUEST;
	}
	memcpy(cmd, s, n + 1);
	return PROTO_OK;
}

/* "id" is optional (0 when absent); *id is set whenever it is an integer. */
static enum proto_status
proto_check_id(struct json_object *root, int64_t *id, char *err, size_t errlen)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(root, "id", &v) || v == NULL)
		return PROTO_OK;
	if (!json_object_is_type(v, json_type_int)) {
		util_errf(err, errlen, "id: not an integer");
		return PROTO_BAD_REQUEST;
	}
	*id = json_object_get_int64(v);
	return PROTO_OK;
}

static enum proto_status
proto_check_args(struct json_object *root, struct json_object **args, char *err, size_t errlen)
{
	struct json_object *v;

	if (!json_object_object_get_ex(root, "args", &v) || v == NULL) {
		*args = proto_json_check(json_object_new_object());
		return PROTO_OK;
	}
	if (!json_object_is_type(v, json_type_object)) {
		util_errf(err, errlen, "args: not an object");
		return PROTO_BAD_REQUEST;
	}
	*args = json_object_get(v);
	return PROTO_OK;
}

/* Checks that need no parsing: size, NUL bytes, blank lines. */
static enum proto_status
proto_check_bytes(const char *line, size_t len, char *err, size_t errlen)
{
	const char *nul;

	if (len >= PROTO_MAX_LINE) {
		util_errf(err, errlen, "request too large: over %d bytes", PROTO_MAX_LINE);
		return PROTO_TOO_LARGE;
	}
	nul = line == NULL ? NULL : memchr(line, '\0', len);
	if (nul != NULL) {
		util_errf(err, errlen, "malformed request: NUL byte at byte %td", nul - line);
		return PROTO_BAD_REQUEST;
	}
	if (line == NULL || proto_is_blank(line, len)) {
		util_errf(err, errlen, "empty request");
		return PROTO_BAD_REQUEST;
	}
	return PROTO_OK;
}

/*
 * On error nothing is left to free, but req->id holds the request's id when it could be read
 * (0 otherwise) so that the error reply can echo it.
 */
enum proto_status
proto_request_decode(const char *line, size_t len, struct proto_request *req, char *err,
                     size_t errlen)
{
	struct json_object *root;
	enum proto_status st, id_st;
	bool trailing = false;

	memset(req, 0, sizeof(*req));
	util_errf(err, errlen, "ok");
	st = proto_check_bytes(line, len, err, errlen);
	if (st != PROTO_OK)
		return st;
	root = proto_parse_value(line, len, &trailing, err, errlen);
	if (root == NULL)
		return PROTO_BAD_REQUEST;
	if (trailing) {
		if (json_object_is_type(root, json_type_object))
			proto_check_id(root, &req->id, NULL, 0);
		st = PROTO_BAD_REQUEST;
		goto out;
	}
	if (!json_object_is_type(root, json_type_object)) {
		util_errf(err, errlen, "malformed request: JSON %s, not an object",
		          json_type_to_name(json_object_get_type(root)));
		st = PROTO_BAD_REQUEST;
		goto out;
	}
	/* The id is read first so that every later error reply can echo it. */
	id_st = proto_check_id(root, &req->id, NULL, 0);
	st = proto_check_version(root, &req->version, err, errlen);
	if (st == PROTO_OK)
		st = proto_check_cmd(root, req->cmd, err, errlen);
	if (st == PROTO_OK)
		st = proto_check_args(root, &req->args, err, errlen);
	if (st == PROTO_OK && id_st != PROTO_OK)
		st = proto_check_id(root, &req->id, err, errlen);
out:
	if (st != PROTO_OK) {
		int64_t id = req->id;

		json_object_put(req->args);
		json_object_put(root);
		memset(req, 0, sizeof(*req));
		req->id = id;
		return st;
	}
	req->root = root;
	return PROTO_OK;
}

void
proto_request_free(struct proto_request *req)
{
	if (req == NULL)
		return;
	json_object_put(req->args);
	json_object_put(req->root);
	req->args = NULL;
	req->root = NULL;
}

/* obj as one line plus "\n", malloc'd; consumes obj. */
static char *
proto_line_finish(struct json_object *obj)
{
	size_t n;
	const char *s = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	char *line;

	if (s == NULL)
		proto_json_oom();
	line = xmalloc(n + 2);
	memcpy(line, s, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	json_object_put(obj);
	return line;
}

static struct json_object *
proto_new_message(int64_t id)
{
	struct json_object *obj = proto_json_check(json_object_new_object());

	proto_json_add(obj, "version", proto_json_check(json_object_new_int(PROTO_VERSION)));
	proto_json_add(obj, "id", proto_json_check(json_object_new_int64(id)));
	return obj;
}

char *
proto_request_encode(int64_t id, const char *cmd, struct json_object *args)
{
	struct json_object *obj = proto_new_message(id);

	proto_json_add(obj, "cmd", proto_json_check(json_object_new_string(cmd)));
	if (args != NULL)
		proto_json_add(obj, "args", json_object_get(args));
	return proto_line_finish(obj);
}

char *
proto_reply_encode(int64_t id, enum proto_status status, const char *message,
                   struct json_object *data)
{
	struct json_object *obj = proto_new_message(id);

	if (message == NULL)
		message = status == PROTO_OK ? "ok" : proto_status_name(status);
	proto_json_add(obj, "status", proto_json_check(json_object_new_int((int)status)));
	proto_json_add(obj, "message", proto_json_check(json_object_new_string(message)));
	if (data != NULL)
		proto_json_add(obj, "data", json_object_get(data));
	return proto_line_finish(obj);
}

char *
proto_event_encode(struct json_object *event)
{
	struct json_object *obj = proto_json_check(json_object_new_object());

	proto_json_add(obj, "version", proto_json_check(json_object_new_int(PROTO_VERSION)));
	proto_json_add(obj, "event",
	               event != NULL ? json_object_get(event)
	                             : proto_json_check(json_object_new_object()));
	return proto_line_finish(obj);
}

/* The status/id/message/data fields of a reply line (not an event). */
static int
proto_reply_fields(struct json_object *root, struct proto_reply *rep, char *err, size_t errlen)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(root, "status", &v) ||
	    !json_object_is_type(v, json_type_int)) {
		util_errf(err, errlen, "reply: status missing or not an integer");
		return -EINVAL;
	}
	rep->status = (int)json_object_get_int(v);
	if (json_object_object_get_ex(root, "id", &v)) {
		if (!json_object_is_type(v, json_type_int)) {
			util_errf(err, errlen, "reply: id not an integer");
			return -EINVAL;
		}
		rep->id = json_object_get_int64(v);
	}
	if (json_object_object_get_ex(root, "message", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(rep->message, sizeof(rep->message), "%s", json_object_get_string(v));
	else
		snprintf(rep->message, sizeof(rep->message), "%s", proto_status_name(rep->status));
	if (json_object_object_get_ex(root, "data", &v) && v != NULL)
		rep->data = json_object_get(v);
	return 0;
}

static int
proto_reply_parse(const char *line, size_t len, struct proto_reply *rep, char *err, size_t errlen)
{
	struct json_object *v = NULL;
	bool trailing = false;

	if (line == NULL || memchr(line, '\0', len) != NULL || proto_is_blank(line, len)) {
		util_errf(err, errlen, "reply: empty or contains a NUL byte");
		return -EINVAL;
	}
	rep->root = proto_parse_value(line, len, &trailing, err, errlen);
	if (rep->root == NULL || trailing)
		return -EINVAL;
	if (!json_object_is_type(rep->root, json_type_object)) {
		util_errf(err, errlen, "reply: not a JSON object");
		return -EINVAL;
	}
	if (!json_object_object_get_ex(rep->root, "version", &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) != PROTO_VERSION) {
		util_errf(err, errlen, "reply: bad version %s (this vnumactl speaks %d)",
		          v == NULL ? "(missing)" : json_object_get_string(v), PROTO_VERSION);
		return -EINVAL;
	}
	rep->version = PROTO_VERSION;
	if (json_object_object_get_ex(rep->root, "event", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_object)) {
			util_errf(err, errlen, "event: not an object");
			return -EINVAL;
		}
		rep->event = json_object_get(v);
		snprintf(rep->message, sizeof(rep->message), "event");
		return 0;
	}
	return proto_reply_fields(rep->root, rep, err, errlen);
}

int
proto_reply_decode(const char *line, size_t len, struct proto_reply *rep, char *err, size_t errlen)
{
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = proto_reply_parse(line, len, rep, err, errlen);
	if (rc < 0)
		proto_reply_free(rep);
	return rc;
}

void
proto_reply_free(struct proto_reply *rep)
{
	if (rep == NULL)
		return;
	json_object_put(rep->data);
	json_object_put(rep->event);
	json_object_put(rep->root);
	rep->data = NULL;
	rep->event = NULL;
	rep->root = NULL;
}

const char *
proto_status_name(int status)
{
	switch (status) {
	case PROTO_OK:
		return "ok";
	case PROTO_BAD_REQUEST:
		return "bad request";
	case PROTO_FORBIDDEN:
		return "forbidden";
	case PROTO_NOT_FOUND:
		return "not found";
	case PROTO_CONFLICT:
		return "conflict";
	case PROTO_TOO_LARGE:
		return "request too large";
	case PROTO_BAD_VERSION:
		return "bad version";
	case PROTO_INTERNAL:
		return "internal error";
	case PROTO_UNSUPPORTED:
		return "not supported";
	default:
		return "unknown status";
	}
}

/* The value of key in args, NULL when args, the key or its value is absent (JSON null). */
static struct json_object *
proto_arg_get(struct json_object *args, const char *key)
{
	struct json_object *v = NULL;

	if (args == NULL || !json_object_is_type(args, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(args, key, &v))
		return NULL;
	return v;
}

int
proto_arg_string(struct json_object *args, const char *key, const char **out)
{
	struct json_object *v = proto_arg_get(args, key);

	if (v == NULL)
		return -ENOENT;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	*out = json_object_get_string(v);
	return 0;
}

int
proto_arg_int(struct json_object *args, const char *key, int64_t *out)
{
	struct json_object *v = proto_arg_get(args, key);

	if (v == NULL)
		return -ENOENT;
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	*out = json_object_get_int64(v);
	return 0;
}

int
proto_arg_bool(struct json_object *args, const char *key, bool *out)
{
	struct json_object *v = proto_arg_get(args, key);

	if (v == NULL)
		return -ENOENT;
	if (!json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	*out = json_object_get_boolean(v);
	return 0;
}

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

/*
 * Key tokens in a valid JSON text (strings followed by ':'), at every depth.  json-c keeps the
 * last of duplicate keys silently; comparing this count with the parsed objects' sizes finds
 * a duplicate whatever escapes spell it.
 */
static size_t
proto_count_key_tokens(const char *s, size_t len)
{
	size_t keys = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		if (in_str) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_str = false;
			if (in_str || s[i] != '"')
				continue;
			for (size_t j = i + 1; j < len; j++) {
				if (proto_is_space(s[j]))
					continue;
				keys += s[j] == ':';
				break;
			}
		} else if (s[i] == '"') {
			in_str = true;
		}
	}
	return keys;
}

/* Keys of every object in the parsed tree. */
static size_t
proto_count_keys(struct json_object *obj, int depth)
{
	size_t n = 0;

	if (depth > PROTO_MAX_DEPTH)
		return 0;
	if (json_object_is_type(obj, json_type_object)) {
		json_object_object_foreach(obj, key, val)
		{
			(void)key;
			n += 1 + proto_count_keys(val, depth + 1);
		}
	} else if (json_object_is_type(obj, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(obj); i++)
			n += proto_count_keys(json_object_array_get_idx(obj, i), depth + 1);
	}
	return n;
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
	if (proto_count_key_tokens(line, len) != proto_count_keys(root, 0)) {
		/* "cmd":"status","cmd":"pause" must not pause: refuse, never pick one */
		proto_check_id(root, &req->id, NULL, 0);
		util_errf(err, errlen, "malformed request: a key appears twice in one object");
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

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the bytes there are not one. */
static size_t
proto_utf8_seq(const unsigned char *s, size_t left)
{
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07u;
	else
		return 0;
	if (n > left)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *
proto_utf8_sanitize(const char *s, size_t len, size_t *out_len)
{
	/* every bad byte becomes U+FFFD (3 bytes) */
	char *out = xmalloc(len * 3 + 1);
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t n = proto_utf8_seq((const unsigned char *)s + i, len - i);

		if (n == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	if (out_len != NULL)
		*out_len = o;
	return out;
}

static bool
proto_utf8_valid(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t n = proto_utf8_seq((const unsigned char *)s + i, len - i);

		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

static void proto_json_sanitize_keys(struct json_object *obj);

/*
 * Make every string and key in obj valid UTF-8 (bad bytes become U+FFFD), so that one QEMU
 * -name, policy file name or config line with stray bytes cannot make a reply that clients
 * refuse to parse.
 */
static void
proto_json_sanitize(struct json_object *obj, int depth)
{
	if (obj == NULL || depth > 64)
		return;
	if (json_object_is_type(obj, json_type_string)) {
		const char *s = json_object_get_string(obj);
		size_t len = (size_t)json_object_get_string_len(obj), n;
		char *fixed;

		if (proto_utf8_valid(s, len))
			return;
		fixed = proto_utf8_sanitize(s, len, &n);
		json_object_set_string_len(obj, fixed, (int)n);
		free(fixed);
	} else if (json_object_is_type(obj, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(obj); i++)
			proto_json_sanitize(json_object_array_get_idx(obj, i), depth + 1);
	} else if (json_object_is_type(obj, json_type_object)) {
		bool bad_key = false;

		json_object_object_foreach(obj, key, val)
		{
			proto_json_sanitize(val, depth + 1);
			bad_key |= !proto_utf8_valid(key, strlen(key));
		}
		if (bad_key)
			proto_json_sanitize_keys(obj);
	}
}

/* Re-add the members whose key is not valid UTF-8 under a repaired key. */
static void
proto_json_sanitize_keys(struct json_object *obj)
{
	struct json_object *bad = proto_json_check(json_object_new_object());

	json_object_object_foreach(obj, key, val)
	{
		if (!proto_utf8_valid(key, strlen(key)))
			proto_json_add(bad, key, json_object_get(val));
	}
	json_object_object_foreach(bad, bkey, bval)
	{
		char *fixed = proto_utf8_sanitize(bkey, strlen(bkey), NULL);

		json_object_object_del(obj, bkey);
		proto_json_add(obj, fixed, json_object_get(bval));
		free(fixed);
	}
	json_object_put(bad);
}

/* obj as one line plus "\n", malloc'd; consumes obj. */
static char *
proto_line_finish(struct json_object *obj)
{
	size_t n;
	const char *s;
	char *line;

	proto_json_sanitize(obj, 0);
	s = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);

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

/* The TYPES letters of key in spec ("vm:s node:si"), copied into types; false if absent. */
static bool
proto_spec_types(const char *spec, const char *key, char *types, size_t len)
{
	size_t klen = strlen(key);

	for (const char *p = spec; *p != '\0';) {
		const char *end = strchr(p, ' '), *colon;

		if (end == NULL)
			end = p + strlen(p);
		colon = memchr(p, ':', (size_t)(end - p));
		if (colon != NULL && (size_t)(colon - p) == klen && memcmp(p, key, klen) == 0) {
			snprintf(types, len, "%.*s", (int)(end - colon - 1), colon + 1);
			return true;
		}
		p = *end ? end + 1 : end;
	}
	return false;
}

static char
proto_type_letter(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		return 's';
	case json_type_int:
		return 'i';
	case json_type_boolean:
		return 'b';
	default:
		return '?';
	}
}

/* The spec's keys as "a, b, c" into buf. */
static void
proto_spec_keys(const char *spec, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (const char *p = spec; *p != '\0' && o < len;) {
		const char *end = strchr(p, ' '), *colon;

		if (end == NULL)
			end = p + strlen(p);
		colon = memchr(p, ':', (size_t)(end - p));
		o += (size_t)snprintf(buf + o, len - o, "%s%.*s", o ? ", " : "",
		                      (int)((colon ? colon : end) - p), p);
		p = *end ? end + 1 : end;
	}
}

enum proto_status
proto_args_check(struct json_object *args, const char *spec, char *err, size_t errlen)
{
	static const char *const type_names[] = {"a string", "an integer", "a boolean"};

	if (args == NULL || spec == NULL)
		return PROTO_OK;
	json_object_object_foreach(args, key, val)
	{
		char types[8], keys[256], want[64] = "";
		char got = proto_type_letter(val);

		if (!proto_spec_types(spec, key, types, sizeof(types))) {
			proto_spec_keys(spec, keys, sizeof(keys));
			util_errf(err, errlen, "unknown argument '%s' (this command takes: %s)",
			          key, keys[0] ? keys : "none");
			return PROTO_BAD_REQUEST;
		}
		if (val == NULL) /* JSON null: as if absent */
			continue;
		if (got == '?' || strchr(types, got) == NULL) {
			for (size_t i = 0; types[i] != '\0'; i++) {
				const char *t = strchr("sib", types[i]);

				if (t != NULL)
					snprintf(want + strlen(want), sizeof(want) - strlen(want),
					         "%s%s", i ? " or " : "", type_names[t - "sib"]);
			}
			util_errf(err, errlen, "argument '%s': expected %s, not %s", key, want,
			          json_type_to_name(json_object_get_type(val)));
			return PROTO_BAD_REQUEST;
		}
		if (got == 's' && strlen(json_object_get_string(val)) !=
		                      (size_t)json_object_get_string_len(val)) {
			util_errf(err, errlen, "argument '%s': contains a NUL byte", key);
			return PROTO_BAD_REQUEST;
		}
	}
	return PROTO_OK;
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
	/* "web1\u0000zzz" is not web1 */
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
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

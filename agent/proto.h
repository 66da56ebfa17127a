/*
 * proto.h - the control protocol shared by vnumad and vnumactl (BRIEF 4.6, docs/protocol.md).
 *
 * Newline-delimited JSON over a Unix stream socket.  Every request and reply carries
 * "version"; a request is {"version":1,"id":N,"cmd":"list","args":{...}} and a reply is
 * {"version":1,"id":N,"status":0,"message":"...","data":{...}}.  Status codes follow HTTP's
 * meanings so they read well in logs.  The decoder is pure (no I/O) and is a fuzz target.
 *
 * Ownership: a decoded request owns its json-c objects; free with proto_request_free().
 */
#ifndef VNUMAD_AGENT_PROTO_H
#define VNUMAD_AGENT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

#define PROTO_VERSION  1
#define PROTO_MAX_LINE 65536 /* bytes per request line, newline included */
#define PROTO_CMD_MAX  32

enum proto_status {
	PROTO_OK = 0,
	PROTO_BAD_REQUEST = 400, /* malformed JSON, missing or mistyped field */
	PROTO_FORBIDDEN = 403,   /* mutating command from a read-only peer */
	PROTO_NOT_FOUND = 404,   /* unknown command, VM or vCPU */
	PROTO_CONFLICT = 409,    /* not possible in the current state (e.g. VM mode) */
	PROTO_TOO_LARGE = 413,   /* request line over PROTO_MAX_LINE */
	PROTO_BAD_VERSION = 426, /* version missing or not PROTO_VERSION */
	PROTO_INTERNAL = 500,
	PROTO_UNSUPPORTED = 501, /* the backend cannot do this (e.g. --config on the sim) */
};

struct proto_request {
	int version;
	int64_t id; /* echoed in the reply; 0 if absent */
	char cmd[PROTO_CMD_MAX];
	struct json_object *args; /* an object (empty when absent); owned */
	struct json_object *root; /* the whole decoded line; owned */
};

/*
 * Decode one request line (len bytes, without the newline).  Returns PROTO_OK, or an error
 * status with a message in err naming what is wrong ("cmd: missing", "bad version 7 (this
 * daemon speaks 1)"); on error *req holds nothing to free.
 */
enum proto_status proto_request_decode(const char *line, size_t len, struct proto_request *req,
                                       char *err, size_t errlen);
void proto_request_free(struct proto_request *req);

/* Encode a request as one line with a trailing newline; returns a malloc'd string. */
char *proto_request_encode(int64_t id, const char *cmd, struct json_object *args);

/*
 * Encode a reply line (trailing newline included; malloc'd).  data may be NULL; it is not
 * consumed.  message may be NULL for PROTO_OK.
 */
char *proto_reply_encode(int64_t id, enum proto_status status, const char *message,
                         struct json_object *data);

/* An event line of a followed event stream: {"version":1,"event":{...}}; malloc'd. */
char *proto_event_encode(struct json_object *event);

/* Decode a reply (client side).  Returns 0 or -EINVAL with a message in err. */
struct proto_reply {
	int version;
	int64_t id;
	int status;
	char message[512];
	struct json_object *data;  /* owned (NULL when absent) */
	struct json_object *event; /* set instead of status for an event line; owned */
	struct json_object *root;
};
int proto_reply_decode(const char *line, size_t len, struct proto_reply *rep, char *err,
                       size_t errlen);
void proto_reply_free(struct proto_reply *rep);

const char *proto_status_name(int status);

/*
 * Check a request's args against a command's spec: space-separated KEY:TYPES, TYPES being
 * letters of s (string), i (integer), b (boolean), e.g. "vm:s vcpu:i node:si".  Every key in
 * args must be in the spec with one of its types, and no string may hold a NUL byte.
 * PROTO_OK, or PROTO_BAD_REQUEST with a message naming the argument.
 */
enum proto_status proto_args_check(struct json_object *args, const char *spec, char *err,
                                   size_t errlen);

/*
 * s (len bytes) with every byte that is not part of valid UTF-8 replaced by U+FFFD;
 * malloc'd, NUL-terminated, its length in *out_len when not NULL.  Replies and events are
 * sanitized so on the way out.
 */
char *proto_utf8_sanitize(const char *s, size_t len, size_t *out_len);

/*
 * Argument helpers for handlers: 0, -ENOENT (absent), or -EINVAL (wrong type; a string with
 * a NUL byte inside).
 */
int proto_arg_string(struct json_object *args, const char *key, const char **out);
int proto_arg_int(struct json_object *args, const char *key, int64_t *out);
int proto_arg_bool(struct json_object *args, const char *key, bool *out);

#endif

/*
 * fuzz_proto.c - libFuzzer target for the control protocol (agent/proto.c): the request
 * decoder the daemon runs on every line a client sends, then what the daemon does with a
 * request that decodes before any handler runs - the command's argument check against its
 * spec in daemon_commands (agent/handlers.c) and the typed argument getters - and the
 * client's reply decoder.  The encoders are checked on the same bytes: a reply or event
 * whose message, key or string value holds them must still be one valid line.
 *
 * Built by `make fuzz` with tests/fuzz/proto.dict (JSON tokens, every command and argument
 * name; docs/fuzzing.md).  Add any crash or interesting input it finds to
 * tests/fuzz/corpus/proto/; the gcc build replays that directory in every ctest run
 * (tests/unit/test_fuzz_replay_proto.c).
 */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/control.h"
#include "agent/daemon.h"
#include "agent/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The spec of cmd in daemon_commands; NULL for an unknown command. */
static const char *
fuzz_proto_spec(const char *cmd)
{
	for (const struct control_command *c = daemon_commands; c->name != NULL; c++)
		if (strcmp(c->name, cmd) == 0)
			return c->args != NULL ? c->args : "";
	return NULL;
}

/* After a good args check, every argument reads with one of the types its spec allows. */
static void
fuzz_proto_args(struct json_object *args, const char *spec)
{
	char err[256];

	err[0] = '\0';
	if (proto_args_check(args, spec, err, sizeof(err)) != PROTO_OK) {
		if (err[0] == '\0')
			abort();
		return;
	}
	json_object_object_foreach(args, key, val)
	{
		const char *s;
		int64_t i;
		bool b;
		int got = proto_arg_string(args, key, &s) == 0 ||
		          proto_arg_int(args, key, &i) == 0 || proto_arg_bool(args, key, &b) == 0;

		if (val != NULL && !got)
			abort();
	}
}

/* A line the encoders wrote: one line, which the client decodes. */
static void
fuzz_proto_line(char *line, int64_t id, bool event)
{
	struct proto_reply rep;
	size_t len = strlen(line);
	char err[256];

	if (len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len - 1) != NULL ||
	    proto_reply_decode(line, len - 1, &rep, err, sizeof(err)) != 0 ||
	    (rep.event != NULL) != event || (!event && rep.id != id))
		abort();
	proto_reply_free(&rep);
	free(line);
}

/* The input as a reply's message and as an event's key and value. */
static void
fuzz_proto_encode(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct json_object *ev = json_object_new_object();

	if (text == NULL || ev == NULL)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	fuzz_proto_line(proto_reply_encode(7, PROTO_BAD_REQUEST, text, NULL), 7, false);
	json_object_object_add(ev, text, json_object_new_string_len(text, (int)size));
	fuzz_proto_line(proto_event_encode(ev), 0, true);
	fuzz_proto_line(proto_reply_encode(8, PROTO_OK, NULL, ev), 8, false);
	json_object_put(ev);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_request req;
	struct proto_reply rep;
	const char *spec;
	char err[256];

	err[0] = '\0';
	if (proto_request_decode((const char *)data, size, &req, err, sizeof(err)) == PROTO_OK) {
		if ((spec = fuzz_proto_spec(req.cmd)) != NULL)
			fuzz_proto_args(req.args, spec);
		proto_request_free(&req);
	} else if (err[0] == '\0') {
		abort(); /* every refusal carries a message */
	}
	if (proto_reply_decode((const char *)data, size, &rep, err, sizeof(err)) == 0)
		proto_reply_free(&rep);
	if (size < PROTO_MAX_LINE)
		fuzz_proto_encode(data, size);
	return 0;
}

/*
 * test_proto.c - the control protocol encoder and decoder: a table of hostile and valid
 * request lines, round trips, argument helpers, and a seeded mutation loop that must never
 * crash the decoder (set VNUMAD_SEED to replay a failure).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/proto.h"
#include "policy/util.h"

/* Mutated inputs per run of the property test. */
#define FUZZ_ITERATIONS   20000
#define FUZZ_DEFAULT_SEED 20240611ULL

struct decode_case {
	const char *name;
	const char *line;
	size_t len; /* 0: strlen(line) */
	int status;
	const char *message; /* substring of the error, or NULL for PROTO_OK */
	int64_t id;          /* expected req.id (echoed even on error) */
};

#define V "\"version\":1,"

static const struct decode_case decode_cases[] = {
    {"empty", "", 0, 400, "empty request", 0},
    {"blank", " \t \r", 0, 400, "empty request", 0},
    {"garbage", "hello world", 0, 400, "malformed JSON", 0},
    {"truncated", "{" V "\"cmd\":\"list\"", 0, 400, "malformed JSON", 0},
    {"truncated string", "{" V "\"cmd\":\"li", 0, 400, "malformed JSON", 0},
    {"array", "[1,2,3]", 0, 400, "JSON array, not an object", 0},
    {"number", "42", 0, 400, "JSON int, not an object", 0},
    {"string", "\"list\"", 0, 400, "JSON string, not an object", 0},
    {"null", "null", 0, 400, "null, not an object", 0},
    {"missing version", "{\"id\":3,\"cmd\":\"list\"}", 0, 426, "version: missing", 3},
    {"wrong version", "{\"version\":7,\"id\":5,\"cmd\":\"list\"}", 0, 426,
     "bad version 7 (this daemon speaks 1)", 5},
    {"version zero", "{\"version\":0,\"cmd\":\"list\"}", 0, 426, "bad version 0", 0},
    {"version string", "{\"version\":\"1\",\"cmd\":\"list\"}", 0, 426, "version: not an integer",
     0},
    {"version double", "{\"version\":1.0,\"cmd\":\"list\"}", 0, 426, "version: not an integer", 0},
    {"version null", "{\"version\":null,\"cmd\":\"list\"}", 0, 426, "version: missing", 0},
    {"missing cmd", "{" V "\"id\":4}", 0, 400, "cmd: missing", 4},
    {"cmd number", "{" V "\"cmd\":5}", 0, 400, "cmd: not a string", 0},
    {"cmd object", "{" V "\"cmd\":{}}", 0, 400, "cmd: not a string", 0},
    {"cmd empty", "{" V "\"cmd\":\"\"}", 0, 400, "cmd: empty", 0},
    {"cmd too long", "{" V "\"cmd\":\"abcdefghijklmnopqrstuvwxyz0123456\"}", 0, 400,
     "cmd: longer than 31 bytes", 0},
    {"cmd escaped NUL", "{" V "\"cmd\":\"li\\u0000st\"}", 0, 400, "cmd: contains a NUL", 0},
    {"args array", "{" V "\"cmd\":\"list\",\"args\":[]}", 0, 400, "args: not an object", 0},
    {"args string", "{" V "\"cmd\":\"list\",\"args\":\"vm\"}", 0, 400, "args: not an object", 0},
    {"id string", "{" V "\"id\":\"7\",\"cmd\":\"list\"}", 0, 400, "id: not an integer", 0},
    {"id double", "{" V "\"id\":1.5,\"cmd\":\"list\"}", 0, 400, "id: not an integer", 0},
    {"trailing garbage", "{" V "\"cmd\":\"list\"} x", 0, 400, "trailing garbage", 0},
    {"two objects", "{" V "\"cmd\":\"list\"}{}", 0, 400, "trailing garbage", 0},
    {"trailing comma", "{" V "\"cmd\":\"list\",}", 0, 400, "malformed JSON", 0},
    {"NUL byte", "{" V "\"cmd\":\"list\"\0}", 27, 400, "NUL byte at byte 25", 0},
    {"leading NUL", "\0{}", 3, 400, "NUL byte at byte 0", 0},
    {"bad utf-8", "{" V "\"cmd\":\"list\",\"args\":{\"vm\":\"\xff\xfe\"}}", 0, 400,
     "malformed JSON", 0},
    {"deep nesting",
     "{" V "\"cmd\":\"list\",\"args\":{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]"
     "]]]]]]]]]]]]]}}",
     0, 400, "malformed JSON", 0},
    {"valid", "{" V "\"id\":7,\"cmd\":\"vminfo\",\"args\":{\"vm\":\"db1\"}}", 0, 0, NULL, 7},
    {"valid no id no args", "{" V "\"cmd\":\"list\"}", 0, 0, NULL, 0},
    {"valid whitespace", "  { \"cmd\" : \"list\" , \"version\" : 1 }  \r", 0, 0, NULL, 0},
    {"valid unicode",
     "{" V "\"id\":-9,\"cmd\":\"vminfo\",\"args\":{\"vm\":\"d\xc3\xa9j\xc3\xa0-"
     "\xf0\x9f\x98\x80\",\"x\":\"\\u00e9\"}}",
     0, 0, NULL, -9},
    {"valid longest cmd", "{" V "\"cmd\":\"abcdefghijklmnopqrstuvwxyz01234\"}", 0, 0, NULL, 0},
    {"valid extra field", "{" V "\"cmd\":\"list\",\"future\":[1,{}]}", 0, 0, NULL, 0},
    {"valid null args", "{" V "\"cmd\":\"list\",\"args\":null}", 0, 0, NULL, 0},
};

static void
test_decode_table(void **state)
{
	for (size_t i = 0; i < sizeof(decode_cases) / sizeof(decode_cases[0]); i++) {
		const struct decode_case *tc = &decode_cases[i];
		size_t len = tc->len != 0 ? tc->len : strlen(tc->line);
		struct proto_request req;
		char err[256];
		enum proto_status st = proto_request_decode(tc->line, len, &req, err, sizeof(err));

		print_message("case '%s': %d %s\n", tc->name, (int)st, err);
		assert_int_equal(st, tc->status);
		assert_int_equal(req.id, tc->id);
		if (tc->message != NULL) {
			assert_non_null(strstr(err, tc->message));
			assert_null(req.root);
			assert_null(req.args);
			continue;
		}
		assert_int_equal(req.version, PROTO_VERSION);
		assert_non_null(req.root);
		assert_true(json_object_is_type(req.args, json_type_object));
		proto_request_free(&req);
	}
}

static void
test_decode_fields(void **state)
{
	const char *line = "{\"version\":1,\"id\":7,\"cmd\":\"pin\",\"args\":{\"vm\":\"db1\","
	                   "\"vcpu\":3,\"live\":true}}";
	struct proto_request req;
	const char *vm = NULL;
	int64_t vcpu = -1;
	bool live = false;
	char err[128];

	assert_int_equal(proto_request_decode(line, strlen(line), &req, err, sizeof(err)), 0);
	assert_string_equal(req.cmd, "pin");
	assert_int_equal(req.id, 7);
	assert_int_equal(proto_arg_string(req.args, "vm", &vm), 0);
	assert_string_equal(vm, "db1");
	assert_int_equal(proto_arg_int(req.args, "vcpu", &vcpu), 0);
	assert_int_equal(vcpu, 3);
	assert_int_equal(proto_arg_bool(req.args, "live", &live), 0);
	assert_true(live);
	proto_request_free(&req);
	proto_request_free(&req); /* idempotent */
}

static void
test_decode_size_limit(void **state)
{
	char *line = xmalloc(PROTO_MAX_LINE + 1);
	const char *head = "{\"version\":1,\"cmd\":\"list\"}";
	struct proto_request req;
	char err[128];

	/* PROTO_MAX_LINE includes the newline: PROTO_MAX_LINE - 1 bytes of line still fit. */
	memset(line, ' ', PROTO_MAX_LINE + 1);
	memcpy(line, head, strlen(head));
	assert_int_equal(proto_request_decode(line, PROTO_MAX_LINE - 1, &req, err, sizeof(err)),
	                 PROTO_OK);
	proto_request_free(&req);
	assert_int_equal(proto_request_decode(line, PROTO_MAX_LINE, &req, err, sizeof(err)),
	                 PROTO_TOO_LARGE);
	assert_non_null(strstr(err, "too large"));
	assert_int_equal(proto_request_decode(line, PROTO_MAX_LINE + 1, &req, err, sizeof(err)),
	                 PROTO_TOO_LARGE);
	free(line);
	assert_int_equal(proto_request_decode(NULL, 0, &req, err, sizeof(err)), PROTO_BAD_REQUEST);
}

/* Exactly one newline, at the end. */
static void
assert_one_line(const char *line)
{
	size_t len = strlen(line);

	assert_true(len > 1);
	assert_int_equal(line[len - 1], '\n');
	assert_null(memchr(line, '\n', len - 1));
}

static void
test_request_roundtrip(void **state)
{
	struct json_object *args = json_object_new_object();
	struct proto_request req;
	const char *s = NULL;
	char err[128];
	char *line;

	json_object_object_add(args, "vm", json_object_new_string("web\n1 \xc3\xa9/x"));
	line = proto_request_encode(42, "vminfo", args);
	assert_one_line(line);
	assert_int_equal(proto_request_decode(line, strlen(line) - 1, &req, err, sizeof(err)), 0);
	assert_int_equal(req.id, 42);
	assert_string_equal(req.cmd, "vminfo");
	assert_int_equal(proto_arg_string(req.args, "vm", &s), 0);
	assert_string_equal(s, "web\n1 \xc3\xa9/x");
	proto_request_free(&req);
	free(line);
	/* args not consumed, and NULL args decode as an empty object */
	assert_int_equal(json_object_object_length(args), 1);
	json_object_put(args);
	line = proto_request_encode(INT64_MAX, "list", NULL);
	assert_int_equal(proto_request_decode(line, strlen(line), &req, err, sizeof(err)), 0);
	assert_int_equal(req.id, INT64_MAX);
	assert_int_equal(json_object_object_length(req.args), 0);
	proto_request_free(&req);
	free(line);
}

static void
test_reply_roundtrip(void **state)
{
	struct json_object *data = json_object_new_object();
	struct proto_reply rep;
	struct json_object *v;
	char err[128];
	char *line;

	json_object_object_add(data, "nr_vms", json_object_new_int(3));
	line = proto_reply_encode(9, PROTO_OK, NULL, data);
	assert_one_line(line);
	assert_int_equal(proto_reply_decode(line, strlen(line) - 1, &rep, err, sizeof(err)), 0);
	assert_int_equal(rep.id, 9);
	assert_int_equal(rep.status, 0);
	assert_string_equal(rep.message, "ok");
	assert_null(rep.event);
	assert_true(json_object_object_get_ex(rep.data, "nr_vms", &v));
	assert_int_equal(json_object_get_int(v), 3);
	proto_reply_free(&rep);
	free(line);
	json_object_put(data); /* still ours */

	line = proto_reply_encode(10, PROTO_NOT_FOUND, "no VM 'db9'", NULL);
	assert_int_equal(proto_reply_decode(line, strlen(line), &rep, err, sizeof(err)), 0);
	assert_int_equal(rep.status, 404);
	assert_string_equal(rep.message, "no VM 'db9'");
	assert_null(rep.data);
	proto_reply_free(&rep);
	free(line);

	line = proto_reply_encode(11, PROTO_CONFLICT, NULL, NULL);
	assert_int_equal(proto_reply_decode(line, strlen(line), &rep, err, sizeof(err)), 0);
	assert_string_equal(rep.message, "conflict");
	proto_reply_free(&rep);
	free(line);
}

static void
test_event_roundtrip(void **state)
{
	struct json_object *ev = json_object_new_object();
	struct proto_reply rep;
	struct json_object *v;
	char err[128];
	char *line;

	json_object_object_add(ev, "seq", json_object_new_int(5));
	json_object_object_add(ev, "kind", json_object_new_string("pin"));
	line = proto_event_encode(ev);
	assert_one_line(line);
	assert_int_equal(proto_reply_decode(line, strlen(line), &rep, err, sizeof(err)), 0);
	assert_non_null(rep.event);
	assert_true(json_object_object_get_ex(rep.event, "seq", &v));
	assert_int_equal(json_object_get_int(v), 5);
	proto_reply_free(&rep);
	free(line);
	json_object_put(ev);
}

static void
test_reply_decode_rejects(void **state)
{
	static const char *bad[] = {
	    "",
	    "junk",
	    "[]",
	    "{\"id\":1,\"status\":0}",
	    "{\"version\":2,\"id\":1,\"status\":0}",
	    "{\"version\":1,\"id\":1}",
	    "{\"version\":1,\"id\":1,\"status\":\"0\"}",
	    "{\"version\":1,\"id\":\"x\",\"status\":0}",
	    "{\"version\":1,\"event\":[]}",
	    "{\"version\":1,\"status\":0} {",
	};
	struct proto_reply rep;
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(proto_reply_decode(bad[i], strlen(bad[i]), &rep, err, sizeof(err)),
		                 -EINVAL);
		assert_true(err[0] != '\0');
		assert_null(rep.root);
		assert_null(rep.data);
	}
}

static void
test_arg_helpers(void **state)
{
	struct json_object *args = json_tokener_parse(
	    "{\"s\":\"x\",\"i\":-4,\"b\":false,\"n\":null,\"d\":2.5,\"big\":9007199254740993,"
	    "\"z\":\"web1\\u0000zzz\"}");
	const char *s = "untouched";
	int64_t i = 1;
	bool b = true;

	assert_int_equal(proto_arg_string(args, "s", &s), 0);
	assert_string_equal(s, "x");
	assert_int_equal(proto_arg_int(args, "i", &i), 0);
	assert_int_equal(i, -4);
	assert_int_equal(proto_arg_int(args, "big", &i), 0);
	assert_int_equal(i, 9007199254740993LL);
	assert_int_equal(proto_arg_bool(args, "b", &b), 0);
	assert_false(b);
	assert_int_equal(proto_arg_string(args, "missing", &s), -ENOENT);
	assert_int_equal(proto_arg_string(args, "n", &s), -ENOENT);
	assert_int_equal(proto_arg_string(args, "i", &s), -EINVAL);
	assert_int_equal(proto_arg_string(args, "z", &s), -EINVAL); /* NUL inside: not "web1" */
	assert_int_equal(proto_arg_int(args, "d", &i), -EINVAL);
	assert_int_equal(proto_arg_int(args, "s", &i), -EINVAL);
	assert_int_equal(proto_arg_bool(args, "i", &b), -EINVAL);
	assert_int_equal(proto_arg_bool(NULL, "b", &b), -ENOENT);
	assert_string_equal(s, "x");
	assert_int_equal(i, 9007199254740993LL);
	json_object_put(args);
}

static void
test_status_names(void **state)
{
	assert_string_equal(proto_status_name(PROTO_OK), "ok");
	assert_string_equal(proto_status_name(PROTO_BAD_REQUEST), "bad request");
	assert_string_equal(proto_status_name(PROTO_FORBIDDEN), "forbidden");
	assert_string_equal(proto_status_name(PROTO_NOT_FOUND), "not found");
	assert_string_equal(proto_status_name(PROTO_TOO_LARGE), "request too large");
	assert_string_equal(proto_status_name(PROTO_BAD_VERSION), "bad version");
	assert_string_equal(proto_status_name(PROTO_UNSUPPORTED), "not supported");
	assert_string_equal(proto_status_name(999), "unknown status");
}

/* ---- seeded mutation loop ---- */

static const char *const fuzz_bases[] = {
    "{\"version\":1,\"id\":7,\"cmd\":\"vminfo\",\"args\":{\"vm\":\"db1\"}}",
    "{\"version\":1,\"id\":1,\"cmd\":\"events\",\"args\":{\"since\":10,\"follow\":true}}",
    "{\"version\":1,\"cmd\":\"policy\",\"args\":{\"vm\":\"7\",\"mode\":\"strict\",\"nodes\":"
    "\"0-1\",\"rate\":\"100MiB/s\"}}",
    "{\"version\":1,\"id\":3,\"cmd\":\"list\"}",
};

static const char *const fuzz_tokens[] = {
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "\\",
    "\\u0000",
    "\\ud800",
    "null",
    "true",
    "1e999",
    "-0",
    "\n",
    " ",
    "\xff",
    "\xc3",
    "\"version\":1",
    "\"cmd\":",
    "99999999999999999999999",
};

static size_t
fuzz_mutate(struct util_rng *rng, char *buf, size_t len, size_t cap)
{
	uint32_t op = util_rng_below(rng, 6);
	size_t pos = len == 0 ? 0 : util_rng_below(rng, (uint32_t)len + 1);

	if (op == 0 && len > 0 && pos < len) { /* flip a byte */
		buf[pos] = (char)util_rng_u32(rng);
	} else if (op == 1 && len > 0 && pos < len) { /* delete a run */
		size_t n = 1 + util_rng_below(rng, 8);

		n = n > len - pos ? len - pos : n;
		memmove(buf + pos, buf + pos + n, len - pos - n);
		len -= n;
	} else if (op == 2) { /* truncate */
		len = pos;
	} else if (op == 3 && len < cap) { /* insert a random byte */
		memmove(buf + pos + 1, buf + pos, len - pos);
		buf[pos] = (char)util_rng_u32(rng);
		len++;
	} else { /* insert a JSON-ish token */
		const char *tok =
		    fuzz_tokens[util_rng_below(rng, sizeof(fuzz_tokens) / sizeof(fuzz_tokens[0]))];
		size_t n = strlen(tok);

		if (len + n <= cap) {
			memmove(buf + pos + n, buf + pos, len - pos);
			memcpy(buf + pos, tok, n);
			len += n;
		}
	}
	return len;
}

/* The decoder's contract on any input: a known status, a message, consistent ownership. */
static bool
fuzz_check_one(const char *buf, size_t len, enum proto_status *stp, char *why, size_t whylen)
{
	struct proto_request req;
	char err[256] = "";
	enum proto_status st = proto_request_decode(buf, len, &req, err, sizeof(err));

	*stp = st;
	if (err[0] == '\0') {
		snprintf(why, whylen, "status %d with no message", (int)st);
		return false;
	}
	if (st != PROTO_OK) {
		if ((st != 400 && st != 413 && st != 426) || req.root != NULL || req.args != NULL) {
			snprintf(why, whylen, "bad error status %d or leftovers", (int)st);
			return false;
		}
		return true;
	}
	if (req.version != PROTO_VERSION || req.cmd[0] == '\0' ||
	    strlen(req.cmd) >= PROTO_CMD_MAX || !json_object_is_type(req.args, json_type_object)) {
		snprintf(why, whylen, "accepted an inconsistent request");
		proto_request_free(&req);
		return false;
	}
	proto_request_free(&req);
	return true;
}

static void
test_decode_mutations_never_crash(void **state)
{
	const char *env = getenv("VNUMAD_SEED");
	uint64_t seed = env != NULL ? strtoull(env, NULL, 0) : FUZZ_DEFAULT_SEED;
	size_t cap = 4096, len;
	char *buf = xmalloc(cap);
	struct util_rng rng;
	char why[128];
	int accepted = 0, refused = 0;
	enum proto_status st;

	util_rng_seed(&rng, seed, 1);
	for (int i = 0; i < FUZZ_ITERATIONS; i++) {
		if (util_rng_below(&rng, 10) == 0) { /* pure random bytes */
			len = util_rng_below(&rng, 200);
			for (size_t k = 0; k < len; k++)
				buf[k] = (char)util_rng_u32(&rng);
		} else {
			const char *base = fuzz_bases[util_rng_below(
			    &rng, sizeof(fuzz_bases) / sizeof(fuzz_bases[0]))];
			int rounds = 1 + (int)util_rng_below(&rng, 4);

			len = strlen(base);
			memcpy(buf, base, len);
			for (int r = 0; r < rounds; r++)
				len = fuzz_mutate(&rng, buf, len, cap);
		}
		if (!fuzz_check_one(buf, len, &st, why, sizeof(why)))
			fail_msg("seed %" PRIu64
			         " iteration %d: %s (rerun with VNUMAD_SEED=%" PRIu64 ")",
			         seed, i, why, seed);
		if (st == PROTO_OK)
			accepted++;
		else
			refused++;
	}
	print_message("seed %" PRIu64 ": %d accepted, %d refused\n", seed, accepted, refused);
	/* Both sides of the decoder were explored, or the mutations are too weak or too strong. */
	assert_true(accepted > FUZZ_ITERATIONS / 100);
	assert_true(refused > FUZZ_ITERATIONS / 2);
	free(buf);
}

static void
test_reply_decode_mutations(void **state)
{
	const char *base = "{\"version\":1,\"id\":3,\"status\":404,\"message\":\"no VM 'x'\","
	                   "\"data\":{\"a\":[1,2]}}";
	size_t cap = 1024, len;
	char *buf = xmalloc(cap);
	struct util_rng rng;
	struct proto_reply rep;
	char err[128];

	util_rng_seed(&rng, FUZZ_DEFAULT_SEED, 2);
	for (int i = 0; i < FUZZ_ITERATIONS / 4; i++) {
		int rc;

		len = strlen(base);
		memcpy(buf, base, len);
		len = fuzz_mutate(&rng, buf, len, cap);
		rc = proto_reply_decode(buf, len, &rep, err, sizeof(err));
		if (rc != 0 && rc != -EINVAL)
			fail_msg("iteration %d: rc %d", i, rc);
		if (rc == 0)
			proto_reply_free(&rep);
	}
	free(buf);
}

/* json-c keeps the last of duplicate keys: "cmd":"status","cmd":"pause" must not pause. */
static void
test_decode_duplicate_keys(void **state)
{
	static const char *const bad[] = {
	    "{\"version\":1,\"cmd\":\"status\",\"cmd\":\"pause\"}",
	    "{\"version\":1,\"cmd\":\"status\",\"c\\u006dd\":\"pause\"}",
	    "{\"version\":1,\"cmd\":\"pin\",\"args\":{\"vm\":\"a\",\"vm\":\"b\"}}",
	    "{\"version\":1,\"version\":1,\"cmd\":\"list\"}",
	};
	static const char *const good[] = {
	    "{\"version\":1,\"cmd\":\"list\",\"args\":{\"cmd\":\"x\",\"s\":\"a:b\\\"c\\\\\", \"t\" "
	    ": \"\"}}",
	    "{\"version\":1,\"cmd\":\"list\",\"args\":{\"a\":{\"a\":1},\"b\":[{\"a\":2}]}}",
	};
	struct proto_request req;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
		    proto_request_decode(bad[i], strlen(bad[i]), &req, err, sizeof(err)),
		    PROTO_BAD_REQUEST);
		assert_non_null(strstr(err, "twice"));
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(
		    proto_request_decode(good[i], strlen(good[i]), &req, err, sizeof(err)),
		    PROTO_OK);
		proto_request_free(&req);
	}
}

/* Every argument of a command has its JSON type; strings carry no NUL. */
static void
test_args_check(void **state)
{
	static const char spec[] = "vm:s vcpu:i follow:b node:si";
	static const struct {
		const char *args;
		const char *msg; /* NULL: accepted */
	} cases[] = {
	    {"{}", NULL},
	    {"{\"vm\":\"web1\",\"vcpu\":3,\"follow\":true,\"node\":\"0-1\"}", NULL},
	    {"{\"node\":2,\"vm\":null}", NULL},
	    {"{\"scope\":\"live\"}", "unknown argument 'scope' (this command takes: vm, vcpu"},
	    {"{\"vm\":7}", "argument 'vm': expected a string, not int"},
	    {"{\"vcpu\":\"3\"}", "argument 'vcpu': expected an integer, not string"},
	    {"{\"follow\":1}", "argument 'follow': expected a boolean"},
	    {"{\"node\":1.5}", "argument 'node': expected a string or an integer, not double"},
	    {"{\"vm\":\"web1\\u0000zzz\"}", "argument 'vm': contains a NUL byte"},
	    {"{\"vm\":[\"web1\"]}", "argument 'vm': expected a string, not array"},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *args = json_tokener_parse(cases[i].args);
		enum proto_status st = proto_args_check(args, spec, err, sizeof(err));

		if (cases[i].msg == NULL) {
			assert_int_equal(st, PROTO_OK);
		} else {
			assert_int_equal(st, PROTO_BAD_REQUEST);
			if (strstr(err, cases[i].msg) == NULL)
				fail_msg("%s: got '%s', want '%s'", cases[i].args, err,
				         cases[i].msg);
		}
		json_object_put(args);
	}
	/* "" takes nothing; NULL checks nothing */
	{
		struct json_object *args = json_tokener_parse("{\"x\":1}");

		assert_int_equal(proto_args_check(args, "", err, sizeof(err)), PROTO_BAD_REQUEST);
		assert_non_null(strstr(err, "takes: none"));
		assert_int_equal(proto_args_check(args, NULL, err, sizeof(err)), PROTO_OK);
		json_object_put(args);
	}
}

/* A reply carrying bytes that are not UTF-8 (a QEMU -name, a file name) still parses. */
static void
test_reply_sanitizes_utf8(void **state)
{
	struct json_object *data = json_object_new_object(), *arr = json_object_new_array();
	struct proto_reply rep;
	char err[256], *line, *fixed;
	size_t n;

	(void)state;
	json_object_object_add(data, "name", json_object_new_string("web\xff\xfe-1"));
	json_object_object_add(data, "ok", json_object_new_string("caf\xc3\xa9 \xe2\x82\xac"));
	json_object_array_add(arr, json_object_new_string("\xc0\xaf overlong"));
	json_object_object_add(data, "list", arr);
	json_object_object_add(data, "k\xed\xa0\x80y", json_object_new_int(1)); /* a surrogate */
	line = proto_reply_encode(3, PROTO_OK, NULL, data);
	json_object_put(data);
	assert_int_equal(proto_reply_decode(line, strlen(line) - 1, &rep, err, sizeof(err)), 0);
	assert_string_equal(json_object_get_string(json_object_object_get(rep.data, "name")),
	                    "web\xef\xbf\xbd\xef\xbf\xbd-1");
	assert_string_equal(json_object_get_string(json_object_object_get(rep.data, "ok")),
	                    "caf\xc3\xa9 \xe2\x82\xac");
	assert_non_null(json_object_object_get(rep.data, "k\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdy"));
	proto_reply_free(&rep);
	free(line);
	fixed = proto_utf8_sanitize("\xf4\x90\x80\x80!", 5, &n); /* beyond U+10FFFF */
	assert_int_equal(n, 13);
	free(fixed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_table),
	    cmocka_unit_test(test_decode_fields),
	    cmocka_unit_test(test_decode_size_limit),
	    cmocka_unit_test(test_request_roundtrip),
	    cmocka_unit_test(test_reply_roundtrip),
	    cmocka_unit_test(test_event_roundtrip),
	    cmocka_unit_test(test_reply_decode_rejects),
	    cmocka_unit_test(test_arg_helpers),
	    cmocka_unit_test(test_decode_duplicate_keys),
	    cmocka_unit_test(test_args_check),
	    cmocka_unit_test(test_reply_sanitizes_utf8),
	    cmocka_unit_test(test_status_names),
	    cmocka_unit_test(test_decode_mutations_never_crash),
	    cmocka_unit_test(test_reply_decode_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

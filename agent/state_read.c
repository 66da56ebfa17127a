/*
 * state_read.c - reading the state file (state.h): a reader for every version of the format
 * ever shipped, and for the daemon a file it cannot use set aside rather than stopping it.
 *
 * Versions (the STATE FILE section of docs/vnumad.8; one fixture each in tests/fixtures/state):
 *
 *   1  {"version": 1,
 *       "vcpus": [{"vm": "db1", "vm_id": 4242, "vcpu": 0, "tid": 4250, "orig_nodes": "0-3"}]}
 *      Every release so far.  Releases before 0395619 cut names to 63 bytes when recording
 *      them; such files read as they are.  Still written when no scan tunables are saved.
 *
 *   2  version 1's fields, and "scan": {"delay_ms": 1000, "period_min_ms": 1000,
 *      "period_max_ms": 60000, "size_mb": 256}, the admin's kernel scan tunables while vnumad
 *      has them slowed (agent/scan_lever.c).  "scan" may be left out.
 *
 * A change of format gets a new version and a reader in state_readers[]; the readers of older
 * versions stay, so that the release after an upgrade reads what the one before wrote.
 *
 * The readers distrust the file: every field is checked for type and range, unknown fields and
 * duplicate vCPUs are errors, and any error gives a message naming the field ("vcpus[2].tid:
 * ...").  A file that fails that way, or is of a version this vnumad has no reader for, is
 * what state_load_or_set_aside() renames aside; from it, only the entries that have the
 * version-1 fields with their version-1 types and ranges are taken (extra fields ignored),
 * and a "scan" object with version 2's fields, types and ranges.
 */
#include "host/fileio.h"
#include "agent/state.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "policy/idlist.h"
#include "policy/util.h"

/* Deepest JSON nesting accepted: version 1 needs 3 (object, array, object). */
#define STATE_JSON_DEPTH 8

/* Bytes of a reason ("vcpus[N].field: ...", quoting a name of STATE_VM_NAME_MAX bytes). */
#define STATE_WHY_MAX (STATE_VM_NAME_MAX + 128)

/*
 * Names a set-aside file may take: PATH.vN.TIME.bad, then PATH.vN.TIME.2.bad and on, so that
 * a second file set aside within the same second never replaces the first.
 */
#define STATE_ASIDE_TRIES 100

/* ---- fields ---------------------------------------------------------------------------------- */

/* An integer field of obj in [min, max]; -EINVAL with the reason in why. */
static int
state_json_int(json_object *obj, const char *key, int min, int max, int *out, const char **why)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(obj, key, &v)) {
		*why = "is missing";
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_int)) {
		*why = "is not an integer";
		return -EINVAL;
	}
	n = json_object_get_int64(v);
	if (n < min || n > max) {
		*why = "is out of range";
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

static int
state_json_string(json_object *obj, const char *key, const char **out, const char **why)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v)) {
		*why = "is missing";
		return -EINVAL;
	}
	if (!json_object_is_type(v, json_type_string)) {
		*why = "is not a string";
		return -EINVAL;
	}
	*out = json_object_get_string(v);
	if (strlen(*out) != (size_t)json_object_get_string_len(v)) {
		*why = "contains a NUL character";
		return -EINVAL;
	}
	return 0;
}

/* The first member of obj whose name is not in names (NULL-terminated), or NULL. */
static const char *
state_json_unknown_key(json_object *obj, const char *const *names)
{
	json_object_object_foreach(obj, key, val)
	{
		size_t i;

		(void)val;
		for (i = 0; names[i] != NULL && strcmp(names[i], key) != 0; i++)
			;
		if (names[i] == NULL)
			return key;
	}
	return NULL;
}

/* ---- version 1 ------------------------------------------------------------------------------- */

/* One vcpus[] element of version 1, checked. */
struct state_v1_entry {
	const char *vm; /* points into the JSON object */
	int vm_id, vcpu, tid;
	uint64_t orig_nodes;
};

/*
 * Check one vcpus[] element against version 1 into *out; -EINVAL with ".field: reason" in
 * why.  strict: a field version 1 does not have is an error, else it is ignored.
 */
static int
state_v1_entry_check(json_object *jo, bool strict, struct state_v1_entry *out, char *why,
                     size_t whylen)
{
	static const char *const fields[] = {"vm", "vm_id", "vcpu", "tid", "orig_nodes", NULL};
	const char *nodes = NULL, *reason = NULL, *field, *extra;
	char msg[IDLIST_ERR_MAX];

	if (!json_object_is_type(jo, json_type_object)) {
		snprintf(why, whylen, ": is not an object");
		return -EINVAL;
	}
	extra = strict ? state_json_unknown_key(jo, fields) : NULL;
	if (extra != NULL) {
		snprintf(why, whylen, ": unknown field \"%.64s\"", extra);
		return -EINVAL;
	}
	if ((field = "vm", state_json_string(jo, field, &out->vm, &reason)) < 0 ||
	    (field = "vm_id", state_json_int(jo, field, 1, INT_MAX, &out->vm_id, &reason)) < 0 ||
	    (field = "vcpu", state_json_int(jo, field, 0, INT_MAX, &out->vcpu, &reason)) < 0 ||
	    (field = "tid", state_json_int(jo, field, 1, INT_MAX, &out->tid, &reason)) < 0 ||
	    (field = "orig_nodes", state_json_string(jo, field, &nodes, &reason)) < 0) {
		snprintf(why, whylen, ".%s: %s", field, reason);
		return -EINVAL;
	}
	if (out->vm[0] == '\0' || strlen(out->vm) > STATE_VM_NAME_MAX) {
		snprintf(why, whylen, ".vm: must be 1 to %d bytes", STATE_VM_NAME_MAX);
		return -EINVAL;
	}
	if (nodemask_parse(nodes, 0, &out->orig_nodes, msg, sizeof(msg)) < 0) {
		snprintf(why, whylen, ".orig_nodes: is not a node list (%s; e.g. \"0-3\")", msg);
		return -EINVAL;
	}
	return 0;
}

/*
 * The vcpus array of versions 1 and 2, strictly, the top-level members being fields: any
 * error is the file's; -EINVAL with a message in why.
 */
static int
state_vcpus_read(struct state *st, json_object *root, const char *const *fields, char *why,
                 size_t whylen)
{
	char sub[STATE_VM_NAME_MAX + 64]; /* ": vm \"NAME\" vcpu N is listed twice" and shorter */
	const char *extra = state_json_unknown_key(root, fields);
	json_object *vcpus;

	if (extra != NULL) {
		snprintf(why, whylen, "unknown field \"%.64s\"", extra);
		return -EINVAL;
	}
	if (!json_object_object_get_ex(root, "vcpus", &vcpus) ||
	    !json_object_is_type(vcpus, json_type_array)) {
		snprintf(why, whylen, "vcpus: is missing or not an array");
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(vcpus); i++) {
		struct state_v1_entry e;

		if (state_v1_entry_check(json_object_array_get_idx(vcpus, i), true, &e, sub,
		                         sizeof(sub)) < 0) {
			snprintf(why, whylen, "vcpus[%zu]%s", i, sub);
			return -EINVAL;
		}
		if (state_find(st, e.vm, e.vcpu) != NULL) {
			snprintf(why, whylen, "vcpus[%zu]: vm \"%s\" vcpu %d is listed twice", i,
			         e.vm, e.vcpu);
			return -EINVAL;
		}
		state_record(st, e.vm, e.vm_id, e.vcpu, e.tid, e.orig_nodes);
	}
	return 0;
}

static int
state_v1_read(struct state *st, json_object *root, char *why, size_t whylen)
{
	static const char *const fields[] = {"version", "vcpus", NULL};

	return state_vcpus_read(st, root, fields, why, whylen);
}

/* ---- version 2 ------------------------------------------------------------------------------- */

/* Version 2's "scan" object, when there is one, into st; -EINVAL with a message in why. */
static int
state_scan_read(struct state *st, json_object *root, char *why, size_t whylen)
{
	static const char *const fields[] = {"delay_ms", "period_min_ms", "period_max_ms",
	                                     "size_mb", NULL};
	struct scan_tunables t;
	int *out[] = {&t.delay_ms, &t.period_min_ms, &t.period_max_ms, &t.size_mb};
	const char *reason, *extra;
	json_object *jo;

	if (!json_object_object_get_ex(root, "scan", &jo))
		return 0;
	if (!json_object_is_type(jo, json_type_object)) {
		snprintf(why, whylen, "scan: is not an object");
		return -EINVAL;
	}
	if ((extra = state_json_unknown_key(jo, fields)) != NULL) {
		snprintf(why, whylen, "scan: unknown field \"%.64s\"", extra);
		return -EINVAL;
	}
	for (int i = 0; fields[i] != NULL; i++)
		if (state_json_int(jo, fields[i], 0, INT_MAX, out[i], &reason) < 0) {
			snprintf(why, whylen, "scan.%s: %s", fields[i], reason);
			return -EINVAL;
		}
	state_scan_set(st, &t);
	return 0;
}

static int
state_v2_read(struct state *st, json_object *root, char *why, size_t whylen)
{
	static const char *const fields[] = {"version", "vcpus", "scan", NULL};
	int rc = state_vcpus_read(st, root, fields, why, whylen);

	return rc < 0 ? rc : state_scan_read(st, root, why, whylen);
}

/* ---- the readers ----------------------------------------------------------------------------- */

struct state_reader {
	int version;
	/* Load root (a JSON object whose "version" is this) into st; -EINVAL with why. */
	int (*read)(struct state *st, json_object *root, char *why, size_t whylen);
};

/* Every version ever shipped; STATE_FILE_VERSION, the one written, among them. */
static const struct state_reader state_readers[] = {
    {1, state_v1_read},
    {2, state_v2_read},
};

#define STATE_NR_READERS (sizeof(state_readers) / sizeof(state_readers[0]))

static const struct state_reader *
state_reader_of(int version)
{
	for (size_t i = 0; i < STATE_NR_READERS; i++)
		if (state_readers[i].version == version)
			return &state_readers[i];
	return NULL;
}

/* "1" or "1, 2": the versions read, for messages. */
static const char *
state_versions_read(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < STATE_NR_READERS && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? ", " : "",
		                        state_readers[i].version);
	return buf;
}

/*
 * The file's version (0 when it has none that is a positive integer) and the checks of its
 * reader: -EPROTONOSUPPORT when there is none for that version, -EINVAL for any other error.
 */
static int
state_root_load(struct state *st, json_object *root, int *version, char *why, size_t whylen)
{
	const struct state_reader *r;
	const char *reason;
	char versions[64];

	*version = 0;
	if (!json_object_is_type(root, json_type_object)) {
		snprintf(why, whylen, "not a JSON object");
		return -EINVAL;
	}
	if (state_json_int(root, "version", 1, INT_MAX, version, &reason) < 0) {
		snprintf(why, whylen, "version: %s", reason);
		return -EINVAL;
	}
	r = state_reader_of(*version);
	if (r == NULL) {
		snprintf(why, whylen, "version: %d: %s (this one reads %s)", *version,
		         *version > STATE_FILE_VERSION ? "written by a newer vnumad"
		                                       : "not a version vnumad ever wrote",
		         state_versions_read(versions, sizeof(versions)));
		return -EPROTONOSUPPORT;
	}
	return r->read(st, root, why, whylen);
}

/* ---- parsing --------------------------------------------------------------------------------- */

/* Parse data (len bytes, NUL-terminated) as one JSON value with only whitespace after it. */
static json_object *
state_json_parse(const char *data, size_t len, char *why, size_t whylen)
{
	json_tokener *tok;
	json_object *root;
	enum json_tokener_error jerr;
	size_t end;

	if (memchr(data, '\0', len) != NULL) {
		snprintf(why, whylen, "contains a NUL byte");
		return NULL;
	}
	if (strspn(data, " \t\r\n") == len) {
		snprintf(why, whylen, "empty file");
		return NULL;
	}
	tok = json_tokener_new_ex(STATE_JSON_DEPTH);
	if (tok == NULL)
		abort(); /* json-c allocation failure: out of memory, like xmalloc */
	/* No trailing commas or text, no other leniencies; strings must be valid UTF-8. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, data, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (root != NULL && jerr == json_tokener_success &&
	    strspn(data + end, " \t\r\n") == len - end)
		return root;
	snprintf(why, whylen, "not valid JSON: %s",
	         jerr == json_tokener_continue  ? "truncated"
	         : jerr != json_tokener_success ? json_tokener_error_desc(jerr)
	                                        : "text after the end");
	json_object_put(root);
	return NULL;
}

/* What reading a file found: the parsed JSON (kept for salvaging) and its version. */
struct state_parse {
	json_object *root; /* NULL when the file is not valid JSON */
	int version;       /* 0: none that is a positive integer */
	char why[STATE_WHY_MAX];
};

/*
 * Read path into a new state *out: 0 (also for a missing file: empty), or -errno and *out
 * NULL with the reason in p->why (without the path).  p->root is left for the caller to put.
 */
static int
state_read(const char *path, struct state **out, struct state_parse *p)
{
	struct state *st = state_new();
	char *data = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	p->root = NULL;
	p->version = 0;
	p->why[0] = '\0';
	rc = fileio_read(path, STATE_FILE_MAX_BYTES, &data, &len);
	if (rc == -ENOENT) {
		rc = 0; /* never saved: nothing to restore */
	} else if (rc < 0) {
		snprintf(p->why, sizeof(p->why), "cannot read: %s",
		         rc == -EFBIG ? "file too large" : strerror(-rc));
		rc = rc == -EFBIG ? -EINVAL : rc;
	} else {
		p->root = state_json_parse(data, len, p->why, sizeof(p->why));
		rc = p->root ? state_root_load(st, p->root, &p->version, p->why, sizeof(p->why))
		             : -EINVAL;
	}
	free(data);
	if (rc < 0) {
		state_free(st);
		return rc;
	}
	for (size_t i = 0; i < st->nr; i++)
		st->entries[i].saved = true; /* read from the file: on disk */
	st->dirty = false;
	*out = st;
	return 0;
}

int
state_load(const char *path, struct state **out, char *err, size_t errlen)
{
	struct state_parse *p = xmalloc(sizeof(*p));
	int rc = state_read(path, out, p);

	if (rc < 0)
		util_errf(err, errlen, "%s: %s", path, p->why);
	json_object_put(p->root);
	free(p);
	return rc;
}

/* ---- setting a file aside -------------------------------------------------------------------- */

/* Into st, the entries of root's vcpus array that pass version 1's checks; how many there were. */
static size_t
state_salvage(struct state *st, json_object *root)
{
	json_object *vcpus;
	char why[STATE_WHY_MAX];
	size_t n;

	/* The admin's scan tunables, when version 2's "scan" is whole: a crash's only record. */
	if (root != NULL && json_object_is_type(root, json_type_object))
		state_scan_read(st, root, why, sizeof(why));
	if (root == NULL || !json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "vcpus", &vcpus) ||
	    !json_object_is_type(vcpus, json_type_array))
		return 0;
	n = json_object_array_length(vcpus);
	for (size_t i = 0; i < n; i++) {
		struct state_v1_entry e;

		if (state_v1_entry_check(json_object_array_get_idx(vcpus, i), false, &e, why,
		                         sizeof(why)) == 0)
			state_record(st, e.vm, e.vm_id, e.vcpu, e.tid,
			             e.orig_nodes); /* a repeat: no-op */
	}
	return n;
}

/*
 * Rename path to the first free PATH[.vN].TIME[.K].bad into aside (TIME in UTC, as
 * 20260131T235959Z).  The caller holds the state lock, so no other vnumad takes that name in
 * between.  0 or -errno.
 */
static int
state_set_aside(const char *path, int version, char *aside, size_t len)
{
	char stamp[32], ver[24] = "";
	time_t now = time(NULL);
	struct stat sb;
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
		snprintf(stamp, sizeof(stamp), "%lld", (long long)now);
	if (version > 0)
		snprintf(ver, sizeof(ver), ".v%d", version);
	for (int k = 1; k <= STATE_ASIDE_TRIES; k++) {
		char nth[16] = "";

		if (k > 1)
			snprintf(nth, sizeof(nth), ".%d", k);
		if (snprintf(aside, len, "%s%s.%s%s.bad", path, ver, stamp, nth) >= (int)len)
			return -ENAMETOOLONG;
		if (lstat(aside, &sb) == 0)
			continue;
		if (errno != ENOENT)
			return -errno;
		return rename(path, aside) < 0 ? -errno : 0;
	}
	return -EEXIST;
}

int
state_load_or_set_aside(const char *path, struct state **out, char *note, size_t notelen)
{
	struct state_parse *p = xmalloc(sizeof(*p));
	char aside[PATH_MAX];
	size_t found;
	int rc;

	note[0] = '\0';
	rc = state_read(path, out, p);
	if (rc == 0)
		goto out;
	*out = state_new();
	found = state_salvage(*out, p->root);
	rc = state_set_aside(path, p->version, aside, sizeof(aside));
	if (rc < 0) {
		/* Left where it is, and never replaced: state_save refuses while this holds. */
		(*out)->keep_file = true;
		util_errf(note, notelen,
		          "%s: %s; cannot set it aside (%s): it stays, and no state is saved "
		          "until it is moved away; %zu of its %zu vCPU entries kept%s",
		          path, p->why, strerror(-rc), (*out)->nr, found,
		          (*out)->scan_saved ? ", and its saved scan tunables" : "");
	} else {
		util_errf(note, notelen,
		          "%s: %s; set aside as %s; %zu of its %zu vCPU entries kept%s", path,
		          p->why, aside, (*out)->nr, found,
		          (*out)->scan_saved ? ", and its saved scan tunables" : "");
	}
	rc = 0;
out:
	json_object_put(p->root);
	free(p);
	return rc;
}

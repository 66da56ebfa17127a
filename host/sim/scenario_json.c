/*
 * scenario_json.c - the JSON layer of the scenario loader: strict parsing with syntax errors
 * located by line, column and byte, a check for keys given twice (json-c silently keeps the
 * last), and typed access to fields whose errors start with the field's JSON path.
 */
#include "host/sim/scenario_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Keys remembered per object by the duplicate-key scan; the largest valid object has 12
 * fields, so an object with more distinct keys fails as an unknown field anyway. */
#define SCN_SCAN_MAX_KEYS 64

int
scn_fail(struct scn_ctx *ctx, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ctx->err == NULL || ctx->errlen == 0)
		return -EINVAL;
	n = snprintf(ctx->err, ctx->errlen, "%s: ", path);
	if (n < 0 || (size_t)n >= ctx->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(ctx->err + n, ctx->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Paths that do not fit are cut, ending in "..."; valid ones always fit. */
void
scn_path_key(char *buf, const char *parent, const char *key)
{
	if (snprintf(buf, SCN_PATH_MAX, "%s%s%s", parent, parent[0] ? "." : "", key) >=
	    SCN_PATH_MAX)
		strcpy(buf + SCN_PATH_MAX - 4, "...");
}

void
scn_path_idx(char *buf, const char *parent, size_t idx)
{
	if (snprintf(buf, SCN_PATH_MAX, "%s[%zu]", parent, idx) >= SCN_PATH_MAX)
		strcpy(buf + SCN_PATH_MAX - 4, "...");
}

void
scn_key_quote(char *buf, size_t buflen, const char *key, size_t len)
{
	size_t n = len < SCN_KEY_QUOTE_MAX ? len : SCN_KEY_QUOTE_MAX;

	while (n < len && n > 0 && ((unsigned char)key[n] & 0xc0) == 0x80)
		n--; /* do not cut a UTF-8 sequence */
	if (n + 4 > buflen)
		n = buflen - 4;
	for (size_t i = 0; i < n; i++)
		buf[i] = ((unsigned char)key[i] < 0x20 || key[i] == 0x7f) ? '?' : key[i];
	strcpy(buf + n, n < len ? "..." : "");
}

const char *
scn_num_str(double d, char *buf, size_t len)
{
	snprintf(buf, len, "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, len, "%.17g", d);
	return buf;
}

const char *
scn_type_name(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "boolean";
	case json_type_double:
	case json_type_int:
		return "number";
	case json_type_object:
		return "object";
	case json_type_array:
		return "array";
	case json_type_string:
		return "string";
	}
	return "unknown type";
}

/* ---- typed values ---------------------------------------------------------------------- */

int
scn_value_int(struct scn_ctx *ctx, struct json_object *v, const char *path, int64_t lo, int64_t hi,
              int64_t *out)
{
	char num[40];
	int64_t x;

	if (json_object_is_type(v, json_type_int)) {
		x = json_object_get_int64(v); /* json-c saturates at INT64_MIN/MAX */
		if ((x == INT64_MAX && hi < INT64_MAX) || (x == INT64_MIN && lo > INT64_MIN))
			return scn_fail(ctx, path, "must be in %lld..%lld, got %lld or %s",
			                (long long)lo, (long long)hi, (long long)x,
			                x > 0 ? "more" : "less");
	} else if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);

		scn_num_str(d, num, sizeof(num));
		if (!isfinite(d) || d != floor(d))
			return scn_fail(ctx, path, "expected an integer, got %s", num);
		if (fabs(d) > (double)SCN_EXACT_INT_MAX)
			return scn_fail(ctx, path, "must be in %lld..%lld, got %s", (long long)lo,
			                (long long)hi, num);
		x = (int64_t)d;
	} else {
		return scn_fail(ctx, path, "expected an integer, got %s", scn_type_name(v));
	}
	if (x < lo || x > hi)
		return scn_fail(ctx, path, "must be in %lld..%lld, got %lld", (long long)lo,
		                (long long)hi, (long long)x);
	*out = x;
	return 0;
}

int
scn_value_num(struct scn_ctx *ctx, struct json_object *v, const char *path,
              const struct scn_range *r, double *out)
{
	char num[40], lo[40], hi[40];
	double d;

	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return scn_fail(ctx, path, "expected a number, got %s", scn_type_name(v));
	d = json_object_get_double(v);
	scn_num_str(d, num, sizeof(num));
	if (!isfinite(d))
		return scn_fail(ctx, path, "expected a finite number, got %s", num);
	if ((r->lo_open ? d <= r->lo : d < r->lo) || (r->hi_open ? d >= r->hi : d > r->hi)) {
		scn_num_str(r->lo, lo, sizeof(lo));
		if (isinf(r->hi))
			return scn_fail(ctx, path, "must be %s %s, got %s",
			                r->lo_open ? ">" : ">=", lo, num);
		scn_num_str(r->hi, hi, sizeof(hi));
		return scn_fail(ctx, path, "must be %s %s and %s %s, got %s",
		                r->lo_open ? ">" : ">=", lo, r->hi_open ? "<" : "<=", hi, num);
	}
	*out = d;
	return 0;
}

/* A string of at most max_len bytes with no NUL inside; *out points into v. */
int
scn_value_str(struct scn_ctx *ctx, struct json_object *v, const char *path, size_t max_len,
              const char **out)
{
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return scn_fail(ctx, path, "expected a string, got %s", scn_type_name(v));
	*out = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (strlen(*out) != len)
		return scn_fail(ctx, path, "contains a NUL character");
	if (len > max_len)
		return scn_fail(ctx, path, "longer than %zu bytes", max_len);
	return 0;
}

/* ---- fields of an object --------------------------------------------------------------- */

/* 1: key present (*v set, maybe NULL for JSON null); 0: absent and optional; < 0: error. */
int
scn_lookup(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
           bool required, struct json_object **v, char *path)
{
	scn_path_key(path, parent, key);
	if (json_object_object_get_ex(obj, key, v))
		return 1;
	return required ? scn_fail(ctx, path, "missing (required field)") : 0;
}

int
scn_get_int(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
            bool required, int64_t lo, int64_t hi, int64_t *out)
{
	char path[SCN_PATH_MAX];
	struct json_object *v;
	int rc = scn_lookup(ctx, obj, parent, key, required, &v, path);

	if (rc <= 0)
		return rc;
	rc = scn_value_int(ctx, v, path, lo, hi, out);
	return rc < 0 ? rc : 1;
}

int
scn_get_num(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
            bool required, const struct scn_range *r, double *out)
{
	char path[SCN_PATH_MAX];
	struct json_object *v;
	int rc = scn_lookup(ctx, obj, parent, key, required, &v, path);

	if (rc <= 0)
		return rc;
	rc = scn_value_num(ctx, v, path, r, out);
	return rc < 0 ? rc : 1;
}

int
scn_get_str(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
            bool required, size_t max_len, const char **out)
{
	char path[SCN_PATH_MAX];
	struct json_object *v;
	int rc = scn_lookup(ctx, obj, parent, key, required, &v, path);

	if (rc <= 0)
		return rc;
	rc = scn_value_str(ctx, v, path, max_len, out);
	return rc < 0 ? rc : 1;
}

/* v must be an object whose keys are all in the NULL-terminated list known. */
int
scn_check_object(struct scn_ctx *ctx, struct json_object *v, const char *path,
                 const char *const *known)
{
	char quoted[SCN_KEY_QUOTE_MAX + 8], kpath[SCN_PATH_MAX];
	size_t i;

	if (!json_object_is_type(v, json_type_object))
		return scn_fail(ctx, path[0] ? path : "(top level)", "expected an object, got %s",
		                scn_type_name(v));
	json_object_object_foreach(v, key, val)
	{
		(void)val;
		for (i = 0; known[i] != NULL && strcmp(key, known[i]) != 0; i++)
			;
		if (known[i] == NULL) {
			scn_key_quote(quoted, sizeof(quoted), key, strlen(key));
			scn_path_key(kpath, path, quoted);
			return scn_fail(ctx, kpath, "unknown field");
		}
	}
	return 0;
}

/* ---- duplicate keys -------------------------------------------------------------------- */

struct scn_scan_level {
	bool is_object;
	bool want_key;  /* object: the next string is a key */
	size_t index;   /* array: index of the current element */
	size_t key_off; /* object: the current key (raw, between the quotes) */
	size_t key_len;
	int nr_keys;
	size_t keys_off[SCN_SCAN_MAX_KEYS];
	size_t keys_len[SCN_SCAN_MAX_KEYS];
};

static void
scn_scan_path(const char *text, const struct scn_scan_level *lv, int depth, char *path)
{
	char quoted[SCN_KEY_QUOTE_MAX + 8], tmp[SCN_PATH_MAX];

	path[0] = '\0';
	for (int d = 0; d <= depth; d++) {
		strcpy(tmp, path);
		if (lv[d].is_object) {
			scn_key_quote(quoted, sizeof(quoted), text + lv[d].key_off, lv[d].key_len);
			scn_path_key(path, tmp, quoted);
		} else if (d < depth) {
			scn_path_idx(path, tmp, lv[d].index);
		}
	}
}

/* Record key (text[off], len bytes) in the object at lv; -EINVAL if it was given before. */
static int
scn_scan_key(struct scn_ctx *ctx, const char *text, struct scn_scan_level *lv, int depth,
             size_t off, size_t len)
{
	struct scn_scan_level *o = &lv[depth];
	char path[SCN_PATH_MAX];

	o->key_off = off;
	o->key_len = len;
	o->want_key = false;
	for (int i = 0; i < o->nr_keys; i++) {
		if (o->keys_len[i] == len && memcmp(text + o->keys_off[i], text + off, len) == 0) {
			scn_scan_path(text, lv, depth, path);
			return scn_fail(ctx, path, "given twice in the same object");
		}
	}
	if (o->nr_keys < SCN_SCAN_MAX_KEYS) {
		o->keys_off[o->nr_keys] = off;
		o->keys_len[o->nr_keys++] = len;
	}
	return 0;
}

/* Scan json-c-validated text for an object key given twice (json-c keeps only the last). */
static int
scn_scan_duplicates(struct scn_ctx *ctx, const char *text, size_t len)
{
	struct scn_scan_level *lv = xcalloc(SCN_JSON_MAX_DEPTH + 1, sizeof(*lv));
	int depth = -1, rc = 0;

	for (size_t pos = 0, start; pos < len && rc == 0; pos++) {
		switch (text[pos]) {
		case '{':
		case '[':
			if (++depth > SCN_JSON_MAX_DEPTH)
				goto out; /* cannot happen: json-c enforces the same limit */
			memset(&lv[depth], 0, sizeof(lv[depth]));
			lv[depth].is_object = lv[depth].want_key = text[pos] == '{';
			break;
		case '}':
		case ']':
			depth--;
			break;
		case ',':
			lv[depth].index++;
			lv[depth].want_key = lv[depth].is_object;
			break;
		case '"':
			for (start = ++pos; text[pos] != '"'; pos++)
				pos += text[pos] == '\\';
			if (depth >= 0 && lv[depth].want_key)
				rc = scn_scan_key(ctx, text, lv, depth, start, pos - start);
			break;
		}
	}
out:
	free(lv);
	return rc;
}

/* ---- parsing --------------------------------------------------------------------------- */

static int
scn_syntax_error(struct scn_ctx *ctx, const char *text, size_t off, const char *what)
{
	char where[96];
	size_t line = 1, col = 1;

	for (size_t i = 0; i < off; i++) {
		col++;
		if (text[i] == '\n') {
			line++;
			col = 1;
		}
	}
	snprintf(where, sizeof(where), "line %zu, column %zu (byte %zu)", line, col, off);
	return scn_fail(ctx, where, "JSON syntax error: %s", what);
}

/* Strict json-c parse of text (len bytes, no NUL inside); *root on success. */
static int
scn_parse_json(struct scn_ctx *ctx, const char *text, size_t len, struct json_object **root)
{
	struct json_tokener *tok = json_tokener_new_ex(SCN_JSON_MAX_DEPTH);
	enum json_tokener_error jerr;
	size_t off;
	int rc = 0;

	if (tok == NULL) {
		fprintf(stderr, "vnumad: out of memory in json_tokener_new_ex\n");
		abort();
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	*root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	off = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue) {
		/* A terminating NUL ends a bare number; anything else is truncated input. */
		*root = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		off = len;
	}
	if (jerr != json_tokener_success)
		rc = scn_syntax_error(ctx, text, off, json_tokener_error_desc(jerr));
	json_tokener_free(tok);
	return rc;
}

int
scn_json_parse(struct scn_ctx *ctx, const char *text, size_t len, struct json_object **root)
{
	const char *nul = memchr(text, '\0', len);
	int rc;

	*root = NULL;
	if (len > SCN_TEXT_MAX_BYTES)
		return scn_fail(ctx, "(top level)", "text larger than %zu MiB",
		                SCN_TEXT_MAX_BYTES >> 20);
	if (nul != NULL)
		return scn_syntax_error(ctx, text, (size_t)(nul - text), "NUL byte in the text");
	rc = scn_parse_json(ctx, text, len, root);
	if (rc == 0 && (rc = scn_scan_duplicates(ctx, text, len)) < 0) {
		json_object_put(*root);
		*root = NULL;
	}
	return rc;
}

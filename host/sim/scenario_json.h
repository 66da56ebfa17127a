/*
 * scenario_json.h - the JSON layer of the scenario loader (internal to host/sim/scenario*.c).
 *
 * Every function that can fail writes "<path>: <what is wrong>" through scn_fail() and returns
 * -EINVAL; path is the JSON path of the field ("vms[1].cells[0].vcpus[3]"), "" for the top
 * level.  Strings returned point into the json-c tree and live as long as it does.
 */
#ifndef VNUMAD_HOST_SIM_SCENARIO_JSON_H
#define VNUMAD_HOST_SIM_SCENARIO_JSON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest scenario text (64 MiB): far above any real scenario, it bounds memory use. */
#define SCN_TEXT_MAX_BYTES ((size_t)64 << 20)
/* json-c nesting limit; the deepest valid value (vms[].cells[].vcpus[]) is 6 levels down. */
#define SCN_JSON_MAX_DEPTH 16
/* Buffer for one JSON path, in bytes (the longest valid path is about 40). */
#define SCN_PATH_MAX 160
/* Longest user-supplied string quoted back in a message, in bytes. */
#define SCN_KEY_QUOTE_MAX 48
/* 2^53 - 1: the largest integer every JSON implementation keeps exactly; also the bound for
 * integers written with a fraction or exponent (1e3, 8.0), which are accepted when integral. */
#define SCN_EXACT_INT_MAX 9007199254740991LL

/* Where error messages go (err may be NULL or errlen 0: messages are dropped). */
struct scn_ctx {
	char *err;
	size_t errlen;
};

/* A closed or open interval of numbers; hi may be INFINITY. */
struct scn_range {
	double lo, hi;
	bool lo_open, hi_open;
};

/* Strict parse (no comments, trailing commas or NaN words; valid UTF-8; no key given twice). */
int scn_json_parse(struct scn_ctx *ctx, const char *text, size_t len, struct json_object **root);

int scn_fail(struct scn_ctx *ctx, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* buf (SCN_PATH_MAX bytes) = "parent.key" / "parent[idx]". */
void scn_path_key(char *buf, const char *parent, const char *key);
void scn_path_idx(char *buf, const char *parent, size_t idx);
/* A user-supplied string made safe for a message: control bytes -> '?', cut with "...". */
void scn_key_quote(char *buf, size_t buflen, const char *key, size_t len);
/* Shortest decimal form of d that reads back as d. */
const char *scn_num_str(double d, char *buf, size_t len);
const char *scn_type_name(struct json_object *v);

/* Typed values (v may be NULL: JSON null). */
int scn_value_int(struct scn_ctx *ctx, struct json_object *v, const char *path, int64_t lo,
                  int64_t hi, int64_t *out);
int scn_value_num(struct scn_ctx *ctx, struct json_object *v, const char *path,
                  const struct scn_range *r, double *out);
int scn_value_str(struct scn_ctx *ctx, struct json_object *v, const char *path, size_t max_len,
                  const char **out);

/*
 * Fields of obj: 1 = present (and valid), 0 = absent and optional (*out untouched), < 0 =
 * error.  scn_lookup also leaves the field's path in path (SCN_PATH_MAX bytes).
 */
int scn_lookup(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
               bool required, struct json_object **v, char *path);
int scn_get_int(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
                bool required, int64_t lo, int64_t hi, int64_t *out);
int scn_get_num(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
                bool required, const struct scn_range *r, double *out);
int scn_get_str(struct scn_ctx *ctx, struct json_object *obj, const char *parent, const char *key,
                bool required, size_t max_len, const char **out);
/* v must be an object whose keys all appear in the NULL-terminated list known. */
int scn_check_object(struct scn_ctx *ctx, struct json_object *v, const char *path,
                     const char *const *known);

#endif

/*
 * format.c - column-driven JSON and table output, and atomic file writes.
 */
#include "agent/format.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/util.h"

#define FORMAT_COL_GAP    2  /* spaces between table columns */
#define FORMAT_DOUBLE_MAX 64 /* longest printed double: "%.*f" of anything we print */

void
format_buf_pad(struct util_buf *buf, char c, int n)
{
	if (n <= 0)
		return;
	util_array_reserve((void **)&buf->data, &buf->cap, buf->len + (size_t)n + 1, 1);
	memset(buf->data + buf->len, c, (size_t)n);
	buf->len += (size_t)n;
	buf->data[buf->len] = '\0';
}

/* d with `decimals` digits after the point, optionally trimmed; finite d only. */
static void
format_double_print(char *text, size_t len, double d, int decimals, bool trim)
{
	if (fabs(d) >= 1e15)
		decimals = 0; /* keeps the text short; such values never need fractions */
	snprintf(text, len, "%.*f", decimals, d);
	if (strspn(text, "-0.") == strlen(text))
		snprintf(text, len, "%.*f", decimals, 0.0); /* no "-0.00" */
	if (trim && strchr(text, '.') != NULL) {
		char *end = text + strlen(text) - 1;

		while (*end == '0')
			*end-- = '\0';
		if (*end == '.')
			*end = '\0';
	}
}

struct json_object *
format_json_double(double d, int decimals, bool trim)
{
	char text[FORMAT_DOUBLE_MAX];
	struct json_object *obj;

	if (!isfinite(d))
		return NULL; /* json-c's null */
	format_double_print(text, sizeof(text), d, decimals, trim);
	obj = json_object_new_double_s(strtod(text, NULL), text);
	if (obj == NULL)
		abort(); /* json-c fails only on out-of-memory */
	return obj;
}

static struct json_object *
format_field_json(const struct format_column *col, const void *rec)
{
	const char *field = (const char *)rec + col->offset;
	const char *s;
	struct json_object *obj = NULL;

	switch (col->kind) {
	case FORMAT_CHARS:
		obj = json_object_new_string(field);
		break;
	case FORMAT_STRING:
		memcpy(&s, field, sizeof(s));
		if (s == NULL)
			return NULL;
		obj = json_object_new_string(s);
		break;
	case FORMAT_INT:
		obj = json_object_new_int(*(const int *)(const void *)field);
		break;
	case FORMAT_U64:
		obj = json_object_new_uint64(*(const uint64_t *)(const void *)field);
		break;
	case FORMAT_DOUBLE:
		return format_json_double(*(const double *)(const void *)field, col->decimals,
		                          false);
	}
	if (obj == NULL)
		abort(); /* json-c fails only on out-of-memory */
	return obj;
}

struct json_object *
format_record_json(const struct format_column *cols, int nr_cols, const void *rec)
{
	struct json_object *obj = json_object_new_object();

	if (obj == NULL)
		abort();
	for (int i = 0; i < nr_cols; i++)
		json_object_object_add(obj, cols[i].key, format_field_json(&cols[i], rec));
	return obj;
}

/* The table text of one cell: what the JSON says, "-" for null. */
static const char *
format_cell_text(struct json_object *row, const char *key)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(row, key, &v) || v == NULL)
		return "-";
	return json_object_get_string(v);
}

static bool
format_column_numeric(const struct format_column *col)
{
	return col->kind != FORMAT_CHARS && col->kind != FORMAT_STRING;
}

static void
format_table_line(struct util_buf *buf, const struct format_column *cols, int nr_cols,
                  const int *width, struct json_object *row)
{
	bool first = true;

	for (int c = 0; c < nr_cols; c++) {
		const char *text = row != NULL ? format_cell_text(row, cols[c].key) : cols[c].key;
		int pad = width[c] - (int)strlen(text);

		if (!cols[c].in_table)
			continue;
		format_buf_pad(buf, ' ', first ? 0 : FORMAT_COL_GAP);
		first = false;
		if (format_column_numeric(&cols[c]))
			format_buf_pad(buf, ' ', pad);
		util_buf_printf(buf, "%s", text);
		if (!format_column_numeric(&cols[c]))
			format_buf_pad(buf, ' ', pad);
	}
	util_buf_printf(buf, "\n");
}

void
format_table_render(struct util_buf *buf, const struct format_column *cols, int nr_cols,
                    struct json_object *rows)
{
	size_t nr_rows = json_object_array_length(rows);
	int *width = xcalloc((size_t)nr_cols, sizeof(*width));

	for (int c = 0; c < nr_cols; c++) {
		width[c] = (int)strlen(cols[c].key);
		for (size_t r = 0; r < nr_rows; r++) {
			const char *text =
			    format_cell_text(json_object_array_get_idx(rows, r), cols[c].key);

			if ((int)strlen(text) > width[c])
				width[c] = (int)strlen(text);
		}
	}
	format_table_line(buf, cols, nr_cols, width, NULL);
	for (size_t r = 0; r < nr_rows; r++)
		format_table_line(buf, cols, nr_cols, width, json_object_array_get_idx(rows, r));
	free(width);
}

void
format_json_render(struct util_buf *buf, struct json_object *obj)
{
	util_buf_printf(buf, "%s\n",
	                json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY |
	                                                        JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* ---- vnumactl simulate ------------------------------------------------------------------ */

#define SIM_COL(key, kind, field, decimals, in_table)                                              \
	{                                                                                          \
		key, kind, offsetof(struct sim_result, field), decimals, in_table                  \
	}

/* BRIEF 4.3's keys in its order, then extra detail for --json only. */
static const struct format_column format_sim_columns[] = {
    SIM_COL("policy", FORMAT_CHARS, policy, 0, true),
    SIM_COL("locality", FORMAT_DOUBLE, locality, 3, true),
    SIM_COL("throughput", FORMAT_DOUBLE, throughput, 1, true),
    SIM_COL("vs_oracle", FORMAT_DOUBLE, vs_oracle, 3, true),
    SIM_COL("converge_s", FORMAT_DOUBLE, converge_s, 1, true),
    SIM_COL("migrated_gib", FORMAT_DOUBLE, migrated_gib, 2, true),
    SIM_COL("vcpu_moves", FORMAT_U64, vcpu_moves, 0, true),
    SIM_COL("max_node_fill", FORMAT_DOUBLE, max_node_fill, 3, true),
    SIM_COL("oom", FORMAT_U64, oom, 0, true),
    SIM_COL("balancer_ms", FORMAT_DOUBLE, balancer_ms, 3, true),
    SIM_COL("balancer_calls", FORMAT_U64, balancer_calls, 0, false),
    SIM_COL("sampling_cpu_s", FORMAT_DOUBLE, sampling_cpu_s, 2, false),
    SIM_COL("migrate_failed_gib", FORMAT_DOUBLE, migrate_failed_gib, 2, false),
    SIM_COL("max_migrate_mib_s", FORMAT_DOUBLE, max_migrate_mib_s, 1, false),
    SIM_COL("node_overfill", FORMAT_U64, node_overfill, 0, false),
    SIM_COL("max_vcpu_node_changes", FORMAT_U64, max_vcpu_node_changes, 0, false),
    SIM_COL("policy_mode_actions", FORMAT_U64, policy_mode_actions, 0, false),
    SIM_COL("policy_node_violations", FORMAT_U64, policy_node_violations, 0, false),
    SIM_COL("binds_refused", FORMAT_U64, binds_refused, 0, false),
    SIM_COL("samplings_refused", FORMAT_U64, samplings_refused, 0, false),
    SIM_COL("kernel_migrated_gib", FORMAT_DOUBLE, kernel_migrated_gib, 2, false),
    SIM_COL("kernel_vcpu_moves", FORMAT_U64, kernel_vcpu_moves, 0, false),
    SIM_COL("converge_after_start_s", FORMAT_DOUBLE, converge_after_start_s, 1, false),
    SIM_COL("max_dest_fill", FORMAT_DOUBLE, max_dest_fill, 3, false),
};
#define FORMAT_NR_SIM_COLUMNS ((int)(sizeof(format_sim_columns) / sizeof(format_sim_columns[0])))

static struct json_object *
format_sim_rows_json(const struct format_sim_report *rep)
{
	struct json_object *rows = json_object_new_array();

	if (rows == NULL)
		abort();
	for (int i = 0; i < rep->nr_results; i++)
		json_object_array_add(rows,
		                      format_record_json(format_sim_columns, FORMAT_NR_SIM_COLUMNS,
		                                         &rep->results[i]));
	return rows;
}

/* The profile's capabilities by name, levers and sensing alike. */
static struct json_object *
format_sim_levers_json(unsigned caps)
{
	struct json_object *arr = json_object_new_array();

	if (arr == NULL)
		abort();
	for (int i = 0; i < HOST_CAP_NR; i++)
		if (caps & (1u << i))
			json_object_array_add(arr, json_object_new_string(host_cap_name(i)));
	return arr;
}

struct json_object *
format_sim_report_json(const struct format_sim_report *rep)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *name = json_object_new_string(rep->scenario);

	if (doc == NULL || name == NULL)
		abort();
	json_object_object_add(doc, "scenario", name);
	json_object_object_add(doc, "duration_s", format_json_double(rep->duration_s, 3, true));
	json_object_object_add(doc, "host_profile",
	                       json_object_new_string(rep->host_profile ? rep->host_profile : ""));
	json_object_object_add(doc, "levers", format_sim_levers_json(rep->levers));
	json_object_object_add(doc, "results", format_sim_rows_json(rep));
	return doc;
}

char *
format_sim_report_text(const struct format_sim_report *rep, bool json)
{
	struct json_object *doc = format_sim_report_json(rep);
	struct util_buf buf = {0};
	char mem[FORMAT_DOUBLE_MAX], caps[256];

	if (json) {
		format_json_render(&buf, doc);
	} else {
		util_buf_printf(&buf, "scenario %s: %d nodes x %d CPUs, ", rep->scenario,
		                rep->nodes, rep->cpus_per_node);
		format_double_print(mem, sizeof(mem), rep->memory_per_node_gib, 2, true);
		util_buf_printf(&buf, "%s GiB each; %d VMs; ", mem, rep->nr_vms);
		util_buf_printf(&buf, "%s s; host profile %s (%s)\n",
		                json_object_get_string(json_object_object_get(doc, "duration_s")),
		                rep->host_profile ? rep->host_profile : "?",
		                host_caps_format(rep->levers, caps, sizeof(caps)));
		if (rep->host_profile != NULL && strcmp(rep->host_profile, "ideal") == 0)
			util_buf_printf(&buf, "NOTE: the ideal profile has levers no shipped "
			                      "backend has: research figures, not vnumad's\n");
		util_buf_printf(&buf, "\n");
		format_table_render(&buf, format_sim_columns, FORMAT_NR_SIM_COLUMNS,
		                    json_object_object_get(doc, "results"));
	}
	json_object_put(doc);
	return buf.data;
}

/* ---- atomic file output ------------------------------------------------------------------ */

int
format_file_open(struct format_file *file, const char *path)
{
	size_t len = strlen(path) + sizeof(".XXXXXX");
	mode_t mask;

	file->path = xstrdup(path);
	file->tmp_path = xmalloc(len);
	snprintf(file->tmp_path, len, "%s.XXXXXX", path);
	file->fd = mkstemp(file->tmp_path);
	if (file->fd < 0) {
		int r = -errno;

		free(file->path);
		free(file->tmp_path);
		file->path = file->tmp_path = NULL;
		return r;
	}
	/* mkstemp makes 0600; give the file the mode a plain creat() would. */
	mask = umask(0);
	umask(mask);
	(void)fchmod(file->fd, 0666 & ~mask);
	return 0;
}

void
format_file_abort(struct format_file *file)
{
	if (file->fd >= 0)
		close(file->fd);
	if (file->tmp_path != NULL)
		unlink(file->tmp_path);
	free(file->path);
	free(file->tmp_path);
	file->path = file->tmp_path = NULL;
	file->fd = -1;
}

static int
format_write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int
format_file_commit(struct format_file *file, const char *data, size_t len)
{
	int r;

	r = format_write_all(file->fd, data, len);
	if (r == 0 && fsync(file->fd) < 0)
		r = -errno;
	if (close(file->fd) < 0 && r == 0)
		r = -errno;
	file->fd = -1;
	if (r == 0 && rename(file->tmp_path, file->path) < 0)
		r = -errno;
	if (r == 0) {
		free(file->tmp_path);
		file->tmp_path = NULL;
	}
	format_file_abort(file);
	return r;
}

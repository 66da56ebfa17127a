/*
 * format.h - the one formatter behind vnumactl's human tables and its --json (STYLE 17).
 *
 * A command describes its records once, as a list of columns (key, kind, field offset,
 * decimals).  Each record becomes a json-c object built from that list; the JSON output is
 * that object serialised, and the table prints the very same value strings, so the two can
 * never disagree.  Doubles are written with a fixed number of decimals chosen per column, so
 * the same input always gives the same bytes.
 *
 * Also here: a growable text buffer, and writing a file atomically (temp file + rename).
 */
#ifndef VNUMAD_AGENT_FORMAT_H
#define VNUMAD_AGENT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include "host/sim/sim.h"

struct json_object;

/* Growable NUL-terminated text; starts zeroed; the owner frees data with free(). */

/* Append n copies of c. */
void format_buf_pad(struct util_buf *buf, char c, int n);

enum format_kind {
	FORMAT_CHARS,  /* char array inside the record */
	FORMAT_STRING, /* const char * inside the record (NULL: JSON null, table "-") */
	FORMAT_INT,    /* int */
	FORMAT_U64,    /* uint64_t */
	FORMAT_DOUBLE, /* double, printed with `decimals` digits after the point */
};

struct format_column {
	const char *key; /* JSON key and table header */
	enum format_kind kind;
	size_t offset; /* of the field in the record */
	int decimals;  /* FORMAT_DOUBLE only */
	bool in_table; /* shown in the human table; every column is in the JSON */
};

/*
 * A JSON number that serialises as d with exactly `decimals` digits after the point (trailing
 * zeros and the point dropped when trim); JSON null for NaN and infinities.
 */
struct json_object *format_json_double(double d, int decimals, bool trim);

/* One JSON object holding the columns of record rec, in column order.  Caller puts it. */
struct json_object *format_record_json(const struct format_column *cols, int nr_cols,
                                       const void *rec);

/*
 * Append rows (a JSON array of objects from format_record_json) as an aligned table of the
 * in_table columns: a header line, then one line per row; text columns left-aligned,
 * numbers right-aligned, two spaces apart.
 */
void format_table_render(struct util_buf *buf, const struct format_column *cols, int nr_cols,
                         struct json_object *rows);

/* Append obj as pretty-printed JSON and a newline. */
void format_json_render(struct util_buf *buf, struct json_object *obj);

/* ---- vnumactl simulate (BRIEF 4.3) ---------------------------------------------------- */

struct format_sim_report {
	const char *scenario;
	double duration_s;
	int nodes;
	int cpus_per_node;
	double memory_per_node_gib;
	int nr_vms;
	const char *host_profile; /* linux, libvirt or ideal */
	unsigned levers;          /* the profile's HOST_CAP_* (as a balancer on it has them) */
	const struct sim_result *results; /* in report order; vs_oracle already filled */
	int nr_results;
};

/*
 * The BRIEF 4.3 document: {"scenario", "duration_s", "host_profile", "levers": [...],
 * "results": [...]}.  Caller puts it.
 */
struct json_object *format_sim_report_json(const struct format_sim_report *rep);
/* The report as JSON text (json) or as a header line and a table.  Caller frees. */
char *format_sim_report_text(const struct format_sim_report *rep, bool json);

/* ---- atomic file output --------------------------------------------------------------- */

/* A file being written: data goes to a temporary next to path, renamed over it on commit. */
struct format_file {
	char *path;
	char *tmp_path;
	int fd;
};

/* Create the temporary (path + ".XXXXXX").  0 or -errno; nothing to clean up on error. */
int format_file_open(struct format_file *file, const char *path);
/* Write data, flush it to disk and rename the temporary over path.  0 or -errno; always
 * releases the file, removing the temporary on error. */
int format_file_commit(struct format_file *file, const char *data, size_t len);
/* Give up: remove the temporary and release the file. */
void format_file_abort(struct format_file *file);

#endif

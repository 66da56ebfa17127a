/*
 * top_layout.c - `vnumactl top`'s screen, laid out to fit (see top_layout.h).
 *
 * From the top: a header line (nodes, VMs, rounds, memory-weighted locality, whether vnumad
 * is paused, the sort order), the key help when asked for, the per-node memory panel when
 * there is room for it, then the VM table and, when its rows do not all fit, a marker line.
 *
 * The VM table is drawn at the richest of TOP_NR_LEVELS levels that fits the width; each
 * column has the levels it is shown at (top_vm_columns), so going down a level drops or
 * condenses the least useful column left: the per-vCPU node strip becomes per-node vCPU
 * counts, then id, strength, state, per-node memory, per-node vCPUs, total memory and vCPUs go.
 * Column widths come from every VM, not only the visible ones, so that scrolling never moves
 * a column.
 */
#include "agent/top_layout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/cmd_common.h"

#define TOP_CELL_MAX        72 /* bytes of one cell, NUL included: room for the vCPU strip */
#define TOP_STRIP_MAX_VCPUS 64 /* a VM with more vCPUs has no per-vCPU strip: counts instead */
#define TOP_STRIP_MAX_NODES 36 /* one character a node: 0-9, then a-z */
#define TOP_GAP             2  /* spaces between two columns, as in the other tables */
#define TOP_NR_LEVELS       9  /* VM table levels, 0 the richest (see top_vm_columns) */
#define TOP_NAME_MIN        4  /* an abbreviated name keeps at least 3 characters and '~' */
/* The node panel is left out unless this many VM rows (or all, if fewer) still fit under it. */
#define TOP_PANEL_MIN_VM_ROWS 5

/* ---- the data of a frame ------------------------------------------------------------------ */

struct top_vm {
	char name[TOP_CELL_MAX];
	char state[TOP_CELL_MAX];
	int64_t id;
	int64_t strength;
	double locality; /* -1: not known yet */
	int64_t vcpus;
	int64_t memory_mib;
	int64_t node_mib[UTIL_MAX_NODES];
	int node_vcpus[UTIL_MAX_NODES];
	char strip[TOP_CELL_MAX]; /* vCPU i's node is strip[i]; "" when there are too many */
};

/* src made safe for a terminal (printable ASCII only), abbreviated with '~' if too long. */
static void
top_text_copy(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src), i;

	for (i = 0; i < n && i + 1 < len; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
	if (n >= len && len > 1)
		dst[len - 2] = '~';
}

static char
top_node_char(int64_t node)
{
	if (node < 0 || node >= TOP_STRIP_MAX_NODES)
		return '.';
	return node < 10 ? (char)('0' + node) : (char)('a' + node - 10);
}

static void
top_vm_load(struct top_vm *vm, struct json_object *info, int nr_nodes)
{
	struct json_object *resident = cmd_json_array(info, "resident_mib");
	struct json_object *vcpu = cmd_json_array(info, "vcpu");
	size_t nr_vcpu = vcpu != NULL ? json_object_array_length(vcpu) : 0;
	struct json_object *loc = cmd_json_get(info, "memory_locality");

	top_text_copy(vm->name, sizeof(vm->name), cmd_json_string(info, "name", "?"));
	top_text_copy(vm->state, sizeof(vm->state), cmd_json_string(info, "state", "-"));
	vm->id = cmd_json_int(info, "id", -1);
	vm->strength = cmd_json_int(info, "strength", 0);
	vm->locality = loc != NULL ? json_object_get_double(loc) : -1.0;
	vm->vcpus = cmd_json_int(info, "vcpus", (int64_t)nr_vcpu);
	vm->memory_mib = cmd_json_int(info, "memory_mib", 0);
	for (int n = 0; n < nr_nodes; n++) {
		struct json_object *mib =
		    resident != NULL ? json_object_array_get_idx(resident, (size_t)n) : NULL;

		vm->node_mib[n] = mib != NULL ? json_object_get_int64(mib) : 0;
	}
	for (size_t i = 0; i < nr_vcpu; i++) {
		int64_t node = cmd_json_int(json_object_array_get_idx(vcpu, i), "node", -1);

		if (node >= 0 && node < nr_nodes)
			vm->node_vcpus[node]++;
		if (nr_vcpu <= TOP_STRIP_MAX_VCPUS)
			vm->strip[i] = top_node_char(node);
	}
}

/* The sort key's natural order (name and worst locality ascending, sizes descending). */
static int
top_vm_order(const struct top_vm *a, const struct top_vm *b, enum top_sort sort)
{
	switch (sort) {
	case TOP_SORT_LOCALITY:
		return (a->locality > b->locality) - (a->locality < b->locality);
	case TOP_SORT_MEMORY:
		return (a->memory_mib < b->memory_mib) - (a->memory_mib > b->memory_mib);
	case TOP_SORT_VCPUS:
		return (a->vcpus < b->vcpus) - (a->vcpus > b->vcpus);
	case TOP_SORT_NAME:
		break;
	}
	return 0;
}

static const struct top_view *top_sort_view; /* qsort's comparator has no argument for it */

static int
top_vm_compare(const void *pa, const void *pb)
{
	const struct top_vm *a = pa, *b = pb;
	int r = top_vm_order(a, b, top_sort_view->sort);

	if (r == 0)
		r = strcmp(a->name, b->name);
	if (r == 0)
		r = (a->id > b->id) - (a->id < b->id);
	return top_sort_view->reverse ? -r : r;
}

/* The frame's VMs in view's order (caller frees). */
static struct top_vm *
top_vms_load(struct json_object *frame, const struct top_view *view, int nr_nodes, int *nr_out)
{
	struct json_object *vms = cmd_json_array(frame, "vms");
	int nr = vms != NULL ? (int)json_object_array_length(vms) : 0;
	struct top_vm *out = xcalloc(nr > 0 ? (size_t)nr : 1, sizeof(*out));

	for (int i = 0; i < nr; i++)
		top_vm_load(&out[i], json_object_array_get_idx(vms, (size_t)i), nr_nodes);
	top_sort_view = view;
	qsort(out, (size_t)nr, sizeof(*out), top_vm_compare);
	top_sort_view = NULL;
	*nr_out = nr;
	return out;
}

/* ---- grids: cells of text in aligned columns ----------------------------------------------- */

struct top_grid {
	int nr_rows; /* data rows; row -1 is the header */
	int nr_cols;
	char (*cells)[TOP_CELL_MAX];
	bool *right;
	int *width;
};

static void
top_grid_init(struct top_grid *g, int nr_rows, int nr_cols)
{
	g->nr_rows = nr_rows;
	g->nr_cols = nr_cols;
	g->cells = xcalloc((size_t)(nr_rows + 1) * (size_t)nr_cols, sizeof(*g->cells));
	g->right = xcalloc((size_t)nr_cols, sizeof(*g->right));
	g->width = xcalloc((size_t)nr_cols, sizeof(*g->width));
}

static void
top_grid_fini(struct top_grid *g)
{
	free(g->cells);
	free(g->right);
	free(g->width);
	memset(g, 0, sizeof(*g));
}

static char *
top_grid_cell(struct top_grid *g, int row, int col)
{
	return g->cells[(size_t)(row + 1) * (size_t)g->nr_cols + (size_t)col];
}

/* Each column's width; returns the width of the whole line. */
static int
top_grid_measure(struct top_grid *g)
{
	int total = 0;

	for (int c = 0; c < g->nr_cols; c++) {
		g->width[c] = 0;
		for (int r = -1; r < g->nr_rows; r++) {
			int w = (int)strlen(top_grid_cell(g, r, c));

			if (w > g->width[c])
				g->width[c] = w;
		}
		total += g->width[c] + (c > 0 ? TOP_GAP : 0);
	}
	return total;
}

/* How many leading columns fit in cols. */
static int
top_grid_fit(const struct top_grid *g, int cols)
{
	int used = 0, c;

	for (c = 0; c < g->nr_cols; c++) {
		used += g->width[c] + (c > 0 ? TOP_GAP : 0);
		if (used > cols)
			break;
	}
	return c;
}

/* Row row (-1: the header) of the first nr_cols columns as one line. */
static void
top_grid_line(struct top_grid *g, int row, int nr_cols, struct util_buf *buf)
{
	for (int c = 0; c < nr_cols; c++) {
		const char *cell = top_grid_cell(g, row, c);
		int pad = c + 1 < nr_cols || g->right[c] ? g->width[c] : 0;

		util_buf_printf(buf, "%s%*s", c > 0 ? "  " : "", g->right[c] ? pad : -pad, cell);
	}
	util_buf_printf(buf, "\n");
}

/* ---- the VM table ------------------------------------------------------------------------- */

enum top_col_kind {
	TOP_COL_ID,
	TOP_COL_NAME,
	TOP_COL_STATE,
	TOP_COL_LOCALITY,
	TOP_COL_STRENGTH,
	TOP_COL_VCPUS,
	TOP_COL_MEMORY,
	TOP_COL_NODE_GIB,   /* one column a node: the VM's resident memory there */
	TOP_COL_STRIP,      /* each vCPU's node, one character a vCPU */
	TOP_COL_NODE_VCPUS, /* one column a node: the VM's vCPUs there */
};

/* A column is shown at levels from <= level < until. */
struct top_col_spec {
	enum top_col_kind kind;
	const char *header; /* per-node columns: followed by the node's number */
	bool right;
	int from, until;
};

static const struct top_col_spec top_vm_columns[] = {
    {TOP_COL_ID, "id", true, 0, 2},
    {TOP_COL_NAME, "name", false, 0, TOP_NR_LEVELS},
    {TOP_COL_STATE, "state", false, 0, 4},
    {TOP_COL_LOCALITY, "mem_local", true, 0, TOP_NR_LEVELS},
    {TOP_COL_STRENGTH, "strength", true, 0, 3},
    {TOP_COL_VCPUS, "vcpus", true, 0, 8},
    {TOP_COL_MEMORY, "mem_gib", true, 0, 7},
    {TOP_COL_NODE_GIB, "gib", true, 0, 5},
    {TOP_COL_STRIP, "vcpu_nodes", false, 0, 1},
    {TOP_COL_NODE_VCPUS, "vcpu", true, 1, 6},
};

static bool
top_col_per_node(enum top_col_kind kind)
{
	return kind == TOP_COL_NODE_GIB || kind == TOP_COL_NODE_VCPUS;
}

static void
top_vm_cell(const struct top_vm *vm, enum top_col_kind kind, int node, char *text, size_t len)
{
	switch (kind) {
	case TOP_COL_ID:
		snprintf(text, len, "%lld", (long long)vm->id);
		break;
	case TOP_COL_NAME:
		snprintf(text, len, "%s", vm->name);
		break;
	case TOP_COL_STATE:
		snprintf(text, len, "%s", vm->state);
		break;
	case TOP_COL_LOCALITY:
		if (vm->locality < 0)
			snprintf(text, len, "-");
		else
			snprintf(text, len, "%.2f", vm->locality);
		break;
	case TOP_COL_STRENGTH:
		snprintf(text, len, "%lld", (long long)vm->strength);
		break;
	case TOP_COL_VCPUS:
		snprintf(text, len, "%lld", (long long)vm->vcpus);
		break;
	case TOP_COL_MEMORY:
		snprintf(text, len, "%.1f", (double)vm->memory_mib / 1024.0);
		break;
	case TOP_COL_NODE_GIB:
		snprintf(text, len, "%.1f", (double)vm->node_mib[node] / 1024.0);
		break;
	case TOP_COL_STRIP:
		snprintf(text, len, "%s", vm->strip);
		break;
	case TOP_COL_NODE_VCPUS:
		snprintf(text, len, "%d", vm->node_vcpus[node]);
		break;
	}
}

/* The columns of level: how many, and (when kinds is not NULL) which, with their nodes. */
static int
top_level_columns(int level, int nr_nodes, enum top_col_kind *kinds, int *nodes)
{
	int nr = 0;

	for (int s = 0; s < CMD_NR(top_vm_columns); s++) {
		const struct top_col_spec *spec = &top_vm_columns[s];
		int copies = top_col_per_node(spec->kind) ? nr_nodes : 1;

		if (level < spec->from || level >= spec->until)
			continue;
		for (int n = 0; n < copies; n++, nr++) {
			if (kinds != NULL) {
				kinds[nr] = spec->kind;
				nodes[nr] = n;
			}
		}
	}
	return nr;
}

static const struct top_col_spec *
top_col_spec_of(enum top_col_kind kind)
{
	for (int s = 0; s < CMD_NR(top_vm_columns); s++)
		if (top_vm_columns[s].kind == kind)
			return &top_vm_columns[s];
	return &top_vm_columns[0];
}

/* g (uninitialised) as the VM table at level; returns its width. */
static int
top_vm_grid(struct top_grid *g, const struct top_vm *vms, int nr_vms, int nr_nodes, int level)
{
	int nr_cols = top_level_columns(level, nr_nodes, NULL, NULL);
	enum top_col_kind *kinds = xcalloc((size_t)nr_cols, sizeof(*kinds));
	int *nodes = xcalloc((size_t)nr_cols, sizeof(*nodes)), total;

	top_level_columns(level, nr_nodes, kinds, nodes);
	top_grid_init(g, nr_vms, nr_cols);
	for (int c = 0; c < nr_cols; c++) {
		const struct top_col_spec *spec = top_col_spec_of(kinds[c]);

		g->right[c] = spec->right;
		if (top_col_per_node(kinds[c]))
			snprintf(top_grid_cell(g, -1, c), TOP_CELL_MAX, "%s%d", spec->header,
			         nodes[c]);
		else
			snprintf(top_grid_cell(g, -1, c), TOP_CELL_MAX, "%s", spec->header);
		for (int r = 0; r < nr_vms; r++)
			top_vm_cell(&vms[r], kinds[c], nodes[c], top_grid_cell(g, r, c),
			            TOP_CELL_MAX);
	}
	total = top_grid_measure(g);
	free(kinds);
	free(nodes);
	return total;
}

/* Whether every VM has a per-vCPU strip (else level 0, which shows it, is skipped). */
static bool
top_vms_have_strip(const struct top_vm *vms, int nr_vms, int nr_nodes)
{
	if (nr_nodes > TOP_STRIP_MAX_NODES)
		return false;
	for (int i = 0; i < nr_vms; i++)
		if (vms[i].vcpus > 0 && vms[i].strip[0] == '\0')
			return false;
	return true;
}

/* Names (in column name_col) longer than width cut to width - 1 characters and '~'. */
static void
top_grid_abbreviate(struct top_grid *g, int name_col, int width)
{
	for (int r = 0; r < g->nr_rows; r++) {
		char *name = top_grid_cell(g, r, name_col);

		if (width >= 1 && (int)strlen(name) > width) {
			name[width - 1] = '~';
			name[width] = '\0';
		}
	}
	top_grid_measure(g);
}

/* The VM table that fits cols into g; returns how many of its columns to draw. */
static int
top_vm_table(struct top_grid *g, const struct top_vm *vms, int nr_vms, int nr_nodes, int cols)
{
	int level = top_vms_have_strip(vms, nr_vms, nr_nodes) ? 0 : 1;
	int total = top_vm_grid(g, vms, nr_vms, nr_nodes, level);

	while (total > cols && level + 1 < TOP_NR_LEVELS) {
		top_grid_fini(g);
		total = top_vm_grid(g, vms, nr_vms, nr_nodes, ++level);
	}
	if (total > cols) { /* the last level is name and locality: abbreviate names */
		int name_width = cols - (total - g->width[0]);

		if (name_width < TOP_NAME_MIN) /* no room beside it: the name alone */
			name_width = cols;
		top_grid_abbreviate(g, 0, name_width);
	}
	return top_grid_fit(g, cols);
}

/* ---- the other lines ---------------------------------------------------------------------- */

/* fields[0..nr) joined by two spaces, as many leading ones as fit cols, as one line. */
static void
top_fields_line(struct util_buf *buf, char (*fields)[TOP_CELL_MAX], int nr, int cols)
{
	int used = 0;

	for (int i = 0; i < nr; i++) {
		int w = (int)strlen(fields[i]) + (i > 0 ? TOP_GAP : 0);

		if (used + w > cols)
			break;
		util_buf_printf(buf, "%s%s", i > 0 ? "  " : "", fields[i]);
		used += w;
	}
	util_buf_printf(buf, "\n");
}

static const char *const top_sort_names[] = {
    [TOP_SORT_NAME] = "name",
    [TOP_SORT_LOCALITY] = "locality",
    [TOP_SORT_MEMORY] = "memory",
    [TOP_SORT_VCPUS] = "vcpus",
};

/* The VMs' locality weighted by their memory; -1 when no VM has one yet. */
static double
top_host_locality(const struct top_vm *vms, int nr_vms)
{
	double sum = 0.0, weight = 0.0;

	for (int i = 0; i < nr_vms; i++) {
		if (vms[i].locality < 0)
			continue;
		sum += vms[i].locality * (double)vms[i].memory_mib;
		weight += (double)vms[i].memory_mib;
	}
	return weight > 0.0 ? sum / weight : -1.0;
}

#define TOP_NR_HEADER_FIELDS 10
#define TOP_TAG_MAX          24 /* bytes of the version and the backend name in the header */

/* The header line, its fields most important first. */
static void
top_header_line(struct util_buf *buf, struct json_object *status, const struct top_view *view,
                const struct top_vm *vms, int nr_vms, int nr_nodes, int cols)
{
	char f[TOP_NR_HEADER_FIELDS][TOP_CELL_MAX], version[TOP_TAG_MAX], backend[TOP_TAG_MAX];
	struct json_object *paused = cmd_json_get(status, "paused");
	double locality = top_host_locality(vms, nr_vms);
	int nr = 0;

	top_text_copy(version, sizeof(version), cmd_json_string(status, "version", "?"));
	top_text_copy(backend, sizeof(backend), cmd_json_string(status, "backend", "?"));
	snprintf(f[nr++], TOP_CELL_MAX, "nodes %d", nr_nodes);
	snprintf(f[nr++], TOP_CELL_MAX, "vms %d", nr_vms);
	snprintf(f[nr++], TOP_CELL_MAX, "rounds %lld",
	         (long long)cmd_json_int(status, "rounds", 0));
	if (locality < 0)
		snprintf(f[nr++], TOP_CELL_MAX, "locality -");
	else
		snprintf(f[nr++], TOP_CELL_MAX, "locality %.2f", locality);
	snprintf(f[nr++], TOP_CELL_MAX, "%s",
	         paused != NULL && json_object_get_boolean(paused) ? "PAUSED" : "running");
	if (view->paused)
		snprintf(f[nr++], TOP_CELL_MAX, "refresh off");
	snprintf(f[nr++], TOP_CELL_MAX, "sort %s%s", top_sort_names[view->sort],
	         view->reverse ? " reversed" : "");
	snprintf(f[nr++], TOP_CELL_MAX, "? keys");
	snprintf(f[nr++], TOP_CELL_MAX, "vnumad %s (%s)", version, backend);
	snprintf(f[nr++], TOP_CELL_MAX, "host time %.1f s",
	         cmd_json_double(status, "host_time_s", 0.0));
	top_fields_line(buf, f, nr, cols);
}

static const char *const top_help_fields[] = {
    "keys:",         "n name",      "l locality",     "m memory",      "c vcpus",
    "r reverse",     "Up/Down row", "PgUp/PgDn page", "Home/End ends", "2 node panel",
    "p/space pause", "? help",      "q quit",
};

/* The key help wrapped to cols, at most max_lines lines; returns the lines written. */
static int
top_help_lines(struct util_buf *buf, int cols, int max_lines)
{
	int nr_lines = 0, used = 0;

	for (int i = 0; i < CMD_NR(top_help_fields) && nr_lines < max_lines; i++) {
		int w = (int)strlen(top_help_fields[i]);

		if (used > 0 && used + TOP_GAP + w > cols) {
			util_buf_printf(buf, "\n");
			nr_lines++;
			used = 0;
			if (nr_lines == max_lines)
				return nr_lines;
		}
		if (w > cols)
			continue; /* a key that does not fit even alone */
		util_buf_printf(buf, "%s%s", used > 0 ? "  " : "", top_help_fields[i]);
		used += (used > 0 ? TOP_GAP : 0) + w;
	}
	if (used > 0) {
		util_buf_printf(buf, "\n");
		nr_lines++;
	}
	return nr_lines;
}

/* The node panel (numastat-like, memory in GiB) as a grid. */
static void
top_node_grid(struct top_grid *g, struct json_object *nodes, const struct top_vm *vms, int nr_vms,
              int nr_nodes)
{
	static const char *const headers[] = {"node",      "cpus",     "load",   "vcpus",
	                                      "total_gib", "free_gib", "vms_gib"};

	top_grid_init(g, nr_nodes, CMD_NR(headers));
	for (int c = 0; c < CMD_NR(headers); c++) {
		snprintf(top_grid_cell(g, -1, c), TOP_CELL_MAX, "%s", headers[c]);
		g->right[c] = true;
	}
	for (int n = 0; n < nr_nodes; n++) {
		struct json_object *node = json_object_array_get_idx(nodes, (size_t)n);
		int64_t vms_mib = 0;

		for (int i = 0; i < nr_vms; i++)
			vms_mib += vms[i].node_mib[n];
		snprintf(top_grid_cell(g, n, 0), TOP_CELL_MAX, "%lld",
		         (long long)cmd_json_int(node, "node", n));
		snprintf(top_grid_cell(g, n, 1), TOP_CELL_MAX, "%lld",
		         (long long)cmd_json_int(node, "cpus", 0));
		snprintf(top_grid_cell(g, n, 2), TOP_CELL_MAX, "%.2f",
		         cmd_json_double(node, "cpu_load", 0.0));
		snprintf(top_grid_cell(g, n, 3), TOP_CELL_MAX, "%lld",
		         (long long)cmd_json_int(node, "vcpus", 0));
		snprintf(top_grid_cell(g, n, 4), TOP_CELL_MAX, "%.1f",
		         (double)cmd_json_int(node, "mem_total_mib", 0) / 1024.0);
		snprintf(top_grid_cell(g, n, 5), TOP_CELL_MAX, "%.1f",
		         (double)cmd_json_int(node, "mem_free_mib", 0) / 1024.0);
		snprintf(top_grid_cell(g, n, 6), TOP_CELL_MAX, "%.1f", (double)vms_mib / 1024.0);
	}
	top_grid_measure(g);
}

/* The first of the marker's wordings (longest first) that fits cols. */
static void
top_marker_line(struct util_buf *buf, int above, int below, int cols)
{
	char text[3][TOP_CELL_MAX];
	int i;

	if (above > 0 && below > 0) {
		snprintf(text[0], TOP_CELL_MAX,
		         "... %d VMs above, %d more below (Up/Down/PgUp/PgDn)", above, below);
		snprintf(text[1], TOP_CELL_MAX, "... %d above, %d below", above, below);
		snprintf(text[2], TOP_CELL_MAX, "^%d v%d", above, below);
	} else if (below > 0) {
		snprintf(text[0], TOP_CELL_MAX, "... %d more VM%s below (Down/PgDn)", below,
		         below == 1 ? "" : "s");
		snprintf(text[1], TOP_CELL_MAX, "... %d more (PgDn)", below);
		snprintf(text[2], TOP_CELL_MAX, "v%d", below);
	} else {
		snprintf(text[0], TOP_CELL_MAX, "... %d VM%s above (Up/PgUp)", above,
		         above == 1 ? "" : "s");
		snprintf(text[1], TOP_CELL_MAX, "... %d above (PgUp)", above);
		snprintf(text[2], TOP_CELL_MAX, "^%d", above);
	}
	for (i = 0; i < 2 && (int)strlen(text[i]) > cols; i++)
		;
	util_buf_printf(buf, "%.*s\n", cols, text[i]);
}

/* ---- the screen --------------------------------------------------------------------------- */

void
top_view_init(struct top_view *view)
{
	memset(view, 0, sizeof(*view));
	view->sort = TOP_SORT_NAME;
	view->nodes = true;
}

/* The VM table and its marker in the rows left (at least 2); fills out's VM fields. */
static void
top_vm_area(struct top_layout *out, const struct top_view *view, const struct top_vm *vms,
            int nr_vms, int nr_nodes, int rows, int cols)
{
	struct top_grid g;
	int nr_cols = top_vm_table(&g, vms, nr_vms, nr_nodes, cols);
	int fit = rows - 1, shown = nr_vms, first = 0;

	if (nr_vms > fit) {
		shown = fit - 1;
		first = view->scroll < 0 ? 0 : view->scroll;
		if (first > nr_vms - shown)
			first = nr_vms - shown;
	}
	out->table_line = out->nr_lines;
	top_grid_line(&g, -1, nr_cols, &out->text);
	for (int r = first; r < first + shown; r++)
		top_grid_line(&g, r, nr_cols, &out->text);
	out->nr_lines += 1 + shown;
	if (shown < nr_vms) {
		top_marker_line(&out->text, first, nr_vms - first - shown, cols);
		out->nr_lines++;
	}
	out->first_vm = first;
	out->nr_shown = shown;
	top_grid_fini(&g);
}

void
top_layout_render(const struct top_view *view, struct json_object *frame, int rows, int cols,
                  struct top_layout *out)
{
	struct json_object *nodes = cmd_json_array(frame, "nodes");
	int nr_nodes = nodes != NULL ? (int)json_object_array_length(nodes) : 0, nr_vms;
	struct top_vm *vms;
	int used, vm_need;

	rows = rows < 1 ? 1 : rows;
	cols = cols < 1 ? 1 : cols;
	nr_nodes = nr_nodes > UTIL_MAX_NODES ? UTIL_MAX_NODES : nr_nodes;
	vms = top_vms_load(frame, view, nr_nodes, &nr_vms);
	top_layout_free(out);
	out->table_line = -1;
	out->nr_vms = nr_vms;
	top_header_line(&out->text, cmd_json_get(frame, "status"), view, vms, nr_vms, nr_nodes,
	                cols);
	used = 1;
	if (rows < 3) { /* no room for a table: the header, and all VMs counted on a marker */
		if (rows == 1)
			top_layout_free(out);
		out->nr_lines = rows == 1 ? 0 : 1;
		out->table_line = -1;
		out->nr_vms = nr_vms;
		if (nr_vms > 0) {
			top_marker_line(&out->text, 0, nr_vms, cols);
			out->nr_lines++;
		}
		free(vms);
		return;
	}
	if (view->help)
		used += top_help_lines(&out->text, cols, rows - 3);
	vm_need = 1 + (nr_vms < TOP_PANEL_MIN_VM_ROWS ? nr_vms : TOP_PANEL_MIN_VM_ROWS + 1);
	if (view->nodes && nr_nodes > 0 && used + 1 + nr_nodes + vm_need <= rows) {
		struct top_grid g;

		top_node_grid(&g, nodes, vms, nr_vms, nr_nodes);
		for (int r = -1; r < nr_nodes; r++)
			top_grid_line(&g, r, top_grid_fit(&g, cols), &out->text);
		used += 1 + nr_nodes;
		top_grid_fini(&g);
	}
	out->nr_lines = used;
	top_vm_area(out, view, vms, nr_vms, nr_nodes, rows - used, cols);
	free(vms);
}

void
top_layout_free(struct top_layout *lay)
{
	free(lay->text.data);
	memset(lay, 0, sizeof(*lay));
}

/* view's scroll position moved by delta rows and kept where lay has VMs to show. */
static void
top_view_scroll(struct top_view *view, long delta, const struct top_layout *lay)
{
	long pos = (long)view->scroll + delta, last = (long)lay->nr_vms - lay->nr_shown;

	if (pos > last)
		pos = last;
	view->scroll = pos < 0 ? 0 : (int)pos;
}

/* The sort keys. */
static const struct {
	int key;
	enum top_sort sort;
} top_sort_keys[] = {
    {'n', TOP_SORT_NAME},
    {'l', TOP_SORT_LOCALITY},
    {'m', TOP_SORT_MEMORY},
    {'c', TOP_SORT_VCPUS},
};

/* How many rows key scrolls by on lay (negative: up); 0 for a key that does not scroll. */
static long
top_key_rows(int key, const struct top_layout *lay)
{
	long page = lay->nr_shown > 0 ? lay->nr_shown : 1;
	long all = lay->nr_vms > 0 ? lay->nr_vms : 1;

	switch (key) {
	case TOP_KEY_UP:
		return -1;
	case TOP_KEY_DOWN:
		return 1;
	case TOP_KEY_PGUP:
		return -page;
	case TOP_KEY_PGDN:
		return page;
	case TOP_KEY_HOME:
		return -all;
	case TOP_KEY_END:
		return all;
	default:
		return 0;
	}
}

enum top_action
top_view_key(struct top_view *view, int key, const struct top_layout *lay)
{
	long rows = top_key_rows(key, lay);

	for (int i = 0; i < CMD_NR(top_sort_keys); i++) {
		if (key == top_sort_keys[i].key) {
			view->sort = top_sort_keys[i].sort;
			view->reverse = false;
			view->scroll = 0;
			return TOP_ACTION_REDRAW;
		}
	}
	if (rows != 0) {
		top_view_scroll(view, rows, lay);
		return TOP_ACTION_REDRAW;
	}
	switch (key) {
	case 'q':
	case 'Q':
		return TOP_ACTION_QUIT;
	case 'r':
		view->reverse = !view->reverse;
		view->scroll = 0;
		break;
	case '?':
		view->help = !view->help;
		break;
	case '2':
		view->nodes = !view->nodes;
		break;
	case 'p':
	case ' ':
		view->paused = !view->paused;
		break;
	default:
		return TOP_ACTION_NONE;
	}
	return TOP_ACTION_REDRAW;
}

/*
 * top_layout.h - the screen of `vnumactl top` as a pure function: a frame's data, the view
 * (sort order, scroll position, which panels are on) and the terminal's size in, the lines to
 * draw out.  No terminal is touched here (agent/top_screen.c draws the lines with ncurses), so
 * every layout is unit-tested on canned replies.
 *
 * What fits: every line is at most cols bytes (all text is ASCII: bytes outside printable ASCII
 * in names from the daemon become '?') and there are at most rows lines.  A value is never
 * cut in the middle: columns that do not fit are left out whole, lowest priority first (see
 * top_layout.c), and a VM name too long for what is left is abbreviated with a trailing '~'.
 * VM rows that do not fit are counted on a marker line ("... 3 more VMs below (Down/PgDn)").
 *
 * Ownership: a top_layout's text belongs to it; top_layout_free releases it.
 */
#ifndef VNUMAD_AGENT_TOP_LAYOUT_H
#define VNUMAD_AGENT_TOP_LAYOUT_H

#include <stdbool.h>

#include "policy/util.h"

struct json_object;

/* The VM sort orders; ties go by name, then by id, so that the order never flickers. */
enum top_sort {
	TOP_SORT_NAME,     /* 'n': by name, A to Z (the default) */
	TOP_SORT_LOCALITY, /* 'l': worst locality first (no locality yet counts as worst) */
	TOP_SORT_MEMORY,   /* 'm': most memory first */
	TOP_SORT_VCPUS,    /* 'c': most vCPUs first */
};

/* What the user chose; top_view_init gives the defaults. */
struct top_view {
	enum top_sort sort;
	bool reverse; /* 'r': the sort order upside down */
	bool help;    /* '?': the key help lines under the header */
	bool nodes;   /* '2': the per-node memory panel, when there is room for it */
	bool paused;  /* 'p' or space: no refresh (shown in the header) */
	int scroll;   /* index, in sort order, of the first VM row shown */
};

/* The lines to draw and what the keys need to know about them. */
struct top_layout {
	struct util_buf text; /* nr_lines lines, each ending in '\n' */
	int nr_lines;
	int table_line; /* index of the VM table's header line, or -1 */
	int first_vm;   /* the scroll position actually used (clamped to the VMs there are) */
	int nr_shown;   /* VM rows on the screen */
	int nr_vms;     /* VMs in the frame */
};

/* Keys the view knows beyond plain characters (the screen maps terminal keys onto them). */
enum top_key {
	TOP_KEY_UP = 0x100,
	TOP_KEY_DOWN,
	TOP_KEY_PGUP,
	TOP_KEY_PGDN,
	TOP_KEY_HOME,
	TOP_KEY_END,
};

/* What a key asks of the screen. */
enum top_action {
	TOP_ACTION_NONE,   /* not a key of top's: nothing changes */
	TOP_ACTION_REDRAW, /* the view changed: draw the same frame again */
	TOP_ACTION_QUIT,   /* 'q' or 'Q' */
};

void top_view_init(struct top_view *view);

/*
 * The screen for frame {"status": STATUS, "nodes": [NODE...], "vms": [VMINFO...]} (the data
 * of `vnumactl --json top --once`) seen through view on a rows x cols terminal, into out
 * (whose previous text, if any, is released).  rows and cols below 1 count as 1.
 */
void top_layout_render(const struct top_view *view, struct json_object *frame, int rows, int cols,
                       struct top_layout *out);
void top_layout_free(struct top_layout *lay);

/*
 * Apply key (a character or an enum top_key) to view; lay is the screen the key was pressed
 * on (scrolling moves by its page and stops at its last VM).
 */
enum top_action top_view_key(struct top_view *view, int key, const struct top_layout *lay);

#endif

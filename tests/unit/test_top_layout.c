/*
 * test_top_layout.c - `vnumactl top`'s screen without a terminal: a canned frame of a 4-node
 * host with 20 VMs laid out at 80x24, 200x50 and 60x15 (and smaller).  Every line fits, every
 * VM row is whole (each of its words is one of that VM's values, none cut), VMs that do not
 * fit are counted on the marker line, the sort keys order the rows, and the keys scroll and
 * toggle the help and the node panel.  (Its own file: test_cli_commands.c is long already.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/top_layout.h"

#define NR_NODES 4
#define NR_VMS   20
#define WORD_MAX 80

static const char *const vm_names[NR_VMS] = {
    "db-orders",  "db-billing",
    "hpc-wide",   "web1",
    "web2",       "web3",
    "analytics",  "jump-host",
    "batch-etl",  "ci-runner",
    "cache-a",    "cache-b",
    "mail",       "build-farm-long-name",
    "k8s-node-1", "k8s-node-2",
    "k8s-node-3", "ldap",
    "dns",        "backup",
};

/* The canned VMs, so that the checks know each one's values. */
struct vm {
	int vcpus;
	int memory_mib;
	double locality;
	int node_mib[NR_NODES];
	int node_vcpus[NR_NODES];
	char strip[WORD_MAX];
};

static struct vm vms[NR_VMS];

static void
vms_make(void)
{
	for (int i = 0; i < NR_VMS; i++) {
		struct vm *vm = &vms[i];

		memset(vm, 0, sizeof(*vm));
		vm->vcpus = 2 + (i * 5) % 14;
		vm->memory_mib = 1024 * (1 + (i * 7) % 16);
		vm->locality = 0.30 + (double)((i * 13) % 70) / 100.0;
		for (int n = 0; n < NR_NODES; n++)
			vm->node_mib[n] = vm->memory_mib / NR_NODES;
		for (int k = 0; k < vm->vcpus; k++) {
			int node = (i + k / 3) % NR_NODES;

			vm->node_vcpus[node]++;
			vm->strip[k] = (char)('0' + node);
		}
	}
}

/* The frame: a status reply, nodeinfo's nodes and one vminfo reply per VM. */
static struct json_object *
frame_new(int nr_vms)
{
	struct json_object *frame = json_tokener_parse(
	    "{\"status\":{\"version\":\"0.1.0\",\"backend\":\"sim\",\"host_time_s\":250.0,"
	    "\"rounds\":125,\"paused\":false},\"nodes\":[],\"vms\":[]}");
	struct json_object *nodes = json_object_object_get(frame, "nodes");
	struct json_object *list = json_object_object_get(frame, "vms");

	for (int n = 0; n < NR_NODES; n++) {
		char text[256];

		snprintf(text, sizeof(text),
		         "{\"node\":%d,\"cpus\":16,\"mem_total_mib\":65536,\"mem_free_mib\":%d,"
		         "\"vcpus\":%d,\"cpu_load\":%.2f}",
		         n, 8192 * (n + 1), 10 + n, 1.5 * n);
		json_object_array_add(nodes, json_tokener_parse(text));
	}
	for (int i = 0; i < nr_vms; i++) {
		const struct vm *vm = &vms[i];
		struct json_object *info = json_object_new_object();
		struct json_object *resident = json_object_new_array();
		struct json_object *vcpu = json_object_new_array();

		json_object_object_add(info, "id", json_object_new_int(i + 1));
		json_object_object_add(info, "name", json_object_new_string(vm_names[i]));
		json_object_object_add(info, "state",
		                       json_object_new_string(i % 3 == 0 ? "moving" : "stable"));
		json_object_object_add(info, "memory_locality",
		                       json_object_new_double(vm->locality));
		json_object_object_add(info, "strength", json_object_new_int(100 * i));
		json_object_object_add(info, "vcpus", json_object_new_int(vm->vcpus));
		json_object_object_add(info, "memory_mib", json_object_new_int(vm->memory_mib));
		for (int n = 0; n < NR_NODES; n++)
			json_object_array_add(resident, json_object_new_int(vm->node_mib[n]));
		for (int k = 0; k < vm->vcpus; k++) {
			struct json_object *v = json_object_new_object();

			json_object_object_add(v, "vcpu", json_object_new_int(k));
			json_object_object_add(v, "node", json_object_new_int(vm->strip[k] - '0'));
			json_object_array_add(vcpu, v);
		}
		json_object_object_add(info, "resident_mib", resident);
		json_object_object_add(info, "vcpu", vcpu);
		json_object_array_add(list, info);
	}
	return frame;
}

/* Line i of lay into line (without its newline). */
static void
layout_line(const struct top_layout *lay, int i, char *line, size_t len)
{
	const char *p = lay->text.data;

	for (int k = 0; k < i; k++)
		p = strchr(p, '\n') + 1;
	snprintf(line, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/* Whether word is one of VM i's values as the table shows them. */
static bool
vm_has_word(int i, const char *word)
{
	const struct vm *vm = &vms[i];
	char v[WORD_MAX];

	if (strcmp(word, vm_names[i]) == 0 || strcmp(word, vm->strip) == 0 ||
	    strcmp(word, i % 3 == 0 ? "moving" : "stable") == 0)
		return true;
	/* an abbreviated name: a prefix of the name and '~' */
	if (word[strlen(word) - 1] == '~' && strncmp(word, vm_names[i], strlen(word) - 1) == 0)
		return true;
	for (int k = 0; k < 5 + 2 * NR_NODES; k++) {
		switch (k) {
		case 0:
			snprintf(v, sizeof(v), "%d", i + 1);
			break;
		case 1:
			snprintf(v, sizeof(v), "%.2f", vm->locality);
			break;
		case 2:
			snprintf(v, sizeof(v), "%d", 100 * i);
			break;
		case 3:
			snprintf(v, sizeof(v), "%d", vm->vcpus);
			break;
		case 4:
			snprintf(v, sizeof(v), "%.1f", vm->memory_mib / 1024.0);
			break;
		default:
			if (k < 5 + NR_NODES)
				snprintf(v, sizeof(v), "%.1f", vm->node_mib[k - 5] / 1024.0);
			else
				snprintf(v, sizeof(v), "%d", vm->node_vcpus[k - 5 - NR_NODES]);
		}
		if (strcmp(word, v) == 0)
			return true;
	}
	return false;
}

/* The VM shown on table row r (0: the first VM row), checking that the row is whole. */
static int
row_vm(const struct top_layout *lay, int r)
{
	char line[512], *save = NULL;
	int vm = -1;

	layout_line(lay, lay->table_line + 1 + r, line, sizeof(line));
	for (char *w = strtok_r(line, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		for (int i = 0; vm < 0 && i < NR_VMS; i++)
			if (strcmp(w, vm_names[i]) == 0 ||
			    (w[strlen(w) - 1] == '~' &&
			     strncmp(w, vm_names[i], strlen(w) - 1) == 0))
				vm = i;
	}
	assert_true(vm >= 0);
	layout_line(lay, lay->table_line + 1 + r, line, sizeof(line));
	for (char *w = strtok_r(line, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		if (!vm_has_word(vm, w))
			fail_msg("row %d (%s): '%s' is not one of its values", r, vm_names[vm], w);
	}
	return vm;
}

/*
 * lay fits rows x cols, its rows are whole, and VMs left out are counted on the marker line
 * right under the rows (the number below in its text); returns whether there is a marker.
 */
static bool
assert_fits(const struct top_layout *lay, int rows, int cols)
{
	char line[512], want[3][64];
	int nr_lines = 0, above, below;

	for (const char *p = lay->text.data; *p != '\0'; p++)
		nr_lines += *p == '\n';
	assert_int_equal(nr_lines, lay->nr_lines);
	assert_true(lay->nr_lines <= rows);
	assert_null(strchr(lay->text.data, '\033'));
	for (int i = 0; i < lay->nr_lines; i++) {
		layout_line(lay, i, line, sizeof(line));
		if ((int)strlen(line) > cols)
			fail_msg("line %d is %zu wide at %d columns: %s", i, strlen(line), cols,
			         line);
	}
	for (int r = 0; r < lay->nr_shown; r++)
		row_vm(lay, r);
	if (lay->nr_shown == lay->nr_vms)
		return false;
	/* The marker, in one of its wordings (the shorter ones for narrow screens). */
	layout_line(lay, lay->table_line + 1 + lay->nr_shown, line, sizeof(line));
	above = lay->first_vm;
	below = lay->nr_vms - lay->first_vm - lay->nr_shown;
	if (below > 0) {
		snprintf(want[0], sizeof(want[0]), "%d more", below);
		snprintf(want[1], sizeof(want[1]), "%d below", below);
		snprintf(want[2], sizeof(want[2]), "v%d", below);
	} else {
		snprintf(want[0], sizeof(want[0]), "%d VMs above", above);
		snprintf(want[1], sizeof(want[1]), "%d above", above);
		snprintf(want[2], sizeof(want[2]), "^%d", above);
	}
	if (strstr(line, want[0]) == NULL && strstr(line, want[1]) == NULL &&
	    strstr(line, want[2]) == NULL)
		fail_msg("no marker '%s' under the rows: %s", want[0], line);
	return true;
}

static void
render(const struct top_view *view, struct json_object *frame, int rows, int cols,
       struct top_layout *lay)
{
	top_layout_render(view, frame, rows, cols, lay);
	assert_non_null(lay->text.data);
}

/* Each test's frame of NR_VMS VMs, its view (the defaults) and its layout. */
struct screen {
	struct json_object *frame;
	struct top_view view;
	struct top_layout lay;
};

static int
screen_setup(void **state)
{
	struct screen *sc = calloc(1, sizeof(*sc));

	assert_non_null(sc);
	sc->frame = frame_new(NR_VMS);
	top_view_init(&sc->view);
	*state = sc;
	return 0;
}

static int
screen_teardown(void **state)
{
	struct screen *sc = *state;

	top_layout_free(&sc->lay);
	json_object_put(sc->frame);
	free(sc);
	return 0;
}

static void
test_layout_sizes(void **state)
{
	struct screen *sc = *state;
	char line[512];

	/* 200x50: everything, the per-vCPU node strip included, and no marker. */
	render(&sc->view, sc->frame, 50, 200, &sc->lay);
	assert_false(assert_fits(&sc->lay, 50, 200));
	assert_int_equal(sc->lay.nr_shown, NR_VMS);
	layout_line(&sc->lay, 0, line, sizeof(line));
	assert_int_equal(strncmp(line, "nodes 4  vms 20  rounds 125  locality ", 38), 0);
	assert_non_null(strstr(line, "running"));
	layout_line(&sc->lay, 1, line, sizeof(line));
	assert_string_equal(line, "node  cpus  load  vcpus  total_gib  free_gib  vms_gib");
	layout_line(&sc->lay, sc->lay.table_line, line, sizeof(line));
	assert_non_null(strstr(line, "gib3  vcpu_nodes"));

	/* 80x24: the strip condensed to per-node counts, lower columns gone; a marker. */
	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	assert_true(assert_fits(&sc->lay, 24, 80));
	layout_line(&sc->lay, sc->lay.table_line, line, sizeof(line));
	assert_null(strstr(line, "vcpu_nodes"));
	assert_non_null(strstr(line, "vcpu3"));
	assert_non_null(strstr(line, "mem_local"));

	/* 60x15 and smaller: still whole rows and a marker. */
	for (int cols = 60; cols >= 8; cols -= 13) {
		render(&sc->view, sc->frame, 15, cols, &sc->lay);
		assert_true(assert_fits(&sc->lay, 15, cols));
	}
	for (int rows = 1; rows <= 3; rows++) { /* no room for a VM row: all on the marker */
		render(&sc->view, sc->frame, rows, 60, &sc->lay);
		assert_true(sc->lay.nr_lines <= rows);
		assert_non_null(strstr(sc->lay.text.data, "20 more"));
	}
}

/* Every pair of rows on lay in the order of sort (reverse: upside down). */
static void
assert_sorted(const struct top_layout *lay, char sort, bool reverse)
{
	for (int r = 0; r + 1 < lay->nr_shown; r++) {
		int a = row_vm(lay, r), b = row_vm(lay, r + 1);
		double d = 0;

		if (reverse) {
			int t = a;

			a = b;
			b = t;
		}
		if (sort == 'n')
			d = strcmp(vm_names[a], vm_names[b]);
		else if (sort == 'l')
			d = vms[a].locality - vms[b].locality;
		else if (sort == 'm')
			d = vms[b].memory_mib - vms[a].memory_mib;
		else
			d = vms[b].vcpus - vms[a].vcpus;
		if (d == 0)
			d = strcmp(vm_names[a], vm_names[b]);
		if (d > 0)
			fail_msg("sort %c: %s before %s", sort, vm_names[a], vm_names[b]);
	}
}

static void
test_layout_sort(void **state)
{
	struct screen *sc = *state;
	static const char keys[] = "nlmc";

	for (int size = 0; size < 2; size++) {
		int rows = size == 0 ? 50 : 24, cols = size == 0 ? 200 : 80;

		for (const char *k = keys; *k != '\0'; k++) {
			render(&sc->view, sc->frame, rows, cols, &sc->lay);
			assert_int_equal(top_view_key(&sc->view, *k, &sc->lay), TOP_ACTION_REDRAW);
			render(&sc->view, sc->frame, rows, cols, &sc->lay);
			assert_sorted(&sc->lay, *k, false);
			assert_int_equal(top_view_key(&sc->view, 'r', &sc->lay), TOP_ACTION_REDRAW);
			render(&sc->view, sc->frame, rows, cols, &sc->lay);
			assert_sorted(&sc->lay, *k, true);
			assert_non_null(strstr(sc->lay.text.data, "reversed"));
		}
	}
	/* Worst locality first: VM 0 has the lowest (0.30). */
	top_view_init(&sc->view);
	top_view_key(&sc->view, 'l', &sc->lay);
	render(&sc->view, sc->frame, 15, 60, &sc->lay);
	assert_int_equal(row_vm(&sc->lay, 0), 0);
}

static void
test_layout_keys(void **state)
{
	struct screen *sc = *state;
	char line[512];

	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	/* End: the last VM by name is on the last row, the others counted above. */
	assert_int_equal(top_view_key(&sc->view, TOP_KEY_END, &sc->lay), TOP_ACTION_REDRAW);
	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	assert_true(assert_fits(&sc->lay, 24, 80) || sc->lay.first_vm > 0);
	assert_int_equal(sc->lay.first_vm + sc->lay.nr_shown, NR_VMS);
	assert_string_equal(vm_names[row_vm(&sc->lay, sc->lay.nr_shown - 1)], "web3");
	layout_line(&sc->lay, sc->lay.table_line + 1 + sc->lay.nr_shown, line, sizeof(line));
	snprintf(line + 256, 64, "%d VMs above", sc->lay.first_vm);
	assert_non_null(strstr(line, line + 256));
	/* Down stops at the end; Up, PgUp, Home go back; PgDn moves a page. */
	top_view_key(&sc->view, TOP_KEY_DOWN, &sc->lay);
	assert_int_equal(sc->view.scroll, sc->lay.first_vm);
	top_view_key(&sc->view, TOP_KEY_UP, &sc->lay);
	assert_int_equal(sc->view.scroll, sc->lay.first_vm - 1);
	top_view_key(&sc->view, TOP_KEY_HOME, &sc->lay);
	assert_int_equal(sc->view.scroll, 0);
	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	top_view_key(&sc->view, TOP_KEY_PGDN, &sc->lay); /* a page, or as far as the last VM */
	assert_int_equal(sc->view.scroll, NR_VMS - sc->lay.nr_shown < sc->lay.nr_shown
	                                      ? NR_VMS - sc->lay.nr_shown
	                                      : sc->lay.nr_shown);
	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	assert_true(assert_fits(&sc->lay, 24, 80));
	top_view_key(&sc->view, TOP_KEY_PGUP, &sc->lay);
	assert_int_equal(sc->view.scroll, 0);

	/* ?: the key help under the header; 2: the node panel off; p: refresh off. */
	assert_int_equal(top_view_key(&sc->view, '?', &sc->lay), TOP_ACTION_REDRAW);
	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	assert_true(assert_fits(&sc->lay, 24, 80));
	layout_line(&sc->lay, 1, line, sizeof(line));
	assert_int_equal(strncmp(line, "keys:  n name", 13), 0);
	assert_non_null(strstr(sc->lay.text.data, "q quit"));
	assert_non_null(strstr(sc->lay.text.data, "total_gib"));
	top_view_key(&sc->view, '2', &sc->lay);
	top_view_key(&sc->view, 'p', &sc->lay);
	render(&sc->view, sc->frame, 24, 80, &sc->lay);
	assert_null(strstr(sc->lay.text.data, "total_gib"));
	assert_non_null(strstr(sc->lay.text.data, "refresh off"));
	assert_fits(&sc->lay, 24, 80); /* without the panel all 20 may fit */
	assert_int_equal(top_view_key(&sc->view, 'x', &sc->lay), TOP_ACTION_NONE);
	assert_int_equal(top_view_key(&sc->view, 'q', &sc->lay), TOP_ACTION_QUIT);
}

/* The node panel goes when it would leave too few VM rows, and comes back with room. */
static void
test_layout_panel_room(void **state)
{
	struct screen *sc = *state;
	struct json_object *few = frame_new(3);

	render(&sc->view, sc->frame, 10, 80, &sc->lay);
	assert_null(strstr(sc->lay.text.data, "total_gib"));
	assert_true(assert_fits(&sc->lay, 10, 80));
	render(&sc->view, few, 10, 80, &sc->lay);
	assert_non_null(strstr(sc->lay.text.data, "total_gib"));
	assert_false(assert_fits(&sc->lay, 10, 80));
	json_object_put(few);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_layout_sizes, screen_setup, screen_teardown),
	    cmocka_unit_test_setup_teardown(test_layout_sort, screen_setup, screen_teardown),
	    cmocka_unit_test_setup_teardown(test_layout_keys, screen_setup, screen_teardown),
	    cmocka_unit_test_setup_teardown(test_layout_panel_room, screen_setup, screen_teardown),
	};

	vms_make();
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_simulate_output.c - what `vnumactl simulate` prints, on hand-made results: the BRIEF 4.3
 * JSON document, the table, the SVG chart, and atomic file writes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/format.h"
#include "agent/svg.h"
#include "host/sim/sim.h"

#define NR_RESULTS 3
#define NR_SAMPLES 10

/* BRIEF 4.3's keys, in its order. */
static const char *const brief_keys[] = {
    "policy",       "locality",   "throughput",    "vs_oracle", "converge_s",
    "migrated_gib", "vcpu_moves", "max_node_fill", "oom",       "balancer_ms",
};
#define NR_BRIEF_KEYS ((int)(sizeof(brief_keys) / sizeof(brief_keys[0])))

struct fixture {
	struct sim_result res[NR_RESULTS];
	double series[NR_RESULTS][NR_SAMPLES];
	struct format_sim_report rep;
};

static void
fixture_result(struct fixture *fx, int i, const char *policy, double locality, double throughput)
{
	struct sim_result *r = &fx->res[i];

	snprintf(r->policy, sizeof(r->policy), "%s", policy);
	r->duration_s = 10;
	r->locality = locality;
	r->throughput = throughput;
	r->vs_oracle = throughput / 2000.0;
	r->converge_s = 2.5 * i;
	r->migrated_gib = 1.25 * i;
	r->vcpu_moves = 7u * (unsigned)i;
	r->max_node_fill = 0.5 + 0.125 * i;
	r->oom = (uint64_t)i;
	r->balancer_ms = 0.0625 * i;
	r->balancer_calls = 3u * (unsigned)i;
	r->nr_samples = NR_SAMPLES;
	r->locality_series = fx->series[i];
	for (int s = 0; s < NR_SAMPLES; s++)
		fx->series[i][s] = locality;
}

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	fixture_result(fx, 0, "none", 0.5, 1000.0);
	fixture_result(fx, 1, "vnumad", 0.94, 1970.0);
	fixture_result(fx, 2, "oracle", 0.99, 2000.0);
	/* none: a gap in the middle (seconds 4-5 had nothing running). */
	fx->series[0][4] = -1;
	fx->series[0][5] = -1;
	fx->rep = (struct format_sim_report){
	    .scenario = "tiny",
	    .duration_s = 10,
	    .nodes = 2,
	    .cpus_per_node = 4,
	    .memory_per_node_gib = 8,
	    .nr_vms = 2,
	    .results = fx->res,
	    .nr_results = NR_RESULTS,
	};
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	free(*state);
	return 0;
}

static int
count_substr(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(s, needle); p != NULL; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void
test_json_document(void **state)
{
	struct fixture *fx = *state;
	char *text = format_sim_report_text(&fx->rep, true);
	struct json_object *doc = json_tokener_parse(text), *results, *v;

	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "scenario", &v));
	assert_string_equal(json_object_get_string(v), "tiny");
	assert_true(json_object_object_get_ex(doc, "duration_s", &v));
	assert_true(json_object_get_double(v) == 10.0);
	assert_true(json_object_object_get_ex(doc, "results", &results));
	assert_int_equal(json_object_array_length(results), NR_RESULTS);
	for (int i = 0; i < NR_RESULTS; i++) {
		struct json_object *row = json_object_array_get_idx(results, (size_t)i);
		int k = 0;

		/* Every BRIEF key, first and in order; extras only after them. */
		json_object_object_foreach(row, key, val)
		{
			(void)val;
			if (k < NR_BRIEF_KEYS)
				assert_string_equal(key, brief_keys[k]);
			k++;
		}
		assert_true(k >= NR_BRIEF_KEYS);
		assert_string_equal(json_object_get_string(json_object_object_get(row, "policy")),
		                    fx->res[i].policy);
		assert_float_equal(json_object_get_double(json_object_object_get(row, "locality")),
		                   fx->res[i].locality, 1e-9);
		assert_float_equal(
		    json_object_get_double(json_object_object_get(row, "throughput")),
		    fx->res[i].throughput, 1e-9);
		assert_float_equal(json_object_get_double(json_object_object_get(row, "vs_oracle")),
		                   fx->res[i].vs_oracle, 1e-3);
		assert_float_equal(
		    json_object_get_double(json_object_object_get(row, "converge_s")),
		    fx->res[i].converge_s, 1e-9);
		assert_float_equal(
		    json_object_get_double(json_object_object_get(row, "migrated_gib")),
		    fx->res[i].migrated_gib, 1e-9);
		assert_int_equal(json_object_get_int64(json_object_object_get(row, "vcpu_moves")),
		                 fx->res[i].vcpu_moves);
		assert_float_equal(
		    json_object_get_double(json_object_object_get(row, "max_node_fill")),
		    fx->res[i].max_node_fill, 1e-9);
		assert_int_equal(json_object_get_int64(json_object_object_get(row, "oom")),
		                 fx->res[i].oom);
		assert_float_equal(
		    json_object_get_double(json_object_object_get(row, "balancer_ms")),
		    fx->res[i].balancer_ms, 1e-3);
		assert_true(json_object_get_type(json_object_object_get(row, "vcpu_moves")) ==
		            json_type_int);
	}
	json_object_put(doc);
	free(text);
}

static void
test_json_numbers_deterministic(void **state)
{
	struct fixture *fx = *state;
	char *a, *b;

	fx->res[1].locality = 0.1 + 0.2; /* 0.30000000000000004 */
	fx->res[1].converge_s = -0.0;
	fx->res[1].throughput = 1234567.0;
	a = format_sim_report_text(&fx->rep, true);
	b = format_sim_report_text(&fx->rep, true);
	assert_string_equal(a, b);
	assert_non_null(strstr(a, "\"locality\":0.300"));
	assert_null(strstr(a, "0.30000000000000004"));
	assert_non_null(strstr(a, "\"throughput\":1234567.0"));
	assert_null(strstr(a, "-0.0"));
	assert_non_null(strstr(a, "\"duration_s\":10,"));
	free(a);
	free(b);
}

static void
test_json_non_finite_is_null(void **state)
{
	struct fixture *fx = *state;
	char *text;
	struct json_object *doc, *row;

	fx->res[0].converge_s = NAN;
	text = format_sim_report_text(&fx->rep, true);
	doc = json_tokener_parse(text);
	assert_non_null(doc);
	row = json_object_array_get_idx(json_object_object_get(doc, "results"), 0);
	assert_true(json_object_object_get_ex(row, "converge_s", NULL));
	assert_null(json_object_object_get(row, "converge_s"));
	json_object_put(doc);
	free(text);
}

/* Lines of text into a NULL-terminated array (modifies text). */
static int
split_lines(char *text, char **lines, int max)
{
	int n = 0;

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l != NULL && n < max;
	     l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	return n;
}

static void
test_table(void **state)
{
	struct fixture *fx = *state;
	char *text = format_sim_report_text(&fx->rep, false), *lines[16];
	char *again = format_sim_report_text(&fx->rep, false);
	int n;

	assert_string_equal(text, again);
	free(again);
	n = split_lines(text, lines, 16);
	/* Header, column names, one row per policy (the blank line is dropped by strtok). */
	assert_int_equal(n, 2 + NR_RESULTS);
	assert_non_null(strstr(lines[0], "tiny"));
	assert_non_null(strstr(lines[0], "2 nodes x 4 CPUs"));
	assert_non_null(strstr(lines[0], "2 VMs"));
	assert_non_null(strstr(lines[0], "10 s"));
	for (int k = 0; k < NR_BRIEF_KEYS; k++)
		assert_non_null(strstr(lines[1], brief_keys[k]));
	assert_null(strstr(lines[1], "balancer_calls")); /* JSON-only column */
	for (int i = 0; i < NR_RESULTS; i++) {
		assert_int_equal(
		    strncmp(lines[2 + i], fx->res[i].policy, strlen(fx->res[i].policy)), 0);
		/* Aligned: every line of the table has the same width. */
		assert_int_equal(strlen(lines[2 + i]), strlen(lines[1]));
	}
	/* The same number text as the JSON. */
	assert_non_null(strstr(lines[3], "0.940"));
	assert_non_null(strstr(lines[3], "1970.0"));
	free(text);
}

static void
test_svg(void **state)
{
	struct fixture *fx = *state;
	char *a = svg_locality_chart("tiny & <small>", 10, fx->res, NR_RESULTS);
	char *b = svg_locality_chart("tiny & <small>", 10, fx->res, NR_RESULTS);
	const char *p, *end;

	assert_string_equal(a, b);
	assert_int_equal(strncmp(a, "<svg", 4), 0);
	assert_non_null(strstr(a, "</svg>\n"));
	assert_string_equal(strstr(a, "</svg>"), "</svg>\n");
	assert_int_equal(count_substr(a, "<path"), NR_RESULTS);
	assert_int_equal(count_substr(a, "<svg"), 1);
	assert_non_null(strstr(a, ">none</text>"));
	assert_non_null(strstr(a, ">vnumad</text>"));
	assert_non_null(strstr(a, ">oracle</text>"));
	assert_non_null(strstr(a, "tiny &amp; &lt;small&gt;"));
	assert_null(strstr(a, "<small>"));
	/* none has a gap: two subpaths; vnumad one. */
	p = strstr(a, "data-policy=\"none\"");
	assert_non_null(p);
	p = strstr(p, " d=\"");
	end = strchr(p + 4, '"');
	assert_int_equal(count_substr(p, "M") - count_substr(end, "M"), 2);
	p = strstr(a, "data-policy=\"vnumad\"");
	p = strstr(p, " d=\"");
	end = strchr(p + 4, '"');
	assert_int_equal(count_substr(p, "M") - count_substr(end, "M"), 1);
	assert_int_equal(count_substr(p, " L") - count_substr(end, " L"), NR_SAMPLES - 1);
	free(a);
	free(b);
}

static void
test_svg_empty_and_long(void **state)
{
	struct fixture *fx = *state;
	enum { LONG = 86400 };
	double *series = calloc(LONG, sizeof(*series));
	char *text;

	for (int s = 0; s < NR_SAMPLES; s++)
		fx->series[2][s] = -1; /* oracle: nothing ran at all */
	for (int s = 0; s < LONG; s++)
		series[s] = (s / 100) % 2 ? 0.25 : 0.75;
	fx->res[1].locality_series = series;
	fx->res[1].nr_samples = LONG;
	text = svg_locality_chart("long", LONG, fx->res, NR_RESULTS);
	assert_int_equal(count_substr(text, "<path"), NR_RESULTS);
	assert_non_null(strstr(text, "data-policy=\"oracle\" fill=\"none\""));
	assert_non_null(strstr(text, "d=\"\"/>")); /* empty line, still one element */
	/* Long series are bucketed: far fewer points than samples. */
	assert_true(strlen(text) < 200000);
	free(text);
	free(series);
}

static int
count_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void
test_file_atomic(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char dir[256], path[300], buf[64] = "";
	struct format_file file;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/vnumad-test-format-XXXXXX",
	         tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.svg", dir);
	assert_int_equal(format_file_open(&file, path), 0);
	assert_int_equal(count_dir_entries(dir), 1); /* only the temporary */
	assert_int_equal(format_file_commit(&file, "hello\n", 6), 0);
	assert_int_equal(count_dir_entries(dir), 1);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "hello\n");
	/* Abort leaves nothing behind; the old file stays. */
	assert_int_equal(format_file_open(&file, path), 0);
	format_file_abort(&file);
	assert_int_equal(count_dir_entries(dir), 1);
	snprintf(path, sizeof(path), "%s/missing/out.svg", dir);
	assert_int_equal(format_file_open(&file, path), -ENOENT);
	snprintf(path, sizeof(path), "%s/out.svg", dir);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_json_document, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_json_numbers_deterministic, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_json_non_finite_is_null, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_svg, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_svg_empty_and_long, setup, teardown),
	    cmocka_unit_test(test_file_atomic),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_metrics.c - the metrics text (agent/metrics.c) on views built by hand: label escaping,
 * HELP and TYPE for every family, families whole, the histogram's buckets, deterministic
 * order; the listen address parser; and the rendering of a simulated daemon's own view.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/daemon.h"
#include "agent/metrics.h"
#include "agent/metrics_http.h"
#include "tests/unit/daemon_harness.h"

/* Two VMs on two nodes, given out of name order; the first with a hard name. */
struct tview {
	struct metrics_view mv;
	struct metrics_node nodes[2];
	struct metrics_vm vms[2];
	uint64_t bytes[2][2];
	int vcpus[2][2];
};

static void
tview_build(struct tview *t, const char *hard_name)
{
	memset(t, 0, sizeof(*t));
	t->mv.version = "0.1.0";
	t->mv.backend = "sim";
	t->mv.default_mode = "auto";
	t->mv.caps = 1u << 0 | 1u << 6;
	t->mv.rounds = 7;
	t->mv.fault_locality = -1;
	t->mv.memory_locality = 0.5;
	t->mv.render_s = 0.001;
	t->mv.nr_nodes = 2;
	t->mv.nodes = t->nodes;
	for (int n = 0; n < 2; n++)
		t->nodes[n] =
		    (struct metrics_node){.id = n, .nr_cpus = 4, .mem_total_bytes = 1u << 30};
	t->mv.nr_vms = 2;
	t->mv.vms = t->vms;
	for (int i = 0; i < 2; i++) {
		t->vms[i] = (struct metrics_vm){
		    .id = 10 + i,
		    .name = (char *)(i == 0 ? "zeta" : hard_name),
		    .uuid = (char *)(i == 0 ? "" : "6a1f0a36-1d2c-4a8e-9a55-2b0f1b8f8d01"),
		    .mode = "auto",
		    .placement = "compact",
		    .source = "default",
		    .state = "settled",
		    .node_bytes = t->bytes[i],
		    .node_vcpus = t->vcpus[i],
		    .fault_locality = i == 0 ? 0.75 : -1,
		    .memory_locality = 0.25 * (i + 1),
		};
		t->vms[i].c.hint_faults = 100;
		t->vms[i].c.hint_faults_local = 60;
	}
	hist_observe(&t->mv.decision, 0.00003);
	hist_observe(&t->mv.decision, 0.0007);
	hist_observe(&t->mv.decision, 0.0007);
	hist_observe(&t->mv.decision, 5.0);
}

static char *
tview_render(const struct metrics_view *mv)
{
	struct util_buf out = {0};

	metrics_render(mv, &out);
	assert_non_null(out.data);
	return out.data;
}

/* The metric family a sample name belongs to (histogram suffixes taken off). */
static void
family_of(const char *sample, char *fam, size_t len, const char *hist_family)
{
	size_t n = strcspn(sample, "{ ");

	snprintf(fam, len, "%.*s", (int)n, sample);
	if (hist_family != NULL && strncmp(fam, hist_family, strlen(hist_family)) == 0)
		snprintf(fam, len, "%s", hist_family);
}

/*
 * Structure, line by line: every sample follows the HELP and TYPE of its own family, a family
 * is never opened twice, and the text ends with a newline.  Returns the number of families.
 */
static int
check_structure(const char *text)
{
	char *copy = strdup(text), *save = NULL, fam[128] = "", seen[256][128];
	int nr = 0;
	bool typed = false;

	assert_true(text[0] != '\0' && text[strlen(text) - 1] == '\n');
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], type[32], sfam[128];

		if (sscanf(line, "# HELP %127s", name) == 1) {
			for (int i = 0; i < nr; i++)
				if (strcmp(seen[i], name) == 0)
					fail_msg("family %s opened twice", name);
			assert_true(nr < 256);
			snprintf(seen[nr++], sizeof(seen[0]), "%s", name);
			snprintf(fam, sizeof(fam), "%s", name);
			typed = false;
			continue;
		}
		if (sscanf(line, "# TYPE %127s %31s", name, type) == 2) {
			assert_string_equal(name, fam);
			assert_true(strcmp(type, "gauge") == 0 || strcmp(type, "counter") == 0 ||
			            strcmp(type, "histogram") == 0);
			typed = true;
			/* counters, and only they, end in _total */
			assert_int_equal(strcmp(type, "counter") == 0,
			                 strlen(name) > 6 &&
			                     strcmp(name + strlen(name) - 6, "_total") == 0);
			continue;
		}
		assert_true(line[0] != '#');
		family_of(line, sfam, sizeof(sfam),
		          strcmp(fam, "vnumad_decision_duration_seconds") == 0 ? fam : NULL);
		if (!typed || strcmp(sfam, fam) != 0)
			fail_msg("sample outside its family (%s after %s): %s", sfam, fam, line);
	}
	free(copy);
	return nr;
}

static void
test_escape(void **state)
{
	struct util_buf b = {0};

	metrics_label_escape(&b, "a\"b\\c\nd");
	assert_string_equal(b.data, "a\\\"b\\\\c\\nd");
	b.len = 0;
	metrics_label_escape(&b, "plain-name.1");
	assert_string_equal(b.data, "plain-name.1");
	free(b.data);
}

static void
test_render_structure(void **state)
{
	struct tview t;
	char *text;

	tview_build(&t, "we\"ird\\vm\nname");
	text = tview_render(&t.mv);
	assert_true(check_structure(text) > 30);
	/* the hard name escaped, and with its domain UUID */
	assert_non_null(strstr(text,
	                       "vnumad_vm_locality_ratio{vm=\"we\\\"ird\\\\vm\\nname\","
	                       "domain_uuid=\"6a1f0a36-1d2c-4a8e-9a55-2b0f1b8f8d01\"} 0.5\n"));
	assert_non_null(strstr(text, "vnumad_vm_locality_ratio{vm=\"zeta\"} 0.25\n"));
	/* fault locality only where there is a figure; the host's absent when none */
	assert_non_null(strstr(text, "vnumad_vm_fault_locality_ratio{vm=\"zeta\"} 0.75\n"));
	assert_null(strstr(text, "vnumad_vm_fault_locality_ratio{vm=\"we"));
	assert_null(strstr(text, "vnumad_fault_locality_ratio "));
	assert_non_null(strstr(text, "vnumad_vm_hint_faults_total{vm=\"zeta\",locality=\"remote\"} "
	                             "40\n"));
	assert_non_null(strstr(text, "vnumad_host_capability{capability=\"pin\"} 1\n"));
	assert_non_null(strstr(text, "vnumad_host_capability{capability=\"bind-live\"} 0\n"));
	assert_non_null(strstr(text, "vnumad_vm_memory_bytes{vm=\"zeta\",node=\"1\"} 0\n"));
	/* sorted by name: "we..." before "zeta" whatever the view's order */
	assert_true(strstr(text, "vnumad_vm_vcpus{vm=\"we") <
	            strstr(text, "vnumad_vm_vcpus{vm=\"z"));
	free(text);
}

static void
test_histogram(void **state)
{
	struct tview t;
	char *text, *p, le[32];
	unsigned long long prev = 0, v, count = 0;
	double sum = 0;
	int buckets = 0;

	tview_build(&t, "vm");
	text = tview_render(&t.mv);
	for (p = text; (p = strstr(p, "vnumad_decision_duration_seconds_bucket{le=\"")) != NULL;
	     p++) {
		assert_int_equal(sscanf(p,
		                        "vnumad_decision_duration_seconds_bucket{le=\"%31[^\"]\"} "
		                        "%llu",
		                        le, &v),
		                 2);
		assert_true(v >= prev); /* cumulative: never falls */
		prev = v;
		buckets++;
	}
	assert_int_equal(buckets, HIST_BUCKETS + 1);
	assert_string_equal(le, "+Inf");
	p = strstr(text, "vnumad_decision_duration_seconds_count ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "vnumad_decision_duration_seconds_count %llu", &count), 1);
	assert_int_equal(count, 4);
	assert_int_equal(prev, count); /* +Inf holds them all */
	p = strstr(text, "vnumad_decision_duration_seconds_sum ");
	assert_int_equal(sscanf(p, "vnumad_decision_duration_seconds_sum %lf", &sum), 1);
	assert_true(sum > 5.0014 && sum < 5.0015);
	/* 30 us in the first bucket (50 us), 700 us from the 1 ms bucket on, 5 s only in +Inf */
	assert_non_null(strstr(text, "_bucket{le=\"5e-05\"} 1\n"));
	assert_non_null(strstr(text, "_bucket{le=\"0.0005\"} 1\n"));
	assert_non_null(strstr(text, "_bucket{le=\"0.001\"} 3\n"));
	assert_non_null(strstr(text, "_bucket{le=\"1\"} 3\n"));
	free(text);
}

static void
test_render_deterministic(void **state)
{
	struct tview a, b;
	struct metrics_vm swap;
	char *ta, *tb;

	tview_build(&a, "vm-a");
	tview_build(&b, "vm-a");
	swap = b.vms[0];
	b.vms[0] = b.vms[1];
	b.vms[1] = swap;
	ta = tview_render(&a.mv);
	tb = tview_render(&b.mv);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
}

static void
test_render_no_vms(void **state)
{
	struct metrics_view mv = {.version = "x", .backend = "sim", .default_mode = "auto"};
	char *text;

	mv.fault_locality = -1;
	mv.render_s = -1;
	text = tview_render(&mv);
	check_structure(text);
	assert_null(strstr(text, "vnumad_vm_"));
	assert_null(strstr(text, "vnumad_metrics_render_seconds"));
	free(text);
}

static void
expect_addr(const char *in, const char *canon)
{
	struct metrics_addr a;
	char msg[256] = "";

	if (metrics_addr_parse(in, &a, msg, sizeof(msg)) < 0)
		fail_msg("%s: %s", in, msg);
	assert_string_equal(a.text, canon);
}

static void
expect_addr_bad(const char *in, const char *why)
{
	struct metrics_addr a;
	char msg[256] = "";

	assert_int_equal(metrics_addr_parse(in, &a, msg, sizeof(msg)), -EINVAL);
	if (strstr(msg, why) == NULL)
		fail_msg("%s: \"%s\" does not say \"%s\"", in, msg, why);
}

static void
test_addr(void **state)
{
	expect_addr("9464", "127.0.0.1:9464"); /* a port alone: loopback */
	expect_addr("localhost:9464", "127.0.0.1:9464");
	expect_addr("0.0.0.0:9464", "0.0.0.0:9464");
	expect_addr("10.1.2.3:0", "10.1.2.3:0");
	expect_addr("[::1]:9464", "[::1]:9464");
	expect_addr("[::]:80", "[::]:80");
	expect_addr_bad(":9464", "no address before the port");
	expect_addr_bad("::1:9464", "in brackets");
	expect_addr_bad("[::1:9464", "[ADDRESS]:PORT");
	expect_addr_bad("prometheus.example:9464", "not a numeric IPv4 address");
	expect_addr_bad("127.0.0.1:65536", "0-65535");
	expect_addr_bad("127.0.0.1:", "0-65535");
	expect_addr_bad("99999", "not a port");
	expect_addr_bad("[zz]:1", "not an IPv6 address");
}

/* A config with a bad metrics_listen is refused as FILE:LINE: key: why. */
static void
test_config_key(void **state)
{
	char dir[] = "/tmp/vnumad-mcfg-XXXXXX", path[64], err[1024];
	struct config cfg;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.conf", dir);
	put_file(path, "# x\nmetrics_listen = :9464\nmetrics_textfile = rel.prom\n");
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: metrics_listen: \":9464\": no address before the port"));
	assert_non_null(strstr(err, ":3: metrics_textfile: \"rel.prom\" is not an absolute path"));
	put_file(path, "metrics_listen = 9464\n");
	assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.metrics_listen, "9464");
	unlink(path);
	rmdir(dir);
}

/* A simulated daemon's own view renders to a text of the same structure, every VM in it. */
static void
test_daemon_view(void **state)
{
	struct tdaemon t;
	struct metrics_view mv;
	char *text;

	tdaemon_start(&t, "default", NULL, NULL);
	tdaemon_rounds(&t, 5);
	metrics_view_collect(&t.d, &mv);
	text = tview_render(&mv);
	check_structure(text);
	assert_int_equal(mv.nr_vms, t.d.snap->nr_vms);
	for (int i = 0; i < t.d.snap->nr_vms; i++) {
		char want[SNAP_VM_NAME_MAX + 64];

		snprintf(want, sizeof(want), "vnumad_vm_locality_ratio{vm=\"%s\"} ",
		         t.d.snap->vms[i].name);
		assert_non_null(strstr(text, want));
	}
	assert_non_null(strstr(text, "vnumad_rounds_total 5\n"));
	assert_non_null(strstr(text, "vnumad_decision_duration_seconds_count 5\n"));
	metrics_view_free(&mv);
	free(text);
	tdaemon_stop(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_escape),        cmocka_unit_test(test_render_structure),
	    cmocka_unit_test(test_histogram),     cmocka_unit_test(test_render_deterministic),
	    cmocka_unit_test(test_render_no_vms), cmocka_unit_test(test_addr),
	    cmocka_unit_test(test_config_key),    cmocka_unit_test(test_daemon_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

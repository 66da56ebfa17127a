/*
 * test_topology.c - topology loading: synthetic strings, XML fixtures (with and without a
 * distance matrix), the running machine, the uniform builder, and rejected input.
 *
 * Fixtures live in $VNUMAD_SRCDIR/tests/fixtures/topology/ (see the README there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/topology.h"
#include "policy/util.h"

static void
fixture_path(char *buf, size_t len, const char *name)
{
	const char *src = getenv("VNUMAD_SRCDIR");

	snprintf(buf, len, "%s/tests/fixtures/topology/%s", src ? src : ".", name);
}

static struct topology *
load_fixture(const char *name)
{
	struct topology *topo = NULL;
	char path[4096], err[256] = "";
	int ret;

	fixture_path(path, sizeof(path), name);
	ret = topology_load_xml(path, &topo, err, sizeof(err));
	if (ret != 0)
		fail_msg("loading %s: %d %s", path, ret, err);
	assert_non_null(topo);
	return topo;
}

static struct topology *
load_synthetic(const char *desc)
{
	struct topology *topo = NULL;
	char err[256] = "";
	int ret = topology_load_synthetic(desc, &topo, err, sizeof(err));

	if (ret != 0)
		fail_msg("loading \"%s\": %d %s", desc, ret, err);
	assert_non_null(topo);
	return topo;
}

/* Invariants every topology must satisfy, whatever its shape. */
static void
check_consistent(const struct topology *topo)
{
	int mapped = 0, listed = 0;

	assert_true(topo->nr_nodes >= 1 && topo->nr_nodes <= UTIL_MAX_NODES);
	assert_true(topo->nr_cpus >= 1);
	for (int i = 0; i < topo->nr_nodes; i++) {
		const struct topology_node *node = &topo->nodes[i];

		if (i > 0)
			assert_true(node->id > topo->nodes[i - 1].id);
		assert_int_equal(topology_distance(topo, i, i), TOPOLOGY_LOCAL);
		for (int c = 0; c < node->nr_cpus; c++) {
			assert_true(node->cpus[c] >= 0 && node->cpus[c] < topo->nr_cpus);
			if (c > 0)
				assert_true(node->cpus[c] > node->cpus[c - 1]);
			assert_int_equal(topo->cpu_node[node->cpus[c]], i);
		}
		listed += node->nr_cpus;
	}
	for (int cpu = 0; cpu < topo->nr_cpus; cpu++) {
		assert_true(topo->cpu_node[cpu] >= -1 && topo->cpu_node[cpu] < topo->nr_nodes);
		mapped += topo->cpu_node[cpu] >= 0;
	}
	assert_int_equal(mapped, listed);
}

static void
check_default_distances(const struct topology *topo)
{
	assert_false(topo->has_distances);
	for (int i = 0; i < topo->nr_nodes; i++) {
		for (int j = 0; j < topo->nr_nodes; j++)
			assert_int_equal(topology_distance(topo, i, j),
			                 i == j ? TOPOLOGY_LOCAL : TOPOLOGY_REMOTE_DEFAULT);
	}
}

/* nr_nodes nodes with ids 0..n-1, CPUs numbered node by node, mem_mib each. */
static void
check_regular(const struct topology *topo, int nr_nodes, int cpus_per_node, uint64_t mem_mib)
{
	check_consistent(topo);
	assert_int_equal(topo->nr_nodes, nr_nodes);
	assert_int_equal(topo->nr_cpus, nr_nodes * cpus_per_node);
	for (int i = 0; i < nr_nodes; i++) {
		assert_int_equal(topo->nodes[i].id, i);
		assert_int_equal(topo->nodes[i].nr_cpus, cpus_per_node);
		assert_int_equal(topo->nodes[i].mem_mib, mem_mib);
		for (int c = 0; c < cpus_per_node; c++)
			assert_int_equal(topo->nodes[i].cpus[c], i * cpus_per_node + c);
	}
	for (int cpu = 0; cpu < topo->nr_cpus; cpu++)
		assert_int_equal(topo->cpu_node[cpu], cpu / cpus_per_node);
}

static void
test_synthetic_2node(void **state)
{
	struct topology *topo = load_synthetic("pack:2 [numa(memory=4GiB)] core:4 pu:1");

	check_regular(topo, 2, 4, 4096);
	check_default_distances(topo);
	topology_free(topo);
}

static void
test_synthetic_4node(void **state)
{
	struct topology *topo = load_synthetic("pack:4 [numa(memory=2GiB)] l3:1 core:2 pu:2");

	check_regular(topo, 4, 4, 2048);
	check_default_distances(topo);
	topology_free(topo);
}

static void
test_synthetic_8node(void **state)
{
	struct topology *topo = load_synthetic("pack:2 group:4 [numa(memory=1GiB)] core:3 pu:1");

	check_regular(topo, 8, 3, 1024);
	check_default_distances(topo);
	topology_free(topo);
}

/* PU indexes out of order: nodes still sorted by OS id and CPU lists ascending. */
static void
test_synthetic_shuffled_cpus(void **state)
{
	struct topology *topo =
	    load_synthetic("pack:2 [numa(memory=1GiB)] core:2 pu:1(indexes=3,1,0,2)");

	check_consistent(topo);
	assert_int_equal(topo->nr_nodes, 2);
	assert_int_equal(topo->nr_cpus, 4);
	for (int i = 0; i < 2; i++)
		assert_int_equal(topo->nodes[i].nr_cpus, 2);
	/* the first package holds PUs 3 and 1, the second 0 and 2 */
	assert_int_equal(topo->cpu_node[1], topo->cpu_node[3]);
	assert_int_equal(topo->cpu_node[0], topo->cpu_node[2]);
	assert_int_not_equal(topo->cpu_node[0], topo->cpu_node[1]);
	topology_free(topo);
}

static void
test_synthetic_bad_string(void **state)
{
	struct topology *topo = (struct topology *)&topo; /* must be reset to NULL */
	char err[256] = "";

	assert_true(topology_load_synthetic("bogus:3 pu:2", &topo, err, sizeof(err)) < 0);
	assert_null(topo);
	assert_non_null(strstr(err, "bogus:3"));

	err[0] = '\0';
	assert_int_equal(topology_load_synthetic(NULL, &topo, err, sizeof(err)), -EINVAL);
	assert_true(strlen(err) > 0);
	/* a NULL error buffer is tolerated */
	assert_true(topology_load_synthetic("pack:0", &topo, NULL, 0) < 0);
}

static void
test_synthetic_too_many_nodes(void **state)
{
	struct topology *topo = NULL;
	char err[256] = "";

	assert_int_equal(topology_load_synthetic("numa:65 pu:1", &topo, err, sizeof(err)), -EINVAL);
	assert_null(topo);
	assert_non_null(strstr(err, "65"));
	/* 64 is still fine */
	topo = load_synthetic("numa:64(memory=1GiB) pu:1");
	check_regular(topo, 64, 1, 1024);
	topology_free(topo);
}

static void
test_xml_2node_distances(void **state)
{
	struct topology *topo = load_fixture("2node-dist.xml");

	check_regular(topo, 2, 4, 4096);
	assert_true(topo->has_distances);
	assert_int_equal(topology_distance(topo, 0, 1), 21);
	assert_int_equal(topology_distance(topo, 1, 0), 21);
	topology_free(topo);
}

static void
test_xml_4node_distances(void **state)
{
	static const int want[4][4] = {
	    {10, 21, 31, 21}, {21, 10, 21, 31}, {31, 21, 10, 21}, {21, 31, 21, 10}};
	struct topology *topo = load_fixture("4node-dist.xml");

	check_regular(topo, 4, 8, 8192);
	assert_true(topo->has_distances);
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 4; j++)
			assert_int_equal(topology_distance(topo, i, j), want[i][j]);
	}
	topology_free(topo);
}

/* Asymmetric 8x8: every off-diagonal entry is distinct, so a transposed read would fail. */
static void
test_xml_8node_asymmetric(void **state)
{
	struct topology *topo = load_fixture("8node-dist.xml");

	check_regular(topo, 8, 2, 2048);
	assert_true(topo->has_distances);
	for (int i = 0; i < 8; i++) {
		for (int j = 0; j < 8; j++)
			assert_int_equal(topology_distance(topo, i, j),
			                 i == j ? 10 : 11 + i * 8 + j);
	}
	topology_free(topo);
}

/* Latencies in ns (80/120 and 130/100) become per-row ratios in tenths. */
static void
test_xml_latency_scaled(void **state)
{
	struct topology *topo = load_fixture("2node-latency.xml");

	check_regular(topo, 2, 2, 1024);
	assert_true(topo->has_distances);
	assert_int_equal(topology_distance(topo, 0, 0), 10);
	assert_int_equal(topology_distance(topo, 0, 1), 15);
	assert_int_equal(topology_distance(topo, 1, 0), 13);
	assert_int_equal(topology_distance(topo, 1, 1), 10);
	topology_free(topo);
}

/* Matrices we cannot read as latency ratios are ignored: defaults, has_distances false. */
static void
test_xml_unusable_matrices(void **state)
{
	static const char *const names[] = {"2node-hops.xml", "2node-bandwidth.xml"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct topology *topo = load_fixture(names[i]);

		check_regular(topo, 2, 2, 1024);
		check_default_distances(topo);
		topology_free(topo);
	}
}

static void
test_xml_no_distances(void **state)
{
	struct topology *topo = load_fixture("nodist.xml");

	check_regular(topo, 2, 3, 3072);
	check_default_distances(topo);
	topology_free(topo);
}

/* A machine-wide memory-only node (CXL-like) gets no CPUs; the package nodes keep theirs. */
static void
test_xml_memory_only_node(void **state)
{
	struct topology *topo = load_fixture("cxl-memonly.xml");

	check_consistent(topo);
	assert_int_equal(topo->nr_nodes, 3);
	assert_int_equal(topo->nr_cpus, 4);
	assert_int_equal(topo->nodes[0].nr_cpus, 2);
	assert_int_equal(topo->nodes[1].nr_cpus, 2);
	assert_int_equal(topo->nodes[0].mem_mib, 8192);
	assert_int_equal(topo->nodes[2].id, 2);
	assert_int_equal(topo->nodes[2].nr_cpus, 0);
	assert_int_equal(topo->nodes[2].mem_mib, 16384);
	for (int cpu = 0; cpu < 4; cpu++)
		assert_int_equal(topo->cpu_node[cpu], cpu / 2);
	check_default_distances(topo);
	topology_free(topo);
}

static void
test_xml_missing_file(void **state)
{
	struct topology *topo = NULL;
	char path[4096], err[512] = "";

	fixture_path(path, sizeof(path), "does-not-exist.xml");
	assert_true(topology_load_xml(path, &topo, err, sizeof(err)) < 0);
	assert_null(topo);
	assert_non_null(strstr(err, "does-not-exist.xml"));
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* Garbage and truncated XML are errors with a message, not crashes. */
static void
test_xml_corrupt(void **state)
{
	static const char *const bodies[] = {
	    "this is not xml\n",
	    "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\"",
	    "",
	};
	char dir[] = "/tmp/vnumad-topo-XXXXXX", path[512], err[512];

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bad.xml", dir);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct topology *topo = NULL;

		write_file(path, bodies[i]);
		err[0] = '\0';
		assert_true(topology_load_xml(path, &topo, err, sizeof(err)) < 0);
		assert_null(topo);
		assert_true(strlen(err) > 0);
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* This machine: at least one node, and every CPU we may run on belongs to a node. */
static void
test_machine(void **state)
{
	struct topology *topo = NULL;
	char err[256] = "";
	cpu_set_t set;
	uint64_t mem_mib;
	int ret = topology_load_machine(&topo, err, sizeof(err));

	if (ret != 0)
		fail_msg("topology_load_machine: %d %s", ret, err);
	check_consistent(topo);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		assert_true(cpu < topo->nr_cpus);
		assert_true(topo->cpu_node[cpu] >= 0);
	}
	mem_mib = 0;
	for (int i = 0; i < topo->nr_nodes; i++)
		mem_mib += topo->nodes[i].mem_mib;
	assert_true(mem_mib > 0);
	topology_free(topo);
}

static void
test_uniform_default(void **state)
{
	struct topology *topo = NULL;
	char err[256] = "";

	assert_int_equal(topology_new_uniform(4, 16, 65536, NULL, &topo, err, sizeof(err)), 0);
	check_regular(topo, 4, 16, 65536);
	check_default_distances(topo);
	topology_free(topo);
}

static void
test_uniform_distances(void **state)
{
	static const int dist[9] = {10, 12, 32, 13, 10, 22, 33, 23, 10};
	struct topology *topo = NULL;
	char err[256] = "";

	assert_int_equal(topology_new_uniform(3, 2, 100, dist, &topo, err, sizeof(err)), 0);
	check_regular(topo, 3, 2, 100);
	assert_true(topo->has_distances);
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++)
			assert_int_equal(topology_distance(topo, i, j), dist[i * 3 + j]);
	}
	topology_free(topo);
}

static void
test_uniform_rejects(void **state)
{
	static const int bad_diag[4] = {10, 21, 21, 11};
	static const int bad_remote[4] = {10, 9, 21, 10};
	struct topology *topo = (struct topology *)&topo;
	char err[256];

	err[0] = '\0';
	assert_int_equal(topology_new_uniform(0, 4, 1024, NULL, &topo, err, sizeof(err)), -EINVAL);
	assert_null(topo);
	assert_true(strlen(err) > 0);
	assert_int_equal(topology_new_uniform(65, 4, 1024, NULL, &topo, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "65"));
	assert_int_equal(topology_new_uniform(-1, 4, 1024, NULL, &topo, err, sizeof(err)), -EINVAL);
	assert_int_equal(topology_new_uniform(2, 0, 1024, NULL, &topo, err, sizeof(err)), -EINVAL);
	assert_int_equal(topology_new_uniform(64, 1 << 20, 1024, NULL, &topo, err, sizeof(err)),
	                 -EINVAL);
	assert_int_equal(topology_new_uniform(2, 4, 1024, bad_diag, &topo, err, sizeof(err)),
	                 -EINVAL);
	assert_int_equal(topology_new_uniform(2, 4, 1024, bad_remote, &topo, err, sizeof(err)),
	                 -EINVAL);
	assert_null(topo);
	assert_int_equal(topology_new_uniform(2, 4, 1024, NULL, NULL, err, sizeof(err)), -EINVAL);
	/* the limit itself is accepted */
	assert_int_equal(topology_new_uniform(64, 2, 1024, NULL, &topo, err, sizeof(err)), 0);
	check_regular(topo, 64, 2, 1024);
	topology_free(topo);
}

static void
test_free_null(void **state)
{
	topology_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_synthetic_2node),
	    cmocka_unit_test(test_synthetic_4node),
	    cmocka_unit_test(test_synthetic_8node),
	    cmocka_unit_test(test_synthetic_shuffled_cpus),
	    cmocka_unit_test(test_synthetic_bad_string),
	    cmocka_unit_test(test_synthetic_too_many_nodes),
	    cmocka_unit_test(test_xml_2node_distances),
	    cmocka_unit_test(test_xml_4node_distances),
	    cmocka_unit_test(test_xml_8node_asymmetric),
	    cmocka_unit_test(test_xml_latency_scaled),
	    cmocka_unit_test(test_xml_unusable_matrices),
	    cmocka_unit_test(test_xml_no_distances),
	    cmocka_unit_test(test_xml_memory_only_node),
	    cmocka_unit_test(test_xml_missing_file),
	    cmocka_unit_test(test_xml_corrupt),
	    cmocka_unit_test(test_machine),
	    cmocka_unit_test(test_uniform_default),
	    cmocka_unit_test(test_uniform_distances),
	    cmocka_unit_test(test_uniform_rejects),
	    cmocka_unit_test(test_free_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_linux_nodes_reader.c - the nodes read every round with kept files
 * (host/linux/nodes_reader.c), on a tree written by the test into a mkdtemp directory:
 * - after the first rounds a round opens no file at all, and sees a node's free memory and
 *   numa_balancing change (the kept files are read afresh);
 * - a node's CPUs are copied from the last full read until LINUX_NODES_TOPOLOGY_RECHECK_S has
 *   passed, but a node that comes online is seen at once;
 * - a malformed file fails the read as linux_nodes_read does, and the next read, the tree
 *   repaired, reads every file afresh and answers again;
 * - what it answers equals linux_nodes_read of the same tree;
 * - through hwloc: a memory-only node (CXL) and an offline CPU come out as the kernel has
 *   them, and a tree hwloc's Linux discovery cannot read is refused, not taken for this
 *   machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/fileio.h"
#include "host/linux/nodes_reader.h"
#include "linux_test_util.h"

struct tree {
	char root[64];
};

static void
tree_node(const struct tree *t, int id, const char *cpus, const char *distance,
          unsigned long free_kib)
{
	char rel[128], text[512];

	snprintf(rel, sizeof(rel), "sys/devices/system/node/node%d", id);
	snprintf(text, sizeof(text), "%s/%s", t->root, rel);
	mkdir(text, 0755);
	snprintf(rel, sizeof(rel), "sys/devices/system/node/node%d/cpulist", id);
	snprintf(text, sizeof(text), "%s\n", cpus);
	ltu_file_write(t->root, rel, text);
	snprintf(rel, sizeof(rel), "sys/devices/system/node/node%d/distance", id);
	snprintf(text, sizeof(text), "%s\n", distance);
	ltu_file_write(t->root, rel, text);
	snprintf(rel, sizeof(rel), "sys/devices/system/node/node%d/meminfo", id);
	snprintf(text, sizeof(text),
	         "Node %d MemTotal:       8388608 kB\nNode %d MemFree:        %lu kB\n", id, id,
	         free_kib);
	ltu_file_write(t->root, rel, text);
	ltu_tree_cpus_write(t->root);
}

static int
tree_setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char cmd[256];

	snprintf(t->root, sizeof(t->root), "/tmp/vnumad-nodes-XXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/sys/devices/system/node' '%s/proc/sys/kernel'",
	         t->root, t->root);
	assert_int_equal(system(cmd), 0);
	ltu_file_write(t->root, "sys/devices/system/node/online", "0\n");
	tree_node(t, 0, "0-1", "10", 4194304);
	ltu_file_write(t->root, "proc/sys/kernel/numa_balancing", "1\n");
	*state = t;
	return 0;
}

static int
tree_teardown(void **state)
{
	struct tree *t = *state;

	ltu_dir_remove(t->root);
	free(t);
	return 0;
}

/* One read at now_s into *nodes (freed first); the files it opened. */
static uint64_t
reader_read(struct linux_nodes_reader *r, const struct tree *t, double now_s,
            struct linux_nodes *nodes)
{
	uint64_t before = ltu_opens_now();

	linux_nodes_free(nodes);
	assert_int_equal(linux_nodes_reader_read(r, t->root, now_s, nodes), 0);
	return ltu_opens_now() - before;
}

/* a and b hold the same nodes, CPUs, distances and free memory. */
static void
nodes_equal(const struct linux_nodes *a, const struct linux_nodes *b)
{
	assert_int_equal(a->nr_nodes, b->nr_nodes);
	for (int i = 0; i < a->nr_nodes; i++) {
		assert_int_equal(a->nodes[i].id, b->nodes[i].id);
		assert_int_equal(a->nodes[i].nr_cpus, b->nodes[i].nr_cpus);
		for (int c = 0; c < a->nodes[i].nr_cpus; c++)
			assert_int_equal(a->nodes[i].cpus[c], b->nodes[i].cpus[c]);
		assert_int_equal(a->nodes[i].nr_distances, b->nodes[i].nr_distances);
		for (int d = 0; d < a->nodes[i].nr_distances; d++)
			assert_int_equal(a->nodes[i].distance[d], b->nodes[i].distance[d]);
		assert_int_equal(a->nodes[i].mem.mem_free_kib, b->nodes[i].mem.mem_free_kib);
		assert_int_equal(a->nodes[i].mem.mem_total_kib, b->nodes[i].mem.mem_total_kib);
	}
}

static void
test_kept_files(void **state)
{
	struct tree *t = *state;
	struct linux_nodes_reader *r = linux_nodes_reader_new();
	struct linux_nodes nodes = {0}, direct = {0};
	int mode = -1;

	/* online to keep, then online and node0's meminfo as linux_nodes_read (hwloc reads the
	 * CPUs and distances on its own, not counted here); then node0's meminfo to keep; then
	 * nothing */
	assert_int_equal(reader_read(r, t, 0, &nodes), 3);
	assert_int_equal(reader_read(r, t, 1, &nodes), 1);
	assert_int_equal(reader_read(r, t, 2, &nodes), 0);
	assert_int_equal(linux_nodes_reader_fds(r), 2);
	assert_int_equal(nodes.nodes[0].mem.mem_free_kib, 4194304);
	tree_node(t, 0, "0-1", "10", 1048576);
	assert_int_equal(reader_read(r, t, 3, &nodes), 0);
	assert_int_equal(nodes.nodes[0].mem.mem_free_kib, 1048576);
	assert_int_equal(linux_nodes_read(t->root, &direct), 0);
	nodes_equal(&nodes, &direct);

	assert_int_equal(linux_nodes_reader_balancing(r, t->root, &mode), 0);
	assert_int_equal(mode, 1);
	ltu_file_write(t->root, "proc/sys/kernel/numa_balancing", "0\n");
	{
		uint64_t before = ltu_opens_now();

		assert_int_equal(linux_nodes_reader_balancing(r, t->root, &mode), 0);
		assert_int_equal(ltu_opens_now() - before, 0);
	}
	assert_int_equal(mode, 0);
	linux_nodes_free(&nodes);
	linux_nodes_free(&direct);
	linux_nodes_reader_free(r);
}

static void
test_topology_recheck(void **state)
{
	struct tree *t = *state;
	struct linux_nodes_reader *r = linux_nodes_reader_new();
	struct linux_nodes nodes = {0}, direct = {0};

	reader_read(r, t, 100, &nodes);
	tree_node(t, 0, "0", "10", 4194304); /* CPU 1 offline */
	reader_read(r, t, 100 + LINUX_NODES_TOPOLOGY_RECHECK_S - 1, &nodes);
	assert_int_equal(nodes.nodes[0].nr_cpus, 2); /* not read yet */
	reader_read(r, t, 100 + LINUX_NODES_TOPOLOGY_RECHECK_S, &nodes);
	assert_int_equal(nodes.nodes[0].nr_cpus, 1);

	/* a node comes online: seen at once */
	tree_node(t, 0, "0", "10 20", 4194304);
	tree_node(t, 1, "1", "20 10", 2097152);
	ltu_file_write(t->root, "sys/devices/system/node/online", "0-1\n");
	reader_read(r, t, 100 + LINUX_NODES_TOPOLOGY_RECHECK_S + 1, &nodes);
	assert_int_equal(nodes.nr_nodes, 2);
	assert_int_equal(nodes.nodes[1].mem.mem_free_kib, 2097152);
	assert_int_equal(linux_nodes_read(t->root, &direct), 0);
	nodes_equal(&nodes, &direct);
	linux_nodes_free(&nodes);
	linux_nodes_free(&direct);
	linux_nodes_reader_free(r);
}

static void
test_malformed_then_repaired(void **state)
{
	struct tree *t = *state;
	struct linux_nodes_reader *r = linux_nodes_reader_new();
	struct linux_nodes nodes = {0};

	reader_read(r, t, 0, &nodes);
	reader_read(r, t, 1, &nodes);
	linux_nodes_free(&nodes);
	ltu_file_write(t->root, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 1");
	assert_int_equal(linux_nodes_reader_read(r, t->root, 2, &nodes), -EINVAL);
	assert_int_equal(nodes.nr_nodes, 0);
	assert_null(nodes.nodes);
	assert_int_equal(linux_nodes_reader_fds(r), 0); /* dropped: read afresh next time */
	tree_node(t, 0, "0-1", "10", 3000000);
	assert_int_equal(reader_read(r, t, 3, &nodes), 3);
	assert_int_equal(nodes.nodes[0].mem.mem_free_kib, 3000000);
	/* a node that goes missing under a kept online list */
	ltu_file_write(t->root, "sys/devices/system/node/online", "0-1\n");
	linux_nodes_free(&nodes);
	assert_true(linux_nodes_reader_read(r, t->root, 4, &nodes) < 0);
	linux_nodes_reader_free(r);
}

static void
test_memory_only_node_offline_cpu(void **state)
{
	struct tree *t = *state;
	struct linux_nodes nodes = {0};

	/* CPU 1 offline (in no node's cpulist), node 2 memory only, further than node 1 */
	tree_node(t, 0, "0", "10 21 30", 4194304);
	tree_node(t, 1, "2-3", "21 10 30", 2097152);
	tree_node(t, 2, "", "30 30 10", 8388608);
	ltu_file_write(t->root, "sys/devices/system/node/online", "0-2\n");
	ltu_tree_cpus_write(t->root);
	assert_int_equal(linux_nodes_read(t->root, &nodes), 0);
	assert_int_equal(nodes.nr_nodes, 3);
	assert_int_equal(nodes.nodes[0].nr_cpus, 1);
	assert_int_equal(nodes.nodes[0].cpus[0], 0);
	assert_int_equal(nodes.nodes[1].nr_cpus, 2);
	assert_int_equal(nodes.nodes[1].cpus[1], 3);
	assert_int_equal(nodes.nodes[2].id, 2);
	assert_int_equal(nodes.nodes[2].nr_cpus, 0);
	assert_null(nodes.nodes[2].cpus);
	assert_int_equal(nodes.nodes[2].nr_distances, 3);
	assert_int_equal(nodes.nodes[0].distance[2], 30);
	assert_int_equal(nodes.nodes[2].distance[1], 30);
	assert_int_equal(nodes.nodes[2].distance[2], 10);
	assert_int_equal(nodes.nodes[2].mem.mem_free_kib, 8388608);
	linux_nodes_free(&nodes);
}

static void
test_no_cpu_topology_refused(void **state)
{
	struct tree *t = *state;
	struct linux_nodes nodes = {0};
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/sys/devices/system/cpu'", t->root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(linux_nodes_read(t->root, &nodes), -ENODEV);
	assert_int_equal(nodes.nr_nodes, 0);
	assert_null(nodes.nodes);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_kept_files, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_topology_recheck, tree_setup, tree_teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_then_repaired, tree_setup,
	                                    tree_teardown),
	    cmocka_unit_test_setup_teardown(test_memory_only_node_offline_cpu, tree_setup,
	                                    tree_teardown),
	    cmocka_unit_test_setup_teardown(test_no_cpu_topology_refused, tree_setup,
	                                    tree_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

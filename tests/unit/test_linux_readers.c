/*
 * test_linux_readers.c - the procfs/sysfs readers of host/linux/ on captured trees
 * (tests/fixtures/linux/, see the README there): exact values from the good trees (1node is
 * a capture of a real 1-node machine, 2node-6.1 of Debian's 6.1 kernel with 2 emulated nodes,
 * 2node and 4node are written by hand in the kernel's formats), errors and no crash on the
 * malformed, truncated, overflowing and empty ones, -ENOENT for a process that went away, the
 * running machine's own files, and a seeded mutation loop over every parser (seed printed; set
 * VNUMAD_TEST_SEED to replay one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/fileio.h"
#include "host/linux/procfs.h"
#include "host/linux/sysfs.h"
#include "policy/util.h"

#define KIB          1024ull
#define MUTATE_ITERS 2000 /* mutated inputs per (parser, fixture) pair */
#define MUTATE_SEED  20240605ull

static const char *
root_of(const char *tree)
{
	static char buf[4096];
	const char *src = getenv("VNUMAD_SRCDIR");

	snprintf(buf, sizeof(buf), "%s/tests/fixtures/linux/%s", src ? src : ".", tree);
	return buf;
}

/* A fixture file's bytes, exactly len of them (no NUL after), so ASan sees any over-read. */
static char *
fixture_load(const char *tree, const char *rel, size_t *len)
{
	char path[4096], *data, *exact;
	int ret;

	snprintf(path, sizeof(path), "%s%s", root_of(tree), rel);
	if ((ret = fileio_read(path, 1 << 22, &data, len)) < 0)
		fail_msg("reading %s: %s", path, strerror(-ret));
	exact = xmalloc(*len);
	memcpy(exact, data, *len);
	free(data);
	return exact;
}

static void
assert_ids(const int *ids, int nr, const int *want, int nr_want)
{
	assert_int_equal(nr, nr_want);
	for (int i = 0; i < nr; i++)
		assert_int_equal(ids[i], want[i]);
}

/* ---- sysfs nodes --------------------------------------------------------------------- */

static void
test_nodes_1node(void **state)
{
	struct linux_nodes n;
	const int cpus[] = {0, 1}, dist[] = {10};

	assert_int_equal(linux_nodes_read(root_of("1node"), &n), 0);
	assert_int_equal(n.nr_nodes, 1);
	assert_int_equal(n.nodes[0].id, 0);
	assert_ids(n.nodes[0].cpus, n.nodes[0].nr_cpus, cpus, 2);
	assert_ids(n.nodes[0].distance, n.nodes[0].nr_distances, dist, 1);
	assert_int_equal(n.nodes[0].mem.mem_total_kib, 4417748);
	assert_int_equal(n.nodes[0].mem.mem_free_kib, 3935944);
	assert_int_equal(n.nodes[0].mem.file_pages_kib, 308604);
	assert_int_equal(n.nodes[0].mem.inactive_file_kib, 136652);
	linux_nodes_free(&n);
}

static void
test_nodes_2node(void **state)
{
	struct linux_nodes n;
	const int cpus0[] = {0, 1}, cpus1[] = {2, 3}, d0[] = {10, 21}, d1[] = {21, 10};
	const struct linux_meminfo *m1;

	assert_int_equal(linux_nodes_read(root_of("2node"), &n), 0);
	assert_int_equal(n.nr_nodes, 2);
	assert_int_equal(n.nodes[1].id, 1);
	assert_ids(n.nodes[0].cpus, n.nodes[0].nr_cpus, cpus0, 2);
	assert_ids(n.nodes[1].cpus, n.nodes[1].nr_cpus, cpus1, 2);
	assert_ids(n.nodes[0].distance, n.nodes[0].nr_distances, d0, 2);
	assert_ids(n.nodes[1].distance, n.nodes[1].nr_distances, d1, 2);
	assert_int_equal(n.nodes[0].mem.mem_total_kib, 1015424);
	assert_int_equal(n.nodes[0].mem.mem_free_kib, 612340);
	assert_int_equal(n.nodes[0].mem.active_file_kib, 60000);
	assert_int_equal(n.nodes[0].mem.anon_huge_pages_kib, 20480);
	m1 = &n.nodes[1].mem;
	assert_int_equal(m1->mem_used_kib, 332192);
	assert_int_equal(m1->file_pages_kib, 70000);
	assert_int_equal(m1->inactive_file_kib, 25000);
	assert_int_equal(m1->shmem_kib, 4000);
	assert_int_equal(m1->hugepages_total, 64);
	assert_int_equal(m1->hugepages_free, 32);
	assert_int_equal(m1->present, (1u << LINUX_MEMINFO_NR_KEYS) - 1);
	linux_nodes_free(&n);
}

static void
test_nodes_4node(void **state)
{
	static const int dist[4][4] = {
	    {10, 21, 31, 21}, {21, 10, 21, 31}, {31, 21, 10, 21}, {21, 31, 21, 10}};
	struct linux_nodes n;

	assert_int_equal(linux_nodes_read(root_of("4node"), &n), 0);
	assert_int_equal(n.nr_nodes, 4);
	for (int i = 0; i < 4; i++) {
		const int cpus[] = {2 * i, 2 * i + 1, 2 * i + 8, 2 * i + 9};

		assert_int_equal(n.nodes[i].id, i);
		assert_ids(n.nodes[i].cpus, n.nodes[i].nr_cpus, cpus, 4);
		assert_ids(n.nodes[i].distance, n.nodes[i].nr_distances, dist[i], 4);
		assert_int_equal(n.nodes[i].mem.mem_total_kib, 4194304ull * (unsigned)(i + 1));
		assert_int_equal(n.nodes[i].mem.inactive_file_kib, 500ull * (unsigned)(i + 1));
	}
	linux_nodes_free(&n);
}

static void
test_idlist_parse(void **state)
{
	static const struct {
		const char *text;
		int limit, ret, nr;
	} cases[] = {
	    {"", LINUX_MAX_CPUS, 0, 0},
	    {"\n", LINUX_MAX_CPUS, 0, 0},
	    {"0-3,8-11\n", LINUX_MAX_CPUS, 0, 8},
	    {"7", LINUX_MAX_CPUS, 0, 1},
	    {"65535", LINUX_MAX_CPUS, 0, 1},
	    {"65536", LINUX_MAX_CPUS, -EFBIG, 0},
	    {"0-1024", LINUX_MAX_NODES, -EFBIG, 0},
	    {"1,0", LINUX_MAX_CPUS, 0, 2},   /* any order, as bitmap_parselist */
	    {"0-3,3", LINUX_MAX_CPUS, 0, 4}, /* overlaps count once */
	    {"3-1", LINUX_MAX_CPUS, -EINVAL, 0},
	    {"0-", LINUX_MAX_CPUS, -EINVAL, 0},
	    {",0", LINUX_MAX_CPUS, -EINVAL, 0},
	    {"0,", LINUX_MAX_CPUS, -EINVAL, 0},
	    {"0 1", LINUX_MAX_CPUS, -EINVAL, 0},
	    {"0-7:2", LINUX_MAX_CPUS, -EINVAL, 0},
	    {"99999999999999999999", 10, -EFBIG, 0}, /* above the limit, not wrapped */
	    {"0-3,^1", LINUX_MAX_CPUS, -EINVAL, 0},  /* no libvirt exclusions here */
	};
	const int want[] = {0, 1, 2, 3, 8, 9, 10, 11};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int *ids = (int *)&ids, nr = -1;
		int ret = linux_idlist_parse(cases[i].text, strlen(cases[i].text), cases[i].limit,
		                             &ids, &nr);

		print_message("idlist \"%s\" -> %d\n", cases[i].text, ret);
		assert_int_equal(ret, cases[i].ret);
		assert_int_equal(nr, cases[i].nr);
		if (i == 2)
			assert_ids(ids, nr, want, 8);
		if (nr == 0)
			assert_null(ids);
		free(ids);
	}
}

/* ---- /proc/vmstat and numa_balancing --------------------------------------------------- */

static void
test_vmstat(void **state)
{
	struct linux_vmstat v;
	const char partial[] = "nr_free_pages 12\nnuma_hit 5\nnuma_local 4\n";

	assert_int_equal(linux_vmstat_read(root_of("2node"), &v), 0);
	assert_int_equal(v.numa_hit, 1234567);
	assert_int_equal(v.numa_miss, 2345);
	assert_int_equal(v.numa_foreign, 2345);
	assert_int_equal(v.numa_interleave, 678);
	assert_int_equal(v.numa_local, 1230000);
	assert_int_equal(v.numa_other, 6912);
	assert_int_equal(v.numa_pte_updates, 81234);
	assert_int_equal(v.numa_huge_pte_updates, 12);
	assert_int_equal(v.numa_hint_faults, 70312);
	assert_int_equal(v.numa_hint_faults_local, 52011);
	assert_int_equal(v.numa_pages_migrated, 9120);
	assert_int_equal(v.pgmigrate_success, 9400);
	assert_int_equal(v.pgmigrate_fail, 17);
	assert_int_equal(v.present, (1u << LINUX_VMSTAT_NR_KEYS) - 1);
	assert_int_equal(linux_vmstat_read(root_of("4node"), &v), 0);
	assert_true(v.numa_hint_faults == UINT64_MAX);
	assert_int_equal(v.numa_hit, 9000000000000ull);
	assert_int_equal(linux_vmstat_read(root_of("1node"), &v), 0);
	assert_int_equal(v.numa_hit, 56658209);
	/* Missing keys read 0 and are absent from present. */
	assert_int_equal(linux_vmstat_parse(partial, strlen(partial), &v), 0);
	assert_int_equal(v.numa_hit, 5);
	assert_int_equal(v.numa_miss, 0);
	assert_int_equal(v.present,
	                 (1u << LINUX_VMSTAT_NUMA_HIT) | (1u << LINUX_VMSTAT_NUMA_LOCAL));
}

static void
test_numa_balancing(void **state)
{
	int mode = -1;

	assert_int_equal(linux_numa_balancing_read(root_of("1node"), &mode), 0);
	assert_int_equal(mode, 0);
	assert_int_equal(linux_numa_balancing_read(root_of("2node"), &mode), 0);
	assert_int_equal(mode, LINUX_NUMA_BALANCING_NORMAL);
	assert_int_equal(linux_numa_balancing_read(root_of("4node"), &mode), 0);
	assert_int_equal(mode, LINUX_NUMA_BALANCING_NORMAL | LINUX_NUMA_BALANCING_MEMORY_TIERING);
	assert_int_equal(linux_numa_balancing_parse("4\n", 2, &mode), -EINVAL);
	assert_int_equal(linux_numa_balancing_parse("-1", 2, &mode), -EINVAL);
}

/* ---- numa_maps ------------------------------------------------------------------------- */

static void
assert_policy(const struct linux_numa_maps *m, size_t i, enum linux_mpol_mode mode,
              unsigned int flags, const int *nodes, int nr)
{
	const struct linux_numa_map *map = &m->maps[i];

	assert_int_equal(map->mode, mode);
	assert_int_equal(map->mode_flags, flags);
	assert_ids(m->policy_nodes + map->policy_first, map->nr_policy_nodes, nodes, nr);
}

/* Invariants of any parsed numa_maps; returns the sum of node_bytes. */
static uint64_t
numa_maps_check(const struct linux_numa_maps *m)
{
	uint64_t sum = 0;
	size_t entries = 0;

	assert_true(m->nr_node_bytes <= LINUX_MAX_NODES);
	for (int n = 0; n < m->nr_node_bytes; n++)
		sum += m->node_bytes[n];
	assert_true(sum == m->total_bytes);
	for (size_t i = 0; i < m->nr_maps; i++) {
		const struct linux_numa_map *map = &m->maps[i];
		uint64_t pages = 0;

		assert_true(map->node_first == entries);
		for (int k = 0; k < map->nr_nodes; k++) {
			assert_true(m->node_pages[entries + (size_t)k].node < m->nr_node_bytes);
			pages += m->node_pages[entries + (size_t)k].pages;
		}
		assert_true(pages == map->pages);
		assert_true(map->policy_first + (size_t)map->nr_policy_nodes <= m->nr_policy_nodes);
		assert_true((map->kind == LINUX_MAP_FILE) == (map->file != NULL));
		entries += (size_t)map->nr_nodes;
	}
	assert_true(entries == m->nr_node_pages);
	return sum;
}

static void
test_numa_maps_2node(void **state)
{
	const uint64_t n0 =
	    (1024 + 200 + 3000 + 131072 + 20000 + 256 + 2 + 33) * 4 * KIB + 32 * 2048 * KIB;
	const uint64_t n1 = (100 + 1096 + 80000 + 256 + 10 + 1) * 4 * KIB + 32 * 2048 * KIB;
	const int zero[] = {0}, one[] = {1}, both[] = {0, 1};
	struct linux_numa_maps m;

	assert_int_equal(linux_numa_maps_read(root_of("2node"), 4242, &m), 0);
	assert_int_equal(m.nr_maps, 12);
	numa_maps_check(&m);
	assert_int_equal(m.nr_node_bytes, 2);
	assert_int_equal(m.node_bytes[0], n0);
	assert_int_equal(m.node_bytes[1], n1);
	assert_int_equal(m.maps[0].start, 0x555555554000ull);
	assert_string_equal(m.maps[0].file, "/usr/bin/qemu-system-x86_64");
	assert_int_equal(m.maps[0].mapped, 1024);
	assert_int_equal(m.maps[0].mapmax, 2);
	assert_int_equal(m.maps[2].kind, LINUX_MAP_HEAP);
	assert_int_equal(m.maps[2].active, 1000);
	assert_int_equal(m.maps[2].pages, 4096);
	assert_policy(&m, 3, LINUX_MPOL_BIND, 0, zero, 1);
	assert_string_equal(m.maps[3].file, "/memfd:ram-node0 (deleted)");
	assert_int_equal(m.maps[3].dirty, 131072);
	assert_int_equal(m.maps[4].swapcache, 3);
	assert_policy(&m, 5, LINUX_MPOL_INTERLEAVE, 0, both, 2);
	assert_policy(&m, 6, LINUX_MPOL_PREFERRED, 0, one, 1);
	assert_policy(&m, 7, LINUX_MPOL_LOCAL, 0, NULL, 0);
	assert_true(m.maps[8].huge);
	assert_int_equal(m.maps[8].kernelpagesize_kib, 2048);
	assert_int_equal(m.maps[8].nr_nodes, 2);
	assert_policy(&m, 9, LINUX_MPOL_BIND, LINUX_MPOL_F_STATIC, both, 2);
	assert_int_equal(m.maps[9].writeback, 1);
	assert_int_equal(m.maps[10].kind, LINUX_MAP_STACK);
	assert_int_equal(m.maps[11].start, 0x7ffd00100000ull);
	assert_int_equal(m.maps[11].kind, LINUX_MAP_ANON);
	assert_int_equal(m.maps[11].nr_nodes, 0);
	assert_int_equal(m.maps[11].kernelpagesize_kib, 0);
	linux_numa_maps_free(&m);
}

static void
test_numa_maps_4node(void **state)
{
	const int n01[] = {0, 1}, all[] = {0, 1, 2, 3}, n23[] = {2, 3}, n0[] = {0}, n1[] = {1};
	struct linux_numa_maps m;

	assert_int_equal(linux_numa_maps_read(root_of("4node"), 5000, &m), 0);
	assert_int_equal(m.nr_maps, 8);
	numa_maps_check(&m);
	assert_int_equal(m.maps[0].start, 0x400000);
	assert_policy(&m, 1, LINUX_MPOL_PREFERRED_MANY, 0, n01, 2);
	assert_policy(&m, 2, LINUX_MPOL_WEIGHTED_INTERLEAVE, 0, all, 4);
	assert_int_equal(m.maps[2].nr_nodes, 4);
	assert_policy(&m, 3, LINUX_MPOL_BIND, LINUX_MPOL_F_RELATIVE | LINUX_MPOL_F_BALANCING, n23,
	              2);
	assert_policy(&m, 4, LINUX_MPOL_BIND, LINUX_MPOL_F_STATIC | LINUX_MPOL_F_BALANCING, n0, 1);
	assert_string_equal(m.maps[5].file, "/var/lib/app data/x=y");
	assert_int_equal(m.maps[5].mapmax, 3);
	assert_int_equal(m.maps[5].active, 2);
	assert_policy(&m, 6, LINUX_MPOL_UNKNOWN, 0, n1, 1);
	assert_int_equal(m.maps[6].anon, 3);
	assert_true(m.maps[7].huge);
	assert_int_equal(m.nr_node_bytes, 4);
	assert_int_equal(m.node_bytes[0], (10 + 600 + 1000 + 1) * 4 * KIB);
	assert_int_equal(m.node_bytes[1], (400 + 1000 + 3) * 4 * KIB);
	assert_int_equal(m.node_bytes[2], (1000 + 150) * 4 * KIB + 2 * 1048576 * KIB);
	assert_int_equal(m.node_bytes[3], (1000 + 50 + 7) * 4 * KIB);
	linux_numa_maps_free(&m);
}

static void
test_numa_maps_1node(void **state)
{
	struct linux_numa_maps m;

	assert_int_equal(linux_numa_maps_read(root_of("1node"), 3001, &m), 0);
	assert_int_equal(m.nr_maps, 36);
	assert_true(numa_maps_check(&m) > 0);
	assert_int_equal(m.nr_node_bytes, 1);
	assert_int_equal(m.maps[0].mode, LINUX_MPOL_DEFAULT);
	linux_numa_maps_free(&m);
}

/* ---- sched ----------------------------------------------------------------------------- */

static void
assert_faults(const struct linux_sched_faults *f, int node, uint64_t tp, uint64_t ts, uint64_t gp,
              uint64_t gs)
{
	assert_int_equal(f->node, node);
	assert_int_equal(f->task_private, tp);
	assert_int_equal(f->task_shared, ts);
	assert_int_equal(f->group_private, gp);
	assert_int_equal(f->group_shared, gs);
}

static void
test_sched_2node(void **state)
{
	struct linux_sched s;

	assert_int_equal(linux_sched_read(root_of("2node"), 4242, 4250, &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 123456789012ull);
	assert_int_equal(s.nr_migrations, 57);
	assert_int_equal(s.numa_scan_seq, 14);
	assert_int_equal(s.numa_pages_migrated, 2048);
	assert_int_equal(s.numa_preferred_nid, 0);
	assert_int_equal(s.total_numa_faults, 1400);
	assert_int_equal(s.current_node, 0);
	assert_int_equal(s.numa_group_id, 4250);
	assert_int_equal(s.present, LINUX_SCHED_HAS_NUMA | LINUX_SCHED_HAS_NODE);
	assert_int_equal(s.nr_faults, 2);
	assert_faults(&s.faults[0], 0, 900, 100, 1500, 300);
	assert_faults(&s.faults[1], 1, 300, 100, 700, 200);
	linux_sched_free(&s);
	assert_int_equal(linux_sched_read(root_of("2node"), 4242, 4251, &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 98000000000ull);
	assert_int_equal(s.numa_preferred_nid, 1);
	assert_int_equal(s.current_node, 1);
	assert_faults(&s.faults[1], 1, 1100, 80, 700, 200);
	linux_sched_free(&s);
	assert_int_equal(linux_sched_read(root_of("2node"), 4242, 4242, &s), 0);
	assert_int_equal(s.numa_preferred_nid, -1);
	assert_int_equal(s.numa_group_id, 0);
	linux_sched_free(&s);
}

static void
test_sched_4node_and_real(void **state)
{
	struct linux_sched s;

	assert_int_equal(linux_sched_read(root_of("4node"), 5000, 5001, &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 1000000000ull);
	assert_int_equal(s.nr_faults, 4);
	assert_int_equal(s.total_numa_faults, 990);
	assert_faults(&s.faults[0], 0, 800, 10, 0, 0);
	assert_faults(&s.faults[3], 3, 30, 0, 0, 0);
	linux_sched_free(&s);
	/* comm "x) (y z)" in the header. */
	assert_int_equal(linux_sched_read(root_of("4node"), 5000, 5004, &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 4000000003ull);
	assert_int_equal(s.current_node, 3);
	linux_sched_free(&s);
	assert_int_equal(linux_sched_read(root_of("1node"), 3001, 3001, &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 2738027);
	assert_int_equal(s.nr_faults, 1);
	assert_int_equal(s.numa_preferred_nid, -1);
	linux_sched_free(&s);
}

static void
test_sched_edge_cases(void **state)
{
	/* A comm holding a newline and dashes cannot fake the header's end or a key line. */
	const char fake[] = "a\n----- (1, #threads: 1)\n" /* comm "a\n-----" */
	                    "-------------------------------------------------------------------\n"
	                    "se.sum_exec_runtime   :   5.000001\n"
	                    "some.future_key       :   whatever\n"
	                    "numa_faults_memory, 0, 1, 2\n" /* an older kernel's line: skipped */
	                    "\n";
	const char no_runtime[] =
	    "x (1, #threads: 1)\n"
	    "-------------------------------------------------------------------\n"
	    "se.nr_migrations : 1\n";
	const char disorder[] =
	    "x (1, #threads: 1)\n"
	    "-------------------------------------------------------------------\n"
	    "se.sum_exec_runtime : 1.000000\n"
	    "numa_faults node=1 task_private=1 task_shared=0 group_private=0 "
	    "group_shared=0\n"
	    "numa_faults node=0 task_private=1 task_shared=0 group_private=0 "
	    "group_shared=0\n";
	struct linux_sched s;

	assert_int_equal(linux_sched_parse(fake, strlen(fake), &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 5000001);
	assert_int_equal(s.present, 0);
	assert_int_equal(s.nr_faults, 0);
	linux_sched_free(&s);
	assert_int_equal(linux_sched_parse(no_runtime, strlen(no_runtime), &s), -EINVAL);
	assert_int_equal(linux_sched_parse(disorder, strlen(disorder), &s), -EINVAL);
	assert_null(s.faults);
}

/* ---- stat, status, comm, cmdline ------------------------------------------------------- */

static void
test_task_stat(void **state)
{
	struct linux_task_stat st;

	assert_int_equal(linux_task_stat_read(root_of("2node"), 4242, 4250, &st), 0);
	assert_int_equal(st.tid, 4250);
	assert_string_equal(st.comm, "CPU 0/KVM");
	assert_int_equal(st.state, 'R');
	assert_int_equal(st.utime_ticks, 98765);
	assert_int_equal(st.stime_ticks, 4321);
	assert_int_equal(st.num_threads, 4);
	assert_int_equal(st.starttime_ticks, 123456);
	assert_int_equal(st.processor, 1);
	assert_int_equal(linux_task_stat_read(root_of("4node"), 5000, 5004, &st), 0);
	assert_string_equal(st.comm, "x) (y z)");
	assert_int_equal(st.state, 'I');
	assert_int_equal(st.processor, 14);
	assert_int_equal(linux_task_stat_read(root_of("1node"), 3001, 3001, &st), 0);
	assert_string_equal(st.comm, "sleep");
	assert_int_equal(st.starttime_ticks, 535615);
	assert_int_equal(st.processor, 0);
}

static void
test_task_status_comm_cmdline(void **state)
{
	struct linux_task_status ts;
	struct linux_cmdline cl;
	char comm[LINUX_COMM_MAX];
	const int cpus[] = {2, 3, 10, 11}, mems[] = {1};

	assert_int_equal(linux_task_status_read(root_of("4node"), 5000, 5002, &ts), 0);
	assert_int_equal(ts.tgid, 5000);
	assert_int_equal(ts.pid, 5002);
	assert_ids(ts.cpus_allowed, ts.nr_cpus_allowed, cpus, 4);
	assert_true(ts.has_mems_allowed);
	assert_ids(ts.mems_allowed, ts.nr_mems_allowed, mems, 1);
	linux_task_status_free(&ts);
	/* VmPin: memory pinned for a device (VFIO) or io_uring; absent is 0, garbage refused */
	{
		static const char pinned[] = "Tgid:\t7\nPid:\t8\nVmPin:\t    2048 kB\n"
		                             "Cpus_allowed_list:\t0-1\n";
		static const char bad[] = "Tgid:\t7\nPid:\t8\nVmPin:\t2048 pages\n"
		                          "Cpus_allowed_list:\t0-1\n";

		assert_int_equal(linux_task_status_parse(pinned, sizeof(pinned) - 1, &ts), 0);
		assert_int_equal(ts.vm_pin_kib, 2048);
		linux_task_status_free(&ts);
		assert_int_equal(linux_task_status_parse(bad, sizeof(bad) - 1, &ts), -EINVAL);
		assert_int_equal(linux_task_status_read(root_of("1node"), 3001, 3001, &ts), 0);
		assert_int_equal(ts.vm_pin_kib, 0); /* "VmPin:\t       0 kB" */
		linux_task_status_free(&ts);
	}
	assert_int_equal(linux_comm_read(root_of("2node"), 4242, 4251, comm), 0);
	assert_string_equal(comm, "CPU 1/KVM");
	assert_int_equal(linux_cmdline_read(root_of("2node"), 4242, &cl), 0);
	assert_int_equal(cl.argc, 11);
	assert_string_equal(cl.argv[0], "/usr/bin/qemu-system-x86_64");
	assert_string_equal(cl.argv[2], "guest=vm1,debug-threads=on");
	assert_string_equal(cl.argv[10], "node,nodeid=1,cpus=1,memdev=ram-node1");
	assert_null(cl.argv[11]);
	linux_cmdline_free(&cl);
	/* An empty cmdline (kernel thread) and one whose last argument lost its NUL. */
	assert_int_equal(linux_cmdline_parse("", 0, &cl), 0);
	assert_int_equal(cl.argc, 0);
	assert_null(cl.argv[0]);
	linux_cmdline_free(&cl);
	assert_int_equal(linux_cmdline_parse("a\0\0bc", 5, &cl), 0);
	assert_int_equal(cl.argc, 3);
	assert_string_equal(cl.argv[1], "");
	assert_string_equal(cl.argv[2], "bc");
	linux_cmdline_free(&cl);
}

/* ---- a capture from Debian's 6.1 kernel with 2 emulated nodes -------------------------- */

/*
 * tests/system/numa-host.sh ran touch_mem -m 64 under numactl --balancing --membind=1
 * --cpunodebind=0 (pid 137) and under --interleave=0-1 (pid 150), kernel.numa_balancing=1.
 */
static void
test_real_6_1(void **state)
{
	const char *root = root_of("2node-6.1");
	const int one[] = {1}, both[] = {0, 1};
	struct linux_numa_maps m;
	struct linux_sched s;
	struct linux_task_stat st;
	struct linux_vmstat v;
	struct linux_nodes n;

	assert_int_equal(linux_nodes_read(root, &n), 0);
	assert_int_equal(n.nr_nodes, 2);
	assert_int_equal(n.nodes[1].distance[0], 21);
	assert_int_equal(n.nodes[1].cpus[0], 2);
	linux_nodes_free(&n);
	assert_int_equal(linux_vmstat_read(root, &v), 0);
	assert_int_equal(v.numa_hint_faults, 2738);
	assert_int_equal(v.numa_huge_pte_updates, 155);
	assert_int_equal(v.numa_pages_migrated, 15);
	assert_int_equal(linux_numa_maps_read(root, 137, &m), 0);
	assert_int_equal(m.nr_maps, 22);
	numa_maps_check(&m);
	assert_policy(&m, 0, LINUX_MPOL_BIND, LINUX_MPOL_F_BALANCING, one, 1);
	assert_string_equal(m.maps[0].file, "/usr/local/bin/touch_mem");
	assert_int_equal(m.maps[6].anon, 16386); /* the 64 MiB block, all on node 1 */
	assert_int_equal(m.node_bytes[0], 300 * 4 * KIB);
	assert_int_equal(m.node_bytes[1], 16412 * 4 * KIB);
	linux_numa_maps_free(&m);
	assert_int_equal(linux_numa_maps_read(root, 150, &m), 0);
	assert_policy(&m, 6, LINUX_MPOL_INTERLEAVE, 0, both, 2);
	assert_int_equal(m.node_pages[m.maps[6].node_first].pages, 769);
	linux_numa_maps_free(&m);
	assert_int_equal(linux_sched_read(root, 137, 137, &s), 0);
	assert_int_equal(s.sum_exec_runtime_ns, 14951035558ull);
	assert_int_equal(s.numa_scan_seq, 3);
	assert_int_equal(s.numa_preferred_nid, 1);
	assert_int_equal(s.total_numa_faults, 24576);
	assert_int_equal(s.current_node, 0);
	assert_int_equal(s.nr_faults, 2);
	assert_faults(&s.faults[1], 1, 24576, 0, 0, 0);
	linux_sched_free(&s);
	assert_int_equal(linux_task_stat_read(root, 150, 150, &st), 0);
	assert_int_equal(st.utime_ticks, 1274);
	assert_int_equal(st.stime_ticks, 327);
	assert_int_equal(st.processor, 3);
}

/* ---- broken trees, vanished processes, the running machine --------------------------- */

/* Every reader on one tree (pid 4242, tid 4250, nodes 0-1), with the result expected. */
struct bad_expect {
	const char *tree;
	int nodes, cpulist, meminfo, vmstat, balancing, numa_maps, sched, stat, status, comm,
	    cmdline;
};

static int
bad_parse_node_file(const char *tree, const char *file)
{
	char rel[128], *buf;
	struct linux_meminfo mem;
	size_t len;
	int *ids = NULL, nr, ret;

	snprintf(rel, sizeof(rel), "/sys/devices/system/node/node0/%s", file);
	buf = fixture_load(tree, rel, &len);
	if (strcmp(file, "cpulist") == 0)
		ret = linux_idlist_parse(buf, len, LINUX_MAX_CPUS, &ids, &nr);
	else
		ret = linux_meminfo_parse(buf, len, 0, &mem);
	free(ids);
	free(buf);
	return ret;
}

static void
bad_tree_check(const struct bad_expect *e)
{
	const char *root = root_of(e->tree);
	struct linux_nodes nodes;
	struct linux_vmstat vm;
	struct linux_numa_maps maps;
	struct linux_sched sched;
	struct linux_task_stat st;
	struct linux_task_status ts;
	struct linux_cmdline cl;
	char comm[LINUX_COMM_MAX];
	int mode;

	print_message("tree %s\n", e->tree);
	assert_int_equal(linux_nodes_read(root, &nodes), e->nodes);
	assert_int_equal(nodes.nr_nodes, 0);
	assert_int_equal(bad_parse_node_file(e->tree, "cpulist"), e->cpulist);
	assert_int_equal(bad_parse_node_file(e->tree, "meminfo"), e->meminfo);
	assert_int_equal(linux_vmstat_read(root, &vm), e->vmstat);
	assert_int_equal(linux_numa_balancing_read(root, &mode), e->balancing);
	assert_int_equal(linux_numa_maps_read(root, 4242, &maps), e->numa_maps);
	linux_numa_maps_free(&maps);
	assert_int_equal(linux_sched_read(root, 4242, 4250, &sched), e->sched);
	linux_sched_free(&sched);
	assert_int_equal(linux_task_stat_read(root, 4242, 4250, &st), e->stat);
	assert_int_equal(linux_task_status_read(root, 4242, 4250, &ts), e->status);
	linux_task_status_free(&ts);
	assert_int_equal(linux_comm_read(root, 4242, 4250, comm), e->comm);
	assert_int_equal(linux_cmdline_read(root, 4242, &cl), e->cmdline);
	linux_cmdline_free(&cl);
}

static void
test_bad_trees(void **state)
{
	const int I = -EINVAL, B = -EFBIG;
	const struct bad_expect cases[] = {
	    /* tree, nodes, cpulist, meminfo, vmstat, balancing, numa_maps, sched, stat,
	       status, comm, cmdline */
	    {"bad-truncated", I, I, I, I, I, I, I, I, I, 0, 0},
	    {"bad-garbage", I, I, I, I, I, I, I, I, I, I, 0},
	    {"bad-overflow", B, B, I, I, I, I, I, I, B, B, B},
	    {"bad-empty", I, 0, I, I, I, 0, I, I, I, 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad_tree_check(&cases[i]);
}

static void
test_topology_changes(void **state)
{
	struct linux_nodes n;

	assert_int_equal(linux_nodes_read(root_of("bad-missing-node"), &n), -ENOENT);
	assert_int_equal(linux_nodes_read(root_of("bad-distance-rows"), &n), -EINVAL);
	assert_int_equal(n.nr_nodes, 0);
	assert_null(n.nodes);
}

static void
test_vanished(void **state)
{
	const char *root = root_of("2node");
	struct linux_numa_maps maps;
	struct linux_sched sched;
	struct linux_task_stat st;
	struct linux_task_status ts;
	struct linux_cmdline cl;
	struct linux_nodes nodes;
	char comm[LINUX_COMM_MAX];

	assert_int_equal(linux_numa_maps_read(root, 9999, &maps), -ENOENT);
	assert_int_equal(linux_cmdline_read(root, 9999, &cl), -ENOENT);
	/* The process is there, the thread is gone. */
	assert_int_equal(linux_sched_read(root, 4242, 9999, &sched), -ENOENT);
	assert_int_equal(linux_task_stat_read(root, 4242, 9999, &st), -ENOENT);
	assert_int_equal(linux_task_status_read(root, 4242, 9999, &ts), -ENOENT);
	assert_int_equal(linux_comm_read(root, 4242, 9999, comm), -ENOENT);
	assert_int_equal(linux_nodes_read(root_of("no-such-tree"), &nodes), -ENOENT);
}

/* This process's own files, in the running kernel's format ("/" and NULL are the real root). */
static void
test_running_machine(void **state)
{
	struct linux_numa_maps maps;
	struct linux_task_stat st;
	struct linux_task_status ts;
	struct linux_cmdline cl;
	struct linux_nodes nodes;
	struct linux_sched sched;
	int pid = getpid(), tid = (int)gettid(), ret;

	ret = linux_numa_maps_read("/", pid, &maps);
	if (ret != -ENOENT) { /* kernels without CONFIG_NUMA */
		assert_int_equal(ret, 0);
		assert_true(maps.nr_maps > 0);
		numa_maps_check(&maps);
		linux_numa_maps_free(&maps);
	}
	assert_int_equal(linux_task_stat_read(NULL, pid, tid, &st), 0);
	assert_int_equal(st.tid, tid);
	assert_int_equal(linux_task_status_read(NULL, pid, tid, &ts), 0);
	assert_int_equal(ts.tgid, pid);
	assert_true(ts.nr_cpus_allowed >= 1);
	linux_task_status_free(&ts);
	assert_int_equal(linux_cmdline_read(NULL, pid, &cl), 0);
	assert_true(cl.argc >= 1 && strstr(cl.argv[0], "test_linux_readers") != NULL);
	linux_cmdline_free(&cl);
	ret = linux_nodes_read(NULL, &nodes);
	if (ret != -ENOENT) { /* a container without /sys/devices/system/node */
		assert_int_equal(ret, 0);
		assert_true(nodes.nr_nodes >= 1);
		linux_nodes_free(&nodes);
	}
	ret = linux_sched_read(NULL, pid, tid, &sched);
	if (ret != -ENOENT) { /* kernels without CONFIG_SCHED_DEBUG before 6.15 */
		assert_int_equal(ret, 0);
		linux_sched_free(&sched);
	}
}

/* ---- seeded mutation loop -------------------------------------------------------------- */

/* Each wrapper parses, checks the output's invariants, frees; returns the parser's code. */
static int
try_numa_maps(const char *b, size_t n)
{
	struct linux_numa_maps m;
	int ret = linux_numa_maps_parse(b, n, &m);

	if (ret == 0)
		numa_maps_check(&m);
	linux_numa_maps_free(&m);
	return ret;
}

static int
try_sched(const char *b, size_t n)
{
	struct linux_sched s;
	int ret = linux_sched_parse(b, n, &s);

	for (int i = 0; ret == 0 && i < s.nr_faults; i++)
		assert_true(s.faults[i].node < LINUX_MAX_NODES &&
		            (i == 0 || s.faults[i].node > s.faults[i - 1].node));
	linux_sched_free(&s);
	return ret;
}

static int
try_meminfo(const char *b, size_t n)
{
	struct linux_meminfo m;
	int ret = linux_meminfo_parse(b, n, 0, &m);

	assert_true(ret < 0 || m.mem_free_kib <= m.mem_total_kib);
	return ret;
}

static int
try_idlist(const char *b, size_t n)
{
	int *ids, nr, ret = linux_idlist_parse(b, n, LINUX_MAX_CPUS, &ids, &nr);

	for (int i = 0; i < nr; i++)
		assert_true(ids[i] >= 0 && ids[i] < LINUX_MAX_CPUS &&
		            (i == 0 || ids[i] > ids[i - 1]));
	free(ids);
	return ret;
}

static int
try_vmstat(const char *b, size_t n)
{
	struct linux_vmstat v;

	return linux_vmstat_parse(b, n, &v);
}

static int
try_stat(const char *b, size_t n)
{
	struct linux_task_stat st;
	int ret = linux_task_stat_parse(b, n, &st);

	assert_true(strlen(st.comm) < LINUX_COMM_MAX);
	return ret;
}

static int
try_status(const char *b, size_t n)
{
	struct linux_task_status ts;
	int ret = linux_task_status_parse(b, n, &ts);

	linux_task_status_free(&ts);
	return ret;
}

static int
try_small(const char *b, size_t n)
{
	struct linux_cmdline cl;
	char comm[LINUX_COMM_MAX];
	int mode, r1 = linux_comm_parse(b, n, comm), r2 = linux_cmdline_parse(b, n, &cl);

	linux_cmdline_free(&cl);
	assert_true(r1 == 0 || r1 == -EINVAL || r1 == -EFBIG);
	assert_true(r2 == 0 || r2 == -EFBIG);
	return linux_numa_balancing_parse(b, n, &mode);
}

/* One random edit of buf[0..*len) in place (cap bytes available). */
static void
mutate_once(struct util_rng *rng, char *buf, size_t *len, size_t cap)
{
	static const char interesting[] = "\n\0 -:,=.9()N";
	size_t n = *len, at = n ? util_rng_below(rng, (uint32_t)n) : 0, span;

	switch (util_rng_below(rng, 6)) {
	case 0: /* truncate */
		*len = at;
		break;
	case 1: /* random byte */
		if (n)
			buf[at] = (char)util_rng_below(rng, 256);
		break;
	case 2: /* a byte parsers care about */
		if (n)
			buf[at] = interesting[util_rng_below(rng, sizeof(interesting) - 1)];
		break;
	case 3: /* delete a span */
		span = util_rng_below(rng, 64);
		span = span < n - at ? span : n - at;
		memmove(buf + at, buf + at + span, n - at - span);
		*len = n - span;
		break;
	case 4: /* a long run of digits (overflow) */
		span = 8 + util_rng_below(rng, 24);
		if (n + span <= cap) {
			memmove(buf + at + span, buf + at, n - at);
			for (size_t i = 0; i < span; i++)
				buf[at + i] = (char)('0' + util_rng_below(rng, 10));
			*len = n + span;
		}
		break;
	default: /* duplicate a span */
		span = util_rng_below(rng, 128);
		span = span < n - at ? span : n - at;
		if (n + span <= cap) {
			memmove(buf + at + span, buf + at, n - at);
			*len = n + span;
		}
		break;
	}
}

struct mutate_case {
	int (*parse)(const char *b, size_t n);
	const char *tree;
	const char *rel;
};

static void
mutate_run(const struct mutate_case *c, uint64_t seed, uint64_t stream)
{
	size_t orig_len, cap, len;
	char *orig = fixture_load(c->tree, c->rel, &orig_len);
	struct util_rng rng;
	int ok = 0;

	cap = 2 * orig_len + 256;
	util_rng_seed(&rng, seed, stream);
	for (int it = 0; it < MUTATE_ITERS; it++) {
		char *work = xmalloc(cap), *exact;
		int ret, edits = 1 + (int)util_rng_below(&rng, 3);

		memcpy(work, orig, orig_len);
		len = orig_len;
		for (int e = 0; e < edits; e++)
			mutate_once(&rng, work, &len, cap);
		exact = xmalloc(len); /* exactly len bytes: ASan catches any over-read */
		memcpy(exact, work, len);
		ret = c->parse(exact, len);
		assert_true(ret == 0 || ret == -EINVAL || ret == -EFBIG);
		ok += ret == 0;
		free(exact);
		free(work);
	}
	print_message("  %-9s %-45s %4d/%d still parse\n", c->tree, c->rel, ok, MUTATE_ITERS);
	assert_int_equal(c->parse(orig, orig_len), 0); /* the unmutated text parses */
	free(orig);
}

static void
test_mutations(void **state)
{
	const char *env = getenv("VNUMAD_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : MUTATE_SEED;
	const struct mutate_case cases[] = {
	    {try_numa_maps, "2node", "/proc/4242/numa_maps"},
	    {try_numa_maps, "4node", "/proc/5000/numa_maps"},
	    {try_numa_maps, "1node", "/proc/3001/numa_maps"},
	    {try_sched, "2node", "/proc/4242/task/4250/sched"},
	    {try_sched, "4node", "/proc/5000/task/5001/sched"},
	    {try_sched, "1node", "/proc/3001/task/3001/sched"},
	    {try_numa_maps, "2node-6.1", "/proc/137/numa_maps"},
	    {try_sched, "2node-6.1", "/proc/137/task/137/sched"},
	    {try_meminfo, "2node-6.1", "/sys/devices/system/node/node0/meminfo"},
	    {try_meminfo, "2node", "/sys/devices/system/node/node0/meminfo"},
	    {try_meminfo, "1node", "/sys/devices/system/node/node0/meminfo"},
	    {try_idlist, "4node", "/sys/devices/system/node/node1/cpulist"},
	    {try_vmstat, "2node", "/proc/vmstat"},
	    {try_stat, "4node", "/proc/5000/task/5004/stat"},
	    {try_stat, "1node", "/proc/3001/task/3001/stat"},
	    {try_status, "2node", "/proc/4242/task/4250/status"},
	    {try_small, "4node", "/proc/sys/kernel/numa_balancing"},
	};

	print_message("mutation seed %llu (set VNUMAD_TEST_SEED to replay)\n",
	              (unsigned long long)seed);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		mutate_run(&cases[i], seed, i);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodes_1node),
	    cmocka_unit_test(test_nodes_2node),
	    cmocka_unit_test(test_nodes_4node),
	    cmocka_unit_test(test_idlist_parse),
	    cmocka_unit_test(test_vmstat),
	    cmocka_unit_test(test_numa_balancing),
	    cmocka_unit_test(test_numa_maps_2node),
	    cmocka_unit_test(test_numa_maps_4node),
	    cmocka_unit_test(test_numa_maps_1node),
	    cmocka_unit_test(test_sched_2node),
	    cmocka_unit_test(test_sched_4node_and_real),
	    cmocka_unit_test(test_sched_edge_cases),
	    cmocka_unit_test(test_task_stat),
	    cmocka_unit_test(test_task_status_comm_cmdline),
	    cmocka_unit_test(test_real_6_1),
	    cmocka_unit_test(test_bad_trees),
	    cmocka_unit_test(test_topology_changes),
	    cmocka_unit_test(test_vanished),
	    cmocka_unit_test(test_running_machine),
	    cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_linux_qemu_numa.c - guest vNUMA cells from QEMU's command line (host/linux/qemu_numa.c):
 * - the command lines of tests/fixtures/qemu-numa (see the README there): libvirt 9's JSON
 *   -object, key=value -object, legacy mem=, repeated cpus=, implicit nodeids, and the broken
 *   ones (truncated, overlapping, not adding up, not modelled), each with its reason;
 * - QEMU's size syntax and the corner cases of the checks, inline;
 * - discovery and snapshot on a tree made of tests/fixtures/linux/qemu-2node with a -numa
 *   command line: cells by nodeid, each vCPU's cell by its own index, a vCPU in no cell;
 * - on this machine, a vnuma-load VM with --workload cells: discovery reads its cells and finds
 *   each one's RAM mapping (host/linux/ram_layout.c) where vnuma-load put it, one per cell,
 *   mapped one after the other as QEMU maps its memory backends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/host.h"
#include "host/linux/discover.h"
#include "host/linux/qemu_numa.h"
#include "host/linux/ram_layout.h"
#include "host/linux/snapshot.h"
#include "linux_test_util.h"

#define MIB ((uint64_t)1 << 20)
/* Most arguments in one fixture command line. */
#define ARGS_MAX 256
/* Longest wait for the test's vnuma-load VM to show up, seconds (a bound, not a target). */
#define WAIT_MAX_S 30

struct args {
	int argc;
	char *argv[ARGS_MAX + 1];
	char *text;
};

/* tests/fixtures/qemu-numa/NAME: one argument per line. */
static void
args_load(struct args *a, const char *name)
{
	char rel[256];
	FILE *f;
	long len;
	char *line;

	snprintf(rel, sizeof(rel), "tests/fixtures/qemu-numa/%s", name);
	f = fopen(ltu_src_path(rel), "r");
	if (f == NULL)
		fail_msg("cannot open %s", ltu_src_path(rel));
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	a->text = calloc((size_t)len + 1, 1);
	assert_non_null(a->text);
	assert_int_equal(fread(a->text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	a->argc = 0;
	for (line = strtok(a->text, "\n"); line != NULL && a->argc < ARGS_MAX;
	     line = strtok(NULL, "\n"))
		a->argv[a->argc++] = line;
	a->argv[a->argc] = NULL;
}

static int
parse_fixture(const char *name, struct linux_qemu_numa *n)
{
	struct args a;
	int ret;

	args_load(&a, name);
	ret = linux_qemu_numa_parse(a.argc, a.argv, n);
	free(a.text);
	return ret;
}

static void
assert_cell(const struct linux_qemu_numa *n, int c, int nodeid, uint64_t start_mib, uint64_t mib)
{
	assert_true(c < n->nr_cells);
	assert_int_equal(n->cells[c].nodeid, nodeid);
	assert_int_equal(n->cells[c].start_bytes, start_mib * MIB);
	assert_int_equal(n->cells[c].size_bytes, mib * MIB);
}

/* The parse fails, leaves no cells, and says why. */
static void
assert_no_cells(int ret, struct linux_qemu_numa *n, const char *why)
{
	assert_int_equal(ret, -EINVAL);
	assert_int_equal(n->nr_cells, 0);
	assert_null(n->cells);
	if (strstr(n->error, why) == NULL)
		fail_msg("error '%s' does not mention '%s'", n->error, why);
	linux_qemu_numa_free(n);
}

/* ---- fixtures ------------------------------------------------------------------------------ */

static void
test_libvirt9_json(void **state)
{
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(parse_fixture("libvirt9-json.args", &n), 0);
	assert_string_equal(n.error, "");
	assert_int_equal(n.nr_cells, 2);
	assert_cell(&n, 0, 0, 0, 512);
	assert_cell(&n, 1, 1, 512, 1536);
	assert_int_equal(n.ram_bytes, 2048 * MIB);
	/* repeated cpus=: vCPUs 0 and 2 in node 0, 1 and 3 in node 1 */
	assert_int_equal(linux_qemu_numa_cell_of(&n, 0), 0);
	assert_int_equal(linux_qemu_numa_cell_of(&n, 1), 1);
	assert_int_equal(linux_qemu_numa_cell_of(&n, 2), 0);
	assert_int_equal(linux_qemu_numa_cell_of(&n, 3), 1);
	assert_int_equal(linux_qemu_numa_cell_of(&n, 4), -1);
	linux_qemu_numa_free(&n);
}

static void
test_keyvalue(void **state)
{
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(parse_fixture("keyvalue.args", &n), 0);
	assert_int_equal(n.nr_cells, 2);
	/* node 1 came first on the command line; cells are in nodeid order */
	assert_cell(&n, 0, 0, 0, 512);
	assert_cell(&n, 1, 1, 512, 1536); /* size=0x60000000 */
	assert_int_equal(linux_qemu_numa_cell_of(&n, 1), 0);
	assert_int_equal(linux_qemu_numa_cell_of(&n, 2), 1);
	linux_qemu_numa_free(&n);
}

static void
test_legacy_mem_and_implicit_nodeid(void **state)
{
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(parse_fixture("legacy-mem.args", &n), 0);
	assert_int_equal(n.nr_cells, 2);
	assert_cell(&n, 0, 0, 0, 1024); /* mem=1024: MiB */
	assert_cell(&n, 1, 1, 1024, 2048);
	assert_int_equal(linux_qemu_numa_cell_of(&n, 3), 1);
	linux_qemu_numa_free(&n);

	assert_int_equal(parse_fixture("implicit-nodeid.args", &n), 0);
	assert_int_equal(n.nr_cells, 2);
	assert_cell(&n, 0, 0, 0, 512);
	assert_cell(&n, 1, 1, 512, 1024);
	assert_int_equal(n.ram_bytes, 1536 * MIB); /* -m 1.5G */
	linux_qemu_numa_free(&n);
}

static void
test_broken_fixtures(void **state)
{
	static const struct {
		const char *file, *why;
	} cases[] = {
	    {"bad-truncated-json.args",
	     "memdev=ram-node1: no memory-backend-ram/file/memfd object with that id"},
	    {"bad-truncated-numa.args", "cpus=2- is not N or N-M"},
	    {"bad-overlap.args", "vCPU 2 is in nodes 0 and 1"},
	    {"bad-sum.args", "the cells hold 2048.0 MiB but -m is 4096.0 MiB"},
	    {"bad-mixed.args", "mem= and memdev= mixed"},
	    {"bad-no-cpus.args", "no cpus="},
	    {"bad-numa-cpu.args", "-numa cpu"},
	    {"bad-dup-nodeid.args", "nodeid=0 given twice"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct linux_qemu_numa n;

		print_message("%s\n", cases[i].file);
		assert_no_cells(parse_fixture(cases[i].file, &n), &n, cases[i].why);
	}
}

/* ---- inline cases ---------------------------------------------------------------------------- */

static void
test_size_parse(void **state)
{
	static const struct {
		const char *s;
		uint64_t unit, want;
	} good[] = {
	    {"268435456", 1, 256 * MIB},   {"256M", 1, 256 * MIB},
	    {"256m", 1, 256 * MIB},        {"1G", 1, 1024 * MIB},
	    {"1.5G", 1, 1536 * MIB},       {"2097152k", 1, 2048 * MIB},
	    {"1T", 1, 1024 * 1024 * MIB},  {"4096B", 1, 4096},
	    {"0x40000000", 1, 1024 * MIB}, {"1024", MIB, 1024 * MIB}, /* -m and mem= */
	    {"0.5", MIB, MIB / 2},         {"0", 1, 0},
	};
	static const char *const bad[] = {
	    "",    "G",         "-1", "1x",    "1 G", "1GB", "1.",
	    ".5G", "1.5",       "0x", "0x10G", "1e3", "+5",  "99999999999999999999",
	    "16E", "20000000T",
	};
	uint64_t b;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		b = 1;
		if (linux_qemu_size_parse(good[i].s, good[i].unit, &b) != 0 || b != good[i].want)
			fail_msg("'%s' (unit %llu) -> %llu, want %llu", good[i].s,
			         (unsigned long long)good[i].unit, (unsigned long long)b,
			         (unsigned long long)good[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (linux_qemu_size_parse(bad[i], 1, &b) != -EINVAL)
			fail_msg("size '%s' was accepted", bad[i]);
}

static void
test_no_cells_given(void **state)
{
	struct linux_qemu_numa n;

	(void)state;
	/* no -numa at all, only other kinds, or an option cut off at the end: no cells, no error */
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "4G", "-object",
	                                     "memory-backend-memfd,id=ram0,size=4G", NULL),
	                 0);
	assert_int_equal(n.nr_cells, 0);
	assert_string_equal(n.error, "");
	linux_qemu_numa_free(&n);
	assert_int_equal(ltu_numa_parse_list(&n, "-numa", "dist,src=0,dst=1,val=21", "-numa", NULL),
	                 0);
	assert_int_equal(n.nr_cells, 0);
	assert_string_equal(n.error, "");
	linux_qemu_numa_free(&n);
	assert_int_equal(linux_qemu_numa_parse(0, NULL, &n), 0);
	assert_int_equal(n.nr_cells, 0);
	linux_qemu_numa_free(&n);
	/* a flag without a value does not swallow the option after it */
	assert_int_equal(ltu_numa_parse_list(&n, "-S", "-numa", "node,cpus=0,mem=64", NULL), 0);
	assert_int_equal(n.nr_cells, 1);
	assert_int_equal(n.ram_bytes, 64 * MIB); /* no -m: the cells' total */
	linux_qemu_numa_free(&n);
}

/* The backend of QEMU's one RAM block: -m as QEMU reads and rounds it, or the one named. */
static void
test_ram_block(void **state)
{
	static const struct {
		const char *m;
		uint64_t bytes;
	} sizes[] = {
	    {"4G", 4096 * MIB},
	    {"1024", 1024 * MIB}, /* no suffix: MiB */
	    {"size=2G,slots=4,maxmem=8G", 2048 * MIB},
	    {"size=2097152k", 2048 * MIB}, /* libvirt's form */
	    {"1.5G", 1536 * MIB},
	    {"131076k", 128 * MIB + 8192}, /* 128 MiB + 4 KiB, rounded up to 8 KiB */
	};
	struct linux_qemu_numa n;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(ltu_numa_parse_list(&n, "-m", sizes[i].m, NULL), 0);
		assert_int_equal(n.ram_block, 0);
		assert_int_equal(n.nr_backends, 1);
		assert_string_equal(n.backends[0].id, "");
		assert_int_equal(n.backends[0].kind, LINUX_QEMU_BACKEND_RAM);
		if (n.backends[0].size_bytes != sizes[i].bytes)
			fail_msg("-m %s: %llu bytes", sizes[i].m,
			         (unsigned long long)n.backends[0].size_bytes);
		linux_qemu_numa_free(&n);
	}
	/* QEMU's own, on -mem-path, after the backends of -object (created before it) */
	assert_int_equal(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=d0,size=1G",
	                                     "--mem-path", "/dev/hugepages", "-m", "2G", NULL),
	                 0);
	assert_int_equal(n.nr_backends, 2);
	assert_int_equal(n.ram_block, 1);
	assert_int_equal(n.backends[1].kind, LINUX_QEMU_BACKEND_FILE);
	assert_string_equal(n.backends[1].mem_path, "/dev/hugepages");
	linux_qemu_numa_free(&n);
	/* named by -machine memory-backend= (later -machine options win), or -M */
	assert_int_equal(ltu_numa_parse_list(&n, "-machine", "q35,memory-backend=x", "-object",
	                                     "memory-backend-memfd,id=pc.ram,size=1G", "-machine",
	                                     "memory-backend=pc.ram", "-m", "1G", NULL),
	                 0);
	assert_int_equal(n.nr_backends, 1);
	assert_int_equal(n.ram_block, 0);
	linux_qemu_numa_free(&n);
	assert_int_equal(ltu_numa_parse_list(&n, "-M", "pc,memory-backend=nope", "-m", "1G", NULL),
	                 0);
	assert_int_equal(n.ram_block, -1);
	assert_string_equal(n.ram_block_error,
	                    "-machine memory-backend=nope names no one memory backend with a size");
	linux_qemu_numa_free(&n);
	/* -numa memdev= cells (even malformed ones): QEMU makes no RAM block of its own */
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "1G", "-object",
	                                     "memory-backend-ram,id=a,size=1G", "-numa",
	                                     "node,nodeid=0,cpus=0,memdev=a", NULL),
	                 0);
	assert_int_equal(n.ram_block, -1);
	assert_string_equal(n.ram_block_error, "");
	linux_qemu_numa_free(&n);
	assert_int_equal(
	    ltu_numa_parse_list(&n, "-m", "1G", "-numa", "node,nodeid=x,memdev=a", NULL), -EINVAL);
	assert_int_equal(n.ram_block, -1);
	linux_qemu_numa_free(&n);
	/* no -m, or -m 0 (the machine's default size, not known here) */
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "0", NULL), 0);
	assert_int_equal(n.ram_block, -1);
	assert_string_equal(n.ram_block_error, "no -m or memory backend matched");
	linux_qemu_numa_free(&n);
}

static void
test_memdev_errors(void **state)
{
	struct linux_qemu_numa n;

	(void)state;
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=0,memdev=nope", NULL), &n,
	                "memdev=nope: no memory-backend");
	assert_no_cells(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=a,size=1G",
	                                    "-object", "memory-backend-ram,id=a,size=1G", "-numa",
	                                    "node,cpus=0,memdev=a", NULL),
	                &n, "more than one");
	assert_no_cells(ltu_numa_parse_list(
	                    &n, "-object",
	                    "{\"qom-type\":\"memory-backend-ram\",\"id\":\"a\",\"size\":\"1G\"}",
	                    "-numa", "node,cpus=0,memdev=a", NULL),
	                &n, "size= is missing or not a size");
	assert_no_cells(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=a,size=lots",
	                                    "-numa", "node,cpus=0,memdev=a", NULL),
	                &n, "size= is missing or not a size");
	/* an object of another type with that id is no memory backend */
	assert_no_cells(ltu_numa_parse_list(&n, "-object", "iothread,id=a", "-numa",
	                                    "node,cpus=0,memdev=a", NULL),
	                &n, "no memory-backend");
	assert_no_cells(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=a,size=1G",
	                                    "-numa", "node,cpus=0,memdev=a", "-numa", "node,cpus=1",
	                                    NULL),
	                &n, "memdev= on some nodes only");
	assert_no_cells(
	    ltu_numa_parse_list(&n, "-numa", "node,cpus=0", "-numa", "node,cpus=1", NULL), &n,
	    "no mem= or memdev=");
}

static void
test_node_errors(void **state)
{
	struct linux_qemu_numa n;
	char many[64][32];
	char *argv[2 + 2 * 64];

	(void)state;
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=0,mem=1G", "-numa",
	                                    "node,mem=1G", "-m", "2G", NULL),
	                &n, "node 1 has no vCPUs");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=0,mem=1G", "-numa",
	                                    "node,cpus=1,mem=0", NULL),
	                &n, "node 1 has less than 1 MiB");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,nodeid=128,cpus=0,mem=1G", NULL), &n,
	                "nodeid=128");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,nodeid=x,cpus=0,mem=1G", NULL), &n,
	                "nodeid=x");
	assert_no_cells(
	    ltu_numa_parse_list(&n, "-numa", "node,nodeid=0,nodeid=1,cpus=0,mem=1G", NULL), &n,
	    "nodeid=1");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=3-1,mem=1G", NULL), &n,
	                "cpus=3-1");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=a,mem=1G", NULL), &n, "cpus=a");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=0:2,mem=1G", NULL), &n,
	                "cpus=0:2");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=0,mem=1G,mem=2G", NULL), &n,
	                "mem=2G is not one size");
	assert_no_cells(ltu_numa_parse_list(&n, "-numa", "node,cpus=0,mem=1G", "-m", "lots", NULL),
	                &n, "-m lots is not a size");
	/* the same vCPU twice in one node is harmless */
	assert_int_equal(ltu_numa_parse_list(&n, "-numa", "node,cpus=0-1,cpus=1,mem=1G", NULL), 0);
	assert_int_equal(n.nr_cells, 1);
	linux_qemu_numa_free(&n);
	/* more nodes than QEMU allows */
	argv[0] = "qemu-system-x86_64";
	for (int i = 0; i < 64; i++) {
		snprintf(many[i], sizeof(many[i]), "node,cpus=%d,mem=1", i);
		argv[1 + 2 * i] = "-numa";
		argv[2 + 2 * i] = many[i];
	}
	assert_int_equal(linux_qemu_numa_parse(129, argv, &n), 0);
	assert_int_equal(n.nr_cells, 64);
	linux_qemu_numa_free(&n);
}

static void
test_too_many(void **state)
{
	struct linux_qemu_numa n;
	struct args big;
	char *arg;
	size_t len = 0, cap = (LINUX_QEMU_ITEMS_MAX + 2) * 12 + 64;
	int nodes = LINUX_QEMU_CELLS_MAX + 1;
	char **argv = calloc((size_t)(2 * nodes + 2), sizeof(char *));
	char(*vals)[32] = calloc((size_t)nodes, sizeof(*vals));

	(void)state;
	/* more cpus= ranges than LINUX_QEMU_ITEMS_MAX in one node */
	arg = malloc(cap);
	assert_non_null(arg);
	len = (size_t)snprintf(arg, cap, "node,mem=1G");
	for (int i = 0; i <= LINUX_QEMU_ITEMS_MAX; i++)
		len += (size_t)snprintf(arg + len, cap - len, ",cpus=%d", 2 * i);
	big.argc = 3;
	big.argv[0] = "qemu-system-x86_64";
	big.argv[1] = "-numa";
	big.argv[2] = arg;
	big.argv[3] = NULL;
	assert_no_cells(linux_qemu_numa_parse(big.argc, big.argv, &n), &n, "cpus= ranges");
	free(arg);
	/* more nodes than LINUX_QEMU_CELLS_MAX */
	argv[0] = "qemu-system-x86_64";
	for (int i = 0; i < nodes; i++) {
		snprintf(vals[i], sizeof(vals[i]), "node,cpus=%d,mem=1", i);
		argv[1 + 2 * i] = "-numa";
		argv[2 + 2 * i] = vals[i];
	}
	assert_no_cells(linux_qemu_numa_parse(1 + 2 * nodes, argv, &n), &n, "-numa node options");
	free(argv);
	free(vals);
}

/* ---- discovery and snapshot on a fixture tree ------------------------------------------------ */

struct tree {
	char root[256];
	char path[512];
};

static void
tree_path(struct tree *t, const char *rel)
{
	snprintf(t->path, sizeof(t->path), "%s/%s", t->root, rel);
}

/*
 * A root whose sys and pid 5300 (threads "CPU 0/TCG" and "CPU 2/TCG") are those of
 * tests/fixtures/linux/qemu-2node, with the command line of fixture args_name.
 */
static void
tree_make(struct tree *t, const char *args_name)
{
	static const char *const links[] = {"sys",         "proc/sys",       "proc/uptime",
	                                    "proc/vmstat", "proc/5300/task", "proc/5300/numa_maps"};
	const char *tmp = getenv("TMPDIR");
	char target[4096];
	struct args a;
	FILE *f;

	snprintf(t->root, sizeof(t->root), "%s/test_qemu_numa.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(t->root));
	tree_path(t, "proc");
	assert_int_equal(mkdir(t->path, 0755), 0);
	tree_path(t, "proc/5300");
	assert_int_equal(mkdir(t->path, 0755), 0);
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "tests/fixtures/linux/qemu-2node/%s", links[i]);
		snprintf(target, sizeof(target), "%s", ltu_src_path(rel));
		tree_path(t, links[i]);
		assert_int_equal(symlink(target, t->path), 0);
	}
	args_load(&a, args_name);
	tree_path(t, "proc/5300/cmdline");
	assert_non_null(f = fopen(t->path, "w"));
	for (int i = 0; i < a.argc; i++)
		fwrite(a.argv[i], 1, strlen(a.argv[i]) + 1, f);
	fclose(f);
	free(a.text);
}

static void
tree_remove(struct tree *t)
{
	static const char *const files[] = {"sys",
	                                    "proc/sys",
	                                    "proc/uptime",
	                                    "proc/vmstat",
	                                    "proc/5300/task",
	                                    "proc/5300/numa_maps",
	                                    "proc/5300/cmdline",
	                                    "proc/5300",
	                                    "proc"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		tree_path(t, files[i]);
		if (unlink(t->path) != 0)
			rmdir(t->path);
	}
	rmdir(t->root);
}

static const struct linux_vm *
vm_of_pid(const struct linux_vm *vms, size_t nr, int pid)
{
	for (size_t i = 0; i < nr; i++)
		if (vms[i].pid == pid)
			return &vms[i];
	return NULL;
}

/*
 * The linux host on tree t: after a snapshot, its description holds what, and its note on the
 * VM (pid 5300) holds note.  A move of 64 MiB of the VM is refused: -EOPNOTSUPP when its
 * cells' RAM was not located (unlocated), and then the next snapshot reports the 64 MiB as
 * failed, so the engine backs off; else -EROFS (a tree is never acted on), and none failed.
 */
static void
host_of_tree(struct tree *t, const char *what, const char *note, bool unlocated)
{
	struct host *h;
	struct snapshot *snap;
	char err[256];

	assert_int_equal(host_linux_open(t->root, 100, &h, err, sizeof(err)), 0);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	if (strstr(h->ops->describe(h), what) == NULL)
		fail_msg("\"%s\" not in \"%s\"", what, h->ops->describe(h));
	if (strstr(h->ops->vm_note(h, 5300), note) == NULL)
		fail_msg("\"%s\" not in \"%s\"", note, h->ops->vm_note(h, 5300));
	assert_string_equal(h->ops->vm_note(h, 4242), ""); /* no such VM */
	assert_int_equal(snap->vms[0].mig_failed_mib, 0);
	snapshot_free(snap);
	assert_int_equal(h->ops->move_memory(h, 5300, 0, 0, 0, 1, 64),
	                 unlocated ? -EOPNOTSUPP : -EROFS);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_int_equal(snap->vms[0].mig_failed_mib, unlocated ? 64 : 0);
	assert_int_equal(snap->vms[0].mig_pending_mib, 0);
	snapshot_free(snap);
	/* reported once */
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_int_equal(snap->vms[0].mig_failed_mib, 0);
	snapshot_free(snap);
	h->ops->close(h);
}

static void
test_discover_tree(void **state)
{
	struct tree t;
	struct linux_vm *vms;
	const struct linux_vm *vm;
	struct snapshot *snap;
	size_t nr;

	(void)state;
	tree_make(&t, "keyvalue.args");
	assert_int_equal(linux_vms_discover(t.root, &vms, &nr), 0);
	assert_non_null(vm = vm_of_pid(vms, nr, 5300));
	assert_string_equal(vm->name, "web");
	assert_int_equal(vm->nr_vcpus, 2);
	assert_int_equal(vm->numa.nr_cells, 2);
	assert_int_equal(vm->mem_mib, 2048);
	linux_vms_free(vms, nr);

	assert_int_equal(linux_snapshot_build(t.root, &snap), 0);
	assert_int_equal(snap->nr_vms, 1);
	assert_int_equal(snap->vms[0].nr_cells, 2);
	assert_int_equal(snap->vms[0].cells[0].mem_start_mib, 0);
	assert_int_equal(snap->vms[0].cells[0].mem_mib, 512);
	assert_int_equal(snap->vms[0].cells[1].mem_start_mib, 512);
	assert_int_equal(snap->vms[0].cells[1].mem_mib, 1536);
	/* by each vCPU's own index: "CPU 0" in cells 0 (cpus=0-1), "CPU 2" in cell 1 */
	assert_int_equal(snap->vms[0].vcpus[0].index, 0);
	assert_int_equal(snap->vms[0].vcpu_cell[0], 0);
	assert_int_equal(snap->vms[0].vcpus[1].index, 2);
	assert_int_equal(snap->vms[0].vcpu_cell[1], 1);
	snapshot_free(snap);
	/* its backends (a memfd, a file) are not among its mappings (a tree has no maps): the
	 * host says so, and moves none of its RAM */
	host_of_tree(&t,
	             "VMs whose vNUMA cells' RAM was not located, so none moves: 1 (pid 5300: "
	             "/proc/5300/maps: No such file or directory)",
	             "its guest cells' RAM was not located, so none of it moves: /proc/5300/maps: "
	             "No such file or directory",
	             true);
	tree_remove(&t);

	/* cells that leave "CPU 2" out: none, and why */
	tree_make(&t, "uncovered.args");
	assert_int_equal(linux_vms_discover(t.root, &vms, &nr), 0);
	assert_non_null(vm = vm_of_pid(vms, nr, 5300));
	assert_int_equal(vm->numa.nr_cells, 0);
	assert_string_equal(vm->numa.error, "vCPU 2 is in no -numa node");
	assert_int_equal(vm->mem_mib, 4096);
	linux_vms_free(vms, nr);
	assert_int_equal(linux_snapshot_build(t.root, &snap), 0);
	assert_int_equal(snap->vms[0].nr_cells, 0);
	assert_null(snap->vms[0].vcpu_cell);
	snapshot_free(snap);
	host_of_tree(&t,
	             "VMs whose -numa options were not understood, placed as one cell: 1 "
	             "(pid 5300: vCPU 2 is in no -numa node)",
	             "its -numa options were not understood, so it is placed as one cell: vCPU 2 "
	             "is in no -numa node",
	             false);
	tree_remove(&t);
}

/* ---- on this machine, with a vnuma-load VM ----------------------------------------------- */

/* The VM once all 4 vCPUs and its 3 RAM mappings are there; false after WAIT_MAX_S. */
static bool
vm_wait(pid_t pid, struct linux_vm **vms, size_t *nr, const struct linux_vm **vm)
{
	double t0 = ltu_now_s();

	while (ltu_now_s() - t0 < WAIT_MAX_S) {
		assert_int_equal(linux_vms_discover(NULL, vms, nr), 0);
		*vm = vm_of_pid(*vms, *nr, pid);
		if (*vm != NULL && (*vm)->nr_vcpus == 4 && (*vm)->nr_ram_maps == 3)
			return true;
		linux_vms_free(*vms, *nr);
		usleep(100 * 1000);
	}
	return false;
}

static void
test_live_vnuma_load_cells(void **state)
{
	static const int want_cell[] = {0, 0, 1, 2}; /* vCPU v in cell v * 3 / 4 */
	char name[64];
	pid_t pid;
	struct linux_vm *vms = NULL;
	const struct linux_vm *vm = NULL;
	struct snapshot *snap;
	const struct snap_vm *sv = NULL;
	size_t nr;
	bool up;

	(void)state;
	snprintf(name, sizeof(name), "cellstest-%d", (int)getpid());
	/* 4 vCPUs in 3 cells over 64 MiB: cells of 21, 21 and 22 MiB */
	pid = ltu_load_start(name, "--vcpus", "4", "--memory", "64M", "--workload", "cells",
	                     "--cells", "3", "--duration", "120", NULL);
	up = vm_wait(pid, &vms, &nr, &vm);
	if (!up || vm == NULL) {
		ltu_load_stop(pid);
		fail_msg("vnuma-load %s never showed 4 vCPUs and 3 RAM mappings", name);
		return;
	}
	assert_string_equal(vm->name, name);
	assert_string_equal(vm->numa.error, "");
	assert_int_equal(vm->numa.nr_cells, 3);
	assert_int_equal(vm->mem_mib, 64);
	/*
	 * One mapping per cell, located; vnuma-load maps them in cell order, so they lie in the
	 * direction the kernel hands mappings out in (top-down: cell 0 highest), each at least its
	 * size and a guard page away from the next.
	 */
	assert_string_equal(vm->numa.layout_error, "");
	for (int i = 0; i < 3; i++) {
		bool mapped = false;

		for (int m = 0; m < vm->nr_ram_maps; m++)
			mapped |= vm->ram_starts[m] == vm->numa.cells[i].host_start;
		assert_true(mapped);
	}
	for (int i = 1; i < 3; i++) {
		const struct linux_qemu_cell *a = &vm->numa.cells[i - 1], *b = &vm->numa.cells[i];

		if (linux_mmap_order_read(NULL, pid) == LINUX_MMAP_BOTTOM_UP)
			assert_true(b->host_start >= a->host_start + a->size_bytes + 4096);
		else
			assert_true(a->host_start >= b->host_start + b->size_bytes + 4096);
	}
	linux_vms_free(vms, nr);

	assert_int_equal(linux_snapshot_build(NULL, &snap), 0);
	for (int i = 0; i < snap->nr_vms; i++)
		if (snap->vms[i].id == pid)
			sv = &snap->vms[i];
	ltu_load_stop(pid);
	assert_non_null(sv);
	assert_int_equal(sv->nr_cells, 3);
	assert_int_equal(sv->cells[0].mem_start_mib, 0);
	assert_int_equal(sv->cells[0].mem_mib, 21);
	assert_int_equal(sv->cells[1].mem_start_mib, 21);
	assert_int_equal(sv->cells[1].mem_mib, 21);
	assert_int_equal(sv->cells[2].mem_start_mib, 42);
	assert_int_equal(sv->cells[2].mem_mib, 22);
	assert_int_equal(sv->nr_vcpus, 4);
	for (int v = 0; v < 4; v++)
		assert_int_equal(sv->vcpu_cell[v], want_cell[sv->vcpus[v].index]);
	snapshot_free(snap);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_libvirt9_json),
	    cmocka_unit_test(test_keyvalue),
	    cmocka_unit_test(test_legacy_mem_and_implicit_nodeid),
	    cmocka_unit_test(test_broken_fixtures),
	    cmocka_unit_test(test_size_parse),
	    cmocka_unit_test(test_no_cells_given),
	    cmocka_unit_test(test_ram_block),
	    cmocka_unit_test(test_memdev_errors),
	    cmocka_unit_test(test_node_errors),
	    cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_discover_tree),
	    cmocka_unit_test(test_live_vnuma_load_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

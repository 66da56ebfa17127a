/*
 * test_linux_ram_layout.c - guest RAM offsets to host addresses (host/linux/ram_layout.c, and
 * discovery built on it), for guests with vNUMA cells and for QEMU's one RAM block:
 * - tests/fixtures/qemu-ram-layout (see the README there): a real QEMU 7.2 with 2 and 3 cells
 *   of equal and unequal sizes, -object order unlike nodeid order, a backend whose mapping was
 *   split in three, file, memfd and shared backends, each with two marker words per cell that
 *   QEMU itself wrote into guest RAM: translating each marker's guest offset must give the host
 *   address where the capture found it; and two tiny cells whose size QEMU's own 2 MiB RAM
 *   blocks share, which must stay unlocated (no moves) rather than be guessed;
 * - the same captures without -numa (tests/fixtures/qemu-ram-layout, README): QEMU's one RAM
 *   block for -m, for -machine memory-backend=, on -mem-path, of a -m QEMU rounds up, beside a
 *   DIMM's backend of the same size: the markers must lie where guest RAM is;
 * - inline maps and command lines for each rule and its refusals: bottom-up and unknown
 *   mapping order, a backend mapped out of creation order, extra regions without QEMU's guard
 *   page, missing regions, mem-path files, legacy mem= cells, QEMU's one RAM block among
 *   mappings that are not RAM (a sanitizer's shadow, TCG's code buffer), malformed maps;
 * - the mapping order from the sysctl and the process's personality;
 * - cutting a guest range out of ranges laid end to end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
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

#include "host/linux/discover.h"
#include "host/linux/qemu_numa.h"
#include "host/linux/ram_layout.h"
#include "policy/util.h"
#include "linux_test_util.h"

#define MIB ((uint64_t)1 << 20)
/* Most markers in one fixture (two per cell). */
#define MARKERS_MAX 16

/* ---- the captured fixtures ------------------------------------------------------------------- */

struct marker {
	int cell;
	uint64_t guest_off, host, value;
};

/* <case>/markers: "cell guest_offset host_address value" lines; returns how many. */
static int
markers_load(const char *name, struct marker *m)
{
	char rel[256];
	FILE *f;
	int n = 0;

	snprintf(rel, sizeof(rel), "tests/fixtures/qemu-ram-layout/%s/markers", name);
	assert_non_null(f = fopen(ltu_src_path(rel), "r"));
	while (n < MARKERS_MAX && fscanf(f, "%d %" SCNx64 " %" SCNx64 " %" SCNx64, &m[n].cell,
	                                 &m[n].guest_off, &m[n].host, &m[n].value) == 4)
		n++;
	fclose(f);
	assert_true(n >= 2);
	return n;
}

/* The one VM of fixture tree name, discovered; free with linux_vms_free(*vms, 1). */
static const struct linux_vm *
fixture_vm(const char *name, struct linux_vm **vms)
{
	char rel[256];
	size_t nr;

	snprintf(rel, sizeof(rel), "tests/fixtures/qemu-ram-layout/%s", name);
	assert_int_equal(linux_vms_discover(ltu_src_path(rel), vms, &nr), 0);
	assert_int_equal(nr, 1);
	return &(*vms)[0];
}

/* Where the host would move guest RAM [off, off + 8): the one host range it cuts out. */
static uint64_t
host_addr_of(const struct linux_qemu_numa *numa, uint64_t off)
{
	struct linux_ram_range *ram, out[LINUX_QEMU_CELLS_MAX];
	int nr = linux_ram_layout_ranges(numa, &ram);

	assert_int_equal(nr, numa->nr_cells);
	assert_int_equal(linux_ram_ranges_cut(ram, nr, off, 8, out), 1);
	assert_int_equal(out[0].len, 8);
	free(ram);
	return out[0].start;
}

/* Every marker of fixture name lies where the translation of its guest offset says. */
static void
check_fixture(const char *name, int nr_cells, int nr_ram_maps)
{
	struct marker m[MARKERS_MAX];
	struct linux_vm *vms;
	const struct linux_vm *vm = fixture_vm(name, &vms);
	int n = markers_load(name, m);

	print_message("%s\n", name);
	assert_string_equal(vm->numa.error, "");
	assert_string_equal(vm->numa.layout_error, "");
	assert_int_equal(vm->numa.nr_cells, nr_cells);
	for (int i = 0; i < n; i++) {
		const struct linux_qemu_cell *c = &vm->numa.cells[m[i].cell];

		assert_true(m[i].guest_off >= c->start_bytes &&
		            m[i].guest_off < c->start_bytes + c->size_bytes);
		assert_int_equal(host_addr_of(&vm->numa, m[i].guest_off), m[i].host);
	}
	/* the RAM mappings are those inside the cells' backends, ascending */
	assert_int_equal(vm->nr_ram_maps, nr_ram_maps);
	for (int i = 1; i < vm->nr_ram_maps; i++)
		assert_true(vm->ram_starts[i] > vm->ram_starts[i - 1]);
	linux_vms_free(vms, 1);
}

static void
test_fixture_unequal2(void **state)
{
	struct linux_vm *vms;
	const struct linux_vm *vm;

	(void)state;
	check_fixture("unequal2", 2, 2);
	/* the bug this guards against: node 0's 64 MiB lie above node 1's 192 MiB */
	vm = fixture_vm("unequal2", &vms);
	assert_true(vm->numa.cells[0].host_start > vm->numa.cells[1].host_start);
	assert_int_equal(vm->mem_mib, 256);
	linux_vms_free(vms, 1);
}

static void
test_fixture_equal2(void **state)
{
	(void)state;
	check_fixture("equal2", 2, 2); /* libvirt 9's JSON -object */
}

static void
test_fixture_unequal3(void **state)
{
	(void)state;
	check_fixture("unequal3", 3, 3); /* -object order 2, 0, 1 */
}

static void
test_fixture_equal3(void **state)
{
	(void)state;
	check_fixture("equal3", 3, 3);
}

static void
test_fixture_split2(void **state)
{
	(void)state;
	check_fixture("split2", 2, 4); /* node 1's 64 MiB in three mappings of 16, 16, 32 */
}

static void
test_fixture_kinds3(void **state)
{
	(void)state;
	check_fixture("kinds3", 3, 3); /* file in a mem-path directory, memfd, ram share=on */
}

/*
 * Fixture name of a real QEMU without -numa: guest RAM is one range, QEMU's RAM block of
 * ram_bytes found for certain, with each marker where its guest offset says, and its RAM
 * mapping the one inside that range.
 */
static void
check_block_fixture(const char *name, uint64_t ram_bytes)
{
	struct marker m[MARKERS_MAX];
	struct linux_vm *vms;
	const struct linux_vm *vm = fixture_vm(name, &vms);
	struct linux_ram_range *ram, out[1];
	int n = markers_load(name, m);

	print_message("%s\n", name);
	assert_int_equal(vm->numa.nr_cells, 0);
	assert_true(vm->numa.ram_block >= 0);
	assert_string_equal(vm->numa.ram_block_error, "");
	assert_string_equal(vm->ram_guess, "");
	assert_int_equal(linux_ram_layout_ranges(&vm->numa, &ram), 1);
	assert_int_equal(ram[0].len, ram_bytes);
	for (int i = 0; i < n; i++) {
		assert_int_equal(linux_ram_ranges_cut(ram, 1, m[i].guest_off, 8, out), 1);
		assert_int_equal(out[0].start, m[i].host);
	}
	assert_int_equal(vm->nr_ram_maps, 1);
	assert_int_equal(vm->ram_starts[0], ram[0].start);
	free(ram);
	linux_vms_free(vms, 1);
}

static void
test_fixture_single(void **state)
{
	(void)state;
	check_block_fixture("single", 256 * MIB);      /* -m 256M */
	check_block_fixture("libvirt1", 256 * MIB);    /* -machine memory-backend=pc.ram */
	check_block_fixture("mempath1", 128 * MIB);    /* -m 128 -mem-path DIR */
	check_block_fixture("odd1", 128 * MIB + 8192); /* -m 131076k, rounded up to 8 KiB */
	check_block_fixture("dimm1", 256 * MIB);       /* and a DIMM's 256 MiB backend */
}

/* Three 2 MiB RAM blocks with a guard page for two 2 MiB cells: not located, no moves. */
static void
test_fixture_tiny2_unlocated(void **state)
{
	struct linux_vm *vms;
	const struct linux_vm *vm = fixture_vm("tiny2", &vms);
	struct linux_ram_range *ram;

	(void)state;
	assert_int_equal(vm->numa.nr_cells, 2);
	assert_string_equal(vm->numa.layout_error,
	                    "cell 0 (memdev ram-node0): 3 anonymous mappings "
	                    "of 2097152 bytes for 2 such backends");
	assert_int_equal(vm->numa.cells[0].host_start, 0);
	assert_int_equal(vm->numa.cells[1].host_start, 0);
	assert_int_equal(linux_ram_layout_ranges(&vm->numa, &ram), -ENXIO);
	assert_null(ram);
	linux_vms_free(vms, 1);
}

/* ---- the rules, on inline maps --------------------------------------------------------------- */

static int
find_in(struct linux_qemu_numa *n, const char *maps, enum linux_mmap_order order)
{
	struct linux_vmas vmas;
	int ret;

	assert_int_equal(linux_vmas_parse(maps, strlen(maps), &vmas), 0);
	ret = linux_ram_layout_find(n, &vmas, order);
	linux_vmas_free(&vmas);
	return ret;
}

/* Two 64 MiB cells in key=value form; then cells three and four in the same way. */
#define EQUAL2_ARGS                                                                                \
	"-object", "memory-backend-ram,id=a,size=64M", "-object",                                  \
	    "memory-backend-ram,id=b,size=64M", "-numa", "node,nodeid=0,cpus=0,memdev=a", "-numa", \
	    "node,nodeid=1,cpus=1,memdev=b"

/* Two 64 MiB anonymous regions with guard pages, at 0x10000000 and 0x20000000. */
static const char maps_two_64[] =
    "10000000-14000000 rw-p 00000000 00:00 0 \n"
    "14000000-14001000 ---p 00000000 00:00 0 \n"
    "20000000-24000000 rw-p 00000000 00:00 0 \n"
    "24000000-24001000 ---p 00000000 00:00 0 \n"
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";

static void
test_equal_sizes_by_order(void **state)
{
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(ltu_numa_parse_list(&n, EQUAL2_ARGS, NULL), 0);
	/* top-down: the first created (a, cell 0) is the higher one */
	assert_int_equal(find_in(&n, maps_two_64, LINUX_MMAP_TOP_DOWN), 0);
	assert_int_equal(n.cells[0].host_start, 0x20000000);
	assert_int_equal(n.cells[1].host_start, 0x10000000);
	/* bottom-up (legacy layout): the lower one */
	assert_int_equal(find_in(&n, maps_two_64, LINUX_MMAP_BOTTOM_UP), 0);
	assert_int_equal(n.cells[0].host_start, 0x10000000);
	assert_int_equal(n.cells[1].host_start, 0x20000000);
	/* unknown: refused, and the result of before is gone */
	assert_int_equal(find_in(&n, maps_two_64, LINUX_MMAP_UNKNOWN), -ENXIO);
	assert_int_equal(n.cells[0].host_start, 0);
	assert_string_equal(n.layout_error,
	                    "cell 0 (memdev a): 2 backends of 67108864 bytes, and the "
	                    "order this process maps memory in is unknown");
	linux_qemu_numa_free(&n);

	/* the command-line order of -object decides, not the nodeids */
	assert_int_equal(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=b,size=64M",
	                                     "-object", "memory-backend-ram,id=a,size=64M", "-numa",
	                                     "node,nodeid=0,cpus=0,memdev=a", "-numa",
	                                     "node,nodeid=1,cpus=1,memdev=b", NULL),
	                 0);
	assert_int_equal(find_in(&n, maps_two_64, LINUX_MMAP_TOP_DOWN), 0);
	assert_int_equal(n.cells[0].host_start, 0x10000000);
	assert_int_equal(n.cells[1].host_start, 0x20000000);
	linux_qemu_numa_free(&n);
}

/* A backend located by size that is not in creation order: equal sizes are not trusted. */
static void
test_out_of_order_refused(void **state)
{
	/* a, m, b created in that order; m (32 MiB) between the two 64 MiB, or above both */
	static const char maps_in_order[] = "10000000-14000000 rw-p 00000000 00:00 0 \n"
	                                    "14000000-14001000 ---p 00000000 00:00 0 \n"
	                                    "18000000-1a000000 rw-p 00000000 00:00 0 \n"
	                                    "1a000000-1a001000 ---p 00000000 00:00 0 \n"
	                                    "20000000-24000000 rw-p 00000000 00:00 0 \n"
	                                    "24000000-24001000 ---p 00000000 00:00 0 \n";
	static const char maps_m_above[] = "10000000-14000000 rw-p 00000000 00:00 0 \n"
	                                   "14000000-14001000 ---p 00000000 00:00 0 \n"
	                                   "20000000-24000000 rw-p 00000000 00:00 0 \n"
	                                   "24000000-24001000 ---p 00000000 00:00 0 \n"
	                                   "30000000-32000000 rw-p 00000000 00:00 0 \n"
	                                   "32000000-32001000 ---p 00000000 00:00 0 \n";
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=a,size=64M",
	                                     "-object", "memory-backend-ram,id=m,size=32M",
	                                     "-object", "memory-backend-ram,id=b,size=64M", "-numa",
	                                     "node,nodeid=0,cpus=0,memdev=a", "-numa",
	                                     "node,nodeid=1,cpus=1,memdev=m", "-numa",
	                                     "node,nodeid=2,cpus=2,memdev=b", NULL),
	                 0);
	assert_int_equal(find_in(&n, maps_in_order, LINUX_MMAP_TOP_DOWN), 0);
	assert_int_equal(n.cells[0].host_start, 0x20000000);
	assert_int_equal(n.cells[1].host_start, 0x18000000);
	assert_int_equal(n.cells[2].host_start, 0x10000000);
	/* m went into a hole above a: a and b could as well have: refused */
	assert_int_equal(find_in(&n, maps_m_above, LINUX_MMAP_TOP_DOWN), -ENXIO);
	assert_string_equal(n.layout_error,
	                    "memory backends a and m are not mapped in the order "
	                    "QEMU made them: equal-sized ones cannot be told apart");
	for (int c = 0; c < 3; c++)
		assert_int_equal(n.cells[c].host_start, 0);
	/* bottom-up, in order means ascending: a lowest, m, b highest; m above both is not */
	assert_int_equal(find_in(&n, maps_in_order, LINUX_MMAP_BOTTOM_UP), 0);
	assert_int_equal(n.cells[0].host_start, 0x10000000);
	assert_int_equal(n.cells[1].host_start, 0x18000000);
	assert_int_equal(n.cells[2].host_start, 0x20000000);
	assert_int_equal(find_in(&n, maps_m_above, LINUX_MMAP_BOTTOM_UP), -ENXIO);
	assert_string_equal(n.layout_error,
	                    "memory backends m and b are not mapped in the order "
	                    "QEMU made them: equal-sized ones cannot be told apart");
	linux_qemu_numa_free(&n);
}

/* Unequal sizes need no order; an extra region of a size goes unless guarded. */
static void
test_sizes_and_guards(void **state)
{
	static const char maps[] =
	    "10000000-14000000 rw-p 00000000 00:00 0 \n" /* 64 MiB, no guard: a heap, say */
	    "20000000-24000000 rw-p 00000000 00:00 0 \n"
	    "24000000-24001000 ---p 00000000 00:00 0 \n"
	    "30000000-34000000 rw-p 00000000 00:00 0 \n" /* 192 MiB, split by an madvise */
	    "34000000-3c000000 rw-p 00000000 00:00 0 \n"
	    "3c000000-3c001000 ---p 00000000 00:00 0 \n"
	    "50000000-54000000 rwxp 00000000 00:00 0 \n"; /* executable: never guest RAM */
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=a,size=64M",
	                                     "-object", "memory-backend-ram,id=b,size=192M",
	                                     "-numa", "node,nodeid=0,cpus=0,memdev=a", "-numa",
	                                     "node,nodeid=1,cpus=1,memdev=b", NULL),
	                 0);
	assert_int_equal(find_in(&n, maps, LINUX_MMAP_UNKNOWN), 0);
	assert_int_equal(n.cells[0].host_start, 0x20000000);
	assert_int_equal(n.cells[1].host_start, 0x30000000);
	linux_qemu_numa_free(&n);

	/* no mappings that add up to the size at all */
	assert_int_equal(ltu_numa_parse_list(&n, "-object", "memory-backend-ram,id=a,size=64M",
	                                     "-object", "memory-backend-ram,id=b,size=96M", "-numa",
	                                     "node,nodeid=0,cpus=0,memdev=a", "-numa",
	                                     "node,nodeid=1,cpus=1,memdev=b", NULL),
	                 0);
	assert_int_equal(find_in(&n, maps, LINUX_MMAP_TOP_DOWN), -ENXIO);
	assert_string_equal(n.layout_error, "cell 1 (memdev b): 0 anonymous mappings of 100663296 "
	                                    "bytes for 1 such backend");
	linux_qemu_numa_free(&n);

	/* three 32 MiB mappings in a row fit two 64 MiB backends twice, overlapping: refused */
	assert_int_equal(ltu_numa_parse_list(&n, EQUAL2_ARGS, NULL), 0);
	assert_int_equal(find_in(&n,
	                         "10000000-12000000 rw-p 00000000 00:00 0 \n"
	                         "12000000-14000000 rw-p 00000000 00:00 0 \n"
	                         "14000000-16000000 rw-p 00000000 00:00 0 \n",
	                         LINUX_MMAP_TOP_DOWN),
	                 -ENXIO);
	assert_string_equal(n.layout_error, "cell 0 (memdev a): 2 overlapping anonymous spans of "
	                                    "mappings of 67108864 bytes for 2 such backends");
	linux_qemu_numa_free(&n);
}

/* File backends by path: mem-path itself, or QEMU's file in the directory mem-path. */
static void
test_file_backends(void **state)
{
	static const char maps[] =
	    "10000000-14000000 rw-s 00000000 00:1b 8                          "
	    "/dev/hugepages/libvirt/qemu/1-web/qemu_back_mem._objects_m1.Ab12Cd (deleted)\n"
	    "14000000-14001000 ---p 00000000 00:00 0 \n"
	    "20000000-24000000 rw-s 00000000 00:1b 9                          "
	    "/dev/hugepages/libvirt/qemu/1-web/qemu_back_mem.m0.Xy34Zw (deleted)\n"
	    "24000000-24001000 ---p 00000000 00:00 0 \n"
	    "30000000-34000000 rw-p 00000000 fe:00 10                         /srv/vm/ram 2\n"
	    "34000000-34001000 ---p 00000000 00:00 0 \n"
	    "40000000-44000000 rw-s 00000000 00:01 11                         "
	    "/memfd:memory-backend-memfd (deleted)\n";
	struct linux_qemu_numa n;

	(void)state;
	assert_int_equal(
	    ltu_numa_parse_list(
	        &n, "-object",
	        "memory-backend-file,id=m0,size=64M,mem-path=/dev/hugepages/libvirt/qemu/1-web/",
	        "-object",
	        "{\"qom-type\":\"memory-backend-file\",\"id\":\"m1\",\"size\":67108864,"
	        "\"mem-path\":\"/dev/hugepages/libvirt/qemu/1-web\"}",
	        "-object", "memory-backend-file,id=m2,size=64M,mem-path=/srv/vm/ram 2", "-object",
	        "memory-backend-memfd,id=m3,size=64M", "-numa", "node,nodeid=0,cpus=0,memdev=m0",
	        "-numa", "node,nodeid=1,cpus=1,memdev=m1", "-numa",
	        "node,nodeid=2,cpus=2,memdev=m2", "-numa", "node,nodeid=3,cpus=3,memdev=m3", NULL),
	    0);
	assert_int_equal(n.nr_backends, 4);
	assert_string_equal(n.backends[2].mem_path, "/srv/vm/ram 2");
	assert_null(n.backends[3].mem_path);
	/* four backends of one size, but each its own file or kind: no order needed */
	assert_int_equal(find_in(&n, maps, LINUX_MMAP_UNKNOWN), 0);
	assert_int_equal(n.cells[0].host_start, 0x20000000);
	assert_int_equal(n.cells[1].host_start, 0x10000000);
	assert_int_equal(n.cells[2].host_start, 0x30000000);
	assert_int_equal(n.cells[3].host_start, 0x40000000);
	linux_qemu_numa_free(&n);

	/* a file backend whose file is not mapped: no guess by size */
	assert_int_equal(
	    ltu_numa_parse_list(&n, "-object",
	                        "memory-backend-file,id=m0,size=64M,mem-path=/elsewhere", "-numa",
	                        "node,nodeid=0,cpus=0,memdev=m0", NULL),
	    0);
	assert_int_equal(find_in(&n, maps, LINUX_MMAP_TOP_DOWN), -ENXIO);
	assert_string_equal(n.layout_error,
	                    "cell 0 (memdev m0): 0 mappings of /elsewhere of 67108864 bytes");
	linux_qemu_numa_free(&n);
}

/*
 * Cells without backends (mem=) and no cells: QEMU's one RAM block of -m, located by its exact
 * size; when it is not there, nothing is located but nothing is refused either (discovery
 * falls back on sizes and says so).  Without -m nothing is looked for.
 */
static void
test_no_backends(void **state)
{
	static const char maps_128[] = "10000000-14000000 rw-p 00000000 00:00 0 \n"
	                               "14000000-14001000 ---p 00000000 00:00 0 \n"
	                               "30000000-38000000 rw-p 00000000 00:00 0 \n"
	                               "38000000-38001000 ---p 00000000 00:00 0 \n";
	struct linux_qemu_numa n;
	struct linux_ram_range *ram;

	(void)state;
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "128", "-numa",
	                                     "node,nodeid=0,cpus=0,mem=64", "-numa",
	                                     "node,nodeid=1,cpus=1,mem=64", NULL),
	                 0);
	assert_int_equal(n.nr_cells, 2);
	assert_int_equal(n.cells[0].backend, -1);
	assert_int_equal(n.ram_block, 0);
	assert_int_equal(n.nr_backends, 1);
	assert_string_equal(n.backends[0].id, ""); /* QEMU's own */
	assert_int_equal(n.backends[0].size_bytes, 128 * MIB);
	/* no mapping of 128 MiB */
	assert_int_equal(find_in(&n, maps_two_64, LINUX_MMAP_TOP_DOWN), -ENXIO);
	assert_string_equal(n.layout_error, "");
	assert_string_equal(n.ram_block_error,
	                    "-m: 0 anonymous mappings of 134217728 bytes for 1 such backend");
	assert_int_equal(n.cells[0].host_start, 0);
	assert_int_equal(linux_ram_layout_ranges(&n, &ram), 0);
	assert_null(ram);
	/* there is one: the RAM, and the cells are consecutive ranges of it */
	assert_int_equal(find_in(&n, maps_128, LINUX_MMAP_TOP_DOWN), 0);
	assert_string_equal(n.ram_block_error, "");
	assert_int_equal(n.ram_block_start, 0x30000000);
	assert_int_equal(linux_ram_layout_ranges(&n, &ram), 1);
	assert_int_equal(ram[0].start, 0x30000000);
	assert_int_equal(ram[0].len, 128 * MIB);
	free(ram);
	linux_qemu_numa_free(&n);

	assert_int_equal(ltu_numa_parse_list(&n, "-m", "128", NULL), 0);
	assert_int_equal(n.nr_cells, 0);
	assert_int_equal(find_in(&n, maps_two_64, LINUX_MMAP_TOP_DOWN), -ENXIO);
	assert_int_equal(linux_ram_layout_ranges(&n, &ram), 0);
	assert_int_equal(find_in(&n, maps_128, LINUX_MMAP_UNKNOWN), 0);
	assert_int_equal(n.ram_block_start, 0x30000000);
	linux_qemu_numa_free(&n);

	/* no -m: nothing to look for, and why */
	assert_int_equal(ltu_numa_parse_list(&n, "-smp", "2", NULL), 0);
	assert_int_equal(n.ram_block, -1);
	assert_int_equal(find_in(&n, maps_128, LINUX_MMAP_TOP_DOWN), 0);
	assert_string_equal(n.ram_block_error, "no -m or memory backend matched");
	assert_int_equal(linux_ram_layout_ranges(&n, &ram), 0);
	assert_null(ram);
	linux_qemu_numa_free(&n);
}

/*
 * QEMU's one RAM block among mappings that are not guest RAM: a sanitizer's shadow memory
 * and a TCG code buffer (executable) far larger than it, another mapping of the same size
 * without QEMU's guard page, two with one (told apart only by creation order, against a
 * DIMM's backend), a -mem-path file, and the refusals.
 */
static void
test_ram_block_rules(void **state)
{
	static const char maps[] =
	    "7fff7000-8fff7000 rw-p 00000000 00:00 0 \n" /* ASan's shadow: 256 MiB, */
	    "8fff7000-2008fff7000 ---p 00000000 00:00 0 \n"
	    "2008fff7000-10007fff8000 rw-p 00000000 00:00 0 \n"   /* ... and 14 TiB */
	    "7f0000000000-7f0004000000 rw-p 00000000 00:00 0 \n"  /* 64 MiB, no guard */
	    "7f1000000000-7f1004000000 rw-p 00000000 00:00 0 \n"  /* 64 MiB: the RAM */
	    "7f1004000000-7f1004001000 ---p 00000000 00:00 0 \n"  /* QEMU's guard page */
	    "7f2000000000-7f203ffff000 rwxp 00000000 00:00 0 \n"; /* TCG: 1 GiB */
	static const char maps_dimm[] = "7f1000000000-7f1004000000 rw-p 00000000 00:00 0 \n"
	                                "7f1004000000-7f1004001000 ---p 00000000 00:00 0 \n"
	                                "7f1100000000-7f1104000000 rw-p 00000000 00:00 0 \n"
	                                "7f1104000000-7f1104001000 ---p 00000000 00:00 0 \n";
	static const char maps_file[] =
	    "7f1000000000-7f1040000000 rw-s 00000000 00:1b 9                          "
	    "/dev/hugepages/libvirt/qemu/3-big/qemu_back_mem.pc.ram.Xy34Zw (deleted)\n"
	    "7f1040000000-7f1040001000 ---p 00000000 00:00 0 \n"
	    "7f2000000000-7f2040000000 rw-s 00000000 00:1b 9                          "
	    "/dev/hugepages/other/qemu_back_mem.pc.ram.Ab12Cd (deleted)\n";
	struct linux_qemu_numa n;

	(void)state;
	/* one guarded span of -m's size: the others are not RAM, whatever their size */
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "64M", NULL), 0);
	assert_int_equal(find_in(&n, maps, LINUX_MMAP_UNKNOWN), 0);
	assert_int_equal(n.ram_block_start, 0x7f1000000000);
	/* two guarded ones and only QEMU's own backend: not told apart */
	assert_int_equal(find_in(&n, maps_dimm, LINUX_MMAP_TOP_DOWN), -ENXIO);
	assert_int_equal(n.ram_block_start, 0);
	assert_string_equal(n.ram_block_error,
	                    "-m: 2 anonymous mappings of 67108864 bytes for 1 such backend");
	linux_qemu_numa_free(&n);

	/* a DIMM's backend of the same size, created first: top-down, QEMU's own is below it */
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "64M,slots=2,maxmem=1G", "-object",
	                                     "memory-backend-ram,id=dimm0,size=64M", "-device",
	                                     "pc-dimm,memdev=dimm0", NULL),
	                 0);
	assert_int_equal(n.ram_block, 1);
	assert_int_equal(find_in(&n, maps_dimm, LINUX_MMAP_TOP_DOWN), 0);
	assert_int_equal(n.ram_block_start, 0x7f1000000000);
	assert_int_equal(find_in(&n, maps_dimm, LINUX_MMAP_BOTTOM_UP), 0);
	assert_int_equal(n.ram_block_start, 0x7f1100000000);
	assert_int_equal(find_in(&n, maps_dimm, LINUX_MMAP_UNKNOWN), -ENXIO);
	assert_string_equal(n.ram_block_error, "-m: 2 backends of 67108864 bytes, and the order "
	                                       "this process maps memory in is unknown");
	linux_qemu_numa_free(&n);

	/* -machine memory-backend= names it, as libvirt does: that backend, by its size */
	assert_int_equal(ltu_numa_parse_list(&n, "-machine", "pc-q35-7.2,memory-backend=pc.ram",
	                                     "-m", "size=65536k", "-object",
	                                     "{\"qom-type\":\"memory-backend-ram\",\"id\":"
	                                     "\"pc.ram\",\"size\":67108864}",
	                                     NULL),
	                 0);
	assert_int_equal(n.nr_backends, 1);
	assert_int_equal(n.ram_block, 0);
	assert_int_equal(find_in(&n, maps, LINUX_MMAP_TOP_DOWN), 0);
	assert_int_equal(n.ram_block_start, 0x7f1000000000);
	linux_qemu_numa_free(&n);

	/* -mem-path: QEMU's file in that directory, whatever the machine calls its RAM */
	assert_int_equal(ltu_numa_parse_list(&n, "-m", "1G", "-mem-path",
	                                     "/dev/hugepages/libvirt/qemu/3-big", NULL),
	                 0);
	assert_int_equal(n.backends[n.ram_block].kind, LINUX_QEMU_BACKEND_FILE);
	assert_int_equal(find_in(&n, maps_file, LINUX_MMAP_UNKNOWN), 0);
	assert_int_equal(n.ram_block_start, 0x7f1000000000);
	linux_qemu_numa_free(&n);
	assert_int_equal(
	    ltu_numa_parse_list(&n, "-m", "1G", "-mem-path", "/dev/hugepages/none", NULL), 0);
	assert_int_equal(find_in(&n, maps_file, LINUX_MMAP_UNKNOWN), -ENXIO);
	assert_string_equal(n.ram_block_error, "-m, -mem-path: 0 mappings of /dev/hugepages/none "
	                                       "of 1073741824 bytes");
	linux_qemu_numa_free(&n);
}

/* maps lines: a path with blanks is kept whole; malformed or cut files are errors. */
static void
test_vmas_parse(void **state)
{
	static const char good[] = "1000-2000 r-xp 00000000 fe:00 12   /usr/bin/a b\n"
	                           "2000-3000 rw-p 00000000 00:00 0 \n"
	                           "3000-4000 ---p 00000000 00:00 0\n";
	static const char *const bad[] = {
	    "1000-2000 rw-p 00000000 00:00 0",                      /* cut short */
	    "2000-1000 rw-p 00000000 00:00 0\n",                    /* end before start */
	    "1000-2000 rw 00000000 00:00 0\n",                      /* perms */
	    "1000-2000 rw-p 00000000 00:00\n",                      /* no inode */
	    "3000-4000 rw-p 0 00:00 0\n1000-2000 rw-p 0 00:00 0\n", /* out of order */
	    "zz-2000 rw-p 00000000 00:00 0\n",
	};
	struct linux_vmas v;

	(void)state;
	assert_int_equal(linux_vmas_parse(good, strlen(good), &v), 0);
	assert_int_equal(v.nr, 3);
	assert_string_equal(v.vmas[0].path, "/usr/bin/a b");
	assert_string_equal(v.vmas[0].perms, "r-xp");
	assert_null(v.vmas[1].path);
	assert_int_equal(v.vmas[2].start, 0x3000);
	assert_int_equal(v.vmas[2].end, 0x4000);
	linux_vmas_free(&v);
	assert_int_equal(linux_vmas_parse("", 0, &v), 0);
	assert_int_equal(v.nr, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(linux_vmas_parse(bad[i], strlen(bad[i]), &v), -EINVAL);
		assert_int_equal(v.nr, 0);
		assert_null(v.vmas);
	}
}

/* ---- random maps: never a wrong or overlapping answer --------------------------------------- */

/*
 * Random maps text into buf: ascending mappings of 16 to 64 MiB of random kinds and
 * permissions, each maybe with a guard page after it and maybe right against the next.
 */
static void
random_maps(struct util_rng *rng, char *buf, size_t size)
{
	static const char *const perms[] = {"rw-p", "rw-p", "rw-p", "rw-p", "rwxp", "rw-s", "r--p"};
	static const char *const paths[] = {
	    "", "", "", "", "/dev/zero (deleted)", "/memfd:m (deleted)", "/srv/file", "[heap]"};
	uint64_t at = 0x10000000;
	size_t n = 0;
	int lines = 1 + (int)util_rng_below(rng, 8);

	for (int i = 0; i < lines && n + 256 < size; i++) {
		uint64_t len = (1 + util_rng_below(rng, 4)) * 16 * MIB;

		at += util_rng_below(rng, 3) == 0 ? 0 : 2 * MIB; /* right against, or a gap */
		n += (size_t)snprintf(buf + n, size - n,
		                      "%" PRIx64 "-%" PRIx64 " %s 0 00:00 0 %s\n", at, at + len,
		                      perms[util_rng_below(rng, 7)], paths[util_rng_below(rng, 8)]);
		at += len;
		if (util_rng_below(rng, 2) == 0) {
			n += (size_t)snprintf(buf + n, size - n,
			                      "%" PRIx64 "-%" PRIx64 " ---p 0 00:00 0\n", at,
			                      at + 0x1000);
			at += 0x1000;
		}
	}
}

/* [start, start + len) is exactly some adjacent read-write mappings without x. */
static bool
covered(const struct linux_vmas *v, uint64_t start, uint64_t len)
{
	uint64_t at = start;

	for (size_t i = 0; i < v->nr && at < start + len; i++) {
		if (v->vmas[i].end <= at)
			continue;
		if (v->vmas[i].start != at || strncmp(v->vmas[i].perms, "rw-", 3) != 0)
			return false;
		at = v->vmas[i].end;
	}
	return at == start + len;
}

static void
test_random_maps(void **state)
{
	char buf[4096];
	struct util_rng rng;
	struct linux_qemu_numa cfg[2];
	int located = 0;

	(void)state;
	assert_int_equal(ltu_numa_parse_list(&cfg[0], EQUAL2_ARGS, NULL), 0);
	assert_int_equal(ltu_numa_parse_list(&cfg[1], "-object", "memory-backend-ram,id=a,size=32M",
	                                     "-object", "memory-backend-ram,id=b,size=48M", "-numa",
	                                     "node,nodeid=0,cpus=0,memdev=a", "-numa",
	                                     "node,nodeid=1,cpus=1,memdev=b", NULL),
	                 0);
	for (uint64_t seed = 1; seed <= 3000; seed++) {
		struct linux_qemu_numa *n = &cfg[seed % 2];
		struct linux_vmas v;
		int ret;

		util_rng_seed(&rng, seed, 0);
		random_maps(&rng, buf, sizeof(buf));
		assert_int_equal(linux_vmas_parse(buf, strlen(buf), &v), 0);
		ret = linux_ram_layout_find(n, &v, (enum linux_mmap_order)util_rng_below(&rng, 3));
		if (ret != 0 && (ret != -ENXIO || n->layout_error[0] == '\0'))
			fail_msg("seed %" PRIu64 ": %d, \"%s\"", seed, ret, n->layout_error);
		if (ret == 0 && (!covered(&v, n->cells[0].host_start, n->cells[0].size_bytes) ||
		                 !covered(&v, n->cells[1].host_start, n->cells[1].size_bytes)))
			fail_msg("seed %" PRIu64 ": a cell not on mappings of its own", seed);
		if (ret == 0 &&
		    n->cells[0].host_start < n->cells[1].host_start + n->cells[1].size_bytes &&
		    n->cells[1].host_start < n->cells[0].host_start + n->cells[0].size_bytes)
			fail_msg("seed %" PRIu64 ": the cells overlap", seed);
		located += ret == 0;
		linux_vmas_free(&v);
		/* random bytes: an error or a parse, never a crash */
		for (size_t i = 0; i < 200; i++)
			buf[i] = "0123456789abcdef- rwxps\n/[]"[util_rng_below(&rng, 27)];
		if (linux_vmas_parse(buf, 200, &v) == 0)
			linux_vmas_free(&v);
	}
	print_message("located in %d of 3000 random layouts\n", located);
	assert_true(located >= 30 && located <= 2970); /* both outcomes were tried */
	linux_qemu_numa_free(&cfg[0]);
	linux_qemu_numa_free(&cfg[1]);
}

/* ---- the mapping order ---------------------------------------------------------------------- */

static void
test_mmap_order(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char root[256], path[512];

	(void)state;
	assert_int_equal(
	    linux_mmap_order_read(ltu_src_path("tests/fixtures/qemu-ram-layout/equal2"), 6200),
	    LINUX_MMAP_TOP_DOWN);
	snprintf(root, sizeof(root), "%s/test_ram_layout.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/proc", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc/42", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc/sys", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc/sys/vm", root);
	assert_int_equal(mkdir(path, 0755), 0);
	/* no personality file: unknown */
	assert_int_equal(linux_mmap_order_read(root, 42), LINUX_MMAP_UNKNOWN);
	/* setarch -L: ADDR_COMPAT_LAYOUT */
	ltu_file_write(root, "proc/42/personality", "00200000\n");
	assert_int_equal(linux_mmap_order_read(root, 42), LINUX_MMAP_BOTTOM_UP);
	ltu_file_write(root, "proc/42/personality", "00000000\n");
	assert_int_equal(linux_mmap_order_read(root, 42), LINUX_MMAP_TOP_DOWN);
	ltu_file_write(root, "proc/42/personality", "garbage\n");
	assert_int_equal(linux_mmap_order_read(root, 42), LINUX_MMAP_UNKNOWN);
	ltu_file_write(root, "proc/42/personality", "00000000\n");
	ltu_file_write(root, "proc/sys/vm/legacy_va_layout", "1\n");
	assert_int_equal(linux_mmap_order_read(root, 42), LINUX_MMAP_BOTTOM_UP);
	ltu_file_write(root, "proc/sys/vm/legacy_va_layout", "0\n");
	assert_int_equal(linux_mmap_order_read(root, 42), LINUX_MMAP_TOP_DOWN);
	static const char *const files[] = {
	    "proc/sys/vm/legacy_va_layout", "proc/sys/vm", "proc/sys",
	    "proc/42/personality",          "proc/42",     "proc"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		if (unlink(path) != 0)
			rmdir(path);
	}
	assert_int_equal(rmdir(root), 0);
}

/* ---- cutting guest ranges ------------------------------------------------------------------- */

static void
test_ranges_cut(void **state)
{
	/* cell 0: 64 MiB high up, cell 1: 192 MiB below it, as QEMU maps them */
	static const struct linux_ram_range ram[] = {{0x7f0000000000, 64 * MIB},
	                                             {0x7e0000000000, 192 * MIB}};
	struct linux_ram_range out[2];

	(void)state;
	assert_int_equal(linux_ram_ranges_cut(ram, 2, 0, 64 * MIB, out), 1);
	assert_int_equal(out[0].start, 0x7f0000000000);
	assert_int_equal(out[0].len, 64 * MIB);
	assert_int_equal(linux_ram_ranges_cut(ram, 2, 64 * MIB, 192 * MIB, out), 1);
	assert_int_equal(out[0].start, 0x7e0000000000);
	assert_int_equal(linux_ram_ranges_cut(ram, 2, 60 * MIB, 8 * MIB, out), 2);
	assert_int_equal(out[0].start, 0x7f0000000000 + 60 * MIB);
	assert_int_equal(out[0].len, 4 * MIB);
	assert_int_equal(out[1].start, 0x7e0000000000);
	assert_int_equal(out[1].len, 4 * MIB);
	assert_int_equal(linux_ram_ranges_cut(ram, 2, 100 * MIB, 0, out), 1); /* to the end */
	assert_int_equal(out[0].start, 0x7e0000000000 + 36 * MIB);
	assert_int_equal(out[0].len, 156 * MIB);
	assert_int_equal(linux_ram_ranges_cut(ram, 2, 256 * MIB, 0, out), 0); /* past the end */
	assert_int_equal(linux_ram_ranges_cut(ram, 2, 32 * MIB, UINT64_MAX, out), 2);
	assert_int_equal(out[1].len, 192 * MIB);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_unequal2),
	    cmocka_unit_test(test_fixture_equal2),
	    cmocka_unit_test(test_fixture_unequal3),
	    cmocka_unit_test(test_fixture_equal3),
	    cmocka_unit_test(test_fixture_split2),
	    cmocka_unit_test(test_fixture_kinds3),
	    cmocka_unit_test(test_fixture_tiny2_unlocated),
	    cmocka_unit_test(test_fixture_single),
	    cmocka_unit_test(test_equal_sizes_by_order),
	    cmocka_unit_test(test_out_of_order_refused),
	    cmocka_unit_test(test_sizes_and_guards),
	    cmocka_unit_test(test_file_backends),
	    cmocka_unit_test(test_no_backends),
	    cmocka_unit_test(test_ram_block_rules),
	    cmocka_unit_test(test_vmas_parse),
	    cmocka_unit_test(test_random_maps),
	    cmocka_unit_test(test_mmap_order),
	    cmocka_unit_test(test_ranges_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * qemu_ram_probe - where vnumad's Linux host would move a running QEMU's guest RAM.  Finds
 * the VM of pid PID as vnumad's discovery does (host/linux/discover.h: its vNUMA cells and
 * where each cell's memory backend is mapped, or where QEMU's one RAM block is,
 * host/linux/ram_layout.h) and, for each guest RAM offset given, prints the host address a
 * memory move of that byte would touch: the same ranges and cut as linux_host_mem.c.
 * tests/sim/test_qemu_ram_layout.sh reads the marker words QEMU wrote into guest RAM at those
 * addresses.
 *
 * Usage: qemu_ram_probe PID [OFFSET...]   (bytes; decimal, or hex with 0x)
 * Prints "cell C nodeid N start=0x... size=0x... host=0x..." per cell with a memory backend,
 * or "ram host=0x... size=0x..." for QEMU's one RAM block, then "offset 0x... host=0x..." per
 * offset.  Exit 0; 2 with "unlocated: REASON" when the cells' RAM was not located (vnumad then
 * moves none of it) or QEMU's RAM block was not (vnumad then finds guest RAM by size only); 3
 * when the VM is not (yet) there or its RAM is in neither form; 1 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/discover.h"
#include "host/linux/ram_layout.h"

static int
probe_offsets(const struct linux_qemu_numa *numa, int argc, char **argv)
{
	struct linux_ram_range *ram, cut[LINUX_QEMU_CELLS_MAX];
	int nr = linux_ram_layout_ranges(numa, &ram);

	bool cells = numa->nr_cells > 0 && numa->cells[0].backend >= 0;

	if (nr == -ENXIO) {
		printf("unlocated: %s\n", numa->layout_error);
		return 2;
	}
	if (nr == 0 && !cells && numa->ram_block >= 0) {
		printf("unlocated: %s\n", numa->ram_block_error);
		return 2;
	}
	if (nr <= 0)
		return 3;
	for (int c = 0; cells && c < numa->nr_cells; c++)
		printf("cell %d nodeid %d start=0x%" PRIx64 " size=0x%" PRIx64 " host=0x%" PRIx64
		       "\n",
		       c, numa->cells[c].nodeid, numa->cells[c].start_bytes,
		       numa->cells[c].size_bytes, numa->cells[c].host_start);
	if (!cells)
		printf("ram host=0x%" PRIx64 " size=0x%" PRIx64 "\n", ram[0].start, ram[0].len);
	for (int i = 0; i < argc; i++) {
		uint64_t off = strtoull(argv[i], NULL, 0);

		if (linux_ram_ranges_cut(ram, nr, off, 1, cut) != 1)
			printf("offset 0x%" PRIx64 " none\n", off);
		else
			printf("offset 0x%" PRIx64 " host=0x%" PRIx64 "\n", off, cut[0].start);
	}
	free(ram);
	return 0;
}

int
main(int argc, char **argv)
{
	struct linux_vm *vms;
	size_t nr;
	int pid, ret = 3;

	if (argc < 2 || (pid = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: qemu_ram_probe PID [OFFSET...]\n");
		return 1;
	}
	if (linux_vms_discover(NULL, &vms, &nr) < 0) {
		fprintf(stderr, "qemu_ram_probe: cannot read /proc\n");
		return 1;
	}
	for (size_t i = 0; i < nr; i++)
		if (vms[i].pid == pid)
			ret = probe_offsets(&vms[i].numa, argc - 2, argv + 2);
	if (ret == 3)
		printf("pid %d: no QEMU VM with cells with memory backends or one RAM block\n",
		       pid);
	linux_vms_free(vms, nr);
	return ret;
}

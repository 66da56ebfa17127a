/*
 * fuzz_qemu_check.h - what every guest vNUMA layout read from a QEMU command line satisfies
 * (host/linux/qemu_numa.h), checked by the qemu_cmdline and discover targets.  abort() on
 * any breach, so that libFuzzer reports it.
 */
#ifndef VNUMAD_TESTS_FUZZ_QEMU_CHECK_H
#define VNUMAD_TESTS_FUZZ_QEMU_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/qemu_numa.h"
#include "host/linux/ram_layout.h"
#include "tests/fuzz/fuzz_util.h"

/* Cells ascend by nodeid and lie end to end; each has vCPUs no other cell has, and RAM. */
static FUZZ_UNUSED void
fuzz_qemu_numa_check(const struct linux_qemu_numa *numa)
{
	uint64_t start = 0;

	if (memchr(numa->error, '\0', sizeof(numa->error)) == NULL ||
	    memchr(numa->layout_error, '\0', sizeof(numa->layout_error)) == NULL ||
	    numa->nr_cells < 0 || numa->nr_cells > LINUX_QEMU_CELLS_MAX ||
	    (numa->nr_cells > 0 && numa->error[0] != '\0'))
		abort();
	for (int c = 0; c < numa->nr_cells; c++) {
		const struct linux_qemu_cell *cell = &numa->cells[c];

		if (cell->start_bytes != start || cell->size_bytes < LINUX_QEMU_CELL_MIN_BYTES ||
		    (c > 0 && cell->nodeid <= numa->cells[c - 1].nodeid) || cell->nodeid < 0 ||
		    cell->nodeid >= LINUX_QEMU_CELLS_MAX || cell->nr_ranges < 1 ||
		    cell->first_range < 0 ||
		    cell->first_range + cell->nr_ranges > numa->nr_ranges || cell->backend < -1 ||
		    cell->backend >= numa->nr_backends ||
		    (cell->backend >= 0) != (numa->cells[0].backend >= 0))
			abort();
		for (int k = 0; k < cell->nr_ranges; k++) {
			const struct linux_qemu_cpus *r = &numa->ranges[cell->first_range + k];

			if (r->first < 0 || r->last < r->first ||
			    linux_qemu_numa_cell_of(numa, r->first) != c ||
			    linux_qemu_numa_cell_of(numa, r->last) != c)
				abort();
		}
		start += cell->size_bytes;
	}
	if (numa->nr_cells > 0 && numa->ram_bytes != start)
		abort();
	/* Every backend has its id but the one QEMU makes itself for -m: the last, ram_block. */
	if (numa->ram_block < -1 || numa->ram_block >= numa->nr_backends)
		abort();
	for (int b = 0; b < numa->nr_backends; b++)
		if ((numa->backends[b].id[0] == '\0' &&
		     (b != numa->nr_backends - 1 || b != numa->ram_block)) ||
		    memchr(numa->backends[b].id, '\0', LINUX_QEMU_ID_MAX) == NULL)
			abort();
}

/* Where located, each cell's RAM lies inside the mappings, and no two cells share bytes. */
static FUZZ_UNUSED void
fuzz_qemu_layout_check(const struct linux_qemu_numa *numa, const struct linux_vmas *vmas, int ret)
{
	struct linux_ram_range *ram = NULL, cut[LINUX_QEMU_CELLS_MAX];
	uint64_t total = 0;
	int n;

	if (ret != 0 && ret != -ENXIO)
		abort();
	for (int c = 0; c < numa->nr_cells; c++) {
		const struct linux_qemu_cell *cell = &numa->cells[c];
		uint64_t at = cell->host_start, end = at + cell->size_bytes;

		if (at == 0)
			continue;
		if (ret != 0 || end < at)
			abort(); /* -ENXIO leaves every cell unlocated */
		for (size_t v = 0; v < vmas->nr && at < end; v++)
			if (vmas->vmas[v].start <= at && at < vmas->vmas[v].end)
				at = vmas->vmas[v].end; /* vmas ascend: the next must go on here */
		if (at < end)
			abort(); /* a hole, or past the last mapping */
		for (int d = 0; d < c; d++)
			if (numa->cells[d].host_start != 0 && numa->cells[d].host_start < end &&
			    cell->host_start <
			        numa->cells[d].host_start + numa->cells[d].size_bytes)
				abort();
	}
	n = linux_ram_layout_ranges(numa, &ram);
	if (n < 0 ? n != -ENXIO || ram != NULL : n != 0 && n != numa->nr_cells)
		abort();
	for (int i = 0; i < n; i++)
		total += ram[i].len;
	if (n > 0 && total != numa->ram_bytes)
		abort();
	/* Cutting the guest RAM anywhere gives pieces of exactly the length asked for. */
	for (int i = 0; n > 0 && i < 4; i++) {
		uint64_t off = total / 4 * (uint64_t)i + (uint64_t)i, len = i == 3 ? 0 : total / 3;
		uint64_t want = off >= total                    ? 0
		                : len == 0 || len > total - off ? total - off
		                                                : len;
		uint64_t got = 0;
		int pieces = linux_ram_ranges_cut(ram, n, off, len, cut);

		for (int p = 0; p < pieces; p++)
			got += cut[p].len;
		if (pieces < 0 || pieces > n || got != want)
			abort();
	}
	free(ram);
}

#endif

/*
 * ram_layout.h - where a QEMU process mapped the memory backend of each guest vNUMA cell, or
 * the one of its single RAM block, so that a guest-physical range of RAM becomes the right
 * host addresses, and nothing that is not guest RAM is taken for it.
 *
 * QEMU lays the cells out in guest-physical order by nodeid (qemu_numa.h) but maps their
 * memory backends in the order it creates them, the command-line order of the -object
 * options, wherever the kernel puts each mmap: top-down by default, each one below the last.
 * So address order is not guest-physical order: QEMU 7.2 with backends of 64 and 192 MiB maps
 * node 0's above node 1's.  Each cell's backend is found in /proc/<pid>/maps, most reliable
 * way first:
 * 1. by path: a memory-backend-file maps mem-path itself, or, when mem-path is a directory, a
 *    file QEMU creates and unlinks there: "<mem-path>/qemu_back_mem.<id>.XXXXXX (deleted)"
 *    ("_objects_<id>" on machine types before 4.0, which name the block by its QOM path);
 * 2. by size: spans of mappings of the backend's kind (anonymous, or "/dev/zero (deleted)"
 *    when shared, for memory-backend-ram; "/memfd:..." for memory-backend-memfd), readable,
 *    writable and not executable - one mapping, or several adjacent ones of the same kind,
 *    permissions and file (mbind or madvise on part of a backend splits its mapping) - that
 *    hold exactly the backend's size (in whole pages, as QEMU maps it): one backend of that
 *    kind and size, one such span.
 *    Spans are cut from runs of such mappings by size, never taken whole: a thread's stack can
 *    lie right against a backend.  Larger backends go first, so the parts of a split one are
 *    never taken for smaller ones;
 * 3. equal sizes, as many spans as backends: the backends in command-line order against
 *    the spans by descending address (ascending when the process maps bottom-up:
 *    vm.legacy_va_layout set, or the ADDR_COMPAT_LAYOUT personality), as measured on QEMU 7.2
 *    (tests/fixtures/qemu-ram-layout/README.md); and only when every backend located by 1.
 *    or 2. sits in that same order too, so that a mapping that went into a hole out of order
 *    is never taken for another.
 * Where more spans than backends fit (QEMU's own RAM blocks, e.g. its 2 MiB ACPI tables, can
 * share a tiny cell's size), only those followed by QEMU's guard page (an inaccessible page
 * after each RAM block, since QEMU 2.5) count.  Anything else - a backend without a span,
 * still more spans than backends, or overlapping ones, equal sizes without a known order -
 * leaves the cells' RAM unlocated, with the reason in numa->layout_error: none of that VM's
 * memory is then moved, rather than a wrong cell's.
 *
 * Without memdev= cells, QEMU's one RAM block (numa->ram_block, qemu_numa.h: the backend
 * -machine memory-backend= names, or QEMU's own for -m and -mem-path, created last) is located
 * by the same rules, the other backends of the command line (a DIMM's) taking part in its
 * size group and creation order.  When it is not located, the reason goes to
 * numa->ram_block_error and nothing is refused: there is no other cell's RAM to take for it,
 * and discovery falls back on sizes (discover.h) and says so.
 *
 * Not handled: kernels that map bottom-up because the stack limit is unlimited (not x86,
 * whose layout ignores it; some other architectures do not).
 */
#ifndef VNUMAD_HOST_LINUX_RAM_LAYOUT_H
#define VNUMAD_HOST_LINUX_RAM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "host/linux/procfs.h"
#include "host/linux/qemu_numa.h"

/* A range of host virtual addresses: [start, start + len). */
struct linux_ram_range {
	uint64_t start;
	uint64_t len;
};

/* The direction the kernel hands out a process's mappings in. */
enum linux_mmap_order {
	LINUX_MMAP_TOP_DOWN,  /* each new mapping below the others: the default */
	LINUX_MMAP_BOTTOM_UP, /* the legacy layout */
	LINUX_MMAP_UNKNOWN,   /* the process's personality could not be read */
};

/* From <root>/proc/sys/vm/legacy_va_layout and <root>/proc/<pid>/personality. */
enum linux_mmap_order linux_mmap_order_read(const char *root, int pid);

/*
 * Locate the backend of each of numa's cells among vmas (see above): each cell's host_start,
 * and 0.  -ENXIO when the cells' RAM cannot be told apart: numa->layout_error says why and
 * every host_start is 0.  Cells without backends (mem=, or none): QEMU's RAM block instead,
 * numa->ram_block_start and 0, or -ENXIO with ram_block_error saying why; without one
 * (ram_block -1), 0 and nothing done.
 */
int linux_ram_layout_find(struct linux_qemu_numa *numa, const struct linux_vmas *vmas,
                          enum linux_mmap_order order);
/* The same on <root>/proc/<pid>/maps; a maps that cannot be read is -errno and a reason too. */
int linux_ram_layout_read(const char *root, int pid, struct linux_qemu_numa *numa);

/*
 * numa's guest RAM as host ranges in guest-physical order, one per cell, or the one of QEMU's
 * RAM block, malloc'd into *out: returns how many.  0 (*out NULL) when neither was located
 * (cells without backends and no RAM block located, or no cells and none): guest RAM is
 * then where discover.h's size rule says.  -ENXIO (*out NULL) when the cells' RAM was not
 * located.
 */
int linux_ram_layout_ranges(const struct linux_qemu_numa *numa, struct linux_ram_range **out);

/*
 * Guest RAM is ram[0..nr) end to end.  The parts of its bytes [off, off + len) (len 0: to the
 * end) into out (room for nr), in guest-physical order; returns how many.
 */
int linux_ram_ranges_cut(const struct linux_ram_range *ram, int nr, uint64_t off, uint64_t len,
                         struct linux_ram_range *out);

#endif

/*
 * qemu_numa.h - a QEMU guest's vNUMA cells, and the memory backend of its RAM, read from the
 * QEMU command line.
 *
 * What is read (QEMU's own syntax; "--opt" is the same as "-opt"; ",," is a literal comma):
 * - -numa node[,nodeid=N][,cpus=A[-B]]...[,memdev=ID | ,mem=SIZE]: one cell per node.  cpus= may
 *   repeat (each one contiguous range; that is how QEMU and libvirt write a non-contiguous set);
 *   a node without nodeid= takes the number of nodes defined before it, as in QEMU.  Other keys
 *   (initiator=, ...) and the other -numa types (dist, hmat-lb, hmat-cache) are ignored.
 * - -object memory-backend-ram|memory-backend-file|memory-backend-memfd,id=ID,size=SIZE,...,
 *   (mem-path=PATH for a file) or the same as JSON ({"qom-type": ..., "id": ..., "size": BYTES,
 *   "mem-path": ...}, as libvirt 9 passes it).
 * - -m [size=]SIZE[,slots=..,maxmem=..]: the guest RAM, to check the cells against.
 * - -machine|-M ...,memory-backend=ID,... and -mem-path PATH: what holds the guest RAM when
 *   no -numa node names a memdev= (below).
 * Sizes follow QEMU: a decimal number (a fraction allowed), or 0x and hex digits, with an
 * optional suffix B, K, M, G, T, P or E (any case, powers of 1024).  Without a suffix,
 * -object size= is in bytes, -numa mem= and -m in MiB.
 *
 * Cells are ordered by nodeid, which is the order QEMU lays out guest-physical RAM in, so each
 * cell starts where the cells before it end.  Every memory backend of the command line is
 * kept, in command-line order (the order QEMU creates, and so maps, them), with its kind, size
 * and mem-path, and each cell names its own (memdev=); ram_layout.h finds where QEMU mapped
 * each one.
 *
 * Without memdev= cells (no -numa, or legacy -numa node,mem= cells, which are consecutive
 * ranges of it), QEMU holds all of guest RAM in one RAM block, the memory of one backend:
 * the one -machine memory-backend=ID names (as libvirt passes it: "pc.ram"), else one QEMU
 * creates itself after every -object (vl.c create_default_memdev): a memory-backend-file on
 * -mem-path when given, else a memory-backend-ram, of -m rounded up to 8 KiB as QEMU rounds it
 * (LINUX_QEMU_RAM_ALIGN_BYTES).  That backend is ram_block; QEMU's own one is added last to the
 * backends, with the id "" (QEMU names it after the machine type: "pc.ram" on x86).  When
 * none can be named (no -m, a memory-backend= naming no backend, -numa options not
 * understood), ram_block is -1 and ram_block_error says why.
 *
 * What gives no cells, with a one-line reason in linux_qemu_numa.error (never a crash):
 * malformed -numa node options or sizes; a nodeid given twice or out of range; mem= and memdev=
 * mixed, or memdev= on some nodes only (QEMU refuses both); a memdev naming no memory backend, or
 * one that another node names too (QEMU refuses that: the cells would share their RAM); a vCPU
 * in two cells; a cell without vCPUs or with less than 1 MiB of RAM (vnumad places a cell
 * by its vCPUs and moves it by its MiB range); cells whose sizes do not add up to -m; and what
 * QEMU decides by itself from the machine type, which vnumad does not model: -numa cpu
 * (topology-based vCPU mapping), nodes with no cpus= at all, and nodes with neither mem= nor
 * memdev=.  The caller checks the discovered vCPU threads against the cells
 * (linux_qemu_numa_cell_of) and drops them with linux_qemu_numa_fail when one is in no cell.
 */
#ifndef VNUMAD_HOST_LINUX_QEMU_NUMA_H
#define VNUMAD_HOST_LINUX_QEMU_NUMA_H

#include <stdint.h>

/* Most cells, and the highest nodeid + 1: QEMU's MAX_NODES (128 since QEMU 2.x). */
#define LINUX_QEMU_CELLS_MAX 128
/*
 * Most cpus= ranges and memory backends read from one command line.  Default 4096: libvirt
 * writes one range per contiguous run of vCPUs, so even 128 cells of scattered vCPUs fit; the
 * bound keeps the pairwise overlap check cheap on a hostile command line.
 */
#define LINUX_QEMU_ITEMS_MAX 4096
/* Length of the reason kept when there are no cells, with its NUL. */
#define LINUX_QEMU_ERROR_MAX 160
/* Smallest cell vnumad models: 1 MiB, the unit of its guest RAM ranges. */
#define LINUX_QEMU_CELL_MIN_BYTES ((uint64_t)1 << 20)
/* Longest memory backend id kept, with its NUL (libvirt's are "ram-node12" and the like). */
#define LINUX_QEMU_ID_MAX 128
/*
 * QEMU rounds -m up to a multiple of this many bytes (vl.c set_memory_options,
 * QEMU_ALIGN_UP(sz, 8192), since QEMU 2.x): the size of the RAM block it then maps.
 */
#define LINUX_QEMU_RAM_ALIGN_BYTES 8192

/* vCPU indexes first..last (QEMU's cpu-index, the n of "CPU n/KVM"). */
struct linux_qemu_cpus {
	int first;
	int last;
};

enum linux_qemu_backend_kind {
	LINUX_QEMU_BACKEND_RAM,   /* memory-backend-ram: anonymous memory (/dev/zero if shared) */
	LINUX_QEMU_BACKEND_FILE,  /* memory-backend-file: the file mem-path names, or one in it */
	LINUX_QEMU_BACKEND_MEMFD, /* memory-backend-memfd: a memfd */
};

/* One -object memory-backend-*. */
struct linux_qemu_backend {
	char id[LINUX_QEMU_ID_MAX]; /* "": the one QEMU creates itself for -m (above) */
	enum linux_qemu_backend_kind kind;
	uint64_t size_bytes; /* 0 when size= is missing or malformed */
	char *mem_path;      /* memory-backend-file's mem-path=, owned; NULL for the others */
};

struct linux_qemu_cell {
	int nodeid;
	uint64_t start_bytes; /* guest-physical offset: the total of the cells before it */
	uint64_t size_bytes;
	int first_range; /* its vCPUs: ranges[first_range .. first_range + nr_ranges - 1] */
	int nr_ranges;
	int backend;         /* its memdev=: index into backends; -1 with mem= */
	uint64_t host_start; /* where QEMU mapped the backend (ram_layout.h); 0: not known */
};

struct linux_qemu_numa {
	int nr_cells;                   /* 0: no cells (error says why, "" if none were given) */
	struct linux_qemu_cell *cells;  /* ascending nodeid; owned */
	int nr_ranges;                  /* entries in ranges */
	struct linux_qemu_cpus *ranges; /* owned */
	uint64_t ram_bytes;             /* -m; without it, the cells' total */
	char error[LINUX_QEMU_ERROR_MAX];
	/* Every memory backend, in creation order (QEMU's own one last); owned. */
	int nr_backends;
	struct linux_qemu_backend *backends;
	/* Cells with backends whose RAM ram_layout.h could not locate: why ("" otherwise). */
	char layout_error[LINUX_QEMU_ERROR_MAX];
	/*
	 * Without memdev= cells: the backend of QEMU's one RAM block (index into backends), or
	 * -1; ram_block_start: where ram_layout.h located it (0: not); ram_block_error: why
	 * there is none, or why it was not located ("" otherwise).
	 */
	int ram_block;
	uint64_t ram_block_start;
	char ram_block_error[LINUX_QEMU_ERROR_MAX];
};

/*
 * Read the cells of argv[1..argc-1] into *out (zeroed first; free with linux_qemu_numa_free).
 * Returns 0 (cells, or none given), or -EINVAL (none: out->error says why).
 */
int linux_qemu_numa_parse(int argc, char *const *argv, struct linux_qemu_numa *out);
/* The cell (index into cells) holding vCPU index vcpu, or -1. */
int linux_qemu_numa_cell_of(const struct linux_qemu_numa *numa, int vcpu);
/* Drop the cells and keep the reason (printf-like) in numa->error; the backends stay. */
void linux_qemu_numa_fail(struct linux_qemu_numa *numa, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void linux_qemu_numa_free(struct linux_qemu_numa *numa);

/*
 * A size in QEMU's syntax (see above) in bytes; unit_bytes is what a number without a suffix
 * counts (1 for -object size=, 1 MiB for -numa mem= and -m).  0 or -EINVAL (syntax, overflow,
 * a fraction of a byte).
 */
int linux_qemu_size_parse(const char *s, uint64_t unit_bytes, uint64_t *bytes);

#endif

/*
 * load_opts.h - vnuma-load's command line: option and size parsing, and the QEMU-like
 * command line the tool re-executes itself with.
 *
 * Pure code (no I/O, no globals) so tests/unit/test_vnuma_load.c can check it.  Options are
 * documented in docs/vnuma-load.1.
 */
#ifndef VNUMAD_GUEST_TOOLS_LOAD_OPTS_H
#define VNUMAD_GUEST_TOOLS_LOAD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What the tool calls itself after re-executing: argv[0] and the main thread's comm (comm
 * holds at most 15 characters, which is also what a real QEMU's comm is cut to).
 */
#define LOAD_QEMU_ARGV0 "qemu-system-x86_64"
#define LOAD_QEMU_COMM  "qemu-system-x86"
/* Appended to "guest=NAME" as libvirt does; it is why a real QEMU names its vCPU threads. */
#define LOAD_QEMU_NAME_SUFFIX ",debug-threads=on"

/* Longest VM name (bytes); libvirt allows more, but vnumad prints names in tables. */
#define LOAD_NAME_MAX 64
/* Most vCPUs; keeps "CPU n/KVM" within the 15 characters of a thread name. */
#define LOAD_VCPUS_MAX 1024
/* Highest --node id accepted (the kernel's MAX_NUMNODES is at most 1024). */
#define LOAD_NODE_MAX 1023
/* RAM bounds (bytes): 1 MiB so every vCPU's slice holds lines; 1 PiB to stay far from overflow. */
#define LOAD_MEMORY_MIN ((uint64_t)1 << 20)
#define LOAD_MEMORY_MAX ((uint64_t)1 << 50)
/* Default RAM (bytes): 1 GiB, a small guest, larger than any CPU cache. */
#define LOAD_MEMORY_DEFAULT ((uint64_t)1 << 30)
/* A page, bytes: a cell holds whole pages. */
#define LOAD_PAGE_BYTES 4096
/*
 * --memory is rounded up to a multiple of this many bytes: 8 KiB, as QEMU rounds -m
 * (vl.c set_memory_options), so the RAM mapped is the RAM block a QEMU given the same -m
 * maps, and vnumad finds it by that size.
 */
#define LOAD_MEMORY_ALIGN_BYTES 8192
/* Longest accepted time (seconds), about 31 years: beyond is surely a typo. */
#define LOAD_SECONDS_MAX 1e9
/* Shortest --report period (seconds): shorter would flood the output. */
#define LOAD_REPORT_MIN_S 0.1
/* Default phase lengths (seconds), as in the simulator's scenario format (BRIEF 4.2). */
#define LOAD_PHASED_DEFAULT_S 60.0
/* Largest --cold, percent: some RAM must stay hot. */
#define LOAD_COLD_MAX_PCT      90
#define LOAD_ADVERSE_DEFAULT_S 10.0

enum load_workload {
	LOAD_WL_PRIVATE = 0,
	LOAD_WL_SHARED,
	LOAD_WL_CELLS,
	LOAD_WL_PHASED,
	LOAD_WL_ADVERSE,
	LOAD_WL_IDLE,
};

struct load_opts {
	char name[LOAD_NAME_MAX + 1]; /* --name or -name guest=NAME; "" until given */
	int vcpus;                    /* --vcpus, default 1 */
	uint64_t memory_bytes;        /* --memory, a multiple of LOAD_MEMORY_ALIGN_BYTES */
	int node;                     /* --node, -1 = not given */
	bool mbind;                   /* --mbind: place with set_mempolicy, not CPU affinity */
	enum load_workload workload;  /* --workload, default private */
	int cells;                    /* --cells, 0 = not given */
	double phase_s;               /* --phase, 0 = the workload's default */
	int cold_pct;                 /* --cold: percent of RAM never touched after first touch */
	bool pin;                     /* --pin: vCPU v on allowed CPU v mod count */
	double duration_s;            /* --duration, 0 = until SIGTERM or SIGINT */
	double report_s;              /* --report, 0 = only the final summary */
	uint64_t seed;                /* --seed, default 1 */
	bool hugepages;               /* --hugepages (default) / --no-hugepages */
	bool help, version;           /* -h/--help, -V/--version: nothing else is checked */
};

/*
 * Parse argv[1..argc-1] into *o (defaults first) and check the combination.  Accepts
 * "--opt VALUE" and "--opt=VALUE", and QEMU's "-name [guest=]NAME[,...]" so that the
 * re-executed command line parses too; QEMU's "-m", "-object" and "-numa" (which the
 * re-executed command line carries, load_qemu_args_build) are accepted
 * and ignored: --memory, --vcpus and --cells decide.  Returns 0, or -EINVAL with a message in
 * err.
 */
int load_opts_parse(struct load_opts *o, int argc, char **argv, char *err, size_t errlen);

/*
 * A size in the grammar of policy/units.h: a decimal number (fraction allowed) with an
 * optional binary unit B, K, M, G or T, alone or with "iB" (any case; no unit = MiB, as QEMU's
 * -m).  Rounded up to LOAD_MEMORY_ALIGN_BYTES; 0 or -EINVAL (bad syntax, below LOAD_MEMORY_MIN
 * or above LOAD_MEMORY_MAX) with the message in err.
 */
int load_size_parse(const char *s, uint64_t *bytes, char *err, size_t errlen);
/* Seconds: a decimal number above 0 and at most LOAD_SECONDS_MAX; 0 or -EINVAL. */
int load_seconds_parse(const char *s, double *seconds);
/* An unsigned decimal integer at most max; 0 or -EINVAL. */
int load_uint_parse(const char *s, uint64_t max, uint64_t *val);
/* Workload names as in the scenario format; 0 or -EINVAL. */
int load_workload_parse(const char *s, enum load_workload *w);
const char *load_workload_name(enum load_workload w);
/* The phase length in effect: --phase, or the workload's default (0 if it has no phases). */
double load_opts_phase_s(const struct load_opts *o);

/* Is argv0 (a path or a bare name) already LOAD_QEMU_ARGV0? */
bool load_is_qemu_argv0(const char *argv0);
/*
 * The command line to re-execute with: { LOAD_QEMU_ARGV0, "-name", "guest=NAME,debug-threads=on",
 * argv[1..argc-1], NULL }.  out holds argc + 3 pointers; name_arg (the "guest=..." text, which
 * out points into) holds name_arg_len bytes.  0, or -ENAMETOOLONG if name_arg is too small.
 */
int load_reexec_argv(int argc, char **argv, const char *name, char *name_arg, size_t name_arg_len,
                     char **out);
/*
 * The same with extra[0..nr_extra-1] after the name, as QEMU options:
 * { LOAD_QEMU_ARGV0, "-name", name_arg, extra..., argv[1..argc-1], NULL }; out holds
 * argc + 3 + nr_extra pointers.
 */
int load_reexec_argv_with(int argc, char **argv, const char *name, char *name_arg,
                          size_t name_arg_len, char *const *extra, int nr_extra, char **out);

/* QEMU options, each string malloc'd; free with load_qemu_args_free. */
struct load_qemu_args {
	int argc;
	char **argv;
};

/*
 * The QEMU options that describe the guest RAM the way libvirt's QEMU command line does, so
 * that vnumad's discovery finds it by its size: "-m" "size=<KiB>k" (the RAM mapped, whole),
 * then for --workload cells per cell c (load_pattern_cell_range, load_pattern_cell_vcpus)
 * "-object" "memory-backend-ram,id=cellC,size=<bytes>" and "-numa"
 * "node,nodeid=C,cpus=A-B,memdev=cellC".  0, or -ENOMEM (out is then empty).
 */
int load_qemu_args_build(const struct load_opts *o, struct load_qemu_args *out);
void load_qemu_args_free(struct load_qemu_args *a);

#endif

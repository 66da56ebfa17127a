/*
 * procfs.h - readers of the /proc files vnumad observes: /proc/vmstat's NUMA counters,
 * kernel.numa_balancing, a process's numa_maps and cmdline, and a thread's sched (NUMA hinting
 * faults), stat, status and comm.
 *
 * Each file has a pure parser on a (buffer, length) pair, safe on any bytes (errors: see
 * scan.h), and a reader taking a root directory (NULL or "/" = this machine) plus the ids.  A
 * process or thread that went away reads as -ENOENT: routine, not an error.  Outputs own their
 * allocations; free them with the matching _free function (safe on a zeroed or failed output).
 *
 * Implementations: procfs.c (vmstat, numa_balancing, stat, status, comm, cmdline),
 * numa_maps.c, maps.c, sched.c.
 */
#ifndef VNUMAD_HOST_LINUX_PROCFS_H
#define VNUMAD_HOST_LINUX_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/linux/scan.h"

/* Largest /proc text file we read, except numa_maps (a sched file is ~2 KiB, vmstat ~5). */
#define LINUX_PROCFS_MAX_BYTES ((size_t)1024 * 1024)
/*
 * Largest numa_maps we read, and most mappings in one: vm.max_map_count defaults to 65530
 * mappings of ~120 bytes each (8 MiB); 32 MiB and 256 Ki mappings leave room for hosts that
 * raise it, while bounding what a runaway process can make us allocate.
 */
#define LINUX_NUMA_MAPS_MAX_BYTES ((size_t)32 * 1024 * 1024)
#define LINUX_NUMA_MAPS_MAX_MAPS  ((size_t)256 * 1024)
/* Longest thread name we keep (TASK_COMM_LEN is 16; kernel workers show up to 64). */
#define LINUX_COMM_MAX 64
/* Most arguments we keep from a cmdline. */
#define LINUX_CMDLINE_MAX_ARGS 65536

/* ---- /proc/vmstat ---------------------------------------------------------------------- */

enum linux_vmstat_key {
	LINUX_VMSTAT_NUMA_HIT,
	LINUX_VMSTAT_NUMA_MISS,
	LINUX_VMSTAT_NUMA_FOREIGN,
	LINUX_VMSTAT_NUMA_INTERLEAVE,
	LINUX_VMSTAT_NUMA_LOCAL,
	LINUX_VMSTAT_NUMA_OTHER,
	LINUX_VMSTAT_NUMA_PTE_UPDATES,
	LINUX_VMSTAT_NUMA_HUGE_PTE_UPDATES,
	LINUX_VMSTAT_NUMA_HINT_FAULTS,
	LINUX_VMSTAT_NUMA_HINT_FAULTS_LOCAL,
	LINUX_VMSTAT_NUMA_PAGES_MIGRATED,
	LINUX_VMSTAT_PGMIGRATE_SUCCESS,
	LINUX_VMSTAT_PGMIGRATE_FAIL,
	LINUX_VMSTAT_NR_KEYS
};

/* Host-wide NUMA counters (pages or events since boot); absent keys read 0. */
struct linux_vmstat {
	uint64_t numa_hit;
	uint64_t numa_miss;
	uint64_t numa_foreign;
	uint64_t numa_interleave;
	uint64_t numa_local;
	uint64_t numa_other;
	uint64_t numa_pte_updates;
	uint64_t numa_huge_pte_updates;
	uint64_t numa_hint_faults;
	uint64_t numa_hint_faults_local;
	uint64_t numa_pages_migrated;
	uint64_t pgmigrate_success;
	uint64_t pgmigrate_fail;
	uint32_t present; /* bit (1u << enum linux_vmstat_key) per key found */
};

/* "name value" lines; unknown names are skipped, a kept one with a bad value is -EINVAL. */
int linux_vmstat_parse(const char *buf, size_t len, struct linux_vmstat *out);
int linux_vmstat_read(const char *root, struct linux_vmstat *out);

/* ---- /proc/sys/kernel/numa_balancing ---------------------------------------------------- */

#define LINUX_NUMA_BALANCING_NORMAL         1 /* classic automatic NUMA balancing */
#define LINUX_NUMA_BALANCING_MEMORY_TIERING 2 /* promotion from slow tiers (5.18+) */

/* The sysctl value 0..3 (bits above); -ENOENT on kernels without CONFIG_NUMA_BALANCING. */
int linux_numa_balancing_parse(const char *buf, size_t len, int *mode);
int linux_numa_balancing_read(const char *root, int *mode);

/* ---- /proc/<pid>/numa_maps -------------------------------------------------------------- */

/* Memory policy modes as numa_maps prints them (mm/mempolicy.c, policy_modes[]). */
enum linux_mpol_mode {
	LINUX_MPOL_DEFAULT,             /* "default" */
	LINUX_MPOL_PREFERRED,           /* "prefer:N" */
	LINUX_MPOL_BIND,                /* "bind:list" */
	LINUX_MPOL_INTERLEAVE,          /* "interleave:list" */
	LINUX_MPOL_LOCAL,               /* "local" */
	LINUX_MPOL_PREFERRED_MANY,      /* "prefer (many):list" (5.15+) */
	LINUX_MPOL_WEIGHTED_INTERLEAVE, /* "weighted interleave:list" (6.9+) */
	LINUX_MPOL_UNKNOWN,             /* a mode newer than this code */
};

/* Policy mode flags ("bind=static:0-1", "=relative", "=balancing", combined with | or ,). */
#define LINUX_MPOL_F_STATIC    0x1u
#define LINUX_MPOL_F_RELATIVE  0x2u
#define LINUX_MPOL_F_BALANCING 0x4u

/* Where a mapping's memory comes from. */
enum linux_map_kind {
	LINUX_MAP_ANON,  /* no file, not heap or stack */
	LINUX_MAP_FILE,  /* file= (includes memfd and hugetlbfs guest RAM) */
	LINUX_MAP_HEAP,  /* heap */
	LINUX_MAP_STACK, /* stack */
};

/* Pages of one mapping on one node ("N<node>=<pages>"). */
struct linux_map_node {
	int node;
	uint64_t pages;
};

/*
 * One line of numa_maps (fs/proc/task_mmu.c, show_numa_map).  Page counts are in units of
 * kernelpagesize_kib (base pages, or huge pages for hugetlbfs).  The kernel prints only
 * non-zero counters; it prints mapped= only when it differs from both anon= and dirty=, and
 * active= only when below the page count, so those read 0 when absent.
 */
struct linux_numa_map {
	uint64_t start; /* virtual address */
	enum linux_mpol_mode mode;
	unsigned int mode_flags; /* LINUX_MPOL_F_* */
	size_t policy_first;     /* the policy's node list in linux_numa_maps.policy_nodes */
	int nr_policy_nodes;     /* 0 for default and local */
	enum linux_map_kind kind;
	char *file; /* file= path, \ooo escapes decoded; NULL unless FILE */
	bool huge;  /* hugetlbfs mapping */
	uint64_t anon, dirty, mapped, mapmax, swapcache, active, writeback;
	uint64_t kernelpagesize_kib; /* 0 when the kernel printed none (no pages mapped) */
	uint64_t pages;              /* sum of the N<node>= counts */
	size_t node_first;           /* this map's entries in linux_numa_maps.node_pages */
	int nr_nodes;
};

/*
 * A process's numa_maps.  Owns maps (and each map's file), node_pages, policy_nodes and
 * node_bytes.  Per-map arrays are slices of the shared ones, so a map costs one allocation
 * (its file name) at most.
 */
struct linux_numa_maps {
	size_t nr_maps;
	struct linux_numa_map *maps;
	size_t nr_node_pages;
	struct linux_map_node *node_pages; /* ascending node within each map */
	size_t nr_policy_nodes;
	int *policy_nodes;    /* ascending within each map */
	int nr_node_bytes;    /* entries in node_bytes: highest node id seen + 1 */
	uint64_t *node_bytes; /* resident bytes per node id, all mappings */
	uint64_t total_bytes;
};

/* A file that does not end in a newline was cut short: -EINVAL. */
int linux_numa_maps_parse(const char *buf, size_t len, struct linux_numa_maps *out);
int linux_numa_maps_read(const char *root, int pid, struct linux_numa_maps *out);
void linux_numa_maps_free(struct linux_numa_maps *maps);

/* ---- /proc/<pid>/maps ------------------------------------------------------------------- */

/* One line of /proc/<pid>/maps (maps.c). */
struct linux_vma {
	uint64_t start, end;
	char perms[5]; /* e.g. "rw-p" */
	char *path;    /* NULL when the line names nothing; owned, as the kernel prints it */
};

struct linux_vmas {
	size_t nr;
	struct linux_vma *vmas; /* ascending start; owned */
};

/*
 * Parse maps ("start-end perms offset dev inode [path]" lines).  -EINVAL when malformed or
 * cut short, -EFBIG past LINUX_NUMA_MAPS_MAX_MAPS lines.  Free with linux_vmas_free.
 */
int linux_vmas_parse(const char *buf, size_t len, struct linux_vmas *out);
int linux_vmas_read(const char *root, int pid, struct linux_vmas *out);
void linux_vmas_free(struct linux_vmas *vmas);

/*
 * For each of starts[0..n): the end address of the mapping that starts exactly there, or 0
 * when none does (it was unmapped, or the kernel merged it into a neighbour that starts
 * earlier).  -EINVAL on a malformed or cut-short file (as linux_vmas_parse).
 */
int linux_maps_ends_parse(const char *buf, size_t len, const uint64_t *starts, int n,
                          uint64_t *ends);
int linux_maps_ends_read(const char *root, int pid, const uint64_t *starts, int n, uint64_t *ends);

/* ---- /proc/<pid>/task/<tid>/sched ------------------------------------------------------- */

/*
 * One "numa_faults node=N task_private=A task_shared=B group_private=C group_shared=D" line
 * (kernel/sched/debug.c).  Counts are in base pages, decayed by half each scan pass.
 */
struct linux_sched_faults {
	int node;
	uint64_t task_private;
	uint64_t task_shared;
	uint64_t group_private;
	uint64_t group_shared;
};

/* What a sched file held; NUMA lines exist only with CONFIG_NUMA_BALANCING. */
#define LINUX_SCHED_HAS_NUMA 0x1u /* numa_preferred_nid, total_numa_faults, ... */
#define LINUX_SCHED_HAS_NODE 0x2u /* the current_node=, numa_group_id= line */

struct linux_sched {
	uint64_t sum_exec_runtime_ns; /* se.sum_exec_runtime (printed in ms.ns) */
	uint64_t nr_migrations;       /* se.nr_migrations (CPU migrations) */
	uint64_t numa_scan_seq;       /* mm->numa_scan_seq */
	uint64_t numa_pages_migrated;
	uint64_t total_numa_faults;
	int numa_preferred_nid; /* -1 = none */
	int current_node;
	int numa_group_id;    /* 0 = no NUMA group */
	unsigned int present; /* LINUX_SCHED_HAS_* */
	int nr_faults;
	struct linux_sched_faults *faults; /* ascending node, owned */
};

/*
 * Skips the "comm (pid, #threads: n)" header up to the dashed line (comm may hold anything),
 * tolerates unknown lines, requires se.sum_exec_runtime.
 */
int linux_sched_parse(const char *buf, size_t len, struct linux_sched *out);
int linux_sched_read(const char *root, int pid, int tid, struct linux_sched *out);
void linux_sched_free(struct linux_sched *sched);

/* ---- /proc/<pid>/task/<tid>/stat -------------------------------------------------------- */

/* The fields of stat we use (proc(5) numbering).  Times are in clock ticks (USER_HZ). */
struct linux_task_stat {
	int tid;                   /* field 1 */
	char comm[LINUX_COMM_MAX]; /* field 2, without the parentheses, truncated */
	char state;                /* field 3: R, S, D, Z, T, t, X, I, ... */
	uint64_t utime_ticks;      /* field 14 */
	uint64_t stime_ticks;      /* field 15 */
	int num_threads;           /* field 20 */
	uint64_t starttime_ticks;  /* field 22 */
	int processor;             /* field 39: CPU last run on */
};

/* comm may contain blanks and parentheses: it ends at the LAST ')'. */
int linux_task_stat_parse(const char *buf, size_t len, struct linux_task_stat *out);
int linux_task_stat_read(const char *root, int pid, int tid, struct linux_task_stat *out);

/* ---- /proc/<pid>/task/<tid>/status ------------------------------------------------------ */

struct linux_task_status {
	int tgid;
	int pid;
	int nr_cpus_allowed;
	int *cpus_allowed;     /* ascending, owned */
	bool has_mems_allowed; /* false on kernels without cpusets */
	int nr_mems_allowed;
	int *mems_allowed; /* ascending, owned */
	/*
	 * VmPin: the process's memory the kernel holds pinned for a device or io_uring
	 * (pin_user_pages FOLL_LONGTERM: VFIO's guest RAM, registered buffers); such pages
	 * cannot be migrated.  The same in every thread's file; 0 when the line is absent.
	 */
	uint64_t vm_pin_kib;
};

/* Needs Tgid, Pid and Cpus_allowed_list; other lines are skipped. */
int linux_task_status_parse(const char *buf, size_t len, struct linux_task_status *out);
int linux_task_status_read(const char *root, int pid, int tid, struct linux_task_status *out);
void linux_task_status_free(struct linux_task_status *status);

/* ---- /proc/<pid>/task/<tid>/comm and /proc/<pid>/cmdline -------------------------------- */

/* The thread name without its newline; -EFBIG past LINUX_COMM_MAX - 1 bytes. */
int linux_comm_parse(const char *buf, size_t len, char comm[LINUX_COMM_MAX]);
int linux_comm_read(const char *root, int pid, int tid, char comm[LINUX_COMM_MAX]);

/* NUL-separated arguments.  Empty (kernel thread, zombie): argc 0.  Owns argv and strings. */
struct linux_cmdline {
	int argc;
	char **argv; /* argc strings, then NULL */
};

int linux_cmdline_parse(const char *buf, size_t len, struct linux_cmdline *out);
int linux_cmdline_read(const char *root, int pid, struct linux_cmdline *out);
void linux_cmdline_free(struct linux_cmdline *cmdline);

#endif

/*
 * discover.h - find the QEMU processes on a Linux host and what vnumad needs to know about
 * each: its name, its vCPU threads, its guest RAM size and where that RAM sits.
 *
 * Everything is read under a root directory (NULL or "/" = this machine) so tests run on the
 * fixture trees in tests/fixtures/linux/qemu-*.  A process or thread that vanishes while we
 * read is routine and silently dropped; a process whose files are malformed is skipped and
 * counted, with the reason, in struct linux_discover_skips.
 *
 * Rules:
 * - A QEMU process: its comm starts with "qemu-system-" or is "qemu-kvm", or so does the
 *   basename of its argv[0].
 * - Name: the -name value ("guest=NAME,..." or "NAME,..."; ",," is a literal comma), else
 *   "pid-N".
 * - vCPUs: threads named "CPU n/KVM" or "CPU n/TCG" (QEMU names them so with
 *   -name ...,debug-threads=on, which libvirt always passes); sorted by index n, gaps kept.
 * - Guest RAM mappings: the mappings of the memory backends that hold guest RAM, found for
 *   certain in /proc/<pid>/maps by what they are (ram_layout.h): each vNUMA cell's memdev=,
 *   else QEMU's one RAM block (-machine memory-backend=, or the backend QEMU makes itself for
 *   -m and -mem-path, qemu_numa.h).  Only when that finds none (no -m, a size no mapping
 *   has, several mappings of it that cannot be told apart, maps unreadable): by size, among
 *   the anonymous, memfd and hugetlbfs mappings of numa_maps the largest by resident bytes and
 *   every other one holding at least 1/LINUX_RAM_MAP_FRACTION of it, and ram_guess says why.
 * - Guest RAM size: the -m option ("-m 1024", "-m 4G", "-m size=2G,maxmem=..."; no suffix
 *   means MiB); without one, the total of the vNUMA cells, or the size of the backend
 *   -machine memory-backend= names; without those, the resident size of the RAM mappings.
 * - vNUMA cells: from -numa node, -object memory-backend-* and -m (qemu_numa.h), kept only when
 *   every vCPU thread's index lies in a cell; otherwise none, and numa.error says why.
 */
#ifndef VNUMAD_HOST_LINUX_DISCOVER_H
#define VNUMAD_HOST_LINUX_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dirent.h>

#include "host/linux/procfs.h"
#include "host/linux/qemu_numa.h"
#include "policy/model.h"

/*
 * When guest RAM is found by size only (discover.h): a mapping counts as guest RAM when it
 * holds at least 1/LINUX_RAM_MAP_FRACTION of the largest candidate's resident bytes.  Default
 * 8: a per-cell split of up to 8 uneven cells is kept, while QEMU's own heaps and thread arenas
 * (a few MiB) are not; but so is any other large mapping (QEMU's video RAM, a sanitizer's
 * shadow memory), which is why it is only the fallback.
 */
#define LINUX_RAM_MAP_FRACTION 8
/* Length of a VM name we keep, with its NUL (struct snap_vm.name has 64 bytes). */
#define LINUX_VM_NAME_MAX SNAP_VM_NAME_MAX /* policy/model.h */

struct linux_vm_vcpu {
	int index; /* n of "CPU n/KVM" */
	int tid;
	/*
	 * Its stat, status and sched kept open (pfile.h), owned by the discovery cache that
	 * found it (discover_cache.h) and valid until its next scan; NULL: read by path.
	 */
	struct linux_task_files *files;
};

struct linux_vm {
	int pid;
	char name[LINUX_VM_NAME_MAX];
	/*
	 * Not read this scan (linux_discover_opts.observe_want said no): vcpus are the threads
	 * the last scan that read it found, and nothing of its RAM was read (numa has no layout,
	 * ram_walked is false).  The owner carries its last reading instead.
	 */
	bool carried;
	/* Where the owner keeps its last reading of the vCPU threads (snapshot.h); NULL: none. */
	struct linux_vm_obs *kept;
	int nr_vcpus;
	struct linux_vm_vcpu *vcpus; /* ascending index, owned */
	uint64_t mem_mib;            /* guest RAM size */
	bool mem_from_cmdline;       /* mem_mib came from -m or the cells (else numa_maps) */
	/* Guest RAM mappings, from numa_maps. */
	char ram_guess[LINUX_QEMU_ERROR_MAX]; /* why they were found by size only; "" if not */
	int nr_ram_maps;
	uint64_t *ram_starts; /* their start addresses, ascending; owned */
	bool ram_huge;        /* some RAM mapping is hugetlbfs-backed */
	bool ram_bound;       /* some RAM mapping has an explicit policy without =balancing */
	char ram_policy[32];  /* the first such policy, e.g. "bind:1", for messages */
	/*
	 * numa_maps was read this round (linux_discover_opts): without it the RAM mappings found
	 * by size, ram_huge, ram_bound and resident_kib are unknown (empty), and mem_mib is 0
	 * unless mem_from_cmdline.  walk_ms: what reading it cost.
	 */
	bool ram_walked;
	double walk_ms;
	/*
	 * Set by the owner's walk_want when it skipped the walk of a VM seen for the first time
	 * (residency.h, linux_resid_first_walk_skip): the walk's expected cost, ms; 0 otherwise.
	 */
	double walk_skipped_ms;
	int nr_resident;        /* entries in resident_kib: highest node id + 1 */
	uint64_t *resident_kib; /* per OS node id, guest RAM only; owned */
	/* Guest vNUMA cells (nr_cells 0: none; numa.error says why when -numa was given). */
	struct linux_qemu_numa numa;
};

/* Why processes were skipped (malformed files); vanished ones are not counted. */
struct linux_discover_skips {
	int skipped;
	char reason[128]; /* the last reason, e.g. "pid 5500: numa_maps: Invalid argument" */
};

/*
 * Scan <root>/proc, reading every process afresh (discover_cache.h keeps what it can between
 * scans; this is one scan of an empty cache that keeps no fds).  *out is a malloc'd array of *nr
 * VMs, ascending pid (NULL when none); free it with linux_vms_free.  Returns 0, or -errno when
 * /proc itself cannot be read.
 */
int linux_vms_discover(const char *root, struct linux_vm **out, size_t *nr);
/* The same, reporting skipped processes into *skips (may be NULL). */
int linux_vms_discover_skips(const char *root, struct linux_vm **out, size_t *nr,
                             struct linux_discover_skips *skips);
void linux_vms_free(struct linux_vm *vms, size_t nr);

struct linux_vm_obs;

/*
 * Which VMs' /proc/PID/numa_maps to read: walk_want(ctx, vm) for each QEMU process found (its
 * pid, command line and the RAM layout maps gave are filled in; it may set walk_skipped_ms);
 * NULL opts or walk_want: every one.  /proc/PID/maps (cheap) is read for every VM whatever
 * the answer.
 */
struct linux_discover_opts {
	bool (*walk_want)(void *ctx, struct linux_vm *vm);
	/*
	 * Read this VM this scan (its task directory, maps and numa_maps)?  NULL: every VM.
	 * Asked before walk_want; a VM whose threads are not known yet is read whatever it says.
	 */
	bool (*observe_want)(void *ctx, int pid);
	void *ctx;
};
/* linux_vms_discover_skips, walking only the VMs opts wants. */
int linux_vms_discover_opts(const char *root, struct linux_vm **out, size_t *nr,
                            struct linux_discover_skips *skips,
                            const struct linux_discover_opts *opts);

/* ---- the steps of discovery, for discover_cache.c --------------------------------------- */

/*
 * Read pid's comm and cmdline (*cmd: free with linux_cmdline_free, also on error).  1: a
 * QEMU process (the rule above), 0: not one, -ENOENT: gone, -errno: malformed (*what names
 * the file).
 */
int linux_vm_identify(const char *root, int pid, char comm[LINUX_COMM_MAX],
                      struct linux_cmdline *cmd, const char **what);
/* Name, -m, the vNUMA cells and QEMU's RAM block from the command line into vm. */
void linux_vm_cmdline_apply(struct linux_vm *vm, const struct linux_cmdline *cmd);
/* Keep the cells only if every vCPU thread lies in one (QEMU's cpus= name cpu-indexes). */
void linux_vm_cells_check(struct linux_vm *vm);
/*
 * How much of vm's guest RAM is resident per node: numa_maps (a walk of every page table of
 * the process, see residency.h), restricted to the memory backends' mappings when
 * linux_ram_layout_read found them in vm->numa (read every scan, cheap).  Sets ram_walked and
 * walk_ms.  0 or -errno of numa_maps.
 */
int linux_vm_ram_walk(const char *root, struct linux_vm *vm);
/* Free what vm owns and zero it. */
void linux_vm_clear(struct linux_vm *vm);
/* qsort order of struct linux_vm_vcpu: ascending index, then tid. */
int linux_vm_vcpu_cmp(const void *a, const void *b);
/* A decimal directory name as a pid; -1 if it is not one. */
int linux_dirent_pid(const char *name);
/* opendir(<root><sub>), counted as an open (fileio.h); NULL with errno set. */
DIR *linux_proc_dir_open(const char *root, const char *sub);
/* Count a skipped process into skips (may be NULL), with its reason. */
void linux_discover_skip_note(struct linux_discover_skips *skips, int pid, const char *what,
                              int err);

/* Pure helpers, exposed for tests. */
/* The VM name from a -name value; false when it holds none. */
bool linux_qemu_name_parse(const char *value, char name[LINUX_VM_NAME_MAX]);
/* A -m value in MiB; -EINVAL when malformed. */
int linux_qemu_mem_parse(const char *value, uint64_t *mib);
/* "CPU n/KVM" or "CPU n/TCG": the vCPU index, or -1. */
int linux_vcpu_comm_index(const char *comm);

#endif

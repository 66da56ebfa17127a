/*
 * discover.c - QEMU processes on a Linux host: names, vCPU threads, guest RAM (discover.h).
 */
#include "host/linux/discover.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/fileio.h"
#include "host/linux/procfs.h"
#include "host/linux/ram_layout.h"
#include "policy/util.h"

static bool
comm_is_qemu(const char *comm)
{
	return strncmp(comm, "qemu-system-", 12) == 0 || strcmp(comm, "qemu-kvm") == 0;
}

static bool
argv0_is_qemu(const struct linux_cmdline *cmd)
{
	const char *base;

	if (cmd->argc < 1)
		return false;
	base = strrchr(cmd->argv[0], '/');
	return comm_is_qemu(base ? base + 1 : cmd->argv[0]);
}

/* Copy one comma-separated item of a QEMU option (",," = ','); returns what follows it. */
static const char *
opt_item_copy(const char *p, char *dst, size_t size)
{
	size_t n = 0;

	while (*p != '\0') {
		if (*p == ',') {
			if (p[1] != ',')
				break;
			p++;
		}
		if (n + 1 < size)
			dst[n++] = *p;
		p++;
	}
	dst[n] = '\0';
	return *p == ',' ? p + 1 : p;
}

/* Copy s into name, truncated to fit. */
static void
name_set(char name[LINUX_VM_NAME_MAX], const char *s)
{
	size_t n = strnlen(s, LINUX_VM_NAME_MAX - 1);

	memcpy(name, s, n);
	name[n] = '\0';
}

bool
linux_qemu_name_parse(const char *value, char name[LINUX_VM_NAME_MAX])
{
	char item[LINUX_VM_NAME_MAX + 8];
	const char *p = value;
	bool first = true;

	name[0] = '\0';
	while (*p != '\0') {
		p = opt_item_copy(p, item, sizeof(item));
		if (strncmp(item, "guest=", 6) == 0)
			name_set(name, item + 6);
		else if (first && strchr(item, '=') == NULL)
			name_set(name, item);
		first = false;
	}
	return name[0] != '\0';
}

/* "<digits>[kKmMgGtT]" in MiB (no suffix: MiB, as QEMU reads it). */
static int
mem_size_parse(const char *s, uint64_t *mib)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || v > UINT64_MAX / (1024 * 1024))
		return -EINVAL;
	switch (*end) {
	case '\0':
	case 'm':
	case 'M':
		*mib = v;
		break;
	case 'k':
	case 'K':
		*mib = v / 1024;
		break;
	case 'g':
	case 'G':
		*mib = v * 1024;
		break;
	case 't':
	case 'T':
		*mib = v * 1024 * 1024;
		break;
	default:
		return -EINVAL;
	}
	if (*end != '\0' && end[1] != '\0' && !(end[1] == 'B' && end[2] == '\0'))
		return -EINVAL;
	return 0;
}

int
linux_qemu_mem_parse(const char *value, uint64_t *mib)
{
	char item[64];
	const char *p = value;
	bool first = true;
	int ret = -EINVAL;

	while (*p != '\0') {
		p = opt_item_copy(p, item, sizeof(item));
		if (strncmp(item, "size=", 5) == 0)
			ret = mem_size_parse(item + 5, mib);
		else if (first && strchr(item, '=') == NULL)
			ret = mem_size_parse(item, mib);
		first = false;
	}
	return ret;
}

int
linux_vcpu_comm_index(const char *comm)
{
	char *end;
	long n;

	if (strncmp(comm, "CPU ", 4) != 0 || comm[4] < '0' || comm[4] > '9')
		return -1;
	n = strtol(comm + 4, &end, 10);
	if (n > INT_MAX / 2 || (strcmp(end, "/KVM") != 0 && strcmp(end, "/TCG") != 0))
		return -1;
	return (int)n;
}

void
linux_discover_skip_note(struct linux_discover_skips *skips, int pid, const char *what, int err)
{
	if (skips == NULL)
		return;
	skips->skipped++;
	snprintf(skips->reason, sizeof(skips->reason), "pid %d: %s: %s", pid, what, strerror(-err));
}

void
linux_vm_cmdline_apply(struct linux_vm *vm, const struct linux_cmdline *cmd)
{
	linux_qemu_numa_parse(cmd->argc, cmd->argv, &vm->numa);
	for (int i = 1; i + 1 < cmd->argc; i++) {
		const char *opt = cmd->argv[i];

		if (opt[0] == '-' && opt[1] == '-')
			opt++;
		if (strcmp(opt, "-name") == 0)
			linux_qemu_name_parse(cmd->argv[i + 1], vm->name);
		else if (strcmp(opt, "-m") == 0 &&
		         linux_qemu_mem_parse(cmd->argv[i + 1], &vm->mem_mib) == 0)
			vm->mem_from_cmdline = true;
	}
	if (vm->name[0] == '\0')
		snprintf(vm->name, sizeof(vm->name), "pid-%d", vm->pid);
	if (!vm->mem_from_cmdline && vm->numa.nr_cells > 0) {
		vm->mem_mib = vm->numa.ram_bytes >> 20; /* QEMU checked them against its RAM */
		vm->mem_from_cmdline = true;
	}
	if (!vm->mem_from_cmdline && vm->numa.ram_block >= 0) {
		/* -machine memory-backend= without -m: QEMU takes the backend's size */
		vm->mem_mib = vm->numa.backends[vm->numa.ram_block].size_bytes >> 20;
		vm->mem_from_cmdline = true;
	}
}

void
linux_vm_cells_check(struct linux_vm *vm)
{
	for (int i = 0; i < vm->nr_vcpus && vm->numa.nr_cells > 0; i++)
		if (linux_qemu_numa_cell_of(&vm->numa, vm->vcpus[i].index) < 0)
			linux_qemu_numa_fail(&vm->numa, "vCPU %d is in no -numa node",
			                     vm->vcpus[i].index);
}

int
linux_vm_vcpu_cmp(const void *a, const void *b)
{
	const struct linux_vm_vcpu *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int
linux_dirent_pid(const char *name)
{
	char *end;
	long v;

	if (name[0] < '0' || name[0] > '9')
		return -1;
	v = strtol(name, &end, 10);
	return *end == '\0' && v > 0 && v <= INT_MAX ? (int)v : -1;
}

DIR *
linux_proc_dir_open(const char *root, const char *sub)
{
	char path[PATH_MAX];
	bool real = root == NULL || strcmp(root, "/") == 0;

	if (snprintf(path, sizeof(path), "%s%s", real ? "" : root, sub) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fileio_count_open();
	return opendir(path);
}

/*
 * hugetlbfs: numa_maps prints "huge"; a file mapping with pages of 2 MiB or more, or one under
 * /dev/hugepages, is one too (page cache never uses huge kernelpagesize_kB).
 */
static bool
map_is_huge(const struct linux_numa_map *m)
{
	if (m->huge)
		return true;
	return m->kind == LINUX_MAP_FILE &&
	       (m->kernelpagesize_kib >= 2048 ||
	        (m->file != NULL && strncmp(m->file, "/dev/hugepages", 14) == 0));
}

static bool
map_is_ram_candidate(const struct linux_numa_map *m)
{
	if (m->kind == LINUX_MAP_ANON)
		return true;
	if (m->kind != LINUX_MAP_FILE || m->file == NULL)
		return false;
	return map_is_huge(m) || strncmp(m->file, "/memfd:", 7) == 0;
}

static uint64_t
map_bytes(const struct linux_numa_map *m)
{
	uint64_t kib = m->kernelpagesize_kib ? m->kernelpagesize_kib : 4;

	return m->pages * kib * 1024;
}

/* Explicit policy without the balancing flag: the kernel will not scan this mapping. */
static bool
map_is_bound(const struct linux_numa_map *m)
{
	return m->mode != LINUX_MPOL_DEFAULT && !(m->mode_flags & LINUX_MPOL_F_BALANCING);
}

static void
policy_describe(const struct linux_numa_maps *maps, const struct linux_numa_map *m, char *buf,
                size_t size)
{
	static const char *const names[] = {"default",
	                                    "prefer",
	                                    "bind",
	                                    "interleave",
	                                    "local",
	                                    "prefer (many)",
	                                    "weighted interleave",
	                                    "unknown"};
	int n = snprintf(buf, size, "%s", names[m->mode]);

	for (int i = 0; i < m->nr_policy_nodes && n > 0 && (size_t)n < size; i++)
		n += snprintf(buf + n, size - (size_t)n, "%c%d", i ? ',' : ':',
		              maps->policy_nodes[m->policy_first + (size_t)i]);
}

static void
vm_ram_add(struct linux_vm *vm, const struct linux_numa_maps *maps, const struct linux_numa_map *m)
{
	uint64_t kib = m->kernelpagesize_kib ? m->kernelpagesize_kib : 4;

	vm->ram_starts =
	    xreallocarray(vm->ram_starts, (size_t)vm->nr_ram_maps + 1, sizeof(uint64_t));
	vm->ram_starts[vm->nr_ram_maps++] = m->start;
	vm->ram_huge |= map_is_huge(m);
	if (map_is_bound(m) && !vm->ram_bound) {
		vm->ram_bound = true;
		policy_describe(maps, m, vm->ram_policy, sizeof(vm->ram_policy));
	}
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct linux_map_node *np = &maps->node_pages[m->node_first + (size_t)i];

		if (np->node >= vm->nr_resident) {
			vm->resident_kib =
			    xreallocarray(vm->resident_kib, (size_t)np->node + 1, sizeof(uint64_t));
			memset(vm->resident_kib + vm->nr_resident, 0,
			       (size_t)(np->node + 1 - vm->nr_resident) * sizeof(uint64_t));
			vm->nr_resident = np->node + 1;
		}
		vm->resident_kib[np->node] += np->pages * kib;
	}
}

/* Without located cells: the largest RAM candidates by resident bytes (see discover.h). */
static void
vm_ram_largest(struct linux_vm *vm, const struct linux_numa_maps *maps)
{
	uint64_t largest = 0;

	for (size_t i = 0; i < maps->nr_maps; i++)
		if (map_is_ram_candidate(&maps->maps[i]) && map_bytes(&maps->maps[i]) > largest)
			largest = map_bytes(&maps->maps[i]);
	if (largest == 0)
		return;
	for (size_t i = 0; i < maps->nr_maps; i++) {
		const struct linux_numa_map *m = &maps->maps[i];

		if (map_is_ram_candidate(m) && map_bytes(m) * LINUX_RAM_MAP_FRACTION >= largest)
			vm_ram_add(vm, maps, m);
	}
}

/* True when addr lies in one of ram[0..nr). */
static bool
vm_addr_in(const struct linux_ram_range *ram, int nr, uint64_t addr)
{
	for (int i = 0; i < nr; i++)
		if (addr >= ram[i].start && addr - ram[i].start < ram[i].len)
			return true;
	return false;
}

/* Why guest RAM was found by size only (ram_layout.h located none of it). */
static void
vm_ram_guess_note(struct linux_vm *vm)
{
	const struct linux_qemu_numa *numa = &vm->numa;
	const char *why = numa->ram_block_error;

	if (why[0] == '\0' && numa->error[0] != '\0')
		why = "its -numa nodes' memory backends were not laid out";
	else if (why[0] == '\0')
		why = "no -m or memory backend matched";
	snprintf(vm->ram_guess, sizeof(vm->ram_guess), "%s", why);
}

/*
 * Pick the guest RAM mappings and sum their pages per node: every mapping inside the memory
 * backends ram_layout.h located (the cells', or the one of QEMU's RAM block), resident or
 * not; when it located none, vm_ram_largest, and ram_guess says why.
 */
static void
vm_ram_apply(struct linux_vm *vm, const struct linux_numa_maps *maps)
{
	struct linux_ram_range *ram;
	uint64_t total_kib = 0;
	int nr;

	if ((nr = linux_ram_layout_ranges(&vm->numa, &ram)) > 0) {
		for (size_t i = 0; i < maps->nr_maps; i++)
			if (vm_addr_in(ram, nr, maps->maps[i].start))
				vm_ram_add(vm, maps, &maps->maps[i]);
	} else {
		vm_ram_largest(vm, maps);
		if (nr == 0) /* else the cells' RAM was not located: layout_error says why */
			vm_ram_guess_note(vm);
	}
	free(ram);
	for (int n = 0; n < vm->nr_resident; n++)
		total_kib += vm->resident_kib[n];
	if (!vm->mem_from_cmdline)
		vm->mem_mib = total_kib / 1024;
}

void
linux_vm_clear(struct linux_vm *vm)
{
	free(vm->ram_starts);
	free(vm->vcpus);
	free(vm->resident_kib);
	linux_qemu_numa_free(&vm->numa);
	memset(vm, 0, sizeof(*vm));
}

int
linux_vm_identify(const char *root, int pid, char comm[LINUX_COMM_MAX], struct linux_cmdline *cmd,
                  const char **what)
{
	int ret;

	memset(cmd, 0, sizeof(*cmd));
	*what = "comm";
	if ((ret = linux_comm_read(root, pid, pid, comm)) < 0)
		return ret;
	*what = "cmdline";
	if ((ret = linux_cmdline_read(root, pid, cmd)) < 0)
		return ret;
	return comm_is_qemu(comm) || argv0_is_qemu(cmd);
}

int
linux_vm_ram_walk(const char *root, struct linux_vm *vm)
{
	struct linux_numa_maps maps = {0};
	struct timespec t0, t1;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((ret = linux_numa_maps_read(root, vm->pid, &maps)) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		vm->walk_ms =
		    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
		vm_ram_apply(vm, &maps);
		vm->ram_walked = true;
	}
	linux_numa_maps_free(&maps);
	return ret;
}

void
linux_vms_free(struct linux_vm *vms, size_t nr)
{
	for (size_t i = 0; vms != NULL && i < nr; i++)
		linux_vm_clear(&vms[i]);
	free(vms);
}

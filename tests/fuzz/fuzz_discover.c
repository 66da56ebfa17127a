/*
 * fuzz_discover.c - libFuzzer target for QEMU discovery on a /proc tree
 * (host/linux/discover.c): each process's comm, cmdline, threads' comm, numa_maps, maps and
 * personality, and /proc/sys/vm/legacy_va_layout, through every reader discovery uses
 * (procfs.c, numa_maps.c, qemu_numa.c, maps.c, ram_layout.c).
 *
 * Input: files in the form of tests/fuzz/fuzz_util.h ("%% proc/5100/numa_maps",
 * "%%0 proc/5100/cmdline" one argument per line), written into an emptied private directory
 * that linux_vms_discover_skips() takes as its root.  Built by `make fuzz`
 * (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/discover/
 * (tests/unit/test_fuzz_replay_host.c).  Returns 0 when VMs were found and none skipped,
 * -EINVAL when a process was skipped as malformed, -ENOENT when no VM was there.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/discover.h"
#include "host/linux/sysfs.h"
#include "tests/fuzz/fuzz_qemu_check.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_discover_run(const uint8_t *data, size_t size);

static void
fuzz_discover_vm_check(const struct linux_vm *vm)
{
	if (vm->pid < 1 || vm->name[0] == '\0' ||
	    memchr(vm->name, '\0', sizeof(vm->name)) == NULL || vm->nr_vcpus < 0 ||
	    vm->nr_ram_maps < 0 || vm->nr_resident < 0 || vm->nr_resident > LINUX_MAX_NODES ||
	    memchr(vm->ram_policy, '\0', sizeof(vm->ram_policy)) == NULL)
		abort();
	for (int i = 0; i < vm->nr_vcpus; i++)
		if (vm->vcpus[i].index < 0 || vm->vcpus[i].tid < 1 ||
		    (i > 0 && vm->vcpus[i].index < vm->vcpus[i - 1].index))
			abort(); /* ascending index */
	for (int i = 0; vm->numa.nr_cells > 0 && i < vm->nr_vcpus; i++)
		if (linux_qemu_numa_cell_of(&vm->numa, vm->vcpus[i].index) < 0)
			abort(); /* cells are kept only when every vCPU is in one */
	fuzz_qemu_numa_check(&vm->numa);
}

int
fuzz_discover_run(const uint8_t *data, size_t size)
{
	const char *root = fuzz_tree_write(data, size);
	struct linux_discover_skips skips;
	struct linux_vm *vms = NULL;
	size_t nr = 0;
	int ret = linux_vms_discover_skips(root, &vms, &nr, &skips);

	if (ret > 0 || (ret < 0 && nr != 0))
		abort(); /* -errno: no proc directory to read (absent, or a file) */
	if ((nr == 0) != (vms == NULL) || skips.skipped < 0 ||
	    memchr(skips.reason, '\0', sizeof(skips.reason)) == NULL)
		abort();
	for (size_t i = 0; i < nr; i++) {
		fuzz_discover_vm_check(&vms[i]);
		if (i > 0 && vms[i].pid <= vms[i - 1].pid)
			abort(); /* ascending pid, each once */
	}
	linux_vms_free(vms, nr);
	return skips.skipped > 0 ? -EINVAL : nr > 0 ? 0 : -ENOENT;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_discover_run(data, size);
	return 0;
}
#endif

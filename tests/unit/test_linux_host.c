/*
 * test_linux_host.c - the Linux backend of struct host_ops (host/linux/linux_host.c):
 * - on the fixture tree tests/fixtures/linux/qemu-2node: what the snapshot holds (uptime,
 *   CPU use, sampling source per VM, the host description, the note on a VM whose guest RAM
 *   was found by size only) and that a tree is never acted on;
 * - on this machine, against a vnuma-load VM started by the test: discovery (its guest RAM
 *   found by its -m, and nothing else counted, even built with a sanitizer), CPU use from two
 *   samples, a vCPU pin landing as the node's CPUs, a memory move walked to its end with its
 *   results reported, and the routine errors (unknown VM, range outside RAM, levers Linux has
 *   not got);
 * - the /proc/<pid>/maps reader.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/host.h"
#include "host/linux/actuate.h"
#include "host/linux/procfs.h"
#include "linux_test_util.h"

/* Longest wait for the test's VM to show up or a move to finish, seconds (a bound, not a
 * performance target: the test fails only if it never happens). */
#define WAIT_MAX_S 30

static const struct snap_vm *
vm_named(const struct snapshot *snap, const char *name)
{
	for (int i = 0; i < snap->nr_vms; i++)
		if (strcmp(snap->vms[i].name, name) == 0)
			return &snap->vms[i];
	return NULL;
}

static void
test_fixture_snapshot(void **state)
{
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *web, *bound;
	const char *why, *src;
	char err[256];

	(void)state;
	assert_int_equal(host_linux_open(ltu_fixture_root("qemu-2node"), 100, &h, err, sizeof(err)),
	                 0);
	assert_string_equal(h->ops->name, "linux");
	assert_non_null(strstr(h->ops->describe(h), "kernel.numa_balancing=1"));
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_int_equal(snap->nr_nodes, 2);
	assert_int_equal(snap->nr_vms, 4);
	assert_true(snap->now_s > 0);
	assert_non_null(web = vm_named(snap, "web"));
	/* threads started at tick 123456, the host booted 2000 s ago: 765.44 s at 100 Hz */
	if (sysconf(_SC_CLK_TCK) == 100)
		assert_true(web->uptime_s > 765.43 && web->uptime_s < 765.45);
	/* first sample: the lifetime average, 1030.86 s of CPU in 765 s, clamped to one CPU */
	assert_true(web->vcpus[0].cpu_use > 0.99);
	assert_int_equal(web->mem_mib, 2048);
	assert_int_equal(web->mig_pending_mib, 0);
	src = h->ops->sampling_source(h, web->id, &why);
	assert_string_equal(src, "fault-stats");
	assert_non_null(bound = vm_named(snap, "bound"));
	src = h->ops->sampling_source(h, bound->id, &why);
	assert_string_equal(src, "placement-only");
	/* bound's vCPU threads say VmPin 4 GiB (all of its -m 4G, as under VFIO); web's none */
	assert_int_equal(bound->pinned_mib, 4096);
	assert_int_equal(web->pinned_mib, 0);
	assert_non_null(strstr(why, "bind:1"));
	src = h->ops->sampling_source(h, 99999, &why);
	assert_string_equal(src, "placement-only");
	/* web's RAM is the one mapping of its -m 2048; pid-5600 has no -m: found by size */
	assert_string_equal(h->ops->vm_note(h, web->id), "");
	assert_string_equal(h->ops->vm_note(h, 5600),
	                    "guest RAM found by size only (no -m or memory backend matched)");
	assert_non_null(
	    strstr(h->ops->describe(h), "VMs whose guest RAM was found by size only: "));
	/* a captured tree is never acted on */
	assert_int_equal(h->ops->pin_vcpu(h, web->id, 0, 1), -EROFS);
	assert_int_equal(h->ops->move_memory(h, web->id, 0, 0, 0, 1, 64), -EROFS);
	snapshot_free(snap);
	h->ops->close(h);
}

static void
test_open_errors(void **state)
{
	struct host *h = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(host_linux_open("/nonexistent-vnumad-root", 100, &h, err, sizeof(err)),
	                 -ENOENT);
	assert_null(h);
	assert_non_null(strstr(err, "NUMA nodes"));
}

static void
test_maps_ends(void **state)
{
	const char good[] = "1000-3000 rw-p 00000000 00:00 0 \n"
	                    "5000-9000 r--p 00001000 08:01 12 /usr/lib/x\n"
	                    "7ffd0000-7ffd1000 rw-p 00000000 00:00 0    [stack]\n";
	uint64_t starts[3] = {0x5000, 0x1000, 0x4000}, ends[3];

	(void)state;
	assert_int_equal(linux_maps_ends_parse(good, strlen(good), starts, 3, ends), 0);
	assert_int_equal(ends[0], 0x9000);
	assert_int_equal(ends[1], 0x3000);
	assert_int_equal(ends[2], 0); /* no mapping starts there */
	assert_int_equal(linux_maps_ends_parse(good, strlen(good) - 1, starts, 3, ends), -EINVAL);
	assert_int_equal(linux_maps_ends_parse("3000-1000 rw-p\n", 15, starts, 3, ends), -EINVAL);
	assert_int_equal(linux_maps_ends_parse("zz-1000 rw-p\n", 13, starts, 3, ends), -EINVAL);
	assert_int_equal(linux_maps_ends_parse("1000-3000x\n", 11, starts, 3, ends), -EINVAL);
	assert_int_equal(linux_maps_ends_parse("", 0, starts, 3, ends), 0);
	assert_int_equal(ends[0], 0);
	assert_int_equal(linux_maps_ends_read(NULL, 999999999, starts, 3, ends), -ENOENT);
}

/* ---- on this machine, with a vnuma-load VM ----------------------------------------------- */

/* The VM's resident RAM, MiB, on every node. */
static uint64_t
vm_resident_mib(const struct snapshot *snap, const struct snap_vm *vm)
{
	uint64_t res = 0;

	for (int n = 0; n < snap->nr_nodes; n++)
		res += vm->resident_mib[n];
	return res;
}

/* A snapshot holding the VM with its RAM resident, or NULL after WAIT_MAX_S. */
static struct snapshot *
snap_with(struct host *h, const char *name, const struct snap_vm **vm)
{
	double t0 = ltu_now_s();

	while (ltu_now_s() - t0 < WAIT_MAX_S) {
		struct snapshot *snap;

		assert_int_equal(h->ops->snapshot(h, &snap), 0);
		*vm = vm_named(snap, name);
		if (*vm != NULL && (*vm)->nr_vcpus == 2 && vm_resident_mib(snap, *vm) >= 60)
			return snap;
		snapshot_free(snap);
		usleep(100 * 1000);
	}
	return NULL;
}

static void
test_live_vm(void **state)
{
	char name[64], err[256];
	pid_t pid;
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *vm;
	cpu_set_t set;
	double t0;
	int id, tid;

	(void)state;
	snprintf(name, sizeof(name), "hosttest-%d", (int)getpid());
	pid = ltu_load_start(name, "--vcpus", "2", "--memory", "64M", "--duration", "120", NULL);
	assert_int_equal(host_linux_open(NULL, 1024, &h, err, sizeof(err)), 0);
	snap = snap_with(h, name, &vm);
	if (snap == NULL)
		ltu_load_stop(pid);
	assert_non_null(snap);
	id = vm->id;
	assert_int_equal(id, pid);
	assert_int_equal(vm->mem_mib, 64);
	/* its RAM found for certain, by -m: no other mapping counted (a sanitizer's shadow) */
	assert_string_equal(h->ops->vm_note(h, id), "");
	assert_true(vm_resident_mib(snap, vm) <= 64);
	assert_true(vm->uptime_s > 0);
	tid = vm->vcpus[0].tid;
	snapshot_free(snap);
	/* a second sample a moment later: CPU use from the difference, within one CPU */
	usleep(300 * 1000);
	assert_non_null(snap = snap_with(h, name, &vm));
	assert_true(vm->vcpus[0].cpu_use >= 0 && vm->vcpus[0].cpu_use <= 1);
	assert_true(vm->vcpus[0].cpu_use + vm->vcpus[1].cpu_use > 0); /* it spins */

	/* pin vCPU 0 to node index 0: its affinity becomes that node's CPUs */
	assert_int_equal(h->ops->pin_vcpu(h, id, 0, 1), 0);
	assert_int_equal(sched_getaffinity(tid, sizeof(set), &set), 0);
	for (int c = 0; c < snap->nr_cpus && c < CPU_SETSIZE; c++)
		assert_int_equal(CPU_ISSET(c, &set) != 0, snap->cpu_node[c] == 0);
	assert_int_equal(h->ops->pin_vcpu(h, id, 0, NODEMASK_ALL), 0);
	assert_int_equal(h->ops->pin_vcpu(h, id, 7, 1), -ESRCH);

	/* a move of pages that are all on its target already: walked, nothing moved or failed */
	assert_int_equal(h->ops->move_memory(h, id, 0, 0, 0, 0, 64), 0);
	snapshot_free(snap);
	t0 = ltu_now_s();
	while (h->ops->wake_s(h) > 0 && ltu_now_s() - t0 < WAIT_MAX_S) {
		h->ops->advance(h, 0);
		usleep(10 * 1000);
	}
	assert_true(h->ops->wake_s(h) <= 0);
	assert_non_null(snap = snap_with(h, name, &vm));
	assert_int_equal(vm->mig_pending_mib, 0);
	assert_int_equal(vm->mig_done_mib, 0);
	assert_int_equal(vm->mig_failed_mib, 0);
	snapshot_free(snap);

	/* routine errors */
	assert_int_equal(h->ops->move_memory(h, id, 4096, 64, 0, 0, 64), -ERANGE);
	assert_int_equal(h->ops->move_memory(h, 1, 0, 0, 0, 0, 64), -ESRCH);
	assert_int_equal(h->ops->move_memory(h, id, 0, 0, 0, 99, 64), -EINVAL);
	assert_int_equal(h->ops->bind_memory(h, id, 0, 0, 1), -EOPNOTSUPP);
	assert_int_equal(h->ops->set_sampling(h, id, 0), -EOPNOTSUPP);

	/* the VM goes: gone from the next snapshot, its actions routine -ESRCH */
	ltu_load_stop(pid);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_null(vm_named(snap, name));
	snapshot_free(snap);
	assert_int_equal(h->ops->pin_vcpu(h, id, 0, 1), -ESRCH);
	h->ops->close(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_snapshot),
	    cmocka_unit_test(test_open_errors),
	    cmocka_unit_test(test_maps_ends),
	    cmocka_unit_test(test_live_vm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_linux_discover.c - QEMU discovery, sampling-source probe and snapshot building on the
 * fixture tree tests/fixtures/linux/qemu-2node (see the README there), plus a run on this
 * machine's own /proc and /sys (must not fail); and guest RAM found by what it is on captures
 * (tests/fixtures/qemu-ram-layout) where mappings that are not RAM hold as much as 1/8 of the
 * RAM's resident pages: TCG's code buffer of a real QEMU, the shadow memory of a vnuma-load
 * built with AddressSanitizer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/linux/discover.h"
#include "host/linux/probe.h"
#include "host/linux/snapshot.h"
#include "linux_test_util.h"

#define MIB_KIB 1024ull

static void
test_name_parse(void **state)
{
	char name[LINUX_VM_NAME_MAX];

	(void)state;
	assert_true(linux_qemu_name_parse("guest=web,debug-threads=on", name));
	assert_string_equal(name, "web");
	assert_true(linux_qemu_name_parse("a,,b,process=qemu:a", name));
	assert_string_equal(name, "a,b");
	assert_true(linux_qemu_name_parse("process=x,guest=late", name));
	assert_string_equal(name, "late");
	assert_false(linux_qemu_name_parse("process=x", name));
	assert_false(linux_qemu_name_parse("", name));
}

/* Names are kept whole up to 255 bytes (libvirt's long domain names), cut beyond. */
static void
test_name_parse_long(void **state)
{
	char name[LINUX_VM_NAME_MAX], value[400], want[300];

	(void)state;
	memset(want, 'n', 255);
	want[255] = '\0';
	snprintf(value, sizeof(value), "guest=%s,debug-threads=on", want);
	assert_true(linux_qemu_name_parse(value, name));
	assert_string_equal(name, want);
	snprintf(value, sizeof(value), "guest=%sXYZ,debug-threads=on", want);
	assert_true(linux_qemu_name_parse(value, name));
	assert_string_equal(name, want);
}

static void
test_mem_parse(void **state)
{
	uint64_t mib = 0;

	(void)state;
	assert_int_equal(linux_qemu_mem_parse("1024", &mib), 0);
	assert_int_equal(mib, 1024);
	assert_int_equal(linux_qemu_mem_parse("4G", &mib), 0);
	assert_int_equal(mib, 4096);
	assert_int_equal(linux_qemu_mem_parse("size=2G,slots=4,maxmem=8G", &mib), 0);
	assert_int_equal(mib, 2048);
	assert_int_equal(linux_qemu_mem_parse("slots=2,size=512M", &mib), 0);
	assert_int_equal(mib, 512);
	assert_int_equal(linux_qemu_mem_parse("1048576k", &mib), 0);
	assert_int_equal(mib, 1024);
	assert_int_equal(linux_qemu_mem_parse("1T", &mib), 0);
	assert_int_equal(mib, 1024 * 1024);
	assert_int_equal(linux_qemu_mem_parse("abc", &mib), -EINVAL);
	assert_int_equal(linux_qemu_mem_parse("12X", &mib), -EINVAL);
	assert_int_equal(linux_qemu_mem_parse("slots=2", &mib), -EINVAL);
	assert_int_equal(linux_qemu_mem_parse("99999999999999999999", &mib), -EINVAL);
}

static void
test_vcpu_comm(void **state)
{
	(void)state;
	assert_int_equal(linux_vcpu_comm_index("CPU 3/KVM"), 3);
	assert_int_equal(linux_vcpu_comm_index("CPU 10/TCG"), 10);
	assert_int_equal(linux_vcpu_comm_index("CPU x/KVM"), -1);
	assert_int_equal(linux_vcpu_comm_index("CPU 1/KVMx"), -1);
	assert_int_equal(linux_vcpu_comm_index("CPU -1/KVM"), -1);
	assert_int_equal(linux_vcpu_comm_index("qemu-system-x86"), -1);
	assert_int_equal(linux_vcpu_comm_index("CPU 1"), -1);
}

static void
test_cpu_use(void **state)
{
	(void)state;
	assert_true(linux_cpu_use(100, 150, 1.0, 100) == 0.5);
	assert_true(linux_cpu_use(100, 300, 2.0, 100) == 1.0);
	assert_true(linux_cpu_use(0, 1000, 1.0, 100) == 1.0); /* clamped */
	assert_true(linux_cpu_use(150, 100, 1.0, 100) == 0.0);
	assert_true(linux_cpu_use(100, 150, 0.0, 100) == 0.0);
	assert_true(linux_cpu_use(100, 150, 1.0, 0) == 0.0);
}

static void
assert_vcpus(const struct linux_vm *vm, int nr, const int *index, const int *tid)
{
	assert_int_equal(vm->nr_vcpus, nr);
	for (int i = 0; i < nr; i++) {
		assert_int_equal(vm->vcpus[i].index, index[i]);
		assert_int_equal(vm->vcpus[i].tid, tid[i]);
	}
}

static void
assert_resident(const struct linux_vm *vm, uint64_t node0_mib, uint64_t node1_mib)
{
	assert_int_equal(vm->nr_resident, 2);
	assert_int_equal(vm->resident_kib[0], node0_mib * MIB_KIB);
	assert_int_equal(vm->resident_kib[1], node1_mib * MIB_KIB);
}

static void
test_discover_fixture(void **state)
{
	struct linux_discover_skips skips;
	struct linux_vm *vms;
	size_t nr;

	(void)state;
	assert_int_equal(
	    linux_vms_discover_skips(ltu_fixture_root("qemu-2node"), &vms, &nr, &skips), 0);
	/* 5400 is not QEMU, 5500 is malformed, 5700 vanished. */
	assert_int_equal(nr, 4);
	assert_int_equal(skips.skipped, 1);
	assert_non_null(strstr(skips.reason, "pid 5500: numa_maps"));

	assert_int_equal(vms[0].pid, 5100);
	assert_string_equal(vms[0].name, "web");
	assert_vcpus(&vms[0], 2, (int[]){0, 1}, (int[]){5102, 5101});
	assert_int_equal(vms[0].mem_mib, 2048);
	assert_true(vms[0].mem_from_cmdline);
	assert_int_equal(vms[0].nr_ram_maps, 1); /* the 8 MiB anon mapping is not RAM */
	assert_resident(&vms[0], 1536, 512);
	assert_false(vms[0].ram_huge);
	assert_false(vms[0].ram_bound);

	assert_int_equal(vms[1].pid, 5200);
	assert_string_equal(vms[1].name, "huge");
	assert_vcpus(&vms[1], 1, (int[]){0}, (int[]){5201});
	assert_int_equal(vms[1].mem_mib, 1024);
	assert_resident(&vms[1], 512, 512);
	assert_true(vms[1].ram_huge);

	/* vCPU 1 (tid 5302) vanished; index 2 is kept after the gap. */
	assert_int_equal(vms[2].pid, 5300);
	assert_string_equal(vms[2].name, "bound");
	assert_vcpus(&vms[2], 2, (int[]){0, 2}, (int[]){5301, 5303});
	assert_int_equal(vms[2].mem_mib, 4096);
	assert_resident(&vms[2], 0, 1024);
	assert_true(vms[2].ram_bound);
	assert_string_equal(vms[2].ram_policy, "bind:1");

	/* Found by argv[0]; no -name, no -m: size from numa_maps. */
	assert_int_equal(vms[3].pid, 5600);
	assert_string_equal(vms[3].name, "pid-5600");
	assert_vcpus(&vms[3], 1, (int[]){0}, (int[]){5601});
	assert_int_equal(vms[3].mem_mib, 512);
	assert_false(vms[3].mem_from_cmdline);
	assert_int_equal(vms[3].nr_resident, 1);
	assert_int_equal(vms[3].resident_kib[0], 512 * MIB_KIB);
	linux_vms_free(vms, nr);
}

/*
 * The one VM of capture name (tests/fixtures/qemu-ram-layout): its guest RAM mappings are
 * exactly the one at ram_start, with ram_mib resident on node 0, and its size is mem_mib.
 */
static void
assert_ram_exactly(const char *name, uint64_t ram_start, uint64_t ram_mib, uint64_t mem_mib)
{
	char rel[128];
	struct linux_vm *vms;
	size_t nr;

	snprintf(rel, sizeof(rel), "tests/fixtures/qemu-ram-layout/%s", name);
	assert_int_equal(linux_vms_discover(ltu_src_path(rel), &vms, &nr), 0);
	assert_int_equal(nr, 1);
	print_message("%s: %d RAM mappings, the first at 0x%llx\n", name, vms[0].nr_ram_maps,
	              vms[0].nr_ram_maps > 0 ? (unsigned long long)vms[0].ram_starts[0] : 0ull);
	assert_int_equal(vms[0].nr_ram_maps, 1);
	assert_int_equal(vms[0].ram_starts[0], ram_start);
	assert_int_equal(vms[0].nr_resident, 1);
	assert_int_equal(vms[0].resident_kib[0], ram_mib * MIB_KIB);
	assert_int_equal(vms[0].mem_mib, mem_mib);
	linux_vms_free(vms, nr);
}

/*
 * A real QEMU 7.2 (TCG, paused) with -m 256M and no -numa: 8 MiB of its RAM resident, and as
 * much of its 1 GiB TCG code buffer (an anonymous rwx mapping), besides 2 MiB of one of its
 * own small RAM blocks and 1.5 MiB of another anonymous mapping.  Counting every anonymous
 * mapping of at least 1/8 of the largest took all four.
 */
static void
test_ram_not_tcg_buffer(void **state)
{
	(void)state;
	assert_ram_exactly("single", 0x7fdec3e00000, 8, 256);
}

/*
 * vnuma-load built with AddressSanitizer, --memory 64M: all 64 MiB resident, and 8.3 MiB of
 * ASan's shadow of it in one 14 TiB anonymous mapping; counting by size took the shadow as RAM
 * too (72 MiB resident).
 */
static void
test_ram_not_asan_shadow(void **state)
{
	(void)state;
	assert_ram_exactly("asan-load", 0x7f5feac00000, 64, 64);
}

static void
assert_sampling(const char *root, const struct linux_host_caps *caps, const struct linux_vm *vm,
                enum linux_sampling_source source, const char *reason_part)
{
	struct linux_vm_sampling s;

	linux_vm_probe(root, caps, vm, &s);
	assert_string_equal(linux_sampling_source_name(s.source),
	                    linux_sampling_source_name(source));
	if (reason_part == NULL)
		assert_string_equal(s.reason, "");
	else
		assert_non_null(strstr(s.reason, reason_part));
}

static void
test_probe_fixture(void **state)
{
	const char *root = ltu_fixture_root("qemu-2node");
	struct linux_host_caps caps;
	struct linux_vm *vms;
	size_t nr;

	(void)state;
	assert_int_equal(linux_host_probe(root, 5100, 5102, &caps), 0);
	assert_int_equal(caps.numa_balancing, 1);
	assert_true(caps.balancing_on);
	assert_true(caps.sched_numa_faults);
	assert_true(caps.debugfs_scan);
	assert_int_equal(linux_vms_discover(root, &vms, &nr), 0);
	assert_int_equal(nr, 4);
	assert_sampling(root, &caps, &vms[0], LINUX_SAMPLING_FAULT_STATS, NULL);
	assert_sampling(root, &caps, &vms[1], LINUX_SAMPLING_PLACEMENT_ONLY, "hugetlbfs");
	assert_sampling(root, &caps, &vms[2], LINUX_SAMPLING_PLACEMENT_ONLY, "mbind policy bind:1");
	assert_sampling(root, &caps, &vms[3], LINUX_SAMPLING_PLACEMENT_ONLY, "no numa_faults");

	/* The kernel without fault lines: the host probe says so too. */
	assert_int_equal(linux_host_probe(root, 5600, 5601, &caps), 0);
	assert_false(caps.sched_numa_faults);
	/* Balancing off trumps every other reason. */
	caps.numa_balancing = 0;
	caps.balancing_on = false;
	for (size_t i = 0; i < nr; i++)
		assert_sampling(root, &caps, &vms[i], LINUX_SAMPLING_PLACEMENT_ONLY,
		                "kernel.numa_balancing is 0");
	linux_vms_free(vms, nr);

	/* No debugfs tunables in the plain 2node tree. */
	assert_int_equal(linux_host_probe(ltu_fixture_root("2node"), 4242, 4250, &caps), 0);
	assert_false(caps.debugfs_scan);
	assert_true(caps.sched_numa_faults);
}

/* Memory tiering alone (mode 2) is not NUMA balancing; no sysctl at all reads -1. */
static void
test_probe_tiering(void **state)
{
	char dir[] = "/tmp/vnumad-disc-XXXXXX", path[4096];
	struct linux_host_caps caps;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/proc/sys/kernel", dir);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		assert_int_equal(mkdir(path, 0700), 0);
		*p = '/';
	}
	assert_int_equal(mkdir(path, 0700), 0);
	ltu_file_write(dir, "proc/sys/kernel/numa_balancing", "2\n");
	assert_int_equal(linux_host_probe(dir, 1, 1, &caps), 0);
	assert_int_equal(caps.numa_balancing, 2);
	assert_false(caps.balancing_on);
	assert_false(caps.sched_numa_faults);
	ltu_file_write(dir, "proc/sys/kernel/numa_balancing", "3\n");
	assert_int_equal(linux_host_probe(dir, 1, 1, &caps), 0);
	assert_true(caps.balancing_on);
	snprintf(path, sizeof(path), "%s/proc/sys/kernel/numa_balancing", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(linux_host_probe(dir, 1, 1, &caps), 0);
	assert_int_equal(caps.numa_balancing, -1);
	assert_false(caps.balancing_on);
	for (int depth = 0; depth < 3; depth++) {
		*strrchr(path, '/') = '\0'; /* kernel, sys, proc */
		assert_int_equal(rmdir(path), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

static void
assert_faults(const struct snap_vcpu *v, uint64_t p0, uint64_t p1, uint64_t s0, uint64_t s1)
{
	assert_int_equal(v->faults_private[0], p0);
	assert_int_equal(v->faults_private[1], p1);
	assert_int_equal(v->faults_shared[0], s0);
	assert_int_equal(v->faults_shared[1], s1);
}

static void
test_snapshot_fixture(void **state)
{
	struct snapshot *snap;
	const struct snap_vm *vm;

	(void)state;
	assert_int_equal(linux_snapshot_build(ltu_fixture_root("qemu-2node"), &snap), 0);
	assert_int_equal(snap->nr_nodes, 2);
	assert_int_equal(snap->nodes[0].id, 0);
	assert_int_equal(snap->nodes[1].nr_cpus, 2);
	assert_int_equal(snap->nodes[0].mem_total_mib, 1015424 / 1024);
	assert_int_equal(snap->nodes[0].mem_free_mib, 612340 / 1024);
	assert_int_equal(snapshot_distance(snap, 0, 1), 21);
	assert_int_equal(snapshot_distance(snap, 1, 1), 10);
	assert_int_equal(snap->nr_cpus, 4);
	assert_int_equal(snap->cpu_node[1], 0);
	assert_int_equal(snap->cpu_node[2], 1);
	assert_int_equal(snap->nr_vms, 4);

	vm = &snap->vms[0];
	assert_int_equal(vm->id, 5100);
	assert_string_equal(vm->name, "web");
	assert_int_equal(vm->mem_mib, 2048);
	assert_int_equal(vm->resident_mib[0], 1536);
	assert_int_equal(vm->resident_mib[1], 512);
	assert_true(vm->policy_ok);
	assert_int_equal(vm->nr_vcpus, 2);
	assert_int_equal(vm->vcpus[0].tid, 5102);
	assert_int_equal(vm->vcpus[0].cpu, 0);
	assert_int_equal(vm->vcpus[0].node, 0);
	assert_int_equal(vm->vcpus[0].allowed_nodes, 0x3);
	assert_faults(&vm->vcpus[0], 900, 300, 100, 50);
	assert_int_equal(vm->vcpus[1].tid, 5101);
	assert_int_equal(vm->vcpus[1].cpu, 2);
	assert_int_equal(vm->vcpus[1].node, 1);
	assert_int_equal(vm->vcpus[1].allowed_nodes, 0x2);
	assert_faults(&vm->vcpus[1], 10, 700, 0, 20);
	assert_true(vm->vcpus[1].cpu_use == 0.0);

	vm = &snap->vms[1];
	assert_int_equal(vm->id, 5200);
	assert_int_equal(vm->vcpus[0].node, 0);
	assert_int_equal(vm->vcpus[0].allowed_nodes, 0x1);
	assert_int_equal(vm->resident_mib[0], 512);
	assert_int_equal(vm->resident_mib[1], 512);

	/* The vanished vCPU is gone; CPUs 1-2 cover no node fully: both partial nodes. */
	vm = &snap->vms[2];
	assert_int_equal(vm->id, 5300);
	assert_int_equal(vm->nr_vcpus, 2);
	assert_int_equal(vm->vcpus[0].tid, 5301);
	assert_int_equal(vm->vcpus[0].node, 1);
	assert_int_equal(vm->vcpus[0].allowed_nodes, 0x2);
	assert_faults(&vm->vcpus[0], 0, 40, 0, 2);
	assert_int_equal(vm->vcpus[1].tid, 5303);
	assert_int_equal(vm->vcpus[1].cpu, 1);
	assert_int_equal(vm->vcpus[1].node, 0);
	assert_int_equal(vm->vcpus[1].allowed_nodes, 0x3);
	assert_int_equal(vm->resident_mib[0], 0);
	assert_int_equal(vm->resident_mib[1], 1024);

	vm = &snap->vms[3];
	assert_int_equal(vm->id, 5600);
	assert_string_equal(vm->name, "pid-5600");
	assert_int_equal(vm->vcpus[0].node, 1);
	assert_faults(&vm->vcpus[0], 0, 0, 0, 0);
	assert_int_equal(vm->mem_mib, 512);
	snapshot_free(snap);
}

static void
test_missing_root(void **state)
{
	struct linux_vm *vms = (struct linux_vm *)1;
	struct snapshot *snap = (struct snapshot *)1;
	size_t nr = 7;

	(void)state;
	assert_true(linux_vms_discover(ltu_fixture_root("no-such-tree"), &vms, &nr) < 0);
	assert_null(vms);
	assert_int_equal(nr, 0);
	assert_true(linux_snapshot_build(ltu_fixture_root("no-such-tree"), &snap) < 0);
	assert_null(snap);
}

/*
 * This machine: discovery and snapshot building succeed.  Usually no QEMU runs here, but other
 * tests (tests/system/) may start one at any time, so check invariants rather than a count.
 */
static void
test_live(void **state)
{
	struct linux_host_caps caps;
	struct snapshot *snap;
	struct linux_vm *vms;
	size_t nr;

	(void)state;
	assert_int_equal(linux_vms_discover("/", &vms, &nr), 0);
	for (size_t i = 0; i < nr; i++) {
		assert_true(vms[i].name[0] != '\0');
		for (int c = 1; c < vms[i].nr_vcpus; c++)
			assert_true(vms[i].vcpus[c - 1].index <= vms[i].vcpus[c].index);
	}
	linux_vms_free(vms, nr);
	assert_int_equal(linux_host_probe("/", 0, 0, &caps), 0);
	assert_int_equal(linux_snapshot_build("/", &snap), 0);
	assert_true(snap->nr_nodes >= 1);
	for (int v = 0; v < snap->nr_vms; v++)
		for (int c = 0; c < snap->vms[v].nr_vcpus; c++) {
			assert_true(snap->vms[v].vcpus[c].node >= 0);
			assert_true(snap->vms[v].vcpus[c].node < snap->nr_nodes);
		}
	snapshot_free(snap);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_name_parse),
	    cmocka_unit_test(test_name_parse_long),
	    cmocka_unit_test(test_mem_parse),
	    cmocka_unit_test(test_vcpu_comm),
	    cmocka_unit_test(test_cpu_use),
	    cmocka_unit_test(test_discover_fixture),
	    cmocka_unit_test(test_ram_not_tcg_buffer),
	    cmocka_unit_test(test_ram_not_asan_shadow),
	    cmocka_unit_test(test_probe_fixture),
	    cmocka_unit_test(test_probe_tiering),
	    cmocka_unit_test(test_snapshot_fixture),
	    cmocka_unit_test(test_missing_root),
	    cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

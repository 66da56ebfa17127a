/*
 * test_libvirt_host.c - the libvirt backend (host/libvirt/libvirt_host.c) over a Linux host
 * read from a copy of the fixture tree tests/fixtures/linux/qemu-2node (the threads, faults
 * and memory the test driver does not have), with libvirt's test driver for the domains:
 * - test:///default (its domain "test"; the tree's QEMU 5100 is renamed "test"): a policy
 *   written to the live metadata comes back as the VM's own; a vCPU pin goes through libvirt
 *   (read back on a second connection) and the emulator follows the vCPUs' nodes; a VM that
 *   is no domain is acted on the Linux way (here: refused, the tree is read-only);
 * - a custom test-driver file: guest cells from the domain XML, a broken metadata policy
 *   with its error, the administrator's <vcpupin> making the VM hands-off, a strict numatune
 *   nodeset as the nodes the VM may use;
 * - `vnumactl policy --config` (h_policy) merges onto the persistent definition's policy and
 *   `--live` onto the live one, whatever the other holds;
 * - the original affinity put back at exit (daemon_restore) goes through libvirt too, so
 *   libvirt's own view of the pins is right afterwards;
 * - a halted vCPU pinned away from the CPU it last ran on counts as on the node it is pinned
 *   to (where it runs next), so vnumad does not pin it there again and again;
 * - vCPU numbers with a gap (a vCPU unplugged): a pin reaches libvirt's vCPU of that number;
 * - live memory binding: a restrictive placement='auto' numatune widened before a move and
 *   put back; an admin's restrictive nodeset kept as the nodes the VM may use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "agent/daemon.h"
#include "agent/handlers.h"
#include "agent/state.h"
#include "host/host.h"
#include "host/libvirt/lv_conn.h"
#include "lever_check.h"
#include "policy/engine.h"
#include "policy/vm_policy.h"

struct tree {
	char dir[64];
	char root[128];
};

/* A copy of the fixture tree in a temporary directory; QEMU 5100 renamed to name. */
static void
tree_make(struct tree *t, const char *name)
{
	char cmd[4096], path[256];
	const char *src = getenv("VNUMAD_SRCDIR");
	FILE *f;

	snprintf(t->dir, sizeof(t->dir), "/tmp/vnumad-lvh-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->root, sizeof(t->root), "%s/root", t->dir);
	snprintf(cmd, sizeof(cmd), "cp -r '%s/tests/fixtures/linux/qemu-2node' '%s'",
	         src ? src : ".", t->root);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/proc/5100/cmdline", t->root);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "/usr/bin/qemu-system-x86_64%c-name%cguest=%s,debug-threads=on%c-m%c2048%c", 0,
	        0, name, 0, 0, 0);
	fclose(f);
}

static void
tree_remove(struct tree *t)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	assert_int_equal(system(cmd), 0);
}

static struct host *
host_open(const char *uri, const char *root)
{
	struct host *inner, *h;
	char err[512];

	assert_int_equal(host_linux_open(root, 100, &inner, err, sizeof(err)), 0);
	if (host_libvirt_open(uri, inner, &h, err, sizeof(err)) < 0)
		fail_msg("host_libvirt_open %s: %s", uri, err);
	return h;
}

static const struct snap_vm *
vm_named(const struct snapshot *snap, const char *name)
{
	for (int i = 0; i < snap->nr_vms; i++)
		if (strcmp(snap->vms[i].name, name) == 0)
			return &snap->vms[i];
	return NULL;
}

#define POLICY(attrs) "<vnuma:policy xmlns:vnuma='" VM_POLICY_NS "' " attrs "/>"

static void
assert_cpus(const struct lv_idset *set, int first, int last)
{
	assert_int_equal(set->nr, last - first + 1);
	for (int i = 0; i < set->nr; i++)
		assert_int_equal(set->ids[i], first + i);
}

static void
test_default_driver(void **state)
{
	struct tree t;
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *vm;
	struct lv_conn *other;
	struct lv_domain dom;
	char err[512];
	int id;

	(void)state;
	tree_make(&t, "test");
	h = host_open("test:///default", t.root);
	assert_string_equal(h->ops->name, "libvirt");
	assert_non_null(strstr(h->ops->describe(h), "test:///default: connected, 1 domains"));
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_non_null(vm = vm_named(snap, "test"));
	assert_false(vm->policy_set); /* no metadata yet: policy files and defaults apply */
	id = vm->id;

	/* a live policy, stored in the domain, is the VM's own from the next snapshot */
	assert_int_equal(
	    h->ops->policy_persist(h, id, POLICY("mode='advisory' priority='70'"), true, false), 0);
	snapshot_free(snap);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_non_null(vm = vm_named(snap, "test"));
	assert_true(vm->policy_set);
	assert_true(vm->policy_ok);
	assert_int_equal(vm->policy.mode, VM_POLICY_MODE_ADVISORY);
	assert_int_equal(vm->policy.priority, 70);

	/* vCPU 0 to node 1 (CPUs 2-3) through libvirt; the emulator follows (vCPU 1 is on 2-3) */
	assert_int_equal(h->ops->pin_vcpu(h, id, 0, 1u << 1), 0);
	h->ops->commit(h);
	assert_int_equal(lv_conn_open("test:///default", &other, err, sizeof(err)), 0);
	memset(&dom, 0, sizeof(dom));
	assert_int_equal(lv_conn_domain_get(other, "test", false, &dom, err, sizeof(err)), 0);
	assert_true(dom.nr_vcpupins >= 1);
	assert_cpus(&dom.vcpupins[0], 2, 3);
	assert_cpus(&dom.emulatorpin, 2, 3);
	lv_domain_free(&dom);
	lv_conn_close(other);
	assert_int_equal(h->ops->pin_vcpu(h, id, 5, 1), -ESRCH);

	/* a QEMU that is no domain is the Linux host's: here a read-only tree */
	assert_non_null(vm = vm_named(snap, "bound"));
	assert_int_equal(h->ops->pin_vcpu(h, vm->id, 0, 1), -EROFS);
	assert_int_equal(h->ops->policy_persist(h, vm->id, POLICY("mode='off'"), true, false),
	                 -EOPNOTSUPP);
	snapshot_free(snap);
	h->ops->close(h);
	tree_remove(&t);
}

/*
 * The scan tunables are the machine's under --connect too: the libvirt host hands them to
 * its Linux host (here the tree's files: only scan_size_mb at first, so absent).
 */
/*
 * The levers are the inner Linux host's, in parity with the caps, the pin said as libvirt
 * does it for domains and as the Linux host does it for the rest, the binds (absent as
 * requests) as what libvirt does for a restrictive placement='auto' domain.
 */
static void
test_levers(void **state)
{
	struct host_lever l[HOST_LEVER_NR], inner[HOST_LEVER_NR];
	struct tree t;
	struct host *h, *in;
	char err[512];
	unsigned caps;

	(void)state;
	tree_make(&t, "test");
	h = host_open("test:///default", t.root);
	caps = lever_parity_check(h, l);
	assert_true(caps & HOST_CAP_PIN);
	assert_non_null(strstr(l[host_cap_index(HOST_CAP_PIN)].reason,
	                       "through libvirt (virDomainPinVcpuFlags; connected)"));
	assert_non_null(strstr(l[host_cap_index(HOST_CAP_PIN)].reason, "sched_setaffinity"));
	assert_int_equal(host_linux_open(t.root, 100, &in, err, sizeof(err)), 0);
	lever_parity_check(in, inner);
	for (int i = 0; i < HOST_LEVER_NR; i++) {
		assert_int_equal(l[i].state, inner[i].state);
		if (1u << i != HOST_CAP_PIN && 1u << i != HOST_CAP_BIND_AT_START &&
		    1u << i != HOST_CAP_BIND_LIVE)
			assert_string_equal(l[i].reason, inner[i].reason);
	}
	/* binding is libvirt's own, for restrictive placement='auto' domains: no bind request */
	assert_non_null(strstr(l[host_cap_index(HOST_CAP_BIND_AT_START)].reason,
	                       "mode='restrictive' placement='auto'"));
	assert_non_null(strstr(l[host_cap_index(HOST_CAP_BIND_LIVE)].reason, "widened"));
	in->ops->close(in);
	h->ops->close(h);
	tree_remove(&t);
}

static void
test_scan_tunables_delegated(void **state)
{
	static const char *const files[] = {"scan_delay_ms", "scan_period_min_ms",
	                                    "scan_period_max_ms", "scan_size_mb"};
	static const char *const values[] = {"1000\n", "1000\n", "60000\n", "256\n"};
	struct scan_tunables cur, slow;
	const char *why = NULL;
	char path[512];
	struct tree t;
	struct host *h;
	FILE *f;

	(void)state;
	tree_make(&t, "test");
	h = host_open("test:///default", t.root);
	assert_int_equal(h->ops->scan_tunables_get(h, &cur, &why), -ENOENT);
	assert_non_null(strstr(why, "no scan tunables"));
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/sys/kernel/debug/sched/numa_balancing/%s", t.root,
		         files[i]);
		assert_non_null(f = fopen(path, "w"));
		fputs(values[i], f);
		fclose(f);
	}
	assert_int_equal(h->ops->scan_tunables_get(h, &cur, &why), 0);
	assert_int_equal(cur.period_max_ms, 60000);
	slow = cur;
	slow.period_min_ms = 60000;
	assert_int_equal(h->ops->scan_tunables_set(h, &slow), 0);
	assert_int_equal(h->ops->scan_tunables_get(h, &cur, &why), 0);
	assert_int_equal(cur.period_min_ms, 60000);
	h->ops->close(h);
	tree_remove(&t);
}

static const char node_xml[] =
    "<node xmlns:test='http://libvirt.org/schemas/domain/test/1.0'>\n"
    "<cpu><nodes>2</nodes><sockets>1</sockets><cores>4</cores><threads>1</threads>"
    "<active>4</active><mhz>2000</mhz><model>x86_64</model></cpu>\n"
    "<memory>16777216</memory>\n"
    "<domain type='test'><name>web</name><metadata>" POLICY(
        "placement='cells'") "</metadata>"
                             "<memory unit='MiB'>2048</memory><vcpu>2</vcpu><os><type "
                             "arch='x86_64'>hvm</type></os>"
                             "<cpu><numa><cell id='0' cpus='0' memory='1024' unit='MiB'/>"
                             "<cell id='1' cpus='1' memory='1024' "
                             "unit='MiB'/></numa></cpu></domain>\n"
                             "<domain type='test'><name>bound</name><metadata>" POLICY(
                                 "mode='sideways'") "</metadata>"
                                                    "<memory unit='MiB'>4096</memory><vcpu>2</vcpu>"
                                                    "<cputune><vcpupin vcpu='1' "
                                                    "cpuset='2'/></cputune>"
                                                    "<numatune><memory mode='strict' "
                                                    "nodeset='1'/></numatune>"
                                                    "<os><type "
                                                    "arch='x86_64'>hvm</type></os></domain>\n"
                                                    "</node>\n";

static void
test_custom_file(void **state)
{
	struct tree t;
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *web, *bound;
	char path[256], uri[300];
	FILE *f;

	(void)state;
	tree_make(&t, "web");
	snprintf(path, sizeof(path), "%s/node.xml", t.dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(node_xml, f);
	fclose(f);
	snprintf(uri, sizeof(uri), "test://%s", path);
	h = host_open(uri, t.root);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);

	assert_non_null(web = vm_named(snap, "web"));
	assert_true(web->policy_set && web->policy_ok);
	assert_int_equal(web->policy.placement, VM_POLICY_PLACEMENT_CELLS);
	assert_int_equal(web->nr_cells, 2);
	assert_int_equal(web->cells[1].mem_start_mib, 1024);
	assert_int_equal(web->cells[1].mem_mib, 1024);
	assert_int_equal(web->vcpu_cell[0], 0);
	assert_int_equal(web->vcpu_cell[1], 1);
	assert_true(web->host_nodes == NODEMASK_ALL);

	assert_non_null(bound = vm_named(snap, "bound"));
	assert_true(bound->policy_set);
	assert_false(bound->policy_ok);
	assert_non_null(strstr(bound->policy_error, "mode"));
	/* the admin pinned a vCPU and no policy says auto: hands off */
	assert_int_equal(bound->policy.mode, VM_POLICY_MODE_MANUAL);
	assert_true(bound->host_nodes == 1u << 1); /* strict numatune nodeset 1 */
	assert_int_equal(bound->mem_mib, 4096);
	snapshot_free(snap);
	h->ops->close(h);
	tree_remove(&t);
}

/* The policy stored in the live (config false) or persistent definition of vm_id. */
static void
stored_policy(struct host *h, int vm_id, bool config, struct vm_policy *p)
{
	char *xml = NULL, err[256];

	assert_int_equal(h->ops->policy_fetch(h, vm_id, config, &xml), 0);
	assert_non_null(xml);
	if (vm_policy_parse_xml(xml, strlen(xml), p, err, sizeof(err)) < 0)
		fail_msg("stored policy %s: %s", xml, err);
	free(xml);
}

/* The policy stored in the live (config false) or persistent definition has mode and priority. */
static void
assert_stored(struct host *h, int vm_id, bool config, enum vm_policy_mode mode, int priority)
{
	struct vm_policy p;

	stored_policy(h, vm_id, config, &p);
	assert_int_equal(p.mode, mode);
	assert_int_equal(p.priority, priority);
}

/* `vnumactl policy test --priority N [--live] [--config]` through the daemon's handler. */
static void
policy_set_priority(struct daemon *d, const char *priority, const char *scope)
{
	const struct control_peer peer = {.may_write = true};
	struct json_object *args = json_object_new_object(), *data = NULL;
	char err[512] = "";

	json_object_object_add(args, "vm", json_object_new_string("test"));
	json_object_object_add(args, "priority", json_object_new_string(priority));
	json_object_object_add(args, "scope", json_object_new_string(scope));
	if (h_policy(d, NULL, &peer, args, &data, err, sizeof(err)) != PROTO_OK)
		fail_msg("policy --priority %s, scope %s: %s", priority, scope, err);
	json_object_put(data);
	json_object_put(args);
}

static void
test_policy_scopes(void **state)
{
	struct daemon *d = calloc(1, sizeof(*d));
	struct tree t;
	int id;

	(void)state;
	tree_make(&t, "test");
	d->host = host_open("test:///default", t.root);
	d->backend = d->host->ops->name;
	events_init(&d->events);
	assert_int_equal(d->host->ops->snapshot(d->host, &d->snap), 0);
	id = daemon_snap_vm(d, "test")->id;
	assert_int_equal(d->host->ops->policy_persist(
	                     d->host, id, POLICY("mode='advisory' priority='70'"), false, true),
	                 0);
	assert_int_equal(
	    d->host->ops->policy_persist(d->host, id, POLICY("mode='manual'"), true, false), 0);
	snapshot_free(d->snap);
	assert_int_equal(d->host->ops->snapshot(d->host, &d->snap), 0);
	assert_int_equal(daemon_snap_vm(d, "test")->policy.mode, VM_POLICY_MODE_MANUAL);

	/* --config: the persistent mode stays advisory (not the live manual) */
	policy_set_priority(d, "20", "config");
	assert_stored(d->host, id, true, VM_POLICY_MODE_ADVISORY, 20);
	/* the live one untouched (the default priority) */
	assert_stored(d->host, id, false, VM_POLICY_MODE_MANUAL, 50);

	/* --live after that: from the live definition, mode manual kept */
	policy_set_priority(d, "20", "live");
	assert_stored(d->host, id, false, VM_POLICY_MODE_MANUAL, 20);

	/* --live --config: both changed, each merged onto its own definition (as virsh) */
	policy_set_priority(d, "30", "live+config");
	assert_stored(d->host, id, true, VM_POLICY_MODE_ADVISORY, 30);
	assert_stored(d->host, id, false, VM_POLICY_MODE_MANUAL, 30);
	assert_int_equal(daemon_snap_vm(d, "test")->policy.priority, 30);

	snapshot_free(d->snap);
	d->host->ops->close(d->host);
	free(d);
	tree_remove(&t);
}

/* Domain "test" of test:///default as a second connection reads it (libvirt's own view). */
static void
libvirt_test_dom(struct lv_domain *dom)
{
	struct lv_conn *other;
	char err[512];

	assert_int_equal(lv_conn_open("test:///default", &other, err, sizeof(err)), 0);
	memset(dom, 0, sizeof(*dom));
	assert_int_equal(lv_conn_domain_get(other, "test", false, dom, err, sizeof(err)), 0);
	lv_conn_close(other);
}

/* libvirt's live pin of vCPU vcpu of "test", read on a connection of its own. */
static void
assert_libvirt_pin(int vcpu, int first, int last)
{
	struct lv_domain dom;

	libvirt_test_dom(&dom);
	assert_true(vcpu < dom.max_vcpus);
	assert_cpus(&dom.vcpupins[vcpu], first, last);
	lv_domain_free(&dom);
}

/* libvirt's <emulatorpin> of "test" is CPUs first..last. */
static void
assert_libvirt_emulator_pin(int first, int last)
{
	struct lv_domain dom;

	libvirt_test_dom(&dom);
	assert_cpus(&dom.emulatorpin, first, last);
	lv_domain_free(&dom);
}

/*
 * Set the persistent <emulatorpin> of "test" to CPUs 0..last through c (libvirt's test
 * driver keeps its state while a connection is open).
 */
static void
libvirt_test_emulator_cfg(virConnectPtr c, int last)
{
	virDomainPtr dom = virDomainLookupByName(c, "test");
	unsigned char map = (unsigned char)((1u << (last + 1)) - 1);

	assert_non_null(dom);
	assert_int_equal(virDomainPinEmulator(dom, &map, 1, VIR_DOMAIN_AFFECT_CONFIG), 0);
	virDomainFree(dom);
}

/*
 * vCPU 0 of "test" pinned to node 1 and put back on exit, through libvirt; its emulator
 * threads followed it to node 1 and go back to CPUs 0..emulator_last: every CPU, or the
 * domain's own <emulatorpin> when it has one.
 */
static void
restore_check(int emulator_last)
{
	struct daemon *d = calloc(1, sizeof(*d));
	const struct snap_vm *vm;
	struct tree t;

	tree_make(&t, "test");
	d->host = host_open("test:///default", t.root);
	d->backend = d->host->ops->name;
	events_init(&d->events);
	d->state = state_new();
	d->cfg.restore_on_exit = true;
	snprintf(d->cfg.state_file, sizeof(d->cfg.state_file), "%s/state.json", t.dir);
	assert_int_equal(d->host->ops->snapshot(d->host, &d->snap), 0);
	assert_non_null(vm = daemon_snap_vm(d, "test"));
	/* vCPU 0 (thread 5102, allowed on CPUs 0-3: both nodes) pinned to node 1 */
	assert_int_equal(actions_pin(d, vm, 0, 1u << 1, "test", "to node 1"), 0);
	d->host->ops->commit(d->host); /* the round ends: the emulator follows its vCPU */
	assert_int_equal(d->state->nr, 1);
	assert_libvirt_pin(0, 2, 3);
	assert_libvirt_emulator_pin(2, 3);
	/* put back through libvirt: both nodes' CPUs for the vCPU */
	assert_int_equal(daemon_restore(d), 1);
	assert_libvirt_pin(0, 0, 3);
	assert_libvirt_emulator_pin(0, emulator_last);
	assert_int_equal(d->state->nr, 0);

	/* the restore's fresh look at the host met the VM: its record */
	for (size_t i = 0; i < d->nr_vms; i++)
		free(d->vms[i].fault_prev);
	free(d->vms);
	snapshot_free(d->snap);
	state_free(d->state);
	d->host->ops->close(d->host);
	free(d);
	tree_remove(&t);
}

static void
test_restore_through_libvirt(void **state)
{
	(void)state;
	restore_check(3);
}

/* A domain whose definition pins its emulator threads (CPUs 0-1) gets that pin back. */
static void
test_restore_emulator_to_config(void **state)
{
	virConnectPtr c = virConnectOpen("test:///default");

	(void)state;
	assert_non_null(c);
	libvirt_test_emulator_cfg(c, 1);
	restore_check(1);
	libvirt_test_emulator_cfg(c, 3); /* as the other tests expect it */
	virConnectClose(c);
}

/* libvirt's vCPU 0 of "test" is not pinned: no <vcpupin>, or one to every CPU. */
static void
assert_vcpu0_unpinned(void)
{
	struct lv_domain dom;

	libvirt_test_dom(&dom);
	assert_true(dom.vcpupins[0].nr == 0 || dom.vcpupins[0].nr == 4);
	lv_domain_free(&dom);
}

/*
 * vCPU numbers with a gap (vCPU 0 unplugged: its thread is gone, only "CPU 1/KVM" is left):
 * the VM's one vCPU sits at position 0 of the snapshot, and a pin of it reaches libvirt's
 * vCPU 1, never vCPU 0.
 */
static void
test_vcpu_numbers_with_gap(void **state)
{
	struct tree t;
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *vm;
	char path[256];
	FILE *f;

	(void)state;
	tree_make(&t, "test");
	snprintf(path, sizeof(path), "%s/proc/5100/task/5102/comm", t.root);
	assert_non_null(f = fopen(path, "w"));
	fputs("IO worker\n", f); /* thread 5102 is no vCPU any more */
	fclose(f);
	h = host_open("test:///default", t.root);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_non_null(vm = vm_named(snap, "test"));
	assert_int_equal(vm->nr_vcpus, 1);
	assert_int_equal(vm->vcpus[0].tid, 5101);
	assert_int_equal(vm->vcpus[0].index, 1);
	assert_int_equal(h->ops->pin_vcpu(h, vm->id, 0, 1u << 0), 0);
	assert_libvirt_pin(1, 0, 1); /* libvirt's vCPU 1: node 0's CPUs */
	assert_vcpu0_unpinned();
	assert_int_equal(h->ops->pin_vcpu(h, vm->id, 0, NODEMASK_ALL), 0);
	assert_libvirt_pin(1, 0, 3);
	snapshot_free(snap);
	h->ops->close(h);
	tree_remove(&t);
}

/* Rewrite the stat file of QEMU 5100's vCPU 1 (tid 5101, allowed CPUs 2-3): last ran on cpu. */
static void
tree_vcpu1_ran_on(const struct tree *t, int cpu)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/5100/task/5101/stat", t->root);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f,
	        "5101 (CPU 1/KVM) S 1 4250 4250 0 -1 138412096 1234 0 0 0 98765 4321 0 0 20 0 4 0 "
	        "123456 1234567890 262144 18446744073709551615 1 1 0 0 0 0 0 4096 1 0 0 -1 0 %d "
	        "0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	        cpu);
	fclose(f);
}

static void
test_vcpu_node_follows_pin(void **state)
{
	struct tree t;
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *vm;

	(void)state;
	tree_make(&t, "test");
	tree_vcpu1_ran_on(&t, 0); /* node 0, outside its affinity (node 1) */
	h = host_open("test:///default", t.root);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_non_null(vm = vm_named(snap, "test"));
	assert_int_equal(vm->vcpus[1].tid, 5101);
	assert_int_equal(vm->vcpus[1].cpu, 0);
	assert_int_equal(vm->vcpus[1].allowed_nodes, 1u << 1);
	assert_int_equal(vm->vcpus[1].node, 1);
	/* vCPU 0 (allowed 0-3, last on CPU 0) is where it ran */
	assert_int_equal(vm->vcpus[0].node, 0);
	snapshot_free(snap);
	h->ops->close(h);
	tree_remove(&t);
}

/*
 * Domain metadata naming node 7 of the 2-node tree (a policy set with virsh, which knows no
 * topology): through a daemon round, the VM has the default policy and shows why; a
 * `vnumactl policy` change is refused while the stored nodes stay outside the host (nothing
 * stored), and one that names the host's nodes replaces them.
 */
static void
test_metadata_nodes_outside_host(void **state)
{
	const struct control_peer peer = {.may_write = true};
	struct daemon *d = calloc(1, sizeof(*d));
	struct json_object *args, *data = NULL;
	const struct snap_vm *vm;
	struct vm_policy p;
	char err[512];
	struct tree t;
	int id;

	(void)state;
	tree_make(&t, "test");
	config_defaults(&d->cfg);
	d->cfg.restore_on_exit = false;
	snprintf(d->cfg.state_file, sizeof(d->cfg.state_file), "%s/state.json", t.dir);
	d->host = host_open("test:///default", t.root);
	d->backend = d->host->ops->name;
	d->lock_fd = -1;
	events_init(&d->events);
	plan_init(&d->plan);
	d->state = state_new();
	d->bal = &vnumad_balancer_ops;
	d->eng = d->bal->create(&(struct balancer_args){.seed = 1});
	assert_int_equal(d->host->ops->snapshot(d->host, &d->snap), 0);
	id = daemon_snap_vm(d, "test")->id;
	assert_int_equal(
	    d->host->ops->policy_persist(d->host, id, POLICY("nodes='7'"), true, false), 0);
	assert_int_equal(daemon_round(d), 0);
	assert_int_equal(daemon_round(d), 0);
	assert_non_null(vm = daemon_snap_vm(d, "test"));
	assert_int_equal(d->snap->nr_nodes, 2);
	assert_false(vm->policy_ok);
	assert_string_equal(vm->policy_error,
	                    "domain metadata: nodes=\"7\": node 7 is not one of this host's nodes "
	                    "(0-1)");
	assert_true(vm->policy.nodes == NODEMASK_ALL);
	assert_int_equal(vm->policy.mode, VM_POLICY_MODE_AUTO);

	/* a change that keeps the stored nodes is refused, and nothing is stored */
	args = json_object_new_object();
	json_object_object_add(args, "vm", json_object_new_string("test"));
	json_object_object_add(args, "priority", json_object_new_string("20"));
	assert_int_equal(h_policy(d, NULL, &peer, args, &data, err, sizeof(err)),
	                 PROTO_BAD_REQUEST);
	assert_string_equal(err, "nodes=\"7\": node 7 is not one of this host's nodes (0-1)");
	stored_policy(d->host, id, false, &p);
	assert_true(p.nodes == nodemask_of(7));
	assert_int_equal(p.priority, VM_POLICY_PRIORITY_DEF);
	/* naming the host's nodes mends it */
	json_object_object_add(args, "nodes", json_object_new_string("1"));
	assert_int_equal(h_policy(d, NULL, &peer, args, &data, err, sizeof(err)), PROTO_OK);
	json_object_put(data);
	json_object_put(args);
	stored_policy(d->host, id, false, &p);
	assert_true(p.nodes == nodemask_of(1));
	assert_int_equal(p.priority, 20);
	assert_int_equal(daemon_round(d), 0);
	assert_non_null(vm = daemon_snap_vm(d, "test"));
	assert_true(vm->policy_ok);
	assert_true(vm->policy.nodes == nodemask_of(1));
	daemon_fini(d);
	free(d);
	tree_remove(&t);
}

/*
 * "test"'s persistent definition with numatune (restrictive placement='auto', or a nodeset
 * the admin wrote) put in before its </os>, through c; NULL: the original XML back.
 */
static void
libvirt_test_numatune(virConnectPtr c, const char *numatune, char **orig)
{
	virDomainPtr dom = virDomainLookupByName(c, "test"), redef;
	char *xml, *at, *with;

	assert_non_null(dom);
	if (numatune == NULL) {
		assert_non_null(redef = virDomainDefineXML(c, *orig));
		virDomainFree(redef);
		free(*orig);
		virDomainFree(dom);
		return;
	}
	if (*orig == NULL)
		assert_non_null(*orig = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE));
	assert_non_null(xml = strdup(*orig)); /* each time from the original */
	assert_non_null(at = strstr(xml, "</os>"));
	at += strlen("</os>");
	assert_true(asprintf(&with, "%.*s%s%s", (int)(at - xml), xml, numatune, at) > 0);
	redef = virDomainDefineXML(c, with);
	if (redef == NULL)
		fail_msg("define: %s", virGetLastErrorMessage());
	virDomainFree(redef);
	free(with);
	free(xml);
	virDomainFree(dom);
}

/*
 * A domain whose persistent numatune is restrictive with placement='auto' started where it
 * was advised and stays vnumad's to move: its live nodes bound nothing (host_nodes all), a
 * move to a node outside them widens them first (libvirt's own view, on a second
 * connection), status counts it, and put_back gives the first set back.  One whose admin
 * wrote the nodeset is kept inside it.
 */
static void
test_live_memory_nodes(void **state)
{
	virConnectPtr c = virConnectOpen("test:///default");
	struct lv_conn *other;
	struct tree t;
	struct host *h;
	struct snapshot *snap;
	const struct snap_vm *vm;
	char err[512], *orig = NULL;
	uint64_t ids = 0;

	(void)state;
	assert_non_null(c);
	assert_int_equal(lv_conn_open("test:///default", &other, err, sizeof(err)), 0);
	tree_make(&t, "test");
	libvirt_test_numatune(
	    c, "<numatune><memory mode='restrictive' placement='auto'/></numatune>", &orig);
	/* libvirt bound it to node 0 on numad's advice */
	assert_int_equal(lv_conn_mem_nodes_set(other, "test", 1u << 0, err, sizeof(err)), 0);
	h = host_open("test:///default", t.root);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_non_null(vm = vm_named(snap, "test"));
	assert_true(vm->host_nodes == NODEMASK_ALL);
	/* the move itself fails on the read-only tree; the widening came first */
	assert_int_equal(h->ops->move_memory(h, vm->id, 0, 0, 0, 1, 64), -EROFS);
	assert_int_equal(lv_conn_mem_nodes_get(other, "test", &ids, err, sizeof(err)), 0);
	assert_true(ids == ((1u << 0) | (1u << 1)));
	assert_non_null(strstr(h->ops->describe(h), "live memory nodes: widened 1, narrowed 0"));
	/* a move to a node it holds changes nothing */
	assert_int_equal(h->ops->move_memory(h, vm->id, 0, 0, 1, 0, 64), -EROFS);
	assert_non_null(strstr(h->ops->describe(h), "widened 1,"));
	h->ops->put_back(h);
	assert_int_equal(lv_conn_mem_nodes_get(other, "test", &ids, err, sizeof(err)), 0);
	assert_true(ids == 1u << 0);
	assert_non_null(strstr(h->ops->describe(h), "put back 1"));
	snapshot_free(snap);
	h->ops->close(h);

	/* the admin's own restrictive nodeset: kept inside what libvirt enforces live */
	libvirt_test_numatune(c, "<numatune><memory mode='restrictive' nodeset='0'/></numatune>",
	                      &orig);
	h = host_open("test:///default", t.root);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	assert_non_null(vm = vm_named(snap, "test"));
	assert_true(vm->host_nodes == 1u << 0);
	snapshot_free(snap);
	h->ops->close(h);
	libvirt_test_numatune(c, NULL, &orig);
	lv_conn_close(other);
	virConnectClose(c);
	tree_remove(&t);
}

static void
test_open_fails(void **state)
{
	struct host *inner, *h = NULL;
	char err[512] = "";

	(void)state;
	assert_int_equal(host_linux_open(NULL, 100, &inner, err, sizeof(err)), 0);
	assert_true(
	    host_libvirt_open("test:///nonexistent/vnumad.xml", inner, &h, err, sizeof(err)) < 0);
	assert_null(h);
	assert_true(err[0] != '\0');
}

int
main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_driver),
	    cmocka_unit_test(test_scan_tunables_delegated),
	    cmocka_unit_test(test_levers),
	    cmocka_unit_test(test_custom_file),
	    cmocka_unit_test(test_vcpu_node_follows_pin),
	    cmocka_unit_test(test_policy_scopes),
	    cmocka_unit_test(test_restore_through_libvirt),
	    cmocka_unit_test(test_restore_emulator_to_config),
	    cmocka_unit_test(test_vcpu_numbers_with_gap),
	    cmocka_unit_test(test_open_fails),
	    cmocka_unit_test(test_metadata_nodes_outside_host),
	    cmocka_unit_test(test_live_memory_nodes),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_libvirt_mems.c - the live memory binding of libvirt domains (host/libvirt/lv_mems.h)
 * against libvirt's test driver (test:///default, whose state lives as long as the process):
 * a domain of its own with <numatune><memory mode='restrictive' placement='auto'/>, started;
 * its live nodeset widened before a move, left alone when it already holds the node, narrowed
 * only once vnumad changed it, put back as vnumad first found it; a domain that went away, and
 * an empty set, refused.  The test driver takes any change (it does not check the mode as the
 * QEMU driver does: that is proved in tests/system/test_libvirt_nested.sh).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <libvirt/libvirt.h>

#include "host/libvirt/lv_conn.h"
#include "host/libvirt/lv_mems.h"

#define DOM "vnumad-mems"

static const char dom_xml[] =
    "<domain type='test'><name>" DOM "</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>"
    "<numatune><memory mode='restrictive' placement='auto'/></numatune>"
    "<os><type>hvm</type></os></domain>";

struct fixture {
	virConnectPtr raw; /* keeps the test driver's state, and the domain */
	struct lv_conn *conn;
};

static int
setup(void **state)
{
	static struct fixture f;
	char err[LV_ERR_LEN];
	virDomainPtr dom;

	f.raw = virConnectOpen("test:///default");
	assert_non_null(f.raw);
	dom = virDomainDefineXML(f.raw, dom_xml);
	assert_non_null(dom);
	assert_int_equal(virDomainCreate(dom), 0);
	virDomainFree(dom);
	assert_int_equal(lv_conn_open("test:///default", &f.conn, err, sizeof(err)), 0);
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	virDomainPtr dom = virDomainLookupByName(f->raw, DOM);

	if (dom != NULL) {
		virDomainDestroy(dom);
		virDomainUndefine(dom);
		virDomainFree(dom);
	}
	lv_conn_close(f->conn);
	virConnectClose(f->raw);
	return 0;
}

static uint64_t
live_ids(struct fixture *f)
{
	char err[LV_ERR_LEN];
	uint64_t ids = 99;

	assert_int_equal(lv_conn_mem_nodes_get(f->conn, DOM, &ids, err, sizeof(err)), 0);
	return ids;
}

/* Widen, no-op, narrow, put back: the set at each step, and the counts. */
static void
test_widen_narrow_put_back(void **state)
{
	struct fixture *f = *state;
	struct lv_mems *m = lv_mems_new();
	struct lv_mems_stats st;
	char err[LV_ERR_LEN];

	/* as libvirt left it after numad's advice: node 2 */
	assert_int_equal(lv_conn_mem_nodes_set(f->conn, DOM, 1u << 2, err, sizeof(err)), 0);
	assert_int_equal(live_ids(f), 1u << 2);
	/* a move to node 2 needs nothing; vnumad has changed nothing, so narrowing does nothing */
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, 2, err, sizeof(err)), 0);
	assert_false(lv_mems_changed(m, DOM));
	assert_int_equal(lv_mems_narrow(m, f->conn, DOM, 1u << 0, err, sizeof(err)), 0);
	assert_int_equal(live_ids(f), 1u << 2);
	/* a move to node 0: old + new, nothing left out */
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, 0, err, sizeof(err)), 0);
	assert_int_equal(live_ids(f), (1u << 0) | (1u << 2));
	assert_true(lv_mems_changed(m, DOM));
	/* and to node 3 while the first move is under way: the set grows, the first one is kept */
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, 3, err, sizeof(err)), 0);
	assert_int_equal(live_ids(f), (1u << 0) | (1u << 2) | (1u << 3));
	/* narrowed to where the memory went; a second time there is nothing to do */
	assert_int_equal(lv_mems_narrow(m, f->conn, DOM, 1u << 0, err, sizeof(err)), 1);
	assert_int_equal(live_ids(f), 1u << 0);
	assert_int_equal(lv_mems_narrow(m, f->conn, DOM, 1u << 0, err, sizeof(err)), 0);
	lv_mems_stats_get(m, &st);
	assert_int_equal(st.widened, 2);
	assert_int_equal(st.narrowed, 1);
	assert_int_equal(st.refused, 0);
	/* put back: node 2, as vnumad found it, and forgotten */
	assert_int_equal(lv_mems_put_back(m, f->conn, err, sizeof(err)), 1);
	assert_int_equal(live_ids(f), 1u << 2);
	assert_false(lv_mems_changed(m, DOM));
	assert_int_equal(lv_mems_put_back(m, f->conn, err, sizeof(err)), 0);
	lv_mems_stats_get(m, &st);
	assert_int_equal(st.put_back, 1);
	lv_mems_free(m);
}

static bool
running_none(void *ctx, const char *name)
{
	(void)ctx;
	(void)name;
	return false;
}

/* A domain that stops is forgotten: a restart starts from its configuration again. */
static void
test_forget_and_prune(void **state)
{
	struct fixture *f = *state;
	struct lv_mems *m = lv_mems_new();
	char err[LV_ERR_LEN];

	assert_int_equal(lv_conn_mem_nodes_set(f->conn, DOM, 1u << 1, err, sizeof(err)), 0);
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, 0, err, sizeof(err)), 0);
	assert_true(lv_mems_changed(m, DOM));
	lv_mems_forget(m, DOM);
	assert_false(lv_mems_changed(m, DOM));
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, 2, err, sizeof(err)), 0);
	assert_true(lv_mems_changed(m, DOM));
	lv_mems_prune(m, running_none, NULL);
	assert_false(lv_mems_changed(m, DOM));
	assert_int_equal(lv_mems_put_back(m, f->conn, err, sizeof(err)), 0);
	assert_int_equal(live_ids(f), (1u << 0) | (1u << 1) | (1u << 2)); /* not put back */
	lv_mems_free(m);
}

/* Bad requests: no such domain, an empty set, a node out of range; nothing recorded. */
static void
test_refusals(void **state)
{
	struct fixture *f = *state;
	struct lv_mems *m = lv_mems_new();
	char err[LV_ERR_LEN];
	uint64_t ids;

	err[0] = '\0';
	assert_int_equal(lv_mems_allow(m, f->conn, "no-such-domain", 0, err, sizeof(err)), -ENOENT);
	assert_true(strlen(err) > 0);
	assert_false(lv_mems_changed(m, "no-such-domain"));
	assert_int_equal(lv_conn_mem_nodes_get(f->conn, "no-such-domain", &ids, err, sizeof(err)),
	                 -ENOENT);
	assert_int_equal(lv_conn_mem_nodes_set(f->conn, DOM, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, 64, err, sizeof(err)), -EINVAL);
	assert_int_equal(lv_mems_allow(m, f->conn, DOM, -1, err, sizeof(err)), -EINVAL);
	assert_false(lv_mems_changed(m, DOM));
	lv_mems_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_widen_narrow_put_back),
	    cmocka_unit_test(test_forget_and_prune),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_idlist.c - the node and CPU list grammar (policy/idlist.h), case by case. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/idlist.h"
#include "policy/util.h"

/* The ids of a good case: at most this many, listed; more are checked by count and ends. */
#define CASE_IDS 8

struct good_case {
	const char *text;
	int limit;
	unsigned flags;
	int nr;            /* ids in the set */
	int ids[CASE_IDS]; /* the first min(nr, CASE_IDS) of them */
};

struct bad_case {
	const char *text;
	int limit;
	unsigned flags;
	int ret;
	const char *msg; /* the whole message */
};

static const struct good_case good_cases[] = {
    {"0-3,8,10-11", 64, 0, 7, {0, 1, 2, 3, 8, 10, 11}},
    {"7", 64, 0, 1, {7}},
    {"0-3\n", 64, 0, 4, {0, 1, 2, 3}},      /* sysfs ends in a newline */
    {" 1 , 3 - 4 \t", 64, 0, 3, {1, 3, 4}}, /* blanks around anything */
    {"3,0-1,1", 64, 0, 3, {0, 1, 3}},       /* any order, overlaps */
    {"5-5", 64, 0, 1, {5}},
    {"63", 64, 0, 1, {63}}, /* the highest node */
    {"0-63", 64, 0, 64, {0, 1, 2, 3, 4, 5, 6, 7}},
    {"00012", 64, 0, 1, {12}}, /* leading zeros are decimal */
    {"", 64, IDLIST_EMPTY_OK, 0, {0}},
    {" \n", 64, IDLIST_EMPTY_OK, 0, {0}},
    {"0-7,^3", 64, IDLIST_LIBVIRT, 7, {0, 1, 2, 4, 5, 6, 7}},
    {"^3,0-7", 64, IDLIST_LIBVIRT, 8, {0, 1, 2, 3, 4, 5, 6, 7}}, /* left to right */
    {"0-2, ^ 1", 64, IDLIST_LIBVIRT, 2, {0, 2}},
    {"2,", 64, IDLIST_LIBVIRT, 1, {2}}, /* libvirt's trailing ',' */
    {"0,^0", 64, IDLIST_LIBVIRT | IDLIST_EMPTY_OK, 0, {0}},
    {"65535", 65536, IDLIST_CPUS, 1, {65535}}, /* the highest CPU */
    {"0-65535", 65536, IDLIST_CPUS, 65536, {0, 1, 2, 3, 4, 5, 6, 7}},
    {"1000-1001", 1024, 0, 2, {1000, 1001}},
};

static const struct bad_case bad_cases[] = {
    {"0-3,x", 64, 0, -EINVAL, "'x' is not a number"},
    {"5-2", 64, 0, -EINVAL, "range 5-2 runs backwards"},
    {"70", 64, 0, -EFBIG, "node 70 is above the highest supported (63)"},
    {"64", 64, 0, -EFBIG, "node 64 is above the highest supported (63)"},
    {"0-64", 64, 0, -EFBIG, "node 64 is above the highest supported (63)"},
    {"65536", 65536, IDLIST_CPUS, -EFBIG, "CPU 65536 is above the highest supported (65535)"},
    {"99999999999999999999", 64, 0, -EFBIG,
     "node 99999999999999999999 is above the highest supported (63)"},
    {"4294967296", 1024, 0, -EFBIG, "node 4294967296 is above the highest supported (1023)"},
    {"", 64, 0, -EINVAL, "the list is empty: name at least one node"},
    {" \n", 64, IDLIST_CPUS, -EINVAL, "the list is empty: name at least one CPU"},
    {"0,^0", 64, IDLIST_LIBVIRT, -EINVAL, "'0,^0' leaves no node"},
    {"1,", 64, 0, -EINVAL, "'1,' has an empty item (a ',' too many)"},
    {",1", 64, 0, -EINVAL, "',1' has an empty item (a ',' too many)"},
    {"1,,2", 64, IDLIST_LIBVIRT, -EINVAL, "'1,,2' has an empty item (a ',' too many)"},
    {"1-", 64, 0, -EINVAL, "'1-' is not a range N-M"},
    {"1-x,2", 64, 0, -EINVAL, "'1-x' is not a range N-M"},
    {"-1", 64, 0, -EINVAL, "'-1' is not a number"},
    {"+1", 64, 0, -EINVAL, "'+1' is not a number"},
    {"0x1", 64, 0, -EINVAL, "'0x1' is not a number or a range N-M"},
    {"1 2", 64, 0, -EINVAL, "'1 2' is not a number or a range N-M"},
    {"1;2", 64, 0, -EINVAL, "'1;2' is not a number or a range N-M"},
    {"1-2-3", 64, 0, -EINVAL, "'1-2-3' is not a number or a range N-M"},
    {"0-7:2", 64, 0, -EINVAL, "'0-7:2' is not a number or a range N-M"},
    {"1\n2", 64, 0, -EINVAL, "'1?2' is not a number or a range N-M"},
    {"0,^3", 64, 0, -EINVAL, "'^3' is an exclusion ('^N'), not allowed here"},
    {"^1-2", 64, IDLIST_LIBVIRT, -EINVAL, "'^1-2' excludes a range: '^' takes one id"},
    {"^", 64, IDLIST_LIBVIRT, -EINVAL, "'^' is not a number"},
    {"1", 0, 0, -EINVAL, "no node can be listed (limit 0)"},
};

static void
test_idlist_good(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good_cases) / sizeof(good_cases[0]); i++) {
		const struct good_case *c = &good_cases[i];
		char err[IDLIST_ERR_MAX] = "";
		struct idlist set;
		int *ids = NULL, nr;

		print_message("good \"%s\"\n", c->text);
		assert_int_equal(idlist_parse(c->text, strlen(c->text), c->limit, c->flags, &set,
		                              err, sizeof(err)),
		                 0);
		assert_string_equal(err, "");
		assert_int_equal(idlist_count(&set), c->nr);
		nr = idlist_ids(&set, &ids);
		assert_int_equal(nr, c->nr);
		for (int k = 0; k < nr && k < CASE_IDS; k++) {
			assert_int_equal(ids[k], c->ids[k]);
			assert_true(idlist_test(&set, c->ids[k]));
		}
		assert_false(idlist_test(&set, -1));
		assert_false(idlist_test(&set, c->limit));
		assert_true(nr > 0 ? ids != NULL : ids == NULL);
		free(ids);
		idlist_free(&set);
	}
}

static void
test_idlist_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		char err[IDLIST_ERR_MAX] = "";
		struct idlist set;

		print_message("bad \"%s\"\n", c->text);
		assert_int_equal(idlist_parse(c->text, strlen(c->text), c->limit, c->flags, &set,
		                              err, sizeof(err)),
		                 c->ret);
		assert_string_equal(err, c->msg);
		assert_null(set.words);
		/* no err buffer: the same refusal, nothing written */
		assert_int_equal(
		    idlist_parse(c->text, strlen(c->text), c->limit, c->flags, &set, NULL, 0),
		    c->ret);
	}
}

/* The text is (buffer, length): bytes past len are not read, a NUL inside is an error. */
static void
test_idlist_length_bounded(void **state)
{
	char err[IDLIST_ERR_MAX];
	struct idlist set;

	(void)state;
	assert_int_equal(idlist_parse("1-3garbage", 3, 64, 0, &set, err, sizeof(err)), 0);
	assert_int_equal(idlist_count(&set), 3);
	idlist_free(&set);
	assert_int_equal(idlist_parse("1\0"
	                              "2",
	                              3, 64, 0, &set, err, sizeof(err)),
	                 -EINVAL);
	assert_string_equal(err, "'1?2' is not a number or a range N-M");
}

/* A long bad item is quoted cut, and the message fits IDLIST_ERR_MAX. */
static void
test_idlist_long_item(void **state)
{
	char text[200], err[IDLIST_ERR_MAX];
	struct idlist set;

	(void)state;
	memset(text, 'z', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(idlist_parse(text, strlen(text), 64, 0, &set, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "...' is not a number"));
	assert_true(strlen(err) < sizeof(err) - 1);
}

static void
test_idlist_next(void **state)
{
	char err[IDLIST_ERR_MAX];
	struct idlist set;

	(void)state;
	assert_int_equal(
	    idlist_parse("3,64,200-201", 12, 4096, IDLIST_CPUS, &set, err, sizeof(err)), 0);
	assert_int_equal(idlist_next(&set, 0), 3);
	assert_int_equal(idlist_next(&set, 4), 64);
	assert_int_equal(idlist_next(&set, 65), 200);
	assert_int_equal(idlist_next(&set, 202), -1);
	assert_int_equal(idlist_next(&set, 5000), -1);
	idlist_free(&set);
}

/* nodemask_parse is the grammar at UTIL_MAX_NODES, into a uint64_t. */
static void
test_nodemask_parse_edge(void **state)
{
	char err[IDLIST_ERR_MAX];
	uint64_t m = 42;

	(void)state;
	assert_int_equal(nodemask_parse("63", 0, &m, err, sizeof(err)), 0);
	assert_true(m == (uint64_t)1 << 63);
	assert_int_equal(nodemask_parse("0-63", 0, &m, err, sizeof(err)), 0);
	assert_true(m == NODEMASK_ALL);
	m = 42;
	assert_int_equal(nodemask_parse("0-64", 0, &m, err, sizeof(err)), -EFBIG);
	assert_string_equal(err, "node 64 is above the highest supported (63)");
	assert_int_equal(m, 42);
	assert_int_equal(
	    nodemask_parse("0,^0", IDLIST_LIBVIRT | IDLIST_EMPTY_OK, &m, err, sizeof(err)), 0);
	assert_int_equal(m, 0);
}

static void
test_nodemask_check_host(void **state)
{
	char err[IDLIST_ERR_MAX];

	(void)state;
	assert_int_equal(nodemask_check_host(0xf, 4, err, sizeof(err)), 0);
	assert_int_equal(nodemask_check_host(0x10, 4, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "node 4 is not one of this host's nodes (0-3)");
	assert_int_equal(nodemask_check_host(0x31, 4, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "nodes 4-5 are not among this host's nodes (0-3)");
	assert_int_equal(nodemask_check_host(NODEMASK_ALL, UTIL_MAX_NODES, err, sizeof(err)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_idlist_good),
	    cmocka_unit_test(test_idlist_bad),
	    cmocka_unit_test(test_idlist_length_bounded),
	    cmocka_unit_test(test_idlist_long_item),
	    cmocka_unit_test(test_idlist_next),
	    cmocka_unit_test(test_nodemask_parse_edge),
	    cmocka_unit_test(test_nodemask_check_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

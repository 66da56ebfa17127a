/* test_util.c - node masks and the PRNG. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "policy/util.h"

static void
test_nodemask_roundtrip(void **state)
{
	uint64_t m = 0;
	char buf[64];

	assert_int_equal(nodemask_parse("0-1,3", 0, &m, NULL, 0), 0);
	assert_int_equal(m, 0xbu);
	assert_string_equal(nodemask_format(m, buf, sizeof(buf)), "0-1,3");
	assert_int_equal(nodemask_parse("5", 0, &m, NULL, 0), 0);
	assert_string_equal(nodemask_format(m, buf, sizeof(buf)), "5");
	assert_int_equal(nodemask_weight(0xf0), 4);
	assert_int_equal(nodemask_first(0xf0), 4);
	assert_int_equal(nodemask_first(0), -1);
}

static void
test_nodemask_rejects(void **state)
{
	uint64_t m = 42;

	assert_int_equal(nodemask_parse("", 0, &m, NULL, 0), -EINVAL);
	assert_int_equal(nodemask_parse("64", 0, &m, NULL, 0), -EFBIG);
	assert_int_equal(nodemask_parse("3-1", 0, &m, NULL, 0), -EINVAL);
	assert_int_equal(nodemask_parse("1,", 0, &m, NULL, 0), -EINVAL);
	assert_int_equal(nodemask_parse("1-", 0, &m, NULL, 0), -EINVAL);
	assert_int_equal(nodemask_parse("a", 0, &m, NULL, 0), -EINVAL);
	assert_int_equal(nodemask_parse("1 2", 0, &m, NULL, 0), -EINVAL);
	assert_int_equal(m, 42); /* untouched on error */
}

/*
 * NODEMASK_STR_MAX holds every list of 64 nodes whole: the two longest forms, and seeded
 * random masks (the seed is fixed, so a failure replays), each formatted and parsed back.
 */
static void
test_nodemask_str_max(void **state)
{
	uint64_t pairs = 0, even = 0, m;
	char buf[NODEMASK_STR_MAX];
	struct util_rng rng;
	size_t longest = 0;

	(void)state;
	for (int n = 0; n < UTIL_MAX_NODES; n++) {
		pairs |= n % 3 != 2 ? nodemask_of(n) : 0; /* 0-1,3-4,...,60-61,63 */
		even |= n % 2 == 0 ? nodemask_of(n) : 0;  /* 0,2,...,62 */
	}
	assert_int_equal(strlen(nodemask_format(pairs, buf, sizeof(buf))), 121);
	assert_int_equal(nodemask_parse(buf, 0, &m, NULL, 0), 0);
	assert_true(m == pairs);
	assert_int_equal(strlen(nodemask_format(even, buf, sizeof(buf))), 90);
	assert_int_equal(nodemask_parse(buf, 0, &m, NULL, 0), 0);
	assert_true(m == even);
	util_rng_seed(&rng, 64, 1);
	for (int i = 0; i < 20000; i++) {
		uint64_t r = (uint64_t)util_rng_u32(&rng) << 32 | util_rng_u32(&rng);

		r = r ? r : 1;
		nodemask_format(r, buf, sizeof(buf));
		longest = strlen(buf) > longest ? strlen(buf) : longest;
		assert_int_equal(nodemask_parse(buf, 0, &m, NULL, 0), 0);
		assert_true(m == r);
	}
	assert_true(longest < NODEMASK_STR_MAX);
}

static void
test_rng_replays_and_poisson_mean(void **state)
{
	struct util_rng a, b;
	double sum = 0;

	util_rng_seed(&a, 7, 1);
	util_rng_seed(&b, 7, 1);
	for (int i = 0; i < 100; i++)
		assert_int_equal(util_rng_u32(&a), util_rng_u32(&b));
	for (int i = 0; i < 20000; i++)
		sum += util_rng_poisson(&a, 3.0);
	assert_true(sum / 20000 > 2.9 && sum / 20000 < 3.1);
	sum = 0;
	for (int i = 0; i < 20000; i++)
		sum += util_rng_poisson(&a, 100.0);
	assert_true(sum / 20000 > 99 && sum / 20000 < 101);
	for (int i = 0; i < 1000; i++)
		assert_true(util_rng_below(&a, 5) < 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nodemask_roundtrip),
	    cmocka_unit_test(test_nodemask_rejects),
	    cmocka_unit_test(test_nodemask_str_max),
	    cmocka_unit_test(test_rng_replays_and_poisson_mean),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

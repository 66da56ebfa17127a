/* test_units.c - the size and rate grammar (policy/units.h), case by case. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "policy/units.h"

struct size_case {
	const char *text;
	uint64_t bare; /* a bare number's unit; 0: none allowed */
	int ret;
	uint64_t bytes;  /* when ret == 0 */
	const char *msg; /* when ret < 0: the whole message */
};

static const struct size_case size_cases[] = {
    {"8G", 0, 0, 8 * UNITS_GIB, NULL},
    {"8g", 0, 0, 8 * UNITS_GIB, NULL},
    {"8GiB", 0, 0, 8 * UNITS_GIB, NULL},
    {"8gib", 0, 0, 8 * UNITS_GIB, NULL},
    {"512MiB", 0, 0, 512 * UNITS_MIB, NULL},
    {"512M", 0, 0, 512 * UNITS_MIB, NULL},
    {"4K", 0, 0, 4096, NULL},
    {"4KiB", 0, 0, 4096, NULL},
    {"1T", 0, 0, (uint64_t)1 << 40, NULL},
    {"100B", 0, 0, 100, NULL},
    {"1.5G", 0, 0, 3 * UNITS_GIB / 2, NULL},
    {"0.5K", 0, 0, 512, NULL},
    {"0.0001K", 0, 0, 0, NULL}, /* 0.1024 bytes, rounded to the nearest */
    {"0.0005K", 0, 0, 1, NULL}, /* 0.512 bytes */
    {"1.000000001T", 0, 0, ((uint64_t)1 << 40) + 1100, NULL}, /* 9 decimals, exact */
    {"64", UNITS_MIB, 0, 64 * UNITS_MIB, NULL},               /* the caller's unit */
    {"0", UNITS_MIB, 0, 0, NULL},
    {"16777215T", 0, 0, ((uint64_t)16777215) << 40, NULL},
    {"18446744073709551615B", 0, 0, UINT64_MAX, NULL},
    {"64", 0, -EINVAL, 0, "'64' has no unit (use B, K, M, G or T, e.g. 512M)"},
    {"8X", 0, -EINVAL, 0, "'8X': 'X' is not a unit (use B, K, M, G or T, with or without iB)"},
    {"8GB", 0, -EINVAL, 0, "'8GB': 'GB' is ambiguous (1000 or 1024?); say GiB or G, both binary"},
    {"8 G", 0, -EINVAL, 0, "'8 G': ' G' is not a unit (use B, K, M, G or T, with or without iB)"},
    {"", UNITS_MIB, -EINVAL, 0, "'' is not a number with a unit (e.g. 8G or 512MiB)"},
    {"G", 0, -EINVAL, 0, "'G' is not a number with a unit (e.g. 8G or 512MiB)"},
    {"-1G", 0, -EINVAL, 0, "'-1G' is not a number with a unit (e.g. 8G or 512MiB)"},
    {" 1G", 0, -EINVAL, 0, "' 1G' is not a number with a unit (e.g. 8G or 512MiB)"},
    {"1.G", 0, -EINVAL, 0, "'1.G' has no digit after its '.'"},
    {"1.0000000001G", 0, -EINVAL, 0, "'1.0000000001G' has more than 9 decimals"},
    {"1e3K", 0, -EINVAL, 0,
     "'1e3K': 'e3K' is not a unit (use B, K, M, G or T, with or without iB)"},
    {"16777216T", 0, -EINVAL, 0, "'16777216T' is too large (the most is 16 EiB)"},
    {"18446744073709551616B", 0, -EINVAL, 0,
     "'18446744073709551616B' is too large (the most is 16 EiB)"},
    {"99999999999999999999999999999999999999999G", 0, -EINVAL, 0,
     "'9999999999999999999999999999999999999999...' is too large (the most is 16 EiB)"},
};

static const struct size_case rate_cases[] = {
    {"256MiB/s", 0, 0, 256 * UNITS_MIB, NULL},
    {"256M/s", 0, 0, 256 * UNITS_MIB, NULL},
    {"1.5GiB/s", 0, 0, 3 * UNITS_GIB / 2, NULL},
    {"2048KiB/s", 0, 0, 2 * UNITS_MIB, NULL},
    {"256", 0, -EINVAL, 0, "'256' has no unit (a rate is a size per second, e.g. 256MiB/s)"},
    {"256MiB", 0, -EINVAL, 0, "'256MiB' is not a rate (a size per second, e.g. 256MiB/s)"},
    {"256/s", 0, -EINVAL, 0, "'256/s' has no unit (use B, K, M, G or T, e.g. 512M)"},
    {"256MB/s", 0, -EINVAL, 0,
     "'256MB/s': 'MB' is ambiguous (1000 or 1024?); say MiB or M, both binary"},
    {"256 MiB/s", 0, -EINVAL, 0,
     "'256 MiB/s': ' MiB' is not a unit (use B, K, M, G or T, with or without iB)"},
    {"/s", 0, -EINVAL, 0, "'/s' is not a number with a unit (e.g. 8G or 512MiB)"},
};

static void
check_cases(const struct size_case *cases, size_t nr, bool rate)
{
	for (size_t i = 0; i < nr; i++) {
		const struct size_case *c = &cases[i];
		char err[UNITS_ERR_MAX] = "";
		uint64_t v = 42;
		int ret;

		print_message("%s \"%s\"\n", rate ? "rate" : "size", c->text);
		ret = rate ? units_rate_parse(c->text, &v, err, sizeof(err))
		           : units_size_parse(c->text, c->bare, &v, err, sizeof(err));
		assert_int_equal(ret, c->ret);
		if (ret == 0) {
			assert_true(v == c->bytes);
			assert_string_equal(err, "");
		} else {
			assert_true(v == 42); /* untouched on error */
			assert_string_equal(err, c->msg);
		}
	}
}

static void
test_units_size(void **state)
{
	(void)state;
	check_cases(size_cases, sizeof(size_cases) / sizeof(size_cases[0]), false);
}

static void
test_units_rate(void **state)
{
	(void)state;
	check_cases(rate_cases, sizeof(rate_cases) / sizeof(rate_cases[0]), true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_units_size),
	    cmocka_unit_test(test_units_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

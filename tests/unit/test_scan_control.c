/*
 * test_scan_control.c - when vnumad slows the kernel's host-wide NUMA scanner
 * (policy/scan_control.c): only after every VM has been settled for SCAN_CONTROL_SETTLED_S,
 * back to the admin's values at once when one is not, a change reported once, never a value
 * the admin did not set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy/scan_control.h"

static const struct scan_tunables admin = {
    .delay_ms = 1000, .period_min_ms = 1000, .period_max_ms = 60000, .size_mb = 256};

static void
assert_admin(const struct scan_tunables *t)
{
	assert_memory_equal(t, &admin, sizeof(admin));
}

/* Settled long enough: period_min goes to the admin's max, the rest stays the admin's. */
static void
test_slow_after_settled(void **state)
{
	struct scan_control sc;
	struct scan_tunables out;

	(void)state;
	scan_control_init(&sc);
	assert_false(scan_control_decide(&sc, &admin, 2, 2, 100.0, &out));
	assert_admin(&out);
	assert_false(
	    scan_control_decide(&sc, &admin, 2, 2, 100.0 + SCAN_CONTROL_SETTLED_S - 1, &out));
	assert_admin(&out);
	assert_true(scan_control_decide(&sc, &admin, 2, 2, 100.0 + SCAN_CONTROL_SETTLED_S, &out));
	assert_true(sc.slow);
	assert_int_equal(out.period_min_ms, admin.period_max_ms);
	assert_int_equal(out.period_max_ms, admin.period_max_ms);
	assert_int_equal(out.delay_ms, admin.delay_ms);
	assert_int_equal(out.size_mb, admin.size_mb);
	/* No change, no report: the caller writes nothing every round. */
	assert_false(scan_control_decide(&sc, &admin, 2, 2, 500.0, &out));
	assert_int_equal(out.period_min_ms, admin.period_max_ms);
}

/* One VM placing or moving again: the admin's values exactly, at once; the wait restarts. */
static void
test_back_when_one_converges(void **state)
{
	struct scan_control sc;
	struct scan_tunables out;

	(void)state;
	scan_control_init(&sc);
	scan_control_decide(&sc, &admin, 3, 3, 0, &out);
	assert_true(scan_control_decide(&sc, &admin, 3, 3, SCAN_CONTROL_SETTLED_S, &out));
	assert_true(scan_control_decide(&sc, &admin, 3, 2, SCAN_CONTROL_SETTLED_S + 1, &out));
	assert_false(sc.slow);
	assert_admin(&out);
	/* Settled again: another full wait. */
	assert_false(scan_control_decide(&sc, &admin, 3, 3, SCAN_CONTROL_SETTLED_S + 2, &out));
	assert_false(scan_control_decide(&sc, &admin, 3, 3, 2 * SCAN_CONTROL_SETTLED_S + 1, &out));
	assert_true(scan_control_decide(&sc, &admin, 3, 3, 2 * SCAN_CONTROL_SETTLED_S + 2, &out));
}

/* A VM that arrives unsettled (nr_vms grows) counts as one that converges. */
static void
test_arrival_restores(void **state)
{
	struct scan_control sc;
	struct scan_tunables out;

	(void)state;
	scan_control_init(&sc);
	scan_control_decide(&sc, &admin, 1, 1, 0, &out);
	assert_true(scan_control_decide(&sc, &admin, 1, 1, SCAN_CONTROL_SETTLED_S, &out));
	assert_true(scan_control_decide(&sc, &admin, 2, 1, SCAN_CONTROL_SETTLED_S + 1, &out));
	assert_admin(&out);
}

/* No VM: nothing to slow for; an admin max not above min: nothing to slow at all. */
static void
test_nothing_to_slow(void **state)
{
	struct scan_tunables flat = admin, out;
	struct scan_control sc;

	(void)state;
	scan_control_init(&sc);
	for (double t = 0; t <= 10 * SCAN_CONTROL_SETTLED_S; t += 1.0)
		assert_false(scan_control_decide(&sc, &admin, 0, 0, t, &out));
	assert_admin(&out);
	flat.period_max_ms = flat.period_min_ms;
	scan_control_init(&sc);
	for (double t = 0; t <= 10 * SCAN_CONTROL_SETTLED_S; t += 1.0)
		assert_false(scan_control_decide(&sc, &flat, 1, 1, t, &out));
	assert_memory_equal(&out, &flat, sizeof(flat));
}

/*
 * Property: whatever the sequence of rounds, every value asked for lies within what the
 * admin set: delay and size the admin's, period_min between the admin's min and max (never
 * a faster scan than the admin's), period_max the admin's.
 */
static void
test_never_outside_admin(void **state)
{
	unsigned seed = 12345;
	struct scan_control sc;

	(void)state;
	for (int run = 0; run < 200; run++) {
		struct scan_tunables a, out;

		seed = seed * 1103515245u + 12345u;
		a.delay_ms = (int)(seed % 5000);
		a.period_min_ms = (int)(seed % 3000) + 1;
		a.period_max_ms = (int)((seed >> 8) % 90000);
		a.size_mb = (int)((seed >> 4) % 1024) + 1;
		scan_control_init(&sc);
		for (int r = 0; r < 300; r++) {
			int nr = (int)((seed >> 3) % 4);

			seed = seed * 1103515245u + 12345u;
			scan_control_decide(&sc, &a, nr, (seed >> 16) % 8 ? nr : 0, r * 1.0, &out);
			if (out.delay_ms != a.delay_ms || out.size_mb != a.size_mb ||
			    out.period_max_ms != a.period_max_ms ||
			    out.period_min_ms < a.period_min_ms ||
			    (out.period_min_ms != a.period_min_ms &&
			     out.period_min_ms != a.period_max_ms))
				fail_msg("seed 12345, run %d round %d: outside the admin's values",
				         run, r);
		}
	}
}

static void
test_format(void **state)
{
	char buf[96];

	(void)state;
	assert_string_equal(scan_control_format(&admin, buf, sizeof(buf)),
	                    "delay 1000 ms, period 1000-60000 ms, size 256 MiB");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slow_after_settled),
	    cmocka_unit_test(test_back_when_one_converges),
	    cmocka_unit_test(test_arrival_restores),
	    cmocka_unit_test(test_nothing_to_slow),
	    cmocka_unit_test(test_never_outside_admin),
	    cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

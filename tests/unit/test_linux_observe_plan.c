/*
 * test_linux_observe_plan.c - which VMs a Linux-host snapshot reads (host/linux/observe_plan.c):
 * - a new VM is read every round while active, then its period doubles up to the settled
 *   maximum; a changed reading or a watch brings it back to every round;
 * - under a cap, active VMs are read whatever the bucket holds, then due settled ones in
 *   order (most overdue, then pid) while it has room; the rest are deferred; one unread for
 *   LINUX_OBSERVE_MAX_AGE_S is read anyway and the round counted as over the cap;
 * - the cost estimates follow the measured costs;
 * - over ten simulated minutes of 64 settled 8-vCPU VMs with a known cost per VM, the CPU
 *   charged stays within the cap (plus the bucket's burst), no VM goes unread for longer
 *   than LINUX_OBSERVE_MAX_AGE_S, and without a cap every VM is read at its settled period;
 * - a reading differs when a vCPU's node or affinity changed or the fault shares moved.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "host/linux/observe_plan.h"

#define NR_VMS 64

/* One round at now_s with per-VM cost vm_ms (per 1 + vCPUs unit) and fixed_ms. */
static size_t
round_run(struct linux_obs_budget *b, struct linux_obs_vm *st, struct linux_obs_pick *picks, int nr,
          int vcpus, double now_s, double fixed_ms, double unit_ms)
{
	size_t nr_read;
	double cpu_ms = fixed_ms;

	for (int i = 0; i < nr; i++)
		picks[i] = (struct linux_obs_pick){1000 + i, vcpus, &st[i], false};
	nr_read = linux_obs_plan(b, picks, (size_t)nr, now_s);
	for (int i = 0; i < nr; i++) {
		if (!picks[i].read)
			continue;
		cpu_ms += unit_ms * (1 + vcpus);
		linux_obs_read_done(&st[i], now_s, false);
	}
	linux_obs_charge(b, now_s, cpu_ms, nr_read, (int)nr_read * vcpus, (size_t)nr - nr_read);
	return nr_read;
}

static void
test_settled_period_doubles(void **state)
{
	struct linux_obs_budget b;
	struct linux_obs_vm st;
	struct linux_obs_pick pick;
	double reads_at[64];
	int nr_reads = 0;

	(void)state;
	linux_obs_budget_init(&b, 0); /* no cap */
	linux_obs_vm_init(&st, 0);
	for (int t = 0; t < 120; t++)
		if (round_run(&b, &st, &pick, 1, 2, t, 0.1, 0.1) == 1 && nr_reads < 64)
			reads_at[nr_reads++] = t;
	/* every second while active (0..29), then 1, 2, 4, 8, 8, ... apart */
	for (int i = 0; i < (int)LINUX_OBSERVE_ACTIVE_S; i++)
		assert_true(reads_at[i] == i);
	assert_true(reads_at[30] - reads_at[29] == 1);
	assert_true(reads_at[31] - reads_at[30] == 1);
	assert_true(reads_at[32] - reads_at[31] == 2);
	assert_true(reads_at[33] - reads_at[32] == 4);
	assert_true(reads_at[34] - reads_at[33] == LINUX_OBSERVE_SETTLED_MAX_S);
	assert_true(reads_at[nr_reads - 1] - reads_at[nr_reads - 2] == LINUX_OBSERVE_SETTLED_MAX_S);
	assert_true(b.carried > 0 && b.deferred == 0 && b.over_cap == 0);
}

static void
test_change_and_watch_reset(void **state)
{
	struct linux_obs_budget b;
	struct linux_obs_vm st;
	struct linux_obs_pick pick = {1, 2, &st, false};

	(void)state;
	linux_obs_budget_init(&b, 0);
	linux_obs_vm_init(&st, 0);
	for (int t = 0; t < 100; t++)
		round_run(&b, &st, &pick, 1, 2, t, 0.1, 0.1);
	assert_true(st.period_s == LINUX_OBSERVE_SETTLED_MAX_S);
	/* a reading that differs: read the next round, and every round while it keeps changing */
	st.read_s = 100;
	linux_obs_read_done(&st, 100, true);
	assert_true(st.period_s == 0);
	assert_int_equal(linux_obs_plan(&b, &pick, 1, 101), 1);
	linux_obs_read_done(&st, 101, false);
	assert_true(st.period_s >= 1 && st.period_s < LINUX_OBSERVE_SETTLED_MAX_S);
	/* vnumad acts on it: every round for LINUX_OBSERVE_ACTIVE_S */
	for (int t = 102; t < 120; t++)
		round_run(&b, &st, &pick, 1, 2, t, 0.1, 0.1);
	linux_obs_watch(&st, 120);
	for (int t = 121; t < 121 + (int)LINUX_OBSERVE_ACTIVE_S - 1; t++)
		assert_int_equal(round_run(&b, &st, &pick, 1, 2, t, 0.1, 0.1), 1);
}

/* Under a cap: active first, then the most overdue, then pid; the rest deferred. */
static void
test_cap_orders_and_defers(void **state)
{
	struct linux_obs_budget b;
	struct linux_obs_vm st[4];
	struct linux_obs_pick picks[4];

	(void)state;
	linux_obs_budget_init(&b, 0.5); /* 5 ms/s */
	b.tokens_ms = 3.0;
	b.fixed_ms = 0.5;
	b.unit_ms = 0.3; /* a 2-vCPU VM: 0.9 ms; room for two after the fixed part */
	b.at_s = 100;
	for (int i = 0; i < 4; i++)
		st[i] = (struct linux_obs_vm){.read_s = 90, .period_s = 8, .active_until_s = 0};
	st[2].read_s = 80;          /* most overdue of the settled ones (20/8 against 10/8) */
	st[3].active_until_s = 200; /* active */
	for (int i = 0; i < 4; i++)
		picks[i] = (struct linux_obs_pick){10 + i, 2, &st[i], false};
	assert_int_equal(linux_obs_plan(&b, picks, 4, 100), 2);
	assert_true(picks[3].read && picks[2].read);
	assert_false(picks[0].read || picks[1].read);
	assert_int_equal(b.deferred, 2);
	assert_int_equal(b.over_cap, 0);
	/* with room for one more, the lower pid of two equally overdue VMs goes first */
	b.tokens_ms = 3.9;
	b.at_s = 100;
	assert_int_equal(linux_obs_plan(&b, picks, 4, 100), 3);
	assert_true(picks[0].read && !picks[1].read);
	/* an active VM is read whatever the bucket holds: the cap paces settled VMs only */
	b.tokens_ms = -50;
	b.at_s = 100;
	assert_int_equal(linux_obs_plan(&b, picks, 4, 100), 1);
	assert_true(picks[3].read);
	assert_int_equal(b.over_cap, 1);
	b.over_cap = 0;
	/* an empty bucket reads only what has been unread for LINUX_OBSERVE_MAX_AGE_S */
	b.tokens_ms = -50;
	b.at_s = 100;
	st[1].read_s = 100 - LINUX_OBSERVE_MAX_AGE_S;
	st[3].active_until_s = 0;
	assert_int_equal(linux_obs_plan(&b, picks, 4, 100), 1);
	assert_true(picks[1].read);
	assert_int_equal(b.over_cap, 1);
	/* a VM never read is read whatever the bucket holds */
	st[0].read_s = -1;
	b.tokens_ms = -50;
	assert_int_equal(linux_obs_plan(&b, picks, 4, 100), 2);
	assert_true(picks[0].read);
}

static void
test_estimates_follow(void **state)
{
	struct linux_obs_budget b;

	(void)state;
	linux_obs_budget_init(&b, 1);
	for (int i = 0; i < 100; i++) {
		linux_obs_charge(&b, i, 2.0, 0, 0, 5); /* a round that read nothing */
		linux_obs_charge(&b, i + 0.5, 2.0 + 0.25 * 12, 3, 9,
		                 2); /* 3 VMs, 9 vCPUs: 12 units */
	}
	assert_true(b.fixed_ms > 1.9 && b.fixed_ms < 2.1);
	assert_true(b.unit_ms > 0.24 && b.unit_ms < 0.26);
	assert_int_equal(b.reads, 300);
	assert_int_equal(b.carried, 700);
	assert_true(b.cpu_ms_s > 0);
}

/*
 * 64 settled 8-vCPU VMs, each costing 0.9 ms to read (0.1 ms per unit), 0.4 ms fixed, one
 * round a second for 600 s: a full read of all of them each round would be 58 ms/s.
 */
static void
test_cap_holds_over_time(void **state)
{
	static struct linux_obs_vm st[NR_VMS];
	static struct linux_obs_pick picks[NR_VMS];
	double last_read[NR_VMS], longest_gap_s = 0, cpu0_ms;
	struct linux_obs_budget b;
	const double cap_percent = 0.5, run_s = 600, warm_s = 100;

	(void)state;
	linux_obs_budget_init(&b, cap_percent);
	for (int i = 0; i < NR_VMS; i++) {
		linux_obs_vm_init(&st[i], -LINUX_OBSERVE_ACTIVE_S); /* met settled */
		st[i].read_s = -2 + 0.01 * i;
		st[i].changed = false;
		st[i].period_s = LINUX_OBSERVE_SETTLED_MAX_S;
		last_read[i] = st[i].read_s;
	}
	cpu0_ms = 0;
	for (int t = 0; t < (int)run_s; t++) {
		if (t == (int)warm_s)
			cpu0_ms = b.cpu_ms;
		round_run(&b, st, picks, NR_VMS, 8, t, 0.4, 0.1);
		for (int i = 0; i < NR_VMS; i++) {
			if (picks[i].read) {
				if (t >= warm_s && t - last_read[i] > longest_gap_s)
					longest_gap_s = t - last_read[i];
				last_read[i] = t;
			}
		}
	}
	print_message("cap %.1f %%: %.3f %% used after warm-up, longest gap %.0f s, "
	              "deferred %llu, over cap %llu\n",
	              cap_percent, (b.cpu_ms - cpu0_ms) / (run_s - warm_s) / 10.0, longest_gap_s,
	              (unsigned long long)b.deferred, (unsigned long long)b.over_cap);
	/* what was charged after the warm-up: the cap, plus at most one bucket's worth */
	assert_true(b.cpu_ms - cpu0_ms <=
	            cap_percent * 10.0 * ((run_s - warm_s) + LINUX_OBSERVE_BURST_S) + 1.0);
	assert_true(longest_gap_s <= LINUX_OBSERVE_MAX_AGE_S);
	assert_true(b.deferred > 0);
	/* the cap is used, not left idle: at least half of it */
	assert_true(b.cpu_ms - cpu0_ms >= 0.5 * cap_percent * 10.0 * (run_s - warm_s));

	/* without a cap, every VM is read every LINUX_OBSERVE_SETTLED_MAX_S */
	linux_obs_budget_init(&b, 0);
	longest_gap_s = 0;
	for (int t = (int)run_s; t < (int)(2 * run_s); t++) {
		round_run(&b, st, picks, NR_VMS, 8, t, 0.4, 0.1);
		for (int i = 0; i < NR_VMS; i++) {
			if (picks[i].read) {
				if (t >= run_s + warm_s && t - last_read[i] > longest_gap_s)
					longest_gap_s = t - last_read[i];
				last_read[i] = t;
			}
		}
	}
	assert_true(longest_gap_s == LINUX_OBSERVE_SETTLED_MAX_S);
	assert_int_equal(b.deferred, 0);
}

static void
test_differs(void **state)
{
	const uint64_t a[2] = {800, 200}, same_share[2] = {400, 100}, near[2] = {770, 230},
	               moved[2] = {700, 300}, none[2] = {0, 0};

	(void)state;
	assert_true(linux_obs_differs(7, NULL, 7, a, 2));        /* no last reading */
	assert_true(linux_obs_differs(7, a, 8, a, 2));           /* a vCPU elsewhere */
	assert_false(linux_obs_differs(7, a, 7, a, 2));          /* identical */
	assert_false(linux_obs_differs(7, a, 7, same_share, 2)); /* decayed, same shares */
	assert_false(linux_obs_differs(7, a, 7, near, 2));       /* 6 points moved */
	assert_true(linux_obs_differs(7, a, 7, moved, 2));       /* 20 points moved */
	assert_true(linux_obs_differs(7, none, 7, a, 2));        /* faults appeared */
	assert_false(linux_obs_differs(7, none, 7, none, 2));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_settled_period_doubles),
	    cmocka_unit_test(test_change_and_watch_reset),
	    cmocka_unit_test(test_cap_orders_and_defers),
	    cmocka_unit_test(test_estimates_follow),
	    cmocka_unit_test(test_cap_holds_over_time),
	    cmocka_unit_test(test_differs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

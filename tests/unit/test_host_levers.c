/*
 * test_host_levers.c - the capability probe (host.h levers) of the simulated host and the
 * fault-injecting wrapper: each simulator profile reports exactly its caps as present and the
 * rest absent, with the reason; the wrapper passes its inner host's report through, and for
 * an inner host without a probe derives it from that host's last snapshot caps ("not
 * probed").  The Linux and libvirt backends are checked on their fixture trees in
 * test_linux_scan_tunables.c and test_libvirt_host.c, the daemon's status in
 * test_daemon_views.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lever_check.h"

#include "host/fault.h"
#include "host/host.h"
#include "host/sim/sim.h"
#include "policy/model.h"

static void
test_sim_profiles(void **state)
{
	const enum sim_profile profiles[] = {SIM_PROFILE_LINUX, SIM_PROFILE_LIBVIRT,
	                                     SIM_PROFILE_IDEAL};
	struct host_lever l[HOST_LEVER_NR];
	char err[512];

	(void)state;
	for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
		struct host *h = NULL;
		unsigned caps;

		assert_int_equal(host_sim_open(NULL, profiles[p], &h, err, sizeof(err)), 0);
		assert_true(h->ops->advance(h, 1.0) >= 0);
		caps = lever_parity_check(h, l);
		/* the profile's own levers, none other (the run adds none for vnumad) */
		assert_int_equal(caps & HOST_CAPS_ALL_LEVERS,
		                 sim_profile_caps(profiles[p]) & HOST_CAPS_ALL_LEVERS);
		for (int i = 0; i < HOST_LEVER_NR; i++) {
			assert_int_not_equal(l[i].state, HOST_LEVER_REFUSED);
			if (l[i].state == HOST_LEVER_ABSENT && 1u << i != HOST_CAP_SCAN_TUNABLES)
				assert_non_null(strstr(l[i].reason, sim_profile_name(profiles[p])));
		}
		h->ops->close(h);
	}
	/* what the linux profile stands for: pins and page moves only */
	assert_int_equal(sim_profile_caps(SIM_PROFILE_LINUX) & HOST_CAPS_ALL_LEVERS,
	                 HOST_CAP_PIN | HOST_CAP_MOVE_PAGES);
}

/* A host with caps and no probe of its own: one empty snapshot, nothing else. */
#define BARE_CAPS (HOST_CAP_PIN | HOST_CAP_SCAN_TUNABLES | HOST_CAP_KERNEL_BALANCING)

static int
bare_snapshot(struct host *h, struct snapshot **out)
{
	(void)h;
	*out = snapshot_new(1, 1, 0, NULL);
	(*out)->caps = BARE_CAPS;
	return 0;
}

static void
bare_close(struct host *h)
{
	free(h);
}

static const struct host_ops bare_ops = {
    .name = "bare",
    .close = bare_close,
    .snapshot = bare_snapshot,
};

static void
test_fault_passes_through(void **state)
{
	struct host_lever l[HOST_LEVER_NR], inner[HOST_LEVER_NR];
	struct host *sim = NULL, *h = NULL, *bare = calloc(1, sizeof(*bare));
	char err[512];

	(void)state;
	assert_int_equal(host_sim_open(NULL, SIM_PROFILE_IDEAL, &sim, err, sizeof(err)), 0);
	assert_int_equal(host_fault_open(sim, "rate=0", &h, err, sizeof(err)), 0);
	lever_parity_check(h, l);
	lever_parity_check(sim, inner);
	for (int i = 0; i < HOST_LEVER_NR; i++) {
		assert_int_equal(l[i].state, inner[i].state);
		assert_string_equal(l[i].reason, inner[i].reason);
	}
	h->ops->close(h);

	assert_non_null(bare);
	bare->ops = &bare_ops;
	assert_int_equal(host_fault_open(bare, "rate=0", &h, err, sizeof(err)), 0);
	assert_int_equal(lever_parity_check(h, l), BARE_CAPS);
	for (int i = 0; i < HOST_LEVER_NR; i++)
		assert_string_equal(l[i].reason, "not probed");
	assert_int_equal(l[host_cap_index(HOST_CAP_PIN)].state, HOST_LEVER_PRESENT);
	assert_int_equal(l[host_cap_index(HOST_CAP_MOVE_PAGES)].state, HOST_LEVER_ABSENT);
	h->ops->close(h);
}

static void
test_state_names(void **state)
{
	(void)state;
	assert_string_equal(host_lever_state_name(HOST_LEVER_PRESENT), "present");
	assert_string_equal(host_lever_state_name(HOST_LEVER_ABSENT), "absent");
	assert_string_equal(host_lever_state_name(HOST_LEVER_REFUSED), "refused");
	assert_string_equal(host_cap_name(host_cap_index(HOST_CAP_SCAN_TUNABLES)), "scan-tunables");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sim_profiles),
	    cmocka_unit_test(test_fault_passes_through),
	    cmocka_unit_test(test_state_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * lever_check.h - lever parity (BRIEF section 3) as a test asserts it for any backend: a
 * snapshot taken, then the host's capability probe (host_levers_get), and for every lever
 * present exactly when its bit is in the snapshot's caps, a state of the three, a reason.
 * Everything here is static.
 */
#ifndef VNUMAD_TESTS_LEVER_CHECK_H
#define VNUMAD_TESTS_LEVER_CHECK_H

#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/host.h"
#include "policy/model.h"

/* Snapshot h, probe its levers into out[HOST_LEVER_NR], check parity; the snapshot's caps. */
static unsigned __attribute__((unused)) lever_parity_check(struct host *h, struct host_lever *out)
{
	struct snapshot *snap = NULL;
	unsigned caps;

	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	caps = snap->caps;
	snapshot_free(snap);
	host_levers_get(h, caps, out);
	for (int i = 0; i < HOST_LEVER_NR; i++) {
		const char *state = host_lever_state_name(out[i].state);

		if ((out[i].state == HOST_LEVER_PRESENT) != ((caps & (1u << i)) != 0))
			fail_msg("%s: lever %s is %s, the snapshot's caps %s it", h->ops->name,
			         host_cap_name(i), state, (caps & (1u << i)) ? "have" : "lack");
		assert_true(strcmp(state, "present") == 0 || strcmp(state, "absent") == 0 ||
		            strcmp(state, "refused") == 0);
		assert_true(out[i].reason[0] != '\0');
		assert_null(strchr(out[i].reason, '\n'));
	}
	return caps;
}

#endif

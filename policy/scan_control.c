/*
 * scan_control.c - when to slow the kernel's NUMA scanner (scan_control.h).
 */
#include "policy/scan_control.h"

#include <stdio.h>

void
scan_control_init(struct scan_control *sc)
{
	sc->settled_since_s = -1;
	sc->slow = false;
}

bool
scan_control_decide(struct scan_control *sc, const struct scan_tunables *admin, int nr_vms,
                    int nr_settled, double now_s, struct scan_tunables *out)
{
	bool all = nr_vms > 0 && nr_settled >= nr_vms, slow, changed;

	if (!all)
		sc->settled_since_s = -1;
	else if (sc->settled_since_s < 0)
		sc->settled_since_s = now_s;
	/* An admin whose max period is not above the min leaves nothing to slow. */
	slow = all && now_s - sc->settled_since_s >= SCAN_CONTROL_SETTLED_S &&
	       admin->period_max_ms > admin->period_min_ms;
	*out = *admin;
	if (slow)
		out->period_min_ms = admin->period_max_ms;
	changed = slow != sc->slow;
	sc->slow = slow;
	return changed;
}

char *
scan_control_format(const struct scan_tunables *t, char *buf, size_t len)
{
	snprintf(buf, len, "delay %d ms, period %d-%d ms, size %d MiB", t->delay_ms,
	         t->period_min_ms, t->period_max_ms, t->size_mb);
	return buf;
}

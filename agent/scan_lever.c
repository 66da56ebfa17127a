/*
 * scan_lever.c - the kernel's host-wide scan tunables as a lever of the daemon (scan_lever.h).
 *
 * Order of a slow-down, so that a crash at any point leaves the admin's values recoverable:
 * the admin's values into the state file, synced (state_save), then the write to the kernel.
 * A state file that cannot be written leaves the scanner as it is.  The way back: the write,
 * then the values forgotten in the file.
 */
#include "agent/scan_lever.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "agent/daemon.h"
#include "agent/handlers.h"
#include "agent/log.h"
#include "agent/state.h"

static int
scan_lever_read(struct daemon *d, struct scan_tunables *out, const char **why)
{
	struct host *h = d->host;

	if (h->ops->scan_tunables_get == NULL) {
		*why = "this host has no scan tunables";
		return -EOPNOTSUPP;
	}
	return h->ops->scan_tunables_get(h, out, why);
}

static int
scan_lever_write(struct daemon *d, const struct scan_tunables *t)
{
	struct host *h = d->host;

	return h->ops->scan_tunables_set != NULL ? h->ops->scan_tunables_set(h, t) : -EOPNOTSUPP;
}

static double
scan_lever_now_s(const struct daemon *d)
{
	return d->snap != NULL ? d->snap->now_s : 0;
}

/* Save the state file; false, with a rate-limited warning, when it cannot be written. */
static bool
scan_lever_state_save(struct daemon *d)
{
	char err[PATH_MAX + 256];

	if (state_save(d->state, d->cfg.state_file, err, sizeof(err)) == 0)
		return true;
	log_vm_warnx(SCAN_LEVER_LOG_ID, scan_lever_now_s(d), "%s", err);
	return false;
}

int
scan_lever_restore(struct daemon *d)
{
	char buf[96];
	int rc;

	if (d->state == NULL || !d->state->scan_saved)
		return 0;
	scan_control_format(&d->state->scan, buf, sizeof(buf));
	rc = scan_lever_write(d, &d->state->scan);
	if (rc < 0) {
		log_vm_warnx(SCAN_LEVER_LOG_ID, scan_lever_now_s(d),
		             "cannot put the kernel's scan tunables back to %s: %s (kept in %s)",
		             buf, strerror(-rc), d->cfg.state_file);
		return rc;
	}
	log_info("the kernel's scan tunables are back to the admin's: %s", buf);
	daemon_event(d, -1, NULL, "scan", "restore", 0, "scan tunables back to the admin's: %s",
	             buf);
	d->scan.slowed = false;
	d->scan.rule.slow = false;
	state_scan_set(d->state, NULL);
	scan_lever_state_save(d);
	return 0;
}

void
scan_lever_start(struct daemon *d)
{
	memset(&d->scan, 0, sizeof(d->scan));
	scan_control_init(&d->scan.rule);
	if (!d->state->scan_saved)
		return;
	log_info("%s holds the kernel's scan tunables as the admin had them (vnumad did not stop "
	         "in order): putting them back",
	         d->cfg.state_file);
	scan_lever_restore(d);
}

/* Slow the scanner to want, the admin's values saved first; false when nothing changed. */
static bool
scan_lever_slow(struct daemon *d, const struct scan_tunables *want)
{
	struct scan_lever *sl = &d->scan;
	char buf[96];
	int rc;
	bool dirty = d->state->dirty;

	state_scan_set(d->state, &sl->admin);
	if (!scan_lever_state_save(d)) {
		state_scan_set(d->state, NULL);
		d->state->dirty = dirty; /* as it was: nothing new to save */
		return false;
	}
	scan_control_format(want, buf, sizeof(buf));
	if ((rc = scan_lever_write(d, want)) < 0) {
		log_vm_warnx(SCAN_LEVER_LOG_ID, scan_lever_now_s(d),
		             "cannot slow the kernel's scan to %s: %s", buf, strerror(-rc));
		/* Partly written, perhaps: the admin's values again, then forgotten. */
		scan_lever_restore(d);
		return false;
	}
	sl->slowed = true;
	log_info("every VM settled for %.0f s: the kernel's scan slowed to %s",
	         SCAN_CONTROL_SETTLED_S, buf);
	daemon_event(d, -1, NULL, "scan", "slow", 0, "every VM settled: scan tunables %s", buf);
	return true;
}

/*
 * Read the admin's values (vnumad has not changed them); false when they cannot be used,
 * which is logged once per reason: scan_control = yes asks for a lever the host refuses.
 */
static bool
scan_lever_admin_read(struct daemon *d)
{
	struct scan_lever *sl = &d->scan;
	const char *why = "";
	int rc = scan_lever_read(d, &sl->admin, &why);

	sl->have_admin = rc == 0;
	if (rc == 0) {
		sl->refusal_said[0] = '\0';
		return true;
	}
	scan_control_init(&sl->rule);
	if (strcmp(sl->refusal_said, why) != 0) {
		snprintf(sl->refusal_said, sizeof(sl->refusal_said), "%s", why);
		log_warnx("scan_control = yes, but the kernel's scan tunables are %s: %s",
		          rc == -ENOENT || rc == -EOPNOTSUPP ? "absent" : "refused", why);
	}
	return false;
}

/* How many VMs the last round had and how many of them were settled (handlers_vm_state). */
static int
scan_lever_settled(struct daemon *d, int *nr_settled)
{
	struct engine_vm_report r;

	*nr_settled = 0;
	for (int i = 0; i < d->snap->nr_vms; i++) {
		const struct snap_vm *vm = &d->snap->vms[i];

		if (engine_report_vm(d->eng, vm->id, &r) == 0 &&
		    strcmp(handlers_vm_state(d, vm, &r), "settled") == 0)
			(*nr_settled)++;
	}
	return d->snap->nr_vms;
}

void
scan_lever_round(struct daemon *d)
{
	struct scan_lever *sl = &d->scan;
	struct scan_tunables want;
	int nr, settled;

	/* Values a crash left that could not be put back at start: first of all. */
	if (!sl->slowed && d->state->scan_saved && scan_lever_restore(d) < 0)
		return;
	if (!d->cfg.scan_control) {
		if (sl->slowed)
			scan_lever_restore(d); /* turned off by a reload */
		sl->have_admin = false;
		scan_control_init(&sl->rule);
		return;
	}
	/* Not slowed: what the kernel has is the admin's (who may have changed it since). */
	if (!sl->slowed && !scan_lever_admin_read(d))
		return;
	nr = scan_lever_settled(d, &settled);
	if (!scan_control_decide(&sl->rule, &sl->admin, nr, settled, d->snap->now_s, &want))
		return;
	if (sl->rule.slow) {
		if (!scan_lever_slow(d, &want))
			sl->rule.slow = false; /* tried again next round */
	} else if (scan_lever_restore(d) < 0) {
		sl->rule.slow = true; /* still slowed: tried again next round */
	}
}

json_object *
scan_lever_status(struct daemon *d)
{
	json_object *o = json_object_new_object();
	struct scan_tunables cur;
	const char *why = "";
	int rc = scan_lever_read(d, &cur, &why);
	const char *lever = rc == 0                              ? "present"
	                    : rc == -ENOENT || rc == -EOPNOTSUPP ? "absent"
	                                                         : "refused";

	json_object_object_add(o, "lever", json_object_new_string(lever));
	if (rc < 0)
		json_object_object_add(o, "reason", json_object_new_string(why));
	json_object_object_add(o, "control", json_object_new_boolean(d->cfg.scan_control));
	if (rc == 0)
		json_object_object_add(o, "current", state_scan_json(&cur));
	if (d->state != NULL && d->state->scan_saved)
		json_object_object_add(o, "admin", state_scan_json(&d->state->scan));
	else if (d->scan.have_admin)
		json_object_object_add(o, "admin", state_scan_json(&d->scan.admin));
	json_object_object_add(o, "slowed", json_object_new_boolean(d->scan.slowed));
	if (d->scan.rule.settled_since_s >= 0 && d->snap != NULL)
		json_object_object_add(
		    o, "settled_s",
		    json_object_new_double(d->snap->now_s - d->scan.rule.settled_since_s));
	return o;
}

/*
 * daemon.c - vnumad's set-up, main loop and rounds.
 */
#include "agent/daemon.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/control.h"
#include "agent/log.h"
#include "agent/metrics_export.h"
#include "agent/sdnotify.h"
#include "agent/state.h"
#include "agent/version.h"
#include "host/fault.h"
#include "policy/engine.h"

/* Longest poll() wait, so signals and the watchdog are never late by more than this. */
#define DAEMON_POLL_MAX_MS 500
/* Pages of 4 KiB in a MiB (counters are in pages, as vmstat's). */
#define DAEMON_PAGES_PER_MIB 256
#define DAEMON_KIB_PER_PAGE  4 /* counters are in 4-KiB pages (docs/protocol.md) */
/* Failed restores said one by one at exit; the rest are counted. */
#define DAEMON_RESTORE_SAY_MAX 10
/* Attempts to put one vCPU back before its entry is kept for the next restore: 3. */
#define DAEMON_RESTORE_TRIES 3
/* Rounds between STATUS= updates to systemd. */
#define DAEMON_STATUS_EVERY 10
/*
 * Host seconds the host clock may end short of what advance() was asked before the daemon
 * takes the host as lagging: it then calls advance() again without waiting (after serving the
 * socket), and says so in the log once.  0.5 s: several simulator ticks, so the last tick's
 * rounding never counts; a real host never lags.
 */
#define DAEMON_LAG_S 0.5

const char *const daemon_skip_names[DSKIP_MAX] = {"advisory", "manual", "off",
                                                  "paused",   "error",  "gone"};

double
daemon_wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
daemon_event(struct daemon *d, int vm_id, const char *vm, const char *kind, const char *rule,
             double gain, const char *fmt, ...)
{
	char text[256];
	const struct event *e;
	struct json_object *o;
	double now_s;
	bool named;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	now_s = d->host ? d->host->ops->now(d->host) : 0;
	e = events_add(&d->events, now_s, vm_id, vm, kind, rule, gain, "%s", text);
	/* the journal too (per VM rate-limited; the ring keeps every event) */
	named = vm != NULL && vm[0] != '\0';
	log_vm_action(vm_id, named ? vm : NULL, kind, now_s, "%s: %s%s%s%s%s%s", kind,
	              named && strncmp(text, vm, strlen(vm)) != 0 ? vm : "",
	              named && strncmp(text, vm, strlen(vm)) != 0 ? ": " : "", text,
	              rule != NULL && rule[0] != '\0' ? " (rule " : "", rule != NULL ? rule : "",
	              rule != NULL && rule[0] != '\0' ? ")" : "");
	if (d->ctl == NULL)
		return;
	o = event_to_json(e);
	control_broadcast_event(d->ctl, o);
	json_object_put(o);
}

struct dvm *
daemon_vm(struct daemon *d, int id)
{
	for (size_t i = 0; i < d->nr_vms; i++)
		if (d->vms[i].id == id)
			return &d->vms[i];
	return NULL;
}

const struct snap_vm *
daemon_snap_vm(const struct daemon *d, const char *name_or_id)
{
	char *end;
	long id;

	if (d->snap == NULL || name_or_id == NULL)
		return NULL;
	for (int i = 0; i < d->snap->nr_vms; i++)
		if (strcmp(d->snap->vms[i].name, name_or_id) == 0)
			return &d->snap->vms[i];
	/* An id is digits only: " 1003" or "+1003" is no VM's name and no id. */
	if (*name_or_id < '0' || *name_or_id > '9')
		return NULL;
	id = strtol(name_or_id, &end, 10);
	if (*end != '\0')
		return NULL;
	for (int i = 0; i < d->snap->nr_vms; i++)
		if (d->snap->vms[i].id == id)
			return &d->snap->vms[i];
	return NULL;
}

const char *
daemon_vm_mode_name(const struct daemon *d, const struct snap_vm *vm)
{
	return vm_policy_mode_name(vm->policy.mode);
}

/* ---- VM bookkeeping --------------------------------------------------------------- */

static struct dvm *
daemon_vm_add(struct daemon *d, const struct snap_vm *vm, int nr_nodes)
{
	struct dvm *v;

	util_array_reserve((void **)&d->vms, &d->cap_vms, d->nr_vms + 1, sizeof(*d->vms));
	v = &d->vms[d->nr_vms++];
	memset(v, 0, sizeof(*v));
	v->id = vm->id;
	snprintf(v->name, sizeof(v->name), "%s", vm->name);
	v->nr_vcpus = vm->nr_vcpus;
	v->nr_nodes = nr_nodes;
	/* one block: the fault levels, then each vCPU's last node */
	v->fault_prev =
	    xcalloc((size_t)vm->nr_vcpus * ((size_t)nr_nodes + 1), sizeof(*v->fault_prev));
	v->vcpu_node_prev = v->fault_prev + (size_t)vm->nr_vcpus * (size_t)nr_nodes;
	v->scan_mib_s = -1;
	v->fault_last_s = -1;
	v->recent_at_s = -1;
	return v;
}

/* VMs that left: an event, their state entries forgotten, their record freed. */
static void
daemon_vms_prune(struct daemon *d)
{
	size_t keep = 0;

	for (size_t i = 0; i < d->nr_vms; i++) {
		struct dvm *v = &d->vms[i];

		if (v->seen || ++v->missing_rounds < DAEMON_VM_GONE_ROUNDS) {
			if (v->seen)
				v->missing_rounds = 0;
			v->seen = false;
			d->vms[keep++] = *v;
			continue;
		}
		daemon_event(d, v->id, v->name, "leave", "", 0, "%s left", v->name);
		state_forget(d->state, v->name, -1);
		free(v->fault_prev);
	}
	d->nr_vms = keep;
}

/* New faults since the last level, robust to the kernel halving it once in between. */
static uint64_t
daemon_fault_delta(uint64_t prev, uint64_t level)
{
	if (level >= prev)
		return level - prev;
	return level >= prev / 2 ? level - prev / 2 : 0;
}

/*
 * This snapshot's new faults into the recent window (DAEMON_FAULT_HALF_LIFE_S).  The first
 * reading of a VM is the level the kernel gathered before vnumad saw it, of no known age and
 * from wherever its vCPUs ran then: it starts the window empty.
 */
static void
daemon_faults_recent(struct dvm *v, double now_s, uint64_t all, uint64_t local)
{
	if (v->recent_at_s < 0) {
		v->recent_at_s = now_s;
		return;
	}
	if (now_s > v->recent_at_s) {
		double keep = exp2(-(now_s - v->recent_at_s) / DAEMON_FAULT_HALF_LIFE_S);

		v->recent_all *= keep;
		v->recent_local *= keep;
	}
	v->recent_at_s = now_s;
	v->recent_all += (double)all;
	v->recent_local += (double)local;
	if (all > 0) {
		v->fault_last_s = now_s;
		v->fault_last_batch = all;
	}
}

double
daemon_fault_locality(const struct dvm *v, double now_s, double pass_s, double *age_s)
{
	double stale_s = pass_s * 2 > DAEMON_FAULT_STALE_S ? pass_s * 2 : DAEMON_FAULT_STALE_S;

	*age_s = -1;
	if (v == NULL || v->fault_last_s < 0)
		return -1;
	*age_s = now_s > v->fault_last_s ? now_s - v->fault_last_s : 0;
	if (*age_s > stale_s || (double)v->fault_last_batch < DAEMON_FAULT_MIN_PAGES ||
	    v->recent_all <= 0)
		return -1;
	return v->recent_local / v->recent_all; /* the decay leaves the share as it is */
}

static void
daemon_count_vm(struct daemon *d, struct dvm *v, const struct snap_vm *vm)
{
	int nn = d->snap->nr_nodes;
	uint64_t new_all = 0, new_local = 0;
	bool moved = false;

	for (int c = 0; c < vm->nr_vcpus && c < v->nr_vcpus; c++)
		for (int n = 0; n < nn && n < v->nr_nodes; n++) {
			uint64_t lvl =
			    vm->vcpus[c].faults_private[n] + vm->vcpus[c].faults_shared[n];
			uint64_t *prev =
			    &v->fault_prev[(size_t)c * (size_t)v->nr_nodes + (size_t)n];
			uint64_t delta = daemon_fault_delta(*prev, lvl);

			*prev = lvl;
			new_all += delta;
			new_local += n == vm->vcpus[c].node ? delta : 0;
		}
	v->c.hint_faults += new_all;
	d->total.hint_faults += new_all;
	v->c.hint_faults_local += new_local;
	d->total.hint_faults_local += new_local;
	for (int c = 0; v->vcpu_node_prev != NULL && c < vm->nr_vcpus && c < v->nr_vcpus; c++) {
		uint64_t node = (uint64_t)vm->vcpus[c].node + 1;

		moved |= v->vcpu_node_prev[c] != 0 && v->vcpu_node_prev[c] != node;
		v->vcpu_node_prev[c] = node;
	}
	if (moved) { /* start over; this look's faults may predate the move */
		v->recent_all = v->recent_local = 0;
		v->fault_last_batch = 0;
	} else {
		daemon_faults_recent(v, d->snap->now_s, new_all, new_local);
	}
	v->c.pages_migrated += vm->mig_done_mib * DAEMON_PAGES_PER_MIB;
	v->c.pages_migrate_failed += vm->mig_failed_mib * DAEMON_PAGES_PER_MIB;
	d->total.pages_migrated += vm->mig_done_mib * DAEMON_PAGES_PER_MIB;
	d->total.pages_migrate_failed += vm->mig_failed_mib * DAEMON_PAGES_PER_MIB;
	if (vm->kernel_moved_known) {
		/* A cumulative sum over live threads: it drops when a vCPU thread exits, and
		 * counting restarts from there (the exited thread's moves were counted). */
		uint64_t delta =
		    v->kernel_seen && vm->kernel_moved_kib >= v->kernel_prev_kib
		        ? (vm->kernel_moved_kib - v->kernel_prev_kib) / DAEMON_KIB_PER_PAGE
		        : 0;

		v->c.pages_migrated_kernel += delta;
		d->total.pages_migrated_kernel += delta;
		v->kernel_prev_kib = vm->kernel_moved_kib;
		v->kernel_seen = true;
	}
}

/*
 * A policy that names a node this host does not have (the parser knows no topology: it takes
 * any node index 0-63) counts as a policy that does not parse: the defaults apply, and list and
 * vminfo show why, after where it came from.  A host's policy handed over as manual stays so,
 * as with a parse error (libvirt does that when the admin pinned vCPUs in the domain XML).
 */
static void
daemon_policy_check_nodes(const struct daemon *d, const struct dvm *v, struct snap_vm *vm,
                          const struct policy_file *f)
{
	enum vm_policy_mode mode = vm->policy.mode;
	char msg[200];

	if (!vm->policy_ok ||
	    vm_policy_check_nodes(&vm->policy, d->snap->nr_nodes, msg, sizeof(msg)) == 0)
		return;
	vm_policy_init_default(&vm->policy);
	if (strcmp(v->policy_source, "host") == 0 && mode == VM_POLICY_MODE_MANUAL)
		vm->policy.mode = VM_POLICY_MODE_MANUAL;
	vm->policy_ok = false;
	if (f != NULL) /* a long file name is cut, never the message */
		snprintf(vm->policy_error, sizeof(vm->policy_error), "%.*s.xml: %s",
		         (int)(sizeof(vm->policy_error) - sizeof(".xml: ") - strlen(msg)), f->name,
		         msg);
	else if (strcmp(v->policy_source, "host") == 0)
		snprintf(vm->policy_error, sizeof(vm->policy_error), "%s: %s",
		         strcmp(d->backend, "sim") == 0 ? "scenario policy" : "domain metadata",
		         msg);
	else
		snprintf(vm->policy_error, sizeof(vm->policy_error), "live policy: %s", msg);
}

/*
 * The policy configured for the VM, into vm->policy and v->configured.  Precedence: live
 * (vnumactl), the host's own (domain metadata), a policy file, the default.
 */
static void
daemon_configured_policy(struct daemon *d, struct dvm *v, struct snap_vm *vm)
{
	const struct policy_file *f = NULL;

	if (v->live_policy) {
		vm->policy = v->policy;
		vm->policy_ok = true;
		v->policy_source = "live";
	} else if (vm->policy_set) {
		v->policy_source = "host";
	} else if ((f = policy_files_match(&d->pfiles, vm->name)) != NULL) {
		vm->policy = f->policy; /* the default policy when the file is bad */
		vm->policy_ok = f->ok;
		/* cut to the snapshot's field, which names the file and the first bad attribute */
		memcpy(vm->policy_error, f->error, sizeof(vm->policy_error) - 1);
		vm->policy_error[sizeof(vm->policy_error) - 1] = '\0';
		v->policy_source = "file";
	} else {
		v->policy_source = "default";
	}
	daemon_policy_check_nodes(d, v, vm, f);
	/*
	 * A bad policy means the defaults.  A host may still hand a bad policy over as manual:
	 * libvirt does when the admin pinned vCPUs in the domain XML, which stands either way.
	 */
	if (strcmp(v->policy_source, "default") == 0 ||
	    (!vm->policy_ok && vm->policy.mode != VM_POLICY_MODE_MANUAL))
		vm->policy.mode = d->cfg.default_mode;
	v->configured = vm->policy;
}

/*
 * The policy the engine sees: the configured one, bounded by what the host enforces, then
 * what holds only for now (admin pins, pausing).  What differs from the configured policy for
 * a reason vminfo should give is in v->policy_note.
 */
static void
daemon_effective_policy(struct daemon *d, struct dvm *v, struct snap_vm *vm)
{
	daemon_configured_policy(d, v, vm);
	v->policy_note[0] = '\0';
	/* What the host enforces (libvirt's strict numatune) bounds every policy. */
	if ((vm->policy.nodes & vm->host_nodes) != 0)
		vm->policy.nodes &= vm->host_nodes;
	else
		vm->policy.nodes = vm->host_nodes;
	/* A policy file or the host may ask for cells on a VM that has none: compact, said so. */
	if (vm->policy.placement == VM_POLICY_PLACEMENT_CELLS && vm->nr_cells == 0) {
		vm->policy.placement = VM_POLICY_PLACEMENT_COMPACT;
		snprintf(v->policy_note, sizeof(v->policy_note),
		         "placement cells: the VM has no guest vNUMA cells, so it is placed as "
		         "compact");
	} else if (vm->policy.placement != VM_POLICY_PLACEMENT_CELLS &&
	           snap_vm_by_cells(d->snap, vm)) {
		snprintf(
		    v->policy_note, sizeof(v->policy_note),
		    "placement compact: its %llu MiB fit no host node, so it is placed by its %d "
		    "guest cells",
		    (unsigned long long)vm->mem_mib, vm->nr_cells);
	}
	if (v->admin_pinned)
		vm->policy.mode = VM_POLICY_MODE_MANUAL;
	if (vm->policy.mode == VM_POLICY_MODE_ADVISORY)
		d->skipped[DSKIP_ADVISORY]++;
	else if (vm->policy.mode == VM_POLICY_MODE_MANUAL)
		d->skipped[DSKIP_MANUAL]++;
	else if (vm->policy.mode == VM_POLICY_MODE_OFF)
		d->skipped[DSKIP_OFF]++;
	else if (d->paused)
		d->skipped[DSKIP_PAUSED]++;
	if (d->paused && vm->policy.mode == VM_POLICY_MODE_AUTO)
		vm->policy.mode = VM_POLICY_MODE_ADVISORY;
}

/* Observe: the snapshot, new and departed VMs, counters, effective policies. */
static int
daemon_observe(struct daemon *d)
{
	struct snapshot *snap = NULL;
	int rc = d->host->ops->snapshot(d->host, &snap);

	if (rc < 0)
		return rc;
	snapshot_free(d->snap);
	d->snap = snap;
	for (int i = 0; i < snap->nr_vms; i++) {
		struct snap_vm *vm = &snap->vms[i];
		struct dvm *v = daemon_vm(d, vm->id);

		if (v != NULL && vm->nr_vcpus < v->nr_vcpus &&
		    v->missing_rounds + 1 < DAEMON_VM_GONE_ROUNDS) {
			/*
			 * Fewer vCPUs under the same id: most often a QEMU that is exiting, its
			 * threads ending one by one (a destroyed domain), seldom a vCPU unplugged.
			 * Left out of the round as if missed (its record is kept): when the process
			 * is gone by DAEMON_VM_GONE_ROUNDS it left once; when it is still there, it
			 * left and arrives with its new vCPUs.
			 */
			snapshot_vm_remove(snap, i--);
			continue;
		}
		if (v != NULL && v->nr_vcpus != vm->nr_vcpus) {
			/* Same id, another VM: the old one left, this one arrives. */
			daemon_event(d, v->id, v->name, "leave", "", 0, "%s left", v->name);
			state_forget(d->state, v->name, -1);
			free(v->fault_prev);
			*v = d->vms[--d->nr_vms];
			v = NULL;
		}
		if (v == NULL) {
			v = daemon_vm_add(d, vm, snap->nr_nodes);
			daemon_event(d, vm->id, vm->name, "arrive", "", 0, "%s: %d vCPUs, %llu MiB",
			             vm->name, vm->nr_vcpus, (unsigned long long)vm->mem_mib);
		}
		v->seen = true;
		daemon_count_vm(d, v, vm);
		daemon_effective_policy(d, v, vm);
	}
	daemon_vms_prune(d);
	return 0;
}

int
daemon_round(struct daemon *d)
{
	double t0 = daemon_wall_s(), ms, decide_t0;
	char err[PATH_MAX + 256];
	int rc = daemon_observe(d);

	if (rc < 0) {
		log_warnx("round: cannot read the host: %s", strerror(-rc));
		return rc;
	}
	plan_reset(&d->plan);
	decide_t0 = daemon_wall_s();
	rc = d->bal->decide(d->eng, d->snap, &d->plan);
	hist_observe(&d->decide_hist, daemon_wall_s() - decide_t0);
	if (rc < 0) {
		log_warnx("round: the engine failed: %s", strerror(-rc));
		return rc;
	}
	actions_apply(d, &d->plan);
	d->host->ops->commit(d->host);
	scan_lever_round(d);
	if (d->state->dirty && state_save(d->state, d->cfg.state_file, err, sizeof(err)) < 0)
		log_vm_warnx(DAEMON_STATE_LOG_ID, d->snap->now_s, "%s", err);
	ms = (daemon_wall_s() - t0) * 1000.0;
	d->rounds++;
	d->round_ms_sum += ms;
	d->round_ms_max = ms > d->round_ms_max ? ms : d->round_ms_max;
	metrics_export_round(d); /* after the counters: the text tells this round whole */
	return 0;
}

/* ---- set-up and the loop ---------------------------------------------------------- */

static int
daemon_group_gid(const char *name, gid_t *gid, char *err, size_t errlen)
{
	struct group *gr;

	*gid = (gid_t)-1;
	if (name[0] == '\0')
		return 0;
	gr = getgrnam(name);
	if (gr == NULL) {
		snprintf(err, errlen, "control_group: no group '%s' on this host", name);
		return -ENOENT;
	}
	*gid = gr->gr_gid;
	return 0;
}

int
daemon_config_check(const struct config *cfg, char *err, size_t errlen)
{
	char why[128];
	gid_t gid;
	int rc = daemon_group_gid(cfg->control_group, &gid, why, sizeof(why));

	if (rc == 0)
		return 0;
	if (cfg->control_group_line > 0)
		util_errf(err, errlen, "%s:%d: %s", cfg->path, cfg->control_group_line, why);
	else if (cfg->path[0] != '\0')
		util_errf(err, errlen, "%s: %s", cfg->path, why);
	else
		util_errf(err, errlen, "%s", why);
	return rc;
}

static int
daemon_open_control(struct daemon *d, char *err, size_t errlen)
{
	struct control_config cc = {
	    .path = d->cfg.socket_path,
	    .mode = d->cfg.socket_mode,
	    .commands = daemon_commands,
	    .ctx = d,
	};
	int rc = daemon_group_gid(d->cfg.control_group, &cc.group, err, errlen);

	return rc < 0 ? rc : control_open(&cc, &d->ctl, err, errlen);
}

int
daemon_host_open(struct daemon *d, char *err, size_t errlen)
{
	struct host *linux_host;
	int rc;

	if (d->simulate)
		rc = host_sim_open(d->scenario, d->host_profile, &d->host, err, errlen);
	else if ((rc = host_linux_open(NULL, d->cfg.migrate_rate_mib_s, &linux_host, err,
	                               errlen)) == 0 &&
	         d->connect_uri[0] != '\0')
		rc = host_libvirt_module_open(d->connect_uri, linux_host, &d->host, err, errlen);
	else if (rc == 0)
		d->host = linux_host;
	if (rc == 0 && !d->simulate) {
		d->linux_host = linux_host;
		host_linux_set_observe_cap(linux_host, d->cfg.observe_cpu_cap_percent);
	}
	if (rc == 0)
		d->backend = d->host->ops->name;
	/* A test of the daemon itself: its host's operations fail at a seeded rate. */
	if (rc == 0 && d->fault_spec[0] != '\0')
		rc = host_fault_open(d->host, d->fault_spec, &d->host, err, errlen);
	return rc;
}

void
daemon_state_load(struct daemon *d)
{
	char note[PATH_MAX + STATE_VM_NAME_MAX + 512], err[PATH_MAX + 256];

	state_load_or_set_aside(d->cfg.state_file, &d->state, note, sizeof(note));
	if (note[0] != '\0')
		log_warnx("state file %s", note);
	/* Entries taken from a file set aside: into a new file at once, not at the first pin. */
	if (d->state->dirty && state_save(d->state, d->cfg.state_file, err, sizeof(err)) < 0)
		log_warnx("%s", err);
}

/* The policy files refused at a start or reload, one warning each (their VMs run on the
 * default policy, and list and vminfo say why). */
static void
daemon_policy_files_warn(const struct daemon *d)
{
	char buf[4096];
	size_t nr = policy_files_errors(&d->pfiles, d->cfg.policy_dir, buf, sizeof(buf));

	if (nr > 0)
		log_warnx("%zu policy file%s refused (the VMs they name run on the default "
		          "policy):\n%s",
		          nr, nr == 1 ? "" : "s", buf);
}

int
daemon_init(struct daemon *d, char *err, size_t errlen)
{
	struct balancer_args args = {.seed = 1};
	int rc;

	events_init(&d->events);
	plan_init(&d->plan);
	d->lock_fd = -1;
	/*
	 * Everything that can fail comes before the state file is read: a start that fails
	 * (another daemon on the socket, a missing control_group) leaves it as it is, and
	 * daemon_fini restores nothing from it (d->started).
	 */
	rc = state_lock(d->cfg.state_file, &d->lock_fd, err, errlen);
	if (rc < 0)
		return rc;
	rc = daemon_config_check(&d->cfg, err, errlen);
	if (rc < 0)
		return rc;
	rc = policy_files_load(d->cfg.policy_dir, &d->pfiles, err, errlen);
	if (rc < 0)
		return rc;
	daemon_policy_files_warn(d);
	rc = daemon_host_open(d, err, errlen);
	if (rc < 0)
		return rc;
	d->bal = &vnumad_balancer_ops;
	args.rate_mib_s = d->cfg.migrate_rate_mib_s;
	args.rebalance_period_s = d->cfg.rebalance_period_s;
	d->eng = d->bal->create(&args);
	rc = daemon_open_control(d, err, errlen);
	if (rc < 0)
		return rc;
	metrics_export_overrides(d, &d->cfg);
	rc = metrics_export_configure(d, &d->cfg, err, errlen);
	if (rc < 0)
		return rc;
	daemon_state_load(d);
	scan_lever_start(d);
	d->watchdog_usec = sdnotify_watchdog_usec();
	d->started_wall = daemon_wall_s();
	d->started = true;
	return 0;
}

int
daemon_reload(struct daemon *d, char *err, size_t errlen)
{
	struct policy_files pfiles;
	struct config cfg;
	int rc = config_load(d->config_path, &cfg, err, errlen);

	if (rc == -ENOENT && !d->config_given) {
		config_defaults(&cfg);
		rc = 0;
	}
	if (rc == 0)
		rc = daemon_config_check(&cfg, err, errlen); /* what the next start would refuse */
	if (rc < 0)
		return rc;
	/*
	 * The socket and the state file stay where they are until a restart.  Compared with the
	 * file as last read, not with the running values, which --socket and --state override:
	 * a reload that changed none of them says nothing.
	 */
	if (strcmp(cfg.socket_path, d->cfg_file.socket_path) != 0 ||
	    strcmp(cfg.state_file, d->cfg_file.state_file) != 0 ||
	    cfg.socket_mode != d->cfg_file.socket_mode ||
	    strcmp(cfg.control_group, d->cfg_file.control_group) != 0 ||
	    cfg.log_target != d->cfg_file.log_target)
		log_warnx("socket, socket_mode, control_group, state_file and log_target changes "
		          "take effect at the next start");
	d->cfg_file = cfg;
	memcpy(cfg.socket_path, d->cfg.socket_path, sizeof(cfg.socket_path));
	memcpy(cfg.state_file, d->cfg.state_file, sizeof(cfg.state_file));
	rc = policy_files_load(cfg.policy_dir, &pfiles, err, errlen);
	if (rc < 0)
		return rc;
	/* The last step that may refuse: the listener moves only with a reload that is taken. */
	metrics_export_overrides(d, &cfg);
	rc = metrics_export_configure(d, &cfg, err, errlen);
	if (rc < 0) {
		policy_files_free(&pfiles);
		return rc;
	}
	policy_files_free(&d->pfiles);
	d->pfiles = pfiles;
	d->cfg = cfg;
	daemon_policy_files_warn(d);
	log_set_level(cfg.log_level);
	engine_configure(d->eng, cfg.migrate_rate_mib_s, cfg.rebalance_period_s);
	if (d->linux_host != NULL)
		host_linux_set_observe_cap(d->linux_host, cfg.observe_cpu_cap_percent);
	daemon_event(d, -1, NULL, "reload", "", 0, "configuration reloaded from %s",
	             d->config_path);
	return 0;
}

static void
daemon_notify(struct daemon *d)
{
	char msg[160];
	double now = daemon_wall_s();

	if (d->rounds % DAEMON_STATUS_EVERY == 1) {
		snprintf(msg, sizeof(msg), "STATUS=%llu rounds, %zu VMs%s",
		         (unsigned long long)d->rounds, d->nr_vms, d->paused ? ", paused" : "");
		sdnotify(msg);
	}
	if (d->watchdog_usec && (now - d->last_watchdog_wall) * 2e6 >= (double)d->watchdog_usec) {
		sdnotify("WATCHDOG=1");
		d->last_watchdog_wall = now;
	}
}

/* Where host time should be now: the simulator runs d->speed times faster than the wall. */
static double
daemon_host_target(const struct daemon *d)
{
	return d->host_start + (daemon_wall_s() - d->wall_start) * d->speed;
}

static void
daemon_poll(struct daemon *d, int timeout_ms)
{
	struct pollfd fds[CONTROL_MAX_POLLFDS];
	int n = control_pollfds(d->ctl, fds, CONTROL_MAX_POLLFDS);

	/* Serviced after every wait, so idle clients are swept even when nothing is ready. */
	if (poll(fds, (nfds_t)n, timeout_ms) >= 0)
		control_service(d->ctl, fds, n);
}

static void
daemon_handle_reload(struct daemon *d)
{
	char err[4096];

	d->reload = 0;
	if (daemon_reload(d, err, sizeof(err)) < 0)
		log_warnx("reload refused, keeping the running configuration:\n%s", err);
	else
		log_info("configuration reloaded from %s", d->config_path);
}

int
daemon_run(struct daemon *d)
{
	d->wall_start = daemon_wall_s();
	d->host_start = d->host->ops->now(d->host);
	d->next_sample_s = d->host_start;
	sdnotify("READY=1");
	log_info("vnumad %s running on the %s host, socket %s", vnumad_version(), d->backend,
	         d->cfg.socket_path);
	while (!d->stop) {
		double target = daemon_host_target(d);
		int arrived;

		/*
		 * A simulated clock waits for the daemon: it never runs past the next round, so
		 * every sample period has its round even when the daemon is slower than --speed
		 * asks (the simulated clock then lags the wall).  A real host's time passes anyway.
		 */
		if (d->simulate && target > d->next_sample_s)
			target = d->next_sample_s;
		arrived = d->host->ops->advance(d->host, target);
		double now = d->host->ops->now(d->host), wait_s;
		bool lagging = now < daemon_host_target(d) - DAEMON_LAG_S;

		if (arrived < 0)
			log_warnx("host: %s", strerror(-arrived));
		if (lagging && !d->lag_said) {
			log_warnx(
			    "host: the simulated host runs slower than --speed %g asks (%.1f s "
			    "behind): its clock lags the wall clock from now on, the daemon "
			    "still answers",
			    d->speed, target - now);
			d->lag_said = true;
		}
		if (arrived > 0 || now >= d->next_sample_s - 1e-9) {
			daemon_round(d);
			d->next_sample_s = now + d->cfg.sample_period_s;
			daemon_notify(d);
		}
		if (d->reload)
			daemon_handle_reload(d);
		wait_s = (d->next_sample_s - d->host->ops->now(d->host)) / d->speed;
		wait_s = wait_s < 0 || lagging ? 0 : wait_s;
		if (d->host->ops->wake_s != NULL) {
			double wake_s = d->host->ops->wake_s(d->host) / d->speed;

			wait_s = wake_s > 0 && wake_s < wait_s ? wake_s : wait_s;
		}
		daemon_poll(d, wait_s * 1000 > DAEMON_POLL_MAX_MS ? DAEMON_POLL_MAX_MS
		                                                  : (int)(wait_s * 1000));
	}
	sdnotify("STOPPING=1");
	return 0;
}

/* The snapshot's VM named name (by name only: state entries are kept by name), or NULL. */
static const struct snap_vm *
daemon_snap_vm_named(const struct daemon *d, const char *name, const struct snap_vm *hint)
{
	if (hint != NULL && strcmp(hint->name, name) == 0)
		return hint; /* a VM's entries mostly follow one another */
	for (int i = 0; i < d->snap->nr_vms; i++)
		if (strcmp(d->snap->vms[i].name, name) == 0)
			return &d->snap->vms[i];
	return NULL;
}

/* The daemon still takes the VM called name for present (seen within the last rounds). */
static bool
daemon_vm_named_tracked(const struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->nr_vms; i++)
		if (strcmp(d->vms[i].name, name) == 0)
			return true;
	return false;
}

/*
 * Put entry e back; whether to keep it (the pin failed other than by the VM or vCPU being
 * gone).  Counts into *restored and *widened; says why for the first DAEMON_RESTORE_SAY_MAX
 * failures.
 */
static bool
daemon_restore_entry(struct daemon *d, const struct state_entry *e, const struct snap_vm *vm,
                     int *restored, int *widened, size_t *failed)
{
	char buf[NODEMASK_STR_MAX];
	bool wide;
	int rc;

	if (vm == NULL && daemon_vm_named_tracked(d, e->vm)) {
		/* Missed by this snapshot, not gone (DAEMON_VM_GONE_ROUNDS): keep it for later. */
		if ((*failed)++ < DAEMON_RESTORE_SAY_MAX)
			log_warnx("%s vCPU %d: not seen by the last look at the host: kept in %s",
			          e->vm, e->vcpu, d->cfg.state_file);
		return true;
	}
	if (vm == NULL)
		return false; /* gone: nothing to put back */
	/* A failure other than the thread being gone may pass (EBUSY, EAGAIN, EIO): try again. */
	for (int tries = 0; tries < DAEMON_RESTORE_TRIES; tries++) {
		rc = actions_put_back(d, vm, e->vcpu, e->orig_nodes, &wide);
		if (rc == 0 || rc == -ESRCH || rc == -ENOENT)
			break;
	}
	if (rc == -ESRCH || rc == -ENOENT)
		return false;
	if (rc == 0) {
		(*restored)++;
		*widened += wide;
		return false;
	}
	if ((*failed)++ < DAEMON_RESTORE_SAY_MAX)
		log_warnx("%s vCPU %d: cannot put it back on nodes %s: %s (kept in %s)", e->vm,
		          e->vcpu, nodemask_format(e->orig_nodes, buf, sizeof(buf)), strerror(-rc),
		          d->cfg.state_file);
	return true;
}

int
daemon_restore(struct daemon *d)
{
	char err[PATH_MAX + 256];
	const struct snap_vm *vm = NULL;
	int restored = 0, widened = 0;
	size_t failed = 0;
	bool *keep;

	/*
	 * A fresh look: the last round's snapshot may be old, or may have missed a VM that is
	 * still there.  A read that fails is tried again.
	 */
	for (int tries = 0; tries < DAEMON_RESTORE_TRIES; tries++)
		if (daemon_observe(d) == 0)
			break;
	if (d->snap == NULL)
		return -EIO;
	keep = xcalloc(d->state->nr + 1, sizeof(*keep));
	for (size_t i = 0; i < d->state->nr; i++) {
		const struct state_entry *e = &d->state->entries[i];

		vm = daemon_snap_vm_named(d, e->vm, vm);
		keep[i] = daemon_restore_entry(d, e, vm, &restored, &widened, &failed);
	}
	if (d->host->ops->put_back != NULL)
		d->host->ops->put_back(d->host);
	/* The end of a round of pins: libvirt's backend puts each VM's emulator threads back on
	 * the union of its vCPUs' nodes, as it does after vnumad's own pins. */
	d->host->ops->commit(d->host);
	state_retain(d->state, keep);
	free(keep);
	if (d->state->dirty && state_save(d->state, d->cfg.state_file, err, sizeof(err)) < 0)
		log_warnx("%s", err);
	log_info("restored the original affinity of %d vCPUs%s", restored,
	         widened ? " (some on every node: see above)" : "");
	if (failed > 0)
		log_warnx("%zu vCPUs could not be put back; their entries stay in %s for the next "
		          "restore (vnumad --restore, or the next stop)",
		          failed, d->cfg.state_file);
	return restored;
}

void
daemon_fini(struct daemon *d)
{
	metrics_export_close(d); /* its thread first; it reads nothing of the rest */
	if (d->started && d->cfg.restore_on_exit && d->state->nr > 0)
		daemon_restore(d);
	else if (d->started && d->cfg.restore_on_exit && d->host->ops->put_back != NULL)
		d->host->ops->put_back(d->host); /* no pins to put back, maybe memory nodes */
	if (d->started)
		scan_lever_restore(d);
	if (d->ctl != NULL)
		control_close(d->ctl);
	if (d->eng != NULL)
		d->bal->destroy(d->eng);
	if (d->host != NULL)
		d->host->ops->close(d->host);
	for (size_t i = 0; i < d->nr_vms; i++)
		free(d->vms[i].fault_prev);
	free(d->vms);
	snapshot_free(d->snap);
	plan_free(&d->plan);
	state_free(d->state);
	policy_files_free(&d->pfiles);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
}

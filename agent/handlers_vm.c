/*
 * handlers_vm.c - control commands about one VM: vminfo, policy (show and set), pin, unpin,
 * migrate, explain, and placement advice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/handlers.h"
#include "agent/log.h"
#include "agent/state.h"
#include "policy/engine.h"
#include "policy/idlist.h"

struct json_object *
handlers_counters(const struct dvm_counters *c)
{
	struct json_object *o = json_object_new_object();
	double local =
	    c->hint_faults ? 100.0 * (double)c->hint_faults_local / (double)c->hint_faults : 0.0;

	json_object_object_add(o, "hint_faults", json_object_new_int64((int64_t)c->hint_faults));
	json_object_object_add(o, "hint_faults_local",
	                       json_object_new_int64((int64_t)c->hint_faults_local));
	json_object_object_add(o, "local_pct", json_object_new_double(local));
	json_object_object_add(o, "pages_migrated",
	                       json_object_new_int64((int64_t)c->pages_migrated));
	json_object_object_add(o, "pages_migrate_failed",
	                       json_object_new_int64((int64_t)c->pages_migrate_failed));
	json_object_object_add(o, "pages_migrated_kernel",
	                       json_object_new_int64((int64_t)c->pages_migrated_kernel));
	json_object_object_add(o, "vcpu_moves", json_object_new_int64((int64_t)c->vcpu_moves));
	json_object_object_add(o, "flips", json_object_new_int64((int64_t)c->flips));
	json_object_object_add(o, "binds", json_object_new_int64((int64_t)c->binds));
	json_object_object_add(o, "unsupported", json_object_new_int64((int64_t)c->unsupported));
	return o;
}

/* Whether vnumad moves the VM's memory, and why not (vminfo "memory moves"). */
static const char *
hv_memory_moves(const struct snap_vm *vm)
{
	if (engine_vm_mem_pinned(vm))
		return "no: pinned (VmPin: an assigned device or registered buffers)";
	if (!vm->policy.migrate)
		return "no: policy migrate=no";
	return "yes";
}

static struct json_object *
hv_policy_json(const struct vm_policy *p)
{
	struct json_object *o = json_object_new_object();
	char buf[NODEMASK_STR_MAX];

	json_object_object_add(o, "mode", json_object_new_string(vm_policy_mode_name(p->mode)));
	json_object_object_add(
	    o, "nodes",
	    json_object_new_string(
	        p->nodes == NODEMASK_ALL ? "all" : nodemask_format(p->nodes, buf, sizeof(buf))));
	json_object_object_add(o, "placement",
	                       json_object_new_string(vm_policy_placement_name(p->placement)));
	json_object_object_add(o, "migrate", json_object_new_boolean(p->migrate));
	json_object_object_add(o, "rate_kib_s", json_object_new_int64((int64_t)p->rate_kib_s));
	json_object_object_add(o, "priority", json_object_new_int(p->priority));
	json_object_object_add(o, "group", json_object_new_string(p->group));
	return o;
}

static void
hv_sampling(struct daemon *d, const struct snap_vm *vm, struct json_object *o, double mib_s)
{
	const char *why = "";
	const char *src = d->host->ops->sampling_source(d->host, vm->id, &why);

	json_object_object_add(o, "sampling_mib_s", json_object_new_double(mib_s));
	json_object_object_add(o, "sampling_source", json_object_new_string(src));
	json_object_object_add(o, "sampling_reason", json_object_new_string(why));
	json_object_object_add(o, "host_note",
	                       json_object_new_string(d->host->ops->vm_note != NULL
	                                                  ? d->host->ops->vm_note(d->host, vm->id)
	                                                  : ""));
}

static struct json_object *
hv_vcpus(const struct daemon *d, const struct snap_vm *vm)
{
	struct json_object *arr = json_object_new_array();
	char buf[NODEMASK_STR_MAX];

	for (int v = 0; v < vm->nr_vcpus; v++) {
		const struct snap_vcpu *sv = &vm->vcpus[v];
		struct json_object *o = json_object_new_object();
		uint64_t all = nodemask_all_of(d->snap->nr_nodes);

		json_object_object_add(o, "vcpu", json_object_new_int(v));
		json_object_object_add(o, "tid", json_object_new_int(sv->tid));
		json_object_object_add(o, "cpu", json_object_new_int(sv->cpu));
		json_object_object_add(o, "node", json_object_new_int(sv->node));
		json_object_object_add(
		    o, "allowed",
		    json_object_new_string(
		        (sv->allowed_nodes & all) == all
		            ? "all"
		            : nodemask_format(sv->allowed_nodes, buf, sizeof(buf))));
		json_object_object_add(
		    o, "pinned",
		    json_object_new_boolean(state_find(d->state, vm->name, v) != NULL));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* The vCPUs (positions, as in "vcpu") of cell c, as ranges: "0-3,8". */
static void
hv_cell_vcpus(const struct snap_vm *vm, int c, struct util_buf *buf)
{
	for (int v = 0; v < vm->nr_vcpus; v++) {
		int last = v;

		if (vm->vcpu_cell[v] != c)
			continue;
		while (last + 1 < vm->nr_vcpus && vm->vcpu_cell[last + 1] == c)
			last++;
		util_buf_printf(buf, "%s%d", buf->len ? "," : "", v);
		if (last > v)
			util_buf_printf(buf, "-%d", last);
		v = last;
	}
}

/* The guest's vNUMA cells: vCPUs, guest-physical range and the home vnumad gave each. */
/*
 * A cell's own residency when the host measures it: resident_mib and resident_sure_mib per
 * node index, and "resident" as text ("0:144 1:16 (at least 0:140 1:12)"; "-" when not
 * measured, the parenthesis only when the figure is not exact).
 */
static void
hv_cell_resident(const struct daemon *d, const struct snap_cell *cell, struct json_object *o)
{
	struct json_object *res, *sure;
	struct util_buf text = {0};
	bool exact = true;

	if (cell->resident_mib == NULL || d->snap == NULL) {
		json_object_object_add(o, "resident", json_object_new_string("-"));
		return;
	}
	res = json_object_new_array();
	sure = json_object_new_array();
	for (int n = 0; n < d->snap->nr_nodes; n++) {
		json_object_array_add(res, json_object_new_int64((int64_t)cell->resident_mib[n]));
		json_object_array_add(sure,
		                      json_object_new_int64((int64_t)cell->resident_sure_mib[n]));
		util_buf_printf(&text, "%s%d:%llu", n ? " " : "", d->snap->nodes[n].id,
		                (unsigned long long)cell->resident_mib[n]);
		exact = exact && cell->resident_sure_mib[n] == cell->resident_mib[n];
	}
	for (int n = 0; n < d->snap->nr_nodes && !exact; n++)
		util_buf_printf(&text, "%s%d:%llu%s", n ? " " : " (at least ", d->snap->nodes[n].id,
		                (unsigned long long)cell->resident_sure_mib[n],
		                n + 1 == d->snap->nr_nodes ? ")" : "");
	json_object_object_add(o, "resident_mib", res);
	json_object_object_add(o, "resident_sure_mib", sure);
	json_object_object_add(o, "resident", json_object_new_string(text.data));
	free(text.data);
}

static struct json_object *
hv_cells(const struct daemon *d, const struct snap_vm *vm)
{
	struct json_object *arr = json_object_new_array();
	char nodes[NODEMASK_STR_MAX];

	for (int c = 0; c < vm->nr_cells; c++) {
		struct json_object *o = json_object_new_object();
		struct util_buf vcpus = {0};
		uint64_t home = engine_report_cell_home(d->eng, vm->id, c);

		hv_cell_vcpus(vm, c, &vcpus);
		json_object_object_add(o, "cell", json_object_new_int(c));
		json_object_object_add(o, "vcpus",
		                       json_object_new_string(vcpus.len ? vcpus.data : ""));
		json_object_object_add(o, "mem_start_mib",
		                       json_object_new_int64((int64_t)vm->cells[c].mem_start_mib));
		json_object_object_add(o, "memory_mib",
		                       json_object_new_int64((int64_t)vm->cells[c].mem_mib));
		json_object_object_add(
		    o, "home",
		    json_object_new_string(home ? nodemask_format(home, nodes, sizeof(nodes))
		                                : "-"));
		hv_cell_resident(d, &vm->cells[c], o);
		json_object_array_add(arr, o);
		free(vcpus.data);
	}
	return arr;
}

enum proto_status
h_vminfo(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	enum proto_status st;
	const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
	struct json_object *o, *res;
	struct engine_vm_report r;
	struct dvm *v;
	char *xml, note[320];

	if (vm == NULL)
		return st;
	engine_report_vm(d->eng, vm->id, &r);
	v = daemon_vm(d, vm->id);
	o = handlers_vm_row(d, vm);
	xml = vm_policy_format_xml(&vm->policy);
	json_object_object_add(o, "policy", hv_policy_json(&vm->policy));
	json_object_object_add(o, "policy_xml", json_object_new_string(xml));
	free(xml);
	json_object_object_add(o, "policy_note",
	                       json_object_new_string(v != NULL ? v->policy_note : ""));
	json_object_object_add(o, "conv_node", json_object_new_int(r.conv_node));
	handlers_chase_note(&r, note, sizeof(note));
	json_object_object_add(o, "chase_note", json_object_new_string(note));
	json_object_object_add(o, "adverse_left_s", json_object_new_double(r.adverse_left_s));
	json_object_object_add(o, "adverse_times", json_object_new_int64(r.adverse_times));
	hv_sampling(d, vm, o, r.scan_mib_s);
	res = json_object_new_array();
	for (int n = 0; n < d->snap->nr_nodes; n++)
		json_object_array_add(res, json_object_new_int64((int64_t)vm->resident_mib[n]));
	json_object_object_add(o, "resident_mib", res);
	/* where the figure came from, its age and each node's error bound (host: "" = exact) */
	json_object_object_add(
	    o, "resident_source",
	    json_object_new_string(vm->resident_source != NULL ? vm->resident_source : ""));
	json_object_object_add(o, "resident_age_s", json_object_new_double(vm->resident_age_s));
	json_object_object_add(o, "resident_err_mib",
	                       json_object_new_int64((int64_t)vm->resident_err_mib));
	/* how old the vCPU readings are (a host that reads settled VMs less often) */
	json_object_object_add(o, "observed_age_s", json_object_new_double(vm->observed_age_s));
	json_object_object_add(o, "pending_mib",
	                       json_object_new_int64((int64_t)vm->mig_pending_mib));
	json_object_object_add(o, "pinned_mib", json_object_new_int64((int64_t)vm->pinned_mib));
	json_object_object_add(o, "memory_moves", json_object_new_string(hv_memory_moves(vm)));
	json_object_object_add(o, "vcpu", hv_vcpus(d, vm));
	json_object_object_add(o, "cells", hv_cells(d, vm));
	if (v != NULL)
		json_object_object_add(o, "counters", handlers_counters(&v->c));
	*data = o;
	return PROTO_OK;
}

/* Append attr='value' (value escaped for an XML attribute) to buf. */
static void
hv_attr(struct util_buf *buf, const char *attr, const char *value)
{
	util_buf_printf(buf, " %s='", attr);
	for (const char *p = value; *p; p++) {
		if (*p == '\'' || *p == '&' || *p == '<' || *p == '>' || *p == '"')
			util_buf_printf(buf, "&#%d;", *p);
		else
			util_buf_printf(buf, "%c", *p);
	}
	util_buf_printf(buf, "'");
}

/* The current value of one policy attribute in XML syntax; NULL when it is the default. */
static const char *
hv_attr_current(const struct vm_policy *p, const char *key, char *buf, size_t len)
{
	if (strcmp(key, "mode") == 0)
		return vm_policy_mode_name(p->mode);
	if (strcmp(key, "nodes") == 0)
		return p->nodes == NODEMASK_ALL ? NULL : nodemask_format(p->nodes, buf, len);
	if (strcmp(key, "placement") == 0)
		return vm_policy_placement_name(p->placement);
	if (strcmp(key, "migrate") == 0)
		return p->migrate ? "yes" : "no";
	if (strcmp(key, "rate") == 0) {
		snprintf(buf, len, "%lluKiB/s", (unsigned long long)p->rate_kib_s);
		return p->rate_kib_s ? buf : NULL;
	}
	if (strcmp(key, "priority") == 0) {
		snprintf(buf, len, "%d", p->priority);
		return buf;
	}
	return p->group[0] ? p->group : NULL;
}

/*
 * Whether a value given for key asks for the attribute's default, which the XML says by
 * leaving the attribute out: "" for any of them, "all" for nodes, 0 (no per-VM cap) for rate.
 */
static bool
hv_value_is_default(const char *key, const char *val)
{
	return val[0] == '\0' || (strcmp(key, "nodes") == 0 && strcmp(val, "all") == 0) ||
	       (strcmp(key, "rate") == 0 && strcmp(val, "0") == 0);
}

/*
 * The new policy: base with the attributes given in args, checked by the same parser as the
 * XML in domain metadata (so the messages are the same), and its nodes against the host's
 * nr_nodes nodes, so that nothing naming a node the host does not have is ever stored.  A
 * value hv_value_is_default() takes puts the attribute back to its default.
 */
static enum proto_status
hv_policy_merge(const struct vm_policy *base, struct json_object *args, int nr_nodes,
                struct vm_policy *out, bool *changed, char *err, size_t errlen)
{
	static const char *const keys[] = {"mode", "nodes",    "placement", "migrate",
	                                   "rate", "priority", "group",     NULL};
	struct util_buf buf = {0};
	char cur[NODEMASK_STR_MAX];
	int rc;

	*changed = false;
	util_buf_printf(&buf, "<vnuma:policy xmlns:vnuma='%s'", VM_POLICY_NS);
	for (int i = 0; keys[i]; i++) {
		const char *val = hv_attr_current(base, keys[i], cur, sizeof(cur));
		struct json_object *j;

		if (json_object_object_get_ex(args, keys[i], &j)) {
			if (!json_object_is_type(j, json_type_string) &&
			    !json_object_is_type(j, json_type_int)) {
				free(buf.data);
				snprintf(err, errlen, "%s: expected a string", keys[i]);
				return PROTO_BAD_REQUEST;
			}
			val = json_object_get_string(j);
			*changed = true;
			if (hv_value_is_default(keys[i], val))
				val = NULL;
		}
		if (val != NULL)
			hv_attr(&buf, keys[i], val);
	}
	util_buf_printf(&buf, "/>");
	rc = vm_policy_parse_xml(buf.data, buf.len, out, err, errlen);
	if (rc == 0)
		rc = vm_policy_check_nodes(out, nr_nodes, err, errlen);
	free(buf.data);
	return rc < 0 ? PROTO_BAD_REQUEST : PROTO_OK;
}

static enum proto_status
hv_policy_show(struct daemon *d, const struct snap_vm *vm, struct json_object **data)
{
	struct dvm *v = daemon_vm(d, vm->id);
	struct json_object *o = json_object_new_object();
	char *xml = vm_policy_format_xml(&vm->policy);

	json_object_object_add(o, "vm", json_object_new_string(vm->name));
	json_object_object_add(o, "policy", hv_policy_json(&vm->policy));
	json_object_object_add(o, "policy_xml", json_object_new_string(xml));
	json_object_object_add(
	    o, "source",
	    json_object_new_string(v && v->policy_source ? v->policy_source : "default"));
	json_object_object_add(o, "policy_ok", json_object_new_boolean(vm->policy_ok));
	json_object_object_add(o, "policy_error",
	                       vm->policy_ok ? NULL : json_object_new_string(vm->policy_error));
	json_object_object_add(o, "policy_note",
	                       json_object_new_string(v != NULL ? v->policy_note : ""));
	free(xml);
	*data = o;
	return PROTO_OK;
}

/*
 * Store a policy with the VM where the host can (libvirt metadata): live and/or config.  A
 * host that keeps no policies is fine for live changes (the daemon holds them) and a 501 for
 * --config.
 */
static enum proto_status
hv_policy_store(struct daemon *d, const struct snap_vm *vm, const char *xml, bool live, bool config,
                bool *stored, char *err, size_t errlen)
{
	int rc;

	*stored = false;
	if (d->host->ops->policy_persist == NULL) {
		if (!config)
			return PROTO_OK;
		snprintf(err, errlen,
		         "--config: the %s host keeps no persistent domain configuration",
		         d->backend);
		return PROTO_UNSUPPORTED;
	}
	rc = d->host->ops->policy_persist(d->host, vm->id, xml, live, config);
	if (rc == -EOPNOTSUPP && !config)
		return PROTO_OK; /* not a VM of the host's (a plain QEMU): the daemon keeps it */
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot store the policy in its %s definition: %s",
		         vm->name, config ? "persistent" : "live", strerror(-rc));
		return rc == -EOPNOTSUPP ? PROTO_UNSUPPORTED : PROTO_INTERNAL;
	}
	*stored = true;
	return PROTO_OK;
}

/*
 * The VM's configured policy (daemon.h struct dvm): live, the host's, a file's or the default,
 * without what holds only for now (pause's advisory, a pin's manual, the host's node bound).
 */
static struct vm_policy
hv_policy_configured(struct daemon *d, const struct snap_vm *vm)
{
	const struct dvm *v = daemon_vm(d, vm->id);

	return v != NULL ? v->configured : vm->policy;
}

/*
 * What a change is merged onto: the policy stored in the definition it changes (libvirt: the
 * live metadata, or the persistent one for --config), else the configured policy.
 */
static void
hv_policy_base(struct daemon *d, const struct snap_vm *vm, bool config, struct vm_policy *base)
{
	char *xml = NULL, err[256];

	if (d->host->ops->policy_fetch == NULL ||
	    d->host->ops->policy_fetch(d->host, vm->id, config, &xml) < 0 || xml == NULL ||
	    vm_policy_parse_xml(xml, strlen(xml), base, err, sizeof(err)) < 0)
		*base = hv_policy_configured(d, vm);
	free(xml);
}

/*
 * placement=cells asked for a VM without guest vNUMA cells: refused, as there is nothing to
 * place per cell.  Not for --config, which is for the VM's next start, whose definition may
 * have cells by then.  (A policy file or the host's policy saying so: compact, with a note.)
 */
static enum proto_status
hv_policy_cells_check(const struct snap_vm *vm, struct json_object *args, const char *scope,
                      char *err, size_t errlen)
{
	const char *placement = NULL;

	if (vm->nr_cells > 0 || strcmp(scope, "config") == 0 ||
	    proto_arg_string(args, "placement", &placement) < 0 || placement == NULL ||
	    strcmp(placement, vm_policy_placement_name(VM_POLICY_PLACEMENT_CELLS)) != 0)
		return PROTO_OK;
	snprintf(err, errlen,
	         "placement=\"cells\": %s has no guest vNUMA cells (placement cells gives each "
	         "cell a host node; use compact)",
	         vm->name);
	return PROTO_CONFLICT;
}

/* The scopes of a policy change (docs/protocol.md): live, config, current or both. */
#define HV_SCOPE_BOTH "live+config"

/*
 * --config: merge the change onto the VM's persistent definition and store it there, for the
 * VM's next start, as virsh's --config does.
 */
static enum proto_status
hv_policy_config_set(struct daemon *d, const struct snap_vm *vm, struct json_object *args,
                     char *err, size_t errlen)
{
	struct vm_policy pol, base;
	enum proto_status st;
	bool changed, stored;
	char *xml;

	hv_policy_base(d, vm, true, &base);
	st = hv_policy_merge(&base, args, d->snap->nr_nodes, &pol, &changed, err, errlen);
	if (st != PROTO_OK)
		return st;
	xml = vm_policy_format_xml(&pol);
	st = hv_policy_store(d, vm, xml, false, true, &stored, err, errlen);
	if (st == PROTO_OK)
		daemon_event(d, vm->id, vm->name, "policy", "admin", 0, "config: %s", xml);
	free(xml);
	return st;
}

static enum proto_status
hv_policy_scope_check(const char *scope, char *err, size_t errlen)
{
	if (strcmp(scope, "live") == 0 || strcmp(scope, "config") == 0 ||
	    strcmp(scope, "current") == 0 || strcmp(scope, HV_SCOPE_BOTH) == 0)
		return PROTO_OK;
	snprintf(err, errlen, "scope: \"%s\" is not live, config, current or %s", scope,
	         HV_SCOPE_BOTH);
	return PROTO_BAD_REQUEST;
}

/* Whether a boolean argument is there and true (its type checked by the command's spec). */
static bool
hv_arg_true(struct json_object *args, const char *key)
{
	bool on = false;

	return proto_arg_bool(args, key, &on) == 0 && on;
}

/*
 * A policy request that changes something: logged with who asked, refused unless the peer
 * may write (what: "resetting" or "setting"), its scope read and checked into *scope.
 */
static enum proto_status
hv_policy_change_admit(struct control_client *cl, const struct control_peer *peer,
                       struct json_object *args, const char *what, const char **scope, char *err,
                       size_t errlen)
{
	control_client_request_changes(cl);
	if (!peer->may_write) {
		snprintf(err, errlen,
		         "permission denied: %s a policy changes state (root or the control group "
		         "only)",
		         what);
		return PROTO_FORBIDDEN;
	}
	proto_arg_string(args, "scope", scope);
	return hv_policy_scope_check(*scope, err, errlen);
}

/*
 * policy --reset: what vnumactl set goes (the daemon's live policy and, where the host keeps
 * policies, the element stored in the domain's live or persistent definition), so from the
 * next round the VM follows its domain metadata, a policy file or the default.
 */
static enum proto_status
hv_policy_reset(struct daemon *d, const struct snap_vm *vm, const char *scope,
                struct json_object **data, char *err, size_t errlen)
{
	bool both = strcmp(scope, HV_SCOPE_BOTH) == 0, stored;
	bool config = both || strcmp(scope, "config") == 0, live = both || !config;
	enum proto_status st = hv_policy_store(d, vm, NULL, live, config, &stored, err, errlen);
	struct dvm *v = daemon_vm(d, vm->id);

	if (st != PROTO_OK)
		return st;
	if (live && v != NULL)
		v->live_policy = false;
	daemon_event(d, vm->id, vm->name, "policy", "admin", 0, "%sreset%s",
	             config ? (live ? "live and config: " : "config: ") : "",
	             stored ? " (stored policy removed)" : "");
	*data = json_object_new_object();
	json_object_object_add(*data, "vm", json_object_new_string(vm->name));
	json_object_object_add(*data, "reset", json_object_new_string(scope));
	return PROTO_OK;
}

enum proto_status
h_policy(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	enum proto_status st;
	const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
	const char *scope = "live";
	struct vm_policy pol, base;
	struct dvm *v;
	bool changed, stored, config;
	char *xml;

	if (vm == NULL)
		return st;
	if (hv_arg_true(args, "reset")) {
		st = hv_policy_change_admit(cl, peer, args, "resetting", &scope, err, errlen);
		return st == PROTO_OK ? hv_policy_reset(d, vm, scope, data, err, errlen) : st;
	}
	st = hv_policy_merge(&vm->policy, args, d->snap->nr_nodes, &pol, &changed, err, errlen);
	if (st != PROTO_OK)
		return st;
	if (!changed)
		return hv_policy_show(d, vm, data);
	st = hv_policy_change_admit(cl, peer, args, "setting", &scope, err, errlen);
	if (st != PROTO_OK)
		return st;
	config = strcmp(scope, "config") == 0;
	/* Checked before anything is stored (live+config stores config first, then live). */
	if ((st = hv_policy_cells_check(vm, args, scope, err, errlen)) != PROTO_OK)
		return st;
	if (config || strcmp(scope, HV_SCOPE_BOTH) == 0) {
		st = hv_policy_config_set(d, vm, args, err, errlen);
		if (st != PROTO_OK || config)
			return st == PROTO_OK ? hv_policy_show(d, vm, data) : st;
	}
	/* The live definition: what the change merges onto and where it is stored (as virsh). */
	hv_policy_base(d, vm, false, &base);
	if ((st = hv_policy_merge(&base, args, d->snap->nr_nodes, &pol, &changed, err, errlen)) !=
	    PROTO_OK)
		return st;
	xml = vm_policy_format_xml(&pol);
	st = hv_policy_store(d, vm, xml, true, false, &stored, err, errlen);
	if (st != PROTO_OK) {
		free(xml);
		return st;
	}
	v = daemon_vm(d, vm->id);
	/*
	 * Stored in the VM's live definition (libvirt metadata): that is the policy from now on,
	 * so a later change there (virsh metadata) wins as well.  Else the daemon holds it.
	 */
	if (v != NULL) {
		v->live_policy = !stored;
		v->policy = pol;
		v->configured = pol; /* what the next change merges onto, before the next round */
		v->policy_source = stored ? "host" : "live";
	}
	daemon_event(d, vm->id, vm->name, "policy", "admin", 0, "%s", xml);
	free(xml);
	/* Show the new policy at once (the next round applies it). */
	((struct snap_vm *)vm)->policy = pol;
	return hv_policy_show(d, vm, data);
}

/* args "node" (a node list such as "1" or "0-1") as a mask of the host's nodes. */
static enum proto_status
hv_arg_nodes(struct daemon *d, struct json_object *args, const char *key, uint64_t *mask, char *err,
             size_t errlen)
{
	const char *s = NULL;
	struct json_object *j;
	char buf[32], why[IDLIST_ERR_MAX];

	if (!json_object_object_get_ex(args, key, &j)) {
		snprintf(err, errlen, "%s: missing (a node or node list)", key);
		return PROTO_BAD_REQUEST;
	}
	if (json_object_is_type(j, json_type_int)) {
		snprintf(buf, sizeof(buf), "%d", json_object_get_int(j));
		s = buf;
	} else if (json_object_is_type(j, json_type_string)) {
		s = json_object_get_string(j);
	}
	if (json_object_is_type(j, json_type_int) &&
	    (json_object_get_int(j) < 0 || json_object_get_int(j) >= d->snap->nr_nodes)) {
		/* One node asked for (migrate --node): say so, not "node list" */
		snprintf(err, errlen, "%s %d is not one of this host's nodes (0-%d)", key,
		         json_object_get_int(j), d->snap->nr_nodes - 1);
		return PROTO_BAD_REQUEST;
	}
	if (s == NULL) {
		snprintf(err, errlen, "%s: must be a node or a node list", key);
		return PROTO_BAD_REQUEST;
	}
	if (nodemask_parse(s, 0, mask, why, sizeof(why)) < 0 ||
	    nodemask_check_host(*mask, d->snap->nr_nodes, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: \"%s\": %s", key, s, why);
		return PROTO_BAD_REQUEST;
	}
	return PROTO_OK;
}

static enum proto_status
hv_arg_vcpu(const struct snap_vm *vm, struct json_object *args, int *vcpu, char *err, size_t errlen)
{
	int64_t v;

	if (proto_arg_int(args, "vcpu", &v) < 0) {
		snprintf(err, errlen, "vcpu: missing (a vCPU number)");
		return PROTO_BAD_REQUEST;
	}
	if (v < 0 || v >= vm->nr_vcpus) {
		snprintf(err, errlen, "%s has no vCPU %lld (it has %d)", vm->name, (long long)v,
		         vm->nr_vcpus);
		return PROTO_NOT_FOUND;
	}
	*vcpu = (int)v;
	return PROTO_OK;
}

enum proto_status
h_pin(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	enum proto_status st;
	const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
	uint64_t mask;
	struct dvm *v;
	int vcpu, rc;

	if (vm == NULL)
		return st;
	if ((st = hv_arg_vcpu(vm, args, &vcpu, err, errlen)) != PROTO_OK ||
	    (st = hv_arg_nodes(d, args, "node", &mask, err, errlen)) != PROTO_OK)
		return st;
	rc = actions_pin(d, vm, vcpu, mask, "admin", "pinned by vnumactl pin");
	if (rc < 0) {
		snprintf(err, errlen, "cannot pin %s vCPU %d: %s", vm->name, vcpu, strerror(-rc));
		return PROTO_INTERNAL;
	}
	if ((v = daemon_vm(d, vm->id)) != NULL)
		v->admin_pinned = true;
	*data = json_object_new_object();
	json_object_object_add(*data, "vm", json_object_new_string(vm->name));
	json_object_object_add(*data, "vcpu", json_object_new_int(vcpu));
	json_object_object_add(*data, "mode", json_object_new_string("manual"));
	return PROTO_OK;
}

enum proto_status
h_unpin(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	enum proto_status st;
	const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
	int first = 0, last, vcpu, done = 0, failed = 0, fail_vcpu = -1, fail_rc = 0;
	struct dvm *v;

	if (vm == NULL)
		return st;
	last = vm->nr_vcpus - 1;
	if (json_object_object_get_ex(args, "vcpu", NULL)) {
		if ((st = hv_arg_vcpu(vm, args, &vcpu, err, errlen)) != PROTO_OK)
			return st;
		first = last = vcpu;
	}
	for (int c = first; c <= last; c++) {
		const struct state_entry *e = state_find(d->state, vm->name, c);
		bool widened;
		int rc = actions_put_back(d, vm, c, e ? e->orig_nodes : NODEMASK_ALL, &widened);

		if (rc < 0 && rc != -ESRCH && rc != -ENOENT) {
			/* Not back: its original affinity stays recorded, to be put back later. */
			if (failed++ == 0) {
				fail_vcpu = c;
				fail_rc = rc;
			}
			continue;
		}
		done += rc == 0;
		state_forget(d->state, vm->name, c);
	}
	daemon_event(d, vm->id, vm->name, "pin", "admin", 0, "unpinned %d vCPUs", done);
	if (failed > 0) {
		/* Still pinned in part: the VM stays hands-off (manual) as it was. */
		snprintf(
		    err, errlen,
		    "cannot unpin %d of %s's vCPUs (vCPU %d: %s); their original affinity stays "
		    "recorded",
		    failed, vm->name, fail_vcpu, strerror(-fail_rc));
		return PROTO_INTERNAL;
	}
	if ((v = daemon_vm(d, vm->id)) != NULL)
		v->admin_pinned = false;
	*data = json_object_new_object();
	json_object_object_add(*data, "vm", json_object_new_string(vm->name));
	json_object_object_add(*data, "unpinned", json_object_new_int(done));
	return PROTO_OK;
}

/*
 * Whether the whole VM fits node n as it is now: the node's free memory above the engine's
 * headroom, plus what of the VM is there already, against the VM's memory; its vCPUs against
 * the node's CPUs.  0, or -ENOSPC with the numbers and the way round it in err.
 */
static int
hv_migrate_fits(const struct daemon *d, const struct snap_vm *vm, int n, char *err, size_t errlen)
{
	const struct snap_node *sn = &d->snap->nodes[n];
	int64_t there = (int64_t)vm->resident_mib[n];
	int64_t room = (int64_t)sn->mem_free_mib - engine_headroom_mib(sn) + there;

	if (room < (int64_t)vm->mem_mib) {
		snprintf(err, errlen,
		         "%s (%.1f GiB) does not fit node %d: %.1f GiB free there, %.1f GiB of it "
		         "kept free by the node-fullness guard, %.1f GiB of the VM already there; "
		         "nothing changed (--force asks anyway: vnumad then makes room only by the "
		         "other VMs' policies and stops at the guard)",
		         vm->name, vm->mem_mib / 1024.0, n, sn->mem_free_mib / 1024.0,
		         engine_headroom_mib(sn) / 1024.0, there / 1024.0);
		return -ENOSPC;
	}
	if (vm->nr_vcpus > sn->nr_cpus) {
		snprintf(err, errlen,
		         "%s (%d vCPUs) does not fit node %d: it has %d CPUs; nothing changed "
		         "(--force asks anyway: its vCPUs then share the node's CPUs)",
		         vm->name, vm->nr_vcpus, n, sn->nr_cpus);
		return -ENOSPC;
	}
	return 0;
}

enum proto_status
h_migrate(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	enum proto_status st;
	const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
	uint64_t mask;
	struct dvm *v;
	char buf[NODEMASK_STR_MAX];

	if (vm == NULL)
		return st;
	if ((st = hv_arg_nodes(d, args, "node", &mask, err, errlen)) != PROTO_OK)
		return st;
	if (nodemask_weight(mask) != 1) {
		snprintf(err, errlen, "node: give one node to migrate to");
		return PROTO_BAD_REQUEST;
	}
	if (!vm->policy.migrate || vm->policy.mode == VM_POLICY_MODE_OFF) {
		snprintf(err, errlen, "%s: its policy (%s%s) does not let vnumad move it", vm->name,
		         vm_policy_mode_name(vm->policy.mode),
		         vm->policy.migrate ? "" : ", migrate=no");
		return PROTO_CONFLICT;
	}
	if (engine_vm_mem_pinned(vm)) {
		snprintf(err, errlen,
		         "%s: %llu of its %llu MiB are pinned (an assigned device or registered "
		         "buffers: VmPin) and cannot move; nothing changed",
		         vm->name, (unsigned long long)vm->pinned_mib,
		         (unsigned long long)vm->mem_mib);
		return PROTO_CONFLICT;
	}
	v = daemon_vm(d, vm->id);
	if (v == NULL) {
		snprintf(err, errlen, "%s is not known yet: try again in a second", vm->name);
		return PROTO_CONFLICT;
	}
	if (!hv_arg_true(args, "force") &&
	    hv_migrate_fits(d, vm, nodemask_first(mask), err, errlen) < 0)
		return PROTO_CONFLICT;
	v->policy = v->configured; /* not pause's advisory or a pin's manual */
	v->policy.nodes = mask;
	v->policy.mode = VM_POLICY_MODE_AUTO;
	v->configured = v->policy;
	v->live_policy = true;
	v->policy_source = "live";
	v->admin_pinned = false;
	daemon_event(d, vm->id, vm->name, "policy", "migrate", 0, "whole VM to node %s",
	             nodemask_format(mask, buf, sizeof(buf)));
	*data = json_object_new_object();
	json_object_object_add(*data, "vm", json_object_new_string(vm->name));
	json_object_object_add(*data, "node", json_object_new_int(nodemask_first(mask)));
	json_object_object_add(*data, "memory_mib", json_object_new_int64((int64_t)vm->mem_mib));
	/* what stays behind: a live policy of that one node until changed */
	json_object_object_add(*data, "policy_nodes",
	                       json_object_new_string(nodemask_format(mask, buf, sizeof(buf))));
	return PROTO_OK;
}

/* What the engine would have done with a lever this host lacks (policy/model.h HOST_CAP_*). */
static void
hv_explain_wanted(const struct engine_vm_report *r, char *summary, size_t len)
{
	size_t n = strlen(summary);

	if ((r->levers_wanted & HOST_CAP_BIND_AT_START) && n < len)
		n += (size_t)snprintf(summary + n, len - n,
		                      "; would have bound its RAM to its home before the guest "
		                      "touched it (this host cannot: it moves the RAM instead)");
	if (!(r->levers_wanted & HOST_CAP_VM_SAMPLING) || n >= len)
		return;
	if (r->scan_mib_s > 0)
		snprintf(summary + n, len - n,
		         "; would have sampled it at %.0f MiB/s (this host cannot set a VM's scan "
		         "rate: the kernel's adaptive rate applies)",
		         r->scan_mib_s);
	else
		snprintf(
		    summary + n, len - n,
		    "; would have stopped sampling it, nothing left to learn (this host cannot "
		    "set a VM's scan rate: the kernel's adaptive rate applies)");
}

/* What the recent hinting faults say, for explain: a share, or how long none came. */
static void
handlers_faults_say(const struct dvm *v, double now_s, double pass_s, char *buf, size_t len)
{
	double age_s, loc = daemon_fault_locality(v, now_s, pass_s, &age_s);

	if (loc >= 0)
		snprintf(buf, len, "%.0f%% of its recent hinting faults local", 100.0 * loc);
	else if (age_s < 0)
		snprintf(buf, len, "no hinting faults seen yet");
	else
		snprintf(buf, len, "no fresh hinting faults (the last %.0f s ago)", age_s);
}

enum proto_status
h_explain(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	enum proto_status st;
	const struct snap_vm *vm = handlers_arg_vm(d, args, err, errlen, &st);
	struct engine_vm_report r;
	uint64_t next, home_mib = 0;
	char summary[1024], buf[NODEMASK_STR_MAX], faults[96], note[320];

	if (vm == NULL)
		return st;
	engine_report_vm(d->eng, vm->id, &r);
	for (int n = 0; n < d->snap->nr_nodes; n++)
		home_mib += nodemask_test(r.home, n) ? vm->resident_mib[n] : 0;
	handlers_faults_say(daemon_vm(d, vm->id), d->snap->now_s, r.scan_pass_s, faults,
	                    sizeof(faults));
	snprintf(summary, sizeof(summary),
	         "%s is %s: mode %s; home node%s %s (%s); %llu of %llu MiB there; strength %d; "
	         "%s; sampling %s",
	         vm->name, handlers_vm_state(d, vm, &r), vm_policy_mode_name(vm->policy.mode),
	         nodemask_weight(r.home) > 1 ? "s" : "",
	         r.home ? nodemask_format(r.home, buf, sizeof(buf)) : "none yet",
	         r.spanning ? "too big for one node: spans them" : "fits one node",
	         (unsigned long long)home_mib, (unsigned long long)vm->mem_mib, r.strength, faults,
	         (r.levers_wanted & HOST_CAP_VM_SAMPLING) ? "by the kernel"
	         : r.scan_mib_s > 0                       ? "active"
	                                                  : "parked (nothing to learn)");
	hv_explain_wanted(&r, summary, sizeof(summary));
	handlers_chase_note(&r, note, sizeof(note));
	if (note[0] != '\0' && strlen(summary) < sizeof(summary))
		snprintf(summary + strlen(summary), sizeof(summary) - strlen(summary), "; %s",
		         note);
	*data = json_object_new_object();
	json_object_object_add(*data, "vm", json_object_new_string(vm->name));
	json_object_object_add(*data, "home",
	                       json_object_new_string(nodemask_format(r.home, buf, sizeof(buf))));
	json_object_object_add(*data, "summary", json_object_new_string(summary));
	json_object_object_add(*data, "reasons", events_query(&d->events, 0, vm->id, 0, &next));
	return PROTO_OK;
}

enum proto_status
h_place(HANDLER_ARGS)
{
	struct daemon *d = ctx;
	int64_t vcpus = 0, mem = 0, cells = 0;
	uint64_t nodes = 0, cell_nodes[64] = {0};
	bool reserve = false;
	struct json_object *per = json_object_new_array();
	char text[256], buf[NODEMASK_STR_MAX];
	int rc;

	if (proto_arg_int(args, "vcpus", &vcpus) < 0 || vcpus < 1 || vcpus > 4096 ||
	    proto_arg_int(args, "memory_mib", &mem) < 0 || mem < 2) {
		json_object_put(per);
		snprintf(err, errlen, "vcpus (1-4096) and memory_mib (>= 2) are required");
		return PROTO_BAD_REQUEST;
	}
	if (proto_arg_int(args, "cells", &cells) == -EINVAL || cells < 0 || cells > vcpus ||
	    cells > 64) {
		json_object_put(per);
		snprintf(err, errlen, "cells: 0-%lld", (long long)(vcpus < 64 ? vcpus : 64));
		return PROTO_BAD_REQUEST;
	}
	if (proto_arg_bool(args, "reserve", &reserve) == 0 && reserve && !peer->may_write) {
		json_object_put(per);
		snprintf(err, errlen,
		         "permission denied: place --reserve holds room on the host (root or the "
		         "daemon's writers only); without --reserve, anyone may ask");
		return PROTO_FORBIDDEN;
	}
	rc = engine_advise(d->eng, d->snap, (int)vcpus, (uint64_t)mem, (int)cells, &nodes,
	                   cell_nodes, text, sizeof(text));
	if (rc < 0) {
		json_object_put(per);
		snprintf(err, errlen, "no placement: %s", text);
		return PROTO_CONFLICT;
	}
	if (reserve) {
		engine_reserve(d->eng, d->snap->now_s, nodes, (int)vcpus, (uint64_t)mem);
		log_info("place: node%s %s held for a VM of %lld vCPUs and %lld MiB about to start "
		         "(uid %u, pid %d)",
		         nodemask_weight(nodes) > 1 ? "s" : "",
		         nodemask_format(nodes, buf, sizeof(buf)), (long long)vcpus, (long long)mem,
		         (unsigned)peer->uid, (int)peer->pid);
	}
	for (int c = 0; c < cells && cells > 1; c++)
		json_object_array_add(
		    per, json_object_new_string(nodemask_format(cell_nodes[c], buf, sizeof(buf))));
	*data = json_object_new_object();
	json_object_object_add(*data, "nodes",
	                       json_object_new_string(nodemask_format(nodes, buf, sizeof(buf))));
	json_object_object_add(*data, "per_cell", per);
	json_object_object_add(*data, "reason", json_object_new_string(text));
	if (reserve)
		json_object_object_add(*data, "reserved_s",
		                       json_object_new_double(ENGINE_RESERVE_HOLD_S));
	return PROTO_OK;
}

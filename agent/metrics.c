/*
 * metrics.c - rendering a struct metrics_view as Prometheus text (metrics.h).  Pure: the view
 * is the only input, and the same view gives the same bytes.
 *
 * Every family is written whole, HELP and TYPE first, its samples together; counters end in
 * _total, sizes in _bytes, durations in _seconds, shares in _ratio; label values are escaped
 * (backslash, double quote, newline), HELP texts too (backslash, newline).
 */
#include "agent/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model.h"

/* The daemon's fault and migration counters are in 4-KiB pages (docs/protocol.md). */
#define METRICS_PAGE_BYTES 4096ull

/* ---- text primitives ------------------------------------------------------------------- */

void
metrics_label_escape(struct util_buf *out, const char *s)
{
	const char *run = s;

	for (; *s != '\0'; s++) {
		const char *esc = *s == '\\'   ? "\\\\"
		                  : *s == '"'  ? "\\\""
		                  : *s == '\n' ? "\\n"
		                               : NULL;

		if (esc == NULL)
			continue;
		util_buf_printf(out, "%.*s%s", (int)(s - run), run, esc);
		run = s + 1;
	}
	util_buf_printf(out, "%s", run);
}

static void
mr_family(struct util_buf *o, const char *name, const char *type, const char *help)
{
	const char *run = help;

	util_buf_printf(o, "# HELP %s ", name);
	for (const char *p = help; *p != '\0'; p++) {
		if (*p != '\\' && *p != '\n')
			continue;
		util_buf_printf(o, "%.*s%s", (int)(p - run), run, *p == '\\' ? "\\\\" : "\\n");
		run = p + 1;
	}
	util_buf_printf(o, "%s\n# TYPE %s %s\n", run, name, type);
}

/* name{labels} (no braces when labels is empty). */
static void
mr_name(struct util_buf *o, const char *name, const char *labels)
{
	if (labels != NULL && labels[0] != '\0')
		util_buf_printf(o, "%s{%s} ", name, labels);
	else
		util_buf_printf(o, "%s ", name);
}

static void
mr_u64(struct util_buf *o, const char *name, const char *labels, uint64_t v)
{
	mr_name(o, name, labels);
	util_buf_printf(o, "%llu\n", (unsigned long long)v);
}

/* A double with the 10 significant digits vnumactl --json prints. */
static void
mr_f64(struct util_buf *o, const char *name, const char *labels, double v)
{
	mr_name(o, name, labels);
	if (isnan(v))
		util_buf_printf(o, "NaN\n");
	else if (isinf(v))
		util_buf_printf(o, "%sInf\n", v > 0 ? "+" : "-");
	else
		util_buf_printf(o, "%.10g\n", v);
}

/* base with one more label, key="value" (value escaped), into buf (reset first). */
static const char *
mr_labels(struct util_buf *buf, const char *base, const char *key, const char *value)
{
	buf->len = 0;
	util_buf_printf(buf, "%s%s%s=\"", base, base[0] != '\0' ? "," : "", key);
	metrics_label_escape(buf, value);
	util_buf_printf(buf, "\"");
	return buf->data;
}

static const char *
mr_labels_int(struct util_buf *buf, const char *base, const char *key, int value)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", value);
	return mr_labels(buf, base, key, num);
}

/* A family of one sample without labels. */
static void
mr_one_u64(struct util_buf *o, const char *name, const char *type, const char *help, uint64_t v)
{
	mr_family(o, name, type, help);
	mr_u64(o, name, "", v);
}

static void
mr_one_f64(struct util_buf *o, const char *name, const char *type, const char *help, double v)
{
	mr_family(o, name, type, help);
	mr_f64(o, name, "", v);
}

/* ---- host-wide families ---------------------------------------------------------------- */

static void
mr_daemon(struct util_buf *o, const struct metrics_view *mv, struct util_buf *lab)
{
	struct util_buf two = {0};

	mr_family(o, "vnumad_daemon_info", "gauge",
	          "vnumad's version and host backend (sim, linux, libvirt), always 1");
	mr_labels(&two, mr_labels(lab, "", "version", mv->version), "backend", mv->backend);
	mr_u64(o, "vnumad_daemon_info", two.data, 1);
	free(two.data);
	mr_family(o, "vnumad_default_mode_info", "gauge",
	          "mode of a VM without a per-VM policy (default_mode), always 1");
	mr_u64(o, "vnumad_default_mode_info", mr_labels(lab, "", "mode", mv->default_mode), 1);
	mr_one_u64(o, "vnumad_paused", "gauge", "1 while vnumactl pause holds vnumad's actions",
	           mv->paused);
	mr_family(o, "vnumad_host_capability", "gauge",
	          "1 when the host has the lever or sensing capability, else 0");
	for (int i = 0; i < HOST_CAP_NR; i++)
		mr_u64(o, "vnumad_host_capability",
		       mr_labels(lab, "", "capability", host_cap_name(i)),
		       (mv->caps & (1u << i)) != 0);
}

static void
mr_rounds(struct util_buf *o, const struct metrics_view *mv, struct util_buf *lab)
{
	const struct hist *h = &mv->decision;
	uint64_t cum = 0;
	char le[32];

	mr_one_u64(o, "vnumad_rounds_total", "counter", "observe-decide-act rounds completed",
	           mv->rounds);
	mr_one_f64(o, "vnumad_round_seconds_total", "counter", "wall-clock time spent in rounds",
	           mv->round_seconds_total);
	mr_family(o, "vnumad_decision_duration_seconds", "histogram",
	          "wall-clock time of the policy engine's decision step, per round");
	for (int b = 0; b <= HIST_BUCKETS; b++) {
		cum += h->bucket[b];
		if (b < HIST_BUCKETS)
			snprintf(le, sizeof(le), "%g", hist_bounds_s[b]);
		else
			snprintf(le, sizeof(le), "+Inf");
		mr_u64(o, "vnumad_decision_duration_seconds_bucket", mr_labels(lab, "", "le", le),
		       cum);
	}
	mr_f64(o, "vnumad_decision_duration_seconds_sum", "", h->sum_s);
	mr_u64(o, "vnumad_decision_duration_seconds_count", "", h->count);
	if (mv->render_s >= 0) {
		mr_one_f64(o, "vnumad_metrics_render_seconds", "gauge",
		           "wall-clock time the previous round took to render this text",
		           mv->render_s);
	}
	mr_one_u64(o, "vnumad_metrics_scrapes_total", "counter",
	           "/metrics requests answered, as of this text's round", mv->scrapes);
}

static void
mr_nodes(struct util_buf *o, const struct metrics_view *mv, struct util_buf *lab)
{
	static const struct {
		const char *name, *help;
	} fam[] = {
	    {"vnumad_node_cpus", "CPUs of the NUMA node"},
	    {"vnumad_node_memory_total_bytes", "memory of the NUMA node"},
	    {"vnumad_node_memory_free_bytes", "free memory of the NUMA node"},
	    {"vnumad_node_vcpus", "vCPUs of all VMs running on the node"},
	    {"vnumad_node_cpu_load", "CPU use of those vCPUs, in CPUs"},
	    {"vnumad_node_place_free_bytes",
	     "memory a new VM could take on the node and stay local: free memory above the "
	     "headroom the node-fullness guard keeps"},
	    {"vnumad_node_place_free_vcpus",
	     "vCPUs a new VM could run on the node without sharing a CPU: CPUs no vCPU runs on"},
	};

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		mr_family(o, fam[f].name, "gauge", fam[f].help);
		for (int n = 0; n < mv->nr_nodes; n++) {
			const struct metrics_node *nd = &mv->nodes[n];
			const char *l = mr_labels_int(lab, "", "node", nd->id);

			const uint64_t v[] = {(uint64_t)nd->nr_cpus,
			                      nd->mem_total_bytes,
			                      nd->mem_free_bytes,
			                      (uint64_t)nd->vcpus,
			                      0,
			                      nd->place_free_bytes,
			                      (uint64_t)nd->place_free_vcpus};

			if (f == 4)
				mr_f64(o, fam[f].name, l, nd->cpu_load);
			else
				mr_u64(o, fam[f].name, l, v[f]);
		}
	}
}

/*
 * The counters of struct dvm_counters, host-wide (labels "", prefix "vnumad_") or for one VM
 * (labels vm=..., prefix "vnumad_vm_"); heads says whether to write HELP and TYPE (the first
 * VM of a family writes them; per-VM families are written VM by VM within each family by the
 * caller, see mr_vm_counters).
 */
enum mr_counter {
	MRC_FAULTS,
	MRC_MIGRATED,
	MRC_FAILED,
	MRC_ACTIONS,
	MRC_UNSUPPORTED,
	MRC_NR,
};

static const struct {
	const char *suffix, *help;
} mr_counters[MRC_NR] = {
    [MRC_FAULTS] = {"hint_faults_total", "NUMA hinting faults of the vCPU threads, on the node "
                                         "the vCPU ran on (local) or another (remote)"},
    [MRC_MIGRATED] = {"memory_migrated_bytes_total",
                      "guest memory moved between nodes, by vnumad or by the kernel's own NUMA "
                      "balancing (where the host senses it)"},
    [MRC_FAILED] = {"memory_migrate_failed_bytes_total", "guest memory vnumad failed to move"},
    [MRC_ACTIONS] = {"actions_total", "vnumad's actions: vCPU moves to another node, flips of "
                                      "two vCPUs, memory binds"},
    [MRC_UNSUPPORTED] = {"actions_unsupported_total",
                         "actions the host refused as a lever it does not have"},
};

static void
mr_counter(struct util_buf *o, enum mr_counter which, bool vm, bool heads, const char *labels,
           const struct dvm_counters *c, bool kernel, struct util_buf *lab)
{
	char name[64];

	snprintf(name, sizeof(name), "%s%s", vm ? "vnumad_vm_" : "vnumad_",
	         mr_counters[which].suffix);
	if (heads)
		mr_family(o, name, "counter", mr_counters[which].help);
	switch (which) {
	case MRC_FAULTS:
		mr_u64(o, name, mr_labels(lab, labels, "locality", "local"), c->hint_faults_local);
		mr_u64(o, name, mr_labels(lab, labels, "locality", "remote"),
		       c->hint_faults - c->hint_faults_local);
		break;
	case MRC_MIGRATED:
		mr_u64(o, name, mr_labels(lab, labels, "by", "vnumad"),
		       c->pages_migrated * METRICS_PAGE_BYTES);
		if (kernel)
			mr_u64(o, name, mr_labels(lab, labels, "by", "kernel"),
			       c->pages_migrated_kernel * METRICS_PAGE_BYTES);
		break;
	case MRC_FAILED:
		mr_u64(o, name, labels, c->pages_migrate_failed * METRICS_PAGE_BYTES);
		break;
	case MRC_ACTIONS:
		mr_u64(o, name, mr_labels(lab, labels, "action", "vcpu_move"), c->vcpu_moves);
		mr_u64(o, name, mr_labels(lab, labels, "action", "flip"), c->flips);
		mr_u64(o, name, mr_labels(lab, labels, "action", "bind"), c->binds);
		break;
	case MRC_UNSUPPORTED:
	case MRC_NR:
		mr_u64(o, name, labels, c->unsupported);
		break;
	}
}

static void
mr_host(struct util_buf *o, const struct metrics_view *mv, struct util_buf *lab)
{
	bool kernel = mv->total.pages_migrated_kernel > 0;

	for (int i = 0; i < mv->nr_vms; i++)
		kernel = kernel || mv->vms[i].kernel_known;
	mr_one_u64(o, "vnumad_vms", "gauge", "VMs on the host", (uint64_t)mv->nr_vms);
	mr_one_f64(o, "vnumad_locality_ratio", "gauge",
	           "share of the VMs' memory on nodes their own vCPUs run on, weighted by each "
	           "VM's size (as vnumactl top's header)",
	           mv->memory_locality);
	if (mv->fault_locality >= 0) {
		mr_family(
		    o, "vnumad_fault_locality_ratio", "gauge",
		    "share of the VMs' recent hinting faults local to the faulting vCPU's node "
		    "(VMs with a current figure)");
		mr_f64(o, "vnumad_fault_locality_ratio", "", mv->fault_locality);
	}
	for (int w = 0; w < MRC_NR; w++)
		mr_counter(o, (enum mr_counter)w, false, true, "", &mv->total, kernel, lab);
	mr_family(o, "vnumad_vms_skipped_total", "counter",
	          "VMs a round left alone, per VM and round, by reason");
	for (int r = 0; r < DSKIP_MAX; r++)
		mr_u64(o, "vnumad_vms_skipped_total",
		       mr_labels(lab, "", "reason", daemon_skip_names[r]), mv->skipped[r]);
	mr_one_u64(o, "vnumad_actions_refused_total", "counter",
	           "planned actions the privileged-actions module refused", mv->actions_refused);
	mr_one_f64(o, "vnumad_migrate_rate_limit_bytes_per_second", "gauge",
	           "the host-wide migration rate limit (migrate_rate)", mv->migrate_rate_bytes_s);
	mr_one_u64(o, "vnumad_migrate_rate_limited_rounds_total", "counter",
	           "rounds whose migration budget the host-wide rate limit used up",
	           mv->rate_limited_rounds);
	mr_one_u64(o, "vnumad_migrate_rate_deferred_vms_total", "counter",
	           "VMs with memory off their home left unmoved by a round because of the rate "
	           "limit, per VM and round",
	           mv->rate_deferred_vms);
}

/* ---- per-VM families -------------------------------------------------------------------- */

static int
mr_vm_cmp(const void *a, const void *b)
{
	const struct metrics_vm *x = *(const struct metrics_vm *const *)a;
	const struct metrics_vm *y = *(const struct metrics_vm *const *)b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->id > y->id) - (x->id < y->id);
}

/* The VM's own labels: vm="NAME"[,domain_uuid="UUID"]. */
static char *
mr_vm_labels(const struct metrics_vm *v)
{
	struct util_buf b = {0}, two = {0};

	mr_labels(&b, "", "vm", v->name);
	if (v->uuid == NULL || v->uuid[0] == '\0')
		return b.data;
	mr_labels(&two, b.data, "domain_uuid", v->uuid);
	free(b.data);
	return two.data;
}

/* One gauge family per VM figure: which selects the figure. */
enum mr_vm_gauge {
	MRV_POLICY,
	MRV_STATE,
	MRV_SIZE,
	MRV_NODE_BYTES,
	MRV_NODE_VCPUS,
	MRV_LOCALITY,
	MRV_FAULT_LOCALITY,
	MRV_STRENGTH,
	MRV_PENDING,
	MRV_NR,
};

static const struct {
	const char *name, *help;
} mr_vm_gauges[MRV_NR] = {
    [MRV_POLICY] = {"vnumad_vm_policy_info",
                    "the VM's policy in force: mode, placement, and where it came from; 1"},
    [MRV_STATE] = {"vnumad_vm_state_info",
                   "what vnumad does with the VM now (settled, moving, placing, advisory, "
                   "paused, manual, off); 1"},
    [MRV_SIZE] = {"vnumad_vm_memory_size_bytes", "the VM's guest RAM"},
    [MRV_NODE_BYTES] = {"vnumad_vm_memory_bytes", "the VM's resident memory on the node"},
    [MRV_NODE_VCPUS] = {"vnumad_vm_vcpus", "the VM's vCPUs running on the node"},
    [MRV_LOCALITY] = {"vnumad_vm_locality_ratio",
                      "share of the VM's resident memory on nodes its vCPUs run on (vnumactl "
                      "list's memory_locality)"},
    [MRV_FAULT_LOCALITY] = {"vnumad_vm_fault_locality_ratio",
                            "share of the VM's recent hinting faults (10 s half-life) local to "
                            "the faulting vCPU's node (fault_locality); absent while no "
                            "current figure"},
    [MRV_STRENGTH] = {"vnumad_vm_convergence_strength",
                      "1024 x faults on the busiest node / all faults (1..1024; 0: too few)"},
    [MRV_PENDING] = {"vnumad_vm_memory_migrate_pending_bytes",
                     "the VM's memory moves still queued"},
};

static void
mr_vm_gauge(struct util_buf *o, enum mr_vm_gauge g, const struct metrics_view *mv,
            const struct metrics_vm *v, const char *vl, struct util_buf *lab)
{
	const char *name = mr_vm_gauges[g].name;
	struct util_buf two = {0};

	switch (g) {
	case MRV_POLICY:
		mr_labels(&two, mr_labels(lab, vl, "mode", v->mode), "placement", v->placement);
		mr_u64(o, name, mr_labels(lab, two.data, "source", v->source), 1);
		break;
	case MRV_STATE:
		mr_u64(o, name, mr_labels(lab, vl, "state", v->state), 1);
		break;
	case MRV_SIZE:
		mr_u64(o, name, vl, v->mem_size_bytes);
		break;
	case MRV_NODE_BYTES:
	case MRV_NODE_VCPUS:
		for (int n = 0; n < mv->nr_nodes; n++)
			mr_u64(o, name, mr_labels_int(lab, vl, "node", mv->nodes[n].id),
			       g == MRV_NODE_BYTES ? v->node_bytes[n] : (uint64_t)v->node_vcpus[n]);
		break;
	case MRV_LOCALITY:
		mr_f64(o, name, vl, v->memory_locality);
		break;
	case MRV_FAULT_LOCALITY:
		if (v->fault_locality >= 0)
			mr_f64(o, name, vl, v->fault_locality);
		break;
	case MRV_STRENGTH:
		mr_u64(o, name, vl, (uint64_t)v->strength);
		break;
	case MRV_PENDING:
	case MRV_NR:
		mr_u64(o, name, vl, v->pending_bytes);
		break;
	}
	free(two.data);
}

static void
mr_vms(struct util_buf *o, const struct metrics_view *mv, struct util_buf *lab)
{
	const struct metrics_vm **order = xcalloc((size_t)mv->nr_vms + 1, sizeof(*order));
	char **vl = xcalloc((size_t)mv->nr_vms + 1, sizeof(*vl));

	for (int i = 0; i < mv->nr_vms; i++)
		order[i] = &mv->vms[i];
	qsort(order, (size_t)mv->nr_vms, sizeof(*order), mr_vm_cmp);
	for (int i = 0; i < mv->nr_vms; i++)
		vl[i] = mr_vm_labels(order[i]);
	for (int g = 0; g < MRV_NR && mv->nr_vms > 0; g++) {
		bool any = g != MRV_FAULT_LOCALITY;

		for (int i = 0; i < mv->nr_vms && !any; i++)
			any = order[i]->fault_locality >= 0;
		if (!any)
			continue; /* a family with no sample is left out whole */
		mr_family(o, mr_vm_gauges[g].name, "gauge", mr_vm_gauges[g].help);
		for (int i = 0; i < mv->nr_vms; i++)
			mr_vm_gauge(o, (enum mr_vm_gauge)g, mv, order[i], vl[i], lab);
	}
	for (int w = 0; w < MRC_NR; w++)
		for (int i = 0; i < mv->nr_vms; i++)
			mr_counter(o, (enum mr_counter)w, true, i == 0, vl[i], &order[i]->c,
			           order[i]->kernel_known, lab);
	for (int i = 0; i < mv->nr_vms; i++)
		free(vl[i]);
	free(vl);
	free(order);
}

void
metrics_render(const struct metrics_view *mv, struct util_buf *out)
{
	struct util_buf lab = {0};

	mr_daemon(out, mv, &lab);
	mr_rounds(out, mv, &lab);
	mr_nodes(out, mv, &lab);
	mr_host(out, mv, &lab);
	mr_vms(out, mv, &lab);
	free(lab.data);
}

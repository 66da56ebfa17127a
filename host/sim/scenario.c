/*
 * scenario.c - load and fully validate a simulator scenario (BRIEF section 4.2).
 *
 * scenario_json.c parses the text strictly and rejects keys given twice; this file walks the
 * tree object by object: unknown keys first, then every field for type and range, cells for an
 * exact partition of the vCPUs, policies through the policy parser.  The first error wins; its
 * message starts with the JSON path of the field ("vms[1].cells[0].vcpus[3]: ...").  Nothing
 * is guessed or clamped.
 */
#include "host/fileio.h"
#include "host/sim/scenario.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/sim/scenario_json.h"
#include "host/sim/sim.h"
#include "policy/util.h"

#define SCN_DEFAULT_SEED          1
#define SCN_DEFAULT_DURATION_S    600.0
#define SCN_DEFAULT_CPUS_PER_NODE 16
#define SCN_MAX_CPUS_PER_NODE     1024
#define SCN_DEFAULT_NODE_MEM_GIB  64.0
#define SCN_MAX_NODE_MEM_GIB      65536.0 /* 64 TiB per node */
/* Largest VM, in GiB (64 TiB): above any hypervisor's limit; bounds the simulator's arrays. */
#define SCN_MAX_VM_MEM_GIB        65536.0
#define SCN_DISTANCE_LOCAL        10 /* ACPI SLIT: a node's distance to itself */
#define SCN_DISTANCE_REMOTE       21 /* default remote distance: one QPI/UPI/HT hop */
#define SCN_DISTANCE_MAX          255
#define SCN_DEFAULT_MEM_INTENSITY 0.5
#define SCN_DEFAULT_UTIL          1.0
#define SCN_DEFAULT_PHASE_S       60.0 /* phased (and the stored value for non-phasing ones) */
#define SCN_DEFAULT_ADVERSE_S     10.0
/* Relative tolerance when the cells' memory is compared with the VM's memory_gib. */
#define SCN_CELL_MEM_REL_TOL 1e-6

static const char *const scn_workload_names[] = {
    [SCN_WORKLOAD_PRIVATE] = "private", [SCN_WORKLOAD_SHARED] = "shared",
    [SCN_WORKLOAD_CELLS] = "cells",     [SCN_WORKLOAD_PHASED] = "phased",
    [SCN_WORKLOAD_ADVERSE] = "adverse", [SCN_WORKLOAD_IDLE] = "idle",
};
#define SCN_NR_WORKLOADS ((int)(sizeof(scn_workload_names) / sizeof(scn_workload_names[0])))

const char *
scn_workload_name(enum scn_workload w)
{
	if ((int)w < 0 || (int)w >= SCN_NR_WORKLOADS)
		return "unknown";
	return scn_workload_names[w];
}

/* A name of 1..SCN_NAME_MAX-1 bytes; vm_chars: VM names allow only [A-Za-z0-9_.-]. */
static int
scn_get_name(struct scn_ctx *ctx, struct json_object *obj, const char *parent, bool vm_chars,
             char *out)
{
	char path[SCN_PATH_MAX];
	const char *s;
	int rc = scn_get_str(ctx, obj, parent, "name", true, SCN_NAME_MAX - 1, &s);

	if (rc < 0)
		return rc;
	scn_path_key(path, parent, "name");
	if (s[0] == '\0')
		return scn_fail(ctx, path, "must not be empty");
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		bool ok = vm_chars ? (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		                         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'
		                   : c >= 0x20 && c != 0x7f;

		if (!ok && c >= 0x20 && c < 0x7f)
			return scn_fail(ctx, path, "'%c' is not allowed (use A-Z a-z 0-9 _ . -)",
			                c);
		if (!ok)
			return scn_fail(ctx, path, "byte 0x%02x at offset %td is not allowed%s", c,
			                p - s, vm_chars ? " (use A-Z a-z 0-9 _ . -)" : "");
	}
	strcpy(out, s);
	return 0;
}

/* An optional free-text string, copied (NULL when absent). */
static int
scn_get_text(struct scn_ctx *ctx, struct json_object *obj, const char *key, char **out)
{
	const char *s;
	int rc = scn_get_str(ctx, obj, "", key, false, SCN_TEXT_MAX_BYTES, &s);

	if (rc == 1)
		*out = xstrdup(s);
	return rc < 0 ? rc : 0;
}

/* ---- host ------------------------------------------------------------------------------ */

static int
scn_parse_distance_row(struct scn_ctx *ctx, struct json_object *row, const char *path, int i,
                       struct scn_host *host)
{
	char epath[SCN_PATH_MAX];
	int64_t d;

	if (!json_object_is_type(row, json_type_array))
		return scn_fail(ctx, path, "expected an array, got %s", scn_type_name(row));
	if (json_object_array_length(row) != (size_t)host->nodes)
		return scn_fail(ctx, path, "expected %d entries (one per node), got %zu",
		                host->nodes, json_object_array_length(row));
	for (int j = 0; j < host->nodes; j++) {
		scn_path_idx(epath, path, (size_t)j);
		if (scn_value_int(ctx, json_object_array_get_idx(row, (size_t)j), epath, INT32_MIN,
		                  INT32_MAX, &d) < 0)
			return -EINVAL;
		if (i == j && d != SCN_DISTANCE_LOCAL)
			return scn_fail(ctx, epath,
			                "a node's distance to itself must be %d, got %lld",
			                SCN_DISTANCE_LOCAL, (long long)d);
		if (i != j && (d <= SCN_DISTANCE_LOCAL || d > SCN_DISTANCE_MAX))
			return scn_fail(ctx, epath, "a remote distance must be in %d..%d, got %lld",
			                SCN_DISTANCE_LOCAL + 1, SCN_DISTANCE_MAX, (long long)d);
		host->distances[i * host->nodes + j] = (int)d;
	}
	return 0;
}

static int
scn_parse_distances(struct scn_ctx *ctx, struct json_object *hobj, struct scn_host *host)
{
	char path[SCN_PATH_MAX], rpath[SCN_PATH_MAX];
	struct json_object *v;
	int n = host->nodes, rc;

	host->distances = xcalloc((size_t)n * (size_t)n, sizeof(int));
	for (int i = 0; i < n * n; i++)
		host->distances[i] = i / n == i % n ? SCN_DISTANCE_LOCAL : SCN_DISTANCE_REMOTE;
	rc = scn_lookup(ctx, hobj, "host", "distances", false, &v, path);
	if (rc <= 0)
		return rc;
	if (!json_object_is_type(v, json_type_array))
		return scn_fail(ctx, path, "expected an array of arrays, got %s", scn_type_name(v));
	if (json_object_array_length(v) != (size_t)n)
		return scn_fail(ctx, path, "expected %d rows (one per node), got %zu", n,
		                json_object_array_length(v));
	for (int i = 0; i < n; i++) {
		scn_path_idx(rpath, path, (size_t)i);
		rc = scn_parse_distance_row(ctx, json_object_array_get_idx(v, (size_t)i), rpath, i,
		                            host);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
scn_parse_host(struct scn_ctx *ctx, struct json_object *root, struct scn_host *host)
{
	static const char *const known[] = {"nodes", "cpus_per_node", "memory_per_node_gib",
	                                    "distances", NULL};
	static const struct scn_range mem_r = {0, SCN_MAX_NODE_MEM_GIB, true, false};
	char path[SCN_PATH_MAX];
	struct json_object *h;
	int64_t x = SCN_DEFAULT_CPUS_PER_NODE;
	int rc;

	rc = scn_lookup(ctx, root, "", "host", true, &h, path);
	if (rc < 0 || (rc = scn_check_object(ctx, h, "host", known)) < 0)
		return rc;
	rc = scn_get_int(ctx, h, "host", "nodes", true, 1, SCN_MAX_NODES, &x);
	if (rc < 0)
		return rc;
	host->nodes = (int)x;
	x = SCN_DEFAULT_CPUS_PER_NODE;
	rc = scn_get_int(ctx, h, "host", "cpus_per_node", false, 1, SCN_MAX_CPUS_PER_NODE, &x);
	if (rc < 0)
		return rc;
	host->cpus_per_node = (int)x;
	host->memory_per_node_gib = SCN_DEFAULT_NODE_MEM_GIB;
	rc = scn_get_num(ctx, h, "host", "memory_per_node_gib", false, &mem_r,
	                 &host->memory_per_node_gib);
	if (rc < 0)
		return rc;
	return scn_parse_distances(ctx, h, host);
}

/* ---- VMs ------------------------------------------------------------------------------- */

/* A memory size in GiB: > 0, at most SCN_MAX_VM_MEM_GIB, and at least one 2-MiB region. */
static int
scn_get_mem_gib(struct scn_ctx *ctx, struct json_object *obj, const char *parent, double *out)
{
	static const struct scn_range r = {0, SCN_MAX_VM_MEM_GIB, true, false};
	char path[SCN_PATH_MAX], num[40];
	int rc = scn_get_num(ctx, obj, parent, "memory_gib", true, &r, out);

	if (rc < 0)
		return rc;
	if (*out * 1024.0 < SIM_REGION_MIB) {
		scn_path_key(path, parent, "memory_gib");
		return scn_fail(ctx, path, "must be at least %d MiB (%s GiB)", SIM_REGION_MIB,
		                scn_num_str(SIM_REGION_MIB / 1024.0, num, sizeof(num)));
	}
	return 0;
}

static int
scn_parse_workload(struct scn_ctx *ctx, struct json_object *obj, const char *parent,
                   struct scn_vm *vm)
{
	char path[SCN_PATH_MAX], quoted[SCN_KEY_QUOTE_MAX + 8];
	const char *s;
	int rc = scn_get_str(ctx, obj, parent, "workload", false, SCN_TEXT_MAX_BYTES, &s);

	vm->workload = SCN_WORKLOAD_PRIVATE;
	if (rc <= 0)
		return rc;
	for (int w = 0; w < SCN_NR_WORKLOADS; w++) {
		if (strcmp(s, scn_workload_names[w]) == 0) {
			vm->workload = (enum scn_workload)w;
			return 0;
		}
	}
	scn_path_key(path, parent, "workload");
	scn_key_quote(quoted, sizeof(quoted), s, strlen(s));
	return scn_fail(ctx, path,
	                "unknown workload '%s' (private, shared, cells, phased, adverse or idle)",
	                quoted);
}

/* mem_intensity, util and phase_s, which depend on the workload. */
static int
scn_parse_load(struct scn_ctx *ctx, struct json_object *obj, const char *parent, struct scn_vm *vm)
{
	static const struct scn_range unit_r = {0, 1, false, false};
	static const struct scn_range phase_r = {SIM_TICK_S, SCN_MAX_DURATION_S, false, false};
	bool phasing = vm->workload == SCN_WORKLOAD_PHASED || vm->workload == SCN_WORKLOAD_ADVERSE;
	char path[SCN_PATH_MAX];
	int rc;

	vm->mem_intensity = SCN_DEFAULT_MEM_INTENSITY;
	rc = scn_get_num(ctx, obj, parent, "mem_intensity", false, &unit_r, &vm->mem_intensity);
	if (rc < 0)
		return rc;
	vm->util = SCN_DEFAULT_UTIL;
	rc = scn_get_num(ctx, obj, parent, "util", false, &unit_r, &vm->util);
	if (rc < 0)
		return rc;
	scn_path_key(path, parent, "util");
	if (rc == 1 && vm->workload == SCN_WORKLOAD_IDLE)
		return scn_fail(ctx, path, "not settable for the idle workload (it runs at %g)",
		                SIM_IDLE_UTIL);
	vm->phase_s =
	    vm->workload == SCN_WORKLOAD_ADVERSE ? SCN_DEFAULT_ADVERSE_S : SCN_DEFAULT_PHASE_S;
	rc = scn_get_num(ctx, obj, parent, "phase_s", false, &phase_r, &vm->phase_s);
	if (rc < 0)
		return rc;
	scn_path_key(path, parent, "phase_s");
	if (rc == 1 && !phasing)
		return scn_fail(ctx, path, "only for the phased and adverse workloads, not %s",
		                scn_workload_name(vm->workload));
	return 0;
}

static int
scn_parse_times(struct scn_ctx *ctx, struct json_object *obj, const char *parent,
                const struct scenario *scn, struct scn_vm *vm)
{
	struct scn_range start_r = {0, scn->duration_s, false, true};
	struct scn_range stop_r = {0, INFINITY, true, false};
	int64_t node = -1;
	int rc;

	vm->start_s = 0;
	rc = scn_get_num(ctx, obj, parent, "start_s", false, &start_r, &vm->start_s);
	if (rc < 0)
		return rc;
	vm->stop_s = -1;
	stop_r.lo = vm->start_s;
	rc = scn_get_num(ctx, obj, parent, "stop_s", false, &stop_r, &vm->stop_s);
	if (rc < 0)
		return rc;
	rc =
	    scn_get_int(ctx, obj, parent, "first_touch_node", false, 0, scn->host.nodes - 1, &node);
	vm->first_touch_node = (int)node;
	return rc < 0 ? rc : 0;
}

/* One vCPU index of a cell: it must exist and be in no cell yet (owner[] = cell or -1). */
static int
scn_parse_cell_vcpus(struct scn_ctx *ctx, struct json_object *cobj, const char *cpath,
                     const struct scn_vm *vm, int c, int *owner)
{
	char path[SCN_PATH_MAX], epath[SCN_PATH_MAX];
	struct scn_cell *cell = &vm->cells[c];
	struct json_object *v;
	int64_t x;
	size_t n;

	if (scn_lookup(ctx, cobj, cpath, "vcpus", true, &v, path) < 0)
		return -EINVAL;
	if (!json_object_is_type(v, json_type_array))
		return scn_fail(ctx, path, "expected an array, got %s", scn_type_name(v));
	n = json_object_array_length(v);
	if (n == 0)
		return scn_fail(ctx, path, "a cell needs at least one vCPU");
	/* Any entry beyond vm->vcpus repeats one, so this bounds memory by the text. */
	cell->vcpus = xcalloc(n < (size_t)vm->vcpus ? n : (size_t)vm->vcpus, sizeof(int));
	for (size_t i = 0; i < n; i++) {
		scn_path_idx(epath, path, i);
		if (scn_value_int(ctx, json_object_array_get_idx(v, i), epath, INT32_MIN, INT32_MAX,
		                  &x) < 0)
			return -EINVAL;
		if (x < 0 || x >= vm->vcpus)
			return scn_fail(ctx, epath,
			                "vCPU %lld does not exist (the VM has %d vCPUs)",
			                (long long)x, vm->vcpus);
		if (owner[x] >= 0)
			return scn_fail(ctx, epath, "vCPU %lld is already in cell %d", (long long)x,
			                owner[x]);
		owner[x] = c;
		cell->vcpus[cell->nr_vcpus++] = (int)x;
	}
	return 0;
}

static int
scn_parse_cell(struct scn_ctx *ctx, struct json_object *cobj, const char *cpath,
               const struct scn_vm *vm, int c, int *owner)
{
	static const char *const known[] = {"vcpus", "memory_gib", NULL};
	int rc = scn_check_object(ctx, cobj, cpath, known);

	if (rc < 0 || (rc = scn_parse_cell_vcpus(ctx, cobj, cpath, vm, c, owner)) < 0)
		return rc;
	return scn_get_mem_gib(ctx, cobj, cpath, &vm->cells[c].memory_gib);
}

/* The cells must partition the vCPUs exactly and their memory must add up to the VM's. */
static int
scn_check_cells(struct scn_ctx *ctx, const char *path, const struct scn_vm *vm, const int *owner)
{
	char sum_s[40], mem_s[40];
	double sum = 0;

	for (int i = 0; i < vm->vcpus; i++)
		if (owner[i] < 0)
			return scn_fail(ctx, path, "vCPU %d is in no cell", i);
	for (int c = 0; c < vm->nr_cells; c++)
		sum += vm->cells[c].memory_gib;
	if (fabs(sum - vm->memory_gib) > SCN_CELL_MEM_REL_TOL * vm->memory_gib)
		return scn_fail(ctx, path,
		                "the cells' memory (%s GiB) does not add up to memory_gib "
		                "(%s GiB)",
		                scn_num_str(sum, sum_s, sizeof(sum_s)),
		                scn_num_str(vm->memory_gib, mem_s, sizeof(mem_s)));
	return 0;
}

static int
scn_parse_cells(struct scn_ctx *ctx, struct json_object *obj, const char *parent, struct scn_vm *vm)
{
	char path[SCN_PATH_MAX], cpath[SCN_PATH_MAX];
	struct json_object *v;
	int *owner = NULL;
	size_t n;
	int rc = scn_lookup(ctx, obj, parent, "cells", false, &v, path);

	if (rc == 0 && vm->workload == SCN_WORKLOAD_CELLS)
		return scn_fail(ctx, path, "missing (required by the cells workload)");
	if (rc <= 0)
		return rc;
	if (!json_object_is_type(v, json_type_array))
		return scn_fail(ctx, path, "expected an array, got %s", scn_type_name(v));
	n = json_object_array_length(v);
	if (n == 0 || n > SCN_MAX_NODES)
		return scn_fail(ctx, path, "must list 1..%d cells, got %zu", SCN_MAX_NODES, n);
	vm->cells = xcalloc(n, sizeof(*vm->cells));
	vm->nr_cells = (int)n;
	owner = xmalloc((size_t)vm->vcpus * sizeof(int));
	for (int i = 0; i < vm->vcpus; i++)
		owner[i] = -1;
	for (size_t c = 0; c < n; c++) {
		scn_path_idx(cpath, path, c);
		rc = scn_parse_cell(ctx, json_object_array_get_idx(v, c), cpath, vm, (int)c, owner);
		if (rc < 0)
			goto out;
	}
	rc = scn_check_cells(ctx, path, vm, owner);
out:
	free(owner);
	return rc;
}

static int
scn_parse_policy(struct scn_ctx *ctx, struct json_object *obj, const char *parent,
                 const struct scn_host *host, struct scn_vm *vm)
{
	char path[SCN_PATH_MAX], msg[256];
	const char *s;
	int rc = scn_get_str(ctx, obj, parent, "policy", false, SCN_TEXT_MAX_BYTES, &s);
	uint64_t beyond;

	vm_policy_init_default(&vm->policy);
	if (rc <= 0)
		return rc;
	scn_path_key(path, parent, "policy");
	msg[0] = '\0';
	if (vm_policy_parse_xml(s, strlen(s), &vm->policy, msg, sizeof(msg)) < 0)
		return scn_fail(ctx, path, "%s", msg[0] ? msg : "invalid policy");
	beyond = host->nodes < 64 ? vm->policy.nodes >> host->nodes : 0;
	if (vm->policy.nodes != NODEMASK_ALL && beyond != 0)
		return scn_fail(ctx, path, "nodes names node %d, but the host has %d nodes",
		                host->nodes + nodemask_first(beyond), host->nodes);
	if (vm->policy.placement == VM_POLICY_PLACEMENT_CELLS && vm->nr_cells == 0)
		return scn_fail(ctx, path,
		                "placement='cells' needs guest cells, and the VM has none");
	vm->policy_xml = xstrdup(s);
	return 0;
}

static int
scn_parse_vm(struct scn_ctx *ctx, struct json_object *obj, const char *path,
             const struct scenario *scn, struct scn_vm *vm)
{
	static const char *const known[] = {
	    "name",   "vcpus",   "memory_gib",       "workload", "mem_intensity", "util", "start_s",
	    "stop_s", "phase_s", "first_touch_node", "cells",    "policy",        NULL};
	int64_t x;
	int rc = scn_check_object(ctx, obj, path, known);

	vm_policy_init_default(&vm->policy);
	if (rc < 0 || (rc = scn_get_name(ctx, obj, path, true, vm->name)) < 0)
		return rc;
	rc = scn_get_int(ctx, obj, path, "vcpus", true, 1, SCN_MAX_VCPUS, &x);
	if (rc < 0)
		return rc;
	vm->vcpus = (int)x;
	if ((rc = scn_get_mem_gib(ctx, obj, path, &vm->memory_gib)) < 0 ||
	    (rc = scn_parse_workload(ctx, obj, path, vm)) < 0 ||
	    (rc = scn_parse_load(ctx, obj, path, vm)) < 0 ||
	    (rc = scn_parse_times(ctx, obj, path, scn, vm)) < 0 ||
	    (rc = scn_parse_cells(ctx, obj, path, vm)) < 0)
		return rc;
	return scn_parse_policy(ctx, obj, path, &scn->host, vm);
}

struct scn_name_ref {
	const char *name;
	int idx;
};

static int
scn_name_ref_cmp(const void *a, const void *b)
{
	const struct scn_name_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Report the lowest-indexed VM whose name an earlier VM already has. */
static int
scn_check_vm_names(struct scn_ctx *ctx, const struct scenario *scn)
{
	struct scn_name_ref *refs = xcalloc((size_t)scn->nr_vms, sizeof(*refs));
	int dup = -1, first = -1, rc = 0;
	char path[SCN_PATH_MAX];

	for (int i = 0; i < scn->nr_vms; i++)
		refs[i] = (struct scn_name_ref){scn->vms[i].name, i};
	qsort(refs, (size_t)scn->nr_vms, sizeof(*refs), scn_name_ref_cmp);
	for (int i = 1; i < scn->nr_vms; i++) {
		bool new_group = i == 1 || strcmp(refs[i - 1].name, refs[i - 2].name) != 0;

		if (new_group && strcmp(refs[i].name, refs[i - 1].name) == 0 &&
		    (dup < 0 || refs[i].idx < dup)) {
			dup = refs[i].idx;
			first = refs[i - 1].idx;
		}
	}
	if (dup >= 0) {
		snprintf(path, sizeof(path), "vms[%d].name", dup);
		rc = scn_fail(ctx, path, "duplicate VM name '%s' (also vms[%d])",
		              scn->vms[dup].name, first);
	}
	free(refs);
	return rc;
}

/*
 * The totals over vms[0..i] within SCN_MAX_TOTAL_MEM_GIB and SCN_MAX_TOTAL_VCPUS; the error
 * names the VM that goes over, so parsing stops there.
 */
static int
scn_check_totals(struct scn_ctx *ctx, const char *vpath, const struct scn_vm *vm, double *mem_gib,
                 int64_t *vcpus)
{
	char path[SCN_PATH_MAX], num[40];

	*mem_gib += vm->memory_gib;
	*vcpus += vm->vcpus;
	if (*mem_gib > SCN_MAX_TOTAL_MEM_GIB) {
		scn_path_key(path, vpath, "memory_gib");
		return scn_fail(ctx, path,
		                "the VMs' memory adds up to %s GiB here, over the %.0f GiB (128 "
		                "TiB) all the VMs of a scenario may have together",
		                scn_num_str(*mem_gib, num, sizeof(num)), SCN_MAX_TOTAL_MEM_GIB);
	}
	if (*vcpus > SCN_MAX_TOTAL_VCPUS) {
		scn_path_key(path, vpath, "vcpus");
		return scn_fail(ctx, path,
		                "the VMs' vCPUs add up to %lld here, over the %d all the VMs of a "
		                "scenario may have together",
		                (long long)*vcpus, SCN_MAX_TOTAL_VCPUS);
	}
	return 0;
}

static int
scn_parse_vms(struct scn_ctx *ctx, struct json_object *root, struct scenario *scn)
{
	char path[SCN_PATH_MAX], vpath[SCN_PATH_MAX];
	struct json_object *v;
	double mem_gib = 0;
	int64_t vcpus = 0;
	size_t n;
	int rc = scn_lookup(ctx, root, "", "vms", true, &v, path);

	if (rc < 0)
		return rc;
	if (!json_object_is_type(v, json_type_array))
		return scn_fail(ctx, path, "expected an array, got %s", scn_type_name(v));
	n = json_object_array_length(v);
	if (n == 0 || n > SCN_MAX_VMS)
		return scn_fail(ctx, path, "must list 1..%d VMs, got %zu", SCN_MAX_VMS, n);
	scn->vms = xcalloc(n, sizeof(*scn->vms));
	scn->nr_vms = (int)n;
	for (size_t i = 0; i < n; i++) {
		scn_path_idx(vpath, path, i);
		rc = scn_parse_vm(ctx, json_object_array_get_idx(v, i), vpath, scn, &scn->vms[i]);
		if (rc == 0)
			rc = scn_check_totals(ctx, vpath, &scn->vms[i], &mem_gib, &vcpus);
		if (rc < 0)
			return rc;
	}
	return scn_check_vm_names(ctx, scn);
}

static int
scn_parse_root(struct scn_ctx *ctx, struct json_object *root, struct scenario *scn)
{
	static const char *const known[] = {
	    "name",       "description", "oracle_note", "known_loss",       "seed",
	    "duration_s", "host",        "vms",         "balancer_start_s", NULL};
	static const struct scn_range dur_r = {0, SCN_MAX_DURATION_S, true, false};
	int64_t seed = SCN_DEFAULT_SEED;
	int rc = scn_check_object(ctx, root, "", known);

	if (rc < 0 || (rc = scn_get_name(ctx, root, "", false, scn->name)) < 0 ||
	    (rc = scn_get_text(ctx, root, "description", &scn->description)) < 0 ||
	    (rc = scn_get_text(ctx, root, "oracle_note", &scn->oracle_note)) < 0 ||
	    (rc = scn_get_text(ctx, root, "known_loss", &scn->known_loss)) < 0)
		return rc;
	rc = scn_get_int(ctx, root, "", "seed", false, 0, SCN_EXACT_INT_MAX, &seed);
	if (rc < 0)
		return rc;
	scn->seed = (uint64_t)seed;
	scn->duration_s = SCN_DEFAULT_DURATION_S;
	rc = scn_get_num(ctx, root, "", "duration_s", false, &dur_r, &scn->duration_s);
	if (rc < 0)
		return rc;
	struct scn_range bal_r = {0, scn->duration_s, false, true};

	rc = scn_get_num(ctx, root, "", "balancer_start_s", false, &bal_r, &scn->balancer_start_s);
	if (rc < 0 || (rc = scn_parse_host(ctx, root, &scn->host)) < 0)
		return rc;
	return scn_parse_vms(ctx, root, scn);
}

/* ---- text and files -------------------------------------------------------------------- */

static int
scn_load_text(const char *text, size_t len, struct scenario **out, char *err, size_t errlen)
{
	struct scn_ctx ctx = {err, errlen};
	struct scenario *scn = NULL;
	struct json_object *root = NULL;
	int rc;

	*out = NULL;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	rc = scn_json_parse(&ctx, text, len, &root);
	if (rc < 0)
		return rc;
	scn = xcalloc(1, sizeof(*scn));
	rc = scn_parse_root(&ctx, root, scn);
	if (rc < 0)
		scenario_free(scn);
	else
		*out = scn;
	json_object_put(root);
	return rc;
}

int
scenario_load_string(const char *json, struct scenario **out, char *err, size_t errlen)
{
	return scn_load_text(json, strlen(json), out, err, errlen);
}

/* Read a whole file of at most SCN_TEXT_MAX_BYTES into a malloc'd buffer. */
static int
scn_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	int rc = fileio_read(path, SCN_TEXT_MAX_BYTES, buf, len);

	if (rc == -EFBIG)
		snprintf(err, errlen, "%s: larger than %zu MiB, not a scenario", path,
		         SCN_TEXT_MAX_BYTES >> 20);
	else if (rc < 0)
		snprintf(err, errlen, "%s: %s", path, fileio_strerror(rc));
	return rc;
}

int
scenario_load_file(const char *path, struct scenario **out, char *err, size_t errlen)
{
	char *buf = NULL, *msg = xcalloc(1, errlen + 1);
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = scn_read_file(path, &buf, &len, msg, errlen + 1);
	if (rc == 0 && len == 0) {
		snprintf(msg, errlen + 1, "%s: empty file", path);
		rc = -EINVAL;
	} else if (rc == 0 && (rc = scn_load_text(buf, len, out, msg, errlen + 1)) < 0) {
		char *tmp = xstrdup(msg);

		snprintf(msg, errlen + 1, "%s: %s", path, tmp);
		free(tmp);
	}
	if (rc < 0 && err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", msg);
	free(buf);
	free(msg);
	return rc;
}

void
scenario_free(struct scenario *scn)
{
	if (scn == NULL)
		return;
	for (int i = 0; i < scn->nr_vms; i++) {
		struct scn_vm *vm = &scn->vms[i];

		for (int c = 0; c < vm->nr_cells; c++)
			free(vm->cells[c].vcpus);
		free(vm->cells);
		free(vm->policy_xml);
	}
	free(scn->vms);
	free(scn->host.distances);
	free(scn->description);
	free(scn->oracle_note);
	free(scn->known_loss);
	free(scn);
}

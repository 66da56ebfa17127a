/*
 * qemu_numa.c - a QEMU guest's vNUMA cells and its RAM's backend from its command line
 * (qemu_numa.h).
 *
 * One pass over argv collects the -numa node options, the memory backends of -object, the -m
 * size and what else says where guest RAM is (-machine memory-backend=, -mem-path); the cells
 * are then checked as a whole and laid out by nodeid, and without memdev= cells the backend of
 * QEMU's one RAM block is named (qn_ram_block_set).
 */
#include "host/linux/qemu_numa.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "policy/util.h"

/* Longest option item ("key=value") read, with its NUL; a longer one is malformed. */
#define QN_ITEM_MAX 256
/* Highest vCPU index accepted in cpus=, the same bound discovery puts on "CPU n/KVM". */
#define QN_VCPU_MAX (INT_MAX / 2)

struct qn_backend {
	struct linux_qemu_backend b; /* mem_path owned until handed to the result */
	bool size_ok;                /* size= given and well-formed */
};

struct qn_node {
	int nodeid; /* -1 until given or assigned */
	bool has_mem, has_memdev;
	uint64_t size_bytes; /* mem=, or the memdev's size once resolved */
	char memdev[LINUX_QEMU_ID_MAX];
	int backend; /* the memdev's index in backends once resolved, else -1 */
	int first_range, nr_ranges;
};

/* What one pass over argv collected; the first error found wins. */
struct qn_parse {
	struct qn_node *nodes;
	size_t nr_nodes, cap_nodes;
	struct qn_backend *backends;
	size_t nr_backends, cap_backends;
	struct linux_qemu_cpus *ranges;
	size_t nr_ranges, cap_ranges;
	bool numa_cpu;    /* a -numa cpu option: vCPUs mapped by topology */
	bool numa_node;   /* a -numa node option, kept or not */
	bool numa_memdev; /* a -numa node option with memdev=, kept or not */
	bool has_ram;
	uint64_t ram_bytes;
	char machine_memdev[LINUX_QEMU_ID_MAX]; /* -machine memory-backend=, "" if none */
	bool machine_memdev_bad;                /* ... given, but too long to be an id */
	const char *mem_path;                   /* -mem-path (points into argv), or NULL */
	char error[LINUX_QEMU_ERROR_MAX];
};

static int __attribute__((format(printf, 2, 3))) qn_fail(struct qn_parse *qp, const char *fmt, ...)
{
	va_list ap;

	if (qp->error[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(qp->error, sizeof(qp->error), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ---- sizes ---------------------------------------------------------------------------------- */

/* The multiplier of a size suffix (B, K, M, ... E, any case), or 0 for none of them. */
static uint64_t
qn_suffix_mul(char c)
{
	static const char suffixes[] = "BKMGTPE";
	const char *s = c != '\0' ? strchr(suffixes, toupper((unsigned char)c)) : NULL;

	return s != NULL ? (uint64_t)1 << (10 * (s - suffixes)) : 0;
}

/* "0x" and hex digits, nothing after them. */
static int
qn_size_hex(const char *s, uint64_t unit_bytes, uint64_t *bytes)
{
	unsigned long long v;
	char *end;

	if (!isxdigit((unsigned char)s[2]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s + 2, &end, 16);
	if (errno != 0 || *end != '\0' || (unit_bytes > 0 && v > UINT64_MAX / unit_bytes))
		return -EINVAL;
	*bytes = v * unit_bytes;
	return 0;
}

int
linux_qemu_size_parse(const char *s, uint64_t unit_bytes, uint64_t *bytes)
{
	unsigned long long whole;
	double frac = 0;
	uint64_t mul = unit_bytes, frac_bytes = 0;
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return qn_size_hex(s, unit_bytes, bytes);
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	whole = strtoull(s, &end, 10);
	if (errno != 0)
		return -EINVAL;
	if (*end == '.') {
		const char *f = end;

		if (!isdigit((unsigned char)*++end))
			return -EINVAL;
		while (isdigit((unsigned char)*end))
			end++;
		frac = strtod(f, NULL); /* ".ddd": 0 <= frac < 1 */
	}
	if (*end != '\0') {
		if ((mul = qn_suffix_mul(*end)) == 0 || end[1] != '\0')
			return -EINVAL;
	}
	if (mul == 0 || (frac > 0 && mul == 1) || whole > UINT64_MAX / mul)
		return -EINVAL;
	frac_bytes = (uint64_t)(frac * (double)mul);
	if (whole * mul > UINT64_MAX - frac_bytes)
		return -EINVAL;
	*bytes = whole * mul + frac_bytes;
	return 0;
}

/* ---- option items -------------------------------------------------------------------------- */

/*
 * Copy the next comma-separated item of an option value (",," = ',') into item; returns what
 * follows it, or NULL when the item does not fit.
 */
static const char *
qn_item_next(const char *p, char item[QN_ITEM_MAX])
{
	size_t n = 0;

	while (*p != '\0') {
		if (*p == ',') {
			if (p[1] != ',')
				break;
			p++;
		}
		if (n + 1 >= QN_ITEM_MAX)
			return NULL;
		item[n++] = *p++;
	}
	item[n] = '\0';
	return *p == ',' ? p + 1 : p;
}

/* Split "key=value" in place; the value, or NULL when there is no '='. */
static char *
qn_item_split(char *item)
{
	char *eq = strchr(item, '=');

	if (eq == NULL)
		return NULL;
	*eq = '\0';
	return eq + 1;
}

/*
 * The type of a QemuOpts value whose implied first key is `key` ("type" for -numa, "qom-type"
 * for -object): its first item when that has no '=', else the value of key=.  "" if none.
 */
static void
qn_opts_type(const char *arg, const char *key, char type[QN_ITEM_MAX])
{
	char item[QN_ITEM_MAX];
	const char *p = arg;
	bool first = true;

	type[0] = '\0';
	while (p != NULL && *p != '\0') {
		char *val;

		if ((p = qn_item_next(p, item)) == NULL)
			return;
		val = qn_item_split(item);
		if ((first && val == NULL) || (val != NULL && strcmp(item, key) == 0))
			snprintf(type, QN_ITEM_MAX, "%s", val != NULL ? val : item);
		first = false;
	}
}

/*
 * The value of the last key= item of a QemuOpts value into val (size bytes): true if there is
 * one that fits.
 */
static bool
qn_opts_value(const char *arg, const char *key, char *val, size_t size)
{
	char item[QN_ITEM_MAX];
	const char *p = arg;
	bool found = false;

	while (p != NULL && *p != '\0') {
		char *v;

		if ((p = qn_item_next(p, item)) == NULL)
			break;
		if ((v = qn_item_split(item)) != NULL && strcmp(item, key) == 0)
			found = (size_t)snprintf(val, size, "%s", v) < size;
	}
	return found;
}

/* The kind of a memory backend's qom-type; false for every other type. */
static bool
qn_backend_kind(const char *type, enum linux_qemu_backend_kind *kind)
{
	if (strcmp(type, "memory-backend-ram") == 0)
		*kind = LINUX_QEMU_BACKEND_RAM;
	else if (strcmp(type, "memory-backend-file") == 0)
		*kind = LINUX_QEMU_BACKEND_FILE;
	else if (strcmp(type, "memory-backend-memfd") == 0)
		*kind = LINUX_QEMU_BACKEND_MEMFD;
	else
		return false;
	return true;
}

/* ---- -object ---------------------------------------------------------------------------------
 */

/* A backend as read: its id, kind, size (size_ok: well-formed) and mem-path (or NULL). */
static void
qn_backend_add(struct qn_parse *qp, const char *id, enum linux_qemu_backend_kind kind, bool size_ok,
               uint64_t size_bytes, const char *mem_path)
{
	struct qn_backend *b;

	if (id == NULL || id[0] == '\0' || strlen(id) >= LINUX_QEMU_ID_MAX ||
	    qp->nr_backends >= LINUX_QEMU_ITEMS_MAX)
		return; /* QEMU needs an id; a -numa naming this one will find none */
	util_array_reserve((void **)&qp->backends, &qp->cap_backends, qp->nr_backends + 1,
	                   sizeof(*qp->backends));
	b = &qp->backends[qp->nr_backends++];
	memset(b, 0, sizeof(*b));
	snprintf(b->b.id, sizeof(b->b.id), "%s", id);
	b->b.kind = kind;
	b->b.size_bytes = size_ok ? size_bytes : 0;
	if (kind == LINUX_QEMU_BACKEND_FILE && mem_path != NULL)
		b->b.mem_path = xstrdup(mem_path);
	b->size_ok = size_ok;
}

/* The string member key of JSON object o, or NULL. */
static const char *
qn_json_string(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* {"qom-type": "memory-backend-ram", "id": "ram-node0", "size": 268435456, ...} */
static void
qn_object_json(struct qn_parse *qp, const char *arg)
{
	struct json_object *o = json_tokener_parse(arg), *size;
	enum linux_qemu_backend_kind kind;
	const char *type, *id;
	bool size_ok;

	if (o == NULL)
		return;
	if (json_object_is_type(o, json_type_object) &&
	    (type = qn_json_string(o, "qom-type")) != NULL && qn_backend_kind(type, &kind) &&
	    (id = qn_json_string(o, "id")) != NULL) {
		size_ok = json_object_object_get_ex(o, "size", &size) &&
		          json_object_is_type(size, json_type_int) &&
		          json_object_get_int64(size) >= 0;
		qn_backend_add(qp, id, kind, size_ok,
		               size_ok ? (uint64_t)json_object_get_int64(size) : 0,
		               qn_json_string(o, "mem-path"));
	}
	json_object_put(o);
}

/* memory-backend-ram,id=ram-node0,size=256M,... (or qom-type=...) */
static void
qn_object_kv(struct qn_parse *qp, const char *arg)
{
	char type[QN_ITEM_MAX], item[QN_ITEM_MAX], id[LINUX_QEMU_ID_MAX] = "";
	char mem_path[QN_ITEM_MAX] = "";
	enum linux_qemu_backend_kind kind;
	const char *p = arg;
	uint64_t size_bytes = 0;
	bool size_ok = false;

	qn_opts_type(arg, "qom-type", type);
	if (!qn_backend_kind(type, &kind))
		return;
	while (p != NULL && *p != '\0') {
		char *val;

		if ((p = qn_item_next(p, item)) == NULL)
			return;
		if ((val = qn_item_split(item)) == NULL)
			continue;
		if (strcmp(item, "id") == 0)
			snprintf(id, sizeof(id), "%s", val);
		else if (strcmp(item, "size") == 0)
			size_ok = linux_qemu_size_parse(val, 1, &size_bytes) == 0;
		else if (strcmp(item, "mem-path") == 0)
			snprintf(mem_path, sizeof(mem_path), "%s", val);
	}
	qn_backend_add(qp, id, kind, size_ok, size_bytes, mem_path[0] ? mem_path : NULL);
}

/* ---- -numa ---------------------------------------------------------------------------------- */

/* cpus=A or cpus=A-B. */
static int
qn_cpus_add(struct qn_parse *qp, const char *val)
{
	struct linux_qemu_cpus r;
	char *end;
	long a, b;

	if (!isdigit((unsigned char)val[0]))
		return qn_fail(qp, "-numa node: cpus=%.32s is not N or N-M", val);
	a = b = strtol(val, &end, 10);
	if (*end == '-' && isdigit((unsigned char)end[1]))
		b = strtol(end + 1, &end, 10);
	if (*end != '\0' || b < a || b > QN_VCPU_MAX)
		return qn_fail(qp, "-numa node: cpus=%.32s is not N or N-M", val);
	if (qp->nr_ranges >= LINUX_QEMU_ITEMS_MAX)
		return qn_fail(qp, "-numa node: more than %d cpus= ranges", LINUX_QEMU_ITEMS_MAX);
	r.first = (int)a;
	r.last = (int)b;
	util_array_reserve((void **)&qp->ranges, &qp->cap_ranges, qp->nr_ranges + 1,
	                   sizeof(*qp->ranges));
	qp->ranges[qp->nr_ranges++] = r;
	return 0;
}

/* One key=value of -numa node into n. */
static int
qn_node_key(struct qn_parse *qp, struct qn_node *n, const char *key, const char *val)
{
	char *end = NULL;
	long v;

	if (strcmp(key, "cpus") == 0)
		return qn_cpus_add(qp, val);
	if (strcmp(key, "nodeid") == 0) {
		v = isdigit((unsigned char)val[0]) ? strtol(val, &end, 10) : -1;
		if (v < 0 || *end != '\0' || v >= LINUX_QEMU_CELLS_MAX || n->nodeid >= 0)
			return qn_fail(qp,
			               "-numa node: nodeid=%.32s is not one number from 0 to %d",
			               val, LINUX_QEMU_CELLS_MAX - 1);
		n->nodeid = (int)v;
	} else if (strcmp(key, "mem") == 0) {
		if (n->has_mem || linux_qemu_size_parse(val, (uint64_t)1 << 20, &n->size_bytes) < 0)
			return qn_fail(qp, "-numa node: mem=%.32s is not one size", val);
		n->has_mem = true;
	} else if (strcmp(key, "memdev") == 0) {
		if (n->has_memdev || strlen(val) >= LINUX_QEMU_ID_MAX || val[0] == '\0')
			return qn_fail(qp, "-numa node: memdev=%.32s is not one backend id", val);
		snprintf(n->memdev, sizeof(n->memdev), "%s", val);
		n->has_memdev = true;
	}
	return 0; /* initiator= and the like: nothing vnumad uses */
}

static int
qn_numa_parse(struct qn_parse *qp, const char *arg)
{
	struct qn_node n = {.nodeid = -1, .first_range = (int)qp->nr_ranges, .backend = -1};
	char type[QN_ITEM_MAX], item[QN_ITEM_MAX];
	const char *p = arg;
	int ret;

	qn_opts_type(arg, "type", type);
	if (strcmp(type, "cpu") == 0)
		qp->numa_cpu = true;
	if (strcmp(type, "node") != 0)
		return 0; /* dist, hmat-lb, hmat-cache: nothing about cells */
	qp->numa_node = true;
	/* seen even when the option is malformed: QEMU then makes no RAM block of its own */
	qp->numa_memdev |= qn_opts_value(arg, "memdev", item, sizeof(item));
	while (*p != '\0') {
		char *val;

		if ((p = qn_item_next(p, item)) == NULL)
			return qn_fail(qp, "-numa node: an item longer than %d bytes",
			               QN_ITEM_MAX - 1);
		if ((val = qn_item_split(item)) == NULL)
			continue; /* the implied "node" */
		if ((ret = qn_node_key(qp, &n, item, val)) < 0)
			return ret;
	}
	if (qp->nr_nodes >= LINUX_QEMU_CELLS_MAX)
		return qn_fail(qp, "more than %d -numa node options", LINUX_QEMU_CELLS_MAX);
	n.nr_ranges = (int)qp->nr_ranges - n.first_range;
	util_array_reserve((void **)&qp->nodes, &qp->cap_nodes, qp->nr_nodes + 1,
	                   sizeof(*qp->nodes));
	qp->nodes[qp->nr_nodes++] = n;
	return 0;
}

/* -m [size=]SIZE[,slots=N,maxmem=SIZE]: no suffix is MiB. */
static int
qn_ram_parse(struct qn_parse *qp, const char *arg)
{
	char item[QN_ITEM_MAX];
	const char *p = arg;
	bool first = true;
	int ret = -EINVAL;

	while (p != NULL && *p != '\0') {
		char *val;

		if ((p = qn_item_next(p, item)) == NULL)
			break;
		val = qn_item_split(item);
		if (val != NULL && strcmp(item, "size") == 0)
			ret = linux_qemu_size_parse(val, (uint64_t)1 << 20, &qp->ram_bytes);
		else if (first && val == NULL)
			ret = linux_qemu_size_parse(item, (uint64_t)1 << 20, &qp->ram_bytes);
		first = false;
	}
	qp->has_ram = ret == 0;
	return ret < 0 ? qn_fail(qp, "-m %.40s is not a size", arg) : 0;
}

/* -machine TYPE,...,memory-backend=ID,...: later options win, as QEMU merges them. */
static void
qn_machine_parse(struct qn_parse *qp, const char *arg)
{
	char id[QN_ITEM_MAX];
	size_t n;

	if (!qn_opts_value(arg, "memory-backend", id, sizeof(id)))
		return;
	n = strlen(id);
	qp->machine_memdev_bad = n >= LINUX_QEMU_ID_MAX || n == 0;
	if (qp->machine_memdev_bad)
		n = 0;
	memcpy(qp->machine_memdev, id, n);
	qp->machine_memdev[n] = '\0';
}

/* ---- checking and laying out ------------------------------------------------------------------
 */

/* Give nodes without nodeid= theirs (the count of nodes before them) and check uniqueness. */
static int
qn_nodeids_assign(struct qn_parse *qp)
{
	bool seen[LINUX_QEMU_CELLS_MAX] = {false};

	for (size_t i = 0; i < qp->nr_nodes; i++) {
		struct qn_node *n = &qp->nodes[i];

		if (n->nodeid < 0)
			n->nodeid = (int)i;
		if (seen[n->nodeid])
			return qn_fail(qp, "-numa node: nodeid=%d given twice", n->nodeid);
		seen[n->nodeid] = true;
	}
	return 0;
}

/* The index of the backend named id; -1 (with the error set) unless exactly one usable. */
static int
qn_backend_find(struct qn_parse *qp, const char *id)
{
	int found = -1, count = 0;

	for (size_t i = 0; i < qp->nr_backends; i++) {
		if (strcmp(qp->backends[i].b.id, id) == 0) {
			found = (int)i;
			count++;
		}
	}
	if (count != 1)
		qn_fail(qp, "memdev=%.40s: %s memory-backend-ram/file/memfd object with that id",
		        id, count ? "more than one" : "no");
	else if (!qp->backends[found].size_ok)
		qn_fail(qp, "memdev=%.40s: its size= is missing or not a size", id);
	return count == 1 && qp->backends[found].size_ok ? found : -1;
}

/* Each node's RAM: mem= (0 where absent) or its memdev's size (then on every node). */
static int
qn_sizes_resolve(struct qn_parse *qp)
{
	size_t with_mem = 0, with_memdev = 0;

	for (size_t i = 0; i < qp->nr_nodes; i++) {
		with_mem += qp->nodes[i].has_mem;
		with_memdev += qp->nodes[i].has_memdev;
	}
	if (with_mem > 0 && with_memdev > 0)
		return qn_fail(qp, "-numa node: mem= and memdev= mixed (QEMU refuses this)");
	if (with_memdev > 0 && with_memdev < qp->nr_nodes)
		return qn_fail(qp, "-numa node: memdev= on some nodes only (QEMU refuses this)");
	if (with_mem + with_memdev == 0)
		return qn_fail(qp, "-numa node: no mem= or memdev= (QEMU splits the RAM by "
		                   "machine type; not modelled)");
	for (size_t i = 0; i < qp->nr_nodes && with_memdev > 0; i++) {
		int b = qn_backend_find(qp, qp->nodes[i].memdev);

		if (b < 0)
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (qp->nodes[j].backend == b)
				return qn_fail(
				    qp, "memdev=%.40s: used by two nodes (QEMU refuses this)",
				    qp->nodes[i].memdev);
		qp->nodes[i].backend = b;
		qp->nodes[i].size_bytes = qp->backends[b].b.size_bytes;
	}
	return 0;
}

/* Every node has vCPUs and at least LINUX_QEMU_CELL_MIN_BYTES of RAM. */
static int
qn_nodes_check(struct qn_parse *qp)
{
	bool any_cpus = false;

	if (qp->numa_cpu)
		return qn_fail(qp, "-numa cpu (vCPUs mapped by topology) is not modelled");
	for (size_t i = 0; i < qp->nr_nodes; i++)
		any_cpus |= qp->nodes[i].nr_ranges > 0;
	if (!any_cpus)
		return qn_fail(qp, "-numa node: no cpus= (QEMU assigns the vCPUs by machine "
		                   "topology; not modelled)");
	for (size_t i = 0; i < qp->nr_nodes; i++) {
		const struct qn_node *n = &qp->nodes[i];

		if (n->nr_ranges == 0)
			return qn_fail(qp,
			               "node %d has no vCPUs (a memory-only node: not modelled)",
			               n->nodeid);
		if (n->size_bytes < LINUX_QEMU_CELL_MIN_BYTES)
			return qn_fail(qp, "node %d has less than 1 MiB of RAM (not modelled)",
			               n->nodeid);
	}
	return 0;
}

struct qn_owned_range {
	struct linux_qemu_cpus r;
	int nodeid;
};

static int
qn_owned_cmp(const void *a, const void *b)
{
	const struct qn_owned_range *x = a, *y = b;

	if (x->r.first != y->r.first)
		return x->r.first < y->r.first ? -1 : 1;
	return x->nodeid < y->nodeid ? -1 : x->nodeid > y->nodeid;
}

/* No vCPU in two nodes: sort the ranges by first vCPU and sweep. */
static int
qn_overlap_check(struct qn_parse *qp)
{
	struct qn_owned_range *all = xcalloc(qp->nr_ranges + 1, sizeof(*all));
	size_t nr = 0, reach = 0;
	int ret = 0;

	for (size_t i = 0; i < qp->nr_nodes; i++)
		for (int k = 0; k < qp->nodes[i].nr_ranges; k++)
			all[nr++] = (struct qn_owned_range){
			    qp->ranges[qp->nodes[i].first_range + k], qp->nodes[i].nodeid};
	qsort(all, nr, sizeof(*all), qn_owned_cmp);
	for (size_t i = 1; i < nr && ret == 0; i++) {
		/* all[reach] reaches furthest among all[0..i-1] */
		if (all[i].r.first <= all[reach].r.last && all[i].nodeid != all[reach].nodeid)
			ret = qn_fail(qp, "vCPU %d is in nodes %d and %d", all[i].r.first,
			              all[reach].nodeid, all[i].nodeid);
		if (all[i].r.last > all[reach].r.last)
			reach = i;
	}
	free(all);
	return ret;
}

static int
qn_node_cmp(const void *a, const void *b)
{
	const struct qn_node *x = a, *y = b;

	return x->nodeid < y->nodeid ? -1 : x->nodeid > y->nodeid;
}

/* Move every backend, in command-line order, into out (which then owns their mem-paths). */
static void
qn_backends_hand_over(struct qn_parse *qp, struct linux_qemu_numa *out)
{
	out->backends = xcalloc(qp->nr_backends + 1, sizeof(*out->backends));
	for (size_t i = 0; i < qp->nr_backends; i++) {
		out->backends[i] = qp->backends[i].b;
		qp->backends[i].b.mem_path = NULL;
	}
	out->nr_backends = (int)qp->nr_backends;
}

/* Lay the checked nodes out as cells in nodeid order into out. */
static int
qn_cells_layout(struct qn_parse *qp, struct linux_qemu_numa *out)
{
	uint64_t total = 0;

	qsort(qp->nodes, qp->nr_nodes, sizeof(*qp->nodes), qn_node_cmp);
	out->cells = xcalloc(qp->nr_nodes, sizeof(*out->cells));
	for (size_t i = 0; i < qp->nr_nodes; i++) {
		const struct qn_node *n = &qp->nodes[i];

		if (n->size_bytes > UINT64_MAX - total)
			return qn_fail(qp, "the cells' sizes overflow 64 bits");
		out->cells[i] = (struct linux_qemu_cell){.nodeid = n->nodeid,
		                                         .start_bytes = total,
		                                         .size_bytes = n->size_bytes,
		                                         .first_range = n->first_range,
		                                         .nr_ranges = n->nr_ranges,
		                                         .backend = n->backend};
		total += n->size_bytes;
	}
	if (qp->has_ram && total != qp->ram_bytes)
		return qn_fail(qp, "the cells hold %.1f MiB but -m is %.1f MiB",
		               (double)total / (1 << 20), (double)qp->ram_bytes / (1 << 20));
	out->nr_cells = (int)qp->nr_nodes;
	out->ram_bytes = total;
	out->nr_ranges = (int)qp->nr_ranges;
	out->ranges = xcalloc(qp->nr_ranges, sizeof(*out->ranges));
	memcpy(out->ranges, qp->ranges, qp->nr_ranges * sizeof(*out->ranges));
	return 0;
}

/* The backend whose id is id among out's: its index, or -1 unless exactly one has a size. */
static int
qn_ram_block_named(const struct linux_qemu_numa *out, const char *id)
{
	int found = -1, count = 0;

	for (int i = 0; i < out->nr_backends; i++) {
		if (strcmp(out->backends[i].id, id) == 0) {
			found = i;
			count++;
		}
	}
	return count == 1 && out->backends[found].size_bytes > 0 ? found : -1;
}

/*
 * Without memdev= cells, the backend of QEMU's one RAM block (qemu_numa.h): the one
 * -machine memory-backend= names, or QEMU's own, added last, as QEMU creates it after every
 * -object.  Else -1, and why in out->ram_block_error.
 */
static void
qn_ram_block_set(const struct qn_parse *qp, struct linux_qemu_numa *out)
{
	struct linux_qemu_backend *b;

	out->ram_block = -1;
	if (qp->numa_memdev)
		return; /* the cells' backends hold the RAM (ram_layout.h), if understood */
	if (qp->machine_memdev_bad || qp->machine_memdev[0] != '\0') {
		if ((out->ram_block = qn_ram_block_named(out, qp->machine_memdev)) < 0)
			snprintf(out->ram_block_error, sizeof(out->ram_block_error),
			         "-machine memory-backend=%.40s names no one memory backend with a "
			         "size",
			         qp->machine_memdev);
		return;
	}
	if (!qp->has_ram || qp->ram_bytes == 0 ||
	    qp->ram_bytes > UINT64_MAX - LINUX_QEMU_RAM_ALIGN_BYTES) {
		snprintf(out->ram_block_error, sizeof(out->ram_block_error),
		         "no -m or memory backend matched");
		return;
	}
	out->backends =
	    xreallocarray(out->backends, (size_t)out->nr_backends + 1, sizeof(*out->backends));
	b = &out->backends[out->nr_backends];
	memset(b, 0, sizeof(*b));
	b->kind = qp->mem_path != NULL ? LINUX_QEMU_BACKEND_FILE : LINUX_QEMU_BACKEND_RAM;
	b->size_bytes = (qp->ram_bytes + LINUX_QEMU_RAM_ALIGN_BYTES - 1) /
	                LINUX_QEMU_RAM_ALIGN_BYTES * LINUX_QEMU_RAM_ALIGN_BYTES;
	b->mem_path = qp->mem_path != NULL ? xstrdup(qp->mem_path) : NULL;
	out->ram_block = out->nr_backends++;
}

/* ---- the interface ------------------------------------------------------------------------- */

/*
 * One argument, and its value when it is an option read here: true if the value was taken.
 * Errors land in qp->error.  Other options are skipped one argument at a time, as discovery
 * does (a flag such as -S takes no value; a value never starts with "-numa" or the like).
 */
static bool
qn_option(struct qn_parse *qp, const char *opt, const char *val)
{
	if (opt[0] == '-' && opt[1] == '-')
		opt++;
	if (strcmp(opt, "-numa") == 0)
		qn_numa_parse(qp, val);
	else if (strcmp(opt, "-object") == 0 && val[0] == '{')
		qn_object_json(qp, val);
	else if (strcmp(opt, "-object") == 0)
		qn_object_kv(qp, val);
	else if (strcmp(opt, "-m") == 0)
		qn_ram_parse(qp, val);
	else if (strcmp(opt, "-machine") == 0 || strcmp(opt, "-M") == 0)
		qn_machine_parse(qp, val);
	else if (strcmp(opt, "-mem-path") == 0)
		qp->mem_path = val;
	else
		return false;
	return true;
}

int
linux_qemu_numa_parse(int argc, char *const *argv, struct linux_qemu_numa *out)
{
	struct qn_parse qp;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	memset(&qp, 0, sizeof(qp));
	for (int i = 1; i + 1 < argc; i++)
		if (qn_option(&qp, argv[i], argv[i + 1]))
			i++;
	if (qp.nr_nodes > 0 && qp.error[0] == '\0' && qn_nodeids_assign(&qp) == 0 &&
	    qn_sizes_resolve(&qp) == 0 && qn_nodes_check(&qp) == 0 && qn_overlap_check(&qp) == 0)
		qn_cells_layout(&qp, out);
	if (qp.numa_node && qp.error[0] != '\0') {
		linux_qemu_numa_fail(out, "%s", qp.error);
		ret = -EINVAL;
	}
	qn_backends_hand_over(&qp, out);
	qn_ram_block_set(&qp, out);
	for (size_t i = 0; i < qp.nr_backends; i++)
		free(qp.backends[i].b.mem_path);
	free(qp.nodes);
	free(qp.backends);
	free(qp.ranges);
	return ret;
}

int
linux_qemu_numa_cell_of(const struct linux_qemu_numa *numa, int vcpu)
{
	for (int c = 0; c < numa->nr_cells; c++) {
		const struct linux_qemu_cell *cell = &numa->cells[c];

		for (int k = 0; k < cell->nr_ranges; k++) {
			const struct linux_qemu_cpus *r = &numa->ranges[cell->first_range + k];

			if (vcpu >= r->first && vcpu <= r->last)
				return c;
		}
	}
	return -1;
}

void
linux_qemu_numa_fail(struct linux_qemu_numa *numa, const char *fmt, ...)
{
	va_list ap;

	free(numa->cells);
	free(numa->ranges);
	numa->cells = NULL;
	numa->ranges = NULL;
	numa->nr_cells = numa->nr_ranges = 0;
	numa->ram_bytes = 0;
	numa->layout_error[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(numa->error, sizeof(numa->error), fmt, ap);
	va_end(ap);
}

void
linux_qemu_numa_free(struct linux_qemu_numa *numa)
{
	for (int i = 0; i < numa->nr_backends; i++)
		free(numa->backends[i].mem_path);
	free(numa->backends);
	free(numa->cells);
	free(numa->ranges);
	memset(numa, 0, sizeof(*numa));
}

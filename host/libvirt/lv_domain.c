/*
 * lv_domain.c - a libvirt domain XML into struct lv_domain (see lv_domain.h).
 *
 * Elements are found by walking the tree (libvirt's own elements carry no namespace); where
 * libvirt would take the first of two identical elements, so do we.  Every value is checked
 * and the first bad one is reported with its element and attribute, e.g.
 * "<cputune><vcpupin vcpu='1'> cpuset \"1-x\": expected a number".
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/tree.h>

#include "host/libvirt/lv_domain.h"
#include "host/libvirt/lv_parse.h"
#include "host/libvirt/lv_xml.h"
#include "policy/idlist.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

#define KIB_PER_MIB 1024

/* Parsing state: the document and where messages go. */
struct dom_parse {
	struct lv_domain *dom;
	char *err;
	size_t errlen;
	bool memory_given; /* <memory> was present */
};

/* ---- tree access -------------------------------------------------------------------------- */

/* The first child element of parent called name (no namespace), or NULL. */
static const xmlNode *
xml_child(const xmlNode *parent, const char *name)
{
	for (const xmlNode *c = parent ? parent->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && c->ns == NULL &&
		    strcmp((const char *)c->name, name) == 0)
			return c;
	return NULL;
}

/* The next sibling element after n with n's name, or NULL. */
static const xmlNode *
xml_next(const xmlNode *n)
{
	for (const xmlNode *c = n->next; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && c->ns == NULL &&
		    strcmp((const char *)c->name, (const char *)n->name) == 0)
			return c;
	return NULL;
}

/* An attribute's value (free with xmlFree), or NULL when absent. */
static char *
xml_attr(const xmlNode *n, const char *name)
{
	return (char *)xmlGetNoNsProp(n, (const xmlChar *)name);
}

/* ---- values ------------------------------------------------------------------------------- */

/* A size from value (element text or attribute) and the unit attribute of n, into *kib. */
static int
parse_size(struct dom_parse *p, const xmlNode *n, const char *value, const char *what,
           uint64_t *kib)
{
	char *unit = xml_attr(n, "unit");
	char q[LV_QUOTE_BUFLEN];
	const char *why;
	int ret;

	if ((ret = lv_parse_size_kib(value, unit, kib, &why)) < 0) {
		uint64_t ignored;

		/* Blame the unit when it is the unit that is wrong. */
		if (lv_parse_size_kib("0", unit, &ignored, &why) < 0)
			util_errf(p->err, p->errlen, "%s unit \"%s\" %s", what,
			          lv_quote(unit, q, sizeof(q)), why);
		else
			util_errf(p->err, p->errlen, "%s \"%s\" %s", what,
			          lv_quote(value, q, sizeof(q)), why);
	}
	xmlFree(unit);
	return ret;
}

/* A cpuset/nodeset attribute of n into *set, below limit (policy/idlist.h); empty sets refused. */
static int
parse_set(struct dom_parse *p, const xmlNode *n, const char *attr, int limit, const char *what,
          struct lv_idset *set)
{
	char *text = xml_attr(n, attr);
	char q[LV_QUOTE_BUFLEN], why[IDLIST_ERR_MAX] = "is missing";
	unsigned flags = strcmp(attr, "nodeset") == 0 ? 0 : IDLIST_CPUS;
	int ret = -EINVAL;

	if (text != NULL)
		ret = lv_cpuset_parse(text, limit, flags, set, why, sizeof(why));
	if (ret < 0)
		util_errf(p->err, p->errlen, "%s %s \"%s\": %s", what, attr,
		          lv_quote(text, q, sizeof(q)), why);
	xmlFree(text);
	return ret;
}

/* An unsigned attribute of n below limit; absent: *v = def when def >= 0, else an error. */
static int
parse_uint_attr(struct dom_parse *p, const xmlNode *n, const char *attr, int limit, int def,
                const char *what, int *v)
{
	char *text = xml_attr(n, attr);
	char q[LV_QUOTE_BUFLEN];
	const char *why = "is missing";
	uint64_t u;
	int ret = 0;

	if (text == NULL && def >= 0) {
		*v = def;
		return 0;
	}
	if (text == NULL || lv_parse_u64(text, (uint64_t)limit - 1, &u, &why) < 0) {
		util_errf(p->err, p->errlen, "%s %s \"%s\" %s", what, attr,
		          lv_quote(text, q, sizeof(q)), why);
		ret = -EINVAL;
	} else {
		*v = (int)u;
	}
	xmlFree(text);
	return ret;
}

static int
parse_mem_mode(struct dom_parse *p, const xmlNode *n, const char *what, enum lv_mem_mode *mode)
{
	static const enum lv_mem_mode modes[] = {LV_MEM_MODE_STRICT, LV_MEM_MODE_PREFERRED,
	                                         LV_MEM_MODE_INTERLEAVE, LV_MEM_MODE_RESTRICTIVE};
	char *text = xml_attr(n, "mode");
	char q[LV_QUOTE_BUFLEN];
	int ret = -EINVAL;

	*mode = LV_MEM_MODE_STRICT;
	if (text == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(text, lv_mem_mode_name(modes[i])) == 0) {
			*mode = modes[i];
			ret = 0;
		}
	}
	if (ret < 0)
		util_errf(p->err, p->errlen,
		          "%s mode \"%s\" is not strict, preferred, interleave or restrictive",
		          what, lv_quote(text, q, sizeof(q)));
	xmlFree(text);
	return ret;
}

/* ---- sections ----------------------------------------------------------------------------- */

/* 32 hex digits, '-' allowed between them, into the canonical lowercase form. */
static int
parse_uuid(const char *text, char out[LV_UUID_STRING_LEN])
{
	int nd = 0, o = 0;

	for (const char *s = text; *s != '\0'; s++) {
		if (isspace((unsigned char)*s) || (*s == '-' && nd > 0 && nd < 32))
			continue;
		if (!isxdigit((unsigned char)*s) || nd == 32)
			return -EINVAL;
		if (nd == 8 || nd == 12 || nd == 16 || nd == 20)
			out[o++] = '-';
		out[o++] = (char)tolower((unsigned char)*s);
		nd++;
	}
	out[o] = '\0';
	return nd == 32 ? 0 : -EINVAL;
}

static int
parse_identity(struct dom_parse *p, const xmlNode *root)
{
	const xmlNode *n = xml_child(root, "name");
	char *text = n ? (char *)xmlNodeGetContent(n) : NULL;
	char q[LV_QUOTE_BUFLEN];
	int ret = 0;

	if (text == NULL || text[0] == '\0') {
		util_errf(p->err, p->errlen, "<name> is missing or empty");
		ret = -EINVAL;
		goto out;
	}
	p->dom->name = xstrdup(text);
	xmlFree(text);
	text = NULL;
	if ((n = xml_child(root, "uuid")) != NULL) {
		text = (char *)xmlNodeGetContent(n);
		if (text == NULL || parse_uuid(text, p->dom->uuid) < 0) {
			util_errf(p->err, p->errlen, "<uuid> \"%s\" is not a UUID",
			          lv_quote(text, q, sizeof(q)));
			ret = -EINVAL;
			goto out;
		}
	}
	if (xmlHasProp(root, (const xmlChar *)"id") != NULL)
		ret = parse_uint_attr(p, root, "id", INT_MAX, -1, "<domain>", &p->dom->id);
out:
	xmlFree(text);
	return ret;
}

/* <memory>, <currentMemory>, <memoryBacking><hugepages>. */
static int
parse_memory(struct dom_parse *p, const xmlNode *root)
{
	static const char *const names[] = {"memory", "currentMemory"};
	uint64_t kib[2] = {0, 0};
	bool given[2] = {false, false};

	for (int i = 0; i < 2; i++) {
		const xmlNode *n = xml_child(root, names[i]);
		char *text, what[32];
		int ret;

		if (n == NULL)
			continue;
		snprintf(what, sizeof(what), "<%s>", names[i]);
		text = (char *)xmlNodeGetContent(n);
		ret = parse_size(p, n, text ? text : "", what, &kib[i]);
		xmlFree(text);
		if (ret < 0)
			return ret;
		given[i] = true;
	}
	p->memory_given = given[0];
	p->dom->memory_mib = (kib[0] + KIB_PER_MIB - 1) / KIB_PER_MIB;
	p->dom->current_memory_mib = (kib[1] + KIB_PER_MIB - 1) / KIB_PER_MIB;
	p->dom->hugepages = xml_child(xml_child(root, "memoryBacking"), "hugepages") != NULL;
	return 0;
}

/* <vcpu current='N' cpuset='...'>M</vcpu>; libvirt's default is one vCPU. */
static int
parse_vcpu(struct dom_parse *p, const xmlNode *root)
{
	const xmlNode *n = xml_child(root, "vcpu");
	char *text = NULL, q[LV_QUOTE_BUFLEN];
	const char *why = "must be at least 1";
	uint64_t max = 0;
	int ret = 0;

	p->dom->max_vcpus = p->dom->nr_vcpus = 1;
	if (n == NULL)
		return 0;
	text = (char *)xmlNodeGetContent(n);
	if (lv_parse_u64(text, LV_MAX_VCPUS - 1, &max, &why) < 0 || max == 0) {
		util_errf(p->err, p->errlen, "<vcpu> \"%s\" %s", lv_quote(text, q, sizeof(q)), why);
		ret = -EINVAL;
		goto out;
	}
	p->dom->max_vcpus = (int)max;
	ret = parse_uint_attr(p, n, "current", (int)max + 1, (int)max, "<vcpu>", &p->dom->nr_vcpus);
	if (ret == 0 && p->dom->nr_vcpus == 0) {
		util_errf(p->err, p->errlen, "<vcpu> current \"0\": must be at least 1");
		ret = -EINVAL;
	}
	if (ret == 0 && xmlHasProp(n, (const xmlChar *)"cpuset") != NULL)
		ret = parse_set(p, n, "cpuset", LV_MAX_CPUS, "<vcpu>", &p->dom->vcpu_cpuset);
out:
	xmlFree(text);
	return ret;
}

/* One <cell>: id (default: its position), cpus (optional), memory and unit. */
static int
parse_cell(struct dom_parse *p, const xmlNode *n, int pos, int nr_cells)
{
	struct lv_cell *cell;
	char what[64], *mem;
	int id, ret;

	snprintf(what, sizeof(what), "<cpu><numa><cell> #%d", pos);
	if ((ret = parse_uint_attr(p, n, "id", nr_cells, pos, what, &id)) < 0)
		return ret;
	cell = &p->dom->cells[id];
	if (cell->id >= 0) {
		util_errf(p->err, p->errlen, "<cpu><numa>: two cells with id %d", id);
		return -EINVAL;
	}
	cell->id = id;
	snprintf(what, sizeof(what), "<cpu><numa><cell id='%d'>", id);
	if (xmlHasProp(n, (const xmlChar *)"cpus") != NULL &&
	    (ret = parse_set(p, n, "cpus", LV_MAX_VCPUS, what, &cell->vcpus)) < 0)
		return ret;
	if ((mem = xml_attr(n, "memory")) == NULL) {
		util_errf(p->err, p->errlen, "%s memory is missing", what);
		return -EINVAL;
	}
	strncat(what, " memory", sizeof(what) - strlen(what) - 1);
	ret = parse_size(p, n, mem, what, &cell->memory_kib);
	xmlFree(mem);
	cell->memory_mib = (cell->memory_kib + KIB_PER_MIB - 1) / KIB_PER_MIB;
	return ret;
}

/* Every vCPU below max_vcpus in exactly one cell, and no cell naming another vCPU. */
static int
check_cells_cover(struct dom_parse *p)
{
	const struct lv_domain *d = p->dom;
	int *owner = xcalloc((size_t)d->max_vcpus, sizeof(int));
	int ret = -EINVAL;

	for (int c = 0; c < d->nr_cells; c++) {
		for (int i = 0; i < d->cells[c].vcpus.nr; i++) {
			int v = d->cells[c].vcpus.ids[i];

			if (v >= d->max_vcpus) {
				util_errf(
				    p->err, p->errlen,
				    "<cpu><numa><cell id='%d'> names vCPU %d but <vcpu> is %d", c,
				    v, d->max_vcpus);
				goto out;
			}
			if (owner[v] != 0) {
				util_errf(p->err, p->errlen,
				          "<cpu><numa>: vCPU %d is in cells %d and %d", v,
				          owner[v] - 1, c);
				goto out;
			}
			owner[v] = c + 1;
		}
	}
	for (int v = 0; v < d->max_vcpus; v++) {
		if (owner[v] == 0) {
			util_errf(p->err, p->errlen, "<cpu><numa>: vCPU %d is in no cell", v);
			goto out;
		}
	}
	ret = 0;
out:
	free(owner);
	return ret;
}

/* <cpu><numa><cell>...: cells indexed by id, their RAM offsets, and vCPU coverage. */
static int
parse_cells(struct dom_parse *p, const xmlNode *root)
{
	const xmlNode *numa = xml_child(xml_child(root, "cpu"), "numa");
	const xmlNode *first = xml_child(numa, "cell");
	struct lv_domain *d = p->dom;
	uint64_t start_mib = 0;
	int nr = 0, pos = 0, ret;

	for (const xmlNode *n = first; n; n = xml_next(n))
		nr++;
	if (nr == 0)
		return 0;
	if (nr > LV_MAX_VCPUS) {
		util_errf(p->err, p->errlen, "<cpu><numa> has %d cells; the limit is %d", nr,
		          LV_MAX_VCPUS);
		return -EINVAL;
	}
	d->cells = xcalloc((size_t)nr, sizeof(*d->cells));
	d->nr_cells = nr;
	for (int i = 0; i < nr; i++)
		d->cells[i].id = -1;
	for (const xmlNode *n = first; n; n = xml_next(n))
		if ((ret = parse_cell(p, n, pos++, nr)) < 0)
			return ret;
	for (int i = 0; i < nr; i++) {
		d->cells[i].start_mib = start_mib;
		start_mib += d->cells[i].memory_mib;
	}
	if (!p->memory_given)
		d->memory_mib = start_mib;
	return check_cells_cover(p);
}

/* <cputune><vcpupin vcpu cpuset>... and <emulatorpin cpuset>. */
static int
parse_cputune(struct dom_parse *p, const xmlNode *root)
{
	const xmlNode *tune = xml_child(root, "cputune");
	struct lv_domain *d = p->dom;
	char what[64];
	int vcpu, ret;

	d->vcpupins = xcalloc((size_t)d->max_vcpus, sizeof(*d->vcpupins));
	for (const xmlNode *n = xml_child(tune, "vcpupin"); n; n = xml_next(n)) {
		char limit_why[80];

		snprintf(limit_why, sizeof(limit_why), "<cputune><vcpupin> (domain has %d vCPUs)",
		         d->max_vcpus);
		if ((ret = parse_uint_attr(p, n, "vcpu", d->max_vcpus, -1, limit_why, &vcpu)) < 0)
			return ret;
		snprintf(what, sizeof(what), "<cputune><vcpupin vcpu='%d'>", vcpu);
		if (d->vcpupins[vcpu].nr > 0) {
			util_errf(p->err, p->errlen, "%s appears twice", what);
			return -EINVAL;
		}
		if ((ret = parse_set(p, n, "cpuset", LV_MAX_CPUS, what, &d->vcpupins[vcpu])) < 0)
			return ret;
		d->nr_vcpupins++;
	}
	if ((tune = xml_child(tune, "emulatorpin")) != NULL)
		return parse_set(p, tune, "cpuset", LV_MAX_CPUS, "<cputune><emulatorpin>",
		                 &d->emulatorpin);
	return 0;
}

/* <numatune><memory mode nodeset placement>. */
static int
parse_numatune_memory(struct dom_parse *p, const xmlNode *n)
{
	struct lv_domain *d = p->dom;
	char *placement = xml_attr(n, "placement");
	char q[LV_QUOTE_BUFLEN];
	int ret;

	d->numatune = true;
	if ((ret = parse_mem_mode(p, n, "<numatune><memory>", &d->numatune_mode)) < 0)
		goto out;
	if (placement != NULL && strcmp(placement, "auto") == 0) {
		d->numatune_auto = true;
	} else if (placement != NULL && strcmp(placement, "static") != 0) {
		util_errf(p->err, p->errlen,
		          "<numatune><memory> placement \"%s\" is not static or auto",
		          lv_quote(placement, q, sizeof(q)));
		ret = -EINVAL;
	} else if (xmlHasProp(n, (const xmlChar *)"nodeset") == NULL && placement == NULL) {
		d->numatune_auto = true; /* libvirt: no nodeset and no placement means auto */
	} else {
		ret = parse_set(p, n, "nodeset", LV_MAX_NODES, "<numatune><memory>",
		                &d->numatune_nodes);
	}
out:
	xmlFree(placement);
	return ret;
}

/* One <memnode cellid mode nodeset> into byid[cellid] (one slot per guest cell). */
static int
parse_memnode(struct dom_parse *p, const xmlNode *n, struct lv_memnode *byid)
{
	char what[80];
	int cellid, ret;

	snprintf(what, sizeof(what), "<numatune><memnode> (domain has %d cells)", p->dom->nr_cells);
	if ((ret = parse_uint_attr(p, n, "cellid", p->dom->nr_cells, -1, what, &cellid)) < 0)
		return ret;
	snprintf(what, sizeof(what), "<numatune><memnode cellid='%d'>", cellid);
	if (byid[cellid].nodes.nr > 0) {
		util_errf(p->err, p->errlen, "%s appears twice", what);
		return -EINVAL;
	}
	byid[cellid].cellid = cellid;
	if ((ret = parse_mem_mode(p, n, what, &byid[cellid].mode)) < 0)
		return ret;
	return parse_set(p, n, "nodeset", LV_MAX_NODES, what, &byid[cellid].nodes);
}

/* <numatune><memory> and <memnode>... (kept in ascending cellid). */
static int
parse_numatune(struct dom_parse *p, const xmlNode *root)
{
	const xmlNode *tune = xml_child(root, "numatune");
	struct lv_domain *d = p->dom;
	struct lv_memnode *byid;
	int ret = 0;

	if (xml_child(tune, "memory") != NULL &&
	    (ret = parse_numatune_memory(p, xml_child(tune, "memory"))) < 0)
		return ret;
	if (xml_child(tune, "memnode") == NULL)
		return 0;
	if (d->nr_cells == 0) {
		util_errf(p->err, p->errlen,
		          "<numatune><memnode> needs guest NUMA cells (<cpu><numa>)");
		return -EINVAL;
	}
	byid = xcalloc((size_t)d->nr_cells, sizeof(*byid));
	for (const xmlNode *n = xml_child(tune, "memnode"); n && ret == 0; n = xml_next(n))
		ret = parse_memnode(p, n, byid);
	if (ret == 0)
		d->memnodes = xcalloc((size_t)d->nr_cells, sizeof(*d->memnodes));
	for (int c = 0; c < d->nr_cells; c++) {
		if (ret == 0 && byid[c].nodes.nr > 0)
			d->memnodes[d->nr_memnodes++] = byid[c]; /* moves the node set */
		else
			lv_idset_free(&byid[c].nodes);
	}
	free(byid);
	return ret;
}

/* The first child of <metadata> in our namespace, as a standalone element. */
static int
parse_metadata(struct dom_parse *p, const xmlNode *root)
{
	const xmlNode *md = xml_child(root, "metadata");

	for (const xmlNode *c = md ? md->children : NULL; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE || c->ns == NULL || c->ns->href == NULL ||
		    strcmp((const char *)c->ns->href, VM_POLICY_NS) != 0)
			continue;
		p->dom->metadata_xml = lv_xml_dump_element(c);
		if (p->dom->metadata_xml == NULL) {
			util_errf(p->err, p->errlen, "<metadata>: cannot serialise <%s>",
			          (const char *)c->name);
			return -EINVAL;
		}
		return 0;
	}
	return 0;
}

/* ---- entry points ------------------------------------------------------------------------- */

static int
parse_root(struct dom_parse *p, const xmlNode *root)
{
	int ret;

	if (root->ns != NULL || strcmp((const char *)root->name, "domain") != 0) {
		util_errf(p->err, p->errlen, "the root element is <%s>, not <domain>",
		          (const char *)root->name);
		return -EINVAL;
	}
	if ((ret = parse_identity(p, root)) < 0 || (ret = parse_memory(p, root)) < 0 ||
	    (ret = parse_vcpu(p, root)) < 0 || (ret = parse_cells(p, root)) < 0 ||
	    (ret = parse_cputune(p, root)) < 0 || (ret = parse_numatune(p, root)) < 0 ||
	    (ret = parse_metadata(p, root)) < 0)
		return ret;
	if (!p->memory_given && p->dom->nr_cells == 0) {
		util_errf(p->err, p->errlen, "<memory> is missing (and there are no NUMA cells)");
		return -EINVAL;
	}
	if (xml_child(root, "currentMemory") == NULL ||
	    p->dom->current_memory_mib > p->dom->memory_mib)
		p->dom->current_memory_mib = p->dom->memory_mib;
	return 0;
}

int
lv_domain_parse(const char *xml, size_t len, struct lv_domain *out, char *err, size_t errlen)
{
	struct dom_parse p = {.dom = out, .err = err, .errlen = errlen};
	xmlDoc *doc;
	int ret;

	memset(out, 0, sizeof(*out));
	out->id = -1;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (len > LV_DOMAIN_XML_MAX_BYTES) {
		util_errf(err, errlen, "domain XML is %zu bytes; the limit is %d", len,
		          LV_DOMAIN_XML_MAX_BYTES);
		return -EINVAL;
	}
	if ((doc = lv_xml_read(xml, len, "domain XML", err, errlen)) == NULL)
		return -EINVAL;
	ret = parse_root(&p, xmlDocGetRootElement(doc));
	xmlFreeDoc(doc);
	if (ret < 0)
		lv_domain_free(out);
	return ret;
}

void
lv_domain_free(struct lv_domain *dom)
{
	free(dom->name);
	lv_idset_free(&dom->vcpu_cpuset);
	for (int i = 0; i < dom->nr_cells; i++)
		lv_idset_free(&dom->cells[i].vcpus);
	free(dom->cells);
	for (int i = 0; dom->vcpupins != NULL && i < dom->max_vcpus; i++)
		lv_idset_free(&dom->vcpupins[i]);
	free(dom->vcpupins);
	lv_idset_free(&dom->emulatorpin);
	lv_idset_free(&dom->numatune_nodes);
	for (int i = 0; i < dom->nr_memnodes; i++)
		lv_idset_free(&dom->memnodes[i].nodes);
	free(dom->memnodes);
	free(dom->metadata_xml);
	memset(dom, 0, sizeof(*dom));
	dom->id = -1;
}

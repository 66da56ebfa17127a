/*
 * lv_metadata.c - libxml2 plumbing for host/libvirt/: the quiet reader, element
 * serialisation, and the two namespace spellings of vnumad's policy element that libvirt's
 * metadata API needs (see lv_metadata_qualify() in lv_domain.h).
 *
 * The rewrites build a fresh tree instead of editing namespace pointers in place: libxml2's
 * namespace declarations are shared by pointer, and unlinking one still in use would leave
 * dangling references.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "host/libvirt/lv_domain.h"
#include "host/libvirt/lv_parse.h"
#include "host/libvirt/lv_xml.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

/* The prefix libvirt gives our namespace (the "key" of virDomainSetMetadata). */
#define LV_METADATA_PREFIX "vnuma"
/* Largest policy element we rewrite, bytes (vm_policy.c accepts 64 KiB; same bound). */
#define LV_METADATA_MAX_BYTES (64 * 1024)

/* ---- reading ------------------------------------------------------------------------------ */

/* The first error libxml2 reported during one parse (warnings ignored). */
struct lv_xml_errors {
	bool have;
	int line;
	char msg[LV_QUOTE_BUFLEN];
};

#if LIBXML_VERSION >= 21200
typedef const xmlError lv_xml_error_t;
#else
typedef xmlError lv_xml_error_t;
#endif

static void
xml_error_capture(void *data, lv_xml_error_t *e)
{
	struct lv_xml_errors *cap = data;
	char first[LV_QUOTE_CHARS + 1];
	size_t n;

	if (cap->have || e == NULL || e->level < XML_ERR_ERROR)
		return;
	cap->have = true;
	cap->line = e->line;
	n = strcspn(e->message ? e->message : "", "\n");
	if (n >= sizeof(first))
		n = sizeof(first) - 1;
	memcpy(first, e->message ? e->message : "", n);
	first[n] = '\0';
	lv_quote(first, cap->msg, sizeof(cap->msg));
}

xmlDoc *
lv_xml_read(const char *xml, size_t len, const char *what, char *err, size_t errlen)
{
	struct lv_xml_errors cap = {0};
	xmlStructuredErrorFunc old_func;
	void *old_ctx;
	xmlDoc *doc;

	if (xml == NULL || len == 0) {
		util_errf(err, errlen, "%s is empty", what);
		return NULL;
	}
	if (len > INT32_MAX) {
		util_errf(err, errlen, "%s is too large (%zu bytes)", what, len);
		return NULL;
	}
	xmlInitParser();
	old_func = xmlStructuredError;
	old_ctx = xmlStructuredErrorContext;
	xmlSetStructuredErrorFunc(&cap, xml_error_capture);
	doc = xmlReadMemory(xml, (int)len, NULL, NULL,
	                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	xmlSetStructuredErrorFunc(old_ctx, old_func);
	xmlResetLastError();
	if (doc == NULL || cap.have) {
		util_errf(err, errlen, "%s is not well-formed XML (line %d: %s)", what, cap.line,
		          cap.have ? cap.msg : "unknown error");
		goto fail;
	}
	if (doc->intSubset != NULL || doc->extSubset != NULL) {
		util_errf(err, errlen, "%s has a DOCTYPE declaration; none is allowed", what);
		goto fail;
	}
	if (xmlDocGetRootElement(doc) == NULL) {
		util_errf(err, errlen, "%s has no element", what);
		goto fail;
	}
	return doc;
fail:
	xmlFreeDoc(doc);
	return NULL;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Serialise doc's root element (no XML declaration) into a malloc'd string. */
static char *
dump_root(xmlDoc *doc)
{
	xmlBuffer *buf = xmlBufferCreate();
	char *s;

	if (buf == NULL || xmlNodeDump(buf, doc, xmlDocGetRootElement(doc), 0, 0) < 0) {
		xmlBufferFree(buf);
		return NULL;
	}
	s = xstrdup((const char *)xmlBufferContent(buf));
	xmlBufferFree(buf);
	return s;
}

char *
lv_xml_dump_element(const xmlNode *node)
{
	xmlDoc *doc = xmlNewDoc((const xmlChar *)"1.0");
	xmlNode *copy;
	char *s = NULL;

	if (doc == NULL)
		return NULL;
	/* Copying into a fresh document re-declares namespaces inherited from ancestors. */
	copy = xmlDocCopyNode((xmlNode *)node, doc, 1);
	if (copy != NULL) {
		xmlDocSetRootElement(doc, copy);
		s = dump_root(doc);
	}
	xmlFreeDoc(doc);
	return s;
}

/* ---- namespace rewrites ------------------------------------------------------------------- */

static bool
ns_is_ours(const xmlNs *ns)
{
	return ns != NULL && ns->href != NULL && strcmp((const char *)ns->href, VM_POLICY_NS) == 0;
}

/* An element we rewrite: ours, or (qualify only) without a namespace. */
static bool
elem_is_ours(const xmlNode *n, bool qualify)
{
	return ns_is_ours(n->ns) || (qualify && n->ns == NULL);
}

/*
 * Copy src (one of our elements) under a new node in doc, with namespace ns (NULL: none);
 * our child elements recursively, everything else as a deep copy.  -EINVAL (message in err)
 * for an attribute in our namespace when unqualifying.
 */
static int
rewrite_elem(const xmlNode *src, xmlDoc *doc, xmlNode *parent, xmlNs **ns, bool qualify, char *err,
             size_t errlen)
{
	xmlNode *dst = xmlNewDocNode(doc, NULL, src->name, NULL);
	int ret = 0;

	if (dst == NULL)
		abort(); /* out of memory: as xmalloc does */

	if (parent == NULL) {
		xmlDocSetRootElement(doc, dst);
		if (qualify)
			*ns = xmlNewNs(dst, (const xmlChar *)VM_POLICY_NS,
			               (const xmlChar *)LV_METADATA_PREFIX);
	} else {
		xmlAddChild(parent, dst);
	}
	xmlSetNs(dst, qualify ? *ns : NULL);
	for (const xmlAttr *a = src->properties; a != NULL; a = a->next) {
		if (!qualify && ns_is_ours(a->ns)) {
			util_errf(err, errlen,
			          "attribute %s:%s is in the policy namespace; policy "
			          "attributes take no prefix",
			          a->ns->prefix ? (const char *)a->ns->prefix : "", a->name);
			return -EINVAL;
		}
	}
	if (src->properties != NULL)
		dst->properties = xmlCopyPropList(dst, src->properties);
	for (const xmlNode *c = src->children; c != NULL && ret == 0; c = c->next) {
		if (c->type == XML_ELEMENT_NODE && elem_is_ours(c, qualify))
			ret = rewrite_elem(c, doc, dst, ns, qualify, err, errlen);
		else
			xmlAddChild(dst, xmlDocCopyNode((xmlNode *)c, doc, 1));
	}
	return ret;
}

/* Parse xml, rewrite its root (which must be ours) and serialise the result. */
static char *
metadata_rewrite(const char *xml, bool qualify, char *err, size_t errlen)
{
	xmlDoc *in = NULL, *out = NULL;
	const xmlNode *root;
	xmlNs *ns = NULL;
	char *s = NULL;
	size_t len = xml ? strlen(xml) : 0;

	if (len > LV_METADATA_MAX_BYTES) {
		util_errf(err, errlen, "policy XML is %zu bytes; the limit is %d", len,
		          LV_METADATA_MAX_BYTES);
		return NULL;
	}
	if ((in = lv_xml_read(xml, len, "policy XML", err, errlen)) == NULL)
		return NULL;
	root = xmlDocGetRootElement(in);
	if (!elem_is_ours(root, true)) {
		util_errf(err, errlen, "<%s> is in namespace %s, not %s", (const char *)root->name,
		          (const char *)root->ns->href, VM_POLICY_NS);
		goto out;
	}
	out = xmlNewDoc((const xmlChar *)"1.0");
	if (rewrite_elem(root, out, NULL, &ns, qualify, err, errlen) < 0)
		goto out;
	if ((s = dump_root(out)) == NULL)
		util_errf(err, errlen, "cannot serialise the policy element");
out:
	xmlFreeDoc(out);
	xmlFreeDoc(in);
	return s;
}

char *
lv_metadata_unqualify(const char *xml, char *err, size_t errlen)
{
	return metadata_rewrite(xml, false, err, errlen);
}

char *
lv_metadata_qualify(const char *xml, char *err, size_t errlen)
{
	return metadata_rewrite(xml, true, err, errlen);
}

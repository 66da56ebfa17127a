/*
 * vm_policy.c - the per-VM policy element (BRIEF section 4.4): parse and format.
 *
 * This is the only file in policy/ that uses libxml2.  Parsing never touches the network, never
 * loads a DTD and never prints: libxml2's errors are captured through a structured error handler
 * installed for the duration of one parse (libxml2 keeps that handler per thread) and the
 * previous handler is put back before returning, so no libxml2 state outlives the call.
 *
 * Values are checked strictly and the first bad attribute is reported by name; on any error the
 * caller's policy is left at the defaults.
 */
#include "policy/vm_policy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "policy/idlist.h"
#include "policy/units.h"
#include "policy/util.h"

/*
 * Largest policy document accepted, in bytes.  A real element is under 300 bytes; 64 KiB leaves
 * room for comments and indentation while bounding the parser's work on hostile input.
 */
#define VM_POLICY_XML_MAX_BYTES (64 * 1024)

/*
 * Largest rate accepted, in KiB/s: the most whose value in bytes/s still fits a uint64_t, so a
 * consumer converting to bytes cannot overflow.  (It is about 16 EiB/s: no real limit.)
 */
#define VM_POLICY_RATE_MAX_KIB_S (UINT64_MAX / 1024)

/* Characters of an offending value quoted in an error message before it is cut with "...". */
#define VM_POLICY_ERR_VALUE_CHARS 40
/* Room for the end of an attribute's message (a node list's names the item at fault). */
#define VM_POLICY_WHY_MAX (IDLIST_ERR_MAX + 64)

#define KIB_PER_MIB 1024u
#define KIB_PER_GIB (1024u * 1024u)

/* ---- error messages ------------------------------------------------------------------------ */

/* Cut a string back to a UTF-8 character boundary so that truncation never splits a character. */
static void
utf8_trim_partial(char *s)
{
	size_t n = strlen(s);
	size_t i = n;

	/* Step back over continuation bytes to the lead byte of the last character. */
	while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;

	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

static void err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Write a message to err (if any), always NUL-terminated, truncated on a character boundary. */
static void
err_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n < 0)
		err[0] = '\0';
	else if ((size_t)n >= errlen)
		utf8_trim_partial(err);
}

/*
 * Copy at most max_chars characters of s into buf for quoting in a message: control characters,
 * quotes and backslashes are escaped, a longer value ends in "...".  Returns buf.
 */
static char *
err_quote(const char *s, size_t max_chars, char *buf, size_t len)
{
	size_t off = 0, chars = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char tmp[8];
		size_t n;

		if ((*p & 0xc0) != 0x80 && chars++ == max_chars) {
			snprintf(tmp, sizeof(tmp), "...");
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", *p);
		} else if (*p == '"' || *p == '\\') {
			snprintf(tmp, sizeof(tmp), "\\%c", *p);
		} else {
			tmp[0] = (char)*p;
			tmp[1] = '\0';
		}
		n = strlen(tmp);
		if (off + n >= len)
			break;
		memcpy(buf + off, tmp, n);
		off += n;
		if (chars > max_chars)
			break;
	}
	buf[off] = '\0';
	utf8_trim_partial(buf);
	return buf;
}

/* ---- attribute values ---------------------------------------------------------------------- */

static const char *const mode_names[] = {
    [VM_POLICY_MODE_AUTO] = "auto",
    [VM_POLICY_MODE_ADVISORY] = "advisory",
    [VM_POLICY_MODE_MANUAL] = "manual",
    [VM_POLICY_MODE_OFF] = "off",
};

static const char *const placement_names[] = {
    [VM_POLICY_PLACEMENT_COMPACT] = "compact",
    [VM_POLICY_PLACEMENT_CELLS] = "cells",
};

const char *
vm_policy_mode_name(enum vm_policy_mode mode)
{
	if ((unsigned)mode >= sizeof(mode_names) / sizeof(mode_names[0]))
		return "unknown";
	return mode_names[mode];
}

const char *
vm_policy_placement_name(enum vm_policy_placement placement)
{
	if ((unsigned)placement >= sizeof(placement_names) / sizeof(placement_names[0]))
		return "unknown";
	return placement_names[placement];
}

/* Each value parser returns 0, or -EINVAL with the end of the message in why. */

static int
attr_mode(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (strcmp(v, mode_names[i]) == 0) {
			pol->mode = (enum vm_policy_mode)i;
			return 0;
		}
	}
	util_errf(why, whylen, "%s", "is not a mode (use auto, advisory, manual or off)");
	return -EINVAL;
}

static int
attr_nodes(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	uint64_t mask = 0;

	char msg[IDLIST_ERR_MAX];

	if (nodemask_parse(v, 0, &mask, msg, sizeof(msg)) < 0) {
		util_errf(why, whylen, "is not a node list (%s; use e.g. 0-1,3)", msg);
		return -EINVAL;
	}
	pol->nodes = mask;
	return 0;
}

static int
attr_placement(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	for (size_t i = 0; i < sizeof(placement_names) / sizeof(placement_names[0]); i++) {
		if (strcmp(v, placement_names[i]) == 0) {
			pol->placement = (enum vm_policy_placement)i;
			return 0;
		}
	}
	util_errf(why, whylen, "%s", "is not a placement (use compact or cells)");
	return -EINVAL;
}

static int
attr_migrate(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	if (strcmp(v, "yes") == 0 || strcmp(v, "no") == 0) {
		pol->migrate = v[0] == 'y';
		return 0;
	}
	util_errf(why, whylen, "%s", "is not yes or no");
	return -EINVAL;
}

/*
 * A rate in the grammar of policy/units.h, rounded to the nearest KiB/s (halves up); it must
 * come to at least VM_POLICY_RATE_MIN_KIB_S.
 */
static int
attr_rate(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	char msg[UNITS_ERR_MAX];
	uint64_t bytes_s, kib;

	if (units_rate_parse(v, &bytes_s, msg, sizeof(msg)) < 0) {
		util_errf(why, whylen, "is not a rate: %s", msg);
		return -EINVAL;
	}
	kib = bytes_s / UNITS_KIB + (bytes_s % UNITS_KIB >= UNITS_KIB / 2);
	if (kib > VM_POLICY_RATE_MAX_KIB_S) {
		util_errf(why, whylen, "is too large (the most is %llu KiB/s)",
		          (unsigned long long)VM_POLICY_RATE_MAX_KIB_S);
		return -EINVAL;
	}
	if (kib < VM_POLICY_RATE_MIN_KIB_S) {
		util_errf(
		    why, whylen, "%s",
		    "is below 2MiB/s, the least that moves memory (in 2 MiB pages); leave rate "
		    "out for no per-VM cap");
		return -EINVAL;
	}
	pol->rate_kib_s = kib;
	return 0;
}

static int
attr_priority(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	int prio = 0;

	util_errf(why, whylen, "%s", "is not an integer from 0 to 100");
	if (*v == '\0')
		return -EINVAL;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		prio = prio * 10 + (*p - '0');
		if (prio > VM_POLICY_PRIORITY_MAX)
			return -EINVAL;
	}
	pol->priority = prio;
	return 0;
}

static int
group_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

static int
attr_group(const char *v, struct vm_policy *pol, char *why, size_t whylen)
{
	size_t n = strlen(v);

	util_errf(why, whylen, "%s",
	          "is not a group name (1 to 63 characters from A-Z a-z 0-9 _ . -)");
	if (n == 0 || n >= VM_POLICY_GROUP_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!group_char_ok(v[i]))
			return -EINVAL;
	}
	memcpy(pol->group, v, n + 1);
	return 0;
}

struct vm_policy_attr {
	const char *name;
	int (*parse)(const char *v, struct vm_policy *pol, char *why, size_t whylen);
};

static const struct vm_policy_attr policy_attrs[] = {
    {"mode", attr_mode},       {"nodes", attr_nodes}, {"placement", attr_placement},
    {"migrate", attr_migrate}, {"rate", attr_rate},   {"priority", attr_priority},
    {"group", attr_group},
};

/* ---- the element --------------------------------------------------------------------------- */

/* The first error (level error or fatal) libxml2 reported during one parse; warnings are ignored.
 */
struct vm_policy_xml_errors {
	int have_error;
	int line;
	char msg[160];
};

#if LIBXML_VERSION >= 21200
typedef const xmlError vm_policy_xml_error_t;
#else
typedef xmlError vm_policy_xml_error_t;
#endif

static void
xml_error_capture(void *data, vm_policy_xml_error_t *e)
{
	struct vm_policy_xml_errors *cap = data;

	if (cap->have_error || e == NULL || e->level < XML_ERR_ERROR)
		return;
	cap->have_error = 1;
	cap->line = e->line;
	/* Keep the first line only; err_quote escapes anything odd libxml2 may have echoed. */
	char first[sizeof(cap->msg)];
	const char *m = e->message ? e->message : "unknown error";
	size_t n = strcspn(m, "\n");

	if (n >= sizeof(first))
		n = sizeof(first) - 1;
	memcpy(first, m, n);
	first[n] = '\0';
	err_quote(first, sizeof(first), cap->msg, sizeof(cap->msg));
}

static int
xml_is_blank(const xmlChar *s)
{
	for (; s && *s; s++) {
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return 0;
	}
	return 1;
}

/* Check that root is <policy> in our namespace. */
static int
policy_check_root(const xmlNode *root, char *err, size_t errlen)
{
	const char *name = (const char *)root->name;
	const char *prefix = root->ns && root->ns->prefix ? (const char *)root->ns->prefix : NULL;
	const char *href = root->ns ? (const char *)root->ns->href : NULL;

	if (strcmp(name, "policy") != 0) {
		err_set(err, errlen, "expected a <policy> element in namespace %s, found <%s%s%s>",
		        VM_POLICY_NS, prefix ? prefix : "", prefix ? ":" : "", name);
		return -EINVAL;
	}
	if (href == NULL) {
		err_set(err, errlen, "<policy> has no namespace; it must be in namespace %s",
		        VM_POLICY_NS);
		return -EINVAL;
	}
	if (strcmp(href, VM_POLICY_NS) != 0) {
		char q[4 * VM_POLICY_ERR_VALUE_CHARS + 8];

		err_set(err, errlen, "<policy> is in namespace \"%s\"; it must be in namespace %s",
		        err_quote(href, 2 * VM_POLICY_ERR_VALUE_CHARS, q, sizeof(q)), VM_POLICY_NS);
		return -EINVAL;
	}
	return 0;
}

/* Children are reserved for later: allow only whitespace, comments and processing instructions. */
static int
policy_check_children(const xmlNode *root, char *err, size_t errlen)
{
	for (const xmlNode *c = root->children; c; c = c->next) {
		char q[4 * VM_POLICY_ERR_VALUE_CHARS + 8];

		switch (c->type) {
		case XML_ELEMENT_NODE:
			err_set(err, errlen,
			        "child elements are not supported yet (found <%s%s%s>)",
			        c->ns && c->ns->prefix ? (const char *)c->ns->prefix : "",
			        c->ns && c->ns->prefix ? ":" : "", (const char *)c->name);
			return -EINVAL;
		case XML_TEXT_NODE:
		case XML_CDATA_SECTION_NODE:
			if (xml_is_blank(c->content))
				break;
			err_set(err, errlen,
			        "text content is not allowed in <policy> (found \"%s\")",
			        err_quote((const char *)c->content, VM_POLICY_ERR_VALUE_CHARS, q,
			                  sizeof(q)));
			return -EINVAL;
		case XML_COMMENT_NODE:
		case XML_PI_NODE:
			break;
		default:
			err_set(err, errlen, "unexpected content in <policy>");
			return -EINVAL;
		}
	}
	return 0;
}

/* Apply one attribute to pol. */
static int
policy_apply_attr(const xmlAttr *a, struct vm_policy *pol, char *err, size_t errlen)
{
	const char *name = (const char *)a->name;
	char q[4 * VM_POLICY_ERR_VALUE_CHARS + 8];

	if (a->ns != NULL) {
		err_set(err, errlen,
		        "attribute %s%s%s is in namespace \"%s\"; policy attributes take "
		        "no prefix",
		        a->ns->prefix ? (const char *)a->ns->prefix : "", a->ns->prefix ? ":" : "",
		        name,
		        err_quote((const char *)a->ns->href, 2 * VM_POLICY_ERR_VALUE_CHARS, q,
		                  sizeof(q)));
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(policy_attrs) / sizeof(policy_attrs[0]); i++) {
		char why[VM_POLICY_WHY_MAX] = "is not valid";
		xmlChar *v;
		int rc;

		if (strcmp(name, policy_attrs[i].name) != 0)
			continue;
		v = xmlNodeListGetString(a->doc, a->children, 1);
		rc = policy_attrs[i].parse(v ? (const char *)v : "", pol, why, sizeof(why));
		if (rc < 0)
			err_set(err, errlen, "%s: \"%s\" %s", name,
			        err_quote(v ? (const char *)v : "", VM_POLICY_ERR_VALUE_CHARS, q,
			                  sizeof(q)),
			        why);
		xmlFree(v);
		return rc;
	}
	err_set(err, errlen,
	        "unknown attribute %s (known: mode, nodes, placement, migrate, rate, priority, "
	        "group)",
	        name);
	return -EINVAL;
}

/* Validate the parsed document and fill pol from it. */
static int
policy_from_doc(const xmlDoc *doc, struct vm_policy *pol, char *err, size_t errlen)
{
	const xmlNode *root = xmlDocGetRootElement(doc);
	int rc;

	if (doc->intSubset != NULL || doc->extSubset != NULL) {
		err_set(err, errlen, "DOCTYPE declarations are not allowed in a policy");
		return -EINVAL;
	}
	if (root == NULL) {
		err_set(err, errlen, "no <policy> element");
		return -EINVAL;
	}
	rc = policy_check_root(root, err, errlen);
	if (rc == 0)
		rc = policy_check_children(root, err, errlen);
	for (const xmlAttr *a = root->properties; rc == 0 && a; a = a->next)
		rc = policy_apply_attr(a, pol, err, errlen);
	return rc;
}

/*
 * Parse xml with libxml2, capturing its first error in *cap instead of printing it.  The
 * per-thread structured error handler is swapped in only for this call and then restored.
 */
static xmlDoc *
policy_read_doc(const char *xml, size_t len, struct vm_policy_xml_errors *cap)
{
	xmlStructuredErrorFunc old_func;
	void *old_ctx;
	xmlDoc *doc;

	xmlInitParser();
	old_func = xmlStructuredError;
	old_ctx = xmlStructuredErrorContext;
	xmlSetStructuredErrorFunc(cap, xml_error_capture);
	doc = xmlReadMemory(xml, (int)len, NULL, NULL,
	                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	xmlSetStructuredErrorFunc(old_ctx, old_func);
	xmlResetLastError();
	return doc;
}

int
vm_policy_parse_xml(const char *xml, size_t len, struct vm_policy *pol, char *err, size_t errlen)
{
	struct vm_policy_xml_errors cap = {0};
	struct vm_policy tmp;
	xmlDoc *doc = NULL;
	int rc = -EINVAL;

	vm_policy_init_default(pol);
	vm_policy_init_default(&tmp);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (xml == NULL || len == 0) {
		err_set(err, errlen, "empty policy XML");
		goto out;
	}
	if (len > VM_POLICY_XML_MAX_BYTES) {
		err_set(err, errlen, "policy XML is %zu bytes; the limit is %d", len,
		        VM_POLICY_XML_MAX_BYTES);
		goto out;
	}
	doc = policy_read_doc(xml, len, &cap);
	if (cap.have_error) {
		err_set(err, errlen, "malformed XML at line %d: %s", cap.line, cap.msg);
		goto out;
	}
	if (doc == NULL) {
		err_set(err, errlen, "malformed XML");
		goto out;
	}
	rc = policy_from_doc(doc, &tmp, err, errlen);
	if (rc == 0)
		*pol = tmp;
out:
	xmlFreeDoc(doc);
	return rc;
}

int
vm_policy_check_nodes(const struct vm_policy *pol, int nr_nodes, char *err, size_t errlen)
{
	uint64_t host = nr_nodes > 0 ? nodemask_all_of(nr_nodes) : 0;
	char all[NODEMASK_STR_MAX], why[2 * NODEMASK_STR_MAX + 64];

	if (pol->nodes == NODEMASK_ALL)
		return 0;
	if (pol->nodes == 0) {
		if (host == 0)
			snprintf(all, sizeof(all), "none");
		else
			nodemask_format(host, all, sizeof(all));
		err_set(err, errlen, "nodes: the list is empty (this host's nodes are %s)", all);
		return -EINVAL;
	}
	if (nodemask_check_host(pol->nodes, nr_nodes, why, sizeof(why)) == 0)
		return 0;
	err_set(err, errlen, "nodes=\"%s\": %s", nodemask_format(pol->nodes, all, sizeof(all)),
	        why);
	return -EINVAL;
}

void
vm_policy_init_default(struct vm_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->mode = VM_POLICY_MODE_AUTO;
	pol->nodes = NODEMASK_ALL;
	pol->migrate = true;
	pol->priority = VM_POLICY_PRIORITY_DEF;
}

/* ---- formatting ---------------------------------------------------------------------------- */

/* Append s as the inside of a double-quoted attribute value. */
static void
vm_policy_put_escaped(struct util_buf *sb, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&':
			util_buf_printf(sb, "&amp;");
			break;
		case '<':
			util_buf_printf(sb, "&lt;");
			break;
		case '>':
			util_buf_printf(sb, "&gt;");
			break;
		case '"':
			util_buf_printf(sb, "&quot;");
			break;
		case '\t':
		case '\n':
		case '\r':
			/* Literal whitespace would be normalised to a space by the parser. */
			util_buf_printf(sb, "&#%d;", s[i]);
			break;
		default:
			util_buf_printf(sb, "%c", s[i]);
		}
	}
}

/* The rate in the largest unit that keeps it a whole number. */
static void
vm_policy_put_rate(struct util_buf *sb, uint64_t kib_s)
{
	if (kib_s % KIB_PER_GIB == 0)
		util_buf_printf(sb, " rate=\"%lluGiB/s\"",
		                (unsigned long long)(kib_s / KIB_PER_GIB));
	else if (kib_s % KIB_PER_MIB == 0)
		util_buf_printf(sb, " rate=\"%lluMiB/s\"",
		                (unsigned long long)(kib_s / KIB_PER_MIB));
	else
		util_buf_printf(sb, " rate=\"%lluKiB/s\"", (unsigned long long)kib_s);
}

char *
vm_policy_format_xml(const struct vm_policy *pol)
{
	struct util_buf sb = {0};
	char nodes[NODEMASK_STR_MAX];

	util_buf_printf(&sb, "<vnuma:policy xmlns:vnuma=\"%s\"", VM_POLICY_NS);
	if (pol->mode != VM_POLICY_MODE_AUTO)
		util_buf_printf(&sb, " mode=\"%s\"", vm_policy_mode_name(pol->mode));
	if (pol->nodes != NODEMASK_ALL)
		util_buf_printf(&sb, " nodes=\"%s\"",
		                nodemask_format(pol->nodes, nodes, sizeof(nodes)));
	if (pol->placement != VM_POLICY_PLACEMENT_COMPACT)
		util_buf_printf(&sb, " placement=\"%s\"", vm_policy_placement_name(pol->placement));
	if (!pol->migrate)
		util_buf_printf(&sb, " migrate=\"no\"");
	if (pol->rate_kib_s != 0)
		vm_policy_put_rate(&sb, pol->rate_kib_s);
	if (pol->priority != VM_POLICY_PRIORITY_DEF)
		util_buf_printf(&sb, " priority=\"%d\"", pol->priority);
	if (pol->group[0] != '\0') {
		util_buf_printf(&sb, " group=\"");
		vm_policy_put_escaped(&sb, pol->group, strnlen(pol->group, VM_POLICY_GROUP_MAX));
		util_buf_printf(&sb, "\"");
	}
	util_buf_printf(&sb, "/>");
	return sb.data;
}

/* test_vm_policy.c - the per-VM policy element: parsing, errors, formatting, round trips. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy/util.h"
#include "policy/vm_policy.h"

#define NS_ATTR "xmlns=\"" VM_POLICY_NS "\""
#define VNUMA   "<vnuma:policy xmlns:vnuma=\"" VM_POLICY_NS "\""

/* Default seed of the random round trip; VNUMAD_TEST_SEED overrides it to replay a failure. */
#define ROUND_TRIP_SEED 0x5eed2024u
/* Random policies per run of the round trip. */
#define ROUND_TRIP_ITERATIONS 2000
/* Largest rate the parser accepts, in KiB/s (bytes/s must fit in 64 bits). */
#define RATE_MAX_KIB_S (UINT64_MAX / 1024)

static bool
policy_equal(const struct vm_policy *a, const struct vm_policy *b)
{
	return a->mode == b->mode && a->nodes == b->nodes && a->placement == b->placement &&
	       a->migrate == b->migrate && a->rate_kib_s == b->rate_kib_s &&
	       a->priority == b->priority && strcmp(a->group, b->group) == 0;
}

static bool
policy_is_default(const struct vm_policy *p)
{
	struct vm_policy def;

	vm_policy_init_default(&def);
	return policy_equal(p, &def);
}

/* Fill p with values that are all non-default, so that "left at defaults" is observable. */
static void
policy_scribble(struct vm_policy *p)
{
	p->mode = VM_POLICY_MODE_OFF;
	p->nodes = 0x5;
	p->placement = VM_POLICY_PLACEMENT_CELLS;
	p->migrate = false;
	p->rate_kib_s = 77;
	p->priority = 3;
	snprintf(p->group, sizeof(p->group), "scribble");
}

static int
parse_str(const char *xml, struct vm_policy *p, char *err, size_t errlen)
{
	policy_scribble(p);
	return vm_policy_parse_xml(xml, strlen(xml), p, err, errlen);
}

/* Parse xml, which must fail; check *pol was reset and err contains want. */
static void
expect_error(const char *xml, size_t len, const char *want)
{
	struct vm_policy p;
	char err[256];

	policy_scribble(&p);
	memset(err, 'x', sizeof(err));
	if (vm_policy_parse_xml(xml, len, &p, err, sizeof(err)) != -EINVAL)
		fail_msg("accepted: %.*s", (int)(len > 200 ? 200 : len), xml);
	assert_non_null(memchr(err, '\0', sizeof(err)));
	assert_true(strlen(err) > 0);
	if (want != NULL && strstr(err, want) == NULL)
		fail_msg("error \"%s\" does not contain \"%s\"", err, want);
	assert_true(policy_is_default(&p));
}

static void
test_brief_example(void **state)
{
	const char *xml = "<vnuma:policy xmlns:vnuma=\"http://vnumad.org/schemas/policy/1.0\"\n"
	                  "              mode=\"auto\" nodes=\"0-1\" placement=\"compact\" "
	                  "migrate=\"yes\"\n"
	                  "              rate=\"256MiB/s\" priority=\"50\" group=\"web-tier\"/>";
	struct vm_policy p;
	char err[256];

	assert_int_equal(parse_str(xml, &p, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(p.mode, VM_POLICY_MODE_AUTO);
	assert_int_equal(p.nodes, 0x3);
	assert_int_equal(p.placement, VM_POLICY_PLACEMENT_COMPACT);
	assert_true(p.migrate);
	assert_int_equal(p.rate_kib_s, 256 * 1024);
	assert_int_equal(p.priority, 50);
	assert_string_equal(p.group, "web-tier");
}

static void
test_defaults(void **state)
{
	struct vm_policy p;
	char err[256];
	char *xml;

	policy_scribble(&p);
	vm_policy_init_default(&p);
	assert_int_equal(p.mode, VM_POLICY_MODE_AUTO);
	assert_int_equal(p.nodes, NODEMASK_ALL);
	assert_int_equal(p.placement, VM_POLICY_PLACEMENT_COMPACT);
	assert_true(p.migrate);
	assert_int_equal(p.rate_kib_s, 0);
	assert_int_equal(p.priority, 50);
	assert_string_equal(p.group, "");

	xml = vm_policy_format_xml(&p);
	assert_string_equal(xml, VNUMA "/>");
	free(xml);

	/* No attributes, default namespace, whitespace, comments and a PI inside: all defaults. */
	assert_int_equal(parse_str("<?xml version=\"1.0\"?>\n<policy " NS_ATTR ">\n  <!-- none -->"
	                           "<?hint x?>\n</policy>\n",
	                           &p, err, sizeof(err)),
	                 0);
	assert_true(policy_is_default(&p));
}

static void
test_good_values(void **state)
{
	static const struct {
		const char *attrs;
		struct vm_policy want; /* group "" unless set below; other fields listed */
	} cases[] = {
	    {"mode=\"advisory\" nodes=\"0-1,3\" placement=\"cells\" migrate=\"no\"",
	     {VM_POLICY_MODE_ADVISORY, 0xb, VM_POLICY_PLACEMENT_CELLS, false, 0, 50, ""}},
	    {"mode=\"manual\" rate=\"1.5GiB/s\" priority=\"0\"",
	     {VM_POLICY_MODE_MANUAL, NODEMASK_ALL, 0, true, 1572864, 0, ""}},
	    {"mode=\"off\" rate=\"2MiB/s\" priority=\"100\" group=\"A.b_c-9\"",
	     {VM_POLICY_MODE_OFF, NODEMASK_ALL, 0, true, 2048, 100, "A.b_c-9"}},
	    {"rate=\"2.5MiB/s\" nodes=\"63\" priority=\"007\"",
	     {0, (uint64_t)1 << 63, 0, true, 2560, 7, ""}},
	    {"rate=\"2048.0005KiB/s\" nodes=\"0-63\" migrate=\"yes\"", /* rounds to the nearest
	                                                                  KiB/s */
	     {0, NODEMASK_ALL, 0, true, 2048, 50, ""}},
	    {"rate=\"256mib/s\"", {0, NODEMASK_ALL, 0, true, 256 * 1024, 50, ""}}, /* any case */
	    {"rate=\"1G/s\"", {0, NODEMASK_ALL, 0, true, 1024 * 1024, 50, ""}},    /* G is GiB */
	    {"rate=\"2047.5KiB/s\"",
	     {0, NODEMASK_ALL, 0, true, 2048, 50, ""}}, /* halves round up */
	    {"rate=\"0.001953125GiB/s\"", {0, NODEMASK_ALL, 0, true, 2048, 50, ""}}, /* the least */
	    {"rate=\"17179869183GiB/s\"",
	     {0, NODEMASK_ALL, 0, true, 17179869183ull * 1048576, 50, ""}},
	    {"rate=\"18014398509481983KiB/s\"", {0, NODEMASK_ALL, 0, true, RATE_MAX_KIB_S, 50, ""}},
	    {"group=\"123456789012345678901234567890123456789012345678901234567890123\"",
	     {0, NODEMASK_ALL, 0, true, 0, 50,
	      "123456789012345678901234567890123456789012345678901234567890123"}},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char xml[512], err[256];
		struct vm_policy p;

		snprintf(xml, sizeof(xml), "<p:policy xmlns:p=\"%s\" %s/>", VM_POLICY_NS,
		         cases[i].attrs);
		if (parse_str(xml, &p, err, sizeof(err)) != 0)
			fail_msg("case %zu rejected: %s", i, err);
		if (!policy_equal(&p, &cases[i].want))
			fail_msg("case %zu (%s) parsed to different values", i, cases[i].attrs);
	}
}

static void
test_bad_values(void **state)
{
	static const struct {
		const char *attr, *value, *want;
	} cases[] = {
	    {"mode", "", "is not a mode"},
	    {"mode", "AUTO", "is not a mode"},
	    {"mode", "automatic", "is not a mode"},
	    {"mode", " auto", "is not a mode"},
	    {"nodes", "", "is not a node list (the list is empty: name at least one node;"},
	    {"nodes", "64", "is not a node list (node 64 is above the highest supported (63);"},
	    {"nodes", "1-0", "is not a node list (range 1-0 runs backwards;"},
	    {"nodes", "0,", "is not a node list ('0,' has an empty item"},
	    {"nodes", "0,a", "is not a node list ('a' is not a number;"},
	    {"nodes", "-1", "is not a node list ('-1' is not a number;"},
	    {"nodes", "0-3,^1", "is not a node list ('^1' is an exclusion"},
	    {"nodes", "99999999999999999999",
	     "is not a node list (node 99999999999999999999 is above the highest supported (63);"},
	    {"placement", "spread", "is not a placement"},
	    {"placement", "", "is not a placement"},
	    {"migrate", "true", "is not yes or no"},
	    {"migrate", "1", "is not yes or no"},
	    {"migrate", "Yes", "is not yes or no"},
	    {"rate", "fast",
	     "is not a rate: 'fast' is not a rate (a size per second, e.g. 256MiB/s)"},
	    {"rate", "", "is not a rate"},
	    {"rate", "256", "is not a rate"},
	    {"rate", "256MB/s", "is not a rate: '256MB/s': 'MB' is ambiguous (1000 or 1024?)"},
	    {"rate", "256Mi/s", "is not a rate: '256Mi/s': 'Mi' is not a unit"},
	    {"rate", "256 MiB/s", "is not a rate"},
	    {"rate", "256MiB/s ", "is not a rate"},
	    {"rate", "-1MiB/s", "is not a rate"},
	    {"rate", "+1MiB/s", "is not a rate"},
	    {"rate", "1.MiB/s", "is not a rate"},
	    {"rate", ".5MiB/s", "is not a rate"},
	    {"rate", "1e3KiB/s", "is not a rate"},
	    {"rate", "1.0000000001GiB/s", "is not a rate"},
	    {"rate", "0MiB/s", "below 2MiB/s"},
	    {"rate", "0KiB/s", "below 2MiB/s"},
	    {"rate", "0.0001KiB/s", "below 2MiB/s"},
	    {"rate", "0.000000001KiB/s", "below 2MiB/s"},
	    {"rate", "1KiB/s", "below 2MiB/s"},
	    {"rate", "2047.4KiB/s", "below 2MiB/s"},
	    {"rate", "1.99MiB/s", "below 2MiB/s"},
	    {"rate", "17179869184GiB/s", "too large"},
	    {"rate", "18014398509481984KiB/s", "too large"},
	    {"rate", "99999999999999999999999999GiB/s", "too large"},
	    {"priority", "", "is not an integer from 0 to 100"},
	    {"priority", "101", "is not an integer from 0 to 100"},
	    {"priority", "-1", "is not an integer"},
	    {"priority", "5.0", "is not an integer"},
	    {"priority", "50 ", "is not an integer"},
	    {"priority", "x", "is not an integer"},
	    {"priority", "99999999999999999999", "is not an integer"},
	    {"group", "", "is not a group name"},
	    {"group", "a b", "is not a group name"},
	    {"group", "a/b", "is not a group name"},
	    {"group", "caf\xc3\xa9", "is not a group name"},
	    {"group", "&amp;", "is not a group name"},
	    {"group", "1234567890123456789012345678901234567890123456789012345678901234",
	     "is not a group name"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char xml[512], prefix[64];

		/* A valid attribute first, so the error must be about the bad one. */
		snprintf(xml, sizeof(xml), "<policy %s %s=\"7\" %s=\"%s\"/>", NS_ATTR,
		         strcmp(cases[i].attr, "priority") ? "priority" : "nodes", cases[i].attr,
		         cases[i].value);
		/* The message starts with the attribute's name, then its value. */
		snprintf(prefix, sizeof(prefix), "%s: \"", cases[i].attr);
		expect_error(xml, strlen(xml), prefix);
		expect_error(xml, strlen(xml), cases[i].want);
	}
}

static void
test_error_quotes_value_safely(void **state)
{
	struct vm_policy p;
	char err[256];

	/* Control characters arrive via character references; they are escaped in the message. */
	assert_int_equal(
	    parse_str("<policy " NS_ATTR " mode=\"a&#9;&quot;b\"/>", &p, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "mode: \"a\\x09\\\"b\" is not a mode (use auto, advisory, manual "
	                         "or off)");

	/* A long value is cut with "..." after 40 characters. */
	assert_int_equal(
	    parse_str("<policy " NS_ATTR " group=\""
	              "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklm"
	              "nopqrstuvwxyz\"/>",
	              &p, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "group: \"abcdefghijklmnopqrstuvwxyzabcdefghijklmn...\" is"));
}

/* True if s is well-formed UTF-8 (in particular, does not end in a cut character). */
static bool
utf8_valid(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 0;

		if (n == 0)
			return false;
		for (int i = 1; i < n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
		}
		p += n;
	}
	return true;
}

static void
test_error_truncation(void **state)
{
	const char *xml = "<policy " NS_ATTR " group=\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	                  "\xc3\xa9\xc3\xa9\xc3\xa9\"/>";
	struct vm_policy p;

	/* Every buffer size: NUL-terminated, within bounds, never a split character. */
	for (size_t errlen = 1; errlen < 40; errlen++) {
		char buf[64];

		memset(buf, 'z', sizeof(buf));
		assert_int_equal(parse_str(xml, &p, buf, errlen), -EINVAL);
		assert_true(strlen(buf) < errlen);
		assert_int_equal(buf[errlen], 'z');
		assert_true(utf8_valid(buf));
		assert_true(policy_is_default(&p));
	}
	/* No error buffer at all is allowed. */
	assert_int_equal(parse_str(xml, &p, NULL, 0), -EINVAL);
	assert_true(policy_is_default(&p));
}

static void
test_unknown_attribute(void **state)
{
	const char *xml = "<policy " NS_ATTR " mode=\"off\" colour=\"red\"/>";

	expect_error(xml, strlen(xml), "unknown attribute colour");
}

static void
test_namespaces(void **state)
{
	const char *cases[][2] = {
	    {"<policy xmlns=\"urn:example\" mode=\"off\"/>", "in namespace \"urn:example\""},
	    {"<policy xmlns=\"http://vnumad.org/schemas/policy/1.1\"/>", "policy/1.1"},
	    {"<policy mode=\"off\"/>", "<policy> has no namespace"},
	    {"<v:policy xmlns:v=\"" VM_POLICY_NS "\" v:mode=\"off\"/>", "attribute v:mode"},
	    {"<policy " NS_ATTR " xmlns:o=\"urn:other\" o:tag=\"x\"/>", "attribute o:tag"},
	    {"<policy " NS_ATTR " xml:lang=\"en\"/>", "attribute xml:lang"},
	    {"<v:policy mode=\"off\"/>", "malformed XML"}, /* undeclared prefix */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_error(cases[i][0], strlen(cases[i][0]), cases[i][1]);
}

static void
test_wrong_root(void **state)
{
	const char *a = "<domain type=\"kvm\"><name>vm1</name></domain>";
	const char *b = "<v:polic xmlns:v=\"" VM_POLICY_NS "\"/>";

	expect_error(a, strlen(a), "found <domain>");
	expect_error(b, strlen(b), "found <v:polic>");
}

static void
test_child_element(void **state)
{
	const char *a = "<policy " NS_ATTR "><cell id=\"0\"/></policy>";
	const char *b = "<policy " NS_ATTR ">\n  <x:cell xmlns:x=\"urn:x\"/>\n</policy>";

	expect_error(a, strlen(a), "child elements are not supported yet (found <cell>)");
	expect_error(b, strlen(b), "child elements are not supported yet (found <x:cell>)");
}

static void
test_text_content(void **state)
{
	const char *a = "<policy " NS_ATTR ">auto</policy>";
	const char *b = "<policy " NS_ATTR "><![CDATA[x]]></policy>";
	const char *c = "<policy " NS_ATTR "> \t\r\n<![CDATA[ ]]></policy>";
	struct vm_policy p;
	char err[256];

	expect_error(a, strlen(a), "text content is not allowed");
	expect_error(b, strlen(b), "text content is not allowed");
	assert_int_equal(parse_str(c, &p, err, sizeof(err)), 0);
	assert_true(policy_is_default(&p));
}

static void
test_malformed(void **state)
{
	static const char nul[] = "<policy xmlns=\"http://vnumad.org/schemas/policy/1.0\" mode=\"of"
	                          "\0f\"/>";
	const char *cases[] = {
	    "<policy " NS_ATTR,
	    "<policy " NS_ATTR " mode=off/>",
	    "<policy " NS_ATTR "></polic>",
	    "<policy " NS_ATTR " mode=\"auto\" mode=\"off\"/>",
	    "<policy " NS_ATTR "/><policy " NS_ATTR "/>",
	    "<policy " NS_ATTR " mode=\"&bogus;\"/>",
	    "\xff\xfe\x00<",
	    "<?xml version=\"1.0\" encoding=\"no-such-encoding\"?><policy " NS_ATTR "/>",
	    "just text",
	    "<policy " NS_ATTR " group=\"\xc3\x28\"/>", /* invalid UTF-8 */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_error(cases[i], strlen(cases[i]), "malformed XML");
	/* An embedded NUL, with the bytes after it included in the length. */
	expect_error(nul, sizeof(nul) - 1, "malformed XML");
	/* A DOCTYPE (and with it entity tricks) is refused even when well-formed. */
	const char *dtd =
	    "<!DOCTYPE policy [<!ENTITY m \"off\">]><policy " NS_ATTR " mode=\"&m;\"/>";

	expect_error(dtd, strlen(dtd), "DOCTYPE");
}

/* Deep nesting and entity expansion bombs within the size limit fail cleanly. */
static void
test_hostile_input(void **state)
{
	size_t cap = 64 * 1024, off = 0;
	char *buf = malloc(cap + 1);

	assert_non_null(buf);
	off += (size_t)snprintf(buf, cap, "<policy " NS_ATTR ">");
	while (off + 3 < cap - 64)
		off += (size_t)snprintf(buf + off, cap - off, "<a>");
	expect_error(buf, off, NULL);

	off = (size_t)snprintf(buf, cap, "<!DOCTYPE policy [<!ENTITY e0 \"lol\">");
	for (int i = 1; i < 20; i++)
		off +=
		    (size_t)snprintf(buf + off, cap - off,
		                     "<!ENTITY e%d \"&e%d;&e%d;&e%d;&e%d;&e%d;&e%d;&e%d;&e%d;\">",
		                     i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	off += (size_t)snprintf(buf + off, cap - off, "]><policy " NS_ATTR " group=\"&e19;\"/>");
	expect_error(buf, off, NULL);
	free(buf);
}

static void
test_empty(void **state)
{
	expect_error("", 0, "empty");
	expect_error(NULL, 0, "empty");
	expect_error("   \n", 4, "malformed XML");
	expect_error("<!-- nothing -->", 16, "malformed XML");
}

/* Valid documents up to 64 KiB are accepted; a 100 KiB one is refused before parsing. */
static void
test_size_limit(void **state)
{
	size_t big = 100 * 1024, limit = 64 * 1024;
	char *buf = malloc(big);
	const char *head = "<policy " NS_ATTR " mode=\"off\"><!--";
	struct vm_policy p;
	char err[256];

	assert_non_null(buf);
	memset(buf, ' ', big);
	memcpy(buf, head, strlen(head));
	memcpy(buf + limit - strlen("--></policy>"), "--></policy>", strlen("--></policy>"));
	policy_scribble(&p);
	assert_int_equal(vm_policy_parse_xml(buf, limit, &p, err, sizeof(err)), 0);
	assert_int_equal(p.mode, VM_POLICY_MODE_OFF);

	memcpy(buf + big - strlen("--></policy>"), "--></policy>", strlen("--></policy>"));
	expect_error(buf, big, "limit");
	expect_error(buf, limit + 1, "limit");
	free(buf);
}

static void
test_format(void **state)
{
	struct vm_policy p;
	char *xml;

	vm_policy_init_default(&p);
	p.mode = VM_POLICY_MODE_ADVISORY;
	p.nodes = 0x3;
	xml = vm_policy_format_xml(&p);
	assert_string_equal(xml, VNUMA " mode=\"advisory\" nodes=\"0-1\"/>");
	free(xml);

	p.placement = VM_POLICY_PLACEMENT_CELLS;
	p.migrate = false;
	p.rate_kib_s = 1536;
	p.priority = 0;
	snprintf(p.group, sizeof(p.group), "web-tier");
	xml = vm_policy_format_xml(&p);
	assert_string_equal(xml, VNUMA " mode=\"advisory\" nodes=\"0-1\" placement=\"cells\" "
	                               "migrate=\"no\" rate=\"1536KiB/s\" priority=\"0\" "
	                               "group=\"web-tier\"/>");
	free(xml);

	static const struct {
		uint64_t kib_s;
		const char *want;
	} rates[] = {
	    {1, "rate=\"1KiB/s\""},
	    {1023, "rate=\"1023KiB/s\""},
	    {1024, "rate=\"1MiB/s\""},
	    {1025, "rate=\"1025KiB/s\""},
	    {1048576, "rate=\"1GiB/s\""},
	    {1572864, "rate=\"1536MiB/s\""},
	    {262144, "rate=\"256MiB/s\""},
	    {3 * 1048576 + 1024, "rate=\"3073MiB/s\""},
	    {RATE_MAX_KIB_S, "rate=\"18014398509481983KiB/s\""},
	};
	vm_policy_init_default(&p);
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		p.rate_kib_s = rates[i].kib_s;
		xml = vm_policy_format_xml(&p);
		if (strstr(xml, rates[i].want) == NULL)
			fail_msg("%" PRIu64 " KiB/s formatted as %s", rates[i].kib_s, xml);
		free(xml);
	}
}

/* A group outside the allowed set is still escaped into well-formed XML. */
static void
test_format_escapes_group(void **state)
{
	struct vm_policy p, q;
	char err[256];
	char *xml;

	vm_policy_init_default(&p);
	snprintf(p.group, sizeof(p.group), "a&b<c>\"d'\te");
	xml = vm_policy_format_xml(&p);
	assert_non_null(strstr(xml, "group=\"a&amp;b&lt;c&gt;&quot;d'&#9;e\""));
	/* Well-formed: the parser gets as far as the value check. */
	assert_int_equal(vm_policy_parse_xml(xml, strlen(xml), &q, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "group: \"a&b<c>\\\"d'\\x09e\" is not a group name"));
	free(xml);
}

static void
test_names(void **state)
{
	assert_string_equal(vm_policy_mode_name(VM_POLICY_MODE_AUTO), "auto");
	assert_string_equal(vm_policy_mode_name(VM_POLICY_MODE_ADVISORY), "advisory");
	assert_string_equal(vm_policy_mode_name(VM_POLICY_MODE_MANUAL), "manual");
	assert_string_equal(vm_policy_mode_name(VM_POLICY_MODE_OFF), "off");
	assert_string_equal(vm_policy_mode_name((enum vm_policy_mode)42), "unknown");
	assert_string_equal(vm_policy_placement_name(VM_POLICY_PLACEMENT_COMPACT), "compact");
	assert_string_equal(vm_policy_placement_name(VM_POLICY_PLACEMENT_CELLS), "cells");
	assert_string_equal(vm_policy_placement_name((enum vm_policy_placement) - 1), "unknown");
}

static uint64_t
rng_u64(struct util_rng *rng)
{
	uint64_t hi = util_rng_u32(rng); /* two statements: a fixed order of the draws */

	return (hi << 32) | util_rng_u32(rng);
}

/* A random valid policy; each field is left at its default about a third of the time. */
static void
policy_random(struct util_rng *rng, struct vm_policy *p)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                            "0123456789_.-";
	static const uint64_t units[] = {1, 1024, 1048576};

	vm_policy_init_default(p);
	if (util_rng_below(rng, 3))
		p->mode = (enum vm_policy_mode)util_rng_below(rng, 4);
	if (util_rng_below(rng, 3)) {
		uint64_t m = rng_u64(rng);

		p->nodes = m >> util_rng_below(rng, 64);
		if (p->nodes == 0)
			p->nodes = 1;
	}
	if (util_rng_below(rng, 3))
		p->placement = (enum vm_policy_placement)util_rng_below(rng, 2);
	if (util_rng_below(rng, 3))
		p->migrate = util_rng_below(rng, 2);
	if (util_rng_below(rng, 3)) {
		uint64_t unit = units[util_rng_below(rng, 3)];
		uint64_t r = rng_u64(rng) >> util_rng_below(rng, 64);

		p->rate_kib_s = (r % (RATE_MAX_KIB_S / unit) + 1) * unit;
		if (p->rate_kib_s < VM_POLICY_RATE_MIN_KIB_S) /* below the least: none valid */
			p->rate_kib_s += VM_POLICY_RATE_MIN_KIB_S;
	}
	if (util_rng_below(rng, 3))
		p->priority = (int)util_rng_below(rng, VM_POLICY_PRIORITY_MAX + 1);
	if (util_rng_below(rng, 3)) {
		uint32_t n = 1 + util_rng_below(rng, VM_POLICY_GROUP_MAX - 1);

		for (uint32_t i = 0; i < n; i++)
			p->group[i] = chars[util_rng_below(rng, sizeof(chars) - 1)];
	}
}

/* parse(format(p)) == p, and formatting again gives the same text. */
static void
check_round_trip(const struct vm_policy *p, uint64_t seed, int iter)
{
	struct vm_policy q;
	char err[256];
	char *xml = vm_policy_format_xml(p), *again;

	policy_scribble(&q);
	if (vm_policy_parse_xml(xml, strlen(xml), &q, err, sizeof(err)) != 0)
		fail_msg("seed %" PRIu64 " iteration %d: %s rejected: %s", seed, iter, xml, err);
	if (!policy_equal(p, &q))
		fail_msg("seed %" PRIu64 " iteration %d: %s parsed to a different policy", seed,
		         iter, xml);
	again = vm_policy_format_xml(&q);
	if (strcmp(xml, again) != 0)
		fail_msg("seed %" PRIu64 " iteration %d: %s formatted again as %s", seed, iter, xml,
		         again);
	free(again);
	free(xml);
}

static void
test_round_trip(void **state)
{
	const char *env = getenv("VNUMAD_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : ROUND_TRIP_SEED;
	struct util_rng rng;
	struct vm_policy p;

	/* Fixed edge cases first. */
	vm_policy_init_default(&p);
	check_round_trip(&p, seed, -1);
	p.nodes = (uint64_t)1 << 63;
	p.rate_kib_s = RATE_MAX_KIB_S;
	p.priority = VM_POLICY_PRIORITY_MAX;
	memset(p.group, 'z', VM_POLICY_GROUP_MAX - 1);
	check_round_trip(&p, seed, -2);
	p.nodes = 0x5555555555555555ull;
	p.rate_kib_s = VM_POLICY_RATE_MIN_KIB_S;
	p.priority = 0;
	p.mode = VM_POLICY_MODE_OFF;
	p.placement = VM_POLICY_PLACEMENT_CELLS;
	p.migrate = false;
	check_round_trip(&p, seed, -3);

	util_rng_seed(&rng, seed, 1);
	for (int i = 0; i < ROUND_TRIP_ITERATIONS; i++) {
		policy_random(&rng, &p);
		check_round_trip(&p, seed, i);
	}
}

/* Nodes against a host: the message names the nodes outside it and the host's own. */
static void
test_check_nodes(void **state)
{
	static const struct {
		uint64_t nodes;
		int nr_nodes;
		const char *want; /* NULL: fine */
	} cases[] = {
	    {NODEMASK_ALL, 4, NULL},
	    {0xf, 4, NULL},
	    {1u << 3, 4, NULL},
	    {(uint64_t)1 << 63, 64, NULL},
	    {NODEMASK_ALL, 1, NULL},
	    {1u << 7, 4, "nodes=\"7\": node 7 is not one of this host's nodes (0-3)"},
	    {(uint64_t)1 << 63, 4, "nodes=\"63\": node 63 is not one of this host's nodes (0-3)"},
	    {0x3c, 4, "nodes=\"2-5\": nodes 4-5 are not among this host's nodes (0-3)"},
	    {0x2, 1, "nodes=\"1\": node 1 is not one of this host's nodes (0)"},
	    {0, 4, "nodes: the list is empty (this host's nodes are 0-3)"},
	};
	struct vm_policy p;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		vm_policy_init_default(&p);
		p.nodes = cases[i].nodes;
		strcpy(err, "untouched");
		if (cases[i].want == NULL) {
			assert_int_equal(
			    vm_policy_check_nodes(&p, cases[i].nr_nodes, err, sizeof(err)), 0);
			continue;
		}
		assert_int_equal(vm_policy_check_nodes(&p, cases[i].nr_nodes, err, sizeof(err)),
		                 -EINVAL);
		assert_string_equal(err, cases[i].want);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_brief_example),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_good_values),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_error_quotes_value_safely),
	    cmocka_unit_test(test_error_truncation),
	    cmocka_unit_test(test_unknown_attribute),
	    cmocka_unit_test(test_namespaces),
	    cmocka_unit_test(test_wrong_root),
	    cmocka_unit_test(test_child_element),
	    cmocka_unit_test(test_text_content),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_hostile_input),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_size_limit),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_format_escapes_group),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_check_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

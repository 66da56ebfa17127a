/*
 * test_libvirt_domain.c - host/libvirt's pure parts on fixture files (tests/fixtures/libvirt/,
 * see the README there): the domain XML parser (every field of a domain with guest cells,
 * pins, numatune and our policy; a minimal domain; each broken fixture refused with the
 * offending piece named), libvirt's cpuset and size syntaxes, the two namespace spellings of
 * the policy element, the QEMU pid file, and a seeded mutation loop over the parser (seed
 * printed; set VNUMAD_TEST_SEED to replay one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/fileio.h"
#include "host/libvirt/lv_domain.h"
#include "host/libvirt/lv_parse.h"
#include "policy/idlist.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

#define MUTATE_ITERS 3000 /* mutated documents parsed */
#define MUTATE_SEED  20250611ull

static const char *
fixture_dir(void)
{
	static char buf[4096];
	const char *src = getenv("VNUMAD_SRCDIR");

	snprintf(buf, sizeof(buf), "%s/tests/fixtures/libvirt", src ? src : ".");
	return buf;
}

/* A fixture's bytes, exactly len of them (no NUL after), so ASan sees any over-read. */
static char *
fixture_load(const char *name, size_t *len)
{
	char path[8192], *data, *exact;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", fixture_dir(), name);
	if ((ret = fileio_read(path, 1 << 20, &data, len)) < 0)
		fail_msg("reading %s: %s", path, strerror(-ret));
	exact = xmalloc(*len);
	memcpy(exact, data, *len);
	free(data);
	return exact;
}

static int
parse_fixture(const char *name, struct lv_domain *dom, char *err, size_t errlen)
{
	size_t len;
	char *xml = fixture_load(name, &len);
	int ret = lv_domain_parse(xml, len, dom, err, errlen);

	free(xml);
	return ret;
}

static void
assert_set(const struct lv_idset *set, const int *want, int nr_want)
{
	assert_int_equal(set->nr, nr_want);
	for (int i = 0; i < nr_want; i++)
		assert_int_equal(set->ids[i], want[i]);
}

#define ASSERT_SET(set, ...)                                                                       \
	do {                                                                                       \
		const int want_[] = {__VA_ARGS__};                                                 \
		assert_set((set), want_, (int)(sizeof(want_) / sizeof(want_[0])));                 \
	} while (0)

/* ---- the full domain ---------------------------------------------------------------------- */

static void
test_domain_cells(void **state)
{
	struct lv_domain d;
	char err[256];

	assert_int_equal(parse_fixture("domain-cells.xml", &d, err, sizeof(err)), 0);
	assert_string_equal(d.name, "db1");
	assert_string_equal(d.uuid, "6695eb01-f6a4-8304-79aa-97f2502e193f");
	assert_int_equal(d.id, 7);
	assert_int_equal(d.memory_mib, 4096);
	assert_int_equal(d.current_memory_mib, 3072);
	assert_true(d.hugepages);
	assert_int_equal(d.max_vcpus, 8);
	assert_int_equal(d.nr_vcpus, 6);
	ASSERT_SET(&d.vcpu_cpuset, 0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15);

	/* Cells are listed 1 then 0: indexed by id, laid out in id order. */
	assert_int_equal(d.nr_cells, 2);
	assert_int_equal(d.cells[0].id, 0);
	ASSERT_SET(&d.cells[0].vcpus, 0, 1, 2, 3);
	assert_int_equal(d.cells[0].memory_kib, 2097152);
	assert_int_equal(d.cells[0].memory_mib, 2048);
	assert_int_equal(d.cells[0].start_mib, 0);
	assert_int_equal(d.cells[1].id, 1);
	ASSERT_SET(&d.cells[1].vcpus, 4, 5, 6, 7);
	assert_int_equal(d.cells[1].memory_mib, 2048);
	assert_int_equal(d.cells[1].start_mib, 2048);

	assert_int_equal(d.nr_vcpupins, 2);
	ASSERT_SET(&d.vcpupins[0], 0, 1, 3);
	ASSERT_SET(&d.vcpupins[5], 12, 14, 15);
	for (int v = 1; v < d.max_vcpus; v++)
		if (v != 5)
			assert_int_equal(d.vcpupins[v].nr, 0);
	ASSERT_SET(&d.emulatorpin, 4, 5);

	assert_true(d.numatune);
	assert_false(d.numatune_auto);
	assert_int_equal(d.numatune_mode, LV_MEM_MODE_STRICT);
	ASSERT_SET(&d.numatune_nodes, 0, 1);
	assert_int_equal(d.nr_memnodes, 2);
	assert_int_equal(d.memnodes[0].cellid, 0);
	assert_int_equal(d.memnodes[0].mode, LV_MEM_MODE_STRICT);
	ASSERT_SET(&d.memnodes[0].nodes, 0);
	assert_int_equal(d.memnodes[1].cellid, 1);
	assert_int_equal(d.memnodes[1].mode, LV_MEM_MODE_PREFERRED);
	ASSERT_SET(&d.memnodes[1].nodes, 1);
	lv_domain_free(&d);
	assert_null(d.name);
	lv_domain_free(&d); /* twice is harmless */
}

/* The policy element carries its namespace although <domain> declared it, and parses. */
static void
test_domain_metadata_policy(void **state)
{
	struct lv_domain d;
	struct vm_policy pol;
	char err[256];

	assert_int_equal(parse_fixture("domain-cells.xml", &d, err, sizeof(err)), 0);
	assert_non_null(d.metadata_xml);
	assert_non_null(strstr(d.metadata_xml, VM_POLICY_NS));
	assert_null(strstr(d.metadata_xml, "example.org")); /* the other tool's element */
	assert_int_equal(
	    vm_policy_parse_xml(d.metadata_xml, strlen(d.metadata_xml), &pol, err, sizeof(err)), 0);
	assert_int_equal(pol.mode, VM_POLICY_MODE_AUTO);
	assert_int_equal(pol.placement, VM_POLICY_PLACEMENT_CELLS);
	assert_int_equal(pol.nodes, 3);
	lv_domain_free(&d);
}

static void
test_domain_minimal(void **state)
{
	struct lv_domain d;
	char err[256];

	assert_int_equal(parse_fixture("domain-minimal.xml", &d, err, sizeof(err)), 0);
	assert_string_equal(d.name, "tiny");
	assert_string_equal(d.uuid, "");
	assert_int_equal(d.id, -1);
	assert_int_equal(d.memory_mib, 512);
	assert_int_equal(d.current_memory_mib, 512);
	assert_int_equal(d.nr_vcpus, 1);
	assert_int_equal(d.max_vcpus, 1);
	assert_false(d.hugepages);
	assert_int_equal(d.nr_cells, 0);
	assert_int_equal(d.nr_vcpupins, 0);
	assert_int_equal(d.vcpupins[0].nr, 0);
	assert_int_equal(d.emulatorpin.nr, 0);
	assert_int_equal(d.vcpu_cpuset.nr, 0);
	assert_false(d.numatune);
	assert_int_equal(d.nr_memnodes, 0);
	assert_null(d.metadata_xml);
	lv_domain_free(&d);
}

/* ---- broken domains: refused, with the piece named ---------------------------------------- */

static void
expect_error(const char *xml, size_t len, const char *needle1, const char *needle2)
{
	struct lv_domain d;
	char err[256] = "";

	assert_int_equal(lv_domain_parse(xml, len, &d, err, sizeof(err)), -EINVAL);
	assert_null(d.name); /* nothing kept */
	assert_null(d.cells);
	if (strstr(err, needle1) == NULL || (needle2 && strstr(err, needle2) == NULL))
		fail_msg("message \"%s\" lacks \"%s\"/\"%s\"", err, needle1,
		         needle2 ? needle2 : "");
}

static void
test_domain_broken_fixtures(void **state)
{
	static const struct {
		const char *file, *needle1, *needle2;
	} cases[] = {
	    {"bad-cpuset.xml", "<vcpupin vcpu='5'> cpuset \"12,14-x\"",
	     "'14-x' is not a range N-M"},
	    {"bad-memory-unit.xml", "<memory> unit \"GB2\"", "not a known unit"},
	    {"bad-cells-cover.xml", "vCPU 7 is in no cell", NULL},
	    {"bad-cells-overlap.xml", "vCPU 3 is in cells 0 and 1", NULL},
	    {"bad-vcpupin-range.xml", "<vcpupin> (domain has 8 vCPUs) vcpu \"8\"", "too large"},
	    {"bad-numatune-mode.xml", "<memnode cellid='1'> mode \"sometimes\"", NULL},
	    {"bad-cell-memory.xml", "<cell id='0'> memory \"lots\"", "not an unsigned number"},
	    {"bad-not-xml.xml", "not well-formed", "line 2"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		char *xml = fixture_load(cases[i].file, &len);

		print_message("%s\n", cases[i].file);
		expect_error(xml, len, cases[i].needle1, cases[i].needle2);
		free(xml);
	}
}

/* More broken pieces, written inline: each must be refused and named. */
static void
test_domain_broken_inline(void **state)
{
	static const struct {
		const char *xml, *needle;
	} cases[] = {
	    {"<domain><memory>1</memory></domain>", "<name>"},
	    {"<domain><name>a</name></domain>", "<memory> is missing"},
	    {"<vm><name>a</name></vm>", "not <domain>"},
	    {"<domain><name>a</name><uuid>123</uuid><memory>1</memory></domain>", "<uuid>"},
	    {"<domain id='x'><name>a</name><memory>1</memory></domain>", "<domain> id \"x\""},
	    {"<domain><name>a</name><memory>-1</memory></domain>", "<memory> \"-1\""},
	    {"<domain><name>a</name><memory>99999999999999999999</memory></domain>", "too large"},
	    {"<domain><name>a</name><memory unit='EiB'>99999</memory></domain>", "too large"},
	    {"<domain><name>a</name><memory>1</memory><vcpu>0</vcpu></domain>", "<vcpu> \"0\""},
	    {"<domain><name>a</name><memory>1</memory><vcpu current='3'>2</vcpu></domain>",
	     "<vcpu> current \"3\""},
	    {"<domain><name>a</name><memory>1</memory><vcpu cpuset='0,^0'>2</vcpu></domain>",
	     "<vcpu> cpuset \"0,^0\": '0,^0' leaves no CPU"},
	    {"<domain><name>a</name><memory>1</memory><vcpu cpuset='5-2'>2</vcpu></domain>",
	     "<vcpu> cpuset \"5-2\": range 5-2 runs backwards"},
	    {"<domain><name>a</name><memory>1</memory><numatune><memory nodeset='0,x'/>"
	     "</numatune></domain>",
	     "<numatune><memory> nodeset \"0,x\": 'x' is not a number"},
	    {"<domain><name>a</name><memory>1</memory><cputune><vcpupin cpuset='1'/></cputune>"
	     "</domain>",
	     "vcpu \"\" is missing"},
	    {"<domain><name>a</name><memory>1</memory><vcpu>2</vcpu><cputune>"
	     "<vcpupin vcpu='1' cpuset='1'/><vcpupin vcpu='1' cpuset='2'/></cputune></domain>",
	     "<vcpupin vcpu='1'> appears twice"},
	    {"<domain><name>a</name><memory>1</memory><cputune><emulatorpin cpuset='99999'/>"
	     "</cputune></domain>",
	     "<emulatorpin> cpuset \"99999\": CPU 99999 is above the highest supported"},
	    {"<domain><name>a</name><vcpu>2</vcpu><cpu><numa><cell id='0' cpus='0-1' "
	     "memory='1'/><cell id='0' cpus='0-1' memory='1'/></numa></cpu></domain>",
	     "two cells with id 0"},
	    {"<domain><name>a</name><vcpu>2</vcpu><cpu><numa><cell id='2' cpus='0-1' "
	     "memory='1'/></numa></cpu></domain>",
	     "<cell> #0 id \"2\""},
	    {"<domain><name>a</name><vcpu>2</vcpu><cpu><numa><cell cpus='0-1'/></numa></cpu>"
	     "</domain>",
	     "<cell id='0'> memory is missing"},
	    {"<domain><name>a</name><vcpu>2</vcpu><cpu><numa><cell cpus='0-2' memory='1'/>"
	     "</numa></cpu></domain>",
	     "names vCPU 2 but <vcpu> is 2"},
	    {"<domain><name>a</name><memory>1</memory><numatune><memory mode='strict' "
	     "placement='static'/></numatune></domain>",
	     "<numatune><memory> nodeset \"\": is missing"},
	    {"<domain><name>a</name><memory>1</memory><numatune><memory nodeset='0' "
	     "placement='later'/></numatune></domain>",
	     "placement \"later\""},
	    {"<domain><name>a</name><memory>1</memory><numatune><memnode cellid='0' "
	     "nodeset='0'/></numatune></domain>",
	     "needs guest NUMA cells"},
	    {"<!DOCTYPE domain [<!ENTITY a 'b'>]><domain><name>&a;</name><memory>1</memory>"
	     "</domain>",
	     "DOCTYPE"},
	    {"", "empty"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("%s\n", cases[i].xml);
		expect_error(cases[i].xml, strlen(cases[i].xml), cases[i].needle, NULL);
	}
}

/* Optional and defaulted pieces that libvirt accepts. */
static void
test_domain_variants(void **state)
{
	static const char cells_only[] =
	    "<domain><name>c</name><vcpu>3</vcpu><cpu><numa>"
	    "<cell cpus='0-1' memory='1' unit='GiB'/><cell cpus='2' memory='1537' unit='KiB'/>"
	    "<cell memory='512' unit='MiB'/></numa></cpu>"
	    "<numatune><memory mode='interleave' placement='auto'/></numatune></domain>";
	static const char clamp[] = "<domain><name>d</name><memory unit='b'>1048577</memory>"
	                            "<currentMemory unit='G'>8</currentMemory>"
	                            "<numatune><memory/></numatune></domain>";
	struct lv_domain d;
	char err[256];

	assert_int_equal(lv_domain_parse(cells_only, strlen(cells_only), &d, err, sizeof(err)), 0);
	assert_int_equal(d.nr_cells, 3);
	assert_int_equal(d.cells[1].memory_kib, 1537);
	assert_int_equal(d.cells[1].memory_mib, 2); /* rounded up */
	assert_int_equal(d.cells[2].vcpus.nr, 0);   /* a memory-only cell */
	assert_int_equal(d.cells[2].start_mib, 1026);
	assert_int_equal(d.memory_mib, 1538); /* no <memory>: the sum of the cells */
	assert_int_equal(d.current_memory_mib, 1538);
	assert_true(d.numatune_auto);
	assert_int_equal(d.numatune_mode, LV_MEM_MODE_INTERLEAVE);
	assert_int_equal(d.numatune_nodes.nr, 0);
	lv_domain_free(&d);

	assert_int_equal(lv_domain_parse(clamp, strlen(clamp), &d, err, sizeof(err)), 0);
	assert_int_equal(d.memory_mib, 2);         /* 1 MiB and a byte, rounded up */
	assert_int_equal(d.current_memory_mib, 2); /* clamped to <memory> */
	assert_true(d.numatune);
	assert_true(d.numatune_auto);
	assert_int_equal(d.numatune_mode, LV_MEM_MODE_STRICT);
	lv_domain_free(&d);
}

/* ---- value syntaxes ----------------------------------------------------------------------- */

static void
test_cpuset_parse(void **state)
{
	static const struct {
		const char *text;
		int nr;
		int ids[8];
	} good[] = {
	    {"0-7,^3", 7, {0, 1, 2, 4, 5, 6, 7}},
	    {"^3,0-7", 8, {0, 1, 2, 3, 4, 5, 6, 7}}, /* left to right, as libvirt */
	    {" 1 , 3 - 4 ", 3, {1, 3, 4}},
	    {"5,1,5", 2, {1, 5}},
	    {"2,", 1, {2}}, /* libvirt accepts a trailing comma */
	    {"63", 1, {63}},
	};
	static const char *const bad[] = {"",   "  ",   "a",  "1-",  "3-1", "^1-2",  "1,,2", "1 2",
	                                  "64", "0-64", "-1", "1;2", "^",   "1-2-3", "0,^0"};
	struct lv_idset set;
	char why[IDLIST_ERR_MAX];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		print_message("good \"%s\"\n", good[i].text);
		assert_int_equal(lv_cpuset_parse(good[i].text, 64, 0, &set, why, sizeof(why)), 0);
		assert_set(&set, good[i].ids, good[i].nr);
		assert_true(good[i].nr == 0 || lv_idset_has(&set, good[i].ids[good[i].nr - 1]));
		lv_idset_free(&set);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("bad \"%s\"\n", bad[i]);
		why[0] = '\0';
		assert_int_equal(lv_cpuset_parse(bad[i], 64, 0, &set, why, sizeof(why)), -EINVAL);
		assert_true(why[0] != '\0');
		assert_int_equal(set.nr, 0);
		assert_null(set.ids);
	}
	assert_int_equal(lv_cpuset_parse("0-7,^3", 64, 0, &set, why, sizeof(why)), 0);
	assert_false(lv_idset_has(&set, 3));
	assert_true(lv_idset_has(&set, 4));
	assert_false(lv_idset_has(&set, 8));
	lv_idset_free(&set);
}

static void
test_size_units(void **state)
{
	static const struct {
		const char *value, *unit;
		uint64_t kib;
	} good[] = {
	    {"1024", NULL, 1024},     {"1024", "", 1024},
	    {"1", "KiB", 1},          {"1", "k", 1},
	    {"1", "KB", 1}, /* 1000 bytes, rounded up to 1 KiB */
	    {"3", "MiB", 3072},       {"3", "m", 3072},
	    {"1", "MB", 977},         {"2", "GiB", 2097152},
	    {"2", "gib", 2097152},    {"1", "GB", 976563},
	    {"1", "TiB", 1073741824}, {"1", "b", 1},
	    {"2048", "bytes", 2},     {"1", "E", 1125899906842624ull},
	    {" 7 ", "MiB", 7168},
	};
	static const struct {
		const char *value, *unit;
	} bad[] = {
	    {"1", "GB2"}, {"1", "Q"},    {"1", "KiBs"},
	    {"x", NULL},  {"-1", NULL},  {"", NULL},
	    {"1.5", "G"}, {"17", "EiB"}, {"18446744073709551616", "b"},
	};
	const char *why;
	uint64_t kib;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		print_message("%s %s\n", good[i].value, good[i].unit ? good[i].unit : "(none)");
		assert_int_equal(lv_parse_size_kib(good[i].value, good[i].unit, &kib, &why), 0);
		assert_int_equal(kib, good[i].kib);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("bad %s %s\n", bad[i].value, bad[i].unit ? bad[i].unit : "(none)");
		assert_int_equal(lv_parse_size_kib(bad[i].value, bad[i].unit, &kib, &why), -EINVAL);
	}
}

/* ---- the policy element's two spellings --------------------------------------------------- */

static void
test_metadata_spellings(void **state)
{
	struct vm_policy pol, back;
	char err[256], *formatted, *plain, *qualified;

	vm_policy_init_default(&pol);
	pol.mode = VM_POLICY_MODE_ADVISORY;
	pol.priority = 70;
	formatted = vm_policy_format_xml(&pol);

	/* For virDomainSetMetadata: no trace of our namespace left. */
	plain = lv_metadata_unqualify(formatted, err, sizeof(err));
	assert_non_null(plain);
	assert_null(strstr(plain, "xmlns"));
	assert_non_null(strstr(plain, "<policy "));
	assert_non_null(strstr(plain, "priority=\"70\""));

	/* What virDomainGetMetadata returns: put back into the namespace, and it parses. */
	qualified = lv_metadata_qualify(plain, err, sizeof(err));
	assert_non_null(qualified);
	assert_int_equal(vm_policy_parse_xml(qualified, strlen(qualified), &back, err, sizeof(err)),
	                 0);
	assert_int_equal(back.mode, VM_POLICY_MODE_ADVISORY);
	assert_int_equal(back.priority, 70);
	free(qualified);

	/* Qualifying a qualified element, or one with its namespace as default, changes nothing. */
	qualified = lv_metadata_qualify(formatted, err, sizeof(err));
	assert_non_null(qualified);
	assert_string_equal(qualified, formatted);
	free(qualified);
	qualified =
	    lv_metadata_qualify("<policy xmlns='" VM_POLICY_NS "' mode='off'/>", err, sizeof(err));
	assert_non_null(strstr(qualified, "<vnuma:policy"));
	free(qualified);
	free(plain);
	free(formatted);

	/* Children: ours follow the root; another tool's keep their own namespace. */
	plain = lv_metadata_unqualify("<v:policy xmlns:v='" VM_POLICY_NS "'><v:cell id='0'/>"
	                              "<o:x xmlns:o='http://o'/></v:policy>",
	                              err, sizeof(err));
	assert_string_equal(plain, "<policy><cell id=\"0\"/><o:x xmlns:o=\"http://o\"/></policy>");
	qualified = lv_metadata_qualify(plain, err, sizeof(err));
	assert_string_equal(qualified, "<vnuma:policy xmlns:vnuma=\"" VM_POLICY_NS "\">"
	                               "<vnuma:cell id=\"0\"/><o:x xmlns:o=\"http://o\"/>"
	                               "</vnuma:policy>");
	free(plain);
	free(qualified);

	/* Refused: not XML, another namespace, an attribute in ours. */
	assert_null(lv_metadata_unqualify("<policy", err, sizeof(err)));
	assert_non_null(strstr(err, "not well-formed"));
	assert_null(lv_metadata_qualify("<o:policy xmlns:o='http://o'/>", err, sizeof(err)));
	assert_non_null(strstr(err, "http://o"));
	assert_null(lv_metadata_unqualify("<v:policy xmlns:v='" VM_POLICY_NS "' v:mode='auto'/>",
	                                  err, sizeof(err)));
	assert_non_null(strstr(err, "v:mode"));
}

/* ---- pid files ---------------------------------------------------------------------------- */

static void
test_pid_read(void **state)
{
	int pid = -1;

	assert_int_equal(lv_domain_pid_read(fixture_dir(), "db1", &pid), 0);
	assert_int_equal(pid, 1234);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), "absent", &pid), -ENOENT);
	assert_int_equal(pid, 0);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), "garbled", &pid), -EINVAL);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), "empty", &pid), -EINVAL);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), "../qemu/db1", &pid), -EINVAL);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), "..", &pid), -EINVAL);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), "", &pid), -EINVAL);
	assert_int_equal(lv_domain_pid_read(fixture_dir(), NULL, &pid), -EINVAL);
}

/* ---- robustness --------------------------------------------------------------------------- */

static uint64_t
test_seed(void)
{
	const char *env = getenv("VNUMAD_TEST_SEED");

	return env ? strtoull(env, NULL, 0) : MUTATE_SEED;
}

/* Mutated copies of the full fixture: parsed or refused with a message, never a crash. */
static void
test_domain_mutations(void **state)
{
	uint64_t seed = test_seed();
	struct util_rng rng;
	size_t len;
	char *orig = fixture_load("domain-cells.xml", &len);
	static const char alphabet[] = "0123456789-^,<>/='\" abcxyz&;";
	int parsed = 0, refused = 0;

	print_message("mutation seed %llu (set VNUMAD_TEST_SEED to replay)\n",
	              (unsigned long long)seed);
	util_rng_seed(&rng, seed, 1);
	for (int it = 0; it < MUTATE_ITERS; it++) {
		char *buf = xmalloc(len), err[256] = "";
		int edits = 1 + (int)util_rng_below(&rng, 3);
		struct lv_domain d;
		size_t n = len;

		memcpy(buf, orig, len);
		for (int e = 0; e < edits; e++)
			buf[util_rng_below(&rng, (uint32_t)len)] =
			    alphabet[util_rng_below(&rng, sizeof(alphabet) - 1)];
		if (util_rng_below(&rng, 8) == 0)
			n = util_rng_below(&rng, (uint32_t)len); /* cut short */
		if (lv_domain_parse(buf, n, &d, err, sizeof(err)) == 0) {
			parsed++;
			assert_non_null(d.name);
			lv_domain_free(&d);
		} else {
			refused++;
			assert_true(err[0] != '\0');
		}
		free(buf);
	}
	print_message("%d parsed, %d refused\n", parsed, refused);
	assert_true(parsed > 0 && refused > 0);
	free(orig);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_domain_cells),
	    cmocka_unit_test(test_domain_metadata_policy),
	    cmocka_unit_test(test_domain_minimal),
	    cmocka_unit_test(test_domain_broken_fixtures),
	    cmocka_unit_test(test_domain_broken_inline),
	    cmocka_unit_test(test_domain_variants),
	    cmocka_unit_test(test_cpuset_parse),
	    cmocka_unit_test(test_size_units),
	    cmocka_unit_test(test_metadata_spellings),
	    cmocka_unit_test(test_pid_read),
	    cmocka_unit_test(test_domain_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

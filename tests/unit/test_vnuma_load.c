/*
 * test_vnuma_load.c - vnuma-load's option and size parsing, its QEMU-like command line (with
 * the -m/-object/-numa options of --workload cells), the access-pattern slice and cell math
 * and the sysfs CPU-list reader (guest-tools/load_*.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "guest-tools/load_opts.h"
#include "guest-tools/load_pattern.h"
#include "guest-tools/load_sys.h"

#define MIB ((uint64_t)1 << 20)

/* Parse a NULL-terminated list of arguments (argv[0] added here). */
static int
parse(struct load_opts *o, char *err, size_t errlen, ...)
{
	char *argv[32] = {"vnuma-load"};
	int argc = 1;
	va_list ap;

	va_start(ap, errlen);
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	err[0] = '\0';
	return load_opts_parse(o, argc, argv, err, errlen);
}

/* Expect a parse error whose message contains want. */
#define assert_parse_error(want, ...)                                                              \
	do {                                                                                       \
		struct load_opts o_;                                                               \
		char err_[256];                                                                    \
		assert_int_equal(parse(&o_, err_, sizeof(err_), __VA_ARGS__, NULL), -EINVAL);      \
		if (strstr(err_, want) == NULL)                                                    \
			fail_msg("error '%s' does not mention '%s'", err_, want);                  \
	} while (0)

static void
test_size_parse(void **state)
{
	uint64_t b = 0;

	assert_int_equal(load_size_parse("64", &b, NULL, 0), 0);
	assert_int_equal(b, 64 * MIB);
	assert_int_equal(load_size_parse("64M", &b, NULL, 0), 0);
	assert_int_equal(b, 64 * MIB);
	assert_int_equal(load_size_parse("64mib", &b, NULL, 0), 0);
	assert_int_equal(b, 64 * MIB);
	assert_int_equal(load_size_parse("1G", &b, NULL, 0), 0);
	assert_int_equal(b, 1024 * MIB);
	assert_int_equal(load_size_parse("1.5GiB", &b, NULL, 0), 0);
	assert_int_equal(b, 1536 * MIB);
	assert_int_equal(load_size_parse("2t", &b, NULL, 0), 0);
	assert_int_equal(b, 2 * 1024 * 1024 * MIB);
	assert_int_equal(load_size_parse("1", &b, NULL, 0), 0);
	assert_int_equal(b, MIB);
	/* Rounded up to 8 KiB, as QEMU rounds -m: 1 MiB and 105 bytes, 1 MiB and 8 KiB. */
	assert_int_equal(load_size_parse("1.0001", &b, NULL, 0), 0);
	assert_int_equal(b, MIB + LOAD_MEMORY_ALIGN_BYTES);
	assert_int_equal(LOAD_MEMORY_ALIGN_BYTES, 8192);
	assert_int_equal(load_size_parse("0.5G", &b, NULL, 0), 0);
	assert_int_equal(b, 512 * MIB);
	assert_int_equal(load_size_parse("1024K", &b, NULL, 0), 0); /* the one grammar: K too */
	assert_int_equal(b, MIB);
}

static void
test_size_parse_rejects(void **state)
{
	static const char *const bad[] = {
	    "",    "M", "-1",    "1x",   "1 G",   "0x10", "inf", "nan", "1e3",
	    "0.5", "0", "1025T", "1..2", "1.2.3", "1GB",  "1K",  ".5G",
	};
	uint64_t b = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (load_size_parse(bad[i], &b, NULL, 0) != -EINVAL)
			fail_msg("size '%s' was accepted", bad[i]);
	assert_int_equal(b, 42); /* untouched on error */
}

static void
test_seconds_and_uint_parse(void **state)
{
	double s = 0;
	uint64_t v = 0;

	assert_int_equal(load_seconds_parse("2", &s), 0);
	assert_true(s == 2.0);
	assert_int_equal(load_seconds_parse("0.25", &s), 0);
	assert_true(s == 0.25);
	assert_int_equal(load_seconds_parse("0", &s), -EINVAL);
	assert_int_equal(load_seconds_parse("-1", &s), -EINVAL);
	assert_int_equal(load_seconds_parse("1e3", &s), -EINVAL);
	assert_int_equal(load_seconds_parse("", &s), -EINVAL);
	assert_int_equal(load_seconds_parse("2s", &s), -EINVAL);
	assert_int_equal(load_uint_parse("18446744073709551615", UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(load_uint_parse("18446744073709551616", UINT64_MAX, &v), -EINVAL);
	assert_int_equal(load_uint_parse("5", 4, &v), -EINVAL);
	assert_int_equal(load_uint_parse("+5", 9, &v), -EINVAL);
	assert_int_equal(load_uint_parse("5 ", 9, &v), -EINVAL);
}

static void
test_opts_defaults(void **state)
{
	struct load_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, sizeof(err), "--name", "vm1", NULL), 0);
	assert_string_equal(o.name, "vm1");
	assert_int_equal(o.vcpus, 1);
	assert_true(o.memory_bytes == LOAD_MEMORY_DEFAULT);
	assert_int_equal(o.node, -1);
	assert_int_equal(o.workload, LOAD_WL_PRIVATE);
	assert_true(o.hugepages);
	assert_false(o.pin);
	assert_false(o.mbind);
	assert_true(o.duration_s == 0 && o.report_s == 0);
	assert_true(o.seed == 1);
	assert_true(load_opts_phase_s(&o) == 0);
}

static void
test_opts_all(void **state)
{
	struct load_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, sizeof(err), "--name=db1", "--vcpus", "4", "--memory=2G",
	                       "--node", "1", "--mbind", "--workload", "cells", "--cells=2",
	                       "--pin", "--duration", "2.5", "--report=0.5", "--seed", "99",
	                       "--no-hugepages", NULL),
	                 0);
	assert_string_equal(o.name, "db1");
	assert_int_equal(o.vcpus, 4);
	assert_true(o.memory_bytes == 2048 * MIB);
	assert_int_equal(o.node, 1);
	assert_true(o.mbind && o.pin && !o.hugepages);
	assert_int_equal(o.workload, LOAD_WL_CELLS);
	assert_int_equal(o.cells, 2);
	assert_true(o.duration_s == 2.5 && o.report_s == 0.5);
	assert_true(o.seed == 99);

	assert_int_equal(parse(&o, err, sizeof(err), "--name", "a", "--workload", "phased", NULL),
	                 0);
	assert_true(load_opts_phase_s(&o) == LOAD_PHASED_DEFAULT_S);
	assert_int_equal(parse(&o, err, sizeof(err), "--name", "a", "--workload", "adverse", NULL),
	                 0);
	assert_true(load_opts_phase_s(&o) == LOAD_ADVERSE_DEFAULT_S);
	assert_int_equal(parse(&o, err, sizeof(err), "--name", "a", "--workload", "adverse",
	                       "--phase", "3", NULL),
	                 0);
	assert_true(load_opts_phase_s(&o) == 3.0);
	/* --help needs nothing else, not even --name. */
	assert_int_equal(parse(&o, err, sizeof(err), "--help", NULL), 0);
	assert_true(o.help);
}

static void
test_opts_errors(void **state)
{
	assert_parse_error("--name NAME is required", "--vcpus", "2");
	assert_parse_error("unknown option '--bogus'", "--name", "a", "--bogus");
	assert_parse_error("unknown option 'extra'", "--name", "a", "extra");
	assert_parse_error("--vcpus needs a value", "--name", "a", "--vcpus");
	assert_parse_error("--pin takes no value", "--name", "a", "--pin=yes");
	assert_parse_error("--vcpus: '0'", "--name", "a", "--vcpus", "0");
	assert_parse_error("--vcpus: '1025'", "--name", "a", "--vcpus", "1025");
	assert_parse_error("--memory: '12Q': 'Q' is not a unit", "--name", "a", "--memory", "12Q");
	assert_parse_error("--memory: '2048T' is not from 1 MiB to 1 PiB", "--name", "a",
	                   "--memory", "2048T");
	assert_parse_error("--node: 'x'", "--name", "a", "--node", "x");
	assert_parse_error("--workload: 'busy'", "--name", "a", "--workload", "busy");
	assert_parse_error("needs --cells", "--name", "a", "--workload", "cells");
	assert_parse_error("--cells only applies", "--name", "a", "--cells", "2");
	assert_parse_error("more cells than", "--name", "a", "--workload", "cells", "--cells", "3",
	                   "--vcpus", "2");
	assert_parse_error("--phase only applies", "--name", "a", "--phase", "5");
	assert_parse_error("--cold: '91' is not a percentage from 0 to 90", "--name", "a", "--cold",
	                   "91");
	assert_parse_error("--cold: '-1'", "--name", "a", "--cold", "-1");
	assert_parse_error("--cold does not apply", "--name", "a", "--vcpus", "2", "--workload",
	                   "cells", "--cells", "2", "--cold", "10");
	assert_parse_error("--mbind needs --node", "--name", "a", "--mbind");
	assert_parse_error("--report: '0.01'", "--name", "a", "--report", "0.01");
	assert_parse_error("--duration: '0'", "--name", "a", "--duration", "0");
	assert_parse_error("only letters", "--name", "a b");
	assert_parse_error("only letters", "--name", "a,b");
	assert_parse_error("1 to 64 characters", "--name", "");
	assert_parse_error("two different names", "--name", "a", "-name", "guest=b");
}

static void
test_qemu_name(void **state)
{
	struct load_opts o;
	char err[256];

	assert_int_equal(parse(&o, err, sizeof(err), "-name", "guest=web1,debug-threads=on", NULL),
	                 0);
	assert_string_equal(o.name, "web1");
	assert_int_equal(parse(&o, err, sizeof(err), "-name", "web2", NULL), 0);
	assert_string_equal(o.name, "web2");
	/* The same name twice (as after a re-exec) is fine. */
	assert_int_equal(
	    parse(&o, err, sizeof(err), "-name", "guest=w,debug-threads=on", "--name", "w", NULL),
	    0);
	assert_string_equal(o.name, "w");
}

static void
test_reexec_argv_roundtrip(void **state)
{
	char *argv[] = {"/usr/bin/vnuma-load", "--name", "vm-7", "--vcpus", "2", NULL};
	char name_arg[128], *out[sizeof(argv) / sizeof(argv[0]) + 3];
	struct load_opts o;
	char err[256];

	assert_int_equal(load_reexec_argv(5, argv, "vm-7", name_arg, sizeof(name_arg), out), 0);
	assert_string_equal(out[0], "qemu-system-x86_64");
	assert_string_equal(out[1], "-name");
	assert_string_equal(out[2], "guest=vm-7,debug-threads=on");
	assert_string_equal(out[3], "--name");
	assert_string_equal(out[6], "2");
	assert_null(out[7]);
	assert_true(load_is_qemu_argv0(out[0]));
	assert_true(load_is_qemu_argv0("/opt/x/qemu-system-x86_64"));
	assert_false(load_is_qemu_argv0(argv[0]));
	assert_false(load_is_qemu_argv0("qemu-system-x86_64.sh"));
	/* The re-executed command line parses to the same options. */
	assert_int_equal(load_opts_parse(&o, 7, out, err, sizeof(err)), 0);
	assert_string_equal(o.name, "vm-7");
	assert_int_equal(o.vcpus, 2);
	assert_int_equal(load_reexec_argv(5, argv, "vm-7", name_arg, 10, out), -ENAMETOOLONG);
}

static void
test_qemu_cell_args(void **state)
{
	static const char *const want[] = {
	    "-m",      "size=65536k",
	    "-object", "memory-backend-ram,id=cell0,size=22020096",
	    "-numa",   "node,nodeid=0,cpus=0-1,memdev=cell0",
	    "-object", "memory-backend-ram,id=cell1,size=22020096",
	    "-numa",   "node,nodeid=1,cpus=2,memdev=cell1",
	    "-object", "memory-backend-ram,id=cell2,size=23068672",
	    "-numa",   "node,nodeid=2,cpus=3,memdev=cell2",
	};
	char *argv[] = {"vnuma-load", "--name",     "c",     "--vcpus", "4", "--memory",
	                "64",         "--workload", "cells", "--cells", "3", NULL};
	char name_arg[128], *out[11 + 3 + 14];
	struct load_qemu_args qa;
	struct load_opts o, back;
	char err[256];

	assert_int_equal(load_opts_parse(&o, 11, argv, err, sizeof(err)), 0);
	assert_int_equal(load_qemu_args_build(&o, &qa), 0);
	assert_int_equal(qa.argc, 14);
	for (int i = 0; i < qa.argc; i++)
		assert_string_equal(qa.argv[i], want[i]);
	/* after the name, before the tool's own options; the result parses to the same options */
	assert_int_equal(
	    load_reexec_argv_with(11, argv, "c", name_arg, sizeof(name_arg), qa.argv, qa.argc, out),
	    0);
	assert_string_equal(out[2], "guest=c,debug-threads=on");
	assert_string_equal(out[3], "-m");
	assert_string_equal(out[16], "node,nodeid=2,cpus=3,memdev=cell2");
	assert_string_equal(out[17], "--name");
	assert_null(out[27]);
	assert_int_equal(load_opts_parse(&back, 27, out, err, sizeof(err)), 0);
	assert_int_equal(back.vcpus, 4);
	assert_int_equal(back.cells, 3);
	assert_true(back.memory_bytes == o.memory_bytes);
	load_qemu_args_free(&qa);
	assert_int_equal(qa.argc, 0);

	/* other workloads: -m alone, the size of the one RAM mapping, as QEMU shows it */
	assert_int_equal(parse(&o, err, sizeof(err), "--name", "p", "--vcpus", "4", NULL), 0);
	assert_int_equal(load_qemu_args_build(&o, &qa), 0);
	assert_int_equal(qa.argc, 2);
	assert_string_equal(qa.argv[0], "-m");
	assert_string_equal(qa.argv[1], "size=1048576k"); /* the default 1 GiB */
	load_qemu_args_free(&qa);
	assert_int_equal(parse(&o, err, sizeof(err), "--name", "p", "--memory", "1.0001", NULL), 0);
	assert_int_equal(load_qemu_args_build(&o, &qa), 0);
	assert_string_equal(qa.argv[1], "size=1032k");
	load_qemu_args_free(&qa);
	/* a cell needs at least a page of RAM */
	assert_parse_error("less than a page", "--name", "a", "--vcpus", "300", "--workload",
	                   "cells", "--cells", "300", "--memory", "1");
}

static void
pattern_make(struct load_pattern *p, enum load_workload w, int vcpus, int cells, uint64_t lines)
{
	memset(p, 0, sizeof(*p));
	p->workload = w;
	p->vcpus = vcpus;
	p->cells = cells;
	p->nr_lines = lines;
	p->hot_lines = lines;
	p->phase_s = w == LOAD_WL_PHASED || w == LOAD_WL_ADVERSE ? 10 : 0;
	p->seed = 5;
}

static void
test_slices_tile_ram(void **state)
{
	static const uint64_t lines[] = {1000, 1001, 16384, 7};
	struct load_pattern p;
	struct load_region r;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		for (int n = 1; n <= 7; n++) {
			uint64_t next = 0, min = UINT64_MAX, max = 0;

			pattern_make(&p, LOAD_WL_PRIVATE, n, 0, lines[i]);
			assert_int_equal(load_pattern_nr_slices(&p), n);
			for (int s = 0; s < n; s++) {
				load_pattern_slice_range(&p, s, &r);
				assert_true(r.first_line ==
				            next); /* in order, no gap, no overlap */
				next += r.nr_lines;
				min = r.nr_lines < min ? r.nr_lines : min;
				max = r.nr_lines > max ? r.nr_lines : max;
			}
			assert_true(next == lines[i]);
			assert_true(max - min <= 1); /* even */
		}
	}
	pattern_make(&p, LOAD_WL_SHARED, 4, 0, 1000);
	assert_int_equal(load_pattern_nr_slices(&p), 1);
	load_pattern_slice_range(&p, load_pattern_home(&p, 3, 0, NULL), &r);
	assert_true(r.first_line == 0 && r.nr_lines == 1000);
}

/* --cold 25: the slices tile the first 75 % of RAM; no access ever lands in the rest. */
static void
test_cold_tail_untouched(void **state)
{
	struct load_opts o;
	struct load_pattern p;
	struct load_region r;
	struct load_rng rng;
	char err[256];

	assert_int_equal(parse(&o, err, sizeof(err), "--name", "c", "--vcpus", "3", "--memory",
	                       "64", "--cold", "25", NULL),
	                 0);
	assert_int_equal(o.cold_pct, 25);
	load_pattern_init(&p, &o);
	assert_true(p.nr_lines == 64 * MIB / LOAD_LINE_BYTES);
	assert_true(p.hot_lines == p.nr_lines / 4 * 3);
	load_pattern_slice_range(&p, 2, &r);
	assert_true(r.first_line + r.nr_lines == p.hot_lines);
	load_rng_seed(&rng, 1, 0);
	for (int i = 0; i < 100000; i++)
		assert_true(load_pattern_pick(&r, p.hot_lines, &rng) < p.hot_lines);
	/* without --cold every line is hot */
	assert_int_equal(parse(&o, err, sizeof(err), "--name", "c", NULL), 0);
	load_pattern_init(&p, &o);
	assert_true(p.hot_lines == p.nr_lines);
}

static void
test_cells_split_evenly(void **state)
{
	static const int want[] = {0, 0, 0, 1, 1};
	struct load_pattern p;
	struct load_region r;

	pattern_make(&p, LOAD_WL_CELLS, 5, 2, 1000);
	for (int v = 0; v < 5; v++)
		assert_int_equal(load_pattern_home(&p, v, 0, NULL), want[v]);
	load_pattern_slice_range(&p, 1, &r);
	assert_true(r.first_line == 500 && r.nr_lines == 500);
	/* Every cell gets vCPUs, in order, sizes differing by at most one. */
	for (int n = 1; n <= 16; n++) {
		for (int k = 1; k <= n; k++) {
			int count[16] = {0}, prev = 0;

			pattern_make(&p, LOAD_WL_CELLS, n, k, 1000);
			for (int v = 0; v < n; v++) {
				int c = load_pattern_cell_of(&p, v);

				assert_true(c >= prev && c < k);
				prev = c;
				count[c]++;
			}
			for (int c = 0; c < k; c++)
				assert_true(count[c] == n / k || count[c] == n / k + 1);
		}
	}
}

static void
test_cell_ranges(void **state)
{
	static const struct {
		uint64_t lines;
		int cells;
		uint64_t unit; /* cells are whole multiples of it */
	} cases[] = {
	    {64 * LOAD_MIB_LINES, 3, LOAD_MIB_LINES},               /* 21 + 21 + 22 MiB */
	    {LOAD_MIB_LINES + LOAD_PAGE_LINES, 2, LOAD_PAGE_LINES}, /* 1 MiB + 4 KiB: pages */
	    {2 * LOAD_MIB_LINES, 3, LOAD_PAGE_LINES},               /* fewer MiB than cells */
	    {1000, 2, 1},                                           /* tests only: lines */
	};
	struct load_pattern p;
	struct load_region r, s;
	int first, nr;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t next = 0, min = UINT64_MAX, max = 0;

		pattern_make(&p, LOAD_WL_CELLS, 4, cases[i].cells, cases[i].lines);
		for (int c = 0; c < cases[i].cells; c++) {
			load_pattern_cell_range(&p, c, &r);
			load_pattern_slice_range(&p, c, &s); /* a cell is its vCPUs' home */
			assert_true(s.first_line == r.first_line && s.nr_lines == r.nr_lines);
			assert_true(r.first_line == next);
			assert_true(r.nr_lines % cases[i].unit == 0);
			next += r.nr_lines;
			min = r.nr_lines < min ? r.nr_lines : min;
			max = r.nr_lines > max ? r.nr_lines : max;
		}
		assert_true(next == cases[i].lines);
		assert_true(max - min <= cases[i].unit);
	}
	pattern_make(&p, LOAD_WL_CELLS, 4, 3, 64 * LOAD_MIB_LINES);
	load_pattern_cell_range(&p, 2, &r);
	assert_true(r.first_line == 42 * LOAD_MIB_LINES && r.nr_lines == 22 * LOAD_MIB_LINES);
	/* vCPUs 0-1, 2, 3: contiguous, as -numa cpus=A-B needs */
	load_pattern_cell_vcpus(&p, 0, &first, &nr);
	assert_true(first == 0 && nr == 2);
	load_pattern_cell_vcpus(&p, 1, &first, &nr);
	assert_true(first == 2 && nr == 1);
	load_pattern_cell_vcpus(&p, 2, &first, &nr);
	assert_true(first == 3 && nr == 1);
}

static void
test_phases(void **state)
{
	struct load_pattern p;
	int scratch[6], seen[6];

	pattern_make(&p, LOAD_WL_PRIVATE, 6, 0, 6000);
	assert_true(load_pattern_phase(&p, 1e6) == 0);
	for (int v = 0; v < 6; v++)
		assert_int_equal(load_pattern_home(&p, v, 0, NULL), v);

	pattern_make(&p, LOAD_WL_PHASED, 6, 0, 6000);
	assert_true(load_pattern_phase(&p, 0) == 0);
	assert_true(load_pattern_phase(&p, 9.99) == 0);
	assert_true(load_pattern_phase(&p, 10) == 1);
	assert_true(load_pattern_phase(&p, 25) == 2);
	for (int v = 0; v < 6; v++) {
		assert_int_equal(load_pattern_home(&p, v, 0, NULL), v);
		assert_int_equal(load_pattern_home(&p, v, 1, NULL), (v + 1) % 6);
		assert_int_equal(load_pattern_home(&p, v, 13, NULL), (v + 13) % 6);
	}

	pattern_make(&p, LOAD_WL_ADVERSE, 6, 0, 6000);
	for (int v = 0; v < 6; v++)
		assert_int_equal(load_pattern_home(&p, v, 0, scratch), v);
	for (uint64_t ph = 1; ph < 20; ph++) {
		memset(seen, 0, sizeof(seen));
		for (int v = 0; v < 6; v++)
			seen[load_pattern_home(&p, v, ph, scratch)]++;
		for (int s = 0; s < 6; s++)
			assert_int_equal(seen[s], 1); /* a permutation: each slice has one owner */
	}
}

static void
test_adverse_perm_replays_and_moves(void **state)
{
	int a[8], b[8], moved = 0, differs = 0;

	for (uint64_t ph = 1; ph <= 10; ph++) {
		load_pattern_adverse_perm(7, ph, 8, a);
		load_pattern_adverse_perm(7, ph, 8, b);
		assert_memory_equal(a, b, sizeof(a)); /* same seed and phase: same shuffle */
		for (int i = 0; i < 8; i++)
			moved += a[i] != i;
		load_pattern_adverse_perm(8, ph, 8, b);
		differs += memcmp(a, b, sizeof(a)) != 0;
	}
	assert_true(moved > 0);
	assert_true(differs > 0);
}

static void
test_pick_share(void **state)
{
	const uint64_t lines = 10000, draws = 200000;
	struct load_region home = {2500, 2500};
	struct load_rng rng;
	uint64_t inside = 0;
	double share, want = LOAD_LOCAL_SHARE + (1 - LOAD_LOCAL_SHARE) * 0.25;

	load_rng_seed(&rng, 3, 0);
	for (uint64_t i = 0; i < draws; i++) {
		uint64_t l = load_pattern_pick(&home, lines, &rng);

		assert_true(l < lines);
		inside += l >= home.first_line && l < home.first_line + home.nr_lines;
	}
	share = (double)inside / (double)draws;
	if (share < want - 0.01 || share > want + 0.01)
		fail_msg("share in the home slice %.4f, want %.4f", share, want);
}

static void
test_rng(void **state)
{
	struct load_rng a, b, c;
	int same = 0;

	load_rng_seed(&a, 1, 0);
	load_rng_seed(&b, 1, 0);
	load_rng_seed(&c, 1, 1);
	for (int i = 0; i < 100; i++) {
		uint64_t x = load_rng_next(&a);

		assert_true(x == load_rng_next(&b));
		same += x == load_rng_next(&c);
	}
	assert_int_equal(same, 0); /* vCPU streams differ */
	for (int i = 0; i < 1000; i++)
		assert_true(load_rng_below(&a, 3) < 3);
}

static void
test_cpulist_parse(void **state)
{
	cpu_set_t set;

	assert_int_equal(load_cpulist_parse("0-3,8\n", &set), 0);
	assert_int_equal(CPU_COUNT(&set), 5);
	assert_true(CPU_ISSET(3, &set) && CPU_ISSET(8, &set) && !CPU_ISSET(4, &set));
	assert_int_equal(load_cpulist_parse("\n", &set), 0);
	assert_int_equal(CPU_COUNT(&set), 0);
	assert_int_equal(load_cpulist_parse("5", &set), 0);
	assert_true(CPU_ISSET(5, &set));
	assert_int_equal(load_cpulist_parse("3-1", &set), -EINVAL);
	assert_int_equal(load_cpulist_parse("1,", &set), -EINVAL);
	assert_int_equal(load_cpulist_parse("1,,2", &set), -EINVAL);
	assert_int_equal(load_cpulist_parse("1-", &set), -EINVAL);
	assert_int_equal(load_cpulist_parse("a", &set), -EINVAL);
	assert_int_equal(load_cpulist_parse("0-99999", &set), -EINVAL);
	/* the one grammar (policy/idlist.h): blanks, the highest CPU, no '^' */
	assert_int_equal(load_cpulist_parse(" 0 - 1 ,4\n", &set), 0);
	assert_int_equal(CPU_COUNT(&set), 3);
	assert_int_equal(load_cpulist_parse("1023", &set), 0);
	assert_true(CPU_ISSET(1023, &set));
	assert_int_equal(load_cpulist_parse("1024", &set), -EINVAL);
	assert_int_equal(load_cpulist_parse("0-3,^1", &set), -EINVAL);
}

static void
test_node_cpus_fixture(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char root[256], path[512];
	const char *dirs[] = {"sys", "sys/devices", "sys/devices/system", "sys/devices/system/node",
	                      "sys/devices/system/node/node1"};
	cpu_set_t set;
	FILE *f;

	snprintf(root, sizeof(root), "%s/test_vnuma_load.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/sys/devices/system/node/node1/cpulist", root);
	assert_non_null(f = fopen(path, "w"));
	fputs("2-3\n", f);
	fclose(f);
	assert_int_equal(load_node_cpus(root, 1, &set), 0);
	assert_int_equal(CPU_COUNT(&set), 2);
	assert_true(CPU_ISSET(2, &set) && CPU_ISSET(3, &set));
	assert_int_equal(load_node_cpus(root, 0, &set), -ENOENT);
	unlink(path);
	for (size_t i = sizeof(dirs) / sizeof(dirs[0]); i > 0; i--) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i - 1]);
		rmdir(path);
	}
	rmdir(root);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_size_parse),
	    cmocka_unit_test(test_size_parse_rejects),
	    cmocka_unit_test(test_seconds_and_uint_parse),
	    cmocka_unit_test(test_opts_defaults),
	    cmocka_unit_test(test_opts_all),
	    cmocka_unit_test(test_opts_errors),
	    cmocka_unit_test(test_cold_tail_untouched),
	    cmocka_unit_test(test_qemu_name),
	    cmocka_unit_test(test_reexec_argv_roundtrip),
	    cmocka_unit_test(test_qemu_cell_args),
	    cmocka_unit_test(test_slices_tile_ram),
	    cmocka_unit_test(test_cells_split_evenly),
	    cmocka_unit_test(test_cell_ranges),
	    cmocka_unit_test(test_phases),
	    cmocka_unit_test(test_adverse_perm_replays_and_moves),
	    cmocka_unit_test(test_pick_share),
	    cmocka_unit_test(test_rng),
	    cmocka_unit_test(test_cpulist_parse),
	    cmocka_unit_test(test_node_cpus_fixture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

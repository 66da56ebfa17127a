/*
 * load_opts.c - vnuma-load's command line (see load_opts.h and docs/vnuma-load.1).
 *
 * The options live in one table (name, takes a value, setter); the setters check their own
 * value and load_opts_check() the combination, so every error names the option at fault.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "guest-tools/load_opts.h"
#include "guest-tools/load_pattern.h"
#include "policy/units.h"

struct load_optdef {
	const char *name;
	bool has_arg;
	int (*set)(struct load_opts *o, const char *val, char *err, size_t errlen);
};

static void __attribute__((format(printf, 3, 4)))
load_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Digits, optionally '.' and more digits; returns the length of that prefix or 0. */
static size_t
load_decimal_len(const char *s)
{
	size_t n = 0, digits = 0;

	while (isdigit((unsigned char)s[n]))
		n++, digits++;
	if (s[n] == '.') {
		n++;
		while (isdigit((unsigned char)s[n]))
			n++, digits++;
	}
	return digits > 0 ? n : 0;
}

int
load_uint_parse(const char *s, uint64_t max, uint64_t *val)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -EINVAL;
	*val = v;
	return 0;
}

int
load_seconds_parse(const char *s, double *seconds)
{
	size_t n = load_decimal_len(s);
	double v;

	if (n == 0 || s[n] != '\0')
		return -EINVAL;
	v = strtod(s, NULL);
	if (!(v > 0) || v > LOAD_SECONDS_MAX)
		return -EINVAL;
	*seconds = v;
	return 0;
}

int
load_size_parse(const char *s, uint64_t *bytes, char *err, size_t errlen)
{
	uint64_t b;

	if (units_size_parse(s, UNITS_MIB, &b, err, errlen) < 0)
		return -EINVAL;
	if (b < LOAD_MEMORY_MIN || b > LOAD_MEMORY_MAX) {
		load_errf(err, errlen, "'%s' is not from 1 MiB to 1 PiB", s);
		return -EINVAL;
	}
	*bytes =
	    (b + LOAD_MEMORY_ALIGN_BYTES - 1) / LOAD_MEMORY_ALIGN_BYTES * LOAD_MEMORY_ALIGN_BYTES;
	return 0;
}

static const char *const load_workload_names[] = {
    [LOAD_WL_PRIVATE] = "private", [LOAD_WL_SHARED] = "shared",   [LOAD_WL_CELLS] = "cells",
    [LOAD_WL_PHASED] = "phased",   [LOAD_WL_ADVERSE] = "adverse", [LOAD_WL_IDLE] = "idle",
};

int
load_workload_parse(const char *s, enum load_workload *w)
{
	for (size_t i = 0; i < sizeof(load_workload_names) / sizeof(load_workload_names[0]); i++) {
		if (strcmp(s, load_workload_names[i]) == 0) {
			*w = (enum load_workload)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *
load_workload_name(enum load_workload w)
{
	if ((size_t)w >= sizeof(load_workload_names) / sizeof(load_workload_names[0]))
		return "?";
	return load_workload_names[w];
}

double
load_opts_phase_s(const struct load_opts *o)
{
	if (o->workload != LOAD_WL_PHASED && o->workload != LOAD_WL_ADVERSE)
		return 0;
	if (o->phase_s > 0)
		return o->phase_s;
	return o->workload == LOAD_WL_PHASED ? LOAD_PHASED_DEFAULT_S : LOAD_ADVERSE_DEFAULT_S;
}

/* ---- one setter per option ---------------------------------------------------------------- */

/* Names are letters, digits and ._+:- so they survive QEMU's -name syntax and any table. */
static int
load_set_name_len(struct load_opts *o, const char *val, size_t len, char *err, size_t errlen)
{
	if (len == 0 || len > LOAD_NAME_MAX) {
		load_errf(err, errlen, "name must be 1 to %d characters", LOAD_NAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (!isalnum((unsigned char)val[i]) && strchr("._+:-", val[i]) == NULL) {
			load_errf(err, errlen,
			          "name '%.*s': only letters, digits and ._+:- allowed", (int)len,
			          val);
			return -EINVAL;
		}
	}
	if (o->name[0] != '\0' && (strlen(o->name) != len || strncmp(o->name, val, len) != 0)) {
		load_errf(err, errlen, "two different names: '%s' and '%.*s'", o->name, (int)len,
		          val);
		return -EINVAL;
	}
	memcpy(o->name, val, len);
	o->name[len] = '\0';
	return 0;
}

static int
load_set_name(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_name_len(o, val, strlen(val), err, errlen);
}

/* QEMU's "-name [guest=]NAME[,key=value...]": the name is the first element. */
static int
load_set_qemu_name(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	if (strncmp(val, "guest=", 6) == 0)
		val += 6;
	return load_set_name_len(o, val, strcspn(val, ","), err, errlen);
}

/* QEMU's -m, -object and -numa on the re-executed command line: described, not read. */
static int
load_set_qemu_ignored(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	(void)o;
	(void)val;
	(void)err;
	(void)errlen;
	return 0;
}

/*
 * An integer option from min to max into *dst, or -EINVAL with "OPT: 'VAL' is not WHAT from
 * MIN to MAX" in err.
 */
static int
load_set_int(const char *opt, const char *what, const char *val, int min, int max, int *dst,
             char *err, size_t errlen)
{
	uint64_t v;

	if (load_uint_parse(val, (uint64_t)max, &v) != 0 || v < (uint64_t)min) {
		load_errf(err, errlen, "%s: '%s' is not %s from %d to %d", opt, val, what, min,
		          max);
		return -EINVAL;
	}
	*dst = (int)v;
	return 0;
}

static int
load_set_vcpus(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_int("--vcpus", "a number", val, 1, LOAD_VCPUS_MAX, &o->vcpus, err, errlen);
}

static int
load_set_memory(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	char why[UNITS_ERR_MAX];

	if (load_size_parse(val, &o->memory_bytes, why, sizeof(why)) != 0) {
		load_errf(err, errlen,
		          "--memory: %s (a size from 1 MiB to 1 PiB, e.g. 512, 512M, 1.5G)", why);
		return -EINVAL;
	}
	return 0;
}

static int
load_set_node(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_int("--node", "a node id", val, 0, LOAD_NODE_MAX, &o->node, err, errlen);
}

static int
load_set_workload(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	if (load_workload_parse(val, &o->workload) != 0) {
		load_errf(err, errlen,
		          "--workload: '%s' is not one of private, shared, cells, phased, adverse, "
		          "idle",
		          val);
		return -EINVAL;
	}
	return 0;
}

static int
load_set_cold(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_int("--cold", "a percentage", val, 0, LOAD_COLD_MAX_PCT, &o->cold_pct, err,
	                    errlen);
}

static int
load_set_cells(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_int("--cells", "a number", val, 1, LOAD_VCPUS_MAX, &o->cells, err, errlen);
}

/* --phase, --duration and --report: seconds, each into its own field. */
static int
load_set_secs(const char *opt, const char *val, double min, double *dst, char *err, size_t errlen)
{
	if (load_seconds_parse(val, dst) != 0 || *dst < min) {
		if (min > 0)
			load_errf(err, errlen, "%s: '%s' is not a number of seconds from %g to %g",
			          opt, val, min, LOAD_SECONDS_MAX);
		else
			load_errf(err, errlen, "%s: '%s' is not a number of seconds above 0", opt,
			          val);
		return -EINVAL;
	}
	return 0;
}

static int
load_set_phase(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_secs("--phase", val, 0, &o->phase_s, err, errlen);
}

static int
load_set_duration(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_secs("--duration", val, 0, &o->duration_s, err, errlen);
}

static int
load_set_report(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	return load_set_secs("--report", val, LOAD_REPORT_MIN_S, &o->report_s, err, errlen);
}

static int
load_set_seed(struct load_opts *o, const char *val, char *err, size_t errlen)
{
	if (load_uint_parse(val, UINT64_MAX, &o->seed) != 0) {
		load_errf(err, errlen, "--seed: '%s' is not an unsigned integer", val);
		return -EINVAL;
	}
	return 0;
}

static int
load_set_flag(struct load_opts *o, const char *name)
{
	if (strcmp(name, "--mbind") == 0)
		o->mbind = true;
	else if (strcmp(name, "--pin") == 0)
		o->pin = true;
	else if (strcmp(name, "--hugepages") == 0)
		o->hugepages = true;
	else if (strcmp(name, "--no-hugepages") == 0)
		o->hugepages = false;
	else if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0)
		o->help = true;
	else
		o->version = true;
	return 0;
}

static const struct load_optdef load_optdefs[] = {
    {"--name", true, load_set_name},
    {"-name", true, load_set_qemu_name},
    {"-m", true, load_set_qemu_ignored},
    {"-object", true, load_set_qemu_ignored},
    {"-numa", true, load_set_qemu_ignored},
    {"--vcpus", true, load_set_vcpus},
    {"--memory", true, load_set_memory},
    {"--node", true, load_set_node},
    {"--mbind", false, NULL},
    {"--workload", true, load_set_workload},
    {"--cells", true, load_set_cells},
    {"--phase", true, load_set_phase},
    {"--cold", true, load_set_cold},
    {"--pin", false, NULL},
    {"--duration", true, load_set_duration},
    {"--report", true, load_set_report},
    {"--seed", true, load_set_seed},
    {"--hugepages", false, NULL},
    {"--no-hugepages", false, NULL},
    {"-h", false, NULL},
    {"--help", false, NULL},
    {"-V", false, NULL},
    {"--version", false, NULL},
};

/* ---- the parser ------------------------------------------------------------------------------ */

static const struct load_optdef *
load_optdef_find(const char *arg, size_t len)
{
	for (size_t i = 0; i < sizeof(load_optdefs) / sizeof(load_optdefs[0]); i++) {
		const char *name = load_optdefs[i].name;

		if (strlen(name) == len && strncmp(arg, name, len) == 0)
			return &load_optdefs[i];
	}
	return NULL;
}

static void
load_opts_defaults(struct load_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->vcpus = 1;
	o->memory_bytes = LOAD_MEMORY_DEFAULT;
	o->node = -1;
	o->workload = LOAD_WL_PRIVATE;
	o->seed = 1;
	o->hugepages = true;
}

/* Options that only make sense together. */
static int
load_opts_check(const struct load_opts *o, char *err, size_t errlen)
{
	if (o->name[0] == '\0') {
		load_errf(err, errlen, "--name NAME is required");
		return -EINVAL;
	}
	if (o->workload == LOAD_WL_CELLS && o->cells == 0) {
		load_errf(err, errlen, "--workload cells needs --cells K");
		return -EINVAL;
	}
	if (o->workload != LOAD_WL_CELLS && o->cells != 0) {
		load_errf(err, errlen, "--cells only applies to --workload cells");
		return -EINVAL;
	}
	if (o->cells > o->vcpus) {
		load_errf(err, errlen, "--cells %d: more cells than the %d vCPUs", o->cells,
		          o->vcpus);
		return -EINVAL;
	}
	if ((uint64_t)o->cells > o->memory_bytes / LOAD_PAGE_BYTES) {
		load_errf(err, errlen, "--cells %d: less than a page of --memory per cell",
		          o->cells);
		return -EINVAL;
	}
	if (o->phase_s > 0 && o->workload != LOAD_WL_PHASED && o->workload != LOAD_WL_ADVERSE) {
		load_errf(err, errlen, "--phase only applies to --workload phased or adverse");
		return -EINVAL;
	}
	if (o->cold_pct > 0 && o->workload == LOAD_WL_CELLS) {
		load_errf(err, errlen, "--cold does not apply to --workload cells");
		return -EINVAL;
	}
	if (o->mbind && o->node < 0) {
		load_errf(err, errlen, "--mbind needs --node N");
		return -EINVAL;
	}
	return 0;
}

/* One option at argv[*i] (and maybe its value at argv[*i + 1]). */
static int
load_opts_one(struct load_opts *o, int argc, char **argv, int *i, char *err, size_t errlen)
{
	const char *arg = argv[*i], *eq = NULL, *val = NULL;
	const struct load_optdef *def;
	size_t len = strlen(arg);

	if (strncmp(arg, "--", 2) == 0 && (eq = strchr(arg, '=')) != NULL)
		len = (size_t)(eq - arg);
	if (arg[0] != '-' || (def = load_optdef_find(arg, len)) == NULL) {
		load_errf(err, errlen, "unknown option '%s'", arg);
		return -EINVAL;
	}
	if (!def->has_arg) {
		if (eq != NULL) {
			load_errf(err, errlen, "%s takes no value", def->name);
			return -EINVAL;
		}
		return load_set_flag(o, def->name);
	}
	if (eq != NULL)
		val = eq + 1;
	else if (*i + 1 < argc)
		val = argv[++*i];
	if (val == NULL) {
		load_errf(err, errlen, "%s needs a value", def->name);
		return -EINVAL;
	}
	return def->set(o, val, err, errlen);
}

int
load_opts_parse(struct load_opts *o, int argc, char **argv, char *err, size_t errlen)
{
	int ret;

	load_opts_defaults(o);
	for (int i = 1; i < argc; i++)
		if ((ret = load_opts_one(o, argc, argv, &i, err, errlen)) != 0)
			return ret;
	if (o->help || o->version)
		return 0;
	return load_opts_check(o, err, errlen);
}

/* ---- re-executing as "QEMU" ------------------------------------------------------------------ */

bool
load_is_qemu_argv0(const char *argv0)
{
	const char *base = strrchr(argv0, '/');

	return strcmp(base != NULL ? base + 1 : argv0, LOAD_QEMU_ARGV0) == 0;
}

int
load_reexec_argv_with(int argc, char **argv, const char *name, char *name_arg, size_t name_arg_len,
                      char *const *extra, int nr_extra, char **out)
{
	int n = 0;

	if ((size_t)snprintf(name_arg, name_arg_len, "guest=%s%s", name, LOAD_QEMU_NAME_SUFFIX) >=
	    name_arg_len)
		return -ENAMETOOLONG;
	out[n++] = (char *)LOAD_QEMU_ARGV0;
	out[n++] = (char *)"-name";
	out[n++] = name_arg;
	for (int i = 0; i < nr_extra; i++)
		out[n++] = extra[i];
	for (int i = 1; i < argc; i++)
		out[n++] = argv[i];
	out[n] = NULL;
	return 0;
}

int
load_reexec_argv(int argc, char **argv, const char *name, char *name_arg, size_t name_arg_len,
                 char **out)
{
	return load_reexec_argv_with(argc, argv, name, name_arg, name_arg_len, NULL, 0, out);
}

/* Longest QEMU option value built here, with its NUL ("node,nodeid=1023,cpus=..." fits). */
#define LOAD_QEMU_ARG_MAX 128

/* Append one printf-formatted string to a; -ENOMEM. */
static int __attribute__((format(printf, 2, 3)))
load_qemu_args_add(struct load_qemu_args *a, const char *fmt, ...)
{
	char buf[LOAD_QEMU_ARG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if ((a->argv[a->argc] = strdup(buf)) == NULL)
		return -ENOMEM;
	a->argc++;
	return 0;
}

/* "-object memory-backend-ram,..." and "-numa node,..." for cell c. */
static int
load_qemu_cell_args(struct load_qemu_args *a, const struct load_pattern *p, int c)
{
	struct load_region r;
	int first, nr;
	char cpus[32];

	load_pattern_cell_range(p, c, &r);
	load_pattern_cell_vcpus(p, c, &first, &nr);
	if (nr > 1)
		snprintf(cpus, sizeof(cpus), "%d-%d", first, first + nr - 1);
	else
		snprintf(cpus, sizeof(cpus), "%d", first);
	if (load_qemu_args_add(a, "-object") < 0 ||
	    load_qemu_args_add(a, "memory-backend-ram,id=cell%d,size=%" PRIu64, c,
	                       r.nr_lines * LOAD_LINE_BYTES) < 0 ||
	    load_qemu_args_add(a, "-numa") < 0 ||
	    load_qemu_args_add(a, "node,nodeid=%d,cpus=%s,memdev=cell%d", c, cpus, c) < 0)
		return -ENOMEM;
	return 0;
}

int
load_qemu_args_build(const struct load_opts *o, struct load_qemu_args *out)
{
	struct load_pattern p;
	int cells = o->workload == LOAD_WL_CELLS && o->cells > 0 ? o->cells : 0, ret = 0;

	memset(out, 0, sizeof(*out));
	load_pattern_init(&p, o);
	if ((out->argv = calloc(2 + 4 * (size_t)cells + 1, sizeof(*out->argv))) == NULL)
		return -ENOMEM;
	if (load_qemu_args_add(out, "-m") < 0 ||
	    load_qemu_args_add(out, "size=%" PRIu64 "k", o->memory_bytes / 1024) < 0)
		ret = -ENOMEM;
	for (int c = 0; ret == 0 && c < cells; c++)
		ret = load_qemu_cell_args(out, &p, c);
	if (ret < 0)
		load_qemu_args_free(out);
	return ret;
}

void
load_qemu_args_free(struct load_qemu_args *a)
{
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	memset(a, 0, sizeof(*a));
}

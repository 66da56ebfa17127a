/*
 * lv_parse.c - libvirt's value syntaxes: cpusets/nodesets, numbers, scaled sizes; the quoting
 * of untrusted values in messages; and the QEMU pid file of a domain.
 *
 * Cpusets and nodesets are read by policy/idlist.c with IDLIST_LIBVIRT, the grammar of
 * libvirt's own parser (virBitmapParse): '^N' exclusions applied left to right, so "0-7,^3" is
 * 0-2,4-7 while "^3,0-7" is 0-7, and one trailing ','.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "host/fileio.h"
#include "host/libvirt/lv_domain.h"
#include "host/libvirt/lv_parse.h"
#include "policy/idlist.h"
#include "policy/util.h"

/* Largest pid file we read: "4194304\n" is 8 bytes; a little slack for odd writers. */
#define LV_PID_FILE_MAX_BYTES 64
/* Where libvirt's QEMU driver keeps a running domain's pid file, below the root. */
#define LV_QEMU_RUN_DIR "/run/libvirt/qemu"

static const char *
skip_blanks(const char *p)
{
	while (*p != '\0' && isspace((unsigned char)*p))
		p++;
	return p;
}

int
lv_cpuset_parse(const char *text, int limit, unsigned flags, struct lv_idset *set, char *why,
                size_t whylen)
{
	struct idlist ids;

	set->nr = 0;
	set->ids = NULL;
	if (text == NULL)
		text = "";
	if (idlist_parse(text, strlen(text), limit, flags | IDLIST_LIBVIRT, &ids, why, whylen) < 0)
		return -EINVAL;
	set->nr = idlist_ids(&ids, &set->ids);
	idlist_free(&ids);
	return 0;
}

void
lv_idset_free(struct lv_idset *set)
{
	free(set->ids);
	set->ids = NULL;
	set->nr = 0;
}

bool
lv_idset_has(const struct lv_idset *set, int id)
{
	int lo = 0, hi = set->nr - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (set->ids[mid] == id)
			return true;
		if (set->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

const char *
lv_mem_mode_name(enum lv_mem_mode mode)
{
	switch (mode) {
	case LV_MEM_MODE_STRICT:
		return "strict";
	case LV_MEM_MODE_PREFERRED:
		return "preferred";
	case LV_MEM_MODE_INTERLEAVE:
		return "interleave";
	case LV_MEM_MODE_RESTRICTIVE:
		return "restrictive";
	}
	return "?";
}

int
lv_parse_u64(const char *text, uint64_t max, uint64_t *v, const char **why)
{
	const char *p = skip_blanks(text ? text : "");
	uint64_t n = 0;

	if (!isdigit((unsigned char)*p)) {
		*why = "is not an unsigned number";
		return -EINVAL;
	}
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (d > max || n > (max - d) / 10) {
			*why = "is too large";
			return -EINVAL;
		}
		n = n * 10 + d;
	}
	if (*skip_blanks(p) != '\0') {
		*why = "is not an unsigned number";
		return -EINVAL;
	}
	*v = n;
	return 0;
}

/* Bytes per unit for libvirt's size suffixes (virScaleInteger); 0 if unknown. */
static uint64_t
size_unit_bytes(const char *unit)
{
	static const char prefixes[] = "kmgtpe";
	const char *at;
	uint64_t base, scale = 1;

	if (unit == NULL || *unit == '\0')
		return 1024; /* domain XML sizes default to KiB */
	if (strcasecmp(unit, "b") == 0 || strcasecmp(unit, "byte") == 0 ||
	    strcasecmp(unit, "bytes") == 0)
		return 1;
	at = strchr(prefixes, tolower((unsigned char)unit[0]));
	if (at == NULL)
		return 0;
	if (unit[1] == '\0' || strcasecmp(unit + 1, "iB") == 0)
		base = 1024;
	else if (tolower((unsigned char)unit[1]) == 'b' && unit[2] == '\0')
		base = 1000;
	else
		return 0;
	for (const char *q = prefixes; q <= at; q++)
		scale *= base;
	return scale;
}

int
lv_parse_size_kib(const char *value, const char *unit, uint64_t *kib, const char **why)
{
	uint64_t scale = size_unit_bytes(unit);
	uint64_t n;
	int ret;

	if (scale == 0) {
		*why = "is not a known unit (b, KiB, MiB, GiB, TiB, KB, MB, ...)";
		return -EINVAL;
	}
	if ((ret = lv_parse_u64(value, UINT64_MAX, &n, why)) < 0)
		return ret;
	if (n > UINT64_MAX / scale) {
		*why = "is too large";
		return -EINVAL;
	}
	n *= scale;
	*kib = n / 1024 + (n % 1024 != 0);
	return 0;
}

const char *
lv_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0, i;

	if (len == 0)
		return buf;
	for (i = 0; s != NULL && s[i] != '\0' && i < LV_QUOTE_CHARS; i++) {
		unsigned char c = (unsigned char)s[i];
		int n;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			n = snprintf(buf + o, len - o, "%c", c);
		else
			n = snprintf(buf + o, len - o, "\\x%02x", c);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
	buf[o] = '\0';
	if (s != NULL && s[i] != '\0' && o + 4 <= len)
		memcpy(buf + o, "...", 4);
	return buf;
}

/* A domain name usable as a file name: not empty, no '/', not "." or "..". */
static bool
pid_name_ok(const char *name)
{
	return name != NULL && name[0] != '\0' && strchr(name, '/') == NULL &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int
lv_domain_pid_read(const char *root, const char *name, int *pid)
{
	char path[PATH_MAX], *data = NULL;
	const char *why;
	uint64_t v;
	size_t len;
	int n, ret;

	*pid = 0;
	if (!pid_name_ok(name))
		return -EINVAL;
	if (root == NULL || strcmp(root, "/") == 0)
		root = "";
	n = snprintf(path, sizeof(path), "%s%s/%s.pid", root, LV_QEMU_RUN_DIR, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if ((ret = fileio_read(path, LV_PID_FILE_MAX_BYTES, &data, &len)) < 0)
		return ret == -EFBIG ? -EINVAL : ret;
	ret = -EINVAL;
	if (strlen(data) == len && lv_parse_u64(data, INT_MAX, &v, &why) == 0 && v > 0) {
		*pid = (int)v;
		ret = 0;
	}
	free(data);
	return ret;
}

/*
 * units.c - sizes and rates: the grammar is in units.h.
 */
#include "policy/units.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "policy/util.h"

/* Bytes of the caller's text quoted in a message; longer values end in "...". */
#define UNITS_QUOTE_CHARS 40

/* One unit and its size in bytes. */
struct units_unit {
	const char *name;
	uint64_t bytes;
};

static const struct units_unit units_table[] = {
    {"B", 1},           {"K", UNITS_KIB},         {"KiB", UNITS_KIB},
    {"M", UNITS_MIB},   {"MiB", UNITS_MIB},       {"G", UNITS_GIB},
    {"GiB", UNITS_GIB}, {"T", (uint64_t)1 << 40}, {"TiB", (uint64_t)1 << 40},
};

/* Bytes of unit u[0..n) (any case), or 0 when it is none. */
static uint64_t
units_unit_bytes(const char *u, size_t n)
{
	for (size_t i = 0; i < sizeof(units_table) / sizeof(units_table[0]); i++)
		if (strlen(units_table[i].name) == n && strncasecmp(u, units_table[i].name, n) == 0)
			return units_table[i].bytes;
	return 0;
}

/*
 * s as a number and a unit, the unit ending unit_len_cut bytes before the end of s (the "/s"
 * of a rate); no unit is bare_unit_bytes.  The exact product, rounded to a byte, in *bytes.
 */
static int
units_value_parse(const char *s, size_t unit_len_cut, uint64_t bare_unit_bytes, uint64_t *bytes,
                  char *err, size_t errlen)
{
	const char *p = s, *unit;
	unsigned __int128 whole = 0, frac = 0, scale = 1, total;
	uint64_t mult;
	bool big = false;
	char q[UNITS_QUOTE_CHARS + 4];
	size_t unit_len;

	util_quote(s, strlen(s), UNITS_QUOTE_CHARS, q, sizeof(q));
	if (*p < '0' || *p > '9') {
		util_errf(err, errlen, "'%s' is not a number with a unit (e.g. 8G or 512MiB)", q);
		return -EINVAL;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (unsigned)(*p - '0');
		big = big || whole > UINT64_MAX;
		if (big)
			whole = 0;
	}
	if (*p == '.') {
		int d = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, d++) {
			if (d == UNITS_FRAC_DIGITS_MAX) {
				util_errf(err, errlen, "'%s' has more than %d decimals", q,
				          UNITS_FRAC_DIGITS_MAX);
				return -EINVAL;
			}
			frac = frac * 10 + (unsigned)(*p - '0');
			scale *= 10;
		}
		if (d == 0) {
			util_errf(err, errlen, "'%s' has no digit after its '.'", q);
			return -EINVAL;
		}
	}
	unit = p;
	unit_len = strlen(unit) - unit_len_cut;
	mult = unit_len == 0 ? bare_unit_bytes : units_unit_bytes(unit, unit_len);
	if (mult == 0) {
		if (unit_len == 0)
			util_errf(err, errlen, "'%s' has no unit (use B, K, M, G or T, e.g. 512M)",
			          q);
		else if (unit_len == 2 && strchr("KkMmGgTt", unit[0]) &&
		         (unit[1] == 'B' || unit[1] == 'b'))
			util_errf(err, errlen,
			          "'%s': '%.2s' is ambiguous (1000 or 1024?); say %ciB or %c, both "
			          "binary",
			          q, unit, unit[0], unit[0]);
		else
			util_errf(
			    err, errlen,
			    "'%s': '%.*s' is not a unit (use B, K, M, G or T, with or without iB)",
			    q, (int)(unit_len < 16 ? unit_len : 16), unit);
		return -EINVAL;
	}
	total = whole * mult + (frac * mult + scale / 2) / scale;
	if (big || total > UINT64_MAX) {
		util_errf(err, errlen, "'%s' is too large (the most is 16 EiB)", q);
		return -EINVAL;
	}
	*bytes = (uint64_t)total;
	return 0;
}

int
units_size_parse(const char *s, uint64_t bare_unit_bytes, uint64_t *bytes, char *err, size_t errlen)
{
	return units_value_parse(s, 0, bare_unit_bytes, bytes, err, errlen);
}

int
units_rate_parse(const char *s, uint64_t *bytes_s, char *err, size_t errlen)
{
	size_t n = strlen(s);
	char q[UNITS_QUOTE_CHARS + 4];

	util_quote(s, n, UNITS_QUOTE_CHARS, q, sizeof(q));
	if (n > 0 && strspn(s, "0123456789.") == n) {
		util_errf(err, errlen,
		          "'%s' has no unit (a rate is a size per second, e.g. 256MiB/s)", q);
		return -EINVAL;
	}
	if (n < 2 || strcmp(s + n - 2, "/s") != 0) {
		util_errf(err, errlen, "'%s' is not a rate (a size per second, e.g. 256MiB/s)", q);
		return -EINVAL;
	}
	return units_value_parse(s, 2, 0, bytes_s, err, errlen);
}

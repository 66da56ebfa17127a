/*
 * config_value.c - the value parsers of the configuration file (config.h): one per type of row
 * in config.c's key table (duration, rate, mode, boolean, choice, path, group), each checking
 * syntax, unit and bounds, and the quoting of an offending value in their messages.
 */
#include "agent/config_internal.h"
#include "agent/metrics_http.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/units.h"
#include "policy/util.h"

/*
 * Digits accepted in the whole / fractional part of a number ("2.5s"): 10 holds the largest
 * valid value in the smallest unit (1073741824KiB/s); 10 + 9 digits fit a uint64_t.
 */
#define CONFIG_INT_DIGITS_MAX  10
#define CONFIG_FRAC_DIGITS_MAX 9

/* ---- quoting values for messages ------------------------------------------------------------- */

/*
 * Copy at most CONFIG_QUOTE_CHARS characters of s into buf for a message: control bytes,
 * quotes and backslashes escaped, a longer value cut with "..." (between UTF-8 characters,
 * never inside one).  Returns buf.
 */
const char *
config_quote(const char *s, char *buf, size_t len)
{
	size_t off = 0, chars = 0;

	for (size_t i = 0; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];
		bool cut = (c & 0xc0) != 0x80 && chars++ == CONFIG_QUOTE_CHARS;
		char tmp[8];

		if (cut)
			snprintf(tmp, sizeof(tmp), "...");
		else if (c < 0x20 || c == 0x7f)
			snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else if (c == '"' || c == '\\')
			snprintf(tmp, sizeof(tmp), "\\%c", c);
		else
			snprintf(tmp, sizeof(tmp), "%c", c);
		if (off + strlen(tmp) >= len)
			break;
		memcpy(buf + off, tmp, strlen(tmp));
		off += strlen(tmp);
		if (cut)
			break;
	}
	buf[off] = '\0';
	return buf;
}

/* ---- value parsers: each returns 0, or -EINVAL with the message (after "key: ") in msg ------ */

/*
 * Parse "<digits>[.<digits>]" at *p into *out and advance *p.  The digits are gathered into one
 * integer and divided by a power of ten once, so "0.1" is exactly the double nearest 0.1 (and
 * compares equal to a bound written 0.1).  -EINVAL when there is no number or too many
 * decimals, -ERANGE when the whole part has more digits than anything valid.
 */
static int
config_number_parse(const char **p, double *out)
{
	const char *s = *p;
	uint64_t mant = 0, scale = 1;
	int digits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (digits < CONFIG_INT_DIGITS_MAX)
			mant = mant * 10 + (uint64_t)(*s - '0');
	}
	if (digits == 0)
		return -EINVAL;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (int d = 0; *s >= '0' && *s <= '9'; s++, d++) {
			if (d == CONFIG_FRAC_DIGITS_MAX)
				return -EINVAL;
			mant = mant * 10 + (uint64_t)(*s - '0');
			scale *= 10;
		}
	}
	*p = s;
	*out = (double)mant / (double)scale;
	return digits > CONFIG_INT_DIGITS_MAX ? -ERANGE : 0;
}

struct config_unit {
	const char *name;
	double mul, div; /* to the stored unit (seconds, MiB/s): value * mul / div */
};

static const struct config_unit duration_units[] = {
    {"ms", 1, 1000},
    {"s", 1, 1},
    {"min", 60, 1},
    {NULL, 0, 0},
};

static const struct config_unit percent_units[] = {
    {"%", 1, 1},
    {NULL, 0, 0},
};

/* Check v against the row's numeric bounds. */
static int
config_bounds_check(const struct config_key *row, const char *text, double v, char *msg,
                    size_t msglen)
{
	char q[QUOTE_BUF];

	if (v > row->max || v < row->min || (row->min_exclusive && v == row->min)) {
		snprintf(msg, msglen, "%s is out of range (%s)", config_quote(text, q, sizeof(q)),
		         row->range);
		return -EINVAL;
	}
	return 0;
}

/* A number followed by one of units; what and example name the kind for messages. */
static int
config_unit_number_parse(const struct config_key *row, const char *text,
                         const struct config_unit *units, const char *what, const char *example,
                         union config_value *v, char *msg, size_t msglen)
{
	char q[QUOTE_BUF];
	const char *p = text;
	double num = 0;
	int rc = config_number_parse(&p, &num);

	config_quote(text, q, sizeof(q));
	if (rc == 0 && *p == '\0') {
		snprintf(msg, msglen, "\"%s\" has no unit (use e.g. %s)", q, example);
		return -EINVAL;
	}
	for (const struct config_unit *u = units; rc != -EINVAL && u->name != NULL; u++) {
		if (strcmp(p, u->name) != 0)
			continue;
		if (rc == -ERANGE) {
			snprintf(msg, msglen, "%s is out of range (%s)", q, row->range);
			return -EINVAL;
		}
		v->num = num * u->mul / u->div;
		return config_bounds_check(row, text, v->num, msg, msglen);
	}
	snprintf(msg, msglen, "\"%s\" is not %s (use e.g. %s)", q, what, example);
	return -EINVAL;
}

/* A rate in the grammar of policy/units.h, stored in MiB/s. */
static int
config_rate_parse(const struct config_key *row, const char *text, union config_value *v, char *msg,
                  size_t msglen)
{
	uint64_t bytes_s;

	if (units_rate_parse(text, &bytes_s, msg, msglen) < 0)
		return -EINVAL;
	v->num = (double)bytes_s / (double)UNITS_MIB;
	return config_bounds_check(row, text, v->num, msg, msglen);
}

static int
config_mode_parse(const struct config_key *row, const char *text, union config_value *v, char *msg,
                  size_t msglen)
{
	char q[QUOTE_BUF];
	unsigned long mode = 0;
	size_t n = strlen(text);

	config_quote(text, q, sizeof(q));
	if (text[0] != '0' || strspn(text, "01234567") != n) {
		snprintf(msg, msglen, "\"%s\" is not an octal mode (use e.g. 0660)", q);
		return -EINVAL;
	}
	for (size_t i = 0; i < n && mode <= 07777; i++)
		mode = mode * 8 + (unsigned long)(text[i] - '0');
	if (config_bounds_check(row, text, (double)mode, msg, msglen) < 0)
		return -EINVAL;
	v->mode = (mode_t)mode;
	return 0;
}

static int
config_bool_parse(const char *text, union config_value *v, char *msg, size_t msglen)
{
	static const char *const yes[] = {"yes", "true", "on"};
	static const char *const no[] = {"no", "false", "off"};
	char q[QUOTE_BUF];

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(text, yes[i]) == 0 || strcmp(text, no[i]) == 0) {
			v->yes = strcmp(text, yes[i]) == 0;
			return 0;
		}
	}
	snprintf(msg, msglen, "\"%s\" is not a boolean (use yes or no)",
	         config_quote(text, q, sizeof(q)));
	return -EINVAL;
}

static int
config_enum_parse(const struct config_key *row, const char *text, union config_value *v, char *msg,
                  size_t msglen)
{
	struct util_buf list = {0};
	char q[QUOTE_BUF];

	for (int i = 0; row->choices[i] != NULL; i++) {
		if (strcmp(text, row->choices[i]) == 0) {
			v->choice = i;
			return 0;
		}
	}
	for (int i = 0; row->choices[i] != NULL; i++)
		util_buf_printf(&list, "%s%s", i ? ", " : "", row->choices[i]);
	snprintf(msg, msglen, "\"%s\" is not one of: %s", config_quote(text, q, sizeof(q)),
	         list.data);
	free(list.data);
	return -EINVAL;
}

static int
config_path_parse(const struct config_key *row, const char *text, union config_value *v, char *msg,
                  size_t msglen)
{
	char q[QUOTE_BUF];
	size_t n = strlen(text);

	config_quote(text, q, sizeof(q));
	if (text[0] != '/') {
		snprintf(msg, msglen, "\"%s\" is not an absolute path", q);
		return -EINVAL;
	}
	if (n > row->max_len) {
		snprintf(msg, msglen, "path is too long (%zu bytes; %s)", n, row->range);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
			snprintf(msg, msglen, "\"%s\" contains a control character", q);
			return -EINVAL;
		}
	}
	if (text[n - 1] == '/') {
		snprintf(msg, msglen, "\"%s\" names a directory, not a file", q);
		return -EINVAL;
	}
	v->str = text;
	return 0;
}

static int
config_group_parse(const struct config_key *row, const char *text, union config_value *v, char *msg,
                   size_t msglen)
{
	char q[QUOTE_BUF];
	size_t n = strlen(text);
	bool ok = n <= row->max_len && ((text[0] >= 'a' && text[0] <= 'z') || text[0] == '_') &&
	          strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;

	if (!ok) {
		snprintf(msg, msglen,
		         "\"%s\" is not a group name (use [a-z_][a-z0-9_-]*, at most %zu "
		         "characters)",
		         config_quote(text, q, sizeof(q)), row->max_len);
		return -EINVAL;
	}
	v->str = text;
	return 0;
}

/* An address for the metrics' HTTP server (metrics_addr_parse). */
static int
config_listen_parse(const char *text, union config_value *v, char *msg, size_t msglen)
{
	struct metrics_addr addr;

	if (metrics_addr_parse(text, &addr, msg, msglen) < 0)
		return -EINVAL;
	v->str = text;
	return 0;
}

int
config_value_parse(const struct config_key *row, const char *text, union config_value *v, char *msg,
                   size_t msglen)
{
	switch (row->type) {
	case CONFIG_DURATION:
		return config_unit_number_parse(row, text, duration_units, "a duration",
		                                "1s or 500ms", v, msg, msglen);
	case CONFIG_RATE:
		return config_rate_parse(row, text, v, msg, msglen);
	case CONFIG_PERCENT:
		return config_unit_number_parse(row, text, percent_units, "a percentage", "0.5%", v,
		                                msg, msglen);
	case CONFIG_MODE:
		return config_mode_parse(row, text, v, msg, msglen);
	case CONFIG_BOOL:
		return config_bool_parse(text, v, msg, msglen);
	case CONFIG_ENUM:
		return config_enum_parse(row, text, v, msg, msglen);
	case CONFIG_PATH:
		return config_path_parse(row, text, v, msg, msglen);
	case CONFIG_GROUP:
		return config_group_parse(row, text, v, msg, msglen);
	case CONFIG_LISTEN:
		return config_listen_parse(text, v, msg, msglen);
	}
	snprintf(msg, msglen, "has an unknown type"); /* not reached: every type is handled */
	return -EINVAL;
}

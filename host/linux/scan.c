/* scan.c - bounded text scanning and the root-relative file reader for host/linux/. */
#include "host/linux/scan.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/fileio.h"
#include "policy/idlist.h"
#include "policy/util.h"

static bool
scan_is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int
scan_digit(char c, int base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
linux_scan_line(struct linux_scan *s, struct linux_scan *line)
{
	const char *nl;

	if (linux_scan_empty(s))
		return false;
	nl = memchr(s->p, '\n', linux_scan_len(s));
	line->p = s->p;
	line->end = nl != NULL ? nl : s->end;
	s->p = nl != NULL ? nl + 1 : s->end;
	return true;
}

void
linux_scan_blanks(struct linux_scan *s)
{
	while (s->p < s->end && scan_is_blank(*s->p))
		s->p++;
}

bool
linux_scan_char(struct linux_scan *s, char c)
{
	if (s->p >= s->end || *s->p != c)
		return false;
	s->p++;
	return true;
}

bool
linux_scan_literal(struct linux_scan *s, const char *lit)
{
	size_t n = strlen(lit);

	if (linux_scan_len(s) < n || memcmp(s->p, lit, n) != 0)
		return false;
	s->p += n;
	return true;
}

bool
linux_scan_token(struct linux_scan *s, struct linux_scan *tok)
{
	const char *q = s->p;

	while (q < s->end && !scan_is_blank(*q) && *q != '\n')
		q++;
	if (q == s->p)
		return false;
	tok->p = s->p;
	tok->end = q;
	s->p = q;
	return true;
}

bool
linux_scan_equals(const struct linux_scan *s, const char *lit)
{
	size_t n = strlen(lit);

	return linux_scan_len(s) == n && memcmp(s->p, lit, n) == 0;
}

void
linux_scan_trim(struct linux_scan *s)
{
	while (s->end > s->p && scan_is_blank(s->end[-1]))
		s->end--;
	if (s->end > s->p && s->end[-1] == '\n')
		s->end--;
	while (s->end > s->p && scan_is_blank(s->end[-1]))
		s->end--;
}

/* Unsigned number in base 10 or 16, overflow-checked. */
static int
scan_unsigned(struct linux_scan *s, int base, uint64_t *v)
{
	const char *q = s->p;
	uint64_t acc = 0;
	int d;

	while (q < s->end && (d = scan_digit(*q, base)) >= 0) {
		if (__builtin_mul_overflow(acc, (uint64_t)base, &acc) ||
		    __builtin_add_overflow(acc, (uint64_t)d, &acc))
			return -EINVAL;
		q++;
	}
	if (q == s->p)
		return -EINVAL;
	s->p = q;
	*v = acc;
	return 0;
}

int
linux_scan_u64(struct linux_scan *s, uint64_t *v)
{
	return scan_unsigned(s, 10, v);
}

int
linux_scan_x64(struct linux_scan *s, uint64_t *v)
{
	return scan_unsigned(s, 16, v);
}

int
linux_scan_s64(struct linux_scan *s, int64_t *v)
{
	struct linux_scan save = *s;
	bool neg = linux_scan_char(s, '-');
	uint64_t mag;

	if (scan_unsigned(s, 10, &mag) < 0 || mag > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
		*s = save;
		return -EINVAL;
	}
	if (neg)
		*v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	else
		*v = (int64_t)mag;
	return 0;
}

int
linux_scan_id(struct linux_scan *s, int limit, int *v)
{
	struct linux_scan save = *s;
	uint64_t x;

	if (scan_unsigned(s, 10, &x) < 0)
		return -EINVAL;
	if (x >= (uint64_t)limit) {
		*s = save;
		return -EFBIG;
	}
	*v = (int)x;
	return 0;
}

int
linux_scan_int(struct linux_scan *s, int *v)
{
	struct linux_scan save = *s;
	int64_t x;

	if (linux_scan_s64(s, &x) < 0)
		return -EINVAL;
	if (x < INT_MIN || x > INT_MAX) {
		*s = save;
		return -EINVAL;
	}
	*v = (int)x;
	return 0;
}

int
linux_scan_idlist(struct linux_scan *s, int limit, int **ids, int *nr)
{
	struct idlist set;
	int ret;

	*ids = NULL;
	*nr = 0;
	ret = idlist_parse(s->p, linux_scan_len(s), limit, IDLIST_EMPTY_OK, &set, NULL, 0);
	if (ret < 0)
		return ret;
	*nr = idlist_ids(&set, ids);
	idlist_free(&set);
	s->p = s->end;
	return 0;
}

int
linux_file_read(const char *root, size_t max_bytes, char **data, size_t *len, const char *fmt, ...)
{
	size_t rlen = root != NULL ? strlen(root) : 0;
	char path[PATH_MAX];
	va_list ap;
	int n, ret;

	*data = NULL;
	*len = 0;
	while (rlen > 0 && root[rlen - 1] == '/') /* "/" and "" both mean the real root */
		rlen--;
	if (rlen >= sizeof(path))
		return -ENAMETOOLONG;
	if (rlen > 0)
		memcpy(path, root, rlen);
	path[rlen] = '\0';
	va_start(ap, fmt);
	n = vsnprintf(path + rlen, sizeof(path) - rlen, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path) - rlen)
		return -ENAMETOOLONG;
	ret = fileio_read(path, max_bytes, data, len);
	return ret == -ESRCH ? -ENOENT : ret;
}

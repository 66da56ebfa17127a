/*
 * util.c - allocation wrappers, the PCG32 generator and node-mask helpers.
 */
#include "policy/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/idlist.h"

static void
util_oom(size_t size)
{
	fprintf(stderr, "vnumad: out of memory allocating %zu bytes\n", size);
	abort();
}

void *
xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		util_oom(size);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (p == NULL)
		util_oom(nmemb * size);
	return p;
}

void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		util_oom(SIZE_MAX);
	p = realloc(ptr, (nmemb * size) != 0 ? nmemb * size : 1);
	if (p == NULL)
		util_oom(nmemb * size);
	return p;
}

char *
xstrdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = xmalloc(len);

	memcpy(p, s, len);
	return p;
}

void
util_array_reserve(void **arr, size_t *cap, size_t need, size_t elem_size)
{
	size_t ncap;

	if (need <= *cap)
		return;
	ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	*arr = xreallocarray(*arr, ncap, elem_size);
	*cap = ncap;
}

void
util_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *
util_quote(const char *s, size_t n, size_t max_chars, char *buf, size_t len)
{
	size_t shown = n < max_chars ? n : max_chars, i;

	if (shown > len - 4)
		shown = len - 4;
	for (i = 0; i < shown; i++)
		buf[i] = (s[i] >= ' ' && s[i] <= '~') ? s[i] : '?';
	buf[i] = '\0';
	if (shown < n)
		strcpy(buf + i, "...");
	return buf;
}

void
util_buf_printf(struct util_buf *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort(); /* only an invalid format can get here: a bug */
	util_array_reserve((void **)&buf->data, &buf->cap, buf->len + (size_t)n + 1, 1);
	va_start(ap, fmt);
	vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf->len += (size_t)n;
}

void
util_rng_seed(struct util_rng *rng, uint64_t seed, uint64_t stream)
{
	rng->state = 0;
	rng->inc = (stream << 1) | 1u;
	util_rng_u32(rng);
	rng->state += seed;
	util_rng_u32(rng);
}

uint32_t
util_rng_u32(struct util_rng *rng)
{
	uint64_t old = rng->state;
	uint32_t xorshifted, rot;

	rng->state = old * 6364136223846793005ULL + rng->inc;
	xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
	rot = (uint32_t)(old >> 59u);
	return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

double
util_rng_double(struct util_rng *rng)
{
	return util_rng_u32(rng) * (1.0 / 4294967296.0);
}

uint32_t
util_rng_below(struct util_rng *rng, uint32_t n)
{
	/* Lemire's multiply-shift; the tiny bias is irrelevant for simulation noise. */
	return (uint32_t)(((uint64_t)util_rng_u32(rng) * n) >> 32);
}

uint32_t
util_rng_poisson(struct util_rng *rng, double lambda)
{
	if (lambda <= 0)
		return 0;
	if (lambda < 30) {
		/* Knuth's multiplication method. */
		double l = exp(-lambda), p = 1.0;
		uint32_t k = 0;

		do {
			k++;
			p *= util_rng_double(rng);
		} while (p > l);
		return k - 1;
	}
	/* Normal approximation with continuity correction (Box-Muller). */
	double u1 = util_rng_double(rng), u2 = util_rng_double(rng);
	double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
	double v = floor(lambda + sqrt(lambda) * z + 0.5);

	return v < 0 ? 0 : (uint32_t)v;
}

int
nodemask_weight(uint64_t mask)
{
	return __builtin_popcountll(mask);
}

int
nodemask_first(uint64_t mask)
{
	return mask ? __builtin_ctzll(mask) : -1;
}

int
nodemask_last(uint64_t mask)
{
	return mask ? 63 - __builtin_clzll(mask) : -1;
}

int
nodemask_parse(const char *s, unsigned flags, uint64_t *mask, char *err, size_t errlen)
{
	struct idlist set;
	int ret;

	if ((ret = idlist_parse(s, strlen(s), UTIL_MAX_NODES, flags & ~IDLIST_CPUS, &set, err,
	                        errlen)) < 0)
		return ret;
	*mask = set.nr_words > 0 ? set.words[0] : 0; /* an empty list allocates nothing */
	idlist_free(&set);
	return 0;
}

int
nodemask_check_host(uint64_t mask, int nr_nodes, char *err, size_t errlen)
{
	uint64_t host = nr_nodes > 0 ? nodemask_all_of(nr_nodes) : 0;
	uint64_t beyond = mask & ~host;
	char bad[NODEMASK_STR_MAX], have[NODEMASK_STR_MAX];

	if (beyond == 0)
		return 0;
	nodemask_format(beyond, bad, sizeof(bad));
	if (host == 0)
		snprintf(have, sizeof(have), "none");
	else
		nodemask_format(host, have, sizeof(have));
	util_errf(err, errlen, "%s %s %s this host's nodes (%s)",
	          nodemask_weight(beyond) == 1 ? "node" : "nodes", bad,
	          nodemask_weight(beyond) == 1 ? "is not one of" : "are not among", have);
	return -EINVAL;
}

char *
nodemask_format(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;
	int i = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	while (i < UTIL_MAX_NODES) {
		int j;

		if (!nodemask_test(mask, i)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < UTIL_MAX_NODES && nodemask_test(mask, j + 1); j++)
			;
		int n = (j == i) ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", i)
		                 : snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", i, j);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
		i = j + 1;
	}
	return buf;
}

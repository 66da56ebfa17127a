/*
 * idlist.c - node and CPU lists ("0-3,8,10-11"): the grammar is in idlist.h.
 */
#include "policy/idlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Bytes of the caller's text quoted in a message; longer items end in "...". */
#define IDLIST_QUOTE_CHARS 40
/* Digits of an over-limit id quoted in a message ("node 99999...9 is above ..."). */
#define IDLIST_DIGITS_SHOWN 24
#define IDLIST_WORD_BITS    64

/* The text being parsed, what the caller allows, and where messages go. */
struct idlist_scan {
	const char *p;
	const char *end;
	int limit;
	unsigned flags;
	char *err;
	size_t errlen;
};

static bool
idlist_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool
idlist_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *
idlist_noun(unsigned flags)
{
	return (flags & IDLIST_CPUS) ? "CPU" : "node";
}

static void
idlist_skip_blanks(struct idlist_scan *sc)
{
	while (sc->p < sc->end && idlist_blank(*sc->p))
		sc->p++;
}

/* "'ITEM' why": the item from start up to the next ',' (or the end), blanks cut off. */
static int
idlist_item_error(struct idlist_scan *sc, const char *start, const char *why)
{
	const char *e = start;
	char q[IDLIST_QUOTE_CHARS + 4];

	while (e < sc->end && *e != ',')
		e++;
	while (e > start && idlist_blank(e[-1]))
		e--;
	util_errf(sc->err, sc->errlen, "'%s' %s",
	          util_quote(start, (size_t)(e - start), IDLIST_QUOTE_CHARS, q, sizeof(q)), why);
	return -EINVAL;
}

/*
 * Decimal digits at sc->p (the caller checked there is one) into *v; all the digits are
 * consumed, and an id at or above the limit, however long, is -EFBIG with its message.
 */
static int
idlist_number(struct idlist_scan *sc, int *v)
{
	const char *start = sc->p;
	long long n = 0;
	bool big = false;

	for (; sc->p < sc->end && idlist_digit(*sc->p); sc->p++) {
		if (!big)
			n = n * 10 + (*sc->p - '0');
		if (n >= sc->limit)
			big = true;
	}
	if (big) {
		int shown = (int)(sc->p - start);

		util_errf(sc->err, sc->errlen, "%s %.*s%s is above the highest supported (%d)",
		          idlist_noun(sc->flags),
		          shown < IDLIST_DIGITS_SHOWN ? shown : IDLIST_DIGITS_SHOWN, start,
		          shown > IDLIST_DIGITS_SHOWN ? "..." : "", sc->limit - 1);
		return -EFBIG;
	}
	*v = (int)n;
	return 0;
}

/* Room for ids up to hi (below the limit, checked by the caller), new words cleared. */
static void
idlist_grow(struct idlist *set, int hi)
{
	int need = hi / IDLIST_WORD_BITS + 1;

	if (need <= set->nr_words)
		return;
	set->words = xreallocarray(set->words, (size_t)need, sizeof(uint64_t));
	memset(set->words + set->nr_words, 0, (size_t)(need - set->nr_words) * sizeof(uint64_t));
	set->nr_words = need;
}

static void
idlist_set_range(struct idlist *set, int lo, int hi, bool on)
{
	if (on)
		idlist_grow(set, hi);
	else if (hi >= set->nr_words * IDLIST_WORD_BITS)
		hi = set->nr_words * IDLIST_WORD_BITS - 1; /* nothing there to clear */
	for (int id = lo; id <= hi; id++) {
		uint64_t bit = (uint64_t)1 << (id % IDLIST_WORD_BITS);

		if (on)
			set->words[id / IDLIST_WORD_BITS] |= bit;
		else
			set->words[id / IDLIST_WORD_BITS] &= ~bit;
	}
}

/* One item ("N", "N-M" or "^N") at sc->p, applied to set; sc->p ends past its blanks. */
static int
idlist_item(struct idlist_scan *sc, struct idlist *set)
{
	const char *start = sc->p;
	bool exclude = false;
	int lo, hi, ret;

	if (*sc->p == '^') {
		if (!(sc->flags & IDLIST_LIBVIRT))
			return idlist_item_error(sc, start,
			                         "is an exclusion ('^N'), not allowed here");
		exclude = true;
		sc->p++;
		idlist_skip_blanks(sc);
	}
	if (sc->p == sc->end || !idlist_digit(*sc->p))
		return idlist_item_error(sc, start, "is not a number");
	if ((ret = idlist_number(sc, &lo)) < 0)
		return ret;
	hi = lo;
	idlist_skip_blanks(sc);
	if (sc->p < sc->end && *sc->p == '-') {
		if (exclude)
			return idlist_item_error(sc, start, "excludes a range: '^' takes one id");
		sc->p++;
		idlist_skip_blanks(sc);
		if (sc->p == sc->end || !idlist_digit(*sc->p))
			return idlist_item_error(sc, start, "is not a range N-M");
		if ((ret = idlist_number(sc, &hi)) < 0)
			return ret;
		if (hi < lo) {
			util_errf(sc->err, sc->errlen, "range %d-%d runs backwards", lo, hi);
			return -EINVAL;
		}
		idlist_skip_blanks(sc);
	}
	if (sc->p < sc->end && *sc->p != ',')
		return idlist_item_error(sc, start, "is not a number or a range N-M");
	idlist_set_range(set, lo, hi, !exclude);
	return 0;
}

/* The items of a non-empty list, sc->p at the first. */
static int
idlist_items(struct idlist_scan *sc, struct idlist *set, const char *text, size_t len)
{
	char q[IDLIST_QUOTE_CHARS + 4];
	int ret;

	for (;;) {
		if (sc->p == sc->end || *sc->p == ',') {
			util_errf(sc->err, sc->errlen, "'%s' has an empty item (a ',' too many)",
			          util_quote(text, len, IDLIST_QUOTE_CHARS, q, sizeof(q)));
			return -EINVAL;
		}
		if ((ret = idlist_item(sc, set)) < 0)
			return ret;
		if (sc->p == sc->end)
			return 0;
		sc->p++; /* the ',' idlist_item() stopped at */
		idlist_skip_blanks(sc);
		if (sc->p == sc->end && (sc->flags & IDLIST_LIBVIRT))
			return 0;
	}
}

int
idlist_parse(const char *text, size_t len, int limit, unsigned flags, struct idlist *set, char *err,
             size_t errlen)
{
	struct idlist_scan sc = {text, text + len, limit, flags, err, errlen};
	char q[IDLIST_QUOTE_CHARS + 4];
	int ret = 0;

	set->words = NULL;
	set->nr_words = 0;
	set->limit = 0;
	if (limit < 1) {
		util_errf(err, errlen, "no %s can be listed (limit %d)", idlist_noun(flags), limit);
		return -EINVAL;
	}
	while (sc.end > sc.p && idlist_blank(sc.end[-1]))
		sc.end--;
	if (sc.end > sc.p && sc.end[-1] == '\n')
		sc.end--;
	while (sc.end > sc.p && idlist_blank(sc.end[-1]))
		sc.end--;
	idlist_skip_blanks(&sc);
	set->limit = limit;
	set->nr_words = 0;
	if (sc.p == sc.end) {
		if (!(flags & IDLIST_EMPTY_OK)) {
			util_errf(err, errlen, "the list is empty: name at least one %s",
			          idlist_noun(flags));
			ret = -EINVAL;
		}
		goto out;
	}
	if ((ret = idlist_items(&sc, set, text, len)) == 0 && !(flags & IDLIST_EMPTY_OK) &&
	    idlist_next(set, 0) < 0) {
		util_errf(err, errlen, "'%s' leaves no %s",
		          util_quote(text, len, IDLIST_QUOTE_CHARS, q, sizeof(q)),
		          idlist_noun(flags));
		ret = -EINVAL;
	}
out:
	if (ret < 0)
		idlist_free(set);
	return ret;
}

void
idlist_free(struct idlist *set)
{
	free(set->words);
	set->words = NULL;
	set->nr_words = 0;
	set->limit = 0;
}

bool
idlist_test(const struct idlist *set, int id)
{
	if (id < 0 || id >= set->limit || id / IDLIST_WORD_BITS >= set->nr_words)
		return false;
	return (set->words[id / IDLIST_WORD_BITS] >> (id % IDLIST_WORD_BITS)) & 1u;
}

int
idlist_count(const struct idlist *set)
{
	int n = 0;

	for (int w = 0; w < set->nr_words; w++)
		n += __builtin_popcountll(set->words[w]);
	return n;
}

int
idlist_next(const struct idlist *set, int from)
{
	int id = from < 0 ? 0 : from;

	while (id < set->limit && id / IDLIST_WORD_BITS < set->nr_words) {
		uint64_t w = set->words[id / IDLIST_WORD_BITS] >> (id % IDLIST_WORD_BITS);

		if (w != 0) {
			id += __builtin_ctzll(w);
			return id < set->limit ? id : -1;
		}
		id = (id / IDLIST_WORD_BITS + 1) * IDLIST_WORD_BITS;
	}
	return -1;
}

int
idlist_ids(const struct idlist *set, int **ids)
{
	int n = idlist_count(set), i = 0;

	*ids = n > 0 ? xcalloc((size_t)n, sizeof(int)) : NULL;
	for (int id = idlist_next(set, 0); id >= 0; id = idlist_next(set, id + 1))
		(*ids)[i++] = id;
	return n;
}

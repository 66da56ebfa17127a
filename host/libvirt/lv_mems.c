/*
 * lv_mems.c - the live memory binding of libvirt domains; see lv_mems.h.
 */
#include "host/libvirt/lv_mems.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* A domain whose live set vnumad changed. */
struct lv_mems_entry {
	char *name;
	uint64_t orig_ids; /* its live set before vnumad's first change */
};

struct lv_mems {
	struct lv_mems_entry *entries;
	size_t nr, cap;
	struct lv_mems_stats stats;
};

struct lv_mems *
lv_mems_new(void)
{
	return xcalloc(1, sizeof(struct lv_mems));
}

void
lv_mems_free(struct lv_mems *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nr; i++)
		free(m->entries[i].name);
	free(m->entries);
	free(m);
}

static struct lv_mems_entry *
lv_mems_find(const struct lv_mems *m, const char *name)
{
	for (size_t i = 0; i < m->nr; i++)
		if (strcmp(m->entries[i].name, name) == 0)
			return &m->entries[i];
	return NULL;
}

bool
lv_mems_changed(const struct lv_mems *m, const char *name)
{
	return lv_mems_find(m, name) != NULL;
}

/* Set name's live set to ids, remembering its first set when this is vnumad's first change. */
static int
lv_mems_set(struct lv_mems *m, struct lv_conn *conn, const char *name, uint64_t old_ids,
            uint64_t ids, char *err, size_t errlen)
{
	int ret = lv_conn_mem_nodes_set(conn, name, ids, err, errlen);

	if (ret < 0) {
		m->stats.refused += ret == -EPERM;
		return ret;
	}
	if (lv_mems_find(m, name) == NULL) {
		util_array_reserve((void **)&m->entries, &m->cap, m->nr + 1, sizeof(*m->entries));
		m->entries[m->nr].name = xstrdup(name);
		m->entries[m->nr++].orig_ids = old_ids;
	}
	return 0;
}

int
lv_mems_allow(struct lv_mems *m, struct lv_conn *conn, const char *name, int to_id, char *err,
              size_t errlen)
{
	uint64_t live;
	int ret;

	if (to_id < 0 || to_id >= UTIL_MAX_NODES) {
		util_errf(err, errlen, "node %d is out of range", to_id);
		return -EINVAL;
	}
	if ((ret = lv_conn_mem_nodes_get(conn, name, &live, err, errlen)) < 0)
		return ret;
	/* libvirt names no set: every node is allowed */
	if (live == 0 || nodemask_test(live, to_id))
		return 0;
	ret = lv_mems_set(m, conn, name, live, live | nodemask_of(to_id), err, errlen);
	m->stats.widened += ret == 0;
	return ret;
}

int
lv_mems_narrow(struct lv_mems *m, struct lv_conn *conn, const char *name, uint64_t target_ids,
               char *err, size_t errlen)
{
	uint64_t live;
	int ret;

	if (target_ids == 0 || lv_mems_find(m, name) == NULL)
		return 0;
	if ((ret = lv_conn_mem_nodes_get(conn, name, &live, err, errlen)) < 0)
		return ret;
	if (live != 0 && (live & ~target_ids) == 0)
		return 0; /* already inside */
	if ((ret = lv_mems_set(m, conn, name, live, target_ids, err, errlen)) < 0)
		return ret;
	m->stats.narrowed++;
	return 1;
}

int
lv_mems_put_back(struct lv_mems *m, struct lv_conn *conn, char *err, size_t errlen)
{
	int done = 0;

	for (size_t i = 0; i < m->nr; i++) {
		if (lv_conn_mem_nodes_set(conn, m->entries[i].name, m->entries[i].orig_ids, err,
		                          errlen) == 0)
			done++;
		free(m->entries[i].name);
	}
	m->nr = 0;
	m->stats.put_back += (uint64_t)done;
	return done;
}

static void
lv_mems_drop(struct lv_mems *m, size_t i)
{
	free(m->entries[i].name);
	m->entries[i] = m->entries[--m->nr];
}

void
lv_mems_forget(struct lv_mems *m, const char *name)
{
	struct lv_mems_entry *e = lv_mems_find(m, name);

	if (e != NULL)
		lv_mems_drop(m, (size_t)(e - m->entries));
}

void
lv_mems_prune(struct lv_mems *m, bool (*running)(void *ctx, const char *name), void *ctx)
{
	for (size_t i = m->nr; i-- > 0;)
		if (!running(ctx, m->entries[i].name))
			lv_mems_drop(m, i);
}

void
lv_mems_stats_get(const struct lv_mems *m, struct lv_mems_stats *out)
{
	*out = m->stats;
}

/*
 * lv_mems.h - the live memory binding of libvirt domains (issue 16, lever 1): the nodes a
 * running domain's memory may be on (its live <numatune> nodeset, which libvirt keeps in
 * cpuset.mems of each of the domain's cgroups), widened before vnumad moves memory to a node
 * outside it and narrowed again once the memory is there, with each domain's set as vnumad
 * first found it, to put back.
 *
 * Why widen, move, narrow (docs/linux-host.md, "Live memory binding"): move_pages(2) cannot
 * put a page on a node outside the task's cpuset.mems, and narrowing cpuset.mems makes the
 * kernel migrate every page off the nodes left out at once, unpaced.  So vnumad widens the set
 * to old + new (nothing moves), moves the pages with its own paced migrator, and narrows to
 * the new set only when what is left outside it is small (the caller's guard); later
 * allocations then land on the new nodes.
 *
 * Sets are masks of host node ids (bit n: node id n).  Errors are lv_conn's (-EPERM: libvirt
 * refuses a live change for this domain's mode).  Ownership: struct lv_mems owns its entries.
 */
#ifndef VNUMAD_HOST_LIBVIRT_LV_MEMS_H
#define VNUMAD_HOST_LIBVIRT_LV_MEMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/libvirt/lv_conn.h"

struct lv_mems;

struct lv_mems_stats {
	uint64_t widened;  /* live changes that added a node (nothing moved) */
	uint64_t narrowed; /* live changes that left nodes out (the kernel moved the rest) */
	uint64_t refused;  /* changes libvirt refused */
	uint64_t put_back; /* domains given their first set back */
};

struct lv_mems *lv_mems_new(void);
void lv_mems_free(struct lv_mems *m);

/*
 * Let name's memory go to node id to_id: 0 when its live set has it or was widened to hold it
 * (the set before vnumad's first change is kept), else -errno with err.
 */
int lv_mems_allow(struct lv_mems *m, struct lv_conn *conn, const char *name, int to_id, char *err,
                  size_t errlen);
/* Whether vnumad changed name's set (and holds its first one). */
bool lv_mems_changed(const struct lv_mems *m, const char *name);
/*
 * Narrow name's live set to target_ids when vnumad changed it and it holds more: 1 when it
 * did, 0 when there was nothing to do, -errno with err.
 */
int lv_mems_narrow(struct lv_mems *m, struct lv_conn *conn, const char *name, uint64_t target_ids,
                   char *err, size_t errlen);
/*
 * Give every domain vnumad changed its first set back (an orderly stop or `vnumad --restore`
 * in the same process); the kernel moves, unpaced, what lies outside it.  Forgets them all;
 * returns how many were put back, with the last failure in err.
 */
int lv_mems_put_back(struct lv_mems *m, struct lv_conn *conn, char *err, size_t errlen);
/* Forget a domain that stopped (a restart starts from its configuration again). */
void lv_mems_forget(struct lv_mems *m, const char *name);
/* Forget every domain for which running(ctx, name) is false. */
void lv_mems_prune(struct lv_mems *m, bool (*running)(void *ctx, const char *name), void *ctx);
void lv_mems_stats_get(const struct lv_mems *m, struct lv_mems_stats *out);

#endif

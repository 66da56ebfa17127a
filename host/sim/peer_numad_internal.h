/*
 * peer_numad_internal.h - what the two halves of the numad model share: numad's constants and
 * the helpers that read a VM the way numad reads its QEMU process.  peer_numad.c is the daemon
 * loop, peer_numad_pick.c the node choice.  Other peers use peer_numad.h, not this.
 */
#ifndef VNUMAD_HOST_SIM_PEER_NUMAD_INTERNAL_H
#define VNUMAD_HOST_SIM_PEER_NUMAD_INTERNAL_H

#include <stdint.h>

#include "policy/model.h"

/* ---- numad's constants (numad.c 20150602, defaults of its command-line options) ------- */

#define NUMAD_MIN_INTERVAL_S 5  /* -i MIN: loop interval after a rebind */
#define NUMAD_MAX_INTERVAL_S 15 /* -i MAX: loop interval when nothing moved */
/* manage_loads() returns min_interval / 2 (integer: 2 s) whenever its index was resized. */
#define NUMAD_RESIZE_INTERVAL_S (NUMAD_MIN_INTERVAL_S / 2)
#define NUMAD_CPU_THRESHOLD_C   50   /* CPU_THRESHOLD: candidates use > 0.50 CPU */
#define NUMAD_MEM_THRESHOLD_MB  300  /* MEMORY_THRESHOLD: candidates have RSS > 300 MB */
#define NUMAD_TARGET_UTIL_PCT   85   /* -u: size requests for 85 % utilisation */
#define NUMAD_TARGET_LOCAL_PCT  90   /* -m: memory locality that counts as "in place" */
#define NUMAD_RING_SAMPLES      8    /* RING_BUF_SIZE: CPU use = max of the last 8 samples */
#define NUMAD_REEVAL_DELAY_S    300  /* MIN_DELAY_FOR_REEVALUATION: cool-down after a bind */
#define NUMAD_PREBOUND_AGE_S    1800 /* bound before numad saw it: "bound 30 minutes ago" */
#define NUMAD_MBS_MARGIN        100  /* MBS_MARGIN: MB left free on each node of the walk */
#define NUMAD_CPUS_MARGIN_C     0    /* CPUS_MARGIN */
#define NUMAD_HASH_MIN_SIZE     16   /* MIN_PROCESS_HASH_TABLE_SIZE: admission cap is size/3 */
#define NUMAD_ONE_HUNDRED       100  /* ONE_HUNDRED: CPU unit scaling */
/* combined_value_of_weighted_resources(): weights of needed and excess memory and CPU. */
#define NUMAD_W_NEED_MEM   10
#define NUMAD_W_EXCESS_MEM 4
#define NUMAD_W_NEED_CPU   6
#define NUMAD_W_EXCESS_CPU 1

/* The mask of all nr_nodes nodes. */
uint64_t numad_all_nodes(int nr_nodes);
/* A VM's RSS (MB) and CPU use (centi-CPUs), as numad reads them for its QEMU process. */
int64_t numad_vm_rss(const struct snapshot *snap, const struct snap_vm *vm);
int64_t numad_vm_cpus_c(const struct snap_vm *vm);

#endif

/*
 * hist.h - a histogram of durations in seconds, for the decision step's time (the metrics'
 * vnumad_decision_duration_seconds): fixed bucket bounds, per-bucket counts, sum and count.
 * Plain data; the daemon owns one in struct daemon.
 */
#ifndef VNUMAD_AGENT_HIST_H
#define VNUMAD_AGENT_HIST_H

#include <stdint.h>

/*
 * Upper bounds of the buckets, seconds (a +Inf bucket follows).  The engine decides in
 * 0.05-0.5 ms on the demo's 4-node host and in a few ms for 240 VMs on 8 nodes (README,
 * balancer_ms): 50 us to 1 s covers both with room for a slow or loaded host.
 */
#define HIST_BUCKETS 12
extern const double hist_bounds_s[HIST_BUCKETS];

struct hist {
	uint64_t bucket[HIST_BUCKETS + 1]; /* not cumulative; the last is +Inf */
	double sum_s;
	uint64_t count;
};

void hist_observe(struct hist *h, double seconds);

#endif

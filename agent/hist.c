/* hist.c - a histogram of durations (hist.h). */
#include "agent/hist.h"

const double hist_bounds_s[HIST_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.25, 1.0,
};

void
hist_observe(struct hist *h, double seconds)
{
	int b = 0;

	while (b < HIST_BUCKETS && seconds > hist_bounds_s[b])
		b++;
	h->bucket[b]++;
	h->sum_s += seconds;
	h->count++;
}

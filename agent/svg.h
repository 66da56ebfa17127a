/*
 * svg.h - the chart of `vnumactl simulate --plot FILE.svg`: locality over time, one line per
 * balancer, hand-written SVG.
 */
#ifndef VNUMAD_AGENT_SVG_H
#define VNUMAD_AGENT_SVG_H

#include "host/sim/sim.h"

/*
 * An SVG document plotting each result's locality_series (one value per SIM_SAMPLE_PERIOD_S,
 * -1 = nothing ran: a gap in the line) against time 0..duration_s, locality 0..1, with a
 * legend and title as the heading.  Each result is one <path> element.  Same input, same
 * bytes.  Returns a malloc'd string; the caller frees it.
 */
char *svg_locality_chart(const char *title, double duration_s, const struct sim_result *results,
                         int nr_results);

#endif

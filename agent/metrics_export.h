/*
 * metrics_export.h - where the metrics go: the /metrics HTTP server (metrics_listen) and the
 * node_exporter textfile (metrics_textfile, --metrics-textfile).  Once per round the daemon's
 * main thread collects, renders and publishes the text (metrics_export_round); the HTTP thread
 * only ever sends the last text published.  Nothing is collected while both are off.
 *
 * Ownership: d->metrics, made by metrics_export_configure(), freed by metrics_export_close().
 */
#ifndef VNUMAD_AGENT_METRICS_EXPORT_H
#define VNUMAD_AGENT_METRICS_EXPORT_H

#include <stddef.h>

#include "agent/config.h"
#include "agent/daemon.h"

/*
 * What of cfg a daemon does not take from its file: a simulated daemon started without -f
 * leaves the default file's metrics_listen and metrics_textfile to the real daemon (as it does
 * its socket), and --metrics-textfile wins over the key.
 */
void metrics_export_overrides(const struct daemon *d, struct config *cfg);
/*
 * Bring the listener and the textfile in line with cfg (start, move or stop the listener): 0,
 * or -errno with a message in err, the listener left as it was.
 */
int metrics_export_configure(struct daemon *d, const struct config *cfg, char *err, size_t errlen);
/* Collect, render and publish this round's text; write the textfile (errors logged). */
void metrics_export_round(struct daemon *d);
/* The address /metrics is served on, as bound ("" when off). */
const char *metrics_export_address(const struct daemon *d);
void metrics_export_close(struct daemon *d);

#endif

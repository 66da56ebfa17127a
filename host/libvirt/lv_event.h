/*
 * lv_event.h - the process-wide libvirt event loop thread and the per-connection event sink
 * (internal to host/libvirt/; see lv_conn.h for the thread rules).
 *
 * A sink is one connection's event queue plus its "link dropped" flag, shared by reference
 * count between the connection and every event callback libvirt holds, so a callback still
 * running on the event thread while the connection is closed never touches freed memory.
 */
#ifndef VNUMAD_HOST_LIBVIRT_LV_EVENT_H
#define VNUMAD_HOST_LIBVIRT_LV_EVENT_H

#include <stdbool.h>
#include <stddef.h>

#include <libvirt/libvirt.h>

#include "host/libvirt/lv_conn.h"

/*
 * Register libvirt's default event implementation and silence its stderr error printing
 * (both once per process), then start the event thread unless it runs.  Each successful call
 * must be paired with lv_loop_release().  0 or -errno (err).
 */
int lv_loop_acquire(char *err, size_t errlen);
/* The last user stops and joins the event thread. */
void lv_loop_release(void);

struct lv_sink;

struct lv_sink *lv_sink_new(void);
void lv_sink_unref(struct lv_sink *sink);
/* A new link is being set up: clear the dropped flag. */
void lv_sink_link_begin(struct lv_sink *sink);
/* Whether libvirt reported the current link closed. */
bool lv_sink_dropped(struct lv_sink *sink);
/* See lv_conn_events_take(). */
int lv_sink_take(struct lv_sink *sink, struct lv_event **events, int *nr);

/* libvirt registrations of one link. */
struct lv_watch {
	int lifecycle_id; /* -1: none */
	int metadata_id;  /* -1: none */
	bool close_cb;
};

/*
 * Register the lifecycle, metadata-change and close callbacks of vc into sink.  Call
 * lv_watch_remove() before the caller's own reference to sink goes.
 */
int lv_watch_add(virConnectPtr vc, struct lv_sink *sink, struct lv_watch *w, char *err,
                 size_t errlen);
/* Deregister what lv_watch_add() registered (errors ignored: the link may be gone). */
void lv_watch_remove(virConnectPtr vc, struct lv_watch *w);

#endif

/*
 * lv_event.c - libvirt's event loop in a background thread, and the event sinks it fills.
 *
 * libvirt's default event implementation is process-wide: it is registered once, and exactly
 * one thread should run it.  That thread is started by the first connection and stopped by the
 * last, so a process that closes all its connections (a test, a daemon shutting down) ends
 * with no thread of ours left.  These are the only globals of host/libvirt/, guarded by
 * loop_lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "host/libvirt/lv_event.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

/*
 * How often the event thread wakes up with nothing to do, ms (default 1000).  A stop request
 * nudges it at once, so this only bounds how long a lost wake-up could delay it; 1 s costs
 * nothing measurable.
 */
#define LV_LOOP_WAKE_MS 1000
/* Pause after virEventRunDefaultImpl() fails, ms: keeps a broken loop from spinning. */
#define LV_LOOP_ERROR_PAUSE_MS 100

static pthread_once_t loop_once = PTHREAD_ONCE_INIT;
static int loop_init_ret;
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static int loop_users;
static int loop_timer = -1;
static pthread_t loop_thread;
static atomic_bool loop_stop;

/* libvirt's default error handler prints every error on stderr; we report them ourselves. */
static void
loop_error_ignore(void *opaque, virErrorPtr error)
{
}

static void
loop_init_once(void)
{
	virSetErrorFunc(NULL, loop_error_ignore);
	loop_init_ret = virEventRegisterDefaultImpl();
}

static void
loop_timer_tick(int timer, void *opaque)
{
}

static void *
loop_main(void *arg)
{
	struct timespec pause = {0, LV_LOOP_ERROR_PAUSE_MS * 1000000L};

	while (!atomic_load(&loop_stop)) {
		if (virEventRunDefaultImpl() < 0)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

int
lv_loop_acquire(char *err, size_t errlen)
{
	int ret = 0;

	pthread_once(&loop_once, loop_init_once);
	if (loop_init_ret < 0) {
		util_errf(err, errlen, "cannot register libvirt's event loop: %s",
		          virGetLastErrorMessage());
		return -EIO;
	}
	pthread_mutex_lock(&loop_lock);
	if (loop_users == 0) {
		atomic_store(&loop_stop, false);
		loop_timer = virEventAddTimeout(LV_LOOP_WAKE_MS, loop_timer_tick, NULL, NULL);
		if (loop_timer < 0) {
			util_errf(err, errlen, "cannot add the event loop timer: %s",
			          virGetLastErrorMessage());
			ret = -EIO;
		} else if ((ret = -pthread_create(&loop_thread, NULL, loop_main, NULL)) < 0) {
			util_errf(err, errlen, "cannot start the libvirt event thread: %s",
			          strerror(-ret));
			virEventRemoveTimeout(loop_timer);
			loop_timer = -1;
		}
	}
	if (ret == 0)
		loop_users++;
	pthread_mutex_unlock(&loop_lock);
	return ret;
}

void
lv_loop_release(void)
{
	pthread_mutex_lock(&loop_lock);
	if (--loop_users == 0) {
		atomic_store(&loop_stop, true);
		virEventUpdateTimeout(loop_timer, 0); /* fire now: wakes the thread */
		pthread_join(loop_thread, NULL);
		virEventRemoveTimeout(loop_timer);
		loop_timer = -1;
	}
	pthread_mutex_unlock(&loop_lock);
}

/* ---- sinks -------------------------------------------------------------------------------- */

struct lv_sink {
	pthread_mutex_t lock;
	int refs;
	bool dropped;  /* libvirt closed the current link */
	bool overflow; /* events were dropped since the last take */
	struct lv_event *events;
	size_t nr, cap;
};

struct lv_sink *
lv_sink_new(void)
{
	struct lv_sink *sink = xcalloc(1, sizeof(*sink));

	pthread_mutex_init(&sink->lock, NULL);
	sink->refs = 1;
	return sink;
}

static struct lv_sink *
sink_ref(struct lv_sink *sink)
{
	pthread_mutex_lock(&sink->lock);
	sink->refs++;
	pthread_mutex_unlock(&sink->lock);
	return sink;
}

void
lv_sink_unref(struct lv_sink *sink)
{
	int left;

	if (sink == NULL)
		return;
	pthread_mutex_lock(&sink->lock);
	left = --sink->refs;
	pthread_mutex_unlock(&sink->lock);
	if (left > 0)
		return;
	lv_events_free(sink->events, (int)sink->nr);
	pthread_mutex_destroy(&sink->lock);
	free(sink);
}

void
lv_sink_link_begin(struct lv_sink *sink)
{
	pthread_mutex_lock(&sink->lock);
	sink->dropped = false;
	pthread_mutex_unlock(&sink->lock);
}

bool
lv_sink_dropped(struct lv_sink *sink)
{
	bool dropped;

	pthread_mutex_lock(&sink->lock);
	dropped = sink->dropped;
	pthread_mutex_unlock(&sink->lock);
	return dropped;
}

int
lv_sink_take(struct lv_sink *sink, struct lv_event **events, int *nr)
{
	int overflow;

	pthread_mutex_lock(&sink->lock);
	*events = sink->nr > 0 ? sink->events : NULL;
	*nr = (int)sink->nr;
	if (sink->nr == 0)
		free(sink->events);
	sink->events = NULL;
	sink->nr = sink->cap = 0;
	overflow = sink->overflow;
	sink->overflow = false;
	pthread_mutex_unlock(&sink->lock);
	return overflow;
}

/* Queue one event (called on the event thread). */
static void
sink_push(struct lv_sink *sink, virDomainPtr dom, enum lv_event_kind kind, int event, int detail)
{
	const char *name = virDomainGetName(dom);
	struct lv_event *ev;

	if (name == NULL)
		return;
	pthread_mutex_lock(&sink->lock);
	if (sink->nr >= LV_EVENT_QUEUE_MAX) {
		sink->overflow = true;
	} else {
		util_array_reserve((void **)&sink->events, &sink->cap, sink->nr + 1,
		                   sizeof(*sink->events));
		ev = &sink->events[sink->nr++];
		ev->name = xstrdup(name);
		ev->kind = kind;
		ev->lifecycle = event;
		ev->lifecycle_detail = detail;
	}
	pthread_mutex_unlock(&sink->lock);
}

void
lv_events_free(struct lv_event *events, int nr)
{
	for (int i = 0; i < nr; i++)
		free(events[i].name);
	free(events);
}

const char *
lv_event_kind_name(enum lv_event_kind kind)
{
	switch (kind) {
	case LV_EVENT_STARTED:
		return "started";
	case LV_EVENT_STOPPED:
		return "stopped";
	case LV_EVENT_METADATA:
		return "metadata";
	case LV_EVENT_OTHER:
		return "other";
	}
	return "?";
}

/* ---- libvirt callbacks (event thread) ----------------------------------------------------- */

static int
on_lifecycle(virConnectPtr vc, virDomainPtr dom, int event, int detail, void *opaque)
{
	enum lv_event_kind kind = LV_EVENT_OTHER;

	if (event == VIR_DOMAIN_EVENT_STARTED)
		kind = LV_EVENT_STARTED;
	else if (event == VIR_DOMAIN_EVENT_STOPPED)
		kind = LV_EVENT_STOPPED;
	sink_push(opaque, dom, kind, event, detail);
	return 0;
}

static void
on_metadata(virConnectPtr vc, virDomainPtr dom, int type, const char *nsuri, void *opaque)
{
	if (type == VIR_DOMAIN_METADATA_ELEMENT && nsuri != NULL &&
	    strcmp(nsuri, VM_POLICY_NS) == 0)
		sink_push(opaque, dom, LV_EVENT_METADATA, -1, -1);
}

/*
 * The close callback holds no reference: drivers in this process (test://) accept the
 * registration but never store it, so libvirt would never release one.  Deregistering
 * (lv_watch_remove, before the sink can go) waits for a running call under libvirt's lock.
 */
static void
on_close(virConnectPtr vc, int reason, void *opaque)
{
	struct lv_sink *sink = opaque;

	pthread_mutex_lock(&sink->lock);
	sink->dropped = true;
	pthread_mutex_unlock(&sink->lock);
}

/* libvirt's free callback for an event registration: any thread, any later time. */
static void
sink_unref_cb(void *opaque)
{
	lv_sink_unref(opaque);
}

/* Register cb for event id with a reference to sink; the id, or -1 (reference dropped). */
static int
watch_event(virConnectPtr vc, struct lv_sink *sink, int id, virConnectDomainEventGenericCallback cb)
{
	int ret = virConnectDomainEventRegisterAny(vc, NULL, id, cb, sink_ref(sink), sink_unref_cb);

	if (ret < 0)
		lv_sink_unref(sink); /* libvirt did not take it */
	return ret;
}

int
lv_watch_add(virConnectPtr vc, struct lv_sink *sink, struct lv_watch *w, char *err, size_t errlen)
{
	w->close_cb = false;
	w->metadata_id = -1;
	w->lifecycle_id = watch_event(vc, sink, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
	                              VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle));
	if (w->lifecycle_id >= 0)
		w->metadata_id = watch_event(vc, sink, VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
		                             VIR_DOMAIN_EVENT_CALLBACK(on_metadata));
	if (w->metadata_id >= 0)
		w->close_cb = virConnectRegisterCloseCallback(vc, on_close, sink, NULL) == 0;
	if (w->close_cb)
		return 0;
	util_errf(err, errlen, "cannot register for libvirt events: %s", virGetLastErrorMessage());
	lv_watch_remove(vc, w);
	return -EIO;
}

void
lv_watch_remove(virConnectPtr vc, struct lv_watch *w)
{
	if (w->close_cb)
		virConnectUnregisterCloseCallback(vc, on_close);
	if (w->metadata_id >= 0)
		virConnectDomainEventDeregisterAny(vc, w->metadata_id);
	if (w->lifecycle_id >= 0)
		virConnectDomainEventDeregisterAny(vc, w->lifecycle_id);
	w->lifecycle_id = w->metadata_id = -1;
	w->close_cb = false;
	virResetLastError();
}

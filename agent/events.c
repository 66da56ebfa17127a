/*
 * events.c - the daemon's event ring.
 */
#include "agent/events.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The wall clock, to the millisecond (what an admin matches against other logs). */
static double
events_wall_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1000.0;
}

void
events_init(struct events *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->next_seq = 1;
}

const struct event *
events_add(struct events *ev, double time_s, int vm_id, const char *vm, const char *kind,
           const char *rule, double gain, const char *fmt, ...)
{
	struct event *e = &ev->ring[ev->next_seq % EVENTS_RING];
	va_list ap;

	memset(e, 0, sizeof(*e));
	e->seq = ev->next_seq++;
	e->time_s = time_s;
	e->wall_s = events_wall_now_s();
	e->vm_id = vm_id;
	snprintf(e->vm, sizeof(e->vm), "%s", vm ? vm : "");
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	snprintf(e->rule, sizeof(e->rule), "%s", rule ? rule : "");
	e->gain = gain;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	return e;
}

struct json_object *
event_to_json(const struct event *e)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "seq", json_object_new_int64((int64_t)e->seq));
	json_object_object_add(o, "time_s", json_object_new_double(e->time_s));
	json_object_object_add(o, "wall_s", json_object_new_double(e->wall_s));
	json_object_object_add(o, "vm", e->vm[0] ? json_object_new_string(e->vm) : NULL);
	json_object_object_add(o, "vm_id", json_object_new_int(e->vm_id));
	json_object_object_add(o, "kind", json_object_new_string(e->kind));
	json_object_object_add(o, "rule", json_object_new_string(e->rule));
	json_object_object_add(o, "text", json_object_new_string(e->text));
	json_object_object_add(o, "gain", json_object_new_double(e->gain));
	return o;
}

struct json_object *
events_query(const struct events *ev, uint64_t since, int vm_id, int limit, uint64_t *next)
{
	struct json_object *arr = json_object_new_array();
	uint64_t oldest = events_oldest(ev);
	uint64_t s = since > oldest ? since : oldest;
	int n = 0;

	for (; s < ev->next_seq && (limit <= 0 || n < limit); s++) {
		const struct event *e = &ev->ring[s % EVENTS_RING];

		if (vm_id >= 0 && e->vm_id != vm_id)
			continue;
		json_object_array_add(arr, event_to_json(e));
		n++;
	}
	*next = s;
	return arr;
}

struct json_object *
events_query_newest(const struct events *ev, int vm_id, int limit, uint64_t *next)
{
	uint64_t oldest = events_oldest(ev), s = ev->next_seq;
	int n = 0;

	/* back from the newest to the limit-th match, then forward from there */
	while (s > oldest && (limit <= 0 || n < limit)) {
		const struct event *e = &ev->ring[--s % EVENTS_RING];

		n += vm_id < 0 || e->vm_id == vm_id;
	}
	return events_query(ev, s, vm_id, 0, next);
}

uint64_t
events_oldest(const struct events *ev)
{
	return ev->next_seq > EVENTS_RING ? ev->next_seq - EVENTS_RING : 1;
}

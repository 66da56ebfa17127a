/*
 * events.h - the daemon's event log: a ring of the last EVENTS_RING entries, each with a
 * sequence number, for `vnumactl events` (since a sequence number, per VM, following).
 *
 * Ownership: struct events owns its entries' strings.
 */
#ifndef VNUMAD_AGENT_EVENTS_H
#define VNUMAD_AGENT_EVENTS_H

#include <stdint.h>

#include "policy/model.h"

struct json_object;

#define EVENTS_RING 4096

struct event {
	uint64_t seq;  /* from 1, increasing */
	double time_s; /* host clock (seconds since boot on a real host) */
	double wall_s; /* wall clock when recorded (seconds since the epoch) */
	int vm_id;     /* -1: host-wide */
	char vm[SNAP_VM_NAME_MAX];
	char kind[16]; /* pin, flip, move, bind, sampling, arrive, leave, policy, ... */
	char rule[24];
	char text[128];
	double gain;
};

struct events {
	struct event ring[EVENTS_RING];
	uint64_t next_seq; /* seq of the next event */
};

void events_init(struct events *ev);
/* Append an event; returns it (valid until EVENTS_RING more are added). */
const struct event *events_add(struct events *ev, double time_s, int vm_id, const char *vm,
                               const char *kind, const char *rule, double gain, const char *fmt,
                               ...) __attribute__((format(printf, 8, 9)));
/*
 * Events with seq >= since (0: the oldest kept), of vm_id (< 0: all), at most limit, oldest
 * first, as a JSON array (new object).  *next gets the seq to ask for next time.
 */
struct json_object *events_query(const struct events *ev, uint64_t since, int vm_id, int limit,
                                 uint64_t *next);
/* The newest limit events of vm_id (< 0: all; limit 0: every one kept), oldest first. */
struct json_object *events_query_newest(const struct events *ev, int vm_id, int limit,
                                        uint64_t *next);
/* Seq of the oldest event the ring still holds (next_seq when it holds none). */
uint64_t events_oldest(const struct events *ev);
struct json_object *event_to_json(const struct event *e);

#endif

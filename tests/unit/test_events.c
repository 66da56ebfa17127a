/*
 * test_events.c - the daemon's event ring (agent/events.c): the newest events by default,
 * from a seq on when asked, per VM, across the ring's wrap, and the oldest seq it still holds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/events.h"

static int64_t
seq_at(struct json_object *arr, size_t i)
{
	struct json_object *seq;

	assert_true(json_object_object_get_ex(json_object_array_get_idx(arr, i), "seq", &seq));
	return json_object_get_int64(seq);
}

/* n events, every third of VM 7, the rest of VM 8. */
static struct events *
ring_filled(int n)
{
	struct events *ev = malloc(sizeof(*ev));

	assert_non_null(ev);
	events_init(ev);
	for (int i = 0; i < n; i++)
		events_add(ev, i, i % 3 == 0 ? 7 : 8, i % 3 == 0 ? "a" : "b", "pin", "compress", 0,
		           "event %d", i);
	return ev;
}

/* The newest limit events, oldest of them first; next is where a follower continues. */
static void
test_events_newest(void **state)
{
	struct events *ev = ring_filled(483);
	struct json_object *arr;
	uint64_t next;

	(void)state;
	arr = events_query_newest(ev, -1, 5, &next);
	assert_int_equal(json_object_array_length(arr), 5);
	assert_int_equal(seq_at(arr, 0), 479);
	assert_int_equal(seq_at(arr, 4), 483);
	assert_int_equal(next, 484);
	json_object_put(arr);
	/* one VM's: its newest three (seqs 1, 4, 7, ... are VM 7's: (seq - 1) % 3 == 0) */
	arr = events_query_newest(ev, 7, 3, &next);
	assert_int_equal(json_object_array_length(arr), 3);
	assert_int_equal(seq_at(arr, 0), 475);
	assert_int_equal(seq_at(arr, 2), 481);
	assert_int_equal(next, 484);
	json_object_put(arr);
	/* more asked for than there are: all, from the first */
	arr = events_query_newest(ev, -1, 1000, &next);
	assert_int_equal(json_object_array_length(arr), 483);
	assert_int_equal(seq_at(arr, 0), 1);
	json_object_put(arr);
	free(ev);
}

/* Across the wrap: the oldest kept moves on, and "from since" starts there. */
static void
test_events_wrapped(void **state)
{
	struct events *ev = ring_filled(EVENTS_RING + 100);
	struct json_object *arr;
	uint64_t next;

	(void)state;
	assert_int_equal(events_oldest(ev), 101);
	arr = events_query(ev, 5, -1, 3, &next);
	assert_int_equal(seq_at(arr, 0), 101);
	assert_int_equal(next, 104);
	json_object_put(arr);
	arr = events_query_newest(ev, -1, 0, &next);
	assert_int_equal(json_object_array_length(arr), EVENTS_RING);
	assert_int_equal(seq_at(arr, 0), 101);
	assert_int_equal(seq_at(arr, EVENTS_RING - 1), EVENTS_RING + 100);
	json_object_put(arr);
	free(ev);
}

/* An empty ring: nothing, and next is the first seq to come. */
static void
test_events_empty(void **state)
{
	struct events *ev = ring_filled(0);
	struct json_object *arr;
	uint64_t next;

	(void)state;
	assert_int_equal(events_oldest(ev), 1);
	arr = events_query_newest(ev, -1, 10, &next);
	assert_int_equal(json_object_array_length(arr), 0);
	assert_int_equal(next, 1);
	json_object_put(arr);
	free(ev);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_events_newest),
	    cmocka_unit_test(test_events_wrapped),
	    cmocka_unit_test(test_events_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * fuzz_state.c - libFuzzer target for the state file (agent/state_read.c), which vnumad reads at
 * start-up and `vnumad --restore` reads after a crash: the input is written to a file in a
 * private directory and read by state_load(), the only way in (state.c's parser is static).
 *
 * A file that loads holds only entries state_record() could have made, no vCPU twice, and
 * saves to a file that loads to the same entries.  A file it refuses goes the way the daemon
 * takes it (state_load_or_set_aside): set aside, and what is kept of it passes the same
 * checks.  Built by `make fuzz` (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/state/
 * (tests/unit/test_fuzz_replay_agent.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/state.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_state_run(const uint8_t *data, size_t size);

static void
fuzz_state_check(const struct state *st)
{
	for (size_t i = 0; i < st->nr; i++) {
		const struct state_entry *e = &st->entries[i];

		if (e->vm[0] == '\0' || memchr(e->vm, '\0', sizeof(e->vm)) == NULL ||
		    e->vm_id < 1 || e->vcpu < 0 || e->tid < 1 || e->orig_nodes == 0 ||
		    state_find(st, e->vm, e->vcpu) != e)
			abort(); /* state_find gives the first entry: no vCPU twice */
	}
}

/* Save st next to the input and load it back: the same entries in the same order. */
static void
fuzz_state_round_trip(struct state *st, const char *dir)
{
	char path[FUZZ_PATH_MAX + 16], err[512];
	struct state *again = NULL;

	snprintf(path, sizeof(path), "%s/saved.json", dir);
	if (state_save(st, path, err, sizeof(err)) != 0 ||
	    state_load(path, &again, err, sizeof(err)) != 0 || again->nr != st->nr)
		abort();
	for (size_t i = 0; i < st->nr; i++) {
		const struct state_entry *a = &st->entries[i], *b = &again->entries[i];

		if (strcmp(a->vm, b->vm) != 0 || a->vm_id != b->vm_id || a->vcpu != b->vcpu ||
		    a->tid != b->tid || a->orig_nodes != b->orig_nodes)
			abort();
	}
	state_free(again);
}

/*
 * What the daemon does with a file state_load refuses: set it aside and keep the entries of
 * it that version 1 would take.  Never a refusal; what is kept passes the same checks.
 */
static void
fuzz_state_set_aside(const char *path)
{
	char note[1024];
	struct state *st = NULL;

	memset(note, 'x', sizeof(note));
	if (state_load_or_set_aside(path, &st, note, sizeof(note)) != 0 || st == NULL ||
	    !fuzz_msg_ok(note, sizeof(note)) || note[0] == '\0')
		abort();
	fuzz_state_check(st);
	state_free(st);
}

int
fuzz_state_run(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_dir_reset();
	char path[FUZZ_PATH_MAX + 16], err[512];
	struct state *st = (struct state *)&err; /* must be reset */
	int ret;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	if (fuzz_file_write(dir, "state.json", data, size, false) < 0)
		abort();
	memset(err, 'x', sizeof(err));
	ret = state_load(path, &st, err, sizeof(err));
	if (ret != 0 && ret != -EINVAL && ret != -EPROTONOSUPPORT)
		abort();
	if (ret == 0 && st != NULL) {
		fuzz_state_check(st);
		fuzz_state_round_trip(st, dir);
	} else if (ret == 0 || st != NULL || !fuzz_msg_ok(err, sizeof(err)) || err[0] == '\0') {
		abort(); /* a refusal says why and returns nothing */
	}
	state_free(ret == 0 ? st : NULL);
	if (ret != 0)
		fuzz_state_set_aside(path);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_state_run(data, size);
	return 0;
}
#endif

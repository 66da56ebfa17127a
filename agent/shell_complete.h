/*
 * shell_complete.h - what Tab offers in vnumactl's interactive shell, as a pure function of
 * the command table, the line up to the cursor, and (only when the word is a VM) a list of VM
 * names.  The line editor (shell_edit.c) fetches the names and inserts the result; nothing
 * here does I/O, so the rules are unit-tested.
 *
 * The word under the cursor is completed from what the command table says goes there:
 *   - the first word: command names and aliases;
 *   - a word starting with '-': the command's options ("--node", ...) and "--json";
 *   - the value after an option that takes one, or the next positional argument: the words
 *     of a choice type ("yes|no"), VM names for a VM placeholder, command names for COMMAND;
 *     any other type (N, FILE, ...) has nothing to offer.
 * Words are separated by blanks; quotes are not interpreted (names offered contain none).
 */
#ifndef VNUMAD_AGENT_SHELL_COMPLETE_H
#define VNUMAD_AGENT_SHELL_COMPLETE_H

#include <stddef.h>

#include "agent/cli.h"

/* The candidates for one word: sorted by strcmp, without duplicates.  Owns v and its strings. */
struct shell_matches {
	char **v;
	int nr;
	size_t cap;
	size_t start; /* offset in the line where the word being completed begins */
};

/*
 * The VM names, asked for only when the word is a VM: returns how many, with *names pointing
 * to them (owned by the callee, valid until the next call); 0 when none are known.
 */
typedef int (*shell_vms_fn)(void *arg, const char *const **names);

/*
 * Fill m with the candidates for the word ending at line[point] (point <= strlen(line)).
 * vms may be NULL (no VM names).  Returns the number of candidates.
 */
int shell_complete(const struct cli_command *table, const char *line, size_t point,
                   shell_vms_fn vms, void *vms_arg, struct shell_matches *m);
void shell_matches_free(struct shell_matches *m);

/* The length of the prefix all candidates share (0 when there are none). */
size_t shell_matches_common_len(const struct shell_matches *m);

#endif

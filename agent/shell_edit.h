/*
 * shell_edit.h - the interactive shell's line editor on a terminal, built on libedit and
 * linked into vnumactl only (main_vnumactl.c registers it with shell_editor_set).
 *
 * Keys are libedit's emacs bindings (arrows, Ctrl-A/E, Ctrl-R searches back, ~/.editrc is
 * read); Tab completes (shell_complete.h), asking the daemon for VM names when a VM goes
 * there; Ctrl-C drops the line; Ctrl-D on an empty line leaves.
 *
 * History: kept for the session (SHELL_EDIT_HISTORY_MAX lines, a repeat of the last line not
 * kept twice) and saved after every line to $VNUMACTL_HISTFILE if set (set and empty: no
 * file), else $XDG_STATE_HOME/vnumactl/history, else ~/.local/state/vnumactl/history; the
 * file is created with mode 0600 (its directory 0700).  A file that cannot be read or written
 * costs a one-line warning on stderr, once, and the shell goes on.
 */
#ifndef VNUMAD_AGENT_SHELL_EDIT_H
#define VNUMAD_AGENT_SHELL_EDIT_H

#include "agent/shell.h"

/* Lines of history kept in memory and in the file: a few weeks of typing, a small file. */
#define SHELL_EDIT_HISTORY_MAX 1000
/* How long VM names fetched for completion are used before they are asked for again (s). */
#define SHELL_EDIT_VMS_CACHE_S 3.0
/* How long completion waits for the daemon's list (ms): a hung daemon must not hang Tab. */
#define SHELL_EDIT_VMS_TIMEOUT_MS 500

extern const struct shell_editor shell_edit_libedit;

#endif

/*
 * cmd_top.h - `vnumactl top [--once] [--interval S]`: a live full-screen view of the host's
 * nodes and its VMs, with plain ANSI escapes (alternate screen, cursor home, erase), refreshed
 * every interval.  'q' quits at once (the terminal is in raw mode); so do EOF or an error on
 * the terminal, SIGHUP, SIGTERM, SIGINT, and the daemon going away, always restoring the
 * terminal first.  When stdout is not a terminal, or with --once, one frame is printed
 * without escapes; with --json, one frame's data.
 */
#ifndef VNUMAD_AGENT_CMD_TOP_H
#define VNUMAD_AGENT_CMD_TOP_H

#include <stdbool.h>

#include "agent/cli.h"
#include "policy/util.h"

struct json_object;

#define CMD_TOP_INTERVAL_S     1.0    /* default refresh period */
#define CMD_TOP_MIN_INTERVAL_S 0.1    /* faster only loads the daemon for nothing */
#define CMD_TOP_MAX_INTERVAL_S 3600.0 /* an hour; beyond is a typo */

int cmd_top(struct cli_ctx *ctx, const struct cli_args *args);

/*
 * One frame from its data {"status": STATUS, "nodes": [NODE...], "vms": [VMINFO...]}
 * (docs/protocol.md's replies): a header line (host time, rounds, paused), the nodes, and one
 * row per VM with locality, strength, memory per node (GiB) and vCPUs per node.  live adds
 * the key help to the header.
 */
void cmd_top_render(struct util_buf *buf, struct json_object *frame, bool live);

/*
 * text fitted to a rows x cols terminal for drawing over the previous frame: cursor home,
 * each line cut to cols and followed by erase-to-end-of-line, at most rows lines (the last
 * without a newline, so the screen never scrolls), then erase below.
 */
void cmd_top_fit(struct util_buf *buf, const char *text, int rows, int cols);

#endif

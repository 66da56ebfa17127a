/*
 * cmd_top.h - `vnumactl top [--once] [--interval S]`: a live full-screen view of the host's
 * nodes and its VMs, refreshed every interval, with sort keys, scrolling, key help and a node
 * panel (the screen: top_screen.c with ncurses; its layout: top_layout.c).  When stdin or
 * stdout is not a terminal, or with --once, one frame is printed without escapes; with
 * --json, one frame's data.
 */
#ifndef VNUMAD_AGENT_CMD_TOP_H
#define VNUMAD_AGENT_CMD_TOP_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/cli.h"
#include "policy/util.h"

struct client;
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
 * A frame's data {"status", "nodes", "vms"} from c (status, nodeinfo, list, then vminfo of
 * each listed VM; one gone since the list is left out).  0 or -errno with a message in err.
 */
int cmd_top_fetch(struct client *c, struct json_object **frame, char *err, size_t errlen);

/*
 * The interactive screen (top_screen_run, which links ncurses) is handed in by vnumactl's
 * main; a program that sets none (the unit tests) prints one frame even on a terminal.
 */
typedef int (*cmd_top_screen_fn)(struct cli_ctx *ctx, struct client *c, double interval_s);
void cmd_top_screen_set(cmd_top_screen_fn fn);

#endif

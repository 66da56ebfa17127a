/*
 * top_screen.h - the interactive `vnumactl top` (ncurses), linked into vnumactl only: see
 * top_screen.c.
 */
#ifndef VNUMAD_AGENT_TOP_SCREEN_H
#define VNUMAD_AGENT_TOP_SCREEN_H

#include "agent/cli.h"

struct client;

/*
 * Draw c's frames on the terminal every interval_s until the user quits (0) or vnumad goes
 * away (-errno, after "error: lost vnumad: ..." with the terminal restored).  A terminal that
 * ncurses cannot drive is an error too (-ENOTTY).
 */
int top_screen_run(struct cli_ctx *ctx, struct client *c, double interval_s);

#endif

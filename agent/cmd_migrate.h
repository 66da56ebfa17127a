/*
 * cmd_migrate.h - `vnumactl migrate VM --node N [--no-wait] [--timeout S]`: ask vnumad to
 * move a whole VM to one node, then follow its memory there by polling vminfo, with a
 * progress bar on a terminal.
 */
#ifndef VNUMAD_AGENT_CMD_MIGRATE_H
#define VNUMAD_AGENT_CMD_MIGRATE_H

#include <stdbool.h>

#include "agent/cli.h"
#include "policy/util.h"

struct json_object;

#define CMD_MIGRATE_POLL_MS 500 /* vminfo polls while waiting; the bar moves this often */
/*
 * Default --timeout (s).  A 64 GiB VM at the default 256 MiB/s per-VM rate needs about
 * 256 s; twice that covers a busy host.  0 waits without limit.
 */
#define CMD_MIGRATE_TIMEOUT_S 600
/* Done when this share of the VM's resident memory is on the node: the last pages of a
 * running guest (kernel, DMA buffers) may never move, so 100 % is not a fair goal. */
#define CMD_MIGRATE_DONE_SHARE 0.99
#define CMD_MIGRATE_BAR_WIDTH  10 /* characters between the brackets */

/*
 * Off a terminal (a pipe, a log) the wait prints a progress line instead of a bar: one at
 * the start, then one whenever another tenth of the VM has arrived or CMD_MIGRATE_LINE_S
 * seconds passed since the last line, whichever comes first.
 */
#define CMD_MIGRATE_LINE_S 10.0

int cmd_migrate(struct cli_ctx *ctx, const struct cli_args *args);

/* Whether a progress line is due at now_s, the last at last_s with share last_share (0..1). */
bool cmd_migrate_line_due(double last_s, double last_share, double now_s, double share);

/*
 * Progress towards node from a vminfo reply: MiB resident on node and on all nodes.  0, or
 * -EINVAL when the reply has no resident_mib or node is not in it.
 */
int cmd_migrate_progress(struct json_object *vminfo, int node, double *on_node_mib,
                         double *total_mib);
/* Whether that progress counts as done (CMD_MIGRATE_DONE_SHARE; nothing resident is done). */
bool cmd_migrate_done(double on_node_mib, double total_mib);
/* "[#####-----]  45%  3.1/7.0 GiB on node 1" (no newline). */
void cmd_migrate_bar_render(struct util_buf *buf, double on_node_mib, double total_mib, int node);

#endif

/*
 * cmd_host.h - vnumactl's daemon-wide commands (BRIEF 4.5, docs/protocol.md): status, stats,
 * events, pause, resume, reload.
 */
#ifndef VNUMAD_AGENT_CMD_HOST_H
#define VNUMAD_AGENT_CMD_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/cli.h"
#include "policy/util.h"

struct json_object;

int cmd_status(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_stats(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_events(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_pause(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_resume(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_reload(struct cli_ctx *ctx, const struct cli_args *args);

/* Human renderings of reply data. */
void cmd_status_render(struct util_buf *buf, struct json_object *data);
void cmd_stats_render(struct util_buf *buf, struct json_object *data);
void cmd_events_render(struct util_buf *buf, struct json_object *data);
/* A JSON array of EVENT objects as a table (also used by explain). */
void cmd_events_table_render(struct util_buf *buf, struct json_object *events);
/*
 * One EVENT as a line of fixed-width columns, for events --follow, where lines come one at a
 * time (json: the event as one line of compact JSON); the header matches the columns.
 */
void cmd_event_line_render(struct util_buf *buf, struct json_object *event, bool json);
void cmd_event_header_render(struct util_buf *buf);

/* The "events" request from its arguments; *follow tells whether --follow was given. */
int cmd_events_args(const struct cli_args *args, struct json_object **req, bool *follow, char *err,
                    size_t errlen);

#endif

/*
 * cmd_vm.h - vnumactl's VM and placement commands (BRIEF 4.5, docs/protocol.md): list,
 * vminfo (dominfo), nodeinfo, policy, pin, unpin, explain, place.
 *
 * Each handler builds its request from the command line (the *_args functions, pure), asks
 * vnumad, and prints the reply's data as JSON (--json) or through its *_render function
 * (pure: data object in, text out).
 */
#ifndef VNUMAD_AGENT_CMD_VM_H
#define VNUMAD_AGENT_CMD_VM_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/cli.h"
#include "agent/cmd_common.h"
#include "policy/util.h"

struct json_object;

int cmd_list(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_vminfo(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_nodeinfo(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_policy(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_pin(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_unpin(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_explain(struct cli_ctx *ctx, const struct cli_args *args);
int cmd_place(struct cli_ctx *ctx, const struct cli_args *args);

/* nodeinfo's columns (the last one, distance, is left out of top's node table). */
#define CMD_NODE_COLUMNS 7
extern const struct cmd_column cmd_node_columns[CMD_NODE_COLUMNS];

/* Human renderings of each command's reply data. */
void cmd_list_render(struct util_buf *buf, struct json_object *data);
void cmd_vminfo_render(struct util_buf *buf, struct json_object *data);
void cmd_nodeinfo_render(struct util_buf *buf, struct json_object *data);
void cmd_policy_render(struct util_buf *buf, struct json_object *data);
void cmd_explain_render(struct util_buf *buf, struct json_object *data);
void cmd_place_render(struct util_buf *buf, struct json_object *data);

/*
 * The request of "policy" from its parsed arguments.  *change tells whether any setting was
 * given (then it is the mutating form, with "scope" when --live/--config/--current was).
 * 0 with a new object in *req, or -EINVAL with a message.
 */
int cmd_policy_args(const struct cli_args *args, struct json_object **req, bool *change, char *err,
                    size_t errlen);
/* The requests of "pin", "unpin" and "place"; as cmd_policy_args. */
int cmd_pin_args(const struct cli_args *args, struct json_object **req, char *err, size_t errlen);
int cmd_unpin_args(const struct cli_args *args, struct json_object **req, char *err, size_t errlen);
int cmd_place_args(const struct cli_args *args, struct json_object **req, char *err, size_t errlen);

#endif

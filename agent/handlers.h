/* handlers.h - helpers shared by the control command handlers (handlers*.c). */
#ifndef VNUMAD_AGENT_HANDLERS_H
#define VNUMAD_AGENT_HANDLERS_H

#include "agent/control.h"
#include "agent/daemon.h"
#include "policy/engine.h"

/* The VM named by args "vm" (name or id); NULL with *st and err set when absent/unknown. */
const struct snap_vm *handlers_arg_vm(struct daemon *d, struct json_object *args, char *err,
                                      size_t errlen, enum proto_status *st);
/* Share of the VM's memory on the nodes where its vCPUs run (where); 1 when it has none. */
double handlers_memory_locality(const struct snapshot *snap, const struct snap_vm *vm,
                                uint64_t where);
struct json_object *handlers_vm_row(struct daemon *d, const struct snap_vm *vm);
/*
 * "" for a VM vnumad chases as usual, else why and for how long it leaves an adverse guest
 * alone (policy/engine_chase.c), in words for vminfo and explain.
 */
void handlers_chase_note(const struct engine_vm_report *r, char *buf, size_t len);
const char *handlers_vm_state(const struct daemon *d, const struct snap_vm *vm,
                              const struct engine_vm_report *r);
struct json_object *handlers_counters(const struct dvm_counters *c);

#define HANDLER_ARGS                                                                               \
	void *ctx, struct control_client *cl, const struct control_peer *peer,                     \
	    struct json_object *args, struct json_object **data, char *err, size_t errlen

enum proto_status h_vminfo(HANDLER_ARGS);
enum proto_status h_policy(HANDLER_ARGS);
enum proto_status h_pin(HANDLER_ARGS);
enum proto_status h_unpin(HANDLER_ARGS);
enum proto_status h_migrate(HANDLER_ARGS);
enum proto_status h_explain(HANDLER_ARGS);
enum proto_status h_place(HANDLER_ARGS);

#endif

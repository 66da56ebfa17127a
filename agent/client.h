/*
 * client.h - vnumactl's side of the control socket: connect, ask, read the reply, follow
 * events.  Blocking, with a timeout; the socket path defaults to CLIENT_DEFAULT_SOCKET.
 */
#ifndef VNUMAD_AGENT_CLIENT_H
#define VNUMAD_AGENT_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/proto.h"

#define CLIENT_DEFAULT_SOCKET "/run/vnumad/vnumad.sock"
/* The environment variable that names the socket when -c/--connect does not (vnumactl(1)). */
#define CLIENT_SOCKET_ENV "VNUMAD_SOCKET"
#define CLIENT_TIMEOUT_MS 10000
/* Longest socket path, in bytes: the sun_path of a sockaddr_un holds 108 with the NUL. */
#define CLIENT_SOCKET_PATH_MAX 107

struct client;

/* Connect; NULL path = default.  0 or -errno with "cannot connect to PATH: reason" in err. */
int client_open(const char *path, struct client **out, char *err, size_t errlen);
void client_close(struct client *c);

/*
 * Send cmd with args (may be NULL; not consumed) and wait for its reply.  Returns 0 with *rep
 * filled (check rep->status), or -errno on I/O or protocol failure with a message in err.
 */
int client_call(struct client *c, const char *cmd, struct json_object *args,
                struct proto_reply *rep, char *err, size_t errlen);

/* client_call with a deadline of timeout_ms instead of CLIENT_TIMEOUT_MS. */
int client_call_timeout(struct client *c, const char *cmd, struct json_object *args, int timeout_ms,
                        struct proto_reply *rep, char *err, size_t errlen);

/*
 * After a successful "events" call with follow=true: wait up to timeout_ms for the next event
 * line.  Returns 1 with *rep holding an event, 0 on timeout, or -errno (-EPIPE: the daemon
 * closed the stream).
 */
int client_next_event(struct client *c, int timeout_ms, struct proto_reply *rep, char *err,
                      size_t errlen);

/* The monotonic clock in milliseconds, which the client's timeouts run on. */
int64_t client_now_ms(void);

#endif

/*
 * control.h - vnumad's control socket server (BRIEF 4.6).
 *
 * A Unix stream socket (default /run/vnumad/vnumad.sock, mode 0660).  Non-blocking: the
 * daemon's loop polls control_pollfds() and calls control_service() when any is ready, so one
 * slow or stuck client never blocks balancing or other clients.  Each peer's credentials are
 * read with SO_PEERCRED: root or a member of the configured group may run mutating commands;
 * anyone else only read commands.  A request line over PROTO_MAX_LINE, malformed, or with a
 * wrong version gets an error reply; the connection stays usable (over-long lines are
 * discarded up to their newline).  Idle clients are dropped after CONTROL_IDLE_S.
 *
 * Admission (agent/control_admit.c): peers that may not write share CONTROL_MAX_CLIENTS -
 * CONTROL_WRITER_RESERVE connections, at most CONTROL_MAX_PER_UID per uid, so no local user
 * can lock root out; a writer that finds the table full takes the place of the read-only
 * connection idle longest (a follower too), which is told why.  A connection refused gets a
 * reply line saying why, its request is read and dropped, then it is closed; refusals are
 * logged at most once per CONTROL_REFUSE_LOG_S.
 *
 * Ownership: the server owns its clients; handlers' data objects are owned by the server once
 * returned.
 */
#ifndef VNUMAD_AGENT_CONTROL_H
#define VNUMAD_AGENT_CONTROL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/proto.h"

#define CONTROL_MAX_CLIENTS 64
#define CONTROL_IDLE_S      300       /* drop a client silent this long (not a follower) */
#define CONTROL_OUT_MAX     (4 << 20) /* queued output per client before it is dropped */
/*
 * Connections only root and the control group may take: 8, so that a writer never has to
 * wait for a slot (and rarely needs to take one from a reader).
 */
#define CONTROL_WRITER_RESERVE 8
/* Connections one read-only uid may hold: 8 (a `top`, an `events --follow`, a few scripts). */
#define CONTROL_MAX_PER_UID 8
/* Refused connections kept open at once to read their request before closing: 16. */
#define CONTROL_LINGER_MAX 16
/* Seconds a refused connection is kept for its request at most. */
#define CONTROL_LINGER_S 1
/* Seconds between two log messages about refused connections (the next says how many). */
#define CONTROL_REFUSE_LOG_S 60
/* pollfds control_pollfds() may fill: the socket, every client and every refused one. */
#define CONTROL_MAX_POLLFDS (1 + CONTROL_MAX_CLIENTS + CONTROL_LINGER_MAX)

struct control;
struct control_client;

/* Who is asking: decided once per connection from SO_PEERCRED. */
struct control_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool may_write;
};

/*
 * A command handler.  On success return PROTO_OK and set *data (may stay NULL); on failure
 * return a status and write a message to err.  A handler that wants the connection to keep
 * receiving events (events --follow) calls control_client_follow(client) before returning.
 */
typedef enum proto_status (*control_handler_fn)(void *ctx, struct control_client *client,
                                                const struct control_peer *peer,
                                                struct json_object *args, struct json_object **data,
                                                char *err, size_t errlen);

struct control_command {
	const char *name;
	bool mutating; /* refused (403) unless peer->may_write */
	control_handler_fn fn;
	/*
	 * The arguments it takes (proto_args_check spec, e.g. "vm:s vcpu:i"): others, or a wrong
	 * JSON type, get 400 before the handler runs.  NULL: not checked.
	 */
	const char *args;
};

struct control_config {
	const char *path;                       /* socket path */
	mode_t mode;                            /* socket file mode, e.g. 0660 */
	gid_t group;                            /* group allowed to mutate; (gid_t)-1: root only */
	const struct control_command *commands; /* NULL-name terminated */
	void *ctx;                              /* passed to handlers */
};

/*
 * Create the socket.  If something already answers on path, another daemon runs: -EADDRINUSE
 * with a message.  A stale socket file is replaced.  0 or -errno with a message in err.
 */
int control_open(const struct control_config *cfg, struct control **out, char *err, size_t errlen);
void control_close(struct control *ctl); /* closes clients, unlinks the socket */

/* Fill up to max (CONTROL_MAX_POLLFDS) pollfds: the socket, clients, refused ones; how many. */
int control_pollfds(struct control *ctl, struct pollfd *fds, int max);
/* Handle whatever is ready in fds[0..n-1] (accept, read, dispatch, write).  Never blocks. */
void control_service(struct control *ctl, const struct pollfd *fds, int n);

/*
 * Mark a client as an event follower of vm_id's events (< 0: every VM's);
 * control_broadcast_event() then reaches it.
 */
void control_client_follow(struct control_client *client, int vm_id);
/*
 * The request being handled asks for a change though its command is not mutating (`policy`
 * with attributes): it is logged with who asked, as a mutating command's are.  NULL: no-op.
 */
void control_client_request_changes(struct control_client *client);
/* Send an event line to every follower (dropped for followers whose queue is full). */
void control_broadcast_event(struct control *ctl, struct json_object *event);

/* Counters for status/stats. */
struct control_stats {
	unsigned long long requests, errors, refused, dropped_clients;
	unsigned long long connections_refused; /* not admitted (also in dropped_clients) */
	unsigned long long evicted;             /* read-only ones closed for a writer (also) */
	int clients;
};
void control_get_stats(const struct control *ctl, struct control_stats *st);

#endif

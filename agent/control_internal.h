/*
 * control_internal.h - the control server's state, shared by control.c (I/O, requests,
 * replies, events) and control_admit.c (who is let in: credentials, capacity, refusals).
 * Nothing outside those two files includes it.
 */
#ifndef VNUMAD_AGENT_CONTROL_INTERNAL_H
#define VNUMAD_AGENT_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "agent/control.h"

struct control_client {
	struct control *ctl;
	int fd;
	struct control_peer peer;
	char *in; /* PROTO_MAX_LINE bytes: at most one whole line plus its newline */
	size_t in_len;
	bool discarding; /* inside an over-long line: drop input up to its newline */
	bool eof;        /* the peer shut down its side: answer what came, then close */
	bool follower;   /* receives control_broadcast_event() lines */
	bool changes;    /* the request in hand asks for a change (logged with who asked) */
	int follow_vm;   /* of this VM only (its id), or -1: all */
	bool dead;       /* closed at the end of this pass */
	char *out;       /* queued output: out[out_off..out_len) is unsent */
	size_t out_off, out_len, out_cap;
	double last_request_s; /* monotonic clock */
};

/* A refused connection: told why (write side shut), its request read and dropped, then closed. */
struct control_linger {
	int fd;
	double until_s; /* closed then at the latest */
};

struct control {
	int fd;
	char path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	dev_t dev; /* of the socket file we made, so close unlinks only ours */
	ino_t ino;
	gid_t group;
	char group_name[64];
	const struct control_command *commands;
	void *ctx;
	struct control_client *clients[CONTROL_MAX_CLIENTS];
	int nr_clients;
	struct control_linger linger[CONTROL_LINGER_MAX];
	int nr_linger;
	double refuse_log_s;         /* a refusal may be logged from then on */
	unsigned long refused_quiet; /* refusals not logged since the last message */
	double evict_log_s;          /* an eviction may be logged from then on */
	bool in_service;             /* inside control_service(): clients are reaped at its end */
	double accept_retry_s;       /* after accept() ran out of fds: listen again from then */
	double now_s;
	struct control_stats st;
};

/* control.c */
void control_client_queue(struct control_client *c, const char *line, size_t len);
void control_reap(struct control *ctl);

/* control_admit.c */
/* Take a new connection as a client, or refuse it (a reply saying why, then closed). */
void control_admit(struct control *ctl, int fd);
/* Refused connections: add them to fds (from fds[n], at most max in all); returns the new n. */
int control_linger_pollfds(struct control *ctl, struct pollfd *fds, int n, int max);
/* Read and drop what refused connections sent; close those done or past their time. */
void control_linger_service(struct control *ctl, const struct pollfd *fds, int n);
void control_linger_close_all(struct control *ctl);

#endif

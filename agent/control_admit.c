/*
 * control_admit.c - who the control server lets in (control.h): each new connection's
 * credentials (SO_PEERCRED, the control group), the room it may take, and a refusal that the
 * peer can read.
 *
 * The table holds CONTROL_MAX_CLIENTS connections.  Peers that may not write share all but
 * CONTROL_WRITER_RESERVE of them, at most CONTROL_MAX_PER_UID per uid: any local user may
 * connect (the socket is often 0666 for read-only vnumactl), and 64 idle connections or
 * `events --follow` streams of one user kept root's `vnumactl pause` out for as long as they
 * stayed.  A writer (root, the control group) that finds the table full takes the place of
 * the read-only connection idle longest, followers included; that one gets a line saying why.
 *
 * A refused connection is not closed at once: closing before reading its request made the
 * client's write fail with EPIPE, or its read with ECONNRESET, before it saw the reply.  It
 * gets the reply, its write side is shut, and what it sends is read and dropped until it
 * closes or CONTROL_LINGER_S passes (at most CONTROL_LINGER_MAX such at once; beyond that the
 * reply is sent and the connection closed).  Refusals are logged at most once per
 * CONTROL_REFUSE_LOG_S, the next message counting those not logged.
 */
#define _GNU_SOURCE /* struct ucred */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/control_internal.h"
#include "agent/log.h"
#include "policy/util.h"

/* Supplementary groups read at once with SO_PEERGROUPS before retrying with more room. */
#define CONTROL_PEER_GROUPS 64
/* Bytes read at once from a refused connection (and dropped). */
#define CONTROL_LINGER_CHUNK 4096

/* ---- credentials ----------------------------------------------------------------------- */

/* Peer's supplementary groups as the kernel saw them at connect(): 1 member, 0 not, <0. */
static int
control_peer_groups_has(int fd, gid_t group)
{
#ifdef SO_PEERGROUPS
	gid_t small[CONTROL_PEER_GROUPS], *groups = small;
	socklen_t len = sizeof(small);
	int rc = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE)
			return -errno;
		groups = xmalloc(len);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			rc = -errno;
			goto out;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == group)
			rc = 1;
out:
	if (groups != small)
		free(groups);
	return rc;
#else
	return -ENOPROTOOPT;
#endif
}

/* The "Groups:" line of /proc/PID/status (kernels before SO_PEERGROUPS): 1, 0, or <0. */
static int
control_proc_groups_has(pid_t pid, gid_t group)
{
	char path[64], *line = NULL, *p, *end;
	size_t cap = 0;
	int rc = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		rc = 0;
		for (p = line + 7;; p = end) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			if ((gid_t)g == group)
				rc = 1;
		}
		break;
	}
	free(line);
	fclose(f);
	return rc;
}

/* Root, the group as primary gid, or the group among the supplementary groups. */
static bool
control_peer_may_write(const struct control *ctl, int fd, const struct ucred *cr)
{
	int rc;

	if (cr->uid == 0)
		return true;
	if (ctl->group == (gid_t)-1)
		return false;
	if (cr->gid == ctl->group)
		return true;
	rc = control_peer_groups_has(fd, ctl->group);
	if (rc < 0)
		rc = control_proc_groups_has(cr->pid, ctl->group); /* unreadable: not a member */
	return rc == 1;
}

/* ---- refusals -------------------------------------------------------------------------- */

/* Log a refusal, at most once per CONTROL_REFUSE_LOG_S; the next message counts the others. */
static void
control_refuse_log(struct control *ctl, const struct ucred *cr, const char *why)
{
	char more[80] = "";

	if (ctl->now_s < ctl->refuse_log_s) {
		ctl->refused_quiet++;
		return;
	}
	if (ctl->refused_quiet > 0)
		snprintf(more, sizeof(more), " (and %lu more since the last such message)",
		         ctl->refused_quiet);
	if (cr != NULL)
		log_warnx("control: refusing a connection from pid %ld uid %lu: %s%s",
		          (long)cr->pid, (unsigned long)cr->uid, why, more);
	else
		log_warnx("control: refusing a connection: %s%s", why, more);
	ctl->refused_quiet = 0;
	ctl->refuse_log_s = ctl->now_s + CONTROL_REFUSE_LOG_S;
}

/*
 * Refuse fd: the reply line (id 0, the request unread; the client takes it as the answer to
 * whatever it asked), the write side shut, then fd lingers to have its request read.
 */
static void
control_refuse(struct control *ctl, int fd, const struct ucred *cr, const char *message)
{
	char *line = proto_reply_encode(0, PROTO_INTERNAL, message, NULL);

	ctl->st.dropped_clients++;
	ctl->st.connections_refused++;
	control_refuse_log(ctl, cr, message);
	/* A fresh socket's buffer takes one short line; if not, the close tells the peer. */
	if (send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* nothing to do: the peer sees the close */
	}
	free(line);
	shutdown(fd, SHUT_WR);
	if (ctl->nr_linger == CONTROL_LINGER_MAX) {
		close(fd);
		return;
	}
	ctl->linger[ctl->nr_linger++] =
	    (struct control_linger){.fd = fd, .until_s = ctl->now_s + CONTROL_LINGER_S};
}

int
control_linger_pollfds(struct control *ctl, struct pollfd *fds, int n, int max)
{
	for (int i = 0; i < ctl->nr_linger && n < max; i++)
		fds[n++] = (struct pollfd){.fd = ctl->linger[i].fd, .events = POLLIN};
	return n;
}

/* Drop what fd sent: true while the peer may send more. */
static bool
control_linger_drain(int fd)
{
	char buf[CONTROL_LINGER_CHUNK];

	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			continue;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
	}
	return true; /* a flood: the deadline ends it */
}

void
control_linger_service(struct control *ctl, const struct pollfd *fds, int n)
{
	int kept = 0;

	for (int i = 0; i < ctl->nr_linger; i++) {
		struct control_linger *l = &ctl->linger[i];
		bool open = ctl->now_s < l->until_s;

		for (int j = 0; open && j < n; j++)
			if (fds[j].fd == l->fd && fds[j].revents != 0)
				open = !(fds[j].revents & (POLLHUP | POLLERR | POLLNVAL)) &&
				       control_linger_drain(l->fd);
		if (open)
			ctl->linger[kept++] = *l;
		else
			close(l->fd);
	}
	ctl->nr_linger = kept;
}

void
control_linger_close_all(struct control *ctl)
{
	for (int i = 0; i < ctl->nr_linger; i++)
		close(ctl->linger[i].fd);
	ctl->nr_linger = 0;
}

/* ---- room ------------------------------------------------------------------------------ */

/* Read-only connections in the table, and how many of them uid holds. */
static int
control_readers(const struct control *ctl, uid_t uid, int *of_uid)
{
	int readers = 0;

	*of_uid = 0;
	for (int i = 0; i < ctl->nr_clients; i++) {
		const struct control_client *c = ctl->clients[i];

		if (c->dead || c->peer.may_write)
			continue;
		readers++;
		*of_uid += c->peer.uid == uid;
	}
	return readers;
}

/*
 * The read-only connection to close for a writer: the one idle longest (nothing half read,
 * nothing unsent) or, when every one is busy, the one that asked least recently; of equals
 * the oldest connection.  NULL when all are writers.
 */
static struct control_client *
control_evictee(const struct control *ctl)
{
	struct control_client *best = NULL;
	bool best_idle = false;

	for (int i = 0; i < ctl->nr_clients; i++) {
		struct control_client *c = ctl->clients[i];
		bool idle = c->in_len == 0 && c->out_len == c->out_off;

		if (c->dead || c->peer.may_write)
			continue;
		if (best == NULL || (idle && !best_idle) ||
		    (idle == best_idle && c->last_request_s < best->last_request_s)) {
			best = c;
			best_idle = idle;
		}
	}
	return best;
}

/* Close the read-only connection idle longest to make room for a writer; false if none. */
static bool
control_evict_for_writer(struct control *ctl)
{
	struct control_client *c = control_evictee(ctl);
	char msg[160], *line;

	if (c == NULL)
		return false;
	snprintf(msg, sizeof(msg),
	         "dropped: the connection was needed for root or the control group (all %d were "
	         "taken)",
	         CONTROL_MAX_CLIENTS);
	line = proto_reply_encode(0, PROTO_INTERNAL, msg, NULL);
	control_client_queue(c, line, strlen(line));
	free(line);
	if (ctl->now_s >= ctl->evict_log_s) {
		log_info("control: dropping read-only client pid %ld uid %lu%s to let a writer in "
		         "(the table of %d is full; more are dropped without a message for %d s)",
		         (long)c->peer.pid, (unsigned long)c->peer.uid,
		         c->follower ? " (a follower)" : "", CONTROL_MAX_CLIENTS,
		         CONTROL_REFUSE_LOG_S);
		ctl->evict_log_s = ctl->now_s + CONTROL_REFUSE_LOG_S;
	}
	c->dead = true;
	ctl->st.dropped_clients++;
	ctl->st.evicted++;
	control_reap(ctl);
	return true;
}

/*
 * Whether a peer with these credentials gets a slot; else the refusal in msg.  Makes room for
 * a writer when the table is full.
 */
static bool
control_room(struct control *ctl, const struct ucred *cr, bool may_write, char *msg, size_t len)
{
	int of_uid, readers = control_readers(ctl, cr->uid, &of_uid);

	if (may_write) {
		if (ctl->nr_clients < CONTROL_MAX_CLIENTS || control_evict_for_writer(ctl))
			return true;
		snprintf(msg, len,
		         "too many clients: all %d connections are taken by root or the "
		         "control group",
		         CONTROL_MAX_CLIENTS);
		return false;
	}
	if (of_uid >= CONTROL_MAX_PER_UID) {
		snprintf(
		    msg, len,
		    "too many clients: uid %lu holds %d connections, the most a read-only user "
		    "may (close some: vnumactl top, events --follow)",
		    (unsigned long)cr->uid, of_uid);
		return false;
	}
	if (readers >= CONTROL_MAX_CLIENTS - CONTROL_WRITER_RESERVE ||
	    ctl->nr_clients >= CONTROL_MAX_CLIENTS) {
		snprintf(msg, len,
		         "too many clients: the %d connections for read-only users are taken (%d "
		         "more are kept for root and the control group); try again later",
		         CONTROL_MAX_CLIENTS - CONTROL_WRITER_RESERVE, CONTROL_WRITER_RESERVE);
		return false;
	}
	return true;
}

void
control_admit(struct control *ctl, int fd)
{
	struct control_client *c;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	bool may_write;
	char msg[256];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		control_refuse(ctl, fd, NULL, "cannot read peer credentials");
		return;
	}
	may_write = control_peer_may_write(ctl, fd, &cr);
	if (!control_room(ctl, &cr, may_write, msg, sizeof(msg))) {
		control_refuse(ctl, fd, &cr, msg);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->ctl = ctl;
	c->fd = fd;
	c->peer.pid = cr.pid;
	c->peer.uid = cr.uid;
	c->peer.gid = cr.gid;
	c->peer.may_write = may_write;
	c->in = xmalloc(PROTO_MAX_LINE);
	c->last_request_s = ctl->now_s;
	ctl->clients[ctl->nr_clients++] = c;
}

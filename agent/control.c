/*
 * control.c - the control socket server: accept, assemble lines, dispatch, queue replies and
 * events, all without ever blocking (control.h, docs/protocol.md).  Who is let in, and as
 * what, is control_admit.c's.
 *
 * Each client has an input buffer of PROTO_MAX_LINE bytes (one whole request line fits) and
 * an output queue.  Requests are handled in order, one line at a time; a client that does
 * not read its replies stops being read once CONTROL_OUT_PAUSE bytes wait for it, so a
 * pipelining client gets back-pressure rather than unbounded memory.  Clients are closed only
 * at the end of control_service() (or control_broadcast_event() when called outside it), so
 * no handler ever sees its client freed under it.
 */
#define _GNU_SOURCE /* struct ucred, accept4 */
#include "agent/control.h"

#include <errno.h>
#include <grp.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/control_internal.h"
#include "agent/log.h"
#include "policy/util.h"

/* Connections the kernel queues before accept(): a burst of vnumactl runs.  Default 16. */
#define CONTROL_BACKLOG 16
/* Connections accepted per control_service() call, so a flood cannot starve the loop. */
#define CONTROL_ACCEPT_BURST 16
/*
 * Unsent output (bytes) above which a client's further requests wait: back-pressure for a
 * client that pipelines requests without reading replies.  256 KiB: a few large replies.
 */
#define CONTROL_OUT_PAUSE (256 << 10)
/* An empty output buffer larger than this (bytes) is freed rather than kept.  1 MiB. */
#define CONTROL_OUT_KEEP (1 << 20)
/* Room for a handler's error message (bytes): reload lists every bad config line.  4 KiB. */
#define CONTROL_ERR_MAX 4096
/* Seconds the listening socket is left alone after accept() fails for lack of fds. */
#define CONTROL_ACCEPT_RETRY_S 1

static double
control_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
control_sockaddr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	memcpy(sun->sun_path, path, strlen(path) + 1);
	return 0;
}

/*
 * Is another daemon on path?  0: free to bind (a stale socket file was removed),
 * -EADDRINUSE: something answers, other -errno: cannot tell.
 */
static int
control_probe(const char *path, const struct sockaddr_un *sun, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		util_errf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		util_errf(err, errlen, "%s exists and is not a socket", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		util_errf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0 ? 0 : -errno;
	close(fd);
	/* -EAGAIN: a listener whose backlog is full, which still means someone is there. */
	if (rc == 0 || rc == -EAGAIN || rc == -EINPROGRESS) {
		util_errf(err, errlen, "another vnumad answers on %s", path);
		return -EADDRINUSE;
	}
	if (rc == -ECONNREFUSED) {
		if (unlink(path) < 0 && errno != ENOENT) {
			rc = -errno;
			util_errf(err, errlen, "cannot remove stale %s: %s", path, strerror(errno));
			return rc;
		}
		return 0;
	}
	if (rc == -ENOENT)
		return 0;
	util_errf(err, errlen, "cannot probe %s: %s", path, strerror(-rc));
	return rc;
}

/*
 * Give the socket at path the group gid, unless bind() gave it that group already (the
 * daemon's own group: the systemd unit runs vnumad with Group=vnumad and without CAP_CHOWN,
 * chown(2) being outside its system call filter, so the socket group comes from there).
 */
static int
control_chgrp(const char *path, gid_t gid)
{
	struct stat st;

	if (lstat(path, &st) == 0 && st.st_gid == gid)
		return 0;
	return chown(path, (uid_t)-1, gid);
}

/* Bind with no access for anyone else until mode and group are set, then listen. */
static int
control_bind(const struct control_config *cfg, const struct sockaddr_un *sun, int *fdp, char *err,
             size_t errlen)
{
	mode_t old_mask;
	int fd, rc = 0;
	const char *what = "socket";

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	what = "bind";
	old_mask = umask(0177);
	rc = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
	umask(old_mask);
	if (rc < 0)
		goto fail;
	what = "chmod";
	if (chmod(cfg->path, cfg->mode & 07777) < 0)
		goto fail_unlink;
	what = "chown";
	if (cfg->group != (gid_t)-1 && control_chgrp(cfg->path, cfg->group) < 0)
		goto fail_unlink;
	what = "listen";
	if (listen(fd, CONTROL_BACKLOG) < 0)
		goto fail_unlink;
	*fdp = fd;
	return 0;
fail_unlink:
	rc = -errno;
	unlink(cfg->path);
	errno = -rc;
fail:
	rc = -errno;
	util_errf(err, errlen, "cannot %s %s: %s", what, cfg->path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

static void
control_group_name(struct control *ctl)
{
	struct group grp, *res = NULL;
	char buf[4096];

	if (ctl->group == (gid_t)-1)
		return;
	if (getgrgid_r(ctl->group, &grp, buf, sizeof(buf), &res) == 0 && res != NULL)
		snprintf(ctl->group_name, sizeof(ctl->group_name), "%s", res->gr_name);
	else
		snprintf(ctl->group_name, sizeof(ctl->group_name), "%u", (unsigned)ctl->group);
}

int
control_open(const struct control_config *cfg, struct control **out, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct control *ctl;
	struct stat st;
	int fd = -1, rc;

	*out = NULL;
	if (cfg == NULL || cfg->path == NULL || cfg->path[0] == '\0' || cfg->commands == NULL) {
		util_errf(err, errlen, "control socket: no path or no commands");
		return -EINVAL;
	}
	if (control_sockaddr(cfg->path, &sun) < 0) {
		util_errf(err, errlen, "socket path too long (at most %zu bytes): %s",
		          sizeof(sun.sun_path) - 1, cfg->path);
		return -ENAMETOOLONG;
	}
	rc = control_probe(cfg->path, &sun, err, errlen);
	if (rc == 0)
		rc = control_bind(cfg, &sun, &fd, err, errlen);
	if (rc < 0)
		return rc;
	ctl = xcalloc(1, sizeof(*ctl));
	ctl->fd = fd;
	memcpy(ctl->path, sun.sun_path, sizeof(ctl->path));
	if (stat(cfg->path, &st) == 0) {
		ctl->dev = st.st_dev;
		ctl->ino = st.st_ino;
	}
	ctl->group = cfg->group;
	ctl->commands = cfg->commands;
	ctl->ctx = cfg->ctx;
	control_group_name(ctl);
	*out = ctl;
	return 0;
}

static void
control_client_free(struct control_client *c)
{
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

/* Close and forget the clients marked dead, keeping the others in order. */
void
control_reap(struct control *ctl)
{
	int j = 0;

	for (int i = 0; i < ctl->nr_clients; i++) {
		if (ctl->clients[i]->dead)
			control_client_free(ctl->clients[i]);
		else
			ctl->clients[j++] = ctl->clients[i];
	}
	ctl->nr_clients = j;
}

void
control_close(struct control *ctl)
{
	struct stat st;

	if (ctl == NULL)
		return;
	for (int i = 0; i < ctl->nr_clients; i++)
		control_client_free(ctl->clients[i]);
	control_linger_close_all(ctl);
	close(ctl->fd);
	/* Unlink only the file we created, not one a successor daemon has bound since. */
	if (stat(ctl->path, &st) == 0 && st.st_dev == ctl->dev && st.st_ino == ctl->ino)
		unlink(ctl->path);
	free(ctl);
}

static size_t
control_pending(const struct control_client *c)
{
	return c->out_len - c->out_off;
}

int
control_pollfds(struct control *ctl, struct pollfd *fds, int max)
{
	int n = 0;

	if (max <= 0)
		return 0;
	fds[n++] = (struct pollfd){.fd = ctl->fd,
	                           .events = control_now_s() >= ctl->accept_retry_s ? POLLIN : 0};
	for (int i = 0; i < ctl->nr_clients && n < max; i++) {
		struct control_client *c = ctl->clients[i];
		short events = 0;

		if (c->dead)
			continue;
		if (!c->eof && control_pending(c) < CONTROL_OUT_PAUSE)
			events |= POLLIN;
		if (control_pending(c) > 0)
			events |= POLLOUT;
		fds[n++] = (struct pollfd){.fd = c->fd, .events = events};
	}
	return control_linger_pollfds(ctl, fds, n, max);
}

/* Send what the socket takes now; a peer gone or broken is marked dead. */
static void
control_client_flush(struct control_client *c)
{
	while (!c->dead && control_pending(c) > 0) {
		ssize_t n = send(c->fd, c->out + c->out_off, control_pending(c),
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->out_off += (size_t)n;
			c->last_request_s = c->ctl->now_s; /* a reader is not idle */
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return;
		} else {
			c->dead = true;
		}
	}
	if (control_pending(c) == 0) {
		c->out_off = c->out_len = 0;
		if (c->out_cap > CONTROL_OUT_KEEP) {
			free(c->out);
			c->out = NULL;
			c->out_cap = 0;
		}
	}
}

/* Queue one line; a client that would exceed CONTROL_OUT_MAX is dropped. */
void
control_client_queue(struct control_client *c, const char *line, size_t len)
{
	size_t pending = control_pending(c);

	if (c->dead)
		return;
	/* One reply larger than the cap still goes out when nothing else waits. */
	if (pending > 0 && pending + len > CONTROL_OUT_MAX) {
		log_info("control: dropping client pid %ld uid %lu: over %d bytes unread",
		         (long)c->peer.pid, (unsigned long)c->peer.uid, CONTROL_OUT_MAX);
		c->dead = true;
		c->ctl->st.dropped_clients++;
		return;
	}
	if (c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, pending);
		c->out_off = 0;
		c->out_len = pending;
	}
	util_array_reserve((void **)&c->out, &c->out_cap, c->out_len + len, 1);
	memcpy(c->out + c->out_len, line, len);
	c->out_len += len;
	control_client_flush(c);
}

static void
control_reply(struct control_client *c, int64_t id, enum proto_status status, const char *message,
              struct json_object *data)
{
	char *line = proto_reply_encode(id, status, message, data);

	if (status != PROTO_OK)
		c->ctl->st.errors++;
	if (status == PROTO_FORBIDDEN)
		c->ctl->st.refused++;
	control_client_queue(c, line, strlen(line));
	free(line);
}

static const struct control_command *
control_command_find(const struct control *ctl, const char *name)
{
	for (const struct control_command *cmd = ctl->commands; cmd->name != NULL; cmd++)
		if (strcmp(cmd->name, name) == 0)
			return cmd;
	return NULL;
}

/*
 * Who asked for a change, what, and how it ended, in the log (VNUMAD_ACTION=request, VM= when
 * the request names one): the uid and pid come from the socket (SO_PEERCRED), not from the
 * request.
 */
static void
control_request_log(const struct control_client *c, const struct control_command *cmd,
                    const struct proto_request *req, enum proto_status st, const char *err)
{
	struct json_object *vm = NULL;
	const char *args = req->args != NULL
	                       ? json_object_to_json_string_ext(req->args, JSON_C_TO_STRING_PLAIN)
	                       : "{}";

	if (req->args != NULL)
		json_object_object_get_ex(req->args, "vm", &vm);
	log_vm_action(-1, vm != NULL ? json_object_get_string(vm) : NULL, "request", c->ctl->now_s,
	              "request %s %s from uid %u (pid %d): %s%s%s", cmd->name, args,
	              (unsigned)c->peer.uid, (int)c->peer.pid,
	              st == PROTO_OK ? "done" : proto_status_name(st), st == PROTO_OK ? "" : ": ",
	              st == PROTO_OK ? "" : err);
}

/* Run a decoded request's handler (or refuse it) and queue the reply. */
static void
control_dispatch(struct control_client *c, const struct proto_request *req)
{
	const struct control_command *cmd = control_command_find(c->ctl, req->cmd);
	struct json_object *data = NULL;
	bool was_follower = c->follower;
	enum proto_status st;
	char err[CONTROL_ERR_MAX] = "";

	if (cmd == NULL) {
		snprintf(err, sizeof(err), "unknown command '%s'", req->cmd);
		control_reply(c, req->id, PROTO_NOT_FOUND, err, NULL);
		return;
	}
	if (cmd->mutating && !c->peer.may_write) {
		snprintf(err, sizeof(err), "permission denied: '%s' changes state (root%s%s only)",
		         cmd->name, c->ctl->group_name[0] != '\0' ? " or group " : "",
		         c->ctl->group_name);
		control_request_log(c, cmd, req, PROTO_FORBIDDEN, err);
		control_reply(c, req->id, PROTO_FORBIDDEN, err, NULL);
		return;
	}
	st = proto_args_check(req->args, cmd->args, err, sizeof(err));
	if (st != PROTO_OK) {
		control_reply(c, req->id, st, err, NULL);
		return;
	}
	c->changes = cmd->mutating;
	st = cmd->fn(c->ctl->ctx, c, &c->peer, req->args, &data, err, sizeof(err));
	if (st != PROTO_OK) {
		c->follower = was_follower; /* a failed "events" does not start a stream */
		json_object_put(data);
		data = NULL;
		if (err[0] == '\0')
			snprintf(err, sizeof(err), "%s", proto_status_name(st));
	}
	if (c->changes)
		control_request_log(c, cmd, req, st, err);
	c->changes = false;
	control_reply(c, req->id, st, st == PROTO_OK ? NULL : err, data);
	json_object_put(data);
}

static void
control_handle_line(struct control_client *c, const char *line, size_t len)
{
	struct proto_request req;
	enum proto_status st;
	char err[256];

	c->ctl->st.requests++;
	c->last_request_s = c->ctl->now_s;
	st = proto_request_decode(line, len, &req, err, sizeof(err));
	if (st != PROTO_OK) {
		control_reply(c, req.id, st, err, NULL);
		return;
	}
	control_dispatch(c, &req);
	proto_request_free(&req);
}

/* Handle the complete lines in the input buffer while the output queue has room. */
static void
control_client_process(struct control_client *c)
{
	size_t start = 0;
	char *nl;

	while (!c->dead && control_pending(c) < CONTROL_OUT_PAUSE) {
		nl = memchr(c->in + start, '\n', c->in_len - start);
		if (nl != NULL) {
			control_handle_line(c, c->in + start, (size_t)(nl - (c->in + start)));
			start = (size_t)(nl - c->in) + 1;
		} else if (start == 0 && c->in_len == PROTO_MAX_LINE) {
			char msg[64];

			snprintf(msg, sizeof(msg), "request too large: over %d bytes",
			         PROTO_MAX_LINE);
			c->ctl->st.requests++;
			c->last_request_s = c->ctl->now_s;
			control_reply(c, 0, PROTO_TOO_LARGE, msg, NULL);
			c->discarding = true;
			c->in_len = 0;
			break;
		} else if (c->eof && start < c->in_len) {
			/* The last line lacks its newline: answer it anyway (printf | nc -U). */
			control_handle_line(c, c->in + start, c->in_len - start);
			start = c->in_len;
		} else {
			break;
		}
	}
	if (start > 0) {
		memmove(c->in, c->in + start, c->in_len - start);
		c->in_len -= start;
	}
}

/* Inside an over-long line: drop the n bytes just read up to the first newline. */
static void
control_client_discard(struct control_client *c, size_t n)
{
	char *nl = memchr(c->in + c->in_len, '\n', n);

	if (nl == NULL)
		return;
	c->discarding = false;
	n -= (size_t)(nl - (c->in + c->in_len)) + 1;
	memmove(c->in + c->in_len, nl + 1, n);
	c->in_len += n;
}

static void
control_client_read(struct control_client *c)
{
	size_t room = PROTO_MAX_LINE - c->in_len;
	ssize_t n;

	if (room == 0)
		return; /* whole lines wait for output room; never happens otherwise */
	n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
	if (n > 0 && c->discarding)
		control_client_discard(c, (size_t)n);
	else if (n > 0)
		c->in_len += (size_t)n;
	else if (n == 0)
		c->eof = true;
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		c->dead = true;
}

static void
control_client_service(struct control_client *c, short revents)
{
	/* POLLHUP on a stream socket: the peer closed; nothing we send can reach it. */
	if (revents & (POLLNVAL | POLLHUP | POLLERR)) {
		c->dead = true;
		return;
	}
	if (control_pending(c) > 0 && (revents & POLLOUT))
		control_client_flush(c);
	if (!c->dead && !c->eof && control_pending(c) < CONTROL_OUT_PAUSE && (revents & POLLIN))
		control_client_read(c);
	if (!c->dead)
		control_client_process(c);
	if (c->eof && control_pending(c) == 0 && !c->follower)
		c->dead = true;
}

static void
control_accept(struct control *ctl)
{
	for (int i = 0; i < CONTROL_ACCEPT_BURST; i++) {
		int fd = accept4(ctl->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			control_admit(ctl, fd);
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return;
		} else if (errno != EINTR && errno != ECONNABORTED && errno != EPROTO) {
			/* Out of fds or memory: the socket stays readable, so don't spin on it. */
			log_warn("control: cannot accept; retrying in %d s",
			         CONTROL_ACCEPT_RETRY_S);
			ctl->accept_retry_s = ctl->now_s + CONTROL_ACCEPT_RETRY_S;
			return;
		}
	}
}

static struct control_client *
control_client_by_fd(struct control *ctl, int fd)
{
	for (int i = 0; i < ctl->nr_clients; i++)
		if (ctl->clients[i]->fd == fd)
			return ctl->clients[i];
	return NULL;
}

void
control_service(struct control *ctl, const struct pollfd *fds, int n)
{
	bool can_accept = false;

	ctl->in_service = true;
	ctl->now_s = control_now_s();
	for (int i = 0; i < n; i++) {
		struct control_client *c;

		if (fds[i].revents == 0)
			continue;
		if (fds[i].fd == ctl->fd) {
			can_accept = (fds[i].revents & POLLIN) != 0;
			continue;
		}
		c = control_client_by_fd(ctl, fds[i].fd);
		if (c != NULL && !c->dead)
			control_client_service(c, fds[i].revents);
	}
	for (int i = 0; i < ctl->nr_clients; i++) {
		struct control_client *c = ctl->clients[i];

		if (!c->dead && !c->follower && ctl->now_s - c->last_request_s >= CONTROL_IDLE_S) {
			log_debug("control: dropping client pid %ld: idle for %d s",
			          (long)c->peer.pid, CONTROL_IDLE_S);
			c->dead = true;
			ctl->st.dropped_clients++;
		}
	}
	/* Reap before accepting, so a reused fd number never meets an old revents. */
	control_reap(ctl);
	control_linger_service(ctl, fds, n);
	if (can_accept)
		control_accept(ctl);
	ctl->in_service = false;
}

void
control_client_request_changes(struct control_client *client)
{
	if (client != NULL)
		client->changes = true;
}

void
control_client_follow(struct control_client *client, int vm_id)
{
	client->follower = true;
	client->follow_vm = vm_id;
}

void
control_broadcast_event(struct control *ctl, struct json_object *event)
{
	char *line = proto_event_encode(event);
	size_t len = strlen(line);
	struct json_object *id;
	int vm_id = json_object_object_get_ex(event, "vm_id", &id) ? json_object_get_int(id) : -1;

	if (!ctl->in_service)
		ctl->now_s = control_now_s();
	for (int i = 0; i < ctl->nr_clients; i++)
		if (ctl->clients[i]->follower &&
		    (ctl->clients[i]->follow_vm < 0 || ctl->clients[i]->follow_vm == vm_id))
			control_client_queue(ctl->clients[i], line, len);
	free(line);
	if (!ctl->in_service)
		control_reap(ctl);
}

void
control_get_stats(const struct control *ctl, struct control_stats *st)
{
	*st = ctl->st;
	st->clients = 0;
	for (int i = 0; i < ctl->nr_clients; i++)
		st->clients += !ctl->clients[i]->dead;
}

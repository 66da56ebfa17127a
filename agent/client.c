/*
 * client.c - vnumactl's blocking side of the control socket (client.h).
 *
 * One request at a time: write the line, then read lines until the reply with our id comes
 * (event lines of a follow stream that arrive meanwhile are skipped).  Every wait is a poll()
 * bounded by a deadline, so a hung daemon costs at most CLIENT_TIMEOUT_MS.
 */
#include "agent/client.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "policy/util.h"

/*
 * Longest reply line we accept (bytes, newline included).  Replies are not capped like
 * requests: a list of thousands of VMs or a long event history is large.  16 MiB is four
 * times the daemon's per-client output cap (CONTROL_OUT_MAX).
 */
#define CLIENT_LINE_MAX (PROTO_MAX_LINE * 256)
/* Bytes asked of each read(). */
#define CLIENT_READ_CHUNK 65536

struct client {
	int fd;
	int64_t next_id;
	char *buf; /* received bytes; buf[off..len) not yet returned as lines */
	size_t off, len, cap;
	size_t line_len; /* the line last returned, to drop on the next call */
};

int64_t
client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline_ms for poll(); -1 (forever) when deadline_ms < 0. */
static int
client_wait_ms(int64_t deadline_ms)
{
	int64_t left;

	if (deadline_ms < 0)
		return -1;
	left = deadline_ms - client_now_ms();
	return left < 0 ? 0 : (int)left;
}

int
client_open(const char *path, struct client **out, char *err, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct client *c;
	int fd, rc;

	*out = NULL;
	if (path == NULL)
		path = CLIENT_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		util_errf(err, errlen, "cannot connect to %s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		util_errf(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
		return rc;
	}
	if (connect(fd, (const struct sockaddr *)&sun, sizeof(sun)) < 0) {
		rc = -errno;
		util_errf(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->next_id = 1;
	*out = c;
	return 0;
}

void
client_close(struct client *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}

/* Write all of line before deadline_ms. */
static int
client_write_all(struct client *c, const char *line, size_t len, int64_t deadline_ms, char *err,
                 size_t errlen)
{
	while (len > 0) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
		ssize_t n;
		int rc = poll(&pfd, 1, client_wait_ms(deadline_ms));

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0) {
			util_errf(err, errlen, "vnumad did not take the request in time");
			return -ETIMEDOUT;
		}
		n = rc < 0 ? -1 : send(c->fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n < 0) {
			rc = -errno;
			util_errf(err, errlen, "cannot send to vnumad: %s", strerror(errno));
			return rc;
		}
		line += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read more bytes into the buffer: 1 got some, 0 timeout, -errno (-EPIPE at end of stream). */
static int
client_fill(struct client *c, int64_t deadline_ms, char *err, size_t errlen)
{
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	ssize_t n;
	int rc;

	if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len >= CLIENT_LINE_MAX) {
		util_errf(err, errlen, "reply longer than %d MiB", CLIENT_LINE_MAX >> 20);
		return -EMSGSIZE;
	}
	do
		rc = poll(&pfd, 1, client_wait_ms(deadline_ms));
	while (rc < 0 && errno == EINTR);
	if (rc <= 0) {
		rc = rc == 0 ? 0 : -errno;
		if (rc < 0)
			util_errf(err, errlen, "poll: %s", strerror(-rc));
		return rc;
	}
	util_array_reserve((void **)&c->buf, &c->cap, c->len + CLIENT_READ_CHUNK, 1);
	n = recv(c->fd, c->buf + c->len, CLIENT_READ_CHUNK, MSG_DONTWAIT);
	if (n == 0) {
		util_errf(err, errlen, "vnumad closed the connection");
		return -EPIPE;
	}
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			return 1; /* try again; the deadline still holds */
		rc = errno == ECONNRESET ? -EPIPE : -errno;
		util_errf(err, errlen, "cannot read from vnumad: %s", strerror(errno));
		return rc;
	}
	c->len += (size_t)n;
	return 1;
}

/*
 * The next line (without its newline) in *line and *len, valid until the next call: 1, 0 on
 * timeout, or -errno.
 */
static int
client_read_line(struct client *c, int64_t deadline_ms, const char **line, size_t *len, char *err,
                 size_t errlen)
{
	size_t scanned = 0;

	c->off += c->line_len;
	c->line_len = 0;
	for (;;) {
		/* Nothing received yet: buf is still NULL, and NULL + 0 is undefined. */
		char *nl = c->len > c->off + scanned
		               ? memchr(c->buf + c->off + scanned, '\n', c->len - c->off - scanned)
		               : NULL;
		int rc;

		if (nl != NULL) {
			*line = c->buf + c->off;
			*len = (size_t)(nl - *line);
			c->line_len = *len + 1;
			return 1;
		}
		scanned = c->len - c->off;
		rc = client_fill(c, deadline_ms, err, errlen);
		if (rc <= 0)
			return rc;
	}
}

/*
 * After the request could not be sent (write_rc): 0 with *rep when the daemon's error reply
 * (id 0) came first, else write_rc (err stays as the write left it).
 */
static int
client_refusal(struct client *c, int64_t deadline_ms, int write_rc, struct proto_reply *rep)
{
	char read_err[256];
	const char *line;
	size_t len;

	if (client_read_line(c, deadline_ms, &line, &len, read_err, sizeof(read_err)) == 1 &&
	    proto_reply_decode(line, len, rep, read_err, sizeof(read_err)) == 0) {
		if (rep->event == NULL && rep->id == 0 && rep->status != PROTO_OK)
			return 0;
		proto_reply_free(rep);
	}
	memset(rep, 0, sizeof(*rep));
	return write_rc;
}

int
client_call(struct client *c, const char *cmd, struct json_object *args, struct proto_reply *rep,
            char *err, size_t errlen)
{
	return client_call_timeout(c, cmd, args, CLIENT_TIMEOUT_MS, rep, err, errlen);
}

int
client_call_timeout(struct client *c, const char *cmd, struct json_object *args, int timeout_ms,
                    struct proto_reply *rep, char *err, size_t errlen)
{
	int64_t deadline_ms = client_now_ms() + timeout_ms;
	int64_t id = c->next_id++;
	char *req = proto_request_encode(id, cmd, args);
	const char *line;
	size_t len;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = client_write_all(c, req, strlen(req), deadline_ms, err, errlen);
	free(req);
	/*
	 * The daemon may have answered and closed before taking the request (a connection it
	 * refused): its reply, if any, is still there to read, and is what to show.
	 */
	if (rc == -EPIPE || rc == -ECONNRESET)
		return client_refusal(c, deadline_ms, rc, rep);
	while (rc == 0) {
		rc = client_read_line(c, deadline_ms, &line, &len, err, errlen);
		if (rc == 0) {
			util_errf(err, errlen, "no reply from vnumad within %g s",
			          timeout_ms / 1000.0);
			return -ETIMEDOUT;
		}
		if (rc < 0)
			return rc;
		rc = proto_reply_decode(line, len, rep, err, errlen);
		if (rc < 0)
			return -EPROTO;
		/* Skip a follow stream's events and late replies to calls that timed out. */
		if (rep->event != NULL || (rep->id > 0 && rep->id < id)) {
			proto_reply_free(rep);
			continue;
		}
		/* id 0: the daemon could not read ours (it only answers in order). */
		if (rep->id != id && !(rep->id == 0 && rep->status != PROTO_OK)) {
			util_errf(err, errlen, "reply id %lld does not match request %lld",
			          (long long)rep->id, (long long)id);
			proto_reply_free(rep);
			return -EPROTO;
		}
		return 0;
	}
	return rc;
}

int
client_next_event(struct client *c, int timeout_ms, struct proto_reply *rep, char *err,
                  size_t errlen)
{
	int64_t deadline_ms = timeout_ms < 0 ? -1 : client_now_ms() + timeout_ms;
	const char *line;
	size_t len;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rc = client_read_line(c, deadline_ms, &line, &len, err, errlen);
	if (rc <= 0)
		return rc;
	if (proto_reply_decode(line, len, rep, err, errlen) < 0)
		return -EPROTO;
	if (rep->event == NULL) {
		util_errf(err, errlen, "expected an event, got a reply (status %d: %s)",
		          rep->status, rep->message);
		proto_reply_free(rep);
		return -EPROTO;
	}
	return 1;
}

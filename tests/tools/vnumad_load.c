/*
 * vnumad_load - a test tool: many clients at once on a vnumad control socket, each sending a
 * batch of requests, good and bad, and counting the replies.
 *
 *   vnumad_load SOCKET CLIENTS REQUESTS
 *
 * Opens CLIENTS connections at once (non-blocking), and on each sends REQUESTS request lines
 * drawn in turn from a fixed list: reads, malformed JSON, invalid UTF-8, deep nesting, wrong
 * JSON types for the arguments of every command, a 1 MiB line (once per client).  Then reads
 * until every request has its reply line, or the daemon refused the connection with one
 * line, or the peer closed.  Prints "clients C served S refused R replies N errors E
 * unanswered U" and exits 0 when no request went unanswered on a connection the daemon kept,
 * 1 otherwise (2 on usage or connect errors).  Bounded: gives up after 60 s.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/tools/tool_connect.h"

#define LOAD_MAX_CLIENTS 1024
#define LOAD_GIVE_UP_S   60
#define LOAD_BIG_LINE    (1024 * 1024)

/* One line each; the big line is made separately. */
static const char *const load_requests[] = {
    "{\"version\":1,\"cmd\":\"status\"}",
    "{\"version\":1,\"cmd\":\"list\"}",
    "{\"version\":1,\"cmd\":\"vminfo\",\"args\":{\"vm\":\"db-orders\"}}",
    "{\"version\":1,\"cmd\":\"stats\"}",
    "{\"version\":1,\"cmd\":\"li",
    "{\"version\":1,\"cmd\":\"list\",\"args\":{\"x\":\"\xff\xfe\"}}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]"
    "]]"
    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "{\"version\":1,\"cmd\":\"vminfo\",\"args\":{\"vm\":7}}",
    "{\"version\":1,\"cmd\":\"policy\",\"args\":{\"vm\":\"web1\",\"mode\":true}}",
    "{\"version\":1,\"cmd\":\"policy\",\"args\":{\"vm\":\"web1\",\"scope\":[]}}",
    "{\"version\":1,\"cmd\":\"events\",\"args\":{\"limit\":\"5\"}}",
    "{\"version\":1,\"cmd\":\"events\",\"args\":{\"follow\":1}}",
    "{\"version\":1,\"cmd\":\"place\",\"args\":{\"vcpus\":\"4\",\"memory_mib\":1024}}",
    "{\"version\":1,\"cmd\":\"pin\",\"args\":{\"vm\":\"web1\",\"vcpu\":\"0\",\"node\":{}}}",
    "{\"version\":1,\"cmd\":\"unpin\",\"args\":{\"vm\":null,\"vcpu\":1.5}}",
    "{\"version\":1,\"cmd\":\"migrate\",\"args\":{\"vm\":\"web1\",\"node\":[1]}}",
    "{\"version\":1,\"cmd\":\"explain\",\"args\":{\"vm\":{\"a\":1}}}",
    "{\"version\":1,\"cmd\":\"nodeinfo\",\"args\":{\"bogus\":1}}",
    "{\"version\":1,\"cmd\":\"stats\",\"args\":{\"vm\":\"a\",\"vm\":\"b\"}}",
    "{\"version\":\"1\",\"cmd\":\"list\"}",
    "{\"version\":1,\"cmd\":7}",
    "hello",
};
#define LOAD_NR_REQUESTS ((int)(sizeof(load_requests) / sizeof(load_requests[0])))

struct load_client {
	int fd;
	char *out; /* what is still to be sent */
	size_t out_len, out_off;
	int sent, replies, errors;
	bool refused, closed;
	char partial[256]; /* the start of the current reply line, for its status */
	size_t partial_len;
};

static double
load_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
load_connect(const char *path)
{
	int fd = tool_connect(path);

	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* The client's batch: nr lines, the first client's first line the 1 MiB one. */
static void
load_batch(struct load_client *c, int idx, int nr)
{
	size_t cap = 0, len = 0;

	for (int i = 0; i < nr; i++) {
		const char *r = load_requests[(idx + i) % LOAD_NR_REQUESTS];
		size_t n = strlen(r);

		if (i == 0 && idx % 50 == 0)
			n = LOAD_BIG_LINE;
		if (len + n + 2 > cap) {
			cap = (len + n + 2) * 2;
			c->out = realloc(c->out, cap);
			if (c->out == NULL)
				abort();
		}
		if (n == LOAD_BIG_LINE)
			memset(c->out + len, 'x', n);
		else
			memcpy(c->out + len, r, n);
		len += n;
		c->out[len++] = '\n';
	}
	c->out_len = len;
	c->sent = nr;
}

/* Count the complete reply lines in buf; an error is a line whose status is not 0. */
static void
load_replies(struct load_client *c, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			if (c->partial_len < sizeof(c->partial) - 1)
				c->partial[c->partial_len++] = buf[i];
			continue;
		}
		c->partial[c->partial_len] = '\0';
		if (strstr(c->partial, "\"event\"") == NULL) {
			c->replies++;
			if (strstr(c->partial, "\"status\":0,") == NULL)
				c->errors++;
			if (c->replies == 1 && strstr(c->partial, "too many clients") != NULL)
				c->refused = true;
		}
		c->partial_len = 0;
	}
}

static bool
load_done(const struct load_client *c)
{
	return c->closed || c->refused || c->replies >= c->sent;
}

static void
load_io(struct load_client *c, short revents)
{
	char buf[65536];
	ssize_t n;

	if (c->out_off < c->out_len && (revents & POLLOUT)) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n > 0)
			c->out_off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			c->out_off = c->out_len; /* the peer is gone: read what it said */
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		while ((n = recv(c->fd, buf, sizeof(buf), 0)) > 0)
			load_replies(c, buf, (size_t)n);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			c->closed = true;
	}
}

int
main(int argc, char **argv)
{
	static struct load_client cl[LOAD_MAX_CLIENTS];
	static struct pollfd fds[LOAD_MAX_CLIENTS];
	int nr, per, served = 0, refused = 0, replies = 0, errors = 0, unanswered = 0;
	double t0 = load_now_s();

	if (argc != 4 || (nr = atoi(argv[2])) < 1 || nr > LOAD_MAX_CLIENTS ||
	    (per = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: vnumad_load SOCKET CLIENTS(1-%d) REQUESTS\n",
		        LOAD_MAX_CLIENTS);
		return 2;
	}
	for (int i = 0; i < nr; i++) {
		if ((cl[i].fd = load_connect(argv[1])) < 0) {
			fprintf(stderr, "vnumad_load: connect %s: %s\n", argv[1], strerror(errno));
			return 2;
		}
		load_batch(&cl[i], i, per);
	}
	for (;;) {
		int open = 0;

		for (int i = 0; i < nr; i++) {
			fds[i] = (struct pollfd){.fd = load_done(&cl[i]) ? -1 : cl[i].fd,
			                         .events = POLLIN};
			if (cl[i].out_off < cl[i].out_len)
				fds[i].events |= POLLOUT;
			open += fds[i].fd >= 0;
		}
		if (open == 0 || load_now_s() - t0 > LOAD_GIVE_UP_S)
			break;
		if (poll(fds, (nfds_t)nr, 1000) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < nr; i++)
			if (fds[i].fd >= 0 && fds[i].revents)
				load_io(&cl[i], fds[i].revents);
	}
	for (int i = 0; i < nr; i++) {
		replies += cl[i].replies;
		errors += cl[i].errors;
		if (cl[i].refused) {
			refused++;
		} else {
			served++;
			if (cl[i].replies < cl[i].sent)
				unanswered += cl[i].sent - cl[i].replies;
		}
		close(cl[i].fd);
		free(cl[i].out);
	}
	printf("clients %d served %d refused %d replies %d errors %d unanswered %d\n", nr, served,
	       refused, replies, errors, unanswered);
	return unanswered == 0 ? 0 : 1;
}

/*
 * fuzz_client.c - libFuzzer target for vnumactl's side of the control socket
 * (agent/client.c): the line reader that reassembles replies from whatever pieces recv()
 * returns, the skipping of event lines and late replies, and the reply decoder under it.
 *
 * The input is what the daemon sends.  Its first byte is the size of the pieces the
 * daemon's end writes it in (0: all at once; a seed starting with a space writes 32 bytes at a
 * time); each piece is written only when the client has read the one before, so its reads end
 * where the pieces do.  The client connects to a socket in a private directory, asks
 * "status" (id 1) and "list" (id 2), then reads events until the stream ends.  Built by
 * `make fuzz` (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/client/
 * (tests/unit/test_fuzz_replay_agent.c).  Returns what the first client_call() returned.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "agent/client.h"
#include "agent/proto.h"
#include "tests/fuzz/fuzz_util.h"

/* Most pieces one input is written in, and how long the writer waits for each to be read. */
#define FUZZ_CLIENT_PIECES_MAX 64
#define FUZZ_CLIENT_WAIT_MS    2000
/* Events read after the calls, and how long each may take (the stream ends well before). */
#define FUZZ_CLIENT_EVENTS_MAX 64
#define FUZZ_CLIENT_EVENT_MS   2000

int fuzz_client_run(const uint8_t *data, size_t size);

struct fuzz_client_feed {
	int fd; /* the daemon's end */
	const uint8_t *data;
	size_t size, piece;
};

static int64_t
fuzz_client_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write the input piece by piece, each once the client has read all before it; then EOF. */
static void *
fuzz_client_writer(void *arg)
{
	struct fuzz_client_feed *f = arg;

	for (size_t off = 0; off < f->size;) {
		size_t n = f->size - off < f->piece ? f->size - off : f->piece;
		ssize_t w = send(f->fd, f->data + off, n, MSG_NOSIGNAL);
		int64_t deadline = fuzz_client_now_ms() + FUZZ_CLIENT_WAIT_MS;
		int queued = 1;

		if (w <= 0)
			break; /* the client is gone */
		off += (size_t)w;
		while (ioctl(f->fd, SIOCOUTQ, &queued) == 0 && queued > 0 &&
		       fuzz_client_now_ms() < deadline)
			usleep(20);
	}
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

/* A reply the client returned: the one asked for, or an error that could not name it. */
static void
fuzz_client_reply_check(const struct proto_reply *rep, int64_t id)
{
	if (rep->event != NULL || (rep->id != id && !(rep->id == 0 && rep->status != PROTO_OK)) ||
	    memchr(rep->message, '\0', sizeof(rep->message)) == NULL)
		abort();
}

/* The client's side of one connection; returns the first call's result. */
static int
fuzz_client_talk(struct client *c)
{
	static const char *const cmds[] = {"status", "list"};
	struct proto_reply rep;
	char err[256];
	int first = 0, ret = 0;

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && ret == 0; i++) {
		memset(err, 'x', sizeof(err));
		ret = client_call(c, cmds[i], NULL, &rep, err, sizeof(err));
		if (i == 0)
			first = ret;
		if (ret == 0) {
			fuzz_client_reply_check(&rep, (int64_t)i + 1);
			proto_reply_free(&rep);
		} else if ((ret != -EPROTO && ret != -EPIPE && ret != -EMSGSIZE) ||
		           !fuzz_msg_ok(err, sizeof(err)) || err[0] == '\0') {
			abort(); /* a failure says why */
		}
	}
	for (int i = 0; ret == 0 && i < FUZZ_CLIENT_EVENTS_MAX; i++) {
		ret = client_next_event(c, FUZZ_CLIENT_EVENT_MS, &rep, err, sizeof(err));
		if (ret == 1 && rep.event == NULL)
			abort();
		if (ret == 1)
			proto_reply_free(&rep);
		else if (ret == 0)
			abort(); /* the stream ends long before the timeout */
		ret = ret == 1 ? 0 : ret;
	}
	return first;
}

int
fuzz_client_run(const uint8_t *data, size_t size)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct fuzz_client_feed feed = {.fd = -1};
	struct client *c = NULL;
	pthread_t writer;
	char err[256];
	int lfd, ret;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/ctl.sock", fuzz_dir_reset());
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(lfd, 1) < 0 ||
	    client_open(sun.sun_path, &c, err, sizeof(err)) != 0 ||
	    (feed.fd = accept(lfd, NULL, NULL)) < 0)
		abort();
	feed.data = size > 0 ? data + 1 : data;
	feed.size = size > 0 ? size - 1 : 0;
	feed.piece = size > 0 && data[0] != 0 ? data[0] : feed.size + 1;
	if (feed.piece < feed.size / FUZZ_CLIENT_PIECES_MAX + 1)
		feed.piece = feed.size / FUZZ_CLIENT_PIECES_MAX + 1;
	if (pthread_create(&writer, NULL, fuzz_client_writer, &feed) != 0)
		abort();
	ret = fuzz_client_talk(c);
	client_close(c); /* before the join: a writer waiting for the client to read gives up */
	pthread_join(writer, NULL);
	close(feed.fd);
	close(lfd);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_client_run(data, size);
	return 0;
}
#endif

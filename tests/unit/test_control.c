/*
 * test_control.c - the control socket server driven by the real client and by raw sockets.
 *
 * Each test starts a server on a socket in a fresh mkdtemp directory with a stub command
 * table; a thread runs a small poll loop over control_pollfds()/control_service() while the
 * test, as one or more clients, talks to it.  Timeouts in here only detect a hang; no
 * assertion depends on how fast anything runs.
 */
#define _GNU_SOURCE /* setresuid, setresgid */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/client.h"
#include "agent/control.h"
#include "policy/util.h"

#define HANG_MS     10000 /* a raw read that waits this long means the server hung */
#define NOBODY      65534
#define TEST_GROUP  4242 /* a gid no user has; the test makes a child a member */
#define EVENT_FLOOD 2000 /* events of EVENT_BYTES: 8 MB, well over CONTROL_OUT_MAX */
#define EVENT_BYTES 4096
#define BIG_REPLY   32768 /* bytes of text in a "big" reply; fits struct raw's buffer */

struct server {
	char dir[64];
	char path[128];
	struct control *ctl;
	pthread_t thread;
	int stop[2];
};

/* ---- stub command table ---- */

#define STUB_ARGS                                                                                  \
	void *ctx, struct control_client *client, const struct control_peer *peer,                 \
	    struct json_object *args, struct json_object **data, char *err, size_t errlen

static enum proto_status
stub_echo(STUB_ARGS)
{
	*data = json_object_new_object();
	json_object_object_add(*data, "args", json_object_get(args));
	json_object_object_add(*data, "may_write", json_object_new_boolean(peer->may_write));
	json_object_object_add(*data, "uid", json_object_new_int((int)peer->uid));
	return PROTO_OK;
}

static enum proto_status
stub_set(STUB_ARGS)
{
	return PROTO_OK; /* data stays NULL */
}

static enum proto_status
stub_fail(STUB_ARGS)
{
	*data = json_object_new_object(); /* must be dropped by the server, not leaked */
	snprintf(err, errlen, "no VM 'db9'");
	return PROTO_NOT_FOUND;
}

static enum proto_status
stub_follow(STUB_ARGS)
{
	control_client_follow(client, -1);
	return PROTO_OK;
}

static enum proto_status
stub_badfollow(STUB_ARGS)
{
	control_client_follow(client, -1);
	return PROTO_CONFLICT; /* no message: the server supplies one */
}

/* Broadcast args.n events, each with a text of args.bytes bytes. */
static enum proto_status
stub_emit(STUB_ARGS)
{
	struct control **ctl = ctx;
	int64_t n = 1, bytes = 1;
	char *text;

	proto_arg_int(args, "n", &n);
	proto_arg_int(args, "bytes", &bytes);
	text = xmalloc((size_t)bytes + 1);
	memset(text, 'e', (size_t)bytes);
	text[bytes] = '\0';
	for (int64_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_new_object();

		json_object_object_add(ev, "seq", json_object_new_int64(i));
		json_object_object_add(ev, "text", json_object_new_string(text));
		control_broadcast_event(*ctl, ev);
		json_object_put(ev);
	}
	free(text);
	return PROTO_OK;
}

/* A reply with a text of args.bytes bytes. */
static enum proto_status
stub_big(STUB_ARGS)
{
	int64_t bytes = 0;
	char *text;

	proto_arg_int(args, "bytes", &bytes);
	text = xmalloc((size_t)bytes + 1);
	memset(text, 'b', (size_t)bytes);
	text[bytes] = '\0';
	*data = json_object_new_object();
	json_object_object_add(*data, "text", json_object_new_string(text));
	free(text);
	return PROTO_OK;
}

static enum proto_status
stub_cstats(STUB_ARGS)
{
	struct control **ctl = ctx;
	struct control_stats st;

	control_get_stats(*ctl, &st);
	*data = json_object_new_object();
	json_object_object_add(*data, "requests", json_object_new_int64((int64_t)st.requests));
	json_object_object_add(*data, "errors", json_object_new_int64((int64_t)st.errors));
	json_object_object_add(*data, "refused", json_object_new_int64((int64_t)st.refused));
	json_object_object_add(*data, "dropped",
	                       json_object_new_int64((int64_t)st.dropped_clients));
	json_object_object_add(*data, "clients", json_object_new_int(st.clients));
	json_object_object_add(*data, "evicted", json_object_new_int64((int64_t)st.evicted));
	json_object_object_add(*data, "connections_refused",
	                       json_object_new_int64((int64_t)st.connections_refused));
	return PROTO_OK;
}

static const struct control_command stub_commands[] = {
    {"echo", false, stub_echo, NULL},
    {"set", true, stub_set, NULL},
    {"fail", false, stub_fail, NULL},
    {"follow", false, stub_follow, NULL},
    {"badfollow", false, stub_badfollow, NULL},
    {"emit", true, stub_emit, NULL},
    {"cstats", false, stub_cstats, NULL},
    {"big", false, stub_big, NULL},
    {"typed", false, stub_echo, "vm:s n:i on:b node:si"},
    {NULL, false, NULL, NULL},
};

/* ---- the server thread ---- */

static void *
server_loop(void *arg)
{
	struct server *s = arg;
	struct pollfd fds[CONTROL_MAX_POLLFDS + 1];

	for (;;) {
		int n = control_pollfds(s->ctl, fds, CONTROL_MAX_POLLFDS);

		fds[n] = (struct pollfd){.fd = s->stop[0], .events = POLLIN};
		if (poll(fds, (nfds_t)n + 1, 1000) < 0 && errno != EINTR)
			break;
		if (fds[n].revents != 0)
			break;
		control_service(s->ctl, fds, n);
	}
	return NULL;
}

static struct server *
server_start(gid_t group, mode_t mode)
{
	struct server *s = xcalloc(1, sizeof(*s));
	struct control_config cfg = {.mode = mode, .group = group, .commands = stub_commands};
	char err[256];

	snprintf(s->dir, sizeof(s->dir), "/tmp/vnumad-ctl-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	assert_int_equal(chmod(s->dir, 0755), 0); /* lets the uid-65534 child reach the socket */
	snprintf(s->path, sizeof(s->path), "%s/vnumad.sock", s->dir);
	cfg.path = s->path;
	cfg.ctx = &s->ctl;
	if (control_open(&cfg, &s->ctl, err, sizeof(err)) != 0)
		fail_msg("control_open: %s", err);
	assert_int_equal(pipe(s->stop), 0);
	assert_int_equal(pthread_create(&s->thread, NULL, server_loop, s), 0);
	return s;
}

static void
server_stop(struct server *s)
{
	assert_int_equal(write(s->stop[1], "x", 1), 1);
	pthread_join(s->thread, NULL);
	close(s->stop[0]);
	close(s->stop[1]);
	control_close(s->ctl);
	assert_int_equal(access(s->path, F_OK), -1); /* close removed the socket */
	rmdir(s->dir);
	free(s);
}

static int
setup_server(void **state)
{
	*state = server_start((gid_t)-1, 0660);
	return 0;
}

static int
teardown_server(void **state)
{
	server_stop(*state);
	return 0;
}

/* ---- raw socket helpers ---- */

struct raw {
	int fd;
	char buf[1 << 16];
	size_t len;
};

static struct raw *
raw_open(const char *path)
{
	struct raw *r = xcalloc(1, sizeof(*r));
	struct sockaddr_un sun = {.sun_family = AF_UNIX};

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	r->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->fd >= 0);
	assert_int_equal(connect(r->fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	return r;
}

static void
raw_close(struct raw *r)
{
	close(r->fd);
	free(r);
}

static void
raw_send(struct raw *r, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = send(r->fd, data, len, MSG_NOSIGNAL);

		assert_true(n > 0);
		data += n;
		len -= (size_t)n;
	}
}

static void
raw_puts(struct raw *r, const char *s)
{
	raw_send(r, s, strlen(s));
}

/* Read one reply line and decode it; 0 at end of stream. */
static int
raw_reply(struct raw *r, struct proto_reply *rep)
{
	char err[256], *nl;

	while ((nl = memchr(r->buf, '\n', r->len)) == NULL) {
		struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
		ssize_t n;

		assert_true(r->len < sizeof(r->buf));
		assert_int_equal(poll(&pfd, 1, HANG_MS), 1);
		n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
		if (n == 0)
			return 0;
		assert_true(n > 0);
		r->len += (size_t)n;
	}
	if (proto_reply_decode(r->buf, (size_t)(nl - r->buf), rep, err, sizeof(err)) != 0)
		fail_msg("bad reply line: %s", err);
	r->len -= (size_t)(nl - r->buf) + 1;
	memmove(r->buf, nl + 1, r->len);
	return 1;
}

static void
raw_expect(struct raw *r, int64_t id, int status, const char *message)
{
	struct proto_reply rep;

	assert_int_equal(raw_reply(r, &rep), 1);
	print_message("reply id %lld: %d %s\n", (long long)rep.id, rep.status, rep.message);
	assert_int_equal(rep.status, status);
	assert_int_equal(rep.id, id);
	if (message != NULL)
		assert_non_null(strstr(rep.message, message));
	proto_reply_free(&rep);
}

/* ---- client helpers ---- */

static struct client *
open_client(const struct server *s)
{
	struct client *c;
	char err[256];

	if (client_open(s->path, &c, err, sizeof(err)) != 0)
		fail_msg("client_open: %s", err);
	return c;
}

/* Call cmd (args as JSON text or NULL) and check the status; returns data's field or NULL. */
static void
call_expect(struct client *c, const char *cmd, const char *args_json, int status,
            const char *message, struct proto_reply *keep)
{
	struct json_object *args = args_json != NULL ? json_tokener_parse(args_json) : NULL;
	struct proto_reply rep;
	char err[256];

	if (client_call(c, cmd, args, &rep, err, sizeof(err)) != 0)
		fail_msg("client_call %s: %s", cmd, err);
	json_object_put(args);
	assert_int_equal(rep.status, status);
	if (message != NULL)
		assert_string_equal(rep.message, message);
	if (keep != NULL)
		*keep = rep;
	else
		proto_reply_free(&rep);
}

static int64_t
data_int(const struct proto_reply *rep, const char *key)
{
	struct json_object *v;

	assert_true(json_object_object_get_ex(rep->data, key, &v));
	return json_object_get_int64(v);
}

static int64_t
server_stat(const struct server *s, const char *key)
{
	struct client *c = open_client(s);
	struct proto_reply rep;
	int64_t v;

	call_expect(c, "cstats", NULL, 0, NULL, &rep);
	v = data_int(&rep, key);
	proto_reply_free(&rep);
	client_close(c);
	return v;
}

/*
 * server_stat() once the server has noticed closed connections: a connection refused as the
 * 65th (500) is retried for up to 5 s, so closes racing with the next connect do not fail.
 */
static int64_t
server_stat_settled(const struct server *s, const char *key, int64_t want)
{
	for (int i = 0; i < 500; i++) {
		struct client *c;
		struct proto_reply rep;
		char err[256];
		int64_t v = -1;

		if (client_open(s->path, &c, err, sizeof(err)) == 0) {
			if (client_call(c, "cstats", NULL, &rep, err, sizeof(err)) == 0) {
				if (rep.status == 0)
					v = data_int(&rep, key);
				proto_reply_free(&rep);
			}
			client_close(c);
		}
		if (v == want)
			return v;
		usleep(10000);
	}
	return server_stat(s, key);
}

/* ---- tests ---- */

static void
test_replies(void **state)
{
	struct server *s = *state;
	struct client *c = open_client(s);
	struct proto_reply rep;
	struct json_object *v;
	struct stat st;

	call_expect(c, "echo", "{\"vm\":\"db1\"}", 0, "ok", &rep);
	assert_true(json_object_object_get_ex(rep.data, "args", &v));
	assert_string_equal(json_object_get_string(json_object_object_get(v, "vm")), "db1");
	assert_true(json_object_get_boolean(json_object_object_get(rep.data, "may_write")));
	proto_reply_free(&rep);
	call_expect(c, "fail", NULL, 404, "no VM 'db9'", &rep);
	assert_null(rep.data);
	proto_reply_free(&rep);
	call_expect(c, "nope", NULL, 404, "unknown command 'nope'", NULL);
	call_expect(c, "set", "{}", 0, "ok", NULL);
	call_expect(c, "badfollow", NULL, 409, "conflict", NULL);
	call_expect(c, "echo", NULL, 0, NULL, NULL); /* still in step after errors */
	client_close(c);
	assert_int_equal(stat(s->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0660);
	assert_true(server_stat(s, "requests") >= 6);
	assert_int_equal(server_stat(s, "errors"), 3);
}

static void
test_bad_requests_keep_connection(void **state)
{
	static const struct {
		const char *line;
		size_t len;
		int64_t id;
		int status;
		const char *message;
	} cases[] = {
	    {"garbage\n", 0, 0, 400, "malformed JSON"},
	    {"{\"version\":1,\"id\":2,\"cmd\":\"echo\"\n", 0, 0, 400, "malformed JSON"},
	    {"{\"version\":2,\"id\":3,\"cmd\":\"echo\"}\n", 0, 3, 426,
	     "bad version 2 (this daemon speaks 1)"},
	    {"{\"id\":4,\"cmd\":\"echo\"}\n", 0, 4, 426, "version: missing"},
	    {"{\"version\":1,\"id\":5}\n", 0, 5, 400, "cmd: missing"},
	    {"{\"version\":1,\"id\":6,\"cmd\":\"echo\",\"args\":[1]}\n", 0, 6, 400, "args"},
	    {"{\"version\":1,\"id\":7,\"cmd\":\"echo\"}}\n", 0, 7, 400, "trailing garbage"},
	    {"{\"version\":1,\0\"cmd\":\"echo\"}\n", 28, 0, 400, "NUL byte"},
	    {"\n", 0, 0, 400, "empty request"},
	    {"{\"version\":1,\"id\":\"x\",\"cmd\":\"echo\"}\n", 0, 0, 400, "id: not an integer"},
	};
	struct server *s = *state;
	struct raw *r = raw_open(s->path);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		raw_send(r, cases[i].line, cases[i].len ? cases[i].len : strlen(cases[i].line));
		raw_expect(r, cases[i].id, cases[i].status, cases[i].message);
		raw_puts(r, "{\"version\":1,\"id\":99,\"cmd\":\"echo\"}\n");
		raw_expect(r, 99, 0, "ok");
	}
	raw_close(r);
}

static void
test_oversized_lines(void **state)
{
	struct server *s = *state;
	struct raw *r = raw_open(s->path);
	const char *good = "{\"version\":1,\"id\":5,\"cmd\":\"echo\"}";
	size_t big = 3 * PROTO_MAX_LINE + 100;
	char *line = xmalloc(big);

	/* The longest line that fits: PROTO_MAX_LINE bytes with its newline. */
	memset(line, ' ', PROTO_MAX_LINE);
	memcpy(line, good, strlen(good));
	line[PROTO_MAX_LINE - 1] = '\n';
	raw_send(r, line, PROTO_MAX_LINE);
	raw_expect(r, 5, 0, "ok");
	/* One byte more is refused once, and the rest of it is skipped. */
	line[PROTO_MAX_LINE - 1] = ' ';
	line[PROTO_MAX_LINE] = '\n';
	raw_send(r, line, PROTO_MAX_LINE + 1);
	raw_expect(r, 0, 413, "too large");
	raw_puts(r, "{\"version\":1,\"id\":6,\"cmd\":\"echo\"}\n");
	raw_expect(r, 6, 0, "ok");
	/* Several buffers' worth of one line, then a good request in the same write. */
	memset(line, 'x', big);
	line[big - 1] = '\n';
	raw_send(r, line, big);
	raw_puts(r, "{\"version\":1,\"id\":7,\"cmd\":\"echo\"}\n");
	raw_expect(r, 0, 413, "too large");
	raw_expect(r, 7, 0, "ok");
	free(line);
	raw_close(r);
}

static void
test_silent_clients_do_not_stall(void **state)
{
	struct server *s = *state;
	struct raw *mute = raw_open(s->path);
	struct raw *half = raw_open(s->path);
	struct client *c;
	struct pollfd pfd = {.fd = mute->fd, .events = POLLIN};

	raw_puts(half, "{\"version\":1,\"id\":11,\"cm");
	c = open_client(s);
	for (int i = 0; i < 5; i++)
		call_expect(c, "echo", NULL, 0, "ok", NULL);
	client_close(c);
	raw_puts(half, "d\":\"echo\"}\n");
	raw_expect(half, 11, 0, "ok");
	/* The silent client is still connected and was sent nothing. */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	raw_puts(mute, "{\"version\":1,\"id\":12,\"cmd\":\"echo\"}\n");
	raw_expect(mute, 12, 0, "ok");
	raw_close(mute);
	raw_close(half);
}

static void
test_pipelined(void **state)
{
	struct server *s = *state;
	struct raw *r = raw_open(s->path);

	raw_puts(r, "{\"version\":1,\"id\":1,\"cmd\":\"echo\"}\n"
	            "{\"version\":9,\"id\":2,\"cmd\":\"echo\"}\n"
	            "{\"version\":1,\"id\":3,\"cmd\":\"fail\"}\r\n"
	            "{\"version\":1,\"id\":4,\"cmd\":\"set\"}\n");
	raw_expect(r, 1, 0, "ok");
	raw_expect(r, 2, 426, "bad version 9");
	raw_expect(r, 3, 404, "no VM");
	raw_expect(r, 4, 0, "ok");
	/* A last line without newline is answered when the client shuts down its side. */
	raw_puts(r, "{\"version\":1,\"id\":5,\"cmd\":\"echo\"}");
	assert_int_equal(shutdown(r->fd, SHUT_WR), 0);
	raw_expect(r, 5, 0, "ok");
	raw_close(r);
}

/*
 * Pipeline small requests whose replies add up to three times CONTROL_OUT_MAX, then read:
 * the server must stop reading (back-pressure) rather than queue replies until it has to drop
 * the client, and must answer everything in order.
 */
static void
test_pipelined_backpressure(void **state)
{
	struct server *s = *state;
	struct raw *r = raw_open(s->path);
	int total = 3 * CONTROL_OUT_MAX / BIG_REPLY;
	struct util_buf reqs = {0};
	struct proto_reply rep;

	for (int i = 1; i <= total; i++)
		util_buf_printf(
		    &reqs, "{\"version\":1,\"id\":%d,\"cmd\":\"big\",\"args\":{\"bytes\":%d}}\n", i,
		    BIG_REPLY);
	raw_send(r, reqs.data, reqs.len); /* a few dozen KiB: fits the socket buffers */
	/*
	 * Once the server has read every request byte (our send queue is empty) and answered
	 * another client after that, it has handled all it will before we read.  Without
	 * back-pressure it would have queued everything and dropped us by now.
	 */
	for (int waited_ms = 0, queued = 1; queued > 0; waited_ms++) {
		assert_int_equal(ioctl(r->fd, SIOCOUTQ, &queued), 0);
		assert_true(waited_ms < HANG_MS);
		usleep(1000);
	}
	assert_int_equal(server_stat(s, "dropped"), 0);
	for (int i = 1; i <= total; i++) {
		assert_int_equal(raw_reply(r, &rep), 1);
		assert_int_equal(rep.id, i);
		assert_int_equal(rep.status, 0);
		assert_int_equal(
		    strlen(json_object_get_string(json_object_object_get(rep.data, "text"))),
		    BIG_REPLY);
		proto_reply_free(&rep);
	}
	free(reqs.data);
	raw_close(r);
	assert_int_equal(server_stat(s, "dropped"), 0);
}

static void
test_second_open_and_stale_socket(void **state)
{
	struct server *s = *state;
	struct control_config cfg = {
	    .path = s->path, .mode = 0600, .group = (gid_t)-1, .commands = stub_commands};
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct control *ctl = NULL;
	struct client *c;
	char err[256], path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	int fd;

	assert_int_equal(control_open(&cfg, &ctl, err, sizeof(err)), -EADDRINUSE);
	assert_null(ctl);
	assert_non_null(strstr(err, "another vnumad answers on"));
	c = open_client(s);
	call_expect(c, "echo", NULL, 0, NULL, NULL); /* the running server is undisturbed */
	client_close(c);

	/* A socket file nobody listens on is replaced. */
	snprintf(path, sizeof(path), "%s/stale.sock", s->dir);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
	assert_int_equal(access(path, F_OK), 0);
	cfg.path = path;
	if (control_open(&cfg, &ctl, err, sizeof(err)) != 0)
		fail_msg("stale socket not replaced: %s", err);
	control_close(ctl);
	assert_int_equal(access(path, F_OK), -1);

	/* Something that is not a socket is left alone. */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);
	assert_int_equal(control_open(&cfg, &ctl, err, sizeof(err)), -EEXIST);
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
}

/* In a child: become NOBODY with the given extra group (0: none), then talk. */
static int
child_as_nobody(const char *path, gid_t extra, bool expect_write, const char *refusal)
{
	gid_t groups[1] = {extra};
	struct client *c;
	struct proto_reply rep;
	char err[256];
	int code = 0;

	if (setgroups(extra != 0 ? 1 : 0, groups) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0)
		return 10;
	if (client_open(path, &c, err, sizeof(err)) != 0)
		return 11;
	if (client_call(c, "echo", NULL, &rep, err, sizeof(err)) != 0 || rep.status != 0)
		return 12;
	if (json_object_get_int(json_object_object_get(rep.data, "uid")) != NOBODY ||
	    json_object_get_boolean(json_object_object_get(rep.data, "may_write")) != expect_write)
		code = 13;
	proto_reply_free(&rep);
	if (client_call(c, "set", NULL, &rep, err, sizeof(err)) != 0)
		return 14;
	if (expect_write ? rep.status != 0 : rep.status != 403 || strcmp(rep.message, refusal) != 0)
		code = 15;
	proto_reply_free(&rep);
	client_close(c);
	return code;
}

static void
run_child(const char *path, gid_t extra, bool expect_write, const char *refusal)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_as_nobody(path, extra, expect_write, refusal));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
test_peer_permissions(void **state)
{
	struct server *s;

	if (geteuid() != 0) {
		print_message("not root: skipping the uid %d peer checks\n", NOBODY);
		skip();
	}
	s = server_start((gid_t)-1, 0666);
	run_child(s->path, 0, false, "permission denied: 'set' changes state (root only)");
	assert_int_equal(server_stat(s, "refused"), 1);
	server_stop(s);

	s = server_start(TEST_GROUP, 0666);
	run_child(s->path, TEST_GROUP, true, NULL); /* supplementary member may write */
	run_child(s->path, 0, false,
	          "permission denied: 'set' changes state (root or group 4242 only)");
	server_stop(s);
}

static void
test_follow_events(void **state)
{
	struct server *s = *state;
	struct client *follower = open_client(s), *bystander = open_client(s);
	struct client *failed = open_client(s), *c = open_client(s);
	struct proto_reply rep;
	char err[256];

	call_expect(follower, "follow", NULL, 0, NULL, NULL);
	call_expect(failed, "badfollow", NULL, 409, NULL, NULL);
	call_expect(c, "emit", "{\"n\":3,\"bytes\":10}", 0, NULL, NULL);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(client_next_event(follower, HANG_MS, &rep, err, sizeof(err)), 1);
		assert_int_equal(json_object_get_int(json_object_object_get(rep.event, "seq")), i);
		proto_reply_free(&rep);
	}
	/* Events were queued before emit's reply, so nothing more can be on the way. */
	assert_int_equal(client_next_event(follower, 0, &rep, err, sizeof(err)), 0);
	assert_int_equal(client_next_event(bystander, 0, &rep, err, sizeof(err)), 0);
	assert_int_equal(client_next_event(failed, 0, &rep, err, sizeof(err)), 0);
	/* A follower can still make calls; events in between are skipped by client_call. */
	call_expect(c, "emit", NULL, 0, NULL, NULL);
	call_expect(follower, "echo", NULL, 0, NULL, NULL);
	client_close(follower);
	client_close(bystander);
	client_close(failed);
	client_close(c);
}

static void
test_slow_follower_dropped(void **state)
{
	struct server *s = *state;
	struct client *follower = open_client(s), *c = open_client(s);
	struct proto_reply rep;
	char err[256], args[64];
	int rc, events = 0;

	call_expect(follower, "follow", NULL, 0, NULL, NULL);
	snprintf(args, sizeof(args), "{\"n\":%d,\"bytes\":%d}", EVENT_FLOOD, EVENT_BYTES);
	call_expect(c, "emit", args, 0, NULL, NULL);
	assert_int_equal(server_stat(s, "dropped"), 1);
	while ((rc = client_next_event(follower, HANG_MS, &rep, err, sizeof(err))) == 1) {
		proto_reply_free(&rep);
		events++;
	}
	assert_int_equal(rc, -EPIPE);
	assert_true(events > 0 && events < EVENT_FLOOD);
	call_expect(c, "echo", NULL, 0, NULL, NULL);
	client_close(follower);
	client_close(c);
}

/* Wait until the peer's end of stream is there to read (nothing else left unread). */
static void
raw_wait_eof(struct raw *r)
{
	char byte;

	assert_int_equal(r->len, 0);
	for (;;) {
		struct pollfd pfd = {.fd = r->fd, .events = POLLIN};

		assert_int_equal(poll(&pfd, 1, HANG_MS), 1);
		if (recv(r->fd, &byte, 1, MSG_PEEK) == 0)
			return;
	}
}

/* Lines of text holding needle. */
static int
count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* Everything written to stderr while capture_stop() has not been called, into a file. */
struct capture {
	FILE *f;
	int saved;
};

static void
capture_start(struct capture *cap)
{
	fflush(stderr);
	cap->f = tmpfile();
	assert_non_null(cap->f);
	cap->saved = dup(STDERR_FILENO);
	assert_true(cap->saved >= 0);
	assert_true(dup2(fileno(cap->f), STDERR_FILENO) >= 0);
}

/* The text captured (malloc'd); stderr is back. */
static char *
capture_stop(struct capture *cap)
{
	long len;
	char *text;

	fflush(stderr);
	assert_true(dup2(cap->saved, STDERR_FILENO) >= 0);
	close(cap->saved);
	len = ftell(cap->f);
	assert_true(len >= 0);
	text = xcalloc(1, (size_t)len + 1);
	rewind(cap->f);
	assert_int_equal(fread(text, 1, (size_t)len, cap->f), (size_t)len);
	fclose(cap->f);
	return text;
}

static void
test_too_many_clients(void **state)
{
	struct server *s = *state;
	struct raw *r[CONTROL_MAX_CLIENTS], *extra;
	struct proto_reply rep;
	struct capture cap;
	struct client *c;
	char err[256], *logged;

	for (int i = 0; i < CONTROL_MAX_CLIENTS; i++) {
		r[i] = raw_open(s->path);
		raw_puts(r[i], "{\"version\":1,\"id\":1,\"cmd\":\"echo\"}\n");
		raw_expect(r[i], 1, 0, "ok"); /* accepted and served */
	}
	capture_start(&cap);
	extra = raw_open(s->path);
	raw_expect(extra, 0, 500, "too many clients");
	/*
	 * The refusal, and its end of stream, came before the request: the connection still
	 * takes the request (no EPIPE), then ends (no ECONNRESET).
	 */
	raw_wait_eof(extra);
	raw_puts(extra, "{\"version\":1,\"id\":2,\"cmd\":\"echo\"}\n");
	assert_int_equal(raw_reply(extra, &rep), 0);
	raw_close(extra);
	/* vnumactl's client gets the refusal as the reply, whenever it sends */
	for (int i = 0; i < 10; i++) {
		if (client_open(s->path, &c, err, sizeof(err)) != 0)
			fail_msg("client_open: %s", err);
		if (client_call(c, "echo", NULL, &rep, err, sizeof(err)) != 0)
			fail_msg("refused client %d: %s", i, err);
		assert_int_equal(rep.status, 500);
		assert_non_null(strstr(rep.message, "too many clients"));
		proto_reply_free(&rep);
		client_close(c);
	}
	logged = capture_stop(&cap);
	/* eleven refusals, one message (CONTROL_REFUSE_LOG_S) */
	assert_int_equal(count_lines(logged, "refusing a connection"), 1);
	free(logged);
	raw_close(r[0]);
	/* r[1..63] and the asking client: 64 again once r[0]'s close is seen. */
	assert_int_equal(server_stat_settled(s, "clients", CONTROL_MAX_CLIENTS),
	                 CONTROL_MAX_CLIENTS);
	for (int i = 1; i < CONTROL_MAX_CLIENTS; i++)
		raw_close(r[i]);
	assert_int_equal(server_stat_settled(s, "clients", 1), 1); /* only the asker is left */
}

/* First uid of the read-only users the flood test makes up (no real user has them). */
#define FLOOD_UID 60001
/* Read-only users that fill the readers' share of the table between them. */
#define FLOOD_USERS ((CONTROL_MAX_CLIENTS - CONTROL_WRITER_RESERVE) / CONTROL_MAX_PER_UID)

/* One call by c that must be refused with a message holding want: 0, else an exit code. */
static int
child_expect_refused(const char *path, const char *want)
{
	struct proto_reply rep;
	struct client *c;
	char err[256];
	int code = 0;

	if (client_open(path, &c, err, sizeof(err)) != 0)
		return 21;
	if (client_call(c, "echo", NULL, &rep, err, sizeof(err)) != 0)
		code = 22; /* e.g. EPIPE: the refusal was not readable */
	else if (rep.status != 500 || strstr(rep.message, want) == NULL)
		code = 23;
	if (code != 22)
		proto_reply_free(&rep);
	client_close(c);
	return code;
}

/*
 * In a child: become uid, open CONTROL_MAX_PER_UID event followers, check that one more is
 * refused with the per-uid message, then say so on ready (one byte: 0 or an exit code) and
 * hold the followers until hold is closed.
 */
static int
child_flood(const char *path, uid_t uid, int ready, int hold)
{
	struct client *c[CONTROL_MAX_PER_UID];
	struct proto_reply rep;
	char err[256], want[64], code = 0, byte;

	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
		code = 10;
	for (int i = 0; code == 0 && i < CONTROL_MAX_PER_UID; i++) {
		if (client_open(path, &c[i], err, sizeof(err)) != 0 ||
		    client_call(c[i], "follow", NULL, &rep, err, sizeof(err)) != 0)
			code = 11;
		else if (rep.status != 0)
			code = 12;
		if (code == 0 || code == 12)
			proto_reply_free(&rep);
	}
	snprintf(want, sizeof(want), "uid %lu holds %d connections", (unsigned long)uid,
	         CONTROL_MAX_PER_UID);
	if (code == 0)
		code = (char)child_expect_refused(path, want);
	if (write(ready, &code, 1) != 1)
		return 30;
	while (read(hold, &byte, 1) > 0)
		continue;
	return code;
}

static pid_t
fork_flood(const char *path, uid_t uid, int ready[2], int hold[2])
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		_exit(child_flood(path, uid, ready[1], hold[0]));
	}
	return pid;
}

static int
wait_exit(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/*
 * Read-only users cannot lock root out: FLOOD_USERS uids hold CONTROL_MAX_PER_UID event
 * followers each (one more is refused per uid), another read-only uid finds the readers'
 * share full, and still root gets CONTROL_WRITER_RESERVE connections and, with the table
 * full, one more in place of the read-only connection idle longest.  Every refusal is a
 * reply the client reads.
 */
static void
test_readers_leave_room_for_writers(void **state)
{
	struct client *w[CONTROL_WRITER_RESERVE + 1];
	pid_t kids[FLOOD_USERS], pid;
	int ready[2], hold[2];
	struct server *s;
	char code;

	if (geteuid() != 0) {
		print_message("not root: skipping the read-only flood\n");
		skip();
	}
	s = server_start((gid_t)-1, 0666);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(hold), 0);
	for (int i = 0; i < FLOOD_USERS; i++) {
		struct pollfd pfd = {.fd = ready[0], .events = POLLIN};

		kids[i] = fork_flood(s->path, FLOOD_UID + (uid_t)i, ready, hold);
		assert_int_equal(poll(&pfd, 1, HANG_MS), 1);
		assert_int_equal(read(ready[0], &code, 1), 1);
		assert_int_equal(code, 0);
	}
	/* another read-only user: the readers' share is taken */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0
		          ? 10
		          : child_expect_refused(s->path,
		                                 "connections for read-only users are taken"));
	assert_int_equal(wait_exit(pid), 0);

	/* root: the reserve, then one more for the read-only connection idle longest */
	for (int i = 0; i <= CONTROL_WRITER_RESERVE; i++) {
		w[i] = open_client(s);
		call_expect(w[i], "set", NULL, 0, "ok", NULL);
	}
	assert_int_equal(server_stat(s, "evicted"), 2); /* server_stat's own connection too */
	assert_int_equal(server_stat(s, "clients"), CONTROL_MAX_CLIENTS);
	for (int i = 0; i <= CONTROL_WRITER_RESERVE; i++)
		client_close(w[i]);
	close(hold[1]);
	for (int i = 0; i < FLOOD_USERS; i++)
		assert_int_equal(wait_exit(kids[i]), 0);
	close(hold[0]);
	close(ready[0]);
	close(ready[1]);
	server_stop(s);
}

/* Replies beyond CONTROL_OUT_MAX still go out whole; beyond the client's cap they fail. */
static void
test_large_replies(void **state)
{
	struct server *s = *state;
	struct client *c = open_client(s);
	struct json_object *args = json_object_new_object();
	struct proto_reply rep;
	char err[256];

	json_object_object_add(args, "bytes", json_object_new_int(CONTROL_OUT_MAX + 12345));
	assert_int_equal(client_call(c, "big", args, &rep, err, sizeof(err)), 0);
	assert_int_equal(json_object_get_string_len(json_object_object_get(rep.data, "text")),
	                 CONTROL_OUT_MAX + 12345);
	proto_reply_free(&rep);
	json_object_object_add(args, "bytes", json_object_new_int(17 << 20));
	assert_int_equal(client_call(c, "big", args, &rep, err, sizeof(err)), -EMSGSIZE);
	assert_non_null(strstr(err, "reply longer than 16 MiB"));
	json_object_put(args);
	client_close(c);
}

static void
test_client_errors(void **state)
{
	struct server *s = *state;
	struct client *c = NULL;
	char err[256], path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];

	snprintf(path, sizeof(path), "%s/none.sock", s->dir);
	assert_int_equal(client_open(path, &c, err, sizeof(err)), -ENOENT);
	assert_null(c);
	assert_non_null(strstr(err, "cannot connect to"));
	assert_non_null(strstr(err, path));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_replies, setup_server, teardown_server),
	    cmocka_unit_test_setup_teardown(test_bad_requests_keep_connection, setup_server,
	                                    teardown_server),
	    cmocka_unit_test_setup_teardown(test_oversized_lines, setup_server, teardown_server),
	    cmocka_unit_test_setup_teardown(test_silent_clients_do_not_stall, setup_server,
	                                    teardown_server),
	    cmocka_unit_test_setup_teardown(test_pipelined, setup_server, teardown_server),
	    cmocka_unit_test_setup_teardown(test_pipelined_backpressure, setup_server,
	                                    teardown_server),
	    cmocka_unit_test_setup_teardown(test_second_open_and_stale_socket, setup_server,
	                                    teardown_server),
	    cmocka_unit_test(test_peer_permissions),
	    cmocka_unit_test_setup_teardown(test_follow_events, setup_server, teardown_server),
	    cmocka_unit_test_setup_teardown(test_slow_follower_dropped, setup_server,
	                                    teardown_server),
	    cmocka_unit_test_setup_teardown(test_too_many_clients, setup_server, teardown_server),
	    cmocka_unit_test(test_readers_leave_room_for_writers),
	    cmocka_unit_test_setup_teardown(test_large_replies, setup_server, teardown_server),
	    cmocka_unit_test_setup_teardown(test_client_errors, setup_server, teardown_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

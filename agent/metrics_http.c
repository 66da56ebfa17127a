/*
 * metrics_http.c - the /metrics HTTP server (metrics_http.h) on libmicrohttpd, and the parser
 * of its listen address.
 *
 * vnumad makes the listening socket itself (so that a refusal is told with its errno and what
 * to do about it) and hands it to MHD, which runs one internal polling thread for all
 * connections.  That thread runs only metrics_http_answer() and metrics_text_put(): they read
 * the published text under h->lock and nothing of the daemon.
 */
#include "agent/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "policy/util.h"

/* Pending connections the kernel queues before MHD accepts them. */
#define METRICS_HTTP_BACKLOG 16

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A published text; refs counts the server's own reference and each response sending it. */
struct metrics_text {
	int refs; /* under the server's lock */
	size_t len;
	char data[];
};

struct metrics_http {
	struct MHD_Daemon *mhd;
	int fd;
	struct metrics_addr addr; /* text: as bound (the port the system chose for port 0) */
	pthread_mutex_t lock;     /* current, every text's refs, scrapes */
	struct metrics_text *current;
	uint64_t scrapes;
};

/* Whatever a response needs to drop its text once MHD is done with it. */
struct metrics_hold {
	struct metrics_http *h;
	struct metrics_text *t;
};

/* ---- the listen address ---------------------------------------------------------------- */

/* A port, all digits, 0-65535. */
static int
metrics_port_parse(const char *s, uint16_t *port)
{
	unsigned long v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5 || strspn(s, "0123456789") != n)
		return -EINVAL;
	v = strtoul(s, NULL, 10);
	if (v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

static void
metrics_addr_format(struct metrics_addr *a)
{
	char host[INET6_ADDRSTRLEN];

	if (a->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(a->text, sizeof(a->text), "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(a->text, sizeof(a->text), "%s:%u", host, ntohs(s4->sin_port));
	}
}

/* Fill out from a host part (brackets removed; v6 says which family) and a port. */
static int
metrics_addr_set(const char *host, bool v6, uint16_t port, struct metrics_addr *out, char *msg,
                 size_t msglen)
{
	memset(out, 0, sizeof(*out));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1) {
			snprintf(msg, msglen, "\"%s\" is not an IPv6 address", host);
			return -EINVAL;
		}
		out->len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out->ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		if (strcmp(host, "localhost") == 0)
			host = "127.0.0.1";
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1) {
			snprintf(msg, msglen,
			         "\"%s\" is not a numeric IPv4 address (host names are not looked "
			         "up; IPv6 goes in brackets: [::1]:9464)",
			         host);
			return -EINVAL;
		}
		out->len = sizeof(*s4);
	}
	metrics_addr_format(out);
	return 0;
}

int
metrics_addr_parse(const char *text, struct metrics_addr *out, char *msg, size_t msglen)
{
	char host[METRICS_ADDR_MAX];
	const char *colon = strrchr(text, ':');
	uint16_t port;
	bool v6 = text[0] == '[';
	size_t hlen;

	if (colon == NULL) { /* a port alone: loopback, never every interface */
		if (metrics_port_parse(text, &port) < 0) {
			snprintf(msg, msglen, "\"%.40s\" is not a port (0-65535) or ADDRESS:PORT",
			         text);
			return -EINVAL;
		}
		return metrics_addr_set("127.0.0.1", false, port, out, msg, msglen);
	}
	if (metrics_port_parse(colon + 1, &port) < 0) {
		snprintf(msg, msglen, "\"%.40s\": the port after the last ':' must be 0-65535",
		         text);
		return -EINVAL;
	}
	if (colon == text) {
		snprintf(msg, msglen,
		         "\"%.40s\": no address before the port (write %s for loopback, or "
		         "0.0.0.0%s to listen on every interface)",
		         text, colon + 1, colon);
		return -EINVAL;
	}
	hlen = (size_t)(colon - text);
	if (v6 && (hlen < 3 || text[hlen - 1] != ']')) {
		snprintf(msg, msglen, "\"%.40s\": an IPv6 address is written [ADDRESS]:PORT", text);
		return -EINVAL;
	}
	if (!v6 && memchr(text, ':', hlen) != NULL) {
		snprintf(msg, msglen,
		         "\"%.40s\": write an IPv6 address in brackets: [ADDRESS]:PORT", text);
		return -EINVAL;
	}
	if (hlen >= sizeof(host)) {
		snprintf(msg, msglen, "\"%.40s...\": the address is too long", text);
		return -EINVAL;
	}
	memcpy(host, v6 ? text + 1 : text, v6 ? hlen - 2 : hlen);
	host[v6 ? hlen - 2 : hlen] = '\0';
	return metrics_addr_set(host, v6, port, out, msg, msglen);
}

/* ---- the published text (shared by the two threads) ------------------------------------- */

/* Drop one reference (h->lock held). */
static void
metrics_text_unref(struct metrics_text *t)
{
	if (t != NULL && --t->refs == 0)
		free(t);
}

/* MHD's callback once a response is sent or abandoned (the HTTP thread). */
static void
metrics_text_put(void *cls)
{
	struct metrics_hold *hold = cls;

	pthread_mutex_lock(&hold->h->lock);
	metrics_text_unref(hold->t);
	pthread_mutex_unlock(&hold->h->lock);
	free(hold);
}

void
metrics_http_publish(struct metrics_http *h, const char *text, size_t len)
{
	struct metrics_text *t = xmalloc(sizeof(*t) + len + 1);

	t->refs = 1;
	t->len = len;
	memcpy(t->data, text, len);
	t->data[len] = '\0';
	pthread_mutex_lock(&h->lock);
	metrics_text_unref(h->current);
	h->current = t;
	pthread_mutex_unlock(&h->lock);
}

uint64_t
metrics_http_scrapes(struct metrics_http *h)
{
	uint64_t n;

	pthread_mutex_lock(&h->lock);
	n = h->scrapes;
	pthread_mutex_unlock(&h->lock);
	return n;
}

/* ---- answering (the HTTP thread) --------------------------------------------------------- */

static enum MHD_Result
metrics_http_reply(struct MHD_Connection *conn, unsigned status, const char *text)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc;

	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* The last published text, referenced for one response. */
static enum MHD_Result
metrics_http_send_text(struct metrics_http *h, struct MHD_Connection *conn)
{
	struct metrics_hold *hold;
	struct MHD_Response *r;
	enum MHD_Result rc;

	pthread_mutex_lock(&h->lock);
	if (h->current == NULL) {
		pthread_mutex_unlock(&h->lock);
		return metrics_http_reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
		                          "vnumad has not finished a round yet\n");
	}
	hold = xmalloc(sizeof(*hold));
	hold->h = h;
	hold->t = h->current;
	hold->t->refs++;
	h->scrapes++;
	pthread_mutex_unlock(&h->lock);
	r = MHD_create_response_from_buffer_with_free_callback_cls(hold->t->len, hold->t->data,
	                                                           metrics_text_put, hold);
	if (r == NULL) {
		metrics_text_put(hold);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
	rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r); /* the connection keeps its own reference */
	return rc;
}

static enum MHD_Result
metrics_http_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                    const char *version, const char *upload_data, size_t *upload_data_size,
                    void **con_cls)
{
	static int seen; /* a marker: the request's headers have been seen once */

	if (*con_cls == NULL) {
		*con_cls = &seen; /* answer once the whole request is in */
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		*upload_data_size = 0; /* a body nobody asked for: ignored */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return metrics_http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
		                          "only GET and HEAD are served\n");
	if (strcmp(url, "/metrics") == 0)
		return metrics_http_send_text(cls, conn);
	if (strcmp(url, "/") == 0)
		return metrics_http_reply(conn, MHD_HTTP_OK,
		                          "vnumad: the metrics are at /metrics\n");
	return metrics_http_reply(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

/* ---- start and stop ------------------------------------------------------------------------ */

/* The listening socket on addr; its address as bound into bound.  fd, or -errno with err. */
static int
metrics_http_listen(const struct metrics_addr *addr, struct metrics_addr *bound, char *err,
                    size_t errlen)
{
	const char *what = "cannot create an IP socket";
	int one = 1, fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	*bound = *addr;
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	what = "cannot listen there";
	if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0 ||
	    listen(fd, METRICS_HTTP_BACKLOG) < 0)
		goto fail;
	bound->len = sizeof(bound->ss);
	if (getsockname(fd, (struct sockaddr *)&bound->ss, &bound->len) == 0)
		metrics_addr_format(bound);
	return fd;
fail:
	rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc == -EAFNOSUPPORT || rc == -EPERM)
		util_errf(
		    err, errlen,
		    "metrics_listen %s: %s: %s (the systemd unit allows no IP sockets: add a "
		    "drop-in with RestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6 and "
		    "IPAddressAllow= for the scrapers, see vnumad.conf(5))",
		    addr->text, what, strerror(-rc));
	else
		util_errf(err, errlen, "metrics_listen %s: %s: %s", addr->text, what,
		          strerror(-rc));
	return rc;
}

int
metrics_http_start(const struct metrics_addr *addr, struct metrics_http **out, char *err,
                   size_t errlen)
{
	struct metrics_http *h = xcalloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->fd = metrics_http_listen(addr, &h->addr, err, errlen);
	if (h->fd < 0) {
		rc = h->fd;
		goto out;
	}
	h->mhd = MHD_start_daemon(
	    MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC, 0, NULL, NULL, metrics_http_answer, h,
	    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)h->fd, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)METRICS_HTTP_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)METRICS_HTTP_CONN_MAX, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    (unsigned)METRICS_HTTP_CONN_PER_IP_MAX, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)METRICS_HTTP_CONN_MEM_BYTES, MHD_OPTION_END);
	if (h->mhd == NULL) {
		util_errf(err, errlen, "metrics_listen %s: the HTTP server did not start",
		          h->addr.text);
		rc = -EIO;
		goto out;
	}
	*out = h;
	return 0;
out:
	metrics_http_stop(h);
	return rc;
}

void
metrics_http_stop(struct metrics_http *h)
{
	if (h == NULL)
		return;
	if (h->mhd != NULL) {
		MHD_quiesce_daemon(h->mhd); /* the socket stays ours, closed below */
		MHD_stop_daemon(h->mhd);
	}
	if (h->fd >= 0)
		close(h->fd);
	metrics_text_unref(h->current); /* MHD released every response's reference */
	pthread_mutex_destroy(&h->lock);
	free(h);
}

const char *
metrics_http_address(const struct metrics_http *h)
{
	return h->addr.text;
}

/*
 * metrics_http.h - the /metrics HTTP server (libmicrohttpd, in its own polling thread).
 *
 * The daemon's main thread renders the metrics once per round and publishes the text here;
 * the HTTP thread answers every GET /metrics with the last text published and touches nothing
 * else: a published text is immutable and reference-counted, so a slow client holds its copy
 * while the next round publishes another.  Connections are capped in number, size and idle
 * time (METRICS_HTTP_*), so stalled or malformed clients cannot pile up; none of them can
 * delay a round, since the main thread only ever takes the mutex to swap a pointer.
 *
 * Ownership: metrics_http_start() returns a server that metrics_http_stop() stops and frees.
 */
#ifndef VNUMAD_AGENT_METRICS_HTTP_H
#define VNUMAD_AGENT_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Longest address text, "[v6 address]:port" with its NUL. */
#define METRICS_ADDR_MAX 64
/* Idle seconds before a connection is dropped (a client that sent half a request). */
#define METRICS_HTTP_TIMEOUT_S 10
/* Connections at once, in all and from one client address: a Prometheus or two need 1-2. */
#define METRICS_HTTP_CONN_MAX        16
#define METRICS_HTTP_CONN_PER_IP_MAX 8
/* Memory per connection, bytes: bounds a request's headers (a scrape's are ~300 bytes). */
#define METRICS_HTTP_CONN_MEM_BYTES (32 * 1024)

/* A parsed metrics_listen address. */
struct metrics_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	char text[METRICS_ADDR_MAX]; /* canonical: "127.0.0.1:9464", "[::1]:9464" */
};

/*
 * Parse a metrics_listen value: "PORT" (loopback, 127.0.0.1), "ADDRESS:PORT" with a numeric
 * IPv4 address or "localhost", or "[IPV6]:PORT"; PORT 0-65535 (0: any free port, which
 * metrics_http_address() then tells).  0, or -EINVAL with the reason in msg.
 */
int metrics_addr_parse(const char *text, struct metrics_addr *out, char *msg, size_t msglen);

struct metrics_http;

/*
 * Listen on addr and start the server's thread.  0, or -errno with a message in err that
 * names the address and, when the system refuses IP sockets (EAFNOSUPPORT, EPERM: a systemd
 * unit's RestrictAddressFamilies=), the drop-in that allows them.
 */
int metrics_http_start(const struct metrics_addr *addr, struct metrics_http **out, char *err,
                       size_t errlen);
/* Stop the thread, close every connection and the socket, free the server (NULL: nothing). */
void metrics_http_stop(struct metrics_http *h);
/* The address it listens on, with the port the system chose for port 0. */
const char *metrics_http_address(const struct metrics_http *h);
/* Replace the text answered from now on by a copy of text[0..len) (main thread). */
void metrics_http_publish(struct metrics_http *h, const char *text, size_t len);
/* /metrics requests answered with a text so far. */
uint64_t metrics_http_scrapes(struct metrics_http *h);

#endif

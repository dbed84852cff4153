/* http: a small HTTP/1.1 server on libmicrohttpd, driven by the supervisor's sd-event loop, so handlers run on
 * the loop's thread and may read and change supervisor state directly. This module owns the listening socket
 * (bound without SO_REUSEPORT, so no other process can share the port; IPv4, IPv6 and dual-stack) and accepts
 * on it itself: the listening socket is always an I/O source of the loop, every accepted connection is handed
 * to MHD_add_connection, and one over the limits (total, per client address) is closed at once. MHD's epoll fd
 * is one I/O source and its timeout a timer, both re-evaluated after every MHD_run. Limits: connections in
 * total and per client address, an idle timeout per connection, memory per connection, request body size.
 * What the routes mean is the caller's (sup_http.c); this module only moves bytes. */
#ifndef FLINKLET_HTTP_H
#define FLINKLET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <systemd/sd-event.h>

#include "shbuf.h"
#include "util.h"

#define HTTP_MAX_BODY 4096

struct http_exchange; /* one request on its connection */

struct http_request {
	const char *method;
	const char *path;          /* without the query string, decoded */
	const char *authorization; /* the Authorization header, or NULL */
	const char *body;
	size_t body_len;
	const char *target;             /* the request target as sent: path and query, not decoded */
	struct http_exchange *exchange; /* for http_request_header and http_defer */
};

struct http_response {
	int code;
	const char *content_type;
	char *body;                 /* malloc'd; freed by the server (free(), or release when set) */
	size_t body_len;            /* the body's length when it is not a string; 0: strlen(body) */
	struct strv headers;        /* further headers, "Name: value" (owned; freed by the server) */
	void (*release)(void *cls); /* when set: called once the server no longer needs body, instead of free */
	void *release_cls;
	/* when set: sent after body, never copied (a large text many responses share); the response holds this one
	 * reference, which the server drops once the response is sent or given up */
	struct shbuf *tail;
};

typedef void (*http_handler)(void *userdata, const struct http_request *req, struct http_response *resp);

struct http_limits {
	unsigned max_connections;        /* open connections in total (at least 1) */
	unsigned max_connections_per_ip; /* open connections from one client address; 0: no such limit */
	unsigned timeout_s;              /* a connection idle this long is closed (at least 1) */
};

/* The defaults of flinklet.http.max-connections, -per-ip and connection-timeout (docs/configuration.md). */
#define HTTP_DEFAULT_MAX_CONNECTIONS 64
#define HTTP_DEFAULT_MAX_CONNECTIONS_PER_IP 16
#define HTTP_DEFAULT_TIMEOUT_S 10

/* Whether an Authorization header carries the bearer token: "Bearer", case-insensitive, one or more spaces, then
 * exactly the token (RFC 9110 11.1, 11.4), compared in constant time over the token's length. False without a
 * token or a header. */
bool http_bearer_authorized(const char *token, const char *header);

/* A request header, or NULL (valid while the handler runs). */
const char *http_request_header(const struct http_request *req, const char *name);
/* An answer that takes time (a request forwarded to Flink): the handler calls http_defer and leaves resp
 * alone; the connection waits, without an idle timeout and without turns of the loop, until http_answer gives
 * the response (from the loop, exactly once, and before http_stop: http_stop answers what is left with 503 and
 * sends what it can before it closes the connections).
 * The exchange stays valid until then. */
struct http_exchange *http_defer(const struct http_request *req);
void http_answer(struct http_exchange *x, struct http_response *resp);

struct http_server;

/* "host:port" to a socket address: host is an IPv4 literal, "localhost" (127.0.0.1) or an IPv6 literal in
 * brackets ("[::1]:8091"; "[::]:8091" is every address, IPv4 too where the system allows dual-stack); port is
 * 0..65535 (0: any free port). Returns 0 or -EINVAL. */
int http_parse_address(const char *address, struct sockaddr_storage *sa, socklen_t *len);

/* Listens on address (see http_parse_address). Returns 0, or -errno: -EINVAL for a bad address, -EADDRINUSE
 * when another socket listens there, -EADDRNOTAVAIL for an address that is not the machine's, ... */
int http_start(sd_event *event, const char *address, const struct http_limits *limits, http_handler handler,
               void *userdata, struct http_server **ret);
/* The port actually bound. */
int http_port(const struct http_server *h);
/* Open connections now, and connections refused over a limit since the start. */
void http_stats(struct http_server *h, unsigned *open, uint64_t *refused);
/* Serves fd, a connected stream socket (e.g. one end of a socketpair), as if it had been accepted on the
 * listening socket: the same limits, parsing and handler. The server owns fd from then on and closes it, also
 * when this fails (-ENFILE: over a connection limit). For tests without TCP (tests/fuzz/fuzz_http.c). */
int http_add_connection(struct http_server *h, int fd);
void http_stop(struct http_server *h);

#endif

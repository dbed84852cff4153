/* http: a small HTTP/1.1 server on libmicrohttpd, driven by the supervisor's sd-event loop (MHD's epoll fd
 * is one I/O source, its timeout a timer), so handlers run on the loop's thread and may read and change
 * supervisor state directly. Limits: connections, memory per connection, request body size, idle timeout.
 * What the routes mean is the caller's (sup_http.c); this module only moves bytes. */
#ifndef FLINKLET_HTTP_H
#define FLINKLET_HTTP_H

#include <stddef.h>

#include <systemd/sd-event.h>

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
};

typedef void (*http_handler)(void *userdata, const struct http_request *req, struct http_response *resp);

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

/* Listens on "host:port" (port 0: any). Returns 0, or -errno (-EADDRINUSE, -EINVAL for a bad address). */
int http_start(sd_event *event, const char *address, http_handler handler, void *userdata, struct http_server **ret);
/* The port actually bound. */
int http_port(const struct http_server *h);
/* Serves fd, a connected stream socket (e.g. one end of a socketpair), as if it had been accepted on the
 * listening socket: the same parsing, limits and handler. The server owns fd from then on and closes it, also
 * when this fails. For tests without TCP (tests/fuzz/fuzz_http.c). Returns 0, or -errno. */
int http_add_connection(struct http_server *h, int fd);
void http_stop(struct http_server *h);

#endif

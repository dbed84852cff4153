/* rest: asynchronous calls to Flink's REST API over libcurl's multi interface, driven by the
 * supervisor's sd-event loop (curl's sockets become I/O sources, its timeout a timer source), so a
 * slow or hung REST server never delays anything else the loop does. Responses are parsed with cJSON. */
#ifndef FLINKLET_REST_H
#define FLINKLET_REST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <systemd/sd-event.h>

#include "util.h"

struct cJSON;
struct rest;

/* http_status: the HTTP status, or 0 when no response arrived (error then says why). body: the
 * parsed JSON response or NULL; owned by the caller of the callback only for its duration. */
typedef void (*rest_cb)(void *userdata, long http_status, struct cJSON *body, const char *error);

int rest_new(sd_event *event, const char *base_url, usec_t timeout, struct rest **ret);
void rest_free(struct rest *r);
/* Starts one request; cb runs from the event loop when it completes. body may be NULL. */
int rest_request(struct rest *r, const char *method, const char *path, const char *body, rest_cb cb, void *userdata);
/* The same with its own timeout (connecting and the whole request), instead of the one given to rest_new
 * (0: that one). */
int rest_request_within(struct rest *r, const char *method, const char *path, const char *body, usec_t timeout,
                        rest_cb cb, void *userdata);
/* A GET whose answer may be at most max_bytes (at most, and with 0, the 16 MiB every answer may be): a longer one
 * ends the request, and cb gets the error "response too large". */
int rest_get_capped(struct rest *r, const char *path, usec_t timeout, size_t max_bytes, rest_cb cb, void *userdata);
/* Whether the error a callback got says the request ran out of time (rather than, say, a refused connection). */
bool rest_error_is_timeout(const char *error);
/* A download into out, over the protocols the caller allows (redirects too: a redirect cannot leave them), within
 * a total time budget, a connect timeout and a size cap. cb runs once, with what happened. */
enum download_limit {
	DOWNLOAD_OK_OR_OTHER,     /* finished, or failed for another reason (error says which) */
	DOWNLOAD_TIMEOUT,         /* the total budget (timeout) ran out */
	DOWNLOAD_CONNECT_TIMEOUT, /* no connection (TLS and a proxy's tunnel included) within connect_timeout */
	DOWNLOAD_TOO_LARGE,       /* the answer announced (announced >= 0) or brought more than max_bytes */
	DOWNLOAD_SCHEME_REFUSED,  /* a redirect (to url) to a protocol not allowed */
};
struct download_result {
	long http_status;  /* 0 when no complete answer arrived */
	const char *error; /* NULL on success */
	enum download_limit limit;
	int64_t announced; /* the last answer's Content-Length, -1: none */
	uint64_t received; /* body bytes received */
	const char *url;   /* the URL last asked (after redirects) */
};
typedef void (*rest_download_cb)(void *userdata, const struct download_result *res);
struct download {
	const char *url;
	usec_t timeout;             /* the whole download, connecting and redirects included */
	usec_t connect_timeout;     /* 0: timeout */
	uint64_t max_bytes;         /* 0: 2 GiB */
	const char *protocols;      /* libcurl's CURLOPT_PROTOCOLS_STR, for the URL and every redirect; NULL: "https" */
	const char *ca_file;        /* NULL: the system's CAs */
	const char *aws_sigv4;      /* "aws:amz:<region>:s3" to sign with AWS SigV4, or NULL */
	const char *userpwd;        /* "<access key>:<secret key>" with aws_sigv4 */
	const char *const *headers; /* NULL-terminated extra headers, may be NULL */
};
int rest_download(struct rest *r, const struct download *d, FILE *out, rest_download_cb cb, void *userdata);

/* A request whose answer is passed on as it arrives (Flink's web UI through flinklet's endpoint): the
 * status line and each header line (with its CRLF; the empty line ends a block of them) to on_header, the body
 * in pieces to on_data (either returning false ends the request: on_done then has an error), then on_done once,
 * with the HTTP status (0 and error set when no complete answer arrived). target is the path with the query,
 * as it goes on the wire; headers "Name: value" replace curl's of the same name. No proxy is used and no
 * redirect followed. The description (st) must stay valid until on_done or rest_cancel. HEAD asks for the
 * headers only; every method but GET and HEAD sends body (empty when NULL). Returns the request, for rest_cancel, or
 * NULL. */
struct rest_stream {
	const char *method, *target;
	const char *const *headers; /* NULL-terminated, may be NULL */
	const char *body;           /* may be NULL; not with GET or HEAD */
	size_t body_len;
	usec_t timeout; /* the whole exchange */
	bool (*on_header)(void *userdata, const char *line, size_t len);
	bool (*on_data)(void *userdata, const char *data, size_t len);
	void (*on_done)(void *userdata, long http_status, const char *error);
};
struct rest_req;
struct rest_req *rest_stream(struct rest *r, const struct rest_stream *st, void *userdata);
/* Ends a request started by rest_stream before it completes; no callback runs. */
void rest_cancel(struct rest *r, struct rest_req *handle);

/* Requests still running. */
unsigned rest_in_flight(const struct rest *r);

#endif

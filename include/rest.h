/* rest: asynchronous calls to Flink's REST API over libcurl's multi interface, driven by the
 * supervisor's sd-event loop (curl's sockets become I/O sources, its timeout a timer source), so a
 * slow or hung REST server never delays anything else the loop does. Responses are parsed with cJSON. */
#ifndef FLINKLET_REST_H
#define FLINKLET_REST_H

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
/* Requests still running. */
unsigned rest_in_flight(const struct rest *r);

#endif

/* sup_http: the http part: flinklet's endpoint (routes, token, the proxy of Flink's UI under /flink/).
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_HTTP_H
#define FLINKLET_SUP_HTTP_H

#include "sup_core.h"

int sup_http_start(struct supervisor *s);
/* One request to the endpoint: which route answers it, with what (the handler http.c calls; tests call it). */
void sup_http_route(struct supervisor *s, const struct http_request *req, struct http_response *resp);
void sup_http_stop(struct supervisor *s);

#endif

/* flinkproxy: Flink's web UI and REST API under /flink/ on flinklet's own HTTP endpoint, so that one port (and
 * one credential) is all a pod publishes while Flink's REST server listens on loopback only. A request to
 * /flink/<rest> goes to Flink's REST server as /<rest> (query unchanged) over the supervisor's libcurl multi
 * handle (src/flink/rest.c), and its answer comes back through http_defer/http_answer (src/http/http.c): the event loop
 * never waits for Flink. Hop-by-hop headers, Flink's CORS headers and caching headers are dropped; the answer's
 * size, the bytes held for answers in all, the requests at once and their duration are bounded. GET /flink
 * redirects to /flink/. Who may use what is the caller's to decide (sup_http.c: GET and HEAD of the routes that
 * only read, src/flink/restroutes.c, for everyone; anything else with the bearer token); this module only
 * forwards. */
#ifndef FLINKLET_FLINKPROXY_H
#define FLINKLET_FLINKPROXY_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"
#include "rest.h"

#define FLINKPROXY_PREFIX "/flink"
#define FLINKPROXY_MAX_RESPONSE (16u << 20) /* one answer of Flink's (the UI's largest file is about 5 MB) */
#define FLINKPROXY_MAX_HELD (64u << 20)     /* answers arriving or being sent, in all */
#define FLINKPROXY_MAX_REQUESTS 16          /* requests waiting for Flink at once */
#define FLINKPROXY_TIMEOUT (30 * USEC_PER_SEC)

struct flinkproxy;

/* rest: the supervisor's client of Flink's REST API (used, not owned); flink_address: "host:port" of Flink's
 * REST server, for messages. */
struct flinkproxy *flinkproxy_new(struct rest *rest, const char *flink_address);
/* Answers every request still waiting (503) and cancels what it sent to Flink. Before http_stop. */
void flinkproxy_free(struct flinkproxy *p);

/* Whether path (decoded, without the query) is the proxy's: /flink or below /flink/. */
bool flinkproxy_owns(const char *path);
/* Serves req: answers in resp at once (a redirect, 404, 503 when busy...) or defers it and answers when Flink
 * has. down: why Flink cannot answer now (no JVM runs), or NULL; then what flinklet answers itself (the
 * redirect, 404) is still answered, and everything else gets 503 with that reason. p may be NULL (no REST
 * client): as down. */
void flinkproxy_handle(struct flinkproxy *p, const struct http_request *req, struct http_response *resp,
                       const char *down);

#endif

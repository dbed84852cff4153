/* sup_http: the supervisor's HTTP endpoint (contract section 5): GET /healthz, /readyz, /status, /metrics, the
 * status page at / with the JSON it reads besides /status (/events, /autoscaler: src/supervisor/sup_observe.c), and the
 * bearer-token protected POST /api/v1/savepoint|checkpoint|suspend|resume, whose actions go through
 * the same lifecycle as the configuration fields; and Flink's web UI and REST API under /flink/
 * (src/supervisor/flinkproxy.c): GET and HEAD of the routes that only read (src/flink/restroutes.c) for everyone,
 * anything else only with the token. Served on the event loop (src/http/http.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "flinkproxy.h"
#include "restroutes.h"
#include "sup_flinkmetrics.h"
#include "fsmode.h"
#include "store.h"
#include "sup_http.h"
#include "sup_metrics.h"
#include "sup_observe.h"
#include "sup_reload.h"
#include "sup_snapshot.h"

static char *json_msg(const char *key, const char *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, key, value);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *out = xasprintf("%s\n", text);
	free(text);
	return out;
}

/* 202 Accepted, and where the outcome will show. */
static char *accepted(const char *action, const char *result)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "accepted", action);
	cJSON_AddStringToObject(o, "result", result);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	char *out = xasprintf("%s\n", text);
	free(text);
	return out;
}

static bool healthy(const struct supervisor *s)
{
	/* working as intended: the JVM up, or down on purpose (suspended, finished, stopping, a restart's backoff) */
	return s->state != SUP_FAILED;
}

static bool ready(const struct supervisor *s)
{
	return s->state == SUP_RUNNING && s->status.job_state && !strcmp(s->status.job_state, "RUNNING");
}

static bool authorized(struct supervisor *s, const char *header)
{
	return http_bearer_authorized(s->http.token, header);
}

static void control(struct supervisor *s, const char *action, const struct http_request *req,
                    struct http_response *resp)
{
	if (!strcmp(action, "savepoint") || !strcmp(action, "checkpoint")) {
		if (s->state != SUP_RUNNING && s->state != SUP_STARTING && s->state != SUP_BACKOFF) {
			resp->code = 409;
			resp->body = json_msg("error", "the job is not running");
			return;
		}
		sup_event(s, "ApiRequest", "POST /api/v1/%s: taking a MANUAL %s", action, action);
		if (action[0] == 's')
			sup_snapshot_request_savepoint(s, "MANUAL");
		else
			sup_snapshot_request_checkpoint(s, "MANUAL");
		resp->code = 202;
		resp->body =
		    accepted(action, action[0] == 's'
		                         ? "GET /status: jobStatus.savepointInfo.lastSavepoint when it completes; "
		                           "a SavepointCompleted or SavepointFailed event in events.jsonl"
		                         : "GET /status: jobStatus.checkpointInfo.lastCheckpoint when it completes; "
		                           "a CheckpointCompleted or CheckpointFailed event in events.jsonl");
		return;
	}
	if (!strcmp(action, "suspend") || !strcmp(action, "resume")) {
		enum job_state want = action[0] == 's' ? JOB_STATE_SUSPENDED : JOB_STATE_RUNNING;
		if (s->state == SUP_FINISHED || s->state == SUP_FAILED) {
			resp->code = 409;
			resp->body = json_msg("error", "the job has ended");
			return;
		}
		sup_event(s, "ApiRequest", "POST /api/v1/%s", action);
		/* answered (202) once the desired state is on the volume; the loop goes on meanwhile */
		sup_reload_set_desired_state(s, want, "the API", http_defer(req));
		return;
	}
	resp->code = 404;
	resp->body = json_msg("error", "no such action");
}

/* Whether req may go on without the token: GET and HEAD of what restroutes takes for reading, and what the proxy
 * answers itself (the redirect of /flink, 404 for a target not below /flink/ as sent). Else *why says why not. */
static bool open_to_all(const struct http_request *req, bool get, const char **why)
{
	*why = NULL;
	if (!get)
		return false;
	const char *target = req->target ? req->target : req->path;
	size_t n = strlen(FLINKPROXY_PREFIX);
	if (strncmp(target, FLINKPROXY_PREFIX "/", n + 1))
		return true;
	return restroutes_get_access(target + n, why) == RESTROUTES_OPEN;
}

/* /flink and below: Flink's answers. Reading is open (what Flink's UI shows of the job, the UI's files); anything
 * else acts on the job (cancel, stop, savepoints, rescaling: with any method, yarn-cancel with GET), shows what may
 * hold secrets (the JVM's options and environment, configuration, logs) or is not known to only read, and needs
 * the token: 401 without one, 403 with a wrong one, and nothing reaches Flink. What does reach it with the token
 * is recorded as an event. */
static void flink_route(struct supervisor *s, const struct http_request *req, struct http_response *resp)
{
	bool get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
	const char *why = NULL;
	bool open = open_to_all(req, get, &why);
	resp->content_type = "application/json";
	if (!open && !authorized(s, req->authorization)) {
		s->http.unauthorized++;
		if (!req->authorization) {
			resp->code = 401;
			strv_push(&resp->headers, "WWW-Authenticate: Bearer realm=\"flinklet\"");
			char *msg =
			    get ? xasprintf("a valid 'Authorization: Bearer <token>' is required here (%s)",
			                    why ? why : "not known to only read")
			        : xstrdup("a valid 'Authorization: Bearer <token>' is required for anything but "
			                  "GET and HEAD of what only reads under " FLINKPROXY_PREFIX "/");
			resp->body = json_msg("error", msg);
			free(msg);
		} else {
			resp->code = 403;
			resp->body = json_msg("error", "the token is not valid");
		}
		return;
	}
	char *down = s->launch.jvm_pid
	                 ? NULL
	                 : xasprintf("Flink is not running (the job is %s)", lifecycle_to_string(s->status.lifecycle));
	if (!open && !down)
		sup_event(s, "ApiRequest", "%s %s with the token: to Flink", req->method, req->path);
	flinkproxy_handle(s->http.proxy, req, resp, down);
	free(down);
}

void sup_http_route(struct supervisor *s, const struct http_request *req, struct http_response *resp)
{
	bool get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
	resp->content_type = "application/json";
	if (flinkproxy_owns(req->path)) {
		flink_route(s, req, resp);
		return;
	}
	/* what flinklet answers itself is never to be taken for anything but its Content-Type */
	strv_push(&resp->headers, "X-Content-Type-Options: nosniff");
	if (str_has_prefix(req->path, "/api/v1/")) {
		if (strcmp(req->method, "POST")) {
			resp->code = 405;
			resp->body = json_msg("error", "use POST");
		} else if (!authorized(s, req->authorization)) {
			s->http.unauthorized++;
			resp->code = 401;
			resp->body = json_msg("error", "a valid 'Authorization: Bearer <token>' is required");
		} else {
			control(s, req->path + strlen("/api/v1/"), req, resp);
		}
		return;
	}
	if (!get) {
		resp->code = 405;
		resp->body = json_msg("error", "use GET");
	} else if (!strcmp(req->path, "/")) {
		sup_observe_status_page(s, resp);
	} else if (!strcmp(req->path, "/events")) {
		resp->code = 200;
		resp->body = sup_observe_events_json(s);
	} else if (!strcmp(req->path, "/jobmetrics")) {
		resp->code = 200;
		cJSON *o = sup_flinkmetrics_json(s);
		char *text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		resp->body = xasprintf("%s\n", text);
		free(text);
	} else if (!strcmp(req->path, "/autoscaler")) {
		resp->code = 200;
		resp->body = sup_observe_autoscaler_json(s);
	} else if (!strcmp(req->path, "/healthz")) {
		resp->code = healthy(s) ? 200 : 503;
		resp->body = json_msg("lifecycleState", lifecycle_to_string(s->status.lifecycle));
	} else if (!strcmp(req->path, "/readyz")) {
		resp->code = ready(s) ? 200 : 503;
		resp->body = json_msg("jobState", s->status.job_state ? s->status.job_state : "NONE");
	} else if (!strcmp(req->path, "/status")) {
		resp->code = 200;
		resp->body = status_render(&s->status);
		/* whether status.json already says the same: a client waiting for a change (`suspend --wait`) is
		 * done only once the document on the volume shows it too */
		strv_push(&resp->headers, sup_status_recorded(s, resp->body) ? "Flinklet-Status-Recorded: true"
		                                                             : "Flinklet-Status-Recorded: false");
	} else if (!strcmp(req->path, "/metrics")) {
		resp->code = 200;
		resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
		resp->body = sup_metrics(s, &resp->tail);
	} else {
		resp->code = 404;
		resp->body = json_msg("error", "not found");
	}
}

static void on_http(void *userdata, const struct http_request *req, struct http_response *resp)
{
	sup_http_route(userdata, req, resp);
}

/* The token: the configured file, else <state dir>/http.token, made on the first start (FSMODE_SECRET:
 * 0640, so that a later run under another uid of the state directory's group can read it). */
static int load_token(struct supervisor *s, char **ret_path)
{
	const char *configured = spec_get(s->spec, "flinklet.http.token-file");
	char *path = configured ? xstrdup(configured) : path_join(s->state_dir, "http.token");
	char *text = NULL;
	int r = read_file(path, 4096, &text, NULL);
	if (r == -EACCES && !configured) {
		/* made 0600 by an older flinklet under another uid (a new pod's arbitrary uid): the directory is
		 * the group's, so a new token replaces it; clients read it from the file */
		log_warn("the API token %s is not readable by uid %u: replacing it", path, (unsigned)geteuid());
		r = -ENOENT;
	}
	if (r == -ENOENT && !configured) {
		unsigned char raw[32];
		if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
			free(path);
			return -EIO;
		}
		struct strbuf b = {0};
		for (size_t i = 0; i < sizeof(raw); i++)
			strbuf_appendf(&b, "%02x", raw[i]);
		strbuf_append(&b, "\n");
		r = write_file_atomic_mode(path, b.buf, b.len, FSMODE_SECRET);
		strbuf_free(&b);
		if (r == 0)
			r = read_file(path, 4096, &text, NULL);
	}
	if (r < 0) {
		log_fatal("unable to read the API token %s: %s", path, strerror(-r));
		free(path);
		return r;
	}
	text[strcspn(text, "\r\n \t")] = '\0';
	if (strlen(text) < 16) {
		log_fatal("the API token in %s is too short (at least 16 characters)", path);
		free(text);
		free(path);
		return -EINVAL;
	}
	s->http.token = text;
	*ret_path = path;
	return 0;
}

int sup_http_start(struct supervisor *s)
{
	const char *address = spec_get(s->spec, "flinklet.http.address");
	if (!address || !strcmp(address, "off"))
		return 0;
	char *token_path = NULL;
	int r = load_token(s, &token_path);
	if (r < 0)
		return r;
	struct http_limits limits = {
	    .max_connections = (unsigned)spec_int(s->spec, "flinklet.http.max-connections"),
	    .max_connections_per_ip = (unsigned)spec_int(s->spec, "flinklet.http.max-connections-per-ip"),
	    .timeout_s = (unsigned)((spec_duration(s->spec, "flinklet.http.connection-timeout") + USEC_PER_SEC - 1) /
	                            USEC_PER_SEC),
	};
	r = http_start(s->event, address, &limits, on_http, s, &s->http.server);
	if (r < 0) {
		log_fatal("unable to serve HTTP on %s (flinklet.http.address): %s%s", address, strerror(-r),
		          r == -EADDRINUSE ? ": another process listens there" : "");
		free(token_path);
		return r;
	}
	const char *colon = strrchr(address, ':');
	char *actual = xasprintf("%.*s:%d", (int)(colon - address), address, http_port(s->http.server));
	status_set_string(&s->status.http_address, actual);
	status_set_string(&s->status.token_file, token_path);
	log_info("serving the status page at /, /healthz, /readyz, /status, /metrics, /events, /autoscaler and /api/v1 "
	         "on %s (at most %u connections, %u per "
	         "client address, closed after %u s idle)",
	         actual, limits.max_connections, limits.max_connections_per_ip, limits.timeout_s);
	if (s->rest) {
		char *flink = xasprintf("127.0.0.1:%d", s->status.rest_port);
		s->http.proxy = flinkproxy_new(s->rest, flink);
		log_info(
		    "Flink's web UI and REST API on http://%s%s/ (what only reads for all, the rest with the token)",
		    actual, FLINKPROXY_PREFIX);
		free(flink);
	}
	free(actual);
	free(token_path);
	return 0;
}

void sup_http_stop(struct supervisor *s)
{
	flinkproxy_free(s->http.proxy); /* first: it answers what waits for Flink */
	s->http.proxy = NULL;
	http_stop(s->http.server);
	s->http.server = NULL;
	free(s->http.token);
	s->http.token = NULL;
}

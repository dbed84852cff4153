/* sup_observe: the status page at GET / (web/status.html, built into the binary) and what it reads besides
 * /status: the newest events (GET /events: a ring seeded from the end of events.jsonl at start, then fed by every
 * event) and the autoscaler (GET /autoscaler: the job's vertices, the overrides, the decisions, the stored scaling
 * history, on Flink 2.3+ Flink's own rescale history (sup_rescales.c), and a timeline kept in memory since this
 * supervisor started: per control-loop cycle, each vertex's parallelism, true processing rate, target data rate and
 * recommended parallelism). All of it only reads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"
#include "store.h"
#include "sup_observe.h"
#include "sup_rescales.h"
#include "webpage.h"

#define EVENTS_KEPT 200
#define EVENTS_TAIL_BYTES (256 * 1024)
#define TIMELINE_KEPT 360 /* an hour at the default control-loop interval (10 s) */
#define STATUS_PAGE "status.html"

void sup_observe_setup(struct supervisor *s)
{
	recent_init(&s->observe.events, EVENTS_KEPT);
	recent_init(&s->observe.timeline, TIMELINE_KEPT);
	char *text = NULL;
	size_t len = 0;
	if (store_events_tail(s->state_dir, EVENTS_TAIL_BYTES, &text, &len) == 0)
		recent_push_lines(&s->observe.events, text, len);
	free(text);
	const struct web_asset *page = web_asset_find(STATUS_PAGE);
	if (page)
		s->observe.page_csp = webpage_csp((const char *)page->data, page->len);
}

void sup_observe_free(struct supervisor *s)
{
	recent_free(&s->observe.events);
	recent_free(&s->observe.timeline);
	free(s->observe.page_csp);
	s->observe.page_csp = NULL;
}

void sup_observe_event(struct supervisor *s, const char *json_line)
{
	recent_push(&s->observe.events, json_line);
}

/* A number of the autoscaler's report, or null when it is absent or not finite (an idle vertex's true
 * processing rate is infinite). */
static cJSON *finite_or_null(const cJSON *metrics, const char *name)
{
	double v;
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(metrics, name);
	if (j && as_json_double(j, &v) == 0 && isfinite(v))
		return cJSON_CreateNumber(v);
	return cJSON_CreateNull();
}

void sup_observe_autoscaler(struct supervisor *s, enum as_outcome out)
{
	if (out == AS_OUTCOME_DISABLED || out == AS_OUTCOME_NOT_RUNNING || s->state != SUP_RUNNING ||
	    !s->poll.vertices.n)
		return;
	bool evaluated = out == AS_OUTCOME_COLLECTING || out == AS_OUTCOME_BALANCED || out == AS_OUTCOME_SCALED;
	cJSON *report = evaluated ? autoscaler_report_json(s->autoscaler.as, s->job_id) : NULL;
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(report, "vertices");
	cJSON *point = cJSON_CreateObject();
	cJSON_AddNumberToObject(point, "t", (double)(now_realtime() / USEC_PER_MSEC));
	cJSON_AddStringToObject(point, "outcome", as_outcome_name(out));
	cJSON *vs = cJSON_AddObjectToObject(point, "vertices");
	for (size_t i = 0; i < s->poll.vertices.n; i++) {
		const struct vertex_info *v = s->poll.vertices.v + i;
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(rv, v->id);
		cJSON *o = cJSON_AddObjectToObject(vs, v->id);
		cJSON_AddNumberToObject(o, "parallelism", v->parallelism);
		cJSON_AddItemToObject(o, "trueProcessingRate", finite_or_null(m, "TRUE_PROCESSING_RATE"));
		cJSON_AddItemToObject(o, "targetDataRate", finite_or_null(m, "TARGET_DATA_RATE"));
		cJSON_AddItemToObject(o, "recommendedParallelism", finite_or_null(m, "RECOMMENDED_PARALLELISM"));
	}
	char *text = cJSON_PrintUnformatted(point);
	recent_push(&s->observe.timeline, text);
	free(text);
	cJSON_Delete(point);
	cJSON_Delete(report);
}

/* {"<key>": <array text>} */
static char *wrap_array(const char *key, char *array)
{
	char *out = xasprintf("{\"%s\":%s}\n", key, array);
	free(array);
	return out;
}

char *sup_observe_events_json(struct supervisor *s)
{
	return wrap_array("events", recent_array(&s->observe.events, 0));
}

char *sup_observe_autoscaler_json(struct supervisor *s)
{
	struct as_options o;
	as_options_from_spec(s->spec, &o);
	cJSON *root = cJSON_CreateObject();
	cJSON_AddBoolToObject(root, "enabled", o.enabled);
	cJSON_AddBoolToObject(root, "scalingEnabled", o.scaling_enabled);
	cJSON_AddNumberToObject(root, "controlLoopIntervalMs", (double)o.control_loop_interval_ms);
	as_options_free(&o);
	cJSON_AddStringToObject(root, "jobId", s->job_id);
	cJSON *vs = cJSON_AddArrayToObject(root, "vertices");
	for (size_t i = 0; i < s->poll.vertices.n; i++) {
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "id", s->poll.vertices.v[i].id);
		cJSON_AddStringToObject(v, "name", s->poll.vertices.v[i].name ? s->poll.vertices.v[i].name : "");
		cJSON_AddNumberToObject(v, "parallelism", s->poll.vertices.v[i].parallelism);
		cJSON_AddNumberToObject(v, "maxParallelism", s->poll.vertices.v[i].max_parallelism);
		cJSON_AddItemToArray(vs, v);
	}
	if (s->autoscaler.as) {
		cJSON_AddItemToObject(root, "parallelismOverrides",
		                      autoscaler_overrides_json(s->autoscaler.as, s->job_id));
		cJSON *report = autoscaler_report_json(s->autoscaler.as, s->job_id);
		cJSON *d = cJSON_AddObjectToObject(root, "decisions");
		static const char *const counts[] = {"scalings", "balanced", "errors"};
		for (size_t i = 0; i < 3; i++)
			cJSON_AddItemToObject(d, counts[i],
			                      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(report, counts[i]), 0));
		cJSON_Delete(report);
		cJSON_AddItemToObject(
		    root, "scalingHistory",
		    as_scaling_history_to_json(&autoscaler_job(s->autoscaler.as, s->job_id)->scaling_history));
	}
	/* Flink 2.3+: what the adaptive scheduler itself recorded of the rescales (absent before 2.3) */
	cJSON *flink = sup_rescales_json(s);
	if (flink)
		cJSON_AddItemToObject(root, "flinkRescaleHistory", flink);
	/* the timeline is text already: spliced in, not parsed and printed again */
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	char *tl = recent_array(&s->observe.timeline, 0);
	size_t n = text ? strlen(text) : 0;
	char *out = n > 1 && text[n - 1] == '}' ? xasprintf("%.*s,\"timeline\":%s}\n", (int)(n - 1), text, tl)
	                                        : xasprintf("{\"timeline\":%s}\n", tl);
	free(tl);
	free(text);
	return out;
}

void sup_observe_status_page(struct supervisor *s, struct http_response *resp)
{
	const struct web_asset *page = web_asset_find(STATUS_PAGE);
	if (!page || !s->observe.page_csp) {
		resp->code = 404;
		resp->body = xstrdup("{\"error\":\"no status page in this build\"}\n");
		return;
	}
	resp->code = 200;
	resp->content_type = "text/html; charset=utf-8";
	resp->body = xmalloc(page->len + 1);
	memcpy(resp->body, page->data, page->len + 1);
	resp->body_len = page->len;
	char *csp = xasprintf("Content-Security-Policy: %s", s->observe.page_csp);
	strv_push_take(&resp->headers, csp);
	strv_push(&resp->headers, "Referrer-Policy: no-referrer");
	strv_push(&resp->headers, "X-Frame-Options: DENY");
}

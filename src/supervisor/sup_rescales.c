/* sup_rescales: Flink's own rescale history (Flink 2.3+): GET /jobs/:id/rescales/history every five poll intervals
 * while the job runs (at once when a vertex's parallelism changed), then GET .../rescales/details/:uuid once for
 * each finished rescale (after a failure, again 1, 3, 7 ... at most 31 history rounds later), one request at a time
 * on the REST client's multi handle, so that the loop never waits.
 * Flink keeps the history only with the adaptive scheduler and web.adaptive-scheduler.rescale-history.size > 0
 * (flinklet's default with the adaptive scheduler: flinkconf.c); otherwise, and below 2.3, nothing is asked.
 * An answer that is not what Flink 2.3 sends (an HTTP error, not JSON, too large, another shape) changes nothing:
 * the list stays as Flink last gave it, the problem is shown in GET /autoscaler and logged once. Answers meant for an
 * earlier JVM are dropped. */
#include <stdlib.h>
#include <string.h>

#include "flinkconf.h"
#include "sup_rescales.h"

#define POLLS_PER_ASK 5
/* the most an answer may be: Flink's history of a few hundred records, or the details of a job of thousands of
 * vertices, is well below it */
#define ANSWER_MAX_BYTES (4u << 20)

/* The history's size in force for the running JVM (0: Flink keeps none, or is older than 2.3). */
static int64_t kept(const struct supervisor *s)
{
	return flinkconf_rescale_history_size(s->launched ? s->launched : s->spec, s->flink_version);
}

/* The vertices' parallelism as one number (FNV-1a): a change means a rescale just happened. */
static uint64_t parallelism_signature(const struct supervisor *s)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (size_t i = 0; i < s->poll.vertices.n; i++) {
		const struct vertex_info *v = s->poll.vertices.v + i;
		for (const char *p = v->id; *p; p++)
			h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
		h = (h ^ (uint64_t)(unsigned)v->parallelism) * UINT64_C(1099511628211);
	}
	return h;
}

/* What was wrong with an answer, kept for GET /autoscaler and logged when it is news. */
static void say(char **slot, char *what)
{
	if (*slot && !strcmp(*slot, what)) {
		free(what);
		return;
	}
	log_warn("Flink's rescale history: %s (nothing is taken from that answer)", what);
	free(*slot);
	*slot = what;
}

/* The problem with an answer that is not 200 with a body: an HTTP error with the first line of Flink's message
 * (up to 200 bytes), or curl's error. */
static char *request_problem(const char *path, long code, const cJSON *body, const char *error)
{
	if (!code && rest_error_is_timeout(error)) /* one problem whatever curl says of its length */
		return xasprintf("GET %s: timed out", path);
	if (!code)
		return xasprintf("GET %s: %s", path, error ? error : "no answer");
	if (code == 200 && !error)
		return xasprintf("GET %s: an empty answer", path);
	const cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "errors"), 0);
	if (cJSON_IsString(e0)) {
		const char *m = e0->valuestring;
		size_t n = strcspn(m, "\n");
		return xasprintf("GET %s answered %ld: %.*s", path, code, (int)(n > 200 ? 200 : n), m);
	}
	return xasprintf("GET %s answered %ld%s%s", path, code, error ? ": " : "", error ? error : "");
}

/* The answer is for the JVM it was asked of, which still runs. */
static bool answer_current(struct supervisor *s)
{
	s->rescales.asking = false;
	return s->launch.jvm_pid > 0 && s->rescales.gen == s->launch.gen && !s->closing;
}

static void ask_details(struct supervisor *s);

static void on_details(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!answer_current(s))
		return;
	struct sup_rescales *r = &s->rescales;
	struct rescale *rec = rescales_find(&r->list, r->asked);
	if (!rec)
		return;
	char *path = xasprintf("/jobs/%s/rescales/details/%s", s->job_id, r->asked);
	char *err = NULL;
	if (code != 200 || !body) {
		rescales_details_failed(rec);
		say(&r->details_problem, request_problem(path, code, body, error));
	} else if (rescales_parse_details(body, rec, &err) < 0) {
		rescales_details_failed(rec);
		say(&r->details_problem, xasprintf("GET %s: %s", path, err));
		free(err);
	} else {
		free(r->details_problem);
		r->details_problem = NULL;
		ask_details(s); /* the next one, if any */
	}
	free(path);
}

/* The details of the oldest finished rescale not asked yet (one request; its answer asks for the next). */
static void ask_details(struct supervisor *s)
{
	struct sup_rescales *r = &s->rescales;
	struct rescale *rec = rescales_wanting_details(&r->list);
	if (!rec)
		return;
	memcpy(r->asked, rec->uuid, sizeof(r->asked));
	char *path = xasprintf("/jobs/%s/rescales/details/%s", s->job_id, rec->uuid);
	r->asking = rest_get_capped(s->rest, path, spec_duration(s->spec, "kubernetes.operator.flink.client.timeout"),
	                            ANSWER_MAX_BYTES, on_details, s) == 0;
	free(path);
}

/* A listed rescale's details could not be had (yet). */
static bool details_failing(const struct rescales *list)
{
	for (size_t i = 0; i < list->n; i++)
		if (!list->v[i].details && list->v[i].details_tries)
			return true;
	return false;
}

static void on_history(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!answer_current(s))
		return;
	struct sup_rescales *r = &s->rescales;
	char *path = xasprintf("/jobs/%s/rescales/history", s->job_id);
	struct rescales fresh = {0};
	char *err = NULL;
	if (code != 200 || !body) {
		say(&r->history_problem, request_problem(path, code, body, error));
	} else if (rescales_parse_history(body, &fresh, &err) < 0) {
		say(&r->history_problem, xasprintf("GET %s: %s", path, err));
		free(err);
	} else {
		if (r->list_gen == r->gen)
			rescales_keep_details(&fresh, &r->list);
		rescales_free(&r->list);
		r->list = fresh;
		r->list_gen = r->gen;
		rescales_new_round(&r->list);
		r->updated_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
		if (r->history_problem)
			log_info("Flink's rescale history answers again (GET %s)", path);
		free(r->history_problem);
		r->history_problem = NULL;
		if (!details_failing(&r->list)) { /* (the rescale whose details failed is no longer listed) */
			free(r->details_problem);
			r->details_problem = NULL;
		}
		ask_details(s);
	}
	free(path);
}

void sup_rescales_poll(struct supervisor *s)
{
	struct sup_rescales *r = &s->rescales;
	if (r->asking || s->launch.jvm_pid <= 0 || s->state != SUP_RUNNING || !s->rest || kept(s) <= 0)
		return;
	uint64_t sig = parallelism_signature(s);
	usec_t now = now_monotonic();
	if (r->gen == s->launch.gen && sig == r->signature && now < r->next_at)
		return;
	r->signature = sig;
	r->gen = s->launch.gen;
	r->next_at = now + POLLS_PER_ASK * spec_duration(s->spec, "flinklet.rest.poll-interval");
	char *path = xasprintf("/jobs/%s/rescales/history", s->job_id);
	r->asking = rest_get_capped(s->rest, path, spec_duration(s->spec, "kubernetes.operator.flink.client.timeout"),
	                            ANSWER_MAX_BYTES, on_history, s) == 0;
	free(path);
}

cJSON *sup_rescales_json(struct supervisor *s)
{
	if (!flink_has_rescale_history(s->flink_version))
		return NULL;
	struct sup_rescales *r = &s->rescales;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "kept", (double)kept(s));
	if (r->updated_ms > 0)
		cJSON_AddNumberToObject(o, "updated", (double)r->updated_ms);
	else
		cJSON_AddNullToObject(o, "updated");
	const char *problem = r->history_problem ? r->history_problem : r->details_problem;
	if (problem)
		cJSON_AddStringToObject(o, "error", problem);
	else
		cJSON_AddNullToObject(o, "error");
	cJSON_AddBoolToObject(o, "more", r->list.cut);
	cJSON_AddItemToObject(o, "rescales", rescales_to_json(&r->list));
	return o;
}

void sup_rescales_free(struct supervisor *s)
{
	rescales_free(&s->rescales.list);
	free(s->rescales.history_problem);
	free(s->rescales.details_problem);
	s->rescales.history_problem = s->rescales.details_problem = NULL;
}

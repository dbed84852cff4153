/* sup_poll: following the job through Flink's REST API, one request chain per poll interval: the job's
 * details (state, tasks), its checkpoint statistics, the cluster overview, and with the operator's health
 * check on, the restart count. Feeds EV_JOB_RUNNING and EV_UNHEALTHY to the lifecycle table. Replies from
 * an earlier JVM (launch generation) are ignored. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sup.h"

static bool poll_current(struct supervisor *s)
{
	return s->poll_gen == s->launch_gen && s->jvm_pid > 0;
}

static void health_unhealthy(struct supervisor *s, const char *why)
{
	if (s->state != SUP_RUNNING)
		return;
	sup_alert(s, "JobUnhealthy", "restarting unhealthy job: %s", why);
	status_set_string(&s->status.error, why);
	sup_dispatch(s, EV_UNHEALTHY);
}

static bool job_state_terminal(const char *st)
{
	return st && (!strcmp(st, "FINISHED") || !strcmp(st, "FAILED") || !strcmp(st, "CANCELED"));
}

static void on_restart_metric(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	s->poll_in_flight = false;
	if (!poll_current(s) || code != 200 || !cJSON_IsArray(body))
		return;
	const cJSON *m;
	int64_t value = -1;
	cJSON_ArrayForEach (m, body) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "value");
		if (cJSON_IsString(id) && cJSON_IsString(v) &&
		    (!strcmp(id->valuestring, "numRestarts") || !strcmp(id->valuestring, "fullRestarts")))
			parse_int64(v->valuestring, &value);
	}
	if (value < 0)
		return;
	usec_t now = now_monotonic(),
	       window = spec_duration(s->spec, "kubernetes.operator.cluster.health-check.restarts.window");
	/* drop samples older than the window, keep the rest, append this one */
	unsigned keep = 0;
	for (unsigned i = 0; i < s->n_restart_samples; i++)
		if (now - s->restart_samples[i].t <= window)
			s->restart_samples[keep++] = s->restart_samples[i];
	s->n_restart_samples = keep;
	if (s->n_restart_samples == RESTART_SAMPLES) {
		memmove(s->restart_samples, s->restart_samples + 1,
		        sizeof(s->restart_samples[0]) * (RESTART_SAMPLES - 1));
		s->n_restart_samples--;
	}
	s->restart_samples[s->n_restart_samples].t = now;
	s->restart_samples[s->n_restart_samples++].v = value;
	int64_t delta = value - s->restart_samples[0].v;
	int64_t threshold = spec_int(s->spec, "kubernetes.operator.cluster.health-check.restarts.threshold");
	if (delta > threshold) {
		char *why = xasprintf("%lld restarts within %s (threshold %lld)", (long long)delta,
		                      spec_get(s->spec, "kubernetes.operator.cluster.health-check.restarts.window"),
		                      (long long)threshold);
		health_unhealthy(s, why);
		free(why);
	}
}

static usec_t checkpoint_progress_window(const struct spec *spec)
{
	usec_t w = spec_duration(spec, "kubernetes.operator.cluster.health-check.checkpoint-progress.window");
	if (w)
		return w;
	usec_t interval = spec_duration(spec, "execution.checkpointing.interval");
	usec_t timeout = spec_duration(spec, "execution.checkpointing.timeout");
	if (!timeout)
		timeout = 10 * 60 * USEC_PER_SEC;
	int64_t tolerable = spec_int(spec, "execution.checkpointing.tolerable-failed-checkpoints");
	return (interval > timeout ? interval : timeout) * (usec_t)(tolerable + 2);
}

static void on_overview(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!poll_current(s) || code != 200 || !body) {
		s->poll_in_flight = false;
		return;
	}
	const cJSON *tms = cJSON_GetObjectItemCaseSensitive(body, "taskmanagers");
	const cJSON *slots = cJSON_GetObjectItemCaseSensitive(body, "slots-total");
	bool none =
	    (cJSON_IsNumber(tms) && tms->valuedouble == 0) || (cJSON_IsNumber(slots) && slots->valuedouble == 0);
	s->zero_slot_polls = none ? s->zero_slot_polls + 1 : 0;
	if (s->zero_slot_polls >= 2)
		health_unhealthy(s, "the MiniCluster has no task manager or no slots left (a fatal TaskManager error)");

	bool enabled = spec_bool(s->spec, "kubernetes.operator.cluster.health-check.enabled");
	if (enabled && s->state == SUP_RUNNING &&
	    spec_bool(s->spec, "kubernetes.operator.cluster.health-check.checkpoint-progress.enabled") &&
	    spec_duration(s->spec, "execution.checkpointing.interval") > 0) {
		usec_t window = checkpoint_progress_window(s->spec);
		usec_t since =
		    s->last_checkpoint_progress > s->stable_since ? s->last_checkpoint_progress : s->stable_since;
		if (now_monotonic() - since > window) {
			char *why = xasprintf("no checkpoint completed within %llu s",
			                      (unsigned long long)(window / USEC_PER_SEC));
			health_unhealthy(s, why);
			free(why);
			s->poll_in_flight = false;
			return;
		}
	}
	if (enabled && s->state == SUP_RUNNING) {
		char *path = xasprintf("/jobs/%s/metrics?get=numRestarts,fullRestarts", s->job_id);
		if (rest_request(s->rest, "GET", path, NULL, on_restart_metric, s) < 0)
			s->poll_in_flight = false;
		free(path);
		return;
	}
	s->poll_in_flight = false;
}

static void on_checkpoints(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!poll_current(s)) {
		s->poll_in_flight = false;
		return;
	}
	if (code == 200 && body) {
		const cJSON *counts = cJSON_GetObjectItemCaseSensitive(body, "counts");
		const cJSON *completed_n = cJSON_GetObjectItemCaseSensitive(counts, "completed");
		const cJSON *failed_n = cJSON_GetObjectItemCaseSensitive(counts, "failed");
		if (cJSON_IsNumber(completed_n))
			s->counters.flink_completed = (int64_t)completed_n->valuedouble;
		if (cJSON_IsNumber(failed_n))
			s->counters.flink_failed = (int64_t)failed_n->valuedouble;
		if (cJSON_IsNumber(completed_n) && (int64_t)completed_n->valuedouble != s->completed_checkpoints) {
			s->completed_checkpoints = (int64_t)completed_n->valuedouble;
			s->last_checkpoint_progress = now_monotonic();
		}
		const cJSON *latest = cJSON_GetObjectItemCaseSensitive(body, "latest");
		const cJSON *completed = cJSON_GetObjectItemCaseSensitive(latest, "completed");
		if (cJSON_IsObject(completed)) {
			const cJSON *path = cJSON_GetObjectItemCaseSensitive(completed, "external_path");
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(completed, "id");
			const cJSON *ts = cJSON_GetObjectItemCaseSensitive(completed, "latest_ack_timestamp");
			const cJSON *sp = cJSON_GetObjectItemCaseSensitive(completed, "is_savepoint");
			if (cJSON_IsString(path) && cJSON_IsNumber(id) && !cJSON_IsTrue(sp) &&
			    (int64_t)id->valuedouble != s->status.last_checkpoint.id) {
				snapshot_ref_set(&s->status.last_checkpoint, path->valuestring,
				                 (int64_t)id->valuedouble,
				                 cJSON_IsNumber(ts) ? (int64_t)ts->valuedouble : 0, NULL);
				log_info("checkpoint %lld completed: %s", (long long)id->valuedouble,
				         path->valuestring);
			}
		}
		sup_write_status(s);
	}
	if (rest_request(s->rest, "GET", "/overview", NULL, on_overview, s) < 0)
		s->poll_in_flight = false;
}

static void record_vertices(struct supervisor *s, const cJSON *vertices)
{
	for (size_t i = 0; i < s->vertices.n; i++)
		free(s->vertices.v[i].name);
	free(s->vertices.v);
	s->vertices.v = NULL;
	s->vertices.n = 0;
	int n = cJSON_GetArraySize(vertices);
	if (n <= 0)
		return;
	s->vertices.v = xcalloc((size_t)n, sizeof(*s->vertices.v));
	const cJSON *v;
	cJSON_ArrayForEach (v, vertices) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
		const cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parallelism");
		const cJSON *maxp = cJSON_GetObjectItemCaseSensitive(v, "maxParallelism");
		if (!cJSON_IsString(id) || strlen(id->valuestring) != 32)
			continue;
		struct vertex_info *vi = &s->vertices.v[s->vertices.n++];
		memcpy(vi->id, id->valuestring, 33);
		vi->name = xstrdup(cJSON_IsString(name) ? name->valuestring : "");
		vi->parallelism = cJSON_IsNumber(par) ? (int)par->valuedouble : 0;
		vi->max_parallelism = cJSON_IsNumber(maxp) ? (int)maxp->valuedouble : 0;
	}
}

static void on_job_details(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!poll_current(s) || code != 200 || !body) {
		s->poll_in_flight = false;
		if (code == 0)
			log_debug("Flink REST not reachable: %s", error ? error : "no response");
		else if (code != 404 && poll_current(s))
			log_warn("GET /jobs/%s answered %ld", s->job_id, code);
		if (code != 0)
			s->last_rest_ok = now_monotonic();
		return;
	}
	s->last_rest_ok = now_monotonic();
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(body, "state");
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(body, "start-time");
	int total = 0, running = 0, finished = 0;
	const cJSON *v;
	cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive(body, "vertices")) {
		const cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parallelism");
		const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(v, "tasks");
		const cJSON *run = cJSON_GetObjectItemCaseSensitive(tasks, "RUNNING");
		const cJSON *fin = cJSON_GetObjectItemCaseSensitive(tasks, "FINISHED");
		total += cJSON_IsNumber(par) ? (int)par->valuedouble : 0;
		running += cJSON_IsNumber(run) ? (int)run->valuedouble : 0;
		finished += cJSON_IsNumber(fin) ? (int)fin->valuedouble : 0;
	}
	record_vertices(s, cJSON_GetObjectItemCaseSensitive(body, "vertices"));
	const char *st = cJSON_IsString(state) ? state->valuestring : NULL;
	if (s->state == SUP_STARTING || s->state == SUP_RUNNING)
		sup_set_job_state(s, st);
	if (cJSON_IsNumber(start) && start->valuedouble > 0)
		s->status.start_time_ms = (int64_t)start->valuedouble;
	s->status.tasks_total = total;
	s->status.tasks_running = running;
	s->status.tasks_finished = finished;
	sup_write_status(s);
	/* every task running; a source subtask that got no split (or a bounded one) is FINISHED, not missing */
	if (st && !strcmp(st, "RUNNING") && running > 0 && running + finished == total)
		sup_dispatch(s, EV_JOB_RUNNING);
	if (job_state_terminal(st) || !poll_current(s)) {
		/* a terminal job ends its JVM by itself; it is never restarted by a health check */
		s->poll_in_flight = false;
		return;
	}
	char *path = xasprintf("/jobs/%s/checkpoints", s->job_id);
	if (rest_request(s->rest, "GET", path, NULL, on_checkpoints, s) < 0)
		s->poll_in_flight = false;
	free(path);
}

int sup_on_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	usec_t interval = spec_duration(s->spec, "flinklet.rest.poll-interval");
	sd_event_source_set_time(src, now_monotonic() + interval);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	sup_check_volume(s);
	if (s->jvm_pid <= 0 || (s->state != SUP_STARTING && s->state != SUP_RUNNING))
		return 0;
	sup_snapshot_kick(s);
	usec_t rest_timeout = spec_duration(s->spec, "flinklet.health.rest-timeout");
	if (s->state == SUP_RUNNING && s->last_rest_ok && now_monotonic() - s->last_rest_ok > rest_timeout) {
		char *why = xasprintf("Flink's REST API has not answered for %s (a hung JVM)",
		                      spec_get(s->spec, "flinklet.health.rest-timeout"));
		health_unhealthy(s, why);
		free(why);
		return 0;
	}
	if (s->poll_in_flight)
		return 0;
	s->poll_gen = s->launch_gen;
	char *path = xasprintf("/jobs/%s", s->job_id);
	if (rest_request(s->rest, "GET", path, NULL, on_job_details, s) == 0)
		s->poll_in_flight = true;
	free(path);
	return 0;
}

/* ---- stop-with-savepoint ---- */

/* supervisor: the `flinklet run` event loop (see include/supervisor.h).
 *
 * Everything that happens is an event fed to the lifecycle table (src/lifecycle.c); this file holds the
 * actions and the sources that produce the events: signals, the JVM's exit, timers, and the replies of
 * Flink's REST API. Intent is written to the volume before each action that matters (the restore point
 * before a launch, the stop-with-savepoint before it is triggered), then the outcome. */
#include "supervisor.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <systemd/sd-event.h>

#include "flinkconf.h"
#include "jvm.h"
#include "lifecycle.h"
#include "log.h"
#include "rest.h"
#include "snapshots.h"
#include "status.h"
#include "store.h"

extern char **environ;

#define RESTART_SAMPLES 256

struct supervisor {
	sd_event *event;
	struct spec *spec;
	const struct run_options *opts;
	char *state_dir, *conf_dir, *tmp_dir, *lib_dir, *ckpt_dir, *sp_dir;
	char *flink_version;
	char job_id[33];
	int lock_fd;

	struct status status;
	char *last_written;
	enum sup_state state;
	int exit_code;

	pid_t jvm_pid;
	unsigned launch_gen, poll_gen;
	bool poll_in_flight;
	struct rest *rest;
	sd_event_source *poll_timer, *startup_timer, *backoff_timer, *kill_timer, *deadline_timer;
	sd_event_source *savepoint_timer, *savepoint_poll_timer;

	/* restarts */
	unsigned consecutive_failures;
	usec_t stable_since;
	bool first_start, fresh_start;

	/* restore points */
	struct strv failed_restore_points, reported_skips;
	char *restore_path;
	enum restore_kind restore_kind;

	/* health */
	usec_t last_rest_ok;
	int zero_slot_polls;
	int64_t completed_checkpoints;
	usec_t last_checkpoint_progress;
	struct {
		usec_t t;
		int64_t v;
	} restart_samples[RESTART_SAMPLES];
	unsigned n_restart_samples;

	/* stop-with-savepoint */
	char *savepoint_request;
	usec_t savepoint_started;
	bool savepoint_recorded;
};

static void sup_dispatch(struct supervisor *s, enum sup_event ev);

/* ---- events and the status document ---- */

static void sup_event(struct supervisor *s, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sup_event_v(struct supervisor *s, enum log_level level, const char *type, const char *fmt, va_list ap)
{
	struct strbuf msg = {0};
	strbuf_vappendf(&msg, fmt, ap);
	log_msg(level, "%s", msg.buf);

	usec_t now = now_realtime();
	char iso[40];
	format_iso8601(now, iso, sizeof(iso));
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", iso);
	cJSON_AddNumberToObject(o, "timeMs", (double)(now / USEC_PER_MSEC));
	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddStringToObject(o, "jobId", s->job_id);
	cJSON_AddStringToObject(o, "lifecycleState", lifecycle_to_string(s->status.lifecycle));
	cJSON_AddStringToObject(o, "message", msg.buf);
	char *line = cJSON_PrintUnformatted(o);
	int r = store_append_event(s->state_dir, line);
	if (r < 0)
		log_error("unable to append to events.jsonl: %s", strerror(-r));
	free(line);
	cJSON_Delete(o);
	strbuf_free(&msg);
}

static void sup_event(struct supervisor *s, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sup_event_v(s, LOG_LEVEL_INFO, type, fmt, ap);
	va_end(ap);
}

static void sup_alert(struct supervisor *s, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sup_alert(struct supervisor *s, const char *type, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sup_event_v(s, LOG_LEVEL_ERROR, type, fmt, ap);
	va_end(ap);
}

static void sup_write_status(struct supervisor *s)
{
	char *text = status_render(&s->status);
	if (s->last_written && !strcmp(text, s->last_written)) {
		free(text);
		return;
	}
	char *path = path_join(s->state_dir, "status.json");
	int r = write_file_atomic(path, text, strlen(text));
	free(path);
	if (r < 0) {
		log_error("unable to write status.json: %s", strerror(-r));
		free(text);
		return;
	}
	free(s->last_written);
	s->last_written = text;
}

static void sup_set_job_state(struct supervisor *s, const char *state)
{
	if (s->status.job_state && state && !strcmp(s->status.job_state, state))
		return;
	status_set_string(&s->status.job_state, state);
	s->status.update_time_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
}

static void sup_set_intent(struct supervisor *s, const char *intent)
{
	status_set_string(&s->status.intent, intent);
	sup_write_status(s);
}

static void sup_exit(struct supervisor *s, int code)
{
	s->exit_code = code;
	sd_event_exit(s->event, code);
}

static sd_event_source *disarm(sd_event_source *src)
{
	return sd_event_source_disable_unref(src);
}

static int arm(struct supervisor *s, sd_event_source **src, usec_t delay, sd_event_time_handler_t fn)
{
	*src = disarm(*src);
	return sd_event_add_time(s->event, src, CLOCK_MONOTONIC, now_monotonic() + delay, 0, fn, s);
}

/* ---- restore points ---- */

static bool strv_contains(const struct strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i], s))
			return true;
	return false;
}

/* Chooses where the next launch starts from: the newest complete checkpoint or savepoint that has not
 * failed to restore, never empty while one exists. */
static int choose_restore_point(struct supervisor *s)
{
	const char *recorded[SAVEPOINT_HISTORY_MAX + 2] = {0};
	size_t n = 0;
	if (!s->fresh_start) {
		if (s->status.last_savepoint.location)
			recorded[n++] = s->status.last_savepoint.location;
		for (int i = 0; i < s->status.n_savepoint_history && n < SAVEPOINT_HISTORY_MAX + 1; i++)
			recorded[n++] = s->status.savepoint_history[i].location;
	}
	struct restore_scan scan = {
	    .checkpoint_dir = s->ckpt_dir,
	    .savepoint_dir = s->sp_dir,
	    .job_id = s->job_id,
	    .recorded_savepoints = recorded,
	    .initial_savepoint = s->spec->job.initial_savepoint_path,
	    .first_start = s->first_start,
	};
	struct restore_list list;
	int r = restore_points_scan(&scan, &list);
	for (size_t i = 0; i < list.skipped.n; i++)
		if (!strv_contains(&s->reported_skips, list.skipped.v[i])) {
			strv_push(&s->reported_skips, list.skipped.v[i]);
			sup_alert(s, "RestorePointSkipped", "%s", list.skipped.v[i]);
		}
	const struct restore_point *pick = NULL;
	for (size_t i = 0; i < list.n && !pick; i++)
		if (!strv_contains(&s->failed_restore_points, list.v[i].path))
			pick = &list.v[i];
	if (!pick && list.n > 0) {
		sup_alert(s, "RestorePointsExhausted", "every restore point failed once; trying the newest again (%s)",
		          list.v[0].path);
		strv_free(&s->failed_restore_points);
		pick = &list.v[0];
	}
	free(s->restore_path);
	s->restore_path = pick ? xstrdup(pick->path) : NULL;
	s->restore_kind = pick ? pick->kind : RESTORE_NONE;
	restore_list_free(&list);
	if (r < 0) {
		sup_alert(s, "RestorePointsUnreadable",
		          "unable to read the snapshot directories (%s): not starting until "
		          "they can be read",
		          strerror(-r));
		return r;
	}
	return 0;
}

/* ---- launching the JVM ---- */

static int write_launch_files(struct supervisor *s, const struct launch *l)
{
	char *conf = flinkconf_render_config(s->spec, l);
	char *log4j = flinkconf_render_log4j(s->spec);
	char *conf_path = path_join(s->conf_dir, "config.yaml");
	char *log_path = path_join(s->conf_dir, "log4j-console.properties");
	int r = mkdir_p(s->conf_dir);
	if (r == 0)
		r = write_file_atomic(conf_path, conf, strlen(conf));
	if (r == 0)
		r = write_file_atomic(log_path, log4j, strlen(log4j));
	free(conf);
	free(log4j);
	free(conf_path);
	free(log_path);
	if (r == 0) {
		/* Flink's temporary files (blobs, the extracted RPC jar, spill files) from an earlier JVM */
		rm_rf(s->tmp_dir);
		r = mkdir_p(s->tmp_dir);
	}
	return r;
}

static int on_startup_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->startup_timer = disarm(s->startup_timer);
	sup_alert(s, "StartupTimeout", "the job was not RUNNING with every task running within %s",
	          spec_get(s->spec, "flinklet.startup.timeout"));
	sup_dispatch(s, EV_STARTUP_TIMEOUT);
	return 0;
}

/* Returns 0, or -errno when the JVM could not be executed. */
static int sup_launch(struct supervisor *s)
{
	int r = choose_restore_point(s);
	if (r < 0)
		return r; /* never start empty because a directory could not be read */
	char *uri = s->restore_path ? file_uri_from_path(s->restore_path) : NULL;
	status_set_string(&s->status.restored_kind, restore_kind_to_string(s->restore_kind));
	status_set_string(&s->status.restored_location, uri);
	status_set_string(&s->status.job_state, NULL);
	s->status.tasks_total = s->status.tasks_running = 0;
	char *intent = uri ? xasprintf("start the job from %s %s", restore_kind_to_string(s->restore_kind), uri)
	                   : xstrdup("start the job with empty state");
	sup_set_intent(s, intent);
	if (uri)
		sup_event(s, "Restoring", "restoring job %s from %s %s (%s)", s->job_id,
		          restore_kind_to_string(s->restore_kind), uri,
		          s->restore_kind == RESTORE_CHECKPOINT ? "claim mode" : "no_claim mode");
	else
		sup_event(s, "StartingEmpty", "starting job %s with empty state (no checkpoint or savepoint exists)",
		          s->job_id);
	free(intent);

	struct launch l = {
	    .job_id = s->job_id,
	    .conf_dir = s->conf_dir,
	    .tmp_dir = s->tmp_dir,
	    .java = spec_get(s->spec, "flinklet.java.bin"),
	    .restore_path = uri,
	    .restore_claim = s->restore_kind == RESTORE_CHECKPOINT,
	};
	r = write_launch_files(s, &l);
	if (r < 0) {
		log_error("unable to write the Flink configuration in %s: %s", s->conf_dir, strerror(-r));
		free(uri);
		return r;
	}
	struct strv argv = {0}, envp = {0};
	flinkconf_build_argv(s->spec, &l, &argv);
	flinkconf_build_envp(s->spec, &l, environ, &envp);
	pid_t pid;
	r = jvm_spawn(argv.v, envp.v, s->state_dir, &pid);
	strv_free(&argv);
	strv_free(&envp);
	free(uri);
	if (r < 0) {
		log_error("unable to execute %s: %s", l.java, strerror(-r));
		return r;
	}
	s->jvm_pid = pid;
	s->launch_gen++;
	s->status.jvm_pid = pid;
	s->last_rest_ok = 0;
	s->zero_slot_polls = 0;
	s->n_restart_samples = 0;
	s->last_checkpoint_progress = now_monotonic();
	arm(s, &s->startup_timer, spec_duration(s->spec, "flinklet.startup.timeout"), on_startup_timeout);
	sup_event(s, "JvmStarted", "started the MiniCluster JVM (pid %d) for job %s, Flink %s, REST on port %d",
	          (int)pid, s->job_id, s->flink_version, s->status.rest_port);
	sup_write_status(s);
	return 0;
}

/* ---- following the job through REST ---- */

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
	int total = 0, running = 0;
	const cJSON *v;
	cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive(body, "vertices")) {
		const cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parallelism");
		const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(v, "tasks");
		const cJSON *run = cJSON_GetObjectItemCaseSensitive(tasks, "RUNNING");
		total += cJSON_IsNumber(par) ? (int)par->valuedouble : 0;
		running += cJSON_IsNumber(run) ? (int)run->valuedouble : 0;
	}
	const char *st = cJSON_IsString(state) ? state->valuestring : NULL;
	if (s->state == SUP_STARTING || s->state == SUP_RUNNING)
		sup_set_job_state(s, st);
	if (cJSON_IsNumber(start) && start->valuedouble > 0)
		s->status.start_time_ms = (int64_t)start->valuedouble;
	s->status.tasks_total = total;
	s->status.tasks_running = running;
	sup_write_status(s);
	if (st && !strcmp(st, "RUNNING") && total > 0 && running == total)
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

static int on_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	usec_t interval = spec_duration(s->spec, "flinklet.rest.poll-interval");
	sd_event_source_set_time(src, now_monotonic() + interval);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	if (s->jvm_pid <= 0 || (s->state != SUP_STARTING && s->state != SUP_RUNNING))
		return 0;
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

static void record_savepoint(struct supervisor *s, const char *location, const char *trigger)
{
	int64_t now_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
	snapshot_ref_set(&s->status.last_savepoint, location, -1, now_ms, trigger);
	if (s->status.n_savepoint_history == SAVEPOINT_HISTORY_MAX) {
		snapshot_ref_free(&s->status.savepoint_history[0]);
		memmove(s->status.savepoint_history, s->status.savepoint_history + 1,
		        sizeof(s->status.savepoint_history[0]) * (SAVEPOINT_HISTORY_MAX - 1));
		memset(&s->status.savepoint_history[SAVEPOINT_HISTORY_MAX - 1], 0,
		       sizeof(s->status.savepoint_history[0]));
		s->status.n_savepoint_history--;
	}
	snapshot_ref_set(&s->status.savepoint_history[s->status.n_savepoint_history++], location, -1, now_ms, trigger);
	s->savepoint_recorded = true;
	sup_write_status(s);
	sup_event(s, "SavepointCompleted", "savepoint %s completed (%s)", location, trigger);
}

static void on_savepoint_status(void *userdata, long code, cJSON *body, const char *error);

static int on_savepoint_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->savepoint_poll_timer = disarm(s->savepoint_poll_timer);
	if (s->state != SUP_SAVEPOINTING || !s->savepoint_request)
		return 0;
	char *path = xasprintf("/jobs/%s/savepoints/%s", s->job_id, s->savepoint_request);
	rest_request(s->rest, "GET", path, NULL, on_savepoint_status, s);
	free(path);
	return 0;
}

static void on_savepoint_status(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (s->state != SUP_SAVEPOINTING || s->savepoint_recorded)
		return;
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(body, "status");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(status, "id");
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(body, "operation");
	if (code == 200 && cJSON_IsString(id) && !strcmp(id->valuestring, "COMPLETED")) {
		const cJSON *loc = cJSON_GetObjectItemCaseSensitive(op, "location");
		if (cJSON_IsString(loc)) {
			record_savepoint(s, loc->valuestring, "UPGRADE");
			sup_dispatch(s, EV_SAVEPOINT_DONE);
			return;
		}
		const cJSON *cause = cJSON_GetObjectItemCaseSensitive(op, "failure-cause");
		const cJSON *trace = cJSON_GetObjectItemCaseSensitive(cause, "stack-trace");
		char *first = cJSON_IsString(trace) ? xstrndup(trace->valuestring, strcspn(trace->valuestring, "\n"))
		                                    : xstrdup("unknown cause");
		char *why = xasprintf("stop-with-savepoint failed: %s", first);
		status_set_string(&s->status.error, why);
		sup_alert(s, "SavepointFailed", "%s", why);
		free(first);
		free(why);
		sup_dispatch(s, EV_SAVEPOINT_FAILED);
		return;
	}
	/* in progress, or the REST server is going away with the finished job: ask again shortly */
	arm(s, &s->savepoint_poll_timer, 300 * USEC_PER_MSEC, on_savepoint_poll);
}

static void on_savepoint_triggered(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (s->state != SUP_SAVEPOINTING)
		return;
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(body, "request-id");
	if ((code == 200 || code == 202) && cJSON_IsString(rid)) {
		free(s->savepoint_request);
		s->savepoint_request = xstrdup(rid->valuestring);
		log_info("stop-with-savepoint triggered (request %s)", s->savepoint_request);
		arm(s, &s->savepoint_poll_timer, 300 * USEC_PER_MSEC, on_savepoint_poll);
		return;
	}
	const cJSON *errs = cJSON_GetObjectItemCaseSensitive(body, "errors");
	const cJSON *e0 = cJSON_GetArrayItem(errs, 0);
	char *why = xasprintf("unable to trigger stop-with-savepoint: %s",
	                      cJSON_IsString(e0) ? e0->valuestring : (error ? error : "no answer from Flink"));
	status_set_string(&s->status.error, why);
	sup_alert(s, "SavepointFailed", "%s", why);
	free(why);
	sup_dispatch(s, EV_SAVEPOINT_FAILED);
}

static int on_savepoint_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->savepoint_timer = disarm(s->savepoint_timer);
	if (s->state != SUP_SAVEPOINTING || s->savepoint_recorded)
		return 0;
	char *why = xasprintf("the savepoint on shutdown did not complete within the shutdown budget; the newest "
	                      "checkpoint stays the restore point");
	status_set_string(&s->status.error, why);
	sup_alert(s, "SavepointFailed", "%s", why);
	free(why);
	sup_dispatch(s, EV_SAVEPOINT_FAILED);
	return 0;
}

/* ---- the actions ---- */

static int on_kill_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->kill_timer = disarm(s->kill_timer);
	if (s->jvm_pid > 0) {
		log_warn("the JVM did not exit within %s; sending SIGKILL",
		         spec_get(s->spec, "flinklet.jvm.stop-grace-period"));
		jvm_signal(s->jvm_pid, SIGKILL);
	}
	return 0;
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->deadline_timer = disarm(s->deadline_timer);
	sup_alert(s, "ShutdownBudgetExhausted", "the shutdown budget of %s is exhausted",
	          spec_get(s->spec, "flinklet.shutdown.timeout"));
	sup_dispatch(s, EV_DEADLINE);
	return 0;
}

static int on_backoff_done(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->backoff_timer = disarm(s->backoff_timer);
	sup_dispatch(s, EV_BACKOFF_DONE);
	return 0;
}

static usec_t grace_period(struct supervisor *s)
{
	usec_t budget = spec_duration(s->spec, "flinklet.shutdown.timeout");
	usec_t grace = spec_duration(s->spec, "flinklet.jvm.stop-grace-period");
	return grace < budget ? grace : budget;
}

static void arm_deadline(struct supervisor *s)
{
	if (!s->deadline_timer)
		arm(s, &s->deadline_timer, spec_duration(s->spec, "flinklet.shutdown.timeout"), on_deadline);
}

static enum sup_state act_terminate(struct supervisor *s)
{
	arm_deadline(s);
	if (s->jvm_pid <= 0)
		return SUP_STOPPING;
	sup_set_intent(s, "stop the JVM; the newest checkpoint stays the restore point");
	sup_event(s, "Stopping", "stopping the JVM (pid %d): SIGTERM, SIGKILL after %s", (int)s->jvm_pid,
	          spec_get(s->spec, "flinklet.jvm.stop-grace-period"));
	jvm_signal(s->jvm_pid, SIGTERM);
	arm(s, &s->kill_timer, grace_period(s), on_kill_timer);
	return SUP_STOPPING;
}

static enum sup_state act_stop(struct supervisor *s)
{
	arm_deadline(s);
	if (s->spec->job.upgrade_mode != UPGRADE_SAVEPOINT)
		return act_terminate(s);
	/* persist the intent, then act */
	s->savepoint_started = now_realtime();
	s->savepoint_recorded = false;
	sup_set_intent(s, "stop the job with a savepoint");
	sup_event(s, "SavepointTriggered", "upgradeMode savepoint: stopping job %s with a savepoint into %s", s->job_id,
	          s->sp_dir);
	char *uri = file_uri_from_path(s->sp_dir);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "targetDirectory", uri);
	cJSON_AddBoolToObject(body, "drain", false);
	cJSON_AddStringToObject(body, "formatType", "CANONICAL");
	char *text = cJSON_PrintUnformatted(body);
	char *path = xasprintf("/jobs/%s/stop", s->job_id);
	int r = rest_request(s->rest, "POST", path, text, on_savepoint_triggered, s);
	free(path);
	free(text);
	free(uri);
	cJSON_Delete(body);
	usec_t budget = spec_duration(s->spec, "flinklet.shutdown.timeout");
	usec_t for_savepoint = budget > grace_period(s) ? budget - grace_period(s) : budget / 2;
	arm(s, &s->savepoint_timer, for_savepoint, on_savepoint_timeout);
	if (r < 0) {
		status_set_string(&s->status.error, "unable to send the stop-with-savepoint request");
		return act_terminate(s);
	}
	return SUP_SAVEPOINTING;
}

static enum sup_state act_restart(struct supervisor *s, enum sup_state next)
{
	usec_t now = now_monotonic();
	if (s->stable_since && now - s->stable_since >= spec_duration(s->spec, "flinklet.restart.stable-period"))
		s->consecutive_failures = 0;
	s->stable_since = 0;
	s->consecutive_failures++;
	int64_t max = spec_int(s->spec, "flinklet.restart.max-attempts");
	if (max > 0 && s->consecutive_failures > (unsigned)max) {
		char *why =
		    xasprintf("crash loop: %u consecutive failed starts (flinklet.restart.max-attempts is %lld)",
		              s->consecutive_failures, (long long)max);
		status_set_string(&s->status.error, why);
		sup_set_job_state(s, "FAILED");
		sup_alert(s, "CrashLoop", "%s; giving up", why);
		free(why);
		return SUP_FAILED;
	}
	usec_t delay =
	    backoff_delay(s->consecutive_failures, spec_duration(s->spec, "flinklet.restart.backoff.initial"),
	                  spec_duration(s->spec, "flinklet.restart.backoff.max"), 2.0);
	sup_event(s, "RestartScheduled", "restarting the JVM in %.1f s (attempt %u)", (double)delay / USEC_PER_SEC,
	          s->consecutive_failures);
	arm(s, &s->backoff_timer, delay, on_backoff_done);
	return next;
}

static enum sup_state act_stopped(struct supervisor *s)
{
	s->kill_timer = disarm(s->kill_timer);
	s->deadline_timer = disarm(s->deadline_timer);
	status_set_string(&s->status.intent, NULL);
	if (s->state == SUP_FINISHED) {
		sup_event(s, "Stopped", "stopped; job %s had FINISHED", s->job_id);
		sup_exit(s, 0);
		return SUP_STOPPED;
	}
	sup_set_job_state(s, "SUSPENDED");
	if (s->savepoint_recorded)
		sup_event(s, "Stopped", "stopped; the next start restores from savepoint %s",
		          s->status.last_savepoint.location);
	else if (s->spec->job.upgrade_mode == UPGRADE_STATELESS)
		sup_event(s, "Stopped", "stopped; upgradeMode stateless: the next start begins empty");
	else
		sup_event(s, "Stopped", "stopped; the newest retained checkpoint is the restore point");
	sup_exit(s, 0);
	return SUP_STOPPED;
}

static enum sup_state run_action(struct supervisor *s, enum sup_action a, enum sup_state next)
{
	switch (a) {
	case ACT_NONE:
		return next;
	case ACT_MARK_STABLE:
		s->startup_timer = disarm(s->startup_timer);
		s->stable_since = now_monotonic();
		s->first_start = false;
		status_set_string(&s->status.error, NULL);
		status_set_string(&s->status.intent, NULL);
		sup_event(s, "JobRunning", "job %s is RUNNING with all %d tasks running", s->job_id,
		          s->status.tasks_total);
		return next;
	case ACT_FINISHED:
		s->startup_timer = disarm(s->startup_timer);
		sup_set_job_state(s, "FINISHED");
		status_set_string(&s->status.intent, NULL);
		sup_event(s, "JobFinished", "job %s FINISHED; it will not be started again", s->job_id);
		if (s->opts->exit_on_finish)
			sup_exit(s, 0);
		return next;
	case ACT_RESTORE_FAILED:
		if (s->restore_path) {
			strv_push(&s->failed_restore_points, s->restore_path);
			sup_alert(
			    s, "RestoreFailed",
			    "the JVM exited with code %d before job %s was RUNNING after restoring from %s %s; the "
			    "next attempt uses the next older restore point",
			    s->status.last_exit_code, s->job_id, restore_kind_to_string(s->restore_kind),
			    s->restore_path);
		}
		return act_restart(s, next);
	case ACT_RESTART:
		return act_restart(s, next);
	case ACT_KILL_JVM:
		if (s->jvm_pid > 0)
			jvm_signal(s->jvm_pid, SIGKILL);
		return next;
	case ACT_LAUNCH:
		s->status.jvm_restarts++;
		if (sup_launch(s) < 0) {
			s->status.last_exit_code = 127;
			return act_restart(s, SUP_BACKOFF);
		}
		return next;
	case ACT_STOP:
		return act_stop(s);
	case ACT_TERMINATE:
		if (s->state == SUP_STARTING && s->spec->job.upgrade_mode == UPGRADE_SAVEPOINT)
			sup_alert(
			    s, "SavepointSkipped",
			    "stop requested before the job was RUNNING: no savepoint; the newest checkpoint stays the "
			    "restore point");
		return act_terminate(s);
	case ACT_KILL_NOW:
		log_warn("stopping at once: SIGKILL to the JVM");
		if (s->jvm_pid > 0)
			jvm_signal(s->jvm_pid, SIGKILL);
		if (next == SUP_STOPPED)
			return act_stopped(s);
		/* the budget is spent: give SIGKILL a moment, then exit whatever the JVM does */
		if (!s->deadline_timer)
			arm(s, &s->deadline_timer, 2 * USEC_PER_SEC, on_deadline);
		return next;
	case ACT_SAVEPOINT_RECORD:
		s->savepoint_timer = disarm(s->savepoint_timer);
		sup_set_intent(s, "wait for the JVM to end after the savepoint");
		arm(s, &s->kill_timer, grace_period(s), on_kill_timer);
		return next;
	case ACT_SAVEPOINT_ABANDON:
		s->savepoint_timer = disarm(s->savepoint_timer);
		return act_terminate(s);
	case ACT_STOPPED_SAVEPOINT:
		if (!s->savepoint_recorded) {
			/* the REST server went away with the finished job: the savepoint is on disk */
			char *found = savepoint_find_newest(s->sp_dir, s->job_id, s->savepoint_started - USEC_PER_SEC);
			if (found) {
				char *uri = file_uri_from_path(found);
				record_savepoint(s, uri, "UPGRADE");
				free(uri);
				free(found);
			} else {
				status_set_string(
				    &s->status.error,
				    "the JVM ended before the savepoint on shutdown completed; the newest "
				    "checkpoint stays the restore point");
				sup_alert(s, "SavepointFailed", "%s", s->status.error);
			}
		}
		return act_stopped(s);
	case ACT_STOPPED:
	case ACT_EXIT:
		return act_stopped(s);
	case SUP_ACTION_MAX:
		break;
	}
	return next;
}

static void sup_dispatch(struct supervisor *s, enum sup_event ev)
{
	const struct transition *t = &lifecycle_table[s->state][ev];
	if (t->action == ACT_NONE && t->next == s->state) {
		log_debug("%s: %s ignored", sup_state_name(s->state), sup_event_name(ev));
		return;
	}
	enum sup_state before = s->state;
	enum sup_state next = run_action(s, t->action, t->next);
	s->state = next;
	/* a finished job stays STABLE/FINISHED in the record after the supervisor stops */
	if (!(next == SUP_STOPPED && before == SUP_FINISHED))
		s->status.lifecycle = sup_state_lifecycle(next);
	if (before != next)
		log_info("%s + %s -> %s (%s)", sup_state_name(before), sup_event_name(ev), sup_state_name(next),
		         lifecycle_to_string(s->status.lifecycle));
	sup_write_status(s);
	if (next == SUP_FAILED)
		sup_exit(s, 1);
}

/* ---- signals and the JVM's exit ---- */

static void on_child(const struct reaped *r, void *userdata)
{
	struct supervisor *s = userdata;
	if (r->pid != s->jvm_pid) {
		log_debug("reaped orphan process %d", (int)r->pid);
		return;
	}
	s->jvm_pid = 0;
	s->status.jvm_pid = 0;
	s->status.last_exit_code = r->exit_code;
	s->status.last_exit_signal = r->exit_signal;
	s->kill_timer = disarm(s->kill_timer);
	s->startup_timer = disarm(s->startup_timer);
	if (r->exit_signal >= 0)
		sup_event(s, "JvmExited", "the JVM was killed by signal %d (%s)", r->exit_signal,
		          strsignal(r->exit_signal));
	else
		sup_event(s, "JvmExited", "the JVM exited with code %d", r->exit_code);
	if (r->exit_signal >= 0)
		sup_dispatch(s, EV_JVM_KILLED);
	else
		sup_dispatch(s, r->exit_code == 0 ? EV_JVM_EXITED_OK : EV_JVM_EXITED_ERROR);
}

static int on_sigchld(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	reap_children(on_child, userdata);
	return 0;
}

static int on_term(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct supervisor *s = userdata;
	sup_event(s, "StopRequested", "%s received", si->ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
	sup_dispatch(s, EV_STOP);
	return 0;
}

static int on_quit(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct supervisor *s = userdata;
	if (s->jvm_pid > 0) {
		log_info("SIGQUIT: asking the JVM for a thread dump");
		jvm_signal(s->jvm_pid, SIGQUIT);
	}
	return 0;
}

static int on_hup(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	log_info("SIGHUP: configuration reload is not available in this version; ignored");
	return 0;
}

/* ---- set-up ---- */

static int check_environment(struct supervisor *s)
{
	const char *home = spec_get(s->spec, "flinklet.flink.home");
	s->lib_dir = path_join(home, "lib");
	int r = flink_detect_version(s->lib_dir, &s->flink_version);
	if (r < 0) {
		log_fatal("unable to find the Flink jars in %s (flink-dist-*.jar or flink-clients-*.jar): %s; set "
		          "--flink-home, $FLINK_HOME or flinklet.flink.home",
		          s->lib_dir, r == -ENOENT ? "none there" : strerror(-r));
		return 3;
	}
	const char *label = flink_version_label(s->flink_version);
	if (s->spec->flink_version && label && strcmp(label, s->spec->flink_version))
		log_warn("spec.flinkVersion is %s but the jars in %s are Flink %s", s->spec->flink_version, s->lib_dir,
		         s->flink_version);
	status_set_string(&s->status.flink_version, s->flink_version);
	return 0;
}

static void adopt_old_status(struct supervisor *s, struct status *old)
{
	s->status.jvm_restarts = old->jvm_restarts;
	s->status.last_savepoint = old->last_savepoint;
	memset(&old->last_savepoint, 0, sizeof(old->last_savepoint));
	s->status.n_savepoint_history = old->n_savepoint_history;
	memcpy(s->status.savepoint_history, old->savepoint_history, sizeof(old->savepoint_history));
	old->n_savepoint_history = 0;
	s->status.last_checkpoint = old->last_checkpoint;
	memset(&old->last_checkpoint, 0, sizeof(old->last_checkpoint));
	s->status.start_time_ms = old->start_time_ms;
	status_set_string(&s->status.job_state, old->job_state);
	s->status.update_time_ms = old->update_time_ms;
}

static int open_state_dir(struct supervisor *s)
{
	s->state_dir = xstrdup(spec_get(s->spec, "flinklet.state.dir"));
	int r = mkdir_p(s->state_dir);
	if (r < 0) {
		log_fatal("unable to create the state directory %s: %s", s->state_dir, strerror(-r));
		return 3;
	}
	if (access(s->state_dir, W_OK) < 0) {
		log_fatal("the state directory %s is not writable: %s", s->state_dir, strerror(errno));
		return 3;
	}
	long owner = 0;
	s->lock_fd = store_lock(s->state_dir, &owner);
	if (s->lock_fd == -EBUSY) {
		log_fatal("the state directory %s is locked by another flinklet (pid %ld); refusing to start",
		          s->state_dir, owner);
		return 3;
	}
	if (s->lock_fd < 0) {
		log_fatal("unable to lock the state directory %s: %s", s->state_dir, strerror(-s->lock_fd));
		return 3;
	}
	store_repair_events(s->state_dir);
	s->conf_dir = path_join(s->state_dir, "conf");
	s->tmp_dir = path_join(s->state_dir, "tmp");
	s->ckpt_dir = local_path_from_uri(spec_get(s->spec, "execution.checkpointing.dir"));
	s->sp_dir = local_path_from_uri(spec_get(s->spec, "execution.checkpointing.savepoint-dir"));
	if (!s->ckpt_dir || !s->sp_dir) {
		log_fatal("the checkpoint and savepoint directories must be local paths");
		return 3;
	}

	/* what the last run knew (savepoints, restart counts, a finished job) carries over */
	char *path = path_join(s->state_dir, "status.json");
	char *text = NULL;
	s->first_start = true;
	enum lifecycle_state old_lifecycle = LIFECYCLE_CREATED;
	if (read_file(path, 4u << 20, &text, NULL) == 0) {
		struct status old;
		if (status_parse(text, &old) == 0) {
			adopt_old_status(s, &old);
			old_lifecycle = old.lifecycle;
			s->first_start = old.start_time_ms == 0;
		} else {
			log_warn("status.json in %s is unreadable; starting a new one", s->state_dir);
		}
		status_free(&old);
		free(text);
	}
	free(path);

	bool stateless_restart = s->spec->job.upgrade_mode == UPGRADE_STATELESS && old_lifecycle == LIFECYCLE_SUSPENDED;
	if (stateless_restart) {
		/* a new job id: the old job's checkpoints stay where they are, untouched and unused */
		char *idpath = path_join(s->state_dir, "job-id");
		unlink(idpath);
		free(idpath);
		s->fresh_start = true;
		s->status.start_time_ms = 0;
		status_set_string(&s->status.job_state, NULL);
		snapshot_ref_free(&s->status.last_checkpoint);
	}
	r = store_job_id(s->state_dir, s->job_id);
	if (r < 0) {
		log_fatal("unable to keep the job id in %s: %s", s->state_dir, strerror(-r));
		return 3;
	}
	memcpy(s->status.job_id, s->job_id, sizeof(s->job_id));
	status_set_string(&s->status.name, s->spec->name);
	s->status.rest_port = flinkconf_rest_port(s->spec);
	return 0;
}

static int setup_loop(struct supervisor *s)
{
	int r = sd_event_new(&s->event);
	if (r < 0)
		return r;
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((r = sd_event_add_signal(s->event, NULL, SIGCHLD, on_sigchld, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGTERM, on_term, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGINT, on_term, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGQUIT, on_quit, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGHUP, on_hup, s)) < 0)
		return r;
	char *url = xasprintf("http://127.0.0.1:%d", s->status.rest_port);
	r = rest_new(s->event, url, spec_duration(s->spec, "kubernetes.operator.flink.client.timeout"), &s->rest);
	free(url);
	if (r < 0)
		return r;
	return sd_event_add_time(s->event, &s->poll_timer, CLOCK_MONOTONIC, now_monotonic() + USEC_PER_SEC, 0, on_poll,
	                         s);
}

static void sup_free(struct supervisor *s)
{
	rest_free(s->rest);
	disarm(s->poll_timer);
	disarm(s->startup_timer);
	disarm(s->backoff_timer);
	disarm(s->kill_timer);
	disarm(s->deadline_timer);
	disarm(s->savepoint_timer);
	disarm(s->savepoint_poll_timer);
	sd_event_unref(s->event);
	status_free(&s->status);
	strv_free(&s->failed_restore_points);
	strv_free(&s->reported_skips);
	free(s->restore_path);
	free(s->savepoint_request);
	free(s->last_written);
	free(s->state_dir);
	free(s->conf_dir);
	free(s->tmp_dir);
	free(s->lib_dir);
	free(s->ckpt_dir);
	free(s->sp_dir);
	free(s->flink_version);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
}

int supervisor_run(struct spec *spec, const struct run_options *opts)
{
	struct supervisor s = {.spec = spec, .opts = opts, .lock_fd = -1, .state = SUP_STARTING};
	status_init(&s.status);
	const char *level = spec_get(spec, "flinklet.log.level");
	if (level && !strcmp(level, "debug"))
		log_set_level(LOG_LEVEL_DEBUG);
	else if (level && !strcmp(level, "warn"))
		log_set_level(LOG_LEVEL_WARN);
	else if (level && !strcmp(level, "error"))
		log_set_level(LOG_LEVEL_ERROR);

	int code = check_environment(&s);
	if (code == 0)
		code = open_state_dir(&s);
	if (code != 0) {
		sup_free(&s);
		return code;
	}
	int r = become_subreaper();
	if (r < 0)
		log_warn("unable to become a child subreaper: %s", strerror(-r));
	r = setup_loop(&s);
	if (r < 0) {
		log_fatal("unable to set up the event loop: %s", strerror(-r));
		sup_free(&s);
		return 3;
	}
	sup_event(&s, "SupervisorStarted", "flinklet %s (pid %d%s) supervising %s in %s", FLINKLET_VERSION,
	          (int)getpid(), getpid() == 1 ? ", PID 1" : ", subreaper", spec->name, s.state_dir);
	if (s.fresh_start)
		sup_event(&s, "StatelessStart", "upgradeMode stateless after a stop: starting empty as job %s",
		          s.job_id);

	if (s.status.job_state && !strcmp(s.status.job_state, "FINISHED")) {
		/* a finished job is never run again by a restart of the supervisor */
		s.state = SUP_FINISHED;
		s.status.lifecycle = LIFECYCLE_STABLE;
		sup_event(&s, "JobAlreadyFinished", "job %s FINISHED earlier; not starting it again", s.job_id);
		sup_write_status(&s);
		if (opts->exit_on_finish) {
			sup_free(&s);
			return 0;
		}
	} else {
		s.status.lifecycle = LIFECYCLE_DEPLOYED;
		status_set_string(&s.status.error, NULL);
		r = sup_launch(&s);
		if (r < 0) {
			status_set_string(&s.status.error, "unable to start the JVM");
			s.status.lifecycle = LIFECYCLE_FAILED;
			sup_write_status(&s);
			sup_free(&s);
			return 3;
		}
	}
	r = sd_event_loop(s.event);
	if (r < 0)
		log_error("event loop failed: %s", strerror(-r));
	code = s.exit_code;
	sup_free(&s);
	return code;
}

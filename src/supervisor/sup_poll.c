/* sup_poll: following the job through Flink's REST API, one request chain per poll interval: the job's
 * details (state, tasks), its checkpoint statistics, the cluster overview, and with the operator's health
 * check on, the restart count. Feeds EV_JOB_RUNNING and EV_UNHEALTHY to the lifecycle table. Until the job
 * is RUNNING the polls ask only GET /jobs/overview (not cached by Flink, unlike GET /jobs/:id), every
 * flinklet.rest.startup-poll-interval, with short request timeouts, and a
 * chain still in flight does not hold the next one back (up to POLL_CHAINS_MAX at once, src/supervisor/pollchain.h).
 * Answers of a chain that a newer one overtook, or of an earlier JVM (launch generation), are not used. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobfailure.h"
#include "sup_flinkmetrics.h"
#include "sup_poll.h"
#include "sup_rescales.h"
#include "sup_snapshot.h"

/* A count or id from Flink's answer: -1 when it is not a sane non-negative integer. */
static int64_t count_of(const cJSON *j)
{
	return cJSON_IsNumber(j) ? double_to_i64(j->valuedouble, 0, INT64_C(1) << 53, -1) : -1;
}

/* The chain's answers may still be used: the JVM it asked runs, and no newer chain overtook it. */
static bool chain_current(struct supervisor *s, struct poll_chain *c)
{
	return s->launch.jvm_pid > 0 && poll_chain_current(&s->poll.chains, c, s->launch.gen);
}

static bool same_launch(struct supervisor *s, struct poll_chain *c)
{
	return s->launch.jvm_pid > 0 && c->gen == s->launch.gen;
}

static void chain_end(struct supervisor *s, struct poll_chain *c)
{
	poll_chain_end(&s->poll.chains, c);
}

/* The chain's next request; a request that cannot be sent ends it. */
static void chain_next(struct supervisor *s, struct poll_chain *c, const char *path, rest_cb cb)
{
	if (rest_request_within(s->rest, "GET", path, NULL, c->timeout, cb, c) < 0)
		chain_end(s, c);
}

/* What a request of a chain of this JVM came to, for the timeouts of the next ones. */
static void chain_outcome(struct supervisor *s, struct poll_chain *c, long code, const char *error)
{
	if (same_launch(s, c))
		poll_request_outcome(&s->poll.chains, !code && rest_error_is_timeout(error), code != 0);
}

/* Until the job is RUNNING (and while a stop waits for RUNNING to take its savepoint), a JVM is polled often. */
static bool polled_for_startup(const struct supervisor *s)
{
	return s->launch.jvm_pid > 0 && (s->state == SUP_STARTING || s->state == SUP_STOP_PENDING);
}

static void health_unhealthy(struct supervisor *s, const char *why)
{
	if (s->state != SUP_RUNNING)
		return;
	sup_alert(s, "JobUnhealthy", "restarting unhealthy job: %s", why);
	sup_error_set(s, STATUS_ERR_JOB, why);
	sup_raise(s, EV_UNHEALTHY);
}

static bool job_state_terminal(const char *st)
{
	return st && (!strcmp(st, "FINISHED") || !strcmp(st, "FAILED") || !strcmp(st, "CANCELED"));
}

/* The job failed and Flink fails it over, restarts it or gave up (its exception history says why): the job's state
 * says so (FAILING, RESTARTING, FAILED: a global failover, the adaptive scheduler's restart), or subtasks failed or
 * are cancelled while the job stays RUNNING (the default scheduler's region failover keeps the job's state). The
 * task counts by state: the overview's lowercase keys, or a vertex's uppercase ones. */
static bool job_failing(const char *st, const cJSON *tasks, bool upper)
{
	if (st && (!strcmp(st, "FAILING") || !strcmp(st, "RESTARTING") || !strcmp(st, "FAILED")))
		return true;
	static const char *const keys[][2] = {
	    {"failed", "FAILED"}, {"canceling", "CANCELING"}, {"canceled", "CANCELED"}};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (count_of(cJSON_GetObjectItemCaseSensitive(tasks, keys[i][upper])) > 0)
			return true;
	return false;
}

/* The job's end: Flink says FAILED, or its JVM ended with the CLI's failure code. Said once per JVM, with the root
 * cause, in a JobFailed event and the status error. */
static void say_failed(struct supervisor *s, const char *cause)
{
	if (s->poll.failed_said)
		return;
	s->poll.failed_said = true;
	char *err = xasprintf("job %s FAILED: %s", s->job_id, cause ? cause : "Flink and the JVM named no cause");
	sup_error_set(s, STATUS_ERR_JOB, err);
	sup_alert(s, "JobFailed", "%s", err);
	free(err);
	sup_write_status(s);
}

/* What Flink's exception history said: a failure not seen before is said (JobFailover while Flink restarts the job,
 * JobFailed once it gave up). A failover's error is the least important of all (STATUS_ERR_FAILOVER): it does not
 * hide another one the status holds (the volume's, a demoted restore point's). */
static void note_failure(struct supervisor *s, const struct job_failure *f)
{
	bool fresh = !s->poll.failure || f->timestamp > s->poll.failure_ts;
	if (fresh) {
		s->poll.failure_ts = f->timestamp;
		status_set_string(&s->poll.failure, f->cause);
	}
	const char *st = s->status.job_state;
	if (st && !strcmp(st, "FAILED")) {
		say_failed(s, s->poll.failure);
		return;
	}
	if (!fresh)
		return;
	s->poll.restarted_at = sup_now(s);
	char *err = xasprintf("job %s failed, Flink restarts it: %s", s->job_id, f->cause);
	sup_warning(s, "JobFailover", "%s", err);
	sup_error_set(s, STATUS_ERR_FAILOVER, err);
	sup_write_status(s);
	free(err);
	sup_raise(s, EV_PROGRESS);
}

/* Every task runs again: a failover's error is over (a JobFailover event stays in the log). */
static void failover_over(struct supervisor *s)
{
	if (!sup_error(s, STATUS_ERR_FAILOVER))
		return;
	sup_error_clear(s, STATUS_ERR_FAILOVER);
	sup_write_status(s);
}

static void on_checkpoints(void *userdata, long code, cJSON *body, const char *error);

/* The rest of a poll once the job's details are taken: its checkpoints, then the overview and the restart count. A
 * terminal job ends its JVM by itself, and is never restarted by a health check; until the job runs, its details
 * are all that matters (the frequent startup polls ask nothing else): both end the chain. */
static void after_details(struct supervisor *s, struct poll_chain *c, const char *st)
{
	if (job_state_terminal(st) || !chain_current(s, c) || polled_for_startup(s)) {
		chain_end(s, c);
		return;
	}
	char *path = xasprintf("/jobs/%s/checkpoints", s->job_id);
	chain_next(s, c, path, on_checkpoints);
	free(path);
}

static void on_exceptions(void *userdata, long code, cJSON *body, const char *error)
{
	struct poll_chain *c = userdata;
	struct supervisor *s = c->owner;
	chain_outcome(s, c, code, error);
	struct job_failure f;
	bool failure = chain_current(s, c) && code == 200 && job_failure_parse(body, SUP_CAUSE_MAX, &f) == 0;
	after_details(s, c, s->status.job_state);
	if (failure) {
		note_failure(s, &f); /* last: a failover is a restart the trial judges (EV_PROGRESS) */
		job_failure_free(&f);
	}
}

/* The job fails: its newest exception is asked for as the chain's next request (one entry: a bounded answer, off
 * the loop like every poll). */
static void ask_exceptions(struct supervisor *s, struct poll_chain *c)
{
	char *path = xasprintf("/jobs/%s/exceptions?maxExceptions=1", s->job_id);
	chain_next(s, c, path, on_exceptions);
	free(path);
}

void sup_poll_new_job(struct supervisor *s)
{
	s->status.start_time_ms = 0;
	snapshot_ref_free(&s->status.last_checkpoint);
	s->status.state_size = -1;
}

void sup_poll_tasks_none(struct supervisor *s)
{
	s->status.tasks_total = s->status.tasks_running = s->status.tasks_finished = 0;
}

void sup_poll_no_task_runs(struct supervisor *s)
{
	s->status.tasks_running = 0;
}

void sup_poll_checkpoint_completed(struct supervisor *s, const char *location, int64_t id, int64_t time_ms)
{
	snapshot_ref_set(&s->status.last_checkpoint, location, id, time_ms, NULL);
}

void sup_poll_jvm_exited(struct supervisor *s, int exit_code, int exit_signal)
{
	/* no task runs without its JVM; what Flink said last of the job stays */
	sup_poll_no_task_runs(s);
	sup_write_status(s);
	/* the CLI ends with 1 when the job FAILED (or was cancelled): while the job ran, or once Flink said it failed
	 */
	if (exit_signal >= 0 || exit_code != 1 ||
	    !(s->state == SUP_RUNNING || (s->state == SUP_STARTING && s->poll.failure)))
		return;
	const char *cause = s->poll.failure ? s->poll.failure : s->launch.exit_cause;
	const char *st = s->status.job_state;
	if ((st && (!strcmp(st, "CANCELED") || !strcmp(st, "CANCELLING"))) ||
	    (cause && strstr(cause, "JobCancellationException")))
		return;
	say_failed(s, cause);
}

/* The health check's restart count: value (Flink's restarts of the job so far) sampled over the window; why the
 * job restarts too often (malloc'd), or NULL. */
static char *restarts_check(struct supervisor *s, int64_t value)
{
	usec_t now = sup_now(s),
	       window = spec_duration(s->spec, "kubernetes.operator.cluster.health-check.restarts.window");
	/* drop samples older than the window, keep the rest, append this one */
	unsigned keep = 0;
	for (unsigned i = 0; i < s->poll.n_restart_samples; i++)
		if (now - s->poll.restart_samples[i].t <= window)
			s->poll.restart_samples[keep++] = s->poll.restart_samples[i];
	s->poll.n_restart_samples = keep;
	if (s->poll.n_restart_samples == RESTART_SAMPLES) {
		memmove(s->poll.restart_samples, s->poll.restart_samples + 1,
		        sizeof(s->poll.restart_samples[0]) * (RESTART_SAMPLES - 1));
		s->poll.n_restart_samples--;
	}
	s->poll.restart_samples[s->poll.n_restart_samples].t = now;
	s->poll.restart_samples[s->poll.n_restart_samples++].v = value;
	int64_t delta = value - s->poll.restart_samples[0].v;
	int64_t threshold = spec_int(s->spec, "kubernetes.operator.cluster.health-check.restarts.threshold");
	if (delta <= threshold)
		return NULL;
	return xasprintf("%lld restarts within %s (threshold %lld)", (long long)delta,
	                 spec_get(s->spec, "kubernetes.operator.cluster.health-check.restarts.window"),
	                 (long long)threshold);
}

static void on_restart_metric(void *userdata, long code, cJSON *body, const char *error)
{
	struct poll_chain *c = userdata;
	struct supervisor *s = c->owner;
	chain_outcome(s, c, code, error);
	bool current = chain_current(s, c);
	chain_end(s, c);
	if (!current || code != 200 || !cJSON_IsArray(body))
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
	bool restarted = value > s->poll.jvm_restarts;
	if (restarted) {
		s->poll.jvm_restarts = value;
		s->poll.restarted_at = sup_now(s);
	}
	/* asked for an upgraded spec's trial only when the health check is off */
	char *why =
	    spec_bool(s->spec, "kubernetes.operator.cluster.health-check.enabled") ? restarts_check(s, value) : NULL;
	/* the restart is judged first (the trial), then the health check's verdict, each against the state the one
	 * before it left */
	if (restarted)
		sup_raise(s, EV_PROGRESS);
	if (why) {
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

/* A job that completes no checkpoint within the progress window while it runs (checkpointing on) is said while it
 * runs, whether or not the health check restarts the JVM for it: a CheckpointsStalled warning, the status error and
 * flinklet_checkpoints_stalled; the next completed checkpoint clears them (CheckpointsResumed, progress_resumed). */
static void progress_check(struct supervisor *s)
{
	if (s->state != SUP_RUNNING || s->poll.progress_stalled ||
	    spec_duration(s->spec, "execution.checkpointing.interval") == 0)
		return;
	usec_t window = checkpoint_progress_window(s->spec);
	usec_t since =
	    s->poll.last_checkpoint_progress > s->stable_since ? s->poll.last_checkpoint_progress : s->stable_since;
	if (sup_now(s) - since <= window)
		return;
	s->poll.progress_stalled = true;
	const struct snapshot_ref *cp = &s->status.last_checkpoint, *sp = &s->status.last_savepoint;
	const char *point = cp->location ? cp->location : sp->location;
	char *msg = xasprintf("job %s has completed no checkpoint for %llu s while RUNNING (the progress window, "
	                      "kubernetes.operator.cluster.health-check.checkpoint-progress.window); %s%s",
	                      s->job_id, (unsigned long long)((sup_now(s) - since) / USEC_PER_SEC),
	                      point ? "a stop or a crash now goes back to "
	                            : "there is no restore point: a stop or a crash now starts the job "
	                              "with empty state",
	                      point ? point : "");
	sup_error_set(s, STATUS_ERR_PROGRESS, msg);
	sup_alert(s, "CheckpointsStalled", "%s", msg);
	sup_write_status(s);
	free(msg);
}

/* A checkpoint completed (or a new JVM starts its own window): a stall said is over. */
static void progress_resumed(struct supervisor *s, bool said)
{
	if (!s->poll.progress_stalled)
		return;
	s->poll.progress_stalled = false;
	sup_error_clear(s, STATUS_ERR_PROGRESS);
	if (said) {
		sup_event(s, "CheckpointsResumed", "job %s completes checkpoints again", s->job_id);
		sup_write_status(s);
	}
}

static void on_overview(void *userdata, long code, cJSON *body, const char *error)
{
	struct poll_chain *c = userdata;
	struct supervisor *s = c->owner;
	chain_outcome(s, c, code, error);
	if (!chain_current(s, c) || code != 200 || !body) {
		chain_end(s, c);
		return;
	}
	const cJSON *tms = cJSON_GetObjectItemCaseSensitive(body, "taskmanagers");
	const cJSON *slots = cJSON_GetObjectItemCaseSensitive(body, "slots-total");
	bool none =
	    (cJSON_IsNumber(tms) && tms->valuedouble == 0) || (cJSON_IsNumber(slots) && slots->valuedouble == 0);
	s->poll.zero_slot_polls = none ? s->poll.zero_slot_polls + 1 : 0;
	if (s->poll.zero_slot_polls >= 2) {
		chain_end(s, c);
		health_unhealthy(s, "the MiniCluster has no task manager or no slots left (a fatal TaskManager error)");
		return;
	}

	progress_check(s);
	bool enabled = spec_bool(s->spec, "kubernetes.operator.cluster.health-check.enabled");
	if (enabled && s->state == SUP_RUNNING &&
	    spec_bool(s->spec, "kubernetes.operator.cluster.health-check.checkpoint-progress.enabled") &&
	    spec_duration(s->spec, "execution.checkpointing.interval") > 0) {
		usec_t window = checkpoint_progress_window(s->spec);
		usec_t since = s->poll.last_checkpoint_progress > s->stable_since ? s->poll.last_checkpoint_progress
		                                                                  : s->stable_since;
		if (sup_now(s) - since > window) {
			char *why = xasprintf("no checkpoint completed within %llu s",
			                      (unsigned long long)(window / USEC_PER_SEC));
			chain_end(s, c);
			health_unhealthy(s, why);
			free(why);
			return;
		}
	}
	if ((enabled || s->reload.trial.on) && s->state == SUP_RUNNING) {
		char *path = xasprintf("/jobs/%s/metrics?get=numRestarts,fullRestarts", s->job_id);
		chain_next(s, c, path, on_restart_metric);
		free(path);
		return;
	}
	chain_end(s, c);
}

/* What the stop's estimate needs (src/supervisor/stopfit.h): the newest checkpoint's full state size and
 * duration, and a savepoint's throughput (kept once seen: a later JVM's Flink does not report it). */
static void record_sizes(struct supervisor *s, const cJSON *completed, const cJSON *savepoint)
{
	int64_t size = count_of(cJSON_GetObjectItemCaseSensitive(completed, "state_size"));
	int64_t ms = count_of(cJSON_GetObjectItemCaseSensitive(completed, "end_to_end_duration"));
	if (size >= 0 && ms >= 0) {
		s->poll.sizes_known = true;
		s->poll.state_bytes = size;
		s->status.state_size = size;
		s->poll.checkpoint_ms = ms;
	}
	int64_t sp_size = count_of(cJSON_GetObjectItemCaseSensitive(savepoint, "state_size"));
	int64_t sp_ms = count_of(cJSON_GetObjectItemCaseSensitive(savepoint, "end_to_end_duration"));
	if (sp_size > (1 << 20) && sp_ms > 0) /* a tiny one says more about the fixed cost than the throughput */
		s->poll.savepoint_bytes_per_sec = (double)sp_size * 1000.0 / (double)sp_ms;
}

static void on_checkpoints(void *userdata, long code, cJSON *body, const char *error)
{
	struct poll_chain *c = userdata;
	struct supervisor *s = c->owner;
	chain_outcome(s, c, code, error);
	if (!chain_current(s, c)) {
		chain_end(s, c);
		return;
	}
	bool progressed = false;
	if (code == 200 && body) {
		const cJSON *counts = cJSON_GetObjectItemCaseSensitive(body, "counts");
		const cJSON *completed_n = cJSON_GetObjectItemCaseSensitive(counts, "completed");
		const cJSON *failed_n = cJSON_GetObjectItemCaseSensitive(counts, "failed");
		int64_t completed_count = count_of(completed_n), failed_count = count_of(failed_n);
		if (completed_count >= 0)
			s->poll.flink_completed = completed_count;
		if (failed_count >= 0)
			s->poll.flink_failed = failed_count;
		if (completed_count >= 0 && completed_count != s->poll.completed_checkpoints) {
			s->poll.completed_checkpoints = completed_count;
			s->poll.last_checkpoint_progress = sup_now(s);
			progress_resumed(s, true);
			if (completed_count > 0) {
				s->poll.checkpoint_completed_at = sup_now(s);
				progressed = true;
			}
		}
		const cJSON *latest = cJSON_GetObjectItemCaseSensitive(body, "latest");
		const cJSON *completed = cJSON_GetObjectItemCaseSensitive(latest, "completed");
		record_sizes(s, completed, cJSON_GetObjectItemCaseSensitive(latest, "savepoint"));
		if (cJSON_IsObject(completed)) {
			const cJSON *path = cJSON_GetObjectItemCaseSensitive(completed, "external_path");
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(completed, "id");
			const cJSON *ts = cJSON_GetObjectItemCaseSensitive(completed, "latest_ack_timestamp");
			const cJSON *sp = cJSON_GetObjectItemCaseSensitive(completed, "is_savepoint");
			if (cJSON_IsString(path) && count_of(id) >= 0 && !cJSON_IsTrue(sp) &&
			    count_of(id) != s->status.last_checkpoint.id) {
				sup_poll_checkpoint_completed(s, path->valuestring, count_of(id),
				                              count_of(ts) > 0 ? count_of(ts) : 0);
				log_info("checkpoint %lld completed: %s", (long long)count_of(id), path->valuestring);
			}
		}
		sup_write_status(s);
	}
	chain_next(s, c, "/overview", on_overview);
	if (progressed)
		sup_raise(s, EV_PROGRESS); /* once the answer is recorded: the trial judges the job as it now is */
}

static void record_vertices(struct supervisor *s, const cJSON *vertices)
{
	for (size_t i = 0; i < s->poll.vertices.n; i++)
		free(s->poll.vertices.v[i].name);
	free(s->poll.vertices.v);
	s->poll.vertices.v = NULL;
	s->poll.vertices.n = 0;
	int n = cJSON_GetArraySize(vertices);
	if (n <= 0)
		return;
	s->poll.vertices.v = xcalloc((size_t)n, sizeof(*s->poll.vertices.v));
	const cJSON *v;
	cJSON_ArrayForEach (v, vertices) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name");
		const cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parallelism");
		const cJSON *maxp = cJSON_GetObjectItemCaseSensitive(v, "maxParallelism");
		if (!cJSON_IsString(id) || strlen(id->valuestring) != 32)
			continue;
		struct vertex_info *vi = &s->poll.vertices.v[s->poll.vertices.n++];
		memcpy(vi->id, id->valuestring, 33);
		vi->name = xstrdup(cJSON_IsString(name) ? name->valuestring : "");
		vi->parallelism = (int)double_to_i64(cJSON_IsNumber(par) ? par->valuedouble : 0, 0, 1 << 20, 0);
		vi->max_parallelism = (int)double_to_i64(cJSON_IsNumber(maxp) ? maxp->valuedouble : 0, 0, 1 << 20, 0);
	}
}

/* Says what Flink's REST API answered when it was not a job's details, once per distinct problem. A refused
 * connection while the JVM starts is expected (its REST server is not up yet) and only logged at debug; a
 * request that ran out of its short startup timeout is said at info, once. */
static void report_rest_problem(struct supervisor *s, struct poll_chain *c, const char *path, long code,
                                const char *error)
{
	if (code == 404)
		return; /* the job is not submitted yet */
	bool timed_out = !code && rest_error_is_timeout(error);
	/* a timeout is one problem whatever its length (the startup timeouts change) */
	char *what = code ? xasprintf("GET %s answered %ld%s%s", path, code, error ? ": " : "", error ? error : "")
	             : timed_out ? xasprintf("GET %s: timed out", path)
	                         : xasprintf("GET %s: %s", path, error ? error : "no answer");
	bool refused = !code && error &&
	               (strstr(error, "Connection refused") || strstr(error, "Couldn't connect") ||
	                strstr(error, "Failed to connect"));
	if (s->poll.last_rest_problem && !strcmp(s->poll.last_rest_problem, what)) {
		free(what);
		return;
	}
	status_set_string(&s->poll.last_rest_problem, what);
	bool starting = s->state == SUP_STARTING || s->state == SUP_STOP_PENDING;
	if (refused && starting)
		log_debug("Flink REST not reachable yet: %s", what);
	else if (timed_out && starting && s->poll.chains.told_slow)
		log_debug("Flink's REST API is still coming up: %s", what); /* said once per launch */
	else if (timed_out && starting) {
		s->poll.chains.told_slow = true;
		log_info("Flink's REST API is still coming up: %s (after %llu ms); the next polls go out regardless",
		         what, (unsigned long long)(c->timeout / USEC_PER_MSEC));
	} else if (timed_out)
		log_warn("Flink's REST API: %s (after %llu ms)", what,
		         (unsigned long long)(c->timeout / USEC_PER_MSEC));
	else
		log_warn("Flink's REST API: %s", what);
	free(what);
}

/* While the job starts, its state and task counts come from GET /jobs/overview: Flink computes that answer
 * afresh on every request (JobsOverviewHandler asks the dispatcher), whereas GET /jobs/:id is served from a
 * copy of the ExecutionGraph kept for web.refresh-interval (3 s by default), which would show a RUNNING job
 * up to 3 s late. The overview lists every job of the MiniCluster; ours is the one with our id (a finished
 * earlier run of the same id, if Flink still lists it, only counts when no live one is there). */
static const cJSON *our_job_in_overview(const struct supervisor *s, const cJSON *body)
{
	const cJSON *j, *found = NULL;
	cJSON_ArrayForEach (j, cJSON_GetObjectItemCaseSensitive(body, "jobs")) {
		const cJSON *jid = cJSON_GetObjectItemCaseSensitive(j, "jid");
		if (!cJSON_IsString(jid) || strcmp(jid->valuestring, s->job_id))
			continue;
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state");
		bool terminal = cJSON_IsString(st) && job_state_terminal(st->valuestring);
		if (!found || !terminal)
			found = j;
		if (!terminal)
			break;
	}
	return found;
}

/* The first steps of a job-state answer: what the request came to, a sign of life of this JVM's REST API
 * (even an overtaken answer says it is not hung: no poll stands unanswered), and a failed request said. False: the
 * chain is ended. */
static bool job_answer(struct supervisor *s, struct poll_chain *c, long code, const cJSON *body, const char *error,
                       const char *path)
{
	chain_outcome(s, c, code, error);
	if (code != 0 && same_launch(s, c)) {
		s->poll.last_rest_ok = sup_now(s);
		s->poll.unanswered = 0;
	}
	if (chain_current(s, c) && code == 200 && body)
		return true;
	if (chain_current(s, c))
		report_rest_problem(s, c, path, code, error);
	chain_end(s, c);
	return false;
}

/* The answer is the newest one about the job: it is used, and no problem stands. False: the chain is ended. */
static bool take_job_answer(struct supervisor *s, struct poll_chain *c)
{
	if (!poll_chain_take_details(&s->poll.chains, c, s->launch.gen)) {
		chain_end(s, c);
		return false;
	}
	status_set_string(&s->poll.last_rest_problem, NULL);
	return true;
}

/* Flink's state of the job and its start time, into the status. Returns the state (NULL: none). */
static const char *record_job_state(struct supervisor *s, const cJSON *job)
{
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(job, "state");
	const cJSON *start = cJSON_GetObjectItemCaseSensitive(job, "start-time");
	const char *st = cJSON_IsString(state) ? state->valuestring : NULL;
	if (sup_follows_job(s))
		sup_set_job_state(s, st);
	if (count_of(start) > 0)
		s->status.start_time_ms = count_of(start);
	return st;
}

/* RUNNING with every task running; a source subtask that got no split (or a bounded one) is FINISHED, not
 * missing. Counts that do not add up are not believed. */
static bool every_task_running(bool consistent, const char *st, int64_t total, int64_t running, int64_t finished)
{
	return consistent && st && !strcmp(st, "RUNNING") && running > 0 && running + finished == total;
}

static void on_jobs_overview(void *userdata, long code, cJSON *body, const char *error)
{
	struct poll_chain *c = userdata;
	struct supervisor *s = c->owner;
	if (!job_answer(s, c, code, body, error, "/jobs/overview"))
		return;
	const cJSON *job = our_job_in_overview(s, body);
	if (!job) { /* not submitted yet, as a 404 of /jobs/:id says */
		chain_end(s, c);
		return;
	}
	if (!take_job_answer(s, c))
		return;
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(job, "tasks");
	int64_t total = count_of(cJSON_GetObjectItemCaseSensitive(tasks, "total"));
	int64_t running = count_of(cJSON_GetObjectItemCaseSensitive(tasks, "running"));
	int64_t finished = count_of(cJSON_GetObjectItemCaseSensitive(tasks, "finished"));
	bool consistent =
	    total >= 1 && total <= (1 << 20) && running >= 0 && finished >= 0 && running + finished <= total;
	const char *st = record_job_state(s, job);
	if (consistent) {
		s->status.tasks_total = (int)total;
		s->status.tasks_running = (int)running;
		s->status.tasks_finished = (int)finished;
	}
	sup_write_status(s);
	if (job_failing(st, tasks, false)) {
		ask_exceptions(s, c);
		return;
	}
	chain_end(s, c);
	if (every_task_running(consistent, st, total, running, finished)) {
		failover_over(s);
		sup_raise(s, EV_JOB_RUNNING);
	}
}

static void on_job_details(void *userdata, long code, cJSON *body, const char *error)
{
	struct poll_chain *c = userdata;
	struct supervisor *s = c->owner;
	char *asked = xasprintf("/jobs/%s", s->job_id);
	bool answered = job_answer(s, c, code, body, error, asked);
	free(asked);
	if (!answered || !take_job_answer(s, c))
		return;
	int total = 0, running = 0, finished = 0;
	bool consistent = true, failing = false;
	const cJSON *v;
	cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive(body, "vertices")) {
		const cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parallelism");
		const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(v, "tasks");
		failing = failing || job_failing(NULL, tasks, true);
		const cJSON *run = cJSON_GetObjectItemCaseSensitive(tasks, "RUNNING");
		const cJSON *fin = cJSON_GetObjectItemCaseSensitive(tasks, "FINISHED");
		/* a vertex whose counts do not add up is not believed: no "every task running" from it */
		int64_t p = count_of(par), r = run ? count_of(run) : 0, f = fin ? count_of(fin) : 0;
		if (p < 1 || p > (1 << 20) || r < 0 || f < 0 || r + f > p) {
			consistent = false;
			continue;
		}
		total += (int)p;
		running += (int)r;
		finished += (int)f;
	}
	record_vertices(s, cJSON_GetObjectItemCaseSensitive(body, "vertices"));
	const char *st = record_job_state(s, body);
	s->status.tasks_total = total;
	s->status.tasks_running = running;
	s->status.tasks_finished = finished;
	sup_write_status(s);
	bool all_running = every_task_running(consistent, st, total, running, finished);
	if (all_running)
		failover_over(s);
	if ((failing || job_failing(st, NULL, true)) && chain_current(s, c))
		ask_exceptions(s, c);
	else
		after_details(s, c, st);
	if (all_running)
		sup_raise(s, EV_JOB_RUNNING);
}

usec_t sup_poll_interval(const struct supervisor *s)
{
	return spec_duration(s->spec, polled_for_startup(s) ? "flinklet.rest.startup-poll-interval"
	                                                    : "flinklet.rest.poll-interval");
}

int sup_poll_tick(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	usec_t interval = sup_poll_interval(s);
	sd_event_source_set_time(src, now_monotonic() + interval);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	sup_snapshot_check_volume(s);
	if (s->launch.jvm_pid <= 0 || !sup_follows_job(s))
		return 0;
	sup_snapshot_kick(s);
	sup_rescales_poll(s);
	sup_flinkmetrics_poll(s);
	/* hung: the polls of the whole window went out, while the supervisor ran to send them, and none was answered
	 * (the time the supervisor stood still sent none, and counts for nothing) */
	unsigned hang = poll_hang_polls(spec_duration(s->spec, "flinklet.health.rest-timeout"), interval);
	if (s->state == SUP_RUNNING && s->poll.last_rest_ok && s->poll.unanswered >= hang) {
		char *why = xasprintf("Flink's REST API has not answered %u polls in a row, one every %s (%s, "
		                      "flinklet.health.rest-timeout): a hung JVM",
		                      s->poll.unanswered, spec_get(s->spec, "flinklet.rest.poll-interval"),
		                      spec_get(s->spec, "flinklet.health.rest-timeout"));
		health_unhealthy(s, why);
		free(why);
		return 0;
	}
	bool startup = polled_for_startup(s);
	usec_t timeout = poll_request_timeout(&s->poll.chains, startup, interval,
	                                      spec_duration(s->spec, "kubernetes.operator.flink.client.timeout"));
	struct poll_chain *c = poll_chain_start(&s->poll.chains, s, s->launch.gen, timeout, now_monotonic());
	/* unanswered until an answer says otherwise; one that cannot go out (POLL_CHAINS_MAX still wait) too */
	s->poll.unanswered++;
	if (!c) {
		log_debug("%d polls of Flink's REST API still in flight: this one is skipped", POLL_CHAINS_MAX);
		return 0;
	}
	if (startup) {
		chain_next(s, c, "/jobs/overview", on_jobs_overview);
		return 0;
	}
	char *path = xasprintf("/jobs/%s", s->job_id);
	chain_next(s, c, path, on_job_details);
	free(path);
	return 0;
}

static void poll_at(struct supervisor *s, usec_t when)
{
	if (!s->poll.timer)
		return;
	int enabled = SD_EVENT_OFF;
	uint64_t due = 0;
	if (sd_event_source_get_enabled(s->poll.timer, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
	    sd_event_source_get_time(s->poll.timer, &due) >= 0 && due <= when)
		return; /* due sooner already */
	sd_event_source_set_time(s->poll.timer, when);
	sd_event_source_set_enabled(s->poll.timer, SD_EVENT_ONESHOT);
}

void sup_poll_now(struct supervisor *s)
{
	poll_at(s, now_monotonic());
}

void sup_poll_running(struct supervisor *s)
{
	sup_error_clear(s, STATUS_ERR_JOB);
	sup_error_clear(s, STATUS_ERR_FAILOVER);
}

void sup_poll_launched(struct supervisor *s)
{
	poll_chains_new_launch(&s->poll.chains);
	s->poll.last_rest_ok = 0;
	s->poll.unanswered = 0;
	s->poll.zero_slot_polls = 0;
	s->poll.n_restart_samples = 0;
	s->poll.last_checkpoint_progress = sup_now(s);
	s->poll.checkpoint_completed_at = s->poll.restarted_at = 0;
	s->poll.jvm_restarts = 0;
	progress_resumed(s, false);
	/* Flink's exception history is the new JVM's own */
	s->poll.failure_ts = 0;
	status_set_string(&s->poll.failure, NULL);
	s->poll.failed_said = false;
	/* (the state may not say STARTING yet: the launch is an action of the transition into it) */
	poll_at(s, now_monotonic() + spec_duration(s->spec, "flinklet.rest.startup-poll-interval"));
}

int sup_poll_setup(struct supervisor *s)
{
	/* on time to the millisecond: sd-event's default lets a timer slip by up to 250 ms, more than a startup poll
	 * interval */
	return sd_event_add_time(s->event, &s->poll.timer, CLOCK_MONOTONIC, now_monotonic() + USEC_PER_SEC,
	                         USEC_PER_MSEC, sup_poll_tick, s);
}

void sup_poll_free(struct supervisor *s)
{
	for (size_t i = 0; i < s->poll.vertices.n; i++)
		free(s->poll.vertices.v[i].name);
	free(s->poll.vertices.v);
	s->poll.vertices.v = NULL;
	s->poll.vertices.n = 0;
	free(s->poll.last_rest_problem);
	s->poll.last_rest_problem = NULL;
	status_set_string(&s->poll.failure, NULL);
	s->poll.timer = sup_disarm(s->poll.timer);
}

/* sup_snapshot: savepoints and checkpoints the supervisor takes: the stop-with-savepoint of a shutdown,
 * suspend or upgrade (found on disk when the REST server goes away with the finished job); savepoints and
 * checkpoints asked for by a trigger nonce, the periodic options or the API, one at a time and only while
 * the job is RUNNING; savepoint retention by the operator's history options; and the free space of the
 * volume. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <cjson/cJSON.h>

#include "jvm.h"
#include "store.h"
#include "sup_dispose.h"
#include "sup_snapshot.h"
#include "sup_stop_budget.h"

#define OP_POLL_INTERVAL (300 * USEC_PER_MSEC)

static const char *first_error(const cJSON *body, const char *fallback)
{
	const cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "errors"), 0);
	return cJSON_IsString(e0) ? e0->valuestring : fallback;
}

/* The first line of an asynchronous operation's failure cause ("failure-cause" or "failureCause"). */
static char *failure_of(const cJSON *op)
{
	const cJSON *cause = cJSON_GetObjectItemCaseSensitive(op, "failure-cause");
	if (!cause)
		cause = cJSON_GetObjectItemCaseSensitive(op, "failureCause");
	if (!cause)
		return NULL;
	const cJSON *trace = cJSON_GetObjectItemCaseSensitive(cause, "stack-trace");
	if (!cJSON_IsString(trace))
		trace = cJSON_GetObjectItemCaseSensitive(cause, "stackTrace");
	if (!cJSON_IsString(trace))
		return xstrdup("unknown cause");
	return xstrndup(trace->valuestring, strcspn(trace->valuestring, "\n"));
}

void sup_snapshot_record_savepoint(struct supervisor *s, const char *location, const char *trigger, const char *format)
{
	int64_t now_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
	struct snapshot_ref *last = &s->status.last_savepoint,
	                    *h = snapshot_history_push(s->status.savepoint_history, &s->status.n_savepoint_history,
	                                               SAVEPOINT_HISTORY_MAX);
	snapshot_ref_set(last, location, -1, now_ms, trigger);
	snapshot_ref_set(h, location, -1, now_ms, trigger);
	status_set_string(&last->format_type, format);
	status_set_string(&h->format_type, format);
	s->snapshot.savepoints++;
	sup_write_status(s);
	sup_event(s, "SavepointCompleted", "savepoint %s completed (%s, %s)", location, trigger,
	          format ? format : "format unknown");
	sup_snapshot_retention(s);
}

struct snapshot_ref sup_snapshot_claimed(struct supervisor *s, int h)
{
	struct snapshot_ref c = snapshot_history_take(s->status.savepoint_history, &s->status.n_savepoint_history, h);
	s->status.last_savepoint.claimed |= snapshot_same(s->status.last_savepoint.location, c.location);
	return c;
}

/* The format of a savepoint the running JVM takes: a stop's is restored by the current spec's backend. */
static const char *savepoint_format(struct supervisor *s, enum savepoint_use use)
{
	return spec_savepoint_format(s->spec, s->launch.backend, use);
}

/* ---- Flink's asynchronous operations ----
 * A savepoint, a checkpoint and a stop-with-savepoint go the same way: a POST answered with a request id, then
 * GET /jobs/<job>/<savepoints|checkpoints>/<request> every OP_POLL_INTERVAL until Flink says COMPLETED. */

enum op_answer { OP_IN_PROGRESS, OP_COMPLETED, OP_UNKNOWN };

/* Flink's answer to a status poll: COMPLETED (*op is its "operation": a location or a checkpointId, or a
 * failure-cause), unknown to Flink (404), or in progress (anything else, no answer included). */
static enum op_answer op_answer(long code, const cJSON *body, const cJSON **op)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "status"), "id");
	*op = cJSON_GetObjectItemCaseSensitive(body, "operation");
	if (code == 200 && cJSON_IsString(id) && !strcmp(id->valuestring, "COMPLETED"))
		return OP_COMPLETED;
	return code == 404 ? OP_UNKNOWN : OP_IN_PROGRESS;
}

/* The request id of a trigger's answer, or NULL when Flink did not take the request. */
static const char *op_request_id(long code, const cJSON *body)
{
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(body, "request-id");
	return (code == 200 || code == 202) && cJSON_IsString(rid) ? rid->valuestring : NULL;
}

/* Asks Flink how the operation of that request id goes; cb gets the answer. */
static void op_ask(struct supervisor *s, enum snapshot_op_kind kind, const char *request, rest_cb cb)
{
	char *path =
	    xasprintf("/jobs/%s/%s/%s", s->job_id, kind == SNAP_SAVEPOINT ? "savepoints" : "checkpoints", request);
	rest_request(s->rest, "GET", path, NULL, cb, s);
	free(path);
}

/* ---- stop-with-savepoint ---- */

static void on_stop_status(void *userdata, long code, cJSON *body, const char *error);

#define STOP_RETRY_DELAY (1 * USEC_PER_SEC)

static int on_stop_retry(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->snapshot.savepoint_poll_timer = sup_disarm(s->snapshot.savepoint_poll_timer);
	if (s->state != SUP_SAVEPOINTING || s->snapshot.savepoint_recorded)
		return 0;
	if (sup_snapshot_stop_with_savepoint(s, s->snapshot.stop_until) < 0) {
		sup_error_set(s, STATUS_ERR_STOP_SAVEPOINT, "unable to send the stop-with-savepoint request");
		sup_raise(s, EV_SAVEPOINT_FAILED);
	}
	return 0;
}

/* A stop-with-savepoint to shut down that Flink failed (a task that could not take part yet, say, right after a
 * restore): tried again while the shutdown budget still fits one more, rather than stop without a savepoint.
 * Returns whether it will be. A suspend's or an upgrade's failure has its own rule (last-state fallback). */
static bool retry_stop_savepoint(struct supervisor *s, const char *why)
{
	if (s->stop.purpose != STOP_EXIT || s->launch.jvm_pid <= 0)
		return false;
	usec_t now = now_monotonic(), need = STOP_RETRY_DELAY + 2 * USEC_PER_SEC, until = s->snapshot.stop_until;
	if (until <= now || until - now < need)
		return false;
	s->snapshot.savepoint_timer = sup_disarm(s->snapshot.savepoint_timer);
	sup_alert(s, "SavepointRetry", "%s; trying again in %.0f s (%.1f s of the shutdown budget left)", why,
	          (double)STOP_RETRY_DELAY / USEC_PER_SEC, (double)sup_stop_budget_left(s, now) / USEC_PER_SEC);
	sup_arm(s, &s->snapshot.savepoint_poll_timer, STOP_RETRY_DELAY, on_stop_retry);
	return true;
}

static int on_stop_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->snapshot.savepoint_poll_timer = sup_disarm(s->snapshot.savepoint_poll_timer);
	if (s->state == SUP_SAVEPOINTING && s->snapshot.savepoint_request)
		op_ask(s, SNAP_SAVEPOINT, s->snapshot.savepoint_request, on_stop_status);
	return 0;
}

/* The stop's savepoint on the volume (a file: URI, malloc'd) or NULL: the newest new one since the request, if its
 * id is above `above` (the newest checkpoint on the volume). */
static char *find_stop_savepoint(struct supervisor *s, int64_t above)
{
	char *found = savepoint_find_newest(s->sp_dir, s->job_id, &s->snapshot.savepoints_before, above);
	if (!found)
		return NULL;
	char *uri = file_uri_from_path(found);
	free(found);
	return uri;
}

/* The stop's savepoint is location, a savepoint of the job newer than every checkpoint when the stop was asked for.
 * A checkpoint Flink completed after it (its periodic trigger fires as the savepoint ends, and a task that has not
 * begun closing acks it: seen with PyFlink's jobs) holds the same state or later: it is the next start's restore
 * point, no rewind, and the Stopped event names it (sup_snapshot_checkpoint_after_stop_savepoint). */
static void stop_savepoint_taken(struct supervisor *s, const char *location)
{
	int64_t id = -1;
	char *why = NULL;
	if (savepoint_verify(location, s->sp_dir, s->job_id, -1, &id, &why) < 0)
		id = -1;
	free(why);
	s->snapshot.savepoint_recorded = true;
	s->snapshot.stop_savepoint_id = id;
	sup_snapshot_record_savepoint(s, location, "UPGRADE", s->snapshot.stop_format);
	int64_t newest = checkpoints_newest_id(s->ckpt_dir, s->job_id);
	if (id >= 0 && newest > id)
		log_info("checkpoint %lld completed after the stop's savepoint (checkpoint id %lld): the next start "
		         "restores that checkpoint, which holds the savepoint's state or later",
		         (long long)newest, (long long)id);
}

/* Flink says the stop-with-savepoint completed at location: the stop ends on it only when the volume holds it, a
 * savepoint of the job newer than every checkpoint there when the stop was asked for; else on the stop's
 * savepoint found on the volume, else on none (SavepointFailed: the newest checkpoint stays the restore point). */
static void stop_savepoint_reported(struct supervisor *s, const char *location)
{
	int64_t id = -1, above = s->snapshot.ckpt_before;
	char *why = NULL;
	if (savepoint_verify(location, s->sp_dir, s->job_id, above, &id, &why) == 0) {
		stop_savepoint_taken(s, location);
		sup_raise(s, EV_SAVEPOINT_DONE);
		return;
	}
	char *found = find_stop_savepoint(s, above);
	if (found) {
		log_warn("Flink reported the stop's savepoint at %s, but %s; the stop's savepoint is %s", location, why,
		         found);
		stop_savepoint_taken(s, found);
		free(found);
		free(why);
		sup_raise(s, EV_SAVEPOINT_DONE);
		return;
	}
	char *msg =
	    xasprintf("stop-with-savepoint reported completed at %s, but %s: job %s has no savepoint newer than "
	              "its checkpoints; the newest checkpoint stays the restore point",
	              location, why, s->job_id);
	s->snapshot.savepoint_failures++;
	sup_error_set(s, STATUS_ERR_STOP_SAVEPOINT, msg);
	sup_alert(s, "SavepointFailed", "%s", msg);
	free(msg);
	free(why);
	sup_raise(s, EV_SAVEPOINT_FAILED);
}

static void on_stop_status(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (s->state != SUP_SAVEPOINTING || s->snapshot.savepoint_recorded)
		return;
	const cJSON *op;
	/* unknown (404) too is asked again: the REST server goes away with the job the stop ends */
	if (op_answer(code, body, &op) == OP_COMPLETED) {
		const cJSON *loc = cJSON_GetObjectItemCaseSensitive(op, "location");
		if (cJSON_IsString(loc)) {
			stop_savepoint_reported(s, loc->valuestring);
			return;
		}
		char *first = failure_of(op);
		s->snapshot.savepoint_failures++;
		char *why = xasprintf("stop-with-savepoint failed: %s", first ? first : "unknown cause");
		if (retry_stop_savepoint(s, why)) {
			free(first);
			free(why);
			return;
		}
		sup_error_set(s, STATUS_ERR_STOP_SAVEPOINT, why);
		sup_alert(s, "SavepointFailed", "%s", why);
		free(first);
		free(why);
		sup_raise(s, EV_SAVEPOINT_FAILED);
		return;
	}
	/* in progress, or the REST server is going away with the finished job: ask again shortly */
	sup_arm(s, &s->snapshot.savepoint_poll_timer, OP_POLL_INTERVAL, on_stop_poll);
}

static void on_stop_triggered(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (s->state != SUP_SAVEPOINTING)
		return;
	const char *rid = op_request_id(code, body);
	if (rid) {
		free(s->snapshot.savepoint_request);
		s->snapshot.savepoint_request = xstrdup(rid);
		log_info("stop-with-savepoint triggered (request %s)", s->snapshot.savepoint_request);
		sup_arm(s, &s->snapshot.savepoint_poll_timer, OP_POLL_INTERVAL, on_stop_poll);
		return;
	}
	s->snapshot.savepoint_failures++;
	char *why = xasprintf("unable to trigger stop-with-savepoint: %s",
	                      first_error(body, error ? error : "no answer from Flink"));
	if (retry_stop_savepoint(s, why)) {
		free(why);
		return;
	}
	sup_error_set(s, STATUS_ERR_STOP_SAVEPOINT, why);
	sup_alert(s, "SavepointFailed", "%s", why);
	free(why);
	sup_raise(s, EV_SAVEPOINT_FAILED);
}

static int on_stop_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->snapshot.savepoint_timer = sup_disarm(s->snapshot.savepoint_timer);
	if (s->state != SUP_SAVEPOINTING || s->snapshot.savepoint_recorded)
		return 0;
	if (s->stop.purpose != STOP_EXIT) {
		/* a stop-with-savepoint in flight cannot be called off: its outcome decides (Flink fails it at
		 * execution.checkpointing.timeout at the latest); until then nothing else is done to the job */
		sup_alert(s, "SavepointSlow",
		          "the stop-with-savepoint has not completed within %s; waiting for Flink's answer",
		          spec_get(s->spec, "flinklet.snapshot.timeout"));
		return 0;
	}
	const char *why = "the savepoint on shutdown did not complete within the shutdown budget";
	sup_error_set(s, STATUS_ERR_STOP_SAVEPOINT, why);
	sup_alert(s, "SavepointFailed", "%s", why);
	sup_raise(s, EV_SAVEPOINT_FAILED);
	return 0;
}

/* The stop's intent is on the volume: the request now, if the stop it belongs to still waits for it (a second
 * SIGTERM, the budget or the JVM's end may have come meanwhile). */
static void on_stop_intent_durable(struct supervisor *s, uintptr_t gen)
{
	if (gen != s->snapshot.stop_sp_gen || s->state != SUP_SAVEPOINTING || s->launch.jvm_pid <= 0 ||
	    s->snapshot.savepoint_request)
		return;
	char *uri = file_uri_from_path(s->sp_dir);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "targetDirectory", uri);
	cJSON_AddBoolToObject(body, "drain", false);
	cJSON_AddStringToObject(body, "formatType", s->snapshot.stop_format);
	char *text = cJSON_PrintUnformatted(body);
	char *path = xasprintf("/jobs/%s/stop", s->job_id);
	int r = rest_request(s->rest, "POST", path, text, on_stop_triggered, s);
	free(path);
	free(text);
	free(uri);
	cJSON_Delete(body);
	if (r < 0) {
		const char *why = "unable to send the stop-with-savepoint request";
		sup_error_set(s, STATUS_ERR_STOP_SAVEPOINT, why);
		sup_alert(s, "SavepointFailed", "%s", why);
		sup_raise(s, EV_SAVEPOINT_FAILED);
	}
}

int sup_snapshot_stop_with_savepoint(struct supervisor *s, usec_t until)
{
	s->snapshot.stop_until = until;
	/* persist the intent, then act */
	/* what is there now is not the stop's savepoint, whatever the clock says later */
	strv_free(&s->snapshot.savepoints_before);
	savepoints_present(s->sp_dir, s->job_id, &s->snapshot.savepoints_before);
	s->snapshot.ckpt_before = checkpoints_newest_id(s->ckpt_dir, s->job_id);
	s->snapshot.stop_savepoint_id = -1;
	s->snapshot.savepoint_recorded = false;
	s->snapshot.stop_savepoint_sent = true;
	free(s->snapshot.savepoint_request);
	s->snapshot.savepoint_request = NULL;
	char *intent = xasprintf("stop the job with a savepoint to %s", stop_purpose_text(s->stop.purpose));
	sup_set_intent(s, intent);
	free(intent);
	s->snapshot.stop_format = savepoint_format(s, SAVEPOINT_STOP);
	sup_event(s, "SavepointTriggered", "upgradeMode savepoint: stopping job %s with a %s savepoint into %s (to %s)",
	          s->job_id, s->snapshot.stop_format, s->sp_dir, stop_purpose_text(s->stop.purpose));
	/* the intent is on the volume before the request goes out: sent from the flush's end, the loop goes on (a
	 * second SIGTERM meanwhile kills at once, and the request is not sent) */
	sup_after_sync(s, on_stop_intent_durable, ++s->snapshot.stop_sp_gen);
	usec_t now = now_monotonic();
	sup_arm(s, &s->snapshot.savepoint_timer, until > now ? until - now : 0, on_stop_timeout);
	return 0;
}

/* ---- savepoints and checkpoints while running ---- */

static void op_done(struct supervisor *s)
{
	s->snapshot.op.active = false;
	free(s->snapshot.op.request);
	s->snapshot.op.request = NULL;
	s->snapshot.op.poll = sup_disarm(s->snapshot.op.poll);
	s->snapshot.op.timeout = sup_disarm(s->snapshot.op.timeout);
	sup_snapshot_kick(s);
}

/* The count of periodic failures in a row of the running operation's kind, NULL when it is not a periodic one. */
static unsigned *periodic_row(struct supervisor *s)
{
	if (!s->snapshot.op.trigger || strcmp(s->snapshot.op.trigger, "PERIODIC"))
		return NULL;
	return &s->snapshot.periodic_failed_in_row[s->snapshot.op.kind == SNAP_SAVEPOINT ? 0 : 1];
}

/* A periodic one completed: failures in a row before it are over, and said so. */
static void periodic_completed(struct supervisor *s)
{
	unsigned *row = periodic_row(s);
	if (!row || !*row)
		return;
	const char *what = s->snapshot.op.kind == SNAP_SAVEPOINT ? "savepoint" : "checkpoint";
	sup_event(s, s->snapshot.op.kind == SNAP_SAVEPOINT ? "SavepointsRecovered" : "CheckpointsRecovered",
	          "a periodic %s completed after %u failed in a row", what, *row);
	*row = 0;
}

static void op_failed(struct supervisor *s, const char *why)
{
	const char *what = s->snapshot.op.kind == SNAP_SAVEPOINT ? "savepoint" : "checkpoint";
	if (s->snapshot.op.kind == SNAP_SAVEPOINT)
		s->snapshot.savepoint_failures++;
	else
		s->snapshot.checkpoint_failures++;
	char *msg = xasprintf("%s %s failed: %s", s->snapshot.op.trigger, what, why);
	sup_error_set(s, STATUS_ERR_SNAPSHOT, msg);
	unsigned *row = periodic_row(s);
	if (row && (*row)++ > 0)
		/* a periodic one that keeps failing is said once (the operator floods events: FLINK-40384); the status
		 * error carries the newest cause, the metrics count them, the last good one stays */
		log_warn("%s (%u periodic %ss failed in a row; said once, until one completes)", msg, *row, what);
	else
		sup_alert(s, s->snapshot.op.kind == SNAP_SAVEPOINT ? "SavepointFailed" : "CheckpointFailed", "%s", msg);
	free(msg);
	sup_write_status(s);
	op_done(s);
}

static void record_checkpoint(struct supervisor *s, int64_t id)
{
	struct status *st = &s->status;
	snapshot_ref_set(
	    snapshot_history_push(st->checkpoint_history, &st->n_checkpoint_history, CHECKPOINT_HISTORY_MAX), NULL, id,
	    (int64_t)(now_realtime() / USEC_PER_MSEC), s->snapshot.op.trigger);
	s->snapshot.checkpoints++;
	sup_write_status(s);
	sup_event(s, "CheckpointCompleted", "checkpoint %lld completed (%s)", (long long)id, s->snapshot.op.trigger);
}

static void on_op_status(void *userdata, long code, cJSON *body, const char *error);

static int on_op_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->snapshot.op.poll = sup_disarm(s->snapshot.op.poll);
	if (s->snapshot.op.active && s->snapshot.op.request)
		op_ask(s, s->snapshot.op.kind, s->snapshot.op.request, on_op_status);
	return 0;
}

static void on_op_status(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!s->snapshot.op.active)
		return;
	const cJSON *op;
	enum op_answer a = op_answer(code, body, &op);
	if (a == OP_COMPLETED) {
		char *failure = failure_of(op);
		if (failure) {
			op_failed(s, failure);
			free(failure);
			return;
		}
		periodic_completed(s);
		if (s->snapshot.op.kind == SNAP_SAVEPOINT) {
			const cJSON *loc = cJSON_GetObjectItemCaseSensitive(op, "location");
			if (cJSON_IsString(loc))
				sup_snapshot_record_savepoint(s, loc->valuestring, s->snapshot.op.trigger,
				                              s->snapshot.op.format);
		} else {
			const cJSON *cid = cJSON_GetObjectItemCaseSensitive(op, "checkpointId");
			if (cJSON_IsNumber(cid))
				record_checkpoint(s, (int64_t)cid->valuedouble);
		}
		op_done(s);
		return;
	}
	if (a == OP_UNKNOWN) {
		op_failed(s, "Flink no longer knows the request");
		return;
	}
	sup_arm(s, &s->snapshot.op.poll, OP_POLL_INTERVAL, on_op_poll);
}

static void on_op_triggered(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!s->snapshot.op.active)
		return;
	const char *rid = op_request_id(code, body);
	if (rid) {
		s->snapshot.op.request = xstrdup(rid);
		sup_arm(s, &s->snapshot.op.poll, OP_POLL_INTERVAL, on_op_poll);
		return;
	}
	op_failed(s, first_error(body, error ? error : "no answer from Flink"));
}

static int on_op_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->snapshot.op.timeout = sup_disarm(s->snapshot.op.timeout);
	if (s->snapshot.op.active)
		op_failed(s, "not completed within flinklet.snapshot.timeout");
	return 0;
}

static void op_start(struct supervisor *s, enum snapshot_op_kind kind, const char *trigger)
{
	s->snapshot.op.active = true;
	s->snapshot.op.kind = kind;
	s->snapshot.op.trigger = trigger;
	cJSON *body = cJSON_CreateObject();
	char *path;
	if (kind == SNAP_SAVEPOINT) {
		char *uri = file_uri_from_path(s->sp_dir);
		cJSON_AddStringToObject(body, "target-directory", uri);
		cJSON_AddBoolToObject(body, "cancel-job", false);
		s->snapshot.op.format = savepoint_format(s, SAVEPOINT_KEPT);
		cJSON_AddStringToObject(body, "formatType", s->snapshot.op.format);
		free(uri);
		path = xasprintf("/jobs/%s/savepoints", s->job_id);
	} else {
		cJSON_AddStringToObject(body, "checkpointType",
		                        spec_get(s->spec, "kubernetes.operator.checkpoint.type"));
		path = xasprintf("/jobs/%s/checkpoints", s->job_id);
	}
	if (kind == SNAP_SAVEPOINT)
		sup_event(s, "SavepointTriggered", "taking a %s %s savepoint of job %s", trigger, s->snapshot.op.format,
		          s->job_id);
	else
		sup_event(s, "CheckpointTriggered", "taking a %s checkpoint of job %s", trigger, s->job_id);
	char *text = cJSON_PrintUnformatted(body);
	int r = rest_request(s->rest, "POST", path, text, on_op_triggered, s);
	free(text);
	free(path);
	cJSON_Delete(body);
	sup_arm_deadline(s, &s->snapshot.op.timeout, spec_duration(s->spec, "flinklet.snapshot.timeout"),
	                 on_op_timeout);
	if (r < 0)
		op_failed(s, "unable to send the request");
}

void sup_snapshot_kick(struct supervisor *s)
{
	if (s->snapshot.op.active || s->state != SUP_RUNNING || s->launch.jvm_pid <= 0)
		return;
	if (s->snapshot.want_savepoint) {
		s->snapshot.want_savepoint = false;
		op_start(s, SNAP_SAVEPOINT, s->snapshot.want_savepoint_trigger);
	} else if (s->snapshot.want_checkpoint) {
		s->snapshot.want_checkpoint = false;
		op_start(s, SNAP_CHECKPOINT, s->snapshot.want_checkpoint_trigger);
	}
}

void sup_snapshot_request_savepoint(struct supervisor *s, const char *trigger)
{
	s->snapshot.want_savepoint = true;
	s->snapshot.want_savepoint_trigger = trigger;
	sup_snapshot_kick(s);
}

void sup_snapshot_request_checkpoint(struct supervisor *s, const char *trigger)
{
	s->snapshot.want_checkpoint = true;
	s->snapshot.want_checkpoint_trigger = trigger;
	sup_snapshot_kick(s);
}

void sup_snapshot_cancel(struct supervisor *s)
{
	if (!s->snapshot.op.active)
		return;
	/* the JVM went away under it: what was asked for is taken when the job runs again */
	if (s->snapshot.op.kind == SNAP_SAVEPOINT) {
		s->snapshot.want_savepoint = true;
		s->snapshot.want_savepoint_trigger = s->snapshot.op.trigger;
	} else {
		s->snapshot.want_checkpoint = true;
		s->snapshot.want_checkpoint_trigger = s->snapshot.op.trigger;
	}
	s->snapshot.op.active = false;
	free(s->snapshot.op.request);
	s->snapshot.op.request = NULL;
	s->snapshot.op.poll = sup_disarm(s->snapshot.op.poll);
	s->snapshot.op.timeout = sup_disarm(s->snapshot.op.timeout);
}

static int on_periodic_savepoint(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	sup_snapshot_request_savepoint(s, "PERIODIC");
	sup_snapshot_arm_periodic(s);
	return 0;
}

static int on_periodic_checkpoint(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	sup_snapshot_request_checkpoint(s, "PERIODIC");
	sup_snapshot_arm_periodic(s);
	return 0;
}

void sup_snapshot_arm_periodic(struct supervisor *s)
{
	usec_t sp = spec_duration(s->spec, "kubernetes.operator.periodic.savepoint.interval");
	usec_t cp = spec_duration(s->spec, "kubernetes.operator.periodic.checkpoint.interval");
	if (sp && !(s->snapshot.periodic_savepoint_timer &&
	            sd_event_source_get_enabled(s->snapshot.periodic_savepoint_timer, NULL) > 0))
		sup_arm(s, &s->snapshot.periodic_savepoint_timer, sp, on_periodic_savepoint);
	else if (!sp)
		s->snapshot.periodic_savepoint_timer = sup_disarm(s->snapshot.periodic_savepoint_timer);
	if (cp && !(s->snapshot.periodic_checkpoint_timer &&
	            sd_event_source_get_enabled(s->snapshot.periodic_checkpoint_timer, NULL) > 0))
		sup_arm(s, &s->snapshot.periodic_checkpoint_timer, cp, on_periodic_checkpoint);
	else if (!cp)
		s->snapshot.periodic_checkpoint_timer = sup_disarm(s->snapshot.periodic_checkpoint_timer);
}

void sup_snapshot_check_nonces(struct supervisor *s)
{
	struct status *st = &s->status;
	int64_t sp = s->spec->job.savepoint_trigger_nonce, cp = s->spec->job.checkpoint_trigger_nonce;
	bool changed = false;
	if (st->savepoint_trigger_nonce < 0 || st->checkpoint_trigger_nonce < 0) {
		/* the first start records the nonces; only a later change asks for a snapshot */
		st->savepoint_trigger_nonce = sp < 0 ? 0 : sp;
		st->checkpoint_trigger_nonce = cp < 0 ? 0 : cp;
		sup_write_status(s);
		return;
	}
	if (sp != st->savepoint_trigger_nonce) {
		st->savepoint_trigger_nonce = sp;
		sup_event(s, "SavepointRequested", "savepointTriggerNonce changed to %lld: taking a savepoint",
		          (long long)sp);
		sup_snapshot_request_savepoint(s, "MANUAL");
		changed = true;
	}
	if (cp != st->checkpoint_trigger_nonce) {
		st->checkpoint_trigger_nonce = cp;
		sup_event(s, "CheckpointRequested", "checkpointTriggerNonce changed to %lld: taking a checkpoint",
		          (long long)cp);
		sup_snapshot_request_checkpoint(s, "MANUAL");
		changed = true;
	}
	if (changed)
		sup_write_status(s);
}

/* ---- retention ---- */

/* The restore point the next launch would choose now. */
static char *newest_restore_point(struct supervisor *s)
{
	struct restore_scan scan = {.checkpoint_dir = s->ckpt_dir, .savepoint_dir = s->sp_dir, .job_id = s->job_id};
	struct restore_list list;
	char *best = NULL;
	if (restore_points_scan(&scan, &list) == 0 && list.n > 0)
		best = xstrdup(list.v[0].path);
	restore_list_free(&list);
	return best;
}

void sup_snapshot_retention(struct supervisor *s)
{
	if (!spec_bool(s->spec, "kubernetes.operator.savepoint.cleanup.enabled"))
		return;
	struct status *st = &s->status;
	int64_t max_count = spec_int(s->spec, "kubernetes.operator.savepoint.history.max.count");
	usec_t max_age = spec_duration(s->spec, "kubernetes.operator.savepoint.history.max.age");
	int64_t now_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
	char *restore = newest_restore_point(s);
	int keep = 0;
	for (int i = 0; i < st->n_savepoint_history; i++) {
		struct snapshot_ref *r = &st->savepoint_history[i];
		bool newest = i == st->n_savepoint_history - 1;
		bool too_many = st->n_savepoint_history - i > max_count;
		bool too_old = max_age && now_ms - r->time_ms > (int64_t)(max_age / USEC_PER_MSEC);
		bool protected = newest || snapshot_same(r->location, restore) ||
		                 snapshot_same(r->location, st->restored_location) ||
		                 snapshot_same(r->location, st->last_savepoint.location);
		if (!(too_many || too_old) || protected) {
			if (keep != i) {
				st->savepoint_history[keep] = *r;
				memset(r, 0, sizeof(*r));
			}
			keep++;
			continue;
		}
		/* only what flinklet wrote into its own savepoint directory is deleted */
		char *path = local_path_from_uri(r->location);
		char *dir = path ? path_dirname(path) : NULL;
		char *real_dir = dir ? realpath(dir, NULL) : NULL, *real_sp = realpath(s->sp_dir, NULL);
		if (real_dir && real_sp && !strcmp(real_dir, real_sp)) {
			sup_dispose_savepoint(s, r->location, path,
			                      too_many ? "beyond the history's max count"
			                               : "older than the history's max age");
		} else {
			sup_event(s, "SavepointForgotten",
			          "savepoint %s left the history; it is outside %s, so it is kept", r->location,
			          s->sp_dir);
		}
		free(path);
		free(dir);
		free(real_dir);
		free(real_sp);
		snapshot_ref_free(r);
	}
	st->n_savepoint_history = keep;
	free(restore);
	sup_write_status(s);
}

void sup_snapshot_check_volume(struct supervisor *s)
{
	int64_t min = spec_int(s->spec, "flinklet.volume.min-free-percent");
	struct statvfs v;
	if (min <= 0 || statvfs(s->state_dir, &v) < 0 || v.f_blocks == 0)
		return;
	double free_pct = 100.0 * (double)v.f_bavail / (double)v.f_blocks;
	if (free_pct < (double)min && !s->snapshot.volume_low) {
		s->snapshot.volume_low = true;
		char *why =
		    xasprintf("the state volume %s has %.1f%% free, below flinklet.volume.min-free-percent (%lld%%): "
		              "checkpoints and savepoints will soon fail",
		              s->state_dir, free_pct, (long long)min);
		sup_error_set(s, STATUS_ERR_VOLUME_SPACE, why);
		sup_alert(s, "VolumeLow", "%s", why);
		free(why);
		sup_write_status(s);
	} else if (free_pct >= (double)min + 1 && s->snapshot.volume_low) {
		s->snapshot.volume_low = false;
		sup_error_clear(s, STATUS_ERR_VOLUME_SPACE);
		sup_event(s, "VolumeOk", "the state volume has %.1f%% free again", free_pct);
		sup_write_status(s);
	}
}

void sup_snapshot_running(struct supervisor *s)
{
	sup_error_clear(s, STATUS_ERR_STOP_SAVEPOINT);
	sup_error_clear(s, STATUS_ERR_SNAPSHOT);
}

void sup_snapshot_new_jvm(struct supervisor *s)
{
	s->snapshot.stop_savepoint_sent = false;
}

void sup_snapshot_stop_timers_off(struct supervisor *s)
{
	s->snapshot.savepoint_timer = sup_disarm(s->snapshot.savepoint_timer);
	s->snapshot.savepoint_poll_timer = sup_disarm(s->snapshot.savepoint_poll_timer);
}

void sup_snapshot_stop_savepoint_done(struct supervisor *s)
{
	s->snapshot.savepoint_timer = sup_disarm(s->snapshot.savepoint_timer);
}

void sup_snapshot_forget_stop_savepoint(struct supervisor *s)
{
	s->snapshot.savepoint_recorded = false;
}

bool sup_snapshot_recover_stop_savepoint(struct supervisor *s)
{
	if (s->snapshot.savepoint_recorded)
		return true;
	char *found = find_stop_savepoint(s, s->snapshot.ckpt_before);
	if (!found)
		return false;
	stop_savepoint_taken(s, found);
	free(found);
	return true;
}

int64_t sup_snapshot_checkpoint_after_stop_savepoint(struct supervisor *s)
{
	if (!s->snapshot.savepoint_recorded || s->snapshot.stop_savepoint_id < 0)
		return -1;
	int64_t newest = checkpoints_newest_id(s->ckpt_dir, s->job_id);
	return newest > s->snapshot.stop_savepoint_id ? newest : -1;
}

void sup_snapshot_free(struct supervisor *s)
{
	sup_snapshot_cancel(s);
	s->snapshot.savepoint_timer = sup_disarm(s->snapshot.savepoint_timer);
	s->snapshot.savepoint_poll_timer = sup_disarm(s->snapshot.savepoint_poll_timer);
	s->snapshot.periodic_savepoint_timer = sup_disarm(s->snapshot.periodic_savepoint_timer);
	s->snapshot.periodic_checkpoint_timer = sup_disarm(s->snapshot.periodic_checkpoint_timer);
	strv_free(&s->snapshot.savepoints_before);
	free(s->snapshot.savepoint_request);
	s->snapshot.savepoint_request = NULL;
}

/* sup_stop: the stop part: stopping the JVM for a purpose (shut down, suspend, upgrade, roll back) with a
 * stop-with-savepoint when the upgrade mode asks for one, SIGTERM then SIGKILL after the grace period, the shutdown
 * budget (its deadline), the wait for RUNNING of a stop while STARTING, and what happens once the JVM is gone (exit
 * with its code, SUSPENDED, or a launch of the desired spec, which the driver does: a function here that returns
 * SUP_STARTING asks for it). The table's actions of the stop call in here (supervisor.c run_action). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "jvm.h"
#include "sup_keepjvm.h"
#include "sup_launch.h"
#include "sup_memtune.h"
#include "sup_poll.h"
#include "sup_reload.h"
#include "sup_snapshot.h"
#include "sup_stop.h"
#include "sup_stop_budget.h"
#include "stopfit.h"

static int on_kill_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->stop.kill_timer = sup_disarm(s->stop.kill_timer);
	if (s->launch.jvm_pid > 0) {
		log_warn("the JVM did not exit within %s; sending SIGKILL",
		         spec_get(s->spec, "flinklet.jvm.stop-grace-period"));
		s->stop.force_killed = true;
		jvm_signal(s->launch.jvm_pid, SIGKILL);
	}
	return 0;
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->stop.deadline_timer = sup_disarm(s->stop.deadline_timer);
	if ((s->state == SUP_SAVEPOINTING || s->state == SUP_STOP_PENDING) && !s->snapshot.savepoint_recorded &&
	    !s->stop.checkpoint_done) {
		/* the stop still waited for its savepoint or checkpoint (a budget of a few milliseconds): said like
		 * any stop that gets neither */
		char *why = xasprintf("the shutdown budget of %s ran out before job %s had a savepoint or a checkpoint "
		                      "to stop on; the newest checkpoint stays the restore point",
		                      sup_stop_budget_text(s), s->job_id);
		sup_error_set(s, STATUS_ERR_STOP, why);
		sup_alert(s, "SavepointFailed", "%s", why);
		free(why);
	} else {
		sup_alert(s, "ShutdownBudgetExhausted", "the shutdown budget of %s is exhausted",
		          sup_stop_budget_text(s));
	}
	sup_raise(s, EV_DEADLINE);
	return 0;
}

void sup_stop_arm_deadline(struct supervisor *s)
{
	if (!s->stop.deadline_timer) {
		usec_t budget = sup_stop_budget_total(s);
		s->stop.deadline = now_monotonic() + budget;
		sup_arm(s, &s->stop.deadline_timer, budget, on_deadline);
	}
}

static int on_stop_wait_over(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->stop.wait_timer = sup_disarm(s->stop.wait_timer);
	sup_raise(s, EV_STOP_WAIT_OVER);
	return 0;
}

/* How long a stop while STARTING waits for RUNNING: what the budget leaves once the JVM's grace period and
 * a few seconds for the savepoint are set aside, and at least a third of it. */
static usec_t stop_wait_share(struct supervisor *s)
{
	usec_t budget = sup_stop_budget_total(s);
	usec_t reserve = sup_stop_budget_exit_reserve(s) + 5 * USEC_PER_SEC;
	usec_t third = budget / 3;
	return budget > reserve && budget - reserve > third ? budget - reserve : third;
}

enum sup_state sup_stop_terminate(struct supervisor *s)
{
	if (s->stop.purpose == STOP_EXIT)
		sup_stop_arm_deadline(s);
	if (s->state == SUP_STOP_PENDING) {
		s->stop.wait_timer = sup_disarm(s->stop.wait_timer);
		const char *reason = s->current_event == EV_STARTUP_TIMEOUT ? "the startup timeout ran out"
		                     : s->current_event == EV_UNHEALTHY     ? "it was unhealthy"
		                     : s->current_event == EV_RESTORE_UNREADABLE
		                         ? "Flink cannot read its restore point"
		                         : "the share of the shutdown budget ran out";
		char *why =
		    xasprintf("job %s did not become RUNNING after the stop request (%s, after waiting up to %.1f "
		              "s): stopping without a savepoint; the newest checkpoint stays the restore point",
		              s->job_id, reason, (double)stop_wait_share(s) / USEC_PER_SEC);
		sup_error_set(s, STATUS_ERR_STOP, why);
		sup_alert(s, "SavepointSkipped", "%s", why);
		free(why);
	}
	if (s->launch.jvm_pid <= 0) {
		/* nothing runs yet (the jar is still being fetched, or the launch's intent is on its way to the
		 * volume): the launch is called off, never spawned afterwards, and the stop is done */
		if (sup_launch_cancel(s))
			sup_event(
			    s, "LaunchCancelled",
			    "the launch of job %s is called off before its JVM was started (its intent was still on "
			    "its way to the volume); %s stays the restore point",
			    s->job_id, s->status.restored_location ? s->status.restored_location : "empty state");
		return sup_stop_done(s);
	}
	char *intent = xasprintf("stop the JVM to %s; the newest checkpoint stays the restore point",
	                         stop_purpose_text(s->stop.purpose));
	sup_set_intent(s, intent);
	free(intent);
	sup_event(s, "Stopping", "stopping the JVM (pid %d) to %s: SIGTERM, SIGKILL after %s", (int)s->launch.jvm_pid,
	          stop_purpose_text(s->stop.purpose), spec_get(s->spec, "flinklet.jvm.stop-grace-period"));
	jvm_signal(s->launch.jvm_pid, SIGTERM);
	s->stop.exit_asked_at = now_monotonic();
	sup_arm(s, &s->stop.kill_timer, sup_stop_budget_grace_period(s), on_kill_timer);
	return SUP_STOPPING;
}

/* ---- a stop on the next checkpoint: no savepoint fits the budget (src/supervisor/stopfit.h) ---- */

static void checkpoint_wait_off(struct supervisor *s)
{
	s->stop.checkpoint_poll = sup_disarm(s->stop.checkpoint_poll);
	s->stop.checkpoint_timer = sup_disarm(s->stop.checkpoint_timer);
}

static int on_checkpoint_poll(sd_event_source *src, uint64_t usec, void *userdata);

static void checkpoint_poll_again(struct supervisor *s)
{
	sup_arm(s, &s->stop.checkpoint_poll, spec_duration(s->spec, "flinklet.rest.startup-poll-interval"),
	        on_checkpoint_poll);
}

static void on_stop_checkpoints(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	s->stop.checkpoint_asking = false;
	if (s->state != SUP_SAVEPOINTING || !s->stop.on_checkpoint || s->stop.checkpoint_done)
		return;
	const cJSON *latest = cJSON_GetObjectItemCaseSensitive(body, "latest");
	const cJSON *done = cJSON_GetObjectItemCaseSensitive(latest, "completed");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(done, "id");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(done, "external_path");
	bool answered = code == 200 && cJSON_IsObject(latest);
	int64_t newest = cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 9e15 &&
	                         !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(done, "is_savepoint"))
	                     ? (int64_t)id->valuedouble
	                     : -2;
	char *why = NULL;
	if (answered && newest > s->stop.checkpoint_baseline && cJSON_IsString(path) &&
	    checkpoint_verify(path->valuestring, s->ckpt_dir, s->job_id, newest, &why) < 0) {
		/* Flink's word is not the volume's: waited on for a real one until the share runs out */
		if (!s->stop.checkpoint_refused || strcmp(s->stop.checkpoint_refused, why))
			log_warn("Flink reports checkpoint %lld of job %s completed, but %s: not stopping on it",
			         (long long)newest, s->job_id, why);
		free(s->stop.checkpoint_refused);
		s->stop.checkpoint_refused = why;
	} else if (answered && newest > s->stop.checkpoint_baseline && cJSON_IsString(path)) {
		s->stop.checkpoint_done = true;
		s->stop.checkpoint_id = newest;
		checkpoint_wait_off(s);
		sup_poll_checkpoint_completed(s, path->valuestring, newest, (int64_t)(now_realtime() / USEC_PER_MSEC));
		sup_event(
		    s, "StopCheckpoint",
		    "checkpoint %lld of job %s completed %.1f s after the stop request: the JVM is stopped on it, and "
		    "it is the restore point (%s)",
		    (long long)newest, s->job_id, (double)(now_monotonic() - s->stop.requested_at) / USEC_PER_SEC,
		    path->valuestring);
		sup_raise(s, EV_STOP_CHECKPOINT);
		return;
	}
	(void)error;
	checkpoint_poll_again(s);
}

static int on_checkpoint_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->stop.checkpoint_poll = sup_disarm(s->stop.checkpoint_poll);
	if (s->state != SUP_SAVEPOINTING || !s->stop.on_checkpoint || s->stop.checkpoint_done)
		return 0;
	if (s->stop.checkpoint_asking) {
		checkpoint_poll_again(s);
		return 0;
	}
	char *path = xasprintf("/jobs/%s/checkpoints", s->job_id);
	s->stop.checkpoint_asking = rest_request(s->rest, "GET", path, NULL, on_stop_checkpoints, s) == 0;
	free(path);
	if (!s->stop.checkpoint_asking)
		checkpoint_poll_again(s);
	return 0;
}

static int on_checkpoint_share_over(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->stop.checkpoint_timer = sup_disarm(s->stop.checkpoint_timer);
	if (s->state != SUP_SAVEPOINTING || !s->stop.on_checkpoint || s->stop.checkpoint_done)
		return 0;
	checkpoint_wait_off(s);
	char *refused = s->stop.checkpoint_refused
	                    ? xasprintf(" (Flink reported one, but %s)", s->stop.checkpoint_refused)
	                    : xstrdup("");
	char *why = xasprintf("no checkpoint of job %s completed within %.1f s of the stop request%s: stopping the JVM "
	                      "without one; the newest checkpoint before the stop stays the restore point",
	                      s->job_id, (double)(now_monotonic() - s->stop.requested_at) / USEC_PER_SEC, refused);
	free(refused);
	sup_error_set(s, STATUS_ERR_STOP, why);
	sup_alert(s, "SavepointSkipped", "%s", why);
	free(why);
	sup_raise(s, EV_SAVEPOINT_FAILED);
	return 0;
}

/* When the stop's savepoint must be done (monotonic): a shutdown's once what is left of the budget less the JVM's
 * exit has passed (half of what is left when the exit needs all of it), a suspend's or an upgrade's after
 * flinklet.snapshot.timeout. A retry of the savepoint keeps the same end. */
static usec_t savepoint_until(struct supervisor *s)
{
	usec_t now = now_monotonic();
	if (s->stop.purpose != STOP_EXIT)
		return now + spec_duration(s->spec, "flinklet.snapshot.timeout");
	usec_t left = sup_stop_budget_left(s, now), reserve = sup_stop_budget_exit_reserve(s);
	return now + (left > reserve ? left - reserve : left / 2);
}

/* The snapshot a shutdown with upgradeMode savepoint ends on: the savepoint when it fits what the budget leaves
 * (less the JVM's exit), else the next periodic checkpoint. Returns the state to go to (SAVEPOINTING either way). */
static enum sup_state stop_snapshot(struct supervisor *s)
{
	usec_t left = sup_stop_budget_left(s, now_monotonic()), reserve = sup_stop_budget_exit_reserve(s);
	usec_t share = left > reserve ? left - reserve : 0;
	struct stopfit_in in = {
	    .state_bytes = s->poll.sizes_known ? s->poll.state_bytes : -1,
	    .checkpoint_ms = s->poll.sizes_known ? s->poll.checkpoint_ms : -1,
	    .sp_bytes_per_sec = s->poll.savepoint_bytes_per_sec,
	    .interval = spec_duration(s->spec, "execution.checkpointing.interval"),
	    .share = share,
	};
	struct stopfit fit;
	stopfit_decide(&in, &fit);
	s->stop.on_checkpoint = false;
	if (left == 0 && s->stop.purpose == STOP_EXIT) {
		/* flinklet.shutdown.timeout 0 s (or a stop that waited for RUNNING until nothing was left) */
		char *why =
		    xasprintf("the shutdown budget (flinklet.shutdown.timeout: %s) leaves no time for a savepoint "
		              "or a checkpoint: stopping job %s without one; the newest checkpoint stays the restore "
		              "point",
		              sup_stop_budget_text(s), s->job_id);
		sup_error_set(s, STATUS_ERR_STOP, why);
		sup_alert(s, "SavepointSkipped", "%s", why);
		free(why);
		return sup_stop_terminate(s);
	}
	if (fit.savepoint || s->stop.purpose != STOP_EXIT) {
		/* an upgrade of the job alone: the JVM stays for the upgraded job once the savepoint ended this one */
		if (s->stop.purpose == STOP_UPGRADE)
			sup_keepjvm_hold(s);
		if (sup_snapshot_stop_with_savepoint(s, savepoint_until(s)) < 0) {
			sup_error_set(s, STATUS_ERR_STOP, "unable to send the stop-with-savepoint request");
			return sup_stop_terminate(s);
		}
		return SUP_SAVEPOINTING;
	}
	s->stop.on_checkpoint = true;
	s->stop.checkpoint_done = false;
	free(s->stop.checkpoint_refused);
	s->stop.checkpoint_refused = NULL;
	/* the newest checkpoint flinklet knows of when the stop begins: one completed since is the stop's (one that
	 * completed just before the signal, not polled yet, is as fresh as a checkpoint interval allows) */
	s->stop.checkpoint_baseline = s->status.last_checkpoint.id;
	char *intent = xasprintf("wait for the next checkpoint of job %s, then stop the JVM on it", s->job_id);
	sup_set_intent(s, intent);
	free(intent);
	sup_event(
	    s, "StopOnCheckpoint",
	    "no savepoint fits the shutdown budget: %s; stopping job %s on its next checkpoint instead (it is the "
	    "restore point, no older than one checkpoint interval)",
	    fit.why, s->job_id);
	sup_arm(s, &s->stop.checkpoint_timer, share, on_checkpoint_share_over);
	/* the first look once the transition into SAVEPOINTING is complete (this runs as its action) */
	sup_arm(s, &s->stop.checkpoint_poll, 0, on_checkpoint_poll);
	return SUP_SAVEPOINTING;
}

/* Stops the JVM for the given purpose: with a savepoint when the upgrade mode asks for one and the job
 * is RUNNING; otherwise SIGTERM. */
enum sup_state sup_stop_start(struct supervisor *s, enum stop_purpose purpose)
{
	s->stop.purpose = purpose;
	sup_snapshot_cancel(s);
	if (purpose == STOP_EXIT)
		sup_stop_arm_deadline(s);
	enum upgrade_mode mode = s->spec->job.upgrade_mode;
	if (purpose == STOP_EXIT && s->state == SUP_RUNNING && s->status.job_state &&
	    !strcmp(s->status.job_state, "FINISHED")) {
		/* a bounded job that ended a moment ago, its JVM about to end by itself: no savepoint to take (Flink
		 * would refuse it), and the job stays FINISHED */
		s->stop.job_finished = true;
		log_info("job %s FINISHED before the stop: no savepoint to take; the JVM ends", s->job_id);
		return sup_stop_terminate(s);
	}
	if ((purpose == STOP_SUSPEND || purpose == STOP_UPGRADE) && mode == UPGRADE_STATELESS)
		sup_launch_next_fresh(s);
	if (sup_keepjvm_idle(s)) {
		/* the JVM runs no job (a job-only upgrade's, between its two jobs): the job meant for it is called off,
		 * and the JVM stopped; there is nothing to take a savepoint of (the upgrade's is the restore point) */
		sup_launch_cancel(s);
		return sup_stop_terminate(s);
	}
	const struct spec *running = s->launched ? s->launched : s->spec;
	if (mode == UPGRADE_LAST_STATE && purpose != STOP_ROLLBACK && s->state == SUP_RUNNING &&
	    spec_duration(running, "execution.checkpointing.interval") == 0) {
		/* last-state carries the state in checkpoints, and the running job takes none (FLINK-41283: the
		 * operator fails every reconcile then): a savepoint carries it instead, as with upgradeMode savepoint
		 */
		sup_event(s, "LastStateWithoutCheckpoints",
		          "upgradeMode last-state, but job %s takes no checkpoints (execution.checkpointing.interval "
		          "is 0): stopping it with a savepoint instead, which the next start restores",
		          s->job_id);
		return stop_snapshot(s);
	}
	if (mode != UPGRADE_SAVEPOINT || purpose == STOP_ROLLBACK)
		return sup_stop_terminate(s);
	if (s->state == SUP_STARTING && purpose == STOP_EXIT && s->launch.jvm_pid > 0) {
		/* Flink may have the job RUNNING already, or be about to: ask it now, and wait (inside the
		 * budget) to take the savepoint rather than stop without one */
		usec_t wait = stop_wait_share(s);
		char *intent = xasprintf("wait up to %.1f s for job %s to be RUNNING, then stop it with a savepoint",
		                         (double)wait / USEC_PER_SEC, s->job_id);
		sup_set_intent(s, intent);
		free(intent);
		sup_event(s, "StopPending",
		          "stop requested while job %s is starting: waiting up to %.1f s for it to be RUNNING to take "
		          "the savepoint",
		          s->job_id, (double)wait / USEC_PER_SEC);
		sup_arm(s, &s->stop.wait_timer, wait, on_stop_wait_over);
		sup_poll_now(s);
		return SUP_STOP_PENDING;
	}
	if (s->state != SUP_RUNNING) {
		sup_alert(
		    s, "SavepointSkipped",
		    "stop requested before the job was RUNNING: no savepoint; the newest checkpoint stays the restore "
		    "point");
		return sup_stop_terminate(s);
	}
	return stop_snapshot(s);
}

/* Whether the next start would begin empty: no checkpoint or savepoint of the job on the volume and no
 * initialSavepointPath (a restore point given up is already out of the scan: sup_restore_put_aside). */
static bool no_restore_point(struct supervisor *s)
{
	if (s->spec->job.initial_savepoint_path || checkpoints_newest_id(s->ckpt_dir, s->job_id) >= 0)
		return false;
	struct strv sps = {0};
	savepoints_present(s->sp_dir, s->job_id, &sps);
	bool none = sps.n == 0;
	strv_free(&sps);
	return none;
}

enum sup_state sup_stop_done(struct supervisor *s)
{
	s->stop.kill_timer = sup_disarm(s->stop.kill_timer);
	s->stop.wait_timer = sup_disarm(s->stop.wait_timer);
	checkpoint_wait_off(s);
	sup_snapshot_stop_timers_off(s);
	sup_set_intent(s, NULL);
	sup_poll_no_task_runs(s); /* the JVM is gone (or killed, with flinklet about to exit): no task runs */
	if (s->state == SUP_FINISHED || s->stop.job_finished) {
		s->stop.deadline_timer = sup_disarm(s->stop.deadline_timer);
		if (s->state != SUP_FINISHED)
			sup_launch_finished_record(s); /* (FINISHED was recorded with it) */
		sup_set_job_state(s, "FINISHED");
		sup_event(s, "Stopped", "stopped; job %s had FINISHED", s->job_id);
		sup_exit(s, 0);
		return SUP_STOPPED;
	}
	if (s->stop.purpose != STOP_EXIT) {
		/* the desired state decides: a resume or a new spec may have come in while stopping */
		if (s->spec->job.state == JOB_STATE_SUSPENDED) {
			sup_set_job_state(s, "SUSPENDED");
			sup_event(s, "Suspended", "job %s is suspended; %s", s->job_id,
			          s->snapshot.savepoint_recorded ? "it resumes from the savepoint just taken"
			                                         : "it resumes from the newest checkpoint");
			return SUP_SUSPENDED;
		}
		return SUP_STARTING; /* the driver launches the desired spec */
	}
	s->stop.deadline_timer = sup_disarm(s->stop.deadline_timer);
	sup_set_job_state(s, "SUSPENDED");
	if (!s->snapshot.savepoint_recorded && s->snapshot.stop_savepoint_sent)
		/* a second TERM (or the budget) cut the stop short, but Flink may have completed the savepoint
		 * before the JVM was killed: what is on disk decides, not what flinklet heard */
		sup_snapshot_recover_stop_savepoint(s);
	int64_t after = sup_snapshot_checkpoint_after_stop_savepoint(s);
	if (s->snapshot.savepoint_recorded && after >= 0)
		sup_event(
		    s, "Stopped",
		    "stopped with savepoint %s; Flink completed checkpoint %lld after it (the same state or later): "
		    "the next start restores from that checkpoint",
		    s->status.last_savepoint.location, (long long)after);
	else if (s->snapshot.savepoint_recorded)
		sup_event(s, "Stopped", "stopped; the next start restores from savepoint %s",
		          s->status.last_savepoint.location);
	else if (s->stop.checkpoint_done)
		sup_event(
		    s, "Stopped",
		    "stopped on checkpoint %lld (no savepoint fitted the shutdown budget); the next start restores "
		    "from it",
		    (long long)s->stop.checkpoint_id);
	else if (s->spec->job.upgrade_mode == UPGRADE_STATELESS)
		sup_event(s, "Stopped", "stopped; upgradeMode stateless: the next start begins empty");
	else if (no_restore_point(s))
		sup_alert(
		    s, "Stopped",
		    "stopped with no restore point: no checkpoint or savepoint of job %s is on the volume; the next "
		    "start begins with empty state",
		    s->job_id);
	else
		sup_event(s, "Stopped", "stopped; the newest retained checkpoint is the restore point");
	/* 0 only when the job stopped as asked: a savepoint when one was due, and no SIGKILL */
	int code = 0;
	if (s->stop.had_jvm && s->spec->job.upgrade_mode == UPGRADE_SAVEPOINT && !s->snapshot.savepoint_recorded &&
	    !s->stop.checkpoint_done) {
		code = SUP_EXIT_NO_SAVEPOINT;
		/* said already when the stop or its savepoint said why */
		if (!sup_error(s, STATUS_ERR_STOP) && !sup_error(s, STATUS_ERR_STOP_SAVEPOINT))
			sup_error_set(
			    s, STATUS_ERR_STOP,
			    no_restore_point(s)
			        ? "the stop took no savepoint and there is no checkpoint: the next start begins "
			          "with empty state"
			        : "the stop took no savepoint; the newest checkpoint stays the restore point");
		log_error("exiting with code %d: %s", code,
		          sup_error(s, STATUS_ERR_STOP) ? sup_error(s, STATUS_ERR_STOP)
		                                        : sup_error(s, STATUS_ERR_STOP_SAVEPOINT));
	} else if (s->stop.force_killed) {
		code = SUP_EXIT_KILLED;
		log_error("exiting with code %d: the JVM had to be killed", code);
	}
	sup_exit(s, code);
	return SUP_STOPPED;
}

enum sup_state sup_stop_savepoint_failed(struct supervisor *s)
{
	sup_snapshot_stop_timers_off(s);
	sup_keepjvm_release(s); /* the job runs on, or its JVM is stopped: no upgraded job follows in it */
	if ((s->stop.purpose == STOP_UPGRADE || s->stop.purpose == STOP_SUSPEND) &&
	    !spec_bool(s->spec, "kubernetes.operator.job.upgrade.last-state-fallback.enabled") &&
	    s->launch.jvm_pid > 0) {
		/* no silent fallback: the job keeps running on the spec it was launched with */
		sup_alert(s, "UpgradeAborted",
		          "the savepoint failed and kubernetes.operator.job.upgrade.last-state-fallback.enabled is "
		          "false: job "
		          "%s keeps running on its current spec; change the file or send SIGHUP to try again",
		          s->job_id);
		sup_adopt_spec(s, s->launched);
		sup_reload_upgrade_aborted(s);
		sup_memtune_upgrade_aborted(s);
		sup_set_intent(s, NULL);
		return SUP_RUNNING;
	}
	if (s->stop.purpose != STOP_EXIT)
		sup_alert(s, "UpgradeFallback",
		          "the savepoint failed: going on with last-state, from the newest checkpoint "
		          "(kubernetes.operator.job.upgrade.last-state-fallback.enabled)");
	return sup_stop_terminate(s);
}

enum sup_state sup_stop_kill_now(struct supervisor *s, enum sup_state next)
{
	log_warn("stopping at once: SIGKILL to the JVM");
	s->stop.purpose = STOP_EXIT;
	s->stop.wait_timer = sup_disarm(s->stop.wait_timer);
	checkpoint_wait_off(s);
	if (s->launch.jvm_pid > 0) {
		s->stop.force_killed = true;
		jvm_signal(s->launch.jvm_pid, SIGKILL);
	}
	if (next == SUP_STOPPED)
		return sup_stop_done(s);
	/* the budget is spent: give SIGKILL a moment, then exit whatever the JVM does */
	if (!s->stop.deadline_timer)
		sup_arm(s, &s->stop.deadline_timer, 2 * USEC_PER_SEC, on_deadline);
	return next;
}

void sup_stop_savepoint_recorded(struct supervisor *s)
{
	sup_snapshot_stop_savepoint_done(s);
	s->stop.exit_asked_at = now_monotonic();
	sup_set_intent(s, "wait for the JVM to end after the savepoint");
	sup_arm(s, &s->stop.kill_timer, sup_stop_budget_grace_period(s), on_kill_timer);
}

enum sup_state sup_stop_savepoint_ended(struct supervisor *s)
{
	/* the REST server went away with the finished job: the savepoint is on disk */
	if (!sup_snapshot_recover_stop_savepoint(s)) {
		const char *why = "the JVM ended before the stop-with-savepoint completed; the newest checkpoint stays "
		                  "the restore point";
		sup_error_set(s, STATUS_ERR_STOP, why);
		sup_alert(s, "SavepointFailed", "%s", why);
	}
	return sup_stop_done(s);
}

enum sup_state sup_stop_jvm_idle(struct supervisor *s)
{
	/* only an upgrade's stop to the upgraded spec (a suspend or a newer purpose since: the JVM is let go, and its
	 * exit ends the stop as any JVM's does) */
	if (s->stop.purpose != STOP_UPGRADE || s->spec->job.state == JOB_STATE_SUSPENDED || !sup_keepjvm_keep_idle(s)) {
		sup_keepjvm_release(s);
		return SUP_SAME;
	}
	s->stop.exit_asked_at = 0; /* (no JVM exit to time) */
	sup_snapshot_cancel(s);
	/* the savepoint as when the JVM ends with the job, then the upgraded spec's launch, which goes to this JVM */
	return sup_stop_savepoint_ended(s);
}

enum sup_state sup_stop_now_running(struct supervisor *s, enum sup_state next)
{
	s->stop.wait_timer = sup_disarm(s->stop.wait_timer);
	enum sup_state st = stop_snapshot(s);
	return st == SUP_SAVEPOINTING ? next : st;
}

bool sup_stop_requested(struct supervisor *s, enum sup_state before)
{
	enum stop_purpose was = s->stop.purpose;
	/* whatever the JVM was being stopped for before, it is now a shutdown */
	s->stop.purpose = STOP_EXIT;
	if (before != SUP_SAVEPOINTING)
		sup_snapshot_forget_stop_savepoint(s);
	if (!s->stop.requested_at)
		s->stop.had_jvm = s->launch.jvm_pid > 0 && !sup_keepjvm_idle(s) &&
		                  (before == SUP_STARTING || before == SUP_RUNNING || before == SUP_SAVEPOINTING);
	/* a JVM held for a job-only upgrade exits once its job ended after all (an idle one is stopped by the
	 * stop's action) */
	if (!sup_keepjvm_idle(s))
		sup_keepjvm_release(s);
	s->stop.requested_at = now_monotonic();
	if (before == SUP_SAVEPOINTING && was != STOP_EXIT) {
		/* a TERM during the savepoint of a suspend or upgrade: that savepoint becomes the shutdown's,
		 * inside the shutdown budget (a second TERM kills at once) */
		sup_event(s, "StopRequested", "the savepoint in flight now ends a shutdown");
		sup_stop_arm_deadline(s);
		return true;
	}
	return false;
}

void sup_stop_signal(struct supervisor *s, int signo)
{
	const char *name = signo == SIGINT ? "SIGINT" : "SIGTERM";
	if (s->stop.requested_at && s->stop.signal != signo && now_monotonic() - s->stop.requested_at < USEC_PER_SEC) {
		/* Ctrl-C reaches flinklet from the terminal (SIGINT) and again from a wrapper that forwards it as
		 * SIGTERM: one stop. The same signal twice is a second stop: kill at once. */
		log_info("%s within a second of the stop request: the same stop", name);
		return;
	}
	s->stop.signal = signo;
	sup_event(s, "StopRequested", "%s received", name);
	sup_raise(s, EV_STOP);
}

void sup_stop_running(struct supervisor *s)
{
	sup_error_clear(s, STATUS_ERR_STOP);
}

void sup_stop_free(struct supervisor *s)
{
	sup_disarm(s->stop.kill_timer);
	sup_disarm(s->stop.deadline_timer);
	sup_disarm(s->stop.wait_timer);
	sup_disarm(s->stop.checkpoint_poll);
	sup_disarm(s->stop.checkpoint_timer);
	free(s->stop.checkpoint_refused);
	s->stop.checkpoint_refused = NULL;
}

void sup_stop_jvm_gone(struct supervisor *s)
{
	if (s->stop.exit_asked_at) {
		int64_t took = (int64_t)((now_monotonic() - s->stop.exit_asked_at) / USEC_PER_MSEC);
		int64_t *kept = &s->status.stop_exit_ms;
		/* the longest, halfway back to each shorter one: an odd slow exit does not stay the figure for good */
		*kept = *kept < 0 || took >= *kept ? took : (*kept + took) / 2;
		log_info("the JVM ended %.1f s after it was asked to (the exit's share of a stop: %.1f s)",
		         (double)took / 1000.0, (double)sup_stop_budget_exit_reserve(s) / USEC_PER_SEC);
		s->stop.exit_asked_at = 0;
	}
	s->stop.kill_timer = sup_disarm(s->stop.kill_timer);
}

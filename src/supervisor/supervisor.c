/* supervisor: `flinklet run` (see src/supervisor/supervisor.h and src/supervisor/sup_core.h): the table's driver.
 * It runs the actions of the lifecycle table (src/supervisor/lifecycle.c) by calling the part that owns what each
 * changes (sup_stop, sup_launch, sup_restore, sup_reload, sup_snapshot...), keeps the restart policy (backoff,
 * crash loop), turns signals and the JVM's exit into events, and sets up the event loop (the state directory:
 * sup_setup.c).
 * Everything that happens is an event fed to the table; a part raises one with sup_raise and never calls in here.
 * Intent is written to the volume before each action that matters (the restore point before a launch, the
 * stop-with-savepoint before it is triggered), then the outcome. */
#include "supervisor.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flinkconf.h"
#include "jvm.h"
#include "store.h"
#include "preflight.h"
#include "sup.h"
#include "sup_stop.h"

/* ---- the restart policy ---- */

static int on_backoff_done(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->backoff_timer = sup_disarm(s->backoff_timer);
	sup_raise(s, EV_BACKOFF_DONE);
	return 0;
}

/* ---- the actions ---- */

static enum sup_state do_launch(struct supervisor *s, enum sup_state next);

/* What the stop part returned: SUP_STARTING asks for a launch of the desired spec (the stop part never launches). */
static enum sup_state after_stop(struct supervisor *s, enum sup_state next)
{
	return next == SUP_STARTING ? do_launch(s, SUP_STARTING) : next;
}

/* A launch that failed while the JVM waited idle for it (a job-only upgrade's): that JVM goes too (killed: its exit
 * is on the way), the launch meant for it called off. */
static void drop_idle_jvm(struct supervisor *s)
{
	if (sup_keepjvm_idle(s)) {
		sup_launch_cancel(s);
		sup_launch_kill(s);
	}
}

static enum sup_state act_restart(struct supervisor *s, enum sup_state next)
{
	drop_idle_jvm(s);
	if (sup_restore_take_fatal(s)) {
		/* the launch must not happen at all (sup_restore said why in the status): no retry */
		sup_set_job_state(s, "FAILED");
		return SUP_FAILED;
	}
	usec_t now = sup_now(s);
	if (s->stable_since && now - s->stable_since >= spec_duration(s->spec, "flinklet.restart.stable-period")) {
		s->consecutive_failures = 0;
		s->restarted_at_once = false;
	}
	s->stable_since = 0;
	s->consecutive_failures++;
	/* the first failure of a job that was RUNNING (since the supervisor started, or since it last ran for the
	 * stable period) is no crash loop: restarted at once; the backoff starts with the next failure */
	bool at_once = s->state == SUP_RUNNING && s->consecutive_failures == 1;
	int64_t max = spec_int(s->spec, "flinklet.restart.max-attempts");
	if (max > 0 && s->consecutive_failures > (unsigned)max) {
		char *why = xasprintf("crash loop: %u consecutive failed starts, %u of them restarts "
		                      "(flinklet.restart.max-attempts is %lld)",
		                      s->consecutive_failures, s->consecutive_failures - 1, (long long)max);
		sup_error_set(s, STATUS_ERR_CRASH_LOOP, why);
		sup_set_job_state(s, "FAILED");
		sup_alert(s, "CrashLoop", "%s; giving up", why);
		free(why);
		return SUP_FAILED;
	}
	if (at_once) {
		s->restarted_at_once = true;
		sup_event(s, "RestartScheduled",
		          "restarting the JVM now (attempt 1): the first failure after a stable run needs no backoff");
		sup_arm(s, &s->backoff_timer, 0, on_backoff_done);
		return next;
	}
	usec_t delay = backoff_delay(s->consecutive_failures - (s->restarted_at_once ? 1 : 0),
	                             spec_duration(s->spec, "flinklet.restart.backoff.initial"),
	                             spec_duration(s->spec, "flinklet.restart.backoff.max"), 2.0);
	sup_event(s, "RestartScheduled", "restarting the JVM in %.1f s (attempt %u)", (double)delay / USEC_PER_SEC,
	          s->consecutive_failures);
	sup_arm(s, &s->backoff_timer, delay, on_backoff_done);
	return next;
}

/* A launch that could not go on (the jar, the volume, the JVM could not be executed): back off. */
static enum sup_state launch_failed(struct supervisor *s)
{
	drop_idle_jvm(s);
	s->status.last_exit_code = 127;
	if (s->volume_errno) {
		/* a full or read-only volume is not a crash loop: wait for it as long as it takes */
		usec_t delay = spec_duration(s->spec, "flinklet.restart.backoff.max");
		sup_event(s, "RestartScheduled",
		          "the state volume does not take writes (%s): starting the JVM again in %.1f s",
		          strerror(s->volume_errno), (double)delay / USEC_PER_SEC);
		sup_arm(s, &s->backoff_timer, delay, on_backoff_done);
		return SUP_BACKOFF;
	}
	return act_restart(s, SUP_BACKOFF);
}

static enum sup_state do_launch(struct supervisor *s, enum sup_state next)
{
	s->backoff_timer = sup_disarm(s->backoff_timer);
	sup_snapshot_new_jvm(s);
	if (s->launched != s->spec) {
		spec_free(s->launched);
		free(s->launched);
		s->launched = s->spec;
	}
	if (sup_launch_again(s) < 0)
		return launch_failed(s);
	sup_reload_launched(s);
	return next;
}

/* EV_LAUNCH_DURABLE: the intent is on the volume; the JVM now. */
static enum sup_state act_spawn(struct supervisor *s, enum sup_state next)
{
	bool initial = s->launch.spawn.initial;
	if (!s->launch.spawn.pending || s->launch.spawn.durable_gen != s->launch.spawn.gen)
		return next; /* not this launch's durability (ignored) */
	/* the restore point is chosen (and a rollback's rejected points are set aside, the worker's order): an upgraded
	 * spec's first one is what a rollback goes back to */
	sup_reload_restore_chosen(s, s->restore.path, s->restore.id);
	sup_reload_rejected(s);
	if (sup_launch_spawn(s) == 0)
		return next;
	if (initial) {
		/* the first launch cannot execute the JVM (no java): the environment is unusable, exit 3 */
		sup_error_set(s, STATUS_ERR_LAUNCH, "unable to start the JVM");
		sup_exit(s, 3);
		return SUP_FAILED;
	}
	return launch_failed(s);
}

/* The job is RUNNING with every task running: what that settles. */
static void mark_running(struct supervisor *s)
{
	sup_launch_running(s);
	sup_reload_running(s);
	s->stable_since = sup_now(s);
	/* the restore point came up: its failures so far were not its fault */
	sup_restore_running(s);
	/* what kept the job from running is over: each part clears its own errors (the volume's, its space and a
	 * demoted restore point stay: they still hold) */
	sup_error_clear(s, STATUS_ERR_LAUNCH);
	sup_poll_running(s);
	sup_stop_running(s);
	sup_snapshot_running(s);
	sup_set_intent(s, NULL);
	sup_cds_running(s);
	if (s->status.tasks_finished)
		sup_event(s, "JobRunning", "job %s is RUNNING with all %d tasks running (%d more finished)", s->job_id,
		          s->status.tasks_running, s->status.tasks_finished);
	else
		sup_event(s, "JobRunning", "job %s is RUNNING with all %d tasks running", s->job_id,
		          s->status.tasks_total);
}

/* EV_START: the first state. A job that FINISHED earlier is never run again by a restart of the supervisor, unless
 * the spec changed since (a new run of the new spec, as a reload's); a suspended one (the file, or the API's
 * override) is not started; otherwise the first launch, which FAILED when it must not happen (sup_restore said why:
 * exit 1) or cannot (no java: exit 3). */
static enum sup_state act_start(struct supervisor *s, enum sup_state next)
{
	if (s->status.job_state && !strcmp(s->status.job_state, "FINISHED")) {
		if (!sup_launch_finished_changed(s)) {
			sup_event(s, "JobAlreadyFinished", "job %s FINISHED earlier; not starting it again", s->job_id);
			if (s->opts->exit_on_finish)
				sup_exit(s, 0);
			return SUP_FINISHED;
		}
		sup_launch_new_run(s, "flinklet is started with a spec changed since");
	}
	sup_reload_apply_state_override(s, s->spec);
	if (s->spec->job.state == JOB_STATE_SUSPENDED) {
		sup_set_job_state(s, "SUSPENDED");
		sup_event(s, "Suspended", "job.state is suspended: job %s is not started", s->job_id);
		return SUP_SUSPENDED;
	}
	sup_set_lifecycle(s, LIFECYCLE_DEPLOYED); /* the launch's intent is recorded with it */
	int r = sup_launch_initial(s);
	if (r < 0 && s->restore.fatal) {
		sup_set_job_state(s, "FAILED");
		return SUP_FAILED;
	}
	if (r < 0) {
		sup_error_set(s, STATUS_ERR_LAUNCH, "unable to start the JVM");
		sup_exit(s, 3);
		return SUP_FAILED;
	}
	return next;
}

static enum sup_state run_action(struct supervisor *s, enum sup_action a, enum sup_state next)
{
	switch (a) {
	case ACT_NONE:
		return next;
	case ACT_MARK_STABLE:
		mark_running(s);
		sup_reload_stable(s);
		sup_snapshot_kick(s);
		return next;
	case ACT_STOP_RUNNING:
		/* the stop came while STARTING; now the job runs: take the savepoint */
		mark_running(s);
		return after_stop(s, sup_stop_now_running(s, next));
	case ACT_FINISHED:
		sup_launch_startup_over(s);
		sup_launch_finished_record(s);
		sup_set_job_state(s, "FINISHED");
		sup_set_intent(s, NULL);
		sup_event(s, "JobFinished", "job %s FINISHED; it is not started again with this spec", s->job_id);
		if (s->opts->exit_on_finish)
			sup_exit(s, 0);
		return next;
	case ACT_START_FAILED:
		if (sup_restore_start_failed(s, sup_launch_take_timed_out(s)))
			return SUP_FAILED;
		return act_restart(s, next);
	case ACT_RESTART:
		return act_restart(s, next);
	case ACT_KILL_JVM:
		sup_launch_kill(s);
		return next;
	case ACT_LAUNCH:
	case ACT_RELAUNCH:
		return do_launch(s, next);
	case ACT_SPAWN:
		return act_spawn(s, next);
	case ACT_START:
		return act_start(s, next);
	case ACT_JUDGE:
		sup_reload_judge(s);
		return next;
	case ACT_NEW_RUN:
		/* no readiness window: the last stable spec FINISHED, and a rollback would run the finished job
		 * again */
		sup_reload_upgrade_over(s);
		if (!sup_launch_finished_changed(s)) {
			sup_event(
			    s, "JobAlreadyFinished",
			    "job %s FINISHED; the new spec launches the same job (what changed is only the order of "
			    "its keys or its JVM's endpoints: REST and web UI, metrics reporters, scratch directory): "
			    "not running it again",
			    s->job_id);
			return SUP_FINISHED;
		}
		sup_launch_new_run(s, "its spec changed");
		return do_launch(s, next);
	case ACT_STOP:
		return after_stop(s, sup_stop_start(s, STOP_EXIT));
	case ACT_SUSPEND:
		sup_reload_upgrade_over(s);
		return after_stop(s, sup_stop_start(s, STOP_SUSPEND));
	case ACT_UPGRADE:
		return after_stop(s, sup_stop_start(s, STOP_UPGRADE));
	case ACT_ROLLBACK:
		return after_stop(s, sup_stop_start(s, STOP_ROLLBACK));
	case ACT_TERMINATE:
		return after_stop(s, sup_stop_terminate(s));
	case ACT_KILL_NOW:
		return after_stop(s, sup_stop_kill_now(s, next));
	case ACT_SAVEPOINT_RECORD:
		sup_stop_savepoint_recorded(s);
		return next;
	case ACT_SAVEPOINT_ABANDON:
		return after_stop(s, sup_stop_savepoint_failed(s));
	case ACT_STOPPED_SAVEPOINT:
		return after_stop(s, sup_stop_savepoint_ended(s));
	case ACT_JVM_IDLE:
		return after_stop(s, sup_stop_jvm_idle(s));
	case ACT_STOPPED:
	case ACT_EXIT:
		return after_stop(s, sup_stop_done(s));
	case ACT_GO_SUSPENDED:
		s->backoff_timer = sup_disarm(s->backoff_timer);
		sup_set_job_state(s, "SUSPENDED");
		sup_event(s, "Suspended", "job %s is suspended", s->job_id);
		return next;
	case SUP_ACTION_MAX:
		break;
	}
	return next;
}

/* Something the table or the invariants rule out happened: said loudly; test builds (FLINKLET_STRICT=1) abort. */
static void internal_error(const char *what, enum sup_event ev, const struct supervisor *s)
{
	log_error("internal error after %s: %s (state %s, JVM pid %d)", sup_event_name(ev), what,
	          sup_state_name(s->state), (int)s->launch.jvm_pid);
	const char *strict = getenv("FLINKLET_STRICT");
	if (strict && !strcmp(strict, "1"))
		abort(); /* test builds: fail loudly */
}

static void dispatch_one(struct supervisor *s, enum sup_event ev)
{
	const struct transition *t = &lifecycle_table[s->state][ev];
	if (t->action == ACT_NONE && t->next == SUP_SAME) {
		log_debug("%s: %s ignored", sup_state_name(s->state), sup_event_name(ev));
		return;
	}
	enum sup_state before = s->state;
	if (ev == EV_STOP && sup_stop_requested(s, before))
		return;
	s->current_event = ev;
	enum sup_state next = run_action(s, t->action, t->next);
	if (next == SUP_SAME)
		next = before;
	/* the table is the whole truth: an action ends only in a state its cell lists (a shutdown's narrower set once
	 * EV_STOP came) */
	if ((unsigned)next >= SUP_STATE_MAX ||
	    !(lifecycle_outcomes(before, ev, s->stop.requested_at != 0) & SUP_STATE_BIT(next))) {
		char what[128];
		snprintf(what, sizeof(what), "%s + %s ended in %s, which the lifecycle table does not list",
		         sup_state_name(before), sup_action_name(t->action), sup_state_name(next));
		s->state = next;
		internal_error(what, ev, s);
	}
	s->state = next;
	sup_standby_state(s, before, next);
	/* a finished job stays STABLE/FINISHED in the record after the supervisor stops */
	if (!(next == SUP_STOPPED && before == SUP_FINISHED))
		sup_set_lifecycle(s, sup_lifecycle(s));
	sup_notify_state(s);
	if (before != next)
		log_info("%s + %s -> %s (%s)", sup_state_name(before), sup_event_name(ev), sup_state_name(next),
		         lifecycle_to_string(s->status.lifecycle));
	sup_write_status(s);
	if (next == SUP_FAILED)
		sup_exit(s, s->exit_code ? s->exit_code : 1); /* 3 when the first JVM could not be executed */
}

static bool armed(sd_event_source *src)
{
	int enabled = 0;
	return src && sd_event_source_get_enabled(src, &enabled) >= 0 && enabled != SD_EVENT_OFF;
}

const char *sup_invariant_violation(const struct supervisor *s)
{
	struct sup_facts f = {
	    .jvm = s->launch.jvm_pid > 0,
	    .jvm_idle = s->keepjvm.idle,
	    .launch_pending = s->launch.spawn.pending,
	    .fetch = s->fetch.active,
	    .fetch_retry = armed(s->fetch.retry),
	    .jar_wait = armed(s->launch.jar_wait),
	    .backoff_timer = armed(s->backoff_timer),
	    .startup_timer = armed(s->launch.startup_timer),
	    .stop_wait_timer = armed(s->stop.wait_timer),
	    .deadline_timer = armed(s->stop.deadline_timer),
	    .kill_timer = armed(s->stop.kill_timer),
	    .kill_sent = s->launch.kill_sent,
	    .force_killed = s->stop.force_killed,
	};
	return lifecycle_invariant(s->state, &f);
}

static void check_invariants(struct supervisor *s, enum sup_event ev)
{
	const char *bad = sup_invariant_violation(s);
	if (bad)
		internal_error(bad, ev, s);
}

void sup_raise(struct supervisor *s, enum sup_event ev)
{
	if (s->dispatching) {
		/* raised by an action: handled once the transition in progress is complete */
		if (!event_queue_push(&s->queue, ev))
			log_error("internal error: event queue full, %s dropped", sup_event_name(ev));
		return;
	}
	s->dispatching = true;
	for (;;) {
		dispatch_one(s, ev);
		/* the invariants hold once the events the actions raised are dispatched too (a launch that failed at
		 * once leaves STARTING with nothing pending until its queued LAUNCH_FAILED backs off) */
		enum sup_event last = ev;
		if (!event_queue_pop(&s->queue, &ev)) {
			check_invariants(s, last);
			break;
		}
	}
	s->dispatching = false;
}

/* ---- signals and the JVM's exit ---- */

static void on_child(const struct reaped *r, void *userdata)
{
	struct supervisor *s = userdata;
	if (sup_cds_reaped(s, r) || sup_dispose_reaped(s, r) || sup_sweep_reaped(s, r) || sup_autoscaler_reaped(s, r) ||
	    sup_standby_reaped(s, r))
		return;
	if (r->pid != s->launch.jvm_pid) {
		log_debug("reaped orphan process %d", (int)r->pid);
		return;
	}
	/* a JVM that ran no job (idle between the two of a job-only upgrade); its last words read first: a launcher
	 * that said it is idle and died at once may have its exit seen before that line (which starts the upgraded
	 * spec's launch, for a new JVM then) */
	jvmout_drain(s->launch.jvm_out);
	bool idle = s->keepjvm.idle;
	sup_launch_jvm_exited(s, r);
	s->status.last_exit_code = r->exit_code;
	s->status.last_exit_signal = r->exit_signal;
	sup_stop_jvm_gone(s);
	sup_snapshot_cancel(s);
	if (r->exit_signal >= 0)
		sup_event(s, "JvmExited", "the JVM was killed by signal %d (%s)", r->exit_signal,
		          strsignal(r->exit_signal));
	else if (s->launch.start_cause && r->exit_code != 0)
		sup_event(s, "JvmExited", "the JVM exited with code %d: %s", r->exit_code, s->launch.start_cause);
	else
		sup_event(s, "JvmExited", "the JVM exited with code %d", r->exit_code);
	if (idle && (s->state == SUP_STARTING || s->state == SUP_BACKOFF)) {
		/* no job ended with it: the launch pending (or the next, after the backoff) starts a new JVM */
		log_info("the JVM had no job (it waited for the upgraded one): %s",
		         s->state == SUP_STARTING ? "a new JVM starts the job" : "the job starts after the backoff");
		return;
	}
	if (s->launch.start_cause && r->exit_code != 0 && s->state == SUP_STARTING) {
		char *err = xasprintf("the JVM exited with code %d before the job was RUNNING: %s", r->exit_code,
		                      s->launch.start_cause);
		sup_error_set(s, STATUS_ERR_LAUNCH, err);
		free(err);
	}
	/* no task runs any more; a job that failed says why (Flink's root exception) */
	sup_poll_jvm_exited(s, r->exit_code, r->exit_signal);
	if (r->exit_signal >= 0)
		sup_raise(s, EV_JVM_KILLED);
	else
		sup_raise(s, r->exit_code == 0 ? EV_JVM_EXITED_OK : EV_JVM_EXITED_ERROR);
}

static int on_sigchld(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	reap_children(on_child, userdata);
	return 0;
}

static int on_term(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct supervisor *s = userdata;
	sup_stop_signal(s, (int)si->ssi_signo);
	return 0;
}

static int on_quit(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	struct supervisor *s = userdata;
	if (s->launch.jvm_pid > 0) {
		log_info("SIGQUIT: asking the JVM for a thread dump");
		jvm_signal(s->launch.jvm_pid, SIGQUIT);
	}
	return 0;
}

static int on_hup(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	sup_reload(userdata, "SIGHUP");
	return 0;
}

/* ---- set-up ---- */

/* Before anything is written: a local jar Flink's client would refuse stops the start here, in the contract's
 * message format (exit 2: the configuration names something unusable). A busy REST port is only said: it may
 * be a JVM of a supervisor that just died, on its way out; the launch is retried until the port is free. */
static int preflight_first_launch(struct supervisor *s)
{
	if (s->spec->job.state == JOB_STATE_SUSPENDED)
		return 0;
	struct artifact a = {0};
	char *err = NULL;
	const char *dir = spec_get(s->spec, "flinklet.state.dir");
	int code = 0;
	if (artifact_plan(s->spec, dir ? dir : ".", &a, &err) == 0 && !a.remote) {
		struct diags d = {0};
		if (preflight_jar_diag(s->spec, a.local_path, &d) < 0) {
			log_fatal("%s", d.msgs.v[0]);
			code = 2;
		}
		diags_free(&d);
	}
	free(err);
	artifact_free(&a);
	int64_t port = spec_int(s->spec, "rest.port");
	const char *bind = spec_get(s->spec, "rest.bind-address");
	if (code == 0 && port > 0 && port < 65536 &&
	    preflight_port_free(bind ? bind : "127.0.0.1", (int)port) == -EADDRINUSE)
		log_warn("rest.port %lld on %s is in use by another process: Flink's REST server cannot start until it "
		         "is free (the launch is retried with the restart backoff)",
		         (long long)port, bind ? bind : "127.0.0.1");
	return code;
}

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
	if (!sup_launch_has_launcher(s))
		log_warn(
		    "%s has no %s (make flink-lib puts it there; the image has it): the JVM runs Flink's CLI, which "
		    "ends the job when its main() returns (a main() that only submits it, as the Table API's "
		    "executeSql or executeAsync() do, stops within seconds)",
		    s->lib_dir, FLINKCONF_LAUNCHER_JAR);
	return preflight_first_launch(s);
}

void supervisor_handled_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGQUIT);
	sigaddset(set, SIGHUP);
}

static int setup_loop(struct supervisor *s)
{
	int r = sd_event_new(&s->event);
	if (r < 0)
		return r;
	sigset_t mask;
	supervisor_handled_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((r = sd_event_add_signal(s->event, NULL, SIGCHLD, on_sigchld, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGTERM, on_term, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGINT, on_term, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGQUIT, on_quit, s)) < 0 ||
	    (r = sd_event_add_signal(s->event, NULL, SIGHUP, on_hup, s)) < 0)
		return r;
	/* the volume's records are written off the loop from now on (sup_core.c) */
	if ((r = sup_journal_setup(s)) < 0 || (r = sup_clock_setup(s)) < 0)
		return r;
	char *url = flinkconf_rest_url(s->spec);
	r = rest_new(s->event, url, spec_duration(s->spec, "kubernetes.operator.flink.client.timeout"), &s->rest);
	free(url);
	if (r < 0)
		return r;
	return sup_poll_setup(s);
}

void sup_free(struct supervisor *s)
{
	s->closing = true;
	sup_http_stop(s);
	sup_notify_free(s);
	sup_autoscaler_free(s);
	sup_observe_free(s);
	sup_rescales_free(s);
	sup_flinkmetrics_free(s);
	sup_cds_free(s);
	rest_free(s->rest);
	sup_launch_stop(s);
	sup_keepjvm_free(s);
	sup_standby_free(s);
	sup_reload_free(s);
	sup_snapshot_free(s);
	sup_dispose_free(s);
	sup_sweep_free(s);
	/* what is recorded and not written yet goes to the volume now, before the lock is let go */
	sup_journal_free(s);
	sup_poll_free(s);
	sup_launch_free(s);
	sup_disarm(s->backoff_timer);
	sup_stop_free(s);
	sup_clock_free(s);
	sd_event_unref(s->event);
	status_free(&s->status);
	sup_restore_free(s);
	strv_free(&s->pending_events);
	free(s->volume_failed_file);
	free(s->last_written);
	free(s->state_dir);
	free(s->conf_dir);
	free(s->lib_dir);
	free(s->ckpt_dir);
	free(s->sp_dir);
	free(s->flink_version);
	if (s->launched && s->launched != s->spec) {
		spec_free(s->launched);
		free(s->launched);
	}
	spec_free(s->spec);
	free(s->spec);
	for (int i = 0; i < 2; i++)
		if (s->dir_lock_fd[i] >= 0)
			close(s->dir_lock_fd[i]);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
}

int supervisor_run(struct spec *spec, const struct run_options *opts)
{
	struct supervisor s = {.spec = spec,
	                       .launched = spec,
	                       .opts = opts,
	                       .lock_fd = -1,
	                       .dir_lock_fd = {-1, -1},
	                       .reload.inotify_fd = -1,
	                       .keepjvm.control_fd = -1,
	                       .standby.control_fd = -1,
	                       .state = SUP_INITIAL};
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
		code = sup_setup_state_dir(&s);
	if (code != 0) {
		sup_free(&s);
		return code;
	}
	status_set_string(&s.status.name, spec->name);
	s.status.rest_port = flinkconf_rest_port(spec);
	int r = become_subreaper();
	if (r < 0)
		log_warn("unable to become a child subreaper: %s", strerror(-r));
	r = setup_loop(&s);
	if (r < 0) {
		log_fatal("unable to set up the event loop: %s", strerror(-r));
		sup_free(&s);
		return 3;
	}
	sup_reload_setup(&s);
	s.status.supervisor_pid = getpid();
	if (sup_http_start(&s) < 0) {
		sup_free(&s);
		return 3;
	}
	sup_notify_setup(&s);
	sup_autoscaler_setup(&s);
	sup_event(&s, "SupervisorStarted", "flinklet %s (pid %d%s) supervising %s in %s", FLINKLET_VERSION,
	          (int)getpid(), getpid() == 1 ? ", PID 1" : ", subreaper", spec->name, s.state_dir);
	if (s.launch.fresh_start)
		sup_event(&s, "StatelessStart", "upgradeMode stateless after a stop: starting empty as job %s",
		          s.job_id);
	sup_snapshot_check_nonces(&s);
	sup_snapshot_arm_periodic(&s);
	sup_dispose_finish_leftovers(&s);
	sup_snapshot_retention(&s);

	/* the first state is the table's too (SUP_INITIAL + EV_START); a FAILED start, or a finished job with
	 * --exit-on-finish, has asked the loop to exit, which it does at once */
	sup_raise(&s, EV_START);
	r = sd_event_loop(s.event);
	if (r < 0)
		log_error("event loop failed: %s", strerror(-r));
	code = s.exit_code;
	sup_free(&s);
	return code;
}

/* sup_launch: one JVM launch: the restore point (sup_restore.c chooses it), the intent written before acting,
 * the Flink configuration files, the job's jar and SQL script and their downloads, the scratch directory emptied
 * (sup_scratch.c), and the spawn. Also the launch fingerprint: what a spec would launch, to tell a configuration change
 * that needs a new JVM from one that does not. A launch whose JVM waits idle for it (a job-only upgrade, sup_keepjvm.c)
 * is submitted to that JVM instead of a spawn (resubmit). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifacts.h"
#include "config_sql.h"
#include "crashlogs.h"
#include "flinkconf.h"
#include "jvm.h"
#include "membudget.h"
#include "redact.h"
#include "scratch.h"
#include "store.h"
#include "preflight.h"
#include "sup_autoscaler.h"
#include "sup_cds.h"
#include "sup_crashlogs.h"
#include "sup_fetch.h"
#include "sup_flinkmetrics.h"
#include "sup_keepjvm.h"
#include "sup_launch.h"
#include "sup_memtune.h"
#include "sup_poll.h"
#include "sup_restore.h"
#include "sup_scratch.h"
#include "sup_standby.h"
#include "sup_sweep.h"

extern char **environ;

/* ---- launching the JVM ---- */

/* The Flink configuration of a launch (conf/config.yaml, the log4j file), written on the worker thread: an unchanged
 * file is not written; a changed one (another restore point, the autoscaler's parallelism) is replaced with its
 * fsyncs there. The spawn waits for it (the worker's order) and needs it. */
struct launch_files {
	struct supervisor *s;
	char *conf_dir, *conf, *log4j, *crash_dir;
	char *sql; /* an inline spec.job.sql, for the runner (conf/job.sql); NULL: none */
	int r, crash_r;
};

static void launch_files_run(void *arg)
{
	struct launch_files *f = arg;
	char *conf_path = path_join(f->conf_dir, "config.yaml");
	char *log_path = path_join(f->conf_dir, "log4j-console.properties");
	f->r = mkdir_p(f->conf_dir);
	f->crash_r = mkdir_p(f->crash_dir); /* not a condition of the launch: HotSpot falls back to its cwd */
	if (f->r == 0)
		f->r = write_file_if_changed(conf_path, f->conf, strlen(f->conf));
	if (f->r == 0)
		f->r = write_file_if_changed(log_path, f->log4j, strlen(f->log4j));
	if (f->r == 0 && f->sql) {
		char *sql_path = path_join(f->conf_dir, SQL_INLINE_FILE);
		f->r = write_file_if_changed(sql_path, f->sql, strlen(f->sql));
		free(sql_path);
	}
	free(conf_path);
	free(log_path);
}

static void launch_files_done(void *arg)
{
	struct launch_files *f = arg;
	f->s->launch.spawn.files_r = f->r;
	if (f->r < 0) /* (a success is not news: an unchanged file is not written) */
		sup_volume_write(f->s, "the Flink configuration (conf/)", f->r);
	if (f->crash_r < 0)
		log_warn("unable to create %s: %s; a JVM crash writes its fatal-error log into the state directory",
		         f->crash_dir, strerror(-f->crash_r));
	free(f->conf_dir);
	free(f->conf);
	free(f->log4j);
	free(f->crash_dir);
	free(f->sql);
	free(f);
}

static void write_launch_files(struct supervisor *s, const struct launch *l)
{
	struct launch_files *f = xcalloc(1, sizeof(*f));
	f->s = s;
	f->conf_dir = xstrdup(s->conf_dir);
	f->conf = flinkconf_render_config(s->spec, l);
	f->log4j = flinkconf_render_log4j(s->spec);
	f->crash_dir = path_join(s->state_dir, CRASHLOGS_DIR);
	f->sql = s->spec->job.sql ? xstrdup(s->spec->job.sql) : NULL;
	s->launch.spawn.files_r = 0;
	worker_submit(s->worker, launch_files_run, launch_files_done, f);
}

static int on_startup_timeout(sd_event_source *src, uint64_t usec, void *userdata);

/* Flink is visibly restoring the job's state: it said it restores the point (its `Restoring job ...` line),
 * nothing says it cannot read it, its REST API answered within the last few polls, and the job is CREATED,
 * INITIALIZING or RUNNING without every task running yet (tasks restoring their state are INITIALIZING). A
 * startup timeout then meets slowness (a large state, a slow volume), not a failure. */
static bool visibly_restoring(struct supervisor *s)
{
	if (s->state != SUP_STARTING || !s->restore.path || !s->restore.reached || s->restore.evidence ||
	    s->launch.jvm_pid <= 0 || s->launch.kill_sent || !s->poll.last_rest_ok)
		return false;
	usec_t fresh = 5 * spec_duration(s->spec, "flinklet.rest.startup-poll-interval");
	if (fresh < 5 * USEC_PER_SEC)
		fresh = 5 * USEC_PER_SEC;
	if (sup_now(s) - s->poll.last_rest_ok > fresh)
		return false;
	const char *st = s->status.job_state;
	return st && (!strcmp(st, "CREATED") || !strcmp(st, "INITIALIZING") || !strcmp(st, "RUNNING"));
}

/* The startup timeout while the job visibly restores: extended (by the startup timeout again, up to
 * flinklet.startup.restore-timeout from the launch), said once per launch. True: extended. */
static bool extend_startup(struct supervisor *s)
{
	usec_t cap = spec_duration(s->spec, "flinklet.startup.restore-timeout");
	usec_t elapsed = sup_now(s) - s->launch.spawned_at;
	if (!visibly_restoring(s) || elapsed >= cap)
		return false;
	usec_t more = spec_duration(s->spec, "flinklet.startup.timeout");
	if (more == 0 || more > cap - elapsed)
		more = cap - elapsed;
	if (!s->launch.startup_extended)
		sup_event(s, "StartupExtended",
		          "job %s is still restoring its state from %s %s after %.1f s (job %s, %d of %d tasks "
		          "running): slowness is no failure, the startup timeout is extended while it restores, up to "
		          "flinklet.startup.restore-timeout (%s) from the launch",
		          s->job_id, restore_kind_to_string(s->restore.kind), s->restore.path,
		          (double)elapsed / USEC_PER_SEC, s->status.job_state, s->status.tasks_running,
		          s->status.tasks_total, spec_get(s->spec, "flinklet.startup.restore-timeout"));
	s->launch.startup_extended = true;
	sup_arm_deadline(s, &s->launch.startup_timer, more, on_startup_timeout);
	return true;
}

static int on_startup_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->launch.startup_timer = sup_disarm(s->launch.startup_timer);
	if (extend_startup(s))
		return 0;
	s->launch.startup_timed_out = true;
	sup_alert(s, "StartupTimeout", "the job was not RUNNING with every task running within %s",
	          spec_get(s->spec, "flinklet.startup.timeout"));
	sup_raise(s, EV_STARTUP_TIMEOUT);
	return 0;
}

/* Returns 0, or -errno when the JVM could not be executed. */
/* upgradeMode stateless: the job starts empty under a new job id; the old job's checkpoints stay where
 * they are, unused. */
struct job_id_write {
	struct supervisor *s;
	char *path, line[34];
	int r;
};

static void job_id_run(void *arg)
{
	struct job_id_write *w = arg;
	w->r = write_file_atomic(w->path, w->line, 33);
}

static void job_id_done(void *arg)
{
	struct job_id_write *w = arg;
	w->s->launch.spawn.job_id_r = w->r;
	sup_volume_write(w->s, "job-id", w->r);
	free(w->path);
	free(w);
}

static void rotate_job_id(struct supervisor *s)
{
	store_new_job_id(s->job_id);
	/* written off the loop; the launch's spawn waits for it (the worker's order) and needs it */
	struct job_id_write *w = xcalloc(1, sizeof(*w));
	w->s = s;
	w->path = path_join(s->state_dir, "job-id");
	snprintf(w->line, sizeof(w->line), "%s\n", s->job_id);
	s->launch.spawn.job_id_r = 0;
	worker_submit(s->worker, job_id_run, job_id_done, w);
	sup_record_job_id(s);
	s->launch.fresh_start = true;
	sup_poll_new_job(s);
	sup_restore_forget_failures(s);
}

/* A line of the JVM's output: while the job starts, what it says about the restore point. */
static void on_jvm_line(void *userdata, const char *line)
{
	struct supervisor *s = userdata;
	sup_keepjvm_line(s, line);
	sup_cds_line(s, line);
	sup_restore_line(s, line);
	/* a SQL script job's runner compared its new compiled plan with the one before (java/sqlrunner SqlPlans) */
	if (str_has_prefix(line, "flinklet-sql: plan changed: "))
		sup_warning(s, "SqlPlanChanged", "the SQL script's %s", line + strlen("flinklet-sql: "));
	else if (str_has_prefix(line, "flinklet-sql: plan unchanged: "))
		sup_event(s, "SqlPlanUnchanged", "the SQL script's %s", line + strlen("flinklet-sql: "));
}

#define JAR_WAIT_USEC (2 * USEC_PER_SEC)

static int launch_jvm(struct supervisor *s);
static void on_launch_durable(struct supervisor *s, uintptr_t gen);

static int on_jar_wait(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->launch.jar_wait = sup_disarm(s->launch.jar_wait);
	if (s->state == SUP_STARTING && (s->launch.jvm_pid <= 0 || sup_keepjvm_idle(s)) && !s->launch.spawn.pending &&
	    launch_jvm(s) < 0)
		sup_raise(s, EV_LAUNCH_FAILED);
	return 0;
}

/* A jar Flink's client would refuse (gone, unreadable, not a jar, no entry class) is not launched: a JVM
 * would only exit with a stack trace, again and again. Said once per distinct problem; true: wait. */
static bool jar_unusable(struct supervisor *s)
{
	char *why = NULL;
	if (preflight_jar(s->launch.jar.local_path, s->spec->job.entry_class, &why) == 0) {
		if (s->launch.jar_problem)
			sup_event(s, "JarUsable", "the job's jar is usable again: %s", s->launch.jar.local_path);
		free(s->launch.jar_problem);
		s->launch.jar_problem = NULL;
		return false;
	}
	if (!s->launch.jar_problem || strcmp(s->launch.jar_problem, why)) {
		char *err = xasprintf("the job cannot start: %s; no JVM is started until the jar or the configuration "
		                      "changes (looked at every %llu s)",
		                      why, (unsigned long long)(JAR_WAIT_USEC / USEC_PER_SEC));
		sup_error_set(s, STATUS_ERR_JAR, err);
		sup_alert(s, "JarUnusable", "%s", err);
		free(err);
		free(s->launch.jar_problem);
		s->launch.jar_problem = why;
		sup_write_status(s);
	} else {
		free(why);
	}
	sup_arm(s, &s->launch.jar_wait, JAR_WAIT_USEC, on_jar_wait);
	return true;
}

/* A remote SQL script's downloaded and checked copy, for the runner (a local or inline one is the spec's). */
static void sql_launch(const struct supervisor *s, struct launch *l)
{
	if (!s->launch.sql.remote)
		return;
	l->sql_path = s->launch.sql.local_path;
	l->sql_sha256 = s->fetch.sql_sha256[0] ? s->fetch.sql_sha256 : NULL;
}

/* The launch on its way counts in jvm.starts (once, with its intent), taken back when no JVM comes of it. */
static void count_start(struct supervisor *s, bool count)
{
	if (s->launch.spawn.counted == count)
		return;
	s->launch.spawn.counted = count;
	s->status.jvm_starts += count ? 1 : s->status.jvm_starts > 0 ? -1 : 0;
	sup_write_status(s);
}

static int launch_jvm(struct supervisor *s)
{
	if (jar_unusable(s))
		return 0;
	int r = sup_restore_choose(s);
	if (r < 0)
		return r; /* never start empty because a directory could not be read */
	free(s->launch.start_cause);
	s->launch.start_cause = NULL;
	free(s->launch.exit_cause);
	s->launch.exit_cause = NULL;
	s->launch.startup_timed_out = false;
	sup_sweep_before_launch(s, s->restore.path);
	char *uri = s->restore.path ? file_uri_from_path(s->restore.path) : NULL;
	status_set_string(&s->status.restored_kind, restore_kind_to_string(s->restore.kind));
	status_set_string(&s->status.restored_location, uri);
	s->status.restored_id = uri ? s->restore.id : -1;
	sup_forget_job_state(s);
	sup_poll_tasks_none(s);
	char *intent = uri ? xasprintf("start the job from %s %s", restore_kind_to_string(s->restore.kind), uri)
	                   : xstrdup("start the job with empty state");
	sup_set_intent(s, intent);
	sup_restore_say_demotion(s, uri);
	if (uri)
		sup_event(s, "Restoring", "restoring job %s to checkpoint id %lld from %s %s (%s)", s->job_id,
		          (long long)s->restore.id, restore_kind_to_string(s->restore.kind), uri,
		          s->restore.claim    ? "claim mode"
		          : s->restore.legacy ? "legacy mode: the changelog state backend takes no other"
		                              : "no_claim mode");
	else
		sup_event(s, "StartingEmpty", "starting job %s with empty state (no checkpoint or savepoint exists)",
		          s->job_id);
	free(intent);

	struct launch l = {
	    .job_id = s->job_id,
	    .conf_dir = s->conf_dir,
	    .tmp_dir = s->scratch.tmp_dir,
	    .java = spec_get(s->spec, "flinklet.java.bin"),
	    .restore_path = uri,
	    .restore_claim = s->restore.claim,
	    .restore_legacy = s->restore.legacy,
	    .jar_path = s->launch.jar.local_path,
	    .flink_version = s->flink_version,
	};
	sql_launch(s, &l);
	/* a JVM idle between two jobs takes this one (sup_launch_spawn): the JVM, its class-data-sharing archive,
	 * its memory and its scratch stay as they are */
	bool resubmit = sup_keepjvm_idle(s);
	s->launch.spawn.standby = false;
	if (!resubmit) {
		/* a standby JVM takes it when it was started as this launch's JVM would be (sup_standby.c): it brings
		 * its own class-data-sharing archive */
		bool standby = sup_standby_running(s);
		if (!standby)
			sup_cds_prepare(s, &l);
		s->launch.spawn.tuned = sup_memtune_for_launch(s, &s->launch.spawn.memory);
		if (standby) {
			standby = sup_standby_fits(s, s->launch.spawn.tuned, &s->launch.spawn.memory);
			if (standby)
				sup_cds_standby(s, &l, sup_standby_archive(s));
			else
				sup_cds_prepare(s, &l);
		}
		s->launch.spawn.standby = standby;
	}
	l.metrics_port = sup_flinkmetrics_launch_port(s, s->spec);
	/* the autoscaler's parallelism in force: the job is restored at it, with no rescale after the start */
	char *overrides = sup_autoscaler_launch_overrides(s);
	l.parallelism_overrides = overrides;
	l.memory = s->launch.spawn.tuned ? &s->launch.spawn.memory : NULL;
	if (overrides)
		log_info("starting with the autoscaler's parallelism overrides %s", overrides);
	write_launch_files(s, &l);
	free(overrides);
	l.parallelism_overrides = NULL;
	r = resubmit ? 0 : sup_scratch_prepare(s);
	if (r < 0) {
		free(uri);
		return r;
	}
	/* the intent (restoredFrom, the Restoring event) is on the volume before the JVM runs: the spawn waits for it,
	 * the loop does not. The start is counted with it: a flinklet killed once its JVM runs (before it could record
	 * JvmStarted) has the start on the volume all the same (a job submitted to the JVM there is no JVM start) */
	count_start(s, !resubmit);
	free(s->launch.spawn.uri);
	s->launch.spawn.uri = uri;
	s->launch.spawn.pending = true;
	s->launch.spawn.gen++;
	sup_after_sync(s, on_launch_durable, s->launch.spawn.gen);
	return 0;
}

static void on_launch_durable(struct supervisor *s, uintptr_t gen)
{
	/* a launch called off (a stop, a suspend, a new spec) or superseded meanwhile is not spawned */
	if (!s->launch.spawn.pending || gen != s->launch.spawn.gen)
		return;
	s->launch.spawn.durable_gen = (unsigned)gen;
	sup_raise(s, EV_LAUNCH_DURABLE);
}

bool sup_launch_cancel(struct supervisor *s)
{
	bool was = s->launch.spawn.pending;
	if (was)
		count_start(s, false); /* no JVM comes of it */
	s->launch.spawn.pending = false;
	s->launch.spawn.gen++;
	s->launch.jar_wait = sup_disarm(s->launch.jar_wait);
	sup_fetch_cancel(s);
	return was;
}

/* A job started (a JVM spawned, or a job submitted to the idle one): its startup timeout and its poll start. */
static void job_started(struct supervisor *s)
{
	s->launch.gen++;
	sup_poll_launched(s);
	s->launch.spawned_at = sup_now(s);
	s->launch.startup_extended = false;
	sup_arm_deadline(s, &s->launch.startup_timer, spec_duration(s->spec, "flinklet.startup.timeout"),
	                 on_startup_timeout);
	free(s->launch.fingerprint);
	s->launch.fingerprint = sup_launch_fingerprint(s, s->spec);
	s->launch.backend = spec_state_backend(s->spec);
}

/* The launch's job to the JVM's launcher, which waits for one (sup_keepjvm_submit), instead of a spawn: its startup
 * timeout and poll start; a JVM that cannot take it is killed (its exit is a failed start: a new JVM starts the
 * job). True: submitted. */
static bool submit(struct supervisor *s, const struct launch *l, const char *which)
{
	int r = sup_keepjvm_submit(s, l);
	if (r < 0) {
		log_warn("unable to submit job %s to %s (pid %d): %s; it is stopped, and a new JVM starts the job",
		         s->job_id, which, (int)s->launch.jvm_pid, strerror(-r));
		sup_launch_kill(s);
	}
	job_started(s);
	return r == 0;
}

/* The pending launch's job goes to the JVM idle between two jobs (a job-only upgrade: sup_keepjvm.c). */
static int resubmit(struct supervisor *s, const struct launch *l)
{
	if (submit(s, l, "the JVM"))
		sup_event(
		    s, "JobResubmitted",
		    "submitted job %s to the running MiniCluster JVM (pid %d): the upgrade changed the job alone, the "
		    "JVM stayed (no new JVM start)",
		    s->job_id, (int)s->launch.jvm_pid);
	sup_write_status(s);
	return 0;
}

/* The pending launch's job goes to the standby JVM (sup_standby.c), which becomes the job's JVM. False: there is none
 * any more (a spawn, then). */
static bool take_standby(struct supervisor *s, const struct launch *l)
{
	pid_t pid;
	int in_fd;
	struct jvmout *out;
	if (!l->launcher || !sup_standby_take(s, &pid, &in_fd, &out))
		return false;
	if (!s->launch.spawn.counted)
		count_start(s, true);
	s->launch.spawn.counted = false; /* a JVM runs the job: counted for good */
	s->launch.spawn.initial = false;
	jvmout_free(s->launch.jvm_out);
	jvmout_set_line_fn(out, on_jvm_line, s);
	s->launch.jvm_out = out;
	sup_keepjvm_spawned(s, in_fd);
	s->launch.jvm_pid = pid;
	s->status.jvm_pid = pid;
	if (submit(s, l, "the standby JVM"))
		sup_event(
		    s, "JvmStandbyTaken",
		    "submitted job %s to the standby JVM (pid %d), started ahead of need: it is the job's JVM now (no "
		    "JVM start), REST on port %d",
		    s->job_id, (int)pid, s->status.rest_port);
	sup_write_status(s);
	return true;
}

int sup_launch_spawn(struct supervisor *s)
{
	/* (an EV_LAUNCH_DURABLE that waited in the dispatch's queue while a stop called its launch off and a new one
	 * began is not the new one's) */
	if (!s->launch.spawn.pending || s->launch.spawn.durable_gen != s->launch.spawn.gen)
		return 0;
	s->launch.spawn.pending = false;
	if (s->launch.spawn.files_r < 0) {
		count_start(s, false);
		return s->launch.spawn.files_r; /* Flink's configuration could not be written (said) */
	}
	if (s->launch.spawn.job_id_r < 0) {
		/* the new job id is not on the volume: a JVM would checkpoint under an id the next start does not know
		 */
		int r = s->launch.spawn.job_id_r;
		s->launch.next_fresh = true; /* a new id with the next launch */
		count_start(s, false);
		return r;
	}
	struct launch l = {
	    .job_id = s->job_id,
	    .conf_dir = s->conf_dir,
	    .tmp_dir = s->scratch.tmp_dir,
	    .java = spec_get(s->spec, "flinklet.java.bin"),
	    .restore_path = s->launch.spawn.uri,
	    .restore_claim = s->restore.claim,
	    .restore_legacy = s->restore.legacy,
	    .jar_path = s->launch.jar.local_path,
	    .cds_archive = s->cds.archive,
	    .cds_record = s->cds.record,
	    .memory = s->launch.spawn.tuned ? &s->launch.spawn.memory : NULL,
	    .launcher = sup_launch_has_launcher(s),
	};
	sql_launch(s, &l);
	if (sup_keepjvm_idle(s))
		return resubmit(s, &l);
	if (s->launch.spawn.standby && take_standby(s, &l))
		return 0;
	if (!s->launch.spawn.counted)
		count_start(s, true); /* a job meant for a JVM that was idle, which has exited since */
	char *crash_dir = path_join(s->state_dir, CRASHLOGS_DIR); /* made with the launch files */
	l.crash_dir = crash_dir;
	struct strv argv = {0}, envp = {0};
	flinkconf_build_argv(s->spec, &l, &argv);
	free(crash_dir);
	flinkconf_build_envp(s->spec, &l, environ, &envp);
	pid_t pid;
	int out_fd = -1, err_fd = -1, in_fd = -1;
	/* the launcher's standard input is flinklet's control channel to it (a job-only upgrade); Flink's CLI gets
	 * none */
	int r = l.launcher ? jvm_spawn_piped(argv.v, envp.v, s->state_dir, &pid, &in_fd, &out_fd, &err_fd)
	                   : jvm_spawn(argv.v, envp.v, s->state_dir, &pid, &out_fd, &err_fd);
	strv_free(&argv);
	strv_free(&envp);
	if (r < 0) {
		log_error("unable to execute %s: %s", l.java, strerror(-r));
		count_start(s, false);
		return r;
	}
	s->launch.spawn.counted = false; /* it ran: counted for good */
	s->launch.spawn.initial = false;
	jvmout_free(s->launch.jvm_out);
	s->launch.jvm_out = jvmout_new(s->event, out_fd, err_fd, on_jvm_line, s);
	sup_keepjvm_spawned(s, in_fd);
	s->launch.jvm_pid = pid;
	s->status.jvm_pid = pid;
	job_started(s);
	sup_event(s, "JvmStarted", "started the MiniCluster JVM (pid %d) for job %s, Flink %s, REST on port %d",
	          (int)pid, s->job_id, s->flink_version, s->status.rest_port);
	sup_memtune_log_split(s->spec);
	sup_write_status(s);
	return 0;
}

int sup_launch(struct supervisor *s)
{
	sup_launch_cancel(s);
	s->launch.spawn.job_id_r = 0;
	if (s->launch.next_fresh) {
		char old[33];
		memcpy(old, s->job_id, sizeof(old));
		s->launch.next_fresh = false;
		rotate_job_id(s);
		sup_event(s, "StatelessStart", "upgradeMode stateless: starting empty as job %s (was %s)", s->job_id,
		          old);
	}
	artifact_free(&s->launch.jar);
	artifact_free(&s->launch.sql);
	char *err = NULL;
	int r = artifact_plan(s->spec, s->state_dir, &s->launch.jar, &err);
	if (r == 0)
		r = artifact_plan_sql(s->spec, s->state_dir, &s->launch.sql, &err);
	if (r < 0) {
		sup_alert(s, "ArtifactInvalid", "%s", err);
		free(err);
		return r;
	}
	/* the remote jar and SQL script downloaded (or found in the cache) and checked first */
	return s->launch.jar.remote || s->launch.sql.remote
	           ? sup_fetch_artifacts(s, &s->launch.jar, &s->launch.sql, launch_jvm)
	           : launch_jvm(s);
}

bool sup_launch_has_launcher(const struct supervisor *s)
{
	if (!s->lib_dir)
		return false;
	char *jar = path_join(s->lib_dir, FLINKCONF_LAUNCHER_JAR);
	bool there = access(jar, R_OK) == 0;
	free(jar);
	return there;
}

char *sup_launch_fingerprint(struct supervisor *s, const struct spec *spec)
{
	/* the same launch parameters for every spec: only what the spec decides differs */
	struct launch l;
	flinkconf_fingerprint_launch(&l, s->conf_dir, s->scratch.tmp_dir, spec_get(spec, "flinklet.java.bin"),
	                             s->flink_version);
	return flinkconf_fingerprint(spec, spec, &l, NULL);
}

int sup_launch_initial(struct supervisor *s)
{
	s->launch.spawn.initial = true;
	return sup_launch(s);
}

int sup_launch_again(struct supervisor *s)
{
	s->launch.kill_sent = false;
	s->launch.spawn.initial = false;
	return sup_launch(s);
}

void sup_launch_first_start(struct supervisor *s, bool first)
{
	s->launch.first_start = first;
}

void sup_launch_fresh_start(struct supervisor *s)
{
	s->launch.fresh_start = true;
}

void sup_launch_next_fresh(struct supervisor *s)
{
	s->launch.next_fresh = true;
}

/* ---- a job that FINISHED, and a changed spec for it ----
 * What the finished job's JVM was launched with is kept as the sha256 of its launch fingerprint, with the flinklet
 * version that computed it (<state dir>/spec.finished): a flinklet started again on the FINISHED job compares its own
 * spec's with it. A record of another version (its fingerprint may render the same spec otherwise) or none (a volume
 * of an older flinklet) counts as the spec flinklet is started with: never a new run by surprise. */

#define FINISHED_RECORD "spec.finished"

void sup_launch_finished_record(struct supervisor *s)
{
	char *fp = s->launch.fingerprint ? NULL : sup_launch_fingerprint(s, s->launched ? s->launched : s->spec);
	flinkconf_job_digest(s->launch.fingerprint ? s->launch.fingerprint : fp, s->launch.finished_digest);
	free(fp);
	/* handed to the worker before the status that says FINISHED: a record missing after a crash counts as the spec
	 * flinklet is started with (never a new run); this supervisor compares with its copy in memory */
	char *path = path_join(s->state_dir, FINISHED_RECORD);
	sup_write_file(
	    s, path,
	    xasprintf("sha256 %s\nflinklet %s\njob %s\n", s->launch.finished_digest, FLINKLET_VERSION, s->job_id),
	    FINISHED_RECORD);
	free(path);
}

/* The finished job's digest from the volume, when this flinklet version wrote it; false otherwise (said). */
static bool load_finished_record(struct supervisor *s)
{
	char *path = path_join(s->state_dir, FINISHED_RECORD), *text = NULL;
	char was[65] = "", version[64] = "";
	bool ok = read_file(path, 4096, &text, NULL) == 0 &&
	          sscanf(text, "sha256 %64[0-9a-f] flinklet %63s", was, version) == 2 && strlen(was) == 64 &&
	          !strcmp(version, FLINKLET_VERSION);
	if (ok)
		memcpy(s->launch.finished_digest, was, sizeof(was));
	else
		log_info(
		    "%s: no record of what the FINISHED job was launched with by this flinklet version (%s): the spec "
		    "it is started with counts as the finished one; a change of it while flinklet runs is a new run",
		    path, version[0] ? version : "none");
	free(text);
	free(path);
	return ok;
}

bool sup_launch_finished_changed(struct supervisor *s)
{
	char *fp = sup_launch_fingerprint(s, s->spec);
	char hex[65];
	flinkconf_job_digest(fp, hex);
	if (!s->launch.finished_digest[0] && !load_finished_record(s))
		memcpy(s->launch.finished_digest, hex, sizeof(hex));
	if (strcmp(s->launch.finished_digest, hex)) {
		free(fp);
		return true;
	}
	/* a reload compares with this spec's launch, as with a running JVM's */
	free(s->launch.fingerprint);
	s->launch.fingerprint = fp;
	return false;
}

void sup_launch_new_run(struct supervisor *s, const char *what)
{
	char old[33];
	memcpy(old, s->job_id, sizeof(old));
	s->launch.next_fresh = false;
	rotate_job_id(s);
	s->launch.first_start = true;
	s->launch.finished_digest[0] = '\0'; /* the new run is not the finished one */
	const char *initial = s->spec->job.initial_savepoint_path;
	char *from = initial ? xasprintf("spec.job.initialSavepointPath %s, as a first start is", initial)
	                     : xstrdup("empty state");
	sup_event(s, "FinishedJobRerun",
	          "job %s FINISHED; %s: a new run as job %s, from %s. A finished bounded run's state has nothing left "
	          "to continue (its last checkpoint would end the new job at once): upgradeMode %s does not apply, no "
	          "savepoint is taken, and its checkpoints and savepoints stay on the volume, unused",
	          old, what, s->job_id, from, upgrade_mode_to_string(s->spec->job.upgrade_mode));
	free(from);
}

void sup_launch_startup_over(struct supervisor *s)
{
	s->launch.startup_timer = sup_disarm(s->launch.startup_timer);
}

void sup_launch_running(struct supervisor *s)
{
	sup_launch_startup_over(s);
	s->launch.first_start = false;
	/* what kept the jar from a launch, or its download, is over */
	sup_error_clear(s, STATUS_ERR_JAR);
	sup_fetch_running(s);
}

bool sup_launch_take_timed_out(struct supervisor *s)
{
	bool timed_out = s->launch.startup_timed_out;
	s->launch.startup_timed_out = false;
	return timed_out;
}

void sup_launch_kill(struct supervisor *s)
{
	if (s->launch.jvm_pid > 0) {
		s->launch.kill_sent = true;
		jvm_signal(s->launch.jvm_pid, SIGKILL);
	}
}

void sup_launch_jvm_exited(struct supervisor *s, const struct reaped *r)
{
	/* its last words first (they may be the evidence about the restore point), then what is left of its
	 * process group (a process left in it would hold the REST port against the next launch) */
	jvmout_drain(s->launch.jvm_out);
	jvm_kill_group(r->pid);
	sup_cds_jvm_exited(s, r);
	sup_crashlogs_jvm_exited(s, r);
	free(s->launch.start_cause);
	free(s->launch.exit_cause);
	s->launch.exit_cause = jvmout_cause(s->launch.jvm_out, SUP_CAUSE_MAX);
	s->launch.start_cause = s->state == SUP_RUNNING || !s->launch.exit_cause ? NULL : xstrdup(s->launch.exit_cause);
	sup_memtune_jvm_ended(s, s->launch.exit_cause,
	                      s->state == SUP_STOPPING || s->state == SUP_SAVEPOINTING || s->state == SUP_STOP_PENDING);
	jvmout_free(s->launch.jvm_out);
	s->launch.jvm_out = NULL;
	s->launch.jvm_pid = 0;
	s->status.jvm_pid = 0;
	sup_keepjvm_jvm_exited(s);
	sup_launch_startup_over(s);
}

void sup_launch_stop(struct supervisor *s)
{
	s->launch.jar_wait = sup_disarm(s->launch.jar_wait);
	sup_fetch_cancel(s);
	free(s->launch.jar_problem);
	s->launch.jar_problem = NULL;
	artifact_free(&s->launch.jar);
	artifact_free(&s->launch.sql);
}

void sup_launch_free(struct supervisor *s)
{
	sup_scratch_free(s);
	sup_launch_startup_over(s);
	free(s->launch.spawn.uri);
	free(s->launch.start_cause);
	free(s->launch.exit_cause);
	jvmout_free(s->launch.jvm_out);
	free(s->launch.fingerprint);
}

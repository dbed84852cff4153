/* supervisor: the `flinklet run` event loop (see include/supervisor.h).
 *
 * Order of one run: lock the state volume, read what the last run left (status.json), write the Flink
 * configuration for this launch, spawn the JVM, follow the job through REST until it is RUNNING with
 * every task running (lifecycle DEPLOYED -> STABLE), keep the last completed checkpoint in the status
 * document, and on SIGTERM/SIGINT stop the JVM within the shutdown budget. */
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
#include "log.h"
#include "rest.h"
#include "status.h"
#include "store.h"

extern char **environ;

struct supervisor {
	sd_event *event;
	struct spec *spec;
	const struct run_options *opts;
	char *state_dir, *conf_dir, *tmp_dir, *lib_dir;
	char *flink_version;
	char job_id[33];
	int lock_fd;

	struct status status;
	char *last_written;

	pid_t jvm_pid;
	bool stopping;
	bool poll_in_flight;
	int exit_code;
	struct rest *rest;
	sd_event_source *poll_timer, *kill_timer, *deadline_timer;
};

/* ---- events and the status document ---- */

static void sup_event(struct supervisor *s, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sup_event(struct supervisor *s, const char *type, const char *fmt, ...)
{
	struct strbuf msg = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&msg, fmt, ap);
	va_end(ap);
	log_info("%s", msg.buf);

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

static void sup_set_lifecycle(struct supervisor *s, enum lifecycle_state ls)
{
	if (s->status.lifecycle == ls)
		return;
	log_info("lifecycle %s -> %s", lifecycle_to_string(s->status.lifecycle), lifecycle_to_string(ls));
	s->status.lifecycle = ls;
}

static void sup_set_job_state(struct supervisor *s, const char *state)
{
	if (s->status.job_state && state && !strcmp(s->status.job_state, state))
		return;
	status_set_string(&s->status.job_state, state);
	s->status.update_time_ms = (int64_t)(now_realtime() / USEC_PER_MSEC);
}

/* ---- following the job through REST ---- */

static void on_checkpoints(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	s->poll_in_flight = false;
	if (code != 200 || !body)
		return;
	const cJSON *latest = cJSON_GetObjectItemCaseSensitive(body, "latest");
	const cJSON *completed = cJSON_GetObjectItemCaseSensitive(latest, "completed");
	if (cJSON_IsObject(completed)) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(completed, "external_path");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(completed, "id");
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(completed, "latest_ack_timestamp");
		if (cJSON_IsString(path) && cJSON_IsNumber(id) &&
		    (int64_t)id->valuedouble != s->status.last_checkpoint.id) {
			snapshot_ref_set(&s->status.last_checkpoint, path->valuestring, (int64_t)id->valuedouble,
			                 cJSON_IsNumber(ts) ? (int64_t)ts->valuedouble : 0, NULL);
			log_info("checkpoint %lld completed: %s", (long long)id->valuedouble, path->valuestring);
		}
	}
	sup_write_status(s);
}

static void on_job_details(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (code != 200 || !body) {
		s->poll_in_flight = false;
		if (code == 0)
			log_debug("Flink REST not reachable yet: %s", error ? error : "no response");
		else if (code != 404)
			log_warn("GET /jobs/%s answered %ld", s->job_id, code);
		return;
	}
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
	bool was_stable = s->status.lifecycle == LIFECYCLE_STABLE;
	sup_set_job_state(s, st);
	if (cJSON_IsNumber(start) && start->valuedouble > 0)
		s->status.start_time_ms = (int64_t)start->valuedouble;
	s->status.tasks_total = total;
	s->status.tasks_running = running;
	bool all_running = st && !strcmp(st, "RUNNING") && total > 0 && running == total;
	if (all_running && !was_stable && !s->stopping) {
		sup_set_lifecycle(s, LIFECYCLE_STABLE);
		sup_event(s, "JobRunning", "job %s is RUNNING with all %d tasks running", s->job_id, total);
	} else if (!all_running && was_stable && st) {
		sup_set_lifecycle(s, LIFECYCLE_DEPLOYED);
		sup_event(s, "JobNotRunning", "job %s is %s (%d of %d tasks running)", s->job_id, st, running, total);
	}
	char *path = xasprintf("/jobs/%s/checkpoints", s->job_id);
	if (rest_request(s->rest, "GET", path, NULL, on_checkpoints, s) < 0)
		s->poll_in_flight = false;
	free(path);
	sup_write_status(s);
}

static int on_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	usec_t interval = spec_duration(s->spec, "flinklet.rest.poll-interval");
	sd_event_source_set_time(src, now_monotonic() + interval);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	if (s->jvm_pid <= 0 || s->poll_in_flight)
		return 0;
	char *path = xasprintf("/jobs/%s", s->job_id);
	if (rest_request(s->rest, "GET", path, NULL, on_job_details, s) == 0)
		s->poll_in_flight = true;
	free(path);
	return 0;
}

/* ---- the JVM ---- */

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

static int sup_launch(struct supervisor *s)
{
	struct launch l = {
	    .job_id = s->job_id,
	    .conf_dir = s->conf_dir,
	    .tmp_dir = s->tmp_dir,
	    .java = spec_get(s->spec, "flinklet.java.bin"),
	    .restore_path = NULL,
	    .restore_claim = false,
	};
	int r = write_launch_files(s, &l);
	if (r < 0) {
		log_fatal("unable to write the Flink configuration in %s: %s", s->conf_dir, strerror(-r));
		return -r;
	}
	struct strv argv = {0}, envp = {0};
	flinkconf_build_argv(s->spec, &l, &argv);
	flinkconf_build_envp(s->spec, &l, environ, &envp);
	pid_t pid;
	r = jvm_spawn(argv.v, envp.v, s->state_dir, &pid);
	strv_free(&argv);
	strv_free(&envp);
	if (r < 0) {
		log_fatal("unable to execute %s: %s", l.java, strerror(-r));
		return r;
	}
	s->jvm_pid = pid;
	s->status.jvm_pid = pid;
	status_set_string(&s->status.restored_kind, "none");
	status_set_string(&s->status.restored_location, NULL);
	sup_set_lifecycle(s, LIFECYCLE_DEPLOYED);
	sup_event(s, "JvmStarted", "started the MiniCluster JVM (pid %d) for job %s, Flink %s, REST on port %d",
	          (int)pid, s->job_id, s->flink_version, s->status.rest_port);
	sup_write_status(s);
	return 0;
}

static void sup_exit(struct supervisor *s, int code)
{
	s->exit_code = code;
	sd_event_exit(s->event, code);
}

static void on_child(const struct reaped *r, void *userdata)
{
	struct supervisor *s = userdata;
	if (r->pid != s->jvm_pid) {
		log_debug("reaped process %d", (int)r->pid);
		return;
	}
	s->jvm_pid = 0;
	s->status.jvm_pid = 0;
	s->status.last_exit_code = r->exit_code;
	s->status.last_exit_signal = r->exit_signal;
	s->kill_timer = sd_event_source_disable_unref(s->kill_timer);
	if (r->exit_signal >= 0)
		sup_event(s, "JvmExited", "the JVM was killed by signal %d (%s)", r->exit_signal,
		          strsignal(r->exit_signal));
	else
		sup_event(s, "JvmExited", "the JVM exited with code %d", r->exit_code);

	if (s->stopping) {
		sup_set_lifecycle(s, LIFECYCLE_SUSPENDED);
		sup_set_job_state(s, "SUSPENDED");
		sup_event(s, "Stopped", "stopped; the newest retained checkpoint is the restore point");
		sup_write_status(s);
		sup_exit(s, 0);
		return;
	}
	if (r->exit_code == 0) {
		/* CliFrontend exits 0 only when the job FINISHED */
		sup_set_job_state(s, "FINISHED");
		sup_set_lifecycle(s, LIFECYCLE_STABLE);
		sup_event(s, "JobFinished", "job %s FINISHED", s->job_id);
		sup_write_status(s);
		if (s->opts->exit_on_finish)
			sup_exit(s, 0);
		return;
	}
	sup_set_job_state(s, "FAILED");
	sup_set_lifecycle(s, LIFECYCLE_FAILED);
	char *err = r->exit_signal >= 0 ? xasprintf("the JVM was killed by signal %d", r->exit_signal)
	                                : xasprintf("the JVM exited with code %d", r->exit_code);
	status_set_string(&s->status.error, err);
	sup_event(s, "JobFailed", "%s; the job is FAILED", err);
	free(err);
	sup_write_status(s);
	sup_exit(s, 1);
}

static int on_sigchld(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	reap_children(on_child, userdata);
	return 0;
}

static int on_kill_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	if (s->jvm_pid > 0) {
		log_warn("the JVM did not exit within the grace period; sending SIGKILL");
		jvm_signal(s->jvm_pid, SIGKILL);
	}
	return 0;
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	if (s->jvm_pid > 0) {
		log_error("shutdown budget exhausted; killing the JVM");
		jvm_signal(s->jvm_pid, SIGKILL);
	}
	return 0;
}

static void sup_stop(struct supervisor *s, const char *why)
{
	if (s->stopping) {
		/* a second TERM/INT: stop at once */
		log_warn("%s again: killing the JVM now", why);
		if (s->jvm_pid > 0)
			jvm_signal(s->jvm_pid, SIGKILL);
		else
			sup_exit(s, 0);
		return;
	}
	s->stopping = true;
	if (s->jvm_pid <= 0) {
		sup_event(s, "Stopped", "%s: stopping (no JVM running)", why);
		sup_write_status(s);
		sup_exit(s, s->status.lifecycle == LIFECYCLE_FAILED ? 1 : 0);
		return;
	}
	sup_event(s, "Stopping", "%s: stopping the JVM (pid %d)", why, (int)s->jvm_pid);
	usec_t budget = spec_duration(s->spec, "flinklet.shutdown.timeout");
	usec_t grace = spec_duration(s->spec, "flinklet.jvm.stop-grace-period");
	if (grace > budget)
		grace = budget;
	jvm_signal(s->jvm_pid, SIGTERM);
	usec_t now = now_monotonic();
	sd_event_add_time(s->event, &s->kill_timer, CLOCK_MONOTONIC, now + grace, 0, on_kill_timer, s);
	sd_event_add_time(s->event, &s->deadline_timer, CLOCK_MONOTONIC, now + budget, 0, on_deadline, s);
}

static int on_term(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	sup_stop(userdata, si->ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
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

static int open_state_dir(struct supervisor *s)
{
	s->state_dir = xstrdup(spec_get(s->spec, "flinklet.state.dir"));
	int r = mkdir_p(s->state_dir);
	if (r < 0) {
		log_fatal("unable to create the state directory %s: %s", s->state_dir, strerror(-r));
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
	r = store_job_id(s->state_dir, s->job_id);
	if (r < 0) {
		log_fatal("unable to keep the job id in %s: %s", s->state_dir, strerror(-r));
		return 3;
	}
	s->conf_dir = path_join(s->state_dir, "conf");
	s->tmp_dir = path_join(s->state_dir, "tmp");

	/* what the last run knew (savepoints, restart counts) carries over */
	char *path = path_join(s->state_dir, "status.json");
	char *text = NULL;
	if (read_file(path, 4u << 20, &text, NULL) == 0) {
		struct status old;
		if (status_parse(text, &old) == 0) {
			s->status.jvm_restarts = old.jvm_restarts;
			s->status.last_savepoint = old.last_savepoint;
			memset(&old.last_savepoint, 0, sizeof(old.last_savepoint));
			s->status.n_savepoint_history = old.n_savepoint_history;
			memcpy(s->status.savepoint_history, old.savepoint_history, sizeof(old.savepoint_history));
			old.n_savepoint_history = 0;
			s->status.last_checkpoint = old.last_checkpoint;
			memset(&old.last_checkpoint, 0, sizeof(old.last_checkpoint));
		} else {
			log_warn("status.json in %s is unreadable; starting a new one", s->state_dir);
		}
		status_free(&old);
		free(text);
	}
	free(path);
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
	sd_event_source_disable_unref(s->poll_timer);
	sd_event_source_disable_unref(s->kill_timer);
	sd_event_source_disable_unref(s->deadline_timer);
	sd_event_unref(s->event);
	status_free(&s->status);
	free(s->last_written);
	free(s->state_dir);
	free(s->conf_dir);
	free(s->tmp_dir);
	free(s->lib_dir);
	free(s->flink_version);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
}

int supervisor_run(struct spec *spec, const struct run_options *opts)
{
	struct supervisor s = {.spec = spec, .opts = opts, .lock_fd = -1};
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
	sup_write_status(&s);
	r = sup_launch(&s);
	if (r != 0) {
		status_set_string(&s.status.error, "unable to start the JVM");
		sup_set_lifecycle(&s, LIFECYCLE_FAILED);
		sup_write_status(&s);
		sup_free(&s);
		return 3;
	}
	r = sd_event_loop(s.event);
	if (r < 0)
		log_error("event loop failed: %s", strerror(-r));
	code = s.exit_code;
	sup_free(&s);
	return code;
}

/* sup_reload: configuration changes while running, and rollback. The configuration file's directory is
 * watched with inotify (a Kubernetes ConfigMap update swaps a symlink, so the file itself is not what
 * changes); SIGHUP asks for the same reload. A new document that does not validate is rejected with the
 * usual messages and nothing changes. A valid one becomes the desired spec: changes that the JVM does not
 * see (autoscaler, operator and most flinklet options) apply in place; job.state suspends or resumes; any
 * change to what the JVM would be launched with is an upgrade by the new spec's upgradeMode. The spec that
 * last ran STABLE is kept on the volume, to roll back to. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "store.h"
#include "sup_launch.h"
#include "sup_memtune.h"
#include "sup_reload.h"
#include "sup_restore.h"
#include "sup_snapshot.h"
#include "sup_standby.h"

#define RELOAD_DEBOUNCE (300 * USEC_PER_MSEC)

static void trial_end(struct supervisor *s);
static void base_forget(struct supervisor *s);

static int on_reload_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->reload.reload_timer = sup_disarm(s->reload.reload_timer);
	sup_reload(s, "the configuration file changed");
	return 0;
}

static int on_inotify(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct supervisor *s = userdata;
	const char *path = s->opts->config_path;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool relevant = false;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			/* the file itself, or Kubernetes' ..data symlink swap */
			if (ev->len && (!strcmp(ev->name, base) || !strncmp(ev->name, "..", 2)))
				relevant = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (relevant)
		sup_arm(s, &s->reload.reload_timer, RELOAD_DEBOUNCE, on_reload_timer);
	return 0;
}

int sup_reload_setup(struct supervisor *s)
{
	s->reload.inotify_fd = -1;
	if (!s->opts->config_path)
		return 0; /* quick mode: nothing to watch */
	const char *path = s->opts->config_path;
	char *dir = path_dirname(path);
	s->reload.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	int r = s->reload.inotify_fd < 0 ? -errno : 0;
	if (r == 0 && inotify_add_watch(s->reload.inotify_fd, dir,
	                                IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM) < 0)
		r = -errno;
	if (r == 0)
		r = sd_event_add_io(s->event, &s->reload.inotify_source, s->reload.inotify_fd, EPOLLIN, on_inotify, s);
	if (r < 0)
		log_warn("unable to watch %s for configuration changes (%s); SIGHUP still reloads", dir, strerror(-r));
	free(dir);
	return r;
}

void sup_reload_free(struct supervisor *s)
{
	s->reload.inotify_source = sup_disarm(s->reload.inotify_source);
	s->reload.reload_timer = sup_disarm(s->reload.reload_timer);
	s->reload.readiness_timer = sup_disarm(s->reload.readiness_timer);
	if (s->reload.inotify_fd >= 0)
		close(s->reload.inotify_fd);
	s->reload.inotify_fd = -1;
	free(s->reload.rejected_fingerprint);
	s->reload.rejected_fingerprint = NULL;
	free(s->reload.stable_yaml);
	s->reload.stable_yaml = NULL;
	trial_end(s);
	base_forget(s);
}

static bool same_value(const struct spec *a, const struct spec *b, const char *key)
{
	const char *x = spec_get(a, key), *y = spec_get(b, key);
	return (!x && !y) || (x && y && !strcmp(x, y));
}

static char *stable_spec_path(struct supervisor *s)
{
	return path_join(s->state_dir, "spec.stable.yaml");
}

/* The spec as kept to roll back to: a local SQL script file goes inline (spec.job.sql), as it was read when the spec
 * was loaded, so that a rollback runs the script that was stable, not what the file says since (an upgrade by
 * editing the script in place). */
static char *stable_yaml(const struct spec *spec)
{
	if (!spec->job.sql_script || !spec->job.sql_text)
		return spec_to_yaml(spec);
	cJSON *root = spec_to_json(spec);
	cJSON *job = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "spec"), "job");
	cJSON_DeleteItemFromObjectCaseSensitive(job, "sqlScript");
	cJSON_AddStringToObject(job, "sql", spec->job.sql_text);
	char *yaml = json_to_yaml(root);
	cJSON_Delete(root);
	return yaml;
}

void sup_reload_keep_stable_spec(struct supervisor *s)
{
	char *yaml = stable_yaml(s->spec);
	char *path = stable_spec_path(s);
	/* kept in memory too, so a rollback never reads back a write still on its way */
	free(s->reload.stable_yaml);
	s->reload.stable_yaml = xstrdup(yaml);
	/* nothing acts on it before the next change of configuration: off the loop */
	sup_write_file(s, path, yaml, "spec.stable.yaml");
	free(path);
}

struct spec *sup_reload_load_stable_spec(struct supervisor *s)
{
	char *path = stable_spec_path(s);
	char *text = NULL;
	size_t len = 0;
	struct spec *spec = NULL;
	/* this run's stable spec from memory (its write may still be on its way); an earlier run's from the volume */
	if (s->reload.stable_yaml) {
		text = xstrdup(s->reload.stable_yaml);
		len = strlen(text);
	}
	if (text || read_file(path, 1u << 20, &text, &len) == 0) {
		spec = xcalloc(1, sizeof(*spec));
		struct diags d = {0};
		if (config_parse(path, text, len, spec, &d) < 0 || config_finalize(spec, &d) < 0) {
			for (size_t i = 0; i < d.msgs.n; i++)
				log_warn("the kept stable spec is unusable: %s", d.msgs.v[i]);
			spec_free(spec);
			free(spec);
			spec = NULL;
		}
		diags_free(&d);
		free(text);
	}
	free(path);
	return spec;
}

void sup_reload(struct supervisor *s, const char *why)
{
	if (!s->opts->cfg) {
		log_info("%s: no configuration file to reload", why);
		return;
	}
	struct spec *n = xcalloc(1, sizeof(*n));
	struct diags d = {0};
	int r = config_load(s->opts->cfg, n, &d);
	if (r == 0 &&
	    (!same_value(n, s->spec, "flinklet.state.dir") || !same_value(n, s->spec, "execution.checkpointing.dir") ||
	     !same_value(n, s->spec, "execution.checkpointing.savepoint-dir"))) {
		struct loc l = {s->opts->config_path, 0, 0};
		diags_add(
		    &d, &l, "spec.flinkConfiguration",
		    "the state, checkpoint and savepoint directories cannot change while flinklet runs; restart it");
		r = -EINVAL;
	}
	if (r < 0) {
		for (size_t i = 0; i < d.msgs.n; i++)
			sup_alert(s, "ConfigRejected", "%s: the running job is untouched", d.msgs.v[i]);
		char *err = xasprintf("configuration rejected: %s", d.msgs.n ? d.msgs.v[0] : "invalid");
		sup_error_set(s, STATUS_ERR_CONFIG, err);
		free(err);
		sup_write_status(s);
		diags_free(&d);
		spec_free(n);
		free(n);
		return;
	}
	diags_free(&d);
	config_warnings(n, &d); /* as at the start: a listener off loopback, jar upload or cancel turned on */
	for (size_t i = 0; i < d.msgs.n; i++)
		log_warn("%s", d.msgs.v[i]);
	diags_free(&d);
	sup_reload_apply_state_override(s, n);
	sup_error_clear(s, STATUS_ERR_CONFIG);

	char *fp = sup_launch_fingerprint(s, n);
	bool restart = s->launch.fingerprint && strcmp(fp, s->launch.fingerprint) != 0;
	if (restart && s->reload.rejected_fingerprint && !strcmp(fp, s->reload.rejected_fingerprint)) {
		sup_event(s, "ConfigUnchanged",
		          "%s, but it is still the spec that was rolled back; not trying it again", why);
		free(fp);
		spec_free(n);
		free(n);
		return;
	}
	/* the same launch as the spec adopted before (a file watcher and a SIGHUP for one edit): an upgrade to it
	 * is already under way when the running JVM is not yet its */
	char *fp_adopted = sup_launch_fingerprint(s, s->spec);
	bool underway = restart && s->reload.upgrading && !strcmp(fp, fp_adopted);
	free(fp_adopted);
	free(fp);
	static const char *const at_next_start[] = {"flinklet.http.address", "flinklet.http.max-connections",
	                                            "flinklet.http.max-connections-per-ip",
	                                            "flinklet.http.connection-timeout"};
	for (size_t i = 0; i < sizeof(at_next_start) / sizeof(at_next_start[0]); i++)
		if (!same_value(n, s->spec, at_next_start[i]))
			sup_event(s, "ConfigPending", "%s changes at the next start of flinklet", at_next_start[i]);
	bool was_suspended = s->spec->job.state == JOB_STATE_SUSPENDED;
	sup_adopt_spec(s, n);
	sup_memtune_reloaded(s); /* a relaunch held after an aborted one may be tried again */
	sup_event(s, "ConfigChanged", "%s: configuration reloaded (%s)", why,
	          underway  ? "the job's upgrade to it is under way"
	          : restart ? "the job must be restarted for it"
	                    : "applied in place");
	sup_snapshot_arm_periodic(s);
	sup_snapshot_check_nonces(s);

	if (n->job.state == JOB_STATE_SUSPENDED) {
		if (!was_suspended || s->state != SUP_SUSPENDED)
			sup_raise(s, EV_SUSPEND);
	} else if (s->state == SUP_SUSPENDED) {
		sup_raise(s, EV_RESUME);
	} else if (restart) {
		/* a spec on trial, or a rollback under way, gives way to the newer spec: its own trial starts */
		trial_end(s);
		base_forget(s);
		s->reload.upgrading = true;
		s->reload.rolling_back = false;
		s->reload.rolled_back = false;
		sup_restore_forget_failures(s); /* what failed the old spec may not fail the new one */
		free(s->reload.rejected_fingerprint);
		s->reload.rejected_fingerprint = NULL;
		sup_raise(s, EV_UPGRADE);
	} else {
		sup_standby_reloaded(s); /* applied in place: the standby option, or what the standby was made for */
	}
	sup_write_status(s);
}

/* ---- job.state from the API ----
 * POST /api/v1/suspend|resume changes the desired job.state like an edit of the file would. It is kept in
 * <state dir>/job-state.override with the file's job.state at that moment, and holds (across restarts of
 * flinklet too) until the file's job.state itself changes. */

static char *override_path(struct supervisor *s)
{
	return path_join(s->state_dir, "job-state.override");
}

void sup_reload_apply_state_override(struct supervisor *s, struct spec *spec)
{
	s->reload.file_job_state = spec->job.state;
	char *path = override_path(s);
	char *text = NULL;
	if (read_file(path, 256, &text, NULL) == 0) {
		char want[32] = "", then[32] = "";
		if (sscanf(text, "%31s %31s", want, then) == 2 && !strcmp(then, job_state_to_string(spec->job.state))) {
			spec->job.state = !strcmp(want, "suspended") ? JOB_STATE_SUSPENDED : JOB_STATE_RUNNING;
		} else {
			/* the file's job.state changed since: the file decides again (removed on the worker) */
			sup_volume_unlink(s, path, NULL, NULL);
		}
		free(text);
	}
	free(path);
}

/* The override's write, on the worker thread: what it changes is applied once it is on the volume. */
struct desired_write {
	struct supervisor *s;
	enum job_state state;
	char *path, *line; /* line NULL: the override is removed (the file's job.state is wanted again) */
	const char *source;
	struct http_exchange *x;
	int r;
};

static void desired_run(void *arg)
{
	struct desired_write *w = arg;
	if (w->line)
		w->r = write_file_atomic(w->path, w->line, strlen(w->line));
	else if (unlink(w->path) == 0)
		w->r = fsync_parent(w->path);
	else
		w->r = errno == ENOENT ? 0 : -errno;
}

static void desired_done(void *arg)
{
	struct desired_write *w = arg;
	struct supervisor *s = w->s;
	sup_volume_write(s, "the desired job state", w->r);
	if (!s->closing)
		sup_reload_apply_desired_state(s, w->state, w->source);
	if (w->x && s->http.server) {
		/* answered once it is on the volume (and acted on): a 202 means that a restart of flinklet keeps it */
		struct http_response resp = {.code = 202, .content_type = "application/json"};
		strv_push(&resp.headers, "X-Content-Type-Options: nosniff");
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "accepted", w->state == JOB_STATE_SUSPENDED ? "suspend" : "resume");
		cJSON_AddStringToObject(o, "result",
		                        "GET /status: lifecycleState (SUSPENDED, or STABLE once the job runs again)");
		if (w->r < 0) {
			char *why = xasprintf("not kept on the state volume (%s): it holds until flinklet restarts",
			                      strerror(-w->r));
			cJSON_AddStringToObject(o, "warning", why);
			free(why);
		}
		char *text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		resp.body = xasprintf("%s\n", text);
		free(text);
		http_answer(w->x, &resp);
	}
	free(w->path);
	free(w->line);
	free(w);
}

void sup_reload_set_desired_state(struct supervisor *s, enum job_state state, const char *source,
                                  struct http_exchange *x)
{
	struct desired_write *w = xcalloc(1, sizeof(*w));
	w->s = s;
	w->state = state;
	w->source = source;
	w->x = x;
	w->path = override_path(s);
	if (state != s->reload.file_job_state)
		w->line =
		    xasprintf("%s %s\n", job_state_to_string(state), job_state_to_string(s->reload.file_job_state));
	/* written off the loop; applied (and the request answered) from its done callback, once durable */
	worker_submit(s->worker, desired_run, desired_done, w);
}

void sup_reload_apply_desired_state(struct supervisor *s, enum job_state state, const char *source)
{
	if (s->state == SUP_FINISHED || s->state == SUP_FAILED || s->state == SUP_STOPPED)
		return; /* ended meanwhile */
	if (s->spec->job.state == state && (state == JOB_STATE_RUNNING) == (s->state != SUP_SUSPENDED))
		return;
	s->spec->job.state = state;
	sup_event(s, "DesiredStateChanged", "job.state is now %s (set by %s)", job_state_to_string(state), source);
	sup_raise(s, state == JOB_STATE_SUSPENDED ? EV_SUSPEND : EV_RESUME);
}

/* ---- the trial of an upgraded (or rolled-back) spec ----
 * Stable only once it made progress: RUNNING with every task running through its whole readiness window (the
 * readiness timeout, from its first launch) without Flink restarting the job inside the JVM, and, with
 * checkpointing on, a checkpoint completed since its JVM started and since its last restart. A spec that cannot be
 * stable in its window (a restart inside the JVM: at once; not RUNNING, or no checkpoint, at the window's end) is
 * rolled back with rollback on: to the last stable spec, from the point the upgraded spec started from (the
 * upgrade's savepoint, or the checkpoint a last-state upgrade took up), never from a point the rejected spec wrote.
 * Without rollback it is said (UpgradeUnstable, UpgradeNotStable) and runs on: past its window it is stable once a
 * checkpoint completes after its last restart (without checkpoints: once it ran a window's length without one). A
 * rolled-back spec is tried the same way, and never rolled back again. */

static usec_t readiness_window(const struct supervisor *s)
{
	return spec_duration(s->spec, "kubernetes.operator.deployment.readiness.timeout");
}

static bool rollback_on(const struct supervisor *s)
{
	return spec_bool(s->spec, "kubernetes.operator.deployment.rollback.enabled");
}

static bool checkpointing_on(const struct supervisor *s)
{
	const struct spec *running = s->launched ? s->launched : s->spec;
	return spec_duration(running, "execution.checkpointing.interval") > 0;
}

static void trial_why(struct supervisor *s, char *why)
{
	free(s->reload.trial.why);
	s->reload.trial.why = why;
}

static void trial_end(struct supervisor *s)
{
	s->reload.trial.on = false;
	s->reload.trial.timer = sup_disarm(s->reload.trial.timer);
	s->reload.readiness_timer = sup_disarm(s->reload.readiness_timer);
	trial_why(s, NULL);
}

static void base_forget(struct supervisor *s)
{
	free(s->reload.base.path);
	s->reload.base.path = NULL;
	s->reload.base.set = false;
	s->reload.base.reject_pending = false;
	s->reload.base.id = -1;
}

/* Rolls the spec on trial back to the last stable one (EV_ROLLBACK), why it is rolled back in the event. */
static void roll_back(struct supervisor *s, const char *why)
{
	struct spec *stable = sup_reload_load_stable_spec(s);
	if (!stable) {
		sup_alert(s, "RollbackImpossible", "%s, and no stable spec is kept to roll back to", why);
		return;
	}
	sup_alert(s, "RollingBack", "%s: rolling back to the last stable spec, from %s", why,
	          !s->reload.base.set   ? "the newest restore point"
	          : s->reload.base.path ? s->reload.base.path
	                                : "empty state (the upgraded spec started empty)");
	free(s->reload.rejected_fingerprint);
	s->reload.rejected_fingerprint = sup_launch_fingerprint(s, s->spec);
	sup_adopt_spec(s, stable);
	/* the restore points failed the rejected spec, not necessarily the stable one */
	sup_restore_forget_failures(s);
	trial_end(s);
	s->reload.base.reject_pending = s->reload.base.set;
	s->reload.rolling_back = true;
	s->reload.upgrading = false;
	sup_raise(s, EV_ROLLBACK);
}

/* The spec on trial cannot be stable in its window (why): rolled back with rollback on, else said once. */
static void not_stable(struct supervisor *s, const char *type, const char *why)
{
	bool states = s->state == SUP_STARTING || s->state == SUP_BACKOFF || s->state == SUP_RUNNING;
	if (states && rollback_on(s) && !s->reload.rolling_back) {
		roll_back(s, why);
		return;
	}
	if (s->reload.trial.said)
		return;
	s->reload.trial.said = true;
	sup_alert(s, type, "%s%s", why,
	          s->reload.rolling_back ? "; this is the rolled-back spec: it is not rolled back again"
	          : rollback_on(s)       ? ""
	                                 : "; kubernetes.operator.deployment.rollback.enabled is false: it runs on");
}

static int on_readiness_timeout(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->reload.readiness_timer = sup_disarm(s->reload.readiness_timer);
	/* only a spec on trial, still coming up or running: a suspend or a newer spec since wins */
	if (!s->reload.trial.on)
		return 0;
	s->reload.trial.window_over = true;
	sup_reload_judge(s);
	if (!s->reload.trial.on)
		return 0; /* stable */
	const char *timeout = spec_get(s->spec, "kubernetes.operator.deployment.readiness.timeout");
	const char *which = s->reload.rolling_back ? "rolled-back" : "upgraded";
	char *why = s->state != SUP_RUNNING ? xasprintf("the %s spec is not RUNNING within %s", which, timeout)
	                                    : xasprintf("the %s spec made no progress within %s: %s", which, timeout,
	                                                s->reload.trial.why ? s->reload.trial.why : "no progress seen");
	not_stable(s, "UpgradeNotStable", why);
	free(why);
	return 0;
}

static int on_trial_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	s->reload.trial.timer = sup_disarm(s->reload.trial.timer);
	sup_reload_judge(s);
	return 0;
}

void sup_reload_launched(struct supervisor *s)
{
	if (!s->reload.upgrading && !s->reload.rolling_back && !s->reload.trial.on)
		return;
	usec_t now = sup_now(s);
	if (!s->reload.trial.on) {
		/* the spec's first launch: its window starts (a relaunch after a crash of the same spec keeps it) */
		s->reload.trial.on = true;
		s->reload.trial.restarted = s->reload.trial.window_over = s->reload.trial.said = false;
		s->reload.trial.since = now;
		s->reload.trial.restarted_at = 0;
		trial_why(s, xstrdup("not RUNNING yet"));
		sup_arm_deadline(s, &s->reload.readiness_timer, readiness_window(s), on_readiness_timeout);
	}
	s->reload.trial.jvm_since = now;
	s->reload.trial.running_since = 0;
}

void sup_reload_restore_chosen(struct supervisor *s, const char *path, int64_t id)
{
	/* the point the upgraded spec's first launch starts from is the rollback's (a relaunch after its crash may
	 * pick a checkpoint it wrote: never that one) */
	if (!s->reload.upgrading || s->reload.base.set || s->reload.rolling_back)
		return;
	base_forget(s);
	s->reload.base.set = true;
	s->reload.base.path = path ? xstrdup(path) : NULL;
	s->reload.base.id = path ? id : -1;
}

void sup_reload_rejected(struct supervisor *s)
{
	s->reload.base.reject_pending = false;
}

bool sup_reload_proving(const struct supervisor *s)
{
	return s->reload.trial.on;
}

/* A restart inside this JVM that the trial has not yet acted on (Flink's numRestarts went up, or a failover was
 * seen: s->poll), within the window: the spec cannot be stable in it. */
static bool restarted_now(struct supervisor *s)
{
	usec_t at = s->poll.restarted_at;
	if (!at || at <= s->reload.trial.jvm_since || at <= s->reload.trial.restarted_at)
		return false;
	s->reload.trial.restarted_at = at;
	if (s->reload.trial.window_over)
		return false;
	s->reload.trial.restarted = true;
	const char *cause = s->poll.failure;
	char *why = xasprintf("the %s spec failed after it was RUNNING: Flink restarted job %s inside the JVM%s%s%s",
	                      s->reload.rolling_back ? "rolled-back" : "upgraded", s->job_id, cause ? " (" : "",
	                      cause ? cause : "", cause ? ")" : "");
	not_stable(s, "UpgradeUnstable", why);
	free(why);
	return true;
}

void sup_reload_judge(struct supervisor *s)
{
	if (!s->reload.trial.on || s->state != SUP_RUNNING)
		return;
	if (restarted_now(s) || !s->reload.trial.on)
		return; /* rolled back, or said */
	if (!s->reload.trial.running_since)
		return;
	usec_t now = sup_now(s), window = readiness_window(s);
	bool restarted_here = s->reload.trial.restarted_at > s->reload.trial.jvm_since;
	usec_t since = restarted_here ? s->reload.trial.restarted_at : s->reload.trial.jvm_since;
	if (!s->reload.trial.window_over) {
		const char *timeout = spec_get(s->spec, "kubernetes.operator.deployment.readiness.timeout");
		trial_why(s, s->reload.trial.restarted
		                 ? xstrdup("Flink restarted the job inside the JVM")
		                 : xasprintf("watched for restarts until its readiness window (%s) ends", timeout));
		return;
	}
	if (checkpointing_on(s)) {
		if (s->poll.checkpoint_completed_at <= since) {
			trial_why(s, xstrdup(restarted_here
			                         ? "no checkpoint completed since the job's last restart inside "
			                           "the JVM"
			                         : "no checkpoint completed since it started"));
			return;
		}
	} else if (restarted_here || s->reload.trial.restarted) {
		/* without checkpoints, past its window: a window's length RUNNING since the last restart */
		usec_t from = s->reload.trial.running_since > since ? s->reload.trial.running_since : since;
		if (now - from < window) {
			trial_why(s,
			          xstrdup("restarted inside the JVM; RUNNING for a readiness window's length since the "
			                  "last restart proves it"));
			sup_arm_deadline(s, &s->reload.trial.timer, window - (now - from), on_trial_timer);
			return;
		}
	}
	bool rolled = s->reload.rolling_back, restarted = s->reload.trial.restarted;
	trial_end(s);
	s->reload.upgrading = false;
	sup_event(s, "SpecStable", "the %s spec of job %s is stable: RUNNING %s%s", rolled ? "rolled-back" : "upgraded",
	          s->job_id,
	          restarted ? "again after Flink restarted it inside the JVM"
	                    : "through its readiness window without a restart inside the JVM",
	          checkpointing_on(s) ? ", a checkpoint completed since" : "");
	sup_reload_stable(s);
	sup_set_lifecycle(s, sup_lifecycle(s));
	sup_write_status(s);
}

void sup_reload_upgrade_over(struct supervisor *s)
{
	trial_end(s);
	s->reload.upgrading = false;
	s->reload.rolling_back = false;
	base_forget(s);
}

void sup_reload_upgrade_aborted(struct supervisor *s)
{
	s->reload.upgrading = false;
}

void sup_reload_running(struct supervisor *s)
{
	/* a rejected configuration is said until the job next comes up (or a good one is read) */
	sup_error_clear(s, STATUS_ERR_CONFIG);
	if (!s->reload.trial.on) {
		s->reload.readiness_timer = sup_disarm(s->reload.readiness_timer);
		s->reload.upgrading = false;
		return;
	}
	if (!s->reload.trial.running_since)
		s->reload.trial.running_since = sup_now(s);
}

void sup_reload_stable(struct supervisor *s)
{
	if (s->reload.trial.on) {
		/* stable once it made progress: judged once the transition into RUNNING is complete */
		sup_raise(s, EV_PROGRESS);
		return;
	}
	if (s->reload.rolling_back) {
		s->reload.rolling_back = false;
		s->reload.rolled_back = true;
		base_forget(s);
		sup_alert(s, "RolledBack", "job %s runs the last stable spec again", s->job_id);
	} else {
		base_forget(s);
		sup_reload_keep_stable_spec(s);
	}
}

/* sup: the inside of the supervisor, shared by its files: the one context struct that owns all state, and
 * the helpers the parts call. supervisor.c holds the actions of the lifecycle table, the signals and the
 * set-up; sup_core.c events, the status document and timers; sup_launch.c restore points and the JVM
 * launch; sup_poll.c following the job and the health checks; sup_snapshot.c savepoints and checkpoints
 * (stop-with-savepoint, manual, periodic) and their retention; sup_reload.c configuration changes and
 * rollback. Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_H
#define FLINKLET_SUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "artifacts.h"
#include "autoscaler.h"
#include "http.h"
#include "jvmout.h"
#include "restorelog.h"
#include "config.h"
#include "lifecycle.h"
#include "log.h"
#include "pollchain.h"
#include "recent.h"
#include "rest.h"
#include "snapshots.h"
#include "status.h"
#include "supervisor.h"
#include "worker.h"

#define RESTART_SAMPLES 256

/* Why the JVM is being stopped: what happens once it is gone. */
enum stop_purpose { STOP_EXIT, STOP_SUSPEND, STOP_UPGRADE, STOP_ROLLBACK };
/* What a stop is for, as the events and the intent say it: "shut down", "suspend", "upgrade", "roll back". */
const char *stop_purpose_text(enum stop_purpose p);

enum snapshot_op_kind { SNAP_SAVEPOINT, SNAP_CHECKPOINT };

struct supervisor {
	sd_event *event;
	struct spec *spec;     /* the desired spec (owned) */
	struct spec *launched; /* the spec the JVM was launched with: spec, or an older one (owned then) */
	const struct run_options *opts;
	char *state_dir, *conf_dir, *lib_dir, *ckpt_dir, *sp_dir;
	char *scratch_dir, *tmp_dir; /* flinklet.scratch.dir (local), and the JVM's directory in it (io.tmp.dirs) */
	char *flink_version;
	char job_id[33];
	int lock_fd;

	struct status status;
	char *last_written;
	enum sup_state state;
	int exit_code;

	pid_t jvm_pid;
	struct jvmout *jvm_out; /* the JVM's stdout and stderr (sup_launch.c) */
	unsigned launch_gen;
	struct poll_chains polls; /* the polls of Flink's REST API in flight (sup_poll.c) */
	struct rest *rest;
	sd_event_source *poll_timer, *startup_timer, *backoff_timer, *kill_timer, *deadline_timer;
	sd_event_source *savepoint_timer, *savepoint_poll_timer;

	/* restarts */
	unsigned consecutive_failures;
	bool restarted_at_once; /* the first of these failures was restarted without a backoff */
	usec_t stable_since;
	bool first_start, fresh_start, next_fresh;

	/* restore points: those given up on evidence (demoted), what this launch restores, whether it got as
	 * far as restoring, the evidence that Flink cannot read it, how many launches in a row failed on it */
	struct strv failed_restore_points, reported_skips;
	char *restore_path;
	enum restore_kind restore_kind;
	int64_t restore_id; /* its checkpoint id (the _metadata header); -1 with no restore point */
	bool restore_reached;
	struct restorelog restore_scan;
	char *restore_evidence;
	char *restore_fail_path;
	unsigned restore_fail_count;
	char *demoted_note; /* said with the next launch: which point was given up, and why */
	char *start_cause;  /* the cause the JVM printed when it failed to start (the first line of it) */
	bool startup_timed_out;

	/* the dispatch: events raised while an action runs wait here, in order */
	bool dispatching;
	enum sup_event current_event; /* the event whose action runs */
	bool launch_fatal;            /* the launch failed for good (a rewind the configuration forbids): FAILED */
	bool demotion_said;           /* status.error holds a demotion: kept once the job runs */
	struct event_queue queue;

	/* the stop: when it was asked (a second signal within a second is the same stop), whether a JVM
	 * ran then, whether it had to be killed, the timer of the wait for RUNNING (STOP_PENDING) */
	usec_t stop_requested_at, stop_deadline;
	int stop_signal;
	bool stop_had_jvm, jvm_force_killed;
	bool jvm_kill_sent; /* SIGKILL went to this JVM (the startup timeout, a hang): its exit is on the way */
	sd_event_source *stop_wait_timer;

	/* health */
	usec_t last_rest_ok;
	char *last_rest_problem; /* what Flink's REST API last answered instead of a job's details */
	int zero_slot_polls;
	int64_t completed_checkpoints;
	usec_t last_checkpoint_progress;
	struct {
		usec_t t;
		int64_t v;
	} restart_samples[RESTART_SAMPLES];
	unsigned n_restart_samples;
	bool volume_low;
	/* writes to the volume: the errno of the failing one (0: they work), what it was, how many failed, and
	 * the events that could not be appended yet (bounded; appended first once the volume takes writes) */
	int volume_errno;
	char *volume_failed_file;
	uint64_t volume_write_errors;
	struct strv pending_events;
	uint64_t events_dropped;
	/* the records' flush (sup_core.c): the worker thread that writes them, the defer source that hands them
	 * over at the end of a loop iteration, a flush running, status.json to be rendered again */
	struct worker *worker;
	sd_event_source *flush_source;
	bool flushing, status_dirty;
	uint64_t flush_started;           /* flushes handed to the worker so far */
	struct sync_waiter *sync_waiters; /* actions waiting for their records to be durable, in order */

	/* stop-with-savepoint */
	enum stop_purpose stop_purpose;
	char *savepoint_request;
	struct strv savepoints_before; /* the job's complete savepoints when the stop was asked for */
	bool savepoint_recorded;
	bool stop_savepoint_sent; /* a stop-with-savepoint went to this JVM: its savepoint may be on disk */
	uintptr_t stop_sp_gen;    /* the stop-with-savepoint whose request waits for its intent to be durable */

	/* savepoints and checkpoints asked for while the job runs (manual, periodic) */
	struct {
		bool active;
		enum snapshot_op_kind kind;
		const char *trigger; /* MANUAL, PERIODIC */
		char *request;
		sd_event_source *poll, *timeout;
	} op;
	bool want_savepoint, want_checkpoint; /* pending: taken when the job is RUNNING */
	const char *want_savepoint_trigger, *want_checkpoint_trigger;
	sd_event_source *periodic_savepoint_timer, *periodic_checkpoint_timer;

	/* the launch whose intent is on its way to the volume (sup_launch.c): EV_LAUNCH_DURABLE spawns it */
	struct {
		bool pending;
		unsigned gen;         /* a durability callback of a launch called off since is dropped */
		unsigned durable_gen; /* the launch whose intent is on the volume (EV_LAUNCH_DURABLE) */
		char *uri;            /* its restore point, as Flink is given it (NULL: empty state) */
		int job_id_r; /* the write of a new job id (a stateless start): < 0, the spawn must not happen */
		int files_r;  /* the write of Flink's configuration (conf/): < 0, the same */
		bool initial; /* the first launch of this supervisor: a JVM that cannot be executed is exit 3 */
	} launch;

	/* the job's jar, and its download when it is remote */
	struct artifact jar;
	struct {
		bool active;
		unsigned gen;
		int attempts;
		FILE *out;
		char *tmp;
		sd_event_source *retry;
		/* the jar (local or fetched) cannot be launched (missing, unreadable, no entry class): no JVM is
		 * started; the jar is looked at again every JAR_WAIT_USEC, and a reload starts over */
		sd_event_source *jar_wait;
		char *jar_problem;
	} fetch;

	/* the job's vertices as Flink last reported them */
	struct {
		struct vertex_info {
			char id[33];
			char *name;
			int parallelism, max_parallelism;
		} * v;
		size_t n;
	} vertices;
	enum job_state file_job_state; /* job.state as the file says it, before an API override */

	/* the HTTP endpoint and what /metrics counts */
	struct http_server *http;
	struct flinkproxy *proxy; /* Flink's web UI under /flink/ (src/supervisor/flinkproxy.c) */
	char *token;
	struct {
		uint64_t savepoints, savepoint_failures, checkpoints, checkpoint_failures, unauthorized;
		uint64_t scalings;
		int64_t flink_completed, flink_failed; /* Flink's own counts for the current JVM */
	} counters;
	bool notified_ready;
	sd_event_source *watchdog_timer;
	usec_t watchdog_usec;
	bool journald;

	/* the autoscaler (sup_autoscaler.c) */
	struct autoscaler *as;
	struct as_cycle *as_cycle;
	sd_event_source *as_timer;
	struct as_pmap as_pending;
	bool as_realizing;
	char *as_last_error;
	usec_t as_last_error_at;

	/* what the status page reads (sup_observe.c): the newest events, the autoscaler's per-cycle timeline, the
	 * page's Content-Security-Policy */
	struct recent recent_events, as_timeline;
	char *page_csp;
	/* class-data sharing (sup_cds.c): the archive this launch uses, or whether it records for a dump; the
	 * dump helper; what was said once */
	struct {
		bool checked, off;
		char *dir, *prefix, *java_real;
		char *archive;     /* the archive the current JVM was launched with */
		bool record;       /* the current JVM was launched with -XX:+RecordDynamicDumpInfo */
		bool init_error;   /* the current JVM said "Error occurred during initialization of VM" */
		bool ran;          /* the current JVM's job has been RUNNING */
		char *warning;     /* the JVM's first warning about the archive */
		unsigned dump_gen; /* the launch whose JVM dumps */
		unsigned dumps;    /* dumps started by this supervisor */
		pid_t helper;
		int helper_fd;
		char *tmp;
		usec_t dump_started;
		sd_event_source *dump_timer;
		struct strv said;
	} cds;

	/* configuration changes and rollback */
	char *launch_fingerprint;   /* what the running JVM was launched with */
	char *rejected_fingerprint; /* a spec rolled back from: not tried again until the file changes */
	char *stable_yaml;          /* the spec that last ran STABLE in this run, as kept in spec.stable.yaml */
	sd_event_source *inotify_source, *reload_timer, *readiness_timer;
	int inotify_fd;
	bool upgrading, rolling_back, rolled_back;
	bool closing; /* the loop is over (sup_free): done callbacks that come now act on nothing */
};

/* sup_core.c */
typedef void (*sup_sync_fn)(struct supervisor *s, uintptr_t arg);
struct sync_waiter {
	struct sync_waiter *next;
	uint64_t need; /* the flush whose end serves it */
	sup_sync_fn fn;
	uintptr_t arg;
};
void sup_event(struct supervisor *s, const char *type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void sup_alert(struct supervisor *s, const char *type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An event logged as a warning: something is off, nothing is lost (the job runs on) */
void sup_warning(struct supervisor *s, const char *type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records the status document: rewritten by the next flush when its text changed. */
void sup_write_status(struct supervisor *s);
/* Returns once every event and the status recorded so far are on the volume (or failed to get there). Waits on the
 * disk: only at the end (and before the loop runs); while it runs, sup_after_sync. */
void sup_sync(struct supervisor *s);
/* Runs fn(s, arg) on the loop once every event and the status recorded so far, and every file job handed to the
 * worker before, are on the volume (or failed to get there), without waiting: for an action whose intent must be
 * durable first (a launch's spawn, a stop-with-savepoint's request). fn runs from the flush's done callback, outside
 * any action; it checks that what it is for is still wanted (a stop may have come meanwhile). */
void sup_after_sync(struct supervisor *s, sup_sync_fn fn, uintptr_t arg);
/* Replaces path (its directory created when missing) with text (taken) on the worker thread; what names it in a
 * VolumeWriteFailed message. For files nothing waits on: the loop goes on at once. */
void sup_write_file(struct supervisor *s, const char *path, char *text, const char *what);
/* The directory of path (renamed or removed on the loop: at once for everyone who looks) fsynced on the worker
 * thread, before anything handed to it later: a demotion's rename is durable before the next launch's intent. */
void sup_sync_dir_of(struct supervisor *s, const char *path);
/* The worker thread and the flush source; sup_journal_free writes what is left and stops the thread. */
int sup_journal_setup(struct supervisor *s);
void sup_journal_free(struct supervisor *s);
void sup_set_job_state(struct supervisor *s, const char *state);
void sup_set_intent(struct supervisor *s, const char *intent);
void sup_exit(struct supervisor *s, int code);
sd_event_source *sup_disarm(sd_event_source *src);
int sup_arm(struct supervisor *s, sd_event_source **src, usec_t delay, sd_event_time_handler_t fn);
enum lifecycle_state sup_lifecycle(const struct supervisor *s);

/* supervisor.c */
/* Feeds one event to the lifecycle table. Raised while an action runs, it waits until that transition is
 * complete (actions never re-enter the dispatch). */
void sup_dispatch(struct supervisor *s, enum sup_event ev);
/* The states in which a JVM of the current launch may run and its job is followed through REST. */
bool sup_follows_job(const struct supervisor *s);
/* What must hold in every state (a JVM, a timer or a fetch pending...): NULL, or what does not. */
const char *sup_invariant_violation(const struct supervisor *s);
/* Frees everything a supervisor holds (also one only partly set up). */
void sup_free(struct supervisor *s);
usec_t sup_grace_period(struct supervisor *s);

/* sup_launch.c */
/* Renames a restore point that was given up to <dir>.unreadable (kept for a look; out of Flink's way, which
 * writes the next checkpoint of that id into its place, and out of the next flinklet's scan): checkpoints, and
 * savepoints of flinklet's own savepoint directory; a savepoint from elsewhere is not flinklet's to move. */
void sup_put_aside(struct supervisor *s, enum restore_kind kind, const char *point);
/* 0: the launch is pending (its intent on the way to the volume), or its jar is being fetched first */
int sup_launch(struct supervisor *s);
/* EV_LAUNCH_DURABLE: the pending launch's JVM is spawned. 0, or -errno (nothing runs). */
int sup_spawn(struct supervisor *s);
/* A stop, a suspend or a new launch calls off a pending launch: its JVM is never spawned. true: one was pending. */
bool sup_launch_cancel(struct supervisor *s);
/* The JVM's scratch directory (flinklet.scratch.dir, else <state dir>/tmp), and the removal of what earlier JVMs
 * left there, off the loop. */
void sup_scratch_setup(struct supervisor *s);
/* At exit, with the JVM gone: the JVM's scratch directory is removed. */
void sup_scratch_free(struct supervisor *s);
void sup_fetch_cancel(struct supervisor *s);
char *sup_launch_fingerprint(struct supervisor *s, const struct spec *spec);

/* sup_poll.c */
int sup_on_poll(sd_event_source *src, uint64_t usec, void *userdata);
void sup_poll_now(struct supervisor *s); /* a job-details poll at once (a stop while STARTING asks Flink) */
/* A JVM was launched: the next poll one startup poll interval from now, with fresh request timeouts. */
void sup_poll_launched(struct supervisor *s);
/* flinklet.rest.startup-poll-interval while a JVM starts (STARTING, STOP_PENDING), else flinklet.rest.poll-interval. */
usec_t sup_poll_interval(const struct supervisor *s);

/* sup_snapshot.c */
int sup_start_stop_with_savepoint(struct supervisor *s);
char *sup_find_stop_savepoint(struct supervisor *s);
void sup_record_savepoint(struct supervisor *s, const char *location, const char *trigger);
void sup_request_savepoint(struct supervisor *s, const char *trigger);
void sup_request_checkpoint(struct supervisor *s, const char *trigger);
void sup_snapshot_kick(struct supervisor *s); /* starts a pending one when the job is RUNNING */
void sup_snapshot_cancel(struct supervisor *s);
void sup_arm_periodic(struct supervisor *s);
void sup_retention(struct supervisor *s);
void sup_check_volume(struct supervisor *s);
/* Records the result of a write to the state volume (file: its name there): the first failure of a kind
 * is said once (log, status error, metric), the first success after failures says the volume works again. */
void sup_volume_write(struct supervisor *s, const char *file, int r);
void sup_check_nonces(struct supervisor *s);

/* sup_http.c */
int sup_http_start(struct supervisor *s);
/* One request to the endpoint: which route answers it, with what (the handler http.c calls; tests call it). */
void sup_http_route(struct supervisor *s, const struct http_request *req, struct http_response *resp);
void sup_http_stop(struct supervisor *s);
char *sup_metrics(struct supervisor *s);

/* sup_notify.c: systemd (sd_notify, watchdog) and journald */
void sup_notify_setup(struct supervisor *s);
void sup_notify_state(struct supervisor *s); /* after every transition */
void sup_notify_free(struct supervisor *s);

/* sup_autoscaler.c */
int sup_autoscaler_setup(struct supervisor *s);
/* The autoscaler's overrides in force, merged with the user's, for a new JVM's
 * pipeline.jobvertex-parallelism-overrides (malloc'd "vertex:p,..."); NULL when there are none. */
char *sup_autoscaler_launch_overrides(struct supervisor *s);
void sup_autoscaler_free(struct supervisor *s);

/* sup_observe.c: the status page (GET /) and the JSON it reads besides /status */
void sup_observe_setup(struct supervisor *s); /* after the state directory is open */
void sup_observe_free(struct supervisor *s);
void sup_observe_event(struct supervisor *s, const char *json_line);
/* After each cycle of the autoscaler: a timeline entry while the job runs with the autoscaler on. */
void sup_observe_autoscaler(struct supervisor *s, enum as_outcome out);
char *sup_events_json(struct supervisor *s);
char *sup_autoscaler_json(struct supervisor *s);
void sup_status_page(struct supervisor *s, struct http_response *resp);
/* sup_cds.c: class-data sharing (docs/operations.md, "Class-data sharing") */
struct launch;
struct reaped;
/* Before a launch: the archive to start from, or recording for a dump (sets l->cds_archive, l->cds_record). */
void sup_cds_prepare(struct supervisor *s, struct launch *l);
void sup_cds_line(struct supervisor *s, const char *line); /* a line of the JVM's output */
void sup_cds_running(struct supervisor *s);                /* the job is RUNNING */
/* The JVM exited: an archive that may have kept its job from RUNNING is set aside. */
void sup_cds_jvm_exited(struct supervisor *s, const struct reaped *r);
bool sup_cds_reaped(struct supervisor *s, const struct reaped *r); /* true: the dump helper's exit */
void sup_cds_free(struct supervisor *s);

/* sup_reload.c */
/* job.state from the API: kept in <state dir>/job-state.override by the worker thread, then applied (an event,
 * EV_SUSPEND or EV_RESUME) and, with x, the request answered 202: nothing is acted on or promised before it is durable.
 */
void sup_set_desired_state(struct supervisor *s, enum job_state state, const char *source, struct http_exchange *x);
void sup_apply_desired_state(struct supervisor *s, enum job_state state, const char *source);
void sup_apply_state_override(struct supervisor *s, struct spec *spec);
int sup_reload_setup(struct supervisor *s);
void sup_reload(struct supervisor *s, const char *why);
void sup_keep_stable_spec(struct supervisor *s);
struct spec *sup_load_stable_spec(struct supervisor *s);
void sup_reload_free(struct supervisor *s);

#endif

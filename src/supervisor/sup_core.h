/* sup_core: the supervisor's context and its core, shared by its files. The context is a small core (the loop,
 * the spec, the state and the dispatch's queue, the job's identity, the records) and one sub-struct per part. Which
 * file owns (alone writes) which sub-struct, and which parts each may call, is docs/architecture.md's table under
 * "Each part owns its state", the one copy of it; tests/static/test_layout.py holds the files to it. Not for use
 * outside the supervisor. */
#ifndef FLINKLET_SUP_CORE_H
#define FLINKLET_SUP_CORE_H

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
#include "membudget.h"
#include "lifecycle.h"
#include "log.h"
#include "pollchain.h"
#include "recent.h"
#include "rescales.h"
#include "rest.h"
#include "snapshots.h"
#include "status.h"
#include "supervisor.h"
#include "worker.h"

#define RESTART_SAMPLES 256
/* the timers that may be armed as deadlines on the supervisor's own time (sup_arm_deadline) */
#define SUP_DEADLINES_MAX 8
/* the longest cause of a failure flinklet quotes in an event and the status error (the JVM's output, Flink's root
 * exception) */
#define SUP_CAUSE_MAX 400

/* Why the JVM is being stopped: what happens once it is gone. */
enum stop_purpose { STOP_EXIT, STOP_SUSPEND, STOP_UPGRADE, STOP_ROLLBACK };
/* What a stop is for, as the events and the intent say it: "shut down", "suspend", "upgrade", "roll back". */
const char *stop_purpose_text(enum stop_purpose p);

enum snapshot_op_kind { SNAP_SAVEPOINT, SNAP_CHECKPOINT };

/* The parts' state: each sub-struct is written only by the file named with it (docs/architecture.md, "Each part
 * owns its state"). */

/* launch (sup_launch.c): the JVM, the jar */
struct sup_launch {
	pid_t jvm_pid;
	struct jvmout *jvm_out; /* the JVM's stdout and stderr */
	unsigned gen;
	sd_event_source *startup_timer;
	bool startup_timed_out;
	bool startup_extended; /* the startup timeout was extended once: the job was visibly restoring */
	usec_t spawned_at;     /* when this JVM was started (sup_now) */
	char *start_cause;     /* the cause the JVM printed when it failed to start (the first line of it) */
	char *exit_cause;      /* the cause the last JVM printed before it ended, whenever it ended (NULL: none) */
	bool kill_sent;        /* SIGKILL went to this JVM (the startup timeout, a hang): its exit is on the way */
	bool first_start, fresh_start, next_fresh;
	char *fingerprint;          /* what the running JVM was launched with (its job: the last submitted to it) */
	char finished_digest[65];   /* a FINISHED job's (sup_launch_finished_record), "" none or not known yet */
	enum state_backend backend; /* the running JVM's state backend: it decides the savepoint formats it can take */

	/* the launch whose intent is on its way to the volume: EV_LAUNCH_DURABLE spawns it */
	struct {
		bool pending;
		unsigned gen;         /* a durability callback of a launch called off since is dropped */
		unsigned durable_gen; /* the launch whose intent is on the volume (EV_LAUNCH_DURABLE) */
		char *uri;            /* its restore point, as Flink is given it (NULL: empty state) */
		int job_id_r; /* the write of a new job id (a stateless start): < 0, the spawn must not happen */
		int files_r;  /* the write of Flink's configuration (conf/): < 0, the same */
		bool initial; /* the first launch of this supervisor: a JVM that cannot be executed is exit 3 */
		/* counted in status.jvm_starts with its intent (before the JVM runs); taken back when the launch is
		 * called off or its JVM cannot be executed */
		bool counted;
		/* memory tuning's settings for it (tuned: src/supervisor/sup_memtune.c gave some) */
		bool tuned;
		struct membudget_tuning memory;
		/* the standby JVM takes it (sup_standby.c) rather than a spawn */
		bool standby;
	} spawn;

	/* the job's jar, and its download when it is remote */
	struct artifact jar;
	/* the job's SQL script when spec.job.sqlScript is remote (sql.remote), and its download */
	struct artifact sql;
	/* the jar cannot be launched (missing, unreadable, no entry class): no JVM is started; the jar is looked at
	 * again every JAR_WAIT_USEC, and a reload starts over */
	sd_event_source *jar_wait;
	char *jar_problem;
};

/* scratch (sup_scratch.c): the JVM's local scratch directory */
struct sup_scratch {
	char *dir, *tmp_dir; /* flinklet.scratch.dir (local), and the JVM's directory in it (io.tmp.dirs) */
	int64_t warned_need; /* the scratch's need a ScratchSpaceLow warning last named (0: none) */
};

struct supervisor;

/* keepjvm (sup_keepjvm.c): a job-only upgrade keeps the JVM (issue 38): the launcher's standard input, flinklet's
 * control channel to it (java/launcher LauncherControl; -1: none), "hold" sent on it before the upgrade's
 * stop-with-savepoint (the JVM stays when the job ends), the JVM idle between two jobs (its launcher said the job
 * ended and its MiniCluster is closed: no job runs in it; the launch of the upgraded spec is submitted to it), and
 * what the running JVM itself was started with (sup_keepjvm_fingerprint) */
struct sup_keepjvm {
	int control_fd;
	bool hold, idle;
	char *fingerprint;
};

/* standby (sup_standby.c): flinklet.recovery.standby-jvm (issue 38, item 4): a second launcher JVM started once the
 * job is RUNNING, with no job and no port, which takes a dead JVM's restore instead of a spawn. Its pid (0: none),
 * its control channel (the launcher's standard input), its output, what it was started with (the fingerprint of
 * sup_keepjvm_fingerprint, its memory and class-data-sharing archive), its own directory in the scratch (the RPC
 * system's jar it loads ahead), whether its launcher said it waits; the JVM that was a standby and now runs the job
 * (its directory goes when it exits); the timer of the next standby, and how many died in a row (its backoff). */
struct sup_standby {
	pid_t pid;
	int control_fd;
	struct jvmout *out;
	char *fingerprint, *archive, *dir;
	bool tuned;
	struct membudget_tuning memory;
	bool ready;
	usec_t started_at;
	pid_t job_pid;
	char *job_dir;
	unsigned n, failures;
	sd_event_source *timer;
};

/* fetch (sup_fetch.c): the downloads of a remote jar (s->launch.jar) and a remote SQL script (s->launch.sql), one
 * after the other, and the checks of the cached ones; ready launches the JVM once both are in place */
struct sup_fetch {
	bool active;
	const struct artifact *artifacts[2]; /* the launch's jar and SQL script (s->launch's) */
	int which;                           /* the one fetched or checked: 0 the jar, 1 the SQL script */
	char sql_sha256[65];                 /* the remote SQL script's, once split and checked ("": not yet) */
	unsigned gen;
	int attempts;
	FILE *out;
	char *tmp;
	sd_event_source *retry;
	int (*ready)(struct supervisor *s);
};

/* memtune (sup_memtune.c): memory tuning's own count (its settings and what runs are in the status document) */
struct sup_memtune {
	int tuned_failures; /* tuned JVMs in a row that ended on their own before the next evaluation */
	bool relaunching;   /* a MemoryTuningRelaunch's upgrade is under way (until the next launch) */
	/* the recommended heap whose relaunch was aborted (UpgradeAborted): no relaunch again until a recommendation
	 * moves the heap by relaunch-above from it, or the file is reloaded (0: none) */
	uint64_t held_heap;
};

/* restore (sup_restore.c): the restore points: those given up on evidence (demoted), what this launch restores,
 * whether it got as far as restoring, the evidence that Flink cannot read it, how many launches in a row failed
 * on it */
struct sup_restore {
	struct strv failed_points, reported_skips;
	char *path;
	enum restore_kind kind;
	int64_t id;  /* its checkpoint id (the _metadata header); -1 with no restore point */
	bool claim;  /* restored in claim mode: a checkpoint, or flinklet's own native stop savepoint */
	bool legacy; /* a savepoint not claimed, with the changelog state backend: legacy mode (FLINK-40476) */
	bool reached;
	struct restorelog scan;
	char *evidence;
	char *fail_path;
	unsigned fail_count;
	char *demoted_note; /* said with the next launch (STATUS_ERR_DEMOTED): which point was given up, and why */
	bool fatal;         /* the launch must not happen (a rewind the configuration forbids): FAILED */
	/* what gates the claim of the next launch: the Flink version a running JVM reported (GET /config; NULL: none
	 * yet, or unreadable) and the jars it ran; the jars of this launch; the JVM (launch generation) last asked */
	char *flink_reported, *lib_reported, *lib_launched;
	unsigned version_gen;
	bool version_asking;
};

/* poll (sup_poll.c): following the job through Flink's REST API, and its health */
struct sup_poll {
	struct poll_chains chains; /* the polls of Flink's REST API in flight */
	sd_event_source *timer;
	usec_t last_rest_ok; /* when this JVM's REST API last answered (sup_now; 0: not yet) */
	/* polls of this JVM that went out (or were skipped, with POLL_CHAINS_MAX in flight) since its REST API last
	 * answered: the hang check counts polls, not time (poll_hang_polls), so a stall of the supervisor, which
	 * sends none, never reads as the JVM's silence */
	unsigned unanswered;
	char *last_rest_problem; /* what Flink's REST API last answered instead of a job's details */
	int zero_slot_polls;
	int64_t completed_checkpoints;
	usec_t last_checkpoint_progress; /* sup_now */
	/* this JVM's: its last checkpoint completed, the last restart of the job inside it (numRestarts up, or a
	 * failover seen), numRestarts as last polled (an upgraded spec's trial: sup_reload_judge) */
	usec_t checkpoint_completed_at, restarted_at;
	int64_t jvm_restarts;
	bool progress_stalled; /* CheckpointsStalled said (STATUS_ERR_PROGRESS): no checkpoint in the window */
	/* what the stop's estimate reads (stopfit): the newest checkpoint's full state size and duration, and the
	 * throughput of the newest savepoint Flink reported (bytes per second; 0: none yet) */
	bool sizes_known;
	int64_t state_bytes, checkpoint_ms;
	double savepoint_bytes_per_sec;
	struct {
		usec_t t;
		int64_t v;
	} restart_samples[RESTART_SAMPLES];
	unsigned n_restart_samples;
	int64_t flink_completed, flink_failed; /* Flink's own counts for the current JVM */
	/* the job's failures in the current JVM, as Flink's exception history tells them (asked while the job fails):
	 * the newest one's time and root cause, whether the job's end was said (JobFailed); a failover's status error
	 * (STATUS_ERR_FAILOVER) is cleared once every task runs again */
	int64_t failure_ts;
	char *failure;
	bool failed_said;
	/* the job's vertices as Flink last reported them */
	struct {
		struct vertex_info {
			char id[33];
			char *name;
			int parallelism, max_parallelism;
		} * v;
		size_t n;
	} vertices;
};

/* snapshot (sup_snapshot.c): savepoints and checkpoints, the stop's savepoint, retention, the volume's space */
struct sup_snapshot {
	/* stop-with-savepoint */
	char *savepoint_request;
	struct strv savepoints_before; /* the job's complete savepoints when the stop was asked for */
	int64_t ckpt_before;           /* the job's newest checkpoint on the volume then (-1: none) */
	int64_t stop_savepoint_id;     /* the stop's savepoint's checkpoint id once recorded (-1: unknown) */
	bool savepoint_recorded;
	bool stop_savepoint_sent; /* a stop-with-savepoint went to this JVM: its savepoint may be on disk */
	uintptr_t stop_sp_gen;    /* the stop-with-savepoint whose request waits for its intent to be durable */
	const char *stop_format;  /* its format: NATIVE or CANONICAL (spec_savepoint_format) */
	sd_event_source *savepoint_timer, *savepoint_poll_timer;
	usec_t stop_until; /* when the stop's savepoint must be done (monotonic; sup_stop.c sets it) */
	/* savepoints and checkpoints asked for while the job runs (manual, periodic) */
	struct {
		bool active;
		enum snapshot_op_kind kind;
		const char *trigger; /* MANUAL, PERIODIC */
		const char *format;  /* a savepoint's: NATIVE or CANONICAL */
		char *request;
		sd_event_source *poll, *timeout;
	} op;
	bool want_savepoint, want_checkpoint; /* pending: taken when the job is RUNNING */
	const char *want_savepoint_trigger, *want_checkpoint_trigger;
	sd_event_source *periodic_savepoint_timer, *periodic_checkpoint_timer;
	bool volume_low;
	uint64_t savepoints, savepoint_failures, checkpoints, checkpoint_failures; /* /metrics */
	/* periodic ones failing in a row, by kind (SNAP_SAVEPOINT, SNAP_CHECKPOINT): the first is said, the rest logged
	 */
	unsigned periodic_failed_in_row[2];
};

/* savepoints retention gives up, on their way off the volume (sup_dispose.c) */
struct sup_dispose {
	/* renamed *.disposing on the worker, then removed by a child process */
	struct disposal {
		struct disposal *next;
		char *location; /* as the history had it (or the leftover's path) */
		char *aside;    /* <savepoint>.disposing */
		char *from; /* the savepoint's path, renamed to aside once the history without it is on the volume */
		const char *why;
		bool renaming; /* the rename is on the worker (it frees the disposal when the loop is over) */
		pid_t pid;     /* the child that removes it; 0 while the rename is on its way */
	} * disposals;
};

/* stop (sup_stop.c): when it was asked (a second signal within a second is the same stop), whether a JVM ran
 * then, whether it had to be killed, the timer of the wait for RUNNING (STOP_PENDING), the budget's deadline */
struct sup_stop {
	enum stop_purpose purpose;
	usec_t requested_at, deadline;
	int signal;
	bool had_jvm, force_killed;
	bool job_finished; /* Flink had said the job FINISHED when the stop came: nothing to save, exit 0 */
	sd_event_source *kill_timer, *deadline_timer, *wait_timer;
	/* a stop on the next checkpoint (no savepoint fits the budget): the newest checkpoint flinklet knew of when it
	 * began, the one it stopped on, the poll and the share of the budget it has */
	bool on_checkpoint, checkpoint_done, checkpoint_asking;
	int64_t checkpoint_baseline, checkpoint_id;
	sd_event_source *checkpoint_poll, *checkpoint_timer;
	/* why the newest checkpoint Flink reported after the signal is not the stop's (not on the volume as Flink
	 * said): said once, and in the SavepointSkipped of a stop that gets no other */
	char *checkpoint_refused;
	/* when the JVM was asked to end (the stop savepoint done, or SIGTERM): its exit is timed (status stop_exit_ms)
	 */
	usec_t exit_asked_at;
};

/* reload (sup_reload.c): configuration changes and rollback */
struct sup_reload {
	char *rejected_fingerprint; /* a spec rolled back from: not tried again until the file changes */
	char *stable_yaml;          /* the spec that last ran STABLE in this run, as kept in spec.stable.yaml */
	sd_event_source *inotify_source, *reload_timer, *readiness_timer;
	int inotify_fd;
	bool upgrading, rolling_back, rolled_back;
	/* the trial of an upgraded (or rolled-back) spec: stable only once it makes progress (sup_reload.c) */
	struct {
		bool on;                /* launched, not stable yet */
		bool restarted;         /* Flink restarted the job inside a JVM of this spec, within the window */
		bool window_over;       /* its readiness window is over */
		bool said;              /* UpgradeUnstable or UpgradeNotStable said */
		usec_t since;           /* the spec's first launch: the window starts */
		usec_t jvm_since;       /* this JVM's launch */
		usec_t running_since;   /* RUNNING with every task since (0: not now) */
		usec_t restarted_at;    /* the last restart inside a JVM acted on (s->poll.restarted_at) */
		char *why;              /* the last reason it is not stable */
		sd_event_source *timer; /* the trial's time without checkpoints */
	} trial;
	/* where the upgraded spec started from: the rollback's restore point (never a checkpoint the new spec wrote) */
	struct {
		bool set;
		bool reject_pending; /* the rollback's launch puts aside every point of the job newer than it */
		char *path;          /* NULL: the upgraded spec started empty */
		int64_t id;
	} base;
	enum job_state file_job_state; /* job.state as the file says it, before an API override */
};

/* http (sup_http.c): the endpoint, its token, Flink's web UI under /flink/ */
struct sup_http {
	struct http_server *server;
	struct flinkproxy *proxy; /* src/supervisor/flinkproxy.c */
	char *token;
	uint64_t unauthorized; /* /metrics */
};

/* notify (sup_notify.c): systemd and journald */
struct sup_notify {
	bool notified_ready;
	sd_event_source *watchdog_timer;
	usec_t watchdog_usec;
	bool journald;
};

/* autoscaler (sup_autoscaler.c) */
struct sup_autoscaler {
	struct autoscaler *as;
	struct as_cycle *cycle;
	struct as_hook_run *hook; /* the scaling hook answering the cycle's proposal; NULL: none */
	sd_event_source *timer;
	struct as_pmap pending;
	bool realizing;
	char *last_error;
	usec_t last_error_at;
	uint64_t scalings; /* /metrics */
};

/* observe (sup_observe.c): what the status page reads: the newest events, the autoscaler's per-cycle timeline, the
 * page's Content-Security-Policy */
struct sup_observe {
	struct recent events, timeline;
	char *page_csp;
};

/* rescales (sup_rescales.c): Flink's own rescale history (Flink 2.3+), as its REST API last gave it */
struct sup_rescales {
	struct rescales list;  /* newest first, with the details asked since */
	unsigned list_gen;     /* the launch whose Flink gave the list */
	bool asking;           /* a request is in flight (one at a time) */
	unsigned gen;          /* the launch it was asked of */
	char asked[33];        /* the rescale whose details are asked */
	usec_t next_at;        /* the next history request is due (monotonic) */
	uint64_t signature;    /* the vertices' parallelism when it was last asked */
	int64_t updated_ms;    /* when Flink last gave a good history (epoch ms; 0: never) */
	char *history_problem; /* what was wrong with the last history answer (NULL: nothing) */
	char *details_problem; /* ... with the last details answer */
};

/* class-data sharing (sup_cds.c): the archive this launch uses, or whether it records for a dump; the dump
 * helper; what was said once */
struct sup_cds {
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
};

/* sweep (sup_sweep.c): the leftovers of dead JVMs, found and set aside before a launch, removed by a child */
struct sup_sweep {
	bool finding;   /* the worker looks for them (a launch's sweep; the next launch does not start another) */
	pid_t remover;  /* the child removing them (0: none) */
	unsigned gen;   /* a done callback of a sweep the supervisor no longer waits for is dropped */
	uint64_t bytes; /* what the removal in progress frees */
	unsigned items; /* how many directories and files it removes */
	usec_t started; /* when it was found */
	uint64_t removed_bytes_total;
};

/* flinkmetrics (sup_flinkmetrics.c): Flink's own metrics through flinklet's /metrics: why they are off, the
 * loopback reporter's port given to the last launch, its scrape (one at a time), the last good one, the timeline of
 * the status page */
struct sup_flinkmetrics {
	char *off;         /* why flinklet serves none of Flink's metrics (NULL: it does) */
	int port;          /* the reporter's port the last launch was given (0: none) */
	struct rest *rest; /* a client of http://127.0.0.1:<rest_port> on the loop */
	int rest_port;
	struct rest_req *req; /* the scrape in flight (NULL: none) */
	unsigned req_gen;     /* the JVM (launch generation) it asks */
	usec_t req_at;        /* when it went out (monotonic) */
	struct strbuf body;   /* its answer so far */
	bool too_large;       /* it brought more than the cap */
	struct shbuf *text;   /* the last scrape, checked (NULL: it failed, or none yet), shared by the /metrics
	                       * responses that send it */
	struct shbuf *prev;   /* the scrape before, while a /metrics response still sends it (NULL: none) */
	bool held_said;       /* the log says a scrape waits for prev */
	unsigned text_gen;    /* the JVM it came from */
	int64_t text_ms;      /* when (epoch ms) */
	usec_t next_at;       /* the next scrape is due (monotonic) */
	char *problem;        /* what was wrong with the last scrape that failed (NULL: none since the last good) */
	bool said;            /* the problem is in the log (a good scrape says so then) */
	uint64_t failures;    /* scrapes that failed (/metrics) */
	struct recent timeline;
};

/* The supervisor: the core (written by supervisor.c, the table's driver, and sup_core.c, the records) and one
 * sub-struct per part. */
struct supervisor {
	/* the loop, the spec, the job */
	sd_event *event;
	struct spec *spec;     /* the desired spec (owned) */
	struct spec *launched; /* the spec the JVM was launched with: spec, or an older one (owned then) */
	const struct run_options *opts;
	char *state_dir, *conf_dir, *lib_dir, *ckpt_dir, *sp_dir;
	char *flink_version;
	char job_id[33];
	int lock_fd;
	/* the locks of the directories the sweep removes from (the checkpoint and the savepoint directory, one when
	 * they are the same), held for the supervisor's life: -1 when not taken */
	int dir_lock_fd[2];
	struct rest *rest; /* Flink's REST API (libcurl's multi handle on the loop) */

	/* the state and the dispatch: events raised while an action runs wait in the queue, in order */
	enum sup_state state;
	int exit_code;
	bool dispatching;
	enum sup_event current_event; /* the event whose action runs */
	struct event_queue queue;
	bool closing; /* the loop is over (sup_free): done callbacks that come now act on nothing */

	/* restarts (supervisor.c) */
	unsigned consecutive_failures;
	bool restarted_at_once; /* the first of these failures was restarted without a backoff */
	usec_t stable_since;    /* when the job last began to run (sup_now) */
	sd_event_source *backoff_timer;

	/* the records (sup_core.c): the status document, the events, and writes to the volume: the errno of the
	 * failing one (0: they work), what it was, how many failed, and the events that could not be appended yet
	 * (bounded; appended first once the volume takes writes) */
	struct status status;
	char *last_written;
	int volume_errno;
	char *volume_failed_file;
	uint64_t volume_write_errors;
	struct strv pending_events;
	uint64_t events_dropped;
	/* the records' flush: the worker thread that writes them, the defer source that hands them over at the end
	 * of a loop iteration, a flush running, status.json to be rendered again */
	struct worker *worker;
	sd_event_source *flush_source;
	bool flushing, status_dirty;
	bool final_sync;                  /* the exit's bounded flush runs: a flush's end does not start another */
	uint64_t flush_started;           /* flushes handed to the worker so far */
	struct sync_waiter *sync_waiters; /* actions waiting for their records to be durable, in order */
	struct strv volume_busy;          /* paths a rename or unlink on the worker is on its way for */

	/* the supervisor's own time (sup_core.c): a heartbeat of the loop; a beat far later than due is a stall of the
	 * supervisor itself (its container paused, SIGSTOP, a debugger, a starved host): said (SupervisorStalled), left
	 * out of sup_now(), and every deadline armed with sup_arm_deadline moved later by as long */
	struct {
		sd_event_source *heartbeat;
		usec_t last_beat; /* when the heartbeat last ran (monotonic; 0: not yet) */
		usec_t stalled;   /* the stalls so far, in total */
		uint64_t stalls;  /* how many (/metrics) */
		sd_event_source **deadlines[SUP_DEADLINES_MAX]; /* the timers sup_arm_deadline armed (their fields) */
		unsigned n_deadlines;
	} clock;

	struct sup_launch launch;
	struct sup_scratch scratch;
	struct sup_keepjvm keepjvm;
	struct sup_standby standby;
	struct sup_fetch fetch;
	struct sup_restore restore;
	struct sup_poll poll;
	struct sup_snapshot snapshot;
	struct sup_dispose dispose;
	struct sup_stop stop;
	struct sup_reload reload;
	struct sup_http http;
	struct sup_notify notify;
	struct sup_autoscaler autoscaler;
	struct sup_observe observe;
	struct sup_rescales rescales;
	struct sup_cds cds;
	struct sup_sweep sweep;
	struct sup_memtune memtune;
	struct sup_flinkmetrics flinkmetrics;
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
/* Whether text (a rendering of the status document) is what status.json holds now: written, and nothing newer
 * waiting to be (GET /status says so in its Flinklet-Status-Recorded header, for `--wait`). */
bool sup_status_recorded(const struct supervisor *s, const char *text);
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
/* A rename of from to `to` (to NULL: an unlink of from) and the fsync of the directory, on the worker thread, after
 * everything handed to it before and before everything handed to it later (a demotion's rename is on the volume
 * before the next launch's intent); done(s, r, arg) runs on the loop afterwards with 0 or -errno (done NULL: a
 * failure other than ENOENT is logged). Until then sup_volume_busy(s, from) is true: a choice among the directory's
 * entries made meanwhile passes from over. Never waits on the volume. */
typedef void (*sup_volume_done_fn)(struct supervisor *s, int r, void *arg);
void sup_volume_rename(struct supervisor *s, const char *from, const char *to, sup_volume_done_fn done, void *arg);
void sup_volume_unlink(struct supervisor *s, const char *path, sup_volume_done_fn done, void *arg);
/* Whether a rename or unlink of path (any spelling of it) is on its way (sup_volume_rename). */
bool sup_volume_busy(const struct supervisor *s, const char *path);
/* The worker thread and the flush source; sup_journal_free writes what is left and stops the thread. */
int sup_journal_setup(struct supervisor *s);
void sup_journal_free(struct supervisor *s);
/* Records the result of a write to the state volume (file: its name there): the first failure of a kind
 * is said once (log, status error, metric), the first success after failures says the volume works again. */
void sup_volume_write(struct supervisor *s, const char *file, int r);
/* The status document's error of source src (status.h: each source has one owner part, which alone sets and clears
 * it; tests/static/test_layout.py checks the calls): set to message, or cleared. The document's `error` is the most
 * important one set, `errors` lists them all. Nothing is written until the status is recorded next. */
void sup_error_set(struct supervisor *s, enum status_error_source src, const char *message);
void sup_error_clear(struct supervisor *s, enum status_error_source src);
/* The message of source src (NULL: none): borrowed, good until it is set or cleared next. */
const char *sup_error(const struct supervisor *s, enum status_error_source src);
/* The status document's warning of source src (status.h: one owner part each, which alone sets and clears it;
 * tests/static/test_layout.py checks the calls): in force with message (the warning event says it too, as its owner
 * decides), or over. `warnings` lists those in force; nothing is written until the status is recorded next. */
void sup_warning_set(struct supervisor *s, enum status_warning_source src, const char *message);
void sup_warning_clear(struct supervisor *s, enum status_warning_source src);
/* The core's fields of the status document (status.c's field table names each field's one owner): the job's state as
 * Flink said it (updateTime: when it changed), or none known (a launch on its way, a new job: updateTime stays); the
 * intent (recorded); the lifecycle state; the job's id (s->job_id, a new one after a stateless start). */
void sup_set_job_state(struct supervisor *s, const char *state);
void sup_forget_job_state(struct supervisor *s);
void sup_set_intent(struct supervisor *s, const char *intent);
void sup_set_lifecycle(struct supervisor *s, enum lifecycle_state ls);
void sup_record_job_id(struct supervisor *s);
void sup_exit(struct supervisor *s, int code);
sd_event_source *sup_disarm(sd_event_source *src);
/* Arms *src (disarmed first) to run fn once delay from now on CLOCK_MONOTONIC: for delays, and for budgets the
 * platform keeps on the wall clock (the stop's shutdown budget, the JVM's grace period), which a stall of the
 * supervisor uses up as any time does. */
int sup_arm(struct supervisor *s, sd_event_source **src, usec_t delay, sd_event_time_handler_t fn);
/* As sup_arm, for a deadline that judges the JVM or the job (the startup timeout, the readiness timeout of an
 * upgrade, a snapshot's timeout): it runs on the supervisor's own time, so a stall of the supervisor (it was not
 * running, so it could not see the job come up) moves it later by as long as the stall. src must be a field of the
 * supervisor (at most SUP_DEADLINES_MAX of them). */
int sup_arm_deadline(struct supervisor *s, sd_event_source **src, usec_t delay, sd_event_time_handler_t fn);
/* The supervisor's own time: CLOCK_MONOTONIC less the stalls of the supervisor noticed so far. What a window
 * that judges the JVM or the job measures on (checkpoint progress, the stable period, a restore's cap), so that
 * the time the supervisor itself did not run never counts against the JVM. */
usec_t sup_now(const struct supervisor *s);
/* The heartbeat (sup_core.c), and its end. */
int sup_clock_setup(struct supervisor *s);
void sup_clock_free(struct supervisor *s);
enum lifecycle_state sup_lifecycle(const struct supervisor *s);
/* An upgraded (or rolled-back) spec on trial with rollback on (read from s->reload): the point its rollback would
 * restore stays (upgrade_base: kept from the sweep), and no launch restores in claim mode (on_trial), which would let
 * Flink dispose of it. */
const char *sup_upgrade_base(const struct supervisor *s);
bool sup_upgrade_on_trial(const struct supervisor *s);
/* The one entry point into the lifecycle table (defined by its driver, supervisor.c), and the one function of the
 * driver a part calls: ev is dispatched now, or, raised while an action runs, waits in the queue until that
 * transition is complete (actions never re-enter the dispatch). Every part, the driver's own sources and the tests
 * raise events through it alone. Dispatched now: when it returns, the action ran and may have changed the caller's
 * own state, so a part raises last (docs/architecture.md, "One owner of transitions"). */
void sup_raise(struct supervisor *s, enum sup_event ev);
/* Replaces the desired spec (n: taken; or s->launched, to go back to it); the launched one stays alive while the JVM
 * runs it. */
void sup_adopt_spec(struct supervisor *s, struct spec *n);
/* The states in which a JVM of the current launch may run and its job is followed through REST. */
bool sup_follows_job(const struct supervisor *s);

#endif

/* status: the status document (contract section 4): what the supervisor knows about its job, in the
 * field names of the operator's FlinkDeployment status. Rendered to JSON for status.json, GET /status
 * and `flinklet status --json`, and read back from status.json after a restart. */
#ifndef FLINKLET_STATUS_H
#define FLINKLET_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cJSON;

enum lifecycle_state {
	LIFECYCLE_CREATED,
	LIFECYCLE_DEPLOYED,
	LIFECYCLE_STABLE,
	LIFECYCLE_UPGRADING,
	LIFECYCLE_SUSPENDED,
	LIFECYCLE_ROLLING_BACK,
	LIFECYCLE_ROLLED_BACK,
	LIFECYCLE_FAILED, /* the last (/metrics lists every state up to it) */
};
const char *lifecycle_to_string(enum lifecycle_state s);
int lifecycle_from_string(const char *s, enum lifecycle_state *ret);

struct snapshot_ref {
	char *location; /* NULL: none */
	int64_t id;     /* checkpoint id, -1 when unknown */
	int64_t time_ms;
	char *trigger_type; /* savepoints: UPGRADE, MANUAL, PERIODIC, SHUTDOWN ... */
	char *format_type;  /* savepoints: NATIVE or CANONICAL; NULL: unknown (rendered UNKNOWN, as the operator's) */
	bool claimed;       /* a savepoint restored in claim mode: Flink's checkpoints own it (it may be gone) */
};

#define SAVEPOINT_HISTORY_MAX 64
#define CHECKPOINT_HISTORY_MAX 10
#define CLAIMED_SAVEPOINTS_MAX 64

/* Memory tuning (job.autoscaler.memory.tuning.*, src/config/memtune.h), in bytes; -1: none. */
struct status_memtuning {
	bool enabled;
	char *reason;                                 /* the recommendation ("heap 180m -> 96m, ..."), or why none */
	int64_t rec_heap, rec_managed, rec_metaspace; /* what the newest evaluation recommends */
	int64_t min_memory;                           /* the smallest spec.resources.memory holding the job */
	int64_t next_metaspace, next_managed, next_heap_floor; /* the settings the next launch uses */
	int64_t run_heap, run_managed, run_metaspace; /* the running JVM's tuned split (-1: launched untuned) */
	char *suspended;          /* why tuning is off (a tuned JVM died of memory); NULL: it is not */
	int64_t suspended_memory; /* spec.resources.memory then: tuning resumes once it changes */
};

/* Where an error of the status document comes from: one slot per source, each set and cleared by one part of the
 * supervisor only (its owner, named here; tests/static/test_layout.py holds the code to it). The order is the order of
 * importance: `error` is the message of the first source set, `errors` lists every one set, in this order
 * (docs/operations.md, "error and errors"). First what keeps flinklet from recording anything, then what ends the
 * job for good, what a stop lost, a rewind, why no JVM runs, the job's own failure, and last what is refused or
 * fails while the job runs on. */
enum status_error_source {
	STATUS_ERR_VOLUME,         /* sup_core.c: the state volume does not take writes */
	STATUS_ERR_RESTORE,        /* sup_restore.c: no restore point may be used (a rewind forbidden): FAILED */
	STATUS_ERR_CRASH_LOOP,     /* supervisor.c: flinklet.restart.max-attempts reached: FAILED */
	STATUS_ERR_STOP,           /* sup_stop.c: a stop ended without a savepoint (or the checkpoint it waited for) */
	STATUS_ERR_STOP_SAVEPOINT, /* sup_snapshot.c: the stop's savepoint failed */
	STATUS_ERR_DEMOTED,        /* sup_restore.c: a restore point was given up; an older one is restored */
	STATUS_ERR_LAUNCH,         /* supervisor.c: the JVM could not be started, or exited before the job ran */
	STATUS_ERR_JAR,            /* sup_launch.c: the job's jar cannot be launched */
	STATUS_ERR_FETCH,          /* sup_fetch.c: the job's jar could not be downloaded */
	STATUS_ERR_SQL_FETCH,    /* sup_fetch.c: the job's remote SQL script could not be downloaded, or was refused */
	STATUS_ERR_JOB,          /* sup_poll.c: the job FAILED (Flink's root exception), or was unhealthy */
	STATUS_ERR_CONFIG,       /* sup_reload.c: a configuration was rejected; the job runs on the old one */
	STATUS_ERR_SNAPSHOT,     /* sup_snapshot.c: a savepoint or checkpoint asked for while the job ran failed */
	STATUS_ERR_VOLUME_SPACE, /* sup_snapshot.c: below flinklet.volume.min-free-percent */
	STATUS_ERR_PROGRESS,     /* sup_poll.c: no checkpoint completed within the progress window while it runs */
	STATUS_ERR_FAILOVER,     /* sup_poll.c: the job failed and Flink restarts it (until every task runs) */
	STATUS_ERR_MAX
};
/* The source's name in `errors` (camelCase: "volume", "crashLoop", ...); "?" out of range. */
const char *status_error_source_name(enum status_error_source src);
/* The source of a name, or -EINVAL. */
int status_error_source_from_string(const char *name, enum status_error_source *ret);

/* Where a warning of the status document comes from: something is off while the job runs on (a warning event said
 * it), and it holds until its owner sees it over. One slot per source, each set and cleared by its owner only
 * (sup_warning_set, sup_warning_clear; tests/static/test_layout.py), listed in `warnings` in this order. */
enum status_warning_source {
	STATUS_WARN_SCRATCH_SPACE, /* sup_scratch.c: the scratch has less room than the state wants (ScratchSpaceLow) */
	STATUS_WARN_MAX
};
/* The source's name in `warnings` ("scratchSpace"), and the event that says it ("ScratchSpaceLow"); "?" out of
 * range. */
const char *status_warning_source_name(enum status_warning_source src);
const char *status_warning_event(enum status_warning_source src);
/* The source of a name, or -EINVAL. */
int status_warning_source_from_string(const char *name, enum status_warning_source *ret);

struct status_error {
	char *message;    /* NULL: this source has nothing to say */
	int64_t since_ms; /* when the message was set (epoch ms); kept while the same message is set again */
};

/* The document. Each field has one owner, the file of src/supervisor/ that alone writes it (status.c's field table
 * names it beside the field's place in the JSON, its kind and whether it carries over to the next run;
 * tests/static/test_layout.py holds the code to it): another part asks the owner's header. A field is added to the
 * table once: it renders, reads back, carries over and frees every field. */
struct status {
	enum lifecycle_state lifecycle;
	char *name;
	char job_id[33];
	char *job_state; /* Flink's JobStatus, or NULL before the job exists */
	int64_t start_time_ms, update_time_ms;
	int tasks_total, tasks_running, tasks_finished; /* finished: subtasks of bounded or split-less sources */
	struct snapshot_ref last_savepoint;
	struct snapshot_ref savepoint_history[SAVEPOINT_HISTORY_MAX];
	int n_savepoint_history;
	/* flinklet's own savepoints restored in claim mode, oldest first: out of the history (Flink's checkpoints own
	 * them and Flink disposes of them once subsumed); the sweep disposes of what a dead JVM left of them */
	struct snapshot_ref claimed_savepoints[CLAIMED_SAVEPOINTS_MAX];
	int n_claimed_savepoints;
	struct snapshot_ref last_checkpoint;
	/* Flink's full state size of the newest completed checkpoint it reported (bytes; -1: none yet): what a new
	 * JVM's RocksDB working directory holds once restored, read at the next start for the scratch's size check */
	int64_t state_size;
	/* checkpoints flinklet asked for (MANUAL, PERIODIC), newest last */
	struct snapshot_ref checkpoint_history[CHECKPOINT_HISTORY_MAX];
	int n_checkpoint_history;
	/* the trigger nonces already acted on; -1: none recorded yet (the first start records them) */
	int64_t savepoint_trigger_nonce, checkpoint_trigger_nonce;
	char *restored_kind; /* none | checkpoint | savepoint */
	char *restored_location;
	int64_t restored_id; /* the checkpoint id in its _metadata; -1: none or unknown */
	pid_t jvm_pid;
	pid_t standby_pid; /* the standby JVM (flinklet.recovery.standby-jvm); 0: none */
	/* JVM starts on this volume, by every flinklet that ran on it: counted with a launch's intent, so on the volume
	 * before the JVM runs (a launch called off, or one whose JVM could not be executed, is taken back). The
	 * restarts are the starts after the first (status_jvm_restarts). */
	int jvm_starts;
	int last_exit_code;   /* -1: null */
	int last_exit_signal; /* -1: null */
	/* how long the JVM took to end once a stop asked it to (its savepoint taken, or SIGTERM): the longest, halfway
	 * back to each shorter one; what a stop keeps back of its budget for the exit. -1: none seen yet */
	int64_t stop_exit_ms;
	char *flink_version;
	int rest_port;
	char *intent;               /* what the supervisor is about to do, persisted before it acts */
	char *autoscaler_overrides; /* JSON object {vertex: "parallelism"} */
	struct status_memtuning memory_tuning;
	/* how to reach the supervisor: its pid, HTTP endpoint and the file holding the API token */
	pid_t supervisor_pid;
	char *http_address;
	char *token_file;
	/* Flink's metrics in /metrics: "127.0.0.1:<port>" (the reporter the running JVM was given), or "off: <why>";
	 * NULL before the first launch */
	char *flink_metrics;
	/* the errors, one slot per source (status_error_set); error is the first one set, kept so by
	 * status_error_set (status_parse reads both as the document has them) */
	struct status_error errors[STATUS_ERR_MAX];
	char *error;
	/* the warnings in force, one slot per source (status_warning_set) */
	struct status_error warnings[STATUS_WARN_MAX];
};

void status_init(struct status *st);
/* JVM starts after the first on this volume: jvm.restarts, flinklet_jvm_restarts_total. */
int status_jvm_restarts(const struct status *st);
void status_free(struct status *st);
/* Sets the reference (its format_type to none: a savepoint's caller sets it after). */
void snapshot_ref_set(struct snapshot_ref *r, const char *location, int64_t id, int64_t time_ms, const char *trigger);
void snapshot_ref_free(struct snapshot_ref *r);
/* The next slot of a history of at most max entries, oldest first (*n of them in use): when it is full, the
 * oldest is freed and the rest move down one. Returns the (empty) slot at the end, *n counts it. */
struct snapshot_ref *snapshot_history_push(struct snapshot_ref *history, int *n, int max);
/* Takes entry i out of a history of *n entries (the later ones move down one): returns it, *n counts one less. */
struct snapshot_ref snapshot_history_take(struct snapshot_ref *history, int *n, int i);
void status_set_string(char **field, const char *value);
/* Sets the error of source src to message (NULL: clears it) at now_ms (its since, unless the same message stood
 * already), and error to the first source's message set. */
void status_error_set(struct status *st, enum status_error_source src, const char *message, int64_t now_ms);
/* No recommendation, no settings, nothing running tuned, not suspended. */
void status_memtuning_clear(struct status_memtuning *m);

/* Sets the warning of source src to message (NULL: clears it) at now_ms (its since, unless the same message stood
 * already). */
void status_warning_set(struct status *st, enum status_warning_source src, const char *message, int64_t now_ms);

struct cJSON *status_to_json(const struct status *st);
char *status_render(const struct status *st); /* pretty JSON with a trailing newline */
/* Reads a status document back (unknown fields ignored). Returns 0 or -EINVAL. */
int status_parse(const char *text, struct status *ret);
/* What the last run's document (old, read back by status_parse) hands on to this run's (st, fresh): the fields
 * its table marks carried over move from old to st (old keeps the rest; it is freed after). */
void status_carry_over(struct status *st, struct status *old);

#endif

/* lifecycle: the supervisor's state machine as data, in the manner of s6-supervise: one table of
 * (state x event) -> (action, next state, every state the action may end in). "What happens if the JVM dies while a
 * savepoint is in flight?" is answered by reading row SUP_SAVEPOINTING, column EV_JVM_EXITED_*. A cell not written
 * in the table is {ACT_NONE, SUP_SAME}: the event is ignored in that state. Actions that must choose return the state
 * they chose; the table holds the usual one (next) and every one they may choose (may): ACT_STOP (with or without a
 * savepoint, STOP_PENDING while STARTING, STOPPED with no JVM yet), ACT_RESTART (back off, or FAILED at the
 * crash-loop limit), ACT_STOPPED* (exit, stay SUSPENDED, or start the new spec, by why the stop was asked),
 * ACT_SAVEPOINT_ABANDON (keep running on the old spec when the last-state fallback is off); once a shutdown was asked
 * (EV_STOP) the narrower on_shutdown holds. The driver checks every transition against the table as it checks the
 * invariants (a violation is logged, and aborts under FLINKLET_STRICT=1). The supervisor starts in SUP_INITIAL and
 * EV_START takes it to its first state (a launch, or FINISHED, SUSPENDED, FAILED). A stop while STARTING in savepoint
 * mode waits in STOP_PENDING for RUNNING. A launch is pending while STARTING until its intent is on the volume: only
 * STARTING spawns on EV_LAUNCH_DURABLE, so a stop that came meanwhile (the state left STARTING) never spawns a JVM
 * afterwards. Each state maps to the contract's lifecycleState. */
#ifndef FLINKLET_LIFECYCLE_H
#define FLINKLET_LIFECYCLE_H

#include <stdbool.h>

#include "status.h"
#include "util.h"

enum sup_state {
	SUP_SAME,         /* in the table only: stay in the current state */
	SUP_STARTING,     /* JVM launched, job not yet RUNNING with every task running */
	SUP_RUNNING,      /* job RUNNING, every task running */
	SUP_BACKOFF,      /* JVM gone after a crash, waiting to start it again */
	SUP_SAVEPOINTING, /* stop-with-savepoint in flight (shutdown, suspend or upgrade) */
	SUP_STOPPING,     /* JVM told to terminate (SIGTERM, SIGKILL after the grace period) */
	SUP_STOP_PENDING, /* a stop came while STARTING: wait (inside the budget) for RUNNING, then savepoint */
	SUP_SUSPENDED,    /* job.state suspended: no JVM, on purpose; the supervisor stays up */
	SUP_FINISHED,     /* the job FINISHED; nothing runs, and nothing is started again */
	SUP_FAILED,       /* given up: crash-loop limit */
	SUP_STOPPED,      /* done; the loop exits */
	SUP_INITIAL,      /* set up, nothing decided yet: EV_START chooses the first state */
	SUP_STATE_MAX
};

enum sup_event {
	EV_JOB_RUNNING,        /* REST: RUNNING with every task running */
	EV_JVM_EXITED_OK,      /* the JVM exited 0: the job finished (or a stop-with-savepoint ended it) */
	EV_JVM_EXITED_ERROR,   /* the JVM exited non-zero on its own (a failed job, a failed restore) */
	EV_JVM_KILLED,         /* the JVM died from a signal (kill -9, OOM killer, health check) */
	EV_STARTUP_TIMEOUT,    /* not RUNNING within flinklet.startup.timeout */
	EV_UNHEALTHY,          /* a health check failed */
	EV_BACKOFF_DONE,       /* the restart delay is over */
	EV_STOP,               /* SIGTERM / SIGINT */
	EV_SAVEPOINT_DONE,     /* the stop-with-savepoint's savepoint completed */
	EV_SAVEPOINT_FAILED,   /* it failed, or its share of the budget ran out */
	EV_DEADLINE,           /* the shutdown budget ran out */
	EV_SUSPEND,            /* job.state became suspended (file, API) */
	EV_RESUME,             /* job.state became running again */
	EV_UPGRADE,            /* the spec changed in a way the JVM must be restarted for */
	EV_ROLLBACK,           /* an upgraded spec was not RUNNING within the readiness timeout */
	EV_LAUNCH_FAILED,      /* the JVM could not be started (the jar could not be fetched, exec failed) */
	EV_STOP_WAIT_OVER,     /* STOP_PENDING: the share of the budget for waiting for RUNNING is spent */
	EV_RESTORE_UNREADABLE, /* the JVM's output says Flink cannot read the restore point */
	EV_LAUNCH_DURABLE,     /* a pending launch's intent (restore point, events, new job id) is on the volume */
	EV_STOP_CHECKPOINT,    /* a stop that no savepoint fits: the next checkpoint it waited for completed */
	EV_START,              /* the supervisor is set up: the first state (launch, or a finished or suspended job) */
	EV_PROGRESS,           /* the poll saw a checkpoint complete or the job restart inside the JVM */
	EV_JVM_IDLE,           /* held for a job-only upgrade, the JVM's job ended and it waits for the next one */
	SUP_EVENT_MAX
};

enum sup_action {
	ACT_NONE,
	ACT_MARK_STABLE,       /* record RUNNING, disarm the startup timer, keep the spec as the last stable */
	ACT_FINISHED,          /* record FINISHED; exit with --exit-on-finish */
	ACT_RESTART,           /* back off and start again (or FAILED at the crash-loop limit) */
	ACT_START_FAILED,      /* the JVM died before RUNNING: the same restore point again, unless there is evidence
	                          that Flink cannot read it (or it failed max-failures times): then demote it */
	ACT_KILL_JVM,          /* SIGKILL the JVM; its exit brings the restart */
	ACT_LAUNCH,            /* choose the restore point, record the intent: the launch is pending until the intent is
	                          on the volume (EV_LAUNCH_DURABLE); the loop goes on meanwhile */
	ACT_RELAUNCH,          /* cancel the backoff and launch now (a new spec) */
	ACT_STOP,              /* shutdown: savepoint mode and RUNNING: stop-with-savepoint; otherwise terminate */
	ACT_SUSPEND,           /* the same stop, to stay up SUSPENDED afterwards */
	ACT_UPGRADE,           /* the same stop, to start the new spec afterwards */
	ACT_ROLLBACK,          /* terminate, to start the last stable spec afterwards */
	ACT_TERMINATE,         /* SIGTERM the JVM, SIGKILL after the grace period */
	ACT_KILL_NOW,          /* a second stop or the budget: SIGKILL at once */
	ACT_SAVEPOINT_RECORD,  /* record the savepoint; the JVM ends by itself */
	ACT_SAVEPOINT_ABANDON, /* say so loudly; then terminate (last-state fallback) or keep running */
	ACT_STOPPED,           /* the JVM is gone: exit, stay SUSPENDED, or start the new spec */
	ACT_STOPPED_SAVEPOINT, /* the same, after finding the stop-with-savepoint's savepoint on disk */
	ACT_GO_SUSPENDED,      /* no JVM runs: cancel the backoff and stay SUSPENDED */
	ACT_EXIT,              /* nothing runs: record the stop and exit */
	ACT_STOP_RUNNING,      /* STOP_PENDING and now RUNNING: record it and stop with a savepoint */
	ACT_SPAWN,             /* the pending launch's intent is durable: spawn the JVM (its failure backs off) */
	ACT_JUDGE,             /* an upgraded (or rolled-back) spec on trial: stable now, or rolled back */
	ACT_START,             /* the first state: a job that FINISHED stays so (unless the spec changed since: a new
	                          run), a suspended one SUSPENDED; otherwise the first launch (FAILED, exit 1 or 3,
	                          when it must not or cannot happen) */
	ACT_NEW_RUN,           /* a changed spec for a job that FINISHED: launch it as a new job, empty (or from
	                          initialSavepointPath), with no savepoint, restore of the finished run, or rollback */
	ACT_JVM_IDLE,          /* the upgrade's savepoint ended the job and the JVM stays: the upgraded spec's launch is
	                          submitted to it (or, when it cannot be, the JVM is let go and exits) */
	SUP_ACTION_MAX
};

/* A set of states: bit 1u << state. */
#define SUP_STATE_BIT(st) (1u << (unsigned)(st))

struct transition {
	enum sup_action action;
	enum sup_state next;  /* the usual outcome; SUP_SAME: stay */
	unsigned may;         /* every state the action may end in, next among them (SUP_SAME's bit: the row's) */
	unsigned on_shutdown; /* the same once a shutdown was asked (EV_STOP), when narrower; 0: may */
};

extern const struct transition lifecycle_table[SUP_STATE_MAX][SUP_EVENT_MAX];

/* What the supervisor has, for the consistency check after every dispatch (src/supervisor/supervisor.c fills it in). */
struct sup_facts {
	bool jvm;            /* a JVM of the current launch runs */
	bool jvm_idle;       /* that JVM runs no job: held between two jobs of a job-only upgrade (or let go then) */
	bool launch_pending; /* a launch waits for its intent to reach the volume (no JVM yet) */
	bool fetch;          /* the job's jar is being fetched or checked */
	bool fetch_retry, jar_wait, backoff_timer, startup_timer, stop_wait_timer, deadline_timer, kill_timer;
	bool kill_sent;    /* SIGKILL went to the JVM (the startup timeout, a hang): its exit is on the way */
	bool force_killed; /* the shutdown budget's SIGKILL */
};

/* What must hold in state st (a JVM, a pending launch, a fetch or a timer...): NULL, or what does not. A launch is
 * pending only while STARTING, and never with a JVM: every stop, suspend or new spec that comes meanwhile calls it
 * off before it leaves STARTING. */
const char *lifecycle_invariant(enum sup_state st, const struct sup_facts *f);

/* The states dispatching ev in state `from` may end in (SUP_STATE_BIT of each; SUP_SAME resolved to from; an ignored
 * cell: from), once a shutdown was asked when shutdown (the stop's purpose is then to exit). */
unsigned lifecycle_outcomes(enum sup_state from, enum sup_event ev, bool shutdown);

const char *sup_state_name(enum sup_state s);
const char *sup_event_name(enum sup_event e);
const char *sup_action_name(enum sup_action a);
enum lifecycle_state sup_state_lifecycle(enum sup_state s);

/* The events raised while a transition runs, dispatched in order once it is complete (a bounded FIFO). */
#define EVENT_QUEUE_MAX 16
struct event_queue {
	enum sup_event ev[EVENT_QUEUE_MAX];
	unsigned head, len;
};
/* Appends ev; false (nothing changed) when the queue is full. */
bool event_queue_push(struct event_queue *q, enum sup_event ev);
/* Takes the oldest event into *ev; false when there is none. */
bool event_queue_pop(struct event_queue *q, enum sup_event *ev);

/* Restart delay for the n-th consecutive failure (n >= 1): initial * multiplier^(n-1), at most max. */
usec_t backoff_delay(unsigned n, usec_t initial, usec_t max, double multiplier);

#endif

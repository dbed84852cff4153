/* lifecycle: the supervisor's state machine as data, in the manner of s6-supervise: one table of
 * (state x event) -> (action, next state). "What happens if the JVM dies while a savepoint is in
 * flight?" is answered by reading row SUP_SAVEPOINTING, column EV_JVM_EXITED. Actions that must choose
 * (stop with or without a savepoint; back off or give up) return the state they chose; the table holds
 * the usual one. Each state maps to the contract's lifecycleState. */
#ifndef FLINKLET_LIFECYCLE_H
#define FLINKLET_LIFECYCLE_H

#include "status.h"
#include "util.h"

enum sup_state {
	SUP_STARTING,     /* JVM launched, job not yet RUNNING with every task running */
	SUP_RUNNING,      /* job RUNNING, every task running */
	SUP_BACKOFF,      /* JVM gone after a crash, waiting to start it again */
	SUP_SAVEPOINTING, /* stop-with-savepoint in flight */
	SUP_STOPPING,     /* JVM told to terminate (SIGTERM, SIGKILL after the grace period) */
	SUP_FINISHED,     /* the job FINISHED; nothing runs, and nothing is started again */
	SUP_FAILED,       /* given up: crash-loop limit */
	SUP_STOPPED,      /* done; the loop exits */
	SUP_STATE_MAX
};

enum sup_event {
	EV_JOB_RUNNING,      /* REST: RUNNING with every task running */
	EV_JVM_EXITED_OK,    /* the JVM exited 0: the job finished (or a stop-with-savepoint ended it) */
	EV_JVM_EXITED_ERROR, /* the JVM exited non-zero on its own (a failed job, a failed restore) */
	EV_JVM_KILLED,       /* the JVM died from a signal (kill -9, OOM killer, health check) */
	EV_STARTUP_TIMEOUT,  /* not RUNNING within flinklet.startup.timeout */
	EV_UNHEALTHY,        /* a health check failed */
	EV_BACKOFF_DONE,     /* the restart delay is over */
	EV_STOP,             /* SIGTERM / SIGINT */
	EV_SAVEPOINT_DONE,   /* the stop-with-savepoint's savepoint completed */
	EV_SAVEPOINT_FAILED, /* it failed, or its share of the shutdown budget ran out */
	EV_DEADLINE,         /* the shutdown budget ran out */
	SUP_EVENT_MAX
};

enum sup_action {
	ACT_NONE,
	ACT_MARK_STABLE,       /* record RUNNING, disarm the startup timer */
	ACT_FINISHED,          /* record FINISHED; exit with --exit-on-finish */
	ACT_RESTART,           /* back off and start again (or FAILED at the crash-loop limit) */
	ACT_RESTORE_FAILED,    /* the restore point did not come up: next time use the next older one; restart */
	ACT_KILL_JVM,          /* SIGKILL the JVM; its exit brings the restart */
	ACT_LAUNCH,            /* choose the restore point, persist the intent, start the JVM */
	ACT_STOP,              /* savepoint mode and RUNNING: stop-with-savepoint; otherwise terminate */
	ACT_TERMINATE,         /* SIGTERM the JVM, SIGKILL after the grace period */
	ACT_KILL_NOW,          /* a second stop or the budget: SIGKILL at once */
	ACT_SAVEPOINT_RECORD,  /* record the savepoint; the JVM ends by itself */
	ACT_SAVEPOINT_ABANDON, /* say so loudly; terminate; the newest checkpoint stays the restore point */
	ACT_STOPPED,           /* the JVM is gone: record the stop and exit */
	ACT_STOPPED_SAVEPOINT, /* the JVM is gone during stop-with-savepoint: find the savepoint on disk, exit */
	ACT_EXIT,              /* nothing runs: record the stop and exit */
	SUP_ACTION_MAX
};

struct transition {
	enum sup_action action;
	enum sup_state next;
};

extern const struct transition lifecycle_table[SUP_STATE_MAX][SUP_EVENT_MAX];

const char *sup_state_name(enum sup_state s);
const char *sup_event_name(enum sup_event e);
const char *sup_action_name(enum sup_action a);
enum lifecycle_state sup_state_lifecycle(enum sup_state s);

/* Restart delay for the n-th consecutive failure (n >= 1): initial * multiplier^(n-1), at most max. */
usec_t backoff_delay(unsigned n, usec_t initial, usec_t max, double multiplier);

#endif

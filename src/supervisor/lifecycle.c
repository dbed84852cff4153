/* lifecycle: the (state x event) -> (action, next state, the states it may end in) table, its names, the queue of
 * events raised during a transition, and the restart backoff (see src/supervisor/lifecycle.h).
 * Cells not written are {ACT_NONE, SUP_SAME}: ignored. */
#include "lifecycle.h"

/* clang-format off */
#define B(st) SUP_STATE_BIT(SUP_##st)
/* an action that always ends in n */
#define T(a, n) {ACT_##a, SUP_##n, B(n), 0}
/* an action that ends in n, or in one of more it chooses */
#define TM(a, n, more) {ACT_##a, SUP_##n, B(n) | (more), 0}
/* the same, but only n once a shutdown was asked (the stop's purpose is then to exit) */
#define TX(a, n, more) {ACT_##a, SUP_##n, B(n) | (more), B(n)}

/* a launch that cannot happen backs off, or gives up (a rewind forbidden, the crash-loop limit) */
#define RELAUNCH_OR (B(BACKOFF) | B(FAILED))
/* a stop for a suspend, an upgrade or a rollback ends by job.state: SUSPENDED, or the desired spec launched */
#define STOP_ENDS (B(SUSPENDED) | B(STARTING) | RELAUNCH_OR)

const struct transition lifecycle_table[SUP_STATE_MAX][SUP_EVENT_MAX] = {
	[SUP_INITIAL] = {
		/* a job that FINISHED earlier, job.state suspended, or the first launch (which may not happen) */
		[EV_START]            = TM(START, STARTING, B(FINISHED) | B(SUSPENDED) | B(FAILED)),
	},
	[SUP_STARTING] = {
		[EV_JOB_RUNNING]      = T(MARK_STABLE, RUNNING),
		[EV_JVM_EXITED_OK]    = T(FINISHED, FINISHED),
		[EV_JVM_EXITED_ERROR] = TM(START_FAILED, BACKOFF, B(FAILED)),
		[EV_JVM_KILLED]       = TM(START_FAILED, BACKOFF, B(FAILED)),
		[EV_STARTUP_TIMEOUT]  = T(KILL_JVM, SAME),
		[EV_UNHEALTHY]        = T(KILL_JVM, SAME),
		[EV_RESTORE_UNREADABLE] = T(KILL_JVM, SAME),
		/* savepoint mode: wait for RUNNING; no JVM yet (a pending launch, a fetch): called off, done */
		[EV_STOP]             = TM(STOP, STOPPING, B(STOP_PENDING) | B(STOPPED)),
		[EV_SUSPEND]          = TM(SUSPEND, STOPPING, STOP_ENDS),  /* no JVM yet: called off, done */
		[EV_UPGRADE]          = TM(UPGRADE, STOPPING, STOP_ENDS),
		[EV_ROLLBACK]         = TM(ROLLBACK, STOPPING, STOP_ENDS),
		[EV_LAUNCH_FAILED]    = TM(RESTART, BACKOFF, B(FAILED)),
		[EV_LAUNCH_DURABLE]   = TM(SPAWN, SAME, RELAUNCH_OR),     /* its failure backs off (FAILED: exit 3) */
	},
	[SUP_RUNNING] = {
		[EV_JVM_EXITED_OK]    = T(FINISHED, FINISHED),
		[EV_JVM_EXITED_ERROR] = TM(RESTART, BACKOFF, B(FAILED)),
		[EV_JVM_KILLED]       = TM(RESTART, BACKOFF, B(FAILED)),
		[EV_UNHEALTHY]        = T(KILL_JVM, SAME),
		/* upgradeMode last-state or stateless, or no time for a savepoint: terminate */
		[EV_STOP]             = TM(STOP, SAVEPOINTING, B(STOPPING) | B(STOPPED)),
		[EV_SUSPEND]          = TM(SUSPEND, SAVEPOINTING, B(STOPPING) | STOP_ENDS),
		[EV_UPGRADE]          = TM(UPGRADE, SAVEPOINTING, B(STOPPING) | STOP_ENDS),
		/* an upgraded spec that runs without progress: terminated, the stable spec from the upgrade's point */
		[EV_ROLLBACK]         = TM(ROLLBACK, STOPPING, STOP_ENDS),
		[EV_PROGRESS]         = T(JUDGE, SAME),
	},
	[SUP_BACKOFF] = {
		[EV_BACKOFF_DONE]     = TM(LAUNCH, STARTING, RELAUNCH_OR),
		[EV_STOP]             = T(EXIT, STOPPED),
		[EV_SUSPEND]          = T(GO_SUSPENDED, SUSPENDED),
		[EV_UPGRADE]          = TM(RELAUNCH, STARTING, RELAUNCH_OR),
		[EV_ROLLBACK]         = TM(RELAUNCH, STARTING, RELAUNCH_OR),
	},
	[SUP_SAVEPOINTING] = {
		[EV_JVM_EXITED_OK]    = TX(STOPPED_SAVEPOINT, STOPPED, STOP_ENDS),
		[EV_JVM_EXITED_ERROR] = TX(STOPPED_SAVEPOINT, STOPPED, STOP_ENDS),
		[EV_JVM_KILLED]       = TX(STOPPED_SAVEPOINT, STOPPED, STOP_ENDS),
		[EV_STOP]             = T(KILL_NOW, STOPPING),  /* a second TERM, or TERM during an upgrade */
		[EV_SAVEPOINT_DONE]   = T(SAVEPOINT_RECORD, SAME),
		/* a suspend's or an upgrade's without the last-state fallback: the job runs on */
		[EV_SAVEPOINT_FAILED] = TX(SAVEPOINT_ABANDON, STOPPING, B(RUNNING)),
		[EV_STOP_CHECKPOINT]  = T(TERMINATE, STOPPING),   /* the restore point is that checkpoint */
		[EV_DEADLINE]         = T(KILL_NOW, STOPPING),
		/* a job-only upgrade: the JVM stays, the upgraded spec is submitted to it (a launch, which may back off
		 * or give up); one that cannot be (a stop since, a suspend, a changed spec) lets the JVM go and waits
		 * here for its exit */
		[EV_JVM_IDLE]         = {ACT_JVM_IDLE, SUP_SAME, B(SAME) | STOP_ENDS, B(SAME)},
	},
	[SUP_STOPPING] = {
		[EV_JVM_EXITED_OK]    = TX(STOPPED, STOPPED, STOP_ENDS),
		[EV_JVM_EXITED_ERROR] = TX(STOPPED, STOPPED, STOP_ENDS),
		[EV_JVM_KILLED]       = TX(STOPPED, STOPPED, STOP_ENDS),
		[EV_STOP]             = T(KILL_NOW, SAME),
		[EV_DEADLINE]         = T(KILL_NOW, STOPPED),
	},
	[SUP_STOP_PENDING] = {
		/* the stop-with-savepoint's request could not be sent: terminate */
		[EV_JOB_RUNNING]      = TM(STOP_RUNNING, SAVEPOINTING, B(STOPPING)),
		[EV_JVM_EXITED_OK]    = T(STOPPED, STOPPED),    /* only a shutdown waits here */
		[EV_JVM_EXITED_ERROR] = T(STOPPED, STOPPED),
		[EV_JVM_KILLED]       = T(STOPPED, STOPPED),
		[EV_STARTUP_TIMEOUT]  = T(TERMINATE, STOPPING),
		[EV_UNHEALTHY]        = T(TERMINATE, STOPPING),
		[EV_RESTORE_UNREADABLE] = T(TERMINATE, STOPPING),
		[EV_STOP_WAIT_OVER]   = T(TERMINATE, STOPPING),
		[EV_STOP]             = T(KILL_NOW, STOPPING),
		[EV_DEADLINE]         = T(KILL_NOW, STOPPING),
	},
	[SUP_SUSPENDED] = {
		[EV_STOP]             = T(EXIT, STOPPED),
		[EV_RESUME]           = TM(LAUNCH, STARTING, RELAUNCH_OR),
	},
	[SUP_FINISHED] = {
		[EV_STOP]             = T(EXIT, STOPPED),
		/* a new spec for a finished job: a new run (another port only: it stays FINISHED) */
		[EV_UPGRADE]          = TM(NEW_RUN, STARTING, RELAUNCH_OR | B(FINISHED)),
	},
	[SUP_FAILED] = {
		[EV_STOP]             = T(EXIT, STOPPED),
	},
};
/* clang-format on */

unsigned lifecycle_outcomes(enum sup_state from, enum sup_event ev, bool shutdown)
{
	if ((unsigned)from >= SUP_STATE_MAX || (unsigned)ev >= SUP_EVENT_MAX)
		return 0;
	const struct transition *t = &lifecycle_table[from][ev];
	unsigned set = shutdown && t->on_shutdown ? t->on_shutdown : t->may;
	if (!set || (set & SUP_STATE_BIT(SUP_SAME)))
		set = (set & ~SUP_STATE_BIT(SUP_SAME)) | SUP_STATE_BIT(from); /* ignored, or a stay */
	return set;
}

const char *sup_state_name(enum sup_state s)
{
	/* by name, not by position: an enum reordered or grown keeps each name on its value (a value without one is
	 * "?") */
	static const char *const n[SUP_STATE_MAX] = {
	    [SUP_SAME] = "SAME",
	    [SUP_STARTING] = "STARTING",
	    [SUP_RUNNING] = "RUNNING",
	    [SUP_BACKOFF] = "BACKOFF",
	    [SUP_SAVEPOINTING] = "SAVEPOINTING",
	    [SUP_STOPPING] = "STOPPING",
	    [SUP_STOP_PENDING] = "STOP_PENDING",
	    [SUP_SUSPENDED] = "SUSPENDED",
	    [SUP_FINISHED] = "FINISHED",
	    [SUP_FAILED] = "FAILED",
	    [SUP_STOPPED] = "STOPPED",
	    [SUP_INITIAL] = "INITIAL",
	};
	return (size_t)s < SUP_STATE_MAX && n[s] ? n[s] : "?";
}

const char *sup_event_name(enum sup_event e)
{
	/* by name, not by position: an enum reordered or grown keeps each name on its value (a value without one is
	 * "?") */
	static const char *const n[SUP_EVENT_MAX] = {
	    [EV_JOB_RUNNING] = "JOB_RUNNING",
	    [EV_JVM_EXITED_OK] = "JVM_EXITED_OK",
	    [EV_JVM_EXITED_ERROR] = "JVM_EXITED_ERROR",
	    [EV_JVM_KILLED] = "JVM_KILLED",
	    [EV_STARTUP_TIMEOUT] = "STARTUP_TIMEOUT",
	    [EV_UNHEALTHY] = "UNHEALTHY",
	    [EV_BACKOFF_DONE] = "BACKOFF_DONE",
	    [EV_STOP] = "STOP",
	    [EV_SAVEPOINT_DONE] = "SAVEPOINT_DONE",
	    [EV_SAVEPOINT_FAILED] = "SAVEPOINT_FAILED",
	    [EV_DEADLINE] = "DEADLINE",
	    [EV_SUSPEND] = "SUSPEND",
	    [EV_RESUME] = "RESUME",
	    [EV_UPGRADE] = "UPGRADE",
	    [EV_ROLLBACK] = "ROLLBACK",
	    [EV_LAUNCH_FAILED] = "LAUNCH_FAILED",
	    [EV_STOP_WAIT_OVER] = "STOP_WAIT_OVER",
	    [EV_RESTORE_UNREADABLE] = "RESTORE_UNREADABLE",
	    [EV_LAUNCH_DURABLE] = "LAUNCH_DURABLE",
	    [EV_STOP_CHECKPOINT] = "STOP_CHECKPOINT",
	    [EV_START] = "START",
	    [EV_PROGRESS] = "PROGRESS",
	    [EV_JVM_IDLE] = "JVM_IDLE",
	};
	return (size_t)e < SUP_EVENT_MAX && n[e] ? n[e] : "?";
}

const char *sup_action_name(enum sup_action a)
{
	/* by name, not by position: an enum reordered or grown keeps each name on its value (a value without one is
	 * "?") */
	static const char *const n[SUP_ACTION_MAX] = {
	    [ACT_NONE] = "NONE",
	    [ACT_MARK_STABLE] = "MARK_STABLE",
	    [ACT_FINISHED] = "FINISHED",
	    [ACT_RESTART] = "RESTART",
	    [ACT_START_FAILED] = "START_FAILED",
	    [ACT_KILL_JVM] = "KILL_JVM",
	    [ACT_LAUNCH] = "LAUNCH",
	    [ACT_RELAUNCH] = "RELAUNCH",
	    [ACT_STOP] = "STOP",
	    [ACT_SUSPEND] = "SUSPEND",
	    [ACT_UPGRADE] = "UPGRADE",
	    [ACT_ROLLBACK] = "ROLLBACK",
	    [ACT_TERMINATE] = "TERMINATE",
	    [ACT_KILL_NOW] = "KILL_NOW",
	    [ACT_SAVEPOINT_RECORD] = "SAVEPOINT_RECORD",
	    [ACT_SAVEPOINT_ABANDON] = "SAVEPOINT_ABANDON",
	    [ACT_STOPPED] = "STOPPED",
	    [ACT_STOPPED_SAVEPOINT] = "STOPPED_SAVEPOINT",
	    [ACT_GO_SUSPENDED] = "GO_SUSPENDED",
	    [ACT_EXIT] = "EXIT",
	    [ACT_STOP_RUNNING] = "STOP_RUNNING",
	    [ACT_SPAWN] = "SPAWN",
	    [ACT_JUDGE] = "JUDGE",
	    [ACT_START] = "START",
	    [ACT_NEW_RUN] = "NEW_RUN",
	    [ACT_JVM_IDLE] = "JVM_IDLE",
	};
	return (size_t)a < SUP_ACTION_MAX && n[a] ? n[a] : "?";
}

enum lifecycle_state sup_state_lifecycle(enum sup_state s)
{
	switch (s) {
	case SUP_STARTING:
	case SUP_BACKOFF:
		return LIFECYCLE_DEPLOYED;
	case SUP_RUNNING:
	case SUP_FINISHED:
		return LIFECYCLE_STABLE;
	case SUP_SAVEPOINTING:
	case SUP_STOPPING:
	case SUP_STOP_PENDING:
		return LIFECYCLE_UPGRADING;
	case SUP_FAILED:
		return LIFECYCLE_FAILED;
	case SUP_INITIAL:
		return LIFECYCLE_CREATED;
	default:
		return LIFECYCLE_SUSPENDED;
	}
}

const char *lifecycle_invariant(enum sup_state st, const struct sup_facts *f)
{
	if (f->launch_pending && st != SUP_STARTING)
		return "a launch pending outside STARTING";
	switch (st) {
	case SUP_STARTING: {
		/* a JVM idle between two jobs is no job's: the launch pending is submitted to it */
		bool job = f->jvm && !f->jvm_idle;
		if (f->launch_pending && job)
			return "a launch pending while a JVM runs";
		if (!job && !f->launch_pending && !f->fetch && !f->fetch_retry && !f->backoff_timer && !f->jar_wait)
			return "STARTING without a JVM, a pending launch, a fetch or a timer";
		if (job && !f->startup_timer && !f->kill_sent)
			return "STARTING with a JVM but no startup timer (nor a SIGKILL sent to it)";
		return NULL;
	}
	case SUP_RUNNING:
		if (f->jvm && f->jvm_idle)
			return "RUNNING with a JVM that runs no job";
		return f->jvm ? NULL : "RUNNING without a JVM";
	case SUP_BACKOFF:
		/* (an idle JVM whose launch failed was killed: its exit is on the way) */
		if (f->jvm && !(f->jvm_idle && f->kill_sent))
			return "BACKOFF with a JVM";
		return f->backoff_timer ? NULL : "BACKOFF without its timer";
	case SUP_SAVEPOINTING:
		return f->jvm ? NULL : "SAVEPOINTING without a JVM";
	case SUP_STOP_PENDING:
		if (!f->jvm)
			return "STOP_PENDING without a JVM";
		return f->stop_wait_timer && f->deadline_timer ? NULL : "STOP_PENDING without its timers";
	case SUP_STOPPING:
		if (!f->jvm)
			return "STOPPING without a JVM";
		return f->kill_timer || f->deadline_timer ? NULL : "STOPPING without a kill timer";
	case SUP_INITIAL:
	case SUP_SUSPENDED:
	case SUP_FINISHED:
	case SUP_FAILED:
	case SUP_STOPPED:
		/* after the shutdown budget: SIGKILL sent, flinklet exits without waiting for the reap */
		if (f->jvm && st == SUP_STOPPED && f->force_killed)
			return NULL;
		return f->jvm ? "a JVM runs in a state without one" : NULL;
	default:
		return "an unknown state";
	}
}

bool event_queue_push(struct event_queue *q, enum sup_event ev)
{
	if (q->len == EVENT_QUEUE_MAX)
		return false;
	q->ev[(q->head + q->len++) % EVENT_QUEUE_MAX] = ev;
	return true;
}

bool event_queue_pop(struct event_queue *q, enum sup_event *ev)
{
	if (!q->len)
		return false;
	*ev = q->ev[q->head];
	q->head = (q->head + 1) % EVENT_QUEUE_MAX;
	q->len--;
	return true;
}

usec_t backoff_delay(unsigned n, usec_t initial, usec_t max, double multiplier)
{
	double d = (double)initial;
	for (unsigned i = 1; i < n && d < (double)max; i++)
		d *= multiplier;
	if (d >= (double)max)
		return max;
	return (usec_t)d;
}

/* test_lifecycle: the supervisor's (state x event) -> (action, next state, the states it may end in) table as data:
 * bounds and the meaning of SUP_SAME, the whole table cell by cell (a stop during a savepoint, a second SIGTERM, a
 * JVM that dies mid-savepoint, a failed restore, suspend / resume / upgrade / rollback, the start), the choices the
 * actions may make, the rows that must stay quiet, that health checks never act outside STARTING and RUNNING,
 * reachability of every state, that a stop is never lost; the lifecycleState of each state; the names;
 * backoff_delay.
 *
 * Some actions choose their state at run time: the table lists every state each may choose (may, and on_shutdown
 * once a shutdown was asked), the driver checks each transition against it (src/supervisor/supervisor.c), and the
 * properties below are checked against the table's sets (lifecycle_outcomes), not a model of their own.
 */
#include "unit.h"

#include "lifecycle.h"
#include "status.h"

#define NSTATES ((int)SUP_STATE_MAX)
#define NEVENTS ((int)SUP_EVENT_MAX)
#define NACTIONS ((int)SUP_ACTION_MAX)
#define FIRST_STATE ((int)SUP_STARTING) /* SUP_SAME (0) is a table sentinel, not a state */
#define BIT(st) SUP_STATE_BIT(st)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const enum sup_event jvm_exits[] = {EV_JVM_EXITED_OK, EV_JVM_EXITED_ERROR, EV_JVM_KILLED};

static const struct transition *cell(int s, int e)
{
	return &lifecycle_table[s][e];
}

static const char *sname(int s)
{
	return sup_state_name((enum sup_state)s);
}

static void fail_cell_at(int s, int e, const char *what, const char *file, int line)
{
	const struct transition *t = cell(s, e);
	print_error("%s + %s -> %s / %s: %s\n", sname(s), sup_event_name((enum sup_event)e), sup_action_name(t->action),
	            sname(t->next), what);
	_fail(file, line);
}

#define fail_cell(s, e, what) fail_cell_at((s), (e), (what), __FILE__, __LINE__)

/* the dispatch (sup_raise) logs {ACT_NONE, SUP_SAME} as "ignored" and does nothing else */
static bool ignored(int s, int e)
{
	return cell(s, e)->action == ACT_NONE && cell(s, e)->next == SUP_SAME;
}

/* ---- the table's choices ---- */

/* The states dispatching e in state s may end in, as the table lists them (`exiting`: an EV_STOP was dispatched, so
 * the stop's purpose is to exit and a cell's on_shutdown holds). */
static void outcomes(int s, int e, bool exiting, bool out[SUP_STATE_MAX])
{
	unsigned set = lifecycle_outcomes((enum sup_state)s, (enum sup_event)e, exiting);
	for (int r = 0; r < NSTATES; r++)
		out[r] = (set & BIT(r)) != 0;
}

/* reach[s] := every state reachable from `from` (inclusive) by any events, with the actions' choices
 * (with_choices) or the table's next states only. */
static void reachable(int from, bool with_choices, bool exiting, bool reach[SUP_STATE_MAX])
{
	int queue[SUP_STATE_MAX];
	int head = 0, tail = 0;
	memset(reach, 0, sizeof(bool) * SUP_STATE_MAX);
	reach[from] = true;
	queue[tail++] = from;
	while (head < tail) {
		int s = queue[head++];
		for (int e = 0; e < NEVENTS; e++) {
			bool out[SUP_STATE_MAX] = {false};
			if (with_choices)
				outcomes(s, e, exiting, out);
			else
				out[cell(s, e)->next == SUP_SAME ? s : (int)cell(s, e)->next] = true;
			for (int r = 0; r < NSTATES; r++)
				if (out[r] && !reach[r]) {
					reach[r] = true;
					queue[tail++] = r;
				}
		}
	}
}

/* ---- the table ---- */

static void test_table_bounds(void **state)
{
	(void)state;
	for (int s = 0; s < NSTATES; s++)
		for (int e = 0; e < NEVENTS; e++) {
			const struct transition *t = cell(s, e);
			if ((unsigned)t->next >= (unsigned)SUP_STATE_MAX)
				fail_cell(s, e, "next state out of range");
			if ((unsigned)t->action >= (unsigned)SUP_ACTION_MAX)
				fail_cell(s, e, "action out of range");
			/* ACT_NONE never moves: the dispatch would run nothing and change the state silently */
			if (t->action == ACT_NONE && t->next != SUP_SAME)
				fail_cell(s, e, "a state change without an action");
			/* a stay is written SUP_SAME, never as the row's own state */
			if (s != SUP_SAME && (int)t->next == s)
				fail_cell(s, e, "the row's own state instead of SUP_SAME");
			/* SUP_SAME only with an action that leaves the state to a later event (the JVM's exit):
			 * never with one that stops, launches, or chooses where to go */
			/* (ACT_SPAWN stays STARTING when the JVM runs, and chooses BACKOFF when it cannot; ACT_JVM_IDLE
			 * stays while the JVM it lets go exits, and chooses the upgraded spec's launch otherwise) */
			if (t->next == SUP_SAME && t->action != ACT_NONE && t->action != ACT_KILL_JVM &&
			    t->action != ACT_SAVEPOINT_RECORD && t->action != ACT_KILL_NOW && t->action != ACT_SPAWN &&
			    t->action != ACT_JUDGE && t->action != ACT_JVM_IDLE)
				fail_cell(s, e, "SUP_SAME with an action that moves");
			/* and those two never move by themselves */
			if ((t->action == ACT_KILL_JVM || t->action == ACT_SAVEPOINT_RECORD) && t->next != SUP_SAME)
				fail_cell(s, e, "a kill or a record moves the state by itself");
			/* the sets: an ignored cell has none; an acting one lists its next state (SUP_SAME's bit for a
			 * stay, and only then), nothing out of range, nothing goes back to INITIAL, and a shutdown's
			 * set is a part of the whole one */
			if (t->action == ACT_NONE) {
				if (t->may || t->on_shutdown)
					fail_cell(s, e, "an ignored cell with outcomes");
				continue;
			}
			if (!(t->may & BIT(t->next)))
				fail_cell(s, e, "the next state is not among the outcomes");
			if ((t->may & BIT(SUP_SAME)) && t->next != SUP_SAME)
				fail_cell(s, e, "a stay among the outcomes of a cell that moves");
			if (t->may >> NSTATES)
				fail_cell(s, e, "an outcome out of range");
			if (t->may & BIT(SUP_INITIAL))
				fail_cell(s, e, "back to INITIAL");
			if (t->on_shutdown & ~t->may)
				fail_cell(s, e, "a shutdown's outcome the cell does not list");
			/* what never chooses: killing, recording, a second stop, the JVM's exit into FINISHED */
			if ((t->action == ACT_KILL_JVM || t->action == ACT_SAVEPOINT_RECORD ||
			     t->action == ACT_KILL_NOW || t->action == ACT_FINISHED || t->action == ACT_MARK_STABLE ||
			     t->action == ACT_GO_SUSPENDED || t->action == ACT_EXIT || t->action == ACT_TERMINATE) &&
			    t->may != BIT(t->next))
				fail_cell(s, e, "an action that does not choose with more than one outcome");
		}
	/* the SUP_SAME row is never a state the supervisor is in: all of it is ignored */
	for (int e = 0; e < NEVENTS; e++)
		if (!ignored(SUP_SAME, e))
			fail_cell(SUP_SAME, e, "the SUP_SAME row must be empty");
}

/* Every written cell, and the ignored cells that carry the design. Every cell not listed is ignored. */
static const struct row {
	enum sup_state s;
	enum sup_event e;
	enum sup_action a;
	enum sup_state next;
} rows[] = {
    /* the start: the first launch (or FINISHED, SUSPENDED, FAILED: the action chooses) */
    {SUP_INITIAL, EV_START, ACT_START, SUP_STARTING},
    /* starting */
    {SUP_STARTING, EV_JOB_RUNNING, ACT_MARK_STABLE, SUP_RUNNING},
    {SUP_STARTING, EV_JVM_EXITED_OK, ACT_FINISHED, SUP_FINISHED},
    /* the same restore point again, unless there is evidence that Flink cannot read it */
    {SUP_STARTING, EV_JVM_EXITED_ERROR, ACT_START_FAILED, SUP_BACKOFF},
    {SUP_STARTING, EV_JVM_KILLED, ACT_START_FAILED, SUP_BACKOFF},
    {SUP_STARTING, EV_RESTORE_UNREADABLE, ACT_KILL_JVM, SUP_SAME}, /* its exit demotes the point */
    {SUP_STARTING, EV_STARTUP_TIMEOUT, ACT_KILL_JVM, SUP_SAME},
    {SUP_STARTING, EV_UNHEALTHY, ACT_KILL_JVM, SUP_SAME},
    {SUP_STARTING, EV_STOP, ACT_STOP, SUP_STOPPING}, /* savepoint mode: STOP_PENDING */
    {SUP_STARTING, EV_SUSPEND, ACT_SUSPEND, SUP_STOPPING},
    {SUP_STARTING, EV_UPGRADE, ACT_UPGRADE, SUP_STOPPING},
    {SUP_STARTING, EV_ROLLBACK, ACT_ROLLBACK, SUP_STOPPING},
    {SUP_STARTING, EV_LAUNCH_FAILED, ACT_RESTART, SUP_BACKOFF}, /* the jar could not be fetched */
    /* the pending launch's intent is on the volume: now the JVM (STARTING only: see test_launch_pending) */
    {SUP_STARTING, EV_LAUNCH_DURABLE, ACT_SPAWN, SUP_SAME},
    {SUP_STARTING, EV_RESUME, ACT_NONE, SUP_SAME},
    {SUP_STARTING, EV_BACKOFF_DONE, ACT_NONE, SUP_SAME},
    {SUP_STARTING, EV_DEADLINE, ACT_NONE, SUP_SAME},
    /* running */
    {SUP_RUNNING, EV_JVM_EXITED_OK, ACT_FINISHED, SUP_FINISHED},
    {SUP_RUNNING, EV_JVM_EXITED_ERROR, ACT_RESTART, SUP_BACKOFF},
    {SUP_RUNNING, EV_JVM_KILLED, ACT_RESTART, SUP_BACKOFF},
    {SUP_RUNNING, EV_UNHEALTHY, ACT_KILL_JVM, SUP_SAME},
    {SUP_RUNNING, EV_STOP, ACT_STOP, SUP_SAVEPOINTING},
    {SUP_RUNNING, EV_SUSPEND, ACT_SUSPEND, SUP_SAVEPOINTING},
    {SUP_RUNNING, EV_UPGRADE, ACT_UPGRADE, SUP_SAVEPOINTING},
    /* an upgraded spec on trial: judged on what the poll saw; rolled back (terminated) when it cannot be stable */
    {SUP_RUNNING, EV_PROGRESS, ACT_JUDGE, SUP_SAME},
    {SUP_RUNNING, EV_ROLLBACK, ACT_ROLLBACK, SUP_STOPPING},
    {SUP_RUNNING, EV_JOB_RUNNING, ACT_NONE, SUP_SAME},     /* every poll says so */
    {SUP_RUNNING, EV_STARTUP_TIMEOUT, ACT_NONE, SUP_SAME}, /* the startup is over */
    {SUP_RUNNING, EV_RESUME, ACT_NONE, SUP_SAME},
    /* backoff: no JVM */
    {SUP_BACKOFF, EV_BACKOFF_DONE, ACT_LAUNCH, SUP_STARTING},
    {SUP_BACKOFF, EV_STOP, ACT_EXIT, SUP_STOPPED},
    {SUP_BACKOFF, EV_SUSPEND, ACT_GO_SUSPENDED, SUP_SUSPENDED},
    {SUP_BACKOFF, EV_UPGRADE, ACT_RELAUNCH, SUP_STARTING},
    {SUP_BACKOFF, EV_ROLLBACK, ACT_RELAUNCH, SUP_STARTING},
    {SUP_BACKOFF, EV_RESUME, ACT_NONE, SUP_SAME},
    {SUP_BACKOFF, EV_UNHEALTHY, ACT_NONE, SUP_SAME},
    /* savepointing: the stop-with-savepoint is in flight */
    {SUP_SAVEPOINTING, EV_JVM_EXITED_OK, ACT_STOPPED_SAVEPOINT, SUP_STOPPED},
    {SUP_SAVEPOINTING, EV_JVM_EXITED_ERROR, ACT_STOPPED_SAVEPOINT, SUP_STOPPED},
    {SUP_SAVEPOINTING, EV_JVM_KILLED, ACT_STOPPED_SAVEPOINT, SUP_STOPPED},
    {SUP_SAVEPOINTING, EV_STOP, ACT_KILL_NOW, SUP_STOPPING}, /* a second SIGTERM, or one during an upgrade */
    {SUP_SAVEPOINTING, EV_SAVEPOINT_DONE, ACT_SAVEPOINT_RECORD, SUP_SAME},
    {SUP_SAVEPOINTING, EV_SAVEPOINT_FAILED, ACT_SAVEPOINT_ABANDON, SUP_STOPPING},
    /* a stop no savepoint fits: the next checkpoint completed, the JVM is stopped on it */
    {SUP_SAVEPOINTING, EV_STOP_CHECKPOINT, ACT_TERMINATE, SUP_STOPPING},
    {SUP_SAVEPOINTING, EV_DEADLINE, ACT_KILL_NOW, SUP_STOPPING},
    {SUP_SAVEPOINTING, EV_SUSPEND, ACT_NONE, SUP_SAME}, /* the savepoint's end decides, by job.state */
    {SUP_SAVEPOINTING, EV_UPGRADE, ACT_NONE, SUP_SAME},
    {SUP_SAVEPOINTING, EV_RESUME, ACT_NONE, SUP_SAME},
    {SUP_SAVEPOINTING, EV_ROLLBACK, ACT_NONE, SUP_SAME},
    {SUP_SAVEPOINTING, EV_UNHEALTHY, ACT_NONE, SUP_SAME}, /* the JVM is being stopped already */
    {SUP_SAVEPOINTING, EV_JOB_RUNNING, ACT_NONE, SUP_SAME},
    /* a job-only upgrade: the savepoint ended the job, the JVM stays; the upgraded spec is submitted to it */
    {SUP_SAVEPOINTING, EV_JVM_IDLE, ACT_JVM_IDLE, SUP_SAME}, /* STARTING; SAME when the JVM is let go */
    /* stopping: SIGTERM sent */
    {SUP_STOPPING, EV_JVM_EXITED_OK, ACT_STOPPED, SUP_STOPPED},
    {SUP_STOPPING, EV_JVM_EXITED_ERROR, ACT_STOPPED, SUP_STOPPED},
    {SUP_STOPPING, EV_JVM_KILLED, ACT_STOPPED, SUP_STOPPED},
    {SUP_STOPPING, EV_STOP, ACT_KILL_NOW, SUP_SAME},
    {SUP_STOPPING, EV_DEADLINE, ACT_KILL_NOW, SUP_STOPPED},
    {SUP_STOPPING, EV_SUSPEND, ACT_NONE, SUP_SAME},
    {SUP_STOPPING, EV_UPGRADE, ACT_NONE, SUP_SAME},
    {SUP_STOPPING, EV_RESUME, ACT_NONE, SUP_SAME},
    {SUP_STOPPING, EV_ROLLBACK, ACT_NONE, SUP_SAME},
    {SUP_STOPPING, EV_UNHEALTHY, ACT_NONE, SUP_SAME},
    {SUP_STOPPING, EV_JOB_RUNNING, ACT_NONE, SUP_SAME},
    /* suspended: no JVM, on purpose */
    {SUP_SUSPENDED, EV_STOP, ACT_EXIT, SUP_STOPPED},
    {SUP_SUSPENDED, EV_RESUME, ACT_LAUNCH, SUP_STARTING},
    {SUP_SUSPENDED, EV_SUSPEND, ACT_NONE, SUP_SAME},
    {SUP_SUSPENDED, EV_UPGRADE, ACT_NONE, SUP_SAME}, /* the resume launches the new spec */
    {SUP_SUSPENDED, EV_ROLLBACK, ACT_NONE, SUP_SAME},
    {SUP_SUSPENDED, EV_BACKOFF_DONE, ACT_NONE, SUP_SAME},
    /* finished */
    {SUP_FINISHED, EV_STOP, ACT_EXIT, SUP_STOPPED},
    {SUP_FINISHED, EV_UPGRADE, ACT_NEW_RUN, SUP_STARTING}, /* a new spec for a finished job: a new run */
    {SUP_FINISHED, EV_RESUME, ACT_NONE, SUP_SAME},
    {SUP_FINISHED, EV_ROLLBACK, ACT_NONE, SUP_SAME},
    {SUP_FINISHED, EV_UNHEALTHY, ACT_NONE, SUP_SAME},
    /* failed */
    {SUP_FAILED, EV_STOP, ACT_EXIT, SUP_STOPPED},
    {SUP_FAILED, EV_BACKOFF_DONE, ACT_NONE, SUP_SAME},
    {SUP_FAILED, EV_UPGRADE, ACT_NONE, SUP_SAME},
    /* a stop while starting: wait for RUNNING inside the budget, then the savepoint */
    {SUP_STOP_PENDING, EV_JOB_RUNNING, ACT_STOP_RUNNING, SUP_SAVEPOINTING},
    {SUP_STOP_PENDING, EV_JVM_EXITED_OK, ACT_STOPPED, SUP_STOPPED},
    {SUP_STOP_PENDING, EV_JVM_EXITED_ERROR, ACT_STOPPED, SUP_STOPPED},
    {SUP_STOP_PENDING, EV_JVM_KILLED, ACT_STOPPED, SUP_STOPPED},
    {SUP_STOP_PENDING, EV_STARTUP_TIMEOUT, ACT_TERMINATE, SUP_STOPPING},
    {SUP_STOP_PENDING, EV_UNHEALTHY, ACT_TERMINATE, SUP_STOPPING},
    {SUP_STOP_PENDING, EV_RESTORE_UNREADABLE, ACT_TERMINATE, SUP_STOPPING},
    {SUP_STOP_PENDING, EV_STOP_WAIT_OVER, ACT_TERMINATE, SUP_STOPPING},
    {SUP_STOP_PENDING, EV_STOP, ACT_KILL_NOW, SUP_STOPPING},
    {SUP_STOP_PENDING, EV_DEADLINE, ACT_KILL_NOW, SUP_STOPPING},
    {SUP_STOP_PENDING, EV_SUSPEND, ACT_NONE, SUP_SAME}, /* the stop wins */
    {SUP_STOP_PENDING, EV_UPGRADE, ACT_NONE, SUP_SAME},
    /* stopped */
    {SUP_STOPPED, EV_STOP, ACT_NONE, SUP_SAME},
};

static void test_every_cell(void **state)
{
	(void)state;
	bool listed[SUP_STATE_MAX][SUP_EVENT_MAX] = {{false}};
	for (size_t i = 0; i < COUNT(rows); i++) {
		const struct transition *t = cell(rows[i].s, rows[i].e);
		if (listed[rows[i].s][rows[i].e]) {
			print_error("row %zu lists %s + %s twice\n", i, sname(rows[i].s), sup_event_name(rows[i].e));
			fail();
		}
		listed[rows[i].s][rows[i].e] = true;
		if (t->action != rows[i].a || t->next != rows[i].next) {
			print_error("want %s / %s\n", sup_action_name(rows[i].a), sname(rows[i].next));
			fail_cell(rows[i].s, rows[i].e, "unexpected transition");
		}
	}
	for (int s = 0; s < NSTATES; s++)
		for (int e = 0; e < NEVENTS; e++)
			if (!listed[s][e] && !ignored(s, e))
				fail_cell(s, e, "a cell that acts but is not in the test's table");
}

/* Every action but ACT_NONE is in the table, except ACT_TERMINATE, which the stop actions run. */
static void test_no_dead_action(void **state)
{
	(void)state;
	for (int a = ACT_NONE + 1; a < NACTIONS; a++) {
		if (a == ACT_TERMINATE)
			continue;
		bool used = false;
		for (int s = FIRST_STATE; s < NSTATES && !used; s++)
			for (int e = 0; e < NEVENTS && !used; e++)
				used = cell(s, e)->action == (enum sup_action)a;
		if (!used) {
			print_error("action %s is never run\n", sup_action_name((enum sup_action)a));
			fail();
		}
	}
}

/* s reacts to exactly the events in evs: every other event is ignored. */
static void reacts_only_to_at(int s, const enum sup_event *evs, size_t n, const char *file, int line)
{
	for (int e = 0; e < NEVENTS; e++) {
		bool allowed = false;
		for (size_t i = 0; i < n; i++)
			allowed = allowed || (int)evs[i] == e;
		if (allowed && ignored(s, e))
			fail_cell_at(s, e, "must act", file, line);
		if (!allowed && !ignored(s, e))
			fail_cell_at(s, e, "must be ignored", file, line);
	}
}

#define reacts_only_to(s, evs) reacts_only_to_at((s), (evs), COUNT(evs), __FILE__, __LINE__)

static void want_cell_at(int s, int e, enum sup_action a, enum sup_state next, const char *file, int line)
{
	if (cell(s, e)->action != a || cell(s, e)->next != next) {
		print_error("want %s / %s\n", sup_action_name(a), sname(next));
		fail_cell_at(s, e, "unexpected transition", file, line);
	}
}

#define want_cell(s, e, a, next) want_cell_at((s), (e), (a), (next), __FILE__, __LINE__)

/* The choices the actions make, as the table lists them: what the driver holds each transition to. */
static void want_outcomes_at(int s, int e, bool shutdown, unsigned want, const char *file, int line)
{
	unsigned got = lifecycle_outcomes((enum sup_state)s, (enum sup_event)e, shutdown);
	if (got != want) {
		for (int r = 0; r < NSTATES; r++)
			if ((got ^ want) & BIT(r))
				print_error("%s: %s\n", sname(r),
				            got & BIT(r) ? "listed, not wanted" : "wanted, not listed");
		fail_cell_at(s, e, shutdown ? "its outcomes once a shutdown was asked" : "its outcomes", file, line);
	}
}

#define want_outcomes(s, e, shutdown, want) want_outcomes_at((s), (e), (shutdown), (want), __FILE__, __LINE__)

static void test_choices(void **state)
{
	(void)state;
	const unsigned ends = BIT(SUP_SUSPENDED) | BIT(SUP_STARTING) | BIT(SUP_BACKOFF) | BIT(SUP_FAILED);
	/* the start: the first launch, a job that FINISHED earlier, job.state suspended, a launch that must not or
	 * cannot happen */
	want_outcomes(SUP_INITIAL, EV_START, false,
	              BIT(SUP_STARTING) | BIT(SUP_FINISHED) | BIT(SUP_SUSPENDED) | BIT(SUP_FAILED));
	/* a stop while starting: SIGTERM, or wait for RUNNING in savepoint mode, or done at once with no JVM yet */
	want_outcomes(SUP_STARTING, EV_STOP, true, BIT(SUP_STOPPING) | BIT(SUP_STOP_PENDING) | BIT(SUP_STOPPED));
	want_outcomes(SUP_RUNNING, EV_STOP, true, BIT(SUP_SAVEPOINTING) | BIT(SUP_STOPPING) | BIT(SUP_STOPPED));
	/* a suspend or an upgrade with no JVM yet ends at once, by job.state */
	want_outcomes(SUP_STARTING, EV_SUSPEND, false, BIT(SUP_STOPPING) | ends);
	want_outcomes(SUP_RUNNING, EV_UPGRADE, false, BIT(SUP_SAVEPOINTING) | BIT(SUP_STOPPING) | ends);
	/* a crash backs off or, at the crash-loop limit (or a rewind forbidden), gives up */
	want_outcomes(SUP_RUNNING, EV_JVM_KILLED, false, BIT(SUP_BACKOFF) | BIT(SUP_FAILED));
	want_outcomes(SUP_STARTING, EV_JVM_EXITED_ERROR, false, BIT(SUP_BACKOFF) | BIT(SUP_FAILED));
	want_outcomes(SUP_BACKOFF, EV_BACKOFF_DONE, false, BIT(SUP_STARTING) | BIT(SUP_BACKOFF) | BIT(SUP_FAILED));
	/* the spawn stays STARTING, or backs off when the JVM cannot be executed (FAILED for the first: exit 3) */
	want_outcomes(SUP_STARTING, EV_LAUNCH_DURABLE, false, BIT(SUP_STARTING) | BIT(SUP_BACKOFF) | BIT(SUP_FAILED));
	/* the JVM gone after a stop: exit, or (a suspend's, an upgrade's) stay SUSPENDED or launch; a shutdown exits */
	for (size_t x = 0; x < COUNT(jvm_exits); x++) {
		want_outcomes(SUP_STOPPING, jvm_exits[x], false, BIT(SUP_STOPPED) | ends);
		want_outcomes(SUP_STOPPING, jvm_exits[x], true, BIT(SUP_STOPPED));
		want_outcomes(SUP_SAVEPOINTING, jvm_exits[x], false, BIT(SUP_STOPPED) | ends);
		want_outcomes(SUP_SAVEPOINTING, jvm_exits[x], true, BIT(SUP_STOPPED));
		want_outcomes(SUP_STOP_PENDING, jvm_exits[x], false, BIT(SUP_STOPPED)); /* only a shutdown waits */
	}
	/* a failed savepoint: terminate, or (a suspend's or upgrade's without the last-state fallback) run on */
	want_outcomes(SUP_SAVEPOINTING, EV_SAVEPOINT_FAILED, false, BIT(SUP_STOPPING) | BIT(SUP_RUNNING));
	want_outcomes(SUP_SAVEPOINTING, EV_SAVEPOINT_FAILED, true, BIT(SUP_STOPPING));
	/* RUNNING after a stop while starting: the savepoint, or SIGTERM when its request cannot be sent */
	want_outcomes(SUP_STOP_PENDING, EV_JOB_RUNNING, true, BIT(SUP_SAVEPOINTING) | BIT(SUP_STOPPING));
	/* a stay resolves to the row's state; an ignored event stays */
	want_outcomes(SUP_RUNNING, EV_UNHEALTHY, false, BIT(SUP_RUNNING));
	want_outcomes(SUP_SUSPENDED, EV_UPGRADE, false, BIT(SUP_SUSPENDED));
	/* out of range: nothing */
	assert_int_equal(lifecycle_outcomes(SUP_STATE_MAX, EV_STOP, false), 0);
	assert_int_equal(lifecycle_outcomes(SUP_RUNNING, SUP_EVENT_MAX, false), 0);
}

static void test_quiet_rows(void **state)
{
	(void)state;
	/* INITIAL: only the start; and the start nowhere else */
	static const enum sup_event initial[] = {EV_START};
	reacts_only_to(SUP_INITIAL, initial);
	for (int s = 0; s < NSTATES; s++)
		if (s != SUP_INITIAL && !ignored(s, EV_START))
			fail_cell(s, EV_START, "a start outside INITIAL");

	/* STOPPED: the loop is exiting */
	for (int e = 0; e < NEVENTS; e++)
		if (!ignored(SUP_STOPPED, e))
			fail_cell(SUP_STOPPED, e, "STOPPED must ignore every event");

	/* FAILED: given up; only a stop */
	static const enum sup_event failed[] = {EV_STOP};
	reacts_only_to(SUP_FAILED, failed);
	want_cell(SUP_FAILED, EV_STOP, ACT_EXIT, SUP_STOPPED);

	/* FINISHED: a stop, or a new spec (which runs the job again) */
	static const enum sup_event finished[] = {EV_STOP, EV_UPGRADE};
	reacts_only_to(SUP_FINISHED, finished);
	want_cell(SUP_FINISHED, EV_STOP, ACT_EXIT, SUP_STOPPED);
	want_cell(SUP_FINISHED, EV_UPGRADE, ACT_NEW_RUN, SUP_STARTING);

	/* SUSPENDED: a stop, or a resume */
	static const enum sup_event suspended[] = {EV_STOP, EV_RESUME};
	reacts_only_to(SUP_SUSPENDED, suspended);
	want_cell(SUP_SUSPENDED, EV_STOP, ACT_EXIT, SUP_STOPPED);
	want_cell(SUP_SUSPENDED, EV_RESUME, ACT_LAUNCH, SUP_STARTING);

	/* BACKOFF: the timer, a stop, a suspend, a new spec or a rollback */
	static const enum sup_event backoff[] = {EV_BACKOFF_DONE, EV_STOP, EV_SUSPEND, EV_UPGRADE, EV_ROLLBACK};
	reacts_only_to(SUP_BACKOFF, backoff);

	/* while stopping, only the JVM, the savepoint, a stop and the budget count: a suspend, resume, upgrade
	 * or rollback that comes in meanwhile is decided by job.state when the JVM is gone */
	static const enum sup_event savepointing[] = {EV_JVM_EXITED_OK, EV_JVM_EXITED_ERROR, EV_JVM_KILLED,
	                                              EV_STOP,          EV_SAVEPOINT_DONE,   EV_SAVEPOINT_FAILED,
	                                              EV_DEADLINE,      EV_STOP_CHECKPOINT,  EV_JVM_IDLE};
	reacts_only_to(SUP_SAVEPOINTING, savepointing);
	static const enum sup_event stopping[] = {EV_JVM_EXITED_OK, EV_JVM_EXITED_ERROR, EV_JVM_KILLED, EV_STOP,
	                                          EV_DEADLINE};
	reacts_only_to(SUP_STOPPING, stopping);
	/* a stop while starting: RUNNING (the savepoint), the JVM, the health checks, the budget, a second stop */
	static const enum sup_event stop_pending[] = {
	    EV_JOB_RUNNING, EV_JVM_EXITED_OK,      EV_JVM_EXITED_ERROR, EV_JVM_KILLED, EV_STARTUP_TIMEOUT,
	    EV_UNHEALTHY,   EV_RESTORE_UNREADABLE, EV_STOP_WAIT_OVER,   EV_STOP,       EV_DEADLINE};
	reacts_only_to(SUP_STOP_PENDING, stop_pending);
}

/* No JVM runs in BACKOFF, SUSPENDED, FINISHED, FAILED and STOPPED: nothing about a JVM acts there. */
static void test_no_jvm_no_jvm_events(void **state)
{
	(void)state;
	static const enum sup_state no_jvm[] = {SUP_BACKOFF, SUP_SUSPENDED, SUP_FINISHED,
	                                        SUP_FAILED,  SUP_STOPPED,   SUP_INITIAL};
	static const enum sup_event jvm_events[] = {EV_JOB_RUNNING,        EV_JVM_EXITED_OK,    EV_JVM_EXITED_ERROR,
	                                            EV_JVM_KILLED,         EV_STARTUP_TIMEOUT,  EV_UNHEALTHY,
	                                            EV_SAVEPOINT_DONE,     EV_SAVEPOINT_FAILED, EV_DEADLINE,
	                                            EV_RESTORE_UNREADABLE, EV_STOP_WAIT_OVER,   EV_STOP_CHECKPOINT};
	for (size_t i = 0; i < COUNT(no_jvm); i++)
		for (size_t j = 0; j < COUNT(jvm_events); j++)
			if (!ignored(no_jvm[i], jvm_events[j]))
				fail_cell(no_jvm[i], jvm_events[j], "a JVM event where no JVM runs");
	/* and the backoff timer only in BACKOFF, the savepoint's outcome only in SAVEPOINTING */
	for (int s = 0; s < NSTATES; s++) {
		if (s != SUP_BACKOFF && !ignored(s, EV_BACKOFF_DONE))
			fail_cell(s, EV_BACKOFF_DONE, "the backoff timer outside BACKOFF");
		if (s != SUP_SAVEPOINTING && !ignored(s, EV_SAVEPOINT_DONE))
			fail_cell(s, EV_SAVEPOINT_DONE, "a savepoint outcome outside SAVEPOINTING");
		if (s != SUP_SAVEPOINTING && !ignored(s, EV_SAVEPOINT_FAILED))
			fail_cell(s, EV_SAVEPOINT_FAILED, "a savepoint outcome outside SAVEPOINTING");
	}
}

static void test_health_checks(void **state)
{
	(void)state;
	static const enum sup_event health[] = {EV_UNHEALTHY, EV_STARTUP_TIMEOUT};
	for (size_t h = 0; h < COUNT(health); h++)
		for (int s = 0; s < NSTATES; s++) {
			if (s == SUP_STOP_PENDING) {
				/* waiting to stop: a failed start ends the wait, without a savepoint (said loudly) */
				want_cell(s, health[h], ACT_TERMINATE, SUP_STOPPING);
			} else if (s != SUP_STARTING && s != SUP_RUNNING) {
				/* a job that is done, suspended, backing off or being stopped is never touched */
				if (!ignored(s, health[h]))
					fail_cell(s, health[h], "a health check outside STARTING and RUNNING");
			} else if (!ignored(s, health[h]) && (cell(s, health[h])->action != ACT_KILL_JVM ||
			                                      cell(s, health[h])->next != SUP_SAME)) {
				/* at most it kills the JVM; the JVM's exit moves the state */
				fail_cell(s, health[h], "a health check does more than kill the JVM");
			}
		}
	/* that exit is a restart with the same restore point (evidence alone demotes it), never a finished job */
	want_cell(SUP_STARTING, EV_JVM_KILLED, ACT_START_FAILED, SUP_BACKOFF);
	want_cell(SUP_RUNNING, EV_JVM_KILLED, ACT_RESTART, SUP_BACKOFF);
}

static void test_every_state_reachable(void **state)
{
	(void)state;
	bool reach[SUP_STATE_MAX];

	/* the table's next states alone reach every state from the start but FAILED, which only the actions choose
	 * (the crash-loop limit, a launch that must not happen), and STOP_PENDING, which the stop chooses in
	 * savepoint mode; nothing goes back to INITIAL */
	reachable(SUP_INITIAL, false, false, reach);
	for (int s = FIRST_STATE; s < NSTATES; s++)
		if (s != SUP_FAILED && s != SUP_STOP_PENDING && !reach[s]) {
			print_error("%s is unreachable from INITIAL\n", sname(s));
			fail();
		}
	reachable(SUP_STARTING, true, false, reach);
	assert_false(reach[SUP_INITIAL]);
	for (int s = 0; s < NSTATES; s++)
		for (int e = 0; e < NEVENTS; e++)
			if (cell(s, e)->next == SUP_FAILED)
				fail_cell(s, e, "FAILED in the table: the actions choose it");

	/* with the actions' choices, every state */
	reachable(SUP_INITIAL, true, false, reach);
	for (int s = FIRST_STATE; s < NSTATES; s++)
		if (!reach[s]) {
			print_error("%s is unreachable from INITIAL\n", sname(s));
			fail();
		}
	assert_false(reach[SUP_SAME]);

	/* the supervisor starts SUSPENDED (job.state suspended) or FINISHED (a finished job) too: each gets
	 * back to running a job, and STOPPED is reachable from every state by the table alone */
	reachable(SUP_SUSPENDED, false, false, reach);
	assert_true(reach[SUP_RUNNING]);
	reachable(SUP_FINISHED, false, false, reach);
	assert_true(reach[SUP_RUNNING]);
	for (int from = FIRST_STATE; from < NSTATES; from++) {
		reachable(from, false, false, reach);
		if (!reach[SUP_STOPPED]) {
			print_error("STOPPED is unreachable from %s\n", sname(from));
			fail();
		}
	}
}

static bool stopping_state(int s)
{
	return s == SUP_SAVEPOINTING || s == SUP_STOPPING || s == SUP_STOP_PENDING || s == SUP_STOPPED;
}

/* Every run of `e` from s (with the purpose "exit") ends in STOPPED, or, within `left` more `e`s, does. */
static bool ends_stopped(int s, int e, int left)
{
	if (s == SUP_STOPPED)
		return true;
	if (left == 0)
		return false;
	bool out[SUP_STATE_MAX];
	outcomes(s, e, true, out);
	for (int r = 0; r < NSTATES; r++)
		if (out[r] && !ends_stopped(r, e, left - 1))
			return false;
	return true;
}

static void test_stop_is_never_lost(void **state)
{
	(void)state;
	for (int s = FIRST_STATE; s < NSTATES; s++) {
		/* (no signal is read before the start: the loop is not running yet) */
		if (s == SUP_STOPPED || s == SUP_INITIAL)
			continue;
		if (ignored(s, EV_STOP))
			fail_cell(s, EV_STOP, "a stop is ignored");
		/* after EV_STOP the purpose is "exit": ACT_STOP and ACT_KILL_NOW set it */
		bool after[SUP_STATE_MAX];
		outcomes(s, EV_STOP, true, after);
		for (int a = 0; a < NSTATES; a++) {
			if (!after[a])
				continue;
			/* whatever happens next, the supervisor stays on the way out ... */
			bool reach[SUP_STATE_MAX];
			reachable(a, true, true, reach);
			for (int r = 0; r < NSTATES; r++) {
				if (!reach[r])
					continue;
				if (!stopping_state(r)) {
					print_error("%s + STOP -> %s reaches %s\n", sname(s), sname(a), sname(r));
					fail();
				}
				/* ... nothing on the way changes the purpose or starts a JVM ... */
				for (int e = 0; e < NEVENTS; e++) {
					enum sup_action act = cell(r, e)->action;
					if (act == ACT_SUSPEND || act == ACT_UPGRADE || act == ACT_ROLLBACK ||
					    act == ACT_LAUNCH || act == ACT_RELAUNCH || act == ACT_RESTART ||
					    act == ACT_START_FAILED || act == ACT_MARK_STABLE ||
					    act == ACT_GO_SUSPENDED || act == ACT_SPAWN)
						fail_cell(r, e, "after a stop");
				}
				/* ... and gets out: the JVM's exit, however it happens, ends it */
				for (size_t x = 0; x < COUNT(jvm_exits); x++)
					if (!ends_stopped(r, jvm_exits[x], 1)) {
						print_error("%s + STOP -> ... %s + %s does not stop\n", sname(s),
						            sname(r), sup_event_name(jvm_exits[x]));
						fail();
					}
				/* the shutdown budget (armed by the stop; ACT_KILL_NOW arms a last one): SIGKILL,
				 * then exit whatever the JVM does */
				if (!ends_stopped(r, EV_DEADLINE, 2)) {
					print_error("%s + STOP -> ... %s: the deadline does not stop\n", sname(s),
					            sname(r));
					fail();
				}
				/* a second stop, then the JVM's death or the budget */
				bool again[SUP_STATE_MAX];
				outcomes(r, EV_STOP, true, again);
				for (int g = 0; g < NSTATES; g++) {
					if (!again[g])
						continue;
					if (!ends_stopped(g, EV_JVM_KILLED, 1) || !ends_stopped(g, EV_DEADLINE, 2)) {
						print_error("%s + STOP -> ... %s + STOP -> %s does not stop\n",
						            sname(s), sname(r), sname(g));
						fail();
					}
				}
			}
		}
	}

	/* a stop for another purpose (suspend, upgrade, rollback) may come back to a running job ... */
	bool reach[SUP_STATE_MAX];
	reachable(SUP_SAVEPOINTING, true, false, reach);
	assert_true(reach[SUP_RUNNING]);
	/* ... but an EV_STOP in its middle turns it into the exit: SIGKILL now */
	want_cell(SUP_SAVEPOINTING, EV_STOP, ACT_KILL_NOW, SUP_STOPPING);
	want_cell(SUP_STOPPING, EV_STOP, ACT_KILL_NOW, SUP_SAME);
}

/* A launch waits in STARTING for its intent to reach the volume; only STARTING spawns on its durability, so a stop,
 * suspend, upgrade or rollback that came meanwhile (the state left STARTING, the launch called off) never spawns a
 * JVM afterwards: the durability callback of a launch called off is ignored everywhere else. */
static void test_launch_pending(void **state)
{
	(void)state;
	for (int s = 0; s < NSTATES; s++) {
		if (s == SUP_STARTING)
			want_cell(s, EV_LAUNCH_DURABLE, ACT_SPAWN, SUP_SAME);
		else if (!ignored(s, EV_LAUNCH_DURABLE))
			fail_cell(s, EV_LAUNCH_DURABLE, "a spawn outside STARTING");
		for (int e = 0; e < NEVENTS; e++)
			if (e != EV_LAUNCH_DURABLE && cell(s, e)->action == ACT_SPAWN)
				fail_cell(s, e, "a spawn by anything but the intent's durability");
	}
	/* a stop while the launch is pending: STARTING + STOP, whose outcomes include STOPPED at once (no JVM); from
	 * each of them the durability that comes later does nothing */
	bool out[SUP_STATE_MAX];
	outcomes(SUP_STARTING, EV_STOP, true, out);
	assert_true(out[SUP_STOPPED]);
	for (int r = 0; r < NSTATES; r++)
		if (out[r] && r != SUP_STARTING && !ignored(r, EV_LAUNCH_DURABLE))
			fail_cell(r, EV_LAUNCH_DURABLE, "a stop's state spawns");
	/* and a suspend's: SUSPENDED ignores it too; an upgrade launches anew (its own pending launch) */
	outcomes(SUP_STARTING, EV_SUSPEND, false, out);
	assert_true(out[SUP_SUSPENDED]);
	assert_true(ignored(SUP_SUSPENDED, EV_LAUNCH_DURABLE));
}

static struct sup_facts facts_none(void)
{
	return (struct sup_facts){0};
}

static void test_invariant_launch_pending(void **state)
{
	(void)state;
	struct sup_facts f = facts_none();
	/* STARTING with nothing at all is wrong; a pending launch is something */
	assert_non_null(lifecycle_invariant(SUP_STARTING, &f));
	f.launch_pending = true;
	assert_null(lifecycle_invariant(SUP_STARTING, &f));
	/* never with a JVM */
	f.jvm = true;
	f.startup_timer = true;
	assert_non_null(lifecycle_invariant(SUP_STARTING, &f));
	/* and never outside STARTING: every stop calls it off */
	f = facts_none();
	f.launch_pending = true;
	for (int s = FIRST_STATE; s < NSTATES; s++) {
		if (s == SUP_STARTING)
			continue;
		struct sup_facts g = f;
		/* whatever else the state has, the pending launch alone is a violation */
		g.jvm = s == SUP_RUNNING || s == SUP_SAVEPOINTING || s == SUP_STOPPING || s == SUP_STOP_PENDING;
		g.backoff_timer = g.stop_wait_timer = g.deadline_timer = g.kill_timer = true;
		const char *why = lifecycle_invariant((enum sup_state)s, &g);
		if (!why || !strstr(why, "launch pending")) {
			print_error("%s with a pending launch: %s\n", sname(s), why ? why : "accepted");
			fail();
		}
		g.launch_pending = false;
		assert_null(lifecycle_invariant((enum sup_state)s, &g));
	}
}

/* The other invariants, as the supervisor checked them before they became data. */
static void test_invariant_states(void **state)
{
	(void)state;
	struct sup_facts f = facts_none();
	f.jvm = true;
	assert_non_null(lifecycle_invariant(SUP_STARTING, &f)); /* a JVM without a startup timer */
	f.kill_sent = true;
	assert_null(lifecycle_invariant(SUP_STARTING, &f));
	f = facts_none();
	f.fetch = true;
	assert_null(lifecycle_invariant(SUP_STARTING, &f));
	f = facts_none();
	assert_non_null(lifecycle_invariant(SUP_RUNNING, &f));
	assert_non_null(lifecycle_invariant(SUP_BACKOFF, &f));
	f.backoff_timer = true;
	assert_null(lifecycle_invariant(SUP_BACKOFF, &f));
	f = facts_none();
	f.jvm = true;
	assert_non_null(lifecycle_invariant(SUP_STOP_PENDING, &f));
	f.stop_wait_timer = f.deadline_timer = true;
	assert_null(lifecycle_invariant(SUP_STOP_PENDING, &f));
	assert_non_null(lifecycle_invariant(SUP_SUSPENDED, &f));
	assert_non_null(lifecycle_invariant(SUP_STOPPED, &f));
	f.force_killed = true;
	assert_null(lifecycle_invariant(SUP_STOPPED, &f));
}

/* A job-only upgrade keeps the JVM: idle between its two jobs, it runs no job. */
static void test_invariant_idle_jvm(void **state)
{
	(void)state;
	struct sup_facts f = facts_none();
	f.jvm = f.jvm_idle = true;
	/* STARTING: the upgraded spec's launch is pending (then submitted to it), no startup timer yet */
	assert_non_null(lifecycle_invariant(SUP_STARTING, &f));
	f.launch_pending = true;
	assert_null(lifecycle_invariant(SUP_STARTING, &f));
	/* never RUNNING, never BACKOFF unless it was killed (a launch that failed), never in a state without a JVM */
	f.launch_pending = false;
	assert_non_null(lifecycle_invariant(SUP_RUNNING, &f));
	f.backoff_timer = true;
	assert_non_null(lifecycle_invariant(SUP_BACKOFF, &f));
	f.kill_sent = true;
	assert_null(lifecycle_invariant(SUP_BACKOFF, &f));
	assert_non_null(lifecycle_invariant(SUP_SUSPENDED, &f));
	/* SAVEPOINTING: the JVM whose job just ended is there */
	assert_null(lifecycle_invariant(SUP_SAVEPOINTING, &f));
}

/* ---- lifecycleState ---- */

static void test_state_lifecycle(void **state)
{
	(void)state;
	static const struct {
		enum sup_state s;
		enum lifecycle_state l;
	} map[] = {
	    {SUP_STARTING, LIFECYCLE_DEPLOYED},      {SUP_BACKOFF, LIFECYCLE_DEPLOYED},
	    {SUP_RUNNING, LIFECYCLE_STABLE},         {SUP_FINISHED, LIFECYCLE_STABLE},
	    {SUP_SAVEPOINTING, LIFECYCLE_UPGRADING}, {SUP_STOPPING, LIFECYCLE_UPGRADING},
	    {SUP_FAILED, LIFECYCLE_FAILED},          {SUP_SUSPENDED, LIFECYCLE_SUSPENDED},
	    {SUP_STOPPED, LIFECYCLE_SUSPENDED},      {SUP_STOP_PENDING, LIFECYCLE_UPGRADING},
	    {SUP_INITIAL, LIFECYCLE_CREATED},
	};
	assert_int_equal(COUNT(map), SUP_STATE_MAX - FIRST_STATE);
	bool seen[SUP_STATE_MAX] = {false};
	for (size_t i = 0; i < COUNT(map); i++) {
		assert_false(seen[map[i].s]);
		seen[map[i].s] = true;
		if (sup_state_lifecycle(map[i].s) != map[i].l) {
			print_error("%s -> %s, want %s\n", sname(map[i].s),
			            lifecycle_to_string(sup_state_lifecycle(map[i].s)), lifecycle_to_string(map[i].l));
			fail();
		}
	}
}

/* ---- names ---- */

static void check_names(const char *kind, const char *(*name)(int), int max, const char *const *want)
{
	for (int i = 0; i < max; i++) {
		const char *n = name(i);
		if (!n || !*n || !strcmp(n, "?") || strcmp(n, want[i])) {
			print_error("%s %d is named \"%s\", want \"%s\"\n", kind, i, n ? n : "(null)", want[i]);
			fail();
		}
		for (int j = 0; j < i; j++)
			if (!strcmp(n, name(j))) {
				print_error("%s %d and %d are both named \"%s\"\n", kind, j, i, n);
				fail();
			}
	}
	assert_string_equal(name(max), "?");
	assert_string_equal(name(max + 100), "?");
	assert_string_equal(name(-1), "?");
}

static const char *state_name(int i)
{
	return sup_state_name((enum sup_state)i);
}

static const char *event_name(int i)
{
	return sup_event_name((enum sup_event)i);
}

static const char *action_name(int i)
{
	return sup_action_name((enum sup_action)i);
}

/* The name of each enumerator is its identifier without the prefix: the arrays match the enums. */
#define NAME(prefix, x) [prefix##x] = #x

static void test_names(void **state)
{
	(void)state;
	static const char *const states[SUP_STATE_MAX] = {
	    NAME(SUP_, SAME),         NAME(SUP_, STARTING), NAME(SUP_, RUNNING),      NAME(SUP_, BACKOFF),
	    NAME(SUP_, SAVEPOINTING), NAME(SUP_, STOPPING), NAME(SUP_, SUSPENDED),    NAME(SUP_, FINISHED),
	    NAME(SUP_, FAILED),       NAME(SUP_, STOPPED),  NAME(SUP_, STOP_PENDING), NAME(SUP_, INITIAL),
	};
	static const char *const events[SUP_EVENT_MAX] = {
	    NAME(EV_, JOB_RUNNING),
	    NAME(EV_, JVM_EXITED_OK),
	    NAME(EV_, JVM_EXITED_ERROR),
	    NAME(EV_, JVM_KILLED),
	    NAME(EV_, STARTUP_TIMEOUT),
	    NAME(EV_, UNHEALTHY),
	    NAME(EV_, BACKOFF_DONE),
	    NAME(EV_, STOP),
	    NAME(EV_, SAVEPOINT_DONE),
	    NAME(EV_, SAVEPOINT_FAILED),
	    NAME(EV_, DEADLINE),
	    NAME(EV_, SUSPEND),
	    NAME(EV_, RESUME),
	    NAME(EV_, UPGRADE),
	    NAME(EV_, ROLLBACK),
	    NAME(EV_, LAUNCH_FAILED),
	    NAME(EV_, STOP_WAIT_OVER),
	    NAME(EV_, RESTORE_UNREADABLE),
	    NAME(EV_, LAUNCH_DURABLE),
	    NAME(EV_, STOP_CHECKPOINT),
	    NAME(EV_, START),
	    NAME(EV_, PROGRESS),
	    NAME(EV_, JVM_IDLE),
	};
	static const char *const actions[SUP_ACTION_MAX] = {
	    NAME(ACT_, NONE),
	    NAME(ACT_, MARK_STABLE),
	    NAME(ACT_, FINISHED),
	    NAME(ACT_, RESTART),
	    NAME(ACT_, START_FAILED),
	    NAME(ACT_, KILL_JVM),
	    NAME(ACT_, LAUNCH),
	    NAME(ACT_, RELAUNCH),
	    NAME(ACT_, STOP),
	    NAME(ACT_, SUSPEND),
	    NAME(ACT_, UPGRADE),
	    NAME(ACT_, ROLLBACK),
	    NAME(ACT_, TERMINATE),
	    NAME(ACT_, KILL_NOW),
	    NAME(ACT_, SAVEPOINT_RECORD),
	    NAME(ACT_, SAVEPOINT_ABANDON),
	    NAME(ACT_, STOPPED),
	    NAME(ACT_, STOPPED_SAVEPOINT),
	    NAME(ACT_, GO_SUSPENDED),
	    NAME(ACT_, EXIT),
	    NAME(ACT_, STOP_RUNNING),
	    NAME(ACT_, SPAWN),
	    NAME(ACT_, JUDGE),
	    NAME(ACT_, START),
	    NAME(ACT_, NEW_RUN),
	    NAME(ACT_, JVM_IDLE),
	};
	for (int i = 0; i < NSTATES; i++)
		assert_non_null(states[i]);
	for (int i = 0; i < NEVENTS; i++)
		assert_non_null(events[i]);
	for (int i = 0; i < NACTIONS; i++)
		assert_non_null(actions[i]);
	check_names("state", state_name, NSTATES, states);
	check_names("event", event_name, NEVENTS, events);
	check_names("action", action_name, NACTIONS, actions);
}

/* ---- backoff_delay ---- */

static void test_backoff_delay(void **state)
{
	(void)state;
	const usec_t s = USEC_PER_SEC;
	/* initial, then doubling, then capped */
	assert_int_equal(backoff_delay(1, 1 * s, 60 * s, 2.0), 1 * s);
	assert_int_equal(backoff_delay(2, 1 * s, 60 * s, 2.0), 2 * s);
	assert_int_equal(backoff_delay(3, 1 * s, 60 * s, 2.0), 4 * s);
	assert_int_equal(backoff_delay(6, 1 * s, 60 * s, 2.0), 32 * s);
	assert_int_equal(backoff_delay(7, 1 * s, 60 * s, 2.0), 60 * s);
	assert_int_equal(backoff_delay(8, 1 * s, 60 * s, 2.0), 60 * s);
	for (unsigned n = 1; n < 64; n++) {
		usec_t d = backoff_delay(n, 1 * s, 60 * s, 2.0);
		usec_t next = backoff_delay(n + 1, 1 * s, 60 * s, 2.0);
		assert_true(d >= 1 * s && d <= 60 * s);
		assert_true(next >= d); /* never shrinks */
	}
	/* huge n: no overflow, no wrap-around to a short delay */
	assert_int_equal(backoff_delay(1000, 1 * s, 60 * s, 2.0), 60 * s);
	assert_int_equal(backoff_delay(1000, 250 * USEC_PER_MSEC, 5 * 60 * s, 2.0), 5 * 60 * s);
	assert_int_equal(backoff_delay(4000000000u, 1 * s, 60 * s, 2.0), 60 * s);
	/* a cap near the top of the range */
	assert_true(backoff_delay(1000, 1, (usec_t)1 << 62, 2.0) == (usec_t)1 << 62);
	assert_true(backoff_delay(62, 1, (usec_t)1 << 62, 2.0) == (usec_t)1 << 61);
	/* multiplier 1: constant */
	for (unsigned n = 1; n <= 1000; n++)
		assert_int_equal(backoff_delay(n, 3 * s, 60 * s, 1.0), 3 * s);
	/* another multiplier */
	assert_int_equal(backoff_delay(2, 1000 * USEC_PER_MSEC, 60 * s, 1.5), 1500 * USEC_PER_MSEC);
	assert_int_equal(backoff_delay(3, 1000 * USEC_PER_MSEC, 60 * s, 1.5), 2250 * USEC_PER_MSEC);
	/* an initial delay above the cap is capped */
	assert_int_equal(backoff_delay(1, 90 * s, 60 * s, 2.0), 60 * s);
	/* initial == max */
	assert_int_equal(backoff_delay(5, 10 * s, 10 * s, 2.0), 10 * s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_bounds),
	    cmocka_unit_test(test_every_cell),
	    cmocka_unit_test(test_no_dead_action),
	    cmocka_unit_test(test_choices),
	    cmocka_unit_test(test_quiet_rows),
	    cmocka_unit_test(test_no_jvm_no_jvm_events),
	    cmocka_unit_test(test_health_checks),
	    cmocka_unit_test(test_every_state_reachable),
	    cmocka_unit_test(test_stop_is_never_lost),
	    cmocka_unit_test(test_state_lifecycle),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_backoff_delay),
	    cmocka_unit_test(test_launch_pending),
	    cmocka_unit_test(test_invariant_launch_pending),
	    cmocka_unit_test(test_invariant_states),
	    cmocka_unit_test(test_invariant_idle_jvm),
	};
	return cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
}

/* test_lifecycle: the supervisor's (state x event) -> (action, next state) table as data: bounds, the rows
 * that carry the design (a stop during a savepoint, a second SIGTERM, a JVM that dies mid-savepoint, a
 * failed restore), reachability of every state, that a stop is never lost, that health checks never
 * revive a finished or failed job; the lifecycleState of each state; the names; backoff_delay.
 *
 */
#include "unit.h"

#include "lifecycle.h"
#include "status.h"

#define NSTATES ((int)SUP_STATE_MAX)
#define NEVENTS ((int)SUP_EVENT_MAX)

static const enum sup_event jvm_exits[] = {EV_JVM_EXITED_OK, EV_JVM_EXITED_ERROR, EV_JVM_KILLED};

static const struct transition *cell(int s, int e)
{
	return &lifecycle_table[s][e];
}

static void fail_cell_at(int s, int e, const char *what, const char *file, int line)
{
	const struct transition *t = cell(s, e);
	print_error("%s + %s -> %s / %s: %s\n", sup_state_name((enum sup_state)s), sup_event_name((enum sup_event)e),
	            sup_action_name(t->action), sup_state_name(t->next), what);
	_fail(file, line);
}

#define fail_cell(s, e, what) fail_cell_at((s), (e), (what), __FILE__, __LINE__)

static bool ignored(int s, int e)
{
	return cell(s, e)->action == ACT_NONE && (int)cell(s, e)->next == s;
}

/* The states an action may end in: the table's next state, or one the action chooses at run time (the
 * header: "Actions that must choose ... return the state they chose; the table holds the usual one"). In
 * src/supervisor.c, restart and restore-failed give up at the crash-loop limit (FAILED); a launch that
 * cannot execute the JVM backs off (BACKOFF) or gives up; a stop outside upgradeMode savepoint
 * terminates (STOPPING). */
static int outcomes(enum sup_action a, enum sup_state next, enum sup_state out[4])
{
	int n = 0;
	out[n++] = next;
	switch (a) {
	case ACT_RESTART:
	case ACT_RESTORE_FAILED:
		out[n++] = SUP_FAILED;
		break;
	case ACT_LAUNCH:
		out[n++] = SUP_BACKOFF;
		out[n++] = SUP_FAILED;
		break;
	case ACT_STOP:
		out[n++] = SUP_STOPPING;
		break;
	default:
		break;
	}
	return n;
}

/* reach[s] := every state reachable from `from` (inclusive); with_choices adds the actions' choices. */
static void reachable(enum sup_state from, bool with_choices, bool reach[SUP_STATE_MAX])
{
	int queue[SUP_STATE_MAX];
	int head = 0, tail = 0;
	memset(reach, 0, sizeof(bool) * SUP_STATE_MAX);
	reach[from] = true;
	queue[tail++] = from;
	while (head < tail) {
		int s = queue[head++];
		for (int e = 0; e < NEVENTS; e++) {
			enum sup_state out[4];
			int n = with_choices ? outcomes(cell(s, e)->action, cell(s, e)->next, out) : 1;
			if (!with_choices)
				out[0] = cell(s, e)->next;
			for (int i = 0; i < n; i++)
				if (!reach[out[i]]) {
					reach[out[i]] = true;
					queue[tail++] = out[i];
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
			/* the supervisor logs ACT_NONE + same state as "ignored"; ACT_NONE never moves */
			if (t->action == ACT_NONE && (int)t->next != s)
				fail_cell(s, e, "a state change without an action");
		}
}

static void test_stopped_ignores_everything(void **state)
{
	(void)state;
	for (int e = 0; e < NEVENTS; e++)
		if (!ignored(SUP_STOPPED, e))
			fail_cell(SUP_STOPPED, e, "STOPPED must ignore every event");
}

static void test_finished_and_failed_only_stop(void **state)
{
	(void)state;
	static const enum sup_state terminal[] = {SUP_FINISHED, SUP_FAILED};
	for (size_t i = 0; i < sizeof(terminal) / sizeof(terminal[0]); i++)
		for (int e = 0; e < NEVENTS; e++) {
			int s = terminal[i];
			if (e == EV_STOP) {
				if (cell(s, e)->next != SUP_STOPPED || cell(s, e)->action != ACT_EXIT)
					fail_cell(s, e, "a stop must exit");
			} else if (!ignored(s, e)) {
				fail_cell(s, e, "only a stop may act here");
			}
		}
}

static void test_rows_that_matter(void **state)
{
	(void)state;
	static const struct {
		enum sup_state s;
		enum sup_event e;
		enum sup_action a;
		enum sup_state next;
	} rows[] = {
	    /* starting */
	    {SUP_STARTING, EV_JOB_RUNNING, ACT_MARK_STABLE, SUP_RUNNING},
	    {SUP_STARTING, EV_JVM_EXITED_OK, ACT_FINISHED, SUP_FINISHED},
	    {SUP_STARTING, EV_JVM_EXITED_ERROR, ACT_RESTORE_FAILED, SUP_BACKOFF}, /* the restore point is bad */
	    {SUP_STARTING, EV_JVM_KILLED, ACT_RESTART, SUP_BACKOFF},              /* killed: not its fault */
	    {SUP_STARTING, EV_STARTUP_TIMEOUT, ACT_KILL_JVM, SUP_STARTING},
	    {SUP_STARTING, EV_STOP, ACT_TERMINATE, SUP_STOPPING}, /* no savepoint before RUNNING */
	    /* running */
	    {SUP_RUNNING, EV_JVM_EXITED_OK, ACT_FINISHED, SUP_FINISHED},
	    {SUP_RUNNING, EV_JVM_EXITED_ERROR, ACT_RESTART, SUP_BACKOFF},
	    {SUP_RUNNING, EV_JVM_KILLED, ACT_RESTART, SUP_BACKOFF},
	    {SUP_RUNNING, EV_UNHEALTHY, ACT_KILL_JVM, SUP_RUNNING},
	    {SUP_RUNNING, EV_STOP, ACT_STOP, SUP_SAVEPOINTING},
	    /* savepointing */
	    {SUP_SAVEPOINTING, EV_JVM_EXITED_OK, ACT_STOPPED_SAVEPOINT, SUP_STOPPED},
	    {SUP_SAVEPOINTING, EV_JVM_EXITED_ERROR, ACT_STOPPED_SAVEPOINT, SUP_STOPPED},
	    {SUP_SAVEPOINTING, EV_JVM_KILLED, ACT_STOPPED_SAVEPOINT, SUP_STOPPED},
	    {SUP_SAVEPOINTING, EV_STOP, ACT_KILL_NOW, SUP_STOPPING}, /* a second SIGTERM */
	    {SUP_SAVEPOINTING, EV_SAVEPOINT_DONE, ACT_SAVEPOINT_RECORD, SUP_SAVEPOINTING},
	    {SUP_SAVEPOINTING, EV_SAVEPOINT_FAILED, ACT_SAVEPOINT_ABANDON, SUP_STOPPING},
	    {SUP_SAVEPOINTING, EV_DEADLINE, ACT_KILL_NOW, SUP_STOPPING},
	    /* stopping */
	    {SUP_STOPPING, EV_JVM_EXITED_OK, ACT_STOPPED, SUP_STOPPED},
	    {SUP_STOPPING, EV_JVM_KILLED, ACT_STOPPED, SUP_STOPPED},
	    {SUP_STOPPING, EV_STOP, ACT_KILL_NOW, SUP_STOPPING},
	    {SUP_STOPPING, EV_DEADLINE, ACT_KILL_NOW, SUP_STOPPED},
	    /* backoff */
	    {SUP_BACKOFF, EV_STOP, ACT_EXIT, SUP_STOPPED},
	    {SUP_BACKOFF, EV_BACKOFF_DONE, ACT_LAUNCH, SUP_STARTING},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct transition *t = cell(rows[i].s, rows[i].e);
		if (t->action != rows[i].a || t->next != rows[i].next) {
			print_error("want %s / %s\n", sup_action_name(rows[i].a), sup_state_name(rows[i].next));
			fail_cell(rows[i].s, rows[i].e, "unexpected transition");
		}
	}
}

static void test_health_checks_never_revive(void **state)
{
	(void)state;
	static const enum sup_event health[] = {EV_UNHEALTHY, EV_STARTUP_TIMEOUT};
	static const enum sup_state done[] = {SUP_FINISHED, SUP_FAILED, SUP_STOPPED};
	for (size_t h = 0; h < sizeof(health) / sizeof(health[0]); h++) {
		for (size_t d = 0; d < sizeof(done) / sizeof(done[0]); d++)
			if (!ignored(done[d], health[h]))
				fail_cell(done[d], health[h], "a health check acts on a job that is done");
		/* anywhere: a health check at most kills the JVM; the JVM's exit moves the state */
		for (int s = 0; s < NSTATES; s++) {
			const struct transition *t = cell(s, health[h]);
			if ((int)t->next != s)
				fail_cell(s, health[h], "a health check changes the state by itself");
			if (t->action != ACT_NONE && t->action != ACT_KILL_JVM)
				fail_cell(s, health[h], "a health check does more than kill the JVM");
		}
	}
	/* and never during a stop: the JVM is being stopped already */
	for (size_t h = 0; h < sizeof(health) / sizeof(health[0]); h++) {
		if (!ignored(SUP_SAVEPOINTING, health[h]))
			fail_cell(SUP_SAVEPOINTING, health[h], "a health check during the savepoint");
		if (!ignored(SUP_STOPPING, health[h]))
			fail_cell(SUP_STOPPING, health[h], "a health check while stopping");
	}
}

static void test_every_state_reachable(void **state)
{
	(void)state;
	bool reach[SUP_STATE_MAX];

	/* the table alone reaches every state but FAILED, which only the crash-loop limit chooses */
	reachable(SUP_STARTING, false, reach);
	for (int s = 0; s < NSTATES; s++)
		if (s != SUP_FAILED && !reach[s]) {
			print_error("%s is unreachable from STARTING\n", sup_state_name((enum sup_state)s));
			fail();
		}
	for (int s = 0; s < NSTATES; s++)
		for (int e = 0; e < NEVENTS; e++)
			if (s != SUP_FAILED && cell(s, e)->next == SUP_FAILED)
				fail_cell(s, e, "FAILED in the table: the actions choose it");

	/* with the actions' choices, every state */
	reachable(SUP_STARTING, true, reach);
	for (int s = 0; s < NSTATES; s++)
		if (!reach[s]) {
			print_error("%s is unreachable from STARTING\n", sup_state_name((enum sup_state)s));
			fail();
		}

	/* and STOPPED from everywhere */
	for (int from = 0; from < NSTATES; from++) {
		reachable((enum sup_state)from, false, reach);
		if (!reach[SUP_STOPPED]) {
			print_error("STOPPED is unreachable from %s\n", sup_state_name((enum sup_state)from));
			fail();
		}
	}
}

static bool stopping_state(int s)
{
	return s == SUP_SAVEPOINTING || s == SUP_STOPPING || s == SUP_STOPPED;
}

static void test_stop_is_never_lost(void **state)
{
	(void)state;
	for (int s = 0; s < NSTATES; s++) {
		if (s == SUP_STOPPED)
			continue;
		const struct transition *t = cell(s, EV_STOP);
		if (t->action == ACT_NONE)
			fail_cell(s, EV_STOP, "a stop is ignored");
		enum sup_state after[4];
		int n = outcomes(t->action, t->next, after);
		for (int i = 0; i < n; i++) {
			if (!stopping_state(after[i]))
				fail_cell(s, EV_STOP, "a stop leads to a state that is not stopping");
			/* the JVM's exit, however it happens, ends it */
			for (size_t x = 0; x < sizeof(jvm_exits) / sizeof(jvm_exits[0]); x++) {
				enum sup_state cur = after[i];
				if (cur != SUP_STOPPED)
					cur = cell(cur, jvm_exits[x])->next;
				if (cur != SUP_STOPPED) {
					print_error("%s + STOP -> %s + %s -> %s\n", sup_state_name((enum sup_state)s),
					            sup_state_name(after[i]), sup_event_name(jvm_exits[x]),
					            sup_state_name(cur));
					fail();
				}
			}
			/* a second stop, then the exit, too */
			enum sup_state cur = after[i];
			if (cur != SUP_STOPPED)
				cur = cell(cur, EV_STOP)->next;
			if (cur != SUP_STOPPED)
				cur = cell(cur, EV_JVM_KILLED)->next;
			assert_int_equal(cur, SUP_STOPPED);
			/* the shutdown budget (one deadline: SIGKILL), then the JVM's death */
			cur = after[i];
			if (cur != SUP_STOPPED)
				cur = cell(cur, EV_DEADLINE)->next;
			if (cur != SUP_STOPPED)
				cur = cell(cur, EV_JVM_KILLED)->next;
			assert_int_equal(cur, SUP_STOPPED);
		}
	}

	/* once stopping, no sequence of events (with the actions' choices) leads back to running a job */
	for (int s = 0; s < NSTATES; s++) {
		if (!stopping_state(s))
			continue;
		bool reach[SUP_STATE_MAX];
		reachable((enum sup_state)s, true, reach);
		for (int r = 0; r < NSTATES; r++)
			if (reach[r] && !stopping_state(r)) {
				print_error("%s reaches %s\n", sup_state_name((enum sup_state)s),
				            sup_state_name((enum sup_state)r));
				fail();
			}
	}
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
	    {SUP_FAILED, LIFECYCLE_FAILED},          {SUP_STOPPED, LIFECYCLE_SUSPENDED},
	};
	assert_int_equal(sizeof(map) / sizeof(map[0]), SUP_STATE_MAX);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sup_state_lifecycle(map[i].s) != map[i].l) {
			print_error("%s -> %s, want %s\n", sup_state_name(map[i].s),
			            lifecycle_to_string(sup_state_lifecycle(map[i].s)), lifecycle_to_string(map[i].l));
			fail();
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
	    NAME(SUP_, STARTING), NAME(SUP_, RUNNING),  NAME(SUP_, BACKOFF), NAME(SUP_, SAVEPOINTING),
	    NAME(SUP_, STOPPING), NAME(SUP_, FINISHED), NAME(SUP_, FAILED),  NAME(SUP_, STOPPED),
	};
	static const char *const events[SUP_EVENT_MAX] = {
	    NAME(EV_, JOB_RUNNING),     NAME(EV_, JVM_EXITED_OK),    NAME(EV_, JVM_EXITED_ERROR), NAME(EV_, JVM_KILLED),
	    NAME(EV_, STARTUP_TIMEOUT), NAME(EV_, UNHEALTHY),        NAME(EV_, BACKOFF_DONE),     NAME(EV_, STOP),
	    NAME(EV_, SAVEPOINT_DONE),  NAME(EV_, SAVEPOINT_FAILED), NAME(EV_, DEADLINE),
	};
	static const char *const actions[SUP_ACTION_MAX] = {
	    NAME(ACT_, NONE),
	    NAME(ACT_, MARK_STABLE),
	    NAME(ACT_, FINISHED),
	    NAME(ACT_, RESTART),
	    NAME(ACT_, RESTORE_FAILED),
	    NAME(ACT_, KILL_JVM),
	    NAME(ACT_, LAUNCH),
	    NAME(ACT_, STOP),
	    NAME(ACT_, TERMINATE),
	    NAME(ACT_, KILL_NOW),
	    NAME(ACT_, SAVEPOINT_RECORD),
	    NAME(ACT_, SAVEPOINT_ABANDON),
	    NAME(ACT_, STOPPED),
	    NAME(ACT_, STOPPED_SAVEPOINT),
	    NAME(ACT_, EXIT),
	};
	for (int i = 0; i < NSTATES; i++)
		assert_non_null(states[i]);
	for (int i = 0; i < NEVENTS; i++)
		assert_non_null(events[i]);
	for (int i = 0; i < (int)SUP_ACTION_MAX; i++)
		assert_non_null(actions[i]);
	check_names("state", state_name, NSTATES, states);
	check_names("event", event_name, NEVENTS, events);
	check_names("action", action_name, (int)SUP_ACTION_MAX, actions);
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
	    cmocka_unit_test(test_stopped_ignores_everything),
	    cmocka_unit_test(test_finished_and_failed_only_stop),
	    cmocka_unit_test(test_rows_that_matter),
	    cmocka_unit_test(test_health_checks_never_revive),
	    cmocka_unit_test(test_every_state_reachable),
	    cmocka_unit_test(test_stop_is_never_lost),
	    cmocka_unit_test(test_state_lifecycle),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_backoff_delay),
	};
	return cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
}

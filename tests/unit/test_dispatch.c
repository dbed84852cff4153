/* test_dispatch: the supervisor's dispatch beyond the table (test_lifecycle.c has every cell): the queue of events
 * raised while a transition runs (in order, bounded, nothing lost below its bound), and the invariants checked
 * after every dispatch (sup_invariant_violation): for each state, what must be pending (a JVM, a fetch, which
 * timer) and what must not, with real sd-event timers armed and disarmed. */
#include "unit.h"

#include <systemd/sd-event.h>

#include "lifecycle.h"
#include "sup.h"

static void test_queue_in_order(void **state)
{
	(void)state;
	struct event_queue q = {0};
	enum sup_event ev;
	assert_false(event_queue_pop(&q, &ev));
	/* many rounds, so that the ring wraps around more than once */
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 11; i++)
			assert_true(event_queue_push(&q, (enum sup_event)((round + i) % SUP_EVENT_MAX)));
		for (int i = 0; i < 11; i++) {
			assert_true(event_queue_pop(&q, &ev));
			assert_int_equal(ev, (round + i) % SUP_EVENT_MAX);
		}
		assert_false(event_queue_pop(&q, &ev));
	}
}

static void test_queue_bounded(void **state)
{
	(void)state;
	struct event_queue q = {0};
	for (int i = 0; i < EVENT_QUEUE_MAX; i++)
		assert_true(event_queue_push(&q, EV_STOP));
	assert_false(event_queue_push(&q, EV_DEADLINE)); /* full: refused, the queued ones kept */
	enum sup_event ev;
	int n = 0;
	while (event_queue_pop(&q, &ev)) {
		assert_int_equal(ev, EV_STOP);
		n++;
	}
	assert_int_equal(n, EVENT_QUEUE_MAX);
	assert_true(event_queue_push(&q, EV_DEADLINE)); /* room again */
}

static int never(sd_event_source *src, uint64_t usec, void *userdata)
{
	return 0;
}

struct fixture {
	sd_event *e;
	struct supervisor *s;
};

static sd_event_source *timer(struct fixture *f, bool on)
{
	sd_event_source *src = NULL;
	assert_int_equal(sd_event_add_time(f->e, &src, CLOCK_MONOTONIC, UINT64_MAX, 0, never, NULL), 0);
	if (!on)
		sd_event_source_set_enabled(src, SD_EVENT_OFF);
	return src;
}

static void reset(struct fixture *f, enum sup_state st, pid_t jvm)
{
	struct supervisor *s = f->s;
	sd_event_source **all[] = {&s->startup_timer,   &s->backoff_timer, &s->kill_timer,    &s->deadline_timer,
	                           &s->stop_wait_timer, &s->fetch.retry,   &s->fetch.jar_wait};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		*all[i] = sd_event_source_unref(*all[i]);
	memset(s, 0, sizeof(*s));
	s->state = st;
	s->jvm_pid = jvm;
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	assert_int_equal(sd_event_new(&f->e), 0);
	f->s = xcalloc(1, sizeof(*f->s));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	reset(f, SUP_STOPPED, 0);
	free(f->s);
	sd_event_unref(f->e);
	free(f);
	return 0;
}

#define OK() assert_null(sup_invariant_violation(f->s))
#define BAD(what) assert_contains(sup_invariant_violation(f->s), what)

static void test_invariants_starting(void **state)
{
	struct fixture *f = *state;
	struct supervisor *s = f->s;
	reset(f, SUP_STARTING, 0);
	BAD("STARTING without a JVM, a fetch or a timer");
	s->fetch.active = true; /* the jar is being fetched */
	OK();
	reset(f, SUP_STARTING, 0);
	s->fetch.retry = timer(f, true);
	OK();
	reset(f, SUP_STARTING, 0);
	s->fetch.retry = timer(f, false); /* a disarmed timer is no timer */
	BAD("without a JVM");
	s->fetch.jar_wait = timer(f, true);
	OK();
	reset(f, SUP_STARTING, 0);
	s->backoff_timer = timer(f, true);
	OK();

	reset(f, SUP_STARTING, 4242);
	BAD("no startup timer");
	s->startup_timer = timer(f, true);
	OK();
	reset(f, SUP_STARTING, 4242);
	s->jvm_kill_sent = true; /* the startup timer fired and killed it: its exit is awaited */
	OK();
}

static void test_invariants_running_and_backoff(void **state)
{
	struct fixture *f = *state;
	struct supervisor *s = f->s;
	reset(f, SUP_RUNNING, 0);
	BAD("RUNNING without a JVM");
	reset(f, SUP_RUNNING, 4242);
	OK();
	reset(f, SUP_SAVEPOINTING, 0);
	BAD("SAVEPOINTING without a JVM");
	reset(f, SUP_SAVEPOINTING, 4242);
	OK();

	reset(f, SUP_BACKOFF, 4242);
	s->backoff_timer = timer(f, true);
	BAD("BACKOFF with a JVM");
	reset(f, SUP_BACKOFF, 0);
	BAD("BACKOFF without its timer");
	s->backoff_timer = timer(f, false);
	BAD("BACKOFF without its timer");
	sd_event_source_set_enabled(s->backoff_timer, SD_EVENT_ONESHOT);
	OK();
}

static void test_invariants_stopping(void **state)
{
	struct fixture *f = *state;
	struct supervisor *s = f->s;
	reset(f, SUP_STOP_PENDING, 0);
	BAD("STOP_PENDING without a JVM");
	reset(f, SUP_STOP_PENDING, 4242);
	BAD("STOP_PENDING without its timers");
	s->stop_wait_timer = timer(f, true);
	BAD("STOP_PENDING without its timers"); /* both: the wait's share and the whole budget */
	s->deadline_timer = timer(f, true);
	OK();

	reset(f, SUP_STOPPING, 0);
	BAD("STOPPING without a JVM");
	reset(f, SUP_STOPPING, 4242);
	BAD("STOPPING without a kill timer");
	s->kill_timer = timer(f, true);
	OK();
	reset(f, SUP_STOPPING, 4242);
	s->deadline_timer = timer(f, true);
	OK();
}

static void test_invariants_at_rest(void **state)
{
	struct fixture *f = *state;
	static const enum sup_state rest[] = {SUP_SUSPENDED, SUP_FINISHED, SUP_FAILED, SUP_STOPPED};
	for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++) {
		reset(f, rest[i], 0);
		OK();
		reset(f, rest[i], 4242);
		BAD("a JVM runs in a state without one");
	}
	/* after the shutdown budget flinklet exits without waiting for the killed JVM's reap */
	reset(f, SUP_STOPPED, 4242);
	f->s->jvm_force_killed = true;
	OK();
	reset(f, SUP_FAILED, 4242);
	f->s->jvm_force_killed = true;
	BAD("a JVM runs in a state without one");
	reset(f, SUP_SAME, 0);
	BAD("an unknown state");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_queue_in_order),
	    cmocka_unit_test(test_queue_bounded),
	    cmocka_unit_test_setup_teardown(test_invariants_starting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invariants_running_and_backoff, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invariants_stopping, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invariants_at_rest, setup, teardown),
	};
	return cmocka_run_group_tests_name("dispatch", tests, NULL, NULL);
}

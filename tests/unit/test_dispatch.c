/* test_dispatch: the supervisor's dispatch beyond the table (test_lifecycle.c has every cell): the queue of events
 * raised while a transition runs (in order, bounded, nothing lost below its bound), and the invariants checked
 * after every dispatch (sup_invariant_violation): for each state, what must be pending (a JVM, a pending launch, a
 * fetch, which timer) and what must not, with real sd-event timers armed and disarmed; and the dispatch itself on a
 * real supervisor that launches nothing (built by tests/support/sup_fixture.c, as tests/fuzz/fuzz_http.c's): an event
 * raised by an action (a jar download that cannot begin) is queued and dispatched after the transition in progress is
 * complete, so the state ends where the table's two rows say, and every invariant holds. */
#include "unit.h"

#include <systemd/sd-event.h>

#include "config.h"
#include "digest.h"
#include "lifecycle.h"
#include "log.h"
#include "store.h"
#include "sup.h"
#include "sup_fixture.h"

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
	sd_event_source **all[] = {&s->launch.startup_timer, &s->backoff_timer,   &s->stop.kill_timer,
	                           &s->stop.deadline_timer,  &s->stop.wait_timer, &s->fetch.retry,
	                           &s->launch.jar_wait};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		*all[i] = sd_event_source_unref(*all[i]);
	memset(s, 0, sizeof(*s));
	s->state = st;
	s->launch.jvm_pid = jvm;
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
	BAD("STARTING without a JVM, a pending launch, a fetch or a timer");
	s->fetch.active = true; /* the jar is being fetched */
	OK();
	reset(f, SUP_STARTING, 0);
	s->launch.spawn.pending = true; /* the launch's intent is on its way to the volume */
	OK();
	reset(f, SUP_STARTING, 0);
	s->fetch.retry = timer(f, true);
	OK();
	reset(f, SUP_STARTING, 0);
	s->fetch.retry = timer(f, false); /* a disarmed timer is no timer */
	BAD("without a JVM");
	s->launch.jar_wait = timer(f, true);
	OK();
	reset(f, SUP_STARTING, 0);
	s->backoff_timer = timer(f, true);
	OK();

	reset(f, SUP_STARTING, 4242);
	BAD("no startup timer");
	s->launch.startup_timer = timer(f, true);
	OK();
	reset(f, SUP_STARTING, 4242);
	s->launch.kill_sent = true; /* the startup timer fired and killed it: its exit is awaited */
	OK();
	/* a pending launch never goes with a JVM, nor outside STARTING (a stop calls it off) */
	s->launch.spawn.pending = true;
	BAD("a launch pending while a JVM runs");
	reset(f, SUP_RUNNING, 4242);
	s->launch.spawn.pending = true;
	BAD("a launch pending outside STARTING");
	reset(f, SUP_STOPPED, 0);
	s->launch.spawn.pending = true;
	BAD("a launch pending outside STARTING");
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
	s->stop.wait_timer = timer(f, true);
	BAD("STOP_PENDING without its timers"); /* both: the wait's share and the whole budget */
	s->stop.deadline_timer = timer(f, true);
	OK();

	reset(f, SUP_STOPPING, 0);
	BAD("STOPPING without a JVM");
	reset(f, SUP_STOPPING, 4242);
	BAD("STOPPING without a kill timer");
	s->stop.kill_timer = timer(f, true);
	OK();
	reset(f, SUP_STOPPING, 4242);
	s->stop.deadline_timer = timer(f, true);
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
	f->s->stop.force_killed = true;
	OK();
	reset(f, SUP_FAILED, 4242);
	f->s->stop.force_killed = true;
	BAD("a JVM runs in a state without one");
	reset(f, SUP_SAME, 0);
	BAD("an unknown state");
}

/* A real supervisor at rest (tests/support/sup_fixture.h) whose launches get nowhere: jar is one artifact_plan
 * refuses or cannot fetch. */
static struct supervisor *supervisor_at_rest(const char *jar)
{
	struct supervisor *s = xcalloc(1, sizeof(*s));
	assert_int_equal(sup_fixture_init(s, &(struct sup_fixture){.name = "test-dispatch", .jar = jar}), 0);
	return s;
}

static void supervisor_done(struct supervisor *s)
{
	sup_fixture_free(s);
	free(s);
}

/* An event raised inside an action: a remote jar whose download cannot even begin (its temp file cannot be
 * made: <state dir>/artifacts is a file) fails the launch with LAUNCH_FAILED while RESUME's LAUNCH runs. */
static void test_event_raised_by_an_action_waits_its_turn(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	struct supervisor *s = supervisor_at_rest("https://flinklet.invalid/job.jar");
	free(write_text(s->state_dir, "artifacts", "not a directory"));
	s->state = SUP_SUSPENDED;
	s->status.lifecycle = sup_lifecycle(s);
	/* taken at once, LAUNCH_FAILED would meet SUSPENDED (ignored there) and LAUNCH's STARTING would follow with
	 * nothing pending; queued, STARTING + LAUNCH_FAILED -> RESTART -> BACKOFF follows the transition */
	sup_raise(s, EV_RESUME);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_null(sup_invariant_violation(s));
	assert_false(s->dispatching);
	assert_int_equal(s->queue.len, 0);
	assert_int_equal(s->consecutive_failures, 1);
	assert_int_equal(s->launch.jvm_pid, 0);
	/* the backoff is over: the same again, one failure more */
	sup_raise(s, EV_BACKOFF_DONE);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_null(sup_invariant_violation(s));
	assert_int_equal(s->consecutive_failures, 2);
	/* a suspend during the backoff: no JVM, nothing to stop */
	sup_raise(s, EV_SUSPEND);
	assert_int_equal(s->state, SUP_SUSPENDED);
	assert_null(sup_invariant_violation(s));
	/* the event log: the two failed fetches, each followed by its restart */
	char *path = path_join(s->state_dir, "events.jsonl"), *log = NULL;
	size_t len = 0;
	assert_int_equal(read_file(path, 1 << 20, &log, &len), 0);
	const char *fail1 = strstr(log, "ArtifactFetchFailed");
	assert_non_null(fail1);
	const char *fail2 = strstr(fail1 + 1, "ArtifactFetchFailed");
	assert_non_null(fail2);
	assert_null(strstr(fail2 + 1, "ArtifactFetchFailed"));
	free(log);
	free(path);
	supervisor_done(s);
}

/* A remote SQL script (issue 37) checked before the launch: its cached copy with an error is refused at the URI's line
 * and column (a SqlScriptInvalid event, the status source sqlScriptFetch), leaves the cache, and the launch fails
 * (BACKOFF) without a JVM start counted; a good cached copy needs no download (the server is unreachable here) and
 * its sha256 goes to the runner. */
static void test_a_remote_script_is_checked_before_the_launch(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	struct supervisor *s = supervisor_at_rest("local:///nonexistent/flinklet-test/udfs.jar");
	const char *uri = "https://flinklet.invalid/jobs/job.sql";
	free(s->spec->job.entry_class);
	s->spec->job.entry_class = xstrdup("dev.flinklet.launcher.SqlScriptRunner");
	s->spec->job.sql_script = xstrdup(uri);
	char h[65];
	sha256_hex(uri, strlen(uri), h);
	char *cache = path_join(s->state_dir, "artifacts"), *name = xasprintf("uri-%s.sql", h);
	assert_int_equal(mkdir_p(cache), 0);
	char *cached = write_text(cache, name,
	                          "CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n"
	                          "INSERT INTO b SELECT x FROM a;\n"
	                          "  INSERT INTO b SELECT x + 1 FROM a;\n");
	int starts = s->status.jvm_starts;
	s->state = SUP_SUSPENDED;
	sup_raise(s, EV_RESUME);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_null(sup_invariant_violation(s));
	assert_int_equal(s->status.jvm_starts, starts);
	const char *e = sup_error(s, STATUS_ERR_SQL_FETCH);
	assert_non_null(e);
	assert_contains(e, "the job's SQL script https://flinklet.invalid/jobs/job.sql is refused, no JVM is "
	                   "started with it: https://flinklet.invalid/jobs/job.sql:3:3: spec.job.sqlScript: "
	                   "INSERT: a second job in the script");
	assert_int_equal(access(cached, F_OK), -1); /* out of the cache: the next launch downloads it again */
	char *path = path_join(s->state_dir, "events.jsonl"), *log = NULL;
	size_t len = 0;
	assert_int_equal(read_file(path, 1 << 20, &log, &len), 0);
	assert_non_null(strstr(log, "SqlScriptInvalid"));
	assert_null(strstr(log, "ArtifactFetching"));
	free(log);
	/* mended in the cache: no download, the launch goes on to the jar (missing here: JarUnusable, no JVM) */
	const char *good = "INSERT INTO b SELECT 1;\n";
	free(write_text(cache, name, good));
	sup_raise(s, EV_BACKOFF_DONE);
	assert_int_equal(s->state, SUP_STARTING);
	assert_null(sup_invariant_violation(s));
	char want[65];
	sha256_hex(good, strlen(good), want);
	assert_string_equal(s->fetch.sql_sha256, want);
	assert_non_null(sup_error(s, STATUS_ERR_JAR));
	assert_int_equal(read_file(path, 1 << 20, &log, &len), 0);
	assert_null(strstr(log, "ArtifactFetching"));
	assert_non_null(strstr(log, "JarUnusable"));
	free(log);
	free(path);
	free(cached);
	free(name);
	free(cache);
	sup_raise(s, EV_STOP);
	supervisor_done(s);
}

/* A launch refused at once by the artifact planner (no event raised: LAUNCH chooses BACKOFF itself). */
static void test_launch_refused_backs_off(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	struct supervisor *s = supervisor_at_rest("test-no-launch:job.jar");
	s->state = SUP_SUSPENDED;
	sup_raise(s, EV_RESUME);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_null(sup_invariant_violation(s));
	sup_raise(s, EV_STOP);
	assert_int_equal(s->state, SUP_STOPPED);
	assert_null(sup_invariant_violation(s));
	supervisor_done(s);
}

/* A part asks for a transition with sup_raise, outside any action (a timer's callback, a REST reply, the API): it
 * reaches the table at once (sup_raise is the driver's one entry point), also on a supervisor built by hand that was
 * never dispatched to before. */
static void test_a_part_raises_an_event_outside_a_transition(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	struct supervisor *s = supervisor_at_rest("test-no-launch:job.jar");
	s->state = SUP_SUSPENDED;
	sup_raise(s, EV_RESUME);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_false(s->dispatching);
	assert_int_equal(s->consecutive_failures, 1);
	sup_raise(s, EV_STOP);
	assert_int_equal(s->state, SUP_STOPPED);
	assert_null(sup_invariant_violation(s));
	supervisor_done(s);
}

/* A stop that ends in a launch (a suspend, and a resume came in while the JVM stopped): the stop part returns
 * SUP_STARTING and the driver launches the desired spec (here refused at once: BACKOFF), the stop part never calls
 * the launch itself. */
static void test_a_stop_that_ends_in_a_launch_goes_through_the_driver(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	struct supervisor *s = supervisor_at_rest("test-no-launch:job.jar");
	s->state = SUP_STOPPING;
	s->stop.purpose = STOP_SUSPEND;
	s->spec->job.state = JOB_STATE_RUNNING;
	int starts = s->status.jvm_starts;
	sup_raise(s, EV_JVM_EXITED_OK);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_int_equal(s->consecutive_failures, 1); /* the driver's launch ran, and was refused */
	/* refused before its intent (the jar cannot be planned): no JVM start is counted */
	assert_int_equal(s->status.jvm_starts, starts);
	assert_null(sup_invariant_violation(s));
	/* the same stop with the job suspended meanwhile: SUSPENDED, nothing launched */
	s->backoff_timer = sup_disarm(s->backoff_timer);
	s->state = SUP_STOPPING;
	s->spec->job.state = JOB_STATE_SUSPENDED;
	sup_raise(s, EV_JVM_EXITED_OK);
	assert_int_equal(s->state, SUP_SUSPENDED);
	assert_int_equal(s->status.jvm_starts, starts);
	assert_null(sup_invariant_violation(s));
	supervisor_done(s);
}

/* The status errors on a real supervisor: a part's own slot (a jar download that fails), a more important one (the
 * volume) shown over it, and the job coming up clears what kept it from running (each part its own) while the
 * volume's error and a demoted restore point's stay. */
static void test_errors_by_source_and_the_job_running(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	struct supervisor *s = supervisor_at_rest("https://flinklet.invalid/job.jar");
	free(write_text(s->state_dir, "artifacts", "not a directory"));
	s->state = SUP_SUSPENDED;
	sup_raise(s, EV_RESUME);
	assert_int_equal(s->state, SUP_BACKOFF);
	assert_contains(s->status.error, "unable to fetch the job's jar");
	assert_non_null(sup_error(s, STATUS_ERR_FETCH));
	sup_error_set(s, STATUS_ERR_VOLUME, "unable to write status.json on the state volume");
	assert_string_equal(s->status.error, "unable to write status.json on the state volume");
	sup_error_set(s, STATUS_ERR_FAILOVER, "job failed, Flink restarts it");
	sup_error_set(s, STATUS_ERR_DEMOTED, "chk-3 was given up");
	sup_error_set(s, STATUS_ERR_JOB, "job FAILED: boom");
	sup_error_set(s, STATUS_ERR_SNAPSHOT, "MANUAL savepoint failed");
	sup_error_set(s, STATUS_ERR_LAUNCH, "the JVM exited with code 1 before the job was RUNNING");
	/* the job runs (a JVM of the current launch: a pid no process has) */
	s->backoff_timer = sup_disarm(s->backoff_timer);
	s->state = SUP_STARTING;
	s->launch.jvm_pid = 0x3ffffff0;
	sup_raise(s, EV_JOB_RUNNING);
	assert_int_equal(s->state, SUP_RUNNING);
	assert_null(sup_error(s, STATUS_ERR_FETCH));
	assert_null(sup_error(s, STATUS_ERR_FAILOVER));
	assert_null(sup_error(s, STATUS_ERR_JOB));
	assert_null(sup_error(s, STATUS_ERR_SNAPSHOT));
	assert_null(sup_error(s, STATUS_ERR_LAUNCH));
	assert_non_null(sup_error(s, STATUS_ERR_DEMOTED));
	assert_string_equal(s->status.error, "unable to write status.json on the state volume");
	/* the volume takes writes again: the demotion shows, as long as that launch runs */
	s->volume_errno = EIO;
	sup_volume_write(s, "status.json", 0);
	assert_null(sup_error(s, STATUS_ERR_VOLUME));
	assert_string_equal(s->status.error, "chk-3 was given up");
	s->launch.jvm_pid = 0;
	s->state = SUP_STOPPED;
	supervisor_done(s);
}

/* The first state is the table's: SUP_INITIAL + EV_START, the action choosing among what the cell lists (the driver
 * checks it; FLINKLET_STRICT=1 makes a transition the table does not list abort this test). */
static void test_the_start_is_an_event(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_FATAL);
	/* a job that FINISHED earlier stays so */
	struct supervisor *s = supervisor_at_rest("test-no-launch:job.jar");
	s->state = SUP_INITIAL;
	sup_set_job_state(s, "FINISHED");
	sup_raise(s, EV_START);
	assert_int_equal(s->state, SUP_FINISHED);
	assert_int_equal(s->status.lifecycle, LIFECYCLE_STABLE);
	assert_null(sup_invariant_violation(s));
	supervisor_done(s);
	/* job.state suspended: not started */
	s = supervisor_at_rest("test-no-launch:job.jar");
	s->state = SUP_INITIAL;
	s->spec->job.state = JOB_STATE_SUSPENDED;
	sup_raise(s, EV_START);
	assert_int_equal(s->state, SUP_SUSPENDED);
	assert_int_equal(s->status.lifecycle, LIFECYCLE_SUSPENDED);
	assert_string_equal(s->status.job_state, "SUSPENDED");
	supervisor_done(s);
	/* the first launch cannot happen (the jar cannot be planned): FAILED, exit 3, said in the status */
	s = supervisor_at_rest("test-no-launch:job.jar");
	s->state = SUP_INITIAL;
	sup_raise(s, EV_START);
	assert_int_equal(s->state, SUP_FAILED);
	assert_int_equal(s->exit_code, 3);
	assert_int_equal(s->status.lifecycle, LIFECYCLE_FAILED);
	assert_string_equal(s->status.error, "unable to start the JVM");
	assert_non_null(sup_error(s, STATUS_ERR_LAUNCH));
	/* and the start is said only once: INITIAL is left for good */
	assert_int_equal(lifecycle_outcomes(SUP_FAILED, EV_START, false), SUP_STATE_BIT(SUP_FAILED));
	supervisor_done(s);
}

int main(void)
{
	/* a transition the lifecycle table does not list, or a broken invariant, aborts (as in the e2e suites) */
	setenv("FLINKLET_STRICT", "1", 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_queue_in_order),
	    cmocka_unit_test(test_queue_bounded),
	    cmocka_unit_test_setup_teardown(test_invariants_starting, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invariants_running_and_backoff, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invariants_stopping, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invariants_at_rest, setup, teardown),
	    cmocka_unit_test(test_event_raised_by_an_action_waits_its_turn),
	    cmocka_unit_test(test_launch_refused_backs_off),
	    cmocka_unit_test(test_a_part_raises_an_event_outside_a_transition),
	    cmocka_unit_test(test_a_stop_that_ends_in_a_launch_goes_through_the_driver),
	    cmocka_unit_test(test_errors_by_source_and_the_job_running),
	    cmocka_unit_test(test_a_remote_script_is_checked_before_the_launch),
	    cmocka_unit_test(test_the_start_is_an_event),
	};
	return cmocka_run_group_tests_name("dispatch", tests, NULL, NULL);
}

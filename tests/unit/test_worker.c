/* test_worker: the work the event loop hands off (src/base/worker.c): jobs run on another thread in order, their done
 * callbacks back on the loop in the same order, and worker_drain waits for them; the grouped writes of the
 * volume's records (store_append_events, and sup_core.c's flush): a burst of events costs one fdatasync and one
 * status.json replacement whatever its size, nothing is written on the loop, sup_sync makes what was recorded
 * durable at once, and events the volume did not take are appended later, first and in order; an action waiting
 * for its record (sup_after_sync) runs after it is on the volume, in order, never at once nor at exit; a rename aside
 * (sup_volume_rename) runs on the worker, busy until done, ahead of the next intent; the JVM's
 * scratch directory (src/base/scratch.c): emptied per launch by renaming aside, the old one removed by a child process.
 */
#include "unit.h"

#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "scratch.h"
#include "status.h"
#include "store.h"
#include "sup.h"
#include "worker.h"

/* ---- the worker ---- */

struct order {
	pthread_t loop;
	int ran[16], done[16];
	int n_ran, n_done;
	bool off_loop;
	pthread_mutex_t lock;
};

struct one {
	struct order *o;
	int id;
	unsigned sleep_ms;
};

static void job_fn(void *arg)
{
	struct one *j = arg;
	if (j->sleep_ms)
		usleep(j->sleep_ms * 1000);
	pthread_mutex_lock(&j->o->lock);
	j->o->ran[j->o->n_ran++] = j->id;
	if (pthread_equal(pthread_self(), j->o->loop))
		j->o->off_loop = false;
	pthread_mutex_unlock(&j->o->lock);
}

static void job_done(void *arg)
{
	struct one *j = arg;
	/* on the loop's thread, after the job ran */
	assert_true(pthread_equal(pthread_self(), j->o->loop));
	j->o->done[j->o->n_done++] = j->id;
}

static void test_jobs_run_off_the_loop_in_order(void **state)
{
	(void)state;
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct worker *w = NULL;
	assert_int_equal(worker_new(e, &w), 0);
	struct order o = {.loop = pthread_self(), .off_loop = true};
	pthread_mutex_init(&o.lock, NULL);
	struct one jobs[8];
	for (int i = 0; i < 8; i++) {
		jobs[i] = (struct one){.o = &o, .id = i, .sleep_ms = i == 0 ? 50 : 0};
		worker_submit(w, job_fn, job_done, &jobs[i]);
	}
	/* nothing is called back from inside submit: the loop does it */
	assert_int_equal(o.n_done, 0);
	for (int spins = 0; o.n_done < 8 && spins < 1000; spins++)
		assert_true(sd_event_run(e, 100 * 1000) >= 0);
	assert_int_equal(o.n_ran, 8);
	assert_int_equal(o.n_done, 8);
	assert_true(o.off_loop);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(o.ran[i], i);
		assert_int_equal(o.done[i], i);
	}
	assert_int_equal(worker_pending(w), 0);
	worker_free(w);
	sd_event_unref(e);
	pthread_mutex_destroy(&o.lock);
}

static void test_drain_waits_for_a_slow_job(void **state)
{
	(void)state;
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct worker *w = NULL;
	assert_int_equal(worker_new(e, &w), 0);
	struct order o = {.loop = pthread_self(), .off_loop = true};
	pthread_mutex_init(&o.lock, NULL);
	struct one slow = {.o = &o, .id = 1, .sleep_ms = 200}, quick = {.o = &o, .id = 2};
	worker_submit(w, job_fn, job_done, &slow);
	worker_submit(w, job_fn, job_done, &quick);
	assert_true(worker_pending(w) >= 1);
	worker_drain(w);
	/* both ran and both were called back, without the loop running */
	assert_int_equal(o.n_ran, 2);
	assert_int_equal(o.n_done, 2);
	assert_int_equal(o.done[0], 1);
	assert_int_equal(worker_pending(w), 0);
	/* freeing with work queued runs it first */
	struct one last = {.o = &o, .id = 3};
	worker_submit(w, job_fn, job_done, &last);
	worker_free(w);
	assert_int_equal(o.n_ran, 3);
	assert_int_equal(o.n_done, 3);
	sd_event_unref(e);
	pthread_mutex_destroy(&o.lock);
}

/* Without a worker (before the loop is set up, in tools): the job and then its done callback run at once, here. */
static void test_no_worker_runs_at_once(void **state)
{
	(void)state;
	struct order o = {.loop = pthread_self(), .off_loop = true};
	pthread_mutex_init(&o.lock, NULL);
	struct one a = {.o = &o, .id = 1}, b = {.o = &o, .id = 2};
	worker_submit(NULL, job_fn, job_done, &a);
	assert_int_equal(o.n_ran, 1);
	assert_int_equal(o.n_done, 1);
	assert_false(o.off_loop);              /* on this thread */
	worker_submit(NULL, job_fn, NULL, &b); /* no done callback */
	assert_int_equal(o.n_ran, 2);
	assert_int_equal(o.ran[1], 2);
	assert_int_equal(o.n_done, 1);
	pthread_mutex_destroy(&o.lock);
}

/* ---- store_append_events ---- */

static size_t count_lines(const char *path)
{
	char *text = NULL;
	if (read_file(path, 1 << 24, &text, NULL) < 0)
		return 0;
	size_t n = 0;
	for (char *p = text; *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

static void test_a_batch_of_events_is_one_fdatasync(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	struct strv lines = {0};
	for (int i = 0; i < 100; i++)
		strv_push_take(&lines, xasprintf("{\"n\": %d}", i));
	uint64_t before = store_syncs();
	assert_int_equal(store_append_events(dir, lines.v, lines.n), 0);
	assert_int_equal(store_syncs() - before, 1);
	char *path = path_join(dir, "events.jsonl");
	assert_int_equal(count_lines(path), 100);
	/* in order, each a whole line */
	char *text = NULL;
	assert_int_equal(read_file(path, 1 << 20, &text, NULL), 0);
	assert_true(str_has_prefix(text, "{\"n\": 0}\n{\"n\": 1}\n"));
	assert_non_null(strstr(text, "{\"n\": 98}\n{\"n\": 99}\n"));
	free(text);
	/* nothing to append: no sync at all */
	before = store_syncs();
	assert_int_equal(store_append_events(dir, lines.v, 0), 0);
	assert_int_equal(store_syncs() - before, 0);
	/* a volume that does not take them: an error, and the file as it was */
	char *bad = path_join(dir, "not-a-dir");
	free(write_text(dir, "not-a-dir", "x"));
	assert_true(store_append_events(bad, lines.v, lines.n) < 0);
	assert_int_equal(count_lines(path), 100);
	free(bad);
	free(path);
	strv_free(&lines);
	remove_tree(dir);
}

/* ---- the supervisor's grouped flush (sup_core.c) ---- */

static void sup_init(struct supervisor *s, const char *dir, sd_event *e)
{
	memset(s, 0, sizeof(*s));
	s->event = e;
	s->state_dir = xstrdup(dir);
	memcpy(s->job_id, "0123456789abcdef0123456789abcdef", 33);
	status_init(&s->status);
	if (e)
		assert_int_equal(sup_journal_setup(s), 0);
}

static void sup_done(struct supervisor *s)
{
	sup_journal_free(s);
	status_free(&s->status);
	strv_free(&s->pending_events);
	free(s->last_written);
	free(s->state_dir);
	free(s->volume_failed_file);
}

static bool flush_scheduled(struct supervisor *s)
{
	int enabled = SD_EVENT_OFF;
	return s->flush_source && sd_event_source_get_enabled(s->flush_source, &enabled) >= 0 &&
	       enabled != SD_EVENT_OFF;
}

static void run_until_idle(struct supervisor *s)
{
	/* (what the volume refused stays pending: nothing retries it until something new is recorded) */
	for (int spins = 0; spins < 200 && (s->flushing || flush_scheduled(s) ||
	                                    ((s->pending_events.n || s->status_dirty) && !s->volume_errno) ||
	                                    worker_pending(s->worker));
	     spins++)
		assert_true(sd_event_run(s->event, 50 * 1000) >= 0);
}

static void test_a_burst_of_events_costs_one_flush(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	char *dir = make_tempdir();
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct supervisor s;
	sup_init(&s, dir, e);
	char *events = path_join(dir, "events.jsonl"), *status = path_join(dir, "status.json");
	uint64_t before = store_syncs();
	/* one loop iteration's worth: 50 events and 10 status changes */
	for (int i = 0; i < 50; i++) {
		sup_event(&s, "Test", "event %d", i);
		if (i % 5 == 0) {
			s.status.jvm_starts = i;
			sup_write_status(&s);
		}
	}
	/* nothing written yet: the loop has not come round */
	assert_int_equal(store_syncs() - before, 0);
	assert_int_equal(count_lines(events), 0);
	run_until_idle(&s);
	/* one fdatasync of the event log, one replacement of status.json (the file and its directory) */
	assert_int_equal(store_syncs() - before, 3);
	assert_int_equal(count_lines(events), 50);
	char *text = NULL;
	assert_int_equal(read_file(status, 1 << 20, &text, NULL), 0);
	struct status st;
	assert_int_equal(status_parse(text, &st), 0);
	assert_int_equal(st.jvm_starts, 45); /* the last one recorded */
	status_free(&st);
	free(text);
	/* an unchanged status is not written again */
	before = store_syncs();
	sup_write_status(&s);
	run_until_idle(&s);
	assert_int_equal(store_syncs() - before, 0);
	/* sup_sync: on the volume when it returns, without the loop */
	sup_event(&s, "Intent", "about to act");
	sup_sync(&s);
	assert_int_equal(count_lines(events), 51);
	sup_done(&s);
	sd_event_unref(e);
	free(events);
	free(status);
	remove_tree(dir);
}

static void test_events_the_volume_refused_go_first_later(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	char *dir = make_tempdir();
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct supervisor s;
	sup_init(&s, dir, e);
	/* events.jsonl cannot be opened for appending while a directory has its name */
	char *events = path_join(dir, "events.jsonl");
	assert_int_equal(mkdir(events, 0700), 0);
	sup_event(&s, "First", "one");
	sup_event(&s, "Second", "two");
	run_until_idle(&s);
	assert_int_equal(s.volume_errno != 0, true);
	assert_int_equal(s.pending_events.n, 2);
	assert_non_null(s.status.error);
	/* the volume works again: the next event takes the refused ones with it, in order */
	assert_int_equal(rmdir(events), 0);
	sup_event(&s, "Third", "three");
	run_until_idle(&s);
	sup_sync(&s);
	char *text = NULL;
	assert_int_equal(read_file(events, 1 << 20, &text, NULL), 0);
	char *one = strstr(text, "\"First\""), *two = strstr(text, "\"Second\""), *three = strstr(text, "\"Third\"");
	char *back = strstr(text, "\"VolumeWritable\"");
	assert_non_null(one);
	assert_non_null(two);
	assert_non_null(three);
	assert_non_null(back);
	assert_true(one < two && two < three && three < back);
	assert_int_equal(s.volume_errno, 0);
	free(text);
	sup_done(&s);
	sd_event_unref(e);
	free(events);
	remove_tree(dir);
}

/* status.json is refused, then taken again: the copy on the volume loses the "unable to write" error at once, not
 * only with the status's next change (a CI run read the error long after the volume had recovered) */
static void test_a_recovered_status_json_drops_its_volume_error(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	char *dir = make_tempdir();
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct supervisor s;
	sup_init(&s, dir, e);
	char *status = path_join(dir, "status.json");
	/* the rename onto status.json fails while a directory has its name */
	assert_int_equal(mkdir(status, 0700), 0);
	s.status.jvm_starts = 1;
	sup_write_status(&s);
	run_until_idle(&s);
	assert_int_equal(s.volume_errno != 0, true);
	assert_non_null(s.status.error);
	/* the volume works again; the next change is written (its text still carries the error, taken before the
	 * write succeeded) and nothing else changes afterwards */
	assert_int_equal(rmdir(status), 0);
	s.status.jvm_starts = 2;
	sup_write_status(&s);
	run_until_idle(&s);
	assert_int_equal(s.volume_errno, 0);
	assert_null(s.status.error);
	char *text = NULL;
	assert_int_equal(read_file(status, 1 << 20, &text, NULL), 0);
	struct status st;
	assert_int_equal(status_parse(text, &st), 0);
	assert_int_equal(st.jvm_starts, 2);
	assert_null(st.error);
	status_free(&st);
	free(text);
	sup_done(&s);
	sd_event_unref(e);
	free(status);
	remove_tree(dir);
}

static void test_without_a_loop_records_are_written_at_once(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	char *dir = make_tempdir();
	struct supervisor s;
	sup_init(&s, dir, NULL);
	sup_event(&s, "Early", "before the loop");
	char *events = path_join(dir, "events.jsonl");
	assert_int_equal(count_lines(events), 1);
	sup_done(&s);
	free(events);
	remove_tree(dir);
}

/* ---- an action after its record is durable (sup_after_sync) ---- */

static struct {
	const char *events, *file;
	int fired[8];
	int lines_then[8], file_then[8];
	int n;
} waited;

static void note(struct supervisor *s, uintptr_t arg)
{
	(void)s;
	waited.fired[waited.n] = (int)arg;
	waited.lines_then[waited.n] = count_lines(waited.events);
	waited.file_then[waited.n] = waited.file && access(waited.file, F_OK) == 0;
	waited.n++;
}

static void test_an_action_waits_for_its_record_not_the_loop(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	char *dir = make_tempdir();
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct supervisor s;
	sup_init(&s, dir, e);
	char *events = path_join(dir, "events.jsonl"), *file = path_join(dir, "sub/job-state.override");
	memset(&waited, 0, sizeof(waited));
	waited.events = events;
	/* the intent, then the action: never run at once (an action must not re-enter the dispatch) */
	sup_event(&s, "Restoring", "the intent");
	sup_after_sync(&s, note, 1);
	assert_int_equal(waited.n, 0);
	/* one turn of the loop hands the flush over; while it is in flight, a second intent and its action */
	assert_true(sd_event_run(s.event, 0) >= 0);
	sup_event(&s, "SavepointTriggered", "the second intent");
	sup_after_sync(&s, note, 2);
	run_until_idle(&s);
	/* each ran once its own record was on the volume, in order */
	assert_int_equal(waited.n, 2);
	assert_int_equal(waited.fired[0], 1);
	assert_true(waited.lines_then[0] >= 1);
	assert_int_equal(waited.fired[1], 2);
	assert_int_equal(waited.lines_then[1], 2);
	/* nothing recorded, but a file handed to the worker before: the action runs after it is written (an empty
	 * flush, ordered behind it) */
	waited.file = file;
	sup_write_file(&s, file, xstrdup("suspended running\n"), "the desired job state");
	sup_after_sync(&s, note, 3);
	run_until_idle(&s);
	assert_int_equal(waited.n, 3);
	assert_int_equal(waited.fired[2], 3);
	assert_int_equal(waited.file_then[2], 1);
	/* the loop is over: what still waits does not run (no launch, no request at exit); the record is written */
	sup_event(&s, "Restoring", "a launch the stop overtook");
	sup_after_sync(&s, note, 4);
	sup_done(&s);
	assert_int_equal(waited.n, 3);
	assert_int_equal(count_lines(events), 3);
	sd_event_unref(e);
	free(events);
	free(file);
	remove_tree(dir);
}

/* ---- the volume's metadata work off the loop (sup_volume_rename, sup_volume_unlink) ---- */

static sem_t gate;

static void gate_fn(void *arg)
{
	(void)arg;
	sem_wait(&gate);
}

static struct {
	int r[4];
	int n;
	bool busy_in_done;
	int n_waited_then; /* how many sup_after_sync actions had run when the rename's done came */
} renamed;

static void on_renamed(struct supervisor *s, int r, void *arg)
{
	renamed.busy_in_done = sup_volume_busy(s, arg);
	renamed.r[renamed.n++] = r;
	renamed.n_waited_then = waited.n;
}

static void test_a_rename_aside_runs_on_the_worker_before_the_next_intent(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_ERROR);
	char *dir = make_tempdir();
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct supervisor s;
	sup_init(&s, dir, e);
	memset(&renamed, 0, sizeof(renamed));
	memset(&waited, 0, sizeof(waited));
	char *events = path_join(dir, "events.jsonl");
	waited.events = events;
	char *point = path_join(dir, "savepoint-012345-aaaaaaaaaaaa");
	assert_int_equal(mkdir(point, 0700), 0);
	free(write_text(point, "_metadata", "x"));
	char *aside = xasprintf("%s.disposing", point);
	waited.file = aside;
	/* the worker is busy with something slow (a flush on a slow volume): the rename waits behind it, the loop does
	 * not; meanwhile the point is busy, under any spelling, and still has its name */
	assert_int_equal(sem_init(&gate, 0, 0), 0);
	worker_submit(s.worker, gate_fn, NULL, NULL);
	sup_volume_rename(&s, point, aside, on_renamed, point);
	char *slash = xasprintf("%s/", point);
	assert_true(sup_volume_busy(&s, point));
	assert_true(sup_volume_busy(&s, slash));
	assert_false(sup_volume_busy(&s, aside));
	assert_false(sup_volume_busy(&s, NULL));
	assert_int_equal(access(point, F_OK), 0);
	/* a launch's intent recorded after it, and its action */
	sup_event(&s, "Restoring", "the next launch's intent");
	sup_after_sync(&s, note, 1);
	assert_true(sd_event_run(s.event, 0) >= 0);
	assert_int_equal(renamed.n, 0);
	assert_int_equal(waited.n, 0);
	sem_post(&gate);
	run_until_idle(&s);
	/* the rename's done ran first (the worker's order), the point no longer busy in it; the action after, with the
	 * rename on the volume */
	assert_int_equal(renamed.n, 1);
	assert_int_equal(renamed.r[0], 0);
	assert_false(renamed.busy_in_done);
	assert_int_equal(renamed.n_waited_then, 0);
	assert_int_equal(waited.n, 1);
	assert_int_equal(waited.file_then[0], 1);
	assert_int_equal(access(point, F_OK), -1);
	assert_false(sup_volume_busy(&s, point));
	/* an unlink of what is not there: its done says so */
	char *missing = path_join(dir, "missing");
	sup_volume_unlink(&s, missing, on_renamed, missing);
	run_until_idle(&s);
	assert_int_equal(renamed.n, 2);
	assert_int_equal(renamed.r[1], -ENOENT);
	/* without a loop (before it runs, after it): at once */
	sup_done(&s);
	sup_init(&s, dir, NULL);
	sup_volume_rename(&s, aside, point, on_renamed, aside);
	assert_int_equal(renamed.n, 3);
	assert_int_equal(renamed.r[2], 0);
	assert_int_equal(access(point, F_OK), 0);
	sup_done(&s);
	strv_free(&s.volume_busy);
	sem_destroy(&gate);
	sd_event_unref(e);
	free(missing);
	free(slash);
	free(aside);
	free(point);
	free(events);
	remove_tree(dir);
}

/* ---- the JVM's scratch directory (src/base/scratch.c) ---- */

static void test_scratch_rotation_and_removal_off_the_loop(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *scratch = path_join(dir, "scratch");
	char *err = NULL;
	/* made if missing, flinklet's own: strict passes */
	assert_int_equal(scratch_open(scratch, true, &err), 0);
	/* a symlink in its place is refused, strict or not */
	char *link = path_join(dir, "link");
	assert_int_equal(symlink(scratch, link), 0);
	assert_true(scratch_open(link, false, &err) < 0);
	assert_contains(err, "not a directory");
	free(err);
	err = NULL;
	/* someone else may write to it: refused as the default (in a shared /tmp), taken when configured */
	char *open_dir = path_join(dir, "open");
	assert_int_equal(mkdir(open_dir, 0777), 0);
	assert_int_equal(chmod(open_dir, 0777), 0);
	assert_true(scratch_open(open_dir, true, &err) < 0);
	assert_contains(err, "not flinklet's own");
	free(err);
	err = NULL;
	assert_int_equal(scratch_open(open_dir, false, &err), 0);

	/* the first launch: nothing to put aside */
	char *old = NULL;
	assert_int_equal(scratch_rotate(scratch, 1, &old), 0);
	assert_null(old);
	char *jvm = path_join(scratch, "jvm");
	free(write_text(jvm, "spill-0001", "x"));
	/* the next: the earlier JVM's files go aside at once, the new JVM gets an empty directory */
	assert_int_equal(scratch_rotate(scratch, 2, &old), 0);
	assert_non_null(old);
	assert_true(str_has_prefix(old, scratch));
	assert_non_null(strstr(old, "/.old-"));
	char *spill = path_join(old, "spill-0001");
	assert_int_equal(access(spill, F_OK), 0);
	char *fresh = path_join(jvm, "spill-0001");
	assert_int_equal(access(fresh, F_OK), -1);
	/* what is set aside stays until removed, by a child process */
	struct strv left = {0};
	scratch_set_aside(scratch, &left);
	assert_int_equal(left.n, 1);
	assert_string_equal(left.v[0], old);
	pid_t pid = scratch_remove(&left);
	assert_true(pid > 0);
	assert_int_not_equal(pid, getpid());
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(access(jvm, F_OK), 0);
	strv_free(&left);
	/* nothing to remove: no child */
	assert_int_equal(scratch_remove(&left), 0);
	/* the default: local, per deployment */
	char *a = scratch_default_dir("clicks", "/var/lib/flinklet"), *b = scratch_default_dir("clicks", "/data/x");
	assert_non_null(strstr(a, "/flinklet-clicks-"));
	assert_string_not_equal(a, b);
	free(a);
	free(b);
	free(spill);
	free(fresh);
	free(old);
	free(jvm);
	free(open_dir);
	free(link);
	free(scratch);
	remove_tree(dir);
}

/* The exit's bounded wait: a job held (a hung volume) makes worker_drain_until give up at its deadline, without
 * running done callbacks; once the job ends, it returns true and runs them. */
static int drain_done_n;
static void count_done(void *arg)
{
	(void)arg;
	drain_done_n++;
}

static void test_drain_until_gives_up_at_its_deadline(void **state)
{
	(void)state;
	sd_event *e = NULL;
	assert_int_equal(sd_event_new(&e), 0);
	struct worker *w = NULL;
	assert_int_equal(worker_new(e, &w), 0);
	assert_int_equal(sem_init(&gate, 0, 0), 0);
	drain_done_n = 0;
	worker_submit(w, gate_fn, count_done, NULL);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	assert_false(worker_drain_until(w, now + 50000)); /* 50 ms: the job is held */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t after = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	assert_true(after >= now + 50000);
	assert_int_equal(drain_done_n, 0);
	assert_false(worker_drain_until(w, now)); /* a deadline already past: at once */
	sem_post(&gate);
	assert_true(worker_drain_until(w, after + 60ull * 1000000u));
	assert_int_equal(drain_done_n, 1);
	assert_true(worker_drain_until(w, 0)); /* nothing queued: true even with a past deadline */
	worker_free(w);
	sem_destroy(&gate);
	sd_event_unref(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jobs_run_off_the_loop_in_order),
	    cmocka_unit_test(test_drain_waits_for_a_slow_job),
	    cmocka_unit_test(test_no_worker_runs_at_once),
	    cmocka_unit_test(test_a_batch_of_events_is_one_fdatasync),
	    cmocka_unit_test(test_a_burst_of_events_costs_one_flush),
	    cmocka_unit_test(test_events_the_volume_refused_go_first_later),
	    cmocka_unit_test(test_a_recovered_status_json_drops_its_volume_error),
	    cmocka_unit_test(test_without_a_loop_records_are_written_at_once),
	    cmocka_unit_test(test_an_action_waits_for_its_record_not_the_loop),
	    cmocka_unit_test(test_a_rename_aside_runs_on_the_worker_before_the_next_intent),
	    cmocka_unit_test(test_scratch_rotation_and_removal_off_the_loop),
	    cmocka_unit_test(test_drain_until_gives_up_at_its_deadline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

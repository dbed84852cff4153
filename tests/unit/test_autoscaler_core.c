/* test_autoscaler_core: whole cycles of the job autoscaler (reference 0.2, 1.6) fed with REST-shaped
 * responses as the supervisor's collector would: stabilization and the metric window, the decision
 * stored (history, tracking, overrides) and re-applied through the realizer on every cycle, restart
 * detection and restart-time tracking, the enabled switch clearing state, a job that is not RUNNING,
 * REST failures and missing metrics as AutoscalerError (quiet while stabilizing), metrics-only mode with
 * deduplicated reports, the user's overrides and excluded vertices when applying, the file store across
 * a restart of the autoscaler, a corrupt state file, cleanup, and the report for GET /metrics.
 *
 * The job: "src" (p 2) -> HASH -> "agg" (p 2), 128 key groups. The source takes in 1000 records/s and
 * is busy 200 ms/s (TPR = 1000 / 0.2 = 5000); agg takes in 1000/s, its numRecordsInPerSecond is 800
 * and it is busy 1000 ms/s: TPR = 800 / 1.0 = 800 < SCALE_UP (jround(1000 / 1.0) = 1000), outside.
 * capacity = jround(1000 * 300 / 1800 + 1000 / 0.7) = 1595; agg: f = 1595 / 800 = 1.994,
 * ceil(3.99) = 4, 4 divides 128 -> 4. src: f = 1595 / 5000 = 0.319 -> 0.4, ceil(0.8) = 1: a scale-down,
 * delayed (scale-down.interval 1 h), so src does not move. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_store_mem.h"
#include "as_internal.h"
#include "store.h"

/* the job is RUNNING since 1000 s (Flink's 0 means "never") */
#define T0 1000000
#define T(ms) (T0 + (ms))

struct fx {
	struct autoscaler *as;
	struct as_options o;
	struct strv events;
	int realized;
	char *last_overrides;
	int realize_rc;
	int p_src, p_agg;
	int64_t running_ts;
	bool drop_busy; /* the agg vertex's listing lacks busyTimeMsPerSecond */
	bool nan_busy;  /* the agg vertex's busyTimeMsPerSecond has no value (a legacy source, say) */
	bool hook;      /* a scaling hook reviews rescales */
};

static void on_event(void *ud, const char *job_key, enum as_event_type type, const char *reason, const char *message,
                     const char *message_key, int64_t interval_ms)
{
	struct fx *f = ud;
	assert_string_equal(job_key, "job1");
	strv_push_take(&f->events, xasprintf("%s|%s|%s", as_event_type_name(type), reason, message));
}

static int on_realize(void *ud, const char *job_key, const struct as_pmap *overrides)
{
	struct fx *f = ud;
	f->realized++;
	free(f->last_overrides);
	f->last_overrides = as_pmap_to_flink(overrides);
	return f->realize_rc;
}

static struct autoscaler *make(struct fx *f, struct as_state_store store)
{
	struct as_realizer r = {on_realize, f};
	struct as_event_handler h = {on_event, f};
	return autoscaler_new(&r, &h, store);
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	as_options_defaults(&f->o);
	f->o.enabled = true;
	f->o.stabilization_ms = 10000;
	f->o.metrics_window_ms = 30000;
	f->p_src = f->p_agg = 2;
	f->running_ts = T0;
	f->as = make(f, as_store_memory_new());
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	autoscaler_free(f->as);
	as_options_free(&f->o);
	strv_free(&f->events);
	free(f->last_overrides);
	free(f);
	return 0;
}

static cJSON *parse(char *text)
{
	cJSON *j = cJSON_Parse(text);
	assert_non_null(j);
	free(text);
	return j;
}

/* Feeds one REST snapshot at now (records counted from the job's start) as the collector does. */
static void collect(struct fx *f, struct as_job *job, int64_t now)
{
	double secs = (double)(now - f->running_ts) / 1000.0;
	cJSON *details = parse(xasprintf(
	    "{\"timestamps\": {\"RUNNING\": %lld}, \"vertices\": ["
	    " {\"id\": \"src\", \"maxParallelism\": 128, \"parallelism\": %d, \"status\": \"RUNNING\","
	    "  \"metrics\": {\"read-records\": 0, \"write-records\": %.0f, \"accumulated-busy-time\": 0}},"
	    " {\"id\": \"agg\", \"maxParallelism\": 128, \"parallelism\": %d, \"status\": \"RUNNING\","
	    "  \"metrics\": {\"read-records\": %.0f, \"write-records\": 0, \"accumulated-busy-time\": 0}}],"
	    " \"plan\": {\"nodes\": [{\"id\": \"src\", \"parallelism\": %d},"
	    "  {\"id\": \"agg\", \"parallelism\": %d, \"inputs\": [{\"id\": \"src\", \"ship_strategy\": \"HASH\"}]}]}}",
	    (long long)f->running_ts, f->p_src, 1000 * secs, f->p_agg, 1000 * secs, f->p_src, f->p_agg));
	assert_int_equal(as_collect_topology(job, details, NULL, NULL), 0);
	cJSON_Delete(details);
	struct strv need = {0};
	as_collect_listings_needed(job, &need);
	for (size_t i = 0; i < need.n; i++) {
		bool src = !strcmp(need.v[i], "src");
		cJSON *l = parse(
		    xstrdup(src ? "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": \"backPressuredTimeMsPerSecond\"},"
		                  " {\"id\": \"Source__s.numRecordsInPerSecond\"}, {\"id\": "
		                  "\"Source__s.numRecordsIn\"}]"
		            : f->drop_busy ? "[{\"id\": \"numRecordsInPerSecond\"}]"
		                           : "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": "
		                             "\"numRecordsInPerSecond\"}]"));
		assert_int_equal(as_collect_listing(job, need.v[i], l), 0);
		cJSON_Delete(l);
	}
	strv_free(&need);
	cJSON *v = parse(xasprintf("[{\"id\": \"busyTimeMsPerSecond\", \"max\": 200},"
	                           " {\"id\": \"backPressuredTimeMsPerSecond\", \"avg\": 0},"
	                           " {\"id\": \"Source__s.numRecordsInPerSecond\", \"sum\": 1000},"
	                           " {\"id\": \"Source__s.numRecordsIn\", \"sum\": %.0f}]",
	                           1000 * secs));
	char *q = as_collect_vertex_query(job, "src");
	assert_non_null(q);
	free(q);
	assert_int_equal(as_collect_vertex_metrics(job, "src", v), 0);
	cJSON_Delete(v);
	v = parse(xasprintf("[{\"id\": \"busyTimeMsPerSecond\", \"max\": %s}, {\"id\": \"numRecordsInPerSecond\", "
	                    "\"sum\": 800}]",
	                    f->nan_busy ? "\"NaN\"" : "1000"));
	assert_int_equal(as_collect_vertex_metrics(job, "agg", v), 0);
	cJSON_Delete(v);
	v = parse(
	    xstrdup("[{\"id\": \"taskSlotsTotal\", \"value\": \"4\"}, {\"id\": \"taskSlotsAvailable\", \"value\": "
	            "\"0\"}]"));
	as_collect_jm_metrics(job, v);
	cJSON_Delete(v);
	v = parse(xstrdup("[{\"id\": \"Status.JVM.Memory.Heap.Used\", \"max\": 100}, {\"id\": "
	                  "\"Status.JVM.Memory.Heap.Max\", \"max\": 1000}]"));
	assert_int_equal(as_collect_tm_metrics(job, v), 0);
	cJSON_Delete(v);
}

static enum as_outcome cycle_with(struct fx *f, int64_t now, const char *status, const struct as_pmap *user)
{
	struct as_job *job = autoscaler_job(f->as, "job1");
	if (status && !strcmp(status, "RUNNING"))
		collect(f, job, now);
	struct as_context ctx = {.job_key = "job1",
	                         .options = &f->o,
	                         .job_status = status,
	                         .now_ms = now,
	                         .user_overrides = user,
	                         .hook = f->hook};
	return autoscaler_scale(f->as, &ctx);
}

static enum as_outcome cycle(struct fx *f, int64_t now)
{
	return cycle_with(f, now, "RUNNING", NULL);
}

static void scale_up_agg(struct fx *f)
{
	assert_int_equal(cycle(f, T(5000)), AS_OUTCOME_NOT_READY);   /* stabilizing, 1 sample */
	assert_int_equal(cycle(f, T(10000)), AS_OUTCOME_COLLECTING); /* full at 10 + 30 = 40 s */
	assert_int_equal(cycle(f, T(20000)), AS_OUTCOME_COLLECTING);
	assert_int_equal(cycle(f, T(30000)), AS_OUTCOME_COLLECTING);
	assert_int_equal(f->realized, 0); /* nothing stored yet */
	assert_int_equal(cycle(f, T(40000)), AS_OUTCOME_SCALED);
}

static void test_window_and_decision(void **state)
{
	struct fx *f = *state;
	scale_up_agg(f);
	/* the window was trimmed to [10 s, 40 s] */
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(job->history.n, 4);
	assert_int_equal(job->history.s[0].ts, T(10000));
	/* the decision: agg 2 -> 4, src stays (its scale-down waits), overrides for every vertex */
	assert_int_equal(f->realized, 1);
	assert_string_equal(f->last_overrides, "src:2,agg:4");
	assert_int_equal(job->scaling_history.n, 1);
	assert_string_equal(job->scaling_history.v[0].vertex, "agg");
	assert_int_equal(job->scaling_history.v[0].e[0].new_parallelism, 4);
	assert_true(job->scaling_history.v[0].e[0].m[AS_EM_EXPECTED_PROCESSING_RATE].current == 1600);
	assert_int_equal(job->tracking.n, 1);
	assert_int_equal(job->tracking.r[0].restart_ms, -1);
	assert_int_equal(job->delayed.n, 0); /* cleared by the rescale */
	assert_int_equal(f->events.n, 1);
	assert_string_equal(f->events.v[0],
	                    "Normal|ScalingReport|Scaling execution enabled, begin scaling vertices:{ "
	                    "Vertex ID agg | Parallelism 2 -> 4 | Processing capacity 800.00 -> 1600.00 "
	                    "| Target data rate 1000.00}");
	/* status.json and GET /metrics */
	cJSON *o = autoscaler_overrides_json(f->as, "job1");
	char *s = cJSON_PrintUnformatted(o);
	assert_string_equal(s, "{\"src\":\"2\",\"agg\":\"4\"}");
	free(s);
	cJSON_Delete(o);
	cJSON *r = autoscaler_report_json(f->as, "job1");
	s = cJSON_PrintUnformatted(r);
	assert_contains(s, "\"agg\":{\"LOAD\":1,\"TRUE_PROCESSING_RATE\":800,");
	assert_contains(s, "\"RECOMMENDED_PARALLELISM\":4,");
	assert_contains(s, "\"scalings\":1,\"balanced\":0,\"errors\":0");
	free(s);
	cJSON_Delete(r);

	/* until the rescale happens the overrides are applied on every cycle; the next decision sees agg
	 * still at 2 (the realizer has not acted yet), and decides the same */
	assert_int_equal(cycle(f, T(50000)), AS_OUTCOME_SCALED);
	assert_int_equal(f->realized, 2);

	/* the job restarts with agg at 4 (RUNNING since 55 s): the window starts again, and the restart took
	 * 55 - 50 = 5 s after the latest rescale */
	f->p_agg = 4;
	f->running_ts = T(55000);
	assert_int_equal(cycle(f, T(60000)), AS_OUTCOME_NOT_READY);
	assert_int_equal(job->history.n, 1);
	assert_int_equal(job->tracking.r[job->tracking.n - 1].restart_ms, 5000);
	assert_int_equal(f->realized, 3);
	f->o.restart_tracking = true;
	assert_int_equal(as_restart_seconds(&f->o, &job->tracking), 5);
}

static void test_disabled_clears_state(void **state)
{
	struct fx *f = *state;
	scale_up_agg(f);
	f->o.enabled = false;
	assert_int_equal(cycle_with(f, T(50000), "RUNNING", NULL), AS_OUTCOME_DISABLED);
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(job->history.n, 0);
	assert_int_equal(job->overrides.n, 0);
	assert_int_equal(job->scaling_history.n, 0);
	assert_int_equal(f->realized, 1); /* no stored overrides: nothing to apply */
	/* enabled again: collection starts from scratch */
	f->o.enabled = true;
	assert_int_equal(cycle(f, T(60000)), AS_OUTCOME_NOT_READY);
}

static void test_not_running_reapplies(void **state)
{
	struct fx *f = *state;
	scale_up_agg(f);
	/* a job that is not RUNNING (or RUNNING with tasks not all running: CREATED) is not evaluated, but the
	 * stored overrides are applied again */
	assert_string_equal(as_effective_status("RUNNING", 4, 3, 0), "CREATED");
	assert_string_equal(as_effective_status("RUNNING", 4, 3, 1), "RUNNING");
	assert_int_equal(cycle_with(f, T(50000), "CREATED", NULL), AS_OUTCOME_NOT_RUNNING);
	assert_int_equal(f->realized, 2);
	assert_string_equal(f->last_overrides, "src:2,agg:4");
	/* a realizer failure is an AutoscalerError event */
	f->realize_rc = -EIO;
	assert_int_equal(cycle_with(f, T(60000), "RESTARTING", NULL), AS_OUTCOME_NOT_RUNNING);
	assert_string_equal(f->events.v[f->events.n - 1],
	                    "Warning|AutoscalerError|Cannot apply the parallelism overrides: Input/output error");
}

static void test_user_overrides_and_exclusion(void **state)
{
	struct fx *f = *state;
	scale_up_agg(f);
	/* the user's pipeline.jobvertex-parallelism-overrides: the autoscaler's values win ... */
	struct as_pmap user;
	assert_int_equal(as_pmap_parse_flink("agg:7,other:3", &user), 0);
	cycle_with(f, T(50000), "CREATED", &user);
	assert_string_equal(f->last_overrides, "agg:4,other:3,src:2");
	/* ... except for excluded vertices, where the user's value stays */
	strv_push(&f->o.exclude_ids, "agg");
	cycle_with(f, T(60000), "CREATED", &user);
	assert_string_equal(f->last_overrides, "agg:7,other:3,src:2");
	as_pmap_free(&user);
}

/* A vertex without busy time in this cycle's sample is excluded for the cycle, as in the operator (its
 * collector adds it to vertex.exclude.ids of the cycle's configuration): it is not scaled, and when the
 * overrides are applied the user's own override of it wins. The next cycle with busy time, the autoscaler's
 * value is back. */
static void test_cycle_exclusion_keeps_user_override(void **state)
{
	struct fx *f = *state;
	scale_up_agg(f);
	struct as_pmap user;
	assert_int_equal(as_pmap_parse_flink("agg:7", &user), 0);
	assert_int_equal(cycle_with(f, T(50000), "RUNNING", &user), AS_OUTCOME_SCALED);
	assert_string_equal(f->last_overrides, "agg:4,src:2");
	f->nan_busy = true;
	/* agg, the only vertex outside its bounds, is excluded: no decision, and the user's 7 is applied */
	assert_int_equal(cycle_with(f, T(60000), "RUNNING", &user), AS_OUTCOME_BALANCED);
	assert_string_equal(f->last_overrides, "agg:7,src:2");
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(job->cycle_excluded.n, 1);
	assert_string_equal(job->cycle_excluded.v[0], "agg");
	/* the exclusion lasts one cycle: a job that is not running collects nothing and excludes nothing */
	assert_int_equal(cycle_with(f, T(65000), "CREATED", &user), AS_OUTCOME_NOT_RUNNING);
	assert_string_equal(f->last_overrides, "agg:4,src:2");
	f->nan_busy = false;
	assert_int_equal(cycle_with(f, T(70000), "RUNNING", &user), AS_OUTCOME_SCALED);
	assert_string_equal(f->last_overrides, "agg:4,src:2");
	assert_int_equal(job->cycle_excluded.n, 0);
	as_pmap_free(&user);
}

/* What a new JVM starts with: the overrides as the realizer gets them (the user's own for an excluded vertex),
 * nothing when the autoscaler is off or has decided nothing. */
static void test_launch_overrides(void **state)
{
	struct fx *f = *state;
	struct as_pmap user, got;
	assert_int_equal(as_pmap_parse_flink("agg:7,other:3", &user), 0);
	autoscaler_launch_overrides(f->as, "job1", &f->o, &user, &got);
	assert_int_equal(got.n, 0); /* nothing decided yet: the user's value goes to Flink as it is */
	scale_up_agg(f);
	autoscaler_launch_overrides(f->as, "job1", &f->o, &user, &got);
	char *text = as_pmap_to_flink(&got);
	assert_string_equal(text, "agg:4,other:3,src:2");
	free(text);
	as_pmap_free(&got);
	strv_push(&f->o.exclude_ids, "agg");
	autoscaler_launch_overrides(f->as, "job1", &f->o, &user, &got);
	text = as_pmap_to_flink(&got);
	assert_string_equal(text, "agg:7,other:3,src:2");
	free(text);
	as_pmap_free(&got);
	f->o.enabled = false;
	autoscaler_launch_overrides(f->as, "job1", &f->o, &user, &got);
	assert_int_equal(got.n, 0);
	as_pmap_free(&user);
}

static void test_errors(void **state)
{
	struct fx *f = *state;
	/* a REST failure reported by the collector */
	struct as_job *job = autoscaler_job(f->as, "job1");
	as_collect_fail(job, "GET /jobs/job1: connection refused");
	struct as_context ctx = {.job_key = "job1", .options = &f->o, .job_status = "RUNNING", .now_ms = 1000};
	assert_int_equal(autoscaler_scale(f->as, &ctx), AS_OUTCOME_ERROR);
	assert_string_equal(f->events.v[0], "Warning|AutoscalerError|GET /jobs/job1: connection refused");
	/* nothing collected at all: quietly not ready */
	assert_int_equal(autoscaler_scale(f->as, &ctx), AS_OUTCOME_NOT_READY);
	/* a missing required metric is quiet while stabilizing, an error after */
	f->drop_busy = true;
	assert_int_equal(cycle(f, T(5000)), AS_OUTCOME_NOT_READY);
	assert_int_equal(f->events.n, 1);
	assert_int_equal(cycle(f, T(15000)), AS_OUTCOME_ERROR);
	assert_string_equal(
	    f->events.v[1],
	    "Warning|AutoscalerError|Could not find required metric busyTimeMsPerSecond for vertex agg");
	assert_int_equal(job->errors, 2);
	/* issue 27, defect 6: a listing that lacked a required name is not kept; agg is listed again in the
	 * next cycle, and once Flink lists busyTimeMsPerSecond the cycles collect again (before, the first
	 * listing stayed cached and every later cycle failed with the same error) */
	f->drop_busy = false;
	assert_int_equal(cycle(f, T(25000)), AS_OUTCOME_NOT_READY); /* one sample in the window */
	assert_int_equal(job->history.n, 1);
	assert_int_equal(cycle(f, T(35000)), AS_OUTCOME_COLLECTING);
	assert_int_equal(f->events.n, 2);
	assert_int_equal(job->errors, 2);
}

static void test_metrics_only_mode(void **state)
{
	struct fx *f = *state;
	f->o.scaling_enabled = false;
	assert_int_equal(cycle(f, T(10000)), AS_OUTCOME_NOT_READY);
	assert_int_equal(cycle(f, T(20000)), AS_OUTCOME_COLLECTING);
	assert_int_equal(cycle(f, T(40000)), AS_OUTCOME_BALANCED);
	assert_int_equal(cycle(f, T(50000)), AS_OUTCOME_BALANCED);
	/* reported once within scaling.event.interval (30 min), never applied */
	assert_int_equal(f->events.n, 1);
	assert_contains(f->events.v[0],
	                "Normal|ScalingReport|Scaling execution disabled by config "
	                "job.autoscaler.scaling.enabled: false, recommended parallelism changes:{ Vertex "
	                "ID agg | Parallelism 2 -> 4");
	assert_int_equal(f->realized, 0);
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(job->balanced, 2);
	assert_true(job->last_eval.v[1].m[AS_EM_RECOMMENDED_PARALLELISM].current == 4);
	/* 30 min later only the new sample is left in the window (older than now - 30 s), and the window
	 * is full again 30 s after it; then, the interval having passed, the same report comes again */
	int64_t later = T(40000 + 30 * 60 * 1000);
	assert_int_equal(cycle(f, later), AS_OUTCOME_NOT_READY);
	assert_int_equal(job->history.n, 1);
	assert_int_equal(cycle(f, later + 10000), AS_OUTCOME_COLLECTING);
	assert_int_equal(cycle(f, later + 30000), AS_OUTCOME_BALANCED);
	assert_int_equal(f->events.n, 2);
	assert_string_equal(f->events.v[1], f->events.v[0]);
}

static void test_file_store_and_restart(void **state)
{
	struct fx *f = *state;
	char *tmp = make_tempdir();
	char *dir = path_join(tmp, "autoscaler");
	autoscaler_free(f->as);
	f->as = make(f, as_store_file_new(dir));
	scale_up_agg(f);
	char *file = path_join(dir, "job1.json");
	assert_int_equal(access(file, F_OK), 0);
	/* flinklet restarts: a new autoscaler over the same directory knows the overrides at once and
	 * applies them (after a JVM restart too: the job is not RUNNING yet) */
	autoscaler_free(f->as);
	f->as = make(f, as_store_file_new(dir));
	cJSON *o = autoscaler_overrides_json(f->as, "job1");
	char *s = cJSON_PrintUnformatted(o);
	assert_string_equal(s, "{\"src\":\"2\",\"agg\":\"4\"}");
	free(s);
	cJSON_Delete(o);
	int before = f->realized;
	assert_int_equal(cycle_with(f, T(70000), "INITIALIZING", NULL), AS_OUTCOME_NOT_RUNNING);
	assert_int_equal(f->realized, before + 1);
	assert_string_equal(f->last_overrides, "src:2,agg:4");
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(job->scaling_history.n, 1);
	assert_int_equal(job->history.n, 4);

	/* a corrupt file: discarded with a warning event, never a crash; the job starts empty */
	autoscaler_free(f->as);
	char *bad =
	    write_text(dir, "job1.json", "{\"version\": 1, \"jobKey\": \"job1\", \"scalingHistory\": {\"agg\": 5}}");
	free(bad);
	strv_free(&f->events);
	f->as = make(f, as_store_file_new(dir));
	job = autoscaler_job(f->as, "job1");
	assert_int_equal(f->events.n, 1);
	assert_string_equal(f->events.v[0],
	                    "Warning|AutoscalerError|Discarded the stored scalingHistory of job job1 "
	                    "(scalingHistory.agg: must be an array); starting from empty scalingHistory");
	assert_int_equal(job->scaling_history.n, 0);
	autoscaler_free(f->as);
	bad = write_text(dir, "job1.json", "garbage");
	free(bad);
	f->as = make(f, as_store_file_new(dir));
	job = autoscaler_job(f->as, "job1");
	assert_contains(f->events.v[1],
	                "Warning|AutoscalerError|Discarded the unreadable autoscaler state of job job1 (");
	assert_contains(f->events.v[1], "job1.json is not a JSON object); starting from empty state");
	assert_int_equal(job->overrides.n, 0);
	/* and it keeps working */
	f->running_ts = T(100000);
	assert_int_equal(cycle(f, T(105000)), AS_OUTCOME_NOT_READY);

	/* cleanup removes everything */
	autoscaler_cleanup(f->as, "job1");
	assert_int_equal(access(file, F_OK), -1);
	free(file);
	free(dir);
	remove_tree(tmp);
}

static void test_cleanup(void **state)
{
	struct fx *f = *state;
	scale_up_agg(f);
	autoscaler_cleanup(f->as, "job1");
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(job->overrides.n, 0);
	assert_int_equal(job->history.n, 0);
	autoscaler_cleanup(f->as, "job1");
	autoscaler_cleanup(f->as, "unknown");
}

static void test_resource_requirements(void **state)
{
	(void)state;
	/* GET /jobs/:id/resource-requirements, then the PUT body: every overridden vertex gets
	 * {lowerBound 1, upperBound p}; vertices the job does not have are ignored; no change, no PUT */
	cJSON *cur = cJSON_Parse("{\"src\": {\"parallelism\": {\"lowerBound\": 1, \"upperBound\": 2}},"
	                         " \"agg\": {\"parallelism\": {\"lowerBound\": 1, \"upperBound\": 2}}}");
	struct as_pmap m;
	assert_int_equal(as_pmap_parse_flink("src:2,agg:4,gone:9", &m), 0);
	cJSON *body = NULL;
	assert_true(as_resource_requirements_update(cur, &m, &body));
	char *s = cJSON_PrintUnformatted(body);
	assert_string_equal(s, "{\"src\":{\"parallelism\":{\"lowerBound\":1,\"upperBound\":2}},"
	                       "\"agg\":{\"parallelism\":{\"lowerBound\":1,\"upperBound\":4}}}");
	free(s);
	cJSON *again = NULL;
	assert_false(as_resource_requirements_update(body, &m, &again));
	assert_null(again);
	/* a lower bound other than 1 is corrected too */
	cJSON *low = cJSON_Parse("{\"agg\": {\"parallelism\": {\"lowerBound\": 4, \"upperBound\": 4}}}");
	assert_true(as_resource_requirements_update(low, &m, &again));
	s = cJSON_PrintUnformatted(again);
	assert_string_equal(s, "{\"agg\":{\"parallelism\":{\"lowerBound\":1,\"upperBound\":4}}}");
	free(s);
	cJSON_Delete(again);
	assert_false(as_resource_requirements_update(NULL, &m, &again));
	cJSON_Delete(low);
	cJSON_Delete(body);
	cJSON_Delete(cur);
	as_pmap_free(&m);
}

/* ---- the scaling hook (issue 27): a rescale proposed, then executed as the hook's answer says ---- */

static enum as_outcome answer(struct fx *f, int64_t now, const char *failure, const char *text)
{
	struct as_context ctx = {
	    .job_key = "job1", .options = &f->o, .job_status = "RUNNING", .now_ms = now, .hook = true};
	struct as_hook_result r = {"/hooks/h", failure, text, text ? strlen(text) : 0, NULL};
	return autoscaler_hook_done(f->as, &ctx, &r);
}

static void propose(struct fx *f)
{
	f->hook = true;
	assert_int_equal(cycle(f, T(5000)), AS_OUTCOME_NOT_READY);
	for (int t = 10000; t <= 30000; t += 10000)
		assert_int_equal(cycle(f, T(t)), AS_OUTCOME_COLLECTING);
	assert_int_equal(cycle(f, T(40000)), AS_OUTCOME_PROPOSED);
}

static void test_hook_approves(void **state)
{
	struct fx *f = *state;
	propose(f);
	/* nothing executed or stored yet: no report, no overrides, no history; the source's scale-down pending */
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(f->events.n, 0);
	assert_int_equal(f->realized, 0);
	assert_int_equal(job->scaling_history.n, 0);
	assert_int_equal(job->delayed.n, 1);
	char *p = autoscaler_proposal_json(f->as, "job1", &f->o, 5000);
	assert_non_null(p);
	assert_contains(p, "\"id\": \"agg\",\n      \"currentParallelism\": 2,\n      \"proposedParallelism\": 4,");
	assert_contains(p, "\"timeoutMs\": 5000,");
	assert_contains(
	    p, "\"reason\": \"agg 2 -> 4: true processing rate 800.00 is below the scale-up threshold 1000.00\"");
	free(p);
	assert_int_equal(answer(f, T(41000), NULL, "{\"decision\": \"apply\"}\n"), AS_OUTCOME_SCALED);
	/* executed as a cycle without a hook executes it */
	assert_int_equal(f->realized, 1);
	assert_string_equal(f->last_overrides, "src:2,agg:4");
	assert_int_equal(job->scaling_history.n, 1);
	assert_int_equal(job->scaling_history.v[0].e[0].ts, T(40000)); /* the decision's time */
	assert_int_equal(job->tracking.n, 1);
	assert_int_equal(job->delayed.n, 0);
	assert_int_equal(f->events.n, 2);
	assert_string_equal(f->events.v[0], "Normal|ScalingHookApplied|The scaling hook /hooks/h approved the rescale "
	                                    "(agg 2 -> 4)");
	assert_contains(f->events.v[1],
	                "Normal|ScalingReport|Scaling execution enabled, begin scaling vertices:{ Vertex "
	                "ID agg | Parallelism 2 -> 4 |");
	/* answered once: a second answer finds nothing to decide */
	assert_int_equal(answer(f, T(42000), NULL, "{\"decision\": \"apply\"}"), AS_OUTCOME_NOT_READY);
	assert_null(autoscaler_proposal_json(f->as, "job1", &f->o, 5000));
}

static void test_hook_adjusts(void **state)
{
	struct fx *f = *state;
	propose(f);
	assert_int_equal(answer(f, T(41000), NULL, "{\"decision\": \"adjust\", \"parallelism\": {\"agg\": 3}}"),
	                 AS_OUTCOME_SCALED);
	assert_string_equal(f->last_overrides, "src:2,agg:3");
	struct as_job *job = autoscaler_job(f->as, "job1");
	struct as_history_entry *e = &job->scaling_history.v[0].e[0];
	assert_int_equal(e->new_parallelism, 3);
	assert_double(e->m[AS_EM_EXPECTED_PROCESSING_RATE].current, 1200); /* 800 / 2 x 3 */
	assert_string_equal(f->events.v[0], "Normal|ScalingHookAdjusted|The scaling hook /hooks/h adjusted the rescale "
	                                    "(agg 2 -> 4) to agg 2 -> 3");
	assert_contains(f->events.v[1], "Parallelism 2 -> 3 | Processing capacity 800.00 -> 1200.00 |");
	cJSON *r = autoscaler_report_json(f->as, "job1");
	char *text = cJSON_PrintUnformatted(r);
	assert_contains(text, "\"RECOMMENDED_PARALLELISM\":3,");
	free(text);
	cJSON_Delete(r);
}

static void test_hook_vetoes_and_fails(void **state)
{
	struct fx *f = *state;
	propose(f);
	struct as_job *job = autoscaler_job(f->as, "job1");
	assert_int_equal(answer(f, T(41000), NULL, "{\"decision\": \"veto\", \"reason\": \"freeze\"}"),
	                 AS_OUTCOME_BALANCED);
	assert_int_equal(f->realized, 0);
	assert_int_equal(job->overrides.n, 0);
	assert_int_equal(job->scaling_history.n, 0);
	assert_int_equal(job->tracking.n, 0);
	assert_int_equal(job->delayed.n, 1); /* the source's pending scale-down stays pending */
	assert_int_equal(f->events.n, 1);
	assert_string_equal(
	    f->events.v[0],
	    "Warning|ScalingHookVetoed|The scaling hook /hooks/h vetoed the rescale (agg 2 -> 4): freeze");
	/* the next cycle proposes the same again; the same veto is not said again within scaling.event.interval */
	assert_int_equal(cycle(f, T(50000)), AS_OUTCOME_PROPOSED);
	assert_int_equal(answer(f, T(51000), NULL, "{\"decision\": \"veto\"}"), AS_OUTCOME_BALANCED);
	assert_int_equal(f->events.n, 1);
	/* a hook that fails vetoes too, and says why */
	assert_int_equal(cycle(f, T(60000)), AS_OUTCOME_PROPOSED);
	assert_int_equal(answer(f, T(61000), "exited with code 3", ""), AS_OUTCOME_BALANCED);
	assert_int_equal(f->events.n, 2);
	assert_string_equal(f->events.v[1],
	                    "Warning|ScalingHookFailed|The scaling hook /hooks/h exited with code 3; the "
	                    "rescale (agg 2 -> 4) is not executed");
	assert_int_equal(job->overrides.n, 0);
	/* an adjustment to no change at all is a veto */
	assert_int_equal(cycle(f, T(70000)), AS_OUTCOME_PROPOSED);
	assert_int_equal(answer(f, T(71000), NULL, "{\"decision\": \"adjust\", \"parallelism\": {\"agg\": 2}}"),
	                 AS_OUTCOME_BALANCED);
	assert_string_equal(f->events.v[2], "Warning|ScalingHookVetoed|The scaling hook /hooks/h adjusted the rescale "
	                                    "(agg 2 -> 4) to no change");
	assert_int_equal(job->overrides.n, 0);
	assert_int_equal(f->realized, 0);
}

static void test_hook_proposal_dropped(void **state)
{
	struct fx *f = *state;
	propose(f);
	/* the JVM restarted while the hook ran: the proposal is forgotten, the answer finds nothing */
	autoscaler_proposal_drop(f->as, "job1");
	assert_int_equal(answer(f, T(41000), NULL, "{\"decision\": \"apply\"}"), AS_OUTCOME_NOT_READY);
	assert_int_equal(f->realized, 0);
	/* a proposal never answered is dropped by the next cycle, which decides afresh */
	assert_int_equal(cycle(f, T(50000)), AS_OUTCOME_PROPOSED);
	assert_int_equal(cycle(f, T(60000)), AS_OUTCOME_PROPOSED);
	assert_int_equal(answer(f, T(61000), NULL, "{\"decision\": \"apply\"}"), AS_OUTCOME_SCALED);
	assert_int_equal(autoscaler_job(f->as, "job1")->scaling_history.v[0].e[0].ts, T(60000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_window_and_decision, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disabled_clears_state, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_not_running_reapplies, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_user_overrides_and_exclusion, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cycle_exclusion_keeps_user_override, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_launch_overrides, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_only_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_file_store_and_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cleanup, setup, teardown),
	    cmocka_unit_test(test_resource_requirements),
	    cmocka_unit_test_setup_teardown(test_hook_approves, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hook_adjusts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hook_vetoes_and_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hook_proposal_dropped, setup, teardown),
	};
	return cmocka_run_group_tests_name("autoscaler_core", tests, NULL, NULL);
}

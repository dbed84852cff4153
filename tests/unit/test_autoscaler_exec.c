/* test_autoscaler_exec: the job-level decision (reference 3.1): the memory-pressure gate (GC and heap),
 * "nothing moves unless one vertex is outside its bounds, then every computed change moves", excluded
 * vertices (configured and per cycle), metrics-only mode and excluded periods (reported, deduplicated
 * on the recommendation, not applied), the quota gate, the ScalingReport text, and the delayed
 * scale-downs cleared by a rescale.
 *
 * The job: "src" (a source with 4 partitions, p 1) -> HASH -> "agg" (p 1), both 128 key groups, target
 * data rate 1000/s, no backlog. With the defaults (target 0.7, restart 300 s, catch-up 1800 s):
 *   capacity at 0.7 with restart = jround(1000 * 300 / 1800 + 1000 / 0.7) = jround(1595.238) = 1595
 *   SCALE_UP_RATE_THRESHOLD = jround(1000 / 1.0) = 1000
 *   SCALE_DOWN_RATE_THRESHOLD = jround(166.667 + 1000 / 0.4) = jround(2666.667) = 2667
 * src TPR 800 (outside: < 1000): f = 1595 / 800 = 1.994, ceil = 2, 4 partitions: 2 divides 4 -> 2.
 * agg TPR 1500 (inside): f = 1595 / 1500 = 1.063, ceil(1.063) = 2, 128 key groups: 2 -> 2. */
#include "unit.h"

#include <math.h>
#include <time.h>

#include "as_internal.h"

struct rec {
	struct strv events;
};

static void rec_emit(void *ud, enum as_event_type type, const char *reason, const char *message,
                     const char *message_key, int64_t interval_ms)
{
	struct rec *r = ud;
	strv_push_take(&r->events, xasprintf("%s|%s|%s|%s|%lld", as_event_type_name(type), reason,
	                                     message_key ? message_key : "-", message, (long long)interval_ms));
}

struct fx {
	struct as_options o;
	struct as_topology t;
	struct as_evaluation ev;
	struct as_delayed delayed;
	bool excluded[2];
	struct rec r;
	struct as_emitter em;
	struct as_exec x;
};

static void set_rates(struct fx *f, size_t i, double tpr)
{
	struct as_eval_metric *m = f->ev.v[i].m;
	for (int k = 0; k < AS_EM_COUNT; k++)
		m[k].current = m[k].average = NAN;
	m[AS_EM_PARALLELISM].current = m[AS_EM_RECOMMENDED_PARALLELISM].current = f->t.v[i].parallelism;
	m[AS_EM_MAX_PARALLELISM].current = 128;
	m[AS_EM_NUM_SOURCE_PARTITIONS].current = f->t.v[i].num_source_partitions;
	m[AS_EM_TARGET_DATA_RATE].average = 1000;
	m[AS_EM_CATCH_UP_DATA_RATE].current = 0;
	m[AS_EM_TRUE_PROCESSING_RATE].average = tpr;
	as_thresholds(&f->o, m, false, 300);
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	as_options_defaults(&f->o);
	f->o.scale_down_interval_ms = 0;
	f->t.n = 2;
	f->t.v = xcalloc(2, sizeof(*f->t.v));
	f->t.v[0] = (struct as_vertex){
	    .id = xstrdup("src"), .parallelism = 1, .max_parallelism = 128, .num_source_partitions = 4};
	f->t.v[1] = (struct as_vertex){.id = xstrdup("agg"), .parallelism = 1, .max_parallelism = 128};
	f->t.v[1].inputs = xcalloc(1, sizeof(struct as_edge));
	f->t.v[1].inputs[0] = (struct as_edge){0, AS_SHIP_HASH};
	f->t.v[1].ninputs = 1;
	assert_int_equal(as_topology_link(&f->t), 0);
	f->ev.n = 2;
	f->ev.v = xcalloc(2, sizeof(*f->ev.v));
	for (int k = 0; k < AS_EG_COUNT; k++)
		f->ev.g[k].current = f->ev.g[k].average = NAN;
	set_rates(f, 0, 800);
	set_rates(f, 1, 1500);
	f->em = (struct as_emitter){rec_emit, &f->r};
	*state = f;
	setenv("TZ", "UTC", 1);
	tzset();
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	as_exec_free(&f->x);
	as_options_free(&f->o);
	as_topology_free(&f->t);
	as_evaluation_free(&f->ev);
	as_delayed_free(&f->delayed);
	strv_free(&f->r.events);
	free(f);
	return 0;
}

static void execute(struct fx *f, int64_t now)
{
	as_exec_free(&f->x);
	f->x = (struct as_exec){
	    .o = &f->o,
	    .t = &f->t,
	    .ev = &f->ev,
	    .delayed = &f->delayed,
	    .excluded = f->excluded,
	    .now = now,
	    .restart_s = 300,
	    .em = &f->em,
	};
	as_execute(&f->x);
}

static const char REPORT[] = "Scaling execution enabled, begin scaling vertices:"
                             "{ Vertex ID src | Parallelism 1 -> 2 | Processing capacity 800.00 -> 1600.00 | Target "
                             "data rate 1000.00}"
                             "{ Vertex ID agg | Parallelism 1 -> 2 | Processing capacity 1500.00 -> 3000.00 | Target "
                             "data rate 1000.00}";

static void test_scale_together(void **state)
{
	struct fx *f = *state;
	/* a pending delayed scale-down of another vertex is cleared by the rescale */
	f->delayed.v = xcalloc(1, sizeof(*f->delayed.v));
	f->delayed.v[0].vertex = xstrdup("old");
	f->delayed.n = 1;
	execute(f, 1000);
	assert_true(f->x.scaled);
	assert_null(f->x.blocked_by);
	assert_true(f->x.d[0].in_summary && f->x.d[0].outside);
	assert_true(f->x.d[1].in_summary && !f->x.d[1].outside); /* carried along */
	assert_int_equal(f->x.d[0].new_p, 2);
	assert_int_equal(f->x.d[1].new_p, 2);
	assert_true(f->ev.v[0].m[AS_EM_RECOMMENDED_PARALLELISM].current == 2);
	assert_int_equal(f->delayed.n, 0);
	assert_true(f->delayed.updated);
	assert_int_equal(f->r.events.n, 1);
	char *want = xasprintf("Normal|ScalingReport|ScalingExecutor|%s|-1", REPORT);
	assert_string_equal(f->r.events.v[0], want);
	free(want);
}

static void test_all_within_bounds(void **state)
{
	struct fx *f = *state;
	/* src at 1200 is inside [1000, 2667]: f = 1595 / 1200 = 1.33, ceil = 2 would be a change, but no
	 * vertex is outside its bounds: nothing moves, RECOMMENDED_PARALLELISM stays */
	set_rates(f, 0, 1200);
	execute(f, 1000);
	assert_false(f->x.scaled);
	assert_null(f->x.blocked_by);
	assert_true(f->x.d[0].change && !f->x.d[0].in_summary);
	assert_true(f->ev.v[0].m[AS_EM_RECOMMENDED_PARALLELISM].current == 1);
	assert_int_equal(f->r.events.n, 0);
}

static void test_memory_pressure(void **state)
{
	struct fx *f = *state;
	/* thresholds default to 1.0: a GC ratio of 0.5 does not trip them */
	f->ev.g[AS_EG_GC_PRESSURE].current = 0.5;
	execute(f, 1000);
	assert_true(f->x.scaled);
	f->o.gc_pressure_threshold = 0.3;
	execute(f, 2000);
	assert_false(f->x.scaled);
	assert_string_equal(f->x.blocked_by, "memory pressure (GC)");
	assert_false(f->x.d[0].computed); /* the vertices are not even considered */
	assert_string_equal(f->r.events.v[1], "Normal|MemoryPressure|gcPressure|GC pressure 0.500 is above the "
	                                      "threshold 0.300: scaling is paused|1800000");
	/* the heap gate uses the average: 0.95 > 0.9 */
	f->ev.g[AS_EG_GC_PRESSURE].current = NAN; /* a NaN comparison is false */
	f->ev.g[AS_EG_HEAP_MAX_USAGE_RATIO].current = 0.5;
	f->ev.g[AS_EG_HEAP_MAX_USAGE_RATIO].average = 0.95;
	f->o.heap_usage_threshold = 0.9;
	execute(f, 3000);
	assert_string_equal(f->x.blocked_by, "memory pressure (heap)");
	assert_contains(f->r.events.v[2],
	                "Normal|MemoryPressure|heapUsage|Heap usage 0.950 is above the threshold 0.900");
}

static void test_excluded_vertices(void **state)
{
	struct fx *f = *state;
	/* vertex.exclude.ids: agg is evaluated but never scaled; src moves alone */
	strv_push(&f->o.exclude_ids, "agg");
	execute(f, 1000);
	assert_true(f->x.scaled);
	assert_false(f->x.d[1].computed);
	assert_false(f->x.d[1].in_summary);
	assert_contains(f->r.events.v[0], "{ Vertex ID src | Parallelism 1 -> 2");
	assert_not_contains(f->r.events.v[0], "agg");
	/* excluded for this cycle (finished, or no busy time) and the only vertex outside its bounds:
	 * nothing moves */
	strv_free(&f->o.exclude_ids);
	f->excluded[0] = true;
	execute(f, 2000);
	assert_false(f->x.scaled);
	assert_false(f->x.d[0].computed);
}

static void test_metrics_only_mode(void **state)
{
	struct fx *f = *state;
	f->o.scaling_enabled = false;
	execute(f, 1000);
	assert_false(f->x.scaled);
	assert_string_equal(f->x.blocked_by, "scaling disabled");
	/* the recommendation is reported and recorded, not applied */
	assert_true(f->x.d[0].in_summary);
	assert_true(f->ev.v[0].m[AS_EM_RECOMMENDED_PARALLELISM].current == 2);
	assert_int_equal(f->r.events.n, 1);
	assert_string_equal(
	    f->r.events.v[0],
	    "Normal|ScalingReport|ScalingExecutor,src:1->2,agg:1->2|Scaling execution disabled by config "
	    "job.autoscaler.scaling.enabled: false, recommended parallelism changes:{ Vertex ID src | "
	    "Parallelism 1 -> 2 | Processing capacity 800.00 -> 1600.00 | Target data rate 1000.00}{ Vertex "
	    "ID agg | Parallelism 1 -> 2 | Processing capacity 1500.00 -> 3000.00 | Target data rate "
	    "1000.00}|1800000");
}

static void test_excluded_period(void **state)
{
	struct fx *f = *state;
	/* 1767259800000 is Thursday 2026-01-01 09:30:00 UTC */
	strv_push(&f->o.excluded_periods, "09:00:00-17:00:00");
	execute(f, 1767259800000LL);
	assert_false(f->x.scaled);
	assert_string_equal(f->x.blocked_by, "excluded period");
	assert_contains(f->r.events.v[0], "Scaling execution disabled by config job.autoscaler.excluded.periods, "
	                                  "recommended parallelism changes:{ Vertex ID src");
	/* at 23:30 the period is over */
	execute(f, 1767310200000LL);
	assert_true(f->x.scaled);
}

static void test_quota(void **state)
{
	struct fx *f = *state;
	f->t.v[0].slot_sharing_group = xstrdup("default");
	f->t.v[1].slot_sharing_group = xstrdup("default");
	f->o.quota_memory = 3ULL << 29; /* 1.5 GiB */
	/* one slot sharing group: before max(1, 1) = 1 slot, after max(2, 2) = 2 slots. With 1 slot per TM:
	 * floor(1 / 1) = 1 TM before, 2 after; 2 x 1 GiB > 1.5 GiB: blocked */
	as_exec_free(&f->x);
	f->x = (struct as_exec){.o = &f->o,
	                        .t = &f->t,
	                        .ev = &f->ev,
	                        .delayed = &f->delayed,
	                        .now = 1000,
	                        .restart_s = 300,
	                        .em = &f->em,
	                        .slots_per_tm = 1,
	                        .tm_memory = 1ULL << 30};
	as_execute(&f->x);
	assert_false(f->x.scaled);
	assert_string_equal(f->x.blocked_by, "resource quota");
	assert_contains(f->r.events.v[0], "Warning|ResourceQuotaReached|-|Scaling would need 2 TaskManagers");
	/* 2 slots per TM: floor(1 / 2) = 0 before, floor(2 / 2) = 1 after: 1 GiB <= 1.5 GiB, allowed */
	as_exec_free(&f->x);
	f->x = (struct as_exec){.o = &f->o,
	                        .t = &f->t,
	                        .ev = &f->ev,
	                        .delayed = &f->delayed,
	                        .now = 2000,
	                        .restart_s = 300,
	                        .em = &f->em,
	                        .slots_per_tm = 2,
	                        .tm_memory = 1ULL << 30};
	as_execute(&f->x);
	assert_true(f->x.scaled);
	/* the CPU quota with TaskManager CPU unknown (0, as in the standalone autoscaler) never trips */
	f->o.quota_memory = 0;
	f->o.quota_cpu = 0.5;
	as_exec_free(&f->x);
	f->x = (struct as_exec){.o = &f->o,
	                        .t = &f->t,
	                        .ev = &f->ev,
	                        .delayed = &f->delayed,
	                        .now = 3000,
	                        .restart_s = 300,
	                        .em = &f->em,
	                        .slots_per_tm = 1};
	as_execute(&f->x);
	assert_true(f->x.scaled);
	/* with 1 CPU per TM: 2 x 1 > 0.5 */
	as_exec_free(&f->x);
	f->x = (struct as_exec){.o = &f->o,
	                        .t = &f->t,
	                        .ev = &f->ev,
	                        .delayed = &f->delayed,
	                        .now = 4000,
	                        .restart_s = 300,
	                        .em = &f->em,
	                        .slots_per_tm = 1,
	                        .tm_cpu = 1};
	as_execute(&f->x);
	assert_false(f->x.scaled);
	/* without slot sharing groups the quota is not checked */
	free(f->t.v[1].slot_sharing_group);
	f->t.v[1].slot_sharing_group = NULL;
	as_exec_free(&f->x);
	f->x = (struct as_exec){.o = &f->o,
	                        .t = &f->t,
	                        .ev = &f->ev,
	                        .delayed = &f->delayed,
	                        .now = 5000,
	                        .restart_s = 300,
	                        .em = &f->em,
	                        .slots_per_tm = 1,
	                        .tm_cpu = 1};
	as_execute(&f->x);
	assert_true(f->x.scaled);
}

static void test_dedupe(void **state)
{
	(void)state;
	struct as_dedupe d = {0};
	/* the first event starts the interval; the same one inside it is suppressed; after it, admitted */
	assert_true(as_dedupe_admit(&d, "ScalingReport", "k", 1000, 0));
	assert_false(as_dedupe_admit(&d, "ScalingReport", "k", 1000, 999));
	assert_true(as_dedupe_admit(&d, "ScalingReport", "k", 1000, 1000));
	assert_false(as_dedupe_admit(&d, "ScalingReport", "k", 1000, 1500));
	/* another key or reason is its own event; no interval means no dedupe */
	assert_true(as_dedupe_admit(&d, "ScalingReport", "other", 1000, 1500));
	assert_true(as_dedupe_admit(&d, "MemoryPressure", "k", 1000, 1500));
	assert_true(as_dedupe_admit(&d, "AutoscalerError", "x", -1, 1500));
	assert_true(as_dedupe_admit(&d, "AutoscalerError", "x", -1, 1500));
	/* the table is bounded */
	for (int i = 0; i < 1000; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		as_dedupe_admit(&d, "R", key, 1000, 2000 + i);
	}
	assert_true(d.n <= 256);
	as_dedupe_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_scale_together, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_all_within_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_memory_pressure, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_excluded_vertices, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_metrics_only_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_excluded_period, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
	    cmocka_unit_test(test_dedupe),
	};
	return cmocka_run_group_tests_name("autoscaler_exec", tests, NULL, NULL);
}

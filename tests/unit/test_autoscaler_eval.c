/* test_autoscaler_eval: evaluation (reference section 2) on small hand-made windows: target and
 * catch-up rates of sources, the edge output ratios through the DAG (one input, several inputs whose
 * other inputs have one output, the fallback), busy time with the MAX and AVG aggregators, the choice
 * between busy-time and observed true processing rates (including +Infinity and NaN), backlog detection,
 * the capacity formula and both thresholds, the restart time from tracking, and the global metrics.
 * Every expected number is worked out in the comment above it. */
#include "unit.h"

#include <math.h>

#include "as_internal.h"

/* ---- building topologies and windows ---- */

static void vertex(struct as_topology *t, const char *id, int p, int maxp)
{
	t->v = xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
	struct as_vertex *v = &t->v[t->n++];
	memset(v, 0, sizeof(*v));
	v->id = xstrdup(id);
	v->parallelism = p;
	v->max_parallelism = maxp;
}

static void edge(struct as_topology *t, const char *from, const char *to, enum as_ship ship)
{
	struct as_vertex *v = &t->v[as_topology_find(t, to)];
	v->inputs = xrealloc(v->inputs, (v->ninputs + 1) * sizeof(*v->inputs));
	v->inputs[v->ninputs].from = (size_t)as_topology_find(t, from);
	v->inputs[v->ninputs].ship = ship;
	v->ninputs++;
}

/* Sets metric m of vertex id (NULL: global) in the sample at ts, creating it. */
static void put(struct as_samples *h, int64_t ts, const char *id, int m, double value)
{
	size_t i = 0;
	while (i < h->n && h->s[i].ts != ts)
		i++;
	if (i == h->n) {
		struct as_sample s;
		as_sample_init(&s, ts);
		as_samples_put(h, &s);
		for (i = 0; h->s[i].ts != ts; i++)
			;
	}
	if (id)
		as_sample_vertex_metrics(&h->s[i], id, true)[m] = value;
	else
		h->s[i].g[m] = value;
}

/* Three samples 10 s apart (0, 10 000, 20 000 ms) of one metric. */
static void series(struct as_samples *h, const char *id, int m, double a, double b, double c)
{
	put(h, 0, id, m, a);
	put(h, 10000, id, m, b);
	put(h, 20000, id, m, c);
}

struct fixture {
	struct as_options o;
	struct as_topology t;
	struct as_samples h;
	struct as_evaluation ev;
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	as_options_defaults(&f->o);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	as_options_free(&f->o);
	as_topology_free(&f->t);
	as_samples_free(&f->h);
	as_evaluation_free(&f->ev);
	free(f);
	return 0;
}

static const struct as_eval_metric *evaluate(struct fixture *f, const char *id)
{
	assert_int_equal(as_topology_link(&f->t), 0);
	char *err = NULL;
	as_evaluation_free(&f->ev);
	int r = as_evaluate(&f->o, &f->t, &f->h, f->o.restart_time_ms / 1000, &f->ev, &err);
	if (r < 0)
		fail_msg("evaluation failed: %s", err);
	return f->ev.v[as_topology_find(&f->t, id)].m;
}

/* A source "s": 1000 records/s in, the backlog growing from 1000 to 3000, busy 500 ms/s. */
static void source_s(struct fixture *f)
{
	vertex(&f->t, "s", 2, 128);
	series(&f->h, "s", AS_VM_NUM_RECORDS_IN, 0, 10000, 20000);
	series(&f->h, "s", AS_VM_NUM_RECORDS_OUT, 0, 10000, 20000);
	series(&f->h, "s", AS_VM_LAG, 1000, 2000, 3000);
	series(&f->h, "s", AS_VM_LOAD, 0.5, 0.5, 0.5);
}

static void test_source(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	const struct as_eval_metric *m = evaluate(f, "s");
	/* inRate = 1000 * (20000 - 0) / 20000 = 1000; lagRate = 1000 * (3000 - 1000) / 20000 = 100;
	 * TARGET_DATA_RATE = max(0, 1000 + 100) = 1100 */
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 1100);
	assert_double(m[AS_EM_TARGET_DATA_RATE].current, NAN);
	/* CATCH_UP_DATA_RATE = LAG / catch-up seconds = 3000 / 1800 = 1.6666.. -> 1.667 */
	assert_double(m[AS_EM_CATCH_UP_DATA_RATE].current, 1.667);
	assert_double(m[AS_EM_LAG].current, 3000);
	/* busy = avg(LOAD) * 1000 = 500 ms/s; LOAD.avg = 0.5; TPR = 1000 / 0.5 = 2000 */
	assert_double(m[AS_EM_LOAD].average, 0.5);
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 2000);
	assert_double(m[AS_EM_PARALLELISM].current, 2);
	assert_double(m[AS_EM_RECOMMENDED_PARALLELISM].current, 2);
	assert_double(m[AS_EM_MAX_PARALLELISM].current, 128);
	assert_double(m[AS_EM_NUM_SOURCE_PARTITIONS].current, 0);
	/* not backlogged: 3000 / 1000 = 3 s of lag, not above 300 s. Bounds 0.7 +- 0.3:
	 * SCALE_UP = jround(1.667 + 1100 / 1.0) = jround(1101.667) = 1102
	 * SCALE_DOWN = jround(1.667 + 1100 * 300 / 1800 + 1100 / 0.4) = jround(1.667 + 183.333 + 2750) = 2935 */
	assert_false(f->ev.backlog);
	assert_double(m[AS_EM_SCALE_UP_RATE_THRESHOLD].current, 1102);
	assert_double(m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current, 2935);
	assert_double(m[AS_EM_EXPECTED_PROCESSING_RATE].current, NAN);
	/* 1102 <= 2000 <= 2935: inside */
	assert_false(as_outside_bounds(m));
}

static void test_catch_up_disabled_and_utilization_bounds(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	f->o.catch_up_ms = 0;
	f->o.utilization_max = 0.8;
	f->o.utilization_min = 0.5;
	const struct as_eval_metric *m = evaluate(f, "s");
	/* catch-up 0 disables backlog scaling: CATCH_UP = 0, and no restart term either:
	 * SCALE_UP = jround(1100 / 0.8) = jround(1375) = 1375; SCALE_DOWN = jround(1100 / 0.5) = 2200 */
	assert_double(m[AS_EM_CATCH_UP_DATA_RATE].current, 0);
	assert_double(m[AS_EM_SCALE_UP_RATE_THRESHOLD].current, 1375);
	assert_double(m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current, 2200);
	/* a lower bound of 0 (target 0.2 - boundary 0.3 < 0 clamps to 0) gives +Infinity */
	f->o.utilization_min = NAN;
	f->o.utilization_target = 0.2;
	m = evaluate(f, "s");
	assert_double(m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current, INFINITY);
}

static void test_backlog(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	/* lag 400 000 at 1000 records/s is 400 s > 300 s: processing backlog */
	put(&f->h, 20000, "s", AS_VM_LAG, 400000);
	const struct as_eval_metric *m = evaluate(f, "s");
	assert_true(f->ev.backlog);
	/* lagRate = 1000 * (400000 - 1000) / 20000 = 19950; TDR = 1000 + 19950 = 20950;
	 * CATCH_UP = 400000 / 1800 = 222.222; bounds 1.0 and 0.0:
	 * SCALE_UP = jround(222.222 + 20950 / 1) = 21172; SCALE_DOWN = +Infinity */
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 20950);
	assert_double(m[AS_EM_CATCH_UP_DATA_RATE].current, 222.222);
	assert_double(m[AS_EM_SCALE_UP_RATE_THRESHOLD].current, 21172);
	assert_double(m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current, INFINITY);
	/* a source whose input rate is 0 with a lag counts (lag / 0 = +Infinity), 0 / 0 does not */
	struct as_samples h = {0};
	put(&h, 0, "s", AS_VM_NUM_RECORDS_IN, 5);
	put(&h, 1000, "s", AS_VM_NUM_RECORDS_IN, 5);
	put(&h, 1000, "s", AS_VM_LAG, 1);
	assert_true(as_processing_backlog(&f->o, &f->t, &h));
	put(&h, 1000, "s", AS_VM_LAG, 0);
	assert_false(as_processing_backlog(&f->o, &f->t, &h));
	put(&h, 1000, "s", AS_VM_LAG, NAN); /* a missing LAG counts as 0 */
	assert_false(as_processing_backlog(&f->o, &f->t, &h));
	as_samples_free(&h);
}

static void test_chain_ratio(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	/* a flatMap "m" after s that emits two records per record: 2000 records/s in */
	vertex(&f->t, "m", 2, 128);
	edge(&f->t, "s", "m", AS_SHIP_FORWARD);
	series(&f->h, "m", AS_VM_NUM_RECORDS_IN, 0, 20000, 40000);
	series(&f->h, "m", AS_VM_LOAD, 0.8, 0.8, 0.8);
	series(&f->h, "m", AS_VM_NUM_RECORDS_IN_PER_SECOND, 1900, 2000, 2100);
	const struct as_eval_metric *m = evaluate(f, "m");
	/* one input: ratio = rate(IN, m) / rate(IN, s) = 2000 / 1000 = 2;
	 * TDR = 1100 * 2 = 2200; CATCH_UP = 1.667 * 2 = 3.334 */
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 2200);
	assert_double(m[AS_EM_CATCH_UP_DATA_RATE].current, 3.334);
	assert_double(m[AS_EM_LAG].current, NAN); /* sources only */
	/* the MAX aggregator prefers the per-second gauge's average (2000) over the counter's rate:
	 * TPR = 2000 / 0.8 = 2500 */
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 2500);
}

static void test_join_ratios(void **state)
{
	struct fixture *f = *state;
	/* s1 (1000/s) and s2 (500/s) both feed the join j, which takes in 1500/s */
	vertex(&f->t, "s1", 1, 128);
	vertex(&f->t, "s2", 1, 128);
	vertex(&f->t, "j", 1, 128);
	edge(&f->t, "s1", "j", AS_SHIP_HASH);
	edge(&f->t, "s2", "j", AS_SHIP_HASH);
	series(&f->h, "s1", AS_VM_NUM_RECORDS_IN, 0, 10000, 20000);
	series(&f->h, "s1", AS_VM_NUM_RECORDS_OUT, 0, 10000, 20000);
	series(&f->h, "s2", AS_VM_NUM_RECORDS_IN, 0, 5000, 10000);
	series(&f->h, "s2", AS_VM_NUM_RECORDS_OUT, 0, 5000, 10000);
	series(&f->h, "j", AS_VM_NUM_RECORDS_IN, 0, 15000, 30000);
	const char *ids[] = {"s1", "s2", "j"};
	for (int i = 0; i < 3; i++) {
		series(&f->h, ids[i], AS_VM_LOAD, 0.5, 0.5, 0.5);
		if (i < 2)
			series(&f->h, ids[i], AS_VM_LAG, 0, 0, 0);
	}
	const struct as_eval_metric *m = evaluate(f, "j");
	/* the other input has one output: ratio(s1 -> j) = (1500 - rate(OUT, s2) 500) / 1000 = 1;
	 * ratio(s2 -> j) = (1500 - 1000) / 500 = 1; TDR(j) = 1000 * 1 + 500 * 1 = 1500 */
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 1500);

	/* s1 gets a second output k, and s2 now emits 250/s of its 500/s. For s1 -> j the other input (s2)
	 * still has one output: (1500 - 250) / 1000 = 1.25. For s2 -> j the other input (s1) has two outputs,
	 * so the fallback rate(OUT, s2) / rate(IN, s2) = 250 / 500 = 0.5 applies */
	vertex(&f->t, "k", 1, 128);
	edge(&f->t, "s1", "k", AS_SHIP_REBALANCE);
	series(&f->h, "k", AS_VM_NUM_RECORDS_IN, 0, 10000, 20000);
	series(&f->h, "k", AS_VM_LOAD, 0.5, 0.5, 0.5);
	series(&f->h, "s2", AS_VM_NUM_RECORDS_OUT, 0, 2500, 5000);
	m = evaluate(f, "j");
	/* TDR(j) = 1000 * 1.25 + 500 * 0.5 = 1500 */
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 1500);
	/* a NaN rate on the other input falls back to rate(OUT, u): remove s2's output counter; then
	 * ratio(s1 -> j) = rate(OUT, s1) / 1000 = 1 and ratio(s2 -> j) = NaN output rate -> 0;
	 * TDR(j) = 1000 */
	for (size_t i = 0; i < f->h.n; i++)
		as_sample_vertex_metrics(&f->h.s[i], "s2", false)[AS_VM_NUM_RECORDS_OUT] = NAN;
	m = evaluate(f, "j");
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 1000);
	/* an upstream without input (rate 0) contributes ratio 0 */
	series(&f->h, "s1", AS_VM_NUM_RECORDS_IN, 7, 7, 7);
	m = evaluate(f, "k");
	assert_double(m[AS_EM_TARGET_DATA_RATE].average, 0);
}

static void test_avg_aggregator(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	f->o.busy_agg = AS_BUSY_AVG;
	/* 20 000 ms of busy time over 20 s on 2 subtasks: 1000 / 2 = 500 ms/s per subtask; the LOAD samples
	 * (0.5) are not used. TPR = rate(IN) / 0.5 = 1000 / 0.5 = 2000 */
	series(&f->h, "s", AS_VM_ACCUMULATED_BUSY_TIME, 0, 10000, 20000);
	series(&f->h, "s", AS_VM_LOAD, 0.9, 0.9, 0.9);
	const struct as_eval_metric *m = evaluate(f, "s");
	assert_double(m[AS_EM_LOAD].average, 0.5);
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 2000);
	/* the accumulated busy time may be NaN (Flink's "NaN"): no busy time, TPR NaN */
	series(&f->h, "s", AS_VM_ACCUMULATED_BUSY_TIME, NAN, NAN, NAN);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_LOAD].average, NAN);
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, NAN);
}

static void test_true_processing_rate_choice(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	/* busy-time TPR 2000; observed 1500: 2000 > 1500 * 1.15 = 1725, so the observed rate is used */
	series(&f->h, "s", AS_VM_OBSERVED_TPR, 1500, 1500, 1500);
	const struct as_eval_metric *m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 1500);
	/* observed 1800: 2000 <= 1800 * 1.15 = 2070, the busy-time rate stays */
	series(&f->h, "s", AS_VM_OBSERVED_TPR, 1800, 1800, 1800);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 2000);
	/* one finite observation is below min-observations (2): busy-time */
	series(&f->h, "s", AS_VM_OBSERVED_TPR, NAN, NAN, 100);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 2000);
	/* busy time 0 with input: busy TPR +Infinity, so the observed average (100 + 300) / 2 = 200 */
	series(&f->h, "s", AS_VM_OBSERVED_TPR, NAN, 100, 300);
	series(&f->h, "s", AS_VM_LOAD, 0, 0, 0);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 200);
	/* no observation: TPR +Infinity (a scale-down to the maximum factor) */
	series(&f->h, "s", AS_VM_OBSERVED_TPR, NAN, NAN, NAN);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, INFINITY);
	/* observed +Infinity only (no input at the source): avg is +Infinity */
	series(&f->h, "s", AS_VM_OBSERVED_TPR, INFINITY, INFINITY, INFINITY);
	series(&f->h, "s", AS_VM_LOAD, 0.5, 0.5, 0.5);
	m = evaluate(f, "s");
	/* busy TPR 2000 is not > Infinity * 1.15: the busy-time rate stays */
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, 2000);
	/* no input at all: tprIn = 0 gives +Infinity whatever the busy time */
	series(&f->h, "s", AS_VM_NUM_RECORDS_IN, 5, 5, 5);
	series(&f->h, "s", AS_VM_OBSERVED_TPR, NAN, NAN, NAN);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, INFINITY);
	/* a NaN busy time with input above 0: NaN (LOAD missing, a legacy source) */
	series(&f->h, "s", AS_VM_NUM_RECORDS_IN, 0, 10000, 20000);
	series(&f->h, "s", AS_VM_LOAD, NAN, NAN, NAN);
	m = evaluate(f, "s");
	assert_double(m[AS_EM_TRUE_PROCESSING_RATE].average, NAN);
	/* ... which makes the thresholds no less defined, but the vertex cannot be scaled (3.2 step 1) */
	assert_double(m[AS_EM_SCALE_UP_RATE_THRESHOLD].current, 1102);
}

static void test_no_ingestion_rate(void **state)
{
	struct fixture *f = *state;
	vertex(&f->t, "s", 1, 128);
	put(&f->h, 0, "s", AS_VM_NUM_RECORDS_IN, 10);
	put(&f->h, 0, "s", AS_VM_LAG, 0);
	put(&f->h, 1000, "s", AS_VM_LAG, 0);
	assert_int_equal(as_topology_link(&f->t), 0);
	char *err = NULL;
	assert_int_equal(as_evaluate(&f->o, &f->t, &f->h, 300, &f->ev, &err), -EINVAL);
	assert_string_equal(err, "Cannot evaluate metrics without ingestion rate information (vertex s)");
	free(err);
}

static void test_capacity(void **state)
{
	struct fixture *f = *state;
	struct as_eval_metric m[AS_EM_COUNT];
	for (int k = 0; k < AS_EM_COUNT; k++)
		m[k].current = m[k].average = NAN;
	m[AS_EM_TARGET_DATA_RATE].average = 1000;
	m[AS_EM_CATCH_UP_DATA_RATE].current = 10;
	/* jround(10 + 1000 * 300 / 1800 + 1000 / 0.7) = jround(10 + 166.667 + 1428.571) = 1605 */
	assert_double(as_capacity(&f->o, m, 0.7, true, 300), 1605);
	/* without the restart term: jround(10 + 1428.571) = 1439 */
	assert_double(as_capacity(&f->o, m, 0.7, false, 300), 1439);
	/* u is clamped to [0, 1]: 1.5 -> 1: jround(10 + 1000) = 1010; 0 -> +Infinity */
	assert_double(as_capacity(&f->o, m, 1.5, false, 300), 1010);
	assert_double(as_capacity(&f->o, m, -0.5, false, 300), INFINITY);
	m[AS_EM_CATCH_UP_DATA_RATE].current = NAN;
	assert_double(as_capacity(&f->o, m, 0.7, true, 300), NAN);
	m[AS_EM_CATCH_UP_DATA_RATE].current = 0;
	m[AS_EM_TARGET_DATA_RATE].average = NAN;
	assert_double(as_capacity(&f->o, m, 0.7, true, 300), NAN);
	/* an infinite target rate saturates as Math.round does */
	m[AS_EM_TARGET_DATA_RATE].average = INFINITY;
	assert_double(as_capacity(&f->o, m, 0.7, true, 300), 9223372036854775807.0);
}

static void test_restart_seconds(void **state)
{
	struct fixture *f = *state;
	struct as_tracking_record recs[] = {{1000, 90500}, {2000, -1}, {3000, 200999}};
	struct as_tracking t = {recs, 3};
	/* tracking off: restart.time, 300 s */
	assert_int_equal(as_restart_seconds(&f->o, &t), 300);
	/* on: the maximum recorded, 200 999 ms -> 200 s (truncated), below the 15 min limit */
	f->o.restart_tracking = true;
	assert_int_equal(as_restart_seconds(&f->o, &t), 200);
	f->o.restart_tracking_limit_ms = 60500;
	assert_int_equal(as_restart_seconds(&f->o, &t), 60);
	/* no measured record: restart.time, even above the limit */
	struct as_tracking_record none[] = {{1000, -1}};
	struct as_tracking t2 = {none, 1};
	f->o.restart_time_ms = 20 * 60 * 1000;
	assert_int_equal(as_restart_seconds(&f->o, &t2), 1200);
	assert_int_equal(as_restart_seconds(&f->o, NULL), 1200);
}

static void test_global(void **state)
{
	struct fixture *f = *state;
	source_s(f);
	series(&f->h, NULL, AS_GM_HEAP_MAX_USAGE_RATIO, 0.5, NAN, 0.7);
	series(&f->h, NULL, AS_GM_GC_PRESSURE, 0.9, 0.1, 0.2);
	series(&f->h, NULL, AS_GM_NUM_TASK_SLOTS_USED, 2, 2, 4);
	series(&f->h, NULL, AS_GM_HEAP_MEMORY_USED, 100, 200, 300);
	evaluate(f, "s");
	/* current from the latest sample, average over the window (NaN skipped): (0.5 + 0.7) / 2 = 0.6 */
	assert_double(f->ev.g[AS_EG_HEAP_MAX_USAGE_RATIO].current, 0.7);
	assert_double(f->ev.g[AS_EG_HEAP_MAX_USAGE_RATIO].average, 0.6);
	assert_double(f->ev.g[AS_EG_GC_PRESSURE].current, 0.2);
	assert_double(f->ev.g[AS_EG_GC_PRESSURE].average, NAN);
	assert_double(f->ev.g[AS_EG_NUM_TASK_SLOTS_USED].current, 4);
	assert_double(f->ev.g[AS_EG_HEAP_MEMORY_USED].average, 200);
	assert_double(f->ev.g[AS_EG_MANAGED_MEMORY_USED].current, NAN); /* missing: NaN */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_source, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_catch_up_disabled_and_utilization_bounds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_backlog, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_ratio, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_join_ratios, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_avg_aggregator, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_true_processing_rate_choice, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_ingestion_rate, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restart_seconds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_global, setup, teardown),
	};
	return cmocka_run_group_tests_name("autoscaler_eval", tests, NULL, NULL);
}

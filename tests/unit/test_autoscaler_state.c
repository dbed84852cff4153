/* test_autoscaler_state: the persisted state of reference 5.1: every kind to JSON and back (NaN and
 * infinities included), corrupt or hostile values rejected with the JSON path of the problem, the
 * in-memory store, and the file store on a scratch directory: round trip across store instances, the
 * directory created on first flush, an unreadable file reported once and moved aside, another job's or
 * another version's file refused, bad job keys, clearing, and the size bound. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_store_mem.h"
#include "as_internal.h"
#include "store.h"

static void samples_fixture(struct as_samples *h)
{
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < 3; i++) {
		struct as_sample s;
		as_sample_init(&s, 1000 * (i + 1));
		double *m = as_sample_vertex_metrics(&s, "aa", true);
		m[AS_VM_LOAD] = 0.5 + i;
		m[AS_VM_OBSERVED_TPR] = i == 0 ? INFINITY : NAN;
		m[AS_VM_LAG] = -INFINITY;
		as_sample_vertex_metrics(&s, "bb", true)[AS_VM_NUM_RECORDS_IN] = 12345678901.0;
		s.g[AS_GM_HEAP_MAX_USAGE_RATIO] = 0.25;
		as_samples_put(h, &s);
	}
}

static void test_samples_round_trip(void **state)
{
	(void)state;
	struct as_samples h, back;
	samples_fixture(&h);
	cJSON *j = as_samples_to_json(&h);
	char *text = cJSON_PrintUnformatted(j);
	/* NaN is left out; the infinities are strings */
	assert_contains(text, "{\"timestamp\":1000,\"vertices\":{\"aa\":{\"LAG\":\"-Infinity\",\"LOAD\":0.5,"
	                      "\"OBSERVED_TPR\":\"Infinity\"},\"bb\":{\"NUM_RECORDS_IN\":12345678901}},"
	                      "\"global\":{\"HEAP_MAX_USAGE_RATIO\":0.25}}");
	cJSON *parsed = cJSON_Parse(text);
	char *err = NULL;
	assert_int_equal(as_samples_from_json(parsed, &back, &err), 0);
	assert_int_equal(back.n, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(back.s[i].ts, h.s[i].ts);
		const double *a = as_sample_vertex_get(&h.s[i], "aa"), *b = as_sample_vertex_get(&back.s[i], "aa");
		for (int k = 0; k < AS_VM_COUNT; k++)
			assert_true((isnan(a[k]) && isnan(b[k])) || a[k] == b[k]);
		assert_true(back.s[i].g[AS_GM_HEAP_MAX_USAGE_RATIO] == 0.25);
		assert_true(isnan(back.s[i].g[AS_GM_GC_PRESSURE]));
	}
	as_samples_free(&back);
	as_samples_free(&h);
	cJSON_Delete(parsed);
	cJSON_Delete(j);
	free(text);
}

static void test_other_kinds_round_trip(void **state)
{
	(void)state;
	char *err = NULL;
	/* scaling history */
	struct as_scaling_history h = {0}, hb;
	struct as_history_entry e;
	memset(&e, 0, sizeof(e));
	for (int k = 0; k < AS_EM_COUNT; k++)
		e.m[k].current = e.m[k].average = NAN;
	e.ts = 10;
	e.current_parallelism = 2;
	e.new_parallelism = 4;
	e.m[AS_EM_TRUE_PROCESSING_RATE].average = 800;
	e.m[AS_EM_EXPECTED_PROCESSING_RATE].current = INFINITY;
	as_scaling_history_add(&h, "aa", &e);
	e.ts = 20;
	as_scaling_history_add(&h, "aa", &e);
	cJSON *j = as_scaling_history_to_json(&h);
	assert_int_equal(as_scaling_history_from_json(j, &hb, &err), 0);
	assert_int_equal(hb.n, 1);
	assert_int_equal(hb.v[0].n, 2);
	assert_int_equal(hb.v[0].e[1].ts, 20);
	assert_int_equal(hb.v[0].e[1].new_parallelism, 4);
	assert_true(hb.v[0].e[1].m[AS_EM_TRUE_PROCESSING_RATE].average == 800);
	assert_true(isinf(hb.v[0].e[1].m[AS_EM_EXPECTED_PROCESSING_RATE].current));
	assert_true(isnan(hb.v[0].e[1].m[AS_EM_LOAD].average));
	cJSON_Delete(j);
	as_scaling_history_free(&hb);
	as_scaling_history_free(&h);
	/* tracking: a null restart duration */
	struct as_tracking_record recs[] = {{5, -1}, {9, 4500}};
	struct as_tracking t = {recs, 2}, tb;
	j = as_tracking_to_json(&t);
	char *text = cJSON_PrintUnformatted(j);
	assert_string_equal(text, "{\"scalingRecords\":[{\"timestamp\":5,\"restartDuration\":null},{\"timestamp\":9,"
	                          "\"restartDuration\":4500}]}");
	free(text);
	assert_int_equal(as_tracking_from_json(j, &tb, &err), 0);
	assert_int_equal(tb.n, 2);
	assert_int_equal(tb.r[0].restart_ms, -1);
	assert_int_equal(tb.r[1].restart_ms, 4500);
	as_tracking_free(&tb);
	cJSON_Delete(j);
	/* overrides: decimal strings (numbers are read too) */
	struct as_pmap m = {0}, mb;
	as_pmap_set(&m, "aa", 3);
	as_pmap_set(&m, "bb", 12);
	j = as_pmap_to_json(&m);
	text = cJSON_PrintUnformatted(j);
	assert_string_equal(text, "{\"aa\":\"3\",\"bb\":\"12\"}");
	free(text);
	assert_int_equal(as_pmap_from_json(j, &mb, &err), 0);
	assert_true(as_pmap_equal(&m, &mb));
	as_pmap_free(&mb);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"aa\": 3}");
	assert_int_equal(as_pmap_from_json(j, &mb, &err), 0);
	assert_int_equal(as_pmap_get(&mb, "aa"), 3);
	as_pmap_free(&mb);
	as_pmap_free(&m);
	cJSON_Delete(j);
	/* delayed scale-down */
	struct as_delayed d = {0}, db;
	struct as_options o;
	as_options_defaults(&o);
	bool out;
	as_delayed_scale_down(&o, &d, "aa", 10, 8, true, 100, &out);
	as_delayed_scale_down(&o, &d, "aa", 10, 6, false, 200, &out);
	j = as_delayed_to_json(&d);
	text = cJSON_PrintUnformatted(j);
	assert_string_equal(text,
	                    "{\"delayedVertices\":{\"aa\":{\"firstTriggerTime\":100,\"recommendedParallelisms\":[{"
	                    "\"triggerTime\":100,\"parallelism\":8,\"outsideUtilizationBound\":true},{"
	                    "\"triggerTime\":200,\"parallelism\":6,\"outsideUtilizationBound\":false}]}}}");
	free(text);
	assert_int_equal(as_delayed_from_json(j, &db, &err), 0);
	assert_int_equal(db.n, 1);
	assert_int_equal(db.v[0].n, 2);
	assert_int_equal(db.v[0].r[1].parallelism, 6);
	assert_false(db.v[0].r[1].outside);
	as_delayed_free(&db);
	as_delayed_free(&d);
	as_options_free(&o);
	cJSON_Delete(j);
}

struct bad_state {
	enum as_state_kind kind;
	const char *json, *err;
};

static const struct bad_state bad_states[] = {
    {AS_STATE_COLLECTED_METRICS, "{}", "collectedMetrics: must be an array"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": -1}]",
     "collectedMetrics[0].timestamp: must be a timestamp in epoch milliseconds"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 1.5}]",
     "collectedMetrics[0].timestamp: must be a timestamp in epoch milliseconds"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5, \"vertices\": {\"a\": {\"LOAD\": \"x\"}}}]",
     "collectedMetrics[0].vertices.a.LOAD: must be a number, \"NaN\", \"Infinity\" or null"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5, \"vertices\": {\"a\": {\"LOADD\": 1}}}]",
     "collectedMetrics[0].vertices.a.LOADD: unknown metric (did you mean \"LOAD\"?)"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5, \"vertices\": {\"a\": 3}}]",
     "collectedMetrics[0].vertices.a: must be an object of metric names to numbers"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5, \"vertices\": {\"\": {}}}]",
     "collectedMetrics[0].vertices: bad vertex id"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5}, {\"timestamp\": 5}]",
     "collectedMetrics[1].timestamp: must be after the previous sample's (oldest first)"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5, \"extra\": 1}]",
     "collectedMetrics[0].extra: unknown field (expected timestamp, vertices, global)"},
    {AS_STATE_COLLECTED_METRICS, "[{\"timestamp\": 5, \"global\": {\"GC\": 1}}]",
     "collectedMetrics[0].global.GC: unknown metric"},
    {AS_STATE_COLLECTED_METRICS, "[7]", "collectedMetrics[0]: must be an object"},
    {AS_STATE_SCALING_HISTORY, "[]", "scalingHistory: must be an object"},
    {AS_STATE_SCALING_HISTORY, "{\"v\": {}}", "scalingHistory.v: must be an array"},
    {AS_STATE_SCALING_HISTORY, "{\"v\": [{\"timestamp\": 1, \"currentParallelism\": 0, \"newParallelism\": 2}]}",
     "scalingHistory.v[0].currentParallelism: must be a positive integer"},
    {AS_STATE_SCALING_HISTORY, "{\"v\": [{\"timestamp\": 1, \"currentParallelism\": 1}]}",
     "scalingHistory.v[0].newParallelism: must be a positive integer"},
    {AS_STATE_SCALING_HISTORY,
     "{\"v\": [{\"timestamp\": 1, \"currentParallelism\": 1, \"newParallelism\": 2, \"metrics\": {\"TPR\": 1}}]}",
     "scalingHistory.v[0].metrics.TPR: unknown metric"},
    {AS_STATE_SCALING_HISTORY,
     "{\"v\": [{\"timestamp\": 1, \"currentParallelism\": 1, \"newParallelism\": 2, \"metrics\": {\"LOAD\": "
     "{\"now\": 1}}}]}",
     "scalingHistory.v[0].metrics.LOAD: must be a number or {\"current\", \"average\"}"},
    {AS_STATE_SCALING_HISTORY,
     "{\"v\": [{\"timestamp\": 2, \"currentParallelism\": 1, \"newParallelism\": 2},"
     " {\"timestamp\": 1, \"currentParallelism\": 2, \"newParallelism\": 3}]}",
     "scalingHistory.v[1].timestamp: must be after the previous entry's (oldest first)"},
    {AS_STATE_SCALING_TRACKING, "{}", "scalingTracking.scalingRecords: must be an array"},
    {AS_STATE_SCALING_TRACKING, "{\"scalingRecords\": [{\"timestamp\": 1, \"restartDuration\": \"PT5S\"}]}",
     "scalingTracking.scalingRecords[0].restartDuration: must be milliseconds or null"},
    {AS_STATE_SCALING_TRACKING, "{\"scalingRecords\": [{\"timestamp\": 3}, {\"timestamp\": 2}]}",
     "scalingTracking.scalingRecords[1].timestamp: must be after the previous record's (oldest first)"},
    {AS_STATE_PARALLELISM_OVERRIDES, "[]", "parallelismOverrides: must be an object"},
    {AS_STATE_PARALLELISM_OVERRIDES, "{\"v\": \"0\"}", "parallelismOverrides.v: must be a positive integer"},
    {AS_STATE_PARALLELISM_OVERRIDES, "{\"v\": true}", "parallelismOverrides.v: must be a positive integer"},
    {AS_STATE_PARALLELISM_OVERRIDES, "{\"v\": \"3x\"}", "parallelismOverrides.v: must be a positive integer"},
    {AS_STATE_DELAYED_SCALE_DOWN, "{\"delayedVertices\": []}", "delayedScaleDown.delayedVertices: must be an object"},
    {AS_STATE_DELAYED_SCALE_DOWN,
     "{\"delayedVertices\": {\"v\": {\"firstTriggerTime\": 1, \"recommendedParallelisms\": []}}}",
     "delayedScaleDown.delayedVertices.v.recommendedParallelisms: must not be empty"},
    {AS_STATE_DELAYED_SCALE_DOWN,
     "{\"delayedVertices\": {\"v\": {\"firstTriggerTime\": 1, \"recommendedParallelisms\": ["
     "{\"triggerTime\": 1, \"parallelism\": 3, \"outsideUtilizationBound\": true},"
     " {\"triggerTime\": 2, \"parallelism\": 4, \"outsideUtilizationBound\": true}]}}}",
     "delayedScaleDown.delayedVertices.v.recommendedParallelisms[1].parallelism: must be below the previous "
     "recommendation's (front first)"},
    {AS_STATE_DELAYED_SCALE_DOWN,
     "{\"delayedVertices\": {\"v\": {\"firstTriggerTime\": 1, \"recommendedParallelisms\": ["
     "{\"triggerTime\": 1, \"parallelism\": 3}]}}}",
     "delayedScaleDown.delayedVertices.v.recommendedParallelisms[0].outsideUtilizationBound: must be true or false"},
    {AS_STATE_DELAYED_SCALE_DOWN,
     "{\"delayedVertices\": {\"v\": {\"firstTriggerTime\": 5, \"recommendedParallelisms\": ["
     "{\"triggerTime\": 1, \"parallelism\": 3, \"outsideUtilizationBound\": false}]}}}",
     "delayedScaleDown.delayedVertices.v.recommendedParallelisms[0].triggerTime: must not be before "
     "firstTriggerTime"},
    {AS_STATE_DELAYED_SCALE_DOWN, "{\"delayedVertices\": {\"v\": {\"recommendedParallelisms\": []}}}",
     "delayedScaleDown.delayedVertices.v.firstTriggerTime: must be a timestamp in epoch milliseconds"},
};

static void test_corrupt_values(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_states) / sizeof(bad_states[0]); i++) {
		const struct bad_state *b = &bad_states[i];
		cJSON *j = cJSON_Parse(b->json);
		if (!j)
			fail_msg("case %zu is not JSON", i);
		char *err = NULL;
		int r = -1;
		switch (b->kind) {
		case AS_STATE_COLLECTED_METRICS: {
			struct as_samples h;
			r = as_samples_from_json(j, &h, &err);
			break;
		}
		case AS_STATE_SCALING_HISTORY: {
			struct as_scaling_history h;
			r = as_scaling_history_from_json(j, &h, &err);
			break;
		}
		case AS_STATE_SCALING_TRACKING: {
			struct as_tracking t;
			r = as_tracking_from_json(j, &t, &err);
			break;
		}
		case AS_STATE_PARALLELISM_OVERRIDES: {
			struct as_pmap m;
			r = as_pmap_from_json(j, &m, &err);
			break;
		}
		case AS_STATE_DELAYED_SCALE_DOWN: {
			struct as_delayed d;
			r = as_delayed_from_json(j, &d, &err);
			break;
		}
		case AS_STATE_KIND_COUNT:
			break;
		}
		if (r != -EINVAL || !err || strcmp(err, b->err))
			fail_msg("case %zu: rc %d, error \"%s\", want \"%s\"", i, r, err ? err : "(none)", b->err);
		free(err);
		cJSON_Delete(j);
	}
}

static void test_memory_store(void **state)
{
	(void)state;
	struct as_state_store s = as_store_memory_new();
	cJSON *v = NULL;
	char *err = NULL;
	assert_int_equal(s.ops->get(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES, &v, &err), 0);
	assert_null(v);
	assert_int_equal(s.ops->put(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES, cJSON_Parse("{\"a\": \"2\"}")), 0);
	assert_int_equal(s.ops->put(s.impl, "j1", AS_STATE_DELAYED_SCALE_DOWN, cJSON_Parse("{}")), 0);
	assert_int_equal(s.ops->get(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES, &v, &err), 0);
	assert_non_null(v);
	cJSON_Delete(v);
	assert_int_equal(s.ops->remove(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES), 0);
	assert_int_equal(s.ops->get(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES, &v, &err), 0);
	assert_null(v);
	assert_int_equal(s.ops->flush(s.impl, "j1", &err), 0);
	assert_int_equal(s.ops->clear_all(s.impl, "j1"), 0);
	assert_int_equal(s.ops->get(s.impl, "j1", AS_STATE_DELAYED_SCALE_DOWN, &v, &err), 0);
	assert_null(v);
	s.ops->free(s.impl);
}

static void test_file_store(void **state)
{
	(void)state;
	char *tmp = make_tempdir();
	char *dir = path_join(tmp, "state/autoscaler");
	struct as_state_store s = as_store_file_new(dir);
	char *err = NULL;
	cJSON *v = NULL;
	/* nothing yet; the directory is created on the first flush that has something to write */
	assert_int_equal(s.ops->get(s.impl, "0123abcd", AS_STATE_PARALLELISM_OVERRIDES, &v, &err), 0);
	assert_null(v);
	assert_int_equal(s.ops->flush(s.impl, "0123abcd", &err), 0);
	assert_int_equal(access(dir, F_OK), -1);
	struct as_samples h;
	samples_fixture(&h);
	s.ops->put(s.impl, "0123abcd", AS_STATE_COLLECTED_METRICS, as_samples_to_json(&h));
	s.ops->put(s.impl, "0123abcd", AS_STATE_PARALLELISM_OVERRIDES, cJSON_Parse("{\"aa\": \"4\"}"));
	assert_int_equal(s.ops->flush(s.impl, "0123abcd", &err), 0);
	char *file = path_join(dir, "0123abcd.json");
	char *text = NULL;
	assert_int_equal(read_file(file, 1 << 20, &text, NULL), 0);
	assert_contains(text, "\"version\":1,\"jobKey\":\"0123abcd\",\"collectedMetrics\":[");
	assert_contains(text, "\"parallelismOverrides\":{\"aa\":\"4\"}");
	free(text);
	s.ops->free(s.impl);

	/* a new store (a restart of flinklet) reads it back */
	s = as_store_file_new(dir);
	assert_int_equal(s.ops->get(s.impl, "0123abcd", AS_STATE_COLLECTED_METRICS, &v, &err), 0);
	struct as_samples back;
	assert_int_equal(as_samples_from_json(v, &back, &err), 0);
	assert_int_equal(back.n, 3);
	as_samples_free(&back);
	cJSON_Delete(v);
	/* bad job keys never become file names */
	assert_int_equal(s.ops->get(s.impl, "../x", AS_STATE_COLLECTED_METRICS, &v, &err), -EINVAL);
	assert_int_equal(s.ops->put(s.impl, ".hidden", AS_STATE_COLLECTED_METRICS, cJSON_CreateArray()), -EINVAL);
	/* clearing everything removes the file */
	assert_int_equal(s.ops->clear_all(s.impl, "0123abcd"), 0);
	assert_int_equal(s.ops->flush(s.impl, "0123abcd", &err), 0);
	assert_int_equal(access(file, F_OK), -1);
	s.ops->free(s.impl);
	as_samples_free(&h);
	free(file);
	free(dir);
	remove_tree(tmp);
}

struct handed {
	char *path, *text;
	int calls;
};

static void capture_write(void *ctx, const char *path, char *text)
{
	struct handed *h = ctx;
	free(h->path);
	free(h->text);
	h->path = xstrdup(path);
	h->text = text; /* the writer owns it */
	h->calls++;
}

/* With a writer (the supervisor's worker thread), flush hands the document over and writes nothing itself. */
static void test_file_store_with_a_writer(void **state)
{
	(void)state;
	char *tmp = make_tempdir();
	char *dir = path_join(tmp, "autoscaler");
	struct handed h = {0};
	struct as_state_store s = as_store_file_new_with_writer(dir, capture_write, &h);
	char *err = NULL;
	s.ops->put(s.impl, "0123abcd", AS_STATE_PARALLELISM_OVERRIDES, cJSON_Parse("{\"aa\": \"4\"}"));
	assert_int_equal(s.ops->flush(s.impl, "0123abcd", &err), 0);
	assert_int_equal(h.calls, 1);
	char *file = path_join(dir, "0123abcd.json");
	assert_string_equal(h.path, file);
	assert_contains(h.text, "\"parallelismOverrides\":{\"aa\":\"4\"}");
	assert_int_equal(access(dir, F_OK), -1); /* nothing written here */
	/* nothing changed: nothing handed over again */
	assert_int_equal(s.ops->flush(s.impl, "0123abcd", &err), 0);
	assert_int_equal(h.calls, 1);
	s.ops->free(s.impl);
	free(h.path);
	free(h.text);
	free(file);
	free(dir);
	remove_tree(tmp);
}

static void test_file_store_corrupt(void **state)
{
	(void)state;
	static const struct {
		const char *content, *err;
	} cases[] = {
	    {"{not json", "is not a JSON object"},
	    {"[1, 2]", "is not a JSON object"},
	    {"{\"version\": 2, \"jobKey\": \"j1\"}", "unknown version (expected 1)"},
	    {"{\"version\": 1, \"jobKey\": \"j2\"}", "belongs to another job"},
	    {"\x01\x02\x03\xff", "is not a JSON object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = make_tempdir();
		char *file = write_text(dir, "j1.json", cases[i].content);
		struct as_state_store s = as_store_file_new(dir);
		char *err = NULL;
		cJSON *v = NULL;
		/* reported once, as -EBADMSG with the reason; the file is moved aside */
		assert_int_equal(s.ops->get(s.impl, "j1", AS_STATE_COLLECTED_METRICS, &v, &err), -EBADMSG);
		assert_contains(err, cases[i].err);
		free(err);
		err = NULL;
		assert_int_equal(s.ops->get(s.impl, "j1", AS_STATE_COLLECTED_METRICS, &v, &err), 0);
		assert_null(v);
		char *aside = xasprintf("%s.corrupt", file);
		assert_int_equal(access(aside, F_OK), 0);
		assert_int_equal(access(file, F_OK), -1);
		/* the next flush writes a good file */
		s.ops->put(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES, cJSON_Parse("{\"a\": \"1\"}"));
		assert_int_equal(s.ops->flush(s.impl, "j1", &err), 0);
		assert_int_equal(access(file, F_OK), 0);
		s.ops->free(s.impl);
		free(aside);
		free(file);
		remove_tree(dir);
	}
}

static void test_size_bound(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	struct as_state_store s = as_store_file_new(dir);
	/* 4000 samples of 5 vertices is well above 1 MB */
	struct as_samples h = {0};
	for (int i = 0; i < 4000; i++) {
		struct as_sample x;
		as_sample_init(&x, 1000 + i);
		for (int v = 0; v < 5; v++) {
			char id[40];
			snprintf(id, sizeof(id), "cbc357ccb763df2852fee8c4fc7d55f%d", v);
			double *m = as_sample_vertex_metrics(&x, id, true);
			for (int k = 0; k < AS_VM_COUNT; k++)
				m[k] = 1234.567 + k;
		}
		as_samples_put(&h, &x);
	}
	s.ops->put(s.impl, "j1", AS_STATE_COLLECTED_METRICS, as_samples_to_json(&h));
	s.ops->put(s.impl, "j1", AS_STATE_PARALLELISM_OVERRIDES, cJSON_Parse("{\"a\": \"1\"}"));
	char *err = NULL;
	assert_int_equal(s.ops->flush(s.impl, "j1", &err), 0);
	char *file = path_join(dir, "j1.json"), *text = NULL;
	size_t len = 0;
	assert_int_equal(read_file(file, 4 << 20, &text, &len), 0);
	assert_true(len <= AS_STATE_MAX_BYTES);
	assert_true(len > AS_STATE_MAX_BYTES - 5000); /* trimmed just enough */
	/* the oldest samples went; the newest and the other kinds stayed */
	assert_not_contains(text, "\"timestamp\":1000,");
	assert_contains(text, "\"timestamp\":4999,");
	assert_contains(text, "\"parallelismOverrides\":{\"a\":\"1\"}");
	free(text);
	free(file);
	as_samples_free(&h);
	s.ops->free(s.impl);
	remove_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_samples_round_trip), cmocka_unit_test(test_other_kinds_round_trip),
	    cmocka_unit_test(test_corrupt_values),     cmocka_unit_test(test_memory_store),
	    cmocka_unit_test(test_file_store),         cmocka_unit_test(test_file_store_with_a_writer),
	    cmocka_unit_test(test_file_store_corrupt), cmocka_unit_test(test_size_bound),
	};
	return cmocka_run_group_tests_name("autoscaler_state", tests, NULL, NULL);
}

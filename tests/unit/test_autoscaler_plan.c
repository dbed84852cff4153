/* test_autoscaler_plan: `flinklet autoscaler plan`'s core (issue 4 item 7): evaluated metrics in, the
 * decision out; samples evaluated as the whole window; a delayed scale-down replayed across three plan
 * calls by feeding each output's delayedScaleDown into the next input; metrics-only mode, excluded
 * periods, memory pressure, backlog, ineffective scaling and excluded vertices through plan; the spec's
 * options overridden by "config"; and bad input rejected with messages that name the JSON path. */
#include "unit.h"

#include <math.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

/* Runs plan on text; returns the parsed output (the caller deletes it) and fails on errors. */
static cJSON *plan_ok(const char *text, const struct spec *spec)
{
	struct strv errors = {0};
	char *out = NULL;
	int r = autoscaler_plan(text, strlen(text), spec, &out, &errors);
	if (r < 0) {
		for (size_t i = 0; i < errors.n; i++)
			print_error("%s\n", errors.v[i]);
		fail();
	}
	assert_int_equal(errors.n, 0);
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	free(out);
	strv_free(&errors);
	return j;
}

static const cJSON *vertex(const cJSON *out, const char *id)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(out, "vertices"), id);
	assert_non_null(v);
	return v;
}

static double num(const cJSON *obj, const char *name)
{
	const cJSON *j = cJSON_GetObjectItem(obj, name);
	double v;
	if (as_json_double(j, &v) < 0)
		fail_msg("%s is not a number", name);
	return v;
}

static double evaluated(const cJSON *out, const char *id, const char *metric)
{
	return num(cJSON_GetObjectItem(vertex(out, id), "evaluated"), metric);
}

static const char *str(const cJSON *obj, const char *name)
{
	const cJSON *j = cJSON_GetObjectItem(obj, name);
	assert_true(cJSON_IsString(j));
	return j->valuestring;
}

/* The job of docs/autoscaler.md's first example: src (4 partitions) -> HASH -> agg, p 1 each.
 * capacity = jround(1000 * 300 / 1800 + 1000 / 0.7) = 1595; src: f = 1595 / 800 = 1.994 -> 2;
 * agg: f = 1595 / 1500 = 1.063 -> 2; thresholds 1000 and 2667; src is outside (800 < 1000). */
#define EX1_VERTICES                                                                                                   \
	"\"vertices\": ["                                                                                              \
	" {\"id\": \"src\", \"parallelism\": 1, \"maxParallelism\": 128, \"numSourcePartitions\": 4, \"inputs\": [],"  \
	"  \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": %s, \"CATCH_UP_DATA_RATE\": 0, "      \
	"\"LAG\": 0}},"                                                                                                \
	" {\"id\": \"agg\", \"parallelism\": 1, \"maxParallelism\": 128, \"inputs\": [{\"id\": \"src\", "              \
	"\"shipStrategy\": \"HASH\"}],"                                                                                \
	"  \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 1500, \"CATCH_UP_DATA_RATE\": 0}}]"

static cJSON *ex1(const char *extra, const char *src_tpr)
{
	char *v = xasprintf(EX1_VERTICES, src_tpr);
	char *text = xasprintf("{\"now\": 1767225600000, %s%s}", v, extra);
	cJSON *out = plan_ok(text, NULL);
	free(v);
	free(text);
	return out;
}

static void test_evaluated_input(void **state)
{
	(void)state;
	cJSON *out = ex1("", "800");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	assert_string_equal(str(out, "decision"), "scale");
	const cJSON *src = vertex(out, "src"), *agg = vertex(out, "agg");
	assert_true(num(src, "currentParallelism") == 1);
	assert_true(num(src, "recommendedParallelism") == 2);
	assert_true(num(src, "newParallelism") == 2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(src, "outsideUtilizationBound")));
	assert_true(num(agg, "newParallelism") == 2);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(agg, "outsideUtilizationBound")));
	assert_true(evaluated(out, "src", "SCALE_UP_RATE_THRESHOLD") == 1000);
	assert_true(evaluated(out, "src", "SCALE_DOWN_RATE_THRESHOLD") == 2667);
	assert_true(evaluated(out, "src", "EXPECTED_PROCESSING_RATE") == 1600);
	assert_true(evaluated(out, "agg", "EXPECTED_PROCESSING_RATE") == 3000);
	assert_true(evaluated(out, "src", "RECOMMENDED_PARALLELISM") == 2);
	assert_true(isnan(evaluated(out, "agg", "LAG")));
	const cJSON *events = cJSON_GetObjectItem(out, "events");
	assert_int_equal(cJSON_GetArraySize(events), 1);
	assert_string_equal(str(cJSON_GetArrayItem(events, 0), "reason"), "ScalingReport");
	cJSON_Delete(out);

	/* src inside its bounds (1200): nothing moves although both targets differ from 1 */
	out = ex1("", "1200");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	assert_string_equal(str(out, "decision"), "all vertices within their utilization bounds");
	assert_true(num(vertex(out, "src"), "recommendedParallelism") == 2); /* the vertex's own target */
	assert_true(num(vertex(out, "src"), "newParallelism") == 1);
	cJSON_Delete(out);

	/* NaN as a string: src (NaN rate) is not scaled; agg's change alone is inside its bounds */
	out = ex1("", "\"NaN\"");
	assert_string_equal(str(out, "decision"), "all vertices within their utilization bounds");
	assert_true(num(vertex(out, "src"), "targetParallelism") == 1);
	assert_true(isnan(evaluated(out, "src", "EXPECTED_PROCESSING_RATE")));
	cJSON_Delete(out);
}

static void test_gates(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	/* metrics-only mode: reported, not applied */
	cJSON *out = ex1(", \"config\": {\"job.autoscaler.scaling.enabled\": false}", "800");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	assert_string_equal(str(out, "decision"), "scaling disabled");
	assert_true(num(vertex(out, "src"), "recommendedParallelism") == 2);
	assert_true(num(vertex(out, "src"), "newParallelism") == 1);
	assert_true(evaluated(out, "src", "RECOMMENDED_PARALLELISM") == 2);
	assert_contains(str(cJSON_GetArrayItem(cJSON_GetObjectItem(out, "events"), 0), "message"),
	                "Scaling execution disabled by config job.autoscaler.scaling.enabled: false");
	cJSON_Delete(out);
	/* now (2026-01-01 00:00 UTC) in an excluded period */
	out = ex1(", \"config\": {\"job.autoscaler.excluded.periods\": [\"00:00:00-01:00:00\"]}", "800");
	assert_string_equal(str(out, "decision"), "excluded period");
	cJSON_Delete(out);
	/* memory pressure through the evaluated global metrics */
	out = ex1(", \"config\": {\"job.autoscaler.memory.gc-pressure.threshold\": 0.3}, \"global\": {\"GC_PRESSURE\": "
	          "0.5}",
	          "800");
	assert_string_equal(str(out, "decision"), "memory pressure (GC)");
	assert_string_equal(str(cJSON_GetArrayItem(cJSON_GetObjectItem(out, "events"), 0), "reason"), "MemoryPressure");
	cJSON_Delete(out);
	out = ex1(", \"config\": {\"job.autoscaler.memory.heap-usage.threshold\": 0.8}, \"global\": "
	          "{\"HEAP_MAX_USAGE_RATIO\": {\"current\": 0.5, \"average\": 0.85}}",
	          "800");
	assert_string_equal(str(out, "decision"), "memory pressure (heap)");
	cJSON_Delete(out);
	/* an excluded vertex is not computed; agg alone is inside its bounds, so nothing moves */
	out = ex1(", \"config\": {\"job.autoscaler.vertex.exclude.ids\": \"src\"}", "800");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(vertex(out, "src"), "excluded")));
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	cJSON_Delete(out);
	/* processing backlog: bounds 1.0 and 0.0, SCALE_DOWN +Infinity; CATCH_UP defaults to 0 when absent */
	out = ex1(", \"processingBacklog\": true", "800");
	assert_true(isinf(evaluated(out, "src", "SCALE_DOWN_RATE_THRESHOLD")));
	assert_true(evaluated(out, "src", "SCALE_UP_RATE_THRESHOLD") == 1000);
	cJSON_Delete(out);
	/* the quota with a TaskManager description: 1 slot per TM, 1 GiB each, quota 1 GiB: 2 TMs after */
	char *v = xasprintf(EX1_VERTICES, "800");
	char *text = xasprintf("{\"now\": 0, %s, \"config\": {\"job.autoscaler.quota.memory\": \"1g\"},"
	                       " \"taskManager\": {\"memory\": \"1g\", \"slots\": 1}}",
	                       v);
	/* without slot sharing groups the quota is not checked */
	out = plan_ok(text, NULL);
	assert_string_equal(str(out, "decision"), "scale");
	cJSON_Delete(out);
	free(text);
	free(v);
}

static void test_thresholds_given(void **state)
{
	(void)state;
	/* recorded thresholds are kept as given; absent ones are computed */
	cJSON *out = plan_ok("{\"now\": 0, \"vertices\": [{\"id\": \"s\", \"parallelism\": 4, \"maxParallelism\": 128,"
	                     " \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 1100,"
	                     " \"SCALE_UP_RATE_THRESHOLD\": 1200}}]}",
	                     NULL);
	assert_true(evaluated(out, "s", "SCALE_UP_RATE_THRESHOLD") == 1200);
	assert_true(evaluated(out, "s", "SCALE_DOWN_RATE_THRESHOLD") == 2667);
	/* 1100 < 1200: outside; f = 1595 / 1100 = 1.45, ceil(5.8) = 6 */
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(vertex(out, "s"), "outsideUtilizationBound")));
	assert_true(num(vertex(out, "s"), "newParallelism") == 6);
	cJSON_Delete(out);
}

/* One source at p 10 with target rate 1000 and the given TPR, at now, with the delayed state. */
static cJSON *down(int64_t now, const char *tpr, const cJSON *delayed)
{
	char *d = delayed ? cJSON_PrintUnformatted(delayed) : xstrdup("{}");
	char *text =
	    xasprintf("{\"now\": %lld, \"delayedScaleDown\": %s, \"vertices\": [{\"id\": \"src\", "
	              "\"parallelism\": 10, \"maxParallelism\": 128, \"evaluated\": {\"TARGET_DATA_RATE\": 1000,"
	              " \"TRUE_PROCESSING_RATE\": %s}}]}",
	              (long long)now, d, tpr);
	cJSON *out = plan_ok(text, NULL);
	free(d);
	free(text);
	return out;
}

static void test_delayed_scale_down_replay(void **state)
{
	(void)state;
	/* capacity 1595 at p 10.
	 * 0 min: TPR +Infinity: f = 0 -> 0.4, target 4; the first trigger; nothing happens */
	cJSON *out = down(0, "\"Infinity\"", NULL);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	assert_true(num(vertex(out, "src"), "targetParallelism") == 4);
	assert_true(num(vertex(out, "src"), "recommendedParallelism") == 10);
	cJSON *d = cJSON_DetachItemFromObject(out, "delayedScaleDown");
	cJSON_Delete(out);
	char *s = cJSON_PrintUnformatted(d);
	assert_string_equal(s, "{\"delayedVertices\":{\"src\":{\"firstTriggerTime\":0,\"recommendedParallelisms\":[{"
	                       "\"triggerTime\":0,\"parallelism\":4,\"outsideUtilizationBound\":true}]}}}");
	free(s);
	/* 30 min: TPR 2700: f = 0.591, ceil(5.91) = 6 replaces 4 (4 <= 6) */
	out = down(1800000, "2700", d);
	cJSON_Delete(d);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	assert_true(num(vertex(out, "src"), "targetParallelism") == 6);
	d = cJSON_DetachItemFromObject(out, "delayedScaleDown");
	cJSON_Delete(out);
	/* 60 min: TPR 3500: f = 0.456, ceil(4.56) = 5 joins behind 6; the hour since the first trigger has
	 * passed: the maximum of the last hour, 6, is applied (outside its bounds: 2700 > 2667) */
	out = down(3600000, "3500", d);
	cJSON_Delete(d);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	assert_true(num(vertex(out, "src"), "targetParallelism") == 5);
	assert_true(num(vertex(out, "src"), "recommendedParallelism") == 6);
	assert_true(num(vertex(out, "src"), "newParallelism") == 6);
	/* EXPECTED uses scale()'s result: 3500 / 10 * 5 = 1750 */
	assert_true(evaluated(out, "src", "EXPECTED_PROCESSING_RATE") == 1750);
	s = cJSON_PrintUnformatted(cJSON_GetObjectItem(out, "delayedScaleDown"));
	assert_string_equal(s, "{\"delayedVertices\":{}}"); /* cleared by the rescale */
	free(s);
	cJSON_Delete(out);
}

static void test_samples_input(void **state)
{
	(void)state;
	/* src 1000/s busy 0.2 (TPR 5000), win 1000/s, 1000/s per-second gauge, busy 0.95 (TPR 1052.632);
	 * src's target 1 (f 0.319 -> 0.4, ceil(0.8)) is delayed; win's 4 is inside its bounds */
	static const char text[] =
	    "{\"now\": 120000, \"config\": {\"job.autoscaler.metrics.window\": \"2 min\"},"
	    " \"vertices\": [{\"id\": \"src\", \"parallelism\": 2, \"maxParallelism\": 128},"
	    "  {\"id\": \"win\", \"parallelism\": 2, \"maxParallelism\": 128, \"inputs\": [{\"id\": \"src\", "
	    "\"shipStrategy\": \"hash\"}]}],"
	    " \"samples\": ["
	    "  {\"timestamp\": 0, \"vertices\": {\"src\": {\"NUM_RECORDS_IN\": 0, \"LOAD\": 0.2},"
	    "   \"win\": {\"NUM_RECORDS_IN\": 0, \"LOAD\": 0.95, \"NUM_RECORDS_IN_PER_SECOND\": 1000}}},"
	    "  {\"timestamp\": 120000, \"vertices\": {\"src\": {\"NUM_RECORDS_IN\": 120000, \"LOAD\": 0.2},"
	    "   \"win\": {\"NUM_RECORDS_IN\": 120000, \"LOAD\": 0.95, \"NUM_RECORDS_IN_PER_SECOND\": 1000}},"
	    "   \"global\": {\"HEAP_MAX_USAGE_RATIO\": 0.41}}]}";
	cJSON *out = plan_ok(text, NULL);
	assert_string_equal(str(out, "decision"), "all vertices within their utilization bounds");
	assert_true(evaluated(out, "src", "TRUE_PROCESSING_RATE") == 5000);
	assert_true(evaluated(out, "win", "TRUE_PROCESSING_RATE") == 1052.632);
	assert_true(evaluated(out, "src", "LAG") == 0); /* a source's absent LAG is 0, as collected */
	assert_true(num(vertex(out, "src"), "targetParallelism") == 1);
	assert_true(num(vertex(out, "win"), "recommendedParallelism") == 4);
	const cJSON *heap = cJSON_GetObjectItem(cJSON_GetObjectItem(out, "global"), "HEAP_MAX_USAGE_RATIO");
	assert_true(num(heap, "current") == 0.41 && num(heap, "average") == 0.41);
	cJSON_Delete(out);
}

static void test_history_input(void **state)
{
	(void)state;
	/* agg went 1 -> 2 expecting 800 -> 1600 and reached 820: ineffective (20 / 800 < 0.1) */
	static const char text[] =
	    "{\"now\": 100000, \"config\": {\"job.autoscaler.scaling.effectiveness.detection.enabled\": true},"
	    " \"vertices\": [{\"id\": \"agg\", \"parallelism\": 2, \"maxParallelism\": 128,"
	    "  \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 820},"
	    "  \"history\": [{\"timestamp\": 50000, \"currentParallelism\": 1, \"newParallelism\": 2,"
	    "   \"TRUE_PROCESSING_RATE\": 800, \"EXPECTED_PROCESSING_RATE\": 1600}]}]}";
	cJSON *out = plan_ok(text, NULL);
	assert_string_equal(str(out, "decision"), "no change");
	const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(out, "events"), 0);
	assert_string_equal(str(e, "reason"), "IneffectiveScaling");
	assert_string_equal(str(e, "message"), "Ineffective scaling detected for agg (expected increase: 800.0, actual "
	                                       "increase 20.0). Blocking of ineffective scaling decisions is enabled");
	cJSON_Delete(out);
	/* history older than history.max.age (1 d) is trimmed away: no detection */
	char *old = xasprintf("%.*s%lld%s", (int)(strstr(text, "100000") - text), text, 100000LL + 86400000LL * 2,
	                      strstr(text, "100000") + 6);
	out = plan_ok(old, NULL);
	assert_string_equal(str(out, "decision"), "scale");
	free(old);
	cJSON_Delete(out);
}

static void test_spec_and_config(void **state)
{
	(void)state;
	static const char yaml[] =
	    "apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: x\n"
	    "spec:\n  job:\n    jarURI: local:///j.jar\n  flinkConfiguration:\n"
	    "    job.autoscaler.utilization.target: \"0.5\"\n";
	struct spec s;
	struct diags d = {0};
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &s, &d), 0);
	/* target 0.5: capacity = jround(166.667 + 1000 / 0.5) = 2167; f = 2167 / 800 = 2.709 -> ceil 3, aligned
	 * to 4 partitions: 3 (4/3 = 1 < 4/3? no; 4 % 3 != 0), 4 -> 4 */
	char *v = xasprintf(EX1_VERTICES, "800");
	char *text = xasprintf("{\"now\": 0, %s}", v);
	cJSON *out = plan_ok(text, &s);
	assert_true(num(vertex(out, "src"), "newParallelism") == 4);
	cJSON_Delete(out);
	free(text);
	/* config overrides the spec: back to 0.7 -> 2 */
	text = xasprintf("{\"now\": 0, \"config\": {\"job.autoscaler.utilization.target\": \"0.7\"}, %s}", v);
	out = plan_ok(text, &s);
	assert_true(num(vertex(out, "src"), "newParallelism") == 2);
	cJSON_Delete(out);
	free(text);
	free(v);
	spec_free(&s);
	diags_free(&d);
}

struct bad_plan {
	const char *name, *input, *error;
};

#define V1 "{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8}"
static const struct bad_plan bad_plans[] = {
    {"not_json", "{\"now\": ", "(document): not valid JSON (at byte 7)"},
    {"not_object", "[]", "(document): must be a JSON object"},
    {"unknown_field", "{\"vertice\": [" V1 "]}", "vertice: unknown field (did you mean \"vertices\"?)"},
    {"no_vertices", "{\"now\": 1}", "vertices: must be a non-empty array of vertices (at most 10000)"},
    {"parallelism", "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 0, \"maxParallelism\": 8}]}",
     "vertices[0].parallelism: must be a positive integer (at most 32768)"},
    {"parallelism_type", "{\"vertices\": [{\"id\": \"a\", \"parallelism\": \"2\", \"maxParallelism\": 8}]}",
     "vertices[0].parallelism: must be a positive integer (at most 32768)"},
    {"max_parallelism", "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 9, \"maxParallelism\": 8}]}",
     "vertices[0].parallelism: must not exceed maxParallelism 8 (got 9)"},
    {"no_id", "{\"vertices\": [{\"parallelism\": 1, \"maxParallelism\": 8}]}",
     "vertices[0].id: must be a non-empty string (the job vertex id)"},
    {"duplicate", "{\"vertices\": [" V1 ", " V1 "]}", "vertices[1].id: duplicate vertex id \"a\""},
    {"vertex_field", "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"input\": []}]}",
     "vertices[0].input: unknown field (did you mean \"inputs\"?)"},
    {"input_id",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"inputs\": [{\"id\": "
     "\"b\", \"shipStrategy\": \"HASH\"}]}]}",
     "vertices[0].inputs[0].id: must name another vertex (no vertex \"b\")"},
    {"ship",
     "{\"vertices\": [" V1 ", {\"id\": \"b\", \"parallelism\": 1, \"maxParallelism\": 8, \"inputs\": [{\"id\": "
     "\"a\", \"shipStrategy\": \"HAHS\"}]}]}",
     "vertices[1].inputs[0].shipStrategy: must be one of HASH, REBALANCE, RESCALE, FORWARD, CUSTOM, BROADCAST, "
     "GLOBAL, SHUFFLE, UNKNOWN (got \"HAHS\")"},
    {"self_input",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"inputs\": [{\"id\": "
     "\"a\", \"shipStrategy\": \"HASH\"}]}]}",
     "vertices[0].inputs[0].id: a vertex cannot be its own input"},
    {"cycle",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"inputs\": [{\"id\": \"b\", "
     "\"shipStrategy\": \"HASH\"}]}, {\"id\": \"b\", \"parallelism\": 1, \"maxParallelism\": 8, \"inputs\": "
     "[{\"id\": \"a\", \"shipStrategy\": \"HASH\"}]}]}",
     "vertices: the inputs form a cycle"},
    {"metric",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"evaluated\": "
     "{\"TRUE_PROCESSING_RAT\": 1}}]}",
     "vertices[0].evaluated.TRUE_PROCESSING_RAT: unknown metric (did you mean \"TRUE_PROCESSING_RATE\"?)"},
    {"metric_value",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"evaluated\": "
     "{\"LOAD\": \"high\"}}]}",
     "vertices[0].evaluated.LOAD: must be a number, \"NaN\", \"Infinity\", null or {\"current\", \"average\"}"},
    {"evaluated_and_samples",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"evaluated\": {}}], \"samples\": "
     "[{\"timestamp\": 1}, {\"timestamp\": 2}]}",
     "vertices[0].evaluated: not allowed together with samples (the samples are evaluated)"},
    {"one_sample", "{\"vertices\": [" V1 "], \"samples\": [{\"timestamp\": 1}]}",
     "samples: at least 2 samples are needed to evaluate rates (got 1)"},
    {"sample_vertex",
     "{\"vertices\": [" V1 "], \"samples\": [{\"timestamp\": 1, \"vertices\": {\"z\": {}}}, "
     "{\"timestamp\": 2}]}",
     "samples[0].vertices.z: no such vertex in vertices"},
    {"sample_order", "{\"vertices\": [" V1 "], \"samples\": [{\"timestamp\": 2}, {\"timestamp\": 1}]}",
     "samples[1].timestamp: must be after the previous sample's (oldest first)"},
    {"sample_metric",
     "{\"vertices\": [" V1 "], \"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": "
     "{\"NUM_RECORDS\": 1}}}, {\"timestamp\": 2}]}",
     "samples[0].vertices.a.NUM_RECORDS: unknown metric (did you mean \"NUM_RECORDS_IN\"?)"},
    {"no_rate", "{\"vertices\": [" V1 "], \"samples\": [{\"timestamp\": 1}, {\"timestamp\": 2}]}",
     "samples: Cannot evaluate metrics without ingestion rate information (vertex a)"},
    {"history", "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"history\": {}}]}",
     "vertices[0].history: must be an array of scaling history entries, oldest first"},
    {"history_entry",
     "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8, \"history\": "
     "[{\"timestamp\": 1, \"currentParallelism\": 1}]}]}",
     "vertices[0].history[0].newParallelism: must be a positive integer"},
    {"delayed",
     "{\"vertices\": [" V1 "], \"delayedScaleDown\": {\"delayedVertices\": {\"a\": {\"firstTriggerTime\": "
     "1, \"recommendedParallelisms\": []}}}}",
     "delayedScaleDown.delayedVertices.a.recommendedParallelisms: must not be empty"},
    {"delayed_vertex",
     "{\"vertices\": [" V1 "], \"delayedScaleDown\": {\"delayedVertices\": {\"z\": "
     "{\"firstTriggerTime\": 1, \"recommendedParallelisms\": [{\"triggerTime\": 1, \"parallelism\": "
     "1, \"outsideUtilizationBound\": true}]}}}}",
     "delayedScaleDown.delayedVertices.z: no such vertex in vertices"},
    {"config", "{\"vertices\": [" V1 "], \"config\": {\"job.autoscaler.utilization.target\": 3}}",
     "config.job.autoscaler.utilization.target: must be a number between 0 and 1 (got \"3\")"},
    {"config_type", "{\"vertices\": [" V1 "], \"config\": []}",
     "config: must be an object of Flink option keys to values"},
    {"now", "{\"vertices\": [" V1 "], \"now\": -5}", "now: must be a timestamp in epoch milliseconds"},
    {"backlog", "{\"vertices\": [" V1 "], \"processingBacklog\": 1}", "processingBacklog: must be true or false"},
    {"global_metric", "{\"vertices\": [" V1 "], \"global\": {\"GC\": 1}}",
     "global.GC: unknown metric (expected GC_PRESSURE, HEAP_MAX_USAGE_RATIO, HEAP_MEMORY_USED, MANAGED_MEMORY_USED, "
     "METASPACE_MEMORY_USED, NUM_TASK_SLOTS_USED)"},
    {"task_manager", "{\"vertices\": [" V1 "], \"taskManager\": {\"memory\": \"lots\", \"slots\": 0}}",
     "taskManager.memory: must be a memory size such as 2g (got \"lots\")"},
};

static void test_bad_plan(void **state)
{
	const struct bad_plan *b = *state;
	struct strv errors = {0};
	char *out = NULL;
	assert_int_equal(autoscaler_plan(b->input, strlen(b->input), NULL, &out, &errors), -EINVAL);
	assert_null(out);
	bool found = false;
	for (size_t i = 0; i < errors.n; i++)
		found |= !strcmp(errors.v[i], b->error);
	if (!found) {
		for (size_t i = 0; i < errors.n; i++)
			print_error("  got: %s\n", errors.v[i]);
		fail_msg("expected the error: %s", b->error);
	}
	strv_free(&errors);
}

static void test_hostile_input(void **state)
{
	(void)state;
	/* deep nesting, huge numbers and binary junk never crash */
	struct strbuf b = {0};
	for (int i = 0; i < 5000; i++)
		strbuf_append(&b, "[");
	struct strv errors = {0};
	char *out = NULL;
	assert_int_equal(autoscaler_plan(b.buf, b.len, NULL, &out, &errors), -EINVAL);
	strbuf_free(&b);
	strv_free(&errors);
	static const char huge[] = "{\"now\": 1e308, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1e300, "
	                           "\"maxParallelism\": -1e300, \"evaluated\": {\"LOAD\": 1e309}}]}";
	assert_int_equal(autoscaler_plan(huge, strlen(huge), NULL, &out, &errors), -EINVAL);
	assert_true(errors.n >= 3);
	strv_free(&errors);
	static const char junk[] = "{\"vertices\": [\"\x01\xff\"]}";
	assert_int_equal(autoscaler_plan(junk, strlen(junk), NULL, &out, &errors), -EINVAL);
	strv_free(&errors);
}

int main(void)
{
	struct CMUnitTest tests[64];
	size_t n = 0;
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_evaluated_input);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_gates);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_thresholds_given);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_delayed_scale_down_replay);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_samples_input);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_history_input);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_spec_and_config);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_hostile_input);
	for (size_t i = 0; i < sizeof(bad_plans) / sizeof(bad_plans[0]); i++)
		tests[n++] = (struct CMUnitTest){bad_plans[i].name, test_bad_plan, NULL, NULL, (void *)&bad_plans[i]};
	return _cmocka_run_group_tests("autoscaler_plan", tests, n, NULL, NULL);
}

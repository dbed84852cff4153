/* test_autoscaler_hook: the scaling hook's proposal and answer (as_hook.c, issue 27) through the plan command's core
 * with an in-process runner standing in for the executable: what the hook is told (every vertex, its limit, which
 * are excluded, the metrics, why), every kind of answer (apply, veto, adjust, the same as proposed, to no change) and
 * every kind of unusable one, each named in the ScalingHookFailed message and vetoing the rescale, and the plan's
 * output following the verdict.
 *
 * The plan: src (1, 4 partitions, TPR 800 for a target rate 1000) -> HASH -> agg (1, TPR 1500) -> sink (excluded by
 * vertex.exclude.ids). Without a hook: src 1 -> 2 (outside its bounds), agg 1 -> 2 (moves with it); the hook may
 * give each at most 6 (vertex.max-parallelism). */
#include "unit.h"

#include <cjson/cJSON.h>

#include "as_internal.h"

static const char doc[] =
    "{\"now\": 1767225600000,"
    " \"config\": {\"job.autoscaler.vertex.max-parallelism\": \"6\", \"job.autoscaler.vertex.exclude.ids\": \"sink\"},"
    " \"vertices\": ["
    "  {\"id\": \"src\", \"parallelism\": 1, \"maxParallelism\": 128, \"numSourcePartitions\": 4,"
    "   \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 800, \"LAG\": 0}},"
    "  {\"id\": \"agg\", \"parallelism\": 1, \"maxParallelism\": 128, \"inputs\": [{\"id\": \"src\", \"shipStrategy\": "
    "\"HASH\"}],"
    "   \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 1500}},"
    "  {\"id\": \"sink\", \"parallelism\": 1, \"maxParallelism\": 4, \"inputs\": [{\"id\": \"agg\", \"shipStrategy\": "
    "\"FORWARD\"}],"
    "   \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 100}}]}";

struct fake {
	const char *failure, *answer, *errors;
	char *proposal; /* what it was given */
	int calls;
};

static void run(void *ud, const char *proposal, struct as_hook_result *ret)
{
	struct fake *f = ud;
	free(f->proposal);
	f->proposal = xstrdup(proposal);
	f->calls++;
	ret->failure = f->failure;
	ret->answer = f->answer;
	ret->answer_len = f->answer ? strlen(f->answer) : 0;
	ret->errors = f->errors;
}

static cJSON *plan(const char *input, struct fake *f)
{
	struct as_hook_runner hook = {"/hooks/h", 2500, run, f};
	struct strv errors = {0};
	char *out = NULL;
	assert_int_equal(autoscaler_plan_hooked(input, strlen(input), NULL, &hook, &out, &errors), 0);
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	free(out);
	strv_free(&errors);
	return j;
}

static int new_p(const cJSON *out, const char *id)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "vertices"), id), "newParallelism")
	    ->valueint;
}

static const char *str(const cJSON *o, const char *a, const char *b)
{
	const cJSON *j = cJSON_GetObjectItem(o, a);
	if (b)
		j = cJSON_GetObjectItem(j, b);
	assert_true(cJSON_IsString(j));
	return j->valuestring;
}

/* the reasons of the output's events, joined by ',' */
static char *reasons(const cJSON *out)
{
	struct strbuf b = {0};
	const cJSON *e;
	cJSON_ArrayForEach (e, cJSON_GetObjectItem(out, "events"))
		strbuf_appendf(&b, "%s%s", b.len ? "," : "", str(e, "reason", NULL));
	return b.len ? strbuf_steal(&b) : xstrdup("");
}

static void test_what_the_hook_is_told(void **state)
{
	(void)state;
	struct fake f = {NULL, "{\"decision\": \"apply\"}", NULL, NULL, 0};
	cJSON *out = plan(doc, &f);
	assert_int_equal(f.calls, 1);
	cJSON *p = cJSON_Parse(f.proposal);
	assert_non_null(p);
	assert_int_equal(cJSON_GetObjectItem(p, "version")->valueint, 1);
	assert_string_equal(str(p, "job", NULL), "plan");
	assert_double(cJSON_GetObjectItem(p, "time")->valuedouble, 1767225600000.0);
	assert_int_equal(cJSON_GetObjectItem(p, "timeoutMs")->valueint, 2500);
	assert_string_equal(
	    str(p, "reason", NULL),
	    "src 1 -> 2: true processing rate 800.00 is below the scale-up threshold 1000.00; agg 1 -> 2: "
	    "within its utilization bounds, moves with the vertices outside theirs");
	const cJSON *vs = cJSON_GetObjectItem(p, "vertices");
	assert_int_equal(cJSON_GetArraySize(vs), 3);
	const cJSON *src = cJSON_GetArrayItem(vs, 0), *agg = cJSON_GetArrayItem(vs, 1),
	            *sink = cJSON_GetArrayItem(vs, 2);
	assert_string_equal(str(src, "id", NULL), "src");
	assert_int_equal(cJSON_GetObjectItem(src, "currentParallelism")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(src, "proposedParallelism")->valueint, 2);
	assert_string_equal(str(src, "direction", NULL), "up");
	assert_int_equal(cJSON_GetObjectItem(src, "maxParallelism")->valueint, 128);
	assert_int_equal(cJSON_GetObjectItem(src, "parallelismLimit")->valueint, 6);
	assert_int_equal(cJSON_GetObjectItem(src, "numSourcePartitions")->valueint, 4);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(src, "outsideUtilizationBound")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(src, "excluded")));
	const cJSON *m = cJSON_GetObjectItem(src, "metrics");
	assert_int_equal(cJSON_GetArraySize(m), 8);
	assert_int_equal(cJSON_GetObjectItem(m, "TRUE_PROCESSING_RATE")->valueint, 800);
	assert_int_equal(cJSON_GetObjectItem(m, "SCALE_UP_RATE_THRESHOLD")->valueint, 1000);
	assert_int_equal(cJSON_GetObjectItem(m, "EXPECTED_PROCESSING_RATE")->valueint, 1600);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(agg, "outsideUtilizationBound")));
	assert_string_equal(str(sink, "id", NULL), "sink");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sink, "excluded")));
	assert_string_equal(str(sink, "direction", NULL), "none");
	assert_int_equal(cJSON_GetObjectItem(sink, "parallelismLimit")->valueint, 4); /* its key groups */
	assert_string_equal(str(cJSON_GetObjectItem(sink, "metrics"), "EXPECTED_PROCESSING_RATE", NULL), "NaN");
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "global"), "GC_PRESSURE"));
	/* the output says what the hook did, and what it was told */
	const cJSON *hook = cJSON_GetObjectItem(out, "hook");
	assert_string_equal(str(hook, "path", NULL), "/hooks/h");
	assert_string_equal(str(hook, "verdict", NULL), "applied");
	assert_string_equal(str(hook, "message", NULL),
	                    "The scaling hook /hooks/h approved the rescale (src 1 -> 2, agg 1 -> 2)");
	assert_true(cJSON_Compare(cJSON_GetObjectItem(hook, "proposal"), p, true));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(out, "scaling")));
	char *r = reasons(out);
	assert_string_equal(r, "ScalingHookApplied,ScalingReport");
	free(r);
	cJSON_Delete(p);
	cJSON_Delete(out);
	free(f.proposal);
}

static void test_adjustments(void **state)
{
	(void)state;
	static const struct {
		const char *answer, *verdict, *decision, *message;
		int src, agg;
	} cases[] = {
	    {"{\"decision\": \"adjust\", \"parallelism\": {\"src\": 5, \"agg\": 1}, \"reason\": \"only the source\"}",
	     "adjusted", "scale",
	     "The scaling hook /hooks/h adjusted the rescale (src 1 -> 2, agg 1 -> 2) to src 1 -> 5: only the source",
	     5, 1},
	    /* the same as proposed: approved */
	    {"{\"decision\": \"adjust\", \"parallelism\": {\"src\": 2}}", "applied", "scale",
	     "The scaling hook /hooks/h approved the rescale (src 1 -> 2, agg 1 -> 2)", 2, 2},
	    /* every vertex back where it is: no rescale */
	    {"{\"decision\": \"adjust\", \"parallelism\": {\"src\": 1, \"agg\": 1}}", "vetoed",
	     "vetoed by the scaling hook",
	     "The scaling hook /hooks/h adjusted the rescale (src 1 -> 2, agg 1 -> 2) to no change", 1, 1},
	    {" {\"decision\": \"veto\", \"reason\": \"freeze\\nuntil Monday\"}\n", "vetoed",
	     "vetoed by the scaling hook",
	     "The scaling hook /hooks/h vetoed the rescale (src 1 -> 2, agg 1 -> 2): freeze until Monday", 1, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f = {NULL, cases[i].answer, NULL, NULL, 0};
		cJSON *out = plan(doc, &f);
		const cJSON *hook = cJSON_GetObjectItem(out, "hook");
		assert_string_equal(str(hook, "verdict", NULL), cases[i].verdict);
		assert_string_equal(str(hook, "message", NULL), cases[i].message);
		assert_string_equal(str(out, "decision", NULL), cases[i].decision);
		assert_int_equal(new_p(out, "src"), cases[i].src);
		assert_int_equal(new_p(out, "agg"), cases[i].agg);
		assert_int_equal(new_p(out, "sink"), 1);
		cJSON_Delete(out);
		free(f.proposal);
	}
	/* the report of an adjusted rescale has the parallelism and the rate expected at it */
	struct fake f = {NULL, cases[0].answer, NULL, NULL, 0};
	cJSON *out = plan(doc, &f);
	const cJSON *events = cJSON_GetObjectItem(out, "events");
	assert_string_equal(str(cJSON_GetArrayItem(events, 1), "message", NULL),
	                    "Scaling execution enabled, begin scaling vertices:{ Vertex ID src | Parallelism 1 -> 5 | "
	                    "Processing capacity 800.00 -> 4000.00 | Target data rate 1000.00}");
	const cJSON *ev =
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "vertices"), "src"), "evaluated");
	assert_int_equal(cJSON_GetObjectItem(ev, "RECOMMENDED_PARALLELISM")->valueint, 5);
	cJSON_Delete(out);
	free(f.proposal);
}

/* Every unusable answer, and a hook that failed: the rescale is not executed, ScalingHookFailed says why. */
static void test_unusable_answers_veto(void **state)
{
	(void)state;
	static const struct {
		const char *failure, *answer, *errors, *why;
	} cases[] = {
	    {NULL, "", NULL, "answered what cannot be used: no answer on its standard output"},
	    {NULL, " \n\t", NULL, "answered what cannot be used: no answer on its standard output"},
	    {NULL, "yes", NULL, "answered what cannot be used: not JSON (at byte 0)"},
	    {NULL, "{\"decision\": \"apply\"} {}", NULL,
	     "answered what cannot be used: more than one JSON value (at byte 22)"},
	    {NULL, "[\"apply\"]", NULL,
	     "answered what cannot be used: must be a JSON object such as {\"decision\": \"apply\"}"},
	    {NULL, "{}", NULL,
	     "answered what cannot be used: decision: must be \"apply\", \"veto\" or \"adjust\" (got nothing)"},
	    {NULL, "{\"decision\": \"Apply\"}", NULL,
	     "answered what cannot be used: decision: must be \"apply\", \"veto\" or \"adjust\" (got \"Apply\")"},
	    {NULL, "{\"decision\": \"apply\", \"decison\": 1}", NULL,
	     "answered what cannot be used: decison: unknown field (did you mean \"decision\"?)"},
	    {NULL, "{\"decision\": \"apply\", \"parallelism\": {\"src\": 2}}", NULL,
	     "answered what cannot be used: parallelism: only with \"decision\": \"adjust\""},
	    {NULL, "{\"decision\": \"adjust\"}", NULL,
	     "answered what cannot be used: parallelism: required with \"decision\": \"adjust\""},
	    {NULL, "{\"decision\": \"adjust\", \"parallelism\": [2]}", NULL,
	     "answered what cannot be used: parallelism: must be an object of vertex ids to parallelisms"},
	    {NULL, "{\"decision\": \"adjust\", \"parallelism\": {\"sink\": 2}}", NULL,
	     "answered what cannot be used: parallelism.sink: the vertex is excluded from scaling"},
	    {NULL, "{\"decision\": \"adjust\", \"parallelism\": {\"nope\": 2, \"src\": 7, \"agg\": 0}}", NULL,
	     "answered what cannot be used: parallelism.nope: no such vertex in the job; parallelism.src: must be an "
	     "integer "
	     "from 1 to 6 (got 7); parallelism.agg: must be an integer from 1 to 6 (got 0)"},
	    {NULL, "{\"decision\": \"adjust\", \"parallelism\": {\"src\": 2.5}}", NULL,
	     "answered what cannot be used: parallelism.src: must be an integer from 1 to 6 (got 2.5)"},
	    {NULL, "{\"decision\": \"veto\", \"reason\": 5}", NULL,
	     "answered what cannot be used: reason: must be a string"},
	    {"did not answer within 2500 ms", "{\"decision\": \"apply\"}", NULL, "did not answer within 2500 ms"},
	    {"exited with code 3", "", "no cost data", "exited with code 3"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f = {cases[i].failure, cases[i].answer, cases[i].errors, NULL, 0};
		cJSON *out = plan(doc, &f);
		const cJSON *hook = cJSON_GetObjectItem(out, "hook");
		assert_string_equal(str(hook, "verdict", NULL), "failed");
		char *want = xasprintf(
		    "The scaling hook /hooks/h %s; the rescale (src 1 -> 2, agg 1 -> 2) is not executed%s%s%s",
		    cases[i].why, cases[i].errors ? " (its error output ends: " : "",
		    cases[i].errors ? cases[i].errors : "", cases[i].errors ? ")" : "");
		assert_string_equal(str(hook, "message", NULL), want);
		free(want);
		assert_true(cJSON_IsFalse(cJSON_GetObjectItem(out, "scaling")));
		assert_string_equal(str(out, "decision", NULL), "the scaling hook failed");
		assert_int_equal(new_p(out, "src"), 1);
		assert_int_equal(new_p(out, "agg"), 1);
		char *r = reasons(out);
		assert_string_equal(r, "ScalingHookFailed");
		free(r);
		const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(out, "events"), 0);
		assert_string_equal(str(e, "type", NULL), "Warning");
		cJSON_Delete(out);
		free(f.proposal);
	}
}

/* No rescale, nothing to ask; without a runner the plan is the plan without a hook, byte for byte. */
static void test_not_asked_without_a_rescale(void **state)
{
	(void)state;
	struct fake f = {NULL, "{\"decision\": \"veto\"}", NULL, NULL, 0};
	const char *within = "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"maxParallelism\": 128,"
	                     " \"evaluated\": {\"TARGET_DATA_RATE\": 1000, \"TRUE_PROCESSING_RATE\": 2000}}]}";
	cJSON *out = plan(within, &f);
	assert_int_equal(f.calls, 0);
	assert_string_equal(str(out, "hook", "verdict"), "not run");
	assert_string_equal(str(out, "decision", NULL), "no change");
	cJSON_Delete(out);
	struct strv errors = {0};
	char *plain = NULL, *hookless = NULL;
	assert_int_equal(autoscaler_plan(doc, strlen(doc), NULL, &plain, &errors), 0);
	assert_int_equal(autoscaler_plan_hooked(doc, strlen(doc), NULL, NULL, &hookless, &errors), 0);
	assert_string_equal(plain, hookless);
	assert_not_contains(plain, "\"hook\"");
	free(plain);
	free(hookless);
	strv_free(&errors);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_what_the_hook_is_told),
	    cmocka_unit_test(test_adjustments),
	    cmocka_unit_test(test_unusable_answers_veto),
	    cmocka_unit_test(test_not_asked_without_a_rescale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

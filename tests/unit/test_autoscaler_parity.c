/* test_autoscaler_parity: the three defects the differential test against the operator's Java autoscaler
 * found (issue 19), each as the plan case that showed it:
 *   1. which spelling of scale-down.interval counts when several are given (Flink's order: the key, the
 *      kubernetes.operator. fallbacks in their declared order, then the deprecated key);
 *   2. the same for utilization.target against its deprecated target.utilization;
 *   3. the data rate into a vertex with two inputs when that vertex has fewer than two NUM_RECORDS_IN
 *      samples: the operator takes the edge rate as NaN (ratio 0), not the input's records-out rate.
 * tests/parity/ compares thousands of generated cases with the Java classes; these pin the three. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

static cJSON *plan_ok(const char *text)
{
	struct strv errors = {0};
	char *out = NULL;
	if (autoscaler_plan(text, strlen(text), NULL, &out, &errors) < 0) {
		for (size_t i = 0; i < errors.n; i++)
			print_error("%s\n", errors.v[i]);
		fail();
	}
	cJSON *j = cJSON_Parse(out);
	assert_non_null(j);
	free(out);
	strv_free(&errors);
	return j;
}

static int new_parallelism(const cJSON *out, const char *id)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(out, "vertices"), id);
	assert_non_null(v);
	const cJSON *p = cJSON_GetObjectItem(v, "newParallelism");
	assert_true(cJSON_IsNumber(p));
	return p->valueint;
}

static double evaluated(const cJSON *out, const char *id, const char *metric)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(out, "vertices"), id);
	double x;
	assert_int_equal(as_json_double(cJSON_GetObjectItem(cJSON_GetObjectItem(v, "evaluated"), metric), &x), 0);
	return x;
}

static const char *decision(const cJSON *out)
{
	const cJSON *d = cJSON_GetObjectItem(out, "decision");
	assert_true(cJSON_IsString(d));
	return d->valuestring;
}

/* One source at parallelism 4 that needs 2: capacity round(100 * 300 / 1800 + 100 / 0.7) = 160,
 * f = 160 / 320 = 0.5, ceil(0.5 * 4) = 2; its TPR 320 is above the scale-down threshold 267. */
static cJSON *four_to_two(const char *config)
{
	char *text = xasprintf(
	    "{\"now\": 1767225600000, \"config\": {%s}, \"vertices\": [{\"id\": \"src\", \"parallelism\": 4, "
	    "\"maxParallelism\": 128, \"evaluated\": {\"TARGET_DATA_RATE\": 100, \"TRUE_PROCESSING_RATE\": 320, "
	    "\"CATCH_UP_DATA_RATE\": 0}}]}",
	    config);
	cJSON *out = plan_ok(text);
	free(text);
	return out;
}

#define K "kubernetes.operator.job.autoscaler."
#define J "job.autoscaler."

static void test_scale_down_interval_spellings(void **state)
{
	(void)state;
	static const struct {
		const char *config;
		int expected; /* 2: at once (interval 0 read), 4: delayed (1 h read) */
	} cases[] = {
	    /* the case: both old-prefix spellings; the grace period is the first fallback key */
	    {"\"" K "scale-up.grace-period\": \"0\", \"" K "scale-down.interval\": \"1 h\"", 2},
	    /* an old-prefix spelling before the deprecated key */
	    {"\"" K "scale-up.grace-period\": \"0\", \"" J "scale-up.grace-period\": \"1 h\"", 2},
	    {"\"" K "scale-down.interval\": \"0\", \"" J "scale-up.grace-period\": \"1 h\"", 2},
	    /* the deprecated key alone counts */
	    {"\"" J "scale-up.grace-period\": \"0\"", 2},
	    /* the key itself before everything */
	    {"\"" J "scale-down.interval\": \"1 h\", \"" K "scale-up.grace-period\": \"0\", \"" J
	     "scale-up.grace-period\": \"0\"",
	     4},
	    {"\"" J "scale-down.interval\": \"0\", \"" K "scale-down.interval\": \"1 h\"", 2},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *out = four_to_two(cases[i].config);
		if (new_parallelism(out, "src") != cases[i].expected)
			fail_msg("case %zu (%s): new parallelism %d, expected %d", i, cases[i].config,
			         new_parallelism(out, "src"), cases[i].expected);
		cJSON_Delete(out);
	}
}

/* A source at parallelism 1 with TPR 180 and 900 records/s to handle: at utilization 0.9 the capacity
 * is round(150 + 1000) = 1150 (f = 6.39, parallelism 7); at 0.5 it is round(150 + 1800) = 1950 (11). */
static int utilization_case(const char *config)
{
	char *text = xasprintf(
	    "{\"now\": 1767225600000, \"config\": {%s}, \"vertices\": [{\"id\": \"src\", \"parallelism\": 1, "
	    "\"maxParallelism\": 128, \"evaluated\": {\"TARGET_DATA_RATE\": 900, \"TRUE_PROCESSING_RATE\": 180, "
	    "\"CATCH_UP_DATA_RATE\": 0}}]}",
	    config);
	cJSON *out = plan_ok(text);
	free(text);
	int p = new_parallelism(out, "src");
	cJSON_Delete(out);
	return p;
}

static void test_utilization_target_spellings(void **state)
{
	(void)state;
	/* the case: the old-prefix fallback wins over the deprecated key */
	assert_int_equal(utilization_case("\"" J "target.utilization\": 0.5, \"" K "target.utilization\": 0.9"), 7);
	/* fallbacks in their declared order: utilization.target, then target.utilization */
	assert_int_equal(utilization_case("\"" K "target.utilization\": 0.5, \"" K "utilization.target\": 0.9"), 7);
	/* the key wins over every other spelling */
	assert_int_equal(utilization_case("\"" J "utilization.target\": 0.5, \"" K "utilization.target\": 0.9, \"" K
	                                  "target.utilization\": 0.9, \"" J "target.utilization\": 0.9"),
	                 11);
	/* the deprecated key alone */
	assert_int_equal(utilization_case("\"" J "target.utilization\": 0.5"), 11);
}

/* Two sources (100 records/s each) into j at parallelism 2, which has a NUM_RECORDS_IN value in the last
 * sample only: its records-in rate is NaN, so each edge rate is NaN and each ratio 0 (the operator's
 * ScalingMetricEvaluator), j's target rate 0 and its capacity 0; f is clamped to 0.4 and j goes 2 -> 1
 * (TPR 160 / 0.5 = 320 is above the scale-down threshold 0). Taking the sources' records-out rate instead
 * gives a target of 200 and keeps j at 2. */
static void test_multi_input_without_input_rate(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"now\": 1767225720000, \"config\": {\"job.autoscaler.metrics.window\": \"2 min\", "
	    "\"job.autoscaler.scale-down.interval\": \"0\"},"
	    " \"vertices\": [{\"id\": \"s1\", \"parallelism\": 1, \"maxParallelism\": 128},"
	    "  {\"id\": \"s2\", \"parallelism\": 1, \"maxParallelism\": 128},"
	    "  {\"id\": \"j\", \"parallelism\": 2, \"maxParallelism\": 128, \"inputs\": [{\"id\": \"s1\", "
	    "\"shipStrategy\": \"REBALANCE\"}, {\"id\": \"s2\", \"shipStrategy\": \"REBALANCE\"}]}],"
	    " \"samples\": ["
	    "  {\"timestamp\": 1767225600000, \"vertices\": {"
	    "    \"s1\": {\"NUM_RECORDS_IN\": 0, \"NUM_RECORDS_OUT\": 0, \"LOAD\": 0.1, \"LAG\": 0},"
	    "    \"s2\": {\"NUM_RECORDS_IN\": 0, \"NUM_RECORDS_OUT\": 0, \"LOAD\": 0.1, \"LAG\": 0},"
	    "    \"j\": {\"LOAD\": 0.5, \"NUM_RECORDS_IN_PER_SECOND\": 160}}},"
	    "  {\"timestamp\": 1767225660000, \"vertices\": {"
	    "    \"s1\": {\"NUM_RECORDS_IN\": 6000, \"NUM_RECORDS_OUT\": 6000, \"LOAD\": 0.1, \"LAG\": 0},"
	    "    \"s2\": {\"NUM_RECORDS_IN\": 6000, \"NUM_RECORDS_OUT\": 6000, \"LOAD\": 0.1, \"LAG\": 0},"
	    "    \"j\": {\"LOAD\": 0.5, \"NUM_RECORDS_IN_PER_SECOND\": 160}}},"
	    "  {\"timestamp\": 1767225720000, \"vertices\": {"
	    "    \"s1\": {\"NUM_RECORDS_IN\": 12000, \"NUM_RECORDS_OUT\": 12000, \"LOAD\": 0.1, \"LAG\": 0},"
	    "    \"s2\": {\"NUM_RECORDS_IN\": 12000, \"NUM_RECORDS_OUT\": 12000, \"LOAD\": 0.1, \"LAG\": 0},"
	    "    \"j\": {\"NUM_RECORDS_IN\": 24000, \"LOAD\": 0.5, \"NUM_RECORDS_IN_PER_SECOND\": 160}}}]}";
	cJSON *out = plan_ok(text);
	assert_true(evaluated(out, "j", "TARGET_DATA_RATE") == 0);
	assert_true(evaluated(out, "j", "TRUE_PROCESSING_RATE") == 320);
	assert_string_equal(decision(out), "scale");
	assert_int_equal(new_parallelism(out, "j"), 1);
	assert_int_equal(new_parallelism(out, "s1"), 1);
	cJSON_Delete(out);
}

/* Three inputs into j, every input with a single output: the edge rate from a is j's records-in rate
 * minus the sum of b's and c's records-out rates (600 - (100 + 200) = 300 per second, ratio 3 on a's
 * 100 in), so j's target is 100 * 3 + 100 * 1 + 100 * 2 = 600. */
static void test_multi_input_subtracts_the_others(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"now\": 1767225660000, \"config\": {\"job.autoscaler.metrics.window\": \"1 min\"},"
	    " \"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 128},"
	    "  {\"id\": \"b\", \"parallelism\": 1, \"maxParallelism\": 128},"
	    "  {\"id\": \"c\", \"parallelism\": 1, \"maxParallelism\": 128},"
	    "  {\"id\": \"j\", \"parallelism\": 1, \"maxParallelism\": 128, \"inputs\": [{\"id\": \"a\", "
	    "\"shipStrategy\": \"REBALANCE\"}, {\"id\": \"b\", \"shipStrategy\": \"REBALANCE\"}, {\"id\": \"c\", "
	    "\"shipStrategy\": \"REBALANCE\"}]}],"
	    " \"samples\": ["
	    "  {\"timestamp\": 1767225600000, \"vertices\": {"
	    "    \"a\": {\"NUM_RECORDS_IN\": 0, \"NUM_RECORDS_OUT\": 0, \"LOAD\": 0.1},"
	    "    \"b\": {\"NUM_RECORDS_IN\": 0, \"NUM_RECORDS_OUT\": 0, \"LOAD\": 0.1},"
	    "    \"c\": {\"NUM_RECORDS_IN\": 0, \"NUM_RECORDS_OUT\": 0, \"LOAD\": 0.1},"
	    "    \"j\": {\"NUM_RECORDS_IN\": 0, \"LOAD\": 0.5}}},"
	    "  {\"timestamp\": 1767225660000, \"vertices\": {"
	    "    \"a\": {\"NUM_RECORDS_IN\": 6000, \"NUM_RECORDS_OUT\": 18000, \"LOAD\": 0.1},"
	    "    \"b\": {\"NUM_RECORDS_IN\": 6000, \"NUM_RECORDS_OUT\": 6000, \"LOAD\": 0.1},"
	    "    \"c\": {\"NUM_RECORDS_IN\": 6000, \"NUM_RECORDS_OUT\": 12000, \"LOAD\": 0.1},"
	    "    \"j\": {\"NUM_RECORDS_IN\": 36000, \"LOAD\": 0.5}}}]}";
	cJSON *out = plan_ok(text);
	assert_true(evaluated(out, "j", "TARGET_DATA_RATE") == 600);
	cJSON_Delete(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scale_down_interval_spellings),
	    cmocka_unit_test(test_utilization_target_spellings),
	    cmocka_unit_test(test_multi_input_without_input_rate),
	    cmocka_unit_test(test_multi_input_subtracts_the_others),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

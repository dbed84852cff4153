/* test_jobfailure: what GET /jobs/:id/exceptions says the job failed of (src/flink/jobfailure.c), in the shapes
 * Flink 1.20 and 2.x answer: the newest history entry's root cause (the deepest "Caused by:" of its stack trace,
 * else its first line), 1.20's deprecated root-exception when the history is empty, nothing when no failure is
 * named, and a bounded cause whatever the trace. tests/e2e/test_job_failure.py checks the real answers. */
#include "unit.h"

#include <cjson/cJSON.h>

#include "jobfailure.h"

#define BOOM_TRACE                                                                                                     \
	"java.lang.RuntimeException: boom\n"                                                                           \
	"\tat dev.flinklet.jobs.StatefulCounter$Count.processElement(StatefulCounter.java:199)\n"                      \
	"\tat org.apache.flink.streaming.runtime.tasks.StreamTask.invoke(StreamTask.java:770)\n"

static int parse(const char *json, size_t max, struct job_failure *f)
{
	cJSON *body = cJSON_Parse(json);
	assert_non_null(body);
	int r = job_failure_parse(body, max, f);
	cJSON_Delete(body);
	return r;
}

static char *entry(const char *trace, long long ts)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "exceptionName", "java.lang.RuntimeException");
	cJSON_AddStringToObject(e, "stacktrace", trace);
	cJSON_AddNumberToObject(e, "timestamp", (double)ts);
	cJSON_AddStringToObject(e, "taskName", "Count (1/2)#0");
	cJSON_AddItemToObject(e, "failureLabels", cJSON_CreateObject());
	cJSON_AddItemToObject(e, "concurrentExceptions", cJSON_CreateArray());
	char *text = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	return text;
}

static void test_flink_2x_history(void **state)
{
	(void)state;
	/* newest first, as Flink lists it; the second is older */
	char *a = entry(BOOM_TRACE, 1750000005000),
	     *b = entry("java.io.IOException: older\n\tat x.y(z)\n", 1750000000000);
	char *json = xasprintf("{\"exceptionHistory\": {\"entries\": [%s, %s], \"truncated\": false}}", a, b);
	struct job_failure f;
	assert_int_equal(parse(json, 400, &f), 0);
	assert_string_equal(f.cause, "java.lang.RuntimeException: boom");
	assert_true(f.timestamp == 1750000005000);
	job_failure_free(&f);
	free(json);
	/* listed the other way round: the greatest timestamp still wins */
	json = xasprintf("{\"exceptionHistory\": {\"entries\": [%s, %s], \"truncated\": true}}", b, a);
	assert_int_equal(parse(json, 400, &f), 0);
	assert_string_equal(f.cause, "java.lang.RuntimeException: boom");
	job_failure_free(&f);
	free(json);
	free(a);
	free(b);
}

/* A failure Flink wraps (a terminal failure: "Recovery is suppressed", the job's code beneath): the deepest cause */
static void test_deepest_cause(void **state)
{
	(void)state;
	char *e =
	    entry("org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy\n"
	          "\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handle(E.java:1)\n"
	          "Caused by: java.lang.IllegalStateException: outer\n"
	          "\tat a.b(C.java:2)\n"
	          "Caused by: java.lang.RuntimeException: boom\r\n"
	          "\tat dev.flinklet.jobs.StatefulCounter$Count.processElement(StatefulCounter.java:199)\n"
	          "\t... 12 more\n",
	          1);
	char *json = xasprintf("{\"exceptionHistory\": {\"entries\": [%s]}}", e);
	struct job_failure f;
	assert_int_equal(parse(json, 400, &f), 0);
	assert_string_equal(f.cause, "java.lang.RuntimeException: boom");
	job_failure_free(&f);
	free(json);
	free(e);
}

/* Flink 1.20: the deprecated top-level fields beside the history; with an empty history, root-exception */
static void test_flink_120_root_exception(void **state)
{
	(void)state;
	struct job_failure f;
	char *json = xasprintf("{\"root-exception\": \"%s\", \"timestamp\": 1750000009000, \"all-exceptions\": [], "
	                       "\"truncated\": false, \"exceptionHistory\": {\"entries\": [], \"truncated\": false}}",
	                       "java.lang.RuntimeException: boom\\n\\tat a.b(C.java:1)\\n");
	assert_int_equal(parse(json, 400, &f), 0);
	assert_string_equal(f.cause, "java.lang.RuntimeException: boom");
	assert_true(f.timestamp == 1750000009000);
	job_failure_free(&f);
	free(json);
	/* both: the history's entry (the newest failure, not the job's first cause) */
	char *e = entry("java.lang.IllegalStateException: newer\n\tat a.b(C.java:1)\n", 1750000010000);
	json = xasprintf("{\"root-exception\": \"java.lang.RuntimeException: boom\", \"timestamp\": 1, "
	                 "\"exceptionHistory\": {\"entries\": [%s]}}",
	                 e);
	assert_int_equal(parse(json, 400, &f), 0);
	assert_string_equal(f.cause, "java.lang.IllegalStateException: newer");
	job_failure_free(&f);
	free(json);
	free(e);
}

static void test_no_failure(void **state)
{
	(void)state;
	struct job_failure f;
	static const char *const none[] = {
	    "{\"exceptionHistory\": {\"entries\": [], \"truncated\": false}}",
	    "{\"root-exception\": null, \"timestamp\": null, \"all-exceptions\": [], \"truncated\": false, "
	    "\"exceptionHistory\": {\"entries\": [], \"truncated\": false}}",
	    "{}",
	    "[]",
	    "{\"exceptionHistory\": {\"entries\": [{\"timestamp\": 5}, 7, \"x\"]}}",
	    "{\"exceptionHistory\": {\"entries\": [{\"stacktrace\": \"\", \"exceptionName\": \"\"}]}}",
	    "{\"exceptionHistory\": \"nope\", \"root-exception\": 42}",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		if (parse(none[i], 400, &f) != -ENOENT)
			fail_msg("a failure read from %s", none[i]);
		assert_null(f.cause);
	}
	assert_int_equal(job_failure_parse(NULL, 400, &f), -ENOENT);
}

/* An entry whose trace names no *Exception or *Error: its first line, else the exception's name */
static void test_odd_traces(void **state)
{
	(void)state;
	struct job_failure f;
	assert_int_equal(parse("{\"exceptionHistory\": {\"entries\": [{\"exceptionName\": \"com.acme.Boom\", "
	                       "\"stacktrace\": \"com.acme.Boom: kaputt\\n\\tat a.b(C.java:1)\", \"timestamp\": 3}]}}",
	                       400, &f),
	                 0);
	assert_string_equal(f.cause, "com.acme.Boom: kaputt");
	job_failure_free(&f);
	assert_int_equal(parse("{\"exceptionHistory\": {\"entries\": [{\"exceptionName\": "
	                       "\"com.acme.Boom\", \"timestamp\": 3}]}}",
	                       400, &f),
	                 0);
	assert_string_equal(f.cause, "com.acme.Boom");
	job_failure_free(&f);
	/* a message over several lines: its first line */
	char *e = entry("java.lang.RuntimeException: line one\nline two\n\tat a.b(C.java:1)\n", 4);
	char *json = xasprintf("{\"exceptionHistory\": {\"entries\": [%s]}}", e);
	assert_int_equal(parse(json, 400, &f), 0);
	assert_string_equal(f.cause, "java.lang.RuntimeException: line one");
	job_failure_free(&f);
	free(json);
	free(e);
}

/* However long the message or the trace, the cause is bounded */
static void test_bounded(void **state)
{
	(void)state;
	struct strbuf b = {0};
	strbuf_append(&b, "java.lang.RuntimeException: ");
	for (int i = 0; i < 5000; i++)
		strbuf_append(&b, "xyz ");
	strbuf_append(&b, "\n");
	for (int i = 0; i < 20000; i++)
		strbuf_append(&b, "\tat a.b(C.java:1)\n");
	char *e = entry(b.buf, 9);
	char *json = xasprintf("{\"exceptionHistory\": {\"entries\": [%s]}}", e);
	struct job_failure f;
	assert_int_equal(parse(json, 400, &f), 0);
	assert_true(strlen(f.cause) <= 400);
	assert_true(str_has_prefix(f.cause, "java.lang.RuntimeException: xyz"));
	assert_true(str_has_suffix(f.cause, "..."));
	job_failure_free(&f);
	free(json);
	free(e);
	strbuf_free(&b);
	/* the trace alone, as the supervisor reads it */
	char *c = job_failure_cause_of_trace("java.lang.Error: x", 400);
	assert_string_equal(c, "java.lang.Error: x");
	free(c);
	assert_null(job_failure_cause_of_trace("", 400));
	assert_null(job_failure_cause_of_trace(NULL, 400));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flink_2x_history),
	    cmocka_unit_test(test_deepest_cause),
	    cmocka_unit_test(test_flink_120_root_exception),
	    cmocka_unit_test(test_no_failure),
	    cmocka_unit_test(test_odd_traces),
	    cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_promtext: Prometheus text as Flink's reporter writes it is read sample by sample with its labels, and text
 * that would make flinklet's /metrics invalid as a whole (a malformed line, a family declared twice or split in two,
 * a name of flinklet's own, a cut-off last line) is refused with the line it is on, also among 10,000 families. */
#include "unit.h"

#include "promtext.h"

/* A piece of a real scrape of Flink 2.2.1's reporter (flinklet's loopback one), labels with their trailing comma. */
static const char FLINK[] =
    "# HELP flink_jobmanager_job_lastCheckpointDuration lastCheckpointDuration (scope: jobmanager_job)\n"
    "# TYPE flink_jobmanager_job_lastCheckpointDuration gauge\n"
    "flink_jobmanager_job_lastCheckpointDuration{job_id=\"99\",host=\"\",job_name=\"StatefulCounter\",} 33.0\n"
    "# HELP flink_taskmanager_job_task_numRecordsInPerSecond numRecordsInPerSecond (scope: taskmanager_job_task)\n"
    "# TYPE flink_taskmanager_job_task_numRecordsInPerSecond gauge\n"
    "flink_taskmanager_job_task_numRecordsInPerSecond{task_name=\"Count____Output:_Writer\",subtask_index=\"0\",} "
    "11.5\n"
    "flink_taskmanager_job_task_numRecordsInPerSecond{task_name=\"Count____Output:_Writer\",subtask_index=\"1\",} "
    "NaN\n"
    "\n"
    "# a comment\n"
    "# HELP rpc_latency with \\\\ and \\n escaped\n"
    "# TYPE rpc_latency summary\n"
    "rpc_latency{quantile=\"0.5\"} 1.5e-3 1700000000000\n"
    "rpc_latency_sum 12\n"
    "rpc_latency_count 8\n"
    "untyped_one{a=\"q\\\"uo\\\\te\\n\"} +Inf\n";

struct seen {
	int n;
	double in_sum;
	char quoted[64];
};

static void take(void *userdata, const struct promtext_sample *sm)
{
	struct seen *s = userdata;
	s->n++;
	char buf[64];
	if (promtext_is(sm, "flink_taskmanager_job_task_numRecordsInPerSecond")) {
		assert_true(promtext_label(sm, "task_name", buf, sizeof(buf)));
		assert_string_equal(buf, "Count____Output:_Writer");
		if (!isnan(sm->value))
			s->in_sum += sm->value;
	}
	if (promtext_is(sm, "untyped_one")) {
		assert_true(promtext_label(sm, "a", s->quoted, sizeof(s->quoted)));
		assert_true(isinf(sm->value));
	}
	assert_false(promtext_label(sm, "no_such_label", buf, sizeof(buf)));
}

static void test_flinks_text_is_read(void **state)
{
	(void)state;
	struct seen s = {0};
	char *why = NULL;
	assert_int_equal(promtext_parse(FLINK, strlen(FLINK), "flinklet_", take, &s, &why), 7);
	assert_null(why);
	assert_int_equal(s.n, 7);
	assert_double(s.in_sum, 11.5);
	assert_string_equal(s.quoted, "q\"uo\\te\n");
	assert_int_equal(promtext_parse("", 0, NULL, NULL, NULL, NULL), 0);
}

static void refused(const char *text, const char *expect)
{
	char *why = NULL;
	assert_int_equal(promtext_parse(text, strlen(text), "flinklet_", NULL, NULL, &why), -EBADMSG);
	assert_non_null(why);
	assert_contains(why, expect);
	free(why);
}

static void test_what_would_break_the_scrape_is_refused(void **state)
{
	(void)state;
	refused("a 1\nb 2", "line 2: the last line has no end");
	refused("# HELP a x \\q\n", "line 1: the HELP text of a has an escape other than");
	refused("# HELP a x \\\n", "line 1: the HELP text of a has an escape other than");
	refused("a 1\n# TYPE a gauge\n", "line 2: the TYPE line of a comes after its samples");
	refused("# TYPE a gauge\n# TYPE a gauge\n", "line 2: a second TYPE line for a");
	refused("# HELP a x\n# HELP a y\n", "line 2: a second HELP line for a");
	refused("a 1\nb 1\na 2\n", "line 3: the lines of a are not together");
	refused("# TYPE a gauge\nflinklet_jvm_up 1\n", "line 2: flinklet_jvm_up is in flinklet's own namespace");
	refused("# TYPE flinklet_x gauge\n", "flinklet's own namespace");
	refused("# TYPE a gaugez\n", "line 1: the TYPE of a is not one of");
	refused("a{b=\"1\" 2\n", "line 1: labels not separated");
	refused("a{b=\"1} 2\n", "line 1: a label value without its closing quote");
	refused("a{b=1} 2\n", "line 1: a label that is not name=\"value\"");
	refused("a{b=\"\\x\"} 2\n", "line 1: a label value with an escape other than");
	refused("a 1x\n", "line 1: the value of a is not a number");
	refused("a\n", "line 1: no value after a");
	refused("a 1 12z\n", "line 1: the timestamp of a is not an integer");
	refused("<html>\n", "line 1: neither a comment nor a sample");
	char *why = NULL;
	assert_int_equal(promtext_parse("a 1\n\0b 2\n", 9, NULL, NULL, NULL, &why), -EBADMSG);
	assert_string_equal(why, "line 2: a NUL byte");
	free(why);
	refused("# TYPE s summary\ns_sum 1\nother 1\ns_count 2\n", "line 4: the lines of s are not together");
}

/* n gauge families of Flink's shape, each with its HELP, TYPE and a sample; then the line late (NULL: none). */
static char *many_families(int n, const char *late, size_t *len)
{
	struct strbuf b = {0};
	for (int i = 0; i < n; i++)
		strbuf_appendf(
		    &b,
		    "# HELP flink_taskmanager_job_task_operator_m%d m%d (scope: taskmanager_job_task_operator)\n"
		    "# TYPE flink_taskmanager_job_task_operator_m%d gauge\n"
		    "flink_taskmanager_job_task_operator_m%d{task_name=\"Map\",subtask_index=\"0\",} %d\n",
		    i, i, i, i, i);
	if (late)
		strbuf_append(&b, late);
	*len = b.len;
	return strbuf_steal(&b);
}

static void test_a_split_family_is_refused_among_ten_thousand(void **state)
{
	(void)state;
	size_t len;
	char *text = many_families(10000, NULL, &len);
	char *why = NULL;
	assert_int_equal(promtext_parse(text, len, "flinklet_", NULL, NULL, &why), 10000);
	assert_null(why);
	free(text);
	/* a sample of a family met long before (line 30001 comes after 30000 lines of 10000 families) */
	text = many_families(10000, "flink_taskmanager_job_task_operator_m4321{subtask_index=\"1\",} 1\n", &len);
	assert_int_equal(promtext_parse(text, len, "flinklet_", NULL, NULL, &why), -EBADMSG);
	assert_string_equal(why, "line 30001: the lines of flink_taskmanager_job_task_operator_m4321 are not together "
	                         "(the family is split in two)");
	free(why);
	free(text);
	/* a second TYPE (of the last family) or HELP of one of them, and a _sum far from its TYPE'd family */
	text = many_families(10000, "# TYPE flink_taskmanager_job_task_operator_m9999 counter\n", &len);
	assert_int_equal(promtext_parse(text, len, NULL, NULL, NULL, &why), -EBADMSG);
	assert_string_equal(why, "line 30001: a second TYPE line for flink_taskmanager_job_task_operator_m9999");
	free(why);
	free(text);
	text = many_families(10000, "# HELP flink_taskmanager_job_task_operator_m17 again\n", &len);
	assert_int_equal(promtext_parse(text, len, NULL, NULL, NULL, &why), -EBADMSG);
	assert_contains(why, "line 30001: the lines of flink_taskmanager_job_task_operator_m17 are not together");
	free(why);
	free(text);
	text = many_families(10000, "flink_taskmanager_job_task_operator_m5000_sum 1\n", &len);
	assert_int_equal(promtext_parse(text, len, NULL, NULL, NULL, &why), -EBADMSG);
	assert_contains(why, "line 30001: the lines of flink_taskmanager_job_task_operator_m5000 are not together");
	free(why);
	free(text);
	refused("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nx 1\nh_count 1\n",
	        "line 4: the lines of h are not together");
	refused("# TYPE h histogram\n# HELP h x\nh_sum 1\n# HELP h y\n", "line 4: a second HELP line for h");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flinks_text_is_read),
	    cmocka_unit_test(test_what_would_break_the_scrape_is_refused),
	    cmocka_unit_test(test_a_split_family_is_refused_among_ten_thousand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

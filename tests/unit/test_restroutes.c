/* test_restroutes: which of Flink's REST routes a client without flinklet's token may GET through /flink/
 * (src/flink/restroutes.c): what the web UI shows of the job is open, the routes that act on a GET (yarn-cancel,
 * yarn-stop) and those that show the JVM's options, environment, configuration or logs are not, and no encoding,
 * extra slash, dot segment, version prefix or case reaches them as an open route. Whether the table is Flink's
 * whole list is tests/restroutes' question (the real jars). */
#include "unit.h"

#include "restroutes.h"

#define JOB "/jobs/0123456789abcdef0123456789abcdef"
#define VTX "/vertices/cbc357ccb763df2852fee8c4fc7d55f2"

static void assert_open(const char *path)
{
	const char *why = "unset";
	enum restroutes_access a = restroutes_get_access(path, &why);
	if (a != RESTROUTES_OPEN)
		fail_msg("%s: needs the token (%s), expected open", path, why);
	assert_null(why);
}

static void assert_token(const char *path)
{
	const char *why = NULL;
	if (restroutes_get_access(path, &why) != RESTROUTES_TOKEN)
		fail_msg("%s: open, expected the token", path);
	assert_non_null(why);
}

static void test_what_the_ui_shows_is_open(void **state)
{
	(void)state;
	const char *open[] = {
	    "/",
	    "/index.html",
	    "/main.6cd446413e0aff84.js",
	    "/styles.25112ea718f4efbe.css",
	    "/assets/images/flink-logo.png",
	    "/assets/favicon/browserconfig.xml",
	    "/config",
	    "/overview",
	    "/jobs/overview",
	    "/jobs/overview/",
	    "/v1/jobs/overview",
	    JOB,
	    JOB "/plan",
	    JOB "/checkpoints",
	    JOB "/checkpoints/config",
	    JOB "/checkpoints/details/12",
	    JOB "/exceptions?maxExceptions=10",
	    JOB "/metrics?get=numRestarts,uptime",
	    JOB VTX "/metrics?get=0.numRecordsIn",
	    JOB VTX "/subtasks/0/attempts/1/accumulators",
	    JOB VTX "/backpressure",
	    JOB VTX "/watermarks",
	    JOB "/rescales/history",
	    "/taskmanagers",
	    "/taskmanagers/5a1f-4c2e/metrics",
	    "/jobmanager/metrics?get=Status.JVM.CPU.Load",
	};
	for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++)
		assert_open(open[i]);
}

static void test_acting_and_secret_routes_need_the_token(void **state)
{
	(void)state;
	const char *token[] = {
	    JOB "/yarn-cancel",
	    JOB "/yarn-stop",
	    "/jars/x.jar/plan",
	    JOB VTX "/flamegraph?type=FULL",
	    "/jobmanager/environment",
	    "/jobmanager/config",
	    "/jobmanager/log",
	    "/jobmanager/stdout",
	    "/jobmanager/logs",
	    "/jobmanager/logs/jobmanager.log",
	    "/jobmanager/thread-dump",
	    "/jobmanager/profiler",
	    JOB "/config",
	    JOB "/jobmanager/config",
	    JOB "/jobmanager/environment",
	    "/taskmanagers/5a1f/log",
	    "/taskmanagers/5a1f/stdout",
	    "/taskmanagers/5a1f/thread-dump",
	    "/taskmanagers/5a1f/profiler/x.html",
	    /* a file name the UI's files also have: still the route's */
	    "/taskmanagers/5a1f/logs/main.js",
	    "/jobmanager/logs/x.txt",
	    /* not a route known to only read */
	    "/nothing",
	    "/jobs/overview/more",
	    "/jars/x.jar",
	};
	for (size_t i = 0; i < sizeof(token) / sizeof(token[0]); i++)
		assert_token(token[i]);
}

static void test_no_spelling_reaches_an_acting_route(void **state)
{
	(void)state;
	const char *token[] = {
	    /* what Flink's router reads as yarn-cancel */
	    "/v1/jobs/0123/yarn-cancel",
	    "/v9/jobs/0123/yarn-cancel",
	    "//jobs/0123/yarn-cancel",
	    "///jobs/0123/yarn-cancel//",
	    "/jobs/0123/yarn-cancel/",
	    "/jobs/0123/yarn-cancel?",
	    "/jobs/0123/yarn-cancel?mode=cancel",
	    "/jobs//yarn-cancel",
	    /* decoded twice by Flink; dot segments removed by libcurl */
	    "/jobs/0123/%79arn-cancel",
	    "/jobs/0123/%2579arn-cancel",
	    "/jobs/0123%2Fyarn-cancel",
	    "/jobs/0123/yarn-cancel%3F.js",
	    "/jobs/0123/x/../yarn-cancel",
	    "/jobs/0123/./yarn-cancel",
	    "/jobs/overview/../0123/yarn-cancel",
	    "/..",
	    "/.",
	    "/jobs/0123\\yarn-cancel",
	    "/jobs/0123/yarn-cancel;.js",
	    "/index.html;x",
	    /* Flink's routes are case-sensitive: another case is no route it has, and none known to read */
	    "/JOBS/0123/YARN-CANCEL",
	    "/Jobs/overview",
	    /* a UI file's name in the job id's place */
	    "/jobs/a.js/yarn-cancel",
	    "/jobmanager/environment/",
	    "/v1/jobmanager/environment",
	    "//jobmanager/environment",
	    /* more segments than any route */
	    "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s.js",
	};
	for (size_t i = 0; i < sizeof(token) / sizeof(token[0]); i++)
		assert_token(token[i]);
	/* why is optional */
	assert_int_equal(restroutes_get_access(JOB "/yarn-cancel", NULL), RESTROUTES_TOKEN);
	const char *why = NULL;
	restroutes_get_access(JOB "/yarn-cancel", &why);
	assert_string_equal(why, "cancels the job");
}

static void test_the_table(void **state)
{
	(void)state;
	size_t n;
	const struct restroute *t = restroutes_table(&n);
	assert_true(n > 60);
	size_t opens = 0;
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(t[i].method, "GET");
		assert_true(t[i].path[0] == '/');
		/* a reason for each route that needs the token, none for an open one */
		assert_true((t[i].access == RESTROUTES_TOKEN) == (t[i].why != NULL));
		opens += t[i].access == RESTROUTES_OPEN;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t[i].path, t[j].path))
				fail_msg("%s listed twice", t[i].path);
	}
	assert_true(opens > 30 && opens < n);
	/* versions: the rescale history's routes from 2.3 on */
	const struct restroute *history = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].path, "/jobs/:jobid/rescales/history"))
			history = &t[i];
	assert_non_null(history);
	assert_false(restroutes_in_version(history, "1.20.5"));
	assert_false(restroutes_in_version(history, "2.2.1"));
	assert_true(restroutes_in_version(history, "2.3.0"));
	assert_true(restroutes_in_version(history, "3.0.0"));
	assert_true(restroutes_in_version(&t[0], "1.20.5"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_what_the_ui_shows_is_open),
	    cmocka_unit_test(test_acting_and_secret_routes_need_the_token),
	    cmocka_unit_test(test_no_spelling_reaches_an_acting_route),
	    cmocka_unit_test(test_the_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

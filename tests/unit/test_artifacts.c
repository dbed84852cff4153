/* test_artifacts: where the job's jar comes from (src/flink/artifacts.c) under flinklet.artifacts.allowed-schemes
 * (issue 27): the protocols a download and its redirects may use follow the list (https alone by default; http only
 * when listed, for an http jar, an https jar's redirects and an S3 endpoint), schemes match in any case, the list
 * takes ',' or ';', and a scheme not listed is refused with the option named and the URI redacted. */
#include "unit.h"

#include "artifacts.h"

/* Plans the jar of a document with jarURI and the given flinkConfiguration lines (may be ""); returns 0 or the
 * planner's error (in *err). The document must load when the planner is to be asked. */
static int plan(const char *jar, const char *conf, struct artifact *a, char **err)
{
	char *yaml =
	    xasprintf("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: j\n"
	              "spec:\n  flinkConfiguration:\n    flinklet.state.dir: /tmp/j\n%s  job:\n    jarURI: %s\n",
	              conf, jar);
	struct spec s;
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", yaml, &s, &rc);
	free(yaml);
	if (rc != 0) {
		*err = diags;
		return rc;
	}
	free(diags);
	*err = NULL;
	int r = artifact_plan(&s, "/tmp/j", a, err);
	spec_free(&s);
	return r;
}

static void assert_protocols(const char *jar, const char *conf, const char *want)
{
	struct artifact a;
	char *err = NULL;
	if (plan(jar, conf, &a, &err) != 0)
		print_error("%s: %s\n", jar, err ? err : "?");
	assert_null(err);
	assert_true(a.remote);
	assert_string_equal(a.protocols, want);
	artifact_free(&a);
}

static void test_protocols_follow_the_list(void **state)
{
	(void)state;
	assert_protocols("https://example.com/j.jar", "", "https");
	assert_protocols("HTTPS://example.com/j.jar", "", "https");
	assert_protocols("https://example.com/j.jar", "    flinklet.artifacts.allowed-schemes: https\n", "https");
	/* http listed: an https jar may be redirected to http, an http jar to https when both are listed */
	assert_protocols("https://example.com/j.jar", "    flinklet.artifacts.allowed-schemes: \"https, Http\"\n",
	                 "https,http");
	assert_protocols("http://example.com/j.jar", "    flinklet.artifacts.allowed-schemes: http;https\n",
	                 "https,http");
	assert_protocols("http://example.com/j.jar", "    flinklet.artifacts.allowed-schemes: http\n", "http");
	/* s3 is signed requests over https; over http only with http listed and an http endpoint */
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	assert_protocols("s3://b/j.jar", "    flinklet.artifacts.allowed-schemes: s3\n", "https");
	assert_protocols("s3://b/j.jar",
	                 "    flinklet.artifacts.allowed-schemes: s3,http\n"
	                 "    flinklet.artifacts.s3.endpoint: http://minio:9000\n",
	                 "https,http");
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
}

static void test_local_jars_need_no_entry(void **state)
{
	(void)state;
	struct artifact a;
	char *err = NULL;
	assert_int_equal(plan("local:///opt/j.jar", "    flinklet.artifacts.allowed-schemes: s3\n", &a, &err), 0);
	assert_false(a.remote);
	assert_string_equal(a.local_path, "/opt/j.jar");
	artifact_free(&a);
	assert_int_equal(plan("file:///opt/j.jar", "    flinklet.artifacts.allowed-schemes: \"\"\n", &a, &err), 0);
	assert_false(a.remote);
	artifact_free(&a);
}

static void test_the_list(void **state)
{
	(void)state;
	assert_true(artifact_scheme_listed("https,s3", "s3"));
	assert_true(artifact_scheme_listed(" HTTPS ; s3 ", "https"));
	assert_false(artifact_scheme_listed("https,s3", "http"));
	assert_false(artifact_scheme_listed("httpss", "https"));
	assert_false(artifact_scheme_listed("", "https"));
	assert_null(artifact_schemes_unknown("https, S3;http"));
	char *bad = artifact_schemes_unknown("https,,hdfs");
	assert_string_equal(bad, "hdfs");
	free(bad);
	assert_string_equal(artifact_remote_scheme("Http://x/j.jar"), "http");
	assert_null(artifact_remote_scheme("ftp://x/j.jar"));
	assert_null(artifact_remote_scheme("httpx://x/j.jar"));
}

/* The planner itself refuses what the configuration check would (a spec changed under a running supervisor goes
 * through both), naming the option and hiding the credentials. */
static void test_a_scheme_not_listed_is_refused_by_the_planner(void **state)
{
	(void)state;
	struct spec s;
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml",
	                                 "apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n"
	                                 "  name: j\nspec:\n  job:\n    jarURI: https://u:pw@example.com/j.jar\n",
	                                 &s, &rc);
	assert_int_equal(rc, 0);
	free(diags);
	spec_set(&s, "flinklet.artifacts.allowed-schemes", "s3", ORIGIN_FILE, NULL);
	struct artifact a;
	char *err = NULL;
	assert_int_equal(artifact_plan(&s, "/tmp/j", &a, &err), -EINVAL);
	assert_contains(err, "the scheme https of \"https://***@example.com/j.jar\" is not in "
	                     "flinklet.artifacts.allowed-schemes (\"s3\")");
	assert_not_contains(err, "pw");
	free(err);
	spec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_protocols_follow_the_list),
	    cmocka_unit_test(test_local_jars_need_no_entry),
	    cmocka_unit_test(test_the_list),
	    cmocka_unit_test(test_a_scheme_not_listed_is_refused_by_the_planner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

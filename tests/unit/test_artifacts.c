/* test_artifacts: where the job's jar comes from (src/flink/artifacts.c) under flinklet.artifacts.allowed-schemes
 * (issue 27): the protocols a download and its redirects may use follow the list (https alone by default; http only
 * when listed, for an http jar, an https jar's redirects and an S3 endpoint), schemes match in any case, the list
 * takes ',' or ';', and a scheme not listed is refused with the option named and the URI redacted. */
#include "unit.h"

#include "artifacts.h"
#include "store.h"

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

/* Plans the jar and the SQL script of a document with the given job fields and flinkConfiguration lines (the
 * artifacts borrow from the spec s: the caller frees it after them). */
static void plan_both(const char *job, const char *conf, struct spec *s, struct artifact *jar, struct artifact *sql)
{
	char *yaml = xasprintf("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: j\n"
	                       "spec:\n  flinkConfiguration:\n    flinklet.state.dir: /tmp/j\n%s  job:\n%s",
	                       conf, job);
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", yaml, s, &rc);
	if (rc != 0)
		print_error("%s\n", diags);
	assert_int_equal(rc, 0);
	free(diags);
	free(yaml);
	char *err = NULL;
	assert_int_equal(artifact_plan(s, "/tmp/j", jar, &err), 0);
	assert_int_equal(artifact_plan_sql(s, "/tmp/j", sql, &err), 0);
	assert_null(err);
}

static void free_both(struct spec *s, struct artifact *jar, struct artifact *sql)
{
	artifact_free(jar);
	artifact_free(sql);
	spec_free(s);
}

/* A remote spec.job.sqlScript (issue 37) is planned as a jar is: the same schemes and protocols, its own place in the
 * cache (by the URI's hash, or by flinklet.job.sql-script.sha256, which a download must match), beside a remote jar of
 * the same job; a local or inline script is not downloaded. */
static void test_a_remote_script_is_a_second_artifact(void **state)
{
	(void)state;
	struct artifact jar, sql;
	struct spec s;
	const char *uri = "https://example.com/jobs/job.sql";
	plan_both("    jarURI: https://example.com/jobs/kafka.jar\n    sqlScript: https://example.com/jobs/job.sql\n",
	          "", &s, &jar, &sql);
	assert_true(jar.remote && sql.remote);
	assert_int_equal(sql.kind, ARTIFACT_SQL);
	assert_string_equal(sql.field, "spec.job.sqlScript");
	assert_string_equal(sql.uri, uri);
	assert_string_equal(sql.url, uri);
	assert_string_equal(sql.protocols, "https");
	assert_null(sql.sha256);
	char h[65];
	sha256_hex(uri, strlen(uri), h);
	char *want = xasprintf("/tmp/j/artifacts/uri-%s.sql", h);
	assert_string_equal(sql.local_path, want);
	free(want);
	assert_string_not_equal(jar.local_path, sql.local_path);
	assert_true(str_has_suffix(jar.local_path, ".jar"));
	free_both(&s, &jar, &sql);
	/* its own checksum, not the jar's */
	const char *sum = "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
	char *conf =
	    xasprintf("    flinklet.job.sql-script.sha256: %s\n    flinklet.artifacts.allowed-schemes: http\n", sum);
	plan_both("    sqlScript: http://example.com/job.sql\n", conf, &s, &jar, &sql);
	free(conf);
	assert_false(jar.remote); /* the runner's jar in Flink's lib/ */
	assert_true(sql.remote);
	assert_string_equal(sql.protocols, "http");
	assert_string_equal(sql.sha256, sum);
	assert_string_equal(sql.local_path,
	                    "/tmp/j/artifacts/abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.sql");
	free_both(&s, &jar, &sql);
	/* local and inline scripts are where they are */
	char *dir = make_tempdir();
	char *local = write_text(dir, "job.sql", "INSERT INTO b SELECT 1;\n");
	char *job = xasprintf("    sqlScript: local://%s\n", local);
	plan_both(job, "", &s, &jar, &sql);
	assert_false(sql.remote);
	assert_string_equal(sql.local_path, local);
	free_both(&s, &jar, &sql);
	free(job);
	free(local);
	remove_tree(dir);
	plan_both("    sql: INSERT INTO b SELECT 1\n", "", &s, &jar, &sql);
	assert_false(sql.remote);
	assert_null(sql.local_path);
	free_both(&s, &jar, &sql);
}

/* The planner refuses a script's scheme not listed as it does a jar's, naming the script's field. */
static void test_a_script_scheme_not_listed_is_refused_by_the_planner(void **state)
{
	(void)state;
	struct spec s;
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml",
	                                 "apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n"
	                                 "  name: j\nspec:\n  job:\n    sqlScript: https://u:pw@example.com/j.sql\n",
	                                 &s, &rc);
	assert_int_equal(rc, 0);
	free(diags);
	spec_set(&s, "flinklet.artifacts.allowed-schemes", "s3", ORIGIN_FILE, NULL);
	struct artifact a;
	char *err = NULL;
	assert_int_equal(artifact_plan_sql(&s, "/tmp/j", &a, &err), -EINVAL);
	assert_string_equal(err,
	                    "spec.job.sqlScript: the scheme https of \"https://***@example.com/j.sql\" is not in "
	                    "flinklet.artifacts.allowed-schemes (\"s3\"); list it there to download scripts over it");
	free(err);
	artifact_free(&a);
	spec_free(&s);
}

/* An unfinished download of either kind is swept from the cache at the next start; a finished one stays. */
static void test_parts_of_both_kinds_are_swept(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *cache = path_join(dir, "artifacts");
	assert_int_equal(mkdir_p(cache), 0);
	const char *names[] = {"uri-1.jar.part.7.1.1", "uri-2.sql.part.7.1.2", "uri-2.sql", "uri-1.jar"};
	for (size_t i = 0; i < 4; i++)
		free(write_text(cache, names[i], "x"));
	assert_int_equal(artifact_clean_parts(dir), 2);
	char *kept = path_join(cache, "uri-2.sql");
	assert_int_equal(access(kept, F_OK), 0);
	free(kept);
	kept = path_join(cache, "uri-2.sql.part.7.1.2");
	assert_int_equal(access(kept, F_OK), -1);
	free(kept);
	remove_tree(dir);
	free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_protocols_follow_the_list),
	    cmocka_unit_test(test_local_jars_need_no_entry),
	    cmocka_unit_test(test_the_list),
	    cmocka_unit_test(test_a_scheme_not_listed_is_refused_by_the_planner),
	    cmocka_unit_test(test_a_remote_script_is_a_second_artifact),
	    cmocka_unit_test(test_a_script_scheme_not_listed_is_refused_by_the_planner),
	    cmocka_unit_test(test_parts_of_both_kinds_are_swept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

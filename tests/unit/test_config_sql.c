/* test_config_sql: a SQL script as the job, as check-config and run load it: a script's problems at the script file's
 * line and column (an inline literal block's at the configuration file's, where the user's editor shows them), the
 * fields that do not go with a script refused, the runner's jar and class filled in, and the runner's arguments. */
#include "unit.h"

#include "config.h"
#include "config_sql.h"
#include "digest.h"

#define DOC                                                                                                            \
	"apiVersion: flink.apache.org/v1beta1\n" /* 1 */                                                               \
	"kind: FlinkMiniCluster\n"               /* 2 */                                                               \
	"metadata:\n"                            /* 3 */                                                               \
	"  name: sql-job\n"                      /* 4 */                                                               \
	"spec:\n"                                /* 5 */                                                               \
	"  flinkConfiguration:\n"                /* 6 */                                                               \
	"    flinklet.flink.home: /opt/flink\n"  /* 7 */                                                               \
	"  job:\n"                               /* 8; job fields from line 9 */

/* Loads a document; returns its diagnostics joined by newlines (malloc'd; "" when valid). */
static char *load(const char *text, struct spec *s)
{
	struct diags d = {0};
	int r = config_parse("t.yaml", text, strlen(text), s, &d);
	if (r == 0)
		r = config_finalize(s, &d);
	struct strbuf b = {0};
	for (size_t i = 0; i < d.msgs.n; i++)
		strbuf_appendf(&b, "%s%s", i ? "\n" : "", d.msgs.v[i]);
	diags_free(&d);
	assert_int_equal(r == 0, b.len == 0);
	return strbuf_steal(&b);
}

static void expect(const char *text, const char *want)
{
	struct spec s;
	char *got = load(text, &s);
	if (strcmp(got, want))
		fail_msg("got\n    %s\nwant\n    %s", got, want);
	free(got);
	spec_free(&s);
}

static void test_inline_literal_positions_are_the_files(void **state)
{
	(void)state;
	expect(DOC "    sql: |\n"                                                   /* 9 */
	           "      CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n" /* 10 */
	           "\n"                                                             /* 11 */
	           "      INSERT INTO b SELECT 'x FROM a;\n",                       /* 12 */
	       "t.yaml:12:28: spec.job.sql: unterminated string: ' without its closing '");
	expect(
	    DOC "    sql: |-\n"
	        "        INSERT INTO b SELECT 1;\n" /* 10 */
	        "        INSERT INTO c SELECT 1;\n",
	    "t.yaml:11:9: spec.job.sql: INSERT: a second job in the script (the first is the INSERT at line 10): one "
	    "INSERT, one EXECUTE STATEMENT SET BEGIN ... END; or one CREATE TABLE ... AS SELECT per script (put the "
	    "INSERTs in one statement set)");
	/* a quoted one: the value's position, and the script's own line and column in the message */
	expect(
	    DOC "    sql: \"SHOW TABLES; INSERT INTO b SELECT 1\"\n",
	    "t.yaml:9:10: spec.job.sql: line 1, column 1 of the script: unknown statement kind \"SHOW\": a job script "
	    "has SET, RESET, CREATE, DROP, ALTER, USE, LOAD/UNLOAD MODULE, and one INSERT or EXECUTE STATEMENT SET");
}

static void test_script_file_positions_and_reading(void **state)
{
	(void)state;
	char dir[] = "/tmp/flinklet-sqltest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/job.sql", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("-- no job\nCREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n  SELECT * FROM a;\n", f);
	fclose(f);
	char *doc = xasprintf(DOC "    sqlScript: local://%s\n", path);
	char *want = xasprintf("%s:3:3: spec.job.sqlScript: a query alone (SELECT) is not a job: its rows go nowhere; "
	                       "INSERT INTO a sink table",
	                       path);
	expect(doc, want);
	free(doc);
	free(want);
	doc = xasprintf(DOC "    sqlScript: %s/missing.sql\n", dir);
	want =
	    xasprintf("t.yaml:9:16: spec.job.sqlScript: unable to read %s/missing.sql: No such file or directory", dir);
	expect(doc, want);
	free(doc);
	free(want);
	unlink(path);
	rmdir(dir);
	free(path);
}

static void test_fields_that_do_not_go_with_a_script(void **state)
{
	(void)state;
	expect(DOC "    sqlScript: /x.sql\n"
	           "    sql: INSERT INTO b SELECT 1\n",
	       "t.yaml:10:10: spec.job.sql: not with spec.job.sqlScript (line 9): the job is one script, in a file or "
	       "inline");
	expect(
	    DOC "    entryClass: com.example.Runner\n"
	        "    args: [--x]\n"
	        "    sql: INSERT INTO b SELECT 1\n",
	    "t.yaml:9:17: spec.job.entryClass: not with spec.job.sql: flinklet's SQL runner "
	    "(dev.flinklet.launcher.SqlScriptRunner) runs the script; a runner of your own takes the script in "
	    "spec.job.args instead\n"
	    "t.yaml:11:10: spec.job.args: not with spec.job.sql: the script is the job's program and has no arguments");
}

static void test_runner_defaults_and_arguments(void **state)
{
	(void)state;
	struct spec s;
	char *got = load(DOC "    sql: |\n"
	                     "      INSERT INTO b SELECT 1;\n",
	                 &s);
	assert_string_equal(got, "");
	free(got);
	assert_string_equal(s.job.jar_uri, "local:///opt/flink/lib/flinklet-launcher.jar");
	assert_string_equal(s.job.entry_class, SQL_RUNNER_CLASS);
	struct strv argv = {0};
	config_sql_runner_args(&s, "/state/conf", NULL, NULL, &argv);
	assert_int_equal(argv.n, 5);
	assert_string_equal(argv.v[0], "--origin=t.yaml:10:7");
	assert_string_equal(argv.v[1], "--field=spec.job.sql");
	assert_int_equal(strncmp(argv.v[2], "--sha256=", 9), 0);
	assert_int_equal(strlen(argv.v[2]), 9 + 64);
	assert_string_equal(argv.v[3], "--plan-dir=/var/lib/flinklet/" SQL_PLAN_DIR);
	assert_string_equal(argv.v[4], "/state/conf/" SQL_INLINE_FILE);
	strv_free(&argv);
	spec_free(&s);
	/* a jar of the user's (UDFs, connectors) stays the job's jar; the runner is still the class */
	got = load(DOC "    jarURI: local:///opt/flink/usrlib/udfs.jar\n"
	               "    sql: INSERT INTO b SELECT 1\n",
	           &s);
	assert_string_equal(got, "");
	free(got);
	assert_string_equal(s.job.jar_uri, "local:///opt/flink/usrlib/udfs.jar");
	assert_string_equal(s.job.entry_class, SQL_RUNNER_CLASS);
	spec_free(&s);
}

/* A remote sqlScript (issue 37): the URI is checked as a jarURI is, nothing is read when the configuration is loaded
 * (there is no network in check-config), a scheme flinklet does not download or one not allowed is refused at the
 * value's line and column, with the URI's credentials hidden. */
static void test_a_remote_script_is_checked_as_a_jar_uri_and_not_read(void **state)
{
	(void)state;
	struct spec s;
	char *got = load(DOC "    sqlScript: https://scripts.example.com:8443/jobs/job.sql\n", &s);
	assert_string_equal(got, "");
	free(got);
	assert_true(config_sql_job(&s) && config_sql_remote(&s));
	assert_string_equal(s.job.sql_sha256, ""); /* not read */
	assert_string_equal(s.job.entry_class, SQL_RUNNER_CLASS);
	assert_string_equal(s.job.jar_uri, "local:///opt/flink/lib/flinklet-launcher.jar");
	spec_free(&s);
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	got = load(DOC "    sqlScript: s3://bucket/jobs/job.sql\n", &s);
	assert_string_equal(got, "");
	free(got);
	spec_free(&s);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	/* http only when listed */
	expect(DOC "    sqlScript: http://u:hunter2@scripts.example.com/job.sql?token=t0k\n",
	       "t.yaml:9:16: spec.job.sqlScript: the scheme http is not in flinklet.artifacts.allowed-schemes "
	       "(\"https,s3\"): list it there to download scripts over it (got \"http://***@scripts.example.com/"
	       "job.sql?***\")");
	got = load("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: sql-job\nspec:\n"
	           "  flinkConfiguration:\n    flinklet.flink.home: /opt/flink\n"
	           "    flinklet.artifacts.allowed-schemes: https,http\n"
	           "  job:\n    sqlScript: http://scripts.example.com/job.sql\n",
	           &s);
	assert_string_equal(got, "");
	free(got);
	spec_free(&s);
	expect(DOC "    sqlScript: ftp://scripts.example.com/job.sql\n",
	       "t.yaml:9:16: spec.job.sqlScript: must be a local path, local:///path, file:///path (the script in the "
	       "image or a mounted ConfigMap), https://..., s3://bucket/key or http://... (got "
	       "\"ftp://scripts.example.com/job.sql\")");
	expect(DOC "    sqlScript: job.sql\n",
	       "t.yaml:9:16: spec.job.sqlScript: must be a local path, local:///path, file:///path (the script in the "
	       "image or a mounted ConfigMap), https://..., s3://bucket/key or http://... (got \"job.sql\")");
	/* its checksum option is held to a sha256 as the jar's */
	expect("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: sql-job\nspec:\n"
	       "  flinkConfiguration:\n    flinklet.flink.home: /opt/flink\n"
	       "    flinklet.job.sql-script.sha256: abc\n"
	       "  job:\n    sqlScript: https://scripts.example.com/job.sql\n",
	       "t.yaml:8:37: spec.flinkConfiguration.flinklet.job.sql-script.sha256: must be a sha256 of 64 hex digits "
	       "(got \"abc\")");
}

/* The downloaded script, split and checked before the launch: its problems at the URI's line and column (as the
 * configuration check says a local script's at its file's), its sha256 for the runner when it is fine. */
static void test_a_downloaded_script_is_checked_at_its_uri(void **state)
{
	(void)state;
	char dir[] = "/tmp/flinklet-sqltest-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/uri-x.sql", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n\n  INSERT INTO b SELECT 'x FROM a;\n", f);
	fclose(f);
	char sha[65] = "", *err = NULL;
	assert_int_equal(config_sql_check_file(path, "https://h/job.sql", sha, &err), -EINVAL);
	assert_string_equal(err, "https://h/job.sql:3:24: spec.job.sqlScript: unterminated string: ' without its "
	                         "closing '");
	free(err);
	err = NULL;
	f = fopen(path, "w");
	fputs("INSERT INTO b SELECT 1;\n", f);
	fclose(f);
	assert_int_equal(config_sql_check_file(path, "https://h/job.sql", sha, &err), 0);
	assert_null(err);
	char want[65];
	sha256_hex("INSERT INTO b SELECT 1;\n", strlen("INSERT INTO b SELECT 1;\n"), want);
	assert_string_equal(sha, want);
	unlink(path);
	assert_int_equal(config_sql_check_file(path, "https://h/job.sql", sha, &err), -ENOENT);
	assert_contains(err, "https://h/job.sql: spec.job.sqlScript: unable to read");
	free(err);
	rmdir(dir);
	free(path);
}

/* The runner of a remote script gets its downloaded copy and that copy's sha256, its positions named by the URI
 * (without its credentials); before the download (a fingerprint of the launch) the URI stands for the path, so that
 * another URI is another launch. */
static void test_the_runner_of_a_remote_script(void **state)
{
	(void)state;
	struct spec s;
	char *got = load(DOC "    sqlScript: https://u:pw@scripts.example.com/job.sql\n", &s);
	assert_string_equal(got, "");
	free(got);
	struct strv argv = {0};
	config_sql_runner_args(&s, "/state/conf", "/state/artifacts/uri-1.sql", "ab12", &argv);
	assert_int_equal(argv.n, 5);
	assert_string_equal(argv.v[0], "--origin=https://***@scripts.example.com/job.sql:1:1");
	assert_string_equal(argv.v[1], "--field=spec.job.sqlScript");
	assert_string_equal(argv.v[2], "--sha256=ab12");
	assert_string_equal(argv.v[3], "--plan-dir=/var/lib/flinklet/" SQL_PLAN_DIR);
	assert_string_equal(argv.v[4], "/state/artifacts/uri-1.sql");
	strv_free(&argv);
	config_sql_runner_args(&s, "/state/conf", NULL, NULL, &argv);
	assert_int_equal(argv.n, 4);
	assert_string_equal(argv.v[2], "--plan-dir=/var/lib/flinklet/" SQL_PLAN_DIR);
	assert_contains(argv.v[3], "https://***@scripts.example.com/job.sql#uri-");
	assert_not_contains(argv.v[3], "pw");
	char *first = xstrdup(argv.v[3]);
	strv_free(&argv);
	spec_free(&s);
	got = load(DOC "    sqlScript: https://u:pw@scripts.example.com/job.sql?v=2\n", &s);
	free(got);
	config_sql_runner_args(&s, "/state/conf", NULL, NULL, &argv);
	assert_string_not_equal(argv.v[3], first);
	strv_free(&argv);
	spec_free(&s);
	free(first);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_inline_literal_positions_are_the_files),
	    cmocka_unit_test(test_script_file_positions_and_reading),
	    cmocka_unit_test(test_fields_that_do_not_go_with_a_script),
	    cmocka_unit_test(test_runner_defaults_and_arguments),
	    cmocka_unit_test(test_a_remote_script_is_checked_as_a_jar_uri_and_not_read),
	    cmocka_unit_test(test_a_downloaded_script_is_checked_at_its_uri),
	    cmocka_unit_test(test_the_runner_of_a_remote_script),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_restorelog: what the JVM's output says about the restore point (src/restorelog.c), and the cause of a
 * failed start taken from it (jvmout_cause_of, src/jvmout.c). The lines are Flink's own, as printed by the
 * real MiniCluster (CliFrontend, CheckpointCoordinator, the JobMaster's failures); the recorded outputs in
 * tests/unit/fixtures/jvm-output/ are replayed whole, each with the verdict its README.md gives. A restore
 * point is given up only on evidence, so most of these tests are about lines that must NOT be evidence: the
 * command line and configuration echo (which name the restore path), a test directory whose name has
 * "corrupt" in it, a sibling checkpoint (chk-50 for chk-5), a job that no longer matches its snapshot, a
 * port clash. */
#include "unit.h"

#include "jvmout.h"
#include "restorelog.h"
#include "store.h"

#define CK "/vol/test_corrupt_dir/checkpoints"
#define JOB "f6d70091bd7261bf02975eca84989042"
#define POINT CK "/" JOB "/chk-5"
#define SP "/vol/test_corrupt_dir/savepoints/savepoint-f6d700-0123456789ab"

static struct restorelog scanner(const char *path, enum restore_kind kind)
{
	return (struct restorelog){.restore_path = path, .kind = kind, .job_ckpt_dir = CK "/" JOB};
}

/* Feeds the lines; returns the number of UNREADABLE verdicts, and sets *started. */
static int feed(struct restorelog *r, const char *const *lines, bool *started)
{
	int unreadable = 0;
	*started = false;
	for (size_t i = 0; lines[i]; i++) {
		enum restorelog_verdict v = restorelog_feed(r, lines[i]);
		if (v == RESTORELOG_UNREADABLE)
			unreadable++;
		if (v == RESTORELOG_STARTED)
			*started = true;
	}
	return unreadable;
}

static void test_healthy_restore_is_no_evidence(void **state)
{
	(void)state;
	static const char *const lines[] = {
	    "2026-12-01 11:39:23,350 INFO  org.apache.flink.client.cli.CliFrontend [] -  Program Arguments:",
	    "2026-12-01 11:39:23,350 INFO  org.apache.flink.client.cli.CliFrontend [] -     -s",
	    "2026-12-01 11:39:23,350 INFO  org.apache.flink.client.cli.CliFrontend [] -     file://" POINT,
	    "2026-12-01 11:39:23,407 INFO  org.apache.flink.configuration.GlobalConfiguration [] - Loading "
	    "configuration property: execution.checkpointing.dir, file://" CK,
	    "2026-12-01 11:39:30,100 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator [] - Restoring "
	    "job " JOB " from Checkpoint 5 @ 1796125161419 for " JOB " located at file:" POINT ".",
	    "2026-12-01 11:39:31,000 INFO  org.apache.flink.runtime.executiongraph.ExecutionGraph [] - Source (1/2) "
	    "switched from INITIALIZING to RUNNING.",
	    NULL};
	struct restorelog r = scanner(POINT, RESTORE_CHECKPOINT);
	bool started;
	assert_int_equal(feed(&r, lines, &started), 0);
	assert_true(started);
}

static void test_unreadable_metadata_trace(void **state)
{
	(void)state;
	/* Flink 2.2: the JobMaster cannot read the garbage after a valid header; the CLI prints the trace */
	static const char *const lines[] = {
	    "org.apache.flink.runtime.client.JobInitializationException: Could not start the JobMaster.",
	    "\tat org.apache.flink.runtime.jobmaster.DefaultJobMasterServiceProcess.lambda$new$0("
	    "DefaultJobMasterServiceProcess.java:97)",
	    "Caused by: java.util.concurrent.CompletionException: java.lang.RuntimeException: java.io.IOException: "
	    "incorrect magic number in master styte byte sequence",
	    "\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:315)",
	    "Caused by: java.io.IOException: incorrect magic number in master styte byte sequence",
	    "\tat org.apache.flink.runtime.checkpoint.metadata.MetadataV2V3SerializerBase.deserializeMasterState("
	    "MetadataV2V3SerializerBase.java:238)",
	    "\tat org.apache.flink.runtime.checkpoint.metadata.MetadataV2V3SerializerBase.deserializeMetadata("
	    "MetadataV2V3SerializerBase.java:160)",
	    "\tat org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(Checkpoints.java:125)",
	    "\t... 12 more",
	    NULL};
	struct restorelog r = scanner(POINT, RESTORE_CHECKPOINT);
	bool started;
	assert_int_equal(feed(&r, lines, &started), 1); /* once per trace */
	assert_string_equal(r.evidence, "Caused by: java.io.IOException: incorrect magic number in master styte byte "
	                                "sequence");
}

static void test_missing_file_named(void **state)
{
	(void)state;
	static const char *const in_point[] = {"Caused by: java.io.FileNotFoundException: " POINT
	                                       "/8a2c1f0e-6b1d-4c3e-9f21-0d1e2f3a4b5c (No such file or "
	                                       "directory)",
	                                       "\tat java.base/java.io.FileInputStream.open0(Native Method)", NULL};
	struct restorelog r = scanner(POINT, RESTORE_CHECKPOINT);
	bool started;
	assert_int_equal(feed(&r, in_point, &started), 1);
	assert_non_null(strstr(r.evidence, "FileNotFoundException"));

	/* an incremental checkpoint's file under shared/: the checkpoint's own, not a savepoint's */
	static const char *const shared[] = {"java.io.FileNotFoundException: File file:" CK "/" JOB
	                                     "/shared/op_x/abc does not exist or the user "
	                                     "running Flink ('root') has insufficient permissions to access it.",
	                                     NULL};
	r = scanner(POINT, RESTORE_CHECKPOINT);
	assert_int_equal(feed(&r, shared, &started), 1);
	r = scanner(SP, RESTORE_SAVEPOINT);
	assert_int_equal(feed(&r, shared, &started), 0);

	/* a sibling (chk-50 is not chk-5) says nothing about chk-5 */
	static const char *const sibling[] = {
	    "java.io.FileNotFoundException: " POINT "0/8a2c1f0e (No such file or directory)", NULL};
	r = scanner(POINT, RESTORE_CHECKPOINT);
	assert_int_equal(feed(&r, sibling, &started), 0);
}

static void test_job_change_is_not_unreadable(void **state)
{
	(void)state;
	static const char *const lines[] = {
	    "Caused by: java.lang.IllegalStateException: Failed to rollback to checkpoint/savepoint file:" POINT
	    ". Cannot map checkpoint/savepoint state for operator 0a448493b4782967b150582570326227 to the new program, "
	    "because the operator is not available in the new program. If you want to allow to skip this, you can set "
	    "the --allowNonRestoredState option on the CLI.",
	    "\tat org.apache.flink.runtime.checkpoint.Checkpoints.loadAndValidateCheckpoint(Checkpoints.java:185)",
	    "\tat org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(Checkpoints.java:125)", NULL};
	struct restorelog r = scanner(POINT, RESTORE_CHECKPOINT);
	bool started;
	assert_int_equal(feed(&r, lines, &started), 0);
}

static void test_unrelated_failures(void **state)
{
	(void)state;
	/* a port clash, a missing class, an out-of-memory: the restore point is not named as unreadable */
	static const char *const lines[] = {
	    "org.apache.flink.util.FlinkException: Failed to execute job 'StatefulCounter'.",
	    "Caused by: java.net.BindException: Could not start rest endpoint on any port in port range 8081",
	    "\tat org.apache.flink.runtime.rest.RestServerEndpoint.start(RestServerEndpoint.java:286)",
	    "2026-12-01 11:39:23,350 INFO  org.apache.flink.client.cli.CliFrontend [] -     file://" POINT,
	    "java.lang.ClassNotFoundException: com.example.Missing",
	    "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space",
	    "Caused by: java.io.FileNotFoundException: /opt/flink/usrlib/job.jar (No such file or directory)",
	    NULL};
	struct restorelog r = scanner(POINT, RESTORE_CHECKPOINT);
	bool started;
	assert_int_equal(feed(&r, lines, &started), 0);
	assert_false(started);
}

static void test_no_restore_point_no_verdict(void **state)
{
	(void)state;
	struct restorelog r = scanner(NULL, RESTORE_NONE);
	assert_int_equal(restorelog_feed(&r, "java.io.FileNotFoundException: /x (No such file or directory)"),
	                 RESTORELOG_NONE);
}

/* ---- the cause of a failed start ---- */

static void test_cause_is_the_root_cause(void **state)
{
	(void)state;
	static const char *const lines[] = {
	    "2026-12-01 11:00:00,000 INFO  x [] - starting",
	    "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: boom",
	    "\tat org.apache.flink.client.program.PackagedProgram.callMainMethod(PackagedProgram.java:373)",
	    "Caused by: java.util.concurrent.ExecutionException: x",
	    "\tat a.b(C.java:1)",
	    "Caused by: java.net.BindException: Address already in use",
	    "\tat a.b(C.java:2)",
	    "\t... 5 more",
	    "2026-12-01 11:00:01,000 INFO  x [] - shutting down"};
	char *c = jvmout_cause_of(lines, sizeof(lines) / sizeof(lines[0]), 400);
	assert_string_equal(c, "java.net.BindException: Address already in use");
	free(c);
	/* no "Caused by": the exception line itself, cut to the size asked for */
	static const char *const one[] = {"Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space",
	                                  "2026-12-01 INFO bye"};
	c = jvmout_cause_of(one, 2, 30);
	assert_int_equal(strlen(c), 30);
	assert_true(str_has_prefix(c, "Exception in thread"));
	free(c);
	static const char *const none[] = {"2026-12-01 INFO all well", "2026-12-01 WARN No tokens obtained"};
	assert_null(jvmout_cause_of(none, 2, 400));
}

/* ---- recorded outputs of the real JVM ---- */

/* line with every key replaced by value (malloc'd) */
static char *replace_all(const char *line, const char *key, const char *value)
{
	struct strbuf b = {0};
	const char *p = line;
	for (const char *hit; (hit = strstr(p, key)); p = hit + strlen(key)) {
		char *part = xstrndup(p, (size_t)(hit - p));
		strbuf_append(&b, part);
		strbuf_append(&b, value);
		free(part);
	}
	strbuf_append(&b, p);
	return strbuf_steal(&b);
}

/* The fixture's placeholders @RESTORE@, @CKPT@ and @SP@ as the paths the scanner is given. */
static char *expand(const char *line, const char *point)
{
	char *a = replace_all(line, "@RESTORE@", point);
	char *b = replace_all(a, "@CKPT@", CK);
	char *c = replace_all(b, "@SP@", "/vol/sp");
	free(a);
	free(b);
	return c;
}

static void test_recorded_outputs(void **state)
{
	(void)state;
	const char *dir = getenv("FLINKLET_FIXTURES");
	char *readme_path = xasprintf("%s/jvm-output/README.md", dir ? dir : "tests/unit/fixtures");
	char *readme = NULL;
	if (read_file(readme_path, 1 << 20, &readme, NULL) < 0) {
		free(readme_path);
		skip();
	}
	int cases = 0;
	/* README lines: "- `NAME.log`: VERDICT (kind checkpoint|savepoint) ..." */
	for (char *line = strtok(readme, "\n"); line; line = strtok(NULL, "\n")) {
		char *tick = strstr(line, "`");
		char *end = tick ? strstr(tick + 1, ".log`") : NULL;
		if (!str_has_prefix(line, "- `") || !end)
			continue;
		char *name = xstrndup(tick + 1, (size_t)(end - tick - 1) + 4);
		bool want_unreadable = strstr(end, "restore-failed") != NULL;
		bool savepoint = strstr(end, "savepoint") != NULL && strstr(end, "kind savepoint") != NULL;
		char *path = xasprintf("%s/jvm-output/%s", dir ? dir : "tests/unit/fixtures", name);
		char *text = NULL;
		assert_int_equal(read_file(path, 16 << 20, &text, NULL), 0);
		const char *point = savepoint ? "/vol/sp/savepoint-f6d700-0123456789ab" : CK "/" JOB "/chk-5";
		struct restorelog r = scanner(point, savepoint ? RESTORE_SAVEPOINT : RESTORE_CHECKPOINT);
		int unreadable = 0;
		for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *x = expand(l, point);
			if (restorelog_feed(&r, x) == RESTORELOG_UNREADABLE)
				unreadable++;
			free(x);
		}
		if ((unreadable > 0) != want_unreadable) {
			print_error("%s: %d unreadable verdicts, want %s\n", name, unreadable,
			            want_unreadable ? "some" : "none");
			fail();
		}
		cases++;
		free(text);
		free(path);
		free(name);
	}
	free(readme);
	free(readme_path);
	assert_true(cases > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_healthy_restore_is_no_evidence),
	    cmocka_unit_test(test_unreadable_metadata_trace),
	    cmocka_unit_test(test_missing_file_named),
	    cmocka_unit_test(test_job_change_is_not_unreadable),
	    cmocka_unit_test(test_unrelated_failures),
	    cmocka_unit_test(test_no_restore_point_no_verdict),
	    cmocka_unit_test(test_cause_is_the_root_cause),
	    cmocka_unit_test(test_recorded_outputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

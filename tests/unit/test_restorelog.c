/* test_restorelog: what the JVM's output says about the restore point (src/flink/restorelog.c), and the cause of a
 * failed start taken from it (jvmout_cause_of, src/flink/jvmout.c). The lines are Flink's own, as printed by the
 * real MiniCluster (CliFrontend, CheckpointCoordinator, the JobMaster's failures); the recorded outputs in
 * tests/unit/fixtures/jvm-output/ (Flink 2.2 and 1.20) are replayed whole, each with the verdict its name
 * gives (NAME.unreadable.log, NAME.other.log). A restore
 * point is given up only on evidence, so most of these tests are about lines that must NOT be evidence: the
 * command line and configuration echo (which name the restore path), a test directory whose name has
 * "corrupt" in it, a sibling checkpoint (chk-50 for chk-5), a job that no longer matches its snapshot, a
 * port clash. */
#include "unit.h"

#include <ctype.h>
#include <dirent.h>

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
	/* the exception does not name the point: the evidence says which file it was reading */
	assert_string_equal(r.evidence, POINT "/_metadata: java.io.IOException: incorrect magic number in master "
	                                      "styte byte sequence");
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
	/* -XX:+ExitOnOutOfMemoryError's last words are the cause (an out-of-memory is no evidence against a restore
	 * point: src/supervisor/sup_restore.c) */
	static const char *const oom[] = {"2026-12-01 INFO restoring",
	                                  "Terminating due to java.lang.OutOfMemoryError: Java heap space"};
	c = jvmout_cause_of(oom, 2, 400);
	assert_string_equal(c, "Terminating due to java.lang.OutOfMemoryError: Java heap space");
	free(c);
	/* -XX:+CrashOnOutOfMemoryError's (the JVM then aborts) */
	static const char *const crash[] = {"Aborting due to java.lang.OutOfMemoryError: Metaspace",
	                                    "# A fatal error has been detected by the Java Runtime Environment:"};
	c = jvmout_cause_of(crash, 2, 400);
	assert_string_equal(c, "Aborting due to java.lang.OutOfMemoryError: Metaspace");
	free(c);
	static const char *const none[] = {"2026-12-01 INFO all well", "2026-12-01 WARN No tokens obtained"};
	assert_null(jvmout_cause_of(none, 2, 400));
}

/* ---- recorded outputs of the real JVM ---- */

/* One fixture's header: "# key: value" lines at its top (tests/unit/fixtures/jvm-output/README.md). */
struct fixture {
	char *kind, *path, *job_ckpt_dir;
	char *body; /* the JVM's lines after the header */
};

static char *header_value(const char *line, const char *key)
{
	size_t n = strlen(key);
	if (strncmp(line, "# ", 2) || strncmp(line + 2, key, n) || strncmp(line + 2 + n, ": ", 2))
		return NULL;
	return xstrdup(line + 2 + n + 2);
}

static void fixture_parse(char *text, struct fixture *f)
{
	*f = (struct fixture){0};
	char *p = text;
	while (str_has_prefix(p, "# ")) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		char *v;
		if ((v = header_value(p, "restore-kind")))
			f->kind = v;
		else if ((v = header_value(p, "restore-path")))
			f->path = v;
		else if ((v = header_value(p, "job-checkpoints")))
			f->job_ckpt_dir = v;
		p = nl ? nl + 1 : p + strlen(p);
	}
	f->body = p;
}

static void fixture_free(struct fixture *f)
{
	free(f->kind);
	free(f->path);
	free(f->job_ckpt_dir);
}

/* Whether s names the point: its directory, or (a checkpoint) one of its files under the job's shared/ or
 * taskowned/. */
static bool names_snapshot(const char *s, const struct fixture *f)
{
	size_t n = strlen(f->path);
	for (const char *p = strstr(s, f->path); p; p = strstr(p + 1, f->path))
		if (!isalnum((unsigned char)p[n]) && p[n] != '-' && p[n] != '_') /* chk-13, not chk-130 */
			return true;
	if (strcmp(f->kind, "checkpoint"))
		return false;
	char *shared = xasprintf("%s/shared/", f->job_ckpt_dir), *owned = xasprintf("%s/taskowned/", f->job_ckpt_dir);
	bool yes = strstr(s, shared) || strstr(s, owned);
	free(shared);
	free(owned);
	return yes;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Each NAME.VERDICT.log: the JVM's output when a start from a restore point failed (or not), recorded from
 * the real MiniCluster of one Flink version by tests/unit/fixtures/jvm-output/record.py. VERDICT "unreadable":
 * the scanner must say so (once per trace at most, so at least once) and its evidence must name the point;
 * "other": it must never say so. */
static void test_recorded_outputs(void **state)
{
	(void)state;
	const char *base = getenv("FLINKLET_FIXTURES");
	char *dir = xasprintf("%s/jvm-output", base ? base : "tests/unit/fixtures");
	struct strv names = {0};
	DIR *d = opendir(dir);
	for (struct dirent *de; d && (de = readdir(d));) {
		size_t n = strlen(de->d_name);
		if (n > 4 && !strcmp(de->d_name + n - 4, ".log"))
			strv_push(&names, de->d_name);
	}
	if (d)
		closedir(d);
	qsort(names.v, names.n, sizeof(names.v[0]), by_name);
	if (names.n == 0) {
		print_error("no recorded outputs (*.log) in %s\n", dir);
		fail();
	}
	size_t unreadable_cases = 0, other_cases = 0, wrong = 0;
	for (size_t i = 0; i < names.n; i++) {
		const char *name = names.v[i];
		/* "2.2.1-truncated-metadata.unreadable.log": the verdict is the part before ".log" */
		char *stem = xstrndup(name, strlen(name) - 4);
		char *dot = strrchr(stem, '.');
		const char *verdict = dot ? dot + 1 : "";
		bool want_unreadable = !strcmp(verdict, "unreadable");
		if (!want_unreadable && strcmp(verdict, "other")) {
			print_error("%s: the name must end in .unreadable.log or .other.log\n", name);
			fail();
		}
		char *path = xasprintf("%s/%s", dir, name);
		char *text = NULL;
		assert_int_equal(read_file(path, 16 << 20, &text, NULL), 0);
		struct fixture f;
		fixture_parse(text, &f);
		if (!f.kind || !f.path || !f.job_ckpt_dir ||
		    (strcmp(f.kind, "checkpoint") && strcmp(f.kind, "savepoint"))) {
			print_error("%s: no restore-kind, restore-path or job-checkpoints header\n", name);
			fail();
		}
		struct restorelog r = {
		    .restore_path = f.path,
		    .kind = !strcmp(f.kind, "checkpoint") ? RESTORE_CHECKPOINT : RESTORE_SAVEPOINT,
		    .job_ckpt_dir = f.job_ckpt_dir,
		};
		int unreadable = 0, lines = 0;
		char *evidence = NULL;
		for (char *save = NULL, *l = strtok_r(f.body, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			lines++;
			if (restorelog_feed(&r, l) == RESTORELOG_UNREADABLE && unreadable++ == 0)
				evidence = xstrdup(r.evidence);
		}
		print_message("%-55s %4d lines: %s%s\n", name, lines, unreadable ? "unreadable: " : "no evidence",
		              evidence ? evidence : "");
		if ((unreadable > 0) != want_unreadable) {
			print_error("%s: %d unreadable verdicts, want %s%s%s\n", name, unreadable,
			            want_unreadable ? "some" : "none", evidence ? "; the first: " : "",
			            evidence ? evidence : "");
			wrong++;
		} else if (want_unreadable && !names_snapshot(evidence, &f)) {
			print_error("%s: the evidence does not name %s %s: %s\n", name, f.kind, f.path, evidence);
			wrong++;
		}
		if (want_unreadable)
			unreadable_cases++;
		else
			other_cases++;
		free(evidence);
		fixture_free(&f);
		free(text);
		free(path);
		free(stem);
	}
	assert_int_equal(wrong, 0);
	/* both answers are recorded: a scanner that always said the same would fail one kind */
	assert_true(unreadable_cases > 0);
	assert_true(other_cases > 0);
	strv_free(&names);
	free(dir);
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

/* test_standby: the standby JVM's pure parts (src/supervisor/sup_standby.c, src/flink/flinkconf.c; issue 38 item 4):
 * its command line is the job's JVM's up to the launcher's main class, then --standby and its directory, nothing of
 * the job; a restart takes it only when it was started as the spec's JVM would be, with the launch's memory, and one
 * that does not fit is killed and forgotten, as at any stop of the job; the JVM it became is handed over whole; the
 * backoff of the next standby after one died. On the test supervisor of tests/support/sup_fixture.c, with a child
 * process in a process group of its own in place of the standby JVM. */
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sup_fixture.h"

static const struct sup_fixture ON = {
    .name = "standby", .conf = "    flinklet.recovery.standby-jvm: \"true\"\n", .jar = "test-no-launch:job.jar"};

static void test_the_delay_after_a_standby_died(void **state)
{
	(void)state;
	assert_int_equal(sup_standby_delay(0), 1 * USEC_PER_SEC);
	assert_int_equal(sup_standby_delay(1), 1 * USEC_PER_SEC);
	assert_int_equal(sup_standby_delay(2), 2 * USEC_PER_SEC);
	assert_int_equal(sup_standby_delay(4), 8 * USEC_PER_SEC);
	assert_int_equal(sup_standby_delay(9), 256 * USEC_PER_SEC);
	assert_int_equal(sup_standby_delay(10), 300 * USEC_PER_SEC);
	assert_int_equal(sup_standby_delay(1000), 300 * USEC_PER_SEC);
}

static void test_its_command_line_is_the_jobs_jvm_without_the_job(void **state)
{
	(void)state;
	struct supervisor s;
	assert_int_equal(sup_fixture_init(&s, &ON), 0);
	struct launch l = {.job_id = s.job_id,
	                   .conf_dir = s.conf_dir,
	                   .tmp_dir = s.scratch.tmp_dir,
	                   .java = "java",
	                   .restore_path = "file:///v/checkpoints/x/chk-3",
	                   .launcher = true};
	struct strv job = {0}, sb = {0}, bare = {0};
	flinkconf_build_argv(s.spec, &l, &job);
	flinkconf_build_standby_argv(s.spec, &l, "/scratch/.standby-1-1", &sb);
	size_t main_at = 0;
	while (main_at < job.n && strcmp(job.v[main_at], FLINKCONF_LAUNCHER_CLASS))
		main_at++;
	assert_true(main_at < job.n);
	assert_int_equal(sb.n, main_at + 3);
	for (size_t i = 0; i <= main_at; i++)
		assert_string_equal(sb.v[i], job.v[i]);
	assert_string_equal(sb.v[main_at + 1], "--standby");
	assert_string_equal(sb.v[main_at + 2], "/scratch/.standby-1-1");
	/* nothing of the job: no restore point, no jar */
	for (size_t i = 0; i < sb.n; i++)
		assert_null(strstr(sb.v[i], "chk-3"));
	flinkconf_build_standby_argv(s.spec, &l, NULL, &bare);
	assert_int_equal(bare.n, main_at + 2);
	assert_string_equal(bare.v[main_at + 1], "--standby");
	strv_free(&job);
	strv_free(&sb);
	strv_free(&bare);
	sup_fixture_free(&s);
}

/* A child in a process group of its own that waits to be killed, as a standby JVM does. */
static pid_t fake_standby(struct supervisor *s)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(pid, pid);
	s->standby.pid = pid;
	s->status.standby_pid = pid;
	s->standby.fingerprint = sup_keepjvm_fingerprint(s, s->spec);
	s->standby.tuned = false;
	return pid;
}

static void assert_killed(pid_t pid)
{
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
}

static void test_a_restart_takes_only_a_standby_that_fits(void **state)
{
	(void)state;
	struct supervisor s;
	assert_int_equal(sup_fixture_init(&s, &ON), 0);
	struct membudget_tuning m = {0};
	assert_false(sup_standby_fits(&s, false, &m)); /* none */

	pid_t pid = fake_standby(&s);
	assert_true(sup_standby_running(&s));
	assert_true(sup_standby_fits(&s, false, &m));
	/* memory tuning gives the next JVM other memory: discarded */
	assert_false(sup_standby_fits(&s, true, &m));
	assert_killed(pid);
	assert_false(sup_standby_running(&s));
	assert_int_equal(s.status.standby_pid, 0);
	assert_null(s.standby.fingerprint);

	/* started for another spec's JVM (a reload changed a JVM option meanwhile): discarded */
	pid = fake_standby(&s);
	free(s.standby.fingerprint);
	s.standby.fingerprint = xstrdup("another JVM\n");
	assert_false(sup_standby_fits(&s, false, &m));
	assert_killed(pid);
	assert_false(sup_standby_running(&s));
	sup_fixture_free(&s);
}

static void test_a_stop_of_the_job_discards_it(void **state)
{
	(void)state;
	struct supervisor s;
	assert_int_equal(sup_fixture_init(&s, &ON), 0);
	pid_t pid = fake_standby(&s);
	/* a restart keeps it */
	sup_standby_state(&s, SUP_RUNNING, SUP_BACKOFF);
	sup_standby_state(&s, SUP_BACKOFF, SUP_STARTING);
	assert_true(sup_standby_running(&s));
	/* a stop of the job does not */
	sup_standby_state(&s, SUP_RUNNING, SUP_SAVEPOINTING);
	assert_killed(pid);
	assert_false(sup_standby_running(&s));
	const enum sup_state gone[] = {SUP_STOPPING, SUP_SUSPENDED, SUP_FAILED, SUP_FINISHED, SUP_STOPPED};
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		pid = fake_standby(&s);
		sup_standby_state(&s, SUP_STARTING, gone[i]);
		assert_killed(pid);
		assert_false(sup_standby_running(&s));
	}
	sup_fixture_free(&s);
}

static void test_the_standby_is_handed_over_whole(void **state)
{
	(void)state;
	struct supervisor s;
	assert_int_equal(sup_fixture_init(&s, &ON), 0);
	pid_t pid = fake_standby(&s);
	int p[2];
	assert_int_equal(pipe(p), 0);
	s.standby.control_fd = p[1];
	s.standby.failures = 3;
	pid_t got = 0;
	int fd = -1;
	struct jvmout *out = (struct jvmout *)1;
	assert_true(sup_standby_take(&s, &got, &fd, &out));
	assert_int_equal(got, pid);
	assert_int_equal(fd, p[1]);
	assert_null(out);
	/* nothing of it is the standby's any more: not killed, not closed */
	assert_false(sup_standby_running(&s));
	assert_int_equal(s.status.standby_pid, 0);
	assert_int_equal(s.standby.control_fd, -1);
	assert_int_equal(s.standby.failures, 0);
	assert_int_equal(write(fd, "x", 1), 1);
	assert_false(sup_standby_take(&s, &got, &fd, &out));
	/* its exit is the job's JVM's, which goes on as any */
	kill(pid, SIGKILL);
	assert_killed(pid);
	struct reaped r = {pid, -1, SIGKILL};
	assert_false(sup_standby_reaped(&s, &r));
	assert_int_equal(s.standby.job_pid, 0);
	close(p[0]);
	close(p[1]);
	sup_fixture_free(&s);
}

static void test_a_standby_that_died_is_counted(void **state)
{
	(void)state;
	struct supervisor s;
	assert_int_equal(sup_fixture_init(&s, &ON), 0);
	pid_t pid = fake_standby(&s);
	kill(pid, SIGKILL);
	assert_killed(pid);
	struct reaped other = {pid + 100000, 0, -1};
	assert_false(sup_standby_reaped(&s, &other));
	struct reaped r = {pid, -1, SIGKILL};
	assert_true(sup_standby_reaped(&s, &r));
	assert_false(sup_standby_running(&s));
	assert_int_equal(s.standby.failures, 1);
	sup_fixture_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_delay_after_a_standby_died),
	    cmocka_unit_test(test_its_command_line_is_the_jobs_jvm_without_the_job),
	    cmocka_unit_test(test_a_restart_takes_only_a_standby_that_fits),
	    cmocka_unit_test(test_a_stop_of_the_job_discards_it),
	    cmocka_unit_test(test_the_standby_is_handed_over_whole),
	    cmocka_unit_test(test_a_standby_that_died_is_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

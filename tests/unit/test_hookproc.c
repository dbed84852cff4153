/* test_hookproc: the scaling hook's process (src/flink/hookproc.c) with real /bin/sh scripts: a question larger than
 * a pipe holds while the answer comes back as large (both pipes moved at once, or it would never end), a program
 * that stops reading its input (no SIGPIPE for flinklet), an answer over the 1 MiB bound, exit codes and signals said
 * in one sentence, the deadline killing the whole process group (a child it started included), the end of its
 * stderr kept, and programs that cannot be run. */
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>

#include "hookproc.h"
#include "store.h"

static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = make_tempdir();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir); /* frees it */
	return 0;
}

static char *script(const char *name, const char *body)
{
	char *text = xasprintf("#!/bin/sh\n%s", body);
	char *path = write_text(dir, name, text);
	chmod(path, 0755);
	free(text);
	return path;
}

/* Runs it; returns the failure (NULL: none); h is the caller's to close. */
static char *run(struct hookproc *h, const char *path, const char *input, size_t len, int64_t timeout_ms)
{
	char *failure = NULL;
	hookproc_run(h, path, input, len, timeout_ms, &failure);
	return failure;
}

static void test_a_large_question_and_answer(void **state)
{
	(void)state;
	size_t n = 700 * 1024; /* more than the pipes hold (1 MiB asked for, 64 KiB where that is refused) */
	char *input = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		input[i] = (char)('a' + i % 26);
	char *path = script("echo.sh", "cat\n");
	struct hookproc h;
	char *failure = run(&h, path, input, n, 30000);
	assert_null(failure);
	assert_int_equal(h.answer.len, n);
	assert_memory_equal(h.answer.buf, input, n);
	hookproc_close(&h);
	free(input);
	free(path);
}

static void test_a_program_that_stops_reading(void **state)
{
	(void)state;
	size_t n = 4u << 20;
	char *input = xcalloc(1, n);
	memset(input, 'x', n - 1);
	char *path = script("head.sh", "head -c 5 >/dev/null\necho '{\"decision\": \"apply\"}'\n");
	struct hookproc h;
	char *failure = run(&h, path, input, n, 30000);
	assert_null(failure);
	assert_string_equal(h.answer.buf, "{\"decision\": \"apply\"}\n");
	hookproc_close(&h);
	free(input);
	free(path);
}

static void test_exits_and_signals(void **state)
{
	(void)state;
	static const struct {
		const char *body, *failure;
	} cases[] = {
	    {"exit 7\n", "exited with code 7"},
	    {"kill -TERM $$\n", "was killed by signal 15 (Terminated)"},
	    {"head -c 2000000 /dev/zero\n", "wrote more than 1048576 bytes on its standard output"},
	    {"echo '{}'\nexit 0\n", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = script("case.sh", cases[i].body);
		struct hookproc h;
		char *failure = run(&h, path, "{}", 2, 30000);
		if (cases[i].failure)
			assert_string_equal(failure, cases[i].failure);
		else
			assert_null(failure);
		hookproc_close(&h);
		free(failure);
		free(path);
	}
}

static void test_the_deadline_kills_the_group(void **state)
{
	(void)state;
	char *pids = path_join(dir, "pids");
	char *body = xasprintf("sleep 30 &\necho $! > '%s'\nwait\n", pids);
	char *path = script("hang.sh", body);
	struct hookproc h;
	char *failure = run(&h, path, "{}", 2, 300);
	assert_string_equal(failure, "did not answer within 300 ms");
	char *text = NULL;
	assert_int_equal(read_file(pids, 100, &text, NULL), 0);
	pid_t child = (pid_t)atoi(text);
	assert_true(child > 0);
	/* the sleep was in the hook's group: killed with it (gone, or a zombie waiting for its reaper) */
	char *stat_path = xasprintf("/proc/%d/stat", (int)child);
	char *st = NULL;
	for (int i = 0; i < 100 && read_file(stat_path, 4096, &st, NULL) == 0 && !strstr(st, ") Z "); i++) {
		free(st);
		st = NULL;
		usleep(20000);
	}
	assert_true(st == NULL || strstr(st, ") Z ") != NULL);
	waitpid(child, NULL, WNOHANG);
	free(st);
	free(stat_path);
	free(text);
	hookproc_close(&h);
	free(failure);
	free(path);
	free(body);
	free(pids);
}

static void test_errors_and_programs_that_cannot_run(void **state)
{
	(void)state;
	char *path = script("noisy.sh", "i=0\nwhile [ $i -lt 500 ]; do echo 'noise noise noise' >&2; i=$((i+1)); done\n"
	                                "printf 'first line\\nlast\\tline\\n' >&2\nexit 1\n");
	struct hookproc h;
	char *failure = run(&h, path, "", 0, 30000);
	assert_string_equal(failure, "exited with code 1");
	char *tail = hookproc_errors_tail(&h, 20);
	assert_string_equal(tail, "first line last line"); /* one line: the last 20 bytes */
	free(tail);
	hookproc_close(&h);
	free(failure);
	free(path);

	char *missing = path_join(dir, "no-such-hook");
	failure = run(&h, missing, "{}", 2, 1000);
	assert_string_equal(failure, "could not be run: No such file or directory");
	hookproc_close(&h);
	free(failure);
	free(missing);
	char *plain = write_text(dir, "not-executable", "#!/bin/sh\necho hi\n");
	failure = run(&h, plain, "{}", 2, 1000);
	assert_string_equal(failure, "could not be run: Permission denied");
	hookproc_close(&h);
	free(failure);
	free(plain);
}

int main(void)
{
	signal(SIGPIPE, SIG_DFL); /* as a command starts: hookproc_run must not die of a closed pipe */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_large_question_and_answer),
	    cmocka_unit_test(test_a_program_that_stops_reading),
	    cmocka_unit_test(test_exits_and_signals),
	    cmocka_unit_test(test_the_deadline_kills_the_group),
	    cmocka_unit_test(test_errors_and_programs_that_cannot_run),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

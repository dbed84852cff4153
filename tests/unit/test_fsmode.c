/* test_fsmode: the state volume is shared with its group (include/fsmode.h). Under flinklet's umask the
 * store makes directories 0770 (2770 under a setgid parent, which mkdir passes on) and files 0660; and, run as
 * root, two arbitrary uids of group 0 one after the other (OpenShift's restricted policy) can each take the
 * lock, append to events.jsonl and replace files the other made, as two pods on one volume would.
 */
#include "unit.h"

#include <grp.h>
#include <sys/wait.h>

#include "fsmode.h"
#include "store.h"

static mode_t mode_of(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_umask_and_modes(void **state)
{
	(void)state;
	mode_t old = fsmode_apply_umask();
	assert_int_equal(umask(FSMODE_UMASK), FSMODE_UMASK);
	char *dir = make_tempdir();
	assert_int_equal(chmod(dir, 02770), 0);

	char *sub = xasprintf("%s/checkpoints/job", dir);
	assert_int_equal(mkdir_p(sub), 0);
	assert_int_equal(mode_of(sub), 02770); /* the setgid bit comes from the parent */
	char *file = xasprintf("%s/status.json", dir);
	assert_int_equal(write_file_atomic(file, "{}\n", 3), 0);
	assert_int_equal(mode_of(file), 0660);
	int fd = store_lock(dir, NULL);
	assert_true(fd >= 0);
	char *lock = xasprintf("%s/lock", dir);
	assert_int_equal(mode_of(lock), 0660);
	close(fd);
	assert_int_equal(store_append_event(dir, "{\"type\":\"Test\"}"), 0);
	char *events = xasprintf("%s/events.jsonl", dir);
	assert_int_equal(mode_of(events), 0660);
	char *token = xasprintf("%s/http.token", dir);
	assert_int_equal(write_file_atomic_mode(token, "t\n", 2, FSMODE_SECRET), 0);
	assert_int_equal(mode_of(token), 0640); /* the group reads it, others nothing */

	free(token), free(events), free(lock), free(file), free(sub);
	remove_tree(dir);
	umask(old);
}

/* In a child as uid:0: the lock, an event, a file replaced, a directory made, the token read. */
static int as_uid(const char *dir, uid_t uid, const char *tag)
{
	pid_t pid = fork();
	if (pid == 0) {
		fsmode_apply_umask();
		if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(10);
		int fd = store_lock(dir, NULL);
		if (fd < 0)
			_exit(11);
		char *line = xasprintf("{\"by\":\"%s\"}", tag);
		if (store_append_event(dir, line) < 0)
			_exit(12);
		char *file = xasprintf("%s/status.json", dir);
		if (write_file_atomic(file, tag, strlen(tag)) < 0)
			_exit(13);
		char *sub = xasprintf("%s/checkpoints/%s", dir, tag);
		if (mkdir_p(sub) < 0)
			_exit(14);
		char *inner = xasprintf("%s/_metadata", sub);
		if (write_file_atomic(inner, "m", 1) < 0)
			_exit(15);
		char *token = xasprintf("%s/http.token", dir);
		char *text = NULL;
		if (read_file(token, 100, &text, NULL) < 0)
			_exit(16);
		/* what Flink does to an older checkpoint: removes its directory, made by the other uid */
		char *other = xasprintf("%s/checkpoints/%s", dir, strcmp(tag, "first") == 0 ? "none" : "first");
		if (access(other, F_OK) == 0 && rm_rf(other) < 0)
			_exit(17);
		_exit(0);
	}
	assert_true(pid > 0);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static void test_two_arbitrary_uids_share_the_volume(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("skipped: needs root to switch uids\n");
		skip();
	}
	mode_t old = fsmode_apply_umask();
	char *dir = make_tempdir();
	assert_int_equal(chown(dir, 9999, 0), 0); /* as the image makes /var/lib/flinklet */
	assert_int_equal(chmod(dir, 02770), 0);
	char *token = xasprintf("%s/http.token", dir);
	assert_int_equal(write_file_atomic_mode(token, "t\n", 2, FSMODE_SECRET), 0);
	assert_int_equal(as_uid(dir, 123456, "first"), 0);
	assert_int_equal(as_uid(dir, 234567, "second"), 0);
	char *text = NULL;
	char *events = xasprintf("%s/events.jsonl", dir);
	assert_int_equal(read_file(events, 4096, &text, NULL), 0);
	assert_string_equal(text, "{\"by\":\"first\"}\n{\"by\":\"second\"}\n");
	free(text), free(events), free(token);
	remove_tree(dir);
	umask(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_umask_and_modes),
	    cmocka_unit_test(test_two_arbitrary_uids_share_the_volume),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_store: the volume's files (src/base/store.c, issue 17). A replaced file is whole and durable (temp file, fsync,
 * rename, fsync of the directory: two syncs, no temp file left), an unchanged one is not written at all; the event
 * log takes a batch of lines with one write and one fdatasync, all of them or none (a volume that takes half a line
 * gets it cut off again), and a line torn by a crash is cut off at the next start; the lock keeps a second process
 * off the directory and says who holds it, and the read-only probe sees it without taking it. */
#include "unit.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "store.h"

static char *slurp(const char *path)
{
	char *text = NULL;
	assert_int_equal(read_file(path, 1 << 20, &text, NULL), 0);
	return text;
}

static int count_entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_a_replaced_file_is_whole_durable_and_leaves_no_temp(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *path = path_join(dir, "status.json");
	uint64_t before = store_syncs();
	assert_int_equal(write_file_atomic(path, "{\"a\":1}", 7), 0);
	assert_int_equal(store_syncs() - before, 2); /* the file, then its directory after the rename */
	char *text = slurp(path);
	assert_string_equal(text, "{\"a\":1}");
	free(text);
	assert_int_equal(write_file_atomic(path, "{\"a\":2,\"b\":3}", 13), 0);
	text = slurp(path);
	assert_string_equal(text, "{\"a\":2,\"b\":3}");
	free(text);
	assert_int_equal(count_entries(dir), 1); /* no temp file left beside it */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(write_file_atomic_mode(path, "x", 1, 0600), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* a directory that does not exist: an error, and nothing made */
	char *nowhere = path_join(dir, "missing/status.json");
	assert_int_equal(write_file_atomic(nowhere, "x", 1), -ENOENT);
	assert_int_equal(count_entries(dir), 1);
	free(nowhere);
	free(path);
	remove_tree(dir);
}

static void test_an_unchanged_file_is_not_written(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *path = path_join(dir, "config.yaml");
	assert_int_equal(write_file_if_changed(path, "a: 1\n", 5), 0);
	struct stat st1, st2;
	assert_int_equal(stat(path, &st1), 0);
	uint64_t before = store_syncs();
	assert_int_equal(write_file_if_changed(path, "a: 1\n", 5), 0);
	assert_int_equal(store_syncs(), before); /* no write, no sync */
	assert_int_equal(stat(path, &st2), 0);
	assert_int_equal(st1.st_ino, st2.st_ino); /* the same file: not replaced */
	assert_int_equal(write_file_if_changed(path, "a: 2\n", 5), 0);
	char *text = slurp(path);
	assert_string_equal(text, "a: 2\n");
	free(text);
	free(path);
	remove_tree(dir);
}

static void test_temps_a_crash_left_are_removed_and_nothing_else(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	free(write_text(dir, ".status.json.tmp.1234", "half"));
	free(write_text(dir, ".spec.stable.yaml.tmp.99", "half"));
	free(write_text(dir, "status.json", "{}"));
	free(write_text(dir, ".hidden", "mine"));
	assert_int_equal(store_clean_temps(dir), 2);
	assert_int_equal(count_entries(dir), 2);
	char *kept = path_join(dir, "status.json");
	assert_int_equal(access(kept, F_OK), 0);
	free(kept);
	remove_tree(dir);
}

static void test_a_batch_of_events_is_one_write_and_one_fdatasync(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *lines[] = {"{\"type\":\"A\"}", "{\"type\":\"B\"}", "{\"type\":\"C\"}"};
	uint64_t before = store_syncs();
	assert_int_equal(store_append_events(dir, lines, 3), 0);
	assert_int_equal(store_syncs() - before, 1);
	assert_int_equal(store_append_event(dir, "{\"type\":\"D\"}"), 0);
	assert_int_equal(store_syncs() - before, 2);
	assert_int_equal(store_append_events(dir, lines, 0), 0); /* nothing: no sync */
	assert_int_equal(store_syncs() - before, 2);
	char *path = path_join(dir, "events.jsonl");
	char *text = slurp(path);
	assert_string_equal(text, "{\"type\":\"A\"}\n{\"type\":\"B\"}\n{\"type\":\"C\"}\n{\"type\":\"D\"}\n");
	free(text);
	free(path);
	remove_tree(dir);
}

/* A volume that takes only part of a batch (here: a file size limit just past what is there): the call fails and
 * the file is as it was, so the next append starts a line of its own. */
static void test_a_batch_the_volume_takes_half_of_is_cut_off_again(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	assert_int_equal(store_append_event(dir, "{\"type\":\"Before\"}"), 0);
	char *path = path_join(dir, "events.jsonl");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	char big[200];
	memset(big, 'x', sizeof(big));
	memcpy(big, "{\"m\":\"", 6);
	memcpy(big + sizeof(big) - 3, "\"}", 3);
	char *lines[] = {big};
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)st.st_size + 50;
	void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int r = store_append_events(dir, lines, 1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	assert_int_equal(r, -EFBIG);
	struct stat after;
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_size, st.st_size); /* the half line is gone */
	assert_int_equal(store_append_event(dir, "{\"type\":\"After\"}"), 0);
	char *text = slurp(path);
	assert_string_equal(text, "{\"type\":\"Before\"}\n{\"type\":\"After\"}\n");
	free(text);
	free(path);
	remove_tree(dir);
}

static void test_a_line_torn_by_a_crash_is_cut_off(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *path = write_text(dir, "events.jsonl", "{\"type\":\"A\"}\n{\"type\":\"B\"}\n{\"type\":\"C\",\"mess");
	assert_int_equal(store_repair_events(dir), 0);
	char *text = slurp(path);
	assert_string_equal(text, "{\"type\":\"A\"}\n{\"type\":\"B\"}\n");
	free(text);
	/* a whole file is left alone */
	assert_int_equal(store_repair_events(dir), 0);
	text = slurp(path);
	assert_string_equal(text, "{\"type\":\"A\"}\n{\"type\":\"B\"}\n");
	free(text);
	/* the tail gives whole lines only */
	char *tail = NULL;
	size_t len = 0;
	assert_int_equal(store_events_tail(dir, 20, &tail, &len), 0);
	assert_string_equal(tail, "{\"type\":\"B\"}\n");
	assert_int_equal(len, strlen(tail));
	free(tail);
	free(path);
	remove_tree(dir);
}

static void test_the_lock_keeps_a_second_process_off_and_names_the_first(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	assert_int_equal(store_lock_held(dir), 0); /* no lock file: not held */
	long owner = -1;
	int fd = store_lock(dir, &owner);
	assert_true(fd >= 0);
	assert_int_equal(store_lock_held(dir), 1);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* another supervisor on the same directory */
		long who = 0;
		int r = store_lock(dir, &who);
		_exit(r == -EBUSY && who == (long)getppid() ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fd); /* the first one ends: the lock is free for the next */
	assert_int_equal(store_lock_held(dir), 0);
	fd = store_lock(dir, NULL);
	assert_true(fd >= 0);
	close(fd);
	remove_tree(dir);
}

static void test_the_job_id_is_made_once_and_kept(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char a[33], b[33];
	assert_int_equal(store_job_id(dir, a), 0);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(store_job_id(dir, b), 0);
	assert_string_equal(a, b);
	remove_tree(dir);
}

static void test_a_tree_deeper_than_path_max_goes_and_no_link_is_followed(void **state)
{
	(void)state;
	char *root = make_tempdir();
	char *outside = path_join(root, "outside");
	mkdir_p(outside);
	free(write_text(outside, "precious", "not the tree's"));
	char *tree = path_join(root, "tree");
	mkdir_p(tree);
	/* 2500 levels of "dd/": paths of 7.5 KB, past PATH_MAX; a link to outside at the bottom and halfway */
	int fd = open(tree, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (int i = 0; i < 2500; i++) {
		assert_int_equal(mkdirat(fd, "dd", 0700), 0);
		if (i == 1250)
			assert_int_equal(symlinkat(outside, fd, "a-link"), 0);
		int next = openat(fd, "dd", O_RDONLY | O_DIRECTORY);
		assert_true(next >= 0);
		close(fd);
		fd = next;
	}
	int leaf = openat(fd, "leaf", O_CREAT | O_WRONLY, 0600);
	assert_true(leaf >= 0);
	close(leaf);
	assert_int_equal(symlinkat(outside, fd, "b-link"), 0);
	close(fd);
	assert_int_equal(rm_rf(tree), 0);
	struct stat st;
	assert_int_equal(lstat(tree, &st), -1);
	char *precious = path_join(outside, "precious");
	assert_int_equal(lstat(precious, &st), 0);
	/* a file, and nothing at all */
	assert_int_equal(rm_rf(precious), 0);
	assert_int_equal(lstat(precious, &st), -1);
	assert_int_equal(rm_rf(precious), 0);
	free(precious);
	free(tree);
	free(outside);
	remove_tree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_replaced_file_is_whole_durable_and_leaves_no_temp),
	    cmocka_unit_test(test_an_unchanged_file_is_not_written),
	    cmocka_unit_test(test_temps_a_crash_left_are_removed_and_nothing_else),
	    cmocka_unit_test(test_a_batch_of_events_is_one_write_and_one_fdatasync),
	    cmocka_unit_test(test_a_batch_the_volume_takes_half_of_is_cut_off_again),
	    cmocka_unit_test(test_a_line_torn_by_a_crash_is_cut_off),
	    cmocka_unit_test(test_the_lock_keeps_a_second_process_off_and_names_the_first),
	    cmocka_unit_test(test_the_job_id_is_made_once_and_kept),
	    cmocka_unit_test(test_a_tree_deeper_than_path_max_goes_and_no_link_is_followed),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}

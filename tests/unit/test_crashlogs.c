/* test_crashlogs: the JVM's fatal-error logs go to one folder, and only the newest crashes' files stay there
 * (src/flink/crashlogs.c). */
#include "unit.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crashlogs.h"

static void test_names(void **state)
{
	(void)state;
	long pid = 0;
	assert_int_equal(crashlogs_parse_name("hs_err_pid123.log", &pid), 1);
	assert_int_equal(pid, 123);
	assert_int_equal(crashlogs_parse_name("replay_pid7.log", &pid), 1);
	assert_int_equal(pid, 7);
	const char *not_ours[] = {
	    "hs_err_pid.log",   "hs_err_pid12.txt", "hs_err_pid12.log.bak",      "hs_err_pidx.log",
	    "xhs_err_pid1.log", "status.json",      "hs_err_pid12345678901.log", NULL};
	for (size_t i = 0; not_ours[i]; i++)
		assert_int_equal(crashlogs_parse_name(not_ours[i], &pid), 0);
}

static void test_options(void **state)
{
	(void)state;
	struct strv v = {0};
	crashlogs_jvm_options("/var/lib/flinklet/jvm-crashes", &v);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[0], "-XX:ErrorFile=/var/lib/flinklet/jvm-crashes/hs_err_pid%p.log");
	assert_string_equal(v.v[1], "-XX:ReplayDataFile=/var/lib/flinklet/jvm-crashes/replay_pid%p.log");
	strv_free(&v);
}

/* a file of the given age in seconds */
static void crash_file(const char *dir, const char *name, int age)
{
	char *path = write_text(dir, name, "#\n# A fatal error has been detected by the Java Runtime Environment:\n");
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
	free(path);
}

static bool exists(const char *dir, const char *name)
{
	char *path = path_join(dir, name);
	struct stat st;
	bool r = lstat(path, &st) == 0;
	free(path);
	return r;
}

static void test_the_newest_crashes_stay(void **state)
{
	(void)state;
	char *root = make_tempdir(), *dir = path_join(root, CRASHLOGS_DIR);
	assert_int_equal(mkdir(dir, 0700), 0);
	crash_file(dir, "hs_err_pid1.log", 500);
	crash_file(dir, "hs_err_pid2.log", 400);
	crash_file(dir, "hs_err_pid3.log", 300);
	crash_file(dir, "replay_pid3.log", 299);
	crash_file(dir, "hs_err_pid4.log", 200); /* the JVM that just ended: its clock was stepped back */
	crash_file(dir, "hs_err_pid5.log", 100);
	crash_file(dir, "replay_pid6.log", 50);    /* a replay file alone is a crash too */
	crash_file(root, "hs_err_pid9.log", 1000); /* written into the working directory by an older flinklet */
	crash_file(root, "hs_err_pid12.txt", 2000);
	crash_file(root, "status.json", 2000);
	char *odd = path_join(dir, "hs_err_pid8.log");
	assert_int_equal(mkdir(odd, 0700), 0); /* not a file the JVM wrote */
	struct crashlogs_pruned p;
	crashlogs_prune(dir, root, 2, 4, &p);
	assert_int_equal(p.r, 0);
	assert_int_equal(p.kept, 2);
	assert_int_equal(p.removed, 6);
	char *want = path_join(dir, "hs_err_pid4.log");
	assert_non_null(p.log);
	assert_string_equal(p.log, want);
	assert_true(exists(dir, "hs_err_pid4.log") && exists(dir, "replay_pid6.log"));
	const char *gone[] = {"hs_err_pid1.log", "hs_err_pid2.log", "hs_err_pid3.log",
	                      "replay_pid3.log", "hs_err_pid5.log", NULL};
	for (size_t i = 0; gone[i]; i++)
		assert_false(exists(dir, gone[i]));
	assert_false(exists(root, "hs_err_pid9.log"));
	assert_true(exists(root, "hs_err_pid12.txt") && exists(root, "status.json") && exists(dir, "hs_err_pid8.log"));
	free(p.log);
	/* a JVM that left no log: none found, the newest stay */
	crashlogs_prune(dir, root, 1, 77, &p);
	assert_int_equal(p.r, 0);
	assert_null(p.log);
	assert_int_equal(p.kept, 1);
	assert_int_equal(p.removed, 1);
	assert_true(exists(dir, "replay_pid6.log"));
	assert_false(exists(dir, "hs_err_pid4.log"));
	rmdir(odd);
	free(odd);
	free(want);
	free(dir);
	remove_tree(root);
}

/* a folder linked elsewhere (or a link named like a crash file) is never removed through: nothing outside goes */
static void test_nothing_is_removed_through_a_link(void **state)
{
	(void)state;
	char *root = make_tempdir(), *outside = make_tempdir();
	char *dir = path_join(root, CRASHLOGS_DIR);
	assert_int_equal(symlink(outside, dir), 0);
	crash_file(outside, "hs_err_pid1.log", 900);
	crash_file(outside, "hs_err_pid2.log", 800);
	crash_file(outside, "hs_err_pid3.log", 10); /* the JVM that just ended wrote through the link */
	crash_file(root, "hs_err_pid4.log", 1000);
	char *target = write_text(outside, "precious", "not a crash log");
	char *link = path_join(root, "hs_err_pid5.log");
	assert_int_equal(symlink(target, link), 0);
	struct crashlogs_pruned p;
	crashlogs_prune(dir, root, 1, 3, &p);
	assert_non_null(p.skipped);
	assert_string_equal(p.skipped, "is a symbolic link");
	char *want = path_join(dir, "hs_err_pid3.log");
	assert_non_null(p.log);
	assert_string_equal(p.log, want); /* said, through the link */
	assert_true(exists(outside, "hs_err_pid1.log") && exists(outside, "hs_err_pid2.log") &&
	            exists(outside, "hs_err_pid3.log") && exists(outside, "precious"));
	assert_true(exists(root, "hs_err_pid4.log")); /* the only crash seen: kept */
	assert_true(exists(root, "hs_err_pid5.log")); /* a link, left alone */
	free(p.log);
	/* a file in the folder's place: not a directory, nothing removed, no log found there */
	assert_int_equal(unlink(dir), 0);
	free(write_text(root, CRASHLOGS_DIR, "a file"));
	crashlogs_prune(dir, root, 1, 6, &p);
	assert_string_equal(p.skipped, "is not a directory");
	assert_null(p.log);
	assert_int_equal(p.removed, 0);
	free(want);
	free(link);
	free(target);
	free(dir);
	remove_tree(outside);
	remove_tree(root);
}

static void test_no_folder_yet(void **state)
{
	(void)state;
	char *root = make_tempdir(), *dir = path_join(root, CRASHLOGS_DIR);
	struct crashlogs_pruned p;
	crashlogs_prune(dir, root, 5, 123, &p);
	assert_int_equal(p.r, 0);
	assert_null(p.log);
	assert_int_equal(p.kept + p.removed, 0);
	free(dir);
	remove_tree(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_options),
	    cmocka_unit_test(test_the_newest_crashes_stay),
	    cmocka_unit_test(test_nothing_is_removed_through_a_link),
	    cmocka_unit_test(test_no_folder_yet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

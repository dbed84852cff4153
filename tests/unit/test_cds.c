/* test_cds: class-data sharing's pure parts (src/flink/cds.c, src/flink/jattach.c's request): the key of a JDK and a
 * jar set, the archive's name and whether it is whole, the choice of a launch (archive present, absent, stale), the JVM
 * options, the lines and answers of the JVM. Scratch files only, under a temporary directory. */
#include "unit.h"

#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

#include "cds.h"
#include "jattach.h"
#include "store.h"

/* A fake JDK (bin/java, lib/server/libjvm.so, lib/modules, release, the default CDS archive) and a lib/
 * directory with three jars, under one temporary directory. */
struct fixture {
	char *dir, *java, *lib;
};

static const char DYNAMIC_MAGIC[] = "\xa8\xab\x0b\xf0 the rest of an archive";

static void make_fixture(struct fixture *f)
{
	f->dir = make_tempdir();
	char *p = xasprintf("%s/jdk/bin", f->dir);
	assert_int_equal(mkdir_p(p), 0);
	free(p);
	p = xasprintf("%s/jdk/lib/server", f->dir);
	assert_int_equal(mkdir_p(p), 0);
	free(p);
	f->java = write_text(f->dir, "jdk/bin/java", "#!/bin/sh\n");
	chmod(f->java, 0755);
	free(write_text(f->dir, "jdk/lib/server/libjvm.so", "jvm"));
	free(write_text(f->dir, "jdk/lib/server/classes.jsa", "base"));
	free(write_text(f->dir, "jdk/lib/modules", "modules"));
	free(write_text(f->dir, "jdk/release", "JAVA_VERSION=\"17.0.15\"\n"));
	f->lib = xasprintf("%s/lib", f->dir);
	assert_int_equal(mkdir_p(f->lib), 0);
	free(write_text(f->lib, "flink-dist-2.2.1.jar", "dist"));
	free(write_text(f->lib, "log4j-core-2.24.3.jar", "log4j"));
	free(write_text(f->lib, "zz-connector.jar", "connector"));
	free(write_text(f->lib, "README.txt", "not a jar"));
}

static void free_fixture(struct fixture *f)
{
	remove_tree(f->dir);
	free(f->java);
	free(f->lib);
}

static void key_of(const struct fixture *f, char key[CDS_KEY_LEN + 1])
{
	assert_int_equal(cds_key(f->java, f->lib, key), 0);
	assert_int_equal(strlen(key), CDS_KEY_LEN);
	assert_int_equal(strspn(key, "0123456789abcdef"), CDS_KEY_LEN);
}

static void set_mtime(const char *path, time_t sec)
{
	struct timeval tv[2] = {{sec, 0}, {sec, 0}};
	assert_int_equal(utimes(path, tv), 0);
}

static void test_key_same_set_same_key(void **state)
{
	(void)state;
	struct fixture f;
	make_fixture(&f);
	char a[CDS_KEY_LEN + 1], b[CDS_KEY_LEN + 1];
	key_of(&f, a);
	key_of(&f, b);
	assert_string_equal(a, b);
	/* a file that is not a jar is not part of the set */
	free(write_text(f.lib, "notes.txt", "more"));
	key_of(&f, b);
	assert_string_equal(a, b);
	free_fixture(&f);
}

static void test_key_changes_with_a_jar(void **state)
{
	(void)state;
	struct fixture f;
	make_fixture(&f);
	char a[CDS_KEY_LEN + 1], b[CDS_KEY_LEN + 1];
	key_of(&f, a);
	char *jar = xasprintf("%s/log4j-core-2.24.3.jar", f.lib);
	struct stat st;
	assert_int_equal(stat(jar, &st), 0);

	/* the same size, another modification time (a jar replaced by one of the same length) */
	set_mtime(jar, st.st_mtim.tv_sec - 100);
	key_of(&f, b);
	assert_string_not_equal(a, b);
	char c[CDS_KEY_LEN + 1];
	/* another size */
	free(write_text(f.lib, "log4j-core-2.24.3.jar", "log4j, patched"));
	key_of(&f, c);
	assert_string_not_equal(b, c);
	assert_string_not_equal(a, c);
	/* a jar added, then removed again: back to the key of the set without it */
	free(write_text(f.lib, "extra.jar", "x"));
	char d[CDS_KEY_LEN + 1], e[CDS_KEY_LEN + 1];
	key_of(&f, d);
	assert_string_not_equal(c, d);
	char *extra = xasprintf("%s/extra.jar", f.lib);
	unlink(extra);
	free(extra);
	key_of(&f, e);
	assert_string_equal(c, e);
	free(jar);
	free_fixture(&f);
}

static void test_key_changes_with_the_jdk(void **state)
{
	(void)state;
	struct fixture f;
	make_fixture(&f);
	char a[CDS_KEY_LEN + 1], b[CDS_KEY_LEN + 1], c[CDS_KEY_LEN + 1];
	key_of(&f, a);
	free(write_text(f.dir, "jdk/lib/server/libjvm.so", "jvm, updated"));
	key_of(&f, b);
	assert_string_not_equal(a, b);
	free(write_text(f.dir, "jdk/release", "JAVA_VERSION=\"17.0.16\"\n"));
	key_of(&f, c);
	assert_string_not_equal(b, c);
	assert_int_equal(cds_key(f.java, "/nonexistent/lib", c), -ENOENT);
	free_fixture(&f);
}

static void test_resolve_java_and_home(void **state)
{
	(void)state;
	struct fixture f;
	make_fixture(&f);
	/* through $PATH and a symbolic link, as /usr/bin/java -> /usr/lib/jvm/.../bin/java */
	char *bindir = xasprintf("%s/usrbin", f.dir);
	assert_int_equal(mkdir_p(bindir), 0);
	char *link = xasprintf("%s/java", bindir);
	assert_int_equal(symlink(f.java, link), 0);
	char *path = xasprintf("/nonexistent:%s", bindir);
	char *real = cds_resolve_java("java", path);
	char *want = realpath(f.java, NULL);
	assert_non_null(real);
	assert_string_equal(real, want);
	char *home = cds_java_home(real);
	char *want_home = xasprintf("%s/jdk", f.dir);
	char *want_home_real = realpath(want_home, NULL);
	assert_string_equal(home, want_home_real);
	assert_null(cds_jdk_unsupported(home));
	assert_null(cds_resolve_java("java", "/nonexistent"));
	assert_null(cds_resolve_java("", path));
	/* Java 11, or no default CDS archive: not supported */
	free(write_text(f.dir, "jdk/release", "JAVA_VERSION=\"11.0.2\"\n"));
	assert_non_null(cds_jdk_unsupported(home));
	free(write_text(f.dir, "jdk/release", "JAVA_VERSION=\"21.0.1\"\n"));
	assert_null(cds_jdk_unsupported(home));
	char *base = xasprintf("%s/lib/server/classes.jsa", home);
	unlink(base);
	assert_non_null(strstr(cds_jdk_unsupported(home), "classes.jsa"));
	free(base);
	free(real);
	free(want);
	free(home);
	free(want_home);
	free(want_home_real);
	free(path);
	free(link);
	free(bindir);
	free_fixture(&f);
}

static void test_user_options(void **state)
{
	(void)state;
	assert_false(cds_user_options(NULL));
	assert_false(cds_user_options(""));
	assert_false(cds_user_options("-Xss2m -XX:+UseG1GC"));
	assert_true(cds_user_options("-Xss2m -Xshare:off"));
	assert_true(cds_user_options("-XX:SharedArchiveFile=/opt/app.jsa"));
	assert_true(cds_user_options("-XX:ArchiveClassesAtExit=/tmp/a.jsa"));
	assert_true(cds_user_options("-XX:+AutoCreateSharedArchive"));
}

static char *write_archive(const char *dir, const char *prefix, const char *content, size_t len)
{
	char *name = cds_archive_name(prefix, len);
	char *path = write_text_n(dir, name, content, len);
	free(name);
	return path;
}

static void test_choice_present_absent_stale(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *prefix = cds_archive_prefix("2.2.1", "0123456789abcdef");
	assert_string_equal(prefix, "flink-2.2.1-0123456789abcdef-");
	char *path = NULL;
	const char *bad = NULL;

	/* absent: record for a dump, or nothing when no more dumps are allowed */
	assert_int_equal(cds_choose(dir, prefix, true, &path, &bad), CDS_RECORD);
	assert_null(path);
	assert_null(bad);
	assert_int_equal(cds_choose(dir, prefix, false, &path, &bad), CDS_NONE);
	assert_int_equal(cds_choose("/nonexistent/cds", prefix, true, &path, &bad), CDS_RECORD);

	/* present and whole: used */
	char *good = write_archive(dir, prefix, DYNAMIC_MAGIC, sizeof(DYNAMIC_MAGIC));
	assert_int_equal(cds_choose(dir, prefix, true, &path, &bad), CDS_USE);
	assert_string_equal(path, good);
	assert_null(bad);
	free(path);
	/* another key's archive is not this key's */
	char *other = cds_archive_prefix("2.2.1", "fedcba9876543210");
	assert_int_equal(cds_choose(dir, other, true, &path, &bad), CDS_RECORD);
	assert_null(path);

	/* truncated: its size is not its name's; never used (a JVM would die of SIGBUS), named for removal */
	assert_int_equal(truncate(good, 10), 0);
	assert_int_equal(cds_choose(dir, prefix, true, &path, &bad), CDS_RECORD);
	assert_string_equal(path, good);
	assert_non_null(strstr(bad, "size"));
	free(path);
	assert_int_equal(cds_find(dir, prefix, &path), -EBADMSG);
	free(path);
	unlink(good);
	free(good);

	/* the right size but not an archive */
	static const char junk[] = "PK\x03\x04 a zip, say";
	char *j = write_archive(dir, prefix, junk, sizeof(junk));
	assert_false(cds_is_dynamic_archive(j));
	assert_int_equal(cds_choose(dir, prefix, true, &path, &bad), CDS_RECORD);
	assert_string_equal(path, j);
	assert_non_null(strstr(bad, "header"));
	free(path);
	unlink(j);

	/* a directory with an archive's name: never used, named (left in place); a regular archive beside it wins */
	char *dname = cds_archive_name(prefix, 4096);
	char *d = path_join(dir, dname);
	assert_int_equal(mkdir(d, 0700), 0);
	assert_int_equal(cds_choose(dir, prefix, true, &path, &bad), CDS_RECORD);
	assert_string_equal(path, d);
	assert_string_equal(bad, CDS_NOT_A_FILE);
	free(path);
	char *real = write_archive(dir, prefix, DYNAMIC_MAGIC, sizeof(DYNAMIC_MAGIC));
	assert_int_equal(cds_choose(dir, prefix, true, &path, &bad), CDS_USE);
	assert_string_equal(path, real);
	assert_null(bad);
	free(path);
	unlink(real);
	free(real);
	rmdir(d);
	free(d);
	free(dname);
	free(j);
	free(other);
	free(prefix);
	remove_tree(dir);
}

static void test_remove_others(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *mine = cds_archive_prefix("2.2.1", "0123456789abcdef");
	char *old = cds_archive_prefix("2.2.0", "fedcba9876543210");
	char *keep = write_archive(dir, mine, DYNAMIC_MAGIC, sizeof(DYNAMIC_MAGIC));
	char *stale = write_archive(dir, old, DYNAMIC_MAGIC, sizeof(DYNAMIC_MAGIC));
	char *fresh_dump = write_text(dir, ".flink-2.2.1-0123456789abcdef-dump-42.tmp", "being written");
	char *old_dump = write_text(dir, ".flink-2.2.1-0123456789abcdef-dump-41.tmp", "left behind");
	set_mtime(old_dump, time(NULL) - 7200);
	char *other = write_text(dir, "notes.txt", "not ours");
	assert_int_equal(cds_remove_others(dir, keep), 2);
	assert_int_equal(access(keep, F_OK), 0);
	assert_int_equal(access(fresh_dump, F_OK), 0); /* another flinklet may be writing it */
	assert_int_equal(access(other, F_OK), 0);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(old_dump, F_OK), -1);
	free(mine);
	free(old);
	free(keep);
	free(stale);
	free(fresh_dump);
	free(old_dump);
	free(other);
	remove_tree(dir);
}

static void test_mapped(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *path = write_text(dir, "mapped.jsa", "some bytes to map");
	char *real = realpath(path, NULL);
	assert_int_equal(cds_mapped(getpid(), real), 0);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	void *m = mmap(NULL, 16, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(cds_mapped(getpid(), real), 1);
	/* a path that only ends like it is another file */
	char *suffix = xasprintf("%s", strrchr(real, '/'));
	assert_int_equal(cds_mapped(getpid(), suffix), 0);
	munmap(m, 16);
	close(fd);
	assert_int_equal(cds_mapped(getpid(), real), 0);
	assert_true(cds_mapped(0x7ffffff0, real) < 0);
	free(suffix);
	free(real);
	free(path);
	remove_tree(dir);
}

static void test_jvm_options(void **state)
{
	(void)state;
	struct strv v = {0};
	cds_jvm_options(NULL, false, &v);
	assert_int_equal(v.n, 0);
	cds_jvm_options("/s/cds/flink-2.2.1-k-5.jsa", false, &v);
	assert_int_equal(v.n, 1);
	assert_string_equal(v.v[0], "-XX:SharedArchiveFile=/s/cds/flink-2.2.1-k-5.jsa");
	strv_free(&v);
	cds_jvm_options(NULL, true, &v);
	assert_int_equal(v.n, 2);
	assert_string_equal(v.v[0], "-XX:+RecordDynamicDumpInfo");
	assert_string_equal(v.v[1], "-Xlog:cds=off");
	strv_free(&v);
	/* never both: the JVM refuses -XX:+RecordDynamicDumpInfo on top of a dynamic archive */
	cds_jvm_options("/a.jsa", true, &v);
	assert_int_equal(v.n, 1);
	strv_free(&v);
}

static void test_lines_and_answers(void **state)
{
	(void)state;
	assert_true(cds_line_is_warning("[0.134s][warning][cds,dynamic] Unable to use shared archive. The top archive "
	                                "failed to load: /s/cds/a.jsa"));
	assert_true(cds_line_is_warning("[0.101s][error][cds] An error has occurred while processing the shared "
	                                "archive file."));
	assert_true(cds_line_is_warning("[1.2s][warning][cds] Skipping org/x/Y: Not linked"));
	assert_false(cds_line_is_warning("[0.1s][warning][gc] something else"));
	assert_false(cds_line_is_warning("[0.1s][warning][cdsx] not the cds tag"));
	assert_false(cds_line_is_warning("2026-12-02 05:19:59,150 INFO  CliFrontend - -XX:SharedArchiveFile=/a.jsa"));

	assert_true(cds_dump_answer_ok("0\nDynamic dump:\n"));
	assert_false(cds_dump_answer_ok(NULL));
	assert_false(cds_dump_answer_ok(""));
	assert_false(cds_dump_answer_ok("-1\n"));
	assert_false(cds_dump_answer_ok("0\njava.lang.RuntimeException: Cannot dump\n"));
	assert_false(cds_dump_answer_ok("0\nError: -XX:+RecordDynamicDumpInfo is required\n"));
}

static void test_attach_request(void **state)
{
	(void)state;
	char buf[128];
	ssize_t n = jattach_request("VM.cds dynamic_dump /s/a.tmp", buf, sizeof(buf));
	static const char want[] = "1\0jcmd\0VM.cds dynamic_dump /s/a.tmp\0\0";
	assert_int_equal(n, (ssize_t)sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(jattach_request("VM.cds dynamic_dump /s/a.tmp", buf, 20), -ENOSPC);
	assert_non_null(jattach_strexit(JATTACH_NO_LISTENER));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_key_same_set_same_key),
	    cmocka_unit_test(test_key_changes_with_a_jar),
	    cmocka_unit_test(test_key_changes_with_the_jdk),
	    cmocka_unit_test(test_resolve_java_and_home),
	    cmocka_unit_test(test_user_options),
	    cmocka_unit_test(test_choice_present_absent_stale),
	    cmocka_unit_test(test_remove_others),
	    cmocka_unit_test(test_mapped),
	    cmocka_unit_test(test_jvm_options),
	    cmocka_unit_test(test_lines_and_answers),
	    cmocka_unit_test(test_attach_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

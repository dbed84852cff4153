/* test_snapshots: restore-point discovery over real directory trees in a temporary directory: the
 * job's checkpoints (<ck>/<jobId>/chk-N/_metadata), its savepoints (<sp>/savepoint-<jobId6>-<hex>/_metadata),
 * recorded savepoints elsewhere, the initial savepoint; the _metadata header check (Flink's magic number
 * 0x4960672d, a version, the big-endian checkpoint id); newest-first ordering by that id, whatever the
 * _metadata mtimes say (every test sets them explicitly, mostly the wrong way round: what `cp -r`, a backup
 * restore or a clock step leave); savepoint_present and savepoint_find_newest.
 */
#include "unit.h"

#include <time.h>

#include "snapshots.h"
#include "store.h"

#define JOB "a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define JOB6 "a1b2c3"
#define OTHER_JOB "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define T0 ((time_t)1700000000)

/* ---- building trees ---- */

struct tree {
	char *root; /* the temporary directory */
	char *ck;   /* <root>/checkpoints */
	char *sp;   /* <root>/savepoints */
};

static void tree_init(struct tree *t)
{
	t->root = make_tempdir();
	t->ck = path_join(t->root, "checkpoints");
	t->sp = path_join(t->root, "savepoints");
}

static void tree_free(struct tree *t)
{
	free(t->ck);
	free(t->sp);
	remove_tree(t->root);
	memset(t, 0, sizeof(*t));
}

static usec_t usec_at(time_t sec, long nsec)
{
	return (usec_t)sec * USEC_PER_SEC + (usec_t)nsec / 1000;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void put_be64(unsigned char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* Creates dir (and its parents) and writes dir/_metadata holding len bytes, with the mtime sec.nsec. */
static void write_metadata_raw(const char *dir, const void *bytes, size_t len, time_t sec, long nsec)
{
	assert_int_equal(mkdir_p(dir), 0);
	char *meta = path_join(dir, "_metadata");
	int fd = open(meta, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		print_error("open(%s): %s\n", meta, strerror(errno));
		fail();
	}
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	const struct timespec ts[2] = {{.tv_sec = sec, .tv_nsec = nsec}, {.tv_sec = sec, .tv_nsec = nsec}};
	assert_int_equal(futimens(fd, ts), 0);
	assert_int_equal(close(fd), 0);
	free(meta);
}

/* A real-looking _metadata: magic, version 6, the checkpoint id, then some serialized state. */
static void write_metadata(const char *dir, int64_t id, time_t sec, long nsec)
{
	unsigned char buf[96];
	put_be32(buf, 0x4960672dU);
	put_be32(buf + 4, 6);
	put_be64(buf + 8, (uint64_t)id);
	for (size_t i = 16; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 37u + 11u);
	write_metadata_raw(dir, buf, sizeof(buf), sec, nsec);
}

/* <ck>/<job>/<name> with a valid _metadata of the given id and mtime; returns the directory. */
static char *make_checkpoint(const struct tree *t, const char *job, const char *name, int64_t id, time_t sec)
{
	char *dir = xasprintf("%s/%s/%s", t->ck, job, name);
	write_metadata(dir, id, sec, 0);
	return dir;
}

/* <parent>/<name> with a valid _metadata; returns the directory. */
static char *make_savepoint(const char *parent, const char *name, int64_t id, time_t sec)
{
	char *dir = path_join(parent, name);
	write_metadata(dir, id, sec, 0);
	return dir;
}

/* The shared/ and taskowned/ directories and a state file that Flink keeps next to chk-N. */
static void add_flink_clutter(const struct tree *t, const char *job)
{
	char *shared = xasprintf("%s/%s/shared", t->ck, job);
	char *owned = xasprintf("%s/%s/taskowned", t->ck, job);
	assert_int_equal(mkdir_p(shared), 0);
	assert_int_equal(mkdir_p(owned), 0);
	free(write_text(shared, "1b3c4a0e-7d52-4f0c-9a07-6f1a2c3d4e5f", "sst bytes"));
	free(shared);
	free(owned);
}

static int scan_tree(const struct tree *t, const char *const *recorded, const char *initial, bool first_start,
                     struct restore_list *list)
{
	const struct restore_scan scan = {
	    .checkpoint_dir = t->ck,
	    .savepoint_dir = t->sp,
	    .job_id = JOB,
	    .recorded_savepoints = recorded,
	    .initial_savepoint = initial,
	    .first_start = first_start,
	};
	return restore_points_scan(&scan, list);
}

static char *skipped_join(const struct restore_list *l)
{
	struct strbuf b = {0};
	for (size_t i = 0; i < l->skipped.n; i++) {
		if (i)
			strbuf_append(&b, "\n");
		strbuf_append(&b, l->skipped.v[i]);
	}
	return strbuf_steal(&b);
}

static void dump_list(const struct restore_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		print_error("  [%zu] %s %s id=%lld time=%llu%s\n", i, restore_kind_to_string(l->v[i].kind),
		            l->v[i].path, (long long)l->v[i].id, (unsigned long long)l->v[i].time,
		            l->v[i].initial ? " initial" : "");
	for (size_t i = 0; i < l->skipped.n; i++)
		print_error("  skipped: %s\n", l->skipped.v[i]);
}

static void assert_point_at(const struct restore_list *l, size_t i, enum restore_kind kind, const char *path,
                            int64_t id, const char *file, int line)
{
	if (i < l->n && l->v[i].kind == kind && !strcmp(l->v[i].path, path) && l->v[i].id == id)
		return;
	print_error("expected [%zu] %s %s id=%lld in\n", i, restore_kind_to_string(kind), path, (long long)id);
	dump_list(l);
	_fail(file, line);
}

#define assert_point(l, i, kind, path, id) assert_point_at((l), (i), (kind), (path), (id), __FILE__, __LINE__)

static void assert_count_at(const struct restore_list *l, size_t n, size_t skipped, const char *file, int line)
{
	if (l->n == n && l->skipped.n == skipped)
		return;
	print_error("expected %zu points and %zu skipped lines, got %zu and %zu:\n", n, skipped, l->n, l->skipped.n);
	dump_list(l);
	_fail(file, line);
}

#define assert_count(l, n, skipped) assert_count_at((l), (n), (skipped), __FILE__, __LINE__)

/* ---- restore_points_scan ---- */

static void test_scan_missing_and_empty(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	struct restore_list list;

	/* neither directory exists */
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 0, 0);
	assert_null(list.v);
	restore_list_free(&list);

	/* both exist, the job's checkpoint directory does not */
	assert_int_equal(mkdir_p(t.ck), 0);
	assert_int_equal(mkdir_p(t.sp), 0);
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 0, 0);
	restore_list_free(&list);

	/* the job's directory with only shared/ and taskowned/ (before the first checkpoint completes) */
	add_flink_clutter(&t, JOB);
	const char *const none[] = {NULL};
	assert_int_equal(scan_tree(&t, none, NULL, false, &list), 0);
	assert_count(&list, 0, 0);
	restore_list_free(&list);
	/* freeing twice is harmless: the list is reset */
	restore_list_free(&list);
	assert_int_equal(list.n, 0);
	tree_free(&t);
}

static void test_scan_unreadable_dir(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	struct restore_list list;

	/* the job's checkpoint "directory" is a file */
	assert_int_equal(mkdir_p(t.ck), 0);
	free(write_text(t.ck, JOB, "not a directory"));
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), -ENOTDIR);
	restore_list_free(&list);

	/* the savepoint directory is a file, after a readable checkpoint directory */
	char *ck2 = path_join(t.root, "ck2");
	char *c = xasprintf("%s/%s/chk-1", ck2, JOB);
	write_metadata(c, 1, T0, 0);
	free(write_text(t.root, "savepoints", "not a directory"));
	const struct restore_scan scan = {.checkpoint_dir = ck2, .savepoint_dir = t.sp, .job_id = JOB};
	assert_int_equal(restore_points_scan(&scan, &list), -ENOTDIR);
	restore_list_free(&list); /* no leak of what was found before the error */
	free(c);
	free(ck2);
	tree_free(&t);
}

static void test_scan_incomplete_checkpoint_is_skipped_and_said(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	add_flink_clutter(&t, JOB);
	char *good = make_checkpoint(&t, JOB, "chk-6", 6, T0 + 60);
	/* chk-7 was being written when the JVM died: state files, no _metadata */
	char *incomplete = xasprintf("%s/%s/chk-7", t.ck, JOB);
	assert_int_equal(mkdir_p(incomplete), 0);
	free(write_text(incomplete, "8c2e5b1a-0d4f-4e3b-a6c7-9d8e7f6a5b4c", "operator state"));

	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 1, 1);
	assert_non_null(strstr(list.skipped.v[0], "chk-7/_metadata: no _metadata (incomplete)"));
	assert_point(&list, 0, RESTORE_CHECKPOINT, good, 6);
	assert_int_equal(list.v[0].time, usec_at(T0 + 60, 0));
	assert_false(list.v[0].initial);
	restore_list_free(&list);
	free(good);
	free(incomplete);
	tree_free(&t);
}

static void test_scan_corrupt_metadata_is_skipped(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *good = make_checkpoint(&t, JOB, "chk-1", 1, T0);

	/* bad magic (the newest, so it would be chosen if it were accepted) */
	unsigned char bad[32] = {0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 9};
	char *bad_magic = xasprintf("%s/%s/chk-9", t.ck, JOB);
	write_metadata_raw(bad_magic, bad, sizeof(bad), T0 + 90, 0);

	/* truncated: a valid magic, then the file ends before the id */
	unsigned char hdr[16];
	put_be32(hdr, 0x4960672dU);
	put_be32(hdr + 4, 6);
	put_be64(hdr + 8, 8);
	char *truncated = xasprintf("%s/%s/chk-8", t.ck, JOB);
	write_metadata_raw(truncated, hdr, 12, T0 + 80, 0);

	/* empty */
	char *empty = xasprintf("%s/%s/chk-7", t.ck, JOB);
	write_metadata_raw(empty, "", 0, T0 + 70, 0);

	/* _metadata is a directory */
	char *dir_meta = xasprintf("%s/%s/chk-6/_metadata", t.ck, JOB);
	assert_int_equal(mkdir_p(dir_meta), 0);

	/* _metadata is a symbolic link to a valid one (never followed) */
	char *link_dir = xasprintf("%s/%s/chk-5", t.ck, JOB);
	assert_int_equal(mkdir_p(link_dir), 0);
	char *good_meta = path_join(good, "_metadata");
	char *link_meta = path_join(link_dir, "_metadata");
	assert_int_equal(symlink(good_meta, link_meta), 0);

	/* a savepoint with a bad magic number, and one without _metadata */
	char *sp_bad = path_join(t.sp, "savepoint-" JOB6 "-0123456789ab");
	write_metadata_raw(sp_bad, bad, sizeof(bad), T0 + 100, 0);
	char *sp_incomplete = path_join(t.sp, "savepoint-" JOB6 "-ba9876543210");
	assert_int_equal(mkdir_p(sp_incomplete), 0);

	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 1, 7);
	assert_point(&list, 0, RESTORE_CHECKPOINT, good, 1);
	char *why = skipped_join(&list);
	assert_contains(why, bad_magic);
	assert_contains(why, "bad magic number 0xdeadbeef");
	assert_contains(why, truncated);
	assert_contains(why, "truncated (12 bytes)");
	assert_contains(why, empty);
	assert_contains(why, "truncated (0 bytes)");
	assert_contains(why, dir_meta);
	assert_contains(why, "not a regular file");
	assert_contains(why, link_meta);
	assert_contains(why, sp_bad);
	assert_contains(why, sp_incomplete);
	assert_contains(why, "skipped checkpoint ");
	assert_contains(why, "skipped savepoint ");
	assert_not_contains(why, good);
	free(why);
	/* damaged (a _metadata that is there but not Flink's), as opposed to incomplete (none: a crash in the
	 * middle of a checkpoint) or not flinklet's business (a symbolic link): the candidates of a rewind */
	assert_int_equal(list.ncorrupt, 5);
	size_t seen = 0;
	for (size_t i = 0; i < list.ncorrupt; i++) {
		const struct corrupt_point *c = &list.corrupt[i];
		assert_null(strstr(c->path, "chk-5"));
		assert_null(strstr(c->path, "ba9876543210"));
		if (!strcmp(c->path, bad_magic)) {
			assert_int_equal(c->id, 9); /* from the name: the header is what cannot be read */
			assert_true(corrupt_point_is_newer(c, &list.v[0]));
			seen++;
		} else if (!strcmp(c->path, sp_bad)) {
			assert_int_equal(c->kind, RESTORE_SAVEPOINT);
			assert_int_equal(c->id, -1);
			/* no id to compare: the time decides, and it is newer than the good checkpoint's */
			assert_true(corrupt_point_is_newer(c, &list.v[0]));
			seen++;
		}
		assert_true(corrupt_point_is_newer(c, NULL));
	}
	assert_int_equal(seen, 2);
	restore_list_free(&list);

	/* put aside by an earlier start: counted, never restored from */
	char *aside = xasprintf("%s.unreadable", bad_magic);
	assert_int_equal(rename(bad_magic, aside), 0);
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_int_equal(list.given_up, 1);
	assert_int_equal(list.ncorrupt, 4);
	restore_list_free(&list);
	free(aside);

	free(good);
	free(bad_magic);
	free(truncated);
	free(empty);
	free(dir_meta);
	free(link_dir);
	free(good_meta);
	free(link_meta);
	free(sp_bad);
	free(sp_incomplete);
	tree_free(&t);
}

static void test_scan_newest_first_by_id_not_mtime(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	add_flink_clutter(&t, JOB);
	/* the times run against the ids: the lower the id, the newer its _metadata (a volume copied back to
	 * front); the id decides */
	char *c10 = make_checkpoint(&t, JOB, "chk-10", 10, T0 + 300);
	char *c12 = make_checkpoint(&t, JOB, "chk-12", 12, T0 + 100);
	char *c11 = make_checkpoint(&t, JOB, "chk-11", 11, T0 + 200);
	char *c9 = xasprintf("%s/%s/chk-9", t.ck, JOB);
	write_metadata(c9, 9, T0 + 300, 999999000);

	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 4, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c12, 12);
	assert_point(&list, 1, RESTORE_CHECKPOINT, c11, 11);
	assert_point(&list, 2, RESTORE_CHECKPOINT, c10, 10);
	assert_point(&list, 3, RESTORE_CHECKPOINT, c9, 9);
	/* the mtimes are still read (sub-second too): they break ties */
	assert_int_equal(list.v[0].time, usec_at(T0 + 100, 0));
	assert_int_equal(list.v[3].time, usec_at(T0 + 300, 999999000));
	for (size_t i = 0; i < list.n; i++) {
		assert_false(list.v[i].initial);
		assert_true(list.v[i].path[0] == '/');
	}
	restore_list_free(&list);

	/* all the same time (what `cp -r` of a small volume leaves): the same order */
	const char *const all[] = {c9, c10, c11, c12};
	for (size_t i = 0; i < 4; i++)
		write_metadata(all[i], (int64_t)(9 + i), T0 + 1000, 0);
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 4, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c12, 12);
	assert_point(&list, 3, RESTORE_CHECKPOINT, c9, 9);
	restore_list_free(&list);
	free(c9);
	free(c10);
	free(c11);
	free(c12);
	tree_free(&t);
}

static void test_scan_touched_savepoint_does_not_beat_newer_checkpoints(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	/* savepoint 7, then checkpoints 8 and 9; then the savepoint's files were touched (or the clock stepped
	 * back after it): the newest mtime is the savepoint's, the newest restore point is chk-9 */
	char *sp = make_savepoint(t.sp, "savepoint-" JOB6 "-7a7a7a7a7a7a", 7, T0 + 9000);
	char *c8 = make_checkpoint(&t, JOB, "chk-8", 8, T0 + 20);
	char *c9 = make_checkpoint(&t, JOB, "chk-9", 9, T0 + 30);
	/* and recorded in status.json, as flinklet records the savepoints it takes */
	char *uri = file_uri_from_path(sp);
	const char *const recorded[] = {uri, NULL};

	struct restore_list list;
	assert_int_equal(scan_tree(&t, recorded, NULL, false, &list), 0);
	assert_count(&list, 3, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c9, 9);
	assert_point(&list, 1, RESTORE_CHECKPOINT, c8, 8);
	assert_point(&list, 2, RESTORE_SAVEPOINT, sp, 7);
	restore_list_free(&list);

	/* the other way round: a savepoint taken after the checkpoints, with the oldest mtime of all */
	char *sp10 = make_savepoint(t.sp, "savepoint-" JOB6 "-101010101010", 10, T0 - 9000);
	assert_int_equal(scan_tree(&t, recorded, NULL, false, &list), 0);
	assert_count(&list, 4, 0);
	assert_point(&list, 0, RESTORE_SAVEPOINT, sp10, 10);
	assert_point(&list, 1, RESTORE_CHECKPOINT, c9, 9);
	restore_list_free(&list);
	free(sp);
	free(sp10);
	free(c8);
	free(c9);
	free(uri);
	tree_free(&t);
}

static void test_scan_same_id_tie_break(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *elsewhere = path_join(t.root, "elsewhere");
	/* the same id twice only happens across a fork or a copy. A checkpoint and a savepoint of one id: the
	 * checkpoint first, whatever the times (the savepoint is newer here) */
	char *c4 = make_checkpoint(&t, JOB, "chk-4", 4, T0 + 50);
	char *c5 = make_checkpoint(&t, JOB, "chk-5", 5, T0);
	char *s5 = make_savepoint(t.sp, "savepoint-" JOB6 "-5e5e5e5e5e5e", 5, T0 + 100);
	/* two savepoints of one id: the newer _metadata first */
	char *s3_old = make_savepoint(t.sp, "savepoint-" JOB6 "-0303030303aa", 3, T0 + 10);
	char *s3_new = make_savepoint(t.sp, "savepoint-" JOB6 "-0303030303bb", 3, T0 + 20);
	/* the same id and the same time: the path decides, so that the order never depends on readdir */
	char *s2_b = make_savepoint(elsewhere, "savepoint-" JOB6 "-0202020202bb", 2, T0);
	char *s2_a = make_savepoint(t.sp, "savepoint-" JOB6 "-0202020202aa", 2, T0);
	const char *const recorded[] = {s2_b, NULL};

	struct restore_list list;
	assert_int_equal(scan_tree(&t, recorded, NULL, false, &list), 0);
	assert_count(&list, 7, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c5, 5);
	assert_point(&list, 1, RESTORE_SAVEPOINT, s5, 5);
	assert_point(&list, 2, RESTORE_CHECKPOINT, c4, 4);
	assert_point(&list, 3, RESTORE_SAVEPOINT, s3_new, 3);
	assert_point(&list, 4, RESTORE_SAVEPOINT, s3_old, 3);
	const char *first = strcmp(s2_a, s2_b) < 0 ? s2_a : s2_b, *second = first == s2_a ? s2_b : s2_a;
	assert_point(&list, 5, RESTORE_SAVEPOINT, first, 2);
	assert_point(&list, 6, RESTORE_SAVEPOINT, second, 2);
	restore_list_free(&list);
	free(elsewhere);
	free(c4);
	free(c5);
	free(s5);
	free(s3_old);
	free(s3_new);
	free(s2_a);
	free(s2_b);
	tree_free(&t);
}

static void test_scan_savepoints_interleave(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *c9 = make_checkpoint(&t, JOB, "chk-9", 9, T0 + 50);
	char *c10 = make_checkpoint(&t, JOB, "chk-10", 10, T0 + 100);
	/* a savepoint taken after every checkpoint, and an old one from before them */
	char *newer = make_savepoint(t.sp, "savepoint-" JOB6 "-3c5d7e9f1a2b", 11, T0 + 200);
	char *older = make_savepoint(t.sp, "savepoint-" JOB6 "-0a1b2c3d4e5f", 3, T0 + 20);

	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 4, 0);
	assert_point(&list, 0, RESTORE_SAVEPOINT, newer, 11);
	assert_point(&list, 1, RESTORE_CHECKPOINT, c10, 10);
	assert_point(&list, 2, RESTORE_CHECKPOINT, c9, 9);
	assert_point(&list, 3, RESTORE_SAVEPOINT, older, 3);
	assert_int_equal(list.v[0].time, usec_at(T0 + 200, 0));
	assert_int_equal(list.v[3].time, usec_at(T0 + 20, 0));
	restore_list_free(&list);
	free(c9);
	free(c10);
	free(newer);
	free(older);
	tree_free(&t);
}

static void test_scan_ignores_other_jobs_and_names(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	add_flink_clutter(&t, JOB);
	add_flink_clutter(&t, OTHER_JOB);
	char *mine = make_checkpoint(&t, JOB, "chk-3", 3, T0);
	char *mine_sp = make_savepoint(t.sp, "savepoint-" JOB6 "-aaaaaaaaaaaa", 2, T0 - 10);

	/* every one of these is newer and valid, and none belongs to the job's restore points */
	char *keep[16];
	size_t n = 0;
	keep[n++] = make_checkpoint(&t, OTHER_JOB, "chk-50", 50, T0 + 500);
	keep[n++] = make_savepoint(t.sp, "savepoint-0f1e2d-bbbbbbbbbbbb", 51, T0 + 510);
	keep[n++] = make_savepoint(t.sp, "savepoint-a1b2c4-cccccccccccc", 52, T0 + 520);
	keep[n++] = make_savepoint(t.sp, "savepoint-" JOB, 53, T0 + 530); /* no "-" after the 6 */
	keep[n++] = make_savepoint(t.sp, "Savepoint-" JOB6 "-dddddddddddd", 54, T0 + 540);
	keep[n++] = make_checkpoint(&t, JOB, "chk-x", 60, T0 + 600);
	keep[n++] = make_checkpoint(&t, JOB, "chk-", 61, T0 + 610);
	keep[n++] = make_checkpoint(&t, JOB, "chk-12abc", 62, T0 + 620);
	keep[n++] = make_checkpoint(&t, JOB, "chk--4", 63, T0 + 630);
	keep[n++] = make_checkpoint(&t, JOB, "chk-7.tmp", 64, T0 + 640);
	keep[n++] = make_checkpoint(&t, JOB, "savepoint-" JOB6 "-eeeeeeeeeeee", 65, T0 + 650);
	keep[n++] = make_checkpoint(&t, JOB, "ckp-8", 66, T0 + 660);
	keep[n++] = make_savepoint(t.sp, "chk-9", 67, T0 + 670); /* a checkpoint name in the savepoint dir */
	/* given up by an earlier start (Flink could not read them) and renamed aside */
	keep[n++] = make_savepoint(t.sp, "savepoint-" JOB6 "-ffffffffffff.unreadable", 68, T0 + 680);
	keep[n++] = make_checkpoint(&t, JOB, "chk-69.unreadable", 69, T0 + 690);

	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 2, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, mine, 3);
	assert_point(&list, 1, RESTORE_SAVEPOINT, mine_sp, 2);
	restore_list_free(&list);
	for (size_t i = 0; i < n; i++)
		free(keep[i]);
	free(mine);
	free(mine_sp);
	tree_free(&t);
}

static void test_scan_id_from_header(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	/* the directory says 5, the header says 42: the header wins */
	char *c5 = make_checkpoint(&t, JOB, "chk-5", 42, T0 + 10);
	/* all 64 bits, big-endian (and compared as such: above the savepoint's, below it in time) */
	char *c6 = make_checkpoint(&t, JOB, "chk-6", (int64_t)0x0000000100000002LL, T0 + 20);
	/* a savepoint's header carries the id of the checkpoint it was */
	char *sp = make_savepoint(t.sp, "savepoint-" JOB6 "-00000000beef", 1234567, T0 + 30);

	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_count(&list, 3, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c6, 4294967298LL);
	assert_point(&list, 1, RESTORE_SAVEPOINT, sp, 1234567);
	assert_point(&list, 2, RESTORE_CHECKPOINT, c5, 42);
	restore_list_free(&list);
	free(c5);
	free(c6);
	free(sp);
	tree_free(&t);
}

static void test_scan_recorded_savepoints(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *elsewhere = path_join(t.root, "elsewhere");
	char *c1 = make_checkpoint(&t, JOB, "chk-1", 1, T0 + 10);
	/* recorded savepoints outside the savepoint directory (an earlier targetDirectory, say) */
	char *abs_sp = make_savepoint(elsewhere, "savepoint-" JOB6 "-111111111111", 20, T0 + 20);
	char *uri_sp = make_savepoint(elsewhere, "savepoint-" JOB6 "-222222222222", 30, T0 + 30);
	char *flink_sp = make_savepoint(elsewhere, "savepoint-" JOB6 "-333333333333", 5, T0 + 5);
	char *uri = file_uri_from_path(uri_sp);
	char *flink_uri = xasprintf("file:%s", flink_sp); /* the form Flink's REST API reports */
	/* recorded, then deleted by hand */
	char *gone = path_join(elsewhere, "savepoint-" JOB6 "-444444444444");
	char *gone_uri = file_uri_from_path(gone);
	/* recorded, and now corrupt */
	char *corrupt = path_join(elsewhere, "savepoint-" JOB6 "-555555555555");
	static const char zip[] = "PK\3\4 not a checkpoint at all";
	write_metadata_raw(corrupt, zip, sizeof(zip) - 1, T0 + 40, 0);

	const char *const recorded[] = {uri, abs_sp, gone_uri, flink_uri, corrupt, NULL};
	struct restore_list list;
	assert_int_equal(scan_tree(&t, recorded, NULL, false, &list), 0);
	assert_count(&list, 4, 2);
	assert_point(&list, 0, RESTORE_SAVEPOINT, uri_sp, 30);
	assert_point(&list, 1, RESTORE_SAVEPOINT, abs_sp, 20);
	assert_point(&list, 2, RESTORE_SAVEPOINT, flink_sp, 5); /* its id is above chk-1's, its mtime below */
	assert_point(&list, 3, RESTORE_CHECKPOINT, c1, 1);
	char *why = skipped_join(&list);
	assert_contains(why, "recorded savepoint");
	assert_contains(why, gone);
	assert_contains(why, corrupt);
	assert_contains(why, "bad magic");
	free(why);
	restore_list_free(&list);

	free(elsewhere);
	free(c1);
	free(abs_sp);
	free(uri_sp);
	free(flink_sp);
	free(uri);
	free(flink_uri);
	free(gone);
	free(gone_uri);
	free(corrupt);
	tree_free(&t);
}

static void test_scan_recorded_savepoint_of_an_earlier_job_is_left_out(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	/* status.json still records the savepoints of the job id before a stateless start: their ids (here far
	 * above the new job's) count from another start and say nothing about this job */
	char *c3 = make_checkpoint(&t, JOB, "chk-3", 3, T0);
	char *old_sp = make_savepoint(t.sp, "savepoint-0f1e2d-abcabcabcabc", 500, T0 - 100);
	char *old_uri = file_uri_from_path(old_sp);
	char *old_slash = xasprintf("%s/", old_sp);
	char *mine = make_savepoint(t.sp, "savepoint-" JOB6 "-010101010101", 2, T0 - 50);
	char *mine_slash = xasprintf("%s/", mine); /* a trailing '/' is the same name */
	const char *const recorded[] = {old_uri, old_slash, mine_slash, NULL};

	struct restore_list list;
	assert_int_equal(scan_tree(&t, recorded, NULL, false, &list), 0);
	assert_count(&list, 2, 0);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c3, 3);
	assert_point(&list, 1, RESTORE_SAVEPOINT, mine, 2);
	restore_list_free(&list);

	/* the earlier job's own view: the same directory is its savepoint */
	const struct restore_scan other = {.checkpoint_dir = t.ck, .savepoint_dir = t.sp, .job_id = OTHER_JOB};
	assert_int_equal(restore_points_scan(&other, &list), 0);
	assert_count(&list, 1, 0);
	assert_point(&list, 0, RESTORE_SAVEPOINT, old_sp, 500);
	restore_list_free(&list);
	free(c3);
	free(old_sp);
	free(old_uri);
	free(old_slash);
	free(mine);
	free(mine_slash);
	tree_free(&t);
}

static void test_scan_recorded_and_in_dir_once(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *c1 = make_checkpoint(&t, JOB, "chk-1", 1, T0 + 10);
	char *sp = make_savepoint(t.sp, "savepoint-" JOB6 "-abcdefabcdef", 2, T0 + 20);
	char *uri = file_uri_from_path(sp);
	char *flink_uri = xasprintf("file:%s", sp);
	const char *const recorded[] = {uri, sp, flink_uri, uri, NULL};

	struct restore_list list;
	assert_int_equal(scan_tree(&t, recorded, NULL, false, &list), 0);
	assert_count(&list, 2, 0);
	assert_point(&list, 0, RESTORE_SAVEPOINT, sp, 2);
	assert_point(&list, 1, RESTORE_CHECKPOINT, c1, 1);
	restore_list_free(&list);
	free(c1);
	free(sp);
	free(uri);
	free(flink_uri);
	tree_free(&t);
}

static void test_scan_initial_savepoint(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *seed_dir = path_join(t.root, "seed");
	/* the initial savepoint usually comes from another job: its own prefix */
	char *initial = make_savepoint(seed_dir, "savepoint-0f1e2d-777777777777", 77, T0 - 1000);
	char *initial_uri = file_uri_from_path(initial);
	struct restore_list list;

	/* first start, nothing else: used, marked initial */
	assert_int_equal(scan_tree(&t, NULL, initial, true, &list), 0);
	assert_count(&list, 1, 0);
	assert_point(&list, 0, RESTORE_SAVEPOINT, initial, 77);
	assert_true(list.v[0].initial);
	restore_list_free(&list);

	/* the same, given as a file:// URI */
	assert_int_equal(scan_tree(&t, NULL, initial_uri, true, &list), 0);
	assert_count(&list, 1, 0);
	assert_point(&list, 0, RESTORE_SAVEPOINT, initial, 77);
	assert_true(list.v[0].initial);
	restore_list_free(&list);

	/* not the first start: never used, even with nothing else */
	assert_int_equal(scan_tree(&t, NULL, initial, false, &list), 0);
	assert_count(&list, 0, 0);
	restore_list_free(&list);

	/* first start, but only corrupt checkpoints: still nothing usable, so the initial savepoint */
	unsigned char junk[20] = {0};
	char *bad = xasprintf("%s/%s/chk-1", t.ck, JOB);
	write_metadata_raw(bad, junk, sizeof(junk), T0, 0);
	assert_int_equal(scan_tree(&t, NULL, initial, true, &list), 0);
	assert_count(&list, 1, 1);
	assert_point(&list, 0, RESTORE_SAVEPOINT, initial, 77);
	assert_true(list.v[0].initial);
	restore_list_free(&list);

	/* first start with a checkpoint (a restart of the container before the job was stable): not used, even
	 * though the initial savepoint has the higher id */
	char *c2 = make_checkpoint(&t, JOB, "chk-2", 2, T0 + 10);
	assert_int_equal(scan_tree(&t, NULL, initial, true, &list), 0);
	assert_count(&list, 1, 1);
	assert_point(&list, 0, RESTORE_CHECKPOINT, c2, 2);
	assert_false(list.v[0].initial);
	restore_list_free(&list);

	/* first start with only a recorded savepoint: not used either */
	char *c2_meta = path_join(c2, "_metadata");
	assert_int_equal(unlink(c2_meta), 0);
	char *rec = make_savepoint(seed_dir, "savepoint-" JOB6 "-888888888888", 88, T0 + 20);
	const char *const recorded[] = {rec, NULL};
	assert_int_equal(scan_tree(&t, recorded, initial, true, &list), 0);
	assert_count(&list, 1, 2); /* chk-1's bad header, and chk-2 now incomplete */
	assert_point(&list, 0, RESTORE_SAVEPOINT, rec, 88);
	assert_false(list.v[0].initial);
	restore_list_free(&list);

	/* first start, an initial savepoint that does not exist: a skipped line, no point */
	char *missing = path_join(seed_dir, "savepoint-0f1e2d-999999999999");
	char *c1_empty = xasprintf("%s/%s", t.ck, JOB);
	assert_int_equal(rm_rf(c1_empty), 0);
	assert_int_equal(scan_tree(&t, NULL, missing, true, &list), 0);
	assert_count(&list, 0, 1);
	assert_contains(list.skipped.v[0], missing);
	restore_list_free(&list);

	free(seed_dir);
	free(initial);
	free(initial_uri);
	free(bad);
	free(c2);
	free(c2_meta);
	free(rec);
	free(missing);
	free(c1_empty);
	tree_free(&t);
}

/* ---- savepoint_find_newest ---- */

static void test_savepoint_find_newest(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	struct strv before = {0};

	assert_null(savepoint_find_newest(t.sp, JOB, NULL, -1)); /* missing directory */
	savepoints_present(t.sp, JOB, &before);
	assert_int_equal(before.n, 0);
	assert_int_equal(mkdir_p(t.sp), 0);
	assert_null(savepoint_find_newest(t.sp, JOB, NULL, -1)); /* empty */

	/* b has the higher id and the older mtime */
	char *a = make_savepoint(t.sp, "savepoint-" JOB6 "-a0a0a0a0a0a0", 10, T0 + 20);
	char *b = make_savepoint(t.sp, "savepoint-" JOB6 "-b0b0b0b0b0b0", 20, T0 + 10);
	char *other = make_savepoint(t.sp, "savepoint-0f1e2d-c0c0c0c0c0c0", 30, T0 + 30);
	/* newer, but corrupt; and one in flight (no _metadata yet) */
	unsigned char junk[16] = {1, 2, 3, 4};
	char *bad = path_join(t.sp, "savepoint-" JOB6 "-d0d0d0d0d0d0");
	write_metadata_raw(bad, junk, sizeof(junk), T0 + 40, 0);
	char *inflight = path_join(t.sp, "savepoint-" JOB6 "-e0e0e0e0e0e0");
	assert_int_equal(mkdir_p(inflight), 0);

	char *got = savepoint_find_newest(t.sp, JOB, NULL, -1);
	assert_non_null(got);
	assert_string_equal(got, b);
	free(got);

	/* what was there when the stop was asked for: the complete ones of the job, newest first */
	savepoints_present(t.sp, JOB, &before);
	assert_int_equal(before.n, 2);
	assert_string_equal(before.v[0], b);
	assert_string_equal(before.v[1], a);
	/* nothing new since: none, although older ones exist and another job's is newer */
	assert_null(savepoint_find_newest(t.sp, JOB, &before, -1));

	/* the in-flight one completes (the stop's savepoint) with a clock that stepped back: it is found by its
	 * being new, not by its time; and the highest id of the new ones wins */
	write_metadata(inflight, 21, T0 - 5000, 0);
	char *late = make_savepoint(t.sp, "savepoint-" JOB6 "-f0f0f0f0f0f0", 19, T0 + 5000);
	got = savepoint_find_newest(t.sp, JOB, &before, -1);
	assert_non_null(got);
	assert_string_equal(got, inflight);
	free(got);

	/* the other job's own view */
	got = savepoint_find_newest(t.sp, OTHER_JOB, NULL, -1);
	assert_non_null(got);
	assert_string_equal(got, other);
	free(got);

	strv_free(&before);
	free(a);
	free(b);
	free(other);
	free(bad);
	free(inflight);
	free(late);
	tree_free(&t);
}

/* ---- what a stop may end on: checked on the volume, not taken from Flink's word ---- */

static void test_stop_points_are_verified_on_the_volume(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *why = NULL;
	int64_t id = -1;
	char *c7 = make_checkpoint(&t, JOB, "chk-7", 7, T0);
	char *c8 = xasprintf("file:%s/%s/chk-8", t.ck, JOB);
	assert_int_equal(checkpoints_newest_id(t.ck, JOB), 7);
	assert_int_equal(checkpoints_newest_id(t.ck, OTHER_JOB), -1);

	/* checkpoint 7 where it belongs, by path or by file: URI */
	assert_int_equal(checkpoint_verify(c7, t.ck, JOB, 7, &why), 0);
	char *uri7 = xasprintf("file://%s", c7);
	assert_int_equal(checkpoint_verify(uri7, t.ck, JOB, 7, &why), 0);
	/* 8 at the path of 7, 8 not written, 7 under another job, garbage in place of 8's _metadata, 8 holding 3 */
	assert_int_equal(checkpoint_verify(c7, t.ck, JOB, 8, &why), -EXDEV);
	assert_non_null(strstr(why, "chk-8"));
	free(why);
	assert_true(checkpoint_verify(c8, t.ck, JOB, 8, &why) < 0);
	free(why);
	char *other = make_checkpoint(&t, OTHER_JOB, "chk-8", 8, T0);
	assert_int_equal(checkpoint_verify(other, t.ck, JOB, 8, &why), -EXDEV);
	free(why);
	char *c8dir = xasprintf("%s/%s/chk-8", t.ck, JOB);
	write_metadata_raw(c8dir, "garbage, not Flink's metadata", 29, T0, 0);
	assert_int_equal(checkpoint_verify(c8, t.ck, JOB, 8, &why), -EBADMSG);
	free(why);
	write_metadata(c8dir, 3, T0, 0);
	assert_int_equal(checkpoint_verify(c8, t.ck, JOB, 8, &why), -ESTALE);
	assert_non_null(strstr(why, "holds checkpoint 3"));
	free(why);
	assert_int_equal(checkpoint_verify("not a location", t.ck, JOB, 8, &why), -EINVAL);
	free(why);
	assert_int_equal(checkpoint_verify(NULL, t.ck, JOB, 8, &why), -EINVAL);
	free(why);

	/* a savepoint of the job newer than checkpoint 7 (chk-8 holds 3: not a complete checkpoint 8) */
	char *sp = make_savepoint(t.sp, "savepoint-" JOB6 "-a0a0a0a0a0a0", 9, T0);
	assert_int_equal(savepoint_verify(sp, t.sp, JOB, 7, &id, &why), 0);
	assert_int_equal(id, 9);
	/* no newer than the newest checkpoint, another job's, outside the savepoint directory, being disposed of */
	assert_int_equal(savepoint_verify(sp, t.sp, JOB, 9, &id, &why), -ESTALE);
	free(why);
	char *sp_other = make_savepoint(t.sp, "savepoint-0f1e2d-b0b0b0b0b0b0", 10, T0);
	assert_int_equal(savepoint_verify(sp_other, t.sp, JOB, 7, &id, &why), -EXDEV);
	free(why);
	char *elsewhere = path_join(t.root, "elsewhere");
	char *sp_out = make_savepoint(elsewhere, "savepoint-" JOB6 "-c0c0c0c0c0c0", 10, T0);
	assert_int_equal(savepoint_verify(sp_out, t.sp, JOB, 7, &id, &why), -EXDEV);
	free(why);
	char *disposing = make_savepoint(t.sp, "savepoint-" JOB6 "-d0d0d0d0d0d0" SAVEPOINT_DISPOSING_SUFFIX, 10, T0);
	assert_int_equal(savepoint_verify(disposing, t.sp, JOB, 7, &id, &why), -EXDEV);
	free(why);
	/* a checkpoint's directory is no savepoint; nor one with no _metadata */
	assert_int_equal(savepoint_verify(c7, t.sp, JOB, 6, &id, &why), -EXDEV);
	free(why);
	char *empty = path_join(t.sp, "savepoint-" JOB6 "-e0e0e0e0e0e0");
	assert_int_equal(mkdir_p(empty), 0);
	assert_true(savepoint_verify(empty, t.sp, JOB, 7, &id, &why) < 0);
	free(why);

	/* the stop's savepoint found on the volume: none when the newest new one is no newer than a checkpoint */
	char *found = savepoint_find_newest(t.sp, JOB, NULL, 7);
	assert_string_equal(found, sp);
	free(found);
	assert_null(savepoint_find_newest(t.sp, JOB, NULL, 9));

	free(c7);
	free(c8);
	free(uri7);
	free(other);
	free(c8dir);
	free(sp);
	free(sp_other);
	free(elsewhere);
	free(sp_out);
	free(disposing);
	free(empty);
	tree_free(&t);
}

/* ---- snapshot_check ---- */

static void test_snapshot_check(void **state)
{
	(void)state;
	char *root = make_tempdir();
	int64_t id = -7;
	usec_t when = 7;
	char *why = NULL;

	/* valid: the id of the header, the mtime of _metadata */
	char *good = path_join(root, "chk-3");
	write_metadata(good, (int64_t)0x0123456789abcdefLL, T0 + 5, 250000000);
	assert_int_equal(snapshot_check(good, &id, &when, &why), 0);
	assert_true(id == (int64_t)0x0123456789abcdefLL);
	assert_int_equal(when, usec_at(T0 + 5, 250000000));
	assert_null(why);

	/* exactly a header, no payload: still valid */
	unsigned char hdr[16];
	put_be32(hdr, 0x4960672dU);
	put_be32(hdr + 4, 3);
	put_be64(hdr + 8, 17);
	char *bare = path_join(root, "chk-17");
	write_metadata_raw(bare, hdr, sizeof(hdr), T0, 0);
	assert_int_equal(snapshot_check(bare, &id, &when, &why), 0);
	assert_int_equal(id, 17);
	assert_int_equal(when, usec_at(T0, 0));
	assert_null(why);

	/* no _metadata */
	char *missing = path_join(root, "chk-4");
	assert_int_equal(mkdir_p(missing), 0);
	id = -7;
	assert_int_equal(snapshot_check(missing, &id, &when, &why), -ENOENT);
	assert_non_null(why);
	assert_contains(why, missing);
	assert_contains(why, "incomplete");
	assert_int_equal(id, -7);
	free(why);
	why = NULL;

	/* no directory at all */
	char *nodir = path_join(root, "nope");
	assert_int_equal(snapshot_check(nodir, &id, &when, &why), -ENOENT);
	assert_contains(why, nodir);
	free(why);
	why = NULL;

	/* bad magic: -EBADMSG and the number found */
	unsigned char zip[24] = {'P', 'K', 3, 4};
	char *badm = path_join(root, "chk-5");
	write_metadata_raw(badm, zip, sizeof(zip), T0, 0);
	assert_int_equal(snapshot_check(badm, &id, &when, &why), -EBADMSG);
	assert_contains(why, badm);
	assert_contains(why, "bad magic number 0x504b0304");
	free(why);
	why = NULL;

	/* the magic number, little-endian */
	unsigned char le[16] = {0x2d, 0x67, 0x60, 0x49, 0, 0, 0, 6};
	char *lem = path_join(root, "chk-6");
	write_metadata_raw(lem, le, sizeof(le), T0, 0);
	assert_int_equal(snapshot_check(lem, &id, &when, &why), -EBADMSG);
	assert_contains(why, "bad magic");
	free(why);
	why = NULL;

	/* truncated: 15 bytes */
	char *trunc = path_join(root, "chk-7");
	write_metadata_raw(trunc, hdr, 15, T0, 0);
	assert_int_equal(snapshot_check(trunc, &id, &when, &why), -EBADMSG);
	assert_contains(why, trunc);
	assert_contains(why, "truncated (15 bytes)");
	free(why);
	why = NULL;

	/* _metadata is a directory */
	char *dirm = path_join(root, "chk-8");
	char *dirm_meta = path_join(dirm, "_metadata");
	assert_int_equal(mkdir_p(dirm_meta), 0);
	assert_int_equal(snapshot_check(dirm, &id, &when, &why), -EBADMSG);
	assert_contains(why, dirm_meta);
	assert_contains(why, "not a regular file");
	free(why);
	why = NULL;

	free(good);
	free(bare);
	free(missing);
	free(nodir);
	free(badm);
	free(lem);
	free(trunc);
	free(dirm);
	free(dirm_meta);
	remove_tree(root);
}

/* A savepoint retention is disposing of (renamed *.disposing, then removed by a child) is never a restore point, even
 * with its _metadata still whole (a crash in the middle of the removal): the older complete one is restored; the
 * unfinished disposals are listed (of any job) for the next start to remove, and nothing else is. */
static void test_scan_disposing_savepoint_is_never_a_restore_point(void **state)
{
	(void)state;
	struct tree t;
	tree_init(&t);
	char *older = make_savepoint(t.sp, "savepoint-" JOB6 "-000000000001", 5, T0 + 50);
	char *half = make_savepoint(t.sp, "savepoint-" JOB6 "-000000000002" SAVEPOINT_DISPOSING_SUFFIX, 9, T0 + 90);
	char *other = make_savepoint(t.sp, "savepoint-ffffff-000000000003" SAVEPOINT_DISPOSING_SUFFIX, 12, T0 + 120);
	char *given_up = make_savepoint(t.sp, "savepoint-" JOB6 "-000000000004.unreadable", 11, T0 + 110);
	/* one a rolled-back (rejected) spec took, set aside by the rollback: newest, whole, and never restored */
	char *rejected = make_savepoint(t.sp, "savepoint-" JOB6 "-000000000005" REJECTED_SUFFIX, 13, T0 + 130);
	struct restore_list list;
	assert_int_equal(scan_tree(&t, NULL, NULL, false, &list), 0);
	assert_int_equal(list.n, 1);
	assert_string_equal(list.v[0].path, older);
	assert_int_equal(list.v[0].id, 5);
	assert_int_equal(list.given_up, 1);
	assert_int_equal(list.ncorrupt, 0);
	restore_list_free(&list);
	/* nor the newest savepoint of a stop (found on disk), nor a present one */
	char *found = savepoint_find_newest(t.sp, JOB, NULL, -1);
	assert_string_equal(found, older);
	free(found);
	struct strv present = {0}, left = {0};
	savepoints_present(t.sp, JOB, &present);
	assert_int_equal(present.n, 1);
	savepoints_disposing(t.sp, &left);
	assert_int_equal(left.n, 2);
	bool saw_half = false, saw_other = false;
	for (size_t i = 0; i < left.n; i++) {
		saw_half |= !strcmp(left.v[i], half);
		saw_other |= !strcmp(left.v[i], other);
	}
	assert_true(saw_half && saw_other);
	strv_free(&present);
	strv_free(&left);
	/* a missing directory has no savepoint on its way out */
	savepoints_disposing(t.ck, &left);
	assert_int_equal(left.n, 0);
	free(older);
	free(half);
	free(other);
	free(given_up);
	free(rejected);
	tree_free(&t);
}

static void test_restore_kind_to_string(void **state)
{
	(void)state;
	assert_string_equal(restore_kind_to_string(RESTORE_NONE), "none");
	assert_string_equal(restore_kind_to_string(RESTORE_CHECKPOINT), "checkpoint");
	assert_string_equal(restore_kind_to_string(RESTORE_SAVEPOINT), "savepoint");
	assert_string_equal(restore_kind_to_string((enum restore_kind)42), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan_missing_and_empty),
	    cmocka_unit_test(test_scan_unreadable_dir),
	    cmocka_unit_test(test_scan_disposing_savepoint_is_never_a_restore_point),
	    cmocka_unit_test(test_scan_incomplete_checkpoint_is_skipped_and_said),
	    cmocka_unit_test(test_scan_corrupt_metadata_is_skipped),
	    cmocka_unit_test(test_scan_newest_first_by_id_not_mtime),
	    cmocka_unit_test(test_scan_touched_savepoint_does_not_beat_newer_checkpoints),
	    cmocka_unit_test(test_scan_same_id_tie_break),
	    cmocka_unit_test(test_scan_savepoints_interleave),
	    cmocka_unit_test(test_scan_ignores_other_jobs_and_names),
	    cmocka_unit_test(test_scan_id_from_header),
	    cmocka_unit_test(test_scan_recorded_savepoints),
	    cmocka_unit_test(test_scan_recorded_savepoint_of_an_earlier_job_is_left_out),
	    cmocka_unit_test(test_scan_recorded_and_in_dir_once),
	    cmocka_unit_test(test_scan_initial_savepoint),
	    cmocka_unit_test(test_savepoint_find_newest),
	    cmocka_unit_test(test_stop_points_are_verified_on_the_volume),
	    cmocka_unit_test(test_snapshot_check),
	    cmocka_unit_test(test_restore_kind_to_string),
	};
	return cmocka_run_group_tests_name("snapshots", tests, NULL, NULL);
}

/* test_leftovers: what dead JVMs left on the volume is found, and nothing a kept restore point needs is on the list
 * (src/flink/leftovers.c): checkpoints beyond the newest num-retained, unfinished checkpoints and savepoints,
 * shared/ files no kept _metadata names; damaged points, given-up points and the launch's own point stay. */
#include "unit.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leftovers.h"
#include "store.h"

#define JOB "0123456789abcdef0123456789abcdef"

/* A _metadata as Flink's starts (magic, version, id), then the given text: the paths a checkpoint names. */
static void metadata_n(const char *dir, long long id, const char *names, size_t n)
{
	unsigned char hdr[16] = {0x49, 0x60, 0x67, 0x2d, 0, 0, 0, 4};
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = (unsigned char)((unsigned long long)id >> (56 - 8 * i));
	char *buf = xmalloc(sizeof(hdr) + n);
	memcpy(buf, hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), names, n);
	mkdir_p(dir);
	free(write_text_n(dir, "_metadata", buf, sizeof(hdr) + n));
	free(buf);
}

static void metadata(const char *dir, long long id, const char *names)
{
	metadata_n(dir, id, names, strlen(names));
}

struct layout {
	char *root, *ckpt, *sp, *job;
};

static struct layout layout(void)
{
	struct layout l;
	l.root = make_tempdir();
	l.ckpt = path_join(l.root, "checkpoints");
	l.sp = path_join(l.root, "savepoints");
	l.job = path_join(l.ckpt, JOB);
	mkdir_p(l.job);
	mkdir_p(l.sp);
	return l;
}

static void layout_free(struct layout *l)
{
	remove_tree(l->root);
	free(l->ckpt);
	free(l->sp);
	free(l->job);
}

static char *at(const struct layout *l, const char *rel)
{
	return path_join(l->job, rel);
}

/* chk-<id> with a _metadata whose bytes after the header are the literal's, NULs and all */
#define chk(l, id, lit) chk_n(l, id, lit, sizeof(lit) - 1)
static void chk_n(const struct layout *l, long long id, const char *names, size_t n)
{
	char name[32];
	snprintf(name, sizeof(name), "chk-%lld", id);
	char *dir = at(l, name);
	metadata_n(dir, id, names, n);
	free(write_text(dir, "private-state", "x"));
	free(dir);
}

static void shared(const struct layout *l, const char *name)
{
	char *dir = at(l, "shared");
	mkdir_p(dir);
	free(write_text(dir, name, "0123456789"));
	free(dir);
}

/* Whether list holds a path that ends in /suffix. */
static bool listed(const struct strv *v, const char *suffix)
{
	for (size_t i = 0; i < v->n; i++) {
		size_t n = strlen(v->v[i]), m = strlen(suffix);
		if (n > m && v->v[i][n - m - 1] == '/' && !strcmp(v->v[i] + n - m, suffix))
			return true;
	}
	return false;
}

static int find(const struct layout *l, unsigned keep, const char *restore, struct leftovers *out)
{
	struct leftovers_scan in = {l->ckpt, l->sp, JOB, keep, restore, 1 << 20, NULL, NULL};
	return leftovers_find(&in, out);
}

static void test_dead_jvms_leftovers_go_and_the_kept_points_files_stay(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 3,
	    "file:/v/checkpoints/" JOB "/shared/s-old-1\0\x12"
	    "file:/v/checkpoints/" JOB "/shared/s-common");
	chk(&l, 5, "file:/v/checkpoints/" JOB "/shared/s-old-2");
	chk(&l, 7,
	    "\x00\x35/v/checkpoints/" JOB "/shared/s-common\x41\x42"
	    "file:/v/checkpoints/" JOB "/shared/s-7");
	chk(&l, 8, "file:/v/checkpoints/" JOB "/shared/s-8");
	char *unfinished = at(&l, "chk-9");
	mkdir_p(unfinished);
	free(write_text(unfinished, "partial", "x"));
	metadata(l.job, 0, ""); /* a stray file in the job directory: not a checkpoint */
	char *given_up = at(&l, "chk-4.unreadable");
	metadata(given_up, 4, "file:/v/checkpoints/" JOB "/shared/s-given-up");
	const char *files[] = {"s-old-1", "s-old-2", "s-common", "s-7", "s-8", "s-given-up", "orphan", NULL};
	for (size_t i = 0; files[i]; i++)
		shared(&l, files[i]);
	char *sp_done = path_join(l.sp, "savepoint-012345-aaaaaaaaaaaa");
	metadata(sp_done, 6, "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/op-state");
	char *sp_partial = path_join(l.sp, "savepoint-012345-bbbbbbbbbbbb");
	mkdir_p(sp_partial);
	free(write_text(sp_partial, "op-state", "half of it"));
	char *sp_other = path_join(l.sp, "savepoint-fedcba-cccccccccccc"); /* another job's: not ours to judge */
	mkdir_p(sp_other);

	struct leftovers out;
	char *restore = at(&l, "chk-8");
	assert_int_equal(find(&l, 2, restore, &out), 0);
	assert_null(out.shared_skipped);
	assert_int_equal(out.checkpoints.n, 3);
	assert_true(listed(&out.checkpoints, "chk-3"));
	assert_true(listed(&out.checkpoints, "chk-5"));
	assert_true(listed(&out.checkpoints, "chk-9"));
	assert_int_equal(out.savepoints.n, 1);
	assert_true(listed(&out.savepoints, "savepoint-012345-bbbbbbbbbbbb"));
	assert_int_equal(out.shared.n, 3);
	assert_true(listed(&out.shared, "s-old-1"));
	assert_true(listed(&out.shared, "s-old-2"));
	assert_true(listed(&out.shared, "orphan"));
	assert_int_equal(out.kept_checkpoints, 2);
	assert_int_equal(out.kept_shared, 4); /* s-common (named by chk-7 too), s-7, s-8, s-given-up */
	assert_true(out.bytes >= 3 * 10);
	leftovers_free(&out);
	free(restore);
	free(unfinished);
	free(given_up);
	free(sp_done);
	free(sp_partial);
	free(sp_other);
	layout_free(&l);
}

static void test_the_launchs_point_and_what_a_kept_point_names_stay(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 2, "");
	chk(&l, 3, "");
	chk(&l, 5, "");
	chk(&l, 6, "file:/v/checkpoints/" JOB "/chk-3/private-state");
	chk(&l, 7, "");
	struct leftovers out;
	char *restore = at(&l, "chk-5"); /* the newer ones were (say) given up by the restore's choice */
	assert_int_equal(find(&l, 2, restore, &out), 0);
	/* 7 and 6 are the newest two, 5 is the launch's own, 3 holds a file 6 names: only 2 goes */
	assert_int_equal(out.checkpoints.n, 1);
	assert_true(listed(&out.checkpoints, "chk-2"));
	assert_int_equal(out.kept_checkpoints, 4);
	leftovers_free(&out);
	free(restore);
	layout_free(&l);
}

/* An upgrade on trial with rollback on: the checkpoint it started from (a last-state upgrade's) is what a rollback
 * restores, so a relaunch of the upgraded spec after a crash must not sweep it, however many newer ones it wrote. */
static void test_an_upgrades_base_stays_while_it_is_on_trial(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 4, "file:/v/checkpoints/" JOB "/shared/s-base");
	chk(&l, 6, "");
	chk(&l, 7, "");
	shared(&l, "s-base");
	char *base = at(&l, "chk-4"), *restore = at(&l, "chk-7");
	struct leftovers out;
	struct leftovers_scan in = {l.ckpt, l.sp, JOB, 1, restore, 1 << 20, NULL, base};
	assert_int_equal(leftovers_find(&in, &out), 0);
	/* 7 is the newest and the launch's; 4 the base; only 6 goes, and the file 4 names stays */
	assert_int_equal(out.checkpoints.n, 1);
	assert_true(listed(&out.checkpoints, "chk-6"));
	assert_false(listed(&out.shared, "s-base"));
	leftovers_free(&out);
	/* without it (the trial over), 4 goes too */
	in.keep_path = NULL;
	assert_int_equal(leftovers_find(&in, &out), 0);
	assert_true(listed(&out.checkpoints, "chk-4"));
	assert_true(listed(&out.shared, "s-base"));
	leftovers_free(&out);
	free(base);
	free(restore);
	layout_free(&l);
}

static void test_a_damaged_point_keeps_every_checkpoint_and_shared_file(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 1, "");
	chk(&l, 2, "");
	chk(&l, 3, "");
	char *damaged = at(&l, "chk-4");
	mkdir_p(damaged);
	free(write_text(damaged, "_metadata", "not Flink's"));
	shared(&l, "s-unknown");
	char *unfinished = at(&l, "chk-5");
	mkdir_p(unfinished);
	struct leftovers out;
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	/* what the damaged one names cannot be read: no shared file goes, and no complete checkpoint either */
	assert_non_null(out.shared_skipped);
	assert_int_equal(out.shared.n, 0);
	assert_int_equal(out.checkpoints.n, 1);
	assert_true(listed(&out.checkpoints, "chk-5"));
	leftovers_free(&out);
	free(damaged);
	free(unfinished);
	layout_free(&l);
}

static void test_too_much_metadata_leaves_shared_alone(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 1, "file:/v/checkpoints/" JOB "/shared/s-1");
	shared(&l, "s-orphan");
	struct leftovers out;
	struct leftovers_scan in = {l.ckpt, l.sp, JOB, 2, NULL, 8, NULL, NULL};
	assert_int_equal(leftovers_find(&in, &out), 0);
	assert_non_null(out.shared_skipped);
	assert_int_equal(out.shared.n, 0);
	leftovers_free(&out);
	layout_free(&l);
}

static void test_links_and_directories_in_shared_are_left_alone(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 1, "");
	char *outside = path_join(l.root, "precious");
	free(write_text(l.root, "precious", "someone else's"));
	char *sh = at(&l, "shared");
	mkdir_p(sh);
	char *link = path_join(sh, "a-link");
	assert_int_equal(symlink(outside, link), 0);
	char *sub = path_join(sh, "subdir");
	mkdir_p(sub);
	struct leftovers out;
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_int_equal(out.shared.n, 0);
	assert_int_equal(out.checkpoints.n, 0);
	/* the link stays (nothing is removed through it, nor the link itself); an empty directory of a dead JVM goes */
	assert_int_equal(out.dirs.n, 1);
	assert_true(listed(&out.dirs, "subdir"));
	leftovers_free(&out);
	free(outside);
	free(sh);
	free(link);
	free(sub);
	layout_free(&l);
}

/* A savepoint directory of the job: its _metadata (id >= 0) or none (-1), and its files */
static char *savepoint(const struct layout *l, const char *name, long long id, const char *names, const char **files)
{
	char *dir = path_join(l->sp, name);
	mkdir_p(dir);
	if (id >= 0)
		metadata(dir, id, names);
	for (size_t i = 0; files && files[i]; i++)
		free(write_text(dir, files[i], "sst bytes"));
	return dir;
}

static int find_claimed(const struct layout *l, unsigned keep, const char *restore, const char **claimed,
                        struct leftovers *out)
{
	struct leftovers_scan in = {l->ckpt, l->sp, JOB, keep, restore, 1 << 20, claimed, NULL};
	return leftovers_find(&in, out);
}

static void test_a_claimed_savepoint_counts_as_the_checkpoint_it_became(void **state)
{
	(void)state;
	struct layout l = layout();
	const char *files[] = {"sst-1", "sst-2", "sst-3", NULL};
	/* claimed at id 10 and restored; checkpoints 11 and 12 share sst-1 of it; 13 and 14 were taken after that */
	char *x = savepoint(&l, "savepoint-012345-aaaaaaaaaaaa", 10,
	                    "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/sst-1\0"
	                    "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/sst-2\0"
	                    "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/sst-3",
	                    files);
	chk(&l, 11, "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/sst-1");
	chk(&l, 12, "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/sst-1");
	const char *claimed[] = {x, NULL};
	struct leftovers out;
	/* among the newest two with 11 (keep 3): it stays whole, a restore point still */
	assert_int_equal(find_claimed(&l, 3, NULL, claimed, &out), 0);
	assert_int_equal(out.checkpoints.n + out.savepoints.n + out.shared.n + out.claimed_gone.n, 0);
	leftovers_free(&out);
	/* beyond the kept two but the kept 12 shares sst-1: its _metadata and sst-2, sst-3 go, sst-1 stays */
	assert_int_equal(find_claimed(&l, 2, NULL, claimed, &out), 0);
	assert_int_equal(out.checkpoints.n, 0);
	assert_int_equal(out.savepoints.n, 0);
	assert_int_equal(out.shared.n, 3);
	assert_true(listed(&out.shared, "_metadata"));
	assert_true(listed(&out.shared, "sst-2"));
	assert_true(listed(&out.shared, "sst-3"));
	assert_int_equal(out.claimed_gone.n, 0);
	leftovers_free(&out);
	/* the launch restores it: it stays whole whatever its rank */
	assert_int_equal(find_claimed(&l, 1, x, claimed, &out), 0);
	assert_int_equal(out.shared.n, 0);
	assert_true(listed(&out.checkpoints, "chk-11"));
	assert_int_equal(out.claimed_gone.n, 0);
	leftovers_free(&out);
	/* newer checkpoints that name none of it: the whole directory goes (renamed aside first) and leaves the list */
	chk(&l, 13, "");
	chk(&l, 14, "");
	assert_int_equal(find_claimed(&l, 2, NULL, claimed, &out), 0);
	assert_true(listed(&out.checkpoints, "savepoint-012345-aaaaaaaaaaaa"));
	assert_true(listed(&out.checkpoints, "chk-11"));
	assert_true(listed(&out.checkpoints, "chk-12"));
	assert_int_equal(out.claimed_gone.n, 1);
	assert_string_equal(out.claimed_gone.v[0], x);
	leftovers_free(&out);
	/* not claimed (a savepoint of the history): every complete savepoint stays */
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_false(listed(&out.checkpoints, "savepoint-012345-aaaaaaaaaaaa"));
	assert_int_equal(out.savepoints.n, 0);
	leftovers_free(&out);
	free(x);
	layout_free(&l);
}

static void test_what_flink_left_of_a_disposed_savepoint_stays_while_named(void **state)
{
	(void)state;
	struct layout l = layout();
	/* (Flink's files have names of their own, UUIDs: a name is searched for alone) */
	const char *xf[] = {"x-1", "x-2", NULL}, *yf[] = {"y-1", "y-2", NULL}, *zf[] = {"z-1", NULL};
	/* Flink disposed of the claimed savepoint (no _metadata) and kept x-1, which checkpoint 12 shares */
	char *x = savepoint(&l, "savepoint-012345-aaaaaaaaaaaa", -1, NULL, xf);
	/* the same, but the status lost its claim (an older status.json): named, so only its unnamed file goes */
	char *y = savepoint(&l, "savepoint-012345-bbbbbbbbbbbb", -1, NULL, yf);
	/* a partial savepoint nothing names: removed whole, as before */
	char *z = savepoint(&l, "savepoint-012345-cccccccccccc", -1, NULL, zf);
	chk(&l, 12,
	    "file:/v/savepoints/savepoint-012345-aaaaaaaaaaaa/x-1\0"
	    "file:/v/savepoints/savepoint-012345-bbbbbbbbbbbb/y-2");
	char *gone = path_join(l.sp, "savepoint-012345-dddddddddddd"); /* claimed, disposed of entirely */
	const char *claimed[] = {x, gone, NULL};
	struct leftovers out;
	assert_int_equal(find_claimed(&l, 2, NULL, claimed, &out), 0);
	assert_int_equal(out.savepoints.n, 1);
	assert_true(listed(&out.savepoints, "savepoint-012345-cccccccccccc"));
	assert_int_equal(out.shared.n, 2);
	char *x2 = path_join(x, "x-2"), *y1 = path_join(y, "y-1");
	bool has_x2 = false, has_y1 = false;
	for (size_t i = 0; i < out.shared.n; i++) {
		has_x2 |= !strcmp(out.shared.v[i], x2);
		has_y1 |= !strcmp(out.shared.v[i], y1);
	}
	assert_true(has_x2 && has_y1);
	assert_int_equal(out.claimed_gone.n, 1);
	assert_string_equal(out.claimed_gone.v[0], gone);
	leftovers_free(&out);
	/* a kept _metadata that cannot be read: the claimed one stays whole, nothing of it goes */
	char *damaged = at(&l, "chk-13");
	mkdir_p(damaged);
	free(write_text(damaged, "_metadata", "not Flink's"));
	assert_int_equal(find_claimed(&l, 2, NULL, claimed, &out), 0);
	assert_non_null(out.shared_skipped);
	assert_int_equal(out.shared.n, 0);
	assert_false(listed(&out.savepoints, "savepoint-012345-aaaaaaaaaaaa"));
	leftovers_free(&out);
	free(x2);
	free(y1);
	free(damaged);
	free(gone);
	free(x);
	free(y);
	free(z);
	layout_free(&l);
}

static void test_a_claimed_savepoint_named_by_file_name_alone_keeps_those_files(void **state)
{
	(void)state;
	struct layout l = layout();
	/* before FLINK-39964 the checkpoints after the claim name the savepoint's files by their names alone */
	const char *files[] = {"c0ffee01-sst", "c0ffee02-sst", NULL};
	char *x = savepoint(&l, "savepoint-012345-aaaaaaaaaaaa", 10, "", files);
	chk(&l, 11, "$c0ffee01-sst");
	chk(&l, 12, "$c0ffee01-sst");
	const char *claimed[] = {x, NULL};
	struct leftovers out;
	assert_int_equal(find_claimed(&l, 2, NULL, claimed, &out), 0);
	assert_false(listed(&out.checkpoints, "savepoint-012345-aaaaaaaaaaaa"));
	assert_int_equal(out.shared.n, 2);
	assert_true(listed(&out.shared, "_metadata"));
	assert_true(listed(&out.shared, "c0ffee02-sst"));
	leftovers_free(&out);
	/* not claimed: a complete savepoint, which stays whole */
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_int_equal(out.shared.n + out.savepoints.n, 0);
	leftovers_free(&out);
	free(x);
	layout_free(&l);
}

/* A file at <job dir>/rel, its directories made. */
static void file_at(const struct layout *l, const char *rel)
{
	char *path = at(l, rel);
	char *slash = strrchr(path, '/');
	*slash = '\0';
	mkdir_p(path);
	free(write_text(path, slash + 1, "sst bytes of a dead JVM"));
	free(path);
}

#define OPDIR "shared/op_AsyncKeyedProcessOperator_b717__1_2__attempt_0"
#define OLDOP "shared/op_AsyncKeyedProcessOperator_b717__1_4__attempt_0"

static void test_forst_working_files_no_kept_point_names_go(void **state)
{
	(void)state;
	struct layout l = layout();
	/* ForSt with its primary directory the checkpoint directory: the checkpoints name the SSTs of its working
	 * directory by path (as Flink 2.2.1 writes them: "file:<job dir>/shared/op_.../db/<uuid>") */
	chk(&l, 6, "000013.sst\0file:/v/checkpoints/" JOB "/" OPDIR "/db/c903a8e1-old-shared");
	chk(&l, 7,
	    "000013.sst\0file:/v/checkpoints/" JOB "/" OPDIR "/db/c903a8e1-old-shared\0"
	    "000051.sst\0file:/v/checkpoints/" JOB "/" OPDIR "/db/07890093-newest");
	chk(&l, 3, "file:/v/checkpoints/" JOB "/" OPDIR "/db/2479b19a-retired");
	file_at(&l, OPDIR "/db/c903a8e1-old-shared");
	file_at(&l, OPDIR "/db/07890093-newest");
	file_at(&l, OPDIR "/db/2479b19a-retired");    /* named by chk-3 only, which goes */
	file_at(&l, OPDIR "/db/42af5641-after-last"); /* written after the last checkpoint of a dead JVM */
	char *dummy = at(&l, OPDIR "/db/_dummy_dir_19530434");
	mkdir_p(dummy);
	file_at(&l, OLDOP "/db/a9a309ca-before-rescale"); /* a parallelism no kept point has */
	char *oldop_dummy = at(&l, OLDOP "/db/_dummy_dir_6ef613a8");
	mkdir_p(oldop_dummy);
	struct leftovers out;
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_null(out.shared_skipped);
	assert_int_equal(out.checkpoints.n, 1);
	assert_true(listed(&out.checkpoints, "chk-3"));
	/* the files the kept points name stay, deep in db/; the others go, each where it is */
	assert_int_equal(out.shared.n, 2);
	assert_true(listed(&out.shared, "2479b19a-retired"));
	assert_true(listed(&out.shared, "42af5641-after-last"));
	assert_int_equal(out.kept_shared, 2);
	/* a directory none of whose files is named goes whole: the old parallelism's, the dead JVM's dummy one */
	assert_int_equal(out.dirs.n, 2);
	assert_true(listed(&out.dirs, "op_AsyncKeyedProcessOperator_b717__1_4__attempt_0"));
	assert_true(listed(&out.dirs, "_dummy_dir_19530434"));
	assert_true(out.bytes >= 3 * strlen("sst bytes of a dead JVM"));
	leftovers_free(&out);
	free(dummy);
	free(oldop_dummy);
	layout_free(&l);
}

static void test_file_merging_and_taskowned_files_go_when_unnamed(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 9,
	    "file:/v/checkpoints/" JOB "/shared/job_" JOB "_op_Count_0_2/5a1e-merged\0"
	    "file:/v/checkpoints/" JOB "/taskowned/tm_a1b2/7c3d-exclusive\0"
	    "file:/v/checkpoints/" JOB "/shared/job_" JOB "_op_Sink_0_2\0");
	/* a directory a checkpoint names by its path (file merging shares a subtask's directory) stays, empty or not */
	char *named_dir = at(&l, "shared/job_" JOB "_op_Sink_0_2");
	mkdir_p(named_dir);
	char *unnamed_dir = at(&l, "shared/job_" JOB "_op_Sink_0_4");
	mkdir_p(unnamed_dir);
	file_at(&l, "shared/job_" JOB "_op_Count_0_2/5a1e-merged");
	file_at(&l, "shared/job_" JOB "_op_Count_0_2/6b2f-unnamed");
	file_at(&l, "taskowned/tm_a1b2/7c3d-exclusive");
	file_at(&l, "taskowned/tm_a1b2/8e4f-unnamed");
	file_at(&l, "taskowned/tm_dead/9f50-unnamed");
	file_at(&l, "taskowned/stray-file");
	struct leftovers out;
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_int_equal(out.shared.n, 3);
	assert_true(listed(&out.shared, "6b2f-unnamed"));
	assert_true(listed(&out.shared, "8e4f-unnamed"));
	assert_true(listed(&out.shared, "stray-file"));
	assert_int_equal(out.dirs.n, 2);
	assert_true(listed(&out.dirs, "tm_dead"));
	assert_true(listed(&out.dirs, "job_" JOB "_op_Sink_0_4"));
	assert_int_equal(out.kept_shared, 2);
	leftovers_free(&out);
	/* shared/ and taskowned/ themselves are Flink's: never listed, even empty */
	char *to = at(&l, "taskowned");
	assert_int_equal(rm_rf(to), 0);
	mkdir_p(to);
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_false(listed(&out.dirs, "taskowned"));
	assert_false(listed(&out.dirs, "shared"));
	leftovers_free(&out);
	free(to);
	free(named_dir);
	free(unnamed_dir);
	layout_free(&l);
}

static void test_links_below_shared_are_never_followed_nor_removed(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 1, "");
	char *outside = path_join(l.root, "elsewhere");
	mkdir_p(outside);
	free(write_text(outside, "precious", "someone else's"));
	file_at(&l, OPDIR "/db/aaaa-unnamed");
	char *db = at(&l, OPDIR "/db");
	char *link = path_join(db, "a-link");
	assert_int_equal(symlink(outside, link), 0);
	char *opdir_link = at(&l, "shared/op_linked");
	assert_int_equal(symlink(outside, opdir_link), 0);
	char *to = at(&l, "taskowned");
	mkdir_p(to);
	char *to_link = path_join(to, "tm_linked");
	assert_int_equal(symlink(outside, to_link), 0);
	file_at(&l, "shared/op_dotted/.hidden");
	struct leftovers out;
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	/* the unnamed file goes where it is; the directory holding a link stays, and so do the links and the dot file
	 */
	assert_int_equal(out.shared.n, 1);
	assert_true(listed(&out.shared, "aaaa-unnamed"));
	assert_int_equal(out.dirs.n, 0);
	leftovers_free(&out);
	/* a taskowned/ that is itself a link is not swept */
	assert_int_equal(rm_rf(to), 0);
	assert_int_equal(symlink(outside, to), 0);
	free(write_text(outside, "unnamed-outside", "x"));
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_false(listed(&out.shared, "unnamed-outside"));
	assert_false(listed(&out.shared, "precious"));
	leftovers_free(&out);
	free(outside);
	free(db);
	free(link);
	free(opdir_link);
	free(to);
	free(to_link);
	layout_free(&l);
}

static void test_a_damaged_point_keeps_the_working_directories(void **state)
{
	(void)state;
	struct layout l = layout();
	chk(&l, 1, "");
	char *damaged = at(&l, "chk-2");
	mkdir_p(damaged);
	free(write_text(damaged, "_metadata", "not Flink's"));
	file_at(&l, OPDIR "/db/bbbb-unknown");
	file_at(&l, "taskowned/tm_x/cccc-unknown");
	struct leftovers out;
	assert_int_equal(find(&l, 2, NULL, &out), 0);
	assert_non_null(out.shared_skipped);
	assert_int_equal(out.shared.n + out.dirs.n, 0);
	leftovers_free(&out);
	free(damaged);
	layout_free(&l);
}

static void test_no_checkpoint_directory_yet(void **state)
{
	(void)state;
	struct layout l = layout();
	struct leftovers out;
	struct leftovers_scan in = {l.ckpt, l.sp, "ffffffffffffffffffffffffffffffff", 2, NULL, 1 << 20, NULL, NULL};
	assert_int_equal(leftovers_find(&in, &out), 0);
	assert_int_equal(out.checkpoints.n + out.savepoints.n + out.shared.n, 0);
	leftovers_free(&out);
	layout_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dead_jvms_leftovers_go_and_the_kept_points_files_stay),
	    cmocka_unit_test(test_the_launchs_point_and_what_a_kept_point_names_stay),
	    cmocka_unit_test(test_an_upgrades_base_stays_while_it_is_on_trial),
	    cmocka_unit_test(test_a_damaged_point_keeps_every_checkpoint_and_shared_file),
	    cmocka_unit_test(test_too_much_metadata_leaves_shared_alone),
	    cmocka_unit_test(test_links_and_directories_in_shared_are_left_alone),
	    cmocka_unit_test(test_no_checkpoint_directory_yet),
	    cmocka_unit_test(test_forst_working_files_no_kept_point_names_go),
	    cmocka_unit_test(test_file_merging_and_taskowned_files_go_when_unnamed),
	    cmocka_unit_test(test_links_below_shared_are_never_followed_nor_removed),
	    cmocka_unit_test(test_a_damaged_point_keeps_the_working_directories),
	    cmocka_unit_test(test_a_claimed_savepoint_counts_as_the_checkpoint_it_became),
	    cmocka_unit_test(test_what_flink_left_of_a_disposed_savepoint_stays_while_named),
	    cmocka_unit_test(test_a_claimed_savepoint_named_by_file_name_alone_keeps_those_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

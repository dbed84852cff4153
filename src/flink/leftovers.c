/* leftovers: the leftovers of dead JVMs on the volume, found while no JVM runs (see src/flink/leftovers.h). */
#include "leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshots.h"

struct blobs {
	char **v;
	size_t *len, n;
	uint64_t total;
	char *problem; /* a kept _metadata that could not be read in full, or too much of it */
};

struct ckpt {
	char *path;
	int64_t id;
	const char *claimed; /* a claimed savepoint (its name in the scan's list), ranked with the checkpoints */
};

/* A savepoint directory without _metadata, removed whole unless a kept _metadata names it. */
struct partial {
	char *path;
	const char *claimed; /* its name in the scan's list of claimed savepoints; NULL: not one of them */
};

static void blobs_free(struct blobs *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i]);
	free(b->v);
	free(b->len);
	free(b->problem);
}

static void blobs_problem(struct blobs *b, char *why)
{
	if (b->problem)
		free(why);
	else
		b->problem = why;
}

/* Reads <dir>/_metadata whole into b: the references of a point that stays. */
static void blobs_read(struct blobs *b, const char *dir, uint64_t max)
{
	char *meta = path_join(dir, "_metadata");
	int fd = open(meta, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a named pipe never holds it */
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		blobs_problem(b, xasprintf("%s: %s", meta, fd < 0 ? strerror(errno) : "not a regular file"));
	} else if (b->total + (uint64_t)st.st_size > max) {
		blobs_problem(
		    b, xasprintf("the kept snapshots' _metadata is more than %llu bytes", (unsigned long long)max));
	} else {
		char *buf = xmalloc((size_t)st.st_size + 1);
		size_t got = 0;
		while (got < (size_t)st.st_size) {
			ssize_t k = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		if (got != (size_t)st.st_size) {
			blobs_problem(b, xasprintf("%s: could not be read in full", meta));
			free(buf);
		} else {
			b->v = xrealloc(b->v, (b->n + 1) * sizeof(*b->v));
			b->len = xrealloc(b->len, (b->n + 1) * sizeof(*b->len));
			b->v[b->n] = buf;
			b->len[b->n++] = got;
			b->total += got;
		}
	}
	if (fd >= 0)
		close(fd);
	free(meta);
}

static bool blobs_name(const struct blobs *b, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; i < b->n; i++)
		if (memmem(b->v[i], b->len[i], needle, m))
			return true;
	return false;
}

/* A directory of its own, not a link to one (nothing is removed through a link: it may lead anywhere). */
static bool real_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The bytes under path (a file, or a directory's files), without following links. */
static uint64_t du(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	uint64_t sum = 0;
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *sub = path_join(path, de->d_name);
		sum += du(sub);
		free(sub);
	}
	if (d)
		closedir(d);
	return sum;
}

static bool same_dir(const char *a, const char *b)
{
	if (!a || !b)
		return false;
	char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
	bool same = ra && rb && !strcmp(ra, rb);
	free(ra);
	free(rb);
	return same;
}

static int cmp_id_desc(const void *x, const void *y)
{
	const struct ckpt *a = x, *b = y;
	return a->id == b->id ? strcmp(a->path, b->path) : a->id > b->id ? -1 : 1;
}

/* The job's chk-* directories: complete ones into *complete, those to remove whatever the references say
 * (no _metadata, or already *.disposing) into out->checkpoints, and the _metadata of what stays for a look
 * (damaged, *.unreadable) into b. */
static int scan_checkpoints(const char *jobdir, const struct leftovers_scan *in, struct leftovers *out, struct blobs *b,
                            struct ckpt **complete, size_t *ncomplete)
{
	struct stat jst;
	if (lstat(jobdir, &jst) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(jst.st_mode)) { /* a link: its checkpoints stay, and so does everything they may name */
		blobs_problem(
		    b, xasprintf("%s is not a directory of its own (a link?): nothing is removed through it", jobdir));
		return 0;
	}
	DIR *d = opendir(jobdir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "chk-", 4))
			continue;
		char *path = path_join(jobdir, de->d_name);
		struct stat st;
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(path);
			continue;
		}
		if (str_has_suffix(de->d_name, ".disposing")) {
			strv_push_take(&out->checkpoints, path);
			continue;
		}
		char *end;
		long long n = strtoll(de->d_name + 4, &end, 10);
		if (*end || n < 0 || !de->d_name[4]) { /* chk-N.unreadable, or a name that is not Flink's: stays */
			if (str_has_suffix(de->d_name, ".unreadable"))
				blobs_read(b, path, in->max_metadata_bytes);
			free(path);
			continue;
		}
		int64_t id = -1;
		usec_t t = 0;
		char *why = NULL;
		int r = snapshot_check(path, &id, &t, &why);
		free(why);
		if (r == 0) {
			*complete = xrealloc(*complete, (*ncomplete + 1) * sizeof(**complete));
			(*complete)[(*ncomplete)++] = (struct ckpt){path, id, NULL};
		} else if (r == -ENOENT) { /* no _metadata: what a JVM that died in the middle of a checkpoint left */
			strv_push_take(&out->checkpoints, path);
		} else { /* damaged, or unreadable: it stays, and so do the files it may name */
			blobs_problem(b, xasprintf("%s has a _metadata that cannot be read", path));
			free(path);
		}
	}
	closedir(d);
	return 0;
}

static const char *claimed_as(const struct leftovers_scan *in, const char *path)
{
	for (size_t i = 0; in->claimed && in->claimed[i]; i++)
		if (!strcmp(in->claimed[i], path) || same_dir(in->claimed[i], path))
			return in->claimed[i];
	return NULL;
}

/* The job's savepoint directories: complete claimed ones into *complete (ranked with the checkpoints), those
 * without _metadata into *partial (decided once every kept _metadata is read), and the _metadata of the others,
 * which all stay, into b. */
static void scan_savepoints(const struct leftovers_scan *in, struct blobs *b, struct ckpt **complete, size_t *ncomplete,
                            struct partial **partial, size_t *npartial)
{
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "savepoint-%.6s-", in->job_id);
	/* the savepoint directory itself may be a link, as the checkpoint directory may (both are the configuration's,
	 * and locked where they lead: supervisor.c); what is in it is not followed */
	DIR *d = opendir(in->savepoint_dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) || str_has_suffix(de->d_name, ".disposing"))
			continue; /* another job's, or retention's own removal in progress */
		char *path = path_join(in->savepoint_dir, de->d_name);
		if (!real_dir(path)) { /* a link named like a savepoint, or a file: neither read nor removed */
			free(path);
			continue;
		}
		struct stat st;
		char *meta = path_join(path, "_metadata");
		const char *claimed = str_has_suffix(de->d_name, ".unreadable") ? NULL : claimed_as(in, path);
		int64_t id = -1;
		usec_t t = 0;
		char *why = NULL;
		if (lstat(meta, &st) < 0 && errno == ENOENT && !str_has_suffix(de->d_name, ".unreadable")) {
			/* Flink writes _metadata last: a partial savepoint, or what Flink left of a claimed one */
			*partial = xrealloc(*partial, (*npartial + 1) * sizeof(**partial));
			(*partial)[(*npartial)++] = (struct partial){path, claimed};
			path = NULL;
		} else if (claimed && snapshot_check(path, &id, &t, &why) == 0) {
			*complete = xrealloc(*complete, (*ncomplete + 1) * sizeof(**complete));
			(*complete)[(*ncomplete)++] = (struct ckpt){path, id, claimed};
			path = NULL;
		} else {
			blobs_read(b, path, in->max_metadata_bytes); /* a damaged claimed one stays, like any other */
		}
		free(why);
		free(meta);
		free(path);
	}
	if (d)
		closedir(d);
}

/* ---- which names the kept _metadata holds: for each length the names have, one pass of a rolling hash over the
 * bytes (Rabin-Karp) against a hash table of those names, so that 100000 shared files cost about as much as one ---- */

struct name {
	char *path;
	const char *name; /* inside path */
	size_t len;
	uint64_t hash, size;
	bool named;
};

#define HASH_MUL 1099511628211ULL

static int cmp_size(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, c = *(const size_t *)y;
	return a < c ? -1 : a > c;
}

static uint64_t hash_of(const char *s, size_t n)
{
	uint64_t h = 0;
	for (size_t i = 0; i < n; i++)
		h = h * HASH_MUL + (unsigned char)s[i];
	return h;
}

/* Marks names[i].named for every name of length len that appears in a blob. */
static void mark_length(const struct blobs *b, struct name *names, size_t n, size_t len)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		count += names[i].len == len;
	size_t cap = 16;
	while (cap < 2 * count)
		cap <<= 1;
	size_t *slot = xcalloc(cap, sizeof(*slot)); /* index + 1 of a name, 0: empty */
	for (size_t i = 0; i < n; i++) {
		if (names[i].len != len)
			continue;
		size_t k = (size_t)names[i].hash & (cap - 1);
		while (slot[k])
			k = (k + 1) & (cap - 1);
		slot[k] = i + 1;
	}
	uint64_t top = 1; /* HASH_MUL^(len-1): what the byte leaving the window weighs */
	for (size_t i = 1; i < len; i++)
		top *= HASH_MUL;
	for (size_t j = 0; j < b->n; j++) {
		const unsigned char *p = (const unsigned char *)b->v[j];
		if (b->len[j] < len)
			continue;
		uint64_t h = hash_of((const char *)p, len);
		for (size_t at = 0;; at++) {
			for (size_t k = (size_t)h & (cap - 1); slot[k]; k = (k + 1) & (cap - 1)) {
				struct name *nm = &names[slot[k] - 1];
				if (nm->hash == h && !memcmp(nm->name, p + at, len))
					nm->named = true;
			}
			if (at + len >= b->len[j])
				break;
			h = (h - p[at] * top) * HASH_MUL + p[at + len];
		}
	}
	free(slot);
}

/* Adds path to v, searched for by its part from byte `from` on (its name alone when from is 0). */
static void push_name(struct name **v, size_t n, char *path, size_t from, uint64_t size)
{
	const char *base = strrchr(path, '/');
	base = from ? path + from : base ? base + 1 : path;
	size_t len = strlen(base);
	*v = xrealloc(*v, (n + 1) * sizeof(**v));
	(*v)[n] = (struct name){path, base, len, hash_of(base, len), size, false};
}

/* Marks each name of v that appears in a blob, one pass per length the names have. */
static void mark_names(const struct blobs *b, struct name *v, size_t n)
{
	size_t *lens = xcalloc(n ? n : 1, sizeof(*lens));
	for (size_t i = 0; i < n; i++)
		lens[i] = v[i].len;
	if (n)
		qsort(lens, n, sizeof(*lens), cmp_size);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || lens[i] != lens[i - 1])
			mark_length(b, v, n, lens[i]);
	free(lens);
}

/* The files of dir (shared/, or a claimed savepoint's directory that a kept point still shares files of: thin)
 * that no kept _metadata names go into out->shared; so does a thin directory's own _metadata. out NULL: only
 * counts. Returns how many of its files a kept _metadata names. */
static size_t scan_files(const char *dir, struct leftovers *out, const struct blobs *b, bool thin)
{
	DIR *d = real_dir(dir) ? opendir(dir) : NULL; /* a linked one is not swept */
	struct name *names = NULL;
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char *path = path_join(dir, de->d_name);
		struct stat st;
		if (de->d_name[0] == '.' || lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			free(path); /* ".", "..", a directory or a link: not Flink's file of a checkpoint, left alone */
			continue;
		}
		if (thin && !strcmp(de->d_name, "_metadata")) { /* a point subsumed: no restore point any more */
			if (out) {
				out->bytes += (uint64_t)st.st_size;
				strv_push_take(&out->shared, path);
			} else {
				free(path);
			}
			continue;
		}
		push_name(&names, n++, path, 0, (uint64_t)st.st_size);
	}
	if (d)
		closedir(d);
	mark_names(b, names, n);
	size_t named = 0;
	for (size_t i = 0; i < n; i++) {
		named += names[i].named;
		if (names[i].named || !out) {
			if (out)
				out->kept_shared++;
			free(names[i].path);
		} else {
			out->bytes += names[i].size;
			strv_push_take(&out->shared, names[i].path);
		}
	}
	free(names);
	return named;
}

/* ---- the trees of shared/ and taskowned/: ForSt's working directories (shared/op_*), the file-merging directories
 * (shared/<subtask>/, taskowned/<task manager>/), whose files a checkpoint names by path wherever they lie ---- */

#define TREE_MAX_DEPTH 8

struct tree {
	struct name *files;
	int *file_dir; /* the index of each file's directory, -1: the root's own file */
	size_t nfiles;
	/* the directories, each before what is in it; one a kept _metadata names by its path keeps it whole (Flink's
	 * file merging names its directories themselves: a checkpoint shares the directory) */
	struct name *dirs;
	int *parent; /* the index of each directory's parent, -1: a child of the root */
	bool *stays; /* it, or something in it, is named, or holds what is not Flink's (a link, a device, a dot file) */
	size_t ndirs;
	size_t from; /* a directory is searched for by its path from the root's own name on: "shared/op_x/db" */
};

/* Lists dir's regular files and real directories (a link is never followed) into t; what else is there, or deeper
 * than TREE_MAX_DEPTH, keeps its directory (parent) from going whole. */
static void tree_walk(struct tree *t, const char *dir, int parent, int depth)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (parent >= 0)
			t->stays[parent] = true; /* not read: nothing known of it goes whole */
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *path = path_join(dir, de->d_name);
		struct stat st;
		bool ok = de->d_name[0] != '.' && lstat(path, &st) == 0;
		if (ok && S_ISREG(st.st_mode)) {
			push_name(&t->files, t->nfiles, path, 0, (uint64_t)st.st_size);
			t->file_dir = xrealloc(t->file_dir, (t->nfiles + 1) * sizeof(*t->file_dir));
			t->file_dir[t->nfiles++] = parent;
		} else if (ok && S_ISDIR(st.st_mode) && depth < TREE_MAX_DEPTH) {
			push_name(&t->dirs, t->ndirs, path, t->from, 0);
			t->parent = xrealloc(t->parent, (t->ndirs + 1) * sizeof(*t->parent));
			t->stays = xrealloc(t->stays, (t->ndirs + 1) * sizeof(*t->stays));
			t->parent[t->ndirs] = parent;
			t->stays[t->ndirs] = false;
			tree_walk(t, path, (int)t->ndirs++, depth + 1);
		} else {
			if (parent >=
			    0) /* a link, a device, a dot file, too deep: left alone, and so is its directory */
				t->stays[parent] = true;
			free(path);
		}
	}
	closedir(d);
}

/* The files under root (shared/ or taskowned/, itself never removed) that no kept _metadata names go into
 * out->shared, each where it is; a directory below root none of whose files a kept _metadata names, holding
 * nothing but Flink's files and directories, goes whole into out->dirs (renamed aside before the launch: the next
 * JVM may make one of the same name, as ForSt's shared/op_<operator>_<subtask>__attempt_<n>/ is). A name is
 * searched for alone (Flink names these files by random UUIDs: one found elsewhere can only keep a file). */
static void scan_tree(const char *root, struct leftovers *out, const struct blobs *b)
{
	if (!real_dir(root))
		return; /* none, or a link: not swept */
	struct tree t = {0};
	const char *base = strrchr(root, '/');
	t.from = base ? (size_t)(base + 1 - root) : 0;
	tree_walk(&t, root, -1, 0);
	mark_names(b, t.files, t.nfiles);
	mark_names(b, t.dirs, t.ndirs);
	for (size_t i = 0; i < t.ndirs; i++)
		t.stays[i] = t.stays[i] || t.dirs[i].named;
	for (size_t i = 0; i < t.nfiles; i++)
		if (t.files[i].named && t.file_dir[i] >= 0)
			t.stays[t.file_dir[i]] = true;
	for (size_t i = t.ndirs; i-- > 0;) /* a directory comes before what is in it: children first, back to front */
		if (t.stays[i] && t.parent[i] >= 0)
			t.stays[t.parent[i]] = true;
	for (size_t i = 0; i < t.ndirs; i++) { /* the outermost directories that go, whole */
		int p = t.parent[i];
		if (!t.stays[i] && (p < 0 || t.stays[p])) {
			out->bytes += du(t.dirs[i].path);
			strv_push(&out->dirs, t.dirs[i].path);
		}
		free(t.dirs[i].path);
	}
	for (size_t i = 0; i < t.nfiles; i++) {
		int p = t.file_dir[i];
		if (t.files[i].named) {
			out->kept_shared++;
		} else if (p < 0 || t.stays[p]) { /* in a directory that goes whole, it goes with it */
			out->bytes += t.files[i].size;
			strv_push(&out->shared, t.files[i].path);
		}
		free(t.files[i].path);
	}
	free(t.files);
	free(t.file_dir);
	free(t.dirs);
	free(t.parent);
	free(t.stays);
}

/* Whether a kept _metadata names something inside the directory path: by "/<its name>/", or, for a claimed
 * savepoint, one of its files by its own name (before FLINK-39964 a checkpoint after a claim-mode restore of a
 * native savepoint names the savepoint's files by their names alone). */
static bool named_inside(const struct blobs *b, const char *path, bool claimed)
{
	const char *base = strrchr(path, '/');
	char *needle = xasprintf("/%s/", base ? base + 1 : path);
	bool named = blobs_name(b, needle) || (claimed && scan_files(path, NULL, b, true) > 0);
	free(needle);
	return named;
}

int leftovers_find(const struct leftovers_scan *in, struct leftovers *out)
{
	memset(out, 0, sizeof(*out));
	char *jobdir = path_join(in->checkpoint_dir, in->job_id);
	struct blobs b = {0};
	struct ckpt *complete = NULL;
	size_t ncomplete = 0;
	struct partial *partial = NULL;
	size_t npartial = 0;
	struct strv thin = {0};
	int r = scan_checkpoints(jobdir, in, out, &b, &complete, &ncomplete);
	if (r < 0) {
		strv_free(&out->checkpoints);
		goto done;
	}
	scan_savepoints(in, &b, &complete, &ncomplete, &partial, &npartial);
	if (ncomplete)
		qsort(complete, ncomplete, sizeof(*complete), cmp_id_desc);
	/* what stays: the newest `keep` (claimed savepoints rank as the checkpoints they became), and the one the
	 * launch restores; their _metadata names what else stays */
	bool *stays = xcalloc(ncomplete ? ncomplete : 1, sizeof(bool));
	unsigned keep = in->keep ? in->keep : 1;
	for (size_t i = 0; i < ncomplete; i++) {
		stays[i] = i < keep || same_dir(complete[i].path, in->restore_path) ||
		           same_dir(complete[i].path, in->keep_path);
		if (stays[i]) {
			blobs_read(&b, complete[i].path, in->max_metadata_bytes);
			out->kept_checkpoints++;
		}
	}
	if (in->restore_path && !strncmp(in->restore_path, "/", 1)) {
		bool listed = false;
		for (size_t i = 0; i < ncomplete && !listed; i++)
			listed = stays[i] && same_dir(complete[i].path, in->restore_path);
		if (!listed)
			blobs_read(&b, in->restore_path,
			           in->max_metadata_bytes); /* a savepoint, read again: harmless */
	}
	for (size_t i = 0; i < ncomplete; i++) {
		bool named = false;
		if (stays[i] || b.problem) {
			/* stays: what it names was read */
		} else if (complete[i].claimed) {
			named = named_inside(&b, complete[i].path, true);
		} else {
			char needle[48];
			snprintf(needle, sizeof(needle), "/chk-%lld/", (long long)complete[i].id);
			named = blobs_name(&b, needle);
		}
		if (stays[i] || b.problem || named) {
			if (!stays[i])
				out->kept_checkpoints++;
			if (!stays[i] && !b.problem && complete[i].claimed)
				strv_push(&thin, complete[i].path); /* subsumed, but its files are shared on */
			free(complete[i].path);
			continue;
		}
		if (complete[i].claimed)
			strv_push(&out->claimed_gone, complete[i].claimed);
		strv_push_take(&out->checkpoints, complete[i].path);
	}
	free(stays);
	for (size_t i = 0; i < npartial; i++) {
		if (b.problem && partial[i].claimed) {
			free(partial[i].path); /* what a kept point that cannot be read names is not known */
		} else if (!b.problem && named_inside(&b, partial[i].path, partial[i].claimed != NULL)) {
			strv_push_take(&thin, partial[i].path);
		} else {
			if (partial[i].claimed)
				strv_push(&out->claimed_gone, partial[i].claimed);
			strv_push_take(&out->savepoints, partial[i].path);
		}
	}
	for (size_t i = 0; i < out->checkpoints.n; i++)
		out->bytes += du(out->checkpoints.v[i]);
	for (size_t i = 0; i < out->savepoints.n; i++)
		out->bytes += du(out->savepoints.v[i]);
	struct stat st;
	for (size_t i = 0; in->claimed && in->claimed[i]; i++)
		if (lstat(in->claimed[i], &st) < 0 && errno == ENOENT)
			strv_push(&out->claimed_gone, in->claimed[i]);
	if (b.problem) {
		out->shared_skipped = xstrdup(b.problem);
	} else {
		char *shared = path_join(jobdir, "shared"), *taskowned = path_join(jobdir, "taskowned");
		scan_tree(shared, out, &b);
		scan_tree(taskowned, out, &b);
		free(shared);
		free(taskowned);
		for (size_t i = 0; i < thin.n; i++)
			(void)scan_files(thin.v[i], out, &b, true);
	}
done:
	free(complete);
	free(partial);
	strv_free(&thin);
	blobs_free(&b);
	free(jobdir);
	return r;
}

void leftovers_free(struct leftovers *l)
{
	strv_free(&l->checkpoints);
	strv_free(&l->savepoints);
	strv_free(&l->shared);
	strv_free(&l->dirs);
	strv_free(&l->claimed_gone);
	free(l->shared_skipped);
}

/* snapshots: restore-point discovery and ordering (see src/flink/snapshots.h). */
#include "snapshots.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Flink's checkpoint metadata header (Checkpoints.HEADER_MAGIC_NUMBER), then a version and the id. */
#define METADATA_MAGIC 0x4960672dU

const char *restore_kind_to_string(enum restore_kind k)
{
	switch (k) {
	case RESTORE_CHECKPOINT:
		return "checkpoint";
	case RESTORE_SAVEPOINT:
		return "savepoint";
	default:
		return "none";
	}
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int snapshot_check(const char *dir, int64_t *ret_id, usec_t *ret_time, char **why)
{
	char *meta = path_join(dir, "_metadata");
	/* O_NONBLOCK: a named pipe in the place of _metadata must not hold the scan (it is no regular file: damaged) */
	int fd = open(meta, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	int r = 0;
	struct stat st;
	unsigned char hdr[16];
	if (fd < 0) {
		r = -errno;
		struct stat dst;
		if (errno == ENOENT && stat(dir, &dst) < 0 && errno == ENOENT)
			*why = xasprintf("%s: does not exist (removed?)", dir);
		else
			*why = xasprintf("%s: %s", meta, r == -ENOENT ? "no _metadata (incomplete)" : strerror(-r));
	} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = -EBADMSG;
		*why = xasprintf("%s: not a regular file", meta);
	} else if (pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		r = -EBADMSG;
		*why = xasprintf("%s: truncated (%lld bytes)", meta, (long long)st.st_size);
	} else if (be32(hdr) != METADATA_MAGIC) {
		r = -EBADMSG;
		*why = xasprintf("%s: not Flink checkpoint metadata (bad magic number 0x%08x)", meta, be32(hdr));
	} else {
		*ret_id = (int64_t)((uint64_t)be32(hdr + 8) << 32 | be32(hdr + 12));
		*ret_time = (usec_t)st.st_mtim.tv_sec * USEC_PER_SEC + (usec_t)st.st_mtim.tv_nsec / 1000;
	}
	if (fd >= 0)
		close(fd);
	free(meta);
	return r;
}

static void add_point(struct restore_list *list, enum restore_kind kind, const char *path, int64_t id, usec_t time,
                      bool initial)
{
	for (size_t i = 0; i < list->n; i++)
		if (!strcmp(list->v[i].path, path))
			return;
	list->v = xrealloc(list->v, (list->n + 1) * sizeof(*list->v));
	list->v[list->n++] = (struct restore_point){kind, xstrdup(path), id, time, initial};
}

static void consider(struct restore_list *list, enum restore_kind kind, const char *path, bool initial, int64_t name_id)
{
	int64_t id = -1;
	usec_t time = 0;
	char *why = NULL;
	int r = snapshot_check(path, &id, &time, &why);
	bool seen = false;
	for (size_t i = 0; i < list->ncorrupt && !seen; i++)
		seen = !strcmp(list->corrupt[i].path, path);
	if (r == -EBADMSG && !seen) {
		struct stat st;
		char *meta = path_join(path, "_metadata");
		usec_t mtime = lstat(meta, &st) == 0
		                   ? (usec_t)st.st_mtim.tv_sec * USEC_PER_SEC + (usec_t)st.st_mtim.tv_nsec / 1000
		                   : 0;
		free(meta);
		list->corrupt = xrealloc(list->corrupt, (list->ncorrupt + 1) * sizeof(*list->corrupt));
		list->corrupt[list->ncorrupt++] =
		    (struct corrupt_point){kind, xstrdup(path), name_id, mtime, xstrdup(why)};
	}
	if (r < 0) {
		/* said, incomplete checkpoints too: scans run while no JVM writes, so one is what a crash in the
		 * middle of a checkpoint left (the JVM may write a new checkpoint of that id into it later) */
		strv_push_take(&list->skipped, xasprintf("skipped %s %s", restore_kind_to_string(kind), why));
		free(why);
		return;
	}
	/* one snapshot reached by several spellings (a trailing '/', a symlink) is one restore point */
	char *canonical = realpath(path, NULL);
	add_point(list, kind, canonical ? canonical : path, id, initial ? 0 : time, initial);
	free(canonical);
}

/* Whether path's last component is a savepoint of the job: Flink names them savepoint-<jobId6>-<random>. */
static bool is_job_savepoint(const char *path, const char *prefix)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t plen = strlen(prefix);
	return len - start > plen && !strncmp(path + start, prefix, plen);
}

static int scan_dir(const char *dir, const char *prefix, enum restore_kind kind, struct restore_list *list)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		int64_t name_id = -1;
		if (str_has_suffix(de->d_name, ".unreadable")) {
			list->given_up++; /* given up by an earlier start (Flink could not read it): kept for a look */
			continue;
		}
		if (str_has_suffix(de->d_name, SAVEPOINT_DISPOSING_SUFFIX) ||
		    str_has_suffix(de->d_name, REJECTED_SUFFIX))
			continue; /* being removed by retention, or half removed by a crash, or a rejected spec's: never
			           * a restore point */
		if (kind == RESTORE_CHECKPOINT) {
			const char *n = de->d_name + strlen(prefix);
			char *end;
			long long v = strtoll(n, &end, 10);
			if (!*n || v < 0 || *end)
				continue;
			name_id = v;
		}
		char *path = path_join(dir, de->d_name);
		consider(list, kind, path, false, name_id);
		free(path);
	}
	closedir(d);
	return 0;
}

/* Newest first. Newest means the highest checkpoint id: a job's checkpoints and savepoints share Flink's
 * checkpoint counter, which a restore continues from the restored id, so the id orders them whatever the
 * file times say (a volume copied without its times, a backup restored, a clock step). Two points share an
 * id only across a fork (a restore from an older point after a newer one was given up) or a copy: then a
 * checkpoint comes before a savepoint (a checkpoint Flink could not read is renamed aside, a savepoint that
 * was given up stays, so of the two the savepoint is the likelier dead branch), then the newer _metadata,
 * then the path, so that the order never depends on the order of readdir. */
static int cmp_newest_first(const void *a, const void *b)
{
	const struct restore_point *x = a, *y = b;
	if (x->id != y->id)
		return x->id > y->id ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind == RESTORE_CHECKPOINT ? -1 : 1;
	if (x->time != y->time)
		return x->time > y->time ? -1 : 1;
	return strcmp(x->path, y->path);
}

int restore_points_scan(const struct restore_scan *scan, struct restore_list *list)
{
	memset(list, 0, sizeof(*list));
	/* an unreadable directory is reported, and the others are still scanned and sorted: the caller must
	 * not mistake a partial answer for "no restore point" */
	char *jobdir = path_join(scan->checkpoint_dir, scan->job_id);
	int r = scan_dir(jobdir, "chk-", RESTORE_CHECKPOINT, list);
	free(jobdir);
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "savepoint-%.6s-", scan->job_id);
	int q = scan_dir(scan->savepoint_dir, prefix, RESTORE_SAVEPOINT, list);
	if (r == 0)
		r = q;
	for (size_t i = 0; scan->recorded_savepoints && scan->recorded_savepoints[i]; i++) {
		char *p = local_path_from_uri(scan->recorded_savepoints[i]);
		if (p) {
			struct stat st;
			if (stat(p, &st) < 0)
				strv_push_take(&list->skipped,
				               xasprintf("skipped recorded savepoint %s: %s", p, strerror(errno)));
			else if (is_job_savepoint(p, prefix))
				consider(list, RESTORE_SAVEPOINT, p, false, -1);
			/* else one of an earlier job id (before a stateless start): its ids count from another
			 * start, so comparing them with this job's would be meaningless; it is not this job's */
		}
		free(p);
	}
	if (scan->first_start && scan->initial_savepoint && list->n == 0) {
		char *p = local_path_from_uri(scan->initial_savepoint);
		if (p)
			consider(list, RESTORE_SAVEPOINT, p, true, -1);
		free(p);
	}
	if (list->n > 1)
		qsort(list->v, list->n, sizeof(*list->v), cmp_newest_first);
	return r;
}

bool snapshot_same(const char *a, const char *b)
{
	char *pa = a ? local_path_from_uri(a) : NULL, *pb = b ? local_path_from_uri(b) : NULL;
	bool same = false;
	if (pa && pb) {
		char *ra = realpath(pa, NULL), *rb = realpath(pb, NULL);
		same = !strcmp(ra ? ra : pa, rb ? rb : pb);
		free(ra);
		free(rb);
	}
	free(pa);
	free(pb);
	return same;
}

void restore_list_free(struct restore_list *list)
{
	for (size_t i = 0; i < list->n; i++)
		free(list->v[i].path);
	free(list->v);
	strv_free(&list->skipped);
	for (size_t i = 0; i < list->ncorrupt; i++) {
		free(list->corrupt[i].path);
		free(list->corrupt[i].why);
	}
	free(list->corrupt);
	memset(list, 0, sizeof(*list));
}

bool corrupt_point_is_newer(const struct corrupt_point *c, const struct restore_point *p)
{
	if (!p)
		return true;
	if (c->id >= 0 && p->id >= 0)
		return c->id > p->id;
	return c->time > p->time;
}

/* The complete savepoints of the job in dir, newest first. */
static void scan_savepoints(const char *dir, const char *job_id, struct restore_list *list)
{
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "savepoint-%.6s-", job_id);
	if (scan_dir(dir, prefix, RESTORE_SAVEPOINT, list) == 0 && list->n > 1)
		qsort(list->v, list->n, sizeof(*list->v), cmp_newest_first);
}

void savepoints_disposing(const char *dir, struct strv *out)
{
	dir_entries(dir, "savepoint-", SAVEPOINT_DISPOSING_SUFFIX, out);
}

void savepoints_present(const char *dir, const char *job_id, struct strv *out)
{
	struct restore_list list = {0};
	scan_savepoints(dir, job_id, &list);
	for (size_t i = 0; i < list.n; i++)
		strv_push(out, list.v[i].path);
	restore_list_free(&list);
}

char *savepoint_find_newest(const char *dir, const char *job_id, const struct strv *before, int64_t above)
{
	struct restore_list list = {0};
	scan_savepoints(dir, job_id, &list);
	char *best = NULL;
	for (size_t i = 0; i < list.n && !best; i++) {
		bool old = false;
		for (size_t j = 0; before && j < before->n && !old; j++)
			old = !strcmp(before->v[j], list.v[i].path);
		if (old)
			continue;
		if (list.v[i].id <= above)
			break; /* the newest new one is no newer than a checkpoint: none of them is the stop's */
		best = xstrdup(list.v[i].path);
	}
	restore_list_free(&list);
	return best;
}

int64_t checkpoints_newest_id(const char *checkpoint_dir, const char *job_id)
{
	struct restore_list list = {0};
	char *jobdir = path_join(checkpoint_dir, job_id);
	scan_dir(jobdir, "chk-", RESTORE_CHECKPOINT, &list);
	free(jobdir);
	int64_t newest = -1;
	for (size_t i = 0; i < list.n; i++)
		if (list.v[i].id > newest)
			newest = list.v[i].id;
	restore_list_free(&list);
	return newest;
}

/* The directory that holds path (malloc'd), or NULL for "/". */
static char *parent_of(const char *path)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	while (len > 0 && path[len - 1] != '/')
		len--;
	while (len > 1 && path[len - 1] == '/')
		len--;
	return len > 0 ? xstrndup(path, len) : NULL;
}

/* The local path of a snapshot location (malloc'd), or NULL with why. */
static char *location_path(const char *location, char **why)
{
	char *path = location ? local_path_from_uri(location) : NULL;
	if (!path)
		*why = xasprintf("%s is no local path", location ? location : "(no location)");
	return path;
}

int checkpoint_verify(const char *location, const char *checkpoint_dir, const char *job_id, int64_t id, char **why)
{
	char *path = location_path(location, why);
	if (!path)
		return -EINVAL;
	char name[32];
	snprintf(name, sizeof(name), "chk-%lld", (long long)id);
	char *jobdir = path_join(checkpoint_dir, job_id), *want = path_join(jobdir, name);
	int64_t got = -1;
	usec_t time = 0;
	char *bad = NULL;
	int r = 0;
	if (!snapshot_same(path, want)) {
		r = -EXDEV;
		*why = xasprintf("%s is not %s, where checkpoint %lld of job %s belongs", path, want, (long long)id,
		                 job_id);
	} else if ((r = snapshot_check(path, &got, &time, &bad)) < 0) {
		*why = bad;
		bad = NULL;
	} else if (got != id) {
		r = -ESTALE;
		*why = xasprintf("%s/_metadata holds checkpoint %lld, not %lld", path, (long long)got, (long long)id);
	}
	free(bad);
	free(want);
	free(jobdir);
	free(path);
	return r;
}

int savepoint_verify(const char *location, const char *savepoint_dir, const char *job_id, int64_t above,
                     int64_t *ret_id, char **why)
{
	char *path = location_path(location, why);
	if (!path)
		return -EINVAL;
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "savepoint-%.6s-", job_id);
	char *parent = parent_of(path), *bad = NULL;
	int64_t got = -1;
	usec_t time = 0;
	int r = 0;
	if (!parent || !snapshot_same(parent, savepoint_dir)) {
		r = -EXDEV;
		*why = xasprintf("%s is not in the savepoint directory %s", path, savepoint_dir);
	} else if (!is_job_savepoint(path, prefix) || str_has_suffix(path, SAVEPOINT_DISPOSING_SUFFIX)) {
		r = -EXDEV;
		*why = xasprintf("%s is no savepoint of job %s (Flink names them %s...)", path, job_id, prefix);
	} else if ((r = snapshot_check(path, &got, &time, &bad)) < 0) {
		*why = bad;
		bad = NULL;
	} else if (got <= above) {
		r = -ESTALE;
		*why =
		    xasprintf("%s/_metadata holds checkpoint id %lld, no newer than checkpoint %lld on the volume (the "
		              "next start would restore that one)",
		              path, (long long)got, (long long)above);
	} else {
		*ret_id = got;
	}
	free(bad);
	free(parent);
	free(path);
	return r;
}

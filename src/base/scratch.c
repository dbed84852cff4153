/* scratch: the JVM's local scratch directory (see src/base/scratch.h). */
#include "scratch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "digest.h"
#include "store.h"

char *scratch_default_dir(const char *name, const char *state_dir)
{
	const char *tmp = getenv("TMPDIR");
	char hex[65];
	sha256_hex(state_dir, strlen(state_dir), hex);
	return xasprintf("%s/flinklet-%s-%.8s", !str_empty(tmp) && tmp[0] == '/' ? tmp : "/tmp", name, hex);
}

/* The scratch directory itself is 0700 (the volume's group-shared 0770 of mkdir_p is not for it: it is flinklet's
 * own, and the strict check below refuses a directory others can write); its parents as mkdir_p makes them. */
static int scratch_mkdir(const char *dir)
{
	if (mkdir(dir, 0700) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	char *parent = path_dirname(dir);
	int r = mkdir_p(parent);
	free(parent);
	if (r < 0)
		return r;
	return mkdir(dir, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

int scratch_open(const char *dir, bool strict, char **err)
{
	int r = scratch_mkdir(dir);
	if (r < 0) {
		*err = xasprintf("unable to create the scratch directory %s: %s", dir, strerror(-r));
		return r;
	}
	struct stat st;
	if (lstat(dir, &st) < 0) {
		r = -errno;
		*err = xasprintf("unable to read the scratch directory %s: %s", dir, strerror(errno));
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		*err = xasprintf("the scratch directory %s is not a directory", dir);
		return -ENOTDIR;
	}
	/* in a shared /tmp someone else could have made the name first (a symlink, their own directory) */
	if (strict && (st.st_uid != geteuid() || (st.st_mode & 0022))) {
		*err =
		    xasprintf("the scratch directory %s is not flinklet's own (a directory of uid %u, not a symlink, "
		              "writable by no one else)",
		              dir, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

int scratch_rotate(const char *dir, unsigned n, char **old)
{
	*old = NULL;
	int q = scratch_mkdir(dir); /* a /tmp cleaner may have taken it */
	if (q < 0)
		return q;
	char *jvm = path_join(dir, "jvm");
	char *aside = xasprintf("%s/.old-%ld-%u", dir, (long)getpid(), n);
	int r = 0;
	if (rename(jvm, aside) == 0) {
		*old = aside;
		aside = NULL;
	} else if (errno != ENOENT) {
		r = -errno;
	}
	if (r == 0 && mkdir(jvm, 0700) < 0 && errno != EEXIST)
		r = -errno;
	free(aside);
	free(jvm);
	return r;
}

void scratch_set_aside(const char *dir, struct strv *out)
{
	dir_entries(dir, ".old-", NULL, out);
}

void scratch_standby_dirs(const char *dir, struct strv *out)
{
	dir_entries(dir, SCRATCH_STANDBY_PREFIX, NULL, out);
}

pid_t scratch_remove(const struct strv *paths)
{
	return rm_rf_child(paths);
}

int64_t scratch_need(int64_t state_bytes)
{
	if (state_bytes < 0)
		state_bytes = 0;
	if (state_bytes > (INT64_MAX - SCRATCH_FIXED_BYTES) / 2)
		return INT64_MAX;
	return 2 * state_bytes + SCRATCH_FIXED_BYTES;
}

int scratch_free(const char *dir, int64_t *free_bytes)
{
	struct statvfs v;
	if (statvfs(dir, &v) < 0)
		return -errno;
	unsigned long long bytes = (unsigned long long)v.f_bavail * (unsigned long long)v.f_frsize;
	*free_bytes = bytes > (unsigned long long)INT64_MAX ? INT64_MAX : (int64_t)bytes;
	return 0;
}

/* The blocks the tree at dirfd/name holds, in bytes, on device dev (what removing it frees): each file's share of
 * its blocks (divided by its links, so a file linked twice inside the tree counts once); what cannot be read counts
 * nothing. depth bounds the recursion. */
static int64_t tree_bytes(int dirfd, const char *name, dev_t dev, int depth)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
		return 0;
	int64_t bytes = (int64_t)st.st_blocks * 512 / (st.st_nlink > 1 && !S_ISDIR(st.st_mode) ? st.st_nlink : 1);
	if (!S_ISDIR(st.st_mode) || depth > 64)
		return bytes;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return bytes;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			bytes += tree_bytes(fd, e->d_name, dev, depth + 1);
	closedir(d);
	return bytes;
}

int scratch_room(const char *dir, int64_t *room)
{
	struct stat st;
	if (stat(dir, &st) < 0)
		return -errno;
	/* the trees set aside first, then the free space: a tree a removal frees in between counts at most twice,
	 * never not at all */
	struct strv aside = {0};
	scratch_set_aside(dir, &aside);
	int64_t held = 0;
	for (size_t i = 0; i < aside.n; i++)
		held += tree_bytes(AT_FDCWD, aside.v[i], st.st_dev, 0);
	strv_free(&aside);
	int64_t free_bytes = 0;
	int r = scratch_free(dir, &free_bytes);
	if (r < 0)
		return r;
	*room = free_bytes > INT64_MAX - held ? INT64_MAX : free_bytes + held;
	return 0;
}

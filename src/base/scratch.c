/* scratch: the JVM's local scratch directory (see src/base/scratch.h). */
#include "scratch.h"

#include <errno.h>
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

void scratch_leftovers(const char *dir, struct strv *out)
{
	dir_entries(dir, ".old-", NULL, out);
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

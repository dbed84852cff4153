/* crashlogs: where the JVM's fatal-error logs go and how many are kept (crashlogs.h). */
#include "crashlogs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const prefixes[] = {"hs_err_pid", "replay_pid"};

void crashlogs_jvm_options(const char *dir, struct strv *argv)
{
	strv_push_take(argv, xasprintf("-XX:ErrorFile=%s/hs_err_pid%%p.log", dir));
	strv_push_take(argv, xasprintf("-XX:ReplayDataFile=%s/replay_pid%%p.log", dir));
}

int crashlogs_parse_name(const char *name, long *ret_pid)
{
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(name, prefixes[i], n))
			continue;
		const char *p = name + n, *digits = p;
		long pid = 0;
		while (*p >= '0' && *p <= '9' && p - digits < 10)
			pid = pid * 10 + (*p++ - '0');
		if (p == digits || strcmp(p, ".log"))
			return 0;
		*ret_pid = pid;
		return 1;
	}
	return 0;
}

struct file {
	char *path;
	const char *name; /* its last component, in path */
	int dfd;          /* its directory, opened without following a link: what is removed is in it */
	long pid;
	int64_t mtime_ns;
};

struct crash {
	long pid;
	int64_t newest_ns;
};

/* The crash files in dir. dir itself is followed only when follow (the state directory: a volume may be mounted
 * through a link); else a link or a non-directory in its place is reported in *skipped and nothing in it is
 * touched. Returns the directory's descriptor (the caller closes it), or -1. */
static int scan(const char *dir, bool follow, struct file **files, size_t *n, size_t *cap, int *r, const char **skipped)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (dfd < 0) {
		struct stat st; /* (a link gives ENOTDIR with O_DIRECTORY, ELOOP without) */
		if (errno == ELOOP || errno == ENOTDIR)
			*skipped =
			    lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) ? "is a symbolic link" : "is not a directory";
		else if (errno != ENOENT && *r == 0)
			*r = -errno;
		return -1;
	}
	DIR *d = fdopendir(dup(dfd));
	if (!d) {
		if (*r == 0)
			*r = -errno;
		return dfd;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		long pid;
		if (!crashlogs_parse_name(de->d_name, &pid))
			continue;
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue; /* gone meanwhile, or not a file the JVM wrote (a link, a directory): left alone */
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*files = xrealloc(*files, *cap * sizeof(**files));
		}
		char *path = path_join(dir, de->d_name);
		(*files)[(*n)++] = (struct file){path, strrchr(path, '/') + 1, dfd, pid,
		                                 (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec};
	}
	closedir(d);
	return dfd;
}

static int newest_first(const void *a, const void *b)
{
	const struct crash *x = a, *y = b;
	if (x->newest_ns != y->newest_ns)
		return x->newest_ns > y->newest_ns ? -1 : 1;
	return x->pid > y->pid ? -1 : x->pid < y->pid;
}

void crashlogs_prune(const char *dir, const char *legacy_dir, unsigned keep, pid_t pid, struct crashlogs_pruned *ret)
{
	*ret = (struct crashlogs_pruned){0};
	struct file *files = NULL;
	size_t n = 0, cap = 0;
	int dfd = scan(dir, false, &files, &n, &cap, &ret->r, &ret->skipped);
	const char *ignored = NULL;
	int legacy_fd = legacy_dir ? scan(legacy_dir, true, &files, &n, &cap, &ret->r, &ignored) : -1;
	/* one crash per pid, as new as its newest file */
	struct crash *crashes = xcalloc(n ? n : 1, sizeof(*crashes));
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < nc && crashes[j].pid != files[i].pid)
			j++;
		if (j == nc)
			crashes[nc++] = (struct crash){files[i].pid, files[i].mtime_ns};
		else if (files[i].mtime_ns > crashes[j].newest_ns)
			crashes[j].newest_ns = files[i].mtime_ns;
	}
	qsort(crashes, nc, sizeof(*crashes), newest_first);
	/* the JVM that just ended goes first whatever its files' times say (a clock step): its log is the news */
	for (size_t j = 1; j < nc && pid > 0; j++) {
		if (crashes[j].pid == (long)pid) {
			struct crash ours = crashes[j];
			memmove(crashes + 1, crashes, j * sizeof(*crashes));
			crashes[0] = ours;
			break;
		}
	}
	size_t kept = nc < keep ? nc : keep;
	ret->kept = (unsigned)kept;
	for (size_t i = 0; i < n; i++) {
		bool gone = false; /* a crash past the kept ones */
		for (size_t j = kept; j < nc && !gone; j++)
			gone = crashes[j].pid == files[i].pid;
		if (gone) {
			if (unlinkat(files[i].dfd, files[i].name, 0) == 0)
				ret->removed++;
			else if (errno != ENOENT && ret->r == 0)
				ret->r = -errno;
		} else if (pid > 0 && files[i].pid == (long)pid && !ret->log &&
		           !strncmp(files[i].name, "hs_err_pid", 10)) {
			ret->log = files[i].path;
			files[i].path = NULL;
		}
		free(files[i].path);
	}
	free(files);
	free(crashes);
	if (dfd >= 0)
		close(dfd);
	if (legacy_fd >= 0)
		close(legacy_fd);
	if (ret->skipped && pid > 0 && !ret->log) {
		/* the JVM wrote through the link (the user's choice): its log is said, nothing there is removed */
		char *name = xasprintf("hs_err_pid%ld.log", (long)pid), *path = path_join(dir, name);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			ret->log = path;
		else
			free(path);
		free(name);
	}
}

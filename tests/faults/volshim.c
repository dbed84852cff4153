/* volshim: an LD_PRELOAD library for fault injection on the state volume (issue 8, item 2). It counts the
 * calls flinklet makes that change files under $VOLSHIM_DIR (open for writing, write, pwrite, ftruncate,
 * fsync, fdatasync, rename, unlink, mkdir) and, at step $VOLSHIM_AT, acts as $VOLSHIM_ACTION says:
 *
 *   kill    SIGKILL before the call; a write first writes half of its bytes (a torn write)
 *   enospc  the call fails with ENOSPC (a write first writes half of its bytes, as a full disk does)
 *   eio     the call fails with EIO
 *   erofs   the call fails with EROFS
 *
 * With $VOLSHIM_LOG each counted step is appended there ("<n> <call> <path>"), so a first run with
 * VOLSHIM_AT=0 lists every step of a scenario and later runs can stop at each one. With $VOLSHIM_SYNC_DELAY_MS
 * every fsync and fdatasync of a file under $VOLSHIM_DIR takes that long first (a slow network volume, issue 15).
 * With $VOLSHIM_SYNC_BLOCK_FILE every such sync waits while that file exists (a test holds the volume, looks at
 * what flinklet does meanwhile, then removes the file: deterministic, no timing); a sync that waits creates
 * "<that file>.held" first, so the test knows one is held.
 * The metadata calls (rename, renameat, unlink, unlinkat, rmdir) of a path under $VOLSHIM_DIR are slowed and held
 * the same way by $VOLSHIM_META_DELAY_MS and $VOLSHIM_META_BLOCK_FILE ("<that file>.held" when one waits); with
 * $VOLSHIM_META_BLOCK_MATCH only those whose path contains that string are held (one file of a tree being removed:
 * the tree is then half removed). Forked children (a removal in a child process) inherit the library.
 * Steps are counted atomically
 * (flinklet writes from its worker thread and its loop). The library unsets LD_PRELOAD at load, so the JVM
 * flinklet starts does not inherit it. Test code only: never shipped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static size_t dir_len;
static long at;
static int fail_errno; /* 0: kill */
static int log_fd = -1;
static long step;
static long sync_delay_ms;
static const char *block_file;
static long meta_delay_ms;
static const char *meta_block_file, *meta_block_match;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_ftruncate)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_unlink)(const char *);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_rmdir)(const char *);

__attribute__((constructor)) static void volshim_init(void)
{
	real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_pwrite = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
	real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	real_ftruncate = (int (*)(int, off_t))dlsym(RTLD_NEXT, "ftruncate");
	real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	real_unlink = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
	real_mkdir = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
	real_renameat = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
	real_unlinkat = (int (*)(int, const char *, int))dlsym(RTLD_NEXT, "unlinkat");
	real_rmdir = (int (*)(const char *))dlsym(RTLD_NEXT, "rmdir");
	unsetenv("LD_PRELOAD");
	dir = getenv("VOLSHIM_DIR");
	dir_len = dir ? strlen(dir) : 0;
	const char *a = getenv("VOLSHIM_AT");
	at = a ? strtol(a, NULL, 10) : 0;
	const char *act = getenv("VOLSHIM_ACTION");
	fail_errno = !act || !strcmp(act, "kill") ? 0
	             : !strcmp(act, "enospc")     ? ENOSPC
	             : !strcmp(act, "eio")        ? EIO
	             : !strcmp(act, "erofs")      ? EROFS
	                                          : 0;
	const char *delay = getenv("VOLSHIM_SYNC_DELAY_MS");
	sync_delay_ms = delay ? strtol(delay, NULL, 10) : 0;
	block_file = getenv("VOLSHIM_SYNC_BLOCK_FILE");
	const char *mdelay = getenv("VOLSHIM_META_DELAY_MS");
	meta_delay_ms = mdelay ? strtol(mdelay, NULL, 10) : 0;
	meta_block_file = getenv("VOLSHIM_META_BLOCK_FILE");
	meta_block_match = getenv("VOLSHIM_META_BLOCK_MATCH");
	const char *lp = getenv("VOLSHIM_LOG");
	if (lp)
		log_fd = real_open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

static int under_dir(const char *path)
{
	return dir_len && path && !strncmp(path, dir, dir_len) && (path[dir_len] == '/' || path[dir_len] == '\0');
}

static int fd_under_dir(int fd)
{
	char link[64], target[4096];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = '\0';
	return under_dir(target);
}

/* Counts a step; returns 1 when this one is to fail (errno set), kills when it is to kill. */
static int fault(const char *call, const char *path, int fd, int torn_fd, const void *buf, size_t len)
{
	long me = __atomic_add_fetch(&step, 1, __ATOMIC_SEQ_CST);
	if (log_fd >= 0) {
		char target[4096] = "";
		if (!path) {
			char link[64];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			ssize_t n = readlink(link, target, sizeof(target) - 1);
			target[n > 0 ? n : 0] = '\0';
			path = target;
		}
		char line[4200];
		int n = snprintf(line, sizeof(line), "%ld %s %s\n", me, call, path);
		if (n > 0)
			real_write(log_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
	if (me != at)
		return 0;
	if (torn_fd >= 0 && len > 1)
		real_write(torn_fd, buf, len / 2);
	if (!fail_errno) {
		raise(SIGKILL);
		for (;;)
			pause();
	}
	errno = fail_errno;
	return 1;
}

static int opens_for_writing(int flags)
{
	return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (opens_for_writing(flags) && under_dir(path) && fault("open", path, -1, -1, NULL, 0))
		return -1;
	return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

ssize_t write(int fd, const void *buf, size_t len)
{
	if (fd > 2 && fd != log_fd && fd_under_dir(fd) && fault("write", NULL, fd, fd, buf, len))
		return -1;
	return real_write(fd, buf, len);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (fd > 2 && fd_under_dir(fd) && fault("pwrite", NULL, fd, -1, NULL, 0))
		return -1;
	return real_pwrite(fd, buf, len, off);
}

int ftruncate(int fd, off_t len)
{
	if (fd_under_dir(fd) && fault("ftruncate", NULL, fd, -1, NULL, 0))
		return -1;
	return real_ftruncate(fd, len);
}

/* A slow volume: the call waits first (while the block file exists, then the delay). */
static void slow_call(const char *block, long delay_ms)
{
	struct stat st;
	if (block && stat(block, &st) == 0) {
		char held[4200];
		snprintf(held, sizeof(held), "%s.held", block);
		int fd = real_open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
		struct timespec tick = {0, 5 * 1000000L};
		while (stat(block, &st) == 0)
			nanosleep(&tick, NULL);
	}
	if (delay_ms <= 0)
		return;
	struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void slow_sync(void)
{
	slow_call(block_file, sync_delay_ms);
}

/* A metadata call on the volume: slowed and held like a sync (the hold only for paths with the match in them). */
static void slow_meta(const char *path)
{
	int errno_saved = errno;
	const char *block = meta_block_file;
	if (block && meta_block_match && (!path || !strstr(path, meta_block_match)))
		block = NULL;
	slow_call(block, meta_delay_ms);
	errno = errno_saved;
}

/* The path a *at call names: relative ones through /proc/self/fd of the directory. */
static const char *at_path(int dirfd, const char *path, char *buf, size_t size)
{
	if (!path || path[0] == '/' || dirfd == AT_FDCWD)
		return path;
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, buf, size - 1);
	if (n <= 0)
		return path;
	buf[n] = '\0';
	size_t len = strlen(buf);
	snprintf(buf + len, size - len, "/%s", path);
	return buf;
}

int fsync(int fd)
{
	if (!fd_under_dir(fd))
		return real_fsync(fd);
	if (fault("fsync", NULL, fd, -1, NULL, 0))
		return -1;
	slow_sync();
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	if (!fd_under_dir(fd))
		return real_fdatasync(fd);
	if (fault("fdatasync", NULL, fd, -1, NULL, 0))
		return -1;
	slow_sync();
	return real_fdatasync(fd);
}

int rename(const char *from, const char *to)
{
	if (under_dir(from) || under_dir(to)) {
		if (fault("rename", to, -1, -1, NULL, 0))
			return -1;
		slow_meta(from);
	}
	return real_rename(from, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
	char a[4200], b[4200];
	const char *pf = at_path(fromfd, from, a, sizeof(a)), *pt = at_path(tofd, to, b, sizeof(b));
	if (under_dir(pf) || under_dir(pt)) {
		if (fault("renameat", pt, -1, -1, NULL, 0))
			return -1;
		slow_meta(pf);
	}
	return real_renameat(fromfd, from, tofd, to);
}

int unlink(const char *path)
{
	if (under_dir(path)) {
		if (fault("unlink", path, -1, -1, NULL, 0))
			return -1;
		slow_meta(path);
	}
	return real_unlink(path);
}

int unlinkat(int dirfd, const char *path, int flags)
{
	char a[4200];
	const char *p = at_path(dirfd, path, a, sizeof(a));
	if (under_dir(p)) {
		if (fault("unlinkat", p, -1, -1, NULL, 0))
			return -1;
		slow_meta(p);
	}
	return real_unlinkat(dirfd, path, flags);
}

int rmdir(const char *path)
{
	if (under_dir(path)) {
		if (fault("rmdir", path, -1, -1, NULL, 0))
			return -1;
		slow_meta(path);
	}
	return real_rmdir(path);
}

int mkdir(const char *path, mode_t mode)
{
	if (under_dir(path) && fault("mkdir", path, -1, -1, NULL, 0))
		return -1;
	return real_mkdir(path, mode);
}

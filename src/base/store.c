/* store: crash-safe files on the state volume (see src/base/store.h). */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fsmode.h"
#include "util.h"

static atomic_uint_fast64_t syncs;

int store_sync(int fd, bool data_only)
{
	atomic_fetch_add(&syncs, 1);
	int r = data_only ? fdatasync(fd) : fsync(fd);
	return r < 0 ? -errno : 0;
}

uint64_t store_syncs(void)
{
	return atomic_load(&syncs);
}

int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	int r = 0;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, FSMODE_DIR) < 0 && errno != EEXIST) {
			r = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	if (r == 0) {
		struct stat st;
		if (stat(path, &st) < 0)
			r = -errno;
		else if (!S_ISDIR(st.st_mode))
			r = -ENOTDIR;
	}
	free(p);
	return r;
}

int fsync_parent(const char *path)
{
	char *dir = path_dirname(path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
	int r = store_sync(fd, false);
	close(fd);
	return r;
}

int write_file_atomic(const char *path, const char *data, size_t len)
{
	return write_file_atomic_mode(path, data, len, FSMODE_FILE);
}

int write_file_atomic_mode(const char *path, const char *data, size_t len, unsigned mode)
{
	const char *slash = strrchr(path, '/');
	char *tmp = slash ? xasprintf("%.*s/.%s.tmp.%ld", (int)(slash - path), path, slash + 1, (long)getpid())
	                  : xasprintf(".%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)mode);
	if (fd < 0) {
		int r = -errno;
		free(tmp);
		return r;
	}
	int r = write_all(fd, data, len);
	if (r == 0)
		r = store_sync(fd, false);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	else
		r = fsync_parent(path);
	free(tmp);
	return r;
}

int read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct strbuf b = {0};
	char chunk[8192];
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		if (b.len + (size_t)n > max) {
			r = -EFBIG;
			break;
		}
		strbuf_appendn(&b, chunk, (size_t)n);
	}
	close(fd);
	if (r < 0) {
		strbuf_free(&b);
		return r;
	}
	if (ret_len)
		*ret_len = b.len;
	*ret = strbuf_steal(&b);
	return 0;
}

/* One directory level of rm_tree: the entries of the directory open at fd are unlinked, but for the first
 * subdirectory not in *failed, whose name is returned (malloc'd; NULL: none left). */
static char *clear_level(int fd, const ino_t *failed, size_t nfailed, int *r)
{
	int dfd = dup(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		*r = *r ? *r : -errno;
		return NULL;
	}
	char *descend = NULL;
	struct dirent *de;
	while (!descend && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && !*r)
				*r = -errno;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT && !*r)
				*r = -errno;
			continue;
		}
		bool skip = false;
		for (size_t i = 0; i < nfailed && !skip; i++)
			skip = failed[i] == st.st_ino;
		if (!skip)
			descend = xstrdup(de->d_name);
	}
	closedir(d);
	return descend;
}

/* Removes the directory tree at path without following links and without a path per file: it walks down and up
 * with one directory open at a time (openat, "..", unlinkat), so a tree deeper than PATH_MAX, or than the open
 * files allowed, goes too. What cannot be removed stays, and so does every directory above it; the rest goes. */
static int rm_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct strv names = {0}; /* the way down from path */
	ino_t *failed = NULL;    /* directories that could not be emptied: not entered again */
	size_t nfailed = 0;
	int r = 0;
	for (;;) {
		char *sub = clear_level(fd, failed, nfailed, &r);
		if (sub) {
			int subfd = openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat st;
			if (subfd >= 0) {
				close(fd);
				fd = subfd;
				strv_push_take(&names, sub);
			} else {
				if (!r)
					r = -errno;
				if (fstatat(fd, sub, &st, AT_SYMLINK_NOFOLLOW) == 0) {
					failed = xrealloc(failed, (nfailed + 1) * sizeof(*failed));
					failed[nfailed++] = st.st_ino;
				}
				free(sub);
			}
			continue;
		}
		if (names.n == 0)
			break; /* back at path, emptied as far as it goes */
		struct stat here;
		bool known = fstat(fd, &here) == 0;
		int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		fd = up;
		char *name = names.v[--names.n];
		names.v[names.n] = NULL;
		if (fd < 0) {
			if (!r)
				r = -errno;
			free(name);
			break;
		}
		if (unlinkat(fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
			if (!r)
				r = -errno;
			if (known) {
				failed = xrealloc(failed, (nfailed + 1) * sizeof(*failed));
				failed[nfailed++] = here.st_ino;
			}
		}
		free(name);
	}
	if (fd >= 0)
		close(fd);
	strv_free(&names);
	free(failed);
	if (rmdir(path) < 0 && errno != ENOENT && !r)
		r = -errno;
	return r;
}

int rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	return rm_tree(path);
}

pid_t rm_rf_child(const struct strv *paths)
{
	if (paths->n == 0)
		return 0;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		return pid;
	/* the child: default signals, dies with the supervisor, removes, exits */
	sigset_t none;
	sigemptyset(&none);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	close_range(3, ~0U, 0);
	int failed = 0;
	for (size_t i = 0; i < paths->n; i++)
		failed |= rm_rf(paths->v[i]) < 0;
	_exit(failed);
}

/* The first line of a regular file (never waiting on a FIFO, never through a link), malloc'd, or NULL. */
static char *first_line(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	char buf[512] = {0};
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	close(fd);
	if (n <= 0)
		return NULL;
	buf[strcspn(buf, "\n")] = 0;
	return buf[0] ? xstrdup(buf) : NULL;
}

int store_lock_dir(const char *dir, const char *name, const char *who, char **ret_who)
{
	if (ret_who)
		*ret_who = NULL;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *path = path_join(dir, name);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		/* the holder writes who it is right after it locked: a moment's wait for a holder that just did */
		for (int i = 0; ret_who && r == -EBUSY && i < 25 && !(*ret_who = first_line(path)); i++)
			usleep(20000);
		close(fd);
		free(path);
		return r;
	}
	/* who holds it, for the message of the next one: a new file renamed over whatever is there (a FIFO or a
	 * link in its place is replaced, never opened); what cannot be replaced (a directory of that name) makes the
	 * directory unusable: the lock is let go */
	char *tmp = xasprintf("%s.%ld.tmp", path, (long)getpid());
	int w = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, FSMODE_FILE);
	size_t n = strlen(who);
	int r = w < 0 ? -errno : write(w, who, n) == (ssize_t)n ? 0 : -EIO;
	if (w >= 0)
		close(w);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		close(fd);
		fd = r;
	}
	free(tmp);
	free(path);
	return fd;
}

int store_lock(const char *state_dir, long *ret_owner)
{
	/* read-only: a file held open for writing would keep the volume from being remounted read-only (by an
	 * administrator, or by the kernel on I/O errors); non-blocking and no link: a FIFO or a link in its place is
	 * refused, never waited on or followed */
	char *path = path_join(state_dir, "lock");
	int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, FSMODE_FILE);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
		errno = EBADF;
	}
	if (fd < 0) {
		int r = -errno;
		free(path);
		return r;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		char buf[32] = {0};
		if (ret_owner) {
			ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
			*ret_owner = n > 0 ? strtol(buf, NULL, 10) : 0;
		}
		close(fd);
		free(path);
		return r;
	}
	/* who holds it, for the message of the next one (written once, closed at once) */
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	int w = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	free(path);
	if (w < 0 || write(w, buf, (size_t)n) != n) {
		int r = w < 0 ? -errno : -EIO;
		if (w >= 0)
			close(w);
		close(fd);
		return r;
	}
	close(w);
	return fd;
}

int store_lock_held(const char *state_dir)
{
	char *path = path_join(state_dir, "lock");
	struct stat st;
	int r = stat(path, &st) < 0 ? -errno : 0;
	/* the holder's pid as it wrote it, for file systems whose stat and locks disagree on the device */
	char *text = NULL;
	long owner = 0;
	if (r == 0 && read_file(path, 64, &text, NULL) == 0)
		owner = strtol(text, NULL, 10);
	free(text);
	free(path);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	FILE *f = fopen("/proc/locks", "re");
	if (!f) /* no /proc: the pid the holder wrote, if that process lives */
		return owner > 0 && (kill((pid_t)owner, 0) == 0 || errno == EPERM);
	char line[256];
	int held = 0;
	/* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters' lines ("1: -> FLOCK ...") hold nothing */
	while (!held && fgets(line, sizeof(line), f)) {
		char kind[16];
		long pid;
		unsigned maj, min;
		unsigned long ino;
		if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", kind, &pid, &maj, &min, &ino) != 5 ||
		    strcmp(kind, "FLOCK") || ino != (unsigned long)st.st_ino)
			continue;
		held = (maj == major(st.st_dev) && min == minor(st.st_dev)) || (owner > 0 && pid == owner);
	}
	fclose(f);
	return held;
}

static bool is_job_id(const char *s)
{
	if (strlen(s) != 32)
		return false;
	for (size_t i = 0; i < 32; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int store_new_job_id(char ret[33])
{
	unsigned char raw[16];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < 16; i++)
		snprintf(ret + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int store_job_id(const char *state_dir, char ret[33])
{
	char *path = path_join(state_dir, "job-id");
	char *text = NULL;
	int r = read_file(path, 256, &text, NULL);
	if (r == 0) {
		size_t n = strcspn(text, "\r\n");
		text[n] = '\0';
		if (is_job_id(text)) {
			memcpy(ret, text, 33);
			free(text);
			free(path);
			return 0;
		}
		free(text);
		/* an unreadable id (impossible with atomic writes) is replaced, never half-used */
	} else if (r != -ENOENT) {
		free(path);
		return r;
	}
	r = store_new_job_id(ret);
	if (r < 0) {
		free(path);
		return r;
	}
	char line[34];
	snprintf(line, sizeof(line), "%s\n", ret);
	r = write_file_atomic(path, line, 33);
	free(path);
	return r;
}

int store_append_events(const char *state_dir, char *const *lines, size_t n)
{
	if (n == 0)
		return 0;
	char *path = path_join(state_dir, "events.jsonl");
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, FSMODE_FILE);
	free(path);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	/* one write of every line, one fdatasync: a burst of events costs what one did */
	struct strbuf b = {0};
	for (size_t i = 0; i < n; i++) {
		strbuf_append(&b, lines[i]);
		strbuf_append(&b, "\n");
	}
	int r = write_all(fd, b.buf, b.len);
	strbuf_free(&b);
	if (r == 0)
		r = store_sync(fd, true);
	/* a full volume can take half a line: cut it off again, so that the next line starts a line of its own
	 * (a crash before this is what store_repair_events handles) */
	if (r < 0 && ftruncate(fd, st.st_size) == 0)
		(void)store_sync(fd, true);
	close(fd);
	return r;
}

int store_append_event(const char *state_dir, const char *json_line)
{
	char *line = (char *)json_line;
	return store_append_events(state_dir, &line, 1);
}

int store_events_tail(const char *state_dir, size_t max_bytes, char **ret, size_t *ret_len)
{
	*ret = NULL;
	*ret_len = 0;
	char *path = path_join(state_dir, "events.jsonl");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0) {
		if (errno != ENOENT)
			return -errno;
		*ret = xstrdup("");
		return 0;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	/* one byte before the window too: whether the window starts a line */
	off_t from = st.st_size > (off_t)max_bytes ? st.st_size - (off_t)max_bytes - 1 : 0;
	size_t want = (size_t)(st.st_size - from), got = 0;
	char *buf = xmalloc(want + 1);
	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, from + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* cut short: what was read is still whole lines up to its last newline */
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	size_t skip = 0;
	if (from > 0) {
		/* from the first line that starts after buf[0] */
		const char *nl = memchr(buf, '\n', got);
		skip = nl ? (size_t)(nl - buf) + 1 : got;
	}
	memmove(buf, buf + skip, got - skip + 1);
	*ret = buf;
	*ret_len = got - skip;
	return 0;
}

static bool is_temp_name(const char *name)
{
	/* what write_file_atomic_mode makes: .<name>.tmp.<pid> */
	if (name[0] != '.')
		return false;
	const char *t = strstr(name, ".tmp.");
	if (!t || t == name)
		return false;
	const char *d = t + 5;
	if (!*d)
		return false;
	for (; *d; d++)
		if (*d < '0' || *d > '9')
			return false;
	return true;
}

int store_remove_files(const char *dir, bool (*match)(const char *name))
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!match(de->d_name))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int store_clean_temps(const char *dir)
{
	return store_remove_files(dir, is_temp_name);
}

int write_file_if_changed(const char *path, const char *data, size_t len)
{
	char *old = NULL;
	size_t old_len = 0;
	if (read_file(path, len + 1, &old, &old_len) == 0) {
		bool same = old_len == len && memcmp(old, data, len) == 0;
		free(old);
		if (same)
			return 0;
	}
	return write_file_atomic(path, data, len);
}

int store_repair_events(const char *state_dir)
{
	char *path = path_join(state_dir, "events.jsonl");
	int fd = open(path, O_RDWR | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		off_t end = st.st_size;
		char c;
		if (pread(fd, &c, 1, end - 1) == 1 && c != '\n') {
			/* walk back to the last complete line */
			off_t pos = end - 1;
			while (pos > 0) {
				if (pread(fd, &c, 1, pos - 1) != 1)
					break;
				if (c == '\n')
					break;
				pos--;
			}
			if (ftruncate(fd, pos) < 0 || fsync(fd) < 0)
				r = -errno;
		}
	}
	close(fd);
	return r;
}

/* jattach: the HotSpot attach protocol in a helper process (see src/flink/jattach.h). The child of the fork
 * makes only system calls (everything it needs is prepared before the fork): flinklet may have threads
 * (libcurl's resolver), and a child of a threaded process must not allocate. */
#include "jattach.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

ssize_t jattach_request(const char *command, char *buf, size_t size)
{
	static const char head[] = "1\0jcmd"; /* the protocol version, the command */
	size_t clen = strlen(command);
	size_t need = sizeof(head) + clen + 1 + 2; /* head with its NUL, the command's NUL, two empty args */
	if (need > size)
		return -ENOSPC;
	memcpy(buf, head, sizeof(head));
	memcpy(buf + sizeof(head), command, clen + 1);
	buf[sizeof(head) + clen + 1] = '\0';
	buf[sizeof(head) + clen + 2] = '\0';
	return (ssize_t)need;
}

const char *jattach_strexit(int code)
{
	switch (code) {
	case JATTACH_ANSWERED:
		return "the JVM answered";
	case JATTACH_NO_LISTENER:
		return "the JVM's attach socket did not come up (is /tmp writable, attach not disabled?)";
	case JATTACH_NO_ANSWER:
		return "the JVM gave no answer (it ended, or the dump outlasted the timeout)";
	default:
		return "the helper failed";
	}
}

struct helper_args {
	pid_t pid;
	struct sockaddr_un addr;
	char trigger[64];
	char request[4096];
	size_t request_len;
	const char *fsync_path;
	int timeout_sec;
	int out;
};

static int try_connect(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0)
		return fd;
	close(fd);
	return -1;
}

static void helper(const struct helper_args *a)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* nothing of flinklet's stays open here but the pipe (as fd 3): not its lock, sockets or the JVM's pipes */
	int out = a->out;
	if (out != 3 && dup2(out, 3) == 3)
		out = 3;
	if (out == 3 && close_range(4, ~0U, 0) < 0)
		for (int fd = 4; fd < 65536; fd++)
			close(fd);
	int fd = try_connect(&a->addr);
	if (fd < 0) {
		/* the JVM opens its socket on SIGQUIT when the trigger file is there (else it prints a thread dump) */
		int t = open(a->trigger, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (t < 0)
			_exit(JATTACH_NO_LISTENER);
		close(t);
		if (kill(a->pid, SIGQUIT) < 0) {
			unlink(a->trigger);
			_exit(JATTACH_NO_LISTENER);
		}
		struct timespec tick = {0, 100 * 1000 * 1000};
		for (int i = 0; i < 100 && fd < 0; i++) {
			nanosleep(&tick, NULL);
			fd = try_connect(&a->addr);
		}
		unlink(a->trigger);
		if (fd < 0)
			_exit(JATTACH_NO_LISTENER);
	}
	struct timeval tv = {a->timeout_sec, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	write_all(fd, a->request, a->request_len);
	char buf[4096];
	size_t passed = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t take = passed + (size_t)n > JATTACH_ANSWER_MAX ? JATTACH_ANSWER_MAX - passed : (size_t)n;
		write_all(out, buf, take);
		passed += take;
	}
	close(fd);
	if (a->fsync_path) {
		int f = open(a->fsync_path, O_RDONLY | O_CLOEXEC);
		if (f >= 0) {
			fsync(f);
			close(f);
		}
	}
	_exit(passed > 0 ? JATTACH_ANSWERED : JATTACH_NO_ANSWER);
}

int jattach_spawn(pid_t pid, const char *command, const char *fsync_path, int timeout_sec, pid_t *ret_pid, int *ret_fd)
{
	static struct helper_args a; /* static: too big for a comfortable stack frame, and fork copies it */
	memset(&a, 0, sizeof(a));
	a.pid = pid;
	a.addr.sun_family = AF_UNIX;
	/* HotSpot's temporary directory on Linux is /tmp, whatever java.io.tmpdir says */
	snprintf(a.addr.sun_path, sizeof(a.addr.sun_path), "/tmp/.java_pid%d", (int)pid);
	snprintf(a.trigger, sizeof(a.trigger), "/tmp/.attach_pid%d", (int)pid);
	ssize_t len = jattach_request(command, a.request, sizeof(a.request));
	if (len < 0)
		return (int)len;
	a.request_len = (size_t)len;
	a.fsync_path = fsync_path;
	a.timeout_sec = timeout_sec > 0 ? timeout_sec : 1;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	a.out = p[1];
	pid_t child = fork();
	if (child < 0) {
		int r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (child == 0) {
		close(p[0]);
		helper(&a);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	*ret_pid = child;
	*ret_fd = p[0];
	return 0;
}

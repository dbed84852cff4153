/* jvm: spawn, signal and reap (see src/flink/jvm.h). */
#include "jvm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const argv[], char *const envp[], const char *cwd, pid_t parent, int errfd,
                       const int out[2], int in)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	/* glibc keeps 32 and 33 (SIGCANCEL, SIGSETXID) to itself and signal() refuses them, so one that flinklet
	 * inherited ignored (an ignored disposition survives exec) would reach the JVM ignored: reset by the
	 * system call (a zeroed kernel sigaction is SIG_DFL, no flags, an empty mask, on every architecture) */
	for (int sig = 32; sig < SIGRTMIN; sig++) {
		unsigned long kact[6] = {0, 0, 0, 0, 0, 0};
		syscall(SYS_rt_sigaction, sig, kact, NULL, (_NSIG - 1) / 8);
	}
	setpgid(0, 0);
	/* the JVM never outlives its supervisor: a new supervisor restores from the volume */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	int null = in >= 0 ? in : open("/dev/null", O_RDONLY);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		if (null != STDIN_FILENO)
			close(null);
	}
	/* stdout and stderr into flinklet's pipes (dup2 clears close-on-exec on the copies) */
	if (out[0] >= 0)
		dup2(out[0], STDOUT_FILENO);
	if (out[1] >= 0)
		dup2(out[1], STDERR_FILENO);
	/* nothing of flinklet's but 0, 1 and 2 reaches the JVM (its sockets, the lock, whatever it inherited);
	 * close-on-exec rather than closed, so that errfd still reports a failed exec */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (int fd = 3; fd < 65536; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (cwd && chdir(cwd) < 0)
		goto fail;
	execvpe(argv[0], argv, envp);
fail:;
	int e = errno;
	ssize_t n = write(errfd, &e, sizeof(e));
	(void)n;
	_exit(127);
}

static void close_open(int fd)
{
	if (fd >= 0)
		close(fd);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		close_open(p[i]);
	p[0] = p[1] = -1;
}

/* spawn's way out on a failure: every pipe made so far closed (the others are {-1, -1}); returns -errno */
static int spawn_failed(int pipefd[2], int outp[2], int errp[2], int inp[2])
{
	int r = -errno;
	close_pair(pipefd);
	close_pair(outp);
	close_pair(errp);
	close_pair(inp);
	return r;
}

static int spawn(char *const argv[], char *const envp[], const char *cwd, pid_t *ret_pid, int *ret_in, int *ret_out,
                 int *ret_err)
{
	int pipefd[2];
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, inp[2] = {-1, -1};
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	if (ret_in && pipe2(inp, O_CLOEXEC) < 0)
		return spawn_failed(pipefd, outp, errp, inp);
	if (ret_out && ret_err) {
		if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
			return spawn_failed(pipefd, outp, errp, inp);
		/* room for a burst of log lines while the supervisor is busy (best effort) */
		fcntl(outp[1], F_SETPIPE_SZ, 1 << 20);
		fcntl(errp[1], F_SETPIPE_SZ, 1 << 20);
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return spawn_failed(pipefd, outp, errp, inp);
	if (pid == 0) {
		close(pipefd[0]);
		int out[2] = {outp[1], errp[1]};
		child_exec(argv, envp, cwd, parent, pipefd[1], out, inp[0]);
	}
	close(pipefd[1]);
	/* the child's ends */
	close_open(outp[1]);
	close_open(errp[1]);
	close_open(inp[0]);
	setpgid(pid, pid); /* also here: whichever runs first wins the race */
	int child_errno = 0;
	ssize_t n;
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		/* exec failed: the child exits 127 at once; reap it here */
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		close_open(outp[0]);
		close_open(errp[0]);
		close_open(inp[1]);
		return -child_errno;
	}
	*ret_pid = pid;
	if (ret_out && ret_err) {
		*ret_out = outp[0];
		*ret_err = errp[0];
	}
	if (ret_in)
		*ret_in = inp[1];
	return 0;
}

int jvm_spawn(char *const argv[], char *const envp[], const char *cwd, pid_t *ret_pid, int *ret_out, int *ret_err)
{
	return spawn(argv, envp, cwd, ret_pid, NULL, ret_out, ret_err);
}

int jvm_spawn_piped(char *const argv[], char *const envp[], const char *cwd, pid_t *ret_pid, int *ret_in, int *ret_out,
                    int *ret_err)
{
	return spawn(argv, envp, cwd, ret_pid, ret_in, ret_out, ret_err);
}

int jvm_kill_group(pid_t pgid)
{
	if (pgid <= 1)
		return -ESRCH;
	return kill(-pgid, SIGKILL) == 0 ? 0 : -errno;
}

int jvm_signal(pid_t pid, int sig)
{
	if (pid <= 0)
		return -ESRCH;
	if (kill(-pid, sig) == 0)
		return 0;
	/* the group may not exist yet if the child has not run setpgid */
	return kill(pid, sig) == 0 ? 0 : -errno;
}

int reap_children(void (*fn)(const struct reaped *r, void *userdata), void *userdata)
{
	int count = 0;
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		struct reaped r = {pid, -1, -1};
		if (WIFEXITED(status))
			r.exit_code = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			r.exit_signal = WTERMSIG(status);
		count++;
		if (fn)
			fn(&r, userdata);
	}
	return count;
}

int become_subreaper(void)
{
	if (getpid() == 1)
		return 0;
	return prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 ? -errno : 0;
}

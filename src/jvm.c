/* jvm: spawn, signal and reap (see include/jvm.h). */
#include "jvm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_exec(char *const argv[], char *const envp[], const char *cwd, pid_t parent, int errfd)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	setpgid(0, 0);
	/* the JVM never outlives its supervisor: a new supervisor restores from the volume */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	int null = open("/dev/null", O_RDONLY);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		if (null != STDIN_FILENO)
			close(null);
	}
	if (cwd && chdir(cwd) < 0)
		goto fail;
	execvpe(argv[0], argv, envp);
fail:;
	int e = errno;
	ssize_t n = write(errfd, &e, sizeof(e));
	(void)n;
	_exit(127);
}

int jvm_spawn(char *const argv[], char *const envp[], const char *cwd, pid_t *ret_pid)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_exec(argv, envp, cwd, parent, pipefd[1]);
	}
	close(pipefd[1]);
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
		return -child_errno;
	}
	*ret_pid = pid;
	return 0;
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

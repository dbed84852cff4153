/* test_jvm: the JVM's spawn and reap (src/jvm.c) with real children (/bin/sh): the child's signal mask and
 * dispositions are reset, it leads its own process group, its stdin is /dev/null, it holds no descriptor of
 * ours but 0, 1 and 2, its output comes through the pipes; a program that cannot be executed is an error and
 * leaves no child; exits and deaths by signal are decoded; a signal reaches the whole group; what is left of a
 * group is killed; orphans come to us as subreaper and are reaped. */
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>

#include "jvm.h"

extern char **environ;

static char *read_all(int fd)
{
	struct strbuf b = {0};
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			strbuf_appendn(&b, buf, (size_t)n);
	close(fd);
	return strbuf_steal(&b);
}

struct collected {
	struct reaped *v;
	int n, max;
};

static void collect(const struct reaped *r, void *userdata)
{
	struct collected *c = userdata;
	if (c->n < c->max)
		c->v[c->n] = *r;
	c->n++;
}

/* Waits (without reaping) until some child has exited, then reaps every one that has. */
static int reap_next(struct reaped *out, int max)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	while (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	struct collected c = {out, 0, max};
	reap_children(collect, &c);
	return c.n;
}

static struct reaped wait_for(pid_t pid)
{
	struct reaped r[8];
	for (;;) {
		int n = reap_next(r, 8);
		for (int i = 0; i < n && i < 8; i++)
			if (r[i].pid == pid)
				return r[i];
	}
}

static void test_child_starts_clean(void **state)
{
	(void)state;
	/* what the supervisor has: signals blocked (signalfd), one ignored, a descriptor without close-on-exec */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_usr1;
	sigaction(SIGUSR1, &ign, &old_usr1);
	int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC */
	assert_true(leak > 2);

	/* the mask and dispositions as the exec'd program (grep) has them; the shell's own descriptors 3 to 64 by
	 * test -e (a builtin that opens nothing, as a directory listing would) */
	char *argv[] = {"/bin/sh", "-c",
	                "grep -E '^Sig(Blk|Ign):' /proc/self/status; n=3; while [ $n -le 64 ]; do "
	                "[ -e /proc/$$/fd/$n ] && echo leaked: $n; n=$((n+1)); done; "
	                "readlink /proc/$$/fd/0 | sed s/^/stdin:\\ /; echo to-stderr >&2",
	                NULL};
	pid_t pid = 0;
	int out = -1, err = -1;
	assert_int_equal(jvm_spawn(argv, environ, "/", &pid, &out, &err), 0);
	assert_true(pid > 0);
	assert_int_equal(getpgid(pid), pid); /* its own process group, set before jvm_spawn returns */
	char *text = read_all(out), *etext = read_all(err);
	struct reaped r = wait_for(pid);
	assert_int_equal(r.exit_code, 0);

	assert_contains(text, "SigBlk:\t0000000000000000\n");
	assert_contains(text, "SigIgn:\t0000000000000000\n");
	assert_not_contains(text, "leaked"); /* nothing of ours, not even the descriptor left inheritable */
	assert_contains(text, "stdin: /dev/null\n");
	assert_string_equal(etext, "to-stderr\n");
	free(text);
	free(etext);

	close(leak);
	sigaction(SIGUSR1, &old_usr1, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void test_spawn_failure_leaves_no_child(void **state)
{
	(void)state;
	char *argv[] = {"/nonexistent/flinklet-java", NULL};
	pid_t pid = 0;
	int out = -1, err = -1;
	assert_int_equal(jvm_spawn(argv, environ, NULL, &pid, &out, &err), -ENOENT);
	assert_int_equal(pid, 0);
	assert_int_equal(out, -1);
	/* the failed child was reaped inside jvm_spawn */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	/* a working directory that does not exist is the same */
	char *sh[] = {"/bin/sh", "-c", "exit 0", NULL};
	assert_int_equal(jvm_spawn(sh, environ, "/nonexistent/dir", &pid, NULL, NULL), -ENOENT);
	/* a name without '/' is looked up in PATH */
	char *bare[] = {"sh", "-c", "exit 0", NULL};
	assert_int_equal(jvm_spawn(bare, environ, NULL, &pid, NULL, NULL), 0);
	assert_int_equal(wait_for(pid).exit_code, 0);
}

static void test_exit_decoding(void **state)
{
	(void)state;
	char *code[] = {"/bin/sh", "-c", "exit 3", NULL};
	pid_t pid;
	assert_int_equal(jvm_spawn(code, environ, NULL, &pid, NULL, NULL), 0);
	struct reaped r = wait_for(pid);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.exit_signal, -1);

	char *killed[] = {"/bin/sh", "-c", "kill -KILL $$", NULL};
	assert_int_equal(jvm_spawn(killed, environ, NULL, &pid, NULL, NULL), 0);
	r = wait_for(pid);
	assert_int_equal(r.exit_code, -1);
	assert_int_equal(r.exit_signal, SIGKILL);
	/* nothing is left to reap */
	assert_int_equal(reap_children(NULL, NULL), 0);
}

/* A signal goes to the whole group; a leftover of a group whose leader exited is killed; orphans are reaped
 * here as subreaper. */
static void test_group_signal_and_leftovers(void **state)
{
	(void)state;
	assert_int_equal(become_subreaper(), 0);
	/* the leader and a child of its own, both waiting */
	char *pair[] = {"/bin/sh", "-c", "sleep 30 & echo started; wait", NULL};
	pid_t pid;
	int out = -1, err = -1;
	assert_int_equal(jvm_spawn(pair, environ, NULL, &pid, &out, &err), 0);
	close(err);
	char line[16] = {0};
	assert_int_equal(read(out, line, 8), 8); /* the sleep has been started */
	assert_string_equal(line, "started\n");
	assert_int_equal(jvm_signal(pid, SIGTERM), 0);
	struct reaped got[8];
	int n = 0, leader = 0, others = 0;
	while (n < 2) {
		int k = reap_next(got, 8);
		for (int i = 0; i < k && i < 8; i++) {
			if (got[i].pid == pid)
				leader++;
			else
				others++;
			assert_int_equal(got[i].exit_signal, SIGTERM); /* the sleep too: the signal went to the group */
		}
		n += k;
	}
	assert_int_equal(leader, 1);
	assert_int_equal(others, 1);
	free(read_all(out));

	/* the leader exits at once and leaves a sleep behind in its group */
	char *leftover[] = {"/bin/sh", "-c", "sleep 30 & exit 0", NULL};
	assert_int_equal(jvm_spawn(leftover, environ, NULL, &pid, NULL, NULL), 0);
	assert_int_equal(wait_for(pid).exit_code, 0);
	assert_int_equal(jvm_kill_group(pid), 0);
	struct reaped orphan;
	assert_int_equal(reap_next(&orphan, 1), 1); /* the orphan came to us (subreaper) */
	assert_int_not_equal(orphan.pid, pid);
	assert_int_equal(orphan.exit_signal, SIGKILL);
	assert_int_equal(jvm_kill_group(pid), -ESRCH); /* nothing left */
	assert_int_equal(jvm_kill_group(1), -ESRCH);   /* never init's group, never everything */
	assert_int_equal(jvm_signal(0, SIGTERM), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_child_starts_clean),
	    cmocka_unit_test(test_spawn_failure_leaves_no_child),
	    cmocka_unit_test(test_exit_decoding),
	    cmocka_unit_test(test_group_signal_and_leftovers),
	};
	alarm(60); /* a hung child fails the run rather than hangs it */
	return cmocka_run_group_tests_name("jvm", tests, NULL, NULL);
}

/* jvm: the PID-1 duties around the one child that matters. Spawns the JVM in its own process group with
 * a clean signal mask, default signal handlers, stdin on /dev/null and a parent-death signal; signals
 * that group; reaps every child (orphans included, as PID 1 or as a subreaper). Readable in one sitting,
 * like tini. */
#ifndef FLINKLET_JVM_H
#define FLINKLET_JVM_H

#include <stdbool.h>
#include <sys/types.h>

/* Spawns argv[0] (looked up in $PATH of envp when it has no '/'). Returns 0 with *ret_pid set, or
 * -errno when the program could not be executed (the exec error is reported through a close-on-exec
 * pipe, so -ENOENT means "no such program"). With ret_out and ret_err, the child's stdout and stderr are
 * pipes whose read ends are returned there (close-on-exec; the caller owns them); otherwise it inherits
 * flinklet's. The child gets no descriptor of flinklet's but 0, 1 and 2. */
int jvm_spawn(char *const argv[], char *const envp[], const char *cwd, pid_t *ret_pid, int *ret_out, int *ret_err);
/* jvm_spawn for another program flinklet runs the same way (the autoscaler's scaling hook, src/flink/hookproc.c),
 * with its stdin a pipe too, whose write end is *ret_in (close-on-exec; the caller owns it). */
int jvm_spawn_piped(char *const argv[], char *const envp[], const char *cwd, pid_t *ret_pid, int *ret_in, int *ret_out,
                    int *ret_err);
/* SIGKILLs what is left of a process group whose leader has exited (processes left in it would hold ports). */
int jvm_kill_group(pid_t pgid);
/* Sends sig to the JVM's whole process group. */
int jvm_signal(pid_t pid, int sig);

/* One reaped child. */
struct reaped {
	pid_t pid;
	int exit_code;   /* -1 when killed by a signal */
	int exit_signal; /* -1 when it exited */
};
/* Reaps every child that has exited (non-blocking); calls fn for each. Returns how many. */
int reap_children(void (*fn)(const struct reaped *r, void *userdata), void *userdata);
/* When not PID 1, becomes the child subreaper so orphans of the JVM are reaped here. */
int become_subreaper(void);

#endif

/* jattach: one command to a running HotSpot JVM over its attach protocol (what `jcmd <pid> <command>` does,
 * without a second JVM and whether the JDK has jcmd or not): the trigger file and SIGQUIT that make the JVM
 * open its attach socket /tmp/.java_pid<pid>, the request, the answer. The exchange blocks for as long as
 * the command runs (a class-data-sharing dump: seconds), so it runs in a forked helper process; the event
 * loop only reaps it and reads its pipe. */
#ifndef FLINKLET_JATTACH_H
#define FLINKLET_JATTACH_H

#include <stddef.h>
#include <sys/types.h>

#define JATTACH_ANSWER_MAX 4096 /* bytes of the JVM's answer passed on; the rest is read and dropped */

/* Exit codes of the helper. */
enum {
	JATTACH_ANSWERED = 0,    /* the JVM answered: the answer is in the pipe */
	JATTACH_NO_LISTENER = 2, /* no attach socket came up (attach disabled, /tmp not writable, JVM gone) */
	JATTACH_NO_ANSWER = 3,   /* connected, but no answer (the JVM died, or the timeout) */
};

/* The request of protocol version 1 for a jcmd command: "1\0jcmd\0<command>\0\0\0". Returns its length,
 * or -ENOSPC when it does not fit. */
ssize_t jattach_request(const char *command, char *buf, size_t size);
/* Forks the helper: it asks process pid to run the jcmd command, writes the answer to a pipe whose read end
 * (non-blocking, close-on-exec) is *ret_fd, fsyncs fsync_path when not NULL (the file the command wrote),
 * and exits with one of the codes above; it dies with flinklet (parent-death signal). timeout_sec bounds
 * the wait for the answer. Returns 0 or -errno. */
int jattach_spawn(pid_t pid, const char *command, const char *fsync_path, int timeout_sec, pid_t *ret_pid, int *ret_fd);
/* What a helper's exit code means, for messages. */
const char *jattach_strexit(int code);

#endif

/* hookproc: a program flinklet asks a question and waits for the answer of, with a deadline: the autoscaler's
 * scaling hook (docs/autoscaler.md, "The scaling hook"). It is spawned as the JVM is (jvm_spawn_piped: its own
 * process group, a clean signal state, a parent-death signal, none of flinklet's descriptors), the question written
 * to its stdin as the pipe takes it, its answer read from its stdout (at most HOOKPROC_MAX_ANSWER bytes) and the end
 * of its stderr kept for messages, never blocking; at the deadline its whole process group is killed. What became of
 * it is one sentence (hookproc_failure). hookproc_run does all of it in one blocking call (the plan command); the
 * supervisor makes the same steps from its event loop (sup_autoscaler.c: the pipes as I/O sources, a timer for the
 * deadline, the exit from its reaper). */
#ifndef FLINKLET_HOOKPROC_H
#define FLINKLET_HOOKPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

#define HOOKPROC_MAX_ANSWER (1u << 20)
#define HOOKPROC_STDERR_KEPT 4096u

struct hookproc {
	pid_t pid;        /* 0: not running (not started, or reaped) */
	int in, out, err; /* the pipes; -1 once closed */
	char *input;      /* the question */
	size_t input_len, written;
	struct strbuf answer; /* its stdout */
	bool answer_too_long;
	struct strbuf errors; /* the last HOOKPROC_STDERR_KEPT bytes (about) of its stderr */
	bool timed_out;       /* killed at the deadline */
};

/* Spawns path with input to be written to its stdin (copied); the pipes are non-blocking. Returns 0, or -errno when
 * it could not be run (-ENOENT: no such program, -EACCES: not executable, ...). */
int hookproc_start(struct hookproc *h, const char *path, const char *input, size_t len);
/* Moves what the pipes take and hold now (stdin written until all of it is or the program closed its end; stdout and
 * stderr read until they would block). Returns true when stdout and stderr are at their end. */
bool hookproc_pump(struct hookproc *h);
/* SIGKILLs its process group (the deadline: timed_out is set). */
void hookproc_kill(struct hookproc *h, bool deadline);
/* What became of it once reaped, for messages: NULL when it exited 0 in time with an answer of acceptable size;
 * otherwise a malloc'd reason such as "did not answer within 10 s", "exited with code 3", "was killed by signal 11
 * (Segmentation fault)", "wrote more than 1048576 bytes on its standard output". */
char *hookproc_failure(const struct hookproc *h, int exit_code, int exit_signal, int64_t timeout_ms);
/* The end of its stderr as one line (newlines and control characters as spaces, at most max bytes, the end kept);
 * malloc'd, "" when it wrote none. */
char *hookproc_errors_tail(const struct hookproc *h, size_t max);
/* Closes the pipes and frees the buffers (the process is not touched). */
void hookproc_close(struct hookproc *h);

/* All of it, blocking: spawns path, writes input, reads the answer, waits at most timeout_ms for the program to end
 * (then kills its group) and reaps it. Returns 0 with *ret_failure NULL (the answer is in h->answer) or a reason as
 * hookproc_failure's, or "could not be run: <strerror>". h is the caller's to close. */
void hookproc_run(struct hookproc *h, const char *path, const char *input, size_t len, int64_t timeout_ms,
                  char **ret_failure);

#endif

/* jobfailure: pure: what Flink's GET /jobs/:id/exceptions says the job failed of. The newest entry of the
 * exception history (exceptionHistory.entries, newest first, in Flink 1.20 and 2.x alike), else the deprecated
 * top-level root-exception of 1.20 (2.x removed it): its root cause, the deepest "Caused by:" of its stack trace, else
 * its first line (the exception's class and message), bounded; and when it happened. No I/O. */
#ifndef FLINKLET_JOBFAILURE_H
#define FLINKLET_JOBFAILURE_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

struct job_failure {
	int64_t timestamp; /* ms since the epoch as Flink says it; 0 when it does not */
	char *cause;       /* "java.lang.RuntimeException: boom", at most max bytes (longer ends in "...") */
};

/* Returns 0 and fills *ret when the answer names a failure, -ENOENT when it names none (no failure yet, or not an
 * answer of that shape). */
int job_failure_parse(const struct cJSON *body, size_t max, struct job_failure *ret);
/* The root cause of one stack trace as Flink prints it (lines separated by \n): malloc'd, NULL when it has no line
 * that names an exception. */
char *job_failure_cause_of_trace(const char *trace, size_t max);
void job_failure_free(struct job_failure *f);

#endif

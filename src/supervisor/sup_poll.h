/* sup_poll: the poll part: following the job through Flink's REST API and the health checks.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_POLL_H
#define FLINKLET_SUP_POLL_H

#include "sup_core.h"

int sup_poll_tick(sd_event_source *src, uint64_t usec, void *userdata);
void sup_poll_now(struct supervisor *s); /* a job-details poll at once (a stop while STARTING asks Flink) */
/* A JVM was launched: the next poll one startup poll interval from now, with fresh request timeouts. */
void sup_poll_launched(struct supervisor *s);
/* flinklet.rest.startup-poll-interval while a JVM starts (STARTING, STOP_PENDING), else flinklet.rest.poll-interval. */
usec_t sup_poll_interval(const struct supervisor *s);

/* The JVM ended (reaped; before its exit is dispatched): no task runs any more, and a job that ended its JVM with
 * the CLI's failure code (1) while it ran, or after Flink said it failed, is said FAILED with its root cause (Flink's
 * exception history, else the JVM's last stack trace) in a JobFailed event and the status error. */
void sup_poll_jvm_exited(struct supervisor *s, int exit_code, int exit_signal);
/* The job runs (every task): its failure and a failover are over (the status errors of the job and a failover). */
void sup_poll_running(struct supervisor *s);
/* The poll's fields of the status document (status.c's field table): a new job (a stateless start) has no start
 * time, checkpoint or state size yet; a launch on its way has no tasks, a JVM gone none running; a checkpoint
 * completed that the stop found (location as Flink says it). */
void sup_poll_new_job(struct supervisor *s);
void sup_poll_tasks_none(struct supervisor *s);
void sup_poll_no_task_runs(struct supervisor *s);
void sup_poll_checkpoint_completed(struct supervisor *s, const char *location, int64_t id, int64_t time_ms);
/* The poll timer, first due a second from now. */
int sup_poll_setup(struct supervisor *s);
void sup_poll_free(struct supervisor *s);

#endif

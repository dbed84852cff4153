/* sup_poll: the poll part: following the job through Flink's REST API and the health checks.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_POLL_H
#define FLINKLET_SUP_POLL_H

#include "sup_core.h"

int sup_on_poll(sd_event_source *src, uint64_t usec, void *userdata);
void sup_poll_now(struct supervisor *s); /* a job-details poll at once (a stop while STARTING asks Flink) */
/* A JVM was launched: the next poll one startup poll interval from now, with fresh request timeouts. */
void sup_poll_launched(struct supervisor *s);
/* flinklet.rest.startup-poll-interval while a JVM starts (STARTING, STOP_PENDING), else flinklet.rest.poll-interval. */
usec_t sup_poll_interval(const struct supervisor *s);

/* The poll timer, first due a second from now. */
int sup_poll_setup(struct supervisor *s);
void sup_poll_free(struct supervisor *s);

#endif

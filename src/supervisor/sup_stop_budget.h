/* sup_stop_budget: the stop's shutdown budget (flinklet.shutdown.timeout: read here only) and its shares: the JVM's
 * grace period, what a stop keeps back for the JVM's exit, and what is left of the budget once the stop armed its
 * deadline (sup_stop.c arms it; this file alone reads it). It owns no state: it reads the spec, s->stop and the
 * status document, and calls no other file of the supervisor (not even the core's: sup_core.c asks it, so a call
 * back would be a loop), so that the stop and the parts below it (the stop's savepoint in sup_snapshot, systemd's
 * STOPPING in sup_notify, the exit's last flush in sup_core) ask one place. Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_STOP_BUDGET_H
#define FLINKLET_SUP_STOP_BUDGET_H

#include "sup_core.h"

/* The whole budget, flinklet.shutdown.timeout; and the option as the user wrote it, for messages. */
usec_t sup_stop_budget_total(const struct supervisor *s);
const char *sup_stop_budget_text(const struct supervisor *s);
/* The JVM's grace period after SIGTERM, within the shutdown budget. */
usec_t sup_stop_budget_grace_period(const struct supervisor *s);
/* What a stop keeps back of the budget for the JVM to end once its snapshot is taken: 1.5 times the exit the status
 * document remembers (and half a second), at least 2 s; 5 s before any was seen; never more than the grace
 * period. */
usec_t sup_stop_budget_exit_reserve(const struct supervisor *s);
/* Whether a stop armed the budget's deadline (a shutdown did; it may have passed since). */
bool sup_stop_budget_armed(const struct supervisor *s);
/* What is left of the budget at now (monotonic): 0 once its deadline has passed, or when none was armed. */
usec_t sup_stop_budget_left(const struct supervisor *s, usec_t now);

#endif

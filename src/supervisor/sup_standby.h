/* sup_standby: the standby JVM (flinklet.recovery.standby-jvm, issue 38 item 4; the launcher's side: deps/launcher
 * FlinkletLauncher's --standby). Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_STANDBY_H
#define FLINKLET_SUP_STANDBY_H

#include "jvm.h"
#include "sup_core.h"

/* After each transition of the table (the driver calls it): once the job is RUNNING (entered), a standby is made
 * when the option is on; in any state but RUNNING, BACKOFF and STARTING (a stop, a suspend, an upgrade, FAILED,
 * FINISHED) it is discarded, and so is one of a spec that turned the option off. */
void sup_standby_state(struct supervisor *s, enum sup_state before, enum sup_state next);
/* Whether a standby runs (it may still be starting). */
bool sup_standby_running(const struct supervisor *s);
/* A restart's launch: whether the standby can take it: the option is on, and it was started as this spec's JVM
 * would be (sup_keepjvm_fingerprint) with the launch's memory (memory tuning's, tuned). One that cannot is
 * discarded (said). */
bool sup_standby_fits(struct supervisor *s, bool tuned, const struct membudget_tuning *memory);
/* The class-data-sharing archive the standby started from (NULL: none). */
const char *sup_standby_archive(const struct supervisor *s);
/* The standby becomes the job's JVM: its pid, control channel and output are the caller's from now on; false: there
 * is none (it died meanwhile). */
bool sup_standby_take(struct supervisor *s, pid_t *pid, int *control_fd, struct jvmout **out);
/* A reload applied in place: a standby the spec turned off or no longer fits (sup_keepjvm_fingerprint) is discarded,
 * and one is made (again) while the job is RUNNING and the option is on. */
void sup_standby_reloaded(struct supervisor *s);
/* A class-data-sharing archive was written: a standby started without one is made again from it. */
void sup_standby_archived(struct supervisor *s);
/* A child was reaped: true when it was the standby (another is made after a backoff). For the JVM that was a
 * standby and runs the job, its directory is removed and false returned: its exit goes on as any JVM's. */
bool sup_standby_reaped(struct supervisor *s, const struct reaped *r);
void sup_standby_free(struct supervisor *s);

/* Pure: how long after a standby died the next one starts, when `failures` died in a row: 1 s, doubled for each
 * one after the first, at most 5 min. */
usec_t sup_standby_delay(unsigned failures);

#endif

/* sup_snapshot: the snapshot part: stop-with-savepoint, manual and periodic savepoints and checkpoints, their
 * retention (the disposal of what it gives up is sup_dispose's), and the volume's health.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_SNAPSHOT_H
#define FLINKLET_SUP_SNAPSHOT_H

#include "sup_core.h"

/* The stop-with-savepoint of a shutdown, suspend or upgrade: its intent first, then the request; a SavepointFailed
 * once `until` (monotonic: the stop's share of its budget, sup_stop.c) passes without it. 0, or -errno. */
int sup_snapshot_stop_with_savepoint(struct supervisor *s, usec_t until);
void sup_snapshot_record_savepoint(struct supervisor *s, const char *location, const char *trigger, const char *format);
void sup_snapshot_request_savepoint(struct supervisor *s, const char *trigger);
void sup_snapshot_request_checkpoint(struct supervisor *s, const char *trigger);
void sup_snapshot_kick(struct supervisor *s); /* starts a pending one when the job is RUNNING */
void sup_snapshot_cancel(struct supervisor *s);
void sup_snapshot_arm_periodic(struct supervisor *s);
void sup_snapshot_retention(struct supervisor *s);
/* Entry h of the savepoint history, restored in claim mode, leaves the history (returned: the caller keeps it);
 * lastSavepoint, when it is that one, says claimed. */
struct snapshot_ref sup_snapshot_claimed(struct supervisor *s, int h);
void sup_snapshot_check_volume(struct supervisor *s);
void sup_snapshot_check_nonces(struct supervisor *s);

/* The job runs (a launch came up): a savepoint or checkpoint that failed before is no longer the news (the status
 * errors of the stop's savepoint and of the snapshots asked for). */
void sup_snapshot_running(struct supervisor *s);
/* A new JVM: no stop-with-savepoint went to it yet. */
void sup_snapshot_new_jvm(struct supervisor *s);
/* The stop's savepoint: its timers off (the stop is over or abandoned), its timeout off (it completed), or
 * forgotten (a new shutdown asks for its own). */
void sup_snapshot_stop_timers_off(struct supervisor *s);
void sup_snapshot_stop_savepoint_done(struct supervisor *s);
void sup_snapshot_forget_stop_savepoint(struct supervisor *s);
/* The JVM is gone before flinklet heard of the stop's savepoint: what is on disk decides (recorded then).
 * true: the stop's savepoint is recorded. */
bool sup_snapshot_recover_stop_savepoint(struct supervisor *s);
/* The id of a checkpoint Flink completed after the stop's recorded savepoint (the next start restores it), or -1. */
int64_t sup_snapshot_checkpoint_after_stop_savepoint(struct supervisor *s);
void sup_snapshot_free(struct supervisor *s);

#endif

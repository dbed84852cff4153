/* sup_sweep: the sweep part: before each launch, while no JVM runs, what dead JVMs left on the volume (checkpoints
 * beyond the kept ones, unfinished checkpoints and savepoints, shared/ files no kept checkpoint names: src/flink/
 * leftovers.h) is found on the worker thread, set aside there before the JVM is spawned, and removed by a child
 * process while the job starts (docs/operations.md, "The volume: leftovers of dead JVMs"). Not for use outside the
 * supervisor. */
#ifndef FLINKLET_SUP_SWEEP_H
#define FLINKLET_SUP_SWEEP_H

#include "sup_core.h"

struct reaped;
/* A launch restores restore_path (NULL: none): find and set aside the leftovers, ahead of the launch's intent in
 * the worker's order (so before its spawn). Nothing when a sweep is still removing the last ones. */
void sup_sweep_before_launch(struct supervisor *s, const char *restore_path);
bool sup_sweep_reaped(struct supervisor *s, const struct reaped *r); /* true: the removal's exit */
void sup_sweep_free(struct supervisor *s);

#endif

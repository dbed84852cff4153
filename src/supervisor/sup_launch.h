/* sup_launch: the launch part: restore points (which one, demoting one given up), the job's jar and its
 * download, the JVM's scratch directory and the launch of the JVM (intent first, spawn once it is durable).
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_LAUNCH_H
#define FLINKLET_SUP_LAUNCH_H

#include "sup_core.h"

/* Renames a restore point that was given up to <dir>.unreadable (kept for a look; out of Flink's way, which
 * writes the next checkpoint of that id into its place, and out of the next flinklet's scan): checkpoints, and
 * savepoints of flinklet's own savepoint directory; a savepoint from elsewhere is not flinklet's to move. */
void sup_put_aside(struct supervisor *s, enum restore_kind kind, const char *point);
/* 0: the launch is pending (its intent on the way to the volume), or its jar is being fetched first */
int sup_launch(struct supervisor *s);
/* EV_LAUNCH_DURABLE: the pending launch's JVM is spawned. 0, or -errno (nothing runs). */
int sup_spawn(struct supervisor *s);
/* A stop, a suspend or a new launch calls off a pending launch: its JVM is never spawned. true: one was pending. */
bool sup_launch_cancel(struct supervisor *s);
/* The JVM's scratch directory (flinklet.scratch.dir, else <state dir>/tmp), and the removal of what earlier JVMs
 * left there, off the loop. */
void sup_scratch_setup(struct supervisor *s);
/* At exit, with the JVM gone: the JVM's scratch directory is removed. */
void sup_scratch_free(struct supervisor *s);
void sup_fetch_cancel(struct supervisor *s);
char *sup_launch_fingerprint(struct supervisor *s, const struct spec *spec);

#endif

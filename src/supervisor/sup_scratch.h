/* sup_scratch: the JVM's local scratch directory, opened at the start and emptied for each launch.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_SCRATCH_H
#define FLINKLET_SUP_SCRATCH_H

#include "sup_core.h"

/* The JVM's scratch directory (flinklet.scratch.dir, else <state dir>/tmp), and the removal of what earlier JVMs
 * left there, off the loop. */
void sup_scratch_setup(struct supervisor *s);
/* An empty scratch directory for the next JVM: the earlier JVM's is renamed aside, the room measured on the worker
 * (a ScratchSpaceLow warning when short), and what was set aside removed by a child afterwards. 0, or -errno (said
 * in the log). */
int sup_scratch_prepare(struct supervisor *s);
/* At exit, with the JVM gone: the JVM's scratch directory is removed (a JVM still running keeps it). */
void sup_scratch_free(struct supervisor *s);

#endif

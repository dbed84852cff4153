/* sup_autoscaler: the autoscaler part: the in-process FLIP-334 autoscaler's collector, realizer and state.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_AUTOSCALER_H
#define FLINKLET_SUP_AUTOSCALER_H

#include "sup_core.h"

struct reaped;

int sup_autoscaler_setup(struct supervisor *s);
/* The scaling hook's exit (true: r was the hook): its answer applies, adjusts or vetoes the cycle's rescale. */
bool sup_autoscaler_reaped(struct supervisor *s, const struct reaped *r);
/* The autoscaler's overrides in force, merged with the user's, for a new JVM's
 * pipeline.jobvertex-parallelism-overrides (malloc'd "vertex:p,..."); NULL when there are none. */
char *sup_autoscaler_launch_overrides(struct supervisor *s);
void sup_autoscaler_free(struct supervisor *s);

#endif

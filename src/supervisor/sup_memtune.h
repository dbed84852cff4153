/* sup_memtune: memory tuning in the supervisor (see src/supervisor/sup_memtune.c). Not for use outside the
 * supervisor. */
#ifndef FLINKLET_SUP_MEMTUNE_H
#define FLINKLET_SUP_MEMTUNE_H

#include "as_internal.h"
#include "membudget.h"
#include "sup_core.h"

/* The autoscaler evaluated the job's metrics: the tuning from its heap, metaspace and managed memory use. */
void sup_memtune_evaluated(struct supervisor *s, const struct as_evaluation *ev, const struct as_options *o);
/* The settings of the launch about to happen: true with *t when it is tuned (said, and kept as what runs). */
bool sup_memtune_for_launch(struct supervisor *s, struct membudget_tuning *t);
/* The JVM ended: a tuned one that ran out of memory, or failed twice in a row, undoes the tuning. cause: what it
 * printed last (NULL: nothing); stopped: flinklet asked it to end. */
void sup_memtune_jvm_ended(struct supervisor *s, const char *cause, bool stopped);
/* An upgrade was aborted (its savepoint failed, UpgradeAborted): when it was tuning's relaunch, that recommendation
 * is not relaunched for again (said once). */
void sup_memtune_upgrade_aborted(struct supervisor *s);
/* The configuration file was reloaded (changed, or SIGHUP): a held relaunch may be tried again. */
void sup_memtune_reloaded(struct supervisor *s);

/* The split of spec.resources.memory in the log, once per JVM launch: what the JVM was given. */
void sup_memtune_log_split(const struct spec *spec);

#endif

/* sup_crashlogs: the JVMs' fatal-error logs, said and pruned after each JVM. Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_CRASHLOGS_H
#define FLINKLET_SUP_CRASHLOGS_H

#include "sup_core.h"

struct reaped;
/* A JVM exited: the fatal-error log it left is said, and only the newest crashes' logs stay (on the worker). */
void sup_crashlogs_jvm_exited(struct supervisor *s, const struct reaped *r);

#endif

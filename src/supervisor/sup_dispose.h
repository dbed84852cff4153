/* sup_dispose: the disposal of the savepoints retention gives up: renamed aside on the worker, removed by a child.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_DISPOSE_H
#define FLINKLET_SUP_DISPOSE_H

#include "sup_core.h"

struct reaped;

/* Disposes of the savepoint at path (location: as the history had it; why: a static string for the events), which
 * has left the history: renamed <path>.disposing once the status document without it is on the volume, then
 * removed by a child; the events say how it went. */
void sup_dispose_savepoint(struct supervisor *s, const char *location, const char *path, const char *why);
/* The savepoints an earlier run's retention renamed *.disposing and did not finish removing: removed (a child). */
void sup_dispose_finish_leftovers(struct supervisor *s);
/* A child that removes a savepoint exited: its outcome said. false: not one of them. */
bool sup_dispose_reaped(struct supervisor *s, const struct reaped *r);
void sup_dispose_free(struct supervisor *s);

#endif

/* sup_fetch: the download of a remote job jar and the checks of the cached one (see src/supervisor/sup_fetch.c).
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_FETCH_H
#define FLINKLET_SUP_FETCH_H

#include "sup_core.h"

/* The launch of a remote jar (s->launch.jar, planned): downloaded when the cache lacks it, its sha256 checked on the
 * worker thread when one is given, then ready(s) launches the JVM. Returns ready's result when the cached jar needs
 * no check; otherwise 0 while the download or the check runs, -EIO when it could not start. */
int sup_fetch_jar(struct supervisor *s, int (*ready)(struct supervisor *s));
/* Calls off a download or a check in flight: its end is ignored. */
void sup_fetch_cancel(struct supervisor *s);
/* The job runs: a download that failed before is no longer the news (its status error is cleared). */
void sup_fetch_running(struct supervisor *s);

#endif

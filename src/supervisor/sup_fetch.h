/* sup_fetch: the downloads of the job's remote jar and SQL script and the checks of the cached ones (see
 * src/supervisor/sup_fetch.c).
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_FETCH_H
#define FLINKLET_SUP_FETCH_H

#include "sup_core.h"

/* The launch of a remote jar and a remote SQL script (planned; both stay until the launch), one after the other:
 * each downloaded when the cache lacks it, its sha256 checked on the worker thread when one is given, a script split
 * and checked there (one with an error is refused: SqlScriptInvalid, and the launch fails), then ready(s) launches the
 * JVM; the script's sha256 as checked is then in s->fetch.sql_sha256 (the runner's --sha256). Returns ready's result
 * when nothing needs a download or a check; otherwise 0 while one runs, -EIO when it could not start. */
int sup_fetch_artifacts(struct supervisor *s, const struct artifact *jar, const struct artifact *sql,
                        int (*ready)(struct supervisor *s));
/* Calls off a download or a check in flight: its end is ignored. */
void sup_fetch_cancel(struct supervisor *s);
/* The job runs: a download that failed before is no longer the news (its status error is cleared). */
void sup_fetch_running(struct supervisor *s);

#endif

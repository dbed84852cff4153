/* sup_dispose: the savepoints retention gives up (sup_snapshot), disposed of without the loop waiting: renamed
 * <savepoint>.disposing on the worker thread once the status document without it in the history is on the volume
 * (so that no crash leaves a history that names a savepoint gone from the disk), by one rename (no scan takes it for
 * a restore point any more, src/flink/snapshots.c), then removed by a child process (a RocksDB savepoint can be
 * thousands of files, each unlink a round trip on a network volume). The events say the outcome when the child is
 * reaped. A crash meanwhile leaves a *.disposing directory, which the next start removes
 * (sup_dispose_finish_leftovers). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jvm.h"
#include "snapshots.h"
#include "store.h"
#include "sup_dispose.h"

static struct disposal *disposal_new(struct supervisor *s, const char *location, const char *aside, const char *why)
{
	struct disposal *d = xcalloc(1, sizeof(*d));
	d->location = xstrdup(location);
	d->aside = xstrdup(aside);
	d->why = why;
	d->next = s->dispose.disposals;
	s->dispose.disposals = d;
	return d;
}

static void disposal_free(struct supervisor *s, struct disposal *d)
{
	for (struct disposal **p = &s->dispose.disposals; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	free(d->location);
	free(d->aside);
	free(d->from);
	free(d);
}

/* The removal of d->aside in a child (reaped: sup_dispose_reaped). */
static void disposal_remove(struct supervisor *s, struct disposal *d)
{
	struct strv v = {0};
	strv_push(&v, d->aside);
	pid_t pid = rm_rf_child(&v);
	strv_free(&v);
	if (pid <= 0) {
		sup_alert(
		    s, "SavepointDisposeFailed",
		    "unable to dispose of savepoint %s: unable to start its removal: %s; the next start removes %s",
		    d->location, strerror((int)-pid), d->aside);
		disposal_free(s, d);
		return;
	}
	d->pid = pid;
}

/* The rename aside is on the volume (or failed): the removal starts. */
static void disposal_renamed(struct supervisor *s, int r, void *arg)
{
	struct disposal *d = arg;
	if (s->closing) { /* the loop is over: a *.disposing left is removed by the next start */
		disposal_free(s, d);
		return;
	}
	if (r == -ENOENT) {
		sup_event(s, "SavepointDisposed", "disposed of savepoint %s (%s; it was gone already)", d->location,
		          d->why);
		disposal_free(s, d);
	} else if (r < 0) {
		sup_alert(s, "SavepointDisposeFailed",
		          "unable to dispose of savepoint %s: unable to rename it to %s: %s", d->location, d->aside,
		          strerror(-r));
		disposal_free(s, d);
	} else {
		disposal_remove(s, d);
	}
}

/* The history without the savepoint is on the volume (or could not get there: the rename is as safe then, as a
 * start reads the savepoints from the disk): it is renamed aside. */
static void dispose_after_sync(struct supervisor *s, uintptr_t arg)
{
	struct disposal *d = (struct disposal *)arg;
	d->renaming = true;
	sup_volume_rename(s, d->from, d->aside, disposal_renamed, d);
}

void sup_dispose_savepoint(struct supervisor *s, const char *location, const char *path, const char *why)
{
	char *aside = xasprintf("%s" SAVEPOINT_DISPOSING_SUFFIX, path);
	struct disposal *d = disposal_new(s, location, aside, why);
	free(aside);
	d->from = xstrdup(path);
	sup_after_sync(s, dispose_after_sync, (uintptr_t)d);
}

bool sup_dispose_reaped(struct supervisor *s, const struct reaped *r)
{
	struct disposal *d = s->dispose.disposals;
	while (d && d->pid != r->pid) /* r->pid > 0: a disposal whose rename is on its way (pid 0) never matches */
		d = d->next;
	if (!d)
		return false;
	if (r->exit_code == 0)
		sup_event(s, "SavepointDisposed", "disposed of savepoint %s (%s)", d->location, d->why);
	else
		sup_alert(
		    s, "SavepointDisposeFailed",
		    "unable to remove all of savepoint %s (%s): the removal %s; the next start removes what is left",
		    d->aside, d->location,
		    r->exit_signal >= 0 ? "was killed" : "failed (a file it could not remove, said above)");
	disposal_free(s, d);
	return true;
}

void sup_dispose_finish_leftovers(struct supervisor *s)
{
	struct strv left = {0};
	savepoints_disposing(s->sp_dir, &left);
	for (size_t i = 0; i < left.n; i++) {
		log_info("removing %s: a savepoint whose disposal an earlier run did not finish", left.v[i]);
		disposal_remove(s, disposal_new(s, left.v[i], left.v[i], "its disposal was left unfinished"));
	}
	strv_free(&left);
}

void sup_dispose_free(struct supervisor *s)
{
	/* a removal still running dies with flinklet (its parent-death signal): the next start finishes it; a rename
	 * still on the worker frees its own when the worker is drained (disposal_renamed); one that waited for the
	 * history on the volume is not made (the savepoint stays, outside the history) */
	for (struct disposal *d = s->dispose.disposals, *next; d; d = next) {
		next = d->next;
		if (d->pid > 0 || !d->renaming)
			disposal_free(s, d);
	}
}

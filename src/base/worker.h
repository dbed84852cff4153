/* worker: one thread for the work the event loop must not wait for: the volume's writes and fsyncs (the event
 * log and status.json, grouped: src/supervisor/sup_core.c), its metadata work (a rename aside, an unlink, with the
 * directory's fsync: sup_volume_rename), the jar's sha256. Unbounded work (removing a tree) is a child's instead.
 * Jobs run one at a time in the order they were given; each job's done callback runs afterwards on the loop (an eventfd
 * is the loop's I/O source), in the same order. A job's function runs on the worker thread and must touch nothing but
 * its argument and the file system; the loop does not touch the argument until done runs.
 *
 * The thread blocks every signal (the loop reads them through signalfd), and nothing but the worker itself takes
 * its lock, so a fork (the JVM, the jar's download) never inherits it held in a way that matters: the children
 * exec or use only their own state. */
#ifndef FLINKLET_WORKER_H
#define FLINKLET_WORKER_H

#include <stdbool.h>

#include <systemd/sd-event.h>

typedef void (*worker_fn)(void *arg);
typedef void (*worker_done_fn)(void *arg);

struct worker;

/* Starts the thread; event NULL: no loop (done callbacks run from worker_drain only). Returns 0 or -errno. */
int worker_new(sd_event *event, struct worker **ret);
/* Queues a job. fn runs on the worker thread, then done (may be NULL) on the loop. w NULL (no worker: before the
 * loop is set up, in tools and tests): fn, then done, run at once on this thread. */
void worker_submit(struct worker *w, worker_fn fn, worker_done_fn done, void *arg);
/* Waits until every job queued so far has run, then runs the done callbacks still due, on this thread: for the
 * few places that must not go on before the volume has what was recorded (an intent before its action, the
 * end). */
void worker_drain(struct worker *w);
/* worker_drain with a bound: false when the jobs are still running at the CLOCK_MONOTONIC time deadline_usec (a
 * volume that does not answer); their done callbacks have not run then. */
bool worker_drain_until(struct worker *w, uint64_t deadline_usec);
/* Jobs queued or running, and done callbacks not run yet. */
unsigned worker_pending(struct worker *w);
/* Drains, stops and joins the thread. NULL is fine. */
void worker_free(struct worker *w);

#endif

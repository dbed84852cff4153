/* sup_restore: the restore part (sup_restore.c): the restore point of each launch, what the JVM says about it,
 * and its demotion on evidence. Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_RESTORE_H
#define FLINKLET_SUP_RESTORE_H

#include "sup_core.h"

/* Renames a restore point that was given up to <dir>.unreadable (kept for a look; out of Flink's way, which
 * writes the next checkpoint of that id into its place, and out of the next flinklet's scan): checkpoints, and
 * savepoints of flinklet's own savepoint directory; a savepoint from elsewhere is not flinklet's to move. */
void sup_restore_put_aside(struct supervisor *s, enum restore_kind kind, const char *point);
/* Chooses where the next launch starts from (s->restore.path, NULL: empty state) and starts reading the JVM's
 * output about it. < 0: no launch (a directory could not be read, or a rewind is forbidden: s->restore.fatal). */
int sup_restore_choose(struct supervisor *s);
/* A line of the JVM's output: while the job starts, what it says about the restore point (EV_RESTORE_UNREADABLE). */
void sup_restore_line(struct supervisor *s, const char *line);
/* Says, with the launch that follows it (uri: its restore point), which restore point was given up, and why. */
void sup_restore_say_demotion(struct supervisor *s, const char *uri);
/* What failed an earlier spec or job id may not fail this one: every restore point is tried again. */
void sup_restore_forget_failures(struct supervisor *s);
/* true once after a launch that must not happen at all (the status says why): the job FAILED, no retry. */
bool sup_restore_take_fatal(struct supervisor *s);
/* The job is RUNNING: the failures of its restore point so far were not its fault; the JVM is asked its Flink
 * version (GET /config, once per JVM), which decides the claim of the next launch on the same jars. */
void sup_restore_running(struct supervisor *s);
/* The JVM is gone before the job was RUNNING (timed_out: stopped by the startup timeout). The restore point is
 * given up only on evidence. true: the job FAILED (flinklet.restore.fallback is never); false: restart. */
bool sup_restore_start_failed(struct supervisor *s, bool timed_out);
/* The claimed savepoints that are gone (Flink disposed of them) or go with the sweep (gone: their local paths) leave
 * the status's list, which this part alone writes (a claim adds to it). */
void sup_restore_forget_claimed(struct supervisor *s, const struct strv *gone);
void sup_restore_free(struct supervisor *s);

#endif

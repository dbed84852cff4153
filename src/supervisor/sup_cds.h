/* sup_cds: the supervisor's part of class-data sharing (docs/operations.md, "Class-data sharing").
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_CDS_H
#define FLINKLET_SUP_CDS_H

#include "sup_core.h"

struct launch;
struct reaped;
/* Before a launch: the archive to start from, or recording for a dump (sets l->cds_archive, l->cds_record). */
void sup_cds_prepare(struct supervisor *s, struct launch *l);
/* A launch that a standby JVM takes (sup_standby.c), in place of sup_cds_prepare: the archive it started from (NULL:
 * none), and no recording (it was started without -XX:+RecordDynamicDumpInfo). */
void sup_cds_standby(struct supervisor *s, struct launch *l, const char *archive);
void sup_cds_line(struct supervisor *s, const char *line); /* a line of the JVM's output */
void sup_cds_running(struct supervisor *s);                /* the job is RUNNING */
/* The JVM exited: an archive that may have kept its job from RUNNING is set aside. */
void sup_cds_jvm_exited(struct supervisor *s, const struct reaped *r);
bool sup_cds_reaped(struct supervisor *s, const struct reaped *r); /* true: the dump helper's exit */
void sup_cds_free(struct supervisor *s);

#endif

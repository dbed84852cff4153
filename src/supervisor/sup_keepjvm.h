/* sup_keepjvm: a job-only upgrade keeps the JVM (issue 38; the launcher's side: java/launcher LauncherControl).
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_KEEPJVM_H
#define FLINKLET_SUP_KEEPJVM_H

#include "flinkconf.h"
#include "sup_core.h"

/* What the JVM itself is started with (the launch less the job: its jar, entry class, arguments and Flink's
 * job-level options): the same for two specs when a JVM of one can run the other's job. */
char *sup_keepjvm_fingerprint(struct supervisor *s, const struct spec *spec);
/* A JVM was spawned: its control channel (the launcher's standard input; -1: Flink's CLI, none), its fingerprint. */
void sup_keepjvm_spawned(struct supervisor *s, int control_fd);
void sup_keepjvm_jvm_exited(struct supervisor *s);
/* Before an upgrade's stop-with-savepoint: the JVM is told to stay when its job ends, when it can run the desired
 * spec's job (the same JVM fingerprint, upgradeMode savepoint, a local jar, no SQL script or Python job,
 * flinklet.upgrade.keep-jvm). Its launcher then says that the job ended and its MiniCluster is closed (a line of the
 * JVM's, sup_keepjvm_line): EV_JVM_IDLE. */
void sup_keepjvm_hold(struct supervisor *s);
void sup_keepjvm_line(struct supervisor *s, const char *line);
/* The JVM is let go: it exits once its job ended (at once when idle). */
void sup_keepjvm_release(struct supervisor *s);
/* The JVM runs no job: idle between the two of a job-only upgrade. */
bool sup_keepjvm_idle(const struct supervisor *s);
/* At EV_JVM_IDLE: whether the desired spec's job can go to the idle JVM now (else it is let go). */
bool sup_keepjvm_keep_idle(struct supervisor *s);
/* The launch's job to the idle JVM: its CLI arguments (those after the main class, as a spawn would pass them).
 * 0, or -errno (the JVM cannot take it). */
int sup_keepjvm_submit(struct supervisor *s, const struct launch *l);
void sup_keepjvm_free(struct supervisor *s);

#endif

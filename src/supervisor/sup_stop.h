/* sup_stop: the stop part (sup_stop.c): stopping the JVM for a purpose, the shutdown budget, and what follows once
 * it is gone. Each function that returns a state may return SUP_STARTING: the desired spec is to be launched, which
 * the table's driver does (the stop part never calls the launch action). Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_STOP_H
#define FLINKLET_SUP_STOP_H

#include "sup_core.h"

/* ACT_STOP, ACT_SUSPEND, ACT_UPGRADE, ACT_ROLLBACK: stops the JVM for purpose: with a savepoint when the upgrade
 * mode asks for one and the job is RUNNING (or about to be: STOP_PENDING); otherwise SIGTERM. */
enum sup_state sup_stop_start(struct supervisor *s, enum stop_purpose purpose);
/* ACT_TERMINATE: SIGTERM to the JVM, SIGKILL after the grace period; with no JVM, the stop is done at once. */
enum sup_state sup_stop_terminate(struct supervisor *s);
/* The JVM is gone after a stop: exit, stay SUSPENDED, or SUP_STARTING (start the desired spec). */
enum sup_state sup_stop_done(struct supervisor *s);
/* ACT_SAVEPOINT_ABANDON: the stop's savepoint failed: the job runs on (no fallback), or SIGTERM. */
enum sup_state sup_stop_savepoint_failed(struct supervisor *s);
/* ACT_KILL_NOW: SIGKILL at once (a second stop, the budget spent). */
enum sup_state sup_stop_kill_now(struct supervisor *s, enum sup_state next);
/* ACT_SAVEPOINT_RECORD: the stop's savepoint is recorded: the JVM has its grace period to end. */
void sup_stop_savepoint_recorded(struct supervisor *s);
/* ACT_STOPPED_SAVEPOINT: the JVM ended during the stop-with-savepoint: what is on disk decides. */
enum sup_state sup_stop_savepoint_ended(struct supervisor *s);
/* ACT_JVM_IDLE: an upgrade's savepoint ended the job and the JVM stayed for the upgraded one: the savepoint as when
 * the JVM ends, then SUP_STARTING (the driver's launch goes to that JVM); SUP_SAME when it cannot take the job (a
 * suspend since, a changed spec): the JVM is let go and its exit ends the stop. */
enum sup_state sup_stop_jvm_idle(struct supervisor *s);
/* ACT_STOP_RUNNING: a stop while STARTING, and now the job runs: the stop-with-savepoint. */
enum sup_state sup_stop_now_running(struct supervisor *s, enum sup_state next);
/* EV_STOP, before its action: the stop is a shutdown now. true: it is absorbed (a TERM during the savepoint of a
 * suspend or an upgrade makes that savepoint the shutdown's). */
bool sup_stop_requested(struct supervisor *s, enum sup_state before);
/* SIGTERM or SIGINT: EV_STOP, unless it is the same stop as one within the second before. */
void sup_stop_signal(struct supervisor *s, int signo);
/* The shutdown budget's deadline, armed once. */
void sup_stop_arm_deadline(struct supervisor *s);
/* The JVM is gone: no SIGKILL is due. */
void sup_stop_jvm_gone(struct supervisor *s);
/* The job runs again (after a suspend or an upgrade): what an earlier stop said of its savepoint is over. */
void sup_stop_running(struct supervisor *s);
void sup_stop_free(struct supervisor *s);

#endif

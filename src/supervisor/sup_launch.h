/* sup_launch: the launch part: restore points (which one, demoting one given up), the job's jar and its
 * download, the JVM's scratch directory and the launch of the JVM (intent first, spawn once it is durable).
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_LAUNCH_H
#define FLINKLET_SUP_LAUNCH_H

#include "sup_core.h"

/* 0: the launch is pending (its intent on the way to the volume), or its jar is being fetched first */
int sup_launch(struct supervisor *s);
/* EV_LAUNCH_DURABLE: the pending launch's JVM is spawned. 0, or -errno (nothing runs). */
int sup_launch_spawn(struct supervisor *s);
/* A stop, a suspend or a new launch calls off a pending launch: its JVM is never spawned. true: one was pending. */
bool sup_launch_cancel(struct supervisor *s);
char *sup_launch_fingerprint(struct supervisor *s, const struct spec *spec);
/* Whether Flink's lib/ has flinklet's launcher (FLINKCONF_LAUNCHER_JAR): the JVM's main class then, else the CLI. */
bool sup_launch_has_launcher(const struct supervisor *s);

/* The first launch of this supervisor (a JVM that cannot be executed then is exit 3), and a launch after it. */
int sup_launch_initial(struct supervisor *s);
int sup_launch_again(struct supervisor *s);
/* At set-up: whether the job never started before (first), or starts empty under a new job id (fresh). */
void sup_launch_first_start(struct supervisor *s, bool first);
void sup_launch_fresh_start(struct supervisor *s);
/* The next launch starts empty under a new job id (upgradeMode stateless after a suspend or an upgrade). */
void sup_launch_next_fresh(struct supervisor *s);
/* A job that FINISHED: what its JVM was launched with is kept on the volume (<state dir>/spec.finished). */
void sup_launch_finished_record(struct supervisor *s);
/* At the start on a FINISHED job: whether the spec launches otherwise than the finished job did (false also without
 * a usable record); when not, a reload compares with the finished job's launch. */
bool sup_launch_finished_changed(struct supervisor *s);
/* A changed spec for a job that FINISHED (what: which spec, for the event): a new run, now: a new job id (on the
 * volume before the next launch's spawn), and the next launch is a first start, empty or from
 * spec.job.initialSavepointPath, whatever upgradeMode says; a FinishedJobRerun event says so. */
void sup_launch_new_run(struct supervisor *s, const char *what);
/* The startup timeout no longer runs (the job is RUNNING or FINISHED; running: the first start is over too). */
void sup_launch_startup_over(struct supervisor *s);
void sup_launch_running(struct supervisor *s);
/* Whether the JVM that just failed was stopped by the startup timeout (said once). */
bool sup_launch_take_timed_out(struct supervisor *s);
/* ACT_KILL_JVM: SIGKILL to the JVM (a hang, the startup timeout); its exit is on the way. */
void sup_launch_kill(struct supervisor *s);
/* The JVM was reaped: its last output read (the cause of a failed start kept), its process group killed. */
struct reaped;
void sup_launch_jvm_exited(struct supervisor *s, const struct reaped *r);
/* At the end: the jar's download called off (before the records' last flush), then everything freed. */
void sup_launch_stop(struct supervisor *s);
void sup_launch_free(struct supervisor *s);

#endif

/* sup_reload: the reload part: configuration changes, job.state from the file and the API, rollback.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_RELOAD_H
#define FLINKLET_SUP_RELOAD_H

#include "sup_core.h"

/* job.state from the API: kept in <state dir>/job-state.override by the worker thread, then applied (an event,
 * EV_SUSPEND or EV_RESUME) and, with x, the request answered 202: nothing is acted on or promised before it is durable.
 */
void sup_reload_set_desired_state(struct supervisor *s, enum job_state state, const char *source,
                                  struct http_exchange *x);
void sup_reload_apply_desired_state(struct supervisor *s, enum job_state state, const char *source);
void sup_reload_apply_state_override(struct supervisor *s, struct spec *spec);
int sup_reload_setup(struct supervisor *s);
void sup_reload(struct supervisor *s, const char *why);
void sup_reload_keep_stable_spec(struct supervisor *s);
struct spec *sup_reload_load_stable_spec(struct supervisor *s);
void sup_reload_free(struct supervisor *s);

/* The trial of an upgraded (or rolled-back) spec. It starts with its first launch (its readiness window, the
 * readiness timeout); it is stable only once it made progress (sup_reload_judge: RUNNING, a checkpoint since the
 * JVM started and since its last restart inside the JVM, no such restart within the window); one that cannot be is
 * rolled back (EV_ROLLBACK) with rollback on, else said. */
void sup_reload_launched(struct supervisor *s);
bool sup_reload_proving(const struct supervisor *s);
/* EV_PROGRESS (ACT_JUDGE): what the poll saw (s->poll: a checkpoint completed, a restart inside the JVM) judged. */
void sup_reload_judge(struct supervisor *s);
/* The restore point the upgraded spec's first launch chose: the rollback's (never a checkpoint the new spec
 * wrote). The rollback's launch puts aside every point of the job newer than it (sup_restore reads
 * s->reload.base; rejected: done, with the launch's spawn). */
void sup_reload_restore_chosen(struct supervisor *s, const char *path, int64_t id);
void sup_reload_rejected(struct supervisor *s);
/* The upgrade is over: suspended (upgrade_over: its trial and timers off too), or aborted (the job runs on). */
void sup_reload_upgrade_over(struct supervisor *s);
void sup_reload_upgrade_aborted(struct supervisor *s);
/* The job is RUNNING (its trial's running time starts); and STABLE: with no trial (or once it is over), a rollback
 * is said done, or the spec is kept as stable. */
void sup_reload_running(struct supervisor *s);
void sup_reload_stable(struct supervisor *s);

#endif

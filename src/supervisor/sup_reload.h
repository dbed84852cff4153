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

/* After a launch: an upgraded spec that is not RUNNING within the readiness timeout is rolled back (EV_ROLLBACK). */
void sup_reload_launched(struct supervisor *s);
/* The upgrade is over: suspended (upgrade_over: its readiness timer off too), or aborted (the job runs on). */
void sup_reload_upgrade_over(struct supervisor *s);
void sup_reload_upgrade_aborted(struct supervisor *s);
/* The job is RUNNING (no rollback any more); and STABLE: a rollback is said done, or the spec is kept as stable. */
void sup_reload_running(struct supervisor *s);
void sup_reload_stable(struct supervisor *s);

#endif

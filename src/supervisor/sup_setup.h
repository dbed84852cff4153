/* sup_setup: the set-up of the state directory, the driver's (supervisor.c) before its loop starts.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_SETUP_H
#define FLINKLET_SUP_SETUP_H

#include "sup_core.h"

/* The state directory made ready for a run (s->state_dir, its lock, conf_dir, ckpt_dir, sp_dir and their locks,
 * the status the last run left, the job id), step by step; each refusal is logged. 0, or the exit code (3) of the
 * first step that refused. */
int sup_setup_state_dir(struct supervisor *s);

#endif

/* sup: the whole supervisor as supervisor.c (the loop and the table's driver) and the unit tests see it: every
 * part's header, and the driver's functions. A part (sup_*.c) includes sup_core.h and the headers of the parts it
 * may call, never this one (tests/static/test_layout.py). Who owns which state, and who may call whom:
 * docs/architecture.md. Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_H
#define FLINKLET_SUP_H

#include "sup_autoscaler.h"
#include "sup_cds.h"
#include "sup_core.h"
#include "sup_dispose.h"
#include "sup_flinkmetrics.h"
#include "sup_http.h"
#include "sup_keepjvm.h"
#include "sup_launch.h"
#include "sup_metrics.h"
#include "sup_notify.h"
#include "sup_observe.h"
#include "sup_poll.h"
#include "sup_reload.h"
#include "sup_rescales.h"
#include "sup_restore.h"
#include "sup_scratch.h"
#include "sup_setup.h"
#include "sup_snapshot.h"
#include "sup_standby.h"
#include "sup_stop.h"
#include "sup_sweep.h"

/* supervisor.c: the table's driver (and sup_raise, declared in sup_core.h) */
/* What must hold in every state (a JVM, a timer or a fetch pending...): NULL, or what does not. */
const char *sup_invariant_violation(const struct supervisor *s);
/* Frees everything a supervisor holds (also one only partly set up). */
void sup_free(struct supervisor *s);

#endif

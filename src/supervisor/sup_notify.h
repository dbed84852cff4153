/* sup_notify: the notify part: systemd (sd_notify, watchdog) and journald.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_NOTIFY_H
#define FLINKLET_SUP_NOTIFY_H

#include "sup_core.h"

void sup_notify_setup(struct supervisor *s);
void sup_notify_state(struct supervisor *s); /* after every transition */
void sup_notify_free(struct supervisor *s);

#endif

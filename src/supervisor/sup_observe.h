/* sup_observe: the status page (GET /) and the JSON it reads besides /status: the newest events and the
 * autoscaler's per-cycle timeline.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_OBSERVE_H
#define FLINKLET_SUP_OBSERVE_H

#include "sup_core.h"

void sup_observe_setup(struct supervisor *s); /* after the state directory is open */
void sup_observe_free(struct supervisor *s);
void sup_observe_event(struct supervisor *s, const char *json_line);
/* After each cycle of the autoscaler: a timeline entry while the job runs with the autoscaler on. */
void sup_observe_autoscaler(struct supervisor *s, enum as_outcome out);
char *sup_observe_events_json(struct supervisor *s);
char *sup_observe_autoscaler_json(struct supervisor *s);
void sup_observe_status_page(struct supervisor *s, struct http_response *resp);

#endif

/* sup_rescales: Flink's own rescale history (Flink 2.3 and later), beside the autoscaler's: what the adaptive
 * scheduler recorded of each rescale (the autoscaler's in-place ones, a user's, its own after a restart), asked of
 * the MiniCluster's REST API while the job runs and shown by GET /autoscaler and the status page.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_RESCALES_H
#define FLINKLET_SUP_RESCALES_H

#include <cjson/cJSON.h>

#include "sup_core.h"

/* A poll of the job (sup_poll.c's timer): asks Flink for its rescale history when it keeps one and it is due
 * (every five poll intervals, and at once when a vertex's parallelism changed), then for the details of each
 * finished rescale it has not seen. One request at a time, never waited for. */
void sup_rescales_poll(struct supervisor *s);
/* {"kept", "updated", "error", "more", "rescales"} for GET /autoscaler; NULL below Flink 2.3. */
cJSON *sup_rescales_json(struct supervisor *s);
void sup_rescales_free(struct supervisor *s);

#endif

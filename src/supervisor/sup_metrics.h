/* sup_metrics: /metrics, the Prometheus text of the supervisor's counters and the job's health.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_METRICS_H
#define FLINKLET_SUP_METRICS_H

#include "sup_core.h"

/* flinklet's own families (malloc'd); *flink: Flink's families to send after them (a reference the caller drops:
 * the HTTP response's tail), or NULL. */
char *sup_metrics(struct supervisor *s, struct shbuf **flink);

#endif

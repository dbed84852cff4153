/* sup_metrics: /metrics, the Prometheus text of the supervisor's counters and the job's health.
 * Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_METRICS_H
#define FLINKLET_SUP_METRICS_H

#include "sup_core.h"

char *sup_metrics(struct supervisor *s);

#endif

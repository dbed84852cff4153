/* sup_flinkmetrics: Flink's own metrics (the job's throughput, busy and back-pressured time, checkpoints, the JVM)
 * through flinklet's /metrics, so that one scrape target has both: each JVM gets flinklet's Prometheus reporter
 * (java/reporter) on a free loopback port, which this part scrapes while the job runs, checks (promtext) and keeps
 * for /metrics and the status page's charts. Not for use outside the supervisor. */
#ifndef FLINKLET_SUP_FLINKMETRICS_H
#define FLINKLET_SUP_FLINKMETRICS_H

#include <cjson/cJSON.h>

#include "sup_core.h"

/* A scrape is due this long after the last one went out (while the job runs), may take at most this long, and its
 * answer be at most this big; the status page's timeline keeps this many scrapes. */
#define FLINKMETRICS_INTERVAL_USEC (5 * USEC_PER_SEC)
#define FLINKMETRICS_TIMEOUT_USEC (3 * USEC_PER_SEC)
#define FLINKMETRICS_MAX_BYTES (4u << 20)
#define FLINKMETRICS_TIMELINE 180

/* The reporter's port for the launch being prepared with spec (0: none: flinklet.metrics.flink is false, the
 * spec configures Flink's reporters itself, lib/ has no reporter jar, or no free port; said in the log when it
 * changes). */
int sup_flinkmetrics_launch_port(struct supervisor *s, const struct spec *spec);
/* A poll of the job (sup_poll.c's timer, while a JVM runs): a scrape when one is due and none is in flight. */
void sup_flinkmetrics_poll(struct supervisor *s);
/* Appends flinklet's gauges about the scrape; returns, when the last scrape of the running JVM was good, Flink's
 * families as the reporter gave them: a new reference to the kept scrape, to go after b (the caller's to drop),
 * else NULL. */
struct shbuf *sup_flinkmetrics_append(struct supervisor *s, struct strbuf *b);
/* {"enabled", "off", "port", "updated", "error", "timeline"} for GET /jobmetrics (the status page's charts). */
cJSON *sup_flinkmetrics_json(struct supervisor *s);
void sup_flinkmetrics_free(struct supervisor *s);

#endif

/* as_cycle: the autoscaler's cost per control-loop cycle in the supervisor, for bench/autoscaler.py (run under
 * callgrind). It drives the library as sup_autoscaler.c does: every 10 s one REST snapshot of a running job fed
 * through the collector (as_collect_*), then autoscaler_scale() with the file state store, for a full default
 * window (15 min: 91 samples) and one more cycle, the measured one (measured_cycle(), for
 * --toggle-collect=measured_cycle): its sample, the window kept and stored, the evaluation, the decision, and
 * the overrides re-applied. Feeding the REST answers is left out (parsing Flink's JSON, as the supervisor does
 * before each cycle); so is everything before the measured cycle.
 *
 *   as_cycle <vertices> <state dir>
 *
 * The job: <vertices> vertices in chains of at most 10 (a source, then HASH, REBALANCE and FORWARD edges),
 * 1000 records/s per chain, busy 20 % (sources) to 95 %, so that the decision scales. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "autoscaler.h"
#include "as_internal.h"

#define STEP_MS 10000
#define CYCLES 92 /* 91 samples make the window full; the 92nd cycle is measured */

static int realize(void *ud, const char *job_key, const struct as_pmap *overrides)
{
	(void)ud;
	(void)job_key;
	(void)overrides;
	return 0;
}

static void on_event(void *ud, const char *job_key, enum as_event_type type, const char *reason, const char *message,
                     const char *message_key, int64_t interval_ms)
{
	(void)ud;
	(void)job_key;
	(void)type;
	(void)message;
	(void)message_key;
	(void)interval_ms;
	if (getenv("AS_CYCLE_VERBOSE"))
		fprintf(stderr, "event %s\n", reason);
}

static cJSON *parse(char *text)
{
	cJSON *j = cJSON_Parse(text);
	if (!j) {
		fprintf(stderr, "as_cycle: bad JSON: %s\n", text);
		exit(1);
	}
	free(text);
	return j;
}

static char *vid(int i)
{
	return xasprintf("%032x", 0xa0000 + i);
}

static bool is_source(int i)
{
	return i % 10 == 0;
}

static void feed(struct as_job *job, int n, int64_t running_ts, int64_t now)
{
	double secs = (double)(now - running_ts) / 1000.0;
	struct strbuf vs = {0}, nodes = {0};
	for (int i = 0; i < n; i++) {
		char *id = vid(i), *prev = i ? vid(i - 1) : xstrdup("");
		strbuf_appendf(
		    &vs,
		    "%s{\"id\": \"%s\", \"maxParallelism\": 128, \"parallelism\": 2, \"status\": \"RUNNING\","
		    " \"metrics\": {\"read-records\": %.0f, \"write-records\": %.0f, "
		    "\"accumulated-busy-time\": %.0f}}",
		    i ? "," : "", id, is_source(i) ? 0 : 1000 * secs, 1000 * secs, 500 * secs);
		strbuf_appendf(&nodes, "%s{\"id\": \"%s\", \"parallelism\": 2", i ? "," : "", id);
		if (!is_source(i))
			strbuf_appendf(&nodes, ", \"inputs\": [{\"id\": \"%s\", \"ship_strategy\": \"%s\"}]", prev,
			               i % 10 == 1 ? "HASH"
			               : i % 2     ? "REBALANCE"
			                           : "FORWARD");
		strbuf_append(&nodes, "}");
		free(id);
		free(prev);
	}
	cJSON *details =
	    parse(xasprintf("{\"timestamps\": {\"RUNNING\": %lld}, \"vertices\": [%s], \"plan\": {\"nodes\": "
	                    "[%s]}}",
	                    (long long)running_ts, vs.buf, nodes.buf));
	strbuf_free(&vs);
	strbuf_free(&nodes);
	if (as_collect_topology(job, details, NULL, NULL) < 0) {
		fprintf(stderr, "as_cycle: topology refused\n");
		exit(1);
	}
	cJSON_Delete(details);
	struct strv need = {0};
	as_collect_listings_needed(job, &need);
	for (size_t k = 0; k < need.n; k++) {
		int i = (int)strtol(need.v[k], NULL, 16) - 0xa0000;
		cJSON *l = parse(xstrdup(is_source(i) ? "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": "
		                                        "\"backPressuredTimeMsPerSecond\"}, {\"id\": "
		                                        "\"Source__s.numRecordsInPerSecond\"}, {\"id\": "
		                                        "\"Source__s.numRecordsIn\"}, {\"id\": \"0.pendingRecords\"}]"
		                                      : "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": "
		                                        "\"numRecordsInPerSecond\"}]"));
		as_collect_listing(job, need.v[k], l);
		cJSON_Delete(l);
	}
	strv_free(&need);
	for (int i = 0; i < n; i++) {
		char *id = vid(i);
		char *q = as_collect_vertex_query(job, id);
		free(q);
		double busy = is_source(i) ? 200 : 300 + (i % 10) * 70;
		cJSON *v = is_source(i)
		               ? parse(xasprintf("[{\"id\": \"busyTimeMsPerSecond\", \"max\": %.1f},"
		                                 " {\"id\": \"backPressuredTimeMsPerSecond\", \"avg\": 0},"
		                                 " {\"id\": \"Source__s.numRecordsInPerSecond\", \"sum\": 1000},"
		                                 " {\"id\": \"Source__s.numRecordsIn\", \"sum\": %.0f},"
		                                 " {\"id\": \"0.pendingRecords\", \"sum\": 0}]",
		                                 busy, 1000 * secs))
		               : parse(xasprintf("[{\"id\": \"busyTimeMsPerSecond\", \"max\": %.1f},"
		                                 " {\"id\": \"numRecordsInPerSecond\", \"sum\": 1000}]",
		                                 busy + (double)(now / STEP_MS % 7)));
		as_collect_vertex_metrics(job, id, v);
		cJSON_Delete(v);
		free(id);
	}
	cJSON *v = parse(xstrdup("[{\"id\": \"taskSlotsTotal\", \"value\": \"8\"}, {\"id\": \"taskSlotsAvailable\", "
	                         "\"value\": \"2\"}]"));
	as_collect_jm_metrics(job, v);
	cJSON_Delete(v);
	v = parse(xstrdup("[{\"id\": \"Status.JVM.Memory.Heap.Used\", \"max\": 1.5e8}, {\"id\": "
	                  "\"Status.JVM.Memory.Heap.Max\", \"max\": 1e9}, {\"id\": "
	                  "\"Status.JVM.GarbageCollector.All.TimeMsPerSecond\", \"max\": 12}]"));
	as_collect_tm_metrics(job, v);
	cJSON_Delete(v);
}

__attribute__((noinline)) enum as_outcome measured_cycle(struct autoscaler *as, const struct as_context *ctx)
{
	return autoscaler_scale(as, ctx);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: as_cycle <vertices> <state dir>\n");
		return 2;
	}
	int n = atoi(argv[1]);
	struct as_realizer r = {realize, NULL};
	struct as_event_handler h = {on_event, NULL};
	struct autoscaler *as = autoscaler_new(&r, &h, as_store_file_new(argv[2]));
	struct as_options o;
	as_options_defaults(&o);
	o.enabled = true;
	o.utilization_target = 0.6;
	o.utilization_max = 0.8;
	o.utilization_min = 0.4;
	const int64_t t0 = 1767225600000;
	const int64_t running = t0 - o.stabilization_ms;
	enum as_outcome out = AS_OUTCOME_NOT_READY;
	for (int k = 0; k < CYCLES; k++) {
		int64_t now = t0 + (int64_t)k * STEP_MS;
		feed(autoscaler_job(as, "4b1f1ab4cafe4b1f1ab4cafe4b1f1ab4"), n, running, now);
		struct as_context ctx = {.job_key = "4b1f1ab4cafe4b1f1ab4cafe4b1f1ab4",
		                         .options = &o,
		                         .job_status = "RUNNING",
		                         .now_ms = now};
		out = k + 1 < CYCLES ? autoscaler_scale(as, &ctx) : measured_cycle(as, &ctx);
	}
	struct as_job *job = autoscaler_job(as, "4b1f1ab4cafe4b1f1ab4cafe4b1f1ab4");
	printf("{\"vertices\": %d, \"samples\": %zu, \"outcome\": \"%s\", \"overrides\": %zu}\n", n, job->history.n,
	       as_outcome_name(out), job->overrides.n);
	as_options_free(&o);
	autoscaler_free(as);
	return 0;
}

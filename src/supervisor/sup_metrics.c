/* sup_metrics: GET /metrics, the supervisor's own figures in Prometheus' text format (version 0.0.4):
 * the JVM, restarts, restore kind, checkpoint and savepoint ages and counts, the lifecycle state, the state
 * volume's space and write errors, the autoscaler's decisions, parallelism and last evaluation, the HTTP
 * endpoint's connections, and the supervisor's own memory and CPU. conf/grafana/flinklet-dashboard.json charts
 * them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "as_internal.h"
#include "store.h"
#include "sup_flinkmetrics.h"
#include "sup_metrics.h"

static void metric(struct strbuf *b, const char *name, const char *type, const char *help)
{
	strbuf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Prometheus label values escape \, " and newlines. */
static void label_value(struct strbuf *b, const char *v)
{
	for (const char *p = v; *p; p++) {
		if (*p == '\\' || *p == '"')
			strbuf_appendf(b, "\\%c", *p);
		else if (*p == '\n')
			strbuf_append(b, "\\n");
		else
			strbuf_appendn(b, p, 1);
	}
}

/* flinklet_<name>{vertex_id,vertex_name} <value> for each vertex the last evaluation has a finite value of. */
static void autoscaler_vertex_metric(struct strbuf *b, struct supervisor *s, const cJSON *vertices, const char *name,
                                     const char *metric_name, const char *help)
{
	metric(b, name, "gauge", help);
	for (size_t i = 0; i < s->poll.vertices.n; i++) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(vertices, s->poll.vertices.v[i].id), metric_name);
		double v;
		if (!m || as_json_double(m, &v) < 0 || !isfinite(v))
			continue;
		strbuf_appendf(b, "%s{vertex_id=\"", name);
		label_value(b, s->poll.vertices.v[i].id);
		strbuf_append(b, "\",vertex_name=\"");
		label_value(b, s->poll.vertices.v[i].name ? s->poll.vertices.v[i].name : "");
		strbuf_appendf(b, "\"} %.6g\n", v);
	}
}

static void autoscaler_figures(struct strbuf *b, struct supervisor *s)
{
	struct as_options o;
	as_options_from_spec(s->spec, &o);
	metric(b, "flinklet_autoscaler_enabled", "gauge", "1 when job.autoscaler.enabled is true.");
	strbuf_appendf(b, "flinklet_autoscaler_enabled %d\n", o.enabled ? 1 : 0);
	as_options_free(&o);
	/* every family is declared, with or without the autoscaler: a dashboard or an alert never names an unknown one
	 */
	cJSON *report = s->autoscaler.as ? autoscaler_report_json(s->autoscaler.as, s->job_id) : NULL;
	metric(b, "flinklet_autoscaler_evaluations_total", "counter",
	       "Evaluations of the autoscaler by this supervisor that decided, by outcome (scale: a rescale; "
	       "no_scale: every vertex within its bounds or a gate held it; error: a cycle that failed).");
	static const char *const outcomes[][2] = {{"scale", "scalings"}, {"no_scale", "balanced"}, {"error", "errors"}};
	for (size_t i = 0; report && i < 3; i++) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(report, outcomes[i][1]);
		strbuf_appendf(b, "flinklet_autoscaler_evaluations_total{outcome=\"%s\"} %.0f\n", outcomes[i][0],
		               cJSON_IsNumber(n) ? n->valuedouble : 0);
	}
	const cJSON *vertices = cJSON_GetObjectItemCaseSensitive(report, "vertices");
	autoscaler_vertex_metric(b, s, vertices, "flinklet_autoscaler_true_processing_rate", "TRUE_PROCESSING_RATE",
	                         "Records per second the vertex could process at full load, by the last evaluation "
	                         "(absent while it is idle).");
	autoscaler_vertex_metric(b, s, vertices, "flinklet_autoscaler_target_data_rate", "TARGET_DATA_RATE",
	                         "Records per second the vertex is to process, by the last evaluation.");
	autoscaler_vertex_metric(b, s, vertices, "flinklet_autoscaler_recommended_parallelism",
	                         "RECOMMENDED_PARALLELISM", "The parallelism the last full evaluation recommends.");
	cJSON_Delete(report);
}

/* One gauge per memory pool (heap, managed, metaspace); declared without samples when the first is unknown (-1). */
static void pool_gauge(struct strbuf *b, const char *name, const char *help, int64_t heap, int64_t managed,
                       int64_t metaspace)
{
	metric(b, name, "gauge", help);
	if (heap < 0)
		return;
	strbuf_appendf(b, "%s{pool=\"heap\"} %lld\n%s{pool=\"managed\"} %lld\n%s{pool=\"metaspace\"} %lld\n", name,
	               (long long)heap, name, (long long)managed, name, (long long)metaspace);
}

static void memory_tuning_figures(struct strbuf *b, struct supervisor *s)
{
	const struct status_memtuning *mt = &s->status.memory_tuning;
	pool_gauge(b, "flinklet_memory_tuning_recommended_bytes",
	           "What memory tuning's last evaluation recommends for each pool, inside spec.resources.memory.",
	           mt->rec_heap, mt->rec_managed, mt->rec_metaspace);
	pool_gauge(b, "flinklet_memory_tuning_running_bytes", "The running JVM's tuned memory pools (absent: untuned).",
	           mt->run_heap, mt->run_managed, mt->run_metaspace);
	metric(b, "flinklet_memory_min_bytes", "gauge",
	       "The smallest spec.resources.memory that holds the job as it runs, by memory tuning's last "
	       "evaluation.");
	if (mt->min_memory >= 0)
		strbuf_appendf(b, "flinklet_memory_min_bytes %lld\n", (long long)mt->min_memory);
	metric(
	    b, "flinklet_memory_tuning_suspended", "gauge",
	    "1 while memory tuning is undone (a tuned JVM died of memory or failed twice) until the budget changes.");
	strbuf_appendf(b, "flinklet_memory_tuning_suspended %d\n", mt->suspended ? 1 : 0);
}

static double age_seconds(int64_t time_ms)
{
	if (time_ms <= 0)
		return -1;
	double now = (double)(now_realtime() / USEC_PER_MSEC);
	double age = (now - (double)time_ms) / 1000.0;
	return age < 0 ? 0 : age;
}

static void process_figures(double *rss, double *cpu)
{
	*cpu = 0;
	*rss = (double)proc_resident_bytes(getpid());
	char *text = NULL;
	if (read_file("/proc/self/stat", 4096, &text, NULL) == 0) {
		/* fields after the command name (which may hold spaces) */
		const char *p = strrchr(text, ')');
		unsigned long utime = 0, stime = 0;
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
			*cpu = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
		free(text);
	}
}

char *sup_metrics(struct supervisor *s, struct shbuf **flink)
{
	struct strbuf b = {0};
	const struct status *st = &s->status;

	metric(&b, "flinklet_jvm_up", "gauge", "1 while the MiniCluster JVM runs.");
	strbuf_appendf(&b, "flinklet_jvm_up %d\n", s->launch.jvm_pid > 0 ? 1 : 0);
	metric(&b, "flinklet_job_running", "gauge", "1 while the job is RUNNING with every task running.");
	strbuf_appendf(&b, "flinklet_job_running %d\n", s->state == SUP_RUNNING ? 1 : 0);
	metric(&b, "flinklet_jvm_restarts_total", "counter", "JVM starts after the first, on this state volume.");
	strbuf_appendf(&b, "flinklet_jvm_restarts_total %d\n", status_jvm_restarts(st));

	metric(&b, "flinklet_supervisor_stalls_total", "counter",
	       "Stalls of the supervisor itself (a paused container, SIGSTOP, a starved host): SupervisorStalled.");
	strbuf_appendf(&b, "flinklet_supervisor_stalls_total %llu\n", (unsigned long long)s->clock.stalls);
	metric(&b, "flinklet_supervisor_stalled_seconds_total", "counter",
	       "How long the supervisor stood still in them.");
	strbuf_appendf(&b, "flinklet_supervisor_stalled_seconds_total %.3f\n", (double)s->clock.stalled / USEC_PER_SEC);

	metric(&b, "flinklet_volume_writable", "gauge",
	       "0 while writes to the state volume fail (full, read-only, I/O errors); 1 otherwise.");
	strbuf_appendf(&b, "flinklet_volume_writable %d\n", s->volume_errno ? 0 : 1);
	metric(&b, "flinklet_volume_write_errors_total", "counter", "Writes to the state volume that failed.");
	strbuf_appendf(&b, "flinklet_volume_write_errors_total %llu\n", (unsigned long long)s->volume_write_errors);
	struct statvfs vfs;
	bool vfs_ok = statvfs(s->state_dir, &vfs) == 0 && vfs.f_blocks > 0;
	metric(&b, "flinklet_volume_free_bytes", "gauge", "Bytes free on the state volume for flinklet's user.");
	if (vfs_ok)
		strbuf_appendf(&b, "flinklet_volume_free_bytes %.0f\n", (double)vfs.f_bavail * (double)vfs.f_frsize);
	metric(&b, "flinklet_volume_size_bytes", "gauge", "The size of the state volume in bytes.");
	if (vfs_ok)
		strbuf_appendf(&b, "flinklet_volume_size_bytes %.0f\n", (double)vfs.f_blocks * (double)vfs.f_frsize);
	metric(&b, "flinklet_volume_low", "gauge",
	       "1 while the state volume's free space is below flinklet.volume.min-free-percent.");
	strbuf_appendf(&b, "flinklet_volume_low %d\n", s->snapshot.volume_low ? 1 : 0);
	metric(&b, "flinklet_volume_syncs_total", "counter",
	       "fsyncs and fdatasyncs of the state volume's records (events, status, the files flinklet replaces).");
	strbuf_appendf(&b, "flinklet_volume_syncs_total %llu\n", (unsigned long long)store_syncs());

	metric(&b, "flinklet_lifecycle_state", "gauge", "The lifecycle state: 1 for the current one.");
	for (int i = LIFECYCLE_CREATED; i <= LIFECYCLE_FAILED; i++)
		strbuf_appendf(&b, "flinklet_lifecycle_state{state=\"%s\"} %d\n",
		               lifecycle_to_string((enum lifecycle_state)i), (enum lifecycle_state)i == st->lifecycle);

	metric(&b, "flinklet_restored_from", "gauge", "What the running job was restored from: 1 for that kind.");
	static const char *const kinds[] = {"none", "checkpoint", "savepoint"};
	const char *kind = st->restored_kind ? st->restored_kind : "none";
	for (size_t i = 0; i < 3; i++)
		strbuf_appendf(&b, "flinklet_restored_from{kind=\"%s\"} %d\n", kinds[i], !strcmp(kinds[i], kind));

	double ck_age = age_seconds(st->last_checkpoint.time_ms), sp_age = age_seconds(st->last_savepoint.time_ms);
	metric(&b, "flinklet_last_checkpoint_age_seconds", "gauge",
	       "Seconds since the last completed checkpoint (absent before the first).");
	if (ck_age >= 0)
		strbuf_appendf(&b, "flinklet_last_checkpoint_age_seconds %.3f\n", ck_age);
	metric(&b, "flinklet_last_savepoint_age_seconds", "gauge",
	       "Seconds since the last savepoint (absent before the first).");
	if (sp_age >= 0)
		strbuf_appendf(&b, "flinklet_last_savepoint_age_seconds %.3f\n", sp_age);
	metric(&b, "flinklet_checkpoints_stalled", "gauge",
	       "1 while the running job has completed no checkpoint within the progress window (CheckpointsStalled).");
	strbuf_appendf(&b, "flinklet_checkpoints_stalled %d\n", s->poll.progress_stalled ? 1 : 0);
	metric(&b, "flinklet_last_checkpoint_id", "gauge", "The id of the last completed checkpoint.");
	strbuf_appendf(&b, "flinklet_last_checkpoint_id %lld\n",
	               (long long)(st->last_checkpoint.id > 0 ? st->last_checkpoint.id : 0));

	metric(&b, "flinklet_flink_checkpoints_completed", "gauge",
	       "Completed checkpoints Flink counts in the current JVM.");
	strbuf_appendf(&b, "flinklet_flink_checkpoints_completed %lld\n", (long long)s->poll.flink_completed);
	metric(&b, "flinklet_flink_checkpoints_failed", "gauge", "Failed checkpoints Flink counts in the current JVM.");
	strbuf_appendf(&b, "flinklet_flink_checkpoints_failed %lld\n", (long long)s->poll.flink_failed);
	metric(&b, "flinklet_savepoints_total", "counter", "Savepoints completed by this supervisor.");
	strbuf_appendf(&b, "flinklet_savepoints_total %llu\n", (unsigned long long)s->snapshot.savepoints);
	metric(&b, "flinklet_savepoint_failures_total", "counter", "Savepoints this supervisor asked for that failed.");
	strbuf_appendf(&b, "flinklet_savepoint_failures_total %llu\n",
	               (unsigned long long)s->snapshot.savepoint_failures);
	metric(&b, "flinklet_checkpoints_triggered_total", "counter",
	       "Checkpoints this supervisor asked for that completed.");
	strbuf_appendf(&b, "flinklet_checkpoints_triggered_total %llu\n", (unsigned long long)s->snapshot.checkpoints);
	metric(&b, "flinklet_checkpoint_trigger_failures_total", "counter",
	       "Checkpoints this supervisor asked for that failed.");
	strbuf_appendf(&b, "flinklet_checkpoint_trigger_failures_total %llu\n",
	               (unsigned long long)s->snapshot.checkpoint_failures);
	metric(&b, "flinklet_savepoint_history_size", "gauge", "Savepoints in the status document's history.");
	strbuf_appendf(&b, "flinklet_savepoint_history_size %d\n", st->n_savepoint_history);

	metric(&b, "flinklet_autoscaler_scalings_total", "counter", "Rescales the autoscaler applied.");
	strbuf_appendf(&b, "flinklet_autoscaler_scalings_total %llu\n", (unsigned long long)s->autoscaler.scalings);
	metric(&b, "flinklet_vertex_parallelism", "gauge", "The current parallelism of each job vertex.");
	for (size_t i = 0; i < s->poll.vertices.n; i++) {
		strbuf_append(&b, "flinklet_vertex_parallelism{vertex_id=\"");
		label_value(&b, s->poll.vertices.v[i].id);
		strbuf_append(&b, "\",vertex_name=\"");
		label_value(&b, s->poll.vertices.v[i].name);
		strbuf_appendf(&b, "\"} %d\n", s->poll.vertices.v[i].parallelism);
	}

	autoscaler_figures(&b, s);
	memory_tuning_figures(&b, s);

	metric(&b, "flinklet_api_unauthorized_total", "counter",
	       "Control API requests refused for a missing or bad token.");
	strbuf_appendf(&b, "flinklet_api_unauthorized_total %llu\n", (unsigned long long)s->http.unauthorized);
	if (s->http.server) {
		unsigned open;
		uint64_t refused;
		http_stats(s->http.server, &open, &refused);
		metric(&b, "flinklet_http_connections", "gauge", "Connections open on the supervisor's HTTP endpoint.");
		strbuf_appendf(&b, "flinklet_http_connections %u\n", open);
		metric(&b, "flinklet_http_connections_refused_total", "counter",
		       "Connections to the HTTP endpoint closed at once over flinklet.http.max-connections or "
		       "max-connections-per-ip.");
		strbuf_appendf(&b, "flinklet_http_connections_refused_total %llu\n", (unsigned long long)refused);
	}
	double rss, cpu;
	process_figures(&rss, &cpu);
	metric(&b, "flinklet_process_resident_memory_bytes", "gauge", "The supervisor's own resident memory.");
	strbuf_appendf(&b, "flinklet_process_resident_memory_bytes %.0f\n", rss);
	metric(&b, "flinklet_process_cpu_seconds_total", "counter", "The supervisor's own CPU time.");
	strbuf_appendf(&b, "flinklet_process_cpu_seconds_total %.2f\n", cpu);
	/* last: Flink's own families, as its reporter gave them (sup_flinkmetrics.c), sent from the one kept copy */
	*flink = sup_flinkmetrics_append(s, &b);
	return strbuf_steal(&b);
}

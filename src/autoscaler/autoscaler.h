/* autoscaler: the Flink Kubernetes Operator's job autoscaler (FLIP-271/FLIP-334), in C, as a pure library:
 * options, metric collection from Flink's REST responses, evaluation, the scaling decision, persisted
 * state, events, and the `flinklet autoscaler plan` command. Specified by
 * ../shared/docs/reference/flink-autoscaler.md (section numbers below refer to it); docs/autoscaler.md
 * is the user's view.
 *
 * FLIP-334's shape: one job autoscaler (autoscaler_scale, autoscaler_cleanup) with a per-cycle context,
 * and three pluggable parts given as structs of function pointers: a realizer (applies the parallelism
 * overrides), an event handler, and a state store. A second realizer or store is one new file.
 *
 * Nothing here does I/O except the file state store (src/autoscaler/as_store_file.c); no network, no processes,
 * no event loop. The supervisor's collector makes the REST calls and feeds the responses in (see
 * "Collection" below), then calls autoscaler_scale() once per control-loop tick. What the library's own files
 * share besides is src/autoscaler/as_internal.h. */
#ifndef FLINKLET_AUTOSCALER_H
#define FLINKLET_AUTOSCALER_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "util.h"

struct cJSON;

/* ======================================================================================================
 * Options (section 4). Every job.autoscaler.* key (also under the fallback prefix
 * kubernetes.operator.job.autoscaler.*), plus autoscaler.standalone.control-loop.interval.
 * ====================================================================================================== */

enum as_busy_agg { AS_BUSY_AVG, AS_BUSY_MAX, AS_BUSY_MIN };

/* The resolved alignment behaviour (3.3): the new key's built-in modes, or the legacy blocking modes
 * when only the deprecated key is set. */
enum as_align {
	AS_ALIGN_BALANCED,
	AS_ALIGN_EVENLY_SPREAD,
	AS_ALIGN_OFF,
	AS_ALIGN_LEGACY_EVENLY_SPREAD,
	AS_ALIGN_LEGACY_MAXIMIZE_UTILISATION,
};

struct as_options {
	bool enabled;
	bool scaling_enabled;
	int64_t metrics_window_ms;
	int64_t stabilization_ms;
	struct strv excluded_periods;
	double utilization_target;
	double utilization_boundary;
	double utilization_max; /* NaN: not set */
	double utilization_min; /* NaN: not set */
	int64_t scale_down_interval_ms;
	int vertex_min_parallelism;
	int vertex_max_parallelism;
	double scale_down_max_factor;
	double scale_up_max_factor;
	int64_t catch_up_ms;
	int64_t restart_time_ms;
	bool restart_tracking;
	int64_t restart_tracking_limit_ms;
	int64_t backlog_lag_threshold_ms;
	int64_t observed_tpr_lag_threshold_ms;
	double observed_tpr_switch_threshold;
	int observed_tpr_min_observations;
	bool effectiveness_detection;
	double effectiveness_threshold;
	double gc_pressure_threshold;
	double heap_usage_threshold;
	bool memory_tuning;
	bool memory_tuning_compensation;
	double memory_tuning_overhead;
	bool memory_tuning_maximize_managed;
	int history_max_count;
	int64_t history_max_age_ms;
	enum as_busy_agg busy_agg;
	struct strv exclude_ids;
	int64_t event_interval_ms;
	int64_t rest_timeout_ms;
	double quota_cpu;      /* NaN: not set */
	uint64_t quota_memory; /* bytes; 0: not set */
	enum as_align alignment;
	bool observed_scalability;
	int observed_scalability_min_observations;
	double observed_scalability_coefficient_min;
	int64_t control_loop_interval_ms;
};

/* The option table (same struct as flinklet's), for docs and tests. Doubles and lists have type
 * OPT_STRING here (config.h has no double or list type); their syntax is in the doc text. */
extern const struct option_def autoscaler_options[];

/* Every option at its default. */
void as_options_defaults(struct as_options *o);
void as_options_free(struct as_options *o);

/* Checks every autoscaler key of the spec (types, ranges, cross-field rules, excluded-period syntax,
 * unknown keys with a "did you mean" hint). Messages go to d as
 * "file:line:col: spec.flinkConfiguration.<key>: must be ... (got \"x\")". Returns 0 or -EINVAL. */
int autoscaler_validate(const struct spec *s, struct diags *d);

/* The typed options of a spec. Values that do not validate keep their default (call
 * autoscaler_validate first). */
void as_options_from_spec(const struct spec *s, struct as_options *ret);

/* The typed options of the spec (may be NULL) overlaid with a JSON object of Flink keys to values
 * (strings, numbers, booleans, or arrays of strings for list options), as `plan`'s "config". Errors go
 * to errors as "<path_prefix>.<key>: must be ..." Returns 0 or -EINVAL. */
int as_options_from_json(const struct spec *s, const struct cJSON *config, const char *path_prefix,
                         struct as_options *ret, struct strv *errors);

/* Excluded periods (3.9): a Quartz cron expression (6 or 7 fields), a daily range HH:mm:ss-HH:mm:ss, or
 * one of each joined with "&&". Evaluated in the process's local time zone. */
int as_period_check(const char *expr, char **ret_error); /* 0 or -EINVAL with a reason (malloc'd) */
bool as_period_matches(const char *expr, int64_t epoch_ms);
bool as_in_excluded_period(const struct as_options *o, int64_t epoch_ms);

/* ======================================================================================================
 * Metrics, topology, samples and evaluated metrics (sections 1 and 2)
 * ====================================================================================================== */

/* Per-vertex metrics of one sample (1.4), as in the state file and plan's "samples". */
enum as_vmetric {
	AS_VM_LAG,
	AS_VM_LOAD,
	AS_VM_ACCUMULATED_BUSY_TIME,
	AS_VM_NUM_RECORDS_IN,
	AS_VM_NUM_RECORDS_OUT,
	AS_VM_NUM_RECORDS_IN_PER_SECOND,
	AS_VM_OBSERVED_TPR,
	AS_VM_COUNT,
};
/* Global metrics of one sample (1.5). */
enum as_gmetric {
	AS_GM_NUM_TASK_SLOTS_USED,
	AS_GM_GC_PRESSURE,
	AS_GM_HEAP_MEMORY_USED,
	AS_GM_HEAP_MAX_USAGE_RATIO,
	AS_GM_MANAGED_MEMORY_USED,
	AS_GM_METASPACE_MEMORY_USED,
	AS_GM_COUNT,
};
/* Evaluated per-vertex metrics (2.3, 2.4, 2.7). */
enum as_emetric {
	AS_EM_LOAD,
	AS_EM_TRUE_PROCESSING_RATE,
	AS_EM_TARGET_DATA_RATE,
	AS_EM_CATCH_UP_DATA_RATE,
	AS_EM_LAG,
	AS_EM_PARALLELISM,
	AS_EM_RECOMMENDED_PARALLELISM,
	AS_EM_MAX_PARALLELISM,
	AS_EM_NUM_SOURCE_PARTITIONS,
	AS_EM_SCALE_UP_RATE_THRESHOLD,
	AS_EM_SCALE_DOWN_RATE_THRESHOLD,
	AS_EM_EXPECTED_PROCESSING_RATE,
	AS_EM_COUNT,
};
/* Evaluated global metrics (2.5). */
enum as_egmetric {
	AS_EG_GC_PRESSURE,
	AS_EG_HEAP_MAX_USAGE_RATIO,
	AS_EG_HEAP_MEMORY_USED,
	AS_EG_MANAGED_MEMORY_USED,
	AS_EG_METASPACE_MEMORY_USED,
	AS_EG_NUM_TASK_SLOTS_USED,
	AS_EG_COUNT,
};

const char *as_vmetric_name(enum as_vmetric m);
const char *as_gmetric_name(enum as_gmetric m);
const char *as_emetric_name(enum as_emetric m);
const char *as_egmetric_name(enum as_egmetric m);
int as_vmetric_from_name(const char *name); /* -1: unknown; likewise below */
int as_gmetric_from_name(const char *name);
int as_emetric_from_name(const char *name);
int as_egmetric_from_name(const char *name);

/* Which fields an evaluated metric carries: 1 current, 2 average, 3 both. */
int as_emetric_fields(enum as_emetric m);
int as_egmetric_fields(enum as_egmetric m);

/* An evaluated metric: both fields NaN when unset. */
struct as_eval_metric {
	double current, average;
};

enum as_ship {
	AS_SHIP_HASH,
	AS_SHIP_REBALANCE,
	AS_SHIP_RESCALE,
	AS_SHIP_FORWARD,
	AS_SHIP_CUSTOM,
	AS_SHIP_BROADCAST,
	AS_SHIP_GLOBAL,
	AS_SHIP_SHUFFLE,
	AS_SHIP_UNKNOWN,
};
enum as_ship as_ship_from_string(const char *s); /* case-insensitive; AS_SHIP_UNKNOWN for anything else */

struct as_edge {
	size_t from; /* index into as_topology.v */
	enum as_ship ship;
};

struct as_vertex {
	char *id; /* the job vertex's hex id */
	int parallelism;
	int max_parallelism;
	int num_source_partitions; /* 0: unknown */
	bool finished;
	char *slot_sharing_group; /* NULL: unknown */
	struct as_edge *inputs;
	size_t ninputs;
	size_t *outputs;
	size_t noutputs;
	/* accumulated IO from the job details (1.2); NaN when unknown */
	double read_records, write_records, accumulated_busy_time;
};

struct as_topology {
	struct as_vertex *v;
	size_t n;
	size_t *order; /* topological order (Kahn, level by level) */
};

void as_topology_free(struct as_topology *t);
int as_topology_find(const struct as_topology *t, const char *id); /* index or -1 */
static inline bool as_is_source(const struct as_vertex *v)
{
	return v->ninputs == 0;
}
/* Builds outputs and the topological order from the inputs. Returns 0, or -EINVAL when the inputs
 * form a cycle. */
int as_topology_link(struct as_topology *t);
/* From GET /jobs/:id (vertices, plan.nodes, timestamps.RUNNING); plan may be NULL to use the details'
 * "plan", or a separate GET /jobs/:id/plan response. Returns 0, -EAGAIN when the plan has no nodes yet
 * (not ready), or -EINVAL with *ret_error set (malloc'd). */
int as_topology_from_rest(const struct cJSON *job_details, const struct cJSON *plan, struct as_topology *ret,
                          int64_t *ret_running_ts, char **ret_error);

/* One sample of the metric window: per-vertex values (NaN: absent) and global values. */
struct as_sample_vertex {
	char *id;
	double m[AS_VM_COUNT];
};
struct as_sample {
	int64_t ts;
	struct as_sample_vertex *v;
	size_t n;
	double g[AS_GM_COUNT];
};
void as_sample_init(struct as_sample *s, int64_t ts);
void as_sample_free(struct as_sample *s);
double *as_sample_vertex_metrics(struct as_sample *s, const char *id, bool create); /* NULL when absent */
const double *as_sample_vertex_get(const struct as_sample *s, const char *id);

/* The ordered metric window (oldest first). */
struct as_samples {
	struct as_sample *s;
	size_t n;
};
void as_samples_free(struct as_samples *h);
/* Inserts (or replaces) the sample at its timestamp, taking ownership of its contents. */
void as_samples_put(struct as_samples *h, struct as_sample *s);
void as_samples_drop_before(struct as_samples *h, int64_t ts); /* drops keys < ts */

/* ======================================================================================================
 * Persistent per-job state (5.1)
 * ====================================================================================================== */

struct as_history_entry {
	int64_t ts;
	int current_parallelism, new_parallelism;
	struct as_eval_metric m[AS_EM_COUNT];
};
struct as_vertex_history {
	char *vertex;
	struct as_history_entry *e; /* oldest first */
	size_t n;
};
struct as_scaling_history {
	struct as_vertex_history *v;
	size_t n;
};
void as_scaling_history_free(struct as_scaling_history *h);
struct as_vertex_history *as_scaling_history_get(const struct as_scaling_history *h, const char *vertex);
void as_scaling_history_add(struct as_scaling_history *h, const char *vertex, const struct as_history_entry *e);
/* Keeps entries with ts >= now - max_age, then the newest max_count; drops vertices left empty. */
void as_scaling_history_trim(struct as_scaling_history *h, int64_t now, int64_t max_age_ms, int max_count);

struct as_tracking_record {
	int64_t ts;
	int64_t restart_ms; /* -1: not measured yet */
};
struct as_tracking {
	struct as_tracking_record *r; /* oldest first */
	size_t n;
};
void as_tracking_free(struct as_tracking *t);
void as_tracking_trim(struct as_tracking *t, int64_t now, int64_t max_age_ms, int max_count);

struct as_recommendation {
	int64_t trigger_time;
	int parallelism;
	bool outside;
};
struct as_delayed_vertex {
	char *vertex;
	int64_t first_trigger_time;
	struct as_recommendation *r; /* front first; parallelism strictly decreasing */
	size_t n;
};
struct as_delayed {
	struct as_delayed_vertex *v;
	size_t n;
	bool updated; /* changed during this cycle */
};
void as_delayed_free(struct as_delayed *d);
void as_delayed_clear_vertex(struct as_delayed *d, const char *vertex);
void as_delayed_clear_all(struct as_delayed *d);

/* A map vertex id -> parallelism (insertion order kept). */
struct as_pmap_entry {
	char *vertex;
	int parallelism;
};
struct as_pmap {
	struct as_pmap_entry *e;
	size_t n;
};
void as_pmap_free(struct as_pmap *m);
void as_pmap_set(struct as_pmap *m, const char *vertex, int parallelism);
int as_pmap_get(const struct as_pmap *m, const char *vertex); /* -1: absent */
bool as_pmap_equal(const struct as_pmap *a, const struct as_pmap *b);
/* Flink's map syntax "k1:v1,k2:v2" (pipeline.jobvertex-parallelism-overrides). Returns 0 or -EINVAL. */
int as_pmap_parse_flink(const char *s, struct as_pmap *ret);
char *as_pmap_to_flink(const struct as_pmap *m);

/* Serialization of the state kinds to and from JSON (src/autoscaler/as_state.c). NaN and infinities are the
 * strings "NaN", "Infinity", "-Infinity". The *_from_json functions validate everything and return 0,
 * or -EINVAL with *ret_error naming the JSON path; they never keep a half-read value. */
struct cJSON *as_samples_to_json(const struct as_samples *h);
int as_samples_from_json(const struct cJSON *j, struct as_samples *ret, char **ret_error);
struct cJSON *as_scaling_history_to_json(const struct as_scaling_history *h);
int as_scaling_history_from_json(const struct cJSON *j, struct as_scaling_history *ret, char **ret_error);
struct cJSON *as_tracking_to_json(const struct as_tracking *t);
int as_tracking_from_json(const struct cJSON *j, struct as_tracking *ret, char **ret_error);
struct cJSON *as_pmap_to_json(const struct as_pmap *m);
int as_pmap_from_json(const struct cJSON *j, struct as_pmap *ret, char **ret_error);
struct cJSON *as_delayed_to_json(const struct as_delayed *d);
int as_delayed_from_json(const struct cJSON *j, struct as_delayed *ret, char **ret_error);

/* ======================================================================================================
 * Pluggable parts (FLIP-334)
 * ====================================================================================================== */

/* The state kinds of 5.1 that flinklet keeps (configOverrides is not kept: memory tuning is not
 * realized in-process, as in the standalone autoscaler). */
enum as_state_kind {
	AS_STATE_COLLECTED_METRICS,
	AS_STATE_SCALING_HISTORY,
	AS_STATE_SCALING_TRACKING,
	AS_STATE_PARALLELISM_OVERRIDES,
	AS_STATE_DELAYED_SCALE_DOWN,
	AS_STATE_KIND_COUNT,
};
const char *as_state_kind_name(enum as_state_kind k); /* "collectedMetrics", ... */

/* A state store keeps one JSON value per (job key, kind). get returns a copy (the caller frees it) or
 * NULL when absent; put takes ownership. Writes may be buffered until flush, called once per cycle.
 * get may report that stored state was unreadable: it returns -EBADMSG with *ret_error (malloc'd),
 * the caller treats the state as empty, and the store does not report it again. */
struct as_state_store_ops {
	int (*get)(void *impl, const char *job_key, enum as_state_kind kind, struct cJSON **ret, char **ret_error);
	int (*put)(void *impl, const char *job_key, enum as_state_kind kind, struct cJSON *value);
	int (*remove)(void *impl, const char *job_key, enum as_state_kind kind);
	int (*clear_all)(void *impl, const char *job_key);
	int (*flush)(void *impl, const char *job_key, char **ret_error);
	void (*free)(void *impl);
};
struct as_state_store {
	const struct as_state_store_ops *ops;
	void *impl;
};
/* One file per job, <dir>/<job key>.json, replaced atomically on flush (store.h's write_file_atomic),
 * bounded to AS_STATE_MAX_BYTES by dropping the oldest collected samples. An unreadable file is renamed
 * to <job key>.json.corrupt and reported once through get. dir is created on the first flush. */
struct as_state_store as_store_file_new(const char *dir);
/* Who writes the file store's documents instead of flush itself (the supervisor: its worker thread, so that the
 * event loop never waits on the volume): called with the file's path and its new text (owned by the writer from
 * then on); flush then reports no error of its own, the writer says what failed. */
typedef void (*as_file_writer)(void *ctx, const char *path, char *text);
struct as_state_store as_store_file_new_with_writer(const char *dir, as_file_writer writer, void *ctx);
#define AS_STATE_MAX_BYTES 1000000

enum as_event_type { AS_EVENT_NORMAL, AS_EVENT_WARNING };
const char *as_event_type_name(enum as_event_type t); /* "Normal", "Warning" */

/* Receives the events of 5.2. The core has already applied the dedupe interval (an event with the same
 * job, reason and key within interval_ms of the first one is not passed on), so a handler only records.
 * message_key may be NULL; interval_ms is -1 for "no dedupe". */
struct as_event_handler {
	void (*handle)(void *userdata, const char *job_key, enum as_event_type type, const char *reason,
	               const char *message, const char *message_key, int64_t interval_ms);
	void *userdata;
};

/* Applies the parallelism overrides (vertex hex id -> parallelism, the autoscaler's merged with the
 * user's pipeline.jobvertex-parallelism-overrides). Called on every cycle that has stored overrides,
 * so it must be idempotent (compare with the current requirements before changing anything). Returns 0
 * or a negative errno (reported as an AutoscalerError event). */
struct as_realizer {
	int (*realize)(void *userdata, const char *job_key, const struct as_pmap *overrides);
	void *userdata;
};

/* For the REST realizer (3.10): given GET /jobs/:id/resource-requirements, the body for PUT with
 * {"lowerBound": 1, "upperBound": p} for every overridden vertex. Returns true (and *ret_body, the
 * whole map) when anything changes, false when the PUT is not needed. */
bool as_resource_requirements_update(const struct cJSON *current, const struct as_pmap *overrides,
                                     struct cJSON **ret_body);

/* ======================================================================================================
 * The job autoscaler
 * ====================================================================================================== */

struct autoscaler;
struct as_job;
struct as_proposal;

/* The parts are copied; the store is owned (freed by autoscaler_free). */
struct autoscaler *autoscaler_new(const struct as_realizer *realizer, const struct as_event_handler *events,
                                  struct as_state_store store);
void autoscaler_free(struct autoscaler *as);

/* The job's in-memory record (created on first use; its persisted state is loaded then). */
struct as_job *autoscaler_job(struct autoscaler *as, const char *job_key);

/* ---- Collection (section 1), fed by the supervisor's collector for one cycle ----
 *
 *   1. GET /jobs/:id                          -> as_collect_topology(job, body, NULL, &err)
 *   2. for each id of as_collect_listings_needed():
 *      GET /jobs/:id/vertices/:vid/subtasks/metrics            -> as_collect_listing(job, vid, body)
 *   3. for each vertex with q = as_collect_vertex_query(job, vid) != NULL:
 *      GET /jobs/:id/vertices/:vid/subtasks/metrics?get=<q>    -> as_collect_vertex_metrics(job, vid, body)
 *   4. GET /jobmanager/metrics?get=<as_collect_jm_query()>     -> as_collect_jm_metrics(job, body)
 *   5. GET /taskmanagers/metrics?get=<as_collect_tm_query(job)>&agg=min,max,avg
 *                                                              -> as_collect_tm_metrics(job, body)
 *   6. autoscaler_scale(as, &ctx)
 * A failed REST call: as_collect_fail(job, "why"), then still autoscaler_scale (it reports the error,
 * and re-applies the overrides). An -EAGAIN from as_collect_tm_metrics asks for step 5 again (the probe
 * with the GC metric found nothing; the query is now without it). as_collect_topology's -EAGAIN (no
 * plan yet) skips steps 2-5. Metric names may hold characters that need URL-encoding: escape the whole
 * query value (Flink decodes it before splitting on ','). */
int as_collect_topology(struct as_job *job, const struct cJSON *job_details, const struct cJSON *plan,
                        char **ret_error);
void as_collect_listings_needed(struct as_job *job, struct strv *ret_vertex_ids);
int as_collect_listing(struct as_job *job, const char *vertex_id, const struct cJSON *listing);
char *as_collect_vertex_query(struct as_job *job, const char *vertex_id); /* malloc'd "a,b"; NULL: none */
int as_collect_vertex_metrics(struct as_job *job, const char *vertex_id, const struct cJSON *values);
const char *as_collect_jm_query(void);
int as_collect_jm_metrics(struct as_job *job, const struct cJSON *values);
const char *as_collect_tm_query(struct as_job *job);
int as_collect_tm_metrics(struct as_job *job, const struct cJSON *values);
void as_collect_fail(struct as_job *job, const char *error);

/* One cycle's context. */
struct as_context {
	const char *job_key;                  /* the job id */
	const struct as_options *options;     /* this cycle's options */
	const char *job_status;               /* effective status (as_effective_status) */
	int64_t now_ms;                       /* wall clock, epoch ms; fixed for the cycle */
	const struct as_pmap *user_overrides; /* pipeline.jobvertex-parallelism-overrides; may be NULL */
	double tm_cpu;                        /* TaskManager CPU, 0: unknown (the CPU quota never trips) */
	uint64_t tm_memory;                   /* TaskManager memory in bytes, 0: unknown */
	int slots_per_tm;                     /* taskmanager.numberOfTaskSlots, 0: unknown (quota skipped) */
	bool hook;                            /* a scaling hook reviews each rescale (flinklet.autoscaler.hook) */
};

/* The job status the standalone autoscaler uses: RUNNING counts as CREATED unless every task is
 * RUNNING or FINISHED. */
const char *as_effective_status(const char *state, int tasks_total, int tasks_running, int tasks_finished);

enum as_outcome {
	AS_OUTCOME_DISABLED,    /* job.autoscaler.enabled=false: state cleared */
	AS_OUTCOME_NOT_RUNNING, /* job not RUNNING */
	AS_OUTCOME_NOT_READY,   /* quietly skipped (stabilizing, fewer than 2 samples, empty plan) */
	AS_OUTCOME_COLLECTING,  /* evaluated, but the window is not full yet */
	AS_OUTCOME_BALANCED,    /* evaluated and decided: no rescale (or blocked by a gate) */
	AS_OUTCOME_SCALED,      /* a rescale was decided and stored */
	AS_OUTCOME_ERROR,       /* an AutoscalerError event was emitted */
	AS_OUTCOME_PROPOSED,    /* a rescale waits for the scaling hook's answer (autoscaler_hook_done) */
};
const char *as_outcome_name(enum as_outcome o);

/* One cycle (0.2): collect, evaluate, execute, flush, and always re-apply the stored overrides. */
enum as_outcome autoscaler_scale(struct autoscaler *as, const struct as_context *ctx);
/* The job is gone: drop caches, clear and flush its stored state. */
void autoscaler_cleanup(struct autoscaler *as, const char *job_key);

/* ---- The scaling hook (as_hook.c; docs/autoscaler.md, "The scaling hook") ----
 *
 * With ctx->hook, a rescale the cycle decides is not executed at once: the cycle returns AS_OUTCOME_PROPOSED and
 * keeps the proposal; the caller runs the hook with autoscaler_proposal_json() on its stdin and hands what became
 * of it to autoscaler_hook_done(), which executes the rescale as it was proposed or as the hook adjusted it, or
 * not at all (a veto, or a hook that failed), says which in a ScalingHook* event, stores the decision as a cycle
 * would and re-applies the overrides. Nothing else runs for the job in between (the caller's to ensure). */

/* What became of one run of the hook: failure NULL when it exited 0 in time (its answer is answer), else why not
 * ("did not answer within 10 s", "exited with code 3", "could not be run: No such file or directory", ...). */
struct as_hook_result {
	const char *hook; /* the executable, for messages */
	const char *failure;
	const char *answer;
	size_t answer_len;
	const char *errors; /* the end of its stderr as one line, for messages; may be NULL */
};
enum as_hook_verdict { AS_HOOK_APPLIED, AS_HOOK_ADJUSTED, AS_HOOK_VETOED, AS_HOOK_FAILED };
const char *as_hook_verdict_name(enum as_hook_verdict v); /* "applied", "adjusted", "vetoed", "failed" */
#define AS_REASON_HOOK_APPLIED "ScalingHookApplied"
#define AS_REASON_HOOK_ADJUSTED "ScalingHookAdjusted"
#define AS_REASON_HOOK_VETOED "ScalingHookVetoed"
#define AS_REASON_HOOK_FAILED "ScalingHookFailed"

/* The job's proposal as the hook's input document (malloc'd JSON, docs/autoscaler.md); NULL when none waits.
 * timeout_ms: the hook's deadline, told to it. */
char *autoscaler_proposal_json(struct autoscaler *as, const char *job_key, const struct as_options *o,
                               int64_t timeout_ms);
/* The hook's outcome for the job's proposal (see above). Returns AS_OUTCOME_SCALED when the rescale is executed,
 * AS_OUTCOME_BALANCED when it is not, AS_OUTCOME_NOT_READY when no proposal waited. */
enum as_outcome autoscaler_hook_done(struct autoscaler *as, const struct as_context *ctx,
                                     const struct as_hook_result *r);
/* Forgets the job's proposal without executing it (the JVM restarted, the autoscaler was turned off, flinklet
 * stops): the next cycle decides afresh. */
void autoscaler_proposal_drop(struct autoscaler *as, const char *job_key);

/* The overrides a new JVM of the job starts with (pipeline.jobvertex-parallelism-overrides), so that a
 * restart costs one restore, not a restore and then a rescale: the stored ones merged with the user's as
 * they are applied on every cycle. Empty when the autoscaler is disabled or has none stored. */
void autoscaler_launch_overrides(struct autoscaler *as, const char *job_key, const struct as_options *o,
                                 const struct as_pmap *user, struct as_pmap *ret);

/* For status.json ("autoscaler": {"parallelismOverrides": {...}}): {vertex: "p"}. Never NULL. */
struct cJSON *autoscaler_overrides_json(struct autoscaler *as, const char *job_key);
/* The last evaluation, for GET /metrics: {"vertices": {id: {METRIC: number|{current,average}}},
 * "global": {...}, "scalings": n, "balanced": n, "errors": n}. Never NULL. */
struct cJSON *autoscaler_report_json(struct autoscaler *as, const char *job_key);

/* ======================================================================================================
 * The plan command (issue 4, item 7; docs/autoscaler.md)
 * ====================================================================================================== */

/* input_json: the plan input document. spec_or_null: a loaded spec whose job.autoscaler.* values the
 * input's "config" overrides. On success returns 0 and the output document (malloc'd, pretty JSON with a
 * trailing newline). On bad input returns -EINVAL with one message per problem in errors, each
 * "<json path>: <problem>". */
int autoscaler_plan(const char *input_json, size_t len, const struct spec *spec_or_null, char **ret_output_json,
                    struct strv *errors);
/* The same with a scaling hook: a rescale the plan decides is put to run(ud, proposal, ret) (which fills ret, its
 * strings valid until the plan returns), executed as the hook says, and the output says what the hook did under
 * "hook". hook NULL: autoscaler_plan. */
struct as_hook_runner {
	const char *path;
	int64_t timeout_ms;
	void (*run)(void *ud, const char *proposal, struct as_hook_result *ret);
	void *ud;
};
int autoscaler_plan_hooked(const char *input_json, size_t len, const struct spec *spec_or_null,
                           const struct as_hook_runner *hook, char **ret_output_json, struct strv *errors);

#endif

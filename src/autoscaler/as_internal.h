/* as_internal: the autoscaler library's internals (the public part is autoscaler.h, which this includes), shared
 * between the src/autoscaler/as_*.c files and the unit tests. Not for other callers, but for as_json_double
 * (sup_metrics.c, sup_observe.c: a metric that may be NaN) and struct as_evaluation (sup_memtune: the evaluation
 * memory tuning reads); tests/static/test_layout.py holds the rest to src/autoscaler/. Each section names the file
 * that defines it. */
#ifndef FLINKLET_AS_INTERNAL_H
#define FLINKLET_AS_INTERNAL_H

#include "autoscaler.h"

/* Java's numeric rules (appendix A). Math.floor, Math.ceil and Math.abs are libm's floor, ceil and fabs (the
 * build links -lm). */
double as_jmax(double a, double b); /* Math.max: NaN when either is NaN */
double as_jmin(double a, double b); /* Math.min */
int64_t as_jround(double x);        /* Math.round: floor(x + 1/2) exactly; NaN 0; saturates */
int32_t as_java_d2i(double x);      /* (int) cast: NaN 0; saturates */
double as_round3(double x);         /* half-up to 3 decimals of the shortest decimal form; never to 0 */
double as_round3_digits(double x);  /* the same, always through the decimal digits (the reference; slow) */
double as_round_up2(double x);      /* ceiling to 2 decimals of the shortest decimal form */
void as_java_double_str(double x, char *buf, size_t size); /* Double.toString: "100.0", "1.0E-4", "NaN" */

/* JSON numbers that may be NaN or infinite: those become "NaN", "Infinity", "-Infinity". */
struct cJSON *as_json_number(double x);
/* A number, one of those strings, or null (NaN). Returns 0 or -EINVAL. */
int as_json_double(const struct cJSON *j, double *ret);
/* An integral JSON number within [min, max]. Returns 0 or -EINVAL. */
int as_json_int64(const struct cJSON *j, int64_t min, int64_t max, int64_t *ret);
/* An evaluated metric as output: a number, or {"current","average"} when fields == 3. */
struct cJSON *as_eval_metric_to_json(const struct as_eval_metric *m, int fields);
/* A number (goes to the metric's own field, or both when fields == 3) or {"current","average"}. */
int as_eval_metric_from_json(const struct cJSON *j, int fields, struct as_eval_metric *ret);

/* JSON text (src/autoscaler/as_jsonout.c), byte for byte cJSON's: with two-space indentation and a trailing newline, or
 * as cJSON_PrintUnformatted (malloc'd). */
char *as_json_pretty(const struct cJSON *j);
char *as_json_unformatted(const struct cJSON *j);
/* The closest of candidates to got when near enough to be a typo, else NULL. */
const char *as_did_you_mean(const char *got, const char *const *candidates, size_t n);

/* ---- window functions (2.1); vertex NULL means the global metrics (m is then an as_gmetric) ---- */
double as_rate(const struct as_samples *h, const char *vertex, int m);
double as_avg(const struct as_samples *h, const char *vertex, int m, int min_n);
double as_avg_or_rate(const struct as_samples *h, const char *vertex, int per_sec, int accumulated);
double as_latest(const struct as_samples *h, const char *vertex, int m);

/* What rate, avg and latest need of one metric of one vertex (or of the global metrics), gathered in one pass
 * over the window, oldest sample first: the functions above are these over a single metric. */
struct as_wstat {
	double first, last; /* the first and the last value that is not NaN */
	int64_t first_ts, last_ts;
	size_t count;  /* values that are not NaN */
	double sum;    /* of the finite values, oldest first */
	int finite;    /* how many */
	bool infinite; /* an infinite value was seen */
	double latest; /* the newest sample's value; NaN when it has none */
};
void as_wstat_init(struct as_wstat *w);
void as_wstat_add(struct as_wstat *w, double v, int64_t ts);
double as_wstat_rate(const struct as_wstat *w);
double as_wstat_avg(const struct as_wstat *w, int min_n);
double as_wstat_avg_or_rate(const struct as_wstat *per_sec, const struct as_wstat *accumulated);

/* The window of every vertex of a topology and of the global metrics, in one pass over the samples (samples
 * list their vertices in the same order, so a vertex is found by position and one comparison). */
#define AS_WINDOW_INLINE 8
struct as_window {
	struct as_wstat (*v)[AS_VM_COUNT]; /* per topology index: small, or allocated for larger topologies */
	struct as_wstat g[AS_GM_COUNT];
	struct as_wstat small[AS_WINDOW_INLINE][AS_VM_COUNT];
};
void as_window_build(const struct as_topology *t, const struct as_samples *h, struct as_window *ret);
void as_window_free(struct as_window *w);

/* The topology index of the vertex id, trying *hint first (then updated): for looking up the vertices of one
 * sample after another with one hint per position. -1: no such vertex. */
int as_topology_find_hinted(const struct as_topology *t, const char *id, size_t *hint);

/* ---- collection (1.2 - 1.5) ---- */

/* Metric names of one vertex chosen from its listing (1.3). */
struct as_vertex_names {
	char *id;
	bool listed;
	bool is_source;
	char *busy, *backpressure, *source_in_per_sec, *source_in, *source_out, *in_per_sec;
	struct strv pending; /* every .pendingRecords name */
	int partitions;      /* from the Kafka/Pulsar names, 0: unknown */
};
void as_vertex_names_free(struct as_vertex_names *n);
/* Chooses the names of a listing ([{"id": name}, ...]) and counts the source partitions. */
int as_vertex_names_from_listing(const struct cJSON *listing, bool is_source, struct as_vertex_names *ret);
/* The first required metric (1.3) a listing did not name, or NULL when it named them all. */
const char *as_vertex_names_missing(const struct as_vertex_names *n);
/* Distinct Kafka and Pulsar partitions named by metric names (1.2). */
int as_count_source_partitions(const struct strv *names);

/* Aggregated values of one vertex's metrics (NaN: not returned). */
struct as_agg {
	double min, max, avg, sum, skew;
};
struct as_vertex_raw {
	bool present; /* metrics were fed for this vertex */
	struct as_agg busy, backpressure, source_in_per_sec, source_in, source_out, in_per_sec;
	double pending;      /* sum over every pendingRecords name; NaN: none */
	const char *missing; /* a required metric the vertex does not have, or NULL */
};
/* Everything one REST snapshot gave (topology, per-vertex aggregates, JM and TM values). */
struct as_snapshot {
	bool have_topology;
	struct as_topology topo;
	int64_t running_ts;
	struct as_vertex_raw *raw; /* per topology index */
	double slots_total, slots_available;
	struct as_agg heap_max, heap_used, managed_used, metaspace_used, gc_time;
	bool tm_present;
	char *error; /* a REST failure reported by the collector */
};
void as_snapshot_free(struct as_snapshot *s);
/* Parses [{"id", "min", "max", "avg", "sum", "skew"}] into raw by the vertex's chosen names. */
int as_vertex_raw_from_json(const struct cJSON *values, const struct as_vertex_names *names, struct as_vertex_raw *raw);
/* Turns a snapshot into one sample at now (1.4, 1.5). history is the window so far (for the observed
 * TPR's fallback). Returns 0, or -ENOENT with *ret_error naming a missing required metric. */
int as_snapshot_to_sample(const struct as_options *o, const struct as_snapshot *snap, const struct as_samples *history,
                          int64_t now, struct as_sample *ret, char **ret_error);

/* ---- plan's input (as_jsonin.c) ---- */
/* The top-level "samples" of a plan document read straight from its text into ret (oldest first, as
 * as_samples_from_json_at reads them), [*ret_begin, *ret_end) the bytes of its value. Returns 1, or 0 (ret empty)
 * when the text has no such member or anything about the document is not plain JSON that
 * as_samples_from_json_at accepts as it is: the caller then reads the document with cJSON. */
int as_plan_samples_from_text(const char *text, size_t len, struct as_samples *ret, size_t *ret_begin, size_t *ret_end);

/* ---- state documents (as_state.c) ---- */
int as_samples_from_json_at(const struct cJSON *j, const char *path, struct as_samples *ret, char **ret_error);
/* One history entry: {"timestamp", "currentParallelism", "newParallelism", "metrics": {...}}, or plan's
 * flat form with metric names (TRUE_PROCESSING_RATE, EXPECTED_PROCESSING_RATE, ...) beside them. */
int as_history_entry_from_json(const struct cJSON *j, const char *path, struct as_history_entry *ret, char **ret_error);
/* Drops the oldest collected samples of a whole state document until it prints within max_bytes.
 * Returns the number dropped. */
size_t as_state_bound(struct cJSON *doc, size_t max_bytes);

/* ---- evaluation (section 2) ---- */

struct as_vertex_eval {
	struct as_eval_metric m[AS_EM_COUNT];
};
struct as_evaluation {
	struct as_vertex_eval *v; /* per topology index */
	size_t n;
	struct as_eval_metric g[AS_EG_COUNT];
	bool backlog;
};
void as_evaluation_free(struct as_evaluation *e);
/* restart time in whole seconds (2.6) from the options and the tracking records. */
int64_t as_restart_seconds(const struct as_options *o, const struct as_tracking *t);
/* capacity(M, u, withRestart) of 2.4. */
double as_capacity(const struct as_options *o, const struct as_eval_metric *m, double u, bool with_restart,
                   int64_t restart_s);
/* SCALE_UP_RATE_THRESHOLD and SCALE_DOWN_RATE_THRESHOLD of one vertex (2.4). */
void as_thresholds(const struct as_options *o, struct as_eval_metric *m, bool backlog, int64_t restart_s);
/* True when TPR.avg < SCALE_UP_RATE_THRESHOLD or > SCALE_DOWN_RATE_THRESHOLD. */
bool as_outside_bounds(const struct as_eval_metric *m);
/* Backlog detection (2.2). */
bool as_processing_backlog(const struct as_options *o, const struct as_topology *t, const struct as_samples *h);
/* The whole of section 2. Returns 0 or -EINVAL with *ret_error ("Cannot evaluate metrics without
 * ingestion rate information"). */
int as_evaluate(const struct as_options *o, const struct as_topology *t, const struct as_samples *h, int64_t restart_s,
                struct as_evaluation *ret, char **ret_error);

/* ---- decision (section 3) ---- */

struct as_emitter {
	void (*emit)(void *ud, enum as_event_type type, const char *reason, const char *message,
	             const char *message_key, int64_t interval_ms);
	void *ud;
};
void as_emit(const struct as_emitter *e, enum as_event_type type, const char *reason, const char *message_key,
             int64_t interval_ms, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* 3.3: clamp ceil(f x p) to the limits and align it to key groups or partitions. */
int as_scale_parallelism(const struct as_options *o, const char *vertex, int p, double f, int lower_limit,
                         int upper_limit, int max_p, int partitions, bool has_hash_input, const struct as_emitter *em);
/* 3.8: the observed scalability coefficient from a vertex's history (1 when not enough). */
double as_scalability_coefficient(const struct as_options *o, const struct as_vertex_history *vh);
/* 3.6: true when the last scale-up was ineffective and detection blocks the next one (emits the event). */
bool as_block_ineffective(const struct as_options *o, const char *vertex, const struct as_eval_metric *m,
                          const struct as_vertex_history *vh, const struct as_emitter *em);
/* 3.7: records the recommendation; returns the parallelism to change to now, or -1 for no change. */
int as_delayed_scale_down(const struct as_options *o, struct as_delayed *d, const char *vertex, int p, int new_p,
                          bool outside, int64_t now, bool *ret_outside);

struct as_vertex_decision {
	bool computed;   /* the vertex was considered (not excluded) */
	int target;      /* scale()'s result, before delayed scale-down and the ineffective-scaling block */
	bool change;     /* a ParallelismChange other than "no change" */
	int new_p;       /* its parallelism */
	bool outside;    /* its outsideUtilizationBound */
	bool in_summary; /* carried into the job-level decision */
};
/* 3.2 for one vertex (index i of the topology). */
void as_vertex_target(const struct as_options *o, const struct as_topology *t, size_t i, struct as_evaluation *ev,
                      const struct as_vertex_history *vh, struct as_delayed *delayed, int64_t now, int64_t restart_s,
                      const struct as_emitter *em, struct as_vertex_decision *ret);

struct as_exec {
	/* in */
	const struct as_options *o;
	const struct as_topology *t;
	struct as_evaluation *ev; /* RECOMMENDED_PARALLELISM and EXPECTED_PROCESSING_RATE are written */
	const struct as_scaling_history *history;
	struct as_delayed *delayed;
	const bool *excluded; /* per topology index, may be NULL */
	int64_t now;
	int64_t restart_s;
	double tm_cpu;
	uint64_t tm_memory;
	int slots_per_tm;
	const struct as_emitter *em;
	bool review; /* a scaling hook reviews a rescale: stop before executing it (proposed) */
	/* out */
	struct as_vertex_decision *d; /* per topology index (allocated by as_execute) */
	bool scaled;                  /* the summaries are to be applied */
	bool proposed;                /* review: the summaries wait for the hook (as_exec_commit executes them) */
	const char *blocked_by;       /* NULL, or what kept the summaries from being applied */
};
/* 3.1 steps 2-9 and 14: decides, emits the events, clears the delayed scale-downs after a rescale. */
void as_execute(struct as_exec *x);
/* Steps 9 and 14 of a rescale as_execute decided (and, with review, the hook let through): the ScalingReport of
 * the summaries, the delayed scale-downs cleared; scaled is set. */
void as_exec_commit(struct as_exec *x);
void as_exec_free(struct as_exec *x);

/* ---- the scaling hook's side of a rescale (as_hook.c) ---- */
/* A rescale waiting for the hook: what the hook is told and what executing it needs, owned. */
struct as_proposal {
	int64_t now;
	struct as_topology t; /* the vertices' ids, parallelism, max parallelism, partitions, and the order */
	struct as_evaluation ev;
	struct as_vertex_decision *d;
	bool *excluded;
};
/* The proposal of x (proposed): copies what it needs, takes x->d. */
struct as_proposal *as_proposal_take(struct as_exec *x);
/* An as_exec over the proposal (for as_hook_review and as_exec_commit; nothing to free). */
void as_proposal_exec(struct as_proposal *p, const struct as_options *o, struct as_delayed *delayed,
                      const struct as_emitter *em, struct as_exec *ret);
/* The proposal x holds (proposed) as the hook's input document; job names the job ("plan" in the plan command). */
char *as_hook_proposal(const struct as_exec *x, const char *job, int64_t timeout_ms);
/* Reads what became of the hook against the proposal, changes x->d (and RECOMMENDED_PARALLELISM,
 * EXPECTED_PROCESSING_RATE) as an adjustment says, emits the ScalingHook* event and returns the verdict: applied
 * and adjusted are then committed (as_exec_commit), vetoed and failed are not. *ret_message: the event's message
 * (malloc'd), when not NULL. */
enum as_hook_verdict as_hook_review(struct as_exec *x, const struct as_hook_result *r, char **ret_message);
/* The ScalingReport message for the vertices in the summary (5.2). */
char *as_scaling_report(const struct as_topology *t, const struct as_evaluation *ev, const struct as_vertex_decision *d,
                        bool enabled_header, const char *disabled_by);

/* ---- events (5.2) ---- */
#define AS_REASON_SCALING_REPORT "ScalingReport"
#define AS_REASON_INEFFECTIVE_SCALING "IneffectiveScaling"
#define AS_REASON_SCALING_LIMITED "ScalingLimited"
#define AS_REASON_MEMORY_PRESSURE "MemoryPressure"
#define AS_REASON_RESOURCE_QUOTA "ResourceQuotaReached"
#define AS_REASON_ERROR "AutoscalerError"
#define AS_REASON_OPTIONS_VALIDATION "AutoScaler Options Validation"
#define AS_REASON_SCALING "Scaling"

/* Dedupe of repeated events: the first event of a (reason, key) starts an interval during which the
 * same event is suppressed. */
struct as_dedupe_entry {
	char *key;
	int64_t first_ms;
};
struct as_dedupe {
	struct as_dedupe_entry *e;
	size_t n;
};
bool as_dedupe_admit(struct as_dedupe *d, const char *reason, const char *key, int64_t interval_ms, int64_t now);
void as_dedupe_free(struct as_dedupe *d);

/* ---- the job record (as_autoscaler.c owns it; as_metrics.c fills its collector part) ---- */
struct as_job {
	char *key;
	bool loaded;
	/* persisted state (5.1), loaded once, written through to the store */
	struct as_samples history;
	struct as_scaling_history scaling_history;
	struct as_tracking tracking;
	struct as_pmap overrides;
	struct as_delayed delayed;
	/* the collector's caches (1.3, 1.5) */
	struct as_vertex_names *names; /* one per vertex of the last topology */
	size_t nnames;
	int tm_gc;               /* -1: not probed, 0: without the GC metric, 1: with it */
	struct as_snapshot snap; /* this cycle's REST snapshot */
	bool snap_fed;
	/* the vertices excluded for this cycle (finished, or without busy time in this cycle's sample): not
	 * scaled, and the user's override of them wins when the overrides are applied (0.2 step 6) */
	struct strv cycle_excluded;
	/* reporting */
	struct as_topology last_topo;
	struct as_evaluation last_eval;
	bool have_eval;
	uint64_t scalings, balanced, errors;
	struct as_dedupe dedupe;
	struct as_proposal *proposal; /* a rescale waiting for the scaling hook (as_hook.c) */
};
void as_proposal_free(struct as_proposal *p);
void as_job_reset_collector(struct as_job *job);

#endif

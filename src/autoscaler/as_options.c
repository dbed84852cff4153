/* as_options: every job.autoscaler.* option of reference section 4 (and its kubernetes.operator.
 * fallback spelling and deprecated keys) with its default: the option table for docs, parsing into
 * struct as_options from a spec or from plan's "config" object (each value by its kind: as_optvalue.c), and
 * validation with the operator's rules plus type and range checks, as configuration errors with "did you mean"
 * hints. It is not for using the options (as_eval.c, as_scale.c) or for excluded-period syntax (as_periods.c). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_optvalue.h"
#include "as_internal.h"

#define P "job.autoscaler."
#define FALLBACK "kubernetes.operator."

const struct option_def autoscaler_options[] = {
    {P "enabled", OPT_BOOL, "false", 0, 0, NULL,
     "Master switch. Turning it off clears all autoscaler state (the stored overrides too)."},
    {P "scaling.enabled", OPT_BOOL, "true", 0, 0, NULL,
     "If false, collect, evaluate and report recommendations only (metrics-only mode)."},
    {P "metrics.window", OPT_DURATION, "15 min", 0, 0, NULL, "Length of the sliding window of samples."},
    {P "stabilization.interval", OPT_DURATION, "5 min", 0, 0, NULL,
     "Time after the job starts RUNNING before samples count towards a full window."},
    {P "excluded.periods", OPT_STRING, "", 0, 0, NULL,
     "List (a;b) of Quartz cron expressions or daily ranges HH:mm:ss-HH:mm:ss (or one of each joined with &&) "
     "during which scaling is not executed."},
    {P "utilization.target", OPT_STRING, "0.7", 0, 0, NULL,
     "Target busy ratio used to size capacity, in [0, 1]. Deprecated key: job.autoscaler.target.utilization."},
    {P "target.utilization.boundary", OPT_STRING, "0.3", 0, 0, NULL,
     "Deprecated. Default band: max = target + boundary, min = target - boundary."},
    {P "utilization.max", OPT_STRING, NULL, 0, 0, NULL,
     "Upper utilization bound (scale-up threshold), in [target, 1]. Default: target + boundary."},
    {P "utilization.min", OPT_STRING, NULL, 0, 0, NULL,
     "Lower utilization bound (scale-down threshold), in [0, target]. Default: target - boundary."},
    {P "scale-down.interval", OPT_DURATION, "1 h", 0, 0, NULL,
     "Delay and merge window for scale-downs; 0 means immediate. Deprecated key: "
     "job.autoscaler.scale-up.grace-period."},
    {P "vertex.min-parallelism", OPT_INT, "1", 1, INT32_MAX, NULL, "Lowest parallelism the autoscaler may set."},
    {P "vertex.max-parallelism", OPT_INT, "200", 1, INT32_MAX, NULL,
     "Highest parallelism the autoscaler may set; capped by the vertex's max parallelism (key groups)."},
    {P "scale-down.max-factor", OPT_STRING, "0.6", 0, 0, NULL,
     "Minimum scale factor = 1 - this; at least 0 (1 means no limit)."},
    {P "scale-up.max-factor", OPT_STRING, "100000.0", 0, 0, NULL, "Maximum scale factor = 1 + this; at least 0."},
    {P "catch-up.duration", OPT_DURATION, "30 min", 0, 0, NULL,
     "Target time to drain the backlog after a scaling; 0 disables backlog-based scaling."},
    {P "restart.time", OPT_DURATION, "5 min", 0, 0, NULL, "Assumed restart time, used in the capacity formula."},
    {P "restart.time-tracking.enabled", OPT_BOOL, "false", 0, 0, NULL,
     "Use the observed maximum restart time instead of restart.time."},
    {P "restart.time-tracking.limit", OPT_DURATION, "15 min", 0, 0, NULL, "Cap on the observed restart time."},
    {P "backlog-processing.lag-threshold", OPT_DURATION, "5 min", 0, 0, NULL,
     "Lag, in seconds of input, above which the job counts as processing backlog (bounds become 1.0 and 0.0)."},
    {P "observed-true-processing-rate.lag-threshold", OPT_DURATION, "30 s", 0, 0, NULL,
     "Lag needed before the observed true processing rate is measured at sources."},
    {P "observed-true-processing-rate.switch-threshold", OPT_STRING, "0.15", 0, 0, NULL,
     "Use the observed TPR when the busy-time TPR is more than this fraction higher."},
    {P "observed-true-processing-rate.min-observations", OPT_INT, "2", 0, INT32_MAX, NULL,
     "Minimum finite observed-TPR samples for their average to count."},
    {P "scaling.effectiveness.detection.enabled", OPT_BOOL, "false", 0, 0, NULL,
     "Block further scale-ups after an ineffective one (the IneffectiveScaling event is sent regardless)."},
    {P "scaling.effectiveness.threshold", OPT_STRING, "0.1", 0, 0, NULL,
     "Minimum fraction of the expected TPR gain for a scale-up to count as effective, in [0, 1]."},
    {P "memory.gc-pressure.threshold", OPT_STRING, "1.0", 0, 0, NULL,
     "Pause scaling above this GC time ratio, in [0, 1]."},
    {P "memory.heap-usage.threshold", OPT_STRING, "1.0", 0, 0, NULL,
     "Pause scaling above this average heap usage ratio, in [0, 1]."},
    {P "memory.tuning.enabled", OPT_BOOL, "false", 0, 0, NULL,
     "Apply memory tuning at the next launch, inside spec.resources.memory (docs/autoscaler.md, Memory tuning)."},
    {P "memory.tuning.scale-down-compensation.enabled", OPT_BOOL, "true", 0, 0, NULL,
     "Accepted; not used: one pod has one TaskManager."},
    {P "memory.tuning.overhead", OPT_STRING, "0.2", 0, 0, NULL,
     "The margin memory tuning adds to the heap and metaspace used; in [0, 1]."},
    {P "memory.tuning.maximize-managed-memory", OPT_BOOL, "false", 0, 0, NULL,
     "With RocksDB or ForSt, what the heap does not need goes to managed memory."},
    {P "history.max.count", OPT_INT, "3", 0, INT32_MAX, NULL,
     "Scaling history entries kept per vertex (also the number of tracking records)."},
    {P "history.max.age", OPT_DURATION, "1 d", 0, 0, NULL, "Maximum age of history and tracking entries."},
    {P "metrics.busy-time.aggregator", OPT_ENUM, "MAX", 0, 0, "AVG,MAX,MIN",
     "Aggregate of busyTimeMsPerSecond over subtasks; AVG uses the accumulated busy time."},
    {P "vertex.exclude.ids", OPT_STRING, "", 0, 0, NULL,
     "List (a;b) of vertex hex ids never scaled; the user's own override of such a vertex wins."},
    {P "scaling.event.interval", OPT_DURATION, "30 min", 0, 0, NULL, "Dedupe interval for repeated events."},
    {P "flink.rest-client.timeout", OPT_DURATION, "10 s", 0, 0, NULL, "Timeout of the autoscaler's REST calls."},
    {P "quota.memory", OPT_MEMORY, NULL, 0, 0, NULL, "Total TaskManager memory quota."},
    {P "quota.cpu", OPT_STRING, NULL, 0, 0, NULL, "Total TaskManager CPU quota (cores); at least 0."},
    {P "scaling.key-group.partitions.adjust.mode", OPT_ENUM, "EVENLY_SPREAD", 0, 0,
     "EVENLY_SPREAD,MAXIMIZE_UTILISATION",
     "Deprecated legacy alignment (blocking); used only when parallelism-alignment.mode is not set."},
    {P "scaling.parallelism-alignment.mode", OPT_ENUM, "BALANCED", 0, 0, "BALANCED,EVENLY_SPREAD,OFF",
     "Alignment of the parallelism to key groups or source partitions."},
    {P "observed-scalability.enabled", OPT_BOOL, "false", 0, 0, NULL,
     "Divide the scale factor by the scalability coefficient fitted to the scaling history."},
    {P "observed-scalability.min-observations", OPT_INT, "3", 0, INT32_MAX, NULL,
     "History entries needed to fit the coefficient."},
    {P "observed-scalability.coefficient-min", OPT_STRING, "0.5", 0, 0, NULL,
     "Lower clamp of the coefficient, in [0.01, 1]."},
    {P "metrics.custom-evaluators", OPT_STRING, "", 0, 0, NULL,
     "Custom evaluator plugins (Java classes); flinklet cannot load plugins, so this must stay empty."},
    {P "scaling.custom-executors", OPT_STRING, "", 0, 0, NULL,
     "Custom scaling-executor plugins (Java classes); flinklet cannot load plugins, so this must stay empty."},
    {"autoscaler.standalone.control-loop.interval", OPT_DURATION, "10 s", 0, 0, NULL,
     "Delay between control-loop runs. Deprecated key: scalingInterval."},
    {NULL, 0, NULL, 0, 0, NULL, NULL},
};

#define F(key, kind, member, min, max, dep)                                                                            \
	{                                                                                                              \
		P key, kind, offsetof(struct as_options, member), min, max, dep, NULL                                  \
	}
#define FA(key, kind, member, min, max, dep, alts)                                                                     \
	{                                                                                                              \
		P key, kind, offsetof(struct as_options, member), min, max, dep, alts                                  \
	}

/* The operator declares these options with withDeprecatedKeys(...) and then withFallbackKeys(...); Flink
 * puts fallback keys before deprecated ones, in the order given (flink-core ConfigOption), and
 * Configuration returns the first spelling present. */
static const char *const utilization_target_keys[] = {FALLBACK P "utilization.target", FALLBACK P "target.utilization",
                                                      P "target.utilization", NULL};
static const char *const scale_down_interval_keys[] = {
    FALLBACK P "scale-up.grace-period", FALLBACK P "scale-down.interval", P "scale-up.grace-period", NULL};
static const char *const control_loop_keys[] = {"scalingInterval", NULL};

static const struct field fields[] = {
    F("enabled", K_BOOL, enabled, 0, 0, NULL),
    F("scaling.enabled", K_BOOL, scaling_enabled, 0, 0, NULL),
    F("metrics.window", K_DURATION, metrics_window_ms, 0, 0, NULL),
    F("stabilization.interval", K_DURATION, stabilization_ms, 0, 0, NULL),
    F("excluded.periods", K_PERIODS, excluded_periods, 0, 0, NULL),
    FA("utilization.target", K_DOUBLE, utilization_target, 0, 1, P "target.utilization", utilization_target_keys),
    F("target.utilization.boundary", K_DOUBLE, utilization_boundary, 0, INFINITY, NULL),
    F("utilization.max", K_DOUBLE, utilization_max, 0, 1, NULL),
    F("utilization.min", K_DOUBLE, utilization_min, 0, 1, NULL),
    FA("scale-down.interval", K_DURATION, scale_down_interval_ms, 0, 0, P "scale-up.grace-period",
       scale_down_interval_keys),
    F("vertex.min-parallelism", K_INT, vertex_min_parallelism, 0, 0, NULL),
    F("vertex.max-parallelism", K_INT, vertex_max_parallelism, 0, 0, NULL),
    F("scale-down.max-factor", K_DOUBLE, scale_down_max_factor, 0, INFINITY, NULL),
    F("scale-up.max-factor", K_DOUBLE, scale_up_max_factor, 0, INFINITY, NULL),
    F("catch-up.duration", K_DURATION, catch_up_ms, 0, 0, NULL),
    F("restart.time", K_DURATION, restart_time_ms, 0, 0, NULL),
    F("restart.time-tracking.enabled", K_BOOL, restart_tracking, 0, 0, NULL),
    F("restart.time-tracking.limit", K_DURATION, restart_tracking_limit_ms, 0, 0, NULL),
    F("backlog-processing.lag-threshold", K_DURATION, backlog_lag_threshold_ms, 0, 0, NULL),
    F("observed-true-processing-rate.lag-threshold", K_DURATION, observed_tpr_lag_threshold_ms, 0, 0, NULL),
    F("observed-true-processing-rate.switch-threshold", K_DOUBLE, observed_tpr_switch_threshold, -INFINITY, INFINITY,
      NULL),
    F("observed-true-processing-rate.min-observations", K_INT, observed_tpr_min_observations, 0, 0, NULL),
    F("scaling.effectiveness.detection.enabled", K_BOOL, effectiveness_detection, 0, 0, NULL),
    F("scaling.effectiveness.threshold", K_DOUBLE, effectiveness_threshold, -INFINITY, INFINITY, NULL),
    F("memory.gc-pressure.threshold", K_DOUBLE, gc_pressure_threshold, 0, 1, NULL),
    F("memory.heap-usage.threshold", K_DOUBLE, heap_usage_threshold, 0, 1, NULL),
    F("memory.tuning.enabled", K_BOOL, memory_tuning, 0, 0, NULL),
    F("memory.tuning.scale-down-compensation.enabled", K_BOOL, memory_tuning_compensation, 0, 0, NULL),
    F("memory.tuning.overhead", K_DOUBLE, memory_tuning_overhead, -INFINITY, INFINITY, NULL),
    F("memory.tuning.maximize-managed-memory", K_BOOL, memory_tuning_maximize_managed, 0, 0, NULL),
    F("history.max.count", K_INT, history_max_count, 0, 0, NULL),
    F("history.max.age", K_DURATION, history_max_age_ms, 0, 0, NULL),
    F("metrics.busy-time.aggregator", K_BUSY, busy_agg, 0, 0, NULL),
    F("vertex.exclude.ids", K_LIST, exclude_ids, 0, 0, NULL),
    F("scaling.event.interval", K_DURATION, event_interval_ms, 0, 0, NULL),
    F("flink.rest-client.timeout", K_DURATION, rest_timeout_ms, 0, 0, NULL),
    F("quota.memory", K_MEMORY, quota_memory, 0, 0, NULL),
    F("quota.cpu", K_DOUBLE, quota_cpu, 0, INFINITY, NULL),
    F("scaling.key-group.partitions.adjust.mode", K_LEGACY_ALIGN, alignment, 0, 0, NULL),
    F("scaling.parallelism-alignment.mode", K_ALIGN, alignment, 0, 0, NULL),
    F("observed-scalability.enabled", K_BOOL, observed_scalability, 0, 0, NULL),
    F("observed-scalability.min-observations", K_INT, observed_scalability_min_observations, 0, 0, NULL),
    F("observed-scalability.coefficient-min", K_DOUBLE, observed_scalability_coefficient_min, -INFINITY, INFINITY,
      NULL),
    F("metrics.custom-evaluators", K_PLUGINS, enabled, 0, 0, NULL),
    F("scaling.custom-executors", K_PLUGINS, enabled, 0, 0, NULL),
    {"autoscaler.standalone.control-loop.interval", K_DURATION, offsetof(struct as_options, control_loop_interval_ms),
     0, 0, "scalingInterval", control_loop_keys},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

_Static_assert(NFIELDS == sizeof(autoscaler_options) / sizeof(autoscaler_options[0]) - 1,
               "fields[] must mirror autoscaler_options[]");

/* One entry's value for field f, parsed and checked against its row of the option table (as_optvalue.c). */
static int field_value(const struct field *f, const struct kv *e, const struct kvset *all, struct as_options *o,
                       report_fn report, void *ud)
{
	return as_option_value(f, &autoscaler_options[f - fields], e, all, o, report, ud);
}

/* Keys of plugin parameters: <prefix><name>.<anything> */
static const char *const pattern_prefixes[] = {
    P "scaling.parallelism-alignment.mode.",
    P "metrics.custom-evaluator.",
    P "scaling.custom-executor.",
};

/* ---- a set of key/value entries (the spec's flinkConfiguration, maybe overlaid with plan's config) ---- */

static void kv_set(struct kvset *s, const char *key, const char *value, const struct loc *loc)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].key, key)) {
			free(s->e[i].value);
			s->e[i].value = xstrdup(value);
			s->e[i].loc = loc ? *loc : (struct loc){0};
			return;
		}
	s->e = xrealloc(s->e, (s->n + 1) * sizeof(*s->e));
	s->e[s->n].key = xstrdup(key);
	s->e[s->n].value = xstrdup(value);
	s->e[s->n].loc = loc ? *loc : (struct loc){0};
	s->n++;
}

static void kv_free(struct kvset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].key);
		free(s->e[i].value);
	}
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* The entry that gives field f its value, as Flink's Configuration finds it: the key, then the other
 * spellings in their order (by default the kubernetes.operator. fallback of the key). */
static const struct kv *effective(const struct kvset *s, const struct field *f)
{
	const struct kv *e = as_kv_find(s, f->key);
	if (e)
		return e;
	if (f->alternatives) {
		for (const char *const *k = f->alternatives; *k; k++)
			if ((e = as_kv_find(s, *k)))
				return e;
		return NULL;
	}
	char buf[256];
	snprintf(buf, sizeof(buf), FALLBACK "%s", f->key);
	return as_kv_find(s, buf);
}

/* The field a key names (any of its spellings), or NULL. */
static const struct field *field_of(const char *key)
{
	const char *k = str_has_prefix(key, FALLBACK P) ? key + strlen(FALLBACK) : key;
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].key, k) || (fields[i].deprecated && !strcmp(fields[i].deprecated, k)))
			return &fields[i];
	return NULL;
}

static bool is_autoscaler_key(const char *key)
{
	return str_has_prefix(key, P) || str_has_prefix(key, FALLBACK P) ||
	       !strcmp(key, "autoscaler.standalone.control-loop.interval") || !strcmp(key, "scalingInterval");
}

static bool is_pattern_key(const char *key)
{
	const char *k = str_has_prefix(key, FALLBACK P) ? key + strlen(FALLBACK) : key;
	for (size_t i = 0; i < sizeof(pattern_prefixes) / sizeof(pattern_prefixes[0]); i++)
		if (str_has_prefix(k, pattern_prefixes[i]) && strchr(k + strlen(pattern_prefixes[i]), '.'))
			return true;
	return false;
}

void as_options_defaults(struct as_options *o)
{
	memset(o, 0, sizeof(*o));
	o->enabled = false;
	o->scaling_enabled = true;
	o->metrics_window_ms = 15 * 60 * 1000;
	o->stabilization_ms = 5 * 60 * 1000;
	o->utilization_target = 0.7;
	o->utilization_boundary = 0.3;
	o->utilization_max = NAN;
	o->utilization_min = NAN;
	o->scale_down_interval_ms = 60 * 60 * 1000;
	o->vertex_min_parallelism = 1;
	o->vertex_max_parallelism = 200;
	o->scale_down_max_factor = 0.6;
	o->scale_up_max_factor = 100000.0;
	o->catch_up_ms = 30 * 60 * 1000;
	o->restart_time_ms = 5 * 60 * 1000;
	o->restart_tracking = false;
	o->restart_tracking_limit_ms = 15 * 60 * 1000;
	o->backlog_lag_threshold_ms = 5 * 60 * 1000;
	o->observed_tpr_lag_threshold_ms = 30 * 1000;
	o->observed_tpr_switch_threshold = 0.15;
	o->observed_tpr_min_observations = 2;
	o->effectiveness_detection = false;
	o->effectiveness_threshold = 0.1;
	o->gc_pressure_threshold = 1.0;
	o->heap_usage_threshold = 1.0;
	o->memory_tuning = false;
	o->memory_tuning_compensation = true;
	o->memory_tuning_overhead = 0.2;
	o->memory_tuning_maximize_managed = false;
	o->history_max_count = 3;
	o->history_max_age_ms = 24LL * 60 * 60 * 1000;
	o->busy_agg = AS_BUSY_MAX;
	o->event_interval_ms = 30 * 60 * 1000;
	o->rest_timeout_ms = 10 * 1000;
	o->quota_cpu = NAN;
	o->quota_memory = 0;
	o->alignment = AS_ALIGN_BALANCED;
	o->observed_scalability = false;
	o->observed_scalability_min_observations = 3;
	o->observed_scalability_coefficient_min = 0.5;
	o->control_loop_interval_ms = 10 * 1000;
}

void as_options_free(struct as_options *o)
{
	strv_free(&o->excluded_periods);
	strv_free(&o->exclude_ids);
}

/* ---- the whole check ---- */

static void report_none(void *ud, const struct kv *e, const char *fmt, ...)
{
	(void)ud, (void)e, (void)fmt;
}

/* "did you mean": the key without its prefix against every known key without it */
static void check_unknown(const struct kv *e, report_fn report, void *ud)
{
	bool fallback = str_has_prefix(e->key, FALLBACK P);
	const char *rest = e->key + (fallback ? strlen(FALLBACK P) : strlen(P));
	if (!str_has_prefix(e->key, P) && !fallback)
		rest = e->key;
	const char *names[NFIELDS * 2];
	size_t n = 0;
	for (size_t i = 0; i < NFIELDS; i++) {
		const char *cands[2] = {fields[i].key, fields[i].deprecated};
		for (int c = 0; c < 2; c++)
			if (cands[c] && str_has_prefix(cands[c], P))
				names[n++] = cands[c] + strlen(P);
	}
	const char *best = as_did_you_mean(rest, names, n);
	if (best)
		report(ud, e, "unknown autoscaler option (did you mean \"%s%s\"?)", fallback ? FALLBACK P : P, best);
	else
		report(ud, e, "unknown autoscaler option (see docs/autoscaler.md)");
}

static const struct field *field_by_key(const char *key)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].key, key))
			return &fields[i];
	return NULL;
}

/* Checks every autoscaler entry, then fills o (when non-NULL) from the effective entries, then the
 * cross-field rules. Returns 0 or -EINVAL. */
static int check_and_fill(const struct kvset *s, struct as_options *o, report_fn report, void *ud)
{
	int r = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct kv *e = &s->e[i];
		if (!strcmp(e->key, "pipeline.jobvertex-parallelism-overrides")) {
			/* merged with the autoscaler's overrides when they are applied (reference 0.2) */
			struct as_pmap m;
			if (as_pmap_parse_flink(e->value, &m) < 0) {
				report(ud, e,
				       "must be vertex:parallelism pairs separated by commas, such as "
				       "bc764cd8ddf7a0cff126f51c16239658:4 (got \"%s\")",
				       e->value);
				r = -EINVAL;
			} else {
				as_pmap_free(&m);
			}
			continue;
		}
		if (!is_autoscaler_key(e->key))
			continue;
		const struct field *f = field_of(e->key);
		if (f) {
			if (field_value(f, e, s, NULL, report, ud) < 0)
				r = -EINVAL;
		} else if (!is_pattern_key(e->key)) {
			check_unknown(e, report, ud);
			r = -EINVAL;
		}
	}
	struct as_options tmp;
	as_options_defaults(&tmp);
	for (size_t i = 0; i < NFIELDS; i++) {
		const struct kv *e = effective(s, &fields[i]);
		if (e && fields[i].kind != K_ALIGN && fields[i].kind != K_LEGACY_ALIGN)
			field_value(&fields[i], e, s, &tmp, report_none, NULL);
	}
	/* 3.3: the new alignment key when set, else the deprecated (legacy, blocking) one, else BALANCED */
	const struct field *fa = field_by_key(P "scaling.parallelism-alignment.mode");
	const struct field *fl = field_by_key(P "scaling.key-group.partitions.adjust.mode");
	const struct kv *align = effective(s, fa), *legacy = effective(s, fl);
	if (align)
		field_value(fa, align, s, &tmp, report_none, NULL);
	else if (legacy)
		field_value(fl, legacy, s, &tmp, report_none, NULL);

	/* the operator's validation rules (section 4) */
	const struct kv *e;
	if (!isnan(tmp.utilization_max) && (tmp.utilization_max < tmp.utilization_target || tmp.utilization_max > 1)) {
		e = effective(s, field_by_key(P "utilization.max"));
		if (e)
			report(ud, e, "must be a number between the utilization target %g and 1 (got \"%s\")",
			       tmp.utilization_target, e->value);
		r = -EINVAL;
	}
	if (!isnan(tmp.utilization_min) && (tmp.utilization_min < 0 || tmp.utilization_min > tmp.utilization_target)) {
		e = effective(s, field_by_key(P "utilization.min"));
		if (e)
			report(ud, e, "must be a number between 0 and the utilization target %g (got \"%s\")",
			       tmp.utilization_target, e->value);
		r = -EINVAL;
	}
	if (tmp.observed_scalability &&
	    (tmp.observed_scalability_coefficient_min < 0.01 || tmp.observed_scalability_coefficient_min > 1)) {
		e = effective(s, field_by_key(P "observed-scalability.coefficient-min"));
		if (e)
			report(ud, e,
			       "must be a number between 0.01 and 1 when observed-scalability is enabled (got \"%s\")",
			       e->value);
		r = -EINVAL;
	}
	if (tmp.effectiveness_detection && (tmp.effectiveness_threshold < 0 || tmp.effectiveness_threshold > 1)) {
		e = effective(s, field_by_key(P "scaling.effectiveness.threshold"));
		if (e)
			report(ud, e,
			       "must be a number between 0 and 1 when effectiveness detection is enabled (got \"%s\")",
			       e->value);
		r = -EINVAL;
	}
	if (tmp.memory_tuning && (tmp.memory_tuning_overhead < 0 || tmp.memory_tuning_overhead > 1)) {
		e = effective(s, field_by_key(P "memory.tuning.overhead"));
		if (e)
			report(ud, e, "must be a number between 0 and 1 when memory tuning is enabled (got \"%s\")",
			       e->value);
		r = -EINVAL;
	}
	if (o)
		*o = tmp;
	else
		as_options_free(&tmp);
	return r;
}

/* ---- front ends ---- */

static void kvset_from_spec(const struct spec *s, struct kvset *ret)
{
	for (size_t i = 0; s && i < s->nconf; i++)
		kv_set(ret, s->conf[i].key, s->conf[i].value, &s->conf[i].loc);
}

static void report_diags(void *ud, const struct kv *e, const char *fmt, ...)
{
	struct diags *d = ud;
	char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	diags_add(d, &e->loc, field, "%s", b.buf);
	strbuf_free(&b);
	free(field);
}

int autoscaler_validate(const struct spec *s, struct diags *d)
{
	struct kvset kv = {0};
	kvset_from_spec(s, &kv);
	int r = check_and_fill(&kv, NULL, report_diags, d);
	kv_free(&kv);
	return r;
}

void as_options_from_spec(const struct spec *s, struct as_options *ret)
{
	struct kvset kv = {0};
	kvset_from_spec(s, &kv);
	check_and_fill(&kv, ret, report_none, NULL);
	kv_free(&kv);
}

struct json_report {
	struct strv *errors;
	const char *prefix;
	const struct kvset *kv;
	size_t first_config; /* entries from this index on came from the JSON object */
};

static void report_json(void *ud, const struct kv *e, const char *fmt, ...)
{
	struct json_report *jr = ud;
	struct strbuf b = {0};
	if (e >= jr->kv->e + jr->first_config)
		strbuf_appendf(&b, "%s.%s: ", jr->prefix, e->key);
	else if (e->loc.file && e->loc.line > 0)
		strbuf_appendf(&b, "%s:%d:%d: spec.flinkConfiguration.%s: ", e->loc.file, e->loc.line, e->loc.col,
		               e->key);
	else
		strbuf_appendf(&b, "spec.flinkConfiguration.%s: ", e->key);
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	strv_push_take(jr->errors, strbuf_steal(&b));
}

/* A JSON config value as Flink's string form; NULL (with an error) when it has none. */
static char *json_value_string(const cJSON *v)
{
	if (cJSON_IsString(v))
		return xstrdup(v->valuestring);
	if (cJSON_IsBool(v))
		return xstrdup(cJSON_IsTrue(v) ? "true" : "false");
	if (cJSON_IsNumber(v)) {
		double x = v->valuedouble;
		if (x == floor(x) && fabs(x) < 1e15)
			return xasprintf("%lld", (long long)x);
		char buf[40];
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, x);
			if (strtod(buf, NULL) == x)
				break;
		}
		return xstrdup(buf);
	}
	if (cJSON_IsArray(v)) {
		struct strbuf b = {0};
		for (const cJSON *it = v->child; it; it = it->next) {
			if (!cJSON_IsString(it)) {
				strbuf_free(&b);
				return NULL;
			}
			if (b.len)
				strbuf_append(&b, ";");
			if (strchr(it->valuestring, ';') || strchr(it->valuestring, '"')) {
				strbuf_append(&b, "\"");
				for (const char *p = it->valuestring; *p; p++)
					strbuf_append(&b, *p == '"' ? "\"\"" : (char[]){*p, 0});
				strbuf_append(&b, "\"");
			} else {
				strbuf_append(&b, it->valuestring);
			}
		}
		if (!b.len)
			return xstrdup("");
		return strbuf_steal(&b);
	}
	return NULL;
}

int as_options_from_json(const struct spec *s, const cJSON *config, const char *path_prefix, struct as_options *ret,
                         struct strv *errors)
{
	struct kvset kv = {0};
	kvset_from_spec(s, &kv);
	size_t first_config = kv.n;
	int r = 0;
	if (config && !cJSON_IsObject(config)) {
		strv_push_take(errors, xasprintf("%s: must be an object of Flink option keys to values", path_prefix));
		r = -EINVAL;
	}
	for (const cJSON *c = config && cJSON_IsObject(config) ? config->child : NULL; c; c = c->next) {
		char *v = json_value_string(c);
		if (!v) {
			strv_push_take(errors, xasprintf("%s.%s: must be a string, number, boolean or list of strings",
			                                 path_prefix, c->string));
			r = -EINVAL;
			continue;
		}
		/* an entry given again in config replaces the spec's; keep config entries after first_config */
		const struct kv *old = as_kv_find(&kv, c->string);
		if (old && (size_t)(old - kv.e) < first_config) {
			size_t idx = (size_t)(old - kv.e);
			free(kv.e[idx].key);
			free(kv.e[idx].value);
			memmove(&kv.e[idx], &kv.e[idx + 1], (kv.n - idx - 1) * sizeof(*kv.e));
			kv.n--;
			first_config--;
		}
		kv_set(&kv, c->string, v, NULL);
		free(v);
	}
	struct json_report jr = {errors, path_prefix, &kv, first_config};
	if (check_and_fill(&kv, ret, report_json, &jr) < 0)
		r = -EINVAL;
	kv_free(&kv);
	return r;
}

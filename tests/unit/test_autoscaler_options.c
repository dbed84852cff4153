/* test_autoscaler_options: every job.autoscaler.* option with its default; the kubernetes.operator.
 * fallback prefix and the deprecated keys with their precedence; alignment-mode resolution; Flink list
 * syntax; validation errors as "file:line:col: spec.flinkConfiguration.<key>: must be ... (got \"x\")"
 * with "did you mean" hints for unknown keys; and plan's JSON "config" object. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

#define HEAD                                                                                                           \
	"apiVersion: flink.apache.org/v1beta1\n" /* 1 */                                                               \
	"kind: FlinkMiniCluster\n"               /* 2 */                                                               \
	"metadata:\n"                            /* 3 */                                                               \
	"  name: clicks\n"                       /* 4 */                                                               \
	"spec:\n"                                /* 5 */                                                               \
	"  job:\n"                               /* 6 */                                                               \
	"    jarURI: local:///opt/job.jar\n"     /* 7 */                                                               \
	"  flinkConfiguration:\n"                /* 8; entries from line 9, values in column 5 + len(key) + 2 */

static void parse_spec(const char *conf_lines, struct spec *s)
{
	struct diags d = {0};
	char *text = xasprintf("%s%s", HEAD, conf_lines);
	int r = config_parse("t.yaml", text, strlen(text), s, &d);
	if (r < 0)
		print_error("%s\n", d.msgs.v[0]);
	assert_int_equal(r, 0);
	diags_free(&d);
	free(text);
}

/* The joined validation messages of a flinkConfiguration block. */
static char *validate(const char *conf_lines, int *rc)
{
	struct spec s;
	parse_spec(conf_lines, &s);
	struct diags d = {0};
	int r = autoscaler_validate(&s, &d);
	if (rc)
		*rc = r;
	char *joined = diags_join(&d);
	diags_free(&d);
	spec_free(&s);
	return joined;
}

static void test_defaults(void **state)
{
	(void)state;
	struct as_options o;
	struct spec s;
	parse_spec("    execution.checkpointing.interval: 10s\n", &s);
	as_options_from_spec(&s, &o);
	spec_free(&s);
	assert_false(o.enabled);
	assert_true(o.scaling_enabled);
	assert_int_equal(o.metrics_window_ms, 15 * 60 * 1000);
	assert_int_equal(o.stabilization_ms, 5 * 60 * 1000);
	assert_int_equal(o.excluded_periods.n, 0);
	assert_true(o.utilization_target == 0.7);
	assert_true(o.utilization_boundary == 0.3);
	assert_true(isnan(o.utilization_max) && isnan(o.utilization_min));
	assert_int_equal(o.scale_down_interval_ms, 3600 * 1000);
	assert_int_equal(o.vertex_min_parallelism, 1);
	assert_int_equal(o.vertex_max_parallelism, 200);
	assert_true(o.scale_down_max_factor == 0.6);
	assert_true(o.scale_up_max_factor == 100000.0);
	assert_int_equal(o.catch_up_ms, 30 * 60 * 1000);
	assert_int_equal(o.restart_time_ms, 5 * 60 * 1000);
	assert_false(o.restart_tracking);
	assert_int_equal(o.restart_tracking_limit_ms, 15 * 60 * 1000);
	assert_int_equal(o.backlog_lag_threshold_ms, 5 * 60 * 1000);
	assert_int_equal(o.observed_tpr_lag_threshold_ms, 30 * 1000);
	assert_true(o.observed_tpr_switch_threshold == 0.15);
	assert_int_equal(o.observed_tpr_min_observations, 2);
	assert_false(o.effectiveness_detection);
	assert_true(o.effectiveness_threshold == 0.1);
	assert_true(o.gc_pressure_threshold == 1.0 && o.heap_usage_threshold == 1.0);
	assert_int_equal(o.history_max_count, 3);
	assert_int_equal(o.history_max_age_ms, 24LL * 3600 * 1000);
	assert_int_equal(o.busy_agg, AS_BUSY_MAX);
	assert_int_equal(o.event_interval_ms, 30 * 60 * 1000);
	assert_int_equal(o.rest_timeout_ms, 10 * 1000);
	assert_true(isnan(o.quota_cpu));
	assert_int_equal(o.quota_memory, 0);
	assert_int_equal(o.alignment, AS_ALIGN_BALANCED);
	assert_false(o.observed_scalability);
	assert_int_equal(o.observed_scalability_min_observations, 3);
	assert_true(o.observed_scalability_coefficient_min == 0.5);
	assert_int_equal(o.control_loop_interval_ms, 10 * 1000);
	as_options_free(&o);
}

/* Setting every option explicitly to its documented default validates and changes nothing. */
static void test_table_defaults_parse(void **state)
{
	(void)state;
	struct strbuf b = {0};
	for (const struct option_def *d = autoscaler_options; d->key; d++)
		if (d->def)
			strbuf_appendf(&b, "    %s: \"%s\"\n", d->key, d->def);
	int rc;
	char *msgs = validate(b.buf, &rc);
	assert_string_equal(msgs, "");
	assert_int_equal(rc, 0);
	free(msgs);
	struct spec s;
	parse_spec(b.buf, &s);
	struct as_options o, def;
	as_options_from_spec(&s, &o);
	as_options_defaults(&def);
	assert_int_equal(o.alignment, AS_ALIGN_BALANCED); /* the new key is set: the legacy one is ignored */
	assert_int_equal(o.metrics_window_ms, def.metrics_window_ms);
	assert_true(o.scale_up_max_factor == def.scale_up_max_factor);
	assert_int_equal(o.history_max_age_ms, def.history_max_age_ms);
	as_options_free(&o);
	as_options_free(&def);
	spec_free(&s);
	strbuf_free(&b);
}

static void test_values_fallbacks_and_deprecated(void **state)
{
	(void)state;
	struct spec s;
	struct as_options o;
	parse_spec("    job.autoscaler.enabled: true\n"
	           "    kubernetes.operator.job.autoscaler.scaling.enabled: \"false\"\n"
	           "    job.autoscaler.metrics.window: 2 min\n"
	           "    job.autoscaler.target.utilization: \"0.6\"\n"
	           "    job.autoscaler.scale-up.grace-period: 10 min\n"
	           "    job.autoscaler.vertex.exclude.ids: [\"aa\", \"bb\"]\n"
	           "    job.autoscaler.excluded.periods: \"09:00:00-17:00:00; 0 0 * * * ?\"\n"
	           "    job.autoscaler.metrics.busy-time.aggregator: avg\n"
	           "    job.autoscaler.quota.memory: 4g\n"
	           "    job.autoscaler.quota.cpu: \"2.5\"\n"
	           "    job.autoscaler.utilization.max: \"0.9d\"\n"
	           "    scalingInterval: 20 s\n",
	           &s);
	as_options_from_spec(&s, &o);
	assert_true(o.enabled);
	assert_false(o.scaling_enabled); /* the fallback prefix */
	assert_int_equal(o.metrics_window_ms, 120000);
	assert_true(o.utilization_target == 0.6);           /* the deprecated key */
	assert_int_equal(o.scale_down_interval_ms, 600000); /* the deprecated key */
	assert_int_equal(o.exclude_ids.n, 2);
	assert_string_equal(o.exclude_ids.v[1], "bb");
	assert_int_equal(o.excluded_periods.n, 2);
	assert_string_equal(o.excluded_periods.v[0], "09:00:00-17:00:00");
	assert_string_equal(o.excluded_periods.v[1], "0 0 * * * ?");
	assert_int_equal(o.busy_agg, AS_BUSY_AVG); /* enum values are case-insensitive, as in Flink */
	assert_true(o.quota_memory == 4ULL << 30);
	assert_true(o.quota_cpu == 2.5);
	assert_true(o.utilization_max == 0.9); /* Java's Double.parseDouble takes a d suffix */
	assert_int_equal(o.control_loop_interval_ms, 20000);
	as_options_free(&o);
	spec_free(&s);

	/* the key wins over its fallback spelling and over the deprecated key */
	parse_spec("    kubernetes.operator.job.autoscaler.utilization.target: \"0.5\"\n"
	           "    job.autoscaler.target.utilization: \"0.6\"\n"
	           "    job.autoscaler.utilization.target: \"0.8\"\n",
	           &s);
	as_options_from_spec(&s, &o);
	assert_true(o.utilization_target == 0.8);
	as_options_free(&o);
	spec_free(&s);
	parse_spec("    kubernetes.operator.job.autoscaler.utilization.target: \"0.5\"\n"
	           "    job.autoscaler.target.utilization: \"0.6\"\n",
	           &s);
	as_options_from_spec(&s, &o);
	assert_true(o.utilization_target == 0.5); /* the fallback of the key before the deprecated key */
	as_options_free(&o);
	spec_free(&s);
}

static void test_alignment_resolution(void **state)
{
	(void)state;
	static const struct {
		const char *conf;
		enum as_align want;
	} cases[] = {
	    {"    job.autoscaler.enabled: \"true\"\n", AS_ALIGN_BALANCED},
	    {"    job.autoscaler.scaling.key-group.partitions.adjust.mode: EVENLY_SPREAD\n",
	     AS_ALIGN_LEGACY_EVENLY_SPREAD},
	    {"    job.autoscaler.scaling.key-group.partitions.adjust.mode: MAXIMIZE_UTILISATION\n",
	     AS_ALIGN_LEGACY_MAXIMIZE_UTILISATION},
	    {"    job.autoscaler.scaling.parallelism-alignment.mode: EVENLY_SPREAD\n", AS_ALIGN_EVENLY_SPREAD},
	    {"    job.autoscaler.scaling.parallelism-alignment.mode: \"off\"\n", AS_ALIGN_OFF},
	    /* the new key wins over the deprecated one, in either order */
	    {"    job.autoscaler.scaling.parallelism-alignment.mode: BALANCED\n"
	     "    job.autoscaler.scaling.key-group.partitions.adjust.mode: MAXIMIZE_UTILISATION\n",
	     AS_ALIGN_BALANCED},
	    {"    job.autoscaler.scaling.key-group.partitions.adjust.mode: MAXIMIZE_UTILISATION\n"
	     "    kubernetes.operator.job.autoscaler.scaling.parallelism-alignment.mode: \"OFF\"\n",
	     AS_ALIGN_OFF},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct spec s;
		struct as_options o;
		parse_spec(cases[i].conf, &s);
		as_options_from_spec(&s, &o);
		if (o.alignment != cases[i].want)
			fail_msg("case %zu: alignment %d, want %d", i, o.alignment, cases[i].want);
		as_options_free(&o);
		spec_free(&s);
	}
}

static void test_list_syntax(void **state)
{
	(void)state;
	struct spec s;
	struct as_options o;
	/* quoted items keep their ';' and spaces; a doubled quote inside is one quote; empty items vanish */
	parse_spec("    job.autoscaler.vertex.exclude.ids: \" a ;'b;c'; ;\\\"d\\\"\\\"e\\\"\"\n", &s);
	as_options_from_spec(&s, &o);
	assert_int_equal(o.exclude_ids.n, 3);
	assert_string_equal(o.exclude_ids.v[0], "a");
	assert_string_equal(o.exclude_ids.v[1], "b;c");
	assert_string_equal(o.exclude_ids.v[2], "d\"e");
	as_options_free(&o);
	spec_free(&s);
}

struct bad_case {
	const char *name;
	const char *conf; /* one line 9 */
	const char *diag;
};

static const struct bad_case bad_cases[] = {
    {"target_range", "    job.autoscaler.utilization.target: \"1.5\"\n",
     "t.yaml:9:40: spec.flinkConfiguration.job.autoscaler.utilization.target: must be a number between 0 and 1 "
     "(got \"1.5\")"},
    {"target_not_number", "    job.autoscaler.utilization.target: high\n",
     "t.yaml:9:40: spec.flinkConfiguration.job.autoscaler.utilization.target: must be a number (got \"high\")"},
    {"nan_is_not_a_number", "    job.autoscaler.utilization.target: NaN\n",
     "t.yaml:9:40: spec.flinkConfiguration.job.autoscaler.utilization.target: must be a number (got \"NaN\")"},
    {"unknown_with_hint", "    job.autoscaler.utilization.targt: \"0.5\"\n",
     "t.yaml:9:39: spec.flinkConfiguration.job.autoscaler.utilization.targt: unknown autoscaler option (did you "
     "mean \"job.autoscaler.utilization.target\"?)"},
    {"unknown_fallback_with_hint", "    kubernetes.operator.job.autoscaler.enabeld: \"true\"\n",
     "t.yaml:9:49: spec.flinkConfiguration.kubernetes.operator.job.autoscaler.enabeld: unknown autoscaler option "
     "(did you mean \"kubernetes.operator.job.autoscaler.enabled\"?)"},
    {"unknown_no_hint", "    job.autoscaler.frobnicate: \"1\"\n",
     "t.yaml:9:32: spec.flinkConfiguration.job.autoscaler.frobnicate: unknown autoscaler option (see "
     "docs/autoscaler.md)"},
    {"bool", "    job.autoscaler.scaling.enabled: \"yes\"\n",
     "t.yaml:9:37: spec.flinkConfiguration.job.autoscaler.scaling.enabled: must be true or false (got \"yes\")"},
    {"duration", "    job.autoscaler.metrics.window: 10 parsecs\n",
     "t.yaml:9:36: spec.flinkConfiguration.job.autoscaler.metrics.window: must be a duration such as 30 s, 5 min or "
     "1 h (got \"10 parsecs\")"},
    {"negative_duration", "    job.autoscaler.scale-down.interval: -1 h\n",
     "t.yaml:9:41: spec.flinkConfiguration.job.autoscaler.scale-down.interval: must be a duration such as 30 s, 5 "
     "min or 1 h (got \"-1 h\")"},
    {"int_range", "    job.autoscaler.vertex.max-parallelism: 0\n",
     "t.yaml:9:44: spec.flinkConfiguration.job.autoscaler.vertex.max-parallelism: must be an integer between 1 and "
     "2147483647 (got \"0\")"},
    {"int_syntax", "    job.autoscaler.history.max.count: \"3.5\"\n",
     "t.yaml:9:39: spec.flinkConfiguration.job.autoscaler.history.max.count: must be an integer (got \"3.5\")"},
    {"busy_aggregator", "    job.autoscaler.metrics.busy-time.aggregator: MEAN\n",
     "t.yaml:9:50: spec.flinkConfiguration.job.autoscaler.metrics.busy-time.aggregator: must be one of AVG, MAX, "
     "MIN (got \"MEAN\")"},
    {"alignment_typo", "    job.autoscaler.scaling.parallelism-alignment.mode: BALANCD\n",
     "t.yaml:9:56: spec.flinkConfiguration.job.autoscaler.scaling.parallelism-alignment.mode: must be one of "
     "BALANCED, EVENLY_SPREAD, OFF (got \"BALANCD\"); did you mean \"BALANCED\"?"},
    {"legacy_alignment", "    job.autoscaler.scaling.key-group.partitions.adjust.mode: BALANCED\n",
     "t.yaml:9:62: spec.flinkConfiguration.job.autoscaler.scaling.key-group.partitions.adjust.mode: must be one of "
     "EVENLY_SPREAD, MAXIMIZE_UTILISATION (got \"BALANCED\")"},
    {"custom_evaluators", "    job.autoscaler.metrics.custom-evaluators: mine\n",
     "t.yaml:9:47: spec.flinkConfiguration.job.autoscaler.metrics.custom-evaluators: must be empty: custom plugins "
     "are Java classes, which flinklet cannot load (got \"mine\")"},
    {"gc_threshold", "    job.autoscaler.memory.gc-pressure.threshold: \"1.5\"\n",
     "t.yaml:9:50: spec.flinkConfiguration.job.autoscaler.memory.gc-pressure.threshold: must be a number between 0 "
     "and 1 (got \"1.5\")"},
    {"max_factor", "    job.autoscaler.scale-down.max-factor: \"-0.1\"\n",
     "t.yaml:9:43: spec.flinkConfiguration.job.autoscaler.scale-down.max-factor: must be a number of at least 0 "
     "(got \"-0.1\")"},
    {"quota_memory", "    job.autoscaler.quota.memory: lots\n",
     "t.yaml:9:34: spec.flinkConfiguration.job.autoscaler.quota.memory: must be a memory size such as 512m or 4g "
     "(got \"lots\")"},
    {"control_loop", "    autoscaler.standalone.control-loop.interval: often\n",
     "t.yaml:9:50: spec.flinkConfiguration.autoscaler.standalone.control-loop.interval: must be a duration such as "
     "30 s, 5 min or 1 h (got \"often\")"},
    {"period_hours", "    job.autoscaler.excluded.periods: \"25:00:00-26:00:00\"\n",
     "t.yaml:9:38: spec.flinkConfiguration.job.autoscaler.excluded.periods: must be a list of Quartz cron "
     "expressions or daily ranges HH:mm:ss-HH:mm:ss: \"25:00:00-26:00:00\": neither a daily range "
     "HH:mm:ss-HH:mm:ss nor a valid cron expression: a cron expression has 6 or 7 fields (seconds minutes hours "
     "day-of-month month day-of-week [year]), this one has 1 (got \"25:00:00-26:00:00\")"},
    {"user_overrides", "    pipeline.jobvertex-parallelism-overrides: \"a1:2,b2\"\n",
     "t.yaml:9:47: spec.flinkConfiguration.pipeline.jobvertex-parallelism-overrides: must be vertex:parallelism "
     "pairs separated by commas, such as bc764cd8ddf7a0cff126f51c16239658:4 (got \"a1:2,b2\")"},
    {"period_reversed", "    job.autoscaler.excluded.periods: \"17:00:00-09:00:00\"\n",
     "t.yaml:9:38: spec.flinkConfiguration.job.autoscaler.excluded.periods: must be a list of Quartz cron "
     "expressions or daily ranges HH:mm:ss-HH:mm:ss: \"17:00:00-09:00:00\": a daily range must start before it "
     "ends (to span midnight, give two ranges: 22:00:00-23:59:59;00:00:00-06:00:00) (got \"17:00:00-09:00:00\")"},
};

static void test_bad_option(void **state)
{
	const struct bad_case *c = *state;
	int rc;
	char *msgs = validate(c->conf, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_diag(msgs, c->diag);
	assert_int_equal(diag_count(msgs), 1);
	free(msgs);
}

static void test_cross_field_rules(void **state)
{
	(void)state;
	int rc;
	/* max must lie in [target, 1], min in [0, target]; the message names the effective target */
	char *msgs = validate("    job.autoscaler.utilization.target: \"0.7\"\n"
	                      "    job.autoscaler.utilization.max: \"0.6\"\n"
	                      "    job.autoscaler.utilization.min: \"0.8\"\n",
	                      &rc);
	assert_int_equal(rc, -EINVAL);
	assert_diag(msgs, "t.yaml:10:37: spec.flinkConfiguration.job.autoscaler.utilization.max: must be a number "
	                  "between the utilization target 0.7 and 1 (got \"0.6\")");
	assert_diag(msgs, "t.yaml:11:37: spec.flinkConfiguration.job.autoscaler.utilization.min: must be a number "
	                  "between 0 and the utilization target 0.7 (got \"0.8\")");
	free(msgs);
	/* rules that apply only when their feature is enabled */
	msgs = validate("    job.autoscaler.observed-scalability.coefficient-min: \"0.001\"\n"
	                "    job.autoscaler.scaling.effectiveness.threshold: \"2\"\n"
	                "    job.autoscaler.memory.tuning.overhead: \"1.5\"\n",
	                &rc);
	assert_string_equal(msgs, "");
	assert_int_equal(rc, 0);
	free(msgs);
	msgs = validate("    job.autoscaler.observed-scalability.coefficient-min: \"0.001\"\n"
	                "    job.autoscaler.observed-scalability.enabled: \"true\"\n"
	                "    job.autoscaler.scaling.effectiveness.threshold: \"2\"\n"
	                "    job.autoscaler.scaling.effectiveness.detection.enabled: \"true\"\n"
	                "    job.autoscaler.memory.tuning.overhead: \"1.5\"\n"
	                "    job.autoscaler.memory.tuning.enabled: \"true\"\n",
	                &rc);
	assert_int_equal(rc, -EINVAL);
	assert_int_equal(diag_count(msgs), 3);
	assert_contains(msgs, "coefficient-min: must be a number between 0.01 and 1 when observed-scalability is "
	                      "enabled (got \"0.001\")");
	assert_contains(msgs, "effectiveness.threshold: must be a number between 0 and 1 when effectiveness detection "
	                      "is enabled (got \"2\")");
	assert_contains(msgs, "overhead: must be a number between 0 and 1 when memory tuning is enabled (got \"1.5\")");
	free(msgs);
	/* a custom alignment mode is a Java plugin */
	msgs = validate("    job.autoscaler.scaling.parallelism-alignment.mode: MINE\n"
	                "    job.autoscaler.scaling.parallelism-alignment.mode.MINE.class: com.example.Mine\n",
	                &rc);
	assert_int_equal(rc, -EINVAL);
	assert_diag(msgs, "t.yaml:9:56: spec.flinkConfiguration.job.autoscaler.scaling.parallelism-alignment.mode: "
	                  "names a custom alignment mode: custom modes are Java classes, which flinklet cannot load "
	                  "(got \"MINE\")");
	free(msgs);
}

static void test_accepted_keys(void **state)
{
	(void)state;
	int rc;
	char *msgs =
	    validate("    job.autoscaler.enabled: \"true\"\n"
	             "    job.autoscaler.metrics.custom-evaluator.x.class: com.example.X\n"
	             "    job.autoscaler.scaling.custom-executor.y.priority: \"1\"\n"
	             "    autoscaler.standalone.fetcher.flink-cluster.port: \"8081\"\n"
	             "    job.autoscaler.excluded.periods: [\"* * 9-17 ? * MON-FRI\", \"00:00:00-06:00:00 && 0 * * "
	             "? * SAT,SUN\"]\n"
	             "    taskmanager.numberOfTaskSlots: \"4\"\n",
	             &rc);
	assert_string_equal(msgs, "");
	assert_int_equal(rc, 0);
	free(msgs);
}

static void test_from_json(void **state)
{
	(void)state;
	struct strv errors = {0};
	struct as_options o;
	cJSON *j =
	    cJSON_Parse("{\"job.autoscaler.utilization.target\": 0.5, \"job.autoscaler.enabled\": true,"
	                " \"job.autoscaler.excluded.periods\": [\"0 0 * * * ?\", \"09:00:00-17:00:00\"],"
	                " \"job.autoscaler.vertex.max-parallelism\": 8, \"job.autoscaler.scale-down.interval\": 0,"
	                " \"pipeline.name\": \"x\"}");
	assert_int_equal(as_options_from_json(NULL, j, "config", &o, &errors), 0);
	assert_int_equal(errors.n, 0);
	assert_true(o.utilization_target == 0.5);
	assert_true(o.enabled);
	assert_int_equal(o.excluded_periods.n, 2);
	assert_int_equal(o.vertex_max_parallelism, 8);
	assert_int_equal(o.scale_down_interval_ms, 0); /* a bare number is milliseconds */
	as_options_free(&o);
	cJSON_Delete(j);

	/* config overrides the spec, also the spec's deprecated spelling */
	struct spec s;
	parse_spec("    job.autoscaler.target.utilization: \"0.5\"\n"
	           "    job.autoscaler.metrics.window: 1 min\n",
	           &s);
	j = cJSON_Parse("{\"job.autoscaler.utilization.target\": \"0.9\"}");
	assert_int_equal(as_options_from_json(&s, j, "config", &o, &errors), 0);
	assert_true(o.utilization_target == 0.9);
	assert_int_equal(o.metrics_window_ms, 60000);
	as_options_free(&o);
	cJSON_Delete(j);

	/* errors name the config key, or the spec's file position */
	j = cJSON_Parse("{\"job.autoscaler.utilization.target\": \"x\", \"job.autoscaler.enabled\": {},"
	                " \"job.autoscaler.metrics.windw\": \"1 min\"}");
	assert_int_equal(as_options_from_json(&s, j, "config", &o, &errors), -EINVAL);
	as_options_free(&o);
	cJSON_Delete(j);
	assert_int_equal(errors.n, 3);
	assert_string_equal(errors.v[0], "config.job.autoscaler.enabled: must be a string, number, boolean or list of "
	                                 "strings");
	assert_string_equal(errors.v[1], "config.job.autoscaler.utilization.target: must be a number (got \"x\")");
	assert_string_equal(errors.v[2], "config.job.autoscaler.metrics.windw: unknown autoscaler option (did you mean "
	                                 "\"job.autoscaler.metrics.window\"?)");
	strv_free(&errors);
	spec_free(&s);

	parse_spec("    job.autoscaler.metrics.window: soon\n", &s);
	assert_int_equal(as_options_from_json(&s, NULL, "config", &o, &errors), -EINVAL);
	as_options_free(&o);
	assert_int_equal(errors.n, 1);
	assert_string_equal(errors.v[0],
	                    "t.yaml:9:36: spec.flinkConfiguration.job.autoscaler.metrics.window: must be a "
	                    "duration such as 30 s, 5 min or 1 h (got \"soon\")");
	strv_free(&errors);
	spec_free(&s);

	j = cJSON_Parse("[1]");
	assert_int_equal(as_options_from_json(NULL, j, "config", &o, &errors), -EINVAL);
	assert_string_equal(errors.v[0], "config: must be an object of Flink option keys to values");
	as_options_free(&o);
	cJSON_Delete(j);
	strv_free(&errors);
}

int main(void)
{
	struct CMUnitTest tests[64];
	size_t n = 0;
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_defaults);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_table_defaults_parse);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_values_fallbacks_and_deprecated);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_alignment_resolution);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_list_syntax);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cross_field_rules);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_accepted_keys);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_from_json);
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
		tests[n++] = (struct CMUnitTest){bad_cases[i].name, test_bad_option, NULL, NULL, (void *)&bad_cases[i]};
	return _cmocka_run_group_tests("autoscaler_options", tests, n, NULL, NULL);
}

/* test_flinkconf: what one JVM launch gets from a finalized spec: Flink's config.yaml (checked by
 * loading it back with libyaml), the log4j file, the JVM argv (heap, CPU, module flags, CliFrontend
 * run -t local, restore flags, jar and args), the environment, the REST port, and the Flink version
 * detected from the jars in lib/.
 *
 */
#include "unit.h"

#include <yaml.h>

#include "flinkconf.h"

#define JOB_ID "0123456789abcdef0123456789abcdef"

static const char EXAMPLE[] = "apiVersion: flink.apache.org/v1beta1\n"
                              "kind: FlinkMiniCluster\n"
                              "metadata:\n"
                              "  name: clicks-per-user\n"
                              "spec:\n"
                              "  flinkVersion: v2_2\n"
                              "  flinkConfiguration:\n"
                              "    execution.checkpointing.interval: 10s\n"
                              "    state.backend.type: rocksdb\n"
                              "    job.autoscaler.enabled: \"true\"\n"
                              "    kubernetes.operator.periodic.savepoint.interval: 1h\n"
                              "    flinklet.state.dir: /var/lib/flinklet\n"
                              "    pipeline.name: \"clicks \\\"per\\\" user:\\ttab\\nline\"\n"
                              "  resources:\n"
                              "    memory: 2048m\n"
                              "    cpu: 1\n"
                              "  job:\n"
                              "    jarURI: local:///opt/flink/usrlib/clicks.jar\n"
                              "    entryClass: com.example.Clicks\n"
                              "    args: [\"--window\", \"1m\", \"--out\", \"a b\"]\n"
                              "    parallelism: 2\n";

static const struct launch LAUNCH = {
    .job_id = JOB_ID,
    .conf_dir = "/var/lib/flinklet/conf",
    .tmp_dir = "/var/lib/flinklet/tmp",
    .java = "/usr/lib/jvm/java-17/bin/java",
    .restore_path = NULL,
    .restore_claim = false,
};

static void load(const char *text, struct spec *s)
{
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", text, s, &rc);
	if (rc)
		print_error("%s\n", diags);
	assert_int_equal(rc, 0);
	free(diags);
}

/* The example with lines appended to spec.job (4-space indent) or spec (2-space). */
static void load_with(const char *extra, struct spec *s)
{
	char *text = xasprintf("%s%s", EXAMPLE, extra);
	load(text, s);
	free(text);
}

static ssize_t argv_index(const struct strv *argv, const char *arg)
{
	for (size_t i = 0; i < argv->n; i++)
		if (!strcmp(argv->v[i], arg))
			return (ssize_t)i;
	return -1;
}

static size_t argv_count_prefix(const struct strv *argv, const char *prefix)
{
	size_t n = 0;
	for (size_t i = 0; i < argv->n; i++)
		if (str_has_prefix(argv->v[i], prefix))
			n++;
	return n;
}

static void print_argv(const struct strv *argv)
{
	for (size_t i = 0; i < argv->n; i++)
		print_error("  argv[%zu] = %s\n", i, argv->v[i]);
}

/* Asserts that argv holds `seq` (NULL-terminated) consecutively, starting at `at` (or anywhere, at < 0).
 * Returns the index of the first element. */
static ssize_t assert_sequence_at(const struct strv *argv, ssize_t at, const char *const *seq, const char *file,
                                  int line)
{
	size_t n = 0;
	while (seq[n])
		n++;
	for (size_t start = at < 0 ? 0 : (size_t)at; start + n <= argv->n; start++) {
		size_t k = 0;
		while (k < n && !strcmp(argv->v[start + k], seq[k]))
			k++;
		if (k == n)
			return (ssize_t)start;
		if (at >= 0)
			break;
	}
	print_error("argv does not hold the sequence starting with %s%s\n", seq[0], at >= 0 ? " where expected" : "");
	print_argv(argv);
	_fail(file, line);
	return -1;
}
#define assert_sequence(argv, at, ...)                                                                                 \
	assert_sequence_at((argv), (at), (const char *const[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)

/* Loads config.yaml as Flink 2.x does (standard YAML, duplicate keys refused): a flat mapping of
 * strings. Returns the number of keys; fails on a duplicate or a non-scalar. value_of (optional) gets the
 * value of key `want`. */
static size_t load_flink_yaml(const char *text, const char *want, char **value_of)
{
	yaml_parser_t p;
	yaml_document_t doc;
	assert_true(yaml_parser_initialize(&p));
	yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&p, &doc)) {
		print_error("config.yaml is not valid YAML: %s at line %zu\n%s\n", p.problem, p.problem_mark.line + 1,
		            text);
		yaml_parser_delete(&p);
		fail();
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	assert_non_null(root);
	assert_int_equal(root->type, YAML_MAPPING_NODE);
	size_t n = 0;
	for (yaml_node_pair_t *a = root->data.mapping.pairs.start; a < root->data.mapping.pairs.top; a++, n++) {
		yaml_node_t *k = yaml_document_get_node(&doc, a->key), *v = yaml_document_get_node(&doc, a->value);
		assert_int_equal(k->type, YAML_SCALAR_NODE);
		assert_int_equal(v->type, YAML_SCALAR_NODE);
		for (yaml_node_pair_t *b = root->data.mapping.pairs.start; b < a; b++) {
			yaml_node_t *k2 = yaml_document_get_node(&doc, b->key);
			if (!strcmp((char *)k->data.scalar.value, (char *)k2->data.scalar.value)) {
				print_error("duplicate key %s in config.yaml (Flink refuses it):\n%s\n",
				            k->data.scalar.value, text);
				fail();
			}
		}
		if (want && value_of && !strcmp((char *)k->data.scalar.value, want))
			*value_of = xstrdup((char *)v->data.scalar.value);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	return n;
}

/* ---- config.yaml ---- */

static void test_render_config(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	char *conf = flinkconf_render_config(&s, &LAUNCH);
	assert_contains(conf, "\"$internal.pipeline.job-id\": \"" JOB_ID "\"\n");
	assert_contains(conf, "\"io.tmp.dirs\": \"/var/lib/flinklet/tmp\"\n");
	assert_contains(conf, "\"execution.checkpointing.dir\": \"file:///var/lib/flinklet/checkpoints\"\n");
	assert_contains(conf, "\"execution.checkpointing.savepoint-dir\": \"file:///var/lib/flinklet/savepoints\"\n");
	assert_contains(conf,
	                "\"execution.checkpointing.externalized-checkpoint-retention\": \"RETAIN_ON_CANCELLATION\"\n");
	assert_contains(conf, "\"execution.checkpointing.num-retained\": \"2\"\n");
	assert_contains(conf, "\"execution.target\": \"local\"\n");
	assert_contains(conf, "\"rest.port\": \"8081\"\n");
	/* every listener of the JVM on loopback, no jar upload, no cancel button */
	assert_contains(conf, "\"rest.bind-address\": \"127.0.0.1\"\n");
	assert_contains(conf, "\"jobmanager.bind-host\": \"127.0.0.1\"\n");
	assert_contains(conf, "\"taskmanager.bind-host\": \"127.0.0.1\"\n");
	assert_contains(conf, "\"web.submit.enable\": \"false\"\n");
	assert_contains(conf, "\"web.cancel.enable\": \"false\"\n");
	assert_contains(conf, "\"taskmanager.numberOfTaskSlots\": \"2\"\n");
	assert_contains(conf, "\"parallelism.default\": \"2\"\n");
	/* user keys, unchanged */
	assert_contains(conf, "\"execution.checkpointing.interval\": \"10s\"\n");
	assert_contains(conf, "\"state.backend.type\": \"rocksdb\"\n");
	/* supervisor-only keys stay out */
	assert_not_contains(conf, "flinklet.");
	assert_not_contains(conf, "kubernetes.operator.");
	assert_not_contains(conf, "job.autoscaler.");

	/* it is standard YAML that Flink's strict loader accepts, and values survive quoting */
	char *name = NULL;
	size_t nkeys = load_flink_yaml(conf, "pipeline.name", &name);
	assert_non_null(name);
	assert_string_equal(name, "clicks \"per\" user:\ttab\nline");
	size_t expected = 2; /* job id, io.tmp.dirs */
	for (size_t i = 0; i < s.nconf; i++)
		if (!str_has_prefix(s.conf[i].key, "flinklet.") &&
		    !str_has_prefix(s.conf[i].key, "kubernetes.operator.") &&
		    !str_has_prefix(s.conf[i].key, "job.autoscaler."))
			expected++;
	assert_int_equal(nkeys, expected);
	free(name);
	free(conf);
	spec_free(&s);
}

static void test_render_config_odd_keys(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\n"
	     "spec:\n"
	     "  flinkConfiguration:\n"
	     "    \"key with: colon\": v\n"
	     "    \"#hash\": \"# not a comment\"\n"
	     "    unicode.value: \"gr\xc3\xbc\xc3\x9f \\u263a\"\n"
	     "    pipeline.jars: [a.jar, b.jar]\n"
	     "    yes.no: no\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	char *conf = flinkconf_render_config(&s, &LAUNCH);
	char *v = NULL;
	load_flink_yaml(conf, "key with: colon", &v);
	assert_string_equal(v, "v");
	free(v);
	v = NULL;
	load_flink_yaml(conf, "#hash", &v);
	assert_string_equal(v, "# not a comment");
	free(v);
	v = NULL;
	load_flink_yaml(conf, "unicode.value", &v);
	assert_string_equal(v, "gr\xc3\xbc\xc3\x9f \xe2\x98\xba");
	free(v);
	v = NULL;
	load_flink_yaml(conf, "pipeline.jars", &v);
	assert_string_equal(v, "a.jar;b.jar");
	free(v);
	/* every value is a quoted string: YAML 1.1's "no" stays the string "no" */
	assert_contains(conf, "\"yes.no\": \"no\"\n");
	free(conf);
	spec_free(&s);
}

/* Regression (found by tests/e2e/test_last_state_no_checkpoints.py, fixed): execution.checkpointing.interval: 0, how
 * flinklet's docs turn checkpointing off (flinklet's default is 30 s), went to config.yaml as it is, and Flink refuses
 * any interval under 10 ms: every launch failed. Checkpointing off is the interval left out (Flink's default); any
 * other interval is passed through. */
static void test_checkpointing_off_leaves_the_interval_out(void **state)
{
	(void)state;
	static const char *const off[] = {"0", "0 s", "0ms"};
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		char *doc = xasprintf("metadata: {name: j}\nspec:\n  flinkConfiguration:\n"
		                      "    execution.checkpointing.interval: \"%s\"\n  job: {jarURI: /j.jar}\n",
		                      off[i]);
		struct spec s;
		load(doc, &s);
		char *conf = flinkconf_render_config(&s, &LAUNCH);
		assert_not_contains(conf, "execution.checkpointing.interval");
		load_flink_yaml(conf, NULL, NULL);
		free(conf);
		spec_free(&s);
		free(doc);
	}
	struct spec s;
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n    execution.checkpointing.interval: 15 s\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	char *conf = flinkconf_render_config(&s, &LAUNCH);
	assert_contains(conf, "\"execution.checkpointing.interval\": \"15 s\"\n");
	free(conf);
	spec_free(&s);
}

/* What a launch says of the job (a finished job's spec against a changed one): the configuration's keys in any order
 * and where the JVM listens are no change; an option of the job, an argument or the log configuration are. */
static void test_job_digest(void **state)
{
	(void)state;
	static const char base[] =
	    "# c\n\"a.b\": \"1\"\n\"rest.port\": \"8081\"\n\"c.d\": \"2\"\n--\nlog\n--\njava\n--x\n";
	static const char *const same[] = {
	    "# c\n\"c.d\": \"2\"\n\"a.b\": \"1\"\n\"rest.port\": \"8081\"\n--\nlog\n--\njava\n--x\n",
	    "# c\n\"a.b\": \"1\"\n\"rest.port\": \"9999\"\n\"c.d\": \"2\"\n\"web.refresh-interval\": \"5\"\n"
	    "\"io.tmp.dirs\": \"/t\"\n\"metrics.reporter.x.port\": \"1\"\n--\nlog\n--\njava\n--x\n",
	};
	static const char *const other[] = {
	    "# c\n\"a.b\": \"1\"\n\"rest.port\": \"8081\"\n\"c.d\": \"3\"\n--\nlog\n--\njava\n--x\n",
	    "# c\n\"a.b\": \"1\"\n\"rest.port\": \"8081\"\n\"c.d\": \"2\"\n--\nlog\n--\njava\n--y\n",
	    "# c\n\"a.b\": \"1\"\n\"rest.port\": \"8081\"\n\"c.d\": \"2\"\n--\nlog2\n--\njava\n--x\n",
	    "# c\n\"a.b\": \"1\"\n\"rest.port\": \"8081\"\n--\nlog\n--\njava\n--x\n",
	};
	char want[65], got[65];
	flinkconf_job_digest(base, want);
	assert_int_equal(strlen(want), 64);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		flinkconf_job_digest(same[i], got);
		assert_string_equal(got, want);
	}
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		flinkconf_job_digest(other[i], got);
		assert_string_not_equal(got, want);
	}
}

/* Regression (found by these tests, fixed): a user's io.tmp.dirs is written to config.yaml beside flinklet's own
 * io.tmp.dirs, so the file has the key twice. Flink's YamlParserUtils sets allowDuplicateKeys(false): the JVM cannot
 * load its configuration and every launch fails, though check-config accepted the document. */
static void test_user_io_tmp_dirs_not_duplicated(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n    io.tmp.dirs: /data/tmp\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	char *conf = flinkconf_render_config(&s, &LAUNCH);
	load_flink_yaml(conf, NULL, NULL);
	free(conf);
	spec_free(&s);
}

/* A launch with the autoscaler's overrides in force: they replace the user's own
 * pipeline.jobvertex-parallelism-overrides (the supervisor has merged them), once, so the restored job starts at
 * the scaled parallelism; without them the user's value is passed through unchanged. */
static void test_parallelism_overrides_at_launch(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n"
	     "    pipeline.jobvertex-parallelism-overrides: \"a:7,other:3\"\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	char *conf = flinkconf_render_config(&s, &LAUNCH), *v = NULL;
	load_flink_yaml(conf, "pipeline.jobvertex-parallelism-overrides", &v);
	assert_string_equal(v, "a:7,other:3");
	free(v);
	free(conf);
	struct launch l = LAUNCH;
	l.parallelism_overrides = "a:4,other:3,bc764cd8ddf7a0cff126f51c16239658:2";
	conf = flinkconf_render_config(&s, &l);
	v = NULL;
	load_flink_yaml(conf, "pipeline.jobvertex-parallelism-overrides", &v); /* fails on a duplicate key */
	assert_string_equal(v, "a:4,other:3,bc764cd8ddf7a0cff126f51c16239658:2");
	free(v);
	free(conf);
	spec_free(&s);
	/* a spec without overrides of its own gets the key too */
	load(EXAMPLE, &s);
	conf = flinkconf_render_config(&s, &l);
	assert_contains(conf, "\"pipeline.jobvertex-parallelism-overrides\": \"a:4,other:3,"
	                      "bc764cd8ddf7a0cff126f51c16239658:2\"\n");
	free(conf);
	spec_free(&s);
}

/* flinklet's loopback reporter (flinklet.metrics.flink): a launch given a port gets the reporter's factory and port
 * once; a launch without one (the user's reporters win, or the option is off) gets no reporter key at all, and the
 * user's own metrics.reporter.* keys reach Flink unchanged and are what flinkconf_user_reporter_key names. */
static void test_loopback_reporter(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	assert_null(flinkconf_user_reporter_key(&s));
	struct launch l = LAUNCH;
	l.metrics_port = 41234;
	char *conf = flinkconf_render_config(&s, &l), *v = NULL;
	load_flink_yaml(conf, "metrics.reporter.flinklet.factory.class", &v); /* fails on a duplicate key */
	assert_string_equal(v, FLINKCONF_REPORTER_FACTORY);
	free(v);
	v = NULL;
	load_flink_yaml(conf, "metrics.reporter.flinklet.port", &v);
	assert_string_equal(v, "41234");
	free(v);
	free(conf);
	conf = flinkconf_render_config(&s, &LAUNCH);
	assert_not_contains(conf, "metrics.reporter");
	free(conf);
	spec_free(&s);
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n"
	     "    metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n"
	     "    metrics.reporter.prom.port: \"9250\"\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	assert_string_equal(flinkconf_user_reporter_key(&s), "metrics.reporter.prom.factory.class");
	conf = flinkconf_render_config(&s, &LAUNCH);
	v = NULL;
	load_flink_yaml(conf, "metrics.reporter.prom.port", &v);
	assert_string_equal(v, "9250");
	free(v);
	assert_not_contains(conf, "metrics.reporter.flinklet");
	free(conf);
	spec_free(&s);
	load(
	    "metadata: {name: j}\nspec:\n  flinkConfiguration:\n    metrics.reporters: \"\"\n  job: {jarURI: /j.jar}\n",
	    &s);
	assert_string_equal(flinkconf_user_reporter_key(&s), "metrics.reporters");
	spec_free(&s);
}

/* Flink 2.3+ keeps the adaptive scheduler's rescales only when web.adaptive-scheduler.rescale-history.size > 0
 * (Flink's default 0): flinklet sets it to RESCALE_HISTORY_DEFAULT when the job runs on the adaptive scheduler (the
 * autoscaler's default) and the document does not set it. A value of the document's is written once and read back; no
 * other version, and no other scheduler, gets the key. */
static void test_rescale_history_on_flink_2_3(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s); /* the autoscaler is on: jobmanager.scheduler adaptive */
	struct launch l = LAUNCH;
	char *v = NULL, *conf;
	static const char *const keeping[] = {"2.3.0", "2.3.1", "2.4.0", "3.0.0", NULL};
	for (size_t i = 0; keeping[i]; i++) {
		l.flink_version = keeping[i];
		conf = flinkconf_render_config(&s, &l);
		load_flink_yaml(conf, "web.adaptive-scheduler.rescale-history.size", &v);
		assert_non_null(v);
		assert_string_equal(v, "10");
		free(v);
		v = NULL;
		free(conf);
		assert_int_equal(flinkconf_rescale_history_size(&s, keeping[i]), RESCALE_HISTORY_DEFAULT);
	}
	static const char *const older[] = {"2.2.1", "2.2.2", "2.0.0", "1.20.5", "", NULL};
	for (size_t i = 0; older[i]; i++) {
		l.flink_version = older[i];
		conf = flinkconf_render_config(&s, &l);
		assert_not_contains(conf, "rescale-history");
		free(conf);
		assert_int_equal(flinkconf_rescale_history_size(&s, older[i]), 0);
	}
	l.flink_version = NULL;
	conf = flinkconf_render_config(&s, &l);
	assert_not_contains(conf, "rescale-history");
	free(conf);
	spec_free(&s);

	/* the document's own value, once (Flink's loader refuses a duplicate key) */
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n    jobmanager.scheduler: adaptive\n"
	     "    web.adaptive-scheduler.rescale-history.size: \"4\"\n  job: {jarURI: /j.jar}\n",
	     &s);
	l.flink_version = "2.3.0";
	conf = flinkconf_render_config(&s, &l);
	load_flink_yaml(conf, "web.adaptive-scheduler.rescale-history.size", &v);
	assert_string_equal(v, "4");
	free(v);
	v = NULL;
	free(conf);
	assert_int_equal(flinkconf_rescale_history_size(&s, "2.3.0"), 4);
	spec_free(&s);
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n    jobmanager.scheduler: adaptive\n"
	     "    web.adaptive-scheduler.rescale-history.size: \"0\"\n  job: {jarURI: /j.jar}\n",
	     &s);
	assert_int_equal(flinkconf_rescale_history_size(&s, "2.3.0"), 0);
	spec_free(&s);

	/* the default scheduler keeps no rescale history: nothing set */
	load("metadata: {name: j}\nspec:\n  job: {jarURI: /j.jar}\n", &s);
	conf = flinkconf_render_config(&s, &l);
	assert_not_contains(conf, "rescale-history");
	free(conf);
	assert_int_equal(flinkconf_rescale_history_size(&s, "2.3.0"), 0);
	spec_free(&s);
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {jobmanager.scheduler: Adaptive}\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	assert_int_equal(flinkconf_rescale_history_size(&s, "2.3.0"), RESCALE_HISTORY_DEFAULT);
	spec_free(&s);
}

static void test_render_log4j(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	char *l = flinkconf_render_log4j(&s);
	assert_contains(l, "rootLogger.level = INFO\n");
	assert_contains(l, "appender.console.type = CONSOLE\n");
	free(l);
	spec_free(&s);

	load_with("  logConfiguration:\n    log4j-console.properties: |\n      rootLogger.level = WARN\n", &s);
	l = flinkconf_render_log4j(&s);
	assert_string_equal(l, "rootLogger.level = WARN\n");
	free(l);
	spec_free(&s);
}

/* ---- argv ---- */

static void test_argv(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	struct strv argv = {0};
	flinkconf_build_argv(&s, &LAUNCH, &argv);
	assert_true(argv.n > 10);
	assert_null(argv.v[argv.n]);
	assert_string_equal(argv.v[0], "/usr/lib/jvm/java-17/bin/java");
	assert_true(argv_index(&argv, "-XX:+ExitOnOutOfMemoryError") > 0);
	assert_true(argv_index(&argv, "--add-opens=java.base/java.lang=ALL-UNNAMED") > 0);
	assert_true(argv_index(&argv, "--add-opens=java.base/java.util=ALL-UNNAMED") > 0);
	assert_true(argv_index(&argv, "--add-exports=java.base/sun.net.util=ALL-UNNAMED") > 0);
	assert_true(
	    argv_index(&argv, "-Dlog4j.configurationFile=file:/var/lib/flinklet/conf/log4j-console.properties") > 0);
	assert_true(argv_index(&argv, "-Djava.io.tmpdir=/var/lib/flinklet/tmp") > 0);
	assert_true(argv_index(&argv, "-Dflinklet.job=clicks-per-user") > 0);

	/* JVM options, then the class path and the CLI, then the job */
	ssize_t cp = assert_sequence(&argv, -1, "-cp", "/opt/flink/lib/*", FLINK_CLI_CLASS, "run", "-t", "local");
	for (ssize_t i = 1; i < cp; i++)
		assert_true(argv.v[i][0] == '-');
	ssize_t rest = cp + 6;
	assert_sequence(&argv, rest, "-c", "com.example.Clicks", "/opt/flink/usrlib/clicks.jar", "--window", "1m",
	                "--out", "a b");
	assert_int_equal(argv.n, (size_t)rest + 7);
	assert_int_equal(argv_index(&argv, "-s"), -1);
	assert_int_equal(argv_index(&argv, "-n"), -1);
	assert_int_equal(argv_count_prefix(&argv, "-Xmx"), 1);
	strv_free(&argv);
	spec_free(&s);
}

/* With flinklet's launcher in lib/, it is the main class, with the CLI's arguments unchanged around it. */
static void test_argv_launcher(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	struct launch l = LAUNCH;
	l.launcher = true;
	l.restore_path = "file:///var/lib/flinklet/savepoints/savepoint-1";
	struct strv argv = {0};
	flinkconf_build_argv(&s, &l, &argv);
	ssize_t cp =
	    assert_sequence(&argv, -1, "-cp", "/opt/flink/lib/*", FLINKCONF_LAUNCHER_CLASS, "run", "-t", "local", "-s",
	                    "file:///var/lib/flinklet/savepoints/savepoint-1", "-cm", "no_claim");
	assert_sequence(&argv, cp + 10, "-c", "com.example.Clicks", "/opt/flink/usrlib/clicks.jar", "--window", "1m");
	assert_int_equal(argv_index(&argv, FLINK_CLI_CLASS), -1);
	strv_free(&argv);
	/* a savepoint with the changelog state backend: legacy mode, the one besides claim it takes */
	l.restore_legacy = true;
	flinkconf_build_argv(&s, &l, &argv);
	assert_sequence(&argv, -1, "-s", "file:///var/lib/flinklet/savepoints/savepoint-1", "-cm", "legacy");
	strv_free(&argv);
	spec_free(&s);
}

/* The fingerprint of a launch (flinkconf_fingerprint): the configuration, the log configuration and the command
 * line; up to the main class, two launches of different jobs are the same JVM (sup_keepjvm.c: a job-only upgrade). */
static void test_fingerprint(void **state)
{
	(void)state;
	struct spec a, b;
	load(EXAMPLE, &a);
	char *other = xstrdup(EXAMPLE);
	char *at = strstr(other, "\"--window\", \"1m\"");
	assert_non_null(at);
	memcpy(at, "\"--window\", \"5m\"", strlen("\"--window\", \"5m\""));
	load(other, &b);
	free(other);
	struct launch l = LAUNCH;
	l.launcher = true;
	char *fa = flinkconf_fingerprint(&a, &a, &l, NULL), *fb = flinkconf_fingerprint(&b, &b, &l, NULL);
	assert_string_not_equal(fa, fb); /* another job */
	assert_non_null(strstr(fa, "\n1m\n"));
	free(fa), free(fb);
	fa = flinkconf_fingerprint(&a, &a, &l, FLINKCONF_LAUNCHER_CLASS);
	fb = flinkconf_fingerprint(&b, &b, &l, FLINKCONF_LAUNCHER_CLASS);
	assert_string_equal(fa, fb); /* the same JVM */
	assert_null(strstr(fa, "com.example.Clicks"));
	assert_non_null(strstr(fa, FLINKCONF_LAUNCHER_CLASS "\n"));
	assert_non_null(strstr(fa, "state.backend.type"));
	/* the configuration is conf's: one without a key renders without it */
	struct spec less = a;
	less.nconf = 0;
	char *fl = flinkconf_fingerprint(&a, &less, &l, FLINKCONF_LAUNCHER_CLASS);
	assert_null(strstr(fl, "state.backend.type"));
	assert_non_null(strstr(fl, "-Xmx"));
	free(fa), free(fb), free(fl);
	spec_free(&a);
	spec_free(&b);
}

static void test_argv_without_entry_class_and_args(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\nspec:\n  job: {jarURI: \"file:///jobs/j.jar\"}\n", &s);
	struct strv argv = {0};
	flinkconf_build_argv(&s, &LAUNCH, &argv);
	assert_int_equal(argv_index(&argv, "-c"), -1);
	assert_string_equal(argv.v[argv.n - 1], "/jobs/j.jar");
	assert_string_equal(argv.v[argv.n - 2], "local");
	/* no memory: no heap flags; no cpu: no processor count */
	assert_int_equal(argv_count_prefix(&argv, "-Xmx"), 0);
	assert_int_equal(argv_count_prefix(&argv, "-Xms"), 0);
	assert_int_equal(argv_count_prefix(&argv, "-XX:ActiveProcessorCount"), 0);
	strv_free(&argv);
	spec_free(&s);
}

/* Class-data sharing: the archive when there is one, recording when not, neither when off; always among the
 * JVM options, before the user's own (which may override them) and before -cp. */
static void test_argv_class_data_sharing(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {flinklet.jvm.options: \"-Xss2m\"}\n"
	     "  job: {jarURI: \"file:///jobs/j.jar\"}\n",
	     &s);
	struct launch l = LAUNCH;
	struct strv argv = {0};
	/* absent (or off): nothing about CDS */
	flinkconf_build_argv(&s, &l, &argv);
	assert_int_equal(argv_count_prefix(&argv, "-XX:SharedArchiveFile"), 0);
	assert_int_equal(argv_index(&argv, "-XX:+RecordDynamicDumpInfo"), -1);
	strv_free(&argv);
	/* present: started from it */
	l.cds_archive = "/var/lib/flinklet/cds/flink-2.2.1-0123456789abcdef-55304192.jsa";
	flinkconf_build_argv(&s, &l, &argv);
	ssize_t at =
	    argv_index(&argv, "-XX:SharedArchiveFile=/var/lib/flinklet/cds/flink-2.2.1-0123456789abcdef-55304192.jsa");
	assert_true(at > 0);
	assert_true(at < argv_index(&argv, "-Xss2m"));
	assert_true(at < argv_index(&argv, "-cp"));
	assert_int_equal(argv_index(&argv, "-XX:+RecordDynamicDumpInfo"), -1);
	strv_free(&argv);
	/* absent or stale (the caller found none to use): recording for a dump, quietly */
	l.cds_archive = NULL;
	l.cds_record = true;
	flinkconf_build_argv(&s, &l, &argv);
	at = argv_index(&argv, "-XX:+RecordDynamicDumpInfo");
	assert_true(at > 0 && at < argv_index(&argv, "-Xss2m"));
	assert_true(argv_index(&argv, "-Xlog:cds=off") > 0);
	assert_int_equal(argv_count_prefix(&argv, "-XX:SharedArchiveFile"), 0);
	strv_free(&argv);
	spec_free(&s);
}

static void test_argv_restore(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	struct launch l = LAUNCH;
	l.restore_path = "/var/lib/flinklet/checkpoints/" JOB_ID "/chk-5";
	l.restore_claim = true;
	struct strv argv = {0};
	flinkconf_build_argv(&s, &l, &argv);
	ssize_t at = assert_sequence(&argv, -1, FLINK_CLI_CLASS, "run", "-t", "local");
	assert_sequence(&argv, at + 4, "-s", l.restore_path, "-cm", "claim", "-c", "com.example.Clicks");
	assert_int_equal(argv_index(&argv, "-n"), -1);
	strv_free(&argv);
	spec_free(&s);

	/* a savepoint: no_claim, and -n with allowNonRestoredState */
	load_with("    allowNonRestoredState: true\n", &s);
	l.restore_path = "/var/lib/flinklet/savepoints/savepoint-0123ab-cdef";
	l.restore_claim = false;
	flinkconf_build_argv(&s, &l, &argv);
	at = assert_sequence(&argv, -1, FLINK_CLI_CLASS, "run", "-t", "local");
	assert_sequence(&argv, at + 4, "-s", l.restore_path, "-cm", "no_claim", "-n", "-c", "com.example.Clicks",
	                "/opt/flink/usrlib/clicks.jar");
	strv_free(&argv);

	/* allowNonRestoredState without a restore path adds nothing */
	l.restore_path = NULL;
	flinkconf_build_argv(&s, &l, &argv);
	assert_int_equal(argv_index(&argv, "-n"), -1);
	assert_int_equal(argv_index(&argv, "-s"), -1);
	strv_free(&argv);
	spec_free(&s);
}

/* The JVM's side of the memory budget (membudget; its arithmetic is test_membudget's): every limit is on the
 * command line, once, before the class path. */
static void test_heap(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s); /* 2048m, rocksdb, cpu 1, 2 slots */
	struct membudget mb;
	assert_int_equal(membudget_compute(&s, &mb, NULL), 0);
	assert_int_equal(mb.heap, 796ULL << 20);
	struct strv argv = {0};
	flinkconf_build_argv(&s, &LAUNCH, &argv);
	static const char *const want[] = {"-Xmx796m",
	                                   "-Xms796m",
	                                   "-XX:MaxMetaspaceSize=256m",
	                                   "-XX:ReservedCodeCacheSize=128m",
	                                   "-XX:MaxDirectMemorySize=192m",
	                                   "-XX:+UseSerialGC",
	                                   NULL};
	ssize_t cp = argv_index(&argv, "-cp");
	for (size_t i = 0; want[i]; i++) {
		ssize_t at = argv_index(&argv, want[i]);
		if (at < 0 || at > cp)
			fail_msg("%s missing before -cp", want[i]);
	}
	static const char *const once[] = {
	    "-Xmx", "-Xms", "-XX:MaxMetaspaceSize=", "-XX:ReservedCodeCacheSize=", "-XX:MaxDirectMemorySize=", NULL};
	for (size_t i = 0; once[i]; i++)
		assert_int_equal(argv_count_prefix(&argv, once[i]), 1);
	assert_int_equal(argv_index(&argv, "-XX:TieredStopAtLevel=1"), -1); /* C2 above 512m */
	strv_free(&argv);
	spec_free(&s);

	/* 256m, hashmap: C1 only, the serial collector, small limits */
	load("metadata: {name: j}\nspec:\n  resources: {memory: 256m}\n  job: {jarURI: /j.jar, parallelism: 2}\n", &s);
	flinkconf_build_argv(&s, &LAUNCH, &argv);
	assert_true(argv_index(&argv, "-Xmx62m") > 0);
	assert_true(argv_index(&argv, "-Xms62m") > 0);
	assert_true(argv_index(&argv, "-XX:MaxMetaspaceSize=80m") > 0);
	assert_true(argv_index(&argv, "-XX:ReservedCodeCacheSize=24m") > 0);
	assert_true(argv_index(&argv, "-XX:MaxDirectMemorySize=24m") > 0);
	assert_true(argv_index(&argv, "-XX:+UseSerialGC") > 0);
	assert_true(argv_index(&argv, "-XX:TieredStopAtLevel=1") > 0);
	strv_free(&argv);
	spec_free(&s);

	/* 4g on more than one CPU: G1 (the JVM's default), C2 */
	load("metadata: {name: j}\nspec:\n  resources: {memory: 4g, cpu: 2}\n  job: {jarURI: /j.jar}\n", &s);
	flinkconf_build_argv(&s, &LAUNCH, &argv);
	assert_int_equal(argv_index(&argv, "-XX:+UseSerialGC"), -1);
	assert_int_equal(argv_index(&argv, "-XX:TieredStopAtLevel=1"), -1);
	assert_int_equal(argv_count_prefix(&argv, "-Xmx"), 1);
	strv_free(&argv);
	spec_free(&s);
}

/* A launch with memory tuning's settings: the JVM's limits and Flink's managed memory are the tuned split; the
 * user's own managed memory wins; settings that do not fit the budget give the plain split. */
static void test_memory_tuning_at_launch(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {state.backend.type: rocksdb}\n"
	     "  resources: {memory: 1g}\n  job: {jarURI: /j.jar, parallelism: 2}\n",
	     &s);
	struct membudget plain, tuned;
	assert_int_equal(membudget_compute(&s, &plain, NULL), 0);
	struct membudget_tuning t = {.metaspace = 86ULL << 20, .managed = 500ULL << 20, .heap_floor = 120ULL << 20};
	assert_int_equal(membudget_compute_tuned(&s, &t, &tuned), 0);
	assert_true(tuned.heap < plain.heap);
	struct launch l = LAUNCH;
	l.memory = &t;
	struct strv argv = {0};
	flinkconf_build_argv(&s, &l, &argv);
	char *xmx = xasprintf("-Xmx%llum", (unsigned long long)(tuned.heap >> 20));
	assert_true(argv_index(&argv, xmx) > 0);
	assert_true(argv_index(&argv, "-XX:MaxMetaspaceSize=86m") > 0);
	assert_int_equal(argv_count_prefix(&argv, "-Xmx"), 1);
	free(xmx);
	strv_free(&argv);
	char *conf = flinkconf_render_config(&s, &l);
	assert_non_null(strstr(conf, "\"taskmanager.memory.managed.size\": \"500m\""));
	assert_null(strstr(strstr(conf, "taskmanager.memory.managed.size") + 1, "taskmanager.memory.managed.size"));
	free(conf);
	/* untuned: the plain split */
	conf = flinkconf_render_config(&s, &LAUNCH);
	char *want =
	    xasprintf("\"taskmanager.memory.managed.size\": \"%llum\"", (unsigned long long)(plain.managed >> 20));
	assert_non_null(strstr(conf, want));
	free(want);
	free(conf);
	/* settings that do not fit: the plain split */
	struct membudget_tuning huge = {.metaspace = 86ULL << 20, .managed = 900ULL << 20, .heap_floor = 120ULL << 20};
	l.memory = &huge;
	flinkconf_build_argv(&s, &l, &argv);
	xmx = xasprintf("-Xmx%llum", (unsigned long long)(plain.heap >> 20));
	assert_true(argv_index(&argv, xmx) > 0);
	free(xmx);
	strv_free(&argv);
	spec_free(&s);

	/* the user's own managed memory and metaspace win */
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {state.backend.type: rocksdb, "
	     "taskmanager.memory.managed.size: 300m, taskmanager.memory.jvm-metaspace.size: 100m}\n"
	     "  resources: {memory: 1g}\n  job: {jarURI: /j.jar, parallelism: 2}\n",
	     &s);
	l.memory = &t;
	conf = flinkconf_render_config(&s, &l);
	assert_non_null(strstr(conf, "\"taskmanager.memory.managed.size\": \"300m\""));
	assert_null(strstr(conf, "500m"));
	free(conf);
	flinkconf_build_argv(&s, &l, &argv);
	assert_true(argv_index(&argv, "-XX:MaxMetaspaceSize=100m") > 0);
	strv_free(&argv);
	spec_free(&s);
}

static void test_cpu(void **state)
{
	(void)state;
	static const struct {
		const char *cpu;
		const char *flag;
	} cases[] = {
	    {"1.5", "-XX:ActiveProcessorCount=2"},  {"1", "-XX:ActiveProcessorCount=1"},
	    {"500m", "-XX:ActiveProcessorCount=1"}, {"0.1", "-XX:ActiveProcessorCount=1"},
	    {"4", "-XX:ActiveProcessorCount=4"},    {"2500m", "-XX:ActiveProcessorCount=3"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *doc = xasprintf(
		    "metadata: {name: j}\nspec:\n  resources: {cpu: \"%s\"}\n  job: {jarURI: /j.jar}\n", cases[i].cpu);
		struct spec s;
		load(doc, &s);
		struct strv argv = {0};
		flinkconf_build_argv(&s, &LAUNCH, &argv);
		if (argv_index(&argv, cases[i].flag) < 0) {
			print_error("cpu %s: expected %s\n", cases[i].cpu, cases[i].flag);
			print_argv(&argv);
			fail();
		}
		assert_int_equal(argv_count_prefix(&argv, "-XX:ActiveProcessorCount="), 1);
		strv_free(&argv);
		spec_free(&s);
		free(doc);
	}
}

static void test_jvm_options_and_homes(void **state)
{
	(void)state;
	struct spec s;
	load("metadata: {name: j}\nspec:\n  flinkConfiguration:\n"
	     "    flinklet.jvm.options: \"  -Xss2m\\t-Dfoo=bar  \"\n"
	     "    flinklet.flink.home: /srv/flink/\n"
	     "  job: {jarURI: /j.jar}\n",
	     &s);
	struct strv argv = {0};
	flinkconf_build_argv(&s, &LAUNCH, &argv);
	ssize_t a = argv_index(&argv, "-Xss2m"), b = argv_index(&argv, "-Dfoo=bar"), cp = argv_index(&argv, "-cp");
	assert_true(a > 0 && b == a + 1 && cp == b + 1);
	assert_string_equal(argv.v[cp + 1], "/srv/flink/lib/*");
	assert_int_equal(argv_count_prefix(&argv, ""), argv.n); /* no NULL holes */
	strv_free(&argv);
	spec_free(&s);
}

/* ---- environment ---- */

static void test_envp(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	char *const env_in[] = {
	    "PATH=/usr/bin:/bin",
	    "FLINK_CONF_DIR=/etc/flink-old",
	    "HOME=/root",
	    "FLINK_HOME=/old/flink",
	    "FLINKLET_CONFIG=/etc/flinklet/flinklet.yaml",
	    "NOTIFY_SOCKET=/run/systemd/notify",
	    "FLINK_CONF_DIRX=kept",
	    "FLINK_OPT_DIR=/old/flink/opt",
	    NULL,
	};
	struct strv envp = {0};
	flinkconf_build_envp(&s, &LAUNCH, env_in, &envp);
	assert_null(envp.v[envp.n]);
	assert_true(argv_index(&envp, "PATH=/usr/bin:/bin") >= 0);
	assert_true(argv_index(&envp, "HOME=/root") >= 0);
	assert_true(argv_index(&envp, "FLINK_CONF_DIR=/var/lib/flinklet/conf") >= 0);
	assert_int_equal(argv_count_prefix(&envp, "FLINK_CONF_DIR="), 1);
	assert_int_equal(argv_index(&envp, "FLINK_CONF_DIR=/etc/flink-old"), -1);
	assert_true(argv_index(&envp, "FLINK_HOME=/opt/flink") >= 0);
	assert_int_equal(argv_count_prefix(&envp, "FLINK_HOME="), 1);
	assert_true(argv_index(&envp, "FLINK_LIB_DIR=/opt/flink/lib") >= 0);
	assert_true(argv_index(&envp, "FLINK_PLUGINS_DIR=/opt/flink/plugins") >= 0);
	/* Flink's CLI finds opt/flink-python*.jar through FLINK_OPT_DIR (a PythonDriver entry class) */
	assert_true(argv_index(&envp, "FLINK_OPT_DIR=/opt/flink/opt") >= 0);
	assert_int_equal(argv_count_prefix(&envp, "FLINK_OPT_DIR="), 1);
	assert_true(argv_index(&envp, "FLINK_BIN_DIR=/opt/flink/bin") >= 0);
	assert_int_equal(argv_count_prefix(&envp, "FLINKLET_"), 0);
	assert_int_equal(argv_count_prefix(&envp, "NOTIFY_SOCKET="), 0);
	assert_true(argv_index(&envp, "FLINK_CONF_DIRX=kept") >= 0);
	assert_true(argv_index(&envp, "MALLOC_ARENA_MAX=2") >= 0); /* glibc's arenas would inflate the JVM's RSS */
	strv_free(&envp);

	/* an empty environment still gets the Flink variables */
	flinkconf_build_envp(&s, &LAUNCH, NULL, &envp);
	assert_int_equal(envp.n, 7);
	assert_string_equal(envp.v[0], "MALLOC_ARENA_MAX=2");
	assert_string_equal(envp.v[1], "FLINK_CONF_DIR=/var/lib/flinklet/conf");
	strv_free(&envp);

	/* the environment's own MALLOC_ARENA_MAX wins */
	char *const env_arena[] = {"MALLOC_ARENA_MAX=4", NULL};
	flinkconf_build_envp(&s, &LAUNCH, env_arena, &envp);
	assert_int_equal(argv_count_prefix(&envp, "MALLOC_ARENA_MAX="), 1);
	assert_true(argv_index(&envp, "MALLOC_ARENA_MAX=4") >= 0);
	strv_free(&envp);
	spec_free(&s);
}

/* A Python job (the operator's PythonDriver form) runs its UDFs' workers as processes, as on a cluster: the script's
 * own process, where PyFlink would serve them under `run -t local`, ends once the job is submitted. */
static void test_envp_python_job(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	struct strv envp = {0};
	flinkconf_build_envp(&s, &LAUNCH, NULL, &envp);
	assert_int_equal(argv_count_prefix(&envp, "_python_worker_execution_mode="), 0); /* a Java job: nothing */
	strv_free(&envp);

	free(s.job.entry_class);
	s.job.entry_class = xstrdup("org.apache.flink.client.python.PythonDriver");
	assert_true(flink_python_entry(s.job.entry_class));
	flinkconf_build_envp(&s, &LAUNCH, NULL, &envp);
	assert_true(argv_index(&envp, "_python_worker_execution_mode=process") >= 0);
	assert_true(argv_index(&envp, "FLINK_OPT_DIR=/opt/flink/opt") >= 0);
	strv_free(&envp);

	/* the environment's own mode wins (loopback: the UDFs in the script's process, for a script that waits) */
	char *const env_mode[] = {"_python_worker_execution_mode=loopback", NULL};
	flinkconf_build_envp(&s, &LAUNCH, env_mode, &envp);
	assert_int_equal(argv_count_prefix(&envp, "_python_worker_execution_mode="), 1);
	assert_true(argv_index(&envp, "_python_worker_execution_mode=loopback") >= 0);
	strv_free(&envp);
	assert_false(flink_python_entry("com.example.Clicks"));
	assert_false(flink_python_entry(NULL));
	spec_free(&s);
}

static void test_rest_port(void **state)
{
	(void)state;
	struct spec s;
	load(EXAMPLE, &s);
	assert_int_equal(flinkconf_rest_port(&s), 8081);
	spec_free(&s);
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {rest.port: 9090}\n  job: {jarURI: /j.jar}\n", &s);
	assert_int_equal(flinkconf_rest_port(&s), 9090);
	spec_free(&s);
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {rest.bind-port: 9100}\n  job: {jarURI: /j.jar}\n", &s);
	assert_int_equal(flinkconf_rest_port(&s), 9100);
	spec_free(&s);
	load("metadata: {name: j}\nspec:\n  flinkConfiguration: {web.port: 9200}\n  job: {jarURI: /j.jar}\n", &s);
	assert_int_equal(flinkconf_rest_port(&s), 9200);
	spec_free(&s);
}

static void test_rest_url(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"", "http://127.0.0.1:8081"}, /* flinklet's default: 127.0.0.1 */
	    {"rest.bind-address: 0.0.0.0", "http://127.0.0.1:8081"},
	    {"rest.bind-address: \"::\"", "http://127.0.0.1:8081"},
	    {"rest.bind-address: 127.0.0.2", "http://127.0.0.2:8081"},
	    {"rest.bind-address: \"::1\"", "http://[::1]:8081"},
	    {"web.address: 10.0.0.5", "http://10.0.0.5:8081"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *doc = xasprintf(
		    "metadata: {name: j}\nspec:\n  flinkConfiguration: {%s}\n  job: {jarURI: /j.jar}\n", cases[i][0]);
		struct spec s;
		load(doc, &s);
		char *url = flinkconf_rest_url(&s);
		if (strcmp(url, cases[i][1]))
			fail_msg("{%s}: got %s, want %s", cases[i][0], url, cases[i][1]);
		free(url);
		free(doc);
		spec_free(&s);
	}
}

/* ---- the Flink version from the jars ---- */

static void touch(const char *dir, const char *name)
{
	free(write_text(dir, name, ""));
}

static void test_detect_version(void **state)
{
	(void)state;
	char *v = NULL;

	char *dir = make_tempdir();
	touch(dir, "flink-clients-2.2.1.jar");
	touch(dir, "flink-json-2.2.1.jar");
	touch(dir, "log4j-api-2.24.3.jar");
	assert_int_equal(flink_detect_version(dir, &v), 0);
	assert_string_equal(v, "2.2.1");
	assert_string_equal(flink_version_label(v), "v2_2");
	free(v);
	remove_tree(dir);

	dir = make_tempdir();
	touch(dir, "flink-dist-1.20.5.jar");
	touch(dir, "flink-table-api-java-uber-1.20.5.jar");
	assert_int_equal(flink_detect_version(dir, &v), 0);
	assert_string_equal(v, "1.20.5");
	assert_string_equal(flink_version_label(v), "v1_20");
	free(v);

	/* flink-dist wins over flink-clients, whatever the directory order */
	touch(dir, "flink-clients-9.9.9.jar");
	touch(dir, "flink-runtime-8.8.8.jar");
	assert_int_equal(flink_detect_version(dir, &v), 0);
	assert_string_equal(v, "1.20.5");
	free(v);
	remove_tree(dir);

	/* flink-runtime alone; names that only look like Flink jars are ignored */
	dir = make_tempdir();
	touch(dir, "flink-runtime-2.0.0.jar");
	touch(dir, "flink-clients-.jar");
	touch(dir, "flink-dist-latest.jar");
	touch(dir, "flink-clients-2.1.0.jar.sha1");
	assert_int_equal(flink_detect_version(dir, &v), 0);
	assert_string_equal(v, "2.0.0");
	free(v);
	remove_tree(dir);

	/* no Flink jars at all */
	dir = make_tempdir();
	v = NULL;
	assert_int_equal(flink_detect_version(dir, &v), -ENOENT);
	assert_null(v);
	touch(dir, "guava-33.jar");
	assert_int_equal(flink_detect_version(dir, &v), -ENOENT);
	char *missing = xasprintf("%s/nope", dir);
	assert_int_equal(flink_detect_version(missing, &v), -ENOENT);
	free(missing);
	remove_tree(dir);
}

static void test_version_label(void **state)
{
	(void)state;
	assert_string_equal(flink_version_label("1.20.0"), "v1_20");
	assert_string_equal(flink_version_label("1.20.3"), "v1_20");
	assert_string_equal(flink_version_label("2.0.0"), "v2_0");
	assert_string_equal(flink_version_label("2.1.1"), "v2_1");
	assert_string_equal(flink_version_label("2.2.1"), "v2_2");
	assert_string_equal(flink_version_label("2.3.0-SNAPSHOT"), "v2_3");
	assert_null(flink_version_label("1.19.1"));
	assert_null(flink_version_label("2.10.0"));
	assert_null(flink_version_label("3.0.0"));
	assert_null(flink_version_label("1.2.0"));
	assert_null(flink_version_label(""));
}

int main(void)
{
	unit_clean_env();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_render_config),
	    cmocka_unit_test(test_render_config_odd_keys),
	    cmocka_unit_test(test_checkpointing_off_leaves_the_interval_out),
	    cmocka_unit_test(test_job_digest),
	    cmocka_unit_test(test_user_io_tmp_dirs_not_duplicated),
	    cmocka_unit_test(test_parallelism_overrides_at_launch),
	    cmocka_unit_test(test_render_log4j),
	    cmocka_unit_test(test_argv),
	    cmocka_unit_test(test_argv_launcher),
	    cmocka_unit_test(test_fingerprint),
	    cmocka_unit_test(test_argv_without_entry_class_and_args),
	    cmocka_unit_test(test_argv_restore),
	    cmocka_unit_test(test_argv_class_data_sharing),
	    cmocka_unit_test(test_heap),
	    cmocka_unit_test(test_memory_tuning_at_launch),
	    cmocka_unit_test(test_cpu),
	    cmocka_unit_test(test_jvm_options_and_homes),
	    cmocka_unit_test(test_envp),
	    cmocka_unit_test(test_envp_python_job),
	    cmocka_unit_test(test_rest_port),
	    cmocka_unit_test(test_rest_url),
	    cmocka_unit_test(test_detect_version),
	    cmocka_unit_test(test_version_label),

	    cmocka_unit_test(test_rescale_history_on_flink_2_3),
	    cmocka_unit_test(test_loopback_reporter),
	};
	return cmocka_run_group_tests_name("flinkconf", tests, NULL, NULL);
}

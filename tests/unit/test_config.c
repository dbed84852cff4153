/* test_config: the configuration document (contract section 2): good documents land in struct spec with
 * every default filled in; bad documents are rejected with "file:line:col: field: problem" messages
 * (a table of cases, each its own cmocka test named after the case); config_load's -D, quick mode and
 * --state-dir; spec_to_json / spec_to_yaml.
 *
 */
#include "unit.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "store.h"

/* The contract's example, with a local jarURI (https:// jars are not supported by this version). */
static const char FULL_EXAMPLE[] = "apiVersion: flink.apache.org/v1beta1\n"                                    /*  1 */
                                   "kind: FlinkMiniCluster\n"                                                  /*  2 */
                                   "metadata:\n"                                                               /*  3 */
                                   "  name: clicks-per-user            # required: DNS-1123 label\n"           /*  4 */
                                   "spec:\n"                                                                   /*  5 */
                                   "  flinkVersion: v2_2               # optional\n"                           /*  6 */
                                   "  image: example/clicks:1.4        # accepted, not used in-process\n"      /*  7 */
                                   "  flinkConfiguration:              # any Flink option\n"                   /*  8 */
                                   "    execution.checkpointing.interval: 10s\n"                               /*  9 */
                                   "    state.backend.type: rocksdb\n"                                         /* 10 */
                                   "    job.autoscaler.enabled: \"true\"\n"                                    /* 11 */
                                   "    kubernetes.operator.periodic.savepoint.interval: 1h\n"                 /* 12 */
                                   "    flinklet.state.dir: /var/lib/flinklet\n"                               /* 13 */
                                   "  resources:                       # the JVM's share of the pod\n"         /* 14 */
                                   "    memory: 2048m\n"                                                       /* 15 */
                                   "    cpu: 1\n"                                                              /* 16 */
                                   "  job:\n"                                                                  /* 17 */
                                   "    jarURI: local:///opt/flink/usrlib/clicks.jar\n"                        /* 18 */
                                   "    entryClass: com.example.Clicks\n"                                      /* 19 */
                                   "    args: [\"--window\", \"1m\"]\n"                                        /* 20 */
                                   "    parallelism: 2\n"                                                      /* 21 */
                                   "    upgradeMode: savepoint         # stateless | savepoint | last-state\n" /* 22 */
                                   "    state: running                 # running | suspended\n"                /* 23 */
                                   "    savepointTriggerNonce: 0       # change it to take a savepoint now\n"  /* 24 */
                                   "    checkpointTriggerNonce: 0      # change it to take a checkpoint now\n" /* 25 */
                                   "    initialSavepointPath: null     # used on the very first start only\n"  /* 26 */
                                   "    allowNonRestoredState: false\n";                                       /* 27 */

/* A minimal valid document; the bad cases append lines 8.. inside spec.job (4 spaces) or spec (2). */
#define HEAD_NOJAR                                                                                                     \
	"apiVersion: flink.apache.org/v1beta1\n"                             /* 1 */                                   \
	"kind: FlinkMiniCluster\n"                                           /* 2 */                                   \
	"metadata:\n"                                                        /* 3 */                                   \
	"  name: clicks\n"                                                   /* 4 */                                   \
	"spec:\n"                                                            /* 5 */                                   \
	"  job:\n"                                                           /* 6 */
#define HEAD HEAD_NOJAR "    jarURI: local:///opt/flink/usrlib/clicks.jar\n" /* 7 */
#define CONF HEAD "  flinkConfiguration:\n"                                  /* 8; entries from line 9 */
#define HOSTPORT_ERR                                                                                                   \
	"must be host:port such as 0.0.0.0:8091 or [::]:8091, the host an IPv4 address, localhost or an IPv6 "         \
	"address in brackets"

static const struct conf_entry *find_entry(const struct spec *s, const char *key)
{
	for (size_t i = 0; i < s->nconf; i++)
		if (!strcmp(s->conf[i].key, key))
			return &s->conf[i];
	return NULL;
}

/* Parses and finalizes a document that must be valid; the caller frees the spec. */
static void load_good(const char *text, struct spec *s)
{
	int rc = -1;
	char *diags = parse_and_finalize("t.yaml", text, s, &rc);
	if (rc != 0 || *diags)
		print_error("unexpected diagnostics (rc %d):\n%s\n", rc, diags);
	assert_int_equal(rc, 0);
	assert_string_equal(diags, "");
	free(diags);
}

static double elapsed_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ------------------------------------------------------------------------------------------------ */
/* good documents                                                                                   */

static void test_full_example(void **state)
{
	(void)state;
	struct spec s;
	load_good(FULL_EXAMPLE, &s);

	assert_string_equal(s.file, "t.yaml");
	assert_string_equal(s.api_version, "flink.apache.org/v1beta1");
	assert_string_equal(s.kind, "FlinkMiniCluster");
	assert_string_equal(s.name, "clicks-per-user");
	assert_string_equal(s.flink_version, "v2_2");
	assert_string_equal(s.image, "example/clicks:1.4");

	assert_string_equal(spec_get(&s, "execution.checkpointing.interval"), "10s");
	assert_int_equal(spec_duration(&s, "execution.checkpointing.interval"), 10 * USEC_PER_SEC);
	assert_string_equal(spec_get(&s, "state.backend.type"), "rocksdb");
	assert_string_equal(spec_get(&s, "job.autoscaler.enabled"), "true");
	assert_true(spec_bool(&s, "job.autoscaler.enabled"));
	assert_string_equal(spec_get(&s, "kubernetes.operator.periodic.savepoint.interval"), "1h");
	assert_string_equal(spec_get(&s, "flinklet.state.dir"), "/var/lib/flinklet");

	/* each entry keeps where it came from */
	const struct conf_entry *e = find_entry(&s, "execution.checkpointing.interval");
	assert_non_null(e);
	assert_int_equal(e->origin, ORIGIN_FILE);
	assert_string_equal(e->loc.file, "t.yaml");
	assert_int_equal(e->loc.line, 9);
	assert_int_equal(e->loc.col, 39);
	e = find_entry(&s, "rest.port");
	assert_non_null(e);
	assert_int_equal(e->origin, ORIGIN_DEFAULT);

	assert_int_equal(s.memory, 2147483648ULL);
	assert_true(s.cpu == 1.0);

	assert_string_equal(s.job.jar_uri, "local:///opt/flink/usrlib/clicks.jar");
	assert_string_equal(s.job.entry_class, "com.example.Clicks");
	assert_int_equal(s.job.args.n, 2);
	assert_string_equal(s.job.args.v[0], "--window");
	assert_string_equal(s.job.args.v[1], "1m");
	assert_null(s.job.args.v[2]);
	assert_int_equal(s.job.parallelism, 2);
	assert_int_equal(s.job.upgrade_mode, UPGRADE_SAVEPOINT);
	assert_int_equal(s.job.state, JOB_STATE_RUNNING);
	assert_int_equal(s.job.savepoint_trigger_nonce, 0);
	assert_int_equal(s.job.checkpoint_trigger_nonce, 0);
	assert_null(s.job.initial_savepoint_path);
	assert_false(s.job.allow_non_restored_state);
	assert_null(s.log4j_console);

	assert_string_equal(spec_get(&s, "taskmanager.numberOfTaskSlots"), "2");
	assert_string_equal(spec_get(&s, "parallelism.default"), "2");
	spec_free(&s);
}

static void test_every_job_field_set(void **state)
{
	(void)state;
	struct spec s;
	load_good("apiVersion: flink.apache.org/v1beta1\n"
	          "kind: FlinkDeployment\n"
	          "metadata: {name: j1, namespace: ns, labels: {a: b}}\n"
	          "spec:\n"
	          "  flinkVersion: v1_20\n"
	          "  logConfiguration:\n"
	          "    log4j-console.properties: |\n"
	          "      rootLogger.level = DEBUG\n"
	          "  job:\n"
	          "    jarURI: file:///jobs/j.jar\n"
	          "    upgradeMode: last-state\n"
	          "    state: suspended\n"
	          "    savepointTriggerNonce: 7\n"
	          "    checkpointTriggerNonce: -3\n"
	          "    initialSavepointPath: file:///sp/savepoint-1\n"
	          "    allowNonRestoredState: true\n"
	          "    savepointRedeployNonce: 1\n"
	          "status:\n"
	          "  lifecycleState: STABLE\n",
	          &s);
	assert_string_equal(s.kind, "FlinkDeployment");
	assert_string_equal(s.flink_version, "v1_20");
	assert_string_equal(s.log4j_console, "rootLogger.level = DEBUG\n");
	assert_int_equal(s.job.upgrade_mode, UPGRADE_LAST_STATE);
	assert_int_equal(s.job.state, JOB_STATE_SUSPENDED);
	assert_int_equal(s.job.savepoint_trigger_nonce, 7);
	assert_int_equal(s.job.checkpoint_trigger_nonce, -3);
	assert_string_equal(s.job.initial_savepoint_path, "file:///sp/savepoint-1");
	assert_true(s.job.allow_non_restored_state);
	assert_null(s.job.entry_class);
	assert_int_equal(s.job.args.n, 0);
	assert_int_equal(s.job.parallelism, 1);
	spec_free(&s);

	load_good(HEAD "    upgradeMode: stateless\n", &s);
	assert_int_equal(s.job.upgrade_mode, UPGRADE_STATELESS);
	spec_free(&s);
}

static void test_defaults(void **state)
{
	(void)state;
	struct spec s;
	load_good(HEAD, &s);
	assert_string_equal(s.api_version, "flink.apache.org/v1beta1");
	assert_null(s.flink_version);
	assert_null(s.image);
	assert_int_equal(s.memory, 0);
	assert_true(s.cpu == 0.0);
	assert_int_equal(s.job.upgrade_mode, UPGRADE_SAVEPOINT);
	assert_int_equal(s.job.state, JOB_STATE_RUNNING);
	assert_int_equal(s.job.parallelism, 1);
	assert_string_equal(spec_get(&s, "flinklet.state.dir"), "/var/lib/flinklet");
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), "file:///var/lib/flinklet/checkpoints");
	assert_string_equal(spec_get(&s, "execution.checkpointing.savepoint-dir"),
	                    "file:///var/lib/flinklet/savepoints");
	assert_string_equal(spec_get(&s, "execution.checkpointing.externalized-checkpoint-retention"),
	                    "RETAIN_ON_CANCELLATION");
	assert_string_equal(spec_get(&s, "execution.checkpointing.num-retained"), "2");
	assert_int_equal(spec_int(&s, "execution.checkpointing.num-retained"), 2);
	assert_string_equal(spec_get(&s, "execution.checkpointing.interval"), "30 s");
	assert_string_equal(spec_get(&s, "execution.target"), "local");
	assert_string_equal(spec_get(&s, "rest.port"), "8081");
	assert_string_equal(spec_get(&s, "taskmanager.numberOfTaskSlots"), "1");
	assert_string_equal(spec_get(&s, "parallelism.default"), "1");
	/* flinklet's own options */
	assert_string_equal(spec_get(&s, "flinklet.http.address"), "0.0.0.0:8091");
	assert_string_equal(spec_get(&s, "flinklet.flink.home"), "/opt/flink");
	assert_string_equal(spec_get(&s, "flinklet.java.bin"), "java");
	assert_string_equal(spec_get(&s, "flinklet.log.level"), "info");
	assert_int_equal(spec_duration(&s, "flinklet.shutdown.timeout"), 25 * USEC_PER_SEC);
	assert_int_equal(spec_duration(&s, "flinklet.startup.timeout"), 180 * USEC_PER_SEC);
	assert_int_equal(spec_duration(&s, "kubernetes.operator.flink.client.timeout"), 10 * USEC_PER_SEC);
	assert_int_equal(spec_duration(&s, "flinklet.rest.poll-interval"), 2 * USEC_PER_SEC);
	assert_int_equal(spec_duration(&s, "flinklet.rest.startup-poll-interval"), 200 * USEC_PER_MSEC);
	/* not set by flinklet (Flink's default): at 200 ms the autoscaler lost its busy-time metric */
	assert_null(find_entry(&s, "web.refresh-interval"));
	/* every option with a default in the table has it (paths are absolute already) */
	for (const struct option_def *o = flinklet_options; o->key; o++)
		if (o->def)
			assert_string_equal(spec_get(&s, o->key), o->def);
	const struct conf_entry *e = find_entry(&s, "execution.checkpointing.dir");
	assert_non_null(e);
	assert_int_equal(e->origin, ORIGIN_DEFAULT);
	spec_free(&s);
}

static void test_defaults_follow_parallelism(void **state)
{
	(void)state;
	struct spec s;
	load_good(HEAD "    parallelism: 3\n", &s);
	assert_int_equal(s.job.parallelism, 3);
	assert_string_equal(spec_get(&s, "taskmanager.numberOfTaskSlots"), "3");
	assert_string_equal(spec_get(&s, "parallelism.default"), "3");
	spec_free(&s);

	/* no spec.job.parallelism: parallelism.default is the job's parallelism */
	load_good(CONF "    parallelism.default: 4\n", &s);
	assert_int_equal(s.job.parallelism, 4);
	assert_string_equal(spec_get(&s, "taskmanager.numberOfTaskSlots"), "4");
	spec_free(&s);

	/* more slots than the parallelism is fine */
	load_good(CONF "    taskmanager.numberOfTaskSlots: 8\n", &s);
	assert_string_equal(spec_get(&s, "taskmanager.numberOfTaskSlots"), "8");
	spec_free(&s);

	/* FLINK_HOME and JAVA_HOME feed the defaults */
	setenv("FLINK_HOME", "/usr/share/flink", 1);
	setenv("JAVA_HOME", "/usr/lib/jvm/java-17/", 1);
	load_good(HEAD, &s);
	assert_string_equal(spec_get(&s, "flinklet.flink.home"), "/usr/share/flink");
	assert_string_equal(spec_get(&s, "flinklet.java.bin"), "/usr/lib/jvm/java-17/bin/java");
	spec_free(&s);
	unit_clean_env();
}

static void test_nested_configuration_flattened(void **state)
{
	(void)state;
	struct spec s;
	load_good(CONF "    execution:\n"
	               "      checkpointing:\n"
	               "        interval: 5 s\n"
	               "        mode: EXACTLY_ONCE\n"
	               "    state.backend:\n"
	               "      type: hashmap\n"
	               "    pipeline.jars: [a.jar, b.jar]\n"
	               "    taskmanager: {memory: {process: {size: 1g}}}\n",
	          &s);
	assert_string_equal(spec_get(&s, "execution.checkpointing.interval"), "5 s");
	assert_string_equal(spec_get(&s, "execution.checkpointing.mode"), "EXACTLY_ONCE");
	assert_string_equal(spec_get(&s, "state.backend.type"), "hashmap");
	assert_string_equal(spec_get(&s, "pipeline.jars"), "a.jar;b.jar");
	assert_string_equal(spec_get(&s, "taskmanager.memory.process.size"), "1g");
	assert_null(find_entry(&s, "execution"));
	assert_null(find_entry(&s, "execution.checkpointing"));
	const struct conf_entry *e = find_entry(&s, "execution.checkpointing.interval");
	assert_non_null(e);
	assert_int_equal(e->loc.line, 11);
	assert_int_equal(e->loc.col, 19);
	spec_free(&s);
}

static void test_deprecated_keys(void **state)
{
	(void)state;
	struct spec s;
	load_good(CONF "    state.checkpoints.dir: file:///data/ckpt\n"
	               "    state.savepoints.dir: /data/sp\n"
	               "    state.checkpoints.num-retained: 5\n"
	               "    state.backend: rocksdb\n"
	               "    web.port: 9000\n"
	               "    execution.savepoint.ignore-unclaimed-state: true\n",
	          &s);
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), "file:///data/ckpt");
	assert_string_equal(spec_get(&s, "execution.checkpointing.savepoint-dir"), "/data/sp");
	assert_int_equal(spec_int(&s, "execution.checkpointing.num-retained"), 5);
	assert_string_equal(spec_get(&s, "state.backend.type"), "rocksdb");
	assert_string_equal(spec_get(&s, "rest.port"), "9000");
	assert_true(spec_bool(&s, "execution.state-recovery.ignore-unclaimed-state"));
	/* the deprecated spelling counts as set: no default under the new name beside it */
	assert_null(find_entry(&s, "execution.checkpointing.dir"));
	assert_null(find_entry(&s, "execution.checkpointing.savepoint-dir"));
	assert_null(find_entry(&s, "execution.checkpointing.num-retained"));
	assert_null(find_entry(&s, "rest.port"));
	spec_free(&s);

	/* the user's web UI refresh interval is kept, under either spelling */
	load_good(CONF "    jobmanager.web.refresh-interval: 5000\n", &s);
	assert_string_equal(spec_get(&s, "web.refresh-interval"), "5000");
	assert_null(find_entry(&s, "web.refresh-interval"));
	spec_free(&s);
	load_good(CONF "    web.refresh-interval: 1 s\n", &s);
	assert_string_equal(spec_get(&s, "web.refresh-interval"), "1 s");
	spec_free(&s);

	load_good(CONF "    state.backend.fs.checkpointdir: /old/ckpt\n"
	               "    savepoints.state.backend.fs.dir: /old/sp\n",
	          &s);
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), "/old/ckpt");
	assert_string_equal(spec_get(&s, "execution.checkpointing.savepoint-dir"), "/old/sp");
	spec_free(&s);

	/* the new spelling wins over the old one */
	load_good(CONF "    state.checkpoints.dir: /old\n"
	               "    execution.checkpointing.dir: /new\n",
	          &s);
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), "/new");
	spec_free(&s);
}

static void test_kubernetes_quantities(void **state)
{
	(void)state;
	struct spec s;
	load_good(HEAD "  resources:\n    memory: 2Gi\n    cpu: 500m\n", &s);
	assert_int_equal(s.memory, 2ULL << 30);
	assert_true(s.cpu == 0.5);
	spec_free(&s);

	load_good(HEAD "  resources:\n    memory: 512Mi\n    cpu: \"1.5\"\n    ephemeralStorage: 1Gi\n", &s);
	assert_int_equal(s.memory, 512ULL << 20);
	assert_true(s.cpu == 1.5);
	spec_free(&s);

	load_good(HEAD "  resources: {memory: 1 g, cpu: 0.25}\n", &s);
	assert_int_equal(s.memory, 1ULL << 30);
	assert_true(s.cpu == 0.25);
	spec_free(&s);
}

/* ------------------------------------------------------------------------------------------------ */
/* config_load: files, -D overrides, quick mode, --state-dir                                        */

static void test_load_file_with_overrides(void **state)
{
	(void)state;
	unit_clean_env();
	char *dir = make_tempdir();
	char *path = write_text(dir, "flinklet.yaml", FULL_EXAMPLE);
	struct config_args a = {0};
	a.file = path;
	strv_push(&a.defines, "execution.checkpointing.interval=1 min");
	strv_push(&a.defines, "pipeline.name=a=b");
	strv_push(&a.defines, "flinklet.state.dir=/srv/state");
	a.entry_class = "com.example.Other";
	a.parallelism = "3";
	a.have_args = true;
	strv_push(&a.args, "--x");

	struct spec s;
	struct diags d = {0};
	int rc = config_load(&a, &s, &d);
	char *joined = diags_join(&d);
	assert_string_equal(joined, "");
	assert_int_equal(rc, 0);
	assert_string_equal(s.file, path);
	assert_string_equal(s.name, "clicks-per-user");
	assert_string_equal(spec_get(&s, "execution.checkpointing.interval"), "1 min");
	const struct conf_entry *e = find_entry(&s, "execution.checkpointing.interval");
	assert_int_equal(e->origin, ORIGIN_OVERRIDE);
	assert_string_equal(spec_get(&s, "pipeline.name"), "a=b");
	assert_string_equal(spec_get(&s, "flinklet.state.dir"), "/srv/state");
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), "file:///srv/state/checkpoints");
	assert_string_equal(spec_get(&s, "execution.checkpointing.savepoint-dir"), "file:///srv/state/savepoints");
	assert_string_equal(s.job.entry_class, "com.example.Other");
	assert_int_equal(s.job.parallelism, 3);
	assert_string_equal(spec_get(&s, "taskmanager.numberOfTaskSlots"), "3");
	assert_int_equal(s.job.args.n, 1);
	assert_string_equal(s.job.args.v[0], "--x");
	assert_string_equal(spec_get(&s, "state.backend.type"), "rocksdb"); /* from the file */

	free(joined);
	spec_free(&s);
	diags_free(&d);
	strv_free(&a.defines);
	strv_free(&a.args);
	free(path);
	remove_tree(dir);
}

static void test_load_from_env(void **state)
{
	(void)state;
	unit_clean_env();
	char *dir = make_tempdir();
	char *path = write_text(dir, "env.yaml", HEAD);
	setenv("FLINKLET_CONFIG", path, 1);
	struct config_args a = {0};
	struct spec s;
	struct diags d = {0};
	assert_int_equal(config_load(&a, &s, &d), 0);
	assert_int_equal(d.msgs.n, 0);
	assert_string_equal(s.file, path);
	assert_string_equal(s.name, "clicks");
	spec_free(&s);
	diags_free(&d);
	unit_clean_env();
	free(path);
	remove_tree(dir);
}

static void test_load_bad_define(void **state)
{
	(void)state;
	unit_clean_env();
	char *dir = make_tempdir();
	char *path = write_text(dir, "f.yaml", HEAD);
	struct config_args a = {0};
	a.file = path;
	strv_push(&a.defines, "execution.checkpointing.interval");
	strv_push(&a.defines, "=value");
	struct spec s;
	struct diags d = {0};
	assert_int_equal(config_load(&a, &s, &d), -EINVAL);
	char *joined = diags_join(&d);
	assert_diag(joined, "command line: -D: expected key=value (got \"execution.checkpointing.interval\")");
	assert_diag(joined, "command line: -D: expected key=value (got \"=value\")");
	assert_int_equal(diag_count(joined), 2);
	free(joined);
	spec_free(&s);
	diags_free(&d);
	strv_free(&a.defines);

	/* a well-formed -D whose value is invalid names -D and the field */
	strv_push(&a.defines, "execution.checkpointing.num-retained=1");
	strv_push(&a.defines, "flinklet.http.address=nope");
	assert_int_equal(config_load(&a, &s, &d), -EINVAL);
	joined = diags_join(&d);
	assert_diag(joined,
	            "-D: spec.flinkConfiguration.execution.checkpointing.num-retained: must be between 2 and 1000 "
	            "(got 1)");
	assert_diag(joined, "-D: spec.flinkConfiguration.flinklet.http.address: " HOSTPORT_ERR " (got \"nope\")");
	free(joined);
	spec_free(&s);
	diags_free(&d);
	strv_free(&a.defines);

	/* --parallelism out of range */
	a.parallelism = "0";
	assert_int_equal(config_load(&a, &s, &d), -EINVAL);
	joined = diags_join(&d);
	assert_diag(joined, "command line: --parallelism: must be an integer between 1 and 32768 (got \"0\")");
	free(joined);
	spec_free(&s);
	diags_free(&d);
	free(path);
	remove_tree(dir);
}

static void test_quick_mode(void **state)
{
	(void)state;
	unit_clean_env();
	struct config_args a = {0};
	a.jar = "/x/Clicks_Job-1.4.jar";
	a.entry_class = "com.example.Clicks";
	a.have_args = true;
	strv_push(&a.args, "--in");
	strv_push(&a.args, "a b");
	struct spec s;
	struct diags d = {0};
	int rc = config_load(&a, &s, &d);
	char *joined = diags_join(&d);
	assert_string_equal(joined, "");
	assert_int_equal(rc, 0);
	assert_string_equal(s.file, "<command line>");
	assert_string_equal(s.name, "clicks-job-1-4");
	assert_string_equal(s.job.jar_uri, "/x/Clicks_Job-1.4.jar");
	assert_string_equal(s.job.entry_class, "com.example.Clicks");
	assert_int_equal(s.job.args.n, 2);
	assert_string_equal(s.job.args.v[1], "a b");
	assert_int_equal(s.job.parallelism, 1);
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), "file:///var/lib/flinklet/checkpoints");
	free(joined);
	spec_free(&s);
	diags_free(&d);
	strv_free(&a.args);

	/* odd jar names still give a DNS-1123 label */
	static const char *const jars[][2] = {
	    {"/jobs/__My.Job__.jar", "my-job"},
	    {"/jobs/___.jar", "flinklet-job"},
	    {"file:///jobs/WordCount.jar", "wordcount"},
	    {"/j/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbb.jar",
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	};
	for (size_t i = 0; i < sizeof(jars) / sizeof(jars[0]); i++) {
		struct config_args q = {0};
		q.jar = jars[i][0];
		assert_int_equal(config_load(&q, &s, &d), 0);
		assert_string_equal(s.name, jars[i][1]);
		assert_true(strlen(s.name) <= 63);
		spec_free(&s);
	}

	/* a relative jar is made absolute against the working directory */
	struct config_args r = {0};
	r.jar = "build/job.jar";
	assert_int_equal(config_load(&r, &s, &d), 0);
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	char *want = xasprintf("%s/build/job.jar", cwd);
	assert_string_equal(s.job.jar_uri, want);
	assert_string_equal(s.name, "job");
	free(want);
	spec_free(&s);
	diags_free(&d);
}

static void test_state_dir_override(void **state)
{
	(void)state;
	unit_clean_env();
	char *dir = make_tempdir();
	char *path = write_text(dir, "f.yaml", CONF "    flinklet.state.dir: /from/file\n");
	struct config_args a = {0};
	a.file = path;
	a.state_dir = dir;
	a.flink_home = "/srv/flink";
	struct spec s;
	struct diags d = {0};
	assert_int_equal(config_load(&a, &s, &d), 0);
	assert_string_equal(spec_get(&s, "flinklet.state.dir"), dir);
	assert_int_equal(find_entry(&s, "flinklet.state.dir")->origin, ORIGIN_OVERRIDE);
	char *ckpt = xasprintf("file://%s/checkpoints", dir);
	char *sp = xasprintf("file://%s/savepoints", dir);
	assert_string_equal(spec_get(&s, "execution.checkpointing.dir"), ckpt);
	assert_string_equal(spec_get(&s, "execution.checkpointing.savepoint-dir"), sp);
	assert_string_equal(spec_get(&s, "flinklet.flink.home"), "/srv/flink");
	free(ckpt);
	free(sp);
	spec_free(&s);

	/* a relative --state-dir becomes absolute */
	a.state_dir = "rel/state";
	assert_int_equal(config_load(&a, &s, &d), 0);
	const char *got = spec_get(&s, "flinklet.state.dir");
	assert_true(got[0] == '/');
	assert_contains(got, "/rel/state");
	assert_contains(spec_get(&s, "execution.checkpointing.dir"), "file:///");
	spec_free(&s);

	/* an empty one is an error naming the flag */
	a.state_dir = "";
	assert_int_equal(config_load(&a, &s, &d), -EINVAL);
	char *joined = diags_join(&d);
	assert_diag(joined, "--state-dir: spec.flinkConfiguration.flinklet.state.dir: must be a non-empty path");
	free(joined);
	spec_free(&s);
	diags_free(&d);
	free(path);
	remove_tree(dir);
}

static void test_load_failures_change_nothing(void **state)
{
	(void)state;
	unit_clean_env();
	char *dir = make_tempdir();
	char *good = write_text(dir, "good.yaml", FULL_EXAMPLE);
	char *state_dir = xasprintf("%s/state", dir);
	char *bad_text = xasprintf("%s    upgradeMode: savepiont\n", HEAD);
	char *bad = write_text(dir, "bad.yaml", bad_text);

	struct config_args a = {0};
	a.file = good;
	struct spec keep;
	struct diags d = {0};
	assert_int_equal(config_load(&a, &keep, &d), 0);

	struct config_args b = {0};
	b.file = bad;
	b.state_dir = state_dir;
	struct spec s;
	assert_int_equal(config_load(&b, &s, &d), -EINVAL);
	char *joined = diags_join(&d);
	char *want = xasprintf("%s:8:18: spec.job.upgradeMode: must be one of stateless, savepoint, last-state (got "
	                       "\"savepiont\"); did you mean \"savepoint\"?",
	                       bad);
	assert_diag(joined, want);
	assert_int_equal(diag_count(joined), 1);
	free(want);
	free(joined);
	spec_free(&s);
	diags_free(&d);

	/* the earlier spec, the file and the state directory are untouched */
	assert_string_equal(keep.name, "clicks-per-user");
	assert_int_equal(keep.job.upgrade_mode, UPGRADE_SAVEPOINT);
	assert_string_equal(spec_get(&keep, "execution.checkpointing.interval"), "10s");
	char *text = NULL;
	assert_int_equal(read_file(bad, 1 << 20, &text, NULL), 0);
	assert_string_equal(text, bad_text);
	free(text);
	struct stat st;
	assert_int_equal(stat(state_dir, &st), -1);
	assert_int_equal(errno, ENOENT);

	/* a missing file, a directory, and no configuration at all are -EINVAL with a message */
	char *missing = xasprintf("%s/missing.yaml", dir);
	b.file = missing;
	assert_int_equal(config_load(&b, &s, &d), -EINVAL);
	joined = diags_join(&d);
	want = xasprintf("%s: cannot open the configuration file: No such file or directory", missing);
	assert_diag(joined, want);
	free(want);
	free(joined);
	spec_free(&s);
	diags_free(&d);

	b.file = dir;
	assert_int_equal(config_load(&b, &s, &d), -EINVAL);
	joined = diags_join(&d);
	want = xasprintf("%s: not a regular file", dir);
	assert_diag(joined, want);
	free(want);
	free(joined);
	spec_free(&s);
	diags_free(&d);

	struct stat dst;
	if (stat(FLINKLET_DEFAULT_CONFIG, &dst) < 0) {
		struct config_args none = {0};
		assert_int_equal(config_load(&none, &s, &d), -EINVAL);
		joined = diags_join(&d);
		assert_contains(joined, "flinklet: no configuration: give -c FILE, set $FLINKLET_CONFIG");
		free(joined);
		spec_free(&s);
		diags_free(&d);
	}

	spec_free(&keep);
	free(missing);
	free(good);
	free(bad);
	free(bad_text);
	free(state_dir);
	remove_tree(dir);
}

/* ------------------------------------------------------------------------------------------------ */
/* spec_to_json / spec_to_yaml                                                                      */

static const cJSON *jget(const cJSON *o, const char *path)
{
	char *copy = xstrdup(path);
	const cJSON *cur = o;
	for (char *save = NULL, *tok = strtok_r(copy, "/", &save); tok && cur; tok = strtok_r(NULL, "/", &save))
		cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
	free(copy);
	return cur;
}

static void test_spec_to_json(void **state)
{
	(void)state;
	struct spec s;
	load_good(FULL_EXAMPLE, &s);
	cJSON *j = spec_to_json(&s);
	assert_non_null(j);
	assert_string_equal(cJSON_GetStringValue(jget(j, "apiVersion")), "flink.apache.org/v1beta1");
	assert_string_equal(cJSON_GetStringValue(jget(j, "kind")), "FlinkMiniCluster");
	assert_string_equal(cJSON_GetStringValue(jget(j, "metadata/name")), "clicks-per-user");
	assert_string_equal(cJSON_GetStringValue(jget(j, "spec/flinkVersion")), "v2_2");
	assert_string_equal(cJSON_GetStringValue(jget(j, "spec/job/jarURI")), "local:///opt/flink/usrlib/clicks.jar");
	assert_string_equal(cJSON_GetStringValue(jget(j, "spec/job/entryClass")), "com.example.Clicks");
	assert_int_equal(cJSON_GetArraySize(jget(j, "spec/job/args")), 2);
	assert_true(cJSON_GetNumberValue(jget(j, "spec/job/parallelism")) == 2);
	assert_string_equal(cJSON_GetStringValue(jget(j, "spec/job/upgradeMode")), "savepoint");
	assert_string_equal(cJSON_GetStringValue(jget(j, "spec/job/state")), "running");
	assert_true(cJSON_IsNull(jget(j, "spec/job/initialSavepointPath")));
	assert_true(cJSON_IsFalse(jget(j, "spec/job/allowNonRestoredState")));
	assert_string_equal(cJSON_GetStringValue(jget(j, "spec/resources/memory")), "2048m");
	assert_true(cJSON_GetNumberValue(jget(j, "spec/resources/cpu")) == 1);

	const cJSON *conf = jget(j, "spec/flinkConfiguration");
	assert_true(cJSON_IsObject(conf));
	assert_int_equal(cJSON_GetArraySize(conf), (int)s.nconf);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "execution.checkpointing.dir")),
	                    "file:///var/lib/flinklet/checkpoints");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "rest.port")), "8081");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "state.backend.type")),
	                    "rocksdb");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	                        conf, "execution.checkpointing.externalized-checkpoint-retention")),
	                    "RETAIN_ON_CANCELLATION");
	/* keys are sorted so that the output is stable */
	const cJSON *prev = NULL, *c;
	cJSON_ArrayForEach (c, conf) {
		if (prev)
			assert_true(strcmp(prev->string, c->string) < 0);
		prev = c;
	}
	cJSON_Delete(j);

	char *yaml = spec_to_yaml(&s);
	assert_contains(yaml, "metadata:\n  name: \"clicks-per-user\"\n");
	assert_contains(yaml, "    execution.checkpointing.dir: \"file:///var/lib/flinklet/checkpoints\"\n");
	/* libyaml's emitter writes a sequence inside a mapping at the mapping's indentation (same document) */
	assert_contains(yaml, "    args:\n    - \"--window\"\n    - \"1m\"\n");
	free(yaml);
	spec_free(&s);
}

/* spec_to_yaml is what `check-config` prints: it must itself be a valid document that normalizes to the
 * same thing. This holds for a document that sets resources.memory and resources.cpu. */
static void test_check_config_output_reloads(void **state)
{
	(void)state;
	struct spec s;
	load_good(FULL_EXAMPLE, &s);
	char *yaml = spec_to_yaml(&s);
	struct spec again;
	load_good(yaml, &again);
	cJSON *a = spec_to_json(&s), *b = spec_to_json(&again);
	assert_true(cJSON_Compare(a, b, true));
	cJSON_Delete(a);
	cJSON_Delete(b);
	spec_free(&again);
	free(yaml);
	spec_free(&s);
}

/* The spec kept as the stable one (spec_to_yaml, sup_reload) carries the log configuration: a rollback to it launched
 * the JVM with Flink's default logging (found by issue 38's work). */
static void test_spec_to_yaml_keeps_the_log_configuration(void **state)
{
	(void)state;
	struct spec s;
	load_good(HEAD "  logConfiguration:\n    log4j-console.properties: |\n      rootLogger.level = WARN\n", &s);
	assert_non_null(s.log4j_console);
	char *yaml = spec_to_yaml(&s);
	struct spec again;
	load_good(yaml, &again);
	assert_non_null(again.log4j_console);
	assert_string_equal(again.log4j_console, s.log4j_console);
	spec_free(&again);
	free(yaml);
	spec_free(&s);
}

/* Regression (found by these tests, fixed): spec_to_yaml emits `memory: null` and `cpu: null` when resources are not
 * set, and config_parse rejects an explicit null there (f_memory / f_cpu in src/config/config.c), with a misleading
 * (got "null"). So `flinklet check-config` output of a document without resources cannot be loaded back. */
static void test_check_config_output_reloads_without_resources(void **state)
{
	(void)state;
	struct spec s;
	load_good(HEAD, &s);
	char *yaml = spec_to_yaml(&s);
	assert_contains(yaml, "  resources:\n    memory: null\n    cpu: null\n");
	int rc = -1;
	struct spec again;
	char *diags = parse_and_finalize("check-config.yaml", yaml, &again, &rc);
	assert_string_equal(diags, "");
	assert_int_equal(rc, 0);
	assert_int_equal(again.memory, 0);
	free(diags);
	spec_free(&again);
	free(yaml);
	spec_free(&s);
}

/* ------------------------------------------------------------------------------------------------ */
/* bad documents: one cmocka test per case                                                          */

struct bad_case {
	const char *name;
	const char *yaml;
	const char *exact;       /* one diagnostic must be exactly this */
	const char *contains[3]; /* ... or one diagnostic must contain all of these */
	size_t count;            /* the number of diagnostics; 0: at least one */
};

#define NAME_ERR                                                                                                       \
	"metadata.name: must be a DNS-1123 label: at most 63 characters of a-z, 0-9 and '-', starting and ending "     \
	"with a letter or digit"
#define DURATION_ERR "must be a duration such as 10 s, 500 ms or 2 min"

static const struct bad_case bad_cases[] = {
    /* the document as a whole */
    {"empty file", "", "t.yaml: empty document (expected a FlinkMiniCluster mapping)", {0}, 1},
    {"only comments",
     "# flinklet\n\n   # nothing here\n",
     "t.yaml: empty document (expected a FlinkMiniCluster mapping)",
     {0},
     1},
    {"explicit null document", "~\n", "t.yaml: empty document (expected a FlinkMiniCluster mapping)", {0}, 1},
    {"scalar at top level",
     "hello\n",
     "t.yaml:1:1: the document must be a mapping with apiVersion, kind, metadata and spec (got a scalar)",
     {0},
     1},
    {"list at top level",
     "\n- apiVersion: flink.apache.org/v1beta1\n- kind: FlinkMiniCluster\n",
     "t.yaml:2:1: the document must be a mapping with apiVersion, kind, metadata and spec (got a list)",
     {0},
     1},
    {"unclosed quote",
     "apiVersion: \"flink.apache.org/v1beta1\nkind: FlinkMiniCluster\n",
     "t.yaml:3:1: invalid YAML: found unexpected end of stream while scanning a quoted scalar",
     {0},
     1},
    {"bad indentation",
     "apiVersion: flink.apache.org/v1beta1\nmetadata:\n    name: x\n  kind: y\n",
     "t.yaml:4:3: invalid YAML: did not find expected key while parsing a block mapping",
     {0},
     1},
    {"tab indentation",
     "apiVersion: flink.apache.org/v1beta1\nmetadata:\n\tname: x\n",
     "t.yaml:3:1: invalid YAML: found character that cannot start any token while scanning for the next token",
     {0},
     1},
    {"unclosed flow mapping",
     HEAD "    args: [\"--window\", \"1m\"\n",
     NULL,
     {"t.yaml:", ": invalid YAML: did not find expected ',' or ']'"},
     1},
    {"two documents", HEAD "---\n" HEAD, "t.yaml:9:1: more than one YAML document; flinklet reads exactly one", {0}, 1},
    {"two documents, second a scalar",
     HEAD "--- extra\n",
     "t.yaml:8:5: more than one YAML document; flinklet reads exactly one",
     {0},
     1},
    {"key not a string", HEAD "  ? [a, b]\n  : c\n", "t.yaml:8:5: spec: keys must be strings (got a list)", {0}, 1},

    /* unknown fields and did-you-mean */
    {"unknown top-level field",
     "apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: "
     "clicks\nspce:\n  job: {}\n",
     "t.yaml:5:1: spce: unknown field (did you mean \"spec\"?)",
     {0},
     1},
    {"unknown field without a close match",
     HEAD "  somethingElse: 1\n",
     "t.yaml:8:3: spec.somethingElse: unknown field",
     {0},
     1},
    {"jarUri instead of jarURI",
     HEAD "    jarUri: local:///x.jar\n",
     "t.yaml:8:5: spec.job.jarUri: unknown field (did you mean \"jarURI\"?)",
     {0},
     1},
    {"entryclass typo",
     HEAD "    entryClas: com.example.Clicks\n",
     "t.yaml:8:5: spec.job.entryClas: unknown field (did you mean \"entryClass\"?)",
     {0},
     1},
    {"metadata typo",
     "apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  nmae: clicks\n",
     "t.yaml:4:3: metadata.nmae: unknown field (did you mean \"name\"?)",
     {0},
     1},
    {"unknown flinklet option with hint",
     CONF "    flinklet.state.dri: /x\n",
     "t.yaml:9:25: spec.flinkConfiguration.flinklet.state.dri: unknown flinklet option (did you mean "
     "\"flinklet.state.dir\"?)",
     {0},
     1},
    {"unknown flinklet option without hint",
     CONF "    flinklet.frobnicate: 1\n",
     "t.yaml:9:26: spec.flinkConfiguration.flinklet.frobnicate: unknown flinklet option (see docs/configuration.md)",
     {0},
     1},

    /* apiVersion, kind, metadata */
    {"wrong apiVersion",
     "apiVersion: flink.apache.org/v1\nkind: FlinkMiniCluster\nmetadata:\n  name: clicks\n",
     "t.yaml:1:13: apiVersion: must be flink.apache.org/v1beta1 (got \"flink.apache.org/v1\")",
     {0},
     1},
    {"wrong kind",
     "apiVersion: flink.apache.org/v1beta1\nkind: Deployment\nmetadata:\n  name: clicks\n",
     "t.yaml:2:7: kind: must be FlinkMiniCluster or FlinkDeployment (got \"Deployment\")",
     {0},
     1},
    {"metadata.name missing",
     "apiVersion: flink.apache.org/v1beta1\nmetadata:\n  namespace: x\nspec:\n  job:\n    "
     "jarURI: /x.jar\n",
     "t.yaml: metadata.name: required",
     {0},
     1},
    {"metadata not a mapping",
     "apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata: clicks\n",
     "t.yaml:3:11: metadata: must be a mapping (got a scalar)",
     {0},
     1},
    {"metadata.name a list",
     "apiVersion: flink.apache.org/v1beta1\nmetadata:\n  name: [a]\n",
     "t.yaml:3:9: metadata.name: must be a string (got a list)",
     {0},
     1},

    /* spec */
    {"flinkVersion unknown",
     HEAD "  flinkVersion: v3_0\n",
     "t.yaml:8:17: spec.flinkVersion: must be one of v1_20, v2_0, v2_1, v2_2, v2_3 (got \"v3_0\")",
     {0},
     1},
    {"flinkVersion 1.20 spelling",
     HEAD "  flinkVersion: \"1.20\"\n",
     "t.yaml:8:17: spec.flinkVersion: must be one of v1_20, v2_0, v2_1, v2_2, v2_3 (got \"1.20\")",
     {0},
     1},
    {"spec not a mapping",
     "apiVersion: flink.apache.org/v1beta1\nmetadata:\n  name: x\nspec: [1]\n",
     "t.yaml:4:7: spec: must be a mapping (got a list)",
     {0},
     1},
    {"job not a mapping", HEAD_NOJAR "    - a\n", "t.yaml:7:5: spec.job: must be a mapping (got a list)", {0}, 1},

    /* spec.job */
    {"parallelism 0",
     HEAD "    parallelism: 0\n",
     "t.yaml:8:18: spec.job.parallelism: must be between 1 and 32768 (got 0)",
     {0},
     1},
    {"parallelism -1",
     HEAD "    parallelism: -1\n",
     "t.yaml:8:18: spec.job.parallelism: must be between 1 and 32768 (got -1)",
     {0},
     1},
    {"parallelism two",
     HEAD "    parallelism: two\n",
     "t.yaml:8:18: spec.job.parallelism: must be an integer (got \"two\")",
     {0},
     1},
    {"parallelism 40000",
     HEAD "    parallelism: 40000\n",
     "t.yaml:8:18: spec.job.parallelism: must be between 1 and 32768 (got 40000)",
     {0},
     1},
    {"parallelism quoted",
     HEAD "    parallelism: \"2\"\n",
     "t.yaml:8:18: spec.job.parallelism: must be an integer (got \"2\")",
     {0},
     1},
    {"parallelism 1.5",
     HEAD "    parallelism: 1.5\n",
     "t.yaml:8:18: spec.job.parallelism: must be an integer (got \"1.5\")",
     {0},
     1},
    {"parallelism overflow",
     HEAD "    parallelism: 99999999999999999999\n",
     "t.yaml:8:18: spec.job.parallelism: must be an integer (got \"99999999999999999999\")",
     {0},
     1},
    {"parallelism null",
     HEAD "    parallelism: null\n",
     "t.yaml:8:18: spec.job.parallelism: must be an integer (got null)",
     {0},
     1},
    {"upgradeMode typo",
     HEAD "    upgradeMode: savepiont\n",
     "t.yaml:8:18: spec.job.upgradeMode: must be one of stateless, savepoint, last-state (got \"savepiont\"); did "
     "you mean \"savepoint\"?",
     {0},
     1},
    {"upgradeMode last_state",
     HEAD "    upgradeMode: last_state\n",
     "t.yaml:8:18: spec.job.upgradeMode: must be one of stateless, savepoint, last-state (got \"last_state\"); did "
     "you mean \"last-state\"?",
     {0},
     1},
    {"upgradeMode far off",
     HEAD "    upgradeMode: always\n",
     "t.yaml:8:18: spec.job.upgradeMode: must be one of stateless, savepoint, last-state (got \"always\")",
     {0},
     1},
    {"state typo",
     HEAD "    state: runing\n",
     "t.yaml:8:12: spec.job.state: must be running or suspended (got \"runing\")",
     {0},
     1},
    {"state a mapping",
     HEAD "    state: {a: b}\n",
     "t.yaml:8:12: spec.job.state: must be running or suspended (got a mapping)",
     {0},
     1},
    {"allowNonRestoredState yes",
     HEAD "    allowNonRestoredState: yes\n",
     "t.yaml:8:28: spec.job.allowNonRestoredState: must be true or false (got \"yes\")",
     {0},
     1},
    {"allowNonRestoredState quoted",
     HEAD "    allowNonRestoredState: \"true\"\n",
     "t.yaml:8:28: spec.job.allowNonRestoredState: must be true or false (got \"true\")",
     {0},
     1},
    {"args not a list",
     HEAD "    args: --window 1m\n",
     "t.yaml:8:11: spec.job.args: must be a list of strings (got a scalar)",
     {0},
     1},
    {"args item a mapping",
     HEAD "    args: [\"--window\", {a: b}]\n",
     "t.yaml:8:24: spec.job.args[1]: must be a string (got a mapping)",
     {0},
     1},
    {"args item null",
     HEAD "    args:\n      - a\n      -\n      - ~\n",
     "t.yaml:11:9: spec.job.args[2]: must be a string (got null)",
     {0},
     0},
    {"savepointTriggerNonce text",
     HEAD "    savepointTriggerNonce: now\n",
     "t.yaml:8:28: spec.job.savepointTriggerNonce: must be an integer (got \"now\")",
     {0},
     1},
    {"jarURI missing",
     HEAD_NOJAR "    entryClass: com.example.Clicks\n",
     "t.yaml: spec.job.jarURI: required (the job's jar: local:///path/job.jar), or a SQL script: spec.job.sqlScript "
     "or spec.job.sql",
     {0},
     1},
    {"jarURI plain http",
     HEAD_NOJAR "    jarURI: http://example.com/clicks.jar\n",
     "t.yaml:7:13: spec.job.jarURI: the scheme http is not in flinklet.artifacts.allowed-schemes (\"https,s3\"): list "
     "it there to download jars over it (got \"http://example.com/clicks.jar\")",
     {NULL},
     1},
    {"jarURI http with credentials, redacted",
     HEAD_NOJAR "    jarURI: HTTP://me:secret@example.com/clicks.jar?sig=secret\n",
     NULL,
     {"the scheme http is not in flinklet.artifacts.allowed-schemes",
      "(got \"HTTP://***@example.com/clicks.jar?***\")"},
     1},
    {"jarURI https when only s3 is allowed",
     HEAD_NOJAR "    jarURI: https://example.com/clicks.jar\n"
                "  flinkConfiguration:\n"
                "    flinklet.artifacts.allowed-schemes: s3\n",
     NULL,
     {"spec.job.jarURI: the scheme https is not in flinklet.artifacts.allowed-schemes (\"s3\")"},
     1},
    {"allowed-schemes with one flinklet cannot download",
     CONF "    flinklet.artifacts.allowed-schemes: \"https; hdfs\"\n",
     "t.yaml:9:41: spec.flinkConfiguration.flinklet.artifacts.allowed-schemes: \"hdfs\" is not a scheme flinklet "
     "downloads: list https, s3 or http (local:// and file:// jars are not downloaded and need no entry) (got "
     "\"https; hdfs\")",
     {NULL},
     1},
    {"allowed-schemes naming a local scheme",
     CONF "    flinklet.artifacts.allowed-schemes: https,file\n",
     NULL,
     {"flinklet.artifacts.allowed-schemes: \"file\" is not a scheme flinklet downloads"},
     1},
    {"s3 endpoint over http without http listed",
     CONF "    flinklet.artifacts.s3.endpoint: http://minio:9000\n",
     "t.yaml:9:37: spec.flinkConfiguration.flinklet.artifacts.s3.endpoint: must be https://host:port "
     "(http://host:port when flinklet.artifacts.allowed-schemes lists http) (got \"http://minio:9000\")",
     {NULL},
     1},
    {"max-size zero",
     CONF "    flinklet.artifacts.max-size: \"0\"\n",
     "t.yaml:9:34: spec.flinkConfiguration.flinklet.artifacts.max-size: must be at least 1 byte (got \"0\")",
     {NULL},
     1},
    {"max-size not a size",
     CONF "    flinklet.artifacts.max-size: lots\n",
     NULL,
     {"flinklet.artifacts.max-size: must be a memory size"},
     1},
    {"download timeout zero",
     CONF "    flinklet.artifacts.timeout: 0 s\n",
     "t.yaml:9:33: spec.flinkConfiguration.flinklet.artifacts.timeout: must be at least 1 s (got \"0 s\")",
     {NULL},
     1},
    {"jarURI relative",
     HEAD_NOJAR "    jarURI: clicks.jar\n",
     NULL,
     {"spec.job.jarURI: must be local:///path, file:///path, an absolute path, https://..., s3://bucket/key or "
      "http://... (got \"clicks.jar\")"},
     1},
    {"jar checksum not hex",
     CONF "    flinklet.job.jar.sha256: abc\n",
     "t.yaml:9:30: spec.flinkConfiguration.flinklet.job.jar.sha256: must be a sha256 of 64 hex digits (got \"abc\")",
     {NULL},
     1},
    {"entryClass empty", HEAD "    entryClass: \"\"\n", NULL, {"spec.job.entryClass: must not be empty"}, 1},
    {"initialSavepointPath s3",
     HEAD "    initialSavepointPath: s3://b/sp-1\n",
     NULL,
     {"spec.job.initialSavepointPath: must be an absolute local path or file:// URI (got \"s3://b/sp-1\")"},
     1},
    {"duplicate key",
     HEAD "    parallelism: 2\n    parallelism: 3\n",
     "t.yaml:9:5: spec.job.parallelism: duplicate key (first defined at line 8)",
     {0},
     1},
    {"duplicate top-level key", HEAD "spec: {}\n", "t.yaml:8:1: spec: duplicate key (first defined at line 5)", {0}, 1},

    /* spec.resources */
    {"memory lots",
     HEAD "  resources:\n    memory: lots\n",
     "t.yaml:9:13: spec.resources.memory: must be a memory size such as 2048m, 2g or 2Gi (got \"lots\")",
     {0},
     1},
    {"memory 100m too small",
     HEAD "  resources:\n    memory: 100m\n",
     "t.yaml:9:13: spec.resources.memory: 100m is too small for the whole pod with the hashmap state backend: it "
     "must be at least 240m (then: flinklet 16m, JVM metaspace 80m, code cache 24m, direct memory 24m, JVM native "
     "48m, and a heap of at least 48m)",
     {0},
     1},
    {"memory a list",
     HEAD "  resources:\n    memory: [1g]\n",
     "t.yaml:9:13: spec.resources.memory: must be a memory size such as 2048m, 2g or 2Gi (got a list)",
     {0},
     1},
    {"cpu -1",
     HEAD "  resources:\n    cpu: -1\n",
     "t.yaml:9:10: spec.resources.cpu: must be a positive number of cores such as 1, 0.5 or 500m (got \"-1\")",
     {0},
     1},
    {"cpu abc",
     HEAD "  resources:\n    cpu: abc\n",
     "t.yaml:9:10: spec.resources.cpu: must be a positive number of cores such as 1, 0.5 or 500m (got \"abc\")",
     {0},
     1},
    {"cpu 0",
     HEAD "  resources:\n    cpu: 0\n",
     "t.yaml:9:10: spec.resources.cpu: must be a positive number of cores such as 1, 0.5 or 500m (got \"0\")",
     {0},
     1},
    {"resources unknown field",
     HEAD "  resources:\n    memroy: 1g\n",
     "t.yaml:9:5: spec.resources.memroy: unknown field (did you mean \"memory\"?)",
     {0},
     1},

    /* spec.flinkConfiguration */
    {"flinkConfiguration a list",
     HEAD "  flinkConfiguration: [a]\n",
     "t.yaml:8:23: spec.flinkConfiguration: must be a mapping (got a list)",
     {0},
     1},
    {"flinkConfiguration value null",
     CONF "    pipeline.name: ~\n",
     "t.yaml:9:20: spec.flinkConfiguration.pipeline.name: must have a value (got null)",
     {0},
     1},
    {"flinkConfiguration value empty",
     CONF "    pipeline.name:\n    pipeline.jars: x\n",
     "t.yaml:9:19: spec.flinkConfiguration.pipeline.name: must have a value (got null)",
     {0},
     1},
    {"flinkConfiguration empty nested mapping",
     CONF "    pipeline: {}\n",
     "t.yaml:9:15: spec.flinkConfiguration.pipeline: must not be an empty mapping",
     {0},
     1},
    {"flinkConfiguration list of mappings",
     CONF "    pipeline.jars: [{a: b}]\n",
     "t.yaml:9:20: spec.flinkConfiguration.pipeline.jars: list items must be scalars",
     {0},
     1},
    {"flinkConfiguration duplicate after flattening",
     CONF "    a.b: x\n    a:\n      b: y\n",
     "t.yaml:11:7: spec.flinkConfiguration.a.b: duplicate key",
     {0},
     1},
    {"checkpointing interval abc",
     CONF "    execution.checkpointing.interval: abc\n",
     "t.yaml:9:39: spec.flinkConfiguration.execution.checkpointing.interval: " DURATION_ERR " (got \"abc\")",
     {0},
     1},
    {"checkpointing timeout -1s",
     CONF "    execution.checkpointing.timeout: -1s\n",
     "t.yaml:9:38: spec.flinkConfiguration.execution.checkpointing.timeout: " DURATION_ERR " (got \"-1s\")",
     {0},
     1},
    {"num-retained 1",
     CONF "    execution.checkpointing.num-retained: 1\n",
     "t.yaml:9:43: spec.flinkConfiguration.execution.checkpointing.num-retained: must be between 2 and 1000 (got 1)",
     {0},
     1},
    {"deprecated num-retained 1",
     CONF "    state.checkpoints.num-retained: 1\n",
     "t.yaml:9:37: spec.flinkConfiguration.state.checkpoints.num-retained: must be between 2 and 1000 (got 1)",
     {0},
     1},
    {"retention DELETE_ON_CANCELLATION",
     CONF "    execution.checkpointing.externalized-checkpoint-retention: "
          "DELETE_ON_CANCELLATION\n",
     "t.yaml:9:64: spec.flinkConfiguration.execution.checkpointing.externalized-checkpoint-retention: must be "
     "RETAIN_ON_CANCELLATION: flinklet restores from retained checkpoints (got \"DELETE_ON_CANCELLATION\")",
     {0},
     1},
    {"job id set",
     CONF "    $internal.pipeline.job-id: 00000000000000000000000000000001\n",
     "t.yaml:9:32: spec.flinkConfiguration.$internal.pipeline.job-id: is managed by flinklet (the job id is kept in "
     "the state directory)",
     {0},
     1},
    {"job id set nested",
     CONF "    $internal:\n      pipeline:\n        job-id: x\n",
     "t.yaml:11:17: spec.flinkConfiguration.$internal.pipeline.job-id: is managed by flinklet (the job id is kept in "
     "the state directory)",
     {0},
     1},
    {"state-recovery.path set",
     CONF "    execution.state-recovery.path: /sp\n",
     "t.yaml:9:36: spec.flinkConfiguration.execution.state-recovery.path: is chosen by flinklet; use "
     "spec.job.initialSavepointPath",
     {0},
     1},
    {"savepoint.path set",
     CONF "    execution.savepoint.path: /sp\n",
     "t.yaml:9:31: spec.flinkConfiguration.execution.savepoint.path: is chosen by flinklet; use "
     "spec.job.initialSavepointPath",
     {0},
     1},
    {"claim-mode set",
     CONF "    execution.state-recovery.claim-mode: CLAIM\n",
     NULL,
     {"t.yaml:9:42: spec.flinkConfiguration.execution.state-recovery.claim-mode: is chosen by flinklet for each "
      "restore"},
     1},
    {"shutdown-on-attached-exit set",
     CONF "    execution.shutdown-on-attached-exit: true\n",
     "t.yaml:9:42: spec.flinkConfiguration.execution.shutdown-on-attached-exit: must not be set: it cancels the job on "
     "SIGTERM and can delete its checkpoints",
     {0},
     1},
    {"execution.target remote",
     CONF "    execution.target: remote\n",
     "t.yaml:9:23: spec.flinkConfiguration.execution.target: must be local: flinklet runs the job in a MiniCluster "
     "(got \"remote\")",
     {0},
     1},
    {"checkpoint dir s3",
     CONF "    execution.checkpointing.dir: s3://bucket/ckpt\n",
     "t.yaml:9:34: spec.flinkConfiguration.execution.checkpointing.dir: must be an absolute local path or file:// URI "
     "on the state volume (got \"s3://bucket/ckpt\"); flinklet finds restore points by reading this directory",
     {0},
     1},
    {"deprecated savepoint dir relative",
     CONF "    state.savepoints.dir: savepoints\n",
     "t.yaml:9:27: spec.flinkConfiguration.state.savepoints.dir: must be an absolute local path or file:// URI on the "
     "state volume (got \"savepoints\"); flinklet finds restore points by reading this directory",
     {0},
     1},
    {"checkpoint dir local://",
     CONF "    execution.checkpointing.dir: local:///ckpt\n",
     NULL,
     {"t.yaml:9:34: spec.flinkConfiguration.execution.checkpointing.dir: must be an absolute local path"},
     1},
    {"numberOfTaskSlots below parallelism",
     HEAD "    parallelism: 4\n  flinkConfiguration:\n"
          "    taskmanager.numberOfTaskSlots: 2\n",
     "t.yaml:10:36: spec.flinkConfiguration.taskmanager.numberOfTaskSlots: must be at least the job's parallelism 4 "
     "(got 2)",
     {0},
     1},
    {"numberOfTaskSlots zero",
     CONF "    taskmanager.numberOfTaskSlots: 0\n",
     "t.yaml:9:36: spec.flinkConfiguration.taskmanager.numberOfTaskSlots: must be between 1 and 32768 (got 0)",
     {0},
     1},
    {"rest.port 70000",
     CONF "    rest.port: 70000\n",
     "t.yaml:9:16: spec.flinkConfiguration.rest.port: must be between 1 and 65535 (got 70000)",
     {0},
     1},
    {"rescale-history.size text",
     CONF "    web.adaptive-scheduler.rescale-history.size: ten\n",
     "t.yaml:9:50: spec.flinkConfiguration.web.adaptive-scheduler.rescale-history.size: must be an integer (got "
     "\"ten\")",
     {0},
     1},
    {"rescale-history.size beyond an int",
     CONF "    web.adaptive-scheduler.rescale-history.size: 3000000000\n",
     "t.yaml:9:50: spec.flinkConfiguration.web.adaptive-scheduler.rescale-history.size: must be between -2147483648 "
     "and 2147483647 (got 3000000000)",
     {0},
     1},
    {"parallelism.default text",
     CONF "    parallelism.default: many\n",
     "t.yaml:9:26: spec.flinkConfiguration.parallelism.default: must be an integer (got \"many\")",
     {0},
     1},
    {"state backend typo",
     CONF "    state.backend.type: rocksbd\n",
     "t.yaml:9:25: spec.flinkConfiguration.state.backend.type: must be hashmap, rocksdb, forst or a factory class name "
     "(got \"rocksbd\")",
     {0},
     1},
    {"flinklet.shutdown.timeout soon",
     CONF "    flinklet.shutdown.timeout: soon\n",
     "t.yaml:9:32: spec.flinkConfiguration.flinklet.shutdown.timeout: " DURATION_ERR " (got \"soon\")",
     {0},
     1},
    {"flinklet.http.address nope",
     CONF "    flinklet.http.address: nope\n",
     "t.yaml:9:28: spec.flinkConfiguration.flinklet.http.address: " HOSTPORT_ERR " (got \"nope\")",
     {0},
     1},
    {"flinklet.http.address port 99999",
     CONF "    flinklet.http.address: \":99999\"\n",
     "t.yaml:9:28: spec.flinkConfiguration.flinklet.http.address: " HOSTPORT_ERR " (got \":99999\")",
     {0},
     1},
    {"flinklet.http.address IPv6 without brackets",
     CONF "    flinklet.http.address: \"::1:8091\"\n",
     "t.yaml:9:28: spec.flinkConfiguration.flinklet.http.address: " HOSTPORT_ERR " (got \"::1:8091\")",
     {0},
     1},
    {"flinklet.http.address host name",
     CONF "    flinklet.http.address: flink.example.com:8091\n",
     "t.yaml:9:28: spec.flinkConfiguration.flinklet.http.address: " HOSTPORT_ERR " (got \"flink.example.com:8091\")",
     {0},
     1},
    {"flinklet.http.address port with a sign",
     CONF "    flinklet.http.address: \"127.0.0.1:+80\"\n",
     "t.yaml:9:28: spec.flinkConfiguration.flinklet.http.address: " HOSTPORT_ERR " (got \"127.0.0.1:+80\")",
     {0},
     1},
    {"flinklet.http.max-connections 0",
     CONF "    flinklet.http.max-connections: \"0\"\n",
     "t.yaml:9:36: spec.flinkConfiguration.flinklet.http.max-connections: must be between 1 and 10000 (got 0)",
     {0},
     1},
    {"flinklet.http.connection-timeout 500 ms",
     CONF "    flinklet.http.connection-timeout: 500 ms\n",
     "t.yaml:9:39: spec.flinkConfiguration.flinklet.http.connection-timeout: must be at least 1 s (got \"500 ms\")",
     {0},
     1},
    {"flinklet.log.level verbose",
     CONF "    flinklet.log.level: verbose\n",
     "t.yaml:9:25: spec.flinkConfiguration.flinklet.log.level: must be one of debug,info,warn,error (got \"verbose\")",
     {0},
     1},
    {"flinklet.state.dir empty",
     CONF "    flinklet.state.dir: \"\"\n",
     "t.yaml:9:25: spec.flinkConfiguration.flinklet.state.dir: must be a non-empty path",
     {0},
     1},
    {"startup poll interval 0",
     CONF "    flinklet.rest.startup-poll-interval: 0 ms\n",
     "t.yaml:9:42: spec.flinkConfiguration.flinklet.rest.startup-poll-interval: must be at least 10 ms (got \"0 ms\")",
     {0},
     1},
    {"poll interval 5 ms",
     CONF "    flinklet.rest.poll-interval: 5ms\n",
     "t.yaml:9:34: spec.flinkConfiguration.flinklet.rest.poll-interval: must be at least 10 ms (got \"5ms\")",
     {0},
     1},
    {"operator client timeout",
     CONF "    kubernetes.operator.flink.client.timeout: 10 parsecs\n",
     "t.yaml:9:47: spec.flinkConfiguration.kubernetes.operator.flink.client.timeout: " DURATION_ERR
     " (got \"10 parsecs\")",
     {0},
     1},
    {"several errors at once",
     HEAD "    parallelism: 0\n    upgradeMode: x\n  resources:\n    cpu: abc\n",
     NULL,
     {"t.yaml:8:18: spec.job.parallelism"},
     3},
};

/* The uppercase/too-long/leading-dash names need the name line replaced: built at run time. */
struct name_case {
	const char *name;
	const char *value;
};
static const struct name_case name_cases[] = {
    {"metadata.name uppercase", "Clicks"},
    {"metadata.name 64 characters", "a234567890123456789012345678901234567890123456789012345678901234"},
    {"metadata.name leading dash", "-clicks"},
    {"metadata.name trailing dash", "clicks-"},
    {"metadata.name with a dot", "clicks.v1"},
    {"metadata.name empty", "\"\""},
};

static void check_bad_case(const struct bad_case *c)
{
	int rc = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char *diags = parse_and_finalize("t.yaml", c->yaml, NULL, &rc);
	if (rc != -EINVAL)
		print_error("case \"%s\": expected -EINVAL, got %d; diagnostics:\n%s\n", c->name, rc, diags);
	assert_int_equal(rc, -EINVAL);
	if (c->exact)
		assert_diag(diags, c->exact);
	if (c->contains[0]) {
		bool found = false;
		for (const char *p = diags; *p && !found;) {
			const char *nl = strchr(p, '\n');
			char *one = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
			found = true;
			for (size_t i = 0; i < 3 && c->contains[i]; i++)
				if (!strstr(one, c->contains[i]))
					found = false;
			free(one);
			p = nl ? nl + 1 : p + strlen(p);
		}
		if (!found)
			print_error("case \"%s\": no diagnostic contains all of \"%s\" / \"%s\" / \"%s\" in\n%s\n",
			            c->name, c->contains[0], c->contains[1] ? c->contains[1] : "",
			            c->contains[2] ? c->contains[2] : "", diags);
		assert_true(found);
	}
	if (c->count && diag_count(diags) != c->count) {
		print_error("case \"%s\": expected %zu diagnostics, got:\n%s\n", c->name, c->count, diags);
		fail();
	}
	/* every diagnostic names the file first */
	for (const char *p = diags; *p;) {
		assert_true(str_has_prefix(p, "t.yaml"));
		const char *nl = strchr(p, '\n');
		p = nl ? nl + 1 : p + strlen(p);
	}
	assert_true(elapsed_since(&t0) < 60.0); /* a hang guard, not a speed goal */
	free(diags);
}

static void run_bad_case(void **state)
{
	check_bad_case(*state);
}

static void run_name_case(void **state)
{
	const struct name_case *nc = *state;
	char *yaml = xasprintf("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: %s\n"
	                       "spec:\n  job:\n    jarURI: /x.jar\n",
	                       nc->value);
	char *value = nc->value[0] == '"' ? xstrdup("") : xstrdup(nc->value);
	char *exact = xasprintf("t.yaml:4:9: " NAME_ERR " (got \"%s\")", value);
	struct bad_case c = {nc->name, yaml, exact, {0}, 1};
	check_bad_case(&c);
	free(exact);
	free(value);
	free(yaml);
}

/* A name of exactly 63 characters is the longest allowed. */
static void test_name_63_characters(void **state)
{
	(void)state;
	struct spec s;
	load_good("metadata:\n  name: a23456789012345678901234567890123456789012345678901234567890123\n"
	          "spec:\n  job:\n    jarURI: /x.jar\n",
	          &s);
	assert_int_equal(strlen(s.name), 63);
	spec_free(&s);
}

/* ------------------------------------------------------------------------------------------------ */
/* hostile input                                                                                    */

static void test_nul_byte(void **state)
{
	(void)state;
	static const char doc[] = "apiVersion: flink.apache.org/v1beta1\nkind: Flink\0MiniCluster\n";
	int rc = 0;
	char *diags = parse_and_finalize_n("t.yaml", doc, sizeof(doc) - 1, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_diag(diags, "t.yaml: not a YAML document (contains a NUL byte)");
	assert_int_equal(diag_count(diags), 1);
	free(diags);
}

static void test_document_too_large(void **state)
{
	(void)state;
	size_t len = 2u << 20;
	char *doc = xmalloc(len + 1);
	memset(doc, '#', len);
	memcpy(doc, HEAD, strlen(HEAD));
	doc[len] = '\0';
	int rc = 0;
	char *diags = parse_and_finalize_n("t.yaml", doc, len, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_diag(diags, "t.yaml: document too large (2097152 bytes, at most 1048576)");
	free(diags);

	/* the same through config_load: the file is refused before it is read */
	char *dir = make_tempdir();
	char *path = write_text_n(dir, "big.yaml", doc, len);
	struct config_args a = {0};
	a.file = path;
	struct spec s;
	struct diags d = {0};
	assert_int_equal(config_load(&a, &s, &d), -EINVAL);
	char *joined = diags_join(&d);
	char *want = xasprintf("%s: document too large (2097152 bytes, at most 1 MiB)", path);
	assert_diag(joined, want);
	free(want);
	free(joined);
	spec_free(&s);
	diags_free(&d);
	free(path);
	remove_tree(dir);
	free(doc);
}

/* Many keys in one mapping: bounded by the node budget, and not quadratic enough to hang. */
static void test_many_keys(void **state)
{
	(void)state;
	struct strbuf b = {0};
	strbuf_append(&b, CONF);
	for (int i = 0; i < 30000; i++)
		strbuf_appendf(&b, "    k%d: v\n", i);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = 0;
	char *diags = parse_and_finalize("t.yaml", b.buf, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_contains(diags, "document too large (more than 20000 nodes, aliases included)");
	assert_true(elapsed_since(&t0) < 60.0); /* a hang guard, not a speed goal */
	free(diags);
	strbuf_free(&b);
}

/* The classic billion laughs: nine levels of lists of aliases, 10^9 strings when expanded. */
static void test_billion_laughs(void **state)
{
	(void)state;
	struct strbuf b = {0};
	strbuf_append(&b, HEAD
	              "    args: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	              "  flinkConfiguration:\n");
	for (char c = 'b'; c <= 'j'; c++) {
		strbuf_appendf(&b, "    %c: &%c [", c, c);
		for (int k = 0; k < 10; k++)
			strbuf_appendf(&b, "%s*%c", k ? "," : "", c - 1);
		strbuf_append(&b, "]\n");
	}
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = 0;
	char *diags = parse_and_finalize("t.yaml", b.buf, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	/* b..j are lists of lists: each is refused on its own, without expanding anything */
	assert_diag(diags, "t.yaml:10:8: spec.flinkConfiguration.b: list items must be scalars");
	assert_diag(diags, "t.yaml:18:8: spec.flinkConfiguration.j: list items must be scalars");
	assert_int_equal(diag_count(diags), 9);
	assert_true(elapsed_since(&t0) < 60.0); /* a hang guard, not a speed goal */
	free(diags);
	strbuf_free(&b);

	/* the same with mappings, which flinkConfiguration flattens: stopped by the node budget */
	strbuf_append(&b, CONF
	              "    l0: &l0 {a: lol, b: lol, c: lol, d: lol, e: lol, f: lol, g: lol, h: lol, i: lol, j: lol}\n");
	for (int i = 1; i < 9; i++) {
		strbuf_appendf(&b, "    l%d: &l%d {", i, i);
		for (int k = 0; k < 10; k++)
			strbuf_appendf(&b, "%sk%d: *l%d", k ? ", " : "", k, i - 1);
		strbuf_append(&b, "}\n");
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	diags = parse_and_finalize("t.yaml", b.buf, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_contains(diags, "document too large (more than 20000 nodes, aliases included)");
	/* generous: ~0.7 s optimized, ~7 s under ASan (spec_set's linear search makes it quadratic) */
	assert_true(elapsed_since(&t0) < 60.0); /* a hang guard, not a speed goal */
	free(diags);
	strbuf_free(&b);
}

/* Regression (found by these tests, fixed): a mapping that contains an alias of itself (libyaml registers an anchor
 * before its children, so `x: &a {y: *a}` is a cycle) makes conf_walk in src/config/config.c recurse 20000 levels deep,
 * building keys "x.y.y.y..." of up to 40000 bytes at every level: about 900 MB of memory and 3-4 s for a 70-byte
 * document, enough to get the supervisor OOM-killed in a small pod. The node budget bounds the count,
 * not the depth. The parse must fail fast with bounded memory. Run in a child to measure its peak RSS. */
static void test_self_referencing_alias(void **state)
{
	(void)state;
	static const char doc[] = CONF "    x: &a {y: *a}\n";
	int rc = 0;
	char *got = parse_and_finalize("t.yaml", doc, NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_contains(got, "nested too deeply (more than 16 levels)");
	free(got);
}

/* Regression (found by these tests, fixed): when the first document is complete, a syntax error in a second document is
 * ignored: config_parse in src/config/config.c only reports a second document when yaml_parser_load succeeds, and
 * returns 0 when it fails. A file that is not valid YAML is accepted. */
static void test_invalid_second_document(void **state)
{
	(void)state;
	int rc = 0;
	char *diags = parse_and_finalize("t.yaml", HEAD "---\nfoo: \"unclosed\n", NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_contains(diags, "t.yaml:10:1: invalid YAML: ");
	free(diags);
}

/* Regression (found by these tests, fixed): errors about a value that is present in the file must name its line and
 * column (contract section 1: "Every error message names the file, the line and column where that applies"), but
 * check_job in src/config/config_check.c reports spec.job.jarURI, entryClass and initialSavepointPath with the
 * whole-file location: "t.yaml: spec.job.jarURI: must be ...". */
static void test_jar_uri_error_has_position(void **state)
{
	(void)state;
	int rc = 0;
	char *diags = parse_and_finalize("t.yaml", HEAD_NOJAR "    jarURI: ftp://example.com/clicks.jar\n", NULL, &rc);
	assert_int_equal(rc, -EINVAL);
	assert_contains(diags, "t.yaml:7:13: spec.job.jarURI: must be local:///path");
	free(diags);
	diags = parse_and_finalize("t.yaml", HEAD "    initialSavepointPath: s3://b/sp-1\n", NULL, &rc);
	assert_contains(diags, "t.yaml:8:27: spec.job.initialSavepointPath: ");
	free(diags);
}

/* ------------------------------------------------------------------------------------------------ */
/* listeners on loopback, and the warnings for settings that open the job to the network               */

static char *warnings_of(const struct spec *s)
{
	struct diags w = {0};
	config_warnings(s, &w);
	char *joined = diags_join(&w);
	diags_free(&w);
	return joined;
}

static void test_listeners_default_to_loopback(void **state)
{
	(void)state;
	struct spec s;
	load_good(HEAD, &s);
	static const char *const keys[][2] = {
	    {"rest.bind-address", "127.0.0.1"},    {"rest.address", "127.0.0.1"},
	    {"jobmanager.bind-host", "127.0.0.1"}, {"taskmanager.bind-host", "127.0.0.1"},
	    {"web.submit.enable", "false"},        {"web.cancel.enable", "false"},
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct conf_entry *e = find_entry(&s, keys[i][0]);
		if (!e || strcmp(e->value, keys[i][1]) || e->origin != ORIGIN_DEFAULT)
			fail_msg("%s: want the default %s, got %s", keys[i][0], keys[i][1], e ? e->value : "(unset)");
	}
	char *w = warnings_of(&s);
	assert_string_equal(w, "");
	free(w);
	spec_free(&s);
}

static void test_listener_settings_of_the_user_win_and_warn(void **state)
{
	(void)state;
	struct spec s;
	load_good(CONF "    rest.bind-address: 0.0.0.0\n"      /*  9 */
	               "    jobmanager.bind-host: \"::\"\n"    /* 10 */
	               "    taskmanager.bind-host: 10.1.2.3\n" /* 11 */
	               "    web.submit.enable: \"true\"\n"     /* 12 */
	               "    web.cancel.enable: \"true\"\n",    /* 13 */
	          &s);
	assert_string_equal(spec_get(&s, "rest.bind-address"), "0.0.0.0");
	assert_string_equal(spec_get(&s, "jobmanager.bind-host"), "::");
	assert_string_equal(spec_get(&s, "web.submit.enable"), "true");
	char *w = warnings_of(&s);
	assert_int_equal(diag_count(w), 5);
	assert_contains(w, "t.yaml:9:24: warning: spec.flinkConfiguration.rest.bind-address: \"0.0.0.0\" is not a "
	                   "loopback address: Flink's REST API and web UI");
	assert_contains(w, "t.yaml:10:27: warning: spec.flinkConfiguration.jobmanager.bind-host: \"::\" is not a "
	                   "loopback address: Flink's BLOB server");
	assert_contains(w, "t.yaml:11:28: warning: spec.flinkConfiguration.taskmanager.bind-host: \"10.1.2.3\"");
	assert_contains(w, "t.yaml:12:24: warning: spec.flinkConfiguration.web.submit.enable: jar upload and run");
	assert_contains(w, "t.yaml:13:24: warning: spec.flinkConfiguration.web.cancel.enable: ");
	free(w);
	spec_free(&s);

	/* loopback in any spelling is what flinklet would choose: no warning */
	load_good(CONF "    rest.bind-address: localhost\n"
	               "    jobmanager.bind-host: \"::1\"\n"
	               "    taskmanager.bind-host: 127.0.0.2\n"
	               "    web.submit.enable: \"false\"\n",
	          &s);
	w = warnings_of(&s);
	assert_string_equal(w, "");
	free(w);
	spec_free(&s);

	/* Flink's deprecated spelling counts: flinklet adds no rest.bind-address that would override it */
	load_good(CONF "    web.address: 0.0.0.0\n", &s);
	assert_null(find_entry(&s, "rest.bind-address"));
	assert_string_equal(spec_get(&s, "rest.bind-address"), "0.0.0.0");
	w = warnings_of(&s);
	assert_contains(w, "t.yaml:9:18: warning: spec.flinkConfiguration.web.address: \"0.0.0.0\" is not a loopback");
	free(w);
	spec_free(&s);
}

static void test_listener_warning_names_the_flag(void **state)
{
	(void)state;
	char *dir = make_tempdir();
	char *path = write_text(dir, "f.yaml", HEAD);
	struct config_args a = {.file = path};
	strv_push(&a.defines, "rest.bind-address=192.0.2.7");
	struct spec s;
	struct diags d = {0};
	assert_int_equal(config_load(&a, &s, &d), 0);
	char *w = warnings_of(&s);
	assert_contains(w, "-D: warning: spec.flinkConfiguration.rest.bind-address: \"192.0.2.7\" is not a loopback");
	free(w);
	diags_free(&d);
	spec_free(&s);
	strv_free(&a.defines);
	free(path);
	remove_tree(dir);
}

/* ------------------------------------------------------------------------------------------------ */
/* the state backend: the savepoint format flinklet asks for, and the warnings about stopping and checkpoints  */

static void test_state_backend_names(void **state)
{
	(void)state;
	static const struct {
		const char *conf;
		enum state_backend want;
	} cases[] = {
	    {"", BACKEND_HASHMAP}, /* Flink's default */
	    {"    state.backend.type: hashmap\n", BACKEND_HASHMAP},
	    {"    state.backend.type: RocksDB\n", BACKEND_ROCKSDB},
	    {"    state.backend: rocksdb\n", BACKEND_ROCKSDB}, /* the deprecated key */
	    {"    state.backend.type: org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackendFactory\n",
	     BACKEND_ROCKSDB},
	    {"    state.backend.type: forst\n", BACKEND_FORST},
	    {"    state.backend.type: org.apache.flink.state.forst.ForStStateBackendFactory\n", BACKEND_FORST},
	    {"    state.backend.type: com.example.MyBackendFactory\n", BACKEND_OTHER},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *doc = xasprintf(CONF "%s", cases[i].conf);
		struct spec s;
		load_good(doc, &s);
		if (spec_state_backend(&s) != cases[i].want)
			fail_msg("%s: want %s, got %s", cases[i].conf, state_backend_name(cases[i].want),
			         state_backend_name(spec_state_backend(&s)));
		spec_free(&s);
		free(doc);
	}
}

/* Unset, the format is NATIVE where the backend has one and the savepoint goes back to the same backend: every
 * savepoint of forst (it takes no other), the stop savepoints of rocksdb; an explicit setting always wins. */
static void test_savepoint_format_follows_the_backend(void **state)
{
	(void)state;
	static const struct {
		const char *conf;
		enum state_backend running;
		enum savepoint_use use;
		const char *want;
	} cases[] = {
	    {"", BACKEND_HASHMAP, SAVEPOINT_STOP, "CANONICAL"},
	    {"", BACKEND_HASHMAP, SAVEPOINT_KEPT, "CANONICAL"},
	    {"    state.backend.type: rocksdb\n", BACKEND_ROCKSDB, SAVEPOINT_STOP, "NATIVE"},
	    {"    state.backend.type: rocksdb\n", BACKEND_ROCKSDB, SAVEPOINT_KEPT, "CANONICAL"},
	    /* an upgrade from rocksdb to hashmap, and back: the new backend must read it */
	    {"    state.backend.type: hashmap\n", BACKEND_ROCKSDB, SAVEPOINT_STOP, "CANONICAL"},
	    {"    state.backend.type: rocksdb\n", BACKEND_HASHMAP, SAVEPOINT_STOP, "CANONICAL"},
	    {"    state.backend.type: forst\n", BACKEND_FORST, SAVEPOINT_STOP, "NATIVE"},
	    {"    state.backend.type: forst\n", BACKEND_FORST, SAVEPOINT_KEPT, "NATIVE"},
	    /* ForSt takes NATIVE only, whichever backend comes next */
	    {"    state.backend.type: rocksdb\n", BACKEND_FORST, SAVEPOINT_STOP, "NATIVE"},
	    {"    state.backend.type: com.example.MyBackendFactory\n", BACKEND_OTHER, SAVEPOINT_STOP, "CANONICAL"},
	    /* the user's choice */
	    {"    state.backend.type: rocksdb\n    kubernetes.operator.savepoint.format.type: CANONICAL\n",
	     BACKEND_ROCKSDB, SAVEPOINT_STOP, "CANONICAL"},
	    {"    state.backend.type: forst\n    kubernetes.operator.savepoint.format.type: CANONICAL\n", BACKEND_FORST,
	     SAVEPOINT_KEPT, "CANONICAL"},
	    {"    kubernetes.operator.savepoint.format.type: NATIVE\n", BACKEND_HASHMAP, SAVEPOINT_KEPT, "NATIVE"},
	    /* the changelog state backend restores a savepoint in legacy mode: canonical, sharing no file after it */
	    {"    state.backend.type: rocksdb\n    state.changelog.enabled: true\n", BACKEND_ROCKSDB, SAVEPOINT_STOP,
	     "CANONICAL"},
	    {"    state.backend.type: forst\n    state.changelog.enabled: true\n", BACKEND_FORST, SAVEPOINT_STOP,
	     "NATIVE"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *doc = xasprintf(CONF "%s", cases[i].conf);
		struct spec s;
		load_good(doc, &s);
		const char *got = spec_savepoint_format(&s, cases[i].running, cases[i].use);
		if (strcmp(got, cases[i].want))
			fail_msg("case %zu (%s, running %s, %s): want %s, got %s", i, cases[i].conf,
			         state_backend_name(cases[i].running), cases[i].use == SAVEPOINT_STOP ? "stop" : "kept",
			         cases[i].want, got);
		spec_free(&s);
		free(doc);
	}
}

/* The default is no value at all: the normalized document (check-config, spec.stable.yaml read back after a
 * rollback) does not turn it into the user's explicit CANONICAL. */
static void test_savepoint_format_default_survives_the_normalized_document(void **state)
{
	(void)state;
	struct spec s, back;
	load_good(CONF "    state.backend.type: rocksdb\n", &s);
	assert_null(spec_get(&s, "kubernetes.operator.savepoint.format.type"));
	char *yaml = spec_to_yaml(&s);
	int rc = -1;
	char *diags = parse_and_finalize("stable.yaml", yaml, &back, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(spec_savepoint_format(&back, BACKEND_ROCKSDB, SAVEPOINT_STOP), "NATIVE");
	free(diags);
	free(yaml);
	spec_free(&back);
	spec_free(&s);
}

#define INCREMENTAL "    execution.checkpointing.incremental: \"true\"\n"

static void test_forst_with_canonical_savepoints_warns(void **state)
{
	(void)state;
	struct spec s;
	load_good(CONF "    state.backend.type: forst\n"                             /*  9 */
	          INCREMENTAL                                                        /* 10 */
	               "    kubernetes.operator.savepoint.format.type: CANONICAL\n", /* 11 */
	          &s);
	char *w = warnings_of(&s);
	assert_int_equal(diag_count(w), 1);
	assert_contains(w,
	                "t.yaml:11:48: warning: spec.flinkConfiguration.kubernetes.operator.savepoint.format.type: "
	                "CANONICAL with state.backend.type forst: ForSt takes NATIVE savepoints only, so every "
	                "savepoint flinklet asks for fails: a stop with upgradeMode savepoint ends without one (exit "
	                "code 4)");
	assert_contains(w, "leave it unset (NATIVE with forst) or set NATIVE");
	free(w);
	spec_free(&s);

	/* the same as a -D override names the flag */
	char *dir = make_tempdir();
	char *path = write_text(dir, "f.yaml", CONF "    state.backend.type: forst\n" INCREMENTAL);
	struct config_args a = {.file = path};
	strv_push(&a.defines, "kubernetes.operator.savepoint.format.type=CANONICAL");
	struct diags d = {0};
	assert_int_equal(config_load(&a, &s, &d), 0);
	w = warnings_of(&s);
	assert_contains(w, "-D: warning: spec.flinkConfiguration.kubernetes.operator.savepoint.format.type: CANONICAL "
	                   "with state.backend.type forst");
	free(w);
	diags_free(&d);
	spec_free(&s);
	strv_free(&a.defines);
	free(path);
	remove_tree(dir);

	/* forst unset or NATIVE, and CANONICAL with the backends that take it: nothing to say */
	static const char *const quiet[] = {
	    CONF "    state.backend.type: forst\n" INCREMENTAL,
	    CONF "    state.backend.type: forst\n" INCREMENTAL
	         "    kubernetes.operator.savepoint.format.type: NATIVE\n",
	    CONF "    state.backend.type: rocksdb\n" INCREMENTAL
	         "    kubernetes.operator.savepoint.format.type: CANONICAL\n",
	    CONF "    kubernetes.operator.savepoint.format.type: CANONICAL\n",
	};
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++) {
		load_good(quiet[i], &s);
		w = warnings_of(&s);
		if (*w)
			fail_msg("%s: want no warning, got %s", quiet[i], w);
		free(w);
		spec_free(&s);
	}
}

static void test_native_backend_without_incremental_checkpoints_warns(void **state)
{
	(void)state;
	struct spec s;
	load_good(CONF "    state.backend.type: rocksdb\n", &s); /* 9 */
	char *w = warnings_of(&s);
	assert_int_equal(diag_count(w), 1);
	assert_contains(w, "t.yaml:9:25: warning: spec.flinkConfiguration.state.backend.type: rocksdb without "
	                   "incremental checkpoints (execution.checkpointing.incremental is false by default): every "
	                   "checkpoint copies the whole state to the volume, not just the files new since the previous "
	                   "one; set execution.checkpointing.incremental: true");
	free(w);
	spec_free(&s);

	load_good(CONF "    state.backend: forst\n", &s); /* the deprecated key, as written */
	w = warnings_of(&s);
	assert_contains(w, "t.yaml:9:20: warning: spec.flinkConfiguration.state.backend: forst without incremental");
	free(w);
	spec_free(&s);

	/* off explicitly: the warning is at that setting */
	load_good(CONF "    state.backend.type: rocksdb\n"                     /*  9 */
	               "    execution.checkpointing.incremental: \"false\"\n", /* 10 */
	          &s);
	w = warnings_of(&s);
	assert_int_equal(diag_count(w), 1);
	assert_contains(w, "t.yaml:10:42: warning: spec.flinkConfiguration.execution.checkpointing.incremental: false "
	                   "with the rocksdb state backend: every checkpoint copies the whole state to the volume");
	free(w);
	spec_free(&s);

	/* on (also by Flink's old name), or a backend without incremental checkpoints: nothing to say */
	static const char *const quiet[] = {
	    CONF "    state.backend.type: rocksdb\n" INCREMENTAL,
	    CONF "    state.backend.type: forst\n    state.backend.incremental: true\n",
	    CONF "    state.backend.type: hashmap\n",
	    CONF "    execution.checkpointing.interval: 10s\n",
	};
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++) {
		load_good(quiet[i], &s);
		w = warnings_of(&s);
		if (*w)
			fail_msg("%s: want no warning, got %s", quiet[i], w);
		free(w);
		spec_free(&s);
	}
}

static void test_option_table(void **state)
{
	(void)state;
	assert_non_null(option_find("flinklet.state.dir"));
	assert_string_equal(option_find("flinklet.state.dir")->def, "/var/lib/flinklet");
	assert_string_equal(option_find("flinklet.http.address")->def, "0.0.0.0:8091");
	assert_null(option_find("flinklet.nope"));
	assert_string_equal(upgrade_mode_to_string(UPGRADE_LAST_STATE), "last-state");
	assert_string_equal(job_state_to_string(JOB_STATE_SUSPENDED), "suspended");
	/* every default in the table passes its own validation */
	struct spec s;
	load_good(HEAD, &s);
	spec_free(&s);
	for (const struct option_def *o = flinklet_options; o->key; o++) {
		assert_non_null(o->doc);
		assert_true(str_has_prefix(o->key, "flinklet.") || str_has_prefix(o->key, "kubernetes.operator."));
	}
}

static void test_diags_format(void **state)
{
	(void)state;
	struct diags d = {0};
	struct loc at = {"f.yaml", 3, 7}, file_only = {"f.yaml", 0, 0};
	diags_add(&d, &at, "spec.x", "bad %d", 1);
	diags_add(&d, &file_only, "spec.y", "missing");
	diags_add(&d, NULL, NULL, "plain");
	assert_string_equal(d.msgs.v[0], "f.yaml:3:7: spec.x: bad 1");
	assert_string_equal(d.msgs.v[1], "f.yaml: spec.y: missing");
	assert_string_equal(d.msgs.v[2], "plain");
	diags_free(&d);
	assert_int_equal(d.msgs.n, 0);
}

int main(void)
{
	unit_clean_env();
	static const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_full_example),
	    cmocka_unit_test(test_every_job_field_set),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_defaults_follow_parallelism),
	    cmocka_unit_test(test_nested_configuration_flattened),
	    cmocka_unit_test(test_deprecated_keys),
	    cmocka_unit_test(test_kubernetes_quantities),
	    cmocka_unit_test(test_load_file_with_overrides),
	    cmocka_unit_test(test_load_from_env),
	    cmocka_unit_test(test_load_bad_define),
	    cmocka_unit_test(test_quick_mode),
	    cmocka_unit_test(test_state_dir_override),
	    cmocka_unit_test(test_load_failures_change_nothing),
	    cmocka_unit_test(test_spec_to_json),
	    cmocka_unit_test(test_check_config_output_reloads),
	    cmocka_unit_test(test_check_config_output_reloads_without_resources),
	    cmocka_unit_test(test_spec_to_yaml_keeps_the_log_configuration),
	    cmocka_unit_test(test_name_63_characters),
	    cmocka_unit_test(test_nul_byte),
	    cmocka_unit_test(test_document_too_large),
	    cmocka_unit_test(test_many_keys),
	    cmocka_unit_test(test_billion_laughs),
	    cmocka_unit_test(test_self_referencing_alias),
	    cmocka_unit_test(test_invalid_second_document),
	    cmocka_unit_test(test_jar_uri_error_has_position),
	    cmocka_unit_test(test_listeners_default_to_loopback),
	    cmocka_unit_test(test_listener_settings_of_the_user_win_and_warn),
	    cmocka_unit_test(test_listener_warning_names_the_flag),
	    cmocka_unit_test(test_state_backend_names),
	    cmocka_unit_test(test_savepoint_format_follows_the_backend),
	    cmocka_unit_test(test_savepoint_format_default_survives_the_normalized_document),
	    cmocka_unit_test(test_forst_with_canonical_savepoints_warns),
	    cmocka_unit_test(test_native_backend_without_incremental_checkpoints_warns),
	    cmocka_unit_test(test_option_table),
	    cmocka_unit_test(test_diags_format),
	};
	size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
	size_t nbad = sizeof(bad_cases) / sizeof(bad_cases[0]);
	size_t nname = sizeof(name_cases) / sizeof(name_cases[0]);
	struct CMUnitTest *tests = xcalloc(nfixed + nbad + nname, sizeof(*tests));
	size_t n = 0;
	for (size_t i = 0; i < nfixed; i++)
		tests[n++] = fixed[i];
	for (size_t i = 0; i < nbad; i++) {
		char *name = xasprintf("bad document: %s", bad_cases[i].name);
		tests[n++] = (struct CMUnitTest){name, run_bad_case, NULL, NULL, (void *)&bad_cases[i]};
	}
	for (size_t i = 0; i < nname; i++) {
		char *name = xasprintf("bad document: %s", name_cases[i].name);
		tests[n++] = (struct CMUnitTest){name, run_name_case, NULL, NULL, (void *)&name_cases[i]};
	}
	int failed = _cmocka_run_group_tests("config", tests, n, NULL, NULL);
	for (size_t i = nfixed; i < n; i++)
		free((char *)tests[i].name);
	free(tests);
	return failed;
}

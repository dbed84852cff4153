/* flinkconf: the Flink configuration, log configuration, argv and environment for one MiniCluster JVM
 * launch (see src/flink/flinkconf.h). The JVM runs flinklet's launcher (or, without its jar, Flink's CliFrontend)
 * `run -t local`: a per-job MiniCluster in the client's JVM that lives exactly as long as the job, with the REST API
 * on a fixed port. Also the digest of what a launch says of the job, to tell a finished job's spec from a changed one.
 */
#include "flinkconf.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "cds.h"
#include "config_sql.h"
#include "crashlogs.h"
#include "digest.h"
#include "membudget.h"
#include "yamlout.h"

/* The module flags Flink's own scripts pass on Java 17 (flink-dist config.yaml, env.java.opts.all);
 * the JVM never reads env.java.opts itself, so the supervisor must. The 1.20 list has one more. */
static const char *const java17_flags[] = {
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
    NULL,
};

#define PARALLELISM_OVERRIDES "pipeline.jobvertex-parallelism-overrides"

/* Keys that configure the supervisor, not Flink: never written to Flink's config.yaml. */
static bool supervisor_key(const char *key)
{
	return str_has_prefix(key, "flinklet.") || str_has_prefix(key, "kubernetes.operator.") ||
	       str_has_prefix(key, "job.autoscaler.");
}

/* The split of the launch: tuned when memory tuning gives settings that fit, else the plain one. */
static int launch_split(const struct spec *s, const struct launch *l, struct membudget *mb)
{
	if (l && l->memory && membudget_compute_tuned(s, l->memory, mb) == 0)
		return 0;
	return membudget_compute(s, mb, NULL);
}

char *flinkconf_render_config(const struct spec *s, const struct launch *l)
{
	/* the pairs in order (the spec's, then flinklet's own), written by libyaml's emitter (yamlout.c) */
	const char **kv = xcalloc(2 * (s->nconf + 7), sizeof(*kv));
	size_t n = 0;
	for (size_t i = 0; i < s->nconf; i++) {
		const struct conf_entry *e = &s->conf[i];
		if (supervisor_key(e->key) || !strcmp(e->key, "$internal.pipeline.job-id"))
			continue;
		if (l->parallelism_overrides && !strcmp(e->key, PARALLELISM_OVERRIDES))
			continue;
		/* checkpointing off, as flinklet's docs spell it (0): Flink refuses an interval under 10 ms
		 * ("Checkpoint interval must be larger than or equal to 10 ms", every launch), and no interval is its
		 * own "off" */
		if (!strcmp(spec_canonical_key(e->key), "execution.checkpointing.interval") &&
		    spec_duration(s, e->key) == 0)
			continue;
		kv[2 * n] = e->key;
		kv[2 * n++ + 1] = e->value;
	}
	if (l->parallelism_overrides) {
		kv[2 * n] = PARALLELISM_OVERRIDES;
		kv[2 * n++ + 1] = l->parallelism_overrides;
	}
	kv[2 * n] = "$internal.pipeline.job-id";
	kv[2 * n++ + 1] = l->job_id;
	/* the user's io.tmp.dirs (a faster local disk, say) wins; flinklet's own is wiped per launch */
	if (!spec_get(s, "io.tmp.dirs")) {
		kv[2 * n] = "io.tmp.dirs";
		kv[2 * n++ + 1] = l->tmp_dir;
	}
	/* Flink 2.3+ keeps the adaptive scheduler's rescales only when told how many (GET /autoscaler shows them) */
	char history[24];
	int64_t keep = flinkconf_rescale_history_size(s, l->flink_version);
	if (keep > 0 && !spec_get(s, "web.adaptive-scheduler.rescale-history.size")) {
		snprintf(history, sizeof(history), "%lld", (long long)keep);
		kv[2 * n] = "web.adaptive-scheduler.rescale-history.size";
		kv[2 * n++ + 1] = history;
	}
	/* flinklet's loopback Prometheus reporter (flinklet.metrics.flink; the caller leaves it out when the user
	 * configures reporters) */
	char reporter_port[16];
	if (l->metrics_port > 0) {
		snprintf(reporter_port, sizeof(reporter_port), "%d", l->metrics_port);
		kv[2 * n] = "metrics.reporter." FLINKCONF_REPORTER_NAME ".factory.class";
		kv[2 * n++ + 1] = FLINKCONF_REPORTER_FACTORY;
		kv[2 * n] = "metrics.reporter." FLINKCONF_REPORTER_NAME ".port";
		kv[2 * n++ + 1] = reporter_port;
	}
	/* memory tuning's managed memory, where the user set none (the derived default gives way) */
	char *managed = NULL;
	struct membudget tuned;
	if (l->memory && l->memory->managed && s->memory && launch_split(s, l, &tuned) == 0 &&
	    !spec_user_set(s, "taskmanager.memory.managed.size")) {
		managed = membudget_mib(tuned.managed);
		size_t w = 0;
		for (size_t r = 0; r < n; r++)
			if (strcmp(kv[2 * r], "taskmanager.memory.managed.size")) {
				kv[2 * w] = kv[2 * r];
				kv[2 * w++ + 1] = kv[2 * r + 1];
			}
		n = w;
		kv[2 * n] = "taskmanager.memory.managed.size";
		kv[2 * n++ + 1] = managed;
	}
	char *pairs = yaml_string_pairs(kv, n);
	free(managed);
	free(kv);
	char *conf = xasprintf("# Generated by flinklet for one MiniCluster launch; edits are overwritten.\n%s", pairs);
	free(pairs);
	return conf;
}

char *flinkconf_render_log4j(const struct spec *s)
{
	if (s->log4j_console)
		return xstrdup(s->log4j_console);
	return xstrdup("# Generated by flinklet: Flink's console logging, on stdout beside flinklet's own lines.\n"
	               "monitorInterval = 0\n"
	               "rootLogger.level = INFO\n"
	               "rootLogger.appenderRef.console.ref = ConsoleAppender\n"
	               "logger.pekko.name = org.apache.pekko\n"
	               "logger.pekko.level = WARN\n"
	               "logger.netty.name = org.apache.flink.shaded.netty4\n"
	               "logger.netty.level = WARN\n"
	               "logger.zookeeper.name = org.apache.zookeeper\n"
	               "logger.zookeeper.level = WARN\n"
	               /* known noise of a MiniCluster started by Flink's CLI (issue 16): the YARN CLI it does
	                * not have (a ClassNotFoundException stack trace), the CLI's environment and configuration dumps
	                * (about 90 lines per start), a plugins directory it does not need,
	                * the web UI's log file, delegation tokens, the slot manager's multi-line resource dump,
	                * and the sinks' metric-name collisions at every checkpoint */
	               "logger.cli.name = org.apache.flink.client.cli.CliFrontend\n"
	               "logger.cli.level = WARN\n"
	               "logger.cli.filter.yarn.type = RegexFilter\n"
	               "logger.cli.filter.yarn.regex = .*FlinkYarnSessionCli.*\n"
	               "logger.cli.filter.yarn.onMatch = DENY\n"
	               "logger.cli.filter.yarn.onMismatch = NEUTRAL\n"
	               "logger.launcherenv.name = " FLINKCONF_LAUNCHER_CLASS ".environment\n"
	               "logger.launcherenv.level = WARN\n"
	               /* a client that hung up (flinklet's short startup polls run out of time while the REST
	                * server comes up): a "Connection reset" stack trace each, of no use to anyone */
	               "logger.restendpoint.name = org.apache.flink.runtime.dispatcher.DispatcherRestEndpoint\n"
	               "logger.restendpoint.filter.reset.type = RegexFilter\n"
	               "logger.restendpoint.filter.reset.regex = Unhandled exception.*\n"
	               "logger.restendpoint.filter.reset.onMatch = DENY\n"
	               "logger.restendpoint.filter.reset.onMismatch = NEUTRAL\n"
	               "logger.globalconf.name = org.apache.flink.configuration.GlobalConfiguration\n"
	               "logger.globalconf.level = WARN\n"
	               "logger.plugins.name = org.apache.flink.core.plugin.PluginConfig\n"
	               "logger.plugins.level = ERROR\n"
	               "logger.webutils.name = org.apache.flink.runtime.webmonitor.WebMonitorUtils\n"
	               "logger.webutils.level = ERROR\n"
	               "logger.tokens.name = org.apache.flink.runtime.security.token\n"
	               "logger.tokens.level = ERROR\n"
	               "logger.slots.name = org.apache.flink.runtime.resourcemanager.slotmanager\n"
	               "logger.slots.level = WARN\n"
	               "logger.metricnames.name = org.apache.flink.metrics.MetricGroup\n"
	               "logger.metricnames.level = ERROR\n"
	               "appender.console.name = ConsoleAppender\n"
	               "appender.console.type = CONSOLE\n"
	               "appender.console.layout.type = PatternLayout\n"
	               "appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n\n");
}

/* The JVM's side of the memory budget (membudget): every limit the JVM has, sized to fit the pod. */
static void memory_flags(const struct spec *s, const struct launch *l, struct strv *argv)
{
	struct membudget mb;
	if (launch_split(s, l, &mb) < 0 || !mb.budget)
		return;
	strv_push_take(argv, xasprintf("-Xmx%llum", (unsigned long long)(mb.heap >> 20)));
	strv_push_take(argv, xasprintf("-Xms%llum", (unsigned long long)(mb.heap >> 20)));
	strv_push_take(argv, xasprintf("-XX:MaxMetaspaceSize=%llum", (unsigned long long)(mb.metaspace >> 20)));
	strv_push_take(argv, xasprintf("-XX:ReservedCodeCacheSize=%llum", (unsigned long long)(mb.code_cache >> 20)));
	strv_push_take(argv, xasprintf("-XX:MaxDirectMemorySize=%llum", (unsigned long long)(mb.direct >> 20)));
	if (mb.serial_gc)
		strv_push(argv, "-XX:+UseSerialGC");
	if (mb.c1_only)
		strv_push(argv, "-XX:TieredStopAtLevel=1");
}

const char *flinkconf_user_reporter_key(const struct spec *s)
{
	for (size_t i = 0; i < s->nconf; i++)
		if (str_has_prefix(s->conf[i].key, "metrics.reporter.") || !strcmp(s->conf[i].key, "metrics.reporters"))
			return s->conf[i].key;
	return NULL;
}

int flinkconf_rest_port(const struct spec *s)
{
	int64_t p = spec_int(s, "rest.bind-port");
	if (p <= 0)
		p = spec_int(s, "rest.port");
	return p > 0 ? (int)p : 8081;
}

char *flinkconf_rest_url(const struct spec *s)
{
	int port = flinkconf_rest_port(s);
	const char *b = spec_get(s, "rest.bind-address");
	/* a wildcard listens on loopback too; a specific address is the only one that answers */
	if (str_empty(b) || !strcmp(b, "0.0.0.0") || !strcmp(b, "::") || !strcmp(b, "[::]") || !strcmp(b, "*"))
		return xasprintf("http://127.0.0.1:%d", port);
	if (strchr(b, ':') && b[0] != '[')
		return xasprintf("http://[%s]:%d", b, port);
	return xasprintf("http://%s:%d", b, port);
}

static void split_words(const char *s, struct strv *out)
{
	const char *p = s;
	while (p && *p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		const char *start = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		if (p > start)
			strv_push_take(out, xstrndup(start, (size_t)(p - start)));
	}
}

void flinkconf_build_argv(const struct spec *s, const struct launch *l, struct strv *argv)
{
	strv_push(argv, l->java);
	strv_push(argv, "-XX:+IgnoreUnrecognizedVMOptions");
	strv_push(argv, "-XX:+ExitOnOutOfMemoryError");
	memory_flags(s, l, argv);
	if (s->cpu > 0) {
		double c = ceil(s->cpu);
		strv_push_take(argv, xasprintf("-XX:ActiveProcessorCount=%d", c < 1 ? 1 : (int)c));
	}
	for (size_t i = 0; java17_flags[i]; i++)
		strv_push(argv, java17_flags[i]);
	strv_push_take(argv, xasprintf("-Dlog4j.configurationFile=file:%s/log4j-console.properties", l->conf_dir));
	strv_push_take(argv, xasprintf("-Djava.io.tmpdir=%s", l->tmp_dir));
	strv_push_take(argv, xasprintf("-Dflinklet.job=%s", s->name));
	cds_jvm_options(l->cds_archive, l->cds_record, argv);
	if (l->crash_dir)
		crashlogs_jvm_options(l->crash_dir, argv); /* before the user's: a -XX:ErrorFile of theirs wins */
	split_words(spec_get(s, "flinklet.jvm.options"), argv);

	strv_push(argv, "-cp");
	strv_push_take(argv, path_join(spec_get(s, "flinklet.flink.home"), "lib/*"));
	strv_push(argv, l->launcher ? FLINKCONF_LAUNCHER_CLASS : FLINK_CLI_CLASS);
	strv_push(argv, "run");
	strv_push(argv, "-t");
	strv_push(argv, "local");
	if (l->restore_path) {
		/* -D cannot set the claim mode: the CLI rewrites it from these flags */
		strv_push(argv, "-s");
		strv_push(argv, l->restore_path);
		strv_push(argv, "-cm");
		strv_push(argv, l->restore_claim ? "claim" : l->restore_legacy ? "legacy" : "no_claim");
		if (s->job.allow_non_restored_state)
			strv_push(argv, "-n");
	}
	if (s->job.entry_class) {
		strv_push(argv, "-c");
		strv_push(argv, s->job.entry_class);
	}
	char *jar = l->jar_path ? xstrdup(l->jar_path) : local_path_from_uri(s->job.jar_uri);
	strv_push_take(argv, jar ? jar : xstrdup(s->job.jar_uri));
	/* a SQL script job: the runner's arguments */
	config_sql_runner_args(s, l->conf_dir, l->sql_path, l->sql_sha256, argv);
	for (size_t i = 0; i < s->job.args.n; i++)
		strv_push(argv, s->job.args.v[i]);
}

void flinkconf_build_standby_argv(const struct spec *s, const struct launch *l, const char *dir, struct strv *argv)
{
	struct strv full = {0};
	flinkconf_build_argv(s, l, &full);
	for (size_t i = 0; i < full.n; i++) {
		strv_push(argv, full.v[i]);
		if (!strcmp(full.v[i], FLINKCONF_LAUNCHER_CLASS))
			break;
	}
	strv_free(&full);
	strv_push(argv, FLINKCONF_STANDBY_ARG);
	if (dir)
		strv_push(argv, dir);
}

void flinkconf_fingerprint_launch(struct launch *l, const char *conf_dir, const char *tmp_dir, const char *java,
                                  const char *flink_version)
{
	*l = (struct launch){
	    .job_id = "00000000000000000000000000000000",
	    .conf_dir = conf_dir,
	    .tmp_dir = tmp_dir,
	    .java = java,
	    .flink_version = flink_version,
	};
}

char *flinkconf_fingerprint(const struct spec *s, const struct spec *conf, const struct launch *l, const char *until)
{
	char *yaml = flinkconf_render_config(conf, l);
	char *log4j = flinkconf_render_log4j(s);
	struct strv argv = {0};
	flinkconf_build_argv(s, l, &argv);
	struct strbuf b = {0};
	strbuf_append(&b, yaml);
	strbuf_append(&b, "\n--\n");
	strbuf_append(&b, log4j);
	strbuf_append(&b, "\n--\n");
	for (size_t i = 0; i < argv.n; i++) {
		strbuf_append(&b, argv.v[i]);
		strbuf_append(&b, "\n");
		if (until && !strcmp(argv.v[i], until))
			break;
	}
	free(yaml);
	free(log4j);
	strv_free(&argv);
	return strbuf_steal(&b);
}

void flinkconf_build_envp(const struct spec *s, const struct launch *l, char *const *environ_in, struct strv *envp)
{
	for (size_t i = 0; environ_in && environ_in[i]; i++) {
		const char *e = environ_in[i];
		if (str_has_prefix(e, "FLINK_CONF_DIR=") || str_has_prefix(e, "FLINK_HOME=") ||
		    str_has_prefix(e, "FLINK_LIB_DIR=") || str_has_prefix(e, "FLINK_OPT_DIR=") ||
		    str_has_prefix(e, "FLINK_PLUGINS_DIR=") || str_has_prefix(e, "FLINK_BIN_DIR=") ||
		    str_has_prefix(e, "NOTIFY_SOCKET=") || str_has_prefix(e, "FLINKLET_"))
			continue;
		strv_push(envp, e);
	}
	/* glibc's malloc keeps up to 8 arenas per CPU, one per thread that allocates: the JVM's many threads
	 * inflate its resident memory by tens of MiB. Two are enough (the JVM allocates its heap itself). */
	bool arenas = false;
	for (size_t i = 0; environ_in && environ_in[i]; i++)
		arenas = arenas || str_has_prefix(environ_in[i], "MALLOC_ARENA_MAX=");
	if (!arenas)
		strv_push(envp, "MALLOC_ARENA_MAX=2");
	const char *home = spec_get(s, "flinklet.flink.home");
	strv_push_take(envp, xasprintf("FLINK_CONF_DIR=%s", l->conf_dir));
	strv_push_take(envp, xasprintf("FLINK_HOME=%s", home));
	strv_push_take(envp, xasprintf("FLINK_LIB_DIR=%s/lib", home));
	strv_push_take(envp, xasprintf("FLINK_PLUGINS_DIR=%s/plugins", home));
	/* what bin/config.sh sets besides: Flink's CLI finds opt/flink-python*.jar through FLINK_OPT_DIR for a
	 * PythonDriver entry class or -py (PackagedProgramUtils.getPythonJar), and PyFlink its bin/ scripts */
	strv_push_take(envp, xasprintf("FLINK_OPT_DIR=%s/opt", home));
	strv_push_take(envp, xasprintf("FLINK_BIN_DIR=%s/bin", home));
	/* PyFlink runs a Python job's UDFs in the script's own process (a "loopback" server) when the execution
	 * target is local, as `run -t local` makes it; the script ends once it has submitted the job, and the UDFs'
	 * workers with it. Process mode is what a cluster (the operator's application mode) does: each task starts
	 * python.executable. PyFlink reads it from the environment, which the script's process inherits. */
	bool mode = false;
	for (size_t i = 0; environ_in && environ_in[i]; i++)
		mode = mode || str_has_prefix(environ_in[i], "_python_worker_execution_mode=");
	if (flink_python_entry(s->job.entry_class) && !mode)
		strv_push(envp, "_python_worker_execution_mode=process");
}

bool flink_python_entry(const char *entry_class)
{
	return entry_class && (!strcmp(entry_class, "org.apache.flink.client.python.PythonDriver") ||
	                       !strcmp(entry_class, "org.apache.flink.client.python.PythonGatewayServer"));
}

int flink_detect_version(const char *lib_dir, char **ret)
{
	static const char *const prefixes[] = {"flink-dist-", "flink-dist_2.12-", "flink-clients-", "flink-runtime-",
	                                       NULL};
	DIR *dir = opendir(lib_dir);
	if (!dir)
		return -errno;
	char *found = NULL;
	int rank = 99;
	struct dirent *de;
	while ((de = readdir(dir))) {
		size_t n = strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 4, ".jar"))
			continue;
		for (int i = 0; prefixes[i]; i++) {
			size_t pl = strlen(prefixes[i]);
			if (strncmp(de->d_name, prefixes[i], pl) || n - 4 <= pl || i >= rank)
				continue;
			const char *v = de->d_name + pl;
			if (*v < '0' || *v > '9')
				continue;
			free(found);
			found = xstrndup(v, n - 4 - pl);
			rank = i;
		}
	}
	closedir(dir);
	if (!found)
		return -ENOENT;
	*ret = found;
	return 0;
}

const char *flink_version_label(const char *version)
{
	static const char *const map[][2] = {
	    {"1.20.", "v1_20"}, {"2.0.", "v2_0"}, {"2.1.", "v2_1"}, {"2.2.", "v2_2"}, {"2.3.", "v2_3"},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (str_has_prefix(version, map[i][0]))
			return map[i][1];
	return NULL;
}

bool flink_has_rescale_history(const char *version)
{
	unsigned major = 0, minor = 0;
	if (!version || sscanf(version, "%u.%u", &major, &minor) < 2)
		return false;
	return major > 2 || (major == 2 && minor >= 3);
}

int64_t flinkconf_rescale_history_size(const struct spec *s, const char *version)
{
	if (!flink_has_rescale_history(version))
		return 0;
	const char *set = spec_get(s, "web.adaptive-scheduler.rescale-history.size");
	int64_t v = 0;
	if (set)
		return parse_int64(set, &v) == 0 && v > 0 ? v : 0;
	const char *scheduler = spec_get(s, "jobmanager.scheduler");
	return scheduler && !strcasecmp(scheduler, "adaptive") ? RESCALE_HISTORY_DEFAULT : 0;
}

/* ---- what a launch says of the job ---- */

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether a line of the launch's configuration ("key": "value") only says where the JVM listens or keeps scratch
 * files: no part of what the job computes (a restart on another port does not make a finished job a new one). */
static bool endpoint_line(const char *line)
{
	static const char *const keys[] = {"\"rest.port\":",
	                                   "\"rest.bind-port\":",
	                                   "\"rest.address\":",
	                                   "\"rest.bind-address\":",
	                                   "\"jobmanager.bind-host\":",
	                                   "\"taskmanager.bind-host\":",
	                                   "\"io.tmp.dirs\":",
	                                   NULL};
	for (size_t i = 0; keys[i]; i++)
		if (str_has_prefix(line, keys[i]))
			return true;
	return str_has_prefix(line, "\"web.") || str_has_prefix(line, "\"metrics.reporter.");
}

void flinkconf_job_digest(const char *fp, char hex[65])
{
	const char *end = strstr(fp, "\n--\n");
	size_t conf_len = end ? (size_t)(end - fp) : strlen(fp);
	char *conf = xstrndup(fp, conf_len);
	struct strv lines = {0};
	for (char *save = NULL, *l = strtok_r(conf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!endpoint_line(l))
			strv_push(&lines, l);
	if (lines.n > 1)
		qsort(lines.v, lines.n, sizeof(*lines.v), cmp_line);
	struct strbuf b = {0};
	for (size_t i = 0; i < lines.n; i++) {
		strbuf_append(&b, lines.v[i]);
		strbuf_append(&b, "\n");
	}
	strbuf_append(&b, fp + conf_len);
	char *all = strbuf_steal(&b);
	sha256_hex(all, strlen(all), hex);
	free(all);
	strv_free(&lines);
	free(conf);
}

/* config_check: from the command line to a validated spec with every default filled in (see
 * src/config/config.h): reads the file or builds the quick-mode spec, applies --jar/--class/-D/--state-dir
 * overrides, checks the flinklet.* options, the operator options flinklet honours and the Flink options
 * flinklet depends on, and inserts the Flink settings flinklet derives (snapshot directories under the
 * state directory, retention, REST port, slots, parallelism, every listener on loopback, the Flink side of
 * the memory budget: membudget). The warnings about valid settings are config_warn's. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>

#include "autoscaler.h"
#include "config.h"
#include "config_sql.h"
#include "http.h"
#include "membudget.h"
#include "redact.h"
#include "scratch.h"
#include "schemes.h"

static void check_option(struct spec *s, struct conf_entry *e, const struct option_def *o, struct diags *d)
{
	char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
	const char *v = e->value;
	usec_t us;
	int64_t i;
	bool b;
	uint64_t bytes;
	switch (o->type) {
	case OPT_STRING:
		break;
	case OPT_PATH:
		if (str_empty(v))
			diags_add(d, &e->loc, field, "must be a non-empty path");
		break;
	case OPT_DURATION:
		if (parse_duration(v, &us) < 0)
			diags_add(d, &e->loc, field, "must be a duration such as 10 s, 500 ms or 2 min (got \"%s\")",
			          v);
		else if (o->min > 0 && us < (usec_t)o->min * USEC_PER_MSEC)
			diags_add(d, &e->loc, field, "must be at least %lld %s (got \"%s\")",
			          (long long)(o->min % 1000 ? o->min : o->min / 1000), o->min % 1000 ? "ms" : "s", v);
		break;
	case OPT_INT:
		if (parse_int64(v, &i) < 0)
			diags_add(d, &e->loc, field, "must be an integer (got \"%s\")", v);
		else if (i < o->min || i > o->max)
			diags_add(d, &e->loc, field, "must be between %lld and %lld (got %lld)", (long long)o->min,
			          (long long)o->max, (long long)i);
		break;
	case OPT_BOOL:
		if (parse_bool(v, &b) < 0)
			diags_add(d, &e->loc, field, "must be true or false (got \"%s\")", v);
		break;
	case OPT_MEMORY:
		if (parse_memory(v, &bytes) < 0)
			diags_add(d, &e->loc, field, "must be a memory size such as 512m or 1g (got \"%s\")", v);
		else if (o->min > 0 && bytes < (uint64_t)o->min)
			diags_add(d, &e->loc, field, "must be at least %lld byte%s (got \"%s\")", (long long)o->min,
			          o->min == 1 ? "" : "s", v);
		break;
	case OPT_ENUM: {
		bool found = false;
		const char *p = o->enum_values;
		size_t n = strlen(v);
		while (p && *p) {
			const char *c = strchr(p, ',');
			size_t len = c ? (size_t)(c - p) : strlen(p);
			if (len == n && !strncmp(p, v, n))
				found = true;
			p = c ? c + 1 : NULL;
		}
		if (!found)
			diags_add(d, &e->loc, field, "must be one of %s (got \"%s\")", o->enum_values, v);
		break;
	}
	case OPT_HOSTPORT: {
		if (!strcmp(v, "off"))
			break;
		struct sockaddr_storage sa;
		socklen_t len;
		if (http_parse_address(v, &sa, &len) < 0)
			diags_add(d, &e->loc, field,
			          "must be host:port such as 0.0.0.0:8091 or [::]:8091, the host an IPv4 address, "
			          "localhost or an IPv6 address in brackets (got \"%s\")",
			          v);
		break;
	}
	}
	(void)s;
	free(field);
}

static void check_int_key(struct spec *s, const char *key, int64_t min, int64_t max, struct diags *d)
{
	for (size_t k = 0; k < s->nconf; k++) {
		struct conf_entry *e = &s->conf[k];
		if (strcmp(e->key, key))
			continue;
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		int64_t v;
		if (parse_int64(e->value, &v) < 0)
			diags_add(d, &e->loc, field, "must be an integer (got \"%s\")", e->value);
		else if (v < min || v > max)
			diags_add(d, &e->loc, field, "must be between %lld and %lld (got %lld)", (long long)min,
			          (long long)max, (long long)v);
		free(field);
	}
}

static const struct conf_entry *find_any(const struct spec *s, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++)
		for (size_t k = 0; k < s->nconf; k++)
			if (!strcmp(s->conf[k].key, keys[i]))
				return &s->conf[k];
	return NULL;
}

static void reject_key(struct spec *s, const char *key, const char *why, struct diags *d)
{
	for (size_t k = 0; k < s->nconf; k++)
		if (!strcmp(s->conf[k].key, key) && s->conf[k].origin != ORIGIN_DEFAULT) {
			char *field = xasprintf("spec.flinkConfiguration.%s", key);
			diags_add(d, &s->conf[k].loc, field, "%s", why);
			free(field);
		}
}

/* A snapshot directory must be on the local volume: flinklet finds restore points by reading it. */
static void check_local_dir(struct spec *s, const char *const *keys, struct diags *d)
{
	const struct conf_entry *e = find_any(s, keys);
	if (!e || e->origin == ORIGIN_DEFAULT)
		return;
	char *p = local_path_from_uri(e->value);
	if (!p || str_has_prefix(e->value, "local://")) {
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		diags_add(
		    d, &e->loc, field,
		    "must be an absolute local path or file:// URI on the state volume (got \"%s\"); flinklet finds "
		    "restore points by reading this directory",
		    e->value);
		free(field);
	}
	free(p);
}

static void check_flinklet_keys(struct spec *s, struct diags *d)
{
	static const char *names[64];
	size_t n = 0;
	for (const struct option_def *o = flinklet_options; o->key && n < 64; o++)
		if (str_has_prefix(o->key, "flinklet."))
			names[n++] = o->key;

	for (size_t k = 0; k < s->nconf; k++) {
		struct conf_entry *e = &s->conf[k];
		const struct option_def *o = option_find(e->key);
		if (o) {
			check_option(s, e, o, d);
			continue;
		}
		if (!str_has_prefix(e->key, "flinklet."))
			continue;
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		const char *best = did_you_mean(e->key, names, n);
		if (best)
			diags_add(d, &e->loc, field, "unknown flinklet option (did you mean \"%s\"?)", best);
		else
			diags_add(d, &e->loc, field, "unknown flinklet option (see docs/configuration.md)");
		free(field);
	}
}

static void check_flink_keys(struct spec *s, struct diags *d)
{
	reject_key(s, "$internal.pipeline.job-id", "is managed by flinklet (the job id is kept in the state directory)",
	           d);
	reject_key(s, "execution.state-recovery.path", "is chosen by flinklet; use spec.job.initialSavepointPath", d);
	reject_key(s, "execution.savepoint.path", "is chosen by flinklet; use spec.job.initialSavepointPath", d);
	reject_key(s, "execution.state-recovery.claim-mode",
	           "is chosen by flinklet for each restore (claim for its own checkpoints, no_claim for savepoints)",
	           d);
	reject_key(s, "execution.savepoint-restore-mode",
	           "is chosen by flinklet for each restore (claim for its own checkpoints, no_claim for savepoints)",
	           d);
	reject_key(s, "execution.shutdown-on-attached-exit",
	           "must not be set: it cancels the job on SIGTERM and can delete its checkpoints", d);

	const char *target = spec_get(s, "execution.target");
	if (target && strcmp(target, "local")) {
		const struct conf_entry *e = find_any(s, (const char *const[]){"execution.target", NULL});
		diags_add(d, &e->loc, "spec.flinkConfiguration.execution.target",
		          "must be local: flinklet runs the job in a MiniCluster (got \"%s\")", target);
	}
	const char *ret = spec_get(s, "execution.checkpointing.externalized-checkpoint-retention");
	if (ret && strcmp(ret, "RETAIN_ON_CANCELLATION")) {
		const struct conf_entry *e = find_any(
		    s, (const char *const[]){"execution.checkpointing.externalized-checkpoint-retention", NULL});
		diags_add(
		    d, &e->loc, "spec.flinkConfiguration.execution.checkpointing.externalized-checkpoint-retention",
		    "must be RETAIN_ON_CANCELLATION: flinklet restores from retained checkpoints (got \"%s\")", ret);
	}
	check_int_key(s, "execution.checkpointing.num-retained", 2, 1000, d);
	check_int_key(s, "state.checkpoints.num-retained", 2, 1000, d);
	check_int_key(s, "rest.port", 1, 65535, d);
	check_int_key(s, "web.port", 1, 65535, d);
	check_int_key(s, "rest.bind-port", 1, 65535, d);
	check_int_key(s, "taskmanager.numberOfTaskSlots", 1, 32768, d);
	check_int_key(s, "parallelism.default", 1, 32768, d);
	/* Flink 2.3+ (an int there; 0 or less keeps none); older versions do not know it */
	check_int_key(s, "web.adaptive-scheduler.rescale-history.size", INT32_MIN, INT32_MAX, d);

	static const char *const duration_keys[] = {"execution.checkpointing.interval",
	                                            "execution.checkpointing.timeout",
	                                            "execution.checkpointing.min-pause", NULL};
	for (size_t i = 0; duration_keys[i]; i++) {
		const struct conf_entry *e = find_any(s, (const char *const[]){duration_keys[i], NULL});
		usec_t us;
		if (e && parse_duration(e->value, &us) < 0) {
			char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
			diags_add(d, &e->loc, field, "must be a duration such as 10 s, 500 ms or 2 min (got \"%s\")",
			          e->value);
			free(field);
		}
	}
	const char *backend = spec_get(s, "state.backend.type");
	if (backend && strcasecmp(backend, "hashmap") && strcasecmp(backend, "rocksdb") &&
	    strcasecmp(backend, "forst") && !strchr(backend, '.')) {
		const struct conf_entry *e =
		    find_any(s, (const char *const[]){"state.backend.type", "state.backend", NULL});
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		diags_add(d, &e->loc, field, "must be hashmap, rocksdb, forst or a factory class name (got \"%s\")",
		          backend);
		free(field);
	}
	check_local_dir(s,
	                (const char *const[]){"execution.checkpointing.dir", "state.checkpoints.dir",
	                                      "state.backend.fs.checkpointdir", NULL},
	                d);
	check_local_dir(s,
	                (const char *const[]){"execution.checkpointing.savepoint-dir", "state.savepoints.dir",
	                                      "savepoints.state.backend.fs.dir", NULL},
	                d);
}

static void check_checksum(struct spec *s, struct diags *d)
{
	for (size_t k = 0; k < s->nconf; k++) {
		struct conf_entry *e = &s->conf[k];
		if (strcmp(e->key, "flinklet.job.jar.sha256") && strcmp(e->key, "flinklet.job.sql-script.sha256"))
			continue;
		bool ok = strlen(e->value) == 64;
		for (size_t i = 0; ok && i < 64; i++)
			ok = isxdigit((unsigned char)e->value[i]) != 0;
		if (ok)
			continue;
		char *field = xasprintf("spec.flinkConfiguration.%s", e->key);
		diags_add(d, &e->loc, field, "must be a sha256 of 64 hex digits (got \"%s\")", e->value);
		free(field);
	}
}

/* The remote jars flinklet may download: schemes it knows, and an S3 endpoint over one of them. */
static void check_artifacts(struct spec *s, struct diags *d)
{
	for (size_t k = 0; k < s->nconf; k++) {
		struct conf_entry *e = &s->conf[k];
		if (!strcmp(e->key, "flinklet.artifacts.allowed-schemes")) {
			char *bad = artifact_schemes_unknown(e->value);
			if (bad)
				diags_add(
				    d, &e->loc, "spec.flinkConfiguration.flinklet.artifacts.allowed-schemes",
				    "\"%s\" is not a scheme flinklet downloads: list https, s3 or http (local:// and "
				    "file:// jars are not downloaded and need no entry) (got \"%s\")",
				    bad, e->value);
			free(bad);
		} else if (!strcmp(e->key, "flinklet.artifacts.s3.endpoint") && !str_empty(e->value)) {
			bool http = artifact_scheme_listed(artifact_allowed_schemes(s), "http");
			if (!str_has_prefix(e->value, "https://") && !(http && str_has_prefix(e->value, "http://"))) {
				char *shown = redact_uri(e->value);
				diags_add(
				    d, &e->loc, "spec.flinkConfiguration.flinklet.artifacts.s3.endpoint",
				    "must be https://host:port%s (got \"%s\")",
				    http ? " or http://host:port"
				         : " (http://host:port when flinklet.artifacts.allowed-schemes lists http)",
				    shown);
				free(shown);
			}
		}
	}
}

static void check_job(struct spec *s, struct diags *d)
{
	struct loc whole = {s->file, 0, 0};
	if (!s->name)
		diags_add(d, &whole, "metadata.name", "required");
	if (!s->job.jar_uri && !config_sql_job(s)) {
		diags_add(d, &whole, "spec.job.jarURI",
		          "required (the job's jar: local:///path/job.jar), or a SQL script: spec.job.sqlScript or "
		          "spec.job.sql");
	} else if (s->job.jar_uri) {
		char *p = local_path_from_uri(s->job.jar_uri);
		const char *scheme = p ? NULL : artifact_remote_scheme(s->job.jar_uri);
		const struct loc *at = s->job.jar_uri_loc.file ? &s->job.jar_uri_loc : &whole;
		if (!p && !scheme) {
			char *shown = redact_uri(s->job.jar_uri);
			diags_add(
			    d, at, "spec.job.jarURI",
			    "must be local:///path, file:///path, an absolute path, https://..., s3://bucket/key or "
			    "http://... (got \"%s\")",
			    shown);
			free(shown);
		} else if (scheme && !artifact_scheme_listed(artifact_allowed_schemes(s), scheme)) {
			char *shown = redact_uri(s->job.jar_uri);
			diags_add(
			    d, at, "spec.job.jarURI",
			    "the scheme %s is not in flinklet.artifacts.allowed-schemes (\"%s\"): list it there to "
			    "download jars over it (got \"%s\")",
			    scheme, artifact_allowed_schemes(s), shown);
			free(shown);
		}
		free(p);
	}
	if (s->job.entry_class && !*s->job.entry_class)
		diags_add(d, s->job.entry_class_loc.file ? &s->job.entry_class_loc : &whole, "spec.job.entryClass",
		          "must not be empty");
	if (s->job.initial_savepoint_path) {
		char *p = local_path_from_uri(s->job.initial_savepoint_path);
		if (!p)
			diags_add(d, s->job.initial_savepoint_loc.file ? &s->job.initial_savepoint_loc : &whole,
			          "spec.job.initialSavepointPath",
			          "must be an absolute local path or file:// URI (got \"%s\")",
			          s->job.initial_savepoint_path);
		free(p);
	}
}

static char *absolute_path(const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		return xstrdup(p);
	return path_join(cwd, p);
}

static void set_default(struct spec *s, const char *key, const char *value)
{
	if (!spec_get(s, key))
		spec_set(s, key, value, ORIGIN_DEFAULT, NULL);
}

/* spec.resources.memory is the whole pod's budget: the Flink side of its split (managed memory, network
 * buffers) goes into the Flink configuration, where the user's own values win; the JVM side is flinkconf's. */
static void derive_memory(struct spec *s, struct diags *d)
{
	struct membudget mb;
	if (membudget_compute(s, &mb, d) < 0 || !mb.budget)
		return;
	char *managed = membudget_mib(mb.managed), *network = membudget_mib(mb.network);
	set_default(s, "taskmanager.memory.managed.size", managed);
	if (!spec_get(s, "taskmanager.memory.network.min") && !spec_get(s, "taskmanager.memory.network.max")) {
		set_default(s, "taskmanager.memory.network.min", network);
		set_default(s, "taskmanager.memory.network.max", network);
	}
	free(managed);
	free(network);
}

/* What the document may leave out of a spec: its apiVersion and kind. */
static void fill_identity(struct spec *s)
{
	if (!s->api_version)
		s->api_version = xstrdup("flink.apache.org/v1beta1");
	if (!s->kind)
		s->kind = xstrdup("FlinkMiniCluster");
}

/* The autoscaler rescales in place: a scheduler other than the adaptive one cannot. */
static void check_autoscaler_scheduler(struct spec *s, struct diags *d)
{
	if (!spec_bool(s, "job.autoscaler.enabled"))
		return;
	const char *sched = spec_get(s, "jobmanager.scheduler");
	if (sched && strcasecmp(sched, "adaptive")) {
		const struct conf_entry *e = find_any(s, (const char *const[]){"jobmanager.scheduler", NULL});
		diags_add(d, &e->loc, "spec.flinkConfiguration.jobmanager.scheduler",
		          "must be adaptive while job.autoscaler.enabled is true: flinklet rescales in place "
		          "through the adaptive scheduler (got \"%s\")",
		          sched);
	}
}

/* Every check of the spec as given, each adding its diagnostics. */
static void check_spec(struct spec *s, struct diags *d)
{
	config_sql_check(s, d);
	check_job(s, d);
	check_artifacts(s, d);
	check_checksum(s, d);
	check_flinklet_keys(s, d);
	check_flink_keys(s, d);
	autoscaler_validate(s, d);
	check_autoscaler_scheduler(s, d);
}

/* flinklet's own defaults: the option table's, Flink's home and the java binary from the environment. */
static void set_flinklet_defaults(struct spec *s)
{
	for (const struct option_def *o = flinklet_options; o->key; o++)
		if (o->def)
			set_default(s, o->key, o->def);
	const char *fh = getenv("FLINK_HOME");
	set_default(s, "flinklet.flink.home", !str_empty(fh) ? fh : "/opt/flink");
	const char *jh = getenv("JAVA_HOME");
	char *java = !str_empty(jh) ? path_join(jh, "bin/java") : xstrdup("java");
	set_default(s, "flinklet.java.bin", java);
	free(java);
}

/* Paths made absolute: Flink needs absolute file URIs. */
static void absolutize_paths(struct spec *s)
{
	static const char *const path_keys[] = {"flinklet.state.dir", "flinklet.flink.home", "flinklet.scratch.dir",
	                                        NULL};
	for (size_t i = 0; path_keys[i]; i++) {
		struct conf_entry *e = NULL;
		for (size_t k = 0; k < s->nconf; k++)
			if (!strcmp(s->conf[k].key, path_keys[i]))
				e = &s->conf[k];
		if (e && e->value[0] != '/') {
			char *abs = absolute_path(e->value);
			free(e->value);
			e->value = abs;
		}
	}
}

/* The job's parallelism: spec.job.parallelism, else parallelism.default, else 1; num gets it as text. */
static void settle_parallelism(struct spec *s, char num[32])
{
	if (s->job.parallelism <= 0) {
		int64_t p = spec_int(s, "parallelism.default");
		s->job.parallelism = p > 0 ? p : 1;
	}
	snprintf(num, 32, "%lld", (long long)s->job.parallelism);
	spec_set(s, "parallelism.default", num, ORIGIN_DEFAULT, NULL);
}

/* The JVM's scratch space: local, one per deployment (src/base/scratch.c). */
static void set_scratch_default(struct spec *s)
{
	char *scratch = scratch_default_dir(s->name ? s->name : "job", spec_get(s, "flinklet.state.dir"));
	set_default(s, "flinklet.scratch.dir", scratch);
	free(scratch);
}

/* The snapshot directories under the state directory, their retention, the REST port, and every listener of the
 * JVM on loopback unless the user says otherwise (docs/operations.md, Security): the REST API and web UI, the BLOB
 * server (jobmanager.bind-host), and what binds taskmanager.bind-host (collect sinks; shuffle and RPC once there
 * are several TaskManagers). The MiniCluster's RPC is local. */
static void derive_snapshots_and_listeners(struct spec *s)
{
	const char *state = spec_get(s, "flinklet.state.dir");
	char *ckpt = path_join(state, "checkpoints"), *sp = path_join(state, "savepoints");
	char *ckpt_uri = file_uri_from_path(ckpt), *sp_uri = file_uri_from_path(sp);
	set_default(s, "execution.target", "local");
	if (!spec_get(s, "rest.bind-port"))
		set_default(s, "rest.port", "8081");
	set_default(s, "execution.checkpointing.dir", ckpt_uri);
	set_default(s, "execution.checkpointing.savepoint-dir", sp_uri);
	set_default(s, "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
	set_default(s, "execution.checkpointing.num-retained", "2");
	set_default(s, "execution.checkpointing.interval", "30 s");
	set_default(s, "rest.bind-address", "127.0.0.1");
	set_default(s, "rest.address", "127.0.0.1");
	set_default(s, "jobmanager.bind-host", "127.0.0.1");
	set_default(s, "taskmanager.bind-host", "127.0.0.1");
	set_default(s, "web.submit.enable", "false");
	set_default(s, "web.cancel.enable", "false");
	/* web.refresh-interval is left at Flink's default (3 s): the supervisor reads a starting job's state from
	 * GET /jobs/overview, which Flink does not cache (sup_poll.c). At 200 ms the autoscaler found no
	 * busyTimeMsPerSecond for minutes (test_autoscaler, 3 runs of 4). */
	free(ckpt);
	free(sp);
	free(ckpt_uri);
	free(sp_uri);
}

/* The task slots: with the autoscaler, the adaptive scheduler and as many slots as it may use,
 * max(parallelism, min(vertex.max-parallelism, 2 x CPUs)) (in-place rescaling needs spare ones); else the
 * parallelism (num). */
static void derive_slots(struct spec *s, const char *num)
{
	if (spec_bool(s, "job.autoscaler.enabled")) {
		set_default(s, "jobmanager.scheduler", "adaptive");
		struct as_options o;
		as_options_from_spec(s, &o);
		long cpus = s->cpu > 0 ? (long)ceil(s->cpu) : sysconf(_SC_NPROCESSORS_ONLN);
		int64_t want = 2 * (cpus > 0 ? cpus : 1);
		if (want > o.vertex_max_parallelism)
			want = o.vertex_max_parallelism;
		if (want < s->job.parallelism)
			want = s->job.parallelism;
		as_options_free(&o);
		char slots[32];
		snprintf(slots, sizeof(slots), "%lld", (long long)want);
		set_default(s, "taskmanager.numberOfTaskSlots", slots);
	}
	set_default(s, "taskmanager.numberOfTaskSlots", num);
}

static void check_slots(struct spec *s, struct diags *d)
{
	int64_t slots = spec_int(s, "taskmanager.numberOfTaskSlots");
	if (slots < s->job.parallelism) {
		const struct conf_entry *e = find_any(s, (const char *const[]){"taskmanager.numberOfTaskSlots", NULL});
		diags_add(d, &e->loc, "spec.flinkConfiguration.taskmanager.numberOfTaskSlots",
		          "must be at least the job's parallelism %lld (got %lld)", (long long)s->job.parallelism,
		          (long long)slots);
	}
}

int config_finalize(struct spec *s, struct diags *d)
{
	size_t before = d->msgs.n;
	fill_identity(s);
	check_spec(s, d);
	if (d->msgs.n > before)
		return -EINVAL;
	set_flinklet_defaults(s);
	absolutize_paths(s);
	config_sql_defaults(s); /* a SQL script's jarURI is under the (now absolute) Flink home */
	char num[32];
	settle_parallelism(s, num);
	set_scratch_default(s);
	derive_snapshots_and_listeners(s);
	derive_slots(s, num);
	check_slots(s, d);
	if (d->msgs.n > before)
		return -EINVAL;
	derive_memory(s, d);
	return d->msgs.n > before ? -EINVAL : 0;
}

/* ---- loading ---- */

static int read_document(const char *path, char **ret, size_t *ret_len, struct diags *d)
{
	struct loc l = {path, 0, 0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		diags_add(d, &l, NULL, "cannot open the configuration file: %s", strerror(errno));
		return -errno;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		diags_add(d, &l, NULL, "not a regular file");
		close(fd);
		return -EINVAL;
	}
	if (st.st_size > (1 << 20)) {
		diags_add(d, &l, NULL, "document too large (%lld bytes, at most 1 MiB)", (long long)st.st_size);
		close(fd);
		return -EFBIG;
	}
	struct strbuf b = {0};
	char chunk[8192];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			diags_add(d, &l, NULL, "cannot read the configuration file: %s", strerror(errno));
			strbuf_free(&b);
			close(fd);
			return -EIO;
		}
		if (n == 0)
			break;
		strbuf_appendn(&b, chunk, (size_t)n);
		if (b.len > (1 << 20)) {
			diags_add(d, &l, NULL, "document too large (at most 1 MiB)");
			strbuf_free(&b);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	*ret_len = b.len;
	*ret = strbuf_steal(&b);
	return 0;
}

/* A DNS-1123 label from a jar file name: "Clicks_Job-1.4.jar" -> "clicks-job-1-4". */
static char *name_from_jar(const char *jar)
{
	const char *base = strrchr(jar, '/');
	base = base ? base + 1 : jar;
	size_t n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".jar"))
		n -= 4;
	struct strbuf b = {0};
	for (size_t i = 0; i < n && b.len < 63; i++) {
		char c = (char)tolower((unsigned char)base[i]);
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			strbuf_appendn(&b, &c, 1);
		else if (b.len && b.buf[b.len - 1] != '-')
			strbuf_append(&b, "-");
	}
	while (b.len && b.buf[b.len - 1] == '-')
		b.buf[--b.len] = '\0';
	if (!b.len)
		strbuf_append(&b, "flinklet-job");
	return strbuf_steal(&b);
}

const char *config_resolve_path(const struct config_args *a)
{
	if (a->file)
		return a->file;
	if (!str_empty(getenv("FLINKLET_CONFIG")))
		return getenv("FLINKLET_CONFIG");
	if (!a->jar && access(FLINKLET_DEFAULT_CONFIG, F_OK) == 0)
		return FLINKLET_DEFAULT_CONFIG;
	return NULL;
}

int config_load(const struct config_args *a, struct spec *ret, struct diags *d)
{
	size_t before = d->msgs.n;
	const char *file = config_resolve_path(a);
	if (!file && !a->jar) {
		struct loc l = {"flinklet", 0, 0};
		diags_add(d, &l, NULL,
		          "no configuration: give -c FILE, set $FLINKLET_CONFIG, create %s, or run a jar directly with "
		          "--jar PATH [--class NAME]",
		          FLINKLET_DEFAULT_CONFIG);
		memset(ret, 0, sizeof(*ret));
		return -EINVAL;
	}

	if (file) {
		char *text = NULL;
		size_t len = 0;
		int r = read_document(file, &text, &len, d);
		if (r < 0) {
			memset(ret, 0, sizeof(*ret));
			ret->file = xstrdup(file);
			return -EINVAL;
		}
		r = config_parse(file, text, len, ret, d);
		free(text);
		if (r < 0)
			return r;
	} else {
		config_parse("<command line>", "{}", 2, ret, d);
	}

	struct loc cli = {"command line", 0, 0};
	if (a->jar) {
		char *abs = a->jar[0] == '/' || strstr(a->jar, "://") || str_has_prefix(a->jar, "file:")
		                ? xstrdup(a->jar)
		                : absolute_path(a->jar);
		free(ret->job.jar_uri);
		ret->job.jar_uri = abs;
		ret->job.jar_uri_loc = (struct loc){"--jar", 0, 0};
		if (!ret->name)
			ret->name = name_from_jar(a->jar);
	}
	if (a->entry_class) {
		free(ret->job.entry_class);
		ret->job.entry_class = xstrdup(a->entry_class);
		ret->job.entry_class_loc = (struct loc){"--class", 0, 0};
	}
	if (a->parallelism) {
		int64_t p;
		if (parse_int64(a->parallelism, &p) < 0 || p < 1 || p > 32768)
			diags_add(d, &cli, "--parallelism", "must be an integer between 1 and 32768 (got \"%s\")",
			          a->parallelism);
		else
			ret->job.parallelism = p;
	}
	if (a->have_args) {
		strv_free(&ret->job.args);
		for (size_t i = 0; i < a->args.n; i++)
			strv_push(&ret->job.args, a->args.v[i]);
	}
	for (size_t i = 0; i < a->defines.n; i++) {
		const char *def = a->defines.v[i];
		const char *eq = strchr(def, '=');
		if (!eq || eq == def) {
			diags_add(d, &cli, "-D", "expected key=value (got \"%s\")", def);
			continue;
		}
		char *key = xstrndup(def, (size_t)(eq - def));
		struct loc l = {"-D", 0, 0};
		spec_set(ret, key, eq + 1, ORIGIN_OVERRIDE, &l);
		free(key);
	}
	if (a->state_dir) {
		struct loc l = {"--state-dir", 0, 0};
		spec_set(ret, "flinklet.state.dir", a->state_dir, ORIGIN_OVERRIDE, &l);
	}
	if (a->flink_home) {
		struct loc l = {"--flink-home", 0, 0};
		spec_set(ret, "flinklet.flink.home", a->flink_home, ORIGIN_OVERRIDE, &l);
	}
	if (d->msgs.n > before)
		return -EINVAL;
	return config_finalize(ret, d);
}

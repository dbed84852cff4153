/* export: the FlinkDeployment that carries a flinklet job to the operator (see src/cli/export.h). What the
 * operator's admission rules need is either filled in (flinkVersion, the storage directories from
 * --storage-base, a Kubernetes name) or said in a note; what only makes sense on the machine flinklet ran on
 * (loopback listeners, its volume, local paths) is left out or said in a note too. The operator version
 * decides the JobManager's and TaskManager's resource form and the newest flinkVersion its CRD takes. */
#include "export.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config_sql.h"
#include "flinkconf.h"
#include "redact.h"

/* What each operator version accepts: its name and the newest flinkVersion of its CRD's enum. */
static const struct {
	const char *name;
	const char *newest_label;
} operators[] = {
    [EXPORT_OPERATOR_1_16] = {"1.16", "v2_4"},
    [EXPORT_OPERATOR_1_15] = {"1.15", "v2_2"},
};

int export_operator_parse(const char *text, enum export_operator *ret)
{
	for (size_t i = 0; text && i < sizeof(operators) / sizeof(operators[0]); i++) {
		size_t n = strlen(operators[i].name);
		if (strncmp(text, operators[i].name, n))
			continue;
		const char *patch = text + n;
		if (*patch == '.' && patch[1] && strspn(patch + 1, "0123456789") == strlen(patch + 1))
			patch = ""; /* 1.16.1: the same CRD */
		if (*patch)
			continue;
		*ret = (enum export_operator)i;
		return 0;
	}
	return -EINVAL;
}

const char *export_operator_name(enum export_operator op)
{
	return operators[op].name;
}

/* v2_3 -> 203; -1 for what is not a label. */
static int label_rank(const char *label)
{
	unsigned major, minor;
	char tail;
	if (!label || sscanf(label, "v%u_%u%c", &major, &minor, &tail) != 2)
		return -1;
	return (int)(major * 100 + minor);
}

/* Keys flinklet set for its own volume and MiniCluster (defaults it filled in): the cluster decides. */
static bool derived_default(const struct conf_entry *e)
{
	if (e->origin != ORIGIN_DEFAULT)
		return false;
	static const char *const derived[] = {
	    "execution.target",
	    "rest.port",
	    "execution.checkpointing.dir",
	    "execution.checkpointing.savepoint-dir",
	    "parallelism.default",
	    "taskmanager.numberOfTaskSlots",
	    "web.submit.enable",
	    "web.cancel.enable",
	    "web.refresh-interval",
	    /* sized for the one pod's MiniCluster (membudget): the operator sizes its TaskManagers itself */
	    "taskmanager.memory.managed.size",
	    "taskmanager.memory.network.min",
	    "taskmanager.memory.network.max",
	    NULL,
	};
	for (size_t i = 0; derived[i]; i++)
		if (!strcmp(spec_canonical_key(e->key), derived[i]))
			return true;
	return str_has_prefix(e->key, "kubernetes.operator.") || str_has_prefix(e->key, "job.autoscaler.");
}

/* Where a JVM listens or is reached: one pod's loopback MiniCluster, never the cluster's network. */
static bool listener_key(const char *key)
{
	static const char *const keys[] = {
	    "rest.address",
	    "rest.bind-address",
	    "jobmanager.bind-host",
	    "taskmanager.bind-host",
	    "jobmanager.rpc.address",
	    "taskmanager.host",
	    NULL,
	};
	for (size_t i = 0; keys[i]; i++)
		if (!strcmp(spec_canonical_key(key), keys[i]))
			return true;
	return false;
}

/* Keys the operator owns: its validator rejects a FlinkDeployment that sets them. */
static bool operator_owned(const char *key)
{
	return !strcmp(key, "kubernetes.namespace") || !strcmp(key, "kubernetes.cluster-id") ||
	       !strcmp(key, "high-availability.cluster-id");
}

/* A value that names a place on this machine: a file: URI or an absolute path. */
static bool machine_local(const char *v)
{
	return v && (str_has_prefix(v, "file:") || v[0] == '/');
}

static bool storage_key(const char *key)
{
	const char *k = spec_canonical_key(key);
	return !strcmp(k, "execution.checkpointing.dir") || !strcmp(k, "execution.checkpointing.savepoint-dir");
}

static void note(struct strv *notes, char *text)
{
	if (notes)
		strv_push_take(notes, text);
	else
		free(text);
}

static int cmp_key(const void *a, const void *b)
{
	const struct conf_entry *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);
}

/* The operator 1.15's `resource`: memory in Flink's syntax, cpu a number of cores. */
static cJSON *resource(uint64_t memory, double cpu)
{
	cJSON *r = cJSON_CreateObject();
	char mem[32];
	snprintf(mem, sizeof(mem), "%llum", (unsigned long long)(memory >> 20));
	cJSON_AddStringToObject(r, "memory", mem);
	cJSON_AddNumberToObject(r, "cpu", cpu);
	return r;
}

/* Kubernetes quantities the operator 1.16 and Kubernetes read alike: memory in MiB ("1024Mi"; Kubernetes
 * reads "1024m" as millibytes while the operator reads it as Flink's MiB), cpu in cores or millicores. */
static cJSON *quantities(uint64_t memory_mib, double cpu)
{
	cJSON *q = cJSON_CreateObject();
	char buf[32];
	snprintf(buf, sizeof(buf), "%lluMi", (unsigned long long)memory_mib);
	cJSON_AddStringToObject(q, "memory", buf);
	long long milli = llround(cpu * 1000);
	if (milli < 1)
		milli = 1;
	if (milli % 1000 == 0)
		snprintf(buf, sizeof(buf), "%lld", milli / 1000);
	else
		snprintf(buf, sizeof(buf), "%lldm", milli);
	cJSON_AddStringToObject(q, "cpu", buf);
	return q;
}

/* A limit factor the user set for Flink's native Kubernetes pods (kubernetes.<part>.<what>.limit-factor): the
 * operator 1.16 sets that option itself from limits / requests, so the limits carry it. 1 when unset. */
static double limit_factor(const cJSON *conf, const char *part, const char *what, struct strv *notes)
{
	char *key = xasprintf("kubernetes.%s.%s.limit-factor", part, what);
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, key));
	double f = 1;
	if (v) {
		char *end = NULL;
		errno = 0;
		double parsed = strtod(v, &end);
		if (end != v && !*end && !errno && isfinite(parsed) && parsed >= 1)
			f = parsed;
		else
			note(notes, xasprintf("check %s: %s is not a limit factor (a number, at least 1): the %s's "
			                      "resources.limits are its requests",
			                      key, v, part));
	}
	free(key);
	return f;
}

/* The operator 1.16's `resources` (Kubernetes' ResourceRequirements): the requests are what 1.15's `resource`
 * said, the limits the same (Guaranteed, as the operator made 1.15's pods) unless a limit factor says more. */
static cJSON *requirements(uint64_t memory, double cpu, const cJSON *conf, const char *part, struct strv *notes)
{
	uint64_t mib = memory >> 20;
	double mem_factor = limit_factor(conf, part, "memory", notes);
	double cpu_factor = limit_factor(conf, part, "cpu", notes);
	cJSON *r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "requests", quantities(mib, cpu));
	cJSON_AddItemToObject(r, "limits", quantities((uint64_t)floor((double)mib * mem_factor), cpu * cpu_factor));
	return r;
}

/* base + "/" + tail, without doubled slashes at the seam. */
static char *under(const char *base, const char *tail)
{
	size_t bl = strlen(base);
	while (bl > 1 && base[bl - 1] == '/')
		bl--;
	return xasprintf("%.*s/%s", (int)bl, base, tail);
}

static char *rebase(const char *savepoint, const char *base)
{
	size_t n = strlen(savepoint);
	while (n > 1 && savepoint[n - 1] == '/')
		n--;
	const char *name = savepoint + n;
	while (name > savepoint && name[-1] != '/')
		name--;
	char *tail = xasprintf("%.*s", (int)(savepoint + n - name), name);
	char *r = under(base, tail);
	free(tail);
	return r;
}

char *export_k8s_name(const char *name)
{
	/* the operator's rule: [a-z]([-a-z0-9]{0,43}[a-z0-9])?, at most 45 characters */
	struct strbuf b = {0};
	for (const char *p = name ? name : ""; *p && b.len < 45; p++) {
		char c = (char)tolower((unsigned char)*p);
		if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9'))
			c = '-';
		if (c == '-' && (b.len == 0 || b.buf[b.len - 1] == '-'))
			continue; /* no leading or doubled dashes */
		if (b.len == 0 && !(c >= 'a' && c <= 'z'))
			strbuf_append(&b, "job-");
		strbuf_appendf(&b, "%c", c);
	}
	if (b.len > 45)
		b.len = 45;
	while (b.len > 0 && b.buf && b.buf[b.len - 1] == '-')
		b.len--;
	if (b.len == 0) {
		free(b.buf);
		return xstrdup("flinklet-job");
	}
	b.buf[b.len] = '\0';
	return strbuf_steal(&b);
}

/* The operator's autoscaler takes one sample per reconcile: a metrics window shorter than its reconcile interval
 * never holds two, so it would never scale, and the operator's validator rejects it (since 1.16, FLINK-39826).
 * flinklet samples more often; on the cluster the operator's default window applies. */
static void autoscaler_window(cJSON *conf, struct strv *notes)
{
	const char *enabled = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "job.autoscaler.enabled"));
	const char *window =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "job.autoscaler.metrics.window"));
	const char *reconcile =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "kubernetes.operator.reconcile.interval"));
	usec_t w, interval = 60 * USEC_PER_SEC;
	if (!enabled || strcasecmp(enabled, "true") || !window || parse_duration(window, &w) < 0 ||
	    (reconcile && parse_duration(reconcile, &interval) < 0) || w >= interval)
		return;
	note(notes, xasprintf("left out job.autoscaler.metrics.window: %s (shorter than the operator's reconcile "
	                      "interval, %s: the operator samples once per reconcile, so its autoscaler would never "
	                      "scale, and its validator rejects it; the operator's default, 15 min, applies)",
	                      window, reconcile ? reconcile : "60 s"));
	cJSON_DeleteItemFromObjectCaseSensitive(conf, "job.autoscaler.metrics.window");
}

/* flinkConfiguration: the user's settings less what cannot work on the cluster, plus the storage. */
static void export_configuration(const struct spec *s, const struct export_args *a, cJSON *conf, struct strv *notes)
{
	const struct conf_entry **sorted = xcalloc(s->nconf + 1, sizeof(*sorted));
	size_t n = 0;
	for (size_t i = 0; i < s->nconf; i++) {
		const struct conf_entry *e = &s->conf[i];
		if (str_has_prefix(e->key, "flinklet.") || derived_default(e))
			continue;
		if (listener_key(e->key)) {
			if (e->origin == ORIGIN_DEFAULT)
				continue; /* flinklet's own loopback listeners */
			note(notes,
			     xasprintf("left out %s: %s (an address of the machine flinklet ran on; the operator "
			               "sets the cluster's own)",
			               e->key, e->value));
			continue;
		}
		if (operator_owned(e->key)) {
			note(notes, xasprintf("left out %s: %s (the operator sets it; its validator rejects it)",
			                      e->key, e->value));
			continue;
		}
		if (storage_key(e->key) && (a->storage_base || machine_local(e->value))) {
			if (!a->storage_base)
				note(notes,
				     xasprintf("left out %s: %s (a directory on this machine; the cluster needs shared "
				               "storage: give --storage-base)",
				               e->key, e->value));
			continue; /* --storage-base names them below */
		}
		if (machine_local(e->value) && !storage_key(e->key))
			note(notes,
			     xasprintf("check %s: %s: a path on the machine flinklet ran on; it must exist in the "
			               "cluster's pods",
			               e->key, e->value));
		sorted[n++] = e;
	}
	qsort(sorted, n, sizeof(*sorted), cmp_key);
	for (size_t i = 0; i < n; i++)
		cJSON_AddStringToObject(conf, sorted[i]->key, sorted[i]->value);
	free(sorted);

	if (a->storage_base) {
		char *ck = under(a->storage_base, "checkpoints"), *sp = under(a->storage_base, "savepoints");
		cJSON_AddStringToObject(conf, "execution.checkpointing.dir", ck);
		cJSON_AddStringToObject(conf, "execution.checkpointing.savepoint-dir", sp);
		free(ck);
		free(sp);
	}
	/* flinklet takes ForSt's savepoints NATIVE when no format is set; the operator's default, CANONICAL, would fail
	 * every one of them (its upgrades and suspends too) */
	if (spec_state_backend(s) == BACKEND_FORST && !spec_get(s, "kubernetes.operator.savepoint.format.type")) {
		cJSON_AddStringToObject(conf, "kubernetes.operator.savepoint.format.type", "NATIVE");
		note(notes, xstrdup("set kubernetes.operator.savepoint.format.type: NATIVE (the forst state backend "
		                    "takes no CANONICAL savepoint, the operator's default format)"));
	}
	char slots[24];
	snprintf(slots, sizeof(slots), "%lld", (long long)s->job.parallelism);
	cJSON_AddStringToObject(conf, "taskmanager.numberOfTaskSlots", slots);

	/* the operator's rules on its own options: rollback only with HA, its health check only with
	 * JobManager deployment recovery */
	const char *ha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "high-availability.type"));
	bool has_ha = ha && strcasecmp(ha, "none") && *ha;
	const char *rb = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(conf, "kubernetes.operator.deployment.rollback.enabled"));
	if (rb && !strcasecmp(rb, "true") && !has_ha) {
		cJSON_DeleteItemFromObjectCaseSensitive(conf, "kubernetes.operator.deployment.rollback.enabled");
		note(notes,
		     xstrdup("left out kubernetes.operator.deployment.rollback.enabled: true (the operator rolls "
		             "back only with high availability: set high-availability.type: kubernetes and "
		             "high-availability.storageDir, then enable it)"));
	}
	const char *hc = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(conf, "kubernetes.operator.cluster.health-check.enabled"));
	const char *rec = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(conf, "kubernetes.operator.jm-deployment-recovery.enabled"));
	if (hc && !strcasecmp(hc, "true") && rec && !strcasecmp(rec, "false")) {
		cJSON_DeleteItemFromObjectCaseSensitive(conf, "kubernetes.operator.cluster.health-check.enabled");
		note(notes, xstrdup("left out kubernetes.operator.cluster.health-check.enabled: true (the operator's "
		                    "health check needs kubernetes.operator.jm-deployment-recovery.enabled)"));
	}
	autoscaler_window(conf, notes);
}

/* What the operator rejects without shared storage, said when --storage-base did not give it. */
static void storage_notes(const struct spec *s, const cJSON *conf, struct strv *notes)
{
	bool ck = cJSON_GetObjectItemCaseSensitive(conf, "execution.checkpointing.dir") ||
	          cJSON_GetObjectItemCaseSensitive(conf, "state.checkpoints.dir");
	bool sp = cJSON_GetObjectItemCaseSensitive(conf, "execution.checkpointing.savepoint-dir") ||
	          cJSON_GetObjectItemCaseSensitive(conf, "state.savepoints.dir");
	if (!ck && s->job.upgrade_mode != UPGRADE_STATELESS)
		note(notes,
		     xasprintf("fill in execution.checkpointing.dir (shared storage the cluster can reach, e.g. "
		               "s3://bucket/checkpoints): upgradeMode %s needs it, or export with --storage-base "
		               "URI",
		               upgrade_mode_to_string(s->job.upgrade_mode)));
	if (sp)
		return;
	static const char *const need_sp[] = {"kubernetes.operator.periodic.savepoint.interval",
	                                      "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age",
	                                      NULL};
	const char *why = s->job.upgrade_mode == UPGRADE_SAVEPOINT ? "upgradeMode savepoint" : NULL;
	for (size_t i = 0; !why && need_sp[i]; i++)
		if (cJSON_GetObjectItemCaseSensitive(conf, need_sp[i]))
			why = need_sp[i];
	if (why)
		note(notes, xasprintf("fill in execution.checkpointing.savepoint-dir (shared storage): %s needs it, or "
		                      "export with --storage-base URI",
		                      why));
}

/* metadata.name: the spec's name, made one the operator accepts (a note when it had to change). */
static void add_metadata(cJSON *root, const struct spec *s, struct strv *notes)
{
	cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
	char *name = export_k8s_name(s->name);
	if (strcmp(name, s->name ? s->name : ""))
		note(notes,
		     xasprintf("metadata.name is %s instead of %s, which the operator does not accept (a letter, "
		               "then lower case letters, digits and '-', at most 45 characters)",
		               name, s->name ? s->name : "(none)"));
	cJSON_AddStringToObject(meta, "name", name);
	free(name);
}

/* spec.image and spec.flinkVersion: the spec's, else from the Flink the jars (or the volume) say; left out, with a
 * note, when the operator does not know that version or none is known. */
static void add_image_and_version(cJSON *spec, const struct spec *s, const struct export_args *a, struct strv *notes)
{
	const char *label =
	    s->flink_version ? s->flink_version : (a->flink_version ? flink_version_label(a->flink_version) : NULL);
	const char *newest = operators[a->operator_version].newest_label;
	if (s->image)
		cJSON_AddStringToObject(spec, "image", s->image);
	else if (a->flink_version) {
		char *img = xasprintf("flink:%s-java17", a->flink_version);
		cJSON_AddStringToObject(spec, "image", img);
		free(img);
	}
	if (label && label_rank(label) > label_rank(newest)) {
		note(notes, xasprintf("left out flinkVersion %s: the operator %s knows Flink up to %s (its CRD rejects "
		                      "%s); the operator 1.16 takes it (export without --operator-version %s)",
		                      label, operators[a->operator_version].name, newest, label,
		                      operators[a->operator_version].name));
	} else if (label) {
		cJSON_AddStringToObject(spec, "flinkVersion", label);
		if (!s->flink_version && a->flink_version_from)
			note(notes,
			     xasprintf("flinkVersion %s is the Flink the job last ran with (%s, recorded in %s): "
			               "Flink's jars were not found (--flink-home)",
			               label, a->flink_version, a->flink_version_from));
	} else {
		note(notes, xasprintf("fill in spec.flinkVersion (v1_20, v2_0 .. %s) and spec.image: %s", newest,
		                      a->flink_version ? "this Flink version has no operator label"
		                                       : "Flink's jars were not found (--flink-home) and the state "
		                                         "directory records no Flink version"));
	}
}

/* spec.jobManager and spec.taskManager: the one JVM's share is split: the TaskManager keeps the job's share, the
 * JobManager gets a quarter of it, at least 1 GiB and half a core. */
static void add_resources(cJSON *spec, const struct spec *s, const struct export_args *a, const cJSON *conf,
                          struct strv *notes)
{
	uint64_t mem = s->memory ? s->memory : 2048ULL << 20;
	double cpu = s->cpu > 0 ? s->cpu : 1.0;
	uint64_t jm_mem = mem / 4 > (1024ULL << 20) ? mem / 4 : 1024ULL << 20;
	double jm_cpu = cpu / 4 > 0.5 ? cpu / 4 : 0.5;
	jm_cpu = round(jm_cpu * 100) / 100;
	cJSON *jm = cJSON_AddObjectToObject(spec, "jobManager");
	cJSON *tm = cJSON_AddObjectToObject(spec, "taskManager");
	if (a->operator_version == EXPORT_OPERATOR_1_15) {
		cJSON_AddItemToObject(jm, "resource", resource(jm_mem, jm_cpu));
		cJSON_AddItemToObject(tm, "resource", resource(mem, cpu));
	} else {
		cJSON_AddItemToObject(jm, "resources", requirements(jm_mem, jm_cpu, conf, "jobmanager", notes));
		cJSON_AddItemToObject(tm, "resources", requirements(mem, cpu, conf, "taskmanager", notes));
	}
}

/* job.jarURI, with a note on what the cluster needs of it; a SQL script: the runner form of the operator's
 * flink-sql-runner-example, flinklet's runner being the jar. */
static void add_jar(cJSON *job, const struct spec *s, struct strv *notes)
{
	const char *jar = s->job.jar_uri;
	bool runner_jar = config_sql_job(s) && str_has_suffix(jar, "/lib/" SQL_RUNNER_JAR);
	if (runner_jar)
		jar = "local:///opt/flink/lib/" SQL_RUNNER_JAR;
	cJSON_AddStringToObject(job, "jarURI", jar);
	if (runner_jar)
		note(notes,
		     xstrdup("check jarURI " SQL_RUNNER_JAR ": flinklet's SQL runner runs the script; spec.image "
		             "must have it in /opt/flink/lib (flinklet's image has it, or build one FROM it)"));
	else if (str_has_prefix(jar, "local://"))
		note(notes,
		     xasprintf("check jarURI %s: the operator reads local:// inside the JobManager's image, so the "
		               "jar must be at that path in spec.image (build an image FROM it with the jar)",
		               jar));
	else if (machine_local(jar))
		note(notes, xasprintf("fill in jarURI: %s is a file on the machine flinklet ran on; put the jar in the "
		                      "image (local:///opt/flink/usrlib/...) or where the cluster can fetch it",
		                      jar));
}

/* job.args: a SQL script's path first (where the cluster must have it: a note), then the job's own arguments. */
static void add_args(cJSON *job, const struct spec *s, struct strv *notes)
{
	cJSON *args = cJSON_AddArrayToObject(job, "args");
	if (config_sql_job(s)) {
		bool remote = config_sql_remote(s);
		char *path = s->job.sql || remote ? xasprintf("/opt/flink/usrlib/sql-scripts/%s.sql", s->name)
		                                  : local_path_from_uri(s->job.sql_script);
		cJSON_AddItemToArray(args, cJSON_CreateString(path));
		char *shown = remote ? redact_uri(s->job.sql_script) : NULL;
		note(notes,
		     remote ? xasprintf("put the SQL script at %s (spec.job.sqlScript %s is remote: the runner, "
		                        "flinklet's as the operator's flink-sql-runner-example, reads a local file, "
		                        "and the operator downloads only jarURI): in spec.image, or a ConfigMap "
		                        "mounted at /opt/flink/usrlib/sql-scripts (key %s.sql, through "
		                        "spec.podTemplate)",
		                        path, shown, s->name)
		     : s->job.sql
		         ? xasprintf("put spec.job.sql into a ConfigMap mounted at /opt/flink/usrlib/sql-scripts "
		                     "(key %s.sql, through spec.podTemplate): the runner reads the script "
		                     "from there",
		                     s->name)
		         : xasprintf("check job.args[0]: the SQL script %s must be at that path in spec.image "
		                     "or a ConfigMap mounted there (spec.podTemplate)",
		                     path));
		free(shown);
		free(path);
	}
	for (size_t i = 0; i < s->job.args.n; i++) {
		const char *v = s->job.args.v[i];
		cJSON_AddItemToArray(args, cJSON_CreateString(v));
		if (machine_local(v))
			note(notes,
			     xasprintf("check job.args[%zu]: %s is a path on the machine flinklet ran on", i, v));
	}
}

/* job.initialSavepointPath: the job's newest savepoint, moved under --savepoint-base (or --storage-base); a note
 * when it stays on flinklet's volume or there is none. */
static void add_restore_point(cJSON *job, const struct export_args *a, struct strv *notes)
{
	const char *base = a->savepoint_base;
	char *sp_base = !base && a->storage_base ? under(a->storage_base, "savepoints") : NULL;
	if (sp_base)
		base = sp_base;
	if (a->savepoint) {
		char *sp = base ? rebase(a->savepoint, base) : xstrdup(a->savepoint);
		cJSON_AddStringToObject(job, "initialSavepointPath", sp);
		if (!base)
			note(notes,
			     xasprintf("initialSavepointPath %s is on flinklet's volume: copy that directory where the "
			               "cluster can read it and export with --storage-base or --savepoint-base",
			               sp));
		free(sp);
	} else {
		note(notes,
		     xstrdup("no savepoint of this job on the volume: the cluster would start the job empty (take "
		             "one with 'flinklet savepoint --wait', or stop the job, and export again)"));
	}
	free(sp_base);
}

cJSON *export_flinkdeployment(const struct spec *s, const struct export_args *a)
{
	struct strv *notes = a->notes;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "apiVersion", "flink.apache.org/v1beta1");
	cJSON_AddStringToObject(root, "kind", "FlinkDeployment");
	add_metadata(root, s, notes);
	cJSON *spec = cJSON_AddObjectToObject(root, "spec");
	add_image_and_version(spec, s, a, notes);
	cJSON_AddStringToObject(spec, "serviceAccount", "flink");
	cJSON *conf = cJSON_AddObjectToObject(spec, "flinkConfiguration");
	export_configuration(s, a, conf, notes);
	storage_notes(s, conf, notes);
	add_resources(spec, s, a, conf, notes);

	cJSON *job = cJSON_AddObjectToObject(spec, "job");
	add_jar(job, s, notes);
	if (s->job.entry_class)
		cJSON_AddStringToObject(job, "entryClass", s->job.entry_class);
	add_args(job, s, notes);
	cJSON_AddNumberToObject(job, "parallelism", (double)s->job.parallelism);
	cJSON_AddStringToObject(job, "upgradeMode", upgrade_mode_to_string(s->job.upgrade_mode));
	cJSON_AddStringToObject(job, "state", "running");
	add_restore_point(job, a, notes);
	cJSON_AddBoolToObject(job, "allowNonRestoredState", s->job.allow_non_restored_state);
	return root;
}

/* export: the FlinkDeployment that carries a flinklet job to the operator (see include/export.h). */
#include "export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "flinkconf.h"

/* Keys that are flinklet's, or that flinklet set for its own volume and MiniCluster: the cluster decides. */
static bool leave_out(const struct conf_entry *e)
{
	if (str_has_prefix(e->key, "flinklet."))
		return true;
	if (e->origin != ORIGIN_DEFAULT)
		return false;
	static const char *const derived[] = {
	    "execution.target",
	    "rest.port",
	    "execution.checkpointing.dir",
	    "execution.checkpointing.savepoint-dir",
	    "parallelism.default",
	    "taskmanager.numberOfTaskSlots",
	    /* loopback listeners are for one pod's MiniCluster: the operator's cluster has its own network */
	    "rest.bind-address",
	    "rest.address",
	    "jobmanager.bind-host",
	    "taskmanager.bind-host",
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
		if (!strcmp(e->key, derived[i]))
			return true;
	return str_has_prefix(e->key, "kubernetes.operator.") || str_has_prefix(e->key, "job.autoscaler.");
}

static int cmp_key(const void *a, const void *b)
{
	const struct conf_entry *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);
}

static cJSON *resource(uint64_t memory, double cpu)
{
	cJSON *r = cJSON_CreateObject();
	char mem[32];
	snprintf(mem, sizeof(mem), "%llum", (unsigned long long)(memory >> 20));
	cJSON_AddStringToObject(r, "memory", mem);
	cJSON_AddNumberToObject(r, "cpu", cpu);
	return r;
}

static char *rebase(const char *savepoint, const char *base)
{
	if (!base)
		return xstrdup(savepoint);
	size_t n = strlen(savepoint);
	while (n > 1 && savepoint[n - 1] == '/')
		n--;
	const char *name = savepoint + n;
	while (name > savepoint && name[-1] != '/')
		name--;
	size_t bl = strlen(base);
	while (bl > 1 && base[bl - 1] == '/')
		bl--;
	return xasprintf("%.*s/%.*s", (int)bl, base, (int)(savepoint + n - name), name);
}

cJSON *export_flinkdeployment(const struct spec *s, const struct export_args *a)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "apiVersion", "flink.apache.org/v1beta1");
	cJSON_AddStringToObject(root, "kind", "FlinkDeployment");
	cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
	cJSON_AddStringToObject(meta, "name", s->name);
	cJSON *spec = cJSON_AddObjectToObject(root, "spec");

	const char *label =
	    s->flink_version ? s->flink_version : (a->flink_version ? flink_version_label(a->flink_version) : NULL);
	if (s->image)
		cJSON_AddStringToObject(spec, "image", s->image);
	else if (a->flink_version) {
		char *img = xasprintf("flink:%s-java17", a->flink_version);
		cJSON_AddStringToObject(spec, "image", img);
		free(img);
	}
	if (label)
		cJSON_AddStringToObject(spec, "flinkVersion", label);
	cJSON_AddStringToObject(spec, "serviceAccount", "flink");

	cJSON *conf = cJSON_AddObjectToObject(spec, "flinkConfiguration");
	const struct conf_entry **sorted = xcalloc(s->nconf, sizeof(*sorted));
	size_t n = 0;
	for (size_t i = 0; i < s->nconf; i++)
		if (!leave_out(&s->conf[i]))
			sorted[n++] = &s->conf[i];
	qsort(sorted, n, sizeof(*sorted), cmp_key);
	for (size_t i = 0; i < n; i++)
		cJSON_AddStringToObject(conf, sorted[i]->key, sorted[i]->value);
	free(sorted);
	char slots[16];
	snprintf(slots, sizeof(slots), "%lld", (long long)s->job.parallelism);
	cJSON_AddStringToObject(conf, "taskmanager.numberOfTaskSlots", slots);

	/* the one JVM's share is split: the TaskManager keeps the job's share, the JobManager gets a quarter of
	 * it, at least 1 GiB and half a core */
	uint64_t mem = s->memory ? s->memory : 2048ULL << 20;
	double cpu = s->cpu > 0 ? s->cpu : 1.0;
	uint64_t jm_mem = mem / 4 > (1024ULL << 20) ? mem / 4 : 1024ULL << 20;
	double jm_cpu = cpu / 4 > 0.5 ? cpu / 4 : 0.5;
	cJSON *jm = cJSON_AddObjectToObject(spec, "jobManager");
	cJSON_AddItemToObject(jm, "resource", resource(jm_mem, round(jm_cpu * 100) / 100));
	cJSON *tm = cJSON_AddObjectToObject(spec, "taskManager");
	cJSON_AddItemToObject(tm, "resource", resource(mem, cpu));

	cJSON *job = cJSON_AddObjectToObject(spec, "job");
	cJSON_AddStringToObject(job, "jarURI", s->job.jar_uri);
	if (s->job.entry_class)
		cJSON_AddStringToObject(job, "entryClass", s->job.entry_class);
	cJSON *args = cJSON_AddArrayToObject(job, "args");
	for (size_t i = 0; i < s->job.args.n; i++)
		cJSON_AddItemToArray(args, cJSON_CreateString(s->job.args.v[i]));
	cJSON_AddNumberToObject(job, "parallelism", (double)s->job.parallelism);
	cJSON_AddStringToObject(job, "upgradeMode", upgrade_mode_to_string(s->job.upgrade_mode));
	cJSON_AddStringToObject(job, "state", "running");
	if (a->savepoint) {
		char *sp = rebase(a->savepoint, a->savepoint_base);
		cJSON_AddStringToObject(job, "initialSavepointPath", sp);
		free(sp);
	} else {
		cJSON_AddNullToObject(job, "initialSavepointPath");
	}
	cJSON_AddBoolToObject(job, "allowNonRestoredState", s->job.allow_non_restored_state);
	return root;
}

/* config_emit: the normalized configuration document, as printed by `flinklet check-config` (YAML, written by
 * libyaml's emitter in yamlout.c) and `check-config --json`. Keys of flinkConfiguration are sorted so the output is
 * stable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "yamlout.h"

static cJSON *string_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static int cmp_entry(const void *a, const void *b)
{
	const struct conf_entry *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);
}

cJSON *spec_to_json(const struct spec *s)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddItemToObject(root, "apiVersion", string_or_null(s->api_version));
	cJSON_AddItemToObject(root, "kind", string_or_null(s->kind));
	cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
	cJSON_AddItemToObject(meta, "name", string_or_null(s->name));

	cJSON *spec = cJSON_AddObjectToObject(root, "spec");
	cJSON_AddItemToObject(spec, "flinkVersion", string_or_null(s->flink_version));
	cJSON_AddItemToObject(spec, "image", string_or_null(s->image));

	cJSON *conf = cJSON_AddObjectToObject(spec, "flinkConfiguration");
	const struct conf_entry **sorted = xcalloc(s->nconf, sizeof(*sorted));
	for (size_t i = 0; i < s->nconf; i++)
		sorted[i] = &s->conf[i];
	qsort(sorted, s->nconf, sizeof(*sorted), cmp_entry);
	for (size_t i = 0; i < s->nconf; i++)
		cJSON_AddStringToObject(conf, sorted[i]->key, sorted[i]->value);
	free(sorted);

	cJSON *res = cJSON_AddObjectToObject(spec, "resources");
	if (s->memory) {
		char mem[32];
		snprintf(mem, sizeof(mem), "%llum", (unsigned long long)(s->memory >> 20));
		cJSON_AddStringToObject(res, "memory", mem);
	} else {
		cJSON_AddNullToObject(res, "memory");
	}
	if (s->cpu > 0)
		cJSON_AddNumberToObject(res, "cpu", s->cpu);
	else
		cJSON_AddNullToObject(res, "cpu");

	/* the log configuration goes with the spec: a rollback to the kept stable spec (sup_reload) launches with it */
	if (s->log4j_console) {
		cJSON *log = cJSON_AddObjectToObject(spec, "logConfiguration");
		cJSON_AddStringToObject(log, "log4j-console.properties", s->log4j_console);
	}

	cJSON *job = cJSON_AddObjectToObject(spec, "job");
	cJSON_AddItemToObject(job, "jarURI", string_or_null(s->job.jar_uri));
	cJSON_AddItemToObject(job, "entryClass", string_or_null(s->job.entry_class));
	cJSON *args = cJSON_AddArrayToObject(job, "args");
	for (size_t i = 0; i < s->job.args.n; i++)
		cJSON_AddItemToArray(args, cJSON_CreateString(s->job.args.v[i]));
	if (s->job.sql_script) /* only when set: the operator's FlinkDeployment has neither */
		cJSON_AddStringToObject(job, "sqlScript", s->job.sql_script);
	if (s->job.sql)
		cJSON_AddStringToObject(job, "sql", s->job.sql);
	cJSON_AddNumberToObject(job, "parallelism", (double)s->job.parallelism);
	cJSON_AddStringToObject(job, "upgradeMode", upgrade_mode_to_string(s->job.upgrade_mode));
	cJSON_AddStringToObject(job, "state", job_state_to_string(s->job.state));
	cJSON_AddNumberToObject(job, "savepointTriggerNonce", (double)s->job.savepoint_trigger_nonce);
	cJSON_AddNumberToObject(job, "checkpointTriggerNonce", (double)s->job.checkpoint_trigger_nonce);
	cJSON_AddItemToObject(job, "initialSavepointPath", string_or_null(s->job.initial_savepoint_path));
	cJSON_AddBoolToObject(job, "allowNonRestoredState", s->job.allow_non_restored_state);
	return root;
}

char *json_to_yaml(const cJSON *root)
{
	return yaml_from_json(root);
}

char *spec_to_yaml(const struct spec *s)
{
	cJSON *root = spec_to_json(s);
	char *yaml = json_to_yaml(root);
	cJSON_Delete(root);
	return yaml;
}

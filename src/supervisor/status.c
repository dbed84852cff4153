/* status: the status document, to and from JSON (see src/supervisor/status.h). */
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "redact.h"
#include "util.h"

static const char *const lifecycle_names[] = {
    [LIFECYCLE_CREATED] = "CREATED",         [LIFECYCLE_DEPLOYED] = "DEPLOYED",
    [LIFECYCLE_STABLE] = "STABLE",           [LIFECYCLE_UPGRADING] = "UPGRADING",
    [LIFECYCLE_SUSPENDED] = "SUSPENDED",     [LIFECYCLE_ROLLING_BACK] = "ROLLING_BACK",
    [LIFECYCLE_ROLLED_BACK] = "ROLLED_BACK", [LIFECYCLE_FAILED] = "FAILED",
};

const char *lifecycle_to_string(enum lifecycle_state s)
{
	return (size_t)s < sizeof(lifecycle_names) / sizeof(lifecycle_names[0]) ? lifecycle_names[s] : "UNKNOWN";
}

int lifecycle_from_string(const char *s, enum lifecycle_state *ret)
{
	for (size_t i = 0; s && i < sizeof(lifecycle_names) / sizeof(lifecycle_names[0]); i++)
		if (!strcmp(s, lifecycle_names[i])) {
			*ret = (enum lifecycle_state)i;
			return 0;
		}
	return -EINVAL;
}

void status_init(struct status *st)
{
	memset(st, 0, sizeof(*st));
	st->lifecycle = LIFECYCLE_CREATED;
	st->last_exit_code = -1;
	st->stop_exit_ms = -1;
	st->last_exit_signal = -1;
	st->last_savepoint.id = -1;
	st->last_checkpoint.id = -1;
	st->state_size = -1;
	st->restored_id = -1;
	st->savepoint_trigger_nonce = -1;
	st->checkpoint_trigger_nonce = -1;
	status_memtuning_clear(&st->memory_tuning);
}

void status_memtuning_clear(struct status_memtuning *m)
{
	free(m->reason);
	free(m->suspended);
	*m = (struct status_memtuning){false, NULL, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, NULL, -1};
}

const char *status_error_source_name(enum status_error_source src)
{
	/* by name, not by position (a source reordered keeps its name) */
	static const char *const n[STATUS_ERR_MAX] = {
	    [STATUS_ERR_VOLUME] = "volume",
	    [STATUS_ERR_RESTORE] = "restore",
	    [STATUS_ERR_CRASH_LOOP] = "crashLoop",
	    [STATUS_ERR_STOP] = "stop",
	    [STATUS_ERR_STOP_SAVEPOINT] = "stopSavepoint",
	    [STATUS_ERR_DEMOTED] = "restorePointDemoted",
	    [STATUS_ERR_LAUNCH] = "launch",
	    [STATUS_ERR_JAR] = "jar",
	    [STATUS_ERR_FETCH] = "jarFetch",
	    [STATUS_ERR_SQL_FETCH] = "sqlScriptFetch",
	    [STATUS_ERR_JOB] = "job",
	    [STATUS_ERR_CONFIG] = "configuration",
	    [STATUS_ERR_SNAPSHOT] = "snapshot",
	    [STATUS_ERR_VOLUME_SPACE] = "volumeSpace",
	    [STATUS_ERR_PROGRESS] = "checkpointProgress",
	    [STATUS_ERR_FAILOVER] = "failover",
	};
	return (unsigned)src < STATUS_ERR_MAX && n[src] ? n[src] : "?";
}

int status_error_source_from_string(const char *name, enum status_error_source *ret)
{
	for (int i = 0; name && i < STATUS_ERR_MAX; i++)
		if (!strcmp(name, status_error_source_name((enum status_error_source)i))) {
			*ret = (enum status_error_source)i;
			return 0;
		}
	return -EINVAL;
}

/* by name, not by position; each with the event that says it */
static const char *const warning_names[STATUS_WARN_MAX][2] = {
    [STATUS_WARN_SCRATCH_SPACE] = {"scratchSpace", "ScratchSpaceLow"},
};

const char *status_warning_source_name(enum status_warning_source src)
{
	return (unsigned)src < STATUS_WARN_MAX && warning_names[src][0] ? warning_names[src][0] : "?";
}

const char *status_warning_event(enum status_warning_source src)
{
	return (unsigned)src < STATUS_WARN_MAX && warning_names[src][1] ? warning_names[src][1] : "?";
}

int status_warning_source_from_string(const char *name, enum status_warning_source *ret)
{
	for (int i = 0; name && i < STATUS_WARN_MAX; i++)
		if (!strcmp(name, status_warning_source_name((enum status_warning_source)i))) {
			*ret = (enum status_warning_source)i;
			return 0;
		}
	return -EINVAL;
}

/* A slot of errors or warnings set to message (NULL: cleared); since kept while the same message stands. */
static void slot_set(struct status_error *e, const char *message, int64_t now_ms)
{
	if (!message) {
		free(e->message);
		e->message = NULL;
		e->since_ms = 0;
	} else if (!e->message || strcmp(e->message, message)) {
		status_set_string(&e->message, message);
		e->since_ms = now_ms;
	}
}

void status_warning_set(struct status *st, enum status_warning_source src, const char *message, int64_t now_ms)
{
	if ((unsigned)src < STATUS_WARN_MAX)
		slot_set(&st->warnings[src], message, now_ms);
}

void status_error_set(struct status *st, enum status_error_source src, const char *message, int64_t now_ms)
{
	if ((unsigned)src >= STATUS_ERR_MAX)
		return;
	slot_set(&st->errors[src], message, now_ms);
	const char *first = NULL;
	for (int i = 0; i < STATUS_ERR_MAX && !first; i++)
		first = st->errors[i].message;
	if (first != st->error && (!first || !st->error || strcmp(first, st->error)))
		status_set_string(&st->error, first);
}

int status_jvm_restarts(const struct status *st)
{
	return st->jvm_starts > 1 ? st->jvm_starts - 1 : 0;
}

void status_set_string(char **field, const char *value)
{
	if (*field && value && !strcmp(*field, value))
		return;
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

void snapshot_ref_set(struct snapshot_ref *r, const char *location, int64_t id, int64_t time_ms, const char *trigger)
{
	/* one spelling of local paths in the status document: Flink reports file:/x, flinklet writes file:///x */
	if (location && str_has_prefix(location, "file:/") && !str_has_prefix(location, "file://")) {
		char *uri = xasprintf("file:///%s", location + strlen("file:/"));
		status_set_string(&r->location, uri);
		free(uri);
	} else {
		status_set_string(&r->location, location);
	}
	status_set_string(&r->trigger_type, trigger);
	status_set_string(&r->format_type, NULL);
	r->id = id;
	r->time_ms = time_ms;
	r->claimed = false;
}

void snapshot_ref_free(struct snapshot_ref *r)
{
	free(r->location);
	free(r->trigger_type);
	free(r->format_type);
	memset(r, 0, sizeof(*r));
	r->id = -1;
}

struct snapshot_ref *snapshot_history_push(struct snapshot_ref *history, int *n, int max)
{
	if (*n >= max) {
		snapshot_ref_free(&history[0]);
		memmove(history, history + 1, sizeof(*history) * (size_t)(max - 1));
		memset(&history[max - 1], 0, sizeof(*history));
		*n = max - 1;
	}
	return &history[(*n)++];
}

void status_free(struct status *st)
{
	free(st->name);
	free(st->job_state);
	snapshot_ref_free(&st->last_savepoint);
	for (int i = 0; i < st->n_savepoint_history; i++)
		snapshot_ref_free(&st->savepoint_history[i]);
	for (int i = 0; i < st->n_claimed_savepoints; i++)
		snapshot_ref_free(&st->claimed_savepoints[i]);
	snapshot_ref_free(&st->last_checkpoint);
	for (int i = 0; i < st->n_checkpoint_history; i++)
		snapshot_ref_free(&st->checkpoint_history[i]);
	free(st->restored_kind);
	free(st->restored_location);
	free(st->flink_version);
	free(st->intent);
	free(st->autoscaler_overrides);
	status_memtuning_clear(&st->memory_tuning);
	free(st->http_address);
	free(st->token_file);
	free(st->flink_metrics);
	for (int i = 0; i < STATUS_ERR_MAX; i++)
		free(st->errors[i].message);
	free(st->error);
	for (int i = 0; i < STATUS_WARN_MAX; i++)
		free(st->warnings[i].message);
	status_init(st);
}

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *int_or_null(int v)
{
	return v >= 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *savepoint_json(const struct snapshot_ref *r)
{
	if (!r->location)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "location", r->location);
	cJSON_AddNumberToObject(o, "timeStamp", (double)r->time_ms);
	cJSON_AddItemToObject(o, "triggerType", str_or_null(r->trigger_type));
	cJSON_AddStringToObject(o, "formatType", r->format_type ? r->format_type : "UNKNOWN");
	if (r->claimed)
		cJSON_AddTrueToObject(o, "claimed");
	return o;
}

static cJSON *bytes_or_null(int64_t v)
{
	return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

/* {"heap": n, "managed": n, "metaspace": n} (the keys as given), or null when the first is -1. */
static cJSON *pools(const char *k1, int64_t v1, const char *k2, int64_t v2, const char *k3, int64_t v3)
{
	if (v1 < 0)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, k1, bytes_or_null(v1));
	cJSON_AddItemToObject(o, k2, bytes_or_null(v2));
	cJSON_AddItemToObject(o, k3, bytes_or_null(v3));
	return o;
}

static void memtuning_to_json(const struct status_memtuning *m, cJSON *o)
{
	cJSON_AddBoolToObject(o, "enabled", m->enabled);
	cJSON_AddItemToObject(o, "reason", str_or_null(m->reason));
	cJSON_AddItemToObject(o, "recommended",
	                      pools("heap", m->rec_heap, "managed", m->rec_managed, "metaspace", m->rec_metaspace));
	cJSON_AddItemToObject(o, "minMemory", bytes_or_null(m->min_memory));
	cJSON_AddItemToObject(
	    o, "next",
	    pools("metaspace", m->next_metaspace, "managed", m->next_managed, "heapFloor", m->next_heap_floor));
	cJSON_AddItemToObject(o, "running",
	                      pools("heap", m->run_heap, "managed", m->run_managed, "metaspace", m->run_metaspace));
	cJSON_AddItemToObject(o, "suspended", str_or_null(m->suspended));
	cJSON_AddItemToObject(o, "suspendedAtMemory", bytes_or_null(m->suspended ? m->suspended_memory : -1));
}

cJSON *status_to_json(const struct status *st)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "lifecycleState", lifecycle_to_string(st->lifecycle));
	cJSON_AddItemToObject(root, "name", str_or_null(st->name));

	cJSON *js = cJSON_AddObjectToObject(root, "jobStatus");
	cJSON_AddItemToObject(js, "jobId", str_or_null(st->job_id[0] ? st->job_id : NULL));
	cJSON_AddItemToObject(js, "state", str_or_null(st->job_state));
	cJSON_AddNumberToObject(js, "startTime", (double)st->start_time_ms);
	cJSON_AddNumberToObject(js, "updateTime", (double)st->update_time_ms);
	cJSON *tasks = cJSON_AddObjectToObject(js, "tasks");
	cJSON_AddNumberToObject(tasks, "total", st->tasks_total);
	cJSON_AddNumberToObject(tasks, "running", st->tasks_running);
	cJSON_AddNumberToObject(tasks, "finished", st->tasks_finished);

	cJSON *spi = cJSON_AddObjectToObject(js, "savepointInfo");
	cJSON_AddItemToObject(spi, "lastSavepoint", savepoint_json(&st->last_savepoint));
	cJSON *hist = cJSON_AddArrayToObject(spi, "savepointHistory");
	for (int i = 0; i < st->n_savepoint_history; i++)
		cJSON_AddItemToArray(hist, savepoint_json(&st->savepoint_history[i]));
	cJSON *claimed = cJSON_AddArrayToObject(spi, "claimedSavepoints");
	for (int i = 0; i < st->n_claimed_savepoints; i++) {
		const struct snapshot_ref *r = &st->claimed_savepoints[i];
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "location", r->location);
		cJSON_AddNumberToObject(c, "checkpointId", (double)r->id);
		cJSON_AddNumberToObject(c, "timeStamp", (double)r->time_ms);
		cJSON_AddItemToArray(claimed, c);
	}
	if (st->savepoint_trigger_nonce >= 0)
		cJSON_AddNumberToObject(spi, "lastTriggerNonce", (double)st->savepoint_trigger_nonce);
	else
		cJSON_AddNullToObject(spi, "lastTriggerNonce");

	cJSON *cpi = cJSON_AddObjectToObject(js, "checkpointInfo");
	if (st->last_checkpoint.location) {
		cJSON *c = cJSON_AddObjectToObject(cpi, "lastCheckpoint");
		cJSON_AddStringToObject(c, "location", st->last_checkpoint.location);
		cJSON_AddNumberToObject(c, "id", (double)st->last_checkpoint.id);
		cJSON_AddNumberToObject(c, "timeStamp", (double)st->last_checkpoint.time_ms);
	} else {
		cJSON_AddNullToObject(cpi, "lastCheckpoint");
	}
	if (st->state_size >= 0)
		cJSON_AddNumberToObject(cpi, "stateSize", (double)st->state_size);
	else
		cJSON_AddNullToObject(cpi, "stateSize");
	cJSON *chist = cJSON_AddArrayToObject(cpi, "checkpointHistory");
	for (int i = 0; i < st->n_checkpoint_history; i++) {
		const struct snapshot_ref *r = &st->checkpoint_history[i];
		cJSON *c = cJSON_CreateObject();
		cJSON_AddNumberToObject(c, "id", (double)r->id);
		cJSON_AddNumberToObject(c, "timeStamp", (double)r->time_ms);
		cJSON_AddItemToObject(c, "triggerType", str_or_null(r->trigger_type));
		cJSON_AddItemToArray(chist, c);
	}
	if (st->checkpoint_trigger_nonce >= 0)
		cJSON_AddNumberToObject(cpi, "lastTriggerNonce", (double)st->checkpoint_trigger_nonce);
	else
		cJSON_AddNullToObject(cpi, "lastTriggerNonce");

	cJSON *rf = cJSON_AddObjectToObject(root, "restoredFrom");
	cJSON_AddStringToObject(rf, "kind", st->restored_kind ? st->restored_kind : "none");
	cJSON_AddItemToObject(rf, "location", str_or_null(st->restored_location));
	if (st->restored_id >= 0)
		cJSON_AddNumberToObject(rf, "id", (double)st->restored_id);
	else
		cJSON_AddNullToObject(rf, "id");

	cJSON *jvm = cJSON_AddObjectToObject(root, "jvm");
	cJSON_AddNumberToObject(jvm, "pid", st->jvm_pid);
	cJSON_AddNumberToObject(jvm, "starts", st->jvm_starts);
	cJSON_AddNumberToObject(jvm, "restarts", status_jvm_restarts(st));
	cJSON_AddItemToObject(jvm, "lastExitCode", int_or_null(st->last_exit_code));
	cJSON_AddItemToObject(jvm, "lastExitSignal", int_or_null(st->last_exit_signal));
	if (st->stop_exit_ms >= 0)
		cJSON_AddNumberToObject(jvm, "stopExitMs", (double)st->stop_exit_ms);
	else
		cJSON_AddNullToObject(jvm, "stopExitMs");

	cJSON *fl = cJSON_AddObjectToObject(root, "flink");
	cJSON_AddItemToObject(fl, "version", str_or_null(st->flink_version));
	cJSON_AddNumberToObject(fl, "restPort", st->rest_port);

	cJSON *as = cJSON_AddObjectToObject(root, "autoscaler");
	cJSON *ov = st->autoscaler_overrides ? cJSON_Parse(st->autoscaler_overrides) : NULL;
	cJSON_AddItemToObject(as, "parallelismOverrides", cJSON_IsObject(ov) ? ov : cJSON_CreateObject());
	if (ov && !cJSON_IsObject(ov))
		cJSON_Delete(ov);
	memtuning_to_json(&st->memory_tuning, cJSON_AddObjectToObject(as, "memoryTuning"));
	cJSON *sv = cJSON_AddObjectToObject(root, "supervisor");
	cJSON_AddNumberToObject(sv, "pid", st->supervisor_pid);
	cJSON_AddItemToObject(sv, "httpAddress", str_or_null(st->http_address));
	cJSON_AddItemToObject(sv, "tokenFile", str_or_null(st->token_file));
	cJSON_AddItemToObject(sv, "flinkMetrics", str_or_null(st->flink_metrics));
	cJSON_AddItemToObject(root, "intent", str_or_null(st->intent));
	/* the error may quote a URI the user gave (the jar's): never its credentials or signature */
	char *error = redact_text(st->error);
	cJSON_AddItemToObject(root, "error", str_or_null(error));
	free(error);
	/* every error set, the most important first (the order of enum status_error_source) */
	cJSON *errors = cJSON_AddArrayToObject(root, "errors");
	for (int i = 0; i < STATUS_ERR_MAX; i++) {
		if (!st->errors[i].message)
			continue;
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "source", status_error_source_name((enum status_error_source)i));
		char *msg = redact_text(st->errors[i].message);
		cJSON_AddStringToObject(e, "message", msg);
		free(msg);
		cJSON_AddNumberToObject(e, "since", (double)st->errors[i].since_ms);
		cJSON_AddItemToArray(errors, e);
	}
	/* the warnings in force, with the event that said each */
	cJSON *warnings = cJSON_AddArrayToObject(root, "warnings");
	for (int i = 0; i < STATUS_WARN_MAX; i++) {
		if (!st->warnings[i].message)
			continue;
		cJSON *w = cJSON_CreateObject();
		cJSON_AddStringToObject(w, "source", status_warning_source_name((enum status_warning_source)i));
		cJSON_AddStringToObject(w, "event", status_warning_event((enum status_warning_source)i));
		char *msg = redact_text(st->warnings[i].message);
		cJSON_AddStringToObject(w, "message", msg);
		free(msg);
		cJSON_AddNumberToObject(w, "since", (double)st->warnings[i].since_ms);
		cJSON_AddItemToArray(warnings, w);
	}
	return root;
}

char *status_render(const struct status *st)
{
	cJSON *root = status_to_json(st);
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	char *out = xasprintf("%s\n", text ? text : "{}");
	free(text);
	return out;
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double get_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* Numbers from status.json as integers, out-of-range values as the default (a file is outside input). */
static int64_t get_i64(const cJSON *o, const char *key, double def)
{
	return double_to_i64(get_num(o, key, def), -(INT64_C(1) << 53), INT64_C(1) << 53, (int64_t)def);
}

static int get_int(const cJSON *o, const char *key, double def)
{
	return (int)double_to_i64(get_num(o, key, def), INT_MIN, INT_MAX, (int64_t)def);
}

/* Sizes from status.json: whole bytes up to 1 TiB, else none (a file is outside input). */
static int64_t get_bytes(const cJSON *o, const char *key)
{
	return double_to_i64(get_num(o, key, -1), 0, INT64_C(1) << 40, -1);
}

static void parse_memtuning(const cJSON *o, struct status_memtuning *m)
{
	status_memtuning_clear(m);
	if (!cJSON_IsObject(o))
		return;
	m->enabled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "enabled"));
	status_set_string(&m->reason, get_str(o, "reason"));
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "recommended");
	m->rec_heap = get_bytes(r, "heap");
	m->rec_managed = get_bytes(r, "managed");
	m->rec_metaspace = get_bytes(r, "metaspace");
	m->min_memory = get_bytes(o, "minMemory");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "next");
	m->next_metaspace = get_bytes(n, "metaspace");
	m->next_managed = get_bytes(n, "managed");
	m->next_heap_floor = get_bytes(n, "heapFloor");
	if (m->next_metaspace < 0 || m->next_managed < 0 || m->next_heap_floor < 0)
		m->next_metaspace = m->next_managed = m->next_heap_floor = -1; /* all three, or none */
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(o, "running");
	m->run_heap = get_bytes(run, "heap");
	m->run_managed = get_bytes(run, "managed");
	m->run_metaspace = get_bytes(run, "metaspace");
	status_set_string(&m->suspended, get_str(o, "suspended"));
	m->suspended_memory = get_bytes(o, "suspendedAtMemory");
}

static void parse_savepoint(const cJSON *o, struct snapshot_ref *r)
{
	if (!cJSON_IsObject(o) || !get_str(o, "location"))
		return;
	snapshot_ref_set(r, get_str(o, "location"), -1, get_i64(o, "timeStamp", 0), get_str(o, "triggerType"));
	const char *fmt = get_str(o, "formatType");
	if (fmt && (!strcmp(fmt, "NATIVE") || !strcmp(fmt, "CANONICAL")))
		status_set_string(&r->format_type, fmt);
	r->claimed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "claimed"));
}

int status_parse(const char *text, struct status *st)
{
	status_init(st);
	cJSON *root = cJSON_Parse(text);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	enum lifecycle_state ls;
	if (lifecycle_from_string(get_str(root, "lifecycleState"), &ls) == 0)
		st->lifecycle = ls;
	status_set_string(&st->name, get_str(root, "name"));
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(root, "jobStatus");
	const char *jid = get_str(js, "jobId");
	if (jid && strlen(jid) == 32)
		memcpy(st->job_id, jid, 33);
	status_set_string(&st->job_state, get_str(js, "state"));
	st->start_time_ms = get_i64(js, "startTime", 0);
	st->update_time_ms = get_i64(js, "updateTime", 0);
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(js, "tasks");
	st->tasks_total = get_int(tasks, "total", 0);
	st->tasks_running = get_int(tasks, "running", 0);
	st->tasks_finished = get_int(tasks, "finished", 0);
	const cJSON *spi = cJSON_GetObjectItemCaseSensitive(js, "savepointInfo");
	parse_savepoint(cJSON_GetObjectItemCaseSensitive(spi, "lastSavepoint"), &st->last_savepoint);
	const cJSON *h;
	cJSON_ArrayForEach (h, cJSON_GetObjectItemCaseSensitive(spi, "savepointHistory")) {
		if (st->n_savepoint_history >= SAVEPOINT_HISTORY_MAX)
			break;
		struct snapshot_ref *r = &st->savepoint_history[st->n_savepoint_history];
		parse_savepoint(h, r);
		if (r->location)
			st->n_savepoint_history++;
	}
	cJSON_ArrayForEach (h, cJSON_GetObjectItemCaseSensitive(spi, "claimedSavepoints")) {
		if (st->n_claimed_savepoints >= CLAIMED_SAVEPOINTS_MAX)
			break;
		if (!cJSON_IsObject(h) || !get_str(h, "location"))
			continue;
		struct snapshot_ref *r = &st->claimed_savepoints[st->n_claimed_savepoints++];
		snapshot_ref_set(r, get_str(h, "location"), get_i64(h, "checkpointId", -1), get_i64(h, "timeStamp", 0),
		                 NULL);
		r->claimed = true;
	}
	const cJSON *spn = cJSON_GetObjectItemCaseSensitive(spi, "lastTriggerNonce");
	if (cJSON_IsNumber(spn))
		st->savepoint_trigger_nonce = (int64_t)spn->valuedouble;
	const cJSON *cpi = cJSON_GetObjectItemCaseSensitive(js, "checkpointInfo");
	const cJSON *cpn = cJSON_GetObjectItemCaseSensitive(cpi, "lastTriggerNonce");
	if (cJSON_IsNumber(cpn))
		st->checkpoint_trigger_nonce = (int64_t)cpn->valuedouble;
	const cJSON *ch;
	cJSON_ArrayForEach (ch, cJSON_GetObjectItemCaseSensitive(cpi, "checkpointHistory")) {
		if (st->n_checkpoint_history >= CHECKPOINT_HISTORY_MAX)
			break;
		if (!cJSON_IsObject(ch))
			continue;
		snapshot_ref_set(&st->checkpoint_history[st->n_checkpoint_history++], NULL, get_i64(ch, "id", -1),
		                 get_i64(ch, "timeStamp", 0), get_str(ch, "triggerType"));
	}
	const cJSON *lc = cJSON_GetObjectItemCaseSensitive(cpi, "lastCheckpoint");
	if (cJSON_IsObject(lc) && get_str(lc, "location"))
		snapshot_ref_set(&st->last_checkpoint, get_str(lc, "location"), get_i64(lc, "id", -1),
		                 get_i64(lc, "timeStamp", 0), NULL);
	st->state_size = get_bytes(cpi, "stateSize");
	const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "restoredFrom");
	status_set_string(&st->restored_kind, get_str(rf, "kind"));
	status_set_string(&st->restored_location, get_str(rf, "location"));
	st->restored_id = get_i64(rf, "id", -1);
	const cJSON *jvm = cJSON_GetObjectItemCaseSensitive(root, "jvm");
	st->jvm_pid = (pid_t)get_int(jvm, "pid", 0);
	st->last_exit_code = get_int(jvm, "lastExitCode", -1);
	st->last_exit_signal = get_int(jvm, "lastExitSignal", -1);
	const cJSON *starts = cJSON_GetObjectItemCaseSensitive(jvm, "starts");
	if (cJSON_IsNumber(starts)) {
		st->jvm_starts = get_int(jvm, "starts", 0);
	} else {
		/* a document of a flinklet that kept only the restarts: they and the first start, when one is told */
		int restarts = get_int(jvm, "restarts", 0);
		bool started =
		    st->jvm_pid > 0 || st->last_exit_code >= 0 || st->last_exit_signal >= 0 || st->start_time_ms > 0;
		st->jvm_starts = restarts > 0 && restarts < INT_MAX ? restarts + 1 : started ? 1 : 0;
	}
	if (st->jvm_starts < 0)
		st->jvm_starts = 0;
	st->stop_exit_ms = get_i64(jvm, "stopExitMs", -1);
	if (st->stop_exit_ms > 3600 * 1000)
		st->stop_exit_ms = -1; /* not a figure a stop could have measured: not believed */
	const cJSON *fl = cJSON_GetObjectItemCaseSensitive(root, "flink");
	status_set_string(&st->flink_version, get_str(fl, "version"));
	st->rest_port = get_int(fl, "restPort", 0);
	status_set_string(&st->intent, get_str(root, "intent"));
	const cJSON *ov = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "autoscaler"),
	                                                   "parallelismOverrides");
	if (cJSON_IsObject(ov)) {
		char *t = cJSON_PrintUnformatted(ov);
		status_set_string(&st->autoscaler_overrides, t);
		free(t);
	}
	parse_memtuning(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "autoscaler"), "memoryTuning"),
	    &st->memory_tuning);
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "supervisor");
	st->supervisor_pid = (pid_t)get_int(sv, "pid", 0);
	status_set_string(&st->http_address, get_str(sv, "httpAddress"));
	status_set_string(&st->token_file, get_str(sv, "tokenFile"));
	status_set_string(&st->flink_metrics, get_str(sv, "flinkMetrics"));
	status_set_string(&st->error, get_str(root, "error"));
	const cJSON *e;
	cJSON_ArrayForEach (e, cJSON_GetObjectItemCaseSensitive(root, "errors")) {
		enum status_error_source src;
		/* a source this flinklet does not know (a newer one's) is left out; error stays as written */
		if (status_error_source_from_string(get_str(e, "source"), &src) < 0 || !get_str(e, "message"))
			continue;
		status_set_string(&st->errors[src].message, get_str(e, "message"));
		st->errors[src].since_ms = get_i64(e, "since", 0);
	}
	cJSON_ArrayForEach (e, cJSON_GetObjectItemCaseSensitive(root, "warnings")) {
		enum status_warning_source src;
		if (status_warning_source_from_string(get_str(e, "source"), &src) < 0 || !get_str(e, "message"))
			continue;
		status_set_string(&st->warnings[src].message, get_str(e, "message"));
		st->warnings[src].since_ms = get_i64(e, "since", 0);
	}
	cJSON_Delete(root);
	return 0;
}

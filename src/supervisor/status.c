/* status: the status document, to and from JSON, through one table of its fields (see src/supervisor/status.h); its
 * errors and warnings, one slot per source. The values inside it and their names are status_values.c's. */
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "redact.h"
#include "util.h"

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

/* ---- the shapes of the document's values ---- */

static cJSON *str_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Numbers from status.json as integers in [lo, hi], else def (a file is outside input). */
static int64_t get_number(const cJSON *o, const char *key, int64_t def, int64_t lo, int64_t hi)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? double_to_i64(v->valuedouble, lo, hi, def) : def;
}

#define I53 (INT64_C(1) << 53) /* what a double holds exactly */
#define TIB (INT64_C(1) << 40) /* sizes: whole bytes up to 1 TiB */

static int64_t get_i64(const cJSON *o, const char *key, int64_t def)
{
	return get_number(o, key, def, -I53, I53);
}

static int64_t get_bytes(const cJSON *o, const char *key)
{
	return get_number(o, key, -1, 0, TIB);
}

/* How a snapshot reference is written. */
enum snap_shape {
	SNAP_SAVEPOINT,       /* {location, timeStamp, triggerType, formatType[, claimed]}, null without a location */
	SNAP_CLAIMED,         /* {location, checkpointId, timeStamp}: a savepoint restored in claim mode */
	SNAP_LAST_CHECKPOINT, /* {location, id, timeStamp}, null without a location */
	SNAP_CHECKPOINT,      /* {id, timeStamp, triggerType}: one flinklet asked for */
};

static cJSON *snap_to_json(enum snap_shape shape, const struct snapshot_ref *r)
{
	if (!r->location && (shape == SNAP_SAVEPOINT || shape == SNAP_LAST_CHECKPOINT))
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	if (shape != SNAP_CHECKPOINT)
		cJSON_AddStringToObject(o, "location", r->location);
	if (shape == SNAP_CLAIMED)
		cJSON_AddNumberToObject(o, "checkpointId", (double)r->id);
	if (shape == SNAP_LAST_CHECKPOINT || shape == SNAP_CHECKPOINT)
		cJSON_AddNumberToObject(o, "id", (double)r->id);
	cJSON_AddNumberToObject(o, "timeStamp", (double)r->time_ms);
	if (shape == SNAP_SAVEPOINT || shape == SNAP_CHECKPOINT)
		cJSON_AddItemToObject(o, "triggerType", str_or_null(r->trigger_type));
	if (shape == SNAP_SAVEPOINT) {
		cJSON_AddStringToObject(o, "formatType", r->format_type ? r->format_type : "UNKNOWN");
		if (r->claimed)
			cJSON_AddTrueToObject(o, "claimed");
	}
	return o;
}

/* Reads o into r (empty); false when o is no reference of the shape (r is left untouched). */
static bool snap_from_json(enum snap_shape shape, const cJSON *o, struct snapshot_ref *r)
{
	const char *location = get_str(o, "location");
	if (!cJSON_IsObject(o) || (!location && shape != SNAP_CHECKPOINT))
		return false;
	switch (shape) {
	case SNAP_SAVEPOINT: {
		snapshot_ref_set(r, location, -1, get_i64(o, "timeStamp", 0), get_str(o, "triggerType"));
		const char *fmt = get_str(o, "formatType");
		if (fmt && (!strcmp(fmt, "NATIVE") || !strcmp(fmt, "CANONICAL")))
			status_set_string(&r->format_type, fmt);
		r->claimed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "claimed"));
		break;
	}
	case SNAP_CLAIMED:
		snapshot_ref_set(r, location, get_i64(o, "checkpointId", -1), get_i64(o, "timeStamp", 0), NULL);
		r->claimed = true;
		break;
	case SNAP_LAST_CHECKPOINT:
		snapshot_ref_set(r, location, get_i64(o, "id", -1), get_i64(o, "timeStamp", 0), NULL);
		break;
	case SNAP_CHECKPOINT:
		snapshot_ref_set(r, NULL, get_i64(o, "id", -1), get_i64(o, "timeStamp", 0), get_str(o, "triggerType"));
		break;
	}
	return true;
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

static void memtuning_from_json(const cJSON *o, struct status_memtuning *m)
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

/* Errors and warnings: one slot per source, listed in the order of their sources ({source, [event,] message,
 * since}, the message redacted: it may quote a URI the user gave); a source this flinklet does not know (a newer
 * one's) is left out when read back. */
struct slots {
	int max;
	const char *(*name)(int i);
	const char *(*event)(int i); /* NULL: the list says no event */
	int (*from)(const char *name);
};

static const char *error_name(int i)
{
	return status_error_source_name((enum status_error_source)i);
}

static int error_from(const char *name)
{
	enum status_error_source src;
	return status_error_source_from_string(name, &src) < 0 ? -1 : (int)src;
}

static const char *warning_name(int i)
{
	return status_warning_source_name((enum status_warning_source)i);
}

static const char *warning_event(int i)
{
	return status_warning_event((enum status_warning_source)i);
}

static int warning_from(const char *name)
{
	enum status_warning_source src;
	return status_warning_source_from_string(name, &src) < 0 ? -1 : (int)src;
}

static const struct slots error_slots = {STATUS_ERR_MAX, error_name, NULL, error_from};
static const struct slots warning_slots = {STATUS_WARN_MAX, warning_name, warning_event, warning_from};

static cJSON *slots_to_json(const struct slots *k, const struct status_error *slot)
{
	cJSON *list = cJSON_CreateArray();
	for (int i = 0; i < k->max; i++) {
		if (!slot[i].message)
			continue;
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "source", k->name(i));
		if (k->event)
			cJSON_AddStringToObject(e, "event", k->event(i));
		char *msg = redact_text(slot[i].message);
		cJSON_AddStringToObject(e, "message", msg);
		free(msg);
		cJSON_AddNumberToObject(e, "since", (double)slot[i].since_ms);
		cJSON_AddItemToArray(list, e);
	}
	return list;
}

static void slots_from_json(const struct slots *k, const cJSON *list, struct status_error *slot)
{
	const cJSON *e;
	cJSON_ArrayForEach (e, list) {
		int i = k->from(get_str(e, "source"));
		if (i < 0 || !get_str(e, "message"))
			continue;
		status_set_string(&slot[i].message, get_str(e, "message"));
		slot[i].since_ms = get_i64(e, "since", 0);
	}
}

/* ---- the field table: each field of the document once ----
 *
 * One row per field of struct status, in the document's order: where it is (its path of object keys), its kind
 * (how it is kept, written and read back), what it is when none is known, whether it carries over to the next
 * run (status_carry_over) and how, and the one file of src/supervisor/ that writes it (its owner: every other
 * file asks the owner's header; tests/static/test_layout.py holds the code to it). status_init, status_free,
 * status_to_json, status_parse and status_carry_over walk the table: a field is added here once. */

enum field_kind {
	F_LIFECYCLE, /* enum lifecycle_state: its name */
	F_STRING,    /* char *: a string, or null (.none when it is NULL) */
	F_JOB_ID,    /* char[33]: 32 hex digits, or null */
	F_INT,       /* int (a pid too): a number */
	F_I64,       /* int64_t: a number */
	F_SNAPSHOT,  /* struct snapshot_ref: .shape */
	F_LIST,      /* struct snapshot_ref[.max], their count at .count: an array of .shape */
	F_MEMTUNING, /* struct status_memtuning: an object */
	F_SLOTS,     /* struct status_error[]: .slots, an array of those set */
	F_DERIVED,   /* no field of its own: written by its hook from others, never read back */
};

struct status_field;
typedef void field_render_fn(const struct status *st, const struct status_field *f, cJSON *parent, const char *key);
typedef void field_parse_fn(struct status *st, const struct status_field *f, const cJSON *parent, const char *key);
typedef void field_carry_fn(struct status *st, struct status *old, const struct status_field *f);

struct status_field {
	const char *path;      /* its place in the document: object keys joined by '.' */
	enum field_kind kind;  /* how it is kept, written and read back */
	size_t off, size;      /* the field in struct status */
	const char *owner;     /* the one file that writes it (NULL: nothing, derived) */
	field_carry_fn *carry; /* how it carries over to the next run; NULL: it does not */
	/* numbers: the value of none, read back for one missing, not a number or out of [lo, hi]; nullable: written
	 * null when below 0 */
	int64_t none_value, lo, hi;
	bool nullable;
	const char *none; /* strings: written for NULL (else null) */
	bool redact;      /* strings: may quote a URI the user gave: never its credentials or signature */
	enum snap_shape shape;
	size_t count; /* lists: their count in struct status */
	int max;      /* lists: their capacity */
	const struct slots *slots;
	/* a shape of its own: written or read back by its hook instead of the kind's way (read back after every other
	 * field, which it may look at) */
	field_render_fn *render;
	field_parse_fn *parse;
};

#define AT(st, f, type) ((type *)((char *)(st) + (f)->off))
#define AT_C(st, f, type) ((const type *)((const char *)(st) + (f)->off))

_Static_assert(sizeof(pid_t) == sizeof(int), "pids are kept as F_INT");

/* jvm.starts of a document of a flinklet that kept only the restarts: they and the first start, when one is told */
static void parse_starts(struct status *st, const struct status_field *f, const cJSON *jvm, const char *key)
{
	int *starts = AT(st, f, int);
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(jvm, key))) {
		*starts = (int)get_number(jvm, key, 0, INT_MIN, INT_MAX);
	} else {
		int restarts = (int)get_number(jvm, "restarts", 0, INT_MIN, INT_MAX);
		bool started =
		    st->jvm_pid > 0 || st->last_exit_code >= 0 || st->last_exit_signal >= 0 || st->start_time_ms > 0;
		*starts = restarts > 0 && restarts < INT_MAX ? restarts + 1 : started ? 1 : 0;
	}
	if (*starts < 0)
		*starts = 0;
}

static void render_restarts(const struct status *st, const struct status_field *f, cJSON *jvm, const char *key)
{
	(void)f;
	cJSON_AddNumberToObject(jvm, key, status_jvm_restarts(st));
}

/* autoscaler.parallelismOverrides: kept as the JSON text of an object ({vertex: "parallelism"}) */
static void render_overrides(const struct status *st, const struct status_field *f, cJSON *as, const char *key)
{
	const char *text = *AT_C(st, f, char *);
	cJSON *ov = text ? cJSON_Parse(text) : NULL;
	cJSON_AddItemToObject(as, key, cJSON_IsObject(ov) ? ov : cJSON_CreateObject());
	if (ov && !cJSON_IsObject(ov))
		cJSON_Delete(ov);
}

static void parse_overrides(struct status *st, const struct status_field *f, const cJSON *as, const char *key)
{
	const cJSON *ov = cJSON_GetObjectItemCaseSensitive(as, key);
	if (cJSON_IsObject(ov)) {
		char *t = cJSON_PrintUnformatted(ov);
		status_set_string(AT(st, f, char *), t);
		free(t);
	}
}

static void carry_move(struct status *st, struct status *old, const struct status_field *f);

/* memory tuning: the recommendation, the next launch's settings, why it is undone; not what ran (no JVM runs) */
static void carry_memtuning(struct status *st, struct status *old, const struct status_field *f)
{
	struct status_memtuning *m = AT(st, f, struct status_memtuning), *o = AT(old, f, struct status_memtuning);
	status_memtuning_clear(m);
	*m = *o;
	m->run_heap = m->run_managed = m->run_metaspace = -1;
	o->reason = o->suspended = NULL;
}

#define ROW(p, k, field, who)                                                                                          \
	.path = (p), .kind = (k), .off = offsetof(struct status, field), .size = sizeof(((struct status *)0)->field),  \
	.owner = (who)
#define NUMBER(def, min, max, null) .none_value = (def), .lo = (min), .hi = (max), .nullable = (null)
#define INT_ANY NUMBER(0, INT_MIN, INT_MAX, false)
#define INT_OR_NULL NUMBER(-1, INT_MIN, INT_MAX, true)
#define I64_ANY NUMBER(0, -I53, I53, false)
#define I64_OR_NULL NUMBER(-1, -I53, I53, true)
#define LIST(n, cap) .count = offsetof(struct status, n), .max = (cap)
#define KEPT .carry = carry_move

static const struct status_field fields[] = {
    {ROW("lifecycleState", F_LIFECYCLE, lifecycle, "sup_core.c")},
    {ROW("name", F_STRING, name, "supervisor.c")},
    {ROW("jobStatus.jobId", F_JOB_ID, job_id, "sup_core.c")},
    {ROW("jobStatus.state", F_STRING, job_state, "sup_core.c"), KEPT},
    {ROW("jobStatus.startTime", F_I64, start_time_ms, "sup_poll.c"), I64_ANY, KEPT},
    {ROW("jobStatus.updateTime", F_I64, update_time_ms, "sup_core.c"), I64_ANY, KEPT},
    {ROW("jobStatus.tasks.total", F_INT, tasks_total, "sup_poll.c"), INT_ANY},
    {ROW("jobStatus.tasks.running", F_INT, tasks_running, "sup_poll.c"), INT_ANY},
    {ROW("jobStatus.tasks.finished", F_INT, tasks_finished, "sup_poll.c"), INT_ANY},
    {ROW("jobStatus.savepointInfo.lastSavepoint", F_SNAPSHOT, last_savepoint, "sup_snapshot.c"),
     .shape = SNAP_SAVEPOINT, KEPT},
    {ROW("jobStatus.savepointInfo.savepointHistory", F_LIST, savepoint_history, "sup_snapshot.c"),
     .shape = SNAP_SAVEPOINT, LIST(n_savepoint_history, SAVEPOINT_HISTORY_MAX), KEPT},
    {ROW("jobStatus.savepointInfo.claimedSavepoints", F_LIST, claimed_savepoints, "sup_restore.c"),
     .shape = SNAP_CLAIMED, LIST(n_claimed_savepoints, CLAIMED_SAVEPOINTS_MAX), KEPT},
    {ROW("jobStatus.savepointInfo.lastTriggerNonce", F_I64, savepoint_trigger_nonce, "sup_snapshot.c"), I64_OR_NULL,
     KEPT},
    {ROW("jobStatus.checkpointInfo.lastCheckpoint", F_SNAPSHOT, last_checkpoint, "sup_poll.c"),
     .shape = SNAP_LAST_CHECKPOINT, KEPT},
    {ROW("jobStatus.checkpointInfo.stateSize", F_I64, state_size, "sup_poll.c"), NUMBER(-1, 0, TIB, true), KEPT},
    {ROW("jobStatus.checkpointInfo.checkpointHistory", F_LIST, checkpoint_history, "sup_snapshot.c"),
     .shape = SNAP_CHECKPOINT, LIST(n_checkpoint_history, CHECKPOINT_HISTORY_MAX), KEPT},
    {ROW("jobStatus.checkpointInfo.lastTriggerNonce", F_I64, checkpoint_trigger_nonce, "sup_snapshot.c"), I64_OR_NULL,
     KEPT},
    {ROW("restoredFrom.kind", F_STRING, restored_kind, "sup_launch.c"), .none = "none"},
    {ROW("restoredFrom.location", F_STRING, restored_location, "sup_launch.c")},
    {ROW("restoredFrom.id", F_I64, restored_id, "sup_launch.c"), I64_OR_NULL},
    {ROW("jvm.pid", F_INT, jvm_pid, "sup_launch.c"), INT_ANY},
    {ROW("jvm.standbyPid", F_INT, standby_pid, "sup_standby.c"), INT_ANY},
    /* every JVM start on the volume, an earlier flinklet's first too (this one's launch adds to them) */
    {ROW("jvm.starts", F_INT, jvm_starts, "sup_launch.c"), INT_ANY, .parse = parse_starts, KEPT},
    {.path = "jvm.restarts", .kind = F_DERIVED, .render = render_restarts},
    {ROW("jvm.lastExitCode", F_INT, last_exit_code, "supervisor.c"), INT_OR_NULL},
    {ROW("jvm.lastExitSignal", F_INT, last_exit_signal, "supervisor.c"), INT_OR_NULL},
    /* longer than an hour: not a figure a stop could have measured, not believed */
    {ROW("jvm.stopExitMs", F_I64, stop_exit_ms, "sup_stop.c"), NUMBER(-1, -I53, 3600 * 1000, true), KEPT},
    {ROW("flink.version", F_STRING, flink_version, "supervisor.c")},
    {ROW("flink.restPort", F_INT, rest_port, "supervisor.c"), INT_ANY},
    {ROW("autoscaler.parallelismOverrides", F_STRING, autoscaler_overrides, "sup_autoscaler.c"),
     .render = render_overrides, .parse = parse_overrides},
    {ROW("autoscaler.memoryTuning", F_MEMTUNING, memory_tuning, "sup_memtune.c"), .carry = carry_memtuning},
    {ROW("supervisor.pid", F_INT, supervisor_pid, "supervisor.c"), INT_ANY},
    {ROW("supervisor.httpAddress", F_STRING, http_address, "sup_http.c")},
    {ROW("supervisor.tokenFile", F_STRING, token_file, "sup_http.c")},
    {ROW("supervisor.flinkMetrics", F_STRING, flink_metrics, "sup_flinkmetrics.c")},
    {ROW("intent", F_STRING, intent, "sup_core.c")},
    /* not the errors: they were the earlier flinklet's news; each source says again what still holds */
    {ROW("error", F_STRING, error, "sup_core.c"), .redact = true},
    {ROW("errors", F_SLOTS, errors, "sup_core.c"), .slots = &error_slots},
    {ROW("warnings", F_SLOTS, warnings, "sup_core.c"), .slots = &warning_slots},
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* ---- the walks of the table ---- */

void status_init(struct status *st)
{
	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct status_field *f = &fields[i];
		if (f->kind == F_INT)
			*AT(st, f, int) = (int)f->none_value;
		else if (f->kind == F_I64)
			*AT(st, f, int64_t) = f->none_value;
		else if (f->kind == F_LIFECYCLE)
			*AT(st, f, enum lifecycle_state) = LIFECYCLE_CREATED;
		else if (f->kind == F_SNAPSHOT)
			AT(st, f, struct snapshot_ref)->id = -1;
		else if (f->kind == F_MEMTUNING)
			status_memtuning_clear(AT(st, f, struct status_memtuning));
	}
}

/* What field f holds is given up (freed), and it is left empty. */
static void field_free(struct status *st, const struct status_field *f)
{
	switch (f->kind) {
	case F_STRING:
		free(*AT(st, f, char *));
		*AT(st, f, char *) = NULL;
		break;
	case F_SNAPSHOT:
		snapshot_ref_free(AT(st, f, struct snapshot_ref));
		break;
	case F_LIST: {
		int *n = (int *)((char *)st + f->count);
		for (int i = 0; i < *n; i++)
			snapshot_ref_free(&AT(st, f, struct snapshot_ref)[i]);
		*n = 0;
		break;
	}
	case F_MEMTUNING:
		status_memtuning_clear(AT(st, f, struct status_memtuning));
		break;
	case F_SLOTS:
		for (int i = 0; i < f->slots->max; i++) {
			free(AT(st, f, struct status_error)[i].message);
			AT(st, f, struct status_error)[i] = (struct status_error){NULL, 0};
		}
		break;
	default:
		break;
	}
}

void status_free(struct status *st)
{
	for (size_t i = 0; i < N_FIELDS; i++)
		field_free(st, &fields[i]);
	status_init(st);
}

/* The field moves from old to st (what st held is freed; old is left empty). */
static void carry_move(struct status *st, struct status *old, const struct status_field *f)
{
	field_free(st, f);
	memcpy((char *)st + f->off, (char *)old + f->off, f->size);
	memset((char *)old + f->off, 0, f->size);
	if (f->kind == F_LIST) {
		*(int *)((char *)st + f->count) = *(int *)((char *)old + f->count);
		*(int *)((char *)old + f->count) = 0;
	}
}

void status_carry_over(struct status *st, struct status *old)
{
	for (size_t i = 0; i < N_FIELDS; i++)
		if (fields[i].carry)
			fields[i].carry(st, old, &fields[i]);
}

/* The object that holds path's last key (*key), found, or created on the way when make (objects are created in
 * the order the table first names them: the document's order); NULL when it is not there. */
static cJSON *holder_of(cJSON *root, const char *path, bool make, const char **key)
{
	cJSON *o = root;
	const char *last = strrchr(path, '.');
	*key = last ? last + 1 : path;
	for (const char *p = path, *dot; o && (dot = strchr(p, '.')); p = dot + 1) {
		char name[32];
		snprintf(name, sizeof(name), "%.*s", (int)(dot - p), p);
		cJSON *next = cJSON_GetObjectItemCaseSensitive(o, name);
		o = next || !make ? next : cJSON_AddObjectToObject(o, name);
	}
	return o;
}

static void field_to_json(const struct status *st, const struct status_field *f, cJSON *o, const char *key)
{
	cJSON *v = NULL;
	switch (f->kind) {
	case F_LIFECYCLE:
		v = cJSON_CreateString(lifecycle_to_string(*AT_C(st, f, enum lifecycle_state)));
		break;
	case F_STRING: {
		const char *s = *AT_C(st, f, char *);
		char *redacted = f->redact ? redact_text(s) : NULL;
		v = str_or_null(redacted ? redacted : s ? s : f->none);
		free(redacted);
		break;
	}
	case F_JOB_ID: {
		const char *id = AT_C(st, f, char);
		v = str_or_null(id[0] ? id : NULL);
		break;
	}
	case F_INT:
	case F_I64: {
		int64_t n = f->kind == F_INT ? *AT_C(st, f, int) : *AT_C(st, f, int64_t);
		v = f->nullable && n < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)n);
		break;
	}
	case F_SNAPSHOT:
		v = snap_to_json(f->shape, AT_C(st, f, struct snapshot_ref));
		break;
	case F_LIST: {
		v = cJSON_CreateArray();
		int n = *(const int *)((const char *)st + f->count);
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(v, snap_to_json(f->shape, &AT_C(st, f, struct snapshot_ref)[i]));
		break;
	}
	case F_MEMTUNING:
		v = cJSON_CreateObject();
		memtuning_to_json(AT_C(st, f, struct status_memtuning), v);
		break;
	case F_SLOTS:
		v = slots_to_json(f->slots, AT_C(st, f, struct status_error));
		break;
	case F_DERIVED:
		return;
	}
	cJSON_AddItemToObject(o, key, v);
}

cJSON *status_to_json(const struct status *st)
{
	cJSON *root = cJSON_CreateObject();
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct status_field *f = &fields[i];
		const char *key;
		cJSON *o = holder_of(root, f->path, true, &key);
		if (f->render)
			f->render(st, f, o, key);
		else
			field_to_json(st, f, o, key);
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

static void field_from_json(struct status *st, const struct status_field *f, const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	switch (f->kind) {
	case F_LIFECYCLE: {
		enum lifecycle_state ls;
		if (lifecycle_from_string(cJSON_GetStringValue(v), &ls) == 0)
			*AT(st, f, enum lifecycle_state) = ls;
		break;
	}
	case F_STRING:
		status_set_string(AT(st, f, char *), cJSON_IsString(v) ? v->valuestring : NULL);
		break;
	case F_JOB_ID: {
		const char *id = cJSON_GetStringValue(v);
		if (id && strlen(id) == 32)
			memcpy(AT(st, f, char), id, 33);
		break;
	}
	case F_INT:
		*AT(st, f, int) = (int)get_number(o, key, f->none_value, f->lo, f->hi);
		break;
	case F_I64:
		*AT(st, f, int64_t) = get_number(o, key, f->none_value, f->lo, f->hi);
		break;
	case F_SNAPSHOT:
		snap_from_json(f->shape, v, AT(st, f, struct snapshot_ref));
		break;
	case F_LIST: {
		int *n = (int *)((char *)st + f->count);
		const cJSON *item;
		cJSON_ArrayForEach (item, v) {
			if (*n >= f->max)
				break;
			if (snap_from_json(f->shape, item, &AT(st, f, struct snapshot_ref)[*n]))
				(*n)++;
		}
		break;
	}
	case F_MEMTUNING:
		memtuning_from_json(v, AT(st, f, struct status_memtuning));
		break;
	case F_SLOTS:
		slots_from_json(f->slots, v, AT(st, f, struct status_error));
		break;
	case F_DERIVED:
		break;
	}
}

int status_parse(const char *text, struct status *st)
{
	status_init(st);
	cJSON *root = cJSON_Parse(text);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return -EINVAL;
	}
	/* the fields of a kind, then those of a hook (which may look at the others) */
	for (int hooks = 0; hooks < 2; hooks++)
		for (size_t i = 0; i < N_FIELDS; i++) {
			const struct status_field *f = &fields[i];
			if (!f->parse != !hooks)
				continue;
			const char *key;
			const cJSON *o = holder_of(root, f->path, false, &key);
			if (f->parse)
				f->parse(st, f, o, key);
			else
				field_from_json(st, f, o, key);
		}
	cJSON_Delete(root);
	return 0;
}

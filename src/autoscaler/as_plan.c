/* as_plan: `flinklet autoscaler plan`: the autoscaler's decision for recorded or hypothetical metrics.
 * Reads the input document (config, now, vertices with their evaluated metrics and scaling history, or
 * samples of a whole metric window, and the pending delayed scale-downs), validates every field with
 * messages that name its JSON path, runs evaluation (when samples are given) and the decision, and
 * renders the output document (docs/autoscaler.md). It is not for the command line (main.c). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"
#include "memtune.h"

#define MAX_PLAN_BYTES (16u << 20)
#define MAX_PLAN_VERTICES 10000
#define MAX_P 32768

struct plan {
	struct as_options o;
	int64_t now;
	struct as_topology t;
	struct as_evaluation ev;
	struct as_scaling_history history;
	struct as_samples samples;
	struct as_delayed delayed;
	bool have_samples, samples_read, backlog;
	double tm_cpu;
	uint64_t tm_memory;
	uint64_t tuned_heap; /* taskManager.tunedHeap: the running JVM's heap as memory tuning set it; 0: untuned */
	int slots;
	const struct spec *spec; /* -c's (with the input's config over it: own), or NULL */
	struct spec *own;        /* a copy of -c's spec whose conf entries are its own, with config's keys over them */
	cJSON *events;
	struct strv *errors;
};

static void err(struct plan *pl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err(struct plan *pl, const char *fmt, ...)
{
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	strv_push_take(pl->errors, strbuf_steal(&b));
}

static bool check_keys(struct plan *pl, const cJSON *obj, const char *path, const char *const *known, size_t n)
{
	bool ok = true;
	for (const cJSON *c = obj->child; c; c = c->next) {
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = !strcmp(c->string, known[i]);
		if (found)
			continue;
		const char *hint = as_did_you_mean(c->string, known, n);
		err(pl, "%s%s%s: unknown field%s%s%s", path, *path ? "." : "", c->string,
		    hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
		ok = false;
	}
	return ok;
}

static bool want_int(struct plan *pl, const cJSON *j, const char *path, int64_t min, int64_t max, const char *what,
                     int64_t *ret)
{
	if (as_json_int64(j, min, max, ret) == 0)
		return true;
	err(pl, "%s: must be %s", path, what);
	return false;
}

/* ---- vertices ---- */

static void emetrics_init(struct as_eval_metric *m)
{
	for (int k = 0; k < AS_EM_COUNT; k++)
		m[k].current = m[k].average = NAN;
}

static void parse_evaluated(struct plan *pl, const cJSON *j, const char *path, struct as_eval_metric *m)
{
	if (!cJSON_IsObject(j)) {
		err(pl, "%s: must be an object of metric names to numbers", path);
		return;
	}
	const char *names[AS_EM_COUNT];
	for (int k = 0; k < AS_EM_COUNT; k++)
		names[k] = as_emetric_name((enum as_emetric)k);
	for (const cJSON *c = j->child; c; c = c->next) {
		int k = as_emetric_from_name(c->string);
		if (k < 0) {
			const char *hint = as_did_you_mean(c->string, names, AS_EM_COUNT);
			err(pl, "%s.%s: unknown metric%s%s%s", path, c->string, hint ? " (did you mean \"" : "",
			    hint ? hint : "", hint ? "\"?)" : "");
			continue;
		}
		if (as_eval_metric_from_json(c, as_emetric_fields(k), &m[k]) < 0)
			err(pl, "%s.%s: must be a number, \"NaN\", \"Infinity\", null or {\"current\", \"average\"}",
			    path, c->string);
	}
}

static void parse_history(struct plan *pl, const cJSON *j, const char *path, const char *vertex)
{
	if (!cJSON_IsArray(j)) {
		err(pl, "%s: must be an array of scaling history entries, oldest first", path);
		return;
	}
	size_t i = 0;
	int64_t prev = -1;
	for (const cJSON *c = j->child; c; c = c->next, i++) {
		char *p = xasprintf("%s[%zu]", path, i);
		struct as_history_entry e;
		char *why = NULL;
		if (as_history_entry_from_json(c, p, &e, &why) < 0) {
			strv_push_take(pl->errors, why);
		} else if (e.ts <= prev) {
			err(pl, "%s.timestamp: must be after the previous entry's (oldest first)", p);
		} else {
			as_scaling_history_add(&pl->history, vertex, &e);
			prev = e.ts;
		}
		free(p);
	}
}

static void parse_vertex(struct plan *pl, const cJSON *j, size_t idx, const cJSON **inputs,
                         struct as_eval_metric *given)
{
	static const char *const known[] = {"id",     "parallelism", "maxParallelism", "numSourcePartitions",
	                                    "inputs", "evaluated",   "history",        "slotSharingGroup"};
	char *path = xasprintf("vertices[%zu]", idx);
	struct as_vertex *v = &pl->t.v[idx];
	emetrics_init(given);
	if (!cJSON_IsObject(j)) {
		err(pl, "%s: must be an object", path);
		v->id = xstrdup(""); /* counted like the others: later checks compare ids */
		free(path);
		return;
	}
	check_keys(pl, j, path, known, sizeof(known) / sizeof(known[0]));
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	if (!cJSON_IsString(id) || !*id->valuestring || strlen(id->valuestring) > 256)
		err(pl, "%s.id: must be a non-empty string (the job vertex id)", path);
	else if (as_topology_find(&pl->t, id->valuestring) >= 0)
		err(pl, "%s.id: duplicate vertex id \"%s\"", path, id->valuestring);
	v->id = xstrdup(cJSON_IsString(id) ? id->valuestring : "");
	char *p = xasprintf("%s.parallelism", path);
	int64_t x = 1, maxp = MAX_P;
	if (want_int(pl, cJSON_GetObjectItemCaseSensitive(j, "parallelism"), p, 1, MAX_P,
	             "a positive integer (at most 32768)", &x))
		v->parallelism = (int)x;
	free(p);
	p = xasprintf("%s.maxParallelism", path);
	if (want_int(pl, cJSON_GetObjectItemCaseSensitive(j, "maxParallelism"), p, 1, MAX_P,
	             "a positive integer (at most 32768)", &maxp))
		v->max_parallelism = (int)maxp;
	else
		maxp = MAX_P;
	free(p);
	if (v->parallelism > 0 && v->max_parallelism > 0 && v->parallelism > v->max_parallelism)
		err(pl, "%s.parallelism: must not exceed maxParallelism %d (got %d)", path, v->max_parallelism,
		    v->parallelism);
	const cJSON *nsp = cJSON_GetObjectItemCaseSensitive(j, "numSourcePartitions");
	p = xasprintf("%s.numSourcePartitions", path);
	if (nsp && want_int(pl, nsp, p, 0, INT32_MAX, "a non-negative integer (0: unknown)", &x))
		v->num_source_partitions = (int)x;
	free(p);
	const cJSON *ssg = cJSON_GetObjectItemCaseSensitive(j, "slotSharingGroup");
	if (ssg && !cJSON_IsString(ssg))
		err(pl, "%s.slotSharingGroup: must be a string", path);
	else if (ssg)
		v->slot_sharing_group = xstrdup(ssg->valuestring);
	*inputs = cJSON_GetObjectItemCaseSensitive(j, "inputs");
	if (*inputs && !cJSON_IsArray(*inputs)) {
		err(pl, "%s.inputs: must be an array of {\"id\", \"shipStrategy\"} (empty for a source)", path);
		*inputs = NULL;
	}
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "evaluated");
	if (ev) {
		p = xasprintf("%s.evaluated", path);
		if (pl->have_samples)
			err(pl, "%s: not allowed together with samples (the samples are evaluated)", p);
		else
			parse_evaluated(pl, ev, p, given);
		free(p);
	}
	const cJSON *hist = cJSON_GetObjectItemCaseSensitive(j, "history");
	if (hist) {
		p = xasprintf("%s.history", path);
		parse_history(pl, hist, p, v->id);
		free(p);
	}
	free(path);
}

static void link_inputs(struct plan *pl, size_t idx, const cJSON *inputs)
{
	struct as_vertex *v = &pl->t.v[idx];
	size_t k = 0;
	const cJSON *in;
	cJSON_ArrayForEach (in, inputs) {
		char *p = xasprintf("vertices[%zu].inputs[%zu]", idx, k++);
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "id");
		const cJSON *ship = cJSON_GetObjectItemCaseSensitive(in, "shipStrategy");
		int from = cJSON_IsString(id) ? as_topology_find(&pl->t, id->valuestring) : -1;
		enum as_ship s = as_ship_from_string(cJSON_IsString(ship) ? ship->valuestring : NULL);
		if (!cJSON_IsObject(in)) {
			err(pl, "%s: must be an object {\"id\", \"shipStrategy\"}", p);
		} else if (from < 0) {
			err(pl, "%s.id: must name another vertex%s%s%s", p, cJSON_IsString(id) ? " (no vertex \"" : "",
			    cJSON_IsString(id) ? id->valuestring : "", cJSON_IsString(id) ? "\")" : "");
		} else if (s == AS_SHIP_UNKNOWN &&
		           !(cJSON_IsString(ship) && !strcasecmp(ship->valuestring, "UNKNOWN"))) {
			err(pl,
			    "%s.shipStrategy: must be one of HASH, REBALANCE, RESCALE, FORWARD, CUSTOM, BROADCAST, "
			    "GLOBAL, "
			    "SHUFFLE, UNKNOWN%s%s%s",
			    p, cJSON_IsString(ship) ? " (got \"" : "", cJSON_IsString(ship) ? ship->valuestring : "",
			    cJSON_IsString(ship) ? "\")" : "");
		} else if ((size_t)from == idx) {
			err(pl, "%s.id: a vertex cannot be its own input", p);
		} else {
			v->inputs = xrealloc(v->inputs, (v->ninputs + 1) * sizeof(*v->inputs));
			v->inputs[v->ninputs].from = (size_t)from;
			v->inputs[v->ninputs].ship = s;
			v->ninputs++;
		}
		free(p);
	}
}

/* ---- the whole input ---- */

static void parse_task_manager(struct plan *pl, const cJSON *j)
{
	static const char *const known[] = {"cpu", "memory", "slots", "tunedHeap"};
	if (!cJSON_IsObject(j)) {
		err(pl, "taskManager: must be an object {\"cpu\", \"memory\", \"slots\", \"tunedHeap\"}");
		return;
	}
	check_keys(pl, j, "taskManager", known, 4);
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(j, "cpu"),
	            *mem = cJSON_GetObjectItemCaseSensitive(j, "memory");
	const cJSON *slots = cJSON_GetObjectItemCaseSensitive(j, "slots");
	if (cpu && (!cJSON_IsNumber(cpu) || !(cpu->valuedouble >= 0) || isinf(cpu->valuedouble)))
		err(pl, "taskManager.cpu: must be a non-negative number of cores");
	else if (cpu)
		pl->tm_cpu = cpu->valuedouble;
	int64_t x;
	if (mem && cJSON_IsString(mem)) {
		if (parse_memory(mem->valuestring, &pl->tm_memory) < 0)
			err(pl, "taskManager.memory: must be a memory size such as 2g (got \"%s\")", mem->valuestring);
	} else if (mem &&
	           want_int(pl, mem, "taskManager.memory", 0, INT64_MAX, "bytes or a memory size such as \"2g\"", &x)) {
		pl->tm_memory = (uint64_t)x;
	}
	if (slots && want_int(pl, slots, "taskManager.slots", 1, MAX_P, "a positive integer", &x))
		pl->slots = (int)x;
	const cJSON *tuned = cJSON_GetObjectItemCaseSensitive(j, "tunedHeap");
	if (tuned && want_int(pl, tuned, "taskManager.tunedHeap", 0, INT64_MAX, "bytes", &x))
		pl->tuned_heap = (uint64_t)x;
}

static void parse_global(struct plan *pl, const cJSON *j)
{
	if (pl->have_samples) {
		err(pl, "global: not allowed together with samples (the samples are evaluated)");
		return;
	}
	if (!cJSON_IsObject(j)) {
		err(pl, "global: must be an object of metric names to numbers");
		return;
	}
	for (const cJSON *c = j->child; c; c = c->next) {
		int k = as_egmetric_from_name(c->string);
		if (k < 0)
			err(pl,
			    "global.%s: unknown metric (expected GC_PRESSURE, HEAP_MAX_USAGE_RATIO, HEAP_MEMORY_USED, "
			    "MANAGED_MEMORY_USED, METASPACE_MEMORY_USED, NUM_TASK_SLOTS_USED)",
			    c->string);
		else if (as_eval_metric_from_json(c, as_egmetric_fields(k), &pl->ev.g[k]) < 0)
			err(pl, "global.%s: must be a number or {\"current\", \"average\"}", c->string);
	}
}

static void parse_samples(struct plan *pl, const cJSON *j)
{
	char *why = NULL;
	if (as_samples_from_json_at(j, "samples", &pl->samples, &why) < 0) {
		strv_push_take(pl->errors, why);
		return;
	}
	if (pl->samples.n < 2)
		err(pl, "samples: at least 2 samples are needed to evaluate rates (got %zu)", pl->samples.n);
}

/* The samples' vertices must be vertices; values are rounded as the collector stores them. */
static void check_samples(struct plan *pl)
{
	size_t nhint = 0, *hint = NULL;
	for (size_t i = 0; i < pl->samples.n; i++) {
		struct as_sample *s = &pl->samples.s[i];
		if (s->n > nhint) {
			hint = xrealloc(hint, s->n * sizeof(*hint));
			for (size_t k = nhint; k < s->n; k++)
				hint[k] = k;
			nhint = s->n;
		}
		for (size_t k = 0; k < s->n; k++) {
			int idx = as_topology_find_hinted(&pl->t, s->v[k].id, &hint[k]);
			if (idx < 0) {
				err(pl, "samples[%zu].vertices.%s: no such vertex in vertices", i, s->v[k].id);
				continue;
			}
			for (int m = 0; m < AS_VM_COUNT; m++)
				s->v[k].m[m] = as_round3(s->v[k].m[m]);
			/* the collector always stores LAG for a source (0 without pendingRecords) */
			if (as_is_source(&pl->t.v[idx]) && isnan(s->v[k].m[AS_VM_LAG]))
				s->v[k].m[AS_VM_LAG] = 0;
		}
	}
	free(hint);
}

/* The Flink keys memory tuning's budget reads that are memory sizes (src/config/membudget.c), as Flink spells
 * them and as it spelled them before. */
static bool is_memory_key(const char *key)
{
	static const char *const keys[] = {
	    "taskmanager.memory.managed.size",       "taskmanager.memory.size",
	    "taskmanager.memory.network.min",        "taskmanager.network.memory.min",
	    "taskmanager.memory.network.max",        "taskmanager.network.memory.max",
	    "taskmanager.memory.task.off-heap.size", "taskmanager.memory.framework.off-heap.size",
	    "taskmanager.memory.jvm-metaspace.size"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

/* The input's config is Flink keys to values over the spec's (docs/autoscaler.md, "The plan command"): memory
 * tuning reads the spec of -c with them set over its own (its memory keys, the state backend, the slots). */
static void config_over_spec(struct plan *pl, const cJSON *config, const struct spec *spec)
{
	if (!spec || !cJSON_IsObject(config) || !config->child)
		return;
	struct spec *o = xcalloc(1, sizeof(*o));
	*o = *spec; /* the rest is -c's, only read; the conf entries are the copy's own */
	o->conf = xcalloc(spec->nconf + 1, sizeof(*o->conf));
	for (size_t i = 0; i < spec->nconf; i++) {
		o->conf[i] = spec->conf[i];
		o->conf[i].key = xstrdup(spec->conf[i].key);
		o->conf[i].value = xstrdup(spec->conf[i].value);
	}
	for (const cJSON *c = config->child; c; c = c->next) {
		char *v = cJSON_IsString(c)   ? xstrdup(c->valuestring)
		          : cJSON_IsBool(c)   ? xstrdup(cJSON_IsTrue(c) ? "true" : "false")
		          : cJSON_IsNumber(c) ? xasprintf("%.17g", c->valuedouble)
		                              : NULL;
		uint64_t bytes;
		if (v && is_memory_key(c->string) && parse_memory(v, &bytes) < 0)
			err(pl, "config.%s: must be a memory size such as 64m or 1g (got \"%s\")", c->string, v);
		else if (v)
			spec_set(o, c->string, v, ORIGIN_OVERRIDE, NULL);
		free(v);
	}
	pl->own = o;
	pl->spec = o;
}

static int parse_input(struct plan *pl, const cJSON *root, const struct spec *spec)
{
	static const char *const known[] = {"config",           "now",    "vertices",          "samples",
	                                    "delayedScaleDown", "global", "processingBacklog", "taskManager"};
	if (!cJSON_IsObject(root)) {
		err(pl, "(document): must be a JSON object");
		return -EINVAL;
	}
	check_keys(pl, root, "", known, sizeof(known) / sizeof(known[0]));
	as_options_from_json(spec, cJSON_GetObjectItemCaseSensitive(root, "config"), "config", &pl->o, pl->errors);
	config_over_spec(pl, cJSON_GetObjectItemCaseSensitive(root, "config"), spec);
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(root, "now");
	pl->now = (int64_t)(now_realtime() / USEC_PER_MSEC);
	if (now)
		want_int(pl, now, "now", 0, INT64_C(1) << 53, "a timestamp in epoch milliseconds", &pl->now);
	const cJSON *samples = cJSON_GetObjectItemCaseSensitive(root, "samples");
	pl->have_samples = samples != NULL;
	if (samples && !pl->samples_read)
		parse_samples(pl, samples);
	else if (samples && pl->samples.n < 2)
		err(pl, "samples: at least 2 samples are needed to evaluate rates (got %zu)", pl->samples.n);
	const cJSON *backlog = cJSON_GetObjectItemCaseSensitive(root, "processingBacklog");
	if (backlog && !cJSON_IsBool(backlog))
		err(pl, "processingBacklog: must be true or false");
	else if (backlog && pl->have_samples)
		err(pl, "processingBacklog: not allowed together with samples (it is detected from them)");
	pl->backlog = cJSON_IsTrue(backlog);
	const cJSON *tm = cJSON_GetObjectItemCaseSensitive(root, "taskManager");
	if (tm)
		parse_task_manager(pl, tm);

	const cJSON *vs = cJSON_GetObjectItemCaseSensitive(root, "vertices");
	int n = cJSON_GetArraySize(vs);
	if (!cJSON_IsArray(vs) || n == 0 || n > MAX_PLAN_VERTICES) {
		err(pl, "vertices: must be a non-empty array of vertices (at most %d)", MAX_PLAN_VERTICES);
		return -EINVAL;
	}
	pl->t.v = xcalloc((size_t)n, sizeof(*pl->t.v));
	pl->ev.n = (size_t)n;
	pl->ev.v = xcalloc((size_t)n, sizeof(*pl->ev.v));
	for (int k = 0; k < AS_EG_COUNT; k++)
		pl->ev.g[k].current = pl->ev.g[k].average = NAN;
	const cJSON **inputs = xcalloc((size_t)n, sizeof(cJSON *));
	size_t i = 0;
	const cJSON *v;
	cJSON_ArrayForEach (v, vs) {
		parse_vertex(pl, v, i, &inputs[i], pl->ev.v[i].m);
		pl->t.n = ++i;
	}
	for (i = 0; i < pl->t.n; i++)
		link_inputs(pl, i, inputs[i]);
	free(inputs);
	if (pl->errors->n == 0 && as_topology_link(&pl->t) < 0)
		err(pl, "vertices: the inputs form a cycle");

	const cJSON *global = cJSON_GetObjectItemCaseSensitive(root, "global");
	if (global)
		parse_global(pl, global);
	const cJSON *delayed = cJSON_GetObjectItemCaseSensitive(root, "delayedScaleDown");
	if (delayed) {
		char *why = NULL;
		if (as_delayed_from_json(delayed, &pl->delayed, &why) < 0)
			strv_push_take(pl->errors, why);
		for (size_t k = 0; k < pl->delayed.n; k++)
			if (as_topology_find(&pl->t, pl->delayed.v[k].vertex) < 0)
				err(pl, "delayedScaleDown.delayedVertices.%s: no such vertex in vertices",
				    pl->delayed.v[k].vertex);
	}
	for (i = 0; i < pl->history.n; i++)
		if (as_topology_find(&pl->t, pl->history.v[i].vertex) < 0)
			err(pl, "vertices: history of unknown vertex %s", pl->history.v[i].vertex);
	if (pl->have_samples)
		check_samples(pl);
	return pl->errors->n ? -EINVAL : 0;
}

/* ---- evaluation from the given metrics ---- */

static void complete_given(struct plan *pl)
{
	int64_t restart_s = as_restart_seconds(&pl->o, NULL);
	pl->ev.backlog = pl->backlog;
	for (size_t i = 0; i < pl->t.n; i++) {
		const struct as_vertex *v = &pl->t.v[i];
		struct as_eval_metric *m = pl->ev.v[i].m;
		m[AS_EM_PARALLELISM].current = v->parallelism;
		m[AS_EM_RECOMMENDED_PARALLELISM].current = v->parallelism;
		m[AS_EM_MAX_PARALLELISM].current = v->max_parallelism;
		m[AS_EM_NUM_SOURCE_PARTITIONS].current = v->num_source_partitions;
		if (isnan(m[AS_EM_CATCH_UP_DATA_RATE].current))
			m[AS_EM_CATCH_UP_DATA_RATE].current = 0; /* no backlog unless given */
		struct as_eval_metric up = m[AS_EM_SCALE_UP_RATE_THRESHOLD], down = m[AS_EM_SCALE_DOWN_RATE_THRESHOLD];
		as_thresholds(&pl->o, m, pl->backlog, restart_s);
		if (!isnan(up.current))
			m[AS_EM_SCALE_UP_RATE_THRESHOLD] = up;
		if (!isnan(down.current))
			m[AS_EM_SCALE_DOWN_RATE_THRESHOLD] = down;
	}
}

/* ---- output ---- */

static void plan_emit(void *ud, enum as_event_type type, const char *reason, const char *message,
                      const char *message_key, int64_t interval_ms)
{
	struct plan *pl = ud;
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "type", as_event_type_name(type));
	cJSON_AddStringToObject(e, "reason", reason);
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddItemToArray(pl->events, e);
}

static const char *decision_text(const struct as_exec *x)
{
	if (x->scaled)
		return "scale";
	if (x->blocked_by)
		return x->blocked_by;
	for (size_t i = 0; i < x->t->n; i++)
		if (x->d[i].change)
			return "all vertices within their utilization bounds";
	return "no change";
}

static cJSON *pools_json(uint64_t heap, uint64_t managed, uint64_t metaspace)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "heap", (double)heap);
	cJSON_AddNumberToObject(o, "managed", (double)managed);
	cJSON_AddNumberToObject(o, "metaspace", (double)metaspace);
	return o;
}

/* Every part of a split in bytes: what the pools sit beside (tests/parity compares them with the operator's). */
static cJSON *split_json(const struct membudget *b)
{
	cJSON *o = cJSON_CreateObject();
	const struct {
		const char *name;
		uint64_t v;
	} parts[] = {{"flinklet", b->flinklet},        {"heap", b->heap},
	             {"metaspace", b->metaspace},      {"codeCache", b->code_cache},
	             {"network", b->network},          {"frameworkOffHeap", b->framework_offheap},
	             {"taskOffHeap", b->task_offheap}, {"managed", b->managed},
	             {"jvmNative", b->jvm_native},     {"stateNative", b->state_native}};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		cJSON_AddNumberToObject(o, parts[i].name, (double)parts[i].v);
	return o;
}

/* Memory tuning for the evaluated heap, metaspace and managed memory use, inside -c's spec.resources.memory
 * (docs/autoscaler.md, Memory tuning): what the supervisor would recommend and apply. */
static cJSON *tuning_json(const struct plan *pl)
{
	struct memtune_in in = {
	    .heap_used = pl->ev.g[AS_EG_HEAP_MEMORY_USED].average,
	    .metaspace_used = pl->ev.g[AS_EG_METASPACE_MEMORY_USED].average,
	    .managed_used = pl->ev.g[AS_EG_MANAGED_MEMORY_USED].average,
	    .overhead = pl->o.memory_tuning_overhead,
	    .maximize_managed = pl->o.memory_tuning_maximize_managed,
	    .tuned_heap = pl->tuned_heap,
	};
	struct memtune m;
	memtune_compute(pl->spec, &in, &m);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "enabled", pl->o.memory_tuning);
	cJSON_AddBoolToObject(o, "applies", pl->o.memory_tuning && m.ok && m.changed);
	cJSON_AddStringToObject(o, "reason", m.why);
	if (m.before.budget)
		cJSON_AddItemToObject(o, "current", pools_json(m.before.heap, m.before.managed, m.before.metaspace));
	else
		cJSON_AddNullToObject(o, "current");
	if (m.before.budget)
		cJSON_AddItemToObject(o, "currentSplit", split_json(&m.before));
	else
		cJSON_AddNullToObject(o, "currentSplit");
	if (m.ok)
		cJSON_AddItemToObject(o, "recommended", pools_json(m.after.heap, m.after.managed, m.after.metaspace));
	else
		cJSON_AddNullToObject(o, "recommended");
	if (m.min_memory)
		cJSON_AddNumberToObject(o, "minMemory", (double)m.min_memory);
	else
		cJSON_AddNullToObject(o, "minMemory");
	return o;
}

static char *render(struct plan *pl, const struct as_exec *x, const bool *excluded, cJSON *hook)
{
	cJSON *out = cJSON_CreateObject(), *vs = cJSON_CreateObject(), *g = cJSON_CreateObject();
	cJSON_AddBoolToObject(out, "scaling", x->scaled);
	cJSON_AddStringToObject(out, "decision", decision_text(x));
	for (size_t i = 0; i < pl->t.n; i++) {
		const struct as_vertex *v = &pl->t.v[i];
		const struct as_vertex_decision *d = &x->d[i];
		const struct as_eval_metric *m = pl->ev.v[i].m;
		cJSON *o = cJSON_CreateObject(), *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "currentParallelism", v->parallelism);
		cJSON_AddNumberToObject(o, "recommendedParallelism", d->change ? d->new_p : v->parallelism);
		cJSON_AddNumberToObject(o, "newParallelism", x->scaled && d->in_summary ? d->new_p : v->parallelism);
		cJSON_AddNumberToObject(o, "targetParallelism", d->computed ? d->target : v->parallelism);
		cJSON_AddBoolToObject(o, "outsideUtilizationBound", as_outside_bounds(m));
		if (excluded[i] || !d->computed)
			cJSON_AddBoolToObject(o, "excluded", true);
		for (int k = 0; k < AS_EM_COUNT; k++)
			cJSON_AddItemToObject(e, as_emetric_name(k),
			                      as_eval_metric_to_json(&m[k], as_emetric_fields(k)));
		cJSON_AddItemToObject(o, "evaluated", e);
		cJSON_AddItemToObject(vs, v->id, o);
	}
	cJSON_AddItemToObject(out, "vertices", vs);
	for (int k = 0; k < AS_EG_COUNT; k++)
		cJSON_AddItemToObject(g, as_egmetric_name(k),
		                      as_eval_metric_to_json(&pl->ev.g[k], as_egmetric_fields(k)));
	cJSON_AddItemToObject(out, "global", g);
	cJSON_AddItemToObject(out, "delayedScaleDown", as_delayed_to_json(&pl->delayed));
	cJSON_AddItemToObject(out, "events", pl->events);
	pl->events = NULL;
	if (hook)
		cJSON_AddItemToObject(out, "hook", hook);
	if (pl->spec && pl->spec->memory)
		cJSON_AddItemToObject(out, "memoryTuning", tuning_json(pl));
	char *text = as_json_pretty(out);
	cJSON_Delete(out);
	return text;
}

static void plan_free(struct plan *pl)
{
	as_options_free(&pl->o);
	as_topology_free(&pl->t);
	as_evaluation_free(&pl->ev);
	as_scaling_history_free(&pl->history);
	as_samples_free(&pl->samples);
	as_delayed_free(&pl->delayed);
	cJSON_Delete(pl->events);
	if (pl->own) {
		for (size_t i = 0; i < pl->own->nconf; i++)
			free(pl->own->conf[i].key), free(pl->own->conf[i].value);
		free(pl->own->conf);
		free(pl->own);
	}
}

/* The input document: its samples read from the text (as_jsonin.c) and the rest, with "[]" in their place, by
 * cJSON; or, when the samples cannot be read so, all of it by cJSON. NULL: not valid JSON (*ret_end: where cJSON
 * stopped). */
static cJSON *read_document(const char *text, size_t len, struct as_samples *samples, bool *ret_read,
                            const char **ret_end)
{
	size_t begin, end;
	*ret_read = false;
	if (as_plan_samples_from_text(text, len, samples, &begin, &end)) {
		size_t n = begin + 2 + (len - end);
		char *rest = xmalloc(n);
		memcpy(rest, text, begin);
		memcpy(rest + begin, "[]", 2);
		memcpy(rest + begin + 2, text + end, len - end);
		cJSON *root = cJSON_ParseWithLength(rest, n);
		free(rest);
		if (root) {
			*ret_read = true;
			return root;
		}
		as_samples_free(samples);
	}
	return cJSON_ParseWithLengthOpts(text, len, ret_end, false);
}

/* The scaling hook on the decision's rescale, as the supervisor runs it: what it did, for the output's "hook". */
static cJSON *review(struct as_exec *x, const struct as_hook_runner *hook)
{
	cJSON *h = cJSON_CreateObject();
	cJSON_AddStringToObject(h, "path", hook->path);
	if (!x->proposed) {
		cJSON_AddStringToObject(h, "verdict", "not run");
		cJSON_AddStringToObject(h, "message", "the decision is not a rescale: nothing to review");
		return h;
	}
	char *proposal = as_hook_proposal(x, "plan", hook->timeout_ms), *message = NULL;
	struct as_hook_result r = {hook->path, NULL, NULL, 0, NULL};
	hook->run(hook->ud, proposal, &r);
	r.hook = hook->path;
	enum as_hook_verdict v = as_hook_review(x, &r, &message);
	if (v == AS_HOOK_APPLIED || v == AS_HOOK_ADJUSTED)
		as_exec_commit(x);
	else
		x->blocked_by = v == AS_HOOK_VETOED ? "vetoed by the scaling hook" : "the scaling hook failed";
	cJSON_AddStringToObject(h, "verdict", as_hook_verdict_name(v));
	cJSON_AddStringToObject(h, "message", message);
	cJSON_AddItemToObject(h, "proposal", cJSON_Parse(proposal));
	free(message);
	free(proposal);
	return h;
}

int autoscaler_plan(const char *input_json, size_t len, const struct spec *spec_or_null, char **ret_output_json,
                    struct strv *errors)
{
	return autoscaler_plan_hooked(input_json, len, spec_or_null, NULL, ret_output_json, errors);
}

int autoscaler_plan_hooked(const char *input_json, size_t len, const struct spec *spec_or_null,
                           const struct as_hook_runner *hook, char **ret_output_json, struct strv *errors)
{
	*ret_output_json = NULL;
	if (len > MAX_PLAN_BYTES) {
		strv_push_take(errors, xasprintf("(document): too large (%zu bytes, at most %u)", len, MAX_PLAN_BYTES));
		return -EINVAL;
	}
	struct plan pl;
	memset(&pl, 0, sizeof(pl));
	const char *end = NULL;
	cJSON *root = read_document(input_json, len, &pl.samples, &pl.samples_read, &end);
	if (!root) {
		size_t at = end && end >= input_json ? (size_t)(end - input_json) : 0;
		strv_push_take(errors, xasprintf("(document): not valid JSON (at byte %zu)", at));
		return -EINVAL;
	}
	as_options_defaults(&pl.o);
	pl.errors = errors;
	size_t before = errors->n;
	pl.spec = spec_or_null;
	int r = parse_input(&pl, root, spec_or_null);
	cJSON_Delete(root);
	if (r < 0 || errors->n > before) {
		plan_free(&pl);
		return -EINVAL;
	}
	int64_t restart_s = as_restart_seconds(&pl.o, NULL);
	if (pl.have_samples) {
		char *why = NULL;
		as_evaluation_free(&pl.ev);
		if (as_evaluate(&pl.o, &pl.t, &pl.samples, restart_s, &pl.ev, &why) < 0) {
			strv_push_take(errors, xasprintf("samples: %s", why));
			free(why);
			plan_free(&pl);
			return -EINVAL;
		}
	} else {
		complete_given(&pl);
	}
	as_scaling_history_trim(&pl.history, pl.now, pl.o.history_max_age_ms, pl.o.history_max_count);
	bool *excluded = xcalloc(pl.t.n, sizeof(bool));
	for (size_t i = 0; pl.have_samples && i < pl.t.n; i++)
		excluded[i] = !isfinite(as_latest(&pl.samples, pl.t.v[i].id, AS_VM_LOAD));
	pl.events = cJSON_CreateArray();
	struct as_emitter em = {plan_emit, &pl};
	struct as_exec x = {
	    .o = &pl.o,
	    .t = &pl.t,
	    .ev = &pl.ev,
	    .history = &pl.history,
	    .delayed = &pl.delayed,
	    .excluded = excluded,
	    .now = pl.now,
	    .restart_s = restart_s,
	    .tm_cpu = pl.tm_cpu,
	    .tm_memory = pl.tm_memory,
	    .slots_per_tm = pl.slots,
	    .em = &em,
	    .review = hook && hook->run,
	};
	as_execute(&x);
	cJSON *hook_out = x.review ? review(&x, hook) : NULL;
	*ret_output_json = render(&pl, &x, excluded, hook_out);
	as_exec_free(&x);
	free(excluded);
	plan_free(&pl);
	return 0;
}

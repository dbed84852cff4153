/* as_state: the persisted autoscaler state of reference 5.1 to and from JSON: collected metrics (the
 * window), scaling history, scaling tracking, parallelism overrides and delayed scale-down. Reading
 * validates every field and bound and names the JSON path of the first problem, so a corrupt or hostile
 * file is rejected with an error, never half-read; NaN and infinities are the strings "NaN", "Infinity"
 * and "-Infinity". It also bounds a whole state document in size. It is not for where the state lives
 * (as_store_*.c). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

#define MAX_ITEMS 100000
#define MAX_ID_LEN 256
#define MAX_TS (INT64_C(1) << 53)

static int fail(char **ret_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **ret_error, const char *fmt, ...)
{
	if (ret_error) {
		struct strbuf b = {0};
		va_list ap;
		va_start(ap, fmt);
		strbuf_vappendf(&b, fmt, ap);
		va_end(ap);
		*ret_error = strbuf_steal(&b);
	}
	return -EINVAL;
}

static bool valid_id(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > MAX_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20)
			return false;
	return true;
}

static int want_ts(const cJSON *j, const char *path, const char *field, int64_t *ret, char **err)
{
	if (as_json_int64(cJSON_GetObjectItemCaseSensitive(j, field), 0, MAX_TS, ret) < 0)
		return fail(err, "%s.%s: must be a timestamp in epoch milliseconds", path, field);
	return 0;
}

static int want_p(const cJSON *j, const char *path, const char *field, int *ret, char **err)
{
	int64_t v;
	if (as_json_int64(cJSON_GetObjectItemCaseSensitive(j, field), 1, INT32_MAX, &v) < 0)
		return fail(err, "%s.%s: must be a positive integer", path, field);
	*ret = (int)v;
	return 0;
}

static int want_object(const cJSON *j, const char *path, char **err)
{
	return cJSON_IsObject(j) ? 0 : fail(err, "%s: must be an object", path);
}

static int want_array(const cJSON *j, const char *path, char **err)
{
	if (!cJSON_IsArray(j))
		return fail(err, "%s: must be an array", path);
	if (cJSON_GetArraySize(j) > MAX_ITEMS)
		return fail(err, "%s: too many items (at most %d)", path, MAX_ITEMS);
	return 0;
}

static void add_number(cJSON *o, const char *name, double x)
{
	cJSON_AddItemToObject(o, name, as_json_number(x));
}

/* ---- collected metrics ---- */

cJSON *as_samples_to_json(const struct as_samples *h)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < h->n; i++) {
		const struct as_sample *s = &h->s[i];
		cJSON *o = cJSON_CreateObject(), *vs = cJSON_CreateObject(), *g = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "timestamp", (double)s->ts);
		for (size_t k = 0; k < s->n; k++) {
			cJSON *m = cJSON_CreateObject();
			for (int x = 0; x < AS_VM_COUNT; x++)
				if (!isnan(s->v[k].m[x]))
					add_number(m, as_vmetric_name(x), s->v[k].m[x]);
			cJSON_AddItemToObject(vs, s->v[k].id, m);
		}
		for (int x = 0; x < AS_GM_COUNT; x++)
			if (!isnan(s->g[x]))
				add_number(g, as_gmetric_name(x), s->g[x]);
		cJSON_AddItemToObject(o, "vertices", vs);
		cJSON_AddItemToObject(o, "global", g);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether no vertex id of the sample object vs appears twice. Samples usually name the same vertices in the
 * same order as the one before (prev, already checked): then one comparison per vertex proves it. */
static bool distinct_ids(const cJSON *vs, size_t n, const struct as_sample *prev)
{
	size_t k = 0;
	const cJSON *v = vs->child;
	for (; prev && v && k < prev->n && !strcmp(v->string, prev->v[k].id); v = v->next)
		k++;
	if (!v)
		return true;
	const char **ids = xcalloc(n, sizeof(*ids));
	k = 0;
	for (v = vs->child; v; v = v->next)
		ids[k++] = v->string;
	qsort(ids, n, sizeof(*ids), cmp_str);
	bool distinct = true;
	for (k = 1; k < n && distinct; k++)
		distinct = strcmp(ids[k - 1], ids[k]) != 0;
	free(ids);
	return distinct;
}

static int sample_from_json(const cJSON *j, const char *path, const struct as_sample *prev, struct as_sample *s,
                            char **err)
{
	int64_t ts;
	if (want_object(j, path, err) < 0 || want_ts(j, path, "timestamp", &ts, err) < 0)
		return -EINVAL;
	as_sample_init(s, ts);
	for (const cJSON *c = j->child; c; c = c->next)
		if (strcmp(c->string, "timestamp") && strcmp(c->string, "vertices") && strcmp(c->string, "global"))
			return fail(err, "%s.%s: unknown field (expected timestamp, vertices, global)", path,
			            c->string);
	const cJSON *vs = cJSON_GetObjectItemCaseSensitive(j, "vertices");
	if (vs && !cJSON_IsObject(vs))
		return fail(err, "%s.vertices: must be an object of vertex ids to metrics", path);
	size_t n = 0;
	for (const cJSON *v = vs ? vs->child : NULL; v; v = v->next)
		n++;
	/* without duplicates, no vertex needs looking up: each is appended (room for all of them at once) */
	bool distinct = n < 2 || distinct_ids(vs, n, prev);
	if (n)
		s->v = xcalloc(n, sizeof(*s->v));
	for (const cJSON *v = vs ? vs->child : NULL; v; v = v->next) {
		if (!valid_id(v->string))
			return fail(err, "%s.vertices: bad vertex id", path);
		if (!cJSON_IsObject(v))
			return fail(err, "%s.vertices.%s: must be an object of metric names to numbers", path,
			            v->string);
		if (!distinct && as_sample_vertex_get(s, v->string))
			return fail(err, "%s.vertices.%s: duplicate vertex", path, v->string);
		struct as_sample_vertex *sv = &s->v[s->n++];
		sv->id = xstrdup(v->string);
		double *m = sv->m;
		for (int k = 0; k < AS_VM_COUNT; k++)
			m[k] = NAN;
		for (const cJSON *c = v->child; c; c = c->next) {
			int k = as_vmetric_from_name(c->string);
			if (k < 0) {
				static const char *const names[] = {"LAG",
				                                    "LOAD",
				                                    "ACCUMULATED_BUSY_TIME",
				                                    "NUM_RECORDS_IN",
				                                    "NUM_RECORDS_OUT",
				                                    "NUM_RECORDS_IN_PER_SECOND",
				                                    "OBSERVED_TPR"};
				const char *hint = as_did_you_mean(c->string, names, AS_VM_COUNT);
				return fail(err, "%s.vertices.%s.%s: unknown metric%s%s%s", path, v->string, c->string,
				            hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
			}
			if (as_json_double(c, &m[k]) < 0)
				return fail(err, "%s.vertices.%s.%s: must be a number, \"NaN\", \"Infinity\" or null",
				            path, v->string, c->string);
		}
	}
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "global");
	if (g && !cJSON_IsObject(g))
		return fail(err, "%s.global: must be an object of metric names to numbers", path);
	for (const cJSON *c = g ? g->child : NULL; c; c = c->next) {
		int k = as_gmetric_from_name(c->string);
		if (k < 0)
			return fail(err, "%s.global.%s: unknown metric", path, c->string);
		if (as_json_double(c, &s->g[k]) < 0)
			return fail(err, "%s.global.%s: must be a number, \"NaN\", \"Infinity\" or null", path,
			            c->string);
	}
	return 0;
}

int as_samples_from_json_at(const cJSON *j, const char *path, struct as_samples *ret, char **err)
{
	struct as_samples h = {0};
	memset(ret, 0, sizeof(*ret));
	if (want_array(j, path, err) < 0)
		return -EINVAL;
	size_t i = 0;
	for (const cJSON *c = j->child; c; c = c->next, i++) {
		char *p = xasprintf("%s[%zu]", path, i);
		struct as_sample s;
		memset(&s, 0, sizeof(s));
		int r = sample_from_json(c, p, h.n ? &h.s[h.n - 1] : NULL, &s, err);
		if (r == 0 && h.n && s.ts <= h.s[h.n - 1].ts)
			r = fail(err, "%s.timestamp: must be after the previous sample's (oldest first)", p);
		free(p);
		if (r < 0) {
			as_sample_free(&s);
			as_samples_free(&h);
			return r;
		}
		as_samples_put(&h, &s);
	}
	*ret = h;
	return 0;
}

int as_samples_from_json(const cJSON *j, struct as_samples *ret, char **err)
{
	return as_samples_from_json_at(j, "collectedMetrics", ret, err);
}

/* ---- scaling history ---- */

static cJSON *history_entry_to_json(const struct as_history_entry *e)
{
	cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "timestamp", (double)e->ts);
	cJSON_AddNumberToObject(o, "currentParallelism", e->current_parallelism);
	cJSON_AddNumberToObject(o, "newParallelism", e->new_parallelism);
	for (int k = 0; k < AS_EM_COUNT; k++) {
		if (isnan(e->m[k].current) && isnan(e->m[k].average))
			continue;
		cJSON *x = cJSON_CreateObject();
		add_number(x, "current", e->m[k].current);
		add_number(x, "average", e->m[k].average);
		cJSON_AddItemToObject(m, as_emetric_name(k), x);
	}
	cJSON_AddItemToObject(o, "metrics", m);
	return o;
}

cJSON *as_scaling_history_to_json(const struct as_scaling_history *h)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < h->n; i++) {
		cJSON *a = cJSON_CreateArray();
		for (size_t k = 0; k < h->v[i].n; k++)
			cJSON_AddItemToArray(a, history_entry_to_json(&h->v[i].e[k]));
		cJSON_AddItemToObject(o, h->v[i].vertex, a);
	}
	return o;
}

static int metric_into(const cJSON *c, const char *path, struct as_eval_metric *m, char **err)
{
	int k = as_emetric_from_name(c->string);
	if (k < 0)
		return fail(err, "%s.%s: unknown metric", path, c->string);
	if (as_eval_metric_from_json(c, as_emetric_fields(k), &m[k]) < 0)
		return fail(err, "%s.%s: must be a number or {\"current\", \"average\"}", path, c->string);
	return 0;
}

int as_history_entry_from_json(const cJSON *j, const char *path, struct as_history_entry *e, char **err)
{
	memset(e, 0, sizeof(*e));
	for (int k = 0; k < AS_EM_COUNT; k++)
		e->m[k].current = e->m[k].average = NAN;
	if (want_object(j, path, err) < 0 || want_ts(j, path, "timestamp", &e->ts, err) < 0 ||
	    want_p(j, path, "currentParallelism", &e->current_parallelism, err) < 0 ||
	    want_p(j, path, "newParallelism", &e->new_parallelism, err) < 0)
		return -EINVAL;
	for (const cJSON *c = j->child; c; c = c->next) {
		if (!strcmp(c->string, "timestamp") || !strcmp(c->string, "currentParallelism") ||
		    !strcmp(c->string, "newParallelism"))
			continue;
		if (!strcmp(c->string, "metrics")) {
			if (!cJSON_IsObject(c))
				return fail(err, "%s.metrics: must be an object", path);
			char *p = xasprintf("%s.metrics", path);
			int r = 0;
			for (const cJSON *m = c->child; m && r == 0; m = m->next)
				r = metric_into(m, p, e->m, err);
			free(p);
			if (r < 0)
				return r;
			continue;
		}
		/* the flat form of plan's input: metric names next to the parallelisms */
		if (metric_into(c, path, e->m, err) < 0)
			return -EINVAL;
	}
	return 0;
}

int as_scaling_history_from_json(const cJSON *j, struct as_scaling_history *ret, char **err)
{
	struct as_scaling_history h = {0};
	memset(ret, 0, sizeof(*ret));
	if (want_object(j, "scalingHistory", err) < 0)
		return -EINVAL;
	for (const cJSON *v = j->child; v; v = v->next) {
		char *p = xasprintf("scalingHistory.%s", v->string);
		int r = valid_id(v->string) ? want_array(v, p, err) : fail(err, "scalingHistory: bad vertex id");
		if (r == 0 && as_scaling_history_get(&h, v->string))
			r = fail(err, "%s: duplicate vertex", p);
		size_t i = 0;
		int64_t prev = -1;
		for (const cJSON *c = r == 0 ? v->child : NULL; c && r == 0; c = c->next, i++) {
			char *pi = xasprintf("%s[%zu]", p, i);
			struct as_history_entry e;
			r = as_history_entry_from_json(c, pi, &e, err);
			if (r == 0 && e.ts <= prev)
				r = fail(err, "%s.timestamp: must be after the previous entry's (oldest first)", pi);
			if (r == 0) {
				as_scaling_history_add(&h, v->string, &e);
				prev = e.ts;
			}
			free(pi);
		}
		free(p);
		if (r < 0) {
			as_scaling_history_free(&h);
			return r;
		}
	}
	*ret = h;
	return 0;
}

/* ---- tracking ---- */

cJSON *as_tracking_to_json(const struct as_tracking *t)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
	for (size_t i = 0; i < t->n; i++) {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddNumberToObject(r, "timestamp", (double)t->r[i].ts);
		if (t->r[i].restart_ms >= 0)
			cJSON_AddNumberToObject(r, "restartDuration", (double)t->r[i].restart_ms);
		else
			cJSON_AddNullToObject(r, "restartDuration");
		cJSON_AddItemToArray(a, r);
	}
	cJSON_AddItemToObject(o, "scalingRecords", a);
	return o;
}

int as_tracking_from_json(const cJSON *j, struct as_tracking *ret, char **err)
{
	memset(ret, 0, sizeof(*ret));
	if (want_object(j, "scalingTracking", err) < 0)
		return -EINVAL;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "scalingRecords");
	if (want_array(a, "scalingTracking.scalingRecords", err) < 0)
		return -EINVAL;
	struct as_tracking t = {0};
	t.r = xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*t.r));
	size_t i = 0;
	for (const cJSON *c = a->child; c; c = c->next, i++) {
		char *p = xasprintf("scalingTracking.scalingRecords[%zu]", i);
		struct as_tracking_record r = {0, -1};
		int rc = want_object(c, p, err);
		if (rc == 0)
			rc = want_ts(c, p, "timestamp", &r.ts, err);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "restartDuration");
		if (rc == 0 && d && !cJSON_IsNull(d) && as_json_int64(d, 0, MAX_TS, &r.restart_ms) < 0)
			rc = fail(err, "%s.restartDuration: must be milliseconds or null", p);
		if (rc == 0 && t.n && r.ts <= t.r[t.n - 1].ts)
			rc = fail(err, "%s.timestamp: must be after the previous record's (oldest first)", p);
		free(p);
		if (rc < 0) {
			as_tracking_free(&t);
			return rc;
		}
		t.r[t.n++] = r;
	}
	*ret = t;
	return 0;
}

/* ---- overrides ---- */

cJSON *as_pmap_to_json(const struct as_pmap *m)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < m->n; i++) {
		char num[16];
		snprintf(num, sizeof(num), "%d", m->e[i].parallelism);
		cJSON_AddStringToObject(o, m->e[i].vertex, num);
	}
	return o;
}

int as_pmap_from_json(const cJSON *j, struct as_pmap *ret, char **err)
{
	struct as_pmap m = {0};
	memset(ret, 0, sizeof(*ret));
	if (want_object(j, "parallelismOverrides", err) < 0)
		return -EINVAL;
	for (const cJSON *c = j->child; c; c = c->next) {
		int64_t p = 0;
		bool ok = valid_id(c->string) && as_pmap_get(&m, c->string) < 0;
		if (ok && cJSON_IsString(c))
			ok = parse_int64(c->valuestring, &p) == 0 && p >= 1 && p <= INT32_MAX;
		else if (ok)
			ok = as_json_int64(c, 1, INT32_MAX, &p) == 0;
		if (!ok) {
			as_pmap_free(&m);
			return fail(err, "parallelismOverrides.%s: must be a positive integer", c->string);
		}
		as_pmap_set(&m, c->string, (int)p);
	}
	*ret = m;
	return 0;
}

/* ---- delayed scale-down ---- */

cJSON *as_delayed_to_json(const struct as_delayed *d)
{
	cJSON *o = cJSON_CreateObject(), *vs = cJSON_CreateObject();
	for (size_t i = 0; i < d->n; i++) {
		cJSON *v = cJSON_CreateObject(), *a = cJSON_CreateArray();
		cJSON_AddNumberToObject(v, "firstTriggerTime", (double)d->v[i].first_trigger_time);
		for (size_t k = 0; k < d->v[i].n; k++) {
			cJSON *r = cJSON_CreateObject();
			cJSON_AddNumberToObject(r, "triggerTime", (double)d->v[i].r[k].trigger_time);
			cJSON_AddNumberToObject(r, "parallelism", d->v[i].r[k].parallelism);
			cJSON_AddBoolToObject(r, "outsideUtilizationBound", d->v[i].r[k].outside);
			cJSON_AddItemToArray(a, r);
		}
		cJSON_AddItemToObject(v, "recommendedParallelisms", a);
		cJSON_AddItemToObject(vs, d->v[i].vertex, v);
	}
	cJSON_AddItemToObject(o, "delayedVertices", vs);
	return o;
}

static int delayed_vertex_from_json(const cJSON *v, const char *p, struct as_delayed_vertex *dv, char **err)
{
	if (want_object(v, p, err) < 0 || want_ts(v, p, "firstTriggerTime", &dv->first_trigger_time, err) < 0)
		return -EINVAL;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "recommendedParallelisms");
	char *pa = xasprintf("%s.recommendedParallelisms", p);
	int r = want_array(a, pa, err);
	if (r == 0 && cJSON_GetArraySize(a) == 0)
		r = fail(err, "%s: must not be empty", pa);
	dv->r = xcalloc(r == 0 ? (size_t)cJSON_GetArraySize(a) : 1, sizeof(*dv->r));
	size_t i = 0;
	for (const cJSON *c = r == 0 ? a->child : NULL; c && r == 0; c = c->next, i++) {
		char *pi = xasprintf("%s[%zu]", pa, i);
		struct as_recommendation rec = {0, 0, false};
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(c, "outsideUtilizationBound");
		r = want_object(c, pi, err);
		if (r == 0)
			r = want_ts(c, pi, "triggerTime", &rec.trigger_time, err);
		if (r == 0)
			r = want_p(c, pi, "parallelism", &rec.parallelism, err);
		if (r == 0 && !cJSON_IsBool(out))
			r = fail(err, "%s.outsideUtilizationBound: must be true or false", pi);
		if (r == 0 && dv->n && rec.parallelism >= dv->r[dv->n - 1].parallelism)
			r = fail(err, "%s.parallelism: must be below the previous recommendation's (front first)", pi);
		if (r == 0 && dv->n && rec.trigger_time < dv->r[dv->n - 1].trigger_time)
			r = fail(err, "%s.triggerTime: must not be before the previous recommendation's", pi);
		if (r == 0 && rec.trigger_time < dv->first_trigger_time)
			r = fail(err, "%s.triggerTime: must not be before firstTriggerTime", pi);
		rec.outside = cJSON_IsTrue(out);
		if (r == 0)
			dv->r[dv->n++] = rec;
		free(pi);
	}
	free(pa);
	return r;
}

int as_delayed_from_json(const cJSON *j, struct as_delayed *ret, char **err)
{
	struct as_delayed d = {0};
	memset(ret, 0, sizeof(*ret));
	if (want_object(j, "delayedScaleDown", err) < 0)
		return -EINVAL;
	const cJSON *vs = cJSON_GetObjectItemCaseSensitive(j, "delayedVertices");
	if (!vs) {
		*ret = d;
		return 0;
	}
	if (want_object(vs, "delayedScaleDown.delayedVertices", err) < 0)
		return -EINVAL;
	for (const cJSON *v = vs->child; v; v = v->next) {
		char *p = xasprintf("delayedScaleDown.delayedVertices.%s", v->string);
		int r = valid_id(v->string) ? 0 : fail(err, "delayedScaleDown.delayedVertices: bad vertex id");
		for (size_t k = 0; r == 0 && k < d.n; k++)
			if (!strcmp(d.v[k].vertex, v->string))
				r = fail(err, "%s: duplicate vertex", p);
		if (r == 0) {
			d.v = xrealloc(d.v, (d.n + 1) * sizeof(*d.v));
			struct as_delayed_vertex *dv = &d.v[d.n++];
			memset(dv, 0, sizeof(*dv));
			dv->vertex = xstrdup(v->string);
			r = delayed_vertex_from_json(v, p, dv, err);
		}
		free(p);
		if (r < 0) {
			as_delayed_free(&d);
			return r;
		}
	}
	*ret = d;
	return 0;
}

/* ---- bounding a whole document ---- */

size_t as_state_bound(cJSON *doc, size_t max_bytes)
{
	char *text = as_json_unformatted(doc);
	size_t len = strlen(text);
	free(text);
	cJSON *samples = cJSON_GetObjectItemCaseSensitive(doc, as_state_kind_name(AS_STATE_COLLECTED_METRICS));
	size_t dropped = 0;
	while (len > max_bytes && cJSON_IsArray(samples) && samples->child) {
		char *one = as_json_unformatted(samples->child);
		size_t n = strlen(one) + 1; /* the element and its comma */
		free(one);
		cJSON_DeleteItemFromArray(samples, 0);
		len = len > n ? len - n : 0;
		dropped++;
	}
	return dropped;
}

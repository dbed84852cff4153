/* rescales: Flink 2.3's rescale history answers, checked and cut to a bounded digest (src/flink/rescales.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rescales.h"
#include "util.h"

#define MAX_MS (INT64_C(1) << 53)
#define MAX_PARALLELISM 32768 /* Flink's upper bound of a vertex's max parallelism */

static void vertices_free(struct rescale *r)
{
	for (size_t i = 0; i < r->n_vertices; i++)
		free(r->vertices[i].name);
	free(r->vertices);
	r->vertices = NULL;
	r->n_vertices = 0;
	r->vertices_cut = false;
}

void rescales_free(struct rescales *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		vertices_free(&rs->v[i]);
	free(rs->v);
	*rs = (struct rescales){0};
}

static bool hex32(const char *s)
{
	if (strlen(s) != 32)
		return false;
	for (size_t i = 0; i < 32; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* An enum constant's name as Flink writes it: upper case, digits and '_'. */
static bool constant(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n >= max || !isupper((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isupper((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* The checks of one record's fields say what is wrong through err (the first problem only). */
struct check {
	const char *where; /* "entry 3" */
	char *err;
};

static void problem(struct check *c, const char *field, const char *what)
{
	if (!c->err)
		c->err = xasprintf("%s: %s %s", c->where, field, what);
}

static const cJSON *field(const cJSON *o, const char *name)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNull(j) ? NULL : j;
}

/* A string field: absent or null leaves out untouched ("" by the caller) */
static void take_constant(struct check *c, const cJSON *o, const char *name, char *out, size_t size)
{
	const cJSON *j = field(o, name);
	if (!j)
		return;
	if (!cJSON_IsString(j) || !constant(j->valuestring, size))
		problem(c, name, "is not a name such as COMPLETED");
	else
		memcpy(out, j->valuestring, strlen(j->valuestring) + 1);
}

static void take_uuid(struct check *c, const cJSON *o, const char *name, char *out)
{
	const cJSON *j = field(o, name);
	if (!j)
		return;
	if (!cJSON_IsString(j) || !hex32(j->valuestring))
		problem(c, name, "is not 32 hexadecimal digits");
	else
		memcpy(out, j->valuestring, 33);
}

static int64_t take_count(struct check *c, const cJSON *o, const char *name, int64_t max)
{
	const cJSON *j = field(o, name);
	if (!j)
		return -1;
	int64_t v = cJSON_IsNumber(j) ? double_to_i64(j->valuedouble, 0, max, -1) : -1;
	if (v < 0 || (double)v != j->valuedouble) {
		problem(c, name,
		        max == MAX_MS ? "is not a time in epoch milliseconds" : "is not a whole number in range");
		return -1;
	}
	return v;
}

/* The fields a history record and a details answer share (all but the vertices) into r. */
static void take_record(struct check *c, const cJSON *o, struct rescale *r)
{
	take_uuid(c, o, "resourceRequirementsUuid", r->requirements_uuid);
	r->attempt = take_count(c, o, "rescaleAttemptId", MAX_MS);
	r->start_ms = take_count(c, o, "startTimestampInMillis", MAX_MS);
	r->end_ms = take_count(c, o, "endTimestampInMillis", MAX_MS);
	take_constant(c, o, "triggerCause", r->trigger, sizeof(r->trigger));
	take_constant(c, o, "terminalState", r->terminal, sizeof(r->terminal));
	take_constant(c, o, "terminatedReason", r->reason, sizeof(r->reason));
}

int rescales_parse_history(const cJSON *body, struct rescales *ret, char **err)
{
	rescales_free(ret);
	if (!cJSON_IsArray(body)) {
		*err = xstrdup("not a JSON array of rescales");
		return -EINVAL;
	}
	int n = cJSON_GetArraySize(body);
	size_t keep = n > RESCALES_KEPT ? RESCALES_KEPT : (size_t)n;
	struct rescales rs = {.v = keep ? xcalloc(keep, sizeof(*rs.v)) : NULL, .cut = (size_t)n > keep};
	const cJSON *e;
	cJSON_ArrayForEach (e, body) {
		if (rs.n == keep)
			break;
		char where[32];
		snprintf(where, sizeof(where), "entry %zu", rs.n + 1);
		struct check c = {.where = where};
		struct rescale *r = &rs.v[rs.n++];
		if (!cJSON_IsObject(e)) {
			c.err = xasprintf("%s is not an object", where);
		} else {
			const cJSON *id = field(e, "rescaleUuid");
			if (!cJSON_IsString(id) || !hex32(id->valuestring))
				problem(&c, "rescaleUuid", "is not 32 hexadecimal digits");
			else
				memcpy(r->uuid, id->valuestring, 33);
			take_record(&c, e, r);
		}
		if (c.err) {
			*err = c.err;
			rescales_free(&rs);
			return -EINVAL;
		}
	}
	*ret = rs;
	return 0;
}

/* s cut to at most max bytes, not inside a UTF-8 sequence. */
static char *cut_utf8(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max)
		return xstrdup(s);
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return xstrndup(s, n);
}

static int parse_vertex(struct check *c, const cJSON *v, struct rescale_vertex *out)
{
	if (!cJSON_IsObject(v)) {
		problem(c, out->id, "is not an object");
		return -EINVAL;
	}
	const cJSON *id = field(v, "jobVertexId");
	if (id && (!cJSON_IsString(id) || strcmp(id->valuestring, out->id)))
		problem(c, "jobVertexId", "is not the vertex it is listed under");
	const cJSON *name = field(v, "jobVertexName");
	if (name && !cJSON_IsString(name))
		problem(c, "jobVertexName", "is not a string");
	out->desired = (int)take_count(c, v, "desiredParallelism", MAX_PARALLELISM);
	out->sufficient = (int)take_count(c, v, "sufficientParallelism", MAX_PARALLELISM);
	out->pre = (int)take_count(c, v, "preRescaleParallelism", MAX_PARALLELISM);
	out->post = (int)take_count(c, v, "postRescaleParallelism", MAX_PARALLELISM);
	if (c->err)
		return -EINVAL;
	out->name = cut_utf8(cJSON_IsString(name) ? name->valuestring : "", RESCALE_NAME_MAX);
	return 0;
}

int rescales_parse_details(const cJSON *body, struct rescale *r, char **err)
{
	struct check c = {.where = "details"};
	struct rescale d = {.attempt = -1, .start_ms = -1, .end_ms = -1};
	if (!cJSON_IsObject(body)) {
		*err = xstrdup("details: not a JSON object");
		return -EINVAL;
	}
	const cJSON *id = field(body, "rescaleUuid");
	if (!cJSON_IsString(id) || strcmp(id->valuestring, r->uuid))
		problem(&c, "rescaleUuid", "is not the rescale asked for");
	take_record(&c, body, &d);
	const cJSON *vs = field(body, "vertices");
	if (vs && !cJSON_IsObject(vs))
		problem(&c, "vertices", "is not an object");
	int n = vs ? cJSON_GetArraySize(vs) : 0;
	size_t keep = n > RESCALE_VERTICES_KEPT ? RESCALE_VERTICES_KEPT : (size_t)(n > 0 ? n : 0);
	d.vertices = keep ? xcalloc(keep, sizeof(*d.vertices)) : NULL;
	d.vertices_cut = (size_t)(n > 0 ? n : 0) > keep;
	const cJSON *v;
	cJSON_ArrayForEach (v, vs) {
		if (c.err || d.n_vertices == keep)
			break;
		if (!v->string || !hex32(v->string)) {
			problem(&c, "vertices", "has a key that is not a job vertex id");
			break;
		}
		struct rescale_vertex *out = &d.vertices[d.n_vertices];
		memcpy(out->id, v->string, 33);
		if (parse_vertex(&c, v, out) < 0)
			break;
		d.n_vertices++;
	}
	if (c.err) {
		*err = c.err;
		vertices_free(&d);
		return -EINVAL;
	}
	vertices_free(r);
	memcpy(d.uuid, r->uuid, sizeof(d.uuid));
	d.details = true;
	d.details_tries = r->details_tries;
	d.details_wait = 0;
	*r = d;
	return 0;
}

struct rescale *rescales_find(struct rescales *rs, const char *uuid)
{
	for (size_t i = 0; i < rs->n; i++)
		if (!strcmp(rs->v[i].uuid, uuid))
			return &rs->v[i];
	return NULL;
}

/* a record's vertices and tries, handed from old to fresh (old's copy is left empty) */
static void move_details(struct rescale *to, struct rescale *from)
{
	vertices_free(to);
	to->vertices = from->vertices;
	to->n_vertices = from->n_vertices;
	to->vertices_cut = from->vertices_cut;
	to->details = from->details;
	from->vertices = NULL;
	from->n_vertices = 0;
	from->details = false;
}

void rescales_keep_details(struct rescales *fresh, struct rescales *old)
{
	for (size_t i = 0; i < old->n; i++) {
		struct rescale *o = &old->v[i], *f = rescales_find(fresh, o->uuid);
		if (!f)
			continue;
		f->details_tries = o->details_tries;
		f->details_wait = o->details_wait;
		/* a record that was still in progress when its details were read has others now */
		if (o->details && o->terminal[0] && f->terminal[0])
			move_details(f, o);
	}
}

void rescales_new_round(struct rescales *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].details_wait > 0)
			rs->v[i].details_wait--;
}

void rescales_details_failed(struct rescale *r)
{
	if (r->details_tries < 16)
		r->details_tries++;
	unsigned wait = (1u << r->details_tries) - 1;
	r->details_wait = wait < RESCALE_DETAILS_WAIT_MAX ? wait : RESCALE_DETAILS_WAIT_MAX;
}

struct rescale *rescales_wanting_details(struct rescales *rs)
{
	for (size_t i = rs->n; i-- > 0;) {
		struct rescale *r = &rs->v[i];
		if (r->terminal[0] && !r->details && !r->details_wait)
			return r;
	}
	return NULL;
}

static cJSON *str_or_null(const char *s)
{
	return s[0] ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *num_or_null(int64_t v)
{
	return v >= 0 ? cJSON_CreateNumber((double)v) : cJSON_CreateNull();
}

cJSON *rescales_to_json(const struct rescales *rs)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < rs->n; i++) {
		const struct rescale *r = &rs->v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "rescaleUuid", r->uuid);
		cJSON_AddItemToObject(o, "resourceRequirementsUuid", str_or_null(r->requirements_uuid));
		cJSON_AddItemToObject(o, "rescaleAttemptId", num_or_null(r->attempt));
		cJSON_AddItemToObject(o, "triggerCause", str_or_null(r->trigger));
		cJSON_AddItemToObject(o, "terminalState", str_or_null(r->terminal));
		cJSON_AddItemToObject(o, "terminatedReason", str_or_null(r->reason));
		cJSON_AddItemToObject(o, "startTimestampInMillis", num_or_null(r->start_ms));
		cJSON_AddItemToObject(o, "endTimestampInMillis", num_or_null(r->end_ms));
		cJSON_AddBoolToObject(o, "detailsKnown", r->details);
		cJSON *vs = cJSON_AddObjectToObject(o, "vertices");
		for (size_t k = 0; k < r->n_vertices; k++) {
			const struct rescale_vertex *v = &r->vertices[k];
			cJSON *vo = cJSON_AddObjectToObject(vs, v->id);
			cJSON_AddStringToObject(vo, "jobVertexName", v->name ? v->name : "");
			cJSON_AddItemToObject(vo, "desiredParallelism", num_or_null(v->desired));
			cJSON_AddItemToObject(vo, "sufficientParallelism", num_or_null(v->sufficient));
			cJSON_AddItemToObject(vo, "preRescaleParallelism", num_or_null(v->pre));
			cJSON_AddItemToObject(vo, "postRescaleParallelism", num_or_null(v->post));
		}
		if (r->vertices_cut)
			cJSON_AddBoolToObject(o, "verticesCut", true);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

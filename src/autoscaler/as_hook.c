/* as_hook: the scaling hook's side of a rescale (issue 27; what the operator 1.16's scaling executor plugins,
 * FLIP-575, do, without a JVM). When a hook is configured, a rescale the decision reaches is proposed instead of
 * executed: this file writes the proposal an executable reads on its stdin (every vertex, its current and proposed
 * parallelism, how far the answer may move it, the evaluated metrics the decision stood on, and why), reads the
 * answer it wrote on its stdout against the proposal (apply, veto, or adjust the parallelism map: only vertices of
 * the job that are not excluded, each within [1, its limit]), changes the decision as the answer says, and emits
 * the ScalingHook* event that says which. A hook that could not be run, failed, did not answer in time or answered
 * something unusable vetoes the rescale: it is not executed (ScalingHookFailed), and the next cycle proposes again.
 * Running the executable is the caller's (src/flink/hookproc.c); nothing here does I/O. docs/autoscaler.md, "The
 * scaling hook", is the user's view. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

#define REASON_MAX 500 /* bytes of the hook's own reason kept in a message */
#define PROBLEMS_MAX 5 /* problems of an answer named in a message */

const char *as_hook_verdict_name(enum as_hook_verdict v)
{
	static const char *const names[] = {"applied", "adjusted", "vetoed", "failed"};
	return names[v];
}

/* ---- the proposal ---- */

static bool excluded(const struct as_exec *x, size_t i)
{
	if ((x->excluded && x->excluded[i]) || !x->d[i].computed)
		return true;
	for (size_t k = 0; k < x->o->exclude_ids.n; k++)
		if (!strcmp(x->o->exclude_ids.v[k], x->t->v[i].id))
			return true;
	return false;
}

static int max_parallelism(const struct as_exec *x, size_t i)
{
	int m = x->t->v[i].max_parallelism;
	if (m <= 0)
		m = as_java_d2i(x->ev->v[i].m[AS_EM_MAX_PARALLELISM].current);
	return m > 0 ? m : 32768;
}

/* The most the answer may give vertex i: its key groups, and the autoscaler's own ceiling (a vertex already above
 * vertex.max-parallelism may stay where it is). */
static int limit(const struct as_exec *x, size_t i)
{
	int p = x->t->v[i].parallelism, upper = p > x->o->vertex_max_parallelism ? p : x->o->vertex_max_parallelism;
	int keys = max_parallelism(x, i);
	return upper < keys ? upper : keys;
}

static int proposed(const struct as_exec *x, size_t i)
{
	return x->d[i].in_summary ? x->d[i].new_p : x->t->v[i].parallelism;
}

static void fmt_rate(struct strbuf *b, double v)
{
	if (isnan(v))
		strbuf_append(b, "NaN");
	else if (isinf(v))
		strbuf_append(b, v > 0 ? "Infinity" : "-Infinity");
	else
		strbuf_appendf(b, "%.2f", v);
}

/* Why the rescale is proposed: each vertex that moves, and which bound it is outside of. */
static char *reason(const struct as_exec *x)
{
	struct strbuf b = {0};
	for (size_t k = 0; k < x->t->n; k++) {
		size_t i = x->t->order[k];
		if (!x->d[i].in_summary)
			continue;
		const struct as_eval_metric *m = x->ev->v[i].m;
		double tpr = m[AS_EM_TRUE_PROCESSING_RATE].average, up = m[AS_EM_SCALE_UP_RATE_THRESHOLD].current,
		       down = m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current;
		strbuf_appendf(&b, "%s%s %d -> %d: ", b.len ? "; " : "", x->t->v[i].id, x->t->v[i].parallelism,
		               x->d[i].new_p);
		if (!x->d[i].outside) {
			strbuf_append(&b, "within its utilization bounds, moves with the vertices outside theirs");
		} else if (tpr < up || tpr > down) {
			strbuf_append(&b, "true processing rate ");
			fmt_rate(&b, tpr);
			strbuf_append(&b, tpr < up ? " is below the scale-up threshold "
			                           : " is above the scale-down threshold ");
			fmt_rate(&b, tpr < up ? up : down);
		} else {
			strbuf_append(&b, "outside its utilization bounds when the scale-down interval began");
		}
	}
	return strbuf_steal(&b);
}

/* "v1 2 -> 4, v2 4 -> 2" of the vertices that move under ps (the parallelism per vertex) */
static char *summary(const struct as_exec *x, const int *ps)
{
	struct strbuf b = {0};
	for (size_t k = 0; k < x->t->n; k++) {
		size_t i = x->t->order[k];
		int q = ps ? ps[i] : proposed(x, i);
		if (q != x->t->v[i].parallelism)
			strbuf_appendf(&b, "%s%s %d -> %d", b.len ? ", " : "", x->t->v[i].id, x->t->v[i].parallelism,
			               q);
	}
	return b.len ? strbuf_steal(&b) : xstrdup("no change");
}

static const enum as_emetric hook_metrics[] = {
    AS_EM_LOAD, AS_EM_TRUE_PROCESSING_RATE,    AS_EM_TARGET_DATA_RATE,          AS_EM_CATCH_UP_DATA_RATE,
    AS_EM_LAG,  AS_EM_SCALE_UP_RATE_THRESHOLD, AS_EM_SCALE_DOWN_RATE_THRESHOLD, AS_EM_EXPECTED_PROCESSING_RATE,
};

char *as_hook_proposal(const struct as_exec *x, const char *job, int64_t timeout_ms)
{
	cJSON *doc = cJSON_CreateObject(), *vs = cJSON_CreateArray(), *g = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "version", 1);
	cJSON_AddStringToObject(doc, "job", job);
	cJSON_AddNumberToObject(doc, "time", (double)x->now);
	cJSON_AddNumberToObject(doc, "timeoutMs", (double)timeout_ms);
	char *why = reason(x);
	cJSON_AddStringToObject(doc, "reason", why);
	free(why);
	for (size_t k = 0; k < x->t->n; k++) {
		size_t i = x->t->order[k];
		const struct as_vertex *v = &x->t->v[i];
		int q = proposed(x, i);
		cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", v->id);
		cJSON_AddNumberToObject(o, "currentParallelism", v->parallelism);
		cJSON_AddNumberToObject(o, "proposedParallelism", q);
		cJSON_AddStringToObject(o, "direction",
		                        q > v->parallelism   ? "up"
		                        : q < v->parallelism ? "down"
		                                             : "none");
		cJSON_AddNumberToObject(o, "maxParallelism", max_parallelism(x, i));
		cJSON_AddNumberToObject(o, "parallelismLimit", limit(x, i));
		cJSON_AddNumberToObject(o, "numSourcePartitions", v->num_source_partitions);
		cJSON_AddBoolToObject(o, "outsideUtilizationBound", as_outside_bounds(x->ev->v[i].m));
		cJSON_AddBoolToObject(o, "excluded", excluded(x, i));
		for (size_t n = 0; n < sizeof(hook_metrics) / sizeof(hook_metrics[0]); n++) {
			enum as_emetric e = hook_metrics[n];
			struct as_eval_metric value = x->ev->v[i].m[e];
			if (e == AS_EM_EXPECTED_PROCESSING_RATE && q == v->parallelism)
				value.current = value.average = NAN; /* it does not move */
			cJSON_AddItemToObject(m, as_emetric_name(e),
			                      as_eval_metric_to_json(&value, as_emetric_fields(e)));
		}
		cJSON_AddItemToObject(o, "metrics", m);
		cJSON_AddItemToArray(vs, o);
	}
	cJSON_AddItemToObject(doc, "vertices", vs);
	for (int k = 0; k < AS_EG_COUNT; k++)
		cJSON_AddItemToObject(g, as_egmetric_name(k),
		                      as_eval_metric_to_json(&x->ev->g[k], as_egmetric_fields(k)));
	cJSON_AddItemToObject(doc, "global", g);
	char *text = as_json_pretty(doc);
	cJSON_Delete(doc);
	return text;
}

/* ---- the answer ---- */

enum decision { APPLY, VETO, ADJUST };

struct answer {
	enum decision decision;
	char *reason; /* the hook's own, one line, bounded; NULL: none */
	int *ps;      /* per vertex: the parallelism the answer leaves it at */
	struct strv problems;
};

static void problem(struct answer *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct answer *a, const char *fmt, ...)
{
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	strv_push_take(&a->problems, strbuf_steal(&b));
}

static char *one_line(const char *s)
{
	size_t n = strlen(s);
	char *out = xstrndup(s, n > REASON_MAX ? REASON_MAX : n);
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return out;
}

static void read_parallelism(const struct as_exec *x, const cJSON *map, struct answer *a)
{
	if (!cJSON_IsObject(map)) {
		problem(a, "parallelism: must be an object of vertex ids to parallelisms");
		return;
	}
	for (const cJSON *c = map->child; c; c = c->next) {
		int i = as_topology_find(x->t, c->string);
		int64_t q;
		if (i < 0) {
			problem(a, "parallelism.%s: no such vertex in the job", c->string);
		} else if (excluded(x, (size_t)i)) {
			problem(a, "parallelism.%s: the vertex is excluded from scaling", c->string);
		} else if (as_json_int64(c, 1, limit(x, (size_t)i), &q) < 0) {
			char *got = cJSON_PrintUnformatted(c);
			problem(a, "parallelism.%s: must be an integer from 1 to %d (got %.40s)", c->string,
			        limit(x, (size_t)i), got ? got : "?");
			free(got);
		} else {
			a->ps[i] = (int)q;
		}
	}
}

static void read_answer(const struct as_exec *x, const char *text, size_t len, struct answer *a)
{
	for (size_t i = 0; i < x->t->n; i++)
		a->ps[i] = proposed(x, i);
	size_t start = 0;
	while (start < len && (text[start] == ' ' || text[start] == '\n' || text[start] == '\r' || text[start] == '\t'))
		start++;
	if (start == len) {
		problem(a, "no answer on its standard output");
		return;
	}
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (!j) {
		problem(a, "not JSON (at byte %zu)", end && end >= text ? (size_t)(end - text) : (size_t)0);
		return;
	}
	for (const char *p = end; p < text + len; p++)
		if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
			problem(a, "more than one JSON value (at byte %zu)", (size_t)(p - text));
			cJSON_Delete(j);
			return;
		}
	if (!cJSON_IsObject(j)) {
		problem(a, "must be a JSON object such as {\"decision\": \"apply\"}");
		cJSON_Delete(j);
		return;
	}
	static const char *const known[] = {"decision", "parallelism", "reason"};
	for (const cJSON *c = j->child; c; c = c->next)
		if (strcmp(c->string, "decision") && strcmp(c->string, "parallelism") && strcmp(c->string, "reason")) {
			const char *hint = as_did_you_mean(c->string, known, 3);
			problem(a, "%s: unknown field%s%s%s", c->string, hint ? " (did you mean \"" : "",
			        hint ? hint : "", hint ? "\"?)" : "");
		}
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "decision"),
	            *r = cJSON_GetObjectItemCaseSensitive(j, "reason"),
	            *map = cJSON_GetObjectItemCaseSensitive(j, "parallelism");
	if (!cJSON_IsString(d) ||
	    (strcmp(d->valuestring, "apply") && strcmp(d->valuestring, "veto") && strcmp(d->valuestring, "adjust"))) {
		char *got = d ? cJSON_PrintUnformatted(d) : NULL;
		problem(a, "decision: must be \"apply\", \"veto\" or \"adjust\" (got %.40s)", got ? got : "nothing");
		free(got);
	} else {
		a->decision = !strcmp(d->valuestring, "apply")  ? APPLY
		              : !strcmp(d->valuestring, "veto") ? VETO
		                                                : ADJUST;
		if (a->decision == ADJUST && !map)
			problem(a, "parallelism: required with \"decision\": \"adjust\"");
		else if (a->decision != ADJUST && map)
			problem(a, "parallelism: only with \"decision\": \"adjust\"");
	}
	if (r && !cJSON_IsString(r))
		problem(a, "reason: must be a string");
	else if (r && *r->valuestring)
		a->reason = one_line(r->valuestring);
	if (map && a->decision == ADJUST)
		read_parallelism(x, map, a);
	cJSON_Delete(j);
}

static char *problems_text(const struct strv *p)
{
	struct strbuf b = {0};
	for (size_t i = 0; i < p->n && i < PROBLEMS_MAX; i++)
		strbuf_appendf(&b, "%s%s", i ? "; " : "", p->v[i]);
	if (p->n > PROBLEMS_MAX)
		strbuf_appendf(&b, "; and %zu more", p->n - PROBLEMS_MAX);
	return strbuf_steal(&b);
}

/* The decision as the answer leaves it: each vertex at ps (a vertex back at its parallelism no longer moves); the
 * metrics the report and the scaling history read follow (the rate expected at the new parallelism as the
 * decision computes it, TPR / p x new p). */
static void adjust(struct as_exec *x, const int *ps)
{
	for (size_t i = 0; i < x->t->n; i++) {
		int p = x->t->v[i].parallelism;
		struct as_vertex_decision *d = &x->d[i];
		struct as_eval_metric *m = x->ev->v[i].m;
		if (ps[i] == proposed(x, i))
			continue;
		d->in_summary = d->change = ps[i] != p;
		d->new_p = ps[i];
		m[AS_EM_RECOMMENDED_PARALLELISM].current = ps[i];
		m[AS_EM_EXPECTED_PROCESSING_RATE].current =
		    ps[i] != p ? as_round3(m[AS_EM_TRUE_PROCESSING_RATE].average / p * ps[i]) : NAN;
	}
}

enum as_hook_verdict as_hook_review(struct as_exec *x, const struct as_hook_result *r, char **ret_message)
{
	char *was = summary(x, NULL);
	struct answer a = {APPLY, NULL, xcalloc(x->t->n ? x->t->n : 1, sizeof(int)), {0}};
	if (!r->failure)
		read_answer(x, r->answer ? r->answer : "", r->answer ? r->answer_len : 0, &a);
	enum as_hook_verdict v;
	struct strbuf msg = {0}, key = {0};
	strbuf_appendf(&key, "%s|", was);
	if (r->failure || a.problems.n) {
		v = AS_HOOK_FAILED;
		char *why = r->failure ? xstrdup(r->failure) : problems_text(&a.problems);
		strbuf_appendf(&msg, "The scaling hook %s %s%s; the rescale (%s) is not executed", r->hook,
		               r->failure ? "" : "answered what cannot be used: ", why, was);
		if (r->errors && *r->errors)
			strbuf_appendf(&msg, " (its error output ends: %s)", r->errors);
		strbuf_append(&key, why);
		free(why);
	} else if (a.decision == VETO) {
		v = AS_HOOK_VETOED;
		strbuf_appendf(&msg, "The scaling hook %s vetoed the rescale (%s)", r->hook, was);
	} else {
		char *to = summary(x, a.ps);
		bool same = !strcmp(to, was), none = !strcmp(to, "no change");
		v = none ? AS_HOOK_VETOED : same ? AS_HOOK_APPLIED : AS_HOOK_ADJUSTED;
		if (none)
			strbuf_appendf(&msg, "The scaling hook %s adjusted the rescale (%s) to no change", r->hook,
			               was);
		else if (same)
			strbuf_appendf(&msg, "The scaling hook %s approved the rescale (%s)", r->hook, was);
		else
			strbuf_appendf(&msg, "The scaling hook %s adjusted the rescale (%s) to %s", r->hook, was, to);
		strbuf_append(&key, to);
		free(to);
		if (v == AS_HOOK_ADJUSTED)
			adjust(x, a.ps);
	}
	if (a.reason)
		strbuf_appendf(&msg, ": %s", a.reason);
	static const char *const reasons[] = {AS_REASON_HOOK_APPLIED, AS_REASON_HOOK_ADJUSTED, AS_REASON_HOOK_VETOED,
	                                      AS_REASON_HOOK_FAILED};
	/* an executed rescale is said every time; a veto or a failure once per interval for the same proposal */
	bool executed = v == AS_HOOK_APPLIED || v == AS_HOOK_ADJUSTED;
	as_emit(x->em, executed ? AS_EVENT_NORMAL : AS_EVENT_WARNING, reasons[v], key.buf,
	        executed ? -1 : x->o->event_interval_ms, "%s", msg.buf);
	if (ret_message)
		*ret_message = strbuf_steal(&msg);
	strbuf_free(&msg);
	strbuf_free(&key);
	free(was);
	free(a.reason);
	free(a.ps);
	strv_free(&a.problems);
	return v;
}

/* ---- the proposal kept until the answer ---- */

struct as_proposal *as_proposal_take(struct as_exec *x)
{
	const struct as_topology *t = x->t;
	struct as_proposal *p = xcalloc(1, sizeof(*p));
	size_t n = t->n ? t->n : 1;
	p->now = x->now;
	p->t.n = t->n;
	p->t.v = xcalloc(n, sizeof(*p->t.v));
	p->t.order = xcalloc(n, sizeof(size_t));
	for (size_t i = 0; i < t->n; i++) {
		p->t.v[i].id = xstrdup(t->v[i].id);
		p->t.v[i].parallelism = t->v[i].parallelism;
		p->t.v[i].max_parallelism = t->v[i].max_parallelism;
		p->t.v[i].num_source_partitions = t->v[i].num_source_partitions;
		p->t.order[i] = t->order[i];
	}
	p->ev.n = x->ev->n;
	p->ev.v = xcalloc(n, sizeof(*p->ev.v));
	memcpy(p->ev.v, x->ev->v, x->ev->n * sizeof(*p->ev.v));
	memcpy(p->ev.g, x->ev->g, sizeof(p->ev.g));
	p->ev.backlog = x->ev->backlog;
	p->excluded = xcalloc(n, sizeof(bool));
	if (x->excluded)
		memcpy(p->excluded, x->excluded, t->n * sizeof(bool));
	p->d = x->d;
	x->d = NULL;
	return p;
}

void as_proposal_exec(struct as_proposal *p, const struct as_options *o, struct as_delayed *delayed,
                      const struct as_emitter *em, struct as_exec *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->o = o;
	ret->t = &p->t;
	ret->ev = &p->ev;
	ret->delayed = delayed;
	ret->excluded = p->excluded;
	ret->now = p->now;
	ret->em = em;
	ret->d = p->d;
	ret->proposed = true;
}

void as_proposal_free(struct as_proposal *p)
{
	if (!p)
		return;
	as_topology_free(&p->t);
	as_evaluation_free(&p->ev);
	free(p->d);
	free(p->excluded);
	free(p);
}

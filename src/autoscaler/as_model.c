/* as_model: the autoscaler's plain data containers and their upkeep: samples and the metric window, the
 * job topology (outputs and topological order from the inputs), scaling history and tracking with their
 * trimming rules (5.1), delayed scale-down entries, and vertex -> parallelism maps with Flink's
 * "k1:v1,k2:v2" syntax. It is not for serialization (as_state.c) or decisions (as_eval.c, as_scale.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

/* ---- samples ---- */

void as_sample_init(struct as_sample *s, int64_t ts)
{
	memset(s, 0, sizeof(*s));
	s->ts = ts;
	for (int i = 0; i < AS_GM_COUNT; i++)
		s->g[i] = NAN;
}

void as_sample_free(struct as_sample *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].id);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

double *as_sample_vertex_metrics(struct as_sample *s, const char *id, bool create)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].id, id))
			return s->v[i].m;
	if (!create)
		return NULL;
	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	struct as_sample_vertex *v = &s->v[s->n++];
	v->id = xstrdup(id);
	for (int i = 0; i < AS_VM_COUNT; i++)
		v->m[i] = NAN;
	return v->m;
}

const double *as_sample_vertex_get(const struct as_sample *s, const char *id)
{
	return as_sample_vertex_metrics((struct as_sample *)s, id, false);
}

void as_samples_free(struct as_samples *h)
{
	for (size_t i = 0; i < h->n; i++)
		as_sample_free(&h->s[i]);
	free(h->s);
	h->s = NULL;
	h->n = 0;
}

void as_samples_put(struct as_samples *h, struct as_sample *s)
{
	size_t i = h->n;
	while (i > 0 && h->s[i - 1].ts > s->ts)
		i--;
	if (i > 0 && h->s[i - 1].ts == s->ts) {
		as_sample_free(&h->s[i - 1]);
		h->s[i - 1] = *s;
	} else {
		h->s = xrealloc(h->s, (h->n + 1) * sizeof(*h->s));
		memmove(&h->s[i + 1], &h->s[i], (h->n - i) * sizeof(*h->s));
		h->s[i] = *s;
		h->n++;
	}
	memset(s, 0, sizeof(*s));
}

void as_samples_drop_before(struct as_samples *h, int64_t ts)
{
	size_t k = 0;
	while (k < h->n && h->s[k].ts < ts)
		as_sample_free(&h->s[k++]);
	memmove(h->s, h->s + k, (h->n - k) * sizeof(*h->s));
	h->n -= k;
}

/* ---- topology ---- */

void as_topology_free(struct as_topology *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].id);
		free(t->v[i].slot_sharing_group);
		free(t->v[i].inputs);
		free(t->v[i].outputs);
	}
	free(t->v);
	free(t->order);
	memset(t, 0, sizeof(*t));
}

int as_topology_find(const struct as_topology *t, const char *id)
{
	for (size_t i = 0; id && i < t->n; i++)
		if (!strcmp(t->v[i].id, id))
			return (int)i;
	return -1;
}

int as_topology_find_hinted(const struct as_topology *t, const char *id, size_t *hint)
{
	if (*hint < t->n && !strcmp(t->v[*hint].id, id))
		return (int)*hint;
	int i = as_topology_find(t, id);
	if (i >= 0)
		*hint = (size_t)i;
	return i;
}

int as_topology_link(struct as_topology *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].outputs);
		t->v[i].outputs = NULL;
		t->v[i].noutputs = 0;
	}
	for (size_t i = 0; i < t->n; i++)
		for (size_t k = 0; k < t->v[i].ninputs; k++) {
			struct as_vertex *u = &t->v[t->v[i].inputs[k].from];
			u->outputs = xrealloc(u->outputs, (u->noutputs + 1) * sizeof(size_t));
			u->outputs[u->noutputs++] = i;
		}
	/* Kahn's algorithm, level by level: every vertex whose inputs are all placed joins the next level */
	free(t->order);
	t->order = xcalloc(t->n, sizeof(size_t));
	size_t *remaining = xcalloc(t->n, sizeof(size_t));
	bool *placed = xcalloc(t->n, sizeof(bool));
	for (size_t i = 0; i < t->n; i++)
		remaining[i] = t->v[i].ninputs;
	size_t done = 0;
	while (done < t->n) {
		size_t level_start = done;
		for (size_t i = 0; i < t->n; i++)
			if (!placed[i] && remaining[i] == 0)
				t->order[done++] = i;
		if (done == level_start)
			break;
		for (size_t k = level_start; k < done; k++) {
			size_t i = t->order[k];
			placed[i] = true;
			for (size_t o = 0; o < t->v[i].noutputs; o++)
				remaining[t->v[i].outputs[o]]--;
		}
	}
	free(remaining);
	free(placed);
	return done == t->n ? 0 : -EINVAL;
}

/* ---- scaling history ---- */

void as_scaling_history_free(struct as_scaling_history *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].vertex);
		free(h->v[i].e);
	}
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

struct as_vertex_history *as_scaling_history_get(const struct as_scaling_history *h, const char *vertex)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->v[i].vertex, vertex))
			return &h->v[i];
	return NULL;
}

void as_scaling_history_add(struct as_scaling_history *h, const char *vertex, const struct as_history_entry *e)
{
	struct as_vertex_history *vh = as_scaling_history_get(h, vertex);
	if (!vh) {
		h->v = xrealloc(h->v, (h->n + 1) * sizeof(*h->v));
		vh = &h->v[h->n++];
		vh->vertex = xstrdup(vertex);
		vh->e = NULL;
		vh->n = 0;
	}
	size_t i = vh->n;
	while (i > 0 && vh->e[i - 1].ts > e->ts)
		i--;
	if (i > 0 && vh->e[i - 1].ts == e->ts) {
		vh->e[i - 1] = *e;
		return;
	}
	vh->e = xrealloc(vh->e, (vh->n + 1) * sizeof(*vh->e));
	memmove(&vh->e[i + 1], &vh->e[i], (vh->n - i) * sizeof(*vh->e));
	vh->e[i] = *e;
	vh->n++;
}

void as_scaling_history_trim(struct as_scaling_history *h, int64_t now, int64_t max_age_ms, int max_count)
{
	size_t out = 0;
	for (size_t i = 0; i < h->n; i++) {
		struct as_vertex_history *vh = &h->v[i];
		size_t k = 0;
		while (k < vh->n && vh->e[k].ts < now - max_age_ms)
			k++;
		size_t keep = vh->n - k;
		if (max_count >= 0 && keep > (size_t)max_count) {
			k += keep - (size_t)max_count;
			keep = (size_t)max_count;
		}
		memmove(vh->e, vh->e + k, keep * sizeof(*vh->e));
		vh->n = keep;
		if (keep == 0) {
			free(vh->vertex);
			free(vh->e);
			continue;
		}
		h->v[out++] = *vh;
	}
	h->n = out;
}

/* ---- tracking ---- */

void as_tracking_free(struct as_tracking *t)
{
	free(t->r);
	t->r = NULL;
	t->n = 0;
}

void as_tracking_trim(struct as_tracking *t, int64_t now, int64_t max_age_ms, int max_count)
{
	if (t->n == 0)
		return;
	size_t k = 0;
	while (k < t->n && t->r[k].ts < now - max_age_ms)
		k++;
	size_t keep = t->n - k;
	if (max_count >= 0 && keep > (size_t)max_count) {
		k += keep - (size_t)max_count;
		keep = (size_t)max_count;
	}
	if (keep == 0) { /* the newest record is always kept */
		k = t->n - 1;
		keep = 1;
	}
	memmove(t->r, t->r + k, keep * sizeof(*t->r));
	t->n = keep;
}

/* ---- delayed scale-down ---- */

static void delayed_vertex_free(struct as_delayed_vertex *v)
{
	free(v->vertex);
	free(v->r);
}

void as_delayed_free(struct as_delayed *d)
{
	for (size_t i = 0; i < d->n; i++)
		delayed_vertex_free(&d->v[i]);
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

void as_delayed_clear_vertex(struct as_delayed *d, const char *vertex)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].vertex, vertex)) {
			delayed_vertex_free(&d->v[i]);
			memmove(&d->v[i], &d->v[i + 1], (d->n - i - 1) * sizeof(*d->v));
			d->n--;
			d->updated = true;
			return;
		}
}

void as_delayed_clear_all(struct as_delayed *d)
{
	if (d->n)
		d->updated = true;
	bool updated = d->updated;
	as_delayed_free(d);
	d->updated = updated;
}

/* ---- parallelism maps ---- */

void as_pmap_free(struct as_pmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].vertex);
	free(m->e);
	m->e = NULL;
	m->n = 0;
}

void as_pmap_set(struct as_pmap *m, const char *vertex, int parallelism)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].vertex, vertex)) {
			m->e[i].parallelism = parallelism;
			return;
		}
	m->e = xrealloc(m->e, (m->n + 1) * sizeof(*m->e));
	m->e[m->n].vertex = xstrdup(vertex);
	m->e[m->n].parallelism = parallelism;
	m->n++;
}

int as_pmap_get(const struct as_pmap *m, const char *vertex)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (!strcmp(m->e[i].vertex, vertex))
			return m->e[i].parallelism;
	return -1;
}

bool as_pmap_equal(const struct as_pmap *a, const struct as_pmap *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (as_pmap_get(b, a->e[i].vertex) != a->e[i].parallelism)
			return false;
	return true;
}

static char *trimmed(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return xstrndup(s, n);
}

int as_pmap_parse_flink(const char *s, struct as_pmap *ret)
{
	struct as_pmap m = {0};
	const char *p = s ? s : "";
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char *item = trimmed(p, len);
		char *colon = strchr(item, ':');
		int64_t v;
		if (*item) {
			if (!colon || colon == item) {
				free(item);
				as_pmap_free(&m);
				return -EINVAL;
			}
			*colon = '\0';
			char *key = trimmed(item, strlen(item)), *val = trimmed(colon + 1, strlen(colon + 1));
			int r = parse_int64(val, &v);
			if (r < 0 || v < 1 || v > INT32_MAX || !*key) {
				free(key);
				free(val);
				free(item);
				as_pmap_free(&m);
				return -EINVAL;
			}
			as_pmap_set(&m, key, (int)v);
			free(key);
			free(val);
		}
		free(item);
		p += len;
		if (*p == ',')
			p++;
	}
	*ret = m;
	return 0;
}

char *as_pmap_to_flink(const struct as_pmap *m)
{
	struct strbuf b = {0};
	for (size_t i = 0; i < m->n; i++)
		strbuf_appendf(&b, "%s%s:%d", i ? "," : "", m->e[i].vertex, m->e[i].parallelism);
	return strbuf_steal(&b);
}

/* ---- evaluation, snapshot ---- */

void as_evaluation_free(struct as_evaluation *e)
{
	free(e->v);
	memset(e, 0, sizeof(*e));
}

void as_vertex_names_free(struct as_vertex_names *n)
{
	free(n->id);
	free(n->busy);
	free(n->backpressure);
	free(n->source_in_per_sec);
	free(n->source_in);
	free(n->source_out);
	free(n->in_per_sec);
	strv_free(&n->pending);
	memset(n, 0, sizeof(*n));
}

void as_snapshot_free(struct as_snapshot *s)
{
	free(s->raw);
	as_topology_free(&s->topo);
	free(s->error);
	memset(s, 0, sizeof(*s));
}

const char *as_state_kind_name(enum as_state_kind k)
{
	static const char *const names[AS_STATE_KIND_COUNT] = {
	    "collectedMetrics", "scalingHistory", "scalingTracking", "parallelismOverrides", "delayedScaleDown",
	};
	return names[k];
}

const char *as_outcome_name(enum as_outcome o)
{
	static const char *const names[] = {"disabled", "not-running", "not-ready", "collecting",
	                                    "balanced", "scaled",      "error",     "proposed"};
	return names[o];
}

const char *as_effective_status(const char *state, int tasks_total, int tasks_running, int tasks_finished)
{
	if (state && !strcmp(state, "RUNNING") && tasks_total != tasks_running + tasks_finished)
		return "CREATED";
	return state ? state : "UNKNOWN";
}

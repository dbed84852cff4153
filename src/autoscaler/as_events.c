/* as_events: the autoscaler's events as data (reference 5.2): emitting through an emitter, the dedupe
 * table that suppresses a repeated (reason, key) within its interval, and the ScalingReport message
 * with its per-vertex entries. It is not for routing events anywhere (the event handler does that). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

#define DEDUPE_MAX 256

void as_emit(const struct as_emitter *e, enum as_event_type type, const char *reason, const char *message_key,
             int64_t interval_ms, const char *fmt, ...)
{
	if (!e || !e->emit)
		return;
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	e->emit(e->ud, type, reason, b.buf ? b.buf : "", message_key, interval_ms);
	strbuf_free(&b);
}

bool as_dedupe_admit(struct as_dedupe *d, const char *reason, const char *key, int64_t interval_ms, int64_t now)
{
	if (interval_ms <= 0)
		return true;
	char *k = xasprintf("%s\n%s", reason, key ? key : "");
	for (size_t i = 0; i < d->n; i++) {
		if (strcmp(d->e[i].key, k))
			continue;
		free(k);
		/* the interval runs from the first event; the same event inside it is suppressed */
		if (d->e[i].first_ms > now - interval_ms && d->e[i].first_ms <= now)
			return false;
		d->e[i].first_ms = now;
		return true;
	}
	if (d->n == DEDUPE_MAX) { /* forget the oldest */
		size_t oldest = 0;
		for (size_t i = 1; i < d->n; i++)
			if (d->e[i].first_ms < d->e[oldest].first_ms)
				oldest = i;
		free(d->e[oldest].key);
		d->e[oldest] = d->e[--d->n];
	}
	d->e = xrealloc(d->e, (d->n + 1) * sizeof(*d->e));
	d->e[d->n].key = k;
	d->e[d->n].first_ms = now;
	d->n++;
	return true;
}

void as_dedupe_free(struct as_dedupe *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].key);
	free(d->e);
	d->e = NULL;
	d->n = 0;
}

/* Java's String.format("%.2f") in the root locale, with NaN and Infinity spelled as Java does. */
static void fmt2(struct strbuf *b, double x)
{
	if (isnan(x))
		strbuf_append(b, "NaN");
	else if (isinf(x))
		strbuf_append(b, x > 0 ? "Infinity" : "-Infinity");
	else
		strbuf_appendf(b, "%.2f", x);
}

char *as_scaling_report(const struct as_topology *t, const struct as_evaluation *ev, const struct as_vertex_decision *d,
                        bool enabled_header, const char *disabled_by)
{
	struct strbuf b = {0};
	if (enabled_header)
		strbuf_append(&b, "Scaling execution enabled, begin scaling vertices:");
	else
		strbuf_appendf(&b, "Scaling execution disabled by config %s, recommended parallelism changes:",
		               disabled_by ? disabled_by : "");
	for (size_t k = 0; k < t->n; k++) {
		size_t i = t->order ? t->order[k] : k;
		if (!d[i].in_summary)
			continue;
		const struct as_eval_metric *m = ev->v[i].m;
		strbuf_appendf(&b, "{ Vertex ID %s | Parallelism %d -> %d | Processing capacity ", t->v[i].id,
		               t->v[i].parallelism, d[i].new_p);
		fmt2(&b, m[AS_EM_TRUE_PROCESSING_RATE].average);
		strbuf_append(&b, " -> ");
		fmt2(&b, m[AS_EM_EXPECTED_PROCESSING_RATE].current);
		strbuf_append(&b, " | Target data rate ");
		fmt2(&b, m[AS_EM_TARGET_DATA_RATE].average);
		strbuf_append(&b, "}");
	}
	return strbuf_steal(&b);
}

/* as_scale: the per-vertex scaling decision (reference 3.2 - 3.8): the scale factor from the capacity
 * formula and its clamps, min/max parallelism, the source partition cap, alignment to key groups or
 * source partitions (BALANCED, EVENLY_SPREAD, OFF and the legacy blocking modes), ineffective-scaling
 * detection, delayed scale-down and the observed scalability coefficient. It is not for the job-level
 * gates and the decision's effects (as_exec.c). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

static int imin(int a, int b)
{
	return a < b ? a : b;
}

static int imax(int a, int b)
{
	return a > b ? a : b;
}

/* The first q in [from, to] with N mod q == 0, or (accept_load_reducing) N/q < N/from; 0 if none. */
static int first_aligned(int n, int from, int to, bool accept_load_reducing)
{
	if (from < 1)
		return 0;
	for (int q = from; q <= to; q++)
		if (n % q == 0 || (accept_load_reducing && n / q < n / from))
			return q;
	return 0;
}

static void scaling_limited(const struct as_emitter *em, const struct as_options *o, const char *vertex, int expected,
                            int actual, int n, int upper, int lower)
{
	char *key = xasprintf("ScalingLimited%s", vertex);
	as_emit(em, AS_EVENT_WARNING, AS_REASON_SCALING_LIMITED, key, o->event_interval_ms,
	        "Scaling limited for vertex %s: expected parallelism %d, actual %d, because the number of key groups "
	        "or source partitions is %d, the upper limit is %d and the lower limit is %d",
	        vertex, expected, actual, n, upper, lower);
	free(key);
}

int as_scale_parallelism(const struct as_options *o, const char *vertex, int p, double f, int lower_limit,
                         int upper_limit, int max_p, int partitions, bool has_hash_input, const struct as_emitter *em)
{
	if (lower_limit > upper_limit)
		return p; /* cannot happen: lower <= p <= upper by construction (3.2 step 5) */
	double c = ceil(f * p);
	int raw = c >= (double)INT32_MAX ? INT32_MAX : as_java_d2i(c);
	int ub = imin(max_p, upper_limit);
	/* operator 1.16: a source that reports its partitions (Kafka, Pulsar) is never scaled above their
	 * number, whatever the alignment mode: the readers beyond it would sit idle holding slots */
	int cap = partitions > 0 ? imin(ub, partitions) : ub;
	int new_p = imin(imax(lower_limit, raw), cap);
	if (new_p == p)
		return p;
	if (!(partitions > 0 || has_hash_input))
		return new_p;
	int n = partitions > 0 ? partitions : max_p;
	int ub_aligned = imin(n, ub);
	bool up = new_p > p;
	int to = up ? ub_aligned : imin(p, ub_aligned);
	int q;
	switch (o->alignment) {
	case AS_ALIGN_OFF:
		return new_p;
	case AS_ALIGN_BALANCED:
		q = first_aligned(n, new_p, to, true);
		return q > 0 ? q : new_p;
	case AS_ALIGN_EVENLY_SPREAD:
		q = first_aligned(n, new_p, to, false);
		return q > 0 ? q : new_p;
	case AS_ALIGN_LEGACY_EVENLY_SPREAD:
	case AS_ALIGN_LEGACY_MAXIMIZE_UTILISATION:
		break;
	}
	q = first_aligned(n, new_p, to, o->alignment == AS_ALIGN_LEGACY_MAXIMIZE_UTILISATION);
	if (q > 0)
		return q;
	/* the relaxed fallback: downward from newP to the first d that gives each subtask more */
	int d = 0;
	for (int k = new_p; k > 0; k--)
		if (n / k > n / new_p) {
			d = n % k != 0 ? k + 1 : k;
			break;
		}
	d = imax(d, lower_limit);
	if ((up && d <= p) || (!up && d >= p)) {
		scaling_limited(em, o, vertex, new_p, p, n, ub, lower_limit);
		return p;
	}
	if (d != new_p)
		scaling_limited(em, o, vertex, new_p, d, n, ub, lower_limit);
	return d;
}

double as_scalability_coefficient(const struct as_options *o, const struct as_vertex_history *vh)
{
	if (!vh || vh->n == 0 || vh->n < (size_t)o->observed_scalability_min_observations)
		return 1.0;
	for (size_t i = 0; i < vh->n; i++)
		if (isnan(vh->e[i].m[AS_EM_TRUE_PROCESSING_RATE].average))
			return 1.0;
	/* the baseline: the newest entry at parallelism 1, else the (newest) one of the smallest parallelism */
	double beta = NAN;
	int best_p = INT_MAX;
	for (size_t i = vh->n; i-- > 0;) {
		const struct as_history_entry *e = &vh->e[i];
		double r = e->m[AS_EM_TRUE_PROCESSING_RATE].average;
		if (e->current_parallelism == 1) {
			beta = r;
			break;
		}
		if (e->current_parallelism > 0 && e->current_parallelism < best_p) {
			best_p = e->current_parallelism;
			beta = r / e->current_parallelism;
		}
	}
	if (!(beta > 0) || isinf(beta))
		return 1.0;
	double sum_pr = 0, sum_pp = 0;
	for (size_t i = 0; i < vh->n; i++) {
		double pp = vh->e[i].current_parallelism;
		sum_pr += pp * vh->e[i].m[AS_EM_TRUE_PROCESSING_RATE].average;
		sum_pp += pp * pp;
	}
	double alpha = sum_pr / (beta * sum_pp);
	if (isnan(alpha))
		return 1.0;
	alpha = as_jmax(o->observed_scalability_coefficient_min, as_jmin(1.0, alpha));
	return as_round_up2(alpha);
}

bool as_block_ineffective(const struct as_options *o, const char *vertex, const struct as_eval_metric *m,
                          const struct as_vertex_history *vh, const struct as_emitter *em)
{
	const struct as_history_entry *last = &vh->e[vh->n - 1];
	double last_tpr = last->m[AS_EM_TRUE_PROCESSING_RATE].average;
	double last_expected = last->m[AS_EM_EXPECTED_PROCESSING_RATE].current;
	double expected_increase = last_expected - last_tpr;
	double actual_increase = m[AS_EM_TRUE_PROCESSING_RATE].average - last_tpr;
	if (actual_increase / expected_increase >= o->effectiveness_threshold)
		return false;
	char e[40], a[40];
	as_java_double_str(expected_increase, e, sizeof(e));
	as_java_double_str(actual_increase, a, sizeof(a));
	char *key = xasprintf("ineffective%s%s", vertex, e);
	as_emit(em, AS_EVENT_NORMAL, AS_REASON_INEFFECTIVE_SCALING, key, o->event_interval_ms,
	        "Ineffective scaling detected for %s (expected increase: %s, actual increase %s). Blocking of "
	        "ineffective scaling decisions is %s",
	        vertex, e, a, o->effectiveness_detection ? "enabled" : "disabled");
	free(key);
	return o->effectiveness_detection;
}

static struct as_delayed_vertex *delayed_get(struct as_delayed *d, const char *vertex, int64_t now)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].vertex, vertex))
			return &d->v[i];
	d->v = xrealloc(d->v, (d->n + 1) * sizeof(*d->v));
	struct as_delayed_vertex *v = &d->v[d->n++];
	memset(v, 0, sizeof(*v));
	v->vertex = xstrdup(vertex);
	v->first_trigger_time = now;
	return v;
}

int as_delayed_scale_down(const struct as_options *o, struct as_delayed *d, const char *vertex, int p, int new_p,
                          bool outside, int64_t now, bool *ret_outside)
{
	if (o->scale_down_interval_ms <= 0) {
		*ret_outside = outside;
		return new_p;
	}
	struct as_delayed_vertex *v = delayed_get(d, vertex, now);
	/* a sliding-window maximum: recommendations decrease strictly from front to back */
	while (v->n > 0 && v->r[v->n - 1].parallelism <= new_p)
		v->n--;
	v->r = xrealloc(v->r, (v->n + 1) * sizeof(*v->r));
	v->r[v->n++] = (struct as_recommendation){now, new_p, outside};
	d->updated = true;
	int64_t window_start = now - o->scale_down_interval_ms;
	if (window_start < v->first_trigger_time)
		return -1;
	size_t k = 0;
	while (k < v->n && v->r[k].trigger_time < window_start)
		k++;
	memmove(v->r, v->r + k, (v->n - k) * sizeof(*v->r));
	v->n -= k;
	*ret_outside = v->r[0].outside;
	return v->r[0].parallelism == p ? -1 : v->r[0].parallelism;
}

void as_vertex_target(const struct as_options *o, const struct as_topology *t, size_t i, struct as_evaluation *ev,
                      const struct as_vertex_history *vh, struct as_delayed *delayed, int64_t now, int64_t restart_s,
                      const struct as_emitter *em, struct as_vertex_decision *ret)
{
	const struct as_vertex *v = &t->v[i];
	struct as_eval_metric *m = ev->v[i].m;
	int p = as_java_d2i(m[AS_EM_PARALLELISM].current);
	memset(ret, 0, sizeof(*ret));
	ret->computed = true;
	ret->target = ret->new_p = p;
	double tpr = m[AS_EM_TRUE_PROCESSING_RATE].average;
	if (isnan(tpr))
		return;
	double cap = as_capacity(o, m, o->utilization_target, true, restart_s);
	if (isnan(cap))
		return;
	double f = isinf(tpr) && tpr > 0 ? 0 : cap / tpr;
	if (o->observed_scalability)
		f = f / as_scalability_coefficient(o, vh);
	double lo = 1 - o->scale_down_max_factor, hi = 1 + o->scale_up_max_factor;
	if (!isnan(f))
		f = f < lo ? lo : (f > hi ? hi : f);
	bool has_hash = false;
	for (size_t k = 0; k < v->ninputs; k++)
		if (v->inputs[k].ship == AS_SHIP_HASH)
			has_hash = true;
	int lower = imin(p, o->vertex_min_parallelism), upper = imax(p, o->vertex_max_parallelism);
	int new_p = as_scale_parallelism(o, v->id, p, f, lower, upper, as_java_d2i(m[AS_EM_MAX_PARALLELISM].current),
	                                 as_java_d2i(m[AS_EM_NUM_SOURCE_PARTITIONS].current), has_hash, em);
	ret->target = new_p;
	if (new_p == p) {
		as_delayed_clear_vertex(delayed, v->id);
		return;
	}
	m[AS_EM_EXPECTED_PROCESSING_RATE].current = as_round3(tpr / p * new_p);
	bool outside = as_outside_bounds(m);
	if (new_p > p) {
		as_delayed_clear_vertex(delayed, v->id);
		if (vh && vh->n) {
			const struct as_history_entry *last = &vh->e[vh->n - 1];
			if (p == last->new_parallelism && last->new_parallelism > last->current_parallelism &&
			    as_block_ineffective(o, v->id, m, vh, em))
				return;
		}
		ret->change = true;
		ret->new_p = new_p;
		ret->outside = outside;
		return;
	}
	bool out = outside;
	int q = as_delayed_scale_down(o, delayed, v->id, p, new_p, outside, now, &out);
	if (q < 0)
		return;
	ret->change = true;
	ret->new_p = q;
	ret->outside = out;
}

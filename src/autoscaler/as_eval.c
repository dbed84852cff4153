/* as_eval: evaluation (reference section 2): from the metric window to each vertex's evaluated metrics
 * (target and catch-up data rates through the DAG with the edge output ratios, busy time, the true
 * processing rate from busy time or the observed rate), the processing-capacity formula and the
 * utilization-bound thresholds (2.4), backlog detection (2.2), the global metrics (2.5) and the restart
 * time used (2.6). It is not for deciding anything (as_scale.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

/* Java's Math.max(0, x): NaN stays NaN. */
static double jmax0(double x)
{
	return isnan(x) ? x : (x > 0 ? x : 0);
}

static double seconds(int64_t ms)
{
	return (double)(ms / 1000); /* Duration.toSeconds truncates */
}

int64_t as_restart_seconds(const struct as_options *o, const struct as_tracking *t)
{
	if (o->restart_tracking && t) {
		int64_t max = -1;
		for (size_t i = 0; i < t->n; i++)
			if (t->r[i].restart_ms >= 0 && t->r[i].restart_ms > max)
				max = t->r[i].restart_ms;
		if (max >= 0) {
			int64_t s = max / 1000, limit = o->restart_tracking_limit_ms / 1000;
			return s < limit ? s : limit;
		}
	}
	return o->restart_time_ms / 1000;
}

double as_capacity(const struct as_options *o, const struct as_eval_metric *m, double u, bool with_restart,
                   int64_t restart_s)
{
	double c = m[AS_EM_CATCH_UP_DATA_RATE].current;
	if (isnan(c))
		return NAN;
	u = u < 0 ? 0 : (u > 1 ? 1 : u);
	double tr = m[AS_EM_TARGET_DATA_RATE].average;
	if (isnan(tr))
		return NAN;
	if (u == 0)
		return INFINITY;
	double catch_up = seconds(o->catch_up_ms);
	double r = with_restart && catch_up > 0 ? tr * (double)restart_s / catch_up : 0;
	return (double)as_jround(c + r + tr / u);
}

void as_thresholds(const struct as_options *o, struct as_eval_metric *m, bool backlog, int64_t restart_s)
{
	double upper, lower;
	if (backlog) {
		upper = 1.0;
		lower = 0.0;
	} else {
		upper =
		    isnan(o->utilization_max) ? o->utilization_target + o->utilization_boundary : o->utilization_max;
		lower =
		    isnan(o->utilization_min) ? o->utilization_target - o->utilization_boundary : o->utilization_min;
	}
	m[AS_EM_SCALE_UP_RATE_THRESHOLD].current = as_round3(as_capacity(o, m, upper, false, restart_s));
	m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current = as_round3(as_capacity(o, m, lower, true, restart_s));
}

bool as_outside_bounds(const struct as_eval_metric *m)
{
	double tpr = m[AS_EM_TRUE_PROCESSING_RATE].average;
	return tpr < m[AS_EM_SCALE_UP_RATE_THRESHOLD].current || tpr > m[AS_EM_SCALE_DOWN_RATE_THRESHOLD].current;
}

static double latest_lag(const struct as_wstat *w)
{
	double lag = w[AS_VM_LAG].latest;
	return isnan(lag) ? 0 : lag;
}

/* The window's rate of metric m of vertex i. */
static double rate(const struct as_window *w, size_t i, int m)
{
	return as_wstat_rate(&w->v[i][m]);
}

static bool processing_backlog(const struct as_options *o, const struct as_topology *t, const struct as_window *w)
{
	double threshold = seconds(o->backlog_lag_threshold_ms);
	for (size_t i = 0; i < t->n; i++) {
		if (!as_is_source(&t->v[i]))
			continue;
		double lag_seconds = latest_lag(w->v[i]) / rate(w, i, AS_VM_NUM_RECORDS_IN);
		if (lag_seconds > threshold)
			return true;
	}
	return false;
}

bool as_processing_backlog(const struct as_options *o, const struct as_topology *t, const struct as_samples *h)
{
	struct as_window w;
	as_window_build(t, h, &w);
	bool backlog = processing_backlog(o, t, &w);
	as_window_free(&w);
	return backlog;
}

/* ratio(u -> v): records v receives from u per record u takes in (2.3). The edge rate e: v's records-in
 * rate when u is v's only input; else, when every other input of v has exactly one output, v's records-in
 * rate minus the sum of the other inputs' records-out rates, subtracted at once (a NaN rate of v, with
 * fewer than two samples, makes the ratio 0, as in the operator); else (or when one of those rates is
 * NaN) u's own records-out rate. */
static double edge_ratio(const struct as_topology *t, const struct as_window *win, size_t u, size_t v)
{
	double in_u = rate(win, u, AS_VM_NUM_RECORDS_IN);
	if (!(in_u > 0))
		return 0;
	const struct as_vertex *vv = &t->v[v];
	double e;
	if (vv->ninputs == 1) {
		e = rate(win, v, AS_VM_NUM_RECORDS_IN);
	} else {
		double others = 0;
		for (size_t k = 0; k < vv->ninputs && !isnan(others); k++) {
			size_t w = vv->inputs[k].from;
			if (w == u)
				continue;
			others = t->v[w].noutputs == 1 ? others + rate(win, w, AS_VM_NUM_RECORDS_OUT) : NAN;
		}
		e = isnan(others) ? rate(win, u, AS_VM_NUM_RECORDS_OUT) : rate(win, v, AS_VM_NUM_RECORDS_IN) - others;
	}
	return e > 0 ? e / in_u : 0;
}

static void set_current(struct as_eval_metric *m, int k, double x)
{
	m[k].current = as_round3(x);
}

static void set_average(struct as_eval_metric *m, int k, double x)
{
	m[k].average = as_round3(x);
}

static int evaluate_vertex(const struct as_options *o, const struct as_topology *t, const struct as_window *win,
                           struct as_evaluation *ev, size_t i, int64_t restart_s, char **ret_error)
{
	const struct as_vertex *v = &t->v[i];
	const struct as_wstat *w = win->v[i];
	struct as_eval_metric *m = ev->v[i].m;
	for (int k = 0; k < AS_EM_COUNT; k++)
		m[k].current = m[k].average = NAN;

	/* target and catch-up data rates */
	double catch_up = seconds(o->catch_up_ms);
	if (as_is_source(v)) {
		double in_rate = as_wstat_rate(&w[AS_VM_NUM_RECORDS_IN]);
		double lag_rate = as_wstat_rate(&w[AS_VM_LAG]);
		double target = jmax0(in_rate + lag_rate);
		if (isnan(target)) {
			if (ret_error)
				*ret_error = xasprintf(
				    "Cannot evaluate metrics without ingestion rate information (vertex %s)", v->id);
			return -EINVAL;
		}
		set_average(m, AS_EM_TARGET_DATA_RATE, target);
		double lag = latest_lag(w);
		set_current(m, AS_EM_CATCH_UP_DATA_RATE, catch_up == 0 ? 0 : lag / catch_up);
		set_current(m, AS_EM_LAG, w[AS_VM_LAG].latest);
	} else {
		double target = 0, catch_up_rate = 0;
		for (size_t k = 0; k < v->ninputs; k++) {
			size_t u = v->inputs[k].from;
			double r = edge_ratio(t, win, u, i);
			target += ev->v[u].m[AS_EM_TARGET_DATA_RATE].average * r;
			catch_up_rate += ev->v[u].m[AS_EM_CATCH_UP_DATA_RATE].current * r;
		}
		set_average(m, AS_EM_TARGET_DATA_RATE, target);
		set_current(m, AS_EM_CATCH_UP_DATA_RATE, catch_up_rate);
	}

	/* busy time, ms per second */
	double busy;
	if (o->busy_agg == AS_BUSY_AVG)
		busy = as_wstat_rate(&w[AS_VM_ACCUMULATED_BUSY_TIME]) / v->parallelism;
	else
		busy = as_wstat_avg(&w[AS_VM_LOAD], 1) * 1000;
	set_average(m, AS_EM_LOAD, busy / 1000);

	/* true processing rate */
	double tpr_in = o->busy_agg == AS_BUSY_AVG
	                    ? as_wstat_rate(&w[AS_VM_NUM_RECORDS_IN])
	                    : as_wstat_avg_or_rate(&w[AS_VM_NUM_RECORDS_IN_PER_SECOND], &w[AS_VM_NUM_RECORDS_IN]);
	double busy_tpr = tpr_in == 0 ? INFINITY : tpr_in / (busy / 1000);
	double observed = as_wstat_avg(&w[AS_VM_OBSERVED_TPR], o->observed_tpr_min_observations);
	double tpr;
	if (isnan(observed))
		tpr = busy_tpr;
	else if (isinf(busy_tpr) || isnan(busy_tpr))
		tpr = observed;
	else if (busy_tpr > observed * (1 + o->observed_tpr_switch_threshold))
		tpr = observed;
	else
		tpr = busy_tpr;
	set_average(m, AS_EM_TRUE_PROCESSING_RATE, tpr);

	set_current(m, AS_EM_PARALLELISM, v->parallelism);
	set_current(m, AS_EM_RECOMMENDED_PARALLELISM, v->parallelism);
	set_current(m, AS_EM_MAX_PARALLELISM, v->max_parallelism);
	set_current(m, AS_EM_NUM_SOURCE_PARTITIONS, v->num_source_partitions);
	as_thresholds(o, m, ev->backlog, restart_s);
	return 0;
}

int as_evaluate(const struct as_options *o, const struct as_topology *t, const struct as_samples *h, int64_t restart_s,
                struct as_evaluation *ret, char **ret_error)
{
	memset(ret, 0, sizeof(*ret));
	ret->n = t->n;
	ret->v = xcalloc(t->n ? t->n : 1, sizeof(*ret->v));
	struct as_window w;
	as_window_build(t, h, &w);
	ret->backlog = processing_backlog(o, t, &w);
	for (size_t k = 0; k < t->n; k++)
		if (evaluate_vertex(o, t, &w, ret, t->order[k], restart_s, ret_error) < 0) {
			as_evaluation_free(ret);
			as_window_free(&w);
			return -EINVAL;
		}
	for (int k = 0; k < AS_EG_COUNT; k++)
		ret->g[k].current = ret->g[k].average = NAN;
	ret->g[AS_EG_GC_PRESSURE].current = as_round3(w.g[AS_GM_GC_PRESSURE].latest);
	ret->g[AS_EG_NUM_TASK_SLOTS_USED].current = as_round3(w.g[AS_GM_NUM_TASK_SLOTS_USED].latest);
	static const int both[][2] = {
	    {AS_EG_HEAP_MAX_USAGE_RATIO, AS_GM_HEAP_MAX_USAGE_RATIO},
	    {AS_EG_HEAP_MEMORY_USED, AS_GM_HEAP_MEMORY_USED},
	    {AS_EG_MANAGED_MEMORY_USED, AS_GM_MANAGED_MEMORY_USED},
	    {AS_EG_METASPACE_MEMORY_USED, AS_GM_METASPACE_MEMORY_USED},
	};
	for (size_t k = 0; k < sizeof(both) / sizeof(both[0]); k++) {
		ret->g[both[k][0]].current = as_round3(w.g[both[k][1]].latest);
		ret->g[both[k][0]].average = as_round3(as_wstat_avg(&w.g[both[k][1]], 1));
	}
	as_window_free(&w);
	return 0;
}

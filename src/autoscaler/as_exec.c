/* as_exec: the job-level scaling decision (reference 3.1): the memory-pressure gate, the per-vertex
 * targets of every vertex not excluded, "nothing moves unless some vertex is outside its utilization
 * bound", metrics-only mode and excluded periods, the quota gate, the ScalingReport, and clearing the
 * delayed scale-downs after a rescale. It is not for the per-vertex rules (as_scale.c) or for storing
 * the decision (as_autoscaler.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

static bool excluded_by_config(const struct as_options *o, const char *vertex)
{
	for (size_t i = 0; i < o->exclude_ids.n; i++)
		if (!strcmp(o->exclude_ids.v[i], vertex))
			return true;
	return false;
}

/* 3.1 step 7, quota: true when the rescale would need more TaskManagers than the quota allows. */
static bool over_quota(const struct as_exec *x)
{
	const struct as_options *o = x->o;
	const struct as_topology *t = x->t;
	if ((isnan(o->quota_cpu) && o->quota_memory == 0) || x->slots_per_tm <= 0)
		return false;
	for (size_t i = 0; i < t->n; i++)
		if (!t->v[i].slot_sharing_group)
			return false; /* the topology does not know its slot sharing groups */
	int64_t cur_sum = 0, new_sum = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (!x->d[i].in_summary)
			continue;
		bool first = true;
		for (size_t k = 0; k < i; k++)
			if (x->d[k].in_summary && !strcmp(t->v[k].slot_sharing_group, t->v[i].slot_sharing_group))
				first = false;
		if (!first)
			continue;
		int cur_max = 0, new_max = 0;
		for (size_t k = i; k < t->n; k++) {
			if (!x->d[k].in_summary || strcmp(t->v[k].slot_sharing_group, t->v[i].slot_sharing_group))
				continue;
			cur_max = t->v[k].parallelism > cur_max ? t->v[k].parallelism : cur_max;
			new_max = x->d[k].new_p > new_max ? x->d[k].new_p : new_max;
		}
		cur_sum += cur_max;
		new_sum += new_max;
	}
	int64_t cur_tms = cur_sum / x->slots_per_tm, new_tms = new_sum / x->slots_per_tm;
	if (new_tms <= cur_tms)
		return false;
	bool cpu = !isnan(o->quota_cpu) && x->tm_cpu * (double)new_tms > o->quota_cpu;
	bool mem = o->quota_memory > 0 && (double)x->tm_memory * (double)new_tms > (double)o->quota_memory;
	if (!cpu && !mem)
		return false;
	as_emit(x->em, AS_EVENT_WARNING, AS_REASON_RESOURCE_QUOTA, NULL, o->event_interval_ms,
	        "Scaling would need %lld TaskManagers (%g CPU, %llu bytes of memory each), more than the quota allows "
	        "(%s%g CPU, %llu bytes); the scaling is not executed",
	        (long long)new_tms, x->tm_cpu, (unsigned long long)x->tm_memory,
	        isnan(o->quota_cpu) ? "no limit on " : "", isnan(o->quota_cpu) ? 0.0 : o->quota_cpu,
	        (unsigned long long)o->quota_memory);
	return true;
}

void as_execute(struct as_exec *x)
{
	const struct as_options *o = x->o;
	const struct as_topology *t = x->t;
	x->d = xcalloc(t->n ? t->n : 1, sizeof(*x->d));
	x->scaled = x->proposed = false;
	x->blocked_by = NULL;
	for (size_t i = 0; i < t->n; i++)
		x->d[i].target = x->d[i].new_p = t->v[i].parallelism;

	/* 1. memory pressure */
	double gc = x->ev->g[AS_EG_GC_PRESSURE].current, heap = x->ev->g[AS_EG_HEAP_MAX_USAGE_RATIO].average;
	if (gc > o->gc_pressure_threshold) {
		as_emit(x->em, AS_EVENT_NORMAL, AS_REASON_MEMORY_PRESSURE, "gcPressure", o->event_interval_ms,
		        "GC pressure %.3f is above the threshold %.3f: scaling is paused", gc,
		        o->gc_pressure_threshold);
		x->blocked_by = "memory pressure (GC)";
		return;
	}
	if (heap > o->heap_usage_threshold) {
		as_emit(x->em, AS_EVENT_NORMAL, AS_REASON_MEMORY_PRESSURE, "heapUsage", o->event_interval_ms,
		        "Heap usage %.3f is above the threshold %.3f: scaling is paused", heap,
		        o->heap_usage_threshold);
		x->blocked_by = "memory pressure (heap)";
		return;
	}

	/* 2. every vertex not excluded; 3. nothing moves unless one change is outside its bounds */
	bool any = false, any_outside = false;
	for (size_t k = 0; k < t->n; k++) {
		size_t i = t->order[k];
		if ((x->excluded && x->excluded[i]) || excluded_by_config(o, t->v[i].id))
			continue;
		const struct as_vertex_history *vh = x->history ? as_scaling_history_get(x->history, t->v[i].id) : NULL;
		as_vertex_target(o, t, i, x->ev, vh, x->delayed, x->now, x->restart_s, x->em, &x->d[i]);
		if (x->d[i].change) {
			x->d[i].in_summary = true;
			any = true;
			any_outside |= x->d[i].outside;
		}
	}
	if (!any || !any_outside) {
		for (size_t i = 0; i < t->n; i++)
			x->d[i].in_summary = false;
		return;
	}
	for (size_t i = 0; i < t->n; i++)
		if (x->d[i].in_summary)
			x->ev->v[i].m[AS_EM_RECOMMENDED_PARALLELISM].current = x->d[i].new_p;

	/* 5. metrics-only mode and excluded periods */
	const char *disabled = !o->scaling_enabled                ? "job.autoscaler.scaling.enabled: false"
	                       : as_in_excluded_period(o, x->now) ? "job.autoscaler.excluded.periods"
	                                                          : NULL;
	if (disabled) {
		char *msg = as_scaling_report(t, x->ev, x->d, false, disabled);
		/* dedupe on the recommendation itself, so a different recommendation is reported at once */
		struct strbuf key = {0};
		strbuf_append(&key, "ScalingExecutor");
		for (size_t i = 0; i < t->n; i++)
			if (x->d[i].in_summary)
				strbuf_appendf(&key, ",%s:%d->%d", t->v[i].id, t->v[i].parallelism, x->d[i].new_p);
		as_emit(x->em, AS_EVENT_NORMAL, AS_REASON_SCALING_REPORT, key.buf, o->event_interval_ms, "%s", msg);
		strbuf_free(&key);
		free(msg);
		x->blocked_by = o->scaling_enabled ? "excluded period" : "scaling disabled";
		return;
	}

	/* 7. resource gates (the cluster-capacity check needs TaskManager CPU, which standalone lacks) */
	if (over_quota(x)) {
		x->blocked_by = "resource quota";
		return;
	}

	/* the scaling hook's turn (as the operator's custom executors: after the gates, before the report) */
	if (x->review) {
		x->proposed = true;
		return;
	}
	as_exec_commit(x);
}

void as_exec_commit(struct as_exec *x)
{
	/* 9. the report; 14. every delayed scale-down is cleared */
	char *msg = as_scaling_report(x->t, x->ev, x->d, true, NULL);
	as_emit(x->em, AS_EVENT_NORMAL, AS_REASON_SCALING_REPORT, "ScalingExecutor", -1, "%s", msg);
	free(msg);
	as_delayed_clear_all(x->delayed);
	x->scaled = true;
}

void as_exec_free(struct as_exec *x)
{
	free(x->d);
	x->d = NULL;
}

/* as_autoscaler: the job autoscaler of FLIP-334 (reference 0.2 and 1.6): scale() runs one cycle for one
 * job (the enabled switch, the status check, the metric window with stabilization and restart detection,
 * restart-time tracking, evaluation, execution, storing the decision, one flush) and, always, re-applies
 * the stored parallelism overrides through the realizer; cleanup() forgets a job. It owns the per-job
 * records, loads their state from the store once, writes it through, and routes events (deduplicated)
 * to the event handler. It is not for the formulas (as_eval.c, as_scale.c, as_exec.c) or for parsing
 * REST responses (as_metrics.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

struct autoscaler {
	struct as_realizer realizer;
	struct as_event_handler events;
	struct as_state_store store;
	struct as_job **jobs;
	size_t njobs;
};

struct autoscaler *autoscaler_new(const struct as_realizer *realizer, const struct as_event_handler *events,
                                  struct as_state_store store)
{
	struct autoscaler *as = xcalloc(1, sizeof(*as));
	if (realizer)
		as->realizer = *realizer;
	if (events)
		as->events = *events;
	as->store = store;
	return as;
}

static void job_clear_state(struct as_job *j)
{
	as_samples_free(&j->history);
	as_scaling_history_free(&j->scaling_history);
	as_tracking_free(&j->tracking);
	as_pmap_free(&j->overrides);
	as_delayed_free(&j->delayed);
	j->delayed.updated = false;
}

static void job_drop_eval(struct as_job *j)
{
	as_evaluation_free(&j->last_eval);
	as_topology_free(&j->last_topo);
	j->have_eval = false;
}

static void job_free(struct as_job *j)
{
	job_clear_state(j);
	as_job_reset_collector(j);
	as_snapshot_free(&j->snap);
	job_drop_eval(j);
	as_dedupe_free(&j->dedupe);
	strv_free(&j->cycle_excluded);
	as_proposal_free(j->proposal);
	free(j->key);
	free(j);
}

void autoscaler_free(struct autoscaler *as)
{
	if (!as)
		return;
	for (size_t i = 0; i < as->njobs; i++)
		job_free(as->jobs[i]);
	free(as->jobs);
	if (as->store.ops && as->store.ops->free)
		as->store.ops->free(as->store.impl);
	free(as);
}

/* ---- events ---- */

struct core_emit {
	struct autoscaler *as;
	struct as_job *job;
	int64_t now;
};

static void core_emit(void *ud, enum as_event_type type, const char *reason, const char *message,
                      const char *message_key, int64_t interval_ms)
{
	struct core_emit *ce = ud;
	if (!as_dedupe_admit(&ce->job->dedupe, reason, message_key ? message_key : message, interval_ms, ce->now))
		return;
	if (ce->as->events.handle)
		ce->as->events.handle(ce->as->events.userdata, ce->job->key, type, reason, message, message_key,
		                      interval_ms);
}

/* ---- state: load once, write through ---- */

static void save(struct autoscaler *as, struct as_job *j, enum as_state_kind kind)
{
	cJSON *v = NULL;
	switch (kind) {
	case AS_STATE_COLLECTED_METRICS:
		v = as_samples_to_json(&j->history);
		break;
	case AS_STATE_SCALING_HISTORY:
		v = as_scaling_history_to_json(&j->scaling_history);
		break;
	case AS_STATE_SCALING_TRACKING:
		v = as_tracking_to_json(&j->tracking);
		break;
	case AS_STATE_PARALLELISM_OVERRIDES:
		v = as_pmap_to_json(&j->overrides);
		break;
	case AS_STATE_DELAYED_SCALE_DOWN:
		v = as_delayed_to_json(&j->delayed);
		break;
	case AS_STATE_KIND_COUNT:
		break;
	}
	as->store.ops->put(as->store.impl, j->key, kind, v);
}

static int decode(struct as_job *j, enum as_state_kind kind, const cJSON *v, char **err)
{
	switch (kind) {
	case AS_STATE_COLLECTED_METRICS:
		return as_samples_from_json(v, &j->history, err);
	case AS_STATE_SCALING_HISTORY:
		return as_scaling_history_from_json(v, &j->scaling_history, err);
	case AS_STATE_SCALING_TRACKING:
		return as_tracking_from_json(v, &j->tracking, err);
	case AS_STATE_PARALLELISM_OVERRIDES:
		return as_pmap_from_json(v, &j->overrides, err);
	case AS_STATE_DELAYED_SCALE_DOWN:
		return as_delayed_from_json(v, &j->delayed, err);
	case AS_STATE_KIND_COUNT:
		break;
	}
	return -EINVAL;
}

static void load_state(struct autoscaler *as, struct as_job *j)
{
	struct core_emit ce = {as, j, 0};
	struct as_emitter em = {core_emit, &ce};
	for (int k = 0; k < AS_STATE_KIND_COUNT; k++) {
		cJSON *v = NULL;
		char *err = NULL;
		int r = as->store.ops->get(as->store.impl, j->key, (enum as_state_kind)k, &v, &err);
		if (r < 0) {
			as_emit(&em, AS_EVENT_WARNING, AS_REASON_ERROR, NULL, -1,
			        "Discarded the unreadable autoscaler state of job %s (%s); starting from empty state",
			        j->key, err ? err : strerror(-r));
			free(err);
			continue;
		}
		if (v && decode(j, (enum as_state_kind)k, v, &err) < 0) {
			as_emit(&em, AS_EVENT_WARNING, AS_REASON_ERROR, NULL, -1,
			        "Discarded the stored %s of job %s (%s); starting from empty %s", as_state_kind_name(k),
			        j->key, err ? err : "invalid", as_state_kind_name(k));
			as->store.ops->remove(as->store.impl, j->key, (enum as_state_kind)k);
		}
		free(err);
		cJSON_Delete(v);
	}
	j->loaded = true;
}

struct as_job *autoscaler_job(struct autoscaler *as, const char *job_key)
{
	for (size_t i = 0; i < as->njobs; i++)
		if (!strcmp(as->jobs[i]->key, job_key))
			return as->jobs[i];
	struct as_job *j = xcalloc(1, sizeof(*j));
	j->key = xstrdup(job_key);
	j->tm_gc = -1;
	as->jobs = xrealloc(as->jobs, (as->njobs + 1) * sizeof(*as->jobs));
	as->jobs[as->njobs++] = j;
	load_state(as, j);
	return j;
}

static void flush(struct autoscaler *as, struct as_job *j, const struct as_emitter *em)
{
	char *err = NULL;
	int r = as->store.ops->flush(as->store.impl, j->key, &err);
	if (r < 0)
		as_emit(em, AS_EVENT_WARNING, AS_REASON_ERROR, NULL, -1, "Cannot store the autoscaler state: %s",
		        err ? err : strerror(-r));
	free(err);
}

static void clear_all(struct autoscaler *as, struct as_job *j, const struct as_emitter *em)
{
	job_clear_state(j);
	job_drop_eval(j);
	as->store.ops->clear_all(as->store.impl, j->key);
	flush(as, j, em);
}

/* ---- one cycle ---- */

static enum as_outcome fail(struct as_job *j, const struct as_emitter *em, const char *msg)
{
	j->errors++;
	as_emit(em, AS_EVENT_WARNING, AS_REASON_ERROR, NULL, -1, "%s", msg);
	return AS_OUTCOME_ERROR;
}

/* 1.6 step 7: the restart duration of the latest rescale, once every vertex it scaled runs at its target. */
static void track_restart(struct autoscaler *as, struct as_job *j, const struct as_topology *t, int64_t running_ts)
{
	if (j->tracking.n == 0)
		return;
	struct as_tracking_record *r = &j->tracking.r[j->tracking.n - 1];
	if (r->restart_ms >= 0)
		return;
	for (size_t i = 0; i < j->scaling_history.n; i++) {
		const struct as_vertex_history *vh = &j->scaling_history.v[i];
		for (size_t k = 0; k < vh->n; k++) {
			if (vh->e[k].ts != r->ts)
				continue;
			int idx = as_topology_find(t, vh->vertex);
			if (idx < 0 || t->v[idx].parallelism != vh->e[k].new_parallelism)
				return;
		}
	}
	if (running_ts < r->ts)
		return; /* not restarted since the rescale */
	r->restart_ms = running_ts - r->ts;
	save(as, j, AS_STATE_SCALING_TRACKING);
}

static void prune_history(struct autoscaler *as, struct as_job *j, const struct as_topology *t, int64_t now,
                          const struct as_options *o)
{
	size_t before = 0, after = 0;
	for (size_t i = 0; i < j->scaling_history.n; i++)
		before += j->scaling_history.v[i].n;
	for (size_t i = 0; i < j->scaling_history.n; i++)
		if (as_topology_find(t, j->scaling_history.v[i].vertex) < 0)
			j->scaling_history.v[i].n = 0; /* the vertex is gone: trimmed away below */
	as_scaling_history_trim(&j->scaling_history, now, o->history_max_age_ms, o->history_max_count);
	for (size_t i = 0; i < j->scaling_history.n; i++)
		after += j->scaling_history.v[i].n;
	if (after != before)
		save(as, j, AS_STATE_SCALING_HISTORY);
	size_t tracked = j->tracking.n;
	as_tracking_trim(&j->tracking, now, o->history_max_age_ms, o->history_max_count);
	if (tracked != j->tracking.n)
		save(as, j, AS_STATE_SCALING_TRACKING);
}

static void keep_eval(struct as_job *j, const struct as_topology *t, struct as_evaluation *ev)
{
	job_drop_eval(j);
	j->last_eval = *ev;
	memset(ev, 0, sizeof(*ev));
	/* a copy of the vertex ids and parallelisms, for the report */
	j->last_topo.n = t->n;
	j->last_topo.v = xcalloc(t->n ? t->n : 1, sizeof(*j->last_topo.v));
	j->last_topo.order = xcalloc(t->n ? t->n : 1, sizeof(size_t));
	for (size_t i = 0; i < t->n; i++) {
		j->last_topo.v[i].id = xstrdup(t->v[i].id);
		j->last_topo.v[i].parallelism = t->v[i].parallelism;
		j->last_topo.order[i] = t->order[i];
	}
	j->have_eval = true;
}

static enum as_outcome cycle_with_topology(struct autoscaler *as, struct as_job *j, const struct as_context *ctx,
                                           const struct as_emitter *em, const struct as_topology *t, bool *excluded);

/* An executed rescale stored (3.1 steps 10-13): the scaling history of the vertices that move, the overrides of
 * every vertex, a restart-time record. */
static void store_scaling(struct autoscaler *as, struct as_job *j, const struct as_topology *t,
                          const struct as_evaluation *ev, const struct as_vertex_decision *d, int64_t now)
{
	as_pmap_free(&j->overrides);
	for (size_t i = 0; i < t->n; i++) {
		if (d[i].in_summary) {
			struct as_history_entry e = {now, t->v[i].parallelism, d[i].new_p, {{0, 0}}};
			memcpy(e.m, ev->v[i].m, sizeof(e.m));
			as_scaling_history_add(&j->scaling_history, t->v[i].id, &e);
		}
		as_pmap_set(&j->overrides, t->v[i].id, d[i].in_summary ? d[i].new_p : t->v[i].parallelism);
	}
	j->tracking.r = xrealloc(j->tracking.r, (j->tracking.n + 1) * sizeof(*j->tracking.r));
	j->tracking.r[j->tracking.n++] = (struct as_tracking_record){now, -1};
	save(as, j, AS_STATE_SCALING_HISTORY);
	save(as, j, AS_STATE_SCALING_TRACKING);
	save(as, j, AS_STATE_PARALLELISM_OVERRIDES);
	j->scalings++;
}

static enum as_outcome run_cycle(struct autoscaler *as, struct as_job *j, const struct as_context *ctx,
                                 const struct as_emitter *em)
{
	struct as_snapshot *snap = &j->snap;
	if (!j->snap_fed)
		return AS_OUTCOME_NOT_READY; /* nothing was collected this cycle */
	if (snap->error)
		return fail(j, em, snap->error);
	if (!snap->have_topology)
		return AS_OUTCOME_NOT_READY;
	const struct as_topology *t = &snap->topo;
	/* 1.2: finished vertices are excluded for this cycle */
	bool *excluded = xcalloc(t->n ? t->n : 1, sizeof(bool));
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].finished) {
			excluded[i] = true;
			strv_push(&j->cycle_excluded, t->v[i].id);
		}
	enum as_outcome out = cycle_with_topology(as, j, ctx, em, t, excluded);
	free(excluded);
	return out;
}

static enum as_outcome cycle_with_topology(struct autoscaler *as, struct as_job *j, const struct as_context *ctx,
                                           const struct as_emitter *em, const struct as_topology *t, bool *excluded)
{
	const struct as_options *o = ctx->options;
	const int64_t now = ctx->now_ms;
	struct as_snapshot *snap = &j->snap;

	/* 1.6: restart detection, stabilization, the window */
	if (j->history.n && snap->running_ts > j->history.s[0].ts) {
		as_samples_free(&j->history);
		as->store.ops->remove(as->store.impl, j->key, AS_STATE_COLLECTED_METRICS);
		job_drop_eval(j);
	}
	int64_t stable_time = snap->running_ts + o->stabilization_ms;
	bool stabilizing = now < stable_time;
	int64_t window_full = now + o->metrics_window_ms;
	for (size_t i = 0; i < j->history.n; i++)
		if (j->history.s[i].ts >= stable_time) {
			window_full = j->history.s[i].ts + o->metrics_window_ms;
			break;
		}
	struct as_sample s;
	char *err = NULL;
	if (as_snapshot_to_sample(o, snap, &j->history, now, &s, &err) < 0) {
		enum as_outcome out = stabilizing ? AS_OUTCOME_NOT_READY : fail(j, em, err);
		free(err);
		return out;
	}
	/* 1.4: so are vertices without busy time now (the sample lists the topology's vertices in its order) */
	for (size_t i = 0; i < t->n; i++) {
		const double *m =
		    i < s.n && !strcmp(s.v[i].id, t->v[i].id) ? s.v[i].m : as_sample_vertex_get(&s, t->v[i].id);
		if (!excluded[i] && (!m || !isfinite(m[AS_VM_LOAD]))) {
			excluded[i] = true;
			strv_push(&j->cycle_excluded, t->v[i].id);
		}
	}
	as_samples_put(&j->history, &s);
	bool full = now >= window_full;
	if (full)
		as_samples_drop_before(&j->history, now - o->metrics_window_ms);
	save(as, j, AS_STATE_COLLECTED_METRICS);
	prune_history(as, j, t, now, o);
	track_restart(as, j, t, snap->running_ts);
	if (j->history.n < 2)
		return AS_OUTCOME_NOT_READY;

	/* section 2 */
	int64_t restart_s = as_restart_seconds(o, &j->tracking);
	struct as_evaluation ev;
	if (as_evaluate(o, t, &j->history, restart_s, &ev, &err) < 0) {
		enum as_outcome out = fail(j, em, err);
		free(err);
		return out;
	}
	if (!full) {
		for (size_t i = 0; i < ev.n; i++)
			ev.v[i].m[AS_EM_RECOMMENDED_PARALLELISM].current = NAN;
		keep_eval(j, t, &ev);
		return AS_OUTCOME_COLLECTING;
	}

	/* section 3, without the vertices excluded this cycle */
	struct as_exec x = {
	    .o = o,
	    .t = t,
	    .ev = &ev,
	    .history = &j->scaling_history,
	    .delayed = &j->delayed,
	    .excluded = excluded,
	    .now = now,
	    .restart_s = restart_s,
	    .tm_cpu = ctx->tm_cpu,
	    .tm_memory = ctx->tm_memory,
	    .slots_per_tm = ctx->slots_per_tm,
	    .em = em,
	};
	x.review = ctx->hook;
	as_execute(&x);
	enum as_outcome out;
	if (x.proposed) {
		j->proposal = as_proposal_take(&x); /* executed or not when the hook has answered */
		out = AS_OUTCOME_PROPOSED;
	} else if (x.scaled) {
		store_scaling(as, j, t, &ev, x.d, now);
		out = AS_OUTCOME_SCALED;
	} else {
		j->balanced++;
		out = AS_OUTCOME_BALANCED;
	}
	if (j->delayed.updated) {
		save(as, j, AS_STATE_DELAYED_SCALE_DOWN);
		j->delayed.updated = false;
	}
	as_exec_free(&x);
	keep_eval(j, t, &ev);
	return out;
}

/* 0.2 step 6: the stored overrides merged with the user's. For a vertex excluded from scaling
 * (vertex.exclude.ids, or for the job's latest cycle) the user's own override wins, as in the operator, whose
 * collector adds a cycle's exclusions to the configuration the overrides are then merged with. */
static void merge_overrides(const struct as_job *j, const struct as_options *o, const struct as_pmap *user,
                            struct as_pmap *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (j->overrides.n == 0)
		return;
	for (size_t i = 0; user && i < user->n; i++)
		as_pmap_set(ret, user->e[i].vertex, user->e[i].parallelism);
	for (size_t i = 0; i < j->overrides.n; i++) {
		const struct as_pmap_entry *e = &j->overrides.e[i];
		bool excluded = false;
		for (size_t k = 0; k < o->exclude_ids.n; k++)
			excluded |= !strcmp(o->exclude_ids.v[k], e->vertex);
		for (size_t k = 0; k < j->cycle_excluded.n; k++)
			excluded |= !strcmp(j->cycle_excluded.v[k], e->vertex);
		if (!excluded || as_pmap_get(ret, e->vertex) < 0)
			as_pmap_set(ret, e->vertex, e->parallelism);
	}
}

/* ... applied through the realizer (on every cycle). */
static void realize(struct autoscaler *as, struct as_job *j, const struct as_context *ctx, const struct as_emitter *em)
{
	if (j->overrides.n == 0 || !as->realizer.realize)
		return;
	struct as_pmap merged;
	merge_overrides(j, ctx->options, ctx->user_overrides, &merged);
	int r = as->realizer.realize(as->realizer.userdata, j->key, &merged);
	if (r < 0)
		as_emit(em, AS_EVENT_WARNING, AS_REASON_ERROR, NULL, -1, "Cannot apply the parallelism overrides: %s",
		        strerror(-r));
	as_pmap_free(&merged);
}

void autoscaler_launch_overrides(struct autoscaler *as, const char *job_key, const struct as_options *o,
                                 const struct as_pmap *user, struct as_pmap *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (o->enabled)
		merge_overrides(autoscaler_job(as, job_key), o, user, ret);
}

enum as_outcome autoscaler_scale(struct autoscaler *as, const struct as_context *ctx)
{
	struct as_job *j = autoscaler_job(as, ctx->job_key);
	struct core_emit ce = {as, j, ctx->now_ms};
	struct as_emitter em = {core_emit, &ce};
	enum as_outcome out;
	as_proposal_free(j->proposal); /* one the caller never had answered: this cycle decides afresh */
	j->proposal = NULL;
	strv_free(&j->cycle_excluded);
	if (!ctx->options->enabled) {
		clear_all(as, j, &em);
		out = AS_OUTCOME_DISABLED;
	} else if (!ctx->job_status || strcmp(ctx->job_status, "RUNNING")) {
		job_drop_eval(j);
		out = AS_OUTCOME_NOT_RUNNING;
	} else {
		out = run_cycle(as, j, ctx, &em);
		flush(as, j, &em);
	}
	realize(as, j, ctx, &em);
	as_snapshot_free(&j->snap);
	j->snap_fed = false;
	return out;
}

/* ---- the scaling hook's answer ---- */

char *autoscaler_proposal_json(struct autoscaler *as, const char *job_key, const struct as_options *o,
                               int64_t timeout_ms)
{
	struct as_job *j = autoscaler_job(as, job_key);
	if (!j->proposal)
		return NULL;
	struct as_exec x;
	as_proposal_exec(j->proposal, o, &j->delayed, NULL, &x);
	return as_hook_proposal(&x, job_key, timeout_ms);
}

enum as_outcome autoscaler_hook_done(struct autoscaler *as, const struct as_context *ctx,
                                     const struct as_hook_result *r)
{
	struct as_job *j = autoscaler_job(as, ctx->job_key);
	struct as_proposal *p = j->proposal;
	if (!p)
		return AS_OUTCOME_NOT_READY;
	j->proposal = NULL;
	struct core_emit ce = {as, j, ctx->now_ms};
	struct as_emitter em = {core_emit, &ce};
	struct as_exec x;
	as_proposal_exec(p, ctx->options, &j->delayed, &em, &x);
	enum as_hook_verdict v = as_hook_review(&x, r, NULL);
	enum as_outcome out = AS_OUTCOME_BALANCED;
	if (v == AS_HOOK_APPLIED || v == AS_HOOK_ADJUSTED) {
		as_exec_commit(&x);
		store_scaling(as, j, &p->t, &p->ev, p->d, p->now);
		out = AS_OUTCOME_SCALED;
		/* what the status page and GET /metrics show follows an adjustment */
		for (size_t i = 0; j->have_eval && j->last_eval.n == p->ev.n && i < p->ev.n; i++) {
			j->last_eval.v[i].m[AS_EM_RECOMMENDED_PARALLELISM] =
			    p->ev.v[i].m[AS_EM_RECOMMENDED_PARALLELISM];
			j->last_eval.v[i].m[AS_EM_EXPECTED_PROCESSING_RATE] =
			    p->ev.v[i].m[AS_EM_EXPECTED_PROCESSING_RATE];
		}
	} else {
		j->balanced++;
	}
	if (j->delayed.updated) {
		save(as, j, AS_STATE_DELAYED_SCALE_DOWN);
		j->delayed.updated = false;
	}
	as_proposal_free(p);
	flush(as, j, &em);
	realize(as, j, ctx, &em);
	return out;
}

void autoscaler_proposal_drop(struct autoscaler *as, const char *job_key)
{
	struct as_job *j = autoscaler_job(as, job_key);
	as_proposal_free(j->proposal);
	j->proposal = NULL;
}

void autoscaler_cleanup(struct autoscaler *as, const char *job_key)
{
	for (size_t i = 0; i < as->njobs; i++) {
		struct as_job *j = as->jobs[i];
		if (strcmp(j->key, job_key))
			continue;
		struct core_emit ce = {as, j, 0};
		struct as_emitter em = {core_emit, &ce};
		clear_all(as, j, &em);
		job_free(j);
		as->jobs[i] = as->jobs[--as->njobs];
		return;
	}
	as->store.ops->clear_all(as->store.impl, job_key);
	char *err = NULL;
	as->store.ops->flush(as->store.impl, job_key, &err);
	free(err);
}

cJSON *autoscaler_overrides_json(struct autoscaler *as, const char *job_key)
{
	return as_pmap_to_json(&autoscaler_job(as, job_key)->overrides);
}

cJSON *autoscaler_report_json(struct autoscaler *as, const char *job_key)
{
	struct as_job *j = autoscaler_job(as, job_key);
	cJSON *o = cJSON_CreateObject(), *vs = cJSON_CreateObject(), *g = cJSON_CreateObject();
	if (j->have_eval) {
		for (size_t k = 0; k < j->last_topo.n; k++) {
			size_t i = j->last_topo.order[k];
			cJSON *m = cJSON_CreateObject();
			for (int x = 0; x < AS_EM_COUNT; x++)
				cJSON_AddItemToObject(
				    m, as_emetric_name(x),
				    as_eval_metric_to_json(&j->last_eval.v[i].m[x], as_emetric_fields(x)));
			cJSON_AddItemToObject(vs, j->last_topo.v[i].id, m);
		}
		for (int x = 0; x < AS_EG_COUNT; x++)
			cJSON_AddItemToObject(g, as_egmetric_name(x),
			                      as_eval_metric_to_json(&j->last_eval.g[x], as_egmetric_fields(x)));
	}
	cJSON_AddItemToObject(o, "vertices", vs);
	cJSON_AddItemToObject(o, "global", g);
	cJSON_AddNumberToObject(o, "scalings", (double)j->scalings);
	cJSON_AddNumberToObject(o, "balanced", (double)j->balanced);
	cJSON_AddNumberToObject(o, "errors", (double)j->errors);
	return o;
}

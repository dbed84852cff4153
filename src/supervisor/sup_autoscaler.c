/* sup_autoscaler: the autoscaler (src/autoscaler/as_*.c, FLIP-334's design) wired into the supervisor: the
 * control loop on the event loop at autoscaler.standalone.control-loop.interval, the REST collector
 * that feeds it one request at a time (never blocking the loop), the scaling hook (flinklet.autoscaler.hook: a
 * child process asked about each rescale, its pipes I/O sources of the loop, killed at its deadline, its exit from
 * the supervisor's reaper; the cycle ends when it has answered), the REST realizer that rescales in place
 * through PUT /jobs/:id/resource-requirements, the event handler that writes events.jsonl, and the
 * overrides in status.json. A new JVM starts with the stored overrides in its configuration
 * (pipeline.jobvertex-parallelism-overrides, sup_launch.c), so a restart restores the job once at the scaled
 * parallelism; they are re-applied on every tick all the same, which changes nothing when they are in force. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "autoscaler.h"
#include "hookproc.h"
#include "jvm.h"
#include "store.h"
#include "sup_autoscaler.h"
#include "sup_memtune.h"
#include "sup_observe.h"

/* One control-loop cycle's collection. */
struct as_cycle {
	bool active;
	unsigned gen;
	struct as_options opts;
	struct as_job *job;
	struct strv listings, vertices;
	size_t i;
	int tm_tries;
};

static struct as_cycle *cycle_of(struct supervisor *s)
{
	if (!s->autoscaler.cycle)
		s->autoscaler.cycle = xcalloc(1, sizeof(struct as_cycle));
	return s->autoscaler.cycle;
}

static char *escape(const char *v)
{
	char *e = curl_easy_escape(NULL, v, 0);
	char *out = xstrdup(e ? e : "");
	curl_free(e);
	return out;
}

static void options_for(struct supervisor *s, struct as_options *o)
{
	as_options_from_spec(s->spec, o);
	/* with slot sharing a vertex cannot be wider than the MiniCluster's slots */
	int64_t slots = spec_int(s->spec, "taskmanager.numberOfTaskSlots");
	if (slots > 0 && o->vertex_max_parallelism > slots)
		o->vertex_max_parallelism = (int)slots;
}

static void user_overrides(struct supervisor *s, struct as_pmap *ret)
{
	memset(ret, 0, sizeof(*ret));
	const char *u = spec_get(s->spec, "pipeline.jobvertex-parallelism-overrides");
	if (u)
		as_pmap_parse_flink(u, ret);
}

char *sup_autoscaler_launch_overrides(struct supervisor *s)
{
	if (!s->autoscaler.as || !s->job_id[0])
		return NULL;
	struct as_options o;
	options_for(s, &o);
	struct as_pmap user, merged;
	user_overrides(s, &user);
	autoscaler_launch_overrides(s->autoscaler.as, s->job_id, &o, &user, &merged);
	char *text = merged.n ? as_pmap_to_flink(&merged) : NULL;
	as_pmap_free(&merged);
	as_pmap_free(&user);
	as_options_free(&o);
	return text;
}

static const char *hook_path(struct supervisor *s)
{
	const char *p = spec_get(s->spec, "flinklet.autoscaler.hook");
	return str_empty(p) ? NULL : p;
}

static void context(struct supervisor *s, const struct as_options *o, const struct as_pmap *user,
                    struct as_context *ret)
{
	*ret = (struct as_context){
	    .job_key = s->job_id,
	    .options = o,
	    .job_status = as_effective_status(s->status.job_state, s->status.tasks_total, s->status.tasks_running,
	                                      s->status.tasks_finished),
	    .now_ms = (int64_t)(now_realtime() / USEC_PER_MSEC),
	    .user_overrides = user,
	    .tm_cpu = s->spec->cpu,
	    .tm_memory = s->spec->memory,
	    .slots_per_tm = (int)spec_int(s->spec, "taskmanager.numberOfTaskSlots"),
	    .hook = hook_path(s) != NULL,
	};
	if (s->state != SUP_RUNNING)
		ret->job_status = s->status.job_state ? s->status.job_state : "CREATED";
}

/* What a cycle (or the hook's answer) leaves: the timeline point, the overrides in status.json. */
static void cycle_outcome(struct supervisor *s, enum as_outcome out)
{
	log_debug("autoscaler: %s", as_outcome_name(out));
	if (out == AS_OUTCOME_PROPOSED)
		return; /* the hook's answer says what became of the cycle */
	sup_observe_autoscaler(s, out);
	const struct as_job *j = autoscaler_job(s->autoscaler.as, s->job_id);
	if ((out == AS_OUTCOME_BALANCED || out == AS_OUTCOME_SCALED) && j && j->have_eval) {
		/* a whole metric window evaluated: memory tuning from the same figures */
		struct as_options o;
		options_for(s, &o);
		sup_memtune_evaluated(s, &j->last_eval, &o);
		as_options_free(&o);
	}
	cJSON *ov = autoscaler_overrides_json(s->autoscaler.as, s->job_id);
	char *text = cJSON_PrintUnformatted(ov);
	status_set_string(&s->status.autoscaler_overrides, text);
	free(text);
	cJSON_Delete(ov);
	sup_write_status(s);
}

static enum as_outcome scale(struct supervisor *s, const struct as_options *o)
{
	struct as_pmap user;
	user_overrides(s, &user);
	struct as_context ctx;
	context(s, o, &user, &ctx);
	enum as_outcome out = autoscaler_scale(s->autoscaler.as, &ctx);
	cycle_outcome(s, out);
	as_pmap_free(&user);
	return out;
}

static void hook_start(struct supervisor *s);

static void cycle_done(struct supervisor *s)
{
	struct as_cycle *c = cycle_of(s);
	c->active = false;
	as_options_free(&c->opts);
	strv_free(&c->listings);
	strv_free(&c->vertices);
}

static void cycle_end(struct supervisor *s)
{
	struct as_cycle *c = cycle_of(s);
	/* a proposed rescale keeps the cycle going until the hook has answered (hook_finish ends it) */
	if (c->active && scale(s, &c->opts) == AS_OUTCOME_PROPOSED)
		hook_start(s);
	else
		cycle_done(s);
}

/* ---- the scaling hook (docs/autoscaler.md, "The scaling hook") ---- */

struct as_hook_run {
	struct hookproc proc;
	sd_event_source *in, *out, *err, *deadline;
	int64_t timeout_ms;
	char *path;
};

static void hook_sources_off(struct as_hook_run *h)
{
	h->in = sd_event_source_disable_unref(h->in);
	h->out = sd_event_source_disable_unref(h->out);
	h->err = sd_event_source_disable_unref(h->err);
	h->deadline = sup_disarm(h->deadline);
}

static void hook_free(struct as_hook_run *h)
{
	if (!h)
		return;
	hook_sources_off(h);
	hookproc_close(&h->proc);
	free(h->path);
	free(h);
}

/* What became of the hook (failure NULL: it answered) goes to the autoscaler, unless the job it was asked about is
 * gone meanwhile (the JVM restarted, the job stopped, the autoscaler was turned off): then the proposal is dropped
 * and the next cycle decides afresh. The cycle ends here. */
static void hook_finish(struct supervisor *s, struct as_hook_run *h, const char *failure)
{
	struct as_cycle *c = cycle_of(s);
	if (c->gen != s->launch.gen || s->launch.jvm_pid <= 0 || s->state != SUP_RUNNING) {
		log_info("autoscaler: the scaling hook's answer is not used: the job it was asked about is no longer "
		         "running in the same JVM");
		autoscaler_proposal_drop(s->autoscaler.as, s->job_id);
	} else {
		char *errors = hookproc_errors_tail(&h->proc, 300);
		struct as_hook_result r = {h->path, failure, h->proc.answer.buf ? h->proc.answer.buf : "",
		                           h->proc.answer.len, errors};
		struct as_pmap user;
		user_overrides(s, &user);
		struct as_context ctx;
		context(s, &c->opts, &user, &ctx);
		cycle_outcome(s, autoscaler_hook_done(s->autoscaler.as, &ctx, &r));
		as_pmap_free(&user);
		free(errors);
	}
	hook_free(h);
	s->autoscaler.hook = NULL;
	cycle_done(s);
}

static int on_hook_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct supervisor *s = userdata;
	struct as_hook_run *h = s->autoscaler.hook;
	hookproc_pump(&h->proc);
	/* a pipe at its end was closed by the pump: its source goes with it */
	if (h->proc.in < 0)
		h->in = sd_event_source_disable_unref(h->in);
	if (h->proc.out < 0)
		h->out = sd_event_source_disable_unref(h->out);
	if (h->proc.err < 0)
		h->err = sd_event_source_disable_unref(h->err);
	return 0;
}

static int on_hook_deadline(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	struct as_hook_run *h = s->autoscaler.hook;
	h->deadline = sup_disarm(h->deadline);
	hookproc_kill(&h->proc, true); /* its exit comes through the reaper */
	return 0;
}

/* Asks the hook about the cycle's proposal; the cycle ends with its answer (at once when it cannot be run: that is
 * its answer). */
static void hook_start(struct supervisor *s)
{
	struct as_cycle *c = cycle_of(s);
	struct as_hook_run *h = xcalloc(1, sizeof(*h));
	h->path = xstrdup(hook_path(s));
	usec_t timeout = spec_duration(s->spec, "flinklet.autoscaler.hook.timeout");
	h->timeout_ms = timeout ? (int64_t)(timeout / USEC_PER_MSEC) : 10000;
	char *proposal = autoscaler_proposal_json(s->autoscaler.as, s->job_id, &c->opts, h->timeout_ms);
	int r = proposal ? hookproc_start(&h->proc, h->path, proposal, strlen(proposal)) : -ENOMSG;
	free(proposal);
	s->autoscaler.hook = h;
	if (r < 0) {
		h->proc.in = h->proc.out = h->proc.err = -1;
		char *why = xasprintf("could not be run: %s", strerror(-r));
		hook_finish(s, h, why);
		free(why);
		return;
	}
	log_debug("autoscaler: asking the scaling hook %s (pid %d)", h->path, (int)h->proc.pid);
	if (sd_event_add_io(s->event, &h->in, h->proc.in, EPOLLOUT, on_hook_io, s) < 0 ||
	    sd_event_add_io(s->event, &h->out, h->proc.out, EPOLLIN, on_hook_io, s) < 0 ||
	    sd_event_add_io(s->event, &h->err, h->proc.err, EPOLLIN, on_hook_io, s) < 0 ||
	    sup_arm(s, &h->deadline, (usec_t)h->timeout_ms * USEC_PER_MSEC, on_hook_deadline) < 0) {
		log_warn("autoscaler: unable to watch the scaling hook's pipes; it is stopped");
		hookproc_kill(&h->proc, false); /* its exit comes through the reaper */
	}
}

bool sup_autoscaler_reaped(struct supervisor *s, const struct reaped *r)
{
	struct as_hook_run *h = s->autoscaler.hook;
	if (!h || h->proc.pid <= 0 || r->pid != h->proc.pid)
		return false;
	jvm_kill_group(h->proc.pid); /* what it left running */
	hook_sources_off(h);
	hookproc_pump(&h->proc); /* what it wrote before it ended */
	h->proc.pid = 0;
	char *failure = hookproc_failure(&h->proc, r->exit_code, r->exit_signal, h->timeout_ms);
	hook_finish(s, h, failure);
	free(failure);
	return true;
}

static void cycle_fail(struct supervisor *s, const char *why)
{
	struct as_cycle *c = cycle_of(s);
	as_collect_fail(c->job, why);
	cycle_end(s);
}

static bool cycle_current(struct supervisor *s, long code, const char *error)
{
	struct as_cycle *c = cycle_of(s);
	if (!c->active)
		return false;
	if (c->gen != s->launch.gen || s->launch.jvm_pid <= 0) {
		cycle_fail(s, "the JVM restarted during the collection");
		return false;
	}
	if (code != 200) {
		char *why = code ? xasprintf("Flink's REST API answered %ld", code)
		                 : xasprintf("Flink's REST API did not answer: %s", error ? error : "no response");
		cycle_fail(s, why);
		free(why);
		return false;
	}
	return true;
}

static void get(struct supervisor *s, const char *path, rest_cb cb)
{
	if (rest_request(s->rest, "GET", path, NULL, cb, s) < 0)
		cycle_fail(s, "unable to send a REST request");
}

static void step_vertices(struct supervisor *s);
static void step_jm(struct supervisor *s);
static void step_tm(struct supervisor *s);

static void on_tm(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!cycle_current(s, code, error))
		return;
	struct as_cycle *c = cycle_of(s);
	if (as_collect_tm_metrics(c->job, body) == -EAGAIN && ++c->tm_tries < 3) {
		step_tm(s);
		return;
	}
	cycle_end(s);
}

static void step_tm(struct supervisor *s)
{
	struct as_cycle *c = cycle_of(s);
	char *q = escape(as_collect_tm_query(c->job));
	char *path = xasprintf("/taskmanagers/metrics?get=%s&agg=min,max,avg", q);
	get(s, path, on_tm);
	free(path);
	free(q);
}

static void on_jm(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!cycle_current(s, code, error))
		return;
	as_collect_jm_metrics(cycle_of(s)->job, body);
	step_tm(s);
}

static void step_jm(struct supervisor *s)
{
	char *q = escape(as_collect_jm_query());
	char *path = xasprintf("/jobmanager/metrics?get=%s", q);
	get(s, path, on_jm);
	free(path);
	free(q);
}

static void on_vertex(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!cycle_current(s, code, error))
		return;
	struct as_cycle *c = cycle_of(s);
	as_collect_vertex_metrics(c->job, c->vertices.v[c->i], body);
	c->i++;
	step_vertices(s);
}

static void step_vertices(struct supervisor *s)
{
	struct as_cycle *c = cycle_of(s);
	for (; c->i < c->vertices.n; c->i++) {
		char *q = as_collect_vertex_query(c->job, c->vertices.v[c->i]);
		if (!q)
			continue;
		char *eq = escape(q);
		char *path =
		    xasprintf("/jobs/%s/vertices/%s/subtasks/metrics?get=%s", s->job_id, c->vertices.v[c->i], eq);
		get(s, path, on_vertex);
		free(path);
		free(eq);
		free(q);
		return;
	}
	step_jm(s);
}

static void step_listings(struct supervisor *s);

static void on_listing(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!cycle_current(s, code, error))
		return;
	struct as_cycle *c = cycle_of(s);
	as_collect_listing(c->job, c->listings.v[c->i], body);
	c->i++;
	step_listings(s);
}

static void step_listings(struct supervisor *s)
{
	struct as_cycle *c = cycle_of(s);
	if (c->i < c->listings.n) {
		char *path = xasprintf("/jobs/%s/vertices/%s/subtasks/metrics", s->job_id, c->listings.v[c->i]);
		get(s, path, on_listing);
		free(path);
		return;
	}
	c->i = 0;
	step_vertices(s);
}

static void on_details(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	if (!cycle_current(s, code, error))
		return;
	struct as_cycle *c = cycle_of(s);
	char *err = NULL;
	int r = as_collect_topology(c->job, body, NULL, &err);
	if (r == -EAGAIN) {
		free(err);
		cycle_end(s);
		return;
	}
	if (r < 0) {
		cycle_fail(s, err ? err : "unusable job topology");
		free(err);
		return;
	}
	const cJSON *v;
	cJSON_ArrayForEach (v, cJSON_GetObjectItemCaseSensitive(body, "vertices")) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(v, "id");
		if (cJSON_IsString(id))
			strv_push(&c->vertices, id->valuestring);
	}
	as_collect_listings_needed(c->job, &c->listings);
	c->i = 0;
	step_listings(s);
}

static int on_tick(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct supervisor *s = userdata;
	struct as_options o;
	options_for(s, &o);
	usec_t interval = (usec_t)(o.control_loop_interval_ms > 0 ? o.control_loop_interval_ms : 10000) * USEC_PER_MSEC;
	sup_arm(s, &s->autoscaler.timer, interval, on_tick);
	struct as_cycle *c = cycle_of(s);
	if (c->active) {
		as_options_free(&o);
		return 0;
	}
	if (!o.enabled || s->state != SUP_RUNNING || s->launch.jvm_pid <= 0) {
		/* disabled (its state is cleared) or not running: the autoscaler says which */
		scale(s, &o);
		as_options_free(&o);
		return 0;
	}
	c->active = true;
	c->gen = s->launch.gen;
	c->opts = o;
	c->job = autoscaler_job(s->autoscaler.as, s->job_id);
	c->tm_tries = 0;
	char *path = xasprintf("/jobs/%s", s->job_id);
	get(s, path, on_details);
	free(path);
	return 0;
}

/* ---- the realizer: in place, through the adaptive scheduler ---- */

static void on_put(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	s->autoscaler.realizing = false;
	if (code == 200) {
		s->autoscaler.scalings++;
		sup_event(s, "ScalingApplied",
		          "the new parallelism is applied in place (resource requirements updated)");
		return;
	}
	const cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "errors"), 0);
	sup_alert(s, "AutoscalerError", "unable to update the resource requirements: %s",
	          cJSON_IsString(e0) ? e0->valuestring : (error ? error : "no answer"));
}

static void on_requirements(void *userdata, long code, cJSON *body, const char *error)
{
	struct supervisor *s = userdata;
	cJSON *put = NULL;
	if (code != 200 || !body || !as_resource_requirements_update(body, &s->autoscaler.pending, &put)) {
		s->autoscaler.realizing = false;
		return;
	}
	char *text = cJSON_PrintUnformatted(put);
	char *path = xasprintf("/jobs/%s/resource-requirements", s->job_id);
	if (rest_request(s->rest, "PUT", path, text, on_put, s) < 0)
		s->autoscaler.realizing = false;
	free(path);
	free(text);
	cJSON_Delete(put);
}

static int realize(void *userdata, const char *job_key, const struct as_pmap *overrides)
{
	struct supervisor *s = userdata;
	if (s->state != SUP_RUNNING || s->launch.jvm_pid <= 0 || s->autoscaler.realizing)
		return 0; /* the next tick re-applies them */
	as_pmap_free(&s->autoscaler.pending);
	for (size_t i = 0; i < overrides->n; i++)
		as_pmap_set(&s->autoscaler.pending, overrides->e[i].vertex, overrides->e[i].parallelism);
	s->autoscaler.realizing = true;
	char *path = xasprintf("/jobs/%s/resource-requirements", job_key);
	int r = rest_request(s->rest, "GET", path, NULL, on_requirements, s);
	free(path);
	if (r < 0)
		s->autoscaler.realizing = false;
	return r < 0 ? r : 0;
}

static void on_as_event(void *userdata, const char *job_key, enum as_event_type type, const char *reason,
                        const char *message, const char *message_key, int64_t interval_ms)
{
	struct supervisor *s = userdata;
	if (!strcmp(reason, "AutoscalerError")) {
		/* the reference never deduplicates it; one a tick during a REST outage would flood the log */
		usec_t now = now_monotonic();
		if (s->autoscaler.last_error && !strcmp(s->autoscaler.last_error, message) &&
		    now - s->autoscaler.last_error_at < 300 * USEC_PER_SEC)
			return;
		status_set_string(&s->autoscaler.last_error, message);
		s->autoscaler.last_error_at = now;
	}
	if (type == AS_EVENT_WARNING)
		sup_alert(s, reason, "autoscaler: %s", message);
	else
		sup_event(s, reason, "autoscaler: %s", message);
}

/* The autoscaler's state file, written on the worker thread like the events and the status (sup_core.c). */
static void write_state(void *ctx, const char *path, char *text)
{
	sup_write_file(ctx, path, text, "autoscaler/");
}

int sup_autoscaler_setup(struct supervisor *s)
{
	char *dir = path_join(s->state_dir, "autoscaler");
	struct as_realizer realizer = {realize, s};
	struct as_event_handler events = {on_as_event, s};
	s->autoscaler.as = autoscaler_new(&realizer, &events, as_store_file_new_with_writer(dir, write_state, s));
	free(dir);
	return sup_arm(s, &s->autoscaler.timer, 2 * USEC_PER_SEC, on_tick);
}

void sup_autoscaler_free(struct supervisor *s)
{
	s->autoscaler.timer = sup_disarm(s->autoscaler.timer);
	if (s->autoscaler.hook) {
		hookproc_kill(&s->autoscaler.hook->proc, false); /* reaped as an orphan, if at all before the exit */
		hook_free(s->autoscaler.hook);
		s->autoscaler.hook = NULL;
	}
	if (s->autoscaler.cycle) {
		struct as_cycle *c = s->autoscaler.cycle;
		c->active = false;
		as_options_free(&c->opts);
		strv_free(&c->listings);
		strv_free(&c->vertices);
		free(c);
		s->autoscaler.cycle = NULL;
	}
	as_pmap_free(&s->autoscaler.pending);
	free(s->autoscaler.last_error);
	s->autoscaler.last_error = NULL;
	if (s->autoscaler.as)
		autoscaler_free(s->autoscaler.as);
	s->autoscaler.as = NULL;
}

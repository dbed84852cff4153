/* fuzz_rest: the autoscaler's handling of Flink REST responses, as the supervisor's collector feeds them
 * (src/autoscaler/autoscaler.h, "Collection"): GET /jobs/:id -> as_collect_topology (as_topology_from_rest), each
 * vertex's metric listing and values, the JobManager and TaskManager metrics, then one autoscaler_scale()
 * per cycle; and GET /jobs/:id/resource-requirements -> as_resource_requirements_update.
 *
 * Input: a JSON object standing for the responses (any member may be missing or of any type):
 *   {"config": {job.autoscaler.* overrides}, "requirements": <resource-requirements body>,
 *    "cycles": [{"now": ms, "status": "RUNNING", "job": <details>, "plan": <plan or absent>,
 *                "listings": {vid: <listing>}, "values": {vid: <values>}, "jm": <values>, "tm": <values>,
 *                "fail": "why"}, ...]}
 * Anything that is not such an object is fed as every response of one cycle. */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "as_store_mem.h"
#include "as_internal.h"

#define KEY "job"

static int realize(void *ud, const char *job_key, const struct as_pmap *overrides)
{
	return 0;
}

static void handle(void *ud, const char *job_key, enum as_event_type type, const char *reason, const char *message,
                   const char *message_key, int64_t interval_ms)
{
	FUZZ_ASSERT(reason && message);
}

static const cJSON *member(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : o;
}

static void one_cycle(struct autoscaler *as, const struct as_options *o, const cJSON *c, int64_t now)
{
	struct as_job *job = autoscaler_job(as, KEY);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "now");
	if (cJSON_IsNumber(n) && n->valuedouble > 0 && n->valuedouble < 4e15)
		now = (int64_t)n->valuedouble;
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "status");
	const char *status = cJSON_IsString(st) ? st->valuestring : "RUNNING";

	/* the topology, directly and as the collector does */
	const cJSON *details = member(c, "job"), *plan = cJSON_GetObjectItemCaseSensitive(c, "plan");
	struct as_topology t;
	int64_t running = 0;
	char *err = NULL;
	if (as_topology_from_rest(details, plan, &t, &running, &err) == 0) {
		for (size_t i = 0; i < t.n; i++)
			FUZZ_ASSERT(as_topology_find(&t, t.v[i].id) >= 0);
		as_topology_free(&t);
	}
	free(err);
	err = NULL;
	const cJSON *fail = cJSON_GetObjectItemCaseSensitive(c, "fail");
	if (cJSON_IsString(fail)) {
		as_collect_fail(job, fail->valuestring);
	} else if (as_collect_topology(job, details, plan, &err) == 0) {
		struct strv need = {0};
		as_collect_listings_needed(job, &need);
		const cJSON *listings = member(c, "listings"), *values = member(c, "values");
		for (size_t i = 0; i < need.n; i++)
			as_collect_listing(job, need.v[i], member(listings, need.v[i]));
		strv_free(&need);
		/* every vertex the responses name, known or not */
		const cJSON *v;
		if (cJSON_IsObject(values))
			cJSON_ArrayForEach (v, values) {
				char *q = as_collect_vertex_query(job, v->string);
				free(q);
				as_collect_vertex_metrics(job, v->string, v);
			}
		as_collect_jm_metrics(job, member(c, "jm"));
		const char *tmq = as_collect_tm_query(job);
		FUZZ_ASSERT(tmq);
		if (as_collect_tm_metrics(job, member(c, "tm")) == -EAGAIN)
			as_collect_tm_metrics(job, member(c, "tm"));
	}
	free(err);
	struct as_context ctx = {.job_key = KEY,
	                         .options = o,
	                         .job_status = status,
	                         .now_ms = now,
	                         .tm_cpu = 1.0,
	                         .tm_memory = 1u << 30,
	                         .slots_per_tm = 2};
	enum as_outcome r = autoscaler_scale(as, &ctx);
	FUZZ_ASSERT(as_outcome_name(r));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	if (!doc)
		return 0;
	struct as_options o;
	struct strv errors = {0};
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(doc, "config");
	if (!cJSON_IsObject(config))
		as_options_defaults(&o);
	else if (as_options_from_json(NULL, config, "config", &o, &errors) < 0) {
		as_options_free(&o); /* filled even when it fails */
		as_options_defaults(&o);
	}
	strv_free(&errors);
	o.enabled = true;
	o.stabilization_ms = 0;
	if (o.metrics_window_ms > 120000)
		o.metrics_window_ms = 120000;

	struct as_realizer rz = {.realize = realize};
	struct as_event_handler ev = {.handle = handle};
	struct autoscaler *as = autoscaler_new(&rz, &ev, as_store_memory_new());
	int64_t now = 1767225600000;
	const cJSON *cycles = cJSON_GetObjectItemCaseSensitive(doc, "cycles");
	if (cJSON_IsArray(cycles)) {
		const cJSON *c;
		int k = 0;
		cJSON_ArrayForEach (c, cycles) {
			if (k++ >= 8)
				break;
			one_cycle(as, &o, c, now);
			now += 30000;
		}
	} else {
		one_cycle(as, &o, doc, now);
		one_cycle(as, &o, doc, now + 60000);
	}
	cJSON *rep = autoscaler_report_json(as, KEY);
	FUZZ_ASSERT(rep);
	cJSON_Delete(rep);

	/* the REST realizer's PUT body from GET /jobs/:id/resource-requirements */
	const cJSON *req = member(doc, "requirements");
	struct as_pmap ov = {0};
	as_pmap_set(&ov, "src", 3);
	as_pmap_set(&ov, "agg", 1);
	cJSON *body = NULL;
	if (as_resource_requirements_update(req, &ov, &body))
		FUZZ_ASSERT(body);
	cJSON_Delete(body);
	as_pmap_free(&ov);

	autoscaler_free(as);
	as_options_free(&o);
	cJSON_Delete(doc);
	return 0;
}

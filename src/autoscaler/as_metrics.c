/* as_metrics: metric collection (reference section 1) from Flink's REST responses: the topology of
 * GET /jobs/:id, the metric names of each vertex (with Kafka/Pulsar partition counting), the aggregated
 * subtask, JobManager and TaskManager values, and the turning of one such snapshot into one sample,
 * including the fallbacks for sources without pendingRecords or numRecordsIn (Flink's datagen).
 * It is not for the REST calls themselves (the supervisor's collector makes them) or for the metric
 * window (as_autoscaler.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

#define MAX_VERTICES 10000
#define MAX_NAMES 100000

static const char *const tm_common = "Status.JVM.Memory.Heap.Max,Status.JVM.Memory.Heap.Used,"
                                     "Status.Flink.Memory.Managed.Used,Status.JVM.Memory.Metaspace.Used";
static const char *const tm_with_gc = "Status.JVM.Memory.Heap.Max,Status.JVM.Memory.Heap.Used,"
                                      "Status.Flink.Memory.Managed.Used,Status.JVM.Memory.Metaspace.Used,"
                                      "Status.JVM.GarbageCollector.All.TimeMsPerSecond";

static const struct as_agg agg_nan = {NAN, NAN, NAN, NAN, NAN};

/* ---- topology (1.2) ---- */

static double json_num(const cJSON *j)
{
	double v;
	return as_json_double(j, &v) < 0 ? NAN : v;
}

static const cJSON *find_rest_vertex(const cJSON *vertices, const char *id)
{
	const cJSON *v;
	cJSON_ArrayForEach (v, vertices) {
		const cJSON *vid = cJSON_GetObjectItemCaseSensitive(v, "id");
		if (cJSON_IsString(vid) && !strcmp(vid->valuestring, id))
			return v;
	}
	return NULL;
}

static int topo_error(struct as_topology *t, char **ret_error, char *msg)
{
	as_topology_free(t);
	if (ret_error)
		*ret_error = msg;
	else
		free(msg);
	return -EINVAL;
}

int as_topology_from_rest(const cJSON *job, const cJSON *plan, struct as_topology *ret, int64_t *ret_running_ts,
                          char **ret_error)
{
	struct as_topology t = {0};
	memset(ret, 0, sizeof(*ret));
	if (!cJSON_IsObject(job))
		return topo_error(&t, ret_error, xstrdup("job details: not a JSON object"));
	const cJSON *ts =
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "timestamps"), "RUNNING");
	int64_t running;
	if (as_json_int64(ts, 1, INT64_MAX / 2, &running) < 0)
		return topo_error(&t, ret_error, xstrdup("job details: no timestamps.RUNNING"));
	if (!plan)
		plan = cJSON_GetObjectItemCaseSensitive(job, "plan");
	else if (cJSON_GetObjectItemCaseSensitive(plan, "plan"))
		plan = cJSON_GetObjectItemCaseSensitive(plan, "plan");
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(plan, "nodes");
	if (!cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) == 0)
		return -EAGAIN; /* not ready yet */
	const cJSON *vertices = cJSON_GetObjectItemCaseSensitive(job, "vertices");
	int n = cJSON_GetArraySize(nodes);
	if (n > MAX_VERTICES)
		return topo_error(&t, ret_error, xasprintf("job plan: too many vertices (%d)", n));
	t.v = xcalloc((size_t)n, sizeof(*t.v));
	const cJSON *node;
	cJSON_ArrayForEach (node, nodes) {
		struct as_vertex *v = &t.v[t.n++];
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(node, "id");
		int64_t p;
		if (!cJSON_IsString(id) || !*id->valuestring)
			return topo_error(&t, ret_error, xasprintf("job plan: nodes[%zu] has no id", t.n - 1));
		v->id = xstrdup(id->valuestring);
		const cJSON *rv = find_rest_vertex(vertices, v->id);
		int64_t maxp;
		if (!rv ||
		    as_json_int64(cJSON_GetObjectItemCaseSensitive(rv, "maxParallelism"), 1, INT32_MAX, &maxp) < 0)
			return topo_error(&t, ret_error,
			                  xasprintf("job details: vertex %s has no maxParallelism", v->id));
		if (as_json_int64(cJSON_GetObjectItemCaseSensitive(node, "parallelism"), 1, INT32_MAX, &p) < 0 &&
		    as_json_int64(cJSON_GetObjectItemCaseSensitive(rv, "parallelism"), 1, INT32_MAX, &p) < 0)
			return topo_error(&t, ret_error, xasprintf("job plan: vertex %s has no parallelism", v->id));
		v->parallelism = (int)p;
		v->max_parallelism = (int)maxp;
		const cJSON *status = cJSON_GetObjectItemCaseSensitive(rv, "status");
		v->finished = cJSON_IsString(status) && !strcmp(status->valuestring, "FINISHED");
		const cJSON *ssg = cJSON_GetObjectItemCaseSensitive(rv, "slotSharingGroupId");
		if (cJSON_IsString(ssg) && *ssg->valuestring)
			v->slot_sharing_group = xstrdup(ssg->valuestring);
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(rv, "metrics");
		double rr = json_num(cJSON_GetObjectItemCaseSensitive(m, "read-records"));
		double wr = json_num(cJSON_GetObjectItemCaseSensitive(m, "write-records"));
		v->read_records = isnan(rr) ? 0 : rr;
		v->write_records = isnan(wr) ? 0 : wr;
		v->accumulated_busy_time = json_num(cJSON_GetObjectItemCaseSensitive(m, "accumulated-busy-time"));
		if (v->finished)
			v->read_records = v->write_records = v->accumulated_busy_time = 0;
	}
	/* edges, now that every id is known */
	size_t i = 0;
	cJSON_ArrayForEach (node, nodes) {
		struct as_vertex *v = &t.v[i++];
		const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(node, "inputs"), *in;
		cJSON_ArrayForEach (in, inputs) {
			const cJSON *iid = cJSON_GetObjectItemCaseSensitive(in, "id");
			const cJSON *ship = cJSON_GetObjectItemCaseSensitive(in, "ship_strategy");
			int from = cJSON_IsString(iid) ? as_topology_find(&t, iid->valuestring) : -1;
			if (from < 0)
				return topo_error(
				    &t, ret_error,
				    xasprintf("job plan: vertex %s has an input that is not in the plan", v->id));
			v->inputs = xrealloc(v->inputs, (v->ninputs + 1) * sizeof(*v->inputs));
			v->inputs[v->ninputs].from = (size_t)from;
			v->inputs[v->ninputs].ship =
			    as_ship_from_string(cJSON_IsString(ship) ? ship->valuestring : NULL);
			v->ninputs++;
		}
	}
	if (as_topology_link(&t) < 0)
		return topo_error(&t, ret_error, xstrdup("job plan: the vertices form a cycle"));
	*ret = t;
	if (ret_running_ts)
		*ret_running_ts = running;
	return 0;
}

/* ---- metric names (1.3) and partitions (1.2) ---- */

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static const char *find_last(const char *hay, size_t hay_len, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = hay_len >= k ? hay_len - k + 1 : 0; i-- > 0;)
		if (!strncmp(hay + i, needle, k))
			return hay + i;
	return NULL;
}

/* "...[.kafkaCluster.<c>].KafkaSourceReader.topic.<t>.partition.<n>.currentOffset" -> "<c|null>-<t>-<n>" */
static char *kafka_key(const char *name)
{
	static const char suffix[] = ".currentOffset", part[] = ".partition.", reader[] = ".KafkaSourceReader.topic.",
	                  cluster[] = ".kafkaCluster.";
	if (!str_has_suffix(name, suffix))
		return NULL;
	size_t end = strlen(name) - strlen(suffix);
	const char *pp = find_last(name, end, part);
	if (!pp || !all_digits(pp + strlen(part), (size_t)(name + end - pp) - strlen(part)))
		return NULL;
	size_t topic_end = (size_t)(pp - name);
	const char *first_reader = strstr(name, reader);
	if (!first_reader || (size_t)(first_reader - name) + strlen(reader) >= topic_end + 1)
		return NULL;
	const char *c = strstr(name, cluster);
	const char *r = first_reader;
	char *cl = NULL;
	if (c && c < first_reader) {
		r = find_last(name, topic_end, reader);
		if (!r || r <= c + strlen(cluster))
			return NULL;
		cl = xstrndup(c + strlen(cluster), (size_t)(r - c) - strlen(cluster));
	}
	const char *topic = r + strlen(reader);
	if (topic >= name + topic_end) {
		free(cl);
		return NULL;
	}
	char *key = xasprintf("%s-%.*s-%.*s", cl ? cl : "null", (int)(name + topic_end - topic), topic,
	                      (int)(name + end - (pp + strlen(part))), pp + strlen(part));
	free(cl);
	return key;
}

/* "....PulsarConsumer.<topic>-partition-<n>.<anything>.numMsgsReceived" -> "<topic>-<n>" */
static char *pulsar_key(const char *name)
{
	static const char suffix[] = ".numMsgsReceived", consumer[] = ".PulsarConsumer.", part[] = "-partition-";
	if (!str_has_suffix(name, suffix))
		return NULL;
	size_t end = strlen(name) - strlen(suffix);
	const char *c = find_last(name, end, consumer);
	if (!c)
		return NULL;
	const char *topic = c + strlen(consumer);
	/* the topic is greedy: take the last "-partition-<digits>." that leaves ".<anything>" before the suffix */
	for (const char *p = find_last(name, end, part); p && p > topic;
	     p = find_last(name, (size_t)(p - name), part)) {
		const char *d = p + strlen(part), *q = d;
		while (q < name + end && *q >= '0' && *q <= '9')
			q++;
		if (q == d || *q != '.' || q >= name + end)
			continue;
		return xasprintf("%.*s-%.*s", (int)(p - topic), topic, (int)(q - d), d);
	}
	return NULL;
}

int as_count_source_partitions(const struct strv *names)
{
	struct strv keys = {0};
	for (size_t i = 0; i < names->n; i++) {
		char *k = kafka_key(names->v[i]);
		if (!k)
			k = pulsar_key(names->v[i]);
		if (!k)
			continue;
		bool seen = false;
		for (size_t j = 0; j < keys.n && !seen; j++)
			seen = !strcmp(keys.v[j], k);
		if (seen)
			free(k);
		else
			strv_push_take(&keys, k);
	}
	int n = (int)keys.n;
	strv_free(&keys);
	return n;
}

static void choose(char **slot, const char *name)
{
	if (!*slot)
		*slot = xstrdup(name);
}

int as_vertex_names_from_listing(const cJSON *listing, bool is_source, struct as_vertex_names *ret)
{
	if (!cJSON_IsArray(listing))
		return -EINVAL;
	struct strv all = {0};
	const cJSON *it;
	cJSON_ArrayForEach (it, listing) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		if (cJSON_IsString(id) && all.n < MAX_NAMES)
			strv_push(&all, id->valuestring);
	}
	char *keep_id = ret->id;
	ret->id = NULL;
	as_vertex_names_free(ret);
	ret->id = keep_id;
	ret->listed = true;
	ret->is_source = is_source;
	for (size_t i = 0; i < all.n; i++) {
		const char *n = all.v[i];
		bool src = str_has_prefix(n, "Source__");
		if (!strcmp(n, "busyTimeMsPerSecond"))
			choose(&ret->busy, n);
		if (!is_source) {
			if (!strcmp(n, "numRecordsInPerSecond"))
				choose(&ret->in_per_sec, n);
			continue;
		}
		if (!strcmp(n, "backPressuredTimeMsPerSecond"))
			choose(&ret->backpressure, n);
		else if (src && str_has_suffix(n, ".numRecordsInPerSecond"))
			choose(&ret->source_in_per_sec, n);
		else if (src && str_has_suffix(n, ".numRecordsIn"))
			choose(&ret->source_in, n);
		else if (src && str_has_suffix(n, ".numRecordsOut"))
			choose(&ret->source_out, n);
		if (str_has_suffix(n, ".pendingRecords"))
			strv_push(&ret->pending, n);
	}
	ret->partitions = is_source ? as_count_source_partitions(&all) : 0;
	strv_free(&all);
	return 0;
}

/* ---- aggregated values ---- */

const char *as_vertex_names_missing(const struct as_vertex_names *n)
{
	/* required names (1.3) that the listing did not have */
	return !n->busy                ? "busyTimeMsPerSecond"
	       : !n->is_source         ? NULL
	       : !n->backpressure      ? "backPressuredTimeMsPerSecond"
	       : !n->source_in_per_sec ? "Source__*.numRecordsInPerSecond"
	       : !n->source_in         ? "Source__*.numRecordsIn"
	                               : NULL;
}

static void agg_merge(struct as_agg *into, const struct as_agg *a, bool *seen)
{
	if (!*seen) {
		*into = *a;
		*seen = true;
		return;
	}
	/* several ids for one metric: min of mins, max of maxes, sum of sums, max of skews, no avg */
	into->min = as_jmin(into->min, a->min);
	into->max = as_jmax(into->max, a->max);
	into->sum = into->sum + a->sum;
	into->skew = as_jmax(into->skew, a->skew);
	into->avg = NAN;
}

static struct as_agg agg_from_json(const cJSON *it)
{
	struct as_agg a;
	a.min = json_num(cJSON_GetObjectItemCaseSensitive(it, "min"));
	a.max = json_num(cJSON_GetObjectItemCaseSensitive(it, "max"));
	a.avg = json_num(cJSON_GetObjectItemCaseSensitive(it, "avg"));
	a.sum = json_num(cJSON_GetObjectItemCaseSensitive(it, "sum"));
	a.skew = json_num(cJSON_GetObjectItemCaseSensitive(it, "skew"));
	return a;
}

/* The walk over Flink's aggregated metrics ([{"id": ..., "min": ..., "max": ..., ...}], an array): from *it (NULL:
 * the start) to the next entry with an id, with its id and aggregates. false after the last. */
static bool next_metric(const cJSON *values, const cJSON **it, const char **id, struct as_agg *a)
{
	for (*it = *it ? (*it)->next : values->child; *it; *it = (*it)->next) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(*it, "id");
		if (cJSON_IsString(name)) {
			*id = name->valuestring;
			*a = agg_from_json(*it);
			return true;
		}
	}
	return false;
}

static bool name_is(const char *chosen, const char *id)
{
	return chosen && !strcmp(chosen, id);
}

int as_vertex_raw_from_json(const cJSON *values, const struct as_vertex_names *names, struct as_vertex_raw *raw)
{
	if (!cJSON_IsArray(values))
		return -EINVAL;
	struct as_agg *slots[6] = {&raw->busy,      &raw->backpressure, &raw->source_in_per_sec,
	                           &raw->source_in, &raw->source_out,   &raw->in_per_sec};
	const char *chosen[6] = {names->busy,      names->backpressure, names->source_in_per_sec,
	                         names->source_in, names->source_out,   names->in_per_sec};
	bool seen[6] = {false};
	for (int k = 0; k < 6; k++)
		*slots[k] = agg_nan;
	raw->pending = NAN;
	const cJSON *it = NULL;
	const char *id;
	struct as_agg a;
	while (next_metric(values, &it, &id, &a)) {
		for (int k = 0; k < 6; k++)
			if (name_is(chosen[k], id))
				agg_merge(slots[k], &a, &seen[k]);
		for (size_t k = 0; k < names->pending.n; k++)
			if (!strcmp(names->pending.v[k], id) && !isnan(a.sum))
				raw->pending = isnan(raw->pending) ? a.sum : raw->pending + a.sum;
	}
	raw->present = true;
	raw->missing = as_vertex_names_missing(names);
	return 0;
}

/* ---- one snapshot -> one sample (1.4, 1.5) ---- */

static double busy_of(const struct as_options *o, const struct as_agg *a)
{
	return o->busy_agg == AS_BUSY_AVG ? a->avg : o->busy_agg == AS_BUSY_MIN ? a->min : a->max;
}

/* The average of the finite OBSERVED_TPR values of the window, when there are enough of them. */
static double observed_tpr_fallback(const struct as_options *o, const struct as_samples *h, const char *vertex)
{
	double sum = 0;
	int n = 0;
	for (size_t i = 0; h && i < h->n; i++) {
		const double *v = as_sample_vertex_get(&h->s[i], vertex);
		if (v && isfinite(v[AS_VM_OBSERVED_TPR])) {
			sum += v[AS_VM_OBSERVED_TPR];
			n++;
		}
	}
	return n > 0 && n >= o->observed_tpr_min_observations ? sum / n : NAN;
}

static int missing(char **ret_error, const char *metric, const char *vertex)
{
	if (ret_error)
		*ret_error = xasprintf("Could not find required metric %s for vertex %s", metric, vertex);
	return -ENOENT;
}

int as_snapshot_to_sample(const struct as_options *o, const struct as_snapshot *snap, const struct as_samples *history,
                          int64_t now, struct as_sample *ret, char **ret_error)
{
	as_sample_init(ret, now);
	const struct as_topology *t = &snap->topo;
	for (size_t i = 0; i < t->n; i++) {
		const struct as_vertex *v = &t->v[i];
		bool source = as_is_source(v);
		struct as_vertex_raw zero = {.present = true, .pending = 0};
		struct as_agg zeros = {0, 0, 0, 0, 0};
		zero.busy = zero.backpressure = zero.source_in_per_sec = zero.source_in = zero.source_out = zeros;
		zero.in_per_sec = agg_nan;
		const struct as_vertex_raw *r = v->finished ? &zero : &snap->raw[i];
		int rc = 0;
		if (!r->present)
			rc = missing(ret_error, "busyTimeMsPerSecond", v->id);
		else if (r->missing)
			rc = missing(ret_error, r->missing, v->id);
		if (rc < 0) {
			as_sample_free(ret);
			return rc;
		}
		double m[AS_VM_COUNT];
		for (int k = 0; k < AS_VM_COUNT; k++)
			m[k] = NAN;
		if (source)
			m[AS_VM_LAG] = isnan(r->pending) ? 0 : r->pending;
		double busy = busy_of(o, &r->busy);
		m[AS_VM_LOAD] = isfinite(busy) ? as_jmax(0, busy) / 1000.0 : NAN;
		m[AS_VM_ACCUMULATED_BUSY_TIME] = v->accumulated_busy_time;
		double in = v->read_records;
		if (source && in == 0) {
			in = r->source_in.sum;
			if (isnan(in) || in == 0)
				in = r->source_out.sum;
		}
		m[AS_VM_NUM_RECORDS_IN] = isnan(in) ? NAN : as_jmax(0, in);
		m[AS_VM_NUM_RECORDS_OUT] = v->write_records;
		if (!source && !isnan(r->in_per_sec.sum))
			m[AS_VM_NUM_RECORDS_IN_PER_SECOND] = r->in_per_sec.sum;
		if (source && !isnan(r->source_in_per_sec.sum)) {
			double in_per_sec = r->source_in_per_sec.sum, bp = r->backpressure.avg;
			double lag_threshold_s = (double)(o->observed_tpr_lag_threshold_ms / 1000);
			if (in_per_sec == 0)
				m[AS_VM_OBSERVED_TPR] = INFINITY;
			else if (m[AS_VM_LAG] >= lag_threshold_s * in_per_sec && bp < 1000)
				m[AS_VM_OBSERVED_TPR] = in_per_sec / (1 - bp / 1000.0);
			else
				m[AS_VM_OBSERVED_TPR] = observed_tpr_fallback(o, history, v->id);
		}
		double *dst = as_sample_vertex_metrics(ret, v->id, true);
		for (int k = 0; k < AS_VM_COUNT; k++)
			dst[k] = as_round3(m[k]);
	}
	ret->g[AS_GM_NUM_TASK_SLOTS_USED] = snap->slots_total - snap->slots_available;
	ret->g[AS_GM_GC_PRESSURE] = snap->gc_time.max / 1000.0;
	ret->g[AS_GM_HEAP_MEMORY_USED] = snap->heap_used.max;
	if (!isnan(snap->heap_used.max) && !isnan(snap->heap_max.max))
		ret->g[AS_GM_HEAP_MAX_USAGE_RATIO] = snap->heap_used.max / snap->heap_max.max;
	ret->g[AS_GM_MANAGED_MEMORY_USED] = snap->managed_used.max;
	ret->g[AS_GM_METASPACE_MEMORY_USED] = snap->metaspace_used.max;
	return 0;
}

/* ---- the collector's entry points (see autoscaler.h) ---- */

static struct as_vertex_names *cached_names(struct as_job *job, const char *vertex)
{
	for (size_t i = 0; i < job->nnames; i++)
		if (!strcmp(job->names[i].id, vertex))
			return &job->names[i];
	return NULL;
}

void as_job_reset_collector(struct as_job *job)
{
	for (size_t i = 0; i < job->nnames; i++)
		as_vertex_names_free(&job->names[i]);
	free(job->names);
	job->names = NULL;
	job->nnames = 0;
	job->tm_gc = -1;
}

static void snap_init(struct as_job *job)
{
	as_snapshot_free(&job->snap);
	job->snap.slots_total = job->snap.slots_available = NAN;
	job->snap.heap_max = job->snap.heap_used = job->snap.managed_used = job->snap.metaspace_used =
	    job->snap.gc_time = agg_nan;
	job->snap_fed = true;
}

int as_collect_topology(struct as_job *job, const cJSON *job_details, const cJSON *plan, char **ret_error)
{
	snap_init(job);
	char *err = NULL;
	int r = as_topology_from_rest(job_details, plan, &job->snap.topo, &job->snap.running_ts, &err);
	if (r == -EAGAIN)
		return r;
	if (r < 0) {
		job->snap.error = xstrdup(err);
		if (ret_error)
			*ret_error = err;
		else
			free(err);
		return r;
	}
	job->snap.have_topology = true;
	job->snap.raw = xcalloc(job->snap.topo.n, sizeof(*job->snap.raw));
	return 0;
}

/* The names cache covers exactly the current topology's vertices; a different set starts it afresh
 * (every vertex is listed again). Returns true when it was rebuilt. */
static bool ensure_cache(struct as_job *job)
{
	const struct as_topology *t = &job->snap.topo;
	bool same = job->nnames == t->n;
	for (size_t i = 0; same && i < t->n; i++)
		same = cached_names(job, t->v[i].id) != NULL;
	if (same)
		return false;
	int tm_gc = job->tm_gc;
	as_job_reset_collector(job);
	job->tm_gc = tm_gc;
	job->names = xcalloc(t->n ? t->n : 1, sizeof(*job->names));
	job->nnames = t->n;
	for (size_t i = 0; i < t->n; i++)
		job->names[i].id = xstrdup(t->v[i].id);
	return true;
}

void as_collect_listings_needed(struct as_job *job, struct strv *ret)
{
	const struct as_topology *t = &job->snap.topo;
	ensure_cache(job);
	for (size_t i = 0; i < t->n; i++) {
		const struct as_vertex *v = &t->v[i];
		const struct as_vertex_names *n = cached_names(job, v->id);
		/* a listing that lacked a required name is not kept: the operator throws before caching
		 * it, so the vertex is listed again (its metrics may not have been registered yet) */
		if (!v->finished && (as_is_source(v) || !n->listed || as_vertex_names_missing(n)))
			strv_push(ret, v->id);
	}
}

int as_collect_listing(struct as_job *job, const char *vertex_id, const cJSON *listing)
{
	int i = as_topology_find(&job->snap.topo, vertex_id);
	ensure_cache(job);
	struct as_vertex_names *n = cached_names(job, vertex_id);
	if (i < 0 || !n)
		return -ENOENT;
	struct as_vertex *v = &job->snap.topo.v[i];
	int r = as_vertex_names_from_listing(listing, as_is_source(v), n);
	if (r < 0)
		return r;
	if (n->partitions > 0)
		v->num_source_partitions = n->partitions;
	return 0;
}

char *as_collect_vertex_query(struct as_job *job, const char *vertex_id)
{
	int i = as_topology_find(&job->snap.topo, vertex_id);
	const struct as_vertex_names *n = cached_names(job, vertex_id);
	if (i < 0 || !n || !n->listed || job->snap.topo.v[i].finished)
		return NULL;
	struct strbuf b = {0};
	const char *one[] = {n->busy,      n->backpressure, n->source_in_per_sec,
	                     n->source_in, n->source_out,   n->in_per_sec};
	for (size_t k = 0; k < sizeof(one) / sizeof(one[0]); k++)
		if (one[k])
			strbuf_appendf(&b, "%s%s", b.len ? "," : "", one[k]);
	for (size_t k = 0; k < n->pending.n; k++)
		strbuf_appendf(&b, "%s%s", b.len ? "," : "", n->pending.v[k]);
	if (!b.len)
		return NULL;
	return strbuf_steal(&b);
}

int as_collect_vertex_metrics(struct as_job *job, const char *vertex_id, const cJSON *values)
{
	int i = as_topology_find(&job->snap.topo, vertex_id);
	const struct as_vertex_names *n = cached_names(job, vertex_id);
	if (i < 0 || !n)
		return -ENOENT;
	return as_vertex_raw_from_json(values, n, &job->snap.raw[i]);
}

const char *as_collect_jm_query(void)
{
	return "taskSlotsTotal,taskSlotsAvailable";
}

int as_collect_jm_metrics(struct as_job *job, const cJSON *values)
{
	if (!cJSON_IsArray(values))
		return -EINVAL;
	const cJSON *it;
	cJSON_ArrayForEach (it, values) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		double v = json_num(cJSON_GetObjectItemCaseSensitive(it, "value"));
		if (!cJSON_IsString(id))
			continue;
		if (!strcmp(id->valuestring, "taskSlotsTotal"))
			job->snap.slots_total = v;
		else if (!strcmp(id->valuestring, "taskSlotsAvailable"))
			job->snap.slots_available = v;
	}
	return 0;
}

const char *as_collect_tm_query(struct as_job *job)
{
	return job->tm_gc == 0 ? tm_common : tm_with_gc;
}

int as_collect_tm_metrics(struct as_job *job, const cJSON *values)
{
	bool empty = !cJSON_IsArray(values) || cJSON_GetArraySize(values) == 0;
	if (empty && job->tm_gc == -1) {
		job->tm_gc = 0; /* the probe with the GC metric found nothing: ask again without it */
		return -EAGAIN;
	}
	if (empty) {
		job->tm_gc = -1;
		free(job->snap.error);
		job->snap.error = xstrdup("Missing required TM metrics");
		return -ENOENT;
	}
	if (job->tm_gc == -1)
		job->tm_gc = 1;
	const cJSON *it = NULL;
	const char *n;
	struct as_agg a;
	while (next_metric(values, &it, &n, &a)) {
		if (!strcmp(n, "Status.JVM.Memory.Heap.Max"))
			job->snap.heap_max = a;
		else if (!strcmp(n, "Status.JVM.Memory.Heap.Used"))
			job->snap.heap_used = a;
		else if (!strcmp(n, "Status.Flink.Memory.Managed.Used"))
			job->snap.managed_used = a;
		else if (!strcmp(n, "Status.JVM.Memory.Metaspace.Used"))
			job->snap.metaspace_used = a;
		else if (!strcmp(n, "Status.JVM.GarbageCollector.All.TimeMsPerSecond"))
			job->snap.gc_time = a;
	}
	job->snap.tm_present = true;
	return 0;
}

void as_collect_fail(struct as_job *job, const char *error)
{
	if (!job->snap_fed)
		snap_init(job);
	if (!job->snap.error)
		job->snap.error = xstrdup(error ? error : "metric collection failed");
}

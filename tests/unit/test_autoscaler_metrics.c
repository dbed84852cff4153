/* test_autoscaler_metrics: metric collection (reference section 1) from Flink REST responses as the
 * collector feeds them: the topology of GET /jobs/:id (plan nodes, ship strategies, Kahn order, finished
 * vertices, errors), the metric names chosen from a vertex's listing with Kafka and Pulsar partition
 * counting, the aggregated values, the sample of one snapshot (LAG, LOAD, the numRecordsIn fallbacks of
 * sources such as datagen, the observed true processing rate's three branches, rounding), the global
 * metrics, the TaskManager probe, and which vertices are listed again. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_store_mem.h"
#include "as_internal.h"

static const char JOB[] =
    "{\"jid\": \"a1\", \"state\": \"RUNNING\", \"timestamps\": {\"CREATED\": 900, \"RUNNING\": 1000},"
    " \"vertices\": ["
    "  {\"id\": \"v-src\", \"name\": \"Source: clicks\", \"maxParallelism\": 128, \"parallelism\": 2, \"status\": "
    "\"RUNNING\", \"slotSharingGroupId\": \"ssg1\","
    "   \"metrics\": {\"read-records\": 0, \"write-records\": 5000, \"accumulated-busy-time\": 1200.0}},"
    "  {\"id\": \"v-agg\", \"maxParallelism\": 128, \"parallelism\": 2, \"status\": \"RUNNING\","
    "   \"metrics\": {\"read-records\": 4990, \"write-records\": 10, \"accumulated-busy-time\": \"NaN\"}},"
    "  {\"id\": \"v-done\", \"maxParallelism\": 64, \"parallelism\": 1, \"status\": \"FINISHED\","
    "   \"metrics\": {\"read-records\": 77, \"write-records\": 77, \"accumulated-busy-time\": 55}}],"
    " \"plan\": {\"jid\": \"a1\", \"nodes\": ["
    "  {\"id\": \"v-agg\", \"parallelism\": 2, \"inputs\": [{\"num\": 0, \"id\": \"v-src\", \"ship_strategy\": "
    "\"hash\"}]},"
    "  {\"id\": \"v-src\", \"parallelism\": 2},"
    "  {\"id\": \"v-done\", \"parallelism\": 1}]}}";

static const char SRC_LISTING[] =
    "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": \"backPressuredTimeMsPerSecond\"},"
    " {\"id\": \"Source__clicks.numRecordsInPerSecond\"},"
    " {\"id\": \"Source__clicks.numRecordsIn\"}, {\"id\": \"Source__clicks.numRecordsOut\"},"
    " {\"id\": \"Source__clicks.numRecordsOutPerSecond\"},"
    " {\"id\": \"Source__clicks.KafkaSourceReader.topic.clicks.partition.0.currentOffset\"},"
    " {\"id\": \"Source__clicks.KafkaSourceReader.topic.clicks.partition.1.currentOffset\"},"
    " {\"id\": \"Source__clicks.KafkaSourceReader.topic.clicks.partition.1.committedOffset\"},"
    " {\"id\": \"Source__clicks.pendingRecords\"}, {\"id\": \"numRecordsIn\"}]";

static const char SRC_VALUES[] =
    "[{\"id\": \"busyTimeMsPerSecond\", \"min\": 100, \"max\": 300, \"avg\": 200, \"sum\": 400, \"skew\": 1},"
    " {\"id\": \"backPressuredTimeMsPerSecond\", \"min\": 0, \"max\": 500, \"avg\": 250, \"sum\": 500, \"skew\": 0},"
    " {\"id\": \"Source__clicks.numRecordsInPerSecond\", \"min\": 400, \"max\": 600, \"avg\": 500, \"sum\": 1000},"
    " {\"id\": \"Source__clicks.numRecordsIn\", \"min\": 2000, \"max\": 3000, \"avg\": 2500, \"sum\": 5000},"
    " {\"id\": \"Source__clicks.numRecordsOut\", \"min\": 2000, \"max\": 3000, \"avg\": 2500, \"sum\": 5000},"
    " {\"id\": \"Source__clicks.pendingRecords\", \"min\": 20000, \"max\": 40000, \"avg\": 30000, \"sum\": 60000}]";

static const char AGG_LISTING[] = "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": \"numRecordsInPerSecond\"},"
                                  " {\"id\": \"Window.numRecordsIn\"}, {\"id\": \"backPressuredTimeMsPerSecond\"}]";
static const char AGG_VALUES[] = "[{\"id\": \"busyTimeMsPerSecond\", \"min\": 800, \"max\": 900, \"avg\": 850},"
                                 " {\"id\": \"numRecordsInPerSecond\", \"min\": 400, \"max\": 550, \"sum\": 950}]";

static void feed(struct as_job *job, const char *vertex, const char *listing, const char *values)
{
	cJSON *l = cJSON_Parse(listing), *v = cJSON_Parse(values);
	assert_int_equal(as_collect_listing(job, vertex, l), 0);
	char *q = as_collect_vertex_query(job, vertex);
	assert_non_null(q);
	assert_int_equal(as_collect_vertex_metrics(job, vertex, v), 0);
	free(q);
	cJSON_Delete(l);
	cJSON_Delete(v);
}

static void test_topology(void **state)
{
	(void)state;
	cJSON *job = cJSON_Parse(JOB);
	struct as_topology t;
	int64_t running = 0;
	char *err = NULL;
	assert_int_equal(as_topology_from_rest(job, NULL, &t, &running, &err), 0);
	assert_int_equal(running, 1000);
	assert_int_equal(t.n, 3);
	/* the plan's order: v-agg, v-src, v-done; Kahn level by level: the sources v-src, v-done, then v-agg */
	assert_string_equal(t.v[t.order[0]].id, "v-src");
	assert_string_equal(t.v[t.order[1]].id, "v-done");
	assert_string_equal(t.v[t.order[2]].id, "v-agg");
	const struct as_vertex *agg = &t.v[0], *src = &t.v[1], *done = &t.v[2];
	assert_int_equal(agg->ninputs, 1);
	assert_int_equal(agg->inputs[0].ship, AS_SHIP_HASH); /* case-insensitive */
	assert_int_equal(src->noutputs, 1);
	assert_true(as_is_source(src) && as_is_source(done) && !as_is_source(agg));
	assert_string_equal(src->slot_sharing_group, "ssg1");
	assert_null(agg->slot_sharing_group);
	assert_double(agg->accumulated_busy_time, NAN); /* "NaN" */
	assert_double(src->write_records, 5000);
	/* a finished vertex has its IO counters zeroed */
	assert_true(done->finished);
	assert_double(done->read_records, 0);
	assert_double(done->accumulated_busy_time, 0);
	assert_int_equal(done->max_parallelism, 64);
	as_topology_free(&t);
	cJSON_Delete(job);

	/* the plan may come from GET /jobs/:id/plan */
	job = cJSON_Parse(JOB);
	cJSON *plan = cJSON_DetachItemFromObject(job, "plan");
	cJSON *wrapped = cJSON_CreateObject();
	cJSON_AddItemToObject(wrapped, "plan", plan);
	assert_int_equal(as_topology_from_rest(job, wrapped, &t, NULL, &err), 0);
	assert_int_equal(t.n, 3);
	as_topology_free(&t);
	/* without a plan: not ready (-EAGAIN), no error */
	assert_int_equal(as_topology_from_rest(job, NULL, &t, NULL, &err), -EAGAIN);
	cJSON_Delete(wrapped);
	cJSON_Delete(job);

	static const struct {
		const char *json, *err;
	} bad[] = {
	    {"[]", "job details: not a JSON object"},
	    {"{\"plan\": {\"nodes\": [{\"id\": \"a\"}]}}", "job details: no timestamps.RUNNING"},
	    {"{\"timestamps\": {\"RUNNING\": 5}, \"vertices\": [], \"plan\": {\"nodes\": [{\"id\": \"a\"}]}}",
	     "job details: vertex a has no maxParallelism"},
	    {"{\"timestamps\": {\"RUNNING\": 5}, \"vertices\": [{\"id\": \"a\", \"maxParallelism\": 4}],"
	     " \"plan\": {\"nodes\": [{\"id\": \"a\"}]}}",
	     "job plan: vertex a has no parallelism"},
	    {"{\"timestamps\": {\"RUNNING\": 5}, \"vertices\": [{\"id\": \"a\", \"maxParallelism\": 4, "
	     "\"parallelism\": 1}],"
	     " \"plan\": {\"nodes\": [{\"id\": \"a\", \"inputs\": [{\"id\": \"zz\"}]}]}}",
	     "job plan: vertex a has an input that is not in the plan"},
	    {"{\"timestamps\": {\"RUNNING\": 5}, \"vertices\": [{\"id\": \"a\", \"maxParallelism\": 4, "
	     "\"parallelism\": 1},"
	     " {\"id\": \"b\", \"maxParallelism\": 4, \"parallelism\": 1}],"
	     " \"plan\": {\"nodes\": [{\"id\": \"a\", \"inputs\": [{\"id\": \"b\"}]}, {\"id\": \"b\", \"inputs\": "
	     "[{\"id\": "
	     "\"a\"}]}]}}",
	     "job plan: the vertices form a cycle"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		job = cJSON_Parse(bad[i].json);
		err = NULL;
		assert_int_equal(as_topology_from_rest(job, NULL, &t, NULL, &err), -EINVAL);
		assert_string_equal(err, bad[i].err);
		free(err);
		cJSON_Delete(job);
	}
}

static int partitions_of(const char *const *names, size_t n)
{
	struct strv v = {0};
	for (size_t i = 0; i < n; i++)
		strv_push(&v, names[i]);
	int r = as_count_source_partitions(&v);
	strv_free(&v);
	return r;
}

static void test_partition_counting(void **state)
{
	(void)state;
	/* Kafka: <cluster or null>-<topic>-<n>; committedOffset is not counted; two topics both count;
	 * a topic may contain dots; the cluster is optional */
	static const char *const kafka[] = {
	    "Source__k.KafkaSourceReader.topic.clicks.partition.0.currentOffset",
	    "Source__k.KafkaSourceReader.topic.clicks.partition.1.currentOffset",
	    "Source__k.KafkaSourceReader.topic.clicks.partition.1.committedOffset",
	    "Source__k.KafkaSourceReader.topic.clicks.partition.1.currentOffset",
	    "Source__k.KafkaSourceReader.topic.views.v2.partition.0.currentOffset",
	    "Source__k.kafkaCluster.east.KafkaSourceReader.topic.clicks.partition.0.currentOffset",
	    "Source__k.KafkaSourceReader.topic.clicks.partition.x.currentOffset",
	    "Source__k.KafkaSourceReader.topic..partition.3.currentOffset",
	};
	/* keys: null-clicks-0, null-clicks-1, null-views.v2-0, east-clicks-0 (the bad ones are not counted) */
	assert_int_equal(partitions_of(kafka, sizeof(kafka) / sizeof(kafka[0])), 4);
	/* Pulsar: <topic>-<n>, whatever the consumer */
	static const char *const pulsar[] = {
	    "Source__p.PulsarConsumer.persistent___public_default_t-partition-2.c1.numMsgsReceived",
	    "Source__p.PulsarConsumer.persistent___public_default_t-partition-2.c2.numMsgsReceived",
	    "Source__p.PulsarConsumer.persistent___public_default_t-partition-10.c1.numMsgsReceived",
	    "Source__p.PulsarConsumer.a-partition-b-partition-3.c1.numMsgsReceived",
	    "Source__p.PulsarConsumer.t-partition-4.numMsgsReceived",
	    "Source__p.PulsarConsumer.t-partition-5.c1.numBytesReceived",
	};
	/* keys: ..._t-2, ..._t-10, a-partition-b-3 */
	assert_int_equal(partitions_of(pulsar, sizeof(pulsar) / sizeof(pulsar[0])), 3);
	static const char *const none[] = {"busyTimeMsPerSecond", "Source__x.numRecordsIn"};
	assert_int_equal(partitions_of(none, 2), 0);
}

static void test_names(void **state)
{
	(void)state;
	struct as_vertex_names n = {0};
	cJSON *l = cJSON_Parse(SRC_LISTING);
	assert_int_equal(as_vertex_names_from_listing(l, true, &n), 0);
	assert_string_equal(n.busy, "busyTimeMsPerSecond");
	assert_string_equal(n.backpressure, "backPressuredTimeMsPerSecond");
	assert_string_equal(n.source_in_per_sec, "Source__clicks.numRecordsInPerSecond");
	assert_string_equal(n.source_in, "Source__clicks.numRecordsIn");
	assert_string_equal(n.source_out, "Source__clicks.numRecordsOut");
	assert_null(n.in_per_sec); /* sources do not query numRecordsInPerSecond */
	assert_int_equal(n.pending.n, 1);
	assert_int_equal(n.partitions, 2);
	cJSON_Delete(l);
	/* a non-source: busy time and numRecordsInPerSecond only */
	l = cJSON_Parse(AGG_LISTING);
	assert_int_equal(as_vertex_names_from_listing(l, false, &n), 0);
	assert_string_equal(n.busy, "busyTimeMsPerSecond");
	assert_string_equal(n.in_per_sec, "numRecordsInPerSecond");
	assert_null(n.backpressure);
	assert_int_equal(n.pending.n, 0);
	assert_int_equal(n.partitions, 0);
	cJSON_Delete(l);
	as_vertex_names_free(&n);

	/* several ids for one metric: min of mins, max of maxes, sum of sums, max of skews, avg undefined */
	struct as_vertex_names names = {.busy = "busyTimeMsPerSecond"};
	struct as_vertex_raw raw;
	cJSON *v = cJSON_Parse("[{\"id\": \"busyTimeMsPerSecond\", \"min\": 1, \"max\": 5, \"avg\": 3, \"sum\": 6, "
	                       "\"skew\": 2},"
	                       " {\"id\": \"busyTimeMsPerSecond\", \"min\": 0, \"max\": 4, \"avg\": 2, \"sum\": 4, "
	                       "\"skew\": 7}]");
	assert_int_equal(as_vertex_raw_from_json(v, &names, &raw), 0);
	assert_double(raw.busy.min, 0);
	assert_double(raw.busy.max, 5);
	assert_double(raw.busy.sum, 10);
	assert_double(raw.busy.skew, 7);
	assert_double(raw.busy.avg, NAN);
	assert_null(raw.missing);
	cJSON_Delete(v);
	v = cJSON_Parse("{}");
	assert_int_equal(as_vertex_raw_from_json(v, &names, &raw), -EINVAL);
	cJSON_Delete(v);
}

struct coll {
	struct autoscaler *as;
	struct as_job *job;
	struct as_options o;
};

static void coll_init(struct coll *c)
{
	c->as = autoscaler_new(NULL, NULL, as_store_memory_new());
	c->job = autoscaler_job(c->as, "a1");
	as_options_defaults(&c->o);
	cJSON *job = cJSON_Parse(JOB);
	assert_int_equal(as_collect_topology(c->job, job, NULL, NULL), 0);
	cJSON_Delete(job);
}

static void coll_free(struct coll *c)
{
	as_options_free(&c->o);
	autoscaler_free(c->as);
}

static void test_sample(void **state)
{
	(void)state;
	struct coll c;
	coll_init(&c);
	/* first cycle: every vertex that is not finished is listed */
	struct strv need = {0};
	as_collect_listings_needed(c.job, &need);
	assert_int_equal(need.n, 2);
	assert_string_equal(need.v[0], "v-agg");
	assert_string_equal(need.v[1], "v-src");
	strv_free(&need);
	assert_null(as_collect_vertex_query(c.job, "v-done")); /* finished: never queried */
	cJSON *l = cJSON_Parse(SRC_LISTING);
	assert_int_equal(as_collect_listing(c.job, "v-src", l), 0);
	cJSON_Delete(l);
	char *q = as_collect_vertex_query(c.job, "v-src");
	assert_string_equal(q,
	                    "busyTimeMsPerSecond,backPressuredTimeMsPerSecond,Source__clicks.numRecordsInPerSecond,"
	                    "Source__clicks.numRecordsIn,Source__clicks.numRecordsOut,Source__clicks.pendingRecords");
	free(q);
	cJSON *v = cJSON_Parse(SRC_VALUES);
	assert_int_equal(as_collect_vertex_metrics(c.job, "v-src", v), 0);
	cJSON_Delete(v);
	feed(c.job, "v-agg", AGG_LISTING, AGG_VALUES);
	/* JobManager and TaskManager values */
	assert_string_equal(as_collect_jm_query(), "taskSlotsTotal,taskSlotsAvailable");
	v = cJSON_Parse("[{\"id\": \"taskSlotsTotal\", \"value\": \"4\"}, {\"id\": \"taskSlotsAvailable\", \"value\": "
	                "\"1\"}]");
	assert_int_equal(as_collect_jm_metrics(c.job, v), 0);
	cJSON_Delete(v);
	/* the first TaskManager query probes with the GC metric; an empty answer asks again without it */
	assert_contains(as_collect_tm_query(c.job), "GarbageCollector");
	v = cJSON_Parse("[]");
	assert_int_equal(as_collect_tm_metrics(c.job, v), -EAGAIN);
	assert_not_contains(as_collect_tm_query(c.job), "GarbageCollector");
	cJSON_Delete(v);
	v = cJSON_Parse("[{\"id\": \"Status.JVM.Memory.Heap.Used\", \"min\": 100, \"max\": 600, \"avg\": 350},"
	                " {\"id\": \"Status.JVM.Memory.Heap.Max\", \"min\": 1000, \"max\": 1000, \"avg\": 1000},"
	                " {\"id\": \"Status.JVM.GarbageCollector.All.TimeMsPerSecond\", \"max\": 30},"
	                " {\"id\": \"Status.Flink.Memory.Managed.Used\", \"max\": 5},"
	                " {\"id\": \"Status.JVM.Memory.Metaspace.Used\", \"max\": 7}]");
	assert_int_equal(as_collect_tm_metrics(c.job, v), 0);
	cJSON_Delete(v);

	struct as_sample s;
	char *err = NULL;
	assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, NULL, 5000, &s, &err), 0);
	assert_int_equal(s.ts, 5000);
	const double *src = as_sample_vertex_get(&s, "v-src");
	/* LAG = sum of pendingRecords = 60000; LOAD = max(300) / 1000 = 0.3 (the MAX aggregator) */
	assert_double(src[AS_VM_LAG], 60000);
	assert_double(src[AS_VM_LOAD], 0.3);
	assert_double(src[AS_VM_ACCUMULATED_BUSY_TIME], 1200);
	/* read-records is 0 for a source: the Source__ numRecordsIn sum, 5000 */
	assert_double(src[AS_VM_NUM_RECORDS_IN], 5000);
	assert_double(src[AS_VM_NUM_RECORDS_OUT], 5000);
	assert_double(src[AS_VM_NUM_RECORDS_IN_PER_SECOND], NAN);
	/* catching up: 60000 >= 30 s * 1000/s and backpressure avg 250 < 1000:
	 * OBSERVED_TPR = 1000 / (1 - 250 / 1000) = 1333.333.. -> 1333.333 */
	assert_double(src[AS_VM_OBSERVED_TPR], 1333.333);
	const double *agg = as_sample_vertex_get(&s, "v-agg");
	assert_double(agg[AS_VM_LOAD], 0.9);
	assert_double(agg[AS_VM_NUM_RECORDS_IN], 4990);
	assert_double(agg[AS_VM_NUM_RECORDS_IN_PER_SECOND], 950);
	assert_double(agg[AS_VM_ACCUMULATED_BUSY_TIME], NAN);
	assert_double(agg[AS_VM_LAG], NAN);
	assert_double(agg[AS_VM_OBSERVED_TPR], NAN);
	/* the finished source: zeros, and no input means OBSERVED_TPR +Infinity */
	const double *done = as_sample_vertex_get(&s, "v-done");
	assert_double(done[AS_VM_LOAD], 0);
	assert_double(done[AS_VM_LAG], 0);
	assert_double(done[AS_VM_NUM_RECORDS_IN], 0);
	assert_double(done[AS_VM_OBSERVED_TPR], INFINITY);
	/* global: 4 - 1 slots; GC 30 / 1000; heap 600 / 1000 */
	assert_double(s.g[AS_GM_NUM_TASK_SLOTS_USED], 3);
	assert_double(s.g[AS_GM_GC_PRESSURE], 0.03);
	assert_double(s.g[AS_GM_HEAP_MEMORY_USED], 600);
	assert_double(s.g[AS_GM_HEAP_MAX_USAGE_RATIO], 0.6);
	assert_double(s.g[AS_GM_MANAGED_MEMORY_USED], 5);
	assert_double(s.g[AS_GM_METASPACE_MEMORY_USED], 7);
	as_sample_free(&s);

	/* the next cycle, same topology: only the (running) sources are listed again */
	cJSON *job = cJSON_Parse(JOB);
	assert_int_equal(as_collect_topology(c.job, job, NULL, NULL), 0);
	as_collect_listings_needed(c.job, &need);
	assert_int_equal(need.n, 1);
	assert_string_equal(need.v[0], "v-src");
	strv_free(&need);
	/* the answer with the GC metric stays remembered */
	assert_not_contains(as_collect_tm_query(c.job), "GarbageCollector");
	/* an empty answer after the probe fails the cycle and forgets the probe */
	v = cJSON_Parse("[]");
	assert_int_equal(as_collect_tm_metrics(c.job, v), -ENOENT);
	assert_string_equal(c.job->snap.error, "Missing required TM metrics");
	assert_contains(as_collect_tm_query(c.job), "GarbageCollector");
	cJSON_Delete(v);
	/* a changed topology lists every vertex again */
	cJSON_DeleteItemFromArray(cJSON_GetObjectItem(cJSON_GetObjectItem(job, "plan"), "nodes"), 2);
	assert_int_equal(as_collect_topology(c.job, job, NULL, NULL), 0);
	as_collect_listings_needed(c.job, &need);
	assert_int_equal(need.n, 2);
	strv_free(&need);
	cJSON_Delete(job);
	coll_free(&c);
}

static void test_source_fallbacks(void **state)
{
	(void)state;
	struct coll c;
	coll_init(&c);
	/* a datagen-like source: numRecordsIn 0, numRecordsOut 700, no pendingRecords, input rate 0 */
	static const char listing[] =
	    "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": \"backPressuredTimeMsPerSecond\"},"
	    " {\"id\": \"Source__gen.numRecordsInPerSecond\"}, {\"id\": \"Source__gen.numRecordsIn\"},"
	    " {\"id\": \"Source__gen.numRecordsOut\"}]";
	static const char values[] = "[{\"id\": \"busyTimeMsPerSecond\", \"max\": \"NaN\", \"min\": 0, \"avg\": 0},"
	                             " {\"id\": \"backPressuredTimeMsPerSecond\", \"avg\": 0},"
	                             " {\"id\": \"Source__gen.numRecordsInPerSecond\", \"sum\": 0},"
	                             " {\"id\": \"Source__gen.numRecordsIn\", \"sum\": 0},"
	                             " {\"id\": \"Source__gen.numRecordsOut\", \"sum\": 700}]";
	feed(c.job, "v-src", listing, values);
	feed(c.job, "v-agg", AGG_LISTING, AGG_VALUES);
	struct as_sample s;
	char *err = NULL;
	assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, NULL, 5000, &s, &err), 0);
	const double *src = as_sample_vertex_get(&s, "v-src");
	assert_double(src[AS_VM_NUM_RECORDS_IN], 700); /* numRecordsIn 0 -> numRecordsOut */
	assert_double(src[AS_VM_LAG], 0);              /* no pendingRecords */
	assert_double(src[AS_VM_OBSERVED_TPR], INFINITY);
	assert_double(src[AS_VM_LOAD], NAN); /* busy max "NaN": a legacy source, no busy time */
	as_sample_free(&s);

	/* not catching up (no lag): the average of the finite OBSERVED_TPR values in the window, when there
	 * are at least 2: (1200 + 1400) / 2 = 1300; the +Infinity and NaN values are ignored */
	struct as_samples h = {0};
	double prev[] = {1200, INFINITY, NAN, 1400};
	for (int i = 0; i < 4; i++) {
		struct as_sample p;
		as_sample_init(&p, i);
		as_sample_vertex_metrics(&p, "v-src", true)[AS_VM_OBSERVED_TPR] = prev[i];
		as_samples_put(&h, &p);
	}
	static const char values2[] = "[{\"id\": \"busyTimeMsPerSecond\", \"max\": 100},"
	                              " {\"id\": \"backPressuredTimeMsPerSecond\", \"avg\": 0},"
	                              " {\"id\": \"Source__gen.numRecordsInPerSecond\", \"sum\": 500},"
	                              " {\"id\": \"Source__gen.numRecordsIn\", \"sum\": 100},"
	                              " {\"id\": \"Source__gen.numRecordsOut\", \"sum\": 100}]";
	feed(c.job, "v-src", listing, values2);
	assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, &h, 5000, &s, &err), 0);
	assert_double(as_sample_vertex_get(&s, "v-src")[AS_VM_OBSERVED_TPR], 1300);
	as_sample_free(&s);
	/* fewer than min-observations finite values: NaN */
	c.o.observed_tpr_min_observations = 3;
	assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, &h, 5000, &s, &err), 0);
	assert_double(as_sample_vertex_get(&s, "v-src")[AS_VM_OBSERVED_TPR], NAN);
	as_sample_free(&s);
	as_samples_free(&h);

	/* a source without backPressuredTimeMsPerSecond misses a required metric */
	static const char listing3[] = "[{\"id\": \"busyTimeMsPerSecond\"}, {\"id\": \"Source__gen.numRecordsIn\"},"
	                               " {\"id\": \"Source__gen.numRecordsInPerSecond\"}]";
	feed(c.job, "v-src", listing3, "[{\"id\": \"busyTimeMsPerSecond\", \"max\": 100}]");
	assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, NULL, 5000, &s, &err), -ENOENT);
	assert_string_equal(err, "Could not find required metric backPressuredTimeMsPerSecond for vertex v-src");
	free(err);
	/* a vertex that was never fed misses busy time */
	cJSON *job = cJSON_Parse(JOB);
	assert_int_equal(as_collect_topology(c.job, job, NULL, NULL), 0);
	cJSON_Delete(job);
	err = NULL;
	assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, NULL, 5000, &s, &err), -ENOENT);
	assert_string_equal(err, "Could not find required metric busyTimeMsPerSecond for vertex v-agg");
	free(err);
	coll_free(&c);
}

static void test_aggregators_and_rounding(void **state)
{
	(void)state;
	struct coll c;
	coll_init(&c);
	static const char values[] =
	    "[{\"id\": \"busyTimeMsPerSecond\", \"min\": 123.45678, \"max\": 987.65432, \"avg\": 555.55555},"
	    " {\"id\": \"numRecordsInPerSecond\", \"sum\": 0.0004}]";
	feed(c.job, "v-agg", AGG_LISTING, values);
	feed(c.job, "v-src", SRC_LISTING, SRC_VALUES);
	struct as_sample s;
	char *err = NULL;
	static const struct {
		enum as_busy_agg agg;
		double load;
	} cases[] = {{AS_BUSY_MAX, 0.988}, {AS_BUSY_MIN, 0.123}, {AS_BUSY_AVG, 0.556}};
	for (size_t i = 0; i < 3; i++) {
		c.o.busy_agg = cases[i].agg;
		assert_int_equal(as_snapshot_to_sample(&c.o, &c.job->snap, NULL, 5000, &s, &err), 0);
		/* 987.65432 / 1000 = 0.98765.. -> 0.988; 0.12345.. -> 0.123; 0.55555.. -> 0.556 */
		assert_double(as_sample_vertex_get(&s, "v-agg")[AS_VM_LOAD], cases[i].load);
		/* 0.0004 would round to 0: kept */
		assert_double(as_sample_vertex_get(&s, "v-agg")[AS_VM_NUM_RECORDS_IN_PER_SECOND], 0.0004);
		as_sample_free(&s);
	}
	coll_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_topology),
	    cmocka_unit_test(test_partition_counting),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_sample),
	    cmocka_unit_test(test_source_fallbacks),
	    cmocka_unit_test(test_aggregators_and_rounding),
	};
	return cmocka_run_group_tests_name("autoscaler_metrics", tests, NULL, NULL);
}

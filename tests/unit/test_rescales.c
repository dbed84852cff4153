/* test_rescales: Flink 2.3's rescale history answers to flinklet's digest (src/flink/rescales.c). The well-formed
 * answers are Flink 2.3.0's own (a MiniCluster under flinklet, one PUT of the resource requirements: Count 1 -> 3):
 * every field kept under Flink's names; the details of a finished rescale asked once, oldest first, and kept when
 * the next history lists it again; an in-progress one waits. Anything else is refused whole with a message naming
 * the entry and the field, and nothing of it is kept; the digest stays bounded whatever Flink lists. */
#include "unit.h"

#include <cjson/cJSON.h>

#include "rescales.h"

#define R1 "286bba8d690fbfe3c97f090ca13c62e8"
#define R0 "2a82e09585b00b6b952d00c1bc5f7bd7"
#define COUNT "b71731f1c0df9c3076c4a455334d0ad6"
#define SOURCE "e5a72f353fc1e6bbf3bd96a41384998c"

/* GET /jobs/:id/rescales/history of Flink 2.3.0, newest first */
static const char HISTORY[] =
    "[{\"rescaleUuid\":\"" R1 "\",\"resourceRequirementsUuid\":\"61911d3feddb638d96ceb1b26da2e46e\","
    "\"rescaleAttemptId\":1,\"vertices\":{},\"slots\":{},\"schedulerStates\":[],"
    "\"startTimestampInMillis\":1796388107526,\"endTimestampInMillis\":1796388108781,\"terminalState\":\"COMPLETED\","
    "\"triggerCause\":\"UPDATE_REQUIREMENT\",\"terminatedReason\":\"SUCCEEDED\"},"
    "{\"rescaleUuid\":\"" R0 "\",\"resourceRequirementsUuid\":\"044fa1721c6658687a9a14dcab489878\","
    "\"rescaleAttemptId\":1,\"vertices\":{},\"slots\":{},\"schedulerStates\":[],"
    "\"startTimestampInMillis\":1796388061353,\"endTimestampInMillis\":1796388061899,\"terminalState\":\"COMPLETED\","
    "\"triggerCause\":\"INITIAL_SCHEDULE\",\"terminatedReason\":\"SUCCEEDED\"}]";

/* GET .../rescales/details/R1 (the slots' resource profiles and the scheduler's states shortened) */
static const char DETAILS[] =
    "{\"rescaleUuid\":\"" R1 "\",\"resourceRequirementsUuid\":\"61911d3feddb638d96ceb1b26da2e46e\","
    "\"rescaleAttemptId\":1,\"vertices\":{"
    "\"" COUNT "\":{\"jobVertexId\":\"" COUNT "\",\"jobVertexName\":\"Count -> Output: Writer -> Output: Committer\","
    "\"slotSharingGroupId\":\"c8cb9c401c7ee791df555b147bbade8e\",\"slotSharingGroupName\":\"default\","
    "\"desiredParallelism\":3,\"sufficientParallelism\":1,\"preRescaleParallelism\":1,\"postRescaleParallelism\":3},"
    "\"" SOURCE "\":{\"jobVertexId\":\"" SOURCE "\",\"jobVertexName\":\"Source: Sequence\","
    "\"slotSharingGroupId\":\"c8cb9c401c7ee791df555b147bbade8e\",\"slotSharingGroupName\":\"default\","
    "\"desiredParallelism\":1,\"sufficientParallelism\":1,\"preRescaleParallelism\":1,\"postRescaleParallelism\":1}},"
    "\"slots\":{\"c8cb9c401c7ee791df555b147bbade8e\":{\"desiredSlots\":3,\"minimalRequiredSlots\":1}},"
    "\"schedulerStates\":[{\"state\":\"Executing\",\"enterTimestampInMillis\":1796388061897,"
    "\"leaveTimestampInMillis\":1796388108624,\"durationInMillis\":46727,\"stringifiedException\":null}],"
    "\"startTimestampInMillis\":1796388107526,\"endTimestampInMillis\":1796388108781,\"terminalState\":\"COMPLETED\","
    "\"triggerCause\":\"UPDATE_REQUIREMENT\",\"terminatedReason\":\"SUCCEEDED\"}";

/* one still in progress (a PUT asking for more slots than the MiniCluster has) */
#define INPROGRESS "f59a8a6b954ec9797a8bb240f4005fdb"
static const char IN_PROGRESS[] =
    "{\"rescaleUuid\":\"" INPROGRESS "\",\"resourceRequirementsUuid\":\"3aa2b4c03351f37efafc880d15d38ae2\","
    "\"rescaleAttemptId\":1,\"vertices\":{},\"slots\":{},\"schedulerStates\":[],"
    "\"startTimestampInMillis\":1796388145233,\"endTimestampInMillis\":null,\"terminalState\":null,"
    "\"triggerCause\":\"UPDATE_REQUIREMENT\",\"terminatedReason\":null}";

static int history(const char *text, struct rescales *rs, char **err)
{
	cJSON *j = cJSON_Parse(text);
	assert_non_null(j);
	*err = NULL;
	int r = rescales_parse_history(j, rs, err);
	cJSON_Delete(j);
	return r;
}

static int details(const char *text, struct rescale *r, char **err)
{
	cJSON *j = cJSON_Parse(text);
	assert_non_null(j);
	*err = NULL;
	int ret = rescales_parse_details(j, r, err);
	cJSON_Delete(j);
	return ret;
}

static void test_flink_2_3_history_and_details(void **state)
{
	(void)state;
	struct rescales rs = {0};
	char *err;
	assert_int_equal(history(HISTORY, &rs, &err), 0);
	assert_null(err);
	assert_int_equal(rs.n, 2);
	assert_false(rs.cut);
	assert_string_equal(rs.v[0].uuid, R1);
	assert_string_equal(rs.v[0].requirements_uuid, "61911d3feddb638d96ceb1b26da2e46e");
	assert_int_equal(rs.v[0].attempt, 1);
	assert_int_equal(rs.v[0].start_ms, 1796388107526);
	assert_int_equal(rs.v[0].end_ms, 1796388108781);
	assert_string_equal(rs.v[0].trigger, "UPDATE_REQUIREMENT");
	assert_string_equal(rs.v[0].terminal, "COMPLETED");
	assert_string_equal(rs.v[0].reason, "SUCCEEDED");
	assert_string_equal(rs.v[1].trigger, "INITIAL_SCHEDULE");
	assert_false(rs.v[0].details);

	/* the oldest finished one first */
	struct rescale *w = rescales_wanting_details(&rs);
	assert_ptr_equal(w, &rs.v[1]);
	w->details = true; /* (as if its details had come) */
	w = rescales_wanting_details(&rs);
	assert_ptr_equal(w, &rs.v[0]);
	assert_int_equal(details(DETAILS, w, &err), 0);
	assert_true(w->details);
	assert_int_equal(w->n_vertices, 2);
	assert_string_equal(w->vertices[0].id, COUNT);
	assert_string_equal(w->vertices[0].name, "Count -> Output: Writer -> Output: Committer");
	assert_int_equal(w->vertices[0].pre, 1);
	assert_int_equal(w->vertices[0].post, 3);
	assert_int_equal(w->vertices[0].desired, 3);
	assert_int_equal(w->vertices[0].sufficient, 1);
	assert_int_equal(w->vertices[1].post, 1);
	assert_null(rescales_wanting_details(&rs));

	/* in Flink's names, what GET /autoscaler shows */
	cJSON *j = rescales_to_json(&rs);
	cJSON *flink = cJSON_Parse(HISTORY);
	for (int i = 0; i < 2; i++) {
		static const char *const same[] = {"rescaleUuid",
		                                   "resourceRequirementsUuid",
		                                   "rescaleAttemptId",
		                                   "triggerCause",
		                                   "terminalState",
		                                   "terminatedReason",
		                                   "startTimestampInMillis",
		                                   "endTimestampInMillis",
		                                   NULL};
		for (size_t k = 0; same[k]; k++)
			assert_true(cJSON_Compare(cJSON_GetObjectItem(cJSON_GetArrayItem(j, i), same[k]),
			                          cJSON_GetObjectItem(cJSON_GetArrayItem(flink, i), same[k]), true));
	}
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "vertices"), COUNT);
	assert_int_equal(cJSON_GetObjectItem(v, "preRescaleParallelism")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(v, "postRescaleParallelism")->valueint, 3);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "detailsKnown")));
	cJSON_Delete(flink);
	cJSON_Delete(j);
	rescales_free(&rs);
}

/* The next history lists the same finished rescales: their details are not asked again; a record that was in
 * progress is asked once it has finished, and not before. */
static void test_details_are_kept_and_in_progress_waits(void **state)
{
	(void)state;
	struct rescales old = {0}, fresh = {0};
	char *err;
	char *with_progress = xasprintf("[%s,%s", IN_PROGRESS, HISTORY + 1);
	assert_int_equal(history(with_progress, &old, &err), 0);
	assert_int_equal(old.n, 3);
	assert_string_equal(old.v[0].terminal, "");
	assert_int_equal(old.v[0].end_ms, -1);
	assert_int_equal(details(DETAILS, &old.v[1], &err), 0);
	/* the one in progress is not asked; the other finished one is */
	assert_ptr_equal(rescales_wanting_details(&old), &old.v[2]);
	/* its details fail: asked again in the next round */
	rescales_details_failed(&old.v[2]);
	assert_null(rescales_wanting_details(&old));

	assert_int_equal(history(with_progress, &fresh, &err), 0);
	rescales_keep_details(&fresh, &old);
	assert_true(fresh.v[1].details);
	assert_int_equal(fresh.v[1].n_vertices, 2);
	assert_int_equal(fresh.v[1].vertices[0].post, 3);
	assert_int_equal(fresh.v[2].details_tries, 1);
	rescales_new_round(&fresh);
	assert_ptr_equal(rescales_wanting_details(&fresh), &fresh.v[2]);
	/* failing again and again: asked in rounds 1, 2, 5, 12, 27, 58, then every 31st: backed off, never given up */
	unsigned asked_in[8], n = 0;
	for (unsigned round = 2; round < 200 && n < 8; round++) {
		if (rescales_wanting_details(&fresh) == &fresh.v[2]) {
			asked_in[n++] = round;
			rescales_details_failed(&fresh.v[2]);
		}
		rescales_new_round(&fresh);
	}
	static const unsigned expected[8] = {2, 5, 12, 27, 58, 89, 120, 151};
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(asked_in[i], expected[i]);
	/* and once they come, nothing more is asked */
	assert_true(fresh.v[2].details_wait > 0 && fresh.v[2].details_wait <= RESCALE_DETAILS_WAIT_MAX);
	fresh.v[2].details_wait = 0;
	char *r0 = xasprintf("{\"rescaleUuid\": \"%s\", \"terminalState\": \"COMPLETED\", \"vertices\": {}}", R0);
	assert_int_equal(details(r0, &fresh.v[2], &err), 0);
	assert_null(rescales_wanting_details(&fresh));
	free(r0);
	rescales_free(&old);
	rescales_free(&fresh);
	free(with_progress);
}

static void assert_refused(const char *answer, const char *says)
{
	struct rescales rs = {0};
	char *err;
	assert_int_equal(history(answer, &rs, &err), -EINVAL);
	assert_non_null(err);
	assert_contains(err, says);
	assert_int_equal(rs.n, 0);
	assert_null(rs.v);
	free(err);
}

static void test_a_history_that_is_not_flinks_is_refused_whole(void **state)
{
	(void)state;
	assert_refused("{\"rescales\": []}", "not a JSON array");
	assert_refused("[1]", "entry 1 is not an object");
	char *second = xasprintf("[%s, {\"rescaleUuid\": \"not-an-id\"}]", IN_PROGRESS);
	assert_refused(second, "entry 2: rescaleUuid is not 32 hexadecimal digits");
	free(second);
	assert_refused("[{\"terminalState\": \"COMPLETED\"}]", "entry 1: rescaleUuid");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"terminalState\": 3}]", "entry 1: terminalState is not a name");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"terminalState\": \"<img src=x>\"}]", "terminalState");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"triggerCause\": [\"UPDATE_REQUIREMENT\"]}]", "triggerCause");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"startTimestampInMillis\": -5}]",
	               "startTimestampInMillis is not a time");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"endTimestampInMillis\": 1e300}]", "endTimestampInMillis");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"endTimestampInMillis\": \"NaN\"}]", "endTimestampInMillis");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"rescaleAttemptId\": 1.5}]", "rescaleAttemptId");
	assert_refused("[{\"rescaleUuid\": \"" R1 "\", \"resourceRequirementsUuid\": 7}]", "resourceRequirementsUuid");
}

static void assert_details_refused(const char *answer, const char *says)
{
	struct rescales rs = {0};
	char *err;
	assert_int_equal(history(HISTORY, &rs, &err), 0);
	assert_int_equal(details(answer, &rs.v[0], &err), -EINVAL);
	assert_non_null(err);
	assert_contains(err, says);
	assert_false(rs.v[0].details);
	assert_int_equal(rs.v[0].n_vertices, 0);
	assert_string_equal(rs.v[0].terminal, "COMPLETED"); /* unchanged */
	free(err);
	rescales_free(&rs);
}

static void test_details_that_are_not_flinks_change_nothing(void **state)
{
	(void)state;
	assert_details_refused("[]", "not a JSON object");
	assert_details_refused("{\"rescaleUuid\": \"" R0 "\", \"vertices\": {}}",
	                       "rescaleUuid is not the rescale asked");
	assert_details_refused("{\"rescaleUuid\": \"" R1 "\", \"vertices\": []}", "vertices is not an object");
	assert_details_refused("{\"rescaleUuid\": \"" R1 "\", \"vertices\": {\"x\": {}}}", "not a job vertex id");
	assert_details_refused("{\"rescaleUuid\": \"" R1 "\", \"vertices\": {\"" COUNT "\": 3}}", "is not an object");
	assert_details_refused("{\"rescaleUuid\": \"" R1 "\", \"vertices\": {\"" COUNT
	                       "\": {\"postRescaleParallelism\": 40000}}}",
	                       "postRescaleParallelism is not a whole number in range");
	assert_details_refused("{\"rescaleUuid\": \"" R1 "\", \"vertices\": {\"" COUNT
	                       "\": {\"jobVertexName\": {\"a\": 1}}}}",
	                       "jobVertexName is not a string");
	assert_details_refused("{\"rescaleUuid\": \"" R1 "\", \"vertices\": {\"" COUNT "\": {\"jobVertexId\": \"" SOURCE
	                       "\"}}}",
	                       "jobVertexId is not the vertex it is listed under");
}

/* However much Flink lists: the newest RESCALES_KEPT records, RESCALE_VERTICES_KEPT vertices each, names cut to
 * RESCALE_NAME_MAX bytes (never inside a UTF-8 character). */
static void test_the_digest_is_bounded(void **state)
{
	(void)state;
	struct strbuf b = {0};
	strbuf_append(&b, "[");
	for (int i = 0; i < 3 * RESCALES_KEPT; i++)
		strbuf_appendf(&b, "%s{\"rescaleUuid\": \"%032x\", \"terminalState\": \"COMPLETED\"}", i ? "," : "", i);
	strbuf_append(&b, "]");
	struct rescales rs = {0};
	char *err;
	assert_int_equal(history(b.buf, &rs, &err), 0);
	assert_int_equal(rs.n, RESCALES_KEPT);
	assert_true(rs.cut);
	assert_string_equal(rs.v[0].uuid, "00000000000000000000000000000000"); /* the newest: Flink's first */
	strbuf_free(&b);

	strbuf_appendf(&b, "{\"rescaleUuid\": \"%s\", \"terminalState\": \"COMPLETED\", \"vertices\": {", rs.v[1].uuid);
	for (int i = 0; i < 2 * RESCALE_VERTICES_KEPT; i++) {
		strbuf_appendf(&b, "%s\"%032x\": {\"jobVertexName\": \"", i ? "," : "", i);
		for (int k = 0; k < RESCALE_NAME_MAX; k++) /* two-byte characters, one byte off the limit */
			strbuf_append(&b, k ? "\xc3\xa9" : "x");
		strbuf_append(&b, "\", \"preRescaleParallelism\": 1, \"postRescaleParallelism\": 2}");
	}
	strbuf_append(&b, "}}");
	assert_int_equal(details(b.buf, &rs.v[1], &err), 0);
	assert_int_equal(rs.v[1].n_vertices, RESCALE_VERTICES_KEPT);
	assert_true(rs.v[1].vertices_cut);
	const char *name = rs.v[1].vertices[0].name;
	assert_true(strlen(name) <= RESCALE_NAME_MAX);
	assert_true(strlen(name) >= RESCALE_NAME_MAX - 1);
	assert_int_equal((strlen(name) - 1) % 2, 0); /* "x" and whole "é"s */
	cJSON *j = rescales_to_json(&rs);
	char *text = cJSON_PrintUnformatted(j);
	assert_true(strlen(text) < 2u << 20);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "verticesCut")));
	free(text);
	cJSON_Delete(j);
	strbuf_free(&b);
	rescales_free(&rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flink_2_3_history_and_details),
	    cmocka_unit_test(test_details_are_kept_and_in_progress_waits),
	    cmocka_unit_test(test_a_history_that_is_not_flinks_is_refused_whole),
	    cmocka_unit_test(test_details_that_are_not_flinks_change_nothing),
	    cmocka_unit_test(test_the_digest_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

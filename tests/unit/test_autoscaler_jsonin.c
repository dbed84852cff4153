/* test_autoscaler_jsonin: plan's metric window read straight from the input's text (as_jsonin.c, issue 27 defect 4)
 * gives the window cJSON and as_samples_from_json_at give, bit for bit, for every kind of number (many digits,
 * exponents, huge, tiny and subnormal values, negative zero, integers above 2^53, "NaN", "Infinity", null); it
 * gives up (and the document is read the usual way, with the usual messages) on everything it does not read
 * exactly as they do; and a document that is not valid JSON is reported at the same byte as before. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One number as JSON text, of a kind picked by the seed. */
static void put_value(struct strbuf *b, uint64_t *s)
{
	double u = (double)(next(s) >> 11) * 0x1p-53;
	switch (next(s) % 14) {
	case 0:
		strbuf_appendf(b, "%.17g", u * pow(10, (int)(next(s) % 40) - 20));
		break;
	case 1:
		strbuf_appendf(b, "%.3f", u * 1e6);
		break;
	case 2:
		strbuf_appendf(b, "%llu", (unsigned long long)(next(s) % 100000000000000000ull));
		break;
	case 3:
		strbuf_appendf(b, "%.*e", (int)(next(s) % 20), u * pow(10, (int)(next(s) % 600) - 300));
		break;
	case 4:
		strbuf_appendf(b, "%.*E", (int)(next(s) % 5), -u * 1e10);
		break;
	case 5: {
		static const char *const odd[] = {"\"NaN\"",
		                                  "\"Infinity\"",
		                                  "\"+Infinity\"",
		                                  "\"-Infinity\"",
		                                  "null",
		                                  "-0",
		                                  "0.0",
		                                  "0e0",
		                                  "-0.0e-5",
		                                  "1E400",
		                                  "-1e-400",
		                                  "4.9e-324",
		                                  "2.2250738585072011e-308",
		                                  "9007199254740993",
		                                  "123456789012345678901234567890",
		                                  "0.000000000000000000000000123",
		                                  "1.00000000000000000000000000001",
		                                  "1e22",
		                                  "1e23",
		                                  "9007199254740992e-22"};
		strbuf_append(b, odd[next(s) % (sizeof(odd) / sizeof(odd[0]))]);
		break;
	}
	case 6:
		strbuf_appendf(b, "%llu.%llu", (unsigned long long)(next(s) % 100000),
		               (unsigned long long)(next(s) % 10000000000000ull));
		break;
	case 7: {
		double x;
		uint64_t bits = next(s);
		memcpy(&x, &bits, sizeof(x));
		if (isfinite(x))
			strbuf_appendf(b, "%.17g", x);
		else
			strbuf_append(b, "null");
		break;
	}
	default:
		strbuf_appendf(b, "%g", u * 1000);
		break;
	}
}

/* A window of n samples over vertices v0..v(nv-1) with values of every kind, whitespace of every JSON kind. */
static char *window_doc(uint64_t *s, int n, int nv)
{
	static const char *const vm[] = {"LAG",
	                                 "LOAD",
	                                 "ACCUMULATED_BUSY_TIME",
	                                 "NUM_RECORDS_IN",
	                                 "NUM_RECORDS_OUT",
	                                 "NUM_RECORDS_IN_PER_SECOND",
	                                 "OBSERVED_TPR"};
	static const char *const gm[] = {"NUM_TASK_SLOTS_USED",  "GC_PRESSURE",         "HEAP_MEMORY_USED",
	                                 "HEAP_MAX_USAGE_RATIO", "MANAGED_MEMORY_USED", "METASPACE_MEMORY_USED"};
	struct strbuf b = {0};
	strbuf_append(&b, "{\"now\": 1767225600000,\n\t\"samples\" :\r\n[");
	for (int i = 0; i < n; i++) {
		strbuf_appendf(&b, "%s{\"timestamp\": %d", i ? ",\n " : "", 1000 + 10000 * i + (int)(next(s) % 5000));
		strbuf_append(&b, ", \"vertices\": {");
		for (int v = 0; v < nv; v++) {
			strbuf_appendf(&b, "%s\"v%d\": {", v ? ", " : "", (v + (int)(i % 2)) % nv);
			int nm = (int)(next(s) % 8);
			for (int k = 0; k < nm; k++) {
				strbuf_appendf(&b, "%s\"%s\" : ", k ? "," : "", vm[next(s) % 7]);
				put_value(&b, s);
			}
			strbuf_append(&b, "}");
		}
		strbuf_append(&b, "}");
		if (next(s) % 2) {
			strbuf_append(&b, ",\"global\":{");
			int nm = (int)(next(s) % 7);
			for (int k = 0; k < nm; k++) {
				strbuf_appendf(&b, "%s\"%s\":", k ? "," : "", gm[next(s) % 6]);
				put_value(&b, s);
			}
			strbuf_append(&b, "}");
		}
		strbuf_append(&b, "}");
	}
	strbuf_append(&b, "] , \"vertices\": [{\"id\": \"v0\", \"x\": [1, {\"samples\": 2}, \"]}\\\"\"]}]}");
	return strbuf_steal(&b);
}

static void assert_same_window(const struct as_samples *a, const struct as_samples *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_int_equal(a->s[i].ts, b->s[i].ts);
		assert_int_equal(a->s[i].n, b->s[i].n);
		assert_memory_equal(a->s[i].g, b->s[i].g, sizeof(a->s[i].g));
		for (size_t k = 0; k < a->s[i].n; k++) {
			assert_string_equal(a->s[i].v[k].id, b->s[i].v[k].id);
			for (int m = 0; m < AS_VM_COUNT; m++)
				if (memcmp(&a->s[i].v[k].m[m], &b->s[i].v[k].m[m], sizeof(double)))
					fail_msg(
					    "samples[%zu].%s metric %d: %.17g read from the text, %.17g through cJSON",
					    i, a->s[i].v[k].id, m, a->s[i].v[k].m[m], b->s[i].v[k].m[m]);
		}
	}
}

static void test_the_window_is_cjsons_bit_for_bit(void **state)
{
	(void)state;
	uint64_t seed = 0x2545f4914f6cdd1dull;
	for (int round = 0; round < 300; round++) {
		char *text = window_doc(&seed, 1 + round % 9, 1 + round % 6);
		size_t len = strlen(text), begin = 0, end = 0;
		struct as_samples fast, ref;
		if (as_plan_samples_from_text(text, len, &fast, &begin, &end) != 1)
			fail_msg("not read from the text: %s", text);
		cJSON *root = cJSON_Parse(text);
		assert_non_null(root);
		char *err = NULL;
		if (as_samples_from_json_at(cJSON_GetObjectItem(root, "samples"), "samples", &ref, &err) < 0)
			fail_msg("%s: %s", err, text);
		assert_same_window(&fast, &ref);
		/* the span is the samples' value */
		assert_int_equal(text[begin], '[');
		assert_int_equal(text[end - 1], ']');
		as_samples_free(&fast);
		as_samples_free(&ref);
		cJSON_Delete(root);
		free(text);
	}
}

/* What the text reader leaves to cJSON: plain JSON it does not read exactly as cJSON does, and everything
 * as_samples_from_json_at would refuse. */
static void test_it_gives_up_on_what_it_does_not_read_as_cjson_does(void **state)
{
	(void)state;
	static const char *const docs[] = {
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\\u0062\": {}}}]}",           /* an escape */
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": \"0.5\"}}}]}", /* a decimal string */
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": 01}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": +1}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": .5}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": 1.}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": true}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": [1]}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": 1,}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": "
	    "1.000000000000000000000000000000000000000000000000000000000000001}}}]}", /* longer than cJSON reads */
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOUD\": 1}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {}, \"a\": {}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"timestamp\": 2}]}",
	    "{\"samples\": [{\"timestamp\": 2}, {\"timestamp\": 2}]}",
	    "{\"samples\": [{\"timestamp\": 1.5}]}",
	    "{\"samples\": [{\"timestamp\": -1}]}",
	    "{\"samples\": [{\"vertices\": {}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"extra\": 1}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": []}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"vertices\": {\"\": {}}}]}",
	    "{\"samples\": [{\"timestamp\": 1, \"global\": {\"LOAD\": 1}}]}",
	    "{\"samples\": {}}",
	    "{\"samples\": [], \"samples\": []}",
	    "{\"samples\": [] \"now\": 1}",
	    "{\"now\": tru, \"samples\": []}",
	    "{\"now\": \"\\\", \"samples\": []}",
	    "[{\"samples\": []}]",
	    "{\"now\": 1}",
	    "{\f\"samples\": []}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct as_samples h;
		size_t b, e;
		if (as_plan_samples_from_text(docs[i], strlen(docs[i]), &h, &b, &e) != 0)
			fail_msg("read from the text: %s", docs[i]);
		assert_int_equal(h.n, 0);
	}
}

static char *plan_errors(const char *text)
{
	struct strv errors = {0};
	char *out = NULL;
	int r = autoscaler_plan(text, strlen(text), NULL, &out, &errors);
	free(out);
	struct strbuf b = {0};
	for (size_t i = 0; i < errors.n; i++)
		strbuf_appendf(&b, "%s%s", i ? "\n" : "", errors.v[i]);
	char *joined = r < 0 ? strbuf_steal(&b) : xstrdup("(accepted)");
	if (r >= 0)
		strbuf_free(&b);
	strv_free(&errors);
	return joined;
}

#define VERTICES "\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"maxParallelism\": 8}]"

/* The messages are the ones the whole document read by cJSON gives, byte offsets included. */
static void test_the_messages_are_the_usual_ones(void **state)
{
	(void)state;
	char *e =
	    plan_errors("{" VERTICES ", \"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOUD\": 1}}}]}");
	assert_string_equal(e, "samples[0].vertices.a.LOUD: unknown metric (did you mean \"LOAD\"?)");
	free(e);
	e = plan_errors("{" VERTICES ", \"samples\": [{\"timestamp\": 5}, {\"timestamp\": 5}]}");
	assert_string_equal(e, "samples[1].timestamp: must be after the previous sample's (oldest first)");
	free(e);
	e = plan_errors("{" VERTICES ", \"samples\": [{\"timestamp\": 5}]}");
	assert_string_equal(e, "samples: at least 2 samples are needed to evaluate rates (got 1)");
	free(e);
	e = plan_errors("{" VERTICES
	                ", \"samples\": [{\"timestamp\": 1, \"vertices\": {\"b\": {}}}, {\"timestamp\": 2}]}");
	assert_string_equal(e, "samples[0].vertices.b: no such vertex in vertices");
	free(e);
	/* a decimal string is left to cJSON and as_json_double, which take it */
	e = plan_errors(
	    "{" VERTICES
	    ", \"samples\": [{\"timestamp\": 1, \"vertices\": {\"a\": {\"LOAD\": \"0.5\", \"NUM_RECORDS_IN\": 0}}}, "
	    "{\"timestamp\": 2000, \"vertices\": {\"a\": {\"LOAD\": 0.5, \"NUM_RECORDS_IN\": 9}}}]}");
	assert_string_equal(e, "(accepted)");
	free(e);
	/* not valid JSON after (or before) a window that reads well: the byte where cJSON stops in the whole text */
	static const char *const broken[] = {
	    "{\"samples\": [{\"timestamp\": 1}, {\"timestamp\": 2}], " VERTICES ", \"now\": [}",
	    "{\"now\": [1,, \"samples\": [{\"timestamp\": 1}, {\"timestamp\": 2}]}",
	    "{\"samples\": [{\"timestamp\": 1}, {\"timestamp\": 2}], \"config\": {\"a\": \"\\q\"}}",
	};
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		const char *end = NULL;
		assert_null(cJSON_ParseWithLengthOpts(broken[i], strlen(broken[i]), &end, false));
		char *want = xasprintf("(document): not valid JSON (at byte %zu)", (size_t)(end - broken[i]));
		e = plan_errors(broken[i]);
		assert_string_equal(e, want);
		free(want);
		free(e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_window_is_cjsons_bit_for_bit),
	    cmocka_unit_test(test_it_gives_up_on_what_it_does_not_read_as_cjson_does),
	    cmocka_unit_test(test_the_messages_are_the_usual_ones),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

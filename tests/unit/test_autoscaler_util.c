/* test_autoscaler_util: the autoscaler's numeric rules (Java's Math.round, (int) casts, BigDecimal
 * HALF_UP/CEILING of the shortest decimal form, Double.toString), JSON numbers with NaN and infinities,
 * the window functions rate/avg/avgOrRate of reference 2.1, and Flink's "k:v,k:v" map syntax. Every
 * expected value is worked out by hand in the comments. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

static void test_jround(void **state)
{
	(void)state;
	assert_int_equal(as_jround(2.5), 3);   /* floor(3.0) */
	assert_int_equal(as_jround(-2.5), -2); /* floor(-2.0) */
	assert_int_equal(as_jround(-0.5), 0);
	assert_int_equal(as_jround(-0.5000000000000001), -1);
	/* the largest double below 0.5: x + 0.5 rounds to 1.0 in double arithmetic, Java still gives 0 */
	assert_int_equal(as_jround(0.49999999999999994), 0);
	assert_int_equal(as_jround(1595.2380952380952), 1595); /* 1000*300/1800 + 1000/0.7 */
	assert_int_equal(as_jround(2666.6666666666665), 2667); /* 1000*300/1800 + 1000/0.4 */
	assert_int_equal(as_jround(NAN), 0);
	assert_true(as_jround(INFINITY) == INT64_MAX);
	assert_true(as_jround(-INFINITY) == INT64_MIN);
	assert_true(as_jround(1e300) == INT64_MAX);
	assert_true(as_jround(4503599627370497.0) == 4503599627370497LL); /* above 2^52: already integral */
}

static void test_java_casts_and_floor(void **state)
{
	(void)state;
	assert_int_equal(as_java_d2i(NAN), 0);
	assert_int_equal(as_java_d2i(3e9), INT32_MAX);
	assert_int_equal(as_java_d2i(-3e9), INT32_MIN);
	assert_int_equal(as_java_d2i(INFINITY), INT32_MAX);
	assert_int_equal(as_java_d2i(1.9), 1);   /* truncation */
	assert_int_equal(as_java_d2i(-1.7), -1); /* toward zero */
	assert_double(floor(-1.5), -2);
	assert_double(floor(2.0), 2);
	assert_double(ceil(0.8), 1);
	assert_double(ceil(-0.8), 0);
	assert_double(ceil(3.0000000000000004), 4);
	assert_double(ceil(1e300), 1e300);
	assert_double(ceil(NAN), NAN);
	assert_double(as_jmax(0, NAN), NAN); /* Math.max(0, NaN) is NaN */
	assert_double(as_jmin(NAN, 1), NAN);
	assert_double(as_jmax(-3, 0), 0);
}

static void test_round3(void **state)
{
	(void)state;
	/* Double.toString(1.0005) is "1.0005": HALF_UP gives 1.001 (the double itself is 1.000499999...) */
	assert_double(as_round3(1.0005), 1.001);
	/* "2.6755" -> 2.676, where floor(x * 1000 + 0.5) / 1000 would give 2.675 */
	assert_double(as_round3(2.6755), 2.676);
	assert_double(as_round3(-1.0005), -1.001); /* HALF_UP rounds away from zero */
	assert_double(as_round3(2.0004), 2.0);
	assert_double(as_round3(1052.6315789473683), 1052.632); /* 1000 / 0.95 */
	assert_double(as_round3(123456789.12345), 123456789.123);
	assert_double(as_round3(0.0005), 0.001);
	/* 0.0004 rounds to 0: the original value is kept instead */
	assert_double(as_round3(0.0004), 0.0004);
	assert_double(as_round3(-0.0001), -0.0001);
	assert_double(as_round3(0.9996), 1.0);
	assert_double(as_round3(999.9995), 1000.0);
	assert_double(as_round3(1e20), 1e20);
	assert_double(as_round3(0), 0);
	assert_double(as_round3(NAN), NAN);
	assert_double(as_round3(INFINITY), INFINITY);
	assert_double(as_round3(-INFINITY), -INFINITY);
}

/* as_round3 decides most values without formatting them; as_round3_digits always goes through the shortest
 * decimal digits. Both must agree bit for bit on every kind of value: random magnitudes, values one to three
 * ulps from a tie at the 4th decimal, from a multiple of 0.001, products and quotients of decimals, random
 * bit patterns, short decimals, and their negatives. (A longer run over the same kinds of values, 15 M of them, found
 * no difference either.) */
static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double nudge(uint64_t *s, double x)
{
	for (int j = (int)(xorshift(s) % 4); j > 0; j--)
		x = nextafter(x, xorshift(s) & 1 ? INFINITY : 0);
	return x;
}

static double round3_case(uint64_t *s)
{
	double u = (double)(xorshift(s) >> 11) * 0x1p-53, x;
	switch (xorshift(s) % 9) {
	case 0:
		x = u * pow(10, (int)(xorshift(s) % 30) - 12);
		break;
	case 1: /* next to a tie: k/1000 + 0.0005 */
		x = nudge(s, (double)(xorshift(s) % 1000000000000ull) / 1000 + 0.0005);
		break;
	case 2: /* next to a multiple of 0.001 */
		x = nudge(s, (double)(xorshift(s) % 1000000000ull) / 1000);
		break;
	case 3: {
		uint64_t bits = xorshift(s);
		memcpy(&x, &bits, sizeof(x));
		break;
	}
	case 4:
		x = (double)(xorshift(s) % 1000000) * 0.1 * (double)(xorshift(s) % 100) / 7;
		break;
	case 5:
		x = (double)(xorshift(s) % 100000) / (double)(1 + xorshift(s) % 10000);
		break;
	case 6: {
		char b[64];
		snprintf(b, sizeof(b), "%.*g", (int)(1 + xorshift(s) % 17), u * pow(10, (int)(xorshift(s) % 16) - 4));
		x = strtod(b, NULL);
		break;
	}
	case 7: /* integral, up to far above 10^12 (a long-running job's record counters) */
		x = (double)(xorshift(s) % 100000000000000000ull) * (xorshift(s) & 1 ? 1 : 0.5);
		break;
	default:
		x = (double)(xorshift(s) % 1000000) / 1000.0 * (1 + (double)((int)(xorshift(s) % 21) - 10) * 0x1p-52);
		break;
	}
	return xorshift(s) & 1 ? -x : x;
}

static void test_round3_fast_is_exact(void **state)
{
	(void)state;
	uint64_t seed = 88172645463325252ull;
	for (int i = 0; i < 60000; i++) {
		double x = round3_case(&seed), fast = as_round3(x), ref = as_round3_digits(x);
		if (memcmp(&fast, &ref, sizeof(fast)))
			fail_msg("as_round3(%.17g) = %.17g, the decimal digits give %.17g", x, fast, ref);
	}
	static const double edge[] = {0.30000000000000004,
	                              1.2100000000000002,
	                              2.675,
	                              1.0005,
	                              0.0005,
	                              0.00049999999999999,
	                              1e-7,
	                              123.4565,
	                              999999999999.9995,
	                              1e12,
	                              1e12 + 0.5,
	                              1500000000123.0,
	                              123456789012345678.0,
	                              0x1p60,
	                              1e300,
	                              4503599627370495.5,
	                              -0.0,
	                              5e-324,
	                              0.0015,
	                              0.0025,
	                              1.0000000000000002,
	                              0.9999999999999999};
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		double fast = as_round3(edge[i]), ref = as_round3_digits(edge[i]);
		if (memcmp(&fast, &ref, sizeof(fast)))
			fail_msg("as_round3(%.17g) = %.17g, the decimal digits give %.17g", edge[i], fast, ref);
	}
}

/* The shortest decimal digits as the loop over every length from 1 to 17 finds them (the reference): the first
 * length whose rounding of |x| reads back as |x|. */
static void ref_shortest(double x, char digits[24], int *exp10)
{
	char buf[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, fabs(x));
		if (strtod(buf, NULL) == fabs(x))
			break;
	}
	size_t n = 0;
	const char *p = buf;
	for (; *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[n++] = *p;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	*exp10 = atoi(p + 1);
}

/* Double.toString's digits and exponent: "123.45" is 12345 at 10^2, "1.0E-4" is 1 at 10^-4. */
static void java_digits(const char *s, char digits[24], int *exp10)
{
	const char *p = s + (*s == '-'), *e = strchr(p, 'E');
	size_t n = 0;
	int point = -1, lead = 0;
	for (const char *q = p; *q && q != e; q++) {
		if (*q == '.') {
			point = (int)(q - p);
			continue;
		}
		if (n == 0 && *q == '0') {
			lead++;
			continue;
		}
		digits[n++] = *q;
	}
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	*exp10 = e ? atoi(e + 1) : point - 1 - lead;
	if (!e && point > 0 && lead > point - 1) /* 0.00ddd */
		*exp10 = point - 1 - lead;
}

/* shortest_digits tries 15, 16 and 17 digits only (not every length from 1): it finds the same digits as the full
 * loop, seen through Double.toString and the rounding of the decimal form, for every kind of value round3_case makes
 * (subnormal ones included) and exact short decimals. */
static void test_shortest_digits_are_the_loops(void **state)
{
	(void)state;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	char got[40], want[24], gd[24];
	for (int i = 0; i < 40000; i++) {
		double x = i % 4 == 3
		               ? strtod((snprintf(got, sizeof(got), "%.*g", 1 + i % 15, round3_case(&seed)), got), NULL)
		               : round3_case(&seed);
		if (!isfinite(x) || x == 0)
			continue;
		int we, ge;
		ref_shortest(x, want, &we);
		as_java_double_str(x, got, sizeof(got));
		java_digits(got, gd, &ge);
		if (strcmp(gd, want) || ge != we)
			fail_msg("Double.toString(%.17g) = %s: digits %s at 10^%d, the loop gives %s at 10^%d", x, got,
			         gd, ge, want, we);
	}
	assert_double(as_round_up2(5e-324), 0.01);
	assert_double(as_round3_digits(2.2250738585072014e-308 * 3), 2.2250738585072014e-308 * 3);
}

static void test_round_up2(void **state)
{
	(void)state;
	assert_double(as_round_up2(0.571), 0.58);
	assert_double(as_round_up2(0.57), 0.57); /* the double 0.57 is 0.56999..., its decimal form is 0.57 */
	assert_double(as_round_up2(0.5), 0.5);
	assert_double(as_round_up2(0.501), 0.51);
	assert_double(as_round_up2(0.999), 1.0);
	assert_double(as_round_up2(0.7777777777777778), 0.78);
}

static void test_java_double_str(void **state)
{
	(void)state;
	static const struct {
		double x;
		const char *s;
	} cases[] = {
	    {100.0, "100.0"},
	    {1052.632, "1052.632"},
	    {1e7, "1.0E7"},
	    {1.0e-4, "1.0E-4"},
	    {0.001, "0.001"},
	    {-0.5, "-0.5"},
	    {123456.789, "123456.789"},
	    {1.2345e-5, "1.2345E-5"},
	    {9999999.0, "9999999.0"},
	    {0.0, "0.0"},
	    {-0.0, "-0.0"},
	    {12345678.9, "1.23456789E7"},
	};
	char buf[40];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		as_java_double_str(cases[i].x, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].s);
	}
	as_java_double_str(NAN, buf, sizeof(buf));
	assert_string_equal(buf, "NaN");
	as_java_double_str(-INFINITY, buf, sizeof(buf));
	assert_string_equal(buf, "-Infinity");
}

static void test_json_numbers(void **state)
{
	(void)state;
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, as_json_number(NAN));
	cJSON_AddItemToArray(a, as_json_number(INFINITY));
	cJSON_AddItemToArray(a, as_json_number(-INFINITY));
	cJSON_AddItemToArray(a, as_json_number(1.5));
	char *s = cJSON_PrintUnformatted(a);
	assert_string_equal(s, "[\"NaN\",\"Infinity\",\"-Infinity\",1.5]");
	free(s);
	double v;
	assert_int_equal(as_json_double(cJSON_GetArrayItem(a, 0), &v), 0);
	assert_true(isnan(v));
	assert_int_equal(as_json_double(cJSON_GetArrayItem(a, 1), &v), 0);
	assert_true(isinf(v) && v > 0);
	assert_int_equal(as_json_double(cJSON_GetArrayItem(a, 2), &v), 0);
	assert_true(isinf(v) && v < 0);
	cJSON_Delete(a);
	static const char *const good[] = {"2", "\"2.5\"", "null", "\"+Infinity\""};
	static const char *const bad[] = {"\"abc\"", "\"nan\"", "\"0x10\"", "\"inf\"", "true", "{}", "\" 1\""};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cJSON *j = cJSON_Parse(good[i]);
		assert_int_equal(as_json_double(j, &v), 0);
		cJSON_Delete(j);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *j = cJSON_Parse(bad[i]);
		assert_int_equal(as_json_double(j, &v), -EINVAL);
		cJSON_Delete(j);
	}
	int64_t x;
	cJSON *j = cJSON_Parse("[1.5, 3, -1, 9007199254740994]");
	assert_int_equal(as_json_int64(cJSON_GetArrayItem(j, 0), 0, 10, &x), -EINVAL); /* not integral */
	assert_int_equal(as_json_int64(cJSON_GetArrayItem(j, 1), 0, 10, &x), 0);
	assert_int_equal(x, 3);
	assert_int_equal(as_json_int64(cJSON_GetArrayItem(j, 2), 0, 10, &x), -EINVAL);        /* below min */
	assert_int_equal(as_json_int64(cJSON_GetArrayItem(j, 3), 0, INT64_MAX, &x), -EINVAL); /* above 2^53 */
	cJSON_Delete(j);

	/* evaluated metrics: a number goes to the metric's own field; both fields as an object */
	struct as_eval_metric m;
	j = cJSON_Parse("{\"current\": 1, \"average\": \"Infinity\"}");
	assert_int_equal(as_eval_metric_from_json(j, 3, &m), 0);
	assert_double(m.current, 1);
	assert_double(m.average, INFINITY);
	cJSON_Delete(j);
	j = as_eval_metric_to_json(&m, 3);
	char *out = cJSON_PrintUnformatted(j);
	assert_string_equal(out, "{\"current\":1,\"average\":\"Infinity\"}");
	free(out);
	cJSON_Delete(j);
	j = cJSON_Parse("7");
	assert_int_equal(as_eval_metric_from_json(j, 2, &m), 0);
	assert_double(m.average, 7);
	assert_double(m.current, NAN);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"now\": 1}");
	assert_int_equal(as_eval_metric_from_json(j, 2, &m), -EINVAL);
	cJSON_Delete(j);
}

/* Three samples of vertex "v" at 0, 1000 and 2000 ms. */
static void window(struct as_samples *h, const double *values, int metric)
{
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < 3; i++) {
		struct as_sample s;
		as_sample_init(&s, i * 1000);
		as_sample_vertex_metrics(&s, "v", true)[metric] = values[i];
		s.g[AS_GM_GC_PRESSURE] = values[i];
		as_samples_put(h, &s);
	}
}

static void test_window_functions(void **state)
{
	(void)state;
	struct as_samples h;
	/* rate uses only the end points that are not NaN: 1000 * (30 - 10) / (2000 - 0) = 10 per second */
	window(&h, (double[]){10, NAN, 30}, AS_VM_NUM_RECORDS_IN);
	assert_double(as_rate(&h, "v", AS_VM_NUM_RECORDS_IN), 10);
	assert_double(as_rate(&h, NULL, AS_GM_GC_PRESSURE), 10);
	assert_double(as_rate(&h, "w", AS_VM_NUM_RECORDS_IN), NAN); /* an unknown vertex */
	assert_double(as_latest(&h, "v", AS_VM_NUM_RECORDS_IN), 30);
	as_samples_free(&h);
	/* one value only: NaN */
	window(&h, (double[]){NAN, 5, NAN}, AS_VM_LAG);
	assert_double(as_rate(&h, "v", AS_VM_LAG), NAN);
	assert_double(as_avg(&h, "v", AS_VM_LAG, 1), 5);
	assert_double(as_avg(&h, "v", AS_VM_LAG, 2), NAN); /* fewer finite values than minN */
	as_samples_free(&h);
	/* avg skips infinities: (10 + 20) / 2 = 15 */
	window(&h, (double[]){10, INFINITY, 20}, AS_VM_OBSERVED_TPR);
	assert_double(as_avg(&h, "v", AS_VM_OBSERVED_TPR, 2), 15);
	as_samples_free(&h);
	/* nothing finite, something infinite: +Infinity (even with minN above the count) */
	window(&h, (double[]){INFINITY, NAN, INFINITY}, AS_VM_OBSERVED_TPR);
	assert_double(as_avg(&h, "v", AS_VM_OBSERVED_TPR, 2), INFINITY);
	as_samples_free(&h);
	window(&h, (double[]){NAN, NAN, NAN}, AS_VM_OBSERVED_TPR);
	assert_double(as_avg(&h, "v", AS_VM_OBSERVED_TPR, 1), NAN);
	as_samples_free(&h);
	/* avgOrRate: the per-second average when finite, else the accumulated counter's rate */
	window(&h, (double[]){0, 2000, 4000}, AS_VM_NUM_RECORDS_IN);
	assert_double(as_avg_or_rate(&h, "v", AS_VM_NUM_RECORDS_IN_PER_SECOND, AS_VM_NUM_RECORDS_IN), 2000);
	for (size_t i = 0; i < h.n; i++)
		as_sample_vertex_metrics(&h.s[i], "v", false)[AS_VM_NUM_RECORDS_IN_PER_SECOND] = 1500;
	assert_double(as_avg_or_rate(&h, "v", AS_VM_NUM_RECORDS_IN_PER_SECOND, AS_VM_NUM_RECORDS_IN), 1500);
	/* samples are kept in timestamp order; a sample at an existing timestamp replaces it */
	struct as_sample s;
	as_sample_init(&s, 1000);
	as_sample_vertex_metrics(&s, "v", true)[AS_VM_NUM_RECORDS_IN] = 9;
	as_samples_put(&h, &s);
	assert_int_equal(h.n, 3);
	assert_double(as_sample_vertex_get(&h.s[1], "v")[AS_VM_NUM_RECORDS_IN], 9);
	as_samples_drop_before(&h, 1000);
	assert_int_equal(h.n, 2);
	assert_int_equal(h.s[0].ts, 1000);
	as_samples_free(&h);
}

static void test_pmap(void **state)
{
	(void)state;
	struct as_pmap m;
	assert_int_equal(as_pmap_parse_flink(" a : 3 , b:4,,", &m), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(as_pmap_get(&m, "a"), 3);
	assert_int_equal(as_pmap_get(&m, "b"), 4);
	assert_int_equal(as_pmap_get(&m, "c"), -1);
	char *s = as_pmap_to_flink(&m);
	assert_string_equal(s, "a:3,b:4");
	free(s);
	struct as_pmap n = {0};
	as_pmap_set(&n, "b", 4);
	as_pmap_set(&n, "a", 3);
	assert_true(as_pmap_equal(&m, &n));
	as_pmap_set(&n, "a", 5);
	assert_false(as_pmap_equal(&m, &n));
	as_pmap_free(&m);
	as_pmap_free(&n);
	static const char *const bad[] = {"a", "a:0", "a:x", ":3", "a:-1", "a:99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(as_pmap_parse_flink(bad[i], &m), -EINVAL);
	assert_int_equal(as_pmap_parse_flink("", &m), 0);
	assert_int_equal(m.n, 0);
}

static void test_pretty(void **state)
{
	(void)state;
	cJSON *j = cJSON_Parse("{\"a\": [1, {\"b\": \"x\\\"y\"}], \"c\": {}, \"d\": []}");
	char *s = as_json_pretty(j);
	assert_string_equal(
	    s, "{\n  \"a\": [\n    1,\n    {\n      \"b\": \"x\\\"y\"\n    }\n  ],\n  \"c\": {},\n  \"d\": []\n}\n");
	free(s);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_jround),
	    cmocka_unit_test(test_java_casts_and_floor),
	    cmocka_unit_test(test_round3),
	    cmocka_unit_test(test_round3_fast_is_exact),
	    cmocka_unit_test(test_shortest_digits_are_the_loops),
	    cmocka_unit_test(test_round_up2),
	    cmocka_unit_test(test_java_double_str),
	    cmocka_unit_test(test_json_numbers),
	    cmocka_unit_test(test_window_functions),
	    cmocka_unit_test(test_pmap),
	    cmocka_unit_test(test_pretty),
	};
	return cmocka_run_group_tests_name("autoscaler_util", tests, NULL, NULL);
}

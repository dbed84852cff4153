/* test_autoscaler_jsonout: the autoscaler's JSON writer gives cJSON's text byte for byte: unformatted as
 * cJSON_PrintUnformatted, indented as before it existed (each leaf as cJSON_PrintUnformatted prints it),
 * on generated documents with numbers of every kind (ints, integral doubles, 3-decimal values, values next
 * to them, huge, tiny, negative, random bit patterns), strings with every escape and UTF-8, and nesting. */
#include "unit.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double number(uint64_t *s)
{
	double u = (double)(xorshift(s) >> 11) * 0x1p-53, x;
	switch (xorshift(s) % 9) {
	case 0:
		x = (double)(int64_t)(xorshift(s) % 5000000000ull) - 2500000000.0; /* around the int range */
		break;
	case 1:
		x = (double)(xorshift(s) % 1000000000000000000ull) / 1000; /* 3 decimals, some beyond 10^12 */
		break;
	case 2:
		x = (double)(xorshift(s) % 100000000) / 1000;
		break;
	case 3:
		x = nextafter((double)(xorshift(s) % 100000000) / 1000, xorshift(s) & 1 ? INFINITY : 0);
		break;
	case 4:
		x = u * pow(10, (int)(xorshift(s) % 40) - 20);
		break;
	case 5: {
		uint64_t bits = xorshift(s);
		memcpy(&x, &bits, sizeof(x));
		if (isnan(x) || isinf(x))
			x = 0.5;
		break;
	}
	case 6:
		x = (double)(xorshift(s) % (1ull << 53));
		break;
	case 7:
		x = (double)(xorshift(s) % 1000000) / (double)(1 + xorshift(s) % 1000);
		break;
	default:
		x = as_round3(u * 1e6);
		break;
	}
	return xorshift(s) & 1 ? -x : x;
}

static char *string(uint64_t *s)
{
	static const char *const parts[] = {
	    "a",  "NUM_RECORDS_IN", "\"",   "\\", "\b", "\f", "\n",   "\r",
	    "\t", "\x01",           "\x1f", " ",  "é",  "/",  "\x7f", "bc764cd8ddf7a0cf"};
	struct strbuf b = {0};
	strbuf_append(&b, "");
	for (int n = (int)(xorshift(s) % 5); n > 0; n--)
		strbuf_append(&b, parts[xorshift(s) % (sizeof(parts) / sizeof(parts[0]))]);
	return strbuf_steal(&b);
}

static cJSON *value(uint64_t *s, int depth)
{
	unsigned k = (unsigned)(xorshift(s) % (depth < 4 ? 8 : 5));
	switch (k) {
	case 0:
	case 1:
		return cJSON_CreateNumber(number(s));
	case 2: {
		char *t = string(s);
		cJSON *j = cJSON_CreateString(t);
		free(t);
		return j;
	}
	case 3:
		return xorshift(s) & 1 ? cJSON_CreateBool(xorshift(s) & 1) : cJSON_CreateNull();
	case 4:
		return cJSON_CreateNumber((double)(int)(xorshift(s) % 100000));
	default: {
		bool obj = k != 5;
		cJSON *j = obj ? cJSON_CreateObject() : cJSON_CreateArray();
		for (int n = (int)(xorshift(s) % 6); n > 0; n--) {
			cJSON *c = value(s, depth + 1);
			if (obj) {
				char *name = string(s);
				cJSON_AddItemToObject(j, name, c);
				free(name);
			} else {
				cJSON_AddItemToArray(j, c);
			}
		}
		return j;
	}
	}
}

/* the indented form as it was written before as_jsonout: cJSON_PrintUnformatted of every leaf and key */
static void old_pretty(struct strbuf *b, const cJSON *j, int depth)
{
	bool obj = cJSON_IsObject(j), arr = cJSON_IsArray(j);
	if (!obj && !arr) {
		char *leaf = cJSON_PrintUnformatted(j);
		strbuf_append(b, leaf ? leaf : "null");
		free(leaf);
		return;
	}
	if (!j->child) {
		strbuf_append(b, obj ? "{}" : "[]");
		return;
	}
	strbuf_append(b, obj ? "{\n" : "[\n");
	for (const cJSON *c = j->child; c; c = c->next) {
		strbuf_appendf(b, "%*s", (depth + 1) * 2, "");
		if (obj) {
			cJSON *key = cJSON_CreateString(c->string);
			char *k = cJSON_PrintUnformatted(key);
			strbuf_appendf(b, "%s: ", k);
			free(k);
			cJSON_Delete(key);
		}
		old_pretty(b, c, depth + 1);
		strbuf_append(b, c->next ? ",\n" : "\n");
	}
	strbuf_appendf(b, "%*s%s", depth * 2, "", obj ? "}" : "]");
}

static void test_same_text_as_cjson(void **state)
{
	(void)state;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 3000; i++) {
		cJSON *doc = value(&seed, 0);
		char *want = cJSON_PrintUnformatted(doc), *got = as_json_unformatted(doc);
		if (strcmp(want, got))
			fail_msg("as_json_unformatted gives\n%s\ncJSON gives\n%s", got, want);
		struct strbuf b = {0};
		old_pretty(&b, doc, 0);
		strbuf_append(&b, "\n");
		char *pretty = as_json_pretty(doc);
		if (strcmp(b.buf, pretty))
			fail_msg("as_json_pretty gives\n%s\nexpected\n%s", pretty, b.buf);
		free(pretty);
		strbuf_free(&b);
		free(want);
		free(got);
		cJSON_Delete(doc);
	}
}

static void test_numbers_as_cjson(void **state)
{
	(void)state;
	uint64_t seed = 0x2545f4914f6cdd1dull;
	static const double edge[] = {0,
	                              -0.0,
	                              1,
	                              -1,
	                              2147483647.0,
	                              -2147483648.0,
	                              2147483648.0,
	                              1e15,
	                              1e15 - 1,
	                              999999999999.999,
	                              1e12,
	                              0.001,
	                              0.0005,
	                              1e-7,
	                              0.1 + 0.2,
	                              1052.632,
	                              2105.264,
	                              9007199254740993.0,
	                              1e300,
	                              5e-324};
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]) + 200000; i++) {
		double x = i < sizeof(edge) / sizeof(edge[0]) ? edge[i] : number(&seed);
		cJSON *j = cJSON_CreateNumber(x);
		char *want = cJSON_PrintUnformatted(j), *got = as_json_unformatted(j);
		if (strcmp(want, got))
			fail_msg("%.17g: as_json_unformatted gives %s, cJSON %s", x, got, want);
		free(want);
		free(got);
		cJSON_Delete(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_text_as_cjson),
	    cmocka_unit_test(test_numbers_as_cjson),
	};
	return cmocka_run_group_tests_name("autoscaler_jsonout", tests, NULL, NULL);
}

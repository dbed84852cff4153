/* as_jsonout: the autoscaler's JSON text, written straight into one buffer: `plan`'s indented output and the
 * state document on the volume. Byte for byte what cJSON prints (cJSON_PrintUnformatted for the state, and
 * each leaf of the indented form): the same escapes, and numbers as cJSON's print_number gives them
 * ("%1.15g" when that reads back within DBL_EPSILON, else "%1.17g"; an integer as its digits).
 * The numbers the autoscaler writes are almost all integers or have at most 3 decimals (every stored metric
 * is rounded so); for those the digits are written without printf, whose result they are. It is not for
 * parsing (cJSON) or for what the documents hold (as_state.c, as_plan.c). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

static void put_uint(struct strbuf *b, uint64_t v)
{
	char d[24];
	int n = 0;
	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	char out[24];
	for (int i = 0; i < n; i++)
		out[i] = d[n - 1 - i];
	strbuf_appendn(b, out, (size_t)n);
}

/* cJSON's compare_double */
static bool close_enough(double a, double b)
{
	double max = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
	return fabs(a - b) <= max * DBL_EPSILON;
}

/* %1.15g of an integral |d| below 10^15, and of m/1000 (m below 10^15) when d is the double nearest to it:
 * 15 significant digits hold either exactly (the double is within 2^-53 d of it, far below half a unit of
 * the 15th digit), %g writes them in fixed notation (10^-3 <= |d| < 10^15) without trailing zeros, and they
 * read back as d. Returns false for any other d. */
static bool put_short_decimal(struct strbuf *b, double d)
{
	double a = fabs(d);
	if (!(a < 1e12))
		return false;
	double m = floor(a * 1000.0 + 0.5);
	if (m < 1 || m / 1000.0 != a)
		return false;
	uint64_t mi = (uint64_t)m;
	if (d < 0)
		strbuf_append(b, "-");
	put_uint(b, mi / 1000);
	unsigned frac = (unsigned)(mi % 1000);
	if (frac) {
		char f[5] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10), (char)('0' + frac % 10), 0};
		size_t n = 4;
		while (f[n - 1] == '0')
			n--;
		strbuf_appendn(b, f, n);
	}
	return true;
}

/* cJSON 1.7.15 prints -0.0 as "%1.15g" does, "-0"; later versions print a number equal to its valueint
 * with "%d", "0". Every other integral value reads the same either way. Asked once. */
static const char *negative_zero(void)
{
	static char text[8];
	if (!text[0]) {
		cJSON *z = cJSON_CreateNumber(-0.0);
		char *t = cJSON_PrintUnformatted(z);
		snprintf(text, sizeof(text), "%s", t && !strcmp(t, "0") ? "0" : "-0");
		free(t);
		cJSON_Delete(z);
	}
	return text;
}

static void put_number(struct strbuf *b, const cJSON *j)
{
	double d = j->valuedouble;
	if (isnan(d) || isinf(d)) {
		strbuf_append(b, "null");
		return;
	}
	if (d == 0) {
		strbuf_append(b, signbit(d) ? negative_zero() : "0");
		return;
	}
	if (fabs(d) < 1e15 && d == floor(d)) { /* what "%d" or "%1.15g" write */
		if (d < 0)
			strbuf_append(b, "-");
		put_uint(b, (uint64_t)fabs(d));
		return;
	}
	if (put_short_decimal(b, d))
		return;
	char buf[32];
	snprintf(buf, sizeof(buf), "%1.15g", d);
	char *end = NULL;
	double back = strtod(buf, &end);
	if (end == buf || !close_enough(back, d))
		snprintf(buf, sizeof(buf), "%1.17g", d);
	strbuf_append(b, buf);
}

static void put_string(struct strbuf *b, const char *s)
{
	strbuf_append(b, "\"");
	const char *run = s;
	for (const char *p = s ? s : ""; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 32 && c != '"' && c != '\\')
			continue;
		strbuf_appendn(b, run, (size_t)(p - run));
		run = p + 1;
		char esc[8];
		switch (c) {
		case '"':
			strbuf_append(b, "\\\"");
			break;
		case '\\':
			strbuf_append(b, "\\\\");
			break;
		case '\b':
			strbuf_append(b, "\\b");
			break;
		case '\f':
			strbuf_append(b, "\\f");
			break;
		case '\n':
			strbuf_append(b, "\\n");
			break;
		case '\r':
			strbuf_append(b, "\\r");
			break;
		case '\t':
			strbuf_append(b, "\\t");
			break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			strbuf_append(b, esc);
		}
	}
	if (s)
		strbuf_append(b, run);
	strbuf_append(b, "\"");
}

static void indent(struct strbuf *b, int n)
{
	static const char spaces[] = "                                ";
	while (n > 0) {
		int k = n < 32 ? n : 32;
		strbuf_appendn(b, spaces, (size_t)k);
		n -= k;
	}
}

/* depth < 0: unformatted */
static void put_value(struct strbuf *b, const cJSON *j, int depth)
{
	if (cJSON_IsNumber(j)) {
		put_number(b, j);
		return;
	}
	if (cJSON_IsString(j)) {
		put_string(b, j->valuestring);
		return;
	}
	if (cJSON_IsNull(j) || cJSON_IsInvalid(j) || cJSON_IsRaw(j)) {
		strbuf_append(b, cJSON_IsRaw(j) && j->valuestring ? j->valuestring : "null");
		return;
	}
	if (cJSON_IsBool(j)) {
		strbuf_append(b, cJSON_IsTrue(j) ? "true" : "false");
		return;
	}
	bool obj = cJSON_IsObject(j);
	if (!j->child) {
		strbuf_append(b, obj ? "{}" : "[]");
		return;
	}
	strbuf_append(b, obj ? "{" : "[");
	for (const cJSON *c = j->child; c; c = c->next) {
		if (depth >= 0) {
			strbuf_append(b, "\n");
			indent(b, (depth + 1) * 2);
		}
		if (obj) {
			put_string(b, c->string);
			strbuf_append(b, depth >= 0 ? ": " : ":");
		}
		put_value(b, c, depth >= 0 ? depth + 1 : -1);
		if (c->next)
			strbuf_append(b, ",");
	}
	if (depth >= 0) {
		strbuf_append(b, "\n");
		indent(b, depth * 2);
	}
	strbuf_append(b, obj ? "}" : "]");
}

char *as_json_pretty(const cJSON *j)
{
	struct strbuf b = {0};
	put_value(&b, j, 0);
	strbuf_append(&b, "\n");
	return strbuf_steal(&b);
}

char *as_json_unformatted(const cJSON *j)
{
	struct strbuf b = {0};
	put_value(&b, j, -1);
	return strbuf_steal(&b);
}

/* as_util: the autoscaler's small shared pieces: Java's numeric rules (Math.round, (int) casts, BigDecimal
 * rounding of the shortest decimal form, Double.toString), JSON numbers that may be NaN or infinite,
 * the metric name tables, and the window functions rate/avg of reference section 2.1.
 * It is not for any decision logic: that is in as_eval.c and as_scale.c. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "as_internal.h"

/* ---- Java numerics ----
 * Java's Math.floor, Math.ceil and Math.abs are C's floor, ceil and fabs for doubles (IEEE 754, NaN and the
 * infinities passed through), so libm's are used as they are. What differs is below: Math.max/min (NaN wins),
 * Math.round (floor(x + 1/2) exactly, not C's round-half-away-from-zero) and the (int)/(long) casts (saturating,
 * NaN 0, where C's conversion is undefined). */

double as_jmax(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	return a > b ? a : b;
}

double as_jmin(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	return a < b ? a : b;
}

int64_t as_jround(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 9223372036854775807.0)
		return INT64_MAX;
	if (x <= -9223372036854775808.0)
		return INT64_MIN;
	double f = floor(x);
	/* x - floor(x) is exact here, so this is floor(x + 1/2) without the rounding of x + 0.5 */
	int64_t r = (int64_t)f;
	if (x - f >= 0.5)
		r++;
	return r;
}

int32_t as_java_d2i(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 2147483647.0)
		return INT32_MAX;
	if (x <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)x;
}

/* The shortest decimal digits that read back as |x| (as Java's Double.toString picks them):
 * |x| = d0.d1d2... x 10^exp10. x must be finite and non-zero. They are |x| rounded to the fewest digits (1 to 17)
 * that read back as |x|, without trailing zeros. When that is 15 digits or fewer, |x| rounded to 15 digits is the
 * same decimal with zeros after it (DBL_DIG: a decimal of at most 15 digits that reads as a normal double comes
 * back from it at 15 digits), so a normal |x| needs at most three tries (15, 16, 17 digits), not up to 17; a
 * subnormal one, whose precision is lower, tries every length. */
static void shortest_digits(double x, char digits[24], int *exp10)
{
	char buf[40];
	double a = fabs(x);
	for (int prec = a >= DBL_MIN ? DBL_DIG : 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, a);
		if (strtod(buf, NULL) == a)
			break;
	}
	size_t n = 0;
	const char *p = buf;
	for (; *p && *p != 'e'; p++)
		if (isdigit((unsigned char)*p) && n < 23)
			digits[n++] = *p;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	*exp10 = *p == 'e' ? atoi(p + 1) : 0;
}

enum decimal_mode { HALF_UP, CEILING };

/* new BigDecimal(Double.toString(x)).setScale(scale, mode).doubleValue() */
static double decimal_round(double x, int scale, enum decimal_mode mode)
{
	if (!isfinite(x) || x == 0)
		return x;
	char d[24];
	int e;
	shortest_digits(x, d, &e);
	int n = (int)strlen(d);
	bool neg = x < 0;
	if (n - 1 - e <= scale)
		return x;      /* no more decimals than scale already */
	int k = e + 1 + scale; /* digits kept */
	char kept[48];
	int nk = 0;
	bool up;
	if (k <= 0) {
		kept[nk++] = '0';
		if (mode == HALF_UP)
			up = k == 0 && d[0] >= '5';
		else
			up = !neg;
	} else {
		for (int i = 0; i < k; i++)
			kept[nk++] = d[i];
		if (mode == HALF_UP)
			up = d[k] >= '5';
		else
			up = !neg; /* the dropped digits are not all zero */
	}
	kept[nk] = '\0';
	if (up) {
		int i = nk - 1;
		while (i >= 0 && kept[i] == '9')
			kept[i--] = '0';
		if (i >= 0) {
			kept[i]++;
		} else {
			memmove(kept + 1, kept, (size_t)nk + 1);
			kept[0] = '1';
		}
	}
	char buf[64];
	snprintf(buf, sizeof(buf), "%s%se-%d", neg ? "-" : "", kept, scale);
	return strtod(buf, NULL);
}

double as_round3_digits(double x)
{
	double r = decimal_round(x, 3, HALF_UP);
	return r == 0 ? x : r;
}

/* The same result as as_round3_digits without formatting a number, whenever that can be decided from x alone
 * (every value the autoscaler meets but about one in 10^10); otherwise it asks as_round3_digits. Let D be
 * the shortest decimal form of |x| (what decimal_round rounds) and t = fl(1000 |x|):
 * - |x| integral, of any size: D is an integer too, so x. (Below 10^16, |x| itself is a decimal of at most 16
 *   digits that reads back as |x|, so D has no more digits than |x|'s integral part: no fraction. From 10^16 up,
 *   no decimal of at most 17 digits has a fraction.)
 * - m = the integer nearest t, and m / 1000.0 == |x| (IEEE division is correctly rounded, so the decimal
 *   m/1000 reads back as |x|): then D, no longer than m/1000 and with the same leading digit position, has
 *   at most 3 decimals too: x. Conversely, when D has at most 3 decimals, 1000 D is an integer within
 *   |x| 2^-52 of... t, so it is m and m / 1000.0 == |x|.
 * - otherwise D has more than 3 decimals, and |1000 D - t| <= t 2^-52 (D is within half an ulp of |x|, t
 *   within half an ulp of 1000 |x|). When the fraction of t is further than t 2^-48 from 0, 1/2 and 1, the
 *   fraction of 1000 D is on the same side of 1/2 and floor(1000 D) = floor(t): half-up gives
 *   k = floor(t) + (fraction > 1/2), and the double nearest k/1000 is k / 1000.0 (correctly rounded). */
double as_round3(double x)
{
	double a = fabs(x);
	if (a == floor(a) && isfinite(a)) /* integral, zero included */
		return x;
	if (!(a < 1e12)) /* NaN, infinite, huge */
		return !isfinite(x) ? x : as_round3_digits(x);
	double t = a * 1000.0;
	double k = floor(t);
	double frac = t - k; /* exact */
	double m = frac >= 0.5 ? k + 1 : k;
	if (m / 1000.0 == a)
		return x;
	double eps = t * 0x1p-48;
	if (!(frac > eps && frac < 1 - eps && fabs(frac - 0.5) > eps))
		return as_round3_digits(x);
	double r = (frac > 0.5 ? k + 1 : k) / 1000.0;
	if (r == 0)
		return x;
	return x < 0 ? -r : r;
}

double as_round_up2(double x)
{
	return decimal_round(x, 2, CEILING);
}

void as_java_double_str(double x, char *buf, size_t size)
{
	if (isnan(x)) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (isinf(x)) {
		snprintf(buf, size, x > 0 ? "Infinity" : "-Infinity");
		return;
	}
	if (x == 0) {
		snprintf(buf, size, signbit(x) ? "-0.0" : "0.0");
		return;
	}
	char d[24];
	int e;
	shortest_digits(x, d, &e);
	int n = (int)strlen(d);
	struct strbuf b = {0};
	if (x < 0)
		strbuf_append(&b, "-");
	double a = fabs(x);
	if (a >= 1e-3 && a < 1e7) {
		if (e >= 0) {
			for (int i = 0; i <= e; i++)
				strbuf_appendn(&b, i < n ? &d[i] : "0", 1);
			strbuf_append(&b, ".");
			if (n > e + 1)
				strbuf_append(&b, d + e + 1);
			else
				strbuf_append(&b, "0");
		} else {
			strbuf_append(&b, "0.");
			for (int i = 0; i < -e - 1; i++)
				strbuf_append(&b, "0");
			strbuf_append(&b, d);
		}
	} else {
		strbuf_appendn(&b, d, 1);
		strbuf_append(&b, ".");
		strbuf_append(&b, n > 1 ? d + 1 : "0");
		strbuf_appendf(&b, "E%d", e);
	}
	snprintf(buf, size, "%s", b.buf);
	strbuf_free(&b);
}

/* ---- JSON numbers ---- */

cJSON *as_json_number(double x)
{
	if (isnan(x))
		return cJSON_CreateString("NaN");
	if (isinf(x))
		return cJSON_CreateString(x > 0 ? "Infinity" : "-Infinity");
	return cJSON_CreateNumber(x);
}

int as_json_double(const cJSON *j, double *ret)
{
	if (!j)
		return -EINVAL;
	if (cJSON_IsNumber(j)) {
		*ret = j->valuedouble;
		return 0;
	}
	if (cJSON_IsNull(j)) {
		*ret = NAN;
		return 0;
	}
	if (cJSON_IsString(j)) {
		const char *s = j->valuestring;
		if (!strcmp(s, "NaN")) {
			*ret = NAN;
			return 0;
		}
		if (!strcmp(s, "Infinity") || !strcmp(s, "+Infinity")) {
			*ret = INFINITY;
			return 0;
		}
		if (!strcmp(s, "-Infinity")) {
			*ret = -INFINITY;
			return 0;
		}
		/* Flink's REST API sends some values (e.g. JobManager metrics) as decimal strings */
		char *end;
		errno = 0;
		double v = strtod(s, &end);
		if (*s && !isspace((unsigned char)*s) && *end == '\0' && errno == 0 && isfinite(v) &&
		    !strpbrk(s, "xXnNiI")) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

int as_json_int64(const cJSON *j, int64_t min, int64_t max, int64_t *ret)
{
	if (!cJSON_IsNumber(j))
		return -EINVAL;
	double v = j->valuedouble;
	if (!isfinite(v) || v != floor(v) || v < (double)min || v > (double)max || fabs(v) > 9007199254740992.0)
		return -EINVAL;
	*ret = (int64_t)v;
	return 0;
}

cJSON *as_eval_metric_to_json(const struct as_eval_metric *m, int fields)
{
	if (fields == 3) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "current", as_json_number(m->current));
		cJSON_AddItemToObject(o, "average", as_json_number(m->average));
		return o;
	}
	return as_json_number(fields == 2 ? m->average : m->current);
}

int as_eval_metric_from_json(const cJSON *j, int fields, struct as_eval_metric *ret)
{
	struct as_eval_metric m = {NAN, NAN};
	if (cJSON_IsObject(j)) {
		for (const cJSON *c = j->child; c; c = c->next) {
			double *dst = !strcmp(c->string, "current")   ? &m.current
			              : !strcmp(c->string, "average") ? &m.average
			                                              : NULL;
			if (!dst || as_json_double(c, dst) < 0)
				return -EINVAL;
		}
		*ret = m;
		return 0;
	}
	double v;
	if (as_json_double(j, &v) < 0)
		return -EINVAL;
	if (fields & 1)
		m.current = v;
	if (fields & 2)
		m.average = v;
	*ret = m;
	return 0;
}

const char *as_did_you_mean(const char *got, const char *const *candidates, size_t n)
{
	return did_you_mean(got, candidates, n);
}

/* ---- names ---- */

static const char *const vmetric_names[AS_VM_COUNT] = {
    "LAG",          "LOAD", "ACCUMULATED_BUSY_TIME", "NUM_RECORDS_IN", "NUM_RECORDS_OUT", "NUM_RECORDS_IN_PER_SECOND",
    "OBSERVED_TPR",
};
static const char *const gmetric_names[AS_GM_COUNT] = {
    "NUM_TASK_SLOTS_USED",  "GC_PRESSURE",         "HEAP_MEMORY_USED",
    "HEAP_MAX_USAGE_RATIO", "MANAGED_MEMORY_USED", "METASPACE_MEMORY_USED",
};
static const char *const emetric_names[AS_EM_COUNT] = {
    "LOAD",
    "TRUE_PROCESSING_RATE",
    "TARGET_DATA_RATE",
    "CATCH_UP_DATA_RATE",
    "LAG",
    "PARALLELISM",
    "RECOMMENDED_PARALLELISM",
    "MAX_PARALLELISM",
    "NUM_SOURCE_PARTITIONS",
    "SCALE_UP_RATE_THRESHOLD",
    "SCALE_DOWN_RATE_THRESHOLD",
    "EXPECTED_PROCESSING_RATE",
};
/* 1: current, 2: average, 3: both (2.3 - 2.5) */
static const int emetric_fields[AS_EM_COUNT] = {2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static const char *const egmetric_names[AS_EG_COUNT] = {
    "GC_PRESSURE",         "HEAP_MAX_USAGE_RATIO",  "HEAP_MEMORY_USED",
    "MANAGED_MEMORY_USED", "METASPACE_MEMORY_USED", "NUM_TASK_SLOTS_USED",
};
static const int egmetric_fields[AS_EG_COUNT] = {1, 3, 3, 3, 3, 1};

static int name_index(const char *const *names, int n, const char *name)
{
	for (int i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

const char *as_vmetric_name(enum as_vmetric m)
{
	return vmetric_names[m];
}
const char *as_gmetric_name(enum as_gmetric m)
{
	return gmetric_names[m];
}
const char *as_emetric_name(enum as_emetric m)
{
	return emetric_names[m];
}
const char *as_egmetric_name(enum as_egmetric m)
{
	return egmetric_names[m];
}
int as_vmetric_from_name(const char *name)
{
	return name_index(vmetric_names, AS_VM_COUNT, name);
}
int as_gmetric_from_name(const char *name)
{
	return name_index(gmetric_names, AS_GM_COUNT, name);
}
int as_emetric_from_name(const char *name)
{
	return name_index(emetric_names, AS_EM_COUNT, name);
}
int as_egmetric_from_name(const char *name)
{
	return name_index(egmetric_names, AS_EG_COUNT, name);
}
int as_emetric_fields(enum as_emetric m)
{
	return emetric_fields[m];
}
int as_egmetric_fields(enum as_egmetric m)
{
	return egmetric_fields[m];
}

static const char *const ship_names[] = {"HASH",      "REBALANCE", "RESCALE", "FORWARD", "CUSTOM",
                                         "BROADCAST", "GLOBAL",    "SHUFFLE", "UNKNOWN"};

enum as_ship as_ship_from_string(const char *s)
{
	for (int i = 0; s && i < AS_SHIP_UNKNOWN; i++)
		if (!strcasecmp(s, ship_names[i]))
			return (enum as_ship)i;
	return AS_SHIP_UNKNOWN;
}

const char *as_event_type_name(enum as_event_type t)
{
	return t == AS_EVENT_WARNING ? "Warning" : "Normal";
}

/* ---- window functions (2.1) ---- */

void as_wstat_init(struct as_wstat *w)
{
	memset(w, 0, sizeof(*w));
	w->first = w->last = w->latest = NAN;
}

void as_wstat_add(struct as_wstat *w, double v, int64_t ts)
{
	if (isnan(v))
		return;
	if (w->count++ == 0) {
		w->first = v;
		w->first_ts = ts;
	} else {
		w->last = v;
		w->last_ts = ts;
	}
	if (isinf(v)) {
		w->infinite = true;
		return;
	}
	w->sum += v;
	w->finite++;
}

double as_wstat_rate(const struct as_wstat *w)
{
	if (w->count < 2)
		return NAN;
	int64_t dt = w->last_ts - w->first_ts;
	return 1000.0 * (w->last - w->first) / (double)(dt > 1 ? dt : 1);
}

double as_wstat_avg(const struct as_wstat *w, int min_n)
{
	if (w->finite == 0)
		return w->infinite ? INFINITY : NAN;
	if (w->finite < min_n)
		return NAN;
	return w->sum / w->finite;
}

double as_wstat_avg_or_rate(const struct as_wstat *per_sec, const struct as_wstat *accumulated)
{
	double a = as_wstat_avg(per_sec, 1);
	return isfinite(a) ? a : as_wstat_rate(accumulated);
}

static double sample_value(const struct as_sample *s, const char *vertex, int m)
{
	if (!vertex)
		return s->g[m];
	const double *v = as_sample_vertex_get(s, vertex);
	return v ? v[m] : NAN;
}

static void wstat_of(const struct as_samples *h, const char *vertex, int m, struct as_wstat *w)
{
	as_wstat_init(w);
	for (size_t i = 0; i < h->n; i++)
		as_wstat_add(w, sample_value(&h->s[i], vertex, m), h->s[i].ts);
}

double as_rate(const struct as_samples *h, const char *vertex, int m)
{
	struct as_wstat w;
	wstat_of(h, vertex, m, &w);
	return as_wstat_rate(&w);
}

double as_avg(const struct as_samples *h, const char *vertex, int m, int min_n)
{
	struct as_wstat w;
	wstat_of(h, vertex, m, &w);
	return as_wstat_avg(&w, min_n);
}

double as_avg_or_rate(const struct as_samples *h, const char *vertex, int per_sec, int accumulated)
{
	double a = as_avg(h, vertex, per_sec, 1);
	return isfinite(a) ? a : as_rate(h, vertex, accumulated);
}

double as_latest(const struct as_samples *h, const char *vertex, int m)
{
	return h->n ? sample_value(&h->s[h->n - 1], vertex, m) : NAN;
}

void as_window_build(const struct as_topology *t, const struct as_samples *h, struct as_window *ret)
{
	ret->v = t->n <= AS_WINDOW_INLINE ? ret->small : xcalloc(t->n, sizeof(*ret->v));
	for (size_t i = 0; i < t->n; i++)
		for (int m = 0; m < AS_VM_COUNT; m++)
			as_wstat_init(&ret->v[i][m]);
	for (int m = 0; m < AS_GM_COUNT; m++)
		as_wstat_init(&ret->g[m]);
	size_t nhint = 0, *hint = NULL;
	for (size_t i = 0; i < h->n; i++) {
		const struct as_sample *s = &h->s[i];
		bool newest = i + 1 == h->n;
		if (s->n > nhint) {
			hint = xrealloc(hint, s->n * sizeof(*hint));
			for (size_t k = nhint; k < s->n; k++)
				hint[k] = k; /* at first, the topology's order */
			nhint = s->n;
		}
		for (size_t k = 0; k < s->n; k++) {
			int idx = as_topology_find_hinted(t, s->v[k].id, &hint[k]);
			if (idx < 0)
				continue;
			struct as_wstat *w = ret->v[idx];
			for (int m = 0; m < AS_VM_COUNT; m++) {
				as_wstat_add(&w[m], s->v[k].m[m], s->ts);
				if (newest)
					w[m].latest = s->v[k].m[m];
			}
		}
		for (int m = 0; m < AS_GM_COUNT; m++) {
			as_wstat_add(&ret->g[m], s->g[m], s->ts);
			if (newest)
				ret->g[m].latest = s->g[m];
		}
	}
	free(hint);
}

void as_window_free(struct as_window *w)
{
	if (w->v != w->small)
		free(w->v);
	w->v = NULL;
}

/* as_jsonin: `plan`'s metric window read straight from the input's text. A full window of a large job is almost
 * all of a plan document (50 vertices x 91 samples: some 30,000 numbers): read through cJSON, every number is a
 * node, a key string and a strtod, then a lookup by name, and the tree is freed again. Here the top-level
 * "samples" member is read once, in one pass, into the window itself, its numbers converted exactly without
 * strtod whenever that can be done (Clinger's fast path), its metric names matched by length and bytes; the rest
 * of the document (small) still goes to cJSON, with "[]" where the samples were.
 *
 * Only a window that as_samples_from_json_at would accept as it is, written in plain JSON, is read here: any doubt
 * (a syntax cJSON is lenient about, an escape, a string where a number belongs, a duplicate, an unknown name, a
 * timestamp out of order) gives up, and the caller reads the whole document the usual way, whose messages then say
 * what is wrong. So the window, the output and every error are the same as without this file. It is not for what
 * the rest of the document means (as_plan.c) or for the state file (as_state.c). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "as_internal.h"

#define MAX_SAMPLES 100000 /* as_state.c's MAX_ITEMS */
#define MAX_ID_LEN 256     /* as_state.c's */
#define MAX_TS 9007199254740992.0
#define MAX_NUMBER_CHARS 63 /* cJSON reads at most this many characters of a number */

struct reader {
	const char *p, *end;
};

static void skip_ws(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

static bool eat(struct reader *r, char c)
{
	skip_ws(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return true;
	}
	return false;
}

static bool peek(struct reader *r, char c)
{
	skip_ws(r);
	return r->p < r->end && *r->p == c;
}

/* A string without escapes or control characters: *ret points into the text, *ret_len its length. */
static bool plain_string(struct reader *r, const char **ret, size_t *ret_len)
{
	if (!eat(r, '"'))
		return false;
	const char *s = r->p;
	while (r->p < r->end && *r->p != '"') {
		if (*r->p == '\\' || (unsigned char)*r->p < 0x20)
			return false;
		r->p++;
	}
	if (r->p >= r->end)
		return false;
	*ret = s;
	*ret_len = (size_t)(r->p - s);
	r->p++;
	return true;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number in JSON's own grammar, converted to the double nearest to it, as strtod does. Clinger's fast path: a
 * decimal whose digits make an integer w <= 2^53 and whose exponent is within 22 of them is w x 10^e or
 * w / 10^-e, one correctly rounded operation on two exact doubles. Anything longer goes to strtod. */
static bool number(struct reader *r, double *ret)
{
	skip_ws(r);
	const char *s = r->p, *p = s;
	bool neg = p < r->end && *p == '-';
	p += neg;
	if (p >= r->end || !is_digit(*p))
		return false;
	uint64_t w = 0;
	int digits = 0, exp10 = 0;
	if (*p == '0') {
		p++;
	} else {
		for (; p < r->end && is_digit(*p); p++) {
			if (digits < 19) {
				w = w * 10 + (uint64_t)(*p - '0');
				digits += w > 0;
			} else {
				exp10++;
				digits = 20; /* more digits than the fast path takes */
			}
		}
	}
	if (p < r->end && *p == '.') {
		p++;
		if (p >= r->end || !is_digit(*p))
			return false;
		for (; p < r->end && is_digit(*p); p++) {
			if (digits < 19) {
				w = w * 10 + (uint64_t)(*p - '0');
				digits += w > 0;
				exp10--;
			} else {
				digits = 20;
			}
		}
	}
	if (p < r->end && (*p == 'e' || *p == 'E')) {
		p++;
		bool eneg = p < r->end && *p == '-';
		if (p < r->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= r->end || !is_digit(*p))
			return false;
		int e = 0;
		for (; p < r->end && is_digit(*p); p++)
			e = e < 100000 ? e * 10 + (*p - '0') : e;
		exp10 += eneg ? -e : e;
	}
	size_t n = (size_t)(p - s);
	if (n > MAX_NUMBER_CHARS)
		return false;
	r->p = p;
	if (digits <= 19 && w <= (UINT64_C(1) << 53) && exp10 >= -22 && exp10 <= 22) {
		double v = (double)w;
		v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
		*ret = neg ? -v : v;
		return true;
	}
	char buf[MAX_NUMBER_CHARS + 1];
	memcpy(buf, s, n);
	buf[n] = '\0';
	*ret = strtod(buf, NULL);
	return true;
}

static bool literal(struct reader *r, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
		return false;
	r->p += n;
	return true;
}

/* A metric's value as as_json_double reads it: a number, null (NaN), or "NaN", "Infinity", "+Infinity",
 * "-Infinity". (Other strings, decimal ones included, are left to as_json_double.) */
static bool value(struct reader *r, double *ret)
{
	skip_ws(r);
	if (r->p >= r->end)
		return false;
	if (*r->p == 'n') {
		*ret = NAN;
		return literal(r, "null");
	}
	if (*r->p != '"')
		return number(r, ret);
	const char *s;
	size_t n;
	if (!plain_string(r, &s, &n))
		return false;
	if (n == 3 && !memcmp(s, "NaN", 3))
		*ret = NAN;
	else if ((n == 8 && !memcmp(s, "Infinity", 8)) || (n == 9 && !memcmp(s, "+Infinity", 9)))
		*ret = INFINITY;
	else if (n == 9 && !memcmp(s, "-Infinity", 9))
		*ret = -INFINITY;
	else
		return false;
	return true;
}

static int metric_index(const char *s, size_t n, bool global)
{
	static size_t vlen[AS_VM_COUNT], glen[AS_GM_COUNT]; /* the names' lengths, measured once */
	if (!vlen[0]) {
		for (int k = 0; k < AS_GM_COUNT; k++)
			glen[k] = strlen(as_gmetric_name(k));
		for (int k = 0; k < AS_VM_COUNT; k++)
			vlen[k] = strlen(as_vmetric_name(k));
	}
	int count = global ? AS_GM_COUNT : AS_VM_COUNT;
	const size_t *len = global ? glen : vlen;
	for (int k = 0; k < count; k++)
		if (len[k] == n && !memcmp(global ? as_gmetric_name(k) : as_vmetric_name(k), s, n))
			return k;
	return -1;
}

/* {"NAME": value, ...} into m (the names of one kind; the last of a repeated name counts, as in as_state.c) */
static bool metrics(struct reader *r, double *m, bool global)
{
	if (!eat(r, '{'))
		return false;
	if (eat(r, '}'))
		return true;
	do {
		const char *s;
		size_t n;
		int k;
		if (!plain_string(r, &s, &n) || (k = metric_index(s, n, global)) < 0 || !eat(r, ':') ||
		    !value(r, &m[k]))
			return false;
	} while (eat(r, ','));
	return eat(r, '}');
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(((const struct as_sample_vertex *)a)->id, ((const struct as_sample_vertex *)b)->id);
}

/* No vertex named twice: one comparison a vertex when the sample names the vertices of the one before in its
 * order (which had none twice), else sorted. */
static bool distinct(const struct as_sample *s, const struct as_sample *prev)
{
	size_t k = 0;
	while (prev && k < s->n && k < prev->n && !strcmp(s->v[k].id, prev->v[k].id))
		k++;
	if (k == s->n || s->n < 2)
		return true;
	struct as_sample_vertex *sorted = xcalloc(s->n, sizeof(*sorted));
	memcpy(sorted, s->v, s->n * sizeof(*sorted));
	qsort(sorted, s->n, sizeof(*sorted), cmp_id);
	bool ok = true;
	for (k = 1; k < s->n && ok; k++)
		ok = strcmp(sorted[k - 1].id, sorted[k].id) != 0;
	free(sorted);
	return ok;
}

/* {"id": {metrics}, ...} */
static bool vertices(struct reader *r, struct as_sample *s, size_t hint)
{
	if (!eat(r, '{'))
		return false;
	if (eat(r, '}'))
		return true;
	size_t cap = 0;
	do {
		const char *id;
		size_t n;
		if (!plain_string(r, &id, &n) || n == 0 || n > MAX_ID_LEN || !eat(r, ':'))
			return false;
		if (s->n == cap) {
			cap = cap ? 2 * cap : (hint ? hint : 8);
			s->v = xrealloc(s->v, cap * sizeof(*s->v));
		}
		struct as_sample_vertex *v = &s->v[s->n++];
		v->id = xstrndup(id, n);
		for (int k = 0; k < AS_VM_COUNT; k++)
			v->m[k] = NAN;
		if (!metrics(r, v->m, false))
			return false;
	} while (eat(r, ','));
	return eat(r, '}');
}

/* {"timestamp": ms, "vertices": {...}, "global": {...}}, each at most once, the timestamp required */
static bool sample(struct reader *r, const struct as_sample *prev, struct as_sample *s)
{
	as_sample_init(s, -1);
	if (!eat(r, '{'))
		return false;
	bool seen[3] = {false, false, false};
	if (!peek(r, '}')) {
		do {
			const char *key;
			size_t n;
			if (!plain_string(r, &key, &n) || !eat(r, ':'))
				return false;
			int f = n == 9 && !memcmp(key, "timestamp", 9)  ? 0
			        : n == 8 && !memcmp(key, "vertices", 8) ? 1
			        : n == 6 && !memcmp(key, "global", 6)   ? 2
			                                                : -1;
			if (f < 0 || seen[f])
				return false;
			seen[f] = true;
			double ts;
			if (f == 0 && (!number(r, &ts) || !(ts >= 0 && ts <= MAX_TS && ts == floor(ts))))
				return false;
			if (f == 0)
				s->ts = (int64_t)ts;
			else if (f == 1 && !vertices(r, s, prev ? prev->n : 0))
				return false;
			else if (f == 2 && !metrics(r, s->g, true))
				return false;
		} while (eat(r, ','));
	}
	return eat(r, '}') && seen[0] && (!prev || s->ts > prev->ts) && distinct(s, prev);
}

/* [sample, ...] */
static bool window(struct reader *r, struct as_samples *h)
{
	if (!eat(r, '['))
		return false;
	if (eat(r, ']'))
		return true;
	do {
		struct as_sample s;
		bool ok = h->n < MAX_SAMPLES && sample(r, h->n ? &h->s[h->n - 1] : NULL, &s);
		if (!ok) {
			as_sample_free(&s);
			return false;
		}
		as_samples_put(h, &s);
	} while (eat(r, ','));
	return eat(r, ']');
}

/* Skips one JSON value, strictly: what is skipped here cJSON reads the same way (a string ends at the first quote
 * not escaped, brackets nest), so the member found after it is the member cJSON finds there. */
static bool skip_value(struct reader *r, int depth)
{
	skip_ws(r);
	if (r->p >= r->end || depth > 500)
		return false;
	char c = *r->p;
	if (c == '"') {
		for (r->p++; r->p < r->end && *r->p != '"'; r->p++)
			if (*r->p == '\\' && ++r->p >= r->end)
				return false;
		if (r->p >= r->end)
			return false;
		r->p++;
		return true;
	}
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		r->p++;
		if (eat(r, close))
			return true;
		do {
			if (c == '{' && (!skip_value(r, depth + 1) || !eat(r, ':')))
				return false;
			if (!skip_value(r, depth + 1))
				return false;
		} while (eat(r, ','));
		return eat(r, close);
	}
	if (c == 't')
		return literal(r, "true");
	if (c == 'f')
		return literal(r, "false");
	if (c == 'n')
		return literal(r, "null");
	double ignored;
	return number(r, &ignored);
}

int as_plan_samples_from_text(const char *text, size_t len, struct as_samples *ret, size_t *ret_begin, size_t *ret_end)
{
	memset(ret, 0, sizeof(*ret));
	struct reader r = {text, text + len};
	if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
		r.p += 3;
	if (!eat(&r, '{') || eat(&r, '}'))
		return 0;
	const char *begin = NULL, *end = NULL;
	do {
		const char *key;
		size_t n;
		if (!plain_string(&r, &key, &n) || !eat(&r, ':'))
			goto give_up;
		if (n == 7 && !memcmp(key, "samples", 7)) {
			if (begin)
				goto give_up; /* twice */
			skip_ws(&r);
			begin = r.p;
			if (!window(&r, ret))
				goto give_up;
			end = r.p;
		} else if (!skip_value(&r, 1)) {
			goto give_up;
		}
	} while (eat(&r, ','));
	if (!eat(&r, '}') || !begin)
		goto give_up;
	*ret_begin = (size_t)(begin - text);
	*ret_end = (size_t)(end - text);
	return 1;
give_up:
	as_samples_free(ret);
	return 0;
}

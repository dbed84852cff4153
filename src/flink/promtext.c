/* promtext: Prometheus' text exposition (0.0.4) checked line by line, as flinklet takes it from Flink's reporter
 * (src/flink/promtext.h). A family is a TYPE'd name with its samples (and, for summaries and histograms, the
 * samples of its _sum, _count and _bucket), or an untyped sample name; its lines must be together, its HELP and TYPE
 * said once, its TYPE before its samples: what promtool and Prometheus' parser ask of one scrape. The families met
 * so far are one hash set of names (pointing into the text) with what each has had (HELP, TYPE): each line costs
 * one look-up, so a scrape is read in time linear in its size, however many families it has. */
#include "promtext.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define TYPED 1u
#define HELPED 2u

/* A family met: its name is text + off, len bytes (len 0: a free slot). */
struct family {
	uint32_t off, len;
	unsigned char flags; /* TYPED, HELPED */
};

struct reader {
	const char *text;
	const char *reserved;
	struct family *set; /* open addressing, linear probing; cap a power of two, at most half full */
	size_t cap, n;
	struct family *current; /* the family whose lines come now (in set; NULL: none yet) */
	bool current_sampled;   /* it has samples */
	long line;
	char *why;
};

/* The characters of a metric name, as bits of two 64-bit words (ASCII 0-63, 64-127): [a-zA-Z_:] start one,
 * [a-zA-Z0-9_:] follow. */
#define NAME_LOW UINT64_C(0x07FF000000000000)       /* '0'-'9', ':' */
#define NAME_START_LOW UINT64_C(0x0400000000000000) /* ':' */
#define NAME_HIGH UINT64_C(0x07FFFFFE87FFFFFE)      /* 'A'-'Z', '_', 'a'-'z' */

static bool in_set(char c, uint64_t low, uint64_t high)
{
	unsigned u = (unsigned char)c;
	return u < 64 ? (low >> u) & 1 : u < 128 && ((high >> (u - 64)) & 1);
}

static bool name_start(char c)
{
	return in_set(c, NAME_START_LOW, NAME_HIGH);
}

static bool name_char(char c)
{
	return in_set(c, NAME_LOW, NAME_HIGH);
}

/* The length of the metric name at p (0: none). */
static size_t name_len(const char *p, const char *end)
{
	if (p >= end || !name_start(*p))
		return 0;
	size_t n = 1;
	while (p + n < end && name_char(p[n]))
		n++;
	return n;
}

static bool fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct strbuf b = {0};
	strbuf_appendf(&b, "line %ld: ", r->line);
	strbuf_vappendf(&b, fmt, ap);
	va_end(ap);
	r->why = strbuf_steal(&b);
	return false;
}

static uint64_t hash(const char *p, size_t n)
{
	uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * UINT64_C(1099511628211);
	return h ^ (h >> 29);
}

/* The slot of family name (n bytes): its own, or the free one it would take. */
static struct family *slot(const struct reader *r, const char *name, size_t n)
{
	for (size_t i = hash(name, n) & (r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
		struct family *f = &r->set[i];
		if (!f->len || (f->len == n && !memcmp(r->text + f->off, name, n)))
			return f;
	}
}

/* The family met before by that name, or NULL. */
static struct family *lookup(const struct reader *r, const char *name, size_t n)
{
	if (!r->cap)
		return NULL;
	struct family *f = slot(r, name, n);
	return f->len ? f : NULL;
}

/* The slot of family name (n bytes, in the text), with room for one more family: found, or free to be taken
 * (valid until the next call). */
static struct family *slot_for_new(struct reader *r, const char *name, size_t n)
{
	if ((r->n + 1) * 2 > r->cap) {
		struct family *old = r->set;
		size_t old_cap = r->cap;
		r->cap = old_cap ? old_cap * 2 : 64;
		r->set = xcalloc(r->cap, sizeof(*r->set));
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].len)
				*slot(r, r->text + old[i].off, old[i].len) = old[i];
		free(old);
	}
	return slot(r, name, n);
}

/* Moves to family name (n bytes): a family met before and left since is split in two. */
static bool enter_family(struct reader *r, const char *name, size_t n)
{
	if (r->current && r->current->len == n && !memcmp(r->text + r->current->off, name, n))
		return true;
	struct family *f = slot_for_new(r, name, n);
	if (f->len)
		return fail(r, "the lines of %.*s are not together (the family is split in two)", (int)n, name);
	if (r->reserved && n >= strlen(r->reserved) && !memcmp(name, r->reserved, strlen(r->reserved)))
		return fail(r, "%.*s is in flinklet's own namespace (%s)", (int)n, name, r->reserved);
	*f = (struct family){.off = (uint32_t)(name - r->text), .len = (uint32_t)n};
	r->n++;
	r->current = f;
	r->current_sampled = false;
	return true;
}

/* The family of a sample: a TYPE'd name, or one with a summary's or histogram's suffix after it; else its own. */
static size_t family_of(struct reader *r, const char *name, size_t n)
{
	static const char *const suffixes[] = {"_sum", "_count", "_bucket"};
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t k = strlen(suffixes[i]);
		if (n > k && !memcmp(name + n - k, suffixes[i], k)) {
			size_t base = n - k;
			const struct family *f = lookup(r, name, base);
			if (f && (f->flags & TYPED))
				return base;
		}
	}
	return n;
}

static bool read_comment(struct reader *r, const char *p, const char *end)
{
	bool help = end - p >= 7 && !memcmp(p, "# HELP ", 7), type = end - p >= 7 && !memcmp(p, "# TYPE ", 7);
	if (!help && !type)
		return true; /* another comment: nothing to check */
	p += 7;
	size_t n = name_len(p, end);
	if (!n || (p + n < end && p[n] != ' '))
		return fail(r, "a %s line without a valid metric name", help ? "HELP" : "TYPE");
	const char *name = p;
	if (!enter_family(r, name, n))
		return false;
	p += n;
	struct family *f = r->current; /* name's */
	if (help) {
		if (f->flags & HELPED)
			return fail(r, "a second HELP line for %.*s", (int)n, name);
		for (const char *q = p; (q = memchr(q, '\\', (size_t)(end - q))); q += 2)
			if (q + 1 == end || (q[1] != '\\' && q[1] != 'n'))
				return fail(r, "the HELP text of %.*s has an escape other than \\\\ or \\n", (int)n,
				            name);
		f->flags |= HELPED;
		return true;
	}
	if (f->flags & TYPED)
		return fail(r, "a second TYPE line for %.*s", (int)n, name);
	if (r->current_sampled)
		return fail(r, "the TYPE line of %.*s comes after its samples", (int)n, name);
	static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
	size_t rest = p < end ? (size_t)(end - p - 1) : 0;
	for (size_t i = 0; p < end && i < sizeof(types) / sizeof(types[0]); i++)
		if (rest == strlen(types[i]) && !memcmp(p + 1, types[i], rest)) {
			f->flags |= TYPED;
			return true;
		}
	return fail(r, "the TYPE of %.*s is not one of counter, gauge, histogram, summary, untyped", (int)n, name);
}

/* The labels from p (just after '{') to their '}': *after is set past it. */
static bool read_labels(struct reader *r, const char *p, const char *end, const char **after)
{
	while (p < end && *p != '}') {
		size_t n = name_len(p, end);
		if (!n || p + n + 1 >= end || p[n] != '=' || p[n + 1] != '"')
			return fail(r, "a label that is not name=\"value\"");
		for (size_t i = 0; i < n; i++)
			if (p[i] == ':')
				return fail(r, "a label name with ':'");
		p += n + 2;
		/* the value up to its closing quote, escapes skipped (memchr: the loop's cost is per escape) */
		for (;;) {
			const char *q = memchr(p, '"', (size_t)(end - p));
			const char *e = memchr(p, '\\', (size_t)((q ? q : end) - p));
			if (!e) {
				if (!q)
					return fail(r, "a label value without its closing quote");
				p = q + 1;
				break;
			}
			if (e + 1 >= end || (e[1] != '\\' && e[1] != '"' && e[1] != 'n'))
				return fail(r, "a label value with an escape other than \\\\, \\\" or \\n");
			p = e + 2;
		}
		if (p < end && *p == ',')
			p++;
		else if (p < end && *p != '}')
			return fail(r, "labels not separated by ','");
	}
	if (p >= end)
		return fail(r, "labels without their closing '}'");
	*after = p + 1;
	return true;
}

/* A sample value: a decimal number, NaN, +Inf, -Inf or Inf. */
static bool read_value(const char *p, size_t n, double *v)
{
	char buf[64];
	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (!strcmp(buf, "NaN")) {
		*v = NAN;
		return true;
	}
	if (!strcmp(buf, "+Inf") || !strcmp(buf, "Inf") || !strcmp(buf, "-Inf")) {
		*v = buf[0] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	if (strspn(buf, "0123456789.eE+-") != n)
		return false;
	char *e;
	errno = 0;
	*v = strtod(buf, &e);
	return *e == '\0' && e != buf;
}

static bool read_sample(struct reader *r, const char *p, const char *end, struct promtext_sample *sm)
{
	size_t n = name_len(p, end);
	if (!n)
		return fail(r, "neither a comment nor a sample with a valid metric name");
	sm->name = p;
	sm->name_len = n;
	if (!enter_family(r, p, family_of(r, p, n)))
		return false;
	r->current_sampled = true;
	p += n;
	sm->labels = p;
	sm->labels_len = 0;
	if (p < end && *p == '{') {
		const char *after = NULL;
		if (!read_labels(r, p + 1, end, &after))
			return false;
		sm->labels = p + 1;
		sm->labels_len = (size_t)(after - p - 2);
		p = after;
	}
	if (p >= end || *p != ' ')
		return fail(r, "no value after %.*s", (int)n, sm->name);
	p++;
	const char *v = p;
	while (p < end && *p != ' ')
		p++;
	if (!read_value(v, (size_t)(p - v), &sm->value))
		return fail(r, "the value of %.*s is not a number", (int)n, sm->name);
	if (p < end) {
		/* a timestamp: an integer of milliseconds */
		p++;
		if (p < end && (*p == '-' || *p == '+'))
			p++;
		const char *t = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		if (p == t || p != end)
			return fail(r, "the timestamp of %.*s is not an integer", (int)n, sm->name);
	}
	return true;
}

long promtext_parse(const char *text, size_t len, const char *reserved, promtext_sample_fn fn, void *userdata,
                    char **why)
{
	struct reader r = {.text = text, .reserved = reserved};
	long samples = 0;
	const char *p = text, *end = text + len;
	bool ok = len <= UINT32_MAX || fail(&r, "the text is over 4 GiB");
	while (ok && p < end) {
		r.line++;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			ok = fail(&r, "the last line has no end (the text was cut off)");
			break;
		}
		if (memchr(p, '\0', (size_t)(nl - p))) {
			ok = fail(&r, "a NUL byte");
		} else if (nl == p) {
			/* an empty line */
		} else if (*p == '#') {
			ok = read_comment(&r, p, nl);
		} else {
			struct promtext_sample sm;
			ok = read_sample(&r, p, nl, &sm);
			if (ok) {
				samples++;
				if (fn)
					fn(userdata, &sm);
			}
		}
		p = nl + 1;
	}
	free(r.set);
	if (!ok) {
		if (why)
			*why = r.why;
		else
			free(r.why);
		return -EBADMSG;
	}
	return samples;
}

bool promtext_is(const struct promtext_sample *sm, const char *name)
{
	return strlen(name) == sm->name_len && !memcmp(sm->name, name, sm->name_len);
}

bool promtext_label(const struct promtext_sample *sm, const char *name, char *buf, size_t size)
{
	const char *p = sm->labels, *end = sm->labels + sm->labels_len;
	size_t want = strlen(name);
	while (p < end) {
		size_t n = name_len(p, end);
		bool match = n == want && !memcmp(p, name, n);
		p += n + 2; /* name=" */
		size_t w = 0;
		while (p < end && *p != '"') {
			char c = *p;
			if (c == '\\') {
				p++;
				c = *p == 'n' ? '\n' : *p;
			}
			if (match && w + 1 < size)
				buf[w++] = c;
			p++;
		}
		if (match) {
			if (size)
				buf[w] = '\0';
			return true;
		}
		p++; /* the closing quote */
		if (p < end && *p == ',')
			p++;
	}
	return false;
}

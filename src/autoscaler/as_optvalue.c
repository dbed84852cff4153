/* as_optvalue: one autoscaler option's value, parsed and checked by its kind (bool, duration, int, double with its
 * range, list, excluded periods, the busy-time aggregator, the parallelism alignment and its legacy names, memory
 * sizes, plugins that must stay empty), as the operator's Configuration reads it; errors go to the caller's report
 * function with "did you mean" hints. The option table and its walk are as_options.c's, which hands in the row a
 * value is checked against: this file calls nothing of as_options.c (tests/static/test_layout.py: no call loop). */
#include "as_optvalue.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P "job.autoscaler."
#define FALLBACK "kubernetes.operator."

const struct kv *as_kv_find(const struct kvset *s, const char *key)
{
	for (size_t i = 0; key && i < s->n; i++)
		if (!strcmp(s->e[i].key, key))
			return &s->e[i];
	return NULL;
}

static int parse_double(const char *s, double *ret)
{
	if (str_empty(s))
		return -EINVAL;
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	char *copy = xstrndup(s, n);
	/* Java's Double.parseDouble takes a trailing d/D/f/F */
	if (n > 1 && strchr("dDfF", copy[n - 1]) && isdigit((unsigned char)copy[n - 2]))
		copy[n - 1] = '\0';
	char *end;
	errno = 0;
	double v = strtod(copy, &end);
	bool ok = *copy && *end == '\0' && errno != ERANGE && isfinite(v) && !strpbrk(copy, "xXnNiI");
	free(copy);
	if (!ok)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Flink's list syntax: items separated by ';', optionally quoted with ' or " (a doubled quote inside). */
static void split_list(const char *v, struct strv *ret)
{
	struct strbuf item = {0};
	char quote = 0;
	bool quoted = false;
	for (const char *p = v;; p++) {
		if (quote) {
			if (*p == quote && p[1] == quote) {
				strbuf_appendn(&item, p, 1);
				p++;
			} else if (*p == quote) {
				quote = 0;
			} else if (*p) {
				strbuf_appendn(&item, p, 1);
			}
			if (*p)
				continue;
		}
		if (*p == '\0' || *p == ';') {
			char *s = strbuf_steal(&item);
			size_t n = strlen(s), a = 0;
			if (!quoted) {
				while (a < n && isspace((unsigned char)s[a]))
					a++;
				while (n > a && isspace((unsigned char)s[n - 1]))
					n--;
			}
			if (n > a || quoted)
				strv_push_take(ret, xstrndup(s + a, n - a));
			free(s);
			quoted = false;
			if (!*p)
				break;
			continue;
		}
		if ((*p == '\'' || *p == '"') && item.len == 0) {
			quote = *p;
			quoted = true;
			continue;
		}
		strbuf_appendn(&item, p, 1);
	}
	strbuf_free(&item);
}

static int parse_enum(const char *v, const char *const *names, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		if (!strcasecmp(v, names[i]))
			return (int)i;
	return -1;
}

static const char *const busy_names[] = {"AVG", "MAX", "MIN"};
static const char *const align_names[] = {"BALANCED", "EVENLY_SPREAD", "OFF"};
static const char *const legacy_align_names[] = {"EVENLY_SPREAD", "MAXIMIZE_UTILISATION"};

/* One helper a kind: v is the value of e; base, when not NULL, is where in struct as_options it goes (left as it is
 * when the value is refused); a refusal is reported and is -EINVAL. */

static int bool_value(const struct kv *e, void *base, report_fn report, void *ud)
{
	bool b;
	if (parse_bool(e->value, &b) < 0) {
		report(ud, e, "must be true or false (got \"%s\")", e->value);
		return -EINVAL;
	}
	if (base)
		*(bool *)base = b;
	return 0;
}

static int duration_value(const struct kv *e, void *base, report_fn report, void *ud)
{
	usec_t us;
	if (parse_duration(e->value, &us) < 0 || us / USEC_PER_MSEC > INT64_MAX / 2) {
		report(ud, e, "must be a duration such as 30 s, 5 min or 1 h (got \"%s\")", e->value);
		return -EINVAL;
	}
	if (base)
		*(int64_t *)base = (int64_t)(us / USEC_PER_MSEC);
	return 0;
}

/* An integer inside the table row's range (def). */
static int int_value(const struct option_def *d, const struct kv *e, void *base, report_fn report, void *ud)
{
	const char *v = e->value;
	int64_t i;
	if (parse_int64(v, &i) < 0) {
		report(ud, e, "must be an integer (got \"%s\")", v);
		return -EINVAL;
	}
	if (i < d->min || i > d->max) {
		report(ud, e, "must be an integer between %lld and %lld (got \"%s\")", (long long)d->min,
		       (long long)d->max, v);
		return -EINVAL;
	}
	if (base)
		*(int *)base = (int)i;
	return 0;
}

/* A number inside the field's range. */
static int double_value(const struct field *f, const struct kv *e, void *base, report_fn report, void *ud)
{
	const char *v = e->value;
	double x;
	if (parse_double(v, &x) < 0) {
		report(ud, e, "must be a number (got \"%s\")", v);
		return -EINVAL;
	}
	if (x < f->min || x > f->max) {
		if (isinf(f->max))
			report(ud, e, "must be a number of at least %g (got \"%s\")", f->min, v);
		else
			report(ud, e, "must be a number between %g and %g (got \"%s\")", f->min, f->max, v);
		return -EINVAL;
	}
	if (base)
		*(double *)base = x;
	return 0;
}

static int memory_value(const struct kv *e, void *base, report_fn report, void *ud)
{
	uint64_t bytes;
	if (parse_memory(e->value, &bytes) < 0) {
		report(ud, e, "must be a memory size such as 512m or 4g (got \"%s\")", e->value);
		return -EINVAL;
	}
	if (base)
		*(uint64_t *)base = bytes;
	return 0;
}

/* A list; of excluded periods (periods), each item a Quartz cron expression or a daily range. */
static int list_value(bool periods, const struct kv *e, void *base, report_fn report, void *ud)
{
	const char *v = e->value;
	struct strv items = {0};
	split_list(v, &items);
	int r = 0;
	for (size_t i = 0; periods && i < items.n; i++) {
		char *why = NULL;
		if (as_period_check(items.v[i], &why) < 0) {
			report(ud, e,
			       "must be a list of Quartz cron expressions or daily ranges HH:mm:ss-HH:mm:ss: "
			       "\"%s\": %s (got \"%s\")",
			       items.v[i], why, v);
			r = -EINVAL;
		}
		free(why);
	}
	if (base && r == 0) {
		strv_free((struct strv *)base);
		*(struct strv *)base = items;
	} else {
		strv_free(&items);
	}
	return r;
}

/* Plugins are Java classes: the list must stay empty. */
static int plugins_value(const struct kv *e, report_fn report, void *ud)
{
	struct strv items = {0};
	split_list(e->value, &items);
	size_t n = items.n;
	strv_free(&items);
	if (n) {
		report(ud, e, "must be empty: custom plugins are Java classes, which flinklet cannot load (got \"%s\")",
		       e->value);
		return -EINVAL;
	}
	return 0;
}

static int busy_value(const struct kv *e, void *base, report_fn report, void *ud)
{
	int i = parse_enum(e->value, busy_names, 3);
	if (i < 0) {
		report(ud, e, "must be one of AVG, MAX, MIN (got \"%s\")", e->value);
		return -EINVAL;
	}
	if (base)
		*(enum as_busy_agg *)base = (enum as_busy_agg)i;
	return 0;
}

static int legacy_align_value(const struct kv *e, void *base, report_fn report, void *ud)
{
	int i = parse_enum(e->value, legacy_align_names, 2);
	if (i < 0) {
		report(ud, e, "must be one of EVENLY_SPREAD, MAXIMIZE_UTILISATION (got \"%s\")", e->value);
		return -EINVAL;
	}
	if (base)
		*(enum as_align *)base = i == 0 ? AS_ALIGN_LEGACY_EVENLY_SPREAD : AS_ALIGN_LEGACY_MAXIMIZE_UTILISATION;
	return 0;
}

/* The alignment mode; one that names a custom mode's class (in all) is refused as a Java class. */
static int align_value(const struct kv *e, const struct kvset *all, void *base, report_fn report, void *ud)
{
	const char *v = e->value;
	int i = parse_enum(v, align_names, 3);
	if (i < 0) {
		char *cls = xasprintf(P "scaling.parallelism-alignment.mode.%s.class", v);
		char *cls2 = xasprintf(FALLBACK "%s", cls);
		bool custom = as_kv_find(all, cls) || as_kv_find(all, cls2);
		free(cls);
		free(cls2);
		if (custom) {
			report(
			    ud, e,
			    "names a custom alignment mode: custom modes are Java classes, which flinklet cannot load "
			    "(got \"%s\")",
			    v);
		} else {
			const char *hint = as_did_you_mean(v, align_names, 3);
			report(ud, e, "must be one of BALANCED, EVENLY_SPREAD, OFF (got \"%s\")%s%s%s", v,
			       hint ? "; did you mean \"" : "", hint ? hint : "", hint ? "\"?" : "");
		}
		return -EINVAL;
	}
	if (base)
		*(enum as_align *)base = (enum as_align)i;
	return 0;
}

int as_option_value(const struct field *f, const struct option_def *def, const struct kv *e, const struct kvset *all,
                    struct as_options *o, report_fn report, void *ud)
{
	void *base = o ? (void *)((char *)o + f->offset) : NULL;
	switch (f->kind) {
	case K_BOOL:
		return bool_value(e, base, report, ud);
	case K_DURATION:
		return duration_value(e, base, report, ud);
	case K_INT:
		return int_value(def, e, base, report, ud);
	case K_DOUBLE:
		return double_value(f, e, base, report, ud);
	case K_MEMORY:
		return memory_value(e, base, report, ud);
	case K_LIST:
	case K_PERIODS:
		return list_value(f->kind == K_PERIODS, e, base, report, ud);
	case K_PLUGINS:
		return plugins_value(e, report, ud);
	case K_BUSY:
		return busy_value(e, base, report, ud);
	case K_LEGACY_ALIGN:
		return legacy_align_value(e, base, report, ud);
	case K_ALIGN:
		return align_value(e, all, base, report, ud);
	}
	return 0;
}

/* as_periods: job.autoscaler.excluded.periods (reference 3.9): Quartz cron expressions (6 or 7 fields:
 * seconds minutes hours day-of-month month day-of-week [year], with * ? , - / L W # and names), daily
 * ranges HH:mm:ss-HH:mm:ss (inclusive, start before end, as Quartz's DailyCalendar), and one of each
 * joined with "&&" (both must match). Times are the process's local time, as Quartz uses the JVM's
 * default zone. It is not for anything else about options (as_options.c). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoscaler.h"

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MONTH, F_DOW, F_YEAR, F_COUNT };

static const int field_lo[F_COUNT] = {0, 0, 0, 1, 1, 1, 1970};
static const int field_hi[F_COUNT] = {59, 59, 23, 31, 12, 7, 2099};
static const char *const fname[F_COUNT] = {"seconds", "minutes",     "hours", "day-of-month",
                                           "month",   "day-of-week", "year"};

struct cron {
	unsigned char set[F_COUNT][131]; /* set[f][v - field_lo[f]] */
	bool dom_q, dow_q;
	bool dom_last;       /* L or L-n */
	int dom_last_offset; /* n of L-n */
	bool dom_last_weekday;
	int dom_nearest_weekday; /* nW; 0: none */
	int dow_last;            /* nL: the last <n> of the month; 0: none */
	int dow_nth_day, dow_nth;
};

static int name_value(const char *s, size_t len, int field)
{
	static const char *const months[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
	                                     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
	static const char *const days[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
	if (len != 3)
		return -1;
	if (field == F_MONTH)
		for (int i = 0; i < 12; i++)
			if (!strncasecmp(s, months[i], 3))
				return i + 1;
	if (field == F_DOW)
		for (int i = 0; i < 7; i++)
			if (!strncasecmp(s, days[i], 3))
				return i + 1;
	return -1;
}

/* A number or a name at *p; advances *p. Returns the value or -1. */
static int read_value(const char **p, int field)
{
	const char *s = *p;
	if (isdigit((unsigned char)*s)) {
		long v = 0;
		while (isdigit((unsigned char)*s) && v < 100000)
			v = v * 10 + (*s++ - '0');
		if (isdigit((unsigned char)*s))
			return -1;
		*p = s;
		return (int)v;
	}
	size_t n = 0;
	while (isalpha((unsigned char)s[n]))
		n++;
	int v = name_value(s, n, field);
	if (v >= 0)
		*p = s + n;
	return v;
}

static int add_range(struct cron *c, int f, int start, int end, int inc, char **err)
{
	int lo = field_lo[f], hi = field_hi[f];
	if (start < lo || start > hi || end < lo || end > hi) {
		*err = xasprintf("%s value out of range (%d-%d)", fname[f], lo, hi);
		return -EINVAL;
	}
	int span = hi - lo + 1;
	if (inc < 1 || inc > span) {
		*err = xasprintf("%s increment out of range (1-%d)", fname[f], span);
		return -EINVAL;
	}
	int stop = end >= start ? end : end + span; /* a range such as 22-2 wraps around */
	for (int v = start; v <= stop; v += inc) {
		int x = v > hi ? v - span : v;
		c->set[f][x - lo] = 1;
	}
	return 0;
}

static int parse_item(struct cron *c, int f, const char *item, bool in_list, char **err)
{
	const char *p = item;
	/* the specials of day-of-month and day-of-week */
	if (f == F_DOM && (*p == 'L' || *p == 'l')) {
		if (in_list)
			goto special_in_list;
		p++;
		if ((*p == 'W' || *p == 'w') && !p[1]) {
			c->dom_last_weekday = true;
			return 0;
		}
		c->dom_last = true;
		if (*p == '-') {
			p++;
			int n = read_value(&p, F_DOM);
			if (n < 0 || n > 30 || *p) {
				*err = xasprintf("%s: bad offset in \"%s\"", fname[f], item);
				return -EINVAL;
			}
			c->dom_last_offset = n;
			return 0;
		}
		if (*p) {
			*err = xasprintf("%s: unexpected characters in \"%s\"", fname[f], item);
			return -EINVAL;
		}
		return 0;
	}
	if (f == F_DOW && (*p == 'L' || *p == 'l') && !p[1]) {
		if (in_list)
			goto special_in_list;
		c->set[F_DOW][7 - 1] = 1; /* L alone is the last day of the week: SAT */
		return 0;
	}
	int start, end, inc = 1;
	bool range = false;
	if (*p == '*' || *p == '?') {
		if (*p == '?' && f != F_DOM && f != F_DOW) {
			*err = xasprintf("'?' is allowed only in day-of-month or day-of-week, not in %s", fname[f]);
			return -EINVAL;
		}
		if (*p == '?' && (p[1] || in_list)) {
			*err = xasprintf("%s: '?' must stand alone", fname[f]);
			return -EINVAL;
		}
		if (*p == '?') {
			if (f == F_DOM)
				c->dom_q = true;
			else
				c->dow_q = true;
			return 0;
		}
		p++;
		start = field_lo[f];
		end = field_hi[f];
	} else if (*p == '/') {
		start = field_lo[f];
		end = field_hi[f];
	} else {
		start = read_value(&p, f);
		if (start < 0) {
			*err = xasprintf("%s: bad value \"%s\"", fname[f], item);
			return -EINVAL;
		}
		end = start;
		if (*p == '-') {
			p++;
			range = true;
			end = read_value(&p, f);
			if (end < 0) {
				*err = xasprintf("%s: bad range \"%s\"", fname[f], item);
				return -EINVAL;
			}
		} else if (f == F_DOM && (*p == 'W' || *p == 'w') && !p[1]) {
			if (in_list)
				goto special_in_list;
			if (start < 1 || start > 31) {
				*err = xasprintf("%s: bad day in \"%s\"", fname[f], item);
				return -EINVAL;
			}
			c->dom_nearest_weekday = start;
			return 0;
		} else if (f == F_DOW && (*p == 'L' || *p == 'l') && !p[1]) {
			if (in_list)
				goto special_in_list;
			if (start < 1 || start > 7) {
				*err = xasprintf("%s: bad day in \"%s\"", fname[f], item);
				return -EINVAL;
			}
			c->dow_last = start;
			return 0;
		} else if (f == F_DOW && *p == '#') {
			if (in_list)
				goto special_in_list;
			p++;
			int nth = read_value(&p, F_SEC);
			if (start < 1 || start > 7 || nth < 1 || nth > 5 || *p) {
				*err =
				    xasprintf("%s: bad \"#\" in \"%s\" (day 1-7 or SUN-SAT, then 1-5)", fname[f], item);
				return -EINVAL;
			}
			c->dow_nth_day = start;
			c->dow_nth = nth;
			return 0;
		}
	}
	if (*p == '/') {
		p++;
		if (!isdigit((unsigned char)*p)) {
			*err = xasprintf("%s: bad increment in \"%s\"", fname[f], item);
			return -EINVAL;
		}
		inc = read_value(&p, F_SEC);
		if (!range && item[0] != '*' && item[0] != '/')
			end = field_hi[f]; /* a single value with an increment runs to the end: 5/15 */
	}
	if (*p) {
		*err = xasprintf("%s: unexpected characters in \"%s\"", fname[f], item);
		return -EINVAL;
	}
	return add_range(c, f, start, end, inc, err);
special_in_list:
	*err = xasprintf("%s: L, W and # cannot be combined with a list (\"%s\")", fname[f], item);
	return -EINVAL;
}

static int parse_field(struct cron *c, int f, const char *text, char **err)
{
	bool list = strchr(text, ',') != NULL;
	const char *p = text;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 0) {
			*err = xasprintf("%s: empty list item in \"%s\"", fname[f], text);
			return -EINVAL;
		}
		char *item = xstrndup(p, len);
		int r = parse_item(c, f, item, list, err);
		free(item);
		if (r < 0)
			return r;
		p += len;
		if (*p == ',') {
			p++;
			if (!*p) {
				*err = xasprintf("%s: empty list item in \"%s\"", fname[f], text);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int cron_parse(const char *expr, struct cron *c, char **err)
{
	memset(c, 0, sizeof(*c));
	char *copy = xstrdup(expr);
	char *fields[8];
	int n = 0;
	for (char *q = copy; *q;) {
		while (*q == ' ' || *q == '\t')
			*q++ = '\0';
		if (!*q)
			break;
		if (n == 8) {
			n++;
			break;
		}
		fields[n++] = q;
		while (*q && *q != ' ' && *q != '\t')
			q++;
	}
	if (n < 6 || n > 7) {
		*err = xasprintf("a cron expression has 6 or 7 fields (seconds minutes hours day-of-month month "
		                 "day-of-week [year]), this one has %d",
		                 n);
		free(copy);
		return -EINVAL;
	}
	int r = 0;
	for (int f = 0; f < n && r == 0; f++)
		r = parse_field(c, f, fields[f], err);
	if (r == 0 && n == 6)
		r = add_range(c, F_YEAR, field_lo[F_YEAR], field_hi[F_YEAR], 1, err);
	free(copy);
	if (r < 0)
		return r;
	if (c->dom_q == c->dow_q) {
		*err = xstrdup(c->dom_q ? "'?' can be given for day-of-month or day-of-week, not both"
		                        : "one of day-of-month and day-of-week must be '?' (Quartz does not support "
		                          "both)");
		return -EINVAL;
	}
	return 0;
}

static int days_in_month(int year, int month)
{
	static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (month == 2 && ((year % 4 == 0 && year % 100 != 0) || year % 400 == 0))
		return 29;
	return d[month - 1];
}

/* Day of week (0 = Sunday) of a date in the proleptic Gregorian calendar. */
static int weekday(int year, int month, int day)
{
	static const int t[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
	if (month < 3)
		year--;
	return (year + year / 4 - year / 100 + year / 400 + t[month - 1] + day) % 7;
}

static bool dom_matches(const struct cron *c, int year, int month, int mday)
{
	int last = days_in_month(year, month);
	if (c->dom_last)
		return mday == last - c->dom_last_offset;
	if (c->dom_last_weekday) {
		int d = last, wd = weekday(year, month, d);
		if (wd == 0)
			d -= 2;
		else if (wd == 6)
			d -= 1;
		return mday == d;
	}
	if (c->dom_nearest_weekday) {
		int n = c->dom_nearest_weekday;
		if (n > last)
			return false;
		int wd = weekday(year, month, n), d = n;
		if (wd == 6)
			d = n == 1 ? 3 : n - 1;
		else if (wd == 0)
			d = n == last ? n - 2 : n + 1;
		return mday == d;
	}
	return c->set[F_DOM][mday - 1];
}

static bool dow_matches(const struct cron *c, int year, int month, int mday, int wday)
{
	int dow = wday + 1; /* Quartz: 1 = SUN */
	if (c->dow_last)
		return dow == c->dow_last && mday + 7 > days_in_month(year, month);
	if (c->dow_nth)
		return dow == c->dow_nth_day && (mday - 1) / 7 + 1 == c->dow_nth;
	return c->set[F_DOW][dow - 1];
}

static bool cron_matches(const struct cron *c, const struct tm *tm)
{
	int year = tm->tm_year + 1900, month = tm->tm_mon + 1;
	if (year < 1970 || year > 2099 || !c->set[F_YEAR][year - 1970])
		return false;
	if (!c->set[F_SEC][tm->tm_sec > 59 ? 59 : tm->tm_sec] || !c->set[F_MIN][tm->tm_min] ||
	    !c->set[F_HOUR][tm->tm_hour] || !c->set[F_MONTH][month - 1])
		return false;
	if (c->dom_q)
		return dow_matches(c, year, month, tm->tm_mday, tm->tm_wday);
	return dom_matches(c, year, month, tm->tm_mday);
}

/* ---- daily ranges ---- */

static int parse_hms(const char *s, size_t n, int *ret_ms)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n != 8 || s[2] != ':' || s[5] != ':')
		return -EINVAL;
	for (size_t i = 0; i < 8; i++)
		if (i != 2 && i != 5 && !isdigit((unsigned char)s[i]))
			return -EINVAL;
	int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0'),
	    sec = (s[6] - '0') * 10 + (s[7] - '0');
	if (h > 23 || m > 59 || sec > 59)
		return -EINVAL;
	*ret_ms = ((h * 60 + m) * 60 + sec) * 1000;
	return 0;
}

/* 1: a daily range (start/end set), 0: not daily-range syntax, -EINVAL: daily syntax but invalid. */
static int daily_parse(const char *s, int *start, int *end, char **err)
{
	const char *dash = strchr(s, '-');
	if (!dash || strchr(dash + 1, '-') || !strchr(s, ':'))
		return 0;
	if (parse_hms(s, (size_t)(dash - s), start) < 0 || parse_hms(dash + 1, strlen(dash + 1), end) < 0)
		return 0;
	if (*start >= *end) {
		*err = xstrdup("a daily range must start before it ends (to span midnight, give two ranges: "
		               "22:00:00-23:59:59;00:00:00-06:00:00)");
		return -EINVAL;
	}
	return 1;
}

/* ---- expressions ---- */

struct sub {
	bool daily;
	int start, end;
	struct cron cron;
};

/* Splits on "&&" and parses every part. Returns the number of parts (1 or 2) or -EINVAL. */
static int period_parse(const char *expr, struct sub subs[2], char **err)
{
	int n = 0;
	const char *p = expr;
	bool have_daily = false, have_cron = false;
	for (;;) {
		const char *amp = strstr(p, "&&");
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		char *part = xstrndup(p, len);
		char *s = part;
		while (isspace((unsigned char)*s))
			s++;
		size_t sl = strlen(s);
		while (sl && isspace((unsigned char)s[sl - 1]))
			s[--sl] = '\0';
		int r;
		if (n == 2) {
			*err = xstrdup("at most one daily range and one cron expression can be joined with &&");
			r = -EINVAL;
		} else if (!*s) {
			*err = xstrdup("empty expression");
			r = -EINVAL;
		} else if ((r = daily_parse(s, &subs[n].start, &subs[n].end, err)) == 1) {
			subs[n].daily = true;
			if (have_daily) {
				free(*err);
				*err = xstrdup("two daily ranges joined with && (give one daily range and one cron "
				               "expression)");
				r = -EINVAL;
			}
			have_daily = true;
		} else if (r == 0) {
			subs[n].daily = false;
			char *why = NULL;
			r = cron_parse(s, &subs[n].cron, &why);
			if (r < 0) {
				*err = xasprintf(
				    "neither a daily range HH:mm:ss-HH:mm:ss nor a valid cron expression: %s", why);
				free(why);
			} else if (have_cron) {
				*err = xstrdup("two cron expressions joined with && (give one daily range and one cron "
				               "expression)");
				r = -EINVAL;
			}
			have_cron = true;
		}
		free(part);
		if (r < 0)
			return -EINVAL;
		n++;
		if (!amp)
			break;
		p = amp + 2;
	}
	return n;
}

int as_period_check(const char *expr, char **ret_error)
{
	struct sub *subs = xcalloc(2, sizeof(struct sub));
	char *err = NULL;
	int r = period_parse(expr ? expr : "", subs, &err);
	free(subs);
	if (r < 0) {
		if (ret_error)
			*ret_error = err ? err : xstrdup("invalid");
		else
			free(err);
		return -EINVAL;
	}
	return 0;
}

bool as_period_matches(const char *expr, int64_t epoch_ms)
{
	struct sub *subs = xcalloc(2, sizeof(struct sub));
	char *err = NULL;
	int n = period_parse(expr, subs, &err);
	free(err);
	bool match = n > 0;
	time_t t = (time_t)(epoch_ms >= 0 ? epoch_ms / 1000 : (epoch_ms - 999) / 1000);
	int ms = (int)(epoch_ms - (int64_t)t * 1000);
	struct tm tm;
	if (match && !localtime_r(&t, &tm))
		match = false;
	for (int i = 0; match && i < n; i++) {
		if (subs[i].daily) {
			int of_day =
			    ((tm.tm_hour * 60 + tm.tm_min) * 60 + (tm.tm_sec > 59 ? 59 : tm.tm_sec)) * 1000 + ms;
			match = of_day >= subs[i].start && of_day <= subs[i].end;
		} else {
			match = cron_matches(&subs[i].cron, &tm);
		}
	}
	free(subs);
	return match;
}

bool as_in_excluded_period(const struct as_options *o, int64_t epoch_ms)
{
	for (size_t i = 0; i < o->excluded_periods.n; i++)
		if (as_period_matches(o->excluded_periods.v[i], epoch_ms))
			return true;
	return false;
}

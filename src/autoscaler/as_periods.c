/* as_periods: job.autoscaler.excluded.periods (reference 3.9): Quartz cron expressions (6 or 7 fields:
 * seconds minutes hours day-of-month month day-of-week [year], with * ? , - / L W # and names), daily
 * ranges HH:mm:ss-HH:mm:ss (inclusive, start before end, as Quartz's DailyCalendar), and one of each
 * joined with "&&" (both must match), each read exactly as the operator reads it with Quartz 2.3 (its leniencies
 * included; `make quartz-parity` compares with the real library, tests/quartz/README.md). Times are the process's
 * local time, as Quartz uses the JVM's default zone. It is not for anything else about options (as_options.c). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "as_internal.h"

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MONTH, F_DOW, F_YEAR, F_COUNT };

/* The years a set holds: Quartz takes any year, these are the ones an instant can be in. */
#define YEAR_LO 1970
#define YEAR_HI 2199

static const int field_lo[F_COUNT] = {0, 0, 0, 1, 1, 1, YEAR_LO};
static const int field_hi[F_COUNT] = {59, 59, 23, 31, 12, 7, YEAR_HI};
static const char *const fname[F_COUNT] = {"seconds", "minutes",     "hours", "day-of-month",
                                           "month",   "day-of-week", "year"};

/* What Quartz's CronExpression holds after parsing: a set of values a field, whether day-of-month or day-of-week
 * has '?' (NO_SPEC), and its flags for L, W, nL and #. */
struct cron {
	unsigned char set[F_COUNT][YEAR_HI - YEAR_LO + 1]; /* set[f][v - field_lo[f]] */
	bool dom_q, dow_q;
	bool dom_all;         /* day-of-month holds Quartz's ALL_SPEC ('*' alone or with an increment of 0) */
	bool last_dom;        /* L, L-n (lastdayOfMonth) */
	int last_dom_offset;  /* n of L-n */
	bool nearest_weekday; /* W: of L / L-n, or of the first day-of-month value */
	bool last_dow;        /* nL: the last <first day-of-week value> of the month */
	int nth_dow;          /* n#k: k; the day is the first day-of-week value */
};

/* ---- the parser: Quartz 2.3's CronExpression.buildExpression and storeExpressionVals, rule for rule ----
 * Quartz reads an item from its start and ignores what it does not look at (5x is 5, JAN-MAR/2 is JAN-MAR,
 * extra fields after the year are dropped), and the operator takes what Quartz takes; so does flinklet. The
 * expression is upper-cased first. tests/quartz/ checks this against the real library. */

struct cron_err {
	char **err;
	const char *item;
	int field;
};

static int fail(const struct cron_err *e, const char *why)
{
	*e->err = xasprintf("%s: %s in \"%s\"", fname[e->field], why, e->item);
	return -EINVAL;
}

#define ALL_SPEC 99 /* Quartz's ALL_SPEC_INT: '*' */
#define NO_SPEC 98  /* '?' */

/* Quartz's addToSet: the range checks per field, then val (end -1: alone; incr 0 or -1: val alone) */
static int add_to_set(struct cron *c, int f, int val, int end, int incr, const struct cron_err *e)
{
	static const int hi_check[F_COUNT] = {59, 59, 23, 31, 12, 7, 0};
	if (f != F_YEAR && val != ALL_SPEC && !(val == NO_SPEC && (f == F_DOM || f == F_DOW))) {
		int lo = f == F_DOW ? 1 : field_lo[f];
		if ((f == F_DOW ? val == 0 : val < lo) || val > hi_check[f] || end > hi_check[f]) {
			*e->err =
			    xasprintf("%s value out of range (%d-%d) in \"%s\"", fname[f], lo, hi_check[f], e->item);
			return -EINVAL;
		}
	}
	if ((incr == 0 || incr == -1) && val != ALL_SPEC) {
		if (val == NO_SPEC) {
			if (f == F_DOM)
				c->dom_q = true;
			else
				c->dow_q = true;
		} else if (val >= field_lo[f] && val <= field_hi[f]) {
			c->set[f][val - field_lo[f]] = 1;
		}
		return 0;
	}
	int start = val, stop = end;
	if (val == ALL_SPEC && incr <= 0) {
		incr = 1;
		c->dom_all |= f == F_DOM;
	}
	if (stop == -1)
		stop = f == F_YEAR ? YEAR_HI : field_hi[f];
	if (start == -1 || start == ALL_SPEC)
		start = field_lo[f];
	int max = -1;
	if (stop < start) { /* a range such as 22-2 wraps around */
		if (f == F_YEAR)
			return fail(e, "the start year must be before the stop year");
		max = f == F_SEC || f == F_MIN ? 60 : f == F_HOUR ? 24 : f == F_MONTH ? 12 : f == F_DOW ? 7 : 31;
		stop += max;
	}
	for (long v = start; v <= stop; v += incr) {
		long x = v;
		if (max != -1) {
			x = v % max;
			if (x == 0 && (f == F_MONTH || f == F_DOW || f == F_DOM))
				x = max;
		}
		if (x >= field_lo[f] && x <= field_hi[f])
			c->set[f][x - field_lo[f]] = 1;
	}
	return 0;
}

static int check_increment(int incr, int f, const struct cron_err *e)
{
	static const int max[F_COUNT] = {59, 59, 23, 31, 12, 7, INT32_MAX};
	return incr > max[f] ? fail(e, "increment out of range") : 0;
}

/* Quartz's getValue: the digits at s[*i] appended to v's; *i past them (one further at the end, as Quartz).
 * -1 when there is no character at *i or the number is too large for Integer.parseInt. */
static long get_value(long v, const char *s, size_t n, size_t *i)
{
	if (*i >= n)
		return -1;
	while (*i < n && isdigit((unsigned char)s[*i])) {
		v = v * 10 + (s[*i] - '0');
		if (v > INT32_MAX)
			return -1;
		(*i)++;
	}
	if (*i >= n)
		(*i)++;
	return v;
}

static int digit_at(const char *s, size_t n, size_t i)
{
	return i < n && isdigit((unsigned char)s[i]) ? s[i] - '0' : -1;
}

/* Integer.parseInt of all of s from i (an optional sign, then digits only), or -1 when it fails or is negative:
 * what may follow '#'. */
static long parse_rest(const char *s, size_t n, size_t i)
{
	bool neg = false;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i >= n)
		return -1;
	long v = 0;
	for (; i < n; i++) {
		if (!isdigit((unsigned char)s[i]) || v > 100000)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return neg ? -1 : v;
}

/* Quartz's checkNext: what follows a number val at s[i]. */
static int check_next(struct cron *c, int f, const char *s, size_t n, size_t i, long val, const struct cron_err *e)
{
	if (i >= n)
		return add_to_set(c, f, (int)val, -1, -1, e);
	switch (s[i]) {
	case 'L':
		if (f != F_DOW)
			return fail(e, "'L' is not valid here");
		if (val < 1 || val > 7)
			return fail(e, "day-of-week values must be between 1 and 7");
		c->last_dow = true;
		c->set[F_DOW][val - 1] = 1;
		return 0;
	case 'W':
		if (f != F_DOM)
			return fail(e, "'W' is not valid here");
		if (val > 31)
			return fail(e, "bad day"); /* W needs a day of at most 31 */
		c->nearest_weekday = true;
		if (val >= 1)
			c->set[F_DOM][val - 1] = 1;
		return 0;
	case '#': {
		if (f != F_DOW)
			return fail(e, "'#' is not valid here");
		long nth = parse_rest(s, n, i + 1);
		if (nth < 1 || nth > 5)
			return fail(e, "bad \"#\" (day 1-7 or SUN-SAT, then 1-5)");
		c->nth_dow = (int)nth;
		if (val >= 1 && val <= 7)
			c->set[F_DOW][val - 1] = 1;
		return 0;
	}
	case '-': {
		int d = digit_at(s, n, ++i);
		if (d < 0)
			return fail(e, "a range must end with a number");
		long end = d;
		if (++i >= n)
			return add_to_set(c, f, (int)val, (int)end, 1, e);
		if (isdigit((unsigned char)s[i]) && (end = get_value(d, s, n, &i)) < 0)
			return fail(e, "number too large");
		if (i >= n || s[i] != '/')
			return add_to_set(c, f, (int)val, (int)end, 1, e);
		int d2 = digit_at(s, n, ++i);
		if (d2 < 0)
			return fail(e, "'/' must be followed by a number");
		long incr = d2;
		if (++i < n && isdigit((unsigned char)s[i]) && (incr = get_value(d2, s, n, &i)) < 0)
			return fail(e, "bad increment");
		return add_to_set(c, f, (int)val, (int)end, (int)incr, e);
	}
	case '/': {
		if (i + 1 >= n)
			return fail(e, "'/' must be followed by a number");
		int d2 = digit_at(s, n, i + 1);
		if (d2 < 0)
			return fail(e, "'/' must be followed by a number");
		size_t k = i + 2;
		long incr = d2;
		if (k < n) {
			if (!isdigit((unsigned char)s[k]))
				return fail(e, "unexpected character after '/'");
			if ((incr = get_value(d2, s, n, &k)) < 0)
				return fail(e, "bad increment");
		}
		int r = check_increment((int)incr, f, e);
		return r < 0 ? r : add_to_set(c, f, (int)val, -1, (int)incr, e);
	}
	default:
		return add_to_set(c, f, (int)val, -1, 0, e);
	}
}

static int name_value(const char *s, int field)
{
	static const char *const months[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
	                                     "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
	static const char *const days[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};
	const char *const *names = field == F_MONTH ? months : days;
	for (int i = 0; i < (field == F_MONTH ? 12 : 7); i++)
		if (!strncmp(s, names[i], 3))
			return i + 1;
	return -1;
}

/* "^L-[0-9]*W?$" */
static bool last_offset_form(const char *s)
{
	if (s[0] != 'L' || s[1] != '-')
		return false;
	s += 2;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s == 'W')
		s++;
	return !*s;
}

/* Quartz's storeExpressionVals for one item of a list (upper-cased, no white space). */
static int parse_item(struct cron *c, int f, const char *s, struct cron_err *e)
{
	size_t n = strlen(s);
	e->item = s;
	if (!n)
		return 0;
	char ch = s[0];
	if (ch >= 'A' && ch <= 'Z' && strcmp(s, "L") && strcmp(s, "LW") && !last_offset_form(s)) {
		if (n < 3 || (f != F_MONTH && f != F_DOW))
			return fail(e, "bad value");
		int sval = name_value(s, f), eval = -1;
		if (sval < 0) {
			*e->err = xasprintf("%s: bad value \"%s\"", fname[f], s);
			return -EINVAL;
		}
		if (n > 3 && s[3] == '-') {
			if (n < 7 || (eval = name_value(s + 4, f)) < 0)
				return fail(e, "bad name at the end of the range");
		} else if (f == F_DOW && n > 3 && s[3] == '#') {
			long nth = parse_rest(s, n, 4);
			if (nth < 1 || nth > 5)
				return fail(e, "bad \"#\" (day 1-7 or SUN-SAT, then 1-5)");
			c->nth_dow = (int)nth;
		} else if (f == F_DOW && n > 3 && s[3] == 'L') {
			c->last_dow = true;
		}
		return add_to_set(c, f, sval, eval, eval != -1 ? 1 : 0, e);
	}
	if (ch == '?') {
		if (n > 2 && s[1] != ' ' && s[2] != '\t')
			return fail(e, "illegal character after '?'");
		if (f != F_DOM && f != F_DOW)
			return fail(e, "'?' is allowed only in day-of-month or day-of-week");
		/* Quartz looks at day-of-month's largest value: '?' (98) unless '*' (99) is there too */
		if (f == F_DOW && !c->last_dom && c->dom_q && !c->dom_all)
			return fail(e, "'?' can be given for day-of-month or day-of-week, not both");
		return add_to_set(c, f, NO_SPEC, -1, 0, e);
	}
	if (ch == '*' || ch == '/') {
		if (ch == '*' && n == 1)
			return add_to_set(c, f, ALL_SPEC, -1, 0, e);
		if (ch == '/' && (n == 1 || s[1] == ' ' || s[1] == '\t'))
			return fail(e, "'/' must be followed by a number");
		size_t i = ch == '*' ? 1 : 0;
		if (s[i] != '/')
			return add_to_set(c, f, ALL_SPEC, -1, 1, e); /* "*x": x is not looked at */
		i++;
		if (i >= n)
			return fail(e, "unexpected end after '/'");
		size_t j = i; /* Quartz reads the increment to the end of the item: digits only */
		while (j < n && isdigit((unsigned char)s[j]))
			j++;
		if (j == i || j < n || j - i > 9)
			return fail(e, "'/' must be followed by a number");
		long incr = 0;
		for (size_t k = i; k < j; k++)
			incr = incr * 10 + (s[k] - '0');
		int r = check_increment((int)incr, f, e);
		return r < 0 ? r : add_to_set(c, f, ALL_SPEC, -1, (int)incr, e);
	}
	if (ch == 'L') {
		size_t i = 1;
		if (f == F_DOW)
			return add_to_set(c, f, 7, 7, 0, e);
		if (f != F_DOM)
			return 0; /* Quartz takes it and sets nothing: the field never matches */
		c->last_dom = true;
		if (i < n && s[i] == '-') {
			i++;
			long off = get_value(0, s, n, &i);
			if (off < 0)
				return fail(e, "bad offset from the last day");
			if (off > 30)
				return fail(e, "the offset from the last day must be at most 30");
			c->last_dom_offset = (int)off;
		}
		if (i < n && s[i] == 'W')
			c->nearest_weekday = true;
		return 0;
	}
	if (ch >= '0' && ch <= '9') {
		long val = ch - '0';
		size_t i = 1;
		if (i >= n)
			return add_to_set(c, f, (int)val, -1, -1, e);
		if (isdigit((unsigned char)s[i]) && (val = get_value(val, s, n, &i)) < 0)
			return fail(e, "number too large");
		return check_next(c, f, s, n, i, val, e);
	}
	return fail(e, "unexpected character");
}

static int cron_parse(const char *expr, struct cron *c, char **err)
{
	memset(c, 0, sizeof(*c));
	char *copy = xstrdup(expr);
	for (char *q = copy; *q; q++)
		*q = (char)toupper((unsigned char)*q);
	int f = F_SEC, r = 0;
	struct cron_err e = {.err = err};
	char *save = NULL;
	for (char *tok = strtok_r(copy, " \t", &save); tok && f <= F_YEAR && r == 0;
	     tok = strtok_r(NULL, " \t", &save), f++) {
		e.field = f;
		e.item = tok;
		if (f == F_DOM && strchr(tok, 'L') && strlen(tok) > 1 && strchr(tok, ','))
			r = fail(&e,
			         "L, W and # cannot be combined with a list (L and LW with other days of the month)");
		else if (f == F_DOW && strchr(tok, 'L') && strlen(tok) > 1 && strchr(tok, ','))
			r = fail(&e, "L, W and # cannot be combined with a list (L with other days of the week)");
		else if (f == F_DOW && strchr(tok, '#') && strchr(strchr(tok, '#') + 1, '#'))
			r = fail(&e, "only one \"#\" day can be given");
		char *save2 = NULL;
		for (char *item = strtok_r(tok, ",", &save2); item && r == 0; item = strtok_r(NULL, ",", &save2))
			r = parse_item(c, f, item, &e);
	}
	free(copy);
	if (r < 0)
		return r;
	if (f <= F_DOW) {
		*err = xasprintf("a cron expression has 6 or 7 fields (seconds minutes hours day-of-month month "
		                 "day-of-week [year]), this one has %d",
		                 f);
		return -EINVAL;
	}
	if (f == F_YEAR) {
		e.field = F_YEAR;
		add_to_set(c, F_YEAR, ALL_SPEC, -1, 0, &e);
	}
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

/* The weekday nearest to day d of the month (Quartz's W): a Saturday moves to the Friday before (to the Monday
 * after on the 1st), a Sunday to the Monday after (to the Friday before on the last day). */
static int nearest_weekday(int year, int month, int d)
{
	int last = days_in_month(year, month), wd = weekday(year, month, d);
	if (wd == 6)
		return d == 1 ? 3 : d - 1;
	if (wd == 0)
		return d == last ? d - 2 : d + 1;
	return d;
}

static int first_of(const unsigned char *set, int count)
{
	for (int i = 0; i < count; i++)
		if (set[i])
			return i;
	return -1;
}

static bool dom_matches(const struct cron *c, int year, int month, int mday)
{
	int last = days_in_month(year, month);
	if (c->last_dom) {
		int d = last - c->last_dom_offset;
		if (d < 1)
			return false;
		return mday == (c->nearest_weekday ? nearest_weekday(year, month, d) : d);
	}
	if (c->nearest_weekday) {
		/* a day past the month's end (31W in April) is taken as Quartz's lenient calendar does: its weekday is
		 * that of the date it rolls over to, and the day it moves to counts when it is in the month */
		int n = first_of(c->set[F_DOM], 31) + 1;
		return n >= 1 && mday == nearest_weekday(year, month, n);
	}
	return c->set[F_DOM][mday - 1];
}

static bool dow_matches(const struct cron *c, int year, int month, int mday, int wday)
{
	int dow = wday + 1; /* Quartz: 1 = SUN */
	if (c->last_dow)
		return dow == first_of(c->set[F_DOW], 7) + 1 && mday + 7 > days_in_month(year, month);
	if (c->nth_dow)
		return dow == first_of(c->set[F_DOW], 7) + 1 && (mday - 1) / 7 + 1 == c->nth_dow;
	return c->set[F_DOW][dow - 1];
}

static bool cron_matches(const struct cron *c, const struct tm *tm)
{
	int year = tm->tm_year + 1900, month = tm->tm_mon + 1;
	if (year < YEAR_LO || year > YEAR_HI || !c->set[F_YEAR][year - YEAR_LO])
		return false;
	if (!c->set[F_SEC][tm->tm_sec > 59 ? 59 : tm->tm_sec] || !c->set[F_MIN][tm->tm_min] ||
	    !c->set[F_HOUR][tm->tm_hour] || !c->set[F_MONTH][month - 1])
		return false;
	if (c->dom_q)
		return dow_matches(c, year, month, tm->tm_mday, tm->tm_wday);
	return dom_matches(c, year, month, tm->tm_mday);
}

/* ---- daily ranges ---- */

/* Java's Integer.parseInt on s[0..n): an optional sign, then decimal digits, and nothing else (no white space).
 * Returns 0 with the value, or -EINVAL (also beyond 10^9, far past any field here). */
static int java_parse_int(const char *s, size_t n, long *ret)
{
	size_t i = 0;
	bool neg = false;
	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		i++;
	}
	if (i == n)
		return -EINVAL;
	long v = 0;
	for (; i < n; i++) {
		if (!isdigit((unsigned char)s[i]) || v > 100000000)
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = neg ? -v : v;
	return 0;
}

/* A time of day as Quartz's DailyCalendar reads it: split on ':' with empty pieces dropped (StringTokenizer),
 * 2 to 4 pieces hour, minute[, second[, millisecond]], each an Integer.parseInt, hour 0-23, minute and second
 * 0-59, millisecond 0-999. */
static int parse_hms(const char *s, size_t n, int *ret_ms)
{
	long v[4] = {0, 0, 0, 0};
	int k = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] == ':') {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && s[j] != ':')
			j++;
		if (k == 4 || java_parse_int(s + i, j - i, &v[k]) < 0)
			return -EINVAL;
		k++;
		i = j;
	}
	if (k < 2 || v[0] < 0 || v[0] > 23 || v[1] < 0 || v[1] > 59 || v[2] < 0 || v[2] > 59 || v[3] < 0 || v[3] > 999)
		return -EINVAL;
	*ret_ms = (int)(((v[0] * 60 + v[1]) * 60 + v[2]) * 1000 + v[3]);
	return 0;
}

/* Java's String.split: the pieces of s[0..n) between the separators, trailing empty ones dropped. Returns how
 * many pieces there are (up to max are stored in at[]/len[]). */
static int java_split(const char *s, size_t n, const char *sep, const char *at[], size_t len[], int max)
{
	size_t sl = strlen(sep);
	int count = 0, nonempty = 0;
	const char *p = s, *end = s + n;
	for (;;) {
		const char *q = p;
		while (q + sl <= end && memcmp(q, sep, sl))
			q++;
		bool last = q + sl > end;
		if (last)
			q = end;
		if (count < max) {
			at[count] = p;
			len[count] = (size_t)(q - p);
		}
		count++;
		if (q > p)
			nonempty = count;
		if (last)
			break;
		p = q + sl;
	}
	return nonempty; /* the trailing empty pieces do not count */
}

/* 1: a daily range (start/end set), 0: not a daily range, as the operator decides: the part splits on '-' into
 * exactly two times of day that DailyCalendar takes, the first before the second. -EINVAL: two such times, the
 * first not before the second (DailyCalendar refuses it; it cannot be a cron expression either). */
static int daily_parse(const char *s, int *start, int *end)
{
	const char *at[2];
	size_t len[2];
	if (java_split(s, strlen(s), "-", at, len, 2) != 2)
		return 0;
	if (parse_hms(at[0], len[0], start) < 0 || parse_hms(at[1], len[1], end) < 0)
		return 0;
	return *start < *end ? 1 : -EINVAL;
}

/* ---- expressions ---- */

struct sub {
	bool daily;
	int start, end;
	struct cron cron;
};

/* Splits on "&&" as the operator does (Java's String.split: trailing empty parts dropped) and parses every part,
 * stripped of white space: a daily range when it reads as one, else a cron expression. Returns the number of
 * parts (1 or 2) or -EINVAL. */
static int period_parse(const char *expr, struct sub subs[2], char **err)
{
	const char *at[3];
	size_t len[3];
	int n = java_split(expr, strlen(expr), "&&", at, len, 3);
	if (n > 2) {
		*err = xstrdup("at most one daily range and one cron expression can be joined with &&");
		return -EINVAL;
	}
	if (n == 0) {
		*err = xstrdup("empty expression");
		return -EINVAL;
	}
	bool have_daily = false, have_cron = false;
	for (int i = 0; i < n; i++) {
		char *part = xstrndup(at[i], len[i]);
		char *s = part;
		while (isspace((unsigned char)*s))
			s++;
		size_t sl = strlen(s);
		while (sl && isspace((unsigned char)s[sl - 1]))
			s[--sl] = '\0';
		int r = 0;
		int d = daily_parse(s, &subs[i].start, &subs[i].end);
		if (d == -EINVAL) {
			*err = xstrdup("a daily range must start before it ends (to span midnight, give two ranges: "
			               "22:00:00-23:59:59;00:00:00-06:00:00)");
			r = -EINVAL;
		} else if (d == 1) {
			subs[i].daily = true;
			if (have_daily) {
				*err = xstrdup("two daily ranges joined with && (give one daily range and one cron "
				               "expression)");
				r = -EINVAL;
			}
			have_daily = true;
		} else {
			subs[i].daily = false;
			char *why = NULL;
			r = cron_parse(s, &subs[i].cron, &why);
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

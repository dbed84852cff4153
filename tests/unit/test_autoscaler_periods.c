/* test_autoscaler_periods: job.autoscaler.excluded.periods (reference 3.9): Quartz cron expressions
 * (lists, ranges that wrap, increments, names, L, L-n, LW, nW, nL, n#k, the optional year), daily ranges
 * HH:mm:ss-HH:mm:ss (inclusive to the millisecond), "&&" of one of each, and the syntax errors. The
 * process runs in UTC here; the calendar facts are in the comments (2026-01-01 is a Thursday). */
#include "unit.h"

#include <time.h>

#include "as_internal.h"

/* epoch milliseconds, UTC */
#define THU_0101_0000 1767225600000LL
#define THU_0101_0930 1767259800000LL
#define THU_0101_1700 1767286800000LL
#define THU_0101_2300 1767308400000LL
#define THU_0101_2330 1767310200000LL
#define SAT_0103_1000 1767434400000LL
#define THU_0115_1200 1768478400000LL
#define FRI_0116_1200 1768564800000LL
#define FRI_0130_1200 1769774400000LL
#define SAT_0131_1200 1769860800000LL
#define MON_0202_1200 1770033600000LL
#define SAT_0228_1200 1772280000000LL
#define FRI_0320_1200 1774008000000LL
#define FRI_0529_1200 1780056000000LL
#define THU_2024_0229_1200 1709208000000LL
#define YEAR_MS (365LL * 86400 * 1000)

static int set_utc(void **state)
{
	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	return 0;
}

static void expect(const char *expr, int64_t t, bool want, int line)
{
	char *why = NULL;
	if (as_period_check(expr, &why) < 0) {
		print_error("line %d: \"%s\" does not parse: %s\n", line, expr, why);
		free(why);
		fail();
	}
	if (as_period_matches(expr, t) != want) {
		print_error("line %d: \"%s\" at %lld: expected %s\n", line, expr, (long long)t,
		            want ? "match" : "no match");
		fail();
	}
}
#define YES(expr, t) expect(expr, t, true, __LINE__)
#define NO(expr, t) expect(expr, t, false, __LINE__)

static void test_cron_basics(void **state)
{
	(void)state;
	/* working hours on weekdays */
	YES("* * 9-17 ? * MON-FRI", THU_0101_0930);
	NO("* * 9-17 ? * MON-FRI", SAT_0103_1000);
	NO("* * 9-17 ? * MON-FRI", THU_0101_0000);
	YES("* * 9-17 ? * 2-6", THU_0101_0930); /* 1 = SUN, so MON-FRI = 2-6 */
	/* increments: 0/15 minutes matches :00, :15, :30, :45 */
	YES("0 0/15 * * * ?", THU_0101_0930);
	NO("0 0/15 * * * ?", THU_0101_0930 + 60000);
	YES("0 */30 * * * ?", THU_0101_0930);
	YES("0 30/40 9 * * ?", THU_0101_0930); /* 30, 70 -> only :30 */
	YES("0 0-30/15 9 * * ?", THU_0101_0930);
	/* seconds matter: "0 30 9" matches 09:30:00 but not 09:30:01 */
	YES("0 30 9 * * ?", THU_0101_0930);
	NO("0 30 9 * * ?", THU_0101_0930 + 1000);
	/* a range that wraps around midnight: 22, 23, 0, 1, 2 */
	YES("0 0 22-2 * * ?", THU_0101_2300);
	YES("0 0 22-2 * * ?", THU_0101_0000);
	NO("0 0 22-2 * * ?", THU_0101_0930);
	/* lists, names, lower case */
	YES("0 0 12 * JAN,MAR ?", FRI_0320_1200);
	NO("0 0 12 * JAN,MAR ?", SAT_0228_1200);
	YES("0 0 12 ? * fri", FRI_0116_1200);
	/* the optional year */
	YES("0 0 12 * * ? 2026", FRI_0320_1200);
	NO("0 0 12 * * ? 2025", FRI_0320_1200);
	YES("0 0 12 * * ? 2024-2030/2", FRI_0320_1200);
	NO("0 0 12 * * ? 2024-2030/2", FRI_0320_1200 + YEAR_MS);
}

static void test_cron_specials(void **state)
{
	(void)state;
	/* L: the last day of the month (January has 31 days; February 2026 28, February 2024 29) */
	YES("0 0 12 L * ?", SAT_0131_1200);
	NO("0 0 12 L * ?", FRI_0130_1200);
	YES("0 0 12 L * ?", SAT_0228_1200);
	YES("0 0 12 L * ?", THU_2024_0229_1200);
	YES("0 0 12 L-1 * ?", FRI_0130_1200);
	/* LW: the last weekday; January 31 2026 is a Saturday, so Friday the 30th */
	YES("0 0 12 LW * ?", FRI_0130_1200);
	NO("0 0 12 LW * ?", SAT_0131_1200);
	/* May 31 2026 is a Sunday: Friday the 29th */
	YES("0 0 12 LW * ?", FRI_0529_1200);
	/* nW: the nearest weekday; the 15th is a Thursday; February 1 2026 is a Sunday -> Monday the 2nd
	 * (not back into January); January 31 is a Saturday -> Friday the 30th */
	YES("0 0 12 15W * ?", THU_0115_1200);
	NO("0 0 12 15W * ?", FRI_0116_1200);
	YES("0 0 12 1W * ?", MON_0202_1200);
	YES("0 0 12 31W * ?", FRI_0130_1200);
	/* nL: the last Friday (6) of the month; n#k: the third Friday (the 2nd, 9th, 16th) */
	YES("0 0 12 ? * 6L", FRI_0130_1200);
	NO("0 0 12 ? * 6L", FRI_0116_1200);
	YES("0 0 12 ? * FRI#3", FRI_0116_1200);
	YES("0 0 12 ? * 6#3", FRI_0116_1200);
	NO("0 0 12 ? * FRI#3", FRI_0130_1200);
	/* L alone in day-of-week is Saturday */
	YES("0 0 12 ? * L", SAT_0131_1200);
	NO("0 0 12 ? * L", FRI_0130_1200);
}

static void test_daily_and_combined(void **state)
{
	(void)state;
	YES("09:00:00-17:00:00", THU_0101_0930);
	YES("09:00:00-17:00:00", THU_0101_1700);    /* the end is included ... */
	NO("09:00:00-17:00:00", THU_0101_1700 + 1); /* ... to the millisecond */
	NO("09:00:00-17:00:00", THU_0101_2330);
	YES(" 09:00:00-17:00:00 ", THU_0101_0930); /* spaces around the expression */
	/* one of each, joined with &&: both must match */
	YES("09:00:00-17:00:00 && * * * ? * MON-FRI", THU_0101_0930);
	NO("09:00:00-17:00:00 && * * * ? * MON-FRI", SAT_0103_1000);
	YES("* * * ? * SAT,SUN && 08:00:00-12:00:00", SAT_0103_1000);
	NO("* * * ? * SAT,SUN && 08:00:00-09:00:00", SAT_0103_1000);

	struct as_options o;
	as_options_defaults(&o);
	assert_false(as_in_excluded_period(&o, THU_0101_0930));
	strv_push(&o.excluded_periods, "0 0 0 1 1 ? 2030");
	strv_push(&o.excluded_periods, "09:00:00-10:00:00");
	assert_true(as_in_excluded_period(&o, THU_0101_0930)); /* any expression */
	assert_false(as_in_excluded_period(&o, THU_0101_2330));
	as_options_free(&o);
}

static void test_invalid(void **state)
{
	(void)state;
	static const struct {
		const char *expr, *why;
	} cases[] = {
	    {"0 0 12 * * MON", "one of day-of-month and day-of-week must be '?'"},
	    {"0 0 12 ? * ?", "'?' can be given for day-of-month or day-of-week, not both"},
	    {"0 0 25 * * ?", "hours value out of range (0-23)"},
	    {"* * * * *", "this one has 5"},
	    {"0 0 12 L,5 * ?", "L, W and # cannot be combined with a list"},
	    {"0 0 12 ? * 8", "day-of-week value out of range (1-7)"},
	    {"0 0 12 32W * ?", "day-of-month: bad day in \"32W\""},
	    {"0 0 12 ? * FOO", "day-of-week: bad value \"FOO\""},
	    {"0 0 12 ? * FRI#6", "day-of-week: bad \"#\""},
	    {"0 ? 12 * * ?", "'?' is allowed only in day-of-month or day-of-week"},
	    {"09:00:00-17:00:00 && 10:00:00-11:00:00", "two daily ranges"},
	    {"0 0 * * * ? && 0 0 1 * * ?", "two cron expressions"},
	    {"0 * * * * ? && 09:00:00-10:00:00 && 10:00:00-11:00:00", "at most one daily range and one cron"},
	    {"", "empty expression"},
	    {"17:00:00-09:00:00", "must start before it ends"},
	    /* Quartz's DailyCalendar parses each end with Integer.parseInt: no white space inside */
	    {" 09:00:00 - 17:00:00 ", "neither a daily range"},
	    {"0 0 12 ? * 3-THU", "a range must end with a number"}, /* a number, then a name */
	    {"0 0 12 ? * MON-6", "bad name at the end of the range"},
	    {"0/60 * * * * ?", "increment out of range"},
	    {"0 0 12 ? * */12x", "'/' must be followed by a number"},
	    /* Quartz reads */ /* to the end */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *why = NULL;
		if (as_period_check(cases[i].expr, &why) == 0)
			fail_msg("\"%s\" should not parse", cases[i].expr);
		assert_contains(why, cases[i].why);
		free(why);
		/* an invalid expression never matches */
		assert_false(as_period_matches(cases[i].expr, THU_0101_0930));
	}
}

/* What Quartz 2.3 (the operator's CronExpression and DailyCalendar) takes although it reads oddly; found by
 * tests/quartz/parity.py against the real library, and taken the same way here. */
static void test_as_quartz_reads_it(void **state)
{
	(void)state;
	/* daily ranges: H:mm, a millisecond part, single digits, empty pieces between colons */
	YES("9:00-17:00", THU_0101_0930);
	YES("09:30:00:000-09:30:00:001", THU_0101_0930);
	NO("09:30:00:001-09:30:00:002", THU_0101_0930);
	/* a trailing "&&" with nothing after it is dropped (Java's String.split) */
	YES("09:00:00-17:00:00 &&", THU_0101_0930);
	/* any year: one that is past never matches */
	NO("0 0 12 * * ? 1969", THU_0101_0930);
	/* an increment of 0 is the value alone; empty list items are skipped */
	YES("0 30/0 9 * * ?", THU_0101_0930);
	NO("0 31/0 9 * * ?", THU_0101_0930);
	YES("0 0 12 1,,15 * ?", THU_0115_1200);
	/* what follows a value and is not looked at is ignored: 30x is 30; the increment of a range of names is
	 * dropped (JAN-MAR/2 is JAN-MAR); fields after the year are dropped */
	YES("0 30x 9 * * ?", THU_0101_0930);
	YES("0 30 9 ? JAN-MAR/2 THU", FRI_0130_1200 - 29 * 86400000LL - 9000000LL);
	YES("0 30 9 * * ? 2026 extra", THU_0101_0930);
	/* what follows '#' is read by Integer.parseInt: a sign is taken */
	YES("0 0 12 ? * FRI#+3", FRI_0116_1200);
	/* a day-of-week name with L: the last Friday */
	YES("0 0 12 ? * FRIL", FRI_0130_1200);
	NO("0 0 12 ? * FRIL", FRI_0116_1200);
	/* 31W in a 30-day month: Quartz's lenient calendar takes April 31 as May 1 2027 (a Saturday), so the
	 * Friday before, April 30 */
	YES("0 0 0 31W * ?", 1809043200000LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cron_basics),        cmocka_unit_test(test_cron_specials),
	    cmocka_unit_test(test_daily_and_combined), cmocka_unit_test(test_invalid),
	    cmocka_unit_test(test_as_quartz_reads_it),
	};
	return cmocka_run_group_tests_name("autoscaler_periods", tests, set_utc, NULL);
}

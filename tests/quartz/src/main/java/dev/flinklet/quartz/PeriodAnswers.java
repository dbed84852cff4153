/*
 * PeriodAnswers: what the Flink autoscaler (its CalendarUtils, on Quartz) answers for the excluded periods
 * (job.autoscaler.excluded.periods): whether an expression is valid and whether instants fall in it, and, for
 * the cron part, Quartz's next fire time after an instant. tests/quartz/parity.py compares these answers with
 * flinklet's own (src/as_periods.c through build/quartz/period_answers).
 *
 * The rules are the operator's, restated: an expression is split on "&&" into at most two parts, each stripped;
 * a part is a daily range when it splits on "-" into exactly two strings that Quartz's DailyCalendar takes (its
 * time range inverted: the range itself is "included"), else a Quartz CronCalendar; two parts must be one of each.
 * An instant is in the expression when every part includes it; the cron part's answer is its CronExpression's
 * isSatisfiedBy (the operator does not use CronCalendar.isTimeIncluded, which is the opposite).
 *
 * Input (stdin), one case a line: the expression, the unit separator 0x1F, instants in epoch milliseconds joined by
 * ",". Output, one line a case:
 *   mode "answers": "invalid", or "valid" TAB one '0' or '1' an instant (in the expression or not), 'E' where
 *                   Quartz throws (its CronExpression fails on a few expressions it accepted);
 *   mode "next":    the next fire times (epoch ms, -1 for none) of the expression's cron part after each instant,
 *                   joined by ","; empty when the expression is invalid or has no cron part.
 * Time zone: the JVM's default, as in the operator (the parity run sets UTC on both sides).
 */
package dev.flinklet.quartz;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Date;

import org.quartz.impl.calendar.CronCalendar;
import org.quartz.impl.calendar.DailyCalendar;

public final class PeriodAnswers {

    private static DailyCalendar daily(String part) {
        String[] ends = part.split("-");
        if (ends.length != 2) {
            return null;
        }
        try {
            DailyCalendar d = new DailyCalendar(ends[0], ends[1]);
            d.setInvertTimeRange(true);
            return d;
        } catch (Exception e) {
            return null;
        }
    }

    private static CronCalendar cron(String part) {
        try {
            return new CronCalendar(part);
        } catch (Exception e) {
            return null;
        }
    }

    /** The parts of a valid expression (a DailyCalendar or a CronCalendar each), or null when it is invalid. */
    private static Object[] parse(String expression) {
        String[] parts = expression.split("&&");
        if (parts.length > 2) {
            return null;
        }
        Object[] out = new Object[parts.length];
        int dailies = 0, crons = 0;
        for (int i = 0; i < parts.length; i++) {
            String part = parts[i].strip();
            DailyCalendar d = daily(part);
            CronCalendar c = cron(part);
            if (d == null && c == null) {
                return null;
            }
            if (d != null) {
                dailies++;
            }
            if (c != null) {
                crons++;
            }
            out[i] = d != null ? d : c; /* as the operator evaluates: daily first */
        }
        if (parts.length == 2 && (dailies == 0 || crons == 0)) {
            return null;
        }
        return out;
    }

    private static boolean in(Object[] parts, long ms) {
        boolean result = true;
        for (Object p : parts) {
            if (p instanceof DailyCalendar) {
                result = result && ((DailyCalendar) p).isTimeIncluded(ms);
            } else {
                result = result && ((CronCalendar) p).getCronExpression().isSatisfiedBy(new Date(ms));
            }
        }
        return result;
    }

    public static void main(String[] args) throws Exception {
        boolean next = args.length > 0 && args[0].equals("next");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            int sep = line.indexOf('\u001f');
            String expression = sep < 0 ? line : line.substring(0, sep);
            String[] instants = sep < 0 || sep + 1 == line.length() ? new String[0] : line.substring(sep + 1).split(",");
            Object[] parts = parse(expression);
            StringBuilder b = new StringBuilder();
            if (next) {
                CronCalendar c = null;
                for (Object p : parts == null ? new Object[0] : parts) {
                    if (p instanceof CronCalendar) {
                        c = (CronCalendar) p;
                    }
                }
                for (int i = 0; c != null && i < instants.length; i++) {
                    Date after;
                    try {
                        after = c.getCronExpression().getNextValidTimeAfter(new Date(Long.parseLong(instants[i])));
                    } catch (RuntimeException e) {
                        after = null; /* Quartz fails on some expressions it accepted (see "answers") */
                    }
                    b.append(i > 0 ? "," : "").append(after == null ? -1 : after.getTime());
                }
            } else if (parts == null) {
                b.append("invalid");
            } else {
                b.append("valid\t");
                for (String t : instants) {
                    char answer;
                    try {
                        answer = in(parts, Long.parseLong(t)) ? '1' : '0';
                    } catch (RuntimeException e) {
                        answer = 'E'; /* Quartz throws: the operator's autoscaler would fail this cycle */
                    }
                    b.append(answer);
                }
            }
            out.write(b.toString());
            out.write('\n');
        }
        out.flush();
    }
}

#!/usr/bin/env python3
"""The excluded periods of the autoscaler (job.autoscaler.excluded.periods) against the real Quartz library.

A seeded generator writes thousands of expressions, valid and invalid (Quartz cron expressions with every
special: names, ranges, lists, increments, ?, L, L-n, LW, nW, nL, n#k, a year field; daily ranges in the forms
Quartz's DailyCalendar takes and in forms it does not; one of each joined with &&), and instants for each: random
ones from 2020 to 2032, Quartz's next fire time after them and the milliseconds and seconds around it, and the
edges of daily ranges. Quartz (tests/quartz/PeriodAnswers.java, the operator's CalendarUtils rules) and flinklet
(build/quartz/period_answers on src/as_periods.c) answer for every one: is the expression valid, and is each
instant in it. Any difference fails the run and is printed. Both run in UTC.

usage: parity.py --java-cp CP --answers BIN [--seed N] [--count N] [--show N]
"""
import argparse
import collections
import os
import random
import subprocess
import sys

SEP = "\x1f"
DAY = 86_400_000
START_MS = 1_577_836_800_000  # 2020-01-01T00:00:00Z
END_MS = 1_988_150_400_000  # 2033-01-01T00:00:00Z
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


def plain_field(r, lo, hi, names=None):
    """One field of numbers (or names) in [lo, hi]: *, n, a-b, a/b, */b, a-b/c or a list of those."""
    def value():
        v = r.randint(lo, hi)
        if names and r.random() < 0.3:
            return names[v - lo]
        return str(v)

    def item():
        k = r.random()
        if k < 0.3:
            return value()
        if k < 0.55:
            return f"{value()}-{value()}"
        if k < 0.7:
            return f"{value()}/{r.randint(1, hi - lo + 1)}"
        if k < 0.8:
            return f"*/{r.randint(1, hi - lo + 1)}"
        if k < 0.9:
            return f"{value()}-{value()}/{r.randint(1, max(1, (hi - lo) // 2))}"
        return "*"

    if r.random() < 0.25:
        return ",".join(item() for _ in range(r.randint(2, 3)))
    return item()


def dom_field(r):
    k = r.random()
    if k < 0.12:
        return "L"
    if k < 0.2:
        return f"L-{r.randint(0, 30)}"
    if k < 0.26:
        return "LW"
    if k < 0.36:
        return f"{r.randint(1, 31)}W"
    return plain_field(r, 1, 31)


def dow_field(r):
    k = r.random()
    if k < 0.1:
        return f"{r.randint(1, 7)}L"
    if k < 0.16:
        return f"{r.choice(DAYS)}L"
    if k < 0.3:
        return f"{r.choice([str(r.randint(1, 7)), r.choice(DAYS)])}{r.choice(['#'] * 6 + ['#+', '#0'])}{r.randint(1, 5)}"
    if k < 0.35:
        return "L"
    return plain_field(r, 1, 7, DAYS)


# Wrong in one place: what each mutation breaks (Quartz must say invalid where flinklet does, and the reverse).
MUTATIONS = [
    lambda f, r: f.__setitem__(r.randrange(3), str(r.choice([60, 61, 99, -1]))),
    lambda f, r: f.__setitem__(2, str(r.choice([24, 25]))),
    lambda f, r: f.__setitem__(3, str(r.choice([0, 32]))) if f[3] != "?" else f.__setitem__(5, "8"),
    lambda f, r: f.__setitem__(4, str(r.choice([0, 13]))),
    lambda f, r: f.__setitem__(3 if f[3] != "?" else 5, "?") or f.__setitem__(5 if f[5] != "?" else 3, "?"),
    lambda f, r: f.__setitem__(3, "*") or f.__setitem__(5, "*"),
    lambda f, r: f.append("2025") or f.append("x"),
    lambda f, r: f.pop(),
    lambda f, r: f.__setitem__(r.randrange(3), r.choice(["a", "1-", "-1", "1,,2", "1/0", "/", "5/", "*/", "L", "W", "#"])),
    lambda f, r: f.__setitem__(5, f"{r.randint(1, 7)}#{r.choice([0, 6])}") if f[5] != "?" else f.__setitem__(3, "L-31"),
    lambda f, r: f.__setitem__(3, "L,5") if f[3] != "?" else f.__setitem__(5, "2L,3"),
    lambda f, r: f.__setitem__(4, r.choice(["JANUARY", "FOO", "JAN-FOO", "13-1"])),
    lambda f, r: f.__setitem__(1, "?"),
    lambda f, r: f.__setitem__(6 if len(f) > 6 else 5, r.choice(["1969", "2100", "2024-2019"])) if len(f) > 6 else f.append("1969"),
    lambda f, r: f.__setitem__(0, f[0].lower() + "x"),
]


def cron_expr(r, bad):
    f = [plain_field(r, 0, 59), plain_field(r, 0, 59), plain_field(r, 0, 23)]
    # narrow the time of day now and then, so that matches are not all at one end
    if r.random() < 0.5:
        f[0] = r.choice(["0", "*", "0/30", "15,45", "*"])
    if r.random() < 0.5:
        f[1] = r.choice(["*", "0", "0-29", "*/15"])
    if r.random() < 0.5:
        dom, dow = dom_field(r), "?"
    else:
        dom, dow = "?", dow_field(r)
    month = plain_field(r, 1, 12, MONTHS) if r.random() < 0.6 else "*"
    f += [dom, month, dow]
    if r.random() < 0.3:
        f.append(r.choice(["*", f"{r.randint(2020, 2032)}", f"{r.randint(2020, 2026)}-{r.randint(2026, 2035)}",
                           f"{r.randint(2020, 2025)}/{r.randint(1, 4)}", "2024,2026,2028"]))
    if r.random() < 0.1:
        f = [x.lower() for x in f]
    if bad:
        r.choice(MUTATIONS)(f, r)
    sep = r.choice([" "] * 8 + ["  ", "\t"])
    return sep.join(f)


def hms(r, bad):
    h, m, s, ms = r.randint(0, 23), r.randint(0, 59), r.randint(0, 59), r.randint(0, 999)
    k = r.random()
    if bad:
        return r.choice([f"{h}:{m}:{s}:{ms}:1", f"{h}", f"{h}:x", f"24:00", f"{h}:60", f"{h}:{m}:60",
                         f"{h}:{m}:{s}:1000", f" {h:02d}:{m:02d}", f"{h:02d}:{m:02d} ", "", f"{h}::{m}",
                         f"+{h}:{m}", f"-{h}:{m}", f"{h:02d}.{m:02d}"])
    if k < 0.55:
        return f"{h:02d}:{m:02d}:{s:02d}"
    if k < 0.7:
        return f"{h:02d}:{m:02d}"
    if k < 0.8:
        return f"{h}:{m}:{s}"
    if k < 0.9:
        return f"{h:02d}:{m:02d}:{s:02d}:{ms:03d}"
    return f"{h:02d}:{m:02d}:{s:02d}:{ms}"


def daily_expr(r, bad):
    a, b = hms(r, bad and r.random() < 0.5), hms(r, bad and r.random() < 0.5)
    if not bad and r.random() < 0.8 and a > b:
        a, b = b, a  # mostly in order (string order is a fair stand-in), sometimes reversed
    sep = "-" if not bad or r.random() < 0.7 else r.choice([" - ", "--", "-" + "00:00-"])
    return a + sep + b


def expression(r):
    bad = r.random() < 0.3
    k = r.random()
    if k < 0.5:
        return cron_expr(r, bad)
    if k < 0.75:
        return daily_expr(r, bad)
    c, d = cron_expr(r, bad and r.random() < 0.5), daily_expr(r, bad and r.random() < 0.5)
    parts = [d, c] if r.random() < 0.5 else [c, d]
    joiner = r.choice([" && ", "&&", "  &&  "])
    if bad and r.random() < 0.3:
        parts = r.choice([[c, c], [d, d], [c, d, c], [c, ""]])
    return joiner.join(parts)


def daily_edges(expr):
    """Instants at the edges of a daily range's ends (on a few days), when they read as H:M[:S[:ms]]."""
    out = []
    for part in expr.split("&&"):
        ends = part.strip().split("-")
        if len(ends) != 2:
            continue
        for e in ends:
            try:
                nums = [int(x) for x in e.split(":") if x != ""]
            except ValueError:
                continue
            if not 2 <= len(nums) <= 4:
                continue
            nums += [0] * (4 - len(nums))
            of_day = ((nums[0] * 60 + nums[1]) * 60 + nums[2]) * 1000 + nums[3]
            out.append(of_day)
    return out


def instants_for(r, expr):
    ts = [r.randrange(START_MS, END_MS) for _ in range(6)]
    ts += [r.randrange(START_MS, END_MS) // 1000 * 1000 for _ in range(4)]
    for of_day in daily_edges(expr):
        day = r.randrange(START_MS, END_MS) // DAY * DAY
        ts += [day + of_day + d for d in (-1000, -1, 0, 1, 999, 1000)]
    return ts


def run(cmd, lines, env):
    p = subprocess.run(cmd, input="".join(lines), capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return p.stdout.splitlines()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--java-cp", required=True)
    ap.add_argument("--answers", required=True)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--show", type=int, default=25)
    a = ap.parse_args()
    r = random.Random(a.seed)
    env = dict(os.environ, TZ="UTC")
    java = ["java", "-Duser.timezone=UTC", "-Xshare:auto", "-cp", a.java_cp, "dev.flinklet.quartz.PeriodAnswers"]

    exprs = [expression(r) for _ in range(a.count)]
    exprs = [e.replace("\n", " ").replace(SEP, " ") for e in exprs]
    base = [instants_for(r, e) for e in exprs]
    # Quartz's next fire times after the random instants, and what is around them
    nexts = run(java + ["next"], [e + SEP + ",".join(map(str, ts)) + "\n" for e, ts in zip(exprs, base)], env)
    cases = []
    for e, ts, nx in zip(exprs, base, nexts):
        more = []
        for t in (int(x) for x in nx.split(",") if x):
            if t >= 0:
                more += [t + d for d in (-1000, -1, 0, 1, 999, 1000)]
        cases.append((e, ts + more))
    lines = [e + SEP + ",".join(map(str, ts)) + "\n" for e, ts in cases]
    quartz = run(java, lines, env)
    ours = run([a.answers], lines, env)
    if len(quartz) != len(cases) or len(ours) != len(cases):
        sys.exit(f"answers missing: {len(cases)} cases, Quartz {len(quartz)}, flinklet {len(ours)}")

    diffs, throws = [], []
    valid = instants = inside = 0
    for (e, ts), q, o in zip(cases, quartz, ours):
        if q.startswith("valid"):
            valid += 1
            instants += len(ts)
            inside += q.count("1")
        if q == o:
            continue
        if q.split("\t")[0] != o.split("\t")[0]:
            diffs.append((e, f"Quartz: {q.split(chr(9))[0]}, flinklet: {o.split(chr(9))[0]}"))
            continue
        qa, oa = q.split("\t")[1], o.split("\t")[1]
        if "E" in qa:
            throws.append(e)
        wrong = [(t, qa[i], oa[i]) for i, t in enumerate(ts) if qa[i] != oa[i] and qa[i] != "E"]
        if not wrong:
            continue
        t, qv, ov = wrong[0]
        diffs.append((e, f"{len(wrong)} instant(s) differ, first {t} ({fmt(t)}): Quartz {qv}, flinklet {ov}"))
    print(f"quartz-parity: seed {a.seed}: {len(cases)} expressions ({valid} valid, {len(cases) - valid} invalid "
          f"by Quartz), {instants} instants on the valid ones ({inside} in a period): {len(diffs)} difference(s)")
    if throws:
        print(f"  {len(throws)} valid expression(s) on which Quartz throws (not compared there), e.g. {throws[0]!r}")
    kinds = collections.Counter(d.split(":")[0] if "instant" not in d else "membership" for _, d in diffs)
    for k, n in kinds.items():
        print(f"  {n} x {k}")
    for e, d in diffs[:a.show]:
        print(f"  {e!r}: {d}")
    return 1 if diffs else 0


def fmt(ms):
    import datetime
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


if __name__ == "__main__":
    sys.exit(main())

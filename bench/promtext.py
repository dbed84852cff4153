"""The parse of Flink's metrics scrape on flinklet's event loop (issue 36, item 2): build/bench-bin/promtext_parse
(bench/promtext_parse.c) times promtext_parse on a generated scrape of 10,000 gauge families (HELP, TYPE and two
samples each, with the labels of Flink's reporter) just under the 4 MiB cap flinklet keeps, the largest scrape
flinklet takes; the loop does this once per scrape (every 5 s while the job runs). BEFORE is the same binary and
input against the parser that looked families up in lists (commit e7a4e9b), on the machine of docs/performance.md."""
import os
import subprocess

from common import BIN, log, row

PROMTEXT_PARSE = os.path.join(os.path.dirname(BIN), "bench-bin", "promtext_parse")
FAMILIES = 10000
# e7a4e9b (families in lists searched from the start): the median of 3 parses of the same input, CPU time of the
# thread (wall clock 2.8 s on the 2 shared cores it was measured on)
BEFORE_CPU_MS = 1023


def run():
    out = subprocess.run([PROMTEXT_PARSE, str(FAMILIES), "9"], capture_output=True, text=True, timeout=600,
                         check=True).stdout
    got = dict(line.split(" ", 1) for line in out.splitlines())
    log(f"promtext_parse: {out.strip()}")
    method = (f"bench/promtext_parse.c: a generated scrape of {got['families']} families, {got['samples']} samples, "
              f"{int(got['bytes']) / (1 << 20):.2f} MiB; {got['runs']} parses")
    return [row("promtext_parse of a 10,000-family 4 MiB scrape: CPU time (median, slowest)",
                f"{float(got['cpu_median_ms']):.1f} ms, {float(got['cpu_slowest_ms']):.1f} ms", method),
            row("promtext_parse, wall clock (fastest, median, slowest)",
                f"{float(got['fastest_ms']):.1f} ms, {float(got['median_ms']):.1f} ms, {float(got['slowest_ms']):.1f} ms",
                method),
            row("promtext_parse before (families in lists, e7a4e9b): CPU time", f"{BEFORE_CPU_MS} ms",
                "the same program and input against the parser of e7a4e9b, median of 3")]

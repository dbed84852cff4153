"""7. The status page and what it reads: requests per second for GET / (the page), /status, /events, /autoscaler
and /metrics from the same load generator as the http benchmark (wrk, or its Python fallback), one path after the
other, against a flinklet whose autoscaler has evaluated for a while (recommendations only, control loop 3 s), so
/autoscaler carries a timeline and /metrics the autoscaler's gauges; and the size of each answer. The page polls
/status, /events and /autoscaler every 5 s: the last row is what one open page costs the supervisor."""
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from common import Flinklet, log, print_rows, row, wait_for  # noqa: E402
from testkit import RECOMMENDING_AUTOSCALER as AUTOSCALER  # noqa: E402
from http_endpoint import CONNS, LOAD_S, WRK, Load  # noqa: E402

PATHS = ("/", "/status", "/events", "/autoscaler", "/metrics")
TIMELINE = int(os.environ.get("BENCH_PAGE_TIMELINE", "20"))


def fetch(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read()


def run():
    f = Flinklet("page", conf=AUTOSCALER)
    rps, size = {}, {}
    try:
        f.start()
        f.wait_stable()
        wait_for(lambda: len(json.loads(fetch(f.http_port, "/autoscaler"))["timeline"]) >= TIMELINE, 300,
                 f"{TIMELINE} autoscaler cycles in the timeline")
        for path in PATHS:
            size[path] = len(fetch(f.http_port, path))
            log(f"page: {'wrk' if WRK else 'python load'} on {path} for {LOAD_S} s ({size[path]} bytes)")
            ld = Load(f.http_port, path, LOAD_S)
            rps[path] = (ld.wait(), ld.errors)
    finally:
        f.stop()
    gen = f"wrk -t1 -c{CONNS} -d{LOAD_S}s" if WRK else f"Python keep-alive generator, {CONNS} connections, {LOAD_S} s"
    rows = [row(f"GET {p} throughput", f"{rps[p][0]:,.0f} req/s ({rps[p][1]} errors), {size[p]:,} bytes",
                f"{gen} on loopback, job RUNNING, {TIMELINE}+ autoscaler cycles kept") for p in PATHS]
    per_poll_ms = sum(1000.0 / rps[p][0] for p in ("/status", "/events", "/autoscaler") if rps[p][0])
    rows.append(row("one open page, per 5 s poll", f"{per_poll_ms:.2f} ms of the supervisor's loop, "
                    f"{sum(size[p] for p in ('/status', '/events', '/autoscaler')):,} bytes",
                    "1/throughput of /status, /events and /autoscaler, summed (an upper bound: the generator's "
                    f"{CONNS} connections overlap)"))
    return rows


if __name__ == "__main__":
    print_rows("page", run())

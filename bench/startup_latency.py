"""6. Startup latency (issue 13, "no blind window"): how long after the job really runs flinklet knows it, i.e. from
Flink's own log line of the last task switching from INITIALIZING to RUNNING (ExecutionGraph; the JVM's output,
which flinklet passes on to its own, in the bench's flinklet.log) to flinklet's JobRunning event (events.jsonl
timeMs). Until that event a SIGTERM waits in STOP_PENDING for its savepoint, /readyz says 503 and no health decision
is made. Target: a median under 500 ms.

Each round measures a start (a new flinklet on an empty state directory) and a restart (kill -9 of the JVM: the
supervisor starts it again from the newest checkpoint), for two settings side by side, interleaved:
  - now:      the defaults: while the job starts flinklet polls GET /jobs/overview (computed afresh by Flink on each
              request) every flinklet.rest.startup-poll-interval (200 ms); Flink's web.refresh-interval is left at
              its default (3 s), which only bounds how old GET /jobs/:id may be.
  - slowpoll: the same with startup polls every 2 s (= flinklet.rest.poll-interval), to show what the frequent
              startup polls are worth.
(Before issue 13 flinklet polled GET /jobs/:id every 2 s; docs/performance.md keeps those figures: median 1346 ms,
and 1594 ms with 200 ms polls of /jobs/:id, whose answers Flink caches for web.refresh-interval.)
Both clocks are this machine's (the log's local time, the events' epoch ms), read to the millisecond."""
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import Flinklet, log, log_tasks_running_ms, print_rows, row, wait_for  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_STARTUP_ROUNDS", "4"))  # each: a start and a restart per setting
TARGET_MS = 500
SETTINGS = {
    "now": {},
    "slowpoll": {"flinklet.rest.startup-poll-interval": "2 s"},
}
WHAT = {
    "now": "defaults: GET /jobs/overview every 200 ms while starting, Flink's web.refresh-interval (3 s)",
    "slowpoll": "the same with startup polls every 2 s (= flinklet.rest.poll-interval)",
}


def job_running_after(f, t_ms, previous=0):
    """timeMs of the first JobRunning event at or after t_ms (and after the event `previous`)."""
    for e in f.events():
        if e["type"] == "JobRunning" and e["timeMs"] >= t_ms - 1 and e["timeMs"] > previous:
            return e["timeMs"]
    return None


def measure(f, offset, t0_ms, previous=0):
    """(ms from the log's last task RUNNING to JobRunning, JobRunning's timeMs) for the start after offset."""
    ev = wait_for(lambda: job_running_after(f, t0_ms, previous), 240, "the JobRunning event", interval=0.1)
    n_tasks = f.status()["jobStatus"]["tasks"]["total"]
    t_log = wait_for(lambda: log_tasks_running_ms(f.log_path, offset, n_tasks), 10, "the tasks in the log")
    return ev - t_log, ev


def one_round(name, conf, i):
    """A start and a restart under one setting; returns the two latencies in ms."""
    f = Flinklet(f"startup-{name}-{i}", conf=conf, job={"upgradeMode": "last-state"})
    try:
        t0 = time.time() * 1000
        f.start()
        start_ms, ev = measure(f, 0, t0)
        st = f.wait_stable()
        f.wait_checkpoint(1)
        pid = st["jvm"]["pid"]
        offset = os.path.getsize(f.log_path)
        t1 = time.time() * 1000
        os.kill(pid, signal.SIGKILL)
        restart_ms, _ = measure(f, offset, t1, previous=ev)
    finally:
        f.stop()
    return start_ms, restart_ms


def summary(values):
    return (f"median {statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f}, "
            f"n={len(values)})")


def run():
    res = {name: {"start": [], "restart": []} for name in SETTINGS}
    for i in range(ROUNDS):
        order = list(SETTINGS.items())
        for name, conf in order[i % len(order):] + order[:i % len(order)]:  # each goes first in turn
            s, r = one_round(name, conf, i)
            res[name]["start"].append(s)
            res[name]["restart"].append(r)
            log(f"startup: round {i + 1}/{ROUNDS} {name}: start {s:.0f} ms, restart {r:.0f} ms")
    rows = []
    for name in SETTINGS:
        both = res[name]["start"] + res[name]["restart"]
        med = statistics.median(both)
        verdict = f"meets the {TARGET_MS} ms target" if med < TARGET_MS else f"misses the {TARGET_MS} ms target"
        rows.append(row(f"last task RUNNING (Flink's log) -> JobRunning, {name}",
                        f"{summary(both)}: {verdict}",
                        f"{WHAT[name]}; starts {summary(res[name]['start'])}, restarts after kill -9 "
                        f"{summary(res[name]['restart'])}; {ROUNDS} interleaved rounds"))
    now = statistics.median(res["now"]["start"] + res["now"]["restart"])
    slow = statistics.median(res["slowpoll"]["start"] + res["slowpoll"]["restart"])
    rows.append(row("blind window slowpoll / now", f"{slow / now:.1f}x shorter ({slow:.0f} -> {now:.0f} ms)"
                    if now > 0 else "n/a", "median over median of the two rows above"))
    return rows


if __name__ == "__main__":
    print_rows("startup latency", run())

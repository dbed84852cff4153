"""3. Shutdown: SIGTERM to flinklet (upgradeMode savepoint, the default) until it exits 0 with the savepoint
recorded in status.json, next to the savepoint's own duration as Flink reports it: the savepoint's entry in
GET /jobs/:id/checkpoints (end_to_end_duration, polled every 50 ms while the stop runs; the JVM ends right after),
else Flink's own log line `Completed checkpoint N ... checkpointDuration=`. The rest is split by flinklet's event
timestamps into: SIGTERM -> SavepointTriggered (flinklet reacting), savepoint (Flink), the JVM ending after the
savepoint (Flink's MiniCluster shutdown), JvmExited -> exit (flinklet)."""
import os
import re
import signal
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import Flinklet, get_json, log, now_ms, print_rows, row  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_SHUTDOWN_ROUNDS", "3"))


class SavepointWatch(threading.Thread):
    def __init__(self, port, job_id):
        super().__init__(daemon=True)
        self.port, self.job_id = port, job_id
        self.seen = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                for h in get_json(self.port, f"/jobs/{self.job_id}/checkpoints", timeout=1).get("history", []):
                    if h.get("is_savepoint") or "SAVEPOINT" in str(h.get("checkpoint_type", "")).upper():
                        self.seen[h["id"]] = h
            except (OSError, ValueError):
                pass
            time.sleep(0.05)


def log_duration(path, offset):
    """checkpointDuration of the last `Completed checkpoint` line Flink wrote after offset."""
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    found = re.findall(r"Completed (?:checkpoint|savepoint) (\d+) for job \w+ \(\d+ bytes, checkpointDuration=(\d+) ms",
                       text)
    return (int(found[-1][0]), int(found[-1][1])) if found else (None, None)


def log_time(path, offset, pattern):
    """Epoch ms of the first JVM log line after offset matching pattern (the log's local time, as time.time())."""
    import datetime
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    m = re.search(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*" + pattern, text, flags=re.M)
    if not m:
        return None
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000.0


def run():
    f = Flinklet("shutdown")
    res = {k: [] for k in ("total", "react", "savepoint", "jvm_end", "exit", "overhead", "ev_sp", "to_trigger",
                           "to_finished", "teardown")}
    sources = set()
    try:
        for i in range(ROUNDS):
            f.start()
            st = f.wait_stable()
            job_id = st["jobStatus"]["jobId"]
            f.wait_checkpoint(f.last_checkpoint_id() + 2)
            w = SavepointWatch(f.port, job_id)
            w.start()
            time.sleep(0.5)
            offset = os.path.getsize(f.log_path)
            t0 = now_ms()
            f.proc.send_signal(signal.SIGTERM)
            rc = f.proc.wait(60)
            t_exit = now_ms()
            w.stop.set()
            w.join()
            f.log.close()
            st = f.status()
            sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
            ok = rc == 0 and sp and sp["timeStamp"] >= t0 - 1
            ev = {t: f.first_event(t0, t) for t in ("SavepointTriggered", "SavepointCompleted", "JvmExited", "Stopped")}
            done = [h for h in w.seen.values() if h.get("status") == "COMPLETED"]
            if done:
                dur = done[-1]["end_to_end_duration"]
                sources.add("REST history")
            else:
                _, dur = log_duration(f.log_path, offset)
                sources.add("Flink log")
                if dur is None:
                    dur = ev["SavepointCompleted"] - ev["SavepointTriggered"]
                    sources.add("event times")
            total = t_exit - t0
            res["total"].append(total)
            res["savepoint"].append(dur)
            res["react"].append(ev["SavepointTriggered"] - t0)
            res["ev_sp"].append(ev["SavepointCompleted"] - ev["SavepointTriggered"])
            res["jvm_end"].append(ev["JvmExited"] - ev["SavepointTriggered"] - dur)
            t_trig = log_time(f.log_path, offset, r"Triggering checkpoint \d+ \(type=SavepointType")
            t_fin = log_time(f.log_path, offset, r"Job \S+ \(\w+\) switched from state RUNNING to FINISHED")
            if t_trig and t_fin:
                res["to_trigger"].append(t_trig - ev["SavepointTriggered"])
                res["to_finished"].append(t_fin - t_trig - dur)
                res["teardown"].append(ev["JvmExited"] - t_fin)
            res["exit"].append(t_exit - ev["JvmExited"])
            res["overhead"].append(total - dur)
            log(f"shutdown: round {i + 1}/{ROUNDS}: exit {rc} after {total:.0f} ms, savepoint {dur} ms, "
                f"recorded {bool(ok)}")
            f.proc = None
            if not ok:
                raise RuntimeError(f"round {i}: exit {rc}, savepoint {sp}")
    finally:
        f.stop()

    def med(k):
        return statistics.median(res[k])

    def spread(k):
        return f"median {med(k):.0f} ms (min {min(res[k]):.0f}, max {max(res[k]):.0f}, n={len(res[k])})"
    rows = [
        row("SIGTERM -> flinklet exit, savepoint recorded", spread("total"),
            "wall time from SIGTERM to the process's exit (code 0), status.json lastSavepoint newer than the signal"),
        row("savepoint duration (Flink)", spread("savepoint"),
            {"REST history": "end_to_end_duration of the savepoint in GET /jobs/:id/checkpoints history",
             "Flink log": "checkpointDuration of Flink's `Completed checkpoint N` log line for the savepoint (the REST "
                          "history is cached for web.refresh-interval and the JVM is gone first)"}.get(
                ",".join(sorted(sources)), "source(s): " + ", ".join(sorted(sources)))),
        row("flinklet overhead (total - savepoint)", f"{spread('overhead')}; of which SIGTERM -> trigger "
            f"{med('react'):.0f} ms, JVM ending after the savepoint {med('jvm_end'):.0f} ms, JvmExited -> exit "
            f"{med('exit'):.0f} ms",
            "split by flinklet's event timestamps (SavepointTriggered, JvmExited); the JVM's own teardown is Flink's"),
    ]
    if res["to_trigger"]:
        own = med("react") + med("exit")
        rows.append(row("where the rest goes (Flink's log)", f"stop request -> Flink triggers the savepoint "
                        f"{med('to_trigger'):.0f} ms, savepoint done -> job FINISHED {med('to_finished'):.0f} ms, job "
                        f"FINISHED -> JVM exited {med('teardown'):.0f} ms; flinklet's own share {own:.0f} ms "
                        f"({100 * own / med('total'):.1f} % of the stop)",
                        "JVM log lines `Triggering checkpoint N (type=SavepointType` and `Job ... switched from state "
                        "RUNNING to FINISHED` against flinklet's events; flinklet's own share = SIGTERM -> stop request "
                        "+ JvmExited -> exit"))
    return rows


if __name__ == "__main__":
    print_rows("shutdown", run())

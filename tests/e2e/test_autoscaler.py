"""The autoscaler in-process, on the real MiniCluster with short windows: a job whose per-record work
saturates its one counting subtask is scaled up in place (in the same JVM, every new subtask RUNNING and receiving
records, checkpoints completing, the output exactly once: what flinklet answers for, whatever CPU the machine has
left; whether saturation falls depends on that CPU); when the load drops it is scaled down after the scale-down
interval; after a kill -9 of the JVM the scaled parallelism is back in force. A new JVM
gets the overrides in its configuration (pipeline.jobvertex-parallelism-overrides): Flink 1.20 starts the job at
them, with no rescale after the restart; Flink 2.0 to 2.2 ignore that option for the job graph the CLI submits
(FLINK-38770), and the overrides are re-applied in place as before."""
import json
import os
import signal
import threading
import time

import pytest

from conftest import check_output, flink_version, wait_for

AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "job.autoscaler.scale-down.interval": "20 s",
    "job.autoscaler.restart.time": "5 s",
    "job.autoscaler.catch-up.duration": "10 s",
    "job.autoscaler.utilization.target": "0.6",
    "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "5 s",
    "metrics.fetcher.update-interval": "2000",
}


def count_parallelism(f, job_id):
    for v in f.rest(f"/jobs/{job_id}")["vertices"]:
        if v["name"].startswith("Count"):
            return v["parallelism"], v["id"]
    raise AssertionError("no Count vertex")


def subtask_max(f, job_id, vertex_id, metric):
    try:
        m = f.rest(f"/jobs/{job_id}/vertices/{vertex_id}/subtasks/metrics?get={metric}&agg=max")
    except OSError:  # a job rescaling or restarting answers 500/404 for a moment
        return None
    return m[0]["max"] if m and "max" in m[0] else None


def busy_max(f, job_id, vertex_id):
    return subtask_max(f, job_id, vertex_id, "busyTimeMsPerSecond")


def backpressure(f, job_id, source_id):
    return subtask_max(f, job_id, source_id, "backPressuredTimeMsPerSecond")


def vertex_subtasks(f, job_id, vertex_id):
    """The vertex's subtasks as Flink shows them (status, metrics), [] while the job rescales or restarts."""
    try:
        return f.rest(f"/jobs/{job_id}/vertices/{vertex_id}").get("subtasks", [])
    except OSError:
        return []


def subtasks_running(f, job_id, vertex_id):
    """How many subtasks the vertex has when all are RUNNING, else 0."""
    subs = vertex_subtasks(f, job_id, vertex_id)
    return len(subs) if subs and all(s["status"] == "RUNNING" for s in subs) else 0


def records_in(f, job_id, vertex_id):
    """Each subtask's records in (by subtask index), None while one of them is not RUNNING or has no figure."""
    subs = sorted(vertex_subtasks(f, job_id, vertex_id), key=lambda s: s["subtask"])
    n = [s.get("metrics", {}).get("read-records") for s in subs if s["status"] == "RUNNING"]
    return n if subs and len(n) == len(subs) and None not in n else None


def flink_honours_overrides():
    """Whether FLINK_HOME's Flink applies pipeline.jobvertex-parallelism-overrides to a job that `run -t local`
    submits: 1.x submits a JobGraph, to which the Dispatcher applies them; 2.0 to 2.2 submit a StreamGraph and
    the option is ignored (FLINK-38770, open)."""
    return flink_version().startswith("1.")


class Watch:
    """GET /jobs/:id every 100 ms in a thread: the Count vertex's (job state, vertex status, parallelism) as Flink
    shows them, from before a restart until the end of the `with` block."""

    def __init__(self, f, job_id):
        self.f, self.job_id, self.seen, self.stop = f, job_id, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                j = self.f.rest(f"/jobs/{self.job_id}", timeout=2)
                v = [v for v in j["vertices"] if v["name"].startswith("Count")][0]
                self.seen.append((j["state"], v["status"], v["parallelism"]))
            except (OSError, ValueError, KeyError, IndexError):
                pass  # the JVM is down or starting
            time.sleep(0.1)

    def running_parallelisms(self):
        return [p for state, status, p in self.seen if state == "RUNNING" and status == "RUNNING"]

    def __enter__(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def ticks(f, n):
    """Lets the autoscaler's control loop run n times: each tick re-applies the stored overrides (a PUT, and a
    ScalingApplied event, when they are not in force)."""
    interval = f.conf["autoscaler.standalone.control-loop.interval"]
    time.sleep(n * float(interval.split()[0]) + 1)


# heavy: minutes of Flink's own metrics under a saturating load; under ASan on 2 cores Flink's busy-time metric
# went missing for minutes in 2 of 3 runs (the autoscaler's C paths run under ASan in unit-asan and fuzzing)
@pytest.mark.heavy
def test_scale_up_scale_down_and_survive_kill9(tmp_path, flinklets):
    work = tmp_path / "work"
    work.write_text("400000\n")
    f = flinklets(conf=AUTOSCALER, job={"parallelism": 1, "args": [
        "--rate", "3000", "--keys", "64", "--work-file", str(work), "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id, jvm_pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    assert f.rest("/jobs/" + job_id)["vertices"]
    p0, count_id = count_parallelism(f, job_id)
    source_id = [v["id"] for v in f.rest(f"/jobs/{job_id}")["vertices"] if v["name"].startswith("Source")][0]
    assert p0 == 1
    # saturated: the counting subtask is busy all the time and back-pressures the source (the highest of a few
    # readings; on a machine shared with other work the busy time is the steadier sign)
    busy, bps = [], []
    for _ in range(10):
        b, bp = busy_max(f, job_id, count_id), backpressure(f, job_id, source_id)
        if b is not None:
            busy.append(b)
        if bp is not None:
            bps.append(bp)
        time.sleep(2)
    busy_before, bp_before = max(busy, default=0), max(bps, default=0)
    assert busy_before > 500 or bp_before > 100, (busy, bps)

    # scale-up, decided by the autoscaler and applied in place
    up = wait_for(lambda: count_parallelism(f, job_id)[0] > 1 and count_parallelism(f, job_id)[0], 240,
                  "the autoscaler to scale the counting vertex up")
    events = [e["type"] for e in f.events()]
    assert "ScalingReport" in events or "ScalingExecutor" in events or "ScalingApplied" in events, events
    overrides = f.status()["autoscaler"]["parallelismOverrides"]
    assert overrides.get(count_id) == str(up) or int(overrides.get(count_id, 0)) == up, overrides
    last = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    last_before = last["id"] if last else 0
    _, committed_before = check_output(f.output)
    # What the scale-up gives the job whatever CPU the machine has left (on 2 cores shared with other JVMs, more
    # subtasks need not lower the saturation): the vertex runs with `up` subtasks, all RUNNING, in the same JVM
    # (in place: no restart of the JVM, no JvmStarted since the first)
    wait_for(lambda: subtasks_running(f, job_id, count_id) == up, 120, f"the {up} counting subtasks RUNNING")
    t_running = int(time.time() * 1000)
    assert f.status()["jvm"]["pid"] == jvm_pid
    assert len([e for e in f.events() if e["type"] == "JvmStarted"]) == 1, f.events()[-10:]
    # every one of them receives records (the 64 keys spread over their key groups): each one's count of records
    # in grows between a first reading and a later one
    first = wait_for(lambda: (n := records_in(f, job_id, count_id)) and len(n) == up and n, 60,
                     "the counting subtasks' records in")
    wait_for(lambda: (n := records_in(f, job_id, count_id)) and len(n) == up and all(a > b for a, b in zip(n, first)),
             120, f"records reaching each of the {up} counting subtasks (first reading {first})")
    # the job's checkpoints keep completing: two taken by the rescaled job, one after the other
    def checkpoint_after_rescale():
        lc = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
        return lc if lc and lc["id"] > last_before and lc["timeStamp"] >= t_running else None
    ck = wait_for(checkpoint_after_rescale, 120, "a checkpoint of the rescaled job")
    f.wait_checkpoint(ck["id"] + 1, timeout=120)
    # and the committed output runs on across the rescale without a duplicate or a gap
    rc, committed = check_output(f.output)
    assert rc == 0 and committed["duplicates"] == 0 and committed["gaps"] == 0, committed
    assert committed["records"] > committed_before.get("records", 0), (committed_before, committed)
    assert f.status()["jvm"]["pid"] == jvm_pid

    # kill -9 of the JVM: the new JVM starts the job at the scaled parallelism, and nothing rescales it. That is
    # the parallelism in force at the kill, the autoscaler's override: where other work takes the CPU the vertex
    # may stay saturated, and the autoscaler may have scaled it up once more since `up`
    def in_force():
        p = count_parallelism(f, job_id)[0]
        return p if str(p) == str(f.status()["autoscaler"]["parallelismOverrides"].get(count_id)) else None
    up = wait_for(in_force, 120, "the counting vertex at the autoscaler's override")
    assert up > 1
    pid = f.status()["jvm"]["pid"]
    with Watch(f, job_id) as watch:
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE", 120,
                 "the restart")
        ticks(f, 3)
    ev = f.events()
    restarted = max(e["timeMs"] for e in ev if e["type"] == "JobRunning")
    reapplied = [e for e in ev if e["type"] == "ScalingApplied" and e["timeMs"] >= restarted]
    if flink_honours_overrides():
        assert watch.running_parallelisms() and set(watch.running_parallelisms()) == {up}, watch.seen
        assert not reapplied, ev[-10:]
    else:
        wait_for(lambda: count_parallelism(f, job_id)[0] == up, 120, "the overrides re-applied after the restart")
        assert reapplied or [e for e in f.events() if e["type"] == "ScalingApplied" and e["timeMs"] >= restarted]

    # the load drops: scale-down after the scale-down interval
    work.write_text("1000\n")
    down = wait_for(lambda: count_parallelism(f, job_id)[0] < up and count_parallelism(f, job_id)[0], 300,
                    "the autoscaler to scale down")
    assert down >= 1
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    state_files = os.listdir(os.path.join(f.state, "autoscaler"))
    assert state_files, "the autoscaler keeps its state on the volume"
    doc = json.load(open(os.path.join(f.state, "autoscaler", state_files[0])))
    assert doc
    # the output is exactly once across the scale-up, the kill -9 and the scale-down
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


QUIET = {**AUTOSCALER, "job.autoscaler.stabilization.interval": "1 h",
         "autoscaler.standalone.control-loop.interval": "1 s"}


def test_restart_restores_at_the_overrides_without_a_rescale(tmp_path, flinklets):
    """The autoscaler's overrides in force reach a new JVM in its configuration: after a restart of flinklet (the
    overrides on the volume) and after a kill -9 of the JVM, a Flink that honours them (1.20) runs the job at the
    scaled parallelism from its first RUNNING on, and the realizer, which checks them on every tick, has nothing
    to change (no ScalingApplied). Flink 2.0 to 2.2 ignore the option (FLINK-38770): the job starts at the job's
    own parallelism and the realizer rescales it in place. A stabilization of 1 h keeps the autoscaler from
    deciding anything itself."""
    f = flinklets(conf=QUIET, job={"parallelism": 1, "args": ["--rate", "200", "--keys", "16", "--output", "OUT"]})
    f.start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    p0, count_id = count_parallelism(f, job_id)
    assert p0 == 1
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    # as if the autoscaler had decided Count 1 -> 2 before flinklet was restarted
    path = os.path.join(f.state, "autoscaler", f"{job_id}.json")
    doc = json.load(open(path)) if os.path.exists(path) else {"version": 1, "jobKey": job_id}
    doc["parallelismOverrides"] = {count_id: "2"}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as fh:
        json.dump(doc, fh)
    os.replace(path + ".tmp", path)
    honoured = flink_honours_overrides()

    for restart in ("flinklet", "kill -9"):
        with Watch(f, job_id) as watch:
            if restart == "flinklet":
                f.start()
                f.wait_stable()
            else:
                pid = f.status()["jvm"]["pid"]
                os.kill(pid, signal.SIGKILL)
                wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and
                         s["lifecycleState"] == "STABLE", 120, "the restart")
            restarted = max(e["timeMs"] for e in f.events() if e["type"] == "JobRunning")
            conf = open(os.path.join(f.state, "conf", "config.yaml")).read()
            assert f'"pipeline.jobvertex-parallelism-overrides": "{count_id}:2"' in conf, conf
            if honoured:
                ticks(f, 3)
            else:
                # the killed JVM ran at 2 too, and the watch saw it: what counts is the new JVM's rescale (its
                # ScalingApplied), then the job RUNNING at 2 after it (Flink rescales after the PUT's answer, and
                # shows no vertices while it does)
                wait_for(lambda: [e for e in f.events() if e["type"] == "ScalingApplied" and e["timeMs"] >= restarted],
                         120, "the overrides applied in place in the new JVM")
                mark = len(watch.seen)
                wait_for(lambda: [p for state, status, p in watch.seen[mark:]
                                  if state == "RUNNING" and status == "RUNNING"][-1:] == [2],
                         120, "the job RUNNING at 2 after the rescale")
        rescaled = [e for e in f.events() if e["type"] == "ScalingApplied" and e["timeMs"] >= restarted]
        seen = watch.running_parallelisms()
        if honoured:
            assert seen and set(seen) == {2}, (restart, watch.seen)
            assert not rescaled, (restart, f.events()[-10:])
        else:
            assert seen and seen[-1] == 2, (restart, watch.seen)
            assert rescaled, (restart, f.events()[-10:])
        assert count_parallelism(f, job_id)[0] == 2

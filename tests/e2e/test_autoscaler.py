"""The autoscaler in-process, on the real MiniCluster with short windows: a job whose per-record work
saturates its one counting subtask is scaled up and its backpressure falls; when the load drops it is scaled
down after the scale-down interval; after a kill -9 of the JVM the scaled parallelism is back in force."""
import json
import os
import signal
import time

import pytest

from conftest import wait_for

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


# heavy: minutes of Flink's own metrics under a saturating load; under ASan on 2 cores Flink's busy-time metric
# went missing for minutes in 2 of 3 runs (the autoscaler's C paths run under ASan in unit-asan and fuzzing)
@pytest.mark.heavy
def test_scale_up_scale_down_and_survive_kill9(tmp_path, flinklets):
    work = tmp_path / "work"
    work.write_text("400000\n")
    f = flinklets(conf=AUTOSCALER, job={"parallelism": 1, "args": [
        "--rate", "3000", "--keys", "64", "--work-file", str(work), "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
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
    def relieved():
        b, bp = busy_max(f, job_id, count_id), backpressure(f, job_id, source_id)
        return (bp_before > 100 and bp is not None and bp < bp_before / 2) or \
            (busy_before > 500 and b is not None and b < busy_before * 0.8)
    wait_for(relieved, 120, "backpressure (or the counting subtasks' saturation) to fall after the scale-up")

    # kill -9 of the JVM: the scaled parallelism is back in force
    pid = f.status()["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE", 120,
             "the restart")
    wait_for(lambda: count_parallelism(f, job_id)[0] == up, 120, "the overrides re-applied after the restart")
    ev = f.events()
    restarted = max(e["timeMs"] for e in ev if e["type"] == "JobRunning")
    assert [e for e in ev if e["type"] == "ScalingApplied" and e["timeMs"] >= restarted], \
        "the supervisor re-applied the overrides to the new JVM"

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

"""The autoscaler in-process, on the real MiniCluster with short windows: a job whose per-record work
saturates its one counting subtask is scaled up and its backpressure falls; when the load drops it is scaled
down after the scale-down interval; after a kill -9 of the JVM the scaled parallelism is back in force."""
import json
import os
import signal
import time

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


def backpressure(f, job_id, source_id):
    m = f.rest(f"/jobs/{job_id}/vertices/{source_id}/subtasks/metrics?get=backPressuredTimeMsPerSecond&agg=max")
    return m[0]["max"] if m else None


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
    # saturated: the source is back-pressured by the counting vertex (the highest of a few readings)
    samples = []
    for _ in range(10):
        bp = backpressure(f, job_id, source_id)
        if bp is not None:
            samples.append(bp)
        time.sleep(2)
    bp_before = max(samples, default=0)
    assert bp_before > 100, samples

    # scale-up, decided by the autoscaler and applied in place
    up = wait_for(lambda: count_parallelism(f, job_id)[0] > 1 and count_parallelism(f, job_id)[0], 240,
                  "the autoscaler to scale the counting vertex up")
    events = [e["type"] for e in f.events()]
    assert "ScalingReport" in events or "ScalingExecutor" in events or "ScalingApplied" in events, events
    overrides = f.status()["autoscaler"]["parallelismOverrides"]
    assert overrides.get(count_id) == str(up) or int(overrides.get(count_id, 0)) == up, overrides
    wait_for(lambda: (bp := backpressure(f, job_id, source_id)) is not None and bp < bp_before / 2, 120,
             "backpressure to fall after the scale-up")

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

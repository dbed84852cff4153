"""A job RUNNING that completes no checkpoint (issue 38: the operator's users saw one only when a stop found no
savepoint), on the real MiniCluster: the test job's SnapshotDelay step sleeps 3 s in each checkpoint's synchronous
part while its file exists, and checkpoints time out after 1 s (Flink tolerates their failures: the job runs on).
flinklet says so while the job runs, with the health check off (its default): a CheckpointsStalled warning naming
the checkpoint a stop or a crash would go back to, the status error `checkpointProgress` and
flinklet_checkpoints_stalled 1, the same JVM running on. With the file gone, the next checkpoint completes and
clears them (CheckpointsResumed)."""
import re
import urllib.request

from conftest import wait_for


def metric(f, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{f.http_port}/metrics", timeout=10) as r:
        m = re.search(rf"^{re.escape(name)} (\S+)$", r.read().decode(), re.M)
    return float(m.group(1)) if m else None


def named(f, kind):
    return [e for e in f.new_events() if e["type"] == kind]


def test_checkpoints_that_never_complete_are_said_while_the_job_runs(flinklets, tmp_path):
    delay = tmp_path / "snapshot-delay"
    f = flinklets(conf={"execution.checkpointing.timeout": "1 s",
                        "execution.checkpointing.tolerable-failed-checkpoints": "1000",
                        "kubernetes.operator.cluster.health-check.checkpoint-progress.window": "8 s"},
                  job={"args": ["--rate", "50", "--keys", "4", "--output", "OUT",
                                "--snapshot-delay-file", str(delay)], "parallelism": 1})
    f.start()
    st = f.wait_stable()
    first = f.wait_checkpoint(1, timeout=60)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    pid = st["jvm"]["pid"]
    delay.write_text("3000")  # from now on every checkpoint expires

    ev = wait_for(lambda: named(f, "CheckpointsStalled"), 90, "CheckpointsStalled")[0]
    assert ev["level"] == "Warning", ev
    st = f.status()
    newest = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    assert newest["id"] >= first["id"] and f"chk-{newest['id']}" in ev["message"], (ev, newest)
    assert "checkpointProgress" in [e["source"] for e in st["errors"]], st["errors"]
    assert st["jvm"]["pid"] == pid and st["jobStatus"]["state"] == "RUNNING", st
    assert metric(f, "flinklet_checkpoints_stalled") == 1
    failed = f.rest(f"/jobs/{st['jobStatus']['jobId']}/checkpoints")["counts"]["failed"]
    assert failed >= 1, "Flink failed no checkpoint: the delay did not hold them up"

    delay.unlink()  # checkpoints complete again
    wait_for(lambda: named(f, "CheckpointsResumed"), 90, "CheckpointsResumed")
    st = f.wait_checkpoint(newest["id"] + 1, timeout=60)
    assert "checkpointProgress" not in [e["source"] for e in st.get("errors") or []], st.get("errors")
    assert st["jvm"]["pid"] == pid
    assert metric(f, "flinklet_checkpoints_stalled") == 0
    assert len(named(f, "CheckpointsStalled")) == 1

"""A job RUNNING that completes no checkpoint (issue 38, item 1), with the fake Flink: flinklet says so while it runs,
whether or not the health check restarts the JVM for it (it is off by default): a CheckpointsStalled warning naming
what a stop or a crash would go back to, the status error `checkpointProgress` and flinklet_checkpoints_stalled 1.
The JVM is left alone. The next completed checkpoint clears all three (CheckpointsResumed)."""
import os
import signal
import struct
import time

from conftest import wait_for
from memtune_kit import gauge, metrics_text

MAGIC = 0x4960672D
CONF = {"kubernetes.operator.cluster.health-check.checkpoint-progress.window": "3 s"}


def named(sup, kind):
    return [e for e in sup.events() if e["type"] == kind]


def checkpoint(sup, server, cid):
    """Flink completes checkpoint cid: its _metadata on the volume, then the REST API says so."""
    with open(os.path.join(sup.state, "job-id")) as f:
        job_id = f.read().strip()
    d = os.path.join(sup.state, "checkpoints", job_id, f"chk-{cid}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "_metadata"), "wb") as f:
        f.write(struct.pack(">IIq", MAGIC, 4, cid) + b"\0" * 64)
    server.checkpoint = {"id": cid, "external_path": f"file:{d}", "state_size": 50_000, "end_to_end_duration": 100}


def stable(server, supervisors):
    sup = supervisors(server, conf=CONF).start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    return sup


def test_no_checkpoint_in_the_window_is_said_while_the_job_runs_and_cleared_by_the_next(server, supervisors):
    sup = stable(server, supervisors)
    pid = sup.status()["jvm"]["pid"]
    ev = wait_for(lambda: named(sup, "CheckpointsStalled"), 20, "CheckpointsStalled", interval=0.1)[0]
    assert ev["level"] == "Warning", ev
    assert "has completed no checkpoint for" in ev["message"] and "no restore point" in ev["message"], ev
    # the event's line is appended before status.json is replaced (one flush writes both, events first): the
    # status says it within that flush
    st = wait_for(lambda: (s := sup.status()) and "checkpointProgress" in [e["source"] for e in s["errors"]] and s,
                  5, "the status error checkpointProgress", interval=0.05)
    assert st["jvm"]["pid"] == pid and st["lifecycleState"] == "STABLE", st  # the health check is off: no restart
    assert gauge(metrics_text(sup), "flinklet_checkpoints_stalled") == 1

    checkpoint(sup, server, 4)
    wait_for(lambda: named(sup, "CheckpointsResumed"), 20, "CheckpointsResumed", interval=0.1)
    wait_for(lambda: "checkpointProgress" not in [e["source"] for e in sup.status().get("errors") or []], 5,
             "the status error cleared", interval=0.05)
    assert gauge(metrics_text(sup), "flinklet_checkpoints_stalled") == 0
    assert len(named(sup, "CheckpointsStalled")) == 1  # said once, not at every poll


def test_the_warning_names_the_restore_point_a_stop_would_go_back_to(server, supervisors):
    sup = stable(server, supervisors)
    checkpoint(sup, server, 2)
    wait_for(lambda: (sup.status()["jobStatus"]["checkpointInfo"].get("lastCheckpoint") or {}).get("id") == 2, 20,
             "checkpoint 2 seen", interval=0.1)
    ev = wait_for(lambda: named(sup, "CheckpointsStalled"), 20, "CheckpointsStalled", interval=0.1)[0]
    assert "a stop or a crash now goes back to" in ev["message"] and "chk-2" in ev["message"], ev


def test_no_checkpointing_no_warning(server, supervisors):
    sup = supervisors(server, conf={**CONF, "execution.checkpointing.interval": "0 s"}).start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    time.sleep(5)
    assert not named(sup, "CheckpointsStalled")


def test_a_stop_that_leaves_no_restore_point_says_so(server, supervisors):
    """The operator's users found out at the next start ("starting with empty state", an info line): a stop whose
    savepoint fails when the job has no checkpoint ends with a warning that the next start begins empty (exit 4)."""
    sup = supervisors(server, upgrade_mode="savepoint", conf=CONF).start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    server.stop_failures = 100  # every stop-with-savepoint fails, as when a task cannot take part
    server.savepoint_location = "file:/nowhere"
    sup.proc.send_signal(signal.SIGTERM)
    assert sup.proc.wait(20) == 4, sup.logs()[-3000:]
    stopped = named(sup, "Stopped")[-1]
    assert stopped["level"] == "Warning" and "no restore point" in stopped["message"], stopped
    assert "begins with empty state" in stopped["message"], stopped

"""The stop's savepoint and the checkpoints around it, with the fake Flink (issue 37: PyFlink's jobs). Flink fires a
periodic checkpoint as a stop-with-savepoint ends, and a task that has not begun closing may ack it: a checkpoint
with an id above the savepoint's completes after it. That is no rewind (it holds the savepoint's state or later)
and the stop is a good one (exit 0): the Stopped event says which of the two the next start restores, and the next
start restores that checkpoint. A savepoint no newer than a checkpoint that was there when the stop was asked for
is still refused (SavepointFailed, exit 4): the next start would restore that checkpoint, not the stop's point."""
import os
import re
import signal
import struct
import subprocess

from conftest import BIN, wait_for
from fakeflink import end_once_reported
from memtune_kit import gauge, metrics_text, set_option

MAGIC = 0x4960672D


def job_id_of(sup):
    with open(os.path.join(sup.state, "job-id")) as f:
        return f.read().strip()


def checkpoint(sup, server, cid, tell=True):
    """Flink completes checkpoint cid: its _metadata on the volume, then (tell) the REST API says so."""
    job_id = job_id_of(sup)
    d = os.path.join(sup.state, "checkpoints", job_id, f"chk-{cid}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "_metadata"), "wb") as f:
        f.write(struct.pack(">IIq", MAGIC, 4, cid) + b"\0" * 64)
    if tell:
        server.checkpoint = {"id": cid, "external_path": f"file:{d}", "state_size": 50_000,
                             "end_to_end_duration": 100}
    return d


def started(server, supervisors, **kw):
    sup = supervisors(server, upgrade_mode="savepoint", **kw).start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    checkpoint(sup, server, 7)
    wait_for(lambda: (sup.status()["jobStatus"]["checkpointInfo"].get("lastCheckpoint") or {}).get("id") == 7, 30,
             "checkpoint 7 seen", interval=0.1)
    return sup


def norm(location):
    return re.sub(r"^file:/*", "/", location or "").rstrip("/")


def named(sup, kind):
    return [e for e in sup.events() if e["type"] == kind]


def test_a_checkpoint_completed_after_the_stop_savepoint_is_no_failed_stop(server, supervisors, tmp_path):
    sup = started(server, supervisors)
    server.real_savepoints = True
    server.next_savepoint_id = 8
    # as the savepoint ends, Flink's periodic trigger fires and checkpoint 9 completes before the tasks close
    server.on_stop = lambda: checkpoint(sup, server, 9, tell=False)
    end_once_reported(server, sup.stop_file)
    sup.proc.send_signal(signal.SIGTERM)
    assert sup.proc.wait(15) == 0, sup.logs()[-3000:]
    assert not named(sup, "SavepointFailed"), named(sup, "SavepointFailed")
    sp = sup.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert norm(sp["location"]) == norm(server.written_savepoints[-1]) and sp["triggerType"] == "UPGRADE", sp
    stopped = named(sup, "Stopped")[-1]["message"]
    assert "checkpoint 9" in stopped and "restores from that checkpoint" in stopped, stopped
    assert not sup.status().get("error"), sup.status()

    # the next start restores checkpoint 9, as the Stopped event said
    server.real_savepoints, server.on_stop = False, None
    os.unlink(sup.stop_file)
    nxt = supervisors(server, state_dir=sup.state, upgrade_mode="savepoint").start()
    ev = wait_for(lambda: named(nxt, "Restoring"), 30, "Restoring", interval=0.1)
    assert "checkpoint id 9" in ev[-1]["message"] and "chk-9" in ev[-1]["message"], ev[-1]


def test_a_stop_savepoint_older_than_a_checkpoint_before_the_stop_is_refused(server, supervisors):
    sup = started(server, supervisors)
    server.real_savepoints = True
    server.next_savepoint_id = 6  # Flink reports a savepoint no newer than checkpoint 7, there before the stop
    end_once_reported(server, sup.stop_file)
    sup.proc.send_signal(signal.SIGTERM)
    assert sup.proc.wait(15) == 4, sup.logs()[-3000:]
    failed = named(sup, "SavepointFailed")
    assert failed and "no newer than checkpoint 7" in failed[-1]["message"], failed


def test_a_second_reload_of_the_same_edit_says_the_upgrade_is_under_way(server, supervisors):
    """One edit seen twice (the file watcher and a SIGHUP) while the upgrade's savepoint runs: one upgrade, and the
    second ConfigChanged says it is under way rather than that the job must be restarted again."""
    sup = started(server, supervisors)
    server.savepoint_location = None  # the upgrade's stop-with-savepoint stays IN_PROGRESS
    set_option(sup, "execution.checkpointing.interval", "3 s")
    sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: [r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")], 10,
             "the upgrade's stop-with-savepoint request", interval=0.1)
    sup.proc.send_signal(signal.SIGHUP)
    changed = wait_for(lambda: (c := named(sup, "ConfigChanged")) and len(c) >= 2 and c, 10, "two ConfigChanged",
                       interval=0.1)
    assert "the job must be restarted for it" in changed[0]["message"], changed
    assert "the job's upgrade to it is under way" in changed[-1]["message"], changed
    assert len([r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")]) == 1


def test_a_stop_right_after_the_job_finished_takes_no_savepoint_and_exits_0(server, supervisors):
    """A bounded job that FINISHED a moment before the SIGTERM, its JVM not yet gone (seen on Flink 2.3.0: the
    launcher's JVM ends a few hundred ms after the job): Flink would refuse a stop-with-savepoint (or be gone), so
    flinklet asks for none, lets the JVM end and exits 0 with the job still FINISHED; the next start does not run it."""
    sup = supervisors(server, upgrade_mode="savepoint").start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    server.job_state = "FINISHED"
    wait_for(lambda: sup.status()["jobStatus"]["state"] == "FINISHED", 20, "FINISHED in status.json", interval=0.1)
    sup.proc.send_signal(signal.SIGTERM)
    assert sup.proc.wait(15) == 0, sup.logs()[-3000:]
    assert not [r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")], "a savepoint was asked"
    assert not named(sup, "SavepointFailed")
    assert sup.status()["jobStatus"]["state"] == "FINISHED"
    assert "had FINISHED" in named(sup, "Stopped")[-1]["message"]
    nxt = supervisors(server, state_dir=sup.state, upgrade_mode="savepoint").start()
    wait_for(lambda: named(nxt, "JobAlreadyFinished"), 20, "JobAlreadyFinished", interval=0.1)


def test_a_periodic_savepoint_that_keeps_failing_is_said_once(server, supervisors):
    """Periodic savepoints every second, the first six failing (as when a task cannot take part): one SavepointFailed
    warning for the run of failures (the operator floods events: FLINK-40384), the status error with the cause, the
    failures counted in /metrics; the first that completes says the run is over and is the last good point."""
    sup = supervisors(server, upgrade_mode="savepoint",
                      conf={"kubernetes.operator.periodic.savepoint.interval": "1 s"}).start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    job_id = job_id_of(sup)
    d = os.path.join(sup.state, "savepoints", f"savepoint-{job_id[:6]}-aaaaaaaaaaaa")
    os.makedirs(d)
    with open(os.path.join(d, "_metadata"), "wb") as f:
        f.write(struct.pack(">IIq", MAGIC, 4, 12) + b"\0" * 64)
    server.stop_failures = 6
    server.savepoint_location = "file:" + d  # what the first that completes reports
    recovered = wait_for(lambda: named(sup, "SavepointsRecovered"), 60, "SavepointsRecovered", interval=0.1)[0]
    assert "after 6 failed in a row" in recovered["message"], recovered
    failed = named(sup, "SavepointFailed")
    assert len(failed) == 1 and "PERIODIC savepoint failed" in failed[0]["message"], failed
    assert "6 periodic savepoints failed in a row" in sup.logs()
    sp = wait_for(lambda: sup.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], 20, "the savepoint",
                  interval=0.1)
    assert sp["triggerType"] == "PERIODIC", sp
    assert gauge(metrics_text(sup), "flinklet_savepoint_failures_total") == 6


def test_last_state_without_checkpoints_stops_with_a_savepoint(server, supervisors, tmp_path):
    """upgradeMode last-state carries the state in checkpoints; with checkpointing off there are none (the operator
    fails every reconcile of such an upgrade: FLINK-41283). check-config warns, and a stop takes a savepoint instead,
    which the next start restores."""
    sup = supervisors(server, upgrade_mode="last-state", conf={"execution.checkpointing.interval": "0 s"})
    r = subprocess.run([BIN, "check-config", "-c", str(sup.config)], capture_output=True, text=True)
    assert r.returncode == 0 and "turns checkpointing off" in r.stderr and "last-state" in r.stderr, r.stderr
    sup.start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    # Flink refuses an interval under 10 ms (every launch failed): checkpointing off is the interval left out
    with open(os.path.join(sup.state, "conf", "config.yaml")) as f:
        assert "execution.checkpointing.interval" not in f.read()
    server.real_savepoints = True
    end_once_reported(server, sup.stop_file)
    sup.proc.send_signal(signal.SIGTERM)
    assert sup.proc.wait(15) == 0, sup.logs()[-3000:]
    assert named(sup, "LastStateWithoutCheckpoints"), sup.logs()[-3000:]
    assert [r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")], "no savepoint was asked"
    sp = sup.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and norm(sp["location"]) == norm(server.written_savepoints[-1]), sp
    assert "restores from savepoint" in named(sup, "Stopped")[-1]["message"]


def test_last_state_upgrade_without_checkpoints_takes_a_savepoint(server, supervisors):
    sup = supervisors(server, upgrade_mode="last-state", conf={"execution.checkpointing.interval": "0 s"}).start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    server.savepoint_location = None  # the upgrade's stop-with-savepoint stays IN_PROGRESS: only the ask counts
    set_option(sup, "execution.checkpointing.timeout", "5 min")
    sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: [r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")], 15,
             "the upgrade's stop-with-savepoint request", interval=0.1)
    assert named(sup, "LastStateWithoutCheckpoints")

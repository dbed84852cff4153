"""A job-only upgrade keeps the JVM (issue 38, item 3: "shorter upgrades where the JVM can stay"), on the real
MiniCluster.

- An upgrade of the job's arguments is stopped with a savepoint as before, but the JVM stays: its launcher closes the
  job's MiniCluster and flinklet submits the upgraded job to it (a JobResubmitted event; the same jvm.pid, jvm.starts
  unchanged). Flink's own latest.restored is the upgrade's savepoint. A change of the job's parallelism stays in the
  JVM too. The output is exactly once across both.
- A change of a Flink option the JVM itself is started with (a memory option) still takes a new JVM.
- A kill -9 of the JVM right after an in-JVM upgrade is a crash as any: a new JVM restores the newest checkpoint.
- A stop (SIGTERM) while the upgrade's savepoint is taken ends the shutdown as before: exit 0, no JVM left."""
import os
import signal
import time

from conftest import check_output, pid_alive, restored, wait_for, wait_restarted
from testkit import norm


def named(f, kind, after=0):
    return [e for e in f.events() if e["type"] == kind and e["timeMs"] >= after]


def now_ms():
    return int(time.time() * 1000)


def running_in(f, pid, after):
    """status.json once the job that JobResubmitted (after `after`) submitted is RUNNING in the JVM pid."""
    def ok():
        st = f.own_status()
        return (st if named(f, "JobRunning", after) and st and st["jvm"]["pid"] == pid
                and st["jobStatus"]["state"] == "RUNNING" else None)
    return wait_for(ok, 90, "the upgraded job RUNNING in the same JVM")


def test_an_argument_upgrade_keeps_the_jvm_and_restores_its_savepoint(flinklets):
    f = flinklets(job={"args": ["--rate", "200", "--keys", "8", "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id, pid, starts = st["jobStatus"]["jobId"], st["jvm"]["pid"], st["jvm"]["starts"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(job={"args": f.job["args"] + ["--work", "0"]})
    sp = wait_for(lambda: named(f, "SavepointCompleted", t0), 60, "the upgrade's savepoint")[0]
    ev = wait_for(lambda: named(f, "JobResubmitted", t0), 60, "JobResubmitted")[0]
    assert str(pid) in ev["message"]
    st = running_in(f, pid, t0)
    assert st["jvm"]["starts"] == starts, "a job submitted to the JVM is no JVM start"
    assert pid_alive(pid)
    assert not named(f, "JvmStarted", t0) and not named(f, "JvmExited", t0)
    # Flink restores the upgrade's savepoint, as flinklet says
    r = restored(f, job_id)
    assert r["is_savepoint"] is True, r
    assert norm(r["external_path"]) in sp["message"], (r, sp["message"])
    assert st["restoredFrom"]["kind"] == "savepoint"
    # the upgraded spec is on trial from its submission, and stable once it made progress
    wait_for(lambda: named(f, "SpecStable", t0), 90, "SpecStable")
    st = f.wait_stable()
    assert st["jvm"]["pid"] == pid
    # a change of the job's parallelism is the job's too
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 1)
    t1 = now_ms()
    f.write_config(job={"parallelism": 1})
    wait_for(lambda: named(f, "JobResubmitted", t1), 60, "JobResubmitted after the parallelism change")
    st = running_in(f, pid, t1)
    assert st["jvm"]["starts"] == starts
    assert st["jobStatus"]["tasks"]["total"] == 2, st["jobStatus"]  # source and sink chain at parallelism 1
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    assert not pid_alive(pid)
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_a_flink_option_change_takes_a_new_jvm(flinklets):
    f = flinklets(conf={"taskmanager.memory.managed.size": "96m"}).start()
    st = f.wait_stable()
    pid, starts = st["jvm"]["pid"], st["jvm"]["starts"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(conf={"taskmanager.memory.managed.size": "128m"})
    st = wait_restarted(f, pid)
    assert st["jvm"]["starts"] == starts + 1
    assert not named(f, "JobResubmitted", t0)
    assert named(f, "JvmStarted", t0)
    assert "the JVM's own settings change" in f.logs()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_a_kill_of_the_jvm_right_after_an_in_jvm_upgrade_recovers_from_the_newest_checkpoint(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(job={"args": f.job["args"] + ["--work", "0"]})
    wait_for(lambda: named(f, "JobResubmitted", t0), 60, "JobResubmitted")
    st = running_in(f, pid, t0)
    # the upgraded job's own first checkpoint, then the crash
    after = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    st = f.wait_checkpoint(after + 1)
    newest = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    os.kill(pid, signal.SIGKILL)
    st = wait_restarted(f, pid)
    r = restored(f, job_id)
    assert r["is_savepoint"] is False, r
    assert r["id"] >= newest, (r, newest)
    assert st["restoredFrom"]["kind"] == "checkpoint"
    f.wait_checkpoint(r["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_a_stop_during_a_job_only_upgrade_ends_as_a_stop(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(job={"args": f.job["args"] + ["--work", "0"]})
    wait_for(lambda: named(f, "SavepointTriggered", t0), 60, "the upgrade's savepoint")
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    assert not pid_alive(pid), "the JVM held for the upgrade outlived flinklet"
    # the next start restores the upgrade's savepoint (the shutdown's now) and goes on exactly once
    sp = named(f, "SavepointCompleted", t0)
    f.start()
    st = f.wait_stable()
    if sp:
        assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary

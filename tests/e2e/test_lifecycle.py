"""The operator's job lifecycle in one process, on the real MiniCluster: configuration changes while
running (upgrade by upgradeMode, in place, rejected), suspend and resume, snapshot triggers, periodic
savepoints with retention, rollback."""
import os
import signal
import time

import pytest

from conftest import check_output, pid_alive, restored, wait_for
from testkit import norm


def events_of(f, kind):
    return [e for e in f.events() if e["type"] == kind]


def wait_event(f, kind, timeout=60, after=0, interval=0.5):
    return wait_for(lambda: [e for e in events_of(f, kind) if e["timeMs"] >= after], timeout, f"a {kind} event",
                    interval=interval)


def now_ms():
    return int(time.time() * 1000)


def vertex_parallelism(f, job_id):
    return {v["name"]: v["parallelism"] for v in f.rest(f"/jobs/{job_id}")["vertices"]}


def test_parallelism_change_upgrades_through_a_savepoint_exactly_once(flinklets):
    f = flinklets(job={"parallelism": 1, "args": ["--rate", "200", "--keys", "8", "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    assert set(vertex_parallelism(f, job_id).values()) == {1}
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(job={"parallelism": 2})
    wait_event(f, "ConfigChanged", after=t0)
    sp = wait_event(f, "SavepointCompleted", after=t0)[0]
    # in the same JVM (a change of the job alone: JobResubmitted) or a new one, the job RUNNING again
    st = wait_for(lambda: [e for e in f.events() if e["type"] == "JobRunning" and e["timeMs"] >= t0]
                  and (s := f.status())["lifecycleState"] == "STABLE" and s["jvm"]["pid"] > 0 and s,
                  120, "the upgraded job RUNNING")
    assert st["jobStatus"]["jobId"] == job_id
    assert 2 in vertex_parallelism(f, job_id).values()
    r = restored(f, job_id)
    assert r["is_savepoint"] is True
    assert norm(r["external_path"]) in sp["message"]
    assert st["restoredFrom"]["kind"] == "savepoint"
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2
                      if st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] else 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


@pytest.mark.single_version  # flinklet's suspend; a stop-with-savepoint restored on each version in test_recovery
def test_suspend_and_resume_continue_the_state(flinklets):
    f = flinklets(job={"args": ["--rate", "200", "--keys", "4", "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(job={"state": "suspended"})
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "SUSPENDED" and s, 60, "SUSPENDED")
    assert f.proc.poll() is None, "flinklet stays up while the job is suspended"
    assert not pid_alive(pid) and st["jvm"]["pid"] == 0
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["timeStamp"] >= t0

    # suspended survives a restart of flinklet: the job is not started
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    g = flinklets(state_dir=f.state, job={"state": "suspended", "args": ["--rate", "200", "--keys", "4", "--output",
                                                                          f.output]}).start()
    # (f's stop left Suspended among the last events and a status.json saying SUSPENDED: g's own are waited for)
    wait_for(lambda: "Suspended" in [e["type"] for e in g.new_events()], 30, "the restarted flinklet to stay suspended")
    time.sleep(2)
    st = wait_for(g.own_status, 10, "the restarted flinklet's status.json")
    assert st["lifecycleState"] == "SUSPENDED" and st["jvm"]["pid"] == 0

    t1 = now_ms()
    g.write_config(job={"state": "running"})
    st = g.wait_stable()
    assert restored(g, job_id)["is_savepoint"] is True
    assert norm(st["restoredFrom"]["location"]) == norm(sp["location"])
    assert [e for e in g.events() if e["type"] == "JvmStarted" and e["timeMs"] >= t1]
    g.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2
                      if st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] else 2)
    g.signal(signal.SIGTERM)
    assert g.wait_exit(30) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_nonce_change_takes_exactly_one_savepoint_and_one_checkpoint(flinklets):
    f = flinklets(job={"savepointTriggerNonce": 0, "checkpointTriggerNonce": 0}).start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    f.wait_checkpoint(1)
    assert st["jobStatus"]["savepointInfo"]["savepointHistory"] == []
    f.write_config(job={"savepointTriggerNonce": 1})
    st = wait_for(lambda: (s := f.status())["jobStatus"]["savepointInfo"]["savepointHistory"] and s, 60,
                  "the manual savepoint")
    hist = st["jobStatus"]["savepointInfo"]["savepointHistory"]
    assert len(hist) == 1 and hist[0]["triggerType"] == "MANUAL"
    assert os.path.exists(os.path.join(norm(hist[0]["location"]), "_metadata"))
    assert st["jobStatus"]["savepointInfo"]["lastTriggerNonce"] == 1
    f.write_config(job={"checkpointTriggerNonce": 7})
    st = wait_for(lambda: (s := f.status())["jobStatus"]["checkpointInfo"]["checkpointHistory"] and s, 60,
                  "the manual checkpoint")
    ch = st["jobStatus"]["checkpointInfo"]["checkpointHistory"]
    assert len(ch) == 1 and ch[0]["triggerType"] == "MANUAL" and ch[0]["id"] > 0
    # the same nonce again (a rewrite of an unrelated field) takes nothing
    f.write_config(conf={"flinklet.rest.poll-interval": "1 s"})
    time.sleep(5)
    st = f.status()
    assert len(st["jobStatus"]["savepointInfo"]["savepointHistory"]) == 1
    assert len(st["jobStatus"]["checkpointInfo"]["checkpointHistory"]) == 1
    assert st["jvm"]["pid"] == pid, "nonces and poll intervals need no restart"


@pytest.mark.single_version  # flinklet's retention; a triggered savepoint on each version in the nonce test
def test_periodic_savepoints_are_kept_to_the_history_limit(flinklets):
    f = flinklets(conf={"kubernetes.operator.periodic.savepoint.interval": "2 s",
                        "kubernetes.operator.savepoint.history.max.count": "2"}).start()
    f.wait_stable()
    wait_for(lambda: len(events_of(f, "SavepointDisposed")) >= 2, 90, "two savepoints disposed of")
    # an event line goes to the volume just before the status.json of the same moment: read a status at least
    # as new as the disposal (its history no longer names the savepoint disposed of)
    disposed = norm(events_of(f, "SavepointDisposed")[0]["message"].split()[3])
    gone = os.path.basename(disposed)
    st = wait_for(lambda: (s := f.status()) and all(os.path.basename(norm(h["location"])) != gone
                                                     for h in s["jobStatus"]["savepointInfo"]["savepointHistory"])
                  and s, 10, "the status after the disposal")
    hist = st["jobStatus"]["savepointInfo"]["savepointHistory"]
    assert 1 <= len(hist) <= 2 and all(h["triggerType"] == "PERIODIC" for h in hist)
    # (a savepoint being disposed of right now is renamed *.disposing first: not a savepoint any more)
    on_disk = [d for d in os.listdir(os.path.join(f.state, "savepoints"))
               if d.startswith("savepoint-") and not d.endswith(".disposing")]
    kept = {os.path.basename(norm(h["location"])) for h in hist}
    # at most one more than the history: a savepoint being written right now
    assert kept <= set(on_disk) and len(on_disk) <= len(kept) + 1, (on_disk, kept)
    # "disposed of savepoint <location> (<why>)": gone, under either name, once the event says so
    assert os.path.basename(disposed).startswith("savepoint-"), disposed
    assert not os.path.exists(disposed) and not os.path.exists(disposed + ".disposing")


@pytest.mark.single_version  # flinklet's parse of its own configuration
def test_broken_config_leaves_the_job_running(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    t0 = now_ms()
    f.write_config(raw="apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: x\n"
                       "spec:\n  job:\n    upgradeMode: savepiont\n")
    rejected = wait_event(f, "ConfigRejected", after=t0)
    assert any("flinklet.yaml:7:18: spec.job.upgradeMode" in e["message"] for e in rejected), rejected
    # the event line reaches the volume just before the status.json written with it
    st = wait_for(lambda: (s := f.status()) and "configuration rejected" in (s["error"] or "") and s, 10,
                  "the status to say so")
    assert st["jvm"]["pid"] == pid and st["lifecycleState"] == "STABLE"
    # a SIGHUP with the broken file changes nothing either
    f.signal(signal.SIGHUP)
    time.sleep(2)
    assert f.status()["jvm"]["pid"] == pid
    f.write_config()  # the good one again: applied in place, the error is gone
    wait_for(lambda: f.status()["error"] is None, 30, "the error to clear")
    assert f.status()["jvm"]["pid"] == pid


@pytest.mark.single_version  # flinklet's reload of options it applies itself
def test_in_place_change_keeps_the_jvm_and_sighup_reloads(flinklets):
    f = flinklets().start()
    pid = f.wait_stable()["jvm"]["pid"]
    f.write_config(conf={"job.autoscaler.enabled": "false", "flinklet.restart.max-attempts": "7"})
    e = wait_event(f, "ConfigChanged")
    assert "applied in place" in e[0]["message"]
    f.signal(signal.SIGHUP)
    wait_for(lambda: len(events_of(f, "ConfigChanged")) >= 2, 20, "the SIGHUP reload")
    assert f.status()["jvm"]["pid"] == pid


@pytest.mark.single_version  # flinklet's rollback of a spec that never runs
def test_spec_that_cannot_start_is_rolled_back(flinklets):
    f = flinklets(conf={"kubernetes.operator.deployment.rollback.enabled": "true",
                        "kubernetes.operator.deployment.readiness.timeout": "15 s",
                        "flinklet.restart.backoff.initial": "500 ms"}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    good_args = list(f.job["args"])
    f.write_config(job={"args": ["--exit-at-start"] + good_args})
    wait_event(f, "RollingBack", timeout=120)
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "ROLLED_BACK" and s, 120, "ROLLED_BACK")
    assert st["jobStatus"]["state"] == "RUNNING" and st["jobStatus"]["jobId"] == job_id
    assert "RolledBack" in [e["type"] for e in f.events()]
    # the rolled-back spec is not tried again on a mere SIGHUP
    f.signal(signal.SIGHUP)
    wait_event(f, "ConfigUnchanged", timeout=20)
    assert f.status()["lifecycleState"] == "ROLLED_BACK"


def break_savepoints(f):
    """Flink cannot write a savepoint where a plain file stands in for the savepoint directory."""
    sp = os.path.join(f.state, "savepoints")
    os.makedirs(sp, exist_ok=True)
    os.rename(sp, sp + ".moved")
    with open(sp, "w") as fh:
        fh.write("not a directory\n")


# single_version: the savepoint's failure on each version:
# test_failed_upgrade_savepoint_falls_back_to_last_state_and_says_so
@pytest.mark.single_version
def test_failed_upgrade_savepoint_keeps_the_job_running_without_fallback(flinklets):
    f = flinklets(job={"parallelism": 1},
                  conf={"kubernetes.operator.job.upgrade.last-state-fallback.enabled": "false"}).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(1)
    break_savepoints(f)
    t0 = now_ms()
    f.write_config(job={"parallelism": 2})
    wait_event(f, "UpgradeAborted", after=t0)
    time.sleep(3)
    st = f.status()
    assert st["jvm"]["pid"] == pid and pid_alive(pid), "the job keeps running in the same JVM"
    assert st["lifecycleState"] == "STABLE" and st["jobStatus"]["state"] == "RUNNING"
    assert "savepoint" in st["error"]
    assert set(vertex_parallelism(f, job_id).values()) == {1}, "still the old spec"


def test_failed_upgrade_savepoint_falls_back_to_last_state_and_says_so(flinklets):
    f = flinklets(job={"parallelism": 1}).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    break_savepoints(f)
    t0 = now_ms()
    f.write_config(job={"parallelism": 2})
    wait_event(f, "UpgradeFallback", after=t0, interval=0.02)
    # mend the volume at once: with its savepoint directory unreadable flinklet would (rightly) not start
    sp = os.path.join(f.state, "savepoints")
    os.unlink(sp)
    os.rename(sp + ".moved", sp)
    st = wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE" and s,
                  120, "the upgraded job RUNNING")
    assert 2 in vertex_parallelism(f, job_id).values()
    r = restored(f, job_id)
    assert r["is_savepoint"] is False, "restored from the newest checkpoint"
    assert st["restoredFrom"]["kind"] == "checkpoint"


@pytest.mark.single_version  # flinklet's statvfs of the volume
def test_low_volume_space_is_reported_and_cleared(flinklets):
    # 99 % free is more than any test machine's disk has: the warning must come
    f = flinklets(conf={"flinklet.volume.min-free-percent": "99"}).start()
    f.wait_stable()
    low = wait_event(f, "VolumeLow", timeout=30)
    assert "flinklet.volume.min-free-percent" in low[0]["message"]
    # (an event line reaches the volume just before the status.json written with it)
    wait_for(lambda: "min-free-percent" in (f.status()["error"] or ""), 10, "the status to say so")
    f.write_config(conf={"flinklet.volume.min-free-percent": "1"})
    wait_event(f, "VolumeOk", timeout=30)
    wait_for(lambda: f.status()["error"] is None, 10, "the status error to clear")

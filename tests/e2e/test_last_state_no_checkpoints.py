"""Issue 38, case 3 (FLINK-41283: the operator fails every reconcile of a `last-state` upgrade of a job with
checkpointing off), on the real MiniCluster. `upgradeMode: last-state` carries the state in checkpoints; with
`execution.checkpointing.interval: 0` there are none, so a stop, and an upgrade, take a savepoint instead (a
`LastStateWithoutCheckpoints` event), and the next start restores exactly it: the counts and the sequence go on
where they stopped, and the FileSink's output (committed by each stop-with-savepoint, since no checkpoint commits it)
stays exactly-once."""
import os
import signal
import time

from conftest import check_output, restored, wait_for
from testkit import norm

CONF = {"execution.checkpointing.interval": "0"}


def events_of(f, kind, after=0):
    return [e for e in f.events() if e["type"] == kind and e["timeMs"] >= after]


def now_ms():
    return int(time.time() * 1000)


def stop_savepoint(f, after):
    """The savepoint the stop (or upgrade) since `after` took: Flink's location recorded as lastSavepoint, and the
    LastStateWithoutCheckpoints event that says why one was taken."""
    assert events_of(f, "LastStateWithoutCheckpoints", after), [e["type"] for e in f.events()]
    sp = wait_for(lambda: (s := f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]) and
                  s["timeStamp"] >= after and s, 60, "the stop's savepoint")
    assert sp["triggerType"] == "UPGRADE", sp
    assert os.path.exists(os.path.join(norm(sp["location"]), "_metadata"))
    return sp


def assert_exactly_once(output, at_least):
    rc, summary = check_output(output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary
    assert summary["records"] >= at_least, summary
    return summary["records"]


def test_last_state_without_checkpoints_stops_and_upgrades_through_savepoints(flinklets):
    args = ["--rate", "200", "--keys", "8", "--output", "OUT"]
    f = flinklets(conf=CONF, job={"upgradeMode": "last-state", "args": args}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    time.sleep(3)  # records counted; no checkpoint will ever hold them
    assert f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"] is None

    # 1. a stop (SIGTERM): a savepoint, named by the Stopped event, exit 0; the stop commits the output so far
    t0 = now_ms()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    sp1 = stop_savepoint(f, t0)
    stopped = events_of(f, "Stopped", t0)
    assert stopped and os.path.basename(norm(sp1["location"])) in stopped[-1]["message"], stopped
    assert f.status()["error"] is None
    n1 = assert_exactly_once(f.output, 1)

    # 2. a new start restores exactly that savepoint (Flink's word), and the counts go on from it
    g = flinklets(state_dir=f.state, conf=CONF, job={"upgradeMode": "last-state",
                                                     "args": ["--rate", "200", "--keys", "8", "--output", f.output]})
    g.start()
    st = g.wait_stable()
    assert st["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp1["location"]), r
    assert st["restoredFrom"]["kind"] == "savepoint" and norm(st["restoredFrom"]["location"]) == norm(sp1["location"])
    time.sleep(3)

    # 3. an upgrade (a changed argument, SIGHUP): through a savepoint too, and the new spec restores it
    pid = st["jvm"]["pid"]
    t1 = now_ms()
    g.write_config(job={"args": ["--rate", "300", "--keys", "8", "--output", f.output]})
    g.signal(signal.SIGHUP)
    st = wait_for(lambda: (s := g.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE"
                  and s["jobStatus"]["state"] == "RUNNING" and s, 120, "the upgraded job RUNNING")
    sp2 = stop_savepoint(g, t1)
    assert norm(sp2["location"]) != norm(sp1["location"])
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp2["location"]), r
    assert norm(st["restoredFrom"]["location"]) == norm(sp2["location"])
    n2 = assert_exactly_once(f.output, n1 + 1)  # the upgrade's stop committed what the second run counted
    time.sleep(3)

    # 4. the last stop: every record exactly once, each key's counts 1..n without a restart from zero
    t2 = now_ms()
    g.signal(signal.SIGTERM)
    assert g.wait_exit(30) == 0
    stop_savepoint(g, t2)
    assert_exactly_once(f.output, n2 + 1)
    warnings = [(e["type"], e["message"]) for e in g.new_events() if e["level"] != "Normal"]
    assert not warnings, warnings

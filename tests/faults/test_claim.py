"""The claim of flinklet's own NATIVE stop savepoints (docs/operations.md, "Claimed savepoints"), against the fake
Flink: the versions served here (1.20.5, 2.2.1, 2.3.0) predate FLINK-39964, so the real MiniCluster never gets a
claim (tests/e2e/test_claim.py); a Flink whose jars say 2.3.1 does. What is checked is what flinklet does around it:
the launch's claim mode (the `-cm` flag the JVM is given), the savepoint leaving the history for
`claimedSavepoints` before the JVM runs, retention never disposing of it, the claim surviving a restart of flinklet,
a later stop savepoint claimed in turn, and the sweep forgetting a claimed savepoint that is gone."""
import json
import os
import struct

from attack_kit import MAGIC, install_fake_java
from conftest import wait_for
from fakeflink import end_once_reported

JID = "0123456789abcdef0123456789abcdef"
TIMEOUT = 60
ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true"}


def write(path, data=b"x" * 100):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def savepoint(state, n, suffix):
    d = os.path.join(state, "savepoints", f"savepoint-{JID[:6]}-{suffix}")
    write(os.path.join(d, "sst-" + suffix))
    write(os.path.join(d, "_metadata"), struct.pack(">IIq", MAGIC, 4, n) + b"\0" * 64)
    return d


def prepare(sup, version):
    os.makedirs(sup.state, exist_ok=True)
    write(os.path.join(sup.state, "job-id"), (JID + "\n").encode())
    lib = sup.flink_home / "lib"
    for old in lib.glob("flink-dist-*.jar"):
        old.unlink()
    (lib / f"flink-dist-{version}.jar").write_bytes(b"")


def events(sup, kind):
    return [e for e in sup.events() if e["type"] == kind]


def launches(spawns):
    """The argv of each spawn of the fake java, in order."""
    try:
        with open(spawns) as f:
            return [line.split(" ", 1)[1].strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def stop_with(sup, server, path):
    """SIGTERM; the fake completes the stop-with-savepoint at path and the JVM ends."""
    server.savepoint_location = "file:" + path
    end_once_reported(server, sup.stop_file)
    assert sup.stop() == 0
    server.savepoint_location = None
    server.on_savepoint_reported = None
    sp = sup.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp["formatType"] == "NATIVE" and sp["triggerType"] == "UPGRADE", sp
    return sp["location"]


def running(sup, count=1):
    wait_for(lambda: len(events(sup, "JobRunning")) >= count, TIMEOUT, f"JobRunning x{count}\n{sup.logs()[-3000:]}")


def start(supervisors, server, state, version, conf=None):
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=dict(ROCKS, **(conf or {})))
    prepare(sup, version)
    spawns = install_fake_java(sup, consume_stop=True)
    before = len(events(sup, "JobRunning"))  # (the volume's event log holds the earlier flinklets' too)
    sup.start()
    running(sup, before + 1)
    return sup, spawns


def info(sup):
    return sup.status()["jobStatus"]["savepointInfo"]


def test_a_fixed_flink_claims_the_stop_savepoint_and_it_leaves_the_history(server, supervisors, tmp_path):
    state = str(tmp_path / "state")
    first, _ = start(supervisors, server, state, "2.3.1")
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    loc = stop_with(first, server, x)
    assert [h["location"] for h in info(first)["savepointHistory"]] == [loc]

    second, spawns = start(supervisors, server, state, "2.3.1")
    argv = launches(spawns)[-1]
    assert f"-s file://{x}" in argv and "-cm claim" in argv, argv
    claimed = events(second, "SavepointClaimed")
    assert len(claimed) == 1 and x in claimed[0]["message"], claimed
    i = info(second)
    assert i["savepointHistory"] == [], i
    assert [c["location"] for c in i["claimedSavepoints"]] == [loc] and i["claimedSavepoints"][0]["checkpointId"] == 7
    assert i["lastSavepoint"]["location"] == loc and i["lastSavepoint"]["claimed"] is True, i
    # the claim is on the volume before the JVM: the Restoring event that comes with the launch follows it
    kinds = [e["type"] for e in second.events()]
    assert kinds.index("SavepointClaimed") < len(kinds) - 1 - kinds[::-1].index("Restoring"), kinds

    # a second stop: a new savepoint in the history (retention keeps 1: the claimed one is not counted, nor
    # disposed of); the next launch claims it in turn, and the first, gone meanwhile (Flink disposed of it), leaves
    # claimedSavepoints with that launch's sweep
    y = savepoint(state, 12, "bbbbbbbbbbbb")
    loc2 = stop_with(second, server, y)
    assert os.path.exists(os.path.join(x, "_metadata")), "retention disposed of a claimed savepoint"
    assert [h["location"] for h in info(second)["savepointHistory"]] == [loc2]
    for name in os.listdir(x):
        os.unlink(os.path.join(x, name))
    os.rmdir(x)
    third, spawns = start(supervisors, server, state, "2.3.1",
                          {"kubernetes.operator.savepoint.history.max.count": "1"})
    argv = launches(spawns)[-1]
    assert f"-s file://{y}" in argv and "-cm claim" in argv, argv
    wait_for(lambda: [c["location"] for c in info(third)["claimedSavepoints"]] == [loc2], TIMEOUT,
             f"only the second one claimed: {json.dumps(info(third))}")
    assert info(third)["savepointHistory"] == []
    assert third.stop() in (0, 4)


def test_an_unfixed_flink_restores_the_same_savepoint_in_no_claim_mode(server, supervisors, tmp_path):
    state = str(tmp_path / "state")
    first, _ = start(supervisors, server, state, "2.2.1")
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    loc = stop_with(first, server, x)
    second, spawns = start(supervisors, server, state, "2.2.1")
    argv = launches(spawns)[-1]
    assert f"-s file://{x}" in argv and "-cm no_claim" in argv, argv
    assert not events(second, "SavepointClaimed")
    assert "FLINK-39964" in second.logs()
    i = info(second)
    assert [h["location"] for h in i["savepointHistory"]] == [loc] and i["claimedSavepoints"] == [], i
    assert second.stop() in (0, 4)


def test_never_and_other_savepoints_are_not_claimed(server, supervisors, tmp_path):
    """claim-savepoints: never; and, with auto, a savepoint flinklet did not take to stop the job (newer than the
    stop's, never recorded) is restored in no_claim mode."""
    state = str(tmp_path / "state")
    first, _ = start(supervisors, server, state, "2.3.1")
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    stop_with(first, server, x)
    second, spawns = start(supervisors, server, state, "2.3.1", {"flinklet.restore.claim-savepoints": "never"})
    assert f"-s file://{x}" in launches(spawns)[-1] and "-cm no_claim" in launches(spawns)[-1]
    assert not events(second, "SavepointClaimed")
    second.cleanup()
    y = savepoint(state, 9, "cccccccccccc")
    third, spawns = start(supervisors, server, state, "2.3.1")
    argv = launches(spawns)[-1]
    assert f"-s file://{y}" in argv and "-cm no_claim" in argv, argv
    assert not events(third, "SavepointClaimed")
    third.cleanup()

"""The claim of flinklet's own NATIVE stop savepoints (docs/operations.md, "Claimed savepoints"), against the fake
Flink: the versions served here (1.20.5, 2.2.1, 2.3.0) predate FLINK-39964, so the real MiniCluster never gets a
claim (tests/e2e/test_claim.py); a Flink that says it is 2.3.1 (GET /config's flink-version) does, from the launch
after it said so, whatever its jars are named. What is checked is what flinklet does around it: the launch's claim
mode (the `-cm` flag the JVM is given), the savepoint leaving the history for `claimedSavepoints` before the JVM
runs, retention never disposing of it, the claims surviving a restart of flinklet (whose first launch never claims:
no JVM has said its version yet), a later stop savepoint claimed in turn, the sweep forgetting a claimed savepoint
that is gone, and no claim when the version said is not a fixed release or the jars changed since."""
import json
import os
import signal
import struct
import time

import pytest

from attack_kit import MAGIC, install_fake_java
from conftest import wait_for
from fakeflink import end_once_reported
from memtune_kit import set_option

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
    wait_for(lambda: len(events(sup, "JobRunning")) >= count, TIMEOUT, f"JobRunning x{count}\n{sup.logs()[-3000:]}",
             interval=0.1)


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


def upgrade_with(sup, server, spawns, path, interval):
    """An upgrade of the running job (a reload that changes a Flink option, upgradeMode savepoint): the fake completes
    the stop-with-savepoint at path, the JVM ends, and flinklet launches the next from that savepoint. Returns its
    argv."""
    n, ran = len(launches(spawns)), len(events(sup, "JobRunning"))
    server.savepoint_location = "file:" + path
    end_once_reported(server, sup.stop_file)
    set_option(sup, "execution.checkpointing.interval", interval)
    sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: len(launches(spawns)) > n, TIMEOUT, f"the upgrade's launch\n{sup.logs()[-3000:]}", interval=0.1)
    server.savepoint_location = None
    server.on_savepoint_reported = None
    running(sup, ran + 1)
    said(sup, server)
    return launches(spawns)[-1]


def said(sup, server):
    """Waits until the running JVM was asked its version and flinklet heard the answer."""
    wait_for(lambda: sum(1 for r in list(server.requests) if r[2] == "/config") >= len(events(sup, "JobRunning")),
             TIMEOUT, "GET /config of the running JVM", interval=0.1)
    time.sleep(0.5)  # its answer taken


def test_a_fixed_flink_claims_the_stop_savepoint_and_it_leaves_the_history(server, supervisors, tmp_path):
    state = str(tmp_path / "state")
    server.flink_version = "2.3.1"
    sup, spawns = start(supervisors, server, state, "2.3.1")
    said(sup, server)
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    argv = upgrade_with(sup, server, spawns, x, "2 s")
    assert f"-s file://{x}" in argv and "-cm claim" in argv, argv
    loc = "file://" + x
    claimed = events(sup, "SavepointClaimed")
    assert len(claimed) == 1 and x in claimed[0]["message"], claimed
    i = info(sup)
    assert i["savepointHistory"] == [], i
    assert [c["location"] for c in i["claimedSavepoints"]] == [loc] and i["claimedSavepoints"][0]["checkpointId"] == 7
    assert i["lastSavepoint"]["location"] == loc and i["lastSavepoint"]["claimed"] is True, i
    # the claim is on the volume before the JVM: the Restoring event that comes with the launch follows it
    kinds = [e["type"] for e in sup.events()]
    assert kinds.index("SavepointClaimed") < len(kinds) - 1 - kinds[::-1].index("Restoring"), kinds

    # a second upgrade: its savepoint is claimed in turn; the first, gone meanwhile (Flink disposed of it), leaves
    # claimedSavepoints with that launch's sweep
    y = savepoint(state, 12, "bbbbbbbbbbbb")
    for name in os.listdir(x):
        os.unlink(os.path.join(x, name))
    os.rmdir(x)
    argv = upgrade_with(sup, server, spawns, y, "3 s")
    assert f"-s file://{y}" in argv and "-cm claim" in argv, argv
    wait_for(lambda: [c["location"] for c in info(sup)["claimedSavepoints"]] == ["file://" + y], TIMEOUT,
             f"only the second one claimed: {json.dumps(info(sup))}", interval=0.1)
    assert info(sup)["savepointHistory"] == []

    # a stop: a new savepoint in the history (retention keeps 1: the claimed one is not counted, nor disposed of);
    # the claims survive a restart of flinklet, whose first launch restores in no_claim mode: no JVM has said its
    # version to it yet
    z = savepoint(state, 15, "cccccccccccc")
    loc3 = stop_with(sup, server, z)
    assert os.path.exists(os.path.join(y, "_metadata")), "retention disposed of a claimed savepoint"
    assert [h["location"] for h in info(sup)["savepointHistory"]] == [loc3]
    again, spawns = start(supervisors, server, state, "2.3.1", {"kubernetes.operator.savepoint.history.max.count": "1"})
    argv = launches(spawns)[-1]
    assert f"-s file://{z}" in argv and "-cm no_claim" in argv, argv
    assert "has said its version yet" in again.logs()
    i = info(again)
    assert [c["location"] for c in i["claimedSavepoints"]] == ["file://" + y], i
    assert [h["location"] for h in i["savepointHistory"]] == [loc3], i
    assert again.stop() in (0, 4)


@pytest.mark.parametrize("said_version", ["2.2.1", "2.3-SNAPSHOT", "2.3.1-custom", "1.20.1-vvr-8.0.11", None])
def test_jars_named_fixed_do_not_claim_for_a_flink_that_says_otherwise(server, supervisors, tmp_path, said_version):
    """The jars' names say 2.3.1; the running Flink says it is a release without the fix, a snapshot, a vendor's
    build, or nothing (GET /config answers 404): the next launch restores the stop savepoint in no_claim mode."""
    state = str(tmp_path / "state")
    server.flink_version = said_version
    sup, spawns = start(supervisors, server, state, "2.3.1")
    said(sup, server)
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    argv = upgrade_with(sup, server, spawns, x, "2 s")
    assert f"-s file://{x}" in argv and "-cm no_claim" in argv, argv
    assert not events(sup, "SavepointClaimed")
    assert "FLINK-39964" in sup.logs()
    assert info(sup)["claimedSavepoints"] == []
    assert sup.stop() in (0, 4)


def test_a_flink_that_says_it_is_fixed_claims_whatever_its_jars_are_named(server, supervisors, tmp_path):
    """Jars named 2.2.1 (a vendor's renamed build), a Flink that says 2.3.1: claimed; then a jar added to lib/ (the
    jars changed since that Flink said its version): the next launch does not claim."""
    state = str(tmp_path / "state")
    server.flink_version = "2.3.1"
    sup, spawns = start(supervisors, server, state, "2.2.1")
    said(sup, server)
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    argv = upgrade_with(sup, server, spawns, x, "2 s")
    assert "-cm claim" in argv, argv
    time.sleep(0.05)
    (sup.flink_home / "lib" / "flink-extra-connector.jar").write_bytes(b"")
    y = savepoint(state, 9, "bbbbbbbbbbbb")
    # the JVM that runs now said 2.3.1 with the old lib/; it is asked again only when the next runs
    argv = upgrade_with(sup, server, spawns, y, "3 s")
    assert f"-s file://{y}" in argv and "-cm no_claim" in argv, argv
    assert sup.stop() in (0, 4)


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
    stop's, never recorded) is restored in no_claim mode, on a Flink that says it is fixed."""
    state = str(tmp_path / "state")
    server.flink_version = "2.3.1"
    first, spawns = start(supervisors, server, state, "2.3.1", {"flinklet.restore.claim-savepoints": "never"})
    said(first, server)
    x = savepoint(state, 7, "aaaaaaaaaaaa")
    argv = upgrade_with(first, server, spawns, x, "2 s")
    assert f"-s file://{x}" in argv and "-cm no_claim" in argv, argv
    assert not events(first, "SavepointClaimed")
    first.cleanup()
    second, spawns = start(supervisors, server, state, "2.3.1")
    said(second, server)
    y = savepoint(state, 9, "cccccccccccc")
    z = savepoint(state, 8, "dddddddddddd")  # the upgrade's own, older than y
    argv = upgrade_with(second, server, spawns, z, "3 s")
    assert f"-s file://{y}" in argv and "-cm no_claim" in argv, argv
    assert not events(second, "SavepointClaimed")
    second.cleanup()

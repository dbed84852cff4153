"""Savepoint formats against the real MiniCluster. flinklet's stop savepoint (SIGTERM, suspend, upgrade) is in the
state backend's NATIVE format with RocksDB and ForSt unless kubernetes.operator.savepoint.format.type says
otherwise; with ForSt every savepoint is (ForSt takes no CANONICAL one: a stop would fail and exit 4); the next run
restores the stop savepoint, and the job's output stays exactly-once. check-config warns about ForSt with CANONICAL.

How a format is told apart on disk (seen with Flink 2.2.1): a NATIVE savepoint of RocksDB or ForSt is the
backend's own files (RocksDB SST files, stored under random names, their names and MANIFEST-/CURRENT listed in
_metadata); a CANONICAL one is Flink's key-group format, with none of that. Small files are inlined into _metadata
(execution.checkpointing.data-inline-threshold), so the tests set the threshold to 0 to have every file on disk."""
import glob
import os
import signal
import subprocess

import pytest

from conftest import BIN, FLINK_HOME, check_output, flink_has_forst, restored, wait_for, wait_restarted
from testkit import norm

# RocksDB's block-based table magic number (table/format.h: kBlockBasedTableMagicNumber 0x88e241b785f4cff7), the
# last 8 bytes of every SST file, little-endian; ForSt, a fork of RocksDB, writes the same table format
SST_MAGIC = bytes.fromhex("f7cff485b741e288")
ON_DISK = {"state.storage.fs.memory-threshold": "0"}  # Flink's older name, read by 1.20 and 2.x alike
ROCKSDB = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true", **ON_DISK}
FORST = {"state.backend.type": "forst", "execution.checkpointing.incremental": "true", **ON_DISK}


def sst_files(savepoint):
    """The files of a savepoint directory that are RocksDB SST files (by their content: Flink names them anew)."""
    found = []
    for path in glob.glob(os.path.join(norm(savepoint), "*")):
        if os.path.basename(path) == "_metadata" or os.path.getsize(path) < len(SST_MAGIC):
            continue
        with open(path, "rb") as f:
            f.seek(-len(SST_MAGIC), os.SEEK_END)
            if f.read() == SST_MAGIC:
                found.append(path)
    return found


def lists_backend_files(savepoint):
    """Whether _metadata names the backend's own files (a native snapshot's handles carry their names)."""
    with open(os.path.join(norm(savepoint), "_metadata"), "rb") as f:
        meta = f.read()
    return b"MANIFEST-" in meta and b".sst" in meta


def assert_native(sp):
    """What is on disk is the backend's own snapshot, and the status document says NATIVE."""
    assert sst_files(sp["location"]), f"no SST file in the savepoint: {os.listdir(norm(sp['location']))}"
    assert lists_backend_files(sp["location"])
    assert sp.get("formatType") == "NATIVE", sp


def assert_canonical(sp):
    assert os.path.exists(os.path.join(norm(sp["location"]), "_metadata"))
    assert not sst_files(sp["location"]) and not lists_backend_files(sp["location"])
    assert sp.get("formatType") == "CANONICAL", sp


def manual_savepoint(f):
    """A savepoint asked for by savepointTriggerNonce (MANUAL), as recorded in the history."""
    f.write_config(job={"savepointTriggerNonce": 1})
    hist = wait_for(lambda: [h for h in f.status()["jobStatus"]["savepointInfo"]["savepointHistory"]
                             if h["triggerType"] == "MANUAL"], 60, "the manual savepoint")
    return hist[0]


def stop_with_savepoint(f):
    """SIGTERM: exit 0 and the stop's savepoint (UPGRADE) recorded, said with its format in the events."""
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0, f.logs()[-3000:]
    st = f.status()
    assert st["error"] is None and st["lifecycleState"] == "SUSPENDED"
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE"
    assert st["jobStatus"]["savepointInfo"]["savepointHistory"][-1] == sp
    return sp


def assert_said(f, fmt):
    """The stop's events name its format."""
    said = [e["message"] for e in f.events() if e["type"] in ("SavepointTriggered", "SavepointCompleted")]
    assert f"with a {fmt} savepoint into" in said[-2], said
    assert said[-1].endswith(f"completed (UPGRADE, {fmt})"), said


def restart_restores(flinklets, f, conf, sp, job_id):
    """The next run restores exactly the stop's savepoint and carries the output on exactly once."""
    g = flinklets(state_dir=f.state, conf=conf, job=dict(f.job)).start()
    st = g.wait_stable()
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"])
    assert st["restoredFrom"] == {"kind": "savepoint", "location": sp["location"], "id": r["id"]}
    g.wait_checkpoint(r["id"] + 2)  # output committed by the restored job
    g.signal(signal.SIGTERM)
    assert g.wait_exit(30) == 0
    rc, summary = check_output(g.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["records"] > 0, summary


def test_rocksdb_stops_with_a_native_savepoint_and_restores_it(flinklets):
    f = flinklets(conf=ROCKSDB, job={"savepointTriggerNonce": 0}).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    # a savepoint kept for its own sake stays CANONICAL (restorable by any backend)
    assert_canonical(manual_savepoint(f))
    sp = stop_with_savepoint(f)
    assert_native(sp)
    assert_said(f, "NATIVE")
    restart_restores(flinklets, f, ROCKSDB, sp, job_id)


# asan_elsewhere: the format's choice runs under ASan in the rocksdb test above and in every stop
@pytest.mark.asan_elsewhere
def test_forst_stops_with_a_native_savepoint_and_restores_it(flinklets):
    if not flink_has_forst():
        pytest.skip(f"no ForSt state backend in {FLINK_HOME}/lib (make flink-lib adds it for Flink 2.x only)")
    f = flinklets(conf=FORST, job={"savepointTriggerNonce": 0}).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    # ForSt takes NATIVE savepoints only: the manual one too
    assert_native(manual_savepoint(f))
    sp = stop_with_savepoint(f)
    assert_native(sp)
    assert_said(f, "NATIVE")
    restart_restores(flinklets, f, FORST, sp, job_id)


# asan_elsewhere: the format's choice runs under ASan in the rocksdb test above and in every stop
@pytest.mark.asan_elsewhere
def test_an_upgrade_to_another_backend_goes_through_a_canonical_savepoint(flinklets):
    """A NATIVE savepoint of RocksDB is RocksDB's files, which the hashmap backend cannot read: the upgrade's stop
    savepoint is CANONICAL when the new spec changes the backend, and the upgraded job restores it."""
    f = flinklets(conf=ROCKSDB).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    f.write_config(conf={"state.backend.type": "hashmap"})
    st = wait_restarted(f, pid)
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE"
    assert_canonical(sp)
    assert_said(f, "CANONICAL")
    r = restored(f, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"])
    f.wait_checkpoint(r["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["records"] > 0, summary


# asan_elsewhere: the format's choice runs under ASan in the rocksdb test above and in every stop
@pytest.mark.asan_elsewhere
def test_an_explicit_canonical_format_is_kept_with_rocksdb(flinklets):
    f = flinklets(conf={**ROCKSDB, "kubernetes.operator.savepoint.format.type": "CANONICAL"}).start()
    f.wait_stable()
    f.wait_checkpoint(2)
    assert_canonical(stop_with_savepoint(f))
    assert_said(f, "CANONICAL")


def test_check_config_warns_that_forst_cannot_take_canonical_savepoints(tmp_path):
    p = tmp_path / "flinklet.yaml"
    p.write_text("metadata:\n  name: forst\nspec:\n  flinkConfiguration:\n"
                 "    state.backend.type: forst\n"
                 "    execution.checkpointing.incremental: \"true\"\n"
                 "    kubernetes.operator.savepoint.format.type: CANONICAL\n"  # line 7
                 "  job:\n    jarURI: local:///opt/job.jar\n")
    run = lambda: subprocess.run([BIN, "check-config", "-c", str(p)], capture_output=True, text=True, timeout=30)  # noqa: E731
    r = run()
    assert r.returncode == 0, r.stderr  # valid, and said
    assert (f"{p}:7:48: warning: spec.flinkConfiguration.kubernetes.operator.savepoint.format.type: CANONICAL with "
            f"state.backend.type forst: ForSt takes NATIVE savepoints only") in r.stderr
    p.write_text(p.read_text().replace("CANONICAL", "NATIVE"))
    r = run()
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr

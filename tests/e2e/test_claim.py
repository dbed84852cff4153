"""flinklet's own stop savepoints and the claim mode (issue 26, item 2), against the real MiniCluster with RocksDB's
incremental checkpoints and 64 MiB of state. A claim-mode restore of a NATIVE savepoint would make the first
checkpoint after a restart incremental, but before FLINK-39964 (fixed in Flink 2.2.2, 2.3.1, 2.4) the checkpoints
after it name the savepoint's files relative to their own directory, and the next restore from one of them fails
(FileNotFoundException; seen with 2.2.1 on 2026-12-04). So on the versions served here (1.20.5, 2.2.1, 2.3.0)
flinklet restores its stop savepoint in no_claim mode: the savepoint stays in the history, and a kill -9 after the
restart restores from the newest checkpoint. The claim's bookkeeping on a fixed version is tested against a fake
Flink (tests/faults/test_claim.py) and the sweep's part in tests/unit/test_leftovers.c.

Checked without trusting flinklet: the restores are Flink's (latest.restored: is_savepoint, and Flink takes a
claimed savepoint for a checkpoint of its own), the sizes are Flink's, and the output is checked exactly-once."""
import os
import re
import signal
import struct

import pytest

from conftest import check_output, pid_alive, restored, wait_for, wait_restarted
from testkit import norm

KEYS = 64
ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
         "execution.checkpointing.interval": "1s", "execution.checkpointing.num-retained": "2"}
JOB = {"args": ["--rate", "200", "--keys", str(KEYS), "--pad-bytes", str(1 << 20), "--output", "OUT"]}
STATE = KEYS << 20


def has_flink_39964(version):
    major, minor, patch = (int(re.match(r"\d+", p).group()) for p in (version.split(".") + ["0", "0"])[:3])
    if major != 2:
        return major > 2
    return minor >= 4 or (minor == 3 and patch >= 1) or (minor == 2 and patch >= 2)


def checkpoints(f, job_id):
    return f.rest(f"/jobs/{job_id}/checkpoints")


def wait_state(f, job_id):
    """Until Flink's newest checkpoint holds the whole state (each key writes its MiB on its first record)."""
    def full():
        c = checkpoints(f, job_id)["latest"]["completed"]
        return c if c and c["state_size"] >= 0.9 * STATE else None
    return wait_for(full, 180, f"a checkpoint of {STATE >> 20} MiB")


def first_after(f, job_id, restored_id):
    """Flink's record of the first completed checkpoint after the restore (its id is restored_id + 1)."""
    def find():
        for c in checkpoints(f, job_id)["history"]:
            if c["id"] == restored_id + 1 and c["status"] == "COMPLETED":
                return c
        return None
    return wait_for(find, 120, f"checkpoint {restored_id + 1} completed")


def metadata_id(path):
    try:
        with open(os.path.join(path, "_metadata"), "rb") as fh:
            magic, _, cid = struct.unpack(">IIq", fh.read(16))
        return cid if magic == 0x4960672D else None
    except (OSError, struct.error):
        return None


def stop_with_savepoint(f):
    f.signal(signal.SIGTERM)
    assert f.wait_exit(120) == 0
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE" and sp["formatType"] == "NATIVE", sp
    assert any(norm(h["location"]) == norm(sp["location"])
               for h in st["jobStatus"]["savepointInfo"]["savepointHistory"]), st["jobStatus"]["savepointInfo"]
    return norm(sp["location"])


def start_again(flinklets, f, conf=None):
    g = flinklets(state_dir=f.state, conf=dict(ROCKS, **(conf or {})), memory="2g", job=dict(JOB))
    g.start()
    job_id = g.wait_stable(timeout=180)["jobStatus"]["jobId"]
    return g, job_id


@pytest.mark.asan_elsewhere  # 64 MiB of Flink's state; the claim's C paths run under ASan in the unit tests
def test_before_flink_39964_a_stop_savepoint_is_not_claimed_and_every_checkpoint_after_it_restores(flinklets):
    f = flinklets(conf=ROCKS, memory="2g", job=dict(JOB))
    f.start()
    job_id = f.wait_stable(timeout=180)["jobStatus"]["jobId"]
    version = f.status()["flink"]["version"]
    if has_flink_39964(version):
        pytest.skip(f"Flink {version} has FLINK-39964: the claim applies (tests/faults/test_claim.py)")
    wait_state(f, job_id)
    sp = stop_with_savepoint(f)
    sp_id = metadata_id(sp)
    assert sp_id is not None

    g, _ = start_again(flinklets, f)
    r = restored(g, job_id)
    # no_claim: Flink restores it as a savepoint (claimed, it would take it for a checkpoint of its own)
    assert r["id"] == sp_id and r["is_savepoint"] and norm(r["external_path"]) == sp, r
    assert not [e for e in g.events() if e["type"] == "SavepointClaimed"]
    restoring = [e for e in g.new_events() if e["type"] == "Restoring"]
    assert restoring and "no_claim mode" in restoring[-1]["message"], restoring
    assert "FLINK-39964" in g.logs()
    info = g.status()["jobStatus"]["savepointInfo"]
    assert any(norm(h["location"]) == sp for h in info["savepointHistory"]) and not info["claimedSavepoints"], info
    assert not info["lastSavepoint"].get("claimed"), info
    first = first_after(g, job_id, sp_id)
    assert first["checkpointed_size"] >= 0.9 * first["state_size"], f"a full first checkpoint was expected: {first}"

    # a kill -9 once checkpoints went on: the newest one restores (claimed, it would name the savepoint's files
    # relative to itself: FileNotFoundException), and the savepoint is still there, whole
    g.wait_checkpoint(sp_id + 4, timeout=120)
    n = len(g.events())
    pid = g.status()["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_restarted(g, pid, timeout=180)
    r = restored(g, job_id)
    assert "/chk-" in r["external_path"] and r["id"] > sp_id + 3, r
    g.wait_checkpoint(r["id"] + 2, timeout=120)
    assert "FileNotFoundException" not in g.logs()
    assert not [e for e in g.events()[n:] if e["type"] in ("RestoreFailed", "RestorePointDemoted")]
    assert metadata_id(sp) == sp_id, "the savepoint restored in no_claim mode was disposed of"
    g.signal(signal.SIGTERM)
    assert g.wait_exit(120) == 0
    rc, summary = check_output(g.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary

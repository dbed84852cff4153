"""Issue 13: newest means the highest checkpoint id, not the newest file. A job's checkpoints and savepoints
share Flink's checkpoint counter, so a savepoint followed by checkpoints is older than they are whatever the
file times say. Two ways a volume's times go wrong without any snapshot changing: a copy that does not keep
them (`cp -r`, rsync without -t, a backup restore), and a `touch` (or a clock step) that makes an old
savepoint the newest file. After either, the next start must restore from the highest id and the job's
state must carry on from there: the committed exactly-once output then has no record twice (a restore from
the older savepoint would write again what the checkpoints after it had committed)."""
import os
import signal
import struct
import subprocess
import time

from conftest import check_output, pid_alive, restored, wait_for
from testkit import norm
import pytest

pytestmark = pytest.mark.heavy  # make e2e only, not e2e-asan (conftest.py)

MAGIC = 0x4960672D


def metadata_id(directory):
    """The checkpoint id in a snapshot's _metadata header (magic, version, then the id, big-endian)."""
    with open(os.path.join(directory, "_metadata"), "rb") as f:
        magic, _version, cid = struct.unpack(">IIq", f.read(16))
    assert magic == MAGIC, f"{directory}/_metadata: not Flink checkpoint metadata"
    return cid


def checkpoints_on_disk(state, job_id):
    """{id: directory} of the complete checkpoints of the job in the state directory."""
    jobdir = os.path.join(state, "checkpoints", job_id)
    out = {}
    for d in os.listdir(jobdir):
        path = os.path.join(jobdir, d)
        if d.startswith("chk-") and os.path.isfile(os.path.join(path, "_metadata")):
            out[metadata_id(path)] = path
    return out


def savepoint_then_checkpoints_then_crash(flinklets, out):
    """Runs the job until it has a savepoint and two later checkpoints, then kills flinklet and its JVM at once
    (nothing tidied up, no stop savepoint). Returns (state dir, job id, savepoint dir, its id, the highest
    checkpoint id on disk)."""
    f = flinklets(job={"args": ["--rate", "100", "--keys", "8", "--output", out]}).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    assert f.http("/api/v1/savepoint", method="POST", token=f.token(), body=b"")[0] == 202
    st = wait_for(lambda: (s := f.status()) and s["jobStatus"]["savepointInfo"]["savepointHistory"] and s, 90,
                  "the manual savepoint")
    sp = norm(st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"])
    sp_id = metadata_id(sp)
    # two checkpoints after the savepoint, complete on disk (num-retained is 2: both are kept)
    wait_for(lambda: len([i for i in checkpoints_on_disk(f.state, job_id) if i > sp_id]) >= 2, 90,
             f"two checkpoints after savepoint {sp_id}")
    jvm = f.status()["jvm"]["pid"]
    os.killpg(f.proc.pid, signal.SIGKILL)  # flinklet and its JVM (same process group) at once
    f.proc.wait()
    wait_for(lambda: not pid_alive(jvm), 30, "the JVM gone")
    top = max(checkpoints_on_disk(f.state, job_id))
    assert top > sp_id
    return f.state, job_id, sp, sp_id, top


def newest_mtime(directory):
    return max(os.stat(os.path.join(root, n)).st_mtime_ns for root, _, names in os.walk(directory) for n in names)


def assert_restored_from_highest_id(g, job_id, state, top, sp_id, out):
    st = g.wait_stable(180)
    r = restored(g, job_id)
    assert r["is_savepoint"] is False and r["id"] == top, (r, f"savepoint {sp_id}, newest checkpoint {top}")
    st = g.status()
    assert st["restoredFrom"]["kind"] == "checkpoint"
    assert st["restoredFrom"]["id"] == top
    assert (os.path.realpath(norm(st["restoredFrom"]["location"]))
            == os.path.realpath(os.path.join(state, "checkpoints", job_id, f"chk-{top}")))
    restoring = [e["message"] for e in g.new_events() if e["type"] == "Restoring"]
    assert restoring and f"to checkpoint id {top} from checkpoint " in restoring[-1], restoring
    # the state carried on: run on to a later checkpoint, stop, and the committed output is exactly once
    last = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    g.wait_checkpoint(max(top, last["id"] if last else 0) + 2, timeout=90)
    g.signal(signal.SIGTERM)
    assert g.wait_exit(60) == 0
    rc, summary = check_output(out)
    assert summary.get("duplicates") == 0 and summary.get("gaps") == 0, summary
    assert rc == 0, summary


def test_copy_without_times_restores_from_the_highest_id(tmp_path, flinklets):
    out = str(tmp_path / "out")  # outside the state directory: both runs commit to the same output
    state, job_id, sp, sp_id, top = savepoint_then_checkpoints_then_crash(flinklets, out)

    # cp -r (no -p) entry by entry in sorted order, as rsync without -t does: savepoints/ is written after
    # checkpoints/, so every file of the savepoint is newer than every file of the checkpoints
    copy = str(tmp_path / "copy")
    os.mkdir(copy)
    for name in sorted(os.listdir(state)):
        subprocess.run(["cp", "-r", os.path.join(state, name), os.path.join(copy, name)], check=True)
        time.sleep(0.05)  # a tick of the file system's clock between entries
    sp_copy = os.path.join(copy, "savepoints", os.path.basename(sp))
    chk_copy = os.path.join(copy, "checkpoints", job_id, f"chk-{top}")
    assert metadata_id(sp_copy) == sp_id and metadata_id(chk_copy) == top
    assert newest_mtime(sp_copy) > newest_mtime(os.path.join(copy, "checkpoints")), \
        "the copy must make the savepoint the newest file, or this test proves nothing"

    g = flinklets(state_dir=copy, job={"args": ["--rate", "100", "--keys", "8", "--output", out]}).start()
    assert_restored_from_highest_id(g, job_id, copy, top, sp_id, out)


def test_touched_savepoint_does_not_win_over_newer_checkpoints(tmp_path, flinklets):
    out = str(tmp_path / "out")
    state, job_id, sp, sp_id, top = savepoint_then_checkpoints_then_crash(flinklets, out)

    # the savepoint's files touched an hour ahead (a touch, a clock that was ahead when it was written)
    later = time.time() + 3600
    for root, dirs, names in os.walk(sp):
        for n in dirs + names:
            os.utime(os.path.join(root, n), (later, later))
    os.utime(sp, (later, later))
    assert newest_mtime(sp) > newest_mtime(os.path.join(state, "checkpoints"))

    g = flinklets(state_dir=state, job={"args": ["--rate", "100", "--keys", "8", "--output", out]}).start()
    assert_restored_from_highest_id(g, job_id, state, top, sp_id, out)

"""The volume does not fill with what dead JVMs leave (issue 26, item 3), against the real MiniCluster with RocksDB's
incremental checkpoints: every kill -9 leaves the dead JVM's other retained checkpoints, a checkpoint in flight and
shared/ files only those named; a savepoint past its budget leaves a partial directory. Before the next launch
flinklet removes them, and every point it keeps still restores (Flink itself reads every file a point names).

Checked without trusting flinklet: which files each kept `_metadata` names is read from the bytes here, and the
restores are Flink's own (`/jobs/<id>/checkpoints` latest.restored) with the exactly-once output checked."""
import glob
import os
import signal
import struct

import pytest

from conftest import check_output, restored, wait_for, wait_restarted
from testkit import norm

ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
         "execution.checkpointing.interval": "1s"}


def job_dir(f, job_id):
    return os.path.join(f.state, "checkpoints", job_id)


def complete_checkpoints(f, job_id):
    """{id: path} of the chk-N with a _metadata of Flink's."""
    out = {}
    for d in glob.glob(os.path.join(job_dir(f, job_id), "chk-*")):
        name = os.path.basename(d)
        if not name[4:].isdigit():
            continue
        try:
            with open(os.path.join(d, "_metadata"), "rb") as fh:
                magic, _, cid = struct.unpack(">IIq", fh.read(16))
        except (OSError, struct.error):
            continue
        if magic == 0x4960672D:
            out[cid] = d
    return out


def named_by(paths):
    blob = b""
    for p in paths:
        with open(os.path.join(p, "_metadata"), "rb") as fh:
            blob += fh.read()
    return blob


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def plant(f, job_id, size):
    """What a savepoint past its budget leaves (a directory without _metadata), and a shared/ file no checkpoint
    names (a dead JVM's upload)."""
    partial = os.path.join(f.state, "savepoints", f"savepoint-{job_id[:6]}-0badc0ffee00")
    os.makedirs(partial, exist_ok=True)
    with open(os.path.join(partial, "op-state"), "wb") as fh:
        fh.write(os.urandom(size))
    orphan = os.path.join(job_dir(f, job_id), "shared", "0badc0ff-ee00-4000-8000-000000000000")
    with open(orphan, "wb") as fh:
        fh.write(os.urandom(size))
    return partial, orphan


def kill_and_wait(f, job_id):
    pid = f.status()["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    st = wait_restarted(f, pid, timeout=180)
    r = restored(f, job_id)
    f.wait_checkpoint(r["id"] + 1, timeout=120)
    return st


def run_kills(flinklets, keys, pad, kills):
    f = flinklets(conf=ROCKS, memory="2g",
                  job={"args": ["--rate", "200", "--keys", str(keys), "--pad-bytes", str(pad), "--output", "OUT"]})
    f.start()
    job_id = f.wait_stable(timeout=180)["jobStatus"]["jobId"]
    f.wait_checkpoint(4, timeout=120)
    for _ in range(kills):
        kill_and_wait(f, job_id)
    return f, job_id


def sweep_after(f, since):
    return wait_for(lambda: [e for e in f.events()[since:] if e["type"] == "LeftoversRemoved"], 120,
                    "the LeftoversRemoved event")


def assert_swept(f, job_id, partial, orphan):
    """Nothing left that no kept point needs, as far as can be told while the JVM writes: the planted leftovers
    gone, at most num-retained (2) checkpoints of earlier JVMs, and every file of shared/ older than this JVM
    named by some kept checkpoint's _metadata."""
    assert not os.path.exists(partial), "the partial savepoint is still there"
    assert not os.path.exists(orphan), "the shared/ file no checkpoint names is still there"
    assert not glob.glob(os.path.join(job_dir(f, job_id), "*.disposing")), "a checkpoint set aside is left"
    assert not glob.glob(os.path.join(f.state, "savepoints", "*.disposing"))


def test_leftovers_of_killed_jvms_go_and_the_job_goes_on_exactly_once(flinklets):
    """Three kill -9s of the JVM (each leaves the dead JVM's older retained checkpoint, maybe one in flight, and the
    shared/ files only those named), a planted partial savepoint and an orphan shared/ file: the next launch removes
    them all (a LeftoversRemoved event), the job restores from the newest checkpoint each time, and the output
    stays exactly-once."""
    f, job_id = run_kills(flinklets, keys=32, pad=64 << 10, kills=2)
    partial, orphan = plant(f, job_id, 1 << 20)
    n = len(f.events())
    kill_and_wait(f, job_id)
    ev = sweep_after(f, n)
    assert "removed" in ev[0]["message"], ev
    assert_swept(f, job_id, partial, orphan)
    # what stays: the kept points' own files; checkpoints of dead JVMs beyond num-retained are gone
    st = f.status()
    rid = st["restoredFrom"]["id"]
    older = [i for i in complete_checkpoints(f, job_id) if i <= rid]
    assert len(older) <= 2, f"checkpoints of dead JVMs kept: {sorted(older)} (restored from {rid})"
    last = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    f.wait_checkpoint(last + 2, timeout=90)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


@pytest.mark.asan_elsewhere  # 256 MiB of Flink's state: the sweep's C paths run under ASan in the test above
def test_with_256_mib_of_state_the_volume_stays_small_and_every_kept_point_restores(flinklets):
    """256 MiB of RocksDB state (256 keys x 1 MiB), four kill -9s of the JVM: after the sweep `checkpoints/` holds at
    most 3x the state, and each complete checkpoint of a dead JVM flinklet kept restores in Flink, where it is (the
    newer points set aside: Flink opens every file the point names)."""
    f, job_id = run_kills(flinklets, keys=256, pad=1 << 20, kills=3)
    partial, orphan = plant(f, job_id, 8 << 20)
    n = len(f.events())
    kill_and_wait(f, job_id)
    sweep_after(f, n)
    assert_swept(f, job_id, partial, orphan)
    rid = f.status()["restoredFrom"]["id"]
    state = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]["state_size"]
    used = du(os.path.join(f.state, "checkpoints"))
    assert state > 200 << 20, f"the job's state is {state} bytes, not the 256 MiB meant"
    assert used <= 3 * state, f"checkpoints/ holds {used} bytes for {state} bytes of state"
    kept = {i: p for i, p in complete_checkpoints(f, job_id).items() if i <= rid}
    assert kept, "no checkpoint of a dead JVM was kept (num-retained is 2)"
    # kill -9 of flinklet and its JVM: Flink discards nothing, so what is on the volume is what the sweep left. A
    # checkpoint names its files by absolute path: each kept point is restored where it is, the newer points set
    # aside as given up (*.unreadable: the sweep keeps what they name), newest first, without new checkpoints (a
    # restored point Flink subsumes would go with the files it shares with the older ones)
    os.killpg(f.proc.pid, signal.SIGKILL)
    f.proc.wait()
    verify = dict(ROCKS, **{"execution.checkpointing.interval": "1 h"})
    for cid in sorted(kept, reverse=True):
        for other, path in complete_checkpoints(f, job_id).items():
            if other > cid:
                os.rename(path, path + ".unreadable")
        g = flinklets(conf=verify, memory="2g", state_dir=f.state,
                      job={"args": ["--rate", "200", "--keys", "256", "--pad-bytes", str(1 << 20),
                                    "--output", "OUT"], "upgradeMode": "last-state"})
        g.start()
        g.wait_stable(timeout=180)
        r = restored(g, job_id)
        assert r["id"] == cid and norm(r["external_path"]).endswith(f"/chk-{cid}"), r
        assert "FileNotFoundException" not in g.logs()
        os.killpg(g.proc.pid, signal.SIGKILL)
        g.proc.wait()

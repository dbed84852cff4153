"""The job's files on the volume with the real MiniCluster (issue 36, items 3 and 6): one supervisor per checkpoint
directory, wherever that directory is, and ForSt state restored from a checkpoint after kill -9.

- A volume copied with its configuration, whose checkpoint directory lies outside the state directory (on another
  disk, execution.checkpointing.dir): the copy's flinklet refuses to start (exit 3, naming the holder), touches
  nothing, and the running job's newest checkpoint still restores, every record exactly once.
- A ForSt job (Flink 2.x's disaggregated state backend, in its local mode) killed with kill -9 resumes from its
  newest complete checkpoint: Flink reports the restore of that checkpoint id, and the output has no loss or
  duplicate across it."""
import os
import signal
import subprocess

import pytest

from conftest import BIN, FLINK_HOME, check_output, restored, wait_restarted


def flink_2():
    return any(n.startswith("flink-core-2.") or n.startswith("flink-dist-2.")
               for n in os.listdir(os.path.join(FLINK_HOME, "lib")))


def test_a_copied_volume_sharing_an_outside_checkpoint_directory_is_refused(flinklets, tmp_path):
    outside = tmp_path / "other-disk" / "checkpoints"
    f = flinklets(conf={"execution.checkpointing.dir": f"file://{outside}"}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    st = f.wait_checkpoint(3)
    copy = tmp_path / "copied-state"
    subprocess.run(["cp", "-a", f.state, str(copy)], check=True)
    before = sorted(os.listdir(outside / job_id))
    r = subprocess.run([BIN, "run", "-c", str(f.config), "--state-dir", str(copy), "--flink-home", FLINK_HOME],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr[-3000:]
    assert "checkpoint directory" in r.stderr and f"state directory {f.state}" in r.stderr, r.stderr[-3000:]
    # the running JVM's checkpoints went on undisturbed: the ones listed before are there or retired by Flink
    assert f.proc.poll() is None and f.status()["jvm"]["pid"] == st["jvm"]["pid"]
    newest = f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2)
    newest_id = newest["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    assert any(n.startswith("chk-") for n in before)
    # a crash of the running job: it restores the newest complete checkpoint, whole
    pid = newest["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_restarted(f, pid)
    back = restored(f, job_id)
    assert back["is_savepoint"] is False and back["id"] >= newest_id, back
    f.wait_checkpoint(back["id"] + 1)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_forst_state_restores_from_a_checkpoint_after_kill_9(flinklets):
    if not flink_2():
        pytest.skip("ForSt is a state backend of Flink 2.x")
    f = flinklets(conf={"state.backend.type": "forst", "flinklet.restart.backoff.initial": "200 ms"},
                  job={"args": ["--rate", "200", "--keys", "64", "--output", "OUT"], "parallelism": 2}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    st = f.wait_checkpoint(3)
    ckpt = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    pid = st["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_restarted(f, pid)
    back = restored(f, job_id)
    assert back["is_savepoint"] is False and back["id"] >= ckpt, back
    f.wait_checkpoint(back["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    rc, summary = check_output(f.output)
    assert rc == 0, summary
    assert summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["records"] > 200, summary

"""The job's files on the volume with the real MiniCluster (issue 36, items 3 and 6): one supervisor per checkpoint
directory, wherever that directory is, and ForSt state restored from a checkpoint after kill -9.

- A volume copied with its configuration, whose checkpoint directory lies outside the state directory (on another
  disk, execution.checkpointing.dir): the copy's flinklet refuses to start (exit 3, naming the holder), touches
  nothing, and the running job's newest checkpoint still restores, every record exactly once.
- A ForSt job (Flink 2.x's disaggregated state backend, in its local mode) killed with kill -9 resumes from its
  newest complete checkpoint: Flink reports the restore of that checkpoint id, and the output has no loss or
  duplicate across it.
- A ForSt job on the asynchronous state API (AsyncStateCounter), whose working files live on the volume under the
  checkpoint directory (shared/op_<operator>_<subtask>__attempt_0/db/, ForSt's primary directory being the
  checkpoint directory), with file merging (shared/job_<jobId>_op_<op>_<subtask>/,
  taskowned/job_<jobId>_tm_<tm>/), killed with kill -9 three times: each restore is of the newest complete
  checkpoint, the output stays exactly once, what the dead JVM left there that no kept checkpoint names is swept
  before the next launch, and every file the kept checkpoints name is there."""
import os
import re
import signal
import subprocess

import pytest

from conftest import BIN, FLINK_HOME, check_output, pid_alive, restored, wait_for, wait_restarted


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


def complete_checkpoints(jobdir):
    """The complete chk-N of jobdir, newest first."""
    ids = [int(n[4:]) for n in os.listdir(jobdir) if re.fullmatch(r"chk-\d+", n)
           and os.path.exists(os.path.join(jobdir, n, "_metadata"))]
    return [os.path.join(jobdir, f"chk-{i}") for i in sorted(ids, reverse=True)]


def named_paths(chk):
    """The local paths a checkpoint's _metadata names (file:<path>, as Flink 2.2 writes them)."""
    with open(os.path.join(chk, "_metadata"), "rb") as f:
        data = f.read()
    return {m.decode() for m in re.findall(rb"file:(/[A-Za-z0-9_./-]+)", data)}


def working_files(jobdir):
    """The files of ForSt's and file merging's directories: below shared/'s subdirectories, and in taskowned/."""
    out = set()
    for top in ("shared", "taskowned"):
        root = os.path.join(jobdir, top)
        for d, _, files in os.walk(root):
            if top == "shared" and d == root:
                continue
            out |= {os.path.join(d, n) for n in files}
    return out


def tree_bytes(path):
    return sum(os.lstat(os.path.join(d, n)).st_size for d, _, files in os.walk(path) for n in files)


# Without file merging ForSt 2.2.0 (in Flink 2.2.1) loses files of its reused working directory by itself after a
# restart (checkpoints fail with FileNotFoundException, with the sweep off as well: docs/operations.md), so the
# case that runs is the one with file merging, which has ForSt's working directories and file merging's both.
@pytest.mark.parametrize("file_merging", [True], ids=["file-merging"])
def test_forst_async_state_working_files_of_dead_jvms_are_swept(flinklets, file_merging):
    if not flink_2():
        pytest.skip("ForSt and the asynchronous state API are Flink 2.x's")
    conf = {"state.backend.type": "forst", "state.backend.forst.primary-dir": "checkpoint-dir",
            # the dead JVM's files are listed in the backoff, before the next launch sweeps them
            "flinklet.restart.backoff.initial": "3 s"}
    if file_merging:
        conf["execution.checkpointing.file-merging.enabled"] = "true"
    f = flinklets(conf=conf, entry_class="dev.flinklet.jobs.AsyncStateCounter",
                  job={"args": ["--rate", "300", "--keys", "512", "--pad-bytes", "1024", "--output", "OUT"],
                       "parallelism": 2}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    jobdir = os.path.join(f.state, "checkpoints", job_id)
    swept_total = 0
    for kill in range(3):
        last = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {"id": 0})["id"]
        st = f.wait_checkpoint(last + 4)
        pid = st["jvm"]["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not pid_alive(pid), 30, "the killed JVM to be gone")
        # the volume as the dead JVM left it: what no kept (newest 2) complete checkpoint names must go
        kept = complete_checkpoints(jobdir)[:2]
        named = set().union(*(named_paths(c) for c in kept))
        names = {os.path.basename(p) for p in named}
        left = {p for p in working_files(jobdir) if os.path.basename(p) not in names}
        assert any(p.startswith(os.path.join(jobdir, "shared") + "/") for p in named), named
        st = wait_restarted(f, pid)
        back = restored(f, job_id)
        assert back["is_savepoint"] is False, back
        assert back["external_path"].rstrip("/").endswith(os.path.basename(kept[0])), (back, kept)
        try:  # the removal runs while the job starts: give it a little time
            wait_for(lambda: not any(os.path.lexists(p) for p in left), 20, "the dead JVM's files to go")
        except AssertionError:
            still = sorted(p for p in left if os.path.lexists(p))
            raise AssertionError(f"{len(still)} of {len(left)} files no kept checkpoint named stay: {still[:5]}")
        swept_total += len(left)
        # what the restored checkpoint names is all there (the new JVM restored from it)
        missing = [p for p in named_paths(kept[0]) if not os.path.lexists(p)]
        assert not missing, missing
    assert swept_total > 0, "the dead JVMs left nothing in ForSt's directories: the test proves nothing"
    st = f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 3)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["records"] > 600, summary
    # bounded: the job directory holds the newest checkpoint's state a small number of times (the retained
    # checkpoints share most of their files; the last JVM's own working files come on top), not one copy per life
    newest = complete_checkpoints(jobdir)[0]
    one = tree_bytes(newest) + sum(os.lstat(p).st_size for p in named_paths(newest)
                                   if os.path.isfile(p) and not p.startswith(newest + "/"))
    total = tree_bytes(jobdir)
    print(f"job directory {total} bytes, newest checkpoint {one} bytes, {swept_total} files swept")
    assert total <= 4 * one, (total, one)

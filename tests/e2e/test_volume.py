"""The state volume fails under the real job (issue 8, item 2): the volume is a small tmpfs that fills up, or
that is remounted read-only, while the real MiniCluster runs the exactly-once job on it. flinklet must keep
running and keep the job where it can, say what is wrong (log, status error, flinklet_volume_writable 0),
never leave a file it cannot read, and once the volume takes writes again carry on: the events it could not
write are appended, checkpoints complete again, a stop takes its savepoint, and the output has no lost and no
duplicated record. (Kills between each write, fsync and rename: tests/faults/test_volume_faults.py.)"""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import check_output, wait_for


def mounted_volume(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    return path


def writers(path):
    """(command, file) of every open file under path that is open for writing (what keeps a remount busy)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # the process is gone
        for fd in fds:
            try:  # one descriptor closed since the listing must not hide the process's others
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(path):
                    flags = int(open(f"/proc/{pid}/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)
                    if flags & 3:
                        found.append((comm, target))
            except OSError:
                continue
    return found


def metric(f, name):
    code, text = f.http("/metrics")
    assert code == 200
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def readable(f):
    """Every file flinklet keeps on the volume parses (the newest copy, or the last good one)."""
    st = f.status()
    assert st and "lifecycleState" in st
    with open(os.path.join(f.state, "events.jsonl"), "rb") as fh:
        lines = fh.read().split(b"\n")
    assert lines[-1] == b"", "events.jsonl ends in a partial line while flinklet runs"
    for line in lines[:-1]:
        json.loads(line)
    return st


def watch_while(f, seconds):
    """flinklet stays up and its files stay readable for `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert f.proc.poll() is None, f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}"
        readable(f)
        time.sleep(0.25)


def recover_and_stop(f, before):
    """The volume takes writes again: VolumeWritable, a newer checkpoint, a savepoint at the stop, exactly-once."""
    # status.json may still be the one written before the fault (nothing replaced it since), whose lastCheckpoint is
    # past `before` when one completed while the volume was being filled: a newer one is past what it says
    frozen = readable(f)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    wait_for(lambda: metric(f, "flinklet_volume_writable") == 1, 120, "flinklet_volume_writable 1 again")
    wait_for(lambda: any(e["type"] == "VolumeWritable" for e in f.events()), 60, "a VolumeWritable event")
    st = f.wait_stable(180)
    f.wait_checkpoint(max(before, frozen["id"] if frozen else 0) + 1, timeout=120)
    # the event goes to events.jsonl just before the status without the error is renamed into place (one flush);
    # the error must then be gone from status.json at once, not with the status's next change
    wait_for(lambda: (readable(f)["error"] is None), 10, "status.json without the volume's error")
    st = readable(f)
    assert st["lifecycleState"] == "STABLE" and st["error"] is None, st["error"]
    f.signal(signal.SIGTERM)
    assert f.wait_exit(90) == 0, f.logs()[-4000:]
    st = readable(f)
    assert st["jobStatus"]["savepointInfo"]["lastSavepoint"], "the stop took no savepoint"
    rc, summary = check_output(f.output)
    assert rc == 0, summary
    assert summary.get("records", 1) > 0, summary
    return st


def test_a_full_volume_is_said_and_survived(flinklets, tmp_path):
    vol = mounted_volume(str(tmp_path / "vol"), "400m")
    filler = os.path.join(vol, "filler")
    try:
        f = flinklets(state_dir=os.path.join(vol, "state"),
                      job={"upgradeMode": "savepoint"}).start()
        f.wait_stable()
        before = f.wait_checkpoint(3)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
        # fill the volume to the last block
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for size in (1 << 20, 65536, 4096, 512, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError:
                    pass
        finally:
            os.close(fd)
        wait_for(lambda: metric(f, "flinklet_volume_writable") == 0, 90, "flinklet_volume_writable 0")
        watch_while(f, 10)
        code, body = f.http("/status")
        err = json.loads(body)["error"] or ""
        assert "No space left on device" in err, err
        assert "No space left on device" in f.logs()
        assert metric(f, "flinklet_volume_write_errors_total") >= 1
        assert f.proc.poll() is None
        os.unlink(filler)
        recover_and_stop(f, before)
    finally:
        if os.path.exists(filler):
            os.unlink(filler)
        subprocess.run(["umount", "-l", vol])


def test_a_read_only_volume_is_said_and_survived(flinklets, tmp_path):
    vol = mounted_volume(str(tmp_path / "vol"), "400m")
    try:
        # the job's output outside: the sink's in-progress files are always open for writing, and Linux
        # refuses to remount a file system read-only while any file on it is (flinklet's files and Flink's
        # checkpoints are open only while written)
        out = str(tmp_path / "output")
        # checkpoints every 3 s: gaps in which no checkpoint file is open
        f = flinklets(state_dir=os.path.join(vol, "state"), conf={"execution.checkpointing.interval": "3s"},
                      job={"upgradeMode": "savepoint", "args": ["--rate", "100", "--keys", "8", "--output", out]})
        f.output = out
        f.start()
        f.wait_stable()
        before = f.wait_checkpoint(3)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]

        def remount_ro():
            r = subprocess.run(["mount", "-o", "remount,ro", vol], capture_output=True, text=True)
            return r.returncode == 0 or None  # busy while a checkpoint is being written: again
        try:
            wait_for(remount_ro, 120, "the volume remounted read-only", interval=0.02)
        except AssertionError:
            raise AssertionError(f"still busy; open for writing: {writers(vol)}")
        wait_for(lambda: metric(f, "flinklet_volume_writable") == 0, 90, "flinklet_volume_writable 0")
        watch_while(f, 10)
        code, body = f.http("/status")
        err = json.loads(body)["error"] or ""
        assert "Read-only file system" in err, err
        subprocess.run(["mount", "-o", "remount,rw", vol], check=True)
        recover_and_stop(f, before)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", vol])
        subprocess.run(["umount", "-l", vol])

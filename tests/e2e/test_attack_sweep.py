"""Attack tests of docs/operations.md with the real MiniCluster JVM and RocksDB's incremental checkpoints, written
from the docs only. "Leftovers of dead JVMs": "stay: ... every point given up (*.unreadable: you may rename one
back)": whatever removes a given-up point's files (flinklet's sweep, or Flink itself once it owns the files of the
point restored instead), a point renamed back must restore. "Slowness is never evidence": a JVM frozen while it
restores is stopped without counting against its point."""
import os
import re
import signal
import time

import pytest

from conftest import pid_alive, wait_for


ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
         "execution.checkpointing.interval": "1s"}


def job_dir(f):
    with open(os.path.join(f.state, "job-id")) as fh:
        jid = fh.read().strip()
    return jid, os.path.join(f.state, "checkpoints", jid)


def complete(d):
    return sorted((int(n[4:]) for n in os.listdir(d) if re.fullmatch(r"chk-\d+", n)
                   and os.path.exists(os.path.join(d, n, "_metadata"))))


def named_files(metadata):
    """The shared/ and chk-N files a _metadata names (file: paths in it; some name state inlined in it)."""
    with open(metadata, "rb") as fh:
        data = fh.read()
    return sorted({m.decode() for m in re.findall(rb"file:(/[^\x00-\x1f]*?/(?:shared|chk-\d+)/[0-9A-Za-z-]{8,})",
                                                    data)})


def kill_all(f):
    """kill -9 of flinklet's process group, and the wait for its JVM too: the JVM, in a group of its own, dies of
    its parent-death signal a moment later, and a checkpoint it completed meanwhile must count as on the volume."""
    st = f.status() or {}
    jvm = (st.get("jvm") or {}).get("pid", 0)
    os.killpg(f.proc.pid, signal.SIGKILL)
    f.proc.wait()
    try:
        with open(f"/proc/{jvm}/cmdline", "rb") as fh:
            java = b"java" in fh.read()
    except OSError:
        java = False
    if jvm > 0 and java:
        try:
            os.kill(jvm, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_for(lambda: not pid_alive(jvm), 30, f"the JVM {jvm} gone")


@pytest.mark.asan_elsewhere
def test_a_point_given_up_by_hand_restores_when_renamed_back_after_the_job_ran_on(flinklets):
    """Attacks "every point given up (*.unreadable: you may rename one back)": the newest checkpoint chk-N of a
    killed job is given up by hand (chk-N.unreadable); flinklet restores chk-N-1 (claim mode) and the job runs on
    for 8 more checkpoints through a crash and a sweep; then the newer points are given up by hand and chk-N renamed
    back. Every file its _metadata names must still be there, and Flink must restore it."""
    f = flinklets(conf=dict(ROCKS), job={"upgradeMode": "last-state", "args": [
        "--rate", "100", "--keys", "8", "--pad-bytes", "65536", "--output", "OUT"]})
    f.start()
    f.wait_stable(timeout=240)
    f.wait_checkpoint(4, timeout=120)
    kill_all(f)
    jid, d = job_dir(f)
    n = complete(d)[-1]
    os.rename(os.path.join(d, f"chk-{n}"), os.path.join(d, f"chk-{n}.unreadable"))
    files = named_files(os.path.join(d, f"chk-{n}.unreadable", "_metadata"))
    # Flink inlines small state in _metadata under the name the file would have had: only the files that exist
    files = [q for q in (p.replace(f"/chk-{n}/", f"/chk-{n}.unreadable/") for p in files) if os.path.exists(q)]
    assert any("/shared/" in p for p in files), files
    prev = complete(d)[-1]
    both = set(files) & set(named_files(os.path.join(d, f"chk-{prev}", "_metadata")))
    print(f"chk-{n} names {len(files)} files; {len(both)} shared with chk-{prev}, which is restored in claim mode")
    gone = {"given up": [p for p in files if not os.path.exists(p)]}
    f.start()
    f.wait_stable(timeout=240)
    gone["restored chk-%d" % (n - 1)] = [p for p in files if not os.path.exists(p)]
    f.wait_checkpoint(n + 4, timeout=120)
    gone["4 checkpoints later"] = [p for p in files if not os.path.exists(p)]
    kill_all(f)  # a crash: the next launch sweeps
    f.start()
    f.wait_stable(timeout=240)
    gone["after the next launch's sweep"] = [p for p in files if not os.path.exists(p)]
    f.wait_checkpoint(n + 20, timeout=180)
    kill_all(f)
    gone["at the end"] = [p for p in files if not os.path.exists(p)]
    removed = [e["message"] for e in f.events() if e["type"] == "LeftoversRemoved"]
    summary = {k: sorted(os.path.basename(os.path.dirname(p)) + "/" + os.path.basename(p)[:8] for p in v)
               for k, v in gone.items()}
    assert not gone["at the end"], f"files chk-{n}.unreadable names went: {summary}\nsweeps: {removed}"
    for m in complete(d):
        os.rename(os.path.join(d, f"chk-{m}"), os.path.join(d, f"chk-{m}.unreadable-by-hand"))
    os.rename(os.path.join(d, f"chk-{n}.unreadable"), os.path.join(d, f"chk-{n}"))
    f.start()
    f.wait_stable(timeout=240)
    # this start's restore (the earlier starts' Restoring events are in the same log)
    restores = [e["message"] for e in f.new_events() if e["type"] == "Restoring"]
    assert restores and f"chk-{n}" in restores[-1], restores
    assert not [e for e in f.events() if e["type"] == "RestoreFailed"]


@pytest.mark.asan_elsewhere
def test_a_real_jvm_frozen_while_restoring_is_stopped_and_its_point_kept(flinklets, tmp_path):
    """Attacks "slowness is never evidence" and the extension's condition ("its REST API answered within the last
    5 s") with the real JVM: the job's tasks stay INITIALIZING (--open-delay-file), the startup timeout (15 s) is
    extended (restore-timeout 10 min), then the JVM is frozen (SIGSTOP): its REST API goes silent with it. flinklet
    must stop it well before the restore-timeout, count nothing against the point (max-failures 1), and the next
    launch restore the same checkpoint and run."""
    delay = str(tmp_path / "open-delay")
    f = flinklets(conf=dict(ROCKS, **{"flinklet.startup.timeout": "15 s",
                                      "flinklet.startup.restore-timeout": "10 min",
                                      "flinklet.restore.max-failures": "1"}),
                  job={"upgradeMode": "last-state", "args": [
                      "--rate", "100", "--keys", "8", "--output", "OUT", "--open-delay-file", delay]})
    f.start()
    f.wait_stable(timeout=240)
    f.wait_checkpoint(3, timeout=120)
    kill_all(f)
    with open(delay, "w") as fh:
        fh.write("600000")
    f.start()

    def extended():
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-3000:]}")
        return [e for e in f.new_events() if e["type"] == "StartupExtended"]
    wait_for(extended, 240, "StartupExtended")
    pid = f.own_status()["jvm"]["pid"]
    os.kill(pid, signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        wait_for(lambda: [e for e in f.new_events() if e["type"] == "RestoreRetry"], 120, "the frozen JVM stopped")
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    took = time.monotonic() - frozen
    os.unlink(delay)
    f.wait_stable(timeout=240)
    restores = [e["message"] for e in f.new_events() if e["type"] == "Restoring"]
    assert len(restores) >= 2 and len({r.split(" from ")[-1] for r in restores[-2:]}) == 1, restores
    _, d = job_dir(f)
    assert not [n for n in os.listdir(d) if n.endswith(".unreadable")]
    assert not [e for e in f.events() if e["type"] in ("RestoreFailed", "RestorePointDemoted")]
    assert took < 90, f"the frozen JVM was waited for {took:.0f} s"

"""flinklet as a real PID 1 (unshare --pid --fork --mount-proc) and as a subreaper: orphans are reaped,
TERM leads to the shutdown path, QUIT reaches the JVM. The JVM is started through a wrapper that leaves
an orphaned grandchild behind, a uniquely named copy of sleep, before it becomes the real java."""
import os
import shutil
import signal
import subprocess

import pytest

from conftest import wait_for

ORPHAN_NAME = "flinklet-orphan"


def procs():
    """(pid, ppid, state, comm) of every process on the host."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                fields = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
            out.append((int(d), int(fields["PPid"]), fields["State"].split()[0], fields["Name"]))
        except (FileNotFoundError, ProcessLookupError, KeyError, ValueError):
            pass
    return out


def orphan_wrapper(tmp_path):
    orphan = tmp_path / ORPHAN_NAME
    shutil.copy("/bin/sleep", orphan)
    wrapper = tmp_path / "java-with-orphan"
    java = shutil.which("java")
    wrapper.write_text(f"""#!/bin/sh
# leave an orphan behind: the subshell exits at once, its child is reparented to PID 1 / the subreaper
( "{orphan}" 6 & )
exec "{java}" "$@"
""")
    wrapper.chmod(0o755)
    return str(wrapper)


def child_of(pid):
    return wait_for(lambda: next((p for p, pp, _, _ in procs() if pp == pid), None), 10, f"a child of {pid}")


def check_orphan_reaped_by(supervisor_pid):
    seen = wait_for(lambda: [p for p in procs() if p[3] == ORPHAN_NAME], 60, "the orphan to appear")
    assert seen[0][1] == supervisor_pid, f"the orphan's parent is {seen[0][1]}, not the supervisor {supervisor_pid}"
    # it exits after 6 s; then it must not stay a zombie
    wait_for(lambda: not [p for p in procs() if p[3] == ORPHAN_NAME], 30, "the orphan to be reaped", interval=1)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux unshare is required")
def test_pid1_reaps_orphans_forwards_quit_and_stops_on_term(tmp_path, flinklets):
    f = flinklets(conf={"flinklet.java.bin": orphan_wrapper(tmp_path)})
    f.start(wrapper=["unshare", "--pid", "--fork", "--mount-proc"])
    supervisor = child_of(f.proc.pid)
    wait_for(lambda: "PID 1" in f.logs(), 20, "flinklet to say it is PID 1")
    check_orphan_reaped_by(supervisor)
    f.wait_stable()
    f.wait_checkpoint(1)

    os.kill(supervisor, signal.SIGQUIT)
    wait_for(lambda: "Full thread dump" in f.logs(), 20, "the JVM's thread dump")
    assert f.status()["lifecycleState"] == "STABLE", "QUIT must not stop anything"

    os.kill(supervisor, signal.SIGTERM)
    assert f.wait_exit(40) == 0
    st = f.status()
    assert st["lifecycleState"] == "SUSPENDED"
    assert st["jobStatus"]["savepointInfo"]["lastSavepoint"]["triggerType"] == "UPGRADE"
    assert not [p for p in procs() if p[3] in ("java", ORPHAN_NAME) and p[1] == supervisor]


def test_subreaper_reaps_orphans(tmp_path, flinklets):
    f = flinklets(conf={"flinklet.java.bin": orphan_wrapper(tmp_path)}, job={"upgradeMode": "last-state"}).start()
    wait_for(lambda: "subreaper" in f.logs(), 20, "flinklet to say it is a subreaper")
    check_orphan_reaped_by(f.proc.pid)
    f.wait_stable()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0


def test_second_term_during_savepoint_stops_at_once(flinklets, tmp_path):
    # a slow job makes the savepoint slow enough to interrupt: each record costs CPU time. Should the savepoint
    # still complete before the second TERM arrives (a fast machine), the attempt proves nothing: again.
    for attempt in range(3):
        f = flinklets(state_dir=str(tmp_path / f"state-{attempt}"),
                      job={"args": ["--rate", "5000", "--work", "200000", "--keys", "8", "--output", "OUT"]}).start()
        f.wait_stable()
        f.wait_checkpoint(1)
        f.signal(signal.SIGTERM)
        wait_for(lambda: "SavepointTriggered" in [e["type"] for e in f.events()], 10, "the savepoint to start",
                 interval=0.01)
        f.signal(signal.SIGTERM)
        code = f.wait_exit(15)
        if "SavepointCompleted" in [e["type"] for e in f.events()]:
            assert code == 0  # the savepoint beat the second TERM: a clean stop
            continue
        # a stop that took no savepoint says so in its exit code (docs/operations.md, "Exit codes")
        assert code == 4
        break
    st = f.status()
    assert st["jvm"]["pid"] == 0
    # the second TERM did not wait for the savepoint: the JVM was killed at once
    assert st["jvm"]["lastExitSignal"] == 9
    types = [e["type"] for e in f.events()]
    assert types.count("StopRequested") == 2 and "SavepointCompleted" not in types

"""The JVM's scratch space (flinklet.scratch.dir, issue 15 item 5): Flink's io.tmp.dirs and java.io.tmpdir are on
local scratch, not on the state volume; each launch gets an empty directory (what the JVM before it left is put
aside at once and removed by a child process, off the event loop), and a clean exit removes it."""
import os
import signal
import subprocess

import pytest

from conftest import pid_alive, wait_for, wait_restarted


def test_the_jvm_works_in_local_scratch_emptied_per_launch_and_removed_at_exit(flinklets, tmp_path):
    scratch = str(tmp_path / "local-scratch")
    f = flinklets(conf={"flinklet.scratch.dir": scratch}, job={"upgradeMode": "last-state"}).start()
    st = f.wait_stable()
    jvm = st["jvm"]["pid"]
    work = os.path.join(scratch, "jvm")
    # what the JVM was told, and what it did with it
    with open(f"/proc/{jvm}/cmdline", "rb") as fh:
        argv = fh.read().split(b"\0")
    assert f"-Djava.io.tmpdir={work}".encode() in argv, argv
    with open(os.path.join(f.state, "conf", "config.yaml")) as fh:
        assert f"io.tmp.dirs: {work}" in fh.read().replace('"', "")
    assert os.listdir(work), "Flink wrote nothing into its io.tmp.dirs"
    assert not os.path.exists(os.path.join(f.state, "tmp")), "the JVM's temporary files are on the state volume"

    # a file the first JVM left is not there for the next one, and its directory is removed
    with open(os.path.join(work, "left-by-the-first-jvm"), "w") as fh:
        fh.write("x")
    os.kill(jvm, signal.SIGKILL)

    def restarted():
        s = f.status()
        return s and s["lifecycleState"] == "STABLE" and s["jvm"]["pid"] not in (0, jvm) and pid_alive(
            s["jvm"]["pid"]) and s
    wait_for(restarted, 120, "the job RUNNING again in a new JVM")
    assert not os.path.exists(os.path.join(work, "left-by-the-first-jvm"))
    assert os.listdir(work), "the second JVM has no scratch directory"
    wait_for(lambda: not [n for n in os.listdir(scratch) if n.startswith(".old-")], 60,
             "the first JVM's scratch directory removed")

    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    assert not os.path.exists(work), "the JVM's scratch directory outlived a clean exit"


def test_the_default_scratch_directory_is_flinklets_own_and_used_under_the_group_shared_umask(flinklets):
    """The default ($TMPDIR/flinklet-<name>-<hash>) must pass flinklet's own strict check (its uid, writable by no
    one else) although `flinklet run` creates the state volume's entries group-writable (umask 0007): else the JVM's
    temporary files would go back onto the state volume."""
    f = flinklets().start()
    st = f.wait_stable()
    tmpdir = os.path.join(os.path.dirname(f.state), "scratch")  # the TMPDIR the fixture gives flinklet
    mine = [n for n in os.listdir(tmpdir) if n.startswith("flinklet-")]
    assert len(mine) == 1, os.listdir(tmpdir)
    scratch = os.path.join(tmpdir, mine[0])
    assert os.stat(scratch).st_mode & 0o777 == 0o700, oct(os.stat(scratch).st_mode)
    with open(f"/proc/{st['jvm']['pid']}/cmdline", "rb") as fh:
        argv = fh.read().split(b"\0")
    assert f"-Djava.io.tmpdir={scratch}/jvm".encode() in argv, argv
    assert not os.path.exists(os.path.join(f.state, "tmp")), "the JVM's temporary files are on the state volume"
    assert b"not flinklet's own" not in open(f.log_path, "rb").read()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_relaunch_after_a_crash_does_not_hold_the_old_scratch_against_the_new_jvm(flinklets, tmp_path):
    """Issue 35, item 3, with the real JVM: its scratch on a 300 MiB tmpfs holds 200 MiB (RocksDB's working files,
    say) when it is killed. The relaunch sets that aside and a child removes it: the new JVM has the room the 128 MiB
    a small state wants, so no ScratchSpaceLow, and the status holds no warning."""
    scratch = str(tmp_path / "tmpfs-scratch")
    os.mkdir(scratch)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m,mode=0700", "tmpfs", scratch], check=True)
    try:
        f = flinklets(conf={"flinklet.scratch.dir": scratch}, job={"upgradeMode": "last-state"}).start()
        jvm = f.wait_stable()["jvm"]["pid"]
        f.wait_checkpoint(1)
        with open(os.path.join(scratch, "jvm", "rocksdb-working-files"), "wb") as fh:
            for _ in range(200):
                fh.write(b"\1" * (1 << 20))
        os.kill(jvm, signal.SIGKILL)
        st = wait_restarted(f, jvm)
        types = [e["type"] for e in f.new_events()]
        assert types.count("JvmStarted") == 2 and "ScratchSpaceLow" not in types, types
        assert st["warnings"] == [], st["warnings"]
        f.signal(signal.SIGTERM)
        assert f.wait_exit(30) == 0
    finally:
        subprocess.run(["umount", "-l", scratch], check=False)

"""Attack tests (from docs/operations.md "Class-data sharing" and the flinklet.jvm.class-data-sharing rows of
docs/configuration.md only): a stale, truncated, corrupted or hostile archive (garbage bytes, a damaged body behind
a good header, an archive of another jar set, a directory in its place, an archive directory that is a file) never
stops a launch nor loses state, and flinklet says so once. Real flinklet, real MiniCluster JVM; each test plants
its archive in a directory of its own, seeded from the session's archive (conftest.CDS_DIR)."""
import glob
import os
import random
import shutil
import signal

import pytest

from conftest import CDS_DIR, Flinklet, wait_for

UNUSABLE = "ClassDataSharingArchiveUnusable"


@pytest.fixture(scope="module")
def good_archive(cds_archive):
    found = sorted(glob.glob(os.path.join(CDS_DIR, "*.jsa")))
    if not found:
        pytest.skip("no class-data sharing archive was made for this session (JDK without CDS?)")
    return found[0]


@pytest.fixture(scope="module")
def volume(tmp_path_factory, good_archive):
    """A state volume whose job ran and was stopped with a savepoint: (directory, the savepoint's checkpoint id)."""
    tmp = tmp_path_factory.mktemp("cds-volume")
    # the exactly-once sink's state names its files by absolute path: a copy restored under another uid (the
    # uid_volume tests) commits them where this run wrote them, so that place is one every uid of group 0 can
    # write (under pytest's own 0700 directory it is root's alone, and the restored job failed in a loop)
    import tempfile
    out = tempfile.mkdtemp(prefix="attack2-cds-out-", dir="/tmp")
    os.chmod(out, 0o777)
    f = Flinklet(tmp, name="cds-attack", job={"args": ["--rate", "100", "--keys", "8", "--output", out]})
    f.start()
    try:
        f.wait_stable(180)
        f.wait_checkpoint(2)
    finally:
        f.stop()
    assert f.proc.returncode == 0, f.logs()[-3000:]
    sp = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp, "no savepoint at the stop"
    yield f.state, sp
    shutil.rmtree(out, ignore_errors=True)


def run_on_copy(tmp_path, volume, archive_dir, flinklets):
    state = str(tmp_path / "state")
    shutil.copytree(volume[0], state, symlinks=True)
    f = flinklets(name="cds-attack", state_dir=state,
                  conf={"flinklet.jvm.class-data-sharing.archive-dir": str(archive_dir)})
    f.start()
    return f


def unusable(f):
    return [e for e in f.events() if e["type"] == UNUSABLE and e["timeMs"] >= started_ms(f)]


def started_ms(f):
    starts = [e["timeMs"] for e in f.events() if e["type"] == "SupervisorStarted"]
    return starts[-1] if starts else 0


def assert_state_kept(f, volume):
    """contract §6: never from empty state, never older than the savepoint the stop took."""
    st = f.wait_stable(240)
    rf = st["restoredFrom"]
    assert rf["kind"] in ("savepoint", "checkpoint") and rf["id"] is not None, rf
    sp = volume[1]
    # the savepoint's id is not in lastSavepoint's fields the contract fixes: compare by location when it is the one
    assert rf["kind"] == "checkpoint" or os.path.basename(rf["location"].rstrip("/")) == \
        os.path.basename(sp["location"].rstrip("/")), (rf, sp)
    return st


def plant(tmp_path, good_archive, how):
    d = tmp_path / "cds"
    d.mkdir()
    name = os.path.basename(good_archive)
    dst = d / name
    if how == "directory":
        dst.mkdir()
        (dst / "inside").write_text("x")
        return d, dst
    data = bytearray(open(good_archive, "rb").read())
    rnd = random.Random(20261202)
    if how == "garbage":
        data = bytearray(rnd.randbytes(len(data)))
    elif how == "truncated":
        data = data[: len(data) // 2]
    elif how == "body-corrupted":
        # the header (first 64 KiB) intact, the classes behind it overwritten: passes a size and header check
        for off in range(1 << 16, len(data), 4096):
            data[off:off + 64] = rnd.randbytes(64)
    elif how == "zero-filled-tail":
        data[len(data) // 4:] = bytes(len(data) - len(data) // 4)
    dst.write_bytes(bytes(data))
    return d, dst


# operations.md: "Never a condition of a launch. ... Each time: one `ClassDataSharingArchiveUnusable` warning event
# naming the archive and why, the archive is removed, the next launches start without it"; configuration.md: "An
# archive is a cache: a missing, stale or damaged one never stops a launch". The job restores the savepoint of
# its last stop (contract §6), and after a kill -9 of the JVM the restart says nothing more about the archive.
# asan_elsewhere: garbage, a corrupted body and a zeroed tail are told apart by the JVM only; flinklet takes the
# same path as for the truncated archive, which runs under ASan
@pytest.mark.parametrize("how", [pytest.param("garbage", marks=pytest.mark.asan_elsewhere), "truncated",
                                 pytest.param("body-corrupted", marks=pytest.mark.asan_elsewhere),
                                 pytest.param("zero-filled-tail", marks=pytest.mark.asan_elsewhere), "directory"])
def test_a_damaged_archive_never_stops_a_launch_and_is_reported_once(tmp_path, flinklets, good_archive, volume,
                                                                     how):
    d, planted = plant(tmp_path, good_archive, how)
    f = run_on_copy(tmp_path, volume, d, flinklets)
    st = assert_state_kept(f, volume)
    ev = unusable(f)
    assert len(ev) == 1, f"{len(ev)} {UNUSABLE} events: {[e['message'] for e in ev]}\n{f.logs()[-3000:]}"
    assert os.path.basename(str(planted)) in ev[0]["message"], ev[0]["message"]
    assert not os.path.exists(planted) or how == "directory", "the damaged archive is still there to be used"
    # a restart: the archive is not blamed again
    pid = st["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    f.wait_stable(240)
    wait_for(lambda: f.status()["jvm"]["pid"] not in (0, pid) and f.status()["lifecycleState"] == "STABLE", 240,
             "the restart STABLE")
    assert len(unusable(f)) == 1, [e["message"] for e in unusable(f)]
    assert f.status()["jvm"]["restarts"] >= 1


# operations.md: "(The JVM checks the classpath jars too.)" and "After the launch, the JVM's output is read for its
# CDS warnings (`Unable to use shared archive...`, printed when it falls back, e.g. on a changed jar)". A good
# archive of the same JDK and jars under another Flink home path (another worktree's archive, a volume moved to an
# image with /opt/flink elsewhere) has flinklet's key but not the JVM's class path.
def test_an_archive_of_another_class_path_is_set_aside_once(tmp_path, flinklets, good_archive, volume):
    other = tmp_path / "otherhome"
    (other / "lib").mkdir(parents=True)
    lib = os.path.join(os.environ.get("FLINK_HOME", ""), "lib")
    for j in os.listdir(lib):
        os.symlink(os.path.join(lib, j), other / "lib" / j)
    d = tmp_path / "cds"
    d.mkdir()
    shutil.copy(good_archive, d)
    state = str(tmp_path / "state")
    shutil.copytree(volume[0], state, symlinks=True)
    f = flinklets(name="cds-attack", state_dir=state, conf={"flinklet.jvm.class-data-sharing.archive-dir": str(d)})
    argv = f.argv
    f.argv = lambda: [x if x != os.environ.get("FLINK_HOME") else str(other) for x in argv()]
    f.start()
    assert_state_kept(f, volume)
    names = os.listdir(d)
    ev = unusable(f)
    used = [line for line in open(f"/proc/{f.status()['jvm']['pid']}/maps") if ".jsa" in line and str(d) in line]
    # the JVM maps the archive (it accepted the class path), or it is not used: another key for flinklet (nothing
    # to say), or set aside with one event
    assert len(ev) <= 1, [e["message"] for e in ev]
    assert used or not ev or not [n for n in names if n == os.path.basename(good_archive)], (names, ev)


# configuration.md: flinklet.jvm.class-data-sharing.archive-dir "It is a cache: deleting it at any time is safe";
# "a missing, stale or damaged one never stops a launch". An archive directory that is a regular file (a bad mount)
# must not stop the job either.
def test_an_archive_dir_that_is_a_file_never_stops_a_launch(tmp_path, flinklets, volume):
    d = tmp_path / "cds-is-a-file"
    d.write_text("not a directory")
    f = run_on_copy(tmp_path, volume, d, flinklets)
    assert_state_kept(f, volume)
    assert d.read_text() == "not a directory"


# configuration.md: "An archive is a cache: a missing, stale or damaged one never stops a launch"; the brief's
# "unreadable" case: an archive flinklet's uid cannot read (root made it 0000). flinklet runs as uid 1001 in group
# 0 (root reads everything, so this needs another uid).
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_an_unreadable_archive_never_stops_a_launch(good_archive, volume):
    base, state = uid_volume(volume)
    f = None
    try:
        d = base / "cds"
        d.mkdir()
        os.chmod(d, 0o777)
        shutil.copy(good_archive, d)
        planted = d / os.path.basename(good_archive)
        os.chmod(planted, 0)
        f = Flinklet(base, name="cds-attack", state_dir=str(state),
                     conf={"flinklet.jvm.class-data-sharing.archive-dir": str(d)})
        os.chmod(f.config, 0o644)
        f.start(wrapper=["setpriv", "--reuid=1001", "--regid=0", "--groups=0", "--"])
        assert_state_kept(f, volume)
        assert len(unusable(f)) <= 1, [e["message"] for e in unusable(f)]
    finally:
        if f:
            f.stop()
        shutil.rmtree(base, ignore_errors=True)


# The hostile cases of a shared archive directory: a FIFO with the archive's name (a reader that opens it blocks until
# a writer comes), and a symlink to someone else's file of exactly the archive's size. operations.md: "Never a
# condition of a launch"; "the archive is removed" (the link, never what it points to).
@pytest.mark.parametrize("how", ["fifo", "symlink"])
def test_a_hostile_entry_in_place_of_the_archive(tmp_path, flinklets, good_archive, volume, how):
    d = tmp_path / "cds"
    d.mkdir()
    planted = d / os.path.basename(good_archive)
    victim = tmp_path / "victim.bin"
    if how == "fifo":
        os.mkfifo(planted)
    else:
        victim.write_bytes(b"\x5a" * os.path.getsize(good_archive))
        os.symlink(victim, planted)
    f = run_on_copy(tmp_path, volume, d, flinklets)
    assert_state_kept(f, volume)
    assert len(unusable(f)) <= 1, [e["message"] for e in unusable(f)]
    assert f.http("/healthz")[0] == 200
    if how == "symlink":
        assert victim.exists() and victim.read_bytes()[:4] == b"\x5a" * 4, "the symlink's target was changed"


# operations.md: "an archive whose size is not the one in its name (truncated, overwritten; a JVM would die of SIGBUS
# mapping it) ... is not used"; "A JVM that started from an archive and crashed by itself (SIGSEGV, SIGBUS, SIGABRT)
# ... sets the archive aside too". The archive is truncated under a JVM that maps it (another writer on a shared
# archive directory): whatever the JVM does, the job comes back with its state, the restart does not use the
# truncated archive, and flinklet says so at most once.
def test_an_archive_truncated_under_a_running_jvm(tmp_path, flinklets, good_archive, volume):
    d = tmp_path / "cds"
    d.mkdir()
    shutil.copy(good_archive, d)
    planted = d / os.path.basename(good_archive)
    f = run_on_copy(tmp_path, volume, d, flinklets)
    st = assert_state_kept(f, volume)
    pid = st["jvm"]["pid"]
    maps = open(f"/proc/{pid}/maps").read()
    if str(planted) not in maps:
        pytest.skip("the JVM did not map the archive (nothing to truncate under it)")
    os.truncate(planted, os.path.getsize(planted) // 2)
    # make the JVM touch its classes: a kill -9 would hide a crash; a checkpoint and a REST call do
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2, timeout=120)
    os.kill(pid, signal.SIGKILL) if f.status()["jvm"]["pid"] == pid else None
    st2 = wait_for(lambda: f.status()["jvm"]["pid"] not in (0, pid) and f.status()["lifecycleState"] == "STABLE"
                   and f.status(), 240, "a new JVM STABLE")
    assert str(planted) not in open(f"/proc/{st2['jvm']['pid']}/maps").read(), "the truncated archive was mapped"
    assert len(unusable(f)) <= 1, [e["message"] for e in unusable(f)]
    rf = st2["restoredFrom"]
    assert rf["kind"] in ("checkpoint", "savepoint") and rf["id"] >= st["restoredFrom"]["id"], rf


def uid_volume(volume):
    """A copy of the volume owned by uid 1001 (group 0) under a directory every uid can traverse."""
    import pathlib
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(prefix="attack2-cds-", dir="/tmp"))
    os.chmod(base, 0o755)
    (base / "scratch").mkdir()
    os.chmod(base / "scratch", 0o1777)
    state = base / "state"
    shutil.copytree(volume[0], state, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(state):
        for n in [dirpath] + [os.path.join(dirpath, x) for x in filenames]:
            os.lchown(n, 1001, 0)
    return base, state


# operations.md: "Each time: one `ClassDataSharingArchiveUnusable` warning event naming the archive and why, the
# archive is removed, the next launches start without it"; the brief: "flinklet says so once". A damaged archive
# flinklet cannot remove (a read-only archive directory: a cache another uid made) must not be blamed again at every
# launch: a kill -9 of the JVM and the restart add no second event.
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_a_damaged_archive_it_cannot_remove_is_reported_once(good_archive, volume):
    base, state = uid_volume(volume)
    f = None
    try:
        d = base / "cds"
        d.mkdir()
        planted = d / os.path.basename(good_archive)
        planted.write_bytes(random.Random(7).randbytes(os.path.getsize(good_archive)))
        os.chmod(planted, 0o644)
        os.chmod(d, 0o755)  # root's: uid 1001 reads, cannot remove
        f = Flinklet(base, name="cds-attack", state_dir=str(state),
                     conf={"flinklet.jvm.class-data-sharing.archive-dir": str(d)})
        os.chmod(f.config, 0o644)
        f.start(wrapper=["setpriv", "--reuid=1001", "--regid=0", "--groups=0", "--"])
        st = assert_state_kept(f, volume)
        pid = st["jvm"]["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: f.status()["jvm"]["pid"] not in (0, pid) and f.status()["lifecycleState"] == "STABLE", 240,
                 "the restart STABLE")
        ev = unusable(f)
        assert len(ev) <= 1, f"said {len(ev)} times: {[e['message'] for e in ev]}"
    finally:
        if f:
            f.stop()
        shutil.rmtree(base, ignore_errors=True)

"""Class-data sharing against the real MiniCluster (docs/operations.md, "Class-data sharing"): the first JVM records
and flinklet makes the archive from it; a kill -9 restart starts from it (its /proc/<pid>/cmdline and memory map)
and restores the checkpoint; a truncated archive or one the JVM refuses never stops a launch and is said once; a
changed jar set means another archive.

Each test runs on its own copy of the Flink installation (lib/ of symbolic links to the real jars), so that changing
a jar touches nothing else, and on its own archive directory."""
import glob
import os
import re
import shutil
import signal

import pytest

from conftest import FLINK_HOME, Flinklet, wait_for

ARCHIVE = re.compile(r"^flink-[0-9.]+-([0-9a-f]{16})-([0-9]+)\.jsa$")


def flink_home_copy(root, changed_jar=None):
    """A Flink home whose lib/ links to the real jars; changed_jar is copied instead (a new modification time)."""
    home = os.path.join(root, "flink")
    os.makedirs(os.path.join(home, "lib"))
    for jar in sorted(glob.glob(os.path.join(FLINK_HOME, "lib", "*.jar"))):
        dest = os.path.join(home, "lib", os.path.basename(jar))
        if os.path.basename(jar) == changed_jar:
            shutil.copyfile(jar, dest)
        else:
            os.symlink(jar, dest)
    return home


class CdsFlinklet(Flinklet):
    def __init__(self, tmp_path, home, archive_dir, conf=None, **kw):
        self.home = home
        super().__init__(tmp_path, conf={"flinklet.jvm.class-data-sharing.archive-dir": archive_dir,
                                         "flinklet.jvm.class-data-sharing.dump-delay": "1 s",
                                         "flinklet.restart.backoff.initial": "5 s", **(conf or {})}, **kw)

    def argv(self):
        return [a if a != FLINK_HOME else self.home for a in super().argv()]

    def events_of(self, *types):
        return [e for e in self.events() if e["type"] in types]

    def jvm_args(self, pid):
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]


def archives(d):
    return sorted(n for n in os.listdir(d) if ARCHIVE.match(n)) if os.path.isdir(d) else []


def mapped(pid, path):
    with open(f"/proc/{pid}/maps") as f:
        return os.path.realpath(path) in f.read()


def wait_archived(f, after=0):
    ev = wait_for(lambda: f.events_of("ClassDataSharingArchived", "ClassDataSharingDumpFailed")[after:], 240,
                  "flinklet's class-data-sharing dump", interval=0.5)
    assert ev[0]["type"] == "ClassDataSharingArchived", ev[0]["message"]
    return ev[0]


def wait_restarted(f, old_pid, timeout=180):
    def again():
        st = f.status()
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}")
        return st if (st and st["jvm"]["pid"] not in (0, old_pid) and st["lifecycleState"] == "STABLE"
                      and st["jobStatus"]["state"] == "RUNNING") else None
    return wait_for(again, timeout, "the job RUNNING again in a new JVM")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One run that makes an archive on a copy of the Flink home: (home, archive path, the first JVM's argv, the
    run's events)."""
    root = tmp_path_factory.mktemp("cds-made")
    home = flink_home_copy(str(root))
    adir = os.path.join(str(root), "cds")
    f = CdsFlinklet(root, home, adir).start()
    try:
        st = f.wait_stable(180)
        argv = f.jvm_args(st["jvm"]["pid"])
        wait_archived(f)
        events = f.events()
    finally:
        f.stop()
    names = archives(adir)
    assert len(names) == 1, os.listdir(adir)
    return home, os.path.join(adir, names[0]), argv, events, adir


def test_first_run_records_and_flinklet_makes_the_archive(made):
    home, archive, argv, events, adir = made
    # no archive yet: the JVM records what a dump needs, and starts from none
    assert "-XX:+RecordDynamicDumpInfo" in argv
    assert not [a for a in argv if a.startswith("-XX:SharedArchiveFile")]
    assert argv.index("-XX:+RecordDynamicDumpInfo") < argv.index("-cp")
    types = [e["type"] for e in events]
    assert types.index("JobRunning") < types.index("ClassDataSharingDump") < types.index("ClassDataSharingArchived")
    done = [e for e in events if e["type"] == "ClassDataSharingArchived"][0]
    assert archive in done["message"]
    # whole, renamed into place: its size is the one in its name, the dynamic archive's magic first, no temp left
    size = int(ARCHIVE.match(os.path.basename(archive)).group(2))
    assert os.path.getsize(archive) == size > 10 << 20
    with open(archive, "rb") as fh:
        assert fh.read(4) == b"\xa8\xab\x0b\xf0"
    assert sorted(os.listdir(adir)) == [os.path.basename(archive)]


def test_kill9_restart_starts_from_the_archive_and_restores_the_checkpoint(made, tmp_path):
    home, archive, _, _, _ = made
    adir = str(tmp_path / "cds")
    os.makedirs(adir)
    mine = os.path.join(adir, os.path.basename(archive))
    shutil.copy2(archive, mine)
    f = CdsFlinklet(tmp_path, home, adir).start()
    try:
        st = f.wait_stable(180)
        pid, job_id = st["jvm"]["pid"], st["jobStatus"]["jobId"]
        assert f"-XX:SharedArchiveFile={mine}" in f.jvm_args(pid)
        assert "-XX:+RecordDynamicDumpInfo" not in f.jvm_args(pid)
        assert mapped(pid, mine)
        st = f.wait_checkpoint(3)
        before = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
        os.kill(pid, signal.SIGKILL)
        st = wait_restarted(f, pid)
        new = st["jvm"]["pid"]
        args = f.jvm_args(new)
        assert f"-XX:SharedArchiveFile={mine}" in args and mapped(new, mine)
        assert f"started from the class-data-sharing archive {mine}" in f.logs()
        # the first crash of a running job: restarted at once, although the backoff is 5 s
        sched = [e for e in f.events() if e["type"] == "RestartScheduled"]
        assert len(sched) == 1 and "now" in sched[0]["message"]
        # and from the checkpoint, as Flink says
        restored = wait_for(lambda: f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["restored"], 60,
                            "Flink to report the restore")
        assert restored["id"] >= before and not restored["is_savepoint"]
        assert st["restoredFrom"]["kind"] == "checkpoint"
        # nothing to dump, nothing wrong
        assert not f.events_of("ClassDataSharingDump", "ClassDataSharingArchiveUnusable", "ClassDataSharingOff")
        assert os.listdir(adir) == [os.path.basename(mine)]
    finally:
        f.stop()


def test_truncated_archive_never_stops_a_launch_is_said_once_and_made_again(made, tmp_path):
    home, archive, _, _, _ = made
    adir = str(tmp_path / "cds")
    os.makedirs(adir)
    broken = os.path.join(adir, os.path.basename(archive))
    shutil.copy2(archive, broken)
    os.truncate(broken, 1 << 20)  # a JVM that maps this dies of SIGBUS
    f = CdsFlinklet(tmp_path, home, adir).start()
    try:
        st = f.wait_stable(180)
        pid = st["jvm"]["pid"]
        args = f.jvm_args(pid)
        assert not [a for a in args if a.startswith("-XX:SharedArchiveFile")] and "-XX:+RecordDynamicDumpInfo" in args
        said = f.events_of("ClassDataSharingArchiveUnusable")
        assert len(said) == 1 and broken in said[0]["message"] and "size" in said[0]["message"]
        assert said[0]["level"] == "Warning"
        assert st["jvm"]["restarts"] == 0  # the launch was not held back nor retried
        # made again by this JVM, for the same key, and whole
        wait_archived(f)
        names = archives(adir)
        assert len(names) == 1 and ARCHIVE.match(names[0]).group(1) == ARCHIVE.match(os.path.basename(broken)).group(1)
        again = os.path.join(adir, names[0])
        assert os.path.getsize(again) == int(ARCHIVE.match(names[0]).group(2))
        os.kill(pid, signal.SIGKILL)
        st = wait_restarted(f, pid)
        assert f"-XX:SharedArchiveFile={again}" in f.jvm_args(st["jvm"]["pid"])
        assert mapped(st["jvm"]["pid"], again)
        assert len(f.events_of("ClassDataSharingArchiveUnusable")) == 1
    finally:
        f.stop()


def test_changed_jar_set_means_another_archive_and_one_the_jvm_refuses_is_said_once(made, tmp_path):
    home, archive, _, _, _ = made
    # a small jar both runtimes have (the distribution's lib/ and the module jars')
    small = os.path.basename(sorted(glob.glob(os.path.join(FLINK_HOME, "lib", "log4j-api-*.jar")))[0])
    changed = flink_home_copy(str(tmp_path), changed_jar=small)
    adir = str(tmp_path / "cds")
    os.makedirs(adir)
    old = os.path.join(adir, os.path.basename(archive))
    shutil.copy2(archive, old)
    f = CdsFlinklet(tmp_path, changed, adir).start()
    try:
        st = f.wait_stable(180)
        args = f.jvm_args(st["jvm"]["pid"])
        # another key: the old archive is not this jar set's, so no archive, and a new one is made
        assert not [a for a in args if a.startswith("-XX:SharedArchiveFile")] and "-XX:+RecordDynamicDumpInfo" in args
        wait_archived(f)
        names = archives(adir)
        assert len(names) == 1 and names[0] != os.path.basename(archive)  # the old key's archive was removed
        assert ARCHIVE.match(names[0]).group(1) != ARCHIVE.match(os.path.basename(archive)).group(1)
        assert not f.events_of("ClassDataSharingArchiveUnusable")
    finally:
        f.stop()
    # the old jar set's archive under the new key's name (its own size): flinklet uses it, the JVM sees the jar
    # differ and starts without it; flinklet says so once, removes it, and the launch goes on
    prefix = ARCHIVE.match(names[0]).group(0).rsplit("-", 1)[0]
    os.unlink(os.path.join(adir, names[0]))
    wrong = os.path.join(adir, f"{prefix}-{os.path.getsize(archive)}.jsa")
    shutil.copy2(archive, wrong)
    f.start()
    try:
        st = wait_restarted(f, st["jvm"]["pid"])
        assert f"-XX:SharedArchiveFile={wrong}" in f.jvm_args(st["jvm"]["pid"])
        assert not mapped(st["jvm"]["pid"], wrong)
        said = wait_for(lambda: f.events_of("ClassDataSharingArchiveUnusable"), 30, "the archive said unusable")
        assert len(said) == 1 and wrong in said[0]["message"] and "did not use it" in said[0]["message"]
        assert "Unable to use shared archive" in said[0]["message"]
        assert not os.path.exists(wrong)
    finally:
        f.stop()

"""Attack tests of two guarantees of docs/operations.md, written from the docs only (no look at src/):

- "Leftovers of dead JVMs: the volume does not fill up" (flinklet.leftovers.cleanup): before each launch the
  sweep removes what dead JVMs left, and never what a kept restore point needs, nothing outside the job's own
  directories, nothing given up (*.unreadable), no complete savepoint;
- "Slowness is never evidence": a launch the startup timeout stops never counts towards
  flinklet.restore.max-failures, and while Flink visibly restores the timeout is extended (StartupExtended) up to
  flinklet.startup.restore-timeout.

The fake "java" of these tests stands for the MiniCluster JVM; the restore point a launch uses is the `-s`
argument flinklet gives it."""
import json
import os
import signal
import stat
import struct
import subprocess
import time

import pytest

from attack_kit import MAGIC, SHIM, install_fake_java, spawn_count
from conftest import BIN, wait_for

JID = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"
TIMEOUT = 60


# ---------------------------------------------------------------------------------------------------- helpers

def cdir(state, jid=JID):
    return os.path.join(state, "checkpoints", jid)


def utf(s):
    """A string as Java's DataOutput.writeUTF writes it (what Flink's metadata serializer uses for paths)."""
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def meta(n, paths=(), pad=0):
    """A `_metadata` with Flink's header and the given file paths in it (the bytes a search would find)."""
    parts = [struct.pack(">IIq", MAGIC, 4, n) + b"\0" * 64]
    parts += [b"\0\0\0\x01" + utf(p) for p in paths]
    return b"".join(parts) + b"\0" * pad


def shared_uri(state, name, jid=JID):
    return f"file:{cdir(state, jid)}/shared/{name}"


def write(path, data=b"x" * 100):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def chk(state, n, shared=(), jid=JID, files=1, meta_bytes=None):
    """checkpoints/<jid>/chk-n with `files` state files and a _metadata naming them and the shared/ files."""
    d = os.path.join(cdir(state, jid), f"chk-{n}")
    os.makedirs(d, exist_ok=True)
    own = [write(os.path.join(d, f"state-{i}")) for i in range(files)]
    paths = [f"file:{p}" for p in own] + [shared_uri(state, s, jid) for s in shared]
    write(os.path.join(d, "_metadata"), meta_bytes if meta_bytes is not None else meta(n, paths))
    return d


def sp(state, n, suffix, shared=(), jid=JID):
    d = os.path.join(state, "savepoints", f"savepoint-{jid[:6]}-{suffix}")
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, "state-0"))
    write(os.path.join(d, "_metadata"), meta(n, [shared_uri(state, s, jid) for s in shared]))
    return d


def shared(state, *names, jid=JID):
    return [write(os.path.join(cdir(state, jid), "shared", n)) for n in names]


def prepare(sup, jid=JID):
    os.makedirs(sup.state, exist_ok=True)
    write(os.path.join(sup.state, "job-id"), (jid + "\n").encode())
    os.makedirs(os.path.join(cdir(sup.state, jid), "shared"), exist_ok=True)
    # a canary every sweep removes: its LeftoversRemoved event says the sweep of that launch is over
    os.makedirs(os.path.join(cdir(sup.state, jid), "chk-0"), exist_ok=True)


def events(sup, kind):
    return [e for e in sup.events() if e.get("type") == kind]


def swept(sup, count=1):
    wait_for(lambda: len(events(sup, "LeftoversRemoved")) >= count, TIMEOUT,
             f"{count} LeftoversRemoved event(s)\n{sup.logs()[-3000:]}", interval=0.1)


def removals_over(sup, count):
    """count sweeps' removals ended, whether all went (LeftoversRemoved) or not (a warning in the log)."""
    wait_for(lambda: len(events(sup, "LeftoversRemoved")) + sup.logs().count("could not remove every file") >= count,
             TIMEOUT, f"{count} removal(s) to end\n{sup.logs()[-3000:]}", interval=0.1)


def running(sup, count=1):
    wait_for(lambda: len(events(sup, "JobRunning")) >= count, TIMEOUT, f"JobRunning x{count}\n{sup.logs()[-3000:]}",
             interval=0.1)


def restored(sup):
    """The location of every launch's restore point, in order (the `Restoring` events)."""
    return [e["message"] for e in events(sup, "Restoring")]


def tree(root):
    """Every entry under root (links not followed) with its size: what a test compares before and after. The lock
    file flinklet holds in each directory it sweeps (.flinklet-lock) is flinklet's, not the job's: not listed."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + [f for f in files if f != ".flinklet-lock"]:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), st.st_size if stat.S_ISREG(st.st_mode) else 0)
    return out


def fake_java(sup, body, spawns=True):
    """A fake java whose behaviour is the shell `body`; $POINT is the restore point flinklet passed (-s)."""
    sp_file = os.path.join(str(sup.tmp), f"spawns.{time.monotonic_ns()}")
    with open(sup.java, "w") as f:
        f.write("#!/bin/bash\n"
                "POINT=; prev=\n"
                "for a in \"$@\"; do [ \"$prev\" = -s ] && POINT=\"$a\"; prev=\"$a\"; done\n"
                + (f"echo \"$$ $POINT\" >> '{sp_file}'\n" if spawns else "")
                + body + "\n")
    os.chmod(sup.java, 0o755)
    return sp_file


def restoring_line():
    """Flink's line of a restore (as the CheckpointCoordinator prints it), for the point in $POINT."""
    return ("echo \"$(date '+%Y-%m-%d %H:%M:%S'),000 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator"
            f"    [] - Restoring job {JID} from Checkpoint 5 @ 0 for {JID} located at file:${{POINT#file://}}.\"\n")


def spawned_points(sp_file):
    try:
        with open(sp_file) as f:
            return [line.split(" ", 1)[1].strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


# ------------------------------------------------------------------------------------------ the sweep: basics

def test_num_retained_3_keeps_3_and_the_120_spelling_too(server, supervisors, tmp_path):
    """Attacks "stay: the newest execution.checkpointing.num-retained complete checkpoints by id" with 3, given once
    in the 2.x spelling and once in the 1.20 spelling (state.checkpoints.num-retained): the contract says both
    spellings are Flink's own option names, used unchanged."""
    for key in ("execution.checkpointing.num-retained", "state.checkpoints.num-retained"):
        sup = supervisors(server, state_dir=str(tmp_path / key), conf={key: "3"})
        prepare(sup)
        for n in range(1, 8):
            chk(sup.state, n)
        sup.start()
        swept(sup)
        left = sorted(n for n in os.listdir(cdir(sup.state)) if n.startswith("chk-"))
        assert left == ["chk-5", "chk-6", "chk-7"], (key, left)
        assert sup.stop() == 0


@pytest.mark.parametrize("off", ["false", "FALSE"])
def test_cleanup_false_removes_nothing(server, supervisors, off):
    """Attacks "flinklet.leftovers.cleanup false: nothing is removed but what Flink removes itself": every kind of
    leftover is planted, flinklet runs, stops, runs again and stops; the job's directories are unchanged. Flink
    reads booleans without regard to case: "FALSE" is false too."""
    sup = supervisors(server, conf={"flinklet.leftovers.cleanup": off})
    prepare(sup)
    for n in range(1, 6):
        chk(sup.state, n, shared=[f"s{n}"])
    shared(sup.state, *[f"s{n}" for n in range(1, 6)], "orphan")
    os.makedirs(os.path.join(cdir(sup.state), "chk-9"))
    os.makedirs(os.path.join(cdir(sup.state), "chk-3.disposing"))
    os.makedirs(os.path.join(sup.state, "savepoints", f"savepoint-{JID[:6]}-aaaaaaaaaaaa"))
    before = tree(os.path.join(sup.state, "checkpoints")), tree(os.path.join(sup.state, "savepoints"))
    for i in range(2):
        sup.start()
        running(sup, i + 1)
        assert sup.stop() == 0
    after = tree(os.path.join(sup.state, "checkpoints")), tree(os.path.join(sup.state, "savepoints"))
    assert after == before
    assert not events(sup, "LeftoversRemoved")


def test_what_goes_goes_and_what_stays_stays(server, supervisors):
    """The sweep's documented list, both halves at once: beyond-retained, unfinished checkpoints and savepoints,
    .disposing and unnamed shared and taskowned/ files go; the retained, the damaged, the given up, complete
    savepoints, their shared files, taskowned/ itself and other jobs' directories stay."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in range(1, 5):
        chk(st, n, shared=[f"only-{n}", "common"])
    chk(st, 20, meta_bytes=b"not flink's metadata at all")          # damaged: stays (then demoted: still stays)
    os.rename(chk(st, 15, shared=["given-up"]), os.path.join(cdir(st), "chk-15.unreadable"))
    sp(st, 2, "aaaaaaaaaaaa", shared=["by-savepoint"])
    os.makedirs(os.path.join(st, "savepoints", f"savepoint-{JID[:6]}-bbbbbbbbbbbb"))  # unfinished: goes
    os.makedirs(os.path.join(cdir(st), "chk-7"))                                       # in flight: goes
    write(os.path.join(cdir(st), "chk-9.disposing", "state-0"))                          # left-over: goes
    shared(st, *[f"only-{n}" for n in range(1, 5)], "common", "given-up", "by-savepoint", "orphan")
    write(os.path.join(cdir(st), "taskowned", "tm_dead", "a3c1e2f0-exclusive"))
    chk(st, 1, jid=OTHER)
    os.makedirs(os.path.join(cdir(st, OTHER), "chk-5"))
    shared(st, "orphan-of-other", jid=OTHER)
    other_before = tree(cdir(st, OTHER))
    sup.start()
    swept(sup)
    names = set(os.listdir(cdir(st)))
    assert {"chk-3", "chk-4", "chk-15.unreadable", "taskowned", "shared"} <= names, names
    assert names & {"chk-20", "chk-20.unreadable"}, names
    assert not names & {"chk-0", "chk-1", "chk-2", "chk-7", "chk-9.disposing"}, names
    assert set(os.listdir(os.path.join(cdir(st), "shared"))) == {
        "only-3", "only-4", "common", "given-up", "by-savepoint"}
    assert [n for n in os.listdir(os.path.join(st, "savepoints")) if n != ".flinklet-lock"] == \
        [f"savepoint-{JID[:6]}-aaaaaaaaaaaa"]
    assert tree(cdir(st, OTHER)) == other_before
    assert os.listdir(os.path.join(cdir(st), "taskowned")) == []  # no kept point names tm_dead/
    assert sup.stop() == 0


def test_a_left_over_disposing_of_the_same_number_does_not_keep_a_checkpoint_for_ever(server, supervisors):
    """Attacks "go: complete checkpoints beyond those ... left-over chk-N.disposing" when a killed sweep left
    chk-2.disposing and a chk-2 (a fork reuses ids) is now beyond the retained: the rename aside collides. At most
    one launch later chk-2 must be gone (the volume stays bounded), and the kept points are untouched."""
    sup = supervisors(server)
    spawns = install_fake_java(sup, end_code=1, consume_stop=True)
    prepare(sup)
    for n in range(1, 5):
        chk(sup.state, n)
    write(os.path.join(cdir(sup.state), "chk-2.disposing", "state-0"))
    sup.start()
    swept(sup)
    running(sup)
    os.makedirs(os.path.join(cdir(sup.state), "chk-0"))
    open(sup.stop_file, "w").close()  # the JVM crashes: a second launch, a second sweep
    wait_for(lambda: spawn_count(spawns) >= 2, TIMEOUT, "a second launch", interval=0.1)
    swept(sup, 2)
    names = sorted(os.listdir(cdir(sup.state)))
    assert names == ["chk-3", "chk-4", "shared"], names
    assert sup.stop() == 0


# ------------------------------------------------------------------------------ the sweep: outside the state

def outside_tree(tmp_path):
    """A directory outside the state directory with a Flink-looking checkpoint and plain files."""
    out = tmp_path / "outside"
    for d in ("a-checkpoint", "no-metadata", "dir-in-chk", "shared-dir", "savepoint"):
        (out / d).mkdir(parents=True)
        (out / d / "precious").write_bytes(b"p" * 10)
    (out / "a-checkpoint" / "_metadata").write_bytes(meta(1))
    (out / "file").write_bytes(b"f")
    return out


LINK_CASES = ["chk-beyond-retained", "chk-unfinished", "links-inside-a-chk-that-goes", "links-in-shared",
              "savepoint-unfinished"]


@pytest.mark.parametrize("case", LINK_CASES)
def test_links_to_outside_the_state_directory_remove_nothing_there(server, supervisors, tmp_path, case):
    """Attacks "nothing outside the job's own directories" (and "a link or a directory there [shared/] is left
    alone") with symbolic links a removal could follow, one kind at a time: chk-1 (beyond the retained) a link to
    a complete checkpoint elsewhere; chk-9 (unfinished) a link to a directory elsewhere; links inside chk-1, a
    checkpoint that goes (to a directory and to a file); links in shared/; a savepoint of the job without _metadata
    that is a link to a directory elsewhere."""
    out = outside_tree(tmp_path)
    before = tree(out)
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (2, 3, 4):
        chk(st, n)
    if case == "chk-beyond-retained":
        os.symlink(out / "a-checkpoint", os.path.join(cdir(st), "chk-1"))
    elif case == "chk-unfinished":
        os.symlink(out / "no-metadata", os.path.join(cdir(st), "chk-9"))
    elif case == "links-inside-a-chk-that-goes":
        chk(st, 1)
        os.symlink(out / "dir-in-chk", os.path.join(cdir(st), "chk-1", "sub"))
        os.symlink(out / "file", os.path.join(cdir(st), "chk-1", "file-link"))
    elif case == "links-in-shared":
        os.symlink(out / "file", os.path.join(cdir(st), "shared", "link-to-file"))
        os.symlink(out / "shared-dir", os.path.join(cdir(st), "shared", "link-to-dir"))
    else:
        os.makedirs(os.path.join(st, "savepoints"))
        os.symlink(out / "savepoint", os.path.join(st, "savepoints", f"savepoint-{JID[:6]}-cccccccccccc"))
    sup.start()
    swept(sup)
    running(sup)
    assert tree(out) == before, "the sweep removed files outside the state directory"
    if case == "links-in-shared":
        assert os.path.islink(os.path.join(cdir(st), "shared", "link-to-file"))
        assert os.path.islink(os.path.join(cdir(st), "shared", "link-to-dir"))
    if case != "savepoint-unfinished":  # that one makes flinklet leave shared/ and all checkpoints (see the report)
        assert not os.path.exists(os.path.join(cdir(st), "chk-2")), "chk-2 is beyond the 2 kept"
    assert sup.stop() == 0


def test_a_shared_directory_that_is_a_link_elsewhere_is_not_emptied(server, supervisors, tmp_path):
    """Attacks "nothing outside the job's own directories": checkpoints/<jobId>/shared is a symbolic link to a
    directory elsewhere (another deployment's shared files, say) whose files no kept _metadata names."""
    out = tmp_path / "elsewhere-shared"
    out.mkdir()
    for i in range(5):
        (out / f"other-{i}").write_bytes(b"o")
    sup = supervisors(server)
    prepare(sup)
    os.rmdir(os.path.join(cdir(sup.state), "shared"))
    os.symlink(out, os.path.join(cdir(sup.state), "shared"))
    for n in (1, 2, 3):
        chk(sup.state, n)
    sup.start()
    swept(sup)
    assert sorted(os.listdir(out)) == [f"other-{i}" for i in range(5)]
    assert sup.stop() == 0


def test_a_savepoint_directory_that_is_a_link_is_swept_like_the_checkpoint_directory(server, supervisors, tmp_path):
    """savepoints/ itself is a symbolic link to a savepoint store elsewhere, as checkpoints/ may be: both are the
    configuration's directories, followed alike and locked where they lead (issue 36, item 3). The job's unfinished
    savepoint there (no _metadata, no JVM of the job running) goes as it would in a real directory; another job's
    stays; the store gets the lock file, and a second supervisor whose savepoints/ leads there too is refused."""
    out = tmp_path / "store"
    (out / f"savepoint-{JID[:6]}-dddddddddddd").mkdir(parents=True)
    (out / f"savepoint-{JID[:6]}-dddddddddddd" / "part").write_bytes(b"p")
    (out / "savepoint-0ther0-dddddddddddd").mkdir()
    (out / "savepoint-0ther0-dddddddddddd" / "part").write_bytes(b"o")
    sup = supervisors(server)
    prepare(sup)
    chk(sup.state, 1)
    os.symlink(out, os.path.join(sup.state, "savepoints"))
    sup.start()
    swept(sup)
    assert not os.path.exists(out / f"savepoint-{JID[:6]}-dddddddddddd"), os.listdir(out)
    assert os.path.exists(out / "savepoint-0ther0-dddddddddddd" / "part")
    other = tmp_path / "state-2"
    other.mkdir()
    os.symlink(out, other / "savepoints")
    r = subprocess.run([BIN, "run", "-c", str(sup.config), "--state-dir", str(other), "--flink-home",
                        str(sup.flink_home)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, r.stderr[-2000:]
    assert "savepoint directory" in r.stderr and f"pid {sup.proc.pid}, state directory {sup.state}" in r.stderr, \
        r.stderr[-2000:]
    assert not os.path.exists(other / "status.json")  # refused before anything was written
    assert os.path.exists(out / ".flinklet-lock")
    assert sup.stop() == 0


# ------------------------------------------------------------------------------------ the sweep: given up

def test_shared_files_of_a_given_up_point_stay_and_it_restores_when_renamed_back(server, supervisors):
    """Attacks "stay: every point given up (*.unreadable: you may rename one back) ... and every file of shared/
    whose name appears in the _metadata of any of them": chk-10.unreadable (the only point naming shared/x10) and
    a savepoint-....unreadable (naming shared/xsp) sit beside newer good checkpoints; after the sweep, the newer
    ones are given up by hand and chk-10 renamed back: the next launch restores chk-10 with all its files."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    os.rename(chk(st, 10, shared=["x10"]), os.path.join(cdir(st), "chk-10.unreadable"))
    os.rename(sp(st, 9, "eeeeeeeeeeee", shared=["xsp"]),
              os.path.join(st, "savepoints", f"savepoint-{JID[:6]}-eeeeeeeeeeee.unreadable"))
    for n in (11, 12, 13):
        chk(st, n, shared=[f"x{n}"])
    shared(st, "x10", "xsp", "x11", "x12", "x13")
    sup.start()
    swept(sup)
    assert sorted(os.listdir(os.path.join(cdir(st), "shared"))) == ["x10", "x12", "x13", "xsp"]
    assert sup.stop() == 0
    for n in (12, 13):
        os.rename(os.path.join(cdir(st), f"chk-{n}"), os.path.join(cdir(st), f"chk-{n}.unreadable"))
    os.rename(os.path.join(cdir(st), "chk-10.unreadable"), os.path.join(cdir(st), "chk-10"))
    os.makedirs(os.path.join(cdir(st), "chk-0"))
    sup.start()
    swept(sup, 2)
    assert "chk-10" in restored(sup)[-1], restored(sup)
    assert os.path.exists(os.path.join(cdir(st), "shared", "x10"))
    assert os.path.exists(os.path.join(cdir(st), "chk-10", "state-0"))
    assert sup.stop() == 0


def test_a_point_flink_could_not_read_keeps_its_shared_files(server, supervisors):
    """Attacks the same promise along flinklet's own path: Flink says it cannot read chk-3 (a FileNotFoundException
    naming one of its files), flinklet gives it up (chk-3.unreadable) and restores chk-2; the sweep of that launch
    must keep chk-3.unreadable's shared files, chk-2's, and chk-1 (now one of the newest 2 complete)."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (1, 2, 3):
        chk(st, n, shared=[f"x{n}"])
    shared(st, "x1", "x2", "x3")
    missing = os.path.join(cdir(st), "chk-3", "state-0")
    fake_java(sup, f"""if [ "${{POINT%/}}" != "${{POINT%chk-3}}" ] || [ "$POINT" != "${{POINT%chk-3}}" ]; then
  {restoring_line().strip()}
  echo "java.io.FileNotFoundException: {missing} (No such file or directory)"
  exit 1
fi
while [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done""")
    sup.start()
    wait_for(lambda: len(events(sup, "LeftoversRemoved")) >= 1 and os.path.exists(
        os.path.join(cdir(st), "chk-3.unreadable")), TIMEOUT, "chk-3 given up", interval=0.1)
    os.makedirs(os.path.join(cdir(st), "chk-0"), exist_ok=True)
    running(sup)
    swept(sup, 2)
    assert "chk-2" in restored(sup)[-1], restored(sup)
    # the first launch's sweep kept chk-2 and chk-3 (and x2, x3); x3 is now named by a given-up point only
    assert sorted(os.listdir(os.path.join(cdir(st), "shared"))) == ["x2", "x3"]
    assert os.path.exists(os.path.join(cdir(st), "chk-3.unreadable", "state-0"))
    assert sup.stop() == 0


# --------------------------------------------------------------------------------------- the sweep: the search

def test_odd_shared_file_names(server, supervisors):
    """Attacks "every file of shared/ whose name appears in the _metadata of any of them ... a search for the bytes
    of each file's name" with names a search can get wrong: spaces, a newline, a 255-byte name, names that are
    substrings of others ("a" and "ab", "b" named only as a prefix of "bc"), a name with a glob star and one with a
    backslash; the kept chk-2 names every "keep-" file and "ab"; the "go-" files and "b" are named by nobody
    (chk-1 goes)."""
    long_keep = "keep-" + "k" * 250
    long_go = "go-" + "k" * 252
    keep = ["keep with space", "keep\nnewline", long_keep, "ab", "keep*star", "keep\\back", "bc"]
    go = ["go with space", "go\nnewline", long_go, "go*", "go\\"]
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    chk(st, 1, shared=go)
    chk(st, 2, shared=keep)
    chk(st, 3)
    shared(st, *keep, *go, "a")
    sup.start()
    swept(sup)
    left = set(os.listdir(os.path.join(cdir(st), "shared")))
    assert set(keep) <= left, set(keep) - left
    assert not set(go) & left, set(go) & left
    assert sup.stop() == 0


@pytest.mark.parametrize("boundary", [4096, 8192, 65536, 1 << 20])
def test_a_name_across_a_read_boundary_of_metadata_is_found(server, supervisors, boundary):
    """Attacks the search for names in a kept _metadata read in pieces: the only reference to shared/<uuid> is
    placed so that it straddles byte `boundary` of the file (a search done block by block misses it, and the file
    goes though the restore point needs it)."""
    name = "5b0c3c4e-8f9a-4d3e-9c1b-0a1b2c3d4e5f"
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    uri = shared_uri(st, name).encode()
    head = meta(3)
    at = boundary - len(uri) // 2 - len(head)
    body = head + b"\0" * at + uri + b"\0" * 4096
    assert body.index(uri) < boundary < body.index(uri) + len(uri)
    chk(st, 2)
    chk(st, 3, meta_bytes=body)
    shared(st, name, "orphan")
    sup.start()
    swept(sup)
    assert sorted(os.listdir(os.path.join(cdir(st), "shared"))) == [name]
    assert sup.stop() == 0


def test_a_checkpoint_directory_a_kept_metadata_names_a_file_in_stays(server, supervisors):
    """Attacks "A checkpoint directory that a kept _metadata names a file in stays too": chk-11 (kept) names a file
    in chk-5 (beyond the retained); chk-5 must stay whole; chk-4 (named by nobody) goes."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (4, 5):
        chk(st, n, files=3)
    in5 = f"file:{cdir(st)}/chk-5/state-1"
    d11 = os.path.join(cdir(st), "chk-11")
    os.makedirs(d11)
    write(os.path.join(d11, "_metadata"), meta(11, [in5]))
    chk(st, 12)
    sup.start()
    swept(sup)
    assert sorted(os.listdir(os.path.join(cdir(st), "chk-5"))) == ["_metadata", "state-0", "state-1", "state-2"]
    assert not os.path.exists(os.path.join(cdir(st), "chk-4"))
    assert sup.stop() == 0


def test_times_do_not_decide_a_volume_copied_with_cp_r(server, supervisors, tmp_path):
    """Attacks "File times never decide" for the sweep: the volume is copied with `cp -r` (times lost) and then the
    old checkpoints are made the newest by time (touch); the newest num-retained by id, chk-8 and chk-9, must stay
    with their shared files, and the oldest ids go."""
    src = tmp_path / "orig"
    sup0 = supervisors(server, state_dir=str(src))
    prepare(sup0)
    for n in range(1, 10):
        chk(src, n, shared=[f"s{n}"])
    shared(str(src), *[f"s{n}" for n in range(1, 10)])
    dst = tmp_path / "copied"
    subprocess.run(["cp", "-r", str(src), str(dst)], check=True)
    now = time.time()
    for n in range(1, 10):  # the lower the id, the newer the time
        d = os.path.join(cdir(str(dst)), f"chk-{n}")
        for p in [os.path.join(d, "_metadata"), os.path.join(d, "state-0"), d,
                  os.path.join(cdir(str(dst)), "shared", f"s{n}")]:
            os.utime(p, (now + 1000 - n * 10, now + 1000 - n * 10))
    sup = supervisors(server, state_dir=str(dst))
    sup.start()
    swept(sup)
    assert "chk-9" in restored(sup)[-1]
    assert sorted(n for n in os.listdir(cdir(str(dst))) if n.startswith("chk")) == ["chk-8", "chk-9"]
    assert sorted(os.listdir(os.path.join(cdir(str(dst)), "shared"))) == ["s8", "s9"]
    assert sup.stop() == 0


def test_a_damaged_newest_checkpoint_does_not_cost_an_older_good_one(server, supervisors):
    """Attacks num-retained's promise "at least 2: a corrupt newest checkpoint leaves an older one" together with
    the sweep: chk-4's _metadata is not Flink's (given up before the launch), chk-1..3 are good. The launch restores
    chk-3; chk-2 must stay (the older one a corrupt chk-3 would fall back to), with its shared file."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (1, 2, 3):
        chk(st, n, shared=[f"s{n}"])
    chk(st, 4, meta_bytes=b"\x00" * 200)
    shared(st, "s1", "s2", "s3")
    sup.start()
    swept(sup)
    assert "chk-3" in restored(sup)[-1]
    assert os.path.exists(os.path.join(cdir(st), "chk-2", "_metadata"))
    assert "s2" in os.listdir(os.path.join(cdir(st), "shared"))
    assert sup.stop() == 0


def test_a_fifo_as_metadata_does_not_hang_the_launch(server, supervisors):
    """Attacks "damaged (cut short, not Flink's, not a regular file)" _metadata being handled (skipped, given up,
    kept by the sweep): chk-1's _metadata is a named pipe nobody writes (an open() of it blocks for ever). The job
    must still be RUNNING from chk-3 (12 s is generous for the fake JVM), and SIGTERM must stop flinklet."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (2, 3):
        chk(st, n)
    d1 = os.path.join(cdir(st), "chk-1")
    os.makedirs(d1)
    os.mkfifo(os.path.join(d1, "_metadata"))
    sup.start()
    try:
        wait_for(lambda: events(sup, "JobRunning"), 12, "JobRunning", interval=0.1)
    finally:
        sup.proc.send_signal(signal.SIGTERM)
        try:
            sup.proc.wait(8)
        except subprocess.TimeoutExpired:
            pass
    assert sup.proc.poll() is not None, "SIGTERM did not stop flinklet"
    assert "chk-3" in restored(sup)[-1]


def test_more_than_256_mib_of_metadata_leaves_shared_alone(server, supervisors):
    """Attacks "when a kept _metadata cannot be read in full, or there is more than 256 MiB of it, shared/ is left
    as it is ... and so is every complete checkpoint": chk-3's _metadata is a 300 MiB sparse file naming nothing;
    no shared file and no complete checkpoint may go."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (1, 2):
        chk(st, n, shared=[f"s{n}"])
    d3 = chk(st, 3)
    with open(os.path.join(d3, "_metadata"), "r+b") as f:
        f.truncate(300 << 20)
    shared(st, "s1", "s2", "orphan")
    sup.start()
    running(sup)
    wait_for(lambda: "not swept" in sup.logs() or events(sup, "LeftoversRemoved"), TIMEOUT, "the sweep's decision",
             interval=0.1)
    swept(sup)  # chk-0 still goes
    assert sorted(os.listdir(os.path.join(cdir(st), "shared"))) == ["orphan", "s1", "s2"]
    assert sorted(n for n in os.listdir(cdir(st)) if n.startswith("chk")) == ["chk-1", "chk-2", "chk-3"]
    assert sup.stop() == 0


# ---------------------------------------------------------------------------------- the sweep: interrupted

def remove_deep(path):
    """Removes a chain of nested "dd" directories (with files at any level) without recursion."""
    if not os.path.isdir(path):
        return
    fds = [os.open(path, os.O_RDONLY)]
    try:
        while "dd" in os.listdir(fds[-1]):
            fds.append(os.open("dd", os.O_RDONLY, dir_fd=fds[-1]))
        for i in range(len(fds) - 1, -1, -1):
            for e in os.listdir(fds[i]):
                if e != "dd":
                    os.unlink(e, dir_fd=fds[i])
            if i > 0:
                os.rmdir("dd", dir_fd=fds[i - 1])
    finally:
        for fd in fds:
            os.close(fd)
    os.rmdir(path)


def many(state, ids, files, kept_shared=()):
    """Checkpoints with `files` state files each; returns {chk name: sorted file names} to check for wholeness."""
    want = {}
    for n in ids:
        d = chk(state, n, files=files, shared=kept_shared if n == max(ids) else ())
        want[f"chk-{n}"] = sorted(os.listdir(d))
    return want


def restorable_points_are_whole(state, want):
    """No chk-N under a restorable name (with a _metadata) misses a file it had."""
    for name in os.listdir(cdir(state)):
        if name in want and os.path.exists(os.path.join(cdir(state), name, "_metadata")):
            assert sorted(os.listdir(os.path.join(cdir(state), name))) == want[name], f"{name} is half removed"


def meta_hold_env(sup, match):
    hold = os.path.join(str(sup.tmp), "meta.hold")
    open(hold, "w").close()
    return hold, {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": sup.state, "VOLSHIM_META_BLOCK_FILE": hold,
                  "VOLSHIM_META_BLOCK_MATCH": match}


def test_kill_9_of_everything_in_the_middle_of_a_large_sweep(server, supervisors):
    """Attacks "a crash in the middle never leaves a half-removed point under a restorable name" and "the next
    flinklet on the volume carries on from the newest restore point": 30 checkpoints of 100 files and 2000 unnamed
    shared files; the removal is held in the middle of chk-15 and flinklet's whole session (flinklet, the removal,
    the JVM: a container's end) is killed with SIGKILL. No restorable chk-N is half removed, the next flinklet
    restores chk-30, and what the dead sweep left goes with the next sweep."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    write(os.path.join(cdir(st), "chk-15", "hold-here"))
    want = many(st, range(1, 31), 100, kept_shared=["needed"])
    shared(st, "needed", *[f"orphan-{i}" for i in range(2000)])
    hold, env = meta_hold_env(sup, "hold-here")
    sup.start_env = env
    sup.start()
    wait_for(lambda: os.path.exists(hold + ".held"), TIMEOUT, f"the removal to reach chk-15\n{sup.logs()[-2000:]}",
             interval=0.1)
    os.killpg(sup.proc.pid, signal.SIGKILL)
    sup.proc.wait()
    os.unlink(hold)
    restorable_points_are_whole(st, want)
    sup.start_env = {}
    os.makedirs(os.path.join(cdir(st), "chk-0"), exist_ok=True)
    sup.start()
    wait_for(lambda: len(restored(sup)) >= 2, TIMEOUT, "the second launch", interval=0.1)
    assert "chk-30" in restored(sup)[-1], restored(sup)
    swept(sup)  # the first sweep never ended: this is the second's
    assert sorted(n for n in os.listdir(cdir(st)) if n.startswith("chk")) == ["chk-29", "chk-30"]
    restorable_points_are_whole(st, want)
    assert os.listdir(os.path.join(cdir(st), "shared")) == ["needed"]
    assert sup.stop() == 0


def test_kill_9_of_flinklet_alone_during_the_removal_then_a_new_flinklet(server, supervisors):
    """Attacks "If flinklet itself is killed ... the next flinklet on the volume carries on from the newest restore
    point" when the kill (of flinklet's pid only, as outside a container) comes while its removal child works: the
    next flinklet must start (not exit 3 for a lock an orphaned child still holds), restore the newest point, and
    no restorable point may be half removed however the old removal and the new launch overlap."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    write(os.path.join(cdir(st), "chk-10", "hold-here"))
    want = many(st, range(1, 21), 50)
    hold, env = meta_hold_env(sup, "hold-here")
    sup.start_env = env
    sup.start()
    wait_for(lambda: os.path.exists(hold + ".held"), TIMEOUT, f"the removal to reach chk-10\n{sup.logs()[-2000:]}",
             interval=0.1)
    os.kill(sup.proc.pid, signal.SIGKILL)
    sup.proc.wait()
    sup.start_env = {}
    runs = len(events(sup, "JobRunning"))
    sup.start()  # the hold is still there: an orphaned removal child (if any) is stuck in the middle of chk-10
    try:
        wait_for(lambda: len(restored(sup)) >= 2 or sup.proc.poll() is not None, TIMEOUT, "the second launch",
                 interval=0.1)
        assert sup.proc.poll() is None, f"the next flinklet exited {sup.proc.returncode}:\n{sup.logs()[-1500:]}"
        assert "chk-20" in restored(sup)[-1], restored(sup)
        running(sup, runs + 1)
    finally:
        os.unlink(hold)
    wait_for(lambda: sorted(n for n in os.listdir(cdir(st)) if n.startswith("chk")) == ["chk-19", "chk-20"],
             TIMEOUT, "the leftovers to go", interval=0.1)
    restorable_points_are_whole(st, want)
    assert sup.stop() == 0


def test_the_new_jvm_reuses_the_number_of_an_unfinished_checkpoint(server, supervisors):
    """Attacks "the list is fixed while no JVM writes, and nothing the new JVM writes can be on it": the dead JVM
    was writing chk-7 (2000 files, no _metadata) after chk-6; the new JVM restores chk-6 and Flink's counter goes on
    from there, so its first checkpoint is chk-7 again. The removal of the old chk-7 is held in its middle while
    the new JVM writes its chk-7 (its files and _metadata); once the removal ends the new chk-7 must be whole."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    chk(st, 5)
    chk(st, 6)
    d7 = os.path.join(cdir(st), "chk-7")
    for i in range(2000):
        write(os.path.join(d7, f"old-{i:04d}"), b"o")
    marker = os.path.join(str(sup.tmp), "new-chk-7-written")
    new_files = " ".join(f"new-{i}" for i in range(40))
    fake_java(sup, f"""mkdir -p '{d7}'
for f in {new_files}; do echo n > '{d7}'/$f; done
printf 'I`g-\\000\\000\\000\\004\\000\\000\\000\\000\\000\\000\\000\\007' > '{d7}/_metadata'
touch '{marker}'
while [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done""")
    hold, env = meta_hold_env(sup, "old-0100")
    sup.start_env = env
    sup.start()
    wait_for(lambda: os.path.exists(marker), TIMEOUT, f"the new JVM's chk-7\n{sup.logs()[-2000:]}", interval=0.1)
    os.unlink(hold)
    swept(sup)
    assert "chk-6" in restored(sup)[-1]
    left = sorted(os.listdir(d7)) if os.path.isdir(d7) else []
    assert "_metadata" in left and all(f"new-{i}" in left for i in range(40)), left[:50]
    assert not [n for n in left if n.startswith("old-")], "the dead JVM's files are still in chk-7"
    assert sup.stop() == 0


def test_kill_9_at_each_step_of_the_renames_aside(server, supervisors, tmp_path):
    """Attacks "A complete checkpoint is first renamed chk-N.disposing (a crash in the middle never leaves a
    half-removed point under a restorable name)" with a SIGKILL of flinklet before each rename of the sweep and
    before the sync after them (volshim's step counter): each time the next flinklet restores chk-6 (the newest),
    and its sweep leaves exactly chk-5 and chk-6, whole."""
    def plant(sup):
        prepare(sup)
        want = many(sup.state, range(1, 7), 5)
        os.makedirs(os.path.join(cdir(sup.state), "chk-7"))
        return want

    probe = supervisors(server, state_dir=str(tmp_path / "probe"))
    plant(probe)
    log = str(tmp_path / "steps.log")
    probe.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": probe.state, "VOLSHIM_AT": "0", "VOLSHIM_LOG": log}
    probe.start()
    running(probe)
    assert probe.stop() == 0
    with open(log) as f:
        steps = [line.split() for line in f]
    renames = [int(n) for n, call, path in steps if call.startswith("rename") and ".disposing" in path]
    assert len(renames) >= 6, steps[:30]
    for k in renames + [renames[-1] + 1]:
        sup = supervisors(server, state_dir=str(tmp_path / f"at-{k}"))
        want = plant(sup)
        sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": sup.state, "VOLSHIM_AT": str(k), "VOLSHIM_ACTION": "kill"}
        sup.start()
        sup.proc.wait(TIMEOUT)
        assert sup.proc.returncode == -signal.SIGKILL, (k, sup.logs()[-1500:])
        restorable_points_are_whole(sup.state, want)
        sup.start_env = {}
        sup.start()
        swept(sup)
        assert "chk-6" in restored(sup)[-1], (k, restored(sup))
        assert sorted(n for n in os.listdir(cdir(sup.state)) if n.startswith("chk")) == ["chk-5", "chk-6"], k
        restorable_points_are_whole(sup.state, want)
        assert sup.stop() == 0


# ------------------------------------------------------------------------------- slowness is never evidence

def restoring_rest(server):
    """Flink's REST API while the job restores: the job RUNNING with its tasks INITIALIZING, for ever."""
    import re
    from fakeflink import VERTEX

    def answer(method, path):
        p = path.split("?")[0]
        now = int(time.time() * 1000)
        if p == "/jobs/overview":
            return 200, json.dumps({"jobs": [{"jid": j, "name": "fake", "state": "RUNNING", "start-time": now - 5000,
                                              "end-time": -1, "duration": 5000, "last-modification": now,
                                              "tasks": {"running": 0, "initializing": 2, "total": 2, "created": 0,
                                                        "scheduled": 0, "deploying": 0, "finished": 0,
                                                        "canceling": 0, "canceled": 0, "failed": 0,
                                                        "reconciling": 0}}
                                             for j in server.job_ids()]}).encode()
        if re.match(r"^/jobs/[0-9a-f]{32}$", p) and method == "GET":
            jid = p.rsplit("/", 1)[1]
            return 200, json.dumps({"jid": jid, "name": "fake", "state": "RUNNING", "start-time": now - 5000,
                                    "vertices": [{"id": VERTEX, "name": "Source: fake", "parallelism": 2,
                                                  "maxParallelism": 128, "status": "INITIALIZING",
                                                  "tasks": {"INITIALIZING": 2, "RUNNING": 0}}],
                                    "timestamps": {"RUNNING": now - 4000},
                                    "plan": {"jid": jid, "nodes": [{"id": VERTEX, "parallelism": 2}]}}).encode()
        return None
    return answer


def slow_restore_setup(server, supervisors, conf, java_body=None):
    base = {"flinklet.restore.max-failures": "1", "flinklet.restart.backoff.max": "500 ms",
            "flinklet.restart.max-attempts": "100"}
    base.update(conf)
    sup = supervisors(server, conf=base)
    prepare(sup)
    for n in (4, 5):
        chk(sup.state, n)
    server.fault = restoring_rest(server)
    spawns = fake_java(sup, f"STOP_FILE='{sup.stop_file}'\n" + restoring_line() + (java_body or
                       "while [ ! -e \"$STOP_FILE\" ]; do sleep 0.1; done"))
    return sup, spawns


def never_demoted(sup, spawns, launches):
    points = spawned_points(spawns)
    assert len(points) >= launches
    assert all(p.rstrip("/").endswith("chk-5") for p in points), points
    assert not [n for n in os.listdir(cdir(sup.state)) if n.endswith(".unreadable")]
    assert not events(sup, "RestorePointDemoted") and not events(sup, "RestoreFailed")
    assert events(sup, "RestoreRetry")


@pytest.mark.parametrize("restore_timeout", ["0", "1 s"])
def test_repeated_startup_timeouts_never_demote_with_max_failures_1(server, supervisors, restore_timeout):
    """Attacks "a launch the startup timeout stops never counts towards flinklet.restore.max-failures" with
    max-failures 1: Flink says it restores chk-5 and its tasks stay INITIALIZING; the startup timeout (1.5 s) stops
    launch after launch. With restore-timeout 0 and with one below the startup timeout ("no extension"), there is
    no StartupExtended, and every launch restores chk-5, never given up."""
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "1500 ms",
                                                           "flinklet.startup.restore-timeout": restore_timeout})
    sup.start()
    wait_for(lambda: spawn_count(spawns) >= 4, 90, f"4 launches\n{sup.logs()[-2000:]}", interval=0.1)
    never_demoted(sup, spawns, 4)
    assert not events(sup, "StartupExtended")
    assert sup.alive()


def test_the_extension_ends_at_the_restore_timeout_and_does_not_count(server, supervisors):
    """Attacks "the timeout is extended (StartupExtended, once per launch) up to flinklet.startup.restore-timeout
    ... from the launch" and that such a launch does not count: startup timeout 1 s, restore-timeout 5 s, Flink
    restoring for ever. Each launch gets one StartupExtended and is stopped 5 s after its start (not before 4 s,
    not after 20 s), and chk-5 is never given up although max-failures is 1."""
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "1 s",
                                                           "flinklet.startup.restore-timeout": "5 s"})
    sup.start()
    wait_for(lambda: spawn_count(spawns) >= 3, 90, f"3 launches\n{sup.logs()[-2000:]}", interval=0.1)
    never_demoted(sup, spawns, 3)
    started = [e["timeMs"] for e in events(sup, "JvmStarted")]
    ended = [e["timeMs"] for e in events(sup, "RestoreRetry")]
    assert len(events(sup, "StartupExtended")) >= 2
    for a, b in zip(started, ended):
        assert 4000 <= b - a <= 20000, (started, ended)


def test_a_jvm_frozen_while_restoring_is_not_waited_for_until_the_restore_timeout(server, supervisors):
    """Attacks "While Flink visibly restores (... its REST API answers ...), the startup timeout is extended": the
    JVM is frozen (SIGSTOP) after the extension began, so its REST API goes silent; with restore-timeout 10 min
    flinklet must stop it once Flink is no longer visibly restoring (well within 40 s), restore the same point
    again (not given up with max-failures 1), and the job runs."""
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "2 s",
                                                           "flinklet.startup.restore-timeout": "10 min"})
    sup.start()
    wait_for(lambda: events(sup, "StartupExtended"), TIMEOUT, f"StartupExtended\n{sup.logs()[-2000:]}", interval=0.1)
    pid = int(open(spawns).read().split()[0])
    os.kill(pid, signal.SIGSTOP)
    server.fault = "timeout"  # a frozen JVM answers nothing
    frozen = time.monotonic()
    try:
        wait_for(lambda: spawn_count(spawns) >= 2, 40, f"a new launch after the freeze\n{sup.logs()[-2000:]}",
                 interval=0.1)
    finally:
        server.fault = None
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert time.monotonic() - frozen < 40
    running(sup)
    never_demoted(sup, spawns, 2)


def test_a_jvm_that_exits_1_when_the_timeout_stops_it_does_not_count(server, supervisors):
    """Attacks "A kill from outside never counts, and neither does the startup timeout": the JVM, stopped by the
    startup timeout (SIGTERM), prints an exception and exits 1 by itself, as a JVM's shutdown can. With max-failures
    1 and launch after launch so stopped, chk-5 must never be given up."""
    body = ("trap 'echo \"Caused by: java.lang.IllegalStateException: MiniCluster is shutting down\"; exit 1' TERM\n"
            "while true; do sleep 0.1; done")
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "1500 ms",
                                                           "flinklet.startup.restore-timeout": "0"}, body)
    sup.start()
    wait_for(lambda: spawn_count(spawns) >= 4, 90, f"4 launches\n{sup.logs()[-2000:]}", interval=0.1)
    never_demoted(sup, spawns, 4)


def test_control_a_launch_that_exits_by_itself_after_restoring_does_count(server, supervisors):
    """The control of the four tests above (their fake JVM's Restoring line is seen as Flink's): the same setup
    but the JVM exits 1 by itself after saying it restores chk-5: with max-failures 1 that is one failed launch too
    many ("It failed flinklet.restore.max-failures launches in a row ... and exited on their own"), chk-5 is given
    up and the next launch restores chk-4."""
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "30 s"}, "sleep 0.3; exit 1")
    sup.start()
    wait_for(lambda: spawn_count(spawns) >= 2, TIMEOUT, f"2 launches\n{sup.logs()[-2000:]}", interval=0.1)
    points = spawned_points(spawns)
    assert points[0].endswith("chk-5") and points[1].endswith("chk-4"), points
    assert os.path.isdir(os.path.join(cdir(sup.state), "chk-5.unreadable"))


# ------------------------------------------------------------------------------ the sweep: savepoints, damage

@pytest.mark.parametrize("damage", ["no-metadata", "empty-metadata"])
def test_a_recorded_savepoint_that_lost_its_metadata(server, supervisors, damage):
    """Attacks the sweep against status.json: a stop-with-savepoint recorded savepoint-<jobId6>-... (id 7) in
    status.json; then its _metadata is lost (a power cut: Flink does not sync it) or left empty. The next start must
    not trust it (restore chk-3), must not stop on it, and an empty (damaged) _metadata's savepoint must stay
    ("every checkpoint or savepoint whose _metadata is damaged ... stay"), through two sweeps."""
    from fakeflink import end_once_reported
    sup = supervisors(server, upgrade_mode="savepoint")
    spawns = install_fake_java(sup, end_code=1, consume_stop=True)
    prepare(sup)
    st = sup.state
    chk(st, 3)
    spd = sp(st, 7, "abcdefabcdef")
    server.savepoint_location = "file:" + spd
    end_once_reported(server, sup.stop_file)
    sup.start()
    running(sup)
    assert sup.stop() == 0
    assert sup.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"].rstrip("/").endswith(spd[-12:])
    server.savepoint_location = None
    server.on_savepoint_reported = None
    if damage == "no-metadata":
        os.unlink(os.path.join(spd, "_metadata"))
    else:
        open(os.path.join(spd, "_metadata"), "wb").close()
    os.makedirs(os.path.join(cdir(st), "chk-0"), exist_ok=True)
    sup.start()
    swept(sup, 2)
    assert "chk-3" in restored(sup)[-1], restored(sup)
    running(sup, 2)
    os.makedirs(os.path.join(cdir(st), "chk-0"), exist_ok=True)
    open(sup.stop_file, "w").close()  # a crash: a second sweep in the same flinklet
    wait_for(lambda: spawn_count(spawns) >= 3, TIMEOUT, "a third launch", interval=0.1)
    swept(sup, 3)
    assert "chk-3" in restored(sup)[-1], restored(sup)
    if damage == "empty-metadata":
        left = os.listdir(os.path.join(st, "savepoints"))
        assert [n for n in left if n.startswith(f"savepoint-{JID[:6]}-abcdefabcdef")], left
    assert sup.alive()  # (no stop: with no savepoint to report, a stop would wait for its budget)


def test_damaged_and_given_up_points_beyond_the_retained_stay(server, supervisors):
    """Attacks "stay: ... every checkpoint or savepoint whose _metadata is damaged or unreadable": old points (ids
    below the retained) whose _metadata is not Flink's, empty, or a directory, a savepoint whose _metadata is not
    Flink's, and a savepoint-....unreadable without _metadata at all: all stay, whole."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    chk(st, 1, meta_bytes=b"garbage" * 20)
    chk(st, 2, meta_bytes=b"")
    d3 = os.path.join(cdir(st), "chk-3")
    os.makedirs(os.path.join(d3, "_metadata"))
    write(os.path.join(d3, "state-0"))
    for n in (8, 9):
        chk(st, n)
    bad_sp = sp(st, 4, "aaaaaaaaaaaa")
    write(os.path.join(bad_sp, "_metadata"), b"\x01\x02\x03" * 30)
    gone = os.path.join(st, "savepoints", f"savepoint-{JID[:6]}-bbbbbbbbbbbb.unreadable")
    write(os.path.join(gone, "state-0"))
    before = {k: v for k, v in tree(st).items() if k.startswith(("checkpoints", "savepoints")) and "chk-0" not in k
              and not k.startswith(os.path.join("checkpoints", JID, "chk-8"))
              and not k.startswith(os.path.join("checkpoints", JID, "chk-9"))}
    sup.start()
    swept(sup)
    after = tree(st)
    aside = f"savepoint-{JID[:6]}-aaaaaaaaaaaa"  # a damaged savepoint of unknown id may be given up (renamed)
    missing = [k for k in before if k not in after and k.replace(aside, aside + ".unreadable") not in after]
    assert not missing, missing
    assert sup.stop() == 0


# ------------------------------------------------------------------------------ the sweep: more hostile volumes

def test_a_volume_mounted_elsewhere_keeps_the_files_its_points_name(server, supervisors):
    """Attacks "a search for the bytes of each file's name" when the kept _metadata names its shared files under
    the path the volume had when Flink wrote it (a volume now mounted elsewhere, a copied directory): the names
    are the same, the paths are not; the files must stay, in shared/ and in its subdirectories (ForSt's working
    directories) alike; a subdirectory none of whose files is named goes whole."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (2, 3):
        d = os.path.join(cdir(st), f"chk-{n}")
        os.makedirs(d)
        write(os.path.join(d, "_metadata"), meta(n, [f"file:/mnt/old-volume/checkpoints/{JID}/shared/s{n}",
                                                     f"file:///mnt/old-volume/checkpoints/{JID}/shared/t{n}",
                                                     f"file:/mnt/old-volume/checkpoints/{JID}/shared/op_x/db/u{n}"]))
    shared(st, "s2", "s3", "t2", "t3", "orphan")
    for name in ("u2", "u3", "orphan"):
        write(os.path.join(cdir(st), "shared", "op_x", "db", name))
    write(os.path.join(cdir(st), "shared", "subdir", "inner"))
    sup.start()
    swept(sup)
    assert sorted(os.listdir(os.path.join(cdir(st), "shared"))) == ["op_x", "s2", "s3", "t2", "t3"]
    assert sorted(os.listdir(os.path.join(cdir(st), "shared", "op_x", "db"))) == ["u2", "u3"]
    assert sup.stop() == 0


def test_more_than_256_mib_of_metadata_in_two_files_leaves_shared_alone(server, supervisors):
    """Attacks "or there is more than 256 MiB of it" (of kept _metadata, in all): two kept checkpoints of 150 MiB
    (sparse) each; the shared/ file they do not name must stay, as must every complete checkpoint."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    chk(st, 1)
    for n in (2, 3):
        with open(os.path.join(chk(st, n), "_metadata"), "r+b") as f:
            f.truncate(150 << 20)
    shared(st, "orphan")
    sup.start()
    swept(sup)
    assert os.listdir(os.path.join(cdir(st), "shared")) == ["orphan"]
    assert sorted(n for n in os.listdir(cdir(st)) if n.startswith("chk")) == ["chk-1", "chk-2", "chk-3"]
    assert sup.stop() == 0


def test_metadata_links_to_endless_devices_do_not_hang_the_launch(server, supervisors):
    """Attacks the reading of kept _metadata ("not a regular file" is damage): chk-1's _metadata is a link to
    /dev/zero and a savepoint's a link to /dev/urandom, which never end. The job must be RUNNING from chk-3 within
    20 s."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (2, 3):
        chk(st, n)
    d1 = os.path.join(cdir(st), "chk-1")
    os.makedirs(d1)
    os.symlink("/dev/zero", os.path.join(d1, "_metadata"))
    dsp = os.path.join(st, "savepoints", f"savepoint-{JID[:6]}-999999999999")
    os.makedirs(dsp)
    os.symlink("/dev/urandom", os.path.join(dsp, "_metadata"))
    sup.start()
    wait_for(lambda: events(sup, "JobRunning"), 20, f"JobRunning\n{sup.logs()[-2000:]}", interval=0.1)
    assert "chk-3" in restored(sup)[-1]
    assert sup.stop() == 0


# 1500: paths of 4.5 KB, past PATH_MAX (a defect this test found: such a tree stayed chk-9.disposing for good)
@pytest.mark.parametrize("depth", [1000, 1500])
def test_a_very_deep_unfinished_checkpoint_goes_and_breaks_nothing(server, supervisors, depth):
    """Attacks "go: chk-N without _metadata" with a tree a remover can choke on: chk-9 holds `depth` nested
    directories (1500: paths past PATH_MAX). flinklet must not crash or hang, the job runs from chk-3, and the tree
    goes, neither chk-9 nor chk-9.disposing left, at the latest after the next launch's sweep."""
    sup = supervisors(server)
    spawns = install_fake_java(sup, end_code=1, consume_stop=True)
    prepare(sup)
    st = sup.state
    for n in (2, 3):
        chk(st, n)
    d9 = os.path.join(cdir(st), "chk-9")
    os.makedirs(d9)
    fd = os.open(d9, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("dd", dir_fd=fd)
            nfd = os.open("dd", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        sup.start()
        running(sup)
        assert "chk-3" in restored(sup)[-1]
        removals_over(sup, 1)
        os.makedirs(os.path.join(cdir(st), "chk-0"), exist_ok=True)
        open(sup.stop_file, "w").close()  # a crash: a second launch, a second sweep
        wait_for(lambda: spawn_count(spawns) >= 2, TIMEOUT, "a second launch", interval=0.1)
        running(sup, 2)
        removals_over(sup, 2)
        assert sup.alive()
        left = [n for n in os.listdir(cdir(st)) if n.startswith("chk-9")]
        assert not left, f"{left} still there after two sweeps"
        assert sup.stop() == 0
    finally:
        sup.cleanup()
        for n in os.listdir(cdir(st)):  # pytest's own removal of the tmp dir recurses too deep for this tree
            remove_deep(os.path.join(cdir(st), n)) if n.startswith("chk-9") else None


def test_the_search_of_40000_shared_names_does_not_hold_up_the_launch(server, supervisors):
    """Attacks "The search and the renames run ... ahead of the launch's intent, so they are over before the JVM is
    spawned" with a large RocksDB state's shape: 40000 shared files, every one named in the 2 kept _metadata (4.6 MB
    each). The launch waits for the search, so its cost is the restart's delay: finding 40000 names in 9 MB is a
    matter of milliseconds done once per file (a hash of the names, one pass over the bytes); the JVM must be started
    within 4 s of flinklet's start."""
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    names = [f"{i:08x}-1c2d-4e5f-8a9b-{i:012x}" for i in range(40000)]
    for n in (2, 3):
        chk(st, n, shared=names)
    shared(st, *names, "orphan")
    sup.start()
    wait_for(lambda: events(sup, "JvmStarted"), 120, "the JVM's start", interval=0.1)
    t0 = events(sup, "SupervisorStarted")[0]["timeMs"]
    t1 = events(sup, "JvmStarted")[0]["timeMs"]
    swept(sup)
    assert len(os.listdir(os.path.join(cdir(st), "shared"))) == 40000
    assert sup.stop() == 0
    assert t1 - t0 < 4000, f"the JVM started {(t1 - t0) / 1000:.1f} s after flinklet"


@pytest.mark.parametrize("key", ["execution.checkpointing.num-retained", "state.checkpoints.num-retained"])
def test_num_retained_1_is_refused_in_either_spelling(server, supervisors, tmp_path, key):
    """Attacks "execution.checkpointing.num-retained: at least 2 (an error below): a corrupt newest checkpoint
    leaves an older one" through both spellings: with 1, flinklet refuses the configuration (exit 2) or, if it
    runs, its sweep still leaves 2 complete checkpoints."""
    sup = supervisors(server, state_dir=str(tmp_path / key), conf={key: "1"})
    prepare(sup)
    for n in (1, 2, 3):
        chk(sup.state, n)
    sup.start()
    wait_for(lambda: sup.proc.poll() is not None or events(sup, "LeftoversRemoved"), TIMEOUT, "a decision",
             interval=0.1)
    if sup.proc.poll() is not None:
        assert sup.proc.returncode == 2, sup.logs()[-1500:]
        assert "num-retained" in sup.logs()
    else:
        assert sorted(n for n in os.listdir(cdir(sup.state)) if n.startswith("chk")) == ["chk-2", "chk-3"]
        assert sup.stop() == 0


def test_a_link_named_like_a_savepoint_does_not_stop_the_sweep(server, supervisors, tmp_path):
    """Attacks "its use stays bounded by the retained restore points" (contract) against one stray entry: a link
    savepoints/savepoint-<jobId6>-cccccccccccc to a directory elsewhere without _metadata (not a savepoint; a link
    is left alone, as in shared/). The rest of the sweep must still happen: chk-1 (beyond the 2 kept) and the
    unnamed shared file go."""
    out = tmp_path / "elsewhere"
    out.mkdir()
    sup = supervisors(server)
    prepare(sup)
    st = sup.state
    for n in (1, 2, 3):
        chk(st, n)
    shared(st, "orphan")
    os.makedirs(os.path.join(st, "savepoints"))
    os.symlink(out, os.path.join(st, "savepoints", f"savepoint-{JID[:6]}-cccccccccccc"))
    sup.start()
    swept(sup)
    assert os.path.isdir(out)
    assert sorted(n for n in os.listdir(cdir(st)) if n.startswith("chk")) == ["chk-2", "chk-3"]
    assert os.listdir(os.path.join(cdir(st), "shared")) == []
    assert sup.stop() == 0


def test_evidence_while_restoring_ends_the_extension_at_once(server, supervisors):
    """Attacks the other side of "slowness is never evidence": the extension is for a restore "nothing says it
    cannot read"; when Flink, while its tasks stay INITIALIZING (REST answering), prints a FileNotFoundException
    naming a file of chk-5, flinklet must not wait (startup timeout 60 s, restore-timeout 10 min): it kills the
    JVM at once, gives chk-5 up and restores chk-4."""
    missing = "${POINT#file://}/state-0"
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "60 s",
                                                           "flinklet.startup.restore-timeout": "10 min"},
                                     f"""sleep 0.5
case "$POINT" in *chk-5) echo "java.io.FileNotFoundException: {missing} (No such file or directory)";; esac
while [ ! -e "$STOP_FILE" ]; do sleep 0.1; done""")
    t0 = time.monotonic()
    sup.start()
    wait_for(lambda: spawn_count(spawns) >= 2, 40, f"a second launch\n{sup.logs()[-2000:]}", interval=0.1)
    assert time.monotonic() - t0 < 40
    points = spawned_points(spawns)
    assert points[0].endswith("chk-5") and points[1].endswith("chk-4"), points
    assert os.path.isdir(os.path.join(cdir(sup.state), "chk-5.unreadable"))


def test_kills_from_outside_while_restoring_never_count(server, supervisors):
    """Attacks "A kill from outside never counts": max-failures 1, Flink says it restores chk-5 (tasks
    INITIALIZING), and the JVM is killed with SIGKILL from outside (the OOM killer, an operator) three launches in
    a row: chk-5 is restored each time and never given up."""
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "60 s"})
    sup.start()
    for i in range(1, 4):
        wait_for(lambda: spawn_count(spawns) >= i and events(sup, "JvmStarted")[i - 1:], TIMEOUT, f"launch {i}",
                 interval=0.1)
        wait_for(lambda: f"Restoring job {JID}" in sup.logs().split("started the MiniCluster JVM")[-1], TIMEOUT,
                 "Flink's restoring line", interval=0.1)
        os.kill(int(open(spawns).read().split("\n")[i - 1].split()[0]), signal.SIGKILL)
    wait_for(lambda: spawn_count(spawns) >= 4, TIMEOUT, "a fourth launch", interval=0.1)
    never_demoted(sup, spawns, 4)


def test_an_out_of_memory_while_restoring_is_no_evidence(server, supervisors):
    """Attacks "an out-of-memory at start ... say[s] nothing about the snapshot, and an older restore point would
    rewind the job" against "It failed flinklet.restore.max-failures launches in a row that each got as far as
    restoring it": the JVM says it restores chk-5, then ends as -XX:+ExitOnOutOfMemoryError ends it ("Terminating
    due to java.lang.OutOfMemoryError: Java heap space", exit 3): the state does not fit the heap, and chk-4 would
    not fit either. With the default max-failures (3) and four such launches, chk-5 must not be given up."""
    body = "sleep 0.3\necho 'Terminating due to java.lang.OutOfMemoryError: Java heap space'\nexit 3"
    sup, spawns = slow_restore_setup(server, supervisors, {"flinklet.startup.timeout": "60 s",
                                                           "flinklet.restore.max-failures": "3"}, body)
    sup.start()
    wait_for(lambda: spawn_count(spawns) >= 4 or sup.proc.poll() is not None, TIMEOUT,
             f"4 launches\n{sup.logs()[-2000:]}", interval=0.1)
    never_demoted(sup, spawns, 4)


# ------------------------------------------------------------------------------------ one supervisor per job's files

@pytest.mark.parametrize("how", ["outside-dir", "linked-checkpoints"])
def test_a_copied_volume_sharing_a_checkpoint_directory_is_refused(server, supervisors, tmp_path, how):
    """Attacks "one supervisor per job's files" (issue 36, item 3): a volume copied with its configuration, whose
    checkpoint directory is the same as the running one's, either named outside the state directory
    (execution.checkpointing.dir) or through a checkpoints/ that is a link to it. The copy's flinklet exits 3 at
    once, naming the holder, and sweeps nothing: the running job's unfinished checkpoint (Flink writing chk-9,
    no _metadata yet) and its shared/ files stay."""
    outside = tmp_path / "bigger-disk" / "checkpoints"
    conf = {"execution.checkpointing.dir": f"file://{outside}"} if how == "outside-dir" else None
    sup = supervisors(server, conf=conf)
    prepare(sup)
    if how == "linked-checkpoints":
        outside.parent.mkdir(parents=True)
        os.rename(os.path.join(sup.state, "checkpoints"), outside)
        os.symlink(outside, os.path.join(sup.state, "checkpoints"))
    jobdir = outside / JID
    os.makedirs(jobdir / "shared", exist_ok=True)
    os.makedirs(jobdir / "chk-0", exist_ok=True)  # the canary of swept()
    for n in (1, 2, 3):
        d = jobdir / f"chk-{n}"
        d.mkdir(exist_ok=True)
        write(str(d / "state-0"))
        write(str(d / "_metadata"), meta(n, [f"file:{d / 'state-0'}", f"file:{jobdir / 'shared' / 'x3'}"]))
    write(str(jobdir / "shared" / "x3"))
    sup.start()
    swept(sup)
    running(sup)
    # what the running JVM writes now: a checkpoint in progress and a shared file no _metadata names yet
    (jobdir / "chk-9").mkdir()
    write(str(jobdir / "chk-9" / "in-flight"))
    write(str(jobdir / "shared" / "x9-in-flight"))
    copy = tmp_path / "copied-volume"
    subprocess.run(["cp", "-a", sup.state, str(copy)], check=True)
    assert os.path.islink(copy / "checkpoints") == (how == "linked-checkpoints")
    r = subprocess.run([BIN, "run", "-c", str(sup.config), "--state-dir", str(copy), "--flink-home",
                        str(sup.flink_home)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, r.stderr[-2000:]
    assert "checkpoint directory" in r.stderr and f"pid {sup.proc.pid}, state directory {sup.state}" in r.stderr, \
        r.stderr[-2000:]
    assert (jobdir / "chk-9" / "in-flight").exists() and (jobdir / "shared" / "x9-in-flight").exists()
    assert (jobdir / "chk-3" / "_metadata").exists() and (jobdir / "shared" / "x3").exists()
    assert sup.alive()
    assert os.path.exists(outside / ".flinklet-lock")
    assert sup.stop() == 0
    # with the first one gone, the copy may run: the lock went with its holder
    sup2 = subprocess.Popen([BIN, "run", "-c", str(sup.config), "--state-dir", str(copy), "--flink-home",
                             str(sup.flink_home)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        time.sleep(3)
        assert sup2.poll() is None, sup2.stderr.read()[-2000:]
    finally:
        os.killpg(sup2.pid, signal.SIGKILL)
        sup2.wait()

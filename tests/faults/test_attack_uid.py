"""Attack tests (from docs/operations.md "The state directory" and "Shared with its group, never with others",
docs/deployment.md "OpenShift", and docs/configuration.md flinklet.scratch.dir only): arbitrary uids in group 0 on
one volume, leftovers of another uid, and a local scratch directory that is not flinklet's own. flinklet runs as
other uids through setpriv (the tests run as root); the JVM is the fault suite's fake java (which records its
argv and creates a file and a directory on the volume as Flink would) against fakeflink's REST API. Run: make
faults FAULTS_ARGS='-k attack'."""
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import pathlib

import pytest

from attack_kit import UID_A, UID_B, AsUid, http, job_id, spawn_count, write_checkpoint
from conftest import BIN, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="needs root and setpriv to run flinklet as other uids")

UID_OTHER = 1005


@pytest.fixture
def base():
    """A directory every uid can traverse (pytest's own tmp_path is 0700 root)."""
    d = tempfile.mkdtemp(prefix="attack2-uid-", dir="/tmp")
    os.chmod(d, 0o755)
    tmp = os.path.join(d, "tmp")  # $TMPDIR of every run: sticky and world-writable like /tmp
    os.mkdir(tmp)
    os.chmod(tmp, 0o1777)
    yield pathlib.Path(d)
    if not os.environ.get("ATTACK_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


def stable(sup):
    def ok():
        assert sup.alive(), f"flinklet exited {sup.proc.returncode}:\n{sup.logs()[-3000:]}"
        st = sup.status()
        # a status.json of an earlier run says STABLE too: it must be this flinklet's
        return (st if st and st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] > 0
                and st["supervisor"]["pid"] == sup.proc.pid and spawn_count(sup.spawns) > 0 else None)
    return wait_for(ok, 30, "STABLE with a JVM", interval=0.1)


def state_dir(base, owner=9999, mode=0o2770):
    """The state directory as the image makes it: owned by 9999:0, 2770."""
    d = base / "state"
    d.mkdir()
    os.chown(d, owner, 0)
    os.chmod(d, mode)
    return str(d)


def walk(root):
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            yield os.path.join(dirpath, n)


@pytest.fixture
def made(server):
    sups = []

    def make(*a, **kw):
        s = AsUid(*a, **kw)
        sups.append(s)
        return s
    yield make
    for s in sups:
        s.cleanup()


# operations.md: "`flinklet run` sets its umask to `0007` (the JVM inherits it), so what flinklet and Flink create
# on the volume is mode `0660` (files) and `0770` (directories); the generated API token `http.token` is `0640`";
# "The group of new entries is the state directory's when the directory has the setgid bit, which `mkdir` passes on
# to new directories"; "The umask is not configurable". Run A is started with umask 077: nothing changes.
def test_modes_of_everything_made_on_a_setgid_volume_under_umask_077(server, base, made):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=UID_A, groups=(0,), umask=0o077)
    a.start()
    stable(a)
    wait_for(lambda: os.path.exists(os.path.join(a.state, "flink-made-dir", "flink-made-file")), 30, "JVM's file",
             interval=0.1)
    assert a.stop() == 0
    bad = []
    for p in walk(a.state):
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            continue
        perm = stat.S_IMODE(st.st_mode)
        if st.st_gid != 0:
            bad.append(f"{p}: group {st.st_gid}, not the state directory's (0)")
        if stat.S_ISDIR(st.st_mode):
            if perm != 0o2770:
                bad.append(f"{p}: directory {oct(perm)}, not 02770 (0770 with the setgid bit kept)")
        elif os.path.basename(p) == "http.token":
            if perm != 0o640:
                bad.append(f"{p}: token {oct(perm)}, not 0640")
        elif perm & 0o007 or perm & 0o060 != 0o060:
            if os.path.basename(p) != "lock" or perm & 0o007:
                bad.append(f"{p}: file {oct(perm)}, not 0660")
    assert not bad, "\n".join(bad)


# deployment.md: "what one uid writes on the volume ... the next uid of group 0 can lock, append to, replace and
# delete"; operations.md: "A later run under another uid of the same group can then take the lock, append to
# events.jsonl, replace the status". Run A (uid 1001, group 0) then run B (uid 1002, group 0) on one volume.
def test_a_second_uid_of_group_0_takes_over_the_volume(server, base, made):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=0, groups=(0,))
    a.start()
    stable(a)
    jid = job_id(a.state)
    tok = open(os.path.join(a.state, "http.token")).read().strip()
    assert a.stop() == 0
    events_a = len(a.events())
    b = made(base, server, "b", uid=UID_B, gid=0, groups=(0,))
    b.start()
    st = stable(b)
    assert job_id(b.state) == jid, "the second uid started under another job id"
    assert st["supervisor"]["pid"] == b.proc.pid
    assert os.stat(os.path.join(b.state, "status.json")).st_uid == UID_B, "status.json was not replaced by B"
    evs = b.events()
    assert len(evs) > events_a and any(str(b.proc.pid) in e["message"] for e in evs[events_a:])
    # A's token is readable by B (0640, group 0): kept, and it opens the control API
    code, body = http(b, "/api/v1/checkpoint", "POST", tok)
    assert code != 401, body
    assert b.stop() == 0


# operations.md: "An `http.token` an older flinklet made `0600` under another uid is replaced by a new one (with a
# warning): clients read the token from the file."
def test_a_0600_token_of_another_uid_is_replaced(server, base, made):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=0, groups=(0,))
    a.start()
    stable(a)
    assert a.stop() == 0
    tokf = os.path.join(a.state, "http.token")
    os.chmod(tokf, 0o600)
    old = open(tokf).read().strip()
    b = made(base, server, "b", uid=UID_B, gid=0, groups=(0,))
    b.start()
    stable(b)
    st = os.stat(tokf)
    assert st.st_uid == UID_B and stat.S_IMODE(st.st_mode) == 0o640, (st.st_uid, oct(st.st_mode))
    new = open(tokf).read().strip()
    assert new != old and len(new) >= 16
    assert "http.token" in b.logs() and "warn" in b.logs()
    assert http(b, "/api/v1/checkpoint", "POST", new)[0] != 401
    assert http(b, "/api/v1/checkpoint", "POST", old)[0] == 401
    assert b.stop() == 0


# A volume an older flinklet (or a hand) left with every file 0600 under uid A, holding a checkpoint: uid B of group
# 0 can read none of them. contract §1: exit 3 "the environment is unusable (state directory ... not writable)";
# §6 "never from empty state while a checkpoint or savepoint exists". B must either refuse (exit 3, naming the
# file) or carry on from the checkpoint: never start the job empty under a new job id.
@pytest.mark.parametrize("which", ["all", "job-id", "status.json", "lock", "spec.stable.yaml"])
def test_leftover_0600_files_of_another_uid_never_start_empty(server, base, made, which):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=0, groups=(0,))
    a.start()
    stable(a)
    assert a.stop() == 0
    jid = job_id(a.state)
    d = write_checkpoint(a.state, jid, 7)
    for p in [os.path.dirname(d), d, os.path.join(d, "_metadata")]:
        os.chown(p, UID_A, 0)
    for p in walk(a.state):
        if os.path.isfile(p) and not p.startswith(os.path.join(a.state, "checkpoints")) and \
                which in ("all", os.path.basename(p)):
            os.chmod(p, 0o600)
    b = made(base, server, "b", uid=UID_B, gid=0, groups=(0,))
    b.start()

    def outcome():
        if not b.alive():
            return "exited"
        if spawn_count(b.spawns):
            return "launched"
        return None
    what = wait_for(outcome, 30, "an exit or a launch", interval=0.1)
    if what == "exited":
        assert b.proc.returncode == 3, b.logs()[-3000:]
        assert any(n in b.logs() for n in ("job-id", "job id", "events.jsonl", "status.json", "lock")), b.logs()[-2000:]
    else:
        st = stable(b)
        assert job_id(b.state) == jid, "started under a new job id"
        assert st["restoredFrom"]["kind"] == "checkpoint", st["restoredFrom"]
        b.stop()


# A read-only events.jsonl (0440, group read only) left by uid A: B cannot append to it. operations.md: "A later run
# ... can then ... append to events.jsonl"; contract §1: exit 3 when the state directory is not writable. Either B
# records its events (its start is in events.jsonl), or it refuses with exit 3 naming the file. Never an event log
# that silently stops.
def test_a_read_only_event_log_of_another_uid(server, base, made):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=0, groups=(0,))
    a.start()
    stable(a)
    assert a.stop() == 0
    os.chmod(os.path.join(a.state, "events.jsonl"), 0o440)
    b = made(base, server, "b", uid=UID_B, gid=0, groups=(0,))
    b.start()
    what = wait_for(lambda: "exited" if not b.alive() else ("up" if spawn_count(b.spawns) else None), 30,
                    "exit or JVM", interval=0.1)
    # operations.md: "an events.jsonl the uid cannot write ... flinklet refuses to start (exit 3) naming it"
    assert what == "exited", f"B started a JVM with an event log it cannot write:\n{b.logs()[-3000:]}"
    assert b.proc.returncode == 3 and "events.jsonl" in b.logs(), b.logs()[-3000:]
    assert spawn_count(b.spawns) == 0


# ---- flinklet.scratch.dir -----------------------------------------------------------------------------------
# configuration.md: "The default directory must be flinklet's own (owned by its user, writable by no one else; a
# symlink is refused); a directory you name must be a directory. When it cannot be used flinklet says so and falls
# back to `<state dir>/tmp`".

def tmpdir_of(sup):
    for a in sup.argv_of_spawn():
        if a.startswith("-Djava.io.tmpdir="):
            return a.split("=", 1)[1]
    raise AssertionError(f"no -Djava.io.tmpdir in {sup.argv_of_spawn()}")


def default_scratch(server, base, made):
    """Runs once to learn the default scratch directory; returns it (gone after the clean exit or not)."""
    state_dir(base, owner=0)
    s = made(base, server, "probe")
    s.start()
    stable(s)
    scratch = os.path.dirname(tmpdir_of(s))
    assert s.stop() == 0
    assert scratch.startswith(str(base / "tmp")), scratch
    return scratch


def assert_fell_back(sup, hostile):
    stable(sup)
    tdir = tmpdir_of(sup)
    assert not os.path.realpath(tdir).startswith(os.path.realpath(hostile)), f"used {hostile}: {tdir}"
    assert tdir.startswith(os.path.join(sup.state, "tmp")), tdir
    assert "scratch" in sup.logs(), "flinklet did not say why it fell back"


def test_scratch_dir_it_made_itself_is_its_own_on_the_next_start(server, base, made):
    scratch = default_scratch(server, base, made)
    s = made(base, server, "again")
    s.start()
    stable(s)
    assert os.path.dirname(tmpdir_of(s)) == scratch, "its own scratch directory was refused the second time"
    st = os.stat(scratch)
    assert stat.S_IMODE(st.st_mode) & 0o022 == 0, f"scratch dir {oct(st.st_mode)} is writable by others"
    assert s.stop() == 0


def test_scratch_dir_made_by_another_uid_is_refused(server, base, made):
    scratch = default_scratch(server, base, made)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(os.path.join(scratch, "jvm"))
    open(os.path.join(scratch, "jvm", "theirs"), "w").close()
    for p in (scratch, os.path.join(scratch, "jvm")):
        os.chown(p, UID_OTHER, UID_OTHER)
        os.chmod(p, 0o777)
    s = made(base, server, "s")
    s.start()
    assert_fell_back(s, scratch)
    assert os.path.exists(os.path.join(scratch, "jvm", "theirs")), "flinklet emptied another user's directory"
    assert s.stop() == 0


def test_scratch_dir_symlink_is_refused_and_its_target_untouched(server, base, made):
    scratch = default_scratch(server, base, made)
    shutil.rmtree(scratch, ignore_errors=True)
    victim = base / "victim"
    (victim / "jvm").mkdir(parents=True)
    (victim / "jvm" / "precious").write_text("keep")
    os.chmod(victim, 0o700)
    os.symlink(victim, scratch)
    s = made(base, server, "s")
    s.start()
    assert_fell_back(s, str(victim))
    assert (victim / "jvm" / "precious").exists(), "flinklet followed the symlink and emptied its target"
    assert s.stop() == 0
    assert (victim / "jvm" / "precious").exists()


def test_scratch_dir_writable_by_others_is_refused(server, base, made):
    scratch = default_scratch(server, base, made)
    shutil.rmtree(scratch, ignore_errors=True)
    os.mkdir(scratch)
    os.chmod(scratch, 0o777)
    s = made(base, server, "s")
    s.start()
    assert_fell_back(s, scratch)
    assert s.stop() == 0


def test_a_named_scratch_dir_that_is_a_file_falls_back(server, base, made):
    state_dir(base, owner=0)
    f = base / "not-a-dir"
    f.write_text("x")
    s = made(base, server, "s", conf={"flinklet.scratch.dir": str(f)})
    s.start()
    assert_fell_back(s, str(f))
    assert f.read_text() == "x"
    assert s.stop() == 0


# A scratch directory of uid A left in a shared /tmp (an emptyDir that outlived a container) and run B: the default
# is no longer B's own, so B falls back and starts the job anyway.
def test_scratch_dir_of_the_previous_uid_does_not_stop_the_next(server, base, made):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=0, groups=(0,))
    a.start()
    stable(a)
    scratch = os.path.dirname(tmpdir_of(a))
    # A is killed: its scratch directory stays behind
    os.killpg(a.proc.pid, signal.SIGKILL)
    a.proc.wait()
    wait_for(lambda: a.jvm_pid() <= 0 or not os.path.exists(f"/proc/{a.jvm_pid()}"), 10, "A's JVM gone", interval=0.1)
    assert os.path.isdir(scratch), "no scratch dir left to attack with"
    b = made(base, server, "b", uid=UID_B, gid=0, groups=(0,))
    b.start()
    assert_fell_back(b, scratch)
    assert b.stop() == 0


def test_a_regular_file_at_the_default_scratch_path_falls_back(server, base, made):
    scratch = default_scratch(server, base, made)
    shutil.rmtree(scratch, ignore_errors=True)
    with open(scratch, "w") as f:
        f.write("someone's file")
    s = made(base, server, "s")
    s.start()
    assert_fell_back(s, scratch)
    assert open(scratch).read() == "someone's file"
    assert s.stop() == 0


# configuration.md, flinklet.scratch.dir: "emptied for each launch" and operations.md: "removed at a clean exit".
def test_scratch_is_emptied_for_each_launch_and_removed_at_a_clean_exit(server, base, made):
    scratch = default_scratch(server, base, made)
    assert not os.path.exists(scratch), "the scratch directory outlived a clean exit"
    s = made(base, server, "s")
    s.start()
    stable(s)
    left = os.path.join(tmpdir_of(s), "left-by-this-jvm")
    open(left, "w").close()
    jvm = s.jvm_pid()
    os.kill(jvm, signal.SIGKILL)
    wait_for(lambda: spawn_count(s.spawns) >= 2, 30, "the restart", interval=0.1)
    wait_for(lambda: not os.path.exists(left), 30, "the earlier JVM's scratch files gone", interval=0.1)
    assert s.stop() == 0
    assert not os.path.exists(scratch)


# configuration.md: flinklet.http.token-file "the bearer token of the control API ..., at least 16 characters: a
# Kubernetes secret mount, say". A secret mounted read-only (root's, 0440 group 0) and flinklet under an arbitrary
# uid of group 0: it reads it, does not try to replace it, and the API takes it.
def test_a_mounted_token_of_another_owner_is_used_as_it_is(server, base, made):
    state_dir(base)
    secret = base / "secret"
    secret.mkdir()
    tok = "s3cr3t-token-from-a-kubernetes-secret"
    (secret / "token").write_text(tok + "\n")
    os.chmod(secret / "token", 0o440)
    os.chmod(secret, 0o555)
    b = made(base, server, "b", uid=UID_B, gid=0, groups=(0,),
             conf={"flinklet.http.token-file": str(secret / "token")})
    b.start()
    stable(b)
    assert (secret / "token").read_text().strip() == tok
    assert http(b, "/api/v1/checkpoint", "POST", tok)[0] != 401
    assert http(b, "/api/v1/checkpoint", "POST", "x" * 20)[0] == 401
    assert b.stop() == 0


# README: "`flinklet savepoint --state-dir DIR` finds both [the endpoint and the token] by itself"; operations.md: the
# token is "0640: readable by a later run under another uid of the state directory's group". A client of another uid
# in group 0 (a debug container, a CronJob) asks for a checkpoint with the token it finds on the volume.
def test_a_client_of_another_uid_in_group_0_uses_the_token_on_the_volume(server, base, made):
    state_dir(base)
    a = made(base, server, "a", uid=UID_A, gid=0, groups=(0,))
    a.start()
    stable(a)
    r = subprocess.run(["setpriv", "--reuid=1003", "--regid=0", "--groups=0", "--", BIN, "checkpoint", "--state-dir",
                        a.state], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # without --wait the command returns once the supervisor accepted it (202); Flink is asked just after
    wait_for(lambda: [q for q in server.requests if q[1] == "POST" and "/checkpoints" in q[2]], 30,
             "a checkpoint asked of Flink", interval=0.1)
    assert a.stop() == 0

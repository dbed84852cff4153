"""Issue 13, attacked from the outside: the job's state only moves forward. Every start restores the newest
restore point (newest = the highest checkpoint id), and every stop of a running job leaves a savepoint.

What is checked comes from Flink and the file system, not from flinklet's own account: the checkpoint id in
each snapshot's `_metadata`, the `-s` argument of the JVM flinklet launched, Flink's REST API
(`/jobs/overview`, `/jobs/<id>/checkpoints`) and the JVM's log, and the committed output of the exactly-once
test job (tests/jobs/check_output.py: no duplicate, no gap).

Docs held to: docs/operations.md "Restarts and restore points" and "When a start fails", "Signals",
"Exit codes of `flinklet run`"; docs/configuration.md `flinklet.restore.fallback`; docs/reliability.md
"Guarantees"; the contract, section 6.

FLINKLET_NEVER_REWIND_SEED seeds the random SIGTERM moments (printed; a random seed when unset);
FLINKLET_NEVER_REWIND_MOMENTS sets how many there are (20: 14 on a fresh start, 6 after a kill -9 of the JVM).
Run with -s to see the seed and the table of moments.
"""
import datetime
import glob
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import time

import pytest

import conftest
from conftest import check_output, pid_alive, wait_for
from testkit import hold_port, norm

pytestmark = pytest.mark.heavy  # make e2e only, not e2e-asan (conftest.py)

MAGIC = 0x4960672D  # Flink's checkpoint metadata magic number


# ---- what is on disk, read without flinklet --------------------------------------------------------------------

def snapshot_id(directory):
    """The checkpoint id a snapshot's _metadata records (magic, version, id), or None when it is not complete."""
    try:
        with open(os.path.join(directory, "_metadata"), "rb") as fh:
            head = fh.read(16)
    except OSError:
        return None
    if len(head) < 16:
        return None
    magic, _version, cid = struct.unpack(">iiq", head)
    return cid if magic == MAGIC else None


def snapshots(state, job_id):
    """[(id, kind, path)] of every complete checkpoint and savepoint of the job on the volume, by id."""
    out = []
    for d in glob.glob(os.path.join(state, "checkpoints", job_id, "chk-*")):
        if re.fullmatch(r"chk-\d+", os.path.basename(d)) and snapshot_id(d) is not None:
            out.append((snapshot_id(d), "checkpoint", d))
    for d in glob.glob(os.path.join(state, "savepoints", f"savepoint-{job_id[:6]}-*")):
        if snapshot_id(d) is not None:
            out.append((snapshot_id(d), "savepoint", d))
    return sorted(out)


def newest(state, job_id):
    s = snapshots(state, job_id)
    return s[-1] if s else None


def checkpoint_ids(state, job_id):
    return [i for i, kind, _ in snapshots(state, job_id) if kind == "checkpoint"]


# ---- the JVM, seen from /proc and from Flink --------------------------------------------------------------------

def java_children(pid):
    kids = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(task) as fh:
                kids += [int(k) for k in fh.read().split()]
        except OSError:
            pass
    out = []
    for k in kids:
        try:
            with open(f"/proc/{k}/comm") as fh:
                if fh.read().strip() == "java":
                    out.append(k)
        except OSError:
            pass
    return out


def wait_jvm(f, not_pids=(), timeout=120):
    """(pid, monotonic time first seen) of a java child of flinklet not in not_pids, polled every 10 ms."""
    def new_jvm():
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode} before starting a JVM:\n{f.logs()[-4000:]}")
        return next((p for p in java_children(f.proc.pid) if p not in not_pids), None)
    pid = wait_for(new_jvm, timeout, "flinklet to start a JVM", interval=0.01)
    return pid, time.monotonic()


def restore_arg(pid):
    """The restore point flinklet passed to Flink (`-s PATH`), or None; read from the JVM's command line."""
    for _ in range(100):  # right after fork the child may still show flinklet's own command line
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().decode().split("\0")
        except OSError:
            return "(the JVM is gone)"
        if "dev.flinklet.launcher.FlinkletLauncher" in argv or "org.apache.flink.client.cli.CliFrontend" in argv:
            return norm(argv[argv.index("-s") + 1]) if "-s" in argv else None
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} does not look like the MiniCluster JVM: {argv}")


def flink_restored(f, job_id, timeout=60):
    """What Flink itself says the running job was restored from: (id, is_savepoint, path)."""
    def ask():
        try:
            r = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["restored"]
            return r or "none"
        except OSError:  # a job still initializing answers 500 for a moment
            return None
    r = wait_for(ask, timeout, "Flink to report what it restored")
    return None if r == "none" else (r["id"], r["is_savepoint"], norm(r["external_path"]))


def flink_job_running(f):
    """True when Flink's own /jobs/overview says the job is RUNNING (asked synchronously)."""
    try:
        return any(j["state"] == "RUNNING" for j in f.rest("/jobs/overview", timeout=3)["jobs"])
    except (OSError, ValueError, KeyError):
        return False


def log_time(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def flink_running_at(f, job_id, since):
    """Wall-clock time of the JVM log line saying the job switched to RUNNING at or after `since`, or None."""
    pat = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} .*Job .*\(" + job_id + r"\) switched from state \w+ to "
                     r"RUNNING", re.M)
    for m in pat.finditer(f.logs()):
        t = log_time(m.group(0))
        if t >= since - 0.05:
            return t
    return None


def read_job_id(state):
    with open(os.path.join(state, "job-id")) as fh:
        return fh.read().strip()


def events_since(f, t_ms, kind=None):
    return [e for e in f.events() if e["timeMs"] >= t_ms and (kind is None or e["type"] == kind)]


def now_ms():
    return int(time.time() * 1000)


def wait_stable_new_jvm(f, old_pids, timeout=180):
    def again():
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-6000:]}")
        st = f.status()
        ok = (st and st["jvm"]["pid"] not in (0, *old_pids) and st["lifecycleState"] == "STABLE"
              and st["jobStatus"]["state"] == "RUNNING" and pid_alive(st["jvm"]["pid"]))
        return st if ok else None
    return wait_for(again, timeout, "the job RUNNING again in a new JVM")


def finish_exactly_once(f, job_id):
    """Two more checkpoints, a stop with its savepoint, and the committed output checked for loss and duplicates."""
    last = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    f.wait_checkpoint((last["id"] if last else 0) + 2, timeout=90)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary
    return summary


def kill_jvm_and_note_newest(f, job_id):
    """kill -9 of the running JVM; returns (its pid, the newest complete snapshot on the volume once it is dead)."""
    pid = f.status()["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), 30, "the killed JVM to be gone", interval=0.01)
    return pid, newest(f.state, job_id)


def assert_no_rewind_events(f, since_ms, point):
    """Nothing was given up: no demotion, and every restore flinklet announced names the newest point. The one
    skip that gives nothing up: a checkpoint other than the newest complete one that has no _metadata: one newer
    that the kill interrupted before Flink wrote its _metadata (checkpoints run every second, so a kill often lands
    in one), or one older that Flink aborted (on a loaded machine a checkpoint can expire) and had not yet removed
    when the kill came."""
    newest_id = int(point.rsplit("-", 1)[1])

    def interrupted(e):
        m = re.search(r"/chk-(\d+)/_metadata: no _metadata \(incomplete\)$", e["message"])
        return e["type"] == "RestorePointSkipped" and m is not None and int(m.group(1)) != newest_id
    demoted = [e["message"] for e in events_since(f, since_ms) if e["type"] in ("RestorePointDemoted",
                                                                              "RestoreFailed",
                                                                              "RestorePointSkipped")
               and not interrupted(e)]
    assert not demoted, f"a startup failure unrelated to {point} made flinklet give it up: {demoted}"
    restoring = [e["message"] for e in events_since(f, since_ms, "Restoring")]
    assert restoring and all(point in m for m in restoring), restoring


# ---- 1. startup failures that say nothing about the restore point ---------------------------------------------

def test_rest_port_held_while_restarting_keeps_the_newest_checkpoint(flinklets):
    """The REST port is taken by another process for 8 s while flinklet restarts the JVM after a crash: the
    starts that fail on it must not cost the newest checkpoint (operations.md, "When a start fails": "a port
    held by another process ... say nothing about the snapshot")."""
    f = flinklets().start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    t_kill = now_ms()
    pid, point = kill_jvm_and_note_newest(f, job_id)
    holder = hold_port(f.port)
    held_at = time.monotonic()
    try:
        # 8 s, and at least until one start has failed on the port (else nothing was tested)
        wait_for(lambda: time.monotonic() - held_at >= 8
                 and len(events_since(f, t_kill, "JvmExited")) >= 2, 90,
                 "a JVM start to fail on the held port")
    finally:
        holder.close()
    assert "Address already in use" in f.logs() or "BindException" in f.logs(), "no start failed on the port"
    wait_stable_new_jvm(f, [pid])
    rid, is_sp, path = flink_restored(f, job_id)
    assert (rid, path) == (point[0], norm(point[2])), (
        f"Flink restored {path} (id {rid}), the newest checkpoint at the crash was {point[2]} (id {point[0]})")
    assert_no_rewind_events(f, t_kill, f"chk-{point[0]}")
    retry = events_since(f, t_kill, "RestoreRetry")
    assert retry and any("Address already in use" in e["message"] or "BindException" in e["message"]
                         for e in retry), [e["message"] for e in retry]
    finish_exactly_once(f, job_id)


def test_job_jar_briefly_unreadable_keeps_the_newest_checkpoint(tmp_path, flinklets):
    """The job's jar is unreadable (chmod 000) while flinklet restarts the JVM after a crash, then readable
    again: the next RUNNING restores the newest checkpoint ("a jar missing for a moment ... says nothing about
    the snapshot"). As root, flinklet runs without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so that mode 000
    means what it says."""
    jar = tmp_path / "usrlib" / "job.jar"
    jar.parent.mkdir()
    shutil.copy(conftest.JOBS_JAR, jar)
    wrapper = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("as root, util-linux setpriv is needed to make chmod 000 effective")
        wrapper = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    f = flinklets(jar=str(jar)).start(wrapper=wrapper)
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    t_kill = now_ms()
    os.chmod(jar, 0)
    try:
        pid, point = kill_jvm_and_note_newest(f, job_id)
        # flinklet refuses to start a JVM on a jar it cannot read (JarUnusable: it waits for the jar), or a start
        # fails on it: then the jar comes back
        wait_for(lambda: len(events_since(f, t_kill, "JvmExited")) >= 2 or events_since(f, t_kill, "JarUnusable")
                 or events_since(f, t_kill, "RestoreRetry") or f.proc.poll() is not None, 90,
                 "a JVM start to fail on the unreadable jar, or flinklet to wait for it")
    finally:
        os.chmod(jar, 0o644)
    wait_stable_new_jvm(f, [pid])
    rid, is_sp, path = flink_restored(f, job_id)
    assert (rid, path) == (point[0], norm(point[2])), (
        f"Flink restored {path} (id {rid}), the newest checkpoint at the crash was {point[2]} (id {point[0]})")
    assert_no_rewind_events(f, t_kill, f"chk-{point[0]}")
    # said either way: the wait for the jar (operations.md, Pre-flight) or the retry of the same point
    # (operations.md, 'When a start fails')
    assert events_since(f, t_kill, "JarUnusable") or events_since(f, t_kill, "RestoreRetry"), \
        "neither a JarUnusable nor a RestoreRetry event"
    finish_exactly_once(f, job_id)


def test_one_startup_timeout_keeps_the_newest_checkpoint(flinklets):
    """The restarted JVM, once it has begun restoring, stalls (SIGSTOP) past flinklet.startup.timeout and is
    killed by flinklet for it, once: the next JVM restores the same newest checkpoint (operations.md: "the
    startup timeout ... say nothing about the snapshot"; "slowness is never evidence": with
    flinklet.restore.max-failures 1 the timeout still does not count). A frozen JVM's REST API does not answer,
    so nothing is visibly restoring and the timeout is not extended."""
    f = flinklets(conf={"flinklet.startup.timeout": "40 s", "flinklet.jvm.stop-grace-period": "3 s",
                        "flinklet.restore.max-failures": "1"}).start()
    first, _ = wait_jvm(f)
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    t_kill = now_ms()
    _, point = kill_jvm_and_note_newest(f, job_id)
    stalled, _ = wait_jvm(f, not_pids=[first])
    assert restore_arg(stalled) == norm(point[2])
    wait_for(lambda: re.search(r"Restoring job " + job_id + r" from Checkpoint " + str(point[0]), f.logs()), 120,
             "the new JVM to begin restoring", interval=0.05)
    os.kill(stalled, signal.SIGSTOP)
    try:
        wait_for(lambda: not pid_alive(stalled), 90, "flinklet to kill the JVM at its startup timeout")
    finally:
        if pid_alive(stalled):
            os.kill(stalled, signal.SIGKILL)
    wait_stable_new_jvm(f, [first, stalled])
    rid, is_sp, path = flink_restored(f, job_id)
    assert (rid, path) == (point[0], norm(point[2])), (
        f"Flink restored {path} (id {rid}), the newest checkpoint at the crash was {point[2]} (id {point[0]})")
    assert_no_rewind_events(f, t_kill, f"chk-{point[0]}")
    finish_exactly_once(f, job_id)


def test_a_restore_slower_than_the_startup_timeout_is_waited_for(tmp_path, flinklets):
    """After a kill -9 the restore takes longer than flinklet.startup.timeout (the Count tasks stay INITIALIZING
    for 40 s, as a large state on a slow volume keeps them; the startup timeout is 15 s) with
    flinklet.restore.max-failures 1: the same JVM is let go on (StartupExtended), never stopped for it, and the job
    runs from the newest checkpoint at the kill, exactly once (issue 26: slowness is never evidence)."""
    delay = str(tmp_path / "open-delay-ms")
    f = flinklets(conf={"flinklet.startup.timeout": "15 s", "flinklet.restore.max-failures": "1"},
                  job={"args": ["--rate", "100", "--keys", "8", "--output", "OUT", "--open-delay-file", delay]}).start()
    first, _ = wait_jvm(f)
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    with open(delay, "w") as fd:
        fd.write("40000")
    t_kill = now_ms()
    _, point = kill_jvm_and_note_newest(f, job_id)
    slow, _ = wait_jvm(f, not_pids=[first])
    assert restore_arg(slow) == norm(point[2])
    ext = wait_for(lambda: events_since(f, t_kill, "StartupExtended"), 90, "the startup timeout extended")
    assert f"chk-{point[0]}" in ext[0]["message"], ext
    os.unlink(delay)  # the next open() (a later restart) is quick again
    st = wait_stable_new_jvm(f, [first])
    assert st["jvm"]["pid"] == slow, f"the slow restore (pid {slow}) was stopped: now pid {st['jvm']['pid']}"
    assert not events_since(f, t_kill, "StartupTimeout"), events_since(f, t_kill, "StartupTimeout")
    rid, _, path = flink_restored(f, job_id)
    assert (rid, path) == (point[0], norm(point[2])), (rid, path, point)
    assert_no_rewind_events(f, t_kill, f"chk-{point[0]}")
    finish_exactly_once(f, job_id)


def test_kills_while_restoring_never_count_against_the_newest_checkpoint(flinklets):
    """The JVM is killed (kill -9, from outside) right after Flink began restoring the newest checkpoint, twice,
    with flinklet.restore.max-failures 1: operations.md "A kill from outside never counts", so the next start
    still restores that checkpoint."""
    f = flinklets(conf={"flinklet.restart.backoff.initial": "200 ms", "flinklet.restore.max-failures": "1"}).start()
    first, _ = wait_jvm(f)
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    t_kill = now_ms()
    _, point = kill_jvm_and_note_newest(f, job_id)
    gone = [first]
    for attempt in range(2):
        jvm, _ = wait_jvm(f, not_pids=gone)
        assert restore_arg(jvm) == norm(point[2]), f"kill {attempt}: launched with -s {restore_arg(jvm)}"
        seen = len(re.findall(r"Restoring job " + job_id + r" from Checkpoint", f.logs()))
        wait_for(lambda: len(re.findall(r"Restoring job " + job_id + r" from Checkpoint", f.logs())) > seen, 120,
                 "the new JVM to begin restoring", interval=0.05)
        os.kill(jvm, signal.SIGKILL)
        gone.append(jvm)
    wait_stable_new_jvm(f, gone)
    rid, is_sp, path = flink_restored(f, job_id)
    assert (rid, path) == (point[0], norm(point[2])), (
        f"Flink restored {path} (id {rid}), the newest checkpoint at the first kill was {point[2]} (id {point[0]})")
    assert_no_rewind_events(f, t_kill, f"chk-{point[0]}")
    finish_exactly_once(f, job_id)


# ---- 2. a genuinely corrupt newest checkpoint ------------------------------------------------------------------

@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A volume with a manual savepoint (id k) and, newer, the two retained checkpoints N-1 and N, each with its
    state in files of its own (state.storage.fs.memory-threshold: 0), left by a last-state stop. Tests copy it
    to <base>/state (cp -a) and run on that same path, so that the absolute paths in the _metadata files hold."""
    base = tmp_path_factory.mktemp("pristine")
    f = conftest.Flinklet(base, job={"upgradeMode": "last-state"},
                          conf={"state.storage.fs.memory-threshold": "0"})
    try:
        f.start()
        job_id = f.wait_stable()["jobStatus"]["jobId"]
        f.wait_checkpoint(2)
        assert f.http("/api/v1/savepoint", method="POST", token=f.token(), body=b"")[0] == 202
        wait_for(lambda: f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], 60, "a manual savepoint")
        sp_id = max(i for i, kind, _ in snapshots(f.state, job_id) if kind == "savepoint")
        f.wait_checkpoint(sp_id + 3)
        f.signal(signal.SIGTERM)
        assert f.wait_exit(40) == 0
    finally:
        f.stop()
    ids = checkpoint_ids(f.state, job_id)
    assert len(ids) >= 2 and ids[-2] > sp_id, (ids, sp_id)
    os.rename(f.state, str(base / "pristine"))
    return {"base": base, "job_id": job_id, "savepoint": sp_id, "newest": ids[-1], "previous": ids[-2]}


def restore_pristine(pristine, how="cp -a"):
    state = str(pristine["base"] / "state")
    shutil.rmtree(state, ignore_errors=True)
    src = str(pristine["base"] / "pristine")
    if how == "cp -a":
        subprocess.run(["cp", "-a", src, state], check=True)
    else:  # `cp -r pristine/* state/`: what the shell's glob gives, in its (alphabetical) order; no -p
        os.makedirs(state)
        subprocess.run(["cp", "-r", *sorted(glob.glob(os.path.join(src, "*"))), state], check=True)
    return state


def corrupt(state, job_id, cid, how):
    chk = os.path.join(state, "checkpoints", job_id, f"chk-{cid}")
    meta = os.path.join(chk, "_metadata")
    if how == "truncated-half":  # a torn write: Flink's header intact, the rest cut off
        with open(meta, "r+b") as fh:
            fh.truncate(os.path.getsize(meta) // 2)
        return meta, r"EOF|truncat|end of|short|Could not read|corrupt|incomplete"
    if how == "truncated-header":  # cut inside the header: visible without Flink
        with open(meta, "r+b") as fh:
            fh.truncate(10)
        return meta, r"EOF|truncat|short|magic|Could not read|corrupt|incomplete"
    # a state file the _metadata refers to is gone
    files = sorted(p for p in os.listdir(chk) if p != "_metadata")
    assert files, f"{chk} has no state file of its own"
    with open(meta, "rb") as fh:
        body = fh.read()
    victim = next(p for p in files if p.encode() in body)
    os.unlink(os.path.join(chk, victim))
    return os.path.join(chk, victim), re.escape(victim) + r"|FileNotFound|NoSuchFile|No such file"


@pytest.mark.parametrize("how", ["truncated-half", "truncated-header", "missing-state-file"])
def test_corrupt_newest_checkpoint_is_skipped_and_said(pristine, flinklets, how):
    """Issue 13: a corrupt newest checkpoint "is skipped with an event and a status condition that say which
    point was skipped and why". operations.md: a point Flink cannot read is given up with RestoreFailed and
    RestorePointDemoted events and a status `error` "saying which point was given up, why, where the job
    restores from instead" (one unreadable before launch: a RestorePointSkipped event); the job restores the
    previous checkpoint."""
    job_id, newest_id, previous = pristine["job_id"], pristine["newest"], pristine["previous"]
    state = restore_pristine(pristine)
    what, why = corrupt(state, job_id, newest_id, how)
    t0 = now_ms()
    f = flinklets(state_dir=state, job={"upgradeMode": "last-state"}).start()
    st = f.wait_stable(240)
    rid, is_sp, path = flink_restored(f, job_id)
    assert (rid, is_sp) == (previous, False), f"Flink restored {path} (id {rid}), expected chk-{previous}"
    said = [e for e in events_since(f, t0) if e["type"] in ("RestorePointSkipped", "RestoreFailed",
                                                            "RestorePointDemoted")]
    assert any(f"chk-{newest_id}" in e["message"] and re.search(why, e["message"]) for e in said), (
        f"no event names chk-{newest_id} and why ({why}) after {how} of {what}: "
        f"{[(e['type'], e['message']) for e in said]}")
    err = st["error"] or ""
    assert f"chk-{newest_id}" in err and re.search(why, err) and f"chk-{previous}" in err, (
        f"the status does not say that chk-{newest_id} was skipped, why ({why}), and that chk-{previous} is "
        f"used instead: error={st['error']!r}; events {[(e['type'], e['message']) for e in said]}")


@pytest.mark.parametrize("how", ["truncated-half", "truncated-header", "missing-state-file"])
def test_corrupt_newest_checkpoint_with_fallback_never_stops_with_exit_1(pristine, flinklets, how):
    """docs/configuration.md flinklet.restore.fallback: `never` "stops instead (lifecycle FAILED, exit 1) so
    that the job is never rewound"; operations.md: "a RestoreFailed event, error naming the point, exit code 1"."""
    job_id, newest_id, previous = pristine["job_id"], pristine["newest"], pristine["previous"]
    state = restore_pristine(pristine)
    corrupt(state, job_id, newest_id, how)
    t0 = now_ms()
    f = flinklets(state_dir=state, job={"upgradeMode": "last-state"}, conf={"flinklet.restore.fallback": "never"})
    restores = re.compile(r"Restoring job \S+ from (?:Checkpoint|Savepoint) (\d+)")

    def rewound():
        return [int(i) for i in restores.findall(f.logs()) if int(i) != newest_id]
    f.start()
    wait_for(lambda: f.proc.poll() is not None or rewound(), 240, "flinklet to stop (or to rewind the job)")
    assert not rewound(), (
        f"with fallback never Flink was made to restore id(s) {rewound()} instead of chk-{newest_id} "
        f"(previous is chk-{previous}): {[(e['type'], e['message']) for e in events_since(f, t0)]}")
    code = f.wait_exit(60)
    assert code == 1, f"exit code {code}\n{f.logs()[-3000:]}"
    st = f.status()
    assert st["lifecycleState"] == "FAILED"
    assert f"chk-{newest_id}" in (st["error"] or ""), st["error"]
    failed = events_since(f, t0, "RestoreFailed")
    assert any(f"chk-{newest_id}" in e["message"] for e in failed), [e["message"] for e in events_since(f, t0)]


# ---- 3. a volume copied without its times ----------------------------------------------------------------------

@pytest.mark.parametrize("how", ["cp -r", "savepoint touched"])
def test_copied_or_touched_volume_restores_the_highest_id(pristine, flinklets, how):
    """The newest restore point is the highest checkpoint id (the brief; contract section 6: "never from an
    older one"), whatever the files' times say: a volume copied with `cp -r` (no -p; the savepoints are copied
    last), or an older savepoint's files touched, must still restore checkpoint N, not the savepoint before it
    (which would repeat the output committed after it)."""
    job_id, newest_id, sp_id = pristine["job_id"], pristine["newest"], pristine["savepoint"]
    if how == "cp -r":
        state = restore_pristine(pristine, how="cp -r")
    else:
        state = restore_pristine(pristine)
        for root, _, files in os.walk(os.path.join(state, "savepoints")):
            for name in files:
                os.utime(os.path.join(root, name))
    assert newest(state, job_id)[:2] == (newest_id, "checkpoint")
    sp_meta = glob.glob(os.path.join(state, "savepoints", "*", "_metadata"))
    chk_meta = os.path.join(state, "checkpoints", job_id, f"chk-{newest_id}", "_metadata")
    assert sp_meta and all(os.path.getmtime(m) > os.path.getmtime(chk_meta) for m in sp_meta), (
        "the scenario needs the savepoint's files to look newer than the newest checkpoint's")
    f = flinklets(state_dir=state, job={"upgradeMode": "last-state"}).start()
    first, _ = wait_jvm(f)
    launched = restore_arg(first)
    f.wait_stable(180)
    rid, is_sp, path = flink_restored(f, job_id)
    last = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    f.wait_checkpoint((last["id"] if last else 0) + 2, timeout=90)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    _, summary = check_output(f.output)  # a rewind repeats the output committed after the point restored
    assert (rid, is_sp) == (newest_id, False), (
        f"after {how}: flinklet launched with -s {launched}; Flink restored {path} (id {rid}, savepoint {is_sp}), "
        f"the highest id is chk-{newest_id} (the savepoint is id {sp_id}); output now: {summary}")
    assert summary["duplicates"] == 0 and summary["gaps"] == 0, summary


# ---- 4. SIGTERM at random moments of a start --------------------------------------------------------------------

def test_sigterm_at_random_moments_of_a_start_leaves_a_savepoint_when_running(flinklets, tmp_path):
    """operations.md "Signals" and "Exit codes": a stop of a RUNNING job (upgradeMode savepoint) ends with a
    savepoint recorded and exit 0, and the next start restores exactly it; a stop while the job is still starting
    waits for RUNNING and then takes the savepoint (exit 0), or says it could not (exit 4, no savepoint, the
    newest checkpoint stays the restore point). Each moment is 0-10 s after the JVM appeared, on a fresh start of
    flinklet or on the JVM flinklet starts after a kill -9 of the previous one (killed 0-3 s into its start).
    Every JVM must be launched with the newest point (highest id) as its -s, and the last start must restore it
    and end with exactly-once output. "RUNNING" is Flink's own word:
    /jobs/overview asked just before the signal, or the JVM log's switch to RUNNING before it."""
    seed = int(os.environ.get("FLINKLET_NEVER_REWIND_SEED") or random.SystemRandom().randrange(1 << 32))
    moments = int(os.environ.get("FLINKLET_NEVER_REWIND_MOMENTS", "20"))
    print(f"FLINKLET_NEVER_REWIND_SEED={seed} FLINKLET_NEVER_REWIND_MOMENTS={moments}")
    rnd = random.Random(seed)
    after_kill = max(1, moments * 3 // 10)
    kinds = ["after-kill"] * after_kill + ["fresh"] * (moments - after_kill)
    rnd.shuffle(kinds)
    state = str(tmp_path / "state")
    conf = {"flinklet.restart.backoff.initial": "200 ms"}
    expected = None  # (id, kind, path) the next start must restore; None: empty
    job_id = None
    report = []
    # The moments fall in the first 10 s after the JVM appeared, or, on a machine so loaded that Flink takes
    # longer than that to have the job RUNNING, in that time plus 3 s (else no moment would find it RUNNING).
    window, latencies = 10.0, []
    for i, kind in enumerate(kinds):
        delay = rnd.random() * window
        f = flinklets(state_dir=state, conf=conf).start()
        jvm, seen = wait_jvm(f)
        where = f"moment {i} ({kind}, {delay:.2f} s, seed {seed})"
        assert restore_arg(jvm) == (norm(expected[2]) if expected else None), (
            f"{where}: the JVM was launched with -s {restore_arg(jvm)}, the newest restore point is {expected}")
        if kind == "after-kill":
            # the first JVM is killed early in its start (0-3 s): the next one must restore the newest point
            time.sleep(max(0.0, seen + rnd.uniform(0.0, 3.0) - time.monotonic()))
            job_id = job_id or read_job_id(state)
            os.kill(jvm, signal.SIGKILL)
            wait_for(lambda: not pid_alive(jvm), 30, "the killed JVM gone", interval=0.01)
            expected = newest(state, job_id)
            old = jvm
            jvm, seen = wait_jvm(f, not_pids=[old])
            assert restore_arg(jvm) == (norm(expected[2]) if expected else None), (
                f"{where}: after kill -9 the JVM was launched with -s {restore_arg(jvm)}, newest is {expected}")
        time.sleep(max(0.0, seen + delay - time.monotonic()))
        job_id = job_id or read_job_id(state)
        sp_before = (f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"] or {}).get("location")
        rest_running = flink_job_running(f)
        t_sig = time.time()
        t_sig_ms = int(t_sig * 1000)
        f.signal(signal.SIGTERM)
        code = f.wait_exit(60)
        assert not pid_alive(jvm), f"{where}: the JVM outlived flinklet"
        seen_wall = time.time() - (time.monotonic() - seen)
        log_running = flink_running_at(f, job_id, seen_wall)
        # how long Flink took to have the job RUNNING (at least this long, when it never got there)
        latencies.append(log_running - seen_wall if log_running else time.time() - seen_wall)
        window = max(10.0, max(latencies[-3:]) + 3.0)
        running = rest_running or (log_running is not None and log_running < t_sig - 0.2)
        st = f.status()
        sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
        new_sp = sp if sp and sp["location"] != sp_before else None
        events = [(e["type"], e["message"]) for e in events_since(f, t_sig_ms)]
        report.append((i, kind, round(delay, 2), round(latencies[-1], 2), running, code,
                       new_sp and os.path.basename(norm(new_sp["location"]))))
        detail = f"{where}: Flink RUNNING before the signal: {running} (REST {rest_running}, log {log_running}, " \
                 f"signal {t_sig}); exit {code}; status error {st['error']!r}; events {events}"
        if running:
            assert code == 0, detail
            assert new_sp and new_sp["triggerType"] == "UPGRADE", detail
        else:
            assert code in (0, 4), detail
            assert (code == 0) == bool(new_sp), detail  # exit 0 of a running JVM means its savepoint was taken
            if code == 4:  # "says so loudly": an event and the status error
                assert st["error"], detail
                assert {"SavepointFailed", "SavepointSkipped"} & {t for t, _ in events}, detail
        if new_sp:
            sp_dir = norm(new_sp["location"])
            sp_id = snapshot_id(sp_dir)
            assert sp_id is not None, f"{where}: the recorded savepoint {sp_dir} has no complete _metadata"
            assert sp_id == newest(state, job_id)[0], f"{where}: savepoint {sp_id} is not the newest point"
            expected = (sp_id, "savepoint", sp_dir)
        else:
            expected = newest(state, job_id)
    print("moments (i, kind, delay after the JVM appeared, Flink RUNNING after, RUNNING before the signal, "
          "exit code, savepoint):")
    for r in report:
        print("  ", r)
    f = flinklets(state_dir=state, conf=conf).start()
    jvm, _ = wait_jvm(f)
    assert restore_arg(jvm) == (norm(expected[2]) if expected else None)
    job_id = f.wait_stable(180)["jobStatus"]["jobId"]
    if expected:
        rid, _, path = flink_restored(f, job_id)
        assert (rid, path) == (expected[0], norm(expected[2]))
    finish_exactly_once(f, job_id)

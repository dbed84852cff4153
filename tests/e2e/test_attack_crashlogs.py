"""Attack tests of the JVM's fatal-error logs (docs/operations.md "Restarts and restore points", the
flinklet.jvm.crash-logs row of docs/configuration.md): hostile entries in <state dir>/jvm-crashes and in the state
directory root (symlinks out of the state directory, directories and user files with crash-log-like names, odd
pids, a log dated in the future), a jvm-crashes that is a symlink or a regular file, a user's own -XX:ErrorFile,
and invalid flinklet.jvm.crash-logs values. Whatever is there: the job comes back from its newest checkpoint,
nothing outside the state directory is removed, and flinklet does not crash. Real flinklet, real MiniCluster JVM:
os.kill(pid, SIGSEGV) makes HotSpot write its hs_err log and abort."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN, check_output, restored, wait_for, wait_restarted

# the pruning's C paths (links, odd names, non-directories) run under ASan in unit-asan's test_crashlogs and in
# test_recovery's crash test; what these add is HotSpot's side
pytestmark = pytest.mark.asan_elsewhere

OLD = time.time() - 7 * 24 * 3600  # a week ago


def crash_and_resume(f, st):
    """SIGSEGV to the running JVM after a fresh checkpoint; waits for the new JVM's job RUNNING and checks it was
    restored from a checkpoint at least as new as the one before the crash. Returns (crashed pid, new status)."""
    job_id = st["jobStatus"]["jobId"]
    last = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {"id": 0})["id"]
    before = f.wait_checkpoint(last + 1)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    pid = f.status()["jvm"]["pid"]
    os.kill(pid, signal.SIGSEGV)
    st = wait_restarted(f, pid)
    r = restored(f, job_id)
    assert r["is_savepoint"] is False and r["id"] >= before, (r, before)
    assert st["jobStatus"]["jobId"] == job_id
    return pid, st


def crash_log_events(f):
    return [e for e in f.events() if e["type"] == "JvmCrashLog"]


def wait_crash_log_event(f, path, timeout=90):
    return wait_for(lambda: [e for e in crash_log_events(f) if path in e["message"]], timeout,
                    f"a JvmCrashLog event naming {path} (have {crash_log_events(f)})")


def write(path, text, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def read(path):
    with open(path) as fh:
        return fh.read()


def old_symlink(target, link):
    os.symlink(target, link)
    os.utime(link, (OLD, OLD), follow_symlinks=False)


def stop_cleanly(f):
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0, f.logs()[-4000:]
    assert f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], "the stop took no savepoint"
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def events_name_existing_files(f):
    """Every JvmCrashLog event names (a path with hs_err_pid in it) a file that is there."""
    for e in crash_log_events(f):
        named = [w.strip("'\"`,;:()") for w in e["message"].split() if "hs_err" in w]
        assert named, e
        for w in named:
            w = w.rstrip(".") if not w.endswith(".log") else w
            assert os.path.exists(w), (e, w)


# ---- configuration -------------------------------------------------------------------------------------------

CONFIG = """apiVersion: flink.apache.org/v1beta1
kind: FlinkMiniCluster
metadata:
  name: crash-logs
spec:
  flinkConfiguration:
    flinklet.state.dir: /var/lib/flinklet
    flinklet.jvm.crash-logs: {value}
  job:
    jarURI: local:///opt/flink/usrlib/clicks.jar
    entryClass: com.example.Clicks
    parallelism: 2
"""
FIELD = "spec.flinkConfiguration.flinklet.jvm.crash-logs"


def run_cli(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "FLINKLET_CONFIG": ""})


def test_check_config_rejects_invalid_crash_logs_with_position_and_field(tmp_path):
    """0, -1, 1001, abc, an empty string, 5.5, 1e2, 0x5, a huge number, a two-element list, -0, 1000.0, .inf and null (a one-element list is "5": documented flattening) are each rejected by
    check-config (exit 2) with file:8:30 (the value's line and column) and the field's full name; 1 and 1000 are
    accepted and the default is 5. -D with a bad value is rejected too."""
    col = len("    flinklet.jvm.crash-logs: ") + 1
    bad = ["0", "-1", "1001", "abc", '""', "5.5", "1e2", "0x5", "99999999999999999999999", "[5, 6]", "-0", "1000.0", "5 apples", ".inf", "null", "~"]
    for i, value in enumerate(bad):
        p = tmp_path / f"bad{i}.yaml"
        p.write_text(CONFIG.format(value=value))
        r = run_cli("check-config", "-c", str(p))
        assert r.returncode == 2, (value, r.returncode, r.stdout, r.stderr)
        assert r.stdout == "", (value, r.stdout)
        assert f"{p}:8:{col}: {FIELD}:" in r.stderr, (value, r.stderr)
    for value in ("1", "1000", '"7"'):
        p = tmp_path / f"good-{value.strip(chr(34))}.yaml"
        p.write_text(CONFIG.format(value=value))
        r = run_cli("check-config", "-c", str(p), "--json")
        assert r.returncode == 0, (value, r.stderr)
    p = tmp_path / "default.yaml"
    p.write_text(CONFIG.replace("    flinklet.jvm.crash-logs: {value}\n", ""))
    r = run_cli("check-config", "-c", str(p), "--json")
    assert r.returncode == 0, r.stderr

    assert json.loads(r.stdout)["spec"]["flinkConfiguration"]["flinklet.jvm.crash-logs"] == "5"
    p = tmp_path / "good.yaml"
    p.write_text(CONFIG.format(value="3"))
    for value in ("0", "1001", "x"):
        r = run_cli("check-config", "-c", str(p), "-D", f"flinklet.jvm.crash-logs={value}")
        assert r.returncode == 2, (value, r.stderr)
        assert f"-D: {FIELD}:" in r.stderr, (value, r.stderr)


# ---- hostile entries -----------------------------------------------------------------------------------------

def test_hostile_entries_survive_pruning_and_nothing_outside_is_removed(flinklets, tmp_path):
    """crash-logs: 1 and two crashes, with jvm-crashes and the state directory root seeded (all dated a week ago)
    with: symlinks named hs_err_pid*.log / replay_pid*.log pointing to a file and a directory OUTSIDE the state
    directory, directories named hs_err_pid7.log / hs_err_pid13.log holding a user's file, a user's notes and
    backups (hs_err_pid12.log.bak), and logs with odd pids (hs_err_pid0012.log, hs_err_pid99999999999.log,
    hs_err_pid.log, hs_err_pid-3.log). Expected: both crashes resume from the newest checkpoint, the second
    crash's log is kept and the first one's removed, every symlink target outside the state directory and every
    user file is still there with its content, flinklet never crashes and stops cleanly."""
    f = flinklets(job={"args": ["--rate", "100", "--keys", "4", "--output", "OUT"]},
                  conf={"flinklet.jvm.crash-logs": "1", "flinklet.restart.backoff.initial": "200 ms"})
    crashes = os.path.join(f.state, "jvm-crashes")
    outside = str(tmp_path / "outside")
    precious_file = os.path.join(outside, "precious.log")
    precious_dir = os.path.join(outside, "precious-dir")
    write(precious_file, "precious outside file\n", OLD)
    write(os.path.join(precious_dir, "inner.txt"), "precious inner file\n", OLD)
    os.utime(precious_dir, (OLD, OLD))
    root_target = os.path.join(outside, "root-target.log")
    write(root_target, "outside target of a root symlink\n", OLD)
    os.makedirs(crashes)
    old_symlink(precious_file, os.path.join(crashes, "hs_err_pid8.log"))
    old_symlink(precious_dir, os.path.join(crashes, "replay_pid9.log"))
    old_symlink(precious_dir, os.path.join(crashes, "hs_err_pid14.log"))
    old_symlink(root_target, os.path.join(f.state, "hs_err_pid10.log"))
    old_symlink(precious_dir, os.path.join(f.state, "replay_pid15.log"))
    user_files = {
        os.path.join(crashes, "hs_err_pid7.log", "keep.txt"): "inside a directory named like a log\n",
        os.path.join(f.state, "hs_err_pid13.log", "keep.txt"): "inside a root directory named like a log\n",
        os.path.join(crashes, "NOTES.txt"): "my notes about these crashes\n",
        os.path.join(crashes, "hs_err_pid12.log.bak"): "a backup\n",
        os.path.join(f.state, "hs_err_pid12.log.bak"): "a backup in the root\n",
    }
    for path, text in user_files.items():
        write(path, text, OLD)
    for d in ("hs_err_pid7.log",):
        os.utime(os.path.join(crashes, d), (OLD, OLD))
    os.utime(os.path.join(f.state, "hs_err_pid13.log"), (OLD, OLD))
    for name in ("hs_err_pid0012.log", "hs_err_pid99999999999.log", "hs_err_pid.log", "hs_err_pid-3.log",
                 "replay_pid4294967297.log"):
        write(os.path.join(crashes, name), "# odd pid\n", OLD)
    write(os.path.join(f.state, "replay_pid11.log"), "# an older flinklet's replay log\n", OLD)

    f.start()
    st = f.wait_stable()
    pid1, st = crash_and_resume(f, st)
    log1 = os.path.join(crashes, f"hs_err_pid{pid1}.log")
    wait_crash_log_event(f, log1)
    pid2, st = crash_and_resume(f, st)
    log2 = os.path.join(crashes, f"hs_err_pid{pid2}.log")
    wait_crash_log_event(f, log2)
    # the pruning after the second JVM: the first crash's log goes, the second's stays
    wait_for(lambda: not os.path.exists(log1), 30, f"{log1} removed (have {sorted(os.listdir(crashes))})")
    time.sleep(2)
    assert os.path.exists(log2), f"the newest crash's log is gone: {sorted(os.listdir(crashes))}"
    assert "A fatal error has been detected" in read(log2)
    # nothing outside the state directory was touched
    assert read(precious_file) == "precious outside file\n"
    assert read(os.path.join(precious_dir, "inner.txt")) == "precious inner file\n"
    assert read(root_target) == "outside target of a root symlink\n"
    assert sorted(os.listdir(outside)) == ["precious-dir", "precious.log", "root-target.log"]
    # user files that are not crash logs stay
    for path, text in user_files.items():
        assert os.path.exists(path), f"{path} removed; jvm-crashes: {sorted(os.listdir(crashes))}"
        assert read(path) == text
    # an older flinklet's log in the root is removed like the others
    assert not os.path.exists(os.path.join(f.state, "replay_pid11.log"))
    assert f.proc.poll() is None
    assert f.status()["jvm"]["restarts"] == 2
    stop_cleanly(f)


def test_log_dated_in_the_future_does_not_evict_the_crash_just_logged(flinklets):
    """crash-logs: 1 and an hs_err_pid5.log in jvm-crashes dated ten years ahead (a volume from a node whose clock
    was wrong, a copy that kept its times). The JVM that crashes now is the newest crash: its log, the one the
    JvmCrashLog event names, must still be there after the pruning (else every real crash log is removed at once
    and the event names a file that no longer exists)."""
    f = flinklets(conf={"flinklet.jvm.crash-logs": "1"})
    crashes = os.path.join(f.state, "jvm-crashes")
    future = time.time() + 10 * 365 * 24 * 3600
    write(os.path.join(crashes, "hs_err_pid5.log"), "# a crash log from a skewed clock\n", future)
    f.start()
    st = f.wait_stable()
    pid, st = crash_and_resume(f, st)
    log = os.path.join(crashes, f"hs_err_pid{pid}.log")
    wait_crash_log_event(f, log)
    time.sleep(3)  # the pruning after the JVM's exit runs on the worker thread
    assert os.path.exists(log), (f"the log the JvmCrashLog event names was pruned; "
                                 f"jvm-crashes holds {sorted(os.listdir(crashes))}")
    assert f.proc.poll() is None
    stop_cleanly(f)


# ---- jvm-crashes is not a directory of the state dir ---------------------------------------------------------

def test_jvm_crashes_symlink_to_outside_directory_loses_nothing_there(flinklets, tmp_path):
    """jvm-crashes is a symlink to a directory OUTSIDE the state directory holding a user's old hs_err/replay
    files (a week old) and notes. With crash-logs: 1 and a crash: the job resumes from its newest checkpoint, and
    not one of the files outside is removed or changed (pruning must not follow the link out of the state
    directory); flinklet keeps running and stops cleanly.

    Found by this test (fixed): the pruning followed the link and deleted <outside>/hs_err_pid1.log,
    hs_err_pid2.log and replay_pid2.log, without a word about the link. Now the folder is opened without
    following it: the JVM's log is still named (JvmCrashLog, written through the link: the user's choice), nothing
    there is removed, and the log says why."""
    f = flinklets(conf={"flinklet.jvm.crash-logs": "1"})
    outside = str(tmp_path / "elsewhere")
    theirs = {os.path.join(outside, n): f"# {n} of someone else\n"
              for n in ("hs_err_pid1.log", "hs_err_pid2.log", "replay_pid2.log", "notes.txt")}
    for p, text in theirs.items():
        write(p, text, OLD)
    os.makedirs(f.state)
    os.symlink(outside, os.path.join(f.state, "jvm-crashes"))
    f.start()
    st = f.wait_stable()
    pid, st = crash_and_resume(f, st)
    wait_for(lambda: "jvm-crashes is a symbolic link: flinklet removes no fatal-error logs there" in f.logs(), 30,
             "flinklet to say it does not prune through the link")
    wait_crash_log_event(f, os.path.join(f.state, "jvm-crashes", f"hs_err_pid{pid}.log"))
    for p, text in theirs.items():
        assert os.path.exists(p), f"{p} outside the state directory was removed: {sorted(os.listdir(outside))}"
        assert read(p) == text
    events_name_existing_files(f)
    assert f.proc.poll() is None
    stop_cleanly(f)


def test_jvm_crashes_regular_file_blocks_nothing_and_is_kept(flinklets):
    """jvm-crashes is a regular file (a user's), crash-logs: 1. The launch is not blocked, each of two crashes is
    followed by a restore from the newest checkpoint, the file keeps its content, the JvmCrashLog events name
    files that exist (HotSpot's fallback, its working directory), after the second crash only its log is left,
    and flinklet keeps running and stops cleanly."""
    f = flinklets(conf={"flinklet.restart.backoff.initial": "200 ms", "flinklet.jvm.crash-logs": "1"})
    jc = os.path.join(f.state, "jvm-crashes")
    write(jc, "not a directory: my data\n")
    f.start()
    st = f.wait_stable()
    pid1, st = crash_and_resume(f, st)
    time.sleep(2)
    assert os.path.isfile(jc) and read(jc) == "not a directory: my data\n"
    events_name_existing_files(f)
    # HotSpot falls back to its working directory; a second crash with crash-logs: 1 keeps only the newest log
    pid2, st = crash_and_resume(f, st)
    time.sleep(3)
    assert os.path.isfile(jc) and read(jc) == "not a directory: my data\n"
    said = [e for e in crash_log_events(f) if f"pid {pid2}" in e["message"]]
    assert said, crash_log_events(f)
    named = [w for w in said[-1]["message"].split() if "hs_err" in w]
    assert named and os.path.exists(named[0]), (said, sorted(os.listdir(f.state)))
    assert not any(f"hs_err_pid{pid1}" in n for n in os.listdir(f.state)), sorted(os.listdir(f.state))
    assert f.proc.poll() is None
    stop_cleanly(f)


# ---- a user's own -XX:ErrorFile ------------------------------------------------------------------------------

def test_user_error_file_wins_and_their_directory_is_not_pruned(flinklets, tmp_path):
    """flinklet.jvm.options: -XX:ErrorFile=<outside>/mine/hs_err_%p.log with three older logs already there,
    crash-logs: 1. Expected: the JVM's command line ends with the user's ErrorFile (the last one wins in HotSpot),
    the crash's log lands in the user's directory and not in jvm-crashes, the user's older logs are not pruned
    (outside the state directory), a JvmCrashLog event (if any) names the file that exists, the job resumes."""
    mine = str(tmp_path / "mine")
    olds = {os.path.join(mine, n): f"# {n}\n" for n in ("hs_err_1.log", "hs_err_2.log", "hs_err_pid3.log")}
    for p, text in olds.items():
        write(p, text, OLD)
    opt = f"-XX:ErrorFile={mine}/hs_err_%p.log"
    f = flinklets(conf={"flinklet.jvm.crash-logs": "1", "flinklet.jvm.options": opt})
    f.start()
    st = f.wait_stable()
    with open(f"/proc/{st['jvm']['pid']}/cmdline", "rb") as fh:
        argv = fh.read().decode().split("\0")
    efs = [a for a in argv if a.startswith("-XX:ErrorFile=")]
    assert efs and efs[-1] == opt, efs
    pid, st = crash_and_resume(f, st)
    mine_log = os.path.join(mine, f"hs_err_{pid}.log")
    wait_for(lambda: os.path.exists(mine_log), 30, f"{mine_log} (have {sorted(os.listdir(mine))})")
    assert "A fatal error has been detected" in read(mine_log)
    crashes = os.path.join(f.state, "jvm-crashes")
    assert not os.path.exists(os.path.join(crashes, f"hs_err_pid{pid}.log"))
    time.sleep(3)
    for p, text in olds.items():
        assert os.path.exists(p) and read(p) == text, f"{p} removed: {sorted(os.listdir(mine))}"
    events_name_existing_files(f)
    assert f.proc.poll() is None
    stop_cleanly(f)

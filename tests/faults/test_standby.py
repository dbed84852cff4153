"""The standby JVM (issue 38, item 4), the supervisor's side, against the fake Flink and a fake launcher: a "java"
that, started with --standby, says it waits and takes `run <base64 args>` on its standard input as flinklet's
launcher does (or, told so, exits at once), and writes what it was started as and every command it got to a file.
FLINKLET_STRICT=1: a broken invariant aborts flinklet.

- A kill -9 of the job's JVM: the restart's CLI arguments go to the standby (`run -t local -s <the newest
  checkpoint> ...`), whose pid becomes jvm.pid (JvmStandbyTaken, no JvmStarted), and a new standby follows.
- A standby that exits at once, again and again: it is made again after 1, 2, 4 ... s (StandbyExited says the
  delay), never in a tight loop, and the job's JVM runs on untouched.
- A reload that turns the option off discards the standby, one that turns it on makes one, both in place.
- A SIGTERM: the standby is killed with the stop, and flinklet exits 0."""
import base64
import os
import signal
import time

from attack_kit import write_checkpoint
from conftest import wait_for
from fakeflink import end_once_reported


def write_fake_launcher(directory, stop_file):
    """A "java" for the job's JVM and its standby; returns (path, log, mode file)."""
    path = os.path.join(directory, "java")
    log = os.path.join(directory, "launcher.log")
    mode = os.path.join(directory, "standby.mode")
    with open(path, "w") as f:
        f.write(f"""#!/usr/bin/env python3
# stands in for the MiniCluster JVM and its standby running flinklet's launcher (tests/faults/test_standby.py)
import os, sys, time
LOG, MODE, STOP = {log!r}, {mode!r}, {stop_file!r}
standby = "--standby" in sys.argv
with open(LOG, "a") as f:
    f.write(("standby " if standby else "jvm ") + str(os.getpid()) + "\\n")
if standby:
    if os.path.exists(MODE) and open(MODE).read().strip() == "crash":
        print("Exception in thread main: java.lang.IllegalStateException: the standby could not start", flush=True)
        sys.exit(3)
    print("flinklet-launcher: standby: no job; waiting for one", flush=True)
    for line in sys.stdin:
        with open(LOG, "a") as f:
            f.write(line.strip() + "\\n")
        if line.startswith("run"):
            print("flinklet-launcher: submitting the job to this standby JVM", flush=True)
            break
    else:
        sys.exit(0)
while not os.path.exists(STOP):  # the job's JVM: up until its job ends (the stop file) or it is killed
    time.sleep(0.05)
os.unlink(STOP)
""")
    os.chmod(path, 0o755)
    return path, log, mode


def standby_supervisor(supervisors, server, tmp_path):
    sup = supervisors(server, conf={"flinklet.recovery.standby-jvm": "true"})
    (sup.flink_home / "lib" / "flinklet-launcher.jar").write_bytes(b"")  # flinklet's launcher is the main class
    java, sup.launcher_log, sup.mode = write_fake_launcher(str(tmp_path), sup.stop_file)
    os.replace(java, sup.java)  # the path the configuration names
    return sup


def named(sup, kind, after=0):
    return [e for e in sup.events() if e["type"] == kind and e["timeMs"] >= after]


def lines(sup):
    try:
        with open(sup.launcher_log) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def running(sup, not_pid=0):
    return wait_for(lambda: (s := sup.status()) and s["jobStatus"]["state"] == "RUNNING"
                    and s["jvm"]["pid"] not in (0, not_pid) and s["lifecycleState"] in ("STABLE", "DEPLOYED")
                    and s, 30, "the job RUNNING")


def standby_pid(sup, not_pid=0):
    return wait_for(lambda: (p := (sup.status() or {}).get("jvm", {}).get("standbyPid", 0)) and p != not_pid and p,
                    30, "a standby JVM")


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def now_ms():
    return int(time.time() * 1000)


def test_a_kill_of_the_jobs_jvm_hands_the_restart_to_the_standby(server, supervisors, tmp_path):
    sup = standby_supervisor(supervisors, server, tmp_path)
    sup.start()
    st = running(sup)
    pid = st["jvm"]["pid"]
    sb = standby_pid(sup)
    wait_for(lambda: f"standby {sb}" in lines(sup), 10, "the standby started as one")
    wait_for(lambda: "the standby JVM (pid %d) waits for a job" % sb in sup.logs(), 10, "the standby waiting")
    # the job's checkpoints on the volume: the restart restores the newest, in the standby as in a new JVM
    job_id = st["jobStatus"]["jobId"]
    write_checkpoint(sup.state, job_id, 3)
    newest = write_checkpoint(sup.state, job_id, 5)
    t0 = now_ms()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: named(sup, "JvmStandbyTaken", t0), 30, "JvmStandbyTaken")
    st = running(sup, not_pid=pid)
    assert st["jvm"]["pid"] == sb, st["jvm"]
    assert not named(sup, "JvmStarted", t0), "a new JVM was started beside the standby"
    runs = [line for line in lines(sup) if line.startswith("run")]
    assert len(runs) == 1, lines(sup)
    args = [base64.b64decode(w).decode() for w in runs[0].split()[1:]]
    assert args[:3] == ["run", "-t", "local"], args
    restored = sup.status()["restoredFrom"]
    assert restored["kind"] == "checkpoint" and restored["id"] == 5, restored
    assert args[args.index("-s") + 1].rstrip("/").endswith(newest), (args, newest)
    assert args[args.index("-s") + 1] == restored["location"], (args, restored)
    # another standby once the job is RUNNING again
    sb2 = standby_pid(sup, not_pid=sb)
    assert sb2 != sb
    end_once_reported(server, sup.stop_file)
    assert sup.stop() == 0, sup.logs()[-3000:]
    wait_for(lambda: gone(sb2), 10, "the new standby gone with flinklet")


def test_a_standby_that_dies_at_once_is_made_again_after_a_growing_delay(server, supervisors, tmp_path):
    sup = standby_supervisor(supervisors, server, tmp_path)
    open(sup.mode, "w").write("crash")
    sup.start()
    st = running(sup)
    pid = st["jvm"]["pid"]
    exits = wait_for(lambda: len(e := named(sup, "StandbyExited")) >= 3 and e, 30, "three standbys that died")
    delays = [e["message"].rsplit("another starts in ", 1)[1] for e in exits[:3]]
    assert delays == ["1 s", "2 s", "4 s"], [e["message"] for e in exits]
    assert "the standby could not start" in exits[0]["message"], exits[0]["message"]
    # the JVM of the job is untouched, and the standbys come no faster than the delays
    assert sup.status()["jvm"]["pid"] == pid and not named(sup, "JvmExited")
    started = [line for line in lines(sup) if line.startswith("standby ")]
    assert len(started) <= 4, started
    # a standby that works again is made and waits
    os.unlink(sup.mode)
    sb = standby_pid(sup)
    wait_for(lambda: "the standby JVM (pid %d) waits for a job" % sb in sup.logs(), 30, "the standby waiting")
    end_once_reported(server, sup.stop_file)
    assert sup.stop() == 0, sup.logs()[-3000:]
    wait_for(lambda: gone(sb), 10, "the standby gone with flinklet")
    assert named(sup, "StandbyDiscarded"), "the stop said nothing of the standby"


def rewrite(sup, old, new):
    text = sup.config.read_text()
    assert old in text, (old, text)
    tmp = sup.config.with_name(".flinklet.yaml.new")
    tmp.write_text(text.replace(old, new))
    os.replace(tmp, sup.config)


def test_a_reload_turns_the_standby_off_and_on_in_place(server, supervisors, tmp_path):
    sup = standby_supervisor(supervisors, server, tmp_path)
    sup.start()
    st = running(sup)
    pid = st["jvm"]["pid"]
    sb = standby_pid(sup)
    t0 = now_ms()
    rewrite(sup, '"flinklet.recovery.standby-jvm": "true"', '"flinklet.recovery.standby-jvm": "false"')
    ev = wait_for(lambda: named(sup, "StandbyDiscarded", t0), 30, "StandbyDiscarded")[0]
    assert str(sb) in ev["message"] and "flinklet.recovery.standby-jvm is false" in ev["message"], ev
    wait_for(lambda: gone(sb), 10, "the standby gone")
    assert sup.status()["jvm"]["standbyPid"] == 0
    rewrite(sup, '"flinklet.recovery.standby-jvm": "false"', '"flinklet.recovery.standby-jvm": "true"')
    sb2 = standby_pid(sup, not_pid=sb)
    # in place: the job's JVM stayed through both
    st = sup.status()
    assert st["jvm"]["pid"] == pid and not named(sup, "JvmExited", t0) and not named(sup, "JvmStarted", t0)
    end_once_reported(server, sup.stop_file)
    assert sup.stop() == 0, sup.logs()[-3000:]
    wait_for(lambda: gone(sb2), 10, "the standby gone with flinklet")

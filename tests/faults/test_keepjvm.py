"""A job-only upgrade keeps the JVM (issue 38, item 3), the supervisor's side, against the fake Flink and a fake
launcher: a "java" that speaks flinklet's launcher protocol on its standard input (java/launcher LauncherControl:
`hold`, `release`, `run <base64 args>`), says `flinklet-launcher: idle` when its job ended while held, and writes
every command it got to a file. The job "ends" when the stop file appears (fakeflink.end_once_reported: once
flinklet was told where the stop's savepoint is). FLINKLET_STRICT=1: a broken invariant aborts flinklet.

- A change of the job's arguments: `hold`, the savepoint, the idle line, then `run` with the new arguments and the
  savepoint as the restore path; the same JVM pid, JobResubmitted, jvm.starts unchanged.
- A change of a Flink option the JVM is started with: no `hold`; a new JVM.
- The JVM crashes (SIGKILL) right after it said it is idle: a new JVM starts the upgraded job.
- A stop while the upgrade's savepoint is taken: `release`, the JVM ends with its job, flinklet exits 0."""
import base64
import json
import os
import signal
import time

from conftest import wait_for
from fakeflink import end_once_reported

def write_fake_launcher(directory, stop_file):
    """A "java" that holds, idles and runs the next job as flinklet's launcher does; returns (path, commands)."""
    path = os.path.join(directory, "java")
    commands = os.path.join(directory, "launcher.commands")
    crash = os.path.join(directory, "launcher.crash-when-idle")
    with open(path, "w") as f:
        f.write(f"""#!/usr/bin/env python3
# stands in for the MiniCluster JVM running flinklet's launcher (tests/faults/test_keepjvm.py)
import os, signal, sys, threading, time
LOG, STOP, CRASH = {commands!r}, {stop_file!r}, {crash!r}
cv = threading.Condition()
state = {{"hold": False, "next": []}}

def read():
    for line in sys.stdin:
        line = line.strip()
        with open(LOG, "a") as f:
            f.write(line + "\\n")
        with cv:
            if line == "hold":
                state["hold"] = True
                state["next"].clear()
            elif line == "release":
                state["hold"] = False
                state["next"].append(None)
            elif line.startswith("run"):
                state["next"].append(line)
            cv.notify_all()
    with cv:
        state["hold"] = False
        state["next"].append(None)
        cv.notify_all()

threading.Thread(target=read, daemon=True).start()
while True:
    while not os.path.exists(STOP):
        time.sleep(0.05)
    os.unlink(STOP)
    with cv:
        if not state["hold"]:
            sys.exit(0)
    print("flinklet-launcher: idle: the job ended and its MiniCluster is closed; waiting for the next job",
          flush=True)
    if os.path.exists(CRASH):
        os.kill(os.getpid(), signal.SIGKILL)
    with cv:
        while not state["next"]:
            cv.wait()
        cmd = state["next"].pop(0)
        state["hold"] = False
    if cmd is None:
        sys.exit(0)
    print("flinklet-launcher: submitting the next job in this JVM", flush=True)
""")
    os.chmod(path, 0o755)
    return path, commands, crash


def launcher_supervisor(supervisors, server, tmp_path, conf=None):
    sup = supervisors(server, upgrade_mode="savepoint", conf=conf)
    (sup.flink_home / "lib" / "flinklet-launcher.jar").write_bytes(b"")  # flinklet's launcher is the main class
    sup.java_path, sup.commands, sup.crash = write_fake_launcher(str(tmp_path), sup.stop_file)
    assert sup.java_path == sup.java  # (the same path the configuration names)
    server.real_savepoints = True
    return sup


def rewrite(sup, old, new):
    text = sup.config.read_text()
    assert old in text, (old, text)
    sup.replace_config(text.replace(old, new))


def named(sup, kind, after=0):
    return [e for e in sup.events() if e["type"] == kind and e["timeMs"] >= after]


def commands(sup):
    try:
        with open(sup.commands) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def decoded(run_line):
    return [base64.b64decode(w).decode() for w in run_line.split()[1:]]


def running(sup):
    return wait_for(lambda: (s := sup.status()) and s["lifecycleState"] in ("STABLE", "DEPLOYED")
                    and s["jobStatus"]["state"] == "RUNNING" and s["jvm"]["pid"] > 0 and s, 30, "the job RUNNING",
                    interval=0.1)


def now_ms():
    return int(time.time() * 1000)


def test_a_change_of_the_job_alone_is_submitted_to_the_same_jvm(server, supervisors, tmp_path):
    sup = launcher_supervisor(supervisors, server, tmp_path)
    sup.start()
    st = running(sup)
    pid, starts = st["jvm"]["pid"], st["jvm"]["starts"]
    end_once_reported(server, sup.stop_file)
    t0 = now_ms()
    rewrite(sup, "    parallelism: 2", "    parallelism: 2\n    args: [\"--work\", \"0\"]")
    wait_for(lambda: named(sup, "JobResubmitted", t0), 30, "JobResubmitted", interval=0.1)
    st = running(sup)
    assert st["jvm"]["pid"] == pid and st["jvm"]["starts"] == starts, st["jvm"]
    assert not named(sup, "JvmStarted", t0) and not named(sup, "JvmExited", t0)
    cmds = commands(sup)
    assert cmds[0] == "hold" and cmds[1].startswith("run "), cmds
    args = decoded(cmds[1])
    assert args[:3] == ["run", "-t", "local"], args
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
    assert args[args.index("-s") + 1].rstrip("/").endswith(sp.rstrip("/").rsplit("/", 1)[1]), (args, sp)
    assert args[args.index("-cm") + 1] in ("claim", "no_claim"), args
    assert args[-2:] == ["--work", "0"], args
    assert st["restoredFrom"]["kind"] == "savepoint"
    # a shutdown after it: the JVM (no hold any more) ends with its job on the shutdown's savepoint
    end_once_reported(server, sup.stop_file)
    assert sup.stop() == 0, sup.logs()[-3000:]
    assert commands(sup)[2:] == [], commands(sup)


def test_a_change_of_a_flink_option_the_jvm_needs_takes_a_new_jvm(server, supervisors, tmp_path):
    sup = launcher_supervisor(supervisors, server, tmp_path)
    sup.start()
    st = running(sup)
    pid = st["jvm"]["pid"]
    end_once_reported(server, sup.stop_file)
    t0 = now_ms()
    rewrite(sup, '"execution.checkpointing.interval": "1 s"',
            '"execution.checkpointing.interval": "1 s"\n    "taskmanager.memory.managed.size": "96m"')
    wait_for(lambda: named(sup, "JvmStarted", t0), 30, "a new JVM", interval=0.1)
    st = running(sup)
    assert st["jvm"]["pid"] != pid
    assert "hold" not in commands(sup)
    assert not named(sup, "JobResubmitted", t0)
    assert "the JVM's own settings change" in sup.logs()
    end_once_reported(server, sup.stop_file)  # the shutdown's savepoint ends the job
    assert sup.stop() == 0, sup.logs()[-3000:]


def test_a_jvm_that_dies_once_idle_is_replaced_by_a_new_one(server, supervisors, tmp_path):
    sup = launcher_supervisor(supervisors, server, tmp_path)
    sup.start()
    st = running(sup)
    pid = st["jvm"]["pid"]
    end_once_reported(server, sup.stop_file)
    open(sup.crash, "w").close()  # it says it is idle, then it is killed
    t0 = now_ms()
    rewrite(sup, "    parallelism: 2", "    parallelism: 2\n    args: [\"--work\", \"0\"]")
    st = wait_for(lambda: (s := sup.status()) and s["jvm"]["pid"] not in (0, pid) and
                  s["jobStatus"]["state"] == "RUNNING" and s, 30, "the upgraded job RUNNING in a new JVM", interval=0.1)
    assert sup.alive(), sup.logs()[-3000:]
    assert named(sup, "JvmStarted", t0)
    os.unlink(sup.crash)
    # its restore point is the upgrade's savepoint, whichever way the JVM went
    assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
    end_once_reported(server, sup.stop_file)  # the shutdown's savepoint ends the job
    assert sup.stop() == 0, sup.logs()[-3000:]


def test_a_stop_during_the_upgrades_savepoint_lets_the_jvm_go(server, supervisors, tmp_path):
    sup = launcher_supervisor(supervisors, server, tmp_path)
    sup.start()
    st = running(sup)
    pid = st["jvm"]["pid"]
    stopped = []
    server.on_stop = lambda: stopped.append(True)
    t0 = now_ms()
    rewrite(sup, "    parallelism: 2", "    parallelism: 2\n    args: [\"--work\", \"0\"]")
    wait_for(lambda: stopped, 30, "the upgrade's stop-with-savepoint request", interval=0.1)
    sup.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: "release" in commands(sup), 10, "release to the launcher", interval=0.1)
    open(sup.stop_file, "w").close()  # the job ends on its savepoint: the JVM, let go, exits
    assert sup.proc.wait(30) == 0, sup.logs()[-3000:]
    assert commands(sup)[:2] == ["hold", "release"], commands(sup)
    assert not named(sup, "JobResubmitted", t0)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0]
             == "Z", 10, "the JVM gone", interval=0.1)
    st = json.loads(open(os.path.join(sup.state, "status.json")).read())
    assert st["jobStatus"]["savepointInfo"]["lastSavepoint"], st["jobStatus"]["savepointInfo"]

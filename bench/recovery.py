"""2. Crash detection and recovery: kill -9 of the MiniCluster JVM under flinklet, rounds of
  - the kill to flinklet's JvmExited and RestartScheduled events (its own timestamps: noticing and deciding),
  - the kill to the job RUNNING again with all tasks running (an outside poller on Flink's REST API, every 50 ms),
next to the physical floor: the same restore started by hand, the very `java ... CliFrontend run -t local -s <the
same checkpoint> -cm claim ...` command line flinklet ran (read from /proc), with the same config.yaml, on a copy of
the checkpoint taken right after the kill, timed from the launch to RUNNING by the same poller.

Each round: a fresh supervisor on the same state directory (so every crash is the first of a RUNNING job: restarted
at once, no backoff), a checkpoint or two, the kill, the restore, a stop; then the hand-started restore with flinklet
stopped. The two measurements of a round are taken one right after the other.

Class-data sharing: before the rounds, a warm-up run of flinklet makes its archive (ClassDataSharingArchived), so that
every round's restore starts from it (checked in the new JVM's /proc/<pid>/cmdline and memory map). The hand-run
restore is the command a person would run: flinklet's, without the archive options (-XX:SharedArchiveFile). The goal
of issue 15: flinklet's kill -> last task RUNNING <= 0.7 x the hand-run restore, medians of the interleaved rounds."""
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (Flinklet, kill_group, log, log_tasks_running_ms, now_ms, poll_until_running, print_rows, row,
                    wait_for)  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_RECOVERY_ROUNDS", "5"))
GOAL = 0.7
GOAL_STANDBY = 0.5  # issue 38, item 4
CDS_OPTIONS = ("-XX:SharedArchiveFile=", "-XX:+RecordDynamicDumpInfo", "-Xlog:cds")


def newest_checkpoint(state, job_id):
    d = os.path.join(state, "checkpoints", job_id)
    best = None
    for name in os.listdir(d):
        meta = os.path.join(d, name, "_metadata")
        if name.startswith("chk-") and os.path.exists(meta):
            m = os.path.getmtime(meta)
            if best is None or m > best[0]:
                best = (m, os.path.join(d, name))
    return best[1] if best else None


def read_proc(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(a.decode(errors="replace").split("=", 1) for a in f.read().split(b"\0") if b"=" in a)
    return argv, env


def manual_restore(rdir, argv, env, chk_copy, rest_port, job_id, n_tasks, timeout=120):
    """Starts the same JVM command by hand on the copied checkpoint; returns ms from launch to all tasks RUNNING
    (in the JVM's log) and to RUNNING as the REST API shows it (within timeout seconds: bench/state.py restores
    gigabytes)."""
    conf_src = env["FLINK_CONF_DIR"]
    conf = os.path.join(rdir, "manual-conf")
    tmp = os.path.join(rdir, "manual-tmp")
    shutil.copytree(conf_src, conf)
    os.makedirs(tmp, exist_ok=True)
    cfg = os.path.join(conf, "config.yaml")
    with open(cfg) as f:
        text = f.read()
    text = re.sub(r'^"execution\.checkpointing\.dir": .*$', f'"execution.checkpointing.dir": "file://{rdir}/manual-chk"',
                  text, flags=re.M)
    text = re.sub(r'^"io\.tmp\.dirs": .*$', f'"io.tmp.dirs": "{tmp}"', text, flags=re.M)
    with open(cfg, "w") as f:
        f.write(text)
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith(CDS_OPTIONS):
            i += 1
            continue
        if a == "-s":
            out += ["-s", chk_copy]
            i += 2
            continue
        if a.startswith("-Djava.io.tmpdir="):
            a = f"-Djava.io.tmpdir={tmp}"
        elif a.startswith("-Dlog4j.configurationFile="):
            a = f"-Dlog4j.configurationFile=file:{conf}/log4j-console.properties"
        out.append(a)
        i += 1
    env = {**env, "FLINK_CONF_DIR": conf}
    mlog = os.path.join(rdir, "manual.log")
    with open(mlog, "ab") as lf:
        t1 = now_ms()
        p = subprocess.Popen(out, stdout=lf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            t_rest = poll_until_running(rest_port, job_id, timeout)
            t_log = wait_for(lambda: log_tasks_running_ms(mlog, 0, n_tasks), 10, "the tasks in the log")
        finally:
            kill_group(p)
    return t_log - t1, t_rest - t1


def summary(values):
    return (f"median {statistics.median(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f}, "
            f"n={len(values)})")


def archive_of(pid):
    """The class-data-sharing archive the JVM was started with and has mapped, or None."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        args = [a.decode() for a in f.read().split(b"\0") if a]
    arch = [a.split("=", 1)[1] for a in args if a.startswith("-XX:SharedArchiveFile=")]
    if not arch:
        return None
    with open(f"/proc/{pid}/maps") as f:
        return arch[0] if os.path.realpath(arch[0]) in f.read() else None


def make_archive(f):
    """A warm-up run: flinklet makes its class-data-sharing archive (the rounds then start from it)."""
    t0 = now_ms()
    f.start()
    f.wait_stable()
    ev = wait_for(lambda: [e for e in f.events_after(t0) if e["type"] in ("ClassDataSharingArchived",
                                                                          "ClassDataSharingDumpFailed",
                                                                          "ClassDataSharingOff")], 300,
                  "the class-data-sharing archive")
    f.stop()
    f.proc = None
    log(f"recovery: warm-up: {ev[0]['type']}: {ev[0]['message']}")
    return ev[0]


PHASES = (  # the restore's steps as the JVM's log shows them (the first line of each after the kill)
    ("MiniCluster starting", re.compile(r"MiniCluster\s.*Starting Flink Mini Cluster")),
    ("actor system started", re.compile(r"PekkoRpcServiceUtils\s.*Actor system started at pekko://flink$")),
    ("REST listening", re.compile(r"DispatcherRestEndpoint\s.*Rest endpoint listening")),
    ("restoring the checkpoint", re.compile(r"CheckpointCoordinator\s.*Restoring job")),
)
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (.*)$", re.M)


def log_phases(path, offset):
    """{phase: epoch ms} of the first line of each PHASES step after offset in the JVM's log."""
    import datetime
    with open(path, "rb") as fh:
        fh.seek(offset)
        text = fh.read().decode(errors="replace")
    out = {}
    for stamp, rest in _LINE.findall(text):
        for name, rx in PHASES:
            if name not in out and rx.search(rest):
                out[name] = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000.0
    return out


def rss_kib(pid):
    """{VmRSS, RssAnon, RssFile} of a process, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1])
    return out


def flinklet_round(f, i, standby, rdir, res, checks):
    """One kill -9 under flinklet (with or without the standby JVM); its figures into res[...]. Returns what the
    hand-run restore needs: the restored JVM's command line and environment, the copy of the checkpoint, n_tasks."""
    key = "sb_" if standby else ""
    f.conf["flinklet.recovery.standby-jvm"] = "true" if standby else "false"
    f.write_config()
    t_start = now_ms()
    f.start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    sb = None
    if standby:
        # the standby started after RUNNING and waiting (its launcher said so) before the kill
        def waiting():
            s = f.status()
            p = (s or {}).get("jvm", {}).get("standbyPid", 0)
            with open(f.log_path, "rb") as fh:
                fh.seek(os.path.getsize(f.log_path) - min(os.path.getsize(f.log_path), 1 << 20))
                said = f"the standby JVM (pid {p}) waits for a job".encode() in fh.read()
            return p if p and said else None
        sb = wait_for(waiting, 120, "the standby JVM waiting", interval=0.2)
        rss = rss_kib(sb)
        res["standby_rss"].append(rss["VmRSS"] / 1024)
        res["standby_anon"].append(rss["RssAnon"] / 1024)
        res["standby_file"].append(rss["RssFile"] / 1024)
    f.wait_checkpoint(f.last_checkpoint_id() + 2)
    n_tasks = st["jobStatus"]["tasks"]["total"]
    time.sleep(0.3)
    offset = os.path.getsize(f.log_path)
    pidfd = os.pidfd_open(pid)
    t0 = now_ms()
    os.kill(pid, signal.SIGKILL)
    select.select([pidfd], [], [], 10)
    t_gone = now_ms()
    os.close(pidfd)
    wait_for(lambda: f.first_event(t0, "JvmExited"), 10, "JvmExited", interval=0.02)
    chk = newest_checkpoint(f.state, job_id)
    chk_copy = os.path.join(rdir, os.path.basename(chk))
    if not standby:
        shutil.copytree(chk, chk_copy)
    t_rest = poll_until_running(f.port, job_id, 120)
    st = f.wait_stable(not_pid=pid)
    t_run = wait_for(lambda: log_tasks_running_ms(f.log_path, offset, n_tasks), 10, "the tasks in the log")
    restored = (st.get("restoredFrom") or {}).get("location") or ""
    if not restored.rstrip("/").endswith(os.path.basename(chk)):
        checks["mismatches"] += 1
        log(f"recovery: round {i}: flinklet restored {restored}, the newest checkpoint is {chk}")
    new_pid = st["jvm"]["pid"]
    if standby:
        checks["taken"] += 1 if new_pid == sb and f.first_event(t0, "JvmStandbyTaken") else 0
    else:
        checks["with_archive"] += 1 if archive_of(new_pid) else 0
    argv, env = read_proc(new_pid)
    launched = "JvmStandbyTaken" if standby else "JvmStarted"
    ev = {t: f.first_event(t0, t) for t in ("JvmExited", "RestartScheduled", launched, "JobRunning")}
    res[key + "gone"].append(t_gone - t0)
    res[key + "noticed"].append(ev["JvmExited"] - t_gone)
    res[key + "decision"].append(ev["RestartScheduled"] - t0)
    res[key + "jvm_started"].append(ev[launched] - t0)
    res[key + "running_event"].append(ev["JobRunning"] - t0)
    res[key + "running"].append(t_run - t0)
    res[key + "running_rest"].append(t_rest - t0)
    for name, ms in log_phases(f.log_path, offset).items():
        res.setdefault(key + "phase:" + name, []).append(ms - t0)
    f.stop()
    f.proc = None
    log(f"recovery: round {i + 1}/{ROUNDS} {'with' if standby else 'without'} the standby: started "
        f"{(t0 - t_start) / 1000:.0f} s before the kill, RUNNING {res[key + 'running'][-1]:.0f} ms after it")
    return argv, env, chk_copy, job_id, n_tasks


def run():
    f = Flinklet("recovery", job={"upgradeMode": "last-state"},
                 conf={"flinklet.jvm.class-data-sharing.dump-delay": "1 s"})
    res = {k: [] for k in ("gone", "noticed", "decision", "jvm_started", "running", "running_rest", "running_event",
                           "sb_gone", "sb_noticed", "sb_decision", "sb_jvm_started", "sb_running", "sb_running_rest",
                           "sb_running_event", "standby_rss", "standby_anon", "standby_file", "manual",
                           "manual_rest")}
    checks = {"mismatches": 0, "with_archive": 0, "taken": 0}
    try:
        warm = make_archive(f)
        for i in range(ROUNDS):
            rdir = os.path.join(f.dir, f"round-{i}")
            os.makedirs(rdir, exist_ok=True)
            # the three one right after the other: flinklet without the standby, with it, then by hand (on a
            # copy of the checkpoint the first restored)
            argv, env, chk_copy, job_id, n_tasks = flinklet_round(f, i, False, rdir, res, checks)
            flinklet_round(f, i, True, rdir, res, checks)
            m_log, m_rest = manual_restore(rdir, argv, env, chk_copy, f.port, job_id, n_tasks)
            res["manual"].append(m_log)
            res["manual_rest"].append(m_rest)
            log(f"recovery: round {i + 1}/{ROUNDS}: without the standby {res['running'][-1]:.0f} ms, with it "
                f"{res['sb_running'][-1]:.0f} ms; by hand {res['manual'][-1]:.0f} ms")
    finally:
        f.stop()
    m_hand = statistics.median(res["manual"])
    rows = [
        row("kill -9 -> JVM gone (kernel)", summary(res["gone"] + res["sb_gone"]),
            "pidfd of the JVM readable (the process has exited) - kill time, both kinds of rounds"),
        row("JVM gone -> JvmExited (flinklet noticed)", summary(res["noticed"] + res["sb_noticed"]),
            "JvmExited event timeMs - the pidfd time (SIGCHLD through signalfd on the event loop)"),
        row("kill -9 -> restart decision", summary(res["decision"] + res["sb_decision"]),
            "RestartScheduled event timeMs - kill time"),
        row("kill -9 -> new JVM launched (no standby)", summary(res["jvm_started"]),
            "JvmStarted event timeMs - kill time (the first crash of a RUNNING job: no backoff)"),
        row("kill -9 -> job handed to the standby", summary(res["sb_jvm_started"]),
            "JvmStandbyTaken event timeMs - kill time (the same restart decision, then `run` to the standby)"),
        row("kill -9 -> job RUNNING (flinklet, no standby)", summary(res["running"]),
            "to the JVM's log line of the last task switching INITIALIZING -> RUNNING (ExecutionGraph), from the kill; "
            f"as GET /jobs/:id (50 ms poll, 3 s REST cache) shows it: {summary(res['running_rest'])}; flinklet's "
            f"JobRunning event: {summary(res['running_event'])}"),
        row("kill -9 -> job RUNNING (flinklet, standby JVM)", summary(res["sb_running"]),
            f"the same line, flinklet.recovery.standby-jvm: true; through REST: {summary(res['sb_running_rest'])}; "
            f"JobRunning event: {summary(res['sb_running_event'])}"),
        row("restore by hand -> RUNNING (no archive)", summary(res["manual"]),
            "the same java CliFrontend command without the archive options, same config.yaml, -s <copy of the same "
            f"checkpoint>, from the launch to the same log line; through REST: {summary(res['manual_rest'])}"),
    ]
    for key, what in (("", "no standby"), ("sb_", "standby")):
        steps = [f"{name} +{statistics.median(res[key + 'phase:' + name]):.0f}" for name, _ in PHASES
                 if res.get(key + "phase:" + name)]
        rows.append(row(f"where the time goes ({what})", "; ".join(steps) + " ms",
                        "median ms from the kill to the first JVM log line of each step of the restore"))
    rows.append(row("the standby's memory (idle, waiting)", summary(res["standby_rss"]).replace(" ms", " MiB"),
                    "VmRSS of the standby JVM once its launcher said it waits, before the kill: what "
                    "flinklet.recovery.standby-jvm costs the pod; of it anonymous (heap, metaspace, code, threads): "
                    f"{summary(res['standby_anon']).replace(' ms', ' MiB')}, file-backed (the class-data-sharing "
                    f"archive and the JDK's files, pages shared with the job's JVM): "
                    f"{summary(res['standby_file']).replace(' ms', ' MiB')}"))
    for key, what, goal in (("", "flinklet without standby", GOAL), ("sb_", "flinklet with standby", GOAL_STANDBY)):
        ratio = statistics.median(res[key + "running"]) / m_hand
        per_round = ", ".join(f"{a / b:.2f}" for a, b in zip(res[key + "running"], res["manual"]))
        rows.append(row(f"ratio: {what} / hand-run restore", f"{ratio:.2f} (target <= {goal}: "
                        f"{'met' if ratio <= goal else 'NOT met'})",
                        f"median kill->last task RUNNING over median launch->last task RUNNING (by hand, no archive), "
                        f"{ROUNDS} interleaved rounds; round by round {per_round}"))
    rows.append(row("checks", f"{checks['taken']} of {ROUNDS} standby rounds restored in the standby; "
                    f"{checks['with_archive']} of {ROUNDS} no-standby restores from the archive (warm-up: "
                    f"{warm['type']}); {checks['mismatches']} restore(s) of another than the newest checkpoint",
                    "the restored JVM's pid against the standby's, its /proc maps, restoredFrom against the newest "
                    "chk-N with _metadata after the kill"))
    return rows


if __name__ == "__main__":
    print_rows("recovery", run())

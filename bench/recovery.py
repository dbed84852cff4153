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


def run():
    f = Flinklet("recovery", job={"upgradeMode": "last-state"},
                 conf={"flinklet.jvm.class-data-sharing.dump-delay": "1 s"})
    res = {k: [] for k in ("gone", "noticed", "exited", "decision", "jvm_started", "running", "running_rest",
                           "running_event", "manual", "manual_rest")}
    mismatches = 0
    with_archive = 0
    try:
        warm = make_archive(f)
        for i in range(ROUNDS):
            rdir = os.path.join(f.dir, f"round-{i}")
            os.makedirs(rdir, exist_ok=True)
            f.start()
            st = f.wait_stable()
            job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
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
            shutil.copytree(chk, chk_copy)
            t_rest = poll_until_running(f.port, job_id, 120)
            st = f.wait_stable(not_pid=pid)
            t_run = wait_for(lambda: log_tasks_running_ms(f.log_path, offset, n_tasks), 10, "the tasks in the log")
            restored = (st.get("restoredFrom") or {}).get("location") or ""
            if not restored.rstrip("/").endswith(os.path.basename(chk)):
                mismatches += 1
                log(f"recovery: round {i}: flinklet restored {restored}, the copy is {chk}")
            argv, env = read_proc(st["jvm"]["pid"])
            with_archive += 1 if archive_of(st["jvm"]["pid"]) else 0
            ev = {t: f.first_event(t0, t) for t in ("JvmExited", "RestartScheduled", "JvmStarted", "JobRunning")}
            res["gone"].append(t_gone - t0)
            res["noticed"].append(ev["JvmExited"] - t_gone)
            res["exited"].append(ev["JvmExited"] - t0)
            res["decision"].append(ev["RestartScheduled"] - t0)
            res["jvm_started"].append(ev["JvmStarted"] - t0)
            res["running_event"].append(ev["JobRunning"] - t0)
            res["running"].append(t_run - t0)
            res["running_rest"].append(t_rest - t0)
            f.stop()
            f.proc = None
            m_log, m_rest = manual_restore(rdir, argv, env, chk_copy, f.port, job_id, n_tasks)
            res["manual"].append(m_log)
            res["manual_rest"].append(m_rest)
            log(f"recovery: round {i + 1}/{ROUNDS}: gone {res['gone'][-1]:.0f} ms, noticed +{res['noticed'][-1]:.0f} "
                f"ms, decision {res['decision'][-1]:.0f} ms, RUNNING "
                f"{res['running'][-1]:.0f} ms; by hand {res['manual'][-1]:.0f} ms")
    finally:
        f.stop()
    rows = [
        row("kill -9 -> JVM gone (kernel)", summary(res["gone"]),
            "pidfd of the JVM readable (the process has exited) - kill time: the kernel tearing down ~1 GB of JVM"),
        row("JVM gone -> JvmExited (flinklet noticed)", summary(res["noticed"]),
            "JvmExited event timeMs - the pidfd time (SIGCHLD through signalfd on the event loop)"),
        row("kill -9 -> restart decision", summary(res["decision"]), "RestartScheduled event timeMs - kill time"),
        row("kill -9 -> new JVM launched", summary(res["jvm_started"]),
            "JvmStarted event timeMs - kill time (the first crash of a RUNNING job: no backoff)"),
        row("kill -9 -> job RUNNING (flinklet)", summary(res["running"]),
            "to the JVM's log line of the last task switching INITIALIZING -> RUNNING (ExecutionGraph), from the kill; "
            f"as GET /jobs/:id (50 ms poll, 3 s REST cache) shows it: {summary(res['running_rest'])}; flinklet's "
            f"JobRunning event (2 s poll): {summary(res['running_event'])}"),
        row("restore by hand -> RUNNING (no archive)", summary(res["manual"]),
            "the same java CliFrontend command without the archive options, same config.yaml, -s <copy of the same "
            f"checkpoint>, from the launch to the same log line; through REST: {summary(res['manual_rest'])}"),
    ]
    m_fl, m_hand = statistics.median(res["running"]), statistics.median(res["manual"])
    ratio = m_fl / m_hand
    per_round = ", ".join(f"{a / b:.2f}" for a, b in zip(res["running"], res["manual"]))
    rows.append(row("goal: flinklet with archive / hand-run restore without", f"{ratio:.2f} (target <= {GOAL}: "
                    f"{'met' if ratio <= GOAL else 'NOT met'})",
                    f"median kill->last task RUNNING (flinklet, class-data-sharing archive, no backoff) over median "
                    f"launch->last task RUNNING (by hand, no archive), {ROUNDS} interleaved rounds; round by round "
                    f"{per_round}; {with_archive} of {ROUNDS} restores started from the archive (warm-up: "
                    f"{warm['type']})"
                    + (f"; {mismatches} round(s) restored another checkpoint than the copy" if mismatches else "")))
    return rows


if __name__ == "__main__":
    print_rows("recovery", run())

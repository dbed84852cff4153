"""Upgrades (issue 38, item 3: "shorter upgrades where the JVM can stay"): the test job under flinklet, upgraded by
  (a) an argument change (spec.job.args: --work 0 added or taken away, the same records),
  (b) a new jar path (spec.job.jarURI: one copy of the test jar, then another),
  (c) a Flink option the JVM needs (taskmanager.memory.managed.size: 96m, then 128m; it moves the heap too),
once on today's path (flinklet.upgrade.keep-jvm: false: every upgrade stops the job with a savepoint, the JVM ends and
a new one restores it) and once on the new one (true, the default: a change of the job alone is submitted to the
running JVM after the stop-with-savepoint; (c) still takes a new JVM there), in one run, one flinklet after the
other, the same rounds in the same order.

Each upgrade: the configuration file replaced (the change), then
  - change -> RUNNING: from the file's replacement to flinklet's JobRunning event of the upgraded job (its own clock,
    the same as this process's), and whether the JVM stayed (the same jvm.pid, jvm.starts unchanged);
  - the gap in the committed output: a watcher lists the FileSink's output every 20 ms and notes when each committed
    file (part-*, the sink renames it into place when the checkpoint or savepoint that covers it completes) is first
    seen; the gap is the longest time without a new committed file from the last one before the change to the first
    one after the upgraded job was RUNNING (the new job's first checkpoint). The old job's last records are
    committed on its stop-with-savepoint, or, when the savepoint's completion did not reach the sink before the job
    ended, by the new job as it restores: either way the gap is how long a reader of the output sees nothing new,
    from the last record before to the first after.
Medians over BENCH_UPGRADE_ROUNDS rounds (default 3) of each kind. Then, on the new path, BENCH_UPGRADE_REPEAT (10)
argument upgrades in a row in one JVM, its resident memory and metaspace after each: what successive jobs leave. The output of each flinklet is checked at the end
(tests/jobs/check_output.py: no record twice, none missing: exactly once across every upgrade). The goal (issue 38):
the job-only upgrade's gap at most a third of today's. Nothing here asserts a timing."""
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import JOBS_JAR, ROOT, Flinklet, log, now_ms, proc_rss, row, wait_for  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_UPGRADE_ROUNDS", "3"))
# then, on the same-JVM path, this many argument upgrades in a row in one JVM: what successive jobs leave in it
REPEAT = int(os.environ.get("BENCH_UPGRADE_REPEAT", "10"))
# which paths: "today,in-jvm" (both, the default), or one of them
PATHS = [p for p in os.environ.get("BENCH_UPGRADE_PATHS", "today,in-jvm").split(",") if p]
KINDS = ("arguments", "jar", "flink option")
GOAL = 1 / 3
CHECK = os.path.join(ROOT, "tests", "jobs", "check_output.py")


class OutputWatcher(threading.Thread):
    """Notes when each committed file of the sink's output first appears (epoch ms)."""

    def __init__(self, root, interval=0.02):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.seen = {}  # path -> epoch ms first seen
        self.lock = threading.Lock()
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            t = now_ms()
            for dirpath, dirnames, filenames in os.walk(self.root):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for name in filenames:
                    if name.startswith("."):
                        continue
                    p = os.path.join(dirpath, name)
                    with self.lock:
                        self.seen.setdefault(p, t)
            self.done.wait(self.interval)

    def times(self):
        with self.lock:
            return sorted(self.seen.values())

    def stop(self):
        self.done.set()
        self.join(5)


class UpgradeFlinklet(Flinklet):
    """The bench's flinklet, its jar path and its Flink option changeable."""

    def __init__(self, name, keep_jvm, jars):
        self.jar = jars[0]
        self.managed = "96m"
        super().__init__(name, conf={"flinklet.upgrade.keep-jvm": "true" if keep_jvm else "false",
                                     "taskmanager.memory.managed.size": self.managed,
                                     # each upgraded spec is on trial until its readiness window ends: a short
                                     # one, so that every round starts from a STABLE spec
                                     "kubernetes.operator.deployment.readiness.timeout": "10 s",
                                     # no dump of a class-data-sharing archive while the rounds run (it pauses
                                     # the job): every JVM starts as the first one did
                                     "flinklet.jvm.class-data-sharing": "off"})

    def write_config(self):
        self.conf["taskmanager.memory.managed.size"] = getattr(self, "managed", "96m")
        super().write_config()
        if getattr(self, "jar", None):
            with open(self.config) as f:
                text = f.read()
            text = text.replace(f"jarURI: local://{JOBS_JAR}", f"jarURI: local://{self.jar}")
            with open(self.config + ".new", "w") as f:
                f.write(text)
            os.replace(self.config + ".new", self.config)


def change(f, kind, jars):
    if kind == "arguments":
        args = f.job["args"]
        f.job["args"] = args[:-2] if args[-2:] == ["--work", "0"] else args + ["--work", "0"]
    elif kind == "jar":
        f.jar = jars[1] if f.jar == jars[0] else jars[0]
    else:
        f.managed = "128m" if f.managed == "96m" else "96m"
    t0 = now_ms()
    f.write_config()
    return t0


def one_upgrade(f, kind, jars, watcher):
    st = f.wait_stable()
    pid, starts = st["jvm"]["pid"], st["jvm"]["starts"]
    f.wait_checkpoint(f.last_checkpoint_id() + 2)
    time.sleep(0.3)
    t0 = change(f, kind, jars)
    ev = wait_for(lambda: f.events_after(t0, {"JobRunning"}), 180, f"the job RUNNING after the {kind} upgrade",
                  interval=0.05)[0]
    t_run = ev["timeMs"]
    st = f.wait_stable()
    stayed = st["jvm"]["pid"] == pid
    # the new job's first checkpoints commit its first output
    f.wait_checkpoint(f.last_checkpoint_id() + 2)
    time.sleep(0.5)
    times = watcher.times()
    before = [t for t in times if t < t0]
    after = [t for t in times if t >= t_run]
    if not before or not after:
        raise RuntimeError(f"no committed output on both sides of the {kind} upgrade")
    # the longest wait for new output from the last commit before the change to the first after RUNNING (the old
    # job's last files are committed on its savepoint, or by the new job as it restores)
    window = [t for t in times if before[-1] <= t <= after[0]]
    gap = max(b - a for a, b in zip(window, window[1:]))
    resub = f.events_after(t0, {"JobResubmitted"})
    log(f"upgrade: {f.dir.rsplit('/', 1)[1]} {kind}: change -> RUNNING {t_run - t0:.0f} ms, output gap {gap:.0f} ms, "
        f"JVM {'stayed (pid %d)' % pid if stayed else 'new (pid %d -> %d)' % (pid, st['jvm']['pid'])}, "
        f"jvm.starts {starts} -> {st['jvm']['starts']}{', JobResubmitted' if resub else ''}")
    return {"running": t_run - t0, "gap": gap, "stayed": stayed, "starts": st["jvm"]["starts"] - starts}


def metaspace_used(pid):
    """The JVM's metaspace in use (MiB, jcmd GC.heap_info), or None."""
    jcmd = shutil.which("jcmd")
    if not jcmd:
        return None
    out = subprocess.run([jcmd, str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"Metaspace\s+used (\d+)K", out)
    return int(m.group(1)) / 1024 if m else None


def repeated(f, jars, watcher):
    """REPEAT argument upgrades in a row: the JVM's resident memory and metaspace after each."""
    pid = f.wait_stable()["jvm"]["pid"]
    samples = [(proc_rss(pid) / (1 << 20), metaspace_used(pid))]
    stayed = 0
    for _ in range(REPEAT):
        r = one_upgrade(f, "arguments", jars, watcher)
        stayed += r["stayed"] and f.jvm_pid() == pid
        samples.append((proc_rss(pid) / (1 << 20), metaspace_used(pid)))
    log(f"upgrade: {REPEAT} in a row: RSS {' '.join(f'{x[0]:.0f}' for x in samples)} MiB; metaspace "
        f"{' '.join(f'{x[1]:.1f}' if x[1] is not None else '?' for x in samples)} MiB")
    return {"stayed": stayed, "samples": samples}


def run_path(name, keep_jvm, jars):
    f = UpgradeFlinklet(f"upgrade-{name}", keep_jvm, jars)
    watcher = OutputWatcher(f.output)
    res = {k: [] for k in KINDS}
    try:
        f.start()
        f.wait_stable()
        watcher.start()
        for i in range(ROUNDS):
            for kind in KINDS:
                res[kind].append(one_upgrade(f, kind, jars, watcher))
        if keep_jvm and REPEAT > 0:
            res["repeat"] = repeated(f, jars, watcher)
        rc = f.stop(60)
    finally:
        watcher.stop()
        if f.proc and f.proc.poll() is None:
            f.stop()
    chk = subprocess.run([sys.executable, CHECK, f.output], capture_output=True, text=True)
    log(f"upgrade: {name}: flinklet exited {rc}; output {chk.stdout.strip()}")
    return res, chk.returncode == 0, chk.stdout.strip(), rc


def med(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    return f"median {med(values):.0f} ms (min {min(values):.0f}, max {max(values):.0f}, n={len(values)})"


def run():
    jdir = os.path.join(os.environ.get("FLINKLET_BENCH_DIR", os.path.join(ROOT, "build", "bench")), "upgrade-jars")
    os.makedirs(jdir, exist_ok=True)
    jars = []
    for n in ("a", "b"):
        p = os.path.join(jdir, f"flinklet-test-jobs-{n}.jar")
        shutil.copyfile(JOBS_JAR, p)
        jars.append(p)
    results = {}
    for name in PATHS:
        results[name] = run_path(name, name == "in-jvm", jars)
    rows = []
    print("\n  upgrade        path      change->RUNNING (median)  output gap (median)  JVM stayed  jvm.starts +")
    for kind in KINDS:
        for name in PATHS:
            r = results[name][0][kind]
            print(f"  {kind:<14} {name:<9} {med([x['running'] for x in r]):>10.0f} ms {'':>12}"
                  f"{med([x['gap'] for x in r]):>10.0f} ms {'':>7}{sum(x['stayed'] for x in r)}/{len(r)}"
                  f"{'':>8}{sum(x['starts'] for x in r)}")
            rows.append(row(f"{kind} upgrade, {name}: change -> RUNNING", spread([x["running"] for x in r]),
                            "config file replaced -> flinklet's JobRunning event"))
            rows.append(row(f"{kind} upgrade, {name}: committed output gap", spread([x["gap"] for x in r]),
                            "longest wait for a new committed file, last before the change -> first after RUNNING "
                            "(listed every 20 ms)"))
            rows.append(row(f"{kind} upgrade, {name}: JVM stayed", f"{sum(x['stayed'] for x in r)} of {len(r)} "
                            f"(jvm.starts +{sum(x['starts'] for x in r)})", "jvm.pid and jvm.starts in status.json"))
    for name in PATHS:
        _, ok, summary, rc = results[name]
        rows.append(row(f"{name}: output exactly once", f"{'yes' if ok else 'NO'} {summary}; flinklet exit {rc}",
                        "tests/jobs/check_output.py on the whole output"))
    rep = results.get("in-jvm", ({},))[0].get("repeat")
    if rep:
        (rss0, ms0), (rss1, ms1) = rep["samples"][0], rep["samples"][-1]
        peak = max(x[0] for x in rep["samples"])
        meta = f", metaspace used {ms0:.1f} -> {ms1:.1f} MiB" if ms0 is not None and ms1 is not None else ""
        rows.append(row(f"in-jvm: {REPEAT} argument upgrades in a row", f"JVM stayed {rep['stayed']} of {REPEAT}; "
                        f"RSS {rss0:.0f} -> {rss1:.0f} MiB (peak {peak:.0f}){meta}",
                        "VmRSS of the JVM and jcmd GC.heap_info before the first and after each"))
    if "today" in results and "in-jvm" in results:
        for kind in ("arguments", "jar"):
            old = med([x["gap"] for x in results["today"][0][kind]])
            new = med([x["gap"] for x in results["in-jvm"][0][kind]])
            ratio = new / old if old else float("nan")
            rows.append(row(f"{kind} upgrade: in-JVM gap / today's", f"{ratio:.2f} (goal <= {GOAL:.2f}: "
                            f"{'met' if ratio <= GOAL else 'not met'})", "medians of the gaps above"))
    return rows


if __name__ == "__main__":
    from common import print_rows
    print_rows("upgrade", run())

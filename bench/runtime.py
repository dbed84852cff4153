"""11. The Flink runtime (issue 37): what the official distribution's classpath costs against the module jars'.
`make flink-lib` builds the distribution's lib/ (flink-dist-<v>.jar with everything in it, the Table API's uber jar
and planner loader, flink-cep, the formats, flink-scala, log4j; from PyPI's apache-flink-libraries) and
`make flink-lib FLINK_RUNTIME=modules` the module jars from Maven Central (what flinklet used before: only what a
MiniCluster, the Table API and RocksDB/ForSt need). Both have flinklet's launcher and reporter.

Each round starts the same job (StatefulCounter, parallelism 2, 1536m budget) on each runtime, interleaved, each
first in turn, class-data sharing off (an archive would hide the class loading this compares): from the start of
`flinklet run` to flinklet's JobRunning event (events.jsonl) and the JVM's CPU time then, then the JVM's resident
memory (VmRSS) after the job ran SETTLE seconds with checkpoints every second. Also the size of lib/ (and opt/) on disk, which the image carries.
FLINK_HOME is the distribution's runtime; FLINKLET_MODULES_HOME (build/flink-<v>-modules) the modules'."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (FLINK_HOME, FLINK_VERSION, ROOT, Flinklet, log, mib, print_rows, proc_cpu_seconds,  # noqa: E402
                    proc_rss, row)

ROUNDS = int(os.environ.get("BENCH_RUNTIME_ROUNDS", "3"))
SETTLE = float(os.environ.get("BENCH_RUNTIME_SETTLE", "30"))
MODULES_HOME = os.environ.get("FLINKLET_MODULES_HOME",
                              os.path.join(ROOT, "build", f"flink-{FLINK_VERSION}-modules"))
HOMES = {"distribution": FLINK_HOME, "modules": MODULES_HOME}


def disk(home):
    total, jars = 0, 0
    for sub in ("lib", "opt"):
        d = os.path.join(home, sub)
        for name in os.listdir(d) if os.path.isdir(d) else []:
            if name.endswith(".jar"):
                total += os.path.getsize(os.path.join(d, name))
                jars += 1
    return total, jars


def one(name, home, i):
    f = Flinklet(f"runtime-{name}-{i}", conf={"flinklet.jvm.class-data-sharing": "off"}, flink_home=home)
    try:
        t0 = time.time() * 1000
        f.start()
        st = f.wait_stable()
        pid = st["jvm"]["pid"]
        cpu = proc_cpu_seconds(pid)
        running = [e["timeMs"] for e in f.events() if e["type"] == "JobRunning"]
        start_ms = running[0] - t0
        time.sleep(SETTLE)
        rss = proc_rss(pid)
        f.wait_checkpoint(3)
    finally:
        f.stop()
    return start_ms, cpu, rss


def summary(values, fmt):
    return f"median {fmt(statistics.median(values))} (min {fmt(min(values))}, max {fmt(max(values))}, n={len(values)})"


def run():
    for name, home in HOMES.items():
        if not os.path.isdir(os.path.join(home, "lib")):
            raise RuntimeError(f"no {name} runtime in {home}: make flink-lib"
                               + (" FLINK_RUNTIME=modules" if name == "modules" else ""))
    res = {name: {"start": [], "cpu": [], "rss": []} for name in HOMES}
    order = list(HOMES.items())
    for i in range(ROUNDS):
        for name, home in order[i % 2:] + order[:i % 2]:
            s, c, r = one(name, home, i)
            res[name]["start"].append(s)
            res[name]["cpu"].append(c)
            res[name]["rss"].append(r)
            log(f"runtime: round {i + 1}/{ROUNDS} {name}: start -> RUNNING {s:.0f} ms, JVM CPU {c:.1f} s, "
                f"JVM RSS {mib(r):.0f} MiB")
    rows = []
    for name, home in HOMES.items():
        size, jars = disk(home)
        rows.append(row(f"{name}: start -> RUNNING", summary(res[name]["start"], lambda v: f"{v:.0f} ms"),
                        f"`flinklet run` to the JobRunning event, CDS off; {ROUNDS} interleaved rounds; {home}"))
        rows.append(row(f"{name}: JVM CPU time to RUNNING", summary(res[name]["cpu"], lambda v: f"{v:.1f} s"),
                        "user + system time of the JVM when flinklet first sees the job RUNNING (less sensitive to "
                        "other processes on the machine than the wall time)"))
        rows.append(row(f"{name}: JVM RSS after {SETTLE:.0f} s RUNNING", summary(res[name]["rss"], lambda v: f"{mib(v):.0f} MiB"),
                        "VmRSS of the MiniCluster JVM, StatefulCounter at 200 records/s, checkpoints every 1 s"))
        rows.append(row(f"{name}: jars on disk", f"{mib(size):.0f} MiB in {jars} jars", "lib/ and opt/ of the Flink home"))
    d, m = (statistics.median(res[n]["start"]) for n in HOMES)
    cd, cm = (statistics.median(res[n]["cpu"]) for n in HOMES)
    rd, rm = (statistics.median(res[n]["rss"]) for n in HOMES)
    rows.append(row("distribution - modules", f"start {d - m:+.0f} ms, JVM CPU {cd - cm:+.1f} s, "
                    f"RSS {(rd - rm) / 2**20:+.0f} MiB", "median minus median of the rows above"))
    return rows


if __name__ == "__main__":
    print_rows("flink runtime", run())

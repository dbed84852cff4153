"""1. Footprint: flinklet's own RSS and CPU share over a minute at steady state (job RUNNING, the always-on and
the operator's health checks, the autoscaler with a short control loop, a kubelet-like probe of /readyz and
/healthz every 10 s), its resident memory split into private (RssAnon) and mapped files (RssFile: shared
libraries), next to the goals of issue 15 (VmRSS <= 8 MiB, RssAnon <= 2 MiB), and the MiniCluster JVM's RSS; then
the same job on a standalone JobManager + TaskManager pair, and the ratio of the total RSS."""
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from common import (Flinklet, StandaloneCluster, log, mib, print_rows, proc_cpu_seconds, proc_rss,  # noqa: E402
                    proc_status_bytes, row, wait_for)

WARMUP_S = int(os.environ.get("BENCH_FOOTPRINT_WARMUP", "20"))
# another build of flinklet to measure the same way, one after the other (e.g. the main branch's, before issue 15)
BASELINE_BIN = os.environ.get("FLINKLET_BASELINE_BIN")
SAMPLE_S = int(os.environ.get("BENCH_FOOTPRINT_SECONDS", "60"))
PAIR_SAMPLE_S = int(os.environ.get("BENCH_FOOTPRINT_PAIR_SECONDS", "30"))

CONF = {
    "job.autoscaler.enabled": "true",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "job.autoscaler.metrics.window": "30 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "kubernetes.operator.cluster.health-check.enabled": "true",
}


def sample(pids, seconds, detail=None):
    """RSS of each pid once a second; returns {pid: [bytes...]}, and the CPU seconds each used over the span. With
    detail (a list), the /proc status fields of pids[0] go there once a second too."""
    rss = {p: [] for p in pids}
    cpu0 = {p: proc_cpu_seconds(p) for p in pids}
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for p in pids:
            rss[p].append(proc_rss(p))
        if detail is not None:
            detail.append(proc_status_bytes(pids[0]))
        time.sleep(1)
    wall = time.monotonic() - t0
    cpu = {p: proc_cpu_seconds(p) - cpu0[p] for p in pids}
    return rss, cpu, wall


def probe(port, stop):
    while not stop.is_set():
        for path in ("/readyz", "/healthz"):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2).read()
            except OSError:
                pass
        stop.wait(10)


def steady_detail(f):
    """flinklet f at steady state with the probes: its /proc status fields once a second over SAMPLE_S."""
    stop = threading.Event()
    try:
        f.start()
        f.wait_stable()
        threading.Thread(target=probe, args=(f.http_port, stop), daemon=True).start()
        time.sleep(WARMUP_S)
        detail = []
        sample([f.proc.pid], SAMPLE_S, detail)
        steady_detail.by_map = smaps_by_mapping(f.proc.pid)
        return detail
    finally:
        stop.set()
        f.stop()


def smaps_by_mapping(pid):
    """Rss in bytes of each mapped file (its base name; [heap], [stack], [anon] for the rest) of pid, from
    /proc/<pid>/smaps: which shared library costs what. {} when gone."""
    out = {}
    cur = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                parts = line.split()
                if not parts[0].endswith(":") and "-" in parts[0]:
                    cur = parts[5].rsplit("/", 1)[-1] if len(parts) >= 6 else "[anon]"
                elif parts[0] == "Rss:":
                    out[cur] = out.get(cur, 0) + int(parts[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def breakdown_row(by_map, label):
    top = sorted(by_map.items(), key=lambda kv: -kv[1])[:12]
    return row(f"flinklet RSS by mapping ({label})", "; ".join(f"{k} {v / 1024:.0f} KiB" for k, v in top),
               "Rss of each mapping of /proc/<pid>/smaps summed per file, at the end of the sampling; the 12 largest")


def mean_mib(detail, key):
    v = [d[key] for d in detail if key in d]
    return mib(statistics.mean(v)) if v else float("nan")


def baseline_row(detail):
    """The same run with FLINKLET_BASELINE_BIN, next to this build's figures."""
    log(f"footprint: the same with the baseline build {BASELINE_BIN}")
    base = steady_detail(Flinklet("footprint-baseline", conf=CONF, job={"upgradeMode": "last-state"},
                                  binary=BASELINE_BIN))
    cols = [f"{k} {mean_mib(detail, k):.2f} / {mean_mib(base, k):.2f} MiB" for k in ("VmRSS", "RssAnon", "RssFile")]
    return breakdown_row(getattr(steady_detail, "by_map", {}), "baseline"), row("flinklet RSS, this build / baseline", "; ".join(cols),
               f"means of /proc/<pid>/status over {SAMPLE_S} s each, the same job and settings, one run after the "
               f"other; baseline {BASELINE_BIN}")


def run():
    rows = []
    f = Flinklet("footprint", conf=CONF, job={"upgradeMode": "last-state"})
    stop = threading.Event()
    try:
        log("footprint: flinklet with the autoscaler (3 s loop) and health checks on")
        f.start()
        st = f.wait_stable()
        jvm = st["jvm"]["pid"]
        threading.Thread(target=probe, args=(f.http_port, stop), daemon=True).start()
        log(f"footprint: warming up {WARMUP_S} s, then sampling {SAMPLE_S} s")
        time.sleep(WARMUP_S)
        detail = []
        rss, cpu, wall = sample([f.proc.pid, jvm], SAMPLE_S, detail)
        by_map = smaps_by_mapping(f.proc.pid)
        if f.jvm_pid() != jvm:
            log("footprint: WARNING: the JVM changed during sampling")
        stop.set()
        fl_rss = statistics.mean(rss[f.proc.pid])
        fl_max = max(rss[f.proc.pid])
        jvm_rss = statistics.mean(rss[jvm])
        scalings = [e for e in f.events() if e["type"] in ("ScalingReport", "ScalingApplied", "AutoscalerError")]
    finally:
        stop.set()
        f.stop()
    rows.append(row("flinklet RSS (steady state)", f"{mib(fl_rss):.1f} MiB mean, {mib(fl_max):.1f} MiB max (goal <= 8 MiB)",
                    f"VmRSS of the flinklet process once a second over {wall:.0f} s, after {WARMUP_S} s warm-up"))
    anon = [d["RssAnon"] for d in detail if "RssAnon" in d]
    files = [d["RssFile"] for d in detail if "RssFile" in d]
    if anon and files:
        rows.append(row("flinklet private / mapped-file RSS",
                        f"RssAnon {mib(statistics.mean(anon)):.2f} MiB mean, {mib(max(anon)):.2f} MiB max "
                        f"(goal <= 2 MiB); RssFile {mib(statistics.mean(files)):.2f} MiB mean",
                        "RssAnon (heap, stacks, relocated library data: the process's own) and RssFile (pages of the "
                        "binary and its shared libraries it touched) from /proc/<pid>/status, same samples"))
    rows.append(breakdown_row(by_map, "this build"))
    rows.append(row("flinklet CPU share", f"{100 * cpu[f.proc.pid] / wall:.2f} % of one core",
                    f"(utime+stime) of flinklet over the same {wall:.0f} s / wall time; autoscaler loop 3 s, "
                    "health checks on, /readyz+/healthz every 10 s"))
    rows.append(row("MiniCluster JVM RSS (flinklet)", f"{mib(jvm_rss):.0f} MiB",
                    f"VmRSS of the one JVM, mean over the same window (spec.resources.memory {f.memory}); "
                    f"JVM CPU {100 * cpu[jvm] / wall:.1f} % of one core"))
    if BASELINE_BIN:
        rows.extend(baseline_row(detail))
    one = fl_rss + jvm_rss
    log(f"footprint: {len(scalings)} autoscaler events during the run")

    c = StandaloneCluster("footprint-pair")
    try:
        log("footprint: standalone JobManager + TaskManager pair, same job")
        c.start()
        c.submit(os.path.join(c.dir, "output"))
        jm, tm = c.procs["jobmanager"].pid, c.procs["taskmanager"].pid
        time.sleep(WARMUP_S)
        rss2, cpu2, wall2 = sample([jm, tm], PAIR_SAMPLE_S)
        jm_rss, tm_rss = statistics.mean(rss2[jm]), statistics.mean(rss2[tm])
    finally:
        c.stop()
    pair = jm_rss + tm_rss
    rows.append(row("standalone JM + TM RSS", f"{mib(pair):.0f} MiB (JM {mib(jm_rss):.0f} + TM {mib(tm_rss):.0f})",
                    f"VmRSS of both JVMs, mean over {wall2:.0f} s after {WARMUP_S} s warm-up (JM -Xmx512m, "
                    "TM -Xmx768m, as tests/e2e/test_promotion.py); same job, same parallelism"))
    rows.append(row("memory ratio flinklet+JVM / JM+TM", f"{one / pair:.2f} ({mib(one):.0f} / {mib(pair):.0f} MiB)",
                    "sum of VmRSS of flinklet and its JVM over the sum of the pair's, measured one after the other "
                    "in this run"))
    return rows


if __name__ == "__main__":
    print_rows("footprint", run())

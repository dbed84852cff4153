"""1. Footprint: flinklet's own RSS and CPU share over a minute at steady state (job RUNNING, the always-on and
the operator's health checks, the autoscaler with a short control loop, a kubelet-like probe of /readyz and
/healthz every 10 s), next to the MiniCluster JVM's RSS; then the same job on a standalone JobManager +
TaskManager pair, and the ratio of the total RSS."""
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from common import (Flinklet, StandaloneCluster, log, mib, print_rows, proc_cpu_seconds, proc_rss, row,  # noqa: E402
                    wait_for)

WARMUP_S = int(os.environ.get("BENCH_FOOTPRINT_WARMUP", "20"))
SAMPLE_S = int(os.environ.get("BENCH_FOOTPRINT_SECONDS", "60"))
PAIR_SAMPLE_S = int(os.environ.get("BENCH_FOOTPRINT_PAIR_SECONDS", "30"))

CONF = {
    "job.autoscaler.enabled": "true",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "job.autoscaler.metrics.window": "30 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "kubernetes.operator.cluster.health-check.enabled": "true",
}


def sample(pids, seconds):
    """RSS of each pid once a second; returns {pid: [bytes...]}, and the CPU seconds each used over the span."""
    rss = {p: [] for p in pids}
    cpu0 = {p: proc_cpu_seconds(p) for p in pids}
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for p in pids:
            rss[p].append(proc_rss(p))
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
        rss, cpu, wall = sample([f.proc.pid, jvm], SAMPLE_S)
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
    rows.append(row("flinklet RSS (steady state)", f"{mib(fl_rss):.1f} MiB mean, {mib(fl_max):.1f} MiB max",
                    f"VmRSS of the flinklet process once a second over {wall:.0f} s, after {WARMUP_S} s warm-up"))
    rows.append(row("flinklet CPU share", f"{100 * cpu[f.proc.pid] / wall:.2f} % of one core",
                    f"(utime+stime) of flinklet over the same {wall:.0f} s / wall time; autoscaler loop 3 s, "
                    "health checks on, /readyz+/healthz every 10 s"))
    rows.append(row("MiniCluster JVM RSS (flinklet)", f"{mib(jvm_rss):.0f} MiB",
                    f"VmRSS of the one JVM, mean over the same window (spec.resources.memory {f.memory}); "
                    f"JVM CPU {100 * cpu[jvm] / wall:.1f} % of one core"))
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

"""Memory budget (issue 15, item 2): spec.resources.memory is a hard budget for the whole pod. The test job
(StatefulCounter, parallelism 2, BENCH_MEMORY_BACKEND state (hashmap), checkpoints every second) runs
BENCH_MEMORY_SECONDS (600) under
flinklet with `memory: BENCH_MEMORY_BUDGET` (256m), flinklet and its JVM inside a memory cgroup limited to the same
budget (the kernel's OOM killer enforces it; where no cgroup can be made the run is measured only, and the table
says so). Reported: the pod's peak (VmHWM of flinklet + VmHWM of the JVM, an upper bound of their peak together;
and the highest sum of their VmRSS sampled once a second), the cgroup's own peak charge (page cache of the
checkpoints and output included, which the kernel reclaims at the limit) and OOM kills, checkpoints completed, and
JVM restarts: a restart or an OOM kill makes the benchmark fail. Then the same job on the standalone JobManager +
TaskManager pair of bench/footprint.py, and the ratio of the two.

Memory tuning (issue 28): the same job with RocksDB at BENCH_MEMORY_TUNING_BUDGET (1g), side by side in one run:
untuned (the plain split of the budget), then with job.autoscaler.memory.tuning.enabled, maximize-managed-memory and
flinklet.memory-tuning.relaunch-above (the tuned JVM is relaunched from a savepoint as soon as the autoscaler has a
recommendation), each measured BENCH_MEMORY_TUNING_SECONDS (300) once its JVM runs: the pod's peak, heap, metaspace
and managed memory as launched, checkpoints, and that neither ran past the budget (a restart, an OOM kill or a
tuning undone fails the benchmark). BENCH_MEMORY_TUNING_SECONDS=0 leaves it out."""
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import Flinklet, StandaloneCluster, log, mib, proc_cpu_seconds, proc_rss, row  # noqa: E402
from testkit import RECOMMENDING_AUTOSCALER, MemoryLimit  # noqa: E402

SECONDS = int(os.environ.get("BENCH_MEMORY_SECONDS", "600"))
BUDGET = os.environ.get("BENCH_MEMORY_BUDGET", "256m")
BACKEND = os.environ.get("BENCH_MEMORY_BACKEND", "hashmap")
PAIR_WARMUP_S = int(os.environ.get("BENCH_FOOTPRINT_WARMUP", "20"))
PAIR_SAMPLE_S = int(os.environ.get("BENCH_MEMORY_PAIR_SECONDS", "60"))  # 0: no pair
TUNING_BUDGET = os.environ.get("BENCH_MEMORY_TUNING_BUDGET", "1g")
TUNING_SECONDS = int(os.environ.get("BENCH_MEMORY_TUNING_SECONDS", "300"))  # 0: no tuned run
# the autoscaler evaluates (and never rescales) often enough to recommend within minutes
AUTOSCALER_EVAL = RECOMMENDING_AUTOSCALER
TUNED = {
    "job.autoscaler.memory.tuning.enabled": "true",
    "job.autoscaler.memory.tuning.maximize-managed-memory": "true",
    "flinklet.memory-tuning.relaunch-above": "16m",
}


def budget_bytes(text):
    n, unit = int(text[:-1]), text[-1].lower()
    return n << {"m": 20, "g": 30}[unit]


def hwm(pid):
    """VmHWM (the peak of VmRSS) in bytes, 0 when gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0


def jvm_flags(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode().split("\0")
    except FileNotFoundError:
        return ""
    keep = ("-Xmx", "-Xms", "-XX:MaxMetaspaceSize", "-XX:ReservedCodeCacheSize", "-XX:MaxDirectMemorySize",
            "-XX:+UseSerialGC", "-XX:TieredStopAtLevel")
    return " ".join(a for a in argv if a.startswith(keep))


def managed_in_conf(state):
    """Flink's managed memory as flinklet wrote it for the running JVM (conf/config.yaml), e.g. "248m"."""
    try:
        with open(os.path.join(state, "conf", "config.yaml")) as f:
            m = re.search(r'"taskmanager\.memory\.managed\.size": "([^"]+)"', f.read())
            return m.group(1) if m else "?"
    except FileNotFoundError:
        return "?"


def wait_tuned(f, timeout=600):
    """Waits for the JVM flinklet relaunched with the tuning (MemoryTuned, then STABLE in a new JVM); its pid."""
    first = f.status()["jvm"]["pid"]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if f.proc.poll() is not None:
            raise RuntimeError(f"flinklet exited {f.proc.returncode} before the tuned JVM ran: see {f.log_path}")
        kinds = [e["type"] for e in f.events()]
        if "MemoryTuningUndone" in kinds:
            raise RuntimeError(f"the tuning was undone: see {f.log_path}")
        st = f.status() or {}
        running = ((st.get("autoscaler") or {}).get("memoryTuning") or {}).get("running")
        if running and st.get("lifecycleState") == "STABLE" and st["jvm"]["pid"] not in (0, first):
            return st["jvm"]["pid"]
        time.sleep(1)
    raise RuntimeError(f"no tuned JVM within {timeout} s: see {f.log_path}")


def run_flinklet(budget=BUDGET, backend=BACKEND, seconds=SECONDS, conf=None, tuned=False, name="memory"):
    limit = budget_bytes(budget)
    cg = MemoryLimit(f"flinklet-bench-{name}-{os.getpid()}", limit)
    enforced = cg.make()
    how = cg.describe() if enforced else f"measured only ({cg.why_not})"
    f = Flinklet(name, memory=budget, conf={"state.backend.type": backend, **(conf or {})})
    pid_fl = jvm = None
    try:
        log(f"memory: flinklet at memory {budget}, {backend} state backend{', tuned' if tuned else ''}, {how}")
        f.start(preexec_fn=cg.enter if enforced else None)
        pid_fl = f.proc.pid
        st = f.wait_stable()
        jvm = wait_tuned(f) if tuned else st["jvm"]["pid"]
        # the tuned pod's first JVM ran untuned: its charge is not the tuned one's
        peak_reset = tuned and enforced and cg.reset_peak()
        first_ckpt = f.last_checkpoint_id()
        flags = jvm_flags(jvm)
        managed = managed_in_conf(f.state)
        log(f"memory: JVM {jvm} RUNNING with {flags}, managed {managed}; running {seconds} s")
        cpu0, t0 = proc_cpu_seconds(jvm), time.monotonic()
        rss_sum, peak_sum, changed = [], 0, False
        while time.monotonic() - t0 < seconds:
            if f.proc.poll() is not None or f.jvm_pid() != jvm:
                changed = True
                break
            s = proc_rss(pid_fl) + proc_rss(jvm)
            rss_sum.append(s)
            peak_sum = max(peak_sum, s)
            time.sleep(1)
        wall = time.monotonic() - t0
        cpu = proc_cpu_seconds(jvm) - cpu0
        fl_hwm, jvm_hwm = hwm(pid_fl), hwm(jvm)
        st = f.status() or {}
        restarts = (st.get("jvm") or {}).get("restarts")
        if tuned and restarts:  # the relaunch with the tuning is a JVM start flinklet made on purpose
            restarts -= 1
        ckpts = f.last_checkpoint_id() - first_ckpt
        cgs = cg.stats() if enforced else {}
    finally:
        f.stop()
        cg.remove()
    if changed or restarts:
        raise RuntimeError(f"the JVM was restarted or flinklet exited during the run (restarts {restarts}, "
                           f"OOM kills {cgs.get('oom_kills')}): see {f.log_path}")
    if cgs.get("oom_kills"):
        raise RuntimeError(f"the cgroup's OOM killer fired {cgs['oom_kills']} times: see {f.log_path}")
    return {"limit": limit, "how": how, "enforced": enforced, "peak_reset": peak_reset, "flags": flags, "managed": managed, "wall": wall, "cpu": cpu,
            "fl_hwm": fl_hwm, "jvm_hwm": jvm_hwm, "peak_sum": peak_sum, "mean_sum": statistics.mean(rss_sum),
            "ckpts": ckpts, "restarts": restarts, "cg": cgs}


def run_pair():
    c = StandaloneCluster("memory-pair")
    try:
        log("memory: standalone JobManager + TaskManager pair, same job")
        c.start()
        c.submit(os.path.join(c.dir, "output"))
        jm, tm = c.procs["jobmanager"].pid, c.procs["taskmanager"].pid
        time.sleep(PAIR_WARMUP_S)
        sums = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < PAIR_SAMPLE_S:
            sums.append(proc_rss(jm) + proc_rss(tm))
            time.sleep(1)
        return {"mean": statistics.mean(sums), "hwm": hwm(jm) + hwm(tm), "jm_hwm": hwm(jm), "tm_hwm": hwm(tm),
                "wall": time.monotonic() - t0}
    finally:
        c.stop()


def tuning_rows():
    """The same RocksDB job at TUNING_BUDGET untuned and tuned, measured alike."""
    runs = [("untuned", run_flinklet(TUNING_BUDGET, "rocksdb", TUNING_SECONDS, AUTOSCALER_EVAL, name="untuned")),
            ("tuned", run_flinklet(TUNING_BUDGET, "rocksdb", TUNING_SECONDS, {**AUTOSCALER_EVAL, **TUNED}, tuned=True,
                                   name="tuned"))]
    rows = []
    for what, o in runs:
        pod = o["fl_hwm"] + o["jvm_hwm"]
        o["pod"] = pod
        rows.append(row(f"{what} at memory {TUNING_BUDGET} (rocksdb)",
                        f"pod peak {mib(pod):.0f} MiB = {100 * pod / o['limit']:.0f} % of the budget; "
                        f"{o['ckpts']} checkpoints in {o['wall']:.0f} s",
                        f"{o['flags']}, managed {o['managed']}; mean VmRSS sum {mib(o['mean_sum']):.0f} MiB; "
                        f"cgroup peak {mib(o['cg'].get('peak', 0)):.0f} MiB"
                        f"{' (since the tuned JVM started)' if o['peak_reset'] else ''}, "
                        f"{o['cg'].get('oom_kills', 0)} OOM kills"
                        if o["enforced"] else f"{o['flags']}, managed {o['managed']}; {o['how']}"))
    u, t = runs[0][1], runs[1][1]
    rows.append(row("tuned / untuned pod peak", f"{t['pod'] / u['pod']:.2f}",
                    "VmHWM sums at the same budget: the heap the job does not use goes to RocksDB's managed memory "
                    "(maximize-managed-memory), still inside the budget (no OOM kill, no restart, nothing undone)"))
    return rows


def run():
    rows = tuning_rows() if TUNING_SECONDS > 0 else []
    o = run_flinklet()
    pod = o["fl_hwm"] + o["jvm_hwm"]
    rows += [
        row("memory limit", f"{BUDGET}: {'enforced by a ' + o['how'] if o['enforced'] else o['how']}",
            "flinklet and its JVM in one memory cgroup under this process's own, limited to spec.resources.memory"),
        row(f"pod peak at memory {BUDGET}", f"{mib(pod):.0f} MiB = {100 * pod / o['limit']:.0f} % of the budget "
            f"(flinklet {mib(o['fl_hwm']):.1f} + JVM {mib(o['jvm_hwm']):.0f} MiB)",
            f"VmHWM of flinklet + VmHWM of the JVM after {o['wall']:.0f} s (an upper bound of their peak together); "
            f"the highest sampled VmRSS sum {mib(o['peak_sum']):.0f} MiB, mean {mib(o['mean_sum']):.0f} MiB"),
        row("cgroup peak charge, OOM kills", f"{mib(o['cg'].get('peak', 0)):.0f} MiB, {o['cg'].get('oom_kills', 0)} "
            f"OOM kills ({o['cg'].get('failcnt', 0)} times at the limit)" if o["enforced"] else "n/a",
            "memory.max_usage_in_bytes / memory.peak: page cache of checkpoints and output included, reclaimed by "
            "the kernel at the limit; an OOM kill would end the JVM"),
        row("checkpoints, JVM restarts", f"{o['ckpts']} checkpoints completed in {o['wall']:.0f} s, "
            f"{o['restarts']} restarts", "status.json: lastCheckpoint id advance, jvm.restarts; interval 1 s"),
        row("JVM flags derived", o["flags"], f"from spec.resources.memory {BUDGET}, {BACKEND} state backend, 2 slots "
            f"(src/config/membudget.c); JVM CPU {100 * o['cpu'] / o['wall']:.1f} % of one core"),
    ]
    if PAIR_SAMPLE_S <= 0:
        return rows
    p = run_pair()
    rows.append(row("standalone JM + TM", f"{mib(p['hwm']):.0f} MiB VmHWM (JM {mib(p['jm_hwm']):.0f} + TM "
                    f"{mib(p['tm_hwm']):.0f}), {mib(p['mean']):.0f} MiB mean VmRSS",
                    f"the pair of bench/footprint.py (JM -Xmx512m, TM -Xmx768m), {p['wall']:.0f} s after "
                    f"{PAIR_WARMUP_S} s warm-up; same job, same parallelism"))
    rows.append(row("pod / JM + TM", f"{pod / p['hwm']:.2f} peak to peak, {o['mean_sum'] / p['mean']:.2f} mean to "
                    "mean (goal <= 0.5)", "VmHWM sums over VmHWM sums; mean VmRSS sums over mean VmRSS sums"))
    return rows


if __name__ == "__main__":
    from common import print_rows
    print_rows("memory", run())

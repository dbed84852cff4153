#!/usr/bin/env python3
"""flinklet's benchmarks (issue 9), each runnable alone:

    python3 bench/run.py footprint|recovery|shutdown|autoscaler|http|startup|memory|page|image|state|promtext|runtime|upgrade|all

Every benchmark runs the real build/flinklet, the real Flink jars (FLINK_HOME, default build/flink-2.2.1) and the
real test job (FLINKLET_JOBS_JAR), measures side by side in one run, prints its figures, and asserts no timing.
At the end one table: figure, value, method. The results also go to build/bench/results.json and
build/bench/table.md (for docs/performance.md)."""
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, FLINK_HOME, ROOT, WORK, check_components, print_rows, row  # noqa: E402

BENCHMARKS = {
    "footprint": "footprint",
    "recovery": "recovery",
    "shutdown": "shutdown",
    "autoscaler": "autoscaler",
    "http": "http_endpoint",
    "startup": "startup_latency",
    "memory": "memory",
    "page": "status_page",
    "image": "image",
    "state": "state",
    "promtext": "promtext",
    "runtime": "runtime",
    "upgrade": "upgrade",
}


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB, Linux {platform.release()}, "
            f"{java[0] if java else 'java ?'}, Flink {os.path.basename(FLINK_HOME).replace('flink-', '')}")


def table(results):
    lines = ["| benchmark | figure | value | method |", "|---|---|---|---|"]
    for name, rows in results:
        for r in rows:
            lines.append(f"| {name} | {r['figure']} | {r['value']} | {r['method']} |")
    return "\n".join(lines)


def main(argv):
    names = argv[1:] or ["all"]
    if names == ["all"]:
        names = list(BENCHMARKS)
    bad = [n for n in names if n not in BENCHMARKS]
    if bad:
        sys.exit(f"usage: {argv[0]} {'|'.join(BENCHMARKS)}|all  (unknown: {' '.join(bad)})")
    check_components()
    os.makedirs(WORK, exist_ok=True)
    started = time.time()
    load_start = os.getloadavg()
    results = []
    failed = []
    for n in names:
        t0 = time.monotonic()
        print(f"\n#### {n}", flush=True)
        try:
            rows = importlib.import_module(BENCHMARKS[n]).run()
        except Exception as e:  # a benchmark that cannot finish says why and the others still run
            traceback.print_exc()
            rows = [row("(not measured)", f"failed: {e}", "see the output above")]
            failed.append(n)
        rows.append(row("duration of this benchmark", f"{time.monotonic() - t0:.0f} s", "wall time"))
        print_rows(n, rows)
        results.append((n, rows))
    info = {"command": " ".join(["python3", "bench/run.py", *argv[1:]]) or "python3 bench/run.py all",
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started)),
            "machine": machine() + "; load average {:.1f} at the start, {:.1f} at the end (1 min)".format(
                load_start[0], os.getloadavg()[0]),
            "flinklet": BIN, "results": {n: rows for n, rows in results}}
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(info, f, indent=1)
    text = table(results)
    with open(os.path.join(WORK, "table.md"), "w") as f:
        f.write(f"{info['started']}, {info['machine']}\n\n{text}\n")
    print(f"\n==== flinklet benchmarks ({info['started']}; {info['machine']})\n")
    print(text)
    print(f"\n(also in {os.path.relpath(os.path.join(WORK, 'table.md'), ROOT)} and results.json)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

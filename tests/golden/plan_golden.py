#!/usr/bin/env python3
"""plan_golden: a fixed, generated set of `flinklet autoscaler plan` inputs whose outputs are pinned, byte for
byte, so that work on the autoscaler's speed (issue 15, item 3) cannot change a decision unnoticed.

The inputs come from a seeded generator (no files to keep in sync): windows of samples with values of every
kind the rounding and the window functions meet (many decimals, exact ties at the 4th decimal, sums such as
0.1 + 0.2, huge and tiny numbers, negative numbers, NaN, infinities, nulls, vertices missing from samples),
evaluated-metrics inputs, scaling history, delayed scale-downs, and random options (aggregators, bounds,
alignment modes, exclusions, quotas, metrics-only mode). The docs' examples are in the set too, and so are the
plan documents of tests/golden/cases/ (each reproduces a defect found from outside).
tests/golden/plan-golden.sha256 holds, per case, the SHA-256 of plan's stdout (or of its exit code and stderr
when the input is rejected).

    python3 tests/golden/plan_golden.py check  [--bin build/flinklet]   # compare (exit 1 on a difference)
    python3 tests/golden/plan_golden.py record [--bin build/flinklet]   # rewrite the pinned hashes
    python3 tests/golden/plan_golden.py dump DIR                        # write the inputs to DIR

tests/e2e/test_plan_golden.py runs `check` (it needs the binary only, no Flink)."""
import argparse
import glob
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
GOLDEN = os.path.join(HERE, "plan-golden.sha256")
NOW = 1767225600000 + 3600 * 1000

SHIPS = ["HASH", "REBALANCE", "RESCALE", "FORWARD", "CUSTOM", "BROADCAST", "GLOBAL", "SHUFFLE", "UNKNOWN"]


def awkward(rnd, scale):
    """A value of the kinds that stress rounding to 3 decimals of the shortest decimal form."""
    k = rnd.randrange(14)
    if k == 0:
        return round(rnd.uniform(0, scale), 3)  # already 3 decimals
    if k == 1:
        return rnd.randrange(0, int(scale) + 1) + rnd.choice([0.0005, 0.0015, 0.9995, 0.4995, 0.0004999])
    if k == 2:
        return rnd.choice([0.1 + 0.2, 1.1 * 1.1, 2.675, 1.0005, 0.0005, 0.00049999999999999, 1e-7, 123.4565])
    if k == 3:
        return rnd.uniform(0, scale) * rnd.choice([1e-6, 1e-3, 1, 1e3, 1e9, 1e13, 1e17])
    if k == 4:
        return float(rnd.randrange(0, 1 << 53)) if rnd.random() < 0.5 else float(rnd.randrange(0, 10 ** 6))
    if k == 5:
        return -rnd.uniform(0, scale)
    if k == 6:
        return rnd.choice(["NaN", "Infinity", "-Infinity", None])
    if k == 7:
        return rnd.randrange(1, 10 ** 6) / rnd.choice([3, 7, 9, 1000, 1024, 10 ** 7])
    if k == 8:
        return float(f"{rnd.uniform(0, scale):.{rnd.randrange(1, 17)}g}")
    if k == 9:  # next to a tie at the 4th decimal, either side, one ulp away
        import math
        x = rnd.randrange(0, 10 ** 5) / 1000 + 0.0005
        return math.nextafter(x, rnd.choice([0.0, math.inf]))
    if k == 10:
        return rnd.uniform(0.9994, 1.0006) * 10 ** rnd.randrange(-4, 8)
    return rnd.uniform(0, scale)


def topology(rnd, n):
    vs = []
    for i in range(n):
        vid = "".join(rnd.choice("0123456789abcdef") for _ in range(32)) if rnd.random() < 0.7 else f"v{i}"
        inputs = []
        if i and rnd.random() < 0.85:
            for u in rnd.sample(range(i), min(i, rnd.choice([1, 1, 1, 2, 3]))):
                inputs.append({"id": vs[u]["id"], "shipStrategy": rnd.choice(SHIPS + ["HASH", "REBALANCE"])})
        maxp = rnd.choice([1, 2, 7, 32, 128, 128, 720, 32768])
        v = {"id": vid, "parallelism": rnd.randrange(1, min(maxp, 40) + 1), "maxParallelism": maxp,
             "inputs": inputs}
        if not inputs and rnd.random() < 0.5:
            v["numSourcePartitions"] = rnd.choice([0, 1, 3, 4, 16, 50, 64, 1000])
        if rnd.random() < 0.3:
            v["slotSharingGroup"] = rnd.choice(["default", "a", "b"])
        vs.append(v)
    return vs


def config(rnd):
    c = {}
    pick = [
        ("job.autoscaler.utilization.target", lambda: str(rnd.choice([0.5, 0.6, 0.7, 0.8, 0.33]))),
        ("job.autoscaler.target.utilization.boundary", lambda: str(rnd.choice([0.1, 0.2, 0.3]))),
        ("job.autoscaler.metrics.busy-time.aggregator", lambda: rnd.choice(["MAX", "MIN", "AVG"])),
        ("job.autoscaler.catch-up.duration", lambda: rnd.choice(["0", "1 min", "30 min", "7 s"])),
        ("job.autoscaler.restart.time", lambda: rnd.choice(["0", "10 s", "5 min", "1234"])),
        ("job.autoscaler.scale-down.interval", lambda: rnd.choice(["0", "1 min", "1 h"])),
        ("job.autoscaler.scale-down.max-factor", lambda: str(rnd.choice([0.2, 0.6, 1.0]))),
        ("job.autoscaler.scale-up.max-factor", lambda: str(rnd.choice([0.5, 2.0, 100000.0]))),
        ("job.autoscaler.vertex.max-parallelism", lambda: str(rnd.choice([4, 8, 200]))),
        ("job.autoscaler.vertex.min-parallelism", lambda: str(rnd.choice([1, 2]))),
        ("job.autoscaler.backlog-processing.lag-threshold", lambda: rnd.choice(["1 s", "5 min"])),
        ("job.autoscaler.observed-true-processing-rate.lag-threshold", lambda: rnd.choice(["1 s", "30 s"])),
        ("job.autoscaler.observed-true-processing-rate.switch-threshold", lambda: str(rnd.choice([0.0, 0.15]))),
        ("job.autoscaler.observed-true-processing-rate.min-observations", lambda: str(rnd.choice([1, 2, 5]))),
        ("job.autoscaler.scaling.parallelism-alignment.mode", lambda: rnd.choice(["BALANCED", "EVENLY_SPREAD", "OFF"])),
        ("job.autoscaler.scaling.key-group.partitions.adjust.mode",
         lambda: rnd.choice(["EVENLY_SPREAD", "MAXIMIZE_UTILISATION"])),
        ("job.autoscaler.scaling.enabled", lambda: rnd.choice(["true", "false"])),
        ("job.autoscaler.memory.gc-pressure.threshold", lambda: str(rnd.choice([0.05, 1.0]))),
        ("job.autoscaler.memory.heap-usage.threshold", lambda: str(rnd.choice([0.3, 1.0]))),
        ("job.autoscaler.observed-scalability.enabled", lambda: rnd.choice(["true", "false"])),
        ("job.autoscaler.scaling.effectiveness.detection.enabled", lambda: rnd.choice(["true", "false"])),
        ("job.autoscaler.quota.cpu", lambda: str(rnd.choice([1, 4]))),
        ("job.autoscaler.quota.memory", lambda: rnd.choice(["1g", "8g"])),
    ]
    for key, f in pick:
        if rnd.random() < 0.2:
            c[key] = f()
    if rnd.random() < 0.15:
        c["job.autoscaler.utilization.max"] = "0.9"
        c["job.autoscaler.utilization.min"] = str(rnd.choice([0.0, 0.3]))
        c["job.autoscaler.utilization.target"] = "0.6"
        c.pop("job.autoscaler.target.utilization.boundary", None)
    return c


def history(rnd, vid):
    out, ts = [], NOW - rnd.randrange(1, 20) * 3600 * 1000
    p = rnd.randrange(1, 8)
    for _ in range(rnd.randrange(1, 5)):
        q = max(1, p + rnd.choice([-2, -1, 1, 2, 3]))
        out.append({"timestamp": ts, "currentParallelism": p, "newParallelism": q,
                    "TRUE_PROCESSING_RATE": awkward(rnd, 5000), "EXPECTED_PROCESSING_RATE": awkward(rnd, 5000)})
        ts += rnd.randrange(60, 7200) * 1000
        p = q
    return out


def samples_case(rnd, n, n_samples, step_ms):
    vs = topology(rnd, n)
    ids = [v["id"] for v in vs]
    totals = {i: rnd.uniform(0, 1e6) for i in ids}
    rates = {i: rnd.choice([0, 10, 1000, 3000, 123.456, 1e6]) for i in ids}
    loads = {i: rnd.choice([0.0, 0.05, 0.3, 0.7, 0.95, 1.0]) for i in ids}
    smp = []
    for k in range(n_samples):
        ts = NOW - (n_samples - 1 - k) * step_ms
        svs = {}
        for v in vs:
            vid = v["id"]
            if rnd.random() < 0.03:
                continue  # the vertex is missing from this sample
            totals[vid] += rates[vid] * step_ms / 1000 * rnd.uniform(0.9, 1.1)
            m = {}
            wild = rnd.random() < 0.12
            m["NUM_RECORDS_IN"] = awkward(rnd, 1e7) if wild else totals[vid]
            m["NUM_RECORDS_OUT"] = awkward(rnd, 1e7) if rnd.random() < 0.1 else totals[vid] * rnd.uniform(0.5, 2)
            m["LOAD"] = awkward(rnd, 1) if wild else min(1.0, loads[vid] * rnd.uniform(0.9, 1.1))
            if rnd.random() < 0.3:
                m["ACCUMULATED_BUSY_TIME"] = k * step_ms * rnd.uniform(0, 1) * v["parallelism"]
            if not v["inputs"]:
                if rnd.random() < 0.8:
                    m["LAG"] = awkward(rnd, 1e5) if wild else rnd.choice([0, 0, 10, 5000, 1e6])
                if rnd.random() < 0.3:
                    m["OBSERVED_TPR"] = awkward(rnd, 1e4)
            elif rnd.random() < 0.7:
                m["NUM_RECORDS_IN_PER_SECOND"] = awkward(rnd, 1e4) if wild else rates[vid] * rnd.uniform(0.9, 1.1)
            for key in list(m):
                if rnd.random() < 0.02:
                    del m[key]
            svs[vid] = m
        s = {"timestamp": ts, "vertices": svs}
        if rnd.random() < 0.4 or k == n_samples - 1:
            g = {}
            for key, sc in (("HEAP_MAX_USAGE_RATIO", 1), ("GC_PRESSURE", 0.2), ("NUM_TASK_SLOTS_USED", 16),
                            ("HEAP_MEMORY_USED", 1e9), ("MANAGED_MEMORY_USED", 1e9), ("METASPACE_MEMORY_USED", 1e8)):
                if rnd.random() < 0.7:
                    g[key] = awkward(rnd, sc) if rnd.random() < 0.1 else rnd.uniform(0, sc)
            s["global"] = g
        smp.append(s)
    doc = {"now": NOW, "vertices": vs, "samples": smp}
    c = config(rnd)
    if rnd.random() < 0.2 and ids:
        c["job.autoscaler.vertex.exclude.ids"] = ";".join(rnd.sample(ids, min(len(ids), 2)))
    if c:
        doc["config"] = c
    return doc


def evaluated_case(rnd, n):
    vs = topology(rnd, n)
    for v in vs:
        ev = {}
        for key, sc in (("TARGET_DATA_RATE", 5000), ("TRUE_PROCESSING_RATE", 5000), ("CATCH_UP_DATA_RATE", 500),
                        ("LAG", 1e5), ("LOAD", 1)):
            if rnd.random() < (0.95 if key in ("TARGET_DATA_RATE", "TRUE_PROCESSING_RATE") else 0.4):
                ev[key] = awkward(rnd, sc)
        if rnd.random() < 0.1:
            ev["SCALE_UP_RATE_THRESHOLD"] = awkward(rnd, 5000)
            ev["SCALE_DOWN_RATE_THRESHOLD"] = awkward(rnd, 5000)
        v["evaluated"] = ev
        if rnd.random() < 0.3:
            v["history"] = history(rnd, v["id"])
    doc = {"now": NOW, "vertices": vs}
    if rnd.random() < 0.3:
        doc["processingBacklog"] = rnd.random() < 0.5
    if rnd.random() < 0.3:
        doc["global"] = {"GC_PRESSURE": rnd.uniform(0, 0.2),
                         "HEAP_MAX_USAGE_RATIO": {"current": rnd.uniform(0, 1), "average": rnd.uniform(0, 1)}}
    if rnd.random() < 0.3:
        doc["taskManager"] = {"cpu": rnd.choice([0.5, 1, 2]), "memory": rnd.choice(["1g", "4g"]),
                              "slots": rnd.choice([1, 2, 4])}
    if rnd.random() < 0.3:
        dv = {}
        for v in rnd.sample(vs, min(len(vs), 2)):
            t0 = NOW - rnd.randrange(0, 7200) * 1000
            recs, p = [], v["parallelism"]
            for j in range(rnd.randrange(1, 3)):
                if p == 1:
                    break
                p = max(1, p - rnd.randrange(1, 3))
                recs.append({"triggerTime": t0 + j * 60000, "parallelism": p,
                             "outsideUtilizationBound": rnd.random() < 0.5})
            if recs:
                dv[v["id"]] = {"firstTriggerTime": t0, "recommendedParallelisms": recs}
        doc["delayedScaleDown"] = {"delayedVertices": dv}
    c = config(rnd)
    if c:
        doc["config"] = c
    return doc


def cases():
    """(name, input document or text), in a fixed order."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "examples", "autoscaler-plan-*.json"))):
        if not path.endswith(".out.json"):
            with open(path) as f:
                out.append(("docs-" + os.path.basename(path)[:-5], f.read()))
    for path in sorted(glob.glob(os.path.join(HERE, "cases", "*.json"))):
        with open(path) as f:
            out.append(("case-" + os.path.basename(path)[:-5], f.read()))
    for i in range(120):
        rnd = random.Random(1000 + i)
        n = rnd.choice([1, 2, 2, 3, 5, 8, 13])
        out.append((f"samples-{i:03d}", samples_case(rnd, n, rnd.choice([2, 3, 7, 20, 91]),
                                                      rnd.choice([1000, 10000, 60000]))))
    for i in range(120):
        rnd = random.Random(5000 + i)
        out.append((f"evaluated-{i:03d}", evaluated_case(rnd, rnd.choice([1, 2, 3, 6, 12]))))
    for i in range(3):
        rnd = random.Random(9000 + i)
        out.append((f"large-{i}", samples_case(rnd, 50, 91, 10000)))
    return out


def run(binary, text):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        r = subprocess.run([binary, "autoscaler", "plan", "--input", path], capture_output=True, timeout=120)
    finally:
        os.unlink(path)
    if r.returncode == 0:
        return r.stdout
    return b"exit %d\n" % r.returncode + r.stderr.replace(path.encode(), b"INPUT")


def texts():
    for name, doc in cases():
        yield name, doc if isinstance(doc, str) else json.dumps(doc)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "record", "dump"])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--bin", default=os.environ.get("FLINKLET_BIN", os.path.join(ROOT, "build", "flinklet")))
    ap.add_argument("--outputs", help="also write each output to this directory")
    a = ap.parse_args(argv)
    if a.mode == "dump":
        os.makedirs(a.dir, exist_ok=True)
        for name, text in texts():
            with open(os.path.join(a.dir, name + ".json"), "w") as f:
                f.write(text)
        return 0
    got = {}
    for name, text in texts():
        out = run(a.bin, text)
        if a.outputs:
            os.makedirs(a.outputs, exist_ok=True)
            with open(os.path.join(a.outputs, name + ".out"), "wb") as f:
                f.write(out)
        got[name] = hashlib.sha256(out).hexdigest()
    if a.mode == "record":
        with open(GOLDEN, "w") as f:
            for name, h in got.items():
                f.write(f"{h}  {name}\n")
        print(f"recorded {len(got)} cases in {os.path.relpath(GOLDEN, ROOT)}")
        return 0
    want = {}
    with open(GOLDEN) as f:
        for line in f:
            h, name = line.split()
            want[name] = h
    bad = [n for n in want if got.get(n) != want[n]] + [n for n in got if n not in want]
    for n in bad:
        print(f"plan output differs from the pinned one: {n}", file=sys.stderr)
    print(f"{len(got) - len(bad)} of {len(got)} cases as pinned")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

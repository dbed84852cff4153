"""4. Autoscaler.
  a) Instructions per control-loop decision: valgrind's callgrind counts the instructions of
     `flinklet autoscaler plan` (inclusive cost of autoscaler_plan(): parsing the input, evaluating the window of
     samples, deciding, rendering; the process's total is printed too) on two generated inputs with a full default
     metric window (15 min of samples at the default 10 s control loop = 91 samples): the test job's shape (a source
     feeding the keyed Count vertex, the sink chained to it) and a synthetic 50-vertex topology.
  b) On the real MiniCluster (short windows, as tests/e2e/test_autoscaler.py): the test job at parallelism 1 with
     light per-record work, then a step change in load (the --work-file goes from 1000 to 400000 busy-loop
     iterations per record); the number of rescale actions after the step and the time from the step to a
     parallelism that then stays unchanged for HOLD seconds."""
import json
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, ROOT, WORK, Flinklet, get_json, log, now_ms, print_rows, row  # noqa: E402

HOLD_S = int(os.environ.get("BENCH_AUTOSCALER_HOLD", "45"))
MAX_S = int(os.environ.get("BENCH_AUTOSCALER_MAX", "210"))
NOW = 1767225600000 + 15 * 60 * 1000
STEP_MS = 10000
N_SAMPLES = 15 * 60 * 1000 // STEP_MS + 1  # 91

# bounds 0.4..0.8 around a 0.6 target, so that the busiest vertices are outside them and the decision scales
CONFIG = {"job.autoscaler.utilization.target": "0.6", "job.autoscaler.utilization.max": "0.8",
          "job.autoscaler.utilization.min": "0.4"}

AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "job.autoscaler.scale-down.interval": "20 s",
    "job.autoscaler.restart.time": "5 s",
    "job.autoscaler.catch-up.duration": "10 s",
    "job.autoscaler.utilization.target": "0.6",
    "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "5 s",
    "metrics.fetcher.update-interval": "2000",
}


def samples_for(vertices, rates, loads, rnd):
    """A window of cumulative counters, one sample per control-loop interval, with a little noise."""
    out, totals = [], {v["id"]: 0.0 for v in vertices}
    for k in range(N_SAMPLES):
        ts = NOW - (N_SAMPLES - 1 - k) * STEP_MS
        vs = {}
        for v in vertices:
            vid = v["id"]
            if k:
                totals[vid] += rates[vid] * STEP_MS / 1000 * rnd.uniform(0.95, 1.05)
            m = {"NUM_RECORDS_IN": round(totals[vid]), "NUM_RECORDS_OUT": round(totals[vid]),
                 "LOAD": round(min(1.0, loads[vid] * rnd.uniform(0.95, 1.05)), 3)}
            if not v["inputs"]:
                m["LAG"] = 0
            else:
                m["NUM_RECORDS_IN_PER_SECOND"] = round(rates[vid] * rnd.uniform(0.95, 1.05), 1)
            vs[vid] = m
        s = {"timestamp": ts, "vertices": vs}
        if k == N_SAMPLES - 1:
            s["global"] = {"HEAP_MAX_USAGE_RATIO": 0.4, "GC_PRESSURE": 0.01, "NUM_TASK_SLOTS_USED": 4}
        out.append(s)
    return out


def test_job_input():
    rnd = random.Random(1)
    vertices = [
        {"id": "bc764cd8ddf7a0cff126f51c16239658", "parallelism": 2, "maxParallelism": 128, "inputs": []},
        {"id": "20ba6b65f97481d5570070de90e4e791", "parallelism": 2, "maxParallelism": 128,
         "inputs": [{"id": "bc764cd8ddf7a0cff126f51c16239658", "shipStrategy": "HASH"}]},
    ]
    rates = {v["id"]: 3000 for v in vertices}
    loads = {vertices[0]["id"]: 0.2, vertices[1]["id"]: 0.95}
    return {"now": NOW, "config": CONFIG, "vertices": vertices, "samples": samples_for(vertices, rates, loads, rnd)}


def synthetic_input(n=50, sources=5):
    """n vertices: `sources` chains of n/sources vertices (HASH after the source, then REBALANCE and FORWARD
    edges), every fifth vertex also reading the previous chain's vertex at the same depth (a join)."""
    rnd = random.Random(50)
    per = n // sources
    vertices, rates, loads = [], {}, {}
    for c in range(sources):
        for d in range(per):
            vid = f"v{c:02d}{d:02d}" + "0" * 26
            inputs = []
            if d:
                inputs.append({"id": f"v{c:02d}{d - 1:02d}" + "0" * 26,
                               "shipStrategy": "HASH" if d == 1 else rnd.choice(["REBALANCE", "FORWARD", "HASH"])})
                if d % 5 == 0 and c:
                    inputs.append({"id": f"v{c - 1:02d}{d:02d}" + "0" * 26, "shipStrategy": "HASH"})
            v = {"id": vid, "parallelism": rnd.choice([1, 2, 4, 8]), "maxParallelism": 128, "inputs": inputs}
            if not d:
                v["numSourcePartitions"] = 16
            vertices.append(v)
            rates[vid] = 1000 * (c + 1)
            loads[vid] = rnd.choice([0.1, 0.3, 0.5, 0.7, 0.95])
    return {"now": NOW, "config": CONFIG, "vertices": vertices, "samples": samples_for(vertices, rates, loads, rnd)}


def callgrind(path, toggle):
    out = path + (".cg.fn" if toggle else ".cg.all")
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if toggle:
        argv.append("--toggle-collect=autoscaler_plan")
    r = subprocess.run(argv + [BIN, "autoscaler", "plan", "--input", path], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"plan failed on {path}: {r.stderr[-2000:]}")
    with open(out) as f:
        m = re.search(r"^(?:summary|totals):\s*(\d+)", f.read(), flags=re.M)
    return int(m.group(1)), json.loads(r.stdout)


def callgrind_rows():
    d = os.path.join(WORK, "autoscaler-plan")
    os.makedirs(d, exist_ok=True)
    rows = []
    for name, doc in (("test job (2 vertices)", test_job_input()), ("synthetic 50 vertices", synthetic_input())):
        path = os.path.join(d, f"plan-{len(doc['vertices'])}v.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        fn, out = callgrind(path, True)
        total, _ = callgrind(path, False)
        moved = sum(1 for v in out["vertices"].values() if v["newParallelism"] != v["currentParallelism"])
        log(f"autoscaler: {name}: {fn:,} instructions in autoscaler_plan(), {total:,} in the process")
        rows.append(row(f"plan instructions, {name}",
                        f"{fn / 1e6:.2f} M ({fn / len(doc['vertices']) / N_SAMPLES:,.0f} per vertex-sample); "
                        f"process {total / 1e6:.2f} M",
                        f"callgrind Ir, --toggle-collect=autoscaler_plan, {N_SAMPLES} samples (15 min window, 10 s "
                        f"loop), input {os.path.relpath(path, ROOT)}; decision "
                        f"'{out['decision']}', {moved} vertices moved"))
    return rows


def count_parallelism(f, job_id):
    j = get_json(f.port, f"/jobs/{job_id}", timeout=2)
    if j.get("state") != "RUNNING":
        return None
    for v in j["vertices"]:
        if v["name"].startswith("Count"):
            return v["parallelism"] if v["status"] == "RUNNING" else None
    return None


def minicluster_rows():
    f = Flinklet("autoscaler", conf=AUTOSCALER, job={"parallelism": 1, "upgradeMode": "last-state"})
    work = os.path.join(f.dir, "work")
    with open(work, "w") as fh:
        fh.write("1000\n")
    f.job["args"] = ["--rate", "3000", "--keys", "64", "--work-file", work, "--output", f.output]
    f.write_config()
    changes = []
    try:
        f.start()
        st = f.wait_stable()
        job_id = st["jobStatus"]["jobId"]
        vertices = [v["name"] for v in get_json(f.port, f"/jobs/{job_id}")["vertices"]]
        log(f"autoscaler: job vertices {vertices}; light load for 25 s")
        time.sleep(25)
        p = count_parallelism(f, job_id)
        p_before = p
        with open(work + ".new", "w") as fh:
            fh.write("400000\n")
        os.replace(work + ".new", work)
        t_step = now_ms()
        log(f"autoscaler: step change at parallelism {p}; watching up to {MAX_S} s for {HOLD_S} s of stability")
        last_change = t_step
        stable_at = None
        while now_ms() - t_step < MAX_S * 1000:
            try:
                q = count_parallelism(f, job_id)
            except (OSError, ValueError):
                q = None
            t = now_ms()
            if q is not None and q != p:
                changes.append((t - t_step, p, q))
                log(f"autoscaler: +{(t - t_step) / 1000:.1f} s parallelism {p} -> {q}")
                p, last_change = q, t
            if changes and t - last_change >= HOLD_S * 1000:
                stable_at = last_change
                break
            time.sleep(1)
        ev = f.events_after(t_step)
        reports = [e for e in ev if e["type"] == "ScalingReport" and "execution enabled" in e["message"]]
        applied = [e for e in ev if e["type"] == "ScalingApplied"]
    finally:
        f.stop()
    path = " -> ".join([str(p_before)] + [str(c[2]) for c in changes])
    if stable_at is not None:
        stable_txt = f"{(stable_at - t_step) / 1000:.1f} s (parallelism {path}, then unchanged for {HOLD_S} s)"
    else:
        stable_txt = (f"not stable within {MAX_S} s (parallelism {path})" if changes
                      else f"no rescale within {MAX_S} s")
    first = f"{changes[0][0] / 1000:.1f} s" if changes else "n/a"
    return [
        row("rescale actions after a load step (MiniCluster)",
            f"{len(reports)} executed ScalingReports, {len(applied)} ScalingApplied, {len(changes)} parallelism "
            f"changes seen",
            "events.jsonl after the step; Count vertex parallelism from GET /jobs/:id once a second; window 20 s, "
            "loop 3 s, cooldown 5 s, target utilization 0.6, slots max(1, min(200, 2 x 2 CPUs)) = 4"),
        row("load step -> stable parallelism", f"{stable_txt}; first change after {first}",
            "from rewriting the --work-file (1000 -> 400000 iterations per record, 3000 records/s) to the last "
            "parallelism change observed RUNNING"),
    ]


def run():
    return callgrind_rows() + minicluster_rows()


if __name__ == "__main__":
    print_rows("autoscaler", run())

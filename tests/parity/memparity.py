#!/usr/bin/env python3
"""tests/parity/memparity.py: flinklet's memory tuning against the operator's own MemoryTuning (issue 28).

Each case is a plan document (evaluated metrics with HEAP_MEMORY_USED, METASPACE_MEMORY_USED and MANAGED_MEMORY_USED,
the tuning options job.autoscaler.memory.tuning.overhead and maximize-managed-memory) with a flinklet configuration
(spec.resources.memory from 256m to 8g, the hashmap or RocksDB state backend, slots, parallelism, sometimes the
user's own metaspace or managed memory size). It runs through
`flinklet autoscaler plan -c`, whose memoryTuning gives the untuned split and the recommended heap, managed memory
and metaspace, and through the Java harness (ParityHarness.runMemory), which calls the operator's
MemoryTuning.tuneTaskManagerMemory (flink-autoscaler 1.10.0; its tuning package is unchanged from 1.9.0 to the 1.16
source) for one TaskManager laid out as the pod is: process memory = the pod's JVM share, the same metaspace,
network, off-heap and managed memory, JVM overhead = what flinklet keeps for the JVM's native memory, framework
heap 0. The TaskManager the operator's ConfigChanges configure (derived by Flink's own memory utilities) is
compared with flinklet's recommendation: the sizes MemoryTuning computed (its "Optimized memory sizes" log line, exact
in bytes; the TaskManager its ConfigChanges configure has managed memory as a fraction of Flink memory rounded up to
3 decimals, up to 0.1 % off), and what it gives back (process memory less the tuned TaskManager's). Every difference must be one of MEM_KNOWN, recognised as narrowly as it
goes (see compare_memory); any other fails.

    memparity.py run --bin build/flinklet --harness build/parity [--cases N] [--seed S] [--show K]
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import parity  # noqa: E402

MIB = 1 << 20
J = "job.autoscaler."

MEM_KNOWN = {
    "fixed-pod": (
        "Per pod rather than per TaskManager: the operator shrinks the TaskManager's process memory to what it "
        "tuned (the rest is given back); a pod's spec.resources.memory is not flinklet's to change, so what the "
        "operator gives back goes to the heap (flinklet reports the smallest budget instead, minMemory). "
        "Recognised: managed memory is not maximized into (hashmap, or maximize-managed-memory off), flinklet's "
        "heap is above the operator's and the pools of both still sum to the same JVM share."),
    "heap-floor": (
        "A heap of at least 48m, a MiniCluster's floor (the operator's MemoryTuning has none). Recognised: "
        "flinklet's heap is 48m and the used heap with the overhead is below it."),
    "metaspace-floor": (
        "FLINK-35489: a metaspace of at least 80m and 16m over what was used (a tuned 22 MB metaspace failed "
        "operator users; the classes of a restarted job load before the old ones go). Recognised: flinklet's "
        "metaspace is the larger floor and above the operator's."),
    "budget-ceiling": (
        "flinklet never tunes past spec.resources.memory with its floors: a job whose heap and metaspace needs "
        "(used, the overhead, the floors) exceed what the budget holds beside the managed memory it keeps is not "
        "tuned (the recommendation says the budget it needs); the operator truncates the heap and metaspace to "
        "the budget left, or takes the difference from managed memory, which it budgets last (or its smaller "
        "network leaves room). Recognised: flinklet recommends nothing and its documented needs (the user's "
        "metaspace where set) do exceed its pools less the managed memory it keeps."),
    "no-network-tuning": (
        "flinklet keeps the network memory of its split (sized for a MiniCluster's exchanges); the operator sizes "
        "it from the topology's buffers, and what it frees goes to managed memory when maximized into (or what "
        "it takes from the heap). Recognised: the networks differ and the pools sum to the same JVM share."),
    "user-keys-win": (
        "The user's own taskmanager.memory.jvm-metaspace.size and taskmanager.memory.managed.size win over "
        "flinklet's tuning (docs/autoscaler.md, Memory tuning); the operator's tuning overrides them. Recognised: "
        "the user set the key, flinklet's pool is the user's value, and what it moves elsewhere adds up."),
    "heap-only-grows": (
        "Once tuned, flinklet's heap only grows (memtune_in.tuned_heap: a smaller heap keeps less garbage, so its "
        "use would tune it smaller again); the operator tunes from the use alone. Recognised: the plan gives the "
        "running JVM's tuned heap (taskManager.tunedHeap), flinklet's heap is that and above the operator's."),
}

BUDGETS = [256, 300, 384, 512, 640, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192]


def gen_memory_case(seed, i):
    rng = random.Random(seed * 7919 + i)
    backend = rng.choice(["rocksdb", "hashmap"])
    budget = rng.choice(BUDGETS) if rng.random() < 0.6 else rng.randint(256, 8192)
    if backend == "rocksdb":
        budget = max(budget, 320)  # RocksDB's smallest pod (303m to 320m with 4 slots)
    par = rng.choice([1, 1, 2, 3, 4])
    slots = rng.choice([None, None, par, 4])
    user = {}  # the user's own memory keys, which win over tuning
    if budget >= 512 and rng.random() < 0.15:
        user["metaspace"] = rng.choice([96, 128, 192]) * MIB
    if backend == "rocksdb" and budget >= 512 and rng.random() < 0.2:
        user["managed"] = rng.choice([32, 64, budget // 8]) * MIB
    conf = {}
    o = rng.choice([None, None, 0, 0.1, 0.2, 0.3, 0.5, 1.0])
    # each option also under the operator's old prefix, the fallback both read
    if o is not None:
        conf[rng.choice([J, J, J, parity.K]) + "memory.tuning.overhead"] = str(o)
    maximize = rng.choice([None, "true", "true", "false"])
    if maximize is not None:
        conf[rng.choice([J, J, J, parity.K]) + "memory.tuning.maximize-managed-memory"] = maximize
    conf[J + "memory.tuning.enabled"] = "true"
    # what the JVM used, as a share of the untuned heap and metaspace (it cannot use more): from a few MiB of heap
    # to nearly all of it, a metaspace from a third to all of it
    use = {"heapMiB": rng.uniform(4, 40) if rng.random() < 0.2 else None,
           "heap": rng.choice([rng.uniform(0.02, 0.3), rng.uniform(0.2, 0.6), rng.uniform(0.5, 0.97)]),
           "metaspace": rng.uniform(0.3, 1.0),
           # measured in a JVM that runs tuned, with this share of the untuned heap
           "tuned": rng.uniform(0.3, 1.0) if rng.random() < 0.2 else None}
    n = rng.choice([1, 1, 2, 3])
    ids = [parity.hexid(rng) for _ in range(n)]
    vertices = []
    for k, v in enumerate(ids):
        vx = {"id": v, "parallelism": par, "maxParallelism": 128,
              "evaluated": {"TARGET_DATA_RATE": 100, "TRUE_PROCESSING_RATE": 200, "LOAD": 0.5}}
        if k:
            vx["inputs"] = [{"id": ids[k - 1], "shipStrategy": rng.choice(["HASH", "REBALANCE", "FORWARD"])}]
        vertices.append(vx)
    plan = {"now": parity.NOW, "config": conf, "vertices": vertices,
            "global": {"NUM_TASK_SLOTS_USED": {"average": par, "current": par}}}
    return {"id": "mem-%d" % i, "budget": budget * MIB, "backend": backend, "parallelism": par, "slots": slots,
            "user": user, "use": use, "plan": plan}


def spec_yaml(c):
    fc = "state.backend.type: %s" % c["backend"]
    if c["slots"]:
        fc += ", taskmanager.numberOfTaskSlots: '%d'" % c["slots"]
    for pool, key in (("metaspace", "jvm-metaspace.size"), ("managed", "managed.size")):
        if pool in c["user"]:
            fc += ", taskmanager.memory.%s: %dm" % (key, c["user"][pool] // MIB)
    return ("metadata: {name: memparity}\nspec:\n  flinkConfiguration: {%s}\n  resources: {memory: %dm}\n"
            "  job: {jarURI: /j.jar, parallelism: %d}\n" % (fc, c["budget"] // MIB, c["parallelism"]))


def run_flinklet_memory(binary, c, tmp):
    plan, cfg = os.path.join(tmp, c["id"] + ".json"), os.path.join(tmp, c["id"] + ".yaml")
    with open(plan, "w") as f:
        json.dump(c["plan"], f)
    with open(cfg, "w") as f:
        f.write(spec_yaml(c))
    r = subprocess.run([binary, "autoscaler", "plan", "--input", plan, "-c", cfg], capture_output=True, text=True,
                       env=dict(os.environ, TZ="UTC"), timeout=60)
    os.unlink(plan)
    os.unlink(cfg)
    if r.returncode != 0:
        return {"error": r.stderr.strip() or "exit %d" % r.returncode}
    return json.loads(r.stdout)["memoryTuning"]


def with_use(c, split):
    """The memory used in the untuned split: the case's shares of its heap and metaspace; managed memory: RocksDB
    reserves it whole, so what the split has (hashmap: none)."""
    u = c["use"]
    heap_max = split["heap"]
    if u["tuned"]:
        heap_max = max(int(u["tuned"] * split["heap"]) // MIB * MIB, 48 * MIB)
        c["plan"]["taskManager"] = {"tunedHeap": heap_max}
    heap = min(u["heapMiB"] * MIB, heap_max) if u["heapMiB"] else u["heap"] * heap_max
    for k, v in (("HEAP_MEMORY_USED", heap), ("METASPACE_MEMORY_USED", u["metaspace"] * split["metaspace"]),
                 ("MANAGED_MEMORY_USED", split["managed"] if c["backend"] == "rocksdb" else 0)):
        c["plan"]["global"][k] = {"average": float(int(v)), "current": float(int(v))}


def task_manager_of(c, split):
    """The operator's TaskManager laid out as flinklet's pod (ParityHarness.runMemory says how)."""
    return {"processMemory": c["budget"] - split["flinklet"], "metaspace": split["metaspace"],
            "jvmOverhead": split["codeCache"] + split["jvmNative"] + split["stateNative"],
            "frameworkOffHeap": split["frameworkOffHeap"], "taskOffHeap": split["taskOffHeap"],
            "network": split["network"], "managed": split["managed"],
            "slots": max(c["slots"] or 1, c["parallelism"])}


def option(c, key, default):
    conf = c["plan"]["config"]
    return conf.get(J + key, conf.get(parity.K + key, default))


def overhead_of(c):
    return float(option(c, "memory.tuning.overhead", "0.2"))


def maximized(c):
    return c["backend"] == "rocksdb" and option(c, "memory.tuning.maximize-managed-memory", "false") == "true"


def fl_maximizes(c):
    """flinklet maximizes managed memory only where the user did not size it."""
    return maximized(c) and "managed" not in c["user"]


def mib_up(x):
    return int(math.ceil(x / MIB)) * MIB if x > 0 else 0


def needs(c):
    """flinklet's documented heap and metaspace needs (docs/autoscaler.md, Memory tuning)."""
    g, o = c["plan"]["global"], overhead_of(c)
    h, m = g["HEAP_MEMORY_USED"]["average"], g["METASPACE_MEMORY_USED"]["average"]
    tuned = c["plan"].get("taskManager", {}).get("tunedHeap", 0)
    return max(mib_up(h * (1 + o)), 48 * MIB, tuned), max(mib_up(m * (1 + o)), mib_up(m) + 16 * MIB, 80 * MIB)


def compare_memory(c, mt, jv):
    """Returns (unexplained differences, explanations used, the pools that agree exactly) for one case."""
    diffs, used, exact = [], set(), set()
    if "error" in jv:
        return ["operator: %s" % jv["error"]], used, exact
    split, cur, op = mt["currentSplit"], jv["current"], jv["recommended"]
    if op is not None:
        if sorted(jv["computed"]) != ["heap", "managed", "metaspace", "network"]:
            return ["no sizes in MemoryTuning's log line: %s" % jv["computed"]], used, exact
        op = dict(jv["computed"], process=op["process"])
    tm = task_manager_of(c, split)
    # the layout: the operator's TaskManager before tuning is flinklet's untuned split
    for k, v in (("heap", split["heap"]), ("managed", split["managed"]), ("metaspace", split["metaspace"]),
                 ("network", split["network"]), ("overhead", tm["jvmOverhead"])):
        if cur[k] != v:
            diffs.append("layout: the operator's %s %d, flinklet's %d" % (k, cur[k], v))
    if diffs:
        return diffs, used, exact
    if op is None:
        return ["the operator recommends nothing, flinklet %s" % mt["reason"]], used, exact
    g, o = c["plan"]["global"], overhead_of(c)
    op_heap_need = int(g["HEAP_MEMORY_USED"]["average"] * (1 + o))
    op_meta_need = int(g["METASPACE_MEMORY_USED"]["average"] * (1 + o))
    heap_need, meta_need = needs(c)
    user = c["user"]
    if mt["recommended"] is None:
        keep = split["managed"] if c["backend"] == "rocksdb" and not fl_maximizes(c) else (
            16 * MIB if c["backend"] == "rocksdb" else 0)
        meta_need = user.get("metaspace", meta_need)
        avail = split["heap"] + split["metaspace"] + split["managed"] - keep
        if heap_need + meta_need > avail:
            used.add("budget-ceiling")
        else:
            diffs.append("flinklet does not tune (%s) though heap %d + metaspace %d fit in %d" % (
                mt["reason"], heap_need, meta_need, avail))
        return diffs, used, exact
    fl = dict(mt["recommended"], network=split["network"])
    share = tm["processMemory"] - tm["jvmOverhead"] - tm["frameworkOffHeap"] - tm["taskOffHeap"]
    s_fl = fl["heap"] + fl["managed"] + fl["metaspace"] + fl["network"]
    s_op = op["heap"] + op["managed"] + op["metaspace"] + op["network"] + (tm["processMemory"] - op["process"])
    sums = abs(s_fl - s_op) < MIB and abs(s_op - share) < MIB
    if not sums:
        diffs.append("the pools sum to %d (flinklet) and %d (operator, with what it gives back), the JVM share "
                     "less the fixed parts is %d" % (s_fl, s_op, share))
    # flinklet's own documented formulas first: an agreement with the operator where flinklet's docs say it
    # differs is a defect too
    if fl["metaspace"] != user.get("metaspace", meta_need):
        diffs.append("metaspace flinklet %d, its documented need %d" % (fl["metaspace"], user.get("metaspace",
                                                                                                   meta_need)))
    if fl_maximizes(c) and fl["heap"] != heap_need:
        diffs.append("heap flinklet %d, its documented need %d" % (fl["heap"], heap_need))
    # metaspace: the operator's is exact (its JVM_METASPACE override); flinklet rounds up to whole MiB
    d = fl["metaspace"] - op["metaspace"]
    if "metaspace" in user and fl["metaspace"] != user["metaspace"]:
        diffs.append("metaspace flinklet %d, the user's %d" % (fl["metaspace"], user["metaspace"]))
    elif 0 <= d < MIB:
        exact.add("metaspace")
    elif "metaspace" in user:
        used.add("user-keys-win")
    else:
        if d > 0 and fl["metaspace"] == meta_need and meta_need > mib_up(op_meta_need):
            used.add("metaspace-floor")
        else:
            diffs.append("metaspace flinklet %d, operator %d" % (fl["metaspace"], op["metaspace"]))
    # heap
    d = fl["heap"] - op["heap"]
    op_truncated = op["heap"] < op_heap_need
    if fl_maximizes(c):
        if 0 <= d < MIB:
            exact.add("heap")
        elif d > 0 and fl["heap"] == 48 * MIB and op_heap_need < 48 * MIB:
            used.add("heap-floor")
        elif d > 0 and fl["heap"] == c["plan"].get("taskManager", {}).get("tunedHeap") and fl["heap"] == heap_need:
            used.add("heap-only-grows")
        elif d > 0 and op_truncated and op["network"] > fl["network"] and fl["heap"] == heap_need and sums:
            used.add("no-network-tuning")
        else:
            diffs.append("heap flinklet %d, operator %d (maximized managed memory)" % (fl["heap"], op["heap"]))
    else:
        if d >= MIB and sums and fl["heap"] >= heap_need:
            # the operator maximized managed memory over the user's size (and gives nothing back), or gave back
            used.add("user-keys-win" if maximized(c) else "fixed-pod")
        elif 0 <= d < MIB:
            exact.add("heap")
        else:
            diffs.append("heap flinklet %d, operator %d" % (fl["heap"], op["heap"]))
    # managed memory
    d = fl["managed"] - op["managed"]
    if c["backend"] != "rocksdb":
        if fl["managed"] or op["managed"]:
            diffs.append("managed flinklet %d, operator %d (hashmap)" % (fl["managed"], op["managed"]))
        else:
            exact.add("managed")
    elif not fl_maximizes(c):
        if fl["managed"] != split["managed"]:
            diffs.append("managed flinklet %d, kept %d" % (fl["managed"], split["managed"]))
        elif d == 0:
            exact.add("managed")
        elif maximized(c) and sums:
            used.add("user-keys-win")
        else:
            diffs.append("managed flinklet %d, operator %d" % (fl["managed"], op["managed"]))
    elif abs(d) < MIB:
        exact.add("managed")
    else:
        # maximized: the rest after the other pools, so it moves by what they moved (the sums say it adds up)
        why = set()
        if fl["network"] != op["network"]:
            why.add("no-network-tuning")
        if fl["metaspace"] - op["metaspace"] >= MIB:
            why.add("metaspace-floor")
        why |= used & {"heap-floor", "heap-only-grows", "user-keys-win"}
        if sums and why:
            used |= why
        else:
            diffs.append("managed flinklet %d, operator %d (maximized)" % (fl["managed"], op["managed"]))
    return diffs, used, exact


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "gen"])
    ap.add_argument("--bin", default="build/flinklet")
    ap.add_argument("--harness", default="build/parity")
    ap.add_argument("--cases", type=int, default=int(os.environ.get("PARITY_MEM_CASES", "400")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("PARITY_SEED", "19")))
    ap.add_argument("--show", type=int, default=5)
    a = ap.parse_args()
    cases = [gen_memory_case(a.seed, i) for i in range(a.cases)]
    if a.cmd == "gen":
        for c in cases:
            print(json.dumps(c))
        return 0
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=2) as pool:
        fls = list(pool.map(lambda c: run_flinklet_memory(a.bin, c, tmp), cases))
    rejected = [c for c, mt in zip(cases, fls) if "error" in mt]
    pairs = [(c, mt) for c, mt in zip(cases, fls) if "error" not in mt]
    for c, mt in pairs:
        with_use(c, mt["currentSplit"])
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=2) as pool:
        # again with the memory used, which depends on the untuned split (the first run's)
        again = list(pool.map(lambda p: run_flinklet_memory(a.bin, p[0], tmp), pairs))
    pairs = [(c, mt) for (c, _), mt in zip(pairs, again)]
    jv = parity.run_harness(a.harness, [{"id": c["id"], "plan": None, "memory": {
        "plan": c["plan"], "taskManager": task_manager_of(c, mt["currentSplit"])}} for c, mt in pairs])
    counts, failures, kinds, agree = {"no explanation needed": 0}, [], {}, {}
    for c, mt in pairs:
        k = "%s/%s%s" % (c["backend"], "maximize" if maximized(c) else "keep",
                          "/user " + "+".join(sorted(c["user"])) if c["user"] else "")
        kinds[k] = kinds.get(k, 0) + 1
        diffs, used, exact = compare_memory(c, mt, jv.get(c["id"], {"error": "no harness answer"}))
        for pool in exact:
            agree[pool] = agree.get(pool, 0) + 1
        if fl_maximizes(c) and mt["recommended"] is not None and not used & {"heap-floor", "heap-only-grows",
                                                                                "user-keys-win"}:
            agree["comparable heaps"] = agree.get("comparable heaps", 0) + 1
        if diffs:
            failures.append((c, mt, jv.get(c["id"]), diffs))
        elif used:
            for u in sorted(used):
                counts["explained by " + u] = counts.get("explained by " + u, 0) + 1
        else:
            counts["no explanation needed"] += 1
    print("memory tuning parity against the operator 1.10.0: %d cases (seed %d; %s), %d budgets below "
          "flinklet's minimum not run" % (len(pairs), a.seed, ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
                                          len(rejected)))
    for k, n in sorted(counts.items()):
        print("  %-40s %d" % (k, n))
    tuned = sum(1 for c, mt in pairs if mt["recommended"] is not None)
    print("  pools equal to the operator's (to flinklet's whole MiB) in the %d cases flinklet tunes: %s" % (
        tuned, ", ".join("%s %d" % kv for kv in sorted(agree.items()))))
    for k in sorted(MEM_KNOWN):
        print("  known difference %s: %s" % (k, MEM_KNOWN[k]))
    print("  %-40s %d" % ("UNEXPLAINED", len(failures)))
    for c, mt, j, diffs in failures[:a.show]:
        print("\ncase %s:\n  %s\n  flinklet: %s\n  operator: %s\n  spec: %s  plan: %s" % (
            c["id"], "\n  ".join(diffs), json.dumps(mt), json.dumps(j), spec_yaml(c).replace("\n", " "),
            json.dumps(c["plan"])))
    if len(pairs) < len(cases) * 3 // 4:
        print("memparity: only %d of %d cases ran" % (len(pairs), len(cases)))
        return 1
    # a run in which no pool is compared exactly proves nothing
    if min(agree.get(p, 0) for p in ("metaspace", "managed")) < tuned // 5 or \
            agree.get("heap", 0) < agree.get("comparable heaps", 0) // 2:
        print("memparity: too few pools compared exactly (%s of %d)" % (agree, tuned))
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

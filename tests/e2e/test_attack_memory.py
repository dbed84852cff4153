"""Attack tests (from docs/configuration.md "Memory" and the spec.resources.memory row only): check-config rejects a
budget too small to run with a clear error naming the field and the smallest budget that fits, that smallest budget
is accepted (and one less is not), and every accepted budget actually starts the real job on the real MiniCluster.
check-config runs are cheap; the starts are few (a JVM each)."""
import json
import os
import re
import subprocess

import pytest

from conftest import BIN, JOBS_JAR
from testkit import MemoryLimit


def doc(tmp_path, memory, conf=None, parallelism=2, name="mem.yaml"):
    lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:", "  name: mem", "spec:",
             "  flinkConfiguration:"]
    conf = dict(conf or {})
    conf.setdefault("execution.checkpointing.interval", "1s")
    lines += [f"    {json.dumps(k)}: {json.dumps(str(v))}" for k, v in conf.items()]
    lines += ["  resources:", f"    memory: {memory}", "  job:", f"    jarURI: local://{JOBS_JAR}",
              "    entryClass: dev.flinklet.jobs.StatefulCounter", f"    parallelism: {parallelism}"]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p, len(lines) - 5 + 1  # the 1-based line of "memory:"


def check(tmp_path, memory, conf=None, parallelism=2):
    p, line = doc(tmp_path, memory, conf, parallelism)
    r = subprocess.run([BIN, "check-config", "-c", str(p)], capture_output=True, text=True)
    return r.returncode, r.stderr, line


def smallest(tmp_path, conf=None, parallelism=2, lo=16, hi=8192):
    """The smallest budget in whole MiB check-config accepts (bisection; lo rejected, hi accepted)."""
    assert check(tmp_path, f"{hi}m", conf, parallelism)[0] == 0
    assert check(tmp_path, f"{lo}m", conf, parallelism)[0] == 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(tmp_path, f"{mid}m", conf, parallelism)[0] == 0:
            hi = mid
        else:
            lo = mid
    return hi


CASES = {
    "hashmap-p2": ({"state.backend.type": "hashmap"}, 2),
    "rocksdb-p2": ({"state.backend.type": "rocksdb"}, 2),
    "hashmap-p1": ({}, 1),
    "hashmap-p8": ({}, 8),
    "rocksdb-p16": ({"state.backend.type": "rocksdb"}, 16),
    "hashmap-p64": ({}, 64),
    "autoscaler-p1": ({"job.autoscaler.enabled": "true"}, 1),
    "forst-p2": ({"state.backend.type": "forst"}, 2),
    "metaspace-set": ({"taskmanager.memory.jvm-metaspace.size": "200m"}, 2),
    "network-set": ({"taskmanager.memory.network.max": "100m"}, 2),
}


# configuration.md: "A budget too small for the state backend on its own is an error at `spec.resources.memory`
# with the smallest budget that fits: `flinklet.yaml:7:13: spec.resources.memory: 256m is too small ... it must be
# at least 301m`"; contract §1: "Every error message names the file, the line and column ... and the field".
# The budget it names must be accepted, and one MiB less rejected, at that field.
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_smallest_budget_named_is_the_smallest_accepted(tmp_path, case):
    conf, par = CASES[case]
    least = smallest(tmp_path, conf, par)
    rc, err, line = check(tmp_path, f"{least - 1}m", conf, par)
    assert rc == 2
    m = re.search(r"mem\.yaml:(\d+):(\d+): ([\w.-]+): .*?(?:must be|raise spec\.resources\.memory to) at least "
                  r"(\d+)m", err)
    assert m, f"no file:line:col: field: ... at least Nm in {err!r}"
    field = m.group(3)
    if field == "spec.resources.memory":
        assert int(m.group(1)) == line, err
        assert int(m.group(4)) == least, f"names {m.group(4)}m, but the smallest accepted is {least}m: {err}"
    else:
        # the budget is enough for the backend, a key of the document does not fit: the error is at that key
        assert field.startswith("spec.flinkConfiguration."), err
        assert int(m.group(4)) == least, f"'raise ... to at least {m.group(4)}m', smallest accepted {least}m: {err}"


# configuration.md: "When they leave less than 48m of heap, the error is at the key that does not fit, with the
# budget it would need: ... `lower it, or raise spec.resources.memory to at least 1452m`".
def test_a_managed_size_too_large_names_the_key_and_a_budget_that_fits(tmp_path):
    conf = {"taskmanager.memory.managed.size": "900m"}
    rc, err, _ = check(tmp_path, "1024m", conf)
    assert rc == 2
    m = re.search(r"mem\.yaml:(\d+):(\d+): spec\.flinkConfiguration\.taskmanager\.memory\.managed\.size: .*?"
                  r"raise spec\.resources\.memory to at least (\d+)m", err)
    assert m, err
    need = int(m.group(3))
    assert check(tmp_path, f"{need}m", conf)[0] == 0, f"the budget named ({need}m) is refused"
    assert check(tmp_path, f"{need - 1}m", conf)[0] == 2, f"{need - 1}m is accepted, so {need}m is not the least"


# configuration.md: spec.resources.memory is "a memory size (`2048m`, `2g`, `2Gi`)": the three spellings of one
# size are one budget.
def test_memory_spellings_are_the_same_budget(tmp_path):
    outs = []
    for spelling in ("2048m", "2g", "2Gi"):
        p, _ = doc(tmp_path, spelling)
        r = subprocess.run([BIN, "check-config", "--json", "-c", str(p)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        fc = json.loads(r.stdout)["spec"]["flinkConfiguration"]
        outs.append({k: v for k, v in fc.items() if k.startswith("taskmanager.memory")})
    assert outs[0] == outs[1] == outs[2], outs


def start_at(flinklets, tmp_path, memory, conf, parallelism):
    limit = MemoryLimit(f"attack2-mem-{os.getpid()}-{parallelism}", int(memory) << 20)
    use = limit.make()
    f = flinklets(name="mem", conf=conf, job={"parallelism": parallelism}, memory=f"{memory}m")
    f.start(preexec_fn=limit.enter if use else None)
    try:
        st = f.wait_stable(timeout=240)
        f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 3
                          if st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] else 3, timeout=120)
        st = f.status()
        assert st["jvm"]["restarts"] == 0, f"the JVM restarted at {memory}m: {st['jvm']}\n{f.logs()[-3000:]}"
        if use:
            assert limit.stats()["oom_kills"] == 0
    finally:
        f.stop()
        limit.remove()
    return f


# configuration.md: "spec.resources.memory ... the budget of the **whole pod**, flinklet and its JVM: every JVM and
# Flink memory setting is derived from it"; "`check-config` names the smallest that fits". An accepted budget that
# cannot run would be a lie: the smallest accepted budget of 8 slots (hashmap) and of 4 slots with RocksDB runs the
# real job to RUNNING and through checkpoints without a JVM restart (inside a memory cgroup of that size when the
# machine allows one).
STARTS = {"hashmap-p8": ({}, 8), "rocksdb-p4": ({"state.backend.type": "rocksdb"}, 4),
          "autoscaler-p1": ({"job.autoscaler.enabled": "true"}, 1)}


# asan_elsewhere: the budget's arithmetic runs under ASan in unit-asan (test_membudget) and in this file's
# check-config tests; what a start adds is the JVM's side
@pytest.mark.asan_elsewhere
@pytest.mark.parametrize("case", sorted(STARTS))
def test_the_smallest_accepted_budget_starts(flinklets, tmp_path, case):
    conf, par = STARTS[case]
    least = smallest(tmp_path, conf, par)
    start_at(flinklets, tmp_path, least, conf, par)


# configuration.md: "-D key=value ... sets or replaces one spec.flinkConfiguration entry"; errors are
# `file:line:col: field: problem`, and for an override "`-D: warning: ...`" names it as `-D`. A managed size given
# with -D that does not fit the budget is refused (exit 2) by check-config with the key named, and the budget it
# names fits.
def test_a_managed_size_from_D_that_does_not_fit_is_named(tmp_path):
    p, _ = doc(tmp_path, "512m")
    r = subprocess.run([BIN, "check-config", "-c", str(p), "-D", "taskmanager.memory.managed.size=400m"],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stdout[-500:]
    m = re.search(r"(\S*): spec\.flinkConfiguration\.taskmanager\.memory\.managed\.size: .*?"
                  r"raise spec\.resources\.memory to at least (\d+)m", r.stderr)
    assert m, r.stderr
    assert m.group(1).startswith("-D"), f"the error does not say the value came from -D: {r.stderr}"
    need = int(m.group(2))
    p2, _ = doc(tmp_path, f"{need}m", name="mem2.yaml")
    r2 = subprocess.run([BIN, "check-config", "-c", str(p2), "-D", "taskmanager.memory.managed.size=400m"],
                        capture_output=True, text=True)
    assert r2.returncode == 0, r2.stderr

"""Attack tests of memory tuning's offline side (issue 28 item 1), written from docs/autoscaler.md ("Memory tuning",
"The plan command"), docs/configuration.md and nothing else: `flinklet autoscaler plan` on weird memory figures
(exit 2 naming the JSON path, or a recommendation inside the budget and above the floors; the budget it says a job
needs does hold the job), the tuning arithmetic of the docs, and options with bad values (`check-config`: exit 2
at file:line:column naming the field). No JVM and no REST server. The supervisor's side is in
test_attack_memtune.py. Run: make faults FAULTS_ARGS='-k attack_memtune'."""
import json
import os
import re
import subprocess

import pytest

from conftest import BIN

MIB = 1 << 20


def check_config(tmp_path, flink_conf, memory="1g"):
    lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:", "  name: attack", "spec:"]
    if memory:
        lines += ["  resources:", f"    memory: {memory}"]
    lines += ["  flinkConfiguration:"] + [f"    {k}: {json.dumps(v)}" for k, v in flink_conf.items()]
    lines += ["  job:", "    jarURI: local:///opt/flink/usrlib/job.jar", "    parallelism: 1"]
    path = tmp_path / "flinklet.yaml"
    path.write_text("\n".join(lines) + "\n")
    r = subprocess.run([BIN, "check-config", "-c", str(path)], capture_output=True, text=True, timeout=30)
    return r, lines


# docs: every option with a bad value is a configuration error (exit 2) at file:line:column naming the field.
BAD = [("flinklet.memory-tuning.relaunch-above", "lots"), ("flinklet.memory-tuning.relaunch-above", "-5m"),
       ("flinklet.memory-tuning.relaunch-above", "64 parsecs"), ("flinklet.memory-tuning.relaunch-above", ""),
       ("job.autoscaler.memory.tuning.overhead", "1.5"), ("job.autoscaler.memory.tuning.overhead", "-0.1"),
       ("job.autoscaler.memory.tuning.overhead", "NaN"), ("job.autoscaler.memory.tuning.enabled", "yes please"),
       ("job.autoscaler.memory.tuning.maximize-managed-memory", "sure"),
       ("kubernetes.operator.job.autoscaler.memory.tuning.overhead", "7")]


@pytest.mark.parametrize("key,value", BAD, ids=[f"{k.rsplit('.', 1)[-1]}={v}" for k, v in BAD])
def test_a_bad_tuning_option_is_an_error_at_its_line_and_column(tmp_path, key, value):
    conf = {"job.autoscaler.enabled": "true", "job.autoscaler.memory.tuning.enabled": "true", key: value}
    r, lines = check_config(tmp_path, conf)
    assert r.returncode == 2, r.stdout + r.stderr
    line = next(i + 1 for i, text in enumerate(lines) if text.strip().startswith(key + ":"))
    col = lines[line - 1].index(": ") + 3
    assert re.search(rf"flinklet\.yaml:{line}:{col}: spec\.flinkConfiguration\.{re.escape(key)}: ", r.stderr), r.stderr


# "in [0, 1] when tuning is on": with tuning off the overhead is not checked against that range.
def test_the_overhead_range_applies_only_with_tuning_on(tmp_path):
    r, _ = check_config(tmp_path, {"job.autoscaler.enabled": "true", "job.autoscaler.memory.tuning.overhead": "1.5"})
    assert r.returncode == 0, r.stderr


def plan(tmp_path, global_metrics, config=None, memory="1g", flink_conf=None):
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples",
                           "autoscaler-plan-evaluated.json")) as f:
        doc = json.load(f)
    doc["global"] = global_metrics
    if config is not None:
        doc["config"] = config
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    conf = dict({"job.autoscaler.memory.tuning.enabled": "true"}, **(flink_conf or {}))
    _, _ = check_config(tmp_path, conf, memory)  # writes flinklet.yaml
    r = subprocess.run([BIN, "autoscaler", "plan", "--input", str(tmp_path / "plan.json"), "-c",
                        str(tmp_path / "flinklet.yaml"), "--no-hook"], capture_output=True, text=True, timeout=30)
    assert r.returncode >= 0, f"plan died of signal {-r.returncode}: {r.stderr}"
    return r


def used(heap, metaspace, managed=None):
    g = {"HEAP_MEMORY_USED": {"current": heap, "average": heap},
         "METASPACE_MEMORY_USED": {"current": metaspace, "average": metaspace}}
    if managed is not None:
        g["MANAGED_MEMORY_USED"] = {"current": managed, "average": managed}
    return g


# The plan command: bad input is "rejected (exit 2) with one line per problem naming its JSON path"; weird numbers
# never crash it and never recommend past the budget or below the floors.
@pytest.mark.parametrize("value", ["lots", [1], True, {"current": 1, "average": 1, "max": 2}, {"average": "x"}],
                         ids=["string", "list", "bool", "extra-field", "string-average"])
def test_plan_rejects_a_bad_memory_figure_naming_it(tmp_path, value):
    r = plan(tmp_path, {"HEAP_MEMORY_USED": value, "METASPACE_MEMORY_USED": 6e7})
    assert r.returncode == 2, r.stdout[:500]
    assert "global.HEAP_MEMORY_USED" in r.stderr, r.stderr


def test_plan_rejects_a_misspelt_memory_metric(tmp_path):
    r = plan(tmp_path, {"HEAP_MEMORY_USE": 1e8})
    assert r.returncode == 2 and "global.HEAP_MEMORY_USE" in r.stderr and "HEAP_MEMORY_USED" in r.stderr, r.stderr


WEIRD = {"nan": ("NaN", "NaN"), "infinity": ("Infinity", "Infinity"), "negative": (-5e8, -1), "zero": (0, 0),
         "null": (None, None), "tiny": (1, 1), "managed-minus-infinity": (1e8, 6e7, "-Infinity"),
         "managed-huge": (1e8, 6e7, 1e30)}


@pytest.mark.parametrize("figures", list(WEIRD), ids=list(WEIRD))
def test_plan_weird_numbers_stay_inside_the_budget_and_floors(tmp_path, figures):
    r = plan(tmp_path, used(*WEIRD[figures]), flink_conf={"state.backend.type": "rocksdb",
             "job.autoscaler.memory.tuning.maximize-managed-memory": "true"})
    assert r.returncode in (0, 2), r.stderr
    if r.returncode == 2:
        assert "global." in r.stderr, r.stderr
        return
    mt = json.loads(r.stdout)["memoryTuning"]
    rec, cur = mt["recommended"], mt["current"]
    if rec:
        assert rec["heap"] >= 48 * MIB and rec["metaspace"] >= 80 * MIB and rec["managed"] >= 0, mt
        assert sum(rec.values()) <= sum(cur.values()), mt
    assert mt["applies"] == bool(rec and rec != cur)


# "A job that needs more than the budget holds is not tuned; the recommendation says the budget it needs."
@pytest.mark.parametrize("figures", [
    (2e9, 6e7), (1e8, 9e8),
    (1e20, 6e7), (1e8, 1e19), (1e308, 6e7),
], ids=["heap-2e9", "metaspace-9e8", "heap-1e20", "metaspace-1e19", "heap-1e308"])
def test_plan_a_job_bigger_than_the_budget_says_the_budget_it_needs(tmp_path, figures):
    r = plan(tmp_path, used(*figures))
    assert r.returncode == 0, r.stderr
    mt = json.loads(r.stdout)["memoryTuning"]
    assert mt["applies"] is False and mt["recommended"] is None, mt
    assert mt["minMemory"] and mt["minMemory"] > 1 << 30, mt
    m = re.search(r"at least (\d+)m", mt["reason"])
    assert m and int(m.group(1)) * MIB == mt["minMemory"], mt["reason"]


# The input's `config` is "Flink keys to values ..., over the spec's", and "your own
# `taskmanager.memory.jvm-metaspace.size` and `taskmanager.memory.managed.size` win over tuning's".
@pytest.mark.parametrize("config,check", [
    ({"taskmanager.memory.jvm-metaspace.size": "200m"}, lambda rec: rec["metaspace"] == 200 * MIB),
    ({"state.backend.type": "hashmap"}, lambda rec: rec["managed"] == 0),
    ({"taskmanager.memory.managed.size": "300m"}, lambda rec: rec["managed"] == 300 * MIB),
], ids=["metaspace-key", "backend", "managed-key"])
def test_plan_memory_keys_in_the_inputs_config_count(tmp_path, config, check):
    r = plan(tmp_path, used(1e8, 6e7), config=config, flink_conf={"state.backend.type": "rocksdb"})
    assert r.returncode == 0, r.stderr
    mt = json.loads(r.stdout)["memoryTuning"]
    assert mt["recommended"] is None or check(mt["recommended"]), mt


def test_plan_the_same_keys_in_dash_c_count(tmp_path):
    r = plan(tmp_path, used(1e8, 6e7), flink_conf={"taskmanager.memory.jvm-metaspace.size": "200m"})
    assert r.returncode == 0, r.stderr
    mt = json.loads(r.stdout)["memoryTuning"]
    assert mt["current"]["metaspace"] == 200 * MIB
    assert mt["recommended"] is None or mt["recommended"]["metaspace"] == 200 * MIB, mt


# "With `-c` naming `spec.resources.memory`, the output also has `memoryTuning`"; without it, none; tuning off:
# computed all the same, `applies` false.
def test_plan_memory_tuning_needs_a_budget_and_applies_only_when_enabled(tmp_path):
    r = plan(tmp_path, used(1e8, 6e7), memory=None)
    assert r.returncode == 0 and "memoryTuning" not in json.loads(r.stdout), r.stdout[:300]
    r = plan(tmp_path, used(1e8, 6e7), flink_conf={"job.autoscaler.memory.tuning.enabled": "false"})
    mt = json.loads(r.stdout)["memoryTuning"]
    assert mt["enabled"] is False and mt["applies"] is False and mt["recommended"]["metaspace"] == 80 * MIB, mt


# A bad option in the input's config is rejected naming its JSON path.
@pytest.mark.parametrize("key,value", [("job.autoscaler.memory.tuning.overhead", 5),
                                       ("job.autoscaler.memory.tuning.overhead", "lots"),
                                       ("job.autoscaler.memory.tuning.enabled", "maybe"),
                                       ("taskmanager.memory.managed.size", "lots")])
def test_plan_rejects_a_bad_tuning_option_in_the_inputs_config(tmp_path, key, value):
    r = plan(tmp_path, used(1e8, 6e7), config={key: value})
    assert r.returncode == 2 and f"config.{key}: " in r.stderr, r.stderr


# autoscaler.md: `minMemory` is "the smallest `spec.resources.memory` that holds the job as it runs ...: the figure
# to pick a pod size by". A pod sized by it holds the job: plan at that budget does not say it needs more.
@pytest.mark.parametrize("backend,heap,metaspace", [
    ("hashmap", 100 * MIB, 60 * MIB), ("hashmap", 400 * MIB, 150 * MIB),
    ("rocksdb", 400 * MIB, 150 * MIB),
], ids=["hashmap-small", "hashmap-big", "rocksdb-big"])
def test_plan_a_pod_sized_by_min_memory_holds_the_job(tmp_path, backend, heap, metaspace):
    r = plan(tmp_path, used(heap, metaspace), flink_conf={"state.backend.type": backend})
    mt = json.loads(r.stdout)["memoryTuning"]
    mib = mt["minMemory"] // MIB
    r = plan(tmp_path, used(heap, metaspace), flink_conf={"state.backend.type": backend}, memory=f"{mib}m")
    assert r.returncode == 0, r.stderr
    mt = json.loads(r.stdout)["memoryTuning"]
    assert "more than" not in mt["reason"] and mt["recommended"], (mib, mt)


# Memory tuning's arithmetic, by plan (autoscaler.md): metaspace = max(used x (1 + overhead), used + 16 MiB, 80 MiB);
# heap at least max(used x (1 + overhead), 48 MiB); with maximize-managed-memory and RocksDB, managed memory gets
# everything else of the three pools; without it managed memory stays and the heap takes the rest.
ARITH = [(0.2, 100, 60), (0.0, 100, 70), (0.0, 10, 10), (1.0, 200, 100), (0.2, 30, 150), (0.05, 300, 250)]


@pytest.mark.parametrize("maximize", [True, False], ids=["maximize", "keep-managed"])
@pytest.mark.parametrize("overhead,heap,metaspace", ARITH, ids=[f"o{o}-h{h}-m{m}" for o, h, m in ARITH])
def test_plan_arithmetic(tmp_path, overhead, heap, metaspace, maximize):
    r = plan(tmp_path, used(heap * MIB, metaspace * MIB), config={"job.autoscaler.memory.tuning.overhead": overhead},
             memory="1500m", flink_conf={"state.backend.type": "rocksdb",
                                         "job.autoscaler.memory.tuning.maximize-managed-memory": str(maximize).lower()})
    assert r.returncode == 0, r.stderr
    mt = json.loads(r.stdout)["memoryTuning"]
    rec, cur = mt["recommended"], mt["current"]
    assert rec, mt
    want_meta = max(metaspace * (1 + overhead), metaspace + 16, 80)
    want_heap = max(heap * (1 + overhead), 48)
    assert want_meta * MIB - MIB < rec["metaspace"] <= want_meta * MIB + MIB, (want_meta, rec)
    assert rec["heap"] >= want_heap * MIB - MIB, (want_heap, rec)
    assert abs(sum(rec.values()) - sum(cur.values())) <= 2 * MIB, (rec, cur)
    if maximize:
        assert rec["heap"] <= want_heap * MIB + MIB, (want_heap, rec)
    else:
        assert rec["managed"] == cur["managed"], (rec, cur)

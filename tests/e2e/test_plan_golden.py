"""`flinklet autoscaler plan` gives, byte for byte, the pinned outputs of tests/golden/plan_golden.py's generated
inputs, of the docs' examples and of the plan documents in tests/golden/cases/: the autoscaler's decisions did not
change while it was made faster. The cases' decisions are also asserted by what they are about. Needs the binary
only (no Flink)."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import BIN

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "plan_golden.py")


def test_plan_outputs_are_the_pinned_ones():
    r = subprocess.run([sys.executable, GOLDEN, "check", "--bin", BIN], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "247 of 247 cases as pinned" in r.stdout, r.stdout


KAFKA_CASE = os.path.join(os.path.dirname(__file__), "..", "golden", "cases", "kafka-source-above-partitions.json")
KAFKA_SRC = "cbc357ccb763df2852fee8c4fc7d55f2"


def plan(doc):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
    try:
        r = subprocess.run([BIN, "autoscaler", "plan", "--input", f.name], capture_output=True, text=True,
                           timeout=60)
    finally:
        os.unlink(f.name)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("mode", [("scaling.parallelism-alignment.mode", "BALANCED"),
                                  ("scaling.parallelism-alignment.mode", "EVENLY_SPREAD"),
                                  ("scaling.parallelism-alignment.mode", "OFF"),
                                  ("scaling.key-group.partitions.adjust.mode", "EVENLY_SPREAD"),
                                  ("scaling.key-group.partitions.adjust.mode", "MAXIMIZE_UTILISATION")])
def test_a_kafka_source_is_never_scaled_above_its_partitions(mode):
    """Issue 27, defect 5: a Kafka source with 4 partitions (max parallelism and vertex max 8) and a backlog it
    needs 6 readers for went 1 -> 6, two readers idle holding slots. As operator 1.16 (and every release before
    the alignment modes), it goes to 4, in every alignment mode."""
    with open(KAFKA_CASE) as f:
        doc = json.load(f)
    doc["config"]["job.autoscaler." + mode[0]] = mode[1]
    out = plan(doc)
    src = out["vertices"][KAFKA_SRC]
    assert out["decision"] == "scale"
    assert (src["currentParallelism"], src["newParallelism"]) == (1, 4), src
    assert src["evaluated"]["NUM_SOURCE_PARTITIONS"] == 4
    assert src["evaluated"]["EXPECTED_PROCESSING_RATE"] == 1200  # TPR 300 / 1 x 4
    # without the partitions (a source that does not report them) the same backlog takes 6
    del doc["vertices"][0]["numSourcePartitions"]
    assert plan(doc)["vertices"][KAFKA_SRC]["newParallelism"] == 6


def test_a_source_above_its_partitions_comes_back_to_them():
    """A source left above its partitions (2 -> 7 in one run) that is behind is brought back to them, not further
    up: a scale-down, so right away without a scale-down interval, and after the interval with one."""
    with open(KAFKA_CASE) as f:
        doc = json.load(f)
    doc["vertices"][0]["parallelism"] = 7
    doc["vertices"][0]["evaluated"]["TRUE_PROCESSING_RATE"] = 900  # below the 1000 it must sustain
    doc["config"]["job.autoscaler.scale-down.interval"] = "0"
    out = plan(doc)
    src = out["vertices"][KAFKA_SRC]
    assert out["decision"] == "scale"
    assert (src["currentParallelism"], src["newParallelism"]) == (7, 4), src
    doc["config"]["job.autoscaler.scale-down.interval"] = "1 h"
    src = plan(doc)["vertices"][KAFKA_SRC]
    assert (src["targetParallelism"], src["newParallelism"]) == (4, 7), src  # waits for the interval


def test_plan_shows_memory_tuning_inside_the_budget_of_the_configuration(tmp_path):
    """With -c naming spec.resources.memory, the plan says what memory tuning would do with the evaluated heap,
    metaspace and managed memory use (docs/autoscaler.md, Memory tuning); without it, nothing (the pinned outputs)."""
    mib = 1 << 20
    doc = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "examples",
                                      "autoscaler-plan-evaluated.json")))
    doc["global"] = dict(doc.get("global") or {},
                         HEAP_MEMORY_USED={"average": 100 * mib, "current": 110 * mib},
                         METASPACE_MEMORY_USED={"average": 70 * mib, "current": 70 * mib},
                         MANAGED_MEMORY_USED={"average": 200 * mib, "current": 200 * mib})
    doc.setdefault("config", {}).update({"job.autoscaler.memory.tuning.maximize-managed-memory": "true",
                                         "job.autoscaler.memory.tuning.enabled": "true"})
    inp, cfg = tmp_path / "plan.json", tmp_path / "flinklet.yaml"
    inp.write_text(json.dumps(doc))
    cfg.write_text("metadata: {name: j}\nspec:\n  flinkConfiguration: {state.backend.type: rocksdb}\n"
                   "  resources: {memory: 1g}\n  job: {jarURI: /j.jar, parallelism: 2}\n")
    r = subprocess.run([BIN, "autoscaler", "plan", "--input", str(inp), "-c", str(cfg)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    mt = json.loads(r.stdout)["memoryTuning"]
    assert mt["enabled"] and mt["applies"], mt
    assert mt["recommended"]["heap"] == 120 * mib and mt["recommended"]["metaspace"] == 86 * mib, mt
    assert mt["recommended"]["managed"] > mt["current"]["managed"] and mt["current"]["heap"] > 120 * mib, mt
    assert 0 < mt["minMemory"] < 1024 * mib, mt
    assert mt["reason"].startswith("heap "), mt
    # the untuned split whole (tests/parity compares the operator's TaskManager laid out from it): it fills the budget
    split = mt["currentSplit"]
    assert sum(split.values()) == 1024 * mib and split["flinklet"] == 16 * mib, split
    assert (split["heap"], split["managed"], split["metaspace"]) == tuple(mt["current"][k] for k in (
        "heap", "managed", "metaspace")), split
    # measured in a JVM that runs tuned with a heap of 200m: the heap only grows (docs/autoscaler.md, Memory tuning)
    doc["taskManager"] = {"tunedHeap": 200 * mib}
    inp.write_text(json.dumps(doc))
    r = subprocess.run([BIN, "autoscaler", "plan", "--input", str(inp), "-c", str(cfg)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    grown = json.loads(r.stdout)["memoryTuning"]
    assert grown["recommended"]["heap"] == 200 * mib, grown
    assert grown["recommended"]["managed"] == mt["recommended"]["managed"] - 80 * mib, (grown, mt)
    del doc["taskManager"]
    inp.write_text(json.dumps(doc))
    # without -c: no budget, no tuning in the output
    r = subprocess.run([BIN, "autoscaler", "plan", "--input", str(inp)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "memoryTuning" not in json.loads(r.stdout), r.stdout[-500:]

"""`flinklet autoscaler plan` runs the scaling hook too (issue 27), so that a hook can be tried without a job: real
executables (sh, Python) given by --hook or by the configuration's flinklet.autoscaler.hook, each asserted on the
plan's decision, the parallelism it would apply, the events and the output's "hook". Needs the binary only (no
Flink). The input is the docs' first example: both vertices 1 -> 2."""
import json
import os
import subprocess
import time

import pytest

from conftest import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "autoscaler-plan-evaluated.json")
SRC, AGG = "bc764cd8ddf7a0cff126f51c16239658", "20ba6b65f97481d5570070de90e4e791"


def hook(tmp_path, name, body):
    path = tmp_path / name
    shebang = "#!/usr/bin/env python3\nimport json, sys\n" if name.endswith(".py") else "#!/bin/sh\n"
    path.write_text(shebang + body)
    path.chmod(0o755)
    return str(path)


def plan(*args, input=EXAMPLE, code=0):
    r = subprocess.run([BIN, "autoscaler", "plan", "--input", input, *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == code, r.stderr
    return json.loads(r.stdout) if code == 0 else r.stderr


def applied(out):
    return {v: x["newParallelism"] for v, x in out["vertices"].items()}


def reasons(out):
    return [e["reason"] for e in out["events"]]


def test_an_approving_hook_gets_the_proposal_on_stdin(tmp_path):
    seen = tmp_path / "seen.json"
    h = hook(tmp_path, "approve.py", f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n"
                                     "print(json.dumps({'decision': 'apply'}))\n")
    out = plan("--hook", h)
    assert out["scaling"] is True and out["decision"] == "scale"
    assert applied(out) == {SRC: 2, AGG: 2}
    assert reasons(out) == ["ScalingHookApplied", "ScalingReport"]
    assert out["hook"]["verdict"] == "applied" and out["hook"]["path"] == h
    proposal = json.loads(seen.read_text())
    assert proposal == out["hook"]["proposal"]
    assert [(v["id"], v["currentParallelism"], v["proposedParallelism"]) for v in proposal["vertices"]] == \
        [(SRC, 1, 2), (AGG, 1, 2)]
    assert proposal["timeoutMs"] == 10000


def test_an_adjusting_hook_changes_what_is_applied(tmp_path):
    h = hook(tmp_path, "adjust.py", "p = json.load(sys.stdin)\n"
                                    f"print(json.dumps({{'decision': 'adjust', 'parallelism': {{'{SRC}': 4, '{AGG}': 1}}}}))\n")
    out = plan("--hook", h)
    assert out["scaling"] is True
    assert applied(out) == {SRC: 4, AGG: 1}
    assert reasons(out) == ["ScalingHookAdjusted", "ScalingReport"]
    assert f"to {SRC} 1 -> 4" in out["events"][0]["message"]
    assert "Parallelism 1 -> 4 | Processing capacity 800.00 -> 3200.00" in out["events"][1]["message"]


def test_a_vetoing_hook_keeps_the_parallelism(tmp_path):
    h = hook(tmp_path, "veto.sh", "cat > /dev/null\necho '{\"decision\": \"veto\", \"reason\": \"freeze\"}'\n")
    out = plan("--hook", h)
    assert out["scaling"] is False and out["decision"] == "vetoed by the scaling hook"
    assert applied(out) == {SRC: 1, AGG: 1}
    assert reasons(out) == ["ScalingHookVetoed"]
    assert out["events"][0]["message"].endswith(f"vetoed the rescale ({SRC} 1 -> 2, {AGG} 1 -> 2): freeze")


@pytest.mark.parametrize("name,body,said", [
    ("garbage.sh", "echo 'sure thing'\n", "answered what cannot be used: not JSON (at byte 0)"),
    ("exit2.sh", "echo 'quota service down' >&2\nexit 2\n",
     "exited with code 2; the rescale ({src} 1 -> 2, {agg} 1 -> 2) is not executed (its error output ends: quota "
     "service down)"),
    ("hang.sh", "sleep 30 & echo $! > {pids}\nwait\n", "did not answer within 300 ms"),
    ("silent.py", "sys.stdin.read()\n", "answered what cannot be used: no answer on its standard output"),
])
def test_a_failing_hook_vetoes(tmp_path, name, body, said):
    pids = tmp_path / "pids"
    h = hook(tmp_path, name, body.replace("{pids}", str(pids)))
    # 300 ms only where the timeout is what is tried: a hook that ends by itself (a Python one starts slowly on a
    # loaded machine) gets the time to say what it says
    timeout = "300ms" if name == "hang.sh" else "20s"
    out = plan("--hook", h, "--hook-timeout", timeout)
    assert out["scaling"] is False and out["decision"] == "the scaling hook failed"
    assert applied(out) == {SRC: 1, AGG: 1}
    assert reasons(out) == ["ScalingHookFailed"]
    assert said.format(src=SRC, agg=AGG) in out["events"][0]["message"], out["events"][0]
    assert out["hook"]["verdict"] == "failed"
    if name == "hang.sh":  # killed with its process group, the sleep it started too
        pid = int(pids.read_text())
        for _ in range(50):
            if not os.path.exists(f"/proc/{pid}") or " Z " in open(f"/proc/{pid}/stat").read():
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the hook's child {pid} outlived it")


def test_the_configuration_names_the_hook_and_no_hook_turns_it_off(tmp_path):
    h = hook(tmp_path, "veto.sh", "echo '{\"decision\": \"veto\"}'\n")
    config = tmp_path / "flinklet.yaml"
    config.write_text("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: t\nspec:\n"
                      f"  flinkConfiguration:\n    flinklet.autoscaler.hook: {h}\n"
                      "    flinklet.autoscaler.hook.timeout: 5 s\n"
                      "  job:\n    jarURI: local:///opt/job.jar\n    entryClass: a.B\n")
    out = plan("-c", str(config))
    assert out["hook"]["verdict"] == "vetoed" and out["hook"]["proposal"]["timeoutMs"] == 5000
    plain = plan()
    off = plan("-c", str(config), "--no-hook")
    assert "hook" not in off and off == plain
    # a plan document is data: a hook named in its own "config" is never run
    doc = json.load(open(EXAMPLE))
    doc["config"] = {"flinklet.autoscaler.hook": h}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    assert plan(input=str(path)) == plain
    assert "--hook-timeout: must be a duration of at least 100 ms" in plan("--hook", h, "--hook-timeout", "5",
                                                                            code=2)


def test_the_docs_example_hook_is_the_one_shown_and_runs(tmp_path):
    example = os.path.join(ROOT, "docs", "examples", "scaling-hook.py")
    text = open(example).read()
    assert "```python\n" + text + "```" in open(os.path.join(ROOT, "docs", "autoscaler.md")).read()
    out = plan("--hook", example)
    assert out["hook"]["verdict"] == "applied" and applied(out) == {SRC: 2, AGG: 2}
    # past its cap of 16 slots it adjusts: the source asked for 40 gets 16
    doc = json.load(open(EXAMPLE))
    doc["vertices"][0]["evaluated"]["TRUE_PROCESSING_RATE"] = 40
    doc["vertices"][0]["numSourcePartitions"] = 64  # (a source is never scaled above its partitions)
    doc["config"] = {"job.autoscaler.scaling.parallelism-alignment.mode": "OFF"}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    out = plan("--hook", example, input=str(path))
    assert out["hook"]["verdict"] == "adjusted", out["hook"]
    assert out["hook"]["proposal"]["vertices"][0]["proposedParallelism"] > 16
    assert applied(out)[SRC] == 16 and "capped at 16 slots" in out["events"][0]["message"]

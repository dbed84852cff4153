"""The scaling hook (flinklet.autoscaler.hook, issue 27: the operator 1.16's scaling executors without a JVM) in the
supervisor, against the fake Flink, with real executables (sh and Python) as the hook.

The job: a source "src" (parallelism 2, busy 200 ms/s, 1000 records/s) feeding a keyed "agg" (parallelism 2, busy
1000 ms/s, 930 records/s in): agg's true processing rate 930 is below the scale-up threshold (the target rate,
about 1000), so the autoscaler proposes agg 2 -> 4: ceil(2 x 1595 / 930) (the source's scale-down waits for the
scale-down interval). 4 holds for a measured rate anywhere from 931 to 1166 records/s: the fake counts records by
the wall clock, flinklet samples them at its own. The fake answers
Flink's metric endpoints as a MiniCluster does, takes PUT /jobs/:id/resource-requirements (the rescale applied) and
then runs the job at that parallelism, where agg is inside its bounds. Each test asserts what flinklet PUT (the
parallelism applied, or none), the status document's overrides and the events; the hook records every proposal it
was given."""
import json
import os
import re
import stat
import threading
import time

import pytest

from conftest import wait_for

SRC = "5c0c0a1d2b3e4f5061728394a5b6c7d8"
AGG = "a9b8c7d6e5f40312233445566778899a"
TIMEOUT = 60
AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.metrics.window": "2 s",
    "job.autoscaler.stabilization.interval": "0 s",
    "autoscaler.standalone.control-loop.interval": "500 ms",
    "taskmanager.numberOfTaskSlots": "8",
    "job.autoscaler.vertex.max-parallelism": "8",
}


class AutoscaledJob:
    """Flink's answers about a running src -> HASH -> agg job, for FakeFlink.fault."""

    def __init__(self, server):
        self.server = server
        self.p = {SRC: 2, AGG: 2}
        self.running_since = int(time.time() * 1000) - 1000
        self.lock = threading.Lock()

    def details(self, jid):
        secs = (time.time() * 1000 - self.running_since) / 1000
        vs = []
        for vid, name in ((SRC, "Source: src"), (AGG, "agg")):
            p = self.p[vid]
            vs.append({"id": vid, "name": name, "parallelism": p, "maxParallelism": 128, "status": "RUNNING",
                       "tasks": {"RUNNING": p, "FINISHED": 0},
                       "metrics": {"read-records": 0 if vid == SRC else round(1000 * secs),
                                   "write-records": round(1000 * secs) if vid == SRC else 0,
                                   "accumulated-busy-time": 0}})
        return {"jid": jid, "name": "fake", "state": "RUNNING", "start-time": self.running_since - 1000,
                "vertices": vs, "timestamps": {"RUNNING": self.running_since},
                "plan": {"jid": jid, "nodes": [
                    {"id": SRC, "parallelism": self.p[SRC]},
                    {"id": AGG, "parallelism": self.p[AGG], "inputs": [{"id": SRC, "ship_strategy": "HASH"}]}]}}

    def metrics(self, vid, query):
        if query is None:  # the listing
            names = (["busyTimeMsPerSecond", "backPressuredTimeMsPerSecond", "Source__src.numRecordsInPerSecond",
                      "Source__src.numRecordsIn"] if vid == SRC else ["busyTimeMsPerSecond", "numRecordsInPerSecond"])
            return [{"id": n} for n in names]
        secs = (time.time() * 1000 - self.running_since) / 1000
        if vid == SRC:
            return [{"id": "busyTimeMsPerSecond", "max": 200}, {"id": "backPressuredTimeMsPerSecond", "avg": 0},
                    {"id": "Source__src.numRecordsInPerSecond", "sum": 1000},
                    {"id": "Source__src.numRecordsIn", "sum": round(1000 * secs)}]
        busy = 1000 if self.p[AGG] <= 2 else 400  # saturated at 2, comfortable when wider
        return [{"id": "busyTimeMsPerSecond", "max": busy}, {"id": "numRecordsInPerSecond", "sum": 930}]

    def __call__(self, method, path):
        route, _, query = path.partition("?")
        if route == "/jobmanager/metrics":
            return 200, json.dumps([{"id": "taskSlotsTotal", "value": "8"},
                                    {"id": "taskSlotsAvailable", "value": "4"}]).encode()
        if route == "/taskmanagers/metrics":
            return 200, json.dumps([{"id": "Status.JVM.Memory.Heap.Used", "max": 100},
                                    {"id": "Status.JVM.Memory.Heap.Max", "max": 1000}]).encode()
        m = re.match(r"^/jobs/([0-9a-f]{32})(/.*)?$", route)
        if not m:
            return None
        jid, rest = m.group(1), m.group(2) or ""
        with self.lock:
            if rest == "" and method == "GET":
                return 200, json.dumps(self.details(jid)).encode()
            v = re.match(r"^/vertices/([0-9a-f]{32})/subtasks/metrics$", rest)
            if v and method == "GET":
                return 200, json.dumps(self.metrics(v.group(1), query or None)).encode()
            if rest == "/resource-requirements" and method == "GET":
                return 200, json.dumps({vid: {"parallelism": {"lowerBound": 1, "upperBound": p}}
                                        for vid, p in self.p.items()}).encode()
            if rest == "/resource-requirements" and method == "PUT":
                # the rescale takes effect: the job restarts at that parallelism, as the adaptive scheduler does
                body = json.loads(self.server.bodies[-1][2])
                self.p = {vid: body[vid]["parallelism"]["upperBound"] for vid in self.p}
                self.running_since = int(time.time() * 1000)
                return 200, b"{}"
        return None


def put_bodies(server):
    return [json.loads(b) for m, p, b in list(server.bodies)
            if m == "PUT" and p.split("?")[0].endswith("/resource-requirements")]


def upper(body, vid):
    return body[vid]["parallelism"]["upperBound"]


def write_hook(tmp_path, name, body):
    """An executable hook: records each proposal it gets (proposals.jsonl), then body answers."""
    path = tmp_path / name
    record = tmp_path / "proposals.jsonl"
    if name.endswith(".py"):
        text = ("#!/usr/bin/env python3\nimport json, sys\nproposal = json.load(sys.stdin)\n"
                f"with open({str(record)!r}, 'a') as f:\n    f.write(json.dumps(proposal) + '\\n')\n" + body)
    else:
        text = ("#!/bin/sh\nproposal=$(cat)\n"
                f"printf '%s\\n' \"$(printf '%s' \"$proposal\" | tr -d '\\n')\" >> '{record}'\n" + body)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def proposals(tmp_path):
    try:
        with open(tmp_path / "proposals.jsonl") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def events(sup, *kinds):
    return [e for e in sup.events() if e["type"] in kinds]


def start(supervisors, server, hook, **conf):
    job = AutoscaledJob(server)
    server.fault = job
    sup = supervisors(server, conf={**AUTOSCALER, "flinklet.autoscaler.hook": hook, **conf}).start()
    return sup, job


def overrides(sup):
    st = sup.status() or {}
    return (st.get("autoscaler") or {}).get("parallelismOverrides") or {}


def test_a_hook_that_approves_lets_the_rescale_through(tmp_path, supervisors, server):
    hook = write_hook(tmp_path, "approve.sh", "echo '{\"decision\": \"apply\", \"reason\": \"within budget\"}'\n")
    sup, job = start(supervisors, server, hook)
    applied = wait_for(lambda: [b for b in put_bodies(server) if upper(b, AGG) != 2], TIMEOUT,
                       "the approved rescale PUT to Flink", interval=0.1)
    body = applied[0]
    assert upper(body, AGG) == 4 and upper(body, SRC) == 2, body
    wait_for(lambda: events(sup, "ScalingApplied"), TIMEOUT, "ScalingApplied", interval=0.1)
    kinds = [e["type"] for e in events(sup, "ScalingHookApplied", "ScalingReport", "ScalingApplied")]
    assert kinds[:3] == ["ScalingHookApplied", "ScalingReport", "ScalingApplied"], kinds
    ok = events(sup, "ScalingHookApplied")[0]
    assert f"approved the rescale ({AGG} 2 -> 4)" in ok["message"] and "within budget" in ok["message"], ok
    assert "Parallelism 2 -> 4" in events(sup, "ScalingReport")[0]["message"]
    wait_for(lambda: overrides(sup).get(AGG) == "4", TIMEOUT, "the override in status.json", interval=0.1)
    # what the hook was told: every vertex, the proposal, its limit, the metrics the decision stood on, why
    p = proposals(tmp_path)[0]
    assert p["version"] == 1 and p["job"] == open(os.path.join(sup.state, "job-id")).read().strip() and p["timeoutMs"] == 10000, p
    vs = {v["id"]: v for v in p["vertices"]}
    assert [v["id"] for v in p["vertices"]] == [SRC, AGG]  # sources first
    assert vs[AGG]["currentParallelism"] == 2 and vs[AGG]["proposedParallelism"] == 4, vs[AGG]
    assert vs[AGG]["direction"] == "up" and vs[AGG]["parallelismLimit"] == 8 and vs[AGG]["maxParallelism"] == 128
    assert vs[AGG]["outsideUtilizationBound"] is True and vs[AGG]["excluded"] is False
    m = vs[AGG]["metrics"]
    assert m["TRUE_PROCESSING_RATE"] == 930 and m["SCALE_UP_RATE_THRESHOLD"] > 930, m
    assert m["EXPECTED_PROCESSING_RATE"] == 1860 and m["LOAD"] == 1, m
    assert vs[SRC]["proposedParallelism"] == 2 and vs[SRC]["direction"] == "none"
    assert vs[SRC]["metrics"]["EXPECTED_PROCESSING_RATE"] == "NaN"
    assert f"{AGG} 2 -> 4: true processing rate 930.00 is below the scale-up threshold" in p["reason"], p["reason"]


def test_a_hook_that_adjusts_sets_its_own_parallelism(tmp_path, supervisors, server):
    hook = write_hook(tmp_path, "adjust.py", (
        "ps = {v['id']: 3 for v in proposal['vertices'] if v['direction'] == 'up'}\n"
        "print(json.dumps({'decision': 'adjust', 'parallelism': ps, 'reason': 'cost cap'}))\n"))
    sup, job = start(supervisors, server, hook)
    body = wait_for(lambda: [b for b in put_bodies(server) if upper(b, AGG) != 2], TIMEOUT,
                    "the adjusted rescale PUT to Flink", interval=0.1)[0]
    assert upper(body, AGG) == 3 and upper(body, SRC) == 2, body
    adjusted = wait_for(lambda: events(sup, "ScalingHookAdjusted"), TIMEOUT, "ScalingHookAdjusted", interval=0.1)[0]
    assert f"adjusted the rescale ({AGG} 2 -> 4) to {AGG} 2 -> 3: cost cap" in adjusted["message"], adjusted
    report = events(sup, "ScalingReport")[0]["message"]
    assert "Parallelism 2 -> 3 | Processing capacity 930.00 -> 1395.00" in report, report
    assert not events(sup, "ScalingHookApplied")
    wait_for(lambda: overrides(sup).get(AGG) == "3", TIMEOUT, "the adjusted override in status.json", interval=0.1)
    # the scaling history keeps what was applied
    state = os.path.join(sup.state, "autoscaler")
    doc = json.load(open(os.path.join(state, os.listdir(state)[0])))
    hist = doc["scalingHistory"][AGG]
    assert hist[-1]["newParallelism"] == 3 and hist[-1]["metrics"]["EXPECTED_PROCESSING_RATE"]["current"] == 1395


def test_a_veto_keeps_the_parallelism(tmp_path, supervisors, server):
    hook = write_hook(tmp_path, "veto.sh", "echo '{\"decision\": \"veto\", \"reason\": \"change freeze\"}'\n")
    sup, job = start(supervisors, server, hook)
    # asked again each cycle while the proposal stands, vetoed each time
    wait_for(lambda: len(proposals(tmp_path)) >= 3, TIMEOUT, "the hook asked three times", interval=0.1)
    assert not [b for b in put_bodies(server) if upper(b, AGG) != 2], put_bodies(server)
    vetoes = events(sup, "ScalingHookVetoed")
    assert len(vetoes) == 1, vetoes  # the same proposal is said once per scaling.event.interval
    assert vetoes[0]["level"] == "Warning"
    assert f"vetoed the rescale ({AGG} 2 -> 4): change freeze" in vetoes[0]["message"], vetoes[0]
    assert not events(sup, "ScalingReport", "ScalingApplied", "ScalingHookApplied")
    assert not overrides(sup)
    assert sup.stop() == 0  # with the hook asked every cycle: a stop does not wait for it


FAILING = {
    "hang.sh": ("sleep 60 & echo $! > '{pids}'\nwait\n", "did not answer within 1 s"),
    "garbage.sh": ("echo 'yes, go ahead'\n", "answered what cannot be used: not JSON (at byte 0)"),
    "exit3.sh": ("echo 'cost service unreachable' >&2\nexit 3\n",
                 "exited with code 3; the rescale ({agg} 2 -> 4) is not executed (its error output ends: cost "
                 "service unreachable)"),
    "crash.py": ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "was killed by signal 11"),
    "stranger.py": ("print(json.dumps({'decision': 'adjust', 'parallelism': {'0' * 32: 2, '" + AGG + "': 9}}))\n",
                    "parallelism.00000000000000000000000000000000: no such vertex in the job; parallelism." + AGG +
                    ": must be an integer from 1 to 8 (got 9)"),
}


@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_hook_that_fails_vetoes_the_rescale(tmp_path, supervisors, server, name):
    body, said = FAILING[name]
    pids = tmp_path / "pids"
    hook = write_hook(tmp_path, name, body.replace("{pids}", str(pids)))
    sup, job = start(supervisors, server, hook, **{"flinklet.autoscaler.hook.timeout": "1 s"})
    failed = wait_for(lambda: events(sup, "ScalingHookFailed"), TIMEOUT, "ScalingHookFailed", interval=0.1)[0]
    assert failed["level"] == "Warning"
    assert said.replace("{agg}", AGG) in failed["message"], failed
    assert f"the rescale ({AGG} 2 -> 4) is not executed" in failed["message"], failed
    wait_for(lambda: len(proposals(tmp_path)) >= 2, TIMEOUT, "the hook asked again on the next cycle", interval=0.1)
    assert not [b for b in put_bodies(server) if upper(b, AGG) != 2], put_bodies(server)
    assert not events(sup, "ScalingReport", "ScalingApplied", "ScalingHookApplied", "ScalingHookVetoed")
    assert not overrides(sup)
    assert sup.alive()
    if name == "hang.sh":  # its whole process group was killed, the sleep it started included
        pid = int(pids.read_text())
        with pytest.raises(ProcessLookupError):
            for _ in range(50):
                os.kill(pid, 0)
                time.sleep(0.1)


def test_a_hook_that_is_not_there_vetoes_the_rescale(tmp_path, supervisors, server):
    sup, job = start(supervisors, server, str(tmp_path / "no-such-hook"))
    failed = wait_for(lambda: events(sup, "ScalingHookFailed"), TIMEOUT, "ScalingHookFailed", interval=0.1)[0]
    assert "could not be run: No such file or directory" in failed["message"], failed
    assert not [b for b in put_bodies(server) if upper(b, AGG) != 2]
    assert not overrides(sup)

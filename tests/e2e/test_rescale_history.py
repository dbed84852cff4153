"""Flink's own rescale history beside the autoscaler's (Flink 2.3 and later), on the real MiniCluster: the job runs on
the adaptive scheduler (the autoscaler on, deciding nothing for an hour, as tests/e2e/test_autoscaler.py's QUIET
test), flinklet keeps Flink's rescale history on by default, and a rescale in place (a PUT of the resource
requirements through flinklet's /flink/ with the token, the request the autoscaler's realizer sends) is what
GET /autoscaler lists, field for field, as Flink's own GET /jobs/:id/rescales/history and /details/:uuid say it.
Below Flink 2.3 the test is skipped (tests/faults/test_rescale_history.py checks that nothing is asked there)."""
import json
import urllib.request

import pytest

from conftest import flink_minor, wait_for

QUIET = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.stabilization.interval": "1 h",
    "autoscaler.standalone.control-loop.interval": "2 s",
    "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "2 s",
}
COPIED = ("rescaleUuid", "resourceRequirementsUuid", "rescaleAttemptId", "triggerCause", "terminalState",
          "terminatedReason", "startTimestampInMillis", "endTimestampInMillis")
PER_VERTEX = ("jobVertexName", "desiredParallelism", "sufficientParallelism", "preRescaleParallelism",
              "postRescaleParallelism")


def flink_version():
    return flink_minor()


def count_vertex(f, job_id):
    for v in f.rest(f"/jobs/{job_id}")["vertices"]:
        if v["name"].startswith("Count"):
            return v
    raise AssertionError("no Count vertex")


def mine_as_flink_says(f, job_id):
    """GET /autoscaler's flinkRescaleHistory when it is what Flink's REST API says now (None while not: flinklet asks
    every 10 s), with Flink's history."""
    mine = json.loads(f.http("/autoscaler")[1]).get("flinkRescaleHistory")
    flinks = f.rest(f"/jobs/{job_id}/rescales/history")
    if not mine or len(mine["rescales"]) != min(len(flinks), 20):
        return None
    for m, r in zip(mine["rescales"], flinks):
        if any(m[k] != r[k] for k in COPIED):
            return None
        if r["terminalState"] and not m["detailsKnown"]:
            return None
        if m["detailsKnown"]:
            d = f.rest(f"/jobs/{job_id}/rescales/details/{r['rescaleUuid']}")
            assert set(m["vertices"]) == set(d["vertices"]), (m, d)
            for vid, v in d["vertices"].items():
                assert {k: m["vertices"][vid][k] for k in PER_VERTEX} == {k: v[k] for k in PER_VERTEX}, (m, d)
    return mine, flinks


def test_flink_rescale_history_on_2_3(tmp_path, flinklets):
    if flink_version() < (2, 3):
        pytest.skip("Flink's rescale history is new in Flink 2.3")
    f = flinklets(conf=QUIET, job={"parallelism": 1, "args": ["--rate", "100", "--keys", "8", "--output", "OUT"]})
    f.start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    # flinklet turned Flink's history on (Flink's default is 0)
    assert f.rest(f"/jobs/{job_id}/rescales/config")["rescaleHistoryMax"] == 10
    count = count_vertex(f, job_id)
    assert count["parallelism"] == 1

    # a rescale in place: Count 1 -> 2, sent as the autoscaler's realizer sends it, through flinklet's /flink/
    req = f.rest(f"/jobs/{job_id}/resource-requirements")
    req[count["id"]]["parallelism"]["upperBound"] = 2
    put = urllib.request.Request(f"http://127.0.0.1:{f.http_port}/flink/jobs/{job_id}/resource-requirements",
                                 method="PUT", data=json.dumps(req).encode(),
                                 headers={"Authorization": f"Bearer {f.token()}", "Content-Type": "application/json"})
    with urllib.request.urlopen(put, timeout=10) as r:
        assert r.status == 200
    wait_for(lambda: count_vertex(f, job_id)["parallelism"] == 2, 120, "Count at parallelism 2")

    mine, flinks = wait_for(lambda: mine_as_flink_says(f, job_id), 120,
                            "GET /autoscaler listing what Flink's rescale history says")
    assert mine["kept"] == 10 and mine["error"] is None and mine["updated"] > 0
    triggers = [r["triggerCause"] for r in mine["rescales"]]
    assert triggers[-1] == "INITIAL_SCHEDULE" and "UPDATE_REQUIREMENT" in triggers, triggers
    ours = [r for r in mine["rescales"] if r["triggerCause"] == "UPDATE_REQUIREMENT" and
            r["vertices"].get(count["id"], {}).get("postRescaleParallelism") == 2]
    assert ours and ours[0]["terminalState"] == "COMPLETED", mine["rescales"]
    assert ours[0]["vertices"][count["id"]]["preRescaleParallelism"] == 1
    assert not [line for line in f.logs().splitlines() if "Flink's rescale history:" in line]
    f.stop()

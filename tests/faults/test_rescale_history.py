"""Flink's own rescale history (Flink 2.3+) in GET /autoscaler and on the status page, against the fake REST server:
what the fake lists (the shapes of Flink 2.3.0's answers) is what flinklet shows, with each finished rescale's
vertices asked once; garbage, huge and slow answers of the rescale endpoints are said once and never replace what
was shown, and the job is followed as before meanwhile; on Flink 2.2.1 the endpoints are never asked (the fake's
request log)."""
import json
import os
import time
import urllib.request

import pytest

from conftest import wait_for
from testkit import CHROMIUM, Dom, chromium, csp_violations
from fakeflink import FAULTS, RESCALES_OFF, VERTEX, rescale, rescale_details

# the history is asked every fifth poll: every 0.5 s here
ADAPTIVE = {"jobmanager.scheduler": "adaptive", "flinklet.rest.poll-interval": "100 ms"}
NOW = int(time.time() * 1000)
R0, R1, R2 = "2a82e09585b00b6b952d00c1bc5f7bd7", "286bba8d690fbfe3c97f090ca13c62e8", "f59a8a6b954ec9797a8bb240f4005fdb"
HISTORY = [rescale(R2, NOW - 2000),  # in progress
           rescale(R1, NOW - 60000, NOW - 58800),
           rescale(R0, NOW - 120000, NOW - 119500, trigger="INITIAL_SCHEDULE")]
DETAILS = {R1: rescale_details(HISTORY[1], {VERTEX: ("Source: fake", 1, 2)}),
           R0: rescale_details(HISTORY[2], {VERTEX: ("Source: fake", 1, 1)})}
SAID = "Flink's rescale history:"


def autoscaler(sup):
    with urllib.request.urlopen(f"http://{sup.conf['flinklet.http.address']}/autoscaler", timeout=5) as r:
        return json.loads(r.read())


def asked(server, part):
    with server.lock:
        return [p for _, m, p in server.requests if part in p]


def stable(sup):
    return wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE" and s, 20, "STABLE", interval=0.1)


def serve_history(server):
    server.rescales = [dict(e) for e in HISTORY]
    server.rescale_details = dict(DETAILS)


def shown(sup):
    return autoscaler(sup).get("flinkRescaleHistory")


def wait_listed(sup, n=3):
    return wait_for(lambda: (h := shown(sup)) and len(h["rescales"]) == n and
                    all(r["detailsKnown"] for r in h["rescales"] if r["terminalState"]) and h, 20,
                    "Flink's rescale history with the finished rescales' details in GET /autoscaler", interval=0.1)


def test_flink_2_3_history_is_shown_with_the_vertices_of_each_rescale(server, supervisors):
    serve_history(server)
    sup = supervisors(server, conf=ADAPTIVE, flink_version="2.3.0").start()
    job_id = stable(sup)["jobStatus"]["jobId"]
    # flinklet keeps Flink's history on (Flink's default is 0: none)
    conf = open(os.path.join(sup.state, "conf", "config.yaml")).read()
    assert '"web.adaptive-scheduler.rescale-history.size": "10"' in conf, conf
    h = wait_listed(sup)
    assert h["kept"] == 10 and h["error"] is None and h["updated"] > 0 and h["more"] is False
    listed = h["rescales"]
    assert [r["rescaleUuid"] for r in listed] == [R2, R1, R0]  # Flink's order: newest first
    for mine, flinks in zip(listed, HISTORY):
        for k in ("resourceRequirementsUuid", "rescaleAttemptId", "triggerCause", "terminalState", "terminatedReason",
                  "startTimestampInMillis", "endTimestampInMillis"):
            assert mine[k] == flinks[k], (k, mine, flinks)
    assert listed[1]["vertices"] == {VERTEX: {"jobVertexName": "Source: fake", "desiredParallelism": 2,
                                              "sufficientParallelism": 1, "preRescaleParallelism": 1,
                                              "postRescaleParallelism": 2}}
    # the one in progress has no details yet, and none were asked for it
    assert listed[0]["terminalState"] is None and not listed[0]["detailsKnown"] and listed[0]["vertices"] == {}
    history = f"/jobs/{job_id}/rescales/history"
    rounds = len(asked(server, history))
    wait_for(lambda: len(asked(server, history)) >= rounds + 3, 30, "3 more rounds of the history", interval=0.1)
    assert not asked(server, f"/rescales/details/{R2}")
    # it finishes: its details are asked then; the others' details were asked once, however often the history was
    server.rescales[0] = rescale(R2, NOW - 2000, NOW - 500)
    server.rescale_details[R2] = rescale_details(server.rescales[0], {VERTEX: ("Source: fake", 2, 3)})
    h = wait_for(lambda: (h := shown(sup)) and h["rescales"][0]["detailsKnown"] and h, 20, "the finished rescale",
                 interval=0.1)
    assert h["rescales"][0]["vertices"][VERTEX]["postRescaleParallelism"] == 3
    rounds = len(asked(server, history))
    wait_for(lambda: len(asked(server, history)) >= rounds + 3, 30, "3 more rounds of the history", interval=0.1)
    for uuid in (R0, R1, R2):
        assert len(asked(server, f"/rescales/details/{uuid}")) == 1, asked(server, "/rescales/details/")
    assert sup.stop() == 0


def test_flink_2_2_is_never_asked(server, supervisors):
    """Below 2.3 nothing changes: the endpoints are not asked (even with the key set: Flink 2.2 does not know it),
    and GET /autoscaler has no flinkRescaleHistory."""
    serve_history(server)
    sup = supervisors(server, conf={**ADAPTIVE, "web.adaptive-scheduler.rescale-history.size": "10"},
                      flink_version="2.2.1").start()
    stable_id = stable(sup)["jobStatus"]["jobId"]
    time.sleep(3)  # 30 poll intervals: six times the history's period on 2.3
    assert "flinkRescaleHistory" not in autoscaler(sup)
    assert sup.stop() == 0
    assert not asked(server, "/rescales"), asked(server, "/rescales")
    assert job_polls(server, stable_id) > 10  # the job was followed all along


def test_off_is_not_asked(server, supervisors):
    """On 2.3 with the history set to 0 (or without the adaptive scheduler) Flink keeps none: nothing is asked, and
    GET /autoscaler says it is off (kept 0)."""
    serve_history(server)
    sup = supervisors(server, conf={**ADAPTIVE, "web.adaptive-scheduler.rescale-history.size": "0"},
                      flink_version="2.3.0").start()
    stable(sup)
    time.sleep(3)
    h = shown(sup)
    assert h == {"kept": 0, "updated": None, "error": None, "more": False, "rescales": []}, h
    assert sup.stop() == 0
    assert not asked(server, "/rescales")


GARBAGE = ["http-500", "http-503-html", "truncated-json", "malformed-json", "nan-literal",
           "nan-strings-and-huge-numbers", "missing-fields", "wrong-types", "empty-body", "json-array",
           "deeply-nested", "huge-body-over-limit", "huge-body-under-limit", "close-without-answer", "timeout",
           "not-flinks-entries", "flink-off-404"]
NOT_THE_ONE = "rescaleUuid is not the rescale asked for"
# what flinklet says of each (a substring of its one log line, case-insensitive), by endpoint where they differ
SAYS = {"http-500": "answered 500", "http-503-html": "answered 503", "truncated-json": "not JSON",
        "malformed-json": "not JSON", "nan-literal": "not JSON",
        "nan-strings-and-huge-numbers": {"history": "not a JSON array", "details": NOT_THE_ONE},
        "missing-fields": {"history": "not a JSON array", "details": NOT_THE_ONE},
        "wrong-types": {"history": "not a JSON array", "details": NOT_THE_ONE},
        "empty-body": "an empty answer",
        "json-array": {"history": "entry 1 is not an object", "details": "not a JSON object"},
        "deeply-nested": "not JSON", "huge-body-over-limit": "too large", "huge-body-under-limit": "too large",
        "close-without-answer": ("empty reply", "returned nothing"), "timeout": "timed out",
        "not-flinks-entries": {"history": "entry 1: rescaleUuid is not 32 hexadecimal digits",
                               "details": "not a JSON object"},
        "flink-off-404": "answered 404: org.apache.flink.runtime.rest.handler.job.rescales.RescalesUnavailableException"}


def bad_answer(fault, job_id):
    if fault == "not-flinks-entries":
        return 200, json.dumps([{"rescaleUuid": "<img src=x onerror=alert(1)>", "terminalState": "COMPLETED"}]).encode()
    if fault == "flink-off-404":
        return 404, json.dumps({"errors": [RESCALES_OFF % job_id]}).encode()
    return FAULTS[fault]


def job_polls(server, job_id):
    """The supervisor's polls of the job (its details and checkpoints), not the rescale endpoints."""
    with server.lock:
        return len([p for _, m, p in server.requests
                    if p == f"/jobs/{job_id}" or p.startswith(f"/jobs/{job_id}/checkpoints")])


@pytest.mark.parametrize("fault", GARBAGE)
@pytest.mark.parametrize("where", ["history", "details"])
def test_garbage_from_the_rescale_endpoints_is_said_once_and_not_taken(server, supervisors, fault, where):
    serve_history(server)
    sup = supervisors(server, conf=ADAPTIVE, flink_version="2.3.0").start()
    job_id = stable(sup)["jobStatus"]["jobId"]
    pid = sup.jvm_pid()
    before = wait_listed(sup)["rescales"]
    # the rescale in progress finishes in Flink; from now on the answers about it (or the whole history) are garbage
    server.rescales[0] = rescale(R2, NOW - 2000, NOW - 500)
    server.rescale_details[R2] = rescale_details(server.rescales[0], {VERTEX: ("Source: fake", 2, 3)})
    history_path = f"/jobs/{job_id}/rescales/history"
    path = history_path if where == "history" else f"/jobs/{job_id}/rescales/details/{R2}"
    server.fault = lambda method, p: bad_answer(fault, job_id) if p == path else None
    polls, rounds = job_polls(server, job_id), len(asked(server, history_path))
    wait_for(lambda: (h := shown(sup)) and h["error"], 30, "the problem shown in GET /autoscaler", interval=0.1)
    # the history is asked every 5 poll intervals: the garbage comes again and again (libcurl sends a request
    # again, once, when a kept-alive connection was closed without an answer: two requests a round then)
    per_round = 2 if fault == "close-without-answer" and where == "history" else 1
    wait_for(lambda: len(asked(server, history_path)) >= rounds + 5 * per_round, 60, "5 more rounds of the history",
             interval=0.1)
    h = shown(sup)
    assert h["error"] and path in h["error"], h["error"]
    if where == "history":
        assert h["rescales"] == before, "the list stays as Flink last gave it"
    else:
        # the history is taken: that rescale is shown finished, without its vertices; asked for them again in
        # rounds 1 and 4 after the first failure (backed off), not in every round
        r2 = [r for r in h["rescales"] if r["rescaleUuid"] == R2][0]
        assert r2["terminalState"] == "COMPLETED" and not r2["detailsKnown"] and r2["vertices"] == {}
        # (libcurl sends a request again, once, when a kept-alive connection was closed without an answer)
        tries = len(asked(server, path)) // (2 if fault == "close-without-answer" else 1)
        assert 2 <= tries <= 4, asked(server, path)
        assert all(r["detailsKnown"] for r in h["rescales"] if r["rescaleUuid"] != R2)
    # said once, however often it came
    says = SAYS[fault][where] if isinstance(SAYS[fault], dict) else SAYS[fault]
    lines = [line for line in sup.logs().splitlines() if SAID in line]
    assert len(lines) == 1, lines
    assert any(w.lower() in lines[0].lower() for w in ((says,) if isinstance(says, str) else says)), lines
    assert "<img" not in json.dumps(h)
    # the job was followed all along, in the same JVM, and nothing else happened to it
    st = sup.status()
    assert st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] == pid and st["jvm"]["restarts"] == 0
    assert job_polls(server, job_id) - polls >= 20
    assert [e["type"] for e in sup.events()].count("JvmStarted") == 1
    assert "JobUnhealthy" not in [e["type"] for e in sup.events()]
    # the garbage stops: Flink's answers are taken again (the details after the back-off)
    server.fault = None
    h = wait_for(lambda: (h := shown(sup)) and h["error"] is None and h["rescales"][0]["detailsKnown"] and h, 60,
                 "Flink's answers taken again", interval=0.1)
    assert h["rescales"][0]["vertices"][VERTEX]["postRescaleParallelism"] == 3
    assert sup.stop() == 0


def test_a_slow_answer_is_waited_for_without_holding_the_job_back(server, supervisors):
    """An answer that takes nearly half the client timeout (1 s here) is taken; the job's polls go on meanwhile."""
    serve_history(server)
    sup = supervisors(server, conf=ADAPTIVE, flink_version="2.3.0").start()
    job_id = stable(sup)["jobStatus"]["jobId"]
    slow = []

    def fault(method, p):
        if "/rescales/" in p:
            slow.append(time.monotonic())
            time.sleep(0.4)
        return None
    server.fault = fault
    polls = job_polls(server, job_id)
    h = wait_listed(sup)
    assert h["error"] is None and slow
    wait_for(lambda: len(slow) >= 5, 30, "5 slow answers", interval=0.1)
    assert job_polls(server, job_id) - polls >= 10  # 5 poll intervals between two asks, each a poll of the job
    assert sup.stop() == 0


HOSTILE = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"


def test_the_status_page_shows_flinks_rescales(server, supervisors, tmp_path):
    """In headless Chromium: one row per rescale, newest first, with its trigger, outcome, duration and the
    vertices whose parallelism changed; a vertex name from Flink is text, never markup; no CSP violation."""
    assert CHROMIUM, "no chromium: install it (apt-get install chromium; scripts/deps.sh does)"
    serve_history(server)
    other = "0123456789abcdef0123456789abcdef"
    server.rescale_details[R1] = rescale_details(HISTORY[1], {VERTEX: ("Source: fake", 1, 2), other: (HOSTILE, 1, 4)})
    sup = supervisors(server, conf=ADAPTIVE, flink_version="2.3.0").start()
    stable(sup)
    wait_listed(sup)
    out, err = chromium(f"http://{sup.conf['flinklet.http.address']}/", tmp_path / "chromium-profile", "--dump-dom")
    assert not csp_violations(err), csp_violations(err)
    dom = Dom(out)
    body = dom.all("body")[0]
    assert body.attrs.get("data-loaded") == "1" and "data-pwned" not in body.attrs
    assert "hidden" not in dom.by_id("flink-rescales-box").attrs
    rows = [r for r in dom.by_id("flink-rescales").walk() if r.tag == "tr" and r.parent.tag == "tbody"]
    assert [r.attrs.get("data-uuid") for r in rows] == [R2, R1, R0]
    cells = [[c.text() for c in r.children if getattr(c, "tag", None) == "td"] for r in rows]
    assert cells[0][1:] == ["UPDATE_REQUIREMENT", "in progress", "", ""], cells[0]
    assert cells[1][1:4] == ["UPDATE_REQUIREMENT", "COMPLETED (SUCCEEDED)", "1.2 s"], cells[1]
    assert "Source: fake: 1 -> 2" in cells[1][4] and f"{HOSTILE}: 1 -> 4" in cells[1][4], cells[1]
    assert cells[2][1:] == ["INITIAL_SCHEDULE", "COMPLETED (SUCCEEDED)", "0.5 s", "no change"], cells[2]
    assert not dom.all("img"), "the vertex name stayed text"
    assert "as Flink keeps it (its newest 10)" in dom.by_id("flink-rescales-note").text()
    assert dom.by_id("flink-rescales-error").text() == ""
    assert sup.stop() == 0

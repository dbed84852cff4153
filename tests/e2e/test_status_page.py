"""The status page at / in a real headless browser (Chromium from Debian's packages) against the real flinklet and
the real MiniCluster: a job stopped with a savepoint and started again from it, with the autoscaler evaluating
(recommendations only, so the job keeps its parallelism). What an operator looking at the page relies on: it
shows the job's name, lifecycle STABLE, the restore point and the last checkpoint that status.json holds, the
recent events, the autoscaler's charts and the job's throughput and checkpoint charts (Flink's own metrics) with data
points; the page runs under its own strict
Content-Security-Policy (Chromium reports no violation, and the script did run: the data is there); a hostile
string that reached the events (an <img onerror> in a request path) is shown as text and never becomes markup.
FLINKLET_STATUS_SCREENSHOT=path keeps the screenshot (docs/images/status-page.png is one)."""
import json
import os
import shutil
import signal
import urllib.parse
import urllib.request

import pytest

from conftest import wait_for
from testkit import CHROMIUM, RECOMMENDING_AUTOSCALER as AUTOSCALER, Dom, chromium, csp_violations, norm

# would mark the page if it ever ran as markup
HOSTILE = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"


def rated_points(doc):
    """Timeline entries in which a vertex has a true processing rate and a target rate."""
    return [p for p in doc.get("timeline", []) for v in p["vertices"].values()
            if isinstance(v.get("trueProcessingRate"), (int, float)) and isinstance(v.get("targetDataRate"), (int, float))]


def test_status_page_in_a_real_browser(tmp_path, flinklets):
    assert CHROMIUM, "no chromium: install it (apt-get install chromium; scripts/deps.sh does)"
    f = flinklets(conf=AUTOSCALER).start()
    f.wait_stable()
    f.wait_checkpoint(2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    savepoint = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]

    # again, from that savepoint
    f.start()
    st = f.wait_stable()
    # the same directory (written file:/... or file:///...)
    assert st["restoredFrom"]["kind"] == "savepoint" and norm(st["restoredFrom"]["location"]) == norm(savepoint), \
        (st["restoredFrom"], savepoint)
    f.wait_checkpoint((st["restoredFrom"]["id"] or 0) + 1)

    # a hostile string into the events: a request path, recorded by the ApiRequest event before it goes to Flink
    code, _ = f.http("/flink/" + urllib.parse.quote(HOSTILE, safe=""), method="POST", token=f.token(), body=b"{}")
    assert code != 401 and code != 403, code
    code, body = f.http("/events")
    assert code == 200
    api = [e for e in json.loads(body)["events"] if e["type"] == "ApiRequest"]
    assert api and HOSTILE in api[-1]["message"], api

    def evaluated():
        d = json.loads(f.http("/autoscaler")[1])
        return d if len(rated_points(d)) >= 2 else None
    doc = wait_for(evaluated, 180, "two autoscaler evaluations with rates in GET /autoscaler")
    assert doc["enabled"] and not doc["scalingEnabled"] and doc["vertices"], doc
    # a whole metric window evaluated: memory tuning's verdict (no budget here) is in
    wait_for(lambda: f.status()["autoscaler"]["memoryTuning"]["reason"], 180, "memory tuning's verdict")

    # the page itself: self-contained HTML under a strict policy
    with urllib.request.urlopen(f"http://127.0.0.1:{f.http_port}/", timeout=10) as r:
        page = r.read().decode()
        headers = r.headers
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["X-Content-Type-Options"] == "nosniff"
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp and "style-src 'sha256-" in csp, csp
    assert "unsafe" not in csp, csp
    assert "<script src" not in page and "<link" not in page and "https://" not in page
    # Flink's own metrics, as the page's job charts read them: two vertices with records, and checkpoints
    def scraped():
        d = json.loads(f.http("/jobmetrics")[1])
        tl = d["timeline"]
        return d if (len([p for p in tl if any(v.get("recordsOutPerSecond", 0) > 0 for v in p["vertices"].values())]) >= 2
                     and len([p for p in tl if p.get("lastCheckpointSize", 0) > 0]) >= 2) else None
    jm = wait_for(scraped, 60, "two scrapes of Flink's metrics with records and a checkpoint in GET /jobmetrics")
    assert jm["enabled"] and jm["up"], jm
    for path in ("/events", "/autoscaler", "/status", "/jobmetrics"):
        with urllib.request.urlopen(f"http://127.0.0.1:{f.http_port}{path}", timeout=10) as r:
            assert r.headers["Content-Type"] == "application/json" and r.headers["X-Content-Type-Options"] == "nosniff"

    before = f.status()
    url = f"http://127.0.0.1:{f.http_port}/"
    out, err = chromium(url, tmp_path / "chromium-profile", "--dump-dom")
    after = f.status()
    assert not csp_violations(err), csp_violations(err)
    dom = Dom(out)

    assert dom.by_id("job-name").text() == "e2e-counter"
    body = dom.all("body")[0]
    assert body.attrs.get("data-loaded") == "1", "the page's script ran and loaded the JSON"
    assert "data-pwned" not in body.attrs
    assert dom.by_id("lifecycle").text() == "STABLE"
    assert dom.by_id("job-state").text() == "RUNNING"
    assert dom.by_id("job-id").text() == st["jobStatus"]["jobId"]
    assert dom.by_id("restored-kind").text() == "savepoint"
    assert dom.by_id("restored-location").text() == after["restoredFrom"]["location"]
    ck = dom.by_id("last-checkpoint-id").text()
    lo = before["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    hi = after["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    assert ck.startswith("#") and lo <= int(ck[1:]) <= hi, (ck, lo, hi)
    sp_rows = dom.by_id("savepoints").walk()
    assert any(c.tag == "td" and c.text().startswith("file:") and norm(c.text()) == norm(savepoint)
               for c in sp_rows), "the savepoint in the history"

    # recent events, the hostile one as text: no element came out of it
    rows = [r for r in dom.by_id("events").walk() if r.tag == "tr" and r.parent.tag == "tbody"]
    types = {c.text() for r in rows for c in r.walk() if c.tag == "td" and "type" in c.attrs.get("class", "").split()}
    assert {"SupervisorStarted", "Restoring", "JobRunning", "SavepointCompleted", "ApiRequest"} <= types, types
    hostile_cells = [c for c in dom.all("td", "msg") if HOSTILE in c.text()]
    assert hostile_cells, "the hostile message is shown"
    assert all(not [n for n in c.walk() if n is not c] for c in hostile_cells), "as text only"
    assert not dom.all("img"), "no <img> anywhere in the page"

    # the autoscaler's charts, with data points
    par = dom.by_id("chart-parallelism")
    assert int(par.attrs["data-points"]) > 0 and [n for n in par.walk() if n.tag == "circle"]
    assert [n for n in par.walk() if n.tag == "polyline"]
    rate_charts = dom.all("svg", "rate-chart")
    assert {c.attrs["data-vertex"] for c in rate_charts} == {v["id"] for v in doc["vertices"]}
    with_data = [c for c in rate_charts if int(c.attrs["data-points"]) > 0]
    assert with_data, "a vertex's true processing rate and target rate are drawn"
    assert all([n for n in c.walk() if n.tag == "circle"] for c in with_data)
    legend = dom.by_id("legend-parallelism").text()
    assert all(v["name"] in legend for v in doc["vertices"]), legend
    assert dom.by_id("autoscaler-state").text() == "RECOMMENDING"
    # memory tuning evaluated with the autoscaler: no budget here, and the page says why
    assert dom.by_id("memory-tuning").text() == ("no tuning: spec.resources.memory is not set: there is no budget to "
                                                 "tune inside"), dom.by_id("memory-tuning").text()

    # the job's charts from Flink's own metrics, with data points, a line per vertex
    for chart in ("chart-records-in", "chart-records-out", "chart-checkpoint-duration", "chart-checkpoint-size"):
        svg = dom.by_id(chart)
        assert int(svg.attrs["data-points"]) > 0 and [n for n in svg.walk() if n.tag == "circle"], chart
        assert [n for n in svg.walk() if n.tag == "polyline"], chart
    vertices = {n for p in jm["timeline"] for n in p["vertices"]}
    legend = dom.by_id("legend-records-out").text()
    assert len(vertices) == 2 and all(n.replace("_", " ") in legend for n in vertices), (vertices, legend)
    assert "from Flink's own metrics" in dom.by_id("job-metrics-note").text()

    # and what it looks like
    shot = tmp_path / "status-page.png"
    _, err = chromium(url, tmp_path / "chromium-profile", f"--screenshot={shot}")
    assert not csp_violations(err), csp_violations(err)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000, len(data)
    keep = os.environ.get("FLINKLET_STATUS_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)

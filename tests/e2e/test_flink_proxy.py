"""Flink's web UI and REST API through flinklet's own endpoint (/flink/, issue 14 item 2), against the real
MiniCluster: what a browser and a REST client read there is Flink's answer; nothing but GET and HEAD (of the
routes that only read: test_flink_readonly.py) passes without the bearer token, and such attempts change nothing in
the job; Flink down or hung is an answer (502/503/504), never a stalled endpoint; a slow client of a large file
holds nothing else up."""
import http.client
import json
import os
import re
import signal
import socket
import threading
import time
import urllib.request

from conftest import wait_for


def request(port, method, path, token=None, body=None, headers=None, timeout=10):
    """(status, headers as a dict with lower-case names, body bytes) of one request."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def flink_raw(f, path):
    """Flink's own answer, from its REST port (reachable here: the test runs on the same host)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{f.port}{path}", timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read()


def the_job(f):
    jobs = f.rest("/jobs/overview")["jobs"]
    assert len(jobs) == 1, jobs
    return jobs[0]


def savepoint_dirs(f):
    d = os.path.join(f.state, "savepoints")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_rest_and_web_ui_through_flinklet(flinklets):
    f = flinklets().start()
    f.wait_stable()
    job = the_job(f)

    # REST: Flink's answer, for the same job in the same state
    code, hdrs, body = request(f.http_port, "GET", "/flink/jobs/overview")
    assert code == 200 and hdrs["content-type"].startswith("application/json")
    through = json.loads(body)["jobs"]
    assert [(j["jid"], j["state"]) for j in through] == [(job["jid"], "RUNNING")]
    assert json.loads(request(f.http_port, "GET", f"/flink/jobs/{job['jid']}")[2])["jid"] == job["jid"]
    # the query string goes on unchanged: the metrics asked for by name, and only those
    names = wait_for(lambda: sorted(m["id"] for m in f.rest(f"/jobs/{job['jid']}/metrics")), 60,
                     "Flink's list of the job's metrics (its metric fetcher runs every 10 s)")
    code, _, body = request(f.http_port, "GET", f"/flink/jobs/{job['jid']}/metrics?get={names[0]},{names[-1]}")
    assert code == 200 and sorted(m["id"] for m in json.loads(body)) == [names[0], names[-1]]
    # Flink's errors are Flink's (status and body)
    code, _, body = request(f.http_port, "GET", "/flink/jobs/00000000000000000000000000000000")
    assert code == 404 and "errors" in json.loads(body)
    # no other origin may read the answers, whatever Flink's CORS setting says
    _, hdrs, _ = request(f.http_port, "GET", "/flink/config", headers={"Origin": "http://evil.example"})
    assert not any(k.startswith("access-control-") for k in hdrs), hdrs

    # the UI: /flink redirects to /flink/ (its relative URLs need the slash), which is Flink's index.html
    code, hdrs, _ = request(f.http_port, "GET", "/flink")
    assert code == 301 and hdrs["location"] == "/flink/"
    code, hdrs, index = request(f.http_port, "GET", "/flink/")
    assert code == 200 and hdrs["content-type"].startswith("text/html")
    assert b"<flink-root>" in index and b'<base href="./">' in index
    assert index == flink_raw(f, "/")[2]
    # and its scripts, byte for byte as Flink serves them
    scripts = re.findall(rb'<script src="([^"]+\.js)"', index)
    assert scripts, index
    main = next(s for s in scripts if s.startswith(b"main")).decode()
    code, hdrs, js = request(f.http_port, "GET", f"/flink/{main}")
    assert code == 200 and "javascript" in hdrs["content-type"]
    assert js == flink_raw(f, f"/{main}")[2] and len(js) > 100_000
    # HEAD: the headers of GET (the true length), no body
    code, hdrs, body = request(f.http_port, "HEAD", f"/flink/{main}")
    assert code == 200 and int(hdrs["content-length"]) == len(js) and body == b""

    # outside the prefix: not Flink's
    assert request(f.http_port, "GET", "/flinkx/jobs")[0] == 404
    assert request(f.http_port, "GET", "/%66link/jobs/overview")[0] == 404
    assert request(f.http_port, "GET", "/jobs/overview")[0] == 404
    assert f.http("/healthz")[0] == 200


def test_changes_through_flink_need_the_token_and_change_nothing_without_it(tmp_path, flinklets):
    f = flinklets().start()
    f.wait_stable()
    job = the_job(f)
    jid = job["jid"]
    target = tmp_path / "elsewhere"
    target.mkdir()
    before = savepoint_dirs(f)
    attempts = [
        ("PATCH", f"/flink/jobs/{jid}?mode=cancel", None),
        ("PATCH", f"/flink/jobs/{jid}", None),
        ("POST", f"/flink/jobs/{jid}/stop", {"targetDirectory": str(target), "drain": False}),
        ("POST", f"/flink/jobs/{jid}/savepoints", {"target-directory": str(target), "cancel-job": True}),
        ("POST", f"/flink/jobs/{jid}/checkpoints", {}),
        ("PUT", f"/flink/jobs/{jid}/resource-requirements",
         {v: {"parallelism": {"lowerBound": 1, "upperBound": 1}} for v in
          [x["id"] for x in f.rest(f"/jobs/{jid}")["vertices"]]}),
        ("POST", "/flink/jars/upload", b"--x\r\n"),
        ("DELETE", f"/flink/jobs/{jid}", None),
        ("OPTIONS", "/flink/jobs", None),
    ]
    for method, path, body in attempts:
        code, hdrs, text = request(f.http_port, method, path, body=body)
        assert code == 401, (method, path, code, text)
        assert hdrs.get("www-authenticate", "").startswith("Bearer"), hdrs
        for wrong in ("wrong-token-of-some-length", f.token() + "x", f.token()[:-1]):
            code, _, text = request(f.http_port, method, path, token=wrong, body=body)
            assert code == 403, (method, path, wrong, code, text)
        # another scheme is no token either
        code, _, _ = request(f.http_port, method, path, body=body, headers={"Authorization": f"Basic {f.token()}"})
        assert code == 403

    time.sleep(3)  # what reached Flink would show by now (a stop or cancel takes well under a second here)
    after = the_job(f)
    assert (after["jid"], after["state"]) == (jid, "RUNNING")
    assert after["tasks"]["running"] == job["tasks"]["total"]
    assert savepoint_dirs(f) == before and os.listdir(target) == []
    st = f.status()
    assert st["jobStatus"]["jobId"] == jid and st["jobStatus"]["state"] == "RUNNING"
    assert st["jobStatus"]["savepointInfo"]["savepointHistory"] == []
    assert st["lifecycleState"] == "STABLE" and st["jvm"]["restarts"] == 0
    code, text = f.http("/metrics")
    refused = 5 * len(attempts)
    assert f"flinklet_api_unauthorized_total {refused}" in text

    # with the token the request does reach Flink: its answer (here: no such job) comes back
    code, _, body = request(f.http_port, "PATCH", "/flink/jobs/0123456789abcdef0123456789abcdef?mode=cancel",
                            token=f.token())
    assert code == 404 and "errors" in json.loads(body), body
    # a body goes on too: Flink takes the trigger (for no job: it fails, as Flink reports through the proxy)
    nojob = "/flink/jobs/0123456789abcdef0123456789abcdef/savepoints"
    code, _, body = request(f.http_port, "POST", nojob, token=f.token(),
                            body={"target-directory": str(target), "cancel-job": False})
    assert code == 202, body
    rid = json.loads(body)["request-id"]

    def failed():
        code, _, body = request(f.http_port, "GET", f"{nojob}/{rid}")
        doc = json.loads(body)
        return code == 200 and doc["status"]["id"] == "COMPLETED" and doc["operation"].get("failure-cause")

    wait_for(failed, 30, "Flink's answer to the savepoint trigger for no job")
    code, _, body = request(f.http_port, "POST", nojob, token=f.token(), body={"cancel-job": "maybe"})
    assert code == 400 and "errors" in json.loads(body), body
    assert [e for e in f.events() if e["type"] == "ApiRequest" and "/flink/jobs/0123456789abcdef" in e["message"]]
    assert (the_job(f)["jid"], the_job(f)["state"]) == (jid, "RUNNING") and os.listdir(target) == []


def test_flink_down_is_an_answer_and_flinklet_stays_healthy(flinklets):
    f = flinklets(conf={"flinklet.restart.backoff.initial": "2 s"}).start()
    st = f.wait_stable()
    jid = st["jobStatus"]["jobId"]
    pid = st["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    seen, health = set(), set()

    def restarted():
        code, _, body = request(f.http_port, "GET", "/flink/jobs/overview", timeout=40)
        seen.add(code)
        health.add(f.http("/healthz")[0])
        if code != 200:
            assert code in (502, 503), (code, body)
            # flinklet's own answer ("error"), or Flink's while it elects its leader (503, "errors")
            answer = json.loads(body)
            assert "error" in answer or "errors" in answer, answer
            return None
        jobs = json.loads(body)["jobs"]
        return jobs if jobs and jobs[0]["state"] == "RUNNING" else None

    jobs = wait_for(restarted, 120, "the job RUNNING again through /flink/", interval=0.2)
    assert seen & {502, 503}, seen  # while the JVM was gone or starting
    assert health == {200}, health
    assert jobs[0]["jid"] == jid
    wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE", 60,
             "STABLE again")


def test_slow_client_and_hung_flink_hold_nothing_else_up(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    # the UI's largest file (a few MB): what a slow client downloads while others use the endpoint
    _, _, index = request(f.http_port, "GET", "/flink/")
    big = "/assets/vs/language/typescript/tsWorker.js"
    expected = flink_raw(f, big)[2]
    assert len(expected) > 2_000_000

    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.settimeout(20)
    slow.connect(("127.0.0.1", f.http_port))
    slow.sendall(f"GET /flink{big} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    got = slow.recv(4096)
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    try:
        # while its answer is in flight: the probes, Flink's REST answers and another download of the same file
        for _ in range(3):
            assert f.http("/healthz", timeout=5)[0] == 200
            code, _, body = request(f.http_port, "GET", "/flink/jobs/overview", timeout=10)
            assert code == 200 and json.loads(body)["jobs"][0]["state"] == "RUNNING"
            got += slow.recv(4096)
            time.sleep(1)
        code, _, other = request(f.http_port, "GET", f"/flink{big}", timeout=30)
        assert code == 200 and other == expected
        # the slow client gets all of it in the end
        while True:
            chunk = slow.recv(65536)
            if not chunk:
                break
            got += chunk
    finally:
        slow.close()
    head, _, body = got.partition(b"\r\n\r\n")
    assert body == expected

    # Flink hung (SIGSTOP): a request to it waits; the endpoint does not
    pid = st["jvm"]["pid"]
    result = {}

    def proxied():
        result["answer"] = request(f.http_port, "GET", "/flink/jobs/overview", timeout=60)

    os.kill(pid, signal.SIGSTOP)
    t = threading.Thread(target=proxied)
    try:
        t.start()
        time.sleep(1)
        assert t.is_alive(), "the request to a stopped JVM cannot have been answered by it"
        assert f.http("/healthz", timeout=5)[0] == 200
        assert f.http("/status", timeout=5)[0] == 200
    finally:
        os.kill(pid, signal.SIGCONT)
    t.join(60)
    assert not t.is_alive()
    code, _, body = result["answer"]
    # answered once Flink runs again (or, had that taken over 30 s, a gateway timeout)
    assert code in (200, 504), (code, body)
    assert f.http("/healthz")[0] == 200

"""Only reads are open under /flink/ (issue 36 item 1), on the real MiniCluster of each Flink version
(`make e2e-matrix` runs this file on 1.20.5 and 2.3.0, `make check` on 2.2.1 too): Flink registers
/jobs/:jobid/yarn-cancel and yarn-stop as GET, so a GET or HEAD of them (or of a jar's plan, a flame graph) without
flinklet's token gets 401 in every spelling a hostile client may try (an encoded, doubled, dotted, versioned, cased
path, a trailing slash, a query) and the job runs on in the same JVM, checkpointing; what shows the JVM's options,
its environment, the configuration, the job's user configuration and the logs needs the token too (401 without,
403 with a wrong one, 200 with it); what the web UI shows of the job (overview, details, checkpoints, exceptions,
metrics, the UI's files) stays open. tests/unit/test_restroutes.c checks the same table without a JVM, and
tests/restroutes that it is all of Flink's routes."""
import http.client
import json
import re
import socket
import time

from conftest import flink_minor, wait_for

SECRET = "hunter2-e2e-secret"


def flink_version():
    return flink_minor()


def request(port, method, path, token=None, timeout=10):
    """(status, headers as a dict with lower-case names, body bytes) of one request, its target sent as given."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, headers={"Authorization": f"Bearer {token}"} if token is not None else {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def start(flinklets):
    # a secret in the JVM's options: what Flink's environment route shows (and its logs)
    f = flinklets(conf={"flinklet.jvm.options": f"-Dflinklet.e2e.password={SECRET}"}).start()
    st = f.wait_stable()
    return f, st["jobStatus"]["jobId"], st["jvm"]["pid"]


def raw(port, data, timeout=10):
    """The status code of Flink's endpoint's answer to bytes sent as they are (no client's normalization)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    return int(buf.split(b" ", 2)[1]) if buf.startswith(b"HTTP/") else None


def assert_runs_on(f, jid, pid, last_checkpoint):
    """The same job RUNNING in the same JVM, and checkpoints beyond last_checkpoint."""
    time.sleep(2)  # a cancel or stop that reached Flink shows well within this
    st = f.wait_checkpoint(last_checkpoint + 2, timeout=60)
    assert st["jvm"]["pid"] == pid and st["jvm"]["restarts"] == 0
    assert st["jobStatus"]["jobId"] == jid and st["jobStatus"]["state"] == "RUNNING"
    jobs = json.loads(request(f.http_port, "GET", "/flink/jobs/overview")[2])["jobs"]
    assert [(j["jid"], j["state"]) for j in jobs] == [(jid, "RUNNING")]


def test_gets_that_act_are_refused_in_every_spelling_and_the_job_runs_on(flinklets):
    f, jid, pid = start(flinklets)
    vid = json.loads(request(f.http_port, "GET", f"/flink/jobs/{jid}")[2])["vertices"][0]["id"]
    last = f.wait_checkpoint(1)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    acting = [f"/jobs/{jid}/yarn-cancel", f"/jobs/{jid}/yarn-stop", "/jars/x.jar/plan",
              f"/jobs/{jid}/vertices/{vid}/flamegraph"]
    spellings = []
    for a in acting:
        spellings += [a, a + "/", a + "?mode=cancel", "/v1" + a, "/" + a, "//" + a + "//"]
    spellings += [
        f"/jobs/{jid}/%79arn-cancel",           # Flink decodes the path ...
        f"/jobs/{jid}/%2579arn-cancel",         # ... twice
        f"/jobs/{jid}%2Fyarn-cancel",
        f"/jobs/{jid}/yarn-cancel%3F.js",       # a decoded '?' ends Flink's path: a UI file's name before it
        f"/jobs/{jid}/%59ARN-cancel",
        f"/jobs/{jid}/x/../yarn-cancel",        # libcurl removes dot segments before sending
        f"/jobs/{jid}/./yarn-stop",
        f"/jobs/overview/../{jid}/yarn-cancel",
        f"/jobs/{jid}/yarn-cancel;.js",
        f"/jobs/{jid}/YARN-CANCEL",
        f"/JOBS/{jid}/yarn-cancel",
        f"/jobs/{jid}\\yarn-cancel",
    ]
    for path in spellings:
        for method in ("GET", "HEAD"):
            code, hdrs, body = request(f.http_port, method, "/flink" + path)
            assert code == 401, (method, path, code, body)
            assert hdrs.get("www-authenticate", "").startswith("Bearer"), hdrs
            if method == "GET":
                assert "Authorization" in json.loads(body)["error"], body
        code, _, _ = request(f.http_port, "GET", "/flink" + path, token="wrong-token-of-some-length")
        assert code == 403, path
    # a method spelled otherwise is no GET; a target outside /flink/ as sent is not forwarded
    assert raw(f.http_port, f"get /flink/jobs/{jid}/yarn-cancel HTTP/1.1\r\nHost: x\r\n\r\n".encode()) in (
        400, 401, 405, 501)
    assert raw(f.http_port, f"GET /%66link/jobs/{jid}/yarn-cancel HTTP/1.1\r\nHost: x\r\n\r\n".encode()) == 404
    assert raw(f.http_port, f"GET http://127.0.0.1:{f.http_port}/flink/jobs/{jid}/yarn-cancel HTTP/1.1\r\n"
               f"Host: x\r\n\r\n".encode()) in (400, 401, 404)
    assert raw(f.http_port, f"GET /flink/jobs/{jid}/yarn-cancel#x HTTP/1.1\r\nHost: x\r\n\r\n".encode()) in (
        400, 401)
    assert_runs_on(f, jid, pid, last)
    _, text = f.http("/metrics")
    assert re.search(r"^flinklet_api_unauthorized_total (\d+)$", text, re.M)
    assert int(re.search(r"^flinklet_api_unauthorized_total (\d+)$", text, re.M).group(1)) >= 3 * len(spellings)
    assert not [e for e in f.events() if e["type"] == "ApiRequest"]


def test_yarn_cancel_with_the_token_reaches_flink(flinklets):
    """The token still passes everything through: the refusal above is flinklet's, not Flink's."""
    f, jid, pid = start(flinklets)
    code, _, body = request(f.http_port, "GET", f"/flink/jobs/{jid}/yarn-cancel", token=f.token())
    assert code == 202, body
    wait_for(lambda: f.status()["jvm"]["pid"] not in (0, pid), 60, "a new JVM after Flink cancelled the job")
    assert [e for e in f.events() if e["type"] == "ApiRequest" and "yarn-cancel" in e["message"]]


def test_secrets_need_the_token_and_what_the_ui_shows_does_not(flinklets):
    f, jid, pid = start(flinklets)
    job = json.loads(request(f.http_port, "GET", f"/flink/jobs/{jid}")[2])
    vid = job["vertices"][0]["id"]
    tm = json.loads(request(f.http_port, "GET", "/flink/taskmanagers")[2])["taskmanagers"][0]["id"]
    f.wait_checkpoint(1)
    ckpt = json.loads(request(f.http_port, "GET", f"/flink/jobs/{jid}/checkpoints")[2])["latest"]["completed"]["id"]

    reads = ["/flink/", "/flink/index.html", "/flink/config", "/flink/overview", "/flink/jobs", "/flink/jobs/overview",
             f"/flink/jobs/{jid}", f"/flink/jobs/{jid}/plan", f"/flink/jobs/{jid}/checkpoints",
             f"/flink/jobs/{jid}/checkpoints/config", f"/flink/jobs/{jid}/checkpoints/details/{ckpt}",
             f"/flink/jobs/{jid}/exceptions?maxExceptions=10", f"/flink/jobs/{jid}/metrics",
             f"/flink/jobs/{jid}/vertices/{vid}", f"/flink/jobs/{jid}/vertices/{vid}/metrics",
             f"/flink/jobs/{jid}/vertices/{vid}/subtasks/metrics", f"/flink/jobs/{jid}/vertices/{vid}/watermarks",
             f"/flink/jobs/{jid}/vertices/{vid}/backpressure", f"/flink/jobs/{jid}/vertices/{vid}/taskmanagers",
             f"/flink/jobs/{jid}/vertices/{vid}/subtasktimes", f"/flink/jobs/{jid}/accumulators",
             "/flink/taskmanagers", f"/flink/taskmanagers/{tm}", f"/flink/taskmanagers/{tm}/metrics",
             "/flink/jobmanager/metrics", f"/flink/v1/jobs/{jid}/checkpoints"]
    for path in reads:
        for method in ("GET", "HEAD"):
            code, _, body = request(f.http_port, method, path)
            assert code == 200, (method, path, code, body)
            assert SECRET.encode() not in body
    # the UI's scripts and styles, as index.html names them
    index = request(f.http_port, "GET", "/flink/")[2]
    files = re.findall(rb'(?:src|href)="([^"]+\.(?:js|css|ico|png))"', index)
    assert files, index
    for name in files:
        assert request(f.http_port, "GET", "/flink/" + name.decode())[0] == 200, name

    secrets = ["/flink/jobmanager/environment", "/flink/jobmanager/config", f"/flink/jobs/{jid}/config",
               "/flink/jobmanager/logs", "/flink/jobmanager/log", "/flink/jobmanager/stdout",
               "/flink/jobmanager/thread-dump", f"/flink/taskmanagers/{tm}/logs", f"/flink/taskmanagers/{tm}/log",
               f"/flink/taskmanagers/{tm}/stdout", f"/flink/taskmanagers/{tm}/thread-dump",
               "/flink/jobmanager/logs/jobmanager.log", f"/flink/taskmanagers/{tm}/logs/taskmanager.log",
               "/flink/v1/jobmanager/environment", "/flink/jobmanager/environment/", "/flink//jobmanager/environment",
               "/flink/jobmanager/%65nvironment", "/flink/jobmanager/environment?.js"]
    if flink_version() >= (2, 0):
        secrets += [f"/flink/jobs/{jid}/jobmanager/environment", f"/flink/jobs/{jid}/jobmanager/config"]
    for path in secrets:
        for method in ("GET", "HEAD"):
            code, _, body = request(f.http_port, method, path)
            assert code == 401, (method, path, code, body)
            assert SECRET.encode() not in body
        assert request(f.http_port, "GET", path, token="wrong-token-of-some-length")[0] == 403, path
    # with the token: Flink's answers, the secret among them
    with_token = ["/flink/jobmanager/environment", "/flink/jobmanager/config", f"/flink/jobs/{jid}/config"]
    if flink_version() >= (2, 0):
        with_token += [f"/flink/jobs/{jid}/jobmanager/environment", f"/flink/jobs/{jid}/jobmanager/config"]
    for path in with_token:
        code, _, body = request(f.http_port, "GET", path, token=f.token())
        assert code == 200, (path, code, body)
    env = request(f.http_port, "GET", "/flink/jobmanager/environment", token=f.token())[2]
    assert SECRET.encode() in env
    assert [e for e in f.events() if e["type"] == "ApiRequest" and "/flink/jobmanager/environment" in e["message"]]
    st = f.status()
    assert st["jvm"]["pid"] == pid and st["jobStatus"]["state"] == "RUNNING"

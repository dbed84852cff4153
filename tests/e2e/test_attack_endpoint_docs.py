"""Attacks on flinklet's endpoint, written from the docs only (docs/operations.md, "Security", "The supervisor's HTTP
endpoint" and "Flink's web UI and REST API: /flink/"), not the code, on one real MiniCluster job shared by every
test of the file: every acting and secret-showing route of Flink's REST API by every method without the token,
the same routes spelled every way a hostile client may try (percent-encoding, double encoding, dot segments, extra
slashes, `;`, `?`, `#`, case, `/v1/`, absolute-form targets, a backslash, NUL, UI-file suffixes, very long paths
and headers), HTTP smuggling (pipelining, Content-Length against Transfer-Encoding, bodies on GET, bare LFs),
secrets planted in the JVM's options and in the Flink configuration never in an answer without the token, the
token's reads and acts, and a copied volume naming the running job's outside checkpoint directory another way.
After each attack the job runs on in the same JVM, RUNNING, its checkpoints advancing."""
import http.client
import json
import os
import socket
import subprocess
import time

import pytest

from conftest import BIN, FLINK_HOME, Flinklet, free_port, wait_for

SECRETS = ("hunter2jvm", "hunter2conf", "hunter2plain")


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One flinklet with the real MiniCluster: secrets in the JVM's options and the Flink configuration, the
    checkpoint directory outside the state directory (spelled file:///...)."""
    tmp = tmp_path_factory.mktemp("attack-endpoint")
    outside = tmp / "outside" / "ckpts"
    outside.mkdir(parents=True)
    f = Flinklet(tmp, name="attack-endpoint", conf={
        "flinklet.jvm.options": "-Dmy.password=hunter2jvm",
        "my.secret.password": "hunter2conf",
        "my.plain.setting": "hunter2plain",
        "execution.checkpointing.dir": f"file://{outside}",
    })
    f.start()
    try:
        st = f.wait_stable(180)
        jid, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
        f.wait_checkpoint(1, timeout=90)
        detail = json.loads(request(f.http_port, "GET", f"/flink/jobs/{jid}")[2])
        tms = json.loads(request(f.http_port, "GET", "/flink/taskmanagers")[2])["taskmanagers"]
        f.ids = {"jid": jid, "pid": pid, "vid": detail["vertices"][0]["id"], "tm": tms[0]["id"],
                 "outside": str(outside), "tmp": tmp}
        yield f
    finally:
        f.stop()


def request(port, method, path, token=None, body=None, headers=None, timeout=15):
    """(status, headers with lower-case names, body bytes): the target is sent as given."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, (b"" if method == "HEAD" else r.read())
    finally:
        c.close()


def raw(port, data, timeout=15):
    """Every answer (status, head text, body bytes) to the bytes sent as they are on one connection, read until
    flinklet closes it or goes quiet."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        s.settimeout(3)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            buf += chunk
    while buf.startswith(b"HTTP/"):
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            out.append((int(buf.split(b" ", 2)[1]), buf.decode("latin-1"), b""))
            break
        head = buf[:end].decode("latin-1")
        length = 0
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
        body = buf[end + 4:end + 4 + length]
        out.append((int(head.split(" ", 2)[1]), head, body))
        buf = buf[end + 4 + length:]
    return out


def no_secret(what, blob):
    text = blob.decode("latin-1") if isinstance(blob, bytes) else str(blob)
    for s in SECRETS:
        assert s not in text, f"{what} shows the secret {s}"


def runs_on(f, since_checkpoint=None):
    """The same job RUNNING in the same JVM, no restart, and checkpoints beyond the newest one now."""
    st = f.own_status()
    last = since_checkpoint or st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    time.sleep(2)  # a cancel or stop that reached Flink shows within this
    st = f.wait_checkpoint(last + 2, timeout=60)
    assert f.proc.poll() is None, f.logs()[-3000:]
    assert st["jvm"]["pid"] == f.ids["pid"] and st["jvm"]["restarts"] == 0, st["jvm"]
    assert st["jobStatus"]["jobId"] == f.ids["jid"] and st["jobStatus"]["state"] == "RUNNING", st["jobStatus"]
    jobs = json.loads(request(f.http_port, "GET", "/flink/jobs/overview")[2])["jobs"]
    assert [(j["jid"], j["state"]) for j in jobs] == [(f.ids["jid"], "RUNNING")], jobs


def api_requests(f):
    return [e for e in f.events() if e["type"] == "ApiRequest"]


def unauthorized_total(f):
    text = request(f.http_port, "GET", "/metrics")[2].decode()
    for line in text.splitlines():
        if line.startswith("flinklet_api_unauthorized_total"):
            return float(line.split()[-1])
    raise AssertionError("no flinklet_api_unauthorized_total in /metrics")


def acting_routes(i):
    """Flink's routes that act, show secrets or are unknown (docs: "Everything else needs the token")."""
    j, v, tm = i["jid"], i["vid"], i["tm"]
    return [
        f"/jobs/{j}/yarn-cancel", f"/jobs/{j}/yarn-stop", f"/jobs/{j}/stop", f"/jobs/{j}/savepoints",
        f"/jobs/{j}/rescaling",
        f"/jobs/{j}/config", f"/jobs/{j}/jobmanager/config", f"/jobs/{j}/jobmanager/environment",
        f"/jobs/{j}/jobmanager/log-url/../environment",
        f"/jobs/{j}/vertices/{v}/flamegraph", f"/jobs/{j}/vertices/{v}/flamegraph?type=FULL",
        "/jars/upload", "/jars/x.jar/run", "/jars/x.jar/plan", "/jars/x.jar",
        "/datasets/0123456789abcdef0123456789abcdef", "/savepoint-disposal", "/cluster",
        "/jobmanager/config", "/jobmanager/environment", "/jobmanager/logs", "/jobmanager/logs/flinklet.log",
        "/jobmanager/logs/x.txt", "/jobmanager/logs/x.json", "/jobmanager/log", "/jobmanager/stdout",
        "/jobmanager/thread-dump", "/jobmanager/profiler", "/jobmanager/profiler/x.html",
        f"/taskmanagers/{tm}/logs", f"/taskmanagers/{tm}/logs/taskmanager.log", f"/taskmanagers/{tm}/logs/x.txt",
        f"/taskmanagers/{tm}/log", f"/taskmanagers/{tm}/stdout", f"/taskmanagers/{tm}/thread-dump",
        f"/taskmanagers/{tm}/profiler", f"/taskmanagers/{tm}/profiler/x.html",
        "/a-route-flink-may-add-later",
    ]


METHODS = ("GET", "HEAD", "POST", "PATCH", "DELETE", "PUT", "OPTIONS")


def test_every_acting_route_by_every_method_needs_the_token(job):
    """Attacks "Everything else needs the token, `GET` and `HEAD` too ... Those routes and every other method
    (Flink's cancel `PATCH /jobs/<id>`, `POST .../stop`, `.../savepoints`, `.../checkpoints`, `PUT
    .../resource-requirements`, jar upload and run, `DELETE`, `OPTIONS`) need `Authorization: Bearer <token>`
    ...: without an `Authorization` header the answer is 401 (`WWW-Authenticate: Bearer`), with a wrong one ...
    403, and nothing reaches Flink (counted in `flinklet_api_unauthorized_total`)." Every acting, secret or
    unknown route by every method, and the open routes by every method but GET and HEAD, with a JSON body where
    a body is taken (a cancel's `?mode=cancel`, a stop's drain)."""
    f, i = job, job.ids
    before, events_before = unauthorized_total(f), len(api_requests(f))
    j = i["jid"]
    # open to GET and HEAD only; by another method they act: PATCH /jobs/<id> cancels, POST .../checkpoints
    # triggers one, PUT .../resource-requirements rescales
    open_routes = ["/jobs/overview", f"/jobs/{j}", f"/jobs/{j}?mode=cancel", f"/jobs/{j}/checkpoints",
                   f"/jobs/{j}/resource-requirements", "/overview", "/config", "/jars",
                   f"/jobs/{j}/vertices/{i['vid']}/backpressure", "/taskmanagers", "/datasets"]
    wrong = []
    n = 0
    for path in acting_routes(i) + [f"/jobs/{j}/stop?drain=true"]:
        for m in METHODS:
            body = None if m in ("GET", "HEAD", "OPTIONS") else b'{"drain": false, "cancel-job": true}'
            code, h, b = request(f.http_port, m, "/flink" + path, body=body,
                                 headers={"Content-Type": "application/json"} if body else None)
            n += 1
            if code != 401 or "bearer" not in h.get("www-authenticate", "").lower():
                wrong.append((m, path, code, h.get("www-authenticate")))
            no_secret(f"{m} {path}", b)
    for path in open_routes:
        for m in ("POST", "PATCH", "DELETE", "PUT", "OPTIONS"):
            code, h, b = request(f.http_port, m, "/flink" + path, body=None if m == "OPTIONS" else b"{}",
                                 headers=None if m == "OPTIONS" else {"Content-Type": "application/json"})
            n += 1
            if code != 401:
                wrong.append((m, path, code, h.get("www-authenticate")))
    # a wrong token (another token, another scheme, an empty one) is 403
    for auth in ("Bearer 00", "Basic dXNlcjpodW50ZXIy", "Bearer ", f"Token {f.token()}", f"Bearer {f.token()}x"):
        for m, path in (("GET", f"/jobs/{j}/yarn-cancel"), ("PATCH", f"/jobs/{j}"), ("GET", "/jobmanager/environment")):
            code, h, b = request(f.http_port, m, "/flink" + path, headers={"Authorization": auth})
            n += 1
            if code != 403:
                wrong.append((m, path, auth, code))
            no_secret(f"{m} {path} ({auth})", b)
    assert not wrong, f"{len(wrong)} of {n} not refused as documented: {wrong}"
    assert unauthorized_total(f) >= before + n, (before, unauthorized_total(f), n)
    assert len(api_requests(f)) == events_before, api_requests(f)[events_before:]
    runs_on(f)


def spellings(i, rest_port):
    """(target bytes, strict): strict targets must be answered 401 exactly (the docs name the spelling), the
    others anything but a success, a redirect or a secret."""
    j, tm, v = i["jid"], i["tm"], i["vid"]
    yc = f"/jobs/{j}/yarn-cancel"
    out = [
        # a %-encoded character, since Flink decodes the path twice
        (f"/flink/jobs/{j}/yarn-c%61ncel", True), (f"/flink/jobs/{j}/yarn-c%2561ncel", True),
        (f"/flink/jobs/{j}%2fyarn-cancel", True), (f"/flink/jobs/{j}%2Fyarn-cancel", True),
        (f"/flink/jobs%2F{j}%2Fyarn-stop", True), (f"/flink/%6aobs/{j}/yarn-cancel", True),
        (f"/flink/jobmanager/%65nvironment", True), (f"/flink/jobmanager%2fconfig", True),
        (f"/flink/jobs/{j}/yarn-cancel%00.js", True), (f"/flink/jobs/{j}/yarn-cancel%3f.js", True),
        (f"/flink/jobs/{j}/yarn-cancel%23.js", True), (f"/flink/jobs/overview%2f..%2f{j}%2fyarn-cancel", True),
        # dot segments
        (f"/flink/jobs/{j}/./yarn-cancel", True), (f"/flink/./jobs/{j}/yarn-cancel", True),
        (f"/flink/jobs/overview/../{j}/yarn-cancel", True), (f"/flink/jobs/{j}/checkpoints/../yarn-stop", True),
        ("/flink/jobs/overview/../../jobmanager/environment", True), ("/flink/overview/../jobmanager/config", True),
        (f"/flink/jobs/{j}/vertices/{v}/../../yarn-cancel", True), ("/flink/x.js/../jobmanager/environment", True),
        (f"/flink/jobs/{j}/yarn-cancel/.", True), (f"/flink/jobs/{j}/yarn-cancel/..", True),
        # extra slashes, a trailing slash
        (f"/flink//jobs/{j}/yarn-cancel", True), (f"/flink/jobs//{j}//yarn-cancel", True),
        (f"/flink/jobs/{j}/yarn-cancel/", True), ("/flink/jobmanager/environment/", True),
        (f"/flink///jobs/{j}/yarn-stop//", True),
        # ; and \
        (f"/flink/jobs/{j}/yarn-cancel;x=1", True), (f"/flink/jobs/{j};/yarn-cancel", True),
        ("/flink/jobmanager/environment;.js", True), (f"/flink/jobs/overview;/../{j}/yarn-cancel", True),
        (f"/flink/jobs/{j}\\yarn-cancel", True), ("/flink/jobmanager\\environment", True),
        # a query, a fragment: the path is what counts
        (f"/flink{yc}?x=.js", True), (f"/flink{yc}?/../../overview", True), (f"/flink{yc}?", True),
        ("/flink/jobmanager/environment?.html", True), ("/flink/jobmanager/config?a=b.css", True),
        (f"/flink/jobs/{j}/vertices/{v}/flamegraph?type=FULL&x=.png", True),
        (f"/flink{yc}#.js", False), ("/flink/jobmanager/environment#x.json", False),  # (a 400: fine)
        # another case
        (f"/flink/JOBS/{j}/yarn-cancel", True), (f"/flink/jobs/{j}/Yarn-Cancel", True),
        (f"/flink/jobs/{j.upper()}/yarn-cancel", True), ("/flink/JobManager/Environment", True),
        ("/FLINK/jobmanager/environment", False), (f"/Flink/jobs/{j}/yarn-cancel", False),
        # the version prefix
        (f"/flink/v1{yc}", True), (f"/flink/v1/v1{yc}", True), (f"/flink/V1{yc}", True),
        ("/flink/v1/jobmanager/environment", True), ("/flink/v2/jobmanager/config", True),
        (f"/flink/v1/jobs/{j}/vertices/{v}/flamegraph", True),
        # log file names that look like the UI's files: they are REST routes
        ("/flink/jobmanager/logs/jobmanager.log.txt", True), ("/flink/jobmanager/logs/a.js", True),
        (f"/flink/taskmanagers/{tm}/logs/x.html", True), (f"/flink/taskmanagers/{tm}/logs/stdout.json", True),
        ("/flink/jobmanager/logs/..%2f..%2f..%2fetc%2fpasswd.txt", True),
        (f"/flink/taskmanagers/{tm}/logs/..%252f..%252fetc%252fpasswd.txt", True),
        # UI-file suffixes on acting routes: no REST route, Flink's file server answers (a 404)
        (f"/flink{yc}.js", False), (f"/flink/jobs/{j}/yarn-stop.json", False),
        ("/flink/jobmanager/environment.json", False), ("/flink/jobmanager/config.xml", False),
        # absolute-form targets
        (f"http://127.0.0.1:{rest_port}{yc}", False), (f"http://127.0.0.1:{rest_port}/jobmanager/environment", False),
        (f"http://x/flink{yc}", True), (f"HTTP://x/flink/jobmanager/environment", True),
        (f"http://x/flink/jobs/overview/../{j}/yarn-cancel", True),
        # no leading slash, the prefix spelled other ways
        (f"flink{yc}", False), (f"/flink{yc}", True), (f"/./flink{yc}", False), (f"//flink{yc}", False),
        (f"/flink/../flink{yc}", False), (f"/%66link{yc}", False), (f"/flink%2f{yc[1:]}", False),
        # very long
        (f"/flink{yc}?" + "a" * 70000, False), ("/flink/" + "a/" * 30000 + f"../" * 30000 + yc[1:], False),
        (f"/flink{yc}/" + "/" * 5000, True),
    ]
    return [(t.encode(), strict) for t, strict in out] + [
        (f"/flink{yc}\x00.js".encode(), False), (f"/flink/jobmanager/environment\x00".encode(), False),
        (f"/flink{yc}\t.js".encode(), False), (f"/flink{yc}\xff".encode("latin-1"), False),
    ]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_no_spelling_of_an_acting_or_secret_route_opens_it(job, method):
    """Attacks "any other path: a route Flink may add later, another spelling of one (another case, a
    `%`-encoded character, since Flink decodes the path twice; a `.` or `..` segment, which the request's way to
    Flink would remove; a `;` or `\\`). Extra slashes (`//jobs/...`, a trailing `/`) and a query are read as
    Flink's router reads them, so they open nothing more" and "each route also under `/v1/`", by GET and HEAD
    (sent as GET), with raw bytes on the socket: UI-file suffixes after a `?`, `#`, `;` or NUL, log file names
    ending in `.txt` or `.json` (`/taskmanagers/<id>/logs/<name>`: a REST route, not a UI file), absolute-form
    targets (also naming Flink's own port), very long paths. None may be a success, a redirect or show a secret;
    the spellings the docs name must get 401."""
    f, i = job, job.ids
    port = f.conf["rest.port"]
    wrong = []
    for target, strict in spellings(i, port):
        data = method.encode() + b" " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        answers = raw(f.http_port, data)
        if not answers:
            continue  # closed without an answer: nothing opened
        code, head, body = answers[0]
        no_secret(f"{method} {target[:200]!r}", head.encode("latin-1") + body)
        if strict and code != 401 or not strict and (200 <= code < 400):
            wrong.append((target[:160], code, body[:120]))
    assert not wrong, f"{len(wrong)} spellings answered otherwise than documented: {wrong}"
    assert request(f.http_port, "GET", "/healthz")[0] == 200
    runs_on(f)


def test_smuggling_reaches_nothing(job):
    """Attacks "Without the token, `GET` and `HEAD` reach Flink only for ... the routes that only read" and "What
    goes to Flink: the method (`HEAD` as `GET`), the path and query as sent, the body (at most 4 KiB)" with HTTP
    smuggling: an open GET whose body is a whole acting request for Flink (with Content-Length, chunked, both,
    conflicting), pipelined requests on one connection, bare-LF line ends, an obfuscated Transfer-Encoding, a
    header folded under another, an overlong header. The smuggled requests cancel or stop the job if they reach
    Flink; each later request on the connection must be judged on its own (401)."""
    f, i = job, job.ids
    j = i["jid"].encode()
    cancel = b"GET /jobs/" + j + b"/yarn-cancel HTTP/1.1\r\nHost: x\r\n\r\n"
    env = b"GET /jobmanager/environment HTTP/1.1\r\nHost: x\r\n\r\n"
    pcancel = b"PATCH /jobs/" + j + b"?mode=cancel HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    fcancel = b"GET /flink/jobs/" + j + b"/yarn-cancel HTTP/1.1\r\nHost: x\r\n\r\n"
    fenv = b"GET /flink/jobmanager/environment HTTP/1.1\r\nHost: x\r\n\r\n"
    ov = b"GET /flink/jobs/overview HTTP/1.1\r\nHost: x\r\n"
    smuggled = cancel + env + pcancel

    def chunked(data):
        return b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n"

    cases = {
        "body-on-get": ov + b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
        "body-on-head": ov.replace(b"GET", b"HEAD", 1) + b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled,
        "chunked-get": ov + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(smuggled),
        "te-and-cl": ov + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(smuggled) + fcancel,
        "cl-and-te": ov + b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n\r\n" % len(smuggled)
        + b"0\r\n\r\n" + fcancel,
        "te-zero-then-request": ov + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + fcancel,
        "two-content-lengths": ov + b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(cancel) + cancel + fenv,
        "obfuscated-te": ov + b"Transfer-Encoding : chunked\r\nTransfer-encoding: x\r\n\r\n" + chunked(smuggled),
        "te-identity-chunked": ov + b"Transfer-Encoding: identity, chunked\r\n\r\n" + chunked(smuggled),
        "over-4k-body": ov + b"Content-Length: 5000\r\n\r\n" + smuggled + b" " * (5000 - len(smuggled)) + fcancel,
        "pipelined": ov + b"\r\n" + fcancel + ov + b"\r\n" + fenv + ov + b"\r\n",
        "bare-lf": b"GET /flink/jobs/overview HTTP/1.1\nHost: x\n\n" + fcancel.replace(b"\r\n", b"\n") + fenv,
        "folded-auth": b"GET /flink/jobs/" + j + b"/yarn-cancel HTTP/1.1\r\nHost: x\r\nX-A: b\r\n Authorization: "
        b"Bearer " + f.token().encode() + b"\r\n\r\n",
        "cr-in-path": b"GET /flink/jobs/overview\rGET /flink/jobs/" + j + b"/yarn-cancel HTTP/1.1\r\nHost: x\r\n\r\n",
        "overlong-header": ov + b"X-Big: " + b"a" * 70000 + b"\r\n\r\n" + fcancel,
        "http10-keepalive": b"GET /flink/jobs/overview HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + fcancel,
        "method-override": b"GET /flink/jobs/" + j + b" HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: PATCH\r\n"
        b"X-Method-Override: PATCH\r\nContent-Length: 0\r\n\r\n",
    }
    wrong = []
    for name, data in cases.items():
        answers = raw(f.http_port, data)
        for n, (code, head, body) in enumerate(answers):
            no_secret(name, head.encode("latin-1") + body)
            if n > 0 and 200 <= code < 400 and name not in ("pipelined",):
                wrong.append((name, n, code, body[:200]))
        if name == "pipelined":
            codes = [a[0] for a in answers]
            if codes != [200, 401, 200, 401, 200]:
                wrong.append((name, codes))
        if name == "folded-auth" and answers and answers[0][0] < 400:
            wrong.append((name, answers[0][0]))
        if name == "method-override" and answers and answers[0][0] != 200:
            wrong.append((name, answers[0][0]))  # a GET of the job's details, as sent
        assert request(f.http_port, "GET", "/healthz")[0] == 200, name
    assert not wrong, wrong
    runs_on(f)


def own_and_open_targets(i):
    j, v, tm = i["jid"], i["vid"], i["tm"]
    jobs = [f"/jobs/{j}" + s for s in (
        "", "/accumulators", "/checkpoints", "/checkpoints/config", "/exceptions", "/metrics", "/plan", "/status",
        "/resource-requirements", "/jobmanager/log-url", f"/taskmanagers/{tm}/log-url")]
    verts = [f"/jobs/{j}/vertices/{v}" + s for s in (
        "", "/accumulators", "/backpressure", "/jm-operator-metrics", "/metrics", "/subtasks/accumulators",
        "/subtasks/metrics", "/subtasks/0", "/subtasks/0/metrics", "/subtasks/0/attempts/0",
        "/subtasks/0/attempts/0/accumulators", "/subtasktimes", "/taskmanagers", "/watermarks")]
    flink = ["/", "/index.html", "/config", "/overview", "/datasets", "/jars", "/jobs", "/jobs/overview",
             "/jobs/metrics", "/jobmanager/metrics", "/taskmanagers", "/taskmanagers/metrics", f"/taskmanagers/{tm}",
             f"/taskmanagers/{tm}/metrics", "/jobmanager/metrics?get=Status.JVM.Memory.Heap.Used",
             f"/taskmanagers/{tm}/metrics?get=Status.JVM.CPU.Load"] + jobs + verts
    return (["/", "/status", "/events", "/autoscaler", "/metrics", "/healthz", "/readyz", "/flink"]
            + ["/flink" + p for p in flink] + ["/flink/v1" + p for p in flink if p != "/"])


def test_no_open_answer_shows_a_secret_and_the_token_shows_them(job):
    """Attacks "the routes that show what may hold secrets (`/jobmanager/config` and `/environment` with the
    JVM's options such as `-D...password=...` ...) need the token" and "`/`, `/status`, `/metrics` ... change
    nothing (the events say what the status and the log say: redacted URIs, no token)": every answer open without
    the token (flinklet's own pages and every open Flink route with the running job's ids, also under `/v1/`) is
    read whole and must not hold a secret planted in `flinklet.jvm.options` (`-Dmy.password=...`) or the Flink
    configuration (`my.secret.password`, `my.plain.setting`). The control: with the token,
    `/flink/jobmanager/environment` and `/flink/jobmanager/config` do show them, so they are there to leak."""
    f, i = job, job.ids
    got = {}
    for path in own_and_open_targets(i):
        code, h, b = request(f.http_port, "GET", path)
        got[path] = code
        no_secret(f"GET {path} ({code})", json.dumps(h).encode() + b)
        assert code != 401, f"{path} is documented open but answered 401"
        assert "access-control-allow-origin" not in h, (path, h)
    assert got["/flink/jobs/overview"] == 200 and got["/flink/config"] == 200 and got["/status"] == 200, got
    tok = f.token()
    code, h, env = request(f.http_port, "GET", "/flink/jobmanager/environment", token=tok)
    assert code == 200 and b"hunter2jvm" in env, (code, env[:500])
    assert h.get("cache-control") == "no-store", h
    code, _, conf = request(f.http_port, "GET", "/flink/jobmanager/config", token=tok)
    assert code == 200 and b"my.plain.setting" in conf, (code, conf[:500])
    runs_on(f)


def test_with_the_token_reads_and_acts_reach_flink_and_are_recorded(job):
    """Attacks "With the token the request goes to Flink and, when it needed the token, an `ApiRequest` event
    records its method and path" and "`Authorization: Bearer <token>` (the scheme in any case)": with the token
    (scheme `Bearer`, `bearer`, `BEARER`) a secret route reads, a manual checkpoint is triggered through
    Flink's `POST /jobs/<id>/checkpoints` and completes (its status is an open route), and an `ApiRequest` event
    names each; the same requests without the token got nothing before."""
    f, i = job, job.ids
    tok, j = f.token(), i["jid"]
    n0 = len(api_requests(f))
    for scheme in ("Bearer", "bearer", "BEARER"):
        code, _, b = request(f.http_port, "GET", "/flink/jobmanager/environment",
                             headers={"Authorization": f"{scheme} {tok}"})
        assert code == 200 and b"hunter2jvm" in b, (scheme, code)
    code, _, b = request(f.http_port, "POST", f"/flink/jobs/{j}/checkpoints", token=tok, body=b"{}",
                         headers={"Content-Type": "application/json"})
    assert code in (200, 202), (code, b[:500])
    trigger = json.loads(b)["request-id"]

    def completed():
        c, _, body = request(f.http_port, "GET", f"/flink/jobs/{j}/checkpoints/{trigger}")
        st = json.loads(body) if c == 200 else {}
        return st if st.get("status", {}).get("id") == "COMPLETED" else None
    done = wait_for(completed, 60, "the manual checkpoint")
    assert "failure-cause" not in (done.get("operation") or {}), done
    evs = api_requests(f)[n0:]
    text = json.dumps(evs)
    assert len(evs) >= 4 and "POST" in text and f"/jobs/{j}/checkpoints" in text and "environment" in text, evs
    assert tok not in text
    runs_on(f)


def test_a_copied_volume_naming_the_outside_checkpoints_another_way_is_refused(job):
    """Attacks "a copied volume whose configuration ... leads to the running job's checkpoints cannot start a
    second supervisor there: it exits 3 at once, naming the holder's pid and state directory, before it sweeps or
    launches anything" on the real MiniCluster: the state directory is copied with `cp -a` while the job runs
    (`lock`, `job-id`, `status.json` and all), and its configuration names the running job's outside checkpoint
    directory `file:/<dir>/./` instead of `file://<dir>`. A leftover-looking checkpoint of the running job (chk-N
    without _metadata, as while Flink writes it) must stay, and the job runs on in the same JVM."""
    f, i = job, job.ids
    tmp = i["tmp"]
    outside = i["outside"]
    inflight = os.path.join(outside, i["jid"], "chk-999999")
    os.makedirs(inflight, exist_ok=True)
    open(os.path.join(inflight, "in-flight"), "w").close()
    copy = os.path.join(str(tmp), "copied-volume")
    subprocess.run(["cp", "-a", f.state, copy], check=True)
    cfg = os.path.join(str(tmp), "copied.yaml")
    text = f.config.read_text().replace(f'"file://{outside}"', f'"file:{outside}/./"')
    text = text.replace(f.conf["flinklet.http.address"], f"127.0.0.1:{free_port()}")
    text = text.replace(f'"rest.port": "{f.conf["rest.port"]}"', f'"rest.port": "{free_port()}"')
    assert f"file:{outside}/./" in text
    with open(cfg, "w") as out:
        out.write(text)
    t0 = time.monotonic()
    r = subprocess.run([BIN, "run", "-c", cfg, "--state-dir", copy, "--flink-home", FLINK_HOME],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, (r.returncode, r.stderr[-3000:])
    assert time.monotonic() - t0 < 15
    assert str(f.proc.pid) in r.stderr and f.state in r.stderr, r.stderr[-3000:]
    assert os.path.exists(os.path.join(inflight, "in-flight"))
    runs_on(f)

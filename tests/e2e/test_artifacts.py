"""The job's jar over https (TLS verified against a test CA made here) and s3 (AWS SigV4), with a right and
a wrong checksum, cached on the volume so that a restart needs no network; through the environment's https_proxy
when one is set (and Flink's REST calls never through it). The limits of a download (issue 27): a server that
stalls is given up at flinklet.artifacts.timeout, one that never finishes TLS at flinklet.artifacts.connect-timeout,
a jar larger than flinklet.artifacts.max-size is refused (announced) or cut off (not announced), and a scheme or a
redirect outside flinklet.artifacts.allowed-schemes is refused; each leaves no jar and starts no JVM, and says why
naming the option. http works only when listed."""
import hashlib
import http.server
import os
import select
import shutil
import signal
import socket
import ssl
import threading
import time

import pytest

from conftest import JOBS_JAR, free_port, wait_for
from httpkit import Server
from testkit import make_ca


class ConnectProxy:
    """An http proxy on 127.0.0.1 that only tunnels (CONNECT), recording each tunnel's target; any other request
    (a plain http one sent through it) is answered 501 by the base handler."""

    def __init__(self):
        self.connects = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_CONNECT(self):
                outer.connects.append(self.path)
                host, port = self.path.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                ends = [self.connection, upstream]
                try:
                    while True:
                        ready, _, _ = select.select(ends, [], [], 60)
                        if not ready:
                            return
                        for s in ready:
                            data = s.recv(65536)
                            if not data:
                                return
                            (upstream if s is self.connection else self.connection).sendall(data)
                finally:
                    upstream.close()

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def tls(tmp_path):
    if not shutil.which("openssl"):
        pytest.skip("openssl is required to make the test CA")
    certs = tmp_path / "certs"
    certs.mkdir()
    ca, cert, key = make_ca(certs)
    root = tmp_path / "www"
    (root / "jobs").mkdir(parents=True)
    shutil.copy(JOBS_JAR, root / "jobs" / "job.jar")
    srv = Server(str(root), cert, key)
    yield ca, srv
    srv.stop()


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def jar_over(f, url):
    f.write_config(raw=f.config.read_text().replace(f"local://{JOBS_JAR}", url))


def test_https_jar_with_checksum_is_fetched_cached_and_reused_offline(tls, flinklets):
    ca, srv = tls
    digest = sha256(JOBS_JAR)
    f = flinklets(conf={"flinklet.artifacts.ca-file": ca, "flinklet.job.jar.sha256": digest})
    jar_over(f, f"https://127.0.0.1:{srv.port}/jobs/job.jar")
    f.start()
    f.wait_stable()
    assert [p for p, _ in srv.requests] == ["/jobs/job.jar"]
    cached = os.path.join(f.state, "artifacts", f"{digest}.jar")
    assert sha256(cached) == digest
    assert "ArtifactFetched" in [e["type"] for e in f.events()]
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0

    srv.stop()  # no network any more: the cache serves the restart
    g = flinklets(state_dir=f.state, conf={"flinklet.artifacts.ca-file": ca, "flinklet.job.jar.sha256": digest})
    jar_over(g, f"https://127.0.0.1:{srv.port}/jobs/job.jar")
    g.start()
    g.wait_stable()
    # the one download is the first run's: the second started from the cache
    assert [e["type"] for e in g.events()].count("ArtifactFetching") == 1


def test_wrong_checksum_is_refused(tls, flinklets):
    ca, srv = tls
    f = flinklets(conf={"flinklet.artifacts.ca-file": ca, "flinklet.job.jar.sha256": "0" * 64,
                        "flinklet.restart.max-attempts": "1", "flinklet.restart.backoff.initial": "100 ms"})
    jar_over(f, f"https://127.0.0.1:{srv.port}/jobs/job.jar")
    f.start()
    assert f.wait_exit(60) == 1
    failed = [e for e in f.events() if e["type"] == "ArtifactFetchFailed"]
    assert failed and "checksum mismatch" in failed[0]["message"] and sha256(JOBS_JAR) in failed[0]["message"]
    assert "JvmStarted" not in [e["type"] for e in f.events()]
    assert not [n for n in os.listdir(os.path.join(f.state, "artifacts"))], "nothing unverified stays in the cache"


def test_untrusted_certificate_is_refused(tls, flinklets):
    _, srv = tls
    f = flinklets(conf={"flinklet.restart.max-attempts": "1", "flinklet.restart.backoff.initial": "100 ms",
                        "flinklet.artifacts.retries": "0"})
    jar_over(f, f"https://127.0.0.1:{srv.port}/jobs/job.jar")
    f.start()
    assert f.wait_exit(60) == 1
    failed = [e for e in f.events() if e["type"] == "ArtifactFetchFailed"]
    assert failed and "certificate" in failed[0]["message"].lower()
    assert srv.requests == [], "no request goes out over an unverified connection"


def test_s3_jar_is_signed_with_sigv4(tls, flinklets, monkeypatch):
    ca, srv = tls
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFLINKLETTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    f = flinklets(conf={"flinklet.artifacts.ca-file": ca,
                        "flinklet.artifacts.s3.endpoint": f"https://127.0.0.1:{srv.port}"})
    jar_over(f, "s3://jobs/job.jar")
    f.start()
    f.wait_stable()
    path, headers = srv.requests[0]
    assert path == "/jobs/job.jar"
    auth = headers.get("Authorization", "")
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDFLINKLETTEST/"), auth
    assert "/eu-west-1/s3/aws4_request" in auth
    assert "X-Amz-Date" in headers or "x-amz-date" in {k.lower() for k in headers}


def test_https_jar_goes_through_the_environments_proxy_and_flinks_rest_does_not(tls, flinklets, monkeypatch):
    ca, srv = tls
    proxy = ConnectProxy()
    try:
        for var in ("no_proxy", "NO_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        f = flinklets(conf={"flinklet.artifacts.ca-file": ca})
        jar_over(f, f"https://127.0.0.1:{srv.port}/jobs/job.jar")
        f.start()
        f.wait_stable()  # Flink's REST API answered flinklet directly: the proxy answers nothing but CONNECT
        assert proxy.connects == [f"127.0.0.1:{srv.port}"], proxy.connects
        assert [p for p, _ in srv.requests] == ["/jobs/job.jar"]
        f.signal(signal.SIGTERM)
        assert f.wait_exit(30) == 0
    finally:
        proxy.stop()


# ---- the limits of a download (issue 27) ----------------------------------------------------------------------

# one launch and one restart, no retry of a download within a launch unless a test says otherwise: a failure ends
# flinklet (exit 1) within seconds of the limit
GIVE_UP = {"flinklet.restart.max-attempts": "1", "flinklet.restart.backoff.initial": "100 ms"}


def trickle(h, srv, length, body=b"x", every=0.5, longest=90):
    """200 with the given Content-Length (None: none, the end is the connection's close), then one piece of body
    every `every` seconds: about length * every seconds in all, cut at `longest`, or until the client leaves."""
    h.send_response(200)
    h.send_header("Content-Type", "application/java-archive")
    if length is not None:
        h.send_header("Content-Length", str(length))
    h.send_header("Connection", "close")
    h.end_headers()
    h.close_connection = True
    end = time.monotonic() + longest
    while time.monotonic() < end and not srv.closing.is_set():
        h.wfile.write(body)
        h.wfile.flush()
        time.sleep(every)


def flood(h, srv, size):
    """200 without a Content-Length (the body ends when the connection closes), size bytes as fast as they go."""
    h.protocol_version = "HTTP/1.0"
    h.send_response(200)
    h.send_header("Content-Type", "application/java-archive")
    h.end_headers()
    h.close_connection = True
    chunk = b"x" * 65536
    for _ in range(size // len(chunk)):
        h.wfile.write(chunk)


@pytest.fixture
def limits(tls, tmp_path):
    """The https server of `tls` with the answers that test the limits, and a plain http server of the same jar."""
    ca, _ = tls
    certs = tmp_path / "certs"
    plain = Server(str(tmp_path / "www"))

    def redirect(h, srv):
        h.send_response(302)
        h.send_header("Location", f"http://127.0.0.1:{plain.port}/jobs/job.jar?token=hunter2")
        h.send_header("Content-Length", "0")
        h.end_headers()

    routes = {
        # the headers at once, then a byte every half second: 1000 bytes would take 500 s (cut at 90 s)
        "/stall.jar": lambda h, srv: trickle(h, srv, 1000),
        # 200 MiB announced, then a KiB every half second: the body would take hours
        "/announced.jar": lambda h, srv: trickle(h, srv, 200 << 20, body=b"x" * 1024),
        # 8 MiB without a Content-Length
        "/unannounced.jar": lambda h, srv: flood(h, srv, 8 << 20),
        "/redirect.jar": redirect,
    }
    srv = Server(str(tmp_path / "www"), str(certs / "srv.pem"), str(certs / "srv.key"), routes=routes)
    yield ca, srv, plain
    srv.stop()
    plain.stop()


def failed_launch(f, within):
    """flinklet gave up (exit 1) within `within` seconds of its start, no JVM was started, nothing is left in the
    jar cache; returns the ArtifactFetchFailed messages and the events."""
    started = time.monotonic()
    assert f.wait_exit(within) == 1, f.logs()[-3000:]
    took = time.monotonic() - started
    events = f.events()
    types = [e["type"] for e in events]
    assert "JvmStarted" not in types, "no JVM is started without its whole jar"
    cache = os.path.join(f.state, "artifacts")
    assert not os.path.exists(cache) or os.listdir(cache) == [], os.listdir(cache)
    failed = [e["message"] for e in events if e["type"] == "ArtifactFetchFailed"]
    assert failed, types
    return failed, events, took


def test_a_stalled_download_is_given_up_at_the_total_budget(limits, flinklets):
    ca, srv, _ = limits
    # the restart backoff long: the failure stays in the status while flinklet waits to try again
    f = flinklets(conf={"flinklet.artifacts.ca-file": ca, "flinklet.artifacts.timeout": "2 s",
                        "flinklet.artifacts.retries": "0", "flinklet.restart.backoff.initial": "10 min"})
    jar_over(f, f"https://flinklet:hunter2@127.0.0.1:{srv.port}/stall.jar?sig=hunter2")
    started = time.monotonic()
    f.start()
    # a 2 s budget against a server that would take 500 s: well before 60 s, on any machine
    failed = wait_for(lambda: [e["message"] for e in f.events() if e["type"] == "ArtifactFetchFailed"], 60,
                      "ArtifactFetchFailed")
    assert time.monotonic() - started < 60
    assert "flinklet.artifacts.timeout (2 s)" in failed[0], failed
    assert f"https://***@127.0.0.1:{srv.port}/stall.jar?***" in failed[0], failed
    wait_for(lambda: "flinklet.artifacts.timeout (2 s)" in ((f.status() or {}).get("error") or ""), 30,
             "the status error naming the budget")
    f.signal(signal.SIGTERM)
    f.wait_exit(30)
    assert "JvmStarted" not in [e["type"] for e in f.events()], "no JVM is started without its whole jar"
    assert os.listdir(os.path.join(f.state, "artifacts")) == [], "no partial jar is left"
    assert "hunter2" not in open(os.path.join(f.state, "events.jsonl")).read()
    assert "hunter2" not in open(os.path.join(f.state, "status.json")).read()
    assert "hunter2" not in f.logs()


def test_a_server_that_never_finishes_tls_is_given_up_at_the_connect_timeout(tls, flinklets):
    ca, _ = tls
    # a listener that never accepts: the kernel completes the TCP handshake, TLS never begins
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead.listen(8)
    try:
        f = flinklets(conf={**GIVE_UP, "flinklet.artifacts.ca-file": ca, "flinklet.artifacts.timeout": "10 min",
                            "flinklet.artifacts.connect-timeout": "1 s", "flinklet.artifacts.retries": "0"})
        jar_over(f, f"https://127.0.0.1:{dead.getsockname()[1]}/jobs/job.jar")
        f.start()
        # the total budget is 10 min: giving up within a minute is the connect timeout's doing
        failed, _, _ = failed_launch(f, 60)
        assert all("flinklet.artifacts.connect-timeout (1 s)" in m for m in failed), failed
    finally:
        dead.close()


def test_a_jar_announced_larger_than_the_cap_is_refused_before_its_body(limits, flinklets):
    """...and an unfinished download of an earlier flinklet is removed (failed_launch: the cache is empty)."""
    ca, srv, _ = limits
    # no time budget to speak of: only the announcement can end this download soon
    f = flinklets(conf={**GIVE_UP, "flinklet.artifacts.ca-file": ca, "flinklet.artifacts.max-size": "1m",
                        "flinklet.artifacts.timeout": "10 min"})
    jar_over(f, f"https://127.0.0.1:{srv.port}/announced.jar")
    # what a flinklet killed during a download left: removed at the start, never used
    os.makedirs(os.path.join(f.state, "artifacts"))
    with open(os.path.join(f.state, "artifacts", "uri-0.jar.part.99999.1.1"), "wb") as part:
        part.write(b"PK half a jar")
    f.start()
    failed, events, _ = failed_launch(f, 60)
    assert "removed 1 unfinished jar download" in f.logs()
    for m in failed:
        assert "announces 209715200 bytes" in m and "flinklet.artifacts.max-size (1m, 1048576 bytes)" in m, m
    types = [e["type"] for e in events]
    # too large stays too large: each launch asks once although flinklet.artifacts.retries is 3
    assert types.count("ArtifactFetching") == types.count("ArtifactFetchFailed") == 2, types


def test_a_jar_larger_than_the_cap_without_a_content_length_is_cut_off(limits, flinklets):
    ca, srv, _ = limits
    f = flinklets(conf={**GIVE_UP, "flinklet.artifacts.ca-file": ca, "flinklet.artifacts.max-size": "1m"})
    jar_over(f, f"https://127.0.0.1:{srv.port}/unannounced.jar")
    f.start()
    failed, events, _ = failed_launch(f, 60)
    for m in failed:
        assert "more than flinklet.artifacts.max-size (1m, 1048576 bytes) arrived" in m, m
    types = [e["type"] for e in events]
    assert types.count("ArtifactFetching") == types.count("ArtifactFetchFailed") == 2, types


def test_a_scheme_not_allowed_is_refused_before_anything_is_written(limits, flinklets):
    _, _, plain = limits
    f = flinklets()
    jar_over(f, f"http://flinklet:hunter2@127.0.0.1:{plain.port}/jobs/job.jar")
    f.start()
    assert f.wait_exit(30) == 2, f.logs()[-3000:]
    out = f.logs()
    assert "flinklet.artifacts.allowed-schemes" in out and "the scheme http" in out, out
    assert f"http://***@127.0.0.1:{plain.port}/jobs/job.jar" in out, out
    assert "hunter2" not in out
    assert plain.requests == []
    assert not os.path.exists(f.state) or os.listdir(f.state) == [], os.listdir(f.state)


def test_a_redirect_to_a_scheme_not_allowed_is_not_followed(limits, flinklets):
    ca, srv, plain = limits
    f = flinklets(conf={**GIVE_UP, "flinklet.artifacts.ca-file": ca})
    jar_over(f, f"https://127.0.0.1:{srv.port}/redirect.jar")
    f.start()
    failed, events, _ = failed_launch(f, 60)
    for m in failed:
        assert f'redirected to "http://127.0.0.1:{plain.port}/jobs/job.jar?***"' in m, m
        assert "flinklet.artifacts.allowed-schemes" in m, m
    assert "hunter2" not in open(os.path.join(f.state, "events.jsonl")).read()
    assert plain.requests == [], "nothing is asked over http"
    types = [e["type"] for e in events]
    assert types.count("ArtifactFetching") == types.count("ArtifactFetchFailed") == 2, types


def test_http_jar_is_fetched_when_listed(limits, flinklets):
    _, _, plain = limits
    f = flinklets(conf={"flinklet.artifacts.allowed-schemes": "https, HTTP"})
    jar_over(f, f"http://127.0.0.1:{plain.port}/jobs/job.jar")
    f.start()
    f.wait_stable()
    assert [p for p, _ in plain.requests] == ["/jobs/job.jar"]
    assert "ArtifactFetched" in [e["type"] for e in f.events()]
    cache = os.path.join(f.state, "artifacts")
    assert [sha256(os.path.join(cache, n)) for n in os.listdir(cache)] == [sha256(JOBS_JAR)]

"""The job's jar over https (TLS verified against a test CA made here) and s3 (AWS SigV4), with a right and
a wrong checksum, cached on the volume so that a restart needs no network; through the environment's https_proxy
when one is set (and Flink's REST calls never through it)."""
import hashlib
import http.server
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import threading

import pytest

from conftest import JOBS_JAR, free_port, wait_for


def make_ca(d):
    """A CA and a certificate for 127.0.0.1 signed by it (openssl, no network)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=flinklet test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
        "-days", "2", "-extfile", "ext.cnf")
    return str(d / "ca.pem"), str(d / "srv.pem"), str(d / "srv.key")


class Server:
    """An https server on 127.0.0.1 serving one directory, recording each request's headers."""

    def __init__(self, root, cert, key):
        self.requests = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=root, **kw)

            def do_GET(self):
                outer.requests.append((self.path, dict(self.headers)))
                return super().do_GET()

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


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

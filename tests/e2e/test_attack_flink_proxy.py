"""Attacks on /flink/ written from the contract (docs/operations.md, "Flink's web UI and REST API: /flink/"), not the
code: without the token only the listed routes that read reach Flink, whatever the wire looks like. Raw bytes on a
socket (no client normalizes them): pipelined requests on one connection, leading slashes by the hundred, dot
segments at the end, a doubled version prefix, an encoded NUL, control and non-ASCII bytes, HTTP/1.0, method
override headers, a GET with a body, header tricks around Authorization; after all of it the job runs in the same
JVM and nothing of it is an ApiRequest event."""
import socket
import time

from conftest import wait_for


def exchange(port, data, count=1, timeout=10, head_only=False):
    """The status codes of the first `count` answers to the bytes sent as they are on one connection (head_only: the
    answers are to HEAD, without a body)."""
    codes = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while len(codes) < count:
            head_end = buf.find(b"\r\n\r\n")
            if head_end < 0:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                continue
            lines = buf[:head_end].decode("latin-1")
            codes.append(int(lines.split(" ", 2)[1]))
            length = 0
            for line in lines.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            need = head_end + 4 + (0 if head_only else length)
            while len(buf) < need:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            buf = buf[need:]
    return codes


def get(target, extra=b"", method=b"GET", version=b"HTTP/1.1"):
    return method + b" " + target + b" " + version + b"\r\nHost: x\r\n" + extra + b"\r\n"


def test_no_wire_spelling_reaches_an_acting_or_secret_route(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    jid, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    last = f.wait_checkpoint(1)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    j = jid.encode()
    cancel = b"/jobs/" + j + b"/yarn-cancel"

    # pipelined on one connection: an open read does not open the next request
    codes = exchange(f.http_port, get(b"/flink/jobs/overview") + get(b"/flink" + cancel) + get(b"/flink/overview")
                     + get(b"/flink/jobmanager/environment") + get(b"/flink/config"), count=5)
    assert codes == [200, 401, 200, 401, 200], codes

    refused = [
        b"/flink" + b"/" * 300 + cancel[1:],
        b"/flink/." + cancel,
        b"/flink" + cancel + b"/.",
        b"/flink" + cancel + b"/..",
        b"/flink" + cancel + b"/../yarn-cancel",
        b"/flink/v1/v1" + cancel,
        b"/flink/V1" + cancel,
        b"/flink" + cancel + b"%00",
        b"/flink" + cancel + b"%00.js",
        b"/flink/jobs/" + j + b"/yarn-c%61ncel",
        b"/flink/jobs/" + j + b"/yarn-cancel%2F",
        b"/flink/jobs/" + j + b"/yarn-cancel%2f.",
        b"/flink/jobs/" + j + b"%2F..%2Fyarn-cancel",
        b"/flink/jobs/" + j + b"/yarn-cancel&",
        b"/flink/jobs/" + j + b"/yarn-cancel.js/..",
        b"/flink/jobmanager/environment;jsessionid=x",
        b"/flink/jobmanager/./environment",
        b"/flink/jobmanager/config/",
        b"/flink/jobs/" + j + b"/yarn-stop?x=/index.html",
    ]
    for target in refused:
        for method in (b"GET", b"HEAD"):
            code = exchange(f.http_port, get(target, method=method), head_only=method == b"HEAD")
            assert code and code[0] in (400, 401), (method, target, code)
    # HTTP/1.0, and method overrides of a read into a cancel: still a GET of a route that acts
    assert exchange(f.http_port, get(b"/flink" + cancel, version=b"HTTP/1.0")) == [401]
    assert exchange(f.http_port, get(b"/flink/jobs/overview", b"X-HTTP-Method-Override: GET\r\n"
                                     b"X-Original-URL: " + cancel + b"\r\nX-Rewrite-URL: " + cancel + b"\r\n")) == [200]
    # a GET with a body is a GET: the body goes nowhere, the route decides
    body = b'{"mode": "cancel"}'
    assert exchange(f.http_port, get(b"/flink" + cancel, b"Content-Type: application/json\r\nContent-Length: "
                                     + str(len(body)).encode() + b"\r\n") + body) == [401]
    # a wrong token beside no token, an empty bearer, another scheme: never the token
    for auth in (b"Bearer ", b"Bearer", b"Basic " + f.token().encode(), b"Token " + f.token().encode(),
                 b"Bearer " + f.token().encode()[:-1], b"Bearer " + f.token().encode() + b"x"):
        code = exchange(f.http_port, get(b"/flink" + cancel, b"Authorization: " + auth + b"\r\n"))
        assert code in ([401], [403]), (auth, code)
    # non-ASCII and control bytes in the target are not forwarded
    for target in (b"/flink/jobs/" + j + b"/yarn\xe2\x80\x90cancel", b"/flink/jobs/" + j + b"/yarn-cancel\x7f"):
        code = exchange(f.http_port, get(target))
        assert code and code[0] in (400, 401, 404), (target, code)

    time.sleep(2)
    st = f.wait_checkpoint(last + 2, timeout=60)
    assert st["jvm"]["pid"] == pid and st["jobStatus"]["jobId"] == jid and st["jobStatus"]["state"] == "RUNNING"
    jobs = f.rest("/jobs/overview")["jobs"]
    assert [(x["jid"], x["state"]) for x in jobs] == [(jid, "RUNNING")]
    assert not [e for e in f.events() if e["type"] == "ApiRequest"]
    wait_for(lambda: f.http("/healthz")[0] == 200, 10, "flinklet healthy")

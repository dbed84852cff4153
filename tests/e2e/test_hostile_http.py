"""The supervisor's own HTTP endpoint against hostile clients (issue 14): floods of idle and half-open connections
held from one client and then dropped (the endpoint answers again), the per-address and idle limits, a JVM crash
handled while a slowloris holds the endpoint, a second flinklet on the same address (it exits 3; the first keeps
the port and its job), the Bearer scheme in any case, and IPv6 and dual-stack binds. Most cases need no JVM: the
job is suspended, so flinklet serves its endpoint with nothing running; the crash case runs the real MiniCluster."""
import json
import os
import shutil
import signal
import socket
import subprocess
import threading

import pytest

from conftest import BIN, Flinklet, wait_for


def connect(port, host="127.0.0.1", source=None, timeout=3):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        if source:
            s.bind((source, 0))
        s.connect((host, port))
    except OSError:
        s.close()
        raise
    return s


def request(port, path="/healthz", host="127.0.0.1", source=None, method="GET", headers=b"", timeout=3):
    """(status, body) of one request on a new connection; None when the connection was refused, closed or reset
    without an answer, or no answer came within timeout."""
    try:
        s = connect(port, host, source, timeout)
    except OSError:
        return None
    data = b""
    with s:
        try:
            s.sendall(f"{method} {path} HTTP/1.1\r\nHost: flinklet\r\nConnection: close\r\n".encode() + headers +
                      b"Content-Length: 0\r\n\r\n")
            while chunk := s.recv(65536):
                data += chunk
        except OSError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 "):
        return None
    return int(head.split()[1]), body.decode(errors="replace")


def answered(port, path="/healthz", within=20, **kw):
    """The first answer to path within `within` seconds (asked again every half second)."""
    return wait_for(lambda: request(port, path, **kw), within, f"an answer to {path} on port {port}")


def hold(port, n, kind, source=None):
    """n connections from one client, each left as kind: "idle" (connected, nothing sent), "partial" (half a
    request line), "headers" (a request line and half a header), "shut" (half a request, then shutdown(SHUT_WR)).
    The ones the kernel did not let connect are left out."""
    socks = []
    for _ in range(n):
        try:
            s = connect(port, source=source, timeout=3)
        except OSError:
            continue
        try:
            if kind == "partial":
                s.send(b"GET /stat")
            elif kind == "headers":
                s.send(b"GET /status HTTP/1.1\r\nX-Slow: ")
            elif kind == "shut":
                s.send(b"GET /st")
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        socks.append(s)
    return socks


def close_all(socks):
    for s in socks:
        s.close()
    socks.clear()


def metric(port, name, source=None):
    code, text = answered(port, "/metrics", source=source)
    assert code == 200
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in /metrics")


def loopback_alias():
    """A second loopback address to connect from (127.0.0.2), or skip."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("cannot connect from 127.0.0.2")
    return "127.0.0.2"


def suspended(flinklets, conf=None, **kw):
    """A flinklet whose job is suspended: its endpoint serves, no JVM runs."""
    f = flinklets(job={"state": "suspended"}, conf=conf or {}, **kw).start()
    wait_for(lambda: (st := f.status()) and st["lifecycleState"] == "SUSPENDED" and request(f.http_port), 60,
             "flinklet serving with the job suspended")
    return f


def alive(f):
    assert f.proc.poll() is None, f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}"


def test_floods_held_then_dropped_leave_the_endpoint_answering(flinklets):
    # the limit reachable from one client (no per-address limit), and timeouts short enough that the held
    # connections also end by the server's hand: at the limit, all of them closing inside one turn of the loop
    # (their clients hang up together, or their timeouts expire together) used to leave the listening socket
    # unwatched for good
    f = suspended(flinklets, {"flinklet.http.max-connections": "32", "flinklet.http.max-connections-per-ip": "0",
                              "flinklet.http.connection-timeout": "3 s"})
    port = f.http_port
    for kind in ("idle", "partial", "headers", "shut"):
        socks = hold(port, 300, kind)
        assert len(socks) >= 100, f"only {len(socks)} connections were made"
        alive(f)
        close_all(socks)
        code, body = answered(port, within=20)
        assert code == 200 and json.loads(body)["lifecycleState"] == "SUSPENDED", kind
    # held until the server's own timeout closed them, never closed by the client
    socks = hold(port, 300, "idle")
    try:
        wait_for(lambda: all(server_closed(s) for s in socks), 60, "the server to time out the connections it held")
        code, _ = answered(port, within=20)
        assert code == 200
    finally:
        close_all(socks)
    alive(f)
    assert metric(port, "flinklet_http_connections_refused_total") > 0


def server_closed(s):
    """Whether the server closed s (EOF or reset), without waiting."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        s.settimeout(3)


def test_idle_and_half_open_connections_are_closed_after_the_timeout(flinklets):
    f = suspended(flinklets, {"flinklet.http.connection-timeout": "2 s"})
    socks = [*hold(f.http_port, 1, "idle"), *hold(f.http_port, 1, "partial"), *hold(f.http_port, 1, "headers")]
    # a keep-alive connection after a complete request
    keep = connect(f.http_port)
    keep.sendall(b"GET /healthz HTTP/1.1\r\nHost: flinklet\r\n\r\n")
    assert keep.recv(65536).startswith(b"HTTP/1.1 200")
    socks.append(keep)
    try:
        assert len(socks) == 4
        wait_for(lambda: all(server_closed(s) for s in socks), 30, "the server to close idle connections")
        assert answered(f.http_port)[0] == 200
    finally:
        close_all(socks)


def test_the_per_address_limit_refuses_excess_connections_from_one_address(flinklets):
    other = loopback_alias()
    f = suspended(flinklets, {"flinklet.http.max-connections-per-ip": "4",
                              "flinklet.http.connection-timeout": "120 s"})
    port = f.http_port
    socks = hold(port, 4, "idle", source="127.0.0.1")
    try:
        assert len(socks) == 4
        # a fifth from the same address is closed unanswered, every time; another address is served
        for _ in range(3):
            assert request(port, source="127.0.0.1") is None
        assert request(port, source=other)[0] == 200
        assert metric(port, "flinklet_http_connections_refused_total", source=other) >= 3
        assert metric(port, "flinklet_http_connections", source=other) >= 4
        # one of the four goes: the address has room again
        socks.pop().close()
        assert answered(port, source="127.0.0.1")[0] == 200
    finally:
        close_all(socks)


def test_running_out_of_descriptors_pauses_accepting_and_recovers(flinklets):
    if not shutil.which("prlimit"):
        pytest.skip("no prlimit")
    f = flinklets(job={"state": "suspended"}, conf={"flinklet.http.max-connections": "500",
                                                    "flinklet.http.max-connections-per-ip": "0",
                                                    "flinklet.http.connection-timeout": "120 s"})
    f.start(wrapper=["prlimit", "--nofile=96"])
    wait_for(lambda: (st := f.status()) and st["lifecycleState"] == "SUSPENDED" and request(f.http_port), 60,
             "flinklet serving with the job suspended")
    socks = hold(f.http_port, 200, "idle")
    try:
        alive(f)
        assert request(f.http_port, timeout=1) is None, "no descriptor left for one more connection"
    finally:
        close_all(socks)
    assert answered(f.http_port, within=20)[0] == 200
    alive(f)
    assert "unable to accept a connection" in f.logs()


def test_slowloris_does_not_delay_a_jvm_restart(flinklets):
    """The real MiniCluster: idle, half-open and trickling connections from one client fill the endpoint (no
    per-address limit here) while the JVM is killed; it is restarted from its checkpoint meanwhile, and once the
    clients are gone the endpoint answers them again."""
    f = flinklets(conf={"flinklet.restart.backoff.initial": "200 ms",
                        "flinklet.http.max-connections-per-ip": "0"}).start()
    st = f.wait_stable()
    f.wait_checkpoint(1)
    port, pid, job_id = f.http_port, st["jvm"]["pid"], st["jobStatus"]["jobId"]
    socks = [*hold(port, 100, "idle"), *hold(port, 100, "headers"), *hold(port, 100, "shut")]
    assert request(port, timeout=2) is None, "the endpoint is full"
    stop = threading.Event()

    def trickle():  # a byte a second on every connection still open: the idle timeout never ends them
        while not stop.wait(1):
            for s in list(socks):
                try:
                    s.send(b"a")
                except OSError:
                    pass

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        os.kill(pid, signal.SIGKILL)
        new = wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE"
                       and s, 120, "the JVM restarted and the job RUNNING while the slow clients hold on")
        assert new["jvm"]["restarts"] == 1 and new["restoredFrom"]["kind"] == "checkpoint"
        assert new["jobStatus"]["jobId"] == job_id
        alive(f)
    finally:
        stop.set()
        t.join()
        close_all(socks)
    code, body = answered(port, "/readyz", within=20)
    assert code == 200 and json.loads(body)["jobState"] == "RUNNING"
    code, body = answered(port, "/status")
    assert code == 200 and json.loads(body)["jvm"]["pid"] == new["jvm"]["pid"]


def test_a_second_flinklet_on_the_same_address_exits_3_and_the_first_keeps_it(tmp_path, flinklets):
    f = suspended(flinklets, name="first")
    first = f.status()
    second_dir = tmp_path / "second"
    second_dir.mkdir()
    g = Flinklet(second_dir, name="second", job={"state": "suspended"},
                 conf={"flinklet.http.address": f"127.0.0.1:{f.http_port}"})
    p = subprocess.Popen(g.argv(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        raise AssertionError(f"the second flinklet did not exit: it shares the port:\n{out[-3000:]}")
    assert p.returncode == 3, out
    assert f"127.0.0.1:{f.http_port}" in out and "in use" in out, out
    # every request still reaches the first one, with its own job
    for _ in range(20):
        code, body = answered(f.http_port, "/status")
        st = json.loads(body)
        assert code == 200 and st["name"] == "first" and st["jobStatus"]["jobId"] == first["jobStatus"]["jobId"]
        assert st["supervisor"]["pid"] == f.proc.pid
    alive(f)


def test_the_bearer_scheme_is_case_insensitive(flinklets):
    f = suspended(flinklets)
    token = f.token()
    port = f.http_port
    for header in (f"bearer {token}", f"BEARER {token}", f"Bearer  {token}"):
        code, _ = request(port, "/api/v1/suspend", method="POST", headers=f"Authorization: {header}\r\n".encode())
        assert code == 202, header
    for header in (f"Bearer{token}", f"Basic {token}", f"Bearer {token[:-1]}", f"bearer {token}x", "Bearer"):
        code, _ = request(port, "/api/v1/suspend", method="POST", headers=f"Authorization: {header}\r\n".encode())
        assert code == 401, header
    assert metric(port, "flinklet_api_unauthorized_total") == 5
    assert f.status()["lifecycleState"] == "SUSPENDED"


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback (::1)")
def test_ipv6_and_dual_stack_binds(tmp_path, flinklets):
    f = suspended_at(flinklets, "[::1]:{port}")
    assert request(f.http_port, host="::1")[0] == 200
    assert f.status()["supervisor"]["httpAddress"] == f"[::1]:{f.http_port}"
    r = subprocess.run([BIN, "status", "--url", f"http://[::1]:{f.http_port}", "--live"], timeout=60)
    assert r.returncode == 0
    f.stop()

    g = suspended_at(flinklets, "[::]:{port}", host="::1")
    assert request(g.http_port, host="::1")[0] == 200
    if socket.has_dualstack_ipv6():
        assert request(g.http_port, host="127.0.0.1")[0] == 200, "[::] takes IPv4 too"
    # the command line finds it through the state directory ([::] is where it listens; it connects to [::1])
    r = subprocess.run([BIN, "suspend", "--wait", "--state-dir", g.state], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def suspended_at(flinklets, address, host="::1"):
    """A suspended flinklet listening on address ({port}: a free port)."""
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port = s.getsockname()[1]
    f = flinklets(job={"state": "suspended"}, conf={"flinklet.http.address": address.format(port=port)})
    f.http_port = port
    f.start()
    wait_for(lambda: (st := f.status()) and st["lifecycleState"] == "SUSPENDED" and request(port, host=host), 60,
             f"flinklet serving on {address.format(port=port)}")
    return f

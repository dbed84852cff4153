"""/metrics under 64 slow readers (issue 36, item 2): the fake Flink's reporter answers a 4 MiB scrape of 10,000
families (the largest flinklet takes), and 64 clients ask /metrics at once and read it 1 KiB at a time with a small
receive buffer, as a slow or hostile scraper would. flinklet sends every one of them from its one kept copy of the
scrape: its resident memory grows by far less than one copy per reader (64 x 4 MiB = 256 MiB; flinklet's share of
the pod's budget is 16 MiB), a reader still gets the whole, valid answer, and the endpoint keeps answering."""
import os
import re
import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conftest import wait_for

READERS = 64
WHOLE = 8  # of them read to the end
FAMILIES = 10000
MIB = 1 << 20
# The growth allowed over the RSS before the readers: the kept scrape and one retired one still being sent (2 x 4
# MiB), MHD's memory per connection (64 KiB pool, 16 KiB block of the response: 5 MiB for 64), and room for the
# allocator's slack; 8 times below the 256 MiB of one copy per reader.
GROWTH_MAX = 32 * MIB


def scrape_text():
    """10,000 gauge families of Flink's reporter's shape, just under the 4 MiB cap."""
    lines = []
    for i in range(FAMILIES):
        name = f"flink_taskmanager_job_task_operator_metric{i}"
        lines.append(f"# HELP {name} metric{i} (scope: taskmanager_job_task_operator)\n# TYPE {name} gauge\n"
                     f'{name}{{task_name="Source:_clicks____Map",operator_name="Map_{i % 97}_' + "x" * 124
                     + f'",subtask_index="0",}} {i}.5\n')
    text = "".join(lines).encode()
    n = len(text)
    assert 3.9 * MIB < n < 4 * MIB, n
    return text


class Reporter(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port, body):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(handler):
                handler.send_response(200)
                handler.send_header("Content-Type", "text/plain; version=0.0.4")
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                try:
                    handler.wfile.write(body)
                except OSError:  # flinklet gone at the test's end
                    pass

        super().__init__(("127.0.0.1", port), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1)) * 1024


def get(sup, path, timeout=5):
    with urllib.request.urlopen(f"http://{sup.conf['flinklet.http.address']}{path}", timeout=timeout) as r:
        return r.read()


def slow_reader(address):
    host, port = address.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: the window it offers stays small
    s.connect((host, int(port)))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: flinklet\r\nConnection: close\r\n\r\n")
    s.setblocking(False)
    return s


def test_slow_readers_share_one_copy_of_flinks_scrape(server, supervisors):
    sup = supervisors(server, conf={"flinklet.http.max-connections": str(READERS + 8),
                                    "flinklet.http.max-connections-per-ip": str(READERS + 8),
                                    "flinklet.http.connection-timeout": "30 s"})
    (sup.flink_home / "lib" / "flinklet-metrics-reporter.jar").write_bytes(b"")  # flinklet only looks for it
    sup.start()
    wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE", 20, "STABLE", interval=0.1)
    with open(os.path.join(sup.state, "conf", "config.yaml")) as f:
        port = int(re.search(r'"metrics\.reporter\.flinklet\.port": "(\d+)"', f.read()).group(1))
    body = scrape_text()
    rep = Reporter(port, body)
    readers = []
    try:
        wait_for(lambda: b"\nflinklet_flink_metrics_up 1\n" in get(sup, "/metrics"), 30,
                 "Flink's families served from the reporter", interval=0.1)
        time.sleep(6)  # a scrape more: the loop's steady state, two scrapes' allocations made
        before = rss(sup.proc.pid)
        readers = [slow_reader(sup.conf["flinklet.http.address"]) for _ in range(READERS)]
        got = [b"" for _ in readers]
        peak = before
        t_end = time.monotonic() + 12  # two more scrapes are due meanwhile
        while time.monotonic() < t_end:
            for i, s in enumerate(readers):
                try:
                    got[i] += s.recv(1024)
                except BlockingIOError:
                    pass
            peak = max(peak, rss(sup.proc.pid))
            time.sleep(0.1)
        assert all(g.startswith(b"HTTP/1.1 200") for g in got), [g[:40] for g in got if not g.startswith(b"HTTP")]
        growth = peak - before
        print(f"flinklet RSS {before / MIB:.1f} MiB before the readers, peak {peak / MIB:.1f} MiB with "
              f"{READERS} slow readers: +{growth / MIB:.1f} MiB")
        assert growth < GROWTH_MAX, (f"flinklet's RSS grew by {growth / MIB:.0f} MiB with {READERS} slow readers of "
                                     f"a {len(body) / MIB:.1f} MiB /metrics (from {before / MIB:.1f} MiB)")
        # the endpoint answers meanwhile, Flink's families whole in a fast client's answer
        fast = get(sup, "/metrics", timeout=10)
        assert fast.endswith(body) and b"\nflinklet_flink_metrics_up 1\n" in fast
        # and a slow reader gets the whole answer once it reads on: flinklet's families, then the scrape (8 of them
        # read to the end: through their small windows all 64 would take a minute)
        open_ = set(range(WHOLE))
        for s in readers[WHOLE:]:
            s.close()
        t_end = time.monotonic() + 60
        while open_ and time.monotonic() < t_end:
            for i in list(open_):
                try:
                    chunk = readers[i].recv(1 << 16)
                except BlockingIOError:
                    continue
                got[i] += chunk
                if not chunk:
                    open_.discard(i)
            time.sleep(0.01)
        assert not open_, f"{len(open_)} readers not done"
        for i in range(WHOLE):
            head, _, text = got[i].partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", head).group(1))
            assert len(text) == length and text.endswith(body), f"reader {i}: {len(text)} bytes of {length}"
        assert sup.alive()
    finally:
        for s in readers:
            s.close()
        rep.shutdown()
        rep.server_close()

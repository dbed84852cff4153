"""Flink's metrics through flinklet's /metrics (issue 28, item 2) when the reporter misbehaves: flinklet scrapes a
stand-in for its loopback reporter on the port it gave the (fake) JVM. Garbage, a cut-off answer, one over the size
cap, one with a name of flinklet's own, one of another job (another JVM's reporter on the port), or no answer in
time: /metrics stays one valid exposition with flinklet's
families, without Flink's, answered at once (the loop never waits on the reporter), flinklet_flink_metrics_up 0 and
the failure counted and said; a good answer again brings Flink's families back."""
import os
import re
import shutil
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client.parser import text_string_to_metric_families

from conftest import wait_for

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOOD = ("# HELP flink_taskmanager_job_task_numRecordsInPerSecond numRecordsInPerSecond (scope: taskmanager_job_task)\n"
        "# TYPE flink_taskmanager_job_task_numRecordsInPerSecond gauge\n"
        'flink_taskmanager_job_task_numRecordsInPerSecond{job_name="fake",task_name="Source:_fake",subtask_index="0",} 42.0\n'
        "# HELP flink_jobmanager_job_lastCheckpointSize lastCheckpointSize (scope: jobmanager_job)\n"
        "# TYPE flink_jobmanager_job_lastCheckpointSize gauge\n"
        'flink_jobmanager_job_lastCheckpointSize{job_name="fake",} 7436.0\n')
ANSWERS = {
    "good": GOOD,
    "garbage": "<html><body>502 Bad Gateway</body></html>\n",
    "cut": GOOD[:-1],
    "clash": GOOD + "# TYPE flinklet_jvm_up gauge\nflinklet_jvm_up 0\n",
    "split": GOOD + 'flink_taskmanager_job_task_numRecordsInPerSecond{task_name="late",} 1.0\n',
    # another JVM's reporter on the port (another supervisor's job, on a shared host network)
    "other": GOOD + "# TYPE flink_jobmanager_job_uptime gauge\n"
                    'flink_jobmanager_job_uptime{job_id="ffffffffffffffffffffffffffffffff",job_name="x",} 9.0\n',
}


class Reporter(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port):
        self.mode = "good"
        self.asked = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(handler):
                self.asked += 1
                mode = self.mode
                if mode == "slow":
                    time.sleep(8)
                    mode = "good"
                if mode == "huge":  # 5 MiB of well-formed lines: over the 4 MiB cap
                    handler.send_response(200)
                    handler.send_header("Content-Type", "text/plain")
                    handler.end_headers()
                    line = b"# a comment line of Flink's reporter, repeated\n"
                    try:
                        for _ in range((5 << 20) // len(line)):
                            handler.wfile.write(line)
                    except OSError:
                        pass
                    return
                body = ANSWERS[mode].encode()
                handler.send_response(200)
                handler.send_header("Content-Type", "text/plain; version=0.0.4")
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

        super().__init__(("127.0.0.1", port), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def scrape(sup):
    t0 = time.monotonic()
    with urllib.request.urlopen(f"http://{sup.conf['flinklet.http.address']}/metrics", timeout=5) as r:
        text = r.read().decode()
    took = time.monotonic() - t0
    got = {}
    for fam in text_string_to_metric_families(text):  # fails on anything Prometheus' own parser would not take
        for s in fam.samples:
            got.setdefault(s.name, []).append(s.value)
    families = re.findall(r"^# TYPE (\S+) ", text, re.M)
    assert len(families) == len(set(families)), "a family declared twice"
    promtool = shutil.which("promtool") or os.path.join(ROOT, "build", "tools", "promtool")
    if os.access(promtool, os.X_OK):
        import subprocess
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        assert r.returncode in (0, 3) and "error" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    return got, took


def test_a_misbehaving_reporter_never_breaks_metrics(server, supervisors):
    sup = supervisors(server)
    (sup.flink_home / "lib" / "flinklet-metrics-reporter.jar").write_bytes(b"")  # flinklet only looks for it
    sup.start()
    wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE", 20, "STABLE", interval=0.1)
    with open(os.path.join(sup.state, "conf", "config.yaml")) as f:
        conf = f.read()
    port = int(re.search(r'"metrics\.reporter\.flinklet\.port": "(\d+)"', conf).group(1))
    assert "FlinkletLoopbackReporterFactory" in conf
    # below the kernel's ephemeral range, where no outgoing connection takes it before the reporter binds it
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        assert port < int(f.read().split()[0]), port
    rep = Reporter(port)
    try:
        good = wait_for(lambda: (g := scrape(sup)[0])["flinklet_flink_metrics_up"] == [1] and g, 20,
                        "Flink's families served from the reporter", interval=0.1)
        assert good["flink_taskmanager_job_task_numRecordsInPerSecond"] == [42.0]
        assert good["flinklet_jvm_up"] == [1]
        for mode in ("garbage", "cut", "clash", "split", "other", "huge", "slow"):
            before = scrape(sup)[0]["flinklet_flink_metrics_scrape_failures_total"][0]
            rep.mode = mode

            def failed():
                got, took = scrape(sup)
                # the loop never waits on the reporter: /metrics answers at once even while a scrape hangs
                assert took < 2, f"/metrics took {took:.1f} s with a {mode} reporter"
                return got if got["flinklet_flink_metrics_scrape_failures_total"][0] > before else None

            got = wait_for(failed, 30, f"a failed scrape of a {mode} reporter", interval=0.1)
            assert got["flinklet_flink_metrics_up"] == [0], mode
            assert not [n for n in got if n.startswith("flink_")], (mode, sorted(got)[:5])
            assert got["flinklet_jvm_up"] == [1] and "flinklet_lifecycle_state" in got, mode
            rep.mode = "good"
            wait_for(lambda: scrape(sup)[0]["flinklet_flink_metrics_up"] == [1], 30,
                     f"Flink's families back after the {mode} reporter answers well", interval=0.1)
        logs = sup.logs()
        for said in ("the reporter's answer is not Prometheus text: line 1:", "the last line has no end",
                     "flinklet_jvm_up is in flinklet's own namespace", "are not together",
                     "the reporter's answer is over 4 MiB", "did not answer within 3 s",
                     "is not this job's: it reports job ffffffffffffffffffffffffffffffff, not "):
            assert said in logs, said
        assert sup.alive()
    finally:
        rep.shutdown()
        rep.server_close()

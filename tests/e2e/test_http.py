"""The supervisor's HTTP endpoint, /metrics, the control API and CLI, and systemd's notify protocol,
against a running flinklet with the real job."""
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

import conftest
from conftest import BIN, wait_for


def metrics(f):
    code, text = f.http("/metrics")
    assert code == 200
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = s.name + ("{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items())) + "}" if s.labels else "")
            out[key] = s.value
    return out


def test_health_readiness_status_and_metrics(flinklets):
    f = flinklets().start()
    f.wait_stable()
    st = f.wait_checkpoint(1)
    assert f.http("/healthz")[0] == 200
    code, body = f.http("/readyz")
    assert code == 200 and json.loads(body)["jobState"] == "RUNNING"
    code, body = f.http("/status")
    live = json.loads(body)
    assert code == 200 and live["jobStatus"]["jobId"] == st["jobStatus"]["jobId"]
    assert live["supervisor"]["httpAddress"] == f"127.0.0.1:{f.http_port}"
    assert f.http("/nope")[0] == 404
    assert f.http("/status", method="POST")[0] == 405

    m = metrics(f)
    assert m["flinklet_jvm_up"] == 1 and m["flinklet_job_running"] == 1
    assert m['flinklet_lifecycle_state{state="STABLE"}'] == 1 and m['flinklet_lifecycle_state{state="FAILED"}'] == 0
    assert m['flinklet_restored_from{kind="none"}'] == 1
    assert m["flinklet_jvm_restarts_total"] == 0
    assert 0 <= m["flinklet_last_checkpoint_age_seconds"] < 60
    assert m["flinklet_flink_checkpoints_completed"] >= 1
    assert m["flinklet_process_resident_memory_bytes"] > 0
    assert {k for k in m if k.startswith("flinklet_vertex_parallelism")}, "a series per job vertex"
    assert all(v == 2 for k, v in m.items() if k.startswith("flinklet_vertex_parallelism"))

    # after a kill -9 of the JVM the figures move
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    wait_for(lambda: f.status()["jvm"]["restarts"] == 1 and f.status()["lifecycleState"] == "STABLE", 90,
             "the restart")
    m = metrics(f)
    assert m["flinklet_jvm_restarts_total"] == 1 and m['flinklet_restored_from{kind="checkpoint"}'] == 1


def test_control_api_requires_the_token_and_changes_nothing_without_it(flinklets):
    f = flinklets().start()
    f.wait_stable()
    for token in (None, "wrong-token-of-some-length", f.token() + "x"):
        code, _ = f.http("/api/v1/savepoint", method="POST", token=token, body=b"")
        assert code == 401, token
    code, _ = f.http("/api/v1/suspend", method="POST", body=b"")
    assert code == 401
    time.sleep(3)
    st = f.status()
    assert st["jobStatus"]["savepointInfo"]["savepointHistory"] == [] and st["lifecycleState"] == "STABLE"
    assert metrics(f)["flinklet_api_unauthorized_total"] == 4
    # an oversized request is refused
    code, _ = f.http("/api/v1/savepoint", method="POST", token=f.token(), body=b"x" * 10000)
    assert code == 413
    assert f.status()["jobStatus"]["savepointInfo"]["savepointHistory"] == []


def test_post_savepoint_and_cli_control(flinklets):
    f = flinklets().start()
    f.wait_stable()
    code, body = f.http("/api/v1/savepoint", method="POST", token=f.token(), body=b"")
    assert code == 202, body
    st = wait_for(lambda: (s := f.status())["jobStatus"]["savepointInfo"]["savepointHistory"] and s, 60,
                  "the API savepoint")
    sp = st["jobStatus"]["savepointInfo"]["savepointHistory"][0]
    assert sp["triggerType"] == "MANUAL"

    # the CLI finds the endpoint and the token through the state directory
    r = subprocess.run([BIN, "savepoint", "--wait", "--state-dir", f.state], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("file:") and r.stdout.strip() != sp["location"]
    assert len(f.status()["jobStatus"]["savepointInfo"]["savepointHistory"]) == 2
    r = subprocess.run([BIN, "checkpoint", "--wait", "--state-dir", f.state], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert f.status()["jobStatus"]["checkpointInfo"]["checkpointHistory"][-1]["triggerType"] == "MANUAL"

    r = subprocess.run([BIN, "suspend", "--wait", "--state-dir", f.state], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    st = f.status()
    assert st["lifecycleState"] == "SUSPENDED" and st["jvm"]["pid"] == 0
    assert f.http("/readyz")[0] == 503 and f.http("/healthz")[0] == 200
    r = subprocess.run([BIN, "resume", "--wait", "--url", f"http://127.0.0.1:{f.http_port}", "--token-file",
                        os.path.join(f.state, "http.token")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f.status()["restoredFrom"]["kind"] == "savepoint"
    r = subprocess.run([BIN, "status", "--url", f"http://127.0.0.1:{f.http_port}", "--ready"])
    assert r.returncode == 0


class NotifySocket:
    """A unix datagram socket standing in for systemd's NOTIFY_SOCKET, recording what arrives and when."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.messages = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            self.messages.append((time.time() * 1000, data.decode()))

    def has(self, line):
        return [t for t, m in self.messages if line in m.split("\n")]

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def test_sd_notify_ready_watchdog_and_stopping(tmp_path, flinklets):
    ns = NotifySocket(str(tmp_path / "notify.sock"))
    try:
        f = flinklets()
        f.start(env={"NOTIFY_SOCKET": ns.path, "WATCHDOG_USEC": "1000000"})
        st = f.wait_stable()
        running_at = [e for e in f.events() if e["type"] == "JobRunning"][0]["timeMs"]
        ready = wait_for(lambda: ns.has("READY=1"), 10, "READY=1")
        assert ready[0] >= running_at - 50, "READY=1 only once the job is RUNNING"
        assert any(m.startswith("STATUS=") for _, m in ns.messages)
        wait_for(lambda: len(ns.has("WATCHDOG=1")) >= 3, 10, "watchdog pings while healthy")
        f.signal(signal.SIGTERM)
        assert f.wait_exit(30) == 0
        stopping = [m for _, m in ns.messages if "STOPPING=1" in m.split("\n")]
        assert stopping and "EXTEND_TIMEOUT_USEC=" in stopping[0]
        del st
    finally:
        ns.close()


def test_no_watchdog_while_waiting_for_an_unusable_jar(tmp_path, flinklets):
    """A JVM that crashes and cannot be started again (its jar is no jar any more) leaves flinklet waiting for
    the jar (JarUnusable): the job is down, so systemd's watchdog must see it (docs/deployment.md, systemd: a
    crash loop ends in `failed`); pings come back once the jar does and the job runs."""
    jar = tmp_path / "usrlib" / "job.jar"
    jar.parent.mkdir()
    shutil.copy(conftest.JOBS_JAR, jar)
    good = jar.read_bytes()
    ns = NotifySocket(str(tmp_path / "notify.sock"))
    try:
        f = flinklets(jar=str(jar))
        f.start(env={"NOTIFY_SOCKET": ns.path, "WATCHDOG_USEC": "1000000"})
        f.wait_stable()
        wait_for(lambda: ns.has("WATCHDOG=1"), 10, "watchdog pings while healthy")
        jar.write_bytes(b"not a jar\n")
        os.kill(f.status()["jvm"]["pid"], signal.SIGKILL)
        unusable = wait_for(lambda: [e for e in f.events() if e["type"] == "JarUnusable"], 60, "JarUnusable")
        t0 = unusable[0]["timeMs"]
        time.sleep(4)
        pings = [t for t in ns.has("WATCHDOG=1") if t > t0 + 600]
        assert pings == [], "no WATCHDOG=1 while waiting for an unusable jar"
        jar.write_bytes(good)
        wait_for(lambda: [e for e in f.events() if e["type"] == "JarUsable"], 30, "JarUsable")
        f.wait_stable()
        t1 = time.time() * 1000
        wait_for(lambda: [t for t in ns.has("WATCHDOG=1") if t > t1], 10, "pings again once the job runs")
    finally:
        ns.close()


def test_no_watchdog_while_crash_looping(tmp_path, flinklets):
    ns = NotifySocket(str(tmp_path / "notify.sock"))
    try:
        f = flinklets(job={"args": ["--exit-at-start", "--output", "OUT"]},
                      conf={"flinklet.restart.backoff.initial": "6 s", "flinklet.restart.max-attempts": "5"})
        f.start(env={"NOTIFY_SOCKET": ns.path, "WATCHDOG_USEC": "1000000"})
        scheduled = wait_for(lambda: [e for e in f.events() if e["type"] == "RestartScheduled"], 60, "a backoff")
        t0 = scheduled[0]["timeMs"]
        time.sleep(5)
        pings = [t for t in ns.has("WATCHDOG=1") if t0 + 600 < t < t0 + 5000]
        assert pings == [], "no WATCHDOG=1 while the job is down after a crash"
        assert not ns.has("READY=1")
    finally:
        ns.close()

"""One scrape for everything (issue 28, item 2): flinklet's /metrics carries Flink's own job metrics beside its own,
taken from flinklet's Prometheus reporter in the real MiniCluster JVM, which listens on loopback only. What a user
relies on: a real stateful job's throughput, busy and back-pressured time and checkpoints under Flink's names and
labels (job_name too) on flinklet's port; the whole answer passes `promtool check metrics`; nothing of Flink's
listens on another interface; while the JVM is down Flink's families are absent and flinklet's stay; a user's own
reporter configuration wins."""
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from conftest import FLINK_HOME, free_port, wait_for

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REPORTER_JAR = "flinklet-metrics-reporter.jar"

# Flink's job metrics the dashboard and the status page chart, as Flink's reporter names them
JOB_METRICS = [
    "flink_taskmanager_job_task_numRecordsInPerSecond",
    "flink_taskmanager_job_task_numRecordsOutPerSecond",
    "flink_taskmanager_job_task_numRecordsOut",
    "flink_taskmanager_job_task_busyTimeMsPerSecond",
    "flink_taskmanager_job_task_backPressuredTimeMsPerSecond",
    "flink_jobmanager_job_lastCheckpointDuration",
    "flink_jobmanager_job_lastCheckpointSize",
]


def promtool():
    found = shutil.which("promtool") or os.path.join(ROOT, "build", "tools", "promtool")
    assert os.access(found, os.X_OK), "promtool is missing (scripts/deps.sh test extracts it into build/tools/)"
    return found


def check_with_promtool(text):
    """promtool's verdict on a scrape: it must parse (exit 0, or 3 for lint findings only); the only lint findings
    allowed are about Flink's camelCase names (flinklet keeps Flink's names as its reporter gives them), none about a
    flinklet_ family."""
    r = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode in (0, 3), f"promtool check metrics exited {r.returncode}:\n{out[-3000:]}"
    findings = [line for line in out.splitlines() if line.strip()]
    assert all(line.startswith("flink_") and "camelCase" in line for line in findings), \
        [line for line in findings if not (line.startswith("flink_") and "camelCase" in line)][:10]
    return findings


def scrape(f):
    code, text = f.http("/metrics", timeout=10)
    assert code == 200
    return text


def samples(text):
    """{name: [sample, ...]} of a scrape, parsed by Prometheus' own client library."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def listeners(port):
    """The local addresses (hex, as /proc/net/tcp{,6} has them) listening on port."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                fields = line.split()
                addr, hport = fields[1].rsplit(":", 1)
                if int(hport, 16) == port and fields[3] == "0A":  # LISTEN
                    found.append(addr)
    return found


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def test_flinks_job_metrics_on_flinklets_port(flinklets):
    assert os.path.exists(os.path.join(FLINK_HOME, "lib", REPORTER_JAR)), \
        f"{FLINK_HOME}/lib has no {REPORTER_JAR}: make flink-lib builds it (java/reporter)"
    f = flinklets().start()
    f.wait_stable()
    f.wait_checkpoint(2)

    def with_job_metrics():
        text = scrape(f)
        got = samples(text)
        # the job's vertices have moved records, and Flink's checkpoint gauges have a checkpoint behind them
        moving = [s for s in got.get("flink_taskmanager_job_task_numRecordsOutPerSecond", []) if s.value > 0]
        sized = [s for s in got.get("flink_jobmanager_job_lastCheckpointSize", []) if s.value > 0]
        return (text, got) if all(m in got for m in JOB_METRICS) and moving and sized else None

    text, got = wait_for(with_job_metrics, 90, "Flink's job metrics with records and a checkpoint in /metrics")
    # per vertex: both vertices of StatefulCounter, with Flink's labels (job_name among them)
    vertices = {s.labels["task_name"] for s in got["flink_taskmanager_job_task_numRecordsInPerSecond"]}
    assert len(vertices) == 2, vertices
    assert any(v.startswith("Source") for v in vertices), vertices
    for s in got["flink_taskmanager_job_task_busyTimeMsPerSecond"]:
        assert s.labels["job_name"] == "StatefulCounter" and "subtask_index" in s.labels
        assert 0 <= s.value <= 1000
    assert {s.labels["job_id"] for s in got["flink_jobmanager_job_lastCheckpointDuration"]} == {f.status()["jobStatus"]["jobId"]}
    # flinklet's own families are in the same answer, and it says Flink's are
    assert got["flinklet_flink_metrics_up"][0].value == 1
    assert got["flinklet_jvm_up"][0].value == 1 and "flinklet_last_checkpoint_id" in got
    # one valid exposition as a whole: each family once (Prometheus' parser above), and promtool agrees
    families = re.findall(r"^# TYPE (\S+) ", text, re.M)
    assert len(families) == len(set(families))
    check_with_promtool(text)

    # the reporter listens on loopback only
    code, body = f.http("/jobmetrics")
    assert code == 200
    jm = json.loads(body)
    assert jm["enabled"] and jm["up"] and jm["off"] is None
    port = jm["port"]
    assert f.status()["supervisor"]["flinkMetrics"] == f"127.0.0.1:{port}"
    addrs = listeners(port)
    assert addrs and set(addrs) <= LOOPBACK, f"Flink's reporter on port {port} listens on {addrs}"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert b"flink_jobmanager_job_lastCheckpointDuration" in r.read()
    # the status page's timeline: per vertex records per second and the checkpoints
    assert any(e.get("lastCheckpointSize", 0) > 0 and len(e["vertices"]) == 2 for e in jm["timeline"]), jm["timeline"][-3:]

    # the JVM dies: Flink's families leave /metrics at once, flinklet's stay; the next JVM's come back
    old_pid = f.status()["jvm"]["pid"]
    os.kill(old_pid, signal.SIGKILL)

    def down():
        got = samples(scrape(f))
        return got if got["flinklet_flink_metrics_up"][0].value == 0 else None

    got = wait_for(down, 30, "flinklet_flink_metrics_up 0 after the JVM was killed")
    assert not [n for n in got if n.startswith("flink_")], sorted(n for n in got if n.startswith("flink_"))[:5]
    assert "flinklet_jvm_restarts_total" in got and "flinklet_lifecycle_state" in got
    wait_for(lambda: samples(scrape(f))["flinklet_flink_metrics_up"][0].value == 1 or None, 120,
             "Flink's metrics back with the next JVM")
    assert f.status()["jvm"]["pid"] != old_pid


def test_a_users_own_reporter_wins(flinklets):
    user_port = free_port()
    f = flinklets(conf={
        "metrics.reporter.prom.factory.class": "org.apache.flink.metrics.prometheus.PrometheusReporterFactory",
        "metrics.reporter.prom.port": str(user_port),
    }).start()
    f.wait_stable()
    # the user's reporter serves Flink's metrics where the user said
    def users():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{user_port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            return None
    assert "flink_jobmanager_" in wait_for(users, 60, "the user's Prometheus reporter")
    # flinklet adds none of its own: its /metrics has its own families only, and says why
    got = samples(scrape(f))
    assert got["flinklet_flink_metrics_up"][0].value == 0
    assert not [n for n in got if n.startswith("flink_")]
    with open(os.path.join(f.state, "conf", "config.yaml")) as fh:
        conf = fh.read()
    assert "metrics.reporter.flinklet" not in conf and "metrics.reporter.prom.port" in conf
    jm = json.loads(f.http("/jobmetrics")[1])
    assert not jm["enabled"] and "metrics.reporter.prom" in jm["off"]
    assert "the configuration sets metrics.reporter.prom" in f.logs()
    assert f.status()["supervisor"]["flinkMetrics"].startswith("off: the configuration sets metrics.reporter.prom")

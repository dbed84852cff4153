"""A stall of the supervisor itself (issue 35, item 2: its container paused, SIGSTOP of flinklet, a debugger, a starved
host) is not the JVM's: the hang check counts polls that went unanswered while flinklet ran to send them, and the
deadlines that judge the JVM (the startup timeout, ...) run on flinklet's own time. The stall is said
(SupervisorStalled, with its length). Here flinklet is frozen with SIGSTOP against fakeflink's REST API, which goes on
answering (or not) meanwhile; tests/e2e/test_supervisor_stall.py does the same with the real MiniCluster."""
import os
import re
import signal
import time
import urllib.request

from conftest import wait_for


def types(sup):
    return [e["type"] for e in sup.new_events()]


def stable(sup):
    def ok():
        assert sup.alive(), f"flinklet exited {sup.proc.returncode}:\n{sup.logs()[-3000:]}"
        st = sup.own_status()
        return st if st and st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] > 0 else None
    return wait_for(ok, 30, "the job STABLE", interval=0.1)


def freeze(sup, seconds):
    """flinklet stopped (SIGSTOP) for `seconds`, then continued."""
    os.kill(sup.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(sup.proc.pid, signal.SIGCONT)


def stalled(sup):
    """The SupervisorStalled events since the start, each with the length it says (seconds)."""
    out = []
    for e in sup.new_events():
        if e["type"] == "SupervisorStalled":
            m = re.search(r"did not run for ([0-9.]+) s", e["message"])
            assert m, e["message"]
            out.append(float(m.group(1)))
    return out


def test_a_frozen_supervisor_does_not_kill_a_healthy_jvm(server, supervisors):
    """Frozen 7 s with a hang window of 2 s (10 polls of 200 ms): the first thing it does on waking is not a kill."""
    sup = supervisors(server, conf={"flinklet.health.rest-timeout": "2 s"}).start()
    pid = stable(sup)["jvm"]["pid"]
    freeze(sup, 7)
    # several hang windows later: the same JVM, never found hung, and the job followed again
    time.sleep(3)
    st = sup.own_status()
    t = types(sup)
    assert "JobUnhealthy" not in t and t.count("JvmStarted") == 1, t
    assert st["jvm"]["pid"] == pid and st["lifecycleState"] == "STABLE", st
    got = stalled(sup)
    assert got and 5 <= got[0] <= 30, got
    assert "did not run for" in sup.logs()  # the log line too
    with urllib.request.urlopen(f"http://{sup.conf['flinklet.http.address']}/metrics", timeout=5) as r:
        metrics = dict(line.split(" ", 1) for line in r.read().decode().splitlines() if line and line[0] != "#")
    assert metrics["flinklet_supervisor_stalls_total"] == "1", metrics
    assert 5 <= float(metrics["flinklet_supervisor_stalled_seconds_total"]) <= 30, metrics
    assert sup.stop() == 0


def test_a_hung_rest_api_is_still_found_after_a_stall(server, supervisors):
    """Flink's REST API stops answering, and flinklet is frozen meanwhile: once it runs again, the polls it sends
    go unanswered too, and the hang window's worth of them ends the JVM, said in polls."""
    sup = supervisors(server, conf={"flinklet.health.rest-timeout": "2 s",
                                    "kubernetes.operator.flink.client.timeout": "500 ms"}).start()
    pid = stable(sup)["jvm"]["pid"]
    server.fault = "timeout"
    freeze(sup, 7)
    wait_for(lambda: "JobUnhealthy" in types(sup) or None, 30, "the hung REST API found", interval=0.1)
    server.fault = None
    msg = [e["message"] for e in sup.new_events() if e["type"] == "JobUnhealthy"][0]
    assert "has not answered 10 polls in a row" in msg, msg
    assert stalled(sup), types(sup)
    wait_for(lambda: (st := sup.own_status()) and st["jvm"]["pid"] not in (0, pid)
             and st["lifecycleState"] == "STABLE", 30, "a new JVM STABLE", interval=0.1)
    assert sup.stop() == 0


def test_a_stall_does_not_count_against_a_starting_job(server, supervisors):
    """The startup timeout (4 s) runs on flinklet's own time: frozen 7 s while the job starts, flinklet wakes to a
    job that came up meanwhile, sees it RUNNING, and the timeout that fell inside the stall kills nothing."""
    server.job_state = "CREATED"
    sup = supervisors(server, conf={"flinklet.startup.timeout": "4 s"}).start()
    wait_for(lambda: sup.jvm_pid() > 0, 15, "the fake JVM started", interval=0.1)
    pid = sup.jvm_pid()
    os.kill(sup.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(7)
        server.job_state = "RUNNING"
    finally:
        os.kill(sup.proc.pid, signal.SIGCONT)
    st = stable(sup)
    assert st["jvm"]["pid"] == pid, st["jvm"]
    time.sleep(2)
    t = types(sup)
    assert "StartupTimeout" not in t and t.count("JvmStarted") == 1, t
    assert stalled(sup), t
    assert sup.stop() == 0

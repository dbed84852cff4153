"""`flinklet status --url URL --live` as the image's HEALTHCHECK runs it (issue 30, item 3): it asks the running
supervisor, so a supervisor stopped with SIGSTOP (a hung PID 1) fails the probe within the probe's own timeout (5 s),
where the state directory alone (its lock, status.json) still said live. A URL that does not answer is not taken
for a hang when the supervisor's status.json says it serves elsewhere (another port: asked there) or not at all
(flinklet.http.address off: answered from the state directory). The fake Flink of fakeflink.py and a fake java."""
import os
import signal
import subprocess
import time

from conftest import BIN, free_port, wait_for


def probe(sup, url, *flags):
    t0 = time.monotonic()
    r = subprocess.run([BIN, "status", "--url", url, "--live", "--state-dir", sup.state, *flags],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, time.monotonic() - t0, r.stderr


def running(sup):
    st = sup.status()
    return st and st["supervisor"]["pid"] == sup.proc.pid and st["lifecycleState"] == "STABLE" and st


def test_a_stopped_supervisor_fails_the_url_probe(server, supervisors):
    port = free_port()
    sup = supervisors(server, conf={"flinklet.http.address": f"0.0.0.0:{port}"}).start()
    wait_for(lambda: running(sup), 30, "the job running", interval=0.1)
    url = f"http://127.0.0.1:{port}"
    assert probe(sup, url)[0] == 0
    os.kill(sup.proc.pid, signal.SIGSTOP)
    try:
        rc, took, err = probe(sup, url)
        assert rc == 1, err
        assert took < 12, f"the probe took {took:.1f} s: a health check's timeout would have ended it first"
        # the state directory alone cannot see the hang (what the image's health check used to ask)
        r = subprocess.run([BIN, "status", "--live", "--state-dir", sup.state], capture_output=True, text=True)
        assert r.returncode == 0
    finally:
        os.kill(sup.proc.pid, signal.SIGCONT)
    assert probe(sup, url)[0] == 0
    assert sup.stop() == 0


def test_a_probe_url_of_another_port_asks_where_the_supervisor_serves(server, supervisors):
    port, wrong = free_port(), free_port()
    sup = supervisors(server, conf={"flinklet.http.address": f"127.0.0.1:{port}"}).start()
    wait_for(lambda: running(sup), 30, "the job running", interval=0.1)
    rc, took, err = probe(sup, f"http://127.0.0.1:{wrong}")
    assert rc == 0 and f"127.0.0.1:{port}" in err, err
    os.kill(sup.proc.pid, signal.SIGSTOP)
    try:
        assert probe(sup, f"http://127.0.0.1:{wrong}")[0] == 1  # and there it does not answer either
    finally:
        os.kill(sup.proc.pid, signal.SIGCONT)
    assert sup.stop() == 0
    # no supervisor at all: not live, whatever the URL
    assert probe(sup, f"http://127.0.0.1:{port}")[0] == 1


def test_a_probe_url_without_an_endpoint_is_answered_from_the_state_directory(server, supervisors):
    sup = supervisors(server, conf={"flinklet.http.address": "off"}).start()
    wait_for(lambda: running(sup), 30, "the job running", interval=0.1)
    rc, _, err = probe(sup, "http://127.0.0.1:8091")
    assert rc == 0 and "serves no HTTP endpoint" in err, err
    assert sup.stop() == 0
    assert probe(sup, "http://127.0.0.1:8091")[0] == 1

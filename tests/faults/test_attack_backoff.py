"""Attack tests (from docs/operations.md "Restarts and restore points" and docs/configuration.md only): the first
crash of a job that ran with every task running restarts at once, a crash loop backs off (initial, doubling, up
to max), the count resets after a stable period, the crash-loop limit. The JVM is the fault suite's fake java
(recording its spawns, crashing at once while a file exists) against fakeflink's REST API. The delays are read
from the RestartScheduled events and from the number of spawns, never measured. Run: make faults
FAULTS_ARGS='-k attack'."""
import json
import os
import re
import signal
import time

import pytest

from attack_kit import install_fake_java, spawn_count
from conftest import wait_for
from fakeflink import VERTEX, good_job

NOW = "restarting the JVM now"


def scheduled(sup):
    return [e["message"] for e in sup.events() if e["type"] == "RestartScheduled"]


def delay_s(message):
    """The delay a RestartScheduled message announces, in seconds (0 for "now")."""
    if message.startswith(NOW):
        return 0.0
    m = re.search(r"in ([0-9.]+) (ms|s|min)\b", message)
    assert m, f"no delay in {message!r}"
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "min": 60}[m.group(2)]


def running(sup, spawns, n):
    """The n-th spawned JVM is the one status.json has, with the job STABLE."""
    def ok():
        assert sup.alive(), f"flinklet exited {sup.proc.returncode}:\n{sup.logs()[-3000:]}"
        if spawn_count(spawns) < n:
            return None
        with open(spawns) as f:
            pid = int([line for line in f if line.strip()][n - 1].split()[0])
        st = sup.status()
        return st if st and st["jvm"]["pid"] == pid and st["lifecycleState"] == "STABLE" else None
    return wait_for(ok, 30, f"JVM #{n} STABLE", interval=0.1)


def kill_jvm_and_wait_schedule(sup):
    before = len(scheduled(sup))
    os.kill(sup.jvm_pid(), signal.SIGKILL)
    return wait_for(lambda: scheduled(sup)[before:] or None, 30, "a RestartScheduled event", interval=0.1)[0]


def partly_running_server(server, job_id_of):
    def fault(method, path):
        p = path.split("?")[0]
        if method != "GET":
            return None
        jid = job_id_of()
        if not jid:
            return None
        if p == "/jobs/overview":
            now = int(time.time() * 1000)
            return 200, json.dumps({"jobs": [{"jid": jid, "name": "fake", "state": "RUNNING", "start-time": now,
                                              "end-time": -1, "duration": 1, "last-modification": now,
                                              "tasks": {"running": 1, "deploying": 1, "total": 2, "canceling": 0,
                                                        "canceled": 0, "created": 0, "scheduled": 0,
                                                        "reconciling": 0, "finished": 0, "initializing": 0,
                                                        "failed": 0}}]}).encode()
        if p == f"/jobs/{jid}":
            job = good_job(jid)
            job["vertices"][0]["tasks"] = {"RUNNING": 1, "DEPLOYING": 1, "FINISHED": 0}
            job["vertices"][0]["status"] = "RUNNING"
            assert job["vertices"][0]["id"] == VERTEX
            return 200, json.dumps(job).encode()
        return None
    server.fault = fault


def job_id_reader(sup):
    def read():
        try:
            with open(os.path.join(sup.state, "job-id")) as f:
                return f.read().strip()
        except OSError:
            return None
    return read


LONG = {"flinklet.restart.backoff.initial": "1 h", "flinklet.restart.backoff.max": "1 h"}


# operations.md: "the first failure of a job that was RUNNING with every task running ... is restarted **at once**".
# A job Flink calls RUNNING while one of its tasks still deploys was never RUNNING with every task running: its
# crash is "a start that fails before RUNNING" and "waits flinklet.restart.backoff.initial".
def test_crash_while_not_every_task_runs_backs_off(server, supervisors):
    s = supervisors(server, conf=LONG)
    spawns = install_fake_java(s)
    partly_running_server(server, job_id_reader(s))
    s.start()
    wait_for(lambda: spawn_count(spawns) == 1 and s.jvm_pid() > 0, 30, "the JVM", interval=0.1)
    # flinklet has polled the half-running job a few times
    wait_for(lambda: len([r for r in server.requests if "/jobs/" in r[2]]) >= 3, 30, "polls", interval=0.1)
    msg = kill_jvm_and_wait_schedule(s)
    assert not msg.startswith(NOW), f"restarted at once although not every task ever ran: {msg}"
    assert (s.status() or {}).get("lifecycleState") != "STABLE"
    assert spawn_count(spawns) == 1


# operations.md: "after a crash of a running job, 0, 1 s, 2 s, 4 s, ...": the restart at once is followed by a new
# JVM; when that one dies before its job is RUNNING, the next restart waits backoff.initial.
def test_crash_of_the_restart_at_once_before_running_backs_off(server, supervisors):
    s = supervisors(server, conf=LONG)
    spawns = install_fake_java(s)
    s.start()
    running(s, spawns, 1)
    assert kill_jvm_and_wait_schedule(s).startswith(NOW)
    wait_for(lambda: spawn_count(spawns) == 2 and s.jvm_pid() > 0, 30, "JVM #2", interval=0.1)
    partly_running_server(server, job_id_reader(s))  # the new JVM's job does not get to RUNNING
    msg = kill_jvm_and_wait_schedule(s)
    assert not msg.startswith(NOW), msg
    assert delay_s(msg) == 3600, msg
    assert spawn_count(spawns) == 2


def crash_loop(server, supervisors, tmp_path):
    crash = str(tmp_path / "crash")
    open(crash, "w").close()
    s = supervisors(server, conf={"flinklet.restart.backoff.initial": "100 ms", "flinklet.restart.backoff.max":
                                  "400 ms", "flinklet.restart.max-attempts": "5"})
    spawns = install_fake_java(s, crash_file=crash)
    s.start()
    rc = s.proc.wait(60)
    return s, spawns, rc


# operations.md: every start that fails before RUNNING "waits flinklet.restart.backoff.initial (1 s), doubling up to
# flinklet.restart.backoff.max"; "after flinklet.restart.max-attempts (10) restarts that failed as well ... flinklet gives
# up: lifecycle FAILED, a CrashLoop event, exit code 1, so the platform sees it".
def test_a_start_that_always_fails_doubles_to_max_then_gives_up(server, supervisors, tmp_path):
    s, spawns, rc = crash_loop(server, supervisors, tmp_path)
    assert rc == 1, s.logs()[-3000:]
    assert s.status()["lifecycleState"] == "FAILED"
    assert "CrashLoop" in [e["type"] for e in s.events()]
    delays = [delay_s(m) for m in scheduled(s)]
    assert delays[:4] == [0.1, 0.2, 0.4, 0.4], delays


# configuration.md: "flinklet.restart.max-attempts | 10 | restarts of a JVM that keeps failing before the supervisor
# gives up: the JVM is started at most max-attempts + 1 times in a row without a stable run". (The attack found the
# earlier wording, "consecutive failed starts", one short of what flinklet does: the docs now say restarts, as the
# operator's restart attempts do.)
def test_max_attempts_is_the_number_of_restarts(server, supervisors, tmp_path):
    s, spawns, rc = crash_loop(server, supervisors, tmp_path)
    assert rc == 1
    assert spawn_count(spawns) == 5 + 1, f"max-attempts 5: {spawn_count(spawns)} failed starts"
    crash = [e["message"] for e in s.events() if e["type"] == "CrashLoop"]
    assert crash and "6 consecutive failed starts, 5 of them restarts" in crash[-1], crash


# operations.md: "A job that stays RUNNING for flinklet.restart.stable-period resets the count"; and the first
# failure "since the job last ran for flinklet.restart.stable-period ... is restarted at once". A crash loop, then a
# stable run, then a crash: at once again, and the earlier failures do not count towards max-attempts.
def test_crash_loop_then_stable_then_crash(server, supervisors, tmp_path):
    crash = str(tmp_path / "crash")
    s = supervisors(server, conf={"flinklet.restart.backoff.initial": "100 ms", "flinklet.restart.backoff.max":
                                  "200 ms", "flinklet.restart.stable-period": "1 s",
                                  "flinklet.restart.max-attempts": "4"})
    spawns = install_fake_java(s, crash_file=crash)
    s.start()
    running(s, spawns, 1)
    assert kill_jvm_and_wait_schedule(s).startswith(NOW)
    running(s, spawns, 2)
    # two failed starts: the crash loop (the count is now 3 of 4 before a reset)
    open(crash, "w").close()
    assert not kill_jvm_and_wait_schedule(s).startswith(NOW)
    wait_for(lambda: spawn_count(spawns) >= 4, 30, "two failed starts", interval=0.1)
    os.unlink(crash)
    n = spawn_count(spawns)
    running(s, spawns, n + 1)
    time.sleep(3)  # > stable-period: not an assertion on time, the time the job runs
    assert s.status()["lifecycleState"] == "STABLE"
    open(crash, "w").close()  # the restart after this crash fails, and the next: a new crash loop
    msg = kill_jvm_and_wait_schedule(s)
    assert msg.startswith(NOW), f"the first crash after a stable period backed off: {msg}"
    # and the crash loop before the stable run no longer counts: two more failed starts are not the limit
    wait_for(lambda: spawn_count(spawns) >= n + 3 or not s.alive(), 30, "failed starts after the reset", interval=0.1)
    os.unlink(crash)

    def back():
        assert s.alive(), f"flinklet gave up although the count was reset:\n{s.logs()[-3000:]}"
        st = s.status()
        return st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] > 0
    wait_for(back, 30, "STABLE again", interval=0.1)


# operations.md: the first failure "since flinklet started" is restarted at once: a new flinklet on a volume whose
# last run ended in a crash loop does not inherit the backoff.
def test_a_new_flinklet_restarts_its_first_crash_at_once(server, supervisors):
    s = supervisors(server, conf=LONG)
    spawns = install_fake_java(s)
    s.start()
    running(s, spawns, 1)
    assert kill_jvm_and_wait_schedule(s).startswith(NOW)
    running(s, spawns, 2)
    assert not kill_jvm_and_wait_schedule(s).startswith(NOW)
    assert s.stop() == 0
    s2 = supervisors(server, conf=LONG)
    server.state_dirs[:] = list(dict.fromkeys(server.state_dirs))
    spawns2 = install_fake_java(s2)
    s2.start()
    running(s2, spawns2, 1)
    msg = kill_jvm_and_wait_schedule(s2)
    assert msg.startswith(NOW), msg


# operations.md: "Any end of the JVM that was not asked for (a crash, `kill -9`, ..., a non-zero exit ...)"; "the
# first failure of a job that was RUNNING with every task running ... is restarted **at once**". The JVM of a
# running job exits 1 by itself (not a signal).
def test_a_running_jvm_that_exits_1_is_restarted_at_once(server, supervisors, tmp_path):
    s = supervisors(server, conf=LONG)
    spawns = install_fake_java(s, end_code=1)
    s.start()
    running(s, spawns, 1)
    before = len(scheduled(s))
    open(s.stop_file, "w").close()  # the fake JVM ends by itself, with exit code 1
    wait_for(lambda: scheduled(s)[before:] or None, 30, "a RestartScheduled event", interval=0.1)
    msg = scheduled(s)[before]
    assert msg.startswith(NOW), msg
    running(s, spawns, 2)


# operations.md: "Any end of the JVM that was not asked for (..., a hang found by the health check) is followed by a
# new JVM" and the first failure of a job that was RUNNING "is restarted **at once**". The REST API stops answering
# (flinklet.health.rest-timeout 2 s): flinklet kills the hung JVM and starts the next one without a backoff.
def test_a_hang_found_by_the_health_check_restarts_at_once(server, supervisors):
    s = supervisors(server, conf={**LONG, "flinklet.health.rest-timeout": "2 s",
                                  "kubernetes.operator.flink.client.timeout": "500 ms"})
    spawns = install_fake_java(s)
    s.start()
    running(s, spawns, 1)
    before = len(scheduled(s))
    server.fault = "timeout"
    wait_for(lambda: scheduled(s)[before:] or None, 60, "the hung JVM's RestartScheduled", interval=0.1)
    server.fault = None
    msg = scheduled(s)[before]
    assert msg.startswith(NOW), msg
    running(s, spawns, 2)


# operations.md: the restart at once is for "the first failure of a job that was RUNNING with every task running ...
# since the job last ran for flinklet.restart.stable-period"; "A job that stays RUNNING for stable-period resets the
# count". Time spent with a task still deploying is not running: a JVM whose job is half-running for longer than the
# stable period, then fully running for a moment, then crashes, is still in its crash loop.
def test_time_half_running_does_not_count_towards_the_stable_period(server, supervisors):
    s = supervisors(server, conf={**LONG, "flinklet.restart.stable-period": "2 s"})
    spawns = install_fake_java(s)
    s.start()
    running(s, spawns, 1)
    partly_running_server(server, job_id_reader(s))
    assert kill_jvm_and_wait_schedule(s).startswith(NOW)
    wait_for(lambda: spawn_count(spawns) == 2 and s.jvm_pid() > 0, 30, "JVM #2", interval=0.1)
    time.sleep(4)  # twice the stable period with one task deploying (the job's time, not an assertion)
    server.fault = None
    running(s, spawns, 2)
    msg = kill_jvm_and_wait_schedule(s)
    assert not msg.startswith(NOW), f"the time a task was still deploying counted as a stable run: {msg}"


# configuration.md: "flinklet.restart.max-attempts | 10 | ... (`0`: never give up)".
def test_max_attempts_0_never_gives_up(server, supervisors, tmp_path):
    crash = str(tmp_path / "crash")
    open(crash, "w").close()
    s = supervisors(server, conf={"flinklet.restart.backoff.initial": "10 ms", "flinklet.restart.backoff.max": "20 ms",
                                  "flinklet.restart.max-attempts": "0"})
    spawns = install_fake_java(s, crash_file=crash)
    s.start()
    wait_for(lambda: spawn_count(spawns) >= 15 or not s.alive(), 60, "15 failed starts", interval=0.1)
    assert s.alive(), f"gave up with max-attempts 0:\n{s.logs()[-2000:]}"
    os.unlink(crash)
    wait_for(lambda: s.alive() and s.status()["lifecycleState"] == "STABLE" and s.jvm_pid() > 0, 30, "STABLE at last",
             interval=0.1)

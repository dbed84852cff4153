"""What status.json and the events say about the JVM and the job (issue 27, defects 2 and 3, and the job's root
exception): the restart counter counts every JVM start on the volume, across flinklets, a flinklet killed with -9
included; no running task is claimed once the JVM is gone; a job that fails names Flink's root exception (GET
/jobs/:id/exceptions, in the shapes of Flink 1.20 and 2.x), bounded and redacted, in the status error and an event.
The fake Flink of fakeflink.py and a fake "java"; tests/e2e/test_job_failure.py has the real MiniCluster."""
import json
import os
import signal
import time
import urllib.request

import pytest

from conftest import wait_for
from fakeflink import NO_EXCEPTIONS, exception_entry


def stable(sup, st):
    """STABLE as written by this flinklet (not a status.json an earlier one left)."""
    return (st and st["supervisor"]["pid"] == sup.proc.pid and st["lifecycleState"] == "STABLE"
            and st["jvm"]["pid"] > 0 and st)


def metric(st, name):
    with urllib.request.urlopen(f"http://{st['supervisor']['httpAddress']}/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def counting_java(sup, starts, kill_marker):
    """The fake java, and a line in `starts` for every JVM started (the truth the counter is held to). While
    `kill_marker` exists, the JVM takes it away and kills its flinklet with -9 (flinklet's parent-death signal then
    ends this JVM too): the flinklet dies the moment its JVM runs, before or after it could record that."""
    with open(sup.java, "w") as f:
        f.write("#!/bin/sh\n"
                f"echo $$ >> '{starts}'\n"
                f"if [ -e '{kill_marker}' ]; then rm -f '{kill_marker}'; kill -9 $PPID; fi\n"
                f"while [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done\n"
                "exit 0\n")


def lines(path):
    with open(path) as f:
        return [x for x in f.read().splitlines() if x]


def test_the_restart_counter_counts_every_jvm_start_on_the_volume(server, supervisors, tmp_path):
    """Four JVM starts on one volume by three flinklets: the first killed with -9 by the moment its JVM started
    (before or after it recorded JvmStarted), the second killed with -9 while its job ran, the third restarting its
    JVM after a crash. jvm.starts is 4 and jvm.restarts (and flinklet_jvm_restarts_total) 3: the starts after the
    very first, whichever flinklet made them (the counter used to leave out each new flinklet's first JVM)."""
    state = str(tmp_path / "state")
    starts, marker = str(tmp_path / "jvm-starts"), str(tmp_path / "kill-flinklet")

    # 1: killed with -9 as soon as its JVM runs
    open(marker, "w").close()
    first = supervisors(server, state_dir=state)
    counting_java(first, starts, marker)
    first.start()
    assert first.proc.wait(60) == -signal.SIGKILL, first.logs()[-3000:]
    assert len(lines(starts)) == 1

    # 2: killed with -9 while its job runs
    second = supervisors(server, state_dir=state)
    counting_java(second, starts, marker)
    second.start()
    st = wait_for(lambda: stable(second, second.status()), 30, "the second flinklet's job STABLE", interval=0.1)
    assert st["jvm"]["restarts"] == 1 and st["jvm"]["starts"] == 2, st["jvm"]
    os.kill(second.proc.pid, signal.SIGKILL)  # (its JVM dies with it: the parent-death signal)
    second.proc.wait(30)

    # 3: its JVM crashes and is started again
    third = supervisors(server, state_dir=state)
    counting_java(third, starts, marker)
    third.start()
    st = wait_for(lambda: stable(third, third.status()), 30, "the third flinklet's job STABLE", interval=0.1)
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    st = wait_for(lambda: (s := third.status()) and stable(third, s) and s["jvm"]["pid"] != st["jvm"]["pid"] and s,
                  30, "the JVM restarted", interval=0.1)
    assert len(lines(starts)) == 4
    assert st["jvm"]["starts"] == 4, st["jvm"]
    assert st["jvm"]["restarts"] == 3, f"4 JVM starts on the volume, restarts {st['jvm']['restarts']}"
    assert metric(st, "flinklet_jvm_restarts_total") == 3
    # every JvmStarted on the volume is counted (the first flinklet may have died before it could record its own)
    assert len([e for e in third.events() if e["type"] == "JvmStarted"]) in (3, 4)
    assert third.stop() == 0


def test_a_launch_called_off_before_its_jvm_counts_no_start(server, supervisors, tmp_path):
    """A start is counted with the launch's intent, before the JVM runs; a launch that never gets a JVM (the jar
    is gone: nothing is spawned) adds nothing to jvm.starts, however often it is tried."""
    sup = supervisors(server, conf={"flinklet.restart.backoff.max": "200 ms"}).start()
    st = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE", interval=0.1)
    assert st["jvm"]["restarts"] == 0, st["jvm"]
    os.unlink(sup.jar)
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    wait_for(lambda: "JarUnusable" in [e["type"] for e in sup.events()], 30, "the launch held back: no jar",
             interval=0.1)
    after = sup.status()
    assert after["jvm"]["pid"] == 0 and after["jvm"]["restarts"] == 0 and after["jvm"]["starts"] == 1, after["jvm"]
    assert sup.stop() == 0


@pytest.mark.parametrize("upgrade_mode", ["last-state", "savepoint"])
def test_after_a_sigterm_stop_no_task_is_running(server, supervisors, tmp_path, upgrade_mode):
    """After a SIGTERM stop status.json claims no running task (the JVM is gone), the job is SUSPENDED (the stop's
    word), the JVM's pid is 0."""
    from volkit import make_savepoint
    sup = supervisors(server, upgrade_mode=upgrade_mode).start()
    st = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE", interval=0.1)
    assert st["jobStatus"]["tasks"]["running"] == 2, st["jobStatus"]

    def stop_with_savepoint():  # as Flink does: the savepoint, then the job and its JVM end
        server.savepoint_location = "file:" + make_savepoint(sup.state, st["jobStatus"]["jobId"])
        open(sup.stop_file, "w").close()
    server.on_stop = stop_with_savepoint
    try:
        assert sup.stop() == 0, sup.logs()[-3000:]
    finally:
        server.on_stop = None
    final = sup.status()
    assert final["jvm"]["pid"] == 0, final["jvm"]
    assert final["jobStatus"]["tasks"]["running"] == 0, f"no JVM, yet {final['jobStatus']['tasks']}"
    assert final["jobStatus"]["state"] == "SUSPENDED" and final["lifecycleState"] == "SUSPENDED", final


BOOM = "java.lang.RuntimeException: boom"


def trace(message, wrapped=False):
    """A stack trace as Flink's exception history holds it (ExceptionUtils.stringifyException)."""
    t = (f"{message}\n\tat dev.flinklet.jobs.StatefulCounter$Count.processElement(StatefulCounter.java:199)\n"
         "\tat org.apache.flink.streaming.runtime.tasks.StreamTask.invoke(StreamTask.java:770)\n")
    if wrapped:
        t = ("org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy\n"
             "\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure(x.java:1)\n"
             "Caused by: " + t + "\t... 12 more\n")
    return t


# GET /jobs/:id/exceptions as each Flink version answers it: 2.x has the history only; 1.20 also the deprecated
# top-level fields (root-exception: the job's failure cause, set once it FAILED)
def exceptions_2x(stack, ts):
    return {"exceptionHistory": {"entries": [exception_entry(stack, ts)], "truncated": False}}


def exceptions_120(stack, ts):
    body = exceptions_2x(stack, ts)
    body["exceptionHistory"]["entries"][0]["location"] = "localhost:41235"
    body.update({"root-exception": stack, "timestamp": ts, "all-exceptions": [], "truncated": False})
    return body


# how a failover shows: the job RESTARTING (a global failover, the adaptive scheduler), or the job RUNNING with its
# subtasks failed and cancelled until they are deployed again (the default scheduler's region failover)
FAILOVERS = {"global": ("RESTARTING", None), "region": ("RUNNING", {"RUNNING": 0, "FAILED": 1, "CANCELED": 1})}


@pytest.mark.parametrize("failover", sorted(FAILOVERS))
@pytest.mark.parametrize("shape", [exceptions_2x, exceptions_120], ids=["flink-2.x", "flink-1.20"])
def test_a_failing_job_names_flinks_root_exception(server, supervisors, tmp_path, shape, failover):
    """Flink fails the job over: a JobFailover event and the status error name its root exception, cleared once
    every task runs again. Then Flink gives up (FAILED): a JobFailed event and the status error name
    the deepest cause of the newest failure, said once although its JVM then ends with the CLI's code 1 (and the
    error stays while the next JVM's job has not run yet)."""
    sup = supervisors(server)
    with open(sup.java, "w") as f:  # a JVM that ends with the CLI's failure code once the job FAILED (once)
        f.write(f"#!/bin/sh\nwhile [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done\nrm -f '{sup.stop_file}'\n"
                "exit 1\n")
    sup.start()
    st = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE", interval=0.1)
    job = st["jobStatus"]["jobId"]
    now = int(time.time() * 1000)
    try:
        server.exceptions = shape(trace(BOOM), now)
        server.job_state, server.tasks = FAILOVERS[failover]
        ev = wait_for(lambda: [e for e in sup.events() if e["type"] == "JobFailover"], 30, "JobFailover", interval=0.1)
        assert BOOM in ev[0]["message"] and job in ev[0]["message"], ev
        st = wait_for(lambda: (s := sup.status()) and s["error"] and s, 30, "the error in the status", interval=0.1)
        assert BOOM in st["error"], st["error"]
        server.job_state, server.tasks = "RUNNING", None
        wait_for(lambda: sup.status()["error"] is None, 30, "the error cleared once every task runs again",
                 interval=0.1)
        assert len([e for e in sup.events() if e["type"] == "JobFailover"]) == 1, "one failure, said once"

        server.exceptions = shape(trace("java.lang.IllegalStateException: the second failure", wrapped=True),
                                  now + 5000)
        server.job_state = "FAILED"
        ev = wait_for(lambda: [e for e in sup.events() if e["type"] == "JobFailed"], 30, "JobFailed", interval=0.1)
        assert "the second failure" in ev[0]["message"] and "JobException" not in ev[0]["message"], ev
        assert ev[0]["level"] == "Warning"
        st = wait_for(lambda: (s := sup.status()) and s["error"] and "FAILED" in s["error"] and s, 30, "the error",
                      interval=0.1)
        assert st["error"] == f"job {job} FAILED: java.lang.IllegalStateException: the second failure", st["error"]
        assert st["jobStatus"]["state"] == "FAILED"
        server.job_state = "INITIALIZING"  # what the next JVM's job stays at (flinklet restarts the JVM at once)
        old_jvm = st["jvm"]["pid"]
        open(sup.stop_file, "w").close()  # the CLI's end: exit 1
        final = wait_for(lambda: (s := sup.status()) and s["jvm"]["lastExitCode"] == 1 and s["jvm"]["pid"] not in
                         (0, old_jvm) and s, 30, "the JVM's exit, and the next one", interval=0.1)
        assert "the second failure" in final["error"], final
        assert len([e for e in sup.events() if e["type"] == "JobFailed"]) == 1
    finally:
        server.job_state, server.tasks = "RUNNING", None
        server.exceptions = NO_EXCEPTIONS
    assert sup.stop() == 0


def test_a_job_whose_jvm_ends_with_the_cli_failure_code_names_the_cause_it_printed(server, supervisors, tmp_path):
    """Flink's REST API never showed the failure (the JVM ended before a poll saw it): the JVM's last stack trace
    names the root cause (the CLI prints the job's failure before it exits 1), in a JobFailed event and the status
    error. Bounded (a message of 20 kB), and redacted (a URI's credentials and query never reach the status or the
    event log)."""
    secret = "https://user:s3cr3t@bucket.example.com/part?X-Amz-Signature=abcdef"
    long = "x" * 20000
    sup = supervisors(server)
    with open(sup.java, "w") as f:
        f.write("#!/bin/sh\n"
                f"while [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done\n"
                "echo 'The program finished with the following exception:' >&2\n"
                "echo 'org.apache.flink.client.program.ProgramInvocationException: The main method caused an error' >&2\n"
                "echo '\tat org.apache.flink.client.program.PackagedProgram.callMainMethod(PackagedProgram.java:373)' >&2\n"
                "echo 'Caused by: org.apache.flink.runtime.client.JobExecutionException: Job execution failed.' >&2\n"
                f"echo 'Caused by: java.io.IOException: cannot write {secret} {long}' >&2\n"
                "echo '\tat dev.flinklet.jobs.StatefulCounter$Count.processElement(StatefulCounter.java:199)' >&2\n"
                "echo '\t... 12 more' >&2\n"
                f"rm -f '{sup.stop_file}'\n"
                "exit 1\n")
    sup.start()
    st = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE", interval=0.1)
    server.job_state = "INITIALIZING"  # what the next JVM's job stays at: the error is not cleared by its RUNNING
    try:
        open(sup.stop_file, "w").close()
        ev = wait_for(lambda: [e for e in sup.events() if e["type"] == "JobFailed"], 30, "JobFailed", interval=0.1)
        st = wait_for(lambda: (s := sup.status()) and s["jvm"]["lastExitCode"] == 1 and s, 30, "the exit recorded",
                      interval=0.1)
    finally:
        server.job_state = "RUNNING"
    for text in (ev[0]["message"], st["error"]):
        assert "java.io.IOException: cannot write https://" in text, text
        assert "s3cr3t" not in text and "X-Amz-Signature" not in text, text
        assert len(text) < 600, len(text)
    assert st["jobStatus"]["tasks"]["running"] == 0, st
    with open(os.path.join(sup.state, "events.jsonl")) as f:
        assert "s3cr3t" not in f.read()
    assert sup.stop() == 0

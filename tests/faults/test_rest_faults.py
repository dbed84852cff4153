"""Fault injection on Flink's side (issue 8, item 3): the real flinklet against a REST server that times
out, answers 500, sends truncated or malformed JSON, huge bodies, NaN and missing fields. flinklet must not
crash, must not act on garbage (no JobRunning from a bad answer, no restore from a made-up checkpoint or
savepoint), must keep status.json readable, and must say what it saw."""
import json
import os
import signal
import threading
import time

import pytest

from conftest import wait_for
from testkit import norm
from fakeflink import FAULTS, end_soon, jobs_overview


def watch(sup, seconds):
    """Samples flinklet for `seconds`: it stays up and status.json always parses. Returns the samples."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert sup.alive(), f"flinklet exited {sup.proc.returncode}:\n{sup.logs()[-3000:]}"
        seen.append(sup.status())  # raises if status.json does not parse
        time.sleep(0.1)
    return seen


def test_baseline_a_well_formed_answer_makes_the_job_running(server, supervisors):
    sup = supervisors(server).start()
    st = wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE" and s, 20, "STABLE", interval=0.1)
    assert st["jobStatus"]["state"] == "RUNNING" and st["jobStatus"]["tasks"]["running"] == 2
    assert "JobRunning" in [e["type"] for e in sup.events()]
    assert sup.stop() == 0


# what flinklet is expected to say about each fault (a substring of its log, case-insensitive)
SAYS = {
    "http-500": "500",
    "http-503-html": "503",
    "truncated-json": "not JSON",
    "malformed-json": "not JSON",
    "nan-literal": "not JSON",
    "empty-body": None,  # an empty 200 is not an error in itself
    "huge-body-over-limit": "too large",
    "timeout": "timed out",
    "close-without-answer": ("empty reply", "returned nothing"),  # curl 7: "Empty reply from server", 8: "Server returned nothing"
}

@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_garbage_from_flink_is_not_acted_on(server, supervisors, fault):
    server.fault = fault
    sup = supervisors(server).start()
    wait_for(lambda: sup.jvm_pid() > 0, 15, "the fake JVM to be started", interval=0.1)
    seen = watch(sup, 6)
    asked = len(server.requests)
    assert asked >= 3, f"flinklet asked the REST API only {asked} times"
    st = seen[-1]
    types = [e["type"] for e in sup.events()]
    assert "JobRunning" not in types, f"{fault}: JobRunning from a bad answer"
    assert st["lifecycleState"] == "DEPLOYED", st["lifecycleState"]
    assert st["jvm"]["restarts"] == 0, "a bad answer must not restart the JVM"
    assert st["restoredFrom"]["kind"] == "none"
    # the same JVM is still up
    assert all(s["jvm"]["pid"] == st["jvm"]["pid"] for s in seen if s and s["jvm"]["pid"] > 0)
    # then the garbage stops: flinklet follows the job normally
    server.fault = None
    wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE", 20, "STABLE after the fault ended",
             interval=0.1)
    assert sup.stop() == 0
    says = SAYS.get(fault)
    if says:
        said = any(w.lower() in sup.logs().lower() for w in ((says,) if isinstance(says, str) else says))
        assert said, f"{fault}: flinklet did not say what it saw:\n{sup.logs()[-3000:]}"


def test_inconsistent_task_counts_are_not_running(server, supervisors):
    # a negative parallelism makes the sums add up: total 1 = running 1, with a vertex of 2 tasks not running
    # (the job's details); in the overview (what the startup polls read) a negative count of finished tasks
    # makes running + finished = total with one task not running
    def fault(method, path):
        if method == "GET" and path.split("?")[0] == "/jobs/overview":
            body = jobs_overview(server.job_ids())
            for j in body["jobs"]:
                j["tasks"].update({"total": 2, "running": 3, "finished": -1})
            return 200, json.dumps(body).encode()
        if method == "GET" and path.startswith("/jobs/") and path.count("/") == 2:
            return 200, (b'{"state": "RUNNING", "vertices": [{"parallelism": -1, "tasks": {"RUNNING": 1}},'
                         b' {"parallelism": 2, "tasks": {"RUNNING": 0}}]}')
        return None
    server.fault = fault
    sup = supervisors(server).start()
    wait_for(lambda: sup.jvm_pid() > 0, 15, "the fake JVM to be started", interval=0.1)
    watch(sup, 4)
    assert "JobRunning" not in [e["type"] for e in sup.events()]
    assert any(r[2].startswith("/jobs/overview") for r in server.requests), "the overview was never asked"


@pytest.mark.parametrize("where", ["elsewhere", "in-checkpoint-dir"])
def test_made_up_checkpoint_is_never_restored(server, supervisors, tmp_path, where):
    sup = supervisors(server)
    job_dir = None
    sup.start()
    st = wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE" and s, 20, "STABLE", interval=0.1)
    job_id = st["jobStatus"]["jobId"]
    if where == "elsewhere":
        made_up = f"file:{tmp_path}/nowhere/{job_id}/chk-42"
    else:
        job_dir = os.path.join(sup.state, "checkpoints", job_id)
        os.makedirs(os.path.join(job_dir, "chk-42"), exist_ok=True)  # a directory, but no _metadata
        made_up = f"file:{job_dir}/chk-42"
    server.checkpoint = {"id": 42, "external_path": made_up}
    wait_for(lambda: (sup.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id") == 42, 10,
             "the reported checkpoint", interval=0.1)
    pid = sup.jvm_pid()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: (s := sup.status()) and s["jvm"]["pid"] not in (0, pid) and s["jvm"]["restarts"] == 1, 20,
             "a new fake JVM", interval=0.1)
    restoring = [e for e in sup.events() if e["type"] == "Restoring"]
    assert not any("chk-42" in e["message"] for e in restoring), restoring
    st = sup.status()
    assert st["restoredFrom"]["kind"] == "none", st["restoredFrom"]
    assert sup.stop() == 0


def test_made_up_savepoint_is_skipped_at_the_next_start(server, supervisors, tmp_path):
    made_up = f"file:{tmp_path}/nowhere/savepoint-000000-000000000000"
    sup = supervisors(server, upgrade_mode="savepoint")
    server.savepoint_location = made_up
    server.on_savepoint_reported = lambda: end_soon(sup.stop_file)  # the job ends after stop-with-savepoint
    sup.start()
    wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE", 20, "STABLE", interval=0.1)
    rc = sup.stop()
    st = sup.status()
    # flinklet may record what Flink reported (then the stop took a savepoint, as far as anyone can tell: 0), or
    # the job ended before Flink's answer and nothing is on disk: no savepoint, exit 4
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert rc == (0 if sp and norm(sp["location"]) == norm(made_up) else 4), (rc, sp)
    # either way the next start must not restore from it (the job's end may come after flinklet's, or not at all)
    time.sleep(0.5)
    if os.path.exists(sup.stop_file):
        os.unlink(sup.stop_file)
    server.savepoint_location = None
    server.on_savepoint_reported = None
    again = supervisors(server, state_dir=sup.state, upgrade_mode="savepoint").start()
    wait_for(lambda: (s := again.status()) and s["lifecycleState"] == "STABLE" and s["jvm"]["pid"] > 0, 20,
             "STABLE again", interval=0.1)
    st = again.status()
    assert st["restoredFrom"]["kind"] == "none", st["restoredFrom"]
    restoring = [e for e in again.events() if e["type"] == "Restoring"]
    assert not any(norm(made_up) in e["message"] for e in restoring), restoring
    skipped = [e for e in again.events() if e["type"] == "RestorePointSkipped"]
    if (sp := st["jobStatus"]["savepointInfo"]["lastSavepoint"]) and norm(sp["location"]) == norm(made_up):
        assert skipped, "a recorded savepoint that does not exist must be skipped with an event"
    again.stop()


class HeldDetails:
    """A fault that holds GET /jobs/<id> and /jobs/overview (what tells flinklet the job is RUNNING) without an
    answer, as a REST server still coming up can: the first `count` of them, or all of them until `answer()`.
    Held requests stay held until the test ends (`release()`); the others get the fake's good answers."""

    def __init__(self, count=None):
        self.count = count
        self.answering = threading.Event()
        self.released = threading.Event()
        self.lock = threading.Lock()
        self.held = 0
        self.details = 0

    def __call__(self, method, path):
        if method != "GET" or not path.startswith("/jobs/") or path.count("/") != 2:
            return None
        with self.lock:
            self.details += 1
            hold = not self.answering.is_set() and (self.count is None or self.held < self.count)
            if hold:
                self.held += 1
        if hold:
            self.released.wait(600)
            return 200, b'{"state": "CREATED", "vertices": []}'  # what the job was when it was asked
        return None

    def answer(self):
        self.answering.set()

    def release(self):
        self.released.set()


def test_rest_that_hangs_while_the_job_starts_does_not_blind_flinklet(server, supervisors):
    # the first three job-details requests never get an answer while the test runs, and the client timeout is an
    # hour: only short startup timeouts and polls that do not wait for the ones in flight can see the job RUNNING
    held = HeldDetails(count=3)
    server.fault = held
    try:
        sup = supervisors(server, conf={"kubernetes.operator.flink.client.timeout": "1 h"}).start()
        st = wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE" and s, 60, "STABLE", interval=0.1)
        assert not held.released.is_set() and held.held == 3  # the first three are still unanswered
        assert held.details > 3
        assert st["jobStatus"]["state"] == "RUNNING" and st["jobStatus"]["tasks"]["running"] == 2
        assert "JobRunning" in [e["type"] for e in sup.events()]
        assert "timed out" in sup.logs()  # said once, at info: the REST API was still coming up
        assert sup.stop() == 0
    finally:
        held.release()


def test_stop_while_rest_hangs_still_gets_its_savepoint(server, supervisors, tmp_path):
    # SIGTERM while every job-details request hangs (STOP_PENDING: the savepoint waits for RUNNING); then the REST
    # server answers new requests, the held ones stay held: the stop still ends with the savepoint and exit 0
    held = HeldDetails()
    sup = supervisors(server, upgrade_mode="savepoint",
                      conf={"kubernetes.operator.flink.client.timeout": "1 h", "flinklet.shutdown.timeout": "30 s"})
    server.fault = held
    server.real_savepoints = True
    server.on_savepoint_reported = lambda: end_soon(sup.stop_file)
    try:
        sup.start()
        wait_for(lambda: held.held >= 1, 30, "a job-details request held", interval=0.1)
        sup.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "StopPending" in [e["type"] for e in sup.events()], 15, "StopPending", interval=0.1)
        held.answer()
        code = sup.proc.wait(60)
        types = [e["type"] for e in sup.events()]
        assert code == 0, f"exit {code}: {types}\n{sup.logs()[-3000:]}"
        assert "SavepointSkipped" not in types
        assert types.index("StopPending") < types.index("JobRunning") < types.index("SavepointCompleted")
        st = sup.status()
        assert len(server.written_savepoints) == 1, server.written_savepoints
        assert norm(st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]) == norm(server.written_savepoints[0])
    finally:
        held.release()


def test_a_stop_savepoint_flink_fails_is_tried_again_inside_the_budget(server, supervisors, tmp_path):
    # Flink fails the first stop-with-savepoint (a task that could not take part yet, as right after a restore);
    # the budget fits another: flinklet tries again instead of stopping without a savepoint (exit 4)
    sup = supervisors(server, upgrade_mode="savepoint", conf={"flinklet.shutdown.timeout": "30 s"})
    server.real_savepoints = True
    server.stop_failures = 2
    server.on_savepoint_reported = lambda: end_soon(sup.stop_file)
    sup.start()
    wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE", 20, "STABLE", interval=0.1)
    code = sup.stop(60)
    types = [e["type"] for e in sup.events()]
    assert code == 0, f"exit {code}: {types}\n{sup.logs()[-3000:]}"
    assert types.count("SavepointRetry") == 2 and types.count("SavepointTriggered") == 3, types
    assert "SavepointCompleted" in types and "SavepointSkipped" not in types
    retry = [e["message"] for e in sup.events() if e["type"] == "SavepointRetry"][0]
    assert "Task local checkpoint failure" in retry and "shutdown budget left" in retry, retry
    assert len(server.written_savepoints) == 1, server.written_savepoints  # the failed ones wrote no _metadata
    assert norm(sup.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]) == norm(
        server.written_savepoints[0])


def test_a_stop_savepoint_that_keeps_failing_ends_without_one_inside_the_budget(server, supervisors, tmp_path):
    # every attempt fails: flinklet stops trying once the budget cannot fit another, and says so (exit 4)
    sup = supervisors(server, upgrade_mode="savepoint",
                      conf={"flinklet.shutdown.timeout": "10 s", "flinklet.jvm.stop-grace-period": "2 s"})
    server.stop_failures = 1000
    sup.start()
    wait_for(lambda: (s := sup.status()) and s["lifecycleState"] == "STABLE", 20, "STABLE", interval=0.1)
    t0 = time.monotonic()
    code = sup.stop(60)
    took = time.monotonic() - t0
    types = [e["type"] for e in sup.events()]
    assert code == 4, f"exit {code}: {types}"
    assert types.count("SavepointRetry") >= 1 and "SavepointFailed" in types, types
    assert took < 30, f"the stop took {took:.0f} s with a budget of 10 s"  # generous: it is bounded, not timed
    assert "Task local checkpoint failure" in (sup.status()["error"] or "")

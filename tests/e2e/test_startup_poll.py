"""A stop right as the job comes up (issue 13): SIGTERM the moment Flink's own log says the last task switched to
RUNNING, before flinklet may have seen it through the REST API, still ends with a savepoint: the
SavepointCompleted event, exit code 0, the savepoint in status.json, and the next start restores from exactly
it. Several attempts on one state directory, each started from the previous one's savepoint. The real
MiniCluster JVM; the supervisor's side of the blind window (a REST server that hangs while it comes up) is
covered in tests/faults/test_rest_faults.py and tests/unit/test_pollchain.c."""
import re
import signal
import time

from conftest import wait_for
from testkit import norm
import pytest

pytestmark = pytest.mark.heavy  # make e2e only, not e2e-asan (conftest.py)

ATTEMPTS = 3
# Flink's ExecutionGraph lines about one task (its attempt id in parentheses) changing state
TASK_LINE = re.compile(r"ExecutionGraph\s.*\((\w+_\w+_\d+_\d+)\) switched from (\w+) to (\w+)\.")


def tasks_all_running(path, offset):
    """True once every task Flink scheduled after `offset` in the log has switched from INITIALIZING to
    RUNNING (Flink schedules every task of a streaming job before any of them runs)."""
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    scheduled, running = set(), set()
    for attempt, before, after in TASK_LINE.findall(text):
        if before == "CREATED" and after == "SCHEDULED":
            scheduled.add(attempt)
        elif before == "INITIALIZING" and after == "RUNNING":
            running.add(attempt)
    return bool(scheduled) and scheduled <= running


def test_sigterm_as_the_last_task_runs_gets_a_savepoint(flinklets):
    f = flinklets(job={"upgradeMode": "savepoint"})
    previous = None
    for attempt in range(ATTEMPTS):
        offset = 0
        try:
            offset = len(open(f.log_path, "rb").read())
        except FileNotFoundError:
            pass
        t0_ms = time.time() * 1000
        f.start()
        wait_for(lambda: tasks_all_running(f.log_path, offset), 180, "every task RUNNING in Flink's log",
                 interval=0.02)
        f.signal(signal.SIGTERM)
        code = f.wait_exit(60)
        f.log.close()
        events = [e for e in f.events() if e["timeMs"] >= t0_ms - 1]
        types = [e["type"] for e in events]
        assert code == 0, f"attempt {attempt}: exit {code}: {types}\n{f.logs()[-3000:]}"
        assert "SavepointSkipped" not in types, types
        assert "SavepointCompleted" in types, types
        if "StopPending" in types:  # the stop came before flinklet saw RUNNING: it waited for it
            assert types.index("StopPending") < types.index("JobRunning") < types.index("SavepointCompleted")
        st = f.status()
        savepoint = st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
        assert savepoint and norm(savepoint) != norm(previous or ""), st["jobStatus"]["savepointInfo"]
        if previous:  # this attempt started from the savepoint of the one before
            assert norm(st["restoredFrom"]["location"]) == norm(previous), (st["restoredFrom"], previous)
            restoring = [e["message"] for e in events if e["type"] == "Restoring"]
            assert restoring and norm(previous) in restoring[0], restoring
        previous = savepoint

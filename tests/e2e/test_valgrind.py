"""flinklet under valgrind's memcheck (make valgrind): the supervisor's main paths with the real job, and not one
memory error nor definite or indirect leak. The first run launches the job, sees checkpoints, answers its HTTP
endpoint, restarts a killed JVM from the newest checkpoint and stops on SIGTERM with a savepoint; the second run
restores exactly that savepoint, takes a savepoint asked through the control API, upgrades to a new parallelism
through a savepoint when its configuration file changes, and stops again. valgrind runs flinklet itself, not the JVM it execs
(--trace-children=no), so only the supervisor is slowed down; the waits here are generous for it. Nor does it
judge the children flinklet forks that never exec (the savepoint remover, the attach helper):
--child-silent-after-fork, because such a child inherits a copy of a heap it does not own, and the blocks only
another thread held (the volume worker's job in flight at the fork) are "definitely lost" in that copy (a CI run
failed on it); valgrind's --error-exitcode would also turn that child's exit status, which flinklet reads, into 99.

Skipped unless FLINKLET_WRAPPER is a valgrind command line and FLINKLET_VALGRIND_LOGS its log directory, which
make valgrind sets; conftest.py fails any test during which a valgrind log reported a problem, and this test
checks the logs of its own two flinklet processes besides."""
import glob
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BIN, VALGRIND_LOGS, WRAPPER, valgrind_problems, wait_for
from testkit import norm

pytestmark = pytest.mark.skipif(not (WRAPPER and "valgrind" in os.path.basename(WRAPPER[0]) and VALGRIND_LOGS),
                                reason="runs flinklet under valgrind: make valgrind")


def valgrind_log(pid):
    """The memcheck log of process pid, with its summaries (the process has exited)."""
    logs = [p for p in glob.glob(os.path.join(VALGRIND_LOGS, "**", "*"), recursive=True)
            if re.search(rf"\D{pid}\D*$", os.path.basename(p))]
    assert len(logs) == 1, f"no single valgrind log for pid {pid} in {VALGRIND_LOGS}: {logs}"
    with open(logs[0], errors="replace") as f:
        text = f.read()
    assert "ERROR SUMMARY:" in text, f"{logs[0]} has no ERROR SUMMARY:\n{text[-4000:]}"
    return logs[0], text


def assert_clean(pid):
    path, text = valgrind_log(pid)
    summary = [line.split("== ", 1)[-1] for line in text.splitlines()
               if re.search(r"ERROR SUMMARY|definitely lost:|indirectly lost:|possibly lost:|"
                            r"still reachable:|All heap blocks were freed", line)]
    print(f"valgrind {os.path.basename(path)}: " + "; ".join(summary))
    assert not valgrind_problems(text), f"{path}:\n{text[-20000:]}"


def test_checkpoints_restart_savepoint_and_restore_under_valgrind(flinklets):
    f = flinklets(job={"upgradeMode": "savepoint"}).start()
    st = f.wait_stable(300)
    job_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(2, 180)

    # the HTTP endpoint, its metrics and the control API's refusal
    assert f.http("/healthz", timeout=30)[0] == 200
    code, body = f.http("/status", timeout=30)
    assert code == 200 and json.loads(body)["jobStatus"]["jobId"] == job_id
    code, body = f.http("/metrics", timeout=30)
    assert code == 200 and "flinklet_jvm_up 1" in body
    assert f.http("/api/v1/savepoint", method="POST", body=b"", timeout=30)[0] == 401
    assert f.http("/nope", timeout=30)[0] == 404

    # the CLI reading the state directory, itself under valgrind
    r = subprocess.run([*WRAPPER, BIN, "status", "--json", "--state-dir", f.state], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-4000:]
    assert json.loads(r.stdout)["jobStatus"]["jobId"] == job_id

    # a JVM killed -9 is restarted from the newest checkpoint
    old = st["jvm"]["pid"]
    os.kill(old, signal.SIGKILL)

    def again():
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}")
        s = f.status()
        return s if (s and s["jvm"]["pid"] not in (0, old) and s["lifecycleState"] == "STABLE"
                     and s["jobStatus"]["state"] == "RUNNING") else None
    st = wait_for(again, 300, "the job RUNNING again in a new JVM")
    assert st["jvm"]["restarts"] == 1 and st["restoredFrom"]["kind"] == "checkpoint"
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 1, 180)

    # SIGTERM: stop with a savepoint, exit 0
    f.signal(signal.SIGTERM)
    rc = f.wait_exit(300)
    assert_clean(f.proc.pid)
    assert rc == 0, f.logs()[-4000:]
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert st["lifecycleState"] == "SUSPENDED" and sp and sp["triggerType"] == "UPGRADE"

    # the next run restores exactly that savepoint
    g = flinklets(state_dir=f.state, job={"upgradeMode": "savepoint"}).start()
    st2 = g.wait_stable(300)
    assert st2["jobStatus"]["jobId"] == job_id
    assert st2["restoredFrom"]["kind"] == "savepoint" and norm(st2["restoredFrom"]["location"]) == norm(sp["location"])
    g.wait_checkpoint(st2["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 1
                      if st2["jobStatus"]["checkpointInfo"]["lastCheckpoint"] else 1, 180)

    # a savepoint through the control API, asked by the CLI (itself under valgrind) with the token
    r = subprocess.run([*WRAPPER, BIN, "savepoint", "--wait", "--state-dir", g.state], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    assert [h["triggerType"] for h in g.status()["jobStatus"]["savepointInfo"]["savepointHistory"]][-1] == "MANUAL"

    # a configuration change: the upgrade through a savepoint with the new parallelism (a change of the job alone:
    # submitted to the same JVM)
    t_change = time.time() * 1000
    g.write_config(job={"parallelism": 1})

    def upgraded():
        if g.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {g.proc.returncode}:\n{g.logs()[-4000:]}")
        s = g.status()
        again = [e for e in g.events() if e["type"] == "JobRunning" and e["timeMs"] >= t_change]
        return s if (again and s["jvm"]["pid"] > 0 and s["lifecycleState"] == "STABLE"
                     and s["jobStatus"]["state"] == "RUNNING") else None
    st3 = wait_for(upgraded, 300, "the upgraded job RUNNING")
    assert st3["restoredFrom"]["kind"] == "savepoint"
    assert {v["parallelism"] for v in g.rest(f"/jobs/{job_id}")["vertices"]} == {1}
    g.signal(signal.SIGTERM)
    rc = g.wait_exit(300)
    assert_clean(g.proc.pid)
    assert rc == 0, g.logs()[-4000:]
    assert g.status()["lifecycleState"] == "SUSPENDED"


PLANTED = r"""
#include <stdlib.h>
#include <unistd.h>
/* loaded into flinklet before main: 48 bytes no pointer reaches any more, and a branch on bytes never written */
__attribute__((constructor)) static void plant(void)
{
	void *volatile lost = malloc(48);
	lost = NULL;
	char *volatile unset = malloc(8);
	if (unset[3] == 42)
		(void)!write(2, "", 0);
	free(unset);
}
"""


def test_the_harness_sees_a_planted_leak_and_error(tmp_path):
    """The check cannot pass by reading nothing: flinklet --version under the same memcheck command, with a
    library preloaded that loses a block and branches on uninitialised memory, must be judged unclean, by the same
    function conftest.py applies to every log and with the record naming the planted function."""
    src, lib = tmp_path / "plant.c", tmp_path / "plant.so"
    src.write_text(PLANTED)
    subprocess.run(["cc", "-shared", "-fPIC", "-g", "-O0", "-o", str(lib), str(src)], check=True)
    log = tmp_path / "planted.log"
    # the same command, its log (the last --log-file wins) away from the directory conftest.py fails tests on
    cmd = [*WRAPPER, f"--log-file={log}", BIN, "--version"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "LD_PRELOAD": str(lib)})
    assert r.returncode == 0 and r.stdout.startswith("flinklet "), (r.returncode, r.stdout, r.stderr[-2000:])
    text = log.read_text(errors="replace")
    problems = valgrind_problems(text)
    assert any(p.startswith("ERROR SUMMARY") for p in problems), (problems, text[-4000:])
    assert any("definitely lost" in p for p in problems), (problems, text[-4000:])
    assert "uninitialised value" in text and "plant" in text, text[-4000:]
    # and the flinklet run of the same command without it is clean: the planted faults are the only ones
    clean = tmp_path / "clean.log"
    r = subprocess.run([*WRAPPER, f"--log-file={clean}", BIN, "--version"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0
    assert valgrind_problems(clean.read_text(errors="replace")) == [], clean.read_text(errors="replace")[-4000:]

"""Slowness is never evidence (issue 26, item 4): a restore that takes longer than flinklet.startup.timeout is
not a failure of the restore point. While Flink visibly restores (it printed `Restoring job ...`, its REST API
answers, the tasks are INITIALIZING) the startup timeout is extended, up to flinklet.startup.restore-timeout; a
launch the timeout does stop is started again from the same point, and never counts towards
flinklet.restore.max-failures, so a good checkpoint is never renamed `*.unreadable` for being slow.

The fake "java" prints Flink's restore line for the `-s` point it was given and stays up; the fake Flink
reports the job RUNNING with its tasks INITIALIZING for as long as the test says (`server.restoring`)."""
import json
import os
import time

from attack_kit import write_checkpoint
from conftest import wait_for
from fakeflink import VERTEX, jobs_overview

JOB_ID = "5e1f0c0ffee0000000000000000a11ce"


def restoring_answers(server):
    """A fault callable: while server.restoring, the job is RUNNING with both tasks INITIALIZING (Flink's
    picture of a job whose tasks restore their state); then the fake's good answers."""

    def answer(method, path):
        if not server.restoring or method != "GET":
            return None
        p = path.split("?")[0]
        if p == "/jobs/overview":
            body = jobs_overview(server.job_ids())
            for j in body["jobs"]:
                j["tasks"].update(running=0, initializing=2)
            return 200, json.dumps(body).encode()
        if p == f"/jobs/{JOB_ID}":
            now = int(time.time() * 1000)
            return 200, json.dumps({
                "jid": JOB_ID, "name": "fake", "state": "RUNNING", "start-time": now - 1000,
                "vertices": [{"id": VERTEX, "name": "Source: fake", "parallelism": 2, "maxParallelism": 128,
                              "status": "INITIALIZING", "tasks": {"INITIALIZING": 2, "RUNNING": 0}}],
                "timestamps": {"RUNNING": now - 1000},
                "plan": {"jid": JOB_ID, "nodes": [{"id": VERTEX, "parallelism": 2}]}}).encode()
        return None

    return answer


def restoring_java(sup):
    """A JVM stand-in that prints Flink's restore line for the point it was given (-s), records its spawn, and
    stays up until killed. Returns the spawns file."""
    spawns = os.path.join(str(sup.tmp), "spawns")
    with open(sup.java, "w") as f:
        f.write("#!/bin/sh\n"
                "# a MiniCluster that restores slowly: it says so, then takes its time\n"
                "point=''\n"
                "while [ $# -gt 0 ]; do if [ \"$1\" = -s ]; then point=\"$2\"; fi; shift; done\n"
                f"echo \"$$ $point\" >> '{spawns}'\n"
                "echo \"2026-12-04 07:00:00,000 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator"
                f"    [] - Restoring job {JOB_ID} from Checkpoint 5 @ 0 for {JOB_ID} located at $point.\"\n"
                f"while [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done\n"
                "exit 0\n")
    os.chmod(sup.java, 0o755)
    return spawns


def slow_restore_run(server, supervisors, tmp_path, conf):
    state = str(tmp_path / "state")
    os.makedirs(state)
    with open(os.path.join(state, "job-id"), "w") as f:
        f.write(JOB_ID + "\n")
    chk = write_checkpoint(state, JOB_ID, 5)
    server.restoring = True
    server.fault = restoring_answers(server)
    base = {"flinklet.rest.poll-interval": "200 ms", "flinklet.rest.startup-poll-interval": "100 ms",
            "flinklet.restore.max-failures": "1"}
    sup = supervisors(server, state_dir=state, conf=dict(base, **conf))
    spawns = restoring_java(sup)
    sup.start()
    return sup, chk, spawns


def spawned(spawns):
    try:
        with open(spawns) as f:
            return [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def named(sup, reason):
    return [e for e in sup.events() if e.get("type") == reason]


def test_a_slow_restore_is_waited_for_not_stopped(server, supervisors, tmp_path):
    """The startup timeout (2 s) runs out three times over while the tasks restore: the same JVM is let go on,
    said once (StartupExtended), and the job becomes STABLE from chk-5, which stays where it is."""
    sup, chk, spawns = slow_restore_run(server, supervisors, tmp_path,
                                        {"flinklet.startup.timeout": "2 s",
                                         "flinklet.startup.restore-timeout": "2 min"})
    ext = wait_for(lambda: named(sup, "StartupExtended"), 30, "a StartupExtended event", interval=0.1)
    assert "chk-5" in ext[0]["message"] and "0 of 2 tasks running" in ext[0]["message"], ext
    t0 = time.monotonic()
    wait_for(lambda: time.monotonic() - t0 > 6, 10, "three startup timeouts' worth of restoring", interval=0.1)
    server.restoring = False
    st = wait_for(lambda: sup.status() if sup.status()["lifecycleState"] == "STABLE" else None, 30, "STABLE",
                  interval=0.1)
    jvms = spawned(spawns)
    assert len(jvms) == 1, f"the slow restore was stopped and started again: {jvms}"
    assert st["jvm"]["pid"] == int(jvms[0][0])
    assert jvms[0][1].endswith("/chk-5"), jvms
    assert not named(sup, "StartupTimeout"), named(sup, "StartupTimeout")
    assert len(named(sup, "StartupExtended")) == 1, named(sup, "StartupExtended")
    assert not named(sup, "RestoreFailed") and os.path.isdir(chk)
    assert st["jobStatus"].get("state") == "RUNNING"


def test_a_restore_past_its_limit_is_retried_from_the_same_point_never_demoted(server, supervisors, tmp_path):
    """The tasks never finish restoring: each launch is stopped at flinklet.startup.restore-timeout (3 s) and the
    next one restores the same chk-5, with flinklet.restore.max-failures 1: a timeout is never evidence, so the
    good checkpoint is not renamed *.unreadable however often it happens."""
    sup, chk, spawns = slow_restore_run(server, supervisors, tmp_path,
                                        {"flinklet.startup.timeout": "1 s",
                                         "flinklet.startup.restore-timeout": "3 s"})
    wait_for(lambda: len(spawned(spawns)) >= 3, 90, "three launches", interval=0.1)
    jvms = spawned(spawns)
    assert all(j[1].endswith("/chk-5") for j in jvms), jvms
    retries = named(sup, "RestoreRetry")
    assert retries and all("no evidence" in e["message"] for e in retries), retries
    assert len(named(sup, "StartupTimeout")) >= 2
    assert named(sup, "StartupExtended"), "the launches were not extended while they restored"
    assert not named(sup, "RestoreFailed"), named(sup, "RestoreFailed")
    assert not named(sup, "RestorePointDemoted"), named(sup, "RestorePointDemoted")
    assert os.path.isdir(chk) and not os.path.exists(chk + ".unreadable")
    # once Flink gets through, the job runs from that same point
    server.restoring = False
    st = wait_for(lambda: sup.status() if sup.status()["lifecycleState"] == "STABLE" else None, 60, "STABLE",
                  interval=0.1)
    assert st["restoredFrom"]["location"].endswith("/chk-5"), st.get("restoredFrom")


def test_a_silent_restore_is_not_extended(server, supervisors, tmp_path):
    """Flink printed its restore line, but its REST API stopped answering (a hung JVM): nothing is visibly
    restoring, so the startup timeout stops it at once, and the point is still not given up for it."""
    sup, chk, spawns = slow_restore_run(server, supervisors, tmp_path,
                                        {"flinklet.startup.timeout": "2 s",
                                         "flinklet.startup.restore-timeout": "2 min",
                                         "kubernetes.operator.flink.client.timeout": "500 ms"})
    server.fault = "close-without-answer"
    wait_for(lambda: len(spawned(spawns)) >= 2, 60, "a second launch after the startup timeout", interval=0.1)
    assert not named(sup, "StartupExtended"), named(sup, "StartupExtended")
    assert named(sup, "StartupTimeout")
    assert not named(sup, "RestoreFailed") and os.path.isdir(chk)

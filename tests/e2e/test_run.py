"""flinklet run against the real MiniCluster JVM: the job reaches RUNNING, checkpoints land in the
state directory, the status document and the event log say so, SIGTERM stops the JVM and keeps the
checkpoints, and the job id stays fixed across runs."""
import json
import os
import signal
import subprocess
import time

from conftest import BIN, FLINK_HOME, JOBS_JAR, check_output, pid_alive, wait_for


def test_runs_job_until_checkpoints_then_sigterm(flinklets):
    # last-state: a stop without a savepoint, the retained checkpoints are the restore point
    f = flinklets(job={"upgradeMode": "last-state"}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    assert len(job_id) == 32
    with open(os.path.join(f.state, "job-id")) as fh:
        assert fh.read().strip() == job_id

    # Flink itself reports the same job, running with every task
    details = f.rest(f"/jobs/{job_id}")
    assert details["state"] == "RUNNING"
    assert all(v["tasks"]["RUNNING"] == v["parallelism"] for v in details["vertices"])
    assert st["jobStatus"]["tasks"]["total"] == sum(v["parallelism"] for v in details["vertices"])
    jvm_pid = st["jvm"]["pid"]
    assert pid_alive(jvm_pid)

    st = f.wait_checkpoint(3)
    ckpt = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
    ckdir = os.path.join(f.state, "checkpoints", job_id, f"chk-{ckpt['id']}")
    assert ckpt["location"] in (f"file:{ckdir}", f"file://{ckdir}")
    assert os.path.exists(os.path.join(ckdir, "_metadata"))
    flink_ckpts = f.rest(f"/jobs/{job_id}/checkpoints")
    assert flink_ckpts["counts"]["completed"] >= 3

    t0 = time.monotonic()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    assert time.monotonic() - t0 < 25, "stop exceeded the default shutdown budget"
    assert not pid_alive(jvm_pid), "the JVM outlived flinklet"

    st = f.status()
    assert st["lifecycleState"] == "SUSPENDED"
    assert st["jvm"]["pid"] == 0
    # the JVM is gone: no task runs (issue 27: the last poll's count stayed)
    assert st["jobStatus"]["tasks"]["running"] == 0 and st["jobStatus"]["state"] == "SUSPENDED", st["jobStatus"]
    # retained on disk: at least one complete checkpoint survives the stop
    chks = [d for d in os.listdir(os.path.join(f.state, "checkpoints", job_id)) if d.startswith("chk-")]
    assert any(os.path.exists(os.path.join(f.state, "checkpoints", job_id, d, "_metadata")) for d in chks)

    types = [e["type"] for e in f.events()]
    for a, b in zip(["SupervisorStarted", "JvmStarted", "JobRunning", "Stopping", "JvmExited", "Stopped"],
                    [t for t in types if t in ("SupervisorStarted", "JvmStarted", "JobRunning", "Stopping",
                                               "JvmExited", "Stopped")]):
        assert a == b, types
    assert all(e["jobId"] == job_id for e in f.events())

    # flinklet's own lines are told apart from the JVM's
    assert "flinklet info: job " in f.logs()

    # the next run keeps the job id
    g = flinklets(state_dir=f.state, job={"upgradeMode": "last-state"}).start()
    st2 = g.wait_stable()
    assert st2["jobStatus"]["jobId"] == job_id
    assert g.rest(f"/jobs/{job_id}")["state"] == "RUNNING"
    g.signal(signal.SIGINT)
    assert g.wait_exit(30) == 0


def test_bounded_job_finishes_with_exactly_once_output(flinklets):
    f = flinklets(job={"args": ["--rate", "400", "--count", "1000", "--keys", "5", "--output", "OUT"],
                       "parallelism": 2},
                  extra_args=["--exit-on-finish"])
    f.start()
    assert f.wait_exit(120) == 0, f.logs()[-3000:]
    st = f.status()
    assert st["jobStatus"]["state"] == "FINISHED"
    assert st["jvm"]["lastExitCode"] == 0
    rc, summary = check_output(f.output, expect_count=1000)
    assert rc == 0, summary
    assert summary["records"] == 1000 and summary["keys"] == 5
    assert "JobFinished" in [e["type"] for e in f.events()]


def test_quick_mode_without_config_file(tmp_path):
    state = tmp_path / "quick"
    out = state / "output"
    port = __import__("conftest").free_port()
    r = subprocess.run([BIN, "run", "--jar", JOBS_JAR, "--class", "dev.flinklet.jobs.StatefulCounter",
                        "--parallelism", "1", "--state-dir", str(state), "--flink-home", FLINK_HOME,
                        "-D", f"rest.port={port}", "-D", "execution.checkpointing.interval=1s", "--exit-on-finish",
                        "--", "--count", "300", "--rate", "300", "--output", str(out)],
                       capture_output=True, text=True, timeout=180, env={**os.environ, "FLINKLET_CONFIG": ""})
    assert r.returncode == 0, r.stderr[-3000:]
    st = json.loads((state / "status.json").read_text())
    assert st["name"] == "flinklet-test-jobs"
    assert st["jobStatus"]["state"] == "FINISHED"
    assert check_output(str(out), expect_count=300)[0] == 0


def test_second_supervisor_on_same_volume_exits_3(flinklets):
    f = flinklets().start()
    f.wait_stable()
    g = flinklets(state_dir=f.state)
    r = subprocess.run(g.argv(), capture_output=True, text=True, timeout=30)
    assert r.returncode == 3
    assert "locked by another flinklet" in r.stderr
    assert f"pid {f.proc.pid}" in r.stderr
    # the first one is untouched
    assert f.status()["lifecycleState"] == "STABLE"


def test_missing_flink_jars_exit_3(tmp_path, flinklets):
    f = flinklets()
    argv = f.argv()
    argv[argv.index("--flink-home") + 1] = str(tmp_path / "no-flink-here")
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 3
    assert "unable to find the Flink jars" in r.stderr


def test_missing_java_exit_3(flinklets):
    f = flinklets()
    argv = f.argv() + ["-D", "flinklet.java.bin=/nonexistent/bin/java"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert r.returncode == 3
    assert "/nonexistent/bin/java" in r.stderr


def test_console_is_quiet_by_default(flinklets):
    # what every start and every checkpoint printed before (issue 16, item 3): a ClassNotFoundException stack trace
    # for the YARN CLI, the CLI's environment and configuration dumps, a "Missing resources" dump, the plugins
    # directory, and metric-name collisions at each checkpoint of the exactly-once sink
    f = flinklets().start()
    f.wait_stable()
    f.wait_checkpoint(3)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    out = f.logs()
    for noise in ("FlinkYarnSessionCli", "ClassNotFoundException", "Missing resources:", "Name collision",
                  "plugins directory", "Loading configuration property", "log.file", "No tokens obtained"):
        assert noise not in out, f"{noise!r} is still printed:\n{out[-3000:]}"
    assert not [line for line in out.splitlines() if " WARN " in line or " ERROR " in line], out[-3000:]
    # what tells the job's progress stays: Flink's task switches and flinklet's own lines, told apart
    assert "switched from INITIALIZING to RUNNING" in out
    assert "flinklet info: checkpoint" in out

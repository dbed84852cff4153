"""Issue 38, case 4 (FLINK-39043: the operator's upgrade of a bounded job that has FINISHED fails with "Latest
checkpoint not externally addressable"), on the real MiniCluster. A bounded job runs to FINISHED; then its spec is
changed (an argument, the jar's path, the parallelism) and reloaded with SIGHUP under each upgradeMode, and flinklet
is restarted with a changed spec while status.json says FINISHED. What an experienced Flink user expects, and
docs/operations.md ("Lifecycle actions", "A job that FINISHED") says: no savepoint of the finished job is attempted,
none of its restore points is restored, no wedge and no loop of errors; the changed spec is a new run under a new
job id, started empty (a `FinishedJobRerun` event says why), or from `initialSavepointPath` when the spec gives
one; the unchanged spec of a finished job is never run again."""
import shutil
import signal
import time

from conftest import JOBS_JAR, check_output, wait_for
from testkit import norm


def events_of(f, kind, after=0):
    return [e for e in f.events() if e["type"] == kind and e["timeMs"] >= after]


def now_ms():
    return int(time.time() * 1000)


def wait_finished(f, job_id=None, timeout=120):
    """status.json once it says FINISHED (of a job other than job_id when given: a new run's)."""
    def done():
        if f.proc.poll() is not None and f.proc.returncode != 0:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}")
        st = f.status() or {}
        js = st.get("jobStatus") or {}
        return st if js.get("state") == "FINISHED" and js.get("jobId") != job_id else None
    return wait_for(done, timeout, "the job FINISHED")


def assert_new_empty_run(f, t0, old_job_id, output, count, mode):
    """After a change at t0 to a finished job: one new JVM, a new job id that started empty and FINISHED, its
    whole output exactly once with every key's count from 1; no savepoint asked of the finished job, no restore,
    nothing said at warning level."""
    st = wait_finished(f, job_id=old_job_id)
    new_id = st["jobStatus"]["jobId"]
    assert new_id != old_job_id, "a new run of a finished job is a new job"
    assert st["restoredFrom"]["kind"] == "none", st["restoredFrom"]
    assert st["lifecycleState"] == "STABLE" and st["error"] is None, (st["lifecycleState"], st["error"])
    rerun = events_of(f, "FinishedJobRerun", t0)
    assert len(rerun) == 1, [e["type"] for e in f.events() if e["timeMs"] >= t0]
    msg = rerun[0]["message"]
    assert old_job_id in msg and new_id in msg and "empty" in msg and f"upgradeMode {mode}" in msg, msg
    after = [e for e in f.events() if e["timeMs"] >= t0]
    kinds = [e["type"] for e in after]
    assert kinds.count("JvmStarted") == 1, kinds
    assert not [k for k in kinds if k.startswith("Savepoint")], kinds
    assert "Restoring" not in kinds, kinds
    assert not [e for e in after if e["level"] != "Normal"], [(e["type"], e["message"]) for e in after
                                                               if e["level"] != "Normal"]
    rc, summary = check_output(output, expect_count=count)
    assert rc == 0, summary
    return st


def test_changed_spec_of_a_finished_job_is_a_new_run_in_every_mode(flinklets, tmp_path):
    # the first run: long enough for checkpoints and for a manual savepoint while it runs (restore points a
    # careless upgrade would pick: the savepoint rewinds to the middle of the finished run)
    f = flinklets(job={"args": ["--count", "2400", "--rate", "400", "--keys", "8", "--output", "OUT"],
                       "upgradeMode": "savepoint", "savepointTriggerNonce": 0}).start()
    st = f.wait_stable()
    first_id = st["jobStatus"]["jobId"]
    f.write_config(job={"savepointTriggerNonce": 1})
    st = wait_for(lambda: (s := f.status())["jobStatus"]["savepointInfo"]["savepointHistory"] and s, 60,
                  "the manual savepoint")
    mid_savepoint = norm(st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"])
    st = wait_finished(f)
    assert st["jobStatus"]["jobId"] == first_id and f.proc.poll() is None
    assert check_output(f.output, expect_count=2400)[0] == 0

    # 1. a new argument, upgradeMode stateless
    out_b = str(tmp_path / "out-b")
    t0 = now_ms()
    f.write_config(job={"upgradeMode": "stateless", "args": ["--count", "300", "--rate", "400", "--keys", "8",
                                                               "--output", out_b]})
    f.signal(signal.SIGHUP)
    st = assert_new_empty_run(f, t0, first_id, out_b, 300, "stateless")
    second_id = st["jobStatus"]["jobId"]

    # 2. a new jar path, upgradeMode savepoint
    jar = str(tmp_path / "renamed-jobs.jar")
    shutil.copyfile(JOBS_JAR, jar)
    out_c = str(tmp_path / "out-c")
    f.jar = jar
    t0 = now_ms()
    f.write_config(job={"upgradeMode": "savepoint", "args": ["--count", "300", "--rate", "400", "--keys", "8",
                                                               "--output", out_c]})
    f.signal(signal.SIGHUP)
    st = assert_new_empty_run(f, t0, second_id, out_c, 300, "savepoint")
    third_id = st["jobStatus"]["jobId"]

    # 3. a new parallelism, upgradeMode last-state
    out_d = str(tmp_path / "out-d")
    t0 = now_ms()
    f.write_config(job={"upgradeMode": "last-state", "parallelism": 1,
                        "args": ["--count", "300", "--rate", "400", "--keys", "8", "--output", out_d]})
    f.signal(signal.SIGHUP)
    st = assert_new_empty_run(f, t0, third_id, out_d, 300, "last-state")
    fourth_id = st["jobStatus"]["jobId"]

    # a SIGHUP with nothing changed runs nothing again
    t0 = now_ms()
    f.signal(signal.SIGHUP)
    wait_for(lambda: events_of(f, "ConfigChanged", t0), 20, "the reload")
    time.sleep(2)
    assert not events_of(f, "JvmStarted", t0) and f.status()["jobStatus"]["jobId"] == fourth_id
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0

    # flinklet restarted with the unchanged spec: the finished job is not run again (the harness gives each flinklet
    # other ports: where the JVM would listen is no change of the job)
    g = flinklets(state_dir=f.state, jar=jar, extra_args=["--exit-on-finish"],
                  job={"upgradeMode": "last-state", "parallelism": 1, "savepointTriggerNonce": 1,
                       "args": ["--count", "300", "--rate", "400", "--keys", "8", "--output", out_d]})
    g.start()
    assert g.wait_exit(30) == 0
    kinds = [e["type"] for e in g.new_events()]
    assert "JobAlreadyFinished" in kinds and "JvmStarted" not in kinds, kinds

    # flinklet restarted with a changed spec while status.json says FINISHED: a new run of it, empty
    out_e = str(tmp_path / "out-e")
    h = flinklets(state_dir=f.state, jar=jar, extra_args=["--exit-on-finish"],
                  job={"upgradeMode": "savepoint", "parallelism": 2, "savepointTriggerNonce": 1,
                       "args": ["--count", "200", "--rate", "400", "--keys", "8", "--output", out_e]})
    t0 = now_ms()
    h.start()
    assert h.wait_exit(90) == 0
    st = assert_new_empty_run(h, t0, fourth_id, out_e, 200, "savepoint")
    fifth_id = st["jobStatus"]["jobId"]

    # the same with initialSavepointPath: the new run starts from it, as on a first start
    out_f = str(tmp_path / "out-f")
    k = flinklets(state_dir=f.state, jar=jar, extra_args=["--exit-on-finish"],
                  job={"upgradeMode": "savepoint", "parallelism": 2, "initialSavepointPath": mid_savepoint,
                       "savepointTriggerNonce": 1,
                       "args": ["--count", "2400", "--rate", "400", "--keys", "8", "--output", out_f]})
    t0 = now_ms()
    k.start()
    assert k.wait_exit(90) == 0
    st = wait_finished(k, job_id=fifth_id)
    assert st["restoredFrom"]["kind"] == "savepoint" and norm(st["restoredFrom"]["location"]) == mid_savepoint, \
        st["restoredFrom"]
    rerun = events_of(k, "FinishedJobRerun", t0)
    assert len(rerun) == 1 and mid_savepoint in rerun[0]["message"], rerun
    kinds = [e["type"] for e in k.new_events()]
    assert kinds.count("JvmStarted") == 1 and "JobFinished" in kinds, kinds
    assert not [e for e in k.new_events() if e["level"] != "Normal"], k.new_events()
    # (its output is not checked: the FileSink restored from the savepoint goes on writing the in-progress file of the
    # first run's directory, Flink's way with a savepoint of another output path)

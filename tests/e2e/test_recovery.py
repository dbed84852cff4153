"""The supervisor core against the real MiniCluster: whatever happens to the JVM or to flinklet, the job
comes back from the newest complete checkpoint or savepoint, and a stop leaves a savepoint behind."""
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import check_output, pid_alive, restored, wait_for, wait_restarted
from testkit import norm


def latest_completed(f, job_id):
    c = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]
    return c["id"] if c else -1


def test_kill9_jvm_resumes_from_newest_checkpoint(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(3)
    before = latest_completed(f, job_id)
    os.kill(pid, signal.SIGKILL)
    wait_restarted(f, pid)
    r = restored(f, job_id)
    assert r["is_savepoint"] is False
    assert r["id"] >= before >= 3
    st = f.status()
    assert st["restoredFrom"]["kind"] == "checkpoint"
    assert norm(st["restoredFrom"]["location"]) == norm(r["external_path"])
    assert st["jvm"]["restarts"] == 1 and st["jvm"]["lastExitSignal"] == 9
    assert st["jobStatus"]["jobId"] == job_id
    types = [e["type"] for e in f.events()]
    assert types.index("RestartScheduled") < len(types) - 1 - types[::-1].index("Restoring")


def test_sigterm_takes_savepoint_and_next_run_restores_exactly_it(flinklets):
    f = flinklets().start()  # upgradeMode defaults to savepoint
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    t0 = time.monotonic()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    assert time.monotonic() - t0 < 25
    assert not pid_alive(pid)
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE"
    assert os.path.exists(os.path.join(norm(sp["location"]), "_metadata"))
    assert os.path.basename(norm(sp["location"])).startswith(f"savepoint-{job_id[:6]}-")
    assert st["lifecycleState"] == "SUSPENDED" and st["error"] is None
    assert [norm(h["location"]) for h in st["jobStatus"]["savepointInfo"]["savepointHistory"]] == [norm(sp["location"])]

    g = flinklets(state_dir=f.state).start()
    st2 = g.wait_stable()
    assert st2["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is True
    assert norm(r["external_path"]) == norm(sp["location"])
    assert st2["restoredFrom"] == {"kind": "savepoint", "location": sp["location"], "id": r["id"]}


# single_version: flinklet's own restart; the restore point on each version:
# test_kill9_jvm_resumes_from_newest_checkpoint
@pytest.mark.single_version
def test_kill9_of_flinklet_and_jvm_together_then_new_flinklet_resumes(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(3)
    before = latest_completed(f, job_id)
    os.kill(f.proc.pid, signal.SIGKILL)
    os.kill(pid, signal.SIGKILL)
    f.proc.wait(10)
    wait_for(lambda: not pid_alive(pid), 10, "the JVM to die")

    g = flinklets(state_dir=f.state).start()
    st2 = g.wait_stable()
    assert st2["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is False and r["id"] >= before
    assert st2["restoredFrom"]["kind"] == "checkpoint"
    # two JVM starts on the volume, one per flinklet: the second is a restart (issue 27: it was left out)
    assert st2["jvm"]["restarts"] == 1 and st2["jvm"]["starts"] == 2, st2["jvm"]


@pytest.mark.single_version  # flinklet's process group and parent-death signal
def test_supervisor_killed_alone_takes_its_jvm_with_it(flinklets):
    f = flinklets().start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    os.kill(f.proc.pid, signal.SIGKILL)
    f.proc.wait(10)
    # the JVM must not linger holding the volume and the port for a second supervisor to trip over
    wait_for(lambda: not pid_alive(pid), 15, "the orphaned JVM to die with its supervisor")


def test_corrupt_newest_checkpoint_falls_back_to_previous(flinklets):
    f = flinklets(job={"upgradeMode": "last-state"}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    jobdir = os.path.join(f.state, "checkpoints", job_id)
    ids = sorted(int(d[4:]) for d in os.listdir(jobdir)
                 if d.startswith("chk-") and os.path.exists(os.path.join(jobdir, d, "_metadata")))
    assert len(ids) >= 2, ids
    newest, previous = ids[-1], ids[-2]
    meta = os.path.join(jobdir, f"chk-{newest}", "_metadata")
    # keep Flink's header so only a real restore can tell: the rest is garbage
    with open(meta, "r+b") as fh:
        header = fh.read(16)
        size = os.path.getsize(meta)
        fh.seek(0)
        fh.write(header + bytes(random.Random(7).getrandbits(8) for _ in range(max(size - 16, 64))))

    g = flinklets(state_dir=f.state, job={"upgradeMode": "last-state"}).start()
    g.wait_stable(180)
    r = restored(g, job_id)
    assert r["is_savepoint"] is False
    assert r["id"] == previous
    events = g.new_events()
    failed = [e for e in events if e["type"] == "RestoreFailed"]
    assert failed and f"chk-{newest}" in failed[-1]["message"]
    assert any(e["type"] == "Restoring" and e["message"].rstrip(" (claim mode)").endswith(f"chk-{previous}")
               for e in events), [e["message"] for e in events if e["type"] == "Restoring"]
    assert norm(g.status()["restoredFrom"]["location"]).endswith(f"chk-{previous}")


@pytest.mark.single_version  # flinklet's header check; each version's _metadata in the corrupt-newest test
def test_bad_metadata_header_is_skipped_and_said(flinklets):
    f = flinklets(job={"upgradeMode": "last-state"}).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    jobdir = os.path.join(f.state, "checkpoints", job_id)
    ids = sorted(int(d[4:]) for d in os.listdir(jobdir)
                 if d.startswith("chk-") and os.path.exists(os.path.join(jobdir, d, "_metadata")))
    newest, previous = ids[-1], ids[-2]
    with open(os.path.join(jobdir, f"chk-{newest}", "_metadata"), "wb") as fh:
        fh.write(b"not a checkpoint")
    g = flinklets(state_dir=f.state, job={"upgradeMode": "last-state"}).start()
    g.wait_stable()
    assert restored(g, job_id)["id"] == previous
    skipped = [e for e in g.events() if e["type"] == "RestorePointSkipped"]
    assert any(f"chk-{newest}" in e["message"] and "magic" in e["message"] for e in skipped), skipped


# single_version: five kills of the JVM, flinklet's restarts; one kill on each version:
# test_kill9_jvm_resumes_from_newest_checkpoint
@pytest.mark.single_version
def test_exactly_once_output_survives_five_random_jvm_kills(flinklets):
    rnd = random.Random(int(os.environ.get("FLINKLET_CHAOS_SEED", "42")))
    f = flinklets(job={"args": ["--rate", "200", "--keys", "8", "--output", "OUT"], "parallelism": 2},
                  conf={"flinklet.restart.backoff.initial": "200 ms"}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    for i in range(5):
        f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 1
                          if st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] else 1)
        time.sleep(rnd.uniform(0.0, 2.5))
        pid = f.status()["jvm"]["pid"]
        os.kill(pid, signal.SIGKILL)
        st = wait_restarted(f, pid)
        assert restored(f, job_id)["is_savepoint"] is False
    f.wait_checkpoint(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    assert f.status()["jvm"]["restarts"] == 5
    rc, summary = check_output(f.output)
    assert rc == 0, summary
    assert summary["duplicates"] == 0 and summary["gaps"] == 0
    assert summary["records"] > 500, summary


@pytest.mark.single_version  # flinklet's restart budget
def test_crash_loop_ends_failed_with_exit_1(flinklets):
    f = flinklets(job={"args": ["--exit-at-start", "--output", "OUT"]},
                  conf={"flinklet.restart.backoff.initial": "100 ms", "flinklet.restart.max-attempts": "3"}).start()
    assert f.wait_exit(120) == 1
    st = f.status()
    assert st["lifecycleState"] == "FAILED"
    assert "crash loop" in st["error"]
    types = [e["type"] for e in f.events()]
    assert types.count("JvmStarted") == 4  # the first start and three restarts
    assert st["jvm"]["starts"] == 4 and st["jvm"]["restarts"] == 3, st["jvm"]
    assert types[-1] == "CrashLoop"
    # a FAILED job still has a live but failed supervisor for probes: none left, exit 1 said it


@pytest.mark.single_version  # flinklet's health check of a stopped JVM (SIGSTOP)
def test_hung_jvm_is_detected_and_restarted(flinklets):
    f = flinklets(job={"upgradeMode": "last-state"},
                  conf={"flinklet.health.rest-timeout": "4 s", "kubernetes.operator.flink.client.timeout": "2 s",
                        "flinklet.rest.poll-interval": "1 s"}).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_restarted(f, pid, timeout=90)
    finally:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
    unhealthy = [e for e in f.events() if e["type"] == "JobUnhealthy"]
    assert unhealthy and "REST API has not answered" in unhealthy[0]["message"]
    assert restored(f, job_id)["is_savepoint"] is False


@pytest.mark.single_version  # flinklet's record of FINISHED; each version's in test_finished_upgrade
def test_finished_job_is_not_run_again(flinklets):
    f = flinklets(job={"args": ["--count", "200", "--rate", "400", "--output", "OUT"]}).start()
    st = wait_for(lambda: (f.status() or {}).get("jobStatus", {}).get("state") == "FINISHED" and f.status(), 120,
                  "the job to finish")
    assert f.proc.poll() is None, "without --exit-on-finish flinklet stays up reporting FINISHED"
    assert st["lifecycleState"] == "STABLE"
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    assert f.status()["jobStatus"]["state"] == "FINISHED"

    # the same spec (a changed one would be a new run: tests/e2e/test_finished_upgrade.py)
    g = flinklets(state_dir=f.state, extra_args=["--exit-on-finish"],
                  job={"args": ["--count", "200", "--rate", "400", "--output", "OUT"]}).start()
    assert g.wait_exit(30) == 0
    assert "JobAlreadyFinished" in [e["type"] for e in g.events()]
    assert [e["type"] for e in g.events()].count("JvmStarted") == 1
    assert check_output(f.output, expect_count=200)[0] == 0


@pytest.mark.single_version  # flinklet's choice of no restore point
def test_stateless_stop_starts_empty_next_time(flinklets):
    f = flinklets(job={"upgradeMode": "stateless"}).start()
    st = f.wait_stable()
    old_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    assert f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"] is None

    g = flinklets(state_dir=f.state, job={"upgradeMode": "stateless"}).start()
    st2 = g.wait_stable()
    new_id = st2["jobStatus"]["jobId"]
    assert new_id != old_id
    assert st2["restoredFrom"]["kind"] == "none"
    assert g.rest(f"/jobs/{new_id}/checkpoints")["latest"]["restored"] is None
    assert "StatelessStart" in [e["type"] for e in g.events()]


@pytest.mark.single_version  # flinklet's first-start rule; a savepoint restored on each version by the SIGTERM test
def test_initial_savepoint_path_is_used_on_first_start_only(tmp_path, flinklets):
    # a savepoint from one deployment seeds a new one (how a job moves between volumes or clusters)
    src = flinklets()
    src.start()
    src.wait_stable()
    src.wait_checkpoint(2)
    src.signal(signal.SIGTERM)
    assert src.wait_exit(30) == 0
    sp = src.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]

    new_state = str(tmp_path / "seeded")
    f = flinklets(state_dir=new_state, job={"initialSavepointPath": sp, "upgradeMode": "last-state"}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    r = restored(f, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp)
    assert st["restoredFrom"]["kind"] == "savepoint"
    f.wait_checkpoint(2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0

    # the second start of the seeded deployment uses its own checkpoint, not the initial savepoint
    g = flinklets(state_dir=new_state, job={"initialSavepointPath": sp, "upgradeMode": "last-state"}).start()
    st = g.wait_stable()
    r = restored(g, job_id)
    assert r["is_savepoint"] is False
    assert st["restoredFrom"]["kind"] == "checkpoint"


@pytest.mark.single_version  # flinklet's checks of a snapshot
def test_every_kind_of_broken_snapshot_is_skipped_with_an_event(flinklets):
    """Issue 8, item 4: a truncated _metadata, an empty chk-N, a savepoint directory without _metadata and a
    recorded savepoint that vanished are each skipped with an event, and the restore uses the next good point."""
    f = flinklets(job={"upgradeMode": "last-state"}).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    token = f.token()
    savepoints = []
    for _ in range(2):
        n = len(savepoints)
        assert f.http("/api/v1/savepoint", method="POST", token=token, body=b"")[0] == 202
        st = wait_for(lambda: len(f.status()["jobStatus"]["savepointInfo"]["savepointHistory"]) > n and f.status(),
                      60, "a manual savepoint")
        savepoints.append(norm(st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]))
    last = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    f.wait_checkpoint(last + 2)
    os.killpg(f.proc.pid, signal.SIGKILL)  # flinklet and its JVM at once: nothing is tidied up
    f.proc.wait()
    wait_for(lambda: not pid_alive(f.status()["jvm"]["pid"]), 30, "the JVM gone")
    jobdir = os.path.join(f.state, "checkpoints", job_id)
    ids = sorted(int(d[4:]) for d in os.listdir(jobdir)
                 if d.startswith("chk-") and os.path.exists(os.path.join(jobdir, d, "_metadata")))
    newest, previous = ids[-1], ids[-2]
    # 1. the newest checkpoint's _metadata cut short
    meta = os.path.join(jobdir, f"chk-{newest}", "_metadata")
    with open(meta, "r+b") as fh:
        fh.truncate(10)
    # 2. an empty chk-N, newer than everything
    empty = os.path.join(jobdir, f"chk-{newest + 1}")
    os.makedirs(empty, exist_ok=True)
    # 3. the newest savepoint without its _metadata, 4. the older one gone altogether (both are recorded)
    os.unlink(os.path.join(savepoints[1], "_metadata"))
    subprocess.run(["rm", "-rf", savepoints[0]], check=True)

    g = flinklets(state_dir=f.state, job={"upgradeMode": "last-state"}).start()
    g.wait_stable()
    r = restored(g, job_id)
    assert r["id"] == previous and r["is_savepoint"] is False, r
    assert norm(g.status()["restoredFrom"]["location"]).endswith(f"chk-{previous}")
    said = [e["message"] for e in g.events() if e["type"] == "RestorePointSkipped"]
    expect = {
        "truncated _metadata": (f"chk-{newest}/_metadata", "truncated"),
        "empty chk-N": (f"chk-{newest + 1}/_metadata", "no _metadata"),
        "savepoint without _metadata": (savepoints[1] + "/_metadata", "no _metadata"),
        "vanished savepoint": (savepoints[0], "No such file or directory"),
    }
    for what, (where, why) in expect.items():
        assert any(where in m and why in m for m in said), f"{what}: no event in {said}"
    # skipping a damaged point newer than the restore is a rewind: said like a demotion, and put aside (Flink's
    # next checkpoint of that id would collide with its _metadata)
    demoted = [e["message"] for e in g.events() if e["type"] == "RestorePointDemoted"]
    assert any(f"chk-{newest}" in m and f"chk-{previous}" in m and "repeated" in m for m in demoted), demoted
    assert f"chk-{newest}" in (g.status()["error"] or ""), g.status()["error"]
    assert os.path.isdir(os.path.join(jobdir, f"chk-{newest}.unreadable"))


@pytest.mark.single_version  # flinklet's own files of a JVM's crash
def test_jvm_crash_logs_go_to_their_folder_and_only_the_newest_stay(flinklets):
    """A JVM that crashes (SIGSEGV: HotSpot writes hs_err_pid<N>.log, then aborts) leaves its fatal-error log in
    <state dir>/jvm-crashes, not among the state directory's files, flinklet names it in a JvmCrashLog event, the
    job resumes from its newest checkpoint, and after three crashes only the logs of the newest
    flinklet.jvm.crash-logs (2) remain, an older flinklet's log in the state directory itself included."""
    f = flinklets(job={"args": ["--rate", "100", "--keys", "4", "--output", "OUT"]},
                  conf={"flinklet.jvm.crash-logs": "2", "flinklet.restart.backoff.initial": "200 ms"})
    os.makedirs(f.state, exist_ok=True)
    legacy = os.path.join(f.state, "hs_err_pid1.log")  # where JVMs wrote them before (their working directory)
    with open(legacy, "w") as fh:
        fh.write("# an older crash\n")
    os.utime(legacy, (time.time() - 3600, time.time() - 3600))
    f.start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    crashes = os.path.join(f.state, "jvm-crashes")
    pids = []
    for i in range(3):
        before = f.wait_checkpoint((st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {"id": 0})["id"] + 1)
        before = before["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
        pid = f.status()["jvm"]["pid"]
        pids.append(pid)
        os.kill(pid, signal.SIGSEGV)
        log = os.path.join(crashes, f"hs_err_pid{pid}.log")
        said = wait_for(lambda: [e for e in f.events() if e["type"] == "JvmCrashLog" and log in e["message"]],
                        90, f"a JvmCrashLog event naming {log}")
        assert len(said) == 1, said
        with open(log, errors="replace") as fh:
            text = fh.read()
        assert "A fatal error has been detected" in text and "SIGSEGV" in text, text[:2000]
        st = wait_restarted(f, pid)
        r = restored(f, job_id)
        assert r["is_savepoint"] is False and r["id"] >= before, (r, before)
        assert not os.path.exists(os.path.join(f.state, f"hs_err_pid{pid}.log")), "written into the state directory"
    # the first crash's log and the older flinklet's are gone; the newest two stay
    wait_for(lambda: sorted(os.listdir(crashes)) == sorted(f"hs_err_pid{p}.log" for p in pids[1:]), 30,
             f"only the logs of {pids[1:]} in {crashes} (have {os.listdir(crashes)})")
    assert not os.path.exists(legacy)
    assert f.status()["jvm"]["restarts"] == 3
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0, f.logs()[-4000:]
    assert f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], "the stop took no savepoint"
    rc, summary = check_output(f.output)
    assert rc == 0, summary
    assert summary["duplicates"] == 0 and summary["gaps"] == 0, summary

"""The changelog state backend (`state.changelog.enabled`) across a stop and a start (issue 38, case 5; FLINK-40476):
Flink restores a savepoint for it in claim or legacy mode only, and after a no_claim restore every checkpoint fails
and the job fails over, again and again. flinklet takes its savepoints canonical with changelog and restores them in
legacy mode: after the restore the job checkpoints, runs in the same JVM without a failover, and stops again with a
savepoint (exit 0); the output stays exactly once."""
import signal

from conftest import check_output, restored
from testkit import norm


def test_changelog_job_checkpoints_after_a_savepoint_restore(flinklets, tmp_path):
    conf = {"state.backend.type": "rocksdb", "state.changelog.enabled": "true",
            "state.changelog.storage": "filesystem",
            "state.changelog.dstl.dfs.base-path": f"file://{tmp_path}/changelog"}
    f = flinklets(conf=conf).start()
    f.wait_stable()
    f.wait_checkpoint(2, timeout=60)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    sp = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp["triggerType"] == "UPGRADE" and sp["formatType"] == "CANONICAL", sp

    g = flinklets(conf=conf, state_dir=f.state).start()
    st = g.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"]), r
    restoring = [e for e in g.new_events() if e["type"] == "Restoring"][-1]["message"]
    assert "legacy mode" in restoring, restoring
    st = g.wait_checkpoint(r["id"] + 3, timeout=90)  # three checkpoints after the restore
    assert st["jvm"]["pid"] == pid and st["jvm"]["starts"] == 2, st["jvm"]
    # one restore (no failover restored it again) and checkpoints completing; a checkpoint triggered before every task
    # ran ("Not all required tasks are currently running") counts as failed in any start
    counts = g.rest(f"/jobs/{job_id}/checkpoints")["counts"]
    assert counts["restored"] == 1 and counts["completed"] >= 3, counts
    assert not [e for e in g.new_events() if e["type"] in ("JobFailover", "JobFailed")]
    g.signal(signal.SIGTERM)
    assert g.wait_exit(60) == 0
    rc, summary = check_output(g.output)
    assert rc == 0, summary

"""A job that FINISHED and a changed spec for it (issue 38, case 4; the operator's FLINK-39043), against the fake
Flink: the final checkpoint of the finished run and a savepoint of it are on the volume, as Flink leaves them. A
changed spec, by a reload or at a start of flinklet, is a new run under a new job id that restores neither and asks
Flink for no savepoint; the unchanged spec is never run again, nor is a finished job whose record flinklet lacks."""
import os
import signal

from attack_kit import job_id, write_checkpoint, write_savepoint
from conftest import wait_for
from memtune_kit import set_option


def named(sup, kind, new=False):
    return [e for e in (sup.new_events() if new else sup.events()) if e["type"] == kind]


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().split(b"\0")


def finish(sup):
    """Runs the job until its JVM ends by itself (exit 0: FINISHED), leaving a final checkpoint and a savepoint of it
    on the volume; returns its job id."""
    sup.start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    jid = job_id(sup.state)
    write_savepoint(sup.state, jid, 3)
    write_checkpoint(sup.state, jid, 7)
    open(sup.stop_file, "w").close()
    wait_for(lambda: named(sup, "JobFinished"), 20, "JobFinished", interval=0.1)
    os.unlink(sup.stop_file)  # the next fake JVM stays up
    assert os.path.exists(os.path.join(sup.state, "spec.finished"))
    return jid


def asked_to_stop(server):
    return [r for r in server.requests if r[1] == "POST" and ("/stop" in r[2] or "/savepoints" in r[2])]


def assert_new_run(sup, old_id, new=False):
    """A new job id, started empty: no -s for the JVM, restoredFrom none, a FinishedJobRerun event naming both ids."""
    st = wait_for(lambda: (s := sup.status()) and s["jvm"]["pid"] > 0 and s["jobStatus"]["jobId"] != old_id and
                  s["lifecycleState"] == "STABLE" and s, 20, "the new run RUNNING", interval=0.1)
    new_id = st["jobStatus"]["jobId"]
    assert new_id == job_id(sup.state)
    assert st["restoredFrom"]["kind"] == "none", st["restoredFrom"]
    assert b"-s" not in cmdline(st["jvm"]["pid"])
    rerun = named(sup, "FinishedJobRerun", new)
    assert len(rerun) == 1 and old_id in rerun[0]["message"] and new_id in rerun[0]["message"], rerun
    assert not named(sup, "Restoring", new) or new is False
    return new_id


def test_a_reloaded_spec_of_a_finished_job_is_a_new_empty_run(server, supervisors):
    sup = supervisors(server, upgrade_mode="savepoint")
    old_id = finish(sup)
    n_restoring = len(named(sup, "Restoring"))
    set_option(sup, "pipeline.object-reuse", "true")
    sup.proc.send_signal(signal.SIGHUP)
    assert_new_run(sup, old_id)
    assert len(named(sup, "Restoring")) == n_restoring, "the finished run's checkpoint or savepoint was restored"
    assert not asked_to_stop(server), "a savepoint was asked of a finished job"
    assert "savepoint does not apply" in named(sup, "FinishedJobRerun")[0]["message"]


def test_a_start_on_a_finished_job_runs_only_a_changed_spec(server, supervisors):
    sup = supervisors(server, upgrade_mode="last-state")
    old_id = finish(sup)
    assert sup.stop() == 0

    # the unchanged spec (the same file, another flinklet): not run again, and no savepoint asked
    same = supervisors(server, state_dir=sup.state, upgrade_mode="last-state").start()
    wait_for(lambda: named(same, "JobAlreadyFinished", True), 20, "JobAlreadyFinished", interval=0.1)
    assert not named(same, "JvmStarted", True) and not asked_to_stop(server)
    assert same.stop() == 0

    # a changed spec: a new run, empty, though the finished run's checkpoint and savepoint are there
    changed = supervisors(server, state_dir=sup.state, upgrade_mode="last-state",
                          conf={"pipeline.object-reuse": "true"}).start()
    assert_new_run(changed, old_id, new=True)
    assert not named(changed, "Restoring", True) and not asked_to_stop(server)



def test_a_finished_job_without_its_record_is_not_run_by_a_start_but_by_a_change(server, supervisors):
    """A volume where the job FINISHED under a flinklet that kept no record of its spec: a start never runs it
    again, whatever the spec; a change of the file while flinklet runs is a new run."""
    sup = supervisors(server, upgrade_mode="savepoint")
    old_id = finish(sup)
    assert sup.stop() == 0
    os.unlink(os.path.join(sup.state, "spec.finished"))
    nxt = supervisors(server, state_dir=sup.state, upgrade_mode="savepoint", conf={"pipeline.object-reuse": "true"}).start()
    wait_for(lambda: named(nxt, "JobAlreadyFinished", True), 20, "JobAlreadyFinished", interval=0.1)
    assert "no record" in nxt.logs()
    nxt.proc.send_signal(signal.SIGHUP)  # the same file: nothing to run
    wait_for(lambda: named(nxt, "ConfigChanged", True), 10, "the reload", interval=0.1)
    assert not named(nxt, "JvmStarted", True)
    set_option(nxt, "pipeline.object-reuse", "false")
    nxt.proc.send_signal(signal.SIGHUP)
    assert_new_run(nxt, old_id, new=True)
    assert not asked_to_stop(server)


def test_a_reload_that_changes_only_endpoints_does_not_run_a_finished_job(server, supervisors):
    """Where the JVM would listen (REST, web UI, reporters, scratch) is no part of the job: a finished job stays
    FINISHED, said, and a later change of the job itself is still a new run."""
    sup = supervisors(server, upgrade_mode="savepoint")
    old_id = finish(sup)
    set_option(sup, "web.refresh-interval", "5000")
    sup.proc.send_signal(signal.SIGHUP)
    said = wait_for(lambda: named(sup, "JobAlreadyFinished"), 10, "JobAlreadyFinished", interval=0.1)
    assert "endpoints" in said[-1]["message"], said
    assert len(named(sup, "JvmStarted")) == 1 and sup.status()["jobStatus"]["state"] == "FINISHED"
    set_option(sup, "pipeline.object-reuse", "true")
    sup.proc.send_signal(signal.SIGHUP)
    assert_new_run(sup, old_id)
    assert not asked_to_stop(server)

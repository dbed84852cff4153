"""An upgraded spec is stable only once it makes progress (issue 38, "healthy means progress"; the contract's "An
upgraded spec is stable only once it makes progress"), on the real MiniCluster.

- An upgrade that is RUNNING and then fails on its first records (the test job's --fail-after: every Count subtask
  throws after 50 records, so Flink restarts the job inside the JVM again and again) is rolled back within the
  readiness window, to the last stable spec, from the upgrade's savepoint: Flink's own latest.restored is that
  savepoint, and the stable spec's output stays exactly once (what the rejected spec committed, in its own part
  files, is written again by the rolled-back job). The operator calls such a spec stable once it was seen RUNNING and
  never rolls it back.
- One that completed a checkpoint before it failed: that checkpoint is the rejected spec's, and is never restored
  (RestorePointRejected, removed); the rollback restores the upgrade's savepoint all the same.
- A last-state upgrade started from the newest checkpoint (in no_claim mode while on trial): the rollback restores
  exactly that checkpoint.
- A SQL script edited in place: the rollback runs the script that was stable (kept with the stable spec), not the
  file's new content.
- An upgrade that runs but completes no checkpoint (the test job's --snapshot-delay-file makes each checkpoint
  expire) is not STABLE while it runs: lifecycle DEPLOYED, the stable spec on the volume still the old one; with
  rollback off, its window ends in an UpgradeNotStable warning and the job runs on; its first checkpoint makes it
  STABLE (SpecStable) and the kept spec the new one."""
import csv
import json
import os
import re
import shutil
import signal
import time

import yaml

from conftest import check_output, restored, wait_for
from testkit import norm


def named(f, kind, after=0):
    return [e for e in f.events() if e["type"] == kind and e["timeMs"] >= after]


def now_ms():
    return int(time.time() * 1000)


def kept_args(path):
    """spec.job.args of the spec flinklet keeps as the last stable one."""
    with open(path) as fh:
        return [str(a) for a in yaml.safe_load(fh)["spec"]["job"]["args"]]


def test_an_upgrade_that_fails_on_its_records_is_rolled_back_from_its_savepoint(flinklets, tmp_path):
    f = flinklets(conf={"kubernetes.operator.deployment.rollback.enabled": "true",
                        "kubernetes.operator.deployment.readiness.timeout": "30 s"},
                  job={"parallelism": 1, "args": ["--rate", "200", "--keys", "4", "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    f.wait_checkpoint(2)
    good_args = list(f.job["args"])
    # the rejected spec has the same output: Flink's FileSink restores its bucket, path and all, from the savepoint
    # (a new --output would not move it). What it commits before flinklet stops it (a checkpoint of a restarted
    # attempt may complete first) is in its own part files (each writer names them with its own id); without them
    # the stable spec's output must go on from the savepoint exactly once and without a gap (a gap would mean it
    # restored a point of the rejected spec)
    first_writers = writers(f.output)
    assert first_writers, "the stable spec committed no part file before the upgrade"
    t0 = now_ms()
    f.write_config(job={"args": good_args + ["--fail-after", "50"]})
    sp = wait_for(lambda: named(f, "SavepointCompleted", t0), 60, "the upgrade's savepoint")[0]
    # the upgraded spec comes up (in the same JVM: a change of the job alone): RUNNING, but it is not STABLE (it
    # has made no progress)
    wait_for(lambda: named(f, "JobResubmitted", t0) or named(f, "JvmStarted", t0), 60, "the upgraded job's launch")
    rb = wait_for(lambda: named(f, "RollingBack", t0), 60, "RollingBack")[0]
    t_rb = rb["timeMs"]
    assert t_rb - t0 < 30_000 + 20_000, "not rolled back within the readiness window"
    assert [e for e in f.events() if e["timeMs"] >= t0 and e["type"] == "SpecStable"] == [], \
        "the failing spec was called stable"
    # the rollback's point is the upgrade's savepoint, as the event says and Flink restores
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "ROLLED_BACK" and s, 120, "ROLLED_BACK")
    assert st["jobStatus"]["state"] == "RUNNING" and st["jobStatus"]["jobId"] == job_id
    r = restored(f, job_id)
    assert r["is_savepoint"] is True, r
    assert norm(r["external_path"]) in rb["message"], (r, rb["message"])
    assert norm(r["external_path"]) in sp["message"], (r, sp["message"])
    assert st["restoredFrom"]["kind"] == "savepoint"
    # what the rejected spec wrote is no restore point: every checkpoint now is newer than the savepoint, written
    # by the rolled-back job (its ids continue from the savepoint's)
    sp_id = r["id"]
    f.wait_checkpoint(sp_id + 2)
    rejected = named(f, "RestorePointRejected", t0)
    for e in rejected:
        assert "rejected spec" in e["message"]
    assert "RolledBack" in [e["type"] for e in named(f, "RolledBack", t0)]
    # the stable spec, stopped, wrote its output exactly once: the part files of its first run and of the rolled-back
    # one (the writer of the newest record), without the rejected spec's
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    by_writer = writers(f.output)
    newest = max(by_writer, key=lambda w: max(max(committed_seqs(p), default=-1) for p in by_writer[w]))
    stable_files = [p for w in set(first_writers) | {newest} for p in by_writer[w]]
    theirs = {p for w in set(by_writer) - set(first_writers) - {newest} for p in by_writer[w]}
    rc, summary = check_output(copied(stable_files, tmp_path / "stable-output"))
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary
    # whatever the rejected spec committed, the rolled-back job wrote again (it went on from the savepoint)
    theirs_seqs = set().union(*(committed_seqs(p) for p in theirs)) if theirs else set()
    ours = set().union(*(committed_seqs(p) for p in stable_files))
    assert theirs_seqs <= ours, sorted(theirs_seqs - ours)[:10]



def committed_seqs(path):
    """The seqs of the StatefulCounter output in a committed part file (its "seq,key,count" rows)."""
    with open(path, newline="") as fh:
        return {int(r[0]) for r in csv.reader(fh) if r}


PART = re.compile(r"^part-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-[0-9]+$")


def writers(directory):
    """The committed part files of a FileSink's output by the id of the writer that wrote them (each run of the job,
    and each restart of a task inside it, has its own); in-progress and pending files are hidden ones."""
    out = {}
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        m = PART.match(name)
        if m:
            out.setdefault(m.group(1), []).append(os.path.join(directory, name))
    return out


def copied(paths, directory):
    """The files, copied into a new directory (what check_output reads)."""
    os.makedirs(directory)
    for p in paths:
        shutil.copy(p, directory)
    return str(directory)

def test_an_upgrade_without_a_checkpoint_is_not_stable_until_it_checkpoints(flinklets, tmp_path):
    delay = tmp_path / "snapshot-delay"
    base_args = ["--rate", "50", "--keys", "4", "--output", "OUT", "--snapshot-delay-file", str(delay)]
    f = flinklets(conf={"kubernetes.operator.deployment.readiness.timeout": "25 s",
                        "execution.checkpointing.timeout": "1 s",
                        "execution.checkpointing.tolerable-failed-checkpoints": "1000"},
                  job={"parallelism": 1, "args": base_args}).start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    f.wait_checkpoint(2)
    stable_yaml = os.path.join(f.state, "spec.stable.yaml")
    wait_for(lambda: os.path.exists(stable_yaml), 20, "spec.stable.yaml")
    assert kept_args(stable_yaml)[3] == "4"
    t0 = now_ms()
    f.write_config(job={"args": ["--rate", "50", "--keys", "6", "--output", "OUT",
                                 "--snapshot-delay-file", str(delay)]})
    wait_for(lambda: named(f, "SavepointCompleted", t0), 60, "the upgrade's savepoint")
    delay.write_text("3000")  # from now on every checkpoint of the upgraded job expires
    st = wait_for(lambda: named(f, "JobRunning", t0) and (s := f.status())["jobStatus"]["state"] == "RUNNING"
                  and s["jvm"]["pid"] > 0 and s, 90, "the upgraded job RUNNING")
    time.sleep(2)
    st = f.status()
    assert st["jobStatus"]["state"] == "RUNNING"
    assert st["lifecycleState"] == "DEPLOYED", st["lifecycleState"]
    assert kept_args(stable_yaml)[3] == "4", "the unproven spec was kept as the stable one"
    ev = wait_for(lambda: named(f, "UpgradeNotStable", t0), 60, "UpgradeNotStable")[0]
    assert ev["level"] == "Warning" and "no checkpoint completed" in ev["message"], ev
    assert "rollback.enabled is false" in ev["message"], ev
    st = f.status()
    assert st["lifecycleState"] == "DEPLOYED" and st["jobStatus"]["state"] == "RUNNING"
    new_pid = st["jvm"]["pid"]
    delay.unlink()  # checkpoints complete again: the spec is proven
    ok = wait_for(lambda: named(f, "SpecStable", t0), 60, "SpecStable")[0]
    assert "upgraded spec" in ok["message"], ok
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "STABLE" and s, 30, "STABLE")
    assert st["jvm"]["pid"] == new_pid, "the proven spec runs on in the same JVM"
    wait_for(lambda: kept_args(stable_yaml)[3] == "6", 20, "the new spec kept as the stable one")
    assert named(f, "RollingBack", t0) == []
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0


def test_a_checkpoint_of_the_rejected_spec_is_never_restored(flinklets):
    f = flinklets(conf={"kubernetes.operator.deployment.rollback.enabled": "true",
                        "kubernetes.operator.deployment.readiness.timeout": "30 s"},
                  job={"parallelism": 1, "args": ["--rate", "200", "--keys", "4", "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    # it fails only after ~2.5 s of records: with a checkpoint each second, it completes one or two first
    f.write_config(job={"args": list(f.job["args"]) + ["--fail-after", "500"]})
    sp = wait_for(lambda: named(f, "SavepointCompleted", t0), 60, "the upgrade's savepoint")[0]
    sp_status = wait_for(lambda: (s := f.status())["jobStatus"]["savepointInfo"]["lastSavepoint"] and s, 10,
                         "the savepoint recorded")
    sp_loc = norm(sp_status["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"])
    rb = wait_for(lambda: named(f, "RollingBack", t0), 90, "RollingBack")[0]
    assert "restarted job" in rb["message"] and sp_loc in norm(rb["message"]), rb["message"]
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "ROLLED_BACK" and s, 120, "ROLLED_BACK")
    r = restored(f, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == sp_loc, (r, sp_loc)
    rejected = named(f, "RestorePointRejected", t0)
    assert rejected, "the rejected spec completed no checkpoint before it failed: the test proves nothing"
    for e in rejected:
        assert "checkpoint" in e["message"] and "rejected spec" in e["message"], e
    # no restore point the rejected spec wrote is left: the next crash restores the rolled-back job's own point
    st = f.wait_checkpoint(r["id"] + 2)
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    st2 = wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, st["jvm"]["pid"]) and
                   s["jobStatus"]["state"] == "RUNNING" and s, 120, "RUNNING after the kill")
    again = restored(f, job_id)
    assert again["is_savepoint"] is False and again["id"] >= st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    # what the rejected spec committed before it failed appears again after the rollback (documented), nothing is lost
    rc, summary = check_output(f.output)
    assert summary["gaps"] == 0, summary


def test_a_last_state_upgrade_rolls_back_to_the_checkpoint_it_started_from(flinklets):
    """last-state: the upgraded spec starts from the newest checkpoint, in no_claim mode while it is on trial with
    rollback on (in claim mode Flink would dispose of that checkpoint once the new spec's retained ones subsume it, and
    the rollback would have nothing to go back to); the rollback restores exactly that checkpoint."""
    f = flinklets(conf={"kubernetes.operator.deployment.rollback.enabled": "true",
                        "kubernetes.operator.deployment.readiness.timeout": "30 s"},
                  job={"parallelism": 1, "upgradeMode": "last-state",
                       "args": ["--rate", "200", "--keys", "4", "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    t0 = now_ms()
    f.write_config(job={"args": list(f.job["args"]) + ["--fail-after", "500"]})
    rs = wait_for(lambda: named(f, "Restoring", t0), 90, "the upgraded spec's restore")[0]
    assert "no_claim" in rs["message"], rs["message"]
    base = norm(rs["message"].split(" from checkpoint ")[1].split()[0])
    assert "/chk-" in base, rs["message"]
    rb = wait_for(lambda: named(f, "RollingBack", t0), 90, "RollingBack")[0]
    assert base in rb["message"], (base, rb["message"])
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "ROLLED_BACK" and s, 120, "ROLLED_BACK")
    r = restored(f, job_id)
    # (a checkpoint restored in no_claim mode is one Flink reports with a savepoint's properties)
    assert norm(r["external_path"]) == base and r["id"] == int(base.rsplit("chk-", 1)[1]), (r, base)
    assert named(f, "RestorePointRejected", t0), "the rejected spec's checkpoints were not set aside"
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert summary["gaps"] == 0, summary


SQL = """SET 'pipeline.name' = 'clicks-per-user';
CREATE TABLE clicks (user_id INT, url STRING) WITH (
  'connector' = 'datagen', 'rows-per-second' = '50', 'fields.user_id.min' = '1', 'fields.user_id.max' = '16');
CREATE TABLE per_user (user_id INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO per_user
SELECT user_id, COUNT(*) FROM clicks {where}GROUP BY user_id;
"""


def test_a_sql_script_edited_in_place_rolls_back_to_the_script_that_was_stable(flinklets, tmp_path):
    """An upgrade by editing the script file in place (the file's content is the spec's): the rollback runs the
    script as it was when it was stable, kept with the stable spec, not the file's edited content (which would fail
    again)."""
    from sqlkit import config_text
    script = tmp_path / "job.sql"
    script.write_text(SQL.format(where=""))
    f = flinklets(name="sql-clicks", conf={"kubernetes.operator.deployment.rollback.enabled": "true",
                                          "kubernetes.operator.deployment.readiness.timeout": "30 s"})
    f.write_config(raw=config_text(f, None, script=script))
    f.start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    f.wait_checkpoint(2)
    t0 = now_ms()
    # every url of datagen is random text: the CAST fails on the first record, at run time
    script.write_text(SQL.format(where="WHERE CAST(url AS INT) > 0 "))
    f.signal(signal.SIGHUP)
    rb = wait_for(lambda: named(f, "RollingBack", t0), 120, "RollingBack")[0]
    st = wait_for(lambda: (s := f.status())["lifecycleState"] == "ROLLED_BACK" and s, 120, "ROLLED_BACK")
    assert st["jobStatus"]["jobId"] == job_id and st["jobStatus"]["state"] == "RUNNING"
    first = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    f.wait_checkpoint(first + 3)  # it runs on: the stable script, not the one that fails
    assert "CAST" not in json.dumps(f.rest(f"/jobs/{job_id}/plan")), "the rolled-back job runs the edited script"
    assert not [e for e in named(f, "JobFailover", rb["timeMs"]) if "NumberFormat" in e["message"]
                or "CAST" in e["message"].upper()], "the rolled-back job fails as the rejected one did"
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0

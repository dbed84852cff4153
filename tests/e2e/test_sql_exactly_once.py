"""A stateful SQL job with an exactly-once sink, written as a SQL user writes it (issue 37), on the real MiniCluster:
a `datagen` sequence (ids 1..N, each once, replayed from the source's state) into Flink's `filesystem` sink twice,
the ids themselves and a tumbling event-time window over them (keyed state), through a kill -9 of the JVM (the
restart from the newest checkpoint), a stop (a savepoint; the next run restores exactly it), an upgrade by an edited
script on SIGHUP (a savepoint into the same operators) and the bounded source's end. The committed files then hold
every id exactly once and every window's count and sum as the sequence implies: nothing lost, nothing twice, and
each restore is the point flinklet said (status.json's restoredFrom, Flink's latest.restored).

asan_elsewhere: the kill, the stop, the reload and the restores of a SQL script job run under ASan in
test_sql_script.py and test_recovery.py; what this file adds is Flink's side, the sink's two-phase commit across them.
"""
import os
import signal
import time
from collections import Counter

import pytest

from conftest import restored, wait_for, wait_restarted
from sqlkit import committed_rows, config_text, events_of
from testkit import norm

pytestmark = pytest.mark.asan_elsewhere

N = 3000  # ids 1..N
WINDOW_IDS = 10  # an id is 100 ms of event time: a 1 s window holds 10 ids
KEYS = 2  # the windows are per id % KEYS

SCRIPT = """-- ids 1..{n}, each once, and a per-second count of them: both into files, exactly once
SET 'pipeline.name' = 'ids-exactly-once';
CREATE TABLE ids (
  id BIGINT,
  ts AS TO_TIMESTAMP_LTZ(id * 100, 3),
  WATERMARK FOR ts AS ts
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '{rate}',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '{n}'
);
CREATE TABLE id_files (id BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}/ids', 'format' = 'csv');
CREATE TABLE window_files (
  k        INT,
  n        BIGINT,
  total    BIGINT,
  first_id BIGINT,
  last_id  BIGINT
) WITH ('connector' = 'filesystem', 'path' = '{out}/windows', 'format' = 'csv');
EXECUTE STATEMENT SET BEGIN
  INSERT INTO id_files SELECT id FROM ids;
  INSERT INTO window_files
  SELECT k, COUNT(*), SUM(id), MIN(id), MAX(id)
  FROM (SELECT CAST(id % {keys} AS INT) AS k, id, window_start, window_end
        FROM TABLE(TUMBLE(TABLE ids, DESCRIPTOR(ts), INTERVAL '1' SECOND)))
  GROUP BY k, window_start, window_end;
END;
"""


def script(out, rate):
    return SCRIPT.format(n=N, rate=rate, out=out, keys=KEYS)


def expected_windows():
    """(k, count, sum, min, max) of every window and key: the ids of [10w, 10w + 9] in 1..N with id % KEYS == k."""
    rows = []
    for w in range(N // WINDOW_IDS + 1):
        for k in range(KEYS):
            ids = [i for i in range(max(1, w * WINDOW_IDS), min(N, w * WINDOW_IDS + WINDOW_IDS - 1) + 1)
                   if i % KEYS == k]
            if ids:
                rows.append((k, len(ids), sum(ids), min(ids), max(ids)))
    return sorted(rows)


def committed_ids(out):
    return [int(r[0]) for r in committed_rows(os.path.join(out, "ids"))]


def latest_completed(f, job_id):
    """The id of Flink's newest completed checkpoint of the job, -1 when none (or Flink does not answer yet)."""
    try:
        c = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]
    except OSError:
        return -1
    return c["id"] if c else -1


def test_sql_job_keeps_exactly_once_through_kill_stop_upgrade_and_its_end(flinklets, tmp_path):
    out = str(tmp_path / "out")
    f = flinklets(name="sql-exactly-once")
    f.write_config(raw=config_text(f, script(out, 40), parallelism=2))
    f.start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]

    # mid-run: checkpoints have committed ids, more are in flight; kill -9 the JVM
    wait_for(lambda: len(committed_ids(out)) >= 100 and latest_completed(f, job_id) >= 3, 90,
             "checkpoints that committed ids")
    before = latest_completed(f, job_id)
    os.kill(pid, signal.SIGKILL)
    st = wait_restarted(f, pid)
    assert st["jobStatus"]["jobId"] == job_id and st["jvm"]["lastExitSignal"] == 9
    r = restored(f, job_id)
    st = f.status()
    assert r["is_savepoint"] is False and r["id"] >= before, (r, before)
    assert st["restoredFrom"]["kind"] == "checkpoint" and st["restoredFrom"]["id"] == r["id"], st["restoredFrom"]
    assert norm(st["restoredFrom"]["location"]) == norm(r["external_path"])
    assert f"to checkpoint id {r['id']} from checkpoint" in events_of(f, "Restoring")[-1]["message"]

    # a stop: a savepoint, flinklet exits 0, and the next run restores exactly it
    f.wait_checkpoint(r["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    sp = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE", sp
    g = flinklets(name="sql-exactly-once", state_dir=f.state)
    g.write_config(raw=config_text(g, script(out, 40), parallelism=2))
    g.start()
    st = g.wait_stable()
    assert st["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"]), (r, sp)
    assert st["restoredFrom"] == {"kind": "savepoint", "location": sp["location"], "id": r["id"]}

    # an upgrade: the edited script (a faster source, a comment) on SIGHUP, through a savepoint into the same operators
    g.wait_checkpoint(r["id"] + 2)
    pid = st["jvm"]["pid"]
    t1 = int(time.time() * 1000)
    g.write_config(raw=config_text(g, "-- faster, to its end\n" + script(out, 250), parallelism=2))
    g.signal(signal.SIGHUP)
    done = wait_for(lambda: events_of(g, "SavepointCompleted", t1), 90, "the upgrade's savepoint")[0]
    upto = len(set(committed_ids(out)))  # what the savepoint committed; the new JVM makes the rest
    assert 0 < upto < N - 1000, f"{upto} ids before the upgrade: the source would end before the test sees the upgrade"
    st = wait_restarted(g, pid)
    assert st["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) in done["message"], (r, done)
    assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
    assert norm(st["restoredFrom"]["location"]) == norm(r["external_path"])
    assert events_of(g, "SqlPlanUnchanged", t1), [e["type"] for e in g.events()]

    # the bounded source ends: the job FINISHED, its last files committed by the final checkpoint
    wait_for(lambda: (g.status() or {}).get("jobStatus", {}).get("state") == "FINISHED", 120, "the job to finish")
    g.signal(signal.SIGTERM)
    assert g.wait_exit(60) == 0

    ids = committed_ids(out)
    twice = sorted(i for i, c in Counter(ids).items() if c > 1)
    missing = sorted(set(range(1, N + 1)) - set(ids))
    assert not twice and not missing, f"ids twice {twice[:20]} ({len(twice)}), missing {missing[:20]} ({len(missing)})"
    assert len(ids) == N
    windows = sorted(tuple(int(x) for x in row) for row in committed_rows(os.path.join(out, "windows")))
    assert windows == expected_windows(), sorted(set(windows) ^ set(expected_windows()))[:20]

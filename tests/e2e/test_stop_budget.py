"""A stop whose cost does not grow with the state (issue 26, item 1), against the real MiniCluster with RocksDB's
incremental checkpoints: when a savepoint of the job's state cannot fit what the shutdown budget leaves, flinklet
does not try it and miss (exit 4, the restore point as old as the last checkpoint before the signal); it waits for
the next periodic checkpoint, stops the JVM on it, exits 0 inside the budget, and the next start restores exactly
that checkpoint, with the exactly-once output intact."""
import os
import signal
import time

from conftest import check_output, restored, wait_for

ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
         "execution.checkpointing.interval": "2s"}


def latest_completed(f, job_id):
    c = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]
    return c or {}


def events_of(f, kind, since=0):
    return [e for e in f.events()[since:] if e["type"] == kind]


def test_a_savepoint_that_cannot_fit_ends_on_a_fresh_checkpoint_inside_the_budget(flinklets):
    """256 MiB of state, a 12 s budget: a savepoint (about 5 s at the 50 MB/s assumed before one is measured, with a
    quarter to spare) does not fit the 7 s the budget leaves once 5 s are kept for the JVM's exit. The stop waits for
    the next checkpoint (every 2 s), stops on it and exits 0; the next run restores from that checkpoint."""
    job = {"args": ["--rate", "200", "--keys", "256", "--pad-bytes", str(1 << 20), "--output", "OUT"]}
    conf = dict(ROCKS, **{"flinklet.shutdown.timeout": "12 s"})
    f = flinklets(conf=conf, memory="2g", job=job).start()
    job_id = f.wait_stable(timeout=180)["jobStatus"]["jobId"]
    wait_for(lambda: latest_completed(f, job_id).get("state_size", 0) > 200 << 20, 180,
             "a checkpoint of more than 200 MiB")
    f.wait_checkpoint(latest_completed(f, job_id)["id"], timeout=60)  # flinklet has seen it: it knows the size
    before = latest_completed(f, job_id)["id"]
    n = len(f.events())
    f.signal(signal.SIGTERM)
    rc = f.wait_exit(60)
    chosen = events_of(f, "StopOnCheckpoint", n)
    assert chosen, f"the stop tried a savepoint: {[e['type'] for e in f.events()[n:]]}"
    assert "MB" in chosen[0]["message"], chosen
    done = events_of(f, "StopCheckpoint", n)
    assert done, f"no checkpoint was stopped on: {[(e['type'], e['message']) for e in f.events()[n:]]}"
    assert rc == 0, f"exit {rc}:\n{f.logs()[-3000:]}"
    stop_id = int(done[0]["message"].split()[1])
    assert stop_id > before, f"stopped on checkpoint {stop_id}, the newest before the signal was {before}"
    assert not events_of(f, "SavepointTriggered", n) and not events_of(f, "SavepointFailed", n)
    st = f.status()
    assert st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] == stop_id
    assert "checkpoint %d" % stop_id in events_of(f, "Stopped", n)[0]["message"]

    # the next start restores from exactly that checkpoint
    g = flinklets(conf=conf, memory="2g", job=job, state_dir=f.state).start()
    g.wait_stable(timeout=180)
    r = restored(g, job_id)
    assert r["id"] == stop_id and not r["is_savepoint"], r
    assert g.status()["restoredFrom"]["id"] == stop_id
    last = g.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    g.wait_checkpoint(last + 2, timeout=90)
    g.signal(signal.SIGTERM)
    g.wait_exit(60)
    rc, summary = check_output(g.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_small_state_still_stops_with_a_savepoint(flinklets):
    """The estimate does not take savepoints away from jobs they fit: a small state under the default budget."""
    f = flinklets(conf=ROCKS).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    f.wait_checkpoint(3)
    n = len(f.events())
    t0 = time.monotonic()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    assert time.monotonic() - t0 < 60
    assert events_of(f, "SavepointTriggered", n) and not events_of(f, "StopOnCheckpoint", n)
    assert f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
    assert os.path.isdir(os.path.join(f.state, "checkpoints", job_id))

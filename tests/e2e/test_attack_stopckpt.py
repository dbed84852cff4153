"""Attack tests of docs/operations.md's stop (Signals, SIGTERM row) against the real MiniCluster, written from the
docs only (no look at src/): a second signal in the middle of a stop, once while it waits for the checkpoint it
ends on (a SIGINT right after the SIGTERM: "a SIGINT and a SIGTERM within one second are one stop"), once while
Flink writes the stop-with-savepoint (a second SIGTERM: "kills the JVM at once"). Judged without trusting
flinklet: the checkpoint ids are Flink's (/checkpoints) and those in the `_metadata` files on the volume, the
restore is Flink's (latest.restored), and the output is checked exactly-once. The faults suite
(tests/faults/test_attack_stopckpt.py) attacks the same with a fake Flink."""
import os
import signal
import struct
import time

from conftest import check_output, pid_alive, restored, wait_for

ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
         "execution.checkpointing.interval": "2s"}
MAGIC = 0x4960672D


def metadata_id(path):
    try:
        with open(os.path.join(path, "_metadata"), "rb") as fh:
            magic, _, cid = struct.unpack(">IIq", fh.read(16))
        return cid if magic == MAGIC else None
    except (OSError, struct.error):
        return None


def latest_completed(f, job_id):
    return f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"] or {}


def events_of(f, kind, since=0):
    return [e for e in f.events()[since:] if e["type"] == kind]


def restart_and_check(flinklets, f, conf, job, job_id, at_least, exactly=None):
    """The next start restores a point no older than `at_least` (Flink's word), exactly `exactly` when given; the
    output stays exactly-once across both runs."""
    g = flinklets(conf=conf, memory="2g", job=job, state_dir=f.state).start()
    g.wait_stable(timeout=180)
    r = restored(g, job_id)
    assert r and r["id"] >= at_least, f"restored {r}, older than checkpoint {at_least}, the newest before the stop"
    if exactly is not None:
        assert r["id"] == exactly, f"the stop ended on {exactly}, the next start restored {r}"
    g.wait_checkpoint(r["id"] + 2, timeout=90)
    g.signal(signal.SIGTERM)
    g.wait_exit(60)
    rc, summary = check_output(g.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary
    return r


def test_a_sigint_right_after_the_sigterm_does_not_cost_the_stop_its_checkpoint(flinklets):
    """Attacks "a SIGINT and a SIGTERM within one second are one stop (Ctrl-C in a terminal, forwarded again by a
    wrapper script)" at the moment the stop has chosen to end on the next checkpoint (256 MiB of RocksDB state, a
    12 s budget: "When it does not fit and the next periodic checkpoint does ... flinklet asks for no savepoint").
    The stop must still end on a checkpoint completed after the signal (StopCheckpoint, exit 0), that checkpoint's
    _metadata must be on the volume with its id, and the next start restores exactly it."""
    job = {"args": ["--rate", "200", "--keys", "256", "--pad-bytes", str(1 << 20), "--output", "OUT"]}
    conf = dict(ROCKS, **{"flinklet.shutdown.timeout": "12 s"})
    f = flinklets(conf=conf, memory="2g", job=job).start()
    job_id = f.wait_stable(timeout=180)["jobStatus"]["jobId"]
    wait_for(lambda: latest_completed(f, job_id).get("state_size", 0) > 200 << 20, 180,
             "a checkpoint of more than 200 MiB")
    f.wait_checkpoint(latest_completed(f, job_id)["id"], timeout=60)  # flinklet has seen it: it knows the size
    before = latest_completed(f, job_id)["id"]
    n = len(f.events())
    t0 = time.monotonic()
    f.signal(signal.SIGTERM)
    wait_for(lambda: events_of(f, "StopOnCheckpoint", n) or f.proc.poll() is not None, 10, "the stop's choice",
             interval=0.02)
    assert time.monotonic() - t0 < 0.9, "too late for the same stop: the test proves nothing"
    f.signal(signal.SIGINT)
    rc = f.wait_exit(60)
    kinds = [e["type"] for e in f.events()[n:]]
    assert events_of(f, "StopOnCheckpoint", n), f"the stop took another way: {kinds}"
    done = events_of(f, "StopCheckpoint", n)
    assert rc == 0 and done, f"exit {rc}, events {kinds}:\n{f.logs()[-3000:]}"
    stop_id = int(done[0]["message"].split()[1])
    assert stop_id > before, (stop_id, before)
    location = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["location"]
    assert metadata_id(location.replace("file://", "").replace("file:", "")) == stop_id, location
    restart_and_check(flinklets, f, conf, job, job_id, before, exactly=stop_id)


def test_a_second_sigterm_while_flink_writes_the_stop_savepoint_never_rewinds(flinklets):
    """Attacks "A second SIGTERM (or SIGINT) kills the JVM at once" together with "whatever the state's size, a stop
    never leaves a restore point older than the last checkpoint before the signal" and exit code 4 ("... or a
    second signal killed the JVM first. The newest checkpoint before the stop stays the restore point"): 128 MiB
    of RocksDB state, a SIGTERM, and a second one 0.1 s later, while Flink writes the NATIVE stop savepoint. The
    JVM is gone when flinklet exits (no process left); either Flink finished the savepoint first (exit 0, or 5:
    "the savepoint ... was taken, but the JVM ... was killed") and it is newer than the last checkpoint and the
    next start restores exactly it, or exit 4 with the status error and a half-written savepoint that is never
    restored; the next start restores a point no older than the newest checkpoint before the signal (Flink's
    latest.restored), exactly-once."""
    job = {"args": ["--rate", "200", "--keys", "128", "--pad-bytes", str(1 << 20), "--output", "OUT"]}
    f = flinklets(conf=ROCKS, memory="2g", job=job).start()
    job_id = f.wait_stable(timeout=180)["jobStatus"]["jobId"]
    wait_for(lambda: latest_completed(f, job_id).get("state_size", 0) > 120 << 20, 180, "a checkpoint of 120 MiB")
    f.wait_checkpoint(latest_completed(f, job_id)["id"], timeout=60)
    before = latest_completed(f, job_id)["id"]
    pid = f.status()["jvm"]["pid"]
    n = len(f.events())
    f.signal(signal.SIGTERM)
    time.sleep(0.1)
    f.signal(signal.SIGTERM)
    rc = f.wait_exit(60)
    assert not pid_alive(pid), f"the JVM {pid} outlived flinklet"
    kinds = [(e["type"], e["message"]) for e in f.events()[n:]]
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    sp_id = None
    print(f"second SIGTERM 0.1 s after the first: exit {rc}, {[k for k, _ in kinds]}")
    if events_of(f, "SavepointCompleted", n):  # Flink finished it before the kill: exit 0, or 5 (JVM killed)
        assert rc in (0, 5) and sp, (rc, kinds)
        sp_id = metadata_id(sp["location"].replace("file://", "").replace("file:", ""))
        assert sp_id is not None and sp_id > before, (sp, sp_id, before)
    else:
        assert rc == 4, (rc, kinds)
        assert st["error"], (rc, kinds)
    r = restart_and_check(flinklets, f, ROCKS, job, job_id, before)
    if sp_id is not None:
        assert r["id"] == sp_id and r["is_savepoint"], r

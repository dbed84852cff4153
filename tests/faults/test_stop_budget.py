"""A stop that no savepoint fits (issue 26, item 1), with the fake Flink: it reports a state of 5 GB whose newest
checkpoint took 0.8 s, and a budget of 6 s (2 s kept for the JVM's exit: its grace period). flinklet does not ask
for a savepoint it cannot get; it waits for the next checkpoint, stops the JVM on it and exits 0. When none comes in
time it stops without one inside the budget (exit 4), and a second SIGTERM still stops at once."""
import os
import signal
import struct
import time

from conftest import wait_for

JOB_STATE = 5_000_000_000


def big_checkpoint(sup, server, cid):
    """Flink completes checkpoint cid: its _metadata on the volume (Flink's header), then the REST API says so."""
    job_id = open(os.path.join(sup.state, "job-id")).read().strip()
    d = os.path.join(sup.state, "checkpoints", job_id, f"chk-{cid}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "_metadata"), "wb") as f:
        f.write(struct.pack(">IIq", 0x4960672D, 4, cid) + b"\0" * 64)
    server.checkpoint = {"id": cid, "external_path": f"file:{sup.state}/checkpoints/{job_id}/chk-{cid}",
                         "state_size": JOB_STATE, "checkpointed_size": 20_000_000, "end_to_end_duration": 800}


def started(server, supervisors):
    sup = supervisors(server, upgrade_mode="savepoint").start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    big_checkpoint(sup, server, 7)
    wait_for(lambda: (sup.status()["jobStatus"]["checkpointInfo"].get("lastCheckpoint") or {}).get("id") == 7, 30,
             "checkpoint 7 seen", interval=0.1)
    return sup


def named(sup, kind):
    return [e for e in sup.events() if e["type"] == kind]


def test_no_savepoint_fits_the_stop_ends_on_the_next_checkpoint(server, supervisors):
    sup = started(server, supervisors)
    sup.proc.send_signal(signal.SIGTERM)
    ev = wait_for(lambda: named(sup, "StopOnCheckpoint"), 10, "StopOnCheckpoint", interval=0.1)
    assert "5000 MB" in ev[0]["message"] and "assumed" in ev[0]["message"], ev
    big_checkpoint(sup, server, 8)  # Flink's next periodic checkpoint
    assert sup.proc.wait(15) == 0, sup.logs()[-3000:]
    done = named(sup, "StopCheckpoint")
    assert done and done[0]["message"].startswith("checkpoint 8 "), done
    assert not [r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")], "a savepoint was asked"
    st = sup.status()
    assert st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] == 8
    assert "checkpoint 8" in named(sup, "Stopped")[0]["message"]


def test_no_checkpoint_in_time_stops_without_one_inside_the_budget(server, supervisors):
    sup = started(server, supervisors)
    t0 = time.monotonic()
    sup.proc.send_signal(signal.SIGTERM)
    rc = sup.proc.wait(15)
    took = time.monotonic() - t0
    assert rc == 4, sup.logs()[-3000:]
    assert took < 6 + 2, f"the stop took {took:.1f} s of a 6 s budget"
    assert named(sup, "StopOnCheckpoint") and named(sup, "SavepointSkipped")
    assert not named(sup, "StopCheckpoint")
    assert "newest checkpoint before the stop stays the restore point" in sup.status()["error"]


def test_a_second_sigterm_while_waiting_for_the_checkpoint_stops_at_once(server, supervisors):
    sup = started(server, supervisors)
    sup.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: named(sup, "StopOnCheckpoint"), 10, "StopOnCheckpoint", interval=0.1)
    time.sleep(1.2)  # a second signal within a second is the same stop (Ctrl-C forwarded)
    sup.proc.send_signal(signal.SIGTERM)
    rc = sup.proc.wait(10)
    assert rc in (4, 5), (rc, sup.logs()[-3000:])
    assert not named(sup, "StopCheckpoint")


def test_a_small_state_still_gets_its_savepoint(server, supervisors):
    """The estimate takes nothing from a job a savepoint fits: 50 MB at the assumed 50 MB/s fits 4 s."""
    sup = supervisors(server, upgrade_mode="savepoint").start()
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "STABLE", 30, "STABLE", interval=0.1)
    job_id = open(os.path.join(sup.state, "job-id")).read().strip()
    server.checkpoint = {"id": 3, "external_path": f"file:{sup.state}/checkpoints/{job_id}/chk-3",
                         "state_size": 50_000, "end_to_end_duration": 100}
    wait_for(lambda: (sup.status()["jobStatus"]["checkpointInfo"].get("lastCheckpoint") or {}).get("id") == 3, 30,
             "checkpoint 3 seen", interval=0.1)
    sup.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: [r for r in server.requests if r[1] == "POST" and r[2].endswith("/stop")], 10,
             "the stop-with-savepoint request", interval=0.1)
    assert not named(sup, "StopOnCheckpoint")

"""The volume's metadata work off the event loop (issue 15, item 5): a rename or a removal on the state volume can take
as long as the volume's server holds it (a network volume), and the loop must not wait for it. The volshim library
(tests/faults/volshim.c) holds every metadata call (rename, unlink, unlinkat, rmdir) under the state directory while
a block file exists (VOLSHIM_META_BLOCK_FILE; "<block>.held" says one waits; VOLSHIM_META_BLOCK_MATCH holds only the
calls on paths that contain a string). No timing: each test holds the volume, looks at what flinklet does meanwhile
through its log (written at once, not on the volume) and its HTTP endpoint (served from memory), then lets go.

- retention removes a large savepoint while the volume is held: /healthz and a SIGTERM are answered meanwhile;
- flinklet is killed with SIGKILL in the middle of that removal: the next start restores from the newest complete
  savepoint, never the half-removed one, and removes what is left of it;
- a restore point Flink cannot read is given up (renamed aside) while the volume is held: the next launch restores
  from the next older point, never the one being renamed."""
import json
import os
import signal

from conftest import wait_for
from volkit import FAST, SHIM, get, make_savepoint, post, stable

LAUNCHED = "started the MiniCluster JVM"
RETENTION = dict(FAST, **{"kubernetes.operator.savepoint.history.max.count": "1",
                          "flinklet.health.rest-timeout": "1 h"})


def big_savepoint(state, job_id, files=300):
    """A savepoint with many files (RocksDB's), each one an unlink on the volume."""
    path = make_savepoint(state, job_id)
    for i in range(files):
        with open(os.path.join(path, f"sst-{i:04d}"), "wb") as f:
            f.write(b"x" * 64)
    return path


def held_run(supervisors, server, tmp_path, conf, match="/savepoints/"):
    state = str(tmp_path / "state")
    block = str(tmp_path / "meta-hold")
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=conf)
    # only the calls on the snapshots are held (the records' own renames, status.json's, are not what is tested)
    sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_META_BLOCK_FILE": block,
                     "VOLSHIM_META_BLOCK_MATCH": match}
    sup.start()
    st = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE", interval=0.1)
    return sup, st, block


def savepoint_over_http(sup, server, st, path):
    """A manual savepoint that Flink (the fake) completes at path; waits until flinklet recorded it."""
    server.savepoint_location = "file:" + path
    post(st, "savepoint")
    wait_for(lambda: f"savepoint {'file:' + path}" in sup.logs() or os.path.basename(path) in json.dumps(
        (sup.status() or {}).get("jobStatus", {}).get("savepointInfo", {})), 30, "the savepoint recorded", interval=0.1)


def dispose_first_while_held(sup, server, st, block, first=None):
    """Two savepoints, the history keeps one: retention disposes of the first (a large one, or the one at `first`)
    while the metadata calls of the volume are held. Returns (the disposed one, the kept one)."""
    job_id = st["jobStatus"]["jobId"]
    first = first or big_savepoint(sup.state, job_id)
    savepoint_over_http(sup, server, st, first)
    open(block, "w").close()
    second = make_savepoint(sup.state, job_id)
    server.savepoint_location = "file:" + second
    post(st, "savepoint")
    wait_for(lambda: os.path.exists(block + ".held"), 30, "a metadata call of the volume held", interval=0.1)
    return first, second


def test_healthz_and_sigterm_are_answered_while_retention_removes_a_savepoint(server, supervisors, tmp_path):
    sup, st, block = held_run(supervisors, server, tmp_path, RETENTION)
    addr = st["supervisor"]["httpAddress"]
    first, second = dispose_first_while_held(sup, server, st, block)

    def stop_with_savepoint():  # as Flink does, once the disposal is over (so that the test ends the same way always)
        wait_for(lambda: not os.path.exists(first) and not os.path.exists(first + ".disposing"), 30,
                 "the disposed savepoint removed", interval=0.1)
        server.savepoint_location = "file:" + make_savepoint(sup.state, st["jobStatus"]["jobId"])
        open(sup.stop_file, "w").close()
    server.on_stop = stop_with_savepoint
    # the loop is not inside the removal: the endpoint answers, and a SIGTERM is taken at once
    code, body = get(addr, "/healthz")
    assert code == 200 and body["lifecycleState"] == "STABLE", body
    code, live = get(addr, "/status")
    history = [os.path.basename(h["location"]) for h in live["jobStatus"]["savepointInfo"]["savepointHistory"]]
    assert history == [os.path.basename(second)], history
    said = sup.logs().count("SIGTERM received")
    sup.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: sup.logs().count("SIGTERM received") > said, 30, "the SIGTERM taken while the volume is held",
             interval=0.1)
    code, body = get(addr, "/healthz")
    assert code == 200, body
    assert os.path.exists(block + ".held") and os.path.exists(block)
    os.unlink(block)
    assert sup.proc.wait(60) == 0, sup.logs()[-3000:]
    server.on_stop = None
    types = [e["type"] for e in sup.events()]
    assert "SavepointDisposed" in types and types[-1] == "Stopped", types
    assert not os.path.exists(first) and not os.path.exists(first + ".disposing")


def test_a_kill_during_a_removal_never_restores_the_half_removed_savepoint(server, supervisors, tmp_path):
    # the hold engages on one file of the large savepoint: the removal is half done when flinklet is killed
    sup, st, block = held_run(supervisors, server, tmp_path, RETENTION, match="sst-0150")
    first, second = dispose_first_while_held(sup, server, st, block)
    code, body = get(st["supervisor"]["httpAddress"], "/healthz")
    assert code == 200, body
    os.killpg(sup.proc.pid, signal.SIGKILL)  # flinklet, its JVM and the removal with it
    sup.proc.wait()
    os.unlink(block)
    left = [n for n in os.listdir(os.path.join(sup.state, "savepoints")) if os.path.basename(first) in n]
    assert left, "the removal was not under way"
    # the half-removed savepoint never keeps a name a scan takes for a restore point
    assert not os.path.exists(first), "the half-removed savepoint kept its name"
    nxt = supervisors(server, state_dir=sup.state, upgrade_mode="savepoint", conf=RETENTION).start()
    st2 = wait_for(lambda: stable(nxt, nxt.status()), 30, "STABLE after the restart", interval=0.1)
    assert st2["restoredFrom"]["kind"] == "savepoint", st2["restoredFrom"]
    assert st2["restoredFrom"]["location"].rstrip("/").endswith(os.path.basename(second)), st2["restoredFrom"]
    # and what is left of it is removed
    wait_for(lambda: not any(os.path.basename(first) in n for n in os.listdir(os.path.join(sup.state, "savepoints"))),
             30, "the leftover removed", interval=0.1)
    assert os.path.exists(second)


def write_java_that_cannot_read(directory, stop_file, bad):
    """A "java" that, given -s <bad>, fails as Flink does when the restore point cannot be read; otherwise the fake
    JVM of fakeflink.py."""
    path = os.path.join(directory, "java")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "prev=\nfor a in \"$@\"; do\n"
                f"  if [ \"$prev\" = -s ] && [ \"${{a##*/}}\" = '{os.path.basename(bad)}' ]; then\n"
                f"    echo \"Caused by: java.io.FileNotFoundException: Cannot read {bad}/_metadata\"\n"
                "    exit 1\n  fi\n  prev=$a\ndone\n"
                f"while [ ! -e '{stop_file}' ]; do sleep 0.1; done\n"
                "exit 0\n")
    os.chmod(path, 0o755)


def test_a_demotion_on_a_held_volume_restores_the_next_older_point(server, supervisors, tmp_path):
    sup, st, block = held_run(supervisors, server, tmp_path, FAST)
    addr = st["supervisor"]["httpAddress"]
    job_id = st["jobStatus"]["jobId"]
    older = make_savepoint(sup.state, job_id)
    newer = make_savepoint(sup.state, job_id)
    write_java_that_cannot_read(str(sup.tmp), sup.stop_file, newer)
    open(block, "w").close()
    said = sup.logs().count(LAUNCHED)
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    # the restart restores the newest (newer), Flink cannot read it, it is given up: its rename is held
    try:
        wait_for(lambda: os.path.exists(block + ".held"), 30, "the demotion's rename held", interval=0.1)
    except AssertionError:
        raise AssertionError(sup.logs()[-4000:])
    code, body = get(addr, "/healthz")
    assert code in (200, 503), body
    code, live = get(addr, "/status")
    assert live["supervisor"]["pid"] == sup.proc.pid
    assert os.path.exists(newer) and not os.path.exists(newer + ".unreadable")
    os.unlink(block)

    def restarted():
        s = sup.status()
        return stable(sup, s) and s["restoredFrom"]["location"].rstrip("/").endswith(os.path.basename(older)) and s
    st2 = wait_for(restarted, 60, "restored from the older savepoint", interval=0.1)
    assert st2["restoredFrom"]["kind"] == "savepoint"
    assert os.path.exists(newer + ".unreadable") and not os.path.exists(newer)
    logs = sup.logs()
    assert logs.count(LAUNCHED) >= said + 2, logs[-3000:]
    # no launch restored the demoted point after it was given up
    types = [e["type"] for e in sup.events()]
    assert "RestorePointDemoted" in types, types
    restoring = [e["message"] for e in sup.events() if e["type"] == "Restoring"]
    demoted_at = types.index("RestoreFailed")
    after = [e["message"] for e in sup.events()[demoted_at:] if e["type"] == "Restoring"]
    assert after and all(os.path.basename(newer) not in m for m in after), restoring


def test_the_history_without_a_disposed_savepoint_is_on_the_volume_before_it_moves(server, supervisors, tmp_path):
    """Retention's order (docs/operations.md: nothing left in the history is deleted underneath it): the status
    document whose history no longer names the disposed savepoint is on the volume before the savepoint is renamed
    aside, so that a crash between the two never leaves a history that names a savepoint gone from the disk. The
    volume's calls on the first savepoint are held when the second completes (max.count 1): by then status.json on
    the volume must list only the second."""
    sup, st, block = held_run(supervisors, server, tmp_path, RETENTION, match="-m1m1m1m1m1m1")
    job_id = st["jobStatus"]["jobId"]
    first = os.path.join(sup.state, "savepoints", f"savepoint-{job_id[:6]}-m1m1m1m1m1m1")
    os.rename(make_savepoint(sup.state, job_id), first)
    _, second = dispose_first_while_held(sup, server, st, block, first)
    with open(os.path.join(sup.state, "status.json")) as f:
        listed = [h["location"] for h in json.load(f)["jobStatus"]["savepointInfo"]["savepointHistory"]]
    assert [os.path.basename(x.rstrip("/")) for x in listed] == [os.path.basename(second)], listed
    os.unlink(block)
    wait_for(lambda: not os.path.exists(first) and not os.path.exists(first + ".disposing"), 30, "the first removed",
             interval=0.1)
    server.savepoint_location = None
    sup.proc.send_signal(signal.SIGKILL)
    sup.proc.wait(10)

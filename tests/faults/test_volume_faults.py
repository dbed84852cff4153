"""Fault injection on the state volume (issue 8, item 2), below the e2e level: the real flinklet with the
volshim LD_PRELOAD library (tests/faults/volshim.c) against the fake Flink of fakeflink.py.

A scenario (start, the job RUNNING, a savepoint asked for over HTTP, SIGTERM with stop-with-savepoint) is run
once to list every step that changes a file on the volume (open for writing, write, fsync, rename, unlink,
mkdir, ...). Then, for every step:

- kill:   flinklet is killed with SIGKILL at that step (a write is torn in half first). Every file on the
          volume must still be readable, and a new flinklet on the volume must start, keep the job id, read
          status.json and every line of events.jsonl, leave no temp file behind, and restore from the
          savepoint whenever its directory exists.
- enospc: that one step fails with ENOSPC (a write takes half its bytes first). flinklet must not crash,
          must finish the scenario (the job keeps running, the stop still takes its savepoint), must say
          what failed, and the volume must be as readable as after a kill.

Both from an empty volume (first start) and from one that already holds every file (a restart)."""
import concurrent.futures
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import urllib.request

import pytest

from conftest import Supervisor, wait_for
from fakeflink import FakeFlink
from volkit import FAST, SHIM, get, make_savepoint, post, stable

TEMP = re.compile(r"^\..+\.tmp\.\d+$")


def scenario(sup, server):
    """Start, RUNNING, a savepoint over HTTP, SIGTERM. Returns how flinklet ended (exit code, or -9)."""
    server.savepoint_location = None
    job = {}

    def stop_with_savepoint():
        # as Flink does: the savepoint is written (the next id), then the job ends and so does the JVM; not for a
        # request of a flinklet killed meanwhile (its volume writes run on a thread of their own, so the kill can
        # come while the request is on its way): the stop file would end the next flinklet's JVM at once
        if not sup.alive():
            return
        if "id" in job:
            server.savepoint_location = "file:" + make_savepoint(sup.state, job["id"])
        open(sup.stop_file, "w").close()
    server.on_stop = stop_with_savepoint

    def running():
        if not sup.alive():
            return True
        try:
            st = sup.status()
        except ValueError:
            return False  # caught mid-kill: judged below
        return stable(sup, st)

    wait_for(running, 20, "STABLE (or the injected kill)", interval=0.05)
    if sup.alive():
        st = sup.status()
        job_id = job["id"] = st["jobStatus"]["jobId"]
        try:
            post(st, "savepoint")
            manual = make_savepoint(sup.state, job_id)
            server.savepoint_location = "file:" + manual

            def recorded():
                if not sup.alive():
                    return True
                s = sup.status()
                sp = s["jobStatus"]["savepointInfo"]["lastSavepoint"]
                return sp and sp["location"].endswith(os.path.basename(manual))
            wait_for(recorded, 20, "the savepoint recorded", interval=0.05)
        except OSError as e:
            # killed while answering: the socket closes a moment before the process can be reaped
            try:
                sup.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
            assert not sup.alive(), f"the HTTP endpoint failed while flinklet was up: {e}\n{sup.logs()[-2000:]}"
    if sup.alive():
        sup.proc.send_signal(signal.SIGTERM)
    try:
        code = sup.proc.wait(30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"flinklet did not stop:\n{sup.logs()[-3000:]}")
    server.on_stop = None
    if os.path.exists(sup.stop_file):
        os.unlink(sup.stop_file)
    jvm = 0
    try:
        jvm = (sup.status() or {}).get("jvm", {}).get("pid", 0)
    except ValueError:
        pass
    if jvm > 0:  # flinklet's JVM dies with it (PDEATHSIG); the fake one is a shell loop: make sure
        try:
            os.kill(jvm, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return code


def volume_is_readable(state):
    """Every file flinklet keeps parses; returns the job id (or None before it was written)."""
    job_id = None
    for root, _, files in os.walk(state):
        if "/savepoints" in root or "/checkpoints" in root or "/tmp" in root:
            continue
        for name in files:
            path = os.path.join(root, name)
            data = open(path, "rb").read()
            if TEMP.match(name):
                continue  # left by the kill between write and rename; the next start removes it
            if name == "status.json":
                st = json.loads(data)
                assert "lifecycleState" in st
            elif name == "job-id":
                assert re.fullmatch(rb"[0-9a-f]{32}\n", data), data
                job_id = data.decode().strip()
            elif name == "events.jsonl":
                lines = data.split(b"\n")
                for line in lines[:-1]:  # a torn last line is cut off at the next start; any other must parse
                    json.loads(line)
            elif name == "http.token":
                assert re.fullmatch(rb"[0-9a-f]{64}\n", data), data
            elif name.endswith(".yaml") and name != "config.yaml":
                assert data.endswith(b"\n"), (path, data[-80:])
            elif name == "config.yaml":
                assert b"execution.checkpointing.dir" in data, path
    return job_id


def restart_and_check(supervisors, server, state, job_id, tag):
    """A new flinklet (no shim) on the volume: starts, keeps the job id, reads everything, cleans up."""
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=FAST)
    # the scenario's stop handler runs on the fake Flink's thread: one that was under way when the scenario's
    # flinklet was killed can leave the stop file after the scenario removed it, which would end this JVM at once
    server.on_stop = None
    if os.path.exists(sup.stop_file):
        os.unlink(sup.stop_file)
    sup.start()
    try:
        st = wait_for(lambda: stable(sup, sup.status()), 20, f"{tag}: STABLE after the restart", interval=0.1)
    except AssertionError:
        raise AssertionError(f"{tag}: the next start failed:\n{sup.logs()[-3000:]}")
    if job_id:
        assert st["jobStatus"]["jobId"] == job_id, f"{tag}: the job id changed"
    sup.events()  # every line parses
    # (a temp file of the flinklet that runs now is a write of its own in flight, not a leftover: it polls every
    # 50 ms here, and the fake Flink's start-time changes with every answer, so it writes status.json often)
    leftovers = [n for d in (state, os.path.join(state, "conf"), os.path.join(state, "autoscaler"))
                 if os.path.isdir(d) for n in os.listdir(d) if TEMP.match(n) and not n.endswith(f".tmp.{sup.proc.pid}")]
    assert not leftovers, f"{tag}: temp files left after the restart: {leftovers}"
    sps = sorted(n for n in os.listdir(os.path.join(state, "savepoints")) if n.startswith("savepoint-")) \
        if os.path.isdir(os.path.join(state, "savepoints")) else []
    if sps:
        assert st["restoredFrom"]["kind"] == "savepoint", f"{tag}: savepoints {sps} exist, restored {st['restoredFrom']}"
    os.killpg(sup.proc.pid, signal.SIGKILL)
    sup.proc.wait()
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    return st


def steps_of(supervisors, server, tmp_path, state, tag):
    log = str(tmp_path / f"steps-{tag}.log")
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=FAST)
    sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_AT": "0", "VOLSHIM_LOG": log}
    sup.start()
    code = scenario(sup, server)
    assert code == 0, f"the scenario failed without faults ({code}):\n{sup.logs()[-3000:]}"
    with open(log) as f:
        steps = [line.split(" ", 2) for line in f.read().splitlines()]
    assert len(steps) > 20, steps
    return steps


@pytest.fixture(scope="module", autouse=True)
def shim():
    if not os.path.exists(SHIM):
        pytest.fail(f"{SHIM} is not built (make faults builds it)")


def pick(steps, probe):
    """The steps to fault: every one with FLINKLET_VOLUME_STEPS=all, else the first of each distinct (call,
    file) and the last write of each file (a file written again later: the replacement of one that exists)."""
    if os.environ.get("FLINKLET_VOLUME_STEPS") == "all":
        return list(range(1, len(steps) + 1))
    norm = [(call, re.sub(r"\.tmp\.\d+$", ".tmp", os.path.basename(path)) if path != probe else "<dir>")
            for _, call, path in steps]
    first, last = {}, {}
    for i, key in enumerate(norm, start=1):
        first.setdefault(key, i)
        last[key] = i
    return sorted(set(first.values()) | set(last.values()))


def run_step(made, server, tmp_path, base, probe, steps, i, action, start):
    call, path = steps[i - 1][1], steps[i - 1][2]
    state = str(tmp_path / f"s{i}")
    shutil.copytree(base, state, symlinks=True)
    tag = f"{start}/{action} at step {i} (in the probe run: {call} {path.replace(probe, '<state>')})"
    own = tmp_path / f"w{i}"  # its own config, fake java and stop file (two steps run at once)
    own.mkdir()
    sup = Supervisor(own, server, state_dir=state, upgrade_mode="savepoint", conf=FAST)
    made.append(sup)
    sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_AT": str(i), "VOLSHIM_ACTION": action}
    sup.start()
    code = scenario(sup, server)
    said = False
    if action == "kill":
        assert code in (-signal.SIGKILL, 0), f"{tag}: ended {code}:\n{sup.logs()[-3000:]}"
    else:
        # a failed write is said, never a crash; the stop still ends cleanly (3: refused to start, said why)
        assert code in (0, 3), f"{tag}: ended {code}:\n{sup.logs()[-3000:]}"
        said = "No space left on device" in sup.logs()
    job_id = volume_is_readable(state)
    restart_and_check(lambda srv, **kw: made.append(Supervisor(own, srv, **kw)) or made[-1], server, state,
                      job_id, tag)
    shutil.rmtree(state)
    return said


@pytest.mark.parametrize("start", ["empty", "existing"])
@pytest.mark.parametrize("action", ["kill", "enospc"])
def test_a_fault_at_every_write_leaves_the_volume_readable(server, supervisors, tmp_path, start, action):
    base = str(tmp_path / "base")
    if start == "existing":
        # one whole run first: every file exists, and the scenario replaces them
        steps_of(supervisors, server, tmp_path, base, "seed")
    else:
        os.makedirs(base)
    probe = str(tmp_path / "probe")
    shutil.copytree(base, probe, symlinks=True)
    steps = steps_of(supervisors, server, tmp_path, probe, "probe")
    chosen = pick(steps, probe)
    kinds = sorted({s[1] for s in steps})
    print(f"\n{start}/{action}: {len(steps)} steps ({', '.join(kinds)}); faulting {len(chosen)}")
    # two at a time, each with a fake Flink of its own
    made = []
    servers = queue.Queue()
    extra = FakeFlink().start()
    servers.put(server)
    servers.put(extra)

    def one(i):
        srv = servers.get()
        try:
            return run_step(made, srv, tmp_path, base, probe, steps, i, action, start)
        finally:
            servers.put(srv)
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            said = list(pool.map(one, chosen))
    finally:
        for sup in made:
            sup.cleanup()
        extra.close()
    if action == "enospc":
        assert any(said), "flinklet never said that the volume was full"


def test_events_the_volume_did_not_take_are_appended_later_in_order(server, supervisors, tmp_path):
    probe = str(tmp_path / "probe")
    steps = steps_of(supervisors, server, tmp_path, probe, "probe")
    first = next(i for i, (_, call, path) in enumerate(steps, start=1)
                 if call == "write" and path.endswith("/events.jsonl"))
    state = str(tmp_path / "state")
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=FAST)
    sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_AT": str(first), "VOLSHIM_ACTION": "enospc"}
    sup.start()
    assert scenario(sup, server) == 0, sup.logs()[-3000:]
    logs = sup.logs()
    assert "unable to write events.jsonl on the state volume" in logs and "No space left on device" in logs, logs
    events = sup.events()  # every line parses: the half line the full volume took was cut off again
    types = [e["type"] for e in events]
    assert types[0] == "SupervisorStarted", types  # the event that failed, appended first once it could be
    assert "VolumeWritable" in types, types
    assert types.index("VolumeWritable") > types.index("SupervisorStarted")
    assert types[-1] == "Stopped", types
    assert sup.status()["error"] is None or "state volume" not in sup.status()["error"]


def test_a_slow_volume_holds_back_neither_a_restart_nor_a_record(server, supervisors, tmp_path):
    """Every fsync of the volume takes 200 ms (the shim): the JVM is killed while the job runs, flinklet restarts it
    and is stopped with a savepoint. Nothing it recorded is lost (every event of the restart and of the stop is in
    events.jsonl, in order, and status.json says how it ended), and the events went to the volume in groups: fewer
    fdatasyncs of events.jsonl than events (each loop iteration's events share one)."""
    log = str(tmp_path / "steps-slow.log")
    state = str(tmp_path / "state")
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=FAST)
    sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_AT": "0", "VOLSHIM_LOG": log,
                     "VOLSHIM_SYNC_DELAY_MS": "200"}
    sup.start()
    first = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE on the slow volume", interval=0.1)
    jvm = first["jvm"]["pid"]
    os.kill(jvm, signal.SIGKILL)

    def restarted():
        st = sup.status()
        return stable(sup, st) and st["jvm"]["pid"] != jvm and st["jvm"]["restarts"] == 1 and st
    wait_for(restarted, 30, "the JVM restarted and the job STABLE again", interval=0.05)
    assert scenario(sup, server) == 0, sup.logs()[-3000:]
    events = sup.events()  # every line parses
    types = [e["type"] for e in events]
    # the restart, whole and in order
    exited = types.index("JvmExited")
    assert types[exited:].index("RestartScheduled") < types[exited:].index("JvmStarted"), types
    assert types.count("JvmStarted") == 2 and types.count("JobRunning") >= 2, types
    # the manual savepoint and the stop with a savepoint, to the last event
    assert "SavepointTriggered" in types[exited:], types
    assert types[-1] == "Stopped", types
    # every event flinklet logged is on the volume (the log has each event's message)
    logged = sup.logs()
    for e in events:
        assert e["message"][:60] in logged, e
    st = sup.status()
    assert st["lifecycleState"] == "SUSPENDED" and st["jvm"]["restarts"] == 1, st
    assert st["jobStatus"]["savepointInfo"]["lastSavepoint"]["triggerType"] == "UPGRADE", st
    with open(log) as f:
        syncs = [line for line in f.read().splitlines() if line.split(" ", 2)[1:] == ["fdatasync", f"{state}/events.jsonl"]]
    assert 0 < len(syncs) < len(events), f"{len(syncs)} fdatasyncs for {len(events)} events"


# ---- the volume held: what flinklet does while a sync cannot complete (VOLSHIM_SYNC_BLOCK_FILE) ----
#
# Every fsync and fdatasync under the state directory waits while the block file exists (the shim creates
# "<block>.held" when one waits). No timing: the test holds the volume, looks at what flinklet does meanwhile through
# its log (written at once, not on the volume) and its HTTP endpoint (served from memory), then lets go.

LAUNCHED = "started the MiniCluster JVM"


def held_run(supervisors, server, tmp_path):
    """flinklet with the shim in block mode, STABLE; returns (sup, status, block file)."""
    state = str(tmp_path / "state")
    block = str(tmp_path / "hold")
    sup = supervisors(server, state_dir=state, upgrade_mode="savepoint", conf=FAST)
    sup.start_env = {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_SYNC_BLOCK_FILE": block}
    sup.start()
    st = wait_for(lambda: stable(sup, sup.status()), 30, "STABLE", interval=0.1)
    return sup, st, block


def hold(block):
    open(block, "w").close()
    wait_for(lambda: os.path.exists(block + ".held"), 30, "a sync of the volume held", interval=0.1)


def kill_jvm_and_wait_for_pending_launch(sup, st, what):
    """The JVM is killed while the volume is held: flinklet decides to restart it and records the launch's intent
    (said in its log: the second such message), which cannot reach the volume."""
    said = sup.logs().count(what)
    os.kill(st["jvm"]["pid"], signal.SIGKILL)
    wait_for(lambda: sup.logs().count(what) == said + 1, 30, "the restart's launch recorded (pending)", interval=0.1)


def test_healthz_answers_while_a_launch_waits_for_the_volume(server, supervisors, tmp_path):
    sup, st, block = held_run(supervisors, server, tmp_path)
    addr = st["supervisor"]["httpAddress"]
    hold(block)
    kill_jvm_and_wait_for_pending_launch(sup, st, "with empty state")
    # the loop is not stuck behind the volume: the endpoint answers, from memory, that the launch is pending
    code, body = get(addr, "/healthz")
    assert code == 200 and body["lifecycleState"] == "DEPLOYED", body
    code, live = get(addr, "/status")
    assert live["jvm"]["pid"] == 0 and live["jvm"]["restarts"] == 1, live
    assert live["intent"].startswith("start the job"), live
    # and no JVM runs before its intent is on the volume
    assert sup.logs().count(LAUNCHED) == 1, sup.logs()[-3000:]
    assert os.path.exists(block + ".held")
    os.unlink(block)

    def restarted():
        s = sup.status()
        return stable(sup, s) and s["jvm"]["restarts"] == 1 and s["jvm"]["pid"] != st["jvm"]["pid"] and s
    wait_for(restarted, 30, "the JVM launched once the intent is on the volume", interval=0.1)
    types = [e["type"] for e in sup.events()]
    # the intent before the launch, on the volume as in the log
    second = len(types) - 1 - types[::-1].index("StartingEmpty")
    assert types.index("JvmExited") < second < len(types) - 1 - types[::-1].index("JvmStarted"), types
    assert sup.logs().count(LAUNCHED) == 2


def test_sigterm_while_a_launch_waits_for_the_volume_spawns_no_jvm(server, supervisors, tmp_path):
    sup, st, block = held_run(supervisors, server, tmp_path)
    job_id = st["jobStatus"]["jobId"]
    sp = make_savepoint(sup.state, job_id)  # a restore point the next launch must use, and the next run too
    hold(block)
    kill_jvm_and_wait_for_pending_launch(sup, st, "restoring job")
    sup.proc.send_signal(signal.SIGTERM)
    # the stop is handled at once, while the volume is still held: the launch is called off
    wait_for(lambda: "is called off before its JVM was started" in sup.logs(), 30, "the launch called off",
             interval=0.1)
    assert os.path.exists(block)
    os.unlink(block)  # flinklet writes what it recorded at exit (that wait is fine), then exits
    code = sup.proc.wait(30)
    logs = sup.logs()
    assert code == 0, logs[-3000:]
    # no JVM was spawned after the stop
    assert logs.count(LAUNCHED) == 1, logs[-3000:]
    types = [e["type"] for e in sup.events()]
    tail = types[len(types) - 1 - types[::-1].index("Restoring"):]
    assert tail.index("StopRequested") < tail.index("LaunchCancelled") < tail.index("Stopped"), types
    assert "JvmStarted" not in tail, types
    final = sup.status()
    assert final["lifecycleState"] == "SUSPENDED" and final["jvm"]["pid"] == 0, final
    # nothing is lost: the next start restores from that savepoint
    nxt = supervisors(server, state_dir=sup.state, upgrade_mode="savepoint", conf=FAST).start()
    st2 = wait_for(lambda: stable(nxt, nxt.status()), 30, "STABLE after the restart", interval=0.1)
    assert st2["jobStatus"]["jobId"] == job_id
    assert st2["restoredFrom"]["kind"] == "savepoint" and st2["restoredFrom"]["location"].endswith(
        os.path.basename(sp)), st2["restoredFrom"]


def test_suspend_over_http_is_answered_once_durable(server, supervisors, tmp_path):
    sup, st, block = held_run(supervisors, server, tmp_path)
    addr = st["supervisor"]["httpAddress"]
    with open(st["supervisor"]["tokenFile"]) as f:
        token = f.read().strip()

    def stop_with_savepoint():  # as Flink does: the savepoint, then the job and the JVM end
        server.savepoint_location = "file:" + make_savepoint(sup.state, st["jobStatus"]["jobId"])
        open(sup.stop_file, "w").close()
    server.on_stop = stop_with_savepoint
    hold(block)

    def suspend():
        req = urllib.request.Request(f"http://{addr}/api/v1/suspend", data=b"", method="POST",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(suspend)
        wait_for(lambda: "POST /api/v1/suspend" in sup.logs(), 30, "the request taken", interval=0.1)
        # the loop serves others meanwhile; the suspend is neither answered nor acted on before it is durable
        code, body = get(addr, "/healthz")
        assert code == 200 and body["lifecycleState"] == "STABLE", body
        assert not answer.done()
        assert "job.state is now suspended" not in sup.logs()
        assert not os.path.exists(os.path.join(sup.state, "job-state.override"))
        assert sup.logs().count(LAUNCHED) == 1
        os.unlink(block)
        code, body = answer.result(60)
    assert code == 202 and body["accepted"] == "suspend" and "warning" not in body, body
    with open(os.path.join(sup.state, "job-state.override")) as f:
        assert f.read().split() == ["suspended", "running"]
    wait_for(lambda: (sup.status() or {}).get("lifecycleState") == "SUSPENDED", 30, "SUSPENDED", interval=0.1)
    server.on_stop = None
    types = [e["type"] for e in sup.events()]
    assert types.index("DesiredStateChanged") < types.index("SavepointTriggered"), types


def test_suspend_wait_returns_once_status_json_says_suspended(server, supervisors, tmp_path):
    """`flinklet suspend --wait` returns when the job is suspended, and a reader of status.json right after sees
    it so: the endpoint answers from memory before the flush reaches the volume, so the client must not stop at
    the first SUSPENDED it reads (a CI run saw UPGRADING in status.json after `suspend --wait` returned 0)."""
    from conftest import BIN
    sup, st, block = held_run(supervisors, server, tmp_path)
    addr = st["supervisor"]["httpAddress"]
    asked = []
    server.on_stop = lambda: asked.append(True)  # flinklet asked for the stop: the JVM ends when the test says
    cli = subprocess.Popen([BIN, "suspend", "--wait", "--url", f"http://{addr}", "--token-file",
                            st["supervisor"]["tokenFile"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: asked, 60, "the stop-with-savepoint request (the suspend was answered)", interval=0.1)
        open(block, "w").close()  # from now on the volume holds every sync
        server.savepoint_location = "file:" + make_savepoint(sup.state, st["jobStatus"]["jobId"])
        open(sup.stop_file, "w").close()
        wait_for(lambda: os.path.exists(block + ".held"), 30, "a sync of the volume held", interval=0.1)
        # the endpoint says SUSPENDED (from memory), status.json does not yet, and the header says so
        wait_for(lambda: get(addr, "/status")[1]["lifecycleState"] == "SUSPENDED", 30, "SUSPENDED in memory",
                 interval=0.1)
        with urllib.request.urlopen(f"http://{addr}/status", timeout=10) as r:
            assert r.headers["Flinklet-Status-Recorded"] == "false", dict(r.headers)
        assert sup.status()["lifecycleState"] != "SUSPENDED"
        # the client keeps waiting while the volume holds the document (three of its polls)
        with pytest.raises(subprocess.TimeoutExpired):
            cli.wait(1.6)
        os.unlink(block)
        out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, err
        # right after it returned, status.json says what it waited for
        assert sup.status()["lifecycleState"] == "SUSPENDED" and sup.status()["jvm"]["pid"] == 0, sup.status()
        with urllib.request.urlopen(f"http://{addr}/status", timeout=10) as r:
            assert r.headers["Flinklet-Status-Recorded"] == "true", dict(r.headers)
    finally:
        server.on_stop = None
        if os.path.exists(block):
            os.unlink(block)
        if cli.poll() is None:
            cli.kill()
            cli.wait()

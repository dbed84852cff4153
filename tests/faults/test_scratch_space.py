"""The JVM's scratch space against what the job's state needs there (issue 30, item 1): Flink's scratch
(flinklet.scratch.dir: io.tmp.dirs, RocksDB's working directory) on a real, small tmpfs; the fake Flink of
fakeflink.py reports the newest checkpoint's full state size. flinklet records that size in status.json
(jobStatus.checkpointInfo.stateSize) and, at the next start, warns (a ScratchSpaceLow event and a log line) before it launches
the JVM when the scratch's room (statvfs, plus what the crashed JVM's scratch set aside still holds) is below twice the
state plus 128 MiB; with room, it says nothing. A warning that holds is in the status document's warnings, which
`flinklet status` shows."""
import json
import os
import subprocess

import pytest

from conftest import BIN, wait_for

MiB = 1 << 20

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def tmpfs(tmp_path):
    """Mounts tmpfs file systems of a given size under tmp_path; unmounted at the end."""
    mounted = []

    def mount(name, size_mib):
        d = tmp_path / name
        d.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0700", "tmpfs", str(d)], check=True)
        mounted.append(d)
        return str(d)

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], check=False)


def running(sup):
    st = sup.status()
    return st and st["supervisor"]["pid"] == sup.proc.pid and st["lifecycleState"] == "STABLE" and st


def warnings(sup):
    return [e for e in sup.events() if e["type"] == "ScratchSpaceLow"]


def run_with_checkpoint(server, supervisors, state, scratch, size):
    """A flinklet whose job reports a checkpoint of `size` bytes of state; stopped once status.json has the size."""
    server.checkpoint = {"id": 3, "external_path": f"file:{state}/checkpoints/x/chk-3", "state_size": size,
                         "end_to_end_duration": 100}
    sup = supervisors(server, state_dir=state, conf={"flinklet.scratch.dir": scratch}).start()
    wait_for(lambda: running(sup) and running(sup)["jobStatus"]["checkpointInfo"].get("stateSize") == size, 30,
             "the checkpoint's state size in status.json", interval=0.1)
    assert sup.stop() == 0, sup.logs()[-2000:]
    return sup


def test_a_scratch_smaller_than_the_state_needs_is_said_at_start(server, supervisors, tmp_path, tmpfs):
    state = str(tmp_path / "state")
    scratch = tmpfs("small", 64)  # the 64Mi /tmp emptyDir the StatefulSet used to give Flink's scratch
    first = run_with_checkpoint(server, supervisors, state, scratch, 200 * MiB)
    # the first start knew no state size: 128 MiB wanted, 64 free, so even it warns
    assert warnings(first), first.logs()[-2000:]

    before = len(first.events())
    second = supervisors(server, state_dir=state, conf={"flinklet.scratch.dir": scratch}).start()
    wait_for(lambda: running(second), 30, "the second flinklet's job running", interval=0.1)
    events = second.events()[before:]
    mine = [e for e in events if e["type"] == "ScratchSpaceLow"]
    assert mine, second.logs()[-2000:]
    msg = mine[0]["message"]
    assert scratch in msg and "528 MiB" in msg, msg  # 2 x 200 MiB + 128 MiB
    # said before the JVM was launched: at start, not once the pod is already being evicted
    types = [e["type"] for e in events]
    last_start = max(i for i, t in enumerate(types) if t == "ScratchSpaceLow")
    assert "JvmStarted" in types[last_start:], types[-10:]
    assert "528 MiB the job's state wants" in second.logs()  # the log line too
    assert second.stop() == 0


def test_a_scratch_with_room_for_the_state_says_nothing(server, supervisors, tmp_path, tmpfs):
    state = str(tmp_path / "state")
    scratch = tmpfs("roomy", 512)
    run_with_checkpoint(server, supervisors, state, scratch, 100 * MiB)  # 328 MiB wanted, 512 there
    second = supervisors(server, state_dir=state, conf={"flinklet.scratch.dir": scratch}).start()
    wait_for(lambda: running(second), 30, "the second flinklet's job running", interval=0.1)
    assert not warnings(second), warnings(second)
    assert second.stop() == 0


def crash_with_a_full_scratch(sup, scratch, junk_mib):
    """The running JVM leaves junk_mib MiB in its scratch directory (what RocksDB's working files are) and is killed:
    flinklet relaunches it at once, setting that scratch aside. Returns the events of the relaunch on."""
    wait_for(lambda: running(sup), 30, "the job running", interval=0.1)
    with open(os.path.join(scratch, "jvm", "rocksdb-working-files"), "wb") as f:
        for _ in range(junk_mib):
            f.write(b"\1" * MiB)
    before = len(sup.events())
    pid = sup.jvm_pid()
    os.kill(pid, 9)
    wait_for(lambda: (st := running(sup)) and st["jvm"]["pid"] not in (0, pid), 30, "the relaunched JVM running",
             interval=0.1)
    return sup.events()[before:]


def test_a_relaunch_after_a_crash_counts_the_old_scratch_as_room(server, supervisors, tmp_path, tmpfs):
    """Issue 35, item 3: the old JVM's 200 MiB are still on the 400 MiB scratch when the relaunch looks (set aside,
    removed by a child), but they are about to be freed: the 328 MiB the state wants fit, and nothing is said."""
    state = str(tmp_path / "state")
    scratch = tmpfs("relaunch", 400)
    server.checkpoint = {"id": 3, "external_path": f"file:{state}/checkpoints/x/chk-3", "state_size": 100 * MiB,
                         "end_to_end_duration": 100}
    sup = supervisors(server, state_dir=state, conf={"flinklet.scratch.dir": scratch}).start()
    wait_for(lambda: (st := running(sup)) and st["jobStatus"]["checkpointInfo"].get("stateSize") == 100 * MiB, 30,
             "the checkpoint's state size in status.json", interval=0.1)
    events = crash_with_a_full_scratch(sup, scratch, 200)
    assert "JvmStarted" in [e["type"] for e in events], events
    assert not warnings(sup), warnings(sup)
    # and the old scratch is gone for good
    wait_for(lambda: not [n for n in os.listdir(scratch) if n.startswith(".old-")] or None, 30,
             "the old scratch removed", interval=0.1)
    assert sup.stop() == 0


def test_a_relaunch_that_is_short_says_the_room_it_will_have(server, supervisors, tmp_path, tmpfs):
    """The state wants 428 MiB (2 x 150 + 128) of a 400 MiB scratch: the relaunch warns, before its JVM, and names
    the room the new JVM will have (about 400 MiB), not what was free while the old scratch waited for removal."""
    state = str(tmp_path / "state")
    scratch = tmpfs("short", 400)
    server.checkpoint = {"id": 3, "external_path": f"file:{state}/checkpoints/x/chk-3", "state_size": 150 * MiB,
                         "end_to_end_duration": 100}
    sup = supervisors(server, state_dir=state, conf={"flinklet.scratch.dir": scratch}).start()
    wait_for(lambda: (st := running(sup)) and st["jobStatus"]["checkpointInfo"].get("stateSize") == 150 * MiB, 30,
             "the checkpoint's state size in status.json", interval=0.1)
    assert not warnings(sup)  # the first start knew no state: 128 MiB wanted
    events = crash_with_a_full_scratch(sup, scratch, 200)
    types = [e["type"] for e in events]
    assert "ScratchSpaceLow" in types and "JvmStarted" in types[types.index("ScratchSpaceLow"):], types
    msg = warnings(sup)[0]["message"]
    free = float(msg.split(" has ")[1].split(" MiB free")[0])
    assert 380 <= free <= 400 and "428 MiB" in msg, msg
    assert sup.stop() == 0


def status_cli(state, *args):
    r = subprocess.run([BIN, "status", "--state-dir", state, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_flinklet_status_shows_the_scratch_warning_while_it_holds(server, supervisors, tmp_path, tmpfs):
    """Issue 35, item 6: `flinklet status` (the table and --json) shows a ScratchSpaceLow that still holds, and not
    once a launch found room: the 64 MiB scratch is short of the 128 MiB any JVM wants, then grown to 512 MiB and
    the JVM relaunched."""
    state = str(tmp_path / "state")
    scratch = tmpfs("grown", 64)
    sup = supervisors(server, state_dir=state, conf={"flinklet.scratch.dir": scratch}).start()
    wait_for(lambda: running(sup), 30, "the job running", interval=0.1)
    assert warnings(sup)
    table = status_cli(state)
    line = [x for x in table.splitlines() if x.startswith("warning ")]
    assert len(line) == 1 and "ScratchSpaceLow" in line[0] and "128 MiB the job's state wants" in line[0], table
    doc = json.loads(status_cli(state, "--json"))
    assert [(w["source"], w["event"]) for w in doc["warnings"]] == [("scratchSpace", "ScratchSpaceLow")], doc
    assert scratch in doc["warnings"][0]["message"] and doc["warnings"][0]["since"] > 0

    subprocess.run(["mount", "-o", "remount,size=512m", scratch], check=True)
    pid = sup.jvm_pid()
    os.kill(pid, 9)
    wait_for(lambda: (st := running(sup)) and st["jvm"]["pid"] not in (0, pid) and not st["warnings"] and st, 30,
             "the relaunched JVM running with no warning in force", interval=0.1)
    assert not [x for x in status_cli(state).splitlines() if x.startswith("warning ")]
    assert json.loads(status_cli(state, "--json"))["warnings"] == []
    assert len(warnings(sup)) == 1  # the event stays in the log: it was said
    assert sup.stop() == 0

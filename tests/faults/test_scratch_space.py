"""The JVM's scratch space against what the job's state needs there (issue 30, item 1): Flink's scratch
(flinklet.scratch.dir: io.tmp.dirs, RocksDB's working directory) on a real, small tmpfs; the fake Flink of
fakeflink.py reports the newest checkpoint's full state size. flinklet records that size in status.json
(jobStatus.checkpointInfo.stateSize) and, at the next start, warns (a ScratchSpaceLow event and a log line) before it launches
the JVM when the scratch's free space (statvfs) is below twice the state plus 128 MiB; with room, it says nothing."""
import os
import subprocess

import pytest

from conftest import wait_for

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
             "the checkpoint's state size in status.json")
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
    wait_for(lambda: running(second), 30, "the second flinklet's job running")
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
    wait_for(lambda: running(second), 30, "the second flinklet's job running")
    assert not warnings(second), warnings(second)
    assert second.stop() == 0

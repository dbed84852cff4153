"""Memory tuning on the real MiniCluster (issue 28): a RocksDB job in a 1 GiB pod, whose heap is sized by the plain
split for any job, uses a fraction of it. With the autoscaler evaluating (scaling off: nothing is rescaled) and
job.autoscaler.memory.tuning.enabled with maximize-managed-memory, an evaluation recommends a smaller heap and more
managed memory (a MemoryTuning event, autoscaler.memoryTuning in status.json, the smallest budget for the job); the
next launch flinklet makes anyway (here after a kill -9 of the JVM) runs with it: -Xmx and -XX:MaxMetaspaceSize on
the new JVM's command line, Flink's managed memory in its configuration, inside the budget, and the job RUNNING
again from its checkpoint. (Undoing a tuning after an OutOfMemoryError: tests/faults/test_memtune.py.)"""
import os
import re
import signal

from conftest import wait_for

MIB = 1 << 20
TUNING = {
    "state.backend.type": "rocksdb",
    "execution.checkpointing.interval": "2 s",
    "job.autoscaler.enabled": "true",
    "job.autoscaler.scaling.enabled": "false",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "job.autoscaler.memory.tuning.enabled": "true",
    "job.autoscaler.memory.tuning.maximize-managed-memory": "true",
    "metrics.fetcher.update-interval": "2000",
}


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode(errors="replace").split("\0")


def flag_mib(argv, name):
    for a in argv:
        m = re.fullmatch(rf"{re.escape(name)}(\d+)m", a)
        if m:
            return int(m.group(1))
    return None


def managed_in_conf(state):
    conf = open(os.path.join(state, "conf", "config.yaml")).read()
    m = re.search(r'"taskmanager\.memory\.managed\.size": "(\d+)m"', conf)
    return int(m.group(1)) if m else None


def test_an_oversized_heap_is_tuned_at_the_next_launch(flinklets):
    f = flinklets(conf=TUNING, memory="1g", job={"parallelism": 1, "args": ["--rate", "200", "--keys", "16", "--output", "OUT"]})
    f.start()
    f.wait_stable()
    pid0 = f.status()["jvm"]["pid"]
    argv0 = cmdline(pid0)
    heap0, meta0, managed0 = flag_mib(argv0, "-Xmx"), flag_mib(argv0, "-XX:MaxMetaspaceSize="), managed_in_conf(f.state)
    assert heap0 and meta0 and managed0, argv0

    def recommended():
        return [e for e in f.events() if e["type"] == "MemoryTuning" and "recommends" in e["message"]]
    wait_for(recommended, 180, "a MemoryTuning recommendation")
    # the status document follows the event (each reaches the volume with its own write)
    mt = wait_for(lambda: (m := f.status()["autoscaler"]["memoryTuning"])["next"] and m, 30, "memoryTuning in status")
    assert mt["enabled"] and mt["next"] and mt["recommended"], mt
    rec = mt["recommended"]
    # an oversized heap: the recommendation is smaller, managed memory gets what it gives back
    assert rec["heap"] < heap0 * MIB and rec["managed"] > managed0 * MIB, (mt, heap0, managed0)
    assert rec["heap"] >= 48 * MIB and rec["metaspace"] >= 80 * MIB, mt
    assert 0 < mt["minMemory"] < 1024 * MIB, mt
    assert "applied at the next launch" in recommended()[-1]["message"], recommended()[-1]
    assert mt["running"] is None  # the first JVM runs untuned

    # the next launch flinklet makes anyway: a kill -9 of the JVM
    os.kill(pid0, signal.SIGKILL)
    wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid0) and s["lifecycleState"] == "STABLE", 180,
             "the tuned JVM RUNNING")
    st = f.status()
    run = st["autoscaler"]["memoryTuning"]["running"]
    assert run, st["autoscaler"]["memoryTuning"]
    argv1 = cmdline(st["jvm"]["pid"])
    heap1, meta1, managed1 = flag_mib(argv1, "-Xmx"), flag_mib(argv1, "-XX:MaxMetaspaceSize="), managed_in_conf(f.state)
    assert heap1 * MIB == run["heap"] and meta1 * MIB == run["metaspace"] and managed1 * MIB == run["managed"], \
        (run, heap1, meta1, managed1)
    assert heap1 < heap0 and managed1 > managed0, (heap0, heap1, managed0, managed1)
    # inside the budget: what changed moved between the pools, nothing was added
    assert heap1 + meta1 + managed1 <= heap0 + meta0 + managed0, (heap0, meta0, managed0, heap1, meta1, managed1)
    tuned = [e for e in f.events() if e["type"] == "MemoryTuned"]
    assert len(tuned) == 1 and f"heap {heap1}m" in tuned[0]["message"], tuned
    # /metrics says it too
    code, text = f.http("/metrics")
    assert code == 200, text
    assert f'flinklet_memory_tuning_running_bytes{{pool="heap"}} {run["heap"]}' in text, text[-2000:]
    now = f.status()["autoscaler"]["memoryTuning"]["recommended"]
    assert f'flinklet_memory_tuning_recommended_bytes{{pool="managed"}} {now["managed"]}' in text, text[-2000:]
    assert re.search(r"^flinklet_memory_min_bytes \d+$", text, re.M) and "\nflinklet_memory_tuning_suspended 0" in text, \
        text[-2000:]
    # the job went on from its checkpoint
    assert st["restoredFrom"]["kind"] == "checkpoint", st["restoredFrom"]
    assert not [e for e in f.events() if e["type"] == "MemoryTuningUndone"]


def test_a_big_enough_recommendation_relaunches_through_a_savepoint(flinklets):
    """flinklet.memory-tuning.relaunch-above: a recommendation that moves at least that much out of the heap does
    not wait for a crash: the job is stopped with a savepoint (an upgrade's) and relaunched tuned at once, restored
    from that savepoint; and the tuned JVM's own figures do not relaunch it again (once tuned, the heap only
    grows)."""
    f = flinklets(conf=dict(TUNING, **{"flinklet.memory-tuning.relaunch-above": "64m"}), memory="1g",
                  job={"parallelism": 1, "args": ["--rate", "200", "--keys", "16", "--output", "OUT"]})
    f.start()
    pid0 = f.wait_stable()["jvm"]["pid"]
    heap0 = flag_mib(cmdline(pid0), "-Xmx")
    wait_for(lambda: [e for e in f.events() if e["type"] == "MemoryTuningRelaunch"], 180, "MemoryTuningRelaunch")
    wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid0) and s["lifecycleState"] == "STABLE", 180,
             "the tuned JVM RUNNING")
    st = f.status()
    heap1 = flag_mib(cmdline(st["jvm"]["pid"]), "-Xmx")
    assert heap1 < heap0 - 64, (heap0, heap1)
    assert st["autoscaler"]["memoryTuning"]["running"]["heap"] == heap1 * MIB, st["autoscaler"]["memoryTuning"]
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE", sp
    assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
    # two more whole evaluations in the tuned JVM: no second relaunch
    def no_scale():
        m = re.search(r'flinklet_autoscaler_evaluations_total\{outcome="no_scale"\} (\d+)', f.http("/metrics")[1])
        return int(m.group(1)) if m else 0
    before = no_scale()
    wait_for(lambda: no_scale() >= before + 2, 180, "two more evaluations")
    assert len([e for e in f.events() if e["type"] == "MemoryTuningRelaunch"]) == 1, \
        [(e["type"], e["message"]) for e in f.events()[-10:]]
    assert f.status()["jvm"]["pid"] == st["jvm"]["pid"]

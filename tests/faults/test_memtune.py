"""Memory tuning undone (issue 28): the real flinklet with the fake Flink and a fake java that records each launch's
command line. A volume whose status.json holds memory tuning's settings for the next launch (as an evaluation of
the autoscaler leaves them) launches tuned: -Xmx, -XX:MaxMetaspaceSize and Flink's managed memory from the tuned
split, a MemoryTuned event. When that JVM dies of memory (HotSpot's -XX:+ExitOnOutOfMemoryError line) or ends on
its own twice in a row, the tuning is undone: a MemoryTuningUndone event naming the cause, the next launch untuned,
and tuning stays off, across a restart of flinklet, until spec.resources.memory changes."""
import json
import os
import re
import time

import pytest

from conftest import wait_for

MIB = 1 << 20
CONF = {"state.backend.type": "rocksdb", "job.autoscaler.enabled": "true", "job.autoscaler.scaling.enabled": "false",
        "job.autoscaler.memory.tuning.enabled": "true"}
NEXT = {"metaspace": 86 * MIB, "managed": 500 * MIB, "heapFloor": 120 * MIB}


def with_memory(sup, memory):
    text = re.sub(r"  resources: \{memory: \S+\}\n", "", sup.config.read_text())
    sup.config.write_text(text.replace("  job:\n", f"  resources: {{memory: {memory}}}\n  job:\n"))


def java(sup, fail_first, cause):
    """A fake java: records "<pid> <argv>"; the first `fail_first` launches print `cause` (if any) and exit 3, the
    others stay up until the stop file appears (or SIGTERM)."""
    spawns = str(sup.tmp / f"spawns.{time.monotonic_ns()}")
    with open(sup.java, "w") as f:
        f.write("#!/bin/bash\n"
                f"echo \"$$ $*\" >> '{spawns}'\n"
                f"n=$(wc -l < '{spawns}')\n"
                f"if [ \"$n\" -le {fail_first} ]; then\n"
                + (f"  echo '{cause}' >&2\n" if cause else "") +
                "  exit 3\nfi\n"
                "trap 'exit 143' TERM\n"
                f"while [ ! -e '{sup.stop_file}' ]; do sleep 0.05; done\n"
                f"rm -f '{sup.stop_file}'\nexit 0\n")
    os.chmod(sup.java, 0o755)
    return spawns


def launches(spawns):
    try:
        with open(spawns) as f:
            return [line.split(" ", 1)[1] for line in f if " " in line]
    except FileNotFoundError:
        return []


def flag(argv, name):
    m = re.search(rf"(?:^| ){re.escape(name)}(\d+)m", argv)
    return int(m.group(1)) if m else None


def named(sup, kind):
    return [e for e in sup.events() if e["type"] == kind]


def stable(sup):
    wait_for(lambda: sup.alive() and (st := sup.own_status() or {}).get("lifecycleState") == "STABLE"
             and st["jvm"]["pid"] > 0,
             30, f"STABLE\n{sup.logs()[-3000:]}", interval=0.1)


def plant_settings(sup):
    """The settings an evaluation would have left for the next launch."""
    path = os.path.join(sup.state, "status.json")
    doc = json.load(open(path))
    doc["autoscaler"]["memoryTuning"] = dict(doc["autoscaler"]["memoryTuning"], enabled=True, next=NEXT)
    with open(path, "w") as f:
        json.dump(doc, f)


def untuned_run(server, supervisors):
    """A first run, untuned: its -Xmx is the plain split's."""
    sup = supervisors(server, conf=CONF)
    with_memory(sup, "1g")
    spawns = java(sup, 0, None)
    sup.start()
    stable(sup)
    assert sup.stop() == 0
    [argv] = launches(spawns)
    assert not named(sup, "MemoryTuned")
    return sup, flag(argv, "-Xmx")


@pytest.mark.parametrize("how", ["out-of-memory", "two-failures"])
def test_a_tuned_jvm_that_fails_undoes_the_tuning(server, supervisors, how):
    sup, plain_heap = untuned_run(server, supervisors)
    plant_settings(sup)
    n0 = len(sup.events())
    if how == "out-of-memory":
        spawns = java(sup, 1, "Terminating due to java.lang.OutOfMemoryError: Java heap space")
    else:
        spawns = java(sup, 2, None)
    sup.start()
    failed = 1 if how == "out-of-memory" else 2
    wait_for(lambda: len(launches(spawns)) == failed + 1, 30, f"the launch after the undo\n{sup.logs()[-3000:]}",
             interval=0.1)
    stable(sup)
    runs = launches(spawns)
    tuned = [flag(a, "-Xmx") for a in runs[:failed]]
    # the tuned launches: a smaller heap (500m of managed memory), the metaspace of the settings
    assert all(h is not None and h < plain_heap for h in tuned), (tuned, plain_heap)
    assert all(flag(a, "-XX:MaxMetaspaceSize=") == 86 for a in runs[:failed]), runs[:failed]
    assert len(named(sup, "MemoryTuned")[0:]) == failed, [e["type"] for e in sup.events()[n0:]]
    # undone: the next launch is the plain split
    assert flag(runs[failed], "-Xmx") == plain_heap, (runs[failed], plain_heap)
    undone = named(sup, "MemoryTuningUndone")
    assert len(undone) == 1, [e["type"] for e in sup.events()[n0:]]
    want = "ran out of memory: Terminating due to java.lang.OutOfMemoryError" if how == "out-of-memory" \
        else "failed 2 times in a row"
    assert want in undone[0]["message"], undone
    mt = sup.status()["autoscaler"]["memoryTuning"]
    assert mt["next"] is None and mt["running"] is None, mt
    assert want in mt["suspended"] and mt["suspendedAtMemory"] == 1024 * MIB, mt
    conf = open(os.path.join(sup.state, "conf", "config.yaml")).read()
    assert '"taskmanager.memory.managed.size": "500m"' not in conf, conf
    assert sup.stop() == 0

    # it stays undone across a restart of flinklet, even with settings planted again
    plant_settings(sup)
    spawns = java(sup, 0, None)
    sup.start()
    stable(sup)
    assert flag(launches(spawns)[0], "-Xmx") == plain_heap
    assert sup.status()["autoscaler"]["memoryTuning"]["suspended"]
    assert sup.stop() == 0

    # a new budget lifts it: the planted settings apply again (they fit 2g too)
    with_memory(sup, "2g")
    spawns = java(sup, 0, None)
    sup.start()
    stable(sup)
    assert named(sup, "MemoryTuningResumed")
    mt = sup.status()["autoscaler"]["memoryTuning"]
    assert mt["suspended"] is None and mt["running"] is not None, mt
    assert flag(launches(spawns)[0], "-XX:MaxMetaspaceSize=") == 86
    assert sup.stop() == 0
    sup.cleanup()


def test_a_stopped_tuned_jvm_is_no_failure(server, supervisors):
    """JVMs that flinklet itself stops (SIGTERM of flinklet, twice) never count against the tuning."""
    sup, plain_heap = untuned_run(server, supervisors)
    plant_settings(sup)
    for _ in range(2):
        spawns = java(sup, 0, None)
        sup.start()
        stable(sup)
        assert flag(launches(spawns)[0], "-Xmx") < plain_heap
        assert sup.stop() == 0
    assert not named(sup, "MemoryTuningUndone")
    assert sup.status()["autoscaler"]["memoryTuning"]["suspended"] is None
    sup.cleanup()

"""Attack tests of memory tuning (issue 28 item 1), written from docs/autoscaler.md "Memory tuning",
docs/configuration.md (Memory, `flinklet.memory-tuning.relaunch-above`), docs/operations.md (metrics, reloads) and
docs/reliability.md only, never from the code. The JVM is memtune_kit's fake java, which records its command line and
the Flink configuration it was given, and dies of memory (HotSpot's `OutOfMemoryError` line) or crashes while it runs
tuned; the TaskManager's heap, metaspace and managed memory come from fakeflink's REST API, answered with hostile
figures where a test wants them. Every assertion is a sentence of the docs; a promise flinklet breaks is an
xfail(strict) naming the defect. The plan command and check-config: test_attack_memtune_plan.py.
Run: make faults FAULTS_ARGS='-k attack_memtune'."""
import json
import os
import re
import signal
import time

import pytest

from attack_kit import write_checkpoint
from conftest import wait_for
from fakeflink import end_soon
from memtune_kit import (MIB, Rig, assert_undone, assert_within_budget, gauge, kill9, metrics_text, relaunches,
                         set_memory, set_option, tuned_and_running, undone, untunable_mib)


# autoscaler.md: "the next launch flinklet makes anyway (a crash restart, ...) uses the settings"; "`-Xmx`/`-Xms`,
# `-XX:MaxMetaspaceSize` and `taskmanager.memory.managed.size` come from the tuned split, and a `MemoryTuned` event
# says it with the untuned figures beside"; status `running` is the tuned split, /metrics has it.
def test_the_next_crash_restart_is_tuned_as_the_status_said(server, supervisors):
    rig = Rig(server, supervisors).start()
    first = rig.stable(1)
    assert rig.mt()["running"] is None
    body = metrics_text(rig.sup)
    assert gauge(body, "flinklet_memory_tuning_recommended_bytes", "heap") is None, "a gauge before an evaluation"
    mt = rig.recommended()
    assert mt["enabled"] is True and mt["suspended"] is None
    assert rig.events("MemoryTuning"), "no MemoryTuning event for a recommendation that moves the metaspace 48m"
    nxt = mt["next"]
    body = metrics_text(rig.sup)
    assert gauge(body, "flinklet_memory_tuning_recommended_bytes", "heap") == mt["recommended"]["heap"]
    assert gauge(body, "flinklet_memory_tuning_running_bytes", "heap") is None
    assert gauge(body, "flinklet_memory_min_bytes") == mt["minMemory"]
    rig.crash_jvm()
    second = rig.stable(2)
    assert second.metaspace == nxt["metaspace"] == mt["recommended"]["metaspace"], (second, mt)
    assert second.heap == mt["recommended"]["heap"], (second, mt)
    assert (second.managed or 0) == nxt["managed"]
    assert_within_budget(second, first)
    tuned = rig.events("MemoryTuned")
    assert len(tuned) == 1, tuned
    assert f"{first.heap // MIB}m" in tuned[0]["message"], tuned[0]["message"]  # the untuned figure beside
    wait_for(lambda: rig.mt()["running"], 10, "status running", interval=0.1)
    assert rig.mt()["running"]["heap"] == second.heap
    body = metrics_text(rig.sup)
    assert gauge(body, "flinklet_memory_tuning_running_bytes", "heap") == second.heap
    assert gauge(body, "flinklet_memory_tuning_suspended") in (0, None)
    assert rig.sup.stop() == 0


# Every instant a tuned JVM can die of memory: at its start (before Flink says RUNNING), once it runs, and while
# flinklet waits on it for a savepoint (the relaunch's stop).
@pytest.mark.parametrize("instant", ["at-start", "running"])
def test_a_tuned_jvm_that_dies_of_memory_is_undone(server, supervisors, instant):
    rig = Rig(server, supervisors).start()
    first = tuned_and_running(rig, oom_delay=0 if instant == "at-start" else 2)
    rig.crash_jvm()
    assert_undone(rig, first)
    # stays undone: later evaluations and crash restarts launch untuned
    rig.wait_evaluations(4)
    n = len(rig.launches())
    rig.crash_jvm()
    wait_for(lambda: len(rig.launches()) > n, 20, "a restart", interval=0.1)
    assert rig.stable(n + 1).split() == first.split()
    assert len(rig.events("MemoryTuningUndone")) == 1
    assert rig.sup.stop() == 0


def test_a_tuned_jvm_after_a_relaunch_dying_of_memory_during_a_savepoint_is_undone(server, supervisors):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "1m"}, upgrade_mode="savepoint")
    server.real_savepoints = True
    rig.start()
    first = rig.stable(1)
    with open(rig.oom, "w") as f:
        f.write(f"-Xmx{first.heap // MIB}m")
    wait_for(lambda: rig.events("MemoryTuningRelaunch"), 30, "MemoryTuningRelaunch", interval=0.1)
    rig.end_jvm()  # the untuned JVM ends once its stop savepoint is taken, as the MiniCluster does
    tuned = rig.stable(2)
    assert tuned.heap != first.heap
    # the tuned JVM is asked for a savepoint (a manual one) and dies of memory while flinklet waits for it
    server.real_savepoints = False
    server.savepoint_location = None
    set_option(rig.sup, "kubernetes.operator.periodic.savepoint.interval", "1 s")
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: any(m == "POST" and p.endswith("/savepoints") for _, m, p in server.requests), 30, "a savepoint",
             interval=0.1)
    open(rig.oom_now, "w").close()
    assert_undone(rig, first)
    assert rig.sup.stop() in (0, 4)


# "or ends on its own twice in a row before the next evaluation undoes it"
def test_a_tuned_jvm_that_fails_twice_in_a_row_is_undone(server, supervisors):
    rig = Rig(server, supervisors).start()
    first = rig.stable(1)
    rig.recommended()
    with open(rig.crash, "w") as f:
        f.write(f"-Xmx{first.heap // MIB}m")
    rig.crash_jvm()
    assert_undone(rig, first)
    assert len([x for x in rig.launches() if x.heap != first.heap]) == 2, rig.launches()
    assert rig.sup.stop() == 0


def test_one_tuned_failure_then_an_evaluation_is_not_undone(server, supervisors):
    rig = Rig(server, supervisors).start()
    _, tuned = rig.tuned_by_a_crash()
    rig.wait_evaluations(3)
    rig.crash_jvm()  # one failure after an evaluation in a tuned JVM
    rig.wait_evaluations(3)
    rig.crash_jvm()  # and another, after an evaluation again: never two in a row before an evaluation
    wait_for(lambda: len(rig.launches()) >= 4, 20, "launch 4", interval=0.1)
    last = rig.stable(4)
    assert not rig.events("MemoryTuningUndone"), rig.events("MemoryTuningUndone")
    assert last.heap == tuned.heap and rig.mt()["suspended"] is None
    assert rig.sup.stop() == 0


# Only a *tuned* JVM's death undoes tuning: an untuned JVM that dies of memory has nothing to undo.
def test_an_untuned_jvm_dying_of_memory_suspends_nothing(server, supervisors):
    rig = Rig(server, supervisors).start()
    first = rig.stable(1)
    # every JVM whose -Xmx is not 1m (all of them) dies of memory: the untuned one too, at once
    with open(rig.oom, "w") as f:
        f.write("-Xmx1m")
    open(rig.oom_now, "w").close()
    wait_for(lambda: len(rig.launches()) > 1, 20, "the restart after the untuned OOM", interval=0.1)
    os.unlink(rig.oom)
    os.unlink(rig.oom_now)
    rig.stable_latest()
    rig.recommended()
    assert not rig.events("MemoryTuningUndone")
    assert rig.mt()["suspended"] is None
    rig.crash_jvm()
    n = len(rig.launches())
    wait_for(lambda: len(rig.launches()) > n, 20, "a restart", interval=0.1)
    assert rig.stable(n + 1).heap != first.heap, "tuning was suspended by an untuned JVM"
    assert rig.sup.stop() == 0


# reliability.md: undone "stays undone across a restart and resumes with a new budget"; autoscaler.md: "tuning stays
# off ... until `spec.resources.memory` changes (`MemoryTuningResumed`)".
def test_undone_survives_a_restart_of_flinklet_and_resumes_on_a_new_budget(server, supervisors):
    rig = Rig(server, supervisors).start()
    first = tuned_and_running(rig, oom_delay=0)
    rig.crash_jvm()
    assert_undone(rig, first)
    suspended_at = rig.mt()["suspendedAtMemory"]
    assert suspended_at == 1 << 30, rig.mt()
    assert rig.sup.stop() == 0
    rig.sup.start()
    n = len(rig.launches())
    wait_for(lambda: len(rig.launches()) > n, 20, "the launch after the restart", interval=0.1)
    again = rig.stable(n + 1)
    assert again.split() == first.split(), "tuning undone before the restart applied after it"
    assert rig.mt()["suspended"], rig.mt()
    rig.wait_evaluations(3)
    # a change that is not spec.resources.memory, applied in place, does not resume it
    set_option(rig.sup, "job.autoscaler.memory.tuning.overhead", "0.3")
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: any("0.3" in e["message"] or "in place" in e["message"] for e in rig.events("ConfigChanged")),
             20, "the in-place change", interval=0.1)
    rig.wait_evaluations(2)
    assert rig.mt()["suspended"] and not rig.events("MemoryTuningResumed")
    # a new budget resumes it (an upgrade: the new JVM is launched with the new budget)
    set_memory(rig.sup, "1100m")
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: rig.events("MemoryTuningResumed"), 30, "MemoryTuningResumed", interval=0.1)
    wait_for(lambda: rig.mt()["suspended"] is None, 10, "suspended cleared", interval=0.1)
    wait_for(lambda: gauge(metrics_text(rig.sup), "flinklet_memory_tuning_suspended") in (0, None), 10, "gauge 0",
             interval=0.1)
    assert rig.sup.stop() == 0


# "the next launch flinklet makes anyway (..., a restart of flinklet) uses the settings": a kill -9 between the
# recommendation and any launch; the new flinklet's launch is the tuned one, all three pools from one split.
def test_kill_9_between_the_recommendation_and_a_launch_then_the_restart_is_tuned(server, supervisors):
    rig = Rig(server, supervisors).start()
    first = rig.stable(1)
    mt = rig.recommended()
    wait_for(lambda: rig.events("MemoryTuning"), 10, "MemoryTuning", interval=0.1)
    kill9(rig)
    rig.sup.start()
    second = rig.stable(2)
    assert second.split() == (mt["recommended"]["heap"], mt["next"]["managed"], mt["next"]["metaspace"]), (second, mt)
    assert_within_budget(second, first)
    wait_for(lambda: rig.events("MemoryTuned"), 10, "MemoryTuned", interval=0.1)
    assert rig.sup.stop() == 0


# The same kill -9 at the moment the relaunch begins (MemoryTuningRelaunch said, the stop savepoint in flight): the
# restart launches either split whole, never a mix, and the tuning is not lost.
def test_kill_9_during_the_tuning_relaunch_never_half_applies(server, supervisors):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "1m"}, upgrade_mode="savepoint")
    rig.start()
    first = rig.stable(1)
    wait_for(lambda: rig.events("MemoryTuningRelaunch"), 30, "MemoryTuningRelaunch", interval=0.1)
    mt = rig.mt()
    kill9(rig)
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)
    rig.sup.start()
    second = rig.stable(2)
    tuned = (mt["recommended"]["heap"], mt["next"]["managed"], mt["next"]["metaspace"])
    assert second.split() == tuned, (second, first, mt)
    assert_within_budget(second, first)
    assert rig.sup.stop() == 0


# configuration.md: SIGTERM's whole budget is flinklet.shutdown.timeout (6 s here); a SIGTERM while the tuning
# relaunch waits on its savepoint still ends flinklet within it, and the next start launches tuned.
def test_sigterm_during_the_tuning_relaunch_savepoint(server, supervisors):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "1m"}, upgrade_mode="savepoint")
    rig.start()
    first = rig.stable(1)
    wait_for(lambda: rig.events("MemoryTuningRelaunch"), 30, "MemoryTuningRelaunch", interval=0.1)
    wait_for(lambda: any(m == "POST" and p.endswith("/stop") for _, m, p in server.requests), 10, "the stop savepoint",
             interval=0.1)
    mt = rig.mt()
    t = time.monotonic()
    rig.sup.proc.send_signal(signal.SIGTERM)
    rc = rig.sup.proc.wait(20)
    assert time.monotonic() - t <= 6 + 2, f"SIGTERM took {time.monotonic() - t:.1f}s"
    assert rc in (0, 4, 5), rc
    assert not rig.sup.alive()
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)
    rig.sup.start()
    n = len(rig.launches())
    wait_for(lambda: len(rig.launches()) > n, 20, "the launch after the restart", interval=0.1)
    nxt = rig.stable(n + 1)
    assert nxt.split() == (mt["recommended"]["heap"], mt["next"]["managed"], mt["next"]["metaspace"]), (nxt, first)
    assert rig.sup.stop() == 0


# configuration.md: relaunch-above "`0`: tuning waits for the next launch flinklet makes anyway"; and without
# `job.autoscaler.memory.tuning.enabled` it does nothing.
@pytest.mark.parametrize("conf", [{"flinklet.memory-tuning.relaunch-above": "0"},
                                  {"flinklet.memory-tuning.relaunch-above": "1m",
                                   "job.autoscaler.memory.tuning.enabled": "false"},
                                  {"flinklet.memory-tuning.relaunch-above": "49m"}],
                         ids=["zero", "tuning-off", "above-the-gain"])
def test_no_relaunch(server, supervisors, conf):
    rig = Rig(server, supervisors, conf=conf, upgrade_mode="savepoint").start()
    first = rig.stable(1)
    mt = rig.recommended()
    assert mt["recommended"]["heap"] - first.heap == 48 * MIB, (mt, first)  # the gain the edges are set around
    rig.wait_evaluations(6)
    assert not relaunches(rig)
    assert len(rig.launches()) == 1
    assert not any(p.endswith("/stop") for _, _, p in server.requests)
    assert rig.sup.stop() in (0, 4)


# "a recommendation that moves at least that much into or out of the heap relaunches the job ... through a savepoint
# with `savepoint` (`MemoryTuningRelaunch`, then the stop and launch of an upgrade)": at exactly the gain (48m) it relaunches, once.
@pytest.mark.parametrize("threshold", ["48m", "1m"])
def test_relaunch_at_the_threshold_once(server, supervisors, threshold):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": threshold},
              upgrade_mode="savepoint")
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)  # the MiniCluster ends after its stop-with-savepoint
    rig.start()
    first = rig.stable(1)
    wait_for(lambda: relaunches(rig), 30, "MemoryTuningRelaunch", interval=0.1)
    second = rig.stable(2)
    mt = rig.mt()
    assert second.heap == first.heap + 48 * MIB and second.heap == mt["recommended"]["heap"]
    assert "-s " in second.argv, "the relaunch did not restore from its savepoint"
    rig.wait_evaluations(6)
    assert len(relaunches(rig)) == 1, relaunches(rig)
    assert len(rig.launches()) == 2
    assert rig.sup.stop() in (0, 4)


# autoscaler.md: "Your own `taskmanager.memory.managed.size` and `taskmanager.memory.jvm-metaspace.size` win over
# tuning's", with RocksDB and maximize-managed-memory (where tuning would move managed memory most).
@pytest.mark.parametrize("keys", [{"taskmanager.memory.managed.size": "100m"},
                                  {"taskmanager.memory.jvm-metaspace.size": "200m"},
                                  {"taskmanager.memory.managed.size": "100m",
                                   "taskmanager.memory.jvm-metaspace.size": "200m"}],
                         ids=["managed", "metaspace", "both"])
def test_the_users_memory_keys_win_over_tuning(server, supervisors, keys):
    conf = dict(keys, **{"state.backend.type": "rocksdb",
                         "job.autoscaler.memory.tuning.maximize-managed-memory": "true"})
    rig = Rig(server, supervisors, conf=conf).start()
    first = rig.stable(1)
    rig.recommended()
    rig.crash_jvm()
    second = rig.stable(2)
    if "taskmanager.memory.managed.size" in keys:
        assert second.managed == 100 * MIB, second
    if "taskmanager.memory.jvm-metaspace.size" in keys:
        assert second.metaspace == 200 * MIB, second
    assert_within_budget(second, first)
    assert rig.sup.stop() == 0


# "with `maximize-managed-memory` and a native state backend (RocksDB, ForSt), everything the heap and metaspace do
# not need" goes to managed memory; "Figures measured in a tuned JVM never tune its heap smaller again ... once
# tuned, the heap only grows".
def test_rocksdb_maximize_managed_then_the_tuned_heap_only_grows(server, supervisors):
    conf = {"state.backend.type": "rocksdb", "job.autoscaler.memory.tuning.maximize-managed-memory": "true"}
    rig = Rig(server, supervisors, conf=conf, managed=250 * MIB).start()
    first = rig.stable(1)
    mt = rig.recommended()
    rig.crash_jvm()
    second = rig.stable(2)
    assert second.heap < first.heap and second.managed > first.managed, (first, second, mt)
    assert second.heap >= 120 * MIB  # 100 MiB used, times 1.2
    assert_within_budget(second, first)
    # in the tuned JVM the job uses far less heap: the recommendation must not shrink the heap below the tuned one
    rig.tm["Status.JVM.Memory.Heap.Used"] = 5 * MIB
    rig.wait_evaluations(6)
    assert rig.mt()["recommended"]["heap"] >= second.heap, rig.mt()
    rig.crash_jvm()
    third = rig.stable(3)
    assert third.heap >= second.heap, (second, third)
    assert_within_budget(third, first)
    # and a job that then needs more heap gets it (growing stays possible)
    rig.tm["Status.JVM.Memory.Heap.Used"] = 300 * MIB
    rig.wait_evaluations(6)
    assert rig.mt()["recommended"]["heap"] >= 360 * MIB, rig.mt()
    assert rig.sup.stop() == 0


# Hostile TaskManager figures: whatever Flink reports, flinklet stays up, its status parses, and a launch is never
# past spec.resources.memory nor below the floors (48 MiB of heap, 80 MiB of metaspace).
HOSTILE = {
    "nan-literal": {"Status.JVM.Memory.Heap.Used": "@NaN", "Status.JVM.Memory.Metaspace.Used": "@NaN"},
    "nan-string": {"Status.JVM.Memory.Heap.Used": "NaN", "Status.JVM.Memory.Metaspace.Used": "Infinity"},
    "negative": {"Status.JVM.Memory.Heap.Used": -5e8, "Status.JVM.Memory.Metaspace.Used": -1},
    "zero": {"Status.JVM.Memory.Heap.Used": 0, "Status.JVM.Memory.Metaspace.Used": 0,
             "Status.Flink.Memory.Managed.Used": 0},
    "tiny": {"Status.JVM.Memory.Heap.Used": 1, "Status.JVM.Memory.Metaspace.Used": 1},
    "managed-huge": {"Status.Flink.Memory.Managed.Used": 1e30, "Status.Flink.Memory.Managed.Total": 1e30},
    "strings": {"Status.JVM.Memory.Heap.Used": "lots", "Status.JVM.Memory.Metaspace.Used": [1, 2]},
}


@pytest.mark.parametrize("figures", list(HOSTILE), ids=list(HOSTILE))
def test_hostile_figures_never_launch_outside_the_budget_or_floors(server, supervisors, figures):
    rig = Rig(server, supervisors, conf={"state.backend.type": "rocksdb",
                                         "job.autoscaler.memory.tuning.maximize-managed-memory": "true"})
    rig.tm.update(HOSTILE[figures])
    rig.start()
    first = rig.stable(1)
    rig.wait_evaluations(6)
    assert rig.sup.alive()
    json.dumps(rig.mt())  # the status parsed; its memoryTuning is JSON
    rig.crash_jvm()
    second = rig.stable(2)
    assert_within_budget(second, first)
    assert rig.sup.stop() == 0


# "A job that needs more than the budget holds is not tuned; the recommendation says the budget it needs."
@pytest.mark.parametrize("figures", [
    {"Status.JVM.Memory.Heap.Used": 2 << 30},
    {"Status.JVM.Memory.Metaspace.Used": 900 * MIB},
    {"Status.JVM.Memory.Heap.Used": 1e20},
], ids=["heap-2g", "metaspace-900m", "heap-1e20"])
def test_a_job_bigger_than_the_budget_is_not_tuned_and_told_the_budget_it_needs(server, supervisors, figures):
    rig = Rig(server, supervisors)
    rig.tm.update(figures)
    rig.start()
    first = rig.stable(1)
    wait_for(lambda: (rig.mt() or {}).get("reason") and rig.evaluations() >= 4, 30, "an evaluation", interval=0.1)
    rig.wait_evaluations(2)
    mt = rig.mt()
    assert mt["minMemory"] and mt["minMemory"] > 1 << 30, mt
    m = re.search(r"at least (\d+)m", mt["reason"])
    assert m and int(m.group(1)) * MIB > 1 << 30, mt["reason"]
    rig.crash_jvm()
    second = rig.stable(2)
    assert second.split() == first.split(), (first, second)
    assert not rig.events("MemoryTuned")
    assert rig.sup.stop() == 0


# A small budget: the floors (48 MiB heap, 80 MiB metaspace) hold and the split never grows past 256m.
@pytest.mark.parametrize("heap", [1, 60 * MIB], ids=["nothing-used", "more-than-fits"])
def test_a_small_budget_keeps_the_floors(server, supervisors, heap):
    rig = Rig(server, supervisors, memory="256m", heap=heap, metaspace=1).start()
    first = rig.stable(1)
    rig.wait_evaluations(6)
    rig.crash_jvm()
    second = rig.stable(2)
    assert_within_budget(second, first)
    assert rig.sup.stop() == 0


# "It needs ... `spec.resources.memory`": without it nothing is derived and nothing tuned.
def test_without_a_memory_budget_nothing_is_tuned(server, supervisors):
    rig = Rig(server, supervisors, memory=None).start()
    first = rig.stable(1)
    rig.wait_evaluations(6)
    rig.crash_jvm()
    second = rig.stable(2)
    assert second.heap is None and first.heap is None, second.argv
    assert not rig.events("MemoryTuned") and not rig.events("MemoryTuningRelaunch")
    assert rig.sup.stop() == 0


# "without it the recommendation is computed, said and shown all the same" (tuning.enabled false): never applied.
def test_tuning_off_recommends_but_never_applies(server, supervisors):
    rig = Rig(server, supervisors, conf={"job.autoscaler.memory.tuning.enabled": "false",
                                         "flinklet.memory-tuning.relaunch-above": "1m"}).start()
    first = rig.stable(1)
    mt = rig.recommended()
    assert mt["enabled"] is False
    assert rig.events("MemoryTuning")
    assert gauge(metrics_text(rig.sup), "flinklet_memory_tuning_recommended_bytes", "metaspace") == 80 * MIB
    rig.crash_jvm()
    second = rig.stable(2)
    assert second.split() == first.split()
    assert not rig.events("MemoryTuned") and not relaunches(rig)
    assert rig.sup.stop() == 0


# "Each recommendation that moves a pool by 8 MiB or more is said in a `MemoryTuning` event": with your own metaspace
# and a hashmap backend nothing can move, so no event, no relaunch, no different launch.
def test_a_recommendation_that_moves_nothing_is_not_said_nor_relaunched(server, supervisors):
    rig = Rig(server, supervisors, conf={"taskmanager.memory.jvm-metaspace.size": "128m",
                                         "flinklet.memory-tuning.relaunch-above": "1m"}).start()
    first = rig.stable(1)
    rig.recommended()
    rig.wait_evaluations(6)
    assert not relaunches(rig)
    rig.crash_jvm()
    assert rig.stable(2).split() == first.split()
    assert not rig.events("MemoryTuned")
    assert rig.sup.stop() == 0


def test_a_recommendation_that_moves_nothing_sends_no_memory_tuning_event(server, supervisors):
    rig = Rig(server, supervisors, conf={"taskmanager.memory.jvm-metaspace.size": "128m"}).start()
    rig.stable(1)
    rig.recommended()
    rig.wait_evaluations(4)
    assert not rig.events("MemoryTuning"), [e["message"] for e in rig.events("MemoryTuning")]
    assert rig.sup.stop() == 0


# reliability.md: "JVMs flinklet stops never count": a tuned JVM stopped twice by upgrades (a reload of a Flink
# option) has not failed twice in a row.
def test_tuned_jvms_flinklet_stops_never_count(server, supervisors):
    rig = Rig(server, supervisors).start()
    _, tuned = rig.tuned_by_a_crash()
    for n, value in ((3, "2 s"), (4, "3 s")):
        set_option(rig.sup, "execution.checkpointing.interval", value)
        rig.sup.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: len(rig.launches()) >= n, 30, f"upgrade launch {n}", interval=0.1)
        assert rig.stable(n).heap == tuned.heap
    assert not rig.events("MemoryTuningUndone")
    assert rig.mt()["suspended"] is None
    assert rig.sup.stop() == 0


# operations.md: "A new document that does not validate is rejected ... and the running job is untouched."
def test_a_reload_with_a_bad_relaunch_threshold_changes_nothing(server, supervisors):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "0"}).start()
    first = rig.stable(1)
    rig.recommended()
    set_option(rig.sup, "flinklet.memory-tuning.relaunch-above", "1 parsec")
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: rig.events("ConfigRejected"), 20, "ConfigRejected", interval=0.1)
    msg = rig.events("ConfigRejected")[-1]["message"]
    field = r"spec\.flinkConfiguration\.flinklet\.memory-tuning\.relaunch-above"
    assert re.search(rf"flinklet\.yaml:\d+:\d+: {field}", msg), msg
    rig.wait_evaluations(4)
    assert rig.sup.jvm_pid() == first.pid and len(rig.launches()) == 1
    assert not relaunches(rig)
    assert rig.sup.stop() == 0


# "stays undone across a restart": a kill -9 the moment MemoryTuningUndone is said.
def test_undone_survives_a_kill_9_right_after_it(server, supervisors):
    rig = Rig(server, supervisors).start()
    first = tuned_and_running(rig, oom_delay=0)
    rig.crash_jvm()
    wait_for(lambda: rig.events("MemoryTuningUndone"), 30, "MemoryTuningUndone", interval=0.1)
    kill9(rig)
    rig.sup.start()
    n = len(rig.launches())
    wait_for(lambda: len(rig.launches()) > n, 20, "the launch after the restart", interval=0.1)
    assert rig.stable_latest().split() == first.split()
    assert rig.mt()["suspended"]
    rig.wait_evaluations(3)
    rig.crash_jvm()
    wait_for(lambda: len(rig.launches()) > n + 1, 20, "a crash restart", interval=0.1)
    assert rig.stable_latest().split() == first.split()
    assert rig.sup.stop() == 0


# "until `spec.resources.memory` changes": changed while flinklet was down counts too, and once resumed the next
# launch after an evaluation is tuned again inside the new budget.
def test_a_budget_changed_while_flinklet_was_down_resumes_tuning(server, supervisors):
    rig = Rig(server, supervisors).start()
    undone(rig)
    assert rig.sup.stop() == 0
    set_memory(rig.sup, "1100m")
    rig.sup.start()
    wait_for(lambda: rig.events("MemoryTuningResumed"), 30, "MemoryTuningResumed", interval=0.1)
    base = rig.stable_latest()
    assert rig.mt()["suspended"] is None
    said = len(rig.events("MemoryTuning"))
    wait_for(lambda: len(rig.events("MemoryTuning")) > said, 30, "a recommendation after the resume", interval=0.1)
    rig.crash_jvm()
    n = len(rig.launches())
    wait_for(lambda: rig.launches()[-1].pid != base.pid, 20, "a crash restart", interval=0.1)
    tuned = rig.stable_latest()
    assert tuned.split() != base.split(), "tuning did not resume"
    assert_within_budget(tuned, base)
    assert n >= 1 and rig.sup.stop() == 0


# "the tuned split never goes past `spec.resources.memory`": settings computed for 1g (RocksDB, most of it managed)
# must not be carried into a smaller budget a reload sets.
@pytest.mark.parametrize("new_memory", [640, 420])
def test_a_smaller_budget_after_tuning_is_never_exceeded(server, supervisors, new_memory):
    conf = {"state.backend.type": "rocksdb", "job.autoscaler.memory.tuning.maximize-managed-memory": "true"}
    rig = Rig(server, supervisors, conf=conf, heap=40 * MIB, metaspace=40 * MIB).start()
    first = rig.stable(1)
    rig.recommended()
    rig.crash_jvm()
    tuned = rig.stable(2)
    assert tuned.managed > first.managed
    set_memory(rig.sup, f"{new_memory}m")
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: len(rig.launches()) >= 3, 30, "the upgrade's launch", interval=0.1)
    third = rig.stable_latest()
    slots = 4
    room = (new_memory - untunable_mib(new_memory, slots)) * MIB
    assert third.heap >= 48 * MIB and third.metaspace >= 80 * MIB, third
    assert third.heap + third.metaspace + third.managed <= room, (third, room // MIB)
    assert rig.sup.stop() == 0


# configuration.md: relaunch-above relaunches the job "as an upgrade does, by the job's upgradeMode"; autoscaler.md:
# "through a savepoint with `savepoint`, from the newest checkpoint with `last-state`, empty with `stateless`"
# (`MemoryTuningRelaunch`, then the stop and launch of an upgrade), and the event says which.
@pytest.mark.parametrize("mode", ["savepoint", "last-state", "stateless"])
def test_the_tuning_relaunch_follows_the_upgrade_mode(server, supervisors, mode):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "1m"}, upgrade_mode=mode)
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)
    rig.start()
    job_id = wait_for(lambda: os.path.exists(os.path.join(rig.sup.state, "job-id")) and
                      open(os.path.join(rig.sup.state, "job-id")).read().strip(), 30, "the job id", interval=0.1)
    chk = write_checkpoint(rig.sup.state, job_id, 3)  # Flink completes checkpoint 3, then its REST API says so
    server.checkpoint = {"id": 3, "external_path": f"file:{chk}"}
    first = rig.stable(1)
    wait_for(lambda: relaunches(rig), 30, "MemoryTuningRelaunch", interval=0.1)
    said = relaunches(rig)[0]["message"]
    second = rig.stable(2)
    assert second.heap != first.heap
    asked = any(m == "POST" and (p.endswith("/stop") or p.endswith("/savepoints")) for _, m, p in server.requests)
    if mode == "savepoint":
        assert "through a savepoint" in said, said
        assert asked, "no savepoint was asked for"
        assert " -s " in f" {second.argv} " and "savepoint-" in second.argv, "the relaunch did not restore a savepoint"
    elif mode == "last-state":
        assert "from the newest checkpoint" in said and "savepoint" not in said, said
        assert not asked, "a savepoint was asked for"
        assert " -s " in f" {second.argv} " and "chk-3" in second.argv, "the relaunch did not restore the checkpoint"
    else:
        assert "empty" in said and "savepoint" not in said, said
        assert not asked, "a savepoint was asked for"
        assert " -s " not in f" {second.argv} ", "a stateless relaunch restored state"
    assert rig.sup.stop() in (0, 4)


# operations.md: when an upgrade's savepoint fails with last-state-fallback off, "an `UpgradeAborted` event says the
# job keeps running on its current spec ... (change the file or send SIGHUP to try again)"; reliability.md: the
# relaunch with `savepoint` goes through a savepoint "once". A tuning relaunch whose savepoint keeps failing is not retried every cycle.
def test_a_tuning_relaunch_whose_savepoint_fails_is_not_retried_every_cycle(server, supervisors):
    rig = Rig(server, supervisors, upgrade_mode="savepoint",
              conf={"flinklet.memory-tuning.relaunch-above": "1m",
                    "kubernetes.operator.job.upgrade.last-state-fallback.enabled": "false"})
    server.real_savepoints = True
    server.stop_failures = 1000  # Flink fails every stop-with-savepoint
    rig.start()
    rig.stable(1)
    wait_for(lambda: rig.events("UpgradeAborted"), 30, "UpgradeAborted", interval=0.1)
    rig.wait_evaluations(8)
    stops = [p for _, m, p in server.requests if m == "POST" and p.endswith("/stop")]
    assert len(stops) <= 2 and len(relaunches(rig)) <= 2, (len(stops), len(relaunches(rig)))
    assert len(rig.launches()) == 1
    # autoscaler.md: "a `MemoryTuningRelaunchHeld` event says so once"
    assert len(rig.events("MemoryTuningRelaunchHeld")) == 1, [e["message"] for e in rig.events("MemoryTuning")]
    server.stop_failures = 0
    assert rig.sup.stop() in (0, 4, 5)


# autoscaler.md: a held relaunch is tried again "until ... the file changes or SIGHUP".
def test_a_held_tuning_relaunch_is_tried_again_after_sighup(server, supervisors):
    rig = Rig(server, supervisors, upgrade_mode="savepoint",
              conf={"flinklet.memory-tuning.relaunch-above": "1m",
                    "kubernetes.operator.job.upgrade.last-state-fallback.enabled": "false"})
    server.real_savepoints = True
    server.stop_failures = 1000
    rig.start()
    rig.stable(1)
    wait_for(lambda: rig.events("MemoryTuningRelaunchHeld"), 30, "MemoryTuningRelaunchHeld", interval=0.1)
    n = len(relaunches(rig))
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: len(relaunches(rig)) > n, 30, "a relaunch after SIGHUP", interval=0.1)
    server.stop_failures = 0
    assert rig.sup.stop() in (0, 4, 5)


# "tuning stays off (`suspended` says why) until `spec.resources.memory` changes": no relaunch either.
def test_no_tuning_relaunch_while_suspended(server, supervisors):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "1m"}, upgrade_mode="savepoint")
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)
    rig.start()
    first = rig.stable(1)
    with open(rig.oom, "w") as f:
        f.write(f"-Xmx{first.heap // MIB}m")
    with open(rig.oom_delay, "w") as f:
        f.write("1")
    wait_for(lambda: relaunches(rig), 30, "MemoryTuningRelaunch", interval=0.1)
    assert_undone(rig, first)
    n = len(rig.launches())
    rig.wait_evaluations(8)
    assert len(relaunches(rig)) == 1, [e["message"] for e in relaunches(rig)]
    assert len(rig.launches()) == n
    assert rig.sup.stop() in (0, 4)


# relaunch-above is one of "most `flinklet.*`" options applied in place: set from 0 to 1m by a reload, the next
# evaluation relaunches (and the reload itself launches nothing).
def test_relaunch_above_set_by_a_reload_applies_in_place(server, supervisors):
    rig = Rig(server, supervisors, conf={"flinklet.memory-tuning.relaunch-above": "0"}, upgrade_mode="savepoint")
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)
    rig.start()
    first = rig.stable(1)
    rig.recommended()
    rig.wait_evaluations(2)
    assert not relaunches(rig)
    set_option(rig.sup, "flinklet.memory-tuning.relaunch-above", "1m")
    rig.sup.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: relaunches(rig), 30, "MemoryTuningRelaunch after the reload", interval=0.1)
    second = rig.stable(2)
    assert second.heap == first.heap + 48 * MIB
    assert rig.sup.stop() in (0, 4)


# "A tuned JVM that dies of memory (`OutOfMemoryError`, the GC overhead limit) ... undoes it": at once, one death
# (not two failures in a row), whichever of HotSpot's out-of-memory ends it is; the metaspace one is the very case
# the metaspace floor is for (FLINK-35489).
OOMS = {
    "heap-exit": ("Terminating due to java.lang.OutOfMemoryError: Java heap space", 3),
    "gc-overhead": ("Terminating due to java.lang.OutOfMemoryError: GC overhead limit exceeded", 3),
    "metaspace-main": ('Exception in thread "main" java.lang.OutOfMemoryError: Metaspace', 1),
    # HotSpot's -XX:+CrashOnOutOfMemoryError: the line, then SIGABRT
    "crash-on-oom": ("Aborting due to java.lang.OutOfMemoryError: Java heap space", "abort"),
    "direct": ('Exception in thread "main" java.lang.OutOfMemoryError: Direct buffer memory', 1),
}


@pytest.mark.parametrize("kind", list(OOMS.values()), ids=list(OOMS))
def test_one_death_of_memory_undoes_at_once(server, supervisors, kind):
    rig = Rig(server, supervisors).start()
    first = rig.stable(1)
    line, code = kind
    with open(rig.oom + ".line", "w") as f:
        f.write(line + "\n")
    with open(rig.oom + ".code", "w") as f:
        f.write(str(code))
    open(rig.oom + ".once", "w").close()
    tuned_and_running(rig, oom_delay=1)
    rig.crash_jvm()
    assert_undone(rig, first, timeout=15)
    tuned = [x for x in rig.launches() if x.heap != first.heap]
    assert len(tuned) == 1, rig.launches()
    assert rig.sup.stop() == 0


# With relaunch-above: the first recommendation shrinks the heap into managed memory (RocksDB, maximize), a relaunch
# applies it once; less heap used in the tuned JVM never relaunches it smaller ("once tuned, the heap only grows");
# a job that then needs much more heap is relaunched to grow it, never to shrink it on the way.
def test_relaunches_shrink_once_then_only_grow(server, supervisors):
    conf = {"state.backend.type": "rocksdb", "job.autoscaler.memory.tuning.maximize-managed-memory": "true",
            "flinklet.memory-tuning.relaunch-above": "16m"}
    rig = Rig(server, supervisors, conf=conf, upgrade_mode="savepoint")
    server.real_savepoints = True
    server.on_stop = lambda: end_soon(rig.sup.stop_file)
    rig.start()
    first = rig.stable(1)
    wait_for(lambda: relaunches(rig), 30, "the first relaunch", interval=0.1)
    second = rig.stable(2)
    assert second.heap < first.heap
    rig.tm["Status.JVM.Memory.Heap.Used"] = 5 * MIB
    rig.wait_evaluations(8)
    assert len(relaunches(rig)) == 1 and len(rig.launches()) == 2, [e["message"] for e in relaunches(rig)]
    rig.tm["Status.JVM.Memory.Heap.Used"] = 250 * MIB
    # relaunched on the window's average: one relaunch or a few while the average climbs, each growing the heap
    wait_for(lambda: rig.launches()[-1].heap >= 300 * MIB, 60, "a relaunch that grows the heap to 300m", interval=0.1)
    last = rig.stable_latest()
    heaps = [x.heap for x in rig.launches()[1:]]
    assert heaps == sorted(heaps), heaps
    assert_within_budget(last, first)
    assert rig.sup.stop() in (0, 4)

"""Attack tests (from docs/configuration.md "Memory" only): a budget too small to run is refused by `run` and by a
reload as by check-config ("Both are checked by check-config, run and a reload"), with the error at the field, and
nothing started or changed. The JVM is the fault suite's fake java against fakeflink (the budget only shapes its
command line). Run: make faults FAULTS_ARGS='-k attack'."""
import os
import re
import signal

from attack_kit import install_fake_java, spawn_count
from conftest import wait_for
from memtune_kit import set_memory as with_memory


def memory_line(sup):
    lines = sup.config.read_text().splitlines()
    return [i + 1 for i, line in enumerate(lines) if line.strip().startswith("memory:")][0]


# configuration.md: "Nothing is started and nothing on the volume changes when the configuration is invalid";
# "A budget too small for the state backend on its own is an error at `spec.resources.memory` with the smallest
# budget that fits"; exit code 2.
def test_run_refuses_a_budget_too_small_and_writes_nothing(server, supervisors):
    s = supervisors(server)
    spawns = install_fake_java(s)
    with_memory(s, "200m")
    s.start()
    rc = s.proc.wait(30)
    assert rc == 2, s.logs()[-2000:]
    assert re.search(rf"flinklet\.yaml:{memory_line(s)}:\d+: spec\.resources\.memory: 200m is too small.*at least \d+m",
                     s.logs()), s.logs()[-2000:]
    assert spawn_count(spawns) == 0
    assert not os.path.exists(s.state) or not os.listdir(s.state), os.listdir(s.state)


# configuration.md: "Both are checked by `check-config`, `run` and a reload". A reload (SIGHUP) to a budget too small
# is refused: the running JVM stays (no new one), and the error names the field.
def test_a_reload_to_a_budget_too_small_is_refused_and_the_job_keeps_running(server, supervisors):
    s = supervisors(server)
    spawns = install_fake_java(s)
    with_memory(s, "512m")
    s.start()
    wait_for(lambda: (s.status() or {}).get("lifecycleState") == "STABLE" and s.jvm_pid() > 0, 30, "STABLE",
             interval=0.1)
    pid = s.jvm_pid()
    n = spawn_count(spawns)
    with_memory(s, "200m")
    s.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "spec.resources.memory" in s.logs().split("SIGHUP", 1)[-1], 30, "the reload's error", interval=0.1)
    assert s.alive()
    st = s.status()
    assert st["jvm"]["pid"] == pid and st["lifecycleState"] == "STABLE", st
    assert spawn_count(spawns) == n, "the refused budget was launched"
    assert s.stop() == 0

"""spec.resources.memory is a hard budget for the whole pod, flinklet and its JVM (docs/configuration.md,
"Memory"): at 256m the test job runs inside a memory cgroup limited to 256 MiB, keeps completing a checkpoint a
second, and is neither restarted nor OOM-killed; a budget too small is refused before anything starts. The
10-minute version with the figures is `make bench BENCH=memory`."""
import json
import os
import subprocess

import pytest

from conftest import BIN, check_output, wait_for
from testkit import MemoryLimit


def jvm_argv(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().decode().split("\0")


def jvm_env(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return f.read().decode(errors="replace").split("\0")


@pytest.mark.heavy
def test_256m_pod_runs_and_checkpoints_under_a_256m_limit(flinklets, tmp_path):
    """With class-data sharing as a new pod has it (no archive yet, so a JVM would record for one) and a dump
    due 5 s into the job: at 256m flinklet makes none (the dump of Flink's 56 MiB archive, in the JVM's native memory
    and the page cache, got the JVM OOM-killed 30 s into every run, as make bench's memory run found)."""
    cg = MemoryLimit(f"flinklet-e2e-memory-{os.getpid()}", 256 << 20)
    if not cg.make():
        pytest.skip(f"no memory cgroup on this machine: {cg.why_not}")
    f = flinklets(memory="256m", job={"upgradeMode": "savepoint"},
                  conf={"flinklet.jvm.class-data-sharing.archive-dir": str(tmp_path / "cds"),
                        "flinklet.jvm.class-data-sharing.dump-delay": "5 s"})
    try:
        f.start(preexec_fn=cg.enter)
        st = f.wait_stable(timeout=180)
        jvm = st["jvm"]["pid"]
        argv = jvm_argv(jvm)
        for flag in ("-Xmx62m", "-Xms62m", "-XX:MaxMetaspaceSize=80m", "-XX:ReservedCodeCacheSize=24m",
                     "-XX:MaxDirectMemorySize=24m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"):
            assert flag in argv, f"{flag} not on the JVM's command line: {argv}"
        assert "MALLOC_ARENA_MAX=2" in jvm_env(jvm)
        assert "-XX:+RecordDynamicDumpInfo" not in argv, "a JVM at 256m records for a class-data-sharing dump"
        assert "no class-data-sharing archive is made at spec.resources.memory 256 MiB" in f.logs()
        first = f.wait_checkpoint(1, timeout=60)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
        # about two minutes of checkpoints, one a second, inside the limit
        f.wait_checkpoint(first + 100, timeout=400)
        st = f.status()
        assert st["jvm"]["restarts"] == 0 and st["jvm"]["pid"] == jvm, f"the JVM was restarted: {st['jvm']}"
        stats = cg.stats()
        assert stats["oom_kills"] == 0, f"the kernel's OOM killer ended a process of the pod: {stats}"
        # the stop takes its savepoint inside the budget too, and the output is still exactly once
        f.signal(15)
        assert f.wait_exit(60) == 0, f.logs()[-3000:]
        assert f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], "no savepoint recorded at the stop"
        assert cg.stats()["oom_kills"] == 0
        rc, summary = check_output(f.output)
        assert rc == 0, summary
    finally:
        f.stop()
        wait_for(lambda: not f.proc or f.proc.poll() is not None, 60, "flinklet gone")
        cg.remove()


def test_budget_too_small_is_refused_with_the_smallest_that_fits(tmp_path):
    cfg = tmp_path / "flinklet.yaml"
    cfg.write_text("metadata:\n  name: small\nspec:\n  flinkConfiguration:\n    state.backend.type: rocksdb\n"
                   "  resources:\n    memory: 256m\n  job:\n    jarURI: local:///opt/job.jar\n    parallelism: 2\n")
    r = subprocess.run([BIN, "check-config", "-c", str(cfg)], capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert (f"{cfg}:7:13: spec.resources.memory: 256m is too small for the whole pod with the rocksdb state "
            "backend: it must be at least 301m") in r.stdout + r.stderr
    # run refuses the same document before it touches the state directory
    state = tmp_path / "state"
    r = subprocess.run([BIN, "run", "-c", str(cfg), "--state-dir", str(state)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not state.exists()
    # the same job with the heap backend fits in 256m, with the derived Flink settings in the effective config
    cfg.write_text(cfg.read_text().replace("rocksdb", "hashmap"))
    r = subprocess.run([BIN, "check-config", "-c", str(cfg), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    conf = json.loads(r.stdout)["spec"]["flinkConfiguration"]
    assert conf["taskmanager.memory.managed.size"] == "0m"
    assert conf["taskmanager.memory.network.min"] == conf["taskmanager.memory.network.max"] == "8m"

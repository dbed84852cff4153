"""memtune_kit: helpers of test_attack_memtune.py, written from the docs only (docs/autoscaler.md "Memory tuning",
docs/configuration.md "Memory", docs/operations.md's metrics): fakeflink answering the autoscaler's metric requests
with the TaskManager figures a test sets (hostile ones go through as they are), a fake java that records its
command line and Flink configuration and dies of memory (HotSpot's OutOfMemoryError line) or crashes when it runs
tuned, and what the docs promise of a launch (inside the budget, above the floors)."""
import json
import math
import os
import re
import signal
import time
import urllib.parse

from testkit import wait_for

MIB = 1 << 20
OOM_LINE = "Terminating due to java.lang.OutOfMemoryError: Java heap space"
VERTEX_METRICS = {"busyTimeMsPerSecond": 500, "backPressuredTimeMsPerSecond": 0, "numRecordsInPerSecond": 100,
                  "Source__fake.numRecordsInPerSecond": 100, "Source__fake.numRecordsOutPerSecond": 100,
                  "Source__fake.numRecordsIn": None, "Source__fake.numRecordsOut": None,
                  "numRecordsIn": None, "numRecordsOut": None}
# what the autoscaler needs to evaluate a whole window within seconds
FAST = {"job.autoscaler.enabled": "true", "job.autoscaler.metrics.window": "2 s",
        "job.autoscaler.stabilization.interval": "0", "autoscaler.standalone.control-loop.interval": "500 ms",
        "job.autoscaler.memory.tuning.enabled": "true"}


def size(text):
    """A JVM or Flink memory size ("644m", "675282944", "1g") in bytes."""
    m = re.fullmatch(r"(\d+)\s*([kmgt]?)b?", text.strip().lower())
    assert m, f"not a size: {text!r}"
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m.group(2)]


class Launch:
    """One spawn of the fake java: its heap, metaspace and managed memory as flinklet set them."""

    def __init__(self, pid, argv, conf):
        self.pid, self.argv, self.conf = pid, argv, conf
        xmx = re.findall(r"(?:^| )-Xmx(\S+)", argv)
        xms = re.findall(r"(?:^| )-Xms(\S+)", argv)
        meta = re.findall(r"-XX:MaxMetaspaceSize=(\S+)", argv)
        managed = re.findall(r'^"?taskmanager\.memory\.managed\.size"?\s*:\s*"?([^"\n]+)"?\s*$', conf, re.M)
        self.heap = size(xmx[-1]) if xmx else None
        self.xms = size(xms[-1]) if xms else None
        self.metaspace = size(meta[-1]) if meta else None
        self.managed = size(managed[-1]) if managed else None

    def split(self):
        return (self.heap, self.managed, self.metaspace)

    def __repr__(self):
        return f"Launch(heap={self.heap}, managed={self.managed}, metaspace={self.metaspace})"


class Rig:
    """flinklet with the autoscaler and memory tuning against fakeflink, whose TaskManager reports `tm` (bytes, or
    any JSON value: hostile figures go through as they are), and a fake java (see install_java)."""

    def __init__(self, server, supervisors, memory="1g", conf=None, upgrade_mode="last-state", heap=100 * MIB,
                 metaspace=60 * MIB, managed=0):
        self.server = server
        self.tm = {"Status.JVM.Memory.Heap.Used": heap, "Status.JVM.Memory.Heap.Max": 700 * MIB,
                   "Status.JVM.GarbageCollector.All.TimeMsPerSecond": 1, "Status.JVM.Memory.Metaspace.Used": metaspace,
                   "Status.Flink.Memory.Managed.Used": managed, "Status.Flink.Memory.Managed.Total": managed}
        self.t0 = time.time()
        server.fault = self.answer
        self.sup = supervisors(server, conf=dict(FAST, **(conf or {})), upgrade_mode=upgrade_mode)
        if memory:
            set_memory(self.sup, memory)
        self.install_java()

    def answer(self, method, path):
        u = urllib.parse.urlparse(path)
        if not u.path.endswith("/metrics"):
            return None
        q = urllib.parse.parse_qs(u.query)
        src = VERTEX_METRICS if "/vertices/" in u.path else self.tm if "taskmanager" in u.path else \
            {"taskSlotsTotal": 4, "taskSlotsAvailable": 2}
        if "get" not in q:
            return 200, json.dumps([{"id": k} for k in src]).encode()
        out = []
        for k in q["get"][0].split(","):
            if k in src:
                v = src[k] if src[k] is not None else int(100 * (time.time() - self.t0))
                out.append({"id": k, "min": v, "max": v, "avg": v, "sum": v, "value": v})
        text = json.dumps(out)
        return 200, text.replace('"@NaN"', "NaN").encode()

    def install_java(self):
        """The fake java: appends "<pid> <argv>" to spawns and copies its Flink configuration to conf.<pid>. While
        `oom` holds the untuned `-Xmx` token, a JVM launched without it (a tuned one) prints HotSpot's
        OutOfMemoryError line (or `oom.line`) and exits 3 (or `oom.code`), after `oom.delay` seconds if that file
        exists, or when `oom.now` appears; with `oom.once` only the first tuned JVM does; `crash`
        does the same with a plain exit 1. The stop file ends it (exit 0), once."""
        t = str(self.sup.tmp)
        self.spawns = os.path.join(t, "spawns")
        self.oom, self.crash = os.path.join(t, "oom"), os.path.join(t, "crash")
        self.oom_delay, self.oom_now = os.path.join(t, "oom.delay"), os.path.join(t, "oom.now")
        with open(self.sup.java, "w") as f:
            f.write(f"""#!/bin/sh
# attack_memtune: a JVM stand-in that records its launch and dies of memory when tuned, on request
echo "$$ $*" >> '{self.spawns}'
cp "$FLINK_CONF_DIR/config.yaml" '{t}/conf.'$$ 2>/dev/null
tuned() {{ [ -e "$1" ] && ! echo " $* " | grep -q -- " $(cat "$1") "; }}
if [ -e '{self.oom_delay}' ] && tuned '{self.oom}' "$@"; then
  d=$(cat '{self.oom_delay}'); end=$(($(date +%s) + d))
  while [ "$(date +%s)" -lt "$end" ] && [ ! -e '{self.oom_now}' ]; do sleep 0.1; done
  if [ -e '{self.oom}.line' ]; then cat '{self.oom}.line' >&2; else echo '{OOM_LINE}' >&2; fi
  code=$(cat '{self.oom}.code' 2>/dev/null || echo 3)
  if [ -e '{self.oom}.once' ]; then rm -f '{self.oom}'; fi
  if [ "$code" = abort ]; then kill -ABRT $$; sleep 1; fi
  exit "$code"
fi
if tuned '{self.crash}' "$@"; then echo 'java.lang.RuntimeException: boom' >&2; exit 1; fi
while [ ! -e '{self.sup.stop_file}' ]; do
  if [ -e '{self.oom_now}' ] && tuned '{self.oom}' "$@"; then echo '{OOM_LINE}' >&2; exit 3; fi
  sleep 0.1
done
rm -f '{self.sup.stop_file}'
exit 0
""")
        os.chmod(self.sup.java, 0o755)

    def launches(self):
        try:
            with open(self.spawns) as f:
                lines = [line.rstrip("\n") for line in f if line.strip()]
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            pid, argv = line.split(" ", 1)
            try:
                with open(os.path.join(str(self.sup.tmp), f"conf.{pid}")) as f:
                    conf = f.read()
            except FileNotFoundError:
                conf = ""
            out.append(Launch(int(pid), argv, conf))
        return out

    def start(self):
        self.sup.start()
        return self

    def mt(self):
        return ((self.sup.status() or {}).get("autoscaler") or {}).get("memoryTuning")

    def events(self, kind):
        return [e for e in self.sup.events() if e["type"] == kind]

    @staticmethod
    def running(st):
        """The job RUNNING on a JVM that came up: STABLE, or DEPLOYED while an upgraded spec is on trial (its readiness
        window; the fake Flink completes no checkpoint, so such a spec never leaves it)."""
        return st.get("lifecycleState") in ("STABLE", "DEPLOYED") and \
            (st.get("jobStatus") or {}).get("state") == "RUNNING"

    def stable(self, n=1, timeout=30):
        """Waits for the n-th launch to be the running JVM (STABLE, or an upgrade on trial)."""
        def ok():
            assert self.sup.alive(), f"flinklet exited {self.sup.proc.returncode}:\n{self.sup.logs()[-3000:]}"
            ls = self.launches()
            st = self.sup.status() or {}
            return len(ls) >= n and self.running(st) and st["jvm"]["pid"] == ls[n - 1].pid
        wait_for(ok, timeout, f"launch {n} STABLE", interval=0.1)
        return self.launches()[n - 1]

    def stable_latest(self, timeout=30):
        """Waits for the newest launch to be the running JVM (launches may still follow)."""
        def ok():
            assert self.sup.alive(), f"flinklet exited {self.sup.proc.returncode}:\n{self.sup.logs()[-3000:]}"
            ls = self.launches()
            st = self.sup.status() or {}
            return ls and self.running(st) and st["jvm"]["pid"] == ls[-1].pid and ls[-1]
        return wait_for(ok, timeout, "the newest launch STABLE", interval=0.1)

    def recommended(self, timeout=30):
        """Waits for an evaluation's recommendation in status.json."""
        wait_for(lambda: (self.mt() or {}).get("recommended"), timeout, "a memory tuning recommendation", interval=0.1)
        return self.mt()

    def evaluations(self):
        """Evaluations so far, as far as the outside can count them: autoscaler cycles that read the TaskManager."""
        return sum(1 for _, _, p in self.server.requests if p.startswith("/taskmanagers/metrics"))

    def wait_evaluations(self, more, timeout=30):
        n = self.evaluations()
        wait_for(lambda: self.evaluations() >= n + more, timeout, f"{more} more autoscaler cycles", interval=0.1)

    def end_jvm(self):
        """The running JVM ends on its own (exit 0): a launch flinklet makes anyway follows."""
        open(self.sup.stop_file, "w").close()

    def tuned_by_a_crash(self):
        """The first JVM RUNNING, a recommendation, a crash: the next JVM runs tuned. Returns both launches."""
        first = self.stable(1)
        self.recommended()
        self.crash_jvm()
        tuned = self.stable(2)
        assert tuned.heap != first.heap
        return first, tuned

    def crash_jvm(self):
        pid = self.sup.jvm_pid()
        os.kill(pid, signal.SIGKILL)


def set_memory(sup, memory):
    """sup's configuration with spec.resources.memory set to memory (None: unset)."""
    text = sup.config.read_text()
    text = re.sub(r"\n  resources:\n    memory: [^\n]*", "", text)
    if memory:
        text = text.replace("\nspec:\n", f"\nspec:\n  resources:\n    memory: {memory}\n")
    sup.replace_config(text)


def set_option(sup, key, value):
    """sup's configuration with flinkConfiguration's key set to value."""
    text = sup.config.read_text()
    text = re.sub(rf"\n    {re.escape(json.dumps(key))}: [^\n]*", "", text)
    text = text.replace("  flinkConfiguration:\n", f"  flinkConfiguration:\n{sup.conf_line(key, value)}\n")
    sup.replace_config(text)


def metrics_text(sup):
    code, body = sup.http("/metrics", timeout=10)
    assert code == 200
    return body


def gauge(body, name, pool=None):
    label = f'{{pool="{pool}"}}' if pool else ""
    m = re.search(rf"^{re.escape(name + label)} (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


def assert_within_budget(launch, untuned):
    """docs/autoscaler.md: "the tuned split never goes past spec.resources.memory", the heap "at least 48 MiB",
    the metaspace "at least 80 MiB"; everything else is as the budget's split has it, so the three tuned pools
    together are at most the untuned three."""
    assert launch.heap is not None and launch.metaspace is not None, launch.argv
    assert launch.heap >= 48 * MIB, launch
    assert launch.metaspace >= 80 * MIB or launch.metaspace == untuned.metaspace, launch
    assert launch.xms == launch.heap, launch.argv
    assert (launch.managed or 0) >= 0
    total = launch.heap + launch.metaspace + (launch.managed or 0)
    assert total <= untuned.heap + untuned.metaspace + (untuned.managed or 0), (launch, untuned)


def tuned_and_running(rig, oom_delay=None):
    """Runs until a tuned JVM is the running one (launch 2, after a crash restart); arms the OOM of tuned JVMs
    (with oom_delay seconds, or never by themselves when None: only when oom.now appears)."""
    first = rig.stable(1)
    with open(rig.oom, "w") as f:
        f.write(f"-Xmx{first.heap // MIB}m")
    if oom_delay is not None:
        with open(rig.oom_delay, "w") as f:
            f.write(str(oom_delay))
    rig.recommended()
    return first


def assert_undone(rig, first, timeout=30):
    """autoscaler.md: "A tuned JVM that dies of memory ... undoes it: a `MemoryTuningUndone` event, the next launch is
    untuned, and tuning stays off (`suspended` says why)"; operations.md: `flinklet_memory_tuning_suspended` 1."""
    wait_for(lambda: rig.events("MemoryTuningUndone"), timeout, "MemoryTuningUndone", interval=0.1)
    wait_for(lambda: rig.launches()[-1].heap == first.heap
             and rig.running(rig.sup.status() or {})
             and rig.sup.jvm_pid() == rig.launches()[-1].pid, timeout, "an untuned launch running", interval=0.1)
    last = rig.launches()[-1]
    assert last.split() == first.split(), (last, first)
    mt = rig.mt()
    assert mt["suspended"], mt
    assert mt["running"] is None, mt
    assert gauge(metrics_text(rig.sup), "flinklet_memory_tuning_suspended") == 1
    return last


def kill9(rig):
    """kill -9 of flinklet and its JVM together (the container killed)."""
    os.killpg(rig.sup.proc.pid, signal.SIGKILL)
    rig.sup.proc.wait()
    pid = rig.launches()[-1].pid
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def relaunches(rig):
    return rig.events("MemoryTuningRelaunch")


def undone(rig):
    first = tuned_and_running(rig, oom_delay=0)
    rig.crash_jvm()
    assert_undone(rig, first)
    os.unlink(rig.oom)  # from here on no JVM dies of memory
    return first


def untunable_mib(memory_mib, slots=4, rocksdb=True):
    """docs/configuration.md's table: what the budget keeps outside the heap, metaspace and managed memory (code
    cache, direct memory, the JVM's native memory, RocksDB beyond managed memory, flinklet)."""
    b = memory_mib
    clamp = lambda x, lo, hi: max(lo, min(x, hi))  # noqa: E731
    code = 24 if b < 512 else clamp(b // 16, 48, 240)
    network = max(clamp(b // 32, 8, 64), math.ceil(3 * slots * (slots + 2) * 32 / 1024))
    direct = network + clamp(b // 16, 16, 128)
    native = 40 + slots + b // 32
    return code + direct + native + (24 if rocksdb else 0) + 16

"""Fixtures of the fault-injection tests: the real build/flinklet, a fake "java" that only stays up, and the
misbehaving Flink REST server of fakeflink.py on rest.port. No real JVM, no real Flink: these tests are
about what flinklet does with what it is told (tests/e2e stays mock-free)."""
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import pytest

# the supervisor aborts on a broken internal invariant (src/supervisor/supervisor.c): a test that trips one fails loudly
os.environ.setdefault("FLINKLET_STRICT", "1")

from fakeflink import FakeFlink, write_fake_java

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import testkit  # noqa: E402
from testkit import free_port  # noqa: E402,F401
from testkit import events_after, events_whole_bytes, file_id  # noqa: E402

BIN = os.environ.get("FLINKLET_BIN", os.path.abspath("build/flinklet"))


def wait_for(pred, timeout, what, interval=0.1):
    return testkit.wait_for(pred, timeout, what, interval)


class Supervisor:
    """One `flinklet run` against the fake REST server, with the fake java."""

    def __init__(self, tmp_path, server, state_dir=None, conf=None, upgrade_mode="last-state", flink_version="2.2.1"):
        self.tmp = tmp_path
        self.server = server
        self.state = state_dir or str(tmp_path / "state")
        server.state_dirs.append(self.state)
        self.stop_file = str(tmp_path / "java.stop")
        self.java = write_fake_java(str(tmp_path), self.stop_file)
        self.flink_home = tmp_path / "flink"
        (self.flink_home / "lib").mkdir(parents=True, exist_ok=True)
        (self.flink_home / "lib" / f"flink-dist-{flink_version}.jar").write_bytes(b"")  # the version flinklet reads
        self.jar = tmp_path / "job.jar"
        with zipfile.ZipFile(self.jar, "w") as z:  # what flinklet's pre-flight looks for: the entry class
            z.writestr("dev/flinklet/Fake.class", b"\xca\xfe\xba\xbe")
        self.log_path = str(tmp_path / f"flinklet-{time.monotonic_ns()}.log")
        self.conf = {
            "rest.port": str(server.port),
            "flinklet.java.bin": self.java,
            "flinklet.rest.poll-interval": "200 ms",
            "kubernetes.operator.flink.client.timeout": "1 s",
            "flinklet.health.rest-timeout": "1 h",
            "flinklet.restart.backoff.initial": "100 ms",
            "flinklet.http.address": f"127.0.0.1:{free_port()}",
            "flinklet.shutdown.timeout": "6 s",
            "flinklet.jvm.stop-grace-period": "2 s",
            "execution.checkpointing.interval": "1 s",
        }
        self.conf.update(conf or {})
        self.config = tmp_path / "flinklet.yaml"
        lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:",
                 "  name: faults", "spec:", "  flinkConfiguration:"]
        lines += [f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in self.conf.items()]
        lines += ["  job:", f"    jarURI: local://{self.jar}", "    entryClass: dev.flinklet.Fake",
                  "    parallelism: 2", f"    upgradeMode: {upgrade_mode}"]
        self.config.write_text("\n".join(lines) + "\n")
        self.proc = None
        self.start_env = {}  # more environment for flinklet (the volume fault shim)
        # what an earlier flinklet left on the state directory when start() ran (see own_status, new_events)
        self.status0 = None  # status.json's (inode, mtime) then
        self.events0 = 0  # the bytes of events.jsonl's whole lines then

    def note_leftovers(self):
        """What start() does first: notes the status.json and the events an earlier flinklet left."""
        self.status0 = file_id(os.path.join(self.state, "status.json"))  # (a test may have spoilt it on purpose)
        self.events0 = events_whole_bytes(self.state)

    def start(self):
        self.note_leftovers()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BIN, "run", "-c", str(self.config), "--state-dir", self.state,
                                      "--flink-home", str(self.flink_home)],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=dict(os.environ, TMPDIR=str(self.tmp), **self.start_env))
        return self

    def alive(self):
        return self.proc.poll() is None

    def _read_status(self):
        """(status.json, its file's (inode, mtime)); (None, None) before the first write. It must always parse."""
        path = os.path.join(self.state, "status.json")
        try:
            with open(path) as f:
                s = os.fstat(f.fileno())
                text = f.read()
        except FileNotFoundError:
            return None, None
        return json.loads(text), (s.st_ino, s.st_mtime_ns)

    def status(self):
        """status.json, which must always parse (None only before the first write)."""
        return self._read_status()[0]

    def own_status(self):
        """status.json as written by the flinklet of the last start(), None until it wrote one: what an earlier
        flinklet left on the state directory (STABLE with a fake java still alive, SUSPENDED, its error) is not
        this run's. Every write is a new file renamed over the old one, so a document read from another file
        than the one start() saw is this run's; its supervisor.pid says so too."""
        st, ident = self._read_status()
        if st is None or self.proc is None or ident == self.status0:
            return None
        return st if (st.get("supervisor") or {}).get("pid") == self.proc.pid else None

    def events(self):
        path = os.path.join(self.state, "events.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def new_events(self):
        """The events since the last start(): not those of earlier flinklets on the same state directory (a torn
        last line one left is cut off by the next, so whole lines count)."""
        return events_after(self.state, self.events0)

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def jvm_pid(self):
        st = self.status()
        return st["jvm"]["pid"] if st else 0

    def stop(self, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                raise AssertionError(f"flinklet did not stop within {timeout}s:\n{self.logs()[-3000:]}")
        return self.proc.returncode if self.proc else None

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        # the fake java is in flinklet's session; make sure none outlives the test
        pid = 0
        try:
            pid = self.jvm_pid()
        except (ValueError, TypeError, KeyError):
            pass
        if pid > 0:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if getattr(self, "log", None):
            self.log.close()


@pytest.fixture
def server():
    s = FakeFlink().start()
    yield s
    s.close()


@pytest.fixture
def supervisors(tmp_path):
    made = []

    def make(server, **kw):
        s = Supervisor(tmp_path, server, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()


@pytest.fixture(scope="session", autouse=True)
def real_binary():
    assert os.access(BIN, os.X_OK), f"{BIN} is not built (make)"

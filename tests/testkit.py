"""testkit: the one test harness of the e2e tests, the fault-injection tests, chaos and the benchmarks: free
loopback ports, the one `wait_for`, the runners of `flinklet run` (Runner, and its two kinds: Flinklet with the
real MiniCluster JVM, Supervisor with a fake java against tests/faults/fakeflink.py), what a Flink JVM started by
hand needs (Java 17 flags, console logging), a memory cgroup that holds a process tree to a hard limit, and the
status page in headless Chromium (its DOM read back). The suites' conftest.py files hold only their fixtures and
re-export what their tests import from here; the kits import this module only."""
import html.parser
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import zipfile

# what the runners run: the real build/flinklet, Flink's jars (make flink-lib) and the test jobs (make jobs)
BIN = os.environ.get("FLINKLET_BIN", os.path.abspath("build/flinklet"))
FLINK_HOME = os.environ.get("FLINK_HOME", "")
JOBS_JAR = os.environ.get("FLINKLET_JOBS_JAR", os.path.abspath("build/jobs-2.2.1/flinklet-test-jobs.jar"))
CHECK_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "check_output.py")
# make valgrind: every Flinklet.start() runs BIN under this command (e.g. valgrind), whose logs land in
# FLINKLET_VALGRIND_LOGS (tests/e2e/conftest.py fails a test during which one reported a problem).
WRAPPER = shlex.split(os.environ.get("FLINKLET_WRAPPER", ""))
# Class-data sharing (flinklet.jvm.class-data-sharing: auto, the default): one archive directory for every test of
# every session, so that the archive is made once (by tests/e2e/conftest.py's cds_archive) and every later JVM
# starts from it, as on a volume that outlives pods. tests/e2e/test_cds.py uses directories of its own.
CDS_DIR = os.environ.get("FLINKLET_E2E_CDS_DIR", os.path.abspath("build/e2e-cds"))

# The module flags Flink's own scripts pass on Java 17 (as src/flink/flinkconf.c does for the MiniCluster).
JAVA17 = [
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED", "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED", "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
]

LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.console.ref = C
appender.console.name = C
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %-5p %c{1} - %m%n
"""


# The autoscaler on, deciding every few seconds but not scaling (recommendations only): what the status page's
# test and its bench chart
RECOMMENDING_AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.scaling.enabled": "false",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "metrics.fetcher.update-interval": "2000",
}


def _below_ephemeral():
    """[low, high) of the ports the kernel never gives a connection's local end (those below its ephemeral range)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    return (10000, first) if first > 11000 else (first // 2, first)


_next_port = None


def hold_port(port, timeout=5):
    """A listener of this process on every address's port (a port clash for what flinklet starts next), bound as
    soon as the port's last owner let go of it (within timeout seconds); close it to let go."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.bind(("0.0.0.0", port))
            break
        except OSError:
            if time.monotonic() > deadline:
                sock.close()
                raise
            time.sleep(0.01)
    sock.listen(1)
    return sock


def free_port():
    """A port of 127.0.0.1 that nothing holds now, for a server the test starts later. Not the kernel's bind(0)
    choice: that is in the ephemeral range, where any process's next outgoing connection (thousands a minute
    here: REST polls, scrapes) may take it before the server binds it (CI saw flinklet's HTTP port so taken).
    Below that range only servers bind; each process walks the range from a random start, so that parallel
    test processes rarely meet, and skips what is held."""
    global _next_port
    low, high = _below_ephemeral()
    if _next_port is None or not low <= _next_port < high:
        _next_port = random.Random(os.getpid() ^ time.time_ns()).randrange(low, high)
    for _ in range(high - low):
        port = _next_port
        _next_port = low + (port - low + 1) % (high - low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {low}-{high - 1}")


def file_id(path):
    """(inode, mtime) of path, None when there is none."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    return s.st_ino, s.st_mtime_ns


def events_whole_bytes(state):
    """The length of events.jsonl up to the end of its last whole line (0 without one)."""
    try:
        with open(os.path.join(state, "events.jsonl"), "rb") as f:
            data = f.read()
    except OSError:  # none, or not a file (a test's attack): flinklet says so itself
        return 0
    return data.rfind(b"\n") + 1


def events_after(state, offset):
    """The events of events.jsonl from byte offset on (one of events_whole_bytes)."""
    try:
        with open(os.path.join(state, "events.jsonl"), "rb") as f:
            f.seek(offset)
            text = f.read().decode()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def wait_for(pred, timeout, what, interval=0.5, error=AssertionError):
    """The first truthy value of pred(), polled every interval seconds; error after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise error(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def norm(location):
    """A snapshot location as a path: file:/x, file:///x and /x name the same directory."""
    p = location
    for prefix in ("file://", "file:"):
        if p.startswith(prefix):
            p = p[len(prefix):]
            break
    while p.startswith("//"):
        p = p[1:]
    return p.rstrip("/")


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not alive
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def check_output(directory, expect_count=None):
    """(exit code, summary) of tests/jobs/check_output.py on a job's committed output."""
    args = ["python3", CHECK_OUTPUT, directory]
    if expect_count is not None:
        args += ["--expect-count", str(expect_count)]
    r = subprocess.run(args, capture_output=True, text=True)
    summary = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
    return r.returncode, summary


def flink_version(home=None):
    """The Flink version of a Flink home's jars ("2.2.1"): the distribution's flink-dist-<version>.jar, else the
    module jars' flink-core-<version>.jar (make flink-lib FLINK_RUNTIME=modules), as flinklet detects it."""
    lib = os.path.join(home or FLINK_HOME, "lib")
    for prefix in ("flink-dist-", "flink-dist_2.12-", "flink-core-"):
        for name in sorted(os.listdir(lib)):
            m = re.fullmatch(re.escape(prefix) + r"(\d[\w.\-]*)\.jar", name)
            if m:
                return m.group(1)
    raise AssertionError(f"no flink-dist nor flink-core jar in {lib}")


# ---- the runners: one `flinklet run` process on its own state directory ------------------------------------------

class Runner:
    """One `flinklet run` process on its own state directory: its configuration file (a FlinkMiniCluster document,
    rewritten as editors and Kubernetes do), its process and log, and what it leaves on the volume (status.json,
    events.jsonl, http.token) and says on its endpoint. Flinklet (the real JVM) and Supervisor (a fake java) are
    its two kinds; each writes its own document (write_config) and starts its own way (start)."""

    def __init__(self, tmp_path, name, state_dir=None):
        self.tmp = tmp_path
        self.name = name
        self.state = state_dir or str(tmp_path / "state")
        self.config = tmp_path / "flinklet.yaml"
        self.log_path = str(tmp_path / f"flinklet-{time.monotonic_ns()}.log")
        self.flink_home = FLINK_HOME
        self.extra_args = []
        self.proc = None
        # what an earlier flinklet left on the state directory when start() ran (see own_status, new_events)
        self.status0 = None  # status.json's (inode, mtime) then
        self.events0 = 0  # the bytes of events.jsonl's whole lines then

    # -- the configuration file

    def document(self, conf_lines, job_lines, resource_lines=()):
        """The text of a FlinkMiniCluster document of this runner's name: flinkConfiguration's lines (see
        conf_line), spec.resources' and spec.job's, each indented as it stands."""
        return "\n".join(["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:",
                          f"  name: {self.name}", "spec:", "  flinkConfiguration:", *conf_lines, *resource_lines,
                          "  job:", *job_lines]) + "\n"

    @staticmethod
    def conf_line(key, value):
        return f"    {json.dumps(key)}: {json.dumps(value)}"

    def replace_config(self, text):
        """Replaces the configuration file with text the way editors and Kubernetes do: a new file renamed over
        it (flinklet never reads a half-written one)."""
        tmp = self.config.with_name(".flinklet.yaml.new")
        tmp.write_text(text)
        os.replace(tmp, self.config)

    # -- the process

    def argv(self):
        return [BIN, "run", "-c", str(self.config), "--state-dir", self.state, "--flink-home", str(self.flink_home),
                *self.extra_args]

    def note_leftovers(self):
        """What start() does first: notes the status.json and the events an earlier flinklet left."""
        self.status0 = file_id(os.path.join(self.state, "status.json"))  # (a test may have spoilt it on purpose)
        self.events0 = events_whole_bytes(self.state)

    def spawn(self, argv, env, preexec_fn=None):
        """Starts argv (a `flinklet run`, perhaps under a wrapper) in a session of its own, its output to the
        log."""
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=env, preexec_fn=preexec_fn)
        return self

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_exit(self, timeout=60):
        """flinklet's exit code; fails with its log's end when it has not exited within timeout seconds."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"flinklet did not exit within {timeout}s:\n{self.logs()[-4000:]}")

    def kill_group(self):
        """kill -9 of flinklet's whole session (and so of what it started in it), then reaps flinklet."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def close_log(self):
        if getattr(self, "log", None):
            self.log.close()

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    # -- what it leaves on the volume

    def _read_status(self):
        """(status.json, its file's (inode, mtime)); (None, None) before the first write. It must always parse."""
        try:
            with open(os.path.join(self.state, "status.json")) as f:
                s = os.fstat(f.fileno())
                return json.load(f), (s.st_ino, s.st_mtime_ns)
        except FileNotFoundError:
            return None, None

    def status(self):
        """status.json, which must always parse (None only before the first write)."""
        return self._read_status()[0]

    def pid_checkable(self):
        """Whether status.json's supervisor.pid is the pid of self.proc (not inside a pid namespace or a wrapper
        that may fork)."""
        return True

    def own_status(self):
        """status.json as written by the flinklet of the last start(), None until it wrote one: what an earlier
        flinklet left on the state directory (STABLE, RUNNING, a JVM pid alive again as another process, its
        restore, its error) is not this run's. Every write is a new file renamed over the old one, so a document
        read from another file than the one start() saw is this run's (the earlier flinklet is gone); its
        supervisor.pid says so too, where pid_checkable."""
        st, ident = self._read_status()
        if st is None or self.proc is None or ident == self.status0:
            return None
        if self.pid_checkable() and (st.get("supervisor") or {}).get("pid") != self.proc.pid:
            return None
        return st

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

    def token(self):
        with open(os.path.join(self.state, "http.token")) as f:
            return f.read().strip()

    # -- its endpoint

    def http(self, path, method="GET", token=None, body=None, timeout=5):
        """(status, body) of one request to the supervisor's own endpoint (http_port)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", method=method, data=body)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


class Flinklet(Runner):
    """One `flinklet run` of the real MiniCluster JVM (FLINK_HOME) and a test job (JOBS_JAR: StatefulCounter
    unless told) on its own state directory."""

    def __init__(self, tmp_path, name="e2e-counter", conf=None, job=None, extra_args=(), state_dir=None, memory=None,
                 jar=None, entry_class=None):
        super().__init__(tmp_path, name, state_dir)
        # the job's jar and class (None: JOBS_JAR, as it is when the file is written, and StatefulCounter)
        self.jar = jar
        self.entry_class = entry_class or "dev.flinklet.jobs.StatefulCounter"
        self.memory = memory  # spec.resources.memory, None: not set
        self.port = free_port()
        self.output = os.path.join(self.state, "output")
        self.conf = dict(conf or {})
        self.conf.setdefault("execution.checkpointing.interval", "1s")
        # an upgraded spec is STABLE once its readiness window passed without a restart inside the JVM (5 min by
        # default): the tests' upgrades are watched for 15 s
        self.conf.setdefault("kubernetes.operator.deployment.readiness.timeout", "15 s")
        self.conf.setdefault("rest.port", str(self.port))
        self.http_port = free_port()
        self.conf.setdefault("flinklet.http.address", f"127.0.0.1:{self.http_port}")
        self.conf.setdefault("flinklet.jvm.class-data-sharing.archive-dir", CDS_DIR)
        # the archive is made once, before the tests (tests/e2e/conftest.py's cds_archive), not by a test's own
        # JVM: the dump pauses the job for seconds, which a test of something else must not meet at a random moment
        self.conf.setdefault("flinklet.jvm.class-data-sharing.dump-delay", "1 h")
        job = dict(job or {})
        job.setdefault("args", ["--rate", "100", "--keys", "8", "--output", self.output])
        job["args"] = [self.output if a == "OUT" else a for a in job["args"]]
        job.setdefault("parallelism", 2)
        self.job = job
        self.write_config()
        self.extra_args = list(extra_args)
        self.pidns = False  # pids in status.json are of another pid namespace
        self.starts0 = 0  # the JVM starts an earlier flinklet counted, when start() ran

    @staticmethod
    def conf_line(key, value):
        return Runner.conf_line(key, str(value))

    def write_config(self, conf=None, job=None, raw=None):
        """(Re)writes the configuration file (replace_config) from conf and job merged into this runner's, or as
        raw."""
        if conf:
            self.conf.update(conf)
        if job:
            self.job.update(job)
        if raw is None:
            jobs = [f"    jarURI: local://{self.jar or JOBS_JAR}", f"    entryClass: {self.entry_class}",
                    f"    args: {json.dumps(self.job['args'])}", f"    parallelism: {self.job['parallelism']}"]
            for k in ("upgradeMode", "initialSavepointPath", "allowNonRestoredState", "state",
                      "savepointTriggerNonce", "checkpointTriggerNonce"):
                if k in self.job:
                    jobs.append(f"    {k}: {self.job[k]}")
            raw = self.document([self.conf_line(k, v) for k, v in self.conf.items()], jobs,
                                ["  resources:", f"    memory: {self.memory}"] if self.memory else [])
        self.replace_config(raw)

    def start(self, wrapper=(), env=None, preexec_fn=None):
        """preexec_fn runs in the child before flinklet (test_memory_budget.py: into a memory cgroup)."""
        self.pidns = "unshare" in " ".join(wrapper)
        # the JVM starts an earlier supervisor counted: a status.json it left says STABLE too, and its JVM's pid may
        # be alive again as another process (pid_max 32768 wraps in minutes with JVMs' threads)
        self.note_leftovers()
        try:
            st = self.status() or {}
        except (ValueError, OSError):  # a status.json a test spoilt on purpose: flinklet starts a new one
            st = {}
        self.starts0 = (st.get("jvm") or {}).get("starts", 0)
        # TMPDIR: flinklet.scratch.dir's default (the JVM's io.tmp.dirs) inside the test's own directory, which is
        # removed with it (the default is /tmp/flinklet-<name>-<hash>)
        tmpdir = os.path.join(os.path.dirname(self.state), "scratch")
        os.makedirs(tmpdir, exist_ok=True)
        return self.spawn([*wrapper, *WRAPPER, *self.argv()], {**os.environ, "TMPDIR": tmpdir, **(env or {})},
                          preexec_fn)

    def pid_checkable(self):
        return not self.pidns and not WRAPPER

    def rest(self, path, timeout=5):
        """One GET of Flink's own REST API (rest.port), its JSON."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
            return json.loads(r.read())

    def wait_stable(self, timeout=120):
        def stable():
            if self.proc and self.proc.poll() is not None:
                raise AssertionError(f"flinklet exited {self.proc.returncode}:\n{self.logs()[-4000:]}")
            st = self.own_status()
            # a status.json left by an earlier supervisor says STABLE too: the JVM must be alive
            return (st if st and st["lifecycleState"] == "STABLE" and st["jobStatus"]["state"] == "RUNNING"
                    and st["jvm"]["pid"] > 0 and st["jvm"].get("starts", 0) > self.starts0
                    and (self.pidns or pid_alive(st["jvm"]["pid"])) else None)
        return wait_for(stable, timeout, "lifecycle STABLE with the job RUNNING")

    def wait_checkpoint(self, min_id, timeout=60):
        """This flinklet's status.json once its lastCheckpoint is min_id or later. A restarted flinklet's first
        status.json carries the volume's lastCheckpoint over: after a restart, ask for one beyond it."""
        def ckpt():
            st = self.own_status()
            lc = st and st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
            return st if lc and lc["id"] >= min_id else None
        return wait_for(ckpt, timeout, f"checkpoint {min_id}")

    def stop(self):
        """SIGTERM (a stop with a savepoint when RUNNING), kill -9 of its session after 40 s."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.kill_group()
        self.close_log()


def write_fake_java(directory, stop_file):
    """A "java" that stays up like a JVM (until killed, or until stop_file exists: the job ended)."""
    path = os.path.join(directory, "java")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "# stands in for the MiniCluster JVM: up until killed or until the stop file appears\n"
                f"while [ ! -e '{stop_file}' ]; do sleep 0.1; done\n"
                "exit 0\n")
    os.chmod(path, 0o755)
    return path


class Supervisor(Runner):
    """One `flinklet run` against the fault tests' fake REST server (tests/faults/fakeflink.py, on rest.port), with
    a fake java (write_fake_java) and a Flink home that only names a version."""

    def __init__(self, tmp_path, server, state_dir=None, conf=None, upgrade_mode="last-state", flink_version="2.2.1"):
        super().__init__(tmp_path, "faults", state_dir)
        self.server = server
        server.state_dirs.append(self.state)
        self.stop_file = str(tmp_path / "java.stop")
        self.java = write_fake_java(str(tmp_path), self.stop_file)
        self.flink_home = tmp_path / "flink"
        (self.flink_home / "lib").mkdir(parents=True, exist_ok=True)
        (self.flink_home / "lib" / f"flink-dist-{flink_version}.jar").write_bytes(b"")  # the version flinklet reads
        self.jar = tmp_path / "job.jar"
        with zipfile.ZipFile(self.jar, "w") as z:  # what flinklet's pre-flight looks for: the entry class
            z.writestr("dev/flinklet/Fake.class", b"\xca\xfe\xba\xbe")
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
        self.replace_config(self.document(
            [self.conf_line(k, v) for k, v in self.conf.items()],
            [f"    jarURI: local://{self.jar}", "    entryClass: dev.flinklet.Fake", "    parallelism: 2",
             f"    upgradeMode: {upgrade_mode}"]))
        self.start_env = {}  # more environment for flinklet (the volume fault shim)

    @property
    def http_port(self):
        return int(self.conf["flinklet.http.address"].rsplit(":", 1)[1])

    def start(self):
        self.note_leftovers()
        return self.spawn(self.argv(), dict(os.environ, TMPDIR=str(self.tmp), **self.start_env))

    def jvm_pid(self):
        st = self.status()
        return st["jvm"]["pid"] if st else 0

    def stop(self, timeout=30):
        """SIGTERM; flinklet's exit code, or a failure with its log's end after kill -9 when it took longer than
        timeout seconds."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill_group()
                raise AssertionError(f"flinklet did not stop within {timeout}s:\n{self.logs()[-3000:]}")
        return self.proc.returncode if self.proc else None

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.kill_group()
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
        self.close_log()


class MemoryLimit:
    """A memory cgroup with a hard limit, made under this process's own cgroup (cgroup v2, or v1's `memory`
    controller), so a process put in it (and its children) is held to the limit by the kernel: the OOM killer
    ends it when it needs more than the limit and no page cache is left to reclaim. make() says why not when the
    machine does not allow one (no controller, no permission); remove() once every process in it has exited."""

    def __init__(self, name, limit_bytes):
        self.name, self.limit, self.path, self.version, self.why_not = name, limit_bytes, None, None, None

    @staticmethod
    def _own():
        """(version, directory of this process's cgroup) for the memory controller, or None."""
        try:
            with open("/proc/self/cgroup") as f:
                lines = [line.rstrip("\n").split(":", 2) for line in f]
        except OSError:
            return None
        for _, controllers, rel in lines:
            if "memory" in controllers.split(","):
                return 1, "/sys/fs/cgroup/memory" + rel
        for hid, controllers, rel in lines:
            if hid == "0" and controllers == "":
                for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    if os.path.exists(os.path.join(root, "cgroup.controllers")):
                        with open(os.path.join(root, "cgroup.controllers")) as c:
                            if "memory" in c.read().split():
                                return 2, root + rel
        return None

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def _read(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""

    def make(self):
        own = self._own()
        if not own:
            self.why_not = "no memory cgroup controller"
            return False
        self.version, base = own
        self.path = os.path.join(base, self.name)
        try:
            os.makedirs(self.path, exist_ok=True)
            if self.version == 1:
                self._write("memory.limit_in_bytes", self.limit)
                try:
                    self._write("memory.memsw.limit_in_bytes", self.limit)  # no swap beyond the limit either
                except OSError:
                    pass
            else:
                self._write("memory.max", self.limit)
                try:
                    self._write("memory.swap.max", 0)
                except OSError:
                    pass
        except OSError as e:
            self.why_not = f"cannot make {self.path}: {e}"
            self.remove()
            return False
        return True

    def enter(self):
        """Moves the calling process into the cgroup (as a Popen preexec_fn: the child and its children)."""
        self._write("cgroup.procs", "0")

    def describe(self):
        ctl = "memory.limit_in_bytes" if self.version == 1 else "memory.max"
        return f"cgroup v{self.version} {ctl}={self.limit} ({self.path})"

    def reset_peak(self):
        """Starts the peak charge over from what is charged now (v1: memory.max_usage_in_bytes; v2 kernels from
        6.12 take a write to memory.peak); False when the kernel cannot."""
        try:
            self._write("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak", 0)
            return True
        except OSError:
            return False

    def stats(self):
        """{'peak': bytes the cgroup was charged at most (page cache included), 'oom_kills': n, 'failcnt': n}."""
        out = {"peak": 0, "oom_kills": 0, "failcnt": 0}
        if self.version == 1:
            out["peak"] = int(self._read("memory.max_usage_in_bytes") or 0)
            out["failcnt"] = int(self._read("memory.failcnt") or 0)
            events = self._read("memory.oom_control")
        else:
            out["peak"] = int(self._read("memory.peak") or 0)
            events = self._read("memory.events")
        for line in events.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                out["oom_kills"] = int(v)
            if k == "max" and self.version == 2:
                out["failcnt"] = int(v)
        return out

    def remove(self):
        if self.path and os.path.isdir(self.path):
            try:
                os.rmdir(self.path)
            except OSError:
                pass


# ---- the status page in a real browser (tests/e2e/test_status_page.py, tests/faults/test_rescale_history.py) ----

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()


class Dom(html.parser.HTMLParser):
    """The tree of a serialized document, enough to find elements by id, tag and class."""
    VOID = {"meta", "link", "br", "img", "input", "hr", "area", "base", "col", "embed", "source", "track", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in self.VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)

    def all(self, tag=None, cls=None):
        return [n for n in self.root.walk() if (tag is None or n.tag == tag)
                and (cls is None or cls in n.attrs.get("class", "").split())]

    def by_id(self, id_):
        found = [n for n in self.root.walk() if n.attrs.get("id") == id_]
        assert len(found) == 1, f"one element #{id_} (found {len(found)})"
        return found[0]


def chromium(url, profile, *args):
    """(stdout, stderr) of one headless Chromium run; virtual time lets the page's polls run."""
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-sync", "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
            f"--user-data-dir={profile}", "--window-size=1280,1600", "--virtual-time-budget=12000", *args, url]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"chromium exited {r.returncode}:\n{r.stderr[-3000:]}"
    return r.stdout, r.stderr


def csp_violations(stderr):
    return [line for line in stderr.splitlines() if "Content Security Policy" in line or "Refused to" in line]


def make_ca(d):
    """A CA and a certificate for 127.0.0.1 signed by it (openssl, no network)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=flinklet test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
        "-days", "2", "-extfile", "ext.cnf")
    return str(d / "ca.pem"), str(d / "srv.pem"), str(d / "srv.key")

"""Shared pieces of the benchmarks: the real flinklet binary, the real Flink jars and the real test job, a
flinklet under test, a standalone JobManager + TaskManager pair, /proc sampling and the result rows.

Nothing here asserts a timing: every benchmark measures, prints and returns rows
(figure, value, method) that bench/run.py gathers into one table."""
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import testkit  # noqa: E402
from testkit import JAVA17, LOG4J, free_port  # noqa: E402,F401
FLINK_VERSION = os.environ.get("FLINK_VERSION", "2.2.1")
BIN = os.environ.get("FLINKLET_BIN", os.path.join(ROOT, "build", "flinklet"))
FLINK_HOME = os.environ.get("FLINK_HOME", os.path.join(ROOT, "build", f"flink-{FLINK_VERSION}"))
JOBS_JAR = os.environ.get("FLINKLET_JOBS_JAR",
                          os.path.join(ROOT, "build", f"jobs-{FLINK_VERSION}", "flinklet-test-jobs.jar"))
WORK = os.environ.get("FLINKLET_BENCH_DIR", os.path.join(ROOT, "build", "bench"))
# the LD_PRELOAD library that makes every fsync of the state volume slow (tests/faults/volshim.c; make bench builds it)
VOLSHIM = os.environ.get("FLINKLET_VOLSHIM", os.path.join(ROOT, "build", "volshim.so"))
JAVA = shutil.which("java") or "java"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

# The job every benchmark runs: the test job at a modest rate, parallelism 2 (as the e2e tests run it).
JOB_ARGS = ["--rate", "200", "--keys", "8"]
PARALLELISM = 2
# The whole pod's budget for flinklet (src/config/membudget.c: heap 998m, metaspace 192m, code cache 96m, direct 144m, JVM
# native 90m, flinklet 16m; bench/memory.py runs at 256m); the standalone pair gets JobManager -Xmx512m and
# TaskManager -Xmx768m (tests/e2e/test_promotion.py).
FLINKLET_MEMORY = "1536m"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def now_ms():
    return time.time() * 1000.0


def wait_for(pred, timeout, what, interval=0.5):
    return testkit.wait_for(pred, timeout, what, interval, error=RuntimeError)


def get_json(port, path, timeout=3, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        body = r.read()
        return json.loads(body) if body else None


def job_all_running(port, job_id):
    """True when Flink's REST API says the job is RUNNING with every vertex RUNNING (what flinklet's
    JobRunning event means), polled the same way for flinklet and for a JVM started by hand."""
    try:
        j = get_json(port, f"/jobs/{job_id}", timeout=1)
    except (OSError, ValueError):
        return False
    return j.get("state") == "RUNNING" and all(v.get("status") == "RUNNING" for v in j.get("vertices", []))


def poll_until_running(port, job_id, timeout, interval=0.05):
    """Epoch ms at which the job was first seen RUNNING with all tasks running (polled every 50 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if job_all_running(port, job_id):
            return now_ms()
        time.sleep(interval)
    raise RuntimeError(f"job {job_id} not RUNNING on port {port} within {timeout}s")


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def proc_rss(pid):
    """VmRSS in bytes (0 when gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    return 0


def proc_status_bytes(pid, keys=("VmRSS", "RssAnon", "RssFile")):
    """Fields of /proc/<pid>/status in bytes ({} when gone): VmRSS = RssAnon (private) + RssFile (mapped files,
    shared libraries mostly) + RssShmem."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def proc_cpu_seconds(pid):
    """utime + stime of the process itself (not its children)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except FileNotFoundError:
        return 0.0


def mib(b):
    return b / (1 << 20)


def median_spread(values):
    """'median (min..max, n=N)' text and the median."""
    if not values:
        return "n/a", None
    m = statistics.median(values)
    return m, f"{min(values):.0f}..{max(values):.0f}"


def kill_group(proc, sig=signal.SIGKILL):
    if proc and proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def kill_pid(pid, sig=signal.SIGKILL):
    if pid and pid_alive(pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def check_components():
    missing = [p for p in (BIN, os.path.join(FLINK_HOME, "lib"), JOBS_JAR) if not os.path.exists(p)]
    if missing:
        sys.exit(f"bench: missing {missing}: run `make all flink-lib jobs` (or `make bench`)")


class Flinklet:
    """One `flinklet run` on its own state directory under build/bench/<name>."""

    def __init__(self, name, conf=None, job=None, memory=FLINKLET_MEMORY, fresh=True, binary=None, flink_home=None):
        self.bin = binary or BIN
        self.flink_home = flink_home or FLINK_HOME
        self.dir = os.path.join(WORK, name)
        if fresh and os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.dir, exist_ok=True)
        self.state = os.path.join(self.dir, "state")
        self.output = os.path.join(self.state, "output")
        self.port = free_port()
        self.http_port = free_port()
        self.conf = {
            "execution.checkpointing.interval": "1s",
            "rest.port": str(self.port),
            "flinklet.http.address": f"127.0.0.1:{self.http_port}",
            **(conf or {}),
        }
        self.job = {"args": JOB_ARGS + ["--output", self.output], "parallelism": PARALLELISM, **(job or {})}
        self.memory = memory
        self.config = os.path.join(self.dir, "flinklet.yaml")
        self.log_path = os.path.join(self.dir, "flinklet.log")
        self.proc = None
        self.write_config()

    def write_config(self):
        lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:",
                 "  name: bench-counter", "spec:", "  flinkConfiguration:"]
        lines += [f"    {json.dumps(k)}: {json.dumps(str(v))}" for k, v in self.conf.items()]
        if self.memory:
            lines += ["  resources:", f"    memory: {self.memory}"]
        lines += ["  job:", f"    jarURI: local://{JOBS_JAR}", "    entryClass: dev.flinklet.jobs.StatefulCounter",
                  f"    args: {json.dumps(self.job['args'])}", f"    parallelism: {self.job['parallelism']}"]
        if "upgradeMode" in self.job:
            lines.append(f"    upgradeMode: {self.job['upgradeMode']}")
        with open(self.config + ".new", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(self.config + ".new", self.config)

    def start(self, preexec_fn=None, env=None):
        """preexec_fn runs in the child before flinklet: bench/memory.py moves it into a memory cgroup there."""
        self.log = open(self.log_path, "ab")
        # flinklet.scratch.dir's default ($TMPDIR/flinklet-<name>-<hash>) in this benchmark's directory
        scratch = os.path.join(self.dir, "scratch")
        os.makedirs(scratch, exist_ok=True)
        self.proc = subprocess.Popen([self.bin, "run", "-c", self.config, "--state-dir", self.state, "--flink-home",
                                      self.flink_home], stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=preexec_fn, env={**os.environ, "TMPDIR": scratch, **(env or {})})
        return self

    def status(self):
        try:
            with open(os.path.join(self.state, "status.json")) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return None

    def events(self):
        path = os.path.join(self.state, "events.jsonl")
        if not os.path.exists(path):
            return []
        out = []
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def events_after(self, t_ms, types=None):
        return [e for e in self.events() if e["timeMs"] >= t_ms - 1 and (types is None or e["type"] in types)]

    def first_event(self, t_ms, typ):
        ev = self.events_after(t_ms, {typ})
        return ev[0]["timeMs"] if ev else None

    def jvm_pid(self):
        st = self.status()
        return st["jvm"]["pid"] if st else 0

    def wait_stable(self, timeout=180, not_pid=None):
        def stable():
            if self.proc.poll() is not None:
                raise RuntimeError(f"flinklet exited {self.proc.returncode}; see {self.log_path}")
            st = self.status()
            ok = (st and st["lifecycleState"] == "STABLE" and st["jobStatus"]["state"] == "RUNNING"
                  and st["jvm"]["pid"] > 0 and st["jvm"]["pid"] != not_pid and pid_alive(st["jvm"]["pid"]))
            return st if ok else None
        return wait_for(stable, timeout, "lifecycle STABLE with the job RUNNING", interval=0.2)

    def wait_checkpoint(self, min_id, timeout=60):
        def ckpt():
            st = self.status()
            lc = st and st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
            return st if lc and lc["id"] >= min_id else None
        return wait_for(ckpt, timeout, f"checkpoint {min_id}", interval=0.2)

    def last_checkpoint_id(self):
        st = self.status()
        lc = st and st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
        return lc["id"] if lc else 0

    def stop(self, timeout=40):
        """SIGTERM and wait; whatever is left of this flinklet and its JVM is killed."""
        jvm = self.jvm_pid()
        rc = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                kill_group(self.proc)
        kill_pid(jvm)
        if getattr(self, "log", None):
            self.log.close()
        return rc




class StandaloneCluster:
    """A standalone JobManager and one TaskManager (two JVMs from the same jars, the shape the operator deploys),
    started as tests/e2e/test_promotion.py starts them."""

    def __init__(self, name, flink_conf=None):
        self.dir = os.path.join(WORK, name)
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        self.conf = os.path.join(self.dir, "conf")
        os.makedirs(self.conf)
        os.makedirs(os.path.join(self.dir, "tmp"))
        self.rest_port = free_port()
        conf = {
            "jobmanager.rpc.address": "localhost", "jobmanager.rpc.port": str(free_port()),
            "jobmanager.bind-host": "localhost", "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost", "rest.address": "localhost", "rest.port": str(self.rest_port),
            "rest.bind-address": "127.0.0.1", "jobmanager.memory.process.size": "1024m",
            "io.tmp.dirs": os.path.join(self.dir, "tmp"),
            "taskmanager.cpu.cores": "2", "taskmanager.memory.task.heap.size": "384m",
            "taskmanager.memory.task.off-heap.size": "0m", "taskmanager.memory.network.min": "64m",
            "taskmanager.memory.network.max": "64m", "taskmanager.memory.managed.size": "128m",
            "taskmanager.memory.framework.heap.size": "128m", "taskmanager.memory.framework.off-heap.size": "128m",
            "taskmanager.memory.jvm-metaspace.size": "256m", "taskmanager.memory.jvm-overhead.min": "192m",
            "taskmanager.memory.jvm-overhead.max": "192m", "taskmanager.numberOfTaskSlots": str(PARALLELISM),
            "execution.checkpointing.interval": "1s",
            "execution.checkpointing.dir": f"file://{self.dir}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"file://{self.dir}/savepoints",
            **(flink_conf or {}),
        }
        with open(os.path.join(self.conf, "config.yaml"), "w") as f:
            f.write("".join(f"{json.dumps(k)}: {json.dumps(v)}\n" for k, v in conf.items()))
        with open(os.path.join(self.conf, "log4j-console.properties"), "w") as f:
            f.write(LOG4J)
        self.procs = {}
        self.log = open(os.path.join(self.dir, "cluster.log"), "ab")

    def java(self, main, *args, heap="512m", detach=True):
        argv = [JAVA, f"-Xmx{heap}", *JAVA17, f"-Dlog4j.configurationFile=file:{self.conf}/log4j-console.properties",
                "-cp", f"{FLINK_HOME}/lib/*", main, *args]
        env = {**os.environ, "FLINK_CONF_DIR": self.conf}
        if detach:
            return subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180)

    def start(self):
        self.procs["jobmanager"] = self.java("org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
                                             "--configDir", self.conf)
        self.procs["taskmanager"] = self.java("org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
                                              "--configDir", self.conf, heap="768m")

        def up():
            try:
                o = get_json(self.rest_port, "/overview")
                return o["taskmanagers"] == 1 and o["slots-total"] >= PARALLELISM and o
            except (OSError, ValueError):
                return None
        wait_for(up, 120, "the standalone JobManager with one TaskManager")

    def submit(self, output):
        r = self.java("org.apache.flink.client.cli.CliFrontend", "run", "-d", "-c", "dev.flinklet.jobs.StatefulCounter",
                      "-p", str(PARALLELISM), JOBS_JAR, *JOB_ARGS, "--output", output, detach=False)
        if r.returncode != 0:
            raise RuntimeError("submit failed: " + r.stdout[-2000:] + r.stderr[-2000:])
        jobs = wait_for(lambda: [j["id"] for j in get_json(self.rest_port, "/jobs")["jobs"] if j["status"] == "RUNNING"],
                        120, "the job RUNNING on the standalone cluster")
        job_id = jobs[0]
        wait_for(lambda: job_all_running(self.rest_port, job_id), 60, "all tasks RUNNING")
        return job_id

    def stop(self):
        for p in self.procs.values():
            kill_group(p)
        self.log.close()


def row(figure, value, method):
    return {"figure": figure, "value": value, "method": method}


def print_rows(title, rows):
    print(f"\n== {title}")
    for r in rows:
        print(f"  {r['figure']}: {r['value']}")


_EG_RUNNING = None


def log_tasks_running_ms(path, offset, n_tasks):
    """Epoch ms of the line where Flink's ExecutionGraph logged the n-th task `switched from INITIALIZING to
    RUNNING` after offset in a JVM log (the log's clock is this machine's local time, as time.time()); None when
    fewer. Flink's REST API caches job details for web.refresh-interval (3 s), the log does not."""
    import datetime
    import re
    global _EG_RUNNING
    if _EG_RUNNING is None:
        _EG_RUNNING = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO\s+\S*ExecutionGraph\s.*switched from "
                                 r"INITIALIZING to RUNNING", re.M)
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    hits = _EG_RUNNING.findall(text)
    if len(hits) < n_tasks:
        return None
    dt = datetime.datetime.strptime(hits[n_tasks - 1], "%Y-%m-%d %H:%M:%S,%f")
    return dt.timestamp() * 1000.0

"""End-to-end fixtures: the real build/flinklet binary, the real Flink MiniCluster JVM from the
Maven-fetched jars (FLINK_HOME), and the real test jobs jar. Nothing here imitates Flink."""
import glob
import json
import os
import re
import shlex
import signal
import sys
import subprocess
import time
import urllib.error
import urllib.request

import pytest

# the supervisor aborts on a broken internal invariant (src/supervisor/supervisor.c): a test that trips one fails loudly
os.environ.setdefault("FLINKLET_STRICT", "1")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from testkit import free_port, wait_for  # noqa: E402,F401  (re-exported to the tests)
from testkit import events_after, events_whole_bytes, file_id  # noqa: E402

BIN = os.environ.get("FLINKLET_BIN", os.path.abspath("build/flinklet"))
FLINK_HOME = os.environ.get("FLINK_HOME", "")
JOBS_JAR = os.environ.get("FLINKLET_JOBS_JAR", os.path.abspath("build/jobs-2.2.1/flinklet-test-jobs.jar"))
CHECK_OUTPUT = os.path.join(os.path.dirname(__file__), "..", "jobs", "check_output.py")
# make e2e-asan: BIN is built with ASan and UBSan, whose reports land under this directory (one per process);
# a test during which one appeared fails. The sanitizer runtimes are in the binary, not in a container image.
SANITIZER_LOGS = os.environ.get("FLINKLET_SANITIZER_LOGS", "")
# make valgrind: every Flinklet.start() runs BIN under this command (e.g. valgrind), whose logs land in
# FLINKLET_VALGRIND_LOGS; a test during which one reported an error or a definite or indirect leak fails.
WRAPPER = shlex.split(os.environ.get("FLINKLET_WRAPPER", ""))
VALGRIND_LOGS = os.environ.get("FLINKLET_VALGRIND_LOGS", "")
# Class-data sharing (flinklet.jvm.class-data-sharing: auto, the default): one archive directory for every test of
# every session, so that the archive is made once (by the first test whose job runs 30 s) and every later JVM
# starts from it, as on a volume that outlives pods. tests/e2e/test_cds.py uses directories of its own.
CDS_DIR = os.environ.get("FLINKLET_E2E_CDS_DIR", os.path.abspath("build/e2e-cds"))


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


def flink_minor():
    """(major, minor) of FLINK_HOME's Flink."""
    return tuple(int(x) for x in flink_version().split("-")[0].split(".")[:2])


def flink_has_forst():
    """Whether FLINK_HOME has the ForSt state backend: its own jar (module jars) or inside flink-dist."""
    lib = os.path.join(FLINK_HOME, "lib")
    if glob.glob(os.path.join(lib, "flink-statebackend-forst-*.jar")):
        return True
    import zipfile
    for dist in glob.glob(os.path.join(lib, "flink-dist*.jar")):
        with zipfile.ZipFile(dist) as z:
            if any(n.endswith("/ForStStateBackend.class") for n in z.namelist()):
                return True
    return False


class Flinklet:
    """One `flinklet run` process on its own state directory."""

    def __init__(self, tmp_path, name="e2e-counter", conf=None, job=None, extra_args=(), state_dir=None, memory=None,
                 jar=None, entry_class=None):
        self.tmp = tmp_path
        # the job's jar and class (None: JOBS_JAR, as it is when the file is written, and StatefulCounter)
        self.jar = jar
        self.entry_class = entry_class or "dev.flinklet.jobs.StatefulCounter"
        self.memory = memory  # spec.resources.memory, None: not set
        self.state = state_dir or str(tmp_path / "state")
        self.port = free_port()
        self.output = os.path.join(self.state, "output")
        self.log_path = str(tmp_path / f"flinklet-{int(time.time() * 1000)}.log")
        self.conf = dict(conf or {})
        self.conf.setdefault("execution.checkpointing.interval", "1s")
        # an upgraded spec is STABLE once its readiness window passed without a restart inside the JVM (5 min by
        # default): the tests' upgrades are watched for 15 s
        self.conf.setdefault("kubernetes.operator.deployment.readiness.timeout", "15 s")
        self.conf.setdefault("rest.port", str(self.port))
        self.http_port = free_port()
        self.conf.setdefault("flinklet.http.address", f"127.0.0.1:{self.http_port}")
        self.conf.setdefault("flinklet.jvm.class-data-sharing.archive-dir", CDS_DIR)
        # the archive is made once, before the tests (cds_archive below), not by a test's own JVM: the dump
        # pauses the job for seconds, which a test of something else must not meet at a random moment
        self.conf.setdefault("flinklet.jvm.class-data-sharing.dump-delay", "1 h")
        job = dict(job or {})
        job.setdefault("args", ["--rate", "100", "--keys", "8", "--output", self.output])
        job["args"] = [self.output if a == "OUT" else a for a in job["args"]]
        job.setdefault("parallelism", 2)
        self.job = job
        self.name = name
        self.config = tmp_path / "flinklet.yaml"
        self.write_config()
        self.extra_args = list(extra_args)
        self.proc = None
        self.pidns = False  # pids in status.json are of another pid namespace
        # what an earlier flinklet left on the state directory when start() ran (see own_status, new_events)
        self.starts0 = 0
        self.status0 = None  # status.json's (inode, mtime) then
        self.events0 = 0  # the bytes of events.jsonl's whole lines then

    def write_config(self, conf=None, job=None, raw=None):
        """(Re)writes the configuration file the way editors and Kubernetes do: a new file renamed over it."""
        if conf:
            self.conf.update(conf)
        if job:
            self.job.update(job)
        if raw is None:
            lines = [
                "apiVersion: flink.apache.org/v1beta1",
                "kind: FlinkMiniCluster",
                "metadata:",
                f"  name: {self.name}",
                "spec:",
                "  flinkConfiguration:",
            ]
            for k, v in self.conf.items():
                lines.append(f"    {json.dumps(k)}: {json.dumps(str(v))}")
            if self.memory:
                lines += ["  resources:", f"    memory: {self.memory}"]
            lines += [
                "  job:",
                f"    jarURI: local://{self.jar or JOBS_JAR}",
                f"    entryClass: {self.entry_class}",
                f"    args: {json.dumps(self.job['args'])}",
                f"    parallelism: {self.job['parallelism']}",
            ]
            for k in ("upgradeMode", "initialSavepointPath", "allowNonRestoredState", "state",
                      "savepointTriggerNonce", "checkpointTriggerNonce"):
                if k in self.job:
                    lines.append(f"    {k}: {self.job[k]}")
            raw = "\n".join(lines) + "\n"
        tmp = self.config.with_name(".flinklet.yaml.new")
        tmp.write_text(raw)
        os.replace(tmp, self.config)

    def argv(self):
        return [BIN, "run", "-c", str(self.config), "--state-dir", self.state, "--flink-home", FLINK_HOME,
                *self.extra_args]

    def start(self, wrapper=(), env=None, preexec_fn=None):
        """preexec_fn runs in the child before flinklet (test_memory_budget.py: into a memory cgroup)."""
        self.log = open(self.log_path, "ab")
        self.pidns = "unshare" in " ".join(wrapper)
        # the JVM starts an earlier supervisor counted: a status.json it left says STABLE too, and its JVM's pid may
        # be alive again as another process (pid_max 32768 wraps in minutes with JVMs' threads)
        self.status0 = file_id(os.path.join(self.state, "status.json"))
        try:
            st = self.status() or {}
        except (ValueError, OSError):  # a status.json a test spoilt on purpose: flinklet starts a new one
            st = {}
        self.starts0 = (st.get("jvm") or {}).get("starts", 0)
        self.events0 = events_whole_bytes(self.state)
        # TMPDIR: flinklet.scratch.dir's default (the JVM's io.tmp.dirs) inside the test's own directory, which is
        # removed with it (the default is /tmp/flinklet-<name>-<hash>)
        tmpdir = os.path.join(os.path.dirname(self.state), "scratch")
        os.makedirs(tmpdir, exist_ok=True)
        self.proc = subprocess.Popen([*wrapper, *WRAPPER, *self.argv()], stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "TMPDIR": tmpdir, **(env or {})},
                                     preexec_fn=preexec_fn)
        return self

    def _read_status(self):
        """(status.json, its file's (inode, mtime)), (None, None) when there is none."""
        try:
            with open(os.path.join(self.state, "status.json")) as f:
                s = os.fstat(f.fileno())
                return json.load(f), (s.st_ino, s.st_mtime_ns)
        except FileNotFoundError:
            return None, None

    def status(self):
        return self._read_status()[0]

    def own_status(self):
        """status.json as written by the flinklet of the last start(), None until it wrote one: what an earlier
        flinklet left on the state directory (STABLE, RUNNING, a JVM pid alive again as another process, its
        restore, its error) is not this run's. Every write is a new file renamed over the old one, so a document
        read from another file than the one start() saw is this run's (the earlier flinklet is gone); its
        supervisor.pid says so too, outside a pid namespace and a wrapper that may fork."""
        st, ident = self._read_status()
        if st is None or self.proc is None or ident == self.status0:
            return None
        if not self.pidns and not WRAPPER and (st.get("supervisor") or {}).get("pid") != self.proc.pid:
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

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def rest(self, path, timeout=5):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
            return json.loads(r.read())

    def http(self, path, method="GET", token=None, body=None, timeout=5):
        """(status, body) of one request to the supervisor's own endpoint."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", method=method, data=body)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def token(self):
        with open(os.path.join(self.state, "http.token")) as f:
            return f.read().strip()

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

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_exit(self, timeout=60):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"flinklet did not exit within {timeout}s:\n{self.logs()[-4000:]}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()


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
    args = ["python3", CHECK_OUTPUT, directory]
    if expect_count is not None:
        args += ["--expect-count", str(expect_count)]
    r = subprocess.run(args, capture_output=True, text=True)
    summary = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
    return r.returncode, summary


@pytest.fixture
def flinklets(tmp_path, request):
    made = []
    request.node._flinklets = made

    def make(**kw):
        f = Flinklet(tmp_path, **kw)
        made.append(f)
        return f

    yield make
    for f in made:
        f.stop()


def flinklet_story(f, lines=80):
    """What a failed test's flinklets said: flinklet's own log lines, Flink's warnings and errors and the events
    other than checkpoints, the last `lines` of each (a CI run keeps no state directory: this is all there is)."""
    try:
        own = [ln[:400] for ln in f.logs().splitlines()
               if any(w in ln[:40] for w in (" flinklet ", " WARN ", " ERROR ")) or ln.startswith("flinklet")]
    except OSError as e:
        own = [f"(no log: {e})"]
    try:
        events = [f"{e.get('time')} {e.get('type')}: {e.get('message', '')[:300]}" for e in f.events()
                  if not str(e.get("type", "")).startswith("Checkpoint")]
    except (OSError, ValueError) as e:
        events = [f"(no events: {e})"]
    return (f"--- {f.state}: flinklet's log, last {lines} of {len(own)} lines\n" + "\n".join(own[-lines:]) +
            f"\n--- events, last {lines} of {len(events)} (checkpoints left out)\n" + "\n".join(events[-lines:]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries its flinklets' story (flinklet_story)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        seen = []
        for f in getattr(item, "_flinklets", []):
            if f.state not in seen:
                seen.append(f.state)
                rep.sections.append((f"flinklet {len(seen)}", flinklet_story(f)))


# make check-fast: the files of tests/e2e that start no JVM (NO_JVM_FILES in the Makefile), without Flink's jars
NO_JVM = os.environ.get("FLINKLET_NO_JVM") == "1"


@pytest.fixture(scope="session", autouse=True)
def real_components():
    assert os.access(BIN, os.X_OK), f"{BIN} is not built (make)"
    if NO_JVM:
        return
    assert os.path.isdir(os.path.join(FLINK_HOME, "lib")), "FLINK_HOME must hold the Flink jars (make flink-lib)"
    assert os.path.exists(JOBS_JAR), f"{JOBS_JAR} is not built (make jobs)"


@pytest.fixture(scope="session", autouse=True)
def cds_archive(real_components, tmp_path_factory):
    """The shared class-data sharing archive of CDS_DIR, made once before the first test (a job that runs until
    flinklet has dumped its JVM's classes), so every test's JVM starts from it as on a volume that outlives pods.
    Skipped when the archive is there already (e2e-asan and valgrind after e2e) or flinklet runs under a wrapper.
    A failure here fails nothing: the tests then start without an archive, as flinklet itself would."""
    if NO_JVM or WRAPPER or glob.glob(os.path.join(CDS_DIR, "*.jsa")):
        return
    f = Flinklet(tmp_path_factory.mktemp("cds-warmup"), name="cds-warmup",
                 conf={"flinklet.jvm.class-data-sharing.dump-delay": "3 s"})
    try:
        f.start()
        done = ("ClassDataSharingArchived", "ClassDataSharingDumpFailed", "ClassDataSharingOff")
        wait_for(lambda: [e for e in f.events() if e["type"] in done], 300, "the class-data sharing archive")
    except AssertionError as e:
        print(f"cds warm-up: {e}", file=sys.stderr)
    finally:
        f.stop()


# ---- sanitizer and valgrind reports (make e2e-asan, make valgrind) -------------------------------------------

_reported = set()  # report files already attributed to a test


SANITIZER_LOG_PREFIX = {"ASAN_OPTIONS": "asan", "UBSAN_OPTIONS": "ubsan"}


def _sanitizer_env(logdir):
    """ASAN_OPTIONS and UBSAN_OPTIONS as given, with their log_path in logdir."""
    env = {}
    for var, prefix in SANITIZER_LOG_PREFIX.items():
        opts = [o for o in os.environ.get(var, "").split(":") if o and not o.startswith("log_path=")]
        env[var] = ":".join([*opts, f"log_path={os.path.join(logdir, prefix)}"])
    return env


def sanitizer_reports(root):
    """The reports left under root, at any depth, by sanitizers run with _sanitizer_env's log_path (a log_path of
    <dir>/asan gives <dir>/asan.PID)."""
    return [p for p in glob.glob(os.path.join(root, "**", "*.*"), recursive=True)
            if os.path.isfile(p) and os.path.basename(p).split(".")[0] in SANITIZER_LOG_PREFIX.values()]


def _all_files(root):
    return [p for p in glob.glob(os.path.join(root, "**", "*"), recursive=True) if os.path.isfile(p)]


def _new_files(paths):
    """Those of paths not attributed yet (keyed by name, size and mtime: a PID 1 reuses asan.1)."""
    out = []
    for path in sorted(paths):
        st = os.stat(path)
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in _reported:
            _reported.add(key)
            out.append(path)
    return out


def _read(path, limit=20000):
    with open(path, errors="replace") as f:
        text = f.read()
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters)"


def valgrind_problems(text):
    """What a valgrind memcheck log reports: errors, definite and indirect leaks ([] when clean). A log without
    its summaries (the process was killed, or exec'd the JVM) counts only the errors it shows."""
    problems = []
    m = re.search(r"ERROR SUMMARY: ([\d,]+) errors", text)
    if m and int(m.group(1).replace(",", "")) > 0:
        problems.append(m.group(0))
    for kind in ("definitely lost", "indirectly lost"):
        m = re.search(kind + r": ([\d,]+) bytes in ([\d,]+) blocks", text)
        if m and int(m.group(1).replace(",", "")) > 0:
            problems.append(m.group(0))
    if not re.search(r"ERROR SUMMARY", text):
        shown = re.findall(r"^==\d+== (Invalid (?:read|write|free)|Conditional jump|Use of uninitialised|"
                           r"Syscall param|Mismatched free|Source and destination overlap)", text, re.M)
        problems += sorted(set(shown))
    return problems


@pytest.fixture(autouse=True)
def sanitizer_and_valgrind_reports(request):
    """Under make e2e-asan or make valgrind: fails the test during which flinklet reported a problem. Runs
    after the test's other fixtures have stopped their flinklets (autouse fixtures are set up first)."""
    if not SANITIZER_LOGS and not VALGRIND_LOGS:
        yield
        return
    saved = {}
    if SANITIZER_LOGS:
        logdir = os.path.join(SANITIZER_LOGS, re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid))
        os.makedirs(logdir, exist_ok=True)
        env = _sanitizer_env(logdir)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
    if VALGRIND_LOGS:
        _new_files(_all_files(VALGRIND_LOGS))  # earlier ones are not this test's
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    failures = []
    if SANITIZER_LOGS:
        for path in _new_files(sanitizer_reports(SANITIZER_LOGS)):
            failures.append(f"---- sanitizer report {path}\n{_read(path)}")
    if VALGRIND_LOGS:
        for path in _new_files(_all_files(VALGRIND_LOGS)):
            problems = valgrind_problems(_read(path, limit=10**7))
            if problems:
                failures.append(f"---- valgrind {path}: {'; '.join(problems)}\n{_read(path)}")
    if failures:
        pytest.fail("flinklet's sanitizers or valgrind reported problems during this test:\n" + "\n".join(failures),
                    pytrace=False)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "heavy: a long black-box suite of Flink timings (random moments, copies, a pty); `make e2e` runs it, "
        "`make e2e-asan` leaves it out (its C paths are the ones the other tests drive) to keep `make check` under "
        "an hour")
    config.addinivalue_line(
        "markers", "asan_elsewhere: its flinklet C paths run under ASan in other tests (what it adds is Flink's or a "
        "browser's side, or a variant the JVM tells apart and flinklet does not); `make e2e-asan` leaves it out")
    config.addinivalue_line(
        "markers", "single_version: runs on FLINK_VERSION only: `make e2e-matrix` (and make check's matrix items) leave "
        "it out, a shorter test of its file covering the same on each of MATRIX_VERSIONS")


def pytest_sessionfinish(session, exitstatus):
    """Reports no test was there to see (a flinklet that outlived its test) fail the run too."""
    stray = []
    if SANITIZER_LOGS:
        stray += _new_files(sanitizer_reports(SANITIZER_LOGS))
    if VALGRIND_LOGS:
        stray += [p for p in _new_files(_all_files(VALGRIND_LOGS)) if valgrind_problems(_read(p, limit=10**7))]
    for path in stray:
        print(f"\n---- report outside any test: {path}\n{_read(path)}")
    if stray:
        session.exitstatus = 1


def wait_restarted(f, old_pid, timeout=120):
    """The job RUNNING, lifecycle STABLE, in a new JVM that is alive (after old_pid's end); fails at once if
    flinklet exits."""
    def again():
        st = f.own_status()
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}")
        ok = (st and st["jvm"]["pid"] not in (0, old_pid) and st["lifecycleState"] == "STABLE"
              and st["jobStatus"]["state"] == "RUNNING" and pid_alive(st["jvm"]["pid"]))
        return st if ok else None
    return wait_for(again, timeout, "the job RUNNING again in a new JVM")


def restored(f, job_id, timeout=60):
    """Flink's own word on the restore of the running job (/jobs/<id>/checkpoints latest.restored)."""
    def ask():
        try:
            return f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["restored"]
        except OSError:  # a job still initializing answers 500 for a moment
            return None
    return wait_for(ask, timeout, "Flink to report the restore")

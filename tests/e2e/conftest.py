"""End-to-end fixtures: the real build/flinklet binary, the real Flink MiniCluster JVM from the
Maven-fetched jars (FLINK_HOME), and the real test jobs jar. Nothing here imitates Flink."""
import glob
import os
import re
import sys

import pytest

# the supervisor aborts on a broken internal invariant (src/supervisor/supervisor.c): a test that trips one fails loudly
os.environ.setdefault("FLINKLET_STRICT", "1")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
# the harness (tests/testkit.py), re-exported to the tests
from testkit import BIN, CDS_DIR, FLINK_HOME, JOBS_JAR, WRAPPER  # noqa: E402,F401
from testkit import Flinklet, check_output, flink_version, free_port, pid_alive, wait_for  # noqa: E402,F401

# make e2e-asan: BIN is built with ASan and UBSan, whose reports land under this directory (one per process);
# a test during which one appeared fails. The sanitizer runtimes are in the binary, not in a container image.
SANITIZER_LOGS = os.environ.get("FLINKLET_SANITIZER_LOGS", "")
# make valgrind: every Flinklet.start() runs BIN under WRAPPER (e.g. valgrind), whose logs land in
# FLINKLET_VALGRIND_LOGS; a test during which one reported an error or a definite or indirect leak fails.
VALGRIND_LOGS = os.environ.get("FLINKLET_VALGRIND_LOGS", "")


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

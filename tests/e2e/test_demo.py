"""`make demo` in a terminal: Ctrl-C stops the demo job with a savepoint, the banner says where it is, and the
next run resumes from it with the job's counters carrying on. The demo runs under a pseudo-terminal with a
shell's job control (the command is the terminal's foreground process group), so the ^C written to the
terminal is turned into SIGINT by the kernel's line discipline, for every process of that group, as in a
real terminal."""
import json
import os
import pty
import re
import signal
import threading
import time

from conftest import BIN, FLINK_HOME, JOBS_JAR, check_output, free_port, wait_for
from testkit import norm
import pytest

pytestmark = pytest.mark.heavy  # make e2e only, not e2e-asan (conftest.py)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BANNER_RUNNING = "flinklet demo: the job is RUNNING."
EXIT_LINE = re.compile(r"TERMINAL-EXIT code=(-?\d+) signal=(-?\d+) left=\[([\d, ]*)\]")


def processes_naming(marker, but=()):
    """pids of the processes whose command line contains marker (flinklet's and the JVM's name the state dir)"""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in but:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


class Terminal:
    """A command in a pseudo-terminal. The terminal's session leader does what an interactive shell does: it
    puts the command in a process group of its own, makes that the terminal's foreground group, waits for it,
    and then writes a last line with its exit status and the processes still naming `marker` at that instant
    (a process the command left behind). What the terminal showed is kept in the file transcript."""

    def __init__(self, argv, env, marker, transcript):
        self.out = b""
        self.transcript = transcript
        pid, fd = pty.fork()
        if pid == 0:
            code = 99
            try:
                child = os.fork()
                if child == 0:
                    os.setpgid(0, 0)
                    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
                    os.tcsetpgrp(0, os.getpid())
                    for sig in (signal.SIGTTOU, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
                        signal.signal(sig, signal.SIG_DFL)
                    os.chdir(ROOT)
                    os.execvpe(argv[0], argv, env)
                try:
                    os.setpgid(child, child)
                except OSError:
                    pass  # the child did it already
                _, status = os.waitpid(child, 0)
                left = processes_naming(marker, but=(os.getpid(),))
                code_, sig = (os.WEXITSTATUS(status), 0) if os.WIFEXITED(status) else (-1, os.WTERMSIG(status))
                os.write(1, f"\nTERMINAL-EXIT code={code_} signal={sig} left={left}\n".encode())
                code = 0
            finally:
                os._exit(code)
        self.pid, self.fd, self.marker = pid, fd, marker
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self):
        """Reads what the terminal shows until its end (no process has it open), so that no writer blocks."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # EIO: the other side is closed
                data = b""
            if not data:
                self.closed.set()
                return
            with self.lock:
                self.out += data

    def text(self):
        with self.lock:
            return self.out.decode(errors="replace").replace("\r\n", "\n")

    def expect(self, pattern, timeout):
        """The first match of pattern in the terminal's output, waiting up to timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.text())
            if m:
                return m
            if time.monotonic() > deadline or self.closed.wait(0.5) and not re.search(pattern, self.text()):
                raise AssertionError(f"the terminal did not show {pattern!r} within {timeout}s:\n{self.text()[-6000:]}")

    def ctrl_c(self):
        os.write(self.fd, b"\x03")

    def finish(self, timeout):
        """(exit code, signal, processes left) of the command; the terminal is read to its end."""
        m = self.expect(EXIT_LINE.pattern, timeout)
        self.closed.wait(30)
        os.waitpid(self.pid, 0)
        self.close()
        left = [int(p) for p in m.group(3).split(",") if p.strip()]
        return int(m.group(1)), int(m.group(2)), left

    def kill(self):
        """Clean-up after a failed test: what still names marker (flinklet in its own session, its JVM), the
        command's process group, then the terminal."""
        if self.fd is None:
            return
        for sig, grace in ((signal.SIGTERM, 40), (signal.SIGKILL, 5)):
            for p in processes_naming(self.marker, but=(os.getpid(),)):
                try:
                    os.kill(p, sig)
                except OSError:
                    pass
            end = time.monotonic() + grace
            while time.monotonic() < end and processes_naming(self.marker, but=(os.getpid(),)):
                time.sleep(0.5)
        try:
            pgrp = os.tcgetpgrp(self.fd)
            if pgrp > 1 and pgrp != os.getpgrp():  # 0 when the terminal's session has ended
                os.killpg(pgrp, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        self.close()

    def close(self):
        self.closed.wait(5)
        self.reader.join(5)
        with open(self.transcript, "w") as f:  # what the terminal showed, for a look after a failure
            f.write(self.text())
        os.close(self.fd)
        self.fd = None


def status_of(state):
    with open(os.path.join(state, "status.json")) as f:
        return json.load(f)


def events_of(state):
    with open(os.path.join(state, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def wait_committed_checkpoint(state, after_ms, timeout=120):
    """The status once a checkpoint newer than after_ms completed (the demo's output is committed with it)."""
    def ckpt():
        lc = status_of(state)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
        return lc if lc and lc["timeStamp"] > after_ms else None
    return wait_for(ckpt, timeout, f"a checkpoint after {after_ms}")


def stop_with_ctrl_c(term, state):
    """^C to the terminal: the command's exit (code, signal, processes left), the savepoint the banner names (None
    when it names none), the time of the ^C, and the events since"""
    t0 = int(time.time() * 1000)
    seen = len(events_of(state))
    term.ctrl_c()
    code, sig, left = term.finish(120)
    m = re.search(r"stopped with a savepoint \(flinklet exit 0\)\.\s*\n\s*savepoint:\s+(\S+)", term.text())
    return (code, sig, left), m and m.group(1), t0, events_of(state)[seen:]


def demo_env(state):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env.update(DEMO_STATE_DIR=state, TERM="dumb",
               DEMO_OPTS=f"-D rest.port={free_port()} -D flinklet.http.address=127.0.0.1:{free_port()}")
    env.pop("DEMO_SECONDS", None)
    return env


def test_ctrl_c_takes_a_savepoint_and_the_next_demo_resumes_from_it(tmp_path):
    state = str(tmp_path / "demo-state")
    output = os.path.join(state, "output")
    terms = []
    try:
        # ---- the first `make demo` (make's demo-run: the same recipe on what is built), stopped by ^C
        make = ["make", "-s", "--no-print-directory", "demo-run", f"DEMO_BIN={BIN}", f"DEMO_FLINK_HOME={FLINK_HOME}",
                f"DEMO_JAR={JOBS_JAR}"]
        term = Terminal(make, demo_env(state), marker=state, transcript=tmp_path / "terminal-1.txt")
        terms.append(term)
        term.expect(re.escape(BANNER_RUNNING), 240)
        assert term.expect(r"resumed from: (.*)\n", 10).group(1).startswith("nothing: a fresh start")
        st = status_of(state)
        assert st["restoredFrom"]["kind"] == "none"
        job_id = st["jobStatus"]["jobId"]
        wait_committed_checkpoint(state, int(time.time() * 1000))

        (code, sig, left), savepoint, t0, events = stop_with_ctrl_c(term, state)
        # nothing the demo started outlived make: flinklet and its JVM had exited when make returned, and make
        # ended the way GNU make ends on SIGINT (it waited for the demo first, then killed itself)
        assert left == [], f"still running after make returned: {left}\n{term.text()[-3000:]}"
        assert (code, sig) == (-1, signal.SIGINT), term.text()[-3000:]
        assert savepoint, f"the banner names no savepoint:\n{term.text()[-3000:]}"
        # one stop, by exactly one SIGTERM: the terminal's SIGINT never reached flinklet
        stops = [e for e in events if e["type"] == "StopRequested"]
        assert [e["message"] for e in stops] == ["SIGTERM received"], stops
        completed = [e for e in events if e["type"] == "SavepointCompleted" and e["timeMs"] >= t0]
        assert len(completed) == 1 and norm(savepoint) in completed[0]["message"], (completed, savepoint)
        st = status_of(state)
        last = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
        assert norm(last["location"]) == norm(savepoint) and last["triggerType"] == "UPGRADE", last
        assert os.path.exists(os.path.join(norm(savepoint), "_metadata"))
        assert st["jvm"]["pid"] == 0
        assert "make demo' again resumes from this savepoint" in term.text()
        rc, stopped = check_output(output)
        assert rc == 0 and stopped["records"] > 0, stopped

        # ---- the second run (the script itself, as make's recipe runs it): it resumes from that savepoint
        t1 = int(time.time() * 1000)
        term = Terminal(["scripts/demo.sh", BIN, FLINK_HOME, JOBS_JAR], demo_env(state), marker=state,
                        transcript=tmp_path / "terminal-2.txt")
        terms.append(term)
        m = term.expect(r"resumed from: (\S+) (\S+)\n", 240)
        assert m.group(1) == "savepoint" and norm(m.group(2)) == norm(savepoint), m.group(0)
        term.expect(re.escape(BANNER_RUNNING), 10)
        st = status_of(state)
        assert st["restoredFrom"]["kind"] == "savepoint" and norm(st["restoredFrom"]["location"]) == norm(savepoint)
        assert st["jobStatus"]["jobId"] == job_id
        restoring = [e for e in events_of(state) if e["type"] == "Restoring" and e["timeMs"] >= t1]
        assert restoring and norm(savepoint) in restoring[0]["message"], restoring
        wait_committed_checkpoint(state, int(time.time() * 1000))

        (code, sig, left), savepoint2, _, events = stop_with_ctrl_c(term, state)
        assert left == [], f"still running after the script returned: {left}\n{term.text()[-3000:]}"
        assert (code, sig) == (0, 0), term.text()[-3000:]  # the script exits with flinklet's code: 0
        assert savepoint2, f"the banner names no savepoint:\n{term.text()[-3000:]}"
        assert [e["message"] for e in events if e["type"] == "StopRequested"] == ["SIGTERM received"]
        assert norm(savepoint2) != norm(savepoint)
        assert [e for e in events if e["type"] == "SavepointCompleted" and norm(savepoint2) in e["message"]], events
        # the counters carried on: every key's counts are 1..n over both runs (a restart from empty state
        # would count from 1 again: duplicates), no seq twice, and the second run added to the first
        rc, both = check_output(output)
        assert rc == 0 and both["duplicates"] == 0 and both["gaps"] == 0, both
        assert both["records"] > stopped["records"] and both["max_seq"] > stopped["max_seq"], (stopped, both)
    finally:
        for t in terms:
            t.kill()

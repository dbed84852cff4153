"""5. The HTTP endpoint: requests per second for GET /metrics and GET /status from a load generator on loopback
(wrk, 1 thread, 8 connections; a small Python generator when wrk is not installed), and, in the same run, kill -9 of
the JVM while the load runs, next to the same kill without load: from the JVM gone (its pidfd readable) to flinklet's
JvmExited event (noticed), to RestartScheduled (decided) and to JvmStarted (handled: a new JVM after the 1 s backoff).
Then the same kills on a state volume whose every fsync takes 200 ms (tests/faults/volshim.c preloaded into flinklet
only, not into the JVM): the restart decision next to the one on the plain volume (issue 15: <= 10 ms), and the
longest /healthz answer while the new launch waits for its intent to reach the volume (the loop must not wait with
it); with FLINKLET_BASELINE_BIN the same slow-volume kills with another build, side by side. Last, retention on a
volume whose every metadata call (rename, unlink, rmdir) takes BENCH_SLOW_META_MS (20 ms): a savepoint given
BENCH_RETENTION_FILES (200) more files (RocksDB's) is disposed of when the next one completes, and the slowest /healthz
answer meanwhile is measured (the loop must not remove it itself), side by side with FLINKLET_BASELINE_BIN.
BENCH_HTTP_PARTS=retention runs that part only."""
import http.client
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import VOLSHIM, Flinklet, log, now_ms, print_rows, row, wait_for  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_HTTP_ROUNDS", "3"))
SLOW_FSYNC_MS = int(os.environ.get("BENCH_SLOW_FSYNC_MS", "200"))
# another build of flinklet whose restart decision on the slow volume is measured too (e.g. main's, before issue 15)
BASELINE_BIN = os.environ.get("FLINKLET_BASELINE_BIN")
LOAD_S = int(os.environ.get("BENCH_HTTP_SECONDS", "10"))
SLOW_META_MS = int(os.environ.get("BENCH_SLOW_META_MS", "20"))
RETENTION_FILES = int(os.environ.get("BENCH_RETENTION_FILES", "200"))
PARTS = os.environ.get("BENCH_HTTP_PARTS", "all")
CONNS = 8
WRK = shutil.which("wrk")


class Load:
    """wrk (or the Python fallback) against one path for `seconds`, in the background."""

    def __init__(self, port, path, seconds):
        self.port, self.path, self.seconds = port, path, seconds
        self.rps = None
        self.errors = 0
        if WRK:
            self.proc = subprocess.Popen([WRK, "-t1", f"-c{CONNS}", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"],
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        else:
            self.proc = None
            self.thread = threading.Thread(target=self.python_load, daemon=True)
            self.thread.start()

    def python_load(self):
        counts = [0] * CONNS
        errors = [0] * CONNS
        deadline = time.monotonic() + self.seconds

        def one(i):
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            while time.monotonic() < deadline:
                try:
                    c.request("GET", self.path)
                    r = c.getresponse()
                    r.read()
                    counts[i] += 1
                    if r.status != 200:
                        errors[i] += 1
                except (OSError, http.client.HTTPException):
                    errors[i] += 1
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        t0 = time.monotonic()
        ts = [threading.Thread(target=one, args=(i,)) for i in range(CONNS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.rps = sum(counts) / (time.monotonic() - t0)
        self.errors = sum(errors)

    def wait(self):
        if self.proc:
            out = self.proc.communicate(timeout=self.seconds + 30)[0]
            m = re.search(r"Requests/sec:\s*([\d.]+)", out)
            self.rps = float(m.group(1)) if m else 0.0
            e = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
            s = re.search(r"Socket errors:.*", out)
            self.errors = int(e.group(1)) if e else 0
            if s:
                self.errors += sum(int(x) for x in re.findall(r"\d+", s.group(0)))
        else:
            self.thread.join()
        return self.rps


def wait_ready(f, stable_wait=6.0):
    """The job RUNNING for stable_wait s: past flinklet.restart.stable-period (5 s), so every kill is a first crash
    with the 1 s backoff."""
    st = f.wait_stable()
    running_at = max(e["timeMs"] for e in f.events() if e["type"] == "JobRunning")
    time.sleep(max(0.0, (running_at + stable_wait * 1000 - now_ms()) / 1000))
    return st


class HealthProbe:
    """GET /healthz one after the other on one keep-alive connection, each request's start and latency in ms."""

    def __init__(self, port):
        self.port, self.samples, self.stop = port, [], False
        self.thread = threading.Thread(target=self.probe, daemon=True)
        self.thread.start()

    def probe(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop:
            t = now_ms()
            try:
                c.request("GET", "/healthz")
                c.getresponse().read()
            except (OSError, http.client.HTTPException):
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                continue
            self.samples.append((t, now_ms() - t))
            time.sleep(0.002)

    def worst(self, t_from, t_to):
        """The longest answer to a request sent between the two times (the launch's wait for the volume)."""
        self.stop = True
        self.thread.join()
        return max((lat for t, lat in self.samples if t_from <= t <= t_to), default=0.0)


def kill_round(f, st, probe=False):
    """kill -9 of the JVM; the latencies in ms (with probe: the longest /healthz answer from the kill to the new
    JVM's launch, which waits for the launch's intent to be on the volume)."""
    pid = st["jvm"]["pid"]
    pidfd = os.pidfd_open(pid)
    hp = HealthProbe(f.http_port) if probe else None
    t0 = now_ms()
    os.kill(pid, signal.SIGKILL)
    select.select([pidfd], [], [], 10)
    t_gone = now_ms()
    os.close(pidfd)
    wait_for(lambda: f.first_event(t0, "JvmStarted"), 30, "the new JVM", interval=0.05)
    ev = {t: f.first_event(t0, t) for t in ("JvmExited", "RestartScheduled", "JvmStarted")}
    r = {"gone": t_gone - t0, "noticed": ev["JvmExited"] - t_gone, "decided": ev["RestartScheduled"] - t_gone,
         "started": ev["JvmStarted"] - t_gone}
    if hp:
        r["healthz"] = hp.worst(t_gone, ev["JvmStarted"])
    return r


def med(rounds, k):
    v = [r[k] for r in rounds]
    return f"{statistics.median(v):.1f} ms (max {max(v):.1f})"


def slow_volume_rounds(binary=None):
    """The kills again, with every fsync of the state volume taking SLOW_FSYNC_MS (no HTTP load)."""
    if not os.path.exists(VOLSHIM):
        log(f"http: {VOLSHIM} is missing (make build/volshim.so): no slow-volume rounds")
        return None
    f = Flinklet("http-slowvol", conf={"flinklet.restart.stable-period": "5 s"}, job={"upgradeMode": "last-state"},
                 binary=binary)
    rounds = []
    try:
        f.start(env={"LD_PRELOAD": VOLSHIM, "VOLSHIM_DIR": f.state, "VOLSHIM_AT": "0",
                     "VOLSHIM_SYNC_DELAY_MS": str(SLOW_FSYNC_MS)})
        f.wait_stable()
        for _ in range(ROUNDS):
            rounds.append(kill_round(f, wait_ready(f), probe=True))
            log(f"http: kill with {SLOW_FSYNC_MS} ms per fsync ({binary or 'this build'}): {rounds[-1]}")
    finally:
        f.stop()
    return rounds


def post(f, what):
    st = f.status()
    with open(st["supervisor"]["tokenFile"]) as fh:
        token = fh.read().strip()
    c = http.client.HTTPConnection("127.0.0.1", f.http_port, timeout=30)
    c.request("POST", f"/api/v1/{what}", headers={"Authorization": f"Bearer {token}"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def retention_round(binary=None):
    """A savepoint with RETENTION_FILES more files, then the next one: retention disposes of the first. Returns the
    longest /healthz answer from the second request to SavepointDisposed, and that span, in ms."""
    if not os.path.exists(VOLSHIM):
        log(f"http: {VOLSHIM} is missing (make build/volshim.so): no retention round")
        return None
    f = Flinklet("http-retention", conf={"kubernetes.operator.savepoint.history.max.count": "1"},
                 job={"upgradeMode": "last-state"}, binary=binary)
    try:
        f.start(env={"LD_PRELOAD": VOLSHIM, "VOLSHIM_DIR": f.state, "VOLSHIM_AT": "0",
                     "VOLSHIM_META_DELAY_MS": str(SLOW_META_MS)})
        f.wait_stable()
        t0 = now_ms()
        post(f, "savepoint")
        first = wait_for(lambda: ((f.status() or {}).get("jobStatus", {}).get("savepointInfo", {})
                                  .get("lastSavepoint") or {}).get("location"), 120, "the first savepoint",
                         interval=0.2)
        path = re.sub(r"^file:(//)?", "", first)
        for i in range(RETENTION_FILES):
            with open(os.path.join(path, f"bench-sst-{i:05d}"), "wb") as fh:
                fh.write(b"x" * 4096)
        hp = HealthProbe(f.http_port)
        t1 = now_ms()
        post(f, "savepoint")
        wait_for(lambda: f.first_event(t1, "SavepointDisposed"), 120 + RETENTION_FILES * SLOW_META_MS / 250,
                 "the disposal", interval=0.2)
        t2 = f.first_event(t1, "SavepointDisposed")
        r = {"healthz": hp.worst(t1, now_ms()), "disposed": t2 - t1}
        log(f"http: retention of {RETENTION_FILES} files, {SLOW_META_MS} ms per metadata call "
            f"({binary or 'this build'}): {r}")
        return r
    finally:
        f.stop()


def retention_rows():
    mine = retention_round()
    if not mine:
        return []
    base = retention_round(BASELINE_BIN) if BASELINE_BIN else None
    what = (f"slowest /healthz while retention removes a savepoint ({RETENTION_FILES + 1}+ files), {SLOW_META_MS} ms "
            "per metadata call")
    how = (f"the longest answer to GET /healthz (one keep-alive connection, one request after the other) from the "
           f"request of the savepoint whose completion disposes of the older one to a moment after SavepointDisposed; "
           f"volshim VOLSHIM_META_DELAY_MS={SLOW_META_MS} in flinklet (and its children) only")
    if base:
        return [row(what + ", this build / baseline", f"{mine['healthz']:.1f} ms / {base['healthz']:.1f} ms",
                    how + f"; baseline {BASELINE_BIN}, one run after the other"),
                row("savepoint requested -> SavepointDisposed, this build / baseline",
                    f"{mine['disposed']:.0f} ms / {base['disposed']:.0f} ms",
                    "event timeMs - the POST; both remove the same number of files")]
    return [row(what, f"{mine['healthz']:.1f} ms", how)]


def run():
    if PARTS == "retention":
        return retention_rows()
    f = Flinklet("http", conf={"flinklet.restart.stable-period": "5 s"}, job={"upgradeMode": "last-state"})
    rps = {}
    idle, loaded = [], []
    loaded_rps = []
    try:
        f.start()
        f.wait_stable()
        time.sleep(3)
        for path in ("/status", "/metrics"):
            log(f"http: {'wrk' if WRK else 'python load'} on {path} for {LOAD_S} s")
            ld = Load(f.http_port, path, LOAD_S)
            rps[path] = (ld.wait(), ld.errors)
        for i in range(ROUNDS):
            idle.append(kill_round(f, wait_ready(f)))
            log(f"http: kill without load: {idle[-1]}")
            path = ("/metrics", "/status")[i % 2]
            st = wait_ready(f)
            ld = Load(f.http_port, path, LOAD_S + 6)
            time.sleep(1)
            r = kill_round(f, st)
            r["path"] = path
            loaded_rps.append((path, ld.wait(), ld.errors))
            loaded.append(r)
            log(f"http: kill under load on {path}: {r}, {loaded_rps[-1][1]:.0f} req/s")
    finally:
        f.stop()
    gen = f"wrk -t1 -c{CONNS} -d{LOAD_S}s" if WRK else f"Python keep-alive generator, {CONNS} connections, {LOAD_S} s"
    rows = [
        row("GET /status throughput", f"{rps['/status'][0]:,.0f} req/s ({rps['/status'][1]} errors)",
            f"{gen} on loopback, job RUNNING"),
        row("GET /metrics throughput", f"{rps['/metrics'][0]:,.0f} req/s ({rps['/metrics'][1]} errors)",
            f"{gen} on loopback, job RUNNING"),
        row("throughput while the JVM is killed and restarted",
            "; ".join(f"{p} {v:,.0f} req/s ({e} errors)" for p, v, e in loaded_rps),
            f"the same generator for {LOAD_S + 6} s with a kill -9 of the JVM after about 1 s"),
        row("JVM gone -> JvmExited, no load / under load", f"{med(idle, 'noticed')} / {med(loaded, 'noticed')}",
            f"flinklet's event timeMs - the JVM's pidfd readable; {ROUNDS} kills each, alternating"),
        row("JVM gone -> restart decision, no load / under load", f"{med(idle, 'decided')} / {med(loaded, 'decided')}",
            "RestartScheduled event timeMs - the JVM's pidfd readable"),
        row("JVM gone -> new JVM launched, no load / under load", f"{med(idle, 'started')} / {med(loaded, 'started')}",
            "JvmStarted event timeMs - the JVM's pidfd readable (1 s backoff included)"),
    ]
    slow = slow_volume_rounds()
    if slow:
        rows += [
            row(f"JVM gone -> restart decision, plain volume / {SLOW_FSYNC_MS} ms per fsync",
                f"{med(idle, 'decided')} / {med(slow, 'decided')} (goal <= 10 ms)",
                f"RestartScheduled timeMs - the JVM's pidfd readable, no load; {ROUNDS} kills each; the slow volume "
                f"is the volshim LD_PRELOAD library in flinklet only (VOLSHIM_SYNC_DELAY_MS={SLOW_FSYNC_MS})"),
            row(f"JVM gone -> new JVM launched, plain volume / {SLOW_FSYNC_MS} ms per fsync",
                f"{med(idle, 'started')} / {med(slow, 'started')}",
                "JvmStarted timeMs - the JVM's pidfd readable (the first crash after a stable run is restarted at "
                "once; on the slow volume the spawn waits for its intent: the flush in flight, then its own, three "
                "syncs each; the loop does not wait)"),
        ]
    base = slow_volume_rounds(BASELINE_BIN) if slow and BASELINE_BIN else None
    if slow:
        rows.append(row(f"/healthz latency while a launch waits for the volume, {SLOW_FSYNC_MS} ms per fsync",
                        med(slow, "healthz"),
                        "the longest answer to GET /healthz (one keep-alive connection, one request after the other) "
                        "sent between the JVM gone and JvmStarted, per kill"))
    if base:
        rows += [
            row(f"JVM gone -> restart decision, {SLOW_FSYNC_MS} ms per fsync, this build / baseline",
                f"{med(slow, 'decided')} / {med(base, 'decided')}",
                f"the same {ROUNDS} kills with the baseline build {BASELINE_BIN}, one run after the other"),
            row(f"JVM gone -> new JVM launched, {SLOW_FSYNC_MS} ms per fsync, this build / baseline",
                f"{med(slow, 'started')} / {med(base, 'started')}",
                "JvmStarted timeMs - the JVM's pidfd readable (both spawn once the intent is on the volume; the "
                "baseline's loop waits with it)"),
            row(f"/healthz latency while a launch waits for the volume, {SLOW_FSYNC_MS} ms per fsync, this build / "
                "baseline", f"{med(slow, 'healthz')} / {med(base, 'healthz')}",
                "the longest /healthz answer between the JVM gone and JvmStarted, per kill, median of the kills"),
        ]
    return rows + retention_rows()


if __name__ == "__main__":
    print_rows("http", run())

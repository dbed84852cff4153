#!/usr/bin/env python3
"""Chaos (issue 8, item 1): the exactly-once StatefulCounter job from tests/jobs/ under the real flinklet and
the real MiniCluster JVM, killed at random instants for --rounds rounds:

  kinds:   jvm       kill -9 of the JVM (flinklet restarts it)
           flinklet  kill -9 of flinklet (its JVM dies with it), then a new flinklet on the same volume
           both      kill -9 of both at once, then a new flinklet
           sigterm   SIGTERM to flinklet (stop-with-savepoint when RUNNING), then a new flinklet
           portclash kill -9 of the JVM, then another process holds Flink's REST port for 2-8 s (issue 13: an
                     unrelated startup failure must not rewind: the same restore point is tried again)
           jar       kill -9 of the JVM, then the job's jar is gone for 1-5 s (the same)
           earlystop kill -9 of both, a new flinklet, and SIGTERM 0-8 s after its start: the stop waits for
                     RUNNING and takes the savepoint (exit 0), or says it took none (exit 4) only if Flink never
                     had the job RUNNING before the signal
           copy      kill -9 of both, the volume copied in place with `cp -r` (no times kept) and, at random,
                     the savepoints' files touched: the highest checkpoint id still wins
  moments: steady    a random instant while RUNNING (checkpoints every second, so often during one)
           savepoint just after asking for a savepoint (POST /api/v1/savepoint)
           restore   while the new JVM is still restoring (before the job is RUNNING again)
           rescale   just after a parallelism change (an upgrade: savepoint, stop, restore at 2 <-> 3)

Checked: no rewind: every restore is from the highest checkpoint id with a complete _metadata on the volume at
the moment of the kill (or higher); status.json parses after every kill and at every 50 ms sample throughout; every Restoring event's
location had its _metadata at the moment the event was written (a watcher checks within 50 ms, before the new
JVM can touch it) and is what Flink's /jobs/:id/checkpoints reports as restored; at the end the committed
output has no lost and no duplicated record (tests/jobs/check_output.py). Prints the figures, exits 1 on any
violation. Usage: chaos.py --rounds N [--seed S] [--kinds K,K] [--workdir DIR] (FLINKLET_BIN, FLINK_HOME, FLINKLET_JOBS_JAR
as for the e2e tests)."""
import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile

os.environ.setdefault("FLINKLET_STRICT", "1")  # the supervisor aborts on a broken internal invariant
import threading
import time
import pathlib
import socket
import struct
import subprocess

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from testkit import JOBS_JAR, Flinklet, check_output, norm, pid_alive, wait_for  # noqa: E402  (the test harness)

RESTORING = re.compile(r"from (checkpoint|savepoint) (\S+) \(")


class Watcher(threading.Thread):
    """Samples status.json (must parse) and checks each new Restoring event's _metadata at once."""

    def __init__(self, state):
        super().__init__(daemon=True)
        self.state = state
        self.stop_flag = threading.Event()
        self.status_reads = 0
        self.status_bad = []
        self.seen_lines = 0
        self.restores = []  # (kind, location, metadata existed)
        self.ids = {}  # location -> the checkpoint id in its _metadata when the Restoring event was written
        self.lock = threading.Lock()

    def run(self):
        while not self.stop_flag.is_set():
            self.tick()
            time.sleep(0.05)
        self.tick()

    def tick(self):
        path = os.path.join(self.state, "status.json")
        try:
            with open(path) as f:
                text = f.read()
            json.loads(text)
            self.status_reads += 1
        except FileNotFoundError:
            pass
        except ValueError as e:
            self.status_bad.append(f"{time.strftime('%H:%M:%S')}: {e}: {text[:200]!r}")
        ev = os.path.join(self.state, "events.jsonl")
        try:
            with open(ev) as f:
                lines = f.readlines()
        except FileNotFoundError:
            return
        for line in lines[self.seen_lines:]:
            if not line.endswith("\n"):
                break  # a line being written: next tick
            self.seen_lines += 1
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("type") != "Restoring":
                continue
            m = RESTORING.search(e.get("message", ""))
            if not m:
                with self.lock:
                    self.restores.append(("?", e.get("message"), False))
                continue
            meta = os.path.join(norm(m.group(2)), "_metadata")
            i = metadata_id(norm(m.group(2)))
            with self.lock:
                if i is not None:
                    self.ids[norm(m.group(2))] = i
                self.restores.append((m.group(1), m.group(2), os.path.isfile(meta)))


def metadata_id(directory):
    """The checkpoint id in a snapshot's _metadata header (magic, version, id), or None."""
    try:
        with open(os.path.join(directory, "_metadata"), "rb") as fh:
            hdr = fh.read(16)
    except OSError:
        return None
    if len(hdr) < 16 or struct.unpack(">I", hdr[:4])[0] != 0x4960672D:
        return None
    return struct.unpack(">q", hdr[8:16])[0]


def newest_on_volume(state):
    """(id, path) of the highest complete restore point under the state directory (checkpoints, savepoints)."""
    best = (-1, None)
    for root, dirs, files in os.walk(state):
        dirs[:] = [d for d in dirs if d != "output" and not d.endswith(".unreadable")]
        if "_metadata" in files:
            i = metadata_id(root)
            if i is not None and i > best[0]:
                best = (i, root)
    return best


def hold_port(port, seconds):
    """Another process's listener on Flink's REST port for a while (a port clash unrelated to the restore)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    deadline = time.monotonic() + 5
    while True:
        try:
            sock.bind(("0.0.0.0", port))
            break
        except OSError:
            if time.monotonic() > deadline:
                sock.close()
                return None
            time.sleep(0.002)
    sock.listen(16)
    t = threading.Timer(seconds, sock.close)
    t.daemon = True
    t.start()
    return t


def flink_running(f):
    """Flink's own word (its REST API, not flinklet's): is the job RUNNING with every task running?"""
    try:
        jobs = f.rest("/jobs/overview", timeout=1)["jobs"]
    except Exception:  # noqa: BLE001
        return False
    return any(j["state"] == "RUNNING" and j["tasks"]["running"] == j["tasks"]["total"] for j in jobs)


def sigterm_and_judge(f, was_running, tally, where):
    """SIGTERM to flinklet, its exit code tallied; a complaint, or None: exit 4 (no savepoint) is right only when
    Flink did not have the job RUNNING at the signal (a restore, a port clash)."""
    f.proc.send_signal(signal.SIGTERM)
    try:
        rc = f.proc.wait(60)
    except Exception:  # noqa: BLE001
        rc = "timeout"
    tally[(was_running, rc)] += 1
    if rc == 0 or (rc == 4 and not was_running):
        return None
    return f"SIGTERM{where} ({'Flink had the job RUNNING' if was_running else 'before RUNNING'}): exit code {rc}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FLINKLET_CHAOS_SEED", "0")) or None)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--kinds", default=os.environ.get("FLINKLET_CHAOS_KINDS", ""),
                    help="comma-separated fault kinds to draw from (default: all, jvm kills twice as often)")
    opts = ap.parse_args()
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1, 1 << 30)
    rnd = random.Random(seed)
    work = pathlib.Path(opts.workdir or tempfile.mkdtemp(prefix="flinklet-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"chaos: {opts.rounds} rounds, seed {seed}, work directory {work}", flush=True)

    # the job's jar is copied so that the "jar" fault can take it away without touching the build
    jar = work / "job.jar"
    shutil.copyfile(JOBS_JAR, jar)
    f = Flinklet(work, name="chaos-counter", jar=str(jar),
                 job={"args": ["--rate", "200", "--keys", "8", "--output", "OUT"], "parallelism": 2},
                 conf={"flinklet.restart.backoff.initial": "200 ms", "flinklet.restart.backoff.max": "2 s",
                       "flinklet.restart.max-attempts": "1000", "flinklet.rest.poll-interval": "500 ms"})
    watcher = Watcher(f.state)
    failures = []
    kills = collections.Counter()
    recoveries = []
    flink_confirmed = flink_mismatch = 0
    rewinds = 0
    kinds = opts.kinds.split(",") if opts.kinds else \
        ["jvm", "jvm", "flinklet", "both", "sigterm", "portclash", "jar", "earlystop", "copy"]
    early_stops = collections.Counter()
    parallelism = 2
    t_start = time.monotonic()
    try:
        f.start()
        watcher.start()
        f.wait_stable(180)
        job_id = f.status()["jobStatus"]["jobId"]
        skip_stable = False
        for rnd_i in range(1, opts.rounds + 1):
            kind = rnd.choice(kinds)
            # "restore" only right after a recovery that was not waited for (the JVM is restoring now)
            moment = "restore" if skip_stable else rnd.choice(["steady", "steady", "savepoint", "rescale"])
            skip_stable = False
            st = f.status()
            old_pid = st["jvm"]["pid"]
            if moment == "steady":
                time.sleep(rnd.uniform(0.0, 3.0))
            elif moment == "savepoint":
                try:
                    f.http("/api/v1/savepoint", method="POST", token=f.token(), body=b"", timeout=3)
                except Exception as e:  # noqa: BLE001 - the kill is what matters
                    print(f"  (savepoint request: {e})")
                time.sleep(rnd.uniform(0.0, 1.5))
            elif moment == "restore":
                # the JVM of the previous recovery is restoring now (or soon): kill inside that window
                wait_for(lambda: (s := f.status()) and s["jvm"]["pid"] > 0 and pid_alive(s["jvm"]["pid"]), 120,
                         "a JVM")
                time.sleep(rnd.uniform(0.0, 2.0))
            elif moment == "rescale":
                parallelism = 3 if parallelism == 2 else 2
                f.write_config(job={"parallelism": parallelism})
                time.sleep(rnd.uniform(0.0, 4.0))
            st = f.status()
            jvm = st["jvm"]["pid"] if st else 0
            t_kill = time.monotonic()
            if kind in ("jvm", "portclash", "jar"):
                if jvm > 0 and pid_alive(jvm):
                    if kind == "jar":
                        os.rename(jar, str(jar) + ".away")
                    os.kill(jvm, signal.SIGKILL)
                    if kind == "portclash":  # taken as soon as the dying JVM lets go of it
                        if hold_port(f.port, rnd.uniform(2.0, 8.0)) is None:
                            kind = "portclash (port not taken)"
                    elif kind == "jar":
                        t = threading.Timer(rnd.uniform(1.0, 5.0), os.rename, (str(jar) + ".away", jar))
                        t.daemon = True
                        t.start()
                else:
                    kind = kind + " (none up)"
            elif kind in ("earlystop", "copy"):
                os.kill(f.proc.pid, signal.SIGKILL)
                if jvm > 0:
                    try:
                        os.kill(jvm, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                f.proc.wait(10)
                if jvm > 0:
                    wait_for(lambda: not pid_alive(jvm), 30, "the old JVM to die with its supervisor")
                if kind == "copy":
                    old = f.state + ".old"
                    os.rename(f.state, old)
                    subprocess.run(["cp", "-r", old, f.state], check=True)  # no -p: every time is now
                    shutil.rmtree(old)
                    if rnd.random() < 0.5:  # and the savepoints' files touched after the copy
                        time.sleep(0.05)
                        for root, _, files in os.walk(os.path.join(f.state, "savepoints")):
                            for name in files:
                                os.utime(os.path.join(root, name))
                else:
                    # a new flinklet, stopped 0-8 s after it started: during its startup or just after
                    f.start()
                    t0 = time.monotonic()
                    delay = rnd.uniform(0.0, 8.0)
                    was_running = False
                    while time.monotonic() - t0 < delay:
                        was_running = was_running or flink_running(f)
                        time.sleep(0.05)
                    was_running = was_running or flink_running(f)
                    bad = sigterm_and_judge(f, was_running, early_stops, f" {delay:.1f}s after the start")
                    if bad:
                        failures.append(f"round {rnd_i}: {bad}")
                    jvm = f.status()["jvm"]["pid"] or jvm
            elif kind in ("flinklet", "both"):
                os.kill(f.proc.pid, signal.SIGKILL)
                if kind == "both" and jvm > 0:
                    try:
                        os.kill(jvm, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                f.proc.wait(10)
            elif kind == "sigterm":
                bad = sigterm_and_judge(f, flink_running(f), early_stops, "")
                if bad:
                    failures.append(f"round {rnd_i}: {bad}")
            kills[(kind, moment)] += 1
            # the highest complete restore point now: the next restore may not be older
            floor_id, floor_path = newest_on_volume(f.state)
            # status.json right after the kill
            try:
                with open(os.path.join(f.state, "status.json")) as fh:
                    json.load(fh)
            except ValueError as e:
                failures.append(f"round {rnd_i}: status.json unreadable right after the kill: {e}")
            if kind in ("flinklet", "both", "sigterm", "earlystop", "copy"):
                if jvm > 0:
                    wait_for(lambda: not pid_alive(jvm), 30, "the old JVM to die with its supervisor")
                f.start()
            # recovery
            def recovered():
                if f.proc.poll() is not None:
                    raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}")
                s = f.status()
                return s if (s and s["jvm"]["pid"] not in (0, old_pid, jvm) and pid_alive(s["jvm"]["pid"])) else None
            wait_for(recovered, 180, "a new JVM")
            next_restore = rnd_i < opts.rounds and rnd.random() < 0.3
            if next_restore:
                skip_stable = True  # the next round kills during this restore
                print(f"round {rnd_i:3d}: {kind:9s} at {moment:9s} -> new JVM (next kill during its restore)",
                      flush=True)
                continue
            st = f.wait_stable(180)
            took = time.monotonic() - t_kill
            recoveries.append(took)
            # Flink's own word on the restore, against the Restoring event
            rf = st["restoredFrom"]
            restored = None
            def flink_restored():
                try:
                    return f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["restored"]
                except OSError:  # a job that has just restored answers 500 for a moment: ask again
                    return None
            if rf["location"]:
                try:
                    restored = wait_for(flink_restored, 30, "Flink to report the restore")
                except Exception as e:  # noqa: BLE001
                    if f.status()["jvm"]["pid"] == st["jvm"]["pid"]:
                        failures.append(f"round {rnd_i}: flinklet says restored from {rf}, Flink reports none: {e}")
                    else:
                        print(f"  (/checkpoints: the JVM changed meanwhile: {e})")
            got = None
            if rf["location"]:  # read when the Restoring event was written: a checkpoint may be subsumed by now
                with watcher.lock:
                    got = watcher.ids.get(norm(rf["location"]))
                if got is None:
                    got = metadata_id(norm(rf["location"]))
            if floor_id >= 0 and (got is None or got < floor_id):
                rewinds += 1
                failures.append(f"round {rnd_i}: REWIND: restored from {rf} (id {got}) although {floor_path} "
                                f"(id {floor_id}) was complete on the volume at the kill")
            if restored and rf["location"]:
                if norm(restored["external_path"]) == norm(rf["location"]) and \
                        restored["is_savepoint"] == (rf["kind"] == "savepoint"):
                    flink_confirmed += 1
                else:
                    flink_mismatch += 1
                    failures.append(f"round {rnd_i}: flinklet says restored from {rf}, Flink says {restored}")
            print(f"round {rnd_i:3d}: {kind:9s} at {moment:9s} -> STABLE in {took:5.1f}s, restored from "
                  f"{rf['kind']} {os.path.basename(norm(rf['location'] or '-'))}", flush=True)
        # the end: a few more checkpoints, a clean stop, the output
        f.wait_stable(180)
        last = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
        f.wait_checkpoint((last["id"] if last else 0) + 2, 60)
        f.signal(signal.SIGTERM)
        rc = f.wait_exit(60)
        if rc != 0:
            failures.append(f"final SIGTERM: exit code {rc}")
    except AssertionError as e:
        failures.append(f"aborted: {e}")
    finally:
        watcher.stop_flag.set()
        watcher.join(5)
        try:
            f.stop()
        except Exception:  # noqa: BLE001
            pass
    rc_out, summary = check_output(f.output)
    restores = watcher.restores
    missing = [r for r in restores if not r[2]]
    by_kind = collections.Counter(r[0] for r in restores)
    print("== chaos figures")
    print(f"seed {seed}; {sum(kills.values())} kills in {time.monotonic() - t_start:.0f}s:")
    for (kind, moment), n in sorted(kills.items()):
        print(f"  {kind:14s} at {moment:9s} {n:4d}")
    if recoveries:
        recoveries.sort()
        print(f"recovery to STABLE: median {recoveries[len(recoveries) // 2]:.1f}s, max {recoveries[-1]:.1f}s "
              f"({len(recoveries)} measured)")
    print(f"restores: {len(restores)} ({dict(by_kind)}); _metadata present at the event: "
          f"{len(restores) - len(missing)}/{len(restores)}; confirmed by Flink's /checkpoints: {flink_confirmed}, "
          f"mismatched: {flink_mismatch}")
    print(f"rewinds: {rewinds} (every restore checked against the highest id on the volume at the kill)")
    if early_stops:
        print("stops (SIGTERM, and 0-8 s after a start): " + ", ".join(
            f"{'Flink RUNNING' if r else 'not yet RUNNING'} -> exit {rc}: {n}"
            for (r, rc), n in sorted(early_stops.items(), key=str)))
    print(f"status.json: {watcher.status_reads} samples parsed, {len(watcher.status_bad)} unreadable")
    print(f"output: {json.dumps(summary)}")
    for m in missing:
        failures.append(f"restore from {m[0]} {m[1]}: _metadata missing when the Restoring event was written")
    for b in watcher.status_bad[:5]:
        failures.append(f"status.json unreadable: {b}")
    if rc_out != 0 or summary.get("duplicates") or summary.get("gaps"):
        failures.append(f"output is not exactly-once: {summary}")
    if failures:
        print("== chaos FAILED")
        for x in failures:
            print("  " + x)
        print(f"work directory kept: {work}")
        return 1
    print("== chaos ok")
    if not opts.keep and not opts.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

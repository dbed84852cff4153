"""Large state (issue 26): what a state of 0, 256 MiB, 1 GiB and 2 GiB costs flinklet, measured side by side in
one run with the test job at each size (StatefulCounter --keys K --pad-bytes 1048576: each key keeps 1 MiB of
incompressible state, written on its first record; RocksDB, incremental checkpoints every 5 s, spec.resources.memory
2g, the default 25 s shutdown budget). At each size, once Flink's newest checkpoint holds the state (state_size
within 10 % of the target):

1. kill -9 of the JVM -> job RUNNING with all tasks running (GET /jobs/:id polled every 50 ms), under flinklet and
   by hand (the JVM command flinklet ran, read from /proc/<pid>/cmdline, on a copy of the newest checkpoint's
   directory, as bench/recovery.py does), rounds, medians, and the ratio to the size-0 figure;
2. SIGTERM -> flinklet's exit with the default budget: the time, the exit code, how it stopped (a savepoint, or
   StopOnCheckpoint and the checkpoint it stopped on), the age of the restore point it leaves at the signal (from
   its _metadata's mtime; negative: completed after the signal), each stop followed by a restart to STABLE;
3. the first checkpoint the restarted JVM completes: its checkpointed_size (what it wrote) over the state;
4. checkpoints/ + savepoints/ bytes after 20 JVM lives on the volume (kills of the JVM, SIGSEGV of the JVM, kills
   of flinklet, SIGTERM stops; each followed by a new JVM), over the state;
5. restore points demoted (RestorePointDemoted events, *.unreadable) over the whole run.

The goals of issue 26 are printed next to the figures (met / missed): nothing here asserts a timing.
Knobs: BENCH_STATE_SIZES (MiB, "0,256,1024,2048"), BENCH_STATE_ROUNDS (3), BENCH_STATE_STOPS (10 at the largest
size, 3 at the others; one number for every size, or one per size), BENCH_STATE_LIVES (20)."""
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(__file__))
from common import (Flinklet, get_json, kill_group, kill_pid, log, log_tasks_running_ms, now_ms, pid_alive,
                    poll_until_running, print_rows, row, wait_for)  # noqa: E402
from recovery import manual_restore, newest_checkpoint, read_proc  # noqa: E402

MIB = 1 << 20
SIZES = [int(s) for s in os.environ.get("BENCH_STATE_SIZES", "0,256,1024,2048").split(",") if s.strip()]
ROUNDS = int(os.environ.get("BENCH_STATE_ROUNDS", "3"))
LIVES = int(os.environ.get("BENCH_STATE_LIVES", "20"))
INTERVAL_S = 5
BUDGET_S = 25  # flinklet.shutdown.timeout's default
CONF = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
        "execution.checkpointing.interval": f"{INTERVAL_S}s"}
MEMORY = "2g"
RESTORE_TIMEOUT = 900  # seconds a restore of the largest state may take on a loaded machine
GOAL_FIRST_CHECKPOINT = 0.10
GOAL_VOLUME = 3.0
MIX = ("segv", "kill-jvm", "kill-flinklet", "term")


def stops_per_size():
    env = os.environ.get("BENCH_STATE_STOPS")
    if not env:
        return {s: (10 if s == max(SIZES) else 3) for s in SIZES}
    n = [int(x) for x in env.split(",")]
    return {s: n[i] if len(n) == len(SIZES) else n[0] for i, s in enumerate(SIZES)}


def job_args(size, output):
    if size == 0:
        return ["--rate", "200", "--keys", "8", "--output", output]
    # every key is touched within a second (the source is held back while RocksDB takes the pads)
    return ["--rate", str(max(200, size)), "--keys", str(size), "--pad-bytes", str(MIB), "--output", output]


def checkpoints(port, job_id):
    try:
        return get_json(port, f"/jobs/{job_id}/checkpoints", timeout=3)
    except (OSError, ValueError):
        return None


def latest_completed(port, job_id):
    c = checkpoints(port, job_id)
    return ((c or {}).get("latest") or {}).get("completed") or {}


def du(path):
    """Bytes of the regular files under path (as allocated names: hard links once)."""
    total, seen = 0, set()
    for d, _, files in os.walk(path):
        for name in files:
            try:
                st = os.lstat(os.path.join(d, name))
            except FileNotFoundError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def unreadable(state):
    n = 0
    for d, dirs, _ in os.walk(state):
        n += sum(1 for x in dirs if x.endswith(".unreadable"))
    return n


def amount(b):
    return f"{b / MIB:.0f} MiB" if b >= MIB else f"{b / 1024:.0f} KiB"


def med(values):
    return statistics.median(values) if values else None


def spread(values, unit="ms", scale=1.0):
    if not values:
        return "n/a"
    v = [x / scale for x in values]
    return f"median {statistics.median(v):.0f} {unit} (min {min(v):.0f}, max {max(v):.0f}, n={len(v)})"


class Size:
    """One size: its flinklet, its JVM lives and its figures."""

    def __init__(self, size):
        self.size = size
        self.target = size * MIB
        self.f = Flinklet(f"state-{size}", conf=CONF, memory=MEMORY, job={"args": []})
        self.f.job["args"] = job_args(size, self.f.output)
        self.f.write_config()
        self.job_id = None
        self.state_size = 0
        self.res = {k: [] for k in ("kill_rest", "kill_log", "hand_rest", "hand_log", "stop_total", "stop_rc",
                                    "stop_age", "stop_how", "stop_phases", "first_ckpt", "first_ckpt_how")}
        self.mismatch = []
        self.kinds = {k: 0 for k in MIX}

    # -- flinklet up and down ----------------------------------------------------------------------------------
    def up(self, not_pid=None):
        if self.f.proc is None or self.f.proc.poll() is not None:
            self.f.start()
        st = self.f.wait_stable(timeout=RESTORE_TIMEOUT, not_pid=not_pid)
        self.job_id = st["jobStatus"]["jobId"]
        return st

    def kill_flinklet(self):
        jvm = self.f.jvm_pid()
        kill_group(self.f.proc)
        kill_pid(jvm)
        wait_for(lambda: not pid_alive(jvm), 30, "the JVM gone with its flinklet")
        self.f.log.close()
        self.f.proc = None

    def lives(self):
        return sum(1 for e in self.f.events() if e["type"] == "JvmStarted")

    def fresh_checkpoint(self):
        """Waits for a checkpoint of the running JVM that flinklet has seen (so it knows the state's size)."""
        before = self.f.last_checkpoint_id()
        self.f.wait_checkpoint(before + 1, timeout=120)

    def fill(self):
        """Starts the job and waits until Flink's newest checkpoint holds the state."""
        self.up()
        t0 = time.monotonic()

        def full():
            c = latest_completed(self.f.port, self.job_id)
            size = c.get("state_size", 0)
            ok = size >= 0.9 * self.target and (self.size > 0 or c.get("id"))
            return c if ok else None
        c = wait_for(full, 1200, f"a checkpoint of {self.size} MiB")
        self.fresh_checkpoint()
        self.state_size = latest_completed(self.f.port, self.job_id).get("state_size", c["state_size"])
        log(f"state: {self.size} MiB: checkpoint {c['id']} holds {self.state_size / MIB:.0f} MiB after "
            f"{time.monotonic() - t0:.0f} s")

    # -- 1. kill -9 of the JVM -> RUNNING, flinklet and by hand -------------------------------------------------
    def kill_round(self, i):
        st = self.up()
        self.fresh_checkpoint()
        pid, n_tasks = st["jvm"]["pid"], st["jobStatus"]["tasks"]["total"]
        time.sleep(0.3)
        offset = os.path.getsize(self.f.log_path)
        t0 = now_ms()
        os.kill(pid, signal.SIGKILL)
        self.kinds["kill-jvm"] += 1
        t_rest = poll_until_running(self.f.port, self.job_id, RESTORE_TIMEOUT)
        st = self.f.wait_stable(timeout=RESTORE_TIMEOUT, not_pid=pid)
        t_log = wait_for(lambda: log_tasks_running_ms(self.f.log_path, offset, n_tasks), 30, "the tasks in the log")
        self.res["kill_rest"].append(t_rest - t0)
        self.res["kill_log"].append(t_log - t0)
        argv, env = read_proc(st["jvm"]["pid"])
        # the hand-run restore: flinklet and its JVM gone (kill -9 of flinklet), the newest checkpoint's directory
        # copied (its _metadata names the shared/ files where they are), the same command on the copy
        self.kill_flinklet()
        self.kinds["kill-flinklet"] += 1
        rdir = os.path.join(self.f.dir, f"round-{i}")
        shutil.rmtree(rdir, ignore_errors=True)
        os.makedirs(rdir)
        chk = newest_checkpoint(self.f.state, self.job_id)
        chk_copy = os.path.join(rdir, os.path.basename(chk))
        shutil.copytree(chk, chk_copy)
        m_log, m_rest = manual_restore(rdir, argv, env, chk_copy, self.f.port, self.job_id, n_tasks,
                                       timeout=RESTORE_TIMEOUT)
        for d in ("manual-chk", "manual-tmp"):
            shutil.rmtree(os.path.join(rdir, d), ignore_errors=True)
        self.res["hand_log"].append(m_log)
        self.res["hand_rest"].append(m_rest)
        log(f"state: {self.size} MiB: kill round {i + 1}/{ROUNDS}: flinklet RUNNING after {t_rest - t0:.0f} ms "
            f"(log {t_log - t0:.0f}), by hand {m_rest:.0f} ms (log {m_log:.0f})")

    # -- 2. SIGTERM -> exit, and 3. the first checkpoint after the restart ---------------------------------------
    def stop_round(self, j, n):
        self.up()
        self.fresh_checkpoint()
        f = self.f
        t0 = now_ms()
        f.proc.send_signal(signal.SIGTERM)
        try:
            rc = f.proc.wait(BUDGET_S + 60)
        except subprocess.TimeoutExpired:
            rc = "none (killed 60 s past the budget)"
            kill_group(f.proc)
        t_exit = now_ms()
        f.log.close()
        f.proc = None
        ev = {e["type"]: e for e in reversed(f.events_after(t0))}  # the first of each type
        st = f.status()
        sp = st["jobStatus"]["savepointInfo"].get("lastSavepoint")
        if "StopCheckpoint" in ev:
            cid = int(ev["StopCheckpoint"]["message"].split()[1])
            how = f"checkpoint {cid}"
            point = os.path.join(f.state, "checkpoints", self.job_id, f"chk-{cid}")
            snap = ev["StopCheckpoint"]["timeMs"]
            first = ev.get("StopOnCheckpoint", {}).get("timeMs")
        elif sp and sp["timeStamp"] >= t0 - 1:
            how = "savepoint"
            point = sp["location"].replace("file://", "").replace("file:", "")
            snap = ev.get("SavepointCompleted", {}).get("timeMs")
            first = ev.get("SavepointTriggered", {}).get("timeMs")
        else:
            how = "neither (" + ", ".join(t for t in ("SavepointSkipped", "SavepointFailed") if t in ev) + ")"
            point = newest_checkpoint(f.state, self.job_id)
            snap = first = None
            cid = -2
        age = t0 - os.path.getmtime(os.path.join(point, "_metadata")) * 1000.0 if point else float("nan")
        jvm_gone = ev.get("JvmExited", {}).get("timeMs")
        phases = {"decide": (first - t0) if first else None, "snapshot": (snap - first) if snap and first else None,
                  "jvm_end": (jvm_gone - snap) if jvm_gone and snap else None,
                  "exit": (t_exit - jvm_gone) if jvm_gone else None}
        self.res["stop_total"].append(t_exit - t0)
        self.res["stop_rc"].append(rc)
        self.res["stop_age"].append(age)
        self.res["stop_how"].append(how)
        self.res["stop_phases"].append(phases)
        self.kinds["term"] += 1
        why = ev.get("StopOnCheckpoint", {}).get("message", "")
        log(f"state: {self.size} MiB: stop {j + 1}/{n}: exit {rc} after {t_exit - t0:.0f} ms, {how}, restore point "
            f"{age / 1000:.1f} s old at the signal; phases " + ", ".join(
                f"{k} {v:.0f}" for k, v in phases.items() if v is not None) + (f"; {why}" if why else ""))
        # the restart and its first checkpoint
        st = self.up()
        restored = (checkpoints(f.port, self.job_id) or {}).get("latest", {}).get("restored") or {}
        rid = restored.get("id", -1)
        if how.startswith("checkpoint") and rid != cid or how == "savepoint" and not restored.get("is_savepoint"):
            self.mismatch.append(f"stop {j + 1} left {how}, the restart restored {restored}")

        def first_done():
            """The lowest checkpoint id past the restored one that completed (a failed one is passed over)."""
            h = (checkpoints(f.port, self.job_id) or {}).get("history", [])
            for c in sorted((c for c in h if c.get("id", -1) > rid and not c.get("is_savepoint")),
                            key=lambda c: c["id"]):
                if c.get("status") == "COMPLETED":
                    return c
                if c.get("status") != "FAILED":
                    return None
            return None
        c = wait_for(first_done, 300, "the first checkpoint after the restart")
        self.res["first_ckpt"].append(c["checkpointed_size"] / max(1, c["state_size"]))
        self.res["first_ckpt_how"].append(how)
        log(f"state: {self.size} MiB: restart from {how}: first checkpoint {c['id']} wrote "
            f"{c['checkpointed_size'] / MIB:.1f} MiB of {c['state_size'] / MIB:.0f} MiB")

    # -- 4. the volume after the JVM lives ----------------------------------------------------------------------
    def life(self, kind):
        st = self.up()
        self.fresh_checkpoint()
        pid = st["jvm"]["pid"]
        if kind in ("segv", "kill-jvm"):
            pidfd = os.pidfd_open(pid)
            os.kill(pid, signal.SIGSEGV if kind == "segv" else signal.SIGKILL)
            select.select([pidfd], [], [], 60)
            os.close(pidfd)
            self.up(not_pid=pid)
        elif kind == "kill-flinklet":
            self.kill_flinklet()
            self.up()
        else:
            self.f.proc.send_signal(signal.SIGTERM)
            self.f.proc.wait(BUDGET_S + 60)
            self.f.log.close()
            self.f.proc = None
            self.up()
        self.kinds[kind] += 1
        log(f"state: {self.size} MiB: {kind}: life {self.lives()} STABLE")

    def volume(self):
        """checkpoints/ + savepoints/ once the last launch's sweep is over."""
        t_launch = max((e["timeMs"] for e in self.f.events() if e["type"] == "JvmStarted"), default=0)
        try:
            wait_for(lambda: self.f.events_after(t_launch - 5000, {"LeftoversRemoved", "LeftoversRemoveFailed"}),
                     120, "the sweep of the last launch", interval=1)
        except RuntimeError:
            pass  # nothing to remove: no event
        self.fresh_checkpoint()
        sp = os.path.join(self.f.state, "savepoints")
        names = os.listdir(sp) if os.path.isdir(sp) else []  # no savepoint yet: no directory
        self.savepoints_kept = sum(1 for d in names if os.path.exists(os.path.join(sp, d, "_metadata")))
        return du(os.path.join(self.f.state, "checkpoints")), du(sp)

    def run(self, stops):
        try:
            self.fill()
            for i in range(ROUNDS):
                self.kill_round(i)
            for j in range(stops):
                self.stop_round(j, stops)
            self.state_size = latest_completed(self.f.port, self.job_id).get("state_size", self.state_size)
            k = 0
            while k < len(MIX) or self.lives() < LIVES:
                self.life(MIX[k % len(MIX)])
                k += 1
            self.lives_n = self.lives()
            self.volume_bytes = self.volume()
            self.state_size = latest_completed(self.f.port, self.job_id).get("state_size", self.state_size)
            evs = self.f.events()
            self.demoted = sum(1 for e in evs if e["type"] == "RestorePointDemoted")
            self.unreadable = unreadable(self.f.state)
            self.counts = {t: sum(1 for e in evs if e["type"] == t)
                           for t in ("StartupExtended", "RestoreRetry", "RestoreFailed", "LeftoversRemoved",
                                     "ClassDataSharingArchived")}
        finally:
            if self.f.proc is not None:
                self.kill_flinklet()
            for d in os.listdir(self.f.dir):
                if d.startswith("round-") or d == "scratch":
                    shutil.rmtree(os.path.join(self.f.dir, d), ignore_errors=True)


def met(ok):
    return "met" if ok else "MISSED"


def rows_of(s, base):
    n = s.size
    label = f"{n} MiB" if n else "0 (8 keys, no pad)"
    r = s.res
    args = " ".join(a for a in s.f.job["args"] if not a.startswith("/") and a != "--output")
    out = [row(f"{label}: state", f"{amount(s.state_size)} in Flink's newest checkpoint",
               f"latest.completed.state_size of GET /jobs/:id/checkpoints (StatefulCounter {args})")]
    fl, hand = med(r["kill_rest"]), med(r["hand_rest"])
    ratio = ""
    if base and n:
        ratio = (f"; x{fl / base['kill_rest']:.1f} the size-0 figure (by hand x{hand / base['hand_rest']:.1f})")
    out.append(row(f"{label}: kill -9 of the JVM -> job RUNNING", f"flinklet {spread(r['kill_rest'])}; by hand "
                   f"{spread(r['hand_rest'])}; flinklet / by hand {fl / hand:.2f}{ratio}",
                   "GET /jobs/:id every 50 ms until RUNNING with every task RUNNING (3 s REST cache), from the kill "
                   "(flinklet) or the launch (by hand: the JVM command flinklet ran, from /proc/<pid>/cmdline, "
                   "without the archive options, on a copy of the newest checkpoint's directory, flinklet killed); "
                   f"from the JVM's log (last task INITIALIZING -> RUNNING): flinklet {spread(r['kill_log'])}, "
                   f"by hand {spread(r['hand_log'])}"))
    rcs, ages, hows = r["stop_rc"], r["stop_age"], r["stop_how"]
    inside = sum(1 for rc, t in zip(rcs, r["stop_total"]) if rc == 0 and t <= BUDGET_S * 1000)
    fresh = sum(1 for a in ages if a <= INTERVAL_S * 1000)
    kinds = {}
    for h in hows:
        k = "savepoint" if h == "savepoint" else "StopOnCheckpoint" if h.startswith("checkpoint") else h
        kinds[k] = kinds.get(k, 0) + 1
    ph = {k: [p[k] for p in r["stop_phases"] if p[k] is not None] for k in ("decide", "snapshot", "jvm_end", "exit")}
    out.append(row(f"{label}: SIGTERM -> flinklet exit", f"{spread(r['stop_total'])}; exit codes "
                   f"{','.join(str(x) for x in rcs)}; {', '.join(f'{v} {k}' for k, v in kinds.items())} "
                   f"({'; '.join(hows)}); phases (medians): SIGTERM -> decision {med(ph['decide']) or 0:.0f} ms, "
                   f"snapshot {med(ph['snapshot']) or 0:.0f} ms, JVM end {med(ph['jvm_end']) or 0:.0f} ms, "
                   f"exit {med(ph['exit']) or 0:.0f} ms",
                   "wall time from SIGTERM to the exit, default budget (25 s); how: the StopCheckpoint event, else "
                   "lastSavepoint newer than the signal; phases from flinklet's events (SavepointTriggered or "
                   "StopOnCheckpoint, SavepointCompleted or StopCheckpoint, JvmExited), each stop followed by a "
                   "restart to STABLE"))
    out.append(row(f"{label}: age of the restore point a stop leaves",
                   f"{spread(ages, 's', 1000.0) if max(ages) - min(ages) > 3000 else spread(ages)}; values "
                   f"{', '.join(f'{a / 1000:.1f}' for a in ages)} s",
                   "the signal's time - the mtime of the point's _metadata (negative: completed after the signal)"))
    goal_stops = (f"{inside} of {len(rcs)} inside the budget with exit 0 ({met(inside == len(rcs))}), {fresh} of "
                  f"{len(ages)} no older than one checkpoint interval, {INTERVAL_S} s ({met(fresh == len(ages))})")
    out.append(row(f"{label}: goal: every stop inside the budget, restore point <= 1 interval old", goal_stops,
                   "issue 26: 10 of 10 at 2 GiB"))
    fc = r["first_ckpt"]
    by = {}
    for x, h in zip(fc, r["first_ckpt_how"]):
        by.setdefault("savepoint" if h == "savepoint" else "checkpoint", []).append(x)
    detail = "; ".join(f"after a {k}: max {100 * max(v):.1f} % (n={len(v)})" for k, v in by.items())
    ok = max(fc) <= GOAL_FIRST_CHECKPOINT if fc else False
    out.append(row(f"{label}: first checkpoint after a stop and restart / state",
                   f"median {100 * med(fc):.1f} %, max {100 * max(fc):.1f} % ({detail}); goal <= "
                   f"{100 * GOAL_FIRST_CHECKPOINT:.0f} %: {met(ok) if n else 'n/a at size 0'}",
                   "checkpointed_size / state_size of the lowest checkpoint id past latest.restored in "
                   "GET /jobs/:id/checkpoints history (what the new JVM wrote for its first checkpoint)"))
    cb, sb = s.volume_bytes
    mult = (cb + sb) / max(1, s.state_size)
    out.append(row(f"{label}: checkpoints/ + savepoints/ after {s.lives_n} JVM lives",
                   f"{amount(cb + sb)} (checkpoints {amount(cb)}, savepoints {amount(sb)}: {s.savepoints_kept} "
                   "complete savepoints kept) = "
                   f"{mult:.2f} x the state; goal <= {GOAL_VOLUME:.0f} x: {met(mult <= GOAL_VOLUME) if n else 'n/a'}",
                   "bytes of the files once the last launch's sweep was over; lives: JvmStarted events on the "
                   f"volume, ended by {', '.join(f'{v} {k}' for k, v in s.kinds.items())} (the kill rounds: a kill "
                   "-9 of the JVM, then one of flinklet for the hand-run restore; term: the stops above too); "
                   + ", ".join(f"{v} {k}" for k, v in s.counts.items())))
    out.append(row(f"{label}: restore points demoted", f"{s.demoted} RestorePointDemoted, {s.unreadable} "
                   f"*.unreadable; goal 0: {met(s.demoted == 0 and s.unreadable == 0)}",
                   "events.jsonl and the state directory after the run of this size"))
    if s.mismatch:
        out.append(row(f"{label}: restarts from another point than the stop's", "; ".join(s.mismatch), "flink REST"))
    return out


def run():
    stops = stops_per_size()
    rows, base = [], None
    for size in SIZES:
        log(f"state: {size} MiB: {ROUNDS} kill rounds, {stops[size]} stops, {LIVES} JVM lives")
        t0 = time.monotonic()
        s = Size(size)
        try:
            s.run(stops[size])
        except Exception as e:  # the other sizes still run, and the figures of the sizes before stay
            traceback.print_exc()
            rows.append(row(f"{size} MiB: (not measured)", f"failed: {e}", "see the output above"))
            continue
        if size == 0:
            base = {"kill_rest": med(s.res["kill_rest"]), "hand_rest": med(s.res["hand_rest"])}
        mine = rows_of(s, base)
        mine.append(row(f"{size} MiB: duration", f"{time.monotonic() - t0:.0f} s", "wall time of this size"))
        print_rows(f"state {size} MiB", mine)
        rows += mine
    return rows


if __name__ == "__main__":
    print_rows("state", run())

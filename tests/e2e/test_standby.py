"""The standby JVM (issue 38, item 4: "crash recovery, same lever"), on the real MiniCluster, with
flinklet.recovery.standby-jvm: true.

- Once the job is RUNNING a second launcher JVM waits with no job: none of flinklet's descriptors (the state
  directory's lock, its sockets), no listening port. A kill -9 of the job's JVM: the standby becomes the job's JVM
  (its pid is jvm.pid, a JvmStandbyTaken event and no JvmStarted), the job restores the newest complete checkpoint
  (Flink's own latest.restored), a new standby follows, and the output stays exactly once.
- SIGTERM: flinklet exits 0 and no JVM of it is left, the standby neither.
- A kill -9 of the standby alone: the job's JVM runs on, and another standby is made.
- A reload that changes a JVM option: the standby is discarded, and the new JVM's standby has the new option."""
import os
import signal
import time

from conftest import check_output, pid_alive, restored, wait_for, wait_restarted

STANDBY = {"flinklet.recovery.standby-jvm": "true"}
CDS_OPTIONS = ("-XX:SharedArchiveFile=", "-XX:+RecordDynamicDumpInfo", "-Xlog:cds")


def now_ms():
    return int(time.time() * 1000)


def named(f, kind, after=0):
    return [e for e in f.events() if e["type"] == kind and e["timeMs"] >= after]


def standby_of(f, not_pid=0, timeout=90):
    """The pid of a standby JVM that is alive (other than not_pid), as status.json says."""
    def ok():
        if f.proc.poll() is not None:
            raise AssertionError(f"flinklet exited {f.proc.returncode}:\n{f.logs()[-4000:]}")
        st = f.own_status()
        pid = (st or {}).get("jvm", {}).get("standbyPid", 0)
        return pid if pid and pid != not_pid and pid_alive(pid) else None
    return wait_for(ok, timeout, "a standby JVM")


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        return [a.decode() for a in fh.read().split(b"\0") if a]


def jvm_part(argv, until):
    """A JVM's command line up to its main class, without the class-data-sharing options."""
    return [a for a in argv[:argv.index(until)] if not a.startswith(CDS_OPTIONS)]


def fd_targets(pid):
    out = {}
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass
    return out


def listening_inodes():
    """The socket inodes of every listening TCP socket on the machine."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A":  # LISTEN
                    inodes.add(cols[9])
    return inodes


def newest_checkpoint_id(f, job_id):
    """The id of the newest complete checkpoint on the volume (one with its _metadata)."""
    d = os.path.join(f.state, "checkpoints", job_id)
    ids = [int(n[4:]) for n in os.listdir(d)
           if n.startswith("chk-") and os.path.exists(os.path.join(d, n, "_metadata"))]
    return max(ids)


def processes_with(text):
    """Pids whose command line holds text."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if text in " ".join(cmdline(int(name))) and pid_alive(int(name)):
                    out.append(int(name))
            except OSError:
                pass
    return out


def test_a_kill_of_the_jobs_jvm_restores_in_the_standby(flinklets):
    f = flinklets(conf=STANDBY).start()
    st = f.wait_stable()
    job_id, pid, starts = st["jobStatus"]["jobId"], st["jvm"]["pid"], st["jvm"]["starts"]
    standby = standby_of(f)
    assert standby != pid
    argv = cmdline(standby)
    assert "--standby" in argv and argv[argv.index("--standby") - 1] == "dev.flinklet.launcher.FlinkletLauncher"
    # the same JVM as the job's up to the main class (but for class-data sharing: a standby records no dump), in a
    # process group of its own
    job_argv = cmdline(pid)
    assert jvm_part(argv, "--standby") == jvm_part(job_argv, "run")
    assert os.getpgid(standby) == standby
    wait_for(lambda: "standby: no job; waiting for one" in f.logs(), 60, "the standby waiting")
    # none of flinklet's descriptors but its pipes, no listening port
    mine = fd_targets(f.proc.pid)
    theirs = fd_targets(standby)
    state = os.path.realpath(f.state)
    assert not {t for t in theirs.values() if t.startswith(state + "/")}, theirs
    assert not {t for t in theirs.values() if t.startswith("socket:")} & set(mine.values()), (theirs, mine)
    socks = {t[len("socket:["):-1] for t in theirs.values() if t.startswith("socket:")}
    assert not socks & listening_inodes(), f"the standby listens: {theirs}"
    assert named(f, "StandbyStarted") and str(standby) in named(f, "StandbyStarted")[-1]["message"]

    f.wait_checkpoint(3)
    t0 = now_ms()
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), 10, "the JVM gone")
    newest = newest_checkpoint_id(f, job_id)  # the JVM is gone: no checkpoint completes after this
    st = wait_restarted(f, pid)
    assert st["jvm"]["pid"] == standby, "the standby is the job's JVM"
    taken = named(f, "JvmStandbyTaken", t0)
    assert taken and str(standby) in taken[0]["message"]
    assert not named(f, "JvmStarted", t0), "no new JVM was started for the restore"
    assert st["jvm"]["starts"] == starts + 1
    # the restore point is chosen as without a standby: the newest complete checkpoint
    assert st["restoredFrom"]["kind"] == "checkpoint" and st["restoredFrom"]["id"] == newest, st["restoredFrom"]
    r = restored(f, job_id)
    assert r["is_savepoint"] is False and r["id"] == newest, (r, newest)
    # a new standby once the job is RUNNING again
    second = standby_of(f, not_pid=standby)
    assert second not in (pid, standby)
    f.wait_checkpoint(r["id"] + 2)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    for p in (standby, second):
        assert not pid_alive(p), f"JVM {p} outlived flinklet"
    assert not processes_with(state), "a process of this state directory outlived flinklet"
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_a_kill_of_the_standby_alone_is_survived_and_it_is_made_again(flinklets):
    f = flinklets(conf=STANDBY).start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    standby = standby_of(f)
    t0 = now_ms()
    os.kill(standby, signal.SIGKILL)
    ev = wait_for(lambda: named(f, "StandbyExited", t0), 30, "StandbyExited")[0]
    assert str(standby) in ev["message"] and "signal 9" in ev["message"], ev
    second = standby_of(f, not_pid=standby)
    st = f.own_status()
    assert st["jvm"]["pid"] == pid and pid_alive(pid), "the job's JVM runs on"
    assert st["jobStatus"]["state"] == "RUNNING"
    assert not named(f, "JvmExited", t0)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    assert not pid_alive(second)


def test_a_jvm_option_change_discards_the_standby(flinklets):
    f = flinklets(conf=STANDBY).start()
    st = f.wait_stable()
    pid = st["jvm"]["pid"]
    standby = standby_of(f)
    f.wait_checkpoint(2)
    t0 = now_ms()
    f.write_config(conf={"flinklet.jvm.options": "-Dflinklet.test.standby=1"})
    ev = wait_for(lambda: named(f, "StandbyDiscarded", t0), 60, "StandbyDiscarded")[0]
    assert str(standby) in ev["message"]
    st = wait_restarted(f, pid)
    assert st["jvm"]["pid"] != standby, "the discarded standby ran the upgraded job"
    wait_for(lambda: not pid_alive(standby), 10, "the discarded standby gone")
    # the new JVM's standby is started with the new option
    second = standby_of(f, not_pid=standby)
    assert "-Dflinklet.test.standby=1" in cmdline(second)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    assert not pid_alive(second)
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary

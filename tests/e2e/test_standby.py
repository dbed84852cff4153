"""The standby JVM (issue 38, item 4: "crash recovery, same lever"), on the real MiniCluster, with
flinklet.recovery.standby-jvm: true.

- Once the job is RUNNING a second launcher JVM waits with no job: none of flinklet's descriptors (the state
  directory's lock, its sockets), no listening port. A kill -9 of the job's JVM: the standby becomes the job's JVM
  (its pid is jvm.pid, a JvmStandbyTaken event and no JvmStarted), the job restores the newest complete checkpoint
  (Flink's own latest.restored), a new standby follows, and the output stays exactly once.
- SIGTERM: flinklet exits 0 and no JVM of it is left, the standby neither.
- A kill -9 of the standby alone: the job's JVM runs on, and another standby is made.
- A reload that changes a JVM option: the standby is discarded, and the new JVM's standby has the new option.
- What the hand-over may meet, none of which costs the newest checkpoint: 256 MiB of RocksDB state (the standby
  restores all of it: Flink's first checkpoint after the restore holds it, and the counts go on), a Table API job
  whose main() returns after submitting (the standby's launcher keeps it too), the REST port held by another process at the hand-over
  (the standby's start fails on it, and a retry restores the same checkpoint), the job's jar unreadable at the
  hand-over (flinklet waits for it or a start fails on it, and the job restores the same checkpoint once it is
  back).
- A SQL script job gets no standby, and flinklet says why."""
import os
import shutil
import signal
import time

import pytest

import conftest
from conftest import check_output, pid_alive, restored, wait_for, wait_restarted
from sqlkit import config_text
from testkit import hold_port, norm

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


def kill_and_note(f, job_id):
    """kill -9 of the job's JVM; (its pid, the id of the newest complete checkpoint once it is gone)."""
    pid = f.own_status()["jvm"]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), 10, "the JVM gone")
    return pid, newest_checkpoint_id(f, job_id)


def assert_restored(f, job_id, newest):
    r = restored(f, job_id)
    assert r["is_savepoint"] is False and r["id"] == newest, (r, newest)
    assert f"chk-{newest}" in norm(r["external_path"]), r
    return r


def assert_newest_kept(f, t0, newest):
    """Nothing since t0 set the newest checkpoint aside (an incomplete newer one may be: the kill can cut one)."""
    bad = [e for e in f.events() if e["timeMs"] >= t0 and e["type"].startswith("RestorePoint")
           and f"chk-{newest}" in norm(e["message"])]
    assert not bad, bad


ROCKS = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true",
         "execution.checkpointing.num-retained": "2"}
KEYS = 256  # a MiB each: 256 MiB of RocksDB state


def test_a_kill_with_256_mib_of_rocksdb_state_restores_all_of_it_in_the_standby(flinklets):
    f = flinklets(conf={**STANDBY, **ROCKS},
                  job={"args": ["--rate", "200", "--keys", str(KEYS), "--pad-bytes", str(1 << 20),
                                "--output", "OUT"]}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    standby = standby_of(f)

    def full():
        c = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]
        return c if c and c["state_size"] >= 0.9 * (KEYS << 20) else None
    full_cp = wait_for(full, 180, f"a checkpoint of {KEYS} MiB")
    f.wait_checkpoint(full_cp["id"] + 1)
    t0 = now_ms()
    pid, newest = kill_and_note(f, job_id)
    st = wait_restarted(f, pid, timeout=180)
    assert st["jvm"]["pid"] == standby and named(f, "JvmStandbyTaken", t0), "the standby did not take the job"
    assert not named(f, "JvmStarted", t0)
    r = assert_restored(f, job_id, newest)

    # the whole state came back: Flink's first checkpoint after the restore holds it
    def after():
        for c in f.rest(f"/jobs/{job_id}/checkpoints")["history"]:
            if c["id"] == r["id"] + 1 and c["status"] == "COMPLETED":
                return c
        return None
    c = wait_for(after, 120, f"checkpoint {r['id'] + 1}")
    assert c["state_size"] >= 0.9 * (KEYS << 20), c
    f.signal(signal.SIGTERM)
    assert f.wait_exit(120) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0 and summary["keys"] == KEYS, summary


TABLE_SQL = """CREATE TABLE clicks (user_id INT, url STRING) WITH (
  'connector' = 'datagen', 'rows-per-second' = '50', 'fields.user_id.min' = '1', 'fields.user_id.max' = '16');
CREATE TABLE per_user (user_id INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO per_user SELECT user_id, COUNT(*) FROM clicks GROUP BY user_id;
"""


def test_a_table_api_job_whose_main_returns_restores_in_the_standby(flinklets, tmp_path):
    """A jar whose main() runs tableEnv.executeSql and returns (the operator's flink-sql-runner-example): the standby's
    launcher runs that main() as the first JVM's did, and keeps the job after it returns."""
    script = tmp_path / "per-user.sql"
    script.write_text(TABLE_SQL)
    f = flinklets(conf=STANDBY, entry_class="dev.flinklet.jobs.SqlRunner",
                  job={"parallelism": 1, "args": [str(script)]}).start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    standby = standby_of(f)
    f.wait_checkpoint((st["jobStatus"]["checkpointInfo"].get("lastCheckpoint") or {}).get("id", 0) + 3)
    t0 = now_ms()
    pid, newest = kill_and_note(f, job_id)
    st = wait_restarted(f, pid)
    assert st["jvm"]["pid"] == standby and named(f, "JvmStandbyTaken", t0), "the standby did not take the job"
    assert st["jobStatus"]["jobId"] == job_id
    assert_restored(f, job_id, newest)
    assert f.logs().count("main() returned; the JVM runs job") >= 2, "the standby's main() did not return"
    # the job goes on in the standby past its main(): checkpoints in the same JVM
    st = f.wait_checkpoint(newest + 3)
    assert st["jvm"]["pid"] == standby and st["jobStatus"]["state"] == "RUNNING"
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0


def test_a_sql_script_job_gets_no_standby_and_says_why(flinklets):
    """A SQL script's runner ends the JVM itself (docs/operations.md, "The standby JVM"): no standby, said once."""
    f = flinklets(name="sql-clicks", conf=STANDBY)
    f.write_config(raw=config_text(f, TABLE_SQL))
    f.start()
    f.wait_stable()
    wait_for(lambda: "no standby JVM now: a SQL script or Python job starts in a JVM of its own" in f.logs(), 30,
             "the reason for no standby")
    time.sleep(3)
    assert f.own_status()["jvm"]["standbyPid"] == 0
    assert not named(f, "StandbyStarted")
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0


def test_the_rest_port_held_at_the_hand_over_keeps_the_newest_checkpoint(flinklets):
    """The standby binds Flink's REST port only when it is sent the job: held by another process then, its start
    fails (operations.md, "When a start fails": a port held says nothing about the snapshot)."""
    f = flinklets(conf=STANDBY).start()
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    standby = standby_of(f)
    f.wait_checkpoint(3)
    t0 = now_ms()
    pid, newest = kill_and_note(f, job_id)
    holder = hold_port(f.port)
    try:
        # until the standby was handed the job and its start failed on the port (else nothing was tested)
        wait_for(lambda: named(f, "JvmStandbyTaken", t0) and not pid_alive(standby), 90,
                 "the standby's start to fail on the held port")
    finally:
        holder.close()
    st = wait_restarted(f, pid, timeout=180)
    assert st["jvm"]["pid"] != standby
    assert_restored(f, job_id, newest)
    retry = named(f, "RestoreRetry", t0)
    assert retry and any("Address already in use" in e["message"] or "BindException" in e["message"]
                         for e in retry), [e["message"] for e in retry]
    assert_newest_kept(f, t0, newest)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_the_jar_unreadable_at_the_hand_over_keeps_the_newest_checkpoint(tmp_path, flinklets):
    """As root, flinklet runs without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so that mode 000 means what it says."""
    jar = tmp_path / "usrlib" / "job.jar"
    jar.parent.mkdir()
    shutil.copy(conftest.JOBS_JAR, jar)
    wrapper = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("as root, util-linux setpriv is needed to make chmod 000 effective")
        wrapper = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]
    f = flinklets(conf=STANDBY, jar=str(jar)).start(wrapper=wrapper)
    job_id = f.wait_stable()["jobStatus"]["jobId"]
    standby_of(f)
    f.wait_checkpoint(3)
    t0 = now_ms()
    os.chmod(jar, 0)
    try:
        pid, newest = kill_and_note(f, job_id)
        wait_for(lambda: named(f, "JarUnusable", t0) or named(f, "RestoreRetry", t0) or f.proc.poll() is not None,
                 90, "flinklet to wait for the jar, or a start to fail on it")
        assert f.proc.poll() is None, f.logs()[-3000:]
    finally:
        os.chmod(jar, 0o644)
    wait_restarted(f, pid, timeout=180)
    assert_restored(f, job_id, newest)
    assert_newest_kept(f, t0, newest)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary

"""Kafka jobs under flinklet: a real single-node KRaft Kafka broker (Kafka's own jars from Maven Central, `make
kafka-lib`) on loopback, the exactly-once KafkaCounter job (Kafka -> keyed state -> Kafka through Flink's KafkaSink,
one Kafka transaction per checkpoint and sink subtask) under the real flinklet, and readers of the output topic with
isolation.level=read_committed, as a user's downstream consumers read it.

Each test writes N records to its own input topic and faults the job while it runs: kill -9 of the JVM, kill -9 of
flinklet and a new `flinklet run`, a stop with a savepoint and a new run, an upgrade by a change of the
configuration file. What a user relies on, asserted each time: the job resumed from a restore point at least as new
as the newest checkpoint before the fault; a read_committed reader sees every seq exactly once and, for each key,
the counts exactly 1..n; and it sees output again as soon as the restarted job commits, not after the Kafka
transaction timeout: the restored sink aborts the transactions the dead JVM left open (its transactional id prefix
is the same), so they do not hold the reader back at the last stable offset.

The flinklet C paths these faults take are tested under ASan in test_recovery.py and test_lifecycle.py; what this
file adds is Flink's Kafka connector under them, so `make e2e-asan` leaves it out (asan_elsewhere)."""
import glob
import os
import signal
import time

import pytest

from conftest import check_output, pid_alive, wait_for, wait_restarted
from kafkakit import KAFKA_JOBS_JAR, KAFKA_LIBS, TX_TIMEOUT_S, Broker, Reader
from testkit import norm

pytestmark = pytest.mark.asan_elsewhere


N = 20000           # records per test
RATE = 1000         # records/s the job reads (its throttle): the input lasts 20 s, long enough to fault it mid-way
KEYS = 8


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    assert glob.glob(os.path.join(KAFKA_LIBS, "kafka_*.jar")), f"{KAFKA_LIBS} holds no Kafka broker (make kafka-lib)"
    assert os.path.exists(KAFKA_JOBS_JAR), f"{KAFKA_JOBS_JAR} is not built (make jobs)"
    b = Broker(tmp_path_factory.mktemp("kafka"))
    try:
        yield b.start()
    finally:
        b.stop()


class Run:
    """One test's topics, readers and KafkaCounter configuration."""

    def __init__(self, request, broker, flinklets):
        self.name = request.node.name.replace("_", "-")[:60]
        self.broker, self.flinklets = broker, flinklets
        self.input, self.output = f"{self.name}-in", f"{self.name}-out"
        self.prefix = f"kc-{self.name}"  # the transactional id prefix: the same across every run of the job
        self.committed = Reader(broker, self.output, "read_committed")
        self.uncommitted = Reader(broker, self.output, "read_uncommitted")
        self.t0 = time.monotonic()

    def flinklet(self, state_dir=None, parallelism=2, conf=None):
        args = ["--bootstrap", self.broker.bootstrap, "--input", self.input, "--output", self.output,
                "--transactional-id-prefix", self.prefix, "--transaction-timeout-ms", str(TX_TIMEOUT_S * 1000),
                "--rate", str(RATE), "--keys", str(KEYS)]
        return self.flinklets(name="e2e-kafka", jar=KAFKA_JOBS_JAR, entry_class="dev.flinklet.jobs.KafkaCounter",
                              job={"args": args, "parallelism": parallelism}, state_dir=state_dir, conf=conf)

    def produce(self):
        self.broker.produce(self.input, range(N))

    def wait_midway(self, f):
        """The job RUNNING with a checkpoint done and a quarter of the output committed: a fault now lands while it
        still has input, with a Kafka transaction open."""
        f.wait_checkpoint(2)
        wait_for(lambda: len(self.committed.lines) >= N // 4, 120, f"{N // 4} records committed to {self.output}")

    def latest_checkpoint(self, f, job_id):
        c = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]
        assert c, "no completed checkpoint"
        return c["id"]

    def check_complete(self, f):
        """Every seq 0..N-1 read committed exactly once, each key's counts exactly 1..n; waits two more checkpoints
        after the last seq so that a duplicate committed late would be seen. Returns check_output's summary. The
        wait is shorter than the sink's transaction timeout: a transaction of a dead JVM that only the broker's
        timeout ended would hold the reader back at the last stable offset past it."""
        try:
            wait_for(lambda: len(self.committed.seqs()) >= N, TX_TIMEOUT_S * 0.4, f"all {N} seqs committed")
        except AssertionError as e:
            raise AssertionError(f"{e}: {self.output} has {len(self.committed.seqs())} seqs in "
                                 f"{len(self.committed.lines)} records read_committed, {len(self.uncommitted.lines)} "
                                 "read_uncommitted") from None
        last = f.status()["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
        f.wait_checkpoint(last + 2)
        out = os.path.join(str(f.tmp), "committed")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "part-0"), "w") as fh:
            fh.writelines(line + "\n" for line in list(self.committed.lines))
        rc, summary = check_output(out, expect_count=N)
        assert rc == 0 and summary["records"] == N, summary
        return summary

    def figures(self, what, **kw):
        kw.setdefault("seconds", round(time.monotonic() - self.t0, 1))
        kw.setdefault("read_uncommitted", len(self.uncommitted.lines))
        print(f"kafka figures: {what}: " + ", ".join(f"{k}={v}" for k, v in kw.items()))

    def stop(self):
        self.committed.stop()
        self.uncommitted.stop()


@pytest.fixture
def run(request, broker, flinklets):
    r = Run(request, broker, flinklets)
    try:
        yield r
    finally:
        r.stop()


def test_kill9_of_the_jvm_loses_and_duplicates_nothing(run):
    f = run.flinklet().start()
    run.produce()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    run.wait_midway(f)
    before = run.latest_checkpoint(f, job_id)
    t_kill = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    st = wait_restarted(f, pid)
    t_running = time.monotonic()
    assert st["jvm"]["restarts"] == 1 and st["jvm"]["lastExitSignal"] == 9
    assert st["jobStatus"]["jobId"] == job_id
    rf = st["restoredFrom"]
    assert rf["kind"] == "checkpoint" and rf["id"] >= before, (rf, before)
    summary = run.check_complete(f)
    run.figures("kill -9 of the JVM", restored_from=st["restoredFrom"]["id"], checkpoint_before=before,
                running_again_s=round(t_running - t_kill, 1),
                reader_waited_s=round(run.committed.first_after(t_running) - t_kill, 1), committed=summary["records"])


def test_kill9_of_flinklet_then_a_new_run_loses_and_duplicates_nothing(run):
    f = run.flinklet().start()
    run.produce()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    run.wait_midway(f)
    before = run.latest_checkpoint(f, job_id)
    t_kill = time.monotonic()
    os.kill(f.proc.pid, signal.SIGKILL)
    f.proc.wait(10)
    # the JVM dies with its supervisor (parent-death signal)
    wait_for(lambda: not pid_alive(pid), 30, "the JVM to die with flinklet")

    g = run.flinklet(state_dir=f.state).start()
    st = g.wait_stable()
    t_running = time.monotonic()
    assert st["jobStatus"]["jobId"] == job_id
    rf = st["restoredFrom"]
    assert rf["kind"] == "checkpoint" and rf["id"] >= before, (rf, before)
    summary = run.check_complete(g)
    run.figures("kill -9 of flinklet, new run", restored_from=st["restoredFrom"]["id"], checkpoint_before=before,
                running_again_s=round(t_running - t_kill, 1),
                reader_waited_s=round(run.committed.first_after(t_running) - t_kill, 1), committed=summary["records"])


def test_stop_with_savepoint_then_a_new_run_loses_and_duplicates_nothing(run):
    f = run.flinklet().start()
    run.produce()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    run.wait_midway(f)
    before = run.latest_checkpoint(f, job_id)
    t_stop = time.monotonic()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    stop_s = time.monotonic() - t_stop
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE" and st["lifecycleState"] == "SUSPENDED"
    # the stop-with-savepoint committed what the job had written: with the job gone, read_committed readers get
    # everything a read_uncommitted one does (no transaction was left open to time out)
    wait_for(lambda: len(run.uncommitted.lines) > 0 and len(run.committed.lines) == len(run.uncommitted.lines),
             60, "read_committed to catch up with read_uncommitted after the stop")
    at_stop = len(run.committed.lines)

    g = run.flinklet(state_dir=f.state).start()
    st2 = g.wait_stable()
    assert st2["jobStatus"]["jobId"] == job_id
    assert st2["restoredFrom"]["kind"] == "savepoint" and norm(st2["restoredFrom"]["location"]) == norm(sp["location"])
    assert st2["restoredFrom"]["id"] >= before, (st2["restoredFrom"], before)
    summary = run.check_complete(g)
    run.figures("stop with savepoint, new run", restored_from=st2["restoredFrom"]["id"], checkpoint_before=before,
                stop_s=round(stop_s, 1), committed_at_stop=at_stop, committed=summary["records"])


def test_upgrade_by_a_new_configuration_loses_and_duplicates_nothing(run):
    # the upgrade through a new JVM (a job-only upgrade's in the same JVM: tests/e2e/test_upgrade_in_jvm.py)
    f = run.flinklet(parallelism=2, conf={"flinklet.upgrade.keep-jvm": "false"}).start()
    run.produce()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    run.wait_midway(f)
    before = run.latest_checkpoint(f, job_id)
    t_change = time.monotonic()
    f.write_config(job={"parallelism": 1})  # upgradeMode savepoint (the default): stop-with-savepoint, restart
    st = wait_restarted(f, pid)
    t_running = time.monotonic()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE"
    assert st["restoredFrom"]["kind"] == "savepoint" and norm(st["restoredFrom"]["location"]) == norm(sp["location"])
    assert st["restoredFrom"]["id"] >= before, (st["restoredFrom"], before)
    # an upgrade, not a crash: the JVM ended by itself after the savepoint and nothing was restarted after a failure
    assert st["jvm"]["lastExitCode"] == 0 and st["jvm"]["lastExitSignal"] is None, st["jvm"]
    types = [e["type"] for e in f.events()]
    assert "ConfigChanged" in types and "RestartScheduled" not in types, types
    vertices = f.rest(f"/jobs/{job_id}")["vertices"]
    assert {v["parallelism"] for v in vertices} == {1}, [(v["name"], v["parallelism"]) for v in vertices]
    summary = run.check_complete(f)
    run.figures("upgrade parallelism 2 -> 1", restored_from=st["restoredFrom"]["id"], checkpoint_before=before,
                running_again_s=round(t_running - t_change, 1),
                reader_waited_s=round(run.committed.first_after(t_running) - t_change, 1),
                committed=summary["records"])

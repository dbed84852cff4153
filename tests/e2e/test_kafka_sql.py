"""A Kafka SQL job with exactly-once through kill -9 and stop (issue 37), as a SQL user writes it: a SQL script
(spec.job.sql) reads a Kafka topic (the 'kafka' connector, 'scan.startup.mode' = 'earliest-offset'), keeps keyed
state (a running count per key, an OVER aggregation) and writes every record with its count to another topic through
the 'kafka' connector with 'sink.delivery-guarantee' = 'exactly-once' (one Kafka transaction per checkpoint and sink
subtask, its 'sink.transactional-id-prefix' the same in every JVM). The connector is Flink's own SQL jar
(flink-sql-connector-kafka, `make kafka-sql-lib`), given to the script's job as its spec.job.jarURI, the jar of the
connectors and UDFs a script uses (docs/configuration.md); the runner is flinklet's, in Flink's lib/.

While a feeder writes numbered records into the input topic (N in all: it ends once the third JVM runs), the job's
JVM is killed with kill -9, then flinklet is stopped with SIGTERM (a savepoint, exit 0), then a new flinklet on the
same state directory lets the job consume the rest. Asserted: each restart restored the point flinklet named in
status.json (a checkpoint at least as new as the newest before the kill; exactly the stop's savepoint), as Flink
itself reports it (conftest.restored); after the stop a read_committed reader has every seq a read_uncommitted one
has (nothing left open); and at the end a read_committed reader of the output topic sees every input seq exactly
once and, for each key, the counts exactly 1..n (no record lost, none counted twice: the state and the output moved
together through both restores).

Its flinklet C paths run under ASan in test_recovery.py, test_lifecycle.py and test_sql_script.py; what it adds is
Flink's SQL Kafka connector under them, so `make e2e-asan` leaves it out (asan_elsewhere)."""
import glob
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import BIN, FLINK_HOME, check_output, restored, wait_for, wait_restarted
from kafkakit import KAFKA_LIBS, KAFKA_SQL_JAR, TX_TIMEOUT_S, Broker, Feeder, Reader
from testkit import norm

pytestmark = pytest.mark.asan_elsewhere

RATE = 400     # records/s the feeder writes into the input topic, from the first start until the third is RUNNING
KEYS = 8

SCRIPT = """-- every click with the running count of its key, exactly once from Kafka to Kafka
SET 'pipeline.name' = 'kafka-sql-counter';
CREATE TABLE clicks (
  seq BIGINT,
  k   AS MOD(seq, {keys}),
  pt  AS PROCTIME()
) WITH (
  'connector' = 'kafka',
  'topic' = '{input}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'properties.group.id' = '{name}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'csv'
);
CREATE TABLE counted (
  seq BIGINT,
  k   BIGINT,
  n   BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = '{output}',
  'properties.bootstrap.servers' = '{bootstrap}',
  'properties.transaction.timeout.ms' = '{tx_timeout_ms}',
  'sink.delivery-guarantee' = 'exactly-once',
  'sink.transactional-id-prefix' = '{prefix}',
  'format' = 'csv'
);
INSERT INTO counted
SELECT seq, k, COUNT(*) OVER (PARTITION BY k ORDER BY pt ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
FROM clicks;
"""


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    assert glob.glob(os.path.join(KAFKA_LIBS, "kafka_*.jar")), f"{KAFKA_LIBS} holds no Kafka broker (make kafka-lib)"
    assert KAFKA_SQL_JAR, "no flink-sql-connector-kafka jar (make kafka-sql-lib)"
    b = Broker(tmp_path_factory.mktemp("kafka"))
    try:
        yield b.start()
    finally:
        b.stop()


def config_text(f, sql):
    """f's configuration with the script inline as a literal block and the SQL Kafka connector as the jarURI."""
    lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:", f"  name: {f.name}",
             "spec:", "  flinkConfiguration:"]
    lines += [f"    {json.dumps(k)}: {json.dumps(str(v))}" for k, v in f.conf.items()]
    lines += ["  job:", f"    jarURI: local://{KAFKA_SQL_JAR}", "    parallelism: 2", "    upgradeMode: savepoint",
              "    sql: |"]
    lines += ["      " + line if line else "" for line in sql.splitlines()]
    return "\n".join(lines) + "\n"


class Run:
    """The test's topics, feeder, readers and the SQL job's configuration."""

    def __init__(self, request, broker, flinklets):
        self.name = request.node.name.replace("_", "-")[:50]
        self.broker, self.flinklets = broker, flinklets
        self.input, self.output = f"{self.name}-in", f"{self.name}-out"
        self.sql = SCRIPT.format(keys=KEYS, input=self.input, output=self.output, bootstrap=broker.bootstrap,
                                 name=self.name, tx_timeout_ms=TX_TIMEOUT_S * 1000, prefix=f"ks-{self.name}")
        self.committed = Reader(broker, self.output, "read_committed")
        self.uncommitted = Reader(broker, self.output, "read_uncommitted")
        self.feeder = None
        self.t0 = time.monotonic()

    def flinklet(self, state_dir=None):
        f = self.flinklets(name="kafka-sql", state_dir=state_dir)
        f.write_config(raw=config_text(f, self.sql))
        return f

    def feed(self):
        self.feeder = Feeder(self.broker, self.input, RATE)

    def wait_committed(self, n, what):
        wait_for(lambda: len(self.committed.lines) >= n, 120, f"{n} records committed to {self.output} {what}")

    def check_complete(self, f):
        """Ends the input; then every seq 0..N-1 read committed exactly once, each key's counts exactly 1..n; waits
        two more checkpoints after the last seq so that a duplicate committed late would be seen. Returns
        check_output's summary."""
        n = self.feeder.finish()
        try:
            wait_for(lambda: len(self.committed.seqs()) >= n, TX_TIMEOUT_S * 0.3, f"all {n} seqs committed")
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
        rc, summary = check_output(out, expect_count=n)
        assert rc == 0 and summary["records"] == n and summary["keys"] == KEYS, summary
        return summary

    def stop(self):
        if self.feeder:
            self.feeder.stop()
        self.committed.stop()
        self.uncommitted.stop()


@pytest.fixture
def run(request, broker, flinklets):
    r = Run(request, broker, flinklets)
    try:
        yield r
    finally:
        r.stop()


def test_sql_job_kafka_to_kafka_exactly_once_through_kill9_and_stop(run):
    f = run.flinklet()
    # the connector jar as the script's jarURI: no entry class of its own (the runner is in lib/), and the planner's
    # check finds the 'kafka' connector in it (a jar without the runner was refused: "has no class ...SqlScriptRunner")
    p = subprocess.run([BIN, "check-config", "-c", str(f.config), "--preflight"], capture_output=True, text=True,
                       timeout=200, env={**os.environ, "FLINK_HOME": FLINK_HOME})
    assert p.returncode == 0, p.stderr
    run.feed()  # the input topic is made by the feeder's first records: the job's source needs it to exist
    f.start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    assert "flinklet-sql: submitting the INSERT at" in f.logs()
    names = [v["name"] for v in f.rest(f"/jobs/{job_id}")["vertices"]]
    assert any("OverAggregate" in n for n in names), names

    # kill -9 of the JVM mid-run, a Kafka transaction open: the job resumes from the newest checkpoint
    f.wait_checkpoint(2)
    run.wait_committed(RATE * 3, "before the kill")
    before = f.rest(f"/jobs/{job_id}/checkpoints")["latest"]["completed"]["id"]
    t_kill = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    st = wait_restarted(f, pid)
    t_running = time.monotonic()
    assert st["jvm"]["restarts"] == 1 and st["jvm"]["lastExitSignal"] == 9, st["jvm"]
    assert st["jobStatus"]["jobId"] == job_id
    rf = st["restoredFrom"]
    assert rf["kind"] == "checkpoint" and rf["id"] >= before, (rf, before)
    r = restored(f, job_id)
    assert r["is_savepoint"] is False and r["id"] == rf["id"], (r, rf)
    assert norm(r["external_path"]) == norm(rf["location"]), (r, rf)
    assert "flinklet-sql: running the compiled plan" in f.logs()  # the restart ran the plan kept on the volume

    # SIGTERM mid-run, once the job caught up with what was written while it was down: a stop with a savepoint,
    # exit 0; the savepoint commits what the job wrote
    sent_at_restart = run.feeder.sent
    run.wait_committed(sent_at_restart + RATE, "after the restart")
    ck = f.wait_checkpoint(rf["id"] + 1)["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    t_stop = time.monotonic()
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0, f.logs()[-4000:]
    stop_s = time.monotonic() - t_stop
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE" and st["lifecycleState"] == "SUSPENDED", st
    # with the job gone, read_committed readers get every seq a read_uncommitted one does: the stop left no
    # transaction open to time out (read_uncommitted has more records: those of the transactions the killed JVM
    # left, which the restored sink aborted, their seqs written again and committed by the next JVM)
    def caught_up():
        seqs = run.uncommitted.seqs()
        return seqs and run.committed.seqs() == seqs
    try:
        wait_for(caught_up, 60, "read_committed to have every seq read_uncommitted has after the stop")
    except AssertionError as e:
        raise AssertionError(f"{e}: {len(run.committed.seqs())} seqs committed, {len(run.uncommitted.seqs())} "
                             "uncommitted") from None
    at_stop = len(run.committed.lines)

    # a new flinklet on the same volume restores exactly that savepoint and consumes the rest
    g = run.flinklet(state_dir=f.state).start()
    st = g.wait_stable()
    assert st["jobStatus"]["jobId"] == job_id
    rf2 = st["restoredFrom"]
    assert rf2["kind"] == "savepoint" and norm(rf2["location"]) == norm(sp["location"]), (rf2, sp)
    assert rf2["id"] > ck, (rf2, ck)
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"]), (r, sp)
    assert run.feeder.sent > at_stop  # input written while no JVM ran, read by this one
    summary = run.check_complete(g)
    print(f"kafka sql figures: restored_from={rf['id']}, checkpoint_before_kill={before}, "
          f"running_again_s={round(t_running - t_kill, 1)}, sent_at_restart={sent_at_restart}, "
          f"stop_s={round(stop_s, 1)}, committed_at_stop={at_stop}, committed={summary['records']}, "
          f"read_uncommitted={len(run.uncommitted.lines)}, seconds={round(time.monotonic() - run.t0, 1)}")

"""The autoscaler on a real Kafka source with a backlog (issue 27): the broker of the Kafka workload tests
(test_kafka.py: a KRaft broker from Kafka's own jars on loopback), a topic of 4 partitions, and KafkaCounter reading
it with a per-subtask capacity (--subtask-rate: the work per record, so more readers read more). The job starts at
parallelism 1 with a backlog and input arriving faster than one reader takes; max parallelism, the vertex maximum
and the slots are 8.

What a user relies on: the autoscaler scales the source up, never beyond the topic's 4 partitions (more readers
would sit idle holding slots: operator 1.16; before it, this source went to 8), the lag drains at the new
parallelism while the input keeps arriving, and once the input stops the source is scaled down again.

Its flinklet C paths (the collector, the decision, the in-place rescale) run under ASan in the unit tests and in
test_autoscaler.py; what this file adds is Flink's Kafka source and its metrics, so `make e2e-asan` leaves it out
(asan_elsewhere)."""
import os
import subprocess
import threading
import time

import pytest

from conftest import wait_for
from kafkakit import KAFKA_JOBS_JAR, TX_TIMEOUT_S, Broker, die_with_pytest

pytestmark = pytest.mark.asan_elsewhere

PARTITIONS = 4
SUBTASK_RATE = 300   # records/s one reader (the source chained with Parse) takes at most
INPUT_RATE = 700     # records/s arriving while the input runs: more than 2 readers take, less than 4
BACKLOG = 15000      # records in the topic before the job starts

AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "job.autoscaler.scale-down.interval": "20 s",
    "job.autoscaler.restart.time": "5 s",
    "job.autoscaler.catch-up.duration": "1 min",
    "job.autoscaler.utilization.target": "0.6",
    "job.autoscaler.vertex.max-parallelism": "8",
    "pipeline.max-parallelism": "8",
    "taskmanager.numberOfTaskSlots": "8",
    "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling": "5 s",
    "metrics.fetcher.update-interval": "2000",
}


class Input:
    """Kafka's console producer fed INPUT_RATE records/s from a thread until stop()."""

    def __init__(self, broker, topic, first):
        self.proc = subprocess.Popen(
            broker.java("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", broker.bootstrap,
                        "--topic", topic, "--producer-property", "linger.ms=20"),
            stdin=subprocess.PIPE, stdout=broker.tools_log, stderr=subprocess.STDOUT, preexec_fn=die_with_pytest)
        self.seq, self.done = first, threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self):
        t = time.monotonic()
        while not self.done.is_set():
            n = INPUT_RATE // 10
            self.proc.stdin.write("".join(f"{s}\n" for s in range(self.seq, self.seq + n)).encode())
            self.proc.stdin.flush()
            self.seq += n
            t += 0.1
            time.sleep(max(0.0, t - time.monotonic()))

    def stop(self):
        self.done.set()
        self.thread.join(10)
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(60)


class SourceWatch:
    """GET /jobs/:id every 500 ms in a thread: the source vertex's parallelism while the job RUNS."""

    def __init__(self, f, job_id):
        self.f, self.job_id, self.seen, self.done = f, job_id, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done.is_set():
            try:
                j = self.f.rest(f"/jobs/{self.job_id}", timeout=2)
                v = [v for v in j["vertices"] if v["name"].startswith("Source")][0]
                if j["state"] == "RUNNING":
                    self.seen.append(v["parallelism"])
            except (OSError, ValueError, KeyError, IndexError):
                pass
            time.sleep(0.5)

    def stop(self):
        self.done.set()
        self.thread.join(10)


def source_vertex(f, job_id):
    v = [v for v in f.rest(f"/jobs/{job_id}")["vertices"] if v["name"].startswith("Source")][0]
    return v["id"], v["parallelism"]


def lag(f, job_id, source_id):
    """The source's pendingRecords summed over its partitions and subtasks, None while Flink has no figure."""
    try:
        names = [m["id"] for m in f.rest(f"/jobs/{job_id}/vertices/{source_id}/subtasks/metrics")
                 if m["id"].endswith(".pendingRecords")]
        if not names:
            return None
        got = f.rest(f"/jobs/{job_id}/vertices/{source_id}/subtasks/metrics?get={','.join(names)}&agg=sum")
    except (OSError, ValueError):
        return None
    vals = [float(m["sum"]) for m in got if "sum" in m]
    return sum(vals) if vals else None


@pytest.fixture
def broker(tmp_path):
    assert os.path.exists(KAFKA_JOBS_JAR), f"{KAFKA_JOBS_JAR} is not built (make jobs)"
    os.makedirs(tmp_path / "kafka")
    b = Broker(tmp_path / "kafka")
    try:
        yield b.start()
    finally:
        b.stop()


def test_a_kafka_backlog_scales_up_within_the_partitions_drains_and_scales_down(tmp_path, broker, flinklets):
    topic = "as-in"
    r = subprocess.run(broker.java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", broker.bootstrap,
                                   "--create", "--topic", topic, "--partitions", str(PARTITIONS),
                                   "--replication-factor", "1"),
                       stdout=broker.tools_log, stderr=subprocess.STDOUT, timeout=120, preexec_fn=die_with_pytest)
    assert r.returncode == 0, f"the topic was not made; see {broker.root}/tools.log"
    broker.produce(topic, range(BACKLOG))
    args = ["--bootstrap", broker.bootstrap, "--input", topic, "--output", "as-out",
            "--transactional-id-prefix", "kc-autoscaler", "--transaction-timeout-ms", str(TX_TIMEOUT_S * 1000),
            "--subtask-rate", str(SUBTASK_RATE), "--keys", "8"]
    f = flinklets(name="e2e-kafka-autoscaler", jar=KAFKA_JOBS_JAR, entry_class="dev.flinklet.jobs.KafkaCounter",
                  conf=AUTOSCALER, job={"args": args, "parallelism": 1}).start()
    feed = Input(broker, topic, BACKLOG)
    watch = None
    try:
        st = f.wait_stable()
        job_id = st["jobStatus"]["jobId"]
        source_id, p0 = source_vertex(f, job_id)
        assert p0 == 1
        watch = SourceWatch(f, job_id)
        # a backlog of more than 10 s for one reader (Kafka's reader reports the partitions' lag as it learns it)
        lag0 = wait_for(lambda: (x := lag(f, job_id, source_id)) and x > SUBTASK_RATE * 10 and x, 120,
                        "the source's pendingRecords to show the backlog")

        # scale-up, within the partitions: the source ends at 4 readers (its capacity 4 x 300/s is what the input
        # and the backlog need, and no more than 4 partitions can be read) and never went past them
        up = wait_for(lambda: (p := source_vertex(f, job_id)[1]) >= PARTITIONS and p, 300,
                      f"the autoscaler to scale the source up to the {PARTITIONS} partitions")
        assert up == PARTITIONS, f"the source went to {up} readers for {PARTITIONS} partitions"
        wait_for(lambda: PARTITIONS in watch.seen, 30, "the watch to see the scale-up")
        assert max(watch.seen) == PARTITIONS, watch.seen
        overrides = f.status()["autoscaler"]["parallelismOverrides"]
        assert int(overrides[source_id]) == PARTITIONS, overrides
        assert "ScalingReport" in [e["type"] for e in f.events()]

        # the lag drains at 4 readers while the input keeps arriving (4 x 300/s > 700/s)
        lags = []
        wait_for(lambda: (x := lag(f, job_id, source_id)) is not None and lags.append(x) is None
                 and x < INPUT_RATE * 5, 300, "the backlog to drain")
        assert max(watch.seen) == PARTITIONS, watch.seen

        # the input stops: the source is scaled down after the scale-down interval
        feed.stop()
        down = wait_for(lambda: (p := source_vertex(f, job_id)[1]) < PARTITIONS and p, 300,
                        "the autoscaler to scale the source down once the input stopped")
        assert 1 <= down < PARTITIONS
        assert max(watch.seen) == PARTITIONS, watch.seen
        print(f"kafka autoscaler figures: lag at start {lag0:.0f}, lag readings {lags[:3]}...{lags[-3:]}, "
              f"parallelism seen {sorted(set(watch.seen))}, down to {down}")
    finally:
        feed.stop()
        if watch:
            watch.stop()

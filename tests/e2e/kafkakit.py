"""kafkakit: a real single-node KRaft Kafka broker on loopback (Kafka's own jars from Maven Central, `make
kafka-lib`), Kafka's console tools to write and read topics, and where the Kafka test job and Flink's SQL Kafka
connector are, for the e2e files that run Kafka jobs under flinklet (test_kafka.py, test_autoscaler_kafka.py,
test_kafka_sql.py)."""
import ctypes
import glob
import os
import signal
import subprocess
import threading
import time
import uuid

from testkit import JOBS_JAR, free_port, wait_for


def _kafka_libs():
    given = os.environ.get("FLINKLET_KAFKA_LIBS")
    if given:
        return given
    found = sorted(glob.glob(os.path.abspath("build/kafka-*/libs")))
    return found[-1] if found else os.path.abspath("build/kafka/libs")


KAFKA_LIBS = _kafka_libs()
KAFKA_JOBS_JAR = os.environ.get("FLINKLET_KAFKA_JOBS_JAR",
                                os.path.join(os.path.dirname(JOBS_JAR), "flinklet-test-jobs-kafka.jar"))


def _kafka_sql_jar():
    """Flink's SQL Kafka connector jar (flink-sql-connector-kafka, `make kafka-sql-lib`): FLINKLET_KAFKA_SQL_DIR's
    (make e2e says which), else the newest build/kafka-sql-*'s; None when there is none."""
    given = os.environ.get("FLINKLET_KAFKA_SQL_DIR")
    dirs = [given] if given else sorted(glob.glob(os.path.abspath("build/kafka-sql-*")))[-1:]
    jars = [j for d in dirs for j in sorted(glob.glob(os.path.join(d, "flink-sql-connector-kafka-*.jar")))]
    return jars[-1] if jars else None


KAFKA_SQL_JAR = _kafka_sql_jar()

# the sink's transaction.timeout.ms: far longer than any restart here (and within the broker's
# transaction.max.timeout.ms, 15 min), so a reader that sees output again within it did not wait for the broker
# to time the dead JVM's transactions out
TX_TIMEOUT_S = 600

TOOL_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
LOG4J_TOOLS = """rootLogger.level = WARN
rootLogger.appenderRef.console.ref = C
appender.console.name = C
appender.console.type = CONSOLE
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %-5p %c{1} - %m%n
"""


def die_with_pytest():
    """preexec_fn: the child gets SIGKILL when this test process ends, so no broker or reader outlives a run."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Broker:
    """One KRaft Kafka broker (broker and controller in one JVM) on 127.0.0.1, its logs under root."""

    def __init__(self, root):
        self.root = str(root)
        self.port, self.controller_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc = self.log = None
        self.tools_log = open(os.path.join(self.root, "tools.log"), "ab")

    def java(self, main, *args, log4j="log4j-tools.properties", jvm=TOOL_JVM):
        return ["java", *jvm, "-cp", os.path.join(KAFKA_LIBS, "*"),
                f"-Dlog4j2.configurationFile={os.path.join(self.root, log4j)}", main, *args]

    def start(self):
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": os.path.join(self.root, "data"),
            # the topics are made by their first producer or consumer, two partitions each
            "auto.create.topics.enable": "true",
            "num.partitions": "2",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            "transaction.max.timeout.ms": "900000",  # Kafka's default, said here: the sink's timeout must fit
        }
        conf = os.path.join(self.root, "server.properties")
        with open(conf, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in props.items())
        with open(os.path.join(self.root, "log4j-tools.properties"), "w") as f:
            f.write(LOG4J_TOOLS)
        with open(os.path.join(self.root, "log4j-broker.properties"), "w") as f:
            f.write(LOG4J_TOOLS.replace("WARN", "INFO").replace("SYSTEM_ERR", "SYSTEM_OUT"))
        cluster = uuid.uuid4().bytes.hex()[:22]  # any 22 characters of base64url
        subprocess.run(self.java("kafka.tools.StorageTool", "format", "-t", cluster, "-c", conf),
                       check=True, stdout=self.tools_log, stderr=subprocess.STDOUT, timeout=120)
        self.log_path = os.path.join(self.root, "broker.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.java("kafka.Kafka", conf, log4j="log4j-broker.properties",
                                               jvm=["-Xms128m", "-Xmx512m"]),
                                     stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_pytest)

        def started():
            if self.proc.poll() is not None:
                raise AssertionError(f"the Kafka broker exited {self.proc.returncode}:\n{self.tail()}")
            with open(self.log_path, errors="replace") as f:
                return "Kafka Server started" in f.read()
        wait_for(started, 120, "the Kafka broker to start")
        return self

    def tail(self, n=4000):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-n:]

    def produce(self, topic, values):
        """Writes values (one record each) to topic with Kafka's console producer (acks=all), waits for it."""
        data = "".join(f"{v}\n" for v in values).encode()
        r = subprocess.run(self.java("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", self.bootstrap,
                                     "--topic", topic, "--producer-property", "acks=all",
                                     "--producer-property", "linger.ms=20"),
                           input=data, stdout=self.tools_log, stderr=subprocess.STDOUT, timeout=120,
                           preexec_fn=die_with_pytest)
        assert r.returncode == 0, f"the console producer failed ({r.returncode}); see {self.root}/tools.log"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
        self.tools_log.close()


class Feeder:
    """Kafka's console producer (acks=all) on a topic, fed seqs 0, 1, 2, ... at rate records/s from a background
    thread until finish() (or until count of them, when given), so that a job reading the topic has input in flight
    whenever a test faults it, however long the faults take."""

    def __init__(self, broker, topic, rate, count=None):
        self.rate, self.count = rate, count
        self.sent = 0
        self.done = threading.Event()
        self.proc = subprocess.Popen(
            broker.java("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", broker.bootstrap,
                        "--topic", topic, "--producer-property", "acks=all", "--producer-property", "linger.ms=20"),
            stdin=subprocess.PIPE, stdout=broker.tools_log, stderr=subprocess.STDOUT, preexec_fn=die_with_pytest)
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self):
        t0, step = time.monotonic(), max(1, self.rate // 10)  # tenths of a second
        try:
            while not self.done.is_set() and (self.count is None or self.sent < self.count):
                n = step if self.count is None else min(step, self.count - self.sent)
                self.proc.stdin.write("".join(f"{v}\n" for v in range(self.sent, self.sent + n)).encode())
                self.proc.stdin.flush()
                self.sent += n
                self.done.wait(max(0.0, t0 + self.sent / self.rate - time.monotonic()))
            self.proc.stdin.close()
        except OSError:  # the producer is gone (stop(), or it failed: finish() says so)
            pass

    def finish(self, timeout=120):
        """Ends the input (now, or when count were written), waits for the producer to have every record
        acknowledged (it flushes and exits at the end of its input); returns how many were written."""
        if self.count is None:
            self.done.set()
        self.thread.join(timeout)
        rc = self.proc.wait(max(1.0, timeout))
        assert rc == 0, f"the console producer exited {rc} after {self.sent} records"
        return self.sent

    def stop(self):
        self.done.set()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


class Reader:
    """Kafka's console consumer on a topic from its beginning, with the given isolation level, running in the
    background: every record it prints is kept with the moment it arrived."""

    def __init__(self, broker, topic, isolation="read_committed"):
        self.lines, self.times = [], []
        self.proc = subprocess.Popen(
            broker.java("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", broker.bootstrap,
                        "--topic", topic, "--from-beginning", "--isolation-level", isolation),
            stdout=subprocess.PIPE, stderr=broker.tools_log, text=True, preexec_fn=die_with_pytest)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.times.append(time.monotonic())
            self.lines.append(line.strip())

    def seqs(self):
        return {int(line.split(",")[0]) for line in list(self.lines)}

    def first_after(self, t):
        """The moment the first record after moment t arrived (None: none yet)."""
        later = [x for x in list(self.times) if x > t]
        return later[0] if later else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.thread.join(10)

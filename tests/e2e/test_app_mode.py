"""Jobs whose main() returns after submitting them (issue 37), on the real MiniCluster: a DataStream job submitted
with env.executeAsync(), and a SQL runner written as the Flink Kubernetes Operator's flink-sql-runner-example is
(tableEnv.executeSql for each statement of a script: an INSERT, an EXECUTE STATEMENT SET). Flink's CLI alone ends
the JVM, and the job with it, when main() returns; flinklet's launcher (java/launcher) keeps the JVM while the job
runs: the same JVM a minute later, checkpoints, a savepoint on SIGTERM that the next run restores. A bounded job
ends FINISHED and is not started again; a main() that submits no job, or a second one, is an error naming its class.
"""
import signal
import time

import pytest

from conftest import Flinklet, check_output, restored, wait_for
from testkit import norm

RUNNER = "dev.flinklet.jobs.SqlRunner"

ORDERS = """-- an unbounded source, as in the operator's example
CREATE TABLE orders (
  order_number BIGINT,
  price        DECIMAL(32,2),
  buyer        STRING
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '{rate}'{bounded}
);
CREATE TABLE sink_a WITH ('connector' = 'blackhole') LIKE orders (EXCLUDING ALL);
CREATE TABLE sink_b WITH ('connector' = 'blackhole') LIKE orders (EXCLUDING ALL);
"""
INSERT_A = "INSERT INTO sink_a SELECT * FROM orders;\n"
INSERT_B = "INSERT INTO sink_b SELECT order_number, price * 2, buyer FROM orders WHERE price > 10;\n"
STATEMENT_SET = "EXECUTE STATEMENT SET\nBEGIN\n" + INSERT_A + INSERT_B + "END;\n"


def script(tmp_path, name, body, rate=20, rows=None):
    path = tmp_path / f"{name}.sql"
    bounded = f",\n  'number-of-rows' = '{rows}'" if rows else ""
    path.write_text(ORDERS.format(rate=rate, bounded=bounded) + body)
    return str(path)


@pytest.fixture
def apart(tmp_path):
    """Flinklets that run at the same time: each in a directory of its own (its configuration file, its state)."""
    made = []

    def make(sub, **kw):
        (tmp_path / sub).mkdir(exist_ok=True)
        f = Flinklet(tmp_path / sub, **kw)
        made.append(f)
        return f

    yield make
    for f in made:
        f.stop()


def types(f):
    return [e["type"] for e in f.events()]


def stays_a_minute(fs):
    """Each flinklet's job RUNNING in its first JVM: the same pid over 60 s after it ran, with checkpoints going on;
    returns each one's status then."""
    first = [f.wait_stable() for f in fs]
    for f in fs:
        assert "main() returned; the JVM runs job" in f.logs(), "main() returned before the job ended"
    ckpt0 = [(st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0) for st in first]
    time.sleep(max(0.0, 61 - (time.monotonic() - stays_a_minute.t0)))
    now = []
    for f, st, c0 in zip(fs, first, ckpt0):
        s = f.wait_checkpoint(c0 + 5, timeout=30)
        assert s["jvm"]["pid"] == st["jvm"]["pid"] and s["jvm"]["starts"] == 1, s["jvm"]
        assert s["jobStatus"]["state"] == "RUNNING" and s["lifecycleState"] == "STABLE"
        assert "JobFinished" not in types(f)
        now.append(s)
    return now


def stop_with_savepoint(f):
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE" and st["lifecycleState"] == "SUSPENDED", st
    return sp


def test_execute_async_job_runs_past_main_and_resumes_from_its_savepoint(flinklets):
    f = flinklets(entry_class="dev.flinklet.jobs.AsyncCounter",
                  job={"args": ["--rate", "100", "--keys", "8", "--output", "OUT"]})
    stays_a_minute.t0 = time.monotonic()
    f.start()
    st = stays_a_minute([f])[0]
    job_id = st["jobStatus"]["jobId"]
    assert "AsyncCounter: submitted job " + job_id in f.logs()
    sp = stop_with_savepoint(f)

    g = flinklets(state_dir=f.state, entry_class="dev.flinklet.jobs.AsyncCounter",
                  job={"args": ["--rate", "100", "--keys", "8", "--output", "OUT"]}).start()
    st2 = g.wait_stable()
    assert st2["jobStatus"]["jobId"] == job_id  # the fixed job id of an asynchronous submission
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"])
    g.wait_checkpoint(r["id"] + 2)
    stop_with_savepoint(g)
    rc, summary = check_output(f.output)
    assert rc == 0 and summary["duplicates"] == 0 and summary["gaps"] == 0, summary


def test_sql_runner_insert_and_statement_set_run_until_stopped(apart, tmp_path):
    """Both variants at once (one minute for both): a single INSERT, and EXECUTE STATEMENT SET; the statement set
    then resumes from its savepoint with one INSERT fewer (allowNonRestoredState: the -n of a table job)."""
    one = apart("insert", name="sql-insert", entry_class=RUNNER,
                    job={"parallelism": 1, "args": [script(tmp_path, "insert", INSERT_A)]})
    both = apart("set", name="sql-set", entry_class=RUNNER,
                     job={"parallelism": 1, "args": [script(tmp_path, "set", STATEMENT_SET)]})
    stays_a_minute.t0 = time.monotonic()
    one.start()
    both.start()
    st = stays_a_minute([one, both])
    job_id = st[1]["jobStatus"]["jobId"]
    vertices = [v["name"] for v in both.rest(f"/jobs/{job_id}")["vertices"]]
    assert any("sink_a" in v for v in vertices) and any("sink_b" in v for v in vertices), vertices
    stop_with_savepoint(one)
    sp = stop_with_savepoint(both)

    again = apart("set", name="sql-set", state_dir=both.state, entry_class=RUNNER,
                      job={"parallelism": 1, "allowNonRestoredState": "true",
                           "args": [script(tmp_path, "one-fewer", INSERT_A)]}).start()
    assert again.wait_stable()["jobStatus"]["jobId"] == job_id
    r = restored(again, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"])


def test_bounded_sql_job_finishes_and_is_not_started_again(flinklets, tmp_path):
    f = flinklets(entry_class=RUNNER, extra_args=["--exit-on-finish"],
                  job={"parallelism": 1, "args": [script(tmp_path, "bounded", INSERT_A, rate=200, rows=1000)]}).start()
    assert f.wait_exit(120) == 0
    st = f.status()
    assert st["jobStatus"]["state"] == "FINISHED" and st["lifecycleState"] == "STABLE", st
    assert st["jvm"]["starts"] == 1 and st["error"] is None
    assert types(f).count("JvmStarted") == 1 and "JobFinished" in types(f)
    assert "FINISHED" in f.logs() and f"Job {st['jobStatus']['jobId']} FINISHED" in f.logs()

    g = flinklets(state_dir=f.state, entry_class=RUNNER, extra_args=["--exit-on-finish"],
                  job={"parallelism": 1, "args": [script(tmp_path, "bounded", INSERT_A, rate=200, rows=1000)]})
    g.start()
    assert g.wait_exit(30) == 0
    assert "JobAlreadyFinished" in types(g) and types(g).count("JvmStarted") == 1


def first_exit(f):
    """What flinklet said when the first JVM exited: its JvmExited event, and every event's message and the status
    error as one text (a JVM that ended after its job ran says the cause in a JobFailed event)."""
    exited = wait_for(lambda: [e for e in f.events() if e["type"] == "JvmExited"], 120, "the JVM's exit")
    time.sleep(0.5)
    said = "\n".join([e.get("message", "") for e in f.events()] + [f.status()["error"] or ""])
    f.stop()
    return exited[0]["message"], said


def test_main_without_a_job_or_with_two_is_an_error_naming_its_class(apart, tmp_path):
    none = apart("none", name="sql-none", entry_class=RUNNER, job={"parallelism": 1, "args": [script(tmp_path, "none", "")]})
    two = apart("two", name="sql-two", entry_class=RUNNER,
                    job={"parallelism": 1, "args": [script(tmp_path, "two", INSERT_A + INSERT_B)]})
    none.start()
    two.start()
    exited, said = first_exit(none)
    assert "exited with code 1" in exited and f"{RUNNER}'s main() returned without submitting a job" in exited
    assert "JobRunning" not in types(none)
    exited, said = first_exit(two)
    assert "exited with code 1" in exited, exited
    assert f"{RUNNER}'s main() submitted a second job" in said, said

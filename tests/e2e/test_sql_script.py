"""A SQL script as the job, no jar to build (spec.job.sql, spec.job.sqlScript; issue 37), on the real MiniCluster:
flinklet's SQL runner (java/sqlrunner SqlScriptRunner) runs a grouped aggregation over a datagen source in its first JVM
past a minute with checkpoints, an edited script upgrades it through a savepoint into the same operators (no
allowNonRestoredState), a stop takes a savepoint and the next run restores it; the job runs from the script's compiled
plan kept on the volume, and a script whose plan changed shape says which operators changed. check-config refuses a script the
runner would refuse with its line and column, without a JVM; --preflight has the planner name an unknown table at its
line and column.

The file is in MATRIX_FILES (make e2e-matrix: Flink 1.20.5 and 2.3.0 besides FLINK_VERSION's 2.2.1) but for its
longest test, marked single_version: the matrix runs the shorter test_sql_job_outlives_its_main_... (the runner's
main() returns after submitting, the launcher keeps the job, a savepoint restores into the compiled plan), and the
two that check the script without running it.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import BIN, FLINK_HOME, flink_minor, restored, wait_for
from sqlkit import config_text, events_of
from testkit import free_port, norm

SCRIPT = """-- clicks per user, a grouped aggregation (keyed state)
SET 'pipeline.name' = 'clicks-per-user';
CREATE TABLE clicks (
  user_id INT,
  url     STRING
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '{rate}',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '16'
);
CREATE TABLE per_user (user_id INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO per_user
SELECT user_id, COUNT(*) FROM clicks GROUP BY user_id;
"""


def sql_flinklet(flinklets, sql, allow_non_restored=False, **kw):
    f = flinklets(name="sql-clicks", **kw)
    f.write_config(raw=config_text(f, sql, allow_non_restored))
    return f


def test_sql_job_outlives_its_main_and_restarts_from_its_compiled_plan(flinklets):
    """The SQL runner and the launcher on each Flink version at the matrix's cost (under a minute): the runner's
    main() returns once it submitted the INSERT (Flink's CLI alone would end the JVM, and the job, then), and the job
    runs on in the same JVM over five checkpoints (a second each); a stop takes a savepoint, and the next JVM runs the
    compiled plan kept on the volume and restores that savepoint into it."""
    f = sql_flinklet(flinklets, SCRIPT.format(rate=50)).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    logs = f.logs()
    assert "flinklet-sql: submitting the INSERT at" in logs and "flinklet-sql: compiled the script's plan" in logs
    assert "main() returned; the JVM runs job" in logs, "the runner's main() did not return before the job ended"
    plans = os.listdir(os.path.join(f.state, "sql"))
    assert len(plans) == 1 and plans[0].startswith("plan-"), plans
    assert f.rest("/jobs/overview")["jobs"][0]["name"] == "clicks-per-user"  # the script's SET
    c0 = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0)
    st = f.wait_checkpoint(c0 + 5, timeout=60)
    assert st["jvm"]["pid"] == pid and st["jvm"]["starts"] == 1 and st["jobStatus"]["state"] == "RUNNING", st
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    last = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert last and last["triggerType"] == "UPGRADE", last

    g = sql_flinklet(flinklets, SCRIPT.format(rate=50), state_dir=f.state).start()
    assert g.wait_stable()["jobStatus"]["jobId"] == job_id
    assert "flinklet-sql: running the compiled plan" in g.logs()
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(last["location"])
    assert os.listdir(os.path.join(f.state, "sql")) == plans
    g.wait_checkpoint(r["id"] + 1)


def test_a_plan_a_newer_flink_compiled_is_refused_saying_so(flinklets, tmp_path):
    """A plan on the volume that a newer Flink compiled (the image downgraded: 2.3's plan under 1.20) is one no Flink
    before it loads ("Unknown Flink version", Flink says): the runner refuses it at the job's statement, naming the
    plan, the Flink that compiled it, this one and the way out. flinkVersion 9.9 is newer than every version's."""
    path = tmp_path / "job.sql"
    path.write_text(SCRIPT.format(rate=5))
    f = flinklets(name="sql-clicks")
    f.write_config(raw=config_text(f, None, script=path))
    plan = f"plan-{hashlib.sha256(path.read_bytes()).hexdigest()}.json"
    os.makedirs(os.path.join(f.state, "sql"))
    with open(os.path.join(f.state, "sql", plan), "w") as out:
        out.write('{\n  "flinkVersion" : "9.9",\n  "nodes" : [ ]\n}\n')
    f.start()
    exited = wait_for(lambda: [e for e in f.events() if e["type"] == "JvmExited"], 120, "the JVM's exit")[0]
    f.stop()
    major, minor = flink_minor()
    said = (f"{path}:13:1: spec.job.sqlScript: INSERT (its compiled plan in {f.state}/sql): {plan} was compiled by "
            f"Flink 9.9, newer than this Flink ({major}.{minor}): a compiled plan loads on the Flink that compiled it "
            "and on later ones; run Flink 9.9 or later, or remove the file to have the script compiled again")
    # the event says the runner's own message (its position first), cut at 400 characters (SUP_CAUSE_MAX)
    assert exited["message"].startswith("the JVM exited with code 1: dev.flinklet.launcher.SqlScriptRunner$Failure: "
                                        + said[:200]), exited
    assert "Caused by: dev.flinklet.launcher.SqlScriptRunner$Failure: " + said in f.logs()
    assert "JobRunning" not in [e["type"] for e in f.events()]


@pytest.mark.single_version
def test_sql_job_runs_past_a_minute_upgrades_with_its_state_and_resumes_from_its_savepoint(flinklets):
    t0 = time.monotonic()
    f = sql_flinklet(flinklets, SCRIPT.format(rate=50)).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    assert "flinklet-sql: submitting the INSERT at" in f.logs()
    # the job runs from the script's compiled plan, kept on the volume under the script's sha256
    plans = sorted(os.listdir(os.path.join(f.state, "sql")))
    assert len(plans) == 1 and plans[0].startswith("plan-") and plans[0].endswith(".json"), plans
    assert f.rest("/jobs/overview")["jobs"][0]["name"] == "clicks-per-user"  # the script's SET
    names = [v["name"] for v in f.rest(f"/jobs/{job_id}")["vertices"]]
    assert any("GroupAggregate" in n for n in names), names
    # the first JVM keeps the job past a minute, checkpointing (the runner's main() returned long ago)
    c0 = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0)
    time.sleep(max(0.0, 61 - (time.monotonic() - t0)))
    st = f.wait_checkpoint(c0 + 5, timeout=30)
    assert st["jvm"]["pid"] == pid and st["jvm"]["starts"] == 1 and st["jobStatus"]["state"] == "RUNNING"
    assert st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"] >= c0 + 5

    # an edited script (another rate, a comment): an upgrade through a savepoint, the same operators restored
    t1 = int(time.time() * 1000)
    f.write_config(raw=config_text(f, "-- edited\n" + SCRIPT.format(rate=80)))
    sp = wait_for(lambda: events_of(f, "SavepointCompleted", t1), 90, "the upgrade's savepoint")[0]
    st = wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE" and s,
                  120, "the upgraded job RUNNING")
    assert st["jobStatus"]["jobId"] == job_id and st["restoredFrom"]["kind"] == "savepoint"
    r = restored(f, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) in sp["message"]
    same = events_of(f, "SqlPlanUnchanged", t1)
    assert same and "the edited script has the operators of " + plans[0] in same[0]["message"], same
    assert len(os.listdir(os.path.join(f.state, "sql"))) == 2  # the earlier script's plan kept, for a rollback

    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    last = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert last and last["triggerType"] == "UPGRADE", last

    # a script whose plan has another shape (a filter after the aggregate), started with allowNonRestoredState:
    # flinklet says which operators the savepoint's state no longer goes into, and the aggregate's state restores
    g = sql_flinklet(flinklets, SCRIPT.format(rate=80).replace(
        "SELECT user_id, COUNT(*) FROM clicks GROUP BY user_id;",
        "SELECT user_id, n FROM (SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id) WHERE n > 0;"),
        allow_non_restored=True, state_dir=f.state).start()
    assert g.wait_stable()["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(last["location"])
    changed = events_of(g, "SqlPlanChanged")
    # the sink's exec node is stream-exec-sink_1 up to Flink 2.2, _2 from 2.3
    said = changed and changed[0]["message"]
    assert said and re.search(r"operators gone \[5:stream-exec-sink_\d+\]", said), changed
    assert re.search(r"operators new \[5:stream-exec-calc_1, 6:stream-exec-sink_\d+\]", said), changed

    # a crashed JVM: the restart runs the plan kept on the volume, not a new compilation, from the newest checkpoint
    st = g.wait_checkpoint(r["id"] + 1)
    pid = st["jvm"]["pid"]
    assert "flinklet-sql: running the compiled plan" not in g.logs()
    os.kill(pid, signal.SIGKILL)
    st = wait_for(lambda: (s := g.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE" and s,
                  120, "the restarted job RUNNING")
    assert st["restoredFrom"]["kind"] == "checkpoint"
    assert "flinklet-sql: running the compiled plan" in g.logs()
    assert len(os.listdir(os.path.join(f.state, "sql"))) == 3


def check_config(*args):
    p = subprocess.run([BIN, "check-config", *args], capture_output=True, text=True, timeout=180,
                       env={"FLINK_HOME": FLINK_HOME, "PATH": "/usr/bin:/bin"})
    return p.returncode, p.stdout, p.stderr


def test_check_config_refuses_a_broken_script_at_its_line_and_column_without_a_jvm(tmp_path):
    script = tmp_path / "job.sql"
    script.write_text("CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n"
                      "CREATE TABLE b (x INT) WITH ('connector' = 'blackhole');\n"
                      "INSERT INTO b SELECT x FROM a;\n"
                      "  INSERT INTO b SELECT x + 1 FROM a;\n")
    cfg = tmp_path / "flinklet.yaml"
    cfg.write_text("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: sql-bad\n"
                   f"spec:\n  flinkConfiguration:\n    flinklet.state.dir: {tmp_path}/state\n"
                   f"  job:\n    sqlScript: local://{script}\n")
    t = time.monotonic()
    rc, out, err = check_config("-c", str(cfg))
    assert time.monotonic() - t < 5, "check-config ran a JVM"
    assert rc == 2 and out == ""
    assert err.strip() == (f"{script}:4:3: spec.job.sqlScript: INSERT: a second job in the script (the first is the "
                           "INSERT at line 3): one INSERT, one EXECUTE STATEMENT SET BEGIN ... END; or one CREATE "
                           "TABLE ... AS SELECT per script (put the INSERTs in one statement set)"), err
    # mended, it is the effective document with the runner filled in
    script.write_text("EXECUTE STATEMENT SET BEGIN\n  INSERT INTO b SELECT 1;\nEND;\n")
    rc, out, err = check_config("-c", str(cfg), "--json")
    assert rc == 0, err
    job = json.loads(out)["spec"]["job"]
    assert job["entryClass"] == "dev.flinklet.launcher.SqlScriptRunner"
    assert job["jarURI"] == f"local://{FLINK_HOME}/lib/flinklet-launcher.jar" and job["sqlScript"] == f"local://{script}"
    # promoted to the operator: the runner form of its flink-sql-runner-example, the script's place said in a note
    p = subprocess.run([BIN, "export", "--to", "flinkdeployment", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=60, env={"FLINK_HOME": FLINK_HOME, "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert '    jarURI: "local:///opt/flink/lib/flinklet-launcher.jar"\n' in p.stdout
    assert '    entryClass: "dev.flinklet.launcher.SqlScriptRunner"\n' in p.stdout
    assert f'    args:\n    - "{script}"\n' in p.stdout
    assert f"# note: check job.args[0]: the SQL script {script} must be at that path in spec.image" in p.stdout
    assert "sqlScript" not in p.stdout and "\n    sql:" not in p.stdout  # fields the operator's CRD does not have


def test_preflight_has_the_planner_name_an_unknown_table_at_its_position(tmp_path):
    cfg = tmp_path / "flinklet.yaml"
    cfg.write_text("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: sql-pre\n"
                   "spec:\n  flinkConfiguration:\n"
                   f"    flinklet.state.dir: {tmp_path}/state\n    rest.port: \"{free_port()}\"\n"
                   "    flinklet.http.address: 127.0.0.1:0\n"
                   "  job:\n    sql: |\n"                                                      # 11
                   "      CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n"            # 12
                   "      CREATE TABLE b (x INT) WITH ('connector' = 'blackhole');\n"          # 13
                   "      INSERT INTO b\n"                                                     # 14
                   "      SELECT x FROM a JOIN nosuch ON TRUE;\n")                             # 15
    rc, out, err = check_config("-c", str(cfg), "--preflight")
    assert rc == 2, err
    line = [ln for ln in err.splitlines() if "nosuch" in ln]
    assert line and line[0].startswith(f"{cfg}:15:28: spec.job.sql: INSERT: "), err
    assert "Object 'nosuch' not found" in line[0], err


CTAS = """-- the job is a CREATE TABLE AS SELECT: the table and the query filling it in one statement
CREATE TABLE clicks (
  user_id INT,
  url     STRING
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '20',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '8'
);
CREATE TABLE per_user WITH ('connector' = 'blackhole')
AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;
"""


def test_create_table_as_select_is_the_job_stops_with_a_savepoint_and_resumes(flinklets, tmp_path):
    """A CREATE TABLE ... AS SELECT as the script's job: check-config takes it (and --preflight has the planner check
    its query, an unknown column at its line and column); it keeps RUNNING in its first JVM with checkpoints, a stop
    takes a savepoint, and the next start restores the aggregate's state from it."""
    f = sql_flinklet(flinklets, CTAS)
    rc, out, err = check_config("-c", str(f.config))
    assert rc == 0, err
    bad = tmp_path / "bad.yaml"
    bad.write_text(f.config.read_text().replace("COUNT(*) AS n", "COUNT(nosuch) AS n"))
    rc, out, err = check_config("-c", str(bad), "--preflight")
    assert rc == 2 and "CREATE TABLE AS" in err and "nosuch" in err, err

    f.start()
    st = f.wait_stable()
    job_id = st["jobStatus"]["jobId"]
    assert "flinklet-sql: submitting the CREATE TABLE AS" in f.logs()
    assert "main() returned; the JVM runs job" in f.logs()
    c0 = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0)
    st = f.wait_checkpoint(c0 + 2, timeout=60)
    assert st["jvm"]["starts"] == 1 and st["jobStatus"]["state"] == "RUNNING", st
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    sp = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE", sp

    g = sql_flinklet(flinklets, CTAS, state_dir=f.state).start()
    assert g.wait_stable()["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"]), r
    g.signal(signal.SIGTERM)
    assert g.wait_exit(60) == 0

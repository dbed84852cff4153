"""A remote SQL script as the job (spec.job.sqlScript over http; issue 37), on the real MiniCluster: flinklet downloads
it as it does a remote jar (the same options, cache and events), beside a remote jar of the same job (jarURI over
http: the jar of UDFs and connectors a script may have), splits and checks it once downloaded, and gives the runner the
copy in its cache. The job runs RUNNING and checkpoints from the script's compiled plan kept on the volume; a new URI
(the configuration reloaded) upgrades it through a savepoint with the new script fetched; SIGTERM stops it with a
savepoint; with the server gone, the next start runs the cached script and restores that savepoint. A
served script with an SQL error is refused once downloaded, at the URI's line and column, and no JVM runs the job;
check-config takes a remote script's URI without fetching it (no network there) and refuses a scheme not allowed at
the value's line and column; export gives the operator the runner form with the script's place in a note."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time

from conftest import BIN, FLINK_HOME, JOBS_JAR, restored, wait_for
from sqlkit import config_text, events_of
from httpkit import Server
from testkit import free_port, norm

SCRIPT = """-- clicks per user, a grouped aggregation (keyed state)
SET 'pipeline.name' = 'remote-clicks';
CREATE TABLE clicks (user_id INT, url STRING) WITH (
  'connector' = 'datagen', 'rows-per-second' = '20', 'fields.user_id.min' = '1', 'fields.user_id.max' = '8'
);
CREATE TABLE per_user (user_id INT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO per_user SELECT user_id, COUNT(*) FROM clicks GROUP BY user_id;
"""

# line 4, column 3: a second INSERT outside a statement set
BAD = """CREATE TABLE a (x INT) WITH ('connector' = 'datagen');
CREATE TABLE b (x INT) WITH ('connector' = 'blackhole');
INSERT INTO b SELECT x FROM a;
  INSERT INTO b SELECT x + 1 FROM a;
"""

HTTP = {"flinklet.artifacts.allowed-schemes": "https,http"}


def served(tmp_path, text):
    root = tmp_path / "www"
    (root / "sql").mkdir(parents=True, exist_ok=True)
    (root / "sql" / "job.sql").write_text(text)
    shutil.copy(JOBS_JAR, root / "sql" / "udfs.jar")
    return Server(str(root))


def remote_flinklet(flinklets, srv, conf=None, jar=True, **kw):
    f = flinklets(name="sql-remote", conf={**HTTP, **(conf or {})}, **kw)
    text = config_text(f, None, script=f"http://127.0.0.1:{srv.port}/sql/job.sql")
    if jar:
        text += f"    jarURI: http://127.0.0.1:{srv.port}/sql/udfs.jar\n"
    f.write_config(raw=text)
    return f


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_remote_script_runs_stops_with_a_savepoint_and_restarts_from_its_cached_copy(flinklets, tmp_path):
    srv = served(tmp_path, SCRIPT)
    url = f"http://127.0.0.1:{srv.port}/sql/job.sql"
    f = remote_flinklet(flinklets, srv).start()
    st = f.wait_stable()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    # the jar, then the script: each downloaded once into the cache on the volume
    assert [p for p, _ in srv.requests] == ["/sql/udfs.jar", "/sql/job.sql"], srv.requests
    fetched = [e["message"] for e in events_of(f, "ArtifactFetched")]
    cached = os.path.join(f.state, "artifacts", f"uri-{sha256(url.encode())}.sql")
    assert len(fetched) == 2 and fetched[1] == f"fetched {url} into {cached}", fetched
    assert open(cached).read() == SCRIPT
    # the runner ran the cached copy, from its compiled plan named by the script's sha256
    logs = f.logs()
    assert "flinklet-sql: submitting the INSERT at" in logs and "flinklet-sql: compiled the script's plan" in logs
    assert "changed since flinklet read it" not in logs  # the runner got the sha256 of the copy flinklet checked
    assert os.listdir(os.path.join(f.state, "sql")) == [f"plan-{sha256(SCRIPT.encode())}.json"]
    assert f.rest("/jobs/overview")["jobs"][0]["name"] == "remote-clicks"  # the script's SET
    c0 = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0)
    f.wait_checkpoint(c0 + 2, timeout=30)

    # a new URI (the configuration reloaded): an upgrade through a savepoint that fetches the new script, whose plan
    # has the same operators, so that the state restores into them
    edited = "-- edited: another rate\n" + SCRIPT.replace("'20'", "'30'")
    (tmp_path / "www" / "sql" / "job-v2.sql").write_text(edited)
    url2 = url.replace("job.sql", "job-v2.sql")
    t1 = int(time.time() * 1000)
    f.write_config(raw=f.config.read_text().replace(url, url2))
    f.signal(signal.SIGHUP)  # (the file watch may have seen it first: one upgrade either way)
    sp = wait_for(lambda: events_of(f, "SavepointCompleted", t1), 60, "the upgrade's savepoint")[0]
    st = wait_for(lambda: (s := f.status())["jvm"]["pid"] not in (0, pid) and s["lifecycleState"] == "STABLE" and s,
                  90, "the upgraded job RUNNING")
    assert st["jobStatus"]["jobId"] == job_id and st["restoredFrom"]["kind"] == "savepoint", st
    assert [p for p, _ in srv.requests][2:] == ["/sql/job-v2.sql"], srv.requests  # the jar came from the cache
    assert events_of(f, "SqlPlanUnchanged", t1), [e["type"] for e in f.events()]
    r = restored(f, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) in sp["message"]
    assert sorted(os.listdir(os.path.join(f.state, "sql"))) == sorted(
        [f"plan-{sha256(SCRIPT.encode())}.json", f"plan-{sha256(edited.encode())}.json"])
    f.wait_checkpoint(r["id"] + 1, timeout=30)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(60) == 0
    last = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert last and last["triggerType"] == "UPGRADE", last

    srv.stop()  # no network any more: the cache serves the restart
    g = remote_flinklet(flinklets, srv, state_dir=f.state)
    g.write_config(raw=g.config.read_text().replace(url, url2))
    g.start()
    assert g.wait_stable()["jobStatus"]["jobId"] == job_id
    assert "ArtifactFetching" not in [e["type"] for e in g.new_events()]
    assert "flinklet-sql: running the compiled plan" in g.logs()
    r = restored(g, job_id)
    assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(last["location"])
    g.wait_checkpoint(r["id"] + 1, timeout=30)
    g.signal(signal.SIGTERM)
    assert g.wait_exit(60) == 0


def test_a_served_script_with_an_error_is_refused_after_its_download_without_a_jvm(flinklets, tmp_path):
    srv = served(tmp_path, BAD)
    url = f"http://127.0.0.1:{srv.port}/sql/job.sql"
    # the restart backoff short and one attempt: the launch that failed is retried once, then flinklet gives up
    f = remote_flinklet(flinklets, srv, jar=False,
                        conf={"flinklet.restart.max-attempts": "1", "flinklet.restart.backoff.initial": "100 ms"})
    f.start()
    assert f.wait_exit(60) == 1, f.logs()[-3000:]
    said = (f"{url}:4:3: spec.job.sqlScript: INSERT: a second job in the script (the first is the INSERT at line "
            "3): one INSERT, one EXECUTE STATEMENT SET BEGIN ... END; or one CREATE TABLE ... AS SELECT per script "
            "(put the INSERTs in one statement set)")
    refused = [e["message"] for e in events_of(f, "SqlScriptInvalid")]
    assert refused and refused[0] == (f"the job's SQL script {url} is refused, no JVM is started with it: {said}"), \
        refused
    types = [e["type"] for e in f.events()]
    assert "JvmStarted" not in types and "ArtifactFetched" not in types, types
    # downloaded again at the retry (a script mended on the server would be taken), never kept in the cache
    assert [p for p, _ in srv.requests] == ["/sql/job.sql"] * 2, srv.requests
    assert os.listdir(os.path.join(f.state, "artifacts")) == []
    errors = {e["source"]: e["message"] for e in f.status()["errors"]}
    assert said in errors.get("sqlScriptFetch", ""), errors
    srv.stop()


def check_config(*args):
    p = subprocess.run([BIN, "check-config", *args], capture_output=True, text=True, timeout=60,
                       env={"FLINK_HOME": FLINK_HOME, "PATH": "/usr/bin:/bin"})
    return p.returncode, p.stdout, p.stderr


def test_check_config_takes_a_remote_script_without_fetching_it(tmp_path):
    srv = served(tmp_path, BAD)  # an error it would say, were it read
    cfg = tmp_path / "flinklet.yaml"
    head = ("apiVersion: flink.apache.org/v1beta1\nkind: FlinkMiniCluster\nmetadata:\n  name: sql-remote\n"
            f"spec:\n  flinkConfiguration:\n    flinklet.state.dir: {tmp_path}/state\n")
    uri = f"http://u:hunter2@127.0.0.1:{srv.port}/sql/job.sql"
    cfg.write_text(head + "    flinklet.artifacts.allowed-schemes: https,http\n" + f"  job:\n    sqlScript: {uri}\n")
    t = time.monotonic()
    rc, out, err = check_config("-c", str(cfg), "--json")
    assert rc == 0 and time.monotonic() - t < 5, err
    assert srv.requests == [], "check-config fetched the script"
    job = json.loads(out)["spec"]["job"]
    assert job["sqlScript"] == f"http://***@127.0.0.1:{srv.port}/sql/job.sql" and "hunter2" not in out, job
    assert job["entryClass"] == "dev.flinklet.launcher.SqlScriptRunner"
    # --preflight neither: the planner's check of a remote script is left to the download, before the launch
    ports = f'    rest.port: "{free_port()}"\n    flinklet.http.address: "127.0.0.1:{free_port()}"\n'
    cfg.write_text(head + ports + "    flinklet.artifacts.allowed-schemes: https,http\n"
                   + f"  job:\n    sqlScript: {uri}\n")
    rc, out, err = check_config("-c", str(cfg), "--preflight")
    assert rc == 0 and srv.requests == [], err
    assert "the SQL script's URI (the script is checked once downloaded, before the launch)" in err, err
    # promoted to the operator: the runner form, whose runner reads a local file; the note says where the script goes
    p = subprocess.run([BIN, "export", "--to", "flinkdeployment", "-c", str(cfg)], capture_output=True, text=True,
                       timeout=60, env={"FLINK_HOME": FLINK_HOME, "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0 and srv.requests == [], p.stderr
    assert '    jarURI: "local:///opt/flink/lib/flinklet-launcher.jar"\n' in p.stdout
    assert '    args:\n    - "/opt/flink/usrlib/sql-scripts/sql-remote.sql"\n' in p.stdout
    assert (f"# note: put the SQL script at /opt/flink/usrlib/sql-scripts/sql-remote.sql (spec.job.sqlScript "
            f"http://***@127.0.0.1:{srv.port}/sql/job.sql is remote: the runner") in p.stdout, p.stdout
    assert "hunter2" not in p.stdout and "sqlScript:" not in p.stdout
    # http not listed: refused at the value's line and column, the credentials hidden
    cfg.write_text(head + f"  job:\n    sqlScript: {uri}\n")
    rc, out, err = check_config("-c", str(cfg))
    assert rc == 2 and out == ""
    assert err.strip() == (f"{cfg}:9:16: spec.job.sqlScript: the scheme http is not in "
                           "flinklet.artifacts.allowed-schemes (\"https,s3\"): list it there to download scripts over "
                           f"it (got \"http://***@127.0.0.1:{srv.port}/sql/job.sql\")"), err
    srv.stop()

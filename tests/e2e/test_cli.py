"""The command line of the real binary: check-config, status, usage errors and exit codes."""
import json
import os
import subprocess

from conftest import BIN, wait_for


def run(*args, env=None):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "FLINKLET_CONFIG": "", **(env or {})})


GOOD = """apiVersion: flink.apache.org/v1beta1
kind: FlinkMiniCluster
metadata:
  name: clicks-per-user
spec:
  flinkVersion: v2_2
  flinkConfiguration:
    execution.checkpointing.interval: 10s
    flinklet.state.dir: /var/lib/flinklet
  job:
    jarURI: local:///opt/flink/usrlib/clicks.jar
    entryClass: com.example.Clicks
    args: ["--window", "1m"]
    parallelism: 2
"""


def test_check_config_json_has_defaults(tmp_path):
    p = tmp_path / "flinklet.yaml"
    p.write_text(GOOD)
    r = run("check-config", "-c", str(p), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["metadata"]["name"] == "clicks-per-user"
    assert doc["spec"]["job"]["upgradeMode"] == "savepoint"
    fc = doc["spec"]["flinkConfiguration"]
    assert fc["execution.checkpointing.dir"] == "file:///var/lib/flinklet/checkpoints"
    assert fc["execution.checkpointing.externalized-checkpoint-retention"] == "RETAIN_ON_CANCELLATION"
    assert fc["flinklet.shutdown.timeout"] == "25 s"
    assert fc["taskmanager.numberOfTaskSlots"] == "2"
    # the JVM's scratch space is local, one per deployment (flinklet.scratch.dir's default)
    assert fc["flinklet.scratch.dir"].startswith(os.path.join(os.environ.get("TMPDIR") or "/tmp",
                                                              "flinklet-clicks-per-user-"))


def test_check_config_from_env_and_override(tmp_path):
    p = tmp_path / "flinklet.yaml"
    p.write_text(GOOD)
    r = run("check-config", "--json", "-D", "flinklet.state.dir=/data", env={"FLINKLET_CONFIG": str(p)})
    assert r.returncode == 0, r.stderr
    fc = json.loads(r.stdout)["spec"]["flinkConfiguration"]
    assert fc["flinklet.state.dir"] == "/data"
    assert fc["execution.checkpointing.savepoint-dir"] == "file:///data/savepoints"


def test_check_config_rejects_with_line_column_field(tmp_path):
    p = tmp_path / "flinklet.yaml"
    p.write_text(GOOD.replace("parallelism: 2", "parallelism: 2\n    upgradeMode: savepiont"))
    r = run("check-config", "-c", str(p))
    assert r.returncode == 2
    assert r.stdout == ""
    assert (f"{p}:15:18: spec.job.upgradeMode: must be one of stateless, savepoint, last-state "
            f"(got \"savepiont\")") in r.stderr


def test_unknown_field_did_you_mean(tmp_path):
    p = tmp_path / "flinklet.yaml"
    p.write_text(GOOD.replace("entryClass:", "entryClas:"))
    r = run("check-config", "-c", str(p))
    assert r.returncode == 2
    assert f"{p}:12:5: spec.job.entryClas: unknown field (did you mean \"entryClass\"?)" in r.stderr


def test_empty_and_binary_files_are_errors_not_crashes(tmp_path):
    for name, content in [("empty.yaml", b""), ("junk.yaml", b"\x00\x01\x02garbage"), ("list.yaml", b"- a\n- b\n"),
                          ("broken.yaml", b"spec: [unclosed\n")]:
        p = tmp_path / name
        p.write_bytes(content)
        r = run("check-config", "-c", str(p))
        assert r.returncode == 2, (name, r.stderr)
        assert str(p) in r.stderr


def test_missing_file_and_usage_errors(tmp_path):
    assert run("check-config", "-c", str(tmp_path / "nope.yaml")).returncode == 2
    assert run("frobnicate").returncode == 2
    assert run("run", "--bogus").returncode == 2
    r = run("version")
    assert r.returncode == 0 and r.stdout.startswith("flinklet ")


def test_status_of_empty_state_dir(tmp_path):
    r = run("status", "--state-dir", str(tmp_path))
    assert r.returncode == 3
    assert run("status", "--state-dir", str(tmp_path), "--ready").returncode == 1
    assert run("status", "--state-dir", str(tmp_path), "--live").returncode == 1


def test_status_reads_right_while_running_and_after_a_stop(flinklets):
    # issue 16, item 5: no "-1" exit code while the first JVM runs, no "4/4 tasks running" once nothing runs,
    # one spelling of file URIs, and a stopped job's status says what the next start does
    import signal

    f = flinklets().start()
    f.wait_stable()
    f.wait_checkpoint(2)
    r = subprocess.run([BIN, "status", "--state-dir", f.state], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "last exit none yet" in r.stdout and "code -1" not in r.stdout, r.stdout
    assert "tasks running" in r.stdout
    st = f.status()
    assert st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["location"].startswith("file:///")
    # a 202 says where the outcome will show
    code, body = f.http("/api/v1/savepoint", method="POST", token=f.token())
    assert code == 202 and "lastSavepoint" in json.loads(body)["result"], body
    wait_for(lambda: f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"], 60, "the MANUAL savepoint")
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
    assert sp.startswith("file:///"), sp
    r = subprocess.run([BIN, "status", "--state-dir", f.state], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "tasks running" not in r.stdout and "no JVM runs" in r.stdout, r.stdout
    assert "pid -," in r.stdout and "last exit code 0" in r.stdout, r.stdout
    assert f"next start       restores savepoint {sp}" in r.stdout, r.stdout
    # control commands without a supervisor name the reason
    r = subprocess.run([BIN, "savepoint", "--state-dir", f.state], capture_output=True, text=True, timeout=30)
    assert r.returncode == 3 and f"no flinklet is running for the state directory {f.state}" in r.stderr, r.stderr

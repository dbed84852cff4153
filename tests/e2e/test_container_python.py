"""A Python job in the image's Python variant (issue 37): the Flink Kubernetes Operator's
examples/flink-python-example as it is written (jarURI the distribution's opt/flink-python jar, entryClass
org.apache.flink.client.python.PythonDriver, args ["-py", script]; its python_demo.py, datagen -> print) in
flinklet's image built on the `python` base (scripts/container-base.sh VARIANT=python: Debian's Python and PyFlink
in /opt/pyflink, installed from scripts/pyflink-wheels.sh's wheels with no network, without PyFlink's own copy of
Flink's jars). Under the StatefulSet's restrictions (uid 9999, read-only root, no capabilities, no network) the
script's INSERT keeps RUNNING for a minute in its first JVM, `podman stop` ends it with a savepoint (exit 0), and
a new container on the same volume restores that savepoint."""
import json
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

from containerkit import (BIN, POD_SECURITY, ROOT, RUN_OPTS, STATE, build_base, build_image, flink_version, podman,
                          same_location, say, volume_path, volume_status)
from conftest import SANITIZER_LOGS, wait_for

pytestmark = [
    pytest.mark.skipif(shutil.which("podman") is None,
                       reason="podman is not installed: the container image can be neither built nor run"),
    # as test_container.py: make container-test runs it with build/flinklet, e2e-asan cannot (no sanitizer runtimes
    # in the image)
    pytest.mark.skipif(bool(SANITIZER_LOGS), reason="flinklet built with ASan/UBSan cannot run in the image "
                       "(no sanitizer runtimes there; make container-test runs this with build/flinklet)"),
]

# the operator example's job (examples/flink-python-example/python_demo.py)
SCRIPT = '''
from pyflink.table import EnvironmentSettings, TableEnvironment

t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.execute_sql("""
CREATE TABLE orders (
  order_number BIGINT,
  price        DECIMAL(32,2),
  buyer        ROW<first_name STRING, last_name STRING>
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '2'
)""")
t_env.execute_sql("CREATE TABLE print_table WITH ('connector' = 'print') LIKE orders (EXCLUDING OPTIONS)")
t_env.execute_sql("INSERT INTO print_table SELECT * FROM orders")
'''


def config(version):
    return f"""apiVersion: flink.apache.org/v1beta1
kind: FlinkMiniCluster
metadata:
  name: python-example
spec:
  flinkVersion: v{version.split(".")[0]}_{version.split(".")[1]}
  flinkConfiguration:
    execution.checkpointing.interval: "2s"
    python.client.executable: /opt/pyflink/bin/python
    python.executable: /opt/pyflink/bin/python
  job:
    jarURI: local:///opt/flink/opt/flink-python-{version}.jar
    entryClass: "org.apache.flink.client.python.PythonDriver"
    args: ["-py", "/opt/flink/usrlib/python_demo.py"]
    parallelism: 1
    upgradeMode: savepoint
"""


def stopped_message(volume):
    with open(volume_path(volume, f"file://{STATE}/events.jsonl")) as f:
        return [e for e in map(json.loads, filter(str.strip, f)) if e["type"] == "Stopped"][-1]["message"]


@pytest.fixture(scope="module")
def wheels():
    """scripts/pyflink-wheels.sh: PyFlink's wheels for the variant's offline build (made here when missing)."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "pyflink-wheels.sh"), flink_version()], capture_output=True,
                       text=True, timeout=1200)
    assert r.returncode == 0, f"scripts/pyflink-wheels.sh failed:\n{r.stderr[-3000:]}"


def test_operator_python_example_runs_a_minute_stops_with_a_savepoint_and_resumes(tmp_path, capsys, wheels):
    version = flink_version()
    base = build_base(capsys, variant="python")
    image = build_image(capsys, base, flavor="-python")
    assert os.path.exists(BIN)
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flinklet.yaml").write_text(config(version))
    (tmp_path / "python_demo.py").write_text(SCRIPT)
    for p in (conf, conf / "flinklet.yaml", tmp_path / "python_demo.py"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    volume = f"flinklet-py-{uuid.uuid4().hex[:8]}"
    name = f"flinklet-py-{uuid.uuid4().hex[:8]}"

    def run():
        podman("run", "-d", "--name", name, *RUN_OPTS, *POD_SECURITY, "-v", f"{volume}:{STATE}",
               "-v", f"{conf}:/etc/flinklet:ro", "-v", f"{tmp_path / 'python_demo.py'}:/opt/flink/usrlib/python_demo.py:ro",
               image)

    def status():
        r = podman("exec", name, "flinklet", "status", "--json", check=False, timeout=60)
        return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None

    def stable():
        if not podman("inspect", name).stdout or not json.loads(podman("inspect", name).stdout)[0]["State"]["Running"]:
            raise AssertionError(f"the container ended:\n{podman('logs', name, check=False).stdout[-4000:]}")
        st = status()
        return st if st and st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] > 0 else None

    podman("volume", "create", volume)
    try:
        t0 = time.monotonic()
        run()
        st = wait_for(stable, 240, "the Python job RUNNING in the container", interval=1)
        say(capsys, f"the Python job RUNNING {time.monotonic() - t0:.1f} s after podman run")
        pid = st["jvm"]["pid"]
        time.sleep(60)
        st = status()
        assert st["jvm"]["pid"] == pid and st["jvm"]["starts"] == 1, st["jvm"]
        assert st["jobStatus"]["state"] == "RUNNING" and st["lifecycleState"] == "STABLE", st
        assert (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0) >= 3, st["jobStatus"]
        logs = podman("logs", name).stdout + podman("logs", name).stderr
        assert "main() returned; the JVM runs job" in logs, logs[-3000:]
        assert "+I[" in logs, "no row reached the print sink"

        podman("stop", "-t", "40", name, timeout=90)
        assert json.loads(podman("inspect", name).stdout)[0]["State"]["ExitCode"] == 0, \
            podman("logs", name, check=False).stdout[-4000:]
        sp = volume_status(volume)["jobStatus"]["savepointInfo"]["lastSavepoint"]
        assert sp and sp["triggerType"] == "UPGRADE", sp
        podman("rm", "-f", name, check=False)

        # a new container on the same volume restores the stop's savepoint, or the checkpoint Flink completed after
        # it when the Stopped event says so (Flink fires one as the savepoint ends)
        after = re.search(r"Flink completed checkpoint (\d+) after it", stopped_message(volume))
        run()
        st = wait_for(stable, 240, "the second container's job RUNNING", interval=1)
        if after:
            assert st["restoredFrom"]["kind"] == "checkpoint" and \
                st["restoredFrom"]["location"].rstrip("/").endswith(f"/chk-{after.group(1)}"), st["restoredFrom"]
        else:
            assert st["restoredFrom"]["kind"] == "savepoint" and same_location(st["restoredFrom"]["location"],
                                                                                sp["location"]), st["restoredFrom"]
        podman("stop", "-t", "40", name, timeout=90)
        assert json.loads(podman("inspect", name).stdout)[0]["State"]["ExitCode"] == 0
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)
        podman("volume", "rm", "-f", volume, check=False)

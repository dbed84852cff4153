"""Python jobs (issue 37), in the Flink Kubernetes Operator's form (examples/flink-python-example): jarURI the
distribution's opt/flink-python jar, entryClass org.apache.flink.client.python.PythonDriver, args ["-py", script].
Flink's CLI finds opt/ through FLINK_OPT_DIR, which flinklet gives the JVM as bin/config.sh would; the script's
INSERT is submitted through py4j and main() returns, and flinklet's launcher keeps the JVM while the job runs. The
Python is a virtual environment with apache-flink from PyPI (scripts/pyflink-venv.sh, made here when missing,
about 3 minutes), named by python.client.executable (the script) and python.executable (the Python UDFs' workers).
Needs the distribution's runtime (make flink-lib: opt/ from PyPI's apache-flink-libraries).
"""
import glob
import os
import re
import subprocess
import time

import pytest

from conftest import FLINK_HOME, flink_version, restored, wait_for
from testkit import norm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DRIVER = "org.apache.flink.client.python.PythonDriver"

# the operator example's job (examples/flink-python-example/python_demo.py): datagen -> print
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

# the same with a Python UDF, whose workers the tasks start (python.executable)
UDF_SCRIPT = '''
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.udf import udf


@udf(result_type=DataTypes.STRING())
def label(n):
    return "py-%d" % (abs(n) % 10)


t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.create_temporary_function("label", label)
t_env.execute_sql("CREATE TABLE orders (order_number BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '2')")
t_env.execute_sql("CREATE TABLE print_table (order_number BIGINT, tag STRING) WITH ('connector' = 'print')")
t_env.execute_sql("INSERT INTO print_table SELECT order_number, label(order_number) FROM orders")
'''


@pytest.fixture(scope="module")
def python():
    """The venv's python, made by scripts/pyflink-venv.sh when missing; a skip only when pip cannot install it."""
    version = flink_version()
    venv = os.environ.get("FLINKLET_PYFLINK_VENV") or os.path.join(ROOT, "build", f"pyflink-{version}")
    r = subprocess.run([os.path.join(ROOT, "scripts", "pyflink-venv.sh"), version, venv,
                        os.path.join(ROOT, "build", "pypi")], capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        pytest.skip(f"apache-flink=={version} could not be installed from PyPI into {venv}: {r.stderr[-1500:]}")
    return os.path.join(venv, "bin", "python")


@pytest.fixture
def python_jar():
    jars = glob.glob(os.path.join(FLINK_HOME, "opt", "flink-python-*.jar"))
    assert jars, f"no opt/flink-python jar in {FLINK_HOME}: make flink-lib makes it from the distribution"
    return jars[0]


def pyjob(flinklets, python, python_jar, script, state_dir=None):
    return flinklets(name="py-orders", state_dir=state_dir, jar=python_jar, entry_class=DRIVER,
                     conf={"python.executable": python, "python.client.executable": python,
                           "execution.checkpointing.interval": "2s"},
                     job={"parallelism": 1, "args": ["-py", script]})


# asan_elsewhere: the launch, the stop and the restore run under ASan in test_app_mode.py; this one's own C path
# (preflight_python) in the test below. The first run installs PyFlink (3 minutes): tests/lanes.json counts it.
@pytest.mark.asan_elsewhere
def test_python_job_runs_in_its_first_jvm_and_resumes_from_its_savepoint(flinklets, python, python_jar, tmp_path):
    script = tmp_path / "python_demo.py"
    script.write_text(SCRIPT)
    f = pyjob(flinklets, python, python_jar, str(script))
    f.start()
    st = f.wait_stable(timeout=180)
    t0 = time.monotonic()
    job_id, pid = st["jobStatus"]["jobId"], st["jvm"]["pid"]
    assert "main() returned; the JVM runs job" in f.logs(), "PythonDriver's main() returned before the job ended"
    time.sleep(max(0.0, 61 - (time.monotonic() - t0)))
    c0 = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0)
    now = f.wait_checkpoint(c0 + 3, timeout=60)
    assert now["jvm"]["pid"] == pid and now["jvm"]["starts"] == 1, now["jvm"]
    assert now["jobStatus"]["state"] == "RUNNING" and now["lifecycleState"] == "STABLE", now
    assert "+I[" in f.logs(), "no row reached the print sink"

    f.signal(15)
    assert f.wait_exit(90) == 0
    st = f.status()
    sp = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
    assert sp and sp["triggerType"] == "UPGRADE" and st["lifecycleState"] == "SUSPENDED", st

    # Flink fires a periodic checkpoint as the stop's savepoint ends; when a task acks it before closing, that
    # checkpoint (the savepoint's state or later) is the restore point, and the Stopped event names it
    stopped = [e for e in f.new_events() if e["type"] == "Stopped"][-1]["message"]
    after = re.search(r"Flink completed checkpoint (\d+) after it", stopped)
    g = pyjob(flinklets, python, python_jar, str(script), state_dir=f.state).start()
    assert g.wait_stable(timeout=180)["jobStatus"]["jobId"] == job_id
    r = restored(g, job_id)
    if after:
        assert r["is_savepoint"] is False and r["id"] == int(after.group(1)), (r, stopped)
    else:
        assert r["is_savepoint"] is True and norm(r["external_path"]) == norm(sp["location"]), (r, stopped)
    g.signal(15)
    assert g.wait_exit(90) == 0


@pytest.mark.asan_elsewhere
def test_python_udf_runs_in_workers_of_python_executable(flinklets, python, python_jar, tmp_path):
    """PyFlink would serve the UDFs from the script's own process under `run -t local` (its loopback mode), and the
    script ends once it has submitted the job: flinklet has it start them as a cluster does, python.executable per
    task (process mode). The rows reach the sink through the UDF, the job keeps RUNNING in its first JVM, and a stop
    ends with its savepoint (exit 0)."""
    script = tmp_path / "udf_demo.py"
    script.write_text(UDF_SCRIPT)
    f = pyjob(flinklets, python, python_jar, str(script)).start()
    st = f.wait_stable(timeout=180)
    c0 = (st["jobStatus"]["checkpointInfo"]["lastCheckpoint"] or {}).get("id", 0)
    now = f.wait_checkpoint(c0 + 3, timeout=60)
    assert now["jvm"]["pid"] == st["jvm"]["pid"] and now["jvm"]["starts"] == 1, now["jvm"]
    assert now["jobStatus"]["state"] == "RUNNING", now
    assert wait_for(lambda: ", py-" in f.logs(), 30, "a row through the Python UDF in the print sink")
    # Beam's process environment: a worker process of python.executable, not the script's loopback server
    assert "ProcessEnvironmentFactory" in f.logs() or "sdk_worker_main" in f.logs(), f.logs()[-3000:]
    assert "loopback mode" not in f.logs()
    # the stop: Flink fires a checkpoint as the savepoint ends, which the UDF's task declines or acks; either way a
    # stop with a restore point no older than its savepoint
    f.signal(15)
    assert f.wait_exit(90) == 0
    assert not [e for e in f.new_events() if e["type"] == "SavepointFailed"]


def test_python_job_without_opt_flink_python_is_refused_before_a_jvm(flinklets, python_jar, tmp_path):
    """A Flink home without opt/ (the module jars' runtime, FLINK_RUNTIME=modules): Flink's CLI would fail inside
    the JVM (no flink-python jar under FLINK_OPT_DIR), at every restart; flinklet says so before any JVM, exit 2."""
    home = tmp_path / "home"
    (home / "lib").mkdir(parents=True)
    for jar in glob.glob(os.path.join(FLINK_HOME, "lib", "*.jar")):
        os.symlink(jar, home / "lib" / os.path.basename(jar))
    script = tmp_path / "python_demo.py"
    script.write_text(SCRIPT)
    f = pyjob(flinklets, "python3", python_jar, str(script))
    argv = f.argv
    f.argv = lambda: [str(home) if x == FLINK_HOME else x for x in argv()]
    f.start()
    assert f.wait_exit(30) == 2
    logs = f.logs()
    assert f"{home}/opt (" in logs and "no such directory" in logs and DRIVER in logs, logs[-2000:]
    assert "started the MiniCluster JVM" not in logs
    (home / "opt").mkdir()
    r = subprocess.run([f.argv()[0], "check-config", "--preflight", "-c", str(f.config), "--flink-home", str(home)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "flinklet.flink.home" in r.stderr and "there is none" in r.stderr, r.stderr

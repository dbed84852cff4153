"""Promotion: a job that outgrows one pod moves to a distributed Flink cluster through a savepoint, unchanged.
flinklet takes the savepoint, `flinklet export --to flinkdeployment` names it, and a real standalone cluster
(a JobManager and a TaskManager, two JVMs from the same jars) runs the same jar from it: the exactly-once
output continues without loss or duplicates."""
import json
import os
import shutil
import signal
import subprocess
import urllib.request

import pytest
import yaml

from testkit import JAVA17, LOG4J, norm
from conftest import BIN, FLINK_HOME, JOBS_JAR, check_output, free_port, wait_for
from operator_rules import violations

def rest(port, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(req, timeout=5) as r:
        body = r.read()
        return json.loads(body) if body else None


class Cluster:
    def __init__(self, tmp, flink_conf):
        self.dir = tmp / "cluster"
        self.conf = self.dir / "conf"
        self.conf.mkdir(parents=True)
        self.rest_port = free_port()
        conf = {
            "jobmanager.rpc.address": "localhost", "jobmanager.rpc.port": str(free_port()),
            "jobmanager.bind-host": "localhost", "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost", "rest.address": "localhost", "rest.port": str(self.rest_port),
            "rest.bind-address": "127.0.0.1", "jobmanager.memory.process.size": "1024m",
            "io.tmp.dirs": str(self.dir / "tmp"),
            # what Flink's taskmanager.sh would compute and pass (BashJavaUtils); a TaskManager started
            # without the script needs them spelled out
            "taskmanager.cpu.cores": "2", "taskmanager.memory.task.heap.size": "384m",
            "taskmanager.memory.task.off-heap.size": "0m", "taskmanager.memory.network.min": "64m",
            "taskmanager.memory.network.max": "64m", "taskmanager.memory.managed.size": "128m",
            "taskmanager.memory.framework.heap.size": "128m", "taskmanager.memory.framework.off-heap.size": "128m",
            "taskmanager.memory.jvm-metaspace.size": "256m", "taskmanager.memory.jvm-overhead.min": "192m",
            "taskmanager.memory.jvm-overhead.max": "192m", "taskmanager.numberOfTaskSlots": "2",
            "execution.checkpointing.dir": f"file://{self.dir}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"file://{self.dir}/savepoints",
            **flink_conf,
        }
        (self.dir / "tmp").mkdir()
        (self.conf / "config.yaml").write_text("".join(f"{json.dumps(k)}: {json.dumps(v)}\n" for k, v in conf.items()))
        (self.conf / "log4j-console.properties").write_text(LOG4J)
        self.procs = []
        self.log = open(self.dir / "cluster.log", "ab")

    def java(self, main, *args, heap="512m", detach=True):
        argv = [shutil.which("java"), f"-Xmx{heap}", *JAVA17,
                f"-Dlog4j.configurationFile=file:{self.conf}/log4j-console.properties",
                "-cp", f"{FLINK_HOME}/lib/*", main, *args]
        env = {**os.environ, "FLINK_CONF_DIR": str(self.conf)}
        if detach:
            p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            self.procs.append(p)
            return p
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180)

    def start(self):
        self.java("org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", "--configDir",
                  str(self.conf))
        self.java("org.apache.flink.runtime.taskexecutor.TaskManagerRunner", "--configDir", str(self.conf),
                  heap="768m")

        def up():
            try:
                o = rest(self.rest_port, "/overview")
                return o["taskmanagers"] == 1 and o["slots-total"] >= 2 and o
            except OSError:
                return None
        wait_for(up, 120, "the standalone JobManager with one TaskManager")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.log.close()


# asan_elsewhere: export runs under ASan in test_export (28 cases); what this adds is the real cluster's side
@pytest.mark.asan_elsewhere
def test_savepoint_export_and_a_real_cluster_continue_the_job(tmp_path, flinklets):
    # 1. the job under flinklet, stopped with a savepoint
    f = flinklets(job={"args": ["--rate", "200", "--keys", "8", "--output", "OUT"], "parallelism": 2}).start()
    f.wait_stable()
    f.wait_checkpoint(3)
    f.signal(signal.SIGTERM)
    assert f.wait_exit(30) == 0
    rc, before = check_output(f.output)
    assert rc == 0 and before["records"] > 0, before

    # 2. the FlinkDeployment that carries it
    storage = tmp_path / "shared-storage"  # what s3:// would be for a real cluster
    r = subprocess.run([BIN, "export", "--to", "flinkdeployment", "-c", str(f.config), "--state-dir", f.state,
                        "--flink-home", FLINK_HOME, "--storage-base", f"file://{storage}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    fd = yaml.safe_load(r.stdout)
    assert fd["kind"] == "FlinkDeployment" and fd["metadata"]["name"] == "e2e-counter"
    job = fd["spec"]["job"]
    assert job["jarURI"] == f"local://{JOBS_JAR}" and job["entryClass"] == "dev.flinklet.jobs.StatefulCounter"
    assert job["args"] == f.job["args"] and job["parallelism"] == 2
    assert violations(fd) == [], "the operator would not take it"
    sp = job["initialSavepointPath"]
    on_volume = f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
    assert os.path.basename(norm(sp)) == os.path.basename(norm(on_volume))
    assert norm(sp).startswith(f"{storage}/savepoints/")
    # step 1 of the header: copy the savepoint to the shared storage (a savepoint is self-contained)
    assert f"copy the savepoint directory file://{norm(on_volume)} to {sp}" in r.stdout
    shutil.copytree(norm(on_volume), norm(sp))
    conf = fd["spec"]["flinkConfiguration"]
    assert not [k for k in conf if k.startswith("flinklet.")]
    assert conf["execution.checkpointing.dir"] == f"file://{storage}/checkpoints"
    loopback = {"rest.bind-address", "rest.address", "jobmanager.bind-host", "taskmanager.bind-host",
                "web.submit.enable", "web.cancel.enable"} & set(conf)
    assert not loopback, f"flinklet's loopback listeners are not the cluster's: {loopback}"
    assert conf["execution.checkpointing.interval"] == "1s"
    # the operator 1.16's form (the default): Kubernetes' requests and limits
    assert all(fd["spec"][p]["resources"][s]["memory"] for p in ("jobManager", "taskManager")
               for s in ("requests", "limits"))

    # 3. a real distributed cluster runs the same jar from that savepoint
    cluster = Cluster(tmp_path, {k: v for k, v in conf.items() if k.startswith("execution.checkpointing.")})
    try:
        cluster.start()
        submit = cluster.java("org.apache.flink.client.cli.CliFrontend", "run", "-d", "-s", sp, "-c",
                              job["entryClass"], "-p", str(job["parallelism"]), norm(job["jarURI"].replace(
                                  "local://", "file://")), *job["args"], detach=False)
        assert submit.returncode == 0, submit.stdout[-3000:] + submit.stderr[-3000:]
        jid = wait_for(lambda: [j["id"] for j in rest(cluster.rest_port, "/jobs")["jobs"] if j["status"] == "RUNNING"],
                       120, "the job RUNNING on the cluster")[0]
        restored = wait_for(lambda: rest(cluster.rest_port, f"/jobs/{jid}/checkpoints")["latest"]["restored"], 60,
                            "the restore")
        assert restored["is_savepoint"] is True and norm(restored["external_path"]) == norm(sp)
        wait_for(lambda: rest(cluster.rest_port, f"/jobs/{jid}/checkpoints")["counts"]["completed"] >= 4, 120,
                 "checkpoints on the cluster")
        rest(cluster.rest_port, f"/jobs/{jid}?mode=cancel", method="PATCH")
        wait_for(lambda: rest(cluster.rest_port, f"/jobs/{jid}")["state"] == "CANCELED", 60, "the cancel")
    finally:
        cluster.stop()
    rc, after = check_output(f.output)
    assert rc == 0, after
    assert after["duplicates"] == 0 and after["gaps"] == 0
    assert after["records"] > before["records"], "the cluster continued the job's output"

"""`flinklet export --to flinkdeployment` against what the Flink Kubernetes Operator 1.15.0 accepts (issue 16,
item 1): every exported document is checked against the operator's own CRD schema and its admission rules
(operator_rules.py). With --storage-base the document must be accepted as it is; without, the operator's
objections must be exactly the things flinklet's notes (stderr) told the user to fill in. Machine-local values
(loopback listeners, file: jars, local paths) are left out or named. The real binary and Flink's jars (for the
version), no JVM: the promotion to a real cluster is test_promotion.py."""
import json
import struct
import subprocess

import pytest
import yaml

from conftest import BIN, FLINK_HOME
from operator_rules import violations

JOB_ID = "0123456789abcdef0123456789abcdef"
SAVEPOINT = "savepoint-012345-0123456789ab"  # Flink names it after the job id's first 6 digits


def state_with_savepoint(tmp_path, checkpoint_id=42):
    """A state directory as flinklet leaves it after a stop with savepoint (the _metadata header is Flink's)."""
    state = tmp_path / "state"
    sp = state / "savepoints" / SAVEPOINT
    sp.mkdir(parents=True)
    (state / "job-id").write_text(JOB_ID)
    (sp / "_metadata").write_bytes(struct.pack(">IIQ", 0x4960672D, 4, checkpoint_id) + b"\0" * 64)
    return state


def write_config(tmp_path, name="orders", conf=None, job=None):
    """flinklet.yaml; "{state}" in a value is the state directory of state_with_savepoint."""
    conf = {k: v.replace("{state}", str(tmp_path / "state")) for k, v in (conf or {}).items()}
    job = {"jarURI": "local:///opt/flink/usrlib/orders.jar", "entryClass": "com.example.Orders",
           "args": ["--topic", "orders"], "parallelism": 2, "upgradeMode": "savepoint", **(job or {})}
    doc = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkMiniCluster", "metadata": {"name": name},
           "spec": {"flinkConfiguration": conf, "job": job}}
    path = tmp_path / "flinklet.yaml"
    path.write_text(json.dumps(doc))
    return path


def export(config, state, *extra, flink_home=None):
    r = subprocess.run([BIN, "export", "--to", "flinkdeployment", "-c", str(config), "--state-dir", str(state),
                        "--flink-home", flink_home or FLINK_HOME, *extra], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return yaml.safe_load(r.stdout), r.stdout, r.stderr


# configurations a user could bring, each with something the operator would object to if copied as it is
CASES = {
    "defaults": ({}, {}),
    "last-state": ({}, {"upgradeMode": "last-state"}),
    "stateless": ({}, {"upgradeMode": "stateless"}),
    "user listeners": ({"rest.address": "127.0.0.1", "rest.bind-address": "0.0.0.0",
                        "jobmanager.bind-host": "127.0.0.1", "taskmanager.host": "localhost"}, {}),
    "operator-owned keys": ({"kubernetes.cluster-id": "orders", "high-availability.cluster-id": "x",
                             "kubernetes.namespace": "prod"}, {}),
    "rollback without HA": ({"kubernetes.operator.deployment.rollback.enabled": "true"}, {}),
    "health check without recovery": ({"kubernetes.operator.cluster.health-check.enabled": "true",
                                       "kubernetes.operator.jm-deployment-recovery.enabled": "false"}, {}),
    "periodic savepoints": ({"kubernetes.operator.periodic.savepoint.interval": "1 h"}, {"upgradeMode": "last-state"}),
    "old spellings of the dirs": ({"state.checkpoints.dir": "file://{state}/checkpoints",
                                   "state.savepoints.dir": "file://{state}/savepoints"}, {}),
    "file jar and local args": ({}, {"jarURI": "file:///home/me/orders.jar", "args": ["--out", "/data/out"]}),
    "autoscaler": ({"job.autoscaler.enabled": "true", "job.autoscaler.target.utilization": "0.6",
                    "job.autoscaler.target.utilization.boundary": "0.2"}, {}),
    "rocksdb": ({"state.backend.type": "rocksdb", "state.backend.incremental": "true"}, {}),
    "forst": ({"state.backend.type": "forst", "execution.checkpointing.incremental": "true"}, {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_export_with_storage_base_is_accepted_by_the_operator(tmp_path, case):
    conf, job = CASES[case]
    state = state_with_savepoint(tmp_path)
    config = write_config(tmp_path, conf=conf, job=job)
    doc, text, _ = export(config, state, "--storage-base", "s3://bucket/flink/orders/")
    assert violations(doc) == [], text
    spec = doc["spec"]
    assert spec["flinkVersion"] == "v2_2"
    fc = spec["flinkConfiguration"]
    assert fc["execution.checkpointing.dir"] == "s3://bucket/flink/orders/checkpoints"
    assert fc["execution.checkpointing.savepoint-dir"] == "s3://bucket/flink/orders/savepoints"
    assert "state.checkpoints.dir" not in fc and "state.savepoints.dir" not in fc
    assert spec["job"]["initialSavepointPath"] == f"s3://bucket/flink/orders/savepoints/{SAVEPOINT}"
    # nothing of this machine is left in the configuration: no flinklet key, loopback listener or local file
    assert not [k for k in fc if k.startswith("flinklet.")]
    local = {k: v for k, v in fc.items() if v.startswith("file:") or v in ("127.0.0.1", "localhost", "0.0.0.0")}
    assert not local, local
    # the header says the steps: copy the savepoint there, then apply
    assert f"copy the savepoint directory file://{state}/savepoints/{SAVEPOINT} to " \
           f"s3://bucket/flink/orders/savepoints/{SAVEPOINT}" in text
    assert "kubectl apply" in text
    # the savepoint format flinklet used goes with the job when the operator's default would fail it (forst)
    want = "NATIVE" if conf.get("state.backend.type") == "forst" else None
    assert fc.get("kubernetes.operator.savepoint.format.type") == want


@pytest.mark.parametrize("case", sorted(CASES))
def test_export_without_storage_names_everything_the_operator_would_reject(tmp_path, case):
    conf, job = CASES[case]
    state = state_with_savepoint(tmp_path)
    config = write_config(tmp_path, conf=conf, job=job)
    doc, text, err = export(config, state)
    found = violations(doc)
    # every objection of the operator is one the notes told the user to fill in, naming the key
    for v in found:
        key = ("execution.checkpointing.savepoint-dir" if "savepoint-dir" in v
               else "execution.checkpointing.dir" if "checkpointing.dir" in v else None)
        assert key, f"{case}: the operator would reject it for a reason flinklet did not say: {v}\n{err}"
        assert f"fill in {key}" in err, f"{case}: {v} but stderr does not say so:\n{err}"
    mode = job.get("upgradeMode", "savepoint")
    assert bool(found) == (mode != "stateless"), found
    # the savepoint on the volume: named, and the notes say to copy it
    assert doc["spec"]["job"]["initialSavepointPath"] == f"file://{state}/savepoints/{SAVEPOINT}"
    assert "copy that directory where the cluster can read it" in err
    # the notes are in the document's header too (for a file redirected from stdout)
    for line in err.splitlines():
        assert f"# note: {line.removeprefix('flinklet: export: ')}" in text


def test_machine_local_values_are_left_out_or_named(tmp_path):
    conf, job = CASES["user listeners"][0], CASES["file jar and local args"][1]
    conf = {**conf, **CASES["operator-owned keys"][0], **CASES["rollback without HA"][0], "io.tmp.dirs": "/scratch"}
    state = state_with_savepoint(tmp_path)
    doc, _, err = export(write_config(tmp_path, conf=conf, job=job), state, "--storage-base", "gs://b/o")
    fc = doc["spec"]["flinkConfiguration"]
    for k in ("rest.address", "rest.bind-address", "jobmanager.bind-host", "taskmanager.host",
              "kubernetes.cluster-id", "high-availability.cluster-id", "kubernetes.namespace",
              "kubernetes.operator.deployment.rollback.enabled"):
        assert k not in fc, k
        assert f"left out {k}" in err, f"{k} left out without a word:\n{err}"
    assert fc["io.tmp.dirs"] == "/scratch" and "check io.tmp.dirs: /scratch" in err
    assert "fill in jarURI: file:///home/me/orders.jar" in err
    assert "check job.args[1]: /data/out" in err
    assert violations(doc) == []


def test_name_the_operator_would_refuse_is_made_acceptable(tmp_path):
    name = "9-lives-of-a-job-whose-name-is-longer-than-the-operator-takes"
    state = state_with_savepoint(tmp_path)
    doc, _, err = export(write_config(tmp_path, name=name), state, "--storage-base", "s3://b")
    new = doc["metadata"]["name"]
    assert violations(doc) == [] and new != name and len(new) <= 45
    assert f"metadata.name is {new} instead of {name}" in err


def test_no_flink_jars_no_savepoint_said_and_rejected_only_for_that(tmp_path):
    state = tmp_path / "empty-state"
    state.mkdir()
    doc, _, err = export(write_config(tmp_path), state, "--storage-base", "s3://b", flink_home=str(tmp_path / "none"))
    assert "fill in spec.flinkVersion" in err
    assert "no savepoint of this job on the volume" in err
    assert "initialSavepointPath" not in doc["spec"]["job"]  # not null: the schema has no nullable string
    assert violations(doc) == ["Flink Version must be defined."]


def test_savepoint_base_still_wins_for_the_savepoint(tmp_path):
    state = state_with_savepoint(tmp_path)
    doc, _, _ = export(write_config(tmp_path), state, "--storage-base", "s3://b/orders",
                       "--savepoint-base", "s3://elsewhere/copied")
    assert doc["spec"]["job"]["initialSavepointPath"] == f"s3://elsewhere/copied/{SAVEPOINT}"
    assert doc["spec"]["flinkConfiguration"]["execution.checkpointing.savepoint-dir"] == "s3://b/orders/savepoints"
    assert violations(doc) == []

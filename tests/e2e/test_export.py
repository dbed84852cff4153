"""`flinklet export --to flinkdeployment` against what the Flink Kubernetes Operator accepts (issue 16, item 1;
issue 27, item 1): every exported document is checked against the operator's own CRD schema and its admission
rules (operator_rules.py), for 1.16 (the default form: `resources` with requests and limits) and 1.15
(`--operator-version 1.15`: `resource: {cpu, memory}`). With --storage-base the document must be accepted as it
is; without, the operator's objections must be exactly the things flinklet's notes (stderr) told the user to fill
in. Machine-local values (loopback listeners, file: jars, local paths) are left out or named. flinkVersion comes
from Flink's jars, else from the Flink version the state directory's status.json records. The real binary and
Flink's jars (for the version), no JVM: the promotion to a real cluster is test_promotion.py."""
import json
import os
import struct
import subprocess

import pytest
import yaml

from conftest import BIN, FLINK_HOME
from operator_rules import k8s_quantity, operator_memory_bytes, violations

JOB_ID = "0123456789abcdef0123456789abcdef"
SAVEPOINT = "savepoint-012345-0123456789ab"  # Flink names it after the job id's first 6 digits
OPERATORS = ("1.16", "1.15")
NO_JARS = object()  # export without --flink-home, and no Flink where $FLINK_HOME points


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


def write_status(state, flink_version):
    """status.json as flinklet leaves it after a stop with savepoint, run on Flink `flink_version`."""
    location = f"file://{state}/savepoints/{SAVEPOINT}"
    doc = {"lifecycleState": "SUSPENDED", "name": "orders",
           "jobStatus": {"jobId": JOB_ID, "state": "SUSPENDED", "tasks": {"total": 2, "running": 0},
                         "savepointInfo": {"lastSavepoint": {"location": location, "timeStamp": 1795987704564,
                                                             "triggerType": "UPGRADE"}}},
           "restoredFrom": {"kind": "none", "location": None},
           "jvm": {"pid": 0, "restarts": 0, "lastExitCode": 0, "lastExitSignal": None},
           "flink": {"version": flink_version, "restPort": 8081}, "intent": None, "error": None}
    (state / "status.json").write_text(json.dumps(doc, indent=1))


def export(config, state, *extra, flink_home=None, operator=None):
    """Exports for `operator` (None: the default, no --operator-version). flink_home NO_JARS: no Flink's jars."""
    env = dict(os.environ)
    home = []
    if flink_home is NO_JARS:
        env["FLINK_HOME"] = str(state.parent / "no-flink-here")
    else:
        home = ["--flink-home", flink_home or FLINK_HOME]
    op = ["--operator-version", operator] if operator else []
    r = subprocess.run([BIN, "export", "--to", "flinkdeployment", "-c", str(config), "--state-dir", str(state),
                        *home, *op, *extra], capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    return yaml.safe_load(r.stdout), r.stdout, r.stderr


def assert_resource_form(doc, operator):
    """1.16: Kubernetes' requests and limits, read alike by Kubernetes and the operator; 1.15: `resource`."""
    for part in ("jobManager", "taskManager"):
        spec = doc["spec"][part]
        if operator == "1.15":
            assert "resources" not in spec and spec["resource"]["memory"], spec
            continue
        assert "resource" not in spec, f"{part}: the deprecated resource next to resources: {spec}"
        for section in ("requests", "limits"):
            q = spec["resources"][section]
            # "1024m" would be 1 GiB to the operator and about a byte to Kubernetes: both must read the same
            assert k8s_quantity(q["memory"]) == operator_memory_bytes(q["memory"]), q
            assert k8s_quantity(q["cpu"]) > 0, q


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
    "limit factors": ({"kubernetes.taskmanager.cpu.limit-factor": "2",
                       "kubernetes.jobmanager.memory.limit-factor": "1.5"}, {}),
    "autoscaler window shorter than a reconcile": (
        {"job.autoscaler.enabled": "true", "job.autoscaler.metrics.window": "30 s"}, {}),
}


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_export_with_storage_base_is_accepted_by_the_operator(tmp_path, case, operator):
    conf, job = CASES[case]
    state = state_with_savepoint(tmp_path)
    config = write_config(tmp_path, conf=conf, job=job)
    doc, text, _ = export(config, state, "--storage-base", "s3://bucket/flink/orders/", operator=operator)
    assert violations(doc, operator) == [], text
    assert f"for the Flink Kubernetes Operator {operator}," in text
    assert_resource_form(doc, operator)
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


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_export_without_storage_names_everything_the_operator_would_reject(tmp_path, case, operator):
    conf, job = CASES[case]
    state = state_with_savepoint(tmp_path)
    config = write_config(tmp_path, conf=conf, job=job)
    doc, text, err = export(config, state, operator=operator)
    found = violations(doc, operator)
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


@pytest.mark.parametrize("operator", OPERATORS)
def test_no_flink_jars_no_savepoint_said_and_rejected_only_for_that(tmp_path, operator):
    state = tmp_path / "empty-state"
    state.mkdir()
    doc, _, err = export(write_config(tmp_path), state, "--storage-base", "s3://b", flink_home=str(tmp_path / "none"),
                         operator=operator)
    assert "fill in spec.flinkVersion" in err and "the state directory records no Flink version" in err
    assert "no savepoint of this job on the volume" in err
    assert "initialSavepointPath" not in doc["spec"]["job"]  # not null: the schema has no nullable string
    assert violations(doc, operator) == ["Flink Version must be defined."]


# where the Flink version comes from -> (flinkVersion, image); None: the operator's CRD has no label for it
SOURCES = {
    "jars (--flink-home)": (None, "v2_2", "flink:2.2.1-java17"),
    "status.json 2.2.1, no jars": ("2.2.1", "v2_2", "flink:2.2.1-java17"),
    "status.json 2.3.0, no jars": ("2.3.0", "v2_3", "flink:2.3.0-java17"),
}


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_both_forms_with_and_without_flink_home(tmp_path, source, operator):
    recorded, label, image = SOURCES[source]
    state = state_with_savepoint(tmp_path)
    if recorded:
        write_status(state, recorded)
    doc, text, err = export(write_config(tmp_path), state, "--storage-base", "s3://b/orders", operator=operator,
                            flink_home=NO_JARS if recorded else None)
    spec = doc["spec"]
    assert spec["image"] == image
    assert_resource_form(doc, operator)
    if operator == "1.15" and label == "v2_3":
        # the operator 1.15 supports Flink up to 2.2: its CRD has no v2_3, and the notes say so
        assert "flinkVersion" not in spec
        assert "left out flinkVersion v2_3: the operator 1.15 knows Flink up to v2_2" in err
        assert violations(doc, operator) == ["Flink Version must be defined."]
        return
    assert spec["flinkVersion"] == label
    assert violations(doc, operator) == [], text
    if recorded:
        assert f"flinkVersion {label} is the Flink the job last ran with ({recorded}, recorded in " \
               f"{state}/status.json)" in err
    # the operator 1.16 still takes 1.15's form (deprecated); 1.15 would drop 1.16's resources and find no memory
    other = "1.15" if operator == "1.16" else "1.16"
    if operator == "1.15":
        assert violations(doc, other) == []
    else:
        found = violations(doc, other)
        for part in ("jobManager", "taskManager"):
            assert f"spec.{part}.resources: unknown to the operator 1.15's CRD (the API server drops it)" in found
            name = part[0].upper() + part[1:]
            assert f"{name} resource memory must be defined using `spec.{part}.resource.memory`" in found


@pytest.mark.parametrize("recorded,label", [("2.2.1", "v2_2"), ("2.3.0", "v2_3")])
def test_flink_version_from_the_state_directory_when_the_jars_are_not_at_hand(tmp_path, recorded, label):
    """Issue 27, defect 1: without --flink-home (and no Flink at $FLINK_HOME) the export left flinkVersion out
    ("Flink's jars were not found") although status.json records the version the job ran with. The default
    operator, no new option: the same command a user ran."""
    state = state_with_savepoint(tmp_path)
    write_status(state, recorded)
    doc, text, err = export(write_config(tmp_path), state, "--storage-base", "s3://b/orders", flink_home=NO_JARS)
    assert doc["spec"].get("flinkVersion") == label, err
    assert doc["spec"]["image"] == f"flink:{recorded}-java17"
    assert "fill in spec.flinkVersion" not in err
    assert violations(doc) == [], text


def test_jars_win_over_the_recorded_version_and_the_difference_is_said(tmp_path):
    state = state_with_savepoint(tmp_path)
    write_status(state, "2.1.1")
    doc, _, err = export(write_config(tmp_path), state, "--storage-base", "s3://b/orders")
    assert doc["spec"]["flinkVersion"] == "v2_2" and doc["spec"]["image"] == "flink:2.2.1-java17"
    assert f"the job last ran on Flink 2.1.1 ({state}/status.json); flinkVersion and image follow the jars" in err


@pytest.mark.parametrize("given", ["1.14", "1.17", "2.0", "1.16x", "1.16.", "v1.16", ""])
def test_unknown_operator_version_is_refused(tmp_path, given):
    state = state_with_savepoint(tmp_path)
    r = subprocess.run([BIN, "export", "--to", "flinkdeployment", "-c", str(write_config(tmp_path)), "--state-dir",
                        str(state), "--flink-home", FLINK_HOME, "--operator-version", given],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert f'--operator-version: "{given}" is not an operator version' in r.stderr
    assert "1.16" in r.stderr and "1.15" in r.stderr


@pytest.mark.parametrize("given,form", [("1.16.1", "resources"), ("1.15.0", "resource"), ("1.16", "resources")])
def test_operator_version_with_a_patch_number(tmp_path, given, form):
    doc, _, _ = export(write_config(tmp_path), state_with_savepoint(tmp_path), "--storage-base", "s3://b",
                       operator=given)
    assert form in doc["spec"]["taskManager"]


def test_default_resources_are_the_split_of_the_pod(tmp_path):
    """The 1.16 form says what 1.15's did: the TaskManager the pod's budget, the JobManager a quarter (at least
    1 GiB and half a core); limits equal to requests (the operator's limit factor 1) unless a factor says more."""
    state = state_with_savepoint(tmp_path)
    config = write_config(tmp_path, conf=CASES["limit factors"][0])
    doc = yaml.safe_load(config.read_text())
    doc["spec"]["resources"] = {"memory": "6g", "cpu": "3"}
    config.write_text(json.dumps(doc))
    fd, _, _ = export(config, state, "--storage-base", "s3://b")
    jm, tm = fd["spec"]["jobManager"]["resources"], fd["spec"]["taskManager"]["resources"]
    gib = 2**30
    assert operator_memory_bytes(tm["requests"]["memory"]) == 6 * gib and k8s_quantity(tm["requests"]["cpu"]) == 3
    assert operator_memory_bytes(tm["limits"]["memory"]) == 6 * gib and k8s_quantity(tm["limits"]["cpu"]) == 6
    assert operator_memory_bytes(jm["requests"]["memory"]) == 1.5 * gib and k8s_quantity(jm["requests"]["cpu"]) == 0.75
    assert operator_memory_bytes(jm["limits"]["memory"]) == 2.25 * gib and k8s_quantity(jm["limits"]["cpu"]) == 0.75
    fd15, _, _ = export(config, state, "--storage-base", "s3://b", operator="1.15")
    assert fd15["spec"]["taskManager"]["resource"] == {"memory": "6144m", "cpu": 3}
    assert fd15["spec"]["jobManager"]["resource"] == {"memory": "1536m", "cpu": 0.75}


@pytest.mark.parametrize("operator", OPERATORS)
def test_autoscaler_window_the_operator_cannot_fill_is_left_out(tmp_path, operator):
    state = state_with_savepoint(tmp_path)
    doc, _, err = export(write_config(tmp_path, conf=CASES["autoscaler window shorter than a reconcile"][0]), state,
                         "--storage-base", "s3://b", operator=operator)
    fc = doc["spec"]["flinkConfiguration"]
    assert fc["job.autoscaler.enabled"] == "true" and "job.autoscaler.metrics.window" not in fc
    assert "left out job.autoscaler.metrics.window: 30 s (shorter than the operator's reconcile interval, 60 s" in err
    # a reconcile interval the user set for the operator is the measure
    doc, _, err = export(write_config(tmp_path, conf={**CASES["autoscaler window shorter than a reconcile"][0],
                                                      "kubernetes.operator.reconcile.interval": "15 s"}),
                         state, "--storage-base", "s3://b", operator=operator)
    assert doc["spec"]["flinkConfiguration"]["job.autoscaler.metrics.window"] == "30 s"
    assert violations(doc, operator) == [] and "metrics.window" not in err


def test_savepoint_base_still_wins_for_the_savepoint(tmp_path):
    state = state_with_savepoint(tmp_path)
    doc, _, _ = export(write_config(tmp_path), state, "--storage-base", "s3://b/orders",
                       "--savepoint-base", "s3://elsewhere/copied")
    assert doc["spec"]["job"]["initialSavepointPath"] == f"s3://elsewhere/copied/{SAVEPOINT}"
    assert doc["spec"]["flinkConfiguration"]["execution.checkpointing.savepoint-dir"] == "s3://b/orders/savepoints"
    assert violations(doc) == []


def test_the_rules_refuse_what_each_operator_refuses(tmp_path):
    """operator_rules.py is the measure of every test above: it must refuse what the operators refuse."""
    doc, _, _ = export(write_config(tmp_path), state_with_savepoint(tmp_path), "--storage-base", "s3://b")
    assert violations(doc, "1.16") == []

    def broken(change, operator="1.16"):
        d = json.loads(json.dumps(doc))
        change(d["spec"])
        return violations(d, operator)

    tm = lambda s: s["taskManager"]["resources"]  # noqa: E731
    assert broken(lambda s: tm(s)["requests"].update(cpu="4")) == [
        "TaskManager resource requirements cpu request must not exceed its limit"]
    assert broken(lambda s: tm(s)["limits"].update(memory="1Mi")) == [
        "TaskManager resource requirements memory request must not exceed its limit"]
    assert broken(lambda s: tm(s)["requests"].update(memory="lots"))[0].startswith(
        "TaskManager resource requirements requests memory parse error")
    assert broken(lambda s: tm(s)["limits"].update(cpu="0")) == [
        "TaskManager resource requirements limits cpu must be positive: 0",
        "TaskManager resource requirements cpu request must not exceed its limit"]
    assert broken(lambda s: s["taskManager"].pop("resources")) == [
        "TaskManager resource memory must be defined using `spec.taskManager.resource.memory` or "
        "`spec.taskManager.resources.requests.memory`"]
    short_window = {"job.autoscaler.enabled": "true", "job.autoscaler.metrics.window": "30 s"}
    assert broken(lambda s: s["flinkConfiguration"].update(short_window))[0].startswith("The autoscaler metric window")
    doc15, _, _ = export(write_config(tmp_path), state_with_savepoint(tmp_path / "15"), "--storage-base", "s3://b",
                         operator="1.15")
    doc15["spec"]["flinkConfiguration"].update(short_window)
    assert violations(doc15, "1.15") == []  # a rule 1.16 added
    assert broken(lambda s: s.update(flinkVersion="v2_3"), "1.15")[0].startswith(
        "schema: spec/flinkVersion: 'v2_3' is not one of")
    assert broken(lambda s: s.update(flinkVersion="v2_4"), "1.16") == []

"""The Kubernetes manifests in conf/kubernetes/ agree with the configuration they ship: every manifest parses, the
ConfigMap's document passes the real `flinklet check-config`, and the probes, ports, mounts, token path, grace
period and security context of the StatefulSet match that configuration's effective values. Where kubectl is
installed, `kubectl kustomize` builds the set offline and, where a cluster answers, a client-side dry run
applies it."""
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "conf", "kubernetes")


def manifests():
    """{file name: [documents]} of every manifest."""
    out = {}
    for name in sorted(os.listdir(K8S)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(K8S, name)) as f:
                out[name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return out


def objects():
    """{(kind, name): object} of every Kubernetes object (the kustomization is not one)."""
    objs = {}
    for name, docs in manifests().items():
        for d in docs:
            if d.get("kind") == "Kustomization":
                continue
            key = (d["kind"], d["metadata"]["name"])
            assert key not in objs, f"{key} defined twice"
            objs[key] = d
    return objs


def one(kind):
    found = [o for (k, _), o in objects().items() if k == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def flink_seconds(value):
    """A Flink duration ("45 s", "500ms", "2 min", "1h", a bare number of milliseconds) in seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(value))
    assert m, value
    n, unit = float(m.group(1)), m.group(2)
    scale = {"": 0.001, "ms": 0.001, "milli": 0.001, "millis": 0.001, "s": 1, "sec": 1, "secs": 1, "second": 1,
             "seconds": 1, "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600,
             "hours": 3600, "d": 86400, "day": 86400, "days": 86400}
    return n * scale[unit]


def k8s_bytes(value):
    """A Kubernetes quantity (2304Mi, 2G) or a flinklet memory size (2048m, 2g) in bytes."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([a-zA-Z]*)", str(value))
    assert m, value
    n, unit = float(m.group(1)), m.group(2)
    scale = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3,
             "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "mb": 1024 ** 2, "gb": 1024 ** 3}
    return n * scale[unit]


@pytest.fixture(scope="module")
def effective(tmp_path_factory):
    """The ConfigMap's document through the real `flinklet check-config --json`: every default filled in."""
    cm = one("ConfigMap")
    assert list(cm["data"]) == ["flinklet.yaml"], "the ConfigMap holds the one configuration document"
    path = tmp_path_factory.mktemp("configmap") / "flinklet.yaml"
    path.write_text(cm["data"]["flinklet.yaml"])
    r = subprocess.run([BIN, "check-config", "-c", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, f"check-config rejects the shipped ConfigMap:\n{r.stdout}{r.stderr}"
    r = subprocess.run([BIN, "check-config", "-c", str(path), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def container(sts):
    cs = sts["spec"]["template"]["spec"]["containers"]
    assert len(cs) == 1, "one container: flinklet is PID 1 of the pod's only container"
    return cs[0]


def port_number(c, port):
    if isinstance(port, int):
        return port
    by_name = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert port in by_name, f"port {port!r} is not one of the container's {sorted(by_name)}"
    return by_name[port]


def mount_of_volume(sts, predicate):
    """The volumeMounts of the volumes that satisfy predicate(volume)."""
    pod = sts["spec"]["template"]["spec"]
    names = {v["name"] for v in pod.get("volumes", []) if predicate(v)}
    return [m for m in container(sts)["volumeMounts"] if m["name"] in names]


def test_every_manifest_parses_and_the_kustomization_lists_them():
    ms = manifests()
    assert {"statefulset.yaml", "configmap.yaml", "secret.yaml", "service.yaml"} <= set(ms)
    for name, docs in ms.items():
        assert docs, f"{name} is empty"
        for d in docs:
            assert d.get("apiVersion") and d.get("kind"), f"{name}: a document without apiVersion/kind"
            if d["kind"] != "Kustomization":
                assert d["metadata"]["name"], name
    kinds = sorted(k for k, _ in objects())
    assert kinds == ["ConfigMap", "Secret", "Service", "Service", "StatefulSet"], kinds
    kust = ms["kustomization.yaml"][0]
    assert sorted(kust["resources"]) == sorted(n for n in ms if n != "kustomization.yaml")


def test_shipped_configuration_passes_check_config(effective):
    fc = effective["spec"]["flinkConfiguration"]
    assert effective["spec"]["job"]["upgradeMode"] == "savepoint"
    assert fc["flinklet.state.dir"].startswith("/")


def test_statefulset_is_one_pod_with_its_own_volume(effective):
    sts = one("StatefulSet")
    spec = sts["spec"]
    assert spec["replicas"] == 1
    # OrderedReady would let a pod that never gets ready (crash loop, long restore, suspended job) block every
    # later template change, a rollback included, until the pod is deleted by hand
    assert spec["podManagementPolicy"] == "Parallel"
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    # the governing Service is headless
    gov = objects()[("Service", spec["serviceName"])]
    assert gov["spec"].get("clusterIP") == "None"
    # the state directory is the volume claim
    claims = {t["metadata"]["name"] for t in spec["volumeClaimTemplates"]}
    state_mounts = [m for m in container(sts)["volumeMounts"] if m["name"] in claims]
    assert len(state_mounts) == 1
    assert state_mounts[0]["mountPath"] == effective["spec"]["flinkConfiguration"]["flinklet.state.dir"]
    assert not state_mounts[0].get("readOnly")


def test_probes_and_ports_agree_with_the_configuration(effective):
    fc = effective["spec"]["flinkConfiguration"]
    sts = one("StatefulSet")
    c = container(sts)
    host, _, port = fc["flinklet.http.address"].rpartition(":")
    assert host not in ("127.0.0.1", "localhost", "::1"), "the kubelet probes the pod's IP, not its loopback"
    supervisor = int(port)
    probes = {k: c[k] for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    for name, p in probes.items():
        assert port_number(c, p["httpGet"]["port"]) == supervisor, f"{name} probes another port"
    # one port: flinklet's, which also serves Flink's web UI under /flink/; Flink's own REST port (no credential,
    # it cancels and stops the job) is neither a container port nor a Service's, and listens on loopback
    rest = int(fc["rest.port"])
    ports = {p["containerPort"] for p in c["ports"]}
    assert ports == {supervisor}, ports
    assert fc.get("rest.bind-address", "127.0.0.1") in ("127.0.0.1", "localhost", "::1")
    # every Service selects the pod and reaches ports the container has
    labels = sts["spec"]["template"]["metadata"]["labels"]
    exposed = set()
    for (kind, _), svc in objects().items():
        if kind != "Service":
            continue
        assert svc["spec"]["selector"].items() <= labels.items()
        for p in svc["spec"]["ports"]:
            exposed.add(port_number(c, p.get("targetPort", p["port"])))
    assert exposed == {supervisor} and rest not in exposed, "only flinklet's endpoint is exposed"


def test_configuration_and_token_mounts_agree(effective):
    fc = effective["spec"]["flinkConfiguration"]
    sts = one("StatefulSet")
    c = container(sts)
    cm, secret = one("ConfigMap"), one("Secret")
    # the configuration file flinklet reads is the ConfigMap's key, mounted as a directory (no subPath, so that
    # ConfigMap edits reach the pod)
    args = c.get("args", [])
    config = args[args.index("-c") + 1] if "-c" in args else "/etc/flinklet/flinklet.yaml"
    cm_mounts = mount_of_volume(sts, lambda v: v.get("configMap", {}).get("name") == cm["metadata"]["name"])
    assert len(cm_mounts) == 1 and "subPath" not in cm_mounts[0]
    assert os.path.dirname(config) == cm_mounts[0]["mountPath"].rstrip("/")
    assert os.path.basename(config) in cm["data"]
    # flinklet.http.token-file is a key of the Secret, at the Secret's mount
    token = fc["flinklet.http.token-file"]
    sec_mounts = mount_of_volume(sts, lambda v: v.get("secret", {}).get("secretName") == secret["metadata"]["name"])
    assert len(sec_mounts) == 1 and sec_mounts[0].get("readOnly")
    assert os.path.dirname(token) == sec_mounts[0]["mountPath"].rstrip("/")
    keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
    assert os.path.basename(token) in keys
    # the pod runs as 9999, so the token file must be readable by its group (fsGroup)
    pod = sts["spec"]["template"]["spec"]
    sec_volume = next(v for v in pod["volumes"] if v.get("secret"))
    assert sec_volume["secret"]["defaultMode"] & 0o040 and pod["securityContext"]["fsGroup"] == 9999


def test_shipped_token_placeholder_is_refused():
    # a token published in the repository must never be a working one: flinklet wants at least 16 characters
    secret = one("Secret")
    assert all(len(v) < 16 for v in secret.get("stringData", {}).values())


def test_grace_period_covers_the_shutdown_budget(effective):
    fc = effective["spec"]["flinkConfiguration"]
    sts = one("StatefulSet")
    grace = sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    budget = flink_seconds(fc["flinklet.shutdown.timeout"])
    assert grace > budget, f"terminationGracePeriodSeconds {grace} must exceed flinklet.shutdown.timeout {budget}s"
    assert flink_seconds(fc["flinklet.jvm.stop-grace-period"]) < budget


def test_restricted_security_context_and_memory(effective):
    sts = one("StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    c = container(sts)
    psc, csc = pod["securityContext"], c["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] == 9999
    assert psc["seccompProfile"]["type"] == "RuntimeDefault"
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["capabilities"]["drop"] == ["ALL"] and not csc["capabilities"].get("add")
    assert csc["readOnlyRootFilesystem"] is True
    # with a read-only root, /tmp (the JVM's hsperfdata) and Flink's scratch are emptyDirs
    tmp = mount_of_volume(sts, lambda v: "emptyDir" in v)
    assert sorted(m["mountPath"] for m in tmp) == sorted(["/tmp", effective["spec"]["flinkConfiguration"]
                                                          ["flinklet.scratch.dir"]])
    # spec.resources.memory is the whole pod's budget (flinklet splits it, flinklet itself included): at most the
    # pod's memory limit
    budget = k8s_bytes(effective["spec"]["resources"]["memory"])
    limit = k8s_bytes(c["resources"]["limits"]["memory"])
    assert budget <= limit, f"spec.resources.memory {budget} must fit in the pod's limit {limit}"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_kustomize_builds_the_set_offline():
    r = subprocess.run(["kubectl", "kustomize", K8S], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(r.stdout) if d)
    assert kinds == ["ConfigMap", "Secret", "Service", "Service", "StatefulSet"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_client_dry_run():
    # a client-side dry run still asks an API server for the resource types; without one it cannot run
    probe = subprocess.run(["kubectl", "version", "--request-timeout=5s", "-o", "json"], capture_output=True,
                           text=True, timeout=30)
    if probe.returncode != 0 or "serverVersion" not in probe.stdout:
        pytest.skip("kubectl reaches no API server, and its client-side dry run needs one for the resource types")
    r = subprocess.run(["kubectl", "apply", "--dry-run=client", "-k", K8S], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr


# ---- strict schema validation (kubernetes-validate: Kubernetes' OpenAPI schemas, bundled, offline) -------------
# the oldest Kubernetes the manifests are meant for, and the newest schemas the validator has
SCHEMA_VERSIONS = ("1.29.0", "latest")


def strict_errors(doc, version):
    """kubernetes-validate's strict verdict on one object: [] or the messages (an unknown field is one)."""
    import kubernetes_validate
    if version == "latest":
        version = kubernetes_validate.latest_version()
    try:
        kubernetes_validate.validate(doc, version, strict=True)
        return []
    except kubernetes_validate.ValidationError as e:
        return [f"{doc['kind']}/{doc['metadata']['name']} ({version}): {e.message} at {list(e.path)}"]


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_manifests_pass_strict_schema_validation(version):
    pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed (make deps)")
    objs = objects()
    assert sorted(k for k, _ in objs) == ["ConfigMap", "Secret", "Service", "Service", "StatefulSet"]
    errors = [m for o in objs.values() for m in strict_errors(o, version)]
    assert not errors, "\n".join(errors)
    # strict means strict: a misspelt field of the same StatefulSet is an error
    bad = json.loads(json.dumps(objs[("StatefulSet", "flinklet")]))
    bad["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    assert strict_errors(bad, version), "the validator let an unknown field through"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_output_passes_strict_schema_validation():
    pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed (make deps)")
    r = subprocess.run(["kubectl", "kustomize", K8S], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    docs = [d for d in yaml.safe_load_all(r.stdout) if d]
    assert len(docs) == 5
    errors = [m for d in docs for v in SCHEMA_VERSIONS for m in strict_errors(d, v)]
    assert not errors, "\n".join(errors)


def test_flinks_scratch_has_its_own_volume_sized_from_the_state(effective):
    """Flink's scratch (flinklet.scratch.dir: io.tmp.dirs, RocksDB's working directory) is an emptyDir of its own,
    sized by the rule docs/deployment.md gives (twice the state's full size plus 128 MiB, for a state of at least
    512 MiB), and /tmp stays small: a 64Mi /tmp holding the scratch got the pod evicted (issue 30)."""
    fc = effective["spec"]["flinkConfiguration"]
    scratch = fc["flinklet.scratch.dir"]
    sts = one("StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"].rstrip("/"): m for m in container(sts)["volumeMounts"]}
    assert scratch.rstrip("/") in mounts, f"flinklet.scratch.dir {scratch} is no mount of the pod"
    vol = volumes[mounts[scratch.rstrip("/")]["name"]]
    assert "emptyDir" in vol and vol["emptyDir"].get("medium") != "Memory", "local disk, not the pod's memory"
    limit = k8s_bytes(vol["emptyDir"]["sizeLimit"])
    assert limit >= 2 * 512 * 1024 ** 2 + 128 * 1024 ** 2, vol
    # /tmp is another, small volume, and the scratch is not under it
    assert "/tmp" in mounts and mounts["/tmp"]["name"] != mounts[scratch.rstrip("/")]["name"]
    assert not scratch.startswith("/tmp/")
    assert k8s_bytes(volumes[mounts["/tmp"]["name"]]["emptyDir"]["sizeLimit"]) <= 256 * 1024 ** 2
    # the manifests' comments say where the scratch goes (not "<state dir>/tmp", not /tmp)
    text = open(os.path.join(K8S, "statefulset.yaml")).read()
    assert "<state dir>/tmp" not in text and "ScratchSpaceLow" in text

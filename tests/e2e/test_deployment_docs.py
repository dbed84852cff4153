"""docs/deployment.md, README.md and container/README.md as written (issue 30, item 4): the OpenShift patch the
docs give applies to the shipped StatefulSet and leaves no fixed uid or group in it (pod and container level), and
what it makes passes Kubernetes' strict schemas; the docs name only pods that their own manifests give; an
immutable field is changed through an orphaning delete (test_readme.py checks the README's and container/README's
commands). And, with
podman, the docs' Pod for `podman kube play` is played as written (podman 4.3.1 here, which skips a StatefulSet):
the job runs, `podman pod stop -t 60` takes the stop savepoint, `podman kube down` keeps the volume, and the Pod
played again resumes from that savepoint. Only what the harness must own is swapped: the image (built here), the
host paths, the pod's name, no network, and podman's pause image where catatonit is missing."""
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid

import pytest
import yaml

from conftest import JOBS_JAR, NO_JVM, SANITIZER_LOGS, wait_for
from docskit import DEPLOYMENT, blocks, make_dry, read, section

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STATEFULSET = os.path.join(ROOT, "conf", "kubernetes", "statefulset.yaml")
CONFIGMAP = os.path.join(ROOT, "conf", "kubernetes", "configmap.yaml")


# ---- OpenShift -----------------------------------------------------------------------------------------------

def openshift_patch():
    text = section(read(DEPLOYMENT), "**OpenShift**")
    doc = yaml.safe_load(blocks(text, "yaml")[0])
    (patch,) = doc["patches"]
    assert patch["target"] == {"kind": "StatefulSet", "name": "flinklet"}
    return yaml.safe_load(patch["patch"])


def apply_json_patch(obj, ops):
    """The remove operations of an RFC 6902 patch (what the docs' patch uses), applied to obj; a path that is not
    there is an error, as for kustomize."""
    for op in ops:
        assert op["op"] == "remove", op
        *parents, last = op["path"].strip("/").split("/")
        node = obj
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        assert last in node, f"{op['path']} is not in the StatefulSet"
        del node[last]
    return obj


def fixed_ids(sts):
    pod = sts["spec"]["template"]["spec"]
    found = {k for k in ("runAsUser", "runAsGroup", "fsGroup") if k in pod.get("securityContext", {})}
    for c in pod["containers"]:
        found |= {f"{c['name']}.{k}" for k in ("runAsUser", "runAsGroup") if k in c.get("securityContext", {})}
    return found


def test_openshift_patch_leaves_no_fixed_uid_or_group():
    sts = yaml.safe_load(read(STATEFULSET))
    assert fixed_ids(sts), "the shipped StatefulSet fixes uids: the patch has something to do"
    patched = apply_json_patch(json.loads(json.dumps(sts)), openshift_patch())
    assert not fixed_ids(patched), fixed_ids(patched)
    pod = patched["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["runAsNonRoot"] is True
    kv = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed (make deps)")
    kv.validate(patched, kv.latest_version(), strict=True)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_openshift_patch_through_kustomize(tmp_path):
    """The patch as the docs say to use it: in a kustomization, built by kubectl's kustomize."""
    text = section(read(DEPLOYMENT), "**OpenShift**")
    overlay = tmp_path / "openshift"
    shutil.copytree(os.path.join(ROOT, "conf", "kubernetes"), overlay)
    kust = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kust.update(yaml.safe_load(blocks(text, "yaml")[0]))
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kust))
    r = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    (sts,) = [d for d in yaml.safe_load_all(r.stdout) if d and d["kind"] == "StatefulSet"]
    assert not fixed_ids(sts), fixed_ids(sts)


def test_immutable_statefulset_fields_are_changed_by_an_orphaning_delete():
    text = read(DEPLOYMENT)
    cmds = [line for b in blocks(text, "sh") for line in b.splitlines()]
    delete = [c for c in cmds if c.startswith("kubectl delete statefulset")]
    assert delete and "--cascade=orphan" in delete[0], delete
    assert shlex.split(delete[0])[3] == yaml.safe_load(read(STATEFULSET))["metadata"]["name"]


# ---- names and images ------------------------------------------------------------------------------------------

def kube_play_pod():
    text = section(read(DEPLOYMENT), "### `podman kube play`")
    return yaml.safe_load(blocks(text, "yaml")[0]), blocks(text, "sh")[0]


def test_docs_name_only_pods_their_manifests_give():
    text = read(DEPLOYMENT)
    assert "flinklet-pod" not in text.replace("flinklet-pod.yaml", "")
    pod, sh = kube_play_pod()
    name, container = pod["metadata"]["name"], pod["spec"]["containers"][0]["name"]
    for line in sh.splitlines():
        words = shlex.split(line.split("  #", 1)[0]) if line.strip() else []
        if words[:3] == ["podman", "pod", "stop"]:
            assert words[-1] == name, line
        if words[:2] == ["podman", "exec"]:
            assert words[2] == f"{name}-{container}", line  # podman kube play names it <pod>-<container>
        if words[:3] in (["podman", "kube", "play"], ["podman", "kube", "down"]):
            assert words[3] == "flinklet-pod.yaml", line


# ---- podman kube play ------------------------------------------------------------------------------------------

needs_podman = [
    pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed"),
    pytest.mark.skipif(bool(SANITIZER_LOGS), reason="flinklet built with ASan/UBSan cannot run in the image"),
]


def pause_conf(tmp_path, base):
    """podman's pod needs an infra (pause) image; podman builds one with catatonit, which this machine may lack:
    then a stand-in from the local base (sleep), and the ulimits a container here must have (RUN_OPTS)."""
    from containerkit import podman
    conf = tmp_path / "containers.conf"
    lines = ['[containers]', 'default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]']
    if not shutil.which("catatonit") and not os.path.exists("/usr/libexec/podman/catatonit"):
        (tmp_path / "Pause").write_text(f"FROM {base}\nSTOPSIGNAL SIGKILL\nENTRYPOINT [\"sleep\", \"infinity\"]\n")
        pause = f"localhost/flinklet-e2e-pause:{uuid.uuid4().hex[:8]}"
        podman("build", "-q", "--network", "none", "-f", str(tmp_path / "Pause"), "-t", pause, str(tmp_path))
        lines += ["[engine]", f'infra_image = "{pause}"']
    else:
        pause = None
    conf.write_text("\n".join(lines) + "\n")
    return str(conf), pause


@pytest.mark.parametrize("_", [0], ids=["as-written"])
def test_kube_play_pod_of_the_docs(tmp_path, capsys, _):
    for m in needs_podman:
        if m.args[0]:
            pytest.skip(m.kwargs["reason"])
    if NO_JVM:
        pytest.skip("make check-fast starts no JVM (make container-test plays the Pod)")
    from containerkit import PODMAN, build_base, build_image, podman, same_location, volume_status
    base = build_base(capsys)
    image = build_image(capsys, base)
    pod, sh = kube_play_pod()
    suffix = uuid.uuid4().hex[:8]
    name, volume = f"flinklet-{suffix}", f"flinklet-state-{suffix}"
    container = f"{name}-{pod['spec']['containers'][0]['name']}"
    # what the harness owns: the image, the host paths, the pod's name, the volume's, no network
    etc, secret = tmp_path / "etc-flinklet", tmp_path / "etc-flinklet-secret"
    paths = {"/etc/flinklet-secret": str(secret), "/etc/flinklet": str(etc), "/srv/flinklet/clicks.jar": JOBS_JAR}
    pod["metadata"]["name"] = name
    c = pod["spec"]["containers"][0]
    assert c["image"] == re.search(r"\s-t\s+(\S+)\s+\.", make_dry("container-image")).group(1)
    c["image"] = image
    c.pop("ports")
    for v in pod["spec"]["volumes"]:
        if "hostPath" in v:
            v["hostPath"]["path"] = paths[v["hostPath"]["path"]]
        if "persistentVolumeClaim" in v:
            v["persistentVolumeClaim"]["claimName"] = volume
    manifest = tmp_path / "flinklet-pod.yaml"
    manifest.write_text(yaml.safe_dump(pod, sort_keys=False))
    # /tmp/flinklet.yaml of the docs' step 2: the ConfigMap's document, with the test job
    doc = yaml.safe_load(yaml.safe_load(read(CONFIGMAP))["data"]["flinklet.yaml"])
    doc["spec"]["flinkConfiguration"]["execution.checkpointing.interval"] = "1s"
    doc["spec"]["job"].update({"entryClass": "dev.flinklet.jobs.StatefulCounter",
                               "args": ["--rate", "50", "--keys", "4", "--output", "/var/lib/flinklet/output"]})
    assert doc["spec"]["job"]["jarURI"] == "local:///opt/flink/usrlib/clicks.jar"
    step2 = tmp_path / "flinklet.yaml"
    step2.write_text(yaml.safe_dump(doc, sort_keys=False))
    conf, pause = pause_conf(tmp_path, base)
    env = {**os.environ, "CONTAINERS_CONF": conf}

    def adapt(line):
        line = line.split("  #", 1)[0].strip()
        line = line.replace("/tmp/flinklet.yaml", str(step2)).replace("flinklet-pod.yaml", str(manifest))
        for k, v in paths.items():
            line = line.replace(k, v)
        line = re.sub(r"\bflinklet-flinklet\b", container, line)
        line = re.sub(r"(podman pod stop -t 60) flinklet\b", rf"\1 {name}", line)
        line = line.replace("podman kube play", "podman kube play --network none")
        return line.replace("podman ", shlex.join(PODMAN) + " ")

    def status():
        r = podman("exec", container, "flinklet", "status", "--json", check=False, timeout=60)
        return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None

    def stable():
        st = status()
        return st if st and st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] > 0 else None

    def run(line, timeout=180):
        r = subprocess.run(adapt(line), shell=True, env=env, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        return r

    lines = [line for line in sh.splitlines() if line.strip()]
    podman("volume", "create", volume)
    try:
        t0 = time.monotonic()
        for line in lines:
            if line.startswith("podman exec"):
                wait_for(stable, 150, "the job of the kube-played pod RUNNING", interval=1)
                assert "RUNNING" in run(line).stdout
                wait_for(lambda: (s := status()) and s["jobStatus"]["checkpointInfo"]["lastCheckpoint"], 60,
                         "a checkpoint", interval=1)
                continue
            run(line)
            if line.startswith("podman pod stop"):
                st = json.loads(podman("inspect", container).stdout)[0]["State"]
                assert st["ExitCode"] == 0, st  # flinklet's own exit after its stop savepoint
        with capsys.disabled():
            print(f"\n[kube play] the docs' Pod ran and stopped in {time.monotonic() - t0:.0f} s", flush=True)
        assert podman("pod", "exists", name, check=False).returncode != 0, "kube down left the pod"
        sp = volume_status(volume)["jobStatus"]["savepointInfo"]["lastSavepoint"]
        assert sp and sp["triggerType"] == "UPGRADE", sp
        # "podman kube play flinklet-pod.yaml again resumes from that savepoint"
        run(next(line for line in lines if line.startswith("podman kube play")))
        st = wait_for(stable, 150, "the second play RUNNING", interval=1)
        assert st["restoredFrom"]["kind"] == "savepoint" and same_location(st["restoredFrom"]["location"],
                                                                           sp["location"]), st["restoredFrom"]
    except BaseException:
        print(podman("logs", container, check=False).stderr[-4000:])
        raise
    finally:
        subprocess.run([*PODMAN, "pod", "rm", "-f", "-t", "0", name], env=env, capture_output=True)
        podman("volume", "rm", "-f", volume, check=False)
        if pause:
            podman("rmi", "-f", pause, check=False)

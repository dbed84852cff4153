"""containerkit: building and running flinklet's container image with podman on a machine without a registry or a
network (a local stand-in for the official Flink image from scripts/container-base.sh, the Containerfile's targets,
podman's options here, the state volume's files from the host), for the e2e files that use the image
(test_container.py, test_systemd.py, test_deployment_docs.py).

FLINKLET_E2E_TAG_SUFFIX (default empty) is appended to the names of the images this builds, so that two
checkouts on one machine do not replace each other's images."""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

from testkit import BIN, FLINK_HOME, flink_version  # noqa: F401  (re-exported)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTAINERFILE = os.path.join(ROOT, "container", "Containerfile")
BASE_SCRIPT = os.path.join(ROOT, "scripts", "container-base.sh")
CONFIGMAP = os.path.join(ROOT, "conf", "kubernetes", "configmap.yaml")
# what podman on a machine without systemd and a registry needs: runc, cgroupfs, no network, bounded ulimits
RUN_OPTS = ["--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
# the pod's securityContext in conf/kubernetes/statefulset.yaml, as podman options
POD_SECURITY = ["--user", "9999:9999", "--read-only", "--tmpfs", "/tmp", "--tmpfs", "/scratch:rw,exec,mode=1777",
                "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges"]
STATE = "/var/lib/flinklet"
TOKEN_FILE = "/var/run/secrets/flinklet/token"
JAR_IN_IMAGE = "/opt/flink/usrlib/flinklet-test-jobs.jar"
SHUTDOWN_BUDGET = 25  # flinklet.shutdown.timeout, seconds
TAG_SUFFIX = os.environ.get("FLINKLET_E2E_TAG_SUFFIX", "")
# what Debian's libcurl (libcurl3-gnutls, libcurl4) loads and flinklet's own static one (scripts/curl.sh) does
# without: none of it may be in the image, nor mapped by flinklet (docs/performance.md, "The supervisor's footprint")
CURL_BAGGAGE = re.compile(r"\blib(curl|ssh2?|ldap|lber|sasl2|krb5|krb5support|k5crypto|gssapi_krb5|rtmp|psl"
                          r"|nghttp2|brotli(common|dec|enc))[-.\w]*\.so")


def podman_cmd():
    """The podman command with its global options: $PODMAN, else runc and cgroupfs where runc is installed
    (the same default as scripts/container-base.sh)."""
    if os.environ.get("PODMAN"):
        return shlex.split(os.environ["PODMAN"])
    if shutil.which("runc"):
        return ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
    return ["podman"]


PODMAN = podman_cmd()


def podman(*args, check=True, timeout=120):
    r = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {r.returncode}:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return r




def say(capsys, msg):
    with capsys.disabled():
        print(f"\n[container] {msg}", flush=True)


def build_base(capsys, variant=""):
    """scripts/container-base.sh: the base image (VARIANT=systemd: with systemd as init), cached."""
    t0 = time.monotonic()
    env = {**os.environ, "PODMAN": shlex.join(PODMAN), "FLINK_VERSION": flink_version(),
           "FLINK_LIB": os.path.join(FLINK_HOME, "lib"), "BASE_NAME": f"localhost/flinklet-base{TAG_SUFFIX}",
           "VARIANT": variant}
    r = subprocess.run([BASE_SCRIPT], capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, f"container-base.sh exited {r.returncode}:\n{r.stderr[-4000:]}"
    tag = r.stdout.strip().splitlines()[-1]
    cached = "cached" in r.stderr
    say(capsys, f"base image {tag}: {'cached' if cached else 'built'} in {time.monotonic() - t0:.1f} s")
    return tag


def build_image(capsys, base, flavor=""):
    """The Containerfile's runtime-prebuilt target with the host's flinklet, from a context holding only it (flavor:
    a suffix of the tag, for an image on another base)."""
    t0 = time.monotonic()
    tag = f"localhost/flinklet:e2e-{flink_version()}{flavor}{TAG_SUFFIX}"
    before = podman("image", "inspect", "--format", "{{.Id}}", tag, check=False).stdout.strip()
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(BIN, os.path.join(ctx, "flinklet"))
        podman("build", "--format", "docker", *RUN_OPTS, "-f", CONTAINERFILE, "--target", "runtime-prebuilt",
               "--build-arg", f"FLINK_IMAGE={base}", "--build-arg", "FLINKLET_BINARY=flinklet", "-t", tag, ctx,
               timeout=600)
    after = podman("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
    if before and before != after:
        podman("rmi", before, check=False)  # the image of an earlier flinklet binary, untagged now
    say(capsys, f"image {tag} built in {time.monotonic() - t0:.1f} s")
    cfg = json.loads(podman("image", "inspect", tag).stdout)[0]
    assert cfg["Config"]["Entrypoint"] == ["/usr/local/bin/flinklet", "run"]
    assert cfg["Config"]["User"] == "9999:9999"  # numeric: runAsNonRoot without runAsUser is admitted
    assert cfg["Config"]["StopSignal"] == "SIGTERM"
    assert STATE in cfg["Config"]["Volumes"]
    health = cfg.get("Healthcheck") or cfg.get("HealthCheck") or cfg["Config"].get("Healthcheck") or {}
    assert health.get("Test") == ["CMD", "/usr/local/bin/flinklet", "status", "--url", "http://127.0.0.1:8091",
                                  "--live"]
    return tag


def build_full_image(capsys, base, builder):
    """The Containerfile's default target (runtime): flinklet compiled in the build stage on builder, from the
    checkout as the context (.containerignore's selection), with no network: the build stage gets Debian's curl
    source package from the context's build/curl/src, as scripts/curl.sh downloaded it on this machine."""
    assert any(name.startswith("curl_") and name.endswith(".dsc")
               for _, _, files in os.walk(os.path.join(ROOT, "build", "curl", "src")) for name in files), \
        "no Debian curl source package under build/curl/src: run make (CURL=bundled) first"
    t0 = time.monotonic()
    tag = f"localhost/flinklet:e2e-full-{flink_version()}{TAG_SUFFIX}"
    before = podman("image", "inspect", "--format", "{{.Id}}", tag, check=False).stdout.strip()
    podman("build", "--format", "docker", *RUN_OPTS, "-f", CONTAINERFILE, "--build-arg", f"FLINK_IMAGE={base}",
           "--build-arg", f"BUILDER={builder}", "-t", tag, ROOT, timeout=1800)
    after = podman("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
    if before and before != after:
        podman("rmi", before, check=False)
    say(capsys, f"image {tag} (target runtime) built in {time.monotonic() - t0:.1f} s")
    return tag


def volume_path(volume, location):
    """The host path of a file:// location under the state directory inside the container."""
    mount = podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip()
    path = re.sub(r"^file:(//)?", "", location)
    assert path.startswith(STATE + "/"), location
    return os.path.join(mount, path[len(STATE) + 1:])


def volume_status(volume):
    with open(volume_path(volume, f"file://{STATE}/status.json")) as f:
        return json.load(f)


def same_location(a, b):
    return re.sub(r"^file:/+", "/", a or "") == re.sub(r"^file:/+", "/", b or "")


def assert_no_debian_libcurl(image):
    """flinklet in image maps no libcurl and none of what Debian's brings along, and the image has none of them."""
    ldd = podman("run", "--rm", *RUN_OPTS, "--entrypoint", "ldd", image, "/usr/local/bin/flinklet").stdout
    assert "libgnutls.so.30" in ldd and "libmicrohttpd.so.12" in ldd, ldd  # the dynamic part is there
    assert "not found" not in ldd, ldd
    linked = [line.strip() for line in ldd.splitlines() if CURL_BAGGAGE.search(line)]
    assert not linked, f"flinklet in {image} links Debian's libcurl or its libraries: {linked}"
    cache = podman("run", "--rm", *RUN_OPTS, "--entrypoint", "ldconfig", image, "-p").stdout
    assert "libgnutls.so.30" in cache, cache[:2000]
    shipped = sorted({m.group(0) for m in CURL_BAGGAGE.finditer(cache)})
    assert not shipped, f"{image} still ships Debian's libcurl or what only it pulls in: {shipped}"

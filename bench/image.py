"""8. Image size: the container image (container/Containerfile's runtime-prebuilt target on the local base of
scripts/container-base.sh) as it is now, next to the same image on the base as it was before the jlinked Java
runtime and the trimmed jars (the script at BENCH_IMAGE_BEFORE, by default the parent of the commit that
dropped Debian's openjdk-17-jre-headless from it). Both are built here, with no network, from the same Flink jars
and the same flinklet binary; the sizes are podman's (uncompressed layers), and the parts are measured inside
each image with du. Needs root and podman (the base is made with debootstrap); cached by the script's hash."""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, FLINK_HOME, ROOT, log, row  # noqa: E402

PODMAN = (shlex.split(os.environ["PODMAN"]) if os.environ.get("PODMAN")
          else ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"] if shutil.which("runc")
          else ["podman"])
OPTS = ["--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
SUFFIX = os.environ.get("FLINKLET_E2E_TAG_SUFFIX", "")


def sh(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])}... exited {r.returncode}: {r.stderr[-3000:]}")
    return r.stdout


def before_ref():
    if os.environ.get("BENCH_IMAGE_BEFORE"):
        return os.environ["BENCH_IMAGE_BEFORE"]
    commit = sh(["git", "-C", ROOT, "log", "-n1", "--format=%H", "-G", "^packages=\\(openjdk-17-jre-headless",
                 "--", "scripts/container-base.sh"]).strip()
    if not commit:
        raise RuntimeError("no commit dropped openjdk-17-jre-headless from scripts/container-base.sh: "
                           "set BENCH_IMAGE_BEFORE")
    return commit + "^"


def build(script, name, tag, version):
    env = {**os.environ, "PODMAN": shlex.join(PODMAN), "FLINK_VERSION": version,
           "FLINK_LIB": os.path.join(FLINK_HOME, "lib"), "BASE_NAME": name, "VARIANT": ""}
    base = sh(["bash", script], env=env, timeout=1800).strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(BIN, os.path.join(ctx, "flinklet"))
        sh([*PODMAN, "build", "--format", "docker", *OPTS, "-f", os.path.join(ROOT, "container", "Containerfile"),
            "--target", "runtime-prebuilt", "--build-arg", f"FLINK_IMAGE={base}", "--build-arg",
            "FLINKLET_BINARY=flinklet", "-t", tag, ctx], timeout=900)
    return int(sh([*PODMAN, "image", "inspect", "--format", "{{.Size}}", tag]).strip())


def du(tag, *paths):
    """Bytes under each path inside the image (du -sb, following nothing)."""
    out = sh([*PODMAN, "run", "--rm", *OPTS, "--user", "0", "--entrypoint", "du", tag, "-sb", *paths])
    return {line.split("\t")[1]: int(line.split("\t")[0]) for line in out.splitlines() if "\t" in line}


def run():
    version = os.path.basename(FLINK_HOME).replace("flink-", "")
    ref = before_ref()
    with tempfile.TemporaryDirectory() as d:
        old_script = os.path.join(d, "container-base.sh")
        with open(old_script, "w") as f:
            text = sh(["git", "-C", ROOT, "show", f"{ref}:scripts/container-base.sh"])
            # its own image name: the old script names (and untags the superseded) localhost/flinklet-base:*
            text = text.replace("\nname=localhost/flinklet-base\n", "\nname=${BASE_NAME:-localhost/flinklet-base}\n")
            assert "BASE_NAME" in text, "the old script's image name was not found"
            f.write(text)
        log(f"building the image on the base of {ref} (before)")
        before = build(old_script, f"localhost/flinklet-bench-before{SUFFIX}",
                       f"localhost/flinklet:bench-before{SUFFIX}", version)
    log("building the image on the current base (after)")
    after = build(os.path.join(ROOT, "scripts", "container-base.sh"), f"localhost/flinklet-base{SUFFIX}",
                  f"localhost/flinklet:bench-after{SUFFIX}", version)
    parts_before = du(f"localhost/flinklet:bench-before{SUFFIX}", "/usr/lib/jvm", "/opt/flink/lib")
    parts_after = du(f"localhost/flinklet:bench-after{SUFFIX}", "/opt/java", "/opt/flink/lib")
    mb = 1e6
    rows = [
        row("image size before (Debian JRE, all jars)", f"{before / mb:.0f} MB",
            f"podman image inspect .Size, base of {ref}"),
        row("image size after (jlinked runtime, trimmed jars)", f"{after / mb:.0f} MB",
            "podman image inspect .Size, current base"),
        row("image size after / before", f"{after / before:.2f}", "ratio"),
        row("Java runtime before / after", f"{parts_before['/usr/lib/jvm'] / mb:.0f} MB / "
            f"{parts_after['/opt/java'] / mb:.0f} MB", "du -sb /usr/lib/jvm vs /opt/java in the images"),
        row("Flink jars before / after", f"{parts_before['/opt/flink/lib'] / mb:.0f} MB / "
            f"{parts_after['/opt/flink/lib'] / mb:.0f} MB", "du -sb /opt/flink/lib in the images"),
    ]
    return rows

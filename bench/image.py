"""8. Image size: the container image (container/Containerfile's runtime-prebuilt target on the local base of
scripts/container-base.sh) as it is now, next to the same image on the base as it was before the jlinked Java
runtime and the trimmed jars (the script at BENCH_IMAGE_BEFORE, by default the parent of the commit that
dropped Debian's openjdk-17-jre-headless from it). Both are built here, with no network, from the same Flink jars
and the same flinklet binary; the sizes are podman's (uncompressed layers), and the parts are measured inside
each image with du. Needs root and podman (the base is made with debootstrap); cached by the script's hash.

Then the libcurl of the image, before and after the runtime stage dropped Debian's: the image on the base of the
commit before libcurl3-gnutls left scripts/container-base.sh (BENCH_IMAGE_CURL_BEFORE) with flinklet built with
CURL=system (what the Containerfile's build stage compiled until then), next to the image on the current base
with the bundled libcurl (build/flinklet): their sizes, and flinklet's VmRSS, RssAnon and RssFile as PID 1 of
each container at steady state (the test job RUNNING, BENCH_IMAGE_SAMPLE_S seconds once a second after
BENCH_IMAGE_WARMUP_S), measured one container after the other."""
import os
import shlex
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, FLINK_HOME, JOBS_JAR, ROOT, WORK, log, mib, proc_status_bytes, row, wait_for  # noqa: E402

PODMAN = (shlex.split(os.environ["PODMAN"]) if os.environ.get("PODMAN")
          else ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"] if shutil.which("runc")
          else ["podman"])
OPTS = ["--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
SUFFIX = os.environ.get("FLINKLET_E2E_TAG_SUFFIX", "")
WARMUP_S = int(os.environ.get("BENCH_IMAGE_WARMUP_S", "20"))
SAMPLE_S = int(os.environ.get("BENCH_IMAGE_SAMPLE_S", "30"))


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


def curl_before_ref():
    """The parent of the newest commit that added or removed libcurl3-gnutls in container-base.sh's packages."""
    if os.environ.get("BENCH_IMAGE_CURL_BEFORE"):
        return os.environ["BENCH_IMAGE_CURL_BEFORE"]
    commit = sh(["git", "-C", ROOT, "log", "-n1", "--format=%H", "-G", "^packages=\\(ca-certificates libstdc\\+\\+6 ",
                 "--", "scripts/container-base.sh"]).strip()
    text = sh(["git", "-C", ROOT, "show", f"{commit}:scripts/container-base.sh"]) if commit else ""
    if not commit or "libcurl3-gnutls libcjson1" in text:
        raise RuntimeError("no commit dropped libcurl3-gnutls from scripts/container-base.sh: "
                           "set BENCH_IMAGE_CURL_BEFORE")
    return commit + "^"


def system_curl_binary():
    """flinklet built with CURL=system (Debian's libcurl-gnutls), under build/bench/system-curl."""
    out = os.path.join(WORK, "system-curl")
    sh(["make", "-C", ROOT, "-j2", "CURL=system", f"BUILD={out}", f"{out}/flinklet"], timeout=1800)
    return os.path.join(out, "flinklet")


def old_script(ref, d):
    """container-base.sh as it was at ref, with its image name taken from BASE_NAME."""
    path = os.path.join(d, f"container-base-{ref.replace('^', '-parent')[:20]}.sh")
    text = sh(["git", "-C", ROOT, "show", f"{ref}:scripts/container-base.sh"])
    # its own image name: the old script names (and untags the superseded) localhost/flinklet-base:*
    text = text.replace("\nname=localhost/flinklet-base\n", "\nname=${BASE_NAME:-localhost/flinklet-base}\n")
    assert "BASE_NAME" in text, "the old script's image name was not found"
    with open(path, "w") as f:
        f.write(text)
    return path


def steady_rss(tag):
    """flinklet's /proc status fields as PID 1 of a container of tag running the test job: the medians of
    SAMPLE_S samples, once a second, after WARMUP_S with the job RUNNING."""
    name = f"flinklet-bench-image{SUFFIX}-{os.getpid()}"
    jar = "/opt/flink/usrlib/job.jar"
    sh([*PODMAN, "run", "-d", "--name", name, *OPTS, "-v", f"{JOBS_JAR}:{jar}:ro", tag, "--jar", f"local://{jar}",
        "--class", "dev.flinklet.jobs.StatefulCounter", "--", "--output", "/var/lib/flinklet/output"])
    try:
        def running():
            r = subprocess.run([*PODMAN, "exec", name, "flinklet", "status", "--json"], capture_output=True,
                               text=True, timeout=60)
            st = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None
            return st if st and st["jobStatus"]["state"] == "RUNNING" else None
        wait_for(running, 300, f"the job RUNNING in {tag}", interval=1)
        pid = int(sh([*PODMAN, "inspect", "--format", "{{.State.Pid}}", name]).strip())
        time.sleep(WARMUP_S)
        samples = []
        for _ in range(SAMPLE_S):
            samples.append(proc_status_bytes(pid))
            time.sleep(1)
        return {k: statistics.median(x[k] for x in samples) for k in ("VmRSS", "RssAnon", "RssFile")}
    finally:
        subprocess.run([*PODMAN, "rm", "-f", "-v", "-t", "0", name], capture_output=True)


def curl_rows(version):
    ref = curl_before_ref()
    with tempfile.TemporaryDirectory() as d:
        log(f"building the image on the base of {ref} with a CURL=system flinklet (before)")
        before = build(old_script(ref, d), f"localhost/flinklet-bench-curl-before{SUFFIX}",
                       f"localhost/flinklet:bench-curl-before{SUFFIX}", version, binary=system_curl_binary(),
                       lib=old_lib())
    after_tag = f"localhost/flinklet:bench-after{SUFFIX}"
    after = int(sh([*PODMAN, "image", "inspect", "--format", "{{.Size}}", after_tag]).strip())
    libs = {}
    for tag in (f"localhost/flinklet:bench-curl-before{SUFFIX}", after_tag):
        cache = sh([*PODMAN, "run", "--rm", *OPTS, "--entrypoint", "ldconfig", tag, "-p"])
        libs[tag] = len([line for line in cache.splitlines() if "=>" in line])
    log("flinklet's footprint in the container before, then after")
    rss_before = steady_rss(f"localhost/flinklet:bench-curl-before{SUFFIX}")
    rss_after = steady_rss(after_tag)
    mb = 1e6
    return [
        row("image size before / after dropping Debian's libcurl", f"{before / mb:.1f} MB / {after / mb:.1f} MB",
            f"podman image inspect .Size: base of {ref} + CURL=system flinklet vs current base + bundled libcurl"),
        row("shared libraries in the image before / after", f"{libs[f'localhost/flinklet:bench-curl-before{SUFFIX}']}"
            f" / {libs[after_tag]}", "entries of ldconfig -p in the images"),
        row("flinklet VmRSS in the container before / after",
            f"{mib(rss_before['VmRSS']):.2f} MiB / {mib(rss_after['VmRSS']):.2f} MiB",
            f"PID 1's /proc status, median of {SAMPLE_S} s at steady state (job RUNNING); goal <= 8 MiB"),
        row("flinklet RssAnon in the container before / after",
            f"{mib(rss_before['RssAnon']):.2f} MiB / {mib(rss_after['RssAnon']):.2f} MiB", "the same; goal <= 2 MiB"),
        row("flinklet RssFile in the container before / after",
            f"{mib(rss_before['RssFile']):.2f} MiB / {mib(rss_after['RssFile']):.2f} MiB",
            "the same (mapped files: the shared libraries)"),
    ]


def old_lib():
    """The Flink jars for a base script of the past: the module jars (make flink-lib FLINK_RUNTIME=modules), the
    layout every runtime had before the distribution's (issue 37), which those scripts check for."""
    modules = os.path.join(FLINK_HOME + "-modules", "lib")
    if not os.path.isdir(modules):
        raise RuntimeError(f"no {modules}: run make flink-lib FLINK_RUNTIME=modules (make bench BENCH=image does)")
    return modules


def build(script, name, tag, version, binary=BIN, lib=None):
    env = {**os.environ, "PODMAN": shlex.join(PODMAN), "FLINK_VERSION": version,
           "FLINK_LIB": lib or os.path.join(FLINK_HOME, "lib"), "BASE_NAME": name, "VARIANT": ""}
    base = sh(["bash", script], env=env, timeout=1800).strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(binary, os.path.join(ctx, "flinklet"))
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
        log(f"building the image on the base of {ref} (before)")
        before = build(old_script(ref, d), f"localhost/flinklet-bench-before{SUFFIX}",
                       f"localhost/flinklet:bench-before{SUFFIX}", version, lib=old_lib())
    log("building the image on the current base (after)")
    after = build(os.path.join(ROOT, "scripts", "container-base.sh"), f"localhost/flinklet-base{SUFFIX}",
                  f"localhost/flinklet:bench-after{SUFFIX}", version)
    parts_before = du(f"localhost/flinklet:bench-before{SUFFIX}", "/usr/lib/jvm", "/opt/flink/lib")
    parts_after = du(f"localhost/flinklet:bench-after{SUFFIX}", "/opt/java", "/opt/flink/lib")
    mb = 1e6
    rows = [
        row("image size before (Debian JRE, all jars)", f"{before / mb:.0f} MB",
            f"podman image inspect .Size, base of {ref} (with the module jars, the layout of its time)"),
        row("image size after (jlinked runtime, trimmed jars)", f"{after / mb:.0f} MB",
            "podman image inspect .Size, current base"),
        row("image size after / before", f"{after / before:.2f}", "ratio"),
        row("Java runtime before / after", f"{parts_before['/usr/lib/jvm'] / mb:.0f} MB / "
            f"{parts_after['/opt/java'] / mb:.0f} MB", "du -sb /usr/lib/jvm vs /opt/java in the images"),
        row("Flink jars before / after", f"{parts_before['/opt/flink/lib'] / mb:.0f} MB / "
            f"{parts_after['/opt/flink/lib'] / mb:.0f} MB", "du -sb /opt/flink/lib in the images"),
    ]
    return rows + curl_rows(version)

"""The container image built the way container/README.md tells a user to build it (issue 35, item 1).

Two checks, so that a file the build needs can never again be left out of the image's build context:

- With no podman and no JVM: the build stage's context as `.containerignore` selects it from the files git tracks,
  narrowed to what the Containerfile's build stage COPYs, is enough for the stage's `make` (make -n parses every
  Makefile the top one includes). A Makefile that includes a file the context leaves out fails here in a second.
- With podman: the offline full build of container/README.md ("Without a registry"), its commands as written there
  (read from the document, not copied into this file), run in a clean copy of the checkout (the files git tracks,
  as a fresh clone has them; build/curl is carried over so that `make` needs no download), with --network none.
  The image it makes has flinklet compiled in its build stage, links no libcurl of Debian's, and runs a job (with
  ForSt state on Flink 2.x) to a checkpoint and stops it with a savepoint.

Only what the harness must own is swapped: podman's global options and ulimits on this machine (a shell function
in front of the commands), and the image's tag (FLINKLET_E2E_TAG_SUFFIX)."""
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import FLINK_HOME, JOBS_JAR, NO_JVM, wait_for
from docskit import CONTAINER_README, blocks, read, section

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONTAINERFILE = os.path.join(ROOT, "container", "Containerfile")
IGNORE = os.path.join(ROOT, ".containerignore")


def tracked_files():
    r = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [p for p in r.stdout.split("\0") if p and os.path.lexists(os.path.join(ROOT, p))]


def ignore_rules():
    """.containerignore as (negated, pattern) pairs, in order (Docker's and Buildah's syntax: the last rule that
    matches a path decides; a rule that matches a directory matches everything under it)."""
    rules = []
    for line in read(IGNORE).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        rules.append((neg, os.path.normpath(line[1:] if neg else line).lstrip("/")))
    return rules


def in_context(path, rules):
    """Whether the context keeps path (a file's path relative to the context's top)."""
    parts = path.split("/")
    keep = True
    for neg, pat in rules:
        # the pattern matches the path itself or one of its parent directories
        if any(fnmatch.fnmatchcase("/".join(parts[:i]), pat) and
               len(pat.split("/")) == i for i in range(1, len(parts) + 1)):
            keep = neg
    return keep


def build_stage_copies():
    """The sources of the build stage's COPY lines (between its FROM and the next FROM), less --from copies."""
    text = read(CONTAINERFILE).replace("\\\n", " ")
    stage, srcs = False, []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "FROM":
            stage = words[-1] == "build"
            continue
        if stage and words[0] == "COPY" and not any(w.startswith("--from") for w in words):
            srcs += [w for w in words[1:-1] if not w.startswith("--")]
    assert srcs, "no COPY in the Containerfile's build stage"
    return srcs


def test_build_stage_context_has_what_make_needs(tmp_path):
    """make -n of the build stage's own command in a tree made of exactly what the build stage COPYs out of the
    context .containerignore selects: it fails on a Makefile include (or any file make reads) left out."""
    rules = ignore_rules()
    context = [p for p in tracked_files() if in_context(p, rules)]
    assert "Makefile" in context and "src/cli/main.c" in context, context[:20]
    tree = tmp_path / "src"
    copied = 0
    for src in build_stage_copies():
        src = src.rstrip("/")
        for p in context:
            if fnmatch.fnmatchcase(p, src) or p.startswith(src + "/"):
                os.makedirs(os.path.dirname(tree / p), exist_ok=True)
                shutil.copy2(os.path.join(ROOT, p), tree / p)
                copied += 1
    assert copied > 10, copied
    out = tmp_path / "out"
    r = subprocess.run(["make", "-n", "CURL=bundled", f"BUILD={out}", f"{out}/flinklet"], cwd=tree,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"the build stage's make fails on its context:\n{r.stderr[-3000:]}"
    assert "No such file" not in r.stderr, r.stderr[-3000:]
    # every file the top Makefile includes is in that context
    for inc in re.findall(r"^-?include\s+(\S+)", read(os.path.join(ROOT, "Makefile")), re.M):
        if "$" not in inc:
            assert (tree / inc).exists(), f"the Makefile includes {inc}, which the build stage's context lacks"


def test_ignore_rules_follow_dockers_syntax():
    """The matcher above is Docker's: the last matching rule wins, a directory's rule covers what is under it."""
    rules = [(False, "*"), (True, "src"), (True, "build/curl/src"), (False, "build/curl/src/*/curl-*")]
    assert in_context("src/cli/main.c", rules)
    assert not in_context("tests/e2e/conftest.py", rules)
    assert not in_context("mk/tests.mk", rules)
    assert in_context("build/curl/src/7.88/curl_7.88.dsc", rules)
    assert not in_context("build/curl/src/7.88/curl-7.88/lib/url.c", rules)


# ---- the documented offline full build, with podman ----------------------------------------------------------

def offline_build_commands():
    """The fenced sh block of container/README.md's "Without a registry" section that builds the default target."""
    text = section(read(CONTAINER_README), "## Without a registry")
    for block in blocks(text, "sh"):
        if "podman build" in block and "--network none" in block and "VARIANT=builder" in block:
            return block
    raise AssertionError("container/README.md has no offline full build (podman build --network none with the "
                         "VARIANT=builder base) in its 'Without a registry' section")


def clean_copy(dest):
    """The files git tracks, as a fresh clone has them, plus build/curl (the downloaded source and the built
    static libcurl, which `make` would otherwise fetch and rebuild)."""
    for p in tracked_files():
        os.makedirs(os.path.dirname(os.path.join(dest, p)) or dest, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, p), os.path.join(dest, p), follow_symlinks=False)
    curl = os.path.join(ROOT, "build", "curl")
    assert os.path.isdir(os.path.join(curl, "src")), "no build/curl/src: run make (CURL=bundled) first"
    shutil.copytree(curl, os.path.join(dest, "build", "curl"), symlinks=True)


@pytest.mark.skipif(NO_JVM, reason="builds and runs the image")
@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_offline_full_build_of_container_readme_from_a_clean_copy(tmp_path, capsys):
    from containerkit import (PODMAN, POD_SECURITY, RUN_OPTS, STATE, TAG_SUFFIX, assert_no_debian_libcurl,
                              flink_version, say)
    script = offline_build_commands()
    tag = f"localhost/flinklet:e2e-docbuild-{flink_version()}{TAG_SUFFIX}"
    documented = re.search(r"-t (localhost/flinklet:\S+)", script).group(1)
    script = script.replace(documented, tag)
    clone = str(tmp_path / "clone")
    clean_copy(clone)
    # podman as this machine needs it (runc, cgroupfs; bounded ulimits on build and run), in front of the
    # document's commands; scripts/container-base.sh takes the same from $PODMAN
    wrapper = (f"podman() {{ case \"$1\" in build|run) local c=$1; shift; "
               f"command {shlex.join(PODMAN)} \"$c\" {shlex.join(RUN_OPTS[2:])} \"$@\";; "
               f"*) command {shlex.join(PODMAN)} \"$@\";; esac; }}\n")
    env = {**os.environ, "PODMAN": shlex.join(PODMAN), "FLINK_VERSION": flink_version(),
           "FLINK_LIB": os.path.join(FLINK_HOME, "lib"), "BASE_NAME": f"localhost/flinklet-base{TAG_SUFFIX}"}
    before = subprocess.run([*PODMAN, "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True,
                            text=True).stdout.strip()
    t0 = time.monotonic()
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", wrapper + script], cwd=clone, env=env,
                       capture_output=True, text=True, timeout=2400)
    assert r.returncode == 0, f"container/README's offline build failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    say(capsys, f"container/README's offline full build: {time.monotonic() - t0:.0f} s")
    after = subprocess.run([*PODMAN, "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True,
                           text=True).stdout.strip()
    if before and before != after:
        subprocess.run([*PODMAN, "rmi", before], capture_output=True)
    assert_no_debian_libcurl(tag)
    run = [*PODMAN, "run", "--rm", *RUN_OPTS, "--entrypoint", "/usr/local/bin/flinklet", tag, "version"]
    assert read(os.path.join(ROOT, "VERSION")).strip() in subprocess.run(run, capture_output=True, text=True).stdout

    # the image runs the job and stops it with a savepoint; on Flink 2.x with ForSt state, whose jar the base keeps
    # with this platform's native library alone (scripts/container-base.sh)
    backend = ["-D", "state.backend.type=forst"] if not flink_version().startswith("1.") else []
    name, volume = f"flinklet-docbuild-{uuid.uuid4().hex[:8]}", f"flinklet-docbuild-{uuid.uuid4().hex[:8]}"
    jar = "/opt/flink/usrlib/job.jar"
    try:
        subprocess.run([*PODMAN, "volume", "create", volume], check=True, capture_output=True)
        subprocess.run([*PODMAN, "run", "-d", "--name", name, *RUN_OPTS, *POD_SECURITY, "-v", f"{volume}:{STATE}",
                        "-v", f"{JOBS_JAR}:{jar}:ro", tag, "--jar", f"local://{jar}", "--class",
                        "dev.flinklet.jobs.StatefulCounter", "-D", "execution.checkpointing.interval=1s", *backend, "--",
                        "--output", f"{STATE}/output"], check=True, capture_output=True)

        def running():
            r = subprocess.run([*PODMAN, "exec", name, "flinklet", "status", "--json"], capture_output=True,
                               text=True, timeout=60)
            st = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None
            lc = st and st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
            return st if st and st["jobStatus"]["state"] == "RUNNING" and lc else None
        wait_for(running, 180, "the job RUNNING with a checkpoint in the image of the documented build", interval=1)
        subprocess.run([*PODMAN, "stop", "-t", "40", name], check=True, capture_output=True, timeout=90)
        st = json.loads(subprocess.run([*PODMAN, "inspect", name], capture_output=True, text=True).stdout)[0]
        assert st["State"]["ExitCode"] == 0, st["State"]
        mount = subprocess.run([*PODMAN, "volume", "inspect", "--format", "{{.Mountpoint}}", volume],
                               capture_output=True, text=True).stdout.strip()
        with open(os.path.join(mount, "status.json")) as f:
            status = json.load(f)
        assert status["jobStatus"]["savepointInfo"]["lastSavepoint"], status["jobStatus"]
    finally:
        subprocess.run([*PODMAN, "rm", "-f", "-t", "0", name], capture_output=True)
        subprocess.run([*PODMAN, "volume", "rm", "-f", volume], capture_output=True)

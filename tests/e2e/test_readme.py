"""The README as a newcomer reads it (issue 16, item 4): the commands of its "Using it" block are taken from
README.md itself and run as written, from the repository's root, with the real binary and the real MiniCluster:
check-config and --preflight on conf/demo.yaml pass, the quick form of `run` brings the job to RUNNING, `status`
shows it, Ctrl-C (SIGINT) stops it with a savepoint and the same command again resumes from that savepoint.
Only what the test harness must own is swapped: the binary under test, the jobs jar, /tmp/clicks (a fresh
directory), and the ports (8081 and 8091 may be taken on a shared machine). The container lines are run by
test_container.py; what a fresh clone needs before them is checked here (issue 30): the README's container block
builds the jar its `podman run` mounts (`make jobs container-image`), the images README.md, container/README.md and
docs/deployment.md build from or tag are names podman resolves without a registry alias, and the job layer of
docs/deployment.md is FROM the tag `make container-image` builds."""
import json
import os
import re
import shlex
import signal
import subprocess

from conftest import BIN, FLINK_HOME, JOBS_JAR, free_port, wait_for
from docskit import CONTAINER_README, DEPLOYMENT, README, blocks, make_dry, read, section

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def using_it_commands():
    """The shell commands of the first ```sh block under "## Using it", continuation lines joined."""
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text.split("## Using it", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    joined = block.replace("\\\n", " ")
    cmds = []
    for line in joined.splitlines():
        line = line.split("  #", 1)[0].strip()
        if line:
            cmds.append(line)
    return cmds


def adapt(cmd, state, rest, http):
    words = shlex.split(cmd.replace("$PWD", ROOT))
    out = []
    for w in words:
        w = {"build/flinklet": BIN, "build/jobs-2.2.1/flinklet-test-jobs.jar": JOBS_JAR}.get(w, w)
        w = w.replace("/tmp/clicks", state)
        out.append(w)
    if out[0] == BIN and out[1] in ("run", "check-config"):
        # the ports of conf/demo.yaml and of the quick form's defaults, moved off 8081/8091
        out[2:2] = ["-D", f"rest.port={rest}", "-D", f"flinklet.http.address=127.0.0.1:{http}"]
    return out


def test_readme_using_it_commands_work_as_written(tmp_path):
    cmds = using_it_commands()
    assert cmds[0] == "make all flink-lib jobs" and cmds[1].startswith("export FLINK_HOME=")
    # what the README's first two lines leave behind: the build (the binary under test) and FLINK_HOME
    env = {**os.environ, "FLINK_HOME": FLINK_HOME}
    state = str(tmp_path / "clicks")
    rest, http = free_port(), free_port()
    runs = [c for c in cmds[2:] if " run " in f" {c} "]
    assert len(runs) == 1, cmds
    for cmd in cmds[2:]:
        argv = adapt(cmd, state, rest, http)
        if cmd in runs:
            p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            try:
                def stable():
                    r = subprocess.run([BIN, "status", "--state-dir", state, "--ready"], env=env, cwd=ROOT,
                                       capture_output=True)
                    assert p.poll() is None, p.stdout.read().decode()[-3000:]
                    return r.returncode == 0
                wait_for(stable, 120, "the README's job RUNNING")
            except BaseException:
                os.killpg(p.pid, signal.SIGKILL)
                raise
            continue
        r = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        if " status " in f" {cmd} ":
            assert "RUNNING" in r.stdout and "STABLE" in r.stdout, r.stdout
    # the README: "on Ctrl-C or SIGTERM stops with a savepoint; run it again and it resumes from there"
    os.killpg(p.pid, signal.SIGINT)
    assert p.wait(60) == 0, p.stdout.read().decode()[-3000:]
    st = subprocess.run([BIN, "status", "--state-dir", state, "--json"], capture_output=True, text=True, cwd=ROOT)
    sp = json.loads(st.stdout)["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
    argv = adapt(runs[0], state, rest, http)
    p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        def resumed():
            r = subprocess.run([BIN, "status", "--state-dir", state, "--json"], capture_output=True, text=True)
            d = json.loads(r.stdout) if r.returncode == 0 else None
            return d if d and d["lifecycleState"] == "STABLE" and d["jvm"]["pid"] > 0 else None
        d = wait_for(resumed, 120, "the second run")
        assert d["restoredFrom"]["kind"] == "savepoint" and d["restoredFrom"]["location"] == sp, d["restoredFrom"]
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(60)


# FROM, the build arguments that name images, a build's tag (-t NAME; `pod stop -t 60` is a timeout), image:
IMAGE_REF = re.compile(r"(?:^FROM\s+|--build-arg\s+(?:FLINK_IMAGE|BUILDER)=|\s-t\s+(?=[a-z])|^\s*image:\s+)"
                       r"([^\s\"'$]+)", re.M)


def image_refs(text):
    return [m.group(1) for b in blocks(text, "sh") + blocks(text, "dockerfile") + blocks(text, "yaml")
            for m in IMAGE_REF.finditer(b)]


def test_image_names_resolve_without_a_registry_alias():
    """Short names (flink:1.20-java17) need a registry alias stock podman does not have: every image the docs
    build from, tag or run is fully qualified (a registry host, or localhost)."""
    refs = {p: image_refs(read(p)) for p in (README, CONTAINER_README, DEPLOYMENT)}
    assert any(refs.values())
    for path, names in refs.items():
        for n in names:
            host = n.split("/", 1)[0]
            assert "/" in n and ("." in host or host == "localhost" or ":" in host), f"{path}: {n}"


def test_job_layer_is_from_the_tag_make_container_image_builds():
    tag = re.search(r"\s-t\s+(\S+)\s+\.", make_dry("container-image")).group(1)
    text = read(DEPLOYMENT)
    froms = [m.group(1) for b in blocks(text, "dockerfile") for m in re.finditer(r"^FROM\s+(\S+)", b, re.M)]
    assert froms == [tag], (froms, tag)
    # the image the docs' podman run and the Quadlet unit start is that tag too
    assert tag in read(README) and tag in read(os.path.join(ROOT, "conf", "podman", "flinklet.container"))


def test_readme_container_block_builds_what_its_podman_run_mounts():
    text = section(read(README), "## Running it in a container")
    block = blocks(text, "sh")[0]
    make = [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.startswith("make ")]
    assert make, block
    targets = make[0][1:]
    assert "container-image" in targets and "jobs" in targets, targets
    jar = re.search(r"\$PWD/(build/[^:\"]+\.jar)", block).group(1)
    # `make jobs` is what produces that jar (mk: JOBS_JAR)
    r = subprocess.run(["make", "-p", "-n", "jobs"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert re.search(r"^JOBS_JAR :?= .*$", r.stdout, re.M), "no JOBS_JAR in the Makefile"
    jobs_jar = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-",
                               "print-jobs-jar"], input="print-jobs-jar:\n\t@echo $(JOBS_JAR)\n", cwd=ROOT,
                              capture_output=True, text=True, timeout=120).stdout.strip()
    assert jar == jobs_jar, (jar, jobs_jar)
    make_dry(*targets)  # the targets exist

"""flinklet in its container image (container/Containerfile), run by podman with no registry and no network.

The base is a local stand-in for the official Flink image, built once by scripts/container-base.sh (Debian
bookworm minbase, a JRE, the Maven-fetched Flink jars under /opt/flink/lib) and cached by the hash of its inputs;
the image is the Containerfile's runtime-prebuilt stage with the flinklet built on the host. One test follows a
job through the life of a container on a named volume: flinklet is PID 1, a `kill -9` of the JVM resumes from
a checkpoint, `podman stop` leaves a savepoint on the volume, and a fresh container on the same volume resumes
from exactly that savepoint, with the job's exactly-once output intact across all of it. Another runs the job
under two arbitrary uids of group 0 one after the other on one volume (OpenShift's restricted policy), with a
read-only root and RocksDB state. Others check that neither image (runtime-prebuilt with the host's flinklet,
and the default target `runtime`, compiled in the build stage with no network on a local stand-in for its
BUILDER) has Debian's libcurl or what it brings along, and that the latter fetches a job's jar over https from
inside the container.

FLINKLET_E2E_TAG_SUFFIX (default empty) is appended to the names of the images this builds, so that two
checkouts on one machine do not replace each other's images."""
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from conftest import JOBS_JAR, SANITIZER_LOGS, check_output, wait_for
from containerkit import (CONFIGMAP, JAR_IN_IMAGE, POD_SECURITY, ROOT, RUN_OPTS, SHUTDOWN_BUDGET, STATE,
                          TOKEN_FILE, assert_no_debian_libcurl, build_base, build_full_image, build_image, podman, same_location, say,
                          volume_path, volume_status)

pytestmark = [
    pytest.mark.skipif(shutil.which("podman") is None,
                       reason="podman is not installed: the container image can be neither built nor run"),
    # make e2e-asan: the image's base has no libasan/libubsan for that build, and its read-only root and user
    # 9999 leave the reports nowhere this run could read them
    pytest.mark.skipif(bool(SANITIZER_LOGS), reason="flinklet built with ASan/UBSan cannot run in the image "
                       "(no sanitizer runtimes there; make container-test runs this with build/flinklet)"),
]


HTTPS_SERVER = r"""
import http.server, ssl, sys
root, cert, key, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw):
        super().__init__(*a, directory=root, **kw)
    def log_message(self, fmt, *args):
        print("request", self.command, self.path, args[1] if len(args) > 1 else "", flush=True)
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
print("ready", flush=True)
httpd.serve_forever()
"""


def run_https_jar(image, tmp_path, capsys):
    """A job whose jar is https://127.0.0.1:8443/jobs/job.jar, served inside the container's own network namespace
    (still no network: an https server of the host's python, moved there by nsenter) with a certificate of a test
    CA. Without that CA the image's trust store refuses it (nothing is requested); with the CA handed to flinklet
    the documented way (flinklet.artifacts.ca-file) the job reaches RUNNING from it."""
    if not shutil.which("openssl") or not shutil.which("nsenter"):
        pytest.skip("openssl and nsenter are needed for the https case")
    from testkit import make_ca
    certs = tmp_path / "certs"
    certs.mkdir()
    ca, cert, key = make_ca(certs)
    os.chmod(ca, 0o644)
    www = tmp_path / "www"
    (www / "jobs").mkdir(parents=True)
    shutil.copy(JOBS_JAR, www / "jobs" / "job.jar")
    suffix = uuid.uuid4().hex[:8]
    netns, name, volume = f"flinklet-netns-{suffix}", f"flinklet-https-{suffix}", f"flinklet-https-{suffix}"
    untrusted, volume2 = f"flinklet-untrusted-{suffix}", f"flinklet-untrusted-{suffix}"
    job = ["--jar", "https://127.0.0.1:8443/jobs/job.jar", "--class", "dev.flinklet.jobs.StatefulCounter",
           "--", "--output", f"{STATE}/output"]
    server = None
    try:
        # the network namespace: a container that only sleeps, with loopback alone
        podman("run", "-d", "--name", netns, *RUN_OPTS, "--entrypoint", "sleep", image, "infinity")
        pid = podman("inspect", "--format", "{{.State.Pid}}", netns).stdout.strip()
        server = subprocess.Popen(["nsenter", "-t", pid, "-n", sys.executable, "-c", HTTPS_SERVER, str(www), cert,
                                   key, "8443"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert server.stdout.readline().strip() == "ready"
        opts = [o for o in RUN_OPTS if o not in ("--network", "none")]
        # the system's CAs only (/etc/ssl/certs): the test CA is not one of them, one attempt, then flinklet exits 1
        podman("volume", "create", volume2)
        r = podman("run", "--name", untrusted, "--network", f"container:{netns}", *opts, *POD_SECURITY,
                   "-v", f"{volume2}:{STATE}", image, "-D", "flinklet.restart.max-attempts=1",
                   "-D", "flinklet.restart.backoff.initial=100 ms", "-D", "flinklet.artifacts.retries=0", *job,
                   check=False, timeout=120)
        assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-3000:]
        with open(volume_path(volume2, f"file://{STATE}/events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        failed = [e for e in events if e["type"] == "ArtifactFetchFailed"]
        assert failed and "certificate" in failed[0]["message"].lower(), events
        assert "JvmStarted" not in [e["type"] for e in events]

        podman("volume", "create", volume)
        podman("run", "-d", "--name", name, "--network", f"container:{netns}", *opts, *POD_SECURITY,
               "-v", f"{volume}:{STATE}", "-v", f"{ca}:/etc/flinklet-ca/ca.pem:ro", image,
               "-D", "flinklet.artifacts.ca-file=/etc/flinklet-ca/ca.pem", *job)

        def running():
            if not json.loads(podman("inspect", name).stdout)[0]["State"]["Running"]:
                raise AssertionError("the container stopped:\n" + podman("logs", name, check=False).stderr[-3000:])
            r = podman("exec", name, "flinklet", "status", "--json", check=False, timeout=60)
            st = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None
            return st if st and st["jobStatus"]["state"] == "RUNNING" else None
        wait_for(running, 150, "the job of the https jar RUNNING", interval=1)
        podman("stop", "-t", "40", name, timeout=90)
        assert json.loads(podman("inspect", name).stdout)[0]["State"]["ExitCode"] == 0
        server.terminate()
        log = server.communicate(timeout=30)[0]
        # one request: the one over the verified connection (the refused handshake sent none)
        assert log.count("request GET /jobs/job.jar") == 1 and "request GET /jobs/job.jar 200" in log, log
        say(capsys, f"{image}: the job's jar came over https from inside the container")
    except BaseException:
        print(podman("logs", name, check=False).stderr[-4000:])
        raise
    finally:
        if server and server.poll() is None:
            server.kill()
        podman("rm", "-f", "-t", "0", name, check=False)
        podman("rm", "-f", "-t", "0", untrusted, check=False)
        podman("rm", "-f", "-t", "0", netns, check=False)
        podman("volume", "rm", "-f", volume, check=False)
        podman("volume", "rm", "-f", volume2, check=False)


def test_prebuilt_image_has_no_debian_libcurl(capsys):
    """runtime-prebuilt (what make container-image builds) with the host's flinklet (CURL=bundled, the default):
    neither flinklet nor the image has Debian's libcurl, libssh2, OpenLDAP, Kerberos & co."""
    base = build_base(capsys)
    image = build_image(capsys, base)
    assert_no_debian_libcurl(image)


def test_default_target_links_the_bundled_libcurl_offline_and_fetches_an_https_jar(tmp_path, capsys):
    """The Containerfile's default target, as a user builds it: the build stage compiles scripts/curl.sh's static
    libcurl (here from the context's Debian source package, with no network), the runtime stage has no libcurl,
    and a remote jar still comes over https, verified against the CA of flinklet.artifacts.ca-file."""
    base = build_base(capsys)
    builder = build_base(capsys, variant="builder")
    image = build_full_image(capsys, base, builder)
    assert_no_debian_libcurl(image)
    version = podman("run", "--rm", *RUN_OPTS, "--entrypoint", "/usr/local/bin/flinklet", image, "version").stdout
    assert open(os.path.join(ROOT, "VERSION")).read().strip() in version, version
    run_https_jar(image, tmp_path, capsys)


def config_dir(tmp_path, conf=None, drop=()):
    """/etc/flinklet for the containers: the Kubernetes ConfigMap's document (conf/kubernetes/configmap.yaml) with
    the test job, 1 s checkpoints and podman's default budget, then conf's options and without drop's;
    readable by the image's user."""
    with open(CONFIGMAP) as f:
        doc = yaml.safe_load(yaml.safe_load(f)["data"]["flinklet.yaml"])
    doc["metadata"]["name"] = "container-counter"
    doc["spec"]["flinkConfiguration"].update({
        "execution.checkpointing.interval": "1s",
        "flinklet.shutdown.timeout": f"{SHUTDOWN_BUDGET} s",
    })
    doc["spec"]["job"].update({
        "jarURI": f"local://{JAR_IN_IMAGE}",
        "entryClass": "dev.flinklet.jobs.StatefulCounter",
        "args": ["--rate", "100", "--keys", "8", "--output", f"{STATE}/output"],
        "parallelism": 2,
    })
    assert doc["spec"]["flinkConfiguration"]["flinklet.state.dir"] == STATE
    assert doc["spec"]["flinkConfiguration"]["flinklet.http.token-file"] == TOKEN_FILE
    doc["spec"]["flinkConfiguration"].update(conf or {})
    for key in drop:
        del doc["spec"]["flinkConfiguration"][key]
    d = tmp_path / "etc-flinklet"
    d.mkdir()
    (d / "flinklet.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    token = tmp_path / "token"
    token.write_text(uuid.uuid4().hex + "\n")
    for path, mode in ((tmp_path, 0o755), (d, 0o755), (d / "flinklet.yaml", 0o644), (token, 0o644)):
        os.chmod(path, mode)
    return str(d), str(token)


class Container:
    def __init__(self, image, volume, conf, user="9999:9999"):
        self.image, self.volume, self.user = image, volume, user
        self.conf, self.token = conf
        self.name = f"flinklet-e2e-{uuid.uuid4().hex[:8]}"

    def run(self):
        """As the StatefulSet runs it: the volume, the ConfigMap directory, the Secret (when the configuration
        names it), the job's jar, a read-only root file system with /tmp, no capabilities, no privilege
        escalation, uid 9999 (or self.user)."""
        security = [*POD_SECURITY]
        security[security.index("--user") + 1] = self.user
        secret = ["-v", f"{self.token}:{TOKEN_FILE}:ro"] if self.token else []
        podman("run", "-d", "--name", self.name, *RUN_OPTS, *security,
               "-v", f"{self.volume}:{STATE}",
               "-v", f"{self.conf}:/etc/flinklet:ro", *secret,
               "-v", f"{JOBS_JAR}:{JAR_IN_IMAGE}:ro",
               self.image, "-c", "/etc/flinklet/flinklet.yaml")
        return self

    def exec(self, *args, check=True):
        return podman("exec", self.name, *args, check=check, timeout=60)

    def state(self):
        return json.loads(podman("inspect", self.name).stdout)[0]["State"]

    def status(self):
        """The status document through `flinklet status --json` inside the container."""
        if not self.state()["Running"]:
            raise AssertionError(f"the container {self.name} is not running:\n{self.logs()}")
        r = self.exec("flinklet", "status", "--json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None

    def logs(self, lines=60):
        r = podman("logs", self.name, check=False)
        out = (r.stdout + r.stderr).splitlines()
        return "\n".join(out[-lines:])

    def wait_stable(self, timeout=150, pred=lambda st: True, what="lifecycle STABLE with the job RUNNING"):
        def stable():
            st = self.status()
            return (st if st and st["lifecycleState"] == "STABLE" and st["jobStatus"]["state"] == "RUNNING"
                    and st["jvm"]["pid"] > 0 and pred(st) else None)
        return wait_for(stable, timeout, what, interval=1)

    def wait_checkpoint(self, above, timeout=60):
        def ckpt():
            st = self.status()
            lc = st and st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]
            return st if lc and lc["id"] > above else None
        return wait_for(ckpt, timeout, f"a checkpoint after {above}", interval=1)

    def remove(self):
        podman("rm", "-f", "-t", "0", self.name, check=False)


def test_container_pid1_crash_restore_stop_savepoint_and_restore(tmp_path, capsys):
    base = build_base(capsys)
    image = build_image(capsys, base)
    conf = config_dir(tmp_path)
    volume = f"flinklet-e2e-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", volume)
    containers = []
    t0 = time.monotonic()
    try:
        # ---- first container: flinklet is PID 1 and the job runs as the image's non-root user
        c1 = Container(image, volume, conf).run()
        containers.append(c1)
        st = c1.wait_stable()
        cmdline = c1.exec("cat", "/proc/1/cmdline").stdout.split("\0")
        assert cmdline[:2] == ["/usr/local/bin/flinklet", "run"], cmdline
        assert c1.exec("cat", "/proc/1/comm").stdout.strip() == "flinklet"
        jvm = st["jvm"]["pid"]
        jvm_status = dict(line.split(":\t", 1) for line in c1.exec("cat", f"/proc/{jvm}/status").stdout.splitlines()
                          if ":\t" in line)
        assert jvm_status["PPid"].strip() == "1", "the JVM must be a child of flinklet, PID 1"
        assert jvm_status["Uid"].split()[0] == "9999", "the JVM must run as the image's user flink"
        assert c1.exec("flinklet", "status", "--live", check=False).returncode == 0
        assert c1.exec("flinklet", "status", "--ready", check=False).returncode == 0
        # the image's HEALTHCHECK (flinklet status --live), run on demand: podman's timers need systemd
        assert podman("healthcheck", "run", c1.name, check=False).returncode == 0
        say(capsys, f"RUNNING in the container after {time.monotonic() - t0:.1f} s")

        # ---- kill -9 of the JVM: flinklet (and so the container) stays, the job resumes from a checkpoint
        st = c1.wait_checkpoint(1)
        before = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
        started = c1.state()["StartedAt"]
        c1.exec("sh", "-c", f"kill -9 {jvm}")
        st = c1.wait_stable(pred=lambda s: s["jvm"]["restarts"] == 1 and s["jvm"]["pid"] != jvm,
                            what="the JVM restarted once and the job RUNNING again")
        assert st["restoredFrom"]["kind"] == "checkpoint", st["restoredFrom"]
        m = re.search(r"/chk-(\d+)$", st["restoredFrom"]["location"].rstrip("/"))
        assert m and int(m.group(1)) >= before, st["restoredFrom"]
        assert st["jvm"]["lastExitSignal"] == 9
        state = c1.state()
        assert state["Running"] and state["StartedAt"] == started, "the container must not have restarted"
        assert volume_status(volume)["restoredFrom"]["kind"] == "checkpoint"
        st = c1.wait_checkpoint(int(m.group(1)))

        # ---- the control API with the token of the mounted secret (status.json names the token file)
        r = c1.exec("flinklet", "savepoint", "--wait", check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        assert volume_status(volume)["supervisor"]["tokenFile"] == TOKEN_FILE

        # ---- podman stop: SIGTERM -> stop-with-savepoint inside the shutdown budget, exit 0
        t_stop = time.monotonic()
        podman("stop", "-t", "40", c1.name, timeout=90)
        took = time.monotonic() - t_stop
        say(capsys, f"podman stop took {took:.1f} s")
        assert took < SHUTDOWN_BUDGET + 5, f"stop took {took:.1f} s, the budget is {SHUTDOWN_BUDGET} s"
        assert c1.state()["ExitCode"] == 0, c1.logs()
        st = volume_status(volume)
        assert st["lifecycleState"] == "SUSPENDED", st
        assert st["jvm"]["pid"] == 0
        savepoint = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
        assert savepoint and savepoint["triggerType"] == "UPGRADE", st["jobStatus"]["savepointInfo"]
        assert os.path.isfile(os.path.join(volume_path(volume, savepoint["location"]), "_metadata"))

        # ---- a fresh container on the same volume restores from exactly that savepoint
        c2 = Container(image, volume, conf).run()
        containers.append(c2)
        st = c2.wait_stable()
        assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
        assert same_location(st["restoredFrom"]["location"], savepoint["location"]), \
            (st["restoredFrom"], savepoint)
        assert st["jobStatus"]["jobId"] == volume_status(volume)["jobStatus"]["jobId"]
        c2.wait_checkpoint(st["restoredFrom"]["id"])  # one of c2's own: the volume's lastCheckpoint is older
        podman("stop", "-t", "40", c2.name, timeout=90)
        assert c2.state()["ExitCode"] == 0, c2.logs()

        # the job's output across the crash, the stop and the new container: no loss, no duplicates
        rc, summary = check_output(volume_path(volume, f"file://{STATE}/output"))
        assert rc == 0, summary
        assert summary.get("records", 0) > 0, summary
        say(capsys, f"container test body took {time.monotonic() - t0:.1f} s; output {summary}")
    except BaseException:
        for c in containers:
            print(f"---- podman logs {c.name}\n{c.logs(120)}")
        raise
    finally:
        for c in containers:
            c.remove()
        podman("volume", "rm", "-f", volume, check=False)


def readme_podman_run():
    """The `podman run` command of README.md's "Running it in a container", continuation lines joined."""
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text.split("## Running it in a container", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1).replace("\\\n", " ")
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    assert lines[0] == "make container-image", lines
    return [line for line in lines if line.startswith("podman run")][0]


def test_readme_podman_line_runs_stops_with_a_savepoint_and_resumes(tmp_path, capsys):
    # the README's line as written, with what this machine and the harness must own swapped: podman's global
    # options and no network (so no -p and no -it: there is no terminal), the image tag built here, a fresh volume
    base = build_base(capsys)
    image = build_image(capsys, base)
    words = shlex.split(readme_podman_run().replace("$PWD", ROOT))
    assert words[:2] == ["podman", "run"] and "localhost/flinklet:0.1.0-flink2.2.1" in words, words
    volume = f"flinklet-readme-{uuid.uuid4().hex[:8]}"
    name = f"flinklet-readme-{uuid.uuid4().hex[:8]}"
    args, skip = [], 0
    for i, w in enumerate(words[2:], 2):
        if skip:
            skip -= 1
            continue
        if w in ("-it", "--rm"):
            continue
        if w == "-p":
            skip = 1
            continue
        w = {"localhost/flinklet:0.1.0-flink2.2.1": image}.get(w, w)
        if w.startswith("flinklet-state:"):
            w = w.replace("flinklet-state:", f"{volume}:", 1)
        args.append(w.replace(os.path.join(ROOT, "build/jobs-2.2.1/flinklet-test-jobs.jar"), JOBS_JAR))

    def run():
        podman("run", "-d", "--name", name, *RUN_OPTS, *args)

    def status():
        r = podman("exec", name, "flinklet", "status", "--json", check=False, timeout=60)
        return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None

    def stable():
        st = status()
        return st if st and st["lifecycleState"] == "STABLE" and st["jvm"]["pid"] > 0 else None

    podman("volume", "create", volume)
    try:
        run()
        wait_for(stable, 150, "the README's container job RUNNING", interval=1)
        wait_for(lambda: (s := status()) and s["jobStatus"]["checkpointInfo"]["lastCheckpoint"], 60,
                 "a checkpoint", interval=1)
        podman("stop", "-t", "40", name, timeout=90)  # "podman stop (SIGTERM) takes the savepoint"
        assert json.loads(podman("inspect", name).stdout)[0]["State"]["ExitCode"] == 0
        sp = volume_status(volume)["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]
        podman("rm", "-f", name, check=False)
        run()  # "the next podman run on the same volume resumes from it"
        st = wait_for(stable, 150, "the second container", interval=1)
        assert st["restoredFrom"]["kind"] == "savepoint" and same_location(st["restoredFrom"]["location"], sp)
    finally:
        podman("rm", "-f", "-t", "0", name, check=False)
        podman("volume", "rm", "-f", volume, check=False)


def volume_entries(volume):
    """(path relative to the volume, uid, gid, mode) of everything on the volume."""
    mount = podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip()
    out = []
    for dirpath, dirs, files in os.walk(mount):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out.append((os.path.relpath(p, mount), st.st_uid, st.st_gid, st.st_mode))
    return mount, out


def test_arbitrary_uids_of_group_0_share_one_volume(tmp_path, capsys):
    """OpenShift's restricted policy: each pod runs as an arbitrary uid in group 0, a new one at each rollout.
    uid 123456 starts the job on a new volume (RocksDB state, the generated API token) and stops with a
    savepoint; uid 234567 then takes the same volume: it takes the lock, reads the token, restores from that
    savepoint, checkpoints, appends events and takes a savepoint through the control API, and the job's output
    (files the first uid's JVM made) carries on exactly once. A third uid finds the token made 0600 by another
    (as an older flinklet made it) and replaces it. Read-only root, no capabilities, throughout."""
    base = build_base(capsys)
    image = build_image(capsys, base)
    # the generated token on the volume (no Secret), and RocksDB, the documented state backend the image keeps
    conf = config_dir(tmp_path, conf={"state.backend.type": "rocksdb"}, drop=("flinklet.http.token-file",))
    conf = (conf[0], None)
    volume = f"flinklet-uids-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", volume)
    containers = []
    try:
        c1 = Container(image, volume, conf, user="123456:0").run()
        containers.append(c1)
        c1.wait_stable()
        assert c1.exec("id", "-u").stdout.strip() == "123456"
        c1.wait_checkpoint(1)
        mount, _ = volume_entries(volume)
        token = open(os.path.join(mount, "http.token")).read()
        podman("stop", "-t", "40", c1.name, timeout=90)
        assert c1.state()["ExitCode"] == 0, c1.logs()
        savepoint = volume_status(volume)["jobStatus"]["savepointInfo"]["lastSavepoint"]
        assert savepoint and savepoint["triggerType"] == "UPGRADE"

        # what the first uid left: group 0's, shared with the group, nothing for others; the token group-readable
        mine = [e for e in volume_entries(volume)[1] if e[1] == 123456]
        assert len(mine) > 10, mine
        for rel, _, gid, mode in mine:
            assert gid == 0, f"{rel} is not group 0's: {gid}"
            assert not mode & 0o007, f"{rel} is open to others: {oct(mode)}"
            if stat.S_ISDIR(mode):
                assert mode & 0o2070 == 0o2070, f"{rel}: {oct(mode)}"
        assert stat.S_IMODE(os.stat(os.path.join(mount, "http.token")).st_mode) == 0o640

        c2 = Container(image, volume, conf, user="234567:0").run()
        containers.append(c2)
        st = c2.wait_stable()
        assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
        assert same_location(st["restoredFrom"]["location"], savepoint["location"])
        c2.wait_checkpoint(st["restoredFrom"]["id"])  # one of c2's own: the volume's lastCheckpoint is older
        r = c2.exec("flinklet", "savepoint", "--wait", check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        assert open(os.path.join(mount, "http.token")).read() == token, "the token must be read, not replaced"
        podman("stop", "-t", "40", c2.name, timeout=90)
        assert c2.state()["ExitCode"] == 0, c2.logs()
        events = [json.loads(line) for line in open(os.path.join(mount, "events.jsonl"))]
        assert len([e for e in events if e["type"] == "SavepointCompleted"]) >= 3, [e["type"] for e in events]
        assert any(e[1] == 234567 for e in volume_entries(volume)[1]), "the second uid wrote nothing"

        # a token an older flinklet made 0600 under another uid: the next uid replaces it (with a warning) and
        # its control API works with the new one
        token_path = os.path.join(mount, "http.token")
        os.chown(token_path, 123456, 0)
        os.chmod(token_path, 0o600)
        c3 = Container(image, volume, conf, user="345678:0").run()
        containers.append(c3)
        c3.wait_stable()
        assert "is not readable by uid 345678: replacing it" in c3.logs(400), c3.logs()
        assert open(token_path).read() != token
        assert stat.S_IMODE(os.stat(token_path).st_mode) == 0o640
        r = c3.exec("flinklet", "savepoint", "--wait", check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        podman("stop", "-t", "40", c3.name, timeout=90)
        assert c3.state()["ExitCode"] == 0, c3.logs()
        rc, summary = check_output(volume_path(volume, f"file://{STATE}/output"))
        assert rc == 0, summary
        assert summary.get("records", 0) > 0, summary
        say(capsys, f"two uids on one volume: output {summary}")
    except BaseException:
        for c in containers:
            print(f"---- podman logs {c.name}\n{c.logs(120)}")
        raise
    finally:
        for c in containers:
            c.remove()
        podman("volume", "rm", "-f", volume, check=False)


def health(name):
    """`podman healthcheck run` (the image's HEALTHCHECK, on demand: podman's timers need systemd): its exit code,
    how long it took, and the container's health status after it."""
    t0 = time.monotonic()
    r = podman("healthcheck", "run", name, check=False, timeout=90)
    took = time.monotonic() - t0
    st = json.loads(podman("inspect", name).stdout)[0]["State"]
    h = st.get("Health") or st.get("Healthcheck") or {}
    return r.returncode, took, h.get("Status")


def test_image_healthcheck_sees_a_hung_pid1(tmp_path, capsys):
    """Issue 30, item 3: the image's HEALTHCHECK asks the running supervisor (`flinklet status --url
    http://127.0.0.1:8091 --live`, 5 s for the answer), so flinklet stopped with SIGSTOP as PID 1 is unhealthy
    after HealthRetries checks, each inside the check's timeout; the state directory alone (the lock, status.json)
    said healthy. It is healthy again once PID 1 runs on. The same holds with flinklet.http.address on another
    port (the check asks where status.json says the supervisor serves), and with it off the check answers from
    the state directory (no endpoint to ask: healthy while a supervisor holds the volume)."""
    base = build_base(capsys)
    image = build_image(capsys, base)
    start_period = 60  # the image's HEALTHCHECK --start-period
    assert "StartPeriod\":60000000000" in podman("image", "inspect", "--format", "{{json .Config.Healthcheck}}",
                                                   image).stdout
    cases = [("default", {}), ("other-port", {"flinklet.http.address": "0.0.0.0:9091"}),
             ("off", {"flinklet.http.address": "off"})]
    running, volumes = [], []
    try:
        for label, conf in cases:
            d = tmp_path / label
            d.mkdir()
            volume = f"flinklet-e2e-{uuid.uuid4().hex[:8]}"
            podman("volume", "create", volume)
            volumes.append(volume)
            c = Container(image, volume, config_dir(d, conf=conf)).run()
            running.append((label, c))
        t0 = time.monotonic()
        for label, c in running:
            # the supervisor serves (and records where) within a second; the job need not run for liveness
            wait_for(lambda: (st := c.status()) and st["supervisor"]["pid"] == 1, 60,
                     f"{label}: the supervisor's status.json", interval=1)
            rc, took, status = health(c.name)
            assert rc == 0, (label, rc, status, c.logs())
        # failures inside the image's start period do not count (podman keeps the image's period)
        time.sleep(max(0.0, start_period + 2 - (time.monotonic() - t0)))
        for label, c in running:
            if label == "off":
                rc, _, status = health(c.name)  # no endpoint: the state directory answers, as documented
                assert rc == 0 and status == "healthy", (label, rc, status)
                continue
            pid = int(podman("inspect", "--format", "{{.State.Pid}}", c.name).stdout.strip())
            assert pid > 1
            os.kill(pid, signal.SIGSTOP)  # from the host: PID 1 of its namespace ignores it from inside
            try:
                runs = [health(c.name) for _ in range(3)]  # HEALTHCHECK --retries=3
                say(capsys, f"{label}: PID 1 stopped: checks {[(r, f'{t:.1f}s', s) for r, t, s in runs]}")
                assert all(r != 0 for r, _, _ in runs), runs
                assert all(t < 15 for _, t, _ in runs), f"a check ran into the HEALTHCHECK timeout: {runs}"
                assert runs[-1][2] == "unhealthy", runs
                # the state directory alone still says live: what the check used to ask
                assert c.exec("flinklet", "status", "--live", check=False).returncode == 0
            finally:
                os.kill(pid, signal.SIGCONT)
            rc, _, status = health(c.name)
            assert rc == 0 and status == "healthy", (label, rc, status)
    except BaseException:
        for label, c in running:
            print(label, c.logs())
        raise
    finally:
        for _, c in running:
            c.remove()
        for volume in volumes:
            podman("volume", "rm", "-f", volume, check=False)

"""attack_kit: helpers of the attack tests in tests/faults (test_attack_*.py), written from the contract and the
docs only: a fake "java" that records every spawn (so a test can tell that no JVM was started) and can crash at
once, a hold on the volume through volshim (VOLSHIM_SYNC_BLOCK_FILE), Flink-shaped `_metadata` files, and HTTP
calls to flinklet's endpoint."""
import json
import os
import struct
import threading
import time
from http.client import HTTPConnection

from testkit import Supervisor

SHIM = os.environ.get("FLINKLET_VOLSHIM", os.path.abspath("build/volshim.so"))
UID_A, UID_B = 1001, 1002  # two uids of group 0 taking turns on one volume (AsUid)
MAGIC = 0x4960672D  # Flink's checkpoint metadata magic number (the first 4 bytes of every _metadata)


def metadata(checkpoint_id):
    """The bytes of a `_metadata` header as Flink writes it: magic, version, checkpoint id."""
    return struct.pack(">IIq", MAGIC, 6, checkpoint_id) + b"\0" * 64


def write_checkpoint(state, job_id, n):
    d = os.path.join(state, "checkpoints", job_id, f"chk-{n}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "_metadata"), "wb") as f:
        f.write(metadata(n))
    return d


def write_savepoint(state, job_id, n, suffix="0123456789ab"):
    d = os.path.join(state, "savepoints", f"savepoint-{job_id[:6]}-{suffix}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "_metadata"), "wb") as f:
        f.write(metadata(n))
    return d


def job_id(state):
    with open(os.path.join(state, "job-id")) as f:
        return f.read().strip()


def install_fake_java(sup, crash_file=None, touch_state=False, end_code=0, consume_stop=False):
    """Replaces the Supervisor's fake java with one that appends "<pid> <argv>" to <tmp>/spawns.<name> at every
    spawn, exits 1 at once while crash_file exists, and (touch_state) creates a file and a directory on the state
    volume as Flink would (inheriting flinklet's umask). It ends with end_code once the stop file exists.
    Returns the spawns file."""
    spawns = os.path.join(str(sup.tmp), f"spawns.{time.monotonic_ns()}")
    crash = crash_file or os.path.join(str(sup.tmp), "no-crash-file")
    extra = ""
    if touch_state:
        extra = (f"mkdir -p '{sup.state}/flink-made-dir' && : > '{sup.state}/flink-made-dir/flink-made-file'\n")
    with open(sup.java, "w") as f:
        f.write("#!/bin/sh\n"
                "# attack tests: a JVM stand-in that records its spawn\n"
                f"echo \"$$ $*\" >> '{spawns}'\n"
                f"if [ -e '{crash}' ]; then exit 1; fi\n"
                f"{extra}"
                f"while [ ! -e '{sup.stop_file}' ]; do sleep 0.1; done\n"
                # a crash (or with consume_stop, an end) is one JVM's, not the next one's
                + (f"rm -f '{sup.stop_file}'\n" if end_code or consume_stop else "")
                + f"exit {end_code}\n")
    os.chmod(sup.java, 0o755)
    return spawns


def spawn_count(spawns):
    try:
        with open(spawns) as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


class Hold:
    """Holds every fsync/fdatasync flinklet makes on the volume while the block file exists (volshim)."""

    def __init__(self, tmp):
        self.path = os.path.join(str(tmp), "volume.hold")

    def env(self, state):
        return {"LD_PRELOAD": SHIM, "VOLSHIM_DIR": state, "VOLSHIM_SYNC_BLOCK_FILE": self.path}

    def hold(self):
        try:
            os.unlink(self.path + ".held")
        except FileNotFoundError:
            pass
        open(self.path, "w").close()

    def held(self):
        """True once a sync waits on the hold."""
        return os.path.exists(self.path + ".held")

    def release(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def http(sup, path, method="GET", token=None, timeout=10):
    """(status, body) of one request to sup's endpoint; a POST carries an empty body (Content-Length: 0)."""
    return sup.http(path, method, token, body=b"" if method == "POST" else None, timeout=timeout)


def http_json(sup, path):
    code, body = http(sup, path)
    return code, (json.loads(body) if body.strip().startswith("{") else body)


def token(sup):
    return sup.token()


class Call:
    """One HTTP request in a thread: result is (code, body), or the exception it raised. `sent` is set once the
    whole request is written to flinklet's socket (see taken())."""

    def __init__(self, sup, path, method="POST", token=None, timeout=120):
        self.result = None
        self.sent = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(sup, path, method, token, timeout), daemon=True)
        self.thread.start()

    def _run(self, sup, path, method, token, timeout):
        try:
            c = HTTPConnection("127.0.0.1", sup.http_port, timeout=timeout)
            try:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                c.request(method, path, body=b"" if method == "POST" else None, headers=headers)
                self.sent.set()
                r = c.getresponse()
                self.result = (r.status, r.read().decode())
            finally:
                c.close()
        except Exception as e:  # noqa: BLE001  (a connection closed by a stopping flinklet is a result too)
            self.result = e
        finally:
            self.sent.set()

    def done(self):
        return not self.thread.is_alive()

    def wait(self, timeout=120):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the request was never answered"
        return self.result


def taken(sup, call, timeout=30):
    """Returns once flinklet has read call's request: it was written whole, and a GET /healthz sent after that was
    answered (flinklet's one loop reads every readable connection before it answers a later one)."""
    assert call.sent.wait(timeout), "the request was never sent"
    code, _ = http(sup, "/healthz")
    assert code in (200, 503), code


class AsUid(Supervisor):
    """A Supervisor run as uid:gid with supplementary groups, with an umask, on a shared state directory."""

    def __init__(self, base, server, sub, uid=None, gid=0, groups=(0,), umask=0o022, **kw):
        tmp = base / sub
        tmp.mkdir()
        os.chmod(tmp, 0o755)
        super().__init__(tmp, server, state_dir=str(base / "state"), **kw)
        server.state_dirs[:] = list(dict.fromkeys(server.state_dirs))
        self.uid, self.gid, self.groups, self.umask = uid, gid, groups, umask
        self.spawns = install_fake_java(self, touch_state=True)
        open(self.spawns, "w").close()
        os.chmod(self.spawns, 0o666)
        self.tmpdir = str(base / "tmp")

    def start(self):
        self.note_leftovers()
        prefix = []
        if self.uid is not None:
            prefix = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}",
                      "--groups=" + ",".join(str(g) for g in self.groups), "--"]
        um = self.umask
        return self.spawn([*prefix, *self.argv()], dict(os.environ, TMPDIR=self.tmpdir),
                          preexec_fn=lambda: os.umask(um))

    def argv_of_spawn(self, n=-1):
        with open(self.spawns) as f:
            return [line for line in f if line.strip()][n].split()

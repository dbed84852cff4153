"""testkit: helpers shared by the e2e tests, the fault-injection tests and the benchmarks: free loopback ports,
waiting for a condition, what a Flink JVM started by hand needs (Java 17 flags, console logging), a memory
cgroup that holds a process tree to a hard limit, and the status page in headless Chromium (its DOM read back)."""
import html.parser
import json
import os
import random
import shutil
import socket
import subprocess
import time

# The module flags Flink's own scripts pass on Java 17 (as src/flink/flinkconf.c does for the MiniCluster).
JAVA17 = [
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED", "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED", "--add-opens=java.base/java.time=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
]

LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.console.ref = C
appender.console.name = C
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d %-5p %c{1} - %m%n
"""


# The autoscaler on, deciding every few seconds but not scaling (recommendations only): what the status page's
# test and its bench chart
RECOMMENDING_AUTOSCALER = {
    "job.autoscaler.enabled": "true",
    "job.autoscaler.scaling.enabled": "false",
    "job.autoscaler.metrics.window": "20 s",
    "job.autoscaler.stabilization.interval": "5 s",
    "autoscaler.standalone.control-loop.interval": "3 s",
    "metrics.fetcher.update-interval": "2000",
}


def _below_ephemeral():
    """[low, high) of the ports the kernel never gives a connection's local end (those below its ephemeral range)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            first = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    return (10000, first) if first > 11000 else (first // 2, first)


_next_port = None


def free_port():
    """A port of 127.0.0.1 that nothing holds now, for a server the test starts later. Not the kernel's bind(0)
    choice: that is in the ephemeral range, where any process's next outgoing connection (thousands a minute
    here: REST polls, scrapes) may take it before the server binds it (CI saw flinklet's HTTP port so taken).
    Below that range only servers bind; each process walks the range from a random start, so that parallel
    test processes rarely meet, and skips what is held."""
    global _next_port
    low, high = _below_ephemeral()
    if _next_port is None or not low <= _next_port < high:
        _next_port = random.Random(os.getpid() ^ time.time_ns()).randrange(low, high)
    for _ in range(high - low):
        port = _next_port
        _next_port = low + (port - low + 1) % (high - low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {low}-{high - 1}")


def file_id(path):
    """(inode, mtime) of path, None when there is none."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    return s.st_ino, s.st_mtime_ns


def events_whole_bytes(state):
    """The length of events.jsonl up to the end of its last whole line (0 without one)."""
    try:
        with open(os.path.join(state, "events.jsonl"), "rb") as f:
            data = f.read()
    except OSError:  # none, or not a file (a test's attack): flinklet says so itself
        return 0
    return data.rfind(b"\n") + 1


def events_after(state, offset):
    """The events of events.jsonl from byte offset on (one of events_whole_bytes)."""
    try:
        with open(os.path.join(state, "events.jsonl"), "rb") as f:
            f.seek(offset)
            text = f.read().decode()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def wait_for(pred, timeout, what, interval=0.5, error=AssertionError):
    """The first truthy value of pred(), polled every interval seconds; error after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise error(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def norm(location):
    """A snapshot location as a path: file:/x, file:///x and /x name the same directory."""
    p = location
    for prefix in ("file://", "file:"):
        if p.startswith(prefix):
            p = p[len(prefix):]
            break
    while p.startswith("//"):
        p = p[1:]
    return p.rstrip("/")


class MemoryLimit:
    """A memory cgroup with a hard limit, made under this process's own cgroup (cgroup v2, or v1's `memory`
    controller), so a process put in it (and its children) is held to the limit by the kernel: the OOM killer
    ends it when it needs more than the limit and no page cache is left to reclaim. make() says why not when the
    machine does not allow one (no controller, no permission); remove() once every process in it has exited."""

    def __init__(self, name, limit_bytes):
        self.name, self.limit, self.path, self.version, self.why_not = name, limit_bytes, None, None, None

    @staticmethod
    def _own():
        """(version, directory of this process's cgroup) for the memory controller, or None."""
        try:
            with open("/proc/self/cgroup") as f:
                lines = [line.rstrip("\n").split(":", 2) for line in f]
        except OSError:
            return None
        for _, controllers, rel in lines:
            if "memory" in controllers.split(","):
                return 1, "/sys/fs/cgroup/memory" + rel
        for hid, controllers, rel in lines:
            if hid == "0" and controllers == "":
                for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    if os.path.exists(os.path.join(root, "cgroup.controllers")):
                        with open(os.path.join(root, "cgroup.controllers")) as c:
                            if "memory" in c.read().split():
                                return 2, root + rel
        return None

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def _read(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""

    def make(self):
        own = self._own()
        if not own:
            self.why_not = "no memory cgroup controller"
            return False
        self.version, base = own
        self.path = os.path.join(base, self.name)
        try:
            os.makedirs(self.path, exist_ok=True)
            if self.version == 1:
                self._write("memory.limit_in_bytes", self.limit)
                try:
                    self._write("memory.memsw.limit_in_bytes", self.limit)  # no swap beyond the limit either
                except OSError:
                    pass
            else:
                self._write("memory.max", self.limit)
                try:
                    self._write("memory.swap.max", 0)
                except OSError:
                    pass
        except OSError as e:
            self.why_not = f"cannot make {self.path}: {e}"
            self.remove()
            return False
        return True

    def enter(self):
        """Moves the calling process into the cgroup (as a Popen preexec_fn: the child and its children)."""
        self._write("cgroup.procs", "0")

    def describe(self):
        ctl = "memory.limit_in_bytes" if self.version == 1 else "memory.max"
        return f"cgroup v{self.version} {ctl}={self.limit} ({self.path})"

    def reset_peak(self):
        """Starts the peak charge over from what is charged now (v1: memory.max_usage_in_bytes; v2 kernels from
        6.12 take a write to memory.peak); False when the kernel cannot."""
        try:
            self._write("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak", 0)
            return True
        except OSError:
            return False

    def stats(self):
        """{'peak': bytes the cgroup was charged at most (page cache included), 'oom_kills': n, 'failcnt': n}."""
        out = {"peak": 0, "oom_kills": 0, "failcnt": 0}
        if self.version == 1:
            out["peak"] = int(self._read("memory.max_usage_in_bytes") or 0)
            out["failcnt"] = int(self._read("memory.failcnt") or 0)
            events = self._read("memory.oom_control")
        else:
            out["peak"] = int(self._read("memory.peak") or 0)
            events = self._read("memory.events")
        for line in events.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                out["oom_kills"] = int(v)
            if k == "max" and self.version == 2:
                out["failcnt"] = int(v)
        return out

    def remove(self):
        if self.path and os.path.isdir(self.path):
            try:
                os.rmdir(self.path)
            except OSError:
                pass


# ---- the status page in a real browser (tests/e2e/test_status_page.py, tests/faults/test_rescale_history.py) ----

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()


class Dom(html.parser.HTMLParser):
    """The tree of a serialized document, enough to find elements by id, tag and class."""
    VOID = {"meta", "link", "br", "img", "input", "hr", "area", "base", "col", "embed", "source", "track", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in self.VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)

    def all(self, tag=None, cls=None):
        return [n for n in self.root.walk() if (tag is None or n.tag == tag)
                and (cls is None or cls in n.attrs.get("class", "").split())]

    def by_id(self, id_):
        found = [n for n in self.root.walk() if n.attrs.get("id") == id_]
        assert len(found) == 1, f"one element #{id_} (found {len(found)})"
        return found[0]


def chromium(url, profile, *args):
    """(stdout, stderr) of one headless Chromium run; virtual time lets the page's polls run."""
    argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-sync", "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
            f"--user-data-dir={profile}", "--window-size=1280,1600", "--virtual-time-budget=12000", *args, url]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"chromium exited {r.returncode}:\n{r.stderr[-3000:]}"
    return r.stdout, r.stderr


def csp_violations(stderr):
    return [line for line in stderr.splitlines() if "Content Security Policy" in line or "Refused to" in line]


def make_ca(d):
    """A CA and a certificate for 127.0.0.1 signed by it (openssl, no network)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=flinklet test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
        "-days", "2", "-extfile", "ext.cnf")
    return str(d / "ca.pem"), str(d / "srv.pem"), str(d / "srv.key")

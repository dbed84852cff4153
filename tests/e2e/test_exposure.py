"""What the pod exposes, with the real MiniCluster: with a configuration that sets no bind address, nothing of
flinklet's or the JVM's listens off loopback but flinklet's own endpoint, and Flink's mutating endpoints
(cancel, stop, savepoint, rescale, jar upload and run) cannot be reached on the machine's other addresses; a
proxy in the environment neither stalls the supervisor nor sees the CLI's token; a jarURI's credentials and
signature appear in no output; the probes write nothing on the volume.

Network tests run flinklet in a network namespace of their own (unshare --net) with a veth pair whose address
is a documentation one (198.51.100.7, 2001:db8::7): its "machine's non-loopback address" exists only there,
so nothing leaves this machine. Requests inside it go through nsenter."""
import http.server
import ipaddress
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading

import pytest

from conftest import BIN, free_port, wait_for
from testkit import norm

ADDR4, ADDR6 = "198.51.100.7", "2001:db8::7"

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None or shutil.which("nsenter") is None
                                or shutil.which("ip") is None, reason="util-linux unshare/nsenter and iproute2")

# flinklet (exec'd by the shell) in a new network namespace with loopback and one veth pair carrying the
# namespace's only non-loopback addresses
NETNS = ["unshare", "--net", "--", "sh", "-ec",
         "ip link set lo up; ip link add v0 type veth peer name v1; "
         f"ip addr add {ADDR4}/24 dev v0; ip -6 addr add {ADDR6}/64 dev v0 nodad; "
         "ip link set v0 up; ip link set v1 up; exec \"$0\" \"$@\""]

# runs inside the namespace: each request, its HTTP status or the errno that stopped it
PROBE = r"""
import errno, http.client, json, socket, sys
out = []
for r in json.loads(sys.argv[1]):
    try:
        if r.get("method") is None:
            socket.create_connection((r["host"], r["port"]), timeout=5).close()
            out.append({"status": "connected"})
            continue
        c = http.client.HTTPConnection(r["host"], r["port"], timeout=5)
        body = r.get("body")
        c.request(r["method"], r["path"], body=body.encode("latin-1") if body is not None else None,
                  headers=r.get("headers", {}))
        resp = c.getresponse()
        out.append({"status": resp.status, "body": resp.read(65536).decode(errors="replace")})
    except OSError as e:
        out.append({"error": errno.errorcode.get(e.errno, repr(e))})
print(json.dumps(out))
"""


def in_netns(pid, requests):
    """The results of requests (dicts: host, port, method, path, body, headers; no method: a bare connect) made
    from inside the network namespace of pid."""
    r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "python3", "-c", PROBE, json.dumps(requests)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def process_tree(root):
    """root and every process below it."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _addr(hexaddr):
    ip, port = hexaddr.split(":")
    raw = b"".join(struct.pack("<I", int(ip[i:i + 8], 16)) for i in range(0, len(ip), 8))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw), int(port, 16)


def listening_sockets(root):
    """Every listening TCP socket and unconnected UDP socket held by root's processes:
    dicts of pid, comm, proto, ip, port (from /proc/<pid>/fd socket inodes and /proc/<pid>/net/*)."""
    found = []
    for pid in process_tree(root):
        inodes = set()
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the process is gone
        for fd in fds:
            try:
                m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
            except (FileNotFoundError, ProcessLookupError):
                continue  # this descriptor closed since the listing (the JVM opens and closes files all along)
            if m:
                inodes.add(m.group(1))
        for proto, state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
            with open(f"/proc/{pid}/net/{proto}") as f:
                rows = [line.split() for line in f.readlines()[1:]]
            for row in rows:
                if row[3] == state and row[9] in inodes:
                    ip, port = _addr(row[1])
                    found.append({"pid": pid, "comm": comm, "proto": proto, "ip": ip, "port": port})
    return found


def is_loopback(ip):
    a = ipaddress.ip_address(ip)
    return a.is_loopback or (a.version == 6 and a.ipv4_mapped is not None and a.ipv4_mapped.is_loopback)


def off_loopback(listeners, allowed_ports=()):
    return [s for s in listeners if not is_loopback(s["ip"]) and s["port"] not in allowed_ports]


def start_in_netns(f):
    f.start(wrapper=NETNS)
    f.pidns = False  # a network namespace only: the pids are this one's
    return f


def config_position(path, key):
    """file:line:col of key's value in a configuration written by Flinklet.write_config."""
    for n, line in enumerate(open(path).read().splitlines(), 1):
        if line.strip().startswith(json.dumps(key) + ":"):
            return f"{path}:{n}:{line.index(': ') + 3}"
    raise AssertionError(f"{key} not in {path}")


def mutations(host, port, job_id, evil_dir):
    """Every request that changes the job through Flink's REST API."""
    boundary = "flinkletboundary"
    jar = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"evil.jar\"\r\n"
           f"Content-Type: application/x-java-archive\r\n\r\nPK\x05\x06{chr(0) * 18}\r\n--{boundary}--\r\n")
    j = {"Content-Type": "application/json"}
    return [
        {"host": host, "port": port, "method": "PATCH", "path": f"/jobs/{job_id}?mode=cancel"},
        {"host": host, "port": port, "method": "POST", "path": f"/jobs/{job_id}/stop", "headers": j,
         "body": json.dumps({"targetDirectory": f"file://{evil_dir}", "drain": False})},
        {"host": host, "port": port, "method": "POST", "path": f"/jobs/{job_id}/savepoints", "headers": j,
         "body": json.dumps({"target-directory": f"file://{evil_dir}", "cancel-job": False})},
        {"host": host, "port": port, "method": "PUT", "path": f"/jobs/{job_id}/resource-requirements",
         "headers": j, "body": json.dumps({})},
        {"host": host, "port": port, "method": "POST", "path": "/jars/upload",
         "headers": {"Content-Type": f"multipart/form-data; boundary={boundary}"}, "body": jar},
        {"host": host, "port": port, "method": "POST", "path": "/jars/evil.jar/run", "headers": j,
         "body": json.dumps({"entryClass": "Evil"})},
    ]


def job_view(f, pid):
    """(job id, state, parallelism of every vertex) through Flink's REST API on loopback inside the namespace."""
    job_id = f.status()["jobStatus"]["jobId"]
    got = in_netns(pid, [{"host": "127.0.0.1", "port": f.port, "method": "GET", "path": f"/jobs/{job_id}"}])[0]
    assert got.get("status") == 200, got
    job = json.loads(got["body"])
    return job["jid"], job["state"], sorted((v["name"], v["parallelism"]) for v in job["vertices"])


def savepoint_dirs(f):
    d = os.path.join(f.state, "savepoints")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_nothing_listens_off_loopback_but_the_endpoint_and_flink_refuses_other_addresses(tmp_path, flinklets):
    f = start_in_netns(flinklets())
    f.wait_stable()
    f.wait_checkpoint(1)
    pid = f.proc.pid
    listeners = listening_sockets(pid)
    comms = {s["comm"] for s in listeners}
    assert "flinklet" in comms and "java" in comms, listeners
    ports = {s["port"] for s in listeners}
    assert f.port in ports and f.http_port in ports, listeners  # the REST API and the endpoint, on loopback
    assert off_loopback(listeners) == [], f"listening off loopback: {off_loopback(listeners)}"

    job_id, state, parallelism = job_view(f, pid)
    assert state == "RUNNING"
    savepoints = savepoint_dirs(f)
    evil = tmp_path / "evil"
    # the harmless twin of the probe, on loopback: it reaches Flink, so a refusal below is the address's doing
    assert in_netns(pid, [{"host": "127.0.0.1", "port": f.port, "method": "GET", "path": "/jobs/overview"}]
                    )[0].get("status") == 200
    for host in (ADDR4, ADDR6):
        got = in_netns(pid, mutations(host, f.port, job_id, evil))
        assert all(g.get("error") == "ECONNREFUSED" for g in got), (host, got)
        # and no other port of the JVM or of flinklet answers there either (the BLOB server, the endpoint)
        got = in_netns(pid, [{"host": host, "port": p} for p in sorted(ports)])
        assert all(g.get("error") == "ECONNREFUSED" for g in got), (host, sorted(ports), got)

    assert job_view(f, pid) == (job_id, "RUNNING", parallelism)
    st = f.status()
    assert st["jobStatus"]["jobId"] == job_id and st["lifecycleState"] == "STABLE"
    assert savepoint_dirs(f) == savepoints and not evil.exists()
    assert not [e for e in f.events() if "cancel" in e["type"].lower()]


def test_explicit_bind_addresses_listen_where_told_with_a_warning(tmp_path, flinklets):
    """The control case: the same checks do see a listener off loopback, and Flink answering on the other
    address, once the configuration asks for it; check-config and run name each such key."""
    f = flinklets()
    f.write_config(conf={"flinklet.http.address": f"0.0.0.0:{f.http_port}", "rest.bind-address": "0.0.0.0",
                         "jobmanager.bind-host": "0.0.0.0"})
    r = subprocess.run([BIN, "check-config", "-c", str(f.config)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for key in ("rest.bind-address", "jobmanager.bind-host"):
        assert (f"{config_position(f.config, key)}: warning: spec.flinkConfiguration.{key}: \"0.0.0.0\" is not a "
                "loopback address") in r.stderr, r.stderr
    assert "warning" not in r.stdout

    start_in_netns(f)
    f.wait_stable()
    pid = f.proc.pid
    for key in ("rest.bind-address", "jobmanager.bind-host"):
        assert f"warning: spec.flinkConfiguration.{key}: \"0.0.0.0\"" in f.logs()
    listeners = listening_sockets(pid)
    exposed = off_loopback(listeners)
    # flinklet's endpoint on 0.0.0.0 is found (the listing sees what it should)...
    assert [s for s in exposed if s["comm"] == "flinklet" and s["port"] == f.http_port], listeners
    # ...and so are Flink's REST API and BLOB server, which the default keeps on loopback
    java = {s["port"] for s in off_loopback(listeners, allowed_ports={f.http_port}) if s["comm"] == "java"}
    assert f.port in java and len(java) >= 2, listeners
    got = in_netns(pid, [{"host": h, "port": f.port, "method": "GET", "path": "/jobs/overview"}
                         for h in (ADDR4, ADDR6)])
    assert [g.get("status") for g in got] == [200, 200], got


class Recorder(http.server.ThreadingHTTPServer):
    """A loopback HTTP server that records every request and answers with answer(handler)."""

    def __init__(self, answer):
        self.requests = []
        self.answer = answer
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                recorder.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})
                code, headers, body = recorder.answer(self)
                self.send_response(code)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_CONNECT = handle_one

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


def proxy_env(url):
    env = {k: url for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")}
    env.update({"no_proxy": "", "NO_PROXY": ""})
    return env


def test_the_cli_sends_its_token_only_to_the_address_given(tmp_path):
    token = "t0k3n-" + os.urandom(8).hex()
    (tmp_path / "token").write_text(token + "\n")
    with Recorder(lambda h: (502, {}, b"proxy")) as proxy, \
         Recorder(lambda h: (202, {}, b"{}")) as elsewhere, \
         Recorder(lambda h: (307, {"Location": f"http://127.0.0.1:{elsewhere.port}/api/v1/savepoint"}, b"")) as sup:
        env = {**os.environ, **proxy_env(f"http://127.0.0.1:{proxy.port}")}
        r = subprocess.run([BIN, "savepoint", "--url", f"http://127.0.0.1:{sup.port}", "--token-file",
                            str(tmp_path / "token")], capture_output=True, text=True, env=env, timeout=60)
        assert proxy.requests == [], "the proxy of the environment saw the CLI's request"
        assert elsewhere.requests == [], "the CLI followed a redirect with its token"
        assert [q["headers"].get("Authorization") for q in sup.requests] == [f"Bearer {token}"], sup.requests
        assert r.returncode == 1, (r.returncode, r.stderr)  # a 307 is no acceptance
        # a plain acceptance works through the same environment
        sup.answer = lambda h: (202, {}, b"{\"accepted\": true}\n")
        r = subprocess.run([BIN, "checkpoint", "--url", f"http://127.0.0.1:{sup.port}", "--token-file",
                            str(tmp_path / "token")], capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0 and "accepted" in r.stdout, (r.returncode, r.stdout, r.stderr)
        assert proxy.requests == [] and elsewhere.requests == []


def test_a_dead_proxy_in_the_environment_changes_nothing(tmp_path, flinklets):
    dead = f"http://127.0.0.1:{free_port()}"  # closed: every connection to it is refused
    f = flinklets().start(env=proxy_env(dead))
    st = f.wait_stable()
    assert st["jobStatus"]["state"] == "RUNNING"
    env = {**os.environ, **proxy_env(dead)}
    r = subprocess.run([BIN, "savepoint", "--wait", "--url", f"http://127.0.0.1:{f.http_port}", "--token-file",
                        os.path.join(f.state, "http.token")], capture_output=True, text=True, env=env, timeout=400)
    assert r.returncode == 0, (r.returncode, r.stderr)
    location = r.stdout.strip().splitlines()[-1]
    assert os.path.exists(os.path.join(norm(location), "_metadata")), location
    assert norm(f.status()["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"]) == norm(location)
    r = subprocess.run([BIN, "status", "--url", f"http://127.0.0.1:{f.http_port}", "--ready"], env=env, timeout=60)
    assert r.returncode == 0


def test_jar_uri_credentials_and_signatures_appear_in_no_output(tmp_path, flinklets):
    password, credential, signature, tok = (f"{w}-{os.urandom(6).hex()}" for w in ("pw", "cred", "sig", "tok"))
    port = free_port()  # nothing listens: the download fails, which is all this test needs
    uri = (f"https://flinkuser:{password}@127.0.0.1:{port}/repo/job.jar?X-Amz-Algorithm=AWS4-HMAC-SHA256"
           f"&X-Amz-Credential={credential}&X-Amz-Signature={signature}&token={tok}")
    shown = f"https://***@127.0.0.1:{port}/repo/job.jar?***"
    secrets = (password, credential, signature, tok)
    f = flinklets(conf={"flinklet.artifacts.retries": "1", "flinklet.artifacts.timeout": "5 s"})
    raw = re.sub(r"jarURI: .*", lambda m: f"jarURI: {json.dumps(uri)}", f.config.read_text())
    f.write_config(raw=raw)

    outputs = {}
    for args in (["check-config"], ["check-config", "--json"]):
        r = subprocess.run([BIN, *args, "-c", str(f.config)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outputs[" ".join(args)] = r.stdout + r.stderr
        assert shown in r.stdout, r.stdout
    # an unsupported scheme is refused with the URI quoted: redacted too
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text(raw.replace("https://", "ftp://"))
    r = subprocess.run([BIN, "check-config", "-c", str(bad_cfg)], capture_output=True, text=True)
    assert r.returncode == 2 and f"ftp://***@127.0.0.1:{port}/repo/job.jar?***" in r.stderr, r.stderr
    outputs["check-config (invalid)"] = r.stdout + r.stderr

    f.start()
    wait_for(lambda: [e for e in f.events() if e["type"] == "ArtifactFetchFailed"], 120,
             "the download to fail for good")

    def failed_status():
        text = open(os.path.join(f.state, "status.json")).read()
        return text if "unable to fetch" in (json.loads(text).get("error") or "") else None
    status_json = wait_for(failed_status, 60, "status.json to give the download's error")
    code, status_http = f.http("/status")
    assert code == 200
    events = open(os.path.join(f.state, "events.jsonl")).read()
    outputs.update({"status.json": status_json, "GET /status": status_http, "events.jsonl": events})
    for args in (["status"], ["status", "--json"]):
        r = subprocess.run([BIN, *args, "--state-dir", f.state], capture_output=True, text=True)
        outputs[" ".join(args)] = r.stdout + r.stderr
    f.stop()
    outputs["log"] = f.logs()
    # what the user sees still says which jar: host and path, without the secrets
    assert shown in events and shown in outputs["log"], events
    assert shown in json.loads(status_json)["error"], status_json
    leaks = {name: [s for s in secrets if s in text] for name, text in outputs.items()}
    assert not any(leaks.values()), leaks


def ro_view(path, args):
    """flinklet args run with the state directory path seen through a read-only bind mount (a mount namespace
    of its own): returns the CompletedProcess."""
    view = path + ".ro"
    os.makedirs(view, exist_ok=True)
    argv = [a.replace("@STATE@", view) for a in args]
    return subprocess.run(["unshare", "--mount", "--", "sh", "-ec",
                           "mount --bind -o ro \"$0\" \"$1\"; shift; exec \"$@\"", path, view, BIN, *argv],
                          capture_output=True, text=True, timeout=60)


def snapshot(directory):
    """Every entry of directory (not recursive) with its size, mtime and content for small files."""
    out = {}
    for name in sorted(os.listdir(directory)):
        p = os.path.join(directory, name)
        st = os.lstat(p)
        content = open(p, "rb").read() if os.path.isfile(p) and st.st_size < 65536 else None
        out[name] = (st.st_mtime_ns, st.st_size, content)
    return out


def test_probes_read_only_and_take_no_lock(tmp_path, flinklets):
    f = flinklets().start()
    f.wait_stable()
    lock = os.path.join(f.state, "lock")
    before = os.stat(lock), open(lock).read()
    # the supervisor is live and ready, and the probes say so through a read-only view of its volume
    for probe in ("--live", "--ready"):
        r = ro_view(f.state, ["status", probe, "--state-dir", "@STATE@"])
        assert r.returncode == 0, (probe, r.returncode, r.stderr)
    r = ro_view(f.state, ["status", "--state-dir", "@STATE@"])
    assert r.returncode == 0 and re.search(r"supervisor\s+running", r.stdout), r.stdout + r.stderr
    after = os.stat(lock), open(lock).read()
    assert (after[0].st_mtime_ns, after[0].st_ino, after[1]) == (before[0].st_mtime_ns, before[0].st_ino, before[1])
    status_text = open(os.path.join(f.state, "status.json")).read()
    f.stop()

    # a volume no supervisor holds, whose status.json still says STABLE: not live, and nothing is written
    # (no lock file made; a stale one neither rewritten nor taken)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "status.json").write_text(status_text)
    seen = snapshot(quiet)
    for probe in ("--live", "--ready"):
        r = subprocess.run([BIN, "status", probe, "--state-dir", str(quiet)], capture_output=True, text=True)
        assert r.returncode == 1, (probe, r.returncode, r.stderr)
    subprocess.run([BIN, "status", "--state-dir", str(quiet)], capture_output=True, text=True)
    assert snapshot(quiet) == seen, "a probe wrote on the volume"
    (quiet / "lock").write_text("999999\n")
    os.utime(quiet / "lock", ns=(1_000_000_000, 1_000_000_000))
    seen = snapshot(quiet)
    for probe in ("--live", "--ready"):
        r = subprocess.run([BIN, "status", probe, "--state-dir", str(quiet)], capture_output=True, text=True)
        assert r.returncode == 1, (probe, r.returncode, r.stderr)
    assert snapshot(quiet) == seen, "a probe took the stale lock or rewrote it"
    r = ro_view(str(quiet), ["status", "--live", "--state-dir", "@STATE@"])
    assert r.returncode == 1, (r.returncode, r.stderr)

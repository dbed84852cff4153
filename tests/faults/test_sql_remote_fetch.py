"""A remote SQL script (spec.job.sqlScript over http; issue 37) fetched as the job's jar is, against the fake Flink of
fakeflink.py and a fake java that records its arguments: a server that answers 503 twice is retried
(flinklet.artifacts.retries) and the third attempt's script is launched; the runner is given the copy in
<state dir>/artifacts, its sha256 as checked and its positions at the URI; a restart with the server gone takes the
cached copy without asking; a script larger than 1 MiB is refused once downloaded, and never cached."""
import hashlib
import http.server
import os
import threading

from conftest import free_port, wait_for

SCRIPT = "CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\nINSERT INTO b SELECT x FROM a;\n"


class FlakyServer:
    """An http server of one script at /job.sql that answers 503 to its first `failures` requests."""

    def __init__(self, body, failures=0):
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                if self.path != "/job.sql" or len(outer.requests) <= failures:
                    self.send_response(503 if self.path == "/job.sql" else 404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.port = free_port()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def recording_java(tmp_path, stop_file):
    """A "java" that writes its arguments (one a line) into java.args, then stays up like the fake one."""
    path = tmp_path / "java-args"
    args = tmp_path / "java.args"
    path.write_text("#!/bin/sh\n"
                    f"printf '%s\\n' \"$@\" > '{args}'\n"
                    f"while [ ! -e '{stop_file}' ]; do sleep 0.1; done\nexit 0\n")
    os.chmod(path, 0o755)
    return str(path), args


def sql_supervisor(supervisors, server, tmp_path, url, conf=None, state_dir=None):
    sup = supervisors(server, state_dir=state_dir, conf={"flinklet.artifacts.allowed-schemes": "https,http",
                                                         **(conf or {})})
    java, args = recording_java(tmp_path, sup.stop_file)
    text = sup.config.read_text().replace(f'"flinklet.java.bin": "{sup.java}"', f'"flinklet.java.bin": "{java}"')
    # a SQL job: the runner is the entry class (in Flink's lib/), the fake jar a jar of UDFs beside the script
    text = text.replace("    entryClass: dev.flinklet.Fake\n", f"    sqlScript: {url}\n")
    sup.config.write_text(text)
    return sup, args


def running(sup):
    st = sup.own_status()
    return st and st["lifecycleState"] == "STABLE" and st


def test_a_flaky_server_is_retried_and_the_runner_runs_the_cached_copy(server, supervisors, tmp_path):
    srv = FlakyServer(SCRIPT.encode(), failures=2)
    url = f"http://127.0.0.1:{srv.port}/job.sql"
    sup, args = sql_supervisor(supervisors, server, tmp_path, url, conf={"flinklet.artifacts.retries": "3"})
    sup.start()
    wait_for(lambda: running(sup), 30, "the job running", interval=0.1)
    assert srv.requests == ["/job.sql"] * 3
    types = [e["type"] for e in sup.events()]
    assert types.count("ArtifactFetching") == 3 and types.count("ArtifactFetched") == 1, types
    cached = os.path.join(sup.state, "artifacts", f"uri-{hashlib.sha256(url.encode()).hexdigest()}.sql")
    argv = args.read_text().splitlines()
    runner = argv[argv.index("dev.flinklet.launcher.SqlScriptRunner") + 2:]  # after -c CLASS and the UDFs' jar
    assert runner == [f"--origin={url}:1:1", "--field=spec.job.sqlScript",
                      f"--sha256={hashlib.sha256(SCRIPT.encode()).hexdigest()}",
                      f"--plan-dir={os.path.join(sup.state, 'sql')}", cached], argv
    assert sup.stop() == 0

    srv.stop()  # the server gone: the restart takes the cached copy, asks nothing
    args.unlink()
    again, args = sql_supervisor(supervisors, server, tmp_path, url, state_dir=sup.state)
    again.start()
    wait_for(lambda: running(again), 30, "the job running again", interval=0.1)
    assert "ArtifactFetching" not in [e["type"] for e in again.new_events()]
    assert args.read_text().splitlines()[-1] == cached
    assert again.stop() == 0


def test_a_script_over_a_mib_is_refused_once_downloaded(server, supervisors, tmp_path):
    srv = FlakyServer(b"-- padding\n" * (1 << 17))  # 1.4 MiB
    url = f"http://127.0.0.1:{srv.port}/job.sql"
    sup, args = sql_supervisor(supervisors, server, tmp_path, url, conf={"flinklet.restart.max-attempts": "1"})
    sup.start()
    assert sup.proc.wait(30) == 1
    refused = [e["message"] for e in sup.events() if e["type"] == "SqlScriptInvalid"]
    assert len(refused) == 2 and f"{url}: spec.job.sqlScript: unable to read" in refused[0], refused
    assert "larger than 1 MiB" in refused[0]
    assert not args.exists(), "no JVM is started with it"
    assert os.listdir(os.path.join(sup.state, "artifacts")) == []
    srv.stop()

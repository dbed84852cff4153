"""A stand-in for Flink's REST API that misbehaves on purpose (issue 8, item 3): the real build/flinklet is
pointed at it (rest.port) with a fake "java" that only stays up, so flinklet believes a JVM is running and
everything it learns about the job comes from here. A test sets `server.fault` to one of FAULTS (or a
callable) and reads `server.requests` to see what flinklet asked."""
import json
import os
import re
import socket
import struct
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERTEX = "cbc357ccb763df2852fee8c4fc7d55f2"
METADATA_MAGIC = 0x4960672D  # Flink's checkpoint metadata header


def good_job(job_id, state="RUNNING", tasks=None):
    running = 2 if state == "RUNNING" else 0
    return {"jid": job_id, "name": "fake", "state": state, "start-time": int(time.time() * 1000) - 5000,
            "vertices": [{"id": VERTEX, "name": "Source: fake", "parallelism": 2, "maxParallelism": 128,
                          "status": state, "tasks": tasks or {"RUNNING": running, "FINISHED": 0}}],
            "timestamps": {"RUNNING": int(time.time() * 1000) - 4000},
            "plan": {"jid": job_id, "nodes": [{"id": VERTEX, "parallelism": 2}]}}


def good_checkpoints(job_id):
    return {"counts": {"completed": 0, "failed": 0, "in_progress": 0},
            "latest": {"completed": None, "savepoint": None, "failed": None, "restored": None}}


# what Flink 2.3.0 answers GET /jobs/:id/rescales/* with when it keeps no rescale history (RescalesUnavailableException)
RESCALES_OFF = ("org.apache.flink.runtime.rest.handler.job.rescales.RescalesUnavailableException: The job `%s` has not "
                "enabled the `Adaptive` scheduler, or it has been enabled but the value of configuration option "
                "`web.adaptive-scheduler.rescale-history.size` has not been set to greater than `0`.\n\tat ...")


def rescale(uuid, start, end=None, terminal="COMPLETED", trigger="UPDATE_REQUIREMENT", reason="SUCCEEDED"):
    """One entry of GET /jobs/:id/rescales/history as Flink 2.3.0 writes it (abbreviated: no vertices); in progress
    without an end, a terminal state and a reason."""
    return {"rescaleUuid": uuid, "resourceRequirementsUuid": "61911d3feddb638d96ceb1b26da2e46e", "rescaleAttemptId": 1,
            "vertices": {}, "slots": {}, "schedulerStates": [], "startTimestampInMillis": start,
            "endTimestampInMillis": end, "terminalState": terminal if end else None, "triggerCause": trigger,
            "terminatedReason": reason if end else None}


def rescale_details(entry, vertices):
    """GET /jobs/:id/rescales/details/<uuid> of that entry: vertices maps a vertex id to (name, pre, post)."""
    d = dict(entry)
    d["vertices"] = {vid: {"jobVertexId": vid, "jobVertexName": name, "slotSharingGroupId": "c8cb9c401c7ee791df555b147bbade8e",
                           "slotSharingGroupName": "default", "desiredParallelism": post, "sufficientParallelism": 1,
                           "preRescaleParallelism": pre, "postRescaleParallelism": post}
                     for vid, (name, pre, post) in vertices.items()}
    d["schedulerStates"] = [{"state": "Executing", "enterTimestampInMillis": entry["startTimestampInMillis"] - 1000,
                             "leaveTimestampInMillis": entry["startTimestampInMillis"], "durationInMillis": 1000,
                             "stringifiedException": None}]
    return d


OVERVIEW = {"taskmanagers": 1, "slots-total": 2, "slots-available": 0, "jobs-running": 1}


NO_EXCEPTIONS = {"exceptionHistory": {"entries": [], "truncated": False}}


def exception_entry(stacktrace, timestamp, name=None):
    """One entry of GET /jobs/:id/exceptions' exceptionHistory, as Flink 1.20 and 2.x write it (RootExceptionInfo)."""
    return {"exceptionName": name or stacktrace.split(":", 1)[0], "stacktrace": stacktrace, "timestamp": timestamp,
            "taskName": "Count (1/2)#0", "endpoint": "localhost:41235", "taskManagerId": "localhost:41235-6b1c5e",
            "failureLabels": {}, "concurrentExceptions": []}


def jobs_overview(job_ids, state="RUNNING", tasks=None):
    """GET /jobs/overview, as Flink computes it afresh (what flinklet polls while the job starts)."""
    now = int(time.time() * 1000)
    running = 2 if state == "RUNNING" else 0
    counts = {"running": running, "canceling": 0, "canceled": 0, "total": 2, "created": 0, "scheduled": 0,
              "deploying": 0, "reconciling": 0, "finished": 0, "initializing": 0, "failed": 0}
    counts.update({k.lower(): v for k, v in (tasks or {}).items()})
    return {"jobs": [{"jid": j, "name": "fake", "state": state, "start-time": now - 5000, "end-time": -1,
                      "duration": 5000, "last-modification": now - 4000, "tasks": counts} for j in job_ids]}

# What each fault answers to every GET (the bodies are what a broken or hostile Flink could send).
FAULTS = {
    "http-500": (500, b'{"errors": ["Internal server error."]}'),
    "http-503-html": (503, b"<html><body>Service Unavailable</body></html>"),
    "truncated-json": (200, b'{"jid": "x", "state": "RUNNING", "vertices": [{"id": "cbc3'),
    "malformed-json": (200, b'{"state": "RUNNING",, "vertices": [}'),
    "nan-literal": (200, b'{"state": "RUNNING", "start-time": NaN, "vertices": [{"parallelism": NaN, '
                         b'"tasks": {"RUNNING": NaN}}]}'),
    "nan-strings-and-huge-numbers": (200, json.dumps({
        "state": "RUNNING", "start-time": 1e300,
        "vertices": [{"id": VERTEX, "parallelism": "NaN", "tasks": {"RUNNING": 1e400, "FINISHED": -1e400}},
                     {"id": 7, "parallelism": 1e300, "tasks": {"RUNNING": "2"}}],
        "counts": {"completed": 1e308}, "latest": {"completed": {"id": "NaN", "external_path": 5}},
    }).replace("Infinity", "1e400").encode()),
    "missing-fields": (200, b"{}"),
    "running-without-vertices": (200, b'{"state": "RUNNING"}'),
    "wrong-types": (200, b'{"state": ["RUNNING"], "vertices": {"a": 1}, "start-time": "yesterday", '
                         b'"latest": [], "counts": "many"}'),
    "empty-body": (200, b""),
    "json-array": (200, b"[1, 2, 3]"),
    "deeply-nested": (200, b"[" * 50000 + b"]" * 50000),
    "huge-body-over-limit": (200, b'{"state": "RUNNING", "pad": "' + b"x" * (17 << 20) + b'"}'),
    "huge-body-under-limit": (200, b'{"state": "CREATED", "pad": "' + b"x" * (8 << 20) + b'"}'),
    "timeout": "timeout",
    "close-without-answer": "close",
}


class FakeFlink(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port=0):
        super().__init__(("127.0.0.1", port), Handler)
        self.fault = None          # a FAULTS key, a callable (method, path) -> (code, bytes), or None: a good job
        self.checkpoint = None     # a made-up latest completed checkpoint {"id", "external_path"}
        self.savepoint_location = None  # what a savepoint operation reports as its location
        self.on_stop = None        # called when flinklet asks for stop-with-savepoint
        self.stop_failures = 0     # how many of the next stop-with-savepoint operations Flink reports FAILED
        self.on_savepoint_reported = None  # called when a savepoint is reported COMPLETED to flinklet
        # like Flink: a stop-with-savepoint or a savepoint writes savepoint-<jobId6>-<hex>/_metadata (Flink's header,
        # ids from 1000 up) into the request's targetDirectory and reports that location
        self.real_savepoints = False
        self.next_savepoint_id = 1000
        self.written_savepoints = []
        self.job_state = "RUNNING"  # the job's state in /jobs/:id and /jobs/overview (not RUNNING: no task runs)
        self.tasks = None  # its subtasks by state ({"RUNNING": 0, "FAILED": 1, ...}), None: as the state says
        self.exceptions = NO_EXCEPTIONS  # what GET /jobs/:id/exceptions answers
        self.requests = []
        self.bodies = []           # (method, path, body text) of every request that had a body
        self.state_dirs = []       # flinklet state directories whose job-id the fake lists in /jobs/overview
        # Flink 2.3's rescale history: GET /jobs/:id/rescales/history answers this list (newest first; None: 404, as
        # Flink does when it keeps none), GET .../rescales/details/<uuid> the entry of rescale_details
        self.rescales = None
        self.rescale_details = {}
        self.flink_version = "2.2.1"  # what GET /config says Flink is (None: 404)
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self):
        return self.server_address[1]

    def start(self):
        self.thread.start()
        return self

    def close(self):
        self.shutdown()
        self.server_close()

    def job_ids(self):
        ids = []
        for d in list(self.state_dirs):
            try:
                with open(os.path.join(d, "job-id")) as f:
                    ids.append(f.read().strip())
            except OSError:
                pass
        return ids

    def write_savepoint(self, job_id, request_body):
        """Writes a savepoint of the job where the request asks for it, as Flink would, and reports it from now on."""
        try:
            target = json.loads(request_body or b"{}").get("targetDirectory") or ""
        except ValueError:
            return
        target = re.sub(r"^file:(//)?", "", target)
        if not target.startswith("/"):
            return
        d = os.path.join(target, f"savepoint-{job_id[:6]}-{uuid.uuid4().hex[:12]}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "_metadata"), "wb") as f:
            f.write(struct.pack(">IIq", METADATA_MAGIC, 4, self.next_savepoint_id) + b"\0" * 64)
        self.next_savepoint_id += 1
        self.written_savepoints.append("file:" + d)
        self.savepoint_location = "file:" + d

    def answer(self, method, path, body=b""):
        """(code, body bytes) or "timeout" / "close"."""
        if callable(self.fault):
            r = self.fault(method, path)
            if r is not None:
                return r
        elif self.fault:
            return FAULTS[self.fault]
        m = re.match(r"^/jobs/([0-9a-f]{32})(/.*)?$", path.split("?")[0])
        if path.startswith("/overview"):
            return 200, json.dumps(OVERVIEW).encode()
        if path.split("?")[0] == "/config":  # the dashboard's configuration: Flink's own version among it
            if self.flink_version is None:
                return 404, b'{"errors": ["Not found."]}'
            return 200, json.dumps({"refresh-interval": 3000, "timezone-name": "Coordinated Universal Time",
                                    "timezone-offset": 0, "flink-version": self.flink_version,
                                    "flink-revision": "0000000 @ 2026-01-01T00:00:00+01:00",
                                    "features": {"web-submit": False, "web-cancel": False}}).encode()
        if path.split("?")[0] == "/jobs/overview":
            return 200, json.dumps(jobs_overview(self.job_ids(), self.job_state, self.tasks)).encode()
        if not m:
            return 404, b'{"errors": ["Not found."]}'
        job_id, rest = m.group(1), m.group(2) or ""
        if rest == "" and method == "GET":
            return 200, json.dumps(good_job(job_id, self.job_state, self.tasks)).encode()
        if rest == "/exceptions" and method == "GET":
            return 200, json.dumps(self.exceptions).encode()
        if rest == "/rescales/history" and method == "GET":
            if self.rescales is None:
                return 404, json.dumps({"errors": [RESCALES_OFF % job_id]}).encode()
            return 200, json.dumps(self.rescales).encode()
        if rest.startswith("/rescales/details/") and method == "GET":
            uuid = rest[len("/rescales/details/"):]
            if uuid in self.rescale_details:
                return 200, json.dumps(self.rescale_details[uuid]).encode()
            return 404, json.dumps({"errors": [f"org.apache.flink.runtime.rest.handler.RestHandlerException: Could "
                                               f"not find rescale details of specified rescaleUuid {uuid}.\n\tat ..."]}).encode()
        if rest == "/checkpoints":
            body = good_checkpoints(job_id)
            if self.checkpoint:
                cp = dict(self.checkpoint)
                cp.setdefault("is_savepoint", False)
                cp.setdefault("latest_ack_timestamp", int(time.time() * 1000))
                body["counts"]["completed"] = cp["id"]
                body["latest"]["completed"] = cp
            return 200, json.dumps(body).encode()
        if rest == "/stop" and method == "POST":
            if self.on_stop:
                self.on_stop()
            if self.real_savepoints and self.stop_failures == 0:  # a failed one leaves no _metadata
                self.write_savepoint(job_id, body)
            return 202, b'{"request-id": "0123456789abcdef0123456789abcdef"}'
        if rest.startswith("/savepoints") or rest.startswith("/checkpoints/"):
            if method == "POST":
                if self.real_savepoints and rest == "/savepoints":
                    self.write_savepoint(job_id, body)
                return 202, b'{"request-id": "0123456789abcdef0123456789abcdef"}'
            if self.stop_failures > 0:  # as Flink answers a stop-with-savepoint a task could not take part in
                self.stop_failures -= 1
                return 200, json.dumps({"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {
                    "class": "java.util.concurrent.CompletionException",
                    "stack-trace": "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint."
                                   "CheckpointException: Task local checkpoint failure.\n\tat ..."}}}).encode()
            if self.savepoint_location:
                if self.on_savepoint_reported:
                    self.on_savepoint_reported()
                return 200, json.dumps({"status": {"id": "COMPLETED"},
                                        "operation": {"location": self.savepoint_location}}).encode()
            return 200, b'{"status": {"id": "IN_PROGRESS"}}'
        return 404, b'{"errors": ["Not found."]}'


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def handle_any(self, method):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with self.server.lock:
            self.server.requests.append((time.monotonic(), method, self.path))
            if body:
                self.server.bodies.append((method, self.path, body.decode(errors="replace")))
        r = self.server.answer(method, self.path, body)
        if r == "timeout":
            time.sleep(30)  # longer than the client timeout the tests configure
            return
        if r == "close":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        code, body = r
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")


def end_soon(stop_file, delay=0.3):
    """Makes the fake JVM end a moment from now, as the MiniCluster does once its job stopped with a savepoint
    (ending it at the stop request itself would leave flinklet no time to be told where the savepoint is)."""
    threading.Timer(delay, lambda: open(stop_file, "w").close()).start()


def end_once_reported(server, stop_file):
    """Makes the fake JVM end once flinklet has been told where the stop's savepoint is (the first COMPLETED answer
    to its status poll), as the MiniCluster does once its job stopped with a savepoint; unlike a fixed delay after
    the stop request, a loaded machine cannot let the JVM end before flinklet hears of the savepoint."""
    done = []

    def reported():
        if not done:
            done.append(True)
            end_soon(stop_file, 0.1)
    server.on_savepoint_reported = reported

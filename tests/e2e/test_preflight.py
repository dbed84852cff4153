"""Pre-flight (issue 16, item 2): what would make the JVM exit with a stack trace is said before a launch, in
the contract's format (file:line:col: field: why), by `check-config --preflight` and by `run` before its first
launch (exit 2, nothing written); a jar that goes away while the job lives is waited for, not launched in a
loop. Jars are made here with zipfile in the shapes Flink's client meets (stored and deflated manifests,
program-class, nested lib/ jars, zip64, truncated files)."""
import json
import os
import signal
import socket
import subprocess
import time
import zipfile

import pytest

from conftest import BIN, FLINK_HOME, JOBS_JAR, wait_for


def jar(path, entries, compression=zipfile.ZIP_DEFLATED, zip64=False):
    with zipfile.ZipFile(path, "w", compression=compression, allowZip64=True) as z:
        for name, data in entries.items():
            if zip64:
                with z.open(name, "w", force_zip64=True) as f:
                    f.write(data)
            else:
                z.writestr(name, data)
    return path


def manifest(**attrs):
    lines = ["Manifest-Version: 1.0"] + [f"{k.replace('_', '-')}: {v}" for k, v in attrs.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def config(tmp_path, jar_uri, entry_class=None, conf=None):
    lines = ["apiVersion: flink.apache.org/v1beta1", "kind: FlinkMiniCluster", "metadata:", "  name: pf",
             "spec:", "  flinkConfiguration:", f"    rest.port: \"{free()}\"",
             f"    flinklet.http.address: 127.0.0.1:{free()}"]
    lines += [f"    {k}: {json.dumps(v)}" for k, v in (conf or {}).items()]
    lines += ["  job:", f"    jarURI: {jar_uri}"]
    if entry_class:
        lines.append(f"    entryClass: {entry_class}")
    lines.append("    parallelism: 1")
    path = tmp_path / "flinklet.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def free():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def preflight(cfg, *extra):
    return subprocess.run([BIN, "check-config", "--preflight", "-c", str(cfg), "--flink-home", FLINK_HOME, *extra],
                          capture_output=True, text=True, timeout=30)


CLS = "com.example.Job"
CLASS = {"com/example/Job.class": b"\xca\xfe\xba\xbe"}

GOOD = {
    "entry class, deflated": (lambda p: jar(p, CLASS), CLS),
    "entry class, stored": (lambda p: jar(p, CLASS, zipfile.ZIP_STORED), CLS),
    "Main-Class, deflated manifest": (lambda p: jar(p, {"META-INF/MANIFEST.MF": manifest(Main_Class=CLS), **CLASS}),
                                      None),
    "Main-Class, stored manifest": (lambda p: jar(p, {"META-INF/MANIFEST.MF": manifest(Main_Class=CLS), **CLASS},
                                                  zipfile.ZIP_STORED), None),
    "program-class": (lambda p: jar(p, {"META-INF/MANIFEST.MF": manifest(program_class=CLS), **CLASS}), None),
    "class in a nested lib jar": (lambda p: jar(p, {"lib/dep.jar": b"PK", "x.txt": b"x"}), CLS),
    "zip64": (lambda p: jar(p, {"META-INF/MANIFEST.MF": manifest(Main_Class=CLS), **CLASS}, zip64=True), None),
    "the real test jobs jar": (lambda p: JOBS_JAR, None),
}

BAD = {
    "missing": (lambda p: str(p), CLS, "spec.job.jarURI", "does not exist"),
    "a directory": (lambda p: (os.mkdir(p), str(p))[1], CLS, "spec.job.jarURI", "is not a file"),
    "not a zip": (lambda p: (p.write_bytes(b"#!/bin/sh\necho hi\n" * 10), p)[1], CLS, "spec.job.jarURI",
                  "is not a jar"),
    "truncated": (lambda p: (jar(p, CLASS), p.write_bytes(p.read_bytes()[:-30]), p)[2], CLS, "spec.job.jarURI",
                  "is not a jar"),
    "no such class": (lambda p: jar(p, {"com/example/Other.class": b"x"}), CLS, "spec.job.entryClass",
                      "has no class com.example.Job"),
    "no Main-Class": (lambda p: jar(p, {"META-INF/MANIFEST.MF": manifest(Created_By="x"), **CLASS}), None,
                      "spec.job.jarURI", "no Main-Class"),
    "no manifest": (lambda p: jar(p, CLASS), None, "spec.job.jarURI", "no Main-Class"),
}


@pytest.mark.parametrize("case", sorted(GOOD))
def test_jars_flink_would_take_pass(tmp_path, case):
    make, cls = GOOD[case]
    path = make(tmp_path / "job.jar")
    r = preflight(config(tmp_path, f"local://{path}", cls))
    assert r.returncode == 0, r.stderr
    assert "are fine" in r.stderr


@pytest.mark.parametrize("case", sorted(BAD))
def test_jars_flink_would_refuse_are_named_with_file_line_column(tmp_path, case):
    make, cls, field, words = BAD[case]
    path = make(tmp_path / "job.jar")
    cfg = config(tmp_path, f"local://{path}", cls)
    r = preflight(cfg)
    assert r.returncode == 2, r.stderr
    line = 11 if field == "spec.job.entryClass" else 10
    assert f"{cfg}:{line}:" in r.stderr and f"{field}: " in r.stderr and words in r.stderr, r.stderr


def test_a_sql_scripts_jar_of_connectors_or_udfs_needs_no_entry_class_of_its_own(tmp_path):
    """A jarURI beside a SQL script is a jar of the connectors or UDFs the script uses: flinklet's SQL runner, the
    entry class, is in Flink's lib/, not in it. Such a jar was refused ("has no class ...SqlScriptRunner"), by
    check-config --preflight and by run before its first launch (test_kafka_sql.py found it)."""
    udfs = jar(tmp_path / "udfs.jar", {"com/example/Upper.class": b"\xca\xfe\xba\xbe"})
    cfg = config(tmp_path, f"local://{udfs}")
    cfg.write_text(cfg.read_text() + "    sql: |\n"
                   "      CREATE TABLE a (x INT) WITH ('connector' = 'datagen');\n"
                   "      CREATE TABLE b (x INT) WITH ('connector' = 'blackhole');\n"
                   "      INSERT INTO b SELECT x FROM a;\n")
    r = subprocess.run([BIN, "check-config", "--preflight", "-c", str(cfg), "--flink-home", FLINK_HOME],
                       capture_output=True, text=True, timeout=200)  # the planner's check: a JVM
    assert r.returncode == 0, r.stderr
    assert "the SQL script (the planner's check)" in r.stderr and "has no class" not in r.stderr, r.stderr


def test_busy_ports_and_missing_flink_are_named(tmp_path):
    path = jar(tmp_path / "job.jar", CLASS)
    cfg = config(tmp_path, f"local://{path}", CLS)
    text = cfg.read_text()
    rest = int(text.split('rest.port: "')[1].split('"')[0])
    http = int(text.split("flinklet.http.address: 127.0.0.1:")[1].split("\n")[0])
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", rest))
        a.listen()
        b.bind(("127.0.0.1", http))
        b.listen()
        r = preflight(cfg)
    assert r.returncode == 2
    assert f"{cfg}:7:" in r.stderr and f"port {rest} on 127.0.0.1 is in use" in r.stderr, r.stderr
    assert f"{cfg}:8:" in r.stderr and f"127.0.0.1:{http} is in use" in r.stderr, r.stderr
    r = subprocess.run([BIN, "check-config", "--preflight", "-c", str(cfg), "--flink-home", str(tmp_path)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and f"no Flink jars in {tmp_path}/lib" in r.stderr, r.stderr


def test_run_refuses_a_missing_jar_before_anything_is_written(tmp_path):
    cfg = config(tmp_path, f"local://{tmp_path}/nope.jar", CLS)
    state = tmp_path / "state"
    t0 = time.monotonic()
    r = subprocess.run([BIN, "run", "-c", str(cfg), "--state-dir", str(state), "--flink-home", FLINK_HOME],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"{cfg}:10:" in r.stderr and f"spec.job.jarURI: {tmp_path}/nope.jar does not exist" in r.stderr
    assert not state.exists() or not os.listdir(state), "nothing is written for a start that cannot happen"
    assert time.monotonic() - t0 < 30, "no JVM was started to find out"


def test_a_jar_gone_while_running_is_waited_for_not_launched_in_a_loop(tmp_path, flinklets):
    # the job runs from a copy of the jar; the JVM is killed while the copy is away: no JVM is started until it is
    # back, status.error says why, and the next start restores the newest checkpoint as always
    usrlib = tmp_path / "usrlib"
    usrlib.mkdir()
    copy = usrlib / "job.jar"
    copy.write_bytes(open(JOBS_JAR, "rb").read())
    f = flinklets()
    f.write_config(raw=f.config.read_text().replace(f"local://{JOBS_JAR}", f"local://{copy}"))
    f.start()
    f.wait_stable()
    f.wait_checkpoint(2)
    pid = f.status()["jvm"]["pid"]
    away = usrlib / "job.jar.away"
    os.rename(copy, away)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: "JarUnusable" in [e["type"] for e in f.events()], 60, "the JarUnusable event")
    started = len([e for e in f.events() if e["type"] == "JvmStarted"])
    time.sleep(5)
    assert len([e for e in f.events() if e["type"] == "JvmStarted"]) == started, "a JVM was launched without its jar"
    st = f.status()
    assert "does not exist" in (st.get("error") or ""), st.get("error")
    assert len([e for e in f.events() if e["type"] == "JarUnusable"]) == 1, "said once, not on every look"
    newest = st["jobStatus"]["checkpointInfo"]["lastCheckpoint"]["id"]
    os.rename(away, copy)
    wait_for(lambda: "JarUsable" in [e["type"] for e in f.events()], 30, "the jar to be noticed again")
    st = f.wait_stable()
    assert st["restoredFrom"]["kind"] == "checkpoint" and st["restoredFrom"]["id"] >= newest, st["restoredFrom"]
    f.signal(signal.SIGTERM)
    assert f.wait_exit(40) == 0

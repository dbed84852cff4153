"""conf/systemd/flinklet.service under a real systemd: a privileged podman container whose PID 1 is systemd
(scripts/container-base.sh VARIANT=systemd: the image's base with systemd as init), with flinklet, the test job's
jar and the unit installed as docs/deployment.md says ("systemd, without containers").

One test follows the unit through what an operator does and what goes wrong: `systemctl start` returns once the
job is RUNNING (READY=1), `systemctl reload` reaches flinklet (SIGHUP, with no procps on the machine),
`systemctl stop` leaves a savepoint and the next start restores from it, and a jar that turns into no jar while
the job runs ends in a `failed` unit (watchdog, restart, exit 2) instead of a loop that never ends."""
import json
import os
import shutil
import time
import uuid

import pytest
import yaml

from conftest import BIN, JOBS_JAR, SANITIZER_LOGS, wait_for
from containerkit import RUN_OPTS, build_base, podman

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = os.path.join(ROOT, "conf", "systemd", "flinklet.service")
SERVICE_CONF = os.path.join(ROOT, "conf", "systemd", "flinklet.yaml")
STATE = "/var/lib/flinklet"
JAR = "/opt/flink/usrlib/clicks.jar"

pytestmark = [
    pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed: no container for systemd"),
    pytest.mark.skipif(bool(SANITIZER_LOGS), reason="flinklet built with ASan/UBSan cannot run in the image "
                       "(no sanitizer runtimes there)"),
]


class Machine:
    """A container booted with systemd as PID 1, flinklet installed in /usr/local/bin."""

    def __init__(self, image, etc, usrlib):
        self.name = f"flinklet-systemd-{uuid.uuid4().hex[:8]}"
        podman("run", "-d", "--name", self.name, "--privileged", "--systemd=always", *RUN_OPTS,
               "-v", f"{BIN}:/usr/local/bin/flinklet:ro",
               "-v", f"{SERVICE}:/etc/systemd/system/flinklet.service:ro",
               "-v", f"{etc}:/etc/flinklet:ro",
               "-v", f"{usrlib}:/opt/flink/usrlib:ro",
               image, "/sbin/init")

    def sh(self, script, check=True, timeout=120):
        return podman("exec", self.name, "sh", "-c", script, check=check, timeout=timeout)

    def show(self, *props):
        out = self.sh(f"systemctl show flinklet {' '.join('-p ' + p for p in props)}").stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def status(self):
        r = self.sh(f"flinklet status --json --state-dir {STATE}", check=False)
        return json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else None

    def events(self):
        r = self.sh(f"cat {STATE}/events.jsonl", check=False)
        return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]

    def journal(self):
        return self.sh("journalctl -u flinklet --no-pager -o cat", check=False).stdout

    def remove(self):
        podman("rm", "-f", "-t", "0", self.name, check=False)


def conf_dir(tmp_path):
    """/etc/flinklet: conf/systemd/flinklet.yaml with the test job (1 s checkpoints, its output on the volume)."""
    with open(SERVICE_CONF) as f:
        doc = yaml.safe_load(f)
    doc["spec"]["flinkConfiguration"]["execution.checkpointing.interval"] = "1s"
    doc["spec"]["job"].update({"jarURI": f"local://{JAR}", "entryClass": "dev.flinklet.jobs.StatefulCounter",
                               "args": ["--rate", "50", "--keys", "4", "--output", f"{STATE}/output"]})
    etc = tmp_path / "etc-flinklet"
    etc.mkdir()
    (etc / "flinklet.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    usrlib = tmp_path / "usrlib"
    usrlib.mkdir()
    shutil.copy(JOBS_JAR, usrlib / "clicks.jar")
    for p, mode in ((tmp_path, 0o755), (etc, 0o755), (etc / "flinklet.yaml", 0o644), (usrlib, 0o755),
                    (usrlib / "clicks.jar", 0o644)):
        os.chmod(p, mode)
    return etc, usrlib


def test_unit_start_reload_stop_savepoint_and_crash_loop_under_systemd(tmp_path, capsys):
    image = build_base(capsys, variant="systemd")
    etc, usrlib = conf_dir(tmp_path)
    m = Machine(image, etc, usrlib)
    try:
        wait_for(lambda: m.sh("systemctl is-system-running", check=False).stdout.strip() in ("running", "degraded"),
                 60, "systemd up in the container", interval=1)
        assert m.sh("command -v kill >/dev/null && test ! -e /bin/kill && test ! -e /usr/bin/kill",
                    check=False).returncode == 0, "the machine is meant to have no procps kill"
        m.sh("systemctl daemon-reload")

        # ---- start: returns once the job is RUNNING (Type=notify, READY=1 at the first RUNNING)
        t0 = time.monotonic()
        r = m.sh("systemctl start flinklet", check=False, timeout=400)
        assert r.returncode == 0, r.stderr + m.journal()[-3000:]
        with capsys.disabled():
            print(f"\n[systemd] systemctl start returned after {time.monotonic() - t0:.1f} s", flush=True)
        st = m.status()
        assert st["jobStatus"]["state"] == "RUNNING", st
        props = m.show("ActiveState", "SubState", "StatusText", "MainPID")
        assert (props["ActiveState"], props["SubState"]) == ("active", "running"), props
        assert "RUNNING" in props["StatusText"], props
        main_pid = props["MainPID"]
        assert m.sh(f"flinklet status --ready --state-dir {STATE}", check=False).returncode == 0

        # ---- reload: SIGHUP to flinklet, through the unit's ExecReload (no /bin/kill here)
        r = m.sh("systemctl reload flinklet", check=False)
        assert r.returncode == 0, r.stderr + m.journal()[-2000:]
        wait_for(lambda: [e for e in m.events() if e["type"] == "ConfigChanged" and "SIGHUP" in json.dumps(e)],
                 30, "the reload reaching flinklet (ConfigChanged by SIGHUP)", interval=1)
        assert m.show("MainPID")["MainPID"] == main_pid, "a reload must not restart the service"

        # ---- stop: a savepoint within TimeoutStopSec, the unit inactive (not failed); start restores from it
        wait_for(lambda: (s := m.status()) and s["jobStatus"]["checkpointInfo"]["lastCheckpoint"], 60,
                 "a checkpoint", interval=1)
        r = m.sh("systemctl stop flinklet", check=False, timeout=120)
        assert r.returncode == 0, r.stderr
        props = m.show("ActiveState", "Result")
        assert props == {"ActiveState": "inactive", "Result": "success"}, props
        st = m.status()
        assert st["lifecycleState"] == "SUSPENDED", st
        savepoint = st["jobStatus"]["savepointInfo"]["lastSavepoint"]
        assert savepoint and savepoint["triggerType"] == "UPGRADE", st["jobStatus"]["savepointInfo"]
        r = m.sh("systemctl start flinklet", check=False, timeout=400)
        assert r.returncode == 0, r.stderr + m.journal()[-3000:]
        st = m.status()
        assert st["restoredFrom"]["kind"] == "savepoint", st["restoredFrom"]
        assert st["restoredFrom"]["location"].rstrip("/").endswith(savepoint["location"].rsplit("/", 1)[1])

        # ---- a crash loop ends: the jar turns into no jar while the job runs and the JVM dies. flinklet waits
        # for the jar without watchdog pings, systemd kills it (WatchdogSec=60) and starts it again, and the new
        # flinklet refuses the jar (exit 2, RestartPreventExitStatus): the unit is failed, not looping
        (usrlib / "clicks.jar").write_bytes(b"not a jar\n")
        jvm = m.status()["jvm"]["pid"]
        m.sh(f"kill -9 {jvm}")
        t_kill = time.monotonic()
        wait_for(lambda: m.show("ActiveState")["ActiveState"] == "failed", 240,
                 "the unit failed after the crash", interval=2)
        took = time.monotonic() - t_kill
        with capsys.disabled():
            print(f"[systemd] failed {took:.0f} s after the JVM was killed", flush=True)
        props = m.show("Result", "ExecMainStatus", "NRestarts")
        journal = m.journal()
        assert "Watchdog timeout" in m.sh("journalctl --no-pager -o cat", check=False).stdout, journal[-3000:]
        assert int(props["NRestarts"]) >= 1, props
        assert props["ExecMainStatus"] == "2", (props, journal[-3000:])
        # failed stays failed: nothing starts it again
        time.sleep(8)
        assert m.show("ActiveState")["ActiveState"] == "failed"
    except BaseException:
        print(f"---- journal of flinklet.service\n{m.journal()[-6000:]}")
        raise
    finally:
        m.remove()


def test_suspended_job_restarts_at_once_and_a_job_failing_in_main_ends_failed(tmp_path, capsys):
    """Issue 30, item 2. READY=1 means the supervisor does what the spec says: after `flinklet suspend`,
    `systemctl restart` returns at once with the unit active and STATUS= saying SUSPENDED (it used to wait for the
    start timeout and be restarted until the start limit). A job that throws in main() every time ends in a failed
    unit by flinklet's own crash-loop limit (exit 1, not restarted: RestartPreventExitStatus), within minutes,
    both while the unit runs (after `flinklet resume`) and for a `systemctl start`, which returns the failure."""
    image = build_base(capsys, variant="systemd")
    etc, usrlib = conf_dir(tmp_path)
    m = Machine(image, etc, usrlib)
    try:
        wait_for(lambda: m.sh("systemctl is-system-running", check=False).stdout.strip() in ("running", "degraded"),
                 60, "systemd up in the container", interval=1)
        m.sh("systemctl daemon-reload")
        r = m.sh("systemctl start flinklet", check=False, timeout=700)
        assert r.returncode == 0, r.stderr + m.journal()[-3000:]

        # ---- suspend, then restart: READY at once, the unit active, STATUS= says the job is suspended
        r = m.sh(f"flinklet suspend --wait --state-dir {STATE}", check=False, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_for(lambda: (s := m.status()) and s["lifecycleState"] == "SUSPENDED" and not s["jvm"]["pid"], 60,
                 "the job suspended", interval=1)
        t0 = time.monotonic()
        r = m.sh("systemctl restart flinklet", check=False, timeout=700)
        took = time.monotonic() - t0
        with capsys.disabled():
            print(f"\n[systemd] restart of a suspended job returned after {took:.1f} s", flush=True)
        assert r.returncode == 0, r.stderr + m.journal()[-3000:]
        assert took < 60, f"systemctl restart of a suspended job took {took:.0f} s"
        props = m.show("ActiveState", "SubState", "StatusText", "NRestarts")
        assert (props["ActiveState"], props["SubState"]) == ("active", "running"), props
        assert "SUSPENDED" in props["StatusText"], props
        assert props["NRestarts"] == "0", props
        # readiness keeps its meaning (the job is not running); --started is systemd's sense
        assert m.sh(f"flinklet status --ready --state-dir {STATE}", check=False).returncode == 1
        assert m.sh(f"flinklet status --started --state-dir {STATE}", check=False).returncode == 0

        # ---- the job now throws in main() every time (a short crash-loop limit keeps the test short)
        doc = yaml.safe_load((etc / "flinklet.yaml").read_text())
        doc["spec"]["job"]["args"] = ["--exit-at-start", "--output", f"{STATE}/output"]
        doc["spec"]["flinkConfiguration"].update({"flinklet.restart.max-attempts": "2",
                                                  "flinklet.restart.backoff.initial": "1 s"})
        (etc / "flinklet.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        wait_for(lambda: [e for e in m.events() if e["type"] == "ConfigChanged"], 60,
                 "the suspended supervisor taking the new configuration", interval=1)
        r = m.sh(f"flinklet resume --state-dir {STATE}", check=False, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        t0 = time.monotonic()
        wait_for(lambda: m.show("ActiveState")["ActiveState"] == "failed", 300, "the unit failed", interval=2)
        props = m.show("Result", "ExecMainStatus", "NRestarts", "StatusText")
        with capsys.disabled():
            print(f"[systemd] failed {time.monotonic() - t0:.0f} s after the resume ({props})", flush=True)
        assert props["ExecMainStatus"] == "1" and props["NRestarts"] == "0", props
        assert m.events()[-1]["type"] == "CrashLoop" or "CrashLoop" in [e["type"] for e in m.events()[-4:]]

        # ---- a start of that job: `systemctl start` returns the failure, the unit failed, no restart
        m.sh("systemctl reset-failed flinklet")
        starts_before = [e["type"] for e in m.events()].count("JvmStarted")
        t0 = time.monotonic()
        r = m.sh("systemctl start flinklet", check=False, timeout=700)
        took = time.monotonic() - t0
        with capsys.disabled():
            print(f"[systemd] start of a job failing in main() returned {r.returncode} after {took:.0f} s",
                  flush=True)
        assert r.returncode != 0
        props = m.show("ActiveState", "ExecMainStatus", "NRestarts")
        assert props == {"ActiveState": "failed", "ExecMainStatus": "1", "NRestarts": "0"}, props
        assert took < 240, took
        assert [e["type"] for e in m.events()].count("JvmStarted") - starts_before == 3  # the first and 2 restarts
        time.sleep(8)
        assert m.show("ActiveState")["ActiveState"] == "failed"
    except BaseException:
        print(f"---- journal of flinklet.service\n{m.journal()[-6000:]}")
        raise
    finally:
        m.remove()

"""The systemd unit (conf/systemd/flinklet.service) and the podman Quadlet unit (conf/podman/flinklet.container)
agree with the configurations shipped next to them: notify type, watchdog, stop timeouts above the shutdown
budget, the state directory, the health check. `systemd-analyze verify` checks the service unit where it is
installed (it works offline, without a running systemd); Quadlet's own generator checks the .container unit
where podman 5 ships it."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = os.path.join(ROOT, "conf", "systemd", "flinklet.service")
SERVICE_CONF = os.path.join(ROOT, "conf", "systemd", "flinklet.yaml")
QUADLET = os.path.join(ROOT, "conf", "podman", "flinklet.container")
QUADLET_CONF = os.path.join(ROOT, "conf", "podman", "flinklet.yaml")

# the keys podman 5's Quadlet accepts in [Container]
QUADLET_CONTAINER_KEYS = set("""
AddCapability AddDevice AddHost Annotation AutoUpdate CgroupsMode ContainerName ContainersConfModule DNS DNSOption
DNSSearch DropCapability Environment EnvironmentFile EnvironmentHost Entrypoint Exec ExposeHostPort GIDMap
GlobalArgs Group GroupAdd HealthCmd HealthInterval HealthOnFailure HealthLogDestination HealthMaxLogCount
HealthMaxLogSize HealthRetries HealthStartPeriod HealthStartupCmd HealthStartupInterval HealthStartupRetries
HealthStartupSuccess HealthStartupTimeout HealthTimeout HostName IP6 IP Image Label LogDriver LogOpt Mask Memory
Mount Network NetworkAlias NoNewPrivileges Notify PidsLimit Pod PodmanArgs PublishPort Pull ReadOnly ReadOnlyTmpfs
ReloadCmd ReloadSignal Retry RetryDelay Rootfs RunInit SeccompProfile Secret SecurityLabelDisable
SecurityLabelFileType SecurityLabelLevel SecurityLabelNested SecurityLabelType ServiceName ShmSize StopSignal
StartWithPod StopTimeout SubGIDMap SubUIDMap Sysctl Timezone Tmpfs UIDMap Ulimit Unmask User UserNS Volume WorkingDir
""".split())


def parse_unit(path):
    """{section: {key: [values]}} of a systemd unit file (comments and blank lines skipped, keys may repeat)."""
    sections, current = {}, None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], {})
                continue
            assert current is not None, f"{path}:{n}: a key outside any section"
            assert "=" in line, f"{path}:{n}: not key=value: {line!r}"
            assert not line.endswith("\\"), f"{path}:{n}: continuation lines are not expected here"
            key, value = (s.strip() for s in line.split("=", 1))
            current.setdefault(key, []).append(value)
    return sections


def only(unit, section, key):
    values = unit.get(section, {}).get(key)
    assert values and len(values) == 1, f"[{section}] {key}= must be set once (got {values})"
    return values[0]


def systemd_seconds(value):
    """A systemd time span ("40", "5min", "1min 30s", "500ms") in seconds."""
    units = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1,
             "m": 60, "min": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
             "d": 86400, "day": 86400, "days": 86400}
    total, rest = 0.0, value.replace(" ", "")
    for n, unit in re.findall(r"(\d+(?:\.\d+)?)([a-z]*)", rest):
        total += float(n) * units[unit]
    assert re.fullmatch(r"((\d+(?:\.\d+)?)([a-z]*))+", rest), value
    return total


def flink_seconds(value):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(value))
    assert m, value
    scale = {"": 0.001, "ms": 0.001, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "d": 86400}
    return float(m.group(1)) * scale[m.group(2)]


def effective(config):
    r = subprocess.run([BIN, "check-config", "-c", config, "--json"], capture_output=True, text=True)
    assert r.returncode == 0, f"check-config rejects {config}:\n{r.stderr}"
    return json.loads(r.stdout)["spec"]["flinkConfiguration"]


# ---- systemd ---------------------------------------------------------------------------------------------------

def test_service_unit_keys_agree_with_its_configuration():
    unit = parse_unit(SERVICE)
    fc = effective(SERVICE_CONF)
    svc = unit["Service"]
    assert only(unit, "Service", "Type") == "notify"
    assert only(unit, "Service", "NotifyAccess") == "main"
    assert only(unit, "Service", "ExecStart") == "/usr/local/bin/flinklet run -c /etc/flinklet/flinklet.yaml"
    assert only(unit, "Service", "Restart") == "on-failure"
    assert systemd_seconds(only(unit, "Service", "WatchdogSec")) > 0
    # SIGTERM to flinklet alone: with KillMode=control-group the JVM would get it too, and no savepoint be taken
    assert only(unit, "Service", "KillMode") == "mixed"
    budget = flink_seconds(fc["flinklet.shutdown.timeout"])
    assert systemd_seconds(only(unit, "Service", "TimeoutStopSec")) > budget
    # READY=1 comes when the job runs, which may take flinklet.startup.timeout
    assert systemd_seconds(only(unit, "Service", "TimeoutStartSec")) > flink_seconds(fc["flinklet.startup.timeout"])
    # the state directory systemd makes is the one flinklet uses
    state = only(unit, "Service", "StateDirectory")
    assert fc["flinklet.state.dir"] == f"/var/lib/{state}"
    assert "2" in " ".join(svc.get("RestartPreventExitStatus", [])).split(), "an invalid configuration is not retried"
    assert "MemoryDenyWriteExecute" not in svc, "the JVM's JIT needs writable executable memory"
    # reload without procps: not /bin/kill or /usr/bin/kill
    reload = only(unit, "Service", "ExecReload")
    assert not re.match(r"(/usr)?/bin/kill\b", reload) and "HUP" in reload, reload
    # a crash loop ends in `failed`: StartLimitBurst failed starts fit in the interval even when each one runs
    # into the start timeout
    burst = int(only(unit, "Unit", "StartLimitBurst"))
    per_start = (systemd_seconds(only(unit, "Service", "TimeoutStartSec"))
                 + systemd_seconds(only(unit, "Service", "RestartSec")))
    assert systemd_seconds(only(unit, "Unit", "StartLimitIntervalSec")) > burst * per_start
    assert only(unit, "Install", "WantedBy") == "multi-user.target"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_service_unit_passes_systemd_analyze_verify(tmp_path):
    # verify checks that ExecStart's binary exists: point it at the one just built, nothing else changes
    unit = tmp_path / "flinklet.service"
    with open(SERVICE) as f:
        unit.write_text(f.read().replace("/usr/local/bin/flinklet", BIN))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True,
                       timeout=120)
    ours = [line for line in (r.stdout + r.stderr).splitlines() if "flinklet" in line]
    assert r.returncode == 0 and not ours, f"systemd-analyze verify:\n{r.stdout}{r.stderr}"


# ---- podman Quadlet ---------------------------------------------------------------------------------------------

def test_quadlet_keys_agree_with_its_configuration():
    unit = parse_unit(QUADLET)
    fc = effective(QUADLET_CONF)
    ctr = unit["Container"]
    unknown = set(ctr) - QUADLET_CONTAINER_KEYS
    assert not unknown, f"keys Quadlet does not know in [Container]: {sorted(unknown)}"
    assert only(unit, "Container", "Image")
    assert only(unit, "Container", "Notify") == "healthy"
    # ready (READY=1) once the startup check sees the job RUNNING; then the regular check asks the supervisor's
    # endpoint, which a hung supervisor does not answer, and three failures kill the container (Restart= then)
    # --started, not --ready: a suspended or finished job is started in systemd's sense (issue 30), and --ready
    # would keep its `systemctl start` waiting for the start timeout
    startup = only(unit, "Container", "HealthStartupCmd")
    assert re.fullmatch(r"(/usr/local/bin/)?flinklet status --started", startup), startup
    health = only(unit, "Container", "HealthCmd")
    m = re.fullmatch(r"(/usr/local/bin/)?flinklet status --url http://127\.0\.0\.1:(\d+) --live", health)
    assert m, health
    assert m.group(2) == fc["flinklet.http.address"].rpartition(":")[2]
    assert only(unit, "Container", "HealthOnFailure") == "kill"
    # the state directory is a volume at flinklet.state.dir
    targets = {v.split(":")[1]: v.split(":")[0] for v in ctr["Volume"]}
    assert fc["flinklet.state.dir"] in targets
    # nothing is mounted over the image's jar directory: it would hide a jar baked into the image, and a
    # missing host directory would fail the start
    assert "/opt/flink/usrlib" not in targets, targets
    # the configuration file is inside a mounted directory
    exec_args = only(unit, "Container", "Exec").split()
    config = exec_args[exec_args.index("-c") + 1]
    assert os.path.dirname(config) in targets
    # the one published port is flinklet.http.address's (Flink's web UI is under /flink/ there); Flink's own REST
    # port, which changes the job without a credential, is not published
    port = fc["flinklet.http.address"].rpartition(":")[2]
    published = [p.split(":")[-1] for p in ctr.get("PublishPort", [])]
    assert published == [port], published
    assert fc["rest.port"] not in published
    assert fc.get("rest.bind-address", "127.0.0.1") in ("127.0.0.1", "localhost", "::1")
    # podman stop waits longer than the shutdown budget, and systemd longer than podman stop
    budget = flink_seconds(fc["flinklet.shutdown.timeout"])
    stop = systemd_seconds(only(unit, "Container", "StopTimeout"))
    assert stop > budget
    assert systemd_seconds(only(unit, "Service", "TimeoutStopSec")) > stop
    # Notify=healthy: the unit starts only once healthy, so systemd's start timeout must cover the start period
    assert (systemd_seconds(only(unit, "Service", "TimeoutStartSec"))
            > systemd_seconds(only(unit, "Container", "HealthStartPeriod")))
    assert only(unit, "Service", "Restart") == "on-failure"


def crash_loop_seconds(fc, jvm_start=10):
    """How long flinklet's crash-loop limit takes to give up on a job that never starts (its main() throws every
    time): max-attempts + 1 JVM starts of about jvm_start seconds each, and the backoff before each restart
    (initial, doubling, at most backoff.max)."""
    attempts = int(fc["flinklet.restart.max-attempts"])
    initial, most = flink_seconds(fc["flinklet.restart.backoff.initial"]), flink_seconds(fc["flinklet.restart.backoff.max"])
    return (attempts + 1) * jvm_start + sum(min(initial * 2 ** n, most) for n in range(attempts))


@pytest.mark.parametrize("path,conf", [(SERVICE, SERVICE_CONF), (QUADLET, QUADLET_CONF)], ids=["systemd", "quadlet"])
def test_a_start_that_cannot_succeed_ends_failed_within_minutes(path, conf):
    """Issue 30: what cannot succeed by itself is not restarted (exit 2: a bad configuration or jar; exit 1:
    flinklet's crash-loop limit gave up, e.g. on a job that throws in main() every time), flinklet gives up before
    systemd's start timeout does (else each attempt ran into the timeout and was restarted: 25 minutes, 50 JVM
    starts), and what is restarted hits a start limit whose interval holds StartLimitBurst start timeouts."""
    unit = parse_unit(path)
    fc = effective(conf)
    assert only(unit, "Service", "Restart") == "on-failure"
    prevent = " ".join(unit["Service"].get("RestartPreventExitStatus", [])).split()
    assert "1" in prevent and "2" in prevent, prevent
    assert int(fc["flinklet.restart.max-attempts"]) > 0, "a crash loop that never gives up never ends"
    start_timeout = systemd_seconds(only(unit, "Service", "TimeoutStartSec"))
    give_up = crash_loop_seconds(fc)
    assert give_up < start_timeout, (give_up, start_timeout)
    assert give_up < 10 * 60, f"the crash-loop limit takes {give_up:.0f} s to give up"
    burst = int(only(unit, "Unit", "StartLimitBurst"))
    per_start = start_timeout + systemd_seconds(unit["Service"].get("RestartSec", ["100ms"])[0])
    assert systemd_seconds(only(unit, "Unit", "StartLimitIntervalSec")) > burst * per_start


def quadlet_generator():
    for path in (os.environ.get("FLINKLET_QUADLET", ""), "/usr/libexec/podman/quadlet", "/usr/lib/podman/quadlet"):
        if os.access(path, os.X_OK):
            return path
    return None


@pytest.mark.skipif(quadlet_generator() is None, reason="podman's Quadlet generator is not installed (podman < 4.4)")
def test_quadlet_generator_accepts_the_unit(tmp_path):
    d = tmp_path / "units"
    d.mkdir()
    shutil.copy(QUADLET, d / "flinklet.container")
    r = subprocess.run([quadlet_generator(), "-dryrun"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "QUADLET_UNIT_DIRS": str(d)})
    assert r.returncode == 0 and "podman" in r.stdout, r.stderr
    assert "--sdnotify=healthy" in r.stdout, "this podman's Quadlet does not know Notify=healthy (podman 5.0+)"
    warnings = [line for line in r.stderr.splitlines() if "Loading source unit file" not in line]
    assert not warnings, r.stderr
    # what issue 30 needs reaches the generated service: the startup check in systemd's sense, no restart of what
    # cannot succeed by itself, a start limit
    service = r.stdout.split("---flinklet.service---", 1)[1]
    assert '--health-startup-cmd "/usr/local/bin/flinklet status --started"' in service, service
    assert re.search(r"^RestartPreventExitStatus=1 2$", service, re.M), service
    assert re.search(r"^StartLimitBurst=5$", service, re.M) and re.search(r"^StartLimitIntervalSec=", service, re.M)

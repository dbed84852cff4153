"""What the Flink Kubernetes Operator 1.15.0 accepts as a FlinkDeployment, for the export tests: the CRD's
openAPIV3Schema (tests/fixtures/operator-1.15.0, the operator's own file) and its admission validator's rules
for an application deployment (DefaultValidator, as summed up in the project's reference notes). `violations`
returns one message per broken rule; an empty list means the operator would take the document."""
import os
import re

import jsonschema
import yaml

CRD = os.path.join(os.path.dirname(__file__), "..", "fixtures", "operator-1.15.0",
                   "flinkdeployments.flink.apache.org-v1.yml")
NAME = re.compile(r"^[a-z]([-a-z0-9]{0,43}[a-z0-9])?$")
# Flink's MemorySize: a number and an optional unit
MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*(b|bytes|k|kb|kibibytes|m|mb|mebibytes|g|gb|gibibytes|t|tb|tebibytes)?\s*$",
                    re.I)
FORBIDDEN = ("kubernetes.namespace", "kubernetes.cluster-id", "high-availability.cluster-id")
LOG_KEYS = ("log4j-console.properties", "logback-console.xml")
UNIT_RANGE = ("job.autoscaler.target.utilization", "job.autoscaler.target.utilization.boundary",
              "job.autoscaler.utilization.target", "job.autoscaler.utilization.min", "job.autoscaler.utilization.max")

_schema = None


def schema():
    global _schema
    if _schema is None:
        with open(CRD) as f:
            crd = yaml.safe_load(f)
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
        _schema = version["schema"]["openAPIV3Schema"]
    return _schema


def version_at_least(label, wanted):
    def parts(v):
        return tuple(int(x) for x in v[1:].split("_"))
    return parts(label) >= parts(wanted)


def violations(doc):
    out = []
    try:
        jsonschema.Draft7Validator(schema()).validate(doc)
    except jsonschema.ValidationError as e:
        out.append(f"schema: {'/'.join(str(p) for p in e.absolute_path)}: {e.message}")
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    conf = spec.get("flinkConfiguration") or {}
    job = spec.get("job")
    # 1. the name
    if not NAME.match(str(meta.get("name", ""))):
        out.append(f"metadata.name {meta.get('name')!r} does not match {NAME.pattern}")
    # 2. the Flink version
    fv = spec.get("flinkVersion")
    if not fv:
        out.append("Flink Version must be defined.")
    elif not version_at_least(fv, "v1_15"):
        out.append(f"flinkVersion {fv} is older than v1_15")
    # 3. the operator's own keys and options
    for k in FORBIDDEN:
        if k in conf:
            out.append(f"flinkConfiguration sets {k}, which the operator owns")
    ha = str(conf.get("high-availability.type", conf.get("high-availability", "NONE"))).lower()
    if str(conf.get("kubernetes.operator.deployment.rollback.enabled", "false")).lower() == "true" and ha == "none":
        out.append("rollback enabled without high availability")
    if (str(conf.get("kubernetes.operator.cluster.health-check.enabled", "false")).lower() == "true"
            and str(conf.get("kubernetes.operator.jm-deployment-recovery.enabled", "true")).lower() == "false"):
        out.append("health check enabled while JobManager deployment recovery is off")
    # 4. log configuration
    for k in (spec.get("logConfiguration") or {}):
        if k not in LOG_KEYS:
            out.append(f"logConfiguration key {k} is not one the operator knows")
    # 5. the job
    if job:
        ck = conf.get("execution.checkpointing.dir") or conf.get("state.checkpoints.dir")
        sp = conf.get("execution.checkpointing.savepoint-dir") or conf.get("state.savepoints.dir")
        mode = job.get("upgradeMode", "stateless")
        if mode in ("last-state", "savepoint") and not ck:
            out.append(f"upgradeMode {mode} needs execution.checkpointing.dir")
        if not sp:
            if mode == "savepoint":
                out.append("upgradeMode savepoint needs execution.checkpointing.savepoint-dir")
            if job.get("savepointTriggerNonce") is not None:
                out.append("savepointTriggerNonce needs execution.checkpointing.savepoint-dir")
            for k in ("kubernetes.operator.periodic.savepoint.interval",
                      "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age"):
                if k in conf:
                    out.append(f"{k} needs execution.checkpointing.savepoint-dir")
        if (spec.get("taskManager") or {}).get("replicas") is None and int(job.get("parallelism", 1)) < 1:
            out.append("job parallelism must be at least 1")
    # 6. JobManager and TaskManager resources
    for part in ("jobManager", "taskManager"):
        res = ((spec.get(part) or {}).get("resource") or {})
        mem = res.get("memory")
        if mem is not None and not MEMORY.match(str(mem)):
            out.append(f"{part}.resource.memory {mem!r} is not a Flink memory size")
        replicas = (spec.get(part) or {}).get("replicas")
        if replicas is not None and replicas < 1:
            out.append(f"{part}.replicas must be at least 1")
    if ((spec.get("jobManager") or {}).get("replicas") or 1) > 1 and ha == "none":
        out.append("more than one JobManager without high availability")
    # 7. the autoscaler's options
    for k in UNIT_RANGE:
        if k in conf:
            try:
                v = float(conf[k])
            except ValueError:
                out.append(f"{k} {conf[k]!r} is not a number")
                continue
            if not 0 <= v <= 1:
                out.append(f"{k} {v} is not within [0, 1]")
    return out
